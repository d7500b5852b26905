/*
 * eval.c: one evaluation, supervised. Compiles, spawns a fresh worker under
 * rlimits, drives it phase by phase with a wall-clock deadline on each, hands
 * every frame to the judge, and assembles the result JSON. Whatever the
 * candidate does (crash, hang, exit) ends as a status in the result.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/compile.h>
#include <kforge/eval.h>
#include <kforge/task.h>

#include "eval_int.h"

#define LOG_TAIL_BYTES 4096

struct session {
	const struct kf_eval_opts *o;
	struct kf_task *task;
	const char *cand_path;
	cJSON *res;
	struct kf_proc proc;
	int log_fd;
	double call_ms;
	bool done;   /* a final status is set */
	bool reaped; /* the worker is gone; exit_status says how */
	int exit_status;
	long maxrss_kib;
	double overhead_ns[2]; /* each runner's own CPU time per call:
				  reference, candidate */
};

static void finish(struct session *s, enum kf_status st, const char *check,
		   const char *reason)
{
	cJSON_ReplaceItemInObject(s->res, "status",
				  cJSON_CreateString(kf_status_name(st)));
	if (check)
		cJSON_AddStringToObject(s->res, "check", check);
	char *clean = reason ? kf_xstrdup(reason) : NULL;
	if (clean)
		kf_text_sanitize(clean);
	cJSON_ReplaceItemInObject(s->res, "reason",
				  clean ? cJSON_CreateString(clean)
					: cJSON_CreateNull());
	free(clean);
	s->done = true;
}

static char *file_sha256(const char *path)
{
	char *buf = NULL, hex[65];
	size_t n = 0;
	struct kf_sha256 h;
	if (kf_file_read(path, 64u << 20, &buf, &n, NULL))
		return NULL;
	kf_sha256_init(&h);
	kf_sha256_update(&h, buf, n);
	kf_sha256_final_hex(&h, hex);
	free(buf);
	return kf_xstrdup(hex);
}

static cJSON *dims_json(const struct kf_task *t, int s)
{
	cJSON *d = cJSON_CreateObject();
	const int64_t *v = kf_task_dims(t, s);
	for (int i = 0; i < t->n_dims; i++)
		cJSON_AddNumberToObject(d, t->dim_names[i], (double)v[i]);
	return d;
}

/* The last bytes of the worker's stderr (what the candidate printed). */
static char *log_tail(int fd)
{
	if (fd < 0)
		return kf_xstrdup("");
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > LOG_TAIL_BYTES ? end - LOG_TAIL_BYTES : 0;
	char *buf = kf_xmalloc(LOG_TAIL_BYTES + 1);
	ssize_t n = pread(fd, buf, (size_t)(end - start), start);
	buf[n > 0 ? n : 0] = '\0';
	/* Whatever the candidate printed must not make the result JSON
	 * unreadable. */
	kf_text_sanitize(buf);
	return buf;
}

static void compile_json(cJSON *parent, const char *key,
			 const struct kf_compile_result *r, bool with_log)
{
	cJSON *c = cJSON_AddObjectToObject(parent, key);
	cJSON_AddBoolToObject(c, "ok", r->ok);
	cJSON_AddBoolToObject(c, "cached", r->cached);
	cJSON_AddNumberToObject(c, "seconds", r->seconds);
	cJSON_AddStringToObject(c, "key", r->key ? r->key : "");
	cJSON_AddStringToObject(c, "command", r->command ? r->command : "");
	if (with_log) {
		char *log = kf_xstrdup(r->log ? r->log : "");
		kf_text_sanitize(log);
		cJSON_AddStringToObject(c, "log", log);
		free(log);
	}
}

static int compile_one(struct session *s, const char *path,
		       struct kf_compile_result *r, struct kf_err *err)
{
	struct kf_compile_opts co = {0};
	co.backend = s->o->backend;
	co.include_dir = s->o->include_dir;
	co.no_cache = s->o->no_cache;
	const struct kf_task *t = s->task;
	co.arch = t->cuda_arch;
	int n = t->n_libraries + t->n_cuda_libraries;
	const char **libs = kf_xcalloc((size_t)n + 1, sizeof(*libs));
	co.n_libraries = 0;
	for (int i = 0; i < t->n_libraries; i++)
		libs[co.n_libraries++] = t->libraries[i];
	for (int i = 0; i < t->n_cuda_libraries && !strcmp(co.backend, "cuda");
	     i++)
		libs[co.n_libraries++] = t->cuda_libraries[i];
	co.libraries = libs;
	int rc = kf_compile(path, &co, r, err);
	free(libs);
	return rc;
}

/* First line of a compiler log that says "error", for the one-line reason. */
static char *first_error_line(const char *log)
{
	const char *p = log;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (memmem(p, n, "error", 5)) {
			char *line = kf_xmalloc(n + 1);
			memcpy(line, p, n);
			line[n] = '\0';
			kf_text_sanitize(line);
			return line;
		}
		p = nl ? nl + 1 : NULL;
	}
	char *all = kf_xstrdup(log && *log ? log : "the compiler failed");
	kf_text_sanitize(all);
	return all;
}

/* The link-time policy over what the compiled candidate imports; true when
 * it sets the final status. */
static bool link_policy(struct session *s, const char *so_path)
{
	struct kf_err err = KF_ERR_INIT;
	char **names = NULL, why[768];
	int n = 0;
	if (kf_compile_imports(so_path, &names, &n, &err)) {
		finish(s, KF_STATUS_INFRA_ERROR, "link_policy", err.msg);
		return true;
	}
	int bad =
	    kf_policy_check(s->task, s->o->backend, names, n, why, sizeof(why));
	cJSON *imp = cJSON_AddArrayToObject(
	    cJSON_GetObjectItem(s->res, "candidate"), "imports");
	for (int i = 0; i < n; i++) {
		cJSON_AddItemToArray(imp, cJSON_CreateString(names[i]));
		free(names[i]);
	}
	free(names);
	if (!bad)
		return false;
	char *reason = kf_xasprintf("%s imports what the task does not allow: "
				    "%s",
				    s->cand_path, why);
	finish(s, KF_STATUS_REJECTED, "link_policy", reason);
	free(reason);
	return true;
}

/* The worker's memory: 1 GiB for the engine and the candidate's scratch,
 * plus eight times the largest set of tensors (the engine keeps a copy for
 * each side, and timing three sets), at most 64 GiB. A candidate that runs
 * the worker out of memory then fails in seconds, not after a long swap. */
