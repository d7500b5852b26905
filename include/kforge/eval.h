/*
 * eval.h: the supervisor. One evaluation compiles the candidate (and the
 * reference), spawns a fresh worker under rlimits, drives it phase by phase
 * under a wall-clock watchdog, judges the raw measurements and builds the
 * result JSON (docs/results.md). A crash, hang or wrong answer of the
 * candidate is a status in the result, never a failure of the caller.
 */
#ifndef KFORGE_EVAL_H
#define KFORGE_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/base.h>

/* The statuses of DESIGN.md. */
enum kf_status {
	KF_STATUS_OK,
	KF_STATUS_COMPILE_ERROR,
	KF_STATUS_LOAD_ERROR,
	KF_STATUS_RUNTIME_ERROR,
	KF_STATUS_TIMEOUT,
	KF_STATUS_WRONG_ANSWER,
	KF_STATUS_REJECTED,
	KF_STATUS_INFRA_ERROR,
};
const char *kf_status_name(enum kf_status s);

struct kf_compile_result;

struct kf_eval_opts {
	const char *backend;	 /* "host" (default) or "cuda" */
	uint64_t seed;		 /* base seed; trial t uses seed + t; 0: one
				    drawn from the system's random source
				    (recorded in the result), so that no
				    candidate can predict its inputs */
	int trials;		 /* correctness trials, >= 5 (default 6) */
	const char *worker_path; /* NULL: kforge-worker beside the executable */
	const char *include_dir; /* NULL: see compile.h */
	double call_timeout_ms;	 /* 0: the task's call_timeout_ms */
	double time_cap_s;	 /* timing budget (default 10 s) */
	double ci_target;	 /* relative CI half-width (default 0.005) */
	int min_pairs;		 /* default 20 */
	int max_pairs;		 /* default 2000 */
	bool no_timing;		 /* checks only */
	bool no_cache;		 /* recompile even when cached */
	uint64_t mem_limit_bytes; /* host worker's address space (default:
				     1 GiB + 8x the task's largest tensors) */
	const char *protocol;	  /* timing: "kforge" (NULL, the default),
				     "kernelbench" (KernelBench's: mean of 100
				     event-timed calls per side), or "both" */
	int device;	    /* cuda: run the worker on the device-th visible GPU
			       (CUDA_VISIBLE_DEVICES set to that one for it); -1:
			       the environment as it is */
	const char *python; /* KernelBench-format tasks: the Python that runs
			       the PyTorch bridge; NULL: the first python3
			       on PATH that imports torch */
	double energy_s;    /* where the device counts energy: how long each
			       side is called back to back for energy.* after
			       timing, in seconds (default 0.5, at most
			       KF_ENERGY_MAX_S); 0: no energy measurement and
			       no "energy" key in the result */
	const char *baseline; /* KernelBench-format tasks only: instead of a
				 candidate file, evaluate this PyTorch
				 baseline of the task's own Model against
				 the eager reference ("eager", "compile",
				 "compile_ro" or "cudagraph",
				 docs/kernelbench.md); candidate_path may
				 then be NULL. NULL: a candidate file */
	/* KernelBench-format: a ModelNew that built no extension (PyTorch
	 * alone) or loaded after a failed build fails, no_custom_kernel. */
	bool require_custom_kernel;
	/* KernelBench-format, two steps (kf_eval_open, kf_eval_finish): warm
	 * bridges of the same task to take and give back (borrowed; NULL:
	 * every evaluation starts its bridge and ends it). */
	struct kf_bridge_pool *pool;
	/* The candidate's compile, already run by the caller with the
	 * options this evaluation compiles with (the farm's, for a build
	 * that failed): taken as the evaluation's own rather than built
	 * again (borrowed; an in-process evaluation only, a process or
	 * remote executor drops it; NULL: kf_eval compiles). */
	const struct kf_compile_result *compiled;
};
#define KF_EVAL_OPTS_INIT                                                      \
	{                                                                      \
		"host", 0, 6, NULL, NULL, 0, 10.0, 0.005, 20, 2000, false,     \
		    false, 0, NULL, -1, NULL, 0.5, NULL, false, NULL, NULL     \
	}
#define KF_ENERGY_MAX_S 60.0

/* The baselines opts->baseline may name, NULL-terminated. */
extern const char *const kf_baseline_names[];

/*
 * Evaluates candidate_path against the task at task_path. On return 0,
 * *result is the result JSON (caller frees with cJSON_Delete) whatever the
 * candidate did. A negative code (err set) means no evaluation could start:
 * a malformed task, a missing file, a reference that does not build.
 * Thread-safe: the local farm's slots and the executor's "thread" kind
 * (include/kforge/exec.h) run it on many threads at once; what it keeps
 * between calls (the compile cache's bookkeeping, the executable's and the
 * cache's directories, the bridges' Python) is taken under locks.
 */
