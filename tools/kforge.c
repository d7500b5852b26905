/*
 * kforge.c: the command-line interface, a client of the public API. One
 * table of subcommands; each takes --help. Exit codes: 0 success (status
 * ok), 1 a verdict other than ok, 2 bad usage or an error of the engine.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kforge/exec.h>
#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/farm.h>
#include <kforge/policy.h>
#include <kforge/search.h>
#include <kforge/store.h>
#include <kforge/task.h>

#include "commands.h"
#include "serve_usage.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
	const char *purpose; /* one line for kforge --help, with its doc */
};

/* The edit distance (insertions, deletions, substitutions) of a and b,
 * or 99 when either is over 63 bytes. */
static int edit_distance(const char *a, const char *b)
{
	size_t m = strlen(a), n = strlen(b);
	if (m > 63 || n > 63)
		return 99;
	int row[64];
	for (size_t j = 0; j <= n; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= m; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= n; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[n];
}

const char *kf_cli_suggest(const char *word, const char *const *names,
			   size_t n)
{
	const char *best = NULL;
	int bd = 99;
	for (size_t i = 0; i < n; i++) {
		if (!names[i])
			continue;
		int d = edit_distance(word, names[i]);
		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	int len = (int)strlen(word);
	return best && bd > 0 && bd <= (len < 6 ? 1 : 2) ? best : NULL;
}

const char *kf_cli_suggest_option(const char *arg, const struct option *opts,
				  const char *allowed)
{
	char word[64];
	if (strncmp(arg, "--", 2))
		return NULL;
	snprintf(word, sizeof(word), "%s", arg + 2);
	word[strcspn(word, "=")] = 0;
	const char *names[128];
	size_t n = 0;
	for (const struct option *o = opts; o->name && n < 128; o++)
		if (!allowed || strstr(allowed, o->name))
			names[n++] = o->name;
	return kf_cli_suggest(word, names, n);
}

/* " (did you mean --NAME?)" for an unknown option arg, or "". */
static const char *did_you_mean(const char *arg, const struct option *opts,
				const char *allowed, char *buf, size_t size)
{
	const char *s = kf_cli_suggest_option(arg, opts, allowed);
	if (!s)
		return "";
	snprintf(buf, size, "; did you mean --%s?", s);
	return buf;
}

int kf_cli_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("kforge: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

static int parse_u64(const char *opt, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || *s == '-')
		return kf_cli_die("%s: '%s' is not a non-negative integer", opt, s);
	*out = v;
	return 0;
}

static int parse_double(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || !(v > 0))
		return kf_cli_die("%s: '%s' is not a positive number", opt, s);
	*out = v;
	return 0;
}

enum {
	OPT_JSON = 256,
	OPT_BACKEND,
	OPT_SEED,
	OPT_TRIALS,
	OPT_NO_TIMING,
	OPT_TIME_CAP,
	OPT_CALL_TIMEOUT,
	OPT_NO_CACHE,
	OPT_ROOT,
	OPT_TASK,
	OPT_MEM_LIMIT,
	OPT_PROTOCOL,
	OPT_MANIFEST,
	OPT_PYTHON,
	OPT_ENERGY_TIME,
	OPT_REQUIRE_CUSTOM,
	OPT_JOBS,
	OPT_HELP,
};

static const struct option eval_longopts[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"seed", required_argument, NULL, OPT_SEED},
    {"trials", required_argument, NULL, OPT_TRIALS},
    {"no-timing", no_argument, NULL, OPT_NO_TIMING},
    {"time-cap", required_argument, NULL, OPT_TIME_CAP},
    {"call-timeout-ms", required_argument, NULL, OPT_CALL_TIMEOUT},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"root", required_argument, NULL, OPT_ROOT},
    {"task", required_argument, NULL, OPT_TASK},
    {"mem-limit-mb", required_argument, NULL, OPT_MEM_LIMIT},
    {"protocol", required_argument, NULL, OPT_PROTOCOL},
    {"manifest", required_argument, NULL, OPT_MANIFEST},
    {"python", required_argument, NULL, OPT_PYTHON},
    {"energy-time", required_argument, NULL, OPT_ENERGY_TIME},
    {"require-custom-kernel", no_argument, NULL, OPT_REQUIRE_CUSTOM},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

struct common {
	struct kf_eval_opts eo;
	bool json;
	const char *root;
	const char *task_filter;
	const char *manifest;
	int jobs; /* evaluations at once (redteam) */
	bool help;
};

/* Parses the options shared by the subcommands; returns 0, or 2 on error. */
static int parse_common(int argc, char **argv, struct common *c,
			const char *allowed)
{
	struct kf_eval_opts d = KF_EVAL_OPTS_INIT;
	c->eo = d;
	c->json = false;
	c->root = "tasks";
	c->task_filter = NULL;
	c->manifest = NULL;
	c->jobs = 1;
	c->help = false;
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "", eval_longopts, NULL)) != -1) {
		uint64_t u = 0;
		const char *name = NULL;
		for (const struct option *o = eval_longopts; o->name; o++)
			if (o->val == ch)
				name = o->name;
		if (ch == '?' || ch == ':') {
			char hint[96];
			return kf_cli_die(
			    "%s: unknown option '%s'%s (see --help)", argv[0],
			    argv[optind - 1],
			    did_you_mean(argv[optind - 1], eval_longopts,
					 allowed, hint, sizeof(hint)));
		}
		if (name && !strstr(allowed, name))
			return kf_cli_die("%s: option --%s does not apply here",
				   argv[0], name);
		switch (ch) {
		case OPT_JSON:
			c->json = true;
			break;
		case OPT_BACKEND:
			c->eo.backend = optarg;
			break;
		case OPT_SEED:
			if (parse_u64("--seed", optarg, &c->eo.seed))
				return 2;
			break;
		case OPT_TRIALS:
			if (parse_u64("--trials", optarg, &u))
				return 2;
			if (u < 5 || u > 1000)
				return kf_cli_die("--trials: %s is out of range "
					   "(5 to 1000)",
					   optarg);
			c->eo.trials = (int)u;
			break;
		case OPT_NO_TIMING:
			c->eo.no_timing = true;
			break;
		case OPT_TIME_CAP:
			if (parse_double("--time-cap", optarg,
					 &c->eo.time_cap_s))
				return 2;
			break;
		case OPT_CALL_TIMEOUT:
			if (parse_double("--call-timeout-ms", optarg,
					 &c->eo.call_timeout_ms))
				return 2;
			break;
		case OPT_NO_CACHE:
			c->eo.no_cache = true;
			break;
		case OPT_ROOT:
			c->root = optarg;
			break;
		case OPT_TASK:
			c->task_filter = optarg;
			break;
		case OPT_MEM_LIMIT:
			if (parse_u64("--mem-limit-mb", optarg, &u))
				return 2;
			if (u < 64)
				return kf_cli_die("--mem-limit-mb: %s is below the "
					   "minimum of 64",
					   optarg);
			c->eo.mem_limit_bytes = u << 20;
			break;
		case OPT_PROTOCOL:
			c->eo.protocol = optarg;
			break;
		case OPT_MANIFEST:
			c->manifest = optarg;
			break;
		case OPT_PYTHON:
			c->eo.python = optarg;
			break;
		case OPT_ENERGY_TIME:
			if (kf_parse_energy_time(optarg, &c->eo.energy_s))
				return 2;
			break;
		case OPT_REQUIRE_CUSTOM:
			c->eo.require_custom_kernel = true;
			break;
		case OPT_JOBS:
			if (parse_u64("--jobs", optarg, &u))
				return 2;
			if (u < 1 || u > 64)
				return kf_cli_die("--jobs: %s is not between 1 "
						  "and 64",
						  optarg);
			c->jobs = (int)u;
			break;
		case OPT_HELP:
			c->help = true;
			break;
		}
	}
	return 0;
}

static const char eval_usage[] =
    "usage: kforge eval TASK CANDIDATE [options]\n"
    "       kforge eval TASK CANDIDATE... [--jobs N] [--gpus N] [options]\n"
    "\n"
    "Checks CANDIDATE (a .c or .cu file defining kf_entry) against the\n"
    "reference of TASK (a task directory or its task.json) on fresh\n"
    "random inputs, then times both, interleaved.\n"
    "\n"
    "  --json               print the result JSON (docs/results.md)\n"
    "  --backend host|cuda  where to run (default host)\n"
    "  --seed N             base seed; trial t uses N+t (default: a\n"
    "                       random one, shown in the result)\n"
    "  --trials N           correctness trials, 5..1000 (default 6)\n"
    "  --no-timing          checks only\n"
    "  --time-cap S         timing budget in seconds (default 10)\n"
    "  --call-timeout-ms MS longest one call may take in checks\n"
    "                       (default: the task's call_timeout_ms)\n"
    "  --no-cache           recompile even when the object is cached\n"
    "  --mem-limit-mb MB    the host worker's memory (default: 1 GiB\n"
    "                       plus 8x the task's largest tensors)\n"
    "  --protocol P         timing: kforge (default), kernelbench (its\n"
    "                       protocol: mean of 100 event-timed calls per\n"
    "                       side) or both, side by side\n"
    "  --python PATH        KernelBench-format tasks (TASK.py, with a\n"
    "                       ModelNew CANDIDATE.py): the Python with torch\n"
    "                       that runs them (default: the first python3 on\n"
    "                       PATH that has torch); see docs/kernelbench.md\n"
    "  --energy-time S      cuda, where NVML counts energy: seconds each\n"
    "                       side runs back to back for energy.* after\n"
    "                       timing, 0 to 60 (default 0.5; 0 skips it)\n"
    "  --require-custom-kernel  KernelBench-format: a ModelNew that\n"
    "                       builds no extension, or loads after a failed\n"
    "                       build, is rejected (no_custom_kernel)\n"
    "  --jobs N             with several candidates: N compile at once\n"
    "                       (default: the cores) while others are timed\n"
    "  --gpus N             GPUs measuring at once, one candidate each\n"
    "                       (default: all visible; host: evaluations at\n"
    "                       once, default 1); one line per candidate;\n"
    "                       --batch FILE: \"TASK CANDIDATE\" lines\n"
    "  --redis URL          with several candidates or --batch: evaluate\n"
    "                       on the farm's workers (kforge farm worker,\n"
    "                       docs/scale.md); --deadline S to wait (3600)\n"
    "\n"
    "Exit status: 0 ok, 1 another verdict, 2 bad usage or engine error.\n";

