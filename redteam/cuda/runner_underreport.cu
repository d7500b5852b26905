/* Takes over its runner like runner_takeover, computes every call honestly
 * (one thread per row), times each call itself with events on the engine's
 * stream and reports 90 % of what it measured: a forgery small enough to
 * pass for noise. It skips the engine's cache flush before each call, which
 * shortens the call seen from outside by more than the 10 % it hides; the
 * worker checks each call's flush: rejected/tampering. With FLUSH_AS_RUNNER
 * it does the flush (runner_underreport_flushed.cu). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <unistd.h>

#include "../host/runner_wire.h"

#include <kforge/kernel.h>

#ifdef FLUSH_AS_RUNNER
__global__ static void fill32(unsigned *p, unsigned long long n, unsigned v)
{
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x +
				    threadIdx.x;
	     i < n; i += (unsigned long long)gridDim.x * blockDim.x)
		p[i] = v;
}

/* The engine flushes twice the L2 (120 MiB on an H200, 100 MiB on an
 * H100): a fixed size writes past the flush region on a smaller L2. */
static unsigned long long flush_words(void)
{
	int l2 = 0;
	cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
	return 2ull * (unsigned long long)(l2 > 0 ? l2 : 64 << 20) / 4;
}
#endif

#ifndef REPEATS
#define REPEATS 1
#endif

/* With REPEATS > 1 each row is summed that many times, through a volatile
 * pointer so that no pass can be left out: an honest call, only slower. */
__global__ static void row_sum(const float *x, float *y, long long rows,
			       long long n)
{
	long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (b >= rows)
		return;
	const volatile float *vx = x;
	float s = 0.0f;
	for (int k = 0; k < REPEATS; k++) {
		s = 0.0f;
		for (long long j = 0; j < n; j++)
			s += REPEATS > 1 ? vx[b * n + j] : x[b * n + j];
	}
	y[b] = s;
}

static double last_ns; /* what the last launch took, by events */

static int launch(const float *x, float *y, long long rows, long long n,
		  cudaStream_t s)
{
	static cudaEvent_t e0, e1;
	if (!e0 && (cudaEventCreate(&e0) || cudaEventCreate(&e1)))
		return 1;
	cudaEventRecord(e0, s);
	row_sum<<<(unsigned)((rows + 127) / 128), 128, 0, s>>>(x, y, rows, n);
	cudaEventRecord(e1, s);
	if (cudaStreamSynchronize(s) != cudaSuccess)
		return 1;
	float ms = 0;
	cudaEventElapsedTime(&ms, e0, e1);
	last_ns = ms * 1e6;
	return 0;
}

/* What the runner reports as its global state, rebuilt the same way. */
static void state(cudaStream_t s, char *buf, size_t cap)
{
	static const char *const names[] = {
	    NULL,	    "printf_fifo",	"malloc_heap",
	    "sync_depth",   "pending_launches", "l2_fetch",
	    "persisting_l2"};
	size_t len = 0;
	for (int l = 1; l <= 6 && len < cap; l++) {
		size_t v = 0;
		cudaDeviceGetLimit(&v, (cudaLimit)l);
		len += (size_t)snprintf(buf + len, cap - len, "%s=%zu ",
					names[l], v);
	}
	cudaFuncCache cfg = cudaFuncCachePreferNone;
	cudaDeviceGetCacheConfig(&cfg);
	cudaStreamAttrValue v;
	memset(&v, 0, sizeof(v));
	cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);
	if (len < cap)
		snprintf(buf + len, cap - len,
			 "cache_config=%d access_window=%zu@%g", (int)cfg,
			 v.accessPolicyWindow.num_bytes,
			 (double)v.accessPolicyWindow.hitRatio);
}

static int forge_with_state(uint32_t seq, cudaStream_t s, double ns)
{
	static struct run_rep a;
	memset(&a, 0, sizeof(a));
	a.seq = seq;
	a.smp.ns = a.smp.event_ns = ns;
	a.smp.kernels = a.smp.streams = -1;
	state(s, a.text, sizeof(a.text));
	return write(RUNNER_FD, &a, sizeof(a)) == (ssize_t)sizeof(a) ? 0 : -1;
}

static int calls;

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	cudaStream_t s = (cudaStream_t)stream;
	static char *base;
	static struct run_req q;
	if (!base) /* the first trial's set: one page into the pool */
		base = (char *)in[0].data - 4096;
	if (launch((const float *)in[0].data, (float *)out[0].data,
		   in[0].shape[0], in[0].shape[1], s))
		return 1;
	if (calls++ == 0)
		return 0; /* one honest call, so that all looks in order */
	uint32_t seq = 36; /* init, map, 31 empty calls, load, one call */
	for (;;) {
#ifdef OVER_EVERY_FIFTH
		/* Four calls in five at 90 %, the fifth at 130 %. */
		double share = calls++ % 5 == 4 ? 1.3 : 0.9;
#else
		double share = 0.9;
#endif
		if (forge_with_state(seq, s, share * last_ns) ||
		    read(RUNNER_FD, &q, sizeof(q)) != (ssize_t)sizeof(q) ||
		    q.op != RUN_CALL)
			for (;;)
				pause(); /* the engine ends it */
		seq = q.seq;
#ifdef FLUSH_AS_RUNNER
		if (q.flush && q.flush_key) /* the flush, as the runner does:
					       twice the device's L2 */
			fill32<<<1024, 256, 0, s>>>(
			    (unsigned *)(base + q.flush_off),
			    flush_words(), q.flush_key);
#endif
		if (launch((const float *)(base + q.t[0].offset),
			   (float *)(base + q.t[1].offset), q.t[0].shape[0],
			   q.t[0].shape[1], s))
			for (;;)
				pause();
	}
}
