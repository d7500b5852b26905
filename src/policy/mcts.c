/*
 * mcts.c: Monte Carlo tree search over candidate lineages with progressive
 * widening. A node is a stored candidate, the root the task's reference;
 * expanding a node asks the model to improve that candidate, shown with its
 * measured feedback and the refinements of it tried so far. A node with N
 * visits may have at most ceil(C * N^alpha) children; past that, selection
 * descends to the child of highest UCT on the reward (the log of the
 * speedup, failures at a floor), and each result is backed up the lineage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

struct node {
	int64_t id;   /* the candidate; 0 for the root */
	int parent;   /* index of the parent node, -1 for the root */
	int seen;     /* index into seen, -1 for the root */
	int visits;   /* results in its subtree, its own included */
	double sum;   /* their rewards */
	int children; /* evaluated */
	int pending;  /* proposed by expanding it, not yet observed */
};

struct mcts {
	const struct kf_policy_env *env;
	struct kf_asker asker;
	struct kf_seen_list seen;
	struct node *nodes;
	int n_nodes;
	struct kf_pending_list pend;
	struct kf_proposal *ready; /* proposals past what propose could take */
	int n_ready;
	double widen_c, widen_alpha, explore, fail_reward;
	int observed; /* distinct candidates */
	int asks;     /* calls since the last of them */
};

static void mcts_close(void *state)
{
	struct mcts *m = state;
	if (!m)
		return;
	kf_asker_release(&m->asker);
	kf_seen_release(&m->seen);
	kf_pending_release(&m->pend);
	for (int i = 0; i < m->n_ready; i++)
		kf_policy_proposal_release(&m->ready[i]);
	free(m->ready);
	free(m->nodes);
	free(m);
}

static int mcts_open(const struct kf_policy_env *env, void **state,
		     struct kf_err *err)
{
	struct mcts *m = kf_xcalloc(1, sizeof(*m));
	const cJSON *o = env->options;
	m->env = env;
	int rc = kf_policy_option(o, "widen_c", "--widen-c", 1.0, 0.01, 100,
				  &m->widen_c, err);
	if (!rc)
		rc = kf_policy_option(o, "widen_alpha", "--widen-alpha", 0.5, 0,
				      1, &m->widen_alpha, err);
	if (!rc)
		rc = kf_policy_option(o, "explore", "--explore", 1.0, 0, 100,
				      &m->explore, err);
	if (!rc)
		rc = kf_policy_option(o, "fail_reward", "--fail-reward", -2.0,
				      -100, 0, &m->fail_reward, err);
	if (!rc)
		rc = kf_asker_open(&m->asker, env, err);
	if (rc) {
		mcts_close(m);
		return rc;
	}
	m->nodes = kf_xcalloc(1, sizeof(*m->nodes));
	m->nodes[0] = (struct node){0, -1, -1, 0, 0, 0, 0};
	m->n_nodes = 1;
	*state = m;
	return 0;
}

/* The most children a node of this many visits may have: at least one. */
static int widen_limit(const struct mcts *m, int visits)
{
	double x = m->widen_c * pow((double)visits, m->widen_alpha);
	int k = (int)ceil(x - 1e-9);
	return k < 1 ? 1 : k;
}

static double reward(const struct mcts *m, const struct kf_observation *obs)
{
	/* The run's objective (the speedup under --objective time). */
	if (!obs->status || strcmp(obs->status, "ok") || !(obs->score > 0))
		return m->fail_reward;
	double r = log(obs->score);
	return r < m->fail_reward ? m->fail_reward : r;
}

static double uct(const struct mcts *m, const struct node *parent,
		  const struct node *c)
{
	double q = c->sum / c->visits;
	double n = parent->visits > 1 ? (double)parent->visits : 1.0;
	return q + m->explore * sqrt(log(n) / c->visits);
}

/* The node to expand: from the root, a node under its widening limit, or
 * else its child of highest UCT (the first on a tie); -1 when the way
 * ends at a node whose children are all in flight. */
static int select_node(const struct mcts *m)
{
	int v = 0;
	for (;;) {
		const struct node *nv = &m->nodes[v];
		if (nv->children + nv->pending < widen_limit(m, nv->visits))
			return v;
		int best = -1;
		double best_u = 0;
		for (int i = v + 1; i < m->n_nodes; i++) {
			if (m->nodes[i].parent != v)
				continue;
			double u = uct(m, nv, &m->nodes[i]);
			if (best < 0 || u > best_u) {
				best = i;
				best_u = u;
			}
		}
		if (best < 0)
			return -1;
		v = best;
	}
}

