/*
 * kernel.h: the contract between kforge and a candidate kernel. A candidate
 * (and a task's reference) is one source file that includes this header and
 * defines kf_entry. It is compiled as C (host backend) or CUDA (cuda backend).
 */
#ifndef KFORGE_KERNEL_H
#define KFORGE_KERNEL_H

#include <stdint.h>
#include <string.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
#define KF_EXTERN_C extern "C"
#else
#define KF_EXTERN_C
#endif

#if defined(__CUDACC__)
#define KF_HD __host__ __device__ static inline
#else
#define KF_HD static inline
#endif

/*
 * The entry point. in[0..n_in) are the task's inputs and out[0..n_out) its
 * outputs, in the order of task.json; shapes are those of the current trial
 * and tensors are dense and row-major (strides may be NULL). Inputs are
 * read-only. stream is the engine's stream (a cudaStream_t on the cuda
 * backend, NULL on the host backend): enqueue all work on it. Write every
 * element of every output and return 0; any other value is a runtime error.
 * The engine owns every buffer and may move them between calls.
 */
KF_EXTERN_C int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
			 void *stream);

/*
 * A tunable parameter: KF_PARAM(NAME, v1, v2, ...) on a line of its own
 * declares NAME and the values `kforge optimize --policy tune` may give it.
 * The tuner replaces the line with "#define NAME v"; compiled as written, the
 * line expands to nothing, so a source that should also build untuned gives
 * NAME a default with #ifndef NAME (docs/optimize.md).
 */
#define KF_PARAM(...)
/*
 * A constraint between tunable parameters: KF_PARAM_RULE(BX * BY <= 1024)
 * on a line of its own. The tuner never builds a point where the integer
 * expression is 0; compiled as written, the line expands to nothing.
 */
#define KF_PARAM_RULE(...)

/* Number of elements of a tensor. */
KF_HD int64_t kf_numel(const DLTensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

/* IEEE half (float16) and bfloat16 are stored as uint16_t; these convert
 * with round-to-nearest-even, NaN kept. */
KF_HD float kf_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;
	uint32_t bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112u) << 23) | (man << 13);
	} else if (man == 0) {
		bits = sign;
	} else { /* subnormal: normalise */
		exp = 113;
		while (!(man & 0x400u)) {
			man <<= 1;
			exp--;
		}
		bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

KF_HD uint16_t kf_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t absx = x & 0x7fffffffu;
	if (absx > 0x7f800000u) /* NaN: keep it quiet */
		return (uint16_t)(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
	if (absx >= 0x477ff000u) /* rounds to >= 65520: infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (absx < 0x38800000u) { /* below the smallest normal half */
		if (absx < 0x33000000u)
			return (uint16_t)sign;
		uint32_t e = absx >> 23;
		uint32_t m = (absx & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126u - e; /* 14..24 */
		uint32_t r = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1u);
		uint32_t half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;
		return (uint16_t)(sign | r);
	}
	uint32_t r = absx - 0x38000000u; /* rebias 127 -> 15 */
	uint32_t rem = r & 0x1fffu;
	r >>= 13;
	if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
		r++;
	return (uint16_t)(sign | r);
}

KF_HD float kf_bf16_to_float(uint16_t b)
{
	uint32_t bits = (uint32_t)b << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

KF_HD uint16_t kf_float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

#endif
