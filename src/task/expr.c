/*
 * expr.c: the arithmetic expressions of task.json (shapes, FLOP and byte
 * counts, distribution parameters). A recursive-descent parser compiles the
 * text to postfix code, which is evaluated on a small fixed stack.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/task.h>

#include "task_int.h"

/* Parser recursion is bounded so that hostile input cannot exhaust the C
 * stack; the postfix stack needs at most about twice the nesting depth. */
#define MAX_DEPTH 48
#define EVAL_STACK 128

enum op {
	OP_NUM,
	OP_VAR,
	OP_NEG,
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_MOD,
	OP_MIN,
	OP_MAX,
	OP_CDIV,
};

struct ins {
	enum op op;
	int var;    /* OP_VAR: index into the names */
	double num; /* OP_NUM */
};

struct kf_expr {
	char *src;
	struct ins *code; /* postfix */
	int n_code;
	bool uses_names;
};

struct parser {
	const char *src;
	const char *p;
	const char *const *names;
	int n_names;
	struct ins *code;
	int n_code, cap;
	int depth;
	bool uses_names;
	struct kf_err *err;
};

static void emit(struct parser *ps, enum op op, int var, double num)
{
	if (ps->n_code == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 16;
		ps->code =
		    kf_xrealloc(ps->code, (size_t)ps->cap * sizeof(*ps->code));
	}
	ps->code[ps->n_code++] = (struct ins){op, var, num};
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
	       *ps->p == '\r')
		ps->p++;
}

/* A syntax error at the current position; the column counts from 1. */
static int syntax(struct parser *ps, const char *why)
{
	return kf_err_set(ps->err, KF_EINVAL, "in '%s' at column %d: %s",
			  ps->src, (int)(ps->p - ps->src) + 1, why);
}

static int is_name_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static int is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static int parse_expr(struct parser *ps);

static int parse_number(struct parser *ps)
{
	/* Scan the extent ourselves: strtod alone would also take hex, "inf"
	 * and "nan", which are not part of the language. */
	const char *s = ps->p;
	const char *q = s;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q == '.') {
		q++;
		while (isdigit((unsigned char)*q))
			q++;
	}
	if (*q == 'e' || *q == 'E') {
		const char *x = q + 1;
		if (*x == '+' || *x == '-')
			x++;
		if (isdigit((unsigned char)*x)) {
			while (isdigit((unsigned char)*x))
				x++;
			q = x;
		}
	}
	char buf[64];
	size_t len = (size_t)(q - s);
	if (len >= sizeof(buf))
		return syntax(ps, "number too long");
	memcpy(buf, s, len);
	buf[len] = 0;
	double v = strtod(buf, NULL);
	if (!isfinite(v))
		return syntax(ps, "number out of range");
	ps->p = q;
	emit(ps, OP_NUM, 0, v);
	return 0;
}

/* min(a, b), max(a, b), cdiv(a, b): the name has been read. */
static int parse_call(struct parser *ps, enum op op)
{
	int rc;
	skip_space(ps);
	ps->p++; /* '(' */
	if ((rc = parse_expr(ps)))
		return rc;
	skip_space(ps);
	if (*ps->p != ',')
		return syntax(ps, "expected ',': functions take two arguments");
	ps->p++;
	if ((rc = parse_expr(ps)))
		return rc;
	skip_space(ps);
	if (*ps->p != ')')
		return syntax(ps, "expected ')': functions take two arguments");
	ps->p++;
	emit(ps, op, 0, 0);
	return 0;
}

