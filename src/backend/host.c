/*
 * host.c: the host backend: candidates are C functions on this CPU, buffers
 * are host memory, and the cache flush walks a buffer twice the size of the
 * last-level cache. CI runs the whole pipeline through it.
 */
#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdbool.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <kforge/backend.h>

#include "nudge.h"

struct host {
	long ncpu; /* cores online: the fill's helper threads may use any */
	unsigned char *flush_buf;
	size_t flush_bytes;
	size_t llc_bytes;
	volatile unsigned long sink;
};

static unsigned long sysfs_cache(int index, const char *what)
{
	char path[96], buf[64];
	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, what);
	FILE *f = fopen(path, "r");
	unsigned long v = 0;
	if (f && fgets(buf, sizeof(buf), f)) {
		char *end;
		v = strtoul(buf, &end, 10);
		if (*end == 'K')
			v <<= 10;
		else if (*end == 'M')
			v <<= 20;
	}
	if (f)
		fclose(f);
	return v;
}

/* The size of the largest cache of cpu0 (max_level 0) or of the largest
 * below level 3 (max_level 2: the core's own), from sysfs; 0 when
 * unknown. */
static size_t cache_bytes(unsigned long max_level)
{
	size_t best = 0;
	for (int i = 0; i < 8; i++) {
		unsigned long level = sysfs_cache(i, "level");
		unsigned long v = sysfs_cache(i, "size");
		if (max_level && level > max_level)
			continue;
		if (v > best)
			best = v;
	}
	return best;
}

static int host_init(void **ctx, struct kf_err *err)
{
	(void)err;
	struct host *h = kf_xcalloc(1, sizeof(*h));
	h->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	h->llc_bytes = cache_bytes(0);
	/* The flush writes twice the core's own caches; what a call read or
	 * wrote is evicted from every level by flush_range, so the shared
	 * last-level cache (480 MiB on some virtual machines, 2 x 512 MiB of
	 * writes per call when it was flushed whole) need not be rewritten. */
	size_t own = cache_bytes(2);
	size_t b = 2 * (own ? own : (2u << 20));
	if (b < (4u << 20))
		b = 4u << 20;
	if (b > (64u << 20))
		b = 64u << 20;
	h->flush_bytes = b;
	h->flush_buf = kf_xmalloc(b);
	memset(h->flush_buf, 1, b);
	*ctx = h;
	return 0;
}

static void host_fini(void *ctx)
{
	struct host *h = ctx;
	if (!h)
		return;
	free(h->flush_buf);
	free(h);
}

static char *cpu_model(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	char *model = NULL;
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10)) {
			char *colon = strchr(line, ':');
			if (colon) {
				colon += 2;
				colon[strcspn(colon, "\n")] = '\0';
				model = kf_xstrdup(colon);
			}
			break;
		}
	}
	if (f)
		fclose(f);
	return model ? model : kf_xstrdup("unknown CPU");
}

