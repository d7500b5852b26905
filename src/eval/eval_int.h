/*
 * eval_int.h: shared inside the supervisor: the judge's verdicts over the
 * worker's raw frames, the session that native and KernelBench-format
 * evaluations share, and the pieces of the result JSON.
 */
#ifndef KFORGE_EVAL_INT_H
#define KFORGE_EVAL_INT_H

#include <kforge/eval.h>
#include <kforge/task.h>

#include "judge.h"

/* The plan of one correctness trial, chosen by the supervisor. */
struct trial_plan {
	int index;
	uint64_t seed;
	int dimset;
	int dists[KF_MAX_TENSORS]; /* index into each input's dist list */
};

/* "trial 2 (seed 3, dims N=1000, dists x=uniform)"; caller frees. */
char *kf_judge_trial_label(const struct kf_task *t, const struct trial_plan *p);
/* The strict bound of the L1 relative error of an output dtype (0: none). */
double kf_strict_l1(enum kf_dtype dt);

/* One output's comparison in L1, for the precision check: the sums of
 * |got - want| and |want| over its n elements, the largest |got - want|
 * and |want|, and whether it changed between two calls on one input. */
struct kf_l1 {
	double l1_err, l1_want, n, max_abs, want_absmax;
	bool varies;
	/* Where > 0, the L1 norm's floor in place of n * atol's (the
	 * bridge's): the reference's own float noise, measured, on near-zero
	 * outputs; else 1e-2 of the inputs' mean magnitude per element. */
	double floor;
	/* Where has_noise: the reference's own float noise on the same
	 * inputs, for the bridge sum |want - exact| against its float64 run,
	 * for a native task (float64 reference) how far its outputs move when
	 * its float32 inputs move one ulp; see KF_PRECISION_NOISE_TIMES. */
	bool has_noise;
	double noise;
	/* Where > 0, an L1 relative error that passes whatever the rules
	 * above say: the timed outputs' under KernelBench's protocol on the
	 * bridge, whose trials accept lower precision, KF_KB_TIMED_SLACK times
	 * the largest the candidate's trials showed (kf_judge_kb_allowance). */
	double allow;
};
/*
 * The precision check of output j (trials and timed outputs alike): the
 * L1 error over the L1 norm with the floor n * atol must stay within
 * kf_strict_l1. Beyond it the verdict says why: values that vary between
 * calls (nondeterministic), errors carried by a few elements
 * (wrong_values), or lower-precision arithmetic (precision). Returns true
 * when v is set.
 */
bool kf_judge_precision(const struct kf_task *t, int j, const struct kf_l1 *e,
			const char *label, struct verdict *v);
/* Output j of a trial (its comparison o, the worker's): a 16-bit float
 * output whose differences from the reference lie nearly all nearer zero
 * (toward_zero against away_from_zero) was truncated where the task
 * rounds to nearest even: rejected, precision. True when v is set. */
bool kf_judge_rounding(const struct kf_task *t, int j, const cJSON *o,
		       const char *label, struct verdict *v);
/* The checks of the PyTorch bridge's facts about the candidate's process
 * (a frame's "facts": outputs' types and shapes, thread and core budget,
 * processes, global flags, aliasing, the watch of a CUDA call); true, and
 * v rejected with the check and its detail, when one fails. */
bool kf_judge_bridge_facts(const cJSON *facts, struct verdict *v);
/* Judges a "trial" frame. */
void kf_judge_trial(const struct kf_task *t, const struct trial_plan *p,
		    const cJSON *frame, struct verdict *v);
/* Judges a trial frame of the KernelBench-format path (bridge.c): with
 * kb_checks KernelBench's own checks only, else kforge's with a precision
 * floor for near-zero outputs; label names the trial in the reason. */
/* The share of the inputs' mean magnitude under which a bridge output is
 * near zero: judge.c's precision floor, and the bridge measures such
 * outputs' float noise (the trial request's "near_zero"). */
#define KF_BRIDGE_NEAR_ZERO 1e-2
void kf_judge_bridge_trial(const struct kf_task *t, const struct trial_plan *p,
			   const cJSON *frame, bool kb_checks,
			   const char *label, struct verdict *v);
/* Judges the "check" of a "samples" frame. */
void kf_judge_samples(const struct kf_task *t, const cJSON *frame,
		      struct verdict *v);
/* Faster than the hardware allows: a candidate whose cand_ns is more than
 * 1.5 times below max(flops / fastest compute peak, bytes / copy peak)
 * did not have all its work measured, or did not do it all (compute at the
 * device's fastest units, so that exact fp32 emulation on tensor cores is
 * not mistaken for a hack). */
