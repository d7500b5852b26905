/*
 * kforge_bench.c: `kforge bench`, KernelBench-style metrics over many tasks:
 * evaluates one candidate per KernelBench-format task, then prints the
 * correctness rate, fast_p and the geometric-mean speedup, over eager
 * PyTorch and over each further baseline asked for (torch.compile, CUDA
 * graphs), whose own evaluations are cached under <cache>/baselines/.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/farm.h>
#include <kforge/farm_redis.h>
#include <kforge/task.h>

#include "commands.h"

#define JSONL_CAP (256u << 20) /* bytes of a candidates file */
#define MAX_TASKS 4096	       /* tasks in one run */
#define WALK_DEPTH 3	       /* directory levels searched for tasks */
#define MAX_BASELINES 4	       /* eager and the three of kf_baseline_names */
#define CACHE_CAP (64u << 20)  /* bytes of a cached baseline result */
static const double fast_ps[] = {0, 0.5, 0.8, 1, 1.5, 2};
#define N_P (int)(sizeof(fast_ps) / sizeof(fast_ps[0]))

const char bench_usage[] =
    "usage: kforge bench TASKS... --candidates DIR|JSONL [options]\n"
    "\n"
    "Evaluates one candidate (a ModelNew file) per KernelBench-format task\n"
    "and prints KernelBench's metrics: the correctness rate, fast_p at\n"
    "p = 0, 0.5, 0.8, 1, 1.5, 2, and the geometric-mean speedup of the\n"
    "correct candidates over the task's Model as written (eager). TASKS\n"
    "are .py files or directories searched for them (N_Name.py).\n"
    "\n"
    "  --candidates DIR     the candidate of task T is DIR/<T's file name>\n"
    "                       (or DIR/levelN/<file name>)\n"
    "  --candidates F.jsonl one JSON object per line: \"task\" (the file\n"
    "                       name, its stem or the task id) and \"code\"\n"
    "  --level N            only tasks of level N (a levelN directory)\n"
    "  --out FILE           KernelBench's eval_results.json (default\n"
    "                       ./eval_results.json)\n"
    "  --json               print the summary as JSON\n"
    "  --report FILE        also write kforge report's page of the bench\n"
    "                       (FILE.html; docs/report.md)\n"
    "  --baseline B[,B...]  also report the speedups over baseline B\n"
    "                       (repeatable): compile (torch.compile),\n"
    "                       compile_ro (mode=\"reduce-overhead\") or\n"
    "                       cudagraph (a CUDA graph of the forward);\n"
    "                       eager is always reported. Each baseline is\n"
    "                       evaluated once per task and cached (marked\n"
    "                       * when reused); see docs/kernelbench.md\n"
    "  --jobs N, --gpus N   candidates loaded or compiled at once (default:\n"
    "                       the cores) and measured at once (default: the\n"
    "                       GPUs; the host, 1), as kforge eval --batch\n"
    "  --redis URL          the candidates are evaluated on the farm's\n"
    "                       workers (kforge farm worker; docs/scale.md);\n"
    "                       baselines still run here\n"
    "  --backend, --protocol, --python, --seed, --trials, --time-cap,\n"
    "  --no-timing          as in kforge eval\n"
    "\n"
    "Exit status: 0 once every task has its row (whatever its status),\n"
    "2 on bad usage.\n";

