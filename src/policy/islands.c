/*
 * islands.c: islands of MAP-Elites archives. Each island keeps its own
 * archive: a grid of cells keyed by two behaviour descriptors of a result,
 * its performance level (the roofline fraction it reached, or its speedup
 * where the result has no roofline, by factors of two) and its source
 * length (by factors of two from 256 bytes), each cell holding the fastest
 * correct candidate that fell in it. The islands take turns: an island asks
 * the model to improve one of its elites, drawn at random, shown with its
 * feedback and its island's other elites. Every few results each island's
 * best migrates to the next island along a ring.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

#define ISLANDS_MAX 64
#define BINS_MAX 16

struct islands {
	const struct kf_policy_env *env;
	struct kf_asker asker;
	struct kf_seen_list seen;
	int *island; /* per seen: its island */
	int *cell;   /* per seen: its cell, -1 when it failed */
	int n_islands, bins, migrate_every;
	int *elite; /* [island * bins * bins + cell]: a seen index or -1 */
	struct kf_pending_list pend;
	struct kf_proposal *ready;
	int n_ready;
	int observed, asks;
};

static void islands_close(void *state)
{
	struct islands *p = state;
	if (!p)
		return;
	kf_asker_release(&p->asker);
	kf_seen_release(&p->seen);
	kf_pending_release(&p->pend);
	for (int i = 0; i < p->n_ready; i++)
		kf_policy_proposal_release(&p->ready[i]);
	free(p->ready);
	free(p->island);
	free(p->cell);
	free(p->elite);
	free(p);
}

static int islands_open(const struct kf_policy_env *env, void **state,
			struct kf_err *err)
{
	struct islands *p = kf_xcalloc(1, sizeof(*p));
	const cJSON *o = env->options;
	double n = 0, bins = 0, every = 0;
	p->env = env;
	int rc = kf_policy_option(o, "islands", "--islands", 4, 1, ISLANDS_MAX,
				  &n, err);
	if (!rc)
		rc = kf_policy_option(o, "bins", "--bins", 4, 1, BINS_MAX,
				      &bins, err);
	if (!rc)
		rc = kf_policy_option(o, "migrate_every", "--migrate-every", 10,
				      0, 100000, &every, err);
	if (!rc &&
	    (n != floor(n) || bins != floor(bins) || every != floor(every)))
		rc = kf_err_set(err, KF_EINVAL, "%s: not a whole number",
				n != floor(n)	      ? "--islands"
				: bins != floor(bins) ? "--bins"
						      : "--migrate-every");
	if (!rc)
		rc = kf_asker_open(&p->asker, env, err);
	if (rc) {
		islands_close(p);
		return rc;
	}
	p->n_islands = (int)n;
	p->bins = (int)bins;
	p->migrate_every = (int)every;
	size_t cells = (size_t)p->n_islands * (size_t)(p->bins * p->bins);
	p->elite = kf_xcalloc(cells, sizeof(int));
	for (size_t i = 0; i < cells; i++)
		p->elite[i] = -1;
	*state = p;
	return 0;
}

static int clamp(int x, int hi)
{
	return x < 0 ? 0 : x > hi ? hi : x;
}

/* The cell of a correct result: performance level, then source length. */
static int cell_of(const struct islands *p, const struct kf_observation *obs)
{
	const cJSON *f = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(obs->result, "roofline"), "fraction");
	int perf;
	if (cJSON_IsNumber(f) && f->valuedouble > 0)
		perf = p->bins - 1 + (int)floor(log2(f->valuedouble));
	else
		perf = p->bins / 2 + (int)floor(log2(obs->speedup));
	size_t len = strlen(obs->source);
	int size = len < 512 ? 0 : (int)floor(log2((double)len / 256.0));
	return clamp(perf, p->bins - 1) * p->bins + clamp(size, p->bins - 1);
}

static int *slot(struct islands *p, int island, int cell)
{
	return &p->elite[island * p->bins * p->bins + cell];
}

