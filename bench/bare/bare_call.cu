/*
 * bare_call.cu: times a compiled kforge kernel with no harness: the
 * floor that bench/overhead.py compares kforge's measurement with.
 *
 * usage: bare_call KERNEL.so N CALLS
 *
 * Loads KERNEL.so, gives kf_entry one float32 input and one output of N
 * elements, and times CALLS calls the way the cuda backend's window does
 * (an L2 flush queued on the stream, an event, the call, an event, then
 * a synchronisation), with nothing else: no poisoning, no second
 * process, no CUPTI, no NVML. Prints the median, p10 and p90 of the
 * calls in microseconds, with and without the flush.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

typedef int (*entry_fn)(const DLTensor *, int, DLTensor *, int, void *);

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static int check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "bare_call: %s: %s\n", what, cudaGetErrorString(e));
	return 1;
}

static int run(entry_fn fn, DLTensor *in, DLTensor *out, int calls,
	       void *flush, size_t flush_bytes, cudaStream_t s, float *t)
{
	cudaEvent_t e0, e1;
	if (check(cudaEventCreate(&e0), "cudaEventCreate") ||
	    check(cudaEventCreate(&e1), "cudaEventCreate"))
		return 1;
	for (int i = -3; i < calls; i++) {
		if (flush && check(cudaMemsetAsync(flush, i & 0xff,
						   flush_bytes, s),
				   "cudaMemsetAsync"))
			return 1;
		cudaEventRecord(e0, s);
		if (fn(in, 1, out, 1, s) != 0) {
			fprintf(stderr, "bare_call: kf_entry failed\n");
			return 1;
		}
		cudaEventRecord(e1, s);
		if (check(cudaStreamSynchronize(s), "cudaStreamSynchronize"))
			return 1;
		if (i >= 0)
			cudaEventElapsedTime(&t[i], e0, e1);
	}
	qsort(t, (size_t)calls, sizeof(*t), cmp_float);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: bare_call KERNEL.so N CALLS\n");
		return 2;
	}
	long long n = atoll(argv[2]);
	int calls = atoi(argv[3]);
	if (n <= 0 || calls <= 0) {
		fprintf(stderr, "bare_call: N and CALLS must be positive\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "bare_call: %s\n", dlerror());
		return 1;
	}
	entry_fn fn = (entry_fn)dlsym(h, "kf_entry");
	if (!fn) {
		fprintf(stderr, "bare_call: %s has no kf_entry\n", argv[1]);
		return 1;
	}
	int l2 = 0;
	cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
	size_t flush_bytes = 2 * (size_t)l2;
	float *x, *y;
	void *flush;
	cudaStream_t s;
	if (check(cudaMalloc((void **)&x, n * sizeof(float)), "cudaMalloc") ||
	    check(cudaMalloc((void **)&y, n * sizeof(float)), "cudaMalloc") ||
	    check(cudaMalloc(&flush, flush_bytes), "cudaMalloc") ||
	    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
		  "cudaStreamCreate"))
		return 1;
	cudaMemset(x, 0, n * sizeof(float));
	int64_t shape[1] = {n};
	DLTensor in = {x, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
	DLTensor out = {y, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
	float *t = (float *)malloc((size_t)calls * sizeof(*t));
	if (!t)
		return 1;
	const char *names[2] = {"flushed", "warm"};
	for (int k = 0; k < 2; k++) {
		if (run(fn, &in, &out, calls, k ? NULL : flush, flush_bytes, s,
			t))
			return 1;
		printf("%s median_us %.3f p10_us %.3f p90_us %.3f calls %d\n",
		       names[k], 1e3 * t[calls / 2], 1e3 * t[calls / 10],
		       1e3 * t[calls * 9 / 10], calls);
	}
	return 0;
}