struct item {
	char *task;  /* path of the task file */
	char *id;    /* "level1/1_ReLU" */
	int level;   /* 0: unknown */
	char *cand;  /* candidate path, or NULL when there is none */
	cJSON *res;  /* the result, or NULL */
	char *error; /* why no result */
	/* Per baseline of struct bench (index 0, eager, is the reference
	 * inside res): its own evaluation, whether the cache gave it, or
	 * why there is none. */
	cJSON *base[MAX_BASELINES];
	bool base_cached[MAX_BASELINES];
	char *base_error[MAX_BASELINES];
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("kforge: bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The candidate file of a task in a directory of candidates. */
static char *dir_candidate(const char *dir, const struct item *it)
{
	const char *name = base_name(it->task);
	char *p = kf_path_join(dir, name);
	if (kf_file_exists(p))
		return p;
	free(p);
	if (it->level > 0) {
		char *sub = kf_xasprintf("%s/level%d/%s", dir, it->level, name);
		if (kf_file_exists(sub))
			return sub;
		free(sub);
	}
	return NULL;
}

/* Writes the code of every task's record in a JSONL file under tmp. */
static int jsonl_candidates(const char *path, const char *tmp, struct item *v,
			    int n)
{
	char *text = NULL;
	struct kf_err err = KF_ERR_INIT;
	if (kf_file_read(path, JSONL_CAP, &text, NULL, &err))
		return fail("--candidates: %s", err.msg);
	int line = 0, rc = 0;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l && !rc;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (!*l || *l == '\r')
			continue;
		cJSON *rec = cJSON_Parse(l);
		const char *task = kf_json_str(rec, "task");
		const char *code = kf_json_str(rec, "code");
		if (!rec || !task || !code) {
			rc = fail("%s:%d: not a JSON object with string "
				  "fields \"task\" and \"code\"",
				  path, line);
			cJSON_Delete(rec);
			break;
		}
		for (int i = 0; i < n; i++) {
			if (v[i].cand || !kf_task_kb_named(v[i].id, task))
				continue;
			char *f = kf_xasprintf("%s/%d_%s", tmp, i,
					       base_name(v[i].task));
			if (kf_file_write_atomic(f, code, strlen(code), &err))
				rc = fail("%s", err.msg);
			v[i].cand = f;
			break;
		}
		cJSON_Delete(rec);
	}
	free(text);
	return rc;
}

static double speedup_of(const cJSON *res)
{
	const cJSON *tm = cJSON_GetObjectItem(res, "timing");
	const cJSON *sp = cJSON_GetObjectItem(tm, "speedup");
	if (cJSON_IsNumber(sp))
		return sp->valuedouble; /* KernelBench's ratio of means */
	return kf_json_num(sp, "median", NAN);
}

static void progress(int done, int n, const char *what)
{
	if (!isatty(2)) {
		fprintf(stderr, "[%d/%d] %s\n", done, n, what);
		return;
	}
	char bar[31];
	int fill = n ? done * 30 / n : 30;
	for (int i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	fprintf(stderr, "\r[%s] %d/%d %-40.40s", bar, done, n, what);
	if (done == n)
		fputc('\n', stderr);
	fflush(stderr);
}

/* KernelBench's eval_results.json: per problem id, a list of samples. */
static cJSON *eval_results(const struct item *v, int n)
{
	cJSON *root = cJSON_CreateObject();
	for (int i = 0; i < n; i++) {
		char pid[32];
		snprintf(pid, sizeof(pid), "%ld",
			 strtol(base_name(v[i].task), NULL, 10));
		cJSON *list = cJSON_GetObjectItem(root, pid);
		if (!list)
			list = cJSON_AddArrayToObject(root, pid);
		cJSON *s = cJSON_CreateObject();
		cJSON_AddNumberToObject(s, "sample_id",
					cJSON_GetArraySize(list));
		const cJSON *r = v[i].res;
		const char *st = r ? kf_json_str(r, "status") : NULL;
		bool compiled = st && strcmp(st, "compile_error") &&
				strcmp(st, "load_error");
		bool ok = st && !strcmp(st, "ok");
		cJSON_AddBoolToObject(s, "compiled", compiled);
		cJSON_AddBoolToObject(s, "correctness", ok);
		cJSON *md = cJSON_AddObjectToObject(s, "metadata");
		cJSON_AddStringToObject(md, "task", v[i].id ? v[i].id : "");
		cJSON_AddStringToObject(md, "kforge_status",
					st ? st : "not evaluated");
		const char *why = r ? kf_json_str(r, "reason") : v[i].error;
		if (why)
			cJSON_AddStringToObject(md, "reason", why);
		const cJSON *tm = cJSON_GetObjectItem(r, "timing");
		const cJSON *c = cJSON_GetObjectItem(tm, "candidate");
		double mean = kf_json_num(c, "mean", -1);
		cJSON_AddNumberToObject(s, "runtime", ok && c ? mean : -1);
		if (ok && c) {
			cJSON *rs = cJSON_AddObjectToObject(s, "runtime_stats");
			cJSON_AddNumberToObject(rs, "mean", mean);
			cJSON_AddNumberToObject(rs, "median",
						kf_json_num(c, "median", 0));
			cJSON_AddNumberToObject(rs, "min",
						kf_json_num(c, "min", 0));
			cJSON_AddNumberToObject(rs, "max",
						kf_json_num(c, "max", 0));
			cJSON_AddNumberToObject(rs, "num_trials",
						kf_json_num(c, "n", 0));
			cJSON_AddStringToObject(rs, "protocol",
						kf_json_str(tm, "protocol"));
			cJSON_AddNumberToObject(
			    s, "ref_runtime",
			    kf_json_num(cJSON_GetObjectItem(tm, "reference"),
					"mean", -1));
		}
		cJSON_AddItemToArray(list, s);
	}
	return root;
}

/* What `kforge bench` was asked for. */
struct bench {
	struct kf_eval_opts eo;
	const char *cands, *out_path;
	const char *report; /* --report: the HTML page, or NULL */
	int level;
	bool json;
	const char *base[MAX_BASELINES]; /* [0] is "eager" */
	int n_base;
	int jobs, gpus;	   /* the farm's; 0: its defaults */
	const char *redis; /* --redis URL, or NULL */
};

enum {
	B_CANDS = 300,
	B_LEVEL,
	B_OUT,
	B_JSON,
	B_BACKEND,
	B_PROTOCOL,
	B_PYTHON,
	B_SEED,
	B_TRIALS,
	B_TIME_CAP,
	B_NO_TIMING,
	B_BASELINE,
	B_REPORT,
	B_JOBS,
	B_GPUS,
	B_REDIS,
	B_HELP
};

static const struct option bench_opts[] = {
    {"candidates", required_argument, NULL, B_CANDS},
    {"level", required_argument, NULL, B_LEVEL},
    {"out", required_argument, NULL, B_OUT},
    {"json", no_argument, NULL, B_JSON},
    {"backend", required_argument, NULL, B_BACKEND},
    {"protocol", required_argument, NULL, B_PROTOCOL},
    {"python", required_argument, NULL, B_PYTHON},
    {"seed", required_argument, NULL, B_SEED},
    {"trials", required_argument, NULL, B_TRIALS},
    {"time-cap", required_argument, NULL, B_TIME_CAP},
    {"no-timing", no_argument, NULL, B_NO_TIMING},
    {"baseline", required_argument, NULL, B_BASELINE},
    {"report", required_argument, NULL, B_REPORT},
    {"jobs", required_argument, NULL, B_JOBS},
    {"gpus", required_argument, NULL, B_GPUS},
    {"redis", required_argument, NULL, B_REDIS},
    {"help", no_argument, NULL, B_HELP},
    {NULL, 0, NULL, 0},
};

static int number(const char *opt, const char *s, double lo, double hi,
		  double *out)
{
	char *end;
	double x = strtod(s, &end);
	if (!*s || *end || !(x >= lo && x <= hi))
		return fail("%s: '%s' is not a number from %g to %g", opt, s,
			    lo, hi);
	*out = x;
	return 0;
}

/* Adds the comma-separated baselines of one --baseline to b (each once;
 * eager is always b->base[0]). */
static int add_baselines(struct bench *b, const char *arg)
{
	char *list = kf_xstrdup(arg), *save = NULL;
	int rc = 0;
	const char *name = strtok_r(list, ",", &save);
	if (!name)
		rc = fail("--baseline: expected a name (eager, compile, "
			  "compile_ro or cudagraph)");
	for (; name && !rc; name = strtok_r(NULL, ",", &save)) {
		const char *known = NULL;
		for (int i = 0; kf_baseline_names[i]; i++)
			if (!strcmp(name, kf_baseline_names[i]))
				known = kf_baseline_names[i];
		if (!known) {
			rc = fail("--baseline: unknown baseline '%s' (valid: "
				  "eager, compile, compile_ro, cudagraph)",
				  name);
			break;
		}
		bool seen = false;
		for (int k = 0; k < b->n_base; k++)
			seen = seen || !strcmp(b->base[k], known);
		if (!seen)
			b->base[b->n_base++] = known;
	}
	free(list);
	return rc;
}

/* Parses argv into b; returns 0, 1 after --help, or 2 on bad usage. */
static int parse_args(int argc, char **argv, struct bench *b)
{
	double x;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", bench_opts, NULL)) != -1) {
		switch (ch) {
		case B_CANDS:
			b->cands = optarg;
			break;
		case B_LEVEL:
			if (number("--level", optarg, 1, 99, &x))
				return 2;
			b->level = (int)x;
			break;
		case B_OUT:
			b->out_path = optarg;
			break;
		case B_REPORT:
			b->report = optarg;
			break;
		case B_JSON:
			b->json = true;
			break;
		case B_BACKEND:
			b->eo.backend = optarg;
			break;
		case B_PROTOCOL:
			b->eo.protocol = optarg;
			break;
		case B_PYTHON:
			b->eo.python = optarg;
			break;
		case B_SEED:
			if (number("--seed", optarg, 0, 9e15, &x))
				return 2;
			b->eo.seed = (uint64_t)x;
			break;
		case B_TRIALS:
			if (number("--trials", optarg, 5, 1000, &x))
				return 2;
			b->eo.trials = (int)x;
			break;
		case B_TIME_CAP:
			if (number("--time-cap", optarg, 0.01, 3600, &x))
				return 2;
			b->eo.time_cap_s = x;
			break;
		case B_NO_TIMING:
			b->eo.no_timing = true;
			break;
		case B_BASELINE:
			if (add_baselines(b, optarg))
				return 2;
			break;
		case B_JOBS:
			if (number("--jobs", optarg, 1, 1024, &x))
				return 2;
			b->jobs = (int)x;
			break;
		case B_GPUS:
			if (number("--gpus", optarg, 1, 64, &x))
				return 2;
			b->gpus = (int)x;
			break;
		case B_REDIS:
			b->redis = optarg;
			break;
		case B_HELP:
			fputs(bench_usage, stdout);
			return 1;
		default:
			return fail("unknown option '%s' (see kforge bench "
				    "--help)",
				    argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return fail("expected TASKS (see kforge bench --help)");
	if (!b->cands)
		return fail("--candidates DIR or --candidates FILE.jsonl is "
			    "required");
	if (b->redis) {
		struct kf_err e = KF_ERR_INIT;
		if (kf_farm_redis_url(b->redis, &e))
			return fail("%s", e.msg);
		if (b->jobs || b->gpus)
			return fail("%s: does not apply with --redis (each "
				    "worker's --gpus says how many it runs at "
				    "once)",
				    b->jobs ? "--jobs" : "--gpus");
	}
	return 0;
}

/* The tasks named on the command line (files, or directories walked),
 * with their ids and levels, --level applied, in order. */
static int find_tasks(int argc, char **argv, const struct bench *b,
		      struct item **vp, int *np)
{
	struct kf_kb_task *t = NULL;
	struct kf_err err = KF_ERR_INIT;
	int n = 0;
	if (argc - optind > MAX_TASKS)
		return fail("more than %d tasks", MAX_TASKS);
	if (kf_task_kb_find(argv + optind, argc - optind, WALK_DEPTH, b->level,
			    &t, &n, &err))
		return fail("%s", err.msg);
	if (n > MAX_TASKS) {
		kf_kb_tasks_free(t, n);
		return fail("more than %d tasks", MAX_TASKS);
	}
	struct item *v = kf_xcalloc((size_t)n, sizeof(*v));
	for (int i = 0; i < n; i++) {
		v[i].task = t[i].path;
		v[i].id = t[i].id;
		v[i].level = t[i].level;
	}
	free(t);
	*vp = v;
	*np = n;
	return 0;
}

/* Each task's candidate file: from a directory, or written under tmp
 * (made here, *made_tmp set) from a JSONL file. */
static int find_candidates(const char *cands, char *tmp, bool *made_tmp,
			   struct item *v, int n)
{
	struct stat cst;
	if (stat(cands, &cst) != 0)
		return fail("--candidates: %s: %s", cands, strerror(errno));
	if (S_ISDIR(cst.st_mode)) {
		for (int i = 0; i < n; i++)
			v[i].cand = dir_candidate(cands, &v[i]);
		return 0;
	}
	if (!mkdtemp(tmp))
		return fail("%s: %s", tmp, strerror(errno));
	*made_tmp = true;
	return jsonl_candidates(cands, tmp, v, n);
}

/* The device's name or the torch version an evaluation ran with ("" when
 * the bridge never said). */
static const char *env_of(const cJSON *res, const char *key)
{
	const cJSON *e = cJSON_GetObjectItem(res, "environment");
	const char *s = kf_json_str(cJSON_GetObjectItem(e, "device"), key);
	return s ? s : "";
}

/* <cache>/baselines/<task sha256>-<name>-<protocol>-<backend>.json. */
static char *cache_path(const struct bench *b, const struct item *it,
			const char *name)
{
	char *text = NULL, hex[65];
	size_t len = 0;
	struct kf_sha256 h;
	if (kf_file_read(it->task, CACHE_CAP, &text, &len, NULL))
		return NULL;
	kf_sha256_init(&h);
	kf_sha256_update(&h, text, len);
	kf_sha256_final_hex(&h, hex);
	free(text);
	char *dir = kf_path_join(kf_cache_dir(), "baselines");
	char *p = kf_xasprintf("%s/%s-%s-%s-%s.json", dir, hex, name,
			       b->eo.protocol ? b->eo.protocol : "kforge",
			       b->eo.backend);
	free(dir);
	return p;
}

/* A cached baseline result, when it was measured on the device and with
 * the torch of this run's candidate (either unknown matches). */
static cJSON *cache_get(const char *path, const cJSON *cand)
{
	char *text = NULL;
	if (!path || kf_file_read(path, CACHE_CAP, &text, NULL, NULL))
		return NULL;
	cJSON *c = cJSON_Parse(text);
	free(text);
	const char *keys[] = {"name", "torch"};
	const char *stored[] = {kf_json_str(c, "device"),
				kf_json_str(c, "torch")};
	for (int i = 0; i < 2; i++) {
		const char *want = env_of(cand, keys[i]);
		if (!stored[i] ||
		    (*want && *stored[i] && strcmp(want, stored[i]))) {
			cJSON_Delete(c);
			return NULL;
		}
	}
	cJSON *res = cJSON_DetachItemFromObject(c, "result");
	cJSON_Delete(c);
	return res;
}

/* Keeps a baseline's result with the device and torch it ran with: its
 * own, or, where it failed before the bridge said (a torch that cannot
 * make it), the candidate's of the same run. The engine's own failures
 * (infra_error) are measured again next time. */
static void cache_put(const char *path, const cJSON *res, const cJSON *cand)
{
	const char *st = kf_json_str(res, "status");
	if (!path || !st || !strcmp(st, "infra_error"))
		return;
	cJSON *c = cJSON_CreateObject();
	const char *dev = env_of(res, "name"), *tv = env_of(res, "torch");
	cJSON_AddStringToObject(c, "device", *dev ? dev : env_of(cand, "name"));
	cJSON_AddStringToObject(c, "torch", *tv ? tv : env_of(cand, "torch"));
	cJSON_AddItemToObject(c, "result", cJSON_Duplicate(res, 1));
	char *text = cJSON_Print(c), *dir = kf_xstrdup(path);
	*strrchr(dir, '/') = '\0';
	struct kf_err err = KF_ERR_INIT;
	if (kf_mkdir_p(dir, &err) ||
	    kf_file_write_atomic(path, text, strlen(text), &err))
		fprintf(stderr, "kforge: bench: baseline not cached: %s\n",
			err.msg);
	free(dir);
	free(text);
	cJSON_Delete(c);
}

/* Baseline k of task it: from the cache, else evaluated (the task's Model
 * made into the baseline, against the eager reference) and cached. */
static void measure_baseline(const struct bench *b, struct item *it, int k)
{
	if (b->eo.no_timing) {
		it->base_error[k] = kf_xstrdup("not timed (--no-timing)");
		return;
	}
	char *path = cache_path(b, it, b->base[k]);
	it->base[k] = cache_get(path, it->res);
	it->base_cached[k] = it->base[k] != NULL;
	if (!it->base[k]) {
		struct kf_eval_opts eo = b->eo;
		struct kf_err err = KF_ERR_INIT;
		eo.baseline = b->base[k];
		if (kf_eval(it->task, NULL, &eo, &it->base[k], &err))
			it->base_error[k] = kf_xstrdup(err.msg);
		else
			cache_put(path, it->base[k], it->res);
	}
	free(path);
}

/* The farm's progress, on the bar: evaluations done of the bench's. */
struct bench_bar {
	int before, n; /* rows done before the farm (no candidate) */
};

static void farm_progress(void *arg, const struct kf_farm_progress *p)
{
	struct bench_bar *bb = arg;
	if (p->item)
		progress(bb->before + p->done, bb->n, p->item->candidate);
}

/* Every candidate through the farm (kf_farm_run here, kf_rfarm_submit on
 * --redis): loaded and compiled --jobs at a time, measured --gpus at a
 * time; then the baselines, one at a time (cached). Returns 0, or 1 when
 * the farm could not run (its reason said). */
static int evaluate(const struct bench *b, struct item *v, int n)
{
	struct kf_farm_item *fi = kf_xcalloc((size_t)n + 1, sizeof(*fi));
	int *of = kf_xcalloc((size_t)n + 1, sizeof(*of)), m = 0;
	for (int i = 0; i < n; i++) {
		if (!v[i].cand) {
			v[i].error = kf_xstrdup("no candidate");
			continue;
		}
		fi[m].task = v[i].task;
		fi[m].candidate = v[i].cand;
		of[m++] = i;
	}
	struct bench_bar bb = {n - m, n};
	struct kf_farm_opts fo = KF_FARM_OPTS_INIT;
	fo.eval = b->eo;
	fo.jobs = b->jobs;
	fo.slots = b->gpus;
	fo.progress = farm_progress;
	fo.progress_arg = &bb;
	struct kf_rfarm_submit_opts ro = KF_RFARM_SUBMIT_OPTS_INIT;
	ro.url = b->redis;
	ro.progress = farm_progress;
	ro.progress_arg = &bb;
	struct kf_rfarm_stats rs = {0};
	struct kf_err err = KF_ERR_INIT;
	int rc = 0;
	if (m)
		rc = b->redis ? kf_rfarm_submit(&ro, NULL, fi, m, &fo.eval,
						&rs, &err)
			      : kf_farm_run(NULL, fi, m, &fo, &err);
	for (int k = 0; k < m; k++) {
		struct item *it = &v[of[k]];
		it->res = fi[k].result;
		if (!it->res)
			it->error = kf_xstrdup(fi[k].err[0] ? fi[k].err
							    : "not evaluated");
	}
	free(fi);
	free(of);
	if (rc)
		return fail("%s%s", b->redis && err.code == KF_EIO ? "--redis "
								   : "",
			    err.msg);
	progress(n, n, "done");
	for (int k = 1; k < b->n_base; k++) {
		for (int i = 0; i < n; i++) {
			char *what =
			    kf_xasprintf("%s: %s", b->base[k], v[i].id);
			progress(i, n, what);
			free(what);
			measure_baseline(b, &v[i], k);
		}
		progress(n, n, b->base[k]);
	}
	return 0;
}

/* Baseline k's speedup over eager on task it; NAN when it has none. */
static double base_speedup(const struct item *it, int k)
{
	if (k == 0)
		return 1;
	const cJSON *r = it->base[k];
	const char *st = kf_json_str(r, "status");
	double sp = st && !strcmp(st, "ok") ? speedup_of(r) : NAN;
	return isfinite(sp) && sp > 0 ? sp : NAN;
}

/* The candidate's speedup over baseline k; NAN when it is not correct,
 * was not timed, or the baseline is unavailable. */
static double cand_speedup(const struct item *it, int k)
{
	const char *st = it->res ? kf_json_str(it->res, "status") : NULL;
	if (!st || strcmp(st, "ok"))
		return NAN;
	return speedup_of(it->res) / base_speedup(it, k);
}

/* KernelBench's metrics over one baseline. */
struct metrics {
	int n, correct, fast[N_P], timed, lacked;
	double log_sum;
	const char *why_lacked; /* the first task's reason */
};

static void metrics_of(const struct item *v, int n, int k, struct metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	for (int i = 0; i < n; i++) {
		const char *st =
		    v[i].res ? kf_json_str(v[i].res, "status") : NULL;
		bool ok = st && !strcmp(st, "ok");
		double sp = cand_speedup(&v[i], k);
		m->correct += ok;
		if (!isfinite(base_speedup(&v[i], k))) {
			if (!m->lacked++)
				m->why_lacked =
				    v[i].base_error[k]
					? v[i].base_error[k]
					: kf_json_str(v[i].base[k], "reason");
		}
		if (ok && isfinite(sp) && sp > 0) {
			m->timed++;
			m->log_sum += log(sp);
		}
		for (int p = 0; p < N_P; p++)
			m->fast[p] += ok && isfinite(sp) && sp > fast_ps[p];
	}
}

/* The metrics' fields in obj (the summary for eager, and each entry of
 * its "baselines"). */
static void metrics_json(const struct metrics *m, cJSON *obj)
{
	cJSON_AddNumberToObject(obj, "n", m->n);
	cJSON_AddNumberToObject(obj, "correct", m->correct);
	cJSON_AddNumberToObject(obj, "correctness_rate",
				(double)m->correct / m->n);
	cJSON *fp = cJSON_AddObjectToObject(obj, "fast_p");
	for (int p = 0; p < N_P; p++) {
		char key[16];
		snprintf(key, sizeof(key), "%g", fast_ps[p]);
		cJSON_AddNumberToObject(fp, key, (double)m->fast[p] / m->n);
	}
	if (m->timed)
		cJSON_AddNumberToObject(obj, "geomean_speedup",
					exp(m->log_sum / m->timed));
	cJSON_AddNumberToObject(obj, "timed", m->timed);
	cJSON_AddNumberToObject(obj, "lacked", m->lacked);
}

static const char *const base_what[] = {
    "eager",	  "the task's Model as written",
    "compile",	  "torch.compile(model)",
    "compile_ro", "torch.compile(model, mode=\"reduce-overhead\")",
    "cudagraph",  "a CUDA graph of the model's forward",
    NULL};

static void metrics_print(const struct bench *b, int k, const struct metrics *m)
{
	const char *what = "";
	for (int i = 0; base_what[i]; i += 2)
		if (!strcmp(base_what[i], b->base[k]))
			what = base_what[i + 1];
	printf("\nbaseline %s (%s), protocol %s, backend %s\n", b->base[k],
	       what, b->eo.protocol ? b->eo.protocol : "kforge", b->eo.backend);
	printf("correct    %d of %d (%.1f%%)\n", m->correct, m->n,
	       100.0 * m->correct / m->n);
	printf("fast_p    ");
	for (int p = 0; p < N_P; p++)
		printf(" p=%g: %.3f", fast_ps[p], (double)m->fast[p] / m->n);
	printf("\n");
	if (m->timed)
		printf("geomean    %.3fx over the %d correct, timed "
		       "candidates\n",
		       exp(m->log_sum / m->timed), m->timed);
	if (k > 0)
		printf("lacked     %d of %d tasks lacked baseline %s%s%s\n",
		       m->lacked, m->n, b->base[k],
		       m->why_lacked ? ", first because: " : "",
		       m->why_lacked ? m->why_lacked : "");
}

/* The row's speedups over the further baselines, in JSON and in the
 * table's columns (a cached baseline's marked *). */
static void row_baselines(const struct bench *b, const struct item *it,
			  cJSON *row, char *cols, size_t cap)
{
	cJSON *bj =
	    b->n_base > 1 ? cJSON_AddObjectToObject(row, "baselines") : NULL;
	size_t used = 0;
	cols[0] = '\0';
	for (int k = 1; k < b->n_base; k++) {
		cJSON *o = cJSON_AddObjectToObject(bj, b->base[k]);
		const cJSON *r = it->base[k];
		const char *st = kf_json_str(r, "status");
		cJSON_AddStringToObject(o, "status", st ? st : "not evaluated");
		double bs = base_speedup(it, k), cs = cand_speedup(it, k);
		if (isfinite(bs))
			cJSON_AddNumberToObject(o, "speedup_over_eager", bs);
		if (isfinite(cs))
			cJSON_AddNumberToObject(o, "speedup", cs);
		const char *why = it->base_error[k] ? it->base_error[k]
						    : kf_json_str(r, "reason");
		if (why && !isfinite(bs))
			cJSON_AddStringToObject(o, "reason", why);
		cJSON_AddBoolToObject(o, "cached", it->base_cached[k]);
		char cell[32] = "-";
		if (!isfinite(bs))
			snprintf(cell, sizeof(cell), "n/a");
		else if (isfinite(cs))
			snprintf(cell, sizeof(cell), "%.3f", cs);
		if (it->base_cached[k])
			strcat(cell, "*");
		used +=
		    (size_t)snprintf(cols + used, cap - used, " %12s", cell);
		if (used >= cap)
			used = cap - 1;
	}
}

/* The 95% interval of a kforge-protocol speedup over eager, into lo and hi;
 * false when the result has none (KernelBench's protocol gives a ratio of
 * means alone). */
static bool speedup_ci(const cJSON *res, double *lo, double *hi)
{
	const cJSON *sp =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(res, "timing"), "speedup");
	const cJSON *ci = cJSON_GetObjectItem(sp, "ci95");
	if (cJSON_GetArraySize(ci) != 2)
		return false;
	*lo = cJSON_GetArrayItem(ci, 0)->valuedouble;
	*hi = cJSON_GetArrayItem(ci, 1)->valuedouble;
	return isfinite(*lo) && isfinite(*hi);
}

/* The speedup KernelBench's protocol measured beside kforge's
 * (--protocol both), or NAN. */
static double kb_speedup_of(const cJSON *res)
{
	const cJSON *sp = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(res, "timing_kernelbench"), "speedup");
	return cJSON_IsNumber(sp) ? sp->valuedouble : NAN;
}

/* What kforge report draws of a row's result: the timing summaries (of
 * kforge's protocol, or KernelBench's alone) and per-call samples, the
 * roofline, the wall and compile seconds. */
static void row_details(const cJSON *r, double compile_s, cJSON *row)
{
	const cJSON *tm = cJSON_GetObjectItem(r, "timing");
	if (cJSON_IsObject(tm)) {
		cJSON *t = cJSON_AddObjectToObject(row, "timing");
		static const char *const keys[] = {"protocol", "reference",
						   "candidate", "pairs",
						   "samples"};
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const cJSON *x = cJSON_GetObjectItem(tm, keys[k]);
			if (x)
				cJSON_AddItemToObject(t, keys[k],
						      cJSON_Duplicate(x, 1));
		}
	}
	const cJSON *rl = cJSON_GetObjectItem(r, "roofline");
	if (cJSON_IsObject(rl))
		cJSON_AddItemToObject(row, "roofline", cJSON_Duplicate(rl, 1));
	if (cJSON_IsNumber(cJSON_GetObjectItem(r, "seconds")))
		cJSON_AddNumberToObject(row, "seconds",
					kf_json_num(r, "seconds", 0));
	if (isfinite(compile_s))
		cJSON_AddNumberToObject(row, "compile_s", compile_s);
}

/* The environment of the bench: that of the first result whose worker
 * described its device, with its compiler and seed. */
static void bench_environment(const struct item *v, int n, cJSON *sum)
{
	for (int i = 0; i < n; i++) {
		const cJSON *e = cJSON_GetObjectItem(v[i].res, "environment");
		if (!cJSON_IsObject(cJSON_GetObjectItem(e, "device")))
			continue;
		cJSON_AddItemToObject(sum, "environment",
				      cJSON_Duplicate(e, 1));
		const char *tc = kf_json_str(v[i].res, "toolchain");
		const char *seed = kf_json_str(v[i].res, "seed");
		if (tc)
			cJSON_AddStringToObject(sum, "toolchain", tc);
		if (seed)
			cJSON_AddStringToObject(sum, "seed", seed);
		return;
	}
}

/* The per-task table (or its rows in sum's "tasks"): the speedup over
 * eager with its interval, and KernelBench's beside it with --protocol
 * both. */
static void report_rows(const struct bench *b, const struct item *v, int n,
			cJSON *sum)
{
	cJSON *rows = cJSON_AddArrayToObject(sum, "tasks");
	bool both = b->eo.protocol && !strcmp(b->eo.protocol, "both");
	if (!b->json) {
		printf("%-36s %-14s %-16s %9s %-17s", "task", "status", "check",
		       "speedup", "[95% CI]");
		if (both)
			printf(" %9s", "kb_speedup");
		for (int k = 1; k < b->n_base; k++)
			printf(" %12.12s", b->base[k]);
		printf(" %9s\n", "compile_s");
	}
	for (int i = 0; i < n; i++) {
		const cJSON *r = v[i].res;
		const char *st = r ? kf_json_str(r, "status") : "not evaluated";
		const char *chk = r ? kf_json_str(r, "check") : NULL;
		if (!chk && cJSON_IsTrue(cJSON_GetObjectItem(
				cJSON_GetObjectItem(r, "degenerate"), "flag")))
			chk = "degenerate task";
		double sp = cand_speedup(&v[i], 0);
		double cs = kf_json_num(
		    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "compile"),
					"candidate"),
		    "seconds", NAN);
		cJSON *row = cJSON_CreateObject();
		cJSON_AddStringToObject(row, "task", v[i].id);
		cJSON_AddStringToObject(row, "status", st);
		if (chk)
			cJSON_AddStringToObject(row, "check", chk);
		double lo = NAN, hi = NAN, kbs = kb_speedup_of(r);
		bool has_ci = isfinite(sp) && speedup_ci(r, &lo, &hi);
		if (isfinite(sp))
			cJSON_AddNumberToObject(row, "speedup", sp);
		if (has_ci) {
			cJSON *ci = cJSON_AddArrayToObject(row, "speedup_ci95");
			cJSON_AddItemToArray(ci, cJSON_CreateNumber(lo));
			cJSON_AddItemToArray(ci, cJSON_CreateNumber(hi));
		}
		if (isfinite(kbs) && isfinite(sp))
			cJSON_AddNumberToObject(row, "speedup_kernelbench",
						kbs);
		if (v[i].error)
			cJSON_AddStringToObject(row, "error", v[i].error);
		row_details(r, cs, row);
		char cols[MAX_BASELINES * 16];
		row_baselines(b, &v[i], row, cols, sizeof(cols));
		cJSON_AddItemToArray(rows, row);
		if (b->json)
			continue;
		char sps[32] = "-", css[32] = "-", cis[48] = "-", kbc[32] = "";
		if (isfinite(sp))
			snprintf(sps, sizeof(sps), "%.3f", sp);
		if (has_ci)
			snprintf(cis, sizeof(cis), "[%.3f, %.3f]", lo, hi);
		if (both)
			snprintf(kbc, sizeof(kbc), " %9s", "-");
		if (both && isfinite(kbs) && isfinite(sp))
			snprintf(kbc, sizeof(kbc), " %9.3f", kbs);
		if (isfinite(cs))
			snprintf(css, sizeof(css), "%.2f", cs);
		printf("%-36s %-14s %-16s %9s %-17s%s%s %9s\n", v[i].id, st,
		       chk ? chk : (v[i].error ? v[i].error : "-"), sps, cis,
		       kbc, cols, css);
	}
}

