/*
 * attn_int.h: the attention variant generator's insides, shared by its
 * three files: expr.c (the expression language: parser, checked AST,
 * evaluator, C emitter), spec.c (the JSON spec and its checks) and gen.c
 * (the one kernel template, specialised for CUDA or for the host).
 */
#ifndef KFORGE_ATTENTION_INT_H
#define KFORGE_ATTENTION_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/attention.h>
#include <kforge/base.h>

/* Types of an expression's nodes. */
enum kfa_type { KFA_INT, KFA_FLOAT, KFA_BOOL };

/* The variables an expression may read, in this order. */
enum kfa_var {
	KFA_V_SCORE,
	KFA_V_B,
	KFA_V_H,
	KFA_V_Q,
	KFA_V_KV,
	KFA_V_NHEADS,
	KFA_NVARS
};

#define KFA_MAX_PARAMS 16

struct kfa_param {
	char name[64];
	double value;
	bool is_int;
};

struct kfa_node;

/* One parsed, type-checked expression. */
struct kfa_expr {
	struct kfa_node *root;
	enum kfa_type type;
	char *text;
};

/* What an expression may name: the variables allowed (a bit per enum
 * kfa_var) and the spec's params. */
struct kfa_scope {
	unsigned vars;
	const struct kfa_param *params;
	int n_params;
};

/* Parses and checks text: names, types, and the integers' ranges (no
 * integer can leave 64 bits, no divisor can be 0, for any run-time b, h,
 * q_idx, kv_idx, n_heads: expr.c, range()). On error sets err to "<why>"
 * (the caller adds the file and field) and returns KF_EINVAL. */
int kfa_expr_parse(const char *text, const struct kfa_scope *scope,
		   struct kfa_expr *out, struct kf_err *err);
void kfa_expr_release(struct kfa_expr *e);

/* A value of the evaluator. */
struct kfa_value {
	enum kfa_type type;
	int64_t i; /* INT and BOOL */
	double f;  /* FLOAT */
};

/* Evaluates e with vars[KFA_NVARS] (score as a double, the others
 * integers, each in its run-time range): 0, or KF_EINVAL with err saying
 * why (an index out of range). Integers are exact (int64_t, within the
 * ranges the parse proved); floats are computed in double. */
int kfa_expr_eval(const struct kfa_expr *e, const double *vars,
		  struct kfa_value *out, struct kf_err *err);

/* Appends e as a C expression (valid C and CUDA) over the variables'
 * names, params written as literals; an integer computed in int where
 * its range fits 32 bits, in long long where not, so that its value is
 * the evaluator's. */
void kfa_expr_emit(const struct kfa_expr *e, struct kf_strbuf *sb);

enum kfa_mask_kind {
	KFA_MASK_NONE,
	KFA_MASK_CAUSAL,
	KFA_MASK_SLIDING,
	KFA_MASK_PREFIX,
	KFA_MASK_EXPR
};

enum kfa_layout { KFA_CONTIGUOUS, KFA_VARLEN, KFA_PAGED };

struct kf_attn_spec {
	char *path;
	char *name;
	char *task;
	bool bf16;
	int head_dim;
	int n_heads, n_kv_heads;
	enum kfa_layout layout;
	int block_size; /* paged */
	enum kfa_mask_kind mask;
	int64_t mask_arg; /* window W or prefix P */
	bool mask_causal; /* an expression mask declared causal */
	struct kfa_expr mask_expr;
	bool has_mod;
	struct kfa_expr mod;
	struct kfa_param params[KFA_MAX_PARAMS];
	int n_params;
};

#endif
