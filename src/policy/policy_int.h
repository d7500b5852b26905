/*
 * policy_int.h: shared inside src/policy: the ops tables of the built-in
 * policies, the tuner engine, which the tune policy runs over one source
 * and the llm policy over every reply that declares KF_PARAM, and the model
 * asker (ask.c), through which the llm, mcts and islands policies talk to a
 * model: what they have seen, the prompt, the call, the code taken back.
 */
#ifndef KFORGE_POLICY_INT_H
#define KFORGE_POLICY_INT_H

#include <kforge/llm.h>
#include <kforge/policy.h>
#include <kforge/prompt.h>

extern const struct kf_policy_ops kf_policy_replay_ops;
extern const struct kf_policy_ops kf_policy_tune_ops;
extern const struct kf_policy_ops kf_policy_llm_ops;
extern const struct kf_policy_ops kf_policy_mcts_ops;
extern const struct kf_policy_ops kf_policy_islands_ops;

/* A splitmix64 step: the policies' random numbers. */
uint64_t kf_policy_rand(uint64_t *state);

struct kf_tuner;

/*
 * A tuner over the parameter space of source (ps: its declarations).
 * It proposes at most max_evals points (0: no limit besides the space):
 * first `starts` random ones, then neighbours of the best it has seen (one
 * parameter one step along its list of values), restarting at random when
 * every neighbour of every good point was tried. origin and prompt (may be
 * NULL) are copied into each proposal; parent (0: none) is the parent of
 * the random starts.
 */
struct kf_tuner *kf_tuner_new(const char *source, const struct kf_params *ps,
			      int starts, int max_evals, uint64_t seed,
			      const char *origin, const char *prompt,
			      int64_t parent);
/*
 * Fills out[0..*n) with at most max new points. *n = 0: wait for the
 * points in flight (kf_tuner_pending) or, with none, the tuner is done.
 */
void kf_tuner_propose(struct kf_tuner *t, int max, struct kf_proposal *out,
		      int *n);
/* How the tuner walks the space: local (random starts, then neighbours of
 * the best; the default), random, exhaustive (in rank order), halving
 * (successive halving: many points timed briefly, the best timed longer,
 * the last rung fully; kf_tuner_set_halving). */
/* The shortest time cap a halving rung is given, s. */
#define KF_TUNE_MIN_CAP_S 0.05
enum kf_tune_strategy {
	KF_TUNE_LOCAL,
	KF_TUNE_RANDOM,
	KF_TUNE_EXHAUSTIVE,
	KF_TUNE_HALVING,
};
/* Their names, in the enum's order, NULL-terminated. */
extern const char *const kf_tune_strategy_names[];
void kf_tuner_set_strategy(struct kf_tuner *t, enum kf_tune_strategy s);
/*
 * Makes t a successive halving over at most `budget` evaluations: rungs of
 * n, ceil(n / eta) ... points, rung r timed under time_cap_s / eta^(last -
 * r) (at least min_cap_s), the last fully; the points are drawn from
 * run_seed. 0, or KF_EINVAL when a rule fails or no point is allowed.
 */
int kf_tuner_set_halving(struct kf_tuner *t, int eta, int budget,
			 double time_cap_s, double min_cap_s, uint64_t run_seed,
			 struct kf_err *err);
/* The error of a rule that failed at a point the tuner drew (it then
 * proposes nothing more); 0 when none. */
int kf_tuner_error(const struct kf_tuner *t, struct kf_err *err);
/* Records a result; false when obs is not a point of this space. */
bool kf_tuner_observe(struct kf_tuner *t, const struct kf_observation *obs);
/* Points proposed and not yet observed. */
int kf_tuner_pending(const struct kf_tuner *t);
/* True when it will propose nothing more. */
bool kf_tuner_done(const struct kf_tuner *t);
void kf_tuner_free(struct kf_tuner *t);

/* Prints a line for the user through env->note, else logs it. */
void kf_policy_note(const struct kf_policy_env *env, const char *line);