static int emit(const cJSON *res, bool json)
{
	if (json) {
		char *s = cJSON_Print(res);
		puts(s);
		free(s);
	} else {
		struct kf_strbuf sb = KF_STRBUF_INIT;
		kf_result_print(res, &sb);
		fputs(kf_strbuf_str(&sb), stdout);
		kf_strbuf_release(&sb);
	}
	/* The result first, whole: a result over the buffer's size would
	 * otherwise be split by the line on stderr where both go to one
	 * file. */
	fflush(stdout);
	enum kf_status st = kf_result_status(res);
	if (st != KF_STATUS_OK) {
		const char *reason = kf_json_str(res, "reason");
		fprintf(stderr, "kforge: %s: %s\n", kf_status_name(st),
			reason ? reason : "");
	}
	return st == KF_STATUS_OK ? 0 : 1;
}

static int cmd_eval(int argc, char **argv)
{
	struct common c;
	if (kf_evalmany_wanted(argc, argv))
		return kf_cmd_evalmany(argc,
				       argv); /* tools/kforge_evalmany.c */
	if (parse_common(argc, argv, &c,
			 "json backend seed trials no-timing time-cap "
			 "call-timeout-ms no-cache mem-limit-mb protocol "
			 "python energy-time require-custom-kernel help"))
		return 2;
	if (c.help) {
		fputs(eval_usage, stdout);
		return 0;
	}
	if (argc - optind != 2)
		return kf_cli_die("eval: expected TASK and CANDIDATE (see kforge "
			   "eval --help)");
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	if (kf_eval(argv[optind], argv[optind + 1], &c.eo, &res, &err))
		return kf_cli_die("%s", err.msg);
	int rc = emit(res, c.json);
	cJSON_Delete(res);
	return rc;
}

static const char tasks_usage[] =
    "usage: kforge tasks [--root DIR] [--json]\n"
    "\n"
    "Lists the tasks under DIR (default tasks/): timing dims, hidden dim\n"
    "sets, FLOP and byte counts of one call at the timing dims.\n";

static int cmd_tasks(int argc, char **argv)
{
	struct common c;
	if (parse_common(argc, argv, &c, "root json help"))
		return 2;
	if (c.help) {
		fputs(tasks_usage, stdout);
		return 0;
	}
	if (optind != argc)
		return kf_cli_die("tasks: unexpected argument '%s'", argv[optind]);
	struct kf_err err = KF_ERR_INIT;
	char **paths = NULL;
	int n = 0, rc = 0;
	if (kf_task_find(c.root, &paths, &n, &err))
		return kf_cli_die("%s", err.msg);
	cJSON *arr = cJSON_CreateArray();
	if (!c.json)
		printf("%-28s %-34s %6s %10s %10s\n", "task", "timing dims",
		       "hidden", "GFLOP", "MB");
	for (int i = 0; i < n; i++) {
		struct kf_task *t = NULL;
		if (kf_task_load(paths[i], &t, &err)) {
			fprintf(stderr, "kforge: %s\n", err.msg);
			rc = 2;
			continue;
		}
		char *dims = kf_task_dims_str(t, 0);
		/* The fixed sets and those each evaluation draws. */
		int hidden = t->n_fixed_dimsets - 1 + t->hidden_sets;
		if (c.json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "id", t->id);
			cJSON_AddStringToObject(o, "dims", dims);
			cJSON_AddNumberToObject(o, "hidden_sets", hidden);
			cJSON_AddNumberToObject(o, "flops",
						kf_task_flops(t, 0));
			cJSON_AddNumberToObject(o, "bytes",
						kf_task_bytes(t, 0));
			cJSON_AddStringToObject(o, "description",
						t->description);
			cJSON_AddItemToArray(arr, o);
		} else {
			printf("%-28s %-34s %6d %10.3f %10.2f\n", t->id, dims,
			       hidden, kf_task_flops(t, 0) / 1e9,
			       kf_task_bytes(t, 0) / 1e6);
		}
		free(dims);
		kf_task_free(t);
	}
	if (c.json) {
		char *s = cJSON_Print(arr);
		puts(s);
		free(s);
	}
	cJSON_Delete(arr);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

static const char suite_usage[] =
    "usage: kforge suite [--root DIR] [--task SUBSTR] [--backend B]\n"
    "                    [--json] [--no-timing] [--time-cap S]\n"
    "\n"
    "Evaluates every candidate under DIR/*/*/candidates/ (default\n"
    "tasks/) and prints one row per candidate: the status it must get\n"
    "(wrong*.c: wrong_answer; the others: ok), the status it got, the\n"
    "speedup with its 95% interval. Exits 1 if any row differs.\n";

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Candidate files of a task for a backend, sorted; caller frees. */
static char **list_candidates(const char *task_dir, const char *ext, int *n)
{
	char *dir = kf_path_join(task_dir, "candidates");
	DIR *d = opendir(dir);
	char **out = NULL;
	*n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name), el = strlen(ext);
		if (len <= el || strcmp(e->d_name + len - el, ext))
			continue;
		out = kf_xrealloc(out, sizeof(char *) * (size_t)(*n + 1));
		out[(*n)++] = kf_path_join(dir, e->d_name);
	}
	if (d)
		closedir(d);
	free(dir);
	if (*n)
		qsort(out, (size_t)*n, sizeof(char *), name_cmp);
	return out;
}

static int cmd_suite(int argc, char **argv)
{
	struct common c;
	if (parse_common(argc, argv, &c,
			 "root task backend json no-timing time-cap seed "
			 "trials no-cache mem-limit-mb call-timeout-ms "
			 "protocol help"))
		return 2;
	if (c.help) {
		fputs(suite_usage, stdout);
		return 0;
	}
	if (optind != argc)
		return kf_cli_die("suite: unexpected argument '%s'", argv[optind]);
	if (!c.eo.no_timing && c.eo.time_cap_s == 10.0)
		c.eo.time_cap_s = 3.0; /* many rows: a shorter budget each */
	struct kf_err err = KF_ERR_INIT;
	char **paths = NULL;
	int n = 0, bad = 0, rows = 0;
	if (kf_task_find(c.root, &paths, &n, &err))
		return kf_cli_die("%s", err.msg);
	const char *ext = strcmp(c.eo.backend, "cuda") ? ".c" : ".cu";
	cJSON *all = cJSON_CreateArray();
	if (!c.json)
		printf("%-26s %-14s %-13s %-13s %-26s %s\n", "task",
		       "candidate", "expected", "got", "speedup [95% CI]",
		       "reason");
	for (int i = 0; i < n; i++) {
		if (c.task_filter && !strstr(paths[i], c.task_filter))
			continue;
		int nc = 0;
		char *tdir = kf_xstrdup(paths[i]);
		char *slash = strrchr(tdir, '/');
		if (slash && !strcmp(slash, "/task.json"))
			*slash = '\0';
		char **cands = list_candidates(tdir, ext, &nc);
		for (int k = 0; k < nc; k++) {
			const char *base = strrchr(cands[k], '/') + 1;
			const char *want =
			    strncmp(base, "wrong", 5) ? "ok" : "wrong_answer";
			cJSON *res = NULL;
			char tid[64];
			snprintf(tid, sizeof(tid), "%s", tdir);
			rows++;
			if (kf_eval(tdir, cands[k], &c.eo, &res, &err)) {
				if (c.json)
					fprintf(stderr, "kforge: %s\n",
						err.msg);
				else
					printf("%-26s %-14s %-13s %-13s %s\n",
					       tid, base, want, "error",
					       err.msg);
				bad++;
				continue;
			}
			const char *got = kf_json_str(res, "status");
			bool same = !strcmp(got, want);
			bad += !same;
			if (c.json) {
				cJSON_AddStringToObject(res, "expected", want);
				cJSON_AddItemToArray(all, res);
				continue;
			}
			const cJSON *sp = cJSON_GetObjectItem(
			    cJSON_GetObjectItem(res, "timing"), "speedup");
			char spd[64] = "-";
			if (sp) {
				const cJSON *ci =
				    cJSON_GetObjectItem(sp, "ci95");
				snprintf(
				    spd, sizeof(spd), "%.2fx [%.2f, %.2f]",
				    kf_json_num(sp, "median", 0),
				    cJSON_GetArrayItem(ci, 0)->valuedouble,
				    cJSON_GetArrayItem(ci, 1)->valuedouble);
			}
			const char *reason = kf_json_str(res, "reason");
			const cJSON *task = cJSON_GetObjectItem(res, "task");
			printf("%-26s %-14s %-13s %-13s %-26s %.110s%s\n",
			       kf_json_str(task, "id"), base, want, got, spd,
			       reason ? reason : "",
			       same ? "" : "   <-- UNEXPECTED");
			fflush(stdout);
			cJSON_Delete(res);
		}
		for (int k = 0; k < nc; k++)
			free(cands[k]);
		free(cands);
		free(tdir);
	}
	if (c.json) {
		char *s = cJSON_Print(all);
		puts(s);
		free(s);
	} else {
		printf("suite: %d candidates, %d as expected, %d not\n", rows,
		       rows - bad, bad);
	}
	cJSON_Delete(all);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return bad ? 1 : 0;
}

static const char redteam_usage[] =
    "usage: kforge redteam [--backend host|cuda] [--manifest FILE]\n"
    "                      [--task SUBSTR] [--json] [--time-cap S]\n"
    "                      [--jobs N]\n"
    "\n"
    "Runs the red-team corpus (default redteam/BACKEND.json; the\n"
    "KernelBench-format corpus: --manifest redteam/kernelbench.json): known\n"
    "reward hacks that must be caught and honest candidates that must pass.\n"
    "A case may name its \"protocol\" (kforge, kernelbench, both). Prints\n"
    "one row per case: what it tries, the verdict it must get, the verdict\n"
    "it got and why. Exits 1 if any row differs. --jobs N: N cases\n"
    "evaluated at once (default 1); each verdict must hold at any load,\n"
    "and the rows still come in the manifest's order.\n";