static int parse_name(struct parser *ps)
{
	const char *s = ps->p;
	while (is_name_char(*ps->p))
		ps->p++;
	size_t len = (size_t)(ps->p - s);
	const char *after = ps->p;
	while (*after == ' ' || *after == '\t' || *after == '\n' ||
	       *after == '\r')
		after++;
	static const struct {
		const char *name;
		enum op op;
	} funcs[] = {{"min", OP_MIN}, {"max", OP_MAX}, {"cdiv", OP_CDIV}};
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		if (strlen(funcs[i].name) != len ||
		    strncmp(s, funcs[i].name, len) != 0)
			continue;
		if (*after != '(') {
			ps->p = s;
			return syntax(ps, "a function needs its arguments, "
					  "as in min(a, b)");
		}
		return parse_call(ps, funcs[i].op);
	}
	if (*after == '(') {
		ps->p = s;
		return kf_err_set(ps->err, KF_EINVAL,
				  "in '%s' at column %d: unknown function "
				  "'%.*s' (functions: min, max, cdiv)",
				  ps->src, (int)(s - ps->src) + 1, (int)len, s);
	}
	for (int i = 0; i < ps->n_names; i++) {
		if (strlen(ps->names[i]) == len &&
		    strncmp(s, ps->names[i], len) == 0) {
			emit(ps, OP_VAR, i, 0);
			ps->uses_names = true;
			return 0;
		}
	}
	struct kf_strbuf known = KF_STRBUF_INIT;
	for (int i = 0; i < ps->n_names; i++)
		kf_strbuf_addf(&known, "%s%s", i ? ", " : "", ps->names[i]);
	kf_err_set(ps->err, KF_EINVAL, "unknown name '%.*s' in '%s' (%s%s)",
		   (int)len, s, ps->src,
		   ps->n_names ? "names: " : "no names are defined",
		   kf_strbuf_str(&known));
	kf_strbuf_release(&known);
	return KF_EINVAL;
}

static int parse_unary(struct parser *ps)
{
	int rc;
	skip_space(ps);
	if (++ps->depth > MAX_DEPTH)
		return syntax(ps, "nested too deeply");
	char c = *ps->p;
	if (c == '-') {
		ps->p++;
		if ((rc = parse_unary(ps)))
			return rc;
		emit(ps, OP_NEG, 0, 0);
	} else if (c == '(') {
		ps->p++;
		if ((rc = parse_expr(ps)))
			return rc;
		skip_space(ps);
		if (*ps->p != ')')
			return syntax(ps, "expected ')'");
		ps->p++;
	} else if (isdigit((unsigned char)c) ||
		   (c == '.' && isdigit((unsigned char)ps->p[1]))) {
		if ((rc = parse_number(ps)))
			return rc;
	} else if (is_name_start(c)) {
		if ((rc = parse_name(ps)))
			return rc;
	} else if (c == 0) {
		return syntax(ps, "unexpected end: expected a number, a name "
				  "or '('");
	} else {
		return syntax(ps, "expected a number, a name or '('");
	}
	ps->depth--;
	return 0;
}

static int parse_term(struct parser *ps)
{
	int rc = parse_unary(ps);
	while (!rc) {
		skip_space(ps);
		enum op op;
		if (*ps->p == '*')
			op = OP_MUL;
		else if (*ps->p == '/')
			op = OP_DIV;
		else if (*ps->p == '%')
			op = OP_MOD;
		else
			break;
		ps->p++;
		if ((rc = parse_unary(ps)))
			break;
		emit(ps, op, 0, 0);
	}
	return rc;
}

static int parse_expr(struct parser *ps)
{
	int rc = parse_term(ps);
	while (!rc) {
		skip_space(ps);
		enum op op;
		if (*ps->p == '+')
			op = OP_ADD;
		else if (*ps->p == '-')
			op = OP_SUB;
		else
			break;
		ps->p++;
		if ((rc = parse_term(ps)))
			break;
		emit(ps, op, 0, 0);
	}
	return rc;
}

/* The deepest the evaluation stack gets; the code is well formed. */
static int stack_need(const struct ins *code, int n)
{
	int sp = 0, most = 0;
	for (int i = 0; i < n; i++) {
		if (code[i].op == OP_NUM || code[i].op == OP_VAR)
			sp++;
		else if (code[i].op != OP_NEG)
			sp--;
		if (sp > most)
			most = sp;
	}
	return most;
}

