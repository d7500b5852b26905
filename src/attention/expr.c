/*
 * expr.c: the expression language of attention specs (docs/attention.md):
 * a recursive-descent parser into a typed AST, checked as it is built
 * (names, functions, arity, types), the integers' ranges bounded over
 * every run-time value (range(): no overflow, no division by zero), an
 * evaluator the spec's checks run, and an emitter that writes the AST as
 * a C expression, valid in host C and in CUDA device code alike, whose
 * integers are the evaluator's exactly.
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
	int pos;	/* column, from 1 */
	int lo, hi;	/* its text: bytes [lo, hi) of the expression */
	int nargs;
	struct kfa_node *a[3];
	/* KFA_INT: the values it can take at run time (range()), and
	 * whether the emitted C computes it in long long rather than int */
	int64_t rmin, rmax;
	bool wide;
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
		n->lo = pos - 1; /* quoted with its parentheses */
		n->hi = (int)p->i;
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
		n->lo = pos - 1;
		n->hi = (int)j;
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
					n->lo = pos - 1;
					n->hi = (int)p->i;
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
				n->lo = pos - 1;
				n->hi = (int)j;
				n->op = v;
				n->type = v == KFA_V_SCORE ? KFA_FLOAT
							   : KFA_INT;
				return n;
			}
		for (int k = 0; k < p->scope->n_params; k++)
			if (!strcmp(p->scope->params[k].name, name)) {
				struct kfa_node *n = node(K_PARAM, pos);
				n->lo = pos - 1;
				n->hi = (int)j;
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
		n->lo = pos - 1;
		n->hi = a->hi;
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
	n->lo = l->lo;
	n->hi = r->hi;
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

/*
 * Integer ranges. An integer expression means its mathematical value: '/'
 * truncates toward zero and '%' takes the dividend's sign, as in C, but
 * nothing wraps or traps. At run time b, h, q_idx and kv_idx are the
 * kernel's int parameters, never negative (any of [0, 2^31 - 1]), and
 * n_heads is the call's head count (any of [1, 2^31 - 1]); params and
 * literals are their own values. range() bounds every integer node by
 * interval arithmetic over those ranges and refuses the expression where
 * a node could leave [-(2^63 - 1), 2^63 - 1] or a divisor could be 0.
 * That proved, the evaluator's int64_t arithmetic is exact, and the
 * emitter computes a node in int where its interval fits 32 bits (for
 * '%', its quotient's too: INT_MIN % -1 traps) and in long long where
 * not (wide): the kernel's value is the checker's, with no undefined
 * behaviour in either. Intervals do not see that kv_idx - kv_idx is 0:
 * the check may refuse an expression that could not overflow, never the
 * other way round.
 */
#define RUN_TIME_RANGES                                                        \
	"at run time b, h, q_idx and kv_idx may be any of [0, 2147483647] "    \
	"and n_heads any of [1, 2147483647]"

static bool fits32(int64_t lo, int64_t hi)
{
	return lo >= INT32_MIN && hi <= INT32_MAX;
}

/* The interval of x op y over the corners of [x0, x1] x [y0, y1] (exact
 * for +, -, * and for / where y keeps one sign): false when a corner
 * leaves [-(2^63 - 1), 2^63 - 1]. */
static bool corners(int op, int64_t x0, int64_t x1, int64_t y0, int64_t y1,
		    int64_t *lo, int64_t *hi)
{
	const int64_t xs[2] = {x0, x1}, ys[2] = {y0, y1};
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			int64_t x = xs[i], y = ys[j], r;
			bool over = false;
			if (op == OP_ADD)
				over = __builtin_add_overflow(x, y, &r);
			else if (op == OP_SUB)
				over = __builtin_sub_overflow(x, y, &r);
			else if (op == OP_MUL)
				over = __builtin_mul_overflow(x, y, &r);
			else /* OP_DIV: y != 0, x > INT64_MIN */
				r = x / y;
			if (over || r == INT64_MIN)
				return false;
			if ((i == 0 && j == 0) || r < *lo)
				*lo = r;
			if ((i == 0 && j == 0) || r > *hi)
				*hi = r;
		}
	return true;
}

/* Sets the ranges and widths of n's integer nodes, children first: 0, or
 * -1 with the parser's error set. */
