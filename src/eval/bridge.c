/*
 * bridge.c: evaluations of KernelBench-format tasks (a Python file with
 * Model, get_inputs, get_init_inputs). The PyTorch bridge (runner/) takes
 * the worker's place and speaks its protocol; the judge is the same.
 */
#include <math.h>
#include <poll.h>
#include <pthread.h>
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

/* Loading imports torch and the candidate, whose load_inline may run nvcc
 * for minutes. */
#define LOAD_DEADLINE_MS 900000.0
/* KernelBench's number of correctness trials. */
#define KB_TRIALS 5
/* KernelBench's timed calls per side; the first is dropped. */
#define KB_CALLS 101

const char *const kf_baseline_names[] = {"eager", "compile", "compile_ro",
					 "cudagraph", NULL};

/* The PyTorch bridge in the worker's place: no sandbox of its own. */
static const struct kf_child bridge = {"bridge", 10000, false, false};
/* A prebuild's builds: as long as one evaluation's load may take. */
#define PREBUILD_MS ((int)LOAD_DEADLINE_MS)

struct bsession {
	struct kf_session_core core;
	const char *cand_path; /* NULL for a baseline (o->baseline) */
	char *cand_label;      /* cand_path, or "baseline:NAME" (owned) */
	bool kb_checks;	       /* KernelBench's correctness, not kforge's */
	const char *kernel;    /* a compiled kforge candidate (kf_entry), or
				  NULL for a ModelNew file */
	double flops, bytes;   /* the task's own counts, 0 when it has none */
	double ref_paired;     /* the largest median of the reference's timed
				  calls beside the candidate, ns */
};

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

char *kf_eval_python(struct kf_err *err)
{
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	return find_python(&o, err);
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

static int spawn_bridge(struct bsession *s, const char *python,
			const char *script, struct kf_err *err)
{
	int rc = 0;
	/* -B: no bytecode files beside the task or the candidate. */
	char *argv[] = {(char *)python, "-B", (char *)script, NULL, NULL, NULL};
	char *env = NULL, *pin = NULL;
	if (s->core.o->device >= 0 && !strcmp(s->core.o->backend, "cuda")) {
		rc = kf_session_pin(&s->core, &env, &pin, err);
		if (rc)
			return rc;
		char *const pinned[] = {
		    env, pin, (char *)python, "-B", (char *)script, NULL};
		memcpy(argv, pinned, sizeof(pinned));
	}
	struct kf_limits lim = {0};
	lim.no_core = 1;
	lim.cpu_s = LOAD_DEADLINE_MS / 1000 +
		    s->core.o->trials * 3.0 * s->core.call_ms / 1000.0 +
		    s->core.o->time_cap_s * 2 + 600;
	rc = kf_session_spawn(&s->core, argv, &lim, err);
	free(env);
	free(pin);
	return rc;
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

static cJSON *trial_json(const struct kf_task *t, const struct trial_plan *p,
			 const cJSON *frame)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "index", p->index);
	kf_add_u64(j, "seed", p->seed);
	cJSON_AddBoolToObject(j, "hidden", false);
	cJSON_AddObjectToObject(j, "dims");
	cJSON *d = cJSON_AddObjectToObject(j, "dists");
	for (int i = 0; i < t->n_inputs; i++)
		cJSON_AddStringToObject(d, t->inputs[i].name,
					p->dists[i] == 2
					    ? "get_inputs_reshaped_wide"
					: p->dists[i] ? "get_inputs_reshaped"
						      : "get_inputs");
	kf_trial_outputs_json(j, frame);
	return j;
}

