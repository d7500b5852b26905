/*
 * params.c: the KF_PARAM convention. Finds the tunable parameters a
 * candidate source declares and writes the concrete source for one choice
 * of their values (docs/optimize.md, "Tunable parameters").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/policy.h>

static const char decl[] = "KF_PARAM(";

static bool ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static bool ident_char(int c)
{
	return isalnum(c) || c == '_';
}

static bool value_char(int c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '+' || c == '-';
}

/* The start of a declaration on the line at p (after leading blanks), or
 * NULL when the line does not declare one. */
static const char *decl_start(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return strncmp(p, decl, sizeof(decl) - 1) ? NULL : p;
}

/* Reads one token of `ok` characters into buf; returns the end or NULL. */
static const char *token(const char *p, const char *end, bool (*ok)(int),
			 char buf[KF_PARAM_NAME_CAP])
{
	size_t n = 0;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p < end && ok((unsigned char)*p)) {
		if (n + 1 >= KF_PARAM_NAME_CAP)
			return NULL;
		buf[n++] = *p++;
	}
	buf[n] = '\0';
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return n ? p : NULL;
}

/* Parses one declaration line [p, end) into par; 0 or KF_EINVAL. */
static int parse_line(const char *p, const char *end, struct kf_param *par,
		      const char *where, struct kf_err *err)
{
	p += sizeof(decl) - 1;
	const char *q = token(p, end, ident_char, par->name);
	if (!q || !ident_start((unsigned char)par->name[0]))
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM: expected a name (a C "
				  "identifier of at most %d characters) first",
				  where, KF_PARAM_NAME_CAP - 1);
	p = q;
	par->n_values = 0;
	while (p < end && *p == ',') {
		if (par->n_values == KF_PARAM_VALUES_MAX)
			return kf_err_set(err, KF_EINVAL,
					  "%s: KF_PARAM(%s): more than %d "
					  "values",
					  where, par->name,
					  KF_PARAM_VALUES_MAX);
		char *v = par->values[par->n_values];
		q = token(p + 1, end, value_char, v);
		if (!q)
			return kf_err_set(err, KF_EINVAL,
					  "%s: KF_PARAM(%s): value %d is empty "
					  "or not a number or identifier of at "
					  "most %d characters",
					  where, par->name, par->n_values + 1,
					  KF_PARAM_NAME_CAP - 1);
		for (int i = 0; i < par->n_values; i++)
			if (!strcmp(par->values[i], v))
				return kf_err_set(err, KF_EINVAL,
						  "%s: KF_PARAM(%s): value "
						  "'%s' is listed twice",
						  where, par->name, v);
		par->n_values++;
		p = q;
	}
	if (p >= end || *p != ')')
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM(%s: expected ',' or ')' on "
				  "the same line",
				  where, par->name);
	if (par->n_values == 0)
		return kf_err_set(err, KF_EINVAL, "%s: KF_PARAM(%s): no values",
				  where, par->name);
	p++;
	while (p < end && (*p == ' ' || *p == '\t' || *p == ';' || *p == '\r'))
		p++;
	if (p < end && strncmp(p, "//", 2) && strncmp(p, "/*", 2))
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM(%s): unexpected text after "
				  "')'",
				  where, par->name);
	return 0;
}

int kf_policy_params_parse(const char *source, const char *origin,
			   struct kf_params *out, struct kf_err *err)
{
	out->n = 0;
	int line = 0;
	for (const char *p = source; *p;) {
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		line++;
		const char *d = decl_start(p);
		if (d && d < end) {
			char where[512];
			snprintf(where, sizeof(where), "%s:%d",
				 origin ? origin : "source", line);
			if (out->n == KF_PARAM_MAX)
				return kf_err_set(err, KF_EINVAL,
						  "%s: more than %d KF_PARAM "
						  "declarations",
						  where, KF_PARAM_MAX);
			struct kf_param *par = &out->p[out->n];
			int rc = parse_line(d, end, par, where, err);
			if (rc) {
				out->n = 0;
				return rc;
			}
			for (int i = 0; i < out->n; i++)
				if (!strcmp(out->p[i].name, par->name)) {
					out->n = 0;
					return kf_err_set(
					    err, KF_EINVAL,
					    "%s: KF_PARAM(%s) is declared "
					    "again (first on line %d)",
					    where, par->name, out->p[i].line);
				}
			par->line = line;
			out->n++;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

char *kf_policy_params_apply(const char *source, const struct kf_params *ps,
			     const int *idx)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int line = 0;
	for (const char *p = source; *p;) {
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		line++;
		int which = -1;
		for (int i = 0; i < ps->n; i++)
			if (ps->p[i].line == line)
				which = i;
		if (which >= 0) {
			const struct kf_param *par = &ps->p[which];
			const char *d = decl_start(p);
			KF_ASSERT(d && idx[which] >= 0 &&
				  idx[which] < par->n_values);
			/* The declaration stays, as a comment; a "*" "/"
			 * inside it cannot occur (values and names are
			 * tokens, and the tail is checked). */
			const char *close = strchr(d, ')');
			kf_strbuf_addf(&sb, "#define %s %s /* %.*s */",
				       par->name, par->values[idx[which]],
				       (int)(close - d + 1), d);
		} else {
			kf_strbuf_add(&sb, p, (size_t)(end - p));
		}
		if (*end)
			kf_strbuf_addstr(&sb, "\n");
		p = *end ? end + 1 : end;
	}
	return kf_strbuf_detach(&sb);
}

cJSON *kf_policy_params_json(const struct kf_params *ps, const int *idx)
{
	cJSON *o = cJSON_CreateObject();
	for (int i = 0; i < ps->n; i++)
		cJSON_AddStringToObject(o, ps->p[i].name,
					ps->p[i].values[idx[i]]);
	return o;
}

int64_t kf_policy_params_space(const struct kf_params *ps)
{
	int64_t n = 1;
	for (int i = 0; i < ps->n; i++) {
		if (n > ((int64_t)1 << 62) / ps->p[i].n_values)
			return (int64_t)1 << 62;
		n *= ps->p[i].n_values;
	}
	return n;
}
