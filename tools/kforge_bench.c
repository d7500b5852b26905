/*
 * kforge_bench.c: `kforge bench`, KernelBench-style metrics over many tasks:
 * evaluates one candidate per KernelBench-format task, then prints the
 * correctness rate, fast_p and the geometric-mean speedup.
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
#include <kforge/task.h>

#include "commands.h"

#define JSONL_CAP (256u << 20) /* bytes of a candidates file */
#define MAX_TASKS 4096	       /* tasks in one run */
#define WALK_DEPTH 3	       /* directory levels searched for tasks */
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
	bool walked; /* found in a directory (not named on the command
			line): skipped when it is not a task */
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

/* A KernelBench task file name: digits, '_', a name, ".py". */
static bool task_name(const char *name)
{
	size_t n = strlen(name);
	const char *p = name;
	while (*p >= '0' && *p <= '9')
		p++;
	return p > name && *p == '_' && n > 3 && !strcmp(name + n - 3, ".py");
}

static int add_task(struct item **v, int *n, const char *path)
{
	if (*n >= MAX_TASKS)
		return fail("more than %d tasks", MAX_TASKS);
	*v = kf_xrealloc(*v, sizeof(**v) * (size_t)(*n + 1));
	memset(&(*v)[*n], 0, sizeof(**v));
	(*v)[(*n)++].task = kf_xstrdup(path);
	return 0;
}

static int walk(const char *dir, int depth, struct item **v, int *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return fail("%s: %s", dir, strerror(errno));
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = kf_path_join(dir, e->d_name);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth > 1)
			rc = walk(p, depth - 1, v, n);
		else if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
			 task_name(e->d_name) && !(rc = add_task(v, n, p)))
			(*v)[*n - 1].walked = true;
		free(p);
	}
	closedir(d);
	return rc;
}

/* Level, then problem number, then name. */
static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	long nx = strtol(base_name(x->task), NULL, 10);
	long ny = strtol(base_name(y->task), NULL, 10);
	if (nx != ny)
		return nx < ny ? -1 : 1;
	return strcmp(x->task, y->task);
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

