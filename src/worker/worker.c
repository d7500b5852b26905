/*
 * worker.c: the protocol inside the worker. It owns every buffer the
 * candidate touches, makes inputs from seeds, has the reference and the
 * candidate called in runner processes of their own (runner.c), poisons
 * outputs before each call, checks what each call left, and reports raw
 * measurements (comparisons, checksums, timing samples) to the supervisor,
 * which alone judges them. This file: the replies, loading (runners, their
 * own cost per call, the objects) and the request loop; the rest is in
 * arena.c, call.c, trial.c and timing.c (worker_state.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/task.h>
#include <kforge/worker.h>

#include "worker_state.h"

int wk_reply(struct worker *w, cJSON *msg)
{
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_frame_write(w->out_fd, msg, &err);
	cJSON_Delete(msg);
	return rc;
}

int wk_reply_error(struct worker *w, const char *ev, const char *what,
		   const char *message)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", ev);
	if (what)
		cJSON_AddStringToObject(m, "what", what);
	cJSON_AddStringToObject(m, "message", message);
	return wk_reply(w, m);
}

/* A failed call of the engine: a device fault (the candidate's doing) or
 * an error of the engine itself. */
int wk_reply_engine_error(struct worker *w, int rc, struct kf_err *err)
{
	return wk_reply_error(w, rc == KF_EFAULT ? "fault" : "error", NULL,
			      err->msg);
}

void wk_add_cuda_error(struct worker *w, cJSON *m, const char *key)
{
	char *s = kf_xasprintf("%s (%d)", w->cuda_error_name, w->cuda_error);
	cJSON_AddStringToObject(m, key, s);
	free(s);
}

/* Reports what the candidate broke beyond its outputs, if anything; true
 * when it did. */
bool wk_add_violation(struct worker *w, cJSON *m)
{
	if (!w->violation_check[0])
		return false;
	cJSON *v = cJSON_AddObjectToObject(m, "violation");
	cJSON_AddStringToObject(v, "check", w->violation_check);
	cJSON_AddStringToObject(v, "detail", w->violation);
	return true;
}

static char *hex64(uint64_t v)
{
	return kf_xasprintf("%016" PRIx64, v);
}

void wk_add_hex(cJSON *obj, const char *key, uint64_t v)
{
	char *s = hex64(v);
	cJSON_AddStringToObject(obj, key, s);
	free(s);
}

uint64_t wk_parse_u64(const cJSON *obj, const char *key)
{
	const char *s = kf_json_str(obj, key);
	return s ? strtoull(s, NULL, 10) : (uint64_t)kf_json_num(obj, key, 0);
}

