/*
 * exec.h: where an evaluation runs. The one API through which kforge's
 * callers run evaluations of a candidate file against a task: `kforge
 * optimize` (its loop submits and collects), `kforge serve` (its worker
 * threads run one at a time), the local farm's slots (`kforge eval --jobs`,
 * `bench`, `redteam`; a "thread" executor) and the Redis farm's workers. A job is run on the
 * caller's thread (kf_exec_run), or submitted to the executor's slots and
 * collected when it ends (kf_exec_submit, kf_exec_collect), and can be
 * cancelled (kf_exec_cancel, kf_exec_stop).
 *
 * What runs it is the executor's ops; the built-in ones, by name:
 *  - "thread": kf_eval on the running thread of this process (kf_eval is
 *    thread-safe, eval.h);
 *  - "process": a fresh process for each evaluation, `EXE --eval-child TASK
 *    CANDIDATE` (kforge and kforge-serve both are one: kf_exec_child_main),
 *    its options a frame on its stdin (never its command line, which /proc
 *    shows to every process), its result one frame back. A crash of the
 *    engine ends that process, not the caller; a cancel or a deadline
 *    kills it and everything under it;
 *  - "redis": a job on the farm (kf_rfarm_submit), waited for; a cancel
 *    withdraws it.
 * A caller may bring ops of its own (the search loop's scripted scorer).
 *
 * Thread-safe: any thread may submit, run, collect or cancel.
 */
#ifndef KFORGE_EXEC_H
#define KFORGE_EXEC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/farm_redis.h>

/* One evaluation (zero it, then set the inputs). */
struct kf_exec_job {
	/* in */
	const char *task;      /* the task's path */
	const char *candidate; /* the candidate's file */
	const char *label;     /* names the job in its error (NULL: "the
				  evaluation") */
	const struct kf_eval_opts *eval; /* NULL: the executor's */
	uint64_t deadline_ns; /* kf_now_ns's clock; 0: none. Past it the job
				 ends with an error (killed, withdrawn) */
	bool profile;	      /* the feedback mode "profile": an ok result
				 gets kf_profile_attach's "profile" */
	void *user;
	/* out, when it has ended */
	cJSON *result; /* the result JSON (the caller's to free), or NULL */
	char *error;   /* malloc'd, when there is no result: why the engine
			  could not evaluate (the candidate's own failures
			  are results) */
	int rc;	       /* then its code (kf_eval's, on a thread; KF_EIO
			  where the process or farm said only why) */
	bool cancelled; /* it was cancelled (error says so) */
	double seconds; /* from its start to its end */
	struct kf_rfarm_stats farm; /* "redis": its submission's counts */
	/* the executor's */
	struct kf_exec_job *next;
	int state;
	pid_t pid;
	volatile sig_atomic_t stop;
};

struct kf_exec;

struct kf_exec_ops {
	const char *name;
	/* Runs j on the calling thread until it ends; sets j->result or
	 * j->error. Honours j->deadline_ns and j->stop. */
	void (*run)(struct kf_exec *x, void *ctx, struct kf_exec_job *j);
	/* Makes j, running on another thread, end soon (called under the
	 * executor's lock; j->stop is already set). NULL: j runs to its end
	 * and is then reported cancelled. */
	void (*cancel)(struct kf_exec *x, void *ctx, struct kf_exec_job *j);
};

struct kf_exec_opts {
	const char *kind; /* "thread", "process" or "redis" (ops NULL) */
	const struct kf_exec_ops *ops; /* a caller's own; ctx is theirs */
	void *ctx;
	struct kf_eval_opts eval; /* for jobs that bring none (copied: its
				     strings must outlive the executor) */
	int slots;	 /* jobs at once through kf_exec_submit (>= 1) */
	const char *exe; /* "process": the executable (NULL: kforge's own,
			    next to this one) */
	const char *redis; /* "redis": the farm's URL */
	double redis_wait_s; /* "redis": a job's longest wait when it has no
				deadline (3600) */
};
#define KF_EXEC_OPTS_INIT                                                      \
	{                                                                      \
		"thread", NULL, NULL, KF_EVAL_OPTS_INIT, 1, NULL, NULL, 3600.0 \
	}

/* The executor o asks for; KF_EINVAL for an unknown kind or a missing exe
 * or URL. *x is the caller's to kf_exec_close. */
int kf_exec_open(const struct kf_exec_opts *o, struct kf_exec **x,
		 struct kf_err *err);
/* The name of x's ops ("thread", "process", "redis" or the caller's). */
const char *kf_exec_kind(const struct kf_exec *x);
/* Runs j on the calling thread; j has ended on return. */
void kf_exec_run(struct kf_exec *x, struct kf_exec_job *j);
/* Queues j (which must live until it is collected); it starts when a slot
 * is free, in the order submitted. */
void kf_exec_submit(struct kf_exec *x, struct kf_exec_job *j);
/* A submitted job that has ended, in the order they ended; NULL when none
 * ended within timeout_ms (< 0: wait as long as one is in flight) or none
 * is in flight. */
struct kf_exec_job *kf_exec_collect(struct kf_exec *x, int timeout_ms);
/* Jobs submitted and not yet collected. */
int kf_exec_pending(struct kf_exec *x);
/* Ends j soon: a queued job at once, a running one as its ops can (a
 * process killed, a farm job withdrawn); it still ends through collect (or
 * its kf_exec_run returns), with cancelled set and error saying so. */
void kf_exec_cancel(struct kf_exec *x, struct kf_exec_job *j);
/* Cancels every job, running or queued, and refuses new ones (they end
 * cancelled at once): for a caller that is stopping. */
void kf_exec_stop(struct kf_exec *x);
/* Stops x, waits for its slots, frees it; jobs not collected are left to
 * their owner (ended). */
void kf_exec_close(struct kf_exec *x);

/* `EXE --eval-child TASK CANDIDATE`: reads {"eval": options, "profile":
 * bool} as a frame on stdin, evaluates, writes the result (or
 * {"engine_error": why}) as one frame to stdout. argv[0] is
 * "--eval-child". */
int kf_exec_child_main(int argc, char **argv);

/* Writes source where evaluations read candidates: content-addressed
 * (sha, hex) under the cache's candidates directory, named .py for a
 * KernelBench-format task, else .cu on cuda and .c elsewhere. *path is
 * malloc'd. */
int kf_exec_write_source(const char *task_path, const char *backend,
			 const char *sha, const char *source, char **path,
			 struct kf_err *err);

#endif
