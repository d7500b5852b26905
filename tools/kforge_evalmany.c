/*
 * kforge_evalmany.c: `kforge eval TASK CAND1 CAND2 ... [--jobs N]
 * [--gpus N]`, many candidates through the farm (farm.h): compiles ahead
 * on N threads while one evaluation per GPU measures. cmd_eval hands argv
 * over when it names more than one candidate or --jobs or --gpus; one
 * candidate without them stays on the single path.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/farm.h>
#include <kforge/farm_redis.h>

#include "commands.h"

static const char evalmany_usage[] =
    "usage: kforge eval TASK CANDIDATE... [--jobs N] [--gpus N] [options]\n"
    "       kforge eval --batch FILE [--jobs N] [--gpus N] [options]\n"
    "       kforge eval --batch FILE --redis URL [--deadline S] [options]\n"
    "\n"
    "Evaluates every CANDIDATE against TASK: N threads compile ahead\n"
    "(--jobs, default: the cores) while each GPU measures one candidate\n"
    "at a time (--gpus: how many to use, default all visible; on the host\n"
    "backend, how many evaluations run at once, default 1). Prints one\n"
    "line per candidate in the order given (--json: an array of result\n"
    "JSONs, null where an evaluation could not start), and a progress bar\n"
    "on stderr when it is a terminal. The options of a single eval apply\n"
    "to each (see kforge eval --help). --batch FILE: a mixed batch,\n"
    "one \"TASK CANDIDATE\" pair a line (# starts a comment).\n"
    "--redis URL: the evaluations run on the farm's workers (kforge farm\n"
    "worker, docs/scale.md) instead of here: each candidate's source\n"
    "travels in its job, tasks are paths in the kforge tree every node\n"
    "has; the output is the local one's, and a summary line on stderr\n"
    "(answered, duplicates dropped, taken over, seconds). --deadline S:\n"
    "how long to wait for the results (default 3600); a job not answered\n"
    "by then is withdrawn and its line an error.\n"
    "\n"
    "Exit status: 0 all ok, 1 another verdict, 2 bad usage or an error.\n";

enum {
	O_JSON = 256,
	O_BACKEND,
	O_SEED,
	O_TRIALS,
	O_NO_TIMING,
	O_TIME_CAP,
	O_CALL_TIMEOUT,
	O_NO_CACHE,
	O_MEM_LIMIT,
	O_PROTOCOL,
	O_JOBS,
	O_GPUS,
	O_BATCH,
	O_PYTHON,
	O_ENERGY_TIME,
	O_REDIS,
	O_DEADLINE,
	O_HELP,
};

static const struct option longopts[] = {
    {"json", no_argument, NULL, O_JSON},
    {"backend", required_argument, NULL, O_BACKEND},
    {"seed", required_argument, NULL, O_SEED},
    {"trials", required_argument, NULL, O_TRIALS},
    {"no-timing", no_argument, NULL, O_NO_TIMING},
    {"time-cap", required_argument, NULL, O_TIME_CAP},
    {"call-timeout-ms", required_argument, NULL, O_CALL_TIMEOUT},
    {"no-cache", no_argument, NULL, O_NO_CACHE},
    {"mem-limit-mb", required_argument, NULL, O_MEM_LIMIT},
    {"protocol", required_argument, NULL, O_PROTOCOL},
    {"jobs", required_argument, NULL, O_JOBS},
    {"gpus", required_argument, NULL, O_GPUS},
    {"batch", required_argument, NULL, O_BATCH},
    {"python", required_argument, NULL, O_PYTHON},
    {"energy-time", required_argument, NULL, O_ENERGY_TIME},
    {"redis", required_argument, NULL, O_REDIS},
    {"deadline", required_argument, NULL, O_DEADLINE},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

int kf_evalmany_wanted(int argc, char **argv)
{
	int positional = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			positional += argc - i - 1;
			break;
		}
		if (strncmp(a, "--", 2) != 0) {
			positional++;
			continue;
		}
		if (!strncmp(a, "--jobs", 6) || !strncmp(a, "--gpus", 6) ||
		    !strncmp(a, "--batch", 7) || !strncmp(a, "--redis", 7))
			return 1;
		const struct option *o = longopts;
		size_t k = strcspn(a + 2, "=");
		while (o->name &&
		       (strlen(o->name) != k || strncmp(a + 2, o->name, k)))
			o++;
		if (!o->name)
			return 0; /* the single path says what is wrong */
		if (o->has_arg == required_argument && !a[2 + k])
			i++; /* its value */
	}
	return positional > 2;
}

