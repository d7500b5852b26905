/*
 * exec.c: the executor (include/kforge/exec.h): jobs run on the caller's
 * thread or on the executor's slot threads, through ops that run them on
 * a thread of this process, in a fresh eval child, or on the Redis farm.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/exec.h>
#include <kforge/farm.h>
#include <kforge/profile.h>
#include <kforge/task.h>

enum { J_NEW, J_QUEUED, J_RUNNING, J_DONE };

struct kf_exec {
	const struct kf_exec_ops *ops;
	void *ctx;
	struct kf_eval_opts eo;
	char *eo_json; /* eo, for eval children */
	char *exe;
	char *redis;
	double redis_wait_s;
	int slots;
	pthread_t *threads;
	int n_threads;
	pthread_mutex_t lock;
	pthread_cond_t work, ended;
	struct kf_exec_job *queue, *queue_tail; /* submitted, not started */
	struct kf_exec_job *done, *done_tail;	/* ended, not collected */
	struct kf_exec_job **running;		/* every job running */
	int n_running, cap_running;
	int pending; /* submitted, not collected */
	bool stopping;
};

static const char *job_label(const struct kf_exec_job *j)
{
	return j->label ? j->label : "the evaluation";
}

static const struct kf_eval_opts *job_eo(const struct kf_exec *x,
					 const struct kf_exec_job *j)
{
	return j->eval ? j->eval : &x->eo;
}