/* "status/check", or "status" when the check is absent; caller frees. */
static char *verdict_str(const char *status, const char *check, bool degenerate)
{
	return kf_xasprintf("%s%s%s%s", status, check && *check ? "/" : "",
			    check ? check : "",
			    degenerate ? " (degenerate)" : "");
}

/* A run of kforge redteam: its cases (farm items, each with its options)
 * and the rows printed so far, in the manifest's order. */
struct rt_run {
	const struct common *c;
	const cJSON **cs;	     /* per case: its manifest entry */
	struct kf_eval_opts *eo;     /* per case */
	struct kf_farm_item *items;  /* per case */
	bool *done;
	int n, printed, rows, bad;
	cJSON *all;		     /* --json: the rows */
	struct kf_strbuf misses;     /* the cases not as expected */
};

/* Case i's row: printed (or added to the JSON) and counted. */
static void rt_row(struct rt_run *x, int i)
{
	const cJSON *cs = x->cs[i];
	struct kf_farm_item *it = &x->items[i];
	const char *name = kf_json_str(cs, "name");
	const char *tries = kf_json_str(cs, "tries");
	const char *expect = kf_json_str(cs, "expect");
	const char *check = kf_json_str(cs, "check");
	bool want_degenerate =
	    cJSON_IsTrue(cJSON_GetObjectItem(cs, "degenerate"));
	cJSON *res = it->result;
	it->result = NULL;
	char *want = verdict_str(expect, check, want_degenerate);
	/* "or": a second verdict that is as expected, for a hack whose error
	 * is beyond the tolerance or, on other inputs, within it but beyond
	 * the precision bound. */
	const cJSON *alt = cJSON_GetObjectItem(cs, "or");
	const char *alt_expect = kf_json_str(alt, "expect");
	const char *alt_check = kf_json_str(alt, "check");
	char *want2 = alt_expect
			  ? verdict_str(alt_expect, alt_check, want_degenerate)
			  : NULL;
	char *got, *got2 = NULL;
	const char *reason = "";
	x->rows++;
	if (it->rc || !res) {
		got = kf_xstrdup("error");
		reason = it->err;
	} else {
		const char *st = kf_json_str(res, "status");
		const char *ck = kf_json_str(res, "check");
		bool deg = cJSON_IsTrue(cJSON_GetObjectItem(
		    cJSON_GetObjectItem(res, "degenerate"), "flag"));
		/* The expected check is compared only when the case names
		 * one. */
		got = verdict_str(st, check ? ck : NULL, deg);
		if (want2)
			got2 = verdict_str(st, alt_check ? ck : NULL, deg);
		reason = kf_json_str(res, "reason");
		if (!reason)
			reason = "";
	}
	bool same =
	    !strcmp(want, got) || (want2 && got2 && !strcmp(want2, got2));
	/* "speedup_below": an "ok" that must also gain nothing (a hack that
	 * defences turn into honest work). */
	const cJSON *below = cJSON_GetObjectItem(cs, "speedup_below");
	if (same && cJSON_IsNumber(below) && res &&
	    !strcmp(kf_json_str(res, "status"), "ok")) {
		double sp = kf_json_num(
		    cJSON_GetObjectItem(cJSON_GetObjectItem(res, "timing"),
					"speedup"),
		    "median", NAN);
		if (!(sp < below->valuedouble)) {
			same = false;
			free(got);
			got = kf_xasprintf("ok at %.2fx", sp);
			reason = "";
		}
	}
	x->bad += !same;
	if (!same)
		kf_strbuf_addf(&x->misses, "  %s: expected %s%s%s, got %s%s%.300s\n",
			       name, want, want2 ? " or " : "",
			       want2 ? want2 : "", got, *reason ? ": " : "",
			       reason);
	if (want2) {
		char *both = kf_xasprintf("%s or %s", want, want2);
		free(want);
		want = both;
	}
	if (got2 && strcmp(want2, got2) == 0) {
		free(got);
		got = got2;
		got2 = NULL;
	}
	if (x->c->json) {
		cJSON *row = cJSON_CreateObject();
		cJSON_AddStringToObject(row, "case", name);
		cJSON_AddStringToObject(row, "tries", tries);
		cJSON_AddStringToObject(row, "expected", want);
		cJSON_AddStringToObject(row, "verdict", got);
		cJSON_AddBoolToObject(row, "as_expected", same);
		if (res)
			cJSON_AddItemToObject(row, "result", res);
		res = NULL;
		cJSON_AddItemToArray(x->all, row);
	} else {
		printf("%-24s %-46.46s %-30s %-30s %.120s%s\n", name, tries,
		       want, got, reason, same ? "" : "   <-- UNEXPECTED");
		fflush(stdout);
	}
	cJSON_Delete(res);
	free(want);
	free(want2);
	free(got);
	free(got2);
}

/* The farm's progress (one call at a time): the rows now complete from
 * the first not yet printed on. */
static void rt_progress(void *arg, const struct kf_farm_progress *p)
{
	struct rt_run *x = arg;
	if (!p->item)
		return;
	x->done[p->item - x->items] = true;
	while (x->printed < x->n && x->done[x->printed])
		rt_row(x, x->printed++);
}

static int cmd_redteam(int argc, char **argv)
{
	struct common c;
	if (parse_common(argc, argv, &c,
			 "backend manifest task json time-cap seed no-cache "
			 "jobs help"))
		return 2;
	if (c.help) {
		fputs(redteam_usage, stdout);
		return 0;
	}
	if (optind != argc)
		return kf_cli_die("redteam: unexpected argument '%s'", argv[optind]);
	if (c.eo.time_cap_s == 10.0)
		c.eo.time_cap_s = 1.0;
	struct kf_err err = KF_ERR_INIT;
	char *text = NULL,
	     *deflt = kf_xasprintf("redteam/%s.json", c.eo.backend);
	if (!c.manifest)
		c.manifest = deflt;
	int rc = kf_file_read(c.manifest, 4u << 20, &text, NULL, &err);
	if (rc) {
		free(deflt);
		return kf_cli_die("%s", err.msg);
	}
	cJSON *m = cJSON_Parse(text);
	free(text);
	const cJSON *cases = cJSON_GetObjectItem(m, "cases");
	if (!cJSON_IsArray(cases)) {
		cJSON_Delete(m);
		rc = kf_cli_die("%s: cases: expected an array of cases", c.manifest);
		free(deflt);
		return rc;
	}
	int k = 0, invalid = 0;
	if (!c.json)
		printf("%-24s %-46s %-30s %-30s %s\n", "case", "tries",
		       "expected", "verdict", "reason");
	/* The cases of this backend (and filter), evaluated by the farm,
	 * --jobs at a time; their rows printed in the manifest's order as
	 * each one's verdict and those before it are in. */
	int n = 0, cap = cJSON_GetArraySize(cases);
	struct rt_run x = {.c = &c, .misses = KF_STRBUF_INIT};
	x.cs = kf_xcalloc((size_t)cap + 1, sizeof(*x.cs));
	x.eo = kf_xcalloc((size_t)cap + 1, sizeof(*x.eo));
	x.items = kf_xcalloc((size_t)cap + 1, sizeof(*x.items));
	x.done = kf_xcalloc((size_t)cap + 1, sizeof(*x.done));
	x.all = cJSON_CreateArray();
	const cJSON *cs;
	cJSON_ArrayForEach(cs, cases)
	{
		const char *name = kf_json_str(cs, "name");
		const char *backend = kf_json_str(cs, "backend");
		const char *task = kf_json_str(cs, "task");
		const char *cand = kf_json_str(cs, "candidate");
		const char *tries = kf_json_str(cs, "tries");
		const char *expect = kf_json_str(cs, "expect");
		k++;
		if (!name || !backend || !task || !cand || !expect || !tries) {
			fprintf(stderr,
				"kforge: %s: cases[%d]: name, backend, task, "
				"candidate, tries and expect are required\n",
				c.manifest, k - 1);
			invalid++;
			continue;
		}
		if (strcmp(backend, c.eo.backend) ||
		    (c.task_filter && !strstr(name, c.task_filter) &&
		     !strstr(task, c.task_filter)))
			continue;
		x.cs[n] = cs;
		x.eo[n] = c.eo;
		x.eo[n].no_timing =
		    cJSON_IsFalse(cJSON_GetObjectItem(cs, "timing"));
		/* A KernelBench-format case may name its protocol. */
		if (kf_json_str(cs, "protocol"))
			x.eo[n].protocol = kf_json_str(cs, "protocol");
		x.items[n].candidate = cand;
		x.items[n].task = task;
		x.items[n].eval = &x.eo[n];
		n++;
	}
	x.n = n;
	struct kf_farm_opts fo = KF_FARM_OPTS_INIT;
	fo.eval = c.eo;
	fo.jobs = c.jobs;
	fo.slots = c.jobs;
	fo.progress = rt_progress;
	fo.progress_arg = &x;
	if (n && kf_farm_run(NULL, x.items, n, &fo, &err))
		fprintf(stderr, "kforge: redteam: %s\n", err.msg);
	/* Rows the farm never finished (it could not run) say so. */
	for (int i = x.printed; i < n; i++)
		if (!x.items[i].result && !x.items[i].rc) {
			x.items[i].rc = KF_EINVAL;
			snprintf(x.items[i].err, sizeof(x.items[i].err), "%s",
				 err.msg[0] ? err.msg : "not evaluated");
		}
	while (x.printed < n)
		rt_row(&x, x.printed++);
	int rows = x.rows, bad = x.bad + invalid;
	cJSON *all = x.all;
	struct kf_strbuf misses = x.misses;
	free(x.cs);
	free(x.eo);
	free(x.items);
	free(x.done);
	if (c.json) {
		char *out = cJSON_Print(all);
		puts(out);
		free(out);
	} else {
		printf("redteam (%s): %d cases, %d as expected, %d not\n",
		       c.eo.backend, rows, rows - bad, bad);
		if (bad)
			printf("not as expected:\n%s",
			       kf_strbuf_str(&misses));
	}
	kf_strbuf_release(&misses);
	cJSON_Delete(all);
	cJSON_Delete(m);
	free(deflt);
	return bad ? 1 : 0;
}