static cJSON *host_describe(void *ctx)
{
	struct host *h = ctx;
	cJSON *d = cJSON_CreateObject();
	char *model = cpu_model();
	cJSON_AddStringToObject(d, "kind", "cpu");
	cJSON_AddStringToObject(d, "name", model);
	cJSON_AddNumberToObject(d, "cores",
				(double)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddNumberToObject(d, "llc_bytes", (double)h->llc_bytes);
	cJSON_AddNumberToObject(d, "flush_bytes", (double)h->flush_bytes);
	cJSON_AddNumberToObject(d, "memory_bytes",
				(double)sysconf(_SC_PHYS_PAGES) *
				    (double)sysconf(_SC_PAGESIZE));
	free(model);
	return d;
}

static void *host_stream(void *ctx)
{
	(void)ctx;
	return NULL;
}

static int host_alloc(void *ctx, size_t bytes, void **ptr, struct kf_err *err)
{
	(void)ctx;
	/* Large buffers on a 2 MiB boundary (a huge page), so that two of the
	 * same size have the same layout; small ones on a cache line. The size
	 * is rounded up so that aligned_alloc accepts it. */
	size_t align = bytes >= (1u << 20) ? (2u << 20) : 64;
	size_t n = (bytes + align - 1) & ~(align - 1);
	void *p = aligned_alloc(align, n ? n : align);
	if (!p)
		return kf_err_set(err, KF_ERANGE,
				  "cannot allocate %zu bytes of host memory",
				  bytes);
	*ptr = p;
	return 0;
}

static void host_free(void *ctx, void *ptr)
{
	(void)ctx;
	free(ptr);
}

static int host_map(void *ctx, const struct kf_share *h, size_t bytes,
		    void **ptr, struct kf_err *err)
{
	(void)ctx;
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_SHARED, h->fd, 0);
	if (p == MAP_FAILED)
		return kf_err_set(err, KF_ERANGE,
				  "cannot map a shared pool of %zu bytes: %s",
				  bytes, strerror(errno));
	*ptr = p;
	return 0;
}

/* A memory file, so that a runner process maps the same pages. */
static int host_share(void *ctx, size_t bytes, void **ptr, struct kf_share *h,
		      struct kf_err *err)
{
	h->fd = memfd_create("kforge-pool", MFD_CLOEXEC);
	if (h->fd < 0)
		return kf_err_set(err, KF_EIO, "memfd_create: %s",
				  strerror(errno));
	int rc = 0;
	if (ftruncate(h->fd, (off_t)(bytes ? bytes : 1)))
		rc = kf_err_set(err, KF_ERANGE,
				"cannot size a shared pool of %zu bytes: %s",
				bytes, strerror(errno));
	if (!rc)
		rc = host_map(ctx, h, bytes, ptr, err);
	if (rc) {
		close(h->fd);
		h->fd = -1;
	}
	return rc;
}