static bool any_cached(const struct bench *b, const struct item *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 1; k < b->n_base; k++)
			if (v[i].base_cached[k])
				return true;
	return false;
}

/* The summary: the table, the metrics once per baseline, eval_results.json
 * (eager, as KernelBench writes it). */
static int report(const struct bench *b, const struct item *v, int n)
{
	int rc = 0;
	const char *proto = b->eo.protocol ? b->eo.protocol : "kforge";
	cJSON *sum = cJSON_CreateObject();
	report_rows(b, v, n, sum);
	struct metrics m[MAX_BASELINES];
	for (int k = 0; k < b->n_base; k++)
		metrics_of(v, n, k, &m[k]);
	metrics_json(&m[0], sum);
	cJSON_DeleteItemFromObject(sum, "lacked");
	cJSON_AddStringToObject(sum, "baseline", "eager");
	cJSON_AddStringToObject(sum, "protocol", proto);
	cJSON_AddStringToObject(sum, "backend", b->eo.backend);
	cJSON_AddStringToObject(sum, "eval_results", b->out_path);
	cJSON *bs = cJSON_AddObjectToObject(sum, "baselines");
	for (int k = 0; k < b->n_base; k++)
		metrics_json(&m[k], cJSON_AddObjectToObject(bs, b->base[k]));
	bench_environment(v, n, sum);
	cJSON *er = eval_results(v, n);
	char *text = cJSON_Print(er);
	struct kf_err err = KF_ERR_INIT;
	if (kf_file_write_atomic(b->out_path, text, strlen(text), &err))
		rc = fail("--out: %s", err.msg);
	free(text);
	cJSON_Delete(er);
	/* The page of the bench, from the same summary. */
	if (b->report && kf_report_bench_page(sum, b->report) && !rc)
		rc = 2;
	if (b->json) {
		char *s = cJSON_Print(sum);
		puts(s);
		free(s);
	} else {
		for (int k = 0; k < b->n_base; k++)
			metrics_print(b, k, &m[k]);
		if (any_cached(b, v, n))
			printf("*          baseline result reused from %s/"
			       "baselines (same task file, protocol, "
			       "backend, device and torch)\n",
			       kf_cache_dir());
		printf("wrote      %s\n", b->out_path);
	}
	cJSON_Delete(sum);
	return rc;
}