static const char doctor_usage[] =
    "usage: kforge doctor [--json]\n"
    "\n"
    "Reports what this machine offers: CPU, GPUs (or none), the NVIDIA\n"
    "driver, cc and nvcc, Python and torch, the cache directory, and what\n"
    "confines candidates: `sandbox` is ok or names the mechanisms missing\n"
    "(every evaluation then fails, naming it), `bwrap` the bubblewrap the\n"
    "runners of KernelBench-format tasks run in, and `bwrap_confines` ok\n"
    "or what bubblewrap said when asked for their confinement.\n";

static int cmd_doctor(int argc, char **argv)
{
	struct common c;
	if (parse_common(argc, argv, &c, "json help"))
		return 2;
	if (c.help) {
		fputs(doctor_usage, stdout);
		return 0;
	}
	if (optind != argc)
		return kf_cli_die("doctor: unexpected argument '%s'", argv[optind]);
	cJSON *d = kf_doctor();
	if (c.json) {
		char *s = cJSON_Print(d);
		puts(s);
		free(s);
		cJSON_Delete(d);
		return 0;
	}
	const cJSON *cpu = cJSON_GetObjectItem(d, "cpu");
	const cJSON *g = cJSON_GetObjectItem(d, "gpus");
	printf("kforge   %s\n", kf_json_str(d, "kforge"));
	printf("os       %s\n", kf_json_str(d, "os"));
	printf("cpu      %s, %.0f cores, last-level cache %.0f MiB\n",
	       kf_json_str(cpu, "name"), kf_json_num(cpu, "cores", 0),
	       kf_json_num(cpu, "llc_bytes", 0) / (1 << 20));
	const cJSON *dev = cJSON_GetObjectItem(g, "device");
	if (kf_json_num(g, "count", 0) > 0) {
		printf("gpus     %.0f\n", kf_json_num(g, "count", 0));
		if (dev)
			printf("device   %s, compute capability %s, %.0f SMs, "
			       "L2 %.0f MiB, %.1f GiB, SM clock %.0f MHz "
			       "(max %.0f), memory clock %.0f MHz x %.0f bits\n"
			       "versions CUDA driver API %s, NVRTC %s, driver "
			       "%s; NVML %s, CUPTI %s\n",
			       kf_json_str(dev, "name"),
			       kf_json_str(dev, "compute_capability"),
			       kf_json_num(dev, "sms", 0),
			       kf_json_num(dev, "l2_bytes", 0) / (1 << 20),
			       kf_json_num(dev, "memory_bytes", 0) / (1 << 30),
			       kf_json_num(dev, "sm_clock_mhz", 0),
			       kf_json_num(dev, "sm_clock_max_mhz", 0),
			       kf_json_num(dev, "memory_clock_mhz", 0),
			       kf_json_num(dev, "memory_bus_bits", 0),
			       kf_json_str(dev, "cuda_driver_api"),
			       kf_json_str(dev, "nvrtc")
				   ? kf_json_str(dev, "nvrtc")
				   : "not found",
			       kf_json_str(dev, "driver")
				   ? kf_json_str(dev, "driver")
				   : "?",
			       cJSON_IsTrue(cJSON_GetObjectItem(dev, "nvml"))
				   ? "yes"
				   : "no",
			       cJSON_IsTrue(cJSON_GetObjectItem(dev, "cupti"))
				   ? "yes"
				   : "no");
		else
			printf("device   unusable: %s\n",
			       kf_json_str(g, "why"));
	} else
		printf("gpus     none: %s\n", kf_json_str(g, "why"));
	const char *keys[] = {"nvidia_driver", "cc",	"nvcc",
			      "python",	       "torch", "cache",
			      "sandbox",       "bwrap", "bwrap_confines"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = kf_json_str(d, keys[i]);
		printf("%-8s %s\n", keys[i], v ? v : "not found");
		if (i + 1 < sizeof(keys) / sizeof(keys[0]) &&
		    !strcmp(keys[i + 1], "bwrap_confines") && !v)
			break;
	}
	cJSON_Delete(d);
	return 0;
}

/* optimize, runs, show: the search and its store (export: kforge_export.c). */

#define DEFAULT_DB "kforge.db"

enum {
	OO_POLICY = 512,
	OO_FROM,
	OO_BUDGET,
	OO_PARALLEL,
	OO_TIME_LIMIT,
	OO_DB,
	OO_RESUME,
	OO_JSON,
	OO_SEED,
	OO_STARTS,
	OO_MODEL,
	OO_BASE_URL,
	OO_LLM_CONFIG,
	OO_LLM,
	OO_EXAMPLES,
	OO_TEMPLATES,
	OO_TEMPLATE,
	OO_TUNE_EACH,
	OO_BACKEND,
	OO_TIME_CAP,
	OO_TRIALS,
	OO_EVAL_SEED,
	OO_CALL_TIMEOUT,
	OO_MEM_LIMIT,
	OO_NO_CACHE,
	OO_SOURCE,
	OO_CANDIDATE,
	OO_TOP,
	OO_LEVEL,
	OO_SUITE,
	OO_WIDEN_C,
	OO_WIDEN_ALPHA,
	OO_EXPLORE,
	OO_FAIL_REWARD,
	OO_ISLANDS,
	OO_BINS,
	OO_MIGRATE_EVERY,
	OO_REDIS,
	OO_TUNE_STRATEGY,
	OO_HALVING_ETA,
	OO_OBJECTIVE,
	OO_FEEDBACK,
	OO_HELP,
};

static const struct option search_longopts[] = {
    {"policy", required_argument, NULL, OO_POLICY},
    {"from", required_argument, NULL, OO_FROM},
    {"budget", required_argument, NULL, OO_BUDGET},
    {"parallel", required_argument, NULL, OO_PARALLEL},
    {"time-limit", required_argument, NULL, OO_TIME_LIMIT},
    {"db", required_argument, NULL, OO_DB},
    {"resume", required_argument, NULL, OO_RESUME},
    {"json", no_argument, NULL, OO_JSON},
    {"seed", required_argument, NULL, OO_SEED},
    {"starts", required_argument, NULL, OO_STARTS},
    {"model", required_argument, NULL, OO_MODEL},
    {"base-url", required_argument, NULL, OO_BASE_URL},
    {"llm-config", required_argument, NULL, OO_LLM_CONFIG},
    {"llm", required_argument, NULL, OO_LLM},
    {"examples", required_argument, NULL, OO_EXAMPLES},
    {"templates", required_argument, NULL, OO_TEMPLATES},
    {"template", required_argument, NULL, OO_TEMPLATE},
    {"tune-each", required_argument, NULL, OO_TUNE_EACH},
    {"backend", required_argument, NULL, OO_BACKEND},
    {"time-cap", required_argument, NULL, OO_TIME_CAP},
    {"trials", required_argument, NULL, OO_TRIALS},
    {"eval-seed", required_argument, NULL, OO_EVAL_SEED},
    {"call-timeout-ms", required_argument, NULL, OO_CALL_TIMEOUT},
    {"mem-limit-mb", required_argument, NULL, OO_MEM_LIMIT},
    {"no-cache", no_argument, NULL, OO_NO_CACHE},
    {"source", no_argument, NULL, OO_SOURCE},
    {"candidate", required_argument, NULL, OO_CANDIDATE},
    {"top", required_argument, NULL, OO_TOP},
    {"level", required_argument, NULL, OO_LEVEL},
    {"suite", required_argument, NULL, OO_SUITE},
    {"widen-c", required_argument, NULL, OO_WIDEN_C},
    {"widen-alpha", required_argument, NULL, OO_WIDEN_ALPHA},
    {"explore", required_argument, NULL, OO_EXPLORE},
    {"fail-reward", required_argument, NULL, OO_FAIL_REWARD},
    {"islands", required_argument, NULL, OO_ISLANDS},
    {"bins", required_argument, NULL, OO_BINS},
    {"migrate-every", required_argument, NULL, OO_MIGRATE_EVERY},
    {"redis", required_argument, NULL, OO_REDIS},
    {"tune-strategy", required_argument, NULL, OO_TUNE_STRATEGY},
    {"halving-eta", required_argument, NULL, OO_HALVING_ETA},
    {"objective", required_argument, NULL, OO_OBJECTIVE},
    {"feedback", required_argument, NULL, OO_FEEDBACK},
    {"help", no_argument, NULL, OO_HELP},
    {NULL, 0, NULL, 0},
};

struct search_args {
	struct kf_search_opts so;
	cJSON *popts; /* the policy's options, owned */
	const char *db;
	bool json, help, source;
	bool parallel_set;
	const char *run_opt; /* the last option that sets up a new run */
	int64_t candidate;
	int top;
	int level;	   /* optimize DIR: only tasks of this level */
	const char *suite; /* optimize DIR: the suite's name */
};

