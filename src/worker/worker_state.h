/*
 * worker_state.h: the worker's state, shared by the files of the worker
 * (worker.c: the protocol, loading and the main loop; arena.c: pools,
 * tensor sets, guards and poison; call.c: one call in a runner and what
 * is checked around it; trial.c: the checking trials; timing.c: timed
 * pairs, KernelBench's protocol and energy). Internal to src/worker.
 */
#ifndef KFORGE_WORKER_STATE_H
#define KFORGE_WORKER_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <kforge/backend.h>
#include <kforge/task.h>

#include "../eval/judge.h"
#include "worker_int.h"

struct tensor {
	const struct kf_tensor_spec *spec;
	void *ptr;
	size_t bytes;
	int64_t n;
	int64_t shape[KF_MAX_NDIM];
};

/* The tensors of one call: inputs and outputs for candidate and reference,
 * in separate buffers so that neither sees the other's memory. */
struct view {
	DLTensor in[KF_MAX_TENSORS], out[KF_MAX_TENSORS];
	int64_t in_shape[KF_MAX_TENSORS][KF_MAX_NDIM];
	int64_t out_shape[KF_MAX_TENSORS][KF_MAX_NDIM];
};

struct tensor_set {
	struct tensor in_c[KF_MAX_TENSORS], in_r[KF_MAX_TENSORS];
	struct tensor out_c[KF_MAX_TENSORS], out_r[KF_MAX_TENSORS];
	/* What each side is handed: descriptors and shapes in an allocation
	 * of its own, so that nothing at a fixed offset from a candidate's
	 * arguments leads to the reference's. */
	struct view *view_c, *view_r;
	DLTensor *dl_in_c, *dl_in_r, *dl_out_c, *dl_out_r;
	uint64_t in_sum[KF_MAX_TENSORS]; /* checksums after filling */
	/* One arena per side, with the same layout inside, so that neither
	 * side is favoured by where its buffers fall (cache sets, 4 KiB
	 * aliasing between an input and an output). A shared set's arenas
	 * are slots of the sides' pools, which the runners see; the others
	 * are the worker's alone. */
	void *arena_c, *arena_r;
	/* The candidate's arena outside its tensors, in n_inputs + n_outputs
	 * + 1 regions (before the first, between, after the last up to
	 * area, the arena's bytes), all guard bytes; sum: each region's
	 * checksum on a device. */
	struct slack {
		size_t off, bytes;
		uint64_t sum;
	} slack[2 * KF_MAX_TENSORS + 1];
	size_t area;
	int slot; /* -1: not in the pools */
	bool ready;
};

enum { SIDE_REF, SIDE_CAND };

/* Slots of one side's pool: the memory its runner maps. A trial's set and
 * the two timing sets are live at once. Each slot holds its set's inputs in
 * its first in_bytes (on the host the runner maps those read-only), the
 * outputs after them. */
#define POOL_SLOTS 3
struct pool {
	void *base;
	size_t bytes, slot_bytes, in_bytes;
	size_t flush_off; /* a device: where the runner's flush writes */
	struct kf_share share;
};

