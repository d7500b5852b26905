/*
 * bridge.c: evaluations of KernelBench-format tasks (a Python file with
 * Model, get_inputs, get_init_inputs). The PyTorch bridge (runner/) takes
 * the worker's place and speaks its protocol; the judge is the same.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/compile.h>
#include <kforge/eval.h>
#include <kforge/task.h>

#include "eval_int.h"

#define LOG_TAIL_BYTES 4096
/* Loading imports torch and the candidate, whose load_inline may run nvcc
 * for minutes. */
#define LOAD_DEADLINE_MS 900000.0
/* KernelBench's number of correctness trials. */
#define KB_TRIALS 5
/* KernelBench's timed calls per side; the first is dropped. */
#define KB_CALLS 101

const char *const kf_baseline_names[] = {"eager", "compile", "compile_ro",
					 "cudagraph", NULL};

struct bsession {
	const struct kf_eval_opts *o;
	struct kf_task *task;
	const char *cand_path; /* NULL for a baseline (o->baseline) */
	char *cand_label;      /* cand_path, or "baseline:NAME" (owned) */
	bool kb_checks;	    /* KernelBench's correctness, not kforge's */
	const char *kernel; /* a compiled kforge candidate (kf_entry), or
			       NULL for a ModelNew file */
	cJSON *res;
	struct kf_proc proc;
	int log_fd;
	double call_ms;
	bool done, reaped;
	int exit_status;
	long maxrss_kib;
};

static void finish(struct bsession *s, enum kf_status st, const char *check,
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

static void add_u64(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	cJSON_AddStringToObject(o, key, buf);
}

static cJSON *request(const char *op)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "op", op);
	return r;
}

/* True when python finds the torch package (within a minute). Importing
 * it would take seconds; finding it takes a few milliseconds. */