/* The compute peak a host task whose inputs are of dtype dt is held to,
 * on a CPU with features (KF_CPU_*): the FMA rate, or the rate of the
 * fastest units the CPU has for 16-bit floats of that dtype (amx: the
 * tiles' rate the probe measured, 0 if none); *unit names it ("fma",
 * "avx512_bf16", "amx_bf16", ...). */
double kf_judge_host_compute_peak(enum kf_dtype dt, unsigned features,
				  double fma_flops_per_s,
				  double amx_flops_per_s, const char **unit);
void kf_judge_roofline(const char *where, double cand_ns, double flops,
		       double bytes, double fastest_flops_per_s,
		       double bytes_per_s, struct verdict *v);
/* Judges one side's "samples_kb" frame (KernelBench's timing protocol on
 * a native task): the checks of every call, and on the candidate's side
 * the timed outputs' precision and the check calls, as kf_judge_samples
 * does (t NULL: no per-output figures). */
void kf_judge_samples_kb(const struct kf_task *t, const cJSON *frame,
			 struct verdict *v);
/*
 * KernelBench's protocol on the bridge: its trials hold values to the
 * tolerance alone, so a candidate in lower precision throughout (TF32,
 * float16 operands) passes them, and its timed outputs are no less
 * precise. Those are held to kforge's precision check unless within
 * KF_KB_TIMED_SLACK times the largest L1 relative error of each output
 * over the trials (frames): into allow[j], 0 where the trials showed
 * none. A candidate exact in its trials is held to kforge's rule; one
 * that is less precise only when timed is caught.
 */
#define KF_KB_TIMED_SLACK 10.0
void kf_judge_kb_allowance(const struct kf_task *t, const cJSON *frames,
			   double *allow);
/* The reference's calls beside the candidate (paired, their median in ns)
 * against the same calls timed alone once the candidate's process had
 * ended (alone[0..n)): adds "reference_alone" to tm; v rejected
 * (interference) when the candidate's presence slowed the reference. */
void kf_judge_interference(double paired, const double *alone, int n,
			   cJSON *tm, struct verdict *v);
/* The time the candidate's own measurement of its n timed calls (c, in ns)
 * left out, against the outside view of the same calls (cw) and the
 * reference's (r, rw): adds "unaccounted_ms" to tm, puts the ns to charge
 * candidate call i in each[i] (each may be NULL) and returns their mean,
 * and sets v when its measurement was forged (docs/measuring.md, "Seen
 * from outside"). */
double kf_judge_unaccounted(const double *c, const double *r, const double *cw,
			    const double *rw, int n, bool host, bool mean,
			    cJSON *tm, struct verdict *v, double *each);
/* The runner's checks after each call, apart from the call (fc, fr: the
 * judge's view of them in each process, ns, CPU time on the host, else
 * wall time; c: the candidate's calls): adds "checks_view_ms" to tm and
 * sets v where the candidate's checks were skipped (tampering) or held
 * work its call left (unaccounted_time). */
void kf_judge_checks_view(const double *fc, const double *fr, const double *c,
			  int n, bool host, cJSON *tm, struct verdict *v);
/* The verdicts over how an evaluation ended early (judge.c): the
 * candidate's compile failed (its first error line, or the compiler's
 * timeout); its imports break the link policy (bad of them, listed in
 * why; v unchanged when none); the child died (wait status, and rc and
 * err_msg from the read that found it gone) or missed the deadline of a
 * phase; it answered with an event other than the one due (ev, its
 * message); or something failed to load (what: "candidate", "compile",
 * "baseline" or a part of the engine's). */
struct kf_child;
void kf_judge_compile(bool timed_out, const char *cand_path,
		      const char *first_error, struct verdict *v);
void kf_judge_link_policy(const char *cand_path, int bad, const char *why,
			  struct verdict *v);
/* cpu_used_s and cpu_soft_s: the child's (and its reaped descendants')
 * CPU time and its soft CPU-time limit (0: none), from its kf_proc. */
void kf_judge_child_end(const struct kf_child *c, int status, int rc,
			const char *err_msg, const char *phase,
			double cpu_used_s, double cpu_soft_s,
			struct verdict *v);
void kf_judge_deadline(const struct kf_child *c, double timeout_ms,
		       const char *phase, struct verdict *v);
void kf_judge_event(const char *ev, const char *msg, const char *phase,
		    struct verdict *v);
