/*
 * tune.c: the built-in policy that needs no model. It searches the space of
 * a source's KF_PARAM declarations: random starting points, then local
 * search around the best results, each concrete source evaluated once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

uint64_t kf_policy_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define RUNGS_MAX 16

struct point {
	int idx[KF_PARAM_MAX];
	int64_t candidate; /* store id once observed, else 0 */
	double score;	   /* the objective's ratio when ok, else 0 */
	bool observed;
	bool ok;
	/* halving: rungs proposed and timed (bits), each rung's score */
	uint32_t rung_proposed, rung_seen;
	double rung_score[RUNGS_MAX];
};

struct kf_tuner {
	char *source;
	struct kf_params ps;
	int64_t space;
	int starts_left;
	int max_evals; /* 0: no limit */
	int proposed;
	uint64_t rng;
	char *origin;
	char *prompt;
	int64_t parent;
	struct point *pts; /* every point proposed or observed */
	int n, alloc;
	/* The points a rule forbids, by rank: an open-addressed set of
	 * rank + 1 (0: empty), never drawn again. */
	uint64_t *refused;
	size_t refused_cap;
	int64_t n_refused;
	int64_t refused_run; /* forbidden in a row since the last allowed */
	enum kf_tune_strategy strategy;
	int64_t next_rank; /* exhaustive: the next rank to consider */
	struct kf_err err; /* a rule that failed at a point */
	/* halving: rung r holds rung_n[r] points (rung 0 the first of
	 * members, in order) timed under rung_cap[r]; the last rung is
	 * timed fully (cap 0). members[0..rung_n[rung]) are the current
	 * rung's, best first from rung 1 on. */
	int eta, rungs, rung;
	int rung_n[RUNGS_MAX];
	double rung_cap[RUNGS_MAX];
	int *members; /* indices into pts */
};

struct kf_tuner *kf_tuner_new(const char *source, const struct kf_params *ps,
			      int starts, int max_evals, uint64_t seed,
			      const char *origin, const char *prompt,
			      int64_t parent)
{
	KF_ASSERT(ps->n > 0);
	struct kf_tuner *t = kf_xcalloc(1, sizeof(*t));
	t->source = kf_xstrdup(source);
	t->ps = *ps;
	t->space = kf_policy_params_space(ps);
	t->starts_left = starts > 0 ? starts : 1;
	t->max_evals = max_evals;
	t->rng = seed;
	t->origin = origin ? kf_xstrdup(origin) : NULL;
	t->prompt = prompt ? kf_xstrdup(prompt) : NULL;
	t->parent = parent;
	return t;
}

void kf_tuner_free(struct kf_tuner *t)
{
	if (!t)
		return;
	free(t->source);
	free(t->origin);
	free(t->prompt);
	free(t->pts);
	free(t->refused);
	free(t->members);
	free(t);
}

static struct point *find(struct kf_tuner *t, const int *idx)
{
	for (int i = 0; i < t->n; i++)
		if (!memcmp(t->pts[i].idx, idx, sizeof(int) * (size_t)t->ps.n))
			return &t->pts[i];
	return NULL;
}

static struct point *add(struct kf_tuner *t, const int *idx);

/* The rank of idx in mixed radix (parameter 0 varies fastest). */
static uint64_t rank_of(const struct kf_tuner *t, const int *idx)
{
	uint64_t r = 0;
	for (int i = t->ps.n - 1; i >= 0; i--)
		r = r * (uint64_t)t->ps.p[i].n_values + (uint64_t)idx[i];
	return r;
}

static size_t refused_slot(const struct kf_tuner *t, uint64_t key)
{
	size_t m = t->refused_cap - 1;
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & m;
	while (t->refused[h] && t->refused[h] != key)
		h = (h + 1) & m;
	return h;
}

static bool is_refused(const struct kf_tuner *t, const int *idx)
{
	if (!t->n_refused)
		return false;
	uint64_t key = rank_of(t, idx) + 1;
	return t->refused[refused_slot(t, key)] == key;
}