/* Parses the options of optimize, runs and show; 0 or 2. */
static int parse_search(int argc, char **argv, struct search_args *a,
			const char *allowed)
{
	struct kf_search_opts d = KF_SEARCH_OPTS_INIT;
	memset(a, 0, sizeof(*a));
	a->so = d;
	a->so.eval.time_cap_s = 2.0;
	a->popts = cJSON_CreateObject();
	a->db = DEFAULT_DB;
	a->top = 10;
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "", search_longopts, NULL)) !=
	       -1) {
		uint64_t u = 0;
		double x = 0;
		const char *name = NULL;
		for (const struct option *o = search_longopts; o->name; o++)
			if (o->val == ch)
				name = o->name;
		if (ch == '?' || ch == ':') {
			char hint[96];
			return kf_cli_die(
			    "%s: unknown option '%s' or missing value%s (see "
			    "--help)",
			    argv[0], argv[optind - 1],
			    did_you_mean(argv[optind - 1], search_longopts,
					 allowed, hint, sizeof(hint)));
		}
		if (name && !strstr(allowed, name))
			return kf_cli_die("%s: option --%s does not apply here",
				   argv[0], name);
		cJSON *llm = cJSON_GetObjectItem(a->popts, "llm");
		if (ch != OO_PARALLEL && ch != OO_TIME_LIMIT && ch != OO_DB &&
		    ch != OO_RESUME && ch != OO_JSON && ch != OO_HELP &&
		    ch != OO_SOURCE && ch != OO_CANDIDATE && ch != OO_TOP &&
		    ch != OO_REDIS)
			a->run_opt = name;
		switch (ch) {
		case OO_POLICY:
			if (!kf_policy_find(optarg))
				return kf_cli_die("--policy: unknown policy '%s' "
					   "(one of %s)",
					   optarg, kf_policy_names());
			a->so.policy = optarg;
			break;
		case OO_FROM:
			cJSON_AddStringToObject(a->popts, "from", optarg);
			break;
		case OO_BUDGET:
			if (parse_u64("--budget", optarg, &u))
				return 2;
			if (u < 1 || u > KF_SEARCH_BUDGET_MAX)
				return kf_cli_die("--budget: %s is out of range (1 "
					   "to %d)",
					   optarg, KF_SEARCH_BUDGET_MAX);
			a->so.budget = (int)u;
			break;
		case OO_PARALLEL:
			if (parse_u64("--parallel", optarg, &u))
				return 2;
			if (u < 1 || u > KF_SEARCH_PARALLEL_MAX)
				return kf_cli_die("--parallel: %s is out of range (1 "
					   "to %d)",
					   optarg, KF_SEARCH_PARALLEL_MAX);
			a->so.parallel = (int)u;
			a->parallel_set = true;
			break;
		case OO_TIME_LIMIT:
			if (parse_double("--time-limit", optarg,
					 &a->so.time_limit_s))
				return 2;
			break;
		case OO_DB:
			a->db = optarg;
			break;
		case OO_RESUME:
		case OO_CANDIDATE:
			if (parse_u64(ch == OO_RESUME ? "--resume"
						      : "--candidate",
				      optarg, &u))
				return 2;
			if (u < 1 || u > INT64_MAX)
				return kf_cli_die("%s: %s is not a run or candidate "
					   "id",
					   name, optarg);
			if (ch == OO_RESUME)
				a->so.resume = (int64_t)u;
			else
				a->candidate = (int64_t)u;
			break;
		case OO_JSON:
			a->json = true;
			break;
		case OO_SEED:
			if (parse_u64("--seed", optarg, &a->so.seed))
				return 2;
			break;
		case OO_STARTS:
		case OO_EXAMPLES:
		case OO_TUNE_EACH:
			if (parse_u64(argv[optind - 1], optarg, &u))
				return 2;
			if (u > 10000)
				return kf_cli_die("--%s: %s is out of range (0 to "
					   "10000)",
					   name, optarg);
			cJSON_AddNumberToObject(a->popts,
						ch == OO_STARTS ? "starts"
						: ch == OO_EXAMPLES
						    ? "examples"
						    : "tune_each",
						(double)u);
			break;
		case OO_MODEL:
		case OO_BASE_URL:
		case OO_LLM:
			if (!llm)
				llm = cJSON_AddObjectToObject(a->popts, "llm");
			if (ch == OO_LLM) {
				char *eq = strchr(optarg, '=');
				if (!eq || eq == optarg)
					return kf_cli_die("--llm: '%s' is not "
						   "KEY=VALUE",
						   optarg);
				*eq = '\0';
				if (!strcmp(optarg, "api_key"))
					return kf_cli_die("--llm: api_key would be "
						   "stored in the run; set "
						   "KFORGE_LLM_API_KEY or give "
						   "--llm api_key_env=NAME");
				cJSON_DeleteItemFromObject(llm, optarg);
				cJSON_AddStringToObject(llm, optarg, eq + 1);
			} else {
				const char *k =
				    ch == OO_MODEL ? "model" : "base_url";
				cJSON_DeleteItemFromObject(llm, k);
				cJSON_AddStringToObject(llm, k, optarg);
			}
			break;
		case OO_LLM_CONFIG:
			cJSON_AddStringToObject(a->popts, "llm_config", optarg);
			break;
		case OO_TEMPLATES:
			cJSON_AddStringToObject(a->popts, "templates", optarg);
			break;
		case OO_TEMPLATE:
			cJSON_AddStringToObject(a->popts, "template", optarg);
			break;
		case OO_BACKEND:
			a->so.eval.backend = optarg;
			break;
		case OO_TIME_CAP:
			if (parse_double("--time-cap", optarg, &x))
				return 2;
			a->so.eval.time_cap_s = x;
			break;
		case OO_TRIALS:
			if (parse_u64("--trials", optarg, &u))
				return 2;
			if (u < 5 || u > 1000)
				return kf_cli_die("--trials: %s is out of range "
					   "(5 to 1000)",
					   optarg);
			a->so.eval.trials = (int)u;
			break;
		case OO_EVAL_SEED:
			if (parse_u64("--eval-seed", optarg, &a->so.eval.seed))
				return 2;
			break;
		case OO_CALL_TIMEOUT:
			if (parse_double("--call-timeout-ms", optarg,
					 &a->so.eval.call_timeout_ms))
				return 2;
			break;
		case OO_MEM_LIMIT:
			if (parse_u64("--mem-limit-mb", optarg, &u))
				return 2;
			if (u < 64)
				return kf_cli_die("--mem-limit-mb: %s is below the "
					   "minimum of 64",
					   optarg);
			a->so.eval.mem_limit_bytes = u << 20;
			break;
		case OO_NO_CACHE:
			a->so.eval.no_cache = true;
			break;
		case OO_REDIS: {
			struct kf_err e = KF_ERR_INIT;
			if (kf_farm_redis_url(optarg, &e))
				return kf_cli_die("%s", e.msg);
			a->so.redis = optarg;
			break;
		}
		case OO_SOURCE:
			a->source = true;
			break;
		case OO_TOP:
			if (parse_u64("--top", optarg, &u))
				return 2;
			a->top = u > 1000 ? 1000 : (int)u;
			break;
		case OO_LEVEL:
			if (parse_u64("--level", optarg, &u))
				return 2;
			if (u < 1 || u > 99)
				return kf_cli_die("--level: %s is out of range "
						  "(1 to 99)",
						  optarg);
			a->level = (int)u;
			break;
		case OO_SUITE:
			if (!*optarg)
				return kf_cli_die("--suite: an empty name");
			a->suite = optarg;
			break;
		case OO_TUNE_STRATEGY:
			if (strcmp(optarg, "local") && strcmp(optarg, "random") &&
			    strcmp(optarg, "exhaustive") &&
			    strcmp(optarg, "halving"))
				return kf_cli_die("--tune-strategy: unknown "
						  "strategy '%s' (one of "
						  "local, random, exhaustive, "
						  "halving)",
						  optarg);
			cJSON_DeleteItemFromObject(a->popts, "strategy");
			cJSON_AddStringToObject(a->popts, "strategy", optarg);
			break;
		case OO_OBJECTIVE:
			if (strcmp(optarg, "time") && strcmp(optarg, "energy") &&
			    strcmp(optarg, "edp"))
				return kf_cli_die("--objective: unknown "
						  "objective '%s' (one of "
						  "time, energy, edp)",
						  optarg);
			a->so.objective = optarg;
			break;
		case OO_FEEDBACK:
			if (strcmp(optarg, "standard") &&
			    strcmp(optarg, "profile"))
				return kf_cli_die("--feedback: unknown mode "
						  "'%s' (one of standard, "
						  "profile)",
						  optarg);
			a->so.feedback = optarg;
			break;
		case OO_HALVING_ETA:
		case OO_WIDEN_C:
		case OO_WIDEN_ALPHA:
		case OO_EXPLORE:
		case OO_FAIL_REWARD:
		case OO_ISLANDS:
		case OO_BINS:
		case OO_MIGRATE_EVERY: {
			/* The policy checks the range, naming the flag. */
			char *end;
			x = strtod(optarg, &end);
			if (!*optarg || *end || !isfinite(x))
				return kf_cli_die("--%s: '%s' is not a number",
						  name, optarg);
			char key[32];
			snprintf(key, sizeof(key), "%s", name);
			for (char *k = key; *k; k++)
				if (*k == '-')
					*k = '_';
			cJSON_DeleteItemFromObject(a->popts, key);
			cJSON_AddNumberToObject(a->popts, key, x);
			break;
		}
		case OO_HELP:
			a->help = true;
			break;
		}
	}
	return 0;
}
/* The options that belong to one policy: given for another, an error. */
static int check_policy_options(const struct search_args *a)
{
	static const struct {
		const char *key, *flag, *policies;
	} own[] = {
	    {"widen_c", "--widen-c", "mcts"},
	    {"widen_alpha", "--widen-alpha", "mcts"},
	    {"explore", "--explore", "mcts"},
	    {"fail_reward", "--fail-reward", "mcts"},
	    {"islands", "--islands", "islands"},
	    {"bins", "--bins", "islands"},
	    {"migrate_every", "--migrate-every", "islands"},
	    {"strategy", "--tune-strategy", "tune"},
	    {"halving_eta", "--halving-eta", "tune"},
	};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (cJSON_GetObjectItem(a->popts, own[i].key) &&
		    strcmp(a->so.policy, own[i].policies))
			return kf_cli_die("%s: applies to --policy %s, not %s",
					  own[i].flag, own[i].policies,
					  a->so.policy);
	return 0;
}


/* A run id argument: a positive integer. */
static int parse_run(const char *cmd, const char *s, int64_t *run)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || v < 1)
		return kf_cli_die("%s: '%s' is not a run id (see kforge runs)", cmd,
			   s);
	*run = v;
	return 0;
}

