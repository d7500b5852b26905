/*
 * backend.h: one ops table per execution backend (host: C on the CPU; cuda:
 * NVIDIA GPUs). The worker drives every evaluation through these entries, so
 * the protocol, checks and statistics are the same on every backend.
 * Buffers are backend memory ("device" pointers); the engine owns them all.
 */
#ifndef KFORGE_BACKEND_H
#define KFORGE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/base.h>
#include <kforge/kernel.h>
#include <kforge/task.h>

#define KF_BACKEND_VERSION 2

typedef int (*kf_entry_fn)(const DLTensor *in, int n_in, DLTensor *out,
			   int n_out, void *stream);

/* How to fill a buffer: element i gets the value of distribution kind with
 * params p, drawn from the counter-based generator at (seed, stream, i).
 * With scatter > 0 only that many elements are written, at positions drawn
 * from the same generator (kf_scatter_pos; repeats possible), each with
 * its own element's value; the rest keep what they held. */
struct kf_fill {
	uint64_t seed;
	uint32_t stream; /* which tensor of the trial */
	enum kf_dist_kind kind;
	double p[2];
	int64_t scatter;
};

/* Raw comparison of got against want (n elements), as measured; the judge
 * decides what it means. */
struct kf_cmp {
	int64_t n;
	int64_t mismatches; /* outside atol + rtol*|want|, NaN/Inf included */
	int64_t unwritten;  /* still holding the poison while want does not */
	int64_t nan_got, inf_got, nan_want, inf_want;
	double max_abs;	     /* over elements where both are finite */
	double max_rel;	     /* |got-want| / |want|, where want != 0 */
	int64_t worst_index; /* the element furthest outside (or nearest to)
				the tolerance; -1 when n == 0 */
	double worst_got, worst_want;
	uint64_t worst_got_bits, worst_want_bits;	/* their raw bits */
	double want_mean, want_std, want_min, want_max; /* finite elements */
	/* Sums over elements where both are finite: |got - want| and |want|,
	 * whose ratio is the L1 relative error (the strict precision check). */
	double l1_err, l1_want;
	/* Where both are finite and differ: how many have |got| < |want|
	 * (rounded toward zero against the reference) and |got| > |want|. */
	int64_t toward_zero, away_from_zero;
};

/* One timed call, as measured. */
struct kf_sample {
	double ns;	  /* from the start of the call until all work it
			     started on the device had finished */
	double event_ns;  /* the engine stream's own view (events), or ns */
	double clock_mhz; /* SM clock read after the call, 0 if unknown */
	bool throttled;	  /* the device reported a slowdown (power,
			     thermal) during the call */
	int kernels;	  /* device activities seen in the window, -1 if
			     not traced */
	int streams;	  /* distinct streams they ran on, -1 if not traced */
	int rc;		  /* what fn returned */
};

/* Memory that another process can map: a memory file on the host, an IPC
 * handle on cuda. */
struct kf_share {
	int fd; /* -1 when none */
	unsigned char handle[64];
};

struct kf_backend_ops {
	int version; /* KF_BACKEND_VERSION */
	const char *name;
	DLDeviceType device_type;

	/* Opens the device in this process. *ctx is the backend's state. */
	int (*init)(void **ctx, struct kf_err *err);
	void (*fini)(void *ctx);
	/* A JSON object describing the device (name, memory, clocks...). */
	cJSON *(*describe)(void *ctx);
	/* The stream passed to kf_entry. */
	void *(*stream)(void *ctx);

	int (*alloc)(void *ctx, size_t bytes, void **ptr, struct kf_err *err);
	void (*free)(void *ctx, void *ptr);
	/* Allocates memory another process maps with map (its handle in
	 * *h); unshare releases it, in the process that made it or mapped
	 * it. */
	int (*share)(void *ctx, size_t bytes, void **ptr, struct kf_share *h,
		     struct kf_err *err);
	int (*map)(void *ctx, const struct kf_share *h, size_t bytes,
		   void **ptr, struct kf_err *err);
	void (*unshare)(void *ctx, void *ptr, size_t bytes, struct kf_share *h,
			bool mapped);
	int (*copy)(void *ctx, void *dst, const void *src, size_t bytes,
		    struct kf_err *err);
	/* Copies device memory to host memory (small reads only). */
	int (*read)(void *ctx, void *host_dst, const void *src, size_t bytes,
		    struct kf_err *err);
	/* Copies host memory to device memory. */
	int (*write)(void *ctx, void *dst, const void *host_src, size_t bytes,
		     struct kf_err *err);
	int (*fill)(void *ctx, void *ptr, enum kf_dtype dt, int64_t n,
		    const struct kf_fill *f, struct kf_err *err);
	/* Writes the poison pattern of dt (a signalling NaN for floats,
	 * 0xa5 bytes for integers) into every element. */
	int (*poison)(void *ctx, void *ptr, enum kf_dtype dt, int64_t n,
		      struct kf_err *err);
	/* Moves every finite nonzero float32 of ptr[0..n) one unit in the
	 * last place, up or down as a hash of seed, input and the index
	 * says (src/backend/nudge.h: the same on every backend). */
	int (*nudge)(void *ctx, void *ptr, int64_t n, uint64_t seed, int input,
		     struct kf_err *err);
	int (*compare)(void *ctx, const void *got, const void *want,
		       enum kf_dtype dt, int64_t n, struct kf_tolerance tol,
		       struct kf_cmp *out, struct kf_err *err);
	/* A 64-bit hash of the bytes. */
	int (*checksum)(void *ctx, const void *ptr, size_t bytes, uint64_t *out,
			struct kf_err *err);
	/* Evicts the caches a call could find warm (what time_call does with
	 * flush, on its own). */
	int (*flush)(void *ctx, struct kf_err *err);
	/* Optional (a device): the bytes a flush writes, and where: from
	 * now on each flush writes value into every 32-bit word of the
	 * flush_bytes at ptr (memory the worker shares, so that it can see
	 * that the flush was done) instead of the backend's own buffer. */
	/* Optional (the host): evicts [ptr, ptr + bytes) from every cache
	 * level; the worker does so for a call's tensors before flush. */
	void (*flush_range)(void *ctx, const void *ptr, size_t bytes);
	size_t (*flush_bytes)(void *ctx);
	void (*flush_into)(void *ctx, void *ptr, uint32_t value);
	/* Waits for all work the process started on the device. */
	int (*sync)(void *ctx, struct kf_err *err);

