/*
 * kforge_farm.c: `kforge farm worker` and `kforge farm status`, the farm
 * across machines on Redis Streams (farm_redis.h, docs/scale.md). Batches
 * are submitted by `kforge eval --batch FILE --redis URL`
 * (tools/kforge_evalmany.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/farm_redis.h>

#include "commands.h"

const char kf_farm_usage[] =
    "usage: kforge farm worker|status --redis URL [options]\n"
    "\n"
    "The farm across machines: jobs on Redis Streams (docs/scale.md).\n"
    "Submit with kforge eval --batch FILE --redis URL, kforge serve\n"
    "--redis URL or kforge optimize TASK --redis URL.\n"
    "\n"
    "kforge farm worker --redis URL [--backend host|cuda] [--gpus N]\n"
    "                   [--name NAME] [--root DIR] [options]\n"
    "  Takes jobs of the backend's queue (consumer group \"workers\"),\n"
    "  evaluates each with the options it carries and answers it; runs\n"
    "  until SIGTERM or SIGINT (then finishes the jobs it holds). Jobs of\n"
    "  a worker that stopped answering are taken over after the\n"
    "  visibility timeout. Redis going away is waited out.\n"
    "  --backend B            host (default) or cuda: the queue it serves\n"
    "  --gpus N               evaluations at once, one per GPU (default:\n"
    "                         cuda, all visible; host, 1)\n"
    "  --name NAME            in status and results (default HOST-PID)\n"
    "  --root DIR             the kforge tree tasks are relative to\n"
    "                         (default: the current directory)\n"
    "  --visibility-timeout S a job idle this long is taken over (60)\n"
    "  --max-attempts N       deliveries before a job is answered\n"
    "                         infra_error (default 3)\n"
    "  --idle-exit S          exit after S seconds without a job\n"
    "  --python PATH          the Python of KernelBench-format tasks\n"
    "\n"
    "kforge farm status --redis URL [--json]\n"
    "  The queues' depth (waiting) and pending jobs (taken by a worker,\n"
    "  not yet answered), the farm's totals (answered, retried after a\n"
    "  worker was lost, abandoned) and the live workers, one per node\n"
    "  (their heartbeats: host, backend, slots, GPUs (0 on a host node),\n"
    "  jobs done, seconds since the last heartbeat, jobs held).\n"
    "\n"
    "URL: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///PATH.\n"
    "Exit status: 0, or 2 on bad usage, a malformed or unreachable URL.\n";

enum {
	O_REDIS = 256,
	O_BACKEND,
	O_GPUS,
	O_NAME,
	O_ROOT,
	O_VISIBILITY,
	O_MAX_ATTEMPTS,
	O_IDLE_EXIT,
	O_PYTHON,
	O_JSON,
	O_HELP,
};

static const struct option farm_longopts[] = {
    {"redis", required_argument, NULL, O_REDIS},
    {"backend", required_argument, NULL, O_BACKEND},
    {"gpus", required_argument, NULL, O_GPUS},
    {"name", required_argument, NULL, O_NAME},
    {"root", required_argument, NULL, O_ROOT},
    {"visibility-timeout", required_argument, NULL, O_VISIBILITY},
    {"max-attempts", required_argument, NULL, O_MAX_ATTEMPTS},
    {"idle-exit", required_argument, NULL, O_IDLE_EXIT},
    {"python", required_argument, NULL, O_PYTHON},
    {"json", no_argument, NULL, O_JSON},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int number(const char *opt, const char *s, double lo, double hi,
		  double *out)
{
	char *end;
	double x = strtod(s, &end);
	if (!*s || *end || !(x >= lo && x <= hi))
		return kf_cli_die("%s: '%s' is not a number from %g to %g", opt,
				  s, lo, hi);
	*out = x;
	return 0;
}

int kf_farm_redis_url(const char *url, struct kf_err *err)
{
	struct kf_redis_url u;
	if (!url)
		return kf_err_set(err, KF_EINVAL,
				  "--redis URL is required (redis://HOST[:PORT]"
				  "[/DB])");
	if (kf_redis_url_parse(url, &u, err)) {
		kf_err_prefix(err, "--redis");
		return err->code;
	}
	if (!kf_redis_available())
		return kf_err_set(err, KF_ENOSYS,
				  "--redis: kforge was built without hiredis "
				  "(make deps, then make)");
	return 0;
}

int kf_cmd_farm(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(kf_farm_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *sub = argv[1];
	static const char *const subs[] = {"worker", "status"};
	if (strcmp(sub, "worker") && strcmp(sub, "status")) {
		const char *near = kf_cli_suggest(sub, subs, 2);
		if (near)
			return kf_cli_die("farm: '%s' is not a subcommand; did "
					  "you mean '%s'? (worker, status)",
					  sub, near);
		return kf_cli_die("farm: '%s' is not a subcommand (worker, "
				  "status)",
				  sub);
	}
	bool worker = !strcmp(sub, "worker");
	struct kf_rfarm_worker_opts o = KF_RFARM_WORKER_OPTS_INIT;
	const char *root = NULL;
	bool json = false;
	double v;
	int ch;
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", farm_longopts, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *op = farm_longopts; op->name; op++)
			if (op->val == ch)
				name = op->name;
		if (!worker && name && ch != O_REDIS && ch != O_JSON &&
		    ch != O_HELP)
			return kf_cli_die("farm status: option --%s does not "
					  "apply here",
					  name);
		if (worker && ch == O_JSON)
			return kf_cli_die("farm worker: option --json does "
					  "not apply here");
		switch (ch) {
		case O_REDIS:
			o.url = optarg;
			break;
		case O_BACKEND:
			if (strcmp(optarg, "host") && strcmp(optarg, "cuda"))
				return kf_cli_die("--backend: '%s' is not host "
						  "or cuda",
						  optarg);
			o.backend = optarg;
			break;
		case O_GPUS:
			if (number("--gpus", optarg, 1, 64, &v))
				return 2;
			o.slots = (int)v;
			if (o.slots != v)
				return kf_cli_die("--gpus: '%s' is not a whole "
						  "number",
						  optarg);
			break;
		case O_NAME:
			if (!*optarg || strlen(optarg) > 100 ||
			    strpbrk(optarg, " \t\n/"))
				return kf_cli_die("--name: '%s' is not a name "
						  "(1 to 100 characters, no "
						  "space or '/')",
						  optarg);
			o.name = optarg;
			break;
		case O_ROOT:
			root = optarg;
			break;
		case O_VISIBILITY:
			if (number("--visibility-timeout", optarg, 1, 86400,
				   &o.visibility_s))
				return 2;
			break;
		case O_MAX_ATTEMPTS:
			if (number("--max-attempts", optarg, 1, 1000, &v))
				return 2;
			o.max_attempts = (int)v;
			break;
		case O_IDLE_EXIT:
			if (number("--idle-exit", optarg, 0.1, 1e7,
				   &o.idle_exit_s))
				return 2;
			break;
		case O_PYTHON:
			o.python = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case O_HELP:
			fputs(kf_farm_usage, stdout);
			return 0;
		default: {
			const char *a = argv[optind - 1];
			const char *near =
			    kf_cli_suggest_option(a, farm_longopts, NULL);
			if (near)
				return kf_cli_die("farm %s: unknown option "
						  "'%s'; did you mean --%s? "
						  "(see --help)",
						  sub, a, near);
			return kf_cli_die("farm %s: unknown option '%s' (see "
					  "--help)",
					  sub, a);
		}
		}
	}
	if (optind != argc)
		return kf_cli_die("farm %s: unexpected argument '%s'", sub,
				  argv[optind]);
	struct kf_err err = KF_ERR_INIT;
	if (kf_farm_redis_url(o.url, &err))
		return kf_cli_die("%s", err.msg);
	if (root && chdir(root))
		return kf_cli_die("--root: %s: %s", root, strerror(errno));
	if (!worker) {
		cJSON *s = NULL;
		if (kf_rfarm_status(o.url, &s, &err))
			return kf_cli_die("%s%s",
					  err.code == KF_EIO ? "--redis " : "",
					  err.msg);
		if (json) {
			char *t = cJSON_Print(s);
			puts(t);
			free(t);
			cJSON_Delete(s);
			return 0;
		}
		const cJSON *q;
		cJSON_ArrayForEach(q, cJSON_GetObjectItem(s, "queues"))
		{
			printf("queue %-5s %5.0f waiting, %4.0f pending (taken, "
			       "not yet answered)\n",
			       kf_json_str(q, "backend"),
			       kf_json_num(q, "waiting", 0),
			       kf_json_num(q, "in_flight", 0));
		}
		const cJSON *t = cJSON_GetObjectItem(s, "totals");
		printf("totals     %.0f answered, %.0f retried (taken over "
		       "from a lost worker), %.0f abandoned\n",
		       kf_json_num(t, "done", 0),
		       kf_json_num(t, "reclaimed", 0),
		       kf_json_num(t, "abandoned", 0));
		const cJSON *ws = cJSON_GetObjectItem(s, "workers");
		printf("workers    %d alive\n", cJSON_GetArraySize(ws));
		if (cJSON_GetArraySize(ws))
			printf("  %-24s %-16s %-7s %5s %4s %6s %9s  %s\n",
			       "NAME", "HOST", "BACKEND", "SLOTS", "GPUS",
			       "DONE", "HEARTBEAT", "JOBS");
		const cJSON *w;
		cJSON_ArrayForEach(w, ws)
		{
			printf("  %-24s %-16s %-7s %5.0f %4.0f %6.0f %5.1fs ago  "
			       "%s\n",
			       kf_json_str(w, "name"), kf_json_str(w, "host"),
			       kf_json_str(w, "backend"),
			       kf_json_num(w, "slots", 0),
			       kf_json_num(w, "gpus", 0),
			       kf_json_num(w, "done", 0),
			       kf_json_num(w, "seen_s_ago", 0),
			       kf_json_str(w, "jobs"));
		}
		cJSON_Delete(s);
		return 0;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	o.stop = &stop_flag;
	if (kf_rfarm_worker_run(&o, &err))
		return kf_cli_die("%s%s", err.code == KF_EIO ? "--redis " : "",
				  err.msg);
	return 0;
}