static void host_unshare(void *ctx, void *ptr, size_t bytes, struct kf_share *h,
			 bool mapped)
{
	(void)ctx;
	(void)mapped;
	if (ptr)
		munmap(ptr, bytes ? bytes : 1);
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

static int host_copy(void *ctx, void *dst, const void *src, size_t bytes,
		     struct kf_err *err)
{
	(void)ctx;
	(void)err;
	memcpy(dst, src, bytes);
	return 0;
}

/* Elements [from, to) of a contiguous fill: values drawn a block at a
 * time (the generator is counter-based: any split gives the same bits). */
struct fill_part {
	long ncpu;
	void *ptr;
	enum kf_dtype dt;
	const struct kf_fill *f;
	int64_t from, to;
	pthread_t th;
	bool started;
};

static void fill_run(const struct fill_part *p)
{
	double buf[256];
	for (int64_t j = p->from; j < p->to; j += 256) {
		int64_t k = p->to - j < 256 ? p->to - j : 256;
		kf_rng_values(p->f, (uint64_t)j, k, buf);
		for (int64_t i = 0; i < k; i++)
			kf_store_from_double(p->ptr, p->dt, j + i, buf[i]);
	}
}

static void *fill_thread(void *arg)
{
	/* The worker is pinned to one core, and its threads with it: a
	 * helper may run on any (the runners are idle while the engine
	 * fills, and the flush before each call evicts what it wrote). */
	const struct fill_part *p = arg;
	cpu_set_t all;
	CPU_ZERO(&all);
	for (long c = 0; c < p->ncpu && c < CPU_SETSIZE; c++)
		CPU_SET((int)c, &all);
	(void)sched_setaffinity(0, sizeof(all), &all);
	fill_run(p);
	return NULL;
}

/* Large fills are split over threads, one a core up to FILL_THREADS, at
 * least FILL_PART elements each: drawing the inputs (a Philox block, and a
 * log and a cosine per normal value: about 70 ns a value) was 58 % of a
 * host evaluation of a 4096 x 4096 row sum. */
#define FILL_THREADS 8
#define FILL_PART (1 << 20)

static int host_fill(void *ctx, void *ptr, enum kf_dtype dt, int64_t n,
		     const struct kf_fill *f, struct kf_err *err)
{
	(void)err;
	const struct host *h = ctx;
	size_t w = kf_dtype_bytes(dt);
	if (f->scatter <= 0 && f->kind != KF_DIST_BITS) {
		int64_t parts = n / FILL_PART;
		if (parts > h->ncpu)
			parts = h->ncpu;
		if (parts > FILL_THREADS)
			parts = FILL_THREADS;
		if (parts < 1)
			parts = 1;
		struct fill_part part[FILL_THREADS];
		for (int64_t t = 0; t < parts; t++) {
			part[t] = (struct fill_part){
			    h->ncpu, ptr, dt, f, n * t / parts,
			    n * (t + 1) / parts, 0, false};
			/* The last part is this thread's; a part whose thread
			 * cannot start is done here too. */
			if (t + 1 < parts)
				part[t].started = !pthread_create(
				    &part[t].th, NULL, fill_thread, &part[t]);
		}
		fill_run(&part[parts - 1]);
		for (int64_t t = 0; t + 1 < parts; t++) {
			if (part[t].started)
				pthread_join(part[t].th, NULL);
			else
				fill_run(&part[t]);
		}
		return 0;
	}
	int64_t m = f->scatter > 0 ? f->scatter : n;
	for (int64_t j = 0; j < m && n > 0; j++) {
		int64_t i =
		    f->scatter > 0 ? kf_scatter_pos(f, (uint64_t)j, n) : j;
		if (f->kind == KF_DIST_BITS) {
			uint64_t b = kf_rng_bits(f, dt, (uint64_t)i);
			memcpy((char *)ptr + (size_t)i * w, &b, w);
		} else {
			kf_store_from_double(ptr, dt, i,
					     kf_rng_value(f, (uint64_t)i));
		}
	}
	return 0;
}

static int host_poison(void *ctx, void *ptr, enum kf_dtype dt, int64_t n,
		       struct kf_err *err)
{
	(void)ctx;
	(void)err;
	uint64_t bits;
	size_t w = kf_dtype_bytes(dt);
	kf_poison_bits(dt, &bits);
	unsigned char *p = ptr;
	for (int64_t i = 0; i < n; i++)
		memcpy(p + (size_t)i * w, &bits, w); /* little-endian */
	return 0;
}

KF_NUDGE_ONE(KF_NUDGE_AS_C)

static int host_nudge(void *ctx, void *ptr, int64_t n, uint64_t seed,
		      int input, struct kf_err *err)
{
	(void)ctx;
	(void)err;
	uint32_t *x = ptr;
	for (int64_t e = 0; e < n; e++)
		x[e] = kf_nudge_one(x[e], seed, e, input);
	return 0;
}

/* |got - want| of element i. Integers are subtracted as integers: int64
 * values past 2^53 that differ by less than a double's step would
 * otherwise look equal. NaN when either side is NaN. */
static double abs_diff(const void *got, const void *want, enum kf_dtype dt,
		       int64_t i, double g, double v)
{
	if (dt != KF_I32 && dt != KF_I64)
		return fabs(g - v);
	int64_t a = dt == KF_I32 ? ((const int32_t *)got)[i]
				 : ((const int64_t *)got)[i];
	int64_t b = dt == KF_I32 ? ((const int32_t *)want)[i]
				 : ((const int64_t *)want)[i];
	return (double)(a > b ? (uint64_t)a - (uint64_t)b
			      : (uint64_t)b - (uint64_t)a);
}

/* How far outside the tolerance an element is: <= 1 inside, > 1 outside,
 * INFINITY for a NaN or infinity where the other side differs. d is
 * |got - want| from abs_diff. */
static double badness(double got, double want, double d,
		      struct kf_tolerance tol)
{
	if (isnan(want) || isnan(got))
		return isnan(want) && isnan(got) ? 0 : INFINITY;
	if (isinf(want) || isinf(got))
		return got == want ? 0 : INFINITY;
	double lim = tol.atol + tol.rtol * fabs(want);
	if (lim == 0)
		return d == 0 ? 0 : INFINITY;
	return d / lim;
}

static int host_compare(void *ctx, const void *got, const void *want,
			enum kf_dtype dt, int64_t n, struct kf_tolerance tol,
			struct kf_cmp *c, struct kf_err *err)
{
	(void)ctx;
	(void)err;
	uint64_t pbits;
	size_t w = kf_dtype_bytes(dt);
	kf_poison_bits(dt, &pbits);
	memset(c, 0, sizeof(*c));
	c->n = n;
	c->worst_index = n ? 0 : -1;
	c->want_min = INFINITY;
	c->want_max = -INFINITY;
	double worst = -1, worst_d = 0, sum = 0, sumsq = 0;
	int64_t finite = 0;
	bool exact = tol.atol == 0 && tol.rtol == 0;
	for (int64_t i = 0; i < n; i++) {
		double g = kf_load_as_double(got, dt, i);
		double v = kf_load_as_double(want, dt, i);
		double d = abs_diff(got, want, dt, i, g, v);
		const unsigned char *gb = (const unsigned char *)got + i * w;
		const unsigned char *vb = (const unsigned char *)want + i * w;
		if (!memcmp(gb, &pbits, w) && memcmp(vb, &pbits, w))
			c->unwritten++;
		/* glibc's isinf() is -1 for -inf: count with != 0. */
		c->nan_got += isnan(g) != 0;
		c->inf_got += isinf(g) != 0;
		c->nan_want += isnan(v) != 0;
		c->inf_want += isinf(v) != 0;
		if (isfinite(v)) {
			finite++;
			sum += v;
			sumsq += v * v;
			if (v < c->want_min)
				c->want_min = v;
			if (v > c->want_max)
				c->want_max = v;
		}
		if (isfinite(g) && isfinite(v)) {
			c->l1_err += d;
			c->l1_want += fabs(v);
			c->toward_zero += fabs(g) < fabs(v);
			c->away_from_zero += fabs(g) > fabs(v);
			if (d > c->max_abs)
				c->max_abs = d;
			if (v != 0 && d / fabs(v) > c->max_rel)
				c->max_rel = d / fabs(v);
		}
		/* A bit-exact task (atol = rtol = 0) is compared bit for
		 * bit: -0 is not +0, and a NaN keeps its payload. */
		double b = exact ? (memcmp(gb, vb, w) ? INFINITY : 0)
				 : badness(g, v, d, tol);
		if (b > 1)
			c->mismatches++;
		/* Equally bad (every mismatch under a zero tolerance is
		 * INFINITY): the larger error is the one worth showing. */
		if (b > worst || (b == worst && d > worst_d)) {
			worst = b;
			worst_d = d;
			c->worst_index = i;
			c->worst_got = g;
			c->worst_want = v;
			c->worst_got_bits = c->worst_want_bits = 0;
			memcpy(&c->worst_got_bits, gb, w);
			memcpy(&c->worst_want_bits, vb, w);
		}
	}
	if (finite) {
		c->want_mean = sum / (double)finite;
		double var =
		    sumsq / (double)finite - c->want_mean * c->want_mean;
		c->want_std = var > 0 ? sqrt(var) : 0;
	} else {
		c->want_min = c->want_max = 0;
	}
	return 0;
}

/* splitmix64's finaliser. */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The high and low halves of a 64 x 64-bit product, folded. */
static inline uint64_t mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* The checksum's term of the i-th 16-byte pair at p. */
static inline uint64_t pair_term(const unsigned char *p, uint64_t i)
{
	const uint64_t k = (i + 1) * 0x9e3779b97f4a7c15ull;
	uint64_t a, b;
	memcpy(&a, p + 16 * i, 8);
	memcpy(&b, p + 16 * i + 8, 8);
	return mum(a ^ k ^ 0xa0761d6478bd642full, b ^ k ^ 0xe7037ed1a0b428dbull);
}

/* A hash of 16-byte pairs of words, each word keyed by its position (a
 * Weyl sequence), a pair's two words multiplied into 128 bits and folded,
 * summed over the pairs in four lanes: one multiply per 16 bytes. It sees
 * any change but the crafted (as did the device's construction, whose
 * position keys are public too); it runs on every trial's and timed
 * call's inputs, and the two multiplies per 8 bytes of the splitmix
 * construction the device keeps cost 14 % of a host evaluation. */
static int host_checksum(void *ctx, const void *ptr, size_t bytes,
			 uint64_t *out, struct kf_err *err)
{
	(void)ctx;
	(void)err;
	const unsigned char *p = ptr;
	const uint64_t g = 0x9e3779b97f4a7c15ull;
	uint64_t lane[4] = {0, 0, 0, 0}, pairs = bytes / 16, i = 0;
	for (; i + 4 <= pairs; i += 4)
		for (int l = 0; l < 4; l++)
			lane[l] += pair_term(p, i + (uint64_t)l);
	for (; i < pairs; i++)
		lane[0] += pair_term(p, i);
	uint64_t h = mix(lane[0]) ^ mix(lane[1] + g) ^ mix(lane[2] + 2 * g) ^
		     mix(lane[3] + 3 * g);
	for (uint64_t j = pairs * 16; j < bytes; j++)
		h += mix((uint64_t)p[j] ^ mix(j * 0x9e3779b97f4a7c15ull));
	*out = h ^ bytes;
	return 0;
}

static int host_flush(void *ctx, struct kf_err *err)
{
	(void)err;
	struct host *h = ctx;
	/* Write every line (evicting whatever the last call left), then read
	 * them back so the compiler cannot drop the writes. */
	unsigned long s = 0;
	for (size_t i = 0; i < h->flush_bytes; i += 64)
		h->flush_buf[i]++;
	for (size_t i = 0; i < h->flush_bytes; i += 64)
		s += h->flush_buf[i];
	h->sink = s;
	return 0;
}

/* Evicts the lines of [p, p + bytes) from every cache level, so that the
 * next call reads its inputs from memory, as after a whole-cache flush. */
static void host_flush_range(void *ctx, const void *p, size_t bytes)
{
	(void)ctx;
	if (!bytes)
		return;
#if defined(__x86_64__) || defined(__i386__)
	const char *a = (const char *)((uintptr_t)p & ~(uintptr_t)63);
	const char *end = (const char *)p + bytes;
	for (; a < end; a += 64)
		__asm__ volatile("clflush (%0)" ::"r"(a) : "memory");
	__asm__ volatile("mfence" ::: "memory");
#elif defined(__aarch64__)
	const char *a = (const char *)((uintptr_t)p & ~(uintptr_t)63);
	const char *end = (const char *)p + bytes;
	for (; a < end; a += 64)
		__asm__ volatile("dc civac, %0" ::"r"(a) : "memory");
	__asm__ volatile("dsb sy" ::: "memory");
#endif
}

/* The floating-point environment: the rounding mode and, on x86, MXCSR
 * (flush-to-zero and denormals-are-zero change results and speed) and the
 * x87 control word (its precision and rounding fields change what long
 * double and x87 code compute; fegetround reads only MXCSR's rounding on
 * x86-64, so a candidate's fldcw shows nowhere else). */
static void host_state(void *ctx, char *buf, size_t cap)
{
	(void)ctx;
	unsigned mxcsr = 0;
#if defined(__x86_64__)
	unsigned short x87cw = 0;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(x87cw));
	mxcsr &= ~0x3fu; /* not the sticky exception flags */
	snprintf(buf, cap, "rounding %d, mxcsr 0x%04x, x87 control word 0x%04x",
		 fegetround(), mxcsr, (unsigned)x87cw);
#else
#if defined(__i386__)
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	mxcsr &= ~0x3fu;
#endif
	snprintf(buf, cap, "rounding %d, mxcsr 0x%04x", fegetround(), mxcsr);
#endif
}

