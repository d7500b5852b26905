/*
 * expr.c: the expression language of attention specs (docs/attention.md):
 * a recursive-descent parser into a typed AST, checked as it is built
 * (names, functions, arity, types), an evaluator the spec's checks run,
 * and an emitter that writes the AST as a C expression, valid in host C
 * and in CUDA device code alike.
 *
 *   or      := and { "||" and }
 *   and     := cmp { "&&" cmp }
 *   cmp     := add [ ("<" | "<=" | ">" | ">=" | "==" | "!=") add ]
 *   add     := mul { ("+" | "-") mul }
 *   mul     := unary { ("*" | "/" | "%") unary }
 *   unary   := ("-" | "!") unary | primary
 *   primary := number | name | name "(" or { "," or } ")" | "(" or ")"
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_int.h"

#define MAX_TEXT 1024
#define MAX_DEPTH 48

static const char *const var_names[KFA_NVARS] = {
    "score", "b", "h", "q_idx", "kv_idx", "n_heads"};

enum fn {
	FN_TANH,
	FN_EXP,
	FN_EXP2,
	FN_LOG,
	FN_SQRT,
	FN_ABS,
	FN_MIN,
	FN_MAX,
	FN_WHERE,
	FN_ALIBI,
	N_FN
};

static const struct {
	const char *name;
	int nargs;
	const char *c; /* the C function for float arguments */
} fns[N_FN] = {
    {"tanh", 1, "tanhf"},	{"exp", 1, "expf"},	  {"exp2", 1, "exp2f"},
    {"log", 1, "logf"},		{"sqrt", 1, "sqrtf"},	  {"abs", 1, "fabsf"},
    {"min", 2, "fminf"},	{"max", 2, "fmaxf"},	  {"where", 3, NULL},
    {"alibi_slope", 1, NULL},
};

enum kind { K_NUM, K_VAR, K_PARAM, K_NEG, K_NOT, K_BIN, K_CALL };

/* Binary operators, by their text. */
static const char *const bin_ops[] = {"||", "&&", "<=", ">=", "==", "!=",
				      "<",  ">",  "+",	"-",  "*",  "/",
				      "%"};
enum { OP_OR, OP_AND, OP_LE, OP_GE, OP_EQ, OP_NE, OP_LT, OP_GT,
       OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD };

struct kfa_node {
	enum kind kind;
	enum kfa_type type;
	int op;	 /* K_BIN: OP_*; K_VAR: enum kfa_var; K_PARAM: index;
		    K_CALL: enum fn */
	double num;
	int pos; /* column, from 1 */
	int nargs;
	struct kfa_node *a[3];
};

struct parser {
	const char *s;
	size_t i;
	int depth;
	const struct kfa_scope *scope;
	struct kf_err *err;
};

static void node_free(struct kfa_node *n)
{
	if (!n)
		return;
	for (int i = 0; i < 3; i++)
		node_free(n->a[i]);
	free(n);
}

static struct kfa_node *node(enum kind k, int pos)
{
	struct kfa_node *n = kf_xcalloc(1, sizeof(*n));
	n->kind = k;
	n->pos = pos;
	return n;
}

static const char *type_name(enum kfa_type t)
{
	return t == KFA_BOOL ? "a condition"
	       : t == KFA_INT ? "an integer"
			      : "a number";
}

static void skip_space(struct parser *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n')
		p->i++;
}

