/*
 * server.h: the reward service behind `kforge serve` (docs/api.md). The
 * library part: request parsing, the bounded evaluation queue and its
 * workers, episode state, rewards and the store. It speaks JSON bodies and
 * HTTP status codes but no HTTP: tools/kforge-serve.c puts it behind
 * libmicrohttpd, and anything else (a test) may call kf_server_handle. The
 * OpenEnv protocol's WebSocket sessions (/ws, docs/rl.md) are served here
 * too, over a socket the HTTP layer has upgraded (kf_server_ws_serve).
 *
 * Every evaluation runs in a child process of its own (the eval executable
 * run as `EXE --eval-child ...`: kf_exec_child_main, exec.h), started by
 * one of a bounded pool of worker threads that take items off a bounded queue. With
 * a Redis farm (opts.redis, docs/scale.md) the worker threads submit their
 * evaluations to the farm instead (kf_rfarm_submit), each waiting for its
 * job's answer; the store, rewards and answers stay here.
 */
#ifndef KFORGE_SERVER_H
#define KFORGE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kforge/base.h>
#include <kforge/eval.h>

/* Defaults and hard limits. */
#define KF_SERVER_WORKERS 2
#define KF_SERVER_WORKERS_MAX 256
/* With --redis and no --workers: evaluations in flight on the farm at
 * once (each a thread here waiting on its job's answer). */
#define KF_SERVER_FARM_WORKERS 64
/* Items waiting for a worker, and the most one request may hold: a
 * training step's rollouts sent one per call at once (OpenRLHF, verl's
 * reward loop) or in one batch must fit. */
#define KF_SERVER_QUEUE 4096
#define KF_SERVER_QUEUE_MAX 1000000
#define KF_SERVER_BODY_CAP ((size_t)8 << 20)   /* one request body */
#define KF_SERVER_CODE_CAP ((size_t)256 << 10) /* one completion or code */
#define KF_SERVER_DEADLINE_S 600.0	       /* one request, by default */
/* /v1/openrlhf's: OpenRLHF's client gives up on a request after 180 s
 * (openrlhf/utils/agent.py, aiohttp.ClientTimeout(total=180)) and then
 * raises, so its requests are answered before that, with what is done */
#define KF_SERVER_OPENRLHF_DEADLINE_S 150.0
/* A group whose items come in separate requests is answered when its last
 * item is scored, or this long after its first arrived, with what it has. */
#define KF_SERVER_GROUP_WAIT_S 60.0
#define KF_SERVER_GROUPS 65536 /* open groups at once */
#define KF_SERVER_EPISODES 4096	       /* open episodes at once */
#define KF_SERVER_EPISODE_TTL_S 3600.0 /* idle episodes expire */
#define KF_SERVER_MAX_TURNS 4	       /* default turns of an episode */
#define KF_SERVER_ID_CAP 256	       /* item, group, problem id bytes */

struct kf_server_opts {
	const char *tasks_dir;	    /* problem ids are looked up here, and
				       only here (default "tasks") */
	const char *db_path;	    /* the run store (default "kforge.db") */
	struct kf_eval_opts eo;	    /* how each item is evaluated (backend,
				       trials, time cap...); borrowed strings */
	const char *eval_exe;	    /* run as `eval_exe --eval-child ...`;
				       NULL: kforge-serve beside the running
				       executable */
	int workers;		    /* evaluations at once */
	int queue_cap;		    /* items waiting; a request that would
				       overflow it is answered 503 */
	size_t body_cap;	    /* request bodies over it: 413 */
	size_t code_cap;	    /* a completion or code over it: 413 */
	double deadline_s;	    /* longest a request may take; a request may
				       ask for less */
	double openrlhf_deadline_s; /* /v1/openrlhf's, at most deadline_s */
	const char *reward;	    /* the default design (default
				       "log_speedup") */
	const char *reward_params;  /* its parameters, JSON object text; NULL */
	int max_episodes;
	double episode_ttl_s;
	int max_turns; /* default turns of an episode */
	double group_wait_s;	 /* an open group's longest wait */
	int max_groups;		 /* open groups at most */
	int openrlhf_group_size; /* /v1/openrlhf: the samples of one prompt
				    a group (0: those of the request) */
	const char *openenv_problem; /* OpenEnv: the problem of a reset or
					a stateless /step that names none;
					NULL: they must name one */
	const char *redis; /* the Redis farm's URL: evaluations go to its
			      workers (kforge farm worker); NULL: in eval
			      children here */
	const char *objective; /* what rewards stand on in place of the
				  speedup: "energy" or "edp"
				  (kf_reward_objective_ratio); NULL: time */
};
#define KF_SERVER_OPTS_INIT                                                    \
	{                                                                      \
		"tasks", "kforge.db", KF_EVAL_OPTS_INIT, NULL,                 \
		    KF_SERVER_WORKERS, KF_SERVER_QUEUE, KF_SERVER_BODY_CAP,    \
		    KF_SERVER_CODE_CAP, KF_SERVER_DEADLINE_S,                  \
		    KF_SERVER_OPENRLHF_DEADLINE_S, "log_speedup", NULL,        \
		    KF_SERVER_EPISODES, KF_SERVER_EPISODE_TTL_S,               \
		    KF_SERVER_MAX_TURNS, KF_SERVER_GROUP_WAIT_S,               \
		    KF_SERVER_GROUPS, 0, NULL, NULL, NULL                      \
	}