static int open_entry(const char *path, const char *symbol, void **so,
		      void **fn, struct kf_err *err)
{
	*so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*so)
		return kf_err_set(err, KF_ENOENT, "cannot load: %s", dlerror());
	dlerror();
	*fn = dlsym(*so, symbol);
	if (!*fn)
		return kf_err_set(err, KF_ENOENT, "no symbol %s: %s", symbol,
				  dlerror());
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A runner's own CPU time per call: calls that do everything but enter
 * an object, before it loads one (so that the runner's code is still the
 * engine's), each after a flush on the host as timed calls are. */
static int runner_overhead(struct worker *w, int side, struct kf_err *err)
{
	enum { N = 31 };
	static struct kf_run_req q;
	static struct kf_run_rep a;
	double ns[N];
	memset(&q, 0, sizeof(q));
	q.op = KF_RUN_CALL;
	q.empty = 1;
	for (int i = 0; i < N; i++) {
		/* As in a timed call on the host: after the worker's flush,
		 * which leaves the runner's own code and data cold too. */
		if (w->ops->device_type == kDLCPU) {
			int rc = w->ops->flush(w->ctx, err);
			if (rc)
				return rc;
		}
		uint64_t c0 = kf_runner_cpu_ns(&w->run[side]);
		int rc = kf_runner_exchange(&w->run[side], &q, -1, &a, err);
		if (rc == KF_ECHILD)
			wk_die_like(&w->run[side]);
		if (!rc && a.rc)
			rc = kf_err_set(err, a.rc, "the %s runner: %s",
					w->run[side].role, a.text);
		if (rc)
			return rc;
		ns[i] = (double)(kf_runner_cpu_ns(&w->run[side]) - c0);
	}
	qsort(ns, N, sizeof(ns[0]), cmp_double);
	w->overhead_ns[side] = ns[N / 2];
	w->overhead_max_ns[side] = ns[N - 1];
	return 0;
}

/* Has a side's runner load its object; the reply's text is its global
 * state before the object's code ran. The candidate's load is bounded
 * (kf_judge_load_time): past the budget its runner is stopped and *late
 * holds the verdict, with 0 returned. */
static int runner_load(struct worker *w, int side, const char *path,
		       struct kf_run_rep *a, struct verdict *late,
		       struct kf_err *err)
{
	static struct kf_run_req q;
	memset(&q, 0, sizeof(q));
	q.op = KF_RUN_LOAD;
	q.sandbox = side == SIDE_CAND;
	snprintf(q.text, sizeof(q.text), "%s", path);
	struct kf_runner *r = &w->run[side];
	uint64_t c0 = kf_runner_cpu_ns(r), t0 = kf_now_ns();
	int rc = kf_runner_send(r, &q, -1, err);
	while (!rc && side == SIDE_CAND) {
		struct pollfd pfd = {r->fd, POLLIN, 0};
		int n = poll(&pfd, 1, 20);
		if (n < 0 && errno != EINTR)
			rc = kf_err_set(err, KF_EIO, "poll: %s",
					strerror(errno));
		if (n > 0)
			break;
		double cpu = (double)(kf_runner_cpu_ns(r) - c0) / 1e6;
		double wall = (double)(kf_now_ns() - t0) / 1e6;
		if (kf_judge_load_time(cpu, wall, kf_runner_running(r), late)) {
			kf_runner_stop(r);
			return 0;
		}
	}
	if (!rc)
		rc = kf_runner_recv(r, &q, a, err);
	if (!rc && a->stage != 0)
		rc = kf_err_set(err, KF_EPROTO,
				"the %s runner answered request %u out of "
				"stage",
				r->role, q.seq);
	if (rc == KF_ECHILD)
		wk_die_like(r);
	return rc;
}

static int do_load(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	static struct kf_run_req q;
	static struct kf_run_rep a;
	const char *task = kf_json_str(req, "task");
	const char *backend = kf_json_str(req, "backend");
	const char *ref = kf_json_str(req, "reference");
	const char *cand = kf_json_str(req, "candidate");
	if (!task || !backend || !ref || !cand)
		return wk_reply_error(w, "error", NULL, "load: missing field");
	if (w->loaded)
		return wk_reply_error(w, "error", NULL, "load: loaded already");
	if (kf_task_load(task, &w->task, &err))
		return wk_reply_error(w, "load_error", "task", err.msg);
	kf_task_select_backend(w->task, backend);
	/* The hidden sets the supervisor drew for this evaluation. */
	const cJSON *hid;
	cJSON_ArrayForEach(hid, cJSON_GetObjectItem(req, "hidden"))
	{
		int64_t v[64];
		if (cJSON_GetArraySize(hid) != w->task->n_dims)
			return wk_reply_error(w, "load_error", "task",
					      "load: a hidden set of the wrong "
					      "size");
		for (int i = 0; i < w->task->n_dims; i++) {
			const cJSON *x = cJSON_GetArrayItem(hid, i);
			v[i] = cJSON_IsNumber(x) ? (int64_t)x->valuedouble : 0;
		}
		if (kf_task_add_dimset(w->task, v, &err))
			return wk_reply_error(w, "load_error", "task", err.msg);
	}
	w->ops = kf_backend_find(backend);
	if (!w->ops)
		return wk_reply_error(w, "load_error", "backend",
				      "unknown backend");
	/* On the host, the worker and both runners share one core: the
	 * worker's cache flush is theirs, and neither side runs on a core
	 * the other left warm. */
	int cpu = -1;
	if (w->ops->device_type == kDLCPU) {
		cpu = sched_getcpu();
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	/* On a device the engine's view of a call is wall time, and a busy
	 * machine (compiles beside it) delays the wake-ups it is made of:
	 * the worker and its runners run ahead of ordinary work where the
	 * system allows it (root; elsewhere they stay as they are). The host
	 * measures CPU time, which load does not change. */
	const char *nice_env = getenv("KFORGE_NICE"); /* 0: as they are */
	if (w->ops->device_type != kDLCPU &&
	    !(nice_env && !strcmp(nice_env, "0")))
		(void)setpriority(PRIO_PROCESS, 0, -10);
	/* The runners come first: a device context does not survive fork. */
	static const char *const roles[2] = {"reference", "candidate"};
	for (int side = 0; side < 2; side++)
		if (kf_runner_start(&w->run[side], roles[side], cpu, backend,
				    side == SIDE_CAND ? cand : NULL, &err))
			return wk_reply_error(w, "error", NULL, err.msg);
	for (int side = 0; side < 2; side++) {
		memset(&q, 0, sizeof(q));
		q.op = KF_RUN_INIT;
		snprintf(q.text, sizeof(q.text), "%s", backend);
		int rc = kf_runner_exchange(&w->run[side], &q, -1, &a, &err);
		if (rc == KF_ECHILD)
			wk_die_like(&w->run[side]);
		if (rc)
			return wk_reply_error(w, "error", NULL, err.msg);
		if (a.rc)
			return wk_reply_error(w, "load_error", "backend",
					      a.text);
	}
	if (w->ops->init(&w->ctx, &err))
		return wk_reply_error(w, "load_error", "backend", err.msg);
	if (wk_pools_make(w, &err))
		return wk_reply_error(w, "error", NULL, err.msg);
	if (w->ops->state)
		w->ops->state(w->ctx, w->state0, sizeof(w->state0));
	for (int side = 0; side < 2; side++)
		if (runner_overhead(w, side, &err))
			return wk_reply_error(w, "error", NULL, err.msg);
	struct verdict late = {0};
	if (runner_load(w, SIDE_REF, ref, &a, &late, &err))
		return wk_reply_error(w, "error", NULL, err.msg);
	if (a.rc)
		return wk_reply_error(w, "load_error", "reference", a.text);
	if (runner_load(w, SIDE_CAND, cand, &a, &late, &err))
		return wk_reply_error(w, "error", NULL, err.msg);
	if (late.status != KF_STATUS_OK)
		return wk_reply_error(w, "load_error", "load_time",
				      late.reason);
	if (a.rc)
		return wk_reply_error(w, "load_error",
				      strcmp(a.name, "sandbox") ? "candidate"
								: "sandbox",
				      a.text);
	/* The candidate's global state before its code ran (its
	 * constructors run at load: the first call's check catches them). */
	snprintf(w->cand_state0, sizeof(w->cand_state0), "%s", a.text);
	wk_cand_memory_check(w);
	w->cand_cpu_after = kf_runner_cpu_ns(&w->run[SIDE_CAND]);
	w->reply_cpu_strikes = w->idle_cpu_strikes = 0;
	const char *fl = getenv("KFORGE_FLUSH");
	w->flush_by_engine = fl && !strcmp(fl, "engine");
	/* Unpredictable to the runners: where the flush is checked. */
	if (getrandom(&w->flush_state, sizeof(w->flush_state), 0) !=
	    (ssize_t)sizeof(w->flush_state))
		w->flush_state = kf_now_ns() ^ ((uint64_t)getpid() << 32);
	w->loaded = true;
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "loaded");
	cJSON_AddItemToObject(m, "device", w->ops->describe(w->ctx));
	cJSON *o = cJSON_AddObjectToObject(m, "runner_overhead_ns");
	cJSON_AddNumberToObject(o, "reference", w->overhead_ns[SIDE_REF]);
	cJSON_AddNumberToObject(o, "candidate", w->overhead_ns[SIDE_CAND]);
	cJSON_AddNumberToObject(o, "reference_max",
				w->overhead_max_ns[SIDE_REF]);
	cJSON_AddNumberToObject(o, "candidate_max",
				w->overhead_max_ns[SIDE_CAND]);
	return wk_reply(w, m);
}

typedef int (*probe_fn)(double *flops_per_s, double *bytes_per_s,
			double *matrix_flops_per_s);

static int do_peaks(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	void *so, *fn;
	const char *path = kf_json_str(req, "probe");
	if (!path || open_entry(path, "kf_probe", &so, &fn, &err))
		return wk_reply_error(w, "error", NULL,
				      path ? err.msg : "peaks: no probe");
	double f = 0, b = 0, mf = 0;
	int rc = ((probe_fn)fn)(&f, &b, &mf);
	dlclose(so);
	if (rc)
		return wk_reply_error(w, "error", NULL, "the probe failed");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "peaks");
	cJSON_AddNumberToObject(m, "flops_per_s", f);
	cJSON_AddNumberToObject(m, "bytes_per_s", b);
	cJSON_AddNumberToObject(m, "matrix_flops_per_s", mf);
	return wk_reply(w, m);
}

