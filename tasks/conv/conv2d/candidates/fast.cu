/*
 * Fast conv/conv2d (cuda): fp32 implicit GEMM, 64 filters x 128 pixels per
 * block, double-buffered shared-memory tiles fed by register prefetch, 4 x 8
 * register tiles read as float4, float4 stores when H * W % 4 == 0.
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define BM 64	   /* filters per block */
#define BN 128	   /* output pixels per block */
#define BC 16	   /* channels per step (the GEMM's k-slice) */
#define THREADS 256

/*
 * Shapes: x [N, C, H, W], w [K, C, R, S], y [N, K, H, W]. As GEMM:
 * y[k][pix] = sum over (r, s, c) of w[k][c][r][s] * x[n][c][p+r-ph][q+s-pw]
 * with pix = (n, p, q). Step st covers tap rs = st / nc and channels
 * (st % nc) * BC ... + BC; taps outside the image and channels >= C load 0.
 */
template <bool VSTORE>
__global__ static void __launch_bounds__(THREADS, 2)
conv_igemm(const float *__restrict__ x, const float *__restrict__ w,
	   float *__restrict__ y, int N, int C, int H, int W, int K, int R,
	   int S)
{
	__shared__ __align__(16) float As[2][BC][BM]; /* w slice: [c][k] */
	__shared__ __align__(16) float Bs[2][BC][BN]; /* x slice: [c][pix] */
	int tid = threadIdx.x;
	long long HW = (long long)H * W, P = (long long)N * HW;
	long long col0 = (long long)blockIdx.x * BN;
	int k0 = blockIdx.y * BM;
	int ph = (R - 1) / 2, pw = (S - 1) / 2, RS = R * S;
	int nc = (C + BC - 1) / BC, steps = RS * nc;

	/* loader of Bs: pixel column jb, channel rows cb + 2i (i < 8) */
	int jb = tid % BN, cb = tid / BN;
	long long colb = col0 + jb;
	bool colok = colb < P;
	int pb = 0, qb = 0;
	const float *xn = x;
	if (colok) {
		long long nb = colb / HW, rem = colb % HW;
		pb = (int)(rem / W);
		qb = (int)(rem % W);
		xn = x + nb * C * HW;
	}
	/* loader of As: filter row ma, channel rows ca + 4i (i < 4) */
	int ma = tid % BM, ca = tid / BM;
	bool kok = k0 + ma < K;
	const float *wk = w + (long long)(kok ? k0 + ma : 0) * C * RS;

	/* the step being loaded: tap (lr, ls), channels lc0 .. lc0 + BC */
	int lr = 0, ls = 0, lc0 = 0;
	float ra[4], rb[8];

	auto load = [&]() {
		int hh = pb + lr - ph, vv = qb + ls - pw;
		bool ok = colok && hh >= 0 && hh < H && vv >= 0 && vv < W;
		long long off = ok ? (long long)hh * W + vv : 0;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int c = lc0 + cb + 2 * i;
			long long xi = off + (long long)c * HW;
			rb[i] = ok && c < C ? __ldg(xn + xi) : 0.0f;
		}
		int rs = lr * S + ls;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			int c = lc0 + ca + 4 * i;
			long long wi = (long long)c * RS + rs;
			ra[i] = kok && c < C ? __ldg(wk + wi) : 0.0f;
		}
		/* advance to the next step: channels, then s, then r */
		lc0 += BC;
		if (lc0 >= C) {
			lc0 = 0;
			if (++ls == S) {
				ls = 0;
				lr++;
			}
		}
	};
	auto store = [&](int buf) {
#pragma unroll
		for (int i = 0; i < 8; i++)
			Bs[buf][cb + 2 * i][jb] = rb[i];
#pragma unroll
		for (int i = 0; i < 4; i++)
			As[buf][ca + 4 * i][ma] = ra[i];
	};

	/* compute: filters ty*4 + i, pixels tx*4 + j and 64 + tx*4 + j */
	int tx = tid % 16, ty = tid / 16;
	float acc[4][8];
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i][j] = 0.0f;

	load();
	store(0);
	__syncthreads();
	for (int st = 0; st < steps; st++) {
		int cur = st & 1;
		if (st + 1 < steps)
			load(); /* global loads in flight during the math */
#pragma unroll
		for (int kk = 0; kk < BC; kk++) {
			float4 a = *(const float4 *)&As[cur][kk][ty * 4];
			float4 b0 = *(const float4 *)&Bs[cur][kk][tx * 4];
			float4 b1 = *(const float4 *)&Bs[cur][kk][64 + tx * 4];
			float av[4] = {a.x, a.y, a.z, a.w};
			float bv[8] = {b0.x, b0.y, b0.z, b0.w,
				       b1.x, b1.y, b1.z, b1.w};
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 8; j++)
					acc[i][j] = fmaf(av[i], bv[j],
							 acc[i][j]);
		}
		if (st + 1 < steps)
			store(cur ^ 1); /* read last in step st - 1 */
		__syncthreads();
	}

	/* y[n][k][pq] for pixel col = n * HW + pq */
#pragma unroll
	for (int h = 0; h < 2; h++) {
		long long col = col0 + h * 64 + tx * 4;
		if (VSTORE) {
			/* HW % 4 == 0: the 4 pixels share n, 16-byte aligned */
			if (col >= P)
				continue;
			long long n = col / HW, pq = col % HW;
#pragma unroll
			for (int i = 0; i < 4; i++) {
				int k = k0 + ty * 4 + i;
				if (k < K)
					*(float4 *)(y + (n * K + k) * HW + pq) =
					    make_float4(acc[i][h * 4],
							acc[i][h * 4 + 1],
							acc[i][h * 4 + 2],
							acc[i][h * 4 + 3]);
			}
		} else {
#pragma unroll
			for (int j = 0; j < 4; j++) {
				long long cj = col + j;
				if (cj >= P)
					break;
				long long n = cj / HW, pq = cj % HW;
#pragma unroll
				for (int i = 0; i < 4; i++) {
					int k = k0 + ty * 4 + i;
					if (k < K)
						y[(n * K + k) * HW + pq] =
						    acc[i][h * 4 + j];
				}
			}
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const float *x = (const float *)in[0].data;
	const float *w = (const float *)in[1].data;
	float *y = (float *)out[0].data;
	int N = (int)in[0].shape[0], C = (int)in[0].shape[1];
	int H = (int)in[0].shape[2], W = (int)in[0].shape[3];
	int K = (int)in[1].shape[0], R = (int)in[1].shape[2];
	int S = (int)in[1].shape[3];
	long long P = (long long)N * H * W;
	dim3 grid((unsigned)((P + BN - 1) / BN), (unsigned)((K + BM - 1) / BM));
	cudaStream_t s = (cudaStream_t)stream;

	if (grid.y > 65535)
		return 2; /* more than 4M filters */
	if ((long long)H * W % 4 == 0 && ((uintptr_t)y & 15) == 0)
		conv_igemm<true><<<grid, THREADS, 0, s>>>(x, w, y, N, C, H, W,
							   K, R, S);
	else
		conv_igemm<false><<<grid, THREADS, 0, s>>>(x, w, y, N, C, H, W,
							    K, R, S);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
