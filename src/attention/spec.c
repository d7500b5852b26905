/*
 * spec.c: an attention variant's spec (docs/attention.md), read from JSON
 * and checked whole before anything is generated: keys, types and ranges,
 * head counts that divide, a head dim of 64 or 128, expressions parsed and
 * typed, their head indices in range over every head, and a mask declared
 * causal checked to be causal. Errors are "<file>: <field>: <why>".
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_int.h"

/* The grid of positions the checks evaluate expressions over. */
#define CHECK_POS 64

static int bad(struct kf_err *err, const char *label, const char *field,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int bad(struct kf_err *err, const char *label, const char *field,
	       const char *fmt, ...)
{
	char why[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return kf_err_set(err, KF_EINVAL, "%s: %s: %s", label, field, why);
}

/* Unknown and duplicate keys of obj, whose allowed keys are the
 * space-separated words of allowed. */
static int check_keys(const cJSON *obj, const char *allowed,
		      const char *label, const char *where,
		      struct kf_err *err)
{
	for (const cJSON *c = obj->child; c; c = c->next) {
		char field[256];
		snprintf(field, sizeof(field), "%s%s%s", where,
			 *where ? "." : "", c->string);
		size_t len = strlen(c->string);
		bool ok = false;
		for (const char *w = allowed; *w;) {
			const char *e = strchr(w, ' ');
			size_t wl = e ? (size_t)(e - w) : strlen(w);
			if (wl == len && !strncmp(w, c->string, len))
				ok = true;
			w += wl + (e ? 1 : 0);
		}
		if (!ok) {
			char list[256];
			snprintf(list, sizeof(list), "%s", allowed);
			for (char *s = list; *s; s++)
				if (*s == ' ')
					*s = ',';
			return bad(err, label, field,
				   "unknown key (expected one of %s)", list);
		}
		for (const cJSON *d = c->next; d; d = d->next)
			if (!strcmp(d->string, c->string))
				return bad(err, label, field, "duplicate key");
	}
	return 0;
}

/* A JSON integer in [lo, hi] at obj[key]. */
static int get_int(const cJSON *obj, const char *key, const char *field,
		   int64_t lo, int64_t hi, bool required, int64_t *out,
		   const char *label, struct kf_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v) {
		if (required)
			return bad(err, label, field,
				   "required field is missing");
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return bad(err, label, field, "must be an integer");
	if (v->valuedouble < (double)lo || v->valuedouble > (double)hi)
		return bad(err, label, field, "%.17g is out of range [%lld, "
			   "%lld]", v->valuedouble, (long long)lo,
			   (long long)hi);
	*out = (int64_t)v->valuedouble;
	return 0;
}

static bool is_ident(const char *s)
{
	if (!*s || strlen(s) > 63 || !(*s == '_' || (*s >= 'a' && *s <= 'z') ||
				      (*s >= 'A' && *s <= 'Z')))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/* True when text is 1 to 64 characters of letters, digits, '_', '-', '.'
 * and those of extra: nothing that could end a comment or a line of the
 * generated source it is written into. */
static bool plain_text(const char *text, const char *extra)
{
	size_t n = strlen(text);
	if (n == 0 || n > 64)
		return false;
	for (const char *c = text; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' ||
		      *c == '.' || (*c && strchr(extra, *c))))
			return false;
	return true;
}

static const char *const reserved[] = {
    "score", "b",   "h",   "q_idx", "kv_idx", "n_heads", "tanh",
    "exp",   "exp2", "log", "sqrt",  "abs",    "min",     "max",
    "where", "alibi_slope"};

static int parse_params(struct kf_attn_spec *s, const cJSON *p,
			const char *label, struct kf_err *err)
{
	if (!cJSON_IsObject(p))
		return bad(err, label, "params",
			   "must be an object of names to numbers");
	for (const cJSON *c = p->child; c; c = c->next) {
		char field[128];
		snprintf(field, sizeof(field), "params.%s", c->string);
		if (!is_ident(c->string))
			return bad(err, label, field,
				   "a param's name must be an identifier");
		for (size_t k = 0; k < sizeof(reserved) / sizeof(*reserved);
		     k++)
			if (!strcmp(reserved[k], c->string))
				return bad(err, label, field,
					   "'%s' is a built-in name", c->string);
		for (const cJSON *d = c->next; d; d = d->next)
			if (!strcmp(d->string, c->string))
				return bad(err, label, field, "duplicate key");
		if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) ||
		    fabs(c->valuedouble) > FLT_MAX)
			return bad(err, label, field,
				   "must be a finite number a float holds "
				   "(|x| <= 3.4e38: the kernel computes in "
				   "float)");
		if (s->n_params == KFA_MAX_PARAMS)
			return bad(err, label, field, "more than %d params",
				   KFA_MAX_PARAMS);
		struct kfa_param *q = &s->params[s->n_params++];
		snprintf(q->name, sizeof(q->name), "%s", c->string);
		q->value = c->valuedouble;
		q->is_int = c->valuedouble == floor(c->valuedouble) &&
			    fabs(c->valuedouble) <= 2147483647.0;
	}
	return 0;
}

