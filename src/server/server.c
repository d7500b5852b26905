/*
 * server.c: the reward service's engine room: the server's life (options,
 * start, shutdown), the worker threads and the eval children they start,
 * the store, and kf_server_handle, where every request enters: its body is
 * checked, then api.c routes it and its time is counted. The workers take
 * their jobs from queue.c's queue; the statistics are read out in stats.c.
 *
 * The workers evaluate through one executor (include/kforge/exec.h): a
 * fresh eval child per evaluation (`kforge-serve --eval-child`), so that a
 * crash of the engine ends that child and not the server, or with a farm
 * (--redis) a job on the farm, waited for: the farm's workers evaluate.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/exec.h>
#include <kforge/farm_redis.h>
#include <kforge/task.h>

#include "server_int.h"

static char *dup_or_null(const char *s)
{
	return s ? kf_xstrdup(s) : NULL;
}

size_t kf_server_body_cap(const struct kf_server *s)
{
	return s->o.body_cap;
}

/* Runs one evaluation through the server's executor (an eval child, or a
 * job on the farm); fills j->result or j->error. Called with no lock
 * held. */
static void evaluate(struct kf_server *s, struct job *j)
{
	struct kf_err err = KF_ERR_INIT;
	char *path = NULL;
	uint64_t t0 = kf_now_ns();
	if (t0 >= j->deadline_ns) {
		j->error = kf_xasprintf("%s: the request's deadline passed "
					"before the evaluation started",
					j->label ? j->label : "the request");
		return;
	}
	if (kf_exec_write_source(j->task_path, s->o.eo.backend, j->sha,
				 j->source, &path, &err)) {
		j->error =
		    kf_xasprintf("cannot write the candidate: %s", err.msg);
		return;
	}
	struct kf_exec_job ej;
	memset(&ej, 0, sizeof(ej));
	ej.task = j->task_path;
	ej.candidate = path;
	ej.label = j->label;
	ej.deadline_ns = j->deadline_ns;
	kf_exec_run(s->exec, &ej);
	pthread_mutex_lock(&s->lock);
	if (s->o.redis) {
		s->farm_jobs++;
		s->farm_retried += ej.farm.reclaimed;
		s->farm_duplicates += ej.farm.duplicates;
		s->farm_reconnects += ej.farm.reconnects;
		s->farm_abandoned += ej.farm.abandoned;
	}
	pthread_mutex_unlock(&s->lock);
	if (ej.cancelled && !ej.result) {
		j->error = kf_xasprintf("the server is stopping: %s", ej.error);
		free(ej.error);
	} else {
		j->result = ej.result;
		j->error = ej.error;
	}
	free(path);
	j->seconds = (double)(kf_now_ns() - t0) / 1e9;
}

