/*
 * eval_int.h: shared inside the supervisor: the judge's verdicts over the
 * worker's raw frames, and the pieces of the result JSON.
 */
#ifndef KFORGE_EVAL_INT_H
#define KFORGE_EVAL_INT_H

#include <kforge/eval.h>
#include <kforge/task.h>

/* What the judge concluded from one frame; status OK means "go on". */
struct verdict {
	enum kf_status status;
	char check[32]; /* which check failed: "mismatch", "unwritten"... */
	char reason[1024];
	cJSON *failure; /* owned; details of the failing element, or NULL */
};

/* The plan of one correctness trial, chosen by the supervisor. */
struct trial_plan {
	int index;
	uint64_t seed;
	int dimset;
	int dists[KF_MAX_TENSORS]; /* index into each input's dist list */
};

/* "trial 2 (seed 3, dims N=1000, dists x=uniform)"; caller frees. */
char *kf_judge_trial_label(const struct kf_task *t, const struct trial_plan *p);
/* The strict bound of the L1 relative error of an output dtype (0: none). */
double kf_strict_l1(enum kf_dtype dt);

/* Judges a "trial" frame. */
void kf_judge_trial(const struct kf_task *t, const struct trial_plan *p,
		    const cJSON *frame, struct verdict *v);
/* Judges the "check" of a "samples" frame. */
void kf_judge_samples(const cJSON *frame, struct verdict *v);
/* Adds "degenerate" to the result from the trial frames (an array). */
void kf_judge_degenerate(const struct kf_task *t,
			 const struct trial_plan *plans, const cJSON *frames,
			 cJSON *result);

/*
 * The link-time policy: returns how many of the n imported symbols the task
 * does not allow, listing them with their category in why ("pthread_create
 * (threads), ...").
 */
int kf_policy_check(const struct kf_task *t, const char *backend,
		    char *const *imports, int n, char *why, size_t cap);

/*
 * Evaluates a candidate (a ModelNew file) against a KernelBench-format
 * task through the PyTorch bridge (bridge.c); the contract of kf_eval, with
 * opts already defaulted and seeded.
 */
int kf_eval_bridge(const char *task_path, const char *candidate_path,
		   const struct kf_eval_opts *opts, cJSON **result,
		   struct kf_err *err);

/* Adds under key a summary of x[0..n) (docs/results.md: n, median, ci95,
 * iqr, min, max, mean), each value times scale (stats.c). */
void kf_summary_json(cJSON *parent, const char *key, const double *x, int n,
		     double scale);
/* The 95 % interval's larger half-width relative to the median;
 * INFINITY when the median is not positive. */
double kf_half_width(const double *x, int n);

/* Adds "kforge" (version), "os" and, when with_host, "host" to obj. */
void kf_add_system(cJSON *obj, bool with_host);

#endif
