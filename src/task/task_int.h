/*
 * task_int.h: what the files of src/task share and no other module sees.
 */
#ifndef KFORGE_TASK_INT_H
#define KFORGE_TASK_INT_H

#include <stdbool.h>

#include <kforge/task.h>

/* Longest expression source, in bytes; task.json is data from outside. */
#define KF_EXPR_MAX_LEN 1024

/* An expression that is the number v (a JSON number where an expression
 * may stand); its source text round-trips to v. Caller frees. */
struct kf_expr *kf_expr_const(double v);
/* True when e names no dimension, so its value is the same in every set. */
bool kf_expr_is_const(const struct kf_expr *e);

/* Loads a KernelBench-format task (kernelbench.c). */
int kf_task_load_kernelbench(const char *path, struct kf_task **out,
			     struct kf_err *err);

#endif