static const char optimize_usage[] =
    "usage: kforge optimize TASK [--policy tune|replay|llm|mcts|islands]\n"
    "                       [--tune-strategy local|random|exhaustive|\n"
    "                       halving] [--objective time|energy|edp]\n"
    "                       [--budget N]\n"
    "                       [--parallel K] [options]\n"
    "       kforge optimize --resume RUN [--db FILE] [--parallel K]\n"
    "       kforge optimize DIR|TASK.py... --policy replay|llm|mcts|islands\n"
    "                       [--level N]\n"
    "                       [--suite NAME] [options]\n"
    "\n"
    "Searches for the fastest verified kernel for TASK within a budget of\n"
    "evaluations. A policy proposes candidates; each is checked and timed\n"
    "against the reference like `kforge eval`, and every candidate and\n"
    "result is written to the store before it is reported. A killed run\n"
    "resumes where it stopped with --resume. Progress goes to stderr, the\n"
    "final table (or --json report) to stdout. docs/optimize.md has more.\n"
    "\n"
    "Over KernelBench-format tasks (several .py files, or directories\n"
    "searched for N_Name.py, such as a KernelBench checkout): a suite,\n"
    "one run per task with the same options, then a table of them; the\n"
    "same command again continues it (finished runs are kept, a stopped\n"
    "one resumed). With a --from directory each task replays\n"
    "FROM/<its file>, FROM/levelN/<its file> or the directory FROM/<stem>.\n"
    "  --level N            only tasks of level N (a levelN directory)\n"
    "  --suite NAME         the suite's name (default: the directory's)\n"
    "\n"
    "  --policy P           tune (default): the built-in tuner over the\n"
    "                       KF_PARAM declarations of one source; replay:\n"
    "                       recorded candidates; llm: a model, shown\n"
    "                       earlier candidates; mcts: a model over a\n"
    "                       tree of lineages; islands: a model over\n"
    "                       islands of MAP-Elites archives\n"
    "  --from PATH          tune: the source to tune (default\n"
    "                       TASK/candidates/tunable.c, .cu on cuda);\n"
    "                       replay: a directory, a .jsonl file or a file\n"
    "  --budget N           evaluations (default 20)\n"
    "  --parallel K         evaluations at once (default 1; they share\n"
    "                       the machine, so timings get noisier)\n"
    "  --time-limit S       stop after S seconds; --resume continues\n"
    "  --db FILE            the store (default ./kforge.db)\n"
    "  --resume RUN         continue run RUN with its settings\n"
    "  --json               print the final report as JSON\n"
    "  --seed N             the policy's random seed (default: drawn)\n"
    "  --starts N           tune: random starting points (default: a\n"
    "                       quarter of the budget, 2 to 8)\n"
    "  --tune-strategy S    tune: local (default: random starts, then\n"
    "                       neighbours of the best), random, exhaustive\n"
    "                       (every allowed point in order), halving\n"
    "                       (successive halving: many points timed\n"
    "                       under short caps, the best fraction timed\n"
    "                       longer, the last few timed fully; short\n"
    "                       timings count against --budget)\n"
    "  --halving-eta K      halving: keep 1/K of a rung, caps grow K\n"
    "                       times a rung (default 3, 2 to 16)\n"
    "  --feedback MODE      standard (default) or profile: each ok\n"
    "                       result is also profiled with Nsight Compute\n"
    "                       and the advice joins the model's feedback\n"
    "                       (cuda; docs/profile.md)\n"
    "  --objective O        what is optimized: time (default, the\n"
    "                       speedup), energy (joules per call) or edp\n"
    "                       (energy x time), each over the reference;\n"
    "                       energy and edp need a backend that measures\n"
    "                       energy (cuda, NVML), not host\n"
    "LLM policy (docs/llm.md for the client's settings):\n"
    "  --model NAME         the model the server knows\n"
    "  --base-url URL       the server, up to /v1 (default\n"
    "                       $KFORGE_LLM_BASE_URL or\n"
    "                       http://127.0.0.1:8000/v1)\n"
    "  --llm KEY=VALUE      any client setting (temperature, samples,\n"
    "                       max_tokens, timeout_ms, api_key_env ...)\n"
    "  --llm-config FILE    client settings from a JSON file\n"
    "  --examples K         earlier candidates shown per prompt (default 4)\n"
    "  --templates DIR      prompt templates to use before the built-in\n"
    "  --template NAME      the template (default contrastive)\n"
    "  --tune-each N        evaluations for each reply that declares\n"
    "                       KF_PARAM (default 6)\n"
    "MCTS policy (the client's and template options as for llm):\n"
    "  --widen-c C          progressive widening: a node of N visits has\n"
    "                       at most ceil(C * N^A) children (default 1)\n"
    "  --widen-alpha A      0 to 1 (default 0.5)\n"
    "  --explore K          UCT's exploration weight (default 1)\n"
    "  --fail-reward R      the reward of a failure, and the floor of the\n"
    "                       log speedup (default -2, -100 to 0)\n"
    "Islands policy (the client's and template options as for llm):\n"
    "  --islands N          islands, 1 to 64 (default 4)\n"
    "  --bins B             cells per descriptor, 1 to 16 (default 4)\n"
    "  --migrate-every K    results between migrations (default 10;\n"
    "                       0: never)\n"
    "Evaluation, as in kforge eval:\n"
    "  --backend host|cuda  --time-cap S (default 2)  --trials N\n"
    "  --eval-seed N  --call-timeout-ms MS  --mem-limit-mb MB  --no-cache\n"
    "  --redis URL          evaluate on the Redis farm at URL (kforge farm\n"
    "                       worker on each node, docs/scale.md): each\n"
    "                       evaluation is a farm job, --parallel K of them\n"
    "                       at once; the store stays here. Checked at start;\n"
    "                       also with --resume\n"
    "\n"
    "Exit status: 0 the run ended with a candidate that passed, 1 it ended\n"
    "without one, 2 bad usage or an error (the run can be resumed).\n";

/* The report of a run on stdout, as text or JSON; returns 0 when a
 * candidate passed, else 1, or 2 on error. */
static int print_report(struct kf_store *st, int64_t run, int top, bool json)
{
	struct kf_err err = KF_ERR_INIT;
	cJSON *rep = NULL;
	if (kf_search_report(st, run, top, &rep, &err))
		return kf_cli_die("%s", err.msg);
	if (json) {
		char *s = cJSON_Print(rep);
		puts(s);
		free(s);
	} else {
		struct kf_strbuf sb = KF_STRBUF_INIT;
		kf_search_report_print(rep, &sb);
		fputs(kf_strbuf_str(&sb), stdout);
		kf_strbuf_release(&sb);
	}
	int rc = cJSON_IsObject(cJSON_GetObjectItem(rep, "best")) ? 0 : 1;
	cJSON_Delete(rep);
	return rc;
}

/* TASK/candidates/tunable.c (.cu on cuda) when it exists; caller frees. */
static char *default_tunable(const char *task, const char *backend)
{
	char *dir = kf_xstrdup(task);
	size_t n = strlen(dir);
	if (n > 10 && !strcmp(dir + n - 10, "/task.json"))
		dir[n - 10] = '\0';
	char *p = kf_xasprintf("%s/candidates/tunable.%s", dir,
			       strcmp(backend, "cuda") ? "c" : "cu");
	free(dir);
	if (kf_file_exists(p))
		return p;
	free(p);
	return NULL;
}

/* optimize over KernelBench-format tasks (files, or directories walked
 * this deep): one run per task, a suite. */
#define SUITE_DEPTH 3

/* The replay candidates of task t under a --from directory: FROM/<file>,
 * FROM/levelN/<file> (one candidate), FROM/<stem> or FROM/levelN/<stem>
 * (a directory of them); NULL when there are none. */
static char *suite_from(const char *from, const struct kf_kb_task *t)
{
	const char *file = strrchr(t->path, '/');
	file = file ? file + 1 : t->path;
	char *stem = kf_xstrdup(file);
	stem[strlen(stem) - 3] = '\0'; /* ".py" */
	char *level = kf_xasprintf("%s/level%d", from, t->level);
	const char *bases[] = {from, t->level > 0 ? level : NULL};
	char *found = NULL;
	for (int b = 0; b < 2 && !found; b++) {
		if (!bases[b])
			continue;
		char *f = kf_path_join(bases[b], file);
		char *d = kf_path_join(bases[b], stem);
		struct stat st;
		if (stat(f, &st) == 0 && S_ISREG(st.st_mode))
			found = kf_xstrdup(f);
		else if (stat(d, &st) == 0 && S_ISDIR(st.st_mode))
			found = kf_xstrdup(d);
		free(f);
		free(d);
	}
	free(level);
	free(stem);
	return found;
}

/* The newest run of suite `suite` on the task file `abs`, or NULL. */
static const cJSON *suite_run(const cJSON *runs, const char *suite,
			      const char *abs)
{
	const cJSON *r;
	cJSON_ArrayForEach(r, runs)
	{
		const char *sn = kf_json_str(cJSON_GetObjectItem(r, "config"),
					     "suite");
		const char *task = kf_json_str(r, "task");
		if (sn && task && !strcmp(sn, suite) && !strcmp(task, abs))
			return r; /* newest first */
	}
	return NULL;
}

