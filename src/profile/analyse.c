/*
 * analyse.c: from a parsed profile to advice. A table of analysers, each
 * detect -> explain -> recommend over one kernel (or one side), run on the
 * candidate's side; the bottleneck class of each kernel and side; the
 * profile as text and JSON. Thresholds are named beside each analyser
 * (docs/profile.md lists them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/profile.h>

const char *kf_prof_class_name(enum kf_prof_class c)
{
	switch (c) {
	case KF_PROF_MEMORY:
		return "memory-bound";
	case KF_PROF_COMPUTE:
		return "compute-bound";
	case KF_PROF_LATENCY:
		return "latency/occupancy-bound";
	case KF_PROF_LAUNCH:
		return "launch-bound";
	default:
		return "unknown";
	}
}

void kf_profile_init(struct kf_profile *p)
{
	memset(p, 0, sizeof(*p));
	for (int s = 0; s < 2; s++) {
		p->side[s].wall_ms = NAN;
		p->side[s].launch_share = NAN;
		p->side[s].dram_bytes = NAN;
	}
}

void kf_profile_release(struct kf_profile *p)
{
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < p->side[s].n; i++)
			free(p->side[s].k[i].name);
	for (int i = 0; i < p->n_f; i++) {
		free(p->f[i].kernel);
		free(p->f[i].detect);
		free(p->f[i].explain);
		free(p->f[i].recommend);
	}
	free(p->f);
	free(p->note);
	kf_profile_init(p);
}

static bool known(double x)
{
	return !isnan(x);
}

/* The kernel's name up to its parameter list, for text. */
static void short_name(const char *name, char out[96])
{
	size_t n = strcspn(name, "(");
	if (n > 90)
		n = 90;
	snprintf(out, 96, "%.*s", (int)n, name);
}

/* ---- the classes ---- */

/* Launch-bound when most of a call's wall time is spent outside kernels,
 * or when it is many launches of kernels too short to hide a launch
 * (about 5 us of host and driver work each). */
#define LAUNCH_SHARE 0.5
#define TINY_KERNEL_MS 0.005
#define MANY_LAUNCHES 8

static enum kf_prof_class kernel_class(const struct kf_prof_kernel *k)
{
	double d = k->dram_pct, c = k->sm_pct;
	if (!known(d) && !known(c))
		return KF_PROF_UNKNOWN;
	if (!known(d))
		d = 0;
	if (!known(c))
		c = 0;
	if (d >= 60 || (d >= 40 && d >= c))
		return KF_PROF_MEMORY;
	if (c >= 60 || (c >= 40 && c > d))
		return KF_PROF_COMPUTE;
	return KF_PROF_LATENCY;
}

static void side_finish(struct kf_profile *p, struct kf_prof_side *s)
{
	double total = 0, bytes = 0;
	bool have_bytes = false;
	int launches = 0;
	for (int i = 0; i < s->n; i++) {
		total += known(s->k[i].time_ns) ? s->k[i].time_ns : 0;
		launches += s->k[i].launches;
		if (known(s->k[i].dram_bytes)) {
			bytes += s->k[i].dram_bytes * s->k[i].launches;
			have_bytes = true;
		}
	}
	int calls = s->calls > 0 ? s->calls : 1;
	s->kernel_ms = total / 1e6 / calls;
	s->launches = (double)launches / calls;
	s->dram_bytes = have_bytes ? bytes / calls : NAN;
	if (known(s->wall_ms) && s->wall_ms > 0)
		s->launch_share =
		    fmax(0.0, 1.0 - s->kernel_ms / s->wall_ms);
	int top = -1;
	for (int i = 0; i < s->n; i++) {
		struct kf_prof_kernel *k = &s->k[i];
		k->share = total > 0 && known(k->time_ns) ? k->time_ns / total
							  : 0;
		k->cls = kernel_class(k);
		if (top < 0 || k->share > s->k[top].share)
			top = i;
	}
	if (!s->n) {
		s->cls = KF_PROF_UNKNOWN;
		return;
	}
	if ((known(s->launch_share) && s->launch_share >= LAUNCH_SHARE) ||
	    (s->launches >= MANY_LAUNCHES &&
	     s->kernel_ms / s->launches < TINY_KERNEL_MS)) {
		s->cls = KF_PROF_LAUNCH;
		return;
	}
	s->cls = s->k[top].cls;
	/* The roofline wins where the counters name the other unit: it
	 * knows the work the task needs, the counters only what this code
	 * did with it. Latency and launch classes say the call is far from
	 * any roof, which the roofline does not contradict. */
	if (!strcmp(p->roof_bound, "memory") && s->cls == KF_PROF_COMPUTE)
		s->cls = KF_PROF_MEMORY;
	else if (!strcmp(p->roof_bound, "compute") && s->cls == KF_PROF_MEMORY)
		s->cls = KF_PROF_COMPUTE;
	else if (s->cls == KF_PROF_UNKNOWN && p->roof_bound[0])
		s->cls = !strcmp(p->roof_bound, "memory") ? KF_PROF_MEMORY
							  : KF_PROF_COMPUTE;
}

