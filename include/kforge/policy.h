/*
 * policy.h: where candidates come from: replay (recorded ones), tune (the
 * built-in tuner over KF_PARAM declarations) and llm (a model), behind one
 * ops table that the search loop drives (docs/optimize.md).
 */
#ifndef KFORGE_POLICY_H
#define KFORGE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/base.h>
#include <kforge/store.h>
#include <kforge/task.h>

/*
 * Tunable parameters. A source declares each on a line of its own:
 *     KF_PARAM(NAME, v1, v2, ...)
 * (kernel.h defines KF_PARAM to nothing, so the source still compiles).
 * The tuner replaces that line with "#define NAME v" for a chosen value.
 */
#define KF_PARAM_MAX 16	       /* parameters in one source */
#define KF_PARAM_VALUES_MAX 64 /* values of one parameter */
#define KF_PARAM_NAME_CAP 64   /* bytes of a name or a value, NUL included */

struct kf_param {
	char name[KF_PARAM_NAME_CAP];
	int line; /* 1-based line of the declaration */
	int n_values;
	char values[KF_PARAM_VALUES_MAX][KF_PARAM_NAME_CAP];
};

/*
 * A constraint between parameters: KF_PARAM_RULE(expr) on a line of its
 * own. expr is an integer expression over the parameters' names (each of
 * whose values must then be an integer): literals, + - * / %, comparisons
 * (== != < <= > >=), && || !, parentheses. A point (a choice of values) is
 * allowed when every rule is non-zero there.
 */
#define KF_PARAM_RULES_MAX 16
#define KF_PARAM_RULE_CAP 256 /* bytes of a rule's expression, NUL included */

struct kf_param_rule {
	char expr[KF_PARAM_RULE_CAP];
	int line; /* 1-based line of the rule */
};

struct kf_params {
	int n;
	struct kf_param p[KF_PARAM_MAX];
	int n_rules;
	struct kf_param_rule rules[KF_PARAM_RULES_MAX];
	char origin[256]; /* the file the declarations came from, for errors */
};

/*
 * Finds the KF_PARAM declarations of source: lines whose first token is
 * KF_PARAM(, holding a C identifier and one or more distinct values
 * (numbers or identifiers: letters, digits, '_', '.', '+', '-'), then
 * nothing but an optional ';' and a comment; and its KF_PARAM_RULE(expr)
 * lines. Returns 0 with out->n = 0 when there are none; KF_EINVAL naming
 * origin:line and why for a malformed one, a repeated name, too many names
 * or values, a rule with a syntax error (its column), a rule that names
 * something other than a parameter or one with a value that is not an
 * integer, a rule without declarations, a rule that divides by zero at some
 * point or that no point satisfies, or rules that no point satisfies
 * together (checked where the points they name number at most 2^20).
 */
int kf_policy_params_parse(const char *source, const char *origin,
			   struct kf_params *out, struct kf_err *err);
/*
 * The concrete source for one choice: value idx[i] of parameter i. Each
 * declaration line becomes "#define NAME value" followed by the
 * declaration as a comment, so line numbers stay. Caller frees.
 */
char *kf_policy_params_apply(const char *source, const struct kf_params *ps,
			     const int *idx);
/*
 * Whether the point idx satisfies every rule of ps: 1 yes, 0 no, or
 * KF_EINVAL naming the file, line, rule and point where a rule divides by
 * zero or overflows there.
 */
int kf_policy_params_allowed(const struct kf_params *ps, const int *idx,
			     struct kf_err *err);
/* {"NAME": "value", ...} for a choice; caller frees. */
cJSON *kf_policy_params_json(const struct kf_params *ps, const int *idx);
/* The number of choices, saturated at 2^62. */
int64_t kf_policy_params_space(const struct kf_params *ps);

#define KF_POLICY_PARENTS_MAX 16

