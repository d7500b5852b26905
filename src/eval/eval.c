/*
 * eval.c: one evaluation, supervised. Compiles, spawns a fresh worker under
 * rlimits, drives it phase by phase with a wall-clock deadline on each, hands
 * every frame to the judge, and assembles the result JSON. Whatever the
 * candidate does (crash, hang, exit) ends as a status in the result.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/compile.h>
#include <kforge/eval.h>
#include <kforge/task.h>

#include "eval_int.h"

/* The C worker: its runners may die by their sandbox (SIGSYS), and a
 * SIGKILL is most likely the hard CPU-time limit or the OOM killer. */
static const struct kf_child worker = {"worker", 5000, true, true};

struct session {
	struct kf_session_core core;
	int n_trials; /* trial_count: the option, raised to cover the task */
	double flush_bytes; /* what the host's cache flush walks, 0 if none */
	double overhead_ns[2]; /* each runner's own CPU time per call:
				  reference, candidate */
};

static cJSON *dims_json(const struct kf_task *t, int s)
{
	cJSON *d = cJSON_CreateObject();
	const int64_t *v = kf_task_dims(t, s);
	for (int i = 0; i < t->n_dims; i++)
		cJSON_AddNumberToObject(d, t->dim_names[i], (double)v[i]);
	return d;
}

