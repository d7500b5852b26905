/*
 * task.h: task specs. A native task is a directory holding task.json (the
 * spec, documented in docs/tasks.md), reference.c / reference.cu and
 * candidates/. Loading validates everything and names file, field and why.
 */
#ifndef KFORGE_TASK_H
#define KFORGE_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/base.h>

#define KF_MAX_NDIM 8
#define KF_MAX_TENSORS 16
#define KF_MAX_DISTS 16 /* entries of one input's "dist" list */

enum kf_dtype {
	KF_F32,
	KF_F64,
	KF_F16,
	KF_BF16,
	KF_I32,
	KF_I64,
	KF_DTYPE_COUNT
};

/* "float32", ...; NULL for an unknown value. */
const char *kf_dtype_name(enum kf_dtype d);
/* Parses a dtype name; returns 0 or KF_EINVAL. */
int kf_dtype_parse(const char *name, enum kf_dtype *out);
size_t kf_dtype_bytes(enum kf_dtype d);
bool kf_dtype_is_float(enum kf_dtype d);

/*
 * An arithmetic expression over dimension names: integers and decimals,
 * names, + - * / % ( ), unary minus, and the functions min(a,b), max(a,b),
 * cdiv(a,b) (ceiling division). Evaluated in double precision.
 */
struct kf_expr;
/* Parses src; names must be among names[0..n_names). */
int kf_expr_parse(const char *src, const char *const *names, int n_names,
		  struct kf_expr **out, struct kf_err *err);
/* values[i] is the value of names[i] as given to kf_expr_parse. */
double kf_expr_eval(const struct kf_expr *e, const int64_t *values);
/* The text it was parsed from; borrowed. */
const char *kf_expr_src(const struct kf_expr *e);
void kf_expr_free(struct kf_expr *e);

/* Input distributions; a trial picks one of a tensor's list. */
enum kf_dist_kind {
	KF_DIST_NORMAL,	 /* params: mean (0), std (1) */
	KF_DIST_UNIFORM, /* params: low (-1), high (1) */
	KF_DIST_HEAVY,	 /* Cauchy: scale (1), clipped to +-clip (1000) */
	KF_DIST_WIDE,	 /* +-10^U(min_exp, max_exp), defaults -4, 4 */
	KF_DIST_INT,	 /* integers uniform in [low, high) */
	KF_DIST_CONST,	 /* every element = value */
	/* Stress inputs, for the operators that need them: */
	KF_DIST_LARGE,	  /* mean + scale * N(0,1): scale (100), mean (0) */
	KF_DIST_DENORMAL, /* half +-2^U(min_exp2, max_exp2) (the dtype's
			     subnormals by default), half +-U(0.5, 2) */
	KF_DIST_TIES,	  /* scale * (k - floor(levels/2)), k uniform in
			     [0, levels): levels (4), scale (1) */
	KF_DIST_NEGATIVE, /* max - scale * |N(0,1)|: scale (1), max (-0.5) */
	KF_DIST_ZEROS,	  /* 0 with probability fraction (0.5), else
			     N(0, std^2): fraction, std (1) */
	KF_DIST_BITS,	  /* raw bit patterns of the dtype, no params: half
			     of them +-0, +-inf, NaNs with random
			     payloads (quiet and signalling), subnormals
			     and the largest finite value, the rest
			     random bits (kf_rng_bits). For bit-exact
			     tasks (atol = rtol = 0). */
};
const char *kf_dist_name(enum kf_dist_kind k);

struct kf_dist {
	enum kf_dist_kind kind;
	/* The two parameters in the order listed above (for CONST: value, 0).
	 * Each may be an expression of the dims; p_expr[i] is NULL when absent
	 * and the default applies. */
	struct kf_expr *p_expr[2];
	double p_default[2];
};

struct kf_tensor_spec {
	char *name;
	enum kf_dtype dtype;
	int ndim; /* 0 for a scalar (one element) */
	struct kf_expr *shape[KF_MAX_NDIM];
	struct kf_dist *dists; /* inputs only; n_dists >= 1 */
	int n_dists;
	/* outputs only ("rounded_once"): a 16-bit float output that is one
	 * float32 value per element rounded once to nearest even, so that an
	 * honest kernel differs from the reference in few elements */
	bool rounded_once;
};

struct kf_tolerance {
	double atol;
	double rtol;
};

/*
 * A loaded task. Fields are read-only for callers; kf_task_free releases it.
 */
struct kf_task {
	char *dir;  /* the task's directory */
	char *path; /* its task.json */
	char *id;   /* "<suite>/<name>", from the last two path components */
	char *name;
	char *description;

	char **dim_names; /* n_dims names, declaration order of "dims" */
	int n_dims;
	/* n_dimsets sets of n_dims values: set 0 is for timing ("dims"), the
	 * others are hidden and used only for checking: first the fixed ones
	 * of "hidden_dims" (n_fixed_dimsets counts them with set 0), then
	 * those kf_task_draw_hidden drew for one evaluation. */
	int64_t *dimsets;
	int n_dimsets;
	int n_fixed_dimsets;
	/* "hidden": per dimension, the range hidden sets are drawn from
	 * (multiples of multiple_of in [lo, hi]); NULL when the task gives
	 * none. hidden_sets: how many one evaluation draws. */
	struct kf_dim_range {
		int64_t lo, hi, multiple_of;
	} * hidden_ranges;
	int hidden_sets;

	struct kf_tensor_spec inputs[KF_MAX_TENSORS];
	int n_inputs;
	struct kf_tensor_spec outputs[KF_MAX_TENSORS];
	int n_outputs;

	struct kf_tolerance tol[KF_DTYPE_COUNT];
	struct kf_expr *flops; /* may be NULL */
	struct kf_expr *bytes; /* may be NULL */