/* Evaluates e at every (q_idx, kv_idx) of the check grid for every head
 * (and b in {0, 1}, score in a few values): the first error, named. When
 * causal_of is set, e is the mask and must keep no kv_idx > q_idx. */
static int check_expr_grid(const struct kf_attn_spec *s,
			   const struct kfa_expr *e, const char *field,
			   bool causal, const char *label, struct kf_err *err)
{
	static const double scores[] = {0.0, -3.5, 7.25, 1e4, -1e4};
	int n_scores = e->type == KFA_BOOL ? 1 : 5;
	double v[KFA_NVARS];
	v[KFA_V_NHEADS] = s->n_heads;
	for (int b = 0; b < 2; b++)
		for (int h = 0; h < s->n_heads; h++)
			for (int q = 0; q < CHECK_POS; q++)
				for (int kv = 0; kv < CHECK_POS; kv++)
					for (int si = 0; si < n_scores; si++) {
						v[KFA_V_SCORE] = scores[si];
						v[KFA_V_B] = b;
						v[KFA_V_H] = h;
						v[KFA_V_Q] = q;
						v[KFA_V_KV] = kv;
						struct kfa_value out;
						struct kf_err e2 = KF_ERR_INIT;
						if (kfa_expr_eval(e, v, &out,
								  &e2))
							return bad(
							    err, label, field,
							    "%s, at b=%d h=%d "
							    "q_idx=%d kv_idx=%d "
							    "in '%s'",
							    e2.msg, b, h, q, kv,
							    e->text);
						if (causal && out.i && kv > q)
							return bad(
							    err, label, field,
							    "the mask is "
							    "declared causal but "
							    "keeps kv_idx=%d for "
							    "q_idx=%d (b=%d, "
							    "h=%d) in '%s'",
							    kv, q, b, h,
							    e->text);
					}
	return 0;
}

static int parse_mask(struct kf_attn_spec *s, const cJSON *m,
		      const char *label, struct kf_err *err)
{
	if (cJSON_IsString(m)) {
		if (!strcmp(m->valuestring, "none"))
			s->mask = KFA_MASK_NONE;
		else if (!strcmp(m->valuestring, "causal"))
			s->mask = KFA_MASK_CAUSAL;
		else
			return bad(err, label, "mask",
				   "unknown mask '%s' (expected none, causal, "
				   "{\"sliding_window\": W}, {\"prefix\": P} "
				   "or {\"expr\": \"...\", \"causal\": "
				   "true|false})",
				   m->valuestring);
		return 0;
	}
	if (!cJSON_IsObject(m))
		return bad(err, label, "mask",
			   "must be a name or an object");
	if (check_keys(m, "sliding_window prefix expr causal", label, "mask",
		       err))
		return err->code;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "sliding_window");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "prefix");
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, "expr");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "causal");
	if (!!w + !!p + !!x != 1)
		return bad(err, label, "mask",
			   "give exactly one of sliding_window, prefix, expr");
	if (c && !x)
		return bad(err, label, "mask.causal",
			   "only an expr mask declares causal (sliding_window "
			   "and prefix are causal by definition)");
	if (w || p) {
		s->mask = w ? KFA_MASK_SLIDING : KFA_MASK_PREFIX;
		return get_int(m, w ? "sliding_window" : "prefix",
			       w ? "mask.sliding_window" : "mask.prefix", 1,
			       1 << 30, true, &s->mask_arg, label, err);
	}
	if (!cJSON_IsString(x))
		return bad(err, label, "mask.expr", "must be a string");
	if (c && !cJSON_IsBool(c))
		return bad(err, label, "mask.causal", "must be true or false");
	s->mask = KFA_MASK_EXPR;
	s->mask_causal = c && cJSON_IsTrue(c);
	struct kfa_scope sc = {(1u << KFA_V_B) | (1u << KFA_V_H) |
				   (1u << KFA_V_Q) | (1u << KFA_V_KV) |
				   (1u << KFA_V_NHEADS),
			       s->params, s->n_params};
	struct kf_err e2 = KF_ERR_INIT;
	if (kfa_expr_parse(x->valuestring, &sc, &s->mask_expr, &e2))
		return bad(err, label, "mask.expr", "%s", e2.msg);
	if (s->mask_expr.type != KFA_BOOL)
		return bad(err, label, "mask.expr",
			   "a mask must be a condition (such as kv_idx <= "
			   "q_idx), got a number in '%s'",
			   x->valuestring);
	return check_expr_grid(s, &s->mask_expr, "mask.expr", s->mask_causal,
			       label, err);
}