static int compile_one(struct session *s, const char *path,
		       struct kf_compile_result *r, struct kf_err *err)
{
	struct kf_compile_opts co = {0};
	co.backend = s->core.o->backend;
	co.include_dir = s->core.o->include_dir;
	co.no_cache = s->core.o->no_cache;
	const struct kf_task *t = s->core.task;
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
	char *path = s->core.o->worker_path
			 ? kf_xstrdup(s->core.o->worker_path)
			 : kf_path_join(kf_exe_dir(), "kforge-worker");
	char *argv[] = {path, NULL, NULL, NULL};
	char *env = NULL, *pin = NULL;
	if (s->core.o->device >= 0 && !strcmp(s->core.o->backend, "cuda")) {
		/* Pinned to one GPU: CUDA_VISIBLE_DEVICES for the worker
		 * alone. */
		int rc = kf_session_pin(&s->core, &env, &pin, err);
		if (rc) {
			free(path);
			return rc;
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
	double checks_s = s->n_trials * 3.0 * s->core.call_ms / 1000.0;
	lim.cpu_s = checks_s + s->core.o->time_cap_s * 2 +
		    s->core.o->energy_s * 2 + 120;
	uint64_t mem = s->core.o->mem_limit_bytes
			   ? s->core.o->mem_limit_bytes
			   : default_mem_limit(s->core.task);
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
	if (!strcmp(s->core.o->backend, "host"))
		lim.as_bytes = mem;
#endif
	int rc = kf_session_spawn(&s->core, argv, &lim, err);
	free(path);
	free(env);
	free(pin);
	return rc;
}

/* Peak rates of this device, measured once and cached by device name. */
/*
 * The device's peaks, from the cache or measured by the probe in a worker
 * of its own. With prev (peaks that made a candidate look faster than the
 * hardware allows), the probe runs again whatever the cache holds and each
 * peak is the larger of the two measurements: a probe taken while the
 * machine was busy underestimates them.
 */
static cJSON *peaks_of(struct session *s, const char *name, const cJSON *prev)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_sha256 h;
	char hex[65], *path, *text = NULL;
	kf_sha256_init(&h);
	kf_sha256_update(&h, s->core.o->backend, strlen(s->core.o->backend));
	kf_sha256_update(&h, name ? name : "?", strlen(name ? name : "?"));
	/* Another probe measures other things: its peaks are its own. */
	const struct kf_backend_ops *pops = kf_backend_find(s->core.o->backend);
	if (pops && pops->probe_source)
		kf_sha256_update(&h, pops->probe_source,
				 strlen(pops->probe_source));
	kf_sha256_final_hex(&h, hex);
	hex[16] = '\0';
	char *dir = kf_path_join(kf_cache_dir(), "peaks");
	char *file = kf_xasprintf("%s-%s.json", s->core.o->backend, hex);
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
	const struct kf_backend_ops *ops = kf_backend_find(s->core.o->backend);
	if (!ops || !ops->probe_source || kf_mkdir_p(dir, &err))
		goto out;
	char *src_name = kf_xasprintf("probe-%s%s", ops->name, ops->probe_ext);
	char *src = kf_path_join(dir, src_name);
	free(src_name);
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_compile_opts co = {0};
	co.backend = s->core.o->backend;
	co.include_dir = s->core.o->include_dir;
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
		ps.core.proc = (struct kf_proc)KF_PROC_INIT;
		ps.core.res = cJSON_CreateObject();
		ps.core.done = ps.core.reaped = false;
		cJSON *rep = NULL;
		if (!spawn_worker(&ps, &err)) {
			cJSON *req = kf_request("peaks");
			cJSON_AddStringToObject(req, "probe", r.so_path);
			rep = kf_session_exchange(&ps.core, req, 120000,
						  "measuring peaks");
			kf_session_close(&ps.core);
		}
		if (ps.core.done || !rep)
			kf_log(KF_LOG_WARN,
			       "measuring the device's peaks failed: %s",
			       ps.core.done ? kf_json_str(ps.core.res, "reason")
					    : err.msg);
		cJSON_Delete(ps.core.res);
		const char *ev = rep ? kf_json_str(rep, "ev") : NULL;
		if (ev && !strcmp(ev, "peaks")) {
			static const char *const keys[] = {
			    "flops_per_s", "bytes_per_s", "matrix_flops_per_s"};
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

/* Trials enough that every distribution of every input meets every dim
 * set, the timing dims included: dim sets times the longest dist list, or
 * the option's count when that is more. A candidate that skips a clamp or
 * the max-subtraction only where it is timed meets the inputs that need
 * them there too. */
static int trial_count(const struct kf_task *t, int asked)
{
	int most = 1;
	for (int i = 0; i < t->n_inputs; i++)
		if (t->inputs[i].n_dists > most)
			most = t->inputs[i].n_dists;
	int need = t->n_dimsets * most;
	return need > asked ? need : asked;
}

static void plan_trials(const struct session *s, struct trial_plan *plans)
{
	const struct kf_task *t = s->core.task;
	for (int k = 0; k < s->n_trials; k++) {
		struct trial_plan *p = &plans[k];
		memset(p, 0, sizeof(*p));
		p->index = k;
		p->seed = s->core.o->seed + (uint64_t)k;
		/* Every dim set in turn; the distributions rotate against
		 * them: over dim sets times the longest list of trials, dim
		 * set d meets entries d, d+1, ... of every list, all of
		 * them. */
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
	kf_add_u64(j, "seed", p->seed);
	cJSON_AddBoolToObject(j, "hidden", p->dimset != 0);
	cJSON_AddItemToObject(j, "dims", dims_json(t, p->dimset));
	cJSON *d = cJSON_AddObjectToObject(j, "dists");
	for (int i = 0; i < t->n_inputs; i++) {
		const struct kf_tensor_spec *sp = &t->inputs[i];
		char *l = kf_dist_label(
		    t, &sp->dists[p->dists[i] % sp->n_dists], p->dimset);
		cJSON_AddStringToObject(d, sp->name, l);
		free(l);
	}
	kf_trial_outputs_json(j, frame);
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
	const struct kf_task *t = s->core.task;
	cJSON_AddArrayToObject(s->core.res, "trials");
	plan_trials(s, plans);
	for (int k = 0; k < s->n_trials && !s->core.done; k++) {
		struct trial_plan *p = &plans[k];
		cJSON *req = kf_request("trial");
		cJSON_AddNumberToObject(req, "index", k);
		kf_add_u64(req, "seed", p->seed);
		cJSON_AddNumberToObject(req, "dimset", p->dimset);
		cJSON *d = cJSON_AddArrayToObject(req, "dists");
		for (int i = 0; i < t->n_inputs; i++)
			cJSON_AddItemToArray(d,
					     cJSON_CreateNumber(p->dists[i]));
		char *label = kf_judge_trial_label(t, p);
		/* Three calls (reference, candidate twice) plus generating,
		 * comparing and hashing: 2 s and 1 us per element; and the
		 * cache flushes before the candidate's two calls, at 4 ns a
		 * byte (512 MiB of flush take about 0.5 s on an idle core). */
		double allowance = 2000 + 1e-3 * trial_elements(t, p->dimset) +
				   2 * s->flush_bytes * 4e-6;
		cJSON *rep = kf_session_exchange(
		    &s->core, req, 3 * s->core.call_ms + allowance, label);
		if (!rep) {
			free(label);
			return;
		}
		if (kf_session_unexpected(&s->core, rep, "trial", label)) {
			free(label);
			return;
		}
		free(label);
		struct verdict v = {0};
		kf_judge_trial(t, p, rep, &v);
		cJSON *tj = trial_json(t, p, rep);
		cJSON_AddItemToArray(frames, rep);
		kf_session_trial_done(&s->core, tj, &v, dims_json(t, p->dimset),
				      p->seed);
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

/*
 * Where each runner measured its own calls, the candidate's measurement
 * comes from its own process and could be forged: the judge holds it
 * against the worker's outside view of the same calls, charges the
 * candidate what that view saw beyond its report (adding it to every
 * candidate sample) and rejects a report it finds forged. Returns true
 * when the evaluation is over.
 */
static bool unaccounted(struct session *s, struct samples *sm, cJSON *tm)
{
	if (!sm->runner_ns)
		return false;
	return kf_session_unaccounted(
	    &s->core, sm->c, sm->r, sm->cw, sm->rw, NULL, NULL, sm->n,
	    !strcmp(s->core.o->backend, "host"), false, false, tm);
}

/* The roofline block (key in the result: "roofline", or
 * "roofline_kernelbench" for KernelBench's protocol beside kforge's): the
 * candidate's time against the device's peaks. Tasks over float16/bfloat16
 * inputs are held to the matrix (tensor core) rate where the device has
 * one, the others to the FMA rate. where names the protocol in the
 * verdict's reason. */
static bool roofline(struct session *s, const cJSON *peak, double cand_ns,
		     double ref_ns, bool final, const char *key,
		     const char *where)
{
	bool implausible = false;
	const struct kf_task *t = s->core.task;
	double flops = kf_task_flops(t, 0), bytes = kf_task_bytes(t, 0);
	bool half = false;
	for (int i = 0; i < t->n_inputs; i++)
		half = half || t->inputs[i].dtype == KF_F16 ||
		       t->inputs[i].dtype == KF_BF16;
	double pf = kf_json_num(peak, "flops_per_s", 0);
	double pm = kf_json_num(peak, "matrix_flops_per_s", 0);
	double pb = kf_json_num(peak, "bytes_per_s", 0);
	bool use_matrix = half && pm > pf;
	const char *unit = use_matrix ? "matrix" : "fma";
	/* The compute term takes the device's fastest units, so that fp32
	 * work done exactly on tensor cores (3xTF32 and the like) is not
	 * mistaken for a hack; on the host those of the inputs' dtype. */
	double fastest = fmax(pf, pm);
	if (!strcmp(s->core.o->backend, "host")) {
		unsigned feat = kf_host_cpu_features();
		double fma = pf;
		for (int i = 0; i < t->n_inputs; i++) {
			const char *u;
			double p = kf_judge_host_compute_peak(
			    t->inputs[i].dtype, feat, fma, pm, &u);
			if (p > pf) {
				pf = p;
				unit = u;
			}
		}
		fastest = pf;
	} else if (use_matrix) {
		pf = pm;
	}
	cJSON *rf = cJSON_AddObjectToObject(s->core.res, key);
	cJSON_AddNumberToObject(rf, "flops", flops);
	cJSON_AddNumberToObject(rf, "bytes", bytes);
	cJSON_AddStringToObject(rf, "compute_peak", unit);
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
		 * not all done. */
		struct verdict v = {0};
		kf_judge_roofline(where, cand_ns, flops, bytes, fastest, pb,
				  &v);
		implausible = v.status != KF_STATUS_OK;
		if (implausible && final)
			kf_session_finish(&s->core, v.status, v.check,
					  v.reason);
	} else {
		cJSON_AddNullToObject(rf, "bound");
	}
	return implausible;
}

/* The roofline check of a protocol's candidate time: the peaks measured
 * again before a candidate is called implausible (they may have been
 * probed on a busy machine). */
static void roofline_checked(struct session *s, const cJSON *peak,
			     double cand_ns, double ref_ns, const char *key,
			     const char *where)
{
	if (!roofline(s, peak, cand_ns, ref_ns, false, key, where))
		return;
	cJSON *again = peaks_of(s, kf_json_str(peak, "device"), peak);
	cJSON_DeleteItemFromObject(s->core.res, key);
	roofline(s, again ? again : peak, cand_ns, ref_ns, true, key, where);
	cJSON_Delete(again);
}

/* Joules per call of each side, where the device counts energy: each side
 * runs for opts->energy_s, so the watchdog allows twice that beyond the
 * usual minute. */
static void energy(struct session *s)
{
	cJSON *req = kf_request("energy");
	cJSON_AddNumberToObject(req, "seconds", s->core.o->energy_s);
	double ms =
	    60000 + 2 * 2 * 1000 * s->core.o->energy_s + 40 * s->core.call_ms;
	cJSON *rep = kf_session_exchange(&s->core, req, ms, "energy");
	if (!rep)
		return;
	const char *ev = kf_json_str(rep, "ev");
	if (ev && !strcmp(ev, "energy")) {
		cJSON *e = cJSON_AddObjectToObject(s->core.res, "energy");
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
		struct verdict v = {0};
		kf_judge_event(ev, kf_json_str(rep, "message"), NULL, &v);
		kf_session_verdict(&s->core, &v);
	}
	cJSON_Delete(rep);
}

/* Per output, the trials' largest float noise of the reference relative
 * to its norm (< 0: none measured), the yardstick of the timed outputs'
 * measured-noise rule. */
static void trials_noise(const cJSON *frames, double *noise_rel)
{
	for (int j = 0; j < KF_MAX_TENSORS; j++)
		noise_rel[j] = -1;
	const cJSON *f;
	cJSON_ArrayForEach(f, frames)
	{
		const cJSON *o;
		int j = 0;
		cJSON_ArrayForEach(o, cJSON_GetObjectItem(f, "outputs"))
		{
			double n = kf_json_num(o, "l1_noise64", -1);
			double w = kf_json_num(o, "l1_want", 0);
			if (j < KF_MAX_TENSORS && n >= 0 && w > 0 &&
			    n / w > noise_rel[j])
				noise_rel[j] = n / w;
			j++;
		}
	}
}

static void run_timing(struct session *s, const cJSON *peak,
		       const struct trial_plan *plans, const cJSON *frames)
{
	struct samples sm = {0};
	sm.kernels = sm.streams = -1;
	struct kf_timing tg;
	kf_timing_start(&tg);
	/* The trial-like check calls draw their inputs like the trials at
	 * the timing dims (a timing set holds no other shape): every
	 * distribution of every input is among them (plan_trials). */
	struct trial_plan *cp =
	    kf_xcalloc((size_t)s->n_trials + 1, sizeof(*cp));
	int ncp = 0;
	for (int k = 0; k < s->n_trials; k++)
		if (plans[k].dimset == 0)
			cp[ncp++] = plans[k];
	kf_timing_checks(&tg, cp, ncp);
	trials_noise(frames, tg.noise_rel);
	while (!s->core.done) {
		/* Generating, comparing and hashing: 2 s and 1 us per
		 * element. */
		cJSON *rep = kf_session_time_batch(
		    &s->core, &tg,
		    2000 + 1e-3 * trial_elements(s->core.task, 0));
		if (!rep)
			break;
		samples_add(&sm, rep);
		cJSON_Delete(rep);
		if (!kf_timing_next(&tg, s->core.o, sm.c, sm.r, sm.n,
				    sm.throttled))
			break;
	}
	if (!s->core.done) {
		struct verdict v = {0};
		kf_judge_throttled(sm.n, sm.throttled, &v);
		if (v.status != KF_STATUS_OK)
			kf_session_finish(&s->core, v.status, v.check,
					  v.reason);
	}
	if (s->core.done || sm.n == 0)
		goto out;
	cJSON *tm = kf_timing_json(&s->core, &tg, sm.n, sm.throttled);
	/* What each runner costs per call on its own (CPU time; on the host
	 * it is taken out of every sample). */
	cJSON *ov = cJSON_AddObjectToObject(tm, "runner_overhead_ms");
	cJSON_AddNumberToObject(ov, "reference", s->overhead_ns[0] / 1e6);
	cJSON_AddNumberToObject(ov, "candidate", s->overhead_ns[1] / 1e6);
	if (unaccounted(s, &sm, tm))
		goto out;
	kf_pairs_json(tm, sm.c, sm.r, sm.n, tg.met);
	struct kf_summary cm, rm, mz;
	kf_summarize(sm.c, sm.n, &cm);
	kf_summarize(sm.r, sm.n, &rm);
	kf_summarize(sm.mhz, sm.n, &mz);
	cJSON_AddNumberToObject(tm, "sm_clock_mhz", mz.median);
	cJSON_AddNumberToObject(tm, "candidate_kernels", sm.kernels);
	cJSON_AddNumberToObject(tm, "candidate_streams", sm.streams);
	roofline_checked(s, peak, cm.median, rm.median, "roofline", "timing");
	const struct kf_backend_ops *ops = kf_backend_find(s->core.o->backend);
	if (ops->energy_mj && s->core.o->energy_s > 0 && !s->core.done)
		energy(s);
out:
	samples_release(&sm);
	free(cp);
}

/*
 * KernelBench's timing protocol, beside kforge's: each side on its own, 3
 * synchronised warm-ups then 101 calls each after a flush, timed by events
 * on the side's stream, the first dropped, summarised by the mean. Every
 * call of the candidate is compared with the reference's on its inputs,
 * and judged as under kforge's protocol: the timed outputs' precision
 * against the trials' noise, and KF_TIMING_CHECKS_KB check calls among
 * them drawn as their inputs are. key is "timing" when it is the only
 * protocol, else "timing_kernelbench".
 */
static void run_timing_kb(struct session *s, const cJSON *peak, const char *key,
			  const cJSON *frames)
{
	static const char *const sides[2] = {"candidate", "reference"};
	double mean[2] = {0, 0}, noise_rel[KF_MAX_TENSORS];
	cJSON *tm = cJSON_CreateObject();
	cJSON_AddStringToObject(tm, "protocol", "kernelbench");
	cJSON_AddStringToObject(tm, "unit", "ms");
	uint64_t t0 = kf_now_ns();
	struct kf_timing tg; /* for the check calls' draws */
	kf_timing_start(&tg);
	trials_noise(frames, noise_rel);
	for (int i = 0; i < 2 && !s->core.done; i++) {
		cJSON *req = kf_request("time_kb");
		kf_add_u64(req, "seed", s->core.o->seed + 1000003u);
		cJSON_AddStringToObject(req, "side", sides[i]);
		/* A check call is the candidate's and two of the
		 * reference's. */
		int checks = i == 0 ? kf_timing_kb_checks(&tg, 104, req) : 0;
		cJSON *rep = kf_session_exchange(
		    &s->core, req,
		    (104 * 2 + 3 * checks) * s->core.call_ms + 5000,
		    "timing (kernelbench)");
		if (!rep || kf_session_unexpected(&s->core, rep, "samples_kb",
						  "timing (kernelbench)"))
			break;
		kf_timed_noise(noise_rel, rep);
		struct verdict v = {0};
		kf_judge_samples_kb(s->core.task, rep, &v);
		if (v.failure) /* a check call's, as a trial's */
			cJSON_AddItemToObject(s->core.res, "failure",
					      v.failure);
		if (v.status != KF_STATUS_OK)
			kf_session_finish(&s->core, v.status, v.check,
					  v.reason);
		const cJSON *ns = cJSON_GetObjectItem(rep, "ns");
		int n = cJSON_GetArraySize(ns);
		double *x = kf_xmalloc(sizeof(double) * (size_t)(n ? n : 1));
		for (int k = 0; k < n; k++)
			x[k] = num_at(ns, k, 0);
		if (n > 0 && !s->core.done) {
			kf_summary_json(tm, sides[i], x, n, 1e-6);
			struct kf_summary m;
			kf_summarize(x, n, &m);
			mean[i] = m.mean;
		}
		free(x);
		cJSON_Delete(rep);
	}
	if (s->core.done || mean[0] <= 0) {
		cJSON_Delete(tm);
		return;
	}
	/* KernelBench's speedup: the ratio of the two means. */
	cJSON_AddNumberToObject(tm, "speedup", mean[1] / mean[0]);
	cJSON_AddNumberToObject(tm, "check_calls", tg.checks);
	cJSON_AddNumberToObject(tm, "seconds",
				(double)(kf_now_ns() - t0) / 1e9);
	cJSON_AddItemToObject(s->core.res, key, tm);
	/* No faster than the hardware allows, under this protocol too. */
	bool only = !strcmp(key, "timing");
	roofline_checked(s, peak, mean[0], mean[1],
			 only ? "roofline" : "roofline_kernelbench",
			 "timing (kernelbench)");
}

/* Records the hidden sets under "task", once the evaluation is over:
 * hidden_dims (every hidden set checked, fixed and drawn) and
 * hidden_drawn (how many of them were drawn for this evaluation). */
static void hidden_json(struct session *s)
{
	const struct kf_task *t = s->core.task;
	cJSON *tj = cJSON_GetObjectItem(s->core.res, "task");
	if (!tj)
		return;
	cJSON *h = cJSON_AddArrayToObject(tj, "hidden_dims");
	for (int d = 1; d < t->n_dimsets; d++)
		cJSON_AddItemToArray(h, dims_json(t, d));
	cJSON_AddNumberToObject(tj, "hidden_drawn",
				t->n_dimsets - t->n_fixed_dimsets);
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

/* The options of an evaluation checked, defaulted and seeded into *o: 0,
 * or a negative code with err set (exit 2: nothing was evaluated). */
static int eval_opts(const char *task_path, const struct kf_eval_opts *opts,
		     struct kf_eval_opts *o, struct kf_err *err)
{
	static const struct kf_eval_opts defaults = KF_EVAL_OPTS_INIT;
	*o = opts ? *opts : defaults;
	if (o->seed == 0)
		o->seed = random_seed();
	if (o->trials < 5)
		return kf_err_set(err, KF_EINVAL,
				  "--trials: at least 5 trials are needed "
				  "(got %d)",
				  o->trials);
	if (!kf_backend_find(o->backend))
		return kf_err_set(err, KF_EINVAL,
				  "--backend: unknown backend '%s' (expected "
				  "host or cuda)",
				  o->backend);
	if (!(o->energy_s >= 0 && o->energy_s <= KF_ENERGY_MAX_S))
		return kf_err_set(err, KF_EINVAL,
				  "--energy-time: %g is out of range (0 to "
				  "%g seconds; 0 skips energy)",
				  o->energy_s, KF_ENERGY_MAX_S);
	if (o->protocol && strcmp(o->protocol, "kforge") &&
	    strcmp(o->protocol, "kernelbench") && strcmp(o->protocol, "both"))
		return kf_err_set(err, KF_EINVAL,
				  "--protocol: unknown protocol '%s' (expected "
				  "kforge, kernelbench or both)",
				  o->protocol);
	const struct kf_backend_ops *ops = kf_backend_find(o->backend);
	if (ops->available && ops->available(err))
		return err->code;
	if (o->baseline)
		return check_baseline(task_path, o->baseline, err);
	return 0;
}

int kf_eval_open(const char *task_path, const char *candidate_path,
		 const struct kf_eval_opts *opts, struct kf_eval_pending **p,
		 struct kf_err *err)
{
	*p = NULL;
	struct kf_eval_opts o;
	int rc = eval_opts(task_path, opts, &o, err);
	if (rc)
		return rc;
	if (!kf_task_is_kernelbench(task_path))
		return kf_err_set(err, KF_EINVAL,
				  "%s: not a KernelBench-format task: only "
				  "those are evaluated in two steps",
				  task_path);
	return kf_eval_bridge_open(task_path, candidate_path, &o, p, err);
}

void kf_eval_measure(struct kf_eval_pending *p, int core)
{
	kf_eval_bridge_measure(p, core);
}

int kf_eval_finish(struct kf_eval_pending *p, int core, cJSON **result)
{
	return kf_eval_bridge_finish(p, core, result);
}

void kf_eval_discard(struct kf_eval_pending *p)
{
	kf_eval_bridge_discard(p);
}

int kf_eval(const char *task_path, const char *candidate_path,
	    const struct kf_eval_opts *opts, cJSON **result, struct kf_err *err)
{
	struct session s;
	memset(&s, 0, sizeof(s));
	struct kf_eval_opts seeded;
	int rc = eval_opts(task_path, opts, &seeded, err);
	if (rc)
		return rc;
	kf_session_core_init(&s.core, &worker, &seeded);
	uint64_t start = kf_now_ns();
	struct kf_compile_result rr = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result cr = KF_COMPILE_RESULT_INIT;
	struct trial_plan *plans = NULL;
	cJSON *frames = NULL, *device = NULL, *peak = NULL;
	char *ref_path = NULL;

	if (kf_task_is_kernelbench(task_path)) /* the PyTorch bridge's */
		return kf_eval_bridge(task_path, candidate_path, s.core.o,
				      result, err);
	rc = kf_task_load(task_path, &s.core.task, err);
	if (rc)
		return rc;
	kf_task_select_backend(s.core.task, s.core.o->backend);
	/* Hidden sets of this evaluation's own, from its secret seed. */
	rc = kf_task_draw_hidden(s.core.task, s.core.o->seed, err);
	if (rc)
		goto fail;
	s.n_trials = trial_count(s.core.task, s.core.o->trials);
	if (!kf_file_exists(candidate_path)) {
		rc = kf_err_set(err, KF_ENOENT, "%s: no such file",
				candidate_path);
		goto fail;
	}
	ref_path = kf_task_reference(s.core.task, s.core.o->backend, err);
	if (!ref_path) {
		rc = err->code ? err->code : KF_ENOENT;
		goto fail;
	}
	s.core.call_ms = s.core.o->call_timeout_ms > 0
			     ? s.core.o->call_timeout_ms
			     : s.core.task->call_timeout_ms;

	cJSON *tj = kf_session_result_open(&s.core);
	cJSON_AddItemToObject(tj, "dims", dims_json(s.core.task, 0));
	cJSON_AddNumberToObject(tj, "flops", kf_task_flops(s.core.task, 0));
	cJSON_AddNumberToObject(tj, "bytes", kf_task_bytes(s.core.task, 0));
	kf_session_result_candidate(&s.core, candidate_path, candidate_path);

	rc = compile_one(&s, ref_path, &rr, err);
	if (!rc && !rr.ok)
		rc = kf_err_set(err, KF_EINVAL,
				"%s: the reference does not compile: %s",
				ref_path, rr.log ? rr.log : "");
	if (rc)
		goto fail;
	if (s.core.o->compiled)
		kf_compile_result_copy(&cr, s.core.o->compiled);
	else
		rc = compile_one(&s, candidate_path, &cr, err);
	if (rc)
		goto fail;
	cJSON *comp = cJSON_AddObjectToObject(s.core.res, "compile");
	kf_compile_json(comp, "candidate", &cr, !cr.ok);
	kf_compile_json(comp, "reference", &rr, false);
	cJSON_AddStringToObject(s.core.res, "toolchain",
				cr.toolchain ? cr.toolchain : "");
	if (!cr.ok) {
		kf_session_compile_failed(&s.core, &cr, candidate_path);
		goto done;
	}

	if (kf_session_link_policy(&s.core, cr.so_path, candidate_path))
		goto done;
	if (spawn_worker(&s, err)) {
		kf_session_finish(&s.core, KF_STATUS_INFRA_ERROR, "spawn",
				  err->msg);
		goto done;
	}
	cJSON *req = kf_request("load");
	cJSON_AddStringToObject(req, "backend", s.core.o->backend);
	cJSON_AddStringToObject(req, "task", s.core.task->path);
	cJSON_AddStringToObject(req, "reference", rr.so_path);
	cJSON_AddStringToObject(req, "candidate", cr.so_path);
	cJSON *hid = cJSON_AddArrayToObject(req, "hidden");
	for (int d = s.core.task->n_fixed_dimsets; d < s.core.task->n_dimsets;
	     d++) {
		const int64_t *v = kf_task_dims(s.core.task, d);
		cJSON *a = cJSON_CreateArray();
		for (int i = 0; i < s.core.task->n_dims; i++)
			cJSON_AddItemToArray(a,
					     cJSON_CreateNumber((double)v[i]));
		cJSON_AddItemToArray(hid, a);
	}
	cJSON *rep = kf_session_exchange(&s.core, req, 60000, "loading");
	if (!rep)
		goto done;
	const char *ev = kf_json_str(rep, "ev");
	if (!ev || strcmp(ev, "load_error")) {
		if (kf_session_unexpected(&s.core, rep, "loaded", "loading"))
			goto done;
	} else {
		struct verdict v = {0};
		kf_judge_load(kf_json_str(rep, "what"), candidate_path, NULL,
			      kf_json_str(rep, "message"), &v);
		kf_session_verdict(&s.core, &v);
		cJSON_Delete(rep);
		goto done;
	}
	device = cJSON_DetachItemFromObject(rep, "device");
	s.flush_bytes = kf_json_num(device, "flush_bytes", 0);
	const cJSON *ov = cJSON_GetObjectItem(rep, "runner_overhead_ns");
	s.overhead_ns[0] = kf_json_num(ov, "reference", 0);
	s.overhead_ns[1] = kf_json_num(ov, "candidate", 0);
	cJSON_Delete(rep);

	frames = cJSON_CreateArray();
	plans = kf_xcalloc((size_t)s.n_trials, sizeof(*plans));
	run_trials(&s, frames, plans);
	if (s.core.done)
		goto done;
	kf_judge_degenerate(s.core.task, plans, frames, s.core.res);
	if (!s.core.o->no_timing) {
		const char *proto =
		    s.core.o->protocol ? s.core.o->protocol : "kforge";
		bool kb = !strcmp(proto, "kernelbench");
		peak = peaks(&s, device);
		if (!kb && !s.core.done)
			run_timing(&s, peak, plans, frames);
		if (!s.core.done && (kb || !strcmp(proto, "both")))
			run_timing_kb(&s, peak,
				      kb ? "timing" : "timing_kernelbench",
				      frames);
	}
done:
	hidden_json(&s);
	*result = kf_session_end(&s.core, device, start);
	rc = 0;
fail:
	cJSON_Delete(s.core.res);
	cJSON_Delete(frames);
	cJSON_Delete(device);
	cJSON_Delete(peak);
	free(plans);
	free(ref_path);
	kf_compile_result_release(&rr);
	kf_compile_result_release(&cr);
	kf_task_free(s.core.task);
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