static uint64_t default_mem_limit(const struct kf_task *t)
{
	double most = 0;
	int64_t shape[KF_MAX_NDIM];
	for (int d = 0; d < t->n_dimsets; d++) {
		double b = 0;
		for (int i = 0; i < t->n_inputs; i++)
			b += (double)kf_task_shape(t, &t->inputs[i], d, shape,
						   NULL) *
			     (double)kf_dtype_bytes(t->inputs[i].dtype);
		for (int j = 0; j < t->n_outputs; j++)
			b += (double)kf_task_shape(t, &t->outputs[j], d, shape,
						   NULL) *
			     (double)kf_dtype_bytes(t->outputs[j].dtype);
		if (b > most)
			most = b;
	}
	double lim = (double)(1ull << 30) + 8 * most;
	return lim > (double)(64ull << 30) ? (64ull << 30) : (uint64_t)lim;
}

static int spawn_worker(struct session *s, struct kf_err *err)
{
	char *path = s->o->worker_path
			 ? kf_xstrdup(s->o->worker_path)
			 : kf_path_join(kf_exe_dir(), "kforge-worker");
	char *argv[] = {path, NULL, NULL, NULL};
	char *env = NULL, *pin = NULL;
	if (s->o->device >= 0 && !strcmp(s->o->backend, "cuda")) {
		/* Pinned to one GPU: CUDA_VISIBLE_DEVICES for the worker
		 * alone, through env(1), since threads may spawn workers for
		 * other GPUs at the same time. Device i is the i-th entry of
		 * the CUDA_VISIBLE_DEVICES this process has, when it has one.
		 */
		const char *vis = getenv("CUDA_VISIBLE_DEVICES");
		int i = 0;
		for (const char *p = vis; p && *p && !pin; i++) {
			size_t n = strcspn(p, ",");
			if (i == s->o->device)
				pin = kf_xasprintf("CUDA_VISIBLE_DEVICES=%.*s",
						   (int)n, p);
			p += n + (p[n] == ',');
		}
		if (!pin)
			pin = kf_xasprintf("CUDA_VISIBLE_DEVICES=%d",
					   s->o->device);
		env = kf_is_executable("/usr/bin/env") ? kf_xstrdup("/usr/bin/env")
						       : kf_which("env");
		if (!env) {
			free(pin);
			free(path);
			return kf_err_set(err, KF_ENOENT,
					  "env(1) not found: cannot pin the "
					  "worker to a GPU");
		}
		argv[0] = env;
		argv[1] = pin;
		argv[2] = path;
	}
	struct kf_limits lim = {0};
	lim.no_core = 1;
	/* The worker forks its two runners; the candidate's runner may
	 * create no process (its sandbox) and write files of at most
	 * 64 MiB (set in the runner: the worker's shared pools are memory
	 * files, which the limit would cap). */
	double checks_s = s->o->trials * 3.0 * s->call_ms / 1000.0;
	lim.cpu_s = checks_s + s->o->time_cap_s * 2 + s->o->energy_s * 2 + 120;
	uint64_t mem = s->o->mem_limit_bytes ? s->o->mem_limit_bytes
					     : default_mem_limit(s->task);
#if defined(__SANITIZE_ADDRESS__)
	/* ASan reserves terabytes of address space: cap the resident size
	 * through ASan itself instead, and let faults kill the worker as
	 * they would without ASan. */
	char *asan = kf_xasprintf("hard_rss_limit_mb=%llu:detect_leaks=0:"
				  "allocator_may_return_null=1:handle_segv=0:"
				  "handle_abort=0",
				  (unsigned long long)(mem >> 20));
	setenv("ASAN_OPTIONS", asan, 1);
	free(asan);
#else
	/* The CUDA driver reserves far more address space than memory, so
	 * only host workers get an address-space limit. */
	if (!strcmp(s->o->backend, "host"))
		lim.as_bytes = mem;
#endif
	s->log_fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	int rc = kf_proc_spawn(&s->proc, argv, &lim, s->log_fd, err);
	free(path);
	free(env);
	free(pin);
	return rc;
}

/* Sends a request and reads the reply within timeout_ms. On a dead or late
 * worker it sets the final status (phase names where) and returns NULL. */
static cJSON *exchange(struct session *s, cJSON *req, double timeout_ms,
		       const char *phase)
{
	struct kf_err err = KF_ERR_INIT;
	cJSON *reply = NULL;
	int rc = kf_frame_write(s->proc.to_child, req, &err);
	cJSON_Delete(req);
	if (!rc)
		rc = kf_frame_read(s->proc.from_child,
				   kf_now_ns() + (uint64_t)(timeout_ms * 1e6),
				   &reply, &err);
	if (!rc)
		return reply;
	int status = 0;
	long rss = 0;
	char *why;
	if (rc == KF_ETIMEDOUT) {
		kf_proc_kill(&s->proc, &status);
		s->reaped = true;
		s->exit_status = status;
		why = kf_xasprintf("%s: no answer within %.1f s; the worker "
				   "was killed",
				   phase, timeout_ms / 1000.0);
		finish(s, KF_STATUS_TIMEOUT, "deadline", why);
	} else {
		kf_proc_wait(&s->proc, 5000, &status, &rss);
		s->reaped = true;
		s->exit_status = status;
		s->maxrss_kib = rss;
		char *d = kf_wait_describe(status);
		bool cpu =
		    WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU ||
					    WTERMSIG(status) == SIGKILL);
		bool sandbox =
		    WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
		if (cpu && WTERMSIG(status) == SIGXCPU) {
			why = kf_xasprintf("%s: the worker ran out of CPU time "
					   "(%s)",
					   phase, d);
			finish(s, KF_STATUS_TIMEOUT, "cpu_limit", why);
		} else if (sandbox) {
			why =
			    kf_xasprintf("%s: the sandbox killed the worker: "
					 "the candidate made a system call it "
					 "forbids (new processes or programs, "
					 "sockets, tracing, signals to other "
					 "processes; on the host also "
					 "threads, files and executable "
					 "memory)",
					 phase);
			finish(s, KF_STATUS_REJECTED, "sandbox", why);
		} else if (rc == KF_EPROTO) {
			why = kf_xasprintf("%s: %s", phase, err.msg);
			finish(s, KF_STATUS_INFRA_ERROR, "protocol", why);
		} else if (cpu) {
			why = kf_xasprintf("%s: the worker died: %s (the hard "
					   "CPU-time limit or the system's "
					   "out-of-memory killer)",
					   phase, d);
			finish(s, KF_STATUS_RUNTIME_ERROR, "crash", why);
		} else {
			why = kf_xasprintf("%s: the worker died: %s", phase, d);
			finish(s, KF_STATUS_RUNTIME_ERROR, "crash", why);
		}
		free(d);
	}
	free(why);
	return NULL;
}

/* True (and the final status set, the reply freed) when a reply is not the
 * event expected: a device fault is the candidate's doing, anything else
 * the engine's. */