static struct kfa_node *fail(struct parser *p, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct kfa_node *fail(struct parser *p, int pos, const char *fmt, ...)
{
	if (p->err->code)
		return NULL;
	char why[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	kf_err_set(p->err, KF_EINVAL, "%s at column %d in '%s'", why, pos,
		   p->s);
	return NULL;
}

static struct kfa_node *parse_or(struct parser *p);

static int known_names(const struct parser *p, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int v = 0; v < KFA_NVARS; v++)
		if (p->scope->vars & (1u << v))
			used += (size_t)snprintf(buf + used, cap - used,
						 "%s%s", used ? ", " : "",
						 var_names[v]);
	for (int i = 0; i < p->scope->n_params && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s",
					 used ? ", " : "",
					 p->scope->params[i].name);
	return 0;
}

static bool numeric(const struct kfa_node *n)
{
	return n->type != KFA_BOOL;
}

static struct kfa_node *parse_primary(struct parser *p)
{
	skip_space(p);
	int pos = (int)p->i + 1;
	char c = p->s[p->i];
	if (c == '(') {
		p->i++;
		if (++p->depth > MAX_DEPTH)
			return fail(p, pos, "nesting deeper than %d",
				    MAX_DEPTH);
		struct kfa_node *n = parse_or(p);
		p->depth--;
		if (!n)
			return NULL;
		skip_space(p);
		if (p->s[p->i] != ')') {
			node_free(n);
			return fail(p, (int)p->i + 1, "expected ')'");
		}
		p->i++;
		return n;
	}
	if (isdigit((unsigned char)c) ||
	    (c == '.' && isdigit((unsigned char)p->s[p->i + 1]))) {
		size_t j = p->i;
		bool is_int = true;
		while (isdigit((unsigned char)p->s[j]))
			j++;
		if (p->s[j] == '.') {
			is_int = false;
			j++;
			while (isdigit((unsigned char)p->s[j]))
				j++;
		}
		if (p->s[j] == 'e' || p->s[j] == 'E') {
			size_t k = j + 1;
			if (p->s[k] == '+' || p->s[k] == '-')
				k++;
			if (isdigit((unsigned char)p->s[k])) {
				is_int = false;
				j = k;
				while (isdigit((unsigned char)p->s[j]))
					j++;
			}
		}
		char buf[64];
		if (j - p->i >= sizeof(buf))
			return fail(p, pos, "number too long");
		memcpy(buf, p->s + p->i, j - p->i);
		buf[j - p->i] = '\0';
		p->i = j;
		if (isalpha((unsigned char)p->s[j]) || p->s[j] == '_')
			return fail(p, (int)j + 1, "unexpected '%c' after a "
				    "number", p->s[j]);
		struct kfa_node *n = node(K_NUM, pos);
		n->num = strtod(buf, NULL);
		if (is_int && n->num > 2147483647.0) {
			node_free(n);
			return fail(p, pos, "integer %s out of range "
				    "(at most 2147483647)", buf);
		}
		if (!isfinite(n->num)) {
			node_free(n);
			return fail(p, pos, "number %s is not finite", buf);
		}
		n->type = is_int ? KFA_INT : KFA_FLOAT;
		return n;
	}
	if (isalpha((unsigned char)c) || c == '_') {
		size_t j = p->i;
		while (isalnum((unsigned char)p->s[j]) || p->s[j] == '_')
			j++;
		char name[64];
		if (j - p->i >= sizeof(name))
			return fail(p, pos, "name too long");
		memcpy(name, p->s + p->i, j - p->i);
		name[j - p->i] = '\0';
		p->i = j;
		skip_space(p);
		if (p->s[p->i] == '(') {
			int f = -1;
			for (int k = 0; k < N_FN; k++)
				if (!strcmp(fns[k].name, name))
					f = k;
			if (f < 0)
				return fail(p, pos,
					    "unknown function '%s' (known: "
					    "tanh, exp, exp2, log, sqrt, abs, "
					    "min, max, where, alibi_slope)",
					    name);
			p->i++;
			if (++p->depth > MAX_DEPTH)
				return fail(p, pos, "nesting deeper than %d",
					    MAX_DEPTH);
			struct kfa_node *n = node(K_CALL, pos);
			n->op = f;
			for (;;) {
				if (n->nargs == 3) {
					node_free(n);
					return fail(p, pos, "%s takes %d "
						    "argument%s", name,
						    fns[f].nargs,
						    fns[f].nargs > 1 ? "s"
								     : "");
				}
				struct kfa_node *a = parse_or(p);
				if (!a) {
					node_free(n);
					return NULL;
				}
				n->a[n->nargs++] = a;
				skip_space(p);
				if (p->s[p->i] == ',') {
					p->i++;
					continue;
				}
				if (p->s[p->i] == ')') {
					p->i++;
					break;
				}
				node_free(n);
				return fail(p, (int)p->i + 1,
					    "expected ',' or ')'");
			}
			p->depth--;
			if (n->nargs != fns[f].nargs) {
				int got = n->nargs;
				node_free(n);
				return fail(p, pos,
					    "%s takes %d argument%s, got %d",
					    name, fns[f].nargs,
					    fns[f].nargs > 1 ? "s" : "", got);
			}
			/* types */
			for (int k = 0; k < n->nargs; k++) {
				bool want_bool = f == FN_WHERE && k == 0;
				bool is_bool = n->a[k]->type == KFA_BOOL;
				if (want_bool != is_bool) {
					int ap = n->a[k]->pos;
					enum kfa_type t = n->a[k]->type;
					node_free(n);
					return fail(p, ap,
						    "argument %d of %s must "
						    "be %s, got %s",
						    k + 1, name,
						    want_bool ? "a condition"
							      : "a number",
						    type_name(t));
				}
			}
			if (f == FN_ALIBI && n->a[0]->type != KFA_INT) {
				int ap = n->a[0]->pos;
				node_free(n);
				return fail(p, ap, "alibi_slope takes a head "
					    "index, an integer expression "
					    "(such as h)");
			}
			switch (f) {
			case FN_ABS:
				n->type = n->a[0]->type;
				break;
			case FN_MIN:
			case FN_MAX:
				n->type = n->a[0]->type == KFA_INT &&
						  n->a[1]->type == KFA_INT
					      ? KFA_INT
					      : KFA_FLOAT;
				break;
			case FN_WHERE:
				n->type = n->a[1]->type == KFA_INT &&
						  n->a[2]->type == KFA_INT
					      ? KFA_INT
					      : KFA_FLOAT;
				break;
			default:
				n->type = KFA_FLOAT;
			}
			return n;
		}
		for (int v = 0; v < KFA_NVARS; v++)
			if (!strcmp(var_names[v], name)) {
				if (!(p->scope->vars & (1u << v)))
					break;
				struct kfa_node *n = node(K_VAR, pos);
				n->op = v;
				n->type = v == KFA_V_SCORE ? KFA_FLOAT
							   : KFA_INT;
				return n;
			}
		for (int k = 0; k < p->scope->n_params; k++)
			if (!strcmp(p->scope->params[k].name, name)) {
				struct kfa_node *n = node(K_PARAM, pos);
				n->op = k;
				n->num = p->scope->params[k].value;
				n->type = p->scope->params[k].is_int
					      ? KFA_INT
					      : KFA_FLOAT;
				return n;
			}
		char known[512];
		known_names(p, known, sizeof(known));
		return fail(p, pos, "unknown identifier '%s' (known here: %s)",
			    name, known);
	}
	if (!c)
		return fail(p, pos, "unexpected end of expression");
	return fail(p, pos, "unexpected '%c'", c);
}

static struct kfa_node *parse_unary(struct parser *p)
{
	skip_space(p);
	int pos = (int)p->i + 1;
	char c = p->s[p->i];
	if ((c == '-' || c == '!') && p->s[p->i + 1] != '=') {
		p->i++;
		if (++p->depth > MAX_DEPTH)
			return fail(p, pos, "nesting deeper than %d",
				    MAX_DEPTH);
		struct kfa_node *a = parse_unary(p);
		p->depth--;
		if (!a)
			return NULL;
		if ((c == '-') != numeric(a)) {
			enum kfa_type t = a->type;
			node_free(a);
			return fail(p, pos, "'%c' needs %s, got %s", c,
				    c == '-' ? "a number" : "a condition",
				    type_name(t));
		}
		struct kfa_node *n = node(c == '-' ? K_NEG : K_NOT, pos);
		n->a[0] = a;
		n->type = a->type;
		return n;
	}
	return parse_primary(p);
}

/* The operator at p among ops[first..last], or -1. */
static int peek_op(struct parser *p, int first, int last)
{
	skip_space(p);
	for (int k = first; k <= last; k++) {
		size_t len = strlen(bin_ops[k]);
		if (!strncmp(p->s + p->i, bin_ops[k], len)) {
			/* "<" must not be the start of "<=" etc. (ordered) */
			return k;
		}
	}
	return -1;
}

static struct kfa_node *binary(struct parser *p, int op, int pos,
			       struct kfa_node *l, struct kfa_node *r)
{
	bool logic = op == OP_OR || op == OP_AND;
	bool cmp = op >= OP_LE && op <= OP_GT;
	const char *txt = bin_ops[op];
	struct kfa_node *bad = NULL;
	if (logic)
		bad = l->type != KFA_BOOL ? l : r->type != KFA_BOOL ? r : NULL;
	else
		bad = !numeric(l) ? l : !numeric(r) ? r : NULL;
	if (bad) {
		enum kfa_type t = bad->type;
		int bp = bad->pos;
		node_free(l);
		node_free(r);
		return fail(p, bp, "'%s' needs %s, got %s", txt,
			    logic ? "conditions" : "numbers", type_name(t));
	}
	if (op == OP_MOD && (l->type != KFA_INT || r->type != KFA_INT)) {
		node_free(l);
		node_free(r);
		return fail(p, pos, "'%%' needs integers");
	}
	struct kfa_node *n = node(K_BIN, pos);
	n->op = op;
	n->a[0] = l;
	n->a[1] = r;
	n->type = logic || cmp ? KFA_BOOL
		  : l->type == KFA_INT && r->type == KFA_INT ? KFA_INT
							     : KFA_FLOAT;
	return n;
}

static struct kfa_node *parse_mul(struct parser *p)
{
	struct kfa_node *l = parse_unary(p);
	while (l) {
		int op = peek_op(p, OP_MUL, OP_MOD);
		if (op < 0)
			break;
		int pos = (int)p->i + 1;
		p->i += strlen(bin_ops[op]);
		struct kfa_node *r = parse_unary(p);
		if (!r) {
			node_free(l);
			return NULL;
		}
		l = binary(p, op, pos, l, r);
	}
	return l;
}

static struct kfa_node *parse_add(struct parser *p)
{
	struct kfa_node *l = parse_mul(p);
	while (l) {
		int op = peek_op(p, OP_ADD, OP_SUB);
		if (op < 0)
			break;
		int pos = (int)p->i + 1;
		p->i += strlen(bin_ops[op]);
		struct kfa_node *r = parse_mul(p);
		if (!r) {
			node_free(l);
			return NULL;
		}
		l = binary(p, op, pos, l, r);
	}
	return l;
}

static struct kfa_node *parse_cmp(struct parser *p)
{
	struct kfa_node *l = parse_add(p);
	if (!l)
		return NULL;
	int op = peek_op(p, OP_LE, OP_GT);
	if (op < 0)
		return l;
	int pos = (int)p->i + 1;
	p->i += strlen(bin_ops[op]);
	struct kfa_node *r = parse_add(p);
	if (!r) {
		node_free(l);
		return NULL;
	}
	l = binary(p, op, pos, l, r);
	if (l && peek_op(p, OP_LE, OP_GT) >= 0) {
		node_free(l);
		return fail(p, (int)p->i + 1,
			    "comparisons do not chain: write a < b && b < c");
	}
	return l;
}

static struct kfa_node *parse_and(struct parser *p)
{
	struct kfa_node *l = parse_cmp(p);
	while (l && peek_op(p, OP_AND, OP_AND) >= 0) {
		int pos = (int)p->i + 1;
		p->i += 2;
		struct kfa_node *r = parse_cmp(p);
		if (!r) {
			node_free(l);
			return NULL;
		}
		l = binary(p, OP_AND, pos, l, r);
	}
	return l;
}

static struct kfa_node *parse_or(struct parser *p)
{
	struct kfa_node *l = parse_and(p);
	while (l && peek_op(p, OP_OR, OP_OR) >= 0) {
		int pos = (int)p->i + 1;
		p->i += 2;
		struct kfa_node *r = parse_and(p);
		if (!r) {
			node_free(l);
			return NULL;
		}
		l = binary(p, OP_OR, pos, l, r);
	}
	return l;
}

int kfa_expr_parse(const char *text, const struct kfa_scope *scope,
		   struct kfa_expr *out, struct kf_err *err)
{
	memset(out, 0, sizeof(*out));
	if (strlen(text) > MAX_TEXT)
		return kf_err_set(err, KF_EINVAL,
				  "expression longer than %d characters",
				  MAX_TEXT);
	struct parser p = {text, 0, 0, scope, err};
	err->code = 0;
	struct kfa_node *n = parse_or(&p);
	if (n) {
		skip_space(&p);
		if (p.s[p.i]) {
			node_free(n);
			n = fail(&p, (int)p.i + 1, "unexpected '%c'",
				 p.s[p.i]);
		}
	}
	if (!n)
		return err->code ? err->code : KF_EINVAL;
	out->root = n;
	out->type = n->type;
	out->text = kf_xstrdup(text);
	return 0;
}

void kfa_expr_release(struct kfa_expr *e)
{
	node_free(e->root);
	free(e->text);
	memset(e, 0, sizeof(*e));
}

static double as_f(struct kfa_value v)
{
	return v.type == KFA_FLOAT ? v.f : (double)v.i;
}

/* C's float functions, in double: the checks need signs and ranges, not
 * the last bit. */
static int eval(const struct kfa_node *n, const double *vars,
		struct kfa_value *out, struct kf_err *err)
{
	struct kfa_value a[3];
	out->type = n->type;
	switch (n->kind) {
	case K_NUM:
	case K_PARAM:
		if (n->type == KFA_INT)
			out->i = (int64_t)n->num;
		else
			out->f = n->num;
		return 0;
	case K_VAR:
		if (n->type == KFA_INT)
			out->i = (int64_t)vars[n->op];
		else
			out->f = vars[n->op];
		return 0;
	default:
		break;
	}
	int na = n->kind == K_CALL ? n->nargs : n->kind == K_BIN ? 2 : 1;
	for (int k = 0; k < na; k++)
		if (eval(n->a[k], vars, &a[k], err))
			return err->code;
	switch (n->kind) {
	case K_NEG:
		if (n->type == KFA_INT)
			out->i = -a[0].i;
		else
			out->f = -a[0].f;
		return 0;
	case K_NOT:
		out->i = !a[0].i;
		return 0;
	case K_CALL:
		switch (n->op) {
		case FN_TANH:
			out->f = tanh(as_f(a[0]));
			return 0;
		case FN_EXP:
			out->f = exp(as_f(a[0]));
			return 0;
		case FN_EXP2:
			out->f = exp2(as_f(a[0]));
			return 0;
		case FN_LOG:
			out->f = log(as_f(a[0]));
			return 0;
		case FN_SQRT:
			out->f = sqrt(as_f(a[0]));
			return 0;
		case FN_ABS:
			if (n->type == KFA_INT)
				out->i = a[0].i < 0 ? -a[0].i : a[0].i;
			else
				out->f = fabs(a[0].f);
			return 0;
		case FN_MIN:
		case FN_MAX: {
			bool mn = n->op == FN_MIN;
			if (n->type == KFA_INT)
				out->i = (a[0].i < a[1].i) == mn ? a[0].i
								 : a[1].i;
			else
				out->f = mn ? fmin(as_f(a[0]), as_f(a[1]))
					    : fmax(as_f(a[0]), as_f(a[1]));
			return 0;
		}
		case FN_WHERE:
			if (n->type == KFA_INT)
				out->i = a[0].i ? a[1].i : a[2].i;
			else
				out->f = a[0].i ? as_f(a[1]) : as_f(a[2]);
			return 0;
		case FN_ALIBI: {
			int64_t nh = (int64_t)vars[KFA_V_NHEADS];
			if (a[0].i < 0 || a[0].i >= nh)
				return kf_err_set(
				    err, KF_EINVAL,
				    "alibi_slope's head index is %lld, out of "
				    "range [0, n_heads) with n_heads = %lld "
				    "(column %d)",
				    (long long)a[0].i, (long long)nh, n->pos);
			out->f = exp2(-8.0 * (double)(a[0].i + 1) / (double)nh);
			return 0;
		}
		}
		break;
	default:
		break;
	}
	/* K_BIN */
	int op = n->op;
	if (op == OP_AND || op == OP_OR) {
		out->i = op == OP_AND ? (a[0].i && a[1].i) : (a[0].i || a[1].i);
		return 0;
	}
	bool ints = a[0].type == KFA_INT && a[1].type == KFA_INT;
	if (op >= OP_LE && op <= OP_GT) {
		double x = as_f(a[0]), y = as_f(a[1]);
		out->i = op == OP_LE   ? x <= y
			 : op == OP_GE ? x >= y
			 : op == OP_EQ ? x == y
			 : op == OP_NE ? x != y
			 : op == OP_LT ? x < y
				       : x > y;
		return 0;
	}
	if (ints) {
		int64_t x = a[0].i, y = a[1].i;
		if ((op == OP_DIV || op == OP_MOD) && y == 0)
			return kf_err_set(err, KF_EINVAL,
					  "integer %s by zero (column %d)",
					  op == OP_DIV ? "division" : "modulo",
					  n->pos);
		out->i = op == OP_ADD	? x + y
			 : op == OP_SUB ? x - y
			 : op == OP_MUL ? x * y
			 : op == OP_DIV ? x / y
					: x % y;
		return 0;
	}
	double x = as_f(a[0]), y = as_f(a[1]);
	out->f = op == OP_ADD	? x + y
		 : op == OP_SUB ? x - y
		 : op == OP_MUL ? x * y
				: x / y;
	return 0;
}

int kfa_expr_eval(const struct kfa_expr *e, const double *vars,
		  struct kfa_value *out, struct kf_err *err)
{
	return eval(e->root, vars, out, err);
}

static void emit_num(double v, enum kfa_type t, struct kf_strbuf *sb)
{
	if (t == KFA_INT) {
		kf_strbuf_addf(sb, "%lld", (long long)v);
		return;
	}
	char buf[64];
	snprintf(buf, sizeof(buf), "%.9g", v);
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
	kf_strbuf_addf(sb, "%sf", buf);
}

static void emit(const struct kfa_node *n, struct kf_strbuf *sb)
{
	switch (n->kind) {
	case K_NUM:
	case K_PARAM:
		if (n->num < 0)
			kf_strbuf_addstr(sb, "(");
		emit_num(n->num, n->type, sb);
		if (n->num < 0)
			kf_strbuf_addstr(sb, ")");
		return;
	case K_VAR:
		kf_strbuf_addstr(sb, var_names[n->op]);
		return;
	case K_NEG:
	case K_NOT:
		kf_strbuf_addstr(sb, n->kind == K_NEG ? "(-" : "(!");
		emit(n->a[0], sb);
		kf_strbuf_addstr(sb, ")");
		return;
	case K_BIN:
		kf_strbuf_addstr(sb, "(");
		emit(n->a[0], sb);
		kf_strbuf_addf(sb, " %s ", bin_ops[n->op]);
		emit(n->a[1], sb);
		kf_strbuf_addstr(sb, ")");
		return;
	case K_CALL:
		break;
	}
	const char *name = fns[n->op].c;
	if (n->op == FN_WHERE) {
		kf_strbuf_addstr(sb, "(");
		emit(n->a[0], sb);
		kf_strbuf_addstr(sb, " ? ");
		emit(n->a[1], sb);
		kf_strbuf_addstr(sb, " : ");
		emit(n->a[2], sb);
		kf_strbuf_addstr(sb, ")");
		return;
	}
	if (n->op == FN_ALIBI) {
		kf_strbuf_addstr(sb, "kfa_alibi_slope(");
		emit(n->a[0], sb);
		kf_strbuf_addstr(sb, ", n_heads)");
		return;
	}
	if (n->type == KFA_INT) /* abs, min, max of integers */
		name = n->op == FN_ABS	 ? "kfa_iabs"
		       : n->op == FN_MIN ? "kfa_imin"
					 : "kfa_imax";
	kf_strbuf_addf(sb, "%s(", name);
	for (int k = 0; k < n->nargs; k++) {
		if (k)
			kf_strbuf_addstr(sb, ", ");
		if (n->type == KFA_FLOAT && n->a[k]->type == KFA_INT)
			kf_strbuf_addstr(sb, "(float)");
		emit(n->a[k], sb);
	}
	kf_strbuf_addstr(sb, ")");
}

void kfa_expr_emit(const struct kfa_expr *e, struct kf_strbuf *sb)
{
	emit(e->root, sb);
}