struct worker {
	int out_fd;
	struct kf_task *task;
	const struct kf_backend_ops *ops;
	void *ctx;
	struct kf_runner run[2]; /* by side */
	struct pool pool[2];
	bool slot_used[POOL_SLOTS];
	bool loaded;
	bool flush_by_engine; /* KFORGE_FLUSH=engine (a device only) */
	uint64_t flush_state; /* flush keys and the places checked */
	uint32_t flush_last;
	/* The candidate runner's CPU clock when it last answered, and the
	 * most it used between calls since the last report. */
	uint64_t cand_cpu_after;
	uint64_t cpu_after[2]; /* each runner's CPU clock after its last call */
	int reply_cpu_strikes; /* the candidate's far-off reports in a row */
	int idle_cpu_strikes;  /* its busy gaps between calls in a row */
	uint64_t cand_idle_cpu_ns;
	/* Each runner's own CPU time per call around the entry (median and
	 * most of calls with no entry, before any object was loaded): what
	 * the host's samples leave out. */
	double overhead_ns[2], overhead_max_ns[2];
	char cand_state0[sizeof(((struct kf_run_rep *)0)->text)];
	/* Timing: two sets whose buffers alternate between pairs, and the
	 * inputs they are rotated from. */
	struct tensor_set timing[2], base;
	uint64_t timing_seed;
	int base_dist;	/* which of its inputs' dists the base holds */
	int batches;	/* timing requests so far */
	int pairs_done; /* alternates the order within a pair */
	/* Fresh values of each input per pair for this base (at least its
	 * size: all of it), set once per base (fresh_set); and whether each
	 * input's were seen to make a cached output fail. */
	int64_t fresh[KF_MAX_TENSORS];
	bool fresh_bites[KF_MAX_TENSORS];
	bool fresh_set;
	/* On a device, the counts of every entry of the dist lists, set
	 * before the first timed pair (fresh_all_set), so that no later
	 * batch runs the calibration's calls among its timed ones. */
	int64_t fresh_by_dist[KF_MAX_DISTS][KF_MAX_TENSORS];
	bool bites_by_dist[KF_MAX_DISTS][KF_MAX_TENSORS];
	bool fresh_all_set;
	char state0[512]; /* the worker's global state at load (what is
			     device-wide shows here too) */
	/* What the candidate's last call broke beyond its outputs: guards
	 * ("out_of_bounds") or global state ("global_state"); "" if none. */
	char violation_check[32];
	char violation[1200];
	/* Per output, the timed pair whose output was furthest from the
	 * reference's in L1 (the precision check of timed outputs): the
	 * error over the larger of |want| and n * atol, both summed. Reset
	 * by each timing request. */
	struct timed_l1 {
		double score, l1_err, l1_want, max_abs, want_absmax;
		int64_t n;
		int pair; /* -1: none compared yet */
	} tl1[KF_MAX_TENSORS];
	bool faulted;	/* the device is lost: report and exit */
	int cuda_error; /* the CUDA runtime's error after the last call */
	char cuda_error_name[64];
};

/* worker.c: replies to the supervisor and their parts */
int wk_reply(struct worker *w, cJSON *msg);
int wk_reply_error(struct worker *w, const char *ev, const char *what,
		   const char *message);
int wk_reply_engine_error(struct worker *w, int rc, struct kf_err *err);
void wk_add_cuda_error(struct worker *w, cJSON *m, const char *key);
bool wk_add_violation(struct worker *w, cJSON *m);
void wk_add_hex(cJSON *obj, const char *key, uint64_t v);
uint64_t wk_parse_u64(const cJSON *obj, const char *key);

/* arena.c: pools, tensor sets, guards, poison */
int wk_guards_check(struct worker *w, struct tensor_set *s, char *where,
		    size_t cap, struct kf_err *err);
void wk_set_release(struct worker *w, struct tensor_set *s);
int wk_pools_make(struct worker *w, struct kf_err *err);
int wk_set_make(struct worker *w, struct tensor_set *s, int dimset,
		uint64_t seed, const int *dist_index, bool fill, bool shared,
		struct kf_err *err);
int wk_poison_outputs(struct worker *w, struct tensor *outs,
		      struct kf_err *err);

/* call.c: one call in a runner and the checks around it */
int wk_reference_intact(struct worker *w, struct tensor_set *s,
			struct kf_err *err);
void wk_die_like(const struct kf_runner *r);
void wk_cand_idle_check(struct worker *w);
/* The candidate runner's resident memory against kf_runner_mem_limit plus
 * four times its side's pool, after its load and each call: past it the
 * worker answers "memory" (the candidate's runtime_error in the judge's
 * event table), stops the runner and ends. */
void wk_cand_memory_check(struct worker *w);
int wk_call(struct worker *w, int side, struct tensor_set *set, bool flush,
	    bool bare, struct kf_sample *smp, uint64_t *wall_ns,
	    struct kf_err *err);

/* trial.c: one checking trial */
int wk_do_trial(struct worker *w, const cJSON *req);
/* A check call among timed calls, on inputs drawn from a trial's
 * distributions, or (dist_index NULL) on those already in s, drawn as a
 * timed call's (trial.c); ref_before: where the next timed pair calls the
 * reference first, the check call does too (a throwaway call), so that
 * the time since the candidate's last call is a pair's; its frame in a
 * trial's form, or NULL with *rc set. */
cJSON *wk_check_call(struct worker *w, struct tensor_set *s, uint64_t seed,
		     const int *dist_index, bool ref_before, int *rc,
		     struct kf_err *err);

/* timing.c: timed pairs (kforge's protocol and KernelBench's) and energy */
int wk_do_time(struct worker *w, const cJSON *req);
int wk_do_time_kb(struct worker *w, const cJSON *req);
int wk_do_energy(struct worker *w, const cJSON *req);

#endif
