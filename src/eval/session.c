/*
 * session.c: what both kinds of evaluation share: the plumbing of a
 * supervised child that speaks the worker's protocol (native tasks: eval.c
 * and the C worker; KernelBench-format ones: bridge.c and the PyTorch
 * bridge), the result's common blocks, and kforge's timing loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/compile.h>
#include <kforge/eval.h>
#include <kforge/task.h>

#include "eval_int.h"

#define LOG_TAIL_BYTES 4096

void kf_session_core_init(struct kf_session_core *s,
			  const struct kf_child *child,
			  const struct kf_eval_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->child = child;
	s->o = o;
	s->log_fd = -1;
	s->proc = (struct kf_proc)KF_PROC_INIT;
}

void kf_session_verdict(struct kf_session_core *s, const struct verdict *v)
{
	kf_session_finish(s, v->status, v->check, v->reason);
}

void kf_session_finish(struct kf_session_core *s, enum kf_status st,
		       const char *check, const char *reason)
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

cJSON *kf_request(const char *op)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "op", op);
	return r;
}

void kf_add_u64(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	cJSON_AddStringToObject(o, key, buf);
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

cJSON *kf_session_result_open(struct kf_session_core *s)
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
	return tj;
}

void kf_session_result_candidate(struct kf_session_core *s, const char *label,
				 const char *file)
{
	cJSON *cj = cJSON_AddObjectToObject(s->res, "candidate");
	cJSON_AddStringToObject(cj, "path", label);
	char *sha = file_sha256(file);
	cJSON_AddStringToObject(cj, "sha256", sha ? sha : "");
	free(sha);
	kf_add_u64(s->res, "seed", s->o->seed);
}

void kf_compile_json(cJSON *parent, const char *key,
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

void kf_session_compile_failed(struct kf_session_core *s,
			       const struct kf_compile_result *cr,
			       const char *cand_path)
{
	char *first = cr->timed_out ? NULL : first_error_line(cr->log);
	struct verdict v = {0};
	kf_judge_compile(cr->timed_out, cand_path, first, &v);
	kf_session_verdict(s, &v);
	free(first);
}

bool kf_session_link_policy(struct kf_session_core *s, const char *so_path,
			    const char *cand_path)
{
	struct kf_err err = KF_ERR_INIT;
	char **names = NULL, why[768];
	int n = 0;
	if (kf_compile_imports(so_path, &names, &n, &err)) {
		kf_session_finish(s, KF_STATUS_INFRA_ERROR, "link_policy",
				  err.msg);
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
	struct verdict v = {0};
	kf_judge_link_policy(cand_path, bad, why, &v);
	if (v.status == KF_STATUS_OK)
		return false;
	kf_session_verdict(s, &v);
	return true;
}

int kf_session_pin(const struct kf_session_core *s, char **env, char **pin,
		   struct kf_err *err)
{
	*pin = NULL;
	*env = kf_is_executable("/usr/bin/env") ? kf_xstrdup("/usr/bin/env")
						: kf_which("env");
	if (!*env)
		return kf_err_set(
		    err, KF_ENOENT,
		    "env(1) not found: cannot pin the %s to a GPU",
		    s->child->name);
	/* Device i is the i-th entry of the CUDA_VISIBLE_DEVICES this process
	 * has, when it has one. */
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	int i = 0;
	for (const char *p = vis; p && *p; i++) {
		size_t n = strcspn(p, ",");
		if (i == s->o->device) {
			*pin = kf_xasprintf("CUDA_VISIBLE_DEVICES=%.*s", (int)n,
					    p);
			return 0;
		}
		p += n + (p[n] == ',');
	}
	*pin = kf_xasprintf("CUDA_VISIBLE_DEVICES=%d", s->o->device);
	return 0;
}

int kf_session_spawn(struct kf_session_core *s, char *const argv[],
		     const struct kf_limits *lim, struct kf_err *err)
{
	/* The runners' memory limit is the worker's or the bridge's to keep
	 * (they read the variable); a bad value stops here. */
	uint64_t mem;
	int rc = kf_runner_mem_limit(&mem, err);
	if (rc)
		return rc;
	s->log_fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return kf_proc_spawn(&s->proc, argv, lim, s->log_fd, err);
}