static int parse_layout(struct kf_attn_spec *s, const cJSON *l,
			const char *label, struct kf_err *err)
{
	const char *kind = NULL;
	if (cJSON_IsString(l))
		kind = l->valuestring;
	else if (cJSON_IsObject(l)) {
		if (check_keys(l, "kind block_size", label, "layout", err))
			return err->code;
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(l, "kind");
		if (!cJSON_IsString(k))
			return bad(err, label, "layout.kind",
				   "required string (contiguous, varlen or "
				   "paged)");
		kind = k->valuestring;
	} else
		return bad(err, label, "layout",
			   "must be a name or an object");
	if (!strcmp(kind, "contiguous"))
		s->layout = KFA_CONTIGUOUS;
	else if (!strcmp(kind, "varlen"))
		s->layout = KFA_VARLEN;
	else if (!strcmp(kind, "paged"))
		s->layout = KFA_PAGED;
	else
		return bad(err, label, cJSON_IsString(l) ? "layout"
							  : "layout.kind",
			   "unknown layout '%s' (expected contiguous, varlen "
			   "or paged)",
			   kind);
	bool has_bs = cJSON_IsObject(l) &&
		      cJSON_GetObjectItemCaseSensitive(l, "block_size");
	if (s->layout != KFA_PAGED) {
		if (has_bs)
			return bad(err, label, "layout.block_size",
				   "only a paged layout has a block size");
		return 0;
	}
	if (!cJSON_IsObject(l))
		return bad(err, label, "layout",
			   "a paged layout needs its block size: {\"kind\": "
			   "\"paged\", \"block_size\": 16}");
	int64_t bs = 0;
	if (get_int(l, "block_size", "layout.block_size", 1, 1024, true, &bs,
		    label, err))
		return err->code;
	if (bs & (bs - 1))
		return bad(err, label, "layout.block_size",
			   "%lld is not a power of two", (long long)bs);
	s->block_size = (int)bs;
	return 0;
}

/*
 * NULs inside strings. cJSON decodes the escape \u0000 into a NUL byte in
 * the middle of the string and keeps no length, so "float16\u0000x" would
 * read as "float16" and a key "cap\u0000x" as "cap". The text is scanned
 * for the escape instead (kf_json_nul_escape's scan, the strings counted):
 * the index of the first string literal (keys and values alike, in the
 * text's order) that holds one, or -1.
 */
static int nul_string_index(const char *text)
{
	int k = -1;
	bool in = false;
	for (const char *c = text; *c; c++) {
		if (!in) {
			if (*c == '"') {
				in = true;
				k++;
			}
			continue;
		}
		if (*c == '"')
			in = false;
		else if (*c == '\\') {
			if (c[1] == 'u' && !strncmp(c + 2, "0000", 4))
				return k;
			if (c[1])
				c++;
		}
	}
	return -1;
}

/* The field of string number *k (counting down) among v's keys and
 * values in document order, which is the text's: true when found, with
 * the field in out and *is_key saying which it was. */
