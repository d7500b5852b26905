/*
 * Fast candidate for activation/gelu: y = x / (1 + exp(-2u)) with an inlined,
 * branch-free expf (Cody-Waite reduction + Cephes polynomial) so the loop
 * vectorises; libm's expf/tanhf calls would keep it scalar.
 */
#include <stdint.h>
#include <string.h>

#include <kforge/kernel.h>

/* exp(x) to about 1 ulp for x in [-87.4, 88]; the caller keeps x there. */
static inline float exp_small(float x)
{
	float t = x * 1.44269504088896341f + 12582912.0f; /* round to int */
	float n = t - 12582912.0f;
	float r = x - n * 0.693359375f;
	r = r - n * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	int32_t bits = ((int32_t)n + 127) << 23; /* 2^n, n in [-126, 127] */
	float scale;
	memcpy(&scale, &bits, sizeof(scale));
	return p * scale;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *restrict x = in[0].data;
	float *restrict y = out[0].data;
	int64_t n = kf_numel(&in[0]);

	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		/*
		 * For |v| >= 10, gelu(v) is v or 0 to within float precision;
		 * clamping the exp argument's v to [-10, 10] keeps it inside
		 * [-87.4, 87.4]. The clamp is done on the bits, as integers:
		 * gcc will not if-convert a float compare here without
		 * -fno-trapping-math, and the loop would stay scalar.
		 */
		uint32_t b, a;
		memcpy(&b, &v, sizeof(b));
		a = b & 0x7fffffffu;
		a = a > 0x41200000u ? 0x41200000u : a; /* 10.0f */
		b = (b & 0x80000000u) | a;
		float c;
		memcpy(&c, &b, sizeof(c));
		/* -2 * sqrt(2/pi) * (c + 0.044715 c^3), coefficients folded */
		float m = c * (-1.5957691216f - 0.0713548163f * c * c);
		y[i] = v / (1.0f + exp_small(m));
	}
	return 0;
}