int kf_worker_main(int in_fd, int out_fd)
{
	static struct worker w;
	memset(&w, 0, sizeof(w));
	w.out_fd = out_fd;
	w.run[0].fd = w.run[1].fd = -1;
	w.pool[0].share.fd = w.pool[1].share.fd = -1;
	/* Nothing else may read or write this process's memory through
	 * /proc (the candidate's runner holds no capability to override
	 * it). */
	prctl(PR_SET_DUMPABLE, 0);
	int code = 0;
	for (;;) {
		struct kf_err err = KF_ERR_INIT;
		cJSON *req = NULL;
		if (kf_frame_read(in_fd, 0, &req, &err))
			break; /* the supervisor went away */
		const char *op = kf_json_str(req, "op");
		int rc = 0;
		bool quit = false;
		if (!op)
			rc = wk_reply_error(&w, "error", NULL,
					    "request has no op");
		else if (!strcmp(op, "load"))
			rc = do_load(&w, req);
		else if (!strcmp(op, "peaks"))
			rc = do_peaks(&w, req);
		else if (!w.loaded &&
			 (!strcmp(op, "trial") || !strcmp(op, "time") ||
			  !strcmp(op, "time_kb") || !strcmp(op, "energy")))
			rc =
			    wk_reply_error(&w, "error", NULL, "nothing loaded");
		else if (!strcmp(op, "trial"))
			rc = wk_do_trial(&w, req);
		else if (!strcmp(op, "time"))
			rc = wk_do_time(&w, req);
		else if (!strcmp(op, "time_kb"))
			rc = wk_do_time_kb(&w, req);
		else if (!strcmp(op, "energy"))
			rc = wk_do_energy(&w, req);
		else if (!strcmp(op, "quit"))
			quit = true;
		else
			rc = wk_reply_error(&w, "error", NULL, "unknown op");
		cJSON_Delete(req);
		if (rc) {
			code = 1;
			break;
		}
		if (quit || w.faulted)
			break;
	}
	for (int side = 0; side < 2; side++)
		kf_runner_stop(&w.run[side]);
	if (w.ops && w.ctx && !w.faulted) {
		wk_set_release(&w, &w.timing[0]);
		wk_set_release(&w, &w.timing[1]);
		wk_set_release(&w, &w.base);
		for (int side = 0; side < 2; side++)
			if (w.pool[side].base)
				w.ops->unshare(w.ctx, w.pool[side].base,
					       w.pool[side].bytes,
					       &w.pool[side].share, false);
		w.ops->fini(w.ctx);
	}
	kf_task_free(w.task);
	return code;
}
