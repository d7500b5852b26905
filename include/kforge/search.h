/*
 * search.h: the optimization loop behind `kforge optimize`: a policy proposes,
 * kf_eval evaluates (several at once; or the Redis farm's workers, opts.redis),
 * the store records each result before
 * it is reported, and a killed run resumes from the store (docs/optimize.md).
 */
#ifndef KFORGE_SEARCH_H
#define KFORGE_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/store.h>

#define KF_SEARCH_BUDGET_MAX 100000
#define KF_SEARCH_PARALLEL_MAX 64

struct kf_search_opts {
	/* A new run (resume = 0): */
	const char *task_path;	     /* the task directory */
	const char *policy;	     /* "tune", "replay", "llm" */
	const cJSON *policy_options; /* the policy's options (borrowed; may
					be NULL): {"from": ...} ... */
	int budget;		     /* evaluations, 1 to
					KF_SEARCH_BUDGET_MAX */
	int parallel;		     /* evaluations at once, 1 to
					KF_SEARCH_PARALLEL_MAX */
	struct kf_eval_opts eval;    /* backend, trials, time cap ... */
	uint64_t seed;		     /* the policy's seed; 0: drawn */
	/* Or a run to resume: its task, policy and options come from the
	 * store, and the fields above are ignored. */
	int64_t resume;
	double time_limit_s; /* stop (resumable) after this long; 0: none */
	bool progress;	     /* redraw one progress line (for a terminal)
				rather than print a line per evaluation */
	FILE *log;	     /* progress and notes; NULL: stderr */
	const char *suite;   /* a new run's suite (kforge optimize DIR), kept
				in its config as "suite"; NULL: none */
	const char *redis;   /* evaluate on the Redis farm at this URL (each
				evaluation a job, kf_rfarm_submit; not kept
				in the run: a resume may use another or
				none); NULL: kf_eval here */
	const char *objective; /* a new run's objective: "time" (NULL),
				  "energy" or "edp" (kf_reward_objective_ratio) */
	const char *feedback;  /* "profile": every ok result is profiled
				  (src/profile) in its evaluator and carries
				  "profile", which the feedback reads;
				  "standard" or NULL: no profile. Not kept in
				  the run: a resume gives it again */
};
#define KF_SEARCH_OPTS_INIT                                                    \
	{                                                                      \
		NULL, "tune", NULL, 20, 1, KF_EVAL_OPTS_INIT, 0, 0, 0, false,  \
		    NULL, NULL, NULL, NULL, NULL                               \
	}

/* What a run optimizes (kf_reward_objective_ratio says how each is
 * computed). */
#define KF_SEARCH_OBJECTIVES "time|energy|edp"
/* Checks an objective for a backend and its evaluation options: KF_EINVAL
 * naming --objective and why (unknown; a backend that measures no energy;
 * --energy-time 0). */
int kf_search_objective_check(const char *objective,
			      const struct kf_eval_opts *eo,
			      struct kf_err *err);

/*
 * Runs (or resumes) an optimization: until the budget of evaluations is
 * spent, the policy has nothing more to propose, the time limit passes or
 * SIGINT arrives (the evaluations in flight finish first). Every candidate
 * is written to the store before it is evaluated and every evaluation
 * before it is reported. *run is the run's id as soon as it exists (also
 * on failure). Returns 0 when the run ended normally ("done" or
 * "stopped"); a negative code with err when it could not start or failed
 * (the run is then "failed" and can be resumed).
 */
int kf_search_run(struct kf_store *store, const struct kf_search_opts *o,
		  int64_t *run, struct kf_err *err);

/*
 * The report of a run, from the store: the run (kf_store_run_get), counts
 * by status, the best candidate (its evaluation, params and lineage: the
 * chain of first parents), and the top candidates by speedup (at most
 * top). Caller frees.
 */
int kf_search_report(struct kf_store *store, int64_t run, int top, cJSON **out,
		     struct kf_err *err);
/* The report as the final table `kforge optimize` and `kforge show`
 * print. */
void kf_search_report_print(const cJSON *report, struct kf_strbuf *out);

#endif