/* How much longer than its deadline a phase may take in wall time while
 * the machine's load keeps the child from running. */
#define KF_STARVED_WALL_FACTOR 8

/*
 * Waits for the child's answer. A phase's deadline is a budget of time the
 * child may run, not of wall time: on a machine busy with other work the
 * child and its runners wait for a CPU, and an honest candidate would time
 * out. So when the deadline passes while the child's process tree is
 * waiting for a CPU and has used less CPU time than the deadline, the wait
 * goes on, by what it has not used, up to KF_STARVED_WALL_FACTOR times the
 * deadline. A child that sleeps or blocks is not waiting for a CPU, and one
 * that spins uses its budget: both time out as before. KF_ETIMEDOUT, or 0
 * when the answer has begun to arrive.
 */
static int wait_answer(struct kf_session_core *s, double timeout_ms)
{
	uint64_t start = kf_now_ns();
	uint64_t deadline = start + (uint64_t)(timeout_ms * 1e6);
	uint64_t hard =
	    start + (uint64_t)(KF_STARVED_WALL_FACTOR * timeout_ms * 1e6);
	double cpu0 = kf_proc_tree_cpu_ms(s->proc.pid, NULL);
	for (;;) {
		uint64_t now = kf_now_ns();
		if (now < deadline) {
			struct pollfd pfd = {s->proc.from_child, POLLIN, 0};
			int ms = (int)((deadline - now) / 1000000ull) + 1;
			int r = poll(&pfd, 1, ms);
			if (r > 0 || (r < 0 && errno != EINTR))
				return 0; /* readable, or an error to read */
			continue;
		}
		/* Waiting for a CPU at any of five looks over 0.1 s: one look
		 * could fall in a moment when the tree blocks on itself. */
		bool runnable = false;
		double used = 0;
		for (int k = 0; k < 5 && !runnable; k++) {
			if (k)
				usleep(20000);
			used =
			    kf_proc_tree_cpu_ms(s->proc.pid, &runnable) - cpu0;
		}
		if (cpu0 < 0 || !runnable || used >= timeout_ms || now >= hard)
			return KF_ETIMEDOUT;
		double more_ms = timeout_ms - used;
		deadline = now + (uint64_t)(fmax(more_ms, 100) * 1e6);
		if (deadline > hard)
			deadline = hard;
	}
}

cJSON *kf_session_exchange(struct kf_session_core *s, cJSON *req,
			   double timeout_ms, const char *phase)
{
	struct kf_err err = KF_ERR_INIT;
	cJSON *reply = NULL;
	int rc = kf_frame_write(s->proc.to_child, req, &err);
	cJSON_Delete(req);
	if (!rc)
		rc = wait_answer(s, timeout_ms);
	if (!rc)
		rc = kf_frame_read(s->proc.from_child,
				   kf_now_ns() + (uint64_t)(timeout_ms * 1e6),
				   &reply, &err);
	/* A child that stands for the candidate's process (the bridge, whose
	 * candidate runner ended) says so before it ends the same way: the
	 * messages then name the candidate's process, not the child. */
	struct kf_child as = *s->child;
	const char *ev = rc ? NULL : kf_json_str(reply, "ev");
	if (ev && !strcmp(ev, "died")) {
		as.name = "candidate's process";
		cJSON_Delete(reply);
		reply = NULL;
		rc = KF_ECHILD;
	}
	if (!rc)
		return reply;
	int status = 0;
	if (rc == KF_ETIMEDOUT) {
		kf_proc_kill(&s->proc, &status);
		s->reaped = true;
		s->exit_status = status;
		struct verdict v = {0};
		kf_judge_deadline(s->child, timeout_ms, phase, &v);
		kf_session_verdict(s, &v);
		return NULL;
	}
	kf_proc_wait(&s->proc, as.quit_wait_ms > 5000 ? as.quit_wait_ms : 5000,
		     &status, &s->maxrss_kib);
	s->reaped = true;
	s->exit_status = status;
	struct verdict v = {0};
	kf_judge_child_end(&as, status, rc, err.msg, phase,
			   s->proc.cpu_used_s, s->proc.cpu_soft_s, &v);
	kf_session_verdict(s, &v);
	return NULL;
}

