/*
 * policy_int.h: shared inside src/policy: the ops tables of the built-in
 * policies and the tuner engine, which the tune policy runs over one source
 * and the llm policy over every reply that declares KF_PARAM.
 */
#ifndef KFORGE_POLICY_INT_H
#define KFORGE_POLICY_INT_H

#include <kforge/policy.h>

extern const struct kf_policy_ops kf_policy_replay_ops;
extern const struct kf_policy_ops kf_policy_tune_ops;
extern const struct kf_policy_ops kf_policy_llm_ops;

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
/* Records a result; false when obs is not a point of this space. */
bool kf_tuner_observe(struct kf_tuner *t, const struct kf_observation *obs);
/* Points proposed and not yet observed. */
int kf_tuner_pending(const struct kf_tuner *t);
/* True when it will propose nothing more. */
bool kf_tuner_done(const struct kf_tuner *t);
void kf_tuner_free(struct kf_tuner *t);

#endif
