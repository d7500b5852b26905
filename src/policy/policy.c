/*
 * policy.c: the table of built-in policies and the thin wrappers through
 * which the search loop calls them (optional entries checked here).
 */
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

struct kf_policy {
	const struct kf_policy_ops *ops;
	void *state;
};

static const struct kf_policy_ops *const builtin[] = {
    &kf_policy_replay_ops, &kf_policy_tune_ops,	   &kf_policy_llm_ops,
    &kf_policy_mcts_ops,   &kf_policy_islands_ops,
};

const struct kf_policy_ops *kf_policy_find(const char *name)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(builtin[i]->name, name))
			return builtin[i];
	return NULL;
}

const char *kf_policy_names(void)
{
	return "islands|llm|mcts|replay|tune";
}

void kf_policy_proposal_release(struct kf_proposal *p)
{
	if (!p)
		return;
	free(p->source);
	free(p->origin);
	free(p->prompt);
	cJSON_Delete(p->params);
	memset(p, 0, sizeof(*p));
}

int kf_policy_open(const struct kf_policy_ops *ops,
		   const struct kf_policy_env *env, struct kf_policy **out,
		   struct kf_err *err)
{
	*out = NULL;
	if (ops->version != KF_POLICY_OPS_VERSION)
		return kf_err_set(err, KF_EINVAL,
				  "policy %s: ops version %d, this kforge "
				  "expects %d",
				  ops->name, ops->version,
				  KF_POLICY_OPS_VERSION);
	void *state = NULL;
	int rc = ops->open(env, &state, err);
	if (rc)
		return rc;
	struct kf_policy *p = kf_xcalloc(1, sizeof(*p));
	p->ops = ops;
	p->state = state;
	*out = p;
	return 0;
}

int kf_policy_propose(struct kf_policy *p, int max, struct kf_proposal *out,
		      int *n, struct kf_err *err)
{
	*n = 0;
	if (max <= 0)
		return 0;
	int rc = p->ops->propose(p->state, max, out, n, err);
	KF_ASSERT(*n >= 0 && *n <= max);
	if (rc) {
		for (int i = 0; i < *n; i++)
			kf_policy_proposal_release(&out[i]);
		*n = 0;
	}
	return rc;
}

void kf_policy_observe(struct kf_policy *p, const struct kf_observation *obs)
{
	if (p->ops->observe)
		p->ops->observe(p->state, obs);
}

const char *kf_policy_name(const struct kf_policy *p)
{
	return p->ops->name;
}

void kf_policy_close(struct kf_policy *p)
{
	if (!p)
		return;
	if (p->ops->close)
		p->ops->close(p->state);
	free(p);
}