/* An evaluated candidate as a model is shown it. */
struct kf_seen {
	int64_t candidate;
	char *source;
	char *status;
	double speedup;
	char *feedback; /* kf_prompt_feedback of its result */
};

/* Every candidate observed, in order. */
struct kf_seen_list {
	struct kf_seen *v;
	int n;
};

/* Appends obs (copied); returns its index. */
int kf_seen_add(struct kf_seen_list *l, const struct kf_observation *obs);
/* The index of candidate id, or -1. */
int kf_seen_find(const struct kf_seen_list *l, int64_t id);
void kf_seen_release(struct kf_seen_list *l);

#define KF_ASK_EMPTY_MAX 3	/* replies in a row without code */
#define KF_ASK_CALLS_PER_EVAL 4 /* calls allowed per evaluation of budget */

/* The model of a policy: the client's settings (options "llm_config" and
 * "llm"), the template (options "template", "templates"), the reference,
 * and a count of calls against KF_ASK_CALLS_PER_EVAL. */
struct kf_asker {
	const struct kf_policy_env *env;
	struct kf_llm_config cfg;
	char *reference;
	const char *template_name;
	const char *templates_dir; /* may be NULL: the built-in ones */
	int k;			   /* option "examples": shown per prompt */
	int calls, calls_max;
};

/* What one call asks: examples picked (kf_prompt_pick_examples, k of them,
 * from seed) among pool[0..n_pool) of seen (all of it when pool is NULL),
 * and the candidate to improve, focus (an index of seen, or -1: none),
 * shown with its feedback. */
struct kf_ask {
	const struct kf_seen_list *seen;
	const int *pool;
	int n_pool;
	uint64_t seed;
	int focus;
};

/* What came back: the code of each completion that held some, the prompt
 * (its messages as JSON) and the examples shown, the best first. */
struct kf_ask_reply {
	char **codes;
	int n_codes;
	char *prompt;
	int64_t shown[KF_POLICY_PARENTS_MAX];
	int n_shown;
};

int kf_asker_open(struct kf_asker *a, const struct kf_policy_env *env,
		  struct kf_err *err);
void kf_asker_release(struct kf_asker *a);
/* One call to the model, recorded in the store's llm_calls. A reply
 * without code is no error (n_codes 0, with a note); KF_ERANGE when the
 * calls allowed are spent, the client's error when the call fails. */
int kf_asker_ask(struct kf_asker *a, const struct kf_ask *q,
		 struct kf_ask_reply *r, struct kf_err *err);
void kf_ask_reply_release(struct kf_ask_reply *r);
/* A proposal of code block i, taken from r (NULLed there): origin
 * "llm:MODEL", the prompt, and parents: focus first (when not 0), then,
 * with shown, the examples shown. */
void kf_asker_proposal(const struct kf_asker *a, struct kf_ask_reply *r, int i,
		       int64_t focus, bool shown, struct kf_proposal *out);

/*
 * Option key of opts as a number in [lo, hi], def when absent; errors name
 * flag, the command line's name of the option.
 */
int kf_policy_option(const cJSON *opts, const char *key, const char *flag,
		     double def, double lo, double hi, double *out,
		     struct kf_err *err);
/* A seed for a choice that a resumed run must make again: from the run's
 * seed, the candidates observed and the calls since the last of them. */
uint64_t kf_policy_seed(uint64_t run_seed, int observed, int asks);
/* The SHA-256 of text as the loop keys candidates by. */
void kf_policy_sha256(const char *text, char hex[65]);

/* Proposals in flight, by the hash of their source, each with the slot
 * (a node, an island) that proposed it. */
struct kf_pending {
	char sha[65];
	int slot;
};
struct kf_pending_list {
	struct kf_pending *v;
	int n;
};
bool kf_pending_has(const struct kf_pending_list *l, const char *sha);
void kf_pending_add(struct kf_pending_list *l, const char *sha, int slot);
/* Removes sha's entry and returns its slot; -1 when there is none. */
int kf_pending_take(struct kf_pending_list *l, const char *sha);
void kf_pending_release(struct kf_pending_list *l);

#endif
