/*
 * reward.h: rewards for reinforcement-learning trainers, computed from result
 * JSON (docs/results.md). Reward designs are ops tables looked up by name;
 * GRPO advantages, the multi-turn anchor, turn pruning and the retry buffer
 * are plain functions. docs/rewards.md gives every formula and its source.
 */
#ifndef KFORGE_REWARD_H
#define KFORGE_REWARD_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include <kforge/base.h>
#include <kforge/eval.h>

/*
 * One evaluated kernel as a reward sees it: a value type, filled by
 * kf_reward_item_from_result or by hand. An item is correct when its status
 * is ok; an infra_error item gets no reward (NaN) and takes no part in any
 * group statistic; every other status is incorrect.
 */
struct kf_reward_item {
	enum kf_status status;
	bool compiled; /* the candidate compiled (compile.candidate.ok) */
	double pass_fraction; /* q: correctness trials passed / planned, in
				 [0, 1]; values outside are clamped, NaN is 0 */
	double speedup;	      /* timing.speedup.median (reference time over
				 candidate time); NaN when not measured */
};
#define KF_REWARD_ITEM_INIT                                                    \
	{                                                                      \
		KF_STATUS_INFRA_ERROR, false, 0.0, NAN                         \
	}

/*
 * Fills *it from a result JSON (borrowed). trials_planned is the number of
 * correctness trials the evaluation was asked for (`--trials`), which the
 * result does not record: the evaluation stops at the first failing trial.
 * 0 means "the trials in the result", which overstates q for a failure; a
 * result with more trials than asked for (the engine covers every input
 * distribution at every dim set) counts those as the plan. KF_EINVAL (and
 * *it unchanged) when the result is not an object, lacks `status` or
 * `compile.candidate.ok`, has an unknown status, has `trials` that is not
 * an array, or trials_planned < 0.
 */
int kf_reward_item_from_result(const cJSON *result, int trials_planned,
			       struct kf_reward_item *it, struct kf_err *err);

/* True when the item has status ok. */
bool kf_reward_item_correct(const struct kf_reward_item *it);
/* True when the item gets a reward (its status is not infra_error). */
bool kf_reward_item_scored(const struct kf_reward_item *it);
/*
 * The speedup the designs use: the item's speedup when it is finite and
 * above 0, otherwise 1 (no usable measurement counts as "as fast as the
 * reference": a result checked with --no-timing, a zero or infinite ratio),
 * held within [1 / KF_REWARD_SPEEDUP_MAX, KF_REWARD_SPEEDUP_MAX] so that
 * group statistics cannot overflow.
 */
#define KF_REWARD_SPEEDUP_MAX 1e6
double kf_reward_item_speedup(const struct kf_reward_item *it);

/* A parameter of a reward design. */
struct kf_reward_param {
	const char *name;
	double dflt;
	double min, max; /* accepted range, inclusive */
	const char *doc; /* one line */
};

#define KF_REWARD_OPS_VERSION 1
#define KF_REWARD_MAX_PARAMS 8

/*
 * A reward design. Exactly one of item and group is set. The wrapper calls
 * them with the scored items only (never infra_error) and the parameter
 * values in the order of params. Every design must score each correct item
 * above each incorrect one of the same group; kf_reward_score checks it.
 */
struct kf_reward_ops {
	int version; /* KF_REWARD_OPS_VERSION */
	const char *name;
	const char *doc; /* one line */
	const struct kf_reward_param *params;
	int n_params; /* at most KF_REWARD_MAX_PARAMS */
	/* The reward of one item. */
	double (*item)(const struct kf_reward_item *it, const double *param);
	/* The rewards of a group of n >= 1 items, into out[0..n). */
	void (*group)(const struct kf_reward_item *items, size_t n,
		      const double *param, double *out);
	/* Optional: checks relations between parameters; the message names
	 * the key. */
	int (*check)(const double *param, struct kf_err *err);
};

/* The built-in designs: "log_speedup", "cuda_l1", "musacoder", "leap_rank".
 * NULL for an unknown name. */
const struct kf_reward_ops *kf_reward_find(const char *name);
/* The i-th built-in design, NULL past the last; for listings. */
const struct kf_reward_ops *kf_reward_at(size_t i);

/* A design with its parameter values; a value type. */
struct kf_reward {
	const struct kf_reward_ops *ops;    /* borrowed; outlives this */
	double param[KF_REWARD_MAX_PARAMS]; /* in the order of ops->params */
};
#define KF_REWARD_INIT                                                         \
	{                                                                      \
		NULL,                                                          \
		{                                                              \
			0                                                      \
		}                                                              \
	}

/*
 * Sets up r with the design called name and its parameters: the defaults,
 * then every key of params (a JSON object, borrowed; NULL for none).
 * KF_EINVAL for an unknown design, and for a key that is not a parameter,
 * a value that is not a finite number or is out of range, a key given twice;
 * the message names the design and the key. r is unchanged on failure.
 */
int kf_reward_init(struct kf_reward *r, const char *name, const cJSON *params,
		   struct kf_err *err);
/* The same with a design that is not built in (ops borrowed); KF_EINVAL
 * also for a table of another version or a malformed one. */
int kf_reward_init_ops(struct kf_reward *r, const struct kf_reward_ops *ops,
		       const cJSON *params, struct kf_err *err);