static int bad(const char *fmt, const char *a, const char *b)
{
	fputs("kforge: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 2;
}

static int count(const char *opt, const char *s, long lo, long hi, long *v)
{
	char *end;
	long x = strtol(s, &end, 10);
	if (!*s || *end || x < lo || x > hi)
		return bad("%s: '%s' is out of range", opt, s);
	*v = x;
	return 0;
}

static int positive(const char *opt, const char *s, double *v)
{
	char *end;
	double x = strtod(s, &end);
	if (!*s || *end || !(x > 0))
		return bad("%s: '%s' is not a positive number", opt, s);
	*v = x;
	return 0;
}

int kf_parse_energy_time(const char *s, double *out)
{
	char *end;
	double x = strtod(s, &end);
	if (!*s || *end || !(x >= 0 && x <= KF_ENERGY_MAX_S)) {
		fprintf(stderr,
			"kforge: --energy-time: '%s' is not a number of "
			"seconds from 0 to %g (0 skips energy)\n",
			s, KF_ENERGY_MAX_S);
		return 2;
	}
	*out = x;
	return 0;
}

struct bar {
	bool on;
	uint64_t t0;
};

static void progress(void *arg, const struct kf_farm_progress *p)
{
	struct bar *b = arg;
	if (!b->on)
		return;
	const int width = 30;
	int filled = p->total ? p->done * width / p->total : width;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[width] = '\0';
	double s = (double)(kf_now_ns() - b->t0) * 1e-9;
	fprintf(stderr,
		"\r[%s] %d/%d done, %d compiled, %d not ok, %.0f s, %.1f/min ",
		bar, p->done, p->total, p->compiled, p->failed, s,
		s > 0 ? p->done * 60.0 / s : 0.0);
	fflush(stderr);
}

static const cJSON *at(const cJSON *o, const char *a, const char *b)
{
	o = cJSON_GetObjectItemCaseSensitive(o, a);
	return b ? cJSON_GetObjectItemCaseSensitive(o, b) : o;
}

int kf_cmd_evalmany(int argc, char **argv)
{
	struct kf_farm_opts fo = KF_FARM_OPTS_INIT;
	bool json = false;
	const char *batch = NULL, *redis = NULL;
	double deadline = 3600;
	long v = 0;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case O_JSON:
			json = true;
			break;
		case O_BACKEND:
			fo.eval.backend = optarg;
			break;
		case O_SEED: {
			char *end;
			unsigned long long u = strtoull(optarg, &end, 10);
			if (!*optarg || *end || *optarg == '-')
				return bad("%s: '%s' is not a non-negative "
					   "integer",
					   "--seed", optarg);
			fo.eval.seed = u;
			break;
		}
		case O_TRIALS:
			if (count("--trials", optarg, 5, 1000, &v))
				return 2;
			fo.eval.trials = (int)v;
			break;
		case O_NO_TIMING:
			fo.eval.no_timing = true;
			break;
		case O_TIME_CAP:
			if (positive("--time-cap", optarg, &fo.eval.time_cap_s))
				return 2;
			break;
		case O_CALL_TIMEOUT:
			if (positive("--call-timeout-ms", optarg,
				     &fo.eval.call_timeout_ms))
				return 2;
			break;
		case O_NO_CACHE:
			fo.eval.no_cache = true;
			break;
		case O_MEM_LIMIT:
			if (count("--mem-limit-mb", optarg, 64, 1L << 40, &v))
				return 2;
			fo.eval.mem_limit_bytes = (uint64_t)v << 20;
			break;
		case O_PROTOCOL:
			fo.eval.protocol = optarg;
			break;
		case O_JOBS:
			if (count("--jobs", optarg, 1, 1024, &v))
				return 2;
			fo.jobs = (int)v;
			break;
		case O_GPUS:
			if (count("--gpus", optarg, 1, 64, &v))
				return 2;
			fo.slots = (int)v;
			break;
		case O_BATCH:
			batch = optarg;
			break;
		case O_PYTHON:
			fo.eval.python = optarg;
			break;
		case O_ENERGY_TIME:
			if (kf_parse_energy_time(optarg, &fo.eval.energy_s))
				return 2;
			break;
		case O_REDIS:
			redis = optarg;
			break;
		case O_DEADLINE:
			if (positive("--deadline", optarg, &deadline))
				return 2;
			break;
		case O_HELP:
			fputs(evalmany_usage, stdout);
			return 0;
		default:
			return bad("%s: unknown option '%s' (see --help)",
				   argv[0], argv[optind - 1]);
		}
	}
	if (redis) {
		struct kf_err e = KF_ERR_INIT;
		if (kf_farm_redis_url(redis, &e))
			return bad("%s%s", e.msg, "");
		if (fo.jobs || fo.slots)
			return bad("%s: does not apply with --redis (each "
				   "worker's --gpus says how many it runs "
				   "at once)%s",
				   fo.jobs ? "--jobs" : "--gpus", "");
	}
	const char *task = NULL;
	int n = 0;
	struct kf_farm_item *items = NULL;
	char *text = NULL;
	if (batch) {
		struct kf_err e = KF_ERR_INIT;
		if (optind != argc)
			return bad("%s: --batch takes no TASK or CANDIDATE "
				   "(%s)",
				   argv[0], argv[optind]);
		if (kf_file_read(batch, 64u << 20, &text, NULL, &e))
			return bad("%s%s", e.msg, "");
		for (char *save = NULL, *line = strtok_r(text, "\n", &save);
		     line; line = strtok_r(NULL, "\n", &save)) {
			char *hash = strchr(line, '#');
			if (hash)
				*hash = '\0';
			char *sp = NULL;
			char *t = strtok_r(line, " \t", &sp);
			char *c = t ? strtok_r(NULL, " \t", &sp) : NULL;
			if (!t)
				continue;
			if (!c || strtok_r(NULL, " \t", &sp)) {
				free(items);
				free(text);
				return bad("%s: a line is not \"TASK "
					   "CANDIDATE\"%s",
					   batch, "");
			}
			items = kf_xrealloc(items,
					    sizeof(*items) * (size_t)(n + 1));
			memset(&items[n], 0, sizeof(*items));
			items[n].task = t;
			items[n++].candidate = c;
		}
		if (!n) {
			free(text);
			return bad("%s: no \"TASK CANDIDATE\" line%s", batch,
				   "");
		}
	} else {
		if (argc - optind < 2)
			return bad("%s: expected TASK and CANDIDATE...%s",
				   argv[0], " (see kforge eval --help)");
		task = argv[optind];
		n = argc - optind - 1;
		items = kf_xcalloc((size_t)n, sizeof(*items));
		for (int i = 0; i < n; i++)
			items[i].candidate = argv[optind + 1 + i];
	}
	struct bar b = {isatty(STDERR_FILENO) != 0, kf_now_ns()};
	fo.progress = progress;
	fo.progress_arg = &b;
	struct kf_err err = KF_ERR_INIT;
	struct kf_rfarm_stats rs = {0};
	struct kf_rfarm_submit_opts ro = KF_RFARM_SUBMIT_OPTS_INIT;
	ro.url = redis;
	ro.deadline_s = deadline;
	ro.progress = progress;
	ro.progress_arg = &b;
	if (redis ? kf_rfarm_submit(&ro, task, items, n, &fo.eval, &rs, &err)
		  : kf_farm_run(task, items, n, &fo, &err)) {
		free(items);
		free(text);
		return bad("%s%s",
			   redis && err.code == KF_EIO ? "--redis " : "",
			   err.msg);
	}
	if (b.on)
		fputs("\r\033[K", stderr);
	int rc = 0;
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	for (int i = 0; i < n; i++) {
		struct kf_farm_item *it = &items[i];
		if (it->rc) {
			rc = 2;
			if (arr) {
				fprintf(stderr, "kforge: %s: %s\n",
					it->candidate, it->err);
				cJSON_AddItemToArray(arr, cJSON_CreateNull());
			} else
				printf("%-48s %-14s %s\n", it->candidate,
				       "error", it->err);
			continue;
		}
		enum kf_status st = kf_result_status(it->result);
		if (st != KF_STATUS_OK && rc == 0)
			rc = 1;
		if (arr) {
			cJSON *fm = cJSON_GetObjectItem(it->result, "farm");
			if (!cJSON_IsObject(fm))
				fm =
				    cJSON_AddObjectToObject(it->result, "farm");
			cJSON_AddNumberToObject(fm, "device", it->device);
			cJSON_AddNumberToObject(fm, "compile_s", it->compile_s);
			cJSON_AddNumberToObject(fm, "wait_s", it->wait_s);
			cJSON_AddNumberToObject(fm, "eval_s", it->eval_s);
			cJSON_AddItemToArray(arr, it->result);
			it->result = NULL;
			continue;
		}
		const cJSON *sp =
		    at(at(it->result, "timing", NULL), "speedup", "median");
		const cJSON *reason = at(it->result, "reason", NULL);
		char speed[32] = "-";
		if (cJSON_IsNumber(sp) && isfinite(sp->valuedouble))
			snprintf(speed, sizeof(speed), "%.3fx",
				 sp->valuedouble);
		printf("%-48s %-14s %9s  compile %6.2f s  eval %6.2f s%s%s\n",
		       it->candidate, kf_status_name(st), speed, it->compile_s,
		       it->eval_s, cJSON_IsString(reason) ? "  " : "",
		       cJSON_IsString(reason) ? reason->valuestring : "");
		cJSON_Delete(it->result);
	}
	if (arr) {
		char *s = cJSON_Print(arr);
		puts(s);
		free(s);
		cJSON_Delete(arr);
	}
	if (redis) {
		fflush(stdout);
		fprintf(stderr,
			"kforge: farm: %d jobs, %d answered, %d duplicates "
			"dropped, %d taken over, %d abandoned, %d "
			"reconnects, %.1f s\n",
			rs.jobs, rs.answered, rs.duplicates, rs.reclaimed,
			rs.abandoned, rs.reconnects, rs.seconds);
	}
	free(items);
	free(text);
	return rc;
}
