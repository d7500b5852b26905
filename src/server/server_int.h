/*
 * server_int.h: what the parts of src/server share. They call each other in
 * one direction, from the top: server.c (the server's life, the worker
 * threads and the eval children they start, kf_server_handle) calls api.c
 * (api_handle, which sends each request to its route); the routes are
 * openenv.c (OpenEnv's, over the episodes), episodes.c, score.c (items:
 * parsing, evaluation, the store, rewards; /v1/score and /v1/openrlhf) with
 * groups.c (groups across requests) and request.c (reading a request); at
 * the bottom, calling nothing of the others, queue.c (the queue of
 * evaluations), respond.c (answers, errors) and stats.c (/v1/stats,
 * /metrics). websocket.c frames OpenEnv's /ws for the HTTP layer.
 */
#ifndef KFORGE_SERVER_INT_H
#define KFORGE_SERVER_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <kforge/exec.h>
#include <kforge/reward.h>
#include <kforge/server.h>
#include <kforge/store.h>

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* The evaluations one request waits for. */
struct batch {
	int pending; /* jobs not done; under the server's lock */
};

/* One evaluation: a source against a task. */
struct job {
	char *task_path;
	char *source;
	char sha[65];
	uint64_t deadline_ns;
	struct batch *batch;
	enum job_state state;
	cJSON *result;	  /* when done: the result JSON, or NULL */
	char *error;	  /* when done without a result: why (infra) */
	double seconds;	  /* the evaluation's wall time */
	char *label;	  /* names its request and item in errors */
	struct job *next; /* in the queue */
};

struct episode;

/* The upper bounds of the latency histograms' buckets, in seconds; the
 * last bucket is +Inf. */
#define SRV_HIST_BOUNDS                                                        \
	{                                                                      \
		0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600                    \
	}
#define SRV_HIST_BUCKETS 12

struct kf_server {
	struct kf_server_opts o; /* strings owned (copies) */
	char *eval_exe;
	struct kf_exec *exec; /* where evaluations run */
	char *eo_json; /* the eval options, for the children */
	struct kf_reward reward;
	struct kf_store *store;
	pthread_mutex_t store_lock;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t work;  /* a job was queued, or stopping */
	pthread_cond_t done;  /* a job is done */
	struct job *head, *tail;
	int depth;   /* queued */
	int running; /* in a worker */
	bool stopping;
	pthread_t *threads;
	int n_threads;
	int n_started;

	/* statistics */
	uint64_t started_ns;
	long requests, items, evaluations, rejected_busy, errors_4xx,
	    errors_5xx, deadline_misses, dedup_hits;
	long status_count[KF_STATUS_INFRA_ERROR + 1];
	double eval_seconds; /* sum over evaluations */
	/* Latency histograms (/metrics): evaluations (in a worker, retries
	 * included) and scoring requests (POST, received to answered). */
	long eval_hist[SRV_HIST_BUCKETS], req_hist[SRV_HIST_BUCKETS];
	double req_seconds;

	/* episodes (episodes.c), under lock */
	struct episode *episodes;
	int n_episodes;
	uint64_t episode_seq;

	/* groups across requests (groups.c), under lock */
	struct srv_group *groups;
	int n_groups;
	long groups_incomplete; /* answered at their wait, not whole */
	pthread_cond_t group_cond;

	/* The farm (o.redis): set at shutdown, ending the submissions'
	 * waits; this server's jobs there and what their submissions saw
	 * (under lock). */
	long farm_jobs, farm_retried, farm_duplicates, farm_reconnects,
	    farm_abandoned;
	long score_requests; /* scoring requests, numbered in labels */

	/* The device the latest evaluation ran on, as its worker described
	 * it (the result's environment.device), under lock; NULL before. */
	cJSON *device;
};

/* What a group gives one of its items. */
struct srv_group_answer {
	double reward, advantage; /* NaN where none */
	int members, size;	  /* the items scored together, of size */
	bool complete;		  /* members == size */
};

/* Adds an evaluated item to the open group id of that size and design
 * (rw), a new group when there is none (KF_ERANGE when --max-groups are
 * open); *slot is its place. Closes the group when it is whole. */
int srv_group_join(struct kf_server *s, const struct kf_reward *rw,
		   const char *id, const char *problem, int size,
		   const struct kf_reward_item *ri,
		   struct srv_group **g, int *slot, struct kf_err *err);
/* Waits until g is answered (whole, or at its wait) or until_ns, then gives
 * slot's reward; the caller's part in g ends. */