/* Under --require-custom-kernel (required): a candidate's builds (the
 * bridge's "builds": {"name", "ok", "error"} each) with one that failed
 * (it loaded without it: a silent fallback) is rejected no_custom_kernel.
 * A candidate with no build is judged by what its forward calls
 * (kf_judge_custom_calls): a ctypes or Triton kernel builds nothing. */
void kf_judge_custom_kernel(const cJSON *builds, bool required,
			    struct verdict *v);
/* --require-custom-kernel's look at the first trial's call
 * (kforge_bridge.py, CustomCode.probe): a candidate whose forward called
 * none of its own code is rejected no_custom_kernel. */
void kf_judge_custom_calls(const cJSON *calls, const char *label,
			   struct verdict *v);
void kf_judge_load(const char *what, const char *cand_label,
		   const char *baseline, const char *msg, struct verdict *v);

/* Adds "degenerate" to the result from the trial frames (an array). */
/* A KernelBench-format result that is wrong_answer while some of the
 * candidate's parameters matched none of the reference's (res's
 * parameters.unmatched): its reason names them, the likely cause. */
void kf_judge_unmatched_parameters(cJSON *res);
void kf_judge_degenerate(const struct kf_task *t,
			 const struct trial_plan *plans, const cJSON *frames,
			 cJSON *result);

/*
 * The link-time policy: returns how many of the n imported symbols the task
 * does not allow, listing them with their category in why ("pthread_create
 * (threads), ...").
 */
int kf_policy_check(const struct kf_task *t, const char *backend,
		    char *const *imports, int n, char *why, size_t cap);

/*
 * Evaluates a candidate (a ModelNew file) against a KernelBench-format
 * task through the PyTorch bridge (bridge.c); the contract of kf_eval, with
 * opts already defaulted and seeded.
 */
int kf_eval_bridge(const char *task_path, const char *candidate_path,
		   const struct kf_eval_opts *opts, cJSON **result,
		   struct kf_err *err);
/* kf_eval_bridge in two steps (kf_eval_open, kf_eval_finish,
 * kf_eval_discard), opts already checked, defaulted and seeded. */
int kf_eval_bridge_open(const char *task_path, const char *candidate_path,
			const struct kf_eval_opts *opts,
			struct kf_eval_pending **p, struct kf_err *err);
void kf_eval_bridge_measure(struct kf_eval_pending *p, int core);
int kf_eval_bridge_finish(struct kf_eval_pending *p, int core,
			  cJSON **result);
void kf_eval_bridge_discard(struct kf_eval_pending *p);

/*
 * The child a session drives: the C worker (eval.c) or the PyTorch bridge
 * (bridge.c), which speak the same protocol but die differently. One static
 * instance per kind.
 */
struct kf_child {
	const char *name;  /* "worker", "bridge": the subject of the messages */
	int quit_wait_ms;  /* how long closing waits for it to exit */
	bool sandboxed;	   /* its seccomp sandbox kills with SIGSYS */
	bool name_killers; /* a SIGKILL is named as the CPU or memory limit */
};

/*
 * What both kinds of session share (session.c): the child, its log and
 * how it ended, and the result being assembled. Each session embeds one.
 */
struct kf_session_core {
	const struct kf_child *child; /* borrowed, static */
	const struct kf_eval_opts *o; /* borrowed for the session */
	struct kf_task *task;	      /* owned; kf_eval* frees it */
	cJSON *res; /* owned until kf_session_end hands it over */
	struct kf_proc proc;
	double call_ms; /* the deadline of one call of either side */
	int log_fd;	/* the child's stderr (a temporary file), or -1 */
	bool done;	/* a final status is set */
	bool reaped;	/* the child is gone; exit_status says how */
	bool quit_sent; /* kf_session_quit told the child to end */
	/* A warm bridge (bridge.c's pool) serves evaluation after
	 * evaluation: its log is this evaluation's from log_from on, and
	 * kept says it stays running for the next one (no quit, no reap). */
	long log_from;
	bool kept;
	int exit_status;
	long maxrss_kib;
};

struct kf_compile_result;

/* Zeroes s: no child yet, no log, no result. */
void kf_session_core_init(struct kf_session_core *s,
			  const struct kf_child *child,
			  const struct kf_eval_opts *o);
/* Sets the final status: check names the failing check (or NULL), reason
 * (sanitized here) says why, or NULL. */
/* Holds the candidate's n timed calls as its runner measured them (c)
 * against the outside view (cw) and the reference's (r, rw) with the
 * judge's rule (kf_judge_unaccounted; host: CPU-time views), and where
 * fc and fr are given (the bridge's runners) the views of their
 * checks after each call (kf_judge_checks_view), adds the
 * charge to every c unless the candidate is kforge's own code (trusted: a
 * baseline), and finishes the session when its report was forged; true
 * then. */