/* KFORGE_SAMPLES=FILE appends one JSON line per evaluation timed: the
 * samples the unaccounted-time rule saw (the runners' reports and the
 * engine's views, ns) beside its statistics, to study the noise that sets
 * its limits (docs/measuring.md). One write per line, O_APPEND: parallel
 * evaluations may share the file. Quietly skipped when it cannot open. */
static void keep_samples(const struct kf_session_core *s, const double *c,
			 const double *r, const double *cw, const double *rw,
			 int n, const cJSON *tm)
{
	const char *path = getenv("KFORGE_SAMPLES");
	if (!path || !*path)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "task", s->task ? s->task->name : "");
	const char *cand =
	    kf_json_str(cJSON_GetObjectItem(s->res, "candidate"), "path");
	cJSON_AddStringToObject(o, "candidate", cand ? cand : "");
	cJSON_AddStringToObject(o, "backend", s->o->backend);
	cJSON_AddItemToObject(o, "cand_ns", cJSON_CreateDoubleArray(c, n));
	cJSON_AddItemToObject(o, "ref_ns", cJSON_CreateDoubleArray(r, n));
	cJSON_AddItemToObject(o, "cand_wall_ns",
			      cJSON_CreateDoubleArray(cw, n));
	cJSON_AddItemToObject(o, "ref_wall_ns", cJSON_CreateDoubleArray(rw, n));
	const cJSON *u = cJSON_GetObjectItem(tm, "unaccounted_ms");
	if (u)
		cJSON_AddItemToObject(o, "unaccounted_ms",
				      cJSON_Duplicate(u, true));
	char *line = kf_json_print(o);
	cJSON_Delete(o);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		size_t len = strlen(line);
		line[len] = '\n'; /* the terminator: written as the newline */
		(void)!write(fd, line, len + 1);
		close(fd);
	}
	free(line);
}

/* At most this many per-call times of each side are kept in the result
 * (timing.samples), evenly thinned: enough for the report's chart of
 * them, a bounded record. */
#define KF_SAMPLES_KEPT 256

/* timing.samples: the per-call times (ms, the charge included) the
 * summaries were made of, both sides, the pair index of each. */
static void add_samples(cJSON *tm, const double *c, const double *r, int n)
{
	if (!tm || n <= 0)
		return;
	cJSON *o = cJSON_CreateObject();
	int step = (n + KF_SAMPLES_KEPT - 1) / KF_SAMPLES_KEPT;
	cJSON *pair = cJSON_AddArrayToObject(o, "pair");
	cJSON *rm = cJSON_AddArrayToObject(o, "reference_ms");
	cJSON *cm = cJSON_AddArrayToObject(o, "candidate_ms");
	for (int i = 0; i < n; i += step) {
		cJSON_AddItemToArray(pair, cJSON_CreateNumber(i));
		cJSON_AddItemToArray(rm, cJSON_CreateNumber(r[i] / 1e6));
		cJSON_AddItemToArray(cm, cJSON_CreateNumber(c[i] / 1e6));
	}
	cJSON_AddNumberToObject(o, "n", n);
	cJSON_DeleteItemFromObject(tm, "samples");
	cJSON_AddItemToObject(tm, "samples", o);
}

bool kf_session_unaccounted(struct kf_session_core *s, double *c,
			    const double *r, const double *cw, const double *rw,
			    const double *fc, const double *fr, int n,
			    bool host, bool mean, bool trusted, cJSON *tm)
{
	struct verdict v = {0};
	double *each = kf_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
	kf_judge_unaccounted(c, r, cw, rw, n, host, mean, tm, &v, each);
	if (fc && fr && v.status == KF_STATUS_OK)
		kf_judge_checks_view(fc, fr, c, n, host, tm, &v);
	keep_samples(s, c, r, cw, rw, n, tm);
	for (int i = 0; i < n && !trusted; i++)
		c[i] += each[i];
	free(each);
	add_samples(tm, c, r, n);
	if (trusted)
		return false;
	if (v.status == KF_STATUS_OK)
		return false;
	kf_session_finish(s, v.status, v.check, v.reason);
	return true;
}

