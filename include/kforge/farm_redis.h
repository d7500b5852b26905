/*
 * farm_redis.h: the farm across machines, on Redis Streams (docs/scale.md).
 *
 * A submitter adds one job per candidate to the stream kforge:jobs:BACKEND
 * (the candidate's source travels in the job; its task is a path relative
 * to the kforge tree, which every node has). Workers read the stream
 * through one consumer group (XREADGROUP), evaluate each job with kf_eval
 * and, in one transaction, add its result to the submitter's stream
 * kforge:results:BATCH (XADD) and acknowledge the job (XACK, XDEL). A job
 * whose worker stopped answering (killed, cut off) is taken over by another
 * worker once it has been idle for the visibility timeout (XAUTOCLAIM);
 * a live worker keeps its jobs' idle time at zero while it evaluates them.
 * A job delivered more than max_attempts times is answered with an
 * infra_error result saying so. A job may thus be answered twice (a worker
 * cut off past the timeout that then answers, a reply lost in a
 * reconnect); the submitter keeps the first result per job id and counts
 * the others as duplicates.
 *
 * Where kforge was built without hiredis (make deps), every function
 * fails with KF_ENOSYS and kf_redis_available says false.
 */
#ifndef KFORGE_FARM_REDIS_H
#define KFORGE_FARM_REDIS_H

#include <signal.h>
#include <stdbool.h>

#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/farm.h>

/* True when kforge was built with hiredis. */
bool kf_redis_available(void);

/* A Redis address: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (port
 * 6379, db 0 by default) or unix:///PATH[?db=DB]. */
struct kf_redis_url {
	char host[256]; /* empty for a unix socket */
	int port;
	char path[256]; /* the unix socket, or empty */
	int db;
	char user[128], password[256];
};
/* Parses url; KF_EINVAL with err saying what is wrong with it. */
int kf_redis_url_parse(const char *url, struct kf_redis_url *u,
		       struct kf_err *err);

/* Connects to url and pings it within timeout_s: 0, or a negative code
 * with err naming the URL and why (malformed: KF_EINVAL; unreachable or
 * refused: KF_EIO). Used to check an address before work starts. */
int kf_redis_check(const char *url, double timeout_s, struct kf_err *err);

struct kf_rfarm_worker_opts {
	const char *url;
	const char *name;    /* NULL: HOST-PID */
	const char *backend; /* "host" (default) or "cuda": which queue */
	int slots;	     /* evaluations at once; <= 0: cuda, the GPUs
				(kf_farm_gpu_count); host, 1 */
	double visibility_s; /* a job idle this long is taken over (60) */
	int max_attempts;    /* deliveries before infra_error (3) */
	double heartbeat_s;  /* heartbeat period (2; TTL 5 periods) */
	double idle_exit_s;  /* exit after this long without a job; 0:
				never */
	const char *python;  /* KernelBench-format tasks; NULL: default */
	volatile sig_atomic_t *stop; /* set: finish the jobs held, exit */
};
#define KF_RFARM_WORKER_OPTS_INIT                                              \
	{                                                                      \
		NULL, NULL, "host", 0, 60.0, 3, 2.0, 0.0, NULL, NULL           \
	}

/* Runs a worker until *stop is set (or idle_exit_s passes). Redis going
 * away is waited out (reconnecting); only a URL that is malformed or does
 * not answer at the start is an error (KF_EINVAL, KF_EIO). */
int kf_rfarm_worker_run(const struct kf_rfarm_worker_opts *o,
			struct kf_err *err);

/* What a batch's submission saw. */
struct kf_rfarm_stats {
	int jobs, answered;
	int duplicates; /* results dropped: their job was answered before */
	int reclaimed;	/* answered by a worker that took the job over */
	int abandoned;	/* answered infra_error after max_attempts */
	int reconnects; /* times the submitter reconnected */
	double seconds;
};

/* How a submission runs (kf_rfarm_submit). */
struct kf_rfarm_submit_opts {
	const char *url;
	double deadline_s; /* the longest wait for the answers (3600) */
	/* false: a Redis that does not answer at the start is an error at
	 * once (kforge eval --batch); true: it is waited out, reconnecting,
	 * until the deadline, like Redis going away later (a server, whose
	 * requests must outlive a restart of Redis). */
	bool wait_for_redis;
	/* Set (by anyone, at any time): the call stops waiting; its
	 * unanswered jobs are withdrawn and each is an error of its item
	 * ("cancelled"). NULL: never. */
	volatile sig_atomic_t *cancel;
	/* Names the submission in its items' errors, e.g. "request 12 (item
	 * 'a')"; NULL: "the batch". */
	const char *label;
	/* As in kf_farm_opts (compiled is the number submitted); called in
	 * the calling thread. */
	void (*progress)(void *arg, const struct kf_farm_progress *p);
	void *progress_arg;
};
#define KF_RFARM_SUBMIT_OPTS_INIT                                              \
	{                                                                      \
		NULL, 3600.0, false, NULL, NULL, NULL, NULL                    \
	}

/*
 * The one way evaluations are sent to the farm: kforge eval --batch
 * --redis, kforge serve --redis and kforge optimize --redis all call it.
 * Submits items[0..n) (each against item.task, else task_path) to
 * so->url's queue for eo->backend, with eo's options, and waits until every
 * item is answered, so->deadline_s passes or *so->cancel is set: each item
 * is filled as kf_farm_run fills it (result or rc and err; an item whose
 * candidate cannot be read, or that is not answered in time, is an error
 * of that item, its message naming so->label; device is the slot of the
 * worker that measured it). A job lost with its worker (killed, cut off)
 * is taken over by another worker and its answer comes here like any
 * other; an item is filled once, however many answers its job gets.
 * Returns 0 when the batch ran, a negative code with err set when the URL
 * is malformed, or unreachable at the start and so->wait_for_redis is
 * false.
 *
 * Thread safety: calls from several threads at once are safe and
 * independent. Each call opens its own connection and its own results
 * stream (kforge:results:BATCH, a fresh random BATCH), and touches only
 * its own items and stats; the progress callback runs in the calling
 * thread. It neither forks nor changes signal dispositions (SIGPIPE is
 * blocked in the calling thread for each command only).
 */
int kf_rfarm_submit(const struct kf_rfarm_submit_opts *so,
		    const char *task_path, struct kf_farm_item *items, int n,
		    const struct kf_eval_opts *eo, struct kf_rfarm_stats *stats,
		    struct kf_err *err);

/* The farm's state: {"queues": [{"backend", "stream", "waiting" (queued,
 * not yet taken), "in_flight" (taken, not yet acknowledged: the pending
 * entries), "consumers_holding"}], "workers": [{"name", "host", "pid",
 * "backend", "slots" (evaluations at once), "gpus" (the GPUs it evaluates
 * on: its slots on cuda, 0 on a host node), "jobs", "done", "reclaimed",
 * "seen_s_ago" (since its last heartbeat), "up_s"}], "totals": {"done",
 * "reclaimed" (answers of jobs delivered more than once: retried after a
 * worker was lost), "abandoned"}}. Workers are those whose heartbeat has
 * not expired. Thread-safe (a connection of its own). */
int kf_rfarm_status(const char *url, cJSON **status, struct kf_err *err);

#endif