static bool unexpected(struct session *s, cJSON *rep, const char *want,
		       const char *phase)
{
	const char *ev = kf_json_str(rep, "ev");
	if (ev && !strcmp(ev, want))
		return false;
	const char *msg = kf_json_str(rep, "message");
	char *why = kf_xasprintf("%s: %s", phase, msg ? msg : "no message");
	if (ev && !strcmp(ev, "fault"))
		finish(s, KF_STATUS_RUNTIME_ERROR, "device_fault", why);
	else
		finish(s, KF_STATUS_INFRA_ERROR, "worker", why);
	free(why);
	cJSON_Delete(rep);
	return true;
}

static cJSON *request(const char *op)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "op", op);
	return r;
}

static void add_u64(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	cJSON_AddStringToObject(o, key, buf);
}

static void close_worker(struct session *s);

/* Peak rates of this device, measured once and cached by device name. */
/*
 * The device's peaks, from the cache or measured by the probe in a worker
 * of its own. With prev (peaks that made a candidate look faster than the
 * hardware allows), the probe runs again whatever the cache holds and each
 * peak is the larger of the two measurements: a probe taken while the
 * machine was busy underestimates them.
 */
static cJSON *peaks_of(struct session *s, const char *name,
		       const cJSON *prev)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_sha256 h;
	char hex[65], *path, *text = NULL;
	kf_sha256_init(&h);
	kf_sha256_update(&h, s->o->backend, strlen(s->o->backend));
	kf_sha256_update(&h, name ? name : "?", strlen(name ? name : "?"));
	kf_sha256_final_hex(&h, hex);
	hex[16] = '\0';
	char *dir = kf_path_join(kf_cache_dir(), "peaks");
	char *file = kf_xasprintf("%s-%s.json", s->o->backend, hex);
	path = kf_path_join(dir, file);
	free(file);
	cJSON *p = NULL;
	if (!prev && !kf_file_read(path, 1u << 16, &text, NULL, NULL)) {
		p = cJSON_Parse(text);
		free(text);
		if (p && kf_json_num(p, "flops_per_s", 0) > 0)
			goto out;
		cJSON_Delete(p);
		p = NULL;
	}
	const struct kf_backend_ops *ops = kf_backend_find(s->o->backend);
	if (!ops || !ops->probe_source || kf_mkdir_p(dir, &err))
		goto out;
	char *src_name = kf_xasprintf("probe-%s%s", ops->name, ops->probe_ext);
	char *src = kf_path_join(dir, src_name);
	free(src_name);
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_compile_opts co = {0};
	co.backend = s->o->backend;
	co.include_dir = s->o->include_dir;
	if (ops->probe_libraries) {
		co.libraries = &ops->probe_libraries;
		co.n_libraries = 1;
	}
	if (!kf_file_write_atomic(src, ops->probe_source,
				  strlen(ops->probe_source), &err) &&
	    !kf_compile(src, &co, &r, &err) && r.ok) {
		/* The probe runs in a worker of its own: whatever happens
		 * to it is never charged to the candidate. */
		struct session ps = *s;
		ps.proc = (struct kf_proc)KF_PROC_INIT;
		ps.res = cJSON_CreateObject();
		ps.done = ps.reaped = false;
		cJSON *rep = NULL;
		if (!spawn_worker(&ps, &err)) {
			cJSON *req = request("peaks");
			cJSON_AddStringToObject(req, "probe", r.so_path);
			rep = exchange(&ps, req, 120000, "measuring peaks");
			close_worker(&ps);
		}
		if (ps.done || !rep)
			kf_log(KF_LOG_WARN,
			       "measuring the device's peaks failed: %s",
			       ps.done ? kf_json_str(ps.res, "reason")
				       : err.msg);
		cJSON_Delete(ps.res);
		const char *ev = rep ? kf_json_str(rep, "ev") : NULL;
		if (ev && !strcmp(ev, "peaks")) {
			static const char *const keys[] = {
			    "flops_per_s", "bytes_per_s",
			    "matrix_flops_per_s"};
			p = cJSON_CreateObject();
			for (int k = 0; k < 3; k++)
				cJSON_AddNumberToObject(
				    p, keys[k],
				    fmax(kf_json_num(rep, keys[k], 0),
					 kf_json_num(prev, keys[k], 0)));
			cJSON_AddStringToObject(p, "device", name ? name : "");
			char *when = kf_utc_iso8601();
			cJSON_AddStringToObject(p, "measured_at", when);
			free(when);
			char *out = cJSON_Print(p);
			kf_file_write_atomic(path, out, strlen(out), &err);
			free(out);
		}
		cJSON_Delete(rep);
	}
	kf_compile_result_release(&r);
	free(src);
out:
	free(dir);
	free(path);
	return p;
}

static cJSON *peaks(struct session *s, const cJSON *device)
{
	return peaks_of(s, kf_json_str(device, "name"), NULL);
}

static void plan_trials(const struct session *s, struct trial_plan *plans)
{
	const struct kf_task *t = s->task;
	for (int k = 0; k < s->o->trials; k++) {
		struct trial_plan *p = &plans[k];
		memset(p, 0, sizeof(*p));
		p->index = k;
		p->seed = s->o->seed + (uint64_t)k;
		/* Every dim set in turn; the distributions rotate against
		 * them so that more combinations are covered. */
		p->dimset = k % t->n_dimsets;
		for (int i = 0; i < t->n_inputs; i++)
			p->dists[i] = (k % t->n_dimsets + k / t->n_dimsets) %
				      t->inputs[i].n_dists;
	}
}

static cJSON *trial_json(const struct kf_task *t, const struct trial_plan *p,
			 const cJSON *frame)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "index", p->index);
	add_u64(j, "seed", p->seed);
	cJSON_AddBoolToObject(j, "hidden", p->dimset != 0);
	cJSON_AddItemToObject(j, "dims", dims_json(t, p->dimset));
	cJSON *d = cJSON_AddObjectToObject(j, "dists");
	for (int i = 0; i < t->n_inputs; i++) {
		const struct kf_tensor_spec *sp = &t->inputs[i];
		cJSON_AddStringToObject(
		    d, sp->name,
		    kf_dist_name(sp->dists[p->dists[i] % sp->n_dists].kind));
	}
	cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
	const cJSON *fo;
	cJSON_ArrayForEach(fo, cJSON_GetObjectItem(frame, "outputs"))
	{
		cJSON *o = cJSON_CreateObject();
		static const char *const keys[] = {
		    "n",       "mismatches", "unwritten", "nan_got",
		    "inf_got", "max_abs",    "max_rel"};
		cJSON_AddStringToObject(o, "name", kf_json_str(fo, "name"));
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			cJSON_AddNumberToObject(o, keys[k],
						kf_json_num(fo, keys[k], 0));
		cJSON_AddItemToArray(outs, o);
	}
	cJSON_AddNumberToObject(j, "ref_ms",
				kf_json_num(frame, "ref_ns", 0) / 1e6);
	cJSON_AddNumberToObject(j, "cand_ms",
				kf_json_num(frame, "cand_ns", 0) / 1e6);
	return j;
}

