/*
 * groups.c: groups whose items come in separate requests.
 *
 * A trainer that scores one rollout per call (OpenRLHF's agent, verl's
 * reward loop, TRL on several processes) still sends every rollout of a
 * prompt with the same group id and the group's size. Each item is
 * evaluated as its request arrives; its request then waits here until the
 * group's last item has been evaluated, when the rewards (and GRPO
 * advantages) are computed once over the whole group and every waiting
 * request answers its own items from them. A group not complete
 * --group-wait seconds after its first item arrived is answered with the
 * items it has, each marked incomplete; a request whose own deadline comes
 * first answers from the items there are then. Nothing waits unbounded and
 * no item is dropped: a late item of a group already answered starts a
 * new one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/base.h>

#include "server_int.h"

struct srv_group {
	char *id, *problem; /* both part of the key */
	struct kf_reward rw; /* the items' design: part of the key */
	int size, got;
	struct kf_reward_item *ri; /* size of them, got filled */
	double *reward, *adv;	   /* when closed: per item */
	bool closed, complete;
	uint64_t deadline_ns;
	int waiters; /* requests that joined and have not answered */
	struct srv_group *next;
};

static bool same_design(const struct kf_reward *a, const struct kf_reward *b)
{
	return a->ops == b->ops && !memcmp(a->param, b->param, sizeof(a->param));
}

void srv_rewards(const struct kf_reward *r, const struct kf_reward_item *ri,
		 int m, bool grpo, double *reward, double *adv,
		 const char *what)
{
	struct kf_err err = KF_ERR_INIT;
	if (kf_reward_score(r, ri, (size_t)m, reward, &err))
		kf_log(KF_LOG_WARN, "serve: %s: reward: %s", what, err.msg);
	bool ok = grpo && !kf_reward_grpo(reward, (size_t)m,
					  KF_REWARD_GRPO_EPS, 0, adv, &err);
	for (int i = 0; i < m && !ok; i++)
		adv[i] = NAN;
}

/* Rewards over the first m items of g into reward and adv (NaN where the
 * design or GRPO cannot give one). */
static void group_score(const struct srv_group *g, int m, double *reward,
			double *adv)
{
	for (int i = 0; i < m; i++)
		reward[i] = NAN;
	srv_rewards(&g->rw, g->ri, m, true, reward, adv, g->id);
}

/* Under the lock. */
static void group_close(struct kf_server *s, struct srv_group *g)
{
	g->closed = true;
	g->complete = g->got == g->size;
	if (!g->complete)
		s->groups_incomplete++;
	group_score(g, g->got, g->reward, g->adv);
	pthread_cond_broadcast(&s->group_cond);
}

/* Under the lock: frees g once answered and left by every request. */
static void group_release(struct kf_server *s, struct srv_group *g)
{
	if (!g->closed || g->waiters > 0)
		return;
	for (struct srv_group **p = &s->groups; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			break;
		}
	s->n_groups--;
	free(g->id);
	free(g->problem);
	free(g->ri);
	free(g->reward);
	free(g->adv);
	free(g);
}

int srv_group_join(struct kf_server *s, const struct kf_reward *rw,
		   const char *id, const char *problem, int size,
		   const struct kf_reward_item *ri, struct srv_group **out,
		   int *slot, struct kf_err *err)
{
	pthread_mutex_lock(&s->lock);
	struct srv_group *g = s->groups;
	/* Keyed by the problem too: items of another problem under the same
	 * id (another client's "prompt-0") are a group of their own, not
	 * speedups compared with these. */
	for (; g; g = g->next)
		if (!g->closed && g->size == size && !strcmp(g->id, id) &&
		    !strcmp(g->problem, problem) && same_design(&g->rw, rw))
			break;
	if (!g) {
		if (s->n_groups >= s->o.max_groups) {
			pthread_mutex_unlock(&s->lock);
			return kf_err_set(err, KF_ERANGE,
					  "%d groups are open, the most the "
					  "server holds (--max-groups)",
					  s->n_groups);
		}
		g = kf_xcalloc(1, sizeof(*g));
		g->id = kf_xstrdup(id);
		g->problem = kf_xstrdup(problem);
		g->rw = *rw;
		g->size = size;
		g->ri = kf_xcalloc((size_t)size, sizeof(*g->ri));
		g->reward = kf_xcalloc((size_t)size, sizeof(double));
		g->adv = kf_xcalloc((size_t)size, sizeof(double));
		g->deadline_ns =
		    kf_now_ns() + (uint64_t)(s->o.group_wait_s * 1e9);
		g->next = s->groups;
		s->groups = g;
		s->n_groups++;
	}
	*slot = g->got;
	g->ri[g->got++] = *ri;
	g->waiters++;
	*out = g;
	if (g->got == g->size)
		group_close(s, g);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void srv_group_answer(struct kf_server *s, struct srv_group *g, int slot,
		      uint64_t until_ns, struct srv_group_answer *a)
{
	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = kf_now_ns();
		if (!g->closed && now >= g->deadline_ns)
			group_close(s, g);
		if (g->closed || now >= until_ns)
			break;
		uint64_t dl = g->deadline_ns < until_ns ? g->deadline_ns
							: until_ns;
		uint64_t wait_ns = 1000000000ull;
		if (dl - now < wait_ns)
			wait_ns = dl - now + 1000000;
		srv_cond_wait(&s->group_cond, &s->lock, wait_ns);
	}
	a->size = g->size;
	if (g->closed) {
		a->reward = g->reward[slot];
		a->advantage = g->adv[slot];
		a->members = g->got;
		a->complete = g->complete;
	} else {
		/* This request's deadline came first: its answer comes from
		 * the items there are; the group stays open for the rest. */
		double *r = kf_xcalloc((size_t)g->got, sizeof(double));
		double *v = kf_xcalloc((size_t)g->got, sizeof(double));
		group_score(g, g->got, r, v);
		a->reward = r[slot];
		a->advantage = v[slot];
		a->members = g->got;
		a->complete = false;
		free(r);
		free(v);
	}
	g->waiters--;
	group_release(s, g);
	pthread_mutex_unlock(&s->lock);
}

void srv_groups_free(struct kf_server *s)
{
	while (s->groups) {
		struct srv_group *g = s->groups;
		s->groups = g->next;
		free(g->id);
		free(g->ri);
		free(g->reward);
		free(g->adv);
		free(g);
	}
	s->n_groups = 0;
}
