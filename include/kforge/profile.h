/*
 * profile.h: profiler-guided feedback (docs/profile.md). A candidate's
 * kernels and the reference's are profiled side by side with Nsight
 * Compute's command line (ncu) in a sandboxed process of their own; the
 * counters, the static facts of the cubin (cuobjdump) and kforge's
 * analytic roofline go into one struct, and a table of analysers turns it
 * into advice in plain words: what was seen, why it costs time, what to
 * change.
 *
 * Each part works on its own: the CSV parser (ncu.c) and the resource
 * parser (resources.c) read text, the analysers (analyse.c) read a parsed
 * struct, so every one of them is tested on recorded values; run.c drives
 * the tools, driver.c is the small program ncu runs.
 */
#ifndef KFORGE_PROFILE_H
#define KFORGE_PROFILE_H

#include <stdbool.h>

#include <kforge/base.h>
#include <kforge/task.h>

#define KF_PROF_MAX_KERNELS 64 /* distinct kernels kept per side */
#define KF_PROF_MAX_STALLS 24  /* stall reasons kept per kernel */

/* A bottleneck class. */
enum kf_prof_class {
	KF_PROF_UNKNOWN = 0,
	KF_PROF_MEMORY,	 /* memory-bound */
	KF_PROF_COMPUTE, /* compute-bound */
	KF_PROF_LATENCY, /* latency/occupancy-bound: no unit near its peak */
	KF_PROF_LAUNCH,	 /* launch-bound: launches and host work dominate */
};
const char *kf_prof_class_name(enum kf_prof_class c);

/* One stall reason: cycles a warp spent stalled for it per issued
 * instruction (ncu's warp-state ratio). */
struct kf_prof_stall {
	char name[32]; /* "long_scoreboard", "barrier", ... */
	double cycles;
};

/*
 * One kernel (by name) of one side: what ncu measured, averaged over its
 * profiled launches (NAN where a metric was not collected), and what the
 * cubin says (regs < 0 when not known).
 */
struct kf_prof_kernel {
	char *name;	/* as ncu prints it (demangled) */
	int launches;	/* profiled launches of it */
	double time_ns; /* gpu__time_duration summed over them */
	/* throughput, % of peak */
	double dram_pct, sm_pct, tensor_pct;
	double dram_bytes; /* per launch */
	/* occupancy */
	double achieved_occ_pct, theoretical_occ_pct;
	double limit_regs, limit_shared, limit_blocks, limit_warps; /* blocks
								       per SM */
	double regs_per_thread, block_size, grid_size, waves, shared_bytes;
	/* memory access */
	double l1_hit_pct, l2_hit_pct;
	double ld_sectors, ld_requests, st_sectors, st_requests;
	double ld_efficiency_pct, st_efficiency_pct; /* bytes used per sector
							fetched, % */
	double local_sectors;			     /* local memory traffic */
	double shared_conflicts, shared_wavefronts, shared_requests;
	/* execution */
	double threads_per_inst; /* active threads per warp instruction, <= 32
				  */
	double half_inst;	 /* fp16 instructions (hfma, hadd, hmul) */
	struct kf_prof_stall stalls[KF_PROF_MAX_STALLS];
	int n_stalls;
	/* from the cubin (cuobjdump --dump-resource-usage) */
	int static_regs;   /* -1: not known */
	int stack_bytes;   /* per-thread stack frame: spills, local arrays */
	int static_shared; /* bytes */
	/* derived (kf_profile_finish) */
	double share;	      /* of the side's kernel time, 0..1 */
	enum kf_prof_class cls;
};

/* One side: the reference's or the candidate's calls. */
struct kf_prof_side {
	struct kf_prof_kernel k[KF_PROF_MAX_KERNELS];
	int n;
	int calls;	    /* calls profiled */
	double wall_ms;	    /* one call's wall time, median, without the
			       profiler; NAN when not measured */
	double kernel_ms;   /* one call's kernel time (sum / calls) */
	double launches;    /* kernel launches per call */
	double launch_share; /* of the wall time spent outside kernels */
	double dram_bytes;   /* per call */
	enum kf_prof_class cls;
};

/* What one analyser concluded about one kernel (or a side). */
struct kf_prof_finding {
	const char *analyser; /* its name in the table */
	char *kernel;	      /* NULL: the side as a whole */
	double weight;	      /* how much time it concerns, 0..1 */
	char *detect;	      /* what was seen */
	char *explain;	      /* why it costs time */
	char *recommend;      /* what to change */
};

struct kf_profile {
	struct kf_prof_side side[2]; /* 0: reference, 1: candidate */
	/* the task's facts at the profiled dims */
	double flops, bytes; /* per call; 0 when unknown */
	bool half_inputs;    /* float16/bfloat16 inputs */
	/* kforge's analytic roofline: "memory", "compute" or "" */
	char roof_bound[16];
	char device[128];
	/* findings on the candidate's side, heaviest first */
	struct kf_prof_finding *f;
	int n_f;
	char *note; /* what could not be measured; NULL: nothing */
};