static void set_error(struct kf_exec_job *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_error(struct kf_exec_job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	free(j->error);
	j->error = m ? m : kf_xstrdup("out of memory");
	cJSON_Delete(j->result);
	j->result = NULL;
}

/* ---- thread: kf_eval here ---- */

static void thread_run(struct kf_exec *x, void *ctx, struct kf_exec_job *j)
{
	(void)ctx;
	struct kf_err err = KF_ERR_INIT;
	const struct kf_eval_opts *eo = job_eo(x, j);
	int rc = kf_eval(j->task, j->candidate, eo, &j->result, &err);
	if (rc) {
		set_error(j, "%s", err.msg);
		j->rc = rc;
		return;
	}
	if (j->profile)
		kf_profile_attach(j->result, j->task, j->candidate,
				  eo->backend, eo->include_dir);
}

/* ---- process: a fresh eval child ---- */

static void process_run(struct kf_exec *x, void *ctx, struct kf_exec_job *j)
{
	(void)ctx;
	struct kf_err err = KF_ERR_INIT;
	char *argv[] = {x->exe, "--eval-child", (char *)j->task,
			(char *)j->candidate, NULL};
	struct kf_proc p = KF_PROC_INIT;
	pthread_mutex_lock(&x->lock);
	int rc = j->stop ? KF_ECHILD : kf_proc_spawn(&p, argv, NULL, 2, &err);
	if (!rc)
		j->pid = p.pid;
	pthread_mutex_unlock(&x->lock);
	if (rc) {
		if (j->stop)
			set_error(j, "%s: cancelled before it started",
				  job_label(j));
		else
			set_error(j, "%s: cannot start the evaluation: %s",
				  job_label(j), err.msg);
		return;
	}
	/* The options go on the child's stdin. A child that cannot take
	 * them fails below, when no result comes. */
	cJSON *frame = cJSON_CreateObject();
	cJSON_AddItemToObject(frame, "eval",
			      j->eval ? kf_eval_opts_json(j->eval)
				      : cJSON_Parse(x->eo_json));
	cJSON_AddBoolToObject(frame, "profile", j->profile);
	struct kf_err werr = KF_ERR_INIT;
	kf_frame_write(p.to_child, frame, &werr);
	cJSON_Delete(frame);
	close(p.to_child);
	p.to_child = -1;
	cJSON *msg = NULL;
	rc = kf_frame_read(p.from_child, j->deadline_ns, &msg, &err);
	int status = 0;
	/* The pid is cleared under the lock before the child is reaped, so
	 * that a cancel never signals another process. */
	pthread_mutex_lock(&x->lock);
	j->pid = 0;
	pthread_mutex_unlock(&x->lock);
	if (rc == KF_ETIMEDOUT) {
		kill(-p.pid, SIGKILL);
		kf_proc_kill(&p, &status);
		set_error(j, "%s: its deadline passed during the evaluation",
			  job_label(j));
	} else {
		kf_proc_wait(&p, 10000, &status, NULL);
		if (rc && j->stop) {
			set_error(j, "%s: cancelled: the evaluation was killed",
				  job_label(j));
		} else if (rc) {
			char *how = kf_wait_describe(status);
			set_error(j, "%s: the eval child %s: %s", job_label(j),
				  how, err.msg);
			free(how);
		} else if (kf_json_str(msg, "engine_error")) {
			set_error(j, "%s", kf_json_str(msg, "engine_error"));
		} else if (!kf_json_str(msg, "status")) {
			set_error(j,
				  "%s: the eval child sent a result without "
				  "a status",
				  job_label(j));
		} else {
			j->result = msg;
			msg = NULL;
		}
	}
	if (p.from_child >= 0)
		close(p.from_child);
	cJSON_Delete(msg);
}

static void process_cancel(struct kf_exec *x, void *ctx,
			   struct kf_exec_job *j)
{
	(void)x;
	(void)ctx;
	if (j->pid > 0) {
		/* Its group, then itself; the worker, compilers and runners
		 * under it die with their parents (PR_SET_PDEATHSIG). */
		kill(-j->pid, SIGKILL);
		kill(j->pid, SIGKILL);
	}
}

/* ---- redis: a job on the farm ---- */

static void redis_run(struct kf_exec *x, void *ctx, struct kf_exec_job *j)
{
	(void)ctx;
	struct kf_err err = KF_ERR_INIT;
	uint64_t now = kf_now_ns();
	if (j->deadline_ns && now >= j->deadline_ns) {
		set_error(j,
			  "%s: its deadline passed before it was submitted",
			  job_label(j));
		return;
	}
	struct kf_farm_item it;
	memset(&it, 0, sizeof(it));
	it.candidate = j->candidate;
	it.task = j->task;
	struct kf_rfarm_submit_opts ro = KF_RFARM_SUBMIT_OPTS_INIT;
	ro.url = x->redis;
	ro.deadline_s = j->deadline_ns ? (double)(j->deadline_ns - now) / 1e9
				       : x->redis_wait_s;
	ro.wait_for_redis = true;
	ro.cancel = &j->stop;
	ro.label = job_label(j);
	const struct kf_eval_opts *eo = job_eo(x, j);
	int rc = kf_rfarm_submit(&ro, NULL, &it, 1, eo, &j->farm, &err);
	if (rc) {
		set_error(j, "%s: the farm: %s", job_label(j), err.msg);
	} else if (it.rc) {
		set_error(j, "%s", it.err);
	} else if (!kf_json_str(it.result, "status")) {
		set_error(j, "%s: the farm answered a result without a status",
			  job_label(j));
		cJSON_Delete(it.result);
	} else {
		j->result = it.result;
		/* Profiled here, the farm's workers do not. */
		if (j->profile)
			kf_profile_attach(j->result, j->task, j->candidate,
					  eo->backend, eo->include_dir);
	}
}

static const struct kf_exec_ops thread_ops = {"thread", thread_run, NULL};
static const struct kf_exec_ops process_ops = {"process", process_run,
					       process_cancel};
/* A cancel sets j->stop, which kf_rfarm_submit watches. */
static const struct kf_exec_ops redis_ops = {"redis", redis_run, NULL};

/* ---- the executor ---- */

static void running_add(struct kf_exec *x, struct kf_exec_job *j)
{
	if (x->n_running == x->cap_running) {
		x->cap_running = x->cap_running ? 2 * x->cap_running : 8;
		x->running = kf_xrealloc(x->running, sizeof(*x->running) *
							 (size_t)x->cap_running);
	}
	x->running[x->n_running++] = j;
}

static void running_remove(struct kf_exec *x, struct kf_exec_job *j)
{
	for (int i = 0; i < x->n_running; i++)
		if (x->running[i] == j) {
			x->running[i] = x->running[--x->n_running];
			return;
		}
}

/* Under x->lock: j has ended; collect gives it next after those before. */
static void ended_locked(struct kf_exec *x, struct kf_exec_job *j)
{
	j->state = J_DONE;
	if (x->done_tail)
		x->done_tail->next = j;
	else
		x->done = j;
	x->done_tail = j;
	pthread_cond_broadcast(&x->ended);
}

/* Runs j on this thread, as a running job of x (cancel reaches it). */
static void run_here(struct kf_exec *x, struct kf_exec_job *j)
{
	uint64_t t0 = kf_now_ns();
	pthread_mutex_lock(&x->lock);
	if (x->stopping)
		j->stop = 1;
	j->state = J_RUNNING;
	running_add(x, j);
	pthread_mutex_unlock(&x->lock);
	if (j->stop)
		set_error(j, "%s: cancelled before it started", job_label(j));
	else
		x->ops->run(x, x->ctx, j);
	if (!j->result && !j->error)
		set_error(j, "%s: the executor's %s ops gave no result",
			  job_label(j), x->ops->name);
	if (!j->result && !j->rc)
		j->rc = KF_EIO;
	pthread_mutex_lock(&x->lock);
	running_remove(x, j);
	j->pid = 0;
	/* A job that ended with its result before a cancel reached it
	 * keeps the result, and is still reported cancelled. */
	j->cancelled = j->stop != 0;
	pthread_mutex_unlock(&x->lock);
	j->seconds = (double)(kf_now_ns() - t0) / 1e9;
}

static void *slot_main(void *arg)
{
	struct kf_exec *x = arg;
	pthread_mutex_lock(&x->lock);
	for (;;) {
		while (!x->queue && !x->stopping)
			pthread_cond_wait(&x->work, &x->lock);
		struct kf_exec_job *j = x->queue;
		if (!j)
			break;
		x->queue = j->next;
		if (!x->queue)
			x->queue_tail = NULL;
		j->next = NULL;
		pthread_mutex_unlock(&x->lock);
		run_here(x, j);
		pthread_mutex_lock(&x->lock);
		ended_locked(x, j);
	}
	pthread_mutex_unlock(&x->lock);
	return NULL;
}

int kf_exec_open(const struct kf_exec_opts *o, struct kf_exec **out,
		 struct kf_err *err)
{
	*out = NULL;
	const struct kf_exec_ops *ops = o->ops;
	const char *kind = o->kind ? o->kind : "thread";
	if (!ops && !strcmp(kind, "thread"))
		ops = &thread_ops;
	else if (!ops && !strcmp(kind, "process"))
		ops = &process_ops;
	else if (!ops && !strcmp(kind, "redis"))
		ops = &redis_ops;
	else if (!ops)
		return kf_err_set(err, KF_EINVAL,
				  "executor: '%s' is not a kind (thread, "
				  "process or redis)",
				  kind);
	if (ops == &redis_ops && (!o->redis || !*o->redis))
		return kf_err_set(err, KF_EINVAL,
				  "executor: the redis kind needs the farm's "
				  "URL");
	char *exe = NULL;
	if (ops == &process_ops) {
		exe = o->exe ? kf_xstrdup(o->exe)
			     : kf_path_join(kf_exe_dir(), "kforge");
		if (!kf_is_executable(exe)) {
			int rc = kf_err_set(err, KF_ENOENT,
					    "%s: the eval executable is "
					    "missing",
					    exe);
			free(exe);
			return rc;
		}
	}
	struct kf_exec *x = kf_xcalloc(1, sizeof(*x));
	x->ops = ops;
	x->ctx = o->ctx;
	x->eo = o->eval;
	cJSON *ej = kf_eval_opts_json(&x->eo);
	x->eo_json = kf_json_print(ej);
	cJSON_Delete(ej);
	x->exe = exe;
	x->redis = o->redis ? kf_xstrdup(o->redis) : NULL;
	x->redis_wait_s = o->redis_wait_s > 0 ? o->redis_wait_s : 3600.0;
	x->slots = o->slots > 0 ? o->slots : 1;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->work, NULL);
	pthread_cond_init(&x->ended, NULL);
	*out = x;
	return 0;
}