	char **libraries; /* what a candidate may link against (-l names) */
	int n_libraries;
	char **cuda_libraries; /* more of them on the cuda backend (cublas) */
	int n_cuda_libraries;
	char *cuda_arch; /* "sm_90a" when the task asks for it (wgmma); NULL:
			    the device's own */
	/* "bitwise" (true, the default): two calls on the same inputs must give
	 * the same bits; "tolerance": they must agree within the tolerance. */
	bool determinism_bitwise;
	double call_timeout_ms; /* the longest one call of the reference or a
				   candidate may take in checks */
	/* The timing dims of the cuda backend ("cuda_dims"), stored after the
	 * hidden sets; -1 when the task has none. */
	int cuda_dimset;
	bool cuda_selected;
	/* A KernelBench-format task: a Python file defining Model, get_inputs
	 * and get_init_inputs, run by the PyTorch bridge (runner/). It has no
	 * dims; its tensors are known only once the bridge has loaded it
	 * (kf_task_add_tensor). */
	bool kernelbench;
	int level; /* KernelBench level from a "levelN" directory; 0: unknown */
};

/* Loads dir/task.json (or a path to a task.json file); a path ending in
 * ".py" is a KernelBench-format task (see kf_task_is_kernelbench). */
int kf_task_load(const char *path, struct kf_task **out, struct kf_err *err);
void kf_task_free(struct kf_task *t);

/* True when path names a KernelBench-format task (it ends in ".py"). */
bool kf_task_is_kernelbench(const char *path);
/* A KernelBench-format task found by kf_task_kb_find. */
struct kf_kb_task {
	char *path; /* the task file */
	char *id;   /* "level1/1_ReLU" */
	int level;  /* 0: unknown */
};
/*
 * The KernelBench-format tasks (N_Name.py) that paths name: files, or
 * directories searched depth levels down (a KernelBench checkout's
 * levelN directories); only those of level `level` when it is positive;
 * sorted by level, problem number, then path. A file named in paths that
 * is not such a task is an error naming it; a .py file found in a
 * directory that does not load as one (a candidate beside the tasks) is
 * left out. No task at all is an error. 0, or a negative code with err
 * set; *out is malloc'd (kf_kb_tasks_free).
 */
int kf_task_kb_find(char *const *paths, int n, int depth, int level,
		    struct kf_kb_task **out, int *n_out, struct kf_err *err);
void kf_kb_tasks_free(struct kf_kb_task *v, int n);
/* True when name names the KernelBench-format task of id "<dir>/<stem>"
 * (a JSONL record's "task"): the id, the stem, or the file name
 * "<stem>.py". */
bool kf_task_kb_named(const char *id, const char *name);
/*
 * Adds a tensor to a KernelBench-format task, as the bridge reported it:
 * an input (output false) or an output with a fixed shape of ndim positive
 * sizes. Returns 0, or KF_EINVAL (err names the tensor and why).
 */
int kf_task_add_tensor(struct kf_task *t, bool output, const char *name,
		       enum kf_dtype dtype, int ndim, const int64_t *shape,
		       struct kf_err *err);

/* Makes the timing dims (set 0) those of a backend: on "cuda", the task's
 * cuda_dims when it has them. Call once, right after loading. */
void kf_task_select_backend(struct kf_task *t, const char *backend);

/*
 * Draws the task's hidden sets for one evaluation from its "hidden" ranges,
 * from seed (the evaluation's secret seed): they follow the fixed sets and
 * replace any drawn before. Each drawn set differs from the timing dims and
 * from the others and passes every check of load. Call after
 * kf_task_select_backend. Does nothing for a task without ranges. Returns 0
 * or KF_EINVAL (err says why).
 */
int kf_task_draw_hidden(struct kf_task *t, uint64_t seed, struct kf_err *err);
/* Adds a hidden set (n_dims values, drawn elsewhere: the worker receives
 * the supervisor's) after checking it as load checks every set. */
int kf_task_add_dimset(struct kf_task *t, const int64_t *values,
		       struct kf_err *err);

/* The values of dimension set s (n_dims of them); borrowed. */
const int64_t *kf_task_dims(const struct kf_task *t, int s);
/* Shape of a tensor under dimension set s; returns its element count, or a
 * negative KF_E code with err set when a dimension is not a positive integer.
 */
int64_t kf_task_shape(const struct kf_task *t, const struct kf_tensor_spec *ts,
		      int s, int64_t shape[KF_MAX_NDIM], struct kf_err *err);
/* "M=128 N=64" for dimension set s; caller frees. */
char *kf_task_dims_str(const struct kf_task *t, int s);
/* FLOP and byte counts of one call under dimension set s; 0 when unknown. */
double kf_task_flops(const struct kf_task *t, int s);
double kf_task_bytes(const struct kf_task *t, int s);
/* The parameters of a distribution under dimension set s. */
void kf_dist_params(const struct kf_task *t, const struct kf_dist *d, int s,
		    double p[2]);
/* The distribution as the results name it: its kind, with the parameters
 * the task gave in dim set s ("normal(mean=0, std=0.003)"); the caller
 * frees it. */
char *kf_dist_label(const struct kf_task *t, const struct kf_dist *d, int s);
/* The path of the reference source for a backend ("host" or "cuda"); caller
 * frees; NULL with err set when the task has none. */
char *kf_task_reference(const struct kf_task *t, const char *backend,
			struct kf_err *err);

/* Finds every task under root (dirs holding task.json, two levels down),
 * sorted; *out is an array of n paths, free each and the array. */
int kf_task_find(const char *root, char ***out, int *n, struct kf_err *err);

#endif