static int range(struct parser *p, struct kfa_node *n)
{
	int na = n->kind == K_CALL  ? n->nargs
		 : n->kind == K_BIN ? 2
		 : n->kind == K_NEG || n->kind == K_NOT ? 1
							: 0;
	bool child_wide = false;
	for (int k = 0; k < na; k++) {
		if (range(p, n->a[k]))
			return -1;
		child_wide |= n->a[k]->type == KFA_INT && n->a[k]->wide;
	}
	if (n->type != KFA_INT)
		return 0;
	const struct kfa_node *x = n->a[0], *y = n->a[1];
	bool quotient_wide = false;
	switch (n->kind) {
	case K_NUM:
	case K_PARAM:
		n->rmin = n->rmax = (int64_t)n->num;
		break;
	case K_VAR:
		n->rmin = n->op == KFA_V_NHEADS ? 1 : 0;
		n->rmax = INT32_MAX;
		break;
	case K_NEG:
		n->rmin = -x->rmax;
		n->rmax = -x->rmin;
		break;
	case K_CALL:
		if (n->op == FN_ABS) {
			n->rmin = x->rmin >= 0	 ? x->rmin
				  : x->rmax <= 0 ? -x->rmax
						 : 0;
			n->rmax = x->rmin >= 0 ? x->rmax
				  : -x->rmin > x->rmax ? -x->rmin
						       : x->rmax;
		} else if (n->op == FN_WHERE) {
			x = n->a[1];
			y = n->a[2];
			n->rmin = x->rmin < y->rmin ? x->rmin : y->rmin;
			n->rmax = x->rmax > y->rmax ? x->rmax : y->rmax;
		} else { /* min, max */
			bool mn = n->op == FN_MIN;
			n->rmin = (x->rmin < y->rmin) == mn ? x->rmin : y->rmin;
			n->rmax = (x->rmax < y->rmax) == mn ? x->rmax : y->rmax;
		}
		break;
	case K_BIN:
		if (n->op == OP_DIV || n->op == OP_MOD) {
			if (y->rmin <= 0 && y->rmax >= 0) {
				fail(p, n->pos,
				     "integer %s by zero: the divisor '%.*s' "
				     "can be 0 (it ranges over [%lld, %lld]: "
				     "%s)",
				     n->op == OP_DIV ? "division" : "modulo",
				     y->hi - y->lo > 200 ? 200 : y->hi - y->lo,
				     p->s + y->lo, (long long)y->rmin,
				     (long long)y->rmax, RUN_TIME_RANGES);
				return -1;
			}
			int64_t qlo = 0, qhi = 0;
			corners(OP_DIV, x->rmin, x->rmax, y->rmin, y->rmax,
				&qlo, &qhi);
			if (n->op == OP_DIV) {
				n->rmin = qlo;
				n->rmax = qhi;
				break;
			}
			quotient_wide = !fits32(qlo, qhi);
			int64_t m = y->rmin < 0 ? -y->rmin : y->rmin;
			if (y->rmax > m)
				m = y->rmax;
			n->rmin = x->rmin >= 0 ? 0
				  : x->rmin > -(m - 1) ? x->rmin
						       : -(m - 1);
			n->rmax = x->rmax <= 0 ? 0
				  : x->rmax < m - 1 ? x->rmax
						    : m - 1;
			break;
		}
		if (!corners(n->op, x->rmin, x->rmax, y->rmin, y->rmax,
			     &n->rmin, &n->rmax)) {
			fail(p, n->pos,
			     "integer overflow: '%.*s' can leave the 64-bit "
			     "integers (%s)",
			     n->hi - n->lo > 200 ? 200 : n->hi - n->lo,
			     p->s + n->lo, RUN_TIME_RANGES);
			return -1;
		}
		break;
	default:
		break;
	}
	n->wide = child_wide || quotient_wide || !fits32(n->rmin, n->rmax);
	return 0;
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
	if (n && range(&p, n)) {
		node_free(n);
		n = NULL;
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
	if (op >= OP_LE && op <= OP_GT && ints) {
		/* as integers: doubles lose the last bits past 2^53 */
		int64_t x = a[0].i, y = a[1].i;
		out->i = op == OP_LE   ? x <= y
			 : op == OP_GE ? x >= y
			 : op == OP_EQ ? x == y
			 : op == OP_NE ? x != y
			 : op == OP_LT ? x < y
				       : x > y;
		return 0;
	}
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
		/* exact: range() proved every value within 64 bits and
		   every divisor nonzero (the test below is a second guard) */
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
		/* a wide integer in long long: -INT_MIN is 2^31 there */
		kf_strbuf_addstr(sb, n->kind == K_NOT ? "(!"
				     : n->wide	       ? "(-(long long)"
							: "(-");
		emit(n->a[0], sb);
		kf_strbuf_addstr(sb, ")");
		return;
	case K_BIN: {
		const char *cast = n->type == KFA_INT && n->wide
				       ? "(long long)"
				       : "";
		kf_strbuf_addf(sb, "(%s", cast);
		emit(n->a[0], sb);
		kf_strbuf_addf(sb, " %s %s", bin_ops[n->op], cast);
		emit(n->a[1], sb);
		kf_strbuf_addstr(sb, ")");
		return;
	}
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
		name = n->op == FN_ABS	 ? (n->wide ? "kfa_labs" : "kfa_iabs")
		       : n->op == FN_MIN ? (n->wide ? "kfa_lmin" : "kfa_imin")
					 : (n->wide ? "kfa_lmax" : "kfa_imax");
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