static bool string_field(const cJSON *v, const char *path, int *k, char *out,
			 size_t cap, bool *is_key)
{
	if (cJSON_IsString(v)) {
		if ((*k)-- > 0)
			return false;
		snprintf(out, cap, "%s", path);
		*is_key = false;
		return true;
	}
	int i = 0;
	for (const cJSON *c = v->child; c; c = c->next, i++) {
		char sub[256];
		if (cJSON_IsObject(v)) {
			snprintf(sub, sizeof(sub), "%s%s%s", path,
				 *path ? "." : "", c->string);
			if ((*k)-- == 0) {
				snprintf(out, cap, "%s\\u0000...", sub);
				*is_key = true;
				return true;
			}
		} else
			snprintf(sub, sizeof(sub), "%s[%d]", path, i);
		if (string_field(c, sub, k, out, cap, is_key))
			return true;
	}
	return false;
}

int kf_attn_spec_parse(const char *text, const char *label,
		       struct kf_attn_spec **out, struct kf_err *err)
{
	*out = NULL;
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithOpts(text, &end, 1);
	if (!j) {
		int line = 1, col = 1;
		for (const char *c = text; end && c < end; c++) {
			if (*c == '\n') {
				line++;
				col = 1;
			} else
				col++;
		}
		return kf_err_set(err, KF_EINVAL,
				  "%s: invalid JSON at line %d, column %d",
				  label, line, col);
	}
	struct kf_attn_spec *s = kf_xcalloc(1, sizeof(*s));
	s->path = kf_xstrdup(label);
	int rc = 0;
	const cJSON *v;
	if (!cJSON_IsObject(j)) {
		rc = kf_err_set(err, KF_EINVAL, "%s: the spec must be a JSON "
				"object", label);
		goto out;
	}
	int nul = nul_string_index(text);
	if (nul >= 0) {
		char field[300] = "?";
		bool is_key = false;
		string_field(j, "", &nul, field, sizeof(field), &is_key);
		rc = bad(err, label, field,
			 "%s holds a NUL character (\\u0000), which would end "
			 "it early where it is read (\"float16\\u0000x\" "
			 "reads as \"float16\"): a spec's strings are text",
			 is_key ? "the key" : "the string");
		goto out;
	}
	if ((rc = check_keys(j,
			     "name task description dtype head_dim heads "
			     "layout mask score_mod params",
			     label, "", err)))
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(j, "name");
	if (v && (!cJSON_IsString(v) || !plain_text(v->valuestring, ""))) {
		rc = bad(err, label, "name",
			 "must be 1 to 64 letters, digits, '_', '-' or '.' "
			 "(it is written into the generated source)");
		goto out;
	}
	s->name = kf_xstrdup(v ? v->valuestring : "attention");
	v = cJSON_GetObjectItemCaseSensitive(j, "task");
	if (v) {
		if (!cJSON_IsString(v) || !strchr(v->valuestring, '/') ||
		    !plain_text(v->valuestring, "/")) {
			rc = bad(err, label, "task",
				 "must be a task id such as "
				 "\"attention/causal\"");
			goto out;
		}
		s->task = kf_xstrdup(v->valuestring);
	}
	v = cJSON_GetObjectItemCaseSensitive(j, "description");
	if (v && !cJSON_IsString(v)) {
		rc = bad(err, label, "description", "must be a string");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(j, "dtype");
	if (!v) {
		rc = bad(err, label, "dtype", "required field is missing");
		goto out;
	}
	if (!cJSON_IsString(v) || (strcmp(v->valuestring, "float16") &&
				   strcmp(v->valuestring, "bfloat16"))) {
		rc = bad(err, label, "dtype",
			 "must be \"float16\" or \"bfloat16\" (the tensor "
			 "cores' 16-bit inputs)");
		goto out;
	}
	s->bf16 = !strcmp(v->valuestring, "bfloat16");
	v = cJSON_GetObjectItemCaseSensitive(j, "head_dim");
	if (!v) {
		rc = bad(err, label, "head_dim", "required field is missing");
		goto out;
	}
	if (!cJSON_IsNumber(v) ||
	    (v->valuedouble != 64 && v->valuedouble != 128)) {
		char got[64];
		if (cJSON_IsNumber(v))
			snprintf(got, sizeof(got), "%.17g", v->valuedouble);
		else
			snprintf(got, sizeof(got), "not a number");
		rc = bad(err, label, "head_dim",
			 "%s is not supported: the template has tiles for a "
			 "head dim of 64 or 128",
			 got);
		goto out;
	}
	s->head_dim = (int)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(j, "heads");
	if (!v) {
		rc = bad(err, label, "heads", "required field is missing "
			 "({\"n_heads\": H, \"n_kv_heads\": HKV})");
		goto out;
	}
	if (!cJSON_IsObject(v)) {
		rc = bad(err, label, "heads", "must be an object");
		goto out;
	}
	if ((rc = check_keys(v, "n_heads n_kv_heads", label, "heads", err)))
		goto out;
	int64_t nh = 0, nkv = 0;
	if ((rc = get_int(v, "n_heads", "heads.n_heads", 1, 256, true, &nh,
			  label, err)) ||
	    (rc = get_int(v, "n_kv_heads", "heads.n_kv_heads", 1, 256, true,
			  &nkv, label, err)))
		goto out;
	if (nh % nkv) {
		rc = bad(err, label, "heads",
			 "n_heads (%lld) is not a multiple of n_kv_heads "
			 "(%lld): every kv head must serve the same number "
			 "of query heads",
			 (long long)nh, (long long)nkv);
		goto out;
	}
	if (nh / nkv > 64) {
		rc = bad(err, label, "heads",
			 "a group of %lld query heads per kv head is over "
			 "the template's 64",
			 (long long)(nh / nkv));
		goto out;
	}
	s->n_heads = (int)nh;
	s->n_kv_heads = (int)nkv;
	v = cJSON_GetObjectItemCaseSensitive(j, "params");
	if (v && (rc = parse_params(s, v, label, err)))
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(j, "layout");
	if (v && (rc = parse_layout(s, v, label, err)))
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(j, "mask");
	if (v && (rc = parse_mask(s, v, label, err)))
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(j, "score_mod");
	if (v) {
		if (!cJSON_IsString(v)) {
			rc = bad(err, label, "score_mod", "must be a string");
			goto out;
		}
		struct kfa_scope sc = {(1u << KFA_NVARS) - 1, s->params,
				       s->n_params};
		struct kf_err e2 = KF_ERR_INIT;
		if (kfa_expr_parse(v->valuestring, &sc, &s->mod, &e2)) {
			rc = bad(err, label, "score_mod", "%s", e2.msg);
			goto out;
		}
		if (s->mod.type == KFA_BOOL) {
			rc = bad(err, label, "score_mod",
				 "a score modification must be a number, got "
				 "a condition in '%s' (masks go in mask)",
				 v->valuestring);
			goto out;
		}
		s->has_mod = true;
		if ((rc = check_expr_grid(s, &s->mod, "score_mod", false,
					  label, err)))
			goto out;
	}
out:
	cJSON_Delete(j);
	if (rc) {
		kf_attn_spec_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int kf_attn_spec_load(const char *path, struct kf_attn_spec **out,
		      struct kf_err *err)
{
	char *text = NULL;
	size_t bytes = 0;
	*out = NULL;
	if (kf_file_read(path, 1 << 20, &text, &bytes, err))
		return err->code;
	/* the parser reads a C string: a NUL byte would end the spec there
	   and hide what follows it */
	const char *nul = memchr(text, '\0', bytes);
	if (nul) {
		int line = 1, col = 1;
		for (const char *c = text; c < nul; c++) {
			if (*c == '\n') {
				line++;
				col = 1;
			} else
				col++;
		}
		free(text);
		return kf_err_set(err, KF_EINVAL,
				  "%s: a NUL byte at line %d, column %d: a "
				  "spec is JSON text",
				  path, line, col);
	}
	int rc = kf_attn_spec_parse(text, path, out, err);
	free(text);
	return rc;
}

void kf_attn_spec_free(struct kf_attn_spec *s)
{
	if (!s)
		return;
	kfa_expr_release(&s->mask_expr);
	kfa_expr_release(&s->mod);
	free(s->path);
	free(s->name);
	free(s->task);
	free(s);
}

const char *kf_attn_spec_task(const struct kf_attn_spec *s)
{
	return s->task;
}
