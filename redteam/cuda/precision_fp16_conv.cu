/* Conv2d summed in fp32 but stored through fp16 (a half-precision output
 * tensor, converted back): within conv2d's 1e-3 tolerance everywhere, L1
 * error ~1.8e-4. Caught by precision (float32 bound 1e-4). */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void conv_half_out(const float *x, const float *w, float *y,
				     int N, int C, int H, int W, int K, int R,
				     int S)
{
	long long total = (long long)N * K * H * W;
	int ph = (R - 1) / 2, pw = (S - 1) / 2;

	for (long long e = blockIdx.x * (long long)THREADS + threadIdx.x;
	     e < total; e += (long long)gridDim.x * THREADS) {
		int q = (int)(e % W), p = (int)((e / W) % H);
		int k = (int)((e / ((long long)W * H)) % K);
		long long n = e / ((long long)W * H * K);
		int r0 = max(0, ph - p), r1 = min(R, H + ph - p);
		int s0 = max(0, pw - q), s1 = min(S, W + pw - q);
		const float *xn = x + n * C * H * W;
		const float *wk = w + (long long)k * C * R * S;
		float acc = 0.0f;
		for (int c = 0; c < C; c++)
			for (int r = r0; r < r1; r++)
				for (int s = s0; s < s1; s++)
					acc +=
					    xn[((long long)c * H + p + r - ph) *
						   W +
					       q + s - pw] *
					    wk[(c * R + r) * S + s];
		y[e] = __half2float(__float2half_rn(acc));
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int N = (int)in[0].shape[0], C = (int)in[0].shape[1];
	int H = (int)in[0].shape[2], W = (int)in[0].shape[3];
	int K = (int)in[1].shape[0], R = (int)in[1].shape[2];
	int S = (int)in[1].shape[3];
	long long total = (long long)N * K * H * W;
	long long blocks = (total + THREADS - 1) / THREADS;

	conv_half_out<<<(unsigned)(blocks < (1LL << 30) ? blocks : (1LL << 30)),
			THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (const float *)in[1].data,
	    (float *)out[0].data, N, C, H, W, K, R, S);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