/* ---- the analysers ---- */

#define A_ARGS                                                                 \
	const struct kf_profile *p, const struct kf_prof_side *s,             \
	    const struct kf_prof_kernel *k, struct kf_strbuf *d,               \
	    struct kf_strbuf *e, struct kf_strbuf *r

/* Register spills: a stack frame in the cubin, or local-memory traffic. */
static bool a_spills(A_ARGS)
{
	(void)p;
	(void)s;
	bool stack = k->stack_bytes > 0;
	bool traffic = known(k->local_sectors) && k->local_sectors > 0;
	if (!stack && !traffic)
		return false;
	if (stack)
		kf_strbuf_addf(d,
			       "each thread keeps %d bytes in local memory "
			       "(its stack frame: spilled registers or an "
			       "array the compiler could not keep in "
			       "registers), with %d registers per thread",
			       k->stack_bytes, k->static_regs);
	else
		kf_strbuf_addstr(d, "the kernel reads and writes local "
				    "memory (register spills or a local "
				    "array)");
	if (traffic)
		kf_strbuf_addf(d, "; %.3g local-memory sectors per launch",
			       k->local_sectors);
	kf_strbuf_addstr(e, "local memory lives in DRAM behind the caches: "
			    "every spill is a slow load or store the "
			    "arithmetic waits on");
	kf_strbuf_addstr(r, "keep fewer values live at once (split the loop, "
			    "recompute cheap values), index per-thread arrays "
			    "only with compile-time constants (unrolled loops) "
			    "so they stay in registers, and do not force a "
			    "register cap with __launch_bounds__ or "
			    "-maxrregcount lower than the kernel needs");
	return true;
}

/* Occupancy: the theoretical occupancy under 50 %, while no unit is busy
 * enough to hide it (DRAM and SM under 70 % of peak). */
#define OCC_THEORETICAL 50.0
#define OCC_BUSY 70.0
static bool a_occupancy(A_ARGS)
{
	(void)p;
	(void)s;
	if (!known(k->theoretical_occ_pct) ||
	    k->theoretical_occ_pct >= OCC_THEORETICAL)
		return false;
	if ((known(k->dram_pct) && k->dram_pct >= OCC_BUSY) ||
	    (known(k->sm_pct) && k->sm_pct >= OCC_BUSY))
		return false;
	struct {
		const char *what;
		double blocks;
	} lim[] = {{"registers", k->limit_regs},
		   {"shared memory", k->limit_shared},
		   {"warps per block", k->limit_warps},
		   {"blocks per SM", k->limit_blocks}};
	int best = -1;
	for (int i = 0; i < 4; i++)
		if (known(lim[i].blocks) &&
		    (best < 0 || lim[i].blocks < lim[best].blocks))
			best = i;
	kf_strbuf_addf(d, "at most %.0f%% of the warp slots can be filled",
		       k->theoretical_occ_pct);
	if (known(k->achieved_occ_pct))
		kf_strbuf_addf(d, " (%.0f%% were, on average)",
			       k->achieved_occ_pct);
	if (best >= 0)
		kf_strbuf_addf(d, "; the limit is %s: %.0f blocks per SM",
			       lim[best].what, lim[best].blocks);
	if (best == 0 && known(k->regs_per_thread))
		kf_strbuf_addf(d, " at %.0f registers per thread",
			       k->regs_per_thread);
	if (best == 1 && known(k->shared_bytes))
		kf_strbuf_addf(d, " at %.0f bytes of shared memory per block",
			       k->shared_bytes);
	if (best == 2 && known(k->block_size))
		kf_strbuf_addf(d, " at %.0f threads per block", k->block_size);
	kf_strbuf_addstr(e, "with few warps resident an SM has nothing to "
			    "switch to while a warp waits on memory, so the "
			    "waits are not hidden");
	switch (best) {
	case 0:
		kf_strbuf_addstr(r, "use fewer registers per thread (fewer "
				    "live values, smaller unroll factors) or "
				    "give __launch_bounds__ a minimum of "
				    "blocks per SM");
		break;
	case 1:
		kf_strbuf_addstr(r, "use less shared memory per block "
				    "(smaller tiles, or one buffer reused "
				    "across stages) so that more blocks fit "
				    "on an SM");
		break;
	case 2:
	case 3:
		kf_strbuf_addstr(r, "launch larger blocks (128 to 512 "
				    "threads): the SM holds a limited number "
				    "of blocks, so small ones leave warp "
				    "slots empty");
		break;
	default:
		kf_strbuf_addstr(r, "raise the number of resident warps: "
				    "fewer registers or less shared memory "
				    "per block, or larger blocks");
	}
	return true;
}

