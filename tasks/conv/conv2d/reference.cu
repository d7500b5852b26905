/*
 * Reference for conv/conv2d (cuda): one thread per output element, the host
 * loop (c, r, s with zero 'same' padding, taps outside the image skipped),
 * accumulated in double and rounded to float once.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

struct conv {
	long long N, C, H, W; /* x [N, C, H, W]; y [N, K, H, W] */
	long long K, R, S;    /* w [K, C, R, S], R and S odd */
};

__global__ static void __launch_bounds__(THREADS)
conv_ref(const float *x, const float *w, float *y, struct conv d)
{
	long long total = d.N * d.K * d.H * d.W;
	long long ph = (d.R - 1) / 2, pw = (d.S - 1) / 2;

	for (long long e = blockIdx.x * (long long)THREADS + threadIdx.x;
	     e < total; e += (long long)gridDim.x * THREADS) {
		long long q = e % d.W, p = (e / d.W) % d.H;
		long long k = (e / (d.W * d.H)) % d.K;
		long long n = e / (d.W * d.H * d.K);
		double acc = 0.0;
		for (long long c = 0; c < d.C; c++) {
			for (long long r = 0; r < d.R; r++) {
				for (long long s = 0; s < d.S; s++) {
					long long h = p + r - ph;
					long long v = q + s - pw;
					if (h < 0 || h >= d.H || v < 0 ||
					    v >= d.W)
						continue;
					long long xi =
					    ((n * d.C + c) * d.H + h) * d.W + v;
					long long wi =
					    ((k * d.C + c) * d.R + r) * d.S + s;
					acc += (double)x[xi] * (double)w[wi];
				}
			}
		}
		y[e] = (float)acc;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	struct conv d;
	d.N = in[0].shape[0];
	d.C = in[0].shape[1];
	d.H = in[0].shape[2];
	d.W = in[0].shape[3];
	d.K = in[1].shape[0];
	d.R = in[1].shape[2];
	d.S = in[1].shape[3];
	long long total = d.N * d.K * d.H * d.W;
	long long blocks = (total + THREADS - 1) / THREADS;

	conv_ref<<<(unsigned)(blocks < (1LL << 30) ? blocks : (1LL << 30)),
		   THREADS, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const float *)in[1].data,
		(float *)out[0].data, d);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
