/*
 * reward.c: reward items from result JSON, the table of built-in designs,
 * their parameters, and kf_reward_score, which runs a design over a group
 * and checks that every correct item scored above every incorrect one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reward_int.h"

int kf_reward_item_from_result(const cJSON *result, int trials_planned,
			       struct kf_reward_item *it, struct kf_err *err)
{
	struct kf_reward_item v = KF_REWARD_ITEM_INIT;
	if (!cJSON_IsObject(result))
		return kf_err_set(err, KF_EINVAL, "result: not a JSON object");
	if (trials_planned < 0)
		return kf_err_set(err, KF_EINVAL,
				  "result: trials planned is %d, below 0",
				  trials_planned);
	const char *st = kf_json_str(result, "status");
	if (!st)
		return kf_err_set(err, KF_EINVAL,
				  "result: status is missing or not a string");
	int found = 0;
	for (int i = 0; i <= KF_STATUS_INFRA_ERROR && !found; i++) {
		if (!strcmp(st, kf_status_name((enum kf_status)i))) {
			v.status = (enum kf_status)i;
			found = 1;
		}
	}
	if (!found) {
		char shown[65];
		snprintf(shown, sizeof(shown), "%s", st);
		kf_text_sanitize(shown);
		return kf_err_set(err, KF_EINVAL, "result: unknown status '%s'",
				  shown);
	}
	const cJSON *cand = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(result, "compile"), "candidate");
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(cand, "ok");
	if (!cJSON_IsBool(ok))
		return kf_err_set(err, KF_EINVAL,
				  "result: compile.candidate.ok is missing or "
				  "not a boolean");
	v.compiled = cJSON_IsTrue(ok);

	const cJSON *trials =
	    cJSON_GetObjectItemCaseSensitive(result, "trials");
	int run = 0, passed = 0;
	if (trials && !cJSON_IsArray(trials))
		return kf_err_set(err, KF_EINVAL,
				  "result: trials is not an array");
	const cJSON *t;
	cJSON_ArrayForEach(t, trials)
	{
		run++;
		passed +=
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "passed"));
	}
	/* The engine may run more trials than were asked for (every input
	 * distribution at every dim set): then those are the plan. */
	int planned = trials_planned > run ? trials_planned : run;
	v.pass_fraction = planned ? (double)passed / planned : 0.0;

	const cJSON *med = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(result, "timing"), "speedup"),
	    "median");
	if (cJSON_IsNumber(med))
		v.speedup = med->valuedouble;
	*it = v;
	return 0;
}

bool kf_reward_item_correct(const struct kf_reward_item *it)
{
	return it->status == KF_STATUS_OK;
}

bool kf_reward_item_scored(const struct kf_reward_item *it)
{
	return it->status != KF_STATUS_INFRA_ERROR;
}

double kf_reward_item_speedup(const struct kf_reward_item *it)
{
	double s = it->speedup;
	if (!isfinite(s) || !(s > 0))
		return 1.0;
	if (s > KF_REWARD_SPEEDUP_MAX)
		return KF_REWARD_SPEEDUP_MAX;
	return s < 1 / KF_REWARD_SPEEDUP_MAX ? 1 / KF_REWARD_SPEEDUP_MAX : s;
}

double kf_reward_item_q(const struct kf_reward_item *it)
{
	double q = it->pass_fraction;
	if (!(q > 0)) /* NaN too */
		return 0.0;
	return q < 1 ? q : 1.0;
}

static const struct kf_reward_ops *const designs[] = {
    &kf_reward_log_speedup_ops,
    &kf_reward_cuda_l1_ops,
    &kf_reward_musacoder_ops,
    &kf_reward_leap_rank_ops,
};
#define N_DESIGNS (sizeof(designs) / sizeof(designs[0]))

const struct kf_reward_ops *kf_reward_at(size_t i)
{
	return i < N_DESIGNS ? designs[i] : NULL;
}

const struct kf_reward_ops *kf_reward_find(const char *name)
{
	for (size_t i = 0; name && i < N_DESIGNS; i++)
		if (!strcmp(designs[i]->name, name))
			return designs[i];
	return NULL;
}

/* "a, b, c": the names of ops' parameters, or "none". */
static void param_names(const struct kf_reward_ops *ops, struct kf_strbuf *sb)
{
	if (ops->n_params == 0)
		kf_strbuf_addstr(sb, "none");
	for (int i = 0; i < ops->n_params; i++)
		kf_strbuf_addf(sb, "%s%s", i ? ", " : "", ops->params[i].name);
}

static int range_error(const struct kf_reward_ops *ops,
		       const struct kf_reward_param *p, double v,
		       struct kf_err *err)
{
	if (isinf(p->max))
		return kf_err_set(err, KF_EINVAL,
				  "%s: parameter '%s' must be at least %g, "
				  "got %g",
				  ops->name, p->name, p->min, v);
	return kf_err_set(
	    err, KF_EINVAL,
	    "%s: parameter '%s' must be between %g and %g, got %g", ops->name,
	    p->name, p->min, p->max, v);
}