bool kf_session_unexpected(struct kf_session_core *s, cJSON *rep,
			   const char *want, const char *phase)
{
	const char *ev = kf_json_str(rep, "ev");
	if (ev && !strcmp(ev, want))
		return false;
	struct verdict v = {0};
	kf_judge_event(ev, kf_json_str(rep, "message"), phase, &v);
	kf_session_verdict(s, &v);
	cJSON_Delete(rep);
	return true;
}

/* The last bytes of the child's stderr (what the candidate printed), from
 * offset from on. */
static char *log_tail(int fd, off_t from)
{
	if (fd < 0)
		return kf_xstrdup("");
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > LOG_TAIL_BYTES ? end - LOG_TAIL_BYTES : 0;
	if (start < from)
		start = from < end ? from : end;
	char *buf = kf_xmalloc(LOG_TAIL_BYTES + 1);
	ssize_t n = pread(fd, buf, (size_t)(end - start), start);
	buf[n > 0 ? n : 0] = '\0';
	/* Whatever the candidate printed must not make the result JSON
	 * unreadable. */
	kf_text_sanitize(buf);
	return buf;
}

void kf_session_quit(struct kf_session_core *s)
{
	if (s->proc.pid <= 0 || s->quit_sent)
		return;
	cJSON *q = kf_request("quit");
	struct kf_err err = KF_ERR_INIT;
	kf_frame_write(s->proc.to_child, q, &err);
	cJSON_Delete(q);
	s->quit_sent = true;
}

void kf_session_close(struct kf_session_core *s)
{
	/* Either child's block is "worker": the bridge takes its place. */
	cJSON *w = cJSON_AddObjectToObject(s->res, "worker");
	if (s->kept) {
		cJSON_AddStringToObject(w, "exit", "kept for the next "
						   "evaluation");
		cJSON_AddNumberToObject(w, "maxrss_kib",
					(double)kf_proc_peak_kib(s->proc.pid));
		char *tail = log_tail(s->log_fd, (off_t)s->log_from);
		cJSON_AddStringToObject(w, "log", tail);
		free(tail);
		return;
	}
	if (s->proc.pid > 0) {
		kf_session_quit(s);
		kf_proc_wait(&s->proc, s->child->quit_wait_ms, &s->exit_status,
			     &s->maxrss_kib);
		s->reaped = true;
	}
	if (s->reaped) {
		char *d = kf_wait_describe(s->exit_status);
		cJSON_AddStringToObject(w, "exit", d);
		free(d);
	}
	cJSON_AddNumberToObject(w, "maxrss_kib", (double)s->maxrss_kib);
	char *tail = log_tail(s->log_fd, (off_t)s->log_from);
	cJSON_AddStringToObject(w, "log", tail);
	free(tail);
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
}

cJSON *kf_session_end(struct kf_session_core *s, const cJSON *device,
		      uint64_t start_ns)
{
	kf_session_close(s);
	/* A bridge that never loaded reports no toolchain. */
	if (!cJSON_GetObjectItem(s->res, "toolchain"))
		cJSON_AddStringToObject(s->res, "toolchain", "");
	cJSON *e = cJSON_CreateObject();
	kf_add_system(e, true);
	cJSON_AddItemToObject(e, "device",
			      device ? cJSON_Duplicate(device, 1)
				     : cJSON_CreateNull());
	cJSON_AddStringToObject(e, "compiler",
				kf_json_str(s->res, "toolchain"));
	cJSON_AddItemToObject(s->res, "environment", e);
	cJSON_AddNumberToObject(s->res, "seconds",
				(double)(kf_now_ns() - start_ns) / 1e9);
	cJSON *res = s->res;
	s->res = NULL;
	return res;
}

