/*
 * params.c: the KF_PARAM convention. Finds the tunable parameters a
 * candidate source declares and writes the concrete source for one choice
 * of their values (docs/optimize.md, "Tunable parameters").
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/policy.h>

static const char decl[] = "KF_PARAM(";
static const char rule_decl[] = "KF_PARAM_RULE(";

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

/* The start of a rule on the line at p, or NULL. */
static const char *rule_start(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return strncmp(p, rule_decl, sizeof(rule_decl) - 1) ? NULL : p;
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

/*
 * Rules: a recursive-descent evaluator over the rule's text. In check mode
 * (idx NULL) it resolves names and checks the syntax without values; with
 * idx it computes the value at that point. Only the operands that C would
 * evaluate are live: `T != 0 && N % T == 0` does not divide by zero.
 */
struct rx {
	const char *s, *p;
	const struct kf_params *ps;
	const int *idx;		/* NULL: check only */
	char why[256];		/* set on the first error */
	bool runtime;		/* the error is the point's, not the rule's */
	uint64_t used;		/* parameters named, as bits */
};

static int rx_fail(struct rx *x, const char *fmt, const char *arg)
{
	if (!x->why[0]) {
		char msg[200];
		snprintf(msg, sizeof(msg), fmt, arg);
		snprintf(x->why, sizeof(x->why), "%s at column %d", msg,
			 (int)(x->p - x->s) + 1);
	}
	return -1;
}

static void rx_blank(struct rx *x)
{
	while (*x->p == ' ' || *x->p == '\t')
		x->p++;
}

/* Consumes op when it comes next (and, for '<' or '>', is not the start
 * of "<=" or ">=", which are asked for first). */
static bool rx_take(struct rx *x, const char *op)
{
	rx_blank(x);
	size_t n = strlen(op);
	if (strncmp(x->p, op, n))
		return false;
	if (n == 1 && strchr("<>!", op[0]) && x->p[1] == '=')
		return false;
	if (n == 1 && (op[0] == '&' || op[0] == '|') && x->p[1] == op[0])
		return false;
	x->p += n;
	return true;
}

/* The integer value of a parameter's value, or false. */
static bool int_value(const char *v, int64_t *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (!*v || *end || errno)
		return false;
	*out = n;
	return true;
}

static int rx_or(struct rx *x, bool live, int64_t *v);

static int rx_primary(struct rx *x, bool live, int64_t *v)
{
	rx_blank(x);
	*v = 0;
	if (*x->p == '(') {
		x->p++;
		if (rx_or(x, live, v))
			return -1;
		if (!rx_take(x, ")"))
			return rx_fail(x, "expected ')'%s", "");
		return 0;
	}
	if (isdigit((unsigned char)*x->p)) {
		const char *b = x->p;
		while (ident_char((unsigned char)*x->p))
			x->p++;
		char lit[64];
		snprintf(lit, sizeof(lit), "%.*s", (int)(x->p - b), b);
		if (!int_value(lit, v)) {
			x->p = b;
			return rx_fail(x, "'%s' is not an integer", lit);
		}
		return 0;
	}
	if (ident_start((unsigned char)*x->p)) {
		const char *b = x->p;
		while (ident_char((unsigned char)*x->p))
			x->p++;
		size_t len = (size_t)(x->p - b);
		for (int i = 0; i < x->ps->n; i++) {
			const struct kf_param *par = &x->ps->p[i];
			if (strncmp(par->name, b, len) || par->name[len])
				continue;
			x->used |= (uint64_t)1 << i;
			/* Every value an integer: checked once, when the rule
			 * is read (no point given), not at every point. */
			for (int k = 0; !x->idx && k < par->n_values; k++) {
				int64_t n;
				if (!int_value(par->values[k], &n)) {
					x->p = b;
					char m[200];
					snprintf(m, sizeof(m),
						 "parameter %s has the value "
						 "'%.63s', not an integer,",
						 par->name, par->values[k]);
					return rx_fail(x, "%s", m);
				}
			}
			if (x->idx)
				int_value(par->values[x->idx[i]], v);
			return 0;
		}
		char name[KF_PARAM_NAME_CAP + 8];
		snprintf(name, sizeof(name), "%.*s", (int)len, b);
		x->p = b;
		return rx_fail(x,
			       "unknown name '%s' (a rule names only "
			       "parameters declared with KF_PARAM)",
			       name);
	}
	if (!*x->p)
		return rx_fail(x, "expected an operand, found the end%s", "");
	char c[2] = {*x->p, 0};
	return rx_fail(x, "expected an operand, found '%s'", c);
}

static int rx_unary(struct rx *x, bool live, int64_t *v)
{
	if (rx_take(x, "!")) {
		if (rx_unary(x, live, v))
			return -1;
		*v = !*v;
		return 0;
	}
	if (rx_take(x, "-")) {
		if (rx_unary(x, live, v))
			return -1;
		if (*v == INT64_MIN && live && x->idx)
			goto overflow;
		*v = *v == INT64_MIN ? 0 : -*v;
		return 0;
	}
	if (rx_take(x, "+"))
		return rx_unary(x, live, v);
	return rx_primary(x, live, v);
overflow:
	x->runtime = true;
	return rx_fail(x, "overflows%s", "");
}

static int rx_mul(struct rx *x, bool live, int64_t *v)
{
	if (rx_unary(x, live, v))
		return -1;
	for (;;) {
		int op = rx_take(x, "*") ? '*' : rx_take(x, "/") ? '/'
					       : rx_take(x, "%") ? '%' : 0;
		if (!op)
			return 0;
		const char *at = x->p;
		int64_t r;
		if (rx_unary(x, live, &r))
			return -1;
		bool on = live && x->idx;
		if (op == '*') {
			int64_t m;
			if (__builtin_mul_overflow(*v, r, &m)) {
				if (on) {
					x->runtime = true;
					x->p = at;
					rx_blank(x);
					return rx_fail(x, "overflows%s", "");
				}
				m = 0;
			}
			*v = m;
		} else if (r == 0 || (r == -1 && *v == INT64_MIN)) {
			if (on) {
				x->runtime = true;
				x->p = at;
				rx_blank(x);
				return rx_fail(x, r ? "overflows%s"
						    : "division by zero%s",
					       "");
			}
			*v = 0;
		} else {
			*v = op == '/' ? *v / r : *v % r;
		}
	}
}

static int rx_add(struct rx *x, bool live, int64_t *v)
{
	if (rx_mul(x, live, v))
		return -1;
	for (;;) {
		int op = rx_take(x, "+") ? '+' : rx_take(x, "-") ? '-' : 0;
		if (!op)
			return 0;
		const char *at = x->p;
		int64_t r, m;
		if (rx_mul(x, live, &r))
			return -1;
		bool of = op == '+' ? __builtin_add_overflow(*v, r, &m)
				    : __builtin_sub_overflow(*v, r, &m);
		if (of && live && x->idx) {
			x->runtime = true;
			x->p = at;
			rx_blank(x);
			return rx_fail(x, "overflows%s", "");
		}
		*v = of ? 0 : m;
	}
}

static int rx_rel(struct rx *x, bool live, int64_t *v)
{
	if (rx_add(x, live, v))
		return -1;
	for (;;) {
		int op = rx_take(x, "<=")   ? 'l'
			 : rx_take(x, ">=") ? 'g'
			 : rx_take(x, "<")  ? '<'
			 : rx_take(x, ">")  ? '>'
					    : 0;
		if (!op)
			return 0;
		int64_t r;
		if (rx_add(x, live, &r))
			return -1;
		*v = op == 'l' ? *v <= r : op == 'g' ? *v >= r
		     : op == '<' ? *v < r : *v > r;
	}
}

static int rx_eq(struct rx *x, bool live, int64_t *v)
{
	if (rx_rel(x, live, v))
		return -1;
	for (;;) {
		int op = rx_take(x, "==") ? '=' : rx_take(x, "!=") ? '!' : 0;
		if (!op)
			return 0;
		int64_t r;
		if (rx_rel(x, live, &r))
			return -1;
		*v = op == '=' ? *v == r : *v != r;
	}
}

static int rx_and(struct rx *x, bool live, int64_t *v)
{
	if (rx_eq(x, live, v))
		return -1;
	while (rx_take(x, "&&")) {
		int64_t r;
		if (rx_eq(x, live && *v, &r))
			return -1;
		*v = *v && r;
	}
	return 0;
}

static int rx_or(struct rx *x, bool live, int64_t *v)
{
	if (rx_and(x, live, v))
		return -1;
	while (rx_take(x, "||")) {
		int64_t r;
		if (rx_and(x, live && !*v, &r))
			return -1;
		*v = *v || r;
	}
	return 0;
}

/* Evaluates expr (check mode when idx is NULL); 0 with *v, or -1 with
 * x->why. */
static int rx_run(struct rx *x, const char *expr, const struct kf_params *ps,
		  const int *idx, int64_t *v)
{
	memset(x, 0, sizeof(*x));
	x->s = x->p = expr;
	x->ps = ps;
	x->idx = idx;
	if (rx_or(x, true, v))
		return -1;
	rx_blank(x);
	if (*x->p) {
		if (x->p[0] == '=' && x->p[1] != '=')
			return rx_fail(x, "unexpected '=' (write '==' to "
					  "compare)%s", "");
		char c[2] = {*x->p, 0};
		return rx_fail(x, "unexpected '%s'", c);
	}
	return 0;
}

/* "BX=16 BY=32" for the parameters of `used` at idx. */
static void point_text(const struct kf_params *ps, const int *idx,
		       uint64_t used, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < ps->n && n < cap; i++)
		if (used & ((uint64_t)1 << i))
			n += (size_t)snprintf(buf + n, cap - n, "%s%s=%s",
					      n ? " " : "", ps->p[i].name,
					      ps->p[i].values[idx[i]]);
}

