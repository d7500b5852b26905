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

#define KF_NUDGE_ONE(Q)                                                        \
	Q(unsigned int kf_nudge_one(unsigned int v, unsigned long long seed,   \
				    long long e, int input) {                  \
		unsigned int mag = v & 0x7fffffffu;                            \
		if (mag == 0 || (v & 0x7f800000u) == 0x7f800000u)              \
			return v;                                              \
		unsigned long long z =                                         \
		    seed + 0x9e3779b97f4a7c15ull *                             \
			       (unsigned long long)(e + 1 +                    \
						    ((long long)input << 40)); \
		z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;                   \
		z ^= z >> 29;                                                  \
		if ((z & 1) && mag < 0x7f7fffffu)                              \
			return v + 1;                                          \
		if (!(z & 1) && mag > 1)                                       \
			return v - 1;                                          \
		return v;                                                      \
	})

/* As C (the host backend) and as text (the device source). */
#define KF_NUDGE_AS_C(...) static inline __VA_ARGS__
#define KF_NUDGE_AS_TEXT(...) #__VA_ARGS__

#endif
