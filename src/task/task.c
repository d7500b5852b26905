/*
 * task.c: loads and validates a native task (task.json, see docs/tasks.md)
 * so that every later stage can trust it; a malformed spec is rejected here
 * with "<file>: <field>: <why>". Also finds tasks and their references.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kforge/task.h>

#include "task_int.h"

#define TASK_JSON_CAP (1u << 20) /* bytes */
#define MAX_NAME_LEN 64
#define MAX_DIMS 32
#define MAX_DIMSETS 64 /* "dims" and the hidden sets together */
#define MAX_LIBRARIES 32
#define MAX_CALL_TIMEOUT_MS 3600000.0
/* Dimensions and integer parameters are kept exactly in doubles. */
#define MAX_EXACT 9007199254740992.0 /* 2^53 */

static const char *const dtype_list =
    "float32, float64, float16, bfloat16, int32, int64";

struct loader {
	const char *path; /* task.json as the caller named it, for messages */
	struct kf_task *t;
	struct kf_err *err;
	/* "name" differs from the directory's: said after the rest of the
	 * file is checked, with any other error (a copied task's). */
	char *misnamed;
};

/* Fails with "<path>: <field>: <why>". */
static int bad(struct loader *ld, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(struct loader *ld, const char *field, const char *fmt, ...)
{
	char why[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return kf_err_set(ld->err, KF_EINVAL, "%s: %s: %s", ld->path, field,
			  why);
}

static const char *json_type(const cJSON *j)
{
	if (cJSON_IsObject(j))
		return "object";
	if (cJSON_IsArray(j))
		return "array";
	if (cJSON_IsString(j))
		return "string";
	if (cJSON_IsNumber(j))
		return "number";
	if (cJSON_IsBool(j))
		return "boolean";
	if (cJSON_IsNull(j))
		return "null";
	return "invalid";
}

/* "prefix.key", or "key" at the top level. */
static void field_key(char *buf, size_t n, const char *prefix, const char *key)
{
	if (*prefix)
		snprintf(buf, n, "%s.%s", prefix, key);
	else
		snprintf(buf, n, "%s", key);
}

static bool is_pos_int(double v)
{
	return v >= 1 && v <= MAX_EXACT && v == floor(v);
}

static bool is_int(double v)
{
	return fabs(v) <= MAX_EXACT && v == floor(v);
}

static bool is_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > MAX_NAME_LEN)
		return false;
	if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') ||
	      (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (!(c == '_' || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/*
 * Rejects keys of obj that are not in allowed (NULL-terminated), and keys
 * given twice: cJSON keeps both and a reader would silently take the first.
 */
static int check_keys(struct loader *ld, const cJSON *obj, const char *prefix,
		      const char *const *allowed, const char *expected)
{
	char field[256];
	for (const cJSON *c = obj->child; c; c = c->next) {
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(c->string, *a) == 0)
				ok = true;
		field_key(field, sizeof(field), prefix, c->string);
		if (!ok)
			return bad(ld, field, "unknown key (expected %s)",
				   expected);
		for (const cJSON *p = obj->child; p != c; p = p->next)
			if (strcmp(p->string, c->string) == 0)
				return bad(ld, field, "duplicate key");
	}
	return 0;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int missing(struct loader *ld, const char *field)
{
	return bad(ld, field, "required field is missing");
}

/* v for a message: printf's "%g" would show 0/0 as "-nan". */
static const char *fmt_num(double v, char *buf, size_t n)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "inf" : "-inf";
	snprintf(buf, n, "%g", v);
	return buf;
}

/* "dims" for set 0, "hidden_dims[k]" for the fixed hidden sets,
 * "cuda_dims", and "hidden" for a set drawn from the ranges. */
static void set_label(const struct kf_task *t, int s, char *buf, size_t n)
{
	if (s == 0)
		snprintf(buf, n, "dims");
	else if (s == t->cuda_dimset)
		snprintf(buf, n, "cuda_dims");
	else if (s < t->n_fixed_dimsets)
		snprintf(buf, n, "hidden_dims[%d]", s - 1);
	else
		snprintf(buf, n, "hidden");
}

/* " under hidden_dims[0] (N=7)", or "" for an expression without names. */
static void where(const struct kf_task *t, const struct kf_expr *e, int s,
		  char *buf, size_t n)
{
	if (kf_expr_is_const(e)) {
		buf[0] = 0;
		return;
	}
	char label[32];
	set_label(t, s, label, sizeof(label));
	char *dims = kf_task_dims_str(t, s);
	snprintf(buf, n, " under %s (%s)", label, dims);
	free(dims);
}

/*
 * An expression field: a string is parsed over the dims, a number becomes
 * a constant. It must be finite in every dimension set, and >= 0 when
 * nonneg is set, so that no later stage meets a NaN.
 */
static int parse_expr_field(struct loader *ld, const cJSON *j,
			    const char *field, bool nonneg,
			    struct kf_expr **out)
{
	struct kf_task *t = ld->t;
	struct kf_expr *e = NULL;
	*out = NULL;
	if (cJSON_IsNumber(j)) {
		if (!isfinite(j->valuedouble))
			return bad(ld, field, "number out of range");
		e = kf_expr_const(j->valuedouble);
	} else if (cJSON_IsString(j)) {
		struct kf_err e2 = KF_ERR_INIT;
		if (kf_expr_parse(j->valuestring,
				  (const char *const *)t->dim_names, t->n_dims,
				  &e, &e2))
			return bad(ld, field, "%s", e2.msg);
	} else {
		return bad(ld, field,
			   "must be a number or an expression string, got %s",
			   json_type(j));
	}
	for (int s = 0; s < t->n_dimsets; s++) {
		double v = kf_expr_eval(e, kf_task_dims(t, s));
		char at[300], num[32];
		if (isfinite(v) && (!nonneg || v >= 0))
			continue;
		where(t, e, s, at, sizeof(at));
		int rc = bad(ld, field, "'%s' is %s%s; %s", kf_expr_src(e),
			     fmt_num(v, num, sizeof(num)), at,
			     isfinite(v) ? "it must not be negative"
					 : "it must be a finite number");
		kf_expr_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

static int parse_dims(struct loader *ld, const cJSON *j)
{
	struct kf_task *t = ld->t;
	char field[256];
	if (!j)
		return missing(ld, "dims");
	if (!cJSON_IsObject(j))
		return bad(ld, "dims", "must be an object, got %s",
			   json_type(j));
	int n = cJSON_GetArraySize(j);
	if (n < 1)
		return bad(ld, "dims",
			   "must name at least one dimension (hidden sets "
			   "must differ from it)");
	if (n > MAX_DIMS)
		return bad(ld, "dims", "%d dimensions, at most %d", n,
			   MAX_DIMS);
	t->dim_names = kf_xcalloc((size_t)n, sizeof(*t->dim_names));
	/* Room for every set the spec may give, so that sets are filled in
	 * place; n_dimsets counts the filled ones. */
	t->dimsets = kf_xcalloc((size_t)n * (MAX_DIMSETS + 2), sizeof(int64_t));
	for (const cJSON *c = j->child; c; c = c->next) {
		field_key(field, sizeof(field), "dims", c->string);
		if (!is_name(c->string))
			return bad(ld, field,
				   "'%s' is not a valid dimension name "
				   "(letters, digits and '_', not starting "
				   "with a digit, at most %d characters)",
				   c->string, MAX_NAME_LEN);
		if (!strcmp(c->string, "min") || !strcmp(c->string, "max") ||
		    !strcmp(c->string, "cdiv"))
			return bad(ld, field,
				   "'%s' is the name of a function of "
				   "expressions",
				   c->string);
		for (int i = 0; i < t->n_dims; i++)
			if (!strcmp(t->dim_names[i], c->string))
				return bad(ld, field, "duplicate key");
		if (!cJSON_IsNumber(c) || !is_pos_int(c->valuedouble)) {
			if (cJSON_IsNumber(c))
				return bad(ld, field,
					   "must be a positive integer, got "
					   "%g",
					   c->valuedouble);
			return bad(ld, field,
				   "must be a positive integer, got %s",
				   json_type(c));
		}
		t->dimsets[t->n_dims] = (int64_t)c->valuedouble;
		t->dim_names[t->n_dims++] = kf_xstrdup(c->string);
	}
	t->n_dimsets = 1;
	t->n_fixed_dimsets = 1;
	t->cuda_dimset = -1;
	return 0;
}

/* One set of dims: an object giving every dimension of "dims" a positive
 * integer, stored into v in the order of dim_names. */
static int parse_set(struct loader *ld, const cJSON *h, const char *item,
		     int64_t *v)
{
	struct kf_task *t = ld->t;
	char field[256];
	if (!cJSON_IsObject(h))
		return bad(ld, item, "must be an object, got %s", json_type(h));
	for (const cJSON *c = h->child; c; c = c->next) {
		field_key(field, sizeof(field), item, c->string);
		int d = 0;
		while (d < t->n_dims && strcmp(t->dim_names[d], c->string) != 0)
			d++;
		if (d == t->n_dims) {
			struct kf_strbuf sb = KF_STRBUF_INIT;
			for (int i = 0; i < t->n_dims; i++)
				kf_strbuf_addf(&sb, "%s%s", i ? ", " : "",
					       t->dim_names[i]);
			int rc = bad(ld, field, "not a dimension of dims (%s)",
				     kf_strbuf_str(&sb));
			kf_strbuf_release(&sb);
			return rc;
		}
		for (const cJSON *p = h->child; p != c; p = p->next)
			if (!strcmp(p->string, c->string))
				return bad(ld, field, "duplicate key");
		if (!cJSON_IsNumber(c))
			return bad(ld, field,
				   "must be a positive integer, got %s",
				   json_type(c));
		if (!is_pos_int(c->valuedouble))
			return bad(ld, field,
				   "must be a positive integer, got %g",
				   c->valuedouble);
		v[d] = (int64_t)c->valuedouble;
	}
	for (int d = 0; d < t->n_dims; d++)
		if (!get(h, t->dim_names[d]))
			return bad(ld, item,
				   "dimension '%s' is missing (each set gives "
				   "every dimension of dims)",
				   t->dim_names[d]);
	return 0;
}

/* "hidden_dims": fixed hidden sets, public in the spec. With "hidden"
 * (ranges drawn from per evaluation) they are optional; alone, at least
 * two are required. */
static int parse_hidden_dims(struct loader *ld, const cJSON *j, bool ranges)
{
	struct kf_task *t = ld->t;
	char item[64];
	if (!j && ranges)
		return 0;
	if (!j)
		return bad(ld, "hidden",
			   "required field is missing (ranges to draw hidden "
			   "sets from, {\"N\": [1, 4097]}; or hidden_dims, "
			   "fixed sets)");
	if (!cJSON_IsArray(j))
		return bad(ld, "hidden_dims", "must be an array, got %s",
			   json_type(j));
	int n = cJSON_GetArraySize(j);
	if (n < (ranges ? 1 : 2))
		return bad(ld, "hidden_dims",
			   "%d set%s given, at least %d %s required%s", n,
			   n == 1 ? "" : "s", ranges ? 1 : 2,
			   ranges ? "is" : "are",
			   ranges ? "" : " (or ranges in hidden)");
	if (n + 2 > MAX_DIMSETS)
		return bad(ld, "hidden_dims", "%d sets, at most %d", n,
			   MAX_DIMSETS - 2);
	int k = 0;
	for (const cJSON *h = j->child; h; h = h->next, k++) {
		snprintf(item, sizeof(item), "hidden_dims[%d]", k);
		int64_t *v = t->dimsets + (size_t)(k + 1) * t->n_dims;
		int rc = parse_set(ld, h, item, v);
		if (rc)
			return rc;
		if (!memcmp(v, t->dimsets, (size_t)t->n_dims * sizeof(*v)))
			return bad(ld, item,
				   "the same as dims; a hidden set must "
				   "differ from the timing dims, so that a "
				   "candidate that hard-codes them fails");
		t->n_dimsets++;
	}
	t->n_fixed_dimsets = t->n_dimsets;
	return 0;
}

/* "cuda_dims": the timing dims on the cuda backend (a GPU needs far larger
 * problems than a CPU core to be measured well). Parsed into the slot after
 * the hidden sets and counted among them until loading ends, so that every
 * check of shapes and expressions covers it too. */
static int parse_cuda_dims(struct loader *ld, const cJSON *j)
{
	struct kf_task *t = ld->t;
	t->cuda_dimset = -1;
	if (!j)
		return 0;
	int64_t *v = t->dimsets + (size_t)t->n_dimsets * t->n_dims;
	int rc = parse_set(ld, j, "cuda_dims", v);
	if (rc)
		return rc;
	for (int s = 1; s < t->n_dimsets; s++)
		if (!memcmp(v, t->dimsets + (size_t)s * t->n_dims,
			    (size_t)t->n_dims * sizeof(*v)))
			return bad(ld, "cuda_dims",
				   "the same as hidden_dims[%d]; hidden sets "
				   "must differ from the timing dims",
				   s - 1);
	t->cuda_dimset = t->n_dimsets++;
	return 0;
}

/* Indexed by enum kf_dist_kind. */
static const struct dist_info {
	const char *name;
	const char *param[2];
	double dflt[2];
	unsigned required; /* bit i: param[i] has no default */
} dist_infos[] = {
    [KF_DIST_NORMAL] = {"normal", {"mean", "std"}, {0, 1}, 0},
    [KF_DIST_UNIFORM] = {"uniform", {"low", "high"}, {-1, 1}, 0},
    [KF_DIST_HEAVY] = {"heavy", {"scale", "clip"}, {1, 1000}, 0},
    [KF_DIST_WIDE] = {"wide", {"min_exp", "max_exp"}, {-4, 4}, 0},
    [KF_DIST_INT] = {"int", {"low", "high"}, {0, 0}, 2},
    [KF_DIST_CONST] = {"const", {"value", NULL}, {0, 0}, 1},
    [KF_DIST_LARGE] = {"large", {"scale", "mean"}, {100, 0}, 0},
    /* The defaults are the dtype's subnormal exponents (dist_defaults). */
    [KF_DIST_DENORMAL] = {"denormal", {"min_exp2", "max_exp2"}, {0, 0}, 0},
    [KF_DIST_TIES] = {"ties", {"levels", "scale"}, {4, 1}, 0},
    [KF_DIST_NEGATIVE] = {"negative", {"scale", "max"}, {1, -0.5}, 0},
    [KF_DIST_ZEROS] = {"zeros", {"fraction", "std"}, {0.5, 1}, 0},
    [KF_DIST_BITS] = {"bits", {NULL, NULL}, {0, 0}, 0},
};

/* The default parameters of kind k for a tensor of dtype dt: those of the
 * table, but for denormal the binary exponents of dt's subnormals. */
static void dist_defaults(enum kf_dist_kind k, enum kf_dtype dt, double p[2])
{
	p[0] = dist_infos[k].dflt[0];
	p[1] = dist_infos[k].dflt[1];
	if (k != KF_DIST_DENORMAL)
		return;
	switch (dt) {
	case KF_F64:
		p[0] = -1074, p[1] = -1023;
		break;
	case KF_F16:
		p[0] = -24, p[1] = -15;
		break;
	case KF_BF16:
		p[0] = -133, p[1] = -127;
		break;
	default:
		p[0] = -149, p[1] = -127;
		break;
	}
}
#define N_DIST_INFOS (int)(sizeof(dist_infos) / sizeof(dist_infos[0]))

static const struct dist_info *dist_lookup(const char *name)
{
	for (int i = 0; i < N_DIST_INFOS; i++)
		if (!strcmp(dist_infos[i].name, name))
			return &dist_infos[i];
	return NULL;
}

char *kf_dist_label(const struct kf_task *t, const struct kf_dist *d, int s)
{
	const struct dist_info *di = &dist_infos[d->kind];
	double p[2];
	kf_dist_params(t, d, s, p);
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, di->name);
	int given = 0;
	for (int i = 0; i < 2; i++) {
		if (!d->p_expr[i] || !di->param[i])
			continue;
		kf_strbuf_addf(&sb, "%s%s=%g", given++ ? ", " : "(",
			       di->param[i], p[i]);
	}
	if (given)
		kf_strbuf_addstr(&sb, ")");
	return kf_strbuf_detach(&sb);
}

static int unknown_dist(struct loader *ld, const char *field, const char *name)
{
	char names[200] = "";
	for (int i = 0; i < N_DIST_INFOS; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", i ? ", " : "", dist_infos[i].name);
	return bad(ld, field, "unknown distribution '%s' (expected %s)", name,
		   names);
}

/*
 * The parameters of d must make sense in every dimension set: a range that
 * is empty, a negative spread or an integer range that the dtype cannot
 * hold would make the worker's inputs meaningless.
 */
static int check_dist_sets(struct loader *ld, const struct kf_tensor_spec *ts,
			   const struct kf_dist *d, const char *field, int s0,
			   int s1)
{
	struct kf_task *t = ld->t;
	const struct dist_info *di = &dist_infos[d->kind];
	bool fills_ints =
	    d->kind == KF_DIST_INT || !kf_dtype_is_float(ts->dtype);
	int np = d->kind == KF_DIST_CONST ? 1 : 2;
	for (int s = s0; s < s1; s++) {
		double p[2];
		char why[200] = "";
		kf_dist_params(t, d, s, p);
		if ((d->kind == KF_DIST_UNIFORM || d->kind == KF_DIST_INT) &&
		    !(p[0] < p[1]))
			snprintf(why, sizeof(why),
				 "low (%g) must be below high (%g)", p[0],
				 p[1]);
		else if (d->kind == KF_DIST_NORMAL && p[1] < 0)
			snprintf(why, sizeof(why),
				 "std (%g) must not be negative", p[1]);
		else if (d->kind == KF_DIST_HEAVY && !(p[0] > 0 && p[1] > 0))
			snprintf(why, sizeof(why),
				 "scale (%g) and clip (%g) must be positive",
				 p[0], p[1]);
		else if (d->kind == KF_DIST_WIDE && !(p[0] <= p[1]))
			snprintf(why, sizeof(why),
				 "min_exp (%g) must not exceed max_exp (%g)",
				 p[0], p[1]);
		else if ((d->kind == KF_DIST_LARGE ||
			  d->kind == KF_DIST_NEGATIVE) &&
			 !(p[0] > 0))
			snprintf(why, sizeof(why),
				 "scale (%g) must be positive", p[0]);
		else if (d->kind == KF_DIST_DENORMAL && !(p[0] <= p[1]))
			snprintf(why, sizeof(why),
				 "min_exp2 (%g) must not exceed max_exp2 (%g)",
				 p[0], p[1]);
		else if (d->kind == KF_DIST_DENORMAL &&
			 !(p[0] >= -1100 && p[1] <= 1100))
			snprintf(why, sizeof(why),
				 "min_exp2 (%g) and max_exp2 (%g) must lie in "
				 "[-1100, 1100]",
				 p[0], p[1]);
		else if (d->kind == KF_DIST_TIES &&
			 !(is_pos_int(p[0]) && p[0] <= 16777216 && p[1] > 0))
			snprintf(why, sizeof(why),
				 "levels (%g) must be an integer in [1, 2^24] "
				 "and scale (%g) positive",
				 p[0], p[1]);
		else if (d->kind == KF_DIST_ZEROS &&
			 !(p[0] >= 0 && p[0] <= 1 && p[1] >= 0))
			snprintf(why, sizeof(why),
				 "fraction (%g) must lie in [0, 1] and std "
				 "(%g) must not be negative",
				 p[0], p[1]);
		for (int i = 0; !why[0] && fills_ints && i < np; i++)
			if (!is_int(p[i]))
				snprintf(why, sizeof(why),
					 "%s (%g) must be an integer",
					 di->param[i], p[i]);
		/* high is exclusive, so it may be one past the top. */
		double lo = p[0];
		double hi = d->kind == KF_DIST_INT ? p[1] - 1 : p[0];
		if (!why[0] && ts->dtype == KF_I32 &&
		    (lo < INT32_MIN || hi > INT32_MAX))
			snprintf(why, sizeof(why),
				 "values [%g, %g] do not fit in int32", lo, hi);
		if (!why[0])
			continue;
		char at[300] = "";
		for (int i = 0; i < 2; i++)
			if (d->p_expr[i] && !kf_expr_is_const(d->p_expr[i]))
				where(t, d->p_expr[i], s, at, sizeof(at));
		return bad(ld, field, "%s%s", why, at);
	}
	return 0;
}

static int check_dist(struct loader *ld, const struct kf_tensor_spec *ts,
		      const struct kf_dist *d, const char *field)
{
	return check_dist_sets(ld, ts, d, field, 0, ld->t->n_dimsets);
}

static int parse_dist(struct loader *ld, const cJSON *j, const char *field,
		      struct kf_tensor_spec *ts, struct kf_dist *d)
{
	char sub[300];
	const struct dist_info *di;
	int rc;
	if (cJSON_IsString(j)) {
		di = dist_lookup(j->valuestring);
		if (!di)
			return unknown_dist(ld, field, j->valuestring);
	} else if (cJSON_IsObject(j)) {
		const cJSON *k = get(j, "kind");
		field_key(sub, sizeof(sub), field, "kind");
		if (!k)
			return missing(ld, sub);
		if (!cJSON_IsString(k))
			return bad(ld, sub, "must be a string, got %s",
				   json_type(k));
		di = dist_lookup(k->valuestring);
		if (!di)
			return unknown_dist(ld, sub, k->valuestring);
		const char *allowed[] = {"kind", di->param[0], di->param[1],
					 NULL};
		char expected[64];
		snprintf(
		    expected, sizeof(expected), "kind%s%s%s%s",
		    di->param[0] ? ", " : "", di->param[0] ? di->param[0] : "",
		    di->param[1] ? ", " : "", di->param[1] ? di->param[1] : "");
		if ((rc = check_keys(ld, j, field, allowed, expected)))
			return rc;
	} else {
		return bad(ld, field, "must be a string or an object, got %s",
			   json_type(j));
	}
	d->kind = (enum kf_dist_kind)(di - dist_infos);
	dist_defaults(d->kind, ts->dtype, d->p_default);
	for (int i = 0; i < 2; i++) {
		if (!di->param[i])
			continue;
		const cJSON *p =
		    cJSON_IsObject(j) ? get(j, di->param[i]) : NULL;
		field_key(sub, sizeof(sub), field, di->param[i]);
		if (!p && (di->required >> i & 1))
			return bad(ld, field,
				   "kind %s needs the parameter '%s' (write "
				   "{\"kind\": \"%s\", \"%s\": ...})",
				   di->name, di->param[i], di->name,
				   di->param[i]);
		if (p &&
		    (rc = parse_expr_field(ld, p, sub, false, &d->p_expr[i])))
			return rc;
	}
	if (!kf_dtype_is_float(ts->dtype) && d->kind != KF_DIST_INT &&
	    d->kind != KF_DIST_CONST) {
		field_key(sub, sizeof(sub), field, "kind");
		return bad(ld, cJSON_IsObject(j) ? sub : field,
			   "'%s' cannot fill an integer tensor (use int or "
			   "const)",
			   di->name);
	}
	return check_dist(ld, ts, d, field);
}

static int parse_dists(struct loader *ld, const cJSON *j, const char *prefix,
		       struct kf_tensor_spec *ts)
{
	char field[300];
	int rc;
	field_key(field, sizeof(field), prefix, "dist");
	if (!j) {
		if (!kf_dtype_is_float(ts->dtype))
			return bad(ld, field,
				   "required for an integer input (a dist "
				   "of kind int or const)");
		/* Default: typical values, a bounded range, heavy tails. */
		static const enum kf_dist_kind dflt[] = {
		    KF_DIST_NORMAL, KF_DIST_UNIFORM, KF_DIST_HEAVY};
		ts->dists = kf_xcalloc(3, sizeof(*ts->dists));
		for (int i = 0; i < 3; i++) {
			ts->dists[i].kind = dflt[i];
			ts->dists[i].p_default[0] = dist_infos[dflt[i]].dflt[0];
			ts->dists[i].p_default[1] = dist_infos[dflt[i]].dflt[1];
		}
		ts->n_dists = 3;
		return 0;
	}
	if (!cJSON_IsArray(j)) {
		ts->dists = kf_xcalloc(1, sizeof(*ts->dists));
		ts->n_dists = 1;
		return parse_dist(ld, j, field, ts, &ts->dists[0]);
	}
	int n = cJSON_GetArraySize(j);
	if (n < 1)
		return bad(ld, field, "empty list");
	if (n > KF_MAX_DISTS)
		return bad(ld, field, "%d entries, at most %d", n,
			   KF_MAX_DISTS);
	ts->dists = kf_xcalloc((size_t)n, sizeof(*ts->dists));
	int i = 0;
	for (const cJSON *c = j->child; c; c = c->next, i++) {
		char item[320];
		snprintf(item, sizeof(item), "%s[%d]", field, i);
		ts->n_dists = i + 1;
		if ((rc = parse_dist(ld, c, item, ts, &ts->dists[i])))
			return rc;
	}
	return 0;
}

/* "inputs[2]" or "outputs[0]" for a tensor of t; "tensor 'x'" otherwise. */
static void tensor_label(const struct kf_task *t,
			 const struct kf_tensor_spec *ts, char *buf, size_t n)
{
	if (ts >= t->inputs && ts < t->inputs + KF_MAX_TENSORS)
		snprintf(buf, n, "inputs[%d]", (int)(ts - t->inputs));
	else if (ts >= t->outputs && ts < t->outputs + KF_MAX_TENSORS)
		snprintf(buf, n, "outputs[%d]", (int)(ts - t->outputs));
	else
		snprintf(buf, n, "tensor '%s'", ts->name ? ts->name : "?");
}

static int parse_tensor(struct loader *ld, const cJSON *j, const char *item,
			bool is_input, struct kf_tensor_spec *ts)
{
	struct kf_task *t = ld->t;
	char field[300];
	int rc;
	if (!cJSON_IsObject(j))
		return bad(ld, item, "must be an object, got %s", json_type(j));
	static const char *const in_keys[] = {"name", "dtype", "shape", "dist",
					      NULL};
	static const char *const out_keys[] = {"name", "dtype", "shape",
					       "rounded_once", NULL};
	if ((rc = check_keys(ld, j, item, is_input ? in_keys : out_keys,
			     is_input ? "name, dtype, shape, dist"
				      : "name, dtype, shape, rounded_once; "
					"outputs have no dist")))
		return rc;
	const cJSON *once = is_input ? NULL : get(j, "rounded_once");
	if (once) {
		field_key(field, sizeof(field), item, "rounded_once");
		if (!cJSON_IsBool(once))
			return bad(ld, field, "must be true or false, got %s",
				   json_type(once));
		ts->rounded_once = cJSON_IsTrue(once);
	}

	const cJSON *name = get(j, "name");
	field_key(field, sizeof(field), item, "name");
	if (!name)
		return missing(ld, field);
	if (!cJSON_IsString(name))
		return bad(ld, field, "must be a string, got %s",
			   json_type(name));
	if (!is_name(name->valuestring))
		return bad(ld, field,
			   "'%s' is not a valid tensor name (letters, digits "
			   "and '_', not starting with a digit, at most %d "
			   "characters)",
			   name->valuestring, MAX_NAME_LEN);
	/* Inputs and outputs share one namespace: prompts and results name
	 * tensors without saying which side they are on. */
	for (int side = 0; side < 2; side++) {
		const struct kf_tensor_spec *v = side ? t->outputs : t->inputs;
		int n = side ? t->n_outputs : t->n_inputs;
		for (int i = 0; i < n; i++) {
			if (&v[i] == ts || !v[i].name ||
			    strcmp(v[i].name, name->valuestring) != 0)
				continue;
			return bad(ld, field,
				   "duplicate tensor name '%s' (also %s[%d])",
				   name->valuestring,
				   side ? "outputs" : "inputs", i);
		}
	}
	ts->name = kf_xstrdup(name->valuestring);

	const cJSON *dt = get(j, "dtype");
	field_key(field, sizeof(field), item, "dtype");
	if (!dt)
		return missing(ld, field);
	if (!cJSON_IsString(dt))
		return bad(ld, field, "must be a string, got %s",
			   json_type(dt));
	if (kf_dtype_parse(dt->valuestring, &ts->dtype))
		return bad(ld, field, "unknown dtype '%s' (expected %s)",
			   dt->valuestring, dtype_list);

	const cJSON *shape = get(j, "shape");
	field_key(field, sizeof(field), item, "shape");
	if (!shape)
		return missing(ld, field);
	if (!cJSON_IsArray(shape))
		return bad(ld, field, "must be an array, got %s",
			   json_type(shape));
	int nd = cJSON_GetArraySize(shape);
	if (nd > KF_MAX_NDIM)
		return bad(ld, field, "%d dimensions, at most %d", nd,
			   KF_MAX_NDIM);
	int i = 0;
	for (const cJSON *c = shape->child; c; c = c->next, i++) {
		char dim[320];
		snprintf(dim, sizeof(dim), "%s[%d]", field, i);
		if (cJSON_IsNumber(c) && !is_pos_int(c->valuedouble))
			return bad(ld, dim,
				   "must be a positive integer or an "
				   "expression string, got %g",
				   c->valuedouble);
		if (!cJSON_IsNumber(c) && !cJSON_IsString(c))
			return bad(ld, dim,
				   "must be a positive integer or an "
				   "expression string, got %s",
				   json_type(c));
		if ((rc = parse_expr_field(ld, c, dim, false, &ts->shape[i])))
			return rc;
		ts->ndim = i + 1;
	}
	/* Every dimension of every set, now rather than in a worker. */
	for (int s = 0; s < t->n_dimsets; s++) {
		int64_t sh[KF_MAX_NDIM];
		int64_t n = kf_task_shape(t, ts, s, sh, ld->err);
		if (n < 0)
			return (int)n;
		if (n > INT64_MAX / (int64_t)kf_dtype_bytes(ts->dtype)) {
			char label[32];
			set_label(t, s, label, sizeof(label));
			return bad(ld, field,
				   "%lld elements under %s: too "
				   "large",
				   (long long)n, label);
		}
	}

	if (is_input)
		return parse_dists(ld, get(j, "dist"), item, ts);
	return 0;
}

static int parse_tensors(struct loader *ld, const cJSON *j, bool is_input)
{
	struct kf_task *t = ld->t;
	const char *key = is_input ? "inputs" : "outputs";
	struct kf_tensor_spec *v = is_input ? t->inputs : t->outputs;
	int *n_out = is_input ? &t->n_inputs : &t->n_outputs;
	int rc;
	if (!j)
		return missing(ld, key);
	if (!cJSON_IsArray(j))
		return bad(ld, key, "must be an array, got %s", json_type(j));
	int n = cJSON_GetArraySize(j);
	if (n < 1 || n > KF_MAX_TENSORS)
		return bad(ld, key, "%d tensors, expected 1 to %d", n,
			   KF_MAX_TENSORS);
	int i = 0;
	for (const cJSON *c = j->child; c; c = c->next, i++) {
		char item[32];
		snprintf(item, sizeof(item), "%s[%d]", key, i);
		*n_out = i + 1; /* so that kf_task_free sees it */
		if ((rc = parse_tensor(ld, c, item, is_input, &v[i])))
			return rc;
	}
	return 0;
}

static const struct kf_tolerance tol_defaults[KF_DTYPE_COUNT] = {
    [KF_F32] = {1e-4, 1e-4},  [KF_F64] = {1e-9, 1e-9}, [KF_F16] = {1e-2, 1e-2},
    [KF_BF16] = {2e-2, 2e-2}, [KF_I32] = {0, 0},       [KF_I64] = {0, 0},
};

static int parse_tolerance(struct loader *ld, const cJSON *j)
{
	struct kf_task *t = ld->t;
	char field[300];
	int rc;
	memcpy(t->tol, tol_defaults, sizeof(t->tol));
	if (!j)
		return 0;
	if (!cJSON_IsObject(j))
		return bad(ld, "tolerance", "must be an object, got %s",
			   json_type(j));
	for (const cJSON *c = j->child; c; c = c->next) {
		enum kf_dtype d;
		field_key(field, sizeof(field), "tolerance", c->string);
		if (kf_dtype_parse(c->string, &d))
			return bad(ld, field,
				   "unknown dtype '%s' (expected %s)",
				   c->string, dtype_list);
		for (const cJSON *p = j->child; p != c; p = p->next)
			if (!strcmp(p->string, c->string))
				return bad(ld, field, "duplicate key");
		if (!cJSON_IsObject(c))
			return bad(ld, field, "must be an object, got %s",
				   json_type(c));
		static const char *const keys[] = {"atol", "rtol", NULL};
		if ((rc = check_keys(ld, c, field, keys, "atol, rtol")))
			return rc;
		for (const cJSON *v = c->child; v; v = v->next) {
			char f2[340];
			field_key(f2, sizeof(f2), field, v->string);
			if (!cJSON_IsNumber(v))
				return bad(ld, f2, "must be a number, got %s",
					   json_type(v));
			if (!isfinite(v->valuedouble) || v->valuedouble < 0)
				return bad(ld, f2,
					   "must be a finite number >= 0, "
					   "got %g",
					   v->valuedouble);
			if (!strcmp(v->string, "atol"))
				t->tol[d].atol = v->valuedouble;
			else
				t->tol[d].rtol = v->valuedouble;
		}
	}
	return 0;
}

/* A -l name goes onto a compiler's command line: letters, digits, _.+- */
static bool is_lib_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > MAX_NAME_LEN || s[0] == '-' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(strchr("_.+-", s[i]) || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

static int parse_libraries(struct loader *ld, const cJSON *j, const char *key,
			   char ***list, int *count)
{
	if (!j)
		return 0;
	if (!cJSON_IsArray(j))
		return bad(ld, key, "must be an array, got %s", json_type(j));
	int n = cJSON_GetArraySize(j);
	if (n > MAX_LIBRARIES)
		return bad(ld, key, "%d entries, at most %d", n, MAX_LIBRARIES);
	*list = kf_xcalloc((size_t)n + 1, sizeof(**list));
	int i = 0;
	for (const cJSON *c = j->child; c; c = c->next, i++) {
		char field[32];
		snprintf(field, sizeof(field), "%s[%d]", key, i);
		if (!cJSON_IsString(c))
			return bad(ld, field, "must be a string, got %s",
				   json_type(c));
		if (!is_lib_name(c->valuestring))
			return bad(ld, field,
				   "'%s' is not a library name (as given to "
				   "-l: letters, digits and _.+-)",
				   c->valuestring);
		(*list)[(*count)++] = kf_xstrdup(c->valuestring);
	}
	return 0;
}

/* "sm_" then digits, then an optional letter: what nvcc's -gencode takes. */
static bool is_cuda_arch(const char *s)
{
	if (strncmp(s, "sm_", 3) || !isdigit((unsigned char)s[3]))
		return false;
	s += 3;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s >= 'a' && *s <= 'z')
		s++;
	return *s == '\0';
}

/* The last path component of p (no trailing '/'); a pointer into p. */
static const char *last_component(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static bool plain_component(const char *c, size_t n)
{
	return n > 0 && !(n == 1 && c[0] == '.') &&
	       !(n == 2 && c[0] == '.' && c[1] == '.');
}

/*
 * "<suite>/<name>" from the last two components of dir, or NULL when they
 * are not both plain names ("." or "..": the caller then asks realpath).
 * The path as given is preferred so that a symlinked suite keeps its name.
 */
static char *make_id(const char *dir)
{
	const char *name = last_component(dir);
	if (name == dir || !plain_component(name, strlen(name)))
		return NULL;
	const char *end = name - 1; /* the '/' before name */
	const char *suite = end;
	while (suite > dir && suite[-1] != '/')
		suite--;
	if (!plain_component(suite, (size_t)(end - suite)))
		return NULL;
	return kf_xstrdup(suite);
}

/*
 * Every check load makes of a dimension set, for one set s (a set drawn
 * from the ranges): each tensor's shape, flops and bytes, and each input's
 * distribution parameters.
 */
static int check_set(struct loader *ld, int s)
{
	struct kf_task *t = ld->t;
	int64_t shape[KF_MAX_NDIM];
	char field[64], at[300], num[32];
	for (int k = 0; k < t->n_inputs + t->n_outputs; k++) {
		const struct kf_tensor_spec *ts =
		    k < t->n_inputs ? &t->inputs[k]
				    : &t->outputs[k - t->n_inputs];
		int64_t n = kf_task_shape(t, ts, s, shape, ld->err);
		if (n < 0)
			return (int)n;
	}
	const struct kf_expr *ex[2] = {t->flops, t->bytes};
	static const char *const ex_name[2] = {"flops", "bytes"};
	for (int i = 0; i < 2; i++) {
		if (!ex[i])
			continue;
		double v = kf_expr_eval(ex[i], kf_task_dims(t, s));
		if (isfinite(v) && v >= 0)
			continue;
		where(t, ex[i], s, at, sizeof(at));
		return bad(ld, ex_name[i], "'%s' is %s%s; %s",
			   kf_expr_src(ex[i]), fmt_num(v, num, sizeof(num)), at,
			   isfinite(v) ? "it must not be negative"
				       : "it must be a finite number");
	}
	for (int i = 0; i < t->n_inputs; i++) {
		const struct kf_tensor_spec *ts = &t->inputs[i];
		for (int k = 0; k < ts->n_dists; k++) {
			if (ts->n_dists > 1)
				snprintf(field, sizeof(field),
					 "inputs[%d].dist[%d]", i, k);
			else
				snprintf(field, sizeof(field),
					 "inputs[%d].dist", i);
			int rc = check_dist_sets(ld, ts, &ts->dists[k], field,
						 s, s + 1);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The multiples of a range, [kmin, kmax] times multiple_of. */
static void range_ks(const struct kf_dim_range *r, int64_t *kmin, int64_t *kmax)
{
	*kmin = (r->lo + r->multiple_of - 1) / r->multiple_of;
	*kmax = r->hi / r->multiple_of;
}

/* "hidden.N": [low, high], {"range": [low, high], "multiple_of": m}, or a
 * positive integer (a dimension that every hidden set keeps). */
static int parse_range(struct loader *ld, const cJSON *c, const char *field,
		       struct kf_dim_range *r)
{
	char sub[340];
	const cJSON *arr = c;
	r->multiple_of = 1;
	if (cJSON_IsNumber(c)) {
		if (!is_pos_int(c->valuedouble))
			return bad(ld, field,
				   "must be a positive integer, got %g",
				   c->valuedouble);
		r->lo = r->hi = (int64_t)c->valuedouble;
		return 0;
	}
	if (cJSON_IsObject(c)) {
		static const char *const keys[] = {"range", "multiple_of",
						   NULL};
		int rc = check_keys(ld, c, field, keys, "range, multiple_of");
		if (rc)
			return rc;
		arr = get(c, "range");
		field_key(sub, sizeof(sub), field, "range");
		if (!arr)
			return missing(ld, sub);
		const cJSON *m = get(c, "multiple_of");
		if (m && !(cJSON_IsNumber(m) && is_pos_int(m->valuedouble))) {
			field_key(sub, sizeof(sub), field, "multiple_of");
			return bad(ld, sub, "must be a positive integer");
		}
		if (m)
			r->multiple_of = (int64_t)m->valuedouble;
		field_key(sub, sizeof(sub), field, "range");
	} else {
		snprintf(sub, sizeof(sub), "%s", field);
	}
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != 2 ||
	    !cJSON_IsNumber(arr->child) || !cJSON_IsNumber(arr->child->next))
		return bad(ld, sub,
			   "must be [low, high], {\"range\": [low, high], "
			   "\"multiple_of\": m} or a positive integer, got %s",
			   json_type(arr));
	double lo = arr->child->valuedouble, hi = arr->child->next->valuedouble;
	if (!is_pos_int(lo) || !is_pos_int(hi))
		return bad(ld, sub,
			   "low (%g) and high (%g) must be positive integers",
			   lo, hi);
	if (lo > hi)
		return bad(ld, sub, "low (%g) must not exceed high (%g)", lo,
			   hi);
	r->lo = (int64_t)lo;
	r->hi = (int64_t)hi;
	int64_t kmin, kmax;
	range_ks(r, &kmin, &kmax);
	if (kmin > kmax)
		return bad(ld, field, "no multiple of %lld in [%lld, %lld]",
			   (long long)r->multiple_of, (long long)r->lo,
			   (long long)r->hi);
	return 0;
}

/* One drawn set of each kind of draw_order (below). */
#define DEFAULT_HIDDEN_SETS 9

/* "hidden": a range for every dimension, and "hidden_sets". */
static int parse_hidden(struct loader *ld, const cJSON *j, const cJSON *count)
{
	struct kf_task *t = ld->t;
	char field[80];
	if (!j) {
		if (count)
			return bad(ld, "hidden_sets",
				   "needs hidden (the ranges to draw from)");
		return 0;
	}
	if (!cJSON_IsObject(j))
		return bad(ld, "hidden", "must be an object, got %s",
			   json_type(j));
	t->hidden_ranges =
	    kf_xcalloc((size_t)t->n_dims, sizeof(*t->hidden_ranges));
	for (const cJSON *c = j->child; c; c = c->next) {
		field_key(field, sizeof(field), "hidden", c->string);
		int d = 0;
		while (d < t->n_dims && strcmp(t->dim_names[d], c->string))
			d++;
		if (d == t->n_dims)
			return bad(ld, field, "not a dimension of dims");
		for (const cJSON *p = j->child; p != c; p = p->next)
			if (!strcmp(p->string, c->string))
				return bad(ld, field, "duplicate key");
		int rc = parse_range(ld, c, field, &t->hidden_ranges[d]);
		if (rc)
			return rc;
	}
	bool varies = false;
	for (int d = 0; d < t->n_dims; d++) {
		const struct kf_dim_range *r = &t->hidden_ranges[d];
		if (!get(j, t->dim_names[d]))
			return bad(ld, "hidden",
				   "dimension '%s' is missing (give each "
				   "dimension of dims a range [low, high] or "
				   "a value)",
				   t->dim_names[d]);
		varies = varies || r->lo != r->hi || r->lo != t->dimsets[d];
	}
	if (!varies)
		return bad(ld, "hidden",
			   "every range holds only the timing dims: no hidden "
			   "set can differ from them");
	int most = MAX_DIMSETS - t->n_fixed_dimsets;
	t->hidden_sets = DEFAULT_HIDDEN_SETS;
	if (count &&
	    !(cJSON_IsNumber(count) && is_pos_int(count->valuedouble) &&
	      count->valuedouble <= most))
		return bad(ld, "hidden_sets", "must be an integer in [1, %d]",
			   most);
	if (count)
		t->hidden_sets = (int)count->valuedouble;
	return 0;
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The ways a drawn set takes its values, dimension by dimension. */
enum draw_kind {
	DRAW_LOW,	/* the smallest value (edge sizes, often 1) */
	DRAW_UNIFORM,	/* uniform, N % 16 == 15 where the range allows */
	DRAW_LOG,	/* log-uniform, N % 8 == 3 or 5 where it allows */
	DRAW_NEAR_TOP,	/* within 8 of the top, odd where it can be */
	DRAW_POW2_1,	/* 2 times an odd number (N % 4 == 2) */
	DRAW_POW2_2,	/* 4 times an odd number (N % 8 == 4) */
	DRAW_POW2_3,	/* 8 times an odd number (N % 16 == 8) */
	DRAW_POW2_MID,	/* 2^a times an odd number, a in 4-6 */
	DRAW_POW2_HIGH, /* the same, a from 7 up to what the range holds */
	DRAW_TOP,	/* the top of the range or a few elements below */
};

/* The kinds of the first drawn sets, in order. Every evaluation meets every
 * residue mod 16 class of even sizes (2, 4 and 8 times an odd number: a
 * kernel wrong only at M % 8 == 4 cannot miss its set), odd sizes one
 * short of every vector width (N % 16 == 15) and in the middle of one
 * (N % 8 == 3 or 5; with the smallest value, often 1), a multiple of a
 * large power of two and the top of every range. With fewer sets than
 * these the last two slots are always DRAW_POW2_HIGH and DRAW_TOP. */
static const enum draw_kind draw_order[] = {
    DRAW_LOW,	 DRAW_UNIFORM,	DRAW_LOG,	DRAW_POW2_1, DRAW_POW2_2,
    DRAW_POW2_3, DRAW_POW2_MID, DRAW_POW2_HIGH, DRAW_TOP};
#define N_DRAW_ORDER ((int)(sizeof(draw_order) / sizeof(draw_order[0])))
_Static_assert(N_DRAW_ORDER == DEFAULT_HIDDEN_SETS,
	       "by default, one set of every kind");

static enum draw_kind draw_kind_of(int j, int n_sets)
{
	if (n_sets >= N_DRAW_ORDER)
		return draw_order[j];
	if (j == n_sets - 1)
		return DRAW_TOP;
	if (j == n_sets - 2)
		return DRAW_POW2_HIGH;
	return draw_order[j];
}

/* The odd numbers in [lo, hi]: *first and how many. */
static int64_t odd_span(int64_t lo, int64_t hi, int64_t *first)
{
	if (!(lo & 1))
		lo++;
	if (!(hi & 1))
		hi--;
	*first = lo;
	return lo > hi ? 0 : (hi - lo) / 2 + 1;
}

/* k = 2^a times an odd number in [kmin, kmax], a drawn from the exponents
 * in [a_lo, a_hi] for which one exists whose value (k * multiple_of) is
 * not avoid; returns 0 where none is. */
static int64_t draw_pow2(int64_t kmin, int64_t kmax, int a_lo, int a_hi,
			 int64_t m, int64_t avoid, uint64_t u)
{
	int fits[63], n_fits = 0;
	for (int a = a_lo; a <= a_hi && a < 62; a++) {
		int64_t step = (int64_t)1 << a, q0;
		if (step > kmax)
			break;
		int64_t n =
		    odd_span((kmin + step - 1) / step, kmax / step, &q0);
		bool only_avoid =
		    n == 1 && avoid % m == 0 && q0 * step == avoid / m;
		if (n > 0 && !only_avoid)
			fits[n_fits++] = a;
	}
	if (!n_fits)
		return 0;
	int a = fits[(u >> 40) % (uint64_t)n_fits];
	int64_t step = (int64_t)1 << a, q0;
	int64_t n = odd_span((kmin + step - 1) / step, kmax / step, &q0);
	int64_t i = (int64_t)((u & 0xffffffffffull) % (uint64_t)n);
	int64_t k = (q0 + 2 * i) * step;
	if (k * m == avoid) /* the next odd multiple, or the one before */
		k = i + 1 < n ? k + 2 * step : k - 2 * step;
	return k;
}

/* The value nearest k in [lo, hi] with value % mod == res (the one above
 * on a tie), or k where the range holds none. */
static int64_t with_residue(int64_t k, int64_t mod, int64_t res, int64_t lo,
			    int64_t hi)
{
	int64_t up = k + ((res - k % mod) % mod + mod) % mod;
	int64_t down = up - mod;
	bool up_ok = up <= hi, down_ok = down >= lo;
	if (up_ok && (!down_ok || up - k <= k - down))
		return up;
	return down_ok ? down : k;
}

/* A value of range r of kind how; u is 64 random bits, avoid the timing
 * dims' value of the dimension (which DRAW_POW2_HIGH and DRAW_TOP take only
 * where the range leaves nothing else). */
static int64_t draw_value(const struct kf_dim_range *r, enum draw_kind how,
			  int64_t avoid, uint64_t u)
{
	int64_t kmin, kmax, k, m = r->multiple_of;
	range_ks(r, &kmin, &kmax);
	uint64_t span = (uint64_t)(kmax - kmin) + 1;
	if (how == DRAW_POW2_HIGH) {
		/* a from 7 up, after DRAW_POW2_MID's 4-6: the sizes a path
		 * for "N % 128 == 0" or "K % 256 == 0" needs; where the range
		 * holds no such multiple, the largest power it holds. */
		k = draw_pow2(kmin, kmax, 7, 62, m, avoid, u);
		for (int a = 6; !k && a >= 1; a--)
			k = draw_pow2(kmin, kmax, a, a, m, avoid, u);
		if (k)
			return k * m;
		how = DRAW_TOP;
	}
	if (how == DRAW_TOP) {
		/* The top, or up to 3 below it where the range is at least
		 * 64 times wider (so within its top 1.6 %), never the timing
		 * value where another is near. */
		uint64_t w = (span - 1) / 64;
		w = w > 3 ? 3 : w;
		k = kmax - (int64_t)(u % (w + 1));
		if (k * m == avoid)
			k = k < kmax ? k + 1 : k > kmin ? k - 1 : k;
		return k * m;
	}
	if (how == DRAW_POW2_1 || how == DRAW_POW2_2 || how == DRAW_POW2_3 ||
	    how == DRAW_POW2_MID) {
		/* k = 2^a times an odd number, in the range if one is, else
		 * the largest power below a that it holds. */
		int a = how == DRAW_POW2_1   ? 1
			: how == DRAW_POW2_2 ? 2
			: how == DRAW_POW2_3 ? 3
					     : 4 + (int)((u >> 58) % 3);
		for (; a >= 1; a--) {
			int64_t step = (int64_t)1 << a, q0;
			int64_t n = odd_span((kmin + step - 1) / step,
					     kmax / step, &q0);
			if (!n)
				continue;
			int64_t q = q0 + 2 * (int64_t)(u % (uint64_t)n);
			return q * step * m;
		}
		how = DRAW_UNIFORM;
	}
	switch (how) {
	case DRAW_LOW:
		k = kmin;
		break;
	case DRAW_UNIFORM:
		k = kmin + (int64_t)(u % span);
		break;
	case DRAW_LOG: {
		double a = log((double)kmin), b = log((double)kmax + 1);
		double x = exp(a + (b - a) * (double)(u >> 11) * 0x1p-53);
		k = (int64_t)x;
		break;
	}
	default:
		k = kmax - (int64_t)(u % (span < 8 ? span : 8));
		break;
	}
	/* Odd where it can be: no vector width divides the size. */
	if (how != DRAW_LOW && !(k & 1))
		k = k + 1 <= kmax ? k + 1 : k - 1 >= kmin ? k - 1 : k;
	k = k < kmin ? kmin : k > kmax ? kmax : k;
	/* And of a residue the other kinds leave out (sizes, not multiples
	 * of multiple_of, are what a vector loop's tail sees). */
	if (m == 1 && how == DRAW_UNIFORM)
		k = with_residue(k, 16, 15, kmin, kmax);
	else if (m == 1 && how == DRAW_LOG)
		k = with_residue(k, 8, (u >> 7) & 1 ? 5 : 3, kmin, kmax);
	return k * m;
}

/*
 * Draws the sets into slots n_fixed_dimsets on. strict (at load): any
 * drawn set that fails a check is an error; otherwise such a set is drawn
 * again, up to 64 times: the first 16 tries keep the set's kind, the
 * others mix the kinds of the first three and DRAW_NEAR_TOP, dimension by
 * dimension.
 */
static int draw_sets(struct loader *ld, uint64_t seed, bool strict)
{
	struct kf_task *t = ld->t;
	size_t n = (size_t)t->n_dims;
	t->n_dimsets = t->n_fixed_dimsets;
	for (int j = 0; j < t->hidden_sets; j++) {
		int64_t *v = t->dimsets + (size_t)t->n_dimsets * n;
		int rc = 0;
		bool ok = false;
		bool ordered = j < N_DRAW_ORDER;
		for (int a = 0; a < 64 && !ok; a++) {
			for (size_t d = 0; d < n; d++) {
				uint64_t u = mix64(
				    seed ^ mix64(((uint64_t)j << 40) ^
						 ((uint64_t)a << 20) ^ d));
				enum draw_kind how =
				    ordered && a < 16
					? draw_kind_of(j, t->hidden_sets)
					: (enum draw_kind)((u >> 61) & 3);
				v[d] = draw_value(&t->hidden_ranges[d], how,
						  t->dimsets[d], mix64(u));
			}
			bool dup = false;
			for (int s = 0; s < t->n_dimsets && !dup; s++)
				dup = !memcmp(v, t->dimsets + (size_t)s * n,
					      n * sizeof(*v));
			if (dup)
				continue;
			t->n_dimsets++;
			rc = check_set(ld, t->n_dimsets - 1);
			if (!rc) {
				ok = true;
				break;
			}
			t->n_dimsets--;
			if (strict)
				return rc;
		}
		if (!ok && rc)
			return rc;
		/* Narrow ranges may hold fewer distinct sets than asked. */
		if (!ok)
			break;
	}
	return 0;
}

/* The ranges must give valid sets: every corner, and sets drawn from a few
 * fixed seeds, pass every check of load. The sets of an evaluation are
 * drawn later (kf_task_draw_hidden). */
static int check_ranges(struct loader *ld)
{
	struct kf_task *t = ld->t;
	size_t n = (size_t)t->n_dims;
	if (!t->hidden_ranges)
		return 0;
	int corners = n <= 6 ? 1 << n : (int)n + 2;
	int64_t *v = t->dimsets + (size_t)t->n_fixed_dimsets * n;
	t->n_dimsets = t->n_fixed_dimsets + 1;
	for (int c = 0; c < corners; c++) {
		for (size_t d = 0; d < n; d++) {
			const struct kf_dim_range *r = &t->hidden_ranges[d];
			int64_t kmin, kmax;
			range_ks(r, &kmin, &kmax);
			bool high =
			    n <= 6 ? (c >> d & 1)
				   : c == 1 || (c >= 2 && (size_t)(c - 2) == d);
			v[d] = (high ? kmax : kmin) * r->multiple_of;
		}
		int rc = check_set(ld, t->n_fixed_dimsets);
		if (rc)
			return rc;
	}
	for (uint64_t seed = 1; seed <= 8; seed++) {
		int rc = draw_sets(ld, seed, true);
		if (rc)
			return rc;
	}
	t->n_dimsets = t->n_fixed_dimsets;
	return 0;
}

int kf_task_draw_hidden(struct kf_task *t, uint64_t seed, struct kf_err *err)
{
	struct loader ld = {t->path, t, err, NULL};
	if (!t->hidden_ranges)
		return 0;
	return draw_sets(&ld, mix64(seed ^ 0x68696464656eull), false);
}

int kf_task_add_dimset(struct kf_task *t, const int64_t *values,
		       struct kf_err *err)
{
	struct loader ld = {t->path, t, err, NULL};
	size_t n = (size_t)t->n_dims;
	if (t->n_dimsets >= MAX_DIMSETS)
		return kf_err_set(err, KF_EINVAL, "%s: at most %d dim sets",
				  t->path, MAX_DIMSETS);
	for (size_t d = 0; d < n; d++)
		if (values[d] < 1 || (double)values[d] > MAX_EXACT)
			return kf_err_set(err, KF_EINVAL,
					  "%s: dimension '%s' of a hidden set "
					  "must be a positive integer",
					  t->path, t->dim_names[d]);
	int64_t *v = t->dimsets + (size_t)t->n_dimsets * n;
	memcpy(v, values, n * sizeof(*v));
	if (!memcmp(v, t->dimsets, n * sizeof(*v)))
		return kf_err_set(err, KF_EINVAL,
				  "%s: a hidden set must differ from the "
				  "timing dims",
				  t->path);
	t->n_dimsets++;
	int rc = check_set(&ld, t->n_dimsets - 1);
	if (rc)
		t->n_dimsets--;
	return rc;
}

static int parse_spec(struct loader *ld, const cJSON *root, const char *dirname)
{
	struct kf_task *t = ld->t;
	int rc;
	static const char *const keys[] = {
	    "name",	      "description", "dims",	    "hidden_dims",
	    "inputs",	      "outputs",     "tolerance",   "flops",
	    "bytes",	      "libraries",   "determinism", "call_timeout_ms",
	    "cuda_libraries", "cuda_dims",   "cuda_arch",   "hidden",
	    "hidden_sets",    NULL,
	};
	if ((rc = check_keys(ld, root, "", keys,
			     "name, description, dims, hidden, hidden_sets, "
			     "hidden_dims, inputs, outputs, tolerance, flops, "
			     "bytes, libraries, cuda_libraries, cuda_dims, "
			     "cuda_arch, determinism, call_timeout_ms")))
		return rc;

	const cJSON *j = get(root, "name");
	if (j && !cJSON_IsString(j))
		return bad(ld, "name", "must be a string, got %s",
			   json_type(j));
	if (j && strcmp(j->valuestring, dirname) != 0)
		ld->misnamed = kf_xasprintf(
		    "%s: name: '%s' does not match the directory name '%s' "
		    "(rename the directory or set \"name\": \"%s\")",
		    ld->path, j->valuestring, dirname, dirname);
	t->name = kf_xstrdup(dirname);

	j = get(root, "description");
	if (!j)
		return missing(ld, "description");
	if (!cJSON_IsString(j))
		return bad(ld, "description", "must be a string, got %s",
			   json_type(j));
	if (!*j->valuestring)
		return bad(ld, "description", "must not be empty");
	t->description = kf_xstrdup(j->valuestring);

	if ((rc = parse_dims(ld, get(root, "dims"))))
		return rc;
	if ((rc = parse_hidden_dims(ld, get(root, "hidden_dims"),
				    get(root, "hidden") != NULL)))
		return rc;
	if ((rc = parse_cuda_dims(ld, get(root, "cuda_dims"))))
		return rc;
	if ((rc = parse_hidden(ld, get(root, "hidden"),
			       get(root, "hidden_sets"))))
		return rc;
	if ((rc = parse_tensors(ld, get(root, "inputs"), true)))
		return rc;
	if ((rc = parse_tensors(ld, get(root, "outputs"), false)))
		return rc;
	if ((rc = parse_tolerance(ld, get(root, "tolerance"))))
		return rc;

	j = get(root, "flops");
	if (!j)
		return missing(ld, "flops");
	if ((rc = parse_expr_field(ld, j, "flops", true, &t->flops)))
		return rc;
	j = get(root, "bytes");
	if (!j)
		return missing(ld, "bytes");
	if ((rc = parse_expr_field(ld, j, "bytes", true, &t->bytes)))
		return rc;

	if ((rc = parse_libraries(ld, get(root, "libraries"), "libraries",
				  &t->libraries, &t->n_libraries)))
		return rc;
	if ((rc = parse_libraries(ld, get(root, "cuda_libraries"),
				  "cuda_libraries", &t->cuda_libraries,
				  &t->n_cuda_libraries)))
		return rc;

	j = get(root, "cuda_arch");
	if (j && (!cJSON_IsString(j) || !is_cuda_arch(j->valuestring)))
		return bad(ld, "cuda_arch",
			   "expected a target such as \"sm_90\" or \"sm_90a\"");
	if (j)
		t->cuda_arch = kf_xstrdup(j->valuestring);

	t->determinism_bitwise = true;
	j = get(root, "determinism");
	if (j && !cJSON_IsString(j))
		return bad(ld, "determinism", "must be a string, got %s",
			   json_type(j));
	if (j && !strcmp(j->valuestring, "tolerance"))
		t->determinism_bitwise = false;
	else if (j && strcmp(j->valuestring, "bitwise") != 0)
		return bad(ld, "determinism",
			   "unknown value '%s' (expected bitwise, tolerance)",
			   j->valuestring);

	t->call_timeout_ms = 2000;
	j = get(root, "call_timeout_ms");
	if (j && !cJSON_IsNumber(j))
		return bad(ld, "call_timeout_ms", "must be a number, got %s",
			   json_type(j));
	if (j && !(j->valuedouble > 0 && j->valuedouble <= MAX_CALL_TIMEOUT_MS))
		return bad(ld, "call_timeout_ms",
			   "must be above 0 and at most %.0f, got %g",
			   MAX_CALL_TIMEOUT_MS, j->valuedouble);
	if (j)
		t->call_timeout_ms = j->valuedouble;
	/* Checked with the others; from here on it is not a hidden set: it
	 * waits in the last slot, out of the way of drawn sets. */
	if (t->cuda_dimset >= 0) {
		size_t n = (size_t)t->n_dims;
		memcpy(t->dimsets + (size_t)(MAX_DIMSETS + 1) * n,
		       t->dimsets + (size_t)t->cuda_dimset * n,
		       n * sizeof(int64_t));
		t->cuda_dimset = MAX_DIMSETS + 1;
		t->n_dimsets--;
	}
	return check_ranges(ld);
}

/* path without trailing slashes ("/" stays "/"); caller frees. */
static char *strip_slashes(const char *path)
{
	char *s = kf_xstrdup(path);
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = 0;
	return s;
}

/* "line 3, column 7" of the byte at pos in text. */
static void text_position(const char *text, const char *pos, char *buf,
			  size_t n)
{
	int line = 1, col = 1;
	for (const char *p = text; p < pos && *p; p++) {
		if (*p == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	snprintf(buf, n, "line %d, column %d", line, col);
}

int kf_task_load(const char *path, struct kf_task **out, struct kf_err *err)
{
	struct kf_task *t = NULL;
	char *text = NULL, *real = NULL;
	cJSON *root = NULL;
	size_t len = 0;
	struct stat st;
	int rc = 0;
	*out = NULL;
	if (kf_task_is_kernelbench(path))
		return kf_task_load_kernelbench(path, out, err);
	if (stat(path, &st) != 0) {
		rc = kf_err_set(err, errno == ENOENT ? KF_ENOENT : KF_EIO,
				"%s: %s", path, strerror(errno));
		goto out;
	}
	t = kf_xcalloc(1, sizeof(*t));
	if (S_ISDIR(st.st_mode)) {
		t->dir = strip_slashes(path);
		t->path = !strcmp(t->dir, "/")
			      ? kf_xstrdup("/task.json")
			      : kf_xasprintf("%s/task.json", t->dir);
		if (stat(t->path, &st) != 0) {
			rc = kf_err_set(err,
					errno == ENOENT ? KF_ENOENT : KF_EIO,
					"%s: %s (not a task directory)",
					t->path, strerror(errno));
			goto out;
		}
	} else {
		t->path = kf_xstrdup(path);
		const char *slash = strrchr(path, '/');
		if (!slash)
			t->dir = kf_xstrdup(".");
		else if (slash == path)
			t->dir = kf_xstrdup("/");
		else
			t->dir =
			    kf_xasprintf("%.*s", (int)(slash - path), path);
	}
	if (!S_ISREG(st.st_mode)) {
		rc = kf_err_set(err, KF_EINVAL, "%s: not a regular file",
				t->path);
		goto out;
	}
	if (st.st_size > (off_t)TASK_JSON_CAP) {
		rc = kf_err_set(err, KF_ERANGE,
				"%s: %lld bytes, larger than the cap of "
				"1 MiB for task.json",
				t->path, (long long)st.st_size);
		goto out;
	}
	if ((rc = kf_file_read(t->path, TASK_JSON_CAP, &text, &len, err)))
		goto out;
	const char *end = NULL;
	root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!root) {
		char at[64];
		text_position(text, end ? end : text, at, sizeof(at));
		rc = kf_err_set(err, KF_EINVAL, "%s: invalid JSON at %s",
				t->path, at);
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		rc = kf_err_set(err, KF_EINVAL,
				"%s: must hold a JSON object, got %s", t->path,
				json_type(root));
		goto out;
	}
	t->id = make_id(t->dir);
	if (!t->id) {
		real = realpath(t->dir, NULL);
		t->id = real ? make_id(real) : NULL;
		if (!t->id) /* a task directly below "/" */
			t->id =
			    kf_xstrdup(last_component(real ? real : t->dir));
	}
	struct loader ld = {.path = t->path, .t = t, .err = err};
	rc = parse_spec(&ld, root, last_component(t->id));
	if (ld.misnamed) {
		/* Both, where the file has another error too. */
		if (rc) {
			char *both = kf_xasprintf("%s; and %s", err->msg,
						  ld.misnamed);
			kf_err_set(err, KF_EINVAL, "%s", both);
			free(both);
		} else {
			rc = kf_err_set(err, KF_EINVAL, "%s", ld.misnamed);
		}
		free(ld.misnamed);
	}
	if (rc)
		goto out;
	*out = t;
	t = NULL;
out:
	kf_task_free(t);
	cJSON_Delete(root);
	free(text);
	free(real);
	return rc;
}

static void tensor_release(struct kf_tensor_spec *ts)
{
	free(ts->name);
	for (int i = 0; i < KF_MAX_NDIM; i++)
		kf_expr_free(ts->shape[i]);
	for (int i = 0; i < ts->n_dists; i++) {
		kf_expr_free(ts->dists[i].p_expr[0]);
		kf_expr_free(ts->dists[i].p_expr[1]);
	}
	free(ts->dists);
}

void kf_task_free(struct kf_task *t)
{
	if (!t)
		return;
	free(t->dir);
	free(t->path);
	free(t->id);
	free(t->name);
	free(t->description);
	for (int i = 0; i < t->n_dims; i++)
		free(t->dim_names[i]);
	free(t->dim_names);
	free(t->dimsets);
	free(t->hidden_ranges);
	for (int i = 0; i < t->n_inputs; i++)
		tensor_release(&t->inputs[i]);
	for (int i = 0; i < t->n_outputs; i++)
		tensor_release(&t->outputs[i]);
	kf_expr_free(t->flops);
	kf_expr_free(t->bytes);
	for (int i = 0; i < t->n_libraries; i++)
		free(t->libraries[i]);
	free(t->libraries);
	for (int i = 0; i < t->n_cuda_libraries; i++)
		free(t->cuda_libraries[i]);
	free(t->cuda_libraries);
	free(t->cuda_arch);
	free(t);
}

const int64_t *kf_task_dims(const struct kf_task *t, int s)
{
	KF_ASSERT(s >= 0 && (s < t->n_dimsets || s == t->cuda_dimset));
	return t->dimsets + (size_t)s * t->n_dims;
}

int64_t kf_task_shape(const struct kf_task *t, const struct kf_tensor_spec *ts,
		      int s, int64_t shape[KF_MAX_NDIM], struct kf_err *err)
{
	const int64_t *v = kf_task_dims(t, s);
	int64_t n = 1;
	for (int i = 0; i < ts->ndim; i++) {
		double d = kf_expr_eval(ts->shape[i], v);
		char label[32], at[300], num[32];
		if (!is_pos_int(d)) {
			tensor_label(t, ts, label, sizeof(label));
			where(t, ts->shape[i], s, at, sizeof(at));
			return kf_err_set(
			    err, KF_EINVAL,
			    "%s: %s.shape[%d]: '%s' is %s%s; "
			    "dimension %d of tensor '%s' must "
			    "be a positive integer",
			    t->path, label, i, kf_expr_src(ts->shape[i]),
			    fmt_num(d, num, sizeof(num)), at, i, ts->name);
		}
		shape[i] = (int64_t)d;
		if (__builtin_mul_overflow(n, shape[i], &n)) {
			tensor_label(t, ts, label, sizeof(label));
			set_label(t, s, at, sizeof(at));
			return kf_err_set(err, KF_ERANGE,
					  "%s: %s.shape: the element count "
					  "of tensor '%s' overflows under %s",
					  t->path, label, ts->name, at);
		}
	}
	return n;
}

char *kf_task_dims_str(const struct kf_task *t, int s)
{
	const int64_t *v = kf_task_dims(t, s);
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < t->n_dims; i++)
		kf_strbuf_addf(&sb, "%s%s=%lld", i ? " " : "", t->dim_names[i],
			       (long long)v[i]);
	if (!sb.buf)
		return kf_xstrdup("");
	return kf_strbuf_detach(&sb);
}

double kf_task_flops(const struct kf_task *t, int s)
{
	return t->flops ? kf_expr_eval(t->flops, kf_task_dims(t, s)) : 0;
}

double kf_task_bytes(const struct kf_task *t, int s)
{
	return t->bytes ? kf_expr_eval(t->bytes, kf_task_dims(t, s)) : 0;
}

void kf_dist_params(const struct kf_task *t, const struct kf_dist *d, int s,
		    double p[2])
{
	const int64_t *v = kf_task_dims(t, s);
	for (int i = 0; i < 2; i++)
		p[i] = d->p_expr[i] ? kf_expr_eval(d->p_expr[i], v)
				    : d->p_default[i];
}

char *kf_task_reference(const struct kf_task *t, const char *backend,
			struct kf_err *err)
{
	const char *file;
	if (t->kernelbench) /* the Python file is its own reference */
		return kf_xstrdup(t->path);
	if (!strcmp(backend, "host"))
		file = "reference.c";
	else if (!strcmp(backend, "cuda"))
		file = "reference.cu";
	else {
		kf_err_set(err, KF_EINVAL,
			   "unknown backend '%s' (expected host, cuda)",
			   backend);
		return NULL;
	}
	char *p = kf_xasprintf("%s/%s", t->dir, file);
	struct stat st;
	if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
		kf_err_set(err, KF_ENOENT,
			   "%s: missing: task %s has no reference for the %s "
			   "backend",
			   p, t->id, backend);
		free(p);
		return NULL;
	}
	return p;
}

struct name_list {
	char **v;
	int n, cap;
};

static void list_add(struct name_list *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = kf_xrealloc(l->v, (size_t)l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = s;
}

static void list_release(struct name_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The subdirectories of dir, sorted, dot-entries left out. */
static int list_dirs(const char *dir, struct name_list *out, struct kf_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return kf_err_set(err, errno == ENOENT ? KF_ENOENT : KF_EIO,
				  "%s: cannot open directory: %s", dir,
				  strerror(errno));
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = kf_xasprintf("%s/%s", dir, e->d_name);
		struct stat st;
		/* stat, not d_type: a suite may be a symbolic link. */
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			list_add(out, kf_xstrdup(e->d_name));
		free(p);
	}
	closedir(d);
	if (out->n > 1) /* qsort must not see the NULL of an empty list */
		qsort(out->v, (size_t)out->n, sizeof(*out->v), cmp_str);
	return 0;
}

int kf_task_find(const char *root, char ***out, int *n, struct kf_err *err)
{
	struct name_list suites = {0}, names = {0}, found = {0};
	char *top = strip_slashes(root);
	char *sdir = NULL;
	int rc;
	*out = NULL;
	*n = 0;
	if ((rc = list_dirs(top, &suites, err)))
		goto out;
	for (int i = 0; i < suites.n; i++) {
		free(sdir);
		sdir = kf_xasprintf("%s/%s", top, suites.v[i]);
		list_release(&names);
		if ((rc = list_dirs(sdir, &names, err)))
			goto out;
		for (int k = 0; k < names.n; k++) {
			char *dir = kf_xasprintf("%s/%s", sdir, names.v[k]);
			char *spec = kf_xasprintf("%s/task.json", dir);
			struct stat st;
			if (stat(spec, &st) == 0 && S_ISREG(st.st_mode))
				list_add(&found, dir);
			else
				free(dir);
			free(spec);
		}
	}
	*out = found.v;
	*n = found.n;
	found.v = NULL;
	found.n = 0;
out:
	list_release(&found);
	list_release(&names);
	list_release(&suites);
	free(sdir);
	free(top);
	return rc;
}

void kf_task_select_backend(struct kf_task *t, const char *backend)
{
	if (t->cuda_dimset < 0 || t->cuda_selected || strcmp(backend, "cuda"))
		return;
	int64_t *a = t->dimsets,
		*b = t->dimsets + (size_t)t->cuda_dimset * t->n_dims;
	for (int d = 0; d < t->n_dims; d++) {
		int64_t x = a[d];
		a[d] = b[d];
		b[d] = x;
	}
	t->cuda_selected = true;
}