static int optimize_suite(struct search_args *a, char **paths, int n)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_kb_task *tasks = NULL;
	struct kf_store *st = NULL;
	cJSON *runs = NULL, *rows = cJSON_CreateArray();
	int nt = 0, rc = 0;
	bool stopped = false;
	if (!strcmp(a->so.policy, "tune")) {
		rc = kf_cli_die("optimize: the tuner needs one source that "
				"declares KF_PARAM; over KernelBench-format "
				"tasks give --policy replay or llm");
		goto out;
	}
	if (kf_task_kb_find(paths, n, SUITE_DEPTH, a->level, &tasks, &nt,
			    &err)) {
		rc = kf_cli_die("optimize: %s", err.msg);
		goto out;
	}
	char name[256];
	if (a->suite) {
		snprintf(name, sizeof(name), "%s", a->suite);
	} else {
		/* The first path's directory (the path itself, or the
		 * file's), its last component. */
		char *p = realpath(paths[0], NULL);
		struct stat pst;
		if (p && stat(p, &pst) == 0 && !S_ISDIR(pst.st_mode))
			*strrchr(p, '/') = '\0';
		const char *b = p ? strrchr(p, '/') : NULL;
		snprintf(name, sizeof(name), "%s",
			 b && b[1] ? b + 1 : "kernelbench");
		free(p);
	}
	const char *from = kf_json_str(a->popts, "from");
	char *from_abs = from ? realpath(from, NULL) : NULL;
	struct stat fst;
	bool from_dir = from_abs && stat(from_abs, &fst) == 0 &&
			S_ISDIR(fst.st_mode);
	if (from && !from_abs) {
		rc = kf_cli_die("--from: %s: no such file or directory", from);
		goto out;
	}
	if (kf_store_open(a->db, 0, &st, &err) ||
	    kf_store_run_list(st, &runs, &err)) {
		free(from_abs);
		rc = kf_cli_die("%s", err.msg);
		goto out;
	}
	fprintf(stderr, "suite %s: %d KernelBench-format task%s, store %s\n",
		name, nt, nt == 1 ? "" : "s", a->db);
	uint64_t t0 = kf_now_ns();
	for (int i = 0; i < nt && !stopped; i++) {
		cJSON *row = cJSON_CreateObject();
		cJSON_AddStringToObject(row, "task", tasks[i].id);
		cJSON_AddItemToArray(rows, row);
		char *abs = realpath(tasks[i].path, NULL);
		const cJSON *old = abs ? suite_run(runs, name, abs) : NULL;
		const char *state = old ? kf_json_str(old, "state") : NULL;
		struct kf_search_opts so = a->so;
		cJSON *popts = cJSON_Duplicate(a->popts, 1);
		char *cands = NULL;
		so.suite = name;
		so.task_path = tasks[i].path;
		so.policy_options = popts;
		if (a->so.time_limit_s > 0) {
			double left = a->so.time_limit_s -
				      (double)(kf_now_ns() - t0) * 1e-9;
			so.time_limit_s = left > 1 ? left : 1;
		}
		if (old && state && !strcmp(state, "done")) {
			cJSON_AddNumberToObject(row, "run",
						kf_json_num(old, "id", 0));
			cJSON_AddStringToObject(row, "note", "done earlier");
			goto next;
		}
		if (old && state && !strcmp(state, "running")) {
			cJSON_AddNumberToObject(row, "run",
						kf_json_num(old, "id", 0));
			cJSON_AddStringToObject(row, "note",
						"running in another process");
			goto next;
		}
		if (old) {
			so.resume = (int64_t)kf_json_num(old, "id", 0);
			if (!a->parallel_set)
				so.parallel = 0; /* the run's own */
		} else if (from_dir) {
			cands = suite_from(from_abs, &tasks[i]);
			if (!cands) {
				char *why = kf_xasprintf(
				    "no candidates for it in %s", from);
				cJSON_AddStringToObject(row, "note", why);
				free(why);
				goto next;
			}
			cJSON_ReplaceItemInObject(popts, "from",
						  cJSON_CreateString(cands));
		} else if (from_abs) {
			cJSON_ReplaceItemInObject(popts, "from",
						  cJSON_CreateString(from_abs));
		}
		int64_t run = 0;
		struct kf_err e = KF_ERR_INIT;
		if (kf_search_run(st, &so, &run, &e)) {
			fprintf(stderr, "kforge: %s: %s\n", tasks[i].id, e.msg);
			cJSON_AddStringToObject(row, "note", e.msg);
		}
		if (run)
			cJSON_AddNumberToObject(row, "run", (double)run);
	next:
		if (cJSON_IsNumber(cJSON_GetObjectItem(row, "run"))) {
			cJSON *r = NULL;
			if (!kf_store_run_get(
				st, (int64_t)kf_json_num(row, "run", 0), &r,
				&err)) {
				static const char *const keys[] = {
				    "state", "evaluated", "budget",
				    "best_speedup", "best_candidate"};
				for (size_t k = 0; k < 5; k++) {
					cJSON *v = cJSON_GetObjectItem(r,
								       keys[k]);
					if (v)
						cJSON_AddItemToObject(
						    row, keys[k],
						    cJSON_Duplicate(v, 1));
				}
				const char *s2 = kf_json_str(r, "state");
				/* Stopped (the time limit, SIGINT): the
				 * suite stops with it. */
				stopped = s2 && !strcmp(s2, "stopped");
			}
			cJSON_Delete(r);
		}
		free(cands);
		free(abs);
		cJSON_Delete(popts);
	}
	free(from_abs);
	/* The summary: tasks with a correct candidate, faster ones, and the
	 * geometric mean of the best speedups where there is one. */
	int with_ok = 0, faster = 0, done = 0;
	double logsum = 0;
	const cJSON *row;
	cJSON_ArrayForEach(row, rows)
	{
		const cJSON *b = cJSON_GetObjectItem(row, "best_speedup");
		const char *s2 = kf_json_str(row, "state");
		done += s2 && !strcmp(s2, "done");
		if (cJSON_IsNumber(b) && b->valuedouble > 0) {
			with_ok++;
			faster += b->valuedouble > 1;
			logsum += log(b->valuedouble);
		}
	}
	double geo = with_ok ? exp(logsum / with_ok) : 0;
	if (a->json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "suite", name);
		cJSON_AddNumberToObject(j, "tasks", nt);
		cJSON_AddNumberToObject(j, "done", done);
		cJSON_AddNumberToObject(j, "with_correct", with_ok);
		cJSON_AddNumberToObject(j, "faster", faster);
		if (with_ok)
			cJSON_AddNumberToObject(j, "geomean_best_speedup", geo);
		else
			cJSON_AddNullToObject(j, "geomean_best_speedup");
		cJSON_AddItemToObject(j, "runs", rows);
		rows = NULL;
		char *text = cJSON_Print(j);
		puts(text);
		free(text);
		cJSON_Delete(j);
	} else {
		printf("suite %s: %d tasks, %d done; a correct candidate for "
		       "%d, faster than the reference for %d",
		       name, nt, done, with_ok, faster);
		if (with_ok)
			printf("; geometric mean of the best speedups %.3fx",
			       geo);
		printf("\n\n%-36s %-5s %-12s %-11s %-9s %s\n", "task", "run",
		       "state", "evaluated", "best", "note");
		cJSON_ArrayForEach(row, rows)
		{
			char runs_s[16] = "-", ev[32] = "-", best[32] = "-";
			if (cJSON_IsNumber(cJSON_GetObjectItem(row, "run")))
				snprintf(runs_s, sizeof(runs_s), "%.0f",
					 kf_json_num(row, "run", 0));
			if (cJSON_IsNumber(cJSON_GetObjectItem(row, "budget")))
				snprintf(ev, sizeof(ev), "%.0f/%.0f",
					 kf_json_num(row, "evaluated", 0),
					 kf_json_num(row, "budget", 0));
			if (cJSON_IsNumber(
				cJSON_GetObjectItem(row, "best_speedup")))
				snprintf(best, sizeof(best), "%.3fx",
					 kf_json_num(row, "best_speedup", 0));
			const char *s2 = kf_json_str(row, "state");
			const char *note = kf_json_str(row, "note");
			printf("%-36s %-5s %-12s %-11s %-9s %s\n",
			       kf_json_str(row, "task"), runs_s, s2 ? s2 : "-",
			       ev, best, note ? note : "");
		}
		printf("\n(kforge show RUN --db %s: a run's candidates; the same "
		       "command again continues the suite)\n",
		       a->db);
	}
	if (stopped) {
		fprintf(stderr,
			"kforge: suite %s stopped; run the same command again "
			"to continue it\n",
			name);
		rc = 1;
	}
out:
	kf_kb_tasks_free(tasks, nt);
	cJSON_Delete(runs);
	cJSON_Delete(rows);
	kf_store_close(st);
	return rc;
}

static int cmd_optimize(int argc, char **argv)
{
	struct search_args a;
	struct kf_store *st = NULL;
	struct kf_err err = KF_ERR_INIT;
	int rc = parse_search(argc, argv, &a,
			      "policy from budget parallel time-limit db "
			      "resume json seed starts model base-url "
			      "llm-config llm examples templates template "
			      "tune-each backend time-cap trials eval-seed "
			      "call-timeout-ms mem-limit-mb no-cache level suite "
			      "widen-c widen-alpha explore fail-reward islands "
			      "bins migrate-every redis tune-strategy halving-eta "
			      "objective feedback help");
	if (rc)
		goto out;
	if (!a.so.resume && (rc = check_policy_options(&a)))
		goto out;
	if (a.help) {
		fputs(optimize_usage, stdout);
		goto out;
	}
	if (a.so.resume && optind != argc) {
		rc = kf_cli_die("optimize: --resume takes no TASK (the run has one)");
		goto out;
	}
	/* Several KernelBench-format tasks, or a directory of them (not a
	 * native task's, which holds task.json): a suite. */
	bool suite = !a.so.resume && argc - optind > 1;
	if (!a.so.resume && argc - optind == 1) {
		struct stat sst;
		char *tj = kf_path_join(argv[optind], "task.json");
		suite = stat(argv[optind], &sst) == 0 &&
			S_ISDIR(sst.st_mode) && !kf_file_exists(tj);
		free(tj);
	}
	if ((a.level || a.suite) && !suite) {
		rc = kf_cli_die("optimize: --%s applies to a directory of "
				"KernelBench-format tasks",
				a.level ? "level" : "suite");
		goto out;
	}
	if (suite) {
		rc = optimize_suite(&a, argv + optind, argc - optind);
		goto out;
	}
	if (!a.so.resume && argc - optind != 1) {
		rc = kf_cli_die("optimize: expected TASK (see kforge optimize "
			 "--help)");
		goto out;
	}
	if (!a.so.resume) {
		a.so.task_path = argv[optind];
		if (!kf_file_exists(a.so.task_path)) {
			rc = kf_cli_die("%s: no such task directory", a.so.task_path);
			goto out;
		}
		const char *from = kf_json_str(a.popts, "from");
		if (!from && !strcmp(a.so.policy, "tune")) {
			char *def =
			    default_tunable(a.so.task_path, a.so.eval.backend);
			if (!def) {
				rc = kf_cli_die("optimize: %s has no "
					 "candidates/tunable.%s: give --from "
					 "FILE, a source that declares "
					 "KF_PARAM",
					 a.so.task_path,
					 strcmp(a.so.eval.backend, "cuda")
					     ? "c"
					     : "cu");
				goto out;
			}
			cJSON_AddStringToObject(a.popts, "from", def);
			free(def);
			from = kf_json_str(a.popts, "from");
		}
		if (from) {
			/* The run may be resumed from another directory. */
			char *abs = realpath(from, NULL);
			if (!abs) {
				rc = kf_cli_die("--from: %s: no such file or "
					 "directory",
					 from);
				goto out;
			}
			cJSON_ReplaceItemInObject(a.popts, "from",
						  cJSON_CreateString(abs));
			free(abs);
		}
	} else if (a.run_opt) {
		rc = kf_cli_die("optimize: --%s: a resumed run keeps its own settings "
			 "(only --parallel, --time-limit, --json, --db and "
			 "--redis apply)",
			 a.run_opt);
		goto out;
	}
	a.so.policy_options = a.popts;
	if (!a.parallel_set && a.so.resume)
		a.so.parallel = 0; /* the run's own */
	a.so.progress = isatty(STDERR_FILENO);
	a.so.log = stderr;
	if (kf_store_open(a.db, 0, &st, &err)) {
		rc = kf_cli_die("%s", err.msg);
		goto out;
	}
	int64_t run = 0;
	if (kf_search_run(st, &a.so, &run, &err)) {
		if (run)
			fprintf(stderr,
				"kforge: run %lld stopped; resume it with "
				"kforge optimize --resume %lld%s%s\n",
				(long long)run, (long long)run,
				strcmp(a.db, DEFAULT_DB) ? " --db " : "",
				strcmp(a.db, DEFAULT_DB) ? a.db : "");
		rc = kf_cli_die("%s", err.msg);
		goto out;
	}
	rc = print_report(st, run, a.top, a.json);
out:
	kf_store_close(st);
	cJSON_Delete(a.popts);
	return rc;
}