/* True when a JSONL record's task names the item. */
static bool names_task(const char *key, const struct item *it)
{
	const char *name = base_name(it->task);
	size_t stem = strlen(name) - 3;
	return !strcmp(key, name) || !strcmp(key, it->id) ||
	       (strlen(key) == stem && !strncmp(key, name, stem));
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
			if (v[i].cand || !names_task(task, &v[i]))
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

int cmd_bench(int argc, char **argv)
{
	struct kf_eval_opts eo = KF_EVAL_OPTS_INIT;
	const char *cands = NULL, *out_path = "eval_results.json";
	int level = 0, ch, rc = 0, n = 0;
	bool json = false;
	double x;
	struct item *v = NULL;
	char tmp[] = "/tmp/kforge-bench-XXXXXX";
	bool made_tmp = false;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", bench_opts, NULL)) != -1) {
		switch (ch) {
		case B_CANDS:
			cands = optarg;
			break;
		case B_LEVEL:
			if (number("--level", optarg, 1, 99, &x))
				return 2;
			level = (int)x;
			break;
		case B_OUT:
			out_path = optarg;
			break;
		case B_JSON:
			json = true;
			break;
		case B_BACKEND:
			eo.backend = optarg;
			break;
		case B_PROTOCOL:
			eo.protocol = optarg;
			break;
		case B_PYTHON:
			eo.python = optarg;
			break;
		case B_SEED:
			if (number("--seed", optarg, 0, 9e15, &x))
				return 2;
			eo.seed = (uint64_t)x;
			break;
		case B_TRIALS:
			if (number("--trials", optarg, 5, 1000, &x))
				return 2;
			eo.trials = (int)x;
			break;
		case B_TIME_CAP:
			if (number("--time-cap", optarg, 0.01, 3600, &x))
				return 2;
			eo.time_cap_s = x;
			break;
		case B_NO_TIMING:
			eo.no_timing = true;
			break;
		case B_HELP:
			fputs(bench_usage, stdout);
			return 0;
		default:
			return fail("unknown option '%s' (see kforge bench "
				    "--help)",
				    argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return fail("expected TASKS (see kforge bench --help)");
	if (!cands)
		return fail("--candidates DIR or --candidates FILE.jsonl is "
			    "required");
	for (int i = optind; i < argc && !rc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0)
			rc = fail("%s: %s", argv[i], strerror(errno));
		else if (S_ISDIR(st.st_mode))
			rc = walk(argv[i], WALK_DEPTH, &v, &n);
		else
			rc = add_task(&v, &n, argv[i]);
	}
	if (rc)
		goto out;
	/* Ids and levels; then --level keeps only its own. */
	for (int i = 0; i < n; i++) {
		struct kf_task *t = NULL;
		struct kf_err err = KF_ERR_INIT;
		if (!kf_task_is_kernelbench(v[i].task) ||
		    kf_task_load(v[i].task, &t, &err)) {
			if (v[i].walked) /* a candidate beside the tasks */
				continue;
			rc = fail("%s", kf_task_is_kernelbench(v[i].task)
					    ? err.msg
					    : "not a KernelBench-format task "
					      "(.py)");
			goto out;
		}
		v[i].id = kf_xstrdup(t->id);
		v[i].level = t->level;
		kf_task_free(t);
	}
	int kept = 0;
	for (int i = 0; i < n; i++) {
		if (!v[i].id || (level && v[i].level != level)) {
			free(v[i].task);
			free(v[i].id);
			continue;
		}
		v[kept++] = v[i];
	}
	n = kept;
	if (n == 0) {
		rc = fail("no KernelBench-format task (N_Name.py) found%s",
			  level ? " at that level" : "");
		goto out;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_item);
	struct stat cst;
	if (stat(cands, &cst) != 0) {
		rc = fail("--candidates: %s: %s", cands, strerror(errno));
		goto out;
	}
	if (S_ISDIR(cst.st_mode)) {
		for (int i = 0; i < n; i++)
			v[i].cand = dir_candidate(cands, &v[i]);
	} else {
		if (!mkdtemp(tmp)) {
			rc = fail("%s: %s", tmp, strerror(errno));
			goto out;
		}
		made_tmp = true;
		if ((rc = jsonl_candidates(cands, tmp, v, n)))
			goto out;
	}
	for (int i = 0; i < n; i++) {
		progress(i, n, v[i].id);
		struct kf_err err = KF_ERR_INIT;
		if (!v[i].cand)
			v[i].error = kf_xstrdup("no candidate");
		else if (kf_eval(v[i].task, v[i].cand, &eo, &v[i].res, &err))
			v[i].error = kf_xstrdup(err.msg);
	}
	progress(n, n, "done");

	int correct = 0, fast[N_P] = {0}, timed = 0;
	double log_sum = 0;
	cJSON *sum = cJSON_CreateObject();
	cJSON *rows = cJSON_AddArrayToObject(sum, "tasks");
	if (!json)
		printf("%-36s %-14s %-16s %9s %9s\n", "task", "status", "check",
		       "speedup", "compile_s");
	for (int i = 0; i < n; i++) {
		const cJSON *r = v[i].res;
		const char *st = r ? kf_json_str(r, "status") : "not evaluated";
		const char *chk = r ? kf_json_str(r, "check") : NULL;
		if (!chk && cJSON_IsTrue(cJSON_GetObjectItem(
				cJSON_GetObjectItem(r, "degenerate"), "flag")))
			chk = "degenerate task";
		bool ok = r && !strcmp(st, "ok");
		double sp = ok ? speedup_of(r) : NAN;
		double cs = kf_json_num(
		    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "compile"),
					"candidate"),
		    "seconds", NAN);
		correct += ok;
		if (ok && isfinite(sp) && sp > 0) {
			timed++;
			log_sum += log(sp);
		}
		for (int k = 0; k < N_P; k++)
			fast[k] += ok && isfinite(sp) && sp > fast_ps[k];
		cJSON *row = cJSON_CreateObject();
		cJSON_AddStringToObject(row, "task", v[i].id);
		cJSON_AddStringToObject(row, "status", st);
		if (chk)
			cJSON_AddStringToObject(row, "check", chk);
		if (isfinite(sp))
			cJSON_AddNumberToObject(row, "speedup", sp);
		if (v[i].error)
			cJSON_AddStringToObject(row, "error", v[i].error);
		cJSON_AddItemToArray(rows, row);
		if (json)
			continue;
		char sps[32] = "-", css[32] = "-";
		if (isfinite(sp))
			snprintf(sps, sizeof(sps), "%.3f", sp);
		if (isfinite(cs))
			snprintf(css, sizeof(css), "%.2f", cs);
		printf("%-36s %-14s %-16s %9s %9s\n", v[i].id, st,
		       chk ? chk : (v[i].error ? v[i].error : "-"), sps, css);
	}
	const char *proto = eo.protocol ? eo.protocol : "kforge";
	cJSON_AddNumberToObject(sum, "n", n);
	cJSON_AddNumberToObject(sum, "correct", correct);
	cJSON_AddNumberToObject(sum, "correctness_rate", (double)correct / n);
	cJSON *fp = cJSON_AddObjectToObject(sum, "fast_p");
	for (int k = 0; k < N_P; k++) {
		char key[16];
		snprintf(key, sizeof(key), "%g", fast_ps[k]);
		cJSON_AddNumberToObject(fp, key, (double)fast[k] / n);
	}
	double geo = timed ? exp(log_sum / timed) : NAN;
	if (timed)
		cJSON_AddNumberToObject(sum, "geomean_speedup", geo);
	cJSON_AddNumberToObject(sum, "timed", timed);
	cJSON_AddStringToObject(sum, "baseline", "eager");
	cJSON_AddStringToObject(sum, "protocol", proto);
	cJSON_AddStringToObject(sum, "backend", eo.backend);
	cJSON_AddStringToObject(sum, "eval_results", out_path);
	cJSON *er = eval_results(v, n);
	char *text = cJSON_Print(er);
	struct kf_err err = KF_ERR_INIT;
	if (kf_file_write_atomic(out_path, text, strlen(text), &err))
		rc = fail("--out: %s", err.msg);
	free(text);
	cJSON_Delete(er);
	if (json) {
		char *s = cJSON_Print(sum);
		puts(s);
		free(s);
	} else {
		printf("\nbaseline eager (the task's Model as written), "
		       "protocol %s, backend %s\n",
		       proto, eo.backend);
		printf("correct    %d of %d (%.1f%%)\n", correct, n,
		       100.0 * correct / n);
		printf("fast_p    ");
		for (int k = 0; k < N_P; k++)
			printf(" p=%g: %.3f", fast_ps[k], (double)fast[k] / n);
		printf("\n");
		if (timed)
			printf("geomean    %.3fx over the %d correct, timed "
			       "candidates\n",
			       geo, timed);
		printf("wrote      %s\n", out_path);
	}
	cJSON_Delete(sum);
out:
	for (int i = 0; i < n; i++) {
		free(v[i].task);
		free(v[i].id);
		if (made_tmp && v[i].cand)
			unlink(v[i].cand);
		free(v[i].cand);
		free(v[i].error);
		cJSON_Delete(v[i].res);
	}
	free(v);
	if (made_tmp)
		rmdir(tmp);
	return rc;
}