/* Elements of all inputs and outputs under a dim set. */
static double trial_elements(const struct kf_task *t, int dimset)
{
	int64_t shape[KF_MAX_NDIM];
	double n = 0;
	for (int i = 0; i < t->n_inputs; i++)
		n += (double)kf_task_shape(t, &t->inputs[i], dimset, shape,
					   NULL);
	for (int j = 0; j < t->n_outputs; j++)
		n += (double)kf_task_shape(t, &t->outputs[j], dimset, shape,
					   NULL);
	return n;
}

static void run_trials(struct session *s, cJSON *frames,
		       struct trial_plan *plans)
{
	const struct kf_task *t = s->task;
	cJSON *trials = cJSON_AddArrayToObject(s->res, "trials");
	plan_trials(s, plans);
	for (int k = 0; k < s->o->trials && !s->done; k++) {
		struct trial_plan *p = &plans[k];
		cJSON *req = request("trial");
		cJSON_AddNumberToObject(req, "index", k);
		add_u64(req, "seed", p->seed);
		cJSON_AddNumberToObject(req, "dimset", p->dimset);
		cJSON *d = cJSON_AddArrayToObject(req, "dists");
		for (int i = 0; i < t->n_inputs; i++)
			cJSON_AddItemToArray(d,
					     cJSON_CreateNumber(p->dists[i]));
		char *label = kf_judge_trial_label(t, p);
		/* Three calls (reference, candidate twice) plus generating,
		 * comparing and hashing: 2 s and 1 us per element. */
		double allowance = 2000 + 1e-3 * trial_elements(t, p->dimset);
		cJSON *rep =
		    exchange(s, req, 3 * s->call_ms + allowance, label);
		if (!rep) {
			free(label);
			return;
		}
		if (unexpected(s, rep, "trial", label)) {
			free(label);
			return;
		}
		free(label);
		struct verdict v = {0};
		kf_judge_trial(t, p, rep, &v);
		cJSON *tj = trial_json(t, p, rep);
		cJSON_AddBoolToObject(tj, "passed", v.status == KF_STATUS_OK);
		cJSON_AddItemToArray(trials, tj);
		cJSON_AddItemToArray(frames, rep);
		if (v.status != KF_STATUS_OK) {
			if (v.failure) {
				cJSON_AddItemToObject(v.failure, "dims",
						      dims_json(t, p->dimset));
				add_u64(v.failure, "seed", p->seed);
				cJSON_AddItemToObject(s->res, "failure",
						      v.failure);
			}
			finish(s, v.status, v.check, v.reason);
		}
	}
}