bool kf_session_unaccounted(struct kf_session_core *s, double *c,
			    const double *r, const double *cw, const double *rw,
			    const double *fc, const double *fr, int n,
			    bool host, bool mean, bool trusted, cJSON *tm);
void kf_session_finish(struct kf_session_core *s, enum kf_status st,
		       const char *check, const char *reason);
/* kf_session_finish with the judge's verdict v (not OK). */
void kf_session_verdict(struct kf_session_core *s, const struct verdict *v);
/* A request frame {"op": op}; the caller owns it. */
cJSON *kf_request(const char *op);
/* Adds v as a decimal string: JSON numbers lose 64-bit integers. */
void kf_add_u64(cJSON *o, const char *key, uint64_t v);

/* Creates s->res with its opening fields and returns its "task" object,
 * which holds id and path, for the caller to complete. */
cJSON *kf_session_result_open(struct kf_session_core *s);
/* Adds "candidate" (path: label; sha256 of file) and "seed". */
void kf_session_result_candidate(struct kf_session_core *s, const char *label,
				 const char *file);
/* Adds under key the record of one compile, its log when with_log. */
void kf_compile_json(cJSON *parent, const char *key,
		     const struct kf_compile_result *r, bool with_log);
/* Finishes with COMPILE_ERROR: the log's first error line, or the
 * compiler's timeout. */
void kf_session_compile_failed(struct kf_session_core *s,
			       const struct kf_compile_result *cr,
			       const char *cand_path);
/* The link-time policy over what the compiled candidate (so_path, from
 * cand_path) imports, listed under "candidate"; true when it sets the final
 * status. */
bool kf_session_link_policy(struct kf_session_core *s, const char *so_path,
			    const char *cand_path);

/* env(1) (*env) and "CUDA_VISIBLE_DEVICES=..." (*pin, for o->device) that
 * pin the child to one GPU through env(1) alone, since threads may spawn
 * children for other GPUs at the same time; both owned by the caller. */
int kf_session_pin(const struct kf_session_core *s, char **env, char **pin,
		   struct kf_err *err);
/* Starts the child, its stderr into a fresh temporary log. */
int kf_session_spawn(struct kf_session_core *s, char *const argv[],
		     const struct kf_limits *lim, struct kf_err *err);
/* Sends req (consumed) and reads the reply within timeout_ms. On a late or
 * dead child it sets the final status (phase says where) and returns NULL;
 * the child is then reaped. */
cJSON *kf_session_exchange(struct kf_session_core *s, cJSON *req,
			   double timeout_ms, const char *phase);
/* True (the final status set, rep freed) when rep is not the event want: a
 * device fault is the candidate's doing, anything else the engine's. */
bool kf_session_unexpected(struct kf_session_core *s, cJSON *rep,
			   const char *want, const char *phase);
/* Tells the child to quit, once, without waiting for it. */
void kf_session_quit(struct kf_session_core *s);
/* Asks the child to quit (kf_session_quit), reaps it and adds the "worker"
 * block (exit, maxrss_kib, the tail of its log); closes the log. A kept
 * child (s->kept) is neither told nor reaped, and its log stays open: the
 * block says it was kept, with its peak memory so far. */
void kf_session_close(struct kf_session_core *s);

/*
 * Ends the session: closes the child, adds "environment" (the system,
 * device, borrowed, may be NULL, and the toolchain, "" where none was
 * found) and "seconds" since start_ns, and hands the result over (s->res is
 * then NULL).
 */
cJSON *kf_session_end(struct kf_session_core *s, const cJSON *device,
		      uint64_t start_ns);

/*
 * Records a judged trial: tj (its JSON, owned) with "passed" under
 * "trials"; on a failure, the verdict's details with dims (owned, freed
 * when unused) and seed under "failure", and the final status.
 */
void kf_session_trial_done(struct kf_session_core *s, cJSON *tj,
			   struct verdict *v, cJSON *dims, uint64_t seed);