int kf_eval(const char *task_path, const char *candidate_path,
	    const struct kf_eval_opts *opts, cJSON **result,
	    struct kf_err *err);

/* The status of a result JSON. */
enum kf_status kf_result_status(const cJSON *result);

/* Writes the human-readable report of a result (what `kforge eval` prints). */
void kf_result_print(const cJSON *result, struct kf_strbuf *out);
/*
 * A KernelBench-format evaluation in two steps, for a batch that loads the
 * next evaluations while one is measured. kf_eval_open does what kf_eval
 * does before the first trial: the options checked (the same errors), the
 * bridge started, the task and the candidate loaded on opts->device (an
 * evaluation that ends there, a candidate that does not load, keeps its
 * result for kf_eval_finish). kf_eval_measure pins the judge and both
 * runners to core (negative: the core the judge runs on), runs the trials
 * and the timing, and tells the bridge to end without waiting for it: the
 * bridge takes its processes off core before they exit, so a batch's slot
 * is free for the next evaluation while they do (2.1 s a bridge, median,
 * on an H100). kf_eval_finish measures p if that was not done, waits for
 * the bridge's end, sets *result as kf_eval does and frees p; it returns
 * 0. kf_eval_discard ends an evaluation that will not be measured. Other
 * tasks: KF_EINVAL. Thread-safe as kf_eval is.
 */
struct kf_eval_pending;
/*
 * Warm bridges, for a batch of KernelBench-format pairs (src/farm): with
 * opts->pool set, kf_eval_open takes an idle bridge of the same task,
 * backend, device, protocol and Python when there is one (the judge and
 * the reference's runner kept, the candidate loaded into a fresh runner
 * the bridge started ahead: the bridge's "next" request), else starts one;
 * kf_eval_finish gives it back after a clean end (the candidate's runner
 * and its sandbox seen gone; not after a crash, a deadline, a device fault
 * or an infra_error). At most max_idle bridges wait (the longest idle is
 * ended for a newer one), and at most per_key of one key run: past that,
 * kf_eval_open waits for one of them to be given back or to end. A bridge's processes die with the thread that
 * started it (PR_SET_PDEATHSIG): a pool's bridges must be started on
 * threads that outlive it. kf_bridge_pool_retire ends the idle bridges of
 * a task that will not be evaluated again; kf_bridge_pool_free ends all
 * and frees the pool. Thread-safe.
 */
struct kf_bridge_pool;
struct kf_bridge_pool *kf_bridge_pool_new(int max_idle, int per_key);
void kf_bridge_pool_retire(struct kf_bridge_pool *pool, const char *task_path);
void kf_bridge_pool_free(struct kf_bridge_pool *pool);
int kf_eval_open(const char *task_path, const char *candidate_path,
		 const struct kf_eval_opts *opts, struct kf_eval_pending **p,
		 struct kf_err *err);
void kf_eval_measure(struct kf_eval_pending *p, int core);
int kf_eval_finish(struct kf_eval_pending *p, int core, cJSON **result);
void kf_eval_discard(struct kf_eval_pending *p);
/* Builds what a KernelBench-format candidate asks torch to build
 * (load_inline, load) in its build directory, in a confined runner with no
 * device, ahead of its evaluation, which then finds the build done; a
 * candidate that builds nothing costs nothing. *seconds: how long it took.
 * A failed build is not an error here (the evaluation builds again and
 * decides); 0, or a negative code with err set when the prebuild itself
 * could not run. Thread-safe. */
int kf_bridge_prebuild(const char *task_path, const char *candidate_path,
		       const struct kf_eval_opts *o, double *seconds,
		       struct kf_err *err);
/* The python3 that runs KernelBench-format tasks: the first on PATH that
 * imports torch (malloc'd), or NULL with err set (KF_ENOENT). */
char *kf_eval_python(struct kf_err *err);

/* Statistics of a sample, as the judge reports them. */
struct kf_summary {
	int n;
	double median, ci_lo, ci_hi; /* 95 % order-statistic interval */
	double q1, q3, min, max, mean;
};
/* Sorts a copy of x[0..n) and summarises it. */
void kf_summarize(const double *x, int n, struct kf_summary *s);

/* Evaluation options as JSON, to hand to another process or to store with
 * a run (the pointers' strings are copied). */
cJSON *kf_eval_opts_json(const struct kf_eval_opts *eo);
/* Reads what kf_eval_opts_json wrote into *eo, over the defaults; strings
 * point into o, which must outlive *eo. */
void kf_eval_opts_from_json(const cJSON *o, struct kf_eval_opts *eo);

/* What this machine has (CPU, GPUs, compilers, Python, torch), as JSON. */
cJSON *kf_doctor(void);

#endif