static bool has_torch(const char *python)
{
	char *argv[] = {(char *)python, "-c",
			"import importlib.util; print('torch:', "
			"importlib.util.find_spec('torch') is not None)",
			NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	struct kf_err err = KF_ERR_INIT;
	int status = 0;
	int rc = kf_proc_run(argv, 60000, 4096, &out, &status, &err);
	bool yes = !rc && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		   !strcmp(kf_strbuf_str(&out), "torch: True\n");
	kf_strbuf_release(&out);
	return yes;
}

static pthread_mutex_t python_lock = PTHREAD_MUTEX_INITIALIZER;
static char *python_found; /* the first python3 on PATH with torch */

/* The Python that runs the bridge: opts->python, else the first python3
 * on PATH that imports torch (found once per process). */
static char *find_python(const struct kf_eval_opts *o, struct kf_err *err)
{
	if (o->python) {
		if (!kf_is_executable(o->python)) {
			kf_err_set(err, KF_ENOENT,
				   "--python: %s is not an executable file",
				   o->python);
			return NULL;
		}
		if (!has_torch(o->python)) {
			kf_err_set(err, KF_ENOENT,
				   "--python: %s cannot import torch, which "
				   "KernelBench-format tasks need",
				   o->python);
			return NULL;
		}
		return kf_xstrdup(o->python);
	}
	char *found = NULL;
	pthread_mutex_lock(&python_lock);
	if (!python_found) {
		const char *path = getenv("PATH");
		char *dirs = kf_xstrdup(path ? path : "/usr/bin:/bin");
		char *save = NULL;
		for (char *d = strtok_r(dirs, ":", &save); d && !python_found;
		     d = strtok_r(NULL, ":", &save)) {
			char *p = kf_path_join(*d ? d : ".", "python3");
			if (kf_is_executable(p) && has_torch(p))
				python_found = p;
			else
				free(p);
		}
		free(dirs);
	}
	if (python_found)
		found = kf_xstrdup(python_found);
	pthread_mutex_unlock(&python_lock);
	if (!found)
		kf_err_set(err, KF_ENOENT,
			   "no python3 on PATH can import torch, which "
			   "KernelBench-format tasks need: install PyTorch "
			   "(pip install torch, or apt-get install "
			   "python3-torch) or name a Python with --python");
	return found;
}

/* runner/kforge_bridge.py beside the executable (make copies it there),
 * or in the source tree above it. */
static char *find_bridge(struct kf_err *err)
{
	const char *dir = kf_exe_dir();
	char *p = kf_path_join(dir, "runner/kforge_bridge.py");
	if (kf_file_exists(p))
		return p;
	free(p);
	p = kf_path_join(dir, "../runner/kforge_bridge.py");
	if (kf_file_exists(p))
		return p;
	kf_err_set(err, KF_ENOENT,
		   "%s/runner/kforge_bridge.py: missing: the PyTorch bridge "
		   "is not installed beside kforge",
		   dir);
	free(p);
	return NULL;
}

/* "CUDA_VISIBLE_DEVICES=<the device-th visible GPU>", as the worker is
 * pinned (eval.c): a variable for the bridge alone, set through env(1),
 * since threads may spawn bridges for other GPUs at the same time. */
static char *device_pin(int device)
{
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	int i = 0;
	for (const char *p = vis; p && *p; i++) {
		size_t n = strcspn(p, ",");
		if (i == device)
			return kf_xasprintf("CUDA_VISIBLE_DEVICES=%.*s", (int)n,
					    p);
		p += n + (p[n] == ',');
	}
	return kf_xasprintf("CUDA_VISIBLE_DEVICES=%d", device);
}

static int spawn_bridge(struct bsession *s, const char *python,
			const char *script, struct kf_err *err)
{
	/* -B: no bytecode files beside the task or the candidate. */
	char *argv[] = {(char *)python, "-B", (char *)script, NULL, NULL, NULL};
	char *env = NULL, *pin = NULL;
	if (s->o->device >= 0 && !strcmp(s->o->backend, "cuda")) {
		env = kf_is_executable("/usr/bin/env")
			  ? kf_xstrdup("/usr/bin/env")
			  : kf_which("env");
		if (!env)
			return kf_err_set(err, KF_ENOENT,
					  "env(1) not found: cannot pin the "
					  "bridge to a GPU");
		pin = device_pin(s->o->device);
		char *const pinned[] = {
		    env, pin, (char *)python, "-B", (char *)script, NULL};
		memcpy(argv, pinned, sizeof(pinned));
	}
	struct kf_limits lim = {0};
	lim.no_core = 1;
	lim.cpu_s = LOAD_DEADLINE_MS / 1000 +
		    s->o->trials * 3.0 * s->call_ms / 1000.0 +
		    s->o->time_cap_s * 2 + 600;
	s->log_fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	int rc = kf_proc_spawn(&s->proc, argv, &lim, s->log_fd, err);
	free(env);
	free(pin);
	return rc;
}

/* Sends a request and reads the reply within timeout_ms; on a dead or late
 * bridge, sets the final status and returns NULL. */
static cJSON *exchange(struct bsession *s, cJSON *req, double timeout_ms,
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
	char *why;
	if (rc == KF_ETIMEDOUT) {
		kf_proc_kill(&s->proc, &status);
		s->reaped = true;
		s->exit_status = status;
		why = kf_xasprintf("%s: no answer within %.1f s; the bridge "
				   "was killed",
				   phase, timeout_ms / 1000.0);
		finish(s, KF_STATUS_TIMEOUT, "deadline", why);
		free(why);
		return NULL;
	}
	kf_proc_wait(&s->proc, 5000, &status, &s->maxrss_kib);
	s->reaped = true;
	s->exit_status = status;
	char *d = kf_wait_describe(status);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
		why = kf_xasprintf("%s: the bridge ran out of CPU time (%s)",
				   phase, d);
		finish(s, KF_STATUS_TIMEOUT, "cpu_limit", why);
	} else if (rc == KF_EPROTO) {
		why = kf_xasprintf("%s: %s", phase, err.msg);
		finish(s, KF_STATUS_INFRA_ERROR, "protocol", why);
	} else {
		why = kf_xasprintf("%s: the bridge died: %s", phase, d);
		finish(s, KF_STATUS_RUNTIME_ERROR, "crash", why);
	}
	free(d);
	free(why);
	return NULL;
}