static int check_ops(const struct kf_reward_ops *ops, struct kf_err *err)
{
	if (!ops || !ops->name)
		return kf_err_set(err, KF_EINVAL, "reward design has no name");
	if (ops->version != KF_REWARD_OPS_VERSION)
		return kf_err_set(err, KF_EINVAL,
				  "%s: ops table version %d, kforge expects %d",
				  ops->name, ops->version,
				  KF_REWARD_OPS_VERSION);
	if (!ops->item == !ops->group)
		return kf_err_set(err, KF_EINVAL,
				  "%s: ops table must set exactly one of item "
				  "and group",
				  ops->name);
	if (ops->n_params < 0 || ops->n_params > KF_REWARD_MAX_PARAMS ||
	    (ops->n_params > 0 && !ops->params))
		return kf_err_set(
		    err, KF_EINVAL,
		    "%s: ops table has %d parameters (at most %d)", ops->name,
		    ops->n_params, KF_REWARD_MAX_PARAMS);
	for (int i = 0; i < ops->n_params; i++) {
		const struct kf_reward_param *p = &ops->params[i];
		if (!p->name || !(p->dflt >= p->min && p->dflt <= p->max))
			return kf_err_set(err, KF_EINVAL,
					  "%s: parameter %d has no name or a "
					  "default outside its range",
					  ops->name, i);
	}
	return 0;
}

static int parse_params(struct kf_reward *r, const cJSON *params,
			struct kf_err *err)
{
	const struct kf_reward_ops *ops = r->ops;
	bool seen[KF_REWARD_MAX_PARAMS] = {false};
	if (!params)
		return 0;
	if (!cJSON_IsObject(params))
		return kf_err_set(err, KF_EINVAL,
				  "%s: parameters must be a JSON object",
				  ops->name);
	const cJSON *kv;
	cJSON_ArrayForEach(kv, params)
	{
		char key[65];
		snprintf(key, sizeof(key), "%s", kv->string ? kv->string : "");
		kf_text_sanitize(key);
		int k = -1;
		for (int i = 0; i < ops->n_params && k < 0; i++)
			if (kv->string &&
			    !strcmp(kv->string, ops->params[i].name))
				k = i;
		if (k < 0) {
			struct kf_strbuf sb = KF_STRBUF_INIT;
			param_names(ops, &sb);
			kf_err_set(err, KF_EINVAL,
				   "%s: unknown parameter '%s' (known: %s)",
				   ops->name, key, kf_strbuf_str(&sb));
			kf_strbuf_release(&sb);
			return KF_EINVAL;
		}
		if (seen[k])
			return kf_err_set(err, KF_EINVAL,
					  "%s: parameter '%s' is given twice",
					  ops->name, key);
		seen[k] = true;
		if (!cJSON_IsNumber(kv) || !isfinite(kv->valuedouble))
			return kf_err_set(err, KF_EINVAL,
					  "%s: parameter '%s' must be a finite "
					  "number",
					  ops->name, key);
		double v = kv->valuedouble;
		if (v < ops->params[k].min || v > ops->params[k].max)
			return range_error(ops, &ops->params[k], v, err);
		r->param[k] = v;
	}
	return 0;
}

int kf_reward_init_ops(struct kf_reward *r, const struct kf_reward_ops *ops,
		       const cJSON *params, struct kf_err *err)
{
	struct kf_reward v = KF_REWARD_INIT;
	int rc = check_ops(ops, err);
	if (rc)
		return rc;
	v.ops = ops;
	for (int i = 0; i < ops->n_params; i++)
		v.param[i] = ops->params[i].dflt;
	rc = parse_params(&v, params, err);
	if (rc)
		return rc;
	if (ops->check) {
		rc = ops->check(v.param, err);
		if (rc) {
			kf_err_prefix(err, "%s", ops->name);
			return rc;
		}
	}
	*r = v;
	return 0;
}

int kf_reward_init(struct kf_reward *r, const char *name, const cJSON *params,
		   struct kf_err *err)
{
	const struct kf_reward_ops *ops = kf_reward_find(name);
	if (!ops) {
		char shown[65];
		snprintf(shown, sizeof(shown), "%s", name ? name : "");
		kf_text_sanitize(shown);
		struct kf_strbuf sb = KF_STRBUF_INIT;
		for (size_t i = 0; i < N_DESIGNS; i++)
			kf_strbuf_addf(&sb, "%s%s", i ? ", " : "",
				       designs[i]->name);
		kf_err_set(err, KF_EINVAL, "unknown reward '%s' (known: %s)",
			   shown, kf_strbuf_str(&sb));
		kf_strbuf_release(&sb);
		return KF_EINVAL;
	}
	return kf_reward_init_ops(r, ops, params, err);
}