void kf_profile_init(struct kf_profile *p);
void kf_profile_release(struct kf_profile *p);

/* The metrics kforge asks ncu for (its --metrics list, comma separated). */
const char *kf_profile_ncu_metrics(void);
/* True for the names of kforge's own engine kernels (src/backend/
 * cuda_kernels.h), which a profile leaves out. */
bool kf_profile_engine_kernel(const char *name);
/* The regular expression of ncu's --kernel-name that leaves them out. */
const char *kf_profile_ncu_filter(void);

/*
 * Parses ncu's `--csv --page raw` output (text: anything before the header
 * line, ==PROF== lines, the program's own output, is skipped) into side s,
 * one kf_prof_kernel per kernel name, merging launches; calls is how many
 * calls the driver made. Engine kernels are left out. 0, or KF_EPROTO with
 * err saying what is wrong (no header, a row of the wrong width).
 */
int kf_profile_parse_ncu(const char *text, int calls, struct kf_prof_side *s,
			 struct kf_err *err);

/* One function's resources as cuobjdump --dump-resource-usage states
 * them. */
struct kf_prof_resources {
	char name[256]; /* the mangled name */
	int regs, stack, shared, local;
};
/* Parses cuobjdump's resource usage text into *out (malloc'd, n entries;
 * a function met in several fatbin entries is kept once, the last arch).
 * 0, or KF_EPROTO when the text has no function. */
int kf_profile_parse_resources(const char *text, struct kf_prof_resources **out,
			       int *n, struct kf_err *err);
/* Runs cuobjdump on a shared object or cubin and parses it: 0, or a
 * negative code (KF_ENOENT: no cuobjdump, found through $KFORGE_CUOBJDUMP,
 * /usr/local/cuda/bin, PATH). */
int kf_profile_resources(const char *so_path, struct kf_prof_resources **out,
			 int *n, struct kf_err *err);
/* Finds cuobjdump or ncu (malloc'd path), or NULL. */
char *kf_profile_find_tool(const char *name);
/* Gives each kernel of s the static resources of the function whose
 * mangled name matches its demangled one (the name before its '(' found in
 * the mangled name). */
void kf_profile_attach_resources(struct kf_prof_side *s,
				 const struct kf_prof_resources *r, int n);

/* Derives shares, classes (counters and roofline: the roofline wins where
 * the two name different units) and runs every analyser on the
 * candidate's side. Call once both sides are filled. */
void kf_profile_finish(struct kf_profile *p);

/* The analysers' table, for tests and docs. */
struct kf_prof_analyser {
	const char *name;
	const char *summary;
	/* Per kernel (k != NULL) or per side (k == NULL, side-wide
	 * analysers). Returns true when it fires, with the three texts
	 * appended. */
	bool (*run)(const struct kf_profile *p, const struct kf_prof_side *s,
		    const struct kf_prof_kernel *k, struct kf_strbuf *detect,
		    struct kf_strbuf *explain, struct kf_strbuf *recommend);
	bool side_wide;
};
extern const struct kf_prof_analyser kf_prof_analysers[];
extern const int kf_prof_n_analysers;

/* The profile as text for a person or a model (the findings in plain
 * words, the side-by-side table when table is true), and as JSON. */
char *kf_profile_text(const struct kf_profile *p, bool table);
cJSON *kf_profile_json(const struct kf_profile *p);

/* Options of one profile. */
struct kf_profile_opts {
	const char *backend;	 /* "cuda" (default) or "host" */
	const char *include_dir; /* as compile.h */
	const char *worker_path; /* NULL: kforge-worker beside the executable */
	int calls;		 /* profiled calls per side (default 3) */
	int timeout_ms;		 /* per ncu run (default 600000) */
	const cJSON *roofline;	 /* an evaluation's roofline block, when
				    there is one (its "bound" is used) */
};

/*
 * Profiles candidate_path against the task's reference. On the host
 * backend it measures nothing and says so (*p->note; 0). On cuda: 0 with
 * *p filled and finished, or a negative code with err saying what is
 * missing (no GPU, no ncu, counters not permitted) or what failed.
 */
int kf_profile_run(const char *task_path, const char *candidate_path,
		   const struct kf_profile_opts *o, struct kf_profile *p,
		   struct kf_err *err);

/* For the feedback modes: profiles an evaluated candidate whose result is
 * ok and adds "profile" (kf_profile_json, with its "text") to the result;
 * a failure adds {"error": ...} instead. Nothing for other results. */
void kf_profile_attach(cJSON *result, const char *task_path,
		       const char *candidate_path, const char *backend,
		       const char *include_dir);

/* `kforge-worker --profile-driver TASK BACKEND SO CALLS OUT`: loads the
 * task's timing dims on the backend, calls the object's kf_entry once,
 * then CALLS times timed, then CALLS times between cuProfilerStart and
 * cuProfilerStop, and writes {"wall_ms", "calls", "device"} to OUT. */
int kf_profile_driver_main(int argc, char **argv);

#endif