/* True (status set, reply freed) when a reply is not the event expected. */
static bool unexpected(struct bsession *s, cJSON *rep, const char *want,
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

/* Adds the tensors the bridge reported to the task. */
static int add_tensors(struct kf_task *t, const cJSON *rep, bool output,
		       struct kf_err *err)
{
	const cJSON *arr =
	    cJSON_GetObjectItem(rep, output ? "outputs" : "inputs");
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
	{
		int64_t shape[KF_MAX_NDIM];
		const cJSON *sh = cJSON_GetObjectItem(x, "shape");
		int nd = cJSON_GetArraySize(sh);
		enum kf_dtype dt;
		const char *name = kf_json_str(x, "name");
		const char *dts = kf_json_str(x, "dtype");
		if (!dts || kf_dtype_parse(dts, &dt))
			return kf_err_set(err, KF_EINVAL,
					  "%s: %s '%s': unsupported dtype "
					  "'%s'",
					  t->path, output ? "output" : "input",
					  name ? name : "?", dts ? dts : "");
		for (int d = 0; d < nd && d < KF_MAX_NDIM; d++)
			shape[d] =
			    (int64_t)cJSON_GetArrayItem(sh, d)->valuedouble;
		int rc =
		    kf_task_add_tensor(t, output, name, dt, nd, shape, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* KernelBench's verdict over a trial: the candidate ran, its outputs have
 * the reference's shapes and match within atol = rtol = 1e-2. */
static void judge_kb(const struct kf_task *t, const struct trial_plan *p,
		     const cJSON *frame, struct verdict *v)
{
	cJSON *f = cJSON_Duplicate(frame, 1);
	/* Only KernelBench's checks: drop what it does not look at. */
	cJSON_DeleteItemFromObject(f, "inputs");
	cJSON *ins = cJSON_AddArrayToObject(f, "inputs");
	for (int i = 0; i < t->n_inputs; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "before", "-");
		cJSON_AddStringToObject(o, "after", "-");
		cJSON_AddItemToArray(ins, o);
	}
	cJSON *o;
	cJSON_ArrayForEach(o, cJSON_GetObjectItem(f, "outputs"))
	{
		cJSON_ReplaceItemInObject(o, "l1_err", cJSON_CreateNumber(0));
	}
	kf_judge_trial(t, p, f, v);
	cJSON_Delete(f);
}

static cJSON *trial_json(const struct kf_task *t, const struct trial_plan *p,
			 const cJSON *frame)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "index", p->index);
	add_u64(j, "seed", p->seed);
	cJSON_AddBoolToObject(j, "hidden", false);
	cJSON_AddObjectToObject(j, "dims");
	cJSON *d = cJSON_AddObjectToObject(j, "dists");
	for (int i = 0; i < t->n_inputs; i++)
		cJSON_AddStringToObject(d, t->inputs[i].name,
					p->dists[i] ? "get_inputs_uniform"
						    : "get_inputs");
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

static void run_trials(struct bsession *s, int n, cJSON *frames,
		       struct trial_plan *plans)
{
	const struct kf_task *t = s->task;
	cJSON *trials = cJSON_AddArrayToObject(s->res, "trials");
	for (int k = 0; k < n && !s->done; k++) {
		struct trial_plan *p = &plans[k];
		memset(p, 0, sizeof(*p));
		p->index = k;
		p->seed = s->o->seed + (uint64_t)k;
		/* kforge's protocol alternates the inputs of get_inputs()
		 * and the same redrawn uniformly over their range. */
		for (int i = 0; i < t->n_inputs; i++)
			p->dists[i] = s->kb_checks ? 0 : k % 2;
		cJSON *req = request("trial");
		cJSON_AddNumberToObject(req, "index", k);
		add_u64(req, "seed", p->seed);
		cJSON_AddNumberToObject(req, "dimset", 0);
		cJSON *d = cJSON_AddArrayToObject(req, "dists");
		cJSON_AddItemToArray(
		    d, cJSON_CreateNumber(s->kb_checks ? 0 : k % 2));
		char *label = kf_judge_trial_label(t, p);
		cJSON *rep = exchange(s, req, 3 * s->call_ms + 30000, label);
		if (!rep || unexpected(s, rep, "trial", label)) {
			free(label);
			return;
		}
		/* KernelBench's protocol draws its own trial seeds: report
		 * the one the inputs came from. */
		const char *is = kf_json_str(rep, "input_seed");
		if (is && *is) {
			p->seed = strtoull(is, NULL, 10);
			free(label);
			label = kf_judge_trial_label(t, p);
		}
		struct verdict v = {0};
		if (s->kb_checks)
			judge_kb(t, p, rep, &v);
		else
			kf_judge_trial(t, p, rep, &v);
		/* Python raises where C returns a code: name the exception,
		 * and count a shape KernelBench rejects as a wrong answer. */
		const char *cerr = kf_json_str(rep, "cand_error");
		const char *rerr = kf_json_str(rep, "ref_error");
		if (!strcmp(v.check, "return_code") && cerr)
			snprintf(v.reason, sizeof(v.reason),
				 "%s: the candidate raised %s", label, cerr);
		if (!strcmp(v.check, "reference") && rerr)
			snprintf(v.reason, sizeof(v.reason),
				 "%s: the reference raised %s", label, rerr);
		if (!strcmp(v.check, "output_shape"))
			v.status = KF_STATUS_WRONG_ANSWER;
		free(label);
		cJSON *tj = trial_json(t, p, rep);
		cJSON_AddBoolToObject(tj, "passed", v.status == KF_STATUS_OK);
		cJSON_AddItemToArray(trials, tj);
		cJSON_AddItemToArray(frames, rep);
		if (v.status != KF_STATUS_OK) {
			if (v.failure) {
				cJSON_AddItemToObject(v.failure, "dims",
						      cJSON_CreateObject());
				add_u64(v.failure, "seed", p->seed);
				cJSON_AddItemToObject(s->res, "failure",
						      v.failure);
			}
			finish(s, v.status, v.check, v.reason);
		}
	}
}


/* The numbers of a JSON array, appended to *x (grown as needed). */
static void append_ns(const cJSON *arr, double **x, int *n, int *cap)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, arr)
	{
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 128;
			*x = kf_xrealloc(*x, sizeof(double) * (size_t)*cap);
		}
		(*x)[(*n)++] = cJSON_IsNumber(v) ? v->valuedouble : 0;
	}
}


