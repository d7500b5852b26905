/*
 * server_int.h: what the parts of src/server share. server.c owns the queue,
 * the workers, the eval children, the store and the statistics; api.c the
 * routes, the request parsing, rewards and episodes; openenv.c OpenEnv's
 * routes and sessions over api.c's episodes; websocket.c the frames of
 * OpenEnv's /ws.
 */
#ifndef KFORGE_SERVER_INT_H
#define KFORGE_SERVER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

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
	pid_t pid;	  /* the eval child while running */
	cJSON *result;	  /* when done: the result JSON, or NULL */
	char *error;	  /* when done without a result: why (infra) */
	double seconds;	  /* the evaluation's wall time */
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
	struct job **inflight; /* per worker, for shutdown */
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

	/* episodes (api.c), under lock */
	struct episode *episodes;
	int n_episodes;
	uint64_t episode_seq;

	/* groups across requests (groups.c), under lock */
	struct srv_group *groups;
	int n_groups;
	long groups_incomplete; /* answered at their wait, not whole */
	pthread_cond_t group_cond;

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
		   const char *id, int size, const struct kf_reward_item *ri,
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

/* Queues the jobs of one request (all or none): KF_ERANGE when the queue
 * cannot take them all (*retry_after is set). Under no lock. */
int srv_submit(struct kf_server *s, struct job **jobs, int n, struct batch *b,
	       int *retry_after);
/* Waits until every job of b is done; jobs still queued at their deadline
 * are taken off the queue and done with an error. */
void srv_wait(struct kf_server *s, struct job **jobs, int n, struct batch *b);
void srv_job_free(struct job *j);
/* Waits on c (m held) for at most wait_ns; the caller checks its clock
 * and its condition again. */
void srv_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, uint64_t wait_ns);

/* Counts an answer's status (4xx, 5xx). */
void srv_count_status(struct kf_server *s, int status);

/* The routes (api.c). */
void api_handle(struct kf_server *s, const char *method, const char *path,
		cJSON *body, struct kf_server_response *out);
void api_episodes_free(struct kf_server *s);

/* OpenEnv (openenv.c): answers the protocol's HTTP routes (/reset, /step,
 * /state, /schema, /metadata, /health) and returns true, or returns false
 * for any other path. Every episode goes through api_handle's routes. */
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

/* An error answer, not counted (kf_server_handle counts it). */
void srv_error(int status, const char *code, const char *message,
	       struct kf_server_response *out);
/* Builds an answer from JSON (takes it). */
void srv_respond(struct kf_server_response *out, int status, cJSON *body);

#endif
