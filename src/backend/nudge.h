/*
 * nudge.h: the one-ulp move of a float32 that the reference's measured
 * noise uses (trial.c, ref_noise), written once for the host backend (as C)
 * and the cuda backend (as device source, cuda_kernels.h): both backends
 * move the same elements the same way under the same seed.
 *
 * The bits v of element e of input `input`: unchanged when zero (either
 * sign), infinite or NaN; else one unit in the last place up or down in
 * magnitude as a hash of the seed, the input and the index says, the
 * magnitude kept below infinity and above the smallest subnormal's.
 */
#ifndef KFORGE_BACKEND_NUDGE_H
#define KFORGE_BACKEND_NUDGE_H

/* Without branches on the hash's bit: which way an element moves is a coin
 * toss per element, and a branch on it was mispredicted half the time
 * (16.7M elements on the host: 117 ms with the branches, 59 ms without,
 * the same bits). */
#define KF_NUDGE_ONE(Q)                                                        \
	Q(unsigned int kf_nudge_one(unsigned int v, unsigned long long seed,   \
				    long long e, int input) {                  \
		unsigned int mag = v & 0x7fffffffu;                            \
		unsigned long long z =                                         \
		    seed + 0x9e3779b97f4a7c15ull *                             \
			       (unsigned long long)(e + 1 +                    \
						    ((long long)input << 40)); \
		z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;                   \
		z ^= z >> 29;                                                  \
		unsigned int odd = (unsigned int)(z & 1);                      \
		unsigned int up = odd & (mag < 0x7f7fffffu);                   \
		unsigned int down = (odd ^ 1u) & (mag > 1);                    \
		unsigned int keep =                                            \
		    (mag == 0) | ((v & 0x7f800000u) == 0x7f800000u);           \
		return keep ? v : v + up - down;                               \
	})

/* As C (the host backend) and as text (the device source). */
#define KF_NUDGE_AS_C(...) static inline __VA_ARGS__
#define KF_NUDGE_AS_TEXT(...) #__VA_ARGS__

#endif