/* kforge's protocol: interleaved pairs on fresh inputs, every output
 * checked, until the medians' intervals are tight or the cap passes. */
static void time_kforge(struct bsession *s)
{
	double *c = NULL, *r = NULL;
	int n = 0, cap_c = 0, cap_r = 0, nr = 0;
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
		cJSON *rep =
		    exchange(s, req, (batch + warmup) * 2 * s->call_ms + 30000,
			     "timing");
		if (!rep || unexpected(s, rep, "samples", "timing"))
			break;
		struct verdict v = {0};
		kf_judge_samples(rep, &v);
		if (v.status != KF_STATUS_OK) {
			finish(s, v.status, v.check, v.reason);
			cJSON_Delete(rep);
			break;
		}
		append_ns(cJSON_GetObjectItem(rep, "cand_ns"), &c, &n, &cap_c);
		append_ns(cJSON_GetObjectItem(rep, "ref_ns"), &r, &nr, &cap_r);
		cJSON_Delete(rep);
		if (nr < n)
			n = nr;
		nr = n;
		double batch_s = (double)(kf_now_ns() - b0) / 1e9;
		elapsed = (double)(kf_now_ns() - t0) / 1e9;
		warmup = 0;
		if (n >= s->o->min_pairs &&
		    kf_half_width(c, n) <= s->o->ci_target &&
		    kf_half_width(r, n) <= s->o->ci_target) {
			met = true;
			break;
		}
		if ((elapsed >= s->o->time_cap_s && n >= s->o->min_pairs) ||
		    elapsed >= 4 * s->o->time_cap_s || n >= s->o->max_pairs)
			break;
		double per_pair = batch_s / batch;
		batch = per_pair > 0 ? (int)(0.25 / per_pair) : 50;
		batch = batch < 2 ? 2 : batch > 200 ? 200 : batch;
		if (n + batch > s->o->max_pairs)
			batch = s->o->max_pairs - n;
		if (batch < 1)
			batch = 1;
	}
	if (s->done || n == 0)
		goto out;
	cJSON *tm = cJSON_AddObjectToObject(s->res, "timing");
	cJSON_AddStringToObject(tm, "protocol", "kforge");
	cJSON_AddStringToObject(tm, "unit", "ms");
	cJSON_AddNumberToObject(tm, "pairs", n);
	cJSON_AddNumberToObject(tm, "discarded_throttled", 0);
	cJSON_AddNumberToObject(tm, "seconds", elapsed);
	cJSON_AddNumberToObject(tm, "ci_target", s->o->ci_target);
	cJSON_AddBoolToObject(tm, "ci_target_met", met);
	kf_summary_json(tm, "reference", r, n, 1e-6);
	kf_summary_json(tm, "candidate", c, n, 1e-6);
	double *ratio = kf_xmalloc(sizeof(double) * (size_t)n);
	for (int i = 0; i < n; i++)
		ratio[i] = c[i] > 0 ? r[i] / c[i] : 0;
	kf_summary_json(tm, "speedup", ratio, n, 1.0);
	free(ratio);
	cJSON_AddNumberToObject(tm, "sm_clock_mhz", 0);
	cJSON_AddNumberToObject(tm, "candidate_kernels", -1);
	cJSON_AddNumberToObject(tm, "candidate_streams", -1);
	/* A KernelBench task states no FLOP or byte counts: no bound. */
	cJSON *rf = cJSON_AddObjectToObject(s->res, "roofline");
	cJSON_AddNumberToObject(rf, "flops", 0);
	cJSON_AddNumberToObject(rf, "bytes", 0);
	cJSON_AddStringToObject(rf, "compute_peak", "fma");
	cJSON_AddNumberToObject(rf, "peak_flops_per_s", 0);
	cJSON_AddNumberToObject(rf, "peak_bytes_per_s", 0);
	cJSON_AddNumberToObject(rf, "flops_per_s", 0);
	cJSON_AddNumberToObject(rf, "bytes_per_s", 0);
	cJSON_AddNullToObject(rf, "bound");