static void run_trials(struct bsession *s, int n, cJSON *frames,
		       struct trial_plan *plans)
{
	const struct kf_task *t = s->core.task;
	cJSON_AddArrayToObject(s->core.res, "trials");
	for (int k = 0; k < n && !s->core.done; k++) {
		struct trial_plan *p = &plans[k];
		memset(p, 0, sizeof(*p));
		p->index = k;
		p->seed = s->core.o->seed + (uint64_t)k;
		/* kforge's protocol alternates the inputs of get_inputs()
		 * and the same with their values reshaped (the bridge's
		 * reshaped(): zeros, signs, order and ties kept), every
		 * second reshaping with a range at least twice as wide. */
		int dist = s->kb_checks || k % 2 == 0 ? 0 : k % 4 == 3 ? 2 : 1;
		for (int i = 0; i < t->n_inputs; i++)
			p->dists[i] = dist;
		cJSON *req = kf_request("trial");
		cJSON_AddNumberToObject(req, "index", k);
		kf_add_u64(req, "seed", p->seed);
		cJSON_AddNumberToObject(req, "dimset", 0);
		cJSON_AddNumberToObject(req, "near_zero", KF_BRIDGE_NEAR_ZERO);
		cJSON *d = cJSON_AddArrayToObject(req, "dists");
		cJSON_AddItemToArray(d, cJSON_CreateNumber(dist));
		/* --require-custom-kernel: the first trial's untimed call
		 * counts what forward calls of the candidate's own code. */
		bool probe = k == 0 && s->core.o->require_custom_kernel &&
			     !s->kernel && !s->core.o->baseline;
		if (probe)
			cJSON_AddBoolToObject(req, "probe_custom", true);
		char *label = kf_judge_trial_label(t, p);
		cJSON *rep = kf_session_exchange(
		    &s->core, req, 3 * s->core.call_ms + 30000, label);
		if (!rep ||
		    kf_session_unexpected(&s->core, rep, "trial", label)) {
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
		kf_judge_bridge_trial(t, p, rep, s->kb_checks, label, &v);
		if (probe && v.status == KF_STATUS_OK)
			kf_judge_custom_calls(
			    cJSON_GetObjectItem(rep, "custom_calls"), label, &v);
		free(label);
		cJSON *tj = trial_json(t, p, rep);
		cJSON_AddItemToArray(frames, rep);
		/* A KernelBench task has no dims. */
		kf_session_trial_done(&s->core, tj, &v, cJSON_CreateObject(),
				      p->seed);
	}
}

/* The raw numbers of timed calls: each runner's own measurement (c, r)
 * and the judge's view of the same call from outside (cw, rw), in ns. */
struct bsamples {
	double *c, *r, *cw, *rw;
	/* The judge's view of each runner's checks after the call (a
	 * request of their own; view_clock), and whether every pair so far
	 * had them: else they are not judged. */
	double *fc, *fr;
	bool facts_apart;
	int n, cap;
	const char *ns_clock, *view_clock; /* as the bridge named them */
};

/* Adds the pairs of a samples frame (as many as all four arrays hold). */
static void bsamples_add(struct bsamples *sm, const cJSON *rep)
{
	const cJSON *a[6] = {cJSON_GetObjectItem(rep, "cand_ns"),
			     cJSON_GetObjectItem(rep, "ref_ns"),
			     cJSON_GetObjectItem(rep, "cand_wall_ns"),
			     cJSON_GetObjectItem(rep, "ref_wall_ns"),
			     cJSON_GetObjectItem(rep, "cand_facts_ns"),
			     cJSON_GetObjectItem(rep, "ref_facts_ns")};
	int n = cJSON_GetArraySize(a[0]);
	for (int k = 1; k < 4; k++)
		if (cJSON_GetArraySize(a[k]) < n)
			n = cJSON_GetArraySize(a[k]);
	/* The checks' views, where every pair of this frame has them (and
	 * every earlier frame's had). */
	bool apart = cJSON_GetArraySize(a[4]) >= n &&
		     cJSON_GetArraySize(a[5]) >= n;
	if (n > 0)
		sm->facts_apart = (sm->n == 0 || sm->facts_apart) && apart;
	const char *nc = kf_json_str(rep, "ns_clock");
	const char *vc = kf_json_str(rep, "view_clock");
	/* Static strings: the frame is freed before the samples are. */
	sm->ns_clock = "?";
	if (nc)
		sm->ns_clock =
		    !strcmp(nc, "thread_cpu") ? "thread_cpu" : "cuda_event";
	sm->view_clock = "?";
	if (vc)
		sm->view_clock =
		    !strcmp(vc, "process_cpu") ? "process_cpu" : "wall";
	for (int i = 0; i < n; i++) {
		if (sm->n == sm->cap) {
			sm->cap = sm->cap ? sm->cap * 2 : 128;
			size_t b = sizeof(double) * (size_t)sm->cap;
			sm->c = kf_xrealloc(sm->c, b);
			sm->r = kf_xrealloc(sm->r, b);
			sm->cw = kf_xrealloc(sm->cw, b);
			sm->rw = kf_xrealloc(sm->rw, b);
			sm->fc = kf_xrealloc(sm->fc, b);
			sm->fr = kf_xrealloc(sm->fr, b);
		}
		double *d[6] = {sm->c, sm->r, sm->cw, sm->rw, sm->fc, sm->fr};
		for (int k = 0; k < (apart ? 6 : 4); k++) {
			const cJSON *v = cJSON_GetArrayItem(a[k], i);
			d[k][sm->n] = cJSON_IsNumber(v) ? v->valuedouble : 0;
		}
		sm->n++;
	}
}

static void bsamples_release(struct bsamples *sm)
{
	free(sm->c);
	free(sm->r);
	free(sm->cw);
	free(sm->rw);
	free(sm->fc);
	free(sm->fr);
}

/*
 * The unaccounted-time rule over the bridge's raw numbers, the judge's
 * (kf_judge_unaccounted): on the host each runner reports its call's
 * thread CPU time and the judge process reads the runner process's CPU
 * time from outside, from its reply before the call's staging to its reply
 * to the call (the CPU-time rule, charged); on CUDA events against the
 * wall time of the requests (the lower-decile rule). Adds "unaccounted_ms"
 * to the timing block tm and the charge to every candidate sample; true
 * (the final status set) when the report was forged.
 */
static bool bridge_unaccounted(struct bsession *s, cJSON *tm,
			       struct bsamples *sm, bool mean)
{
	/* Baselines are kforge's own code: their processes forge nothing. */
	bool apart = sm->facts_apart && sm->n > 0;
	bool done = kf_session_unaccounted(
	    &s->core, sm->c, sm->r, sm->cw, sm->rw, apart ? sm->fc : NULL,
	    apart ? sm->fr : NULL, sm->n,
	    !strcmp(sm->view_clock, "process_cpu"), mean, s->core.o->baseline,
	    tm);
	cJSON *u = cJSON_GetObjectItem(tm, "unaccounted_ms");
	if (u)
		cJSON_AddStringToObject(u, "view_clock", sm->view_clock);
	return done;
}

/* Adds the raw per-call numbers to the timing block, for the judge's
 * shared rule and for a reader: the clocks they were read on. */
static void raw_json(cJSON *tm, const struct bsamples *sm)
{
	cJSON *raw = cJSON_AddObjectToObject(tm, "raw");
	cJSON_AddStringToObject(raw, "ns_clock", sm->ns_clock);
	cJSON_AddStringToObject(raw, "view_clock", sm->view_clock);
	struct kf_summary x;
	const double *v[4] = {sm->c, sm->r, sm->cw, sm->rw};
	const char *k[4] = {"candidate_ms", "reference_ms", "candidate_view_ms",
			    "reference_view_ms"};
	for (int i = 0; i < 4; i++) {
		kf_summarize(v[i], sm->n, &x);
		cJSON_AddNumberToObject(raw, k[i], x.median / 1e6);
	}
}

/*
 * The roofline block. A task that states its FLOP and byte counts
 * (get_flops(), get_bytes()) has them recorded; the bridge has no
 * measured peaks, so no bound is drawn and "why" says so, as it does for
 * a task that states neither (KernelBench's).
 */
static void roofline_json(struct bsession *s)
{
	cJSON *rf = cJSON_AddObjectToObject(s->core.res, "roofline");
	cJSON_AddNumberToObject(rf, "flops", s->flops);
	cJSON_AddNumberToObject(rf, "bytes", s->bytes);
	cJSON_AddStringToObject(rf, "compute_peak", "fma");
	cJSON_AddNumberToObject(rf, "peak_flops_per_s", 0);
	cJSON_AddNumberToObject(rf, "peak_bytes_per_s", 0);
	cJSON_AddNumberToObject(rf, "flops_per_s", 0);
	cJSON_AddNumberToObject(rf, "bytes_per_s", 0);
	cJSON_AddNullToObject(rf, "bound");
	cJSON_AddStringToObject(
	    rf, "why",
	    s->flops > 0 || s->bytes > 0
		? "the task states FLOP and byte counts, but the PyTorch "
		  "bridge measures no peaks: no roofline plausibility cap "
		  "was applied"
		: "the task states no FLOP or byte counts (a KernelBench "
		  "task has none; define get_flops() and get_bytes()): no "
		  "roofline plausibility cap was applied");
}

/* Keeps the median of the reference's timed calls beside the candidate
 * (the largest over the protocols timed), for reference_alone. */
static void note_paired(struct bsession *s, const struct bsamples *sm)
{
	struct kf_summary x;
	kf_summarize(sm->r, sm->n, &x);
	if (x.median > s->ref_paired)
		s->ref_paired = x.median;
}

#define ALONE_CALLS 15

/*
 * On a device, once the candidate has been timed: the bridge ends the
 * candidate's runner and its sandbox, then times the reference alone
 * (op "alone", ALONE_CALLS calls on inputs of their own, as in the
 * pairs); the judge holds the reference's calls beside the candidate to
 * those (kf_judge_interference). A baseline is kforge's own code, and on
 * the host both sides' CPU time is read per thread: neither is asked.
 */
static void reference_alone(struct bsession *s, const char *proto)
{
	cJSON *tm = cJSON_GetObjectItem(s->core.res, "timing");
	if (s->core.done || !tm || s->ref_paired <= 0)
		return;
	cJSON *req = kf_request("alone");
	cJSON_AddNumberToObject(req, "calls", ALONE_CALLS);
	cJSON_AddStringToObject(req, "protocol", proto);
	kf_add_u64(req, "seed", s->core.o->seed);
	cJSON *rep = kf_session_exchange(
	    &s->core, req, ALONE_CALLS * 2 * s->core.call_ms + 30000,
	    "timing (the reference alone)");
	if (!rep || kf_session_unexpected(&s->core, rep, "alone",
					  "timing (the reference alone)"))
		return;
	const cJSON *ns = cJSON_GetObjectItem(rep, "ref_ns");
	int n = cJSON_GetArraySize(ns);
	double *x = kf_xcalloc((size_t)n + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		x[i] = cJSON_GetArrayItem(ns, i)->valuedouble;
	struct verdict v = {0};
	kf_judge_interference(s->ref_paired, x, n, tm, &v);
	free(x);
	cJSON_Delete(rep);
	if (v.status != KF_STATUS_OK)
		kf_session_finish(&s->core, v.status, v.check, v.reason);
}

/* kforge's protocol: interleaved pairs on fresh inputs, every output
 * checked, until the medians' intervals are tight or the cap passes. */
static void time_kforge(struct bsession *s, const struct trial_plan *plans,
			int n)
{
	struct bsamples sm = {0};
	struct kf_timing tg;
	kf_timing_start(&tg);
	/* The trial-like check calls draw their inputs like the trials whose
	 * values were reshaped (the timed calls and the timed-like check
	 * calls have get_inputs()'s own). */
	struct trial_plan *cp = kf_xcalloc((size_t)n + 1, sizeof(*cp));
	int ncp = 0;
	for (int k = 0; k < n; k++)
		if (plans[k].dists[0] != 0)
			cp[ncp++] = plans[k];
	kf_timing_checks(&tg, cp, ncp);
	while (!s->core.done) {
		cJSON *rep = kf_session_time_batch(&s->core, &tg, 30000);
		if (!rep)
			break;
		bsamples_add(&sm, rep);
		cJSON_Delete(rep);
		if (!kf_timing_next(&tg, s->core.o, sm.c, sm.r, sm.n, 0))
			break;
	}
	if (s->core.done || sm.n == 0)
		goto out;
	cJSON *tm = kf_timing_json(&s->core, &tg, sm.n, 0);
	raw_json(tm, &sm);
	note_paired(s, &sm);
	if (bridge_unaccounted(s, tm, &sm, false))
		goto out;
	kf_pairs_json(tm, sm.c, sm.r, sm.n, tg.met);
	cJSON_AddNumberToObject(tm, "sm_clock_mhz", 0);
	cJSON_AddNumberToObject(tm, "candidate_kernels", -1);
	cJSON_AddNumberToObject(tm, "candidate_streams", -1);
	roofline_json(s);
out:
	bsamples_release(&sm);
	free(cp);
}

/* KernelBench's timing (see the bridge): each side alone, 3 warm-ups, 101
 * calls timed after a flush, the first dropped; the means and their
 * ratio, in the block key ("timing" or "timing_kernelbench"). Every timed
 * output is compared, and held to the trials' precision check as under
 * kforge's protocol (the bridge sends the trials' noise with each), or
 * within allow[j] of the L1 relative error where KernelBench's trials
 * passed lower precision. */
static void time_kernelbench(struct bsession *s, const char *key,
			     const double *allow)
{
	cJSON *req = kf_request("time");
	cJSON_AddStringToObject(req, "protocol", "kernelbench");
	cJSON_AddNumberToObject(req, "calls", KB_CALLS);
	uint64_t t0 = kf_now_ns();
	cJSON *rep = kf_session_exchange(
	    &s->core, req, (KB_CALLS + 3) * 2 * s->core.call_ms + 30000,
	    "timing (kernelbench)");
	if (!rep || kf_session_unexpected(&s->core, rep, "samples",
					  "timing (kernelbench)"))
		return;
	/* Every timed call ran on fresh inputs and was compared. */
	const cJSON *o;
	int j = 0;
	cJSON_ArrayForEach(
	    o, cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "check"), "outputs"))
	{
		if (j < KF_MAX_TENSORS && allow[j] > 0)
			cJSON_AddNumberToObject((cJSON *)o, "l1_rel_allowed",
						allow[j]);
		j++;
	}
	struct verdict v = {0};
	kf_judge_samples(s->core.task, rep, &v);
	if (v.status != KF_STATUS_OK) {
		kf_session_finish(&s->core, v.status, v.check, v.reason);
		cJSON_Delete(rep);
		return;
	}
	struct bsamples sm = {0};
	bsamples_add(&sm, rep);
	cJSON_Delete(rep);
	if (sm.n > 0) {
		cJSON *tm = cJSON_AddObjectToObject(s->core.res, key);
		cJSON_AddStringToObject(tm, "protocol", "kernelbench");
		cJSON_AddStringToObject(tm, "unit", "ms");
		cJSON_AddStringToObject(tm, "inputs", "fresh");
		raw_json(tm, &sm);
		note_paired(s, &sm);
		/* The charge first: the means below are of charged samples. */
		if (bridge_unaccounted(s, tm, &sm, true))
			goto out;
		kf_summary_json(tm, "reference", sm.r, sm.n, 1e-6);
		kf_summary_json(tm, "candidate", sm.c, sm.n, 1e-6);
		struct kf_summary mc, mr;
		kf_summarize(sm.c, sm.n, &mc);
		kf_summarize(sm.r, sm.n, &mr);
		cJSON_AddNumberToObject(tm, "speedup",
					mc.mean > 0 ? mr.mean / mc.mean : 0);
		cJSON_AddNumberToObject(tm, "seconds",
					(double)(kf_now_ns() - t0) / 1e9);
		if (!cJSON_GetObjectItem(s->core.res, "roofline"))
			roofline_json(s);
	}
out:
	bsamples_release(&sm);
}