double kf_reward_param(const struct kf_reward *r, const char *name)
{
	for (int i = 0; r->ops && name && i < r->ops->n_params; i++)
		if (!strcmp(r->ops->params[i].name, name))
			return r->param[i];
	return NAN;
}

cJSON *kf_reward_json(const struct kf_reward *r)
{
	KF_ASSERT(r->ops);
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", r->ops->name);
	cJSON *p = cJSON_AddObjectToObject(j, "params");
	for (int i = 0; i < r->ops->n_params; i++)
		cJSON_AddNumberToObject(p, r->ops->params[i].name, r->param[i]);
	return j;
}

/* Checks the design's contract over the scored items of out. */
static int check_group(const struct kf_reward *r,
		       const struct kf_reward_item *items, size_t n,
		       const double *out, struct kf_err *err)
{
	size_t lo = n, hi = n; /* lowest correct, highest incorrect */
	for (size_t i = 0; i < n; i++) {
		if (!kf_reward_item_scored(&items[i]))
			continue;
		if (!isfinite(out[i]))
			return kf_err_set(err, KF_EINVAL,
					  "%s: item %zu got a non-finite "
					  "reward",
					  r->ops->name, i);
		if (kf_reward_item_correct(&items[i])) {
			if (lo == n || out[i] < out[lo])
				lo = i;
		} else if (hi == n || out[i] > out[hi]) {
			hi = i;
		}
	}
	if (lo < n && hi < n && !(out[lo] > out[hi]))
		return kf_err_set(err, KF_EINVAL,
				  "%s: correct item %zu scored %g, not above "
				  "incorrect item %zu (%g)",
				  r->ops->name, lo, out[lo], hi, out[hi]);
	return 0;
}

int kf_reward_score(const struct kf_reward *r,
		    const struct kf_reward_item *items, size_t n, double *out,
		    struct kf_err *err)
{
	KF_ASSERT(r->ops);
	const struct kf_reward_ops *ops = r->ops;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		out[i] = NAN;
		m += kf_reward_item_scored(&items[i]);
	}
	if (m == 0)
		return 0;
	if (ops->item) {
		for (size_t i = 0; i < n; i++)
			if (kf_reward_item_scored(&items[i]))
				out[i] = ops->item(&items[i], r->param);
	} else {
		/* The group sees its scored items only, so infra errors
		 * never move a mean, a std or a rank. */
		struct kf_reward_item *sub = kf_xcalloc(m, sizeof(*sub));
		double *got = kf_xcalloc(m, sizeof(*got));
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (kf_reward_item_scored(&items[i]))
				sub[k++] = items[i];
		ops->group(sub, m, r->param, got);
		k = 0;
		for (size_t i = 0; i < n; i++)
			if (kf_reward_item_scored(&items[i]))
				out[i] = got[k++];
		free(sub);
		free(got);
	}
	int rc = check_group(r, items, n, out, err);
	if (rc)
		for (size_t i = 0; i < n; i++)
			out[i] = NAN;
	return rc;
}

static bool objective_is(const char *o, const char *name)
{
	return !strcmp(o ? o : "time", name);
}

double kf_reward_objective_ratio(const char *objective, const cJSON *result,
				  const char **why)
{
	const char *st = kf_json_str(result, "status");
	const cJSON *tm = cJSON_GetObjectItem(result, "timing");
	const cJSON *sp =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(tm, "speedup"), "median");
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	if (!st || strcmp(st, "ok")) {
		*why = "it did not pass";
		return 0;
	}
	if (objective_is(objective, "time")) {
		if (!cJSON_IsNumber(sp))
			*why = "it has no timing";
		return cJSON_IsNumber(sp) ? sp->valuedouble : 0;
	}
	const cJSON *e = cJSON_GetObjectItem(result, "energy");
	double jc = kf_json_num(cJSON_GetObjectItem(e, "candidate"),
				"joules_per_call", 0);
	double jr = kf_json_num(cJSON_GetObjectItem(e, "reference"),
				"joules_per_call", 0);
	if (!(jc > 0 && jr > 0)) {
		*why = "its result has no energy measurement";
		return 0;
	}
	if (objective_is(objective, "energy"))
		return jr / jc;
	double tc = kf_json_num(cJSON_GetObjectItem(tm, "candidate"), "median",
				0);
	double tr = kf_json_num(cJSON_GetObjectItem(tm, "reference"), "median",
				0);
	if (!(tc > 0 && tr > 0)) {
		*why = "it has no timing";
		return 0;
	}
	return (jr * tr) / (jc * tc);
}

void kf_reward_item_objective(struct kf_reward_item *it, const char *objective,
			      const cJSON *result)
{
	if (objective_is(objective, "time") || it->status != KF_STATUS_OK)
		return;
	double v = kf_reward_objective_ratio(objective, result, NULL);
	it->speedup = v > 0 ? v : NAN;
}
