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

struct point {
	int idx[KF_PARAM_MAX];
	int64_t candidate; /* store id once observed, else 0 */
	double score;	   /* speedup when ok, else 0 */
	bool observed;
	bool ok;
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
	free(t);
}

static struct point *find(struct kf_tuner *t, const int *idx)
{
	for (int i = 0; i < t->n; i++)
		if (!memcmp(t->pts[i].idx, idx, sizeof(int) * (size_t)t->ps.n))
			return &t->pts[i];
	return NULL;
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
	for (int i = 0; i < t->n; i++)
		n += !t->pts[i].observed;
	return n;
}

bool kf_tuner_done(const struct kf_tuner *t)
{
	if (t->max_evals > 0 && t->proposed >= t->max_evals)
		return true;
	return t->n >= t->space && kf_tuner_pending(t) == 0;
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
	if (t->n >= t->space)
		return false;
	/* Rejection sampling, then a scan from a random rank: the scan
	 * finds the few points left of a nearly full space. */
	for (int tries = 0; tries < 64; tries++) {
		for (int i = 0; i < t->ps.n; i++)
			idx[i] = (int)(kf_policy_rand(&t->rng) %
				       (uint64_t)t->ps.p[i].n_values);
		if (!find(t, idx))
			return true;
	}
	int64_t start = (int64_t)(kf_policy_rand(&t->rng) % (uint64_t)t->space);
	for (int64_t k = 0; k < t->space && k < 1000000; k++) {
		unrank(t, (start + k) % t->space, idx);
		if (!find(t, idx))
			return true;
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
			if (!find(t, idx))
				dims[n++] = s < 0 ? -(d + 1) : d + 1;
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

void kf_tuner_propose(struct kf_tuner *t, int max, struct kf_proposal *out,
		      int *n)
{
	*n = 0;
	while (*n < max && !kf_tuner_done(t)) {
		int idx[KF_PARAM_MAX];
		int64_t parent = 0;
		if (!next_point(t, idx, &parent))
			break;
		add(t, idx);
		t->proposed++;
		struct kf_proposal *p = &out[(*n)++];
		memset(p, 0, sizeof(*p));
		p->source = kf_policy_params_apply(t->source, &t->ps, idx);
		p->params = kf_policy_params_json(&t->ps, idx);
		p->origin = t->origin ? kf_xstrdup(t->origin) : NULL;
		p->prompt = t->prompt ? kf_xstrdup(t->prompt) : NULL;
		if (parent > 0)
			p->parents[p->n_parents++] = parent;
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
	if (!p) { /* a point of an earlier session of the run */
		p = add(t, idx);
		t->proposed++;
		if (t->starts_left > 0)
			t->starts_left--;
	}
	p->observed = true;
	p->candidate = obs->candidate;
	p->ok = obs->status && !strcmp(obs->status, "ok");
	p->score = p->ok ? obs->speedup : 0;
	return true;
}

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
	struct tune_policy *tp = kf_xcalloc(1, sizeof(*tp));
	tp->t = kf_tuner_new(src, &ps, starts, 0, env->seed, from, NULL, 0);
	free(src);
	*state = tp;
	return 0;
}

static int tune_propose(void *state, int max, struct kf_proposal *out, int *n,
			struct kf_err *err)
{
	(void)err;
	struct tune_policy *tp = state;
	kf_tuner_propose(tp->t, max, out, n);
	return 0;
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