struct kf_server;

/*
 * Checks opts, opens the store and starts the workers. KF_EINVAL (the
 * message names the option) for a bad option or reward design; the store's
 * errors as kf_store_open gives them. *out is freed with kf_server_free.
 */
int kf_server_new(const struct kf_server_opts *opts, struct kf_server **out,
		  struct kf_err *err);
/*
 * Stops taking work: queued items end as infra_error ("the server is
 * stopping"), evaluations in flight are killed, the workers are joined.
 * Requests waiting in kf_server_handle then answer. Idempotent.
 */
void kf_server_shutdown(struct kf_server *s);
/* Shuts down, then frees everything and closes the store. Call it when no
 * kf_server_handle is running any more. */
void kf_server_free(struct kf_server *s);

/* An answer: an HTTP status and a JSON body. */
struct kf_server_response {
	int status;
	char *body;		  /* JSON text (or content_type's); owned */
	int retry_after;	  /* seconds, > 0 only with a 503 */
	const char *content_type; /* NULL: application/json */
};
void kf_server_response_release(struct kf_server_response *r);

/*
 * Handles one request: method ("GET", "POST", "DELETE"), path (without the
 * query string) and the body (body_len bytes, need not be NUL-terminated;
 * NULL when empty). Blocks until the answer is ready (for /v1/score, until
 * every item is evaluated or the deadline passes). Thread-safe. Every
 * answer is JSON; errors are {"error": {"code": ..., "message": ...}}.
 */
void kf_server_handle(struct kf_server *s, const char *method, const char *path,
		      const char *body, size_t body_len,
		      struct kf_server_response *out);

/* An error answer built the same way (for the HTTP layer's own 4xx). */
void kf_server_error(struct kf_server *s, int status, const char *code,
		     const char *message, struct kf_server_response *out);

/* The body cap the HTTP layer enforces. */
size_t kf_server_body_cap(const struct kf_server *s);

/* GET /v1/stats as JSON; caller frees. */
cJSON *kf_server_stats(struct kf_server *s);
/* GET /metrics: the same figures, with latency histograms, in
 * Prometheus' text exposition format (version 0.0.4); caller frees. With a
 * farm (opts.redis) also the farm's gauges, read from Redis at each call
 * (kforge_farm_up 0, and no other farm gauge, while it does not answer). */
char *kf_server_metrics(struct kf_server *s);
#define KF_SERVER_METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * OpenEnv's WebSocket endpoint (/ws). kf_server_ws_accept writes the
 * Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key (RFC 6455
 * section 4.2.2: base64 of the SHA-1 of the key and the protocol's GUID),
 * 28 characters and a NUL, into out.
 */
void kf_server_ws_accept(const char *key, char out[29]);
/*
 * Serves one OpenEnv session on fd, a connection whose handshake was
 * answered with 101 (extra: the extra_len bytes the HTTP layer read past
 * it, borrowed). The session is the connection: its episode ends when the
 * client sends {"type": "close"}, a close frame, or goes away. Blocks until
 * then; shuts fd down but does not close it. Thread-safe.
 */
void kf_server_ws_serve(struct kf_server *s, int fd, const char *extra,
			size_t extra_len);


#endif