/* Element i of a JSON array as a number, or dflt. */
static double num_at(const cJSON *arr, int i, double dflt)
{
	const cJSON *v = cJSON_GetArrayItem(arr, i);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

struct samples {
	double *c, *r, *mhz; /* candidate and reference ns, SM clock */
	double *cw, *rw;     /* the worker's view of each call (ns) */
	bool runner_ns;	     /* the ns are the runners' own measurements */
	int n, cap;
	int throttled;	      /* pairs dropped: the device slowed down */
	int kernels, streams; /* most seen in one candidate call, -1 n/a */
};

/* Adds a batch of pairs, dropping those where either call was throttled. */
static void samples_add(struct samples *sm, const cJSON *rep)
{
	const cJSON *cn = cJSON_GetObjectItem(rep, "cand_ns");
	const cJSON *rn = cJSON_GetObjectItem(rep, "ref_ns");
	const cJSON *ct = cJSON_GetObjectItem(rep, "cand_throttled");
	const cJSON *rt = cJSON_GetObjectItem(rep, "ref_throttled");
	const cJSON *mz = cJSON_GetObjectItem(rep, "cand_mhz");
	const cJSON *ck = cJSON_GetObjectItem(rep, "cand_kernels");
	const cJSON *cs = cJSON_GetObjectItem(rep, "cand_streams");
	const cJSON *cw = cJSON_GetObjectItem(rep, "cand_wall_ns");
	const cJSON *rw = cJSON_GetObjectItem(rep, "ref_wall_ns");
	const char *src = kf_json_str(rep, "ns_source");
	sm->runner_ns = src && !strcmp(src, "runner");
	int n = cJSON_GetArraySize(cn);
	for (int i = 0; i < n && i < cJSON_GetArraySize(rn); i++) {
		int k = (int)num_at(ck, i, -1);
		int st = (int)num_at(cs, i, -1);
		if (k > sm->kernels)
			sm->kernels = k;
		if (st > sm->streams)
			sm->streams = st;
		if (cJSON_IsTrue(cJSON_GetArrayItem(ct, i)) ||
		    cJSON_IsTrue(cJSON_GetArrayItem(rt, i))) {
			sm->throttled++;
			continue;
		}
		if (sm->n == sm->cap) {
			sm->cap = sm->cap ? sm->cap * 2 : 64;
			size_t b = sizeof(double) * (size_t)sm->cap;
			sm->c = kf_xrealloc(sm->c, b);
			sm->r = kf_xrealloc(sm->r, b);
			sm->mhz = kf_xrealloc(sm->mhz, b);
			sm->cw = kf_xrealloc(sm->cw, b);
			sm->rw = kf_xrealloc(sm->rw, b);
		}
		sm->cw[sm->n] = num_at(cw, i, 0);
		sm->rw[sm->n] = num_at(rw, i, 0);
		sm->c[sm->n] = num_at(cn, i, 0);
		sm->r[sm->n] = num_at(rn, i, 0);
		sm->mhz[sm->n] = num_at(mz, i, 0);
		sm->n++;
	}
}

static void samples_release(struct samples *sm)
{
	free(sm->c);
	free(sm->r);
	free(sm->mhz);
	free(sm->cw);
	free(sm->rw);
}

/* How much more of the worker's view of a candidate call its own
 * measurement leaves out than the reference's does, beyond which the
 * candidate's process is taken to have under-reported its time. On an
 * H200 the medians of honest pairs differed by up to 0.055 ms (each
 * runner's own per-call cost, about 0.6 ms, varies between processes):
 * this is the most a candidate that takes over its process can hide. */
#define KF_UNACCOUNTED_ABS_NS 100e3
#define KF_UNACCOUNTED_REL 0.10

/*
 * Where each runner measured its own calls (a device), the candidate's
 * measurement comes from its own process and could be forged. Each call is
 * also seen by the worker, from request to reply and a fence on the
 * device (on the host: the runner's CPU time): the part of that view the
 * runner's measurement leaves out is the same for both sides when both
 * runners are honest (the same code, the same flush). The statistic is the
 * median over the pairs of the difference between the two calls of a pair:
 * load on the machine (nvcc beside the worker, a late wakeup) reaches both
 * calls of a pair alike and cancels, where the two sides' own medians moved
 * apart under load; a runner that under-reports by X moves every pair by X.
 * Returns true (and the verdict set) when the candidate's share is larger.
 */
static bool unaccounted(struct session *s, const struct samples *sm)
{
	if (!sm->runner_ns || sm->n < 3)
		return false;
	double *uc = kf_xmalloc(sizeof(double) * (size_t)sm->n);
	double *ur = kf_xmalloc(sizeof(double) * (size_t)sm->n);
	double *d = kf_xmalloc(sizeof(double) * (size_t)sm->n);
	for (int i = 0; i < sm->n; i++) {
		uc[i] = sm->cw[i] - sm->c[i];
		ur[i] = sm->rw[i] - sm->r[i];
		d[i] = uc[i] - ur[i];
	}
	struct kf_summary a, b, c, dd;
	kf_summarize(uc, sm->n, &a);
	kf_summarize(ur, sm->n, &b);
	kf_summarize(d, sm->n, &dd);
	kf_summarize(sm->c, sm->n, &c);
	free(uc);
	free(ur);
	free(d);
	cJSON *tm = cJSON_GetObjectItem(s->res, "timing");
	cJSON *u = cJSON_AddObjectToObject(tm, "unaccounted_ms");
	cJSON_AddNumberToObject(u, "candidate", a.median / 1e6);
	cJSON_AddNumberToObject(u, "reference", b.median / 1e6);
	cJSON_AddNumberToObject(u, "difference", dd.median / 1e6);
	double limit = KF_UNACCOUNTED_ABS_NS + KF_UNACCOUNTED_REL * c.median;
	if (dd.median <= limit)
		return false;
	char *why = kf_xasprintf(
	    "timing: the candidate's process reported %.4f ms per call "
	    "(median), but the engine saw its calls take %.4f ms longer than "
	    "that, against %.4f ms for the reference (medians; within a pair "
	    "the candidate's share was larger by a median %.4f ms over %d "
	    "pairs, more than %.4f ms): time the candidate's own measurement "
	    "left out",
	    c.median / 1e6, a.median / 1e6, b.median / 1e6, dd.median / 1e6,
	    sm->n, limit / 1e6);
	finish(s, KF_STATUS_REJECTED, "unaccounted_time", why);
	free(why);
	return true;
}

/* A candidate at more than this fraction of its roofline bound is
 * rejected. */
#define KF_PLAUSIBLE_FRACTION 1.5

/* The roofline block: the candidate's median against the device's peaks.
 * Tasks over float16/bfloat16 inputs are held to the matrix (tensor core)
 * rate where the device has one, the others to the FMA rate. */
static bool roofline(struct session *s, const cJSON *peak, double cand_ns,
		     double ref_ns, bool final)
{
	bool implausible = false;
	const struct kf_task *t = s->task;
	double flops = kf_task_flops(t, 0), bytes = kf_task_bytes(t, 0);
	bool half = false;
	for (int i = 0; i < t->n_inputs; i++)
		half = half || t->inputs[i].dtype == KF_F16 ||
		       t->inputs[i].dtype == KF_BF16;
	double pf = kf_json_num(peak, "flops_per_s", 0);
	double pm = kf_json_num(peak, "matrix_flops_per_s", 0);
	double pb = kf_json_num(peak, "bytes_per_s", 0);
	bool use_matrix = half && pm > pf;
	if (use_matrix)
		pf = pm;
	cJSON *rf = cJSON_AddObjectToObject(s->res, "roofline");
	cJSON_AddNumberToObject(rf, "flops", flops);
	cJSON_AddNumberToObject(rf, "bytes", bytes);
	cJSON_AddStringToObject(rf, "compute_peak",
				use_matrix ? "matrix" : "fma");
	cJSON_AddNumberToObject(rf, "peak_flops_per_s", pf);
	cJSON_AddNumberToObject(rf, "peak_bytes_per_s", pb);
	double sec = cand_ns * 1e-9;
	cJSON_AddNumberToObject(rf, "flops_per_s", sec > 0 ? flops / sec : 0);
	cJSON_AddNumberToObject(rf, "bytes_per_s", sec > 0 ? bytes / sec : 0);
	if (pf > 0 && pb > 0 && sec > 0) {
		double tf = flops / pf, tb = bytes / pb;
		cJSON_AddStringToObject(rf, "bound",
					tf >= tb ? "compute" : "memory");
		cJSON_AddNumberToObject(rf, "bound_ms", fmax(tf, tb) * 1e3);
		cJSON_AddNumberToObject(rf, "fraction", fmax(tf, tb) / sec);
		cJSON_AddNumberToObject(rf, "reference_fraction",
					fmax(tf, tb) / (ref_ns * 1e-9));
		/* Faster than the hardware allows (with room for peaks that
		 * a probe underestimates): the work was not all measured, or
		 * not all done. The compute term takes the device's fastest
		 * units, so that fp32 work done exactly on tensor cores (3xTF32
		 * and the like) is not mistaken for a hack. */
		double tf_fastest = flops / fmax(pf, pm);
		double fraction = fmax(tf_fastest, tb) / sec;
		implausible = fraction > KF_PLAUSIBLE_FRACTION;
		if (implausible && final) {
			char *why = kf_xasprintf(
			    "timing: the candidate's %.4f ms is %.2f times "
			    "faster than the roofline allows (%s-bound: "
			    "%.4f ms for %.3g FLOP and %.3g bytes at the "
			    "measured peaks): implausible",
			    cand_ns * 1e-6, fraction,
			    tf_fastest >= tb ? "compute" : "memory",
			    fmax(tf_fastest, tb) * 1e3, flops, bytes);
			finish(s, KF_STATUS_REJECTED, "implausible", why);
			free(why);
		}
	} else {
		cJSON_AddNullToObject(rf, "bound");
	}
	return implausible;
}

/* Joules per call of each side, where the device counts energy: each side
 * runs for opts->energy_s, so the watchdog allows twice that beyond the
 * usual minute. */
static void energy(struct session *s)
{
	cJSON *req = request("energy");
	cJSON_AddNumberToObject(req, "seconds", s->o->energy_s);
	double ms = 60000 + 2 * 2 * 1000 * s->o->energy_s + 40 * s->call_ms;
	cJSON *rep = exchange(s, req, ms, "energy");
	if (!rep)
		return;
	const char *ev = kf_json_str(rep, "ev");
	if (ev && !strcmp(ev, "energy")) {
		cJSON *e = cJSON_AddObjectToObject(s->res, "energy");
		const char *const sides[] = {"candidate", "reference"};
		for (int i = 0; i < 2; i++) {
			const cJSON *o = cJSON_GetObjectItem(rep, sides[i]);
			double calls = kf_json_num(o, "calls", 0);
			cJSON *j = cJSON_AddObjectToObject(e, sides[i]);
			cJSON_AddNumberToObject(
			    j, "joules_per_call",
			    calls > 0 ? kf_json_num(o, "joules", 0) / calls
				      : 0);
			cJSON_AddNumberToObject(j, "calls", calls);
			cJSON_AddNumberToObject(j, "seconds",
						kf_json_num(o, "seconds", 0));
		}
	} else if (ev && !strcmp(ev, "fault")) {
		finish(s, KF_STATUS_RUNTIME_ERROR, "device_fault",
		       kf_json_str(rep, "message"));
	}
	cJSON_Delete(rep);
}

static void run_timing(struct session *s, const cJSON *peak)
{
	struct samples sm = {0};
	sm.kernels = sm.streams = -1;
	int batch = 10, warmup = 3;
	bool met = false;
	uint64_t t0 = kf_now_ns();
	double elapsed = 0;
	while (!s->done) {
		cJSON *req = request("time");
		add_u64(req, "seed", s->o->seed + 1000003u);
		cJSON_AddNumberToObject(req, "pairs", batch);
		cJSON_AddNumberToObject(req, "warmup", warmup);
		uint64_t b0 = kf_now_ns();
		cJSON *rep = exchange(s, req,
				      (batch + warmup) * 2 * s->call_ms + 2000 +
					  1e-3 * trial_elements(s->task, 0),
				      "timing");
		if (!rep)
			break;
		if (unexpected(s, rep, "samples", "timing"))
			break;
		struct verdict v = {0};
		kf_judge_samples(rep, &v);
		if (v.status != KF_STATUS_OK) {
			finish(s, v.status, v.check, v.reason);
			cJSON_Delete(rep);
			break;
		}
		samples_add(&sm, rep);
		cJSON_Delete(rep);
		double batch_s = (double)(kf_now_ns() - b0) / 1e9;
		elapsed = (double)(kf_now_ns() - t0) / 1e9;
		warmup = 0;
		if (sm.n >= s->o->min_pairs &&
		    kf_half_width(sm.c, sm.n) <= s->o->ci_target &&
		    kf_half_width(sm.r, sm.n) <= s->o->ci_target) {
			met = true;
			break;
		}
		/* The cap ends sampling once min_pairs are in; short of that
		 * only four times the cap does. */
		if ((elapsed >= s->o->time_cap_s && sm.n >= s->o->min_pairs) ||
		    elapsed >= 4 * s->o->time_cap_s || sm.n >= s->o->max_pairs)
			break;
		/* Aim the next batch at about a quarter of a second. */
		double per_pair = batch_s / batch;
		batch = per_pair > 0 ? (int)(0.25 / per_pair) : 50;
		if (batch < 2)
			batch = 2;
		if (batch > 200)
			batch = 200;
		if (sm.n + batch > s->o->max_pairs)
			batch = s->o->max_pairs - sm.n;
		if (batch < 1)
			batch = 1;
	}
	if (s->done || sm.n == 0)
		goto out;
	cJSON *tm = cJSON_AddObjectToObject(s->res, "timing");
	cJSON_AddStringToObject(tm, "protocol", "kforge");
	cJSON_AddStringToObject(tm, "unit", "ms");
	cJSON_AddNumberToObject(tm, "pairs", sm.n);
	cJSON_AddNumberToObject(tm, "discarded_throttled", sm.throttled);
	cJSON_AddNumberToObject(tm, "seconds", elapsed);
	cJSON_AddNumberToObject(tm, "ci_target", s->o->ci_target);
	/* What each runner costs per call on its own (CPU time; on the host
	 * it is taken out of every sample). */
	cJSON *ov = cJSON_AddObjectToObject(tm, "runner_overhead_ms");
	cJSON_AddNumberToObject(ov, "reference", s->overhead_ns[0] / 1e6);
	cJSON_AddNumberToObject(ov, "candidate", s->overhead_ns[1] / 1e6);
	cJSON_AddBoolToObject(tm, "ci_target_met", met);
	kf_summary_json(tm, "reference", sm.r, sm.n, 1e-6);
	kf_summary_json(tm, "candidate", sm.c, sm.n, 1e-6);
	/* The speedup of each interleaved pair, so that drifts common to
	 * both (clock, other load) cancel. */
	double *ratio = kf_xmalloc(sizeof(double) * (size_t)sm.n);
	for (int i = 0; i < sm.n; i++)
		ratio[i] = sm.c[i] > 0 ? sm.r[i] / sm.c[i] : 0;
	kf_summary_json(tm, "speedup", ratio, sm.n, 1.0);
	free(ratio);
	struct kf_summary cm, rm, mz;
	kf_summarize(sm.c, sm.n, &cm);
	kf_summarize(sm.r, sm.n, &rm);
	kf_summarize(sm.mhz, sm.n, &mz);
	cJSON_AddNumberToObject(tm, "sm_clock_mhz", mz.median);
	cJSON_AddNumberToObject(tm, "candidate_kernels", sm.kernels);
	cJSON_AddNumberToObject(tm, "candidate_streams", sm.streams);
	if (unaccounted(s, &sm))
		goto out;
	if (roofline(s, peak, cm.median, rm.median, false)) {
		/* Measure the peaks again before calling a candidate
		 * implausible: they may have been probed on a busy machine. */
		cJSON *again = peaks_of(s, kf_json_str(peak, "device"), peak);
		cJSON_DeleteItemFromObject(s->res, "roofline");
		roofline(s, again ? again : peak, cm.median, rm.median, true);
		cJSON_Delete(again);
	}
	const struct kf_backend_ops *ops = kf_backend_find(s->o->backend);
	if (ops->energy_mj && s->o->energy_s > 0 && !s->done)
		energy(s);
out:
	samples_release(&sm);
}

/*
 * KernelBench's timing protocol, beside kforge's: each side on its own, 3
 * synchronised warm-ups then 101 calls each after a flush, timed by events
 * on the side's stream, the first dropped, summarised by the mean. The
 * outputs of the two loops are compared at the end. key is "timing" when
 * it is the only protocol, else "timing_kernelbench".
 */
static void run_timing_kb(struct session *s, const char *key)
{
	static const char *const sides[2] = {"candidate", "reference"};
	double mean[2] = {0, 0};
	cJSON *tm = cJSON_CreateObject();
	cJSON_AddStringToObject(tm, "protocol", "kernelbench");
	cJSON_AddStringToObject(tm, "unit", "ms");
	uint64_t t0 = kf_now_ns();
	for (int i = 0; i < 2 && !s->done; i++) {
		cJSON *req = request("time_kb");
		add_u64(req, "seed", s->o->seed + 1000003u);
		cJSON_AddStringToObject(req, "side", sides[i]);
		cJSON *rep = exchange(s, req, 104 * 2 * s->call_ms + 5000,
				      "timing (kernelbench)");
		if (!rep || unexpected(s, rep, "samples_kb",
				       "timing (kernelbench)"))
			break;
		const cJSON *viol = cJSON_GetObjectItem(rep, "violation");
		const cJSON *chk = cJSON_GetObjectItem(rep, "check");
		if (kf_json_num(rep, "cuda_errors", 0) > 0) {
			finish(s, KF_STATUS_RUNTIME_ERROR, "cuda_error",
			       "timing (kernelbench): the candidate left a "
			       "CUDA error");
		} else if (kf_json_num(rep, "rc_nonzero", 0) > 0) {
			finish(s, KF_STATUS_RUNTIME_ERROR, "return_code",
			       "timing (kernelbench): kf_entry returned "
			       "nonzero");
		} else if (viol) {
			char *why = kf_xasprintf(
			    "timing (kernelbench): %s",
			    kf_json_str(viol, "detail"));
			finish(s, KF_STATUS_REJECTED,
			       kf_json_str(viol, "check"), why);
			free(why);
		} else if (chk && kf_json_num(chk, "mismatches", 0) +
					  kf_json_num(chk, "unwritten", 0) >
				      0) {
			finish(s, KF_STATUS_WRONG_ANSWER, "timed_output",
			       "timing (kernelbench): the candidate's last "
			       "output differs from the reference's on the "
			       "same inputs");
		}
		const cJSON *ns = cJSON_GetObjectItem(rep, "ns");
		int n = cJSON_GetArraySize(ns);
		double *x = kf_xmalloc(sizeof(double) * (size_t)(n ? n : 1));
		for (int k = 0; k < n; k++)
			x[k] = num_at(ns, k, 0);
		if (n > 0 && !s->done) {
			kf_summary_json(tm, sides[i], x, n, 1e-6);
			struct kf_summary m;
			kf_summarize(x, n, &m);
			mean[i] = m.mean;
		}
		free(x);
		cJSON_Delete(rep);
	}
	if (s->done || mean[0] <= 0) {
		cJSON_Delete(tm);
		return;
	}
	/* KernelBench's speedup: the ratio of the two means. */
	cJSON_AddNumberToObject(tm, "speedup", mean[1] / mean[0]);
	cJSON_AddNumberToObject(tm, "seconds",
				(double)(kf_now_ns() - t0) / 1e9);
	cJSON_AddItemToObject(s->res, key, tm);
}

static cJSON *environment(const struct session *s, const cJSON *device)
{
	cJSON *e = cJSON_CreateObject();
	kf_add_system(e, true);
	cJSON_AddItemToObject(e, "device",
			      device ? cJSON_Duplicate(device, 1)
				     : cJSON_CreateNull());
	const char *tc = kf_json_str(s->res, "toolchain");
	cJSON_AddStringToObject(e, "compiler", tc ? tc : "");
	return e;
}

static void close_worker(struct session *s)
{
	cJSON *w = cJSON_AddObjectToObject(s->res, "worker");
	if (s->proc.pid > 0) {
		cJSON *q = request("quit");
		struct kf_err err = KF_ERR_INIT;
		kf_frame_write(s->proc.to_child, q, &err);
		cJSON_Delete(q);
		kf_proc_wait(&s->proc, 5000, &s->exit_status, &s->maxrss_kib);
		s->reaped = true;
	}
	if (s->reaped) {
		char *d = kf_wait_describe(s->exit_status);
		cJSON_AddStringToObject(w, "exit", d);
		free(d);
	}
	cJSON_AddNumberToObject(w, "maxrss_kib", (double)s->maxrss_kib);
	char *tail = log_tail(s->log_fd);
	cJSON_AddStringToObject(w, "log", tail);
	free(tail);
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
}

/* A nonzero seed from the kernel's random source (the clock if that
 * fails), below 2^53 so that it survives JSON numbers anywhere. */
static uint64_t random_seed(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = kf_now_ns() * 0x9e3779b97f4a7c15ull;
	v &= (1ull << 53) - 1;
	return v ? v : 1;
}

/* A baseline is a PyTorch version of a KernelBench-format task's Model. */
static int check_baseline(const char *task_path, const char *name,
			  struct kf_err *err)
{
	if (!kf_task_is_kernelbench(task_path))
		return kf_err_set(err, KF_EINVAL,
				  "--baseline: %s is a native task; baselines "
				  "exist only for KernelBench-format tasks (a "
				  ".py file with Model)",
				  task_path);
	for (int i = 0; kf_baseline_names[i]; i++)
		if (!strcmp(name, kf_baseline_names[i]))
			return 0;
	return kf_err_set(err, KF_EINVAL,
			  "--baseline: unknown baseline '%s' (expected eager, "
			  "compile, compile_ro or cudagraph)",
			  name);
}

int kf_eval(const char *task_path, const char *candidate_path,
	    const struct kf_eval_opts *opts, cJSON **result, struct kf_err *err)
{
	struct kf_eval_opts defaults = KF_EVAL_OPTS_INIT;
	struct session s;
	memset(&s, 0, sizeof(s));
	struct kf_eval_opts seeded;
	s.o = opts ? opts : &defaults;
	if (s.o->seed == 0) {
		seeded = *s.o;
		seeded.seed = random_seed();
		s.o = &seeded;
	}
	s.log_fd = -1;
	s.proc = (struct kf_proc)KF_PROC_INIT;
	s.cand_path = candidate_path;
	uint64_t start = kf_now_ns();
	struct kf_compile_result rr = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result cr = KF_COMPILE_RESULT_INIT;
	struct trial_plan *plans = NULL;
	cJSON *frames = NULL, *device = NULL, *peak = NULL;
	char *ref_path = NULL;
	int rc;

	if (s.o->trials < 5)
		return kf_err_set(err, KF_EINVAL,
				  "--trials: at least 5 trials are needed "
				  "(got %d)",
				  s.o->trials);
	if (!kf_backend_find(s.o->backend))
		return kf_err_set(err, KF_EINVAL,
				  "--backend: unknown backend '%s' (expected "
				  "host or cuda)",
				  s.o->backend);
	if (!(s.o->energy_s >= 0 && s.o->energy_s <= KF_ENERGY_MAX_S))
		return kf_err_set(err, KF_EINVAL,
				  "--energy-time: %g is out of range (0 to "
				  "%g seconds; 0 skips energy)",
				  s.o->energy_s, KF_ENERGY_MAX_S);
	if (s.o->protocol && strcmp(s.o->protocol, "kforge") &&
	    strcmp(s.o->protocol, "kernelbench") &&
	    strcmp(s.o->protocol, "both"))
		return kf_err_set(err, KF_EINVAL,
				  "--protocol: unknown protocol '%s' (expected "
				  "kforge, kernelbench or both)",
				  s.o->protocol);
	const struct kf_backend_ops *ops = kf_backend_find(s.o->backend);
	if (ops->available && ops->available(err))
		return err->code;
	if (s.o->baseline &&
	    (rc = check_baseline(task_path, s.o->baseline, err)))
		return rc;
	if (kf_task_is_kernelbench(task_path)) /* the PyTorch bridge's */
		return kf_eval_bridge(task_path, candidate_path, s.o, result,
				      err);
	rc = kf_task_load(task_path, &s.task, err);
	if (rc)
		return rc;
	kf_task_select_backend(s.task, s.o->backend);
	if (!kf_file_exists(candidate_path)) {
		rc = kf_err_set(err, KF_ENOENT, "%s: no such file",
				candidate_path);
		goto fail;
	}
	ref_path = kf_task_reference(s.task, s.o->backend, err);
	if (!ref_path) {
		rc = err->code ? err->code : KF_ENOENT;
		goto fail;
	}
	s.call_ms = s.o->call_timeout_ms > 0 ? s.o->call_timeout_ms
					     : s.task->call_timeout_ms;

	s.res = cJSON_CreateObject();
	cJSON_AddStringToObject(s.res, "kforge", KF_VERSION);
	char *when = kf_utc_iso8601();
	cJSON_AddStringToObject(s.res, "created_at", when);
	free(when);
	cJSON_AddStringToObject(s.res, "status", "ok");
	cJSON_AddNullToObject(s.res, "reason");
	cJSON_AddStringToObject(s.res, "backend", s.o->backend);
	cJSON *tj = cJSON_AddObjectToObject(s.res, "task");
	cJSON_AddStringToObject(tj, "id", s.task->id);
	cJSON_AddStringToObject(tj, "path", s.task->path);
	cJSON_AddItemToObject(tj, "dims", dims_json(s.task, 0));
	cJSON_AddNumberToObject(tj, "flops", kf_task_flops(s.task, 0));
	cJSON_AddNumberToObject(tj, "bytes", kf_task_bytes(s.task, 0));
	cJSON *cj = cJSON_AddObjectToObject(s.res, "candidate");
	cJSON_AddStringToObject(cj, "path", candidate_path);
	char *sha = file_sha256(candidate_path);
	cJSON_AddStringToObject(cj, "sha256", sha ? sha : "");
	free(sha);
	add_u64(s.res, "seed", s.o->seed);

	rc = compile_one(&s, ref_path, &rr, err);
	if (!rc && !rr.ok)
		rc = kf_err_set(err, KF_EINVAL,
				"%s: the reference does not compile: %s",
				ref_path, rr.log ? rr.log : "");
	if (rc)
		goto fail;
	rc = compile_one(&s, candidate_path, &cr, err);
	if (rc)
		goto fail;
	cJSON *comp = cJSON_AddObjectToObject(s.res, "compile");
	compile_json(comp, "candidate", &cr, !cr.ok);
	compile_json(comp, "reference", &rr, false);
	cJSON_AddStringToObject(s.res, "toolchain",
				cr.toolchain ? cr.toolchain : "");
	if (!cr.ok) {
		char *line = first_error_line(cr.log);
		char *why = cr.timed_out
				? kf_xasprintf("%s: the compiler did not "
					       "finish in time",
					       candidate_path)
				: kf_xstrdup(line);
		finish(&s, KF_STATUS_COMPILE_ERROR, "compile", why);
		free(why);
		free(line);
		goto done;
	}

	if (link_policy(&s, cr.so_path))
		goto done;
	if (spawn_worker(&s, err)) {
		finish(&s, KF_STATUS_INFRA_ERROR, "spawn", err->msg);
		goto done;
	}
	cJSON *req = request("load");
	cJSON_AddStringToObject(req, "backend", s.o->backend);
	cJSON_AddStringToObject(req, "task", s.task->path);
	cJSON_AddStringToObject(req, "reference", rr.so_path);
	cJSON_AddStringToObject(req, "candidate", cr.so_path);
	cJSON *rep = exchange(&s, req, 60000, "loading");
	if (!rep)
		goto done;
	const char *ev = kf_json_str(rep, "ev");
	if (!ev || strcmp(ev, "load_error")) {
		if (unexpected(&s, rep, "loaded", "loading"))
			goto done;
	} else {
		const char *what = kf_json_str(rep, "what");
		bool cand = what && !strcmp(what, "candidate");
		char *why = kf_xasprintf("%s: %s", cand ? candidate_path : what,
					 kf_json_str(rep, "message"));
		finish(&s, cand ? KF_STATUS_LOAD_ERROR : KF_STATUS_INFRA_ERROR,
		       "load", why);
		free(why);
		cJSON_Delete(rep);
		goto done;
	}
	device = cJSON_DetachItemFromObject(rep, "device");
	const cJSON *ov = cJSON_GetObjectItem(rep, "runner_overhead_ns");
	s.overhead_ns[0] = kf_json_num(ov, "reference", 0);
	s.overhead_ns[1] = kf_json_num(ov, "candidate", 0);
	cJSON_Delete(rep);

	frames = cJSON_CreateArray();
	plans = kf_xcalloc((size_t)s.o->trials, sizeof(*plans));
	run_trials(&s, frames, plans);
	if (s.done)
		goto done;
	kf_judge_degenerate(s.task, plans, frames, s.res);
	if (!s.o->no_timing) {
		const char *proto = s.o->protocol ? s.o->protocol : "kforge";
		bool kb = !strcmp(proto, "kernelbench");
		if (!kb) {
			peak = peaks(&s, device);
			if (!s.done)
				run_timing(&s, peak);
		}
		if (!s.done && (kb || !strcmp(proto, "both")))
			run_timing_kb(&s, kb ? "timing" : "timing_kernelbench");
	}
done:
	close_worker(&s);
	cJSON_AddItemToObject(s.res, "environment", environment(&s, device));
	cJSON_AddNumberToObject(s.res, "seconds",
				(double)(kf_now_ns() - start) / 1e9);
	*result = s.res;
	s.res = NULL;
	rc = 0;
fail:
	cJSON_Delete(s.res);
	cJSON_Delete(frames);
	cJSON_Delete(device);
	cJSON_Delete(peak);
	free(plans);
	free(ref_path);
	kf_compile_result_release(&rr);
	kf_compile_result_release(&cr);
	kf_task_free(s.task);
	return rc;
}

enum kf_status kf_result_status(const cJSON *result)
{
	const char *s = kf_json_str(result, "status");
	for (int i = 0; s && i <= KF_STATUS_INFRA_ERROR; i++)
		if (!strcmp(s, kf_status_name((enum kf_status)i)))
			return (enum kf_status)i;
	return KF_STATUS_INFRA_ERROR;
}