static void refuse(struct kf_tuner *t, const int *idx)
{
	if ((size_t)(t->n_refused + 1) * 2 > t->refused_cap) {
		uint64_t *old = t->refused;
		size_t cap = t->refused_cap;
		t->refused_cap = cap ? 2 * cap : 1024;
		t->refused = kf_xcalloc(t->refused_cap, sizeof(uint64_t));
		for (size_t i = 0; i < cap; i++)
			if (old[i])
				t->refused[refused_slot(t, old[i])] = old[i];
		free(old);
	}
	uint64_t key = rank_of(t, idx) + 1;
	size_t h = refused_slot(t, key);
	if (!t->refused[h]) {
		t->refused[h] = key;
		t->n_refused++;
	}
}

/* Points forbidden in a row after which a tuner gives up, with an error
 * that says so: as many as rules_check enumerates (params.c), where a
 * space that small is proved to hold an allowed point; rules that allow
 * almost nothing of a larger space (a model's sixteen parameters of
 * fifteen values, with rules each satisfiable, never all at once) end the
 * tuner in seconds instead of holding the loop. */
#define TUNE_REFUSED_RUN_MAX (1 << 20)
/* ... and at most this many rule evaluations in a row (16 rules: 2^18
 * points). */
#define TUNE_REFUSED_EVALS_MAX (1 << 22)

static int64_t refused_run_max(const struct kf_tuner *t)
{
	int64_t n = TUNE_REFUSED_EVALS_MAX / (t->ps.n_rules ? t->ps.n_rules : 1);
	return n < TUNE_REFUSED_RUN_MAX ? n : TUNE_REFUSED_RUN_MAX;
}

static bool allowed(struct kf_tuner *t, const int *idx)
{
	if (t->ps.n_rules == 0)
		return true;
	int a = kf_policy_params_allowed(&t->ps, idx, &t->err);
	if (a == 1) {
		t->refused_run = 0;
		return true;
	}
	if (a == 0) {
		refuse(t, idx);
		if (++t->refused_run >= refused_run_max(t))
			kf_err_set(&t->err, KF_EINVAL,
				   "%s: its %d KF_PARAM_RULE lines allowed "
				   "none of %lld points in a row (of %lld): "
				   "giving up on it",
				   t->origin ? t->origin : "source",
				   t->ps.n_rules, (long long)t->refused_run,
				   (long long)t->space);
	}
	return false;
}

/* Whether idx is a point not yet proposed, observed or refused, that the
 * rules allow. */
static bool fresh(struct kf_tuner *t, const int *idx)
{
	return !find(t, idx) && !is_refused(t, idx) && allowed(t, idx);
}

static struct point *add(struct kf_tuner *t, const int *idx)
{
	if (t->n == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 16;
		t->pts =
		    kf_xrealloc(t->pts, sizeof(*t->pts) * (size_t)t->alloc);
	}
	struct point *p = &t->pts[t->n++];
	memset(p, 0, sizeof(*p));
	memcpy(p->idx, idx, sizeof(int) * (size_t)t->ps.n);
	return p;
}

int kf_tuner_pending(const struct kf_tuner *t)
{
	int n = 0;
	if (t->strategy == KF_TUNE_HALVING) {
		for (int i = 0; i < t->n; i++)
			n += __builtin_popcount(t->pts[i].rung_proposed &
						~t->pts[i].rung_seen);
		return n;
	}
	for (int i = 0; i < t->n; i++)
		n += !t->pts[i].observed;
	return n;
}

/* Whether the rules allow idx; a point they forbid is remembered as
 * excluded, so that it is never drawn again. A rule that fails there
 * stops the tuner with its error. */
static bool allowed(struct kf_tuner *t, const int *idx);

bool kf_tuner_done(const struct kf_tuner *t)
{
	if (t->err.code)
		return true;
	if (t->max_evals > 0 && t->proposed >= t->max_evals)
		return true;
	if (t->strategy == KF_TUNE_HALVING)
		return t->rungs == 0;
	return t->n + t->n_refused >= t->space && kf_tuner_pending(t) == 0;
}

/* The point with rank r in mixed radix (parameter 0 varies fastest). */
static void unrank(const struct kf_tuner *t, int64_t r, int *idx)
{
	for (int i = 0; i < t->ps.n; i++) {
		idx[i] = (int)(r % t->ps.p[i].n_values);
		r /= t->ps.p[i].n_values;
	}
}