static int host_sync(void *ctx, struct kf_err *err)
{
	(void)ctx;
	(void)err;
	return 0;
}

static int host_time_call(void *ctx, kf_entry_fn fn, const DLTensor *in,
			  int n_in, DLTensor *out, int n_out, bool flush,
			  struct kf_sample *s, struct kf_err *err)
{
	if (flush)
		host_flush(ctx, err);
	/* The call's CPU time, not its wall time: on a loaded machine the
	 * wall time counts whatever else ran on the core meanwhile, and a
	 * single-threaded kernel (the host sandbox allows no threads) does
	 * all its work on this thread (docs/measuring.md). */
	uint64_t t0 = kf_thread_cpu_ns();
	s->rc = fn(in, n_in, out, n_out, NULL);
	uint64_t t1 = kf_thread_cpu_ns();
	s->ns = s->event_ns = (double)(t1 - t0);
	s->clock_mhz = 0;
	s->throttled = false;
	s->kernels = s->streams = -1;
	return 0;
}

unsigned kf_host_cpu_features(void)
{
	unsigned f = 0;
#if defined(__x86_64__)
	unsigned a, b, c, d, a1 = 0, b1 = 0, c1 = 0, d1 = 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	if (a >= 1)
		__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
	unsigned ca = 0, cb = 0, cc = 0, cd = 0;
	__get_cpuid(1, &ca, &cb, &cc, &cd);
	unsigned long long xcr0 = 0;
	if (cc & (1u << 27)) { /* OSXSAVE */
		unsigned lo, hi;
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		xcr0 = ((unsigned long long)hi << 32) | lo;
	}
	bool zmm = (xcr0 & 0xe6) == 0xe6; /* the OS saves AVX-512 state */
	bool tiles = (d & (1u << 24)) && (xcr0 & (3ull << 17)) == 3ull << 17;
	if (zmm && (a1 & (1u << 5)))
		f |= KF_CPU_AVX512_BF16;
	if (zmm && (d & (1u << 23)))
		f |= KF_CPU_AVX512_FP16;
	if (tiles && (d & (1u << 22)))
		f |= KF_CPU_AMX_BF16;
	if (tiles && (a1 & (1u << 21)))
		f |= KF_CPU_AMX_FP16;
#endif
	return f;
}