void srv_group_answer(struct kf_server *s, struct srv_group *g, int slot,
		      uint64_t until_ns, struct srv_group_answer *a);
void srv_groups_free(struct kf_server *s);
/* The rewards of m items scored together into reward (what the design
 * gives; a failure logged, naming what) and, with grpo, their GRPO
 * advantages into adv (NaN where there are none). */
void srv_rewards(const struct kf_reward *r, const struct kf_reward_item *ri,
		 int m, bool grpo, double *reward, double *adv,
		 const char *what);

/* ---- the queue (queue.c) ---- */

/* Queues the jobs of one request (all or none): KF_ERANGE when the queue
 * cannot take them all (*retry_after is set). Under no lock. */
int srv_submit(struct kf_server *s, struct job **jobs, int n, struct batch *b,
	       int *retry_after);
/* Waits until every job of b is done; jobs still queued at their deadline
 * are taken off the queue and done with an error. */
void srv_wait(struct kf_server *s, struct job **jobs, int n, struct batch *b);
void srv_job_free(struct job *j);
/* Marks j done and wakes its request's wait; under the lock. */
void srv_job_finish(struct kf_server *s, struct job *j);
/* Waits on c (m held) for at most wait_ns; the caller checks its clock
 * and its condition again. */
void srv_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, uint64_t wait_ns);

/* ---- the statistics (stats.c) ---- */

/* Counts x seconds in the bucket of a latency histogram. */
void srv_hist_add(long *h, double x);

/* ---- the routes ---- */

/* Sends a request to its route (api.c). */
void api_handle(struct kf_server *s, const char *method, const char *path,
		cJSON *body, struct kf_server_response *out);

/* The episodes' routes (episodes.c): answers POST /v1/episodes, POST
 * /v1/episodes/{id}/step and GET and DELETE /v1/episodes/{id} (a wrong
 * method or id included) and returns true, or returns false for any other
 * path. */
bool api_episodes_route(struct kf_server *s, const char *method,
			const char *path, const cJSON *body,
			struct kf_server_response *out);
void api_episodes_free(struct kf_server *s);

/* One item to score (score.c), from a request's items, OpenRLHF's query
 * or an episode's step. */
struct sitem {
	char *id, *problem, *task_path, *task_id;
	const char *completion; /* borrowed from the request */
	const char *prompt;	/* the prompt it answers, where sent; borrowed */
	char *code;		/* what is evaluated; NULL: no code found */
	bool code_given;	/* "code" rather than "completion" */
	bool copied;		/* its code was the task's reference */
	char *refused;		/* why its text is not evaluated (over the
				   code cap, a NUL): scored as that, a
				   failure with check refused_check */
	const char *refused_check;
	char *group;
	int group_size;	 /* 0: not given */
	bool across;	 /* its group's other items come in other requests */
	int members;	 /* the items its reward was computed over */
	bool group_complete;
	int turn;	 /* -1: not given */
	struct job *job; /* owned through the request's job list */
	bool dup;	 /* its job was made for an earlier item */
	cJSON *synth;	 /* a result made here (no code, infra) */
	const cJSON *result;
	struct kf_reward_item ri;
	double reward, advantage;
	int64_t run_id, cand_id;
	/* the profile feedback mode ("feedback": "profile"): the backend
	 * and include directory to profile it with; NULL: the standard
	 * feedback, no profile */
	const char *profile_backend, *profile_include;
};

void api_sitems_free(struct sitem *it, int n);
/* The item's text is not evaluated, for why (malloc'd by the caller's
 * format): the item is scored compile_error with check, a failure of its
 * own. */
void api_item_refuse(struct sitem *it, const char *check, char *why);
/* Why an item whose code or completion held \u0000 is not evaluated
 * (malloc'd). */
char *api_nul_why(bool code);
/* Takes an item's text (code when code_given, else a model's completion):
 * over the code cap it is not evaluated, and the item is a failure of its
 * own (compile_error, code_too_large) rather than an error of the whole
 * request, whose other items are scored. */
void api_item_text(struct kf_server *s, struct sitem *it, const char *text,
		   bool code_given);
/* Evaluates, stores and rewards n parsed items: 0 with *answers (an array
 * of item objects), or -1 with out set. */
int api_score_items(struct kf_server *s, struct sitem *it, int n,
		    const struct kf_reward *rw, double deadline_s,
		    const char *route, const cJSON *extra, cJSON **answers,
		    struct kf_server_response *out);
/* POST /v1/score */
void api_route_score(struct kf_server *s, const cJSON *body,
		     struct kf_server_response *out);