const char *kf_exec_kind(const struct kf_exec *x)
{
	return x->ops->name;
}

void kf_exec_run(struct kf_exec *x, struct kf_exec_job *j)
{
	j->result = NULL;
	j->error = NULL;
	j->rc = 0;
	j->stop = 0;
	run_here(x, j);
	j->state = J_DONE;
}

void kf_exec_submit(struct kf_exec *x, struct kf_exec_job *j)
{
	j->result = NULL;
	j->error = NULL;
	j->rc = 0;
	j->stop = 0;
	j->next = NULL;
	pthread_mutex_lock(&x->lock);
	/* The slots start with the first job: an executor only run on its
	 * callers' threads has none. */
	while (x->n_threads < x->slots && !x->stopping) {
		if (!x->threads)
			x->threads = kf_xcalloc((size_t)x->slots,
						sizeof(*x->threads));
		if (pthread_create(&x->threads[x->n_threads], NULL, slot_main,
				   x))
			break;
		x->n_threads++;
	}
	j->state = J_QUEUED;
	x->pending++;
	if (x->stopping || !x->n_threads) {
		j->stop = 1;
		j->cancelled = true;
		set_error(j,
			  x->stopping ? "%s: cancelled: the executor is "
					"stopping"
				      : "%s: no thread could be started to run "
					"it",
			  job_label(j));
		ended_locked(x, j);
	} else {
		if (x->queue_tail)
			x->queue_tail->next = j;
		else
			x->queue = j;
		x->queue_tail = j;
		pthread_cond_signal(&x->work);
	}
	pthread_mutex_unlock(&x->lock);
}