static void note(struct islands *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(struct islands *p, const char *fmt, ...)
{
	char line[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	kf_policy_note(p->env, line);
}

/* Offers seen candidate s to a cell of island i: it fills it when empty,
 * replaces an elite it is faster than, or stays out. */
static void place(struct islands *p, int i, int s, const char *who)
{
	int c = p->cell[s];
	int *e = slot(p, i, c);
	int row = c / p->bins, col = c % p->bins;
	const struct kf_seen *x = &p->seen.v[s];
	if (*e == s)
		return;
	if (*e < 0) {
		note(p, "islands: %s #%lld fills island %d cell [%d,%d]", who,
		     (long long)x->candidate, i, row, col);
		*e = s;
		return;
	}
	const struct kf_seen *y = &p->seen.v[*e];
	if (x->speedup > y->speedup) {
		note(p,
		     "islands: %s #%lld replaces #%lld in island %d cell "
		     "[%d,%d] (%.3fx over %.3fx)",
		     who, (long long)x->candidate, (long long)y->candidate, i,
		     row, col, x->speedup, y->speedup);
		*e = s;
	} else {
		note(p,
		     "islands: %s #%lld stays out of island %d cell [%d,%d], "
		     "held by #%lld (%.3fx, not over %.3fx)",
		     who, (long long)x->candidate, i, row, col,
		     (long long)y->candidate, x->speedup, y->speedup);
	}
}

/* The fastest elite of island i (the first on a tie), or -1. */
static int best_of(const struct islands *p, int i)
{
	int best = -1;
	for (int c = 0; c < p->bins * p->bins; c++) {
		int e = p->elite[i * p->bins * p->bins + c];
		if (e >= 0 && (best < 0 ||
			       p->seen.v[e].speedup > p->seen.v[best].speedup))
			best = e;
	}
	return best;
}

/* Each island's best goes to the next island of the ring. */
static void migrate(struct islands *p)
{
	if (p->n_islands < 2)
		return;
	int best[ISLANDS_MAX];
	for (int i = 0; i < p->n_islands; i++)
		best[i] = best_of(p, i);
	for (int i = 0; i < p->n_islands; i++) {
		int to = (i + 1) % p->n_islands;
		if (best[i] < 0 || *slot(p, to, p->cell[best[i]]) == best[i])
			continue;
		char who[64];
		snprintf(who, sizeof(who), "migrant from island %d", i);
		place(p, to, best[i], who);
	}
}

/* The island a candidate was proposed for: in flight, the one that
 * proposed it; from the store, the one its origin names. */
static int island_of(struct islands *p, const struct kf_observation *obs)
{
	int i = kf_pending_take(&p->pend, obs->sha256);
	if (i >= 0)
		return i;
	const char *at = obs->origin ? strstr(obs->origin, " island ") : NULL;
	if (at) {
		i = atoi(at + 8);
		if (i >= 0 && i < p->n_islands)
			return i;
	}
	return p->observed % p->n_islands;
}

static void islands_observe(void *state, const struct kf_observation *obs)
{
	struct islands *p = state;
	int i = island_of(p, obs);
	if (kf_seen_find(&p->seen, obs->candidate) >= 0)
		return; /* a proposal the run held already */
	int s = kf_seen_add(&p->seen, obs);
	p->island = kf_xrealloc(p->island, sizeof(int) * (size_t)p->seen.n);
	p->cell = kf_xrealloc(p->cell, sizeof(int) * (size_t)p->seen.n);
	p->island[s] = i;
	bool ok = obs->status && !strcmp(obs->status, "ok") && obs->speedup > 0;
	p->cell[s] = ok ? cell_of(p, obs) : -1;
	if (ok)
		place(p, i, s, "candidate");
	else
		note(p, "islands: candidate #%lld of island %d: %s, no cell",
		     (long long)obs->candidate, i,
		     obs->status ? obs->status : "no status");
	p->observed++;
	p->asks = 0;
	if (p->migrate_every > 0 && p->observed % p->migrate_every == 0)
		migrate(p);
}

/* One call for island i: improve one of its elites at random (or, with
 * none, its latest candidate; with no candidate, a new one). */
static int ask_for(struct islands *p, int i, bool *got, struct kf_err *err)
{
	int cells = p->bins * p->bins;
	int *pool = kf_xcalloc((size_t)cells + 1, sizeof(int));
	int n_pool = 0;
	for (int c = 0; c < cells; c++)
		if (*slot(p, i, c) >= 0)
			pool[n_pool++] = *slot(p, i, c);
	uint64_t rng = kf_policy_seed(p->env->run_seed, p->observed, p->asks++);
	int focus = -1;
	if (n_pool)
		focus = pool[kf_policy_rand(&rng) % (uint64_t)n_pool];
	for (int s = p->seen.n - 1; focus < 0 && s >= 0; s--)
		if (p->island[s] == i)
			focus = s;
	struct kf_ask q = {
	    .seen = &p->seen,
	    .pool = pool,
	    .n_pool = n_pool,
	    .seed = kf_policy_rand(&rng),
	    .focus = focus,
	};
	struct kf_ask_reply r;
	int rc = kf_asker_ask(&p->asker, &q, &r, err);
	free(pool);
	if (rc)
		return rc;
	for (int k = 0; k < r.n_codes; k++) {
		char sha[65];
		kf_policy_sha256(r.codes[k], sha);
		if (kf_pending_has(&p->pend, sha))
			continue;
		kf_pending_add(&p->pend, sha, i);
		p->ready = kf_xrealloc(p->ready, sizeof(*p->ready) *
						     (size_t)(p->n_ready + 1));
		struct kf_proposal *pr = &p->ready[p->n_ready++];
		kf_asker_proposal(&p->asker, &r, k,
				  focus >= 0 ? p->seen.v[focus].candidate : 0,
				  focus >= 0, pr);
		char *origin = kf_xasprintf("%s island %d", pr->origin, i);
		free(pr->origin);
		pr->origin = origin;
		*got = true;
	}
	kf_ask_reply_release(&r);
	return 0;
}

static int islands_propose(void *state, int max, struct kf_proposal *out,
			   int *n, struct kf_err *err)
{
	struct islands *p = state;
	*n = 0;
	int empty = 0;
	while (*n < max) {
		if (p->n_ready) {
			out[(*n)++] = p->ready[0];
			memmove(p->ready, p->ready + 1,
				sizeof(*p->ready) * (size_t)(p->n_ready - 1));
			p->n_ready--;
			continue;
		}
		int i = (p->observed + p->asks) % p->n_islands;
		bool got = false;
		int rc = ask_for(p, i, &got, err);
		if (rc)
			return rc;
		if (!got && ++empty >= KF_ASK_EMPTY_MAX)
			return kf_err_set(err, KF_EPROTO,
					  "islands: %d replies in a row held "
					  "no new code block defining "
					  "kf_entry",
					  KF_ASK_EMPTY_MAX);
		if (got)
			empty = 0;
	}
	return 0;
}

const struct kf_policy_ops kf_policy_islands_ops = {
    .version = KF_POLICY_OPS_VERSION,
    .name = "islands",
    .open = islands_open,
    .propose = islands_propose,
    .observe = islands_observe,
    .close = islands_close,
};