/* The result's opening fields, as kf_eval writes them. */
static void result_head(struct bsession *s)
{
	cJSON *tj = kf_session_result_open(&s->core);
	cJSON_AddStringToObject(tj, "format", "kernelbench");
	if (s->core.task->level > 0)
		cJSON_AddNumberToObject(tj, "level", s->core.task->level);
	cJSON_AddObjectToObject(tj, "dims");
	cJSON_AddNumberToObject(tj, "flops", 0);
	cJSON_AddNumberToObject(tj, "bytes", 0);
	/* A baseline is the task's own Model, so its file is what it ran. */
	kf_session_result_candidate(&s->core, s->cand_label,
				    s->cand_path ? s->cand_path
						 : s->core.task->path);
}

/* The reference's compile record: a KernelBench reference is PyTorch, which
 * is not compiled. */
static void reference_json(cJSON *comp)
{
	cJSON *r = cJSON_AddObjectToObject(comp, "reference");
	cJSON_AddBoolToObject(r, "ok", true);
	cJSON_AddBoolToObject(r, "cached", true);
	cJSON_AddNumberToObject(r, "seconds", 0);
	cJSON_AddStringToObject(r, "key", "");
	cJSON_AddStringToObject(r, "command", "");
}

/* The compile block of a ModelNew candidate: its compile is the first
 * load of its module (torch's load_inline builds there), as the bridge
 * timed it; the reference is not compiled. */