static void *worker_main(void *arg)
{
	struct kf_server *s = arg;
	pthread_mutex_lock(&s->lock);
	s->n_started++;
	for (;;) {
		while (!s->stopping && !s->head)
			pthread_cond_wait(&s->work, &s->lock);
		struct job *j = s->head;
		if (!j)
			break;
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		j->next = NULL;
		s->depth--;
		if (s->stopping || kf_now_ns() >= j->deadline_ns) {
			j->error = kf_xstrdup(
			    s->stopping
				? "the server is stopping"
				: "the request's deadline passed before "
				  "the evaluation started");
			if (!s->stopping)
				s->deadline_misses++;
			srv_job_finish(s, j);
			continue;
		}
		j->state = JOB_RUNNING;
		s->running++;
		pthread_mutex_unlock(&s->lock);
		evaluate(s, j);
		const char *st = kf_json_str(j->result, "status");
		const char *check = kf_json_str(j->result, "check");
		if (st && !strcmp(st, "infra_error") &&
		    kf_now_ns() < j->deadline_ns && !s->stopping &&
		    !(check && !strcmp(check, "farm_attempts"))) {
			/* The engine's fault, not the candidate's: once
			 * more (not a farm job whose workers all died: the
			 * farm already tried it as often as it may). */
			cJSON_Delete(j->result);
			j->result = NULL;
			double first = j->seconds;
			evaluate(s, j);
			j->seconds += first;
		}
		pthread_mutex_lock(&s->lock);
		s->running--;
		s->evaluations++;
		s->eval_seconds += j->seconds;
		srv_hist_add(s->eval_hist, j->seconds);
		if (j->result)
			s->status_count[kf_result_status(j->result)]++;
		else
			s->status_count[KF_STATUS_INFRA_ERROR]++;
		const cJSON *dev = cJSON_GetObjectItem(
		    cJSON_GetObjectItem(j->result, "environment"), "device");
		if (cJSON_IsObject(dev)) {
			cJSON_Delete(s->device);
			s->device = cJSON_Duplicate(dev, 1);
		}
		srv_job_finish(s, j);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}
/* ---- lifecycle ---- */

static int check_opts(const struct kf_server_opts *o, struct kf_err *err)
{
	if (o->workers < 1 || o->workers > KF_SERVER_WORKERS_MAX)
		return kf_err_set(err, KF_EINVAL,
				  "--workers %d is out of range (1 to %d)",
				  o->workers, KF_SERVER_WORKERS_MAX);
	if (o->queue_cap < 1 || o->queue_cap > KF_SERVER_QUEUE_MAX)
		return kf_err_set(err, KF_EINVAL,
				  "--queue %d is out of range (1 to %d)",
				  o->queue_cap, KF_SERVER_QUEUE_MAX);
	if (o->body_cap < 1024)
		return kf_err_set(err, KF_EINVAL,
				  "--max-body %zu is below 1024 bytes",
				  o->body_cap);
	if (o->code_cap < 64 || o->code_cap > KF_STORE_SOURCE_CAP)
		return kf_err_set(err, KF_EINVAL,
				  "--max-code %zu is out of range (64 to %zu)",
				  o->code_cap, KF_STORE_SOURCE_CAP);
	if (!(o->deadline_s > 0) || o->deadline_s > 86400)
		return kf_err_set(err, KF_EINVAL,
				  "--deadline %g is out of range (0 to 86400 "
				  "s)",
				  o->deadline_s);
	if (!(o->openrlhf_deadline_s > 0) || o->openrlhf_deadline_s > 86400)
		return kf_err_set(err, KF_EINVAL,
				  "--openrlhf-deadline %g is out of range (0 "
				  "to 86400 s)",
				  o->openrlhf_deadline_s);
	if (!(o->group_wait_s > 0) || o->group_wait_s > 86400)
		return kf_err_set(err, KF_EINVAL,
				  "--group-wait %g is out of range (0 to 86400 "
				  "s)",
				  o->group_wait_s);
	if (o->max_groups < 1 || o->max_groups > 1000000)
		return kf_err_set(err, KF_EINVAL,
				  "--max-groups %d is out of range (1 to "
				  "1000000)",
				  o->max_groups);
	if (o->openrlhf_group_size < 0 || o->openrlhf_group_size > 100000)
		return kf_err_set(err, KF_EINVAL,
				  "--openrlhf-group-size %d is out of range (0 "
				  "to 100000)",
				  o->openrlhf_group_size);
	if (o->max_episodes < 1 || o->max_episodes > 1000000)
		return kf_err_set(err, KF_EINVAL,
				  "--max-episodes %d is out of range",
				  o->max_episodes);
	if (!(o->episode_ttl_s > 0))
		return kf_err_set(err, KF_EINVAL,
				  "--episode-ttl must be above 0");
	if (o->max_turns < 1 || o->max_turns > 64)
		return kf_err_set(err, KF_EINVAL,
				  "--max-turns %d is out of range (1 to 64)",
				  o->max_turns);
	if (o->redis) {
		struct kf_redis_url u;
		if (kf_redis_url_parse(o->redis, &u, err)) {
			kf_err_prefix(err, "--redis");
			return KF_EINVAL;
		}
		if (!kf_redis_available())
			return kf_err_set(err, KF_ENOSYS,
					  "--redis: kforge-serve was built "
					  "without hiredis (make deps, then "
					  "make)");
	}
	return 0;
}

int kf_server_new(const struct kf_server_opts *opts, struct kf_server **out,
		  struct kf_err *err)
{
	int rc = check_opts(opts, err);
	if (rc)
		return rc;
	struct kf_server *s = kf_xcalloc(1, sizeof(*s));
	s->o = *opts;
	s->o.tasks_dir =
	    dup_or_null(opts->tasks_dir ? opts->tasks_dir : "tasks");
	s->o.db_path = dup_or_null(opts->db_path ? opts->db_path : "kforge.db");
	s->o.reward = dup_or_null(opts->reward ? opts->reward : "log_speedup");
	s->o.reward_params = dup_or_null(opts->reward_params);
	s->o.openenv_problem = dup_or_null(opts->openenv_problem);
	s->o.redis = dup_or_null(opts->redis);
	s->o.eo.backend =
	    dup_or_null(opts->eo.backend ? opts->eo.backend : "host");
	s->o.eo.worker_path = dup_or_null(opts->eo.worker_path);
	s->o.eo.include_dir = dup_or_null(opts->eo.include_dir);
	/* Both cache their answer in static storage on first use: take it
	 * before there are threads. */
	(void)kf_cache_dir();
	s->eval_exe = opts->eval_exe
			  ? kf_xstrdup(opts->eval_exe)
			  : kf_path_join(kf_exe_dir(), "kforge-serve");
	cJSON *eo = kf_eval_opts_json(&s->o.eo);
	s->eo_json = kf_json_print(eo);
	cJSON_Delete(eo);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->store_lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	pthread_cond_init(&s->group_cond, NULL);
	s->started_ns = kf_now_ns();
	*out = s;

	cJSON *params = NULL;
	if (s->o.reward_params) {
		params = cJSON_Parse(s->o.reward_params);
		if (!cJSON_IsObject(params)) {
			cJSON_Delete(params);
			rc = kf_err_set(err, KF_EINVAL,
					"--reward-params: not a JSON object: "
					"%.200s",
					s->o.reward_params);
			goto fail;
		}
	}
	rc = kf_reward_init(&s->reward, s->o.reward, params, err);
	cJSON_Delete(params);
	if (rc) {
		kf_err_prefix(err, "--reward");
		goto fail;
	}
	if (!kf_is_executable(s->eval_exe)) {
		rc = kf_err_set(err, KF_ENOENT,
				"%s: the eval executable is missing",
				s->eval_exe);
		goto fail;
	}
	if (s->o.redis && (rc = kf_redis_check(s->o.redis, 5.0, err))) {
		kf_err_prefix(err, "--redis");
		goto fail;
	}
	struct kf_exec_opts xo = KF_EXEC_OPTS_INIT;
	xo.kind = s->o.redis ? "redis" : "process";
	xo.eval = s->o.eo;
	xo.exe = s->eval_exe;
	xo.redis = s->o.redis;
	if ((rc = kf_exec_open(&xo, &s->exec, err)))
		goto fail;
	rc = kf_store_open(s->o.db_path, 0, &s->store, err);
	if (rc)
		goto fail;
	s->threads = kf_xcalloc((size_t)s->o.workers, sizeof(pthread_t));
	for (int i = 0; i < s->o.workers; i++) {
		if (pthread_create(&s->threads[i], NULL, worker_main, s)) {
			rc = kf_err_set(err, KF_ECHILD,
					"cannot start worker thread %d", i);
			goto fail;
		}
		s->n_threads++;
	}
	return 0;
fail:
	kf_server_free(s);
	*out = NULL;
	return rc;
}

void kf_server_shutdown(struct kf_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	/* Evaluations in flight end at once: their eval children are killed,
	 * their farm jobs withdrawn. */
	if (s->exec)
		kf_exec_stop(s->exec);
	for (int i = 0; i < s->n_threads; i++)
		pthread_join(s->threads[i], NULL);
	s->n_threads = 0;
}

void kf_server_free(struct kf_server *s)
{
	if (!s)
		return;
	kf_server_shutdown(s);
	api_episodes_free(s);
	srv_groups_free(s);
	kf_store_close(s->store);
	kf_exec_close(s->exec);
	free(s->threads);
	free((char *)s->o.tasks_dir);
	free((char *)s->o.db_path);
	free((char *)s->o.reward);
	free((char *)s->o.reward_params);
	free((char *)s->o.openenv_problem);
	free((char *)s->o.redis);
	free((char *)s->o.eo.backend);
	free((char *)s->o.eo.worker_path);
	free((char *)s->o.eo.include_dir);
	free(s->eval_exe);
	free(s->eo_json);
	cJSON_Delete(s->device);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->store_lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->group_cond);
	free(s);
}
void kf_server_handle(struct kf_server *s, const char *method, const char *path,
		      const char *body, size_t body_len,
		      struct kf_server_response *out)
{
	/* A lone surrogate escape (\ud800 alone) is read as U+FFFD: cJSON
	 * would refuse the whole body for what is one completion's flaw.
	 * The rewrite keeps every byte offset. */
	char *fixed = body && body_len <= s->o.body_cap
			  ? kf_json_fix_lone_surrogates(body, body_len)
			  : NULL;
	if (fixed) {
		kf_server_handle(s, method, path, fixed, body_len, out);
		free(fixed);
		return;
	}
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	s->requests++;
	pthread_mutex_unlock(&s->lock);
	if (body_len > s->o.body_cap) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "the body of %zu bytes is over the cap of %zu bytes",
			 body_len, s->o.body_cap);
		kf_server_error(s, 413, "body_too_large", msg, out);
		return;
	}
	/* An outer request's NUL marks (OpenEnv's routes handle requests of
	 * their own inside theirs) are set aside until this one ends. */
	void *outer_nuls = srv_nuls_enter();
	cJSON *json = NULL;
	if (!strcmp(method, "POST") && (!body || body_len == 0) &&
	    !strcmp(path, "/reset")) {
		/* OpenEnv's reset takes no body (openenv.c) */
		json = cJSON_CreateObject();
	} else if (!strcmp(method, "POST")) {
		if (!body || body_len == 0) {
			kf_server_error(s, 400, "missing_body",
					"this route takes a JSON object body",
					out);
			srv_nuls_leave(outer_nuls);
			return;
		}
		/* JSON escapes its control characters: a raw NUL byte would
		 * end a string early, unseen (a completion cut short of a
		 * broken block and the code cap, say). */
		const char *raw = memchr(body, 0, body_len);
		if (raw) {
			char msg[200];
			snprintf(msg, sizeof(msg),
				 "the body holds a raw NUL byte at byte %zu: "
				 "JSON writes one in a string as \\u0000",
				 (size_t)(raw - body));
			kf_server_error(s, 400, "malformed_json", msg, out);
			srv_nuls_leave(outer_nuls);
			return;
		}
		const char *end = NULL;
		json = cJSON_ParseWithLengthOpts(body, body_len, &end, 0);
		if (json && end) {
			/* nothing but white space after the value */
			size_t at = (size_t)(end - body);
			while (at < body_len && strchr(" \t\r\n", body[at]) &&
			       body[at])
				at++;
			if (at < body_len) {
				cJSON_Delete(json);
				json = NULL;
			}
		}
		if (!json) {
			char msg[200];
			size_t at = end ? (size_t)(end - body) : 0;
			if (at > body_len)
				at = body_len;
			snprintf(msg, sizeof(msg),
				 "the body is not valid JSON (near byte %zu)",
				 at);
			kf_server_error(s, 400, "malformed_json", msg, out);
			srv_nuls_leave(outer_nuls);
			return;
		}
		if (!cJSON_IsObject(json)) {
			cJSON_Delete(json);
			kf_server_error(s, 400, "bad_request",
					"the body must be a JSON object", out);
			srv_nuls_leave(outer_nuls);
			return;
		}
		long nul = kf_json_nul_escape(body, body_len);
		if (nul >= 0 && !srv_nuls_begin(path, body, body_len, &nul)) {
			srv_nuls_leave(outer_nuls);
			char msg[300];
			snprintf(msg, sizeof(msg),
				 "the body holds \\u0000 (a NUL character) in "
				 "a string at byte %ld, not an item's "
				 "completion or code: kforge's strings end "
				 "at a NUL, so what follows it would be lost; "
				 "remove NUL characters before sending",
				 nul);
			cJSON_Delete(json);
			kf_server_error(s, 400, "nul_in_string", msg, out);
			return;
		}
	}
	uint64_t t0 = kf_now_ns();
	api_handle(s, method, path, json, out);
	srv_nuls_leave(outer_nuls);
	cJSON_Delete(json);
	if (!strcmp(method, "POST")) {
		double sec = (double)(kf_now_ns() - t0) / 1e9;
		pthread_mutex_lock(&s->lock);
		s->req_seconds += sec;
		srv_hist_add(s->req_hist, sec);
		pthread_mutex_unlock(&s->lock);
	}
	if (out->status >= 400 && out->status != 503)
		srv_count_status(s, out->status);
}