struct kf_exec_job *kf_exec_collect(struct kf_exec *x, int timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_ms > 0) {
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&x->lock);
	while (!x->done && x->pending > 0 && timeout_ms != 0) {
		int rc = timeout_ms < 0
			     ? pthread_cond_wait(&x->ended, &x->lock)
			     : pthread_cond_timedwait(&x->ended, &x->lock,
						      &until);
		if (rc == ETIMEDOUT)
			break;
	}
	struct kf_exec_job *j = x->done;
	if (j) {
		x->done = j->next;
		if (!x->done)
			x->done_tail = NULL;
		j->next = NULL;
		x->pending--;
	}
	pthread_mutex_unlock(&x->lock);
	return j;
}

int kf_exec_pending(struct kf_exec *x)
{
	pthread_mutex_lock(&x->lock);
	int n = x->pending;
	pthread_mutex_unlock(&x->lock);
	return n;
}

/* Under x->lock. */
static void cancel_locked(struct kf_exec *x, struct kf_exec_job *j)
{
	if (j->state == J_QUEUED) {
		/* Out of the queue, into the ended ones. */
		struct kf_exec_job **pp = &x->queue, *prev = NULL;
		while (*pp && *pp != j) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		if (!*pp)
			return;
		*pp = j->next;
		if (x->queue_tail == j)
			x->queue_tail = prev;
		j->next = NULL;
		j->stop = 1;
		j->cancelled = true;
		set_error(j, "%s: cancelled before it started", job_label(j));
		ended_locked(x, j);
	} else if (j->state == J_RUNNING && !j->stop) {
		j->stop = 1;
		if (x->ops->cancel)
			x->ops->cancel(x, x->ctx, j);
	}
}