out:
	free(c);
	free(r);
}

/* KernelBench's timing (see the bridge): each side alone, 3 warm-ups, 101
 * calls timed after a flush, the first dropped; the means and their
 * ratio, in the block key ("timing" or "timing_kernelbench"). */
static void time_kernelbench(struct bsession *s, const char *key)
{
	cJSON *req = request("time");
	cJSON_AddStringToObject(req, "protocol", "kernelbench");
	cJSON_AddNumberToObject(req, "calls", KB_CALLS);
	uint64_t t0 = kf_now_ns();
	cJSON *rep = exchange(s, req, (KB_CALLS + 3) * 2 * s->call_ms + 30000,
			      "timing (kernelbench)");
	if (!rep || unexpected(s, rep, "samples", "timing (kernelbench)"))
		return;
	double *c = NULL, *r = NULL;
	int nc = 0, nr = 0, cap_c = 0, cap_r = 0;
	append_ns(cJSON_GetObjectItem(rep, "cand_ns"), &c, &nc, &cap_c);
	append_ns(cJSON_GetObjectItem(rep, "ref_ns"), &r, &nr, &cap_r);
	cJSON_Delete(rep);
	if (nc > 0 && nr > 0) {
		cJSON *tm = cJSON_AddObjectToObject(s->res, key);
		cJSON_AddStringToObject(tm, "protocol", "kernelbench");
		cJSON_AddStringToObject(tm, "unit", "ms");
		kf_summary_json(tm, "reference", r, nr, 1e-6);
		kf_summary_json(tm, "candidate", c, nc, 1e-6);
		struct kf_summary mc, mr;
		kf_summarize(c, nc, &mc);
		kf_summarize(r, nr, &mr);
		cJSON_AddNumberToObject(tm, "speedup",
					mc.mean > 0 ? mr.mean / mc.mean : 0);
		cJSON_AddNumberToObject(tm, "seconds",
					(double)(kf_now_ns() - t0) / 1e9);
	}
	free(c);
	free(r);
}

static char *log_tail(int fd)
{
	if (fd < 0)
		return kf_xstrdup("");
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > LOG_TAIL_BYTES ? end - LOG_TAIL_BYTES : 0;
	char *buf = kf_xmalloc(LOG_TAIL_BYTES + 1);
	ssize_t n = pread(fd, buf, (size_t)(end - start), start);
	buf[n > 0 ? n : 0] = '\0';
	kf_text_sanitize(buf);
	return buf;
}