static int rule_error(const struct kf_params *ps, const struct kf_param_rule *r,
		      const char *why, struct kf_err *err)
{
	return kf_err_set(err, KF_EINVAL, "%s:%d: KF_PARAM_RULE(%s): %s",
			  ps->origin[0] ? ps->origin : "source", r->line,
			  r->expr, why);
}

int kf_policy_params_allowed(const struct kf_params *ps, const int *idx,
			     struct kf_err *err)
{
	for (int i = 0; i < ps->n_rules; i++) {
		struct rx x;
		int64_t v = 0;
		if (rx_run(&x, ps->rules[i].expr, ps, idx, &v)) {
			char pt[512], why[900];
			point_text(ps, idx, x.used ? x.used : ~(uint64_t)0, pt,
				   sizeof(pt));
			snprintf(why, sizeof(why), "%s, for the point %s",
				 x.why, pt);
			return rule_error(ps, &ps->rules[i], why, err);
		}
		if (!v)
			return 0;
	}
	return 1;
}

/* Calls fn on every point of the parameters in `used` (the others at
 * value 0) until it returns non-zero; false when they number more than
 * cap. */
static int each_point(const struct kf_params *ps, uint64_t used, int64_t cap,
		      int (*fn)(const struct kf_params *, const int *, void *),
		      void *ctx, bool *too_many)
{
	int64_t n = 1;
	for (int i = 0; i < ps->n; i++)
		if (used & ((uint64_t)1 << i)) {
			n *= ps->p[i].n_values;
			if (n > cap) {
				*too_many = true;
				return 0;
			}
		}
	*too_many = false;
	int idx[KF_PARAM_MAX] = {0};
	for (int64_t k = 0; k < n; k++) {
		int64_t r = k;
		for (int i = 0; i < ps->n; i++)
			if (used & ((uint64_t)1 << i)) {
				idx[i] = (int)(r % ps->p[i].n_values);
				r /= ps->p[i].n_values;
			}
		int rc = fn(ps, idx, ctx);
		if (rc)
			return rc;
	}
	return 0;
}