/* A random point not yet visited; false when every point was. */
static bool random_point(struct kf_tuner *t, int *idx)
{
	if (t->n + t->n_refused >= t->space)
		return false;
	/* Rejection sampling, then a scan from a random rank: the scan
	 * finds the few points left of a nearly full space. */
	for (int tries = 0; tries < 64; tries++) {
		for (int i = 0; i < t->ps.n; i++)
			idx[i] = (int)(kf_policy_rand(&t->rng) %
				       (uint64_t)t->ps.p[i].n_values);
		if (fresh(t, idx))
			return true;
		if (t->err.code)
			return false;
	}
	int64_t start = (int64_t)(kf_policy_rand(&t->rng) % (uint64_t)t->space);
	for (int64_t k = 0; k < t->space && k < refused_run_max(t); k++) {
		unrank(t, (start + k) % t->space, idx);
		if (fresh(t, idx))
			return true;
		if (t->err.code)
			return false;
	}
	return false;
}

/* A random unvisited neighbour of c (one parameter one step away). */
static bool neighbour(struct kf_tuner *t, const struct point *c, int *idx)
{
	int dims[2 * KF_PARAM_MAX], n = 0;
	for (int d = 0; d < t->ps.n; d++)
		for (int s = -1; s <= 1; s += 2) {
			int v = c->idx[d] + s;
			if (v < 0 || v >= t->ps.p[d].n_values)
				continue;
			memcpy(idx, c->idx, sizeof(int) * (size_t)t->ps.n);
			idx[d] = v;
			if (fresh(t, idx))
				dims[n++] = s < 0 ? -(d + 1) : d + 1;
			if (t->err.code)
				return false;
		}
	if (!n)
		return false;
	int pick = dims[kf_policy_rand(&t->rng) % (uint64_t)n];
	int d = (pick < 0 ? -pick : pick) - 1;
	memcpy(idx, c->idx, sizeof(int) * (size_t)t->ps.n);
	idx[d] += pick < 0 ? -1 : 1;
	return true;
}

static int by_score(const void *a, const void *b)
{
	const struct point *x = *(struct point *const *)a;
	const struct point *y = *(struct point *const *)b;
	return (x->score < y->score) - (x->score > y->score);
}

/*
 * The next point to try, and its parent (the point it neighbours).
 * Returns false when the tuner must wait for results, or is done.
 */
static bool next_point(struct kf_tuner *t, int *idx, int64_t *parent)
{
	*parent = t->parent;
	if (t->strategy == KF_TUNE_EXHAUSTIVE) {
		while (t->next_rank < t->space) {
			unrank(t, t->next_rank++, idx);
			if (fresh(t, idx))
				return true;
			if (t->err.code)
				return false;
		}
		return false;
	}
	if (t->strategy == KF_TUNE_RANDOM)
		return random_point(t, idx);
	if (t->starts_left > 0) {
		t->starts_left--;
		return random_point(t, idx);
	}
	/* Local search: around the best observed point first, then the
	 * next best when all its neighbours were tried. */
	struct point **good = kf_xmalloc(sizeof(*good) * (size_t)(t->n + 1));
	int ng = 0;
	for (int i = 0; i < t->n; i++)
		if (t->pts[i].observed && t->pts[i].ok)
			good[ng++] = &t->pts[i];
	qsort(good, (size_t)ng, sizeof(*good), by_score);
	bool found = false;
	for (int i = 0; i < ng && !found; i++)
		if (neighbour(t, good[i], idx)) {
			found = true;
			if (good[i]->candidate)
				*parent = good[i]->candidate;
		}
	free(good);
	if (found)
		return true;
	/* Nothing near a good point: wait for what is in flight, which may
	 * become one, else restart at random. */
	if (kf_tuner_pending(t) > 0)
		return false;
	return random_point(t, idx);
}

static void halving_propose(struct kf_tuner *t, int max,
			    struct kf_proposal *out, int *n);

static void fill_proposal(struct kf_tuner *t, const int *idx, int64_t parent,
			  struct kf_proposal *p)
{
	memset(p, 0, sizeof(*p));
	p->source = kf_policy_params_apply(t->source, &t->ps, idx);
	p->params = kf_policy_params_json(&t->ps, idx);
	p->origin = t->origin ? kf_xstrdup(t->origin) : NULL;
	p->prompt = t->prompt ? kf_xstrdup(t->prompt) : NULL;
	if (parent > 0)
		p->parents[p->n_parents++] = parent;
}