/* Uncoalesced access: under half of the bytes fetched per sector used
 * (where ncu measures it), else more than 16 sectors per request (a warp
 * of 32 threads loading 16 bytes each needs 16). */
#define EFFICIENCY_MIN 50.0
#define SECTORS_PER_REQUEST_MAX 16.5
static bool a_uncoalesced(A_ARGS)
{
	(void)p;
	(void)s;
	double lr = known(k->ld_requests) && k->ld_requests > 0
			? k->ld_sectors / k->ld_requests
			: NAN;
	double sr = known(k->st_requests) && k->st_requests > 0
			? k->st_sectors / k->st_requests
			: NAN;
	bool ld = known(k->ld_efficiency_pct)
		      ? k->ld_efficiency_pct < EFFICIENCY_MIN &&
			    !(known(k->ld_requests) && k->ld_requests == 0)
		      : known(lr) && lr > SECTORS_PER_REQUEST_MAX;
	bool st = known(k->st_efficiency_pct)
		      ? k->st_efficiency_pct < EFFICIENCY_MIN &&
			    !(known(k->st_requests) && k->st_requests == 0)
		      : known(sr) && sr > SECTORS_PER_REQUEST_MAX;
	if (!ld && !st)
		return false;
	kf_strbuf_addf(d, "global %s%s%s are scattered:",
		       ld ? "loads" : "", ld && st ? " and " : "",
		       st ? "stores" : "");
	if (ld && known(lr))
		kf_strbuf_addf(d, " %.1f sectors of 32 bytes per load request",
			       lr);
	if (ld && known(k->ld_efficiency_pct))
		kf_strbuf_addf(d, "%s %.0f%% of each loaded sector used",
			       known(lr) ? "," : "", k->ld_efficiency_pct);
	if (st && known(sr))
		kf_strbuf_addf(d, "%s %.1f sectors per store request",
			       ld ? ";" : "", sr);
	if (st && known(k->st_efficiency_pct))
		kf_strbuf_addf(d, "%s %.0f%% of each stored sector used",
			       known(sr) || ld ? "," : "", k->st_efficiency_pct);
	kf_strbuf_addstr(e, "a warp's access is served in 32-byte sectors: "
			    "when neighbouring threads touch addresses far "
			    "apart, each needs a sector of its own and most "
			    "of every sector is fetched for nothing (4 "
			    "sectors per request is ideal for 4-byte "
			    "elements)");
	kf_strbuf_addstr(r, "make consecutive threads (threadIdx.x) touch "
			    "consecutive addresses: swap the index mapping, "
			    "or stage a tile through shared memory and "
			    "transpose it there; use vector loads (float4) "
			    "on contiguous data");
	return true;
}

/* Bank conflicts: shared-memory accesses that take two or more
 * wavefronts on average. */
