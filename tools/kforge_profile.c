/*
 * kforge_profile.c: `kforge profile TASK CANDIDATE`, the candidate's kernels
 * and the reference's profiled side by side with Nsight Compute, and the
 * analysers' advice (docs/profile.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/base.h>
#include <kforge/profile.h>

#include "commands.h"

const char kf_profile_usage[] =
    "usage: kforge profile TASK CANDIDATE [--backend cuda|host] [--json]\n"
    "                      [--calls N]\n"
    "\n"
    "Profiles CANDIDATE's kernels and the reference's at the task's timing\n"
    "dims with Nsight Compute (ncu; $KFORGE_NCU, /usr/local/cuda/bin, PATH,\n"
    "/opt/nvidia/nsight-compute), in a sandboxed process of its own, and\n"
    "says in plain words what limits the candidate and what to change:\n"
    "register spills, occupancy, uncoalesced access, bank conflicts,\n"
    "divergence, tail effect, launch overhead, low arithmetic intensity,\n"
    "missed tensor cores. The backend follows the file (.cu: cuda, .c:\n"
    "host) unless given; the host backend has no counters to read and says\n"
    "so. --calls N: calls profiled per side (default 2). --json: the whole\n"
    "profile as JSON. The candidate is not checked: evaluate it first\n"
    "(kforge eval).\n"
    "Exit status: 0 profiled (or the host's message), 1 the profile failed,\n"
    "2 bad arguments.\n";

int kf_cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"backend", required_argument, NULL, 'b'},
	    {"json", no_argument, NULL, 'j'},
	    {"calls", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *backend = NULL;
	bool json = false;
	int calls = 2, ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			if (strcmp(optarg, "cuda") && strcmp(optarg, "host"))
				return kf_cli_die("profile: --backend must "
						  "be cuda or host, not "
						  "'%s'",
						  optarg);
			backend = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'c': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100)
				return kf_cli_die("profile: --calls must be "
						  "1 to 100, not '%s'",
						  optarg);
			calls = (int)v;
			break;
		}
		case 'h':
			fputs(kf_profile_usage, stdout);
			return 0;
		default: {
			const char *near =
			    kf_cli_suggest_option(argv[optind - 1], opts, NULL);
			return kf_cli_die("profile: unknown option '%s'%s%s%s "
					  "(see kforge profile --help)",
					  argv[optind - 1],
					  near ? " (did you mean --" : "",
					  near ? near : "", near ? "?)" : "");
		}
		}
	}
	if (argc - optind != 2)
		return kf_cli_die("profile: expected TASK and CANDIDATE, got "
				  "%d argument%s (see kforge profile --help)",
				  argc - optind, argc - optind == 1 ? "" : "s");
	const char *task = argv[optind], *cand = argv[optind + 1];
	size_t len = strlen(cand);
	bool cu = len > 3 && !strcmp(cand + len - 3, ".cu");
	bool c = len > 2 && !strcmp(cand + len - 2, ".c");
	if (!cu && !c)
		return kf_cli_die("profile: CANDIDATE must be a .cu (cuda) or "
				  ".c (host) source, not '%s'",
				  cand);
	if (!backend)
		backend = cu ? "cuda" : "host";
	if (!strcmp(backend, "cuda") && !cu)
		return kf_cli_die("profile: --backend cuda takes a .cu "
				  "candidate; '%s' is C for the host",
				  cand);
	if (!kf_file_exists(cand))
		return kf_cli_die("profile: no candidate file '%s'", cand);
	struct kf_profile p;
	kf_profile_init(&p);
	struct kf_profile_opts o = {0};
	o.backend = backend;
	o.calls = calls;
	struct kf_err err = KF_ERR_INIT;
	uint64_t t0 = kf_now_ns();
	int rc = kf_profile_run(task, cand, &o, &p, &err);
	double secs = (double)(kf_now_ns() - t0) * 1e-9;
	if (rc) {
		if (json) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "error", err.msg);
			char *s = kf_json_print(e);
			printf("%s\n", s);
			free(s);
			cJSON_Delete(e);
		}
		fprintf(stderr, "kforge: %s\n", err.msg);
		kf_profile_release(&p);
		return rc == KF_EINVAL || rc == KF_ENOENT ? 2 : 1;
	}
	if (json) {
		cJSON *j = kf_profile_json(&p);
		cJSON_AddStringToObject(j, "backend", backend);
		cJSON_AddNumberToObject(j, "seconds", secs);
		char *s = kf_json_print(j);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
	} else {
		char *s = kf_profile_text(&p, true);
		fputs(s, stdout);
		free(s);
	}
	kf_profile_release(&p);
	return 0;
}