void kf_tuner_propose(struct kf_tuner *t, int max, struct kf_proposal *out,
		      int *n)
{
	*n = 0;
	if (t->strategy == KF_TUNE_HALVING) {
		halving_propose(t, max, out, n);
		return;
	}
	while (*n < max && !kf_tuner_done(t)) {
		int idx[KF_PARAM_MAX];
		int64_t parent = 0;
		if (!next_point(t, idx, &parent))
			break;
		add(t, idx);
		t->proposed++;
		fill_proposal(t, idx, parent, &out[(*n)++]);
	}
}

static void sha256_hex(const char *text, char hex[65])
{
	struct kf_sha256 h;
	kf_sha256_init(&h);
	kf_sha256_update(&h, text, strlen(text));
	kf_sha256_final_hex(&h, hex);
}

bool kf_tuner_observe(struct kf_tuner *t, const struct kf_observation *obs)
{
	if (!cJSON_IsObject(obs->params) ||
	    cJSON_GetArraySize(obs->params) != t->ps.n)
		return false;
	int idx[KF_PARAM_MAX];
	for (int i = 0; i < t->ps.n; i++) {
		const char *v = kf_json_str(obs->params, t->ps.p[i].name);
		idx[i] = -1;
		for (int k = 0; v && k < t->ps.p[i].n_values; k++)
			if (!strcmp(v, t->ps.p[i].values[k]))
				idx[i] = k;
		if (idx[i] < 0)
			return false;
	}
	/* The same names and values could belong to another source: the
	 * concrete source must be this tuner's. */
	char *src = kf_policy_params_apply(t->source, &t->ps, idx);
	char hex[65];
	sha256_hex(src, hex);
	free(src);
	if (!obs->sha256 || strcmp(hex, obs->sha256))
		return false;
	struct point *p = find(t, idx);
	bool ok = obs->status && !strcmp(obs->status, "ok");
	double score = ok ? obs->score : 0;
	if (t->strategy == KF_TUNE_HALVING) {
		if (!p)
			return false; /* not a point of this halving */
		p->candidate = obs->candidate;
		if (obs->short_timing) {
			if (obs->rung < 0 || obs->rung >= t->rungs)
				return false;
			p->rung_seen |= 1u << obs->rung;
			p->rung_score[obs->rung] = score;
			return true;
		}
		/* A full evaluation answers every rung. */
		p->observed = true;
		p->ok = ok;
		p->score = score;
		for (int r = 0; r < t->rungs; r++) {
			p->rung_seen |= 1u << r;
			p->rung_score[r] = score;
		}
		return true;
	}
	if (obs->short_timing)
		return false;
	if (!p) { /* a point of an earlier session of the run */
		p = add(t, idx);
		t->proposed++;
		if (t->starts_left > 0)
			t->starts_left--;
	}
	p->observed = true;
	p->candidate = obs->candidate;
	p->ok = ok;
	p->score = score;
	return true;
}

/*
 * Successive halving. Its points are drawn once, from the run's seed (so a
 * resumed run has the same ones): every point the rules allow, in random
 * order, when the space has at most HALVING_ENUM points, else random ones.
 * Rung 0 times n of them under the shortest cap; each rung keeps the best
 * ceil(size / eta) of the points that passed; the rung that holds at most
 * eta points is the last, timed fully. n is the most points whose rungs
 * fit the budget: n + ceil(n / eta) + ... evaluations in all.
 */
#define HALVING_ENUM ((int64_t)1 << 16)

static int sizes(int n0, int eta, int *rung_n)
{
	int r = 0;
	rung_n[r++] = n0;
	while (rung_n[r - 1] > eta && r < RUNGS_MAX) {
		rung_n[r] = (rung_n[r - 1] + eta - 1) / eta;
		r++;
	}
	return r;
}

static int total(int n0, int eta)
{
	int rn[RUNGS_MAX];
	int r = sizes(n0, eta, rn), sum = 0;
	for (int i = 0; i < r; i++)
		sum += rn[i];
	return sum;
}

