/*
 * store.h: the run store, one SQLite file in WAL mode (default ./kforge.db):
 * runs, candidates, evaluations and LLM calls, each write committed before it
 * returns, so a killed run loses nothing it reported (docs/optimize.md).
 */
#ifndef KFORGE_STORE_H
#define KFORGE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/base.h>

/* The schema version kept in PRAGMA user_version. */
#define KF_STORE_SCHEMA 2
/* Caps on what one row may hold: a source, a prompt, a result JSON. */
#define KF_STORE_SOURCE_CAP ((size_t)1 << 20)
#define KF_STORE_PROMPT_CAP ((size_t)4 << 20)
#define KF_STORE_RESULT_CAP ((size_t)16 << 20)

struct kf_store;

/*
 * Opens (creating when missing) the store at path, in WAL mode with a busy
 * timeout of busy_timeout_ms (0: 10 s), and creates or checks the schema. A
 * file made by a newer kforge, or one that is not a store, is KF_EINVAL
 * naming the file and why. *out is owned by the caller: kf_store_close.
 */
int kf_store_open(const char *path, int busy_timeout_ms, struct kf_store **out,
		  struct kf_err *err);
/* Closes the store; NULL is a no-op. */
void kf_store_close(struct kf_store *s);
/* The journal mode SQLite reports ("wal"); static storage. */
const char *kf_store_journal_mode(struct kf_store *s);

/* A new run; every string is borrowed for the call. */
struct kf_store_run {
	const char *task;    /* the task directory, as the loop will open it */
	const char *task_id; /* "<suite>/<name>" */
	const char *backend;
	const char *policy;
	const char *config; /* JSON object text: flags, budget, eval options */
	int budget;	    /* evaluations allowed */
};

/* Creates a run in state "running", owned by this process; *id is its id. */
int kf_store_run_add(struct kf_store *s, const struct kf_store_run *r,
		     int64_t *id, struct kf_err *err);
/*
 * Sets a run's state: "running" (also records this process as its owner),
 * "done", "failed" or "stopped" (these three set finished_at). note (may be
 * NULL) is kept as the run's last message: why it failed or stopped.
 */
int kf_store_run_set_state(struct kf_store *s, int64_t run, const char *state,
			   const char *note, struct kf_err *err);
/*
 * One run as an object: id, task, task_id, backend, policy, config (parsed),
 * budget, started_at, finished_at, state, note, pid, and the counts
 * candidates, evaluated, short_timings (successive halving's, apart from
 * the evaluations), failures, best_speedup (null when nothing was ok)
 * and best_candidate. A run left "running" by a process that is gone reads
 * "interrupted". KF_ENOENT when there is no such run. Caller frees.
 */
int kf_store_run_get(struct kf_store *s, int64_t run, cJSON **out,
		     struct kf_err *err);
/* Every run, newest first, each as kf_store_run_get gives it. */
int kf_store_run_list(struct kf_store *s, cJSON **out, struct kf_err *err);

/* A new candidate; every pointer is borrowed for the call. */
struct kf_store_candidate {
	const char *source;	/* the source text, at most
				   KF_STORE_SOURCE_CAP bytes */
	const char *sha256;	/* of source, 64 hex digits */
	const int64_t *parents; /* candidate ids it was made from */
	int n_parents;
	const char *policy; /* "tune", "replay", "llm" */
	const char *origin; /* where it came from: a file, file:line, a
			       model; may be NULL */
	const char *prompt; /* the prompt that produced it; may be NULL */
	const char *params; /* JSON object text {"NAME": value}; NULL */
};

/*
 * Adds a candidate to a run, numbered in order (seq from 1). A source
 * already in the run is KF_EINVAL (the run keys candidates by sha256).
 */
int kf_store_candidate_add(struct kf_store *s, int64_t run,
			   const struct kf_store_candidate *c, int64_t *id,
			   struct kf_err *err);
/*
 * Finds the candidate of a run with this sha256: *id is 0 when there is
 * none; *evaluated tells whether it has an evaluation.
 */
int kf_store_candidate_find(struct kf_store *s, int64_t run, const char *sha256,
			    int64_t *id, bool *evaluated, struct kf_err *err);
/*
 * The candidates of a run in seq order, as objects: id, seq, sha256,
 * parents (array), policy, origin, params (object or null), created_at,
 * source (when with_source), prompt (when with_source and
 * there is one), and evaluation: null, or {status, check, reason, speedup,
 * speedup_ci95, candidate_ms, reference_ms, compile_ms, seconds,
 * created_at} plus result (the parsed result JSON) when with_result.
 */
int kf_store_candidate_list(struct kf_store *s, int64_t run, bool with_source,
			    bool with_result, cJSON **out, struct kf_err *err);

/*
 * Records the evaluation of a candidate: the result JSON (docs/results.md)
 * and its key fields (status, check, reason, speedup and its interval, the
 * medians, compile time, wall time). A candidate has at most one
 * evaluation: a second is KF_EINVAL.
 */
int kf_store_evaluation_add(struct kf_store *s, int64_t candidate,
			    const cJSON *result, struct kf_err *err);

/*
 * Records a short timing of a candidate (successive halving's rung `rung`,
 * timed under time_cap_s): the result JSON and its key fields, in the
 * table screenings, apart from the candidate's full evaluation. One per
 * candidate and rung: a second is KF_EINVAL.
 */
int kf_store_screening_add(struct kf_store *s, int64_t candidate, int rung,
			   double time_cap_s, const cJSON *result,
			   struct kf_err *err);
/* The short timings of a run in order, as objects: id, candidate, rung,
 * time_cap_s, status, speedup, candidate_ms, reference_ms, seconds,
 * created_at, and result (parsed) when with_result. */
int kf_store_screening_list(struct kf_store *s, int64_t run, bool with_result,
			    cJSON **out, struct kf_err *err);

/* One call to a model; strings are borrowed for the call. */
struct kf_store_llm_call {
	int64_t run;
	const char *model;
	long prompt_tokens; /* -1: not reported */
	long completion_tokens;
	double latency_ms;
	int attempts;
	int http_status;    /* 0: no response */
	const char *status; /* "ok" or "error" */
	const char *error;  /* why it failed; NULL when ok */
	int completions;    /* texts that came back */
	int candidates;	    /* how many of them held code */
};
int kf_store_llm_call_add(struct kf_store *s, const struct kf_store_llm_call *c,
			  int64_t *id, struct kf_err *err);
/* The LLM calls of a run in order, as objects with the fields above. */
int kf_store_llm_call_list(struct kf_store *s, int64_t run, cJSON **out,
			   struct kf_err *err);

#endif