void kf_session_trial_done(struct kf_session_core *s, cJSON *tj,
			   struct verdict *v, cJSON *dims, uint64_t seed)
{
	cJSON_AddBoolToObject(tj, "passed", v->status == KF_STATUS_OK);
	cJSON_AddItemToArray(cJSON_GetObjectItem(s->res, "trials"), tj);
	if (v->status == KF_STATUS_OK || !v->failure) {
		cJSON_Delete(dims);
	} else {
		cJSON_AddItemToObject(v->failure, "dims", dims);
		kf_add_u64(v->failure, "seed", seed);
		cJSON_AddItemToObject(s->res, "failure", v->failure);
	}
	if (v->status != KF_STATUS_OK)
		kf_session_finish(s, v->status, v->check, v->reason);
}

void kf_timing_start(struct kf_timing *tg)
{
	memset(tg, 0, sizeof(*tg));
	tg->batch = 10;
	tg->warmup = 3;
	tg->t0_ns = kf_now_ns();
	for (int j = 0; j < KF_MAX_TENSORS; j++)
		tg->noise_rel[j] = -1;
	/* The check calls' key: fresh for every evaluation. */
	if (getrandom(&tg->check_key, sizeof(tg->check_key), 0) !=
	    (ssize_t)sizeof(tg->check_key))
		tg->check_key = kf_now_ns() ^ ((uint64_t)getpid() << 32);
}

void kf_timing_checks(struct kf_timing *tg, const struct trial_plan *plans,
		      int n)
{
	tg->check_plans = plans;
	tg->n_check_plans = n;
}

/* The next of this evaluation's draws (splitmix64 over its key). */
static uint64_t check_draw(struct kf_timing *tg)
{
	uint64_t z = tg->check_key + 0x9e3779b97f4a7c15ull * ++tg->check_ctr;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One check call at a place drawn among calls: drawn as the timed calls'
 * inputs are (p NULL), or like plan p, under a seed of its own. */
static void add_check(struct kf_timing *tg, const struct kf_task *t,
		      const struct trial_plan *p, int calls, cJSON *arr)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "at",
				(double)(check_draw(tg) % (uint64_t)calls));
	cJSON_AddStringToObject(c, "like", p ? "trial" : "timed");
	kf_add_u64(c, "seed", check_draw(tg) >> 2);
	if (p) {
		cJSON_AddNumberToObject(c, "trial", p->index);
		cJSON *d = cJSON_AddArrayToObject(c, "dists");
		for (int i = 0; i < (t ? t->n_inputs : 1); i++)
			cJSON_AddItemToArray(d,
					     cJSON_CreateNumber(p->dists[i]));
	}
	cJSON_AddItemToArray(arr, c);
	tg->checks++;
}

/* Adds the batch's check calls to a time request: KF_TIMING_CHECKS_TIMED
 * drawn as its timed calls' inputs are and KF_TIMING_CHECKS_TRIAL like a
 * plan drawn among the check plans, each at a place drawn among the
 * batch's calls (warm-ups counted). */
static int add_checks(struct kf_timing *tg, const struct kf_task *t,
		      cJSON *req)
{
	int calls = tg->batch + tg->warmup;
	if (tg->n_check_plans <= 0 || calls <= 0)
		return 0;
	cJSON *arr = cJSON_AddArrayToObject(req, "checks");
	for (int k = 0; k < KF_TIMING_CHECKS_TIMED; k++)
		add_check(tg, t, NULL, calls, arr);
	for (int k = 0; k < KF_TIMING_CHECKS_TRIAL; k++)
		add_check(tg, t,
			  &tg->check_plans[check_draw(tg) %
					   (uint64_t)tg->n_check_plans],
			  calls, arr);
	return KF_TIMING_CHECKS_TIMED + KF_TIMING_CHECKS_TRIAL;
}

int kf_timing_kb_checks(struct kf_timing *tg, int calls, cJSON *req)
{
	if (calls <= 0)
		return 0;
	cJSON *arr = cJSON_AddArrayToObject(req, "checks");
	for (int k = 0; k < KF_TIMING_CHECKS_KB; k++)
		add_check(tg, NULL, NULL, calls, arr);
	return KF_TIMING_CHECKS_KB;
}