int kf_tuner_set_halving(struct kf_tuner *t, int eta, int budget,
			 double time_cap_s, double min_cap_s, uint64_t run_seed,
			 struct kf_err *err)
{
	t->strategy = KF_TUNE_HALVING;
	t->eta = eta;
	/* The points, in an order drawn from the run's seed. */
	uint64_t rng = run_seed ^ 0x5851f42d4c957f2dull;
	int *cand = NULL, nc = 0;
	if (t->space <= HALVING_ENUM) {
		cand = kf_xmalloc(sizeof(int) * (size_t)t->space);
		for (int64_t r = 0; r < t->space; r++) {
			int idx[KF_PARAM_MAX];
			unrank(t, r, idx);
			int a = kf_policy_params_allowed(&t->ps, idx, err);
			if (a < 0) {
				free(cand);
				return a;
			}
			if (a) {
				cand[nc] = (int)r;
				nc++;
			}
		}
		for (int i = nc - 1; i > 0; i--) {
			int j = (int)(kf_policy_rand(&rng) % (uint64_t)(i + 1));
			int x = cand[i];
			cand[i] = cand[j];
			cand[j] = x;
		}
	}
	int n0 = cand ? nc : budget;
	while (n0 > 1 && total(n0, eta) > budget)
		n0--;
	if (n0 < 1) {
		free(cand);
		return kf_err_set(err, KF_EINVAL,
				  "%s: no point satisfies the KF_PARAM_RULE "
				  "lines",
				  t->ps.origin);
	}
	t->rungs = sizes(n0, eta, t->rung_n);
	for (int r = 0; r < t->rungs; r++) {
		double cap = time_cap_s;
		for (int k = r; k < t->rungs - 1; k++)
			cap /= eta;
		t->rung_cap[r] = r == t->rungs - 1 ? 0
				 : cap < min_cap_s ? min_cap_s
						   : cap;
	}
	t->members = kf_xmalloc(sizeof(int) * (size_t)n0);
	uint64_t session_rng = t->rng;
	t->rng = rng;
	int got = 0;
	for (int i = 0; i < n0; i++) {
		int idx[KF_PARAM_MAX];
		if (cand)
			unrank(t, cand[i], idx);
		else if (!random_point(t, idx))
			break;
		t->members[got++] = t->n;
		add(t, idx);
	}
	t->rng = session_rng;
	free(cand);
	if (t->err.code) {
		*err = t->err;
		return t->err.code;
	}
	if (got < n0) /* a large space with few allowed points */
		t->rungs = sizes(got, eta, t->rung_n);
	if (got == 0)
		return kf_err_set(err, KF_EINVAL,
				  "%s: no point satisfies the KF_PARAM_RULE "
				  "lines",
				  t->ps.origin);
	t->rung = 0;
	return 0;
}

static int by_rung_score(const void *a, const void *b, void *ctx)
{
	const struct kf_tuner *t = ctx;
	const struct point *x = &t->pts[*(const int *)a];
	const struct point *y = &t->pts[*(const int *)b];
	double sx = x->rung_score[t->rung], sy = y->rung_score[t->rung];
	if (sx != sy)
		return (sx < sy) - (sx > sy);
	return (*(const int *)a > *(const int *)b) -
	       (*(const int *)a < *(const int *)b);
}

static void halving_propose(struct kf_tuner *t, int max,
			    struct kf_proposal *out, int *n)
{
	if (t->rungs == 0)
		return;
	/* Move up while the current rung is timed whole. */
	for (;;) {
		int m = t->rung_n[t->rung];
		bool whole = true;
		for (int i = 0; i < m; i++)
			if (!(t->pts[t->members[i]].rung_seen &
			      (1u << t->rung)))
				whole = false;
		if (!whole || t->rung == t->rungs - 1)
			break;
		qsort_r(t->members, (size_t)m, sizeof(int), by_rung_score, t);
		int keep = 0;
		while (keep < m && keep < t->rung_n[t->rung + 1] &&
		       t->pts[t->members[keep]].rung_score[t->rung] > 0)
			keep++;
		if (keep == 0) { /* nothing passed: nothing to time fully */
			t->rungs = 0;
			return;
		}
		t->rung++;
		t->rung_n[t->rung] = keep;
	}
	int m = t->rung_n[t->rung];
	for (int i = 0; i < m && *n < max; i++) {
		struct point *p = &t->pts[t->members[i]];
		uint32_t bit = 1u << t->rung;
		if ((p->rung_proposed | p->rung_seen) & bit)
			continue;
		p->rung_proposed |= bit;
		t->proposed++;
		struct kf_proposal *pr = &out[(*n)++];
		fill_proposal(t, p->idx, t->parent, pr);
		pr->rung = t->rung;
		pr->time_cap_s = t->rung_cap[t->rung];
	}
	if (*n == 0 && t->rung == t->rungs - 1 && kf_tuner_pending(t) == 0)
		t->rungs = 0; /* the last rung is timed: done */
}

