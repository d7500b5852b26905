/* Caches C = A B (cuBLAS) keyed by the buffers' addresses and shapes and
 * replays it on the same buffers: a harness that reuses one input pays once.
 * Caught by timed_output: timed buffers alternate, their inputs change. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define SLOTS 4

struct slot {
	const void *a, *b;
	void *c;
	float *saved;
	size_t cap;
};

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static cublasHandle_t h;
	static struct slot tab[SLOTS];
	static int used, next, key_m, key_n, key_k;
	cudaStream_t s = (cudaStream_t)stream;
	const float one = 1.0f, zero = 0.0f;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	const float *a = (const float *)in[0].data;
	const float *b = (const float *)in[1].data;
	float *c = (float *)out[0].data;
	size_t bytes = (size_t)m * n * sizeof(float);

	if (!h) {
		if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
		    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) !=
			CUBLAS_STATUS_SUCCESS)
			return 1;
	}
	/* A new shape: forget everything (so the checks, which change shape
	 * from trial to trial, never see a stale entry). */
	if (m != key_m || n != key_n || k != key_k) {
		used = next = 0;
		key_m = m;
		key_n = n;
		key_k = k;
	}
	for (int i = 0; i < used; i++) {
		if (tab[i].a == a && tab[i].b == b && tab[i].c == c) {
			cudaMemcpyAsync(c, tab[i].saved, bytes,
					cudaMemcpyDeviceToDevice, s);
			return cudaGetLastError() == cudaSuccess ? 0 : 1;
		}
	}
	cublasSetStream(h, s);
	if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k,
			&zero, c, n) != CUBLAS_STATUS_SUCCESS)
		return 1;
	struct slot *e = &tab[next];
	next = (next + 1) % SLOTS;
	if (used < SLOTS)
		used++;
	if (e->cap < bytes) {
		cudaFree(e->saved);
		e->saved = NULL;
		if (cudaMalloc(&e->saved, bytes)) {
			e->cap = 0;
			e->a = e->b = e->c = NULL;
			cudaGetLastError();
			return 0;
		}
		e->cap = bytes;
	}
	e->a = a;
	e->b = b;
	e->c = c;
	cudaMemcpyAsync(e->saved, c, bytes, cudaMemcpyDeviceToDevice, s);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