struct rule_check {
	const struct kf_param_rule *only; /* NULL: every rule */
	struct kf_err *err;
	bool any;
};

static int check_point(const struct kf_params *ps, const int *idx, void *ctx)
{
	struct rule_check *c = ctx;
	if (c->only) {
		struct kf_params one = *ps;
		one.n_rules = 1;
		one.rules[0] = *c->only;
		int a = kf_policy_params_allowed(&one, idx, c->err);
		if (a < 0)
			return a;
		c->any |= a == 1;
		return 0;
	}
	int a = kf_policy_params_allowed(ps, idx, c->err);
	if (a < 0)
		return a;
	c->any |= a == 1;
	return a == 1 ? 1 : 0; /* one allowed point is enough */
}

/* The points rules_check may enumerate: shared by the rules when each is
 * checked alone (a model's reply of sixteen rules over five parameters of
 * fifteen values each took a minute to read before). */
#define RULE_CHECK_POINTS ((int64_t)1 << 20)

/* Checks the rules of ps once every declaration is read. */
static int rules_check(struct kf_params *ps, struct kf_err *err)
{
	uint64_t all = 0;
	for (int i = 0; i < ps->n_rules; i++) {
		struct kf_param_rule *r = &ps->rules[i];
		if (ps->n == 0)
			return rule_error(ps, r,
					  "no KF_PARAM is declared, so there "
					  "is nothing for a rule to constrain",
					  err);
		struct rx x;
		int64_t v;
		if (rx_run(&x, r->expr, ps, NULL, &v))
			return rule_error(ps, r, x.why, err);
		all |= x.used;
		/* Every point of the parameters it names: a division by
		 * zero anywhere, or no point at all that satisfies it. */
		struct rule_check c = {r, err, false};
		bool too_many;
		int rc = each_point(ps, x.used, RULE_CHECK_POINTS / ps->n_rules,
				    check_point, &c, &too_many);
		if (rc < 0)
			return rc;
		if (!too_many && !c.any)
			return rule_error(ps, r,
					  x.used ? "no choice of the "
						   "parameters' values "
						   "satisfies it"
						 : "it is false (0): no point "
						   "satisfies it",
					  err);
	}
	if (ps->n_rules > 1) {
		struct rule_check c = {NULL, err, false};
		bool too_many;
		int rc = each_point(ps, all, RULE_CHECK_POINTS, check_point,
				    &c, &too_many);
		if (rc < 0)
			return rc;
		if (!too_many && !c.any)
			return kf_err_set(
			    err, KF_EINVAL,
			    "%s: its %d KF_PARAM_RULE lines (lines %d to "
			    "%d) together allow no point: each is satisfied "
			    "somewhere, but never all at once",
			    ps->origin[0] ? ps->origin : "source", ps->n_rules,
			    ps->rules[0].line, ps->rules[ps->n_rules - 1].line);
	}
	return 0;
}