static const char runs_usage[] =
    "usage: kforge runs [--db FILE] [--json]\n"
    "\n"
    "Lists the runs of the store (default ./kforge.db), newest first: task,\n"
    "policy, state (running, done, stopped, failed, or interrupted when\n"
    "its process is gone), evaluations, the best speedup.\n";

static int cmd_runs(int argc, char **argv)
{
	struct search_args a;
	struct kf_store *st = NULL;
	struct kf_err err = KF_ERR_INIT;
	cJSON *runs = NULL;
	int rc = parse_search(argc, argv, &a, "db json help");
	if (rc)
		goto out;
	if (a.help) {
		fputs(runs_usage, stdout);
		goto out;
	}
	if (optind != argc) {
		rc = kf_cli_die("runs: unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (!kf_file_exists(a.db)) {
		rc = kf_cli_die("%s: no such store", a.db);
		goto out;
	}
	if (kf_store_open(a.db, 0, &st, &err) ||
	    kf_store_run_list(st, &runs, &err)) {
		rc = kf_cli_die("%s", err.msg);
		goto out;
	}
	if (a.json) {
		char *s = cJSON_Print(runs);
		puts(s);
		free(s);
		goto out;
	}
	printf("%-5s %-12s %-26s %-7s %-7s %-11s %-10s %s\n", "run", "state",
	       "task", "backend", "policy", "evaluated", "best", "started");
	const cJSON *r;
	cJSON_ArrayForEach(r, runs)
	{
		char ev[32], best[32] = "-";
		snprintf(ev, sizeof(ev), "%.0f/%.0f",
			 kf_json_num(r, "evaluated", 0),
			 kf_json_num(r, "budget", 0));
		if (cJSON_IsNumber(cJSON_GetObjectItem(r, "best_speedup")))
			snprintf(best, sizeof(best), "%.3fx",
				 kf_json_num(r, "best_speedup", 0));
		printf("%-5.0f %-12s %-26s %-7s %-7s %-11s %-10s %s\n",
		       kf_json_num(r, "id", 0), kf_json_str(r, "state"),
		       kf_json_str(r, "task_id"), kf_json_str(r, "backend"),
		       kf_json_str(r, "policy"), ev, best,
		       kf_json_str(r, "started_at"));
	}
out:
	cJSON_Delete(runs);
	kf_store_close(st);
	cJSON_Delete(a.popts);
	return rc;
}

static const char show_usage[] =
    "usage: kforge show RUN [--db FILE] [--json] [--top N]\n"
    "       kforge show RUN --source [--candidate ID]\n"
    "       kforge show RUN --candidate ID [--json]\n"
    "\n"
    "Shows a run: its state, counts by status, the best candidate with\n"
    "its lineage (the candidates it was made from) and the top N (default\n"
    "10) by speedup. --source prints the source of the best candidate (or\n"
    "of --candidate ID); --candidate ID alone prints that candidate's\n"
    "result as kforge eval does.\n";

static int show_candidate(struct kf_store *st, int64_t run, int64_t id,
			  const struct search_args *a)
{
	struct kf_err err = KF_ERR_INIT;
	cJSON *cands = NULL;
	int rc = 0;
	if (kf_store_candidate_list(st, run, true, true, &cands, &err))
		return kf_cli_die("%s", err.msg);
	const cJSON *c, *hit = NULL;
	cJSON_ArrayForEach(c, cands)
	{
		if (kf_json_num(c, "id", 0) == (double)id)
			hit = c;
	}
	if (!hit) {
		rc = kf_cli_die("show: run %lld has no candidate %lld", (long long)run,
			 (long long)id);
	} else if (a->source) {
		fputs(kf_json_str(hit, "source"), stdout);
	} else if (a->json) {
		char *s = cJSON_Print(hit);
		puts(s);
		free(s);
	} else {
		const cJSON *e = cJSON_GetObjectItem(hit, "evaluation");
		const cJSON *res = cJSON_GetObjectItem(e, "result");
		printf("candidate  %lld (#%.0f of run %lld), policy %s, from "
		       "%s\n",
		       (long long)id, kf_json_num(hit, "seq", 0),
		       (long long)run, kf_json_str(hit, "policy"),
		       kf_json_str(hit, "origin") ? kf_json_str(hit, "origin")
						  : "-");
		if (cJSON_IsObject(res)) {
			struct kf_strbuf sb = KF_STRBUF_INIT;
			kf_result_print(res, &sb);
			fputs(kf_strbuf_str(&sb), stdout);
			kf_strbuf_release(&sb);
			/* a result of the profile feedback mode
			 * (optimize --feedback profile, docs/profile.md) */
			const cJSON *prof = cJSON_GetObjectItem(res, "profile");
			if (kf_json_str(prof, "text"))
				fputs(kf_json_str(prof, "text"), stdout);
			else if (kf_json_str(prof, "error"))
				printf("Profile: not available (%s)\n",
				       kf_json_str(prof, "error"));
		} else {
			printf("status     not evaluated yet\n");
		}
	}
	cJSON_Delete(cands);
	return rc;
}

static int cmd_show(int argc, char **argv)
{
	struct search_args a;
	struct kf_store *st = NULL;
	struct kf_err err = KF_ERR_INIT;
	int64_t run = 0;
	int rc =
	    parse_search(argc, argv, &a, "db json top source candidate help");
	if (rc)
		goto out;
	if (a.help) {
		fputs(show_usage, stdout);
		goto out;
	}
	if (argc - optind != 1) {
		rc = kf_cli_die("show: expected RUN (see kforge runs)");
		goto out;
	}
	if ((rc = parse_run("show", argv[optind], &run)))
		goto out;
	if (!kf_file_exists(a.db)) {
		rc = kf_cli_die("%s: no such store", a.db);
		goto out;
	}
	if (kf_store_open(a.db, 0, &st, &err)) {
		rc = kf_cli_die("%s", err.msg);
		goto out;
	}
	if (a.candidate) {
		rc = show_candidate(st, run, a.candidate, &a);
	} else if (a.source) {
		cJSON *rep = NULL;
		if (kf_search_report(st, run, 1, &rep, &err)) {
			rc = kf_cli_die("%s", err.msg);
			goto out;
		}
		const cJSON *best = cJSON_GetObjectItem(rep, "best");
		if (cJSON_IsObject(best))
			fputs(kf_json_str(best, "source"), stdout);
		else
			rc = kf_cli_die("show: run %lld has no candidate that "
				 "passed",
				 (long long)run);
		cJSON_Delete(rep);
	} else {
		rc = print_report(st, run, a.top, a.json);
		if (rc == 1)
			rc = 0; /* a run without a pass is still shown */
	}
out:
	kf_store_close(st);
	cJSON_Delete(a.popts);
	return rc;
}

static const struct command commands[] = {
    {"eval", cmd_eval, eval_usage,
     "check and time a candidate against a task (docs/results.md)"},
    {"compile", kf_cmd_compile, kf_compile_usage,
     "build sources through the compile cache, with times and imports"},
    {"suite", cmd_suite, suite_usage,
     "every built-in task's naive and fast candidates (docs/tasks.md)"},
    {"tasks", cmd_tasks, tasks_usage, "list the built-in tasks (docs/tasks.md)"},
    {"redteam", cmd_redteam, redteam_usage,
     "run the attack corpus against the verifier (docs/redteam.md)"},
    {"doctor", cmd_doctor, doctor_usage,
     "what this machine can run: backends, sandbox, torch"},
    {"optimize", cmd_optimize, optimize_usage,
     "search for a faster verified kernel (docs/optimize.md)"},
    {"runs", cmd_runs, runs_usage, "list the store's search runs"},
    {"show", cmd_show, show_usage, "a run's report and its candidates"},
    {"export", kf_cmd_export, kf_export_usage,
     "training datasets from the store (docs/export.md)"},
    {"report", kf_cmd_report, kf_report_usage,
     "a run or a bench as an HTML page or CSV (docs/report.md)"},
    {"serve", cmd_serve, serve_usage_text,
     "the reward service for RL trainers (docs/api.md, docs/rl.md)"},
    {"bench", cmd_bench, bench_usage,
     "KernelBench's metrics over many tasks (docs/kernelbench.md)"},
    {"profile", kf_cmd_profile, kf_profile_usage,
     "a candidate's kernels under Nsight Compute, with advice "
     "(docs/profile.md)"},
    {"farm", kf_cmd_farm, kf_farm_usage,
     "evaluation workers on Redis Streams (docs/scale.md)"},
    {"attention", kf_cmd_attention, kf_attention_usage,
     "attention variants from a spec (docs/attention.md)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: kforge COMMAND [options]   (kforge COMMAND --help)\n"
		   "\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].purpose);
	fprintf(f, "\nREADME.md starts with the main job and the tests; docs/ "
		   "has one page per\ncommand or topic (docs/design.md: how "
		   "kforge is built).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	/* The process an executor starts for one evaluation
	 * (include/kforge/exec.h): not a command a user types. */
	if (!strcmp(argv[1], "--eval-child"))
		return kf_exec_child_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("kforge %s\n", KF_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	const char *names[sizeof(commands) / sizeof(commands[0])];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		names[i] = commands[i].name;
	const char *near = kf_cli_suggest(
	    argv[1], names, sizeof(commands) / sizeof(commands[0]));
	if (near)
		fprintf(stderr,
			"kforge: '%s' is not a command; did you mean '%s'?\n",
			argv[1], near);
	else
		fprintf(stderr, "kforge: '%s' is not a command\n", argv[1]);
	usage(stderr);
	return 2;
}