/* The evaluated children of node v, as indices into seen. */
static int children_of(const struct mcts *m, int v, int *out)
{
	int n = 0;
	for (int i = v + 1; i < m->n_nodes; i++)
		if (m->nodes[i].parent == v)
			out[n++] = m->nodes[i].seen;
	return n;
}

/* Expands node v: one call; its code blocks become proposals. */
static int expand(struct mcts *m, int v, struct kf_err *err)
{
	struct node *nv = &m->nodes[v];
	char line[300];
	if (v)
		snprintf(line, sizeof(line),
			 "mcts: expanding #%lld (visits %d, children %d of "
			 "%d)",
			 (long long)nv->id, nv->visits,
			 nv->children + nv->pending,
			 widen_limit(m, nv->visits));
	else
		snprintf(line, sizeof(line),
			 "mcts: expanding the root (visits %d, children %d "
			 "of %d)",
			 nv->visits, nv->children + nv->pending,
			 widen_limit(m, nv->visits));
	kf_policy_note(m->env, line);
	int *pool = kf_xcalloc((size_t)m->n_nodes + 1, sizeof(int));
	struct kf_ask q = {
	    .seen = &m->seen,
	    .pool = pool,
	    .n_pool = children_of(m, v, pool),
	    .focus = nv->seen,
	};
	int rc = 0, got = 0;
	for (int empty = 0; !rc && !got && empty < KF_ASK_EMPTY_MAX; empty++) {
		struct kf_ask_reply r;
		q.seed =
		    kf_policy_seed(m->env->run_seed, m->observed, m->asks++);
		rc = kf_asker_ask(&m->asker, &q, &r, err);
		for (int i = 0; !rc && i < r.n_codes; i++) {
			char sha[65];
			kf_policy_sha256(r.codes[i], sha);
			if (kf_pending_has(&m->pend, sha))
				continue; /* in flight already */
			kf_pending_add(&m->pend, sha, v);
			m->nodes[v].pending++;
			m->ready =
			    kf_xrealloc(m->ready, sizeof(*m->ready) *
						      (size_t)(m->n_ready + 1));
			kf_asker_proposal(&m->asker, &r, i, m->nodes[v].id,
					  false, &m->ready[m->n_ready++]);
			got++;
		}
		if (!rc)
			kf_ask_reply_release(&r);
	}
	free(pool);
	if (!rc && !got)
		rc = kf_err_set(err, KF_EPROTO,
				"mcts: %d replies in a row held no new code "
				"block defining kf_entry",
				KF_ASK_EMPTY_MAX);
	return rc;
}

static int mcts_propose(void *state, int max, struct kf_proposal *out, int *n,
			struct kf_err *err)
{
	struct mcts *m = state;
	*n = 0;
	while (*n < max) {
		if (m->n_ready) {
			out[(*n)++] = m->ready[0];
			memmove(m->ready, m->ready + 1,
				sizeof(*m->ready) * (size_t)(m->n_ready - 1));
			m->n_ready--;
			continue;
		}
		int v = select_node(m);
		if (v < 0)
			break; /* wait for the results in flight */
		int rc = expand(m, v, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int node_of(const struct mcts *m, int64_t id)
{
	for (int i = 1; id && i < m->n_nodes; i++)
		if (m->nodes[i].id == id)
			return i;
	return -1;
}

static void mcts_observe(void *state, const struct kf_observation *obs)
{
	struct mcts *m = state;
	int from = kf_pending_take(&m->pend, obs->sha256);
	if (from >= 0)
		m->nodes[from].pending--;
	/* A proposal the run held already: no new node. */
	if (node_of(m, obs->candidate) >= 0)
		return;
	int parent = obs->n_parents ? node_of(m, obs->parents[0]) : 0;
	if (parent < 0)
		parent = 0;
	double r = reward(m, obs);
	m->nodes =
	    kf_xrealloc(m->nodes, sizeof(*m->nodes) * (size_t)(m->n_nodes + 1));
	m->nodes[m->n_nodes++] = (struct node){
	    obs->candidate, parent, kf_seen_add(&m->seen, obs), 1, r, 0, 0};
	m->nodes[parent].children++;
	for (int a = parent; a >= 0; a = m->nodes[a].parent) {
		m->nodes[a].visits++;
		m->nodes[a].sum += r;
	}
	m->observed++;
	m->asks = 0;
}

const struct kf_policy_ops kf_policy_mcts_ops = {
    .version = KF_POLICY_OPS_VERSION,
    .name = "mcts",
    .open = mcts_open,
    .propose = mcts_propose,
    .observe = mcts_observe,
    .close = mcts_close,
};