/* kforge's timing protocol between its batches of interleaved pairs. */
struct kf_timing {
	int batch, warmup; /* the next batch: timed pairs, untimed ones */
	bool met;	   /* both medians' intervals are within ci_target */
	uint64_t t0_ns, b0_ns; /* when sampling, and the last batch, began */
	double elapsed;	       /* seconds of sampling, at the last batch */
	/* Per input: the most fresh values a pair had, and whether a cached
	 * output was seen to fail at that many (the worker's calibration). */
	double fresh[KF_MAX_TENSORS];
	bool fresh_moves[KF_MAX_TENSORS];
	/* Check calls among the timed ones (kf_timing_checks): the trial
	 * plans the trial-like ones draw their inputs like (dim set 0), the
	 * key of this evaluation's draws of their places and seeds
	 * (getrandom, not the seed: a candidate that knew the seed's rule
	 * still cannot tell where they fall), the draws made, the checks
	 * sent. */
	const struct trial_plan *check_plans;
	int n_check_plans;
	uint64_t check_key, check_ctr;
	int checks;
	int checks_ref_first; /* of them, preceded by a reference's call */
	/* Native tasks: per output, the trials' largest float noise of the
	 * reference relative to its norm (< 0: none), the yardstick of the
	 * timed outputs' measured-noise rule (the bridge keeps its own). */
	double noise_rel[KF_MAX_TENSORS];
};
/* Starts the clock; the first batch is 10 pairs after 3 untimed ones. */
void kf_timing_start(struct kf_timing *tg);
/*
 * Check calls in every timing batch, at places drawn among its calls:
 * KF_TIMING_CHECKS_TIMED of them on inputs drawn as the timed calls' are
 * (the base of the batch rotated with fresh values; the bridge: get_inputs()
 * under a fresh seed), which nothing about their values tells from a timed
 * call's, and KF_TIMING_CHECKS_TRIAL on fresh inputs drawn like one of the
 * n plans (trials whose inputs are at the timing dims: the only ones a
 * timing set holds; the bridge: those reshaped), a plan drawn per check,
 * which reach kinds of inputs the batch's timed calls may not. Their
 * outputs are judged as a trial's (kf_judge_samples); their times are in
 * no sample. Each costs a candidate's call and two of the reference
 * (native tasks: its noise; the bridge: its float64 run).
 */
#define KF_TIMING_CHECKS_TIMED 2
#define KF_TIMING_CHECKS_TRIAL 1
void kf_timing_checks(struct kf_timing *tg, const struct trial_plan *plans,
		      int n);
/* Under KernelBench's protocol (native tasks), the check calls among the
 * candidate side's calls: this many, drawn as those calls' inputs are, at
 * places drawn among the calls (warm-ups counted), into req. */
#define KF_TIMING_CHECKS_KB 4
int kf_timing_kb_checks(struct kf_timing *tg, int calls, cJSON *req);
/* Adds to a timing frame's timed outputs ("check"."outputs") the
 * yardstick of their measured-noise rule where the frame has none: the
 * trials' largest noise relative to the norm (noise_rel, per output, < 0
 * where none) scaled to each output. */
void kf_timed_noise(const double *noise_rel, cJSON *frame);
/*
 * The next batch of tg, each call within call_ms, plus slack_ms for the
 * batch. Returns the judged "samples" frame (the caller frees it), or NULL
 * with the final status set.
 */
cJSON *kf_session_time_batch(struct kf_session_core *s, struct kf_timing *tg,
			     double slack_ms);
/*
 * True when timing goes on after a batch, with n pairs of candidate (c)
 * and reference (r) ns in all and dropped more taken but not kept
 * (throttled); tg then holds the next batch. False when it stops: tg->met
 * when both medians' intervals are within o->ci_target, else the time cap
 * or o->max_pairs ended it (dropped pairs count toward both).
 */
bool kf_timing_next(struct kf_timing *tg, const struct kf_eval_opts *o,
		    const double *c, const double *r, int n, int dropped);
/* Adds the "timing" block of kforge's protocol, n pairs kept after
 * throttled ones were dropped, and returns it. */
cJSON *kf_timing_json(struct kf_session_core *s, const struct kf_timing *tg,
		      int n, int throttled);

/* Adds a trial's "outputs", "ref_ms" and "cand_ms" from its frame. */
void kf_trial_outputs_json(cJSON *j, const cJSON *frame);

/* Adds under key a summary of x[0..n) (docs/results.md: n, median, ci95,
 * iqr, min, max, mean), each value times scale (stats.c). */
void kf_summary_json(cJSON *parent, const char *key, const double *x, int n,
		     double scale);
/* Adds "ci_target_met" (met), then the summaries of the reference (r) and
 * the candidate (c) in ms and of the speedup of each of the n pairs
 * (stats.c). */
void kf_pairs_json(cJSON *tm, const double *c, const double *r, int n,
		   bool met);
/* The 95 % interval's larger half-width relative to the median;
 * INFINITY when the median is not positive. */
double kf_half_width(const double *x, int n);

/* Adds "kforge" (version), "os" and, when with_host, "host" to obj. */
void kf_add_system(cJSON *obj, bool with_host);

#endif