/* The value of the parameter called name; NaN when there is none. */
double kf_reward_param(const struct kf_reward *r, const char *name);
/* {"name": ..., "params": {...}}, the design as set up; caller frees. */
cJSON *kf_reward_json(const struct kf_reward *r);

/*
 * Scores one group (the rollouts of one prompt; for a per-item design any
 * set of items): out[i] is the reward of items[i], NaN for infra_error.
 * n may be 0. KF_EINVAL when the design broke its contract (a non-finite
 * reward for a scored item, or a correct item not above an incorrect one);
 * out is then filled with NaN.
 */
int kf_reward_score(const struct kf_reward *r,
		    const struct kf_reward_item *items, size_t n, double *out,
		    struct kf_err *err);

/*
 * GRPO advantages of one group: adv[i] = (r[i] - mean) / (std + eps), mean
 * and std over the entries that are not NaN; a NaN reward gets a NaN
 * advantage. std divides by m - ddof (m entries; ddof 0: the population
 * std; 1: the sample std that torch.std computes), and is 0 when m - ddof
 * is 0 or less. KF_EINVAL for an infinite reward, eps < 0 or ddof other
 * than 0 or 1. adv may be rewards.
 */
#define KF_REWARD_GRPO_EPS 1e-6
int kf_reward_grpo(const double *rewards, size_t n, double eps, int ddof,
		   double *adv, struct kf_err *err);

/*
 * The first-turn-anchored reward of a multi-turn trajectory:
 * alpha * first + (1 - alpha) * best, where turns[0..n) are the rewards of
 * its turns in order, first is the first that is not NaN (a turn lost to
 * infra_error is skipped) and best the largest. *out is NaN when no turn has
 * a reward. KF_EINVAL for alpha outside [0, 1] or an infinite turn reward.
 */
#define KF_REWARD_ANCHOR_ALPHA 0.75
int kf_reward_anchor(const double *turns, size_t n, double alpha, double *out,
		     struct kf_err *err);

/*
 * Difficulty-conditioned pruning of multi-turn rollouts. The failure share
 * of a group is the fraction of its scored first-turn items that are
 * incorrect (NaN when none is scored). A group whose share is at least
 * threshold gets further turns; the others stop. A group with no scored
 * item has no decision: its first turn must be run again.
 */
#define KF_REWARD_PRUNE_THRESHOLD 0.5
enum kf_reward_turns {
	KF_REWARD_STOP,	    /* no further turns */
	KF_REWARD_CONTINUE, /* further turns */
	KF_REWARD_UNKNOWN,  /* no scored item: rerun the first turn */
};
double kf_reward_fail_share(const struct kf_reward_item *first, size_t n);
/* KF_EINVAL for a threshold outside [0, 1]. */
int kf_reward_prune(const struct kf_reward_item *first, size_t n,
		    double threshold, enum kf_reward_turns *out,
		    struct kf_err *err);

/*
 * The retry buffer: prompts whose every scored rollout failed, kept for a
 * later retry. It holds at most capacity prompt ids, oldest first; adding
 * to a full buffer evicts the oldest. A prompt already waiting keeps its
 * place and is not added twice.
 */
#define KF_REWARD_RETRY_MAX (1u << 16) /* largest capacity */
#define KF_REWARD_PROMPT_CAP 4096      /* longest prompt id, in bytes */
struct kf_reward_retry;
/* KF_EINVAL for a capacity of 0 or above KF_REWARD_RETRY_MAX. */
int kf_reward_retry_new(size_t capacity, struct kf_reward_retry **out,
			struct kf_err *err);
void kf_reward_retry_free(struct kf_reward_retry *b);
/*
 * Offers the group of prompt_id (copied). Returns 1 when it was queued (at
 * least one item is scored and every scored item is incorrect, and it was
 * not waiting already), 0 when not, KF_EINVAL for an empty id or one longer
 * than KF_REWARD_PROMPT_CAP.
 */
int kf_reward_retry_offer(struct kf_reward_retry *b, const char *prompt_id,
			  const struct kf_reward_item *items, size_t n,
			  struct kf_err *err);
/* Removes the oldest prompt and returns its id (caller frees); NULL when
 * the buffer is empty. */
char *kf_reward_retry_take(struct kf_reward_retry *b);
/* Prompts waiting. */
size_t kf_reward_retry_len(const struct kf_reward_retry *b);
/* Prompts evicted by a full buffer since it was made. */
size_t kf_reward_retry_evicted(const struct kf_reward_retry *b);

/*
 * What a run or a reward stands on, as a ratio over the reference where
 * higher is better: objective "time" (or NULL) the speedup (the timing's
 * median ratio), "energy" the reference's joules per call over the
 * candidate's, "edp" the reference's energy-delay product over the
 * candidate's. Energy comes from the result's "energy" object, which only
 * backends with an energy counter give (cuda, through NVML). 0 when the
 * result failed or lacks what the objective needs (then *why, when not
 * NULL, says what).
 */
double kf_reward_objective_ratio(const char *objective, const cJSON *result,
				 const char **why);
/* An item's speedup replaced by the objective's ratio (objective "energy"
 * or "edp"; "time" or NULL leaves it): NaN where the result lacks what
 * the objective needs, so that every design treats it as no gain. */
void kf_reward_item_objective(struct kf_reward_item *it, const char *objective,
			      const cJSON *result);

#endif