void kf_timed_noise(const double *noise_rel, cJSON *frame)
{
	const cJSON *o;
	int j = 0;
	cJSON_ArrayForEach(
	    o, cJSON_GetObjectItem(cJSON_GetObjectItem(frame, "check"),
				   "outputs"))
	{
		if (j < KF_MAX_TENSORS && noise_rel[j] >= 0 &&
		    !cJSON_GetObjectItem(o, "l1_noise64"))
			cJSON_AddNumberToObject(
			    (cJSON *)o, "l1_noise64",
			    noise_rel[j] * kf_json_num(o, "l1_want", 0));
		j++;
	}
}

cJSON *kf_session_time_batch(struct kf_session_core *s, struct kf_timing *tg,
			     double slack_ms)
{
	tg->b0_ns = kf_now_ns();
	cJSON *req = kf_request("time");
	kf_add_u64(req, "seed", s->o->seed + 1000003u);
	cJSON_AddNumberToObject(req, "pairs", tg->batch);
	cJSON_AddNumberToObject(req, "warmup", tg->warmup);
	int checks = add_checks(tg, s->task, req);
	/* A pair is two calls; a check call two, and the reference's float64
	 * run on the bridge. */
	double ms = (tg->batch + tg->warmup + 2 * checks) * 2 * s->call_ms +
		    slack_ms;
	cJSON *rep = kf_session_exchange(s, req, ms, "timing");
	if (!rep || kf_session_unexpected(s, rep, "samples", "timing"))
		return NULL;
	const cJSON *ck;
	cJSON_ArrayForEach(ck, cJSON_GetObjectItem(rep, "checks"))
	{
		if (cJSON_IsTrue(cJSON_GetObjectItem(ck, "ref_before")))
			tg->checks_ref_first++;
	}
	const cJSON *fv = cJSON_GetObjectItem(rep, "fresh_values");
	const cJSON *fm = cJSON_GetObjectItem(rep, "fresh_moves_outputs");
	for (int i = 0; i < cJSON_GetArraySize(fv) && i < KF_MAX_TENSORS; i++) {
		double n = cJSON_GetArrayItem(fv, i)->valuedouble;
		if (n >= tg->fresh[i]) {
			tg->fresh[i] = n;
			tg->fresh_moves[i] =
			    cJSON_IsTrue(cJSON_GetArrayItem(fm, i));
		}
	}
	/* The timed outputs' yardstick: the trials' largest noise relative to
	 * the norm, scaled to the output (the bridge sends its own). */
	kf_timed_noise(tg->noise_rel, rep);
	struct verdict v = {0};
	kf_judge_samples(s->task, rep, &v);
	if (v.failure) /* a check call's, as a trial's */
		cJSON_AddItemToObject(s->res, "failure", v.failure);
	if (v.status != KF_STATUS_OK) {
		kf_session_finish(s, v.status, v.check, v.reason);
		cJSON_Delete(rep);
		return NULL;
	}
	return rep;
}

bool kf_timing_next(struct kf_timing *tg, const struct kf_eval_opts *o,
		    const double *c, const double *r, int n, int dropped)
{
	uint64_t now = kf_now_ns();
	double batch_s = (double)(now - tg->b0_ns) / 1e9;
	tg->elapsed = (double)(now - tg->t0_ns) / 1e9;
	tg->warmup = 0;
	if (n >= o->min_pairs && kf_half_width(c, n) <= o->ci_target &&
	    kf_half_width(r, n) <= o->ci_target) {
		tg->met = true;
		return false;
	}
	/* The cap ends sampling once min_pairs are in. Short of that only
	 * calls so slow that the measured time of the pairs taken (the two
	 * sides' samples, which other load on the machine does not lengthen)
	 * reaches four times the cap do: a busy machine's wall clock must not
	 * leave an evaluation with fewer pairs than a quiet one's. */
	double measured_s = 0;
	for (int i = 0; i < n; i++)
		measured_s += (c[i] + r[i]) / 1e9;
	/* Pairs dropped (a side said its device was throttled) count as
	 * taken: a runner that says so of every call kept an evaluation
	 * capped at 1 s timing for 421 s of CPU until the worker's limit
	 * killed it. */
	int taken = n + dropped;
	if ((tg->elapsed >= o->time_cap_s && taken >= o->min_pairs) ||
	    measured_s >= 4 * o->time_cap_s || taken >= o->max_pairs)
		return false;
	/* Aim the next batch at about a quarter of a second. */
	double per_pair = batch_s / tg->batch;
	int b = per_pair > 0 ? (int)(0.25 / per_pair) : 50;
	b = b < 2 ? 2 : b > 200 ? 200 : b;
	/* Each batch brings its check calls: not merged into fewer, larger
	 * ones (docs/design.md, check calls). */
	if (taken + b > o->max_pairs)
		b = o->max_pairs - taken;
	tg->batch = b < 1 ? 1 : b;
	return true;
}