int kf_expr_parse(const char *src, const char *const *names, int n_names,
		  struct kf_expr **out, struct kf_err *err)
{
	struct parser ps = {
	    .src = src,
	    .p = src,
	    .names = names,
	    .n_names = n_names,
	    .err = err,
	};
	int rc = 0;
	*out = NULL;
	if (strlen(src) > KF_EXPR_MAX_LEN) {
		rc = kf_err_set(err, KF_EINVAL,
				"expression longer than %d characters",
				KF_EXPR_MAX_LEN);
		goto out;
	}
	skip_space(&ps);
	if (!*ps.p) {
		rc = kf_err_set(err, KF_EINVAL, "empty expression");
		goto out;
	}
	if ((rc = parse_expr(&ps)))
		goto out;
	skip_space(&ps);
	if (*ps.p) {
		rc = *ps.p == ')'   ? syntax(&ps, "unmatched ')'")
		     : *ps.p == ',' ? syntax(&ps, "',' outside a function")
				    : syntax(&ps, "expected an operator");
		goto out;
	}
	if (stack_need(ps.code, ps.n_code) > EVAL_STACK) {
		rc = kf_err_set(err, KF_EINVAL, "in '%s': nested too deeply",
				src);
		goto out;
	}
	struct kf_expr *e = kf_xcalloc(1, sizeof(*e));
	e->src = kf_xstrdup(src);
	e->code = ps.code;
	e->n_code = ps.n_code;
	e->uses_names = ps.uses_names;
	ps.code = NULL;
	*out = e;
out:
	free(ps.code);
	return rc;
}

struct kf_expr *kf_expr_const(double v)
{
	/* The shortest text that reads back as v, so that kf_expr_src shows
	 * "0.1" rather than "0.10000000000000001". */
	char buf[40];
	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, sizeof(buf), "%.0f", v); /* 2e6 as "2000000" */
	} else {
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	}
	struct kf_expr *e = kf_xcalloc(1, sizeof(*e));
	e->src = kf_xstrdup(buf);
	e->code = kf_xmalloc(sizeof(*e->code));
	e->code[0] = (struct ins){OP_NUM, 0, v};
	e->n_code = 1;
	return e;
}

bool kf_expr_is_const(const struct kf_expr *e)
{
	return !e->uses_names;
}

double kf_expr_eval(const struct kf_expr *e, const int64_t *values)
{
	double st[EVAL_STACK];
	int sp = 0;
	for (int i = 0; i < e->n_code; i++) {
		const struct ins *in = &e->code[i];
		double a, b;
		switch (in->op) {
		case OP_NUM:
			st[sp++] = in->num;
			continue;
		case OP_VAR:
			st[sp++] = (double)values[in->var];
			continue;
		case OP_NEG:
			st[sp - 1] = -st[sp - 1];
			continue;
		default:
			break;
		}
		b = st[--sp];
		a = st[sp - 1];
		switch (in->op) {
		case OP_ADD:
			a += b;
			break;
		case OP_SUB:
			a -= b;
			break;
		case OP_MUL:
			a *= b;
			break;
		case OP_DIV:
			a /= b;
			break;
		case OP_MOD:
			a = fmod(a, b);
			break;
		case OP_MIN:
			a = a < b ? a : b;
			break;
		case OP_MAX:
			a = a > b ? a : b;
			break;
		case OP_CDIV:
			a = ceil(a / b);
			break;
		default:
			KF_ASSERT(!"unknown expression op");
		}
		st[sp - 1] = a;
	}
	KF_ASSERT(sp == 1);
	return st[0];
}

const char *kf_expr_src(const struct kf_expr *e)
{
	return e->src;
}

void kf_expr_free(struct kf_expr *e)
{
	if (!e)
		return;
	free(e->src);
	free(e->code);
	free(e);
}