#define CONFLICT_WAYS 2.0
static bool a_banks(A_ARGS)
{
	(void)p;
	(void)s;
	if (!known(k->shared_conflicts) || k->shared_conflicts <= 0)
		return false;
	double ways = NAN;
	if (known(k->shared_requests) && k->shared_requests > 0)
		ways = 1.0 + k->shared_conflicts / k->shared_requests;
	else if (known(k->shared_wavefronts) && k->shared_wavefronts > 0)
		ways = k->shared_wavefronts /
		       fmax(1.0, k->shared_wavefronts - k->shared_conflicts);
	if (!known(ways) || ways < CONFLICT_WAYS)
		return false;
	kf_strbuf_addf(d,
		       "shared-memory accesses conflict on banks: %.1f-way "
		       "on average (%.3g conflicts per launch)",
		       ways, k->shared_conflicts);
	kf_strbuf_addstr(e, "shared memory has 32 banks of 4 bytes; threads "
			    "of a warp that hit different addresses in one "
			    "bank are served one after another");
	kf_strbuf_addstr(r, "pad shared arrays by one element per row "
			    "(tile[32][33]), or swizzle the index (XOR the "
			    "column with the row), so that a warp's 32 "
			    "accesses fall in 32 different banks");
	return true;
}

/* Divergence: fewer than 24 of a warp's 32 threads active per
 * instruction, on average. */
#define ACTIVE_THREADS_MIN 24.0
static bool a_divergence(A_ARGS)
{
	(void)p;
	(void)s;
	if (!known(k->threads_per_inst) ||
	    k->threads_per_inst >= ACTIVE_THREADS_MIN)
		return false;
	kf_strbuf_addf(d,
		       "only %.1f of a warp's 32 threads do useful work per "
		       "instruction, on average",
		       k->threads_per_inst);
	kf_strbuf_addstr(e, "when threads of one warp take different "
			    "branches the warp runs each path in turn with "
			    "the other threads masked off");
	kf_strbuf_addstr(r, "make branches uniform per warp: assign work so "
			    "that all 32 threads of a warp take the same "
			    "path (branch on warp index, not lane), replace "
			    "short branches with arithmetic selects, and "
			    "sort or bucket irregular work");
	return true;
}

/* Tail effect: a grid that fills under 80 % of its last wave within its
 * first eight waves, or under 80 % of one wave. */
#define TAIL_EFFICIENCY 0.8
#define TAIL_WAVES 8.0
static bool a_tail(A_ARGS)
{
	(void)p;
	(void)s;
	double w = k->waves;
	if (!known(w) || w <= 0 || w >= TAIL_WAVES)
		return false;
	if (w < TAIL_EFFICIENCY) {
		kf_strbuf_addf(d,
			       "the grid (%.0f blocks) fills only %.0f%% of "
			       "the GPU's block slots for one wave",
			       k->grid_size, 100 * w);
		kf_strbuf_addstr(e, "SMs without a block sit idle for the "
				    "whole kernel");
		kf_strbuf_addstr(r, "launch more, smaller blocks (split the "
				    "work further, or split the reduction "
				    "dimension across blocks) so that every "
				    "SM gets work");
		return true;
	}
	double eff = w / ceil(w);
	if (eff >= TAIL_EFFICIENCY)
		return false;
	kf_strbuf_addf(d,
		       "the grid runs in %.2f waves: the last wave keeps "
		       "only %.0f%% of the GPU busy, so %.0f%% of the "
		       "block slots over the kernel go unused",
		       w, 100 * (w - floor(w)), 100 * (1 - eff));
	kf_strbuf_addstr(e, "blocks run in waves of as many as fit on all "
			    "SMs at once; a partial last wave leaves most SMs "
			    "idle while it finishes");
	kf_strbuf_addstr(r, "size the grid to a whole number of waves (a "
			    "multiple of SMs x blocks per SM), or use a "
			    "grid-stride loop over exactly that many blocks, "
			    "or split the work into many more, smaller "
			    "blocks so the tail is short");
	return true;
}

/* Launch overhead (side-wide): many launches per call and either most of
 * the wall time outside kernels or kernels under 5 us on average. */
#define LAUNCH_OVERHEAD_SHARE 0.3
static bool a_launch(A_ARGS)
{
	(void)p;
	(void)k;
	if (s->launches < 2)
		return false;
	double per = s->kernel_ms / s->launches;
	bool gap = known(s->launch_share) &&
		   s->launch_share >= LAUNCH_OVERHEAD_SHARE;
	bool tiny = s->launches >= MANY_LAUNCHES && per < TINY_KERNEL_MS;
	if (!gap && !tiny)
		return false;
	kf_strbuf_addf(d, "one call launches %.0f kernels, %.1f us each on "
			  "average",
		       s->launches, per * 1e3);
	if (known(s->launch_share))
		kf_strbuf_addf(d, "; %.0f%% of the call's %.3g ms is spent "
				  "outside kernels",
			       100 * s->launch_share, s->wall_ms);
	kf_strbuf_addstr(e, "each launch costs several microseconds of host "
			    "and driver work, and the GPU idles between short "
			    "kernels");
	kf_strbuf_addstr(r, "fuse the kernels into one (loop inside the "
			    "kernel over what the launches were split by), "
			    "and keep allocations, copies and "
			    "synchronisation out of the call");
	return true;
}