int cmd_bench(int argc, char **argv)
{
	struct bench b = {.eo = KF_EVAL_OPTS_INIT,
			  .out_path = "eval_results.json",
			  .base = {"eager"},
			  .n_base = 1};
	struct item *v = NULL;
	int n = 0, rc = parse_args(argc, argv, &b);
	char tmp[] = "/tmp/kforge-bench-XXXXXX";
	bool made_tmp = false;
	if (rc)
		return rc == 1 ? 0 : rc;
	if ((rc = find_tasks(argc, argv, &b, &v, &n)) ||
	    (rc = find_candidates(b.cands, tmp, &made_tmp, v, n)))
		goto out;
	if ((rc = evaluate(&b, v, n)))
		goto out;
	rc = report(&b, v, n);
out:
	for (int i = 0; i < n; i++) {
		free(v[i].task);
		free(v[i].id);
		if (made_tmp && v[i].cand)
			unlink(v[i].cand);
		free(v[i].cand);
		free(v[i].error);
		cJSON_Delete(v[i].res);
		for (int k = 0; k < MAX_BASELINES; k++) {
			cJSON_Delete(v[i].base[k]);
			free(v[i].base_error[k]);
		}
	}
	free(v);
	if (made_tmp)
		rmdir(tmp);
	return rc;
}