/* One candidate proposed by a policy; the loop takes ownership. */
struct kf_proposal {
	char *source;  /* owned; the full source text */
	char *origin;  /* owned; where it came from (a file, file:line, a
			  model, "tune"); may be NULL */
	char *prompt;  /* owned; the prompt that produced it; may be NULL */
	cJSON *params; /* owned; the tuner's choice {"NAME": "value"}; may
			  be NULL */
	int64_t parents[KF_POLICY_PARENTS_MAX]; /* store ids of candidates it
						   was made from */
	int n_parents;
	/* A short timing (successive halving): time_cap_s > 0 times it under
	 * that cap, and the loop records the result as a short timing of rung
	 * `rung`, not as the candidate's evaluation. rung > 0 asks for another
	 * timing of a candidate the run already holds, which is then not a
	 * duplicate while it has no full evaluation. 0, 0: an ordinary
	 * evaluation. */
	int rung;
	double time_cap_s;
};
/* Frees what a proposal owns and zeroes it. */
void kf_policy_proposal_release(struct kf_proposal *p);

/* The result of one candidate, as the loop gives it back to the policy;
 * every pointer is borrowed for the call. */
struct kf_observation {
	int64_t candidate;  /* its store id */
	const char *sha256; /* of source */
	const char *source;
	const char *origin;	/* may be NULL */
	const cJSON *params;	/* may be NULL */
	const cJSON *result;	/* the result JSON (docs/results.md) */
	const char *status;	/* "ok", "wrong_answer", ... */
	double speedup;		/* median speedup; 0 when not timed */
	const int64_t *parents; /* the store ids it was made from, as its
				   proposal named them (the first is the
				   one it refines); may be NULL */
	int n_parents;
	double score;	   /* the run's objective as a ratio over the
			      reference, higher is better (the speedup for
			      --objective time); 0 when failed or unknown */
	bool short_timing; /* a short timing (rung, time_cap_s), not the
			      candidate's full evaluation */
	int rung;
	double time_cap_s;
};

/* What a policy is opened with; borrowed for the policy's lifetime. */
struct kf_policy_env {
	const char *task_path;	    /* the task directory */
	const struct kf_task *task; /* loaded, backend selected */
	const char *backend;	    /* "host" or "cuda" */
	const cJSON *options;	    /* the policy's options object (see
				       docs/optimize.md); never NULL */
	int budget;		    /* evaluations of the run */
	double time_cap_s;	    /* each evaluation's time cap, s */
	uint64_t seed;		    /* for the policy's random choices: the
				       run's seed mixed with the evaluations
				       done before this session */
	uint64_t run_seed;	    /* the run's seed, the same in every
				       session: for choices that a resumed
				       run must make as the first session
				       would have */
	struct kf_store *store;	    /* where the llm policy records its
				       calls */
	int64_t run;
	/* Prints one line for the user (a skipped input, a failed call);
	 * may be NULL. */
	void (*note)(void *ctx, const char *line);
	void *note_ctx;
};

#define KF_POLICY_OPS_VERSION 1

/*
 * A policy. propose fills out[0..*n) with at most max proposals; *n = 0
 * means that it has nothing to propose until it observes the results in
 * flight, or, with none in flight, that it is done. observe (optional) is
 * called once per evaluated candidate, including, on resume, every one the
 * run evaluated before. A negative return ends the run with err.
 */
struct kf_policy_ops {
	int version; /* KF_POLICY_OPS_VERSION */
	const char *name;
	int (*open)(const struct kf_policy_env *env, void **state,
		    struct kf_err *err);
	int (*propose)(void *state, int max, struct kf_proposal *out, int *n,
		       struct kf_err *err);
	void (*observe)(void *state, const struct kf_observation *obs);
	void (*close)(void *state);
};

/* The built-in policies: "replay", "tune", "llm", "mcts", "islands"; NULL
 * when unknown. */
const struct kf_policy_ops *kf_policy_find(const char *name);
/* Names of the built-in policies, "islands|llm|mcts|replay|tune"; static
 * storage. */
const char *kf_policy_names(void);

struct kf_policy;
/* Opens a policy; *out is the caller's, closed with kf_policy_close. */
int kf_policy_open(const struct kf_policy_ops *ops,
		   const struct kf_policy_env *env, struct kf_policy **out,
		   struct kf_err *err);
int kf_policy_propose(struct kf_policy *p, int max, struct kf_proposal *out,
		      int *n, struct kf_err *err);
void kf_policy_observe(struct kf_policy *p, const struct kf_observation *obs);
const char *kf_policy_name(const struct kf_policy *p);
void kf_policy_close(struct kf_policy *p);

#endif