/* Low arithmetic intensity (side-wide): the call moves at least twice
 * the DRAM bytes the task needs (the task's byte count). */
#define EXCESS_BYTES 2.0
static bool a_intensity(A_ARGS)
{
	(void)k;
	if (!(p->bytes > 0) || !known(s->dram_bytes) ||
	    s->dram_bytes < EXCESS_BYTES * p->bytes)
		return false;
	kf_strbuf_addf(d,
		       "one call moves %.3g MB to and from DRAM, %.1fx the "
		       "%.3g MB the task needs",
		       s->dram_bytes / 1e6, s->dram_bytes / p->bytes,
		       p->bytes / 1e6);
	if (p->flops > 0)
		kf_strbuf_addf(d, ": %.2f FLOP per byte moved where %.2f "
				  "is possible",
			       p->flops / s->dram_bytes, p->flops / p->bytes);
	kf_strbuf_addstr(e, "data read from DRAM more than once (separate "
			    "passes, intermediates written out and read "
			    "back, tiles too small for reuse) makes the "
			    "kernel wait on memory bandwidth");
	kf_strbuf_addstr(r, "fuse the passes so each input is read once, "
			    "keep intermediates in registers or shared "
			    "memory, and tile so that each loaded value is "
			    "reused many times before it is evicted");
	return true;
}

/* Missed tensor cores: float16/bfloat16 inputs, matmul-like work (at
 * least 16 FLOP per byte the task needs, or fp16 arithmetic on the CUDA
 * cores), and the tensor pipe under 1 % busy. */
#define MATMUL_INTENSITY 16.0
#define TENSOR_IDLE 1.0
static bool a_tensor(A_ARGS)
{
	(void)s;
	if (!p->half_inputs || k->share < 0.3)
		return false;
	bool matmul = p->bytes > 0 && p->flops / p->bytes >= MATMUL_INTENSITY;
	bool half = known(k->half_inst) && k->half_inst > 0;
	if (!matmul && !half)
		return false;
	if (known(k->tensor_pct) ? k->tensor_pct >= TENSOR_IDLE : !half)
		return false;
	kf_strbuf_addf(d, "the inputs are half precision and the work is "
			  "matrix-like, but the tensor cores are %s",
		       known(k->tensor_pct) ? "idle" : "unused");
	if (known(k->tensor_pct))
		kf_strbuf_addf(d, " (%.1f%% of their peak)", k->tensor_pct);
	if (half)
		kf_strbuf_addf(d, "; %.3g half-precision scalar operations "
				  "per launch run on the CUDA cores",
			       k->half_inst);
	kf_strbuf_addstr(e, "tensor cores multiply fp16/bf16 tiles an order "
			    "of magnitude faster than scalar FMA units");
	kf_strbuf_addstr(r, "compute the products with tensor-core "
			    "instructions: nvcuda::wmma fragments (16x16x16, "
			    "accumulate in float), mma.sync, or cuBLAS where "
			    "the task allows it; stage tiles of A and B in "
			    "shared memory");
	return true;
}

const struct kf_prof_analyser kf_prof_analysers[] = {
    {"spills", "register spills and local memory", a_spills, false},
    {"occupancy", "occupancy and what limits it", a_occupancy, false},
    {"uncoalesced", "uncoalesced global memory access", a_uncoalesced,
     false},
    {"bank_conflicts", "shared-memory bank conflicts", a_banks, false},
    {"divergence", "warp divergence", a_divergence, false},
    {"tail", "tail effect: partial last wave or too few blocks", a_tail,
     false},
    {"launch_overhead", "many launches, host work between kernels",
     a_launch, true},
    {"intensity", "low arithmetic intensity: DRAM traffic beyond the task's",
     a_intensity, true},
    {"tensor_cores", "half-precision matrix work off the tensor cores",
     a_tensor, false},
};
const int kf_prof_n_analysers =
    sizeof(kf_prof_analysers) / sizeof(kf_prof_analysers[0]);