	/*
	 * Calls fn once and measures it (see struct kf_sample); with flush,
	 * the caches are evicted first, outside the measured window but with
	 * no idle gap before it (an idle device lowers its clocks). Returns
	 * KF_EFAULT when the call left the device unusable (the worker then
	 * reports a fault and exits), another negative code for an engine
	 * failure.
	 */
	int (*time_call)(void *ctx, kf_entry_fn fn, const DLTensor *in,
			 int n_in, DLTensor *out, int n_out, bool flush,
			 struct kf_sample *s, struct kf_err *err);
	/* Optional: completes the sample that time_call began (the device
	 * trace, the clock), once the caller has let the worker know that
	 * the call's work is done: bookkeeping whose cost grows with what
	 * the call did (one trace record per kernel) then stays out of the
	 * worker's view of the call, which must be the same for both sides
	 * (docs/measuring.md, "Seen from outside"). */
	int (*time_finish)(void *ctx, struct kf_sample *s, struct kf_err *err);

	/* Optional (may be NULL): the device's energy counter in millijoules,
	 * for joules per call. */
	int (*energy_mj)(void *ctx, double *mj, struct kf_err *err);

	/* Optional: a canonical description of the global state a candidate
	 * could change to its advantage or to slow the reference (host: the
	 * floating-point environment; cuda: context limits, cache
	 * configuration, the engine stream's attributes), for comparing
	 * before and after its calls. */
	void (*state)(void *ctx, char *buf, size_t cap);

	/* Optional: 0 when the backend can run on this machine, else a
	 * negative code with err saying what is missing. Called in the
	 * supervisor, so it must not initialise the device. */
	int (*available)(struct kf_err *err);

	/* Source of the roofline probe (compiled like a candidate; it defines
	 * kf_probe, see worker.c), or NULL. */
	const char *probe_source;
	const char *probe_ext;	     /* ".c" or ".cu" */
	const char *probe_libraries; /* a library the probe links, or NULL */
};

/* The backend of that name ("host", "cuda"), or NULL. */
const struct kf_backend_ops *kf_backend_find(const char *name);

/* The host CPU's units faster than its fp32 FMA for 16-bit floats, from
 * cpuid (and, for AMX, XCR0: the kernel enabled the tile state). */
#define KF_CPU_AVX512_BF16 0x1u /* vdpbf16ps */
#define KF_CPU_AVX512_FP16 0x2u /* fp16 vector FMA */
#define KF_CPU_AMX_BF16 0x4u	/* tdpbf16ps, tiles usable */
#define KF_CPU_AMX_FP16 0x8u	/* tdpfp16ps, tiles usable */
unsigned kf_host_cpu_features(void);

/* The poison bit pattern of one element of dt, in the low bytes of *bits. */
void kf_poison_bits(enum kf_dtype dt, uint64_t *bits);

/*
 * The counter-based generator (Philox-4x32-10): the same (seed, stream,
 * index) always gives the same value, on every backend.
 */
void kf_philox4x32(const uint32_t ctr[4], const uint32_t key[2],
		   uint32_t out[4]);
/* Draw j's position among n elements of a scattered fill. */
int64_t kf_scatter_pos(const struct kf_fill *f, uint64_t j, int64_t n);
/* Element index's value of a distribution, in double precision. */
double kf_rng_value(const struct kf_fill *f, uint64_t index);
/* out[k] = kf_rng_value(f, first + k) for k in [0, n), the same values
 * drawn several at a time (a fill's contiguous run). */
void kf_rng_values(const struct kf_fill *f, uint64_t first, int64_t n,
		   double *out);
/* Element index of a KF_DIST_BITS fill: the dtype's raw bits, never its
 * poison pattern. */
uint64_t kf_rng_bits(const struct kf_fill *f, enum kf_dtype dt, uint64_t index);

/* Reads element i of a host buffer of dtype dt as a double. */
double kf_load_as_double(const void *base, enum kf_dtype dt, int64_t i);
/* Stores v into element i, rounding to dt (nearest-even; ints truncate). */
void kf_store_from_double(void *base, enum kf_dtype dt, int64_t i, double v);

/* The DLPack type (kernel.h) of a task's dtype. */
DLDataType kf_dl_dtype(enum kf_dtype d);

#endif