/* The roofline probe, compiled with the candidates' flags: one core's
 * FMA throughput and copy bandwidth, where the CPU has AMX-BF16 and the
 * flags allow it the rate of its tiles (matrix_flops_per_s: bf16
 * products, fp32 sums; 0 elsewhere), the best of several runs, in the
 * thread's CPU time as the candidates' calls are timed (wall time under a
 * load of 6 on two cores halved the copy bandwidth it found, and honest
 * kernels were then "faster than the roofline"). */
static const char host_probe[] =
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <time.h>\n"
    "static double now(void) { struct timespec t;\n"
    "  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);\n"
    "  return t.tv_sec + t.tv_nsec * 1e-9; }\n"
    "#if defined(__x86_64__) && defined(__AMX_TILE__) && "
    "defined(__AMX_BF16__)\n"
    "#include <immintrin.h>\n"
    "#include <sys/syscall.h>\n"
    "#include <unistd.h>\n"
    "/* tdpbf16ps on 8 tiles, 4 products in flight: 16x16x32 per op. */\n"
    "static double amx_bf16(void) {\n"
    "  if (syscall(SYS_arch_prctl, 0x1023, 18)) return 0;\n"
    "  struct { unsigned char palette, start, r[14];\n"
    "    unsigned short colsb[16]; unsigned char rows[16]; }\n"
    "    __attribute__((aligned(64))) cfg;\n"
    "  memset(&cfg, 0, sizeof(cfg)); cfg.palette = 1;\n"
    "  for (int i = 0; i < 8; i++) { cfg.colsb[i] = 64; cfg.rows[i] = 16; }\n"
    "  static unsigned short m[16 * 32] __attribute__((aligned(64)));\n"
    "  _tile_loadconfig(&cfg);\n"
    "  _tile_loadd(4, m, 64); _tile_loadd(5, m, 64);\n"
    "  _tile_loadd(6, m, 64); _tile_loadd(7, m, 64);\n"
    "  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);\n"
    "  double best = 0; long iters = 200000;\n"
    "  for (int r = 0; r < 5; r++) { double t0 = now();\n"
    "    for (long i = 0; i < iters; i++) {\n"
    "      _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7);\n"
    "      _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7); }\n"
    "    double t = now() - t0;\n"
    "    double f = 4.0 * 2 * 16 * 16 * 32 * iters / t;\n"
    "    if (f > best) best = f; }\n"
    "  _tile_stored(0, m, 64); _tile_release();\n"
    "  return best; }\n"
    "#else\n"
    "static double amx_bf16(void) { return 0; }\n"
    "#endif\n"
    "int kf_probe(double *flops_per_s, double *bytes_per_s,\n"
    "             double *matrix_flops_per_s) {\n"
    "  *matrix_flops_per_s = amx_bf16();\n"
    "  float acc[64]; volatile float seed = 1.0f; float a = 0.999999f,\n"
    "  b = 1e-7f; for (int j = 0; j < 64; j++) acc[j] = seed * j;\n"
    "  double best = 0; long iters = 4000000;\n"
    "  for (int r = 0; r < 5; r++) { double t0 = now();\n"
    "    for (long i = 0; i < iters; i++)\n"
    "      for (int j = 0; j < 64; j++) acc[j] = acc[j] * a + b;\n"
    "    double t = now() - t0; double f = 2.0 * 64 * iters / t;\n"
    "    if (f > best) best = f; }\n"
    "  float s = 0; for (int j = 0; j < 64; j++) s += acc[j];\n"
    "  seed = s; *flops_per_s = best;\n"
    "  size_t n = (size_t)256 << 20; char *x = malloc(n), *y = malloc(n);\n"
    "  if (!x || !y) { free(x); free(y); return 1; }\n"
    "  memset(x, 1, n); memset(y, 2, n); best = 0;\n"
    "  for (int r = 0; r < 5; r++) { double t0 = now(); memcpy(y, x, n);\n"
    "    double t = now() - t0; if (2.0 * n / t > best) best = 2.0 * n / t;\n"
    "    x[r] = y[n - 1 - r]; }\n"
    "  free(x); free(y); *bytes_per_s = best; return 0; }\n";

const struct kf_backend_ops kf_backend_host = {
    .version = KF_BACKEND_VERSION,
    .name = "host",
    .device_type = kDLCPU,
    .init = host_init,
    .fini = host_fini,
    .describe = host_describe,
    .stream = host_stream,
    .alloc = host_alloc,
    .free = host_free,
    .share = host_share,
    .map = host_map,
    .unshare = host_unshare,
    .copy = host_copy,
    .read = host_copy,
    .write = host_copy,
    .fill = host_fill,
    .poison = host_poison,
    .nudge = host_nudge,
    .compare = host_compare,
    .checksum = host_checksum,
    .flush = host_flush,
    .flush_range = host_flush_range,
    .sync = host_sync,
    .time_call = host_time_call,
    .state = host_state,
    .probe_source = host_probe,
    .probe_ext = ".c",
};