/* Kernels under this share of the side's kernel time are not analysed. */
#define MIN_SHARE 0.05

static void add_finding(struct kf_profile *p, const char *analyser,
			const char *kernel, double weight,
			struct kf_strbuf *d, struct kf_strbuf *e,
			struct kf_strbuf *r)
{
	p->f = kf_xrealloc(p->f, sizeof(*p->f) * (size_t)(p->n_f + 1));
	struct kf_prof_finding *f = &p->f[p->n_f++];
	f->analyser = analyser;
	f->kernel = kernel ? kf_xstrdup(kernel) : NULL;
	f->weight = weight;
	f->detect = kf_strbuf_detach(d);
	f->explain = kf_strbuf_detach(e);
	f->recommend = kf_strbuf_detach(r);
}

static int by_weight(const void *a, const void *b)
{
	const struct kf_prof_finding *x = a, *y = b;
	return (x->weight < y->weight) - (x->weight > y->weight);
}

void kf_profile_finish(struct kf_profile *p)
{
	for (int i = 0; i < 2; i++)
		side_finish(p, &p->side[i]);
	const struct kf_prof_side *s = &p->side[1];
	for (int a = 0; a < kf_prof_n_analysers; a++) {
		const struct kf_prof_analyser *an = &kf_prof_analysers[a];
		struct kf_strbuf d = KF_STRBUF_INIT, e = KF_STRBUF_INIT,
				 r = KF_STRBUF_INIT;
		if (an->side_wide) {
			if (s->n && an->run(p, s, NULL, &d, &e, &r))
				add_finding(p, an->name, NULL,
					    an->run == a_launch &&
						    known(s->launch_share)
						? fmax(s->launch_share, 0.5)
						: 1.0,
					    &d, &e, &r);
			kf_strbuf_release(&d);
			kf_strbuf_release(&e);
			kf_strbuf_release(&r);
			continue;
		}
		for (int i = 0; i < s->n; i++) {
			const struct kf_prof_kernel *k = &s->k[i];
			if (k->share < MIN_SHARE && s->n > 1)
				continue;
			if (an->run(p, s, k, &d, &e, &r))
				add_finding(p, an->name, k->name, k->share, &d,
					    &e, &r);
			kf_strbuf_release(&d);
			kf_strbuf_release(&e);
			kf_strbuf_release(&r);
		}
	}
	/* heaviest first; the sort is stable enough for equal weights in
	 * table order since qsort may reorder: break ties by index */
	for (int i = 0; i < p->n_f; i++)
		p->f[i].weight -= i * 1e-9;
	if (p->n_f > 1) /* p->f is NULL when nothing was found */
		qsort(p->f, (size_t)p->n_f, sizeof(*p->f), by_weight);
	for (int i = 0; i < p->n_f; i++)
		p->f[i].weight = round(p->f[i].weight * 1e6) / 1e6;
}

/* ---- output ---- */

static const char *limiter(const struct kf_prof_kernel *k)
{
	const char *names[] = {"registers", "shared", "warps", "blocks"};
	double v[] = {k->limit_regs, k->limit_shared, k->limit_warps,
		      k->limit_blocks};
	int best = -1;
	for (int i = 0; i < 4; i++)
		if (known(v[i]) && (best < 0 || v[i] < v[best]))
			best = i;
	return best < 0 ? "?" : names[best];
}

/* The top stall reasons of k, "long_scoreboard 12.1, barrier 3.0". */
static void add_stalls(struct kf_strbuf *sb, const struct kf_prof_kernel *k,
		       int top)
{
	bool used[KF_PROF_MAX_STALLS] = {0};
	for (int t = 0; t < top; t++) {
		int b = -1;
		for (int i = 0; i < k->n_stalls; i++)
			if (!used[i] && (b < 0 || k->stalls[i].cycles >
						      k->stalls[b].cycles))
				b = i;
		if (b < 0 || k->stalls[b].cycles <= 0)
			break;
		used[b] = true;
		kf_strbuf_addf(sb, "%s%s %.1f", t ? ", " : "", k->stalls[b].name,
			       k->stalls[b].cycles);
	}
}

static void num(struct kf_strbuf *sb, const char *fmt, double x)
{
	if (known(x))
		kf_strbuf_addf(sb, fmt, x);
	else
		kf_strbuf_addstr(sb, "-");
}