/* POST /v1/openrlhf: OpenRLHF's remote reward model protocol. */
void api_route_openrlhf(struct kf_server *s, const cJSON *body,
			struct kf_server_response *out);

/* ---- reading a request (request.c) ---- */

/* Whether the request being handled on this thread held \u0000 in the
 * string at key0[idx1].key2 (idx1 -1 and key2 NULL for shorter paths): an
 * item's text that kforge cannot read whole, which kf_server_handle let
 * through for that item alone to fail. */
bool srv_request_nul(const char *key0, long idx1, const char *key2);
/* Around the handling of one request (one inside another, as OpenEnv's
 * routes make, each with its own): srv_nuls_enter sets the outer's marks
 * aside; srv_nuls_begin, for a body holding \u0000, says whether every
 * such string is an item's text (then held for srv_request_nul), else
 * false with *bad_at the byte of the first that is not: the request is
 * refused (nul_in_string); srv_nuls_leave drops
 * this request's and puts the outer's back. */
void *srv_nuls_enter(void);
bool srv_nuls_begin(const char *path, const char *body, size_t len,
		    long *bad_at);
void srv_nuls_leave(void *outer);
/* Whether a string at key0.key1 of the request held \u0000 (OpenEnv's
 * action.completion, say). */
bool srv_request_nul_in(const char *key0, const char *key1);
/* For a request made inside another (OpenEnv's step onto an episode's):
 * sets the outer's marks aside, as srv_nuls_enter, and marks the inner
 * body's member key0 (NULL: none) as holding \u0000; srv_nuls_leave
 * ends it. */
void *srv_nuls_inner(const char *key0);
/* An optional integer member in [lo, hi]: 0 and *out set (dflt when
 * absent), -1 when present and not such an integer. */
int api_int_member(const cJSON *o, const char *key, int lo, int hi, int dflt,
		   int *out);
/* The task of a problem id under the tasks root: 0 with its real path in
 * *task_path and its id in *task_id, or -1 with the answer set (400
 * bad_field, 404 unknown_problem); where and field name it in the
 * message. */
int api_resolve_problem(struct kf_server *s, const char *id, char **task_path,
			char **task_id, struct kf_server_response *out,
			const char *where, const char *field);
/* The design of a request ("reward"), the server's when absent: 0, or -1
 * with a 422. */
int api_request_reward(struct kf_server *s, const cJSON *body,
		       struct kf_reward *r, struct kf_server_response *out);
/* The deadline of a request ("deadline_s"), at most the server's: 0, or -1
 * with a 422. */
int api_request_deadline(struct kf_server *s, const cJSON *body,
			 double *deadline_s, struct kf_server_response *out);

/* OpenEnv (openenv.c): answers the protocol's HTTP routes (/reset, /step,
 * /state, /schema, /metadata, /health) and returns true, or returns false
 * for any other path. Every episode goes through episodes.c's routes. */
bool srv_openenv_route(struct kf_server *s, const char *method,
		       const char *path, const cJSON *body,
		       struct kf_server_response *out);
/* One WebSocket session of OpenEnv's /ws: at most one open episode. */
struct srv_openenv;
struct srv_openenv *srv_openenv_open(struct kf_server *s);
/* The answer (JSON text, caller frees) to one text message of len bytes;
 * *close is set for {"type": "close"}, which has no answer (NULL). */
char *srv_openenv_message(struct srv_openenv *o, const char *text,
			  size_t len, bool *close);
/* Ends the session's episode and frees it; NULL is a no-op. */
void srv_openenv_close(struct srv_openenv *o);
/* A device's line for KernelObservation.gpu_info, from a worker's
 * description of it (environment.device): "NAME (N GB, compute capability
 * X.Y, driver D, CUDA V)", with what it holds; NULL without a name. */
char *srv_device_line(const cJSON *device);

/* ---- answers (respond.c) ---- */

/* An error answer, not counted (kf_server_handle counts it). */
void srv_error(int status, const char *code, const char *message,
	       struct kf_server_response *out);
/* srv_error with a formatted message. */
void srv_errorf(struct kf_server_response *out, int status, const char *code,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 405: method is not one of allowed on path. */
void srv_bad_method(struct kf_server_response *out, const char *method,
		    const char *path, const char *allowed);
/* Builds an answer from JSON (takes it). */
void srv_respond(struct kf_server_response *out, int status, cJSON *body);
/* Counts an answer's status (4xx, 5xx). */
void srv_count_status(struct kf_server *s, int status);
/* Adds key: v to o, null where v is not finite. */
void srv_add_num(cJSON *o, const char *key, double v);

#endif
