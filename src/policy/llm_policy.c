/*
 * llm_policy.c: the LLM policy, CUDA-L1's contrastive loop: prompts show
 * earlier candidates across score buckets with speedups and feedback; replies
 * that declare KF_PARAM are tuned; every call is recorded in the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

#define LLM_TUNERS_MAX 256

struct llm_policy {
	const struct kf_policy_env *env;
	struct kf_asker asker;
	int tune_each; /* evaluations per tunable reply */
	uint64_t rng;
	struct kf_seen_list seen;
	int last; /* index of the latest observation, -1 when none */
	struct kf_tuner *tuners[LLM_TUNERS_MAX];
	bool tuner_said[LLM_TUNERS_MAX]; /* its error noted */
	int n_tuners;
	struct kf_proposal *ready; /* plain proposals not yet handed out */
	int n_ready;
};

static void llm_close(void *state)
{
	struct llm_policy *p = state;
	if (!p)
		return;
	kf_asker_release(&p->asker);
	kf_seen_release(&p->seen);
	for (int i = 0; i < p->n_tuners; i++)
		kf_tuner_free(p->tuners[i]);
	for (int i = 0; i < p->n_ready; i++)
		kf_policy_proposal_release(&p->ready[i]);
	free(p->ready);
	free(p);
}

static int llm_open(const struct kf_policy_env *env, void **state,
		    struct kf_err *err)
{
	struct llm_policy *p = kf_xcalloc(1, sizeof(*p));
	p->env = env;
	p->last = -1;
	p->rng = env->seed;
	p->tune_each = (int)kf_json_num(env->options, "tune_each", 6);
	int rc = 0;
	if (p->tune_each < 1 || p->tune_each > 10000)
		rc = kf_err_set(err, KF_EINVAL,
				"llm: tune_each %d is out of range (1 to "
				"10000)",
				p->tune_each);
	if (!rc)
		rc = kf_asker_open(&p->asker, env, err);
	if (rc) {
		llm_close(p);
		return rc;
	}
	*state = p;
	return 0;
}

/* Takes code block i of r: a tuner when it declares KF_PARAM, else a ready
 * proposal whose parents are the examples shown, the best first. */
static void take_code(struct llm_policy *p, struct kf_ask_reply *r, int i)
{
	struct kf_params ps;
	struct kf_err err = KF_ERR_INIT;
	char origin[300];
	snprintf(origin, sizeof(origin), "llm:%s", p->asker.cfg.model);
	if (kf_policy_params_parse(r->codes[i], origin, &ps, &err)) {
		char line[1200];
		snprintf(line, sizeof(line), "%s: evaluated untuned", err.msg);
		kf_policy_note(p->env, line);
		ps.n = 0;
	}
	if (ps.n > 0 && p->n_tuners < LLM_TUNERS_MAX) {
		int starts = p->tune_each < 2 ? 1 : 2;
		p->tuners[p->n_tuners++] =
		    kf_tuner_new(r->codes[i], &ps, starts, p->tune_each,
				 kf_policy_rand(&p->rng), origin, r->prompt,
				 r->n_shown ? r->shown[0] : 0);
		return;
	}
	p->ready =
	    kf_xrealloc(p->ready, sizeof(*p->ready) * (size_t)(p->n_ready + 1));
	kf_asker_proposal(&p->asker, r, i, 0, true, &p->ready[p->n_ready++]);
}

/* One call to the model, showing the latest result; its code blocks become
 * tuners or proposals. */
static int ask(struct llm_policy *p, int *codes, struct kf_err *err)
{
	struct kf_ask q = {
	    .seen = &p->seen,
	    .seed = kf_policy_rand(&p->rng),
	    .focus = p->last,
	};
	struct kf_ask_reply r;
	int rc = kf_asker_ask(&p->asker, &q, &r, err);
	if (rc)
		return rc;
	*codes += r.n_codes;
	for (int i = 0; i < r.n_codes; i++)
		take_code(p, &r, i);
	kf_ask_reply_release(&r);
	return 0;
}

/* Hands out what is ready: tuner points first, then plain proposals. */
static void hand_out(struct llm_policy *p, int max, struct kf_proposal *out,
		     int *n)
{
	for (int i = 0; i < p->n_tuners && *n < max; i++) {
		int got = 0;
		kf_tuner_propose(p->tuners[i], max - *n, out + *n, &got);
		*n += got;
		/* A reply whose rules fail or allow nothing ends its tuner,
		 * not the run: said once. */
		struct kf_err e = KF_ERR_INIT;
		if (!p->tuner_said[i] && kf_tuner_error(p->tuners[i], &e)) {
			p->tuner_said[i] = true;
			kf_policy_note(p->env, e.msg);
		}
	}
	int take = p->n_ready < max - *n ? p->n_ready : max - *n;
	if (take <= 0)
		return;
	for (int i = 0; i < take; i++)
		out[(*n)++] = p->ready[i];
	memmove(p->ready, p->ready + take,
		sizeof(*p->ready) * (size_t)(p->n_ready - take));
	p->n_ready -= take;
}

static bool tuners_waiting(const struct llm_policy *p)
{
	for (int i = 0; i < p->n_tuners; i++)
		if (!kf_tuner_done(p->tuners[i]) &&
		    kf_tuner_pending(p->tuners[i]) > 0)
			return true;
	return false;
}

static int llm_propose(void *state, int max, struct kf_proposal *out, int *n,
		       struct kf_err *err)
{
	struct llm_policy *p = state;
	*n = 0;
	hand_out(p, max, out, n);
	/* A tuner waiting on results may have better points to give once
	 * they come: the model is asked when nothing is in the works. */
	if (*n > 0 || tuners_waiting(p))
		return 0;
	int codes = 0;
	for (int empty = 0; empty < KF_ASK_EMPTY_MAX; empty++) {
		int rc = ask(p, &codes, err);
		if (rc)
			return rc;
		hand_out(p, max, out, n);
		if (*n > 0)
			return 0;
	}
	if (codes)
		return kf_err_set(err, KF_EPROTO,
				  "llm: %d replies in a row gave nothing to "
				  "evaluate: their %d code blocks were "
				  "tunable sources that gave no new point "
				  "(KF_PARAM_RULE lines that allow none, as "
				  "noted, or every point evaluated already)",
				  KF_ASK_EMPTY_MAX, codes);
	return kf_err_set(err, KF_EPROTO,
			  "llm: %d replies in a row held no code block "
			  "defining kf_entry",
			  KF_ASK_EMPTY_MAX);
}

static void llm_observe(void *state, const struct kf_observation *obs)
{
	struct llm_policy *p = state;
	for (int i = 0; i < p->n_tuners; i++)
		if (kf_tuner_observe(p->tuners[i], obs))
			break;
	p->last = kf_seen_add(&p->seen, obs);
}

const struct kf_policy_ops kf_policy_llm_ops = {
    .version = KF_POLICY_OPS_VERSION,
    .name = "llm",
    .open = llm_open,
    .propose = llm_propose,
    .observe = llm_observe,
    .close = llm_close,
};