static void side_text(struct kf_strbuf *sb, const char *who,
		      const struct kf_prof_side *s, bool table)
{
	kf_strbuf_addf(sb, "%s: %s; %d kernel%s, %.3g launches per call, "
			   "%.4g ms of kernel time per call",
		       who, kf_prof_class_name(s->cls), s->n,
		       s->n == 1 ? "" : "s", s->launches, s->kernel_ms);
	if (known(s->wall_ms))
		kf_strbuf_addf(sb, " of %.4g ms wall (%.0f%% outside kernels)",
			       s->wall_ms, 100 * s->launch_share);
	kf_strbuf_addstr(sb, ".\n");
	if (!table)
		return;
	for (int i = 0; i < s->n; i++) {
		const struct kf_prof_kernel *k = &s->k[i];
		char nm[96];
		short_name(k->name, nm);
		kf_strbuf_addf(sb, "  %s: %.0f%% of the time, %d launches, "
				   "%s; DRAM ",
			       nm, 100 * k->share, k->launches,
			       kf_prof_class_name(k->cls));
		num(sb, "%.0f%%", k->dram_pct);
		kf_strbuf_addstr(sb, ", SM ");
		num(sb, "%.0f%%", k->sm_pct);
		kf_strbuf_addstr(sb, ", tensor ");
		num(sb, "%.0f%%", k->tensor_pct);
		kf_strbuf_addstr(sb, " of peak; occupancy ");
		num(sb, "%.0f%%", k->achieved_occ_pct);
		kf_strbuf_addstr(sb, " (theoretical ");
		num(sb, "%.0f%%", k->theoretical_occ_pct);
		kf_strbuf_addf(sb, ", limit: %s); L1 hit ", limiter(k));
		num(sb, "%.0f%%", k->l1_hit_pct);
		kf_strbuf_addstr(sb, ", L2 hit ");
		num(sb, "%.0f%%", k->l2_hit_pct);
		kf_strbuf_addstr(sb, "; sectors/request ");
		num(sb, "%.1f",
		    known(k->ld_requests) && k->ld_requests > 0
			? k->ld_sectors / k->ld_requests
			: NAN);
		kf_strbuf_addstr(sb, "; waves ");
		num(sb, "%.2f", k->waves);
		if (k->static_regs >= 0)
			kf_strbuf_addf(sb, "; %d registers, %d B stack, %d B "
					   "shared",
				       k->static_regs, k->stack_bytes,
				       k->static_shared);
		if (k->n_stalls) {
			kf_strbuf_addstr(sb, "; stalls: ");
			add_stalls(sb, k, 3);
		}
		kf_strbuf_addstr(sb, "\n");
	}
}

char *kf_profile_text(const struct kf_profile *p, bool table)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, "");
	if (p->note)
		kf_strbuf_addf(&sb, "Profile: %s\n", p->note);
	if (!p->side[1].n && !p->side[0].n)
		return kf_strbuf_detach(&sb);
	kf_strbuf_addf(&sb, "Profile (Nsight Compute%s%s, %d call%s per side at "
			    "the timing dims):\n",
		       p->device[0] ? ", " : "", p->device, p->side[1].calls,
		       p->side[1].calls == 1 ? "" : "s");
	side_text(&sb, "Your kernel", &p->side[1], table);
	side_text(&sb, "The reference", &p->side[0], table);
	if (p->roof_bound[0])
		kf_strbuf_addf(&sb, "Roofline: the task is %s-bound on this "
				    "device.\n",
			       p->roof_bound);
	if (!p->n_f) {
		kf_strbuf_addstr(&sb, "No analyser found a problem in your "
				      "kernel.\n");
		return kf_strbuf_detach(&sb);
	}
	kf_strbuf_addstr(&sb, "What to improve, most time first:\n");
	for (int i = 0; i < p->n_f; i++) {
		const struct kf_prof_finding *f = &p->f[i];
		char nm[96] = "";
		if (f->kernel)
			short_name(f->kernel, nm);
		kf_strbuf_addf(&sb, "%d. [%s] ", i + 1, f->analyser);
		if (f->kernel)
			kf_strbuf_addf(&sb, "In %s (%.0f%% of the kernel "
					    "time): ",
				       nm, 100 * f->weight);
		kf_strbuf_addf(&sb, "%s. Why it matters: %s. What to do: %s.\n",
			       f->detect, f->explain, f->recommend);
	}
	return kf_strbuf_detach(&sb);
}