cJSON *kf_timing_json(struct kf_session_core *s, const struct kf_timing *tg,
		      int n, int throttled)
{
	cJSON *tm = cJSON_AddObjectToObject(s->res, "timing");
	cJSON_AddStringToObject(tm, "protocol", "kforge");
	cJSON_AddStringToObject(tm, "unit", "ms");
	cJSON_AddNumberToObject(tm, "pairs", n);
	cJSON_AddNumberToObject(tm, "discarded_throttled", throttled);
	cJSON_AddNumberToObject(tm, "seconds", tg->elapsed);
	cJSON_AddNumberToObject(tm, "ci_target", s->o->ci_target);
	cJSON_AddNumberToObject(tm, "check_calls", tg->checks);
	cJSON_AddNumberToObject(tm, "check_calls_after_reference",
				tg->checks_ref_first);
	cJSON *fv = cJSON_AddArrayToObject(tm, "fresh_values");
	cJSON *fm = cJSON_AddArrayToObject(tm, "fresh_moves_outputs");
	for (int i = 0; i < s->task->n_inputs && i < KF_MAX_TENSORS; i++) {
		cJSON_AddItemToArray(fv, cJSON_CreateNumber(tg->fresh[i]));
		cJSON_AddItemToArray(fm, cJSON_CreateBool(tg->fresh_moves[i]));
	}
	return tm;
}

void kf_trial_outputs_json(cJSON *j, const cJSON *frame)
{
	cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
	const cJSON *fo;
	cJSON_ArrayForEach(fo, cJSON_GetObjectItem(frame, "outputs"))
	{
		cJSON *o = cJSON_CreateObject();
		static const char *const keys[] = {
		    "n",       "mismatches",  "unwritten",     "nan_got",
		    "inf_got", "max_abs",     "max_rel",       "l1_err",
		    "l1_want", "toward_zero", "away_from_zero"};
		cJSON_AddStringToObject(o, "name", kf_json_str(fo, "name"));
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			cJSON_AddNumberToObject(o, keys[k],
						kf_json_num(fo, keys[k], 0));
		/* The bridge's float noise of the reference (l1_noise64: its
		 * distance from its float64 run; l1_noise where the output is
		 * near zero and compared at that noise). */
		static const char *const noises[] = {"l1_noise", "l1_noise64"};
		for (size_t k = 0; k < 2; k++) {
			const cJSON *noise =
			    cJSON_GetObjectItem(fo, noises[k]);
			if (cJSON_IsNumber(noise))
				cJSON_AddNumberToObject(o, noises[k],
							noise->valuedouble);
		}
		/* Whether the second call on the same inputs gave the same
		 * bits (a task under determinism "tolerance" may pass
		 * without). */
		const char *c1 = kf_json_str(fo, "checksum_1");
		const char *c2 = kf_json_str(fo, "checksum_2");
		cJSON_AddBoolToObject(o, "second_call_identical",
				      c1 && c2 && !strcmp(c1, c2));
		cJSON_AddItemToArray(outs, o);
	}
	cJSON_AddNumberToObject(j, "ref_ms",
				kf_json_num(frame, "ref_ns", 0) / 1e6);
	cJSON_AddNumberToObject(j, "cand_ms",
				kf_json_num(frame, "cand_ns", 0) / 1e6);
}