static void close_bridge(struct bsession *s)
{
	cJSON *w = cJSON_AddObjectToObject(s->res, "worker");
	if (s->proc.pid > 0) {
		cJSON *q = request("quit");
		struct kf_err err = KF_ERR_INIT;
		kf_frame_write(s->proc.to_child, q, &err);
		cJSON_Delete(q);
		kf_proc_wait(&s->proc, 10000, &s->exit_status, &s->maxrss_kib);
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

/* The result's opening fields, as kf_eval writes them. */
static void result_head(struct bsession *s)
{
	s->res = cJSON_CreateObject();
	cJSON_AddStringToObject(s->res, "kforge", KF_VERSION);
	char *when = kf_utc_iso8601();
	cJSON_AddStringToObject(s->res, "created_at", when);
	free(when);
	cJSON_AddStringToObject(s->res, "status", "ok");
	cJSON_AddNullToObject(s->res, "reason");
	cJSON_AddStringToObject(s->res, "backend", s->o->backend);
	cJSON *tj = cJSON_AddObjectToObject(s->res, "task");
	cJSON_AddStringToObject(tj, "id", s->task->id);
	cJSON_AddStringToObject(tj, "path", s->task->path);
	cJSON_AddStringToObject(tj, "format", "kernelbench");
	if (s->task->level > 0)
		cJSON_AddNumberToObject(tj, "level", s->task->level);
	cJSON_AddObjectToObject(tj, "dims");
	cJSON_AddNumberToObject(tj, "flops", 0);
	cJSON_AddNumberToObject(tj, "bytes", 0);
	/* A baseline is the task's own Model, so its file is what it ran. */
	cJSON *cj = cJSON_AddObjectToObject(s->res, "candidate");
	cJSON_AddStringToObject(cj, "path", s->cand_label);
	char *sha = file_sha256(s->cand_path ? s->cand_path : s->task->path);
	cJSON_AddStringToObject(cj, "sha256", sha ? sha : "");
	free(sha);
	add_u64(s->res, "seed", s->o->seed);
}

/* The compile block of a ModelNew candidate: its compile is the first
 * load of its module (torch's load_inline builds there), as the bridge
 * timed it; the reference is not compiled. */
static void compile_block(struct bsession *s, bool ok, double seconds,
			  const char *log)
{
	cJSON *comp = cJSON_AddObjectToObject(s->res, "compile");
	cJSON *c = cJSON_AddObjectToObject(comp, "candidate");
	cJSON_AddBoolToObject(c, "ok", ok);
	cJSON_AddBoolToObject(c, "cached", false);
	cJSON_AddNumberToObject(c, "seconds", seconds);
	cJSON_AddStringToObject(c, "key", "");
	cJSON_AddStringToObject(c, "command",
				s->o->baseline
				    ? "python: Model(*get_init_inputs()) made "
				      "into the baseline (torch.compile "
				      "compiles at the first calls)"
				    : "python: import the candidate, then "
				      "ModelNew(*get_init_inputs()) "
				      "(load_inline builds here)");
	if (log) {
		char *clean = kf_xstrdup(log);
		kf_text_sanitize(clean);
		cJSON_AddStringToObject(c, "log", clean);
		free(clean);
	}
	cJSON *r = cJSON_AddObjectToObject(comp, "reference");
	cJSON_AddBoolToObject(r, "ok", true);
	cJSON_AddBoolToObject(r, "cached", true);
	cJSON_AddNumberToObject(r, "seconds", 0);
	cJSON_AddStringToObject(r, "key", "");
	cJSON_AddStringToObject(r, "command", "");
}

/*
 * The verdict on the bridge's load_error: the candidate's compile or load,
 * or a baseline that this torch cannot make (torch.compile before torch 2,
 * a CUDA graph on the CPU), are the candidate's outcome; anything else is
 * the engine's.
 */
static void load_failed(struct bsession *s, const cJSON *rep)
{
	const char *what = kf_json_str(rep, "what");
	const char *msg = kf_json_str(rep, "message");
	bool comp = what && !strcmp(what, "compile");
	bool base = what && !strcmp(what, "baseline");
	bool cand = comp || base || (what && !strcmp(what, "candidate"));
	char *why = base ? kf_xasprintf("baseline %s: %s",
					s->o->baseline ? s->o->baseline : "?",
					msg ? msg : "no message")
			 : kf_xasprintf("%s: %s", cand ? s->cand_label : what,
					msg ? msg : "no message");
	if (!s->kernel)
		compile_block(s, !comp, 0, comp ? msg : NULL);
	finish(s,
	       comp   ? KF_STATUS_COMPILE_ERROR
	       : cand ? KF_STATUS_LOAD_ERROR
		      : KF_STATUS_INFRA_ERROR,
	       comp   ? "compile"
	       : base ? "baseline"
		      : "load",
	       why);
	free(why);
}

/* Loads the task and the candidate (or the baseline) in the bridge; false
 * when that ended the evaluation. */
static bool load(struct bsession *s, const char *proto, cJSON **device)
{
	cJSON *req = request("load");
	cJSON_AddStringToObject(req, "backend", s->o->backend);
	cJSON_AddStringToObject(req, "task", s->task->path);
	if (s->o->baseline)
		cJSON_AddStringToObject(req, "baseline", s->o->baseline);
	else
		cJSON_AddStringToObject(req, "candidate", s->cand_path);
	if (s->kernel)
		cJSON_AddStringToObject(req, "kernel", s->kernel);
	cJSON_AddStringToObject(req, "protocol",
				s->kb_checks ? "kernelbench" : "kforge");
	add_u64(req, "seed", s->o->seed);
	(void)proto;
	cJSON *rep = exchange(s, req, LOAD_DEADLINE_MS, "loading");
	if (!rep)
		return false;
	const char *ev = kf_json_str(rep, "ev");
	if (ev && !strcmp(ev, "load_error")) {
		load_failed(s, rep);
		cJSON_Delete(rep);
		return false;
	}
	if (unexpected(s, rep, "loaded", "loading"))
		return false;
	struct kf_err err = KF_ERR_INIT;
	if (add_tensors(s->task, rep, false, &err) ||
	    add_tensors(s->task, rep, true, &err)) {
		char *why = kf_xasprintf("loading: %s", err.msg);
		finish(s, KF_STATUS_INFRA_ERROR, "protocol", why);
		free(why);
		cJSON_Delete(rep);
		return false;
	}
	if (!s->kernel)
		compile_block(s, true,
			      kf_json_num(rep, "candidate_load_ns", 0) / 1e9,
			      NULL);
	*device = cJSON_DetachItemFromObject(rep, "device");
	const char *tv = kf_json_str(*device, "torch");
	char *tc = kf_xasprintf(
	    "python %s, torch %s",
	    kf_json_str(rep, "python") ? kf_json_str(rep, "python") : "?",
	    tv ? tv : "?");
	if (!cJSON_GetObjectItem(s->res, "toolchain"))
		cJSON_AddStringToObject(s->res, "toolchain", tc);
	free(tc);
	cJSON_Delete(rep);
	return true;
}

/* First line of a compiler log that says "error", for the reason. */
static char *error_line(const char *log)
{
	for (const char *p = log; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (memmem(p, n, "error", 5))
			return kf_xasprintf("%.*s", (int)n, p);
		p = nl ? nl + 1 : NULL;
	}
	return kf_xstrdup(log && *log ? log : "the compiler failed");
}

/*
 * A kforge candidate (kf_entry) for a KernelBench task: compiled by
 * kforge's own toolchain and cache, then held to the link-time policy
 * (a KernelBench task allows no library). Sets the final status when it
 * does not compile or imports what is forbidden; a negative code when it
 * could not try.
 */
static int compile_kernel(struct bsession *s, struct kf_compile_result *cr,
			  struct kf_err *err)
{
	struct kf_compile_opts co = {0};
	co.backend = s->o->backend;
	co.include_dir = s->o->include_dir;
	co.no_cache = s->o->no_cache;
	int rc = kf_compile(s->cand_path, &co, cr, err);
	if (rc)
		return rc;
	cJSON *comp = cJSON_AddObjectToObject(s->res, "compile");
	cJSON *c = cJSON_AddObjectToObject(comp, "candidate");
	cJSON_AddBoolToObject(c, "ok", cr->ok);
	cJSON_AddBoolToObject(c, "cached", cr->cached);
	cJSON_AddNumberToObject(c, "seconds", cr->seconds);
	cJSON_AddStringToObject(c, "key", cr->key ? cr->key : "");
	cJSON_AddStringToObject(c, "command", cr->command ? cr->command : "");
	cJSON *r = cJSON_AddObjectToObject(comp, "reference");
	cJSON_AddBoolToObject(r, "ok", true);
	cJSON_AddBoolToObject(r, "cached", true);
	cJSON_AddNumberToObject(r, "seconds", 0);
	cJSON_AddStringToObject(r, "key", "");
	cJSON_AddStringToObject(r, "command", "");
	cJSON_AddStringToObject(s->res, "toolchain",
				cr->toolchain ? cr->toolchain : "");
	if (!cr->ok) {
		char *log = kf_xstrdup(cr->log ? cr->log : "");
		kf_text_sanitize(log);
		cJSON_AddStringToObject(c, "log", log);
		free(log);
		char *line = cr->timed_out
				 ? kf_xasprintf("%s: the compiler did not "
						"finish in time",
						s->cand_path)
				 : error_line(cr->log);
		kf_text_sanitize(line);
		finish(s, KF_STATUS_COMPILE_ERROR, "compile", line);
		free(line);
		return 0;
	}
	char **names = NULL, why[768];
	int n = 0;
	if (kf_compile_imports(cr->so_path, &names, &n, err)) {
		finish(s, KF_STATUS_INFRA_ERROR, "link_policy", err->msg);
		return 0;
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
	if (bad) {
		char *reason = kf_xasprintf("%s imports what the task does not "
					    "allow: %s",
					    s->cand_path, why);
		finish(s, KF_STATUS_REJECTED, "link_policy", reason);
		free(reason);
	}
	return 0;
}

/* A candidate file of a KernelBench-format task: a ModelNew (.py) or a
 * kforge kernel (*kernel set). */
static int check_candidate(const char *path, bool *kernel, struct kf_err *err)
{
	if (!path || !kf_file_exists(path))
		return kf_err_set(err, KF_ENOENT, "%s: no such file",
				  path ? path : "(no candidate)");
	const char *ext = strrchr(path, '.');
	*kernel = ext && (!strcmp(ext, ".c") || !strcmp(ext, ".cu"));
	if (!ext || (strcmp(ext, ".py") && !*kernel))
		return kf_err_set(err, KF_EINVAL,
				  "%s: a candidate for a KernelBench-format "
				  "task is a Python file defining ModelNew "
				  "(.py) or a kforge kernel defining kf_entry "
				  "(.c for the host backend, .cu for cuda)",
				  path);
	return 0;
}

int kf_eval_bridge(const char *task_path, const char *candidate_path,
		   const struct kf_eval_opts *o, cJSON **result,
		   struct kf_err *err)
{
	struct bsession s;
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.log_fd = -1;
	s.proc = (struct kf_proc)KF_PROC_INIT;
	s.cand_path = candidate_path;
	char *python = NULL, *script = NULL;
	cJSON *frames = NULL, *device = NULL;
	struct trial_plan *plans = NULL;
	struct kf_compile_result cr = KF_COMPILE_RESULT_INIT;
	uint64_t start = kf_now_ns();
	const char *proto = o->protocol ? o->protocol : "kforge";
	s.kb_checks = !strcmp(proto, "kernelbench");
	bool kernel = false;
	int rc = kf_task_load(task_path, &s.task, err);
	if (rc)
		return rc;
	if (o->baseline) {
		s.cand_path = NULL;
		s.cand_label = kf_xasprintf("baseline:%s", o->baseline);
	} else {
		if ((rc = check_candidate(candidate_path, &kernel, err)))
			goto fail;
		s.cand_label = kf_xstrdup(candidate_path);
	}
	if (!(python = find_python(o, err)) || !(script = find_bridge(err))) {
		rc = err->code;
		goto fail;
	}
	s.call_ms = o->call_timeout_ms > 0 ? o->call_timeout_ms
					   : s.task->call_timeout_ms;
	result_head(&s);
	if (kernel) {
		if ((rc = compile_kernel(&s, &cr, err)))
			goto fail;
		if (s.done)
			goto done;
		s.kernel = cr.so_path;
	}
	if (spawn_bridge(&s, python, script, err)) {
		finish(&s, KF_STATUS_INFRA_ERROR, "spawn", err->msg);
		goto done;
	}
	if (!load(&s, proto, &device))
		goto done;
	int n = s.kb_checks ? KB_TRIALS : o->trials;
	frames = cJSON_CreateArray();
	plans = kf_xcalloc((size_t)n, sizeof(*plans));
	run_trials(&s, n, frames, plans);
	if (s.done)
		goto done;
	kf_judge_degenerate(s.task, plans, frames, s.res);
	if (!o->no_timing) {
		if (!s.kb_checks)
			time_kforge(&s);
		if (!s.done && strcmp(proto, "kforge"))
			time_kernelbench(
			    &s, s.kb_checks ? "timing" : "timing_kernelbench");
	}
done:
	close_bridge(&s);
	if (!cJSON_GetObjectItem(s.res, "toolchain"))
		cJSON_AddStringToObject(s.res, "toolchain", "");
	cJSON *e = cJSON_CreateObject();
	kf_add_system(e, true);
	cJSON_AddItemToObject(e, "device",
			      device ? cJSON_Duplicate(device, 1)
				     : cJSON_CreateNull());
	cJSON_AddStringToObject(e, "compiler", kf_json_str(s.res, "toolchain"));
	cJSON_AddItemToObject(s.res, "environment", e);
	cJSON_AddNumberToObject(s.res, "seconds",
				(double)(kf_now_ns() - start) / 1e9);
	*result = s.res;
	s.res = NULL;
	rc = 0;
fail:
	cJSON_Delete(s.res);
	cJSON_Delete(frames);
	cJSON_Delete(device);
	free(plans);
	free(python);
	free(script);
	kf_compile_result_release(&cr);
	kf_task_free(s.task);
	free(s.cand_label);
	return rc;
}