static void jnum(cJSON *o, const char *k, double x)
{
	if (known(x) && isfinite(x))
		cJSON_AddNumberToObject(o, k, x);
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *side_json(const struct kf_prof_side *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "class", kf_prof_class_name(s->cls));
	cJSON_AddNumberToObject(o, "calls", s->calls);
	jnum(o, "wall_ms", s->wall_ms);
	jnum(o, "kernel_ms", s->kernel_ms);
	jnum(o, "launches_per_call", s->launches);
	jnum(o, "launch_share", s->launch_share);
	jnum(o, "dram_bytes_per_call", s->dram_bytes);
	cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
	for (int i = 0; i < s->n; i++) {
		const struct kf_prof_kernel *k = &s->k[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "name", k->name);
		cJSON_AddStringToObject(j, "class", kf_prof_class_name(k->cls));
		cJSON_AddNumberToObject(j, "launches", k->launches);
		jnum(j, "share", k->share);
		jnum(j, "time_ns", k->time_ns);
		jnum(j, "dram_pct", k->dram_pct);
		jnum(j, "sm_pct", k->sm_pct);
		jnum(j, "tensor_pct", k->tensor_pct);
		jnum(j, "achieved_occupancy_pct", k->achieved_occ_pct);
		jnum(j, "theoretical_occupancy_pct", k->theoretical_occ_pct);
		cJSON_AddStringToObject(j, "occupancy_limiter", limiter(k));
		jnum(j, "l1_hit_pct", k->l1_hit_pct);
		jnum(j, "l2_hit_pct", k->l2_hit_pct);
		jnum(j, "load_sectors_per_request",
		     known(k->ld_requests) && k->ld_requests > 0
			 ? k->ld_sectors / k->ld_requests
			 : NAN);
		jnum(j, "store_sectors_per_request",
		     known(k->st_requests) && k->st_requests > 0
			 ? k->st_sectors / k->st_requests
			 : NAN);
		jnum(j, "threads_per_instruction", k->threads_per_inst);
		jnum(j, "waves", k->waves);
		jnum(j, "grid_size", k->grid_size);
		jnum(j, "block_size", k->block_size);
		if (k->static_regs >= 0) {
			cJSON_AddNumberToObject(j, "registers", k->static_regs);
			cJSON_AddNumberToObject(j, "stack_bytes",
						k->stack_bytes);
			cJSON_AddNumberToObject(j, "static_shared_bytes",
						k->static_shared);
		}
		struct kf_strbuf st = KF_STRBUF_INIT;
		kf_strbuf_addstr(&st, "");
		add_stalls(&st, k, 3);
		char *stxt = kf_strbuf_detach(&st);
		cJSON_AddStringToObject(j, "top_stalls", stxt);
		free(stxt);
		cJSON_AddItemToArray(ks, j);
	}
	return o;
}

cJSON *kf_profile_json(const struct kf_profile *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "tool", "ncu");
	if (p->device[0])
		cJSON_AddStringToObject(o, "device", p->device);
	if (p->roof_bound[0])
		cJSON_AddStringToObject(o, "roofline_bound", p->roof_bound);
	else
		cJSON_AddNullToObject(o, "roofline_bound");
	if (p->note)
		cJSON_AddStringToObject(o, "note", p->note);
	cJSON *sides = cJSON_AddObjectToObject(o, "sides");
	cJSON_AddItemToObject(sides, "reference", side_json(&p->side[0]));
	cJSON_AddItemToObject(sides, "candidate", side_json(&p->side[1]));
	cJSON *fs = cJSON_AddArrayToObject(o, "findings");
	for (int i = 0; i < p->n_f; i++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "analyser", p->f[i].analyser);
		if (p->f[i].kernel)
			cJSON_AddStringToObject(f, "kernel", p->f[i].kernel);
		else
			cJSON_AddNullToObject(f, "kernel");
		cJSON_AddNumberToObject(f, "weight", p->f[i].weight);
		cJSON_AddStringToObject(f, "detect", p->f[i].detect);
		cJSON_AddStringToObject(f, "explain", p->f[i].explain);
		cJSON_AddStringToObject(f, "recommend", p->f[i].recommend);
		cJSON_AddItemToArray(fs, f);
	}
	char *t = kf_profile_text(p, false);
	cJSON_AddStringToObject(o, "text", t);
	free(t);
	return o;
}
