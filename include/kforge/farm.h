/*
 * farm.h: many evaluations at once. A compile pool (jobs threads) builds
 * candidates ahead into a bounded queue; device slots (one thread per GPU,
 * one evaluation at a time each, the worker pinned to its GPU) take them
 * from there, so that compiling the next candidates overlaps measuring this
 * one. A candidate whose evaluation fails is an outcome of that candidate;
 * the others go on.
 */
#ifndef KFORGE_FARM_H
#define KFORGE_FARM_H

#include <pthread.h>
#include <stdbool.h>

#include <kforge/base.h>
#include <kforge/eval.h>

/* A bounded FIFO of ints between threads. */
struct kf_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	int *items;
	int cap, head, len;
	bool closed;
};
void kf_queue_init(struct kf_queue *q, int cap);
void kf_queue_destroy(struct kf_queue *q);
/* Blocks while full; -1 when the queue is closed (v not added). */
int kf_queue_push(struct kf_queue *q, int v);
/* Blocks while empty and open; -1 when closed and drained. */
int kf_queue_pop(struct kf_queue *q, int *v);
/* No more pushes; poppers drain what is left, then get -1. */
void kf_queue_close(struct kf_queue *q);

/* One candidate and its outcome (zero it, then set the inputs). */
struct kf_farm_item {
	const char *candidate; /* in: the source */
	const char *task;      /* in: its task; NULL: kf_farm_run's */
	const struct kf_eval_opts *eval; /* in: its options (no_timing,
					    protocol...); NULL: the farm's.
					    The farm sets backend, device,
					    cache and bridge pool either way */
	cJSON *result;	       /* out: the result JSON (caller frees), or
				  NULL when the evaluation could not start */
	int rc;		       /* out: kf_eval's return code */
	char err[1024];	       /* out: why, when rc != 0 */
	int device;	       /* out: the slot that measured it (-1: none,
				  e.g. a compile error) */
	double compile_s;      /* out: the compiler's wall time (0: cached) */
	double wait_s;	       /* out: compiled, waiting for a slot */
	double eval_s;	       /* out: wall time of kf_eval in the slot */
};

/* Progress, for a bar: called from pool threads, one call at a time. */
struct kf_farm_progress {
	int total, compiled, done, failed; /* failed: status not ok */
	const struct kf_farm_item *item;   /* the one that just finished,
					      or NULL */
};

struct kf_farm_opts {
	struct kf_eval_opts eval; /* for every evaluation (device: set per
				     slot) */
	int jobs;      /* parallel compiles; <= 0: the number of cores */
	int slots;     /* evaluations at once; <= 0: cuda, the GPUs (see
			  kf_farm_gpu_count); host, 1. On cuda slot s uses
			  GPU s modulo their number */
	int queue_cap; /* compiled candidates waiting for a slot; <= 0:
			  2 x slots */
	void (*progress)(void *arg, const struct kf_farm_progress *p);
	void *progress_arg;
};
#define KF_FARM_OPTS_INIT                                                      \
	{                                                                      \
		KF_EVAL_OPTS_INIT, 0, 0, 0, NULL, NULL                         \
	}

/*
 * Evaluates items[0..n), each against its task (item.task, else task_path).
 * Returns 0 when the farm ran (each item says how its candidate did, rc
 * included: a task of an item that does not load or whose reference does
 * not build is that item's error); a negative code with err set when
 * task_path is given and does not load or its reference does not build.
 */
int kf_farm_run(const char *task_path, struct kf_farm_item *items, int n,
		const struct kf_farm_opts *opts, struct kf_err *err);

/* The GPUs the cuda backend would use here: the entries of
 * CUDA_VISIBLE_DEVICES when set, else the NVIDIA devices the driver lists
 * (/proc/driver/nvidia/gpus); 0 when the backend is not available. */
int kf_farm_gpu_count(void);

#endif