static void compile_block(struct bsession *s, bool ok, double seconds,
			  const char *log, const cJSON *rep)
{
	cJSON *comp = cJSON_AddObjectToObject(s->core.res, "compile");
	cJSON *c = cJSON_AddObjectToObject(comp, "candidate");
	cJSON_AddBoolToObject(c, "ok", ok);
	cJSON_AddBoolToObject(c, "cached",
			      cJSON_IsTrue(cJSON_GetObjectItem(rep, "cached")));
	/* Each torch.utils.cpp_extension build the candidate asked for, and
	 * whether one failed: a candidate that catches the failure and runs
	 * PyTorch instead loads, with build_failed true. */
	const cJSON *builds = cJSON_GetObjectItem(rep, "builds");
	bool failed = false;
	const cJSON *b;
	cJSON_ArrayForEach(b, builds)
	{
		if (!cJSON_IsTrue(cJSON_GetObjectItem(b, "ok")))
			failed = true;
	}
	cJSON_AddItemToObject(c, "builds",
			      cJSON_IsArray(builds) ? cJSON_Duplicate(builds, 1)
						    : cJSON_CreateArray());
	cJSON_AddBoolToObject(c, "build_failed", failed);
	cJSON_AddNumberToObject(c, "seconds", seconds);
	cJSON_AddStringToObject(c, "key", "");
	cJSON_AddStringToObject(c, "command",
				s->core.o->baseline
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
	reference_json(comp);
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
	if (!s->kernel)
		compile_block(s, !comp, 0, comp ? msg : NULL, rep);
	struct verdict v = {0};
	kf_judge_load(what, s->cand_label, s->core.o->baseline, msg, &v);
	kf_session_verdict(&s->core, &v);
}

/* Loads the task and the candidate (or the baseline) in the bridge (op
 * "load"; "next" in a warm bridge, which keeps its judge and reference's
 * runner and loads the candidate into a runner of its own); false when that
 * ended the evaluation. */
static bool load(struct bsession *s, const char *op, cJSON **device)
{
	cJSON *req = kf_request(op);
	cJSON_AddStringToObject(req, "backend", s->core.o->backend);
	cJSON_AddStringToObject(req, "task", s->core.task->path);
	if (s->core.o->baseline)
		cJSON_AddStringToObject(req, "baseline", s->core.o->baseline);
	else
		cJSON_AddStringToObject(req, "candidate", s->cand_path);
	if (s->kernel)
		cJSON_AddStringToObject(req, "kernel", s->kernel);
	cJSON_AddStringToObject(req, "protocol",
				s->kb_checks ? "kernelbench" : "kforge");
	kf_add_u64(req, "seed", s->core.o->seed);
	/* A bridge that may serve further candidates starts the next one's
	 * runner once this one is loaded. */
	if (s->core.o->pool)
		cJSON_AddBoolToObject(req, "warm", true);
	cJSON *rep =
	    kf_session_exchange(&s->core, req, LOAD_DEADLINE_MS, "loading");
	const char *ev = rep ? kf_json_str(rep, "ev") : NULL;
	if (ev && !strcmp(ev, "load_error")) {
		load_failed(s, rep);
		cJSON_Delete(rep);
		return false;
	}
	/* Ended while loading by anything else (the candidate's process died
	 * or was stopped, its load waited, a deadline): the result still says
	 * what is known of its compile, no build having failed, as every
	 * result of a candidate does. */
	if (!rep || strcmp(ev ? ev : "", "loaded")) {
		if (!s->kernel && !cJSON_GetObjectItem(s->core.res, "compile"))
			compile_block(s, true, 0, NULL, rep);
		if (rep)
			kf_session_unexpected(&s->core, rep, "loaded",
					      "loading");
		return false;
	}
	struct kf_err err = KF_ERR_INIT;
	if (add_tensors(s->core.task, rep, false, &err) ||
	    add_tensors(s->core.task, rep, true, &err)) {
		char *why = kf_xasprintf("loading: %s", err.msg);
		kf_session_finish(&s->core, KF_STATUS_INFRA_ERROR, "protocol",
				  why);
		free(why);
		cJSON_Delete(rep);
		return false;
	}
	if (!s->kernel)
		compile_block(s, true,
			      kf_json_num(rep, "candidate_load_ns", 0) / 1e9,
			      NULL, rep);
	/* A kforge kernel on the task (s->kernel) is custom code itself;
	 * a baseline is not judged for it. */
	struct verdict cv = {0};
	if (!s->kernel && !s->core.o->baseline)
		kf_judge_custom_kernel(cJSON_GetObjectItem(rep, "builds"),
				       s->core.o->require_custom_kernel, &cv);
	if (cv.status != KF_STATUS_OK) {
		kf_session_verdict(&s->core, &cv);
		cJSON_Delete(rep);
		return false;
	}
	*device = cJSON_DetachItemFromObject(rep, "device");
	s->flops = kf_json_num(rep, "flops", 0);
	s->bytes = kf_json_num(rep, "bytes", 0);
	/* The parameters and buffers every side computes with: drawn by the
	 * reference's process, handed to the candidate's. */
	cJSON *st = cJSON_DetachItemFromObject(rep, "state");
	if (st)
		cJSON_AddItemToObject(s->core.res, "parameters", st);
	const char *tv = kf_json_str(*device, "torch");
	char *tc = kf_xasprintf(
	    "python %s, torch %s",
	    kf_json_str(rep, "python") ? kf_json_str(rep, "python") : "?",
	    tv ? tv : "?");
	if (!cJSON_GetObjectItem(s->core.res, "toolchain"))
		cJSON_AddStringToObject(s->core.res, "toolchain", tc);
	free(tc);
	cJSON_Delete(rep);
	return true;
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
	co.backend = s->core.o->backend;
	co.include_dir = s->core.o->include_dir;
	co.no_cache = s->core.o->no_cache;
	int rc = kf_compile(s->cand_path, &co, cr, err);
	if (rc)
		return rc;
	cJSON *comp = cJSON_AddObjectToObject(s->core.res, "compile");
	kf_compile_json(comp, "candidate", cr, !cr->ok);
	reference_json(comp);
	cJSON_AddStringToObject(s->core.res, "toolchain",
				cr->toolchain ? cr->toolchain : "");
	if (!cr->ok)
		kf_session_compile_failed(&s->core, cr, s->cand_path);
	else
		kf_session_link_policy(&s->core, cr->so_path, s->cand_path);
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

/* True when a ModelNew file asks torch to build an extension (the bridge's
 * runner watches the same names). */
static bool builds_extension(const char *path)
{
	char *text = NULL;
	size_t n = 0;
	if (kf_file_read(path, 4 << 20, &text, &n, NULL) != 0)
		return false;
	bool yes = strstr(text, "load_inline") || strstr(text, "cpp_extension");
	free(text);
	return yes;
}

int kf_bridge_prebuild(const char *task_path, const char *candidate_path,
		       const struct kf_eval_opts *o, double *seconds,
		       struct kf_err *err)
{
	*seconds = 0;
	if (!builds_extension(candidate_path))
		return 0;
	char *python = find_python(o, err);
	if (!python)
		return err->code ? err->code : KF_ENOENT;
	char *script = find_bridge(err);
	if (!script) {
		free(python);
		return err->code ? err->code : KF_ENOENT;
	}
	char *argv[] = {python,	 "-B",
			script,	 "--prebuild",
			(char *)task_path, (char *)candidate_path,
			(char *)(o->backend ? o->backend : "host"), NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = 0;
	struct kf_limits lim = {0};
	uint64_t cache_cap;
	/* The build directories' bound is the bridge's to keep, from the
	 * same variable as the compile cache's: a bad value stops here. */
	int rc = kf_compile_mem_limit(&lim.data_bytes, err);
	if (!rc)
		rc = kf_compile_cache_max(&cache_cap, err);
	if (rc) {
		free(script);
		free(python);
		return rc;
	}
	uint64_t t0 = kf_now_ns();
	rc = kf_proc_run_limited(argv, &lim, PREBUILD_MS, 1 << 20, &out,
				 &status, err);
	*seconds = (double)(kf_now_ns() - t0) * 1e-9;
	if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		if (!WIFEXITED(status) ||
		    strstr(kf_strbuf_str(&out), "MemoryError"))
			kf_compile_mem_note(&out, lim.data_bytes);
		char *why = kf_wait_describe(status);
		const char *text = kf_strbuf_str(&out);
		size_t len = strlen(text);
		rc = kf_err_set(err, KF_EINVAL,
				"%s: the prebuild of its extensions %s: %s",
				candidate_path, why,
				text + (len > 2000 ? len - 2000 : 0));
		free(why);
	}
	kf_strbuf_release(&out);
	free(script);
	free(python);
	return rc;
}

/* An evaluation loaded and not yet measured (kf_eval_open). */
struct kf_eval_pending {
	struct bsession s;
	struct kf_eval_opts o; /* s.core.o points here */
	char *python, *script;
	cJSON *device;
	struct kf_compile_result cr;
	uint64_t start, opened; /* kf_now_ns() at the open's start, end */
	uint64_t began;		/* the open's start, kept (start moves) */
	const char *proto;
	/* kf_now_ns() when the slot took it, once pinned, after the trials
	 * and after the timing; 0 for a phase not reached. */
	uint64_t t[4];
	bool measured;
	/* With a pool (o.pool): the bridge's key there, whether it came warm
	 * (loaded by "next"), evaluations it served before this one, and
	 * whether "end" was sent after the measurement. */
	char *key;
	bool warm, end_sent;
	int uses;
};

/* Evaluations one warm bridge serves at most. */
#define WARM_MAX_USES 64
/* How long the end of a candidate's runner may take. */
#define WARM_END_MS 60000.0

/* An idle warm bridge: its process and log, as a session held them. */
struct warm {
	char *key;
	struct kf_proc proc;
	int log_fd;
	int uses;
	struct warm *next; /* the longest idle last */
};

/* How many bridges of one key are running (idle, loading or measuring). */
struct keycount {
	char *key;
	int live;
	struct keycount *next;
};

struct kf_bridge_pool {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a bridge was given back or ended */
	struct warm *idle;
	int n_idle, max_idle, per_key;
	struct keycount *counts;
};

struct kf_bridge_pool *kf_bridge_pool_new(int max_idle, int per_key)
{
	struct kf_bridge_pool *pool = kf_xcalloc(1, sizeof(*pool));
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->changed, NULL);
	pool->max_idle = max_idle > 0 ? max_idle : 1;
	pool->per_key = per_key > 0 ? per_key : 1;
	return pool;
}

/* The count of key's running bridges (made at 0); under the lock. */
static int *live_of(struct kf_bridge_pool *pool, const char *key)
{
	struct keycount *c = pool->counts;
	while (c && strcmp(c->key, key))
		c = c->next;
	if (!c) {
		c = kf_xcalloc(1, sizeof(*c));
		c->key = kf_xstrdup(key);
		c->next = pool->counts;
		pool->counts = c;
	}
	return &c->live;
}

/* One bridge of key fewer running. */
static void pool_release(struct kf_bridge_pool *pool, const char *key)
{
	pthread_mutex_lock(&pool->lock);
	(*live_of(pool, key))--;
	pthread_cond_broadcast(&pool->changed);
	pthread_mutex_unlock(&pool->lock);
}

/* Ends an idle bridge, taken out of the pool (and out of its key's
 * count): told to quit, reaped, its log closed. */
static void warm_end(struct warm *w)
{
	cJSON *q = kf_request("quit");
	struct kf_err err = KF_ERR_INIT;
	int status = 0;
	long rss = 0;
	kf_frame_write(w->proc.to_child, q, &err);
	cJSON_Delete(q);
	kf_proc_wait(&w->proc, bridge.quit_wait_ms, &status, &rss);
	if (w->log_fd >= 0)
		close(w->log_fd);
	free(w->key);
	free(w);
}

/* True when an idle bridge is still waiting for a request: nothing to read
 * and its pipe open (one that ended while idle is not). */
static bool warm_alive(const struct warm *w)
{
	struct pollfd pfd = {w->proc.from_child, POLLIN, 0};
	return w->proc.pid > 0 && poll(&pfd, 1, 0) == 0;
}

/*
 * An idle bridge of key (the one that waited least), or NULL when the
 * caller is to start one, counted for key. While per_key bridges of key
 * are running and none is idle, waits for one to be given back or to end:
 * a bridge's next evaluation loads in a fraction of a second, so two per
 * task (one measured, one loaded ahead) keep a slot busy, where more would
 * each pay the cold start.
 */
static struct warm *pool_take(struct kf_bridge_pool *pool, const char *key)
{
	struct warm *got = NULL, *dead = NULL;
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		for (struct warm **pp = &pool->idle; *pp && !got;) {
			struct warm *w = *pp;
			if (strcmp(w->key, key)) {
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			pool->n_idle--;
			if (warm_alive(w)) {
				got = w;
				break;
			}
			(*live_of(pool, key))--;
			w->next = dead;
			dead = w;
		}
		int *live = live_of(pool, key);
		if (got || *live < pool->per_key) {
			if (!got)
				(*live)++;
			break;
		}
		pthread_cond_wait(&pool->changed, &pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	while (dead) {
		struct warm *n = dead->next;
		warm_end(dead);
		dead = n;
	}
	return got;
}

/* Gives w back; the longest idle is ended when the pool is full. */
static void pool_put(struct kf_bridge_pool *pool, struct warm *w)
{
	struct warm *out = NULL;
	pthread_mutex_lock(&pool->lock);
	w->next = pool->idle;
	pool->idle = w;
	if (++pool->n_idle > pool->max_idle) {
		struct warm **pp = &pool->idle;
		while ((*pp)->next)
			pp = &(*pp)->next;
		out = *pp;
		*pp = NULL;
		pool->n_idle--;
		(*live_of(pool, out->key))--;
	}
	pthread_cond_broadcast(&pool->changed);
	pthread_mutex_unlock(&pool->lock);
	if (out)
		warm_end(out);
}

/* Ends the idle bridges whose key begins with prefix (all: ""). */
static void pool_end(struct kf_bridge_pool *pool, const char *prefix)
{
	struct warm *out = NULL;
	size_t n = strlen(prefix);
	pthread_mutex_lock(&pool->lock);
	for (struct warm **pp = &pool->idle; *pp;) {
		struct warm *w = *pp;
		if (strncmp(w->key, prefix, n)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		pool->n_idle--;
		(*live_of(pool, w->key))--;
		w->next = out;
		out = w;
	}
	pthread_cond_broadcast(&pool->changed);
	pthread_mutex_unlock(&pool->lock);
	while (out) {
		struct warm *next = out->next;
		warm_end(out);
		out = next;
	}
}

void kf_bridge_pool_retire(struct kf_bridge_pool *pool, const char *task_path)
{
	if (!pool || !task_path)
		return;
	char *prefix = kf_xasprintf("%s\n", task_path);
	pool_end(pool, prefix);
	free(prefix);
}

void kf_bridge_pool_free(struct kf_bridge_pool *pool)
{
	if (!pool)
		return;
	pool_end(pool, "");
	while (pool->counts) {
		struct keycount *c = pool->counts;
		pool->counts = c->next;
		free(c->key);
		free(c);
	}
	pthread_cond_destroy(&pool->changed);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

/* A bridge's key in the pool: what its judge and reference's runner were
 * made for. The task first (kf_bridge_pool_retire). */
static char *pool_key(const struct kf_eval_pending *p)
{
	const struct kf_eval_opts *o = &p->o;
	return kf_xasprintf("%s\n%s\n%d\n%s\n%s", p->s.core.task->path,
			    o->backend, o->device,
			    p->s.kb_checks ? "kernelbench" : "kforge",
			    p->python);
}

static void pending_free(struct kf_eval_pending *p)
{
	if (!p)
		return;
	/* Not measured (a batch that stopped): its bridge is told to quit. */
	if (p->s.core.proc.pid > 0 || p->s.core.log_fd >= 0)
		kf_session_close(&p->s.core);
	cJSON_Delete(p->s.core.res);
	cJSON_Delete(p->device);
	/* Its bridge ended, or never started: one fewer of its key. */
	if (p->key)
		pool_release(p->o.pool, p->key);
	free(p->key);
	free(p->python);
	free(p->script);
	kf_compile_result_release(&p->cr);
	kf_task_free(p->s.core.task);
	free(p->s.cand_label);
	free(p);
}

/* Pins the judge and both runners to one core (core, or the judge's own
 * when negative) before the trials; false when that ended the
 * evaluation. */
static bool pin(struct bsession *s, int core)
{
	cJSON *req = kf_request("pin");
	if (core >= 0)
		cJSON_AddNumberToObject(req, "core", core);
	cJSON *rep = kf_session_exchange(&s->core, req, 60000, "pinning");
	if (!rep || kf_session_unexpected(&s->core, rep, "pinned", "pinning"))
		return false;
	cJSON_Delete(rep);
	return true;
}

/* The record's phases: where an evaluation's wall time went, for the
 * throughput of batches (docs/results.md, "phases"). t: kf_now_ns() when
 * the slot took it, once pinned, after the trials, after the timing and
 * once the bridge had ended; 0 for a phase not reached. */
static void add_phases(cJSON *r, const struct kf_eval_pending *p,
		       uint64_t ended)
{
	const uint64_t *t = p->t;
	if (!r)
		return;
	cJSON *ph = cJSON_AddObjectToObject(r, "phases");
	const char *names[] = {"pin", "trials", "timing"};
	cJSON_AddNumberToObject(ph, "load", (double)(p->opened - p->began) * 1e-9);
	cJSON_AddNumberToObject(ph, "wait", (double)(t[0] - p->opened) * 1e-9);
	uint64_t last = t[0];
	for (int i = 0; i < 3; i++) {
		double v = t[i + 1] ? (double)(t[i + 1] - last) * 1e-9 : 0;
		cJSON_AddNumberToObject(ph, names[i], v);
		if (t[i + 1])
			last = t[i + 1];
	}
	cJSON_AddNumberToObject(ph, "end", (double)(ended - last) * 1e-9);
}

int kf_eval_bridge_open(const char *task_path, const char *candidate_path,
			const struct kf_eval_opts *o,
			struct kf_eval_pending **out, struct kf_err *err)
{
	*out = NULL;
	struct kf_eval_pending *p = kf_xcalloc(1, sizeof(*p));
	struct bsession *s = &p->s;
	p->o = *o;
	o = &p->o;
	kf_session_core_init(&s->core, &bridge, o);
	s->cand_path = candidate_path;
	p->cr = (struct kf_compile_result)KF_COMPILE_RESULT_INIT;
	p->start = p->began = kf_now_ns();
	p->proto = o->protocol ? o->protocol : "kforge";
	s->kb_checks = !strcmp(p->proto, "kernelbench");
	bool kernel = false;
	int rc = kf_task_load(task_path, &s->core.task, err);
	if (rc)
		goto fail;
	if (o->baseline) {
		s->cand_path = NULL;
		s->cand_label = kf_xasprintf("baseline:%s", o->baseline);
	} else {
		if ((rc = check_candidate(candidate_path, &kernel, err)))
			goto fail;
		s->cand_label = kf_xstrdup(candidate_path);
	}
	if (!(p->python = find_python(o, err)) ||
	    !(p->script = find_bridge(err))) {
		rc = err->code;
		goto fail;
	}
	s->core.call_ms = o->call_timeout_ms > 0 ? o->call_timeout_ms
						 : s->core.task->call_timeout_ms;
	result_head(s);
	if (kernel) {
		if ((rc = compile_kernel(s, &p->cr, err)))
			goto fail;
		if (s->core.done)
			goto done;
		s->kernel = p->cr.so_path;
	}
	if (o->pool) {
		p->key = pool_key(p);
		struct warm *w = pool_take(o->pool, p->key);
		/* The wait for a bridge of its task is not its load. */
		p->start = p->began = kf_now_ns();
		if (w) {
			/* Warm: its judge and reference's runner serve this
			 * evaluation too; its log is this one's from here. */
			s->core.proc = w->proc;
			s->core.log_fd = w->log_fd;
			s->core.log_from = (long)lseek(w->log_fd, 0, SEEK_END);
			p->warm = true;
			p->uses = w->uses;
			free(w->key);
			free(w);
			(void)load(s, "next", &p->device);
			goto done;
		}
	}
	if (spawn_bridge(s, p->python, p->script, err)) {
		kf_session_finish(&s->core, KF_STATUS_INFRA_ERROR, "spawn",
				  err->msg);
		goto done;
	}
	(void)load(s, "load", &p->device);
done:
	p->opened = kf_now_ns();
	*out = p;
	return 0;
fail:
	pending_free(p);
	return rc;
}

void kf_eval_bridge_measure(struct kf_eval_pending *p, int core)
{
	struct bsession *s = &p->s;
	const struct kf_eval_opts *o = s->core.o;
	uint64_t *t = p->t;
	if (p->measured)
		return;
	p->measured = true;
	/* The record's seconds are the evaluation's own: not the time it
	 * waited, loaded, for its slot. */
	t[0] = kf_now_ns();
	p->start += t[0] - p->opened;
	if (s->core.done || !pin(s, core))
		goto done;
	t[1] = kf_now_ns();
	int n = s->kb_checks ? KB_TRIALS : o->trials;
	cJSON *frames = cJSON_CreateArray();
	struct trial_plan *plans = kf_xcalloc((size_t)n, sizeof(*plans));
	run_trials(s, n, frames, plans);
	t[2] = kf_now_ns();
	if (!s->core.done)
		kf_judge_degenerate(s->core.task, plans, frames, s->core.res);
	/* KernelBench's trials accept lower precision: the timed outputs
	 * may show as much as they did (kf_judge_kb_allowance). */
	double allow[KF_MAX_TENSORS] = {0};
	if (s->kb_checks)
		kf_judge_kb_allowance(s->core.task, frames, allow);
	cJSON_Delete(frames);
	bool timed = !s->core.done;
	if (timed && !o->no_timing) {
		/* The check calls among the timed ones draw on the plans. */
		if (!s->kb_checks)
			time_kforge(s, plans, n);
		if (!s->core.done && strcmp(p->proto, "kforge"))
			time_kernelbench(
			    s, s->kb_checks ? "timing" : "timing_kernelbench",
			    allow);
		if (!strcmp(o->backend, "cuda") && !o->baseline)
			reference_alone(s, s->kb_checks ? "kernelbench"
							: "kforge");
	}
	free(plans);
	if (timed)
		t[3] = kf_now_ns();
done:
	/* Measured: the bridge moves its processes off the slot's core and
	 * ends while the slot measures the next (kf_eval_bridge_finish
	 * reaps it); a pool's bridge ends the candidate's runner alone (its
	 * "end"), and kf_eval_bridge_finish reads whether it did. */
	if (o->pool && !s->core.reaped && s->core.proc.pid > 0) {
		cJSON *req = kf_request("end");
		struct kf_err err = KF_ERR_INIT;
		p->end_sent =
		    kf_frame_write(s->core.proc.to_child, req, &err) == 0;
		cJSON_Delete(req);
		if (p->end_sent)
			return;
	}
	kf_session_quit(&s->core);
}

/* True when a pool's bridge may serve another candidate: it answered "end"
 * in time, the candidate's runner and its sandbox seen gone, after an
 * evaluation that ended cleanly (a verdict of the candidate's, not a
 * deadline or the engine's failure), with CPU time and uses to spare. */
static bool reusable(struct kf_eval_pending *p)
{
	struct bsession *s = &p->s;
	if (!p->end_sent || s->core.reaped || s->core.proc.pid <= 0)
		return false;
	cJSON *rep = NULL;
	struct kf_err err = KF_ERR_INIT;
	struct pollfd pfd = {s->core.proc.from_child, POLLIN, 0};
	bool ok = poll(&pfd, 1, (int)WARM_END_MS) > 0 &&
		  kf_frame_read(s->core.proc.from_child,
				kf_now_ns() + (uint64_t)(WARM_END_MS * 1e6),
				&rep, &err) == 0;
	const char *ev = ok ? kf_json_str(rep, "ev") : NULL;
	ok = ev && !strcmp(ev, "ended") &&
	     cJSON_IsTrue(cJSON_GetObjectItem(rep, "gone"));
	cJSON_Delete(rep);
	if (!ok)
		return false;
	const char *st = kf_json_str(s->core.res, "status");
	if (!st || !strcmp(st, kf_status_name(KF_STATUS_TIMEOUT)) ||
	    !strcmp(st, kf_status_name(KF_STATUS_INFRA_ERROR)))
		return false;
	/* The judge and the reference's runner add up CPU time under the
	 * limit the bridge was started with: kept while under half. */
	double used = kf_proc_tree_cpu_ms(s->core.proc.pid, NULL);
	if (used < 0 || (s->core.proc.cpu_soft_s > 0 &&
			 used / 1000.0 > s->core.proc.cpu_soft_s / 2))
		return false;
	return p->uses + 1 < WARM_MAX_USES;
}

int kf_eval_bridge_finish(struct kf_eval_pending *p, int core,
			  cJSON **result)
{
	struct bsession *s = &p->s;
	kf_eval_bridge_measure(p, core);
	bool keep = reusable(p);
	s->core.kept = keep;
	*result = kf_session_end(&s->core, p->device, p->start);
	if (*result) {
		kf_judge_unmatched_parameters(*result);
		cJSON *w = cJSON_GetObjectItem(*result, "worker");
		if (w)
			cJSON_AddBoolToObject(w, "warm", p->warm);
	}
	add_phases(*result, p, kf_now_ns());
	if (keep) {
		struct warm *w = kf_xcalloc(1, sizeof(*w));
		w->key = p->key;
		p->key = NULL;
		w->proc = s->core.proc;
		w->log_fd = s->core.log_fd;
		w->uses = p->uses + 1;
		s->core.proc = (struct kf_proc)KF_PROC_INIT;
		s->core.log_fd = -1;
		pool_put(p->o.pool, w);
	}
	pending_free(p);
	return 0;
}

void kf_eval_bridge_discard(struct kf_eval_pending *p)
{
	pending_free(p);
}

int kf_eval_bridge(const char *task_path, const char *candidate_path,
		   const struct kf_eval_opts *o, cJSON **result,
		   struct kf_err *err)
{
	struct kf_eval_pending *p = NULL;
	int rc = kf_eval_bridge_open(task_path, candidate_path, o, &p, err);
	if (rc)
		return rc;
	return kf_eval_bridge_finish(p, -1, result);
}