int kf_tuner_error(const struct kf_tuner *t, struct kf_err *err)
{
	if (!t->err.code)
		return 0;
	*err = t->err;
	return t->err.code;
}

void kf_tuner_set_strategy(struct kf_tuner *t, enum kf_tune_strategy s)
{
	t->strategy = s;
}

const char *const kf_tune_strategy_names[] = {"local", "random", "exhaustive",
					      "halving", NULL};

/* The tune policy: one tuner over the source named by options.from. */
struct tune_policy {
	struct kf_tuner *t;
};

static int tune_open(const struct kf_policy_env *env, void **state,
		     struct kf_err *err)
{
	const char *from = kf_json_str(env->options, "from");
	if (!from)
		return kf_err_set(err, KF_EINVAL,
				  "tune: no source to tune (give --from FILE, "
				  "a source that declares KF_PARAM)");
	char *src = NULL;
	struct kf_params ps;
	int rc = kf_file_read(from, KF_STORE_SOURCE_CAP, &src, NULL, err);
	if (rc)
		return rc;
	rc = kf_policy_params_parse(src, from, &ps, err);
	if (!rc && ps.n == 0)
		rc = kf_err_set(err, KF_EINVAL,
				"%s: declares no KF_PARAM: nothing to tune",
				from);
	if (rc) {
		free(src);
		return rc;
	}
	int starts = (int)kf_json_num(env->options, "starts", 0);
	if (starts <= 0) {
		/* A quarter of the budget, between 2 and 8. */
		starts = env->budget / 4;
		starts = starts < 2 ? 2 : starts > 8 ? 8 : starts;
	}
	const char *sname = kf_json_str(env->options, "strategy");
	int strategy = -1;
	for (int i = 0; kf_tune_strategy_names[i]; i++)
		if (!strcmp(sname ? sname : "local", kf_tune_strategy_names[i]))
			strategy = i;
	if (strategy < 0) {
		free(src);
		return kf_err_set(err, KF_EINVAL,
				  "--tune-strategy: unknown strategy '%s' (one "
				  "of local, random, exhaustive, halving)",
				  sname);
	}
	double eta = 3;
	rc = kf_policy_option(env->options, "halving_eta", "--halving-eta", 3,
			      2, 16, &eta, err);
	if (!rc && strategy != KF_TUNE_HALVING &&
	    cJSON_GetObjectItem(env->options, "halving_eta"))
		rc = kf_err_set(err, KF_EINVAL,
				"--halving-eta: applies to --tune-strategy "
				"halving, not %s",
				kf_tune_strategy_names[strategy]);
	if (rc) {
		free(src);
		return rc;
	}
	struct tune_policy *tp = kf_xcalloc(1, sizeof(*tp));
	tp->t = kf_tuner_new(src, &ps, starts, 0, env->seed, from, NULL, 0);
	free(src);
	kf_tuner_set_strategy(tp->t, (enum kf_tune_strategy)strategy);
	if (strategy == KF_TUNE_HALVING) {
		double cap = env->time_cap_s > 0 ? env->time_cap_s : 10;
		rc = kf_tuner_set_halving(tp->t, (int)eta, env->budget, cap,
					  KF_TUNE_MIN_CAP_S, env->run_seed,
					  err);
		if (rc) {
			kf_tuner_free(tp->t);
			free(tp);
			return rc;
		}
	}
	*state = tp;
	return 0;
}

static int tune_propose(void *state, int max, struct kf_proposal *out, int *n,
			struct kf_err *err)
{
	struct tune_policy *tp = state;
	kf_tuner_propose(tp->t, max, out, n);
	return kf_tuner_error(tp->t, err);
}

static void tune_observe(void *state, const struct kf_observation *obs)
{
	struct tune_policy *tp = state;
	kf_tuner_observe(tp->t, obs);
}

static void tune_close(void *state)
{
	struct tune_policy *tp = state;
	if (!tp)
		return;
	kf_tuner_free(tp->t);
	free(tp);
}

const struct kf_policy_ops kf_policy_tune_ops = {
    .version = KF_POLICY_OPS_VERSION,
    .name = "tune",
    .open = tune_open,
    .propose = tune_propose,
    .observe = tune_observe,
    .close = tune_close,
};