void kf_exec_cancel(struct kf_exec *x, struct kf_exec_job *j)
{
	pthread_mutex_lock(&x->lock);
	cancel_locked(x, j);
	pthread_mutex_unlock(&x->lock);
}

void kf_exec_stop(struct kf_exec *x)
{
	pthread_mutex_lock(&x->lock);
	x->stopping = true;
	while (x->queue)
		cancel_locked(x, x->queue);
	for (int i = 0; i < x->n_running; i++)
		cancel_locked(x, x->running[i]);
	pthread_cond_broadcast(&x->work);
	pthread_mutex_unlock(&x->lock);
}

void kf_exec_close(struct kf_exec *x)
{
	if (!x)
		return;
	kf_exec_stop(x);
	for (int i = 0; i < x->n_threads; i++)
		pthread_join(x->threads[i], NULL);
	free(x->threads);
	free(x->running);
	free(x->eo_json);
	free(x->exe);
	free(x->redis);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->work);
	pthread_cond_destroy(&x->ended);
	free(x);
}

/* ---- the eval child ---- */

int kf_exec_child_main(int argc, char **argv)
{
	/* Frames go to the original stdout; anything else printed goes to
	 * stderr, so that it cannot corrupt them. Close-on-exec: the
	 * processes kf_eval starts (the worker, the compilers) must not hold
	 * the caller's pipe open, or a killed child's answer would never
	 * end. */
	int out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (out < 0 || dup2(2, 1) < 0)
		return 2;
	/* Its caller ends it (a cancel, a deadline, its own end): Ctrl-C
	 * at a terminal is the caller's to handle. */
	signal(SIGINT, SIG_IGN);
	struct kf_err err = KF_ERR_INIT;
	cJSON *msg = NULL;
	cJSON *o = NULL;
	if (argc != 3 || kf_frame_read(0, 0, &o, &err) || !cJSON_IsObject(o) ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "eval"))) {
		msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "engine_error",
					"eval child: usage: --eval-child TASK "
					"CANDIDATE, with {\"eval\": options, "
					"\"profile\": bool} as a frame on "
					"stdin");
	} else {
		struct kf_eval_opts eo;
		kf_eval_opts_from_json(cJSON_GetObjectItemCaseSensitive(o, "eval"),
				       &eo);
		if (kf_eval(argv[1], argv[2], &eo, &msg, &err)) {
			msg = cJSON_CreateObject();
			cJSON_AddStringToObject(msg, "engine_error", err.msg);
		} else if (cJSON_IsTrue(
			       cJSON_GetObjectItemCaseSensitive(o, "profile"))) {
			kf_profile_attach(msg, argv[1], argv[2], eo.backend,
					  eo.include_dir);
		}
	}
	struct kf_err werr = KF_ERR_INIT;
	int rc = kf_frame_write(out, msg, &werr);
	cJSON_Delete(msg);
	cJSON_Delete(o);
	close(out);
	return rc ? 1 : 0;
}

int kf_exec_write_source(const char *task_path, const char *backend,
			 const char *sha, const char *source, char **path,
			 struct kf_err *err)
{
	char *dir = kf_path_join(kf_cache_dir(), "candidates");
	int rc = kf_mkdir_p(dir, err);
	const char *be = backend ? backend : "host";
	const char *ext = kf_task_is_kernelbench(task_path) ? "py"
			  : strcmp(be, "cuda")		    ? "c"
							    : "cu";
	*path = kf_xasprintf("%s/%s.%s", dir, sha, ext);
	free(dir);
	if (!rc && !kf_file_exists(*path))
		rc = kf_file_write_atomic(*path, source, strlen(source), err);
	if (rc) {
		free(*path);
		*path = NULL;
	}
	return rc;
}