/* Parses a rule line [p, end) into r; 0 or KF_EINVAL. */
static int parse_rule(const char *p, const char *end, struct kf_param_rule *r,
		      const char *where, struct kf_err *err)
{
	p += sizeof(rule_decl) - 1;
	int depth = 1;
	const char *q = p;
	while (q < end && depth > 0) {
		if (*q == '(')
			depth++;
		else if (*q == ')')
			depth--;
		if (depth > 0)
			q++;
	}
	if (q >= end)
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM_RULE(%.*s: no closing ')' on "
				  "the same line",
				  where, (int)(end - p > 80 ? 80 : end - p), p);
	while (p < q && (*p == ' ' || *p == '\t'))
		p++;
	const char *e = q;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e == p)
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM_RULE(): an empty rule", where);
	if ((size_t)(e - p) >= KF_PARAM_RULE_CAP)
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM_RULE: a rule of %d characters "
				  "is over the cap of %d",
				  where, (int)(e - p), KF_PARAM_RULE_CAP - 1);
	snprintf(r->expr, sizeof(r->expr), "%.*s", (int)(e - p), p);
	q++;
	while (q < end && (*q == ' ' || *q == '\t' || *q == ';' || *q == '\r'))
		q++;
	if (q < end && strncmp(q, "//", 2) && strncmp(q, "/*", 2))
		return kf_err_set(err, KF_EINVAL,
				  "%s: KF_PARAM_RULE(%s): unexpected text "
				  "after ')'",
				  where, r->expr);
	return 0;
}

int kf_policy_params_parse(const char *source, const char *origin,
			   struct kf_params *out, struct kf_err *err)
{
	out->n = 0;
	out->n_rules = 0;
	snprintf(out->origin, sizeof(out->origin), "%s",
		 origin ? origin : "source");
	int line = 0;
	for (const char *p = source; *p;) {
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		line++;
		const char *d = decl_start(p);
		const char *rd = rule_start(p);
		if (rd && rd < end) {
			char where[512];
			snprintf(where, sizeof(where), "%s:%d",
				 origin ? origin : "source", line);
			if (out->n_rules == KF_PARAM_RULES_MAX) {
				out->n = out->n_rules = 0;
				return kf_err_set(err, KF_EINVAL,
						  "%s: more than %d "
						  "KF_PARAM_RULE lines",
						  where, KF_PARAM_RULES_MAX);
			}
			struct kf_param_rule *r = &out->rules[out->n_rules];
			int rc = parse_rule(rd, end, r, where, err);
			if (rc) {
				out->n = out->n_rules = 0;
				return rc;
			}
			r->line = line;
			out->n_rules++;
		}
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
	int rc = rules_check(out, err);
	if (rc)
		out->n = out->n_rules = 0;
	return rc;
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
		int which = -1, rule = -1;
		for (int i = 0; i < ps->n; i++)
			if (ps->p[i].line == line)
				which = i;
		for (int i = 0; i < ps->n_rules; i++)
			if (ps->rules[i].line == line)
				rule = i;
		if (rule >= 0) {
			/* Kept as a comment, so the concrete source declares
			 * nothing: a checked rule holds no comment mark (a
			 * '*' next to a '/' is not an expression). */
			const char *d = rule_start(p);
			kf_strbuf_addf(&sb, "%.*s/* KF_PARAM_RULE(%s) */",
				       (int)(d - p), p, ps->rules[rule].expr);
		} else if (which >= 0) {
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
