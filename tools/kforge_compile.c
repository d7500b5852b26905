/*
 * kforge_compile.c: `kforge compile`, builds candidate sources through the
 * compile cache the way an evaluation does, and reports the time each took
 * and the symbols each object imports (bench/compile_latency.py uses it).
 */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/base.h>
#include <kforge/compile.h>
#include <kforge/task.h>

#include "commands.h"

const char kf_compile_usage[] =
    "usage: kforge compile [--backend B] [--task DIR] [--no-cache] [--json]\n"
    "                      FILE...\n"
    "\n"
    "Compiles each FILE (.c for host, .cu for cuda) as an evaluation\n"
    "would, through the compile cache, with the arch and libraries of\n"
    "its task (--task, else the task.json beside FILE or one directory\n"
    "up). Prints one line per file: ok or failed, cached or cold, the\n"
    "wall time of the call and how many symbols the object imports;\n"
    "with --json, an array with the imports and the command.\n"
    "Exit status: 0 all compiled, 1 one failed, 2 an error.\n";

/* The task of a source: given, else beside it or one directory up. NULL
 * when none (no arch, no libraries). */
static struct kf_task *task_of(const char *given, const char *file)
{
	struct kf_task *t = NULL;
	struct kf_err err = KF_ERR_INIT;
	if (given) {
		if (kf_task_load(given, &t, &err))
			fprintf(stderr, "kforge: %s\n", err.msg);
		return t;
	}
	char *a = kf_xstrdup(file);
	char *d = dirname(a);
	for (int up = 0; up < 2 && !t; up++) {
		char *tj = kf_path_join(d, "task.json");
		if (kf_file_exists(tj))
			kf_task_load(d, &t, NULL);
		free(tj);
		d = dirname(d);
	}
	free(a);
	return t;
}

int kf_cmd_compile(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"backend", required_argument, NULL, 'b'},
	    {"task", required_argument, NULL, 't'},
	    {"no-cache", no_argument, NULL, 'n'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *backend = NULL, *task_dir = NULL;
	bool no_cache = false, json = false;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			backend = optarg;
			break;
		case 't':
			task_dir = optarg;
			break;
		case 'n':
			no_cache = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(kf_compile_usage, stdout);
			return 0;
		default:
			fprintf(stderr,
				"kforge: compile: unknown option '%s' (see "
				"--help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "kforge: compile: expected FILE...\n");
		return 2;
	}
	int rc = 0;
	cJSON *arr = cJSON_CreateArray();
	for (int f = optind; f < argc; f++) {
		const char *file = argv[f];
		size_t len = strlen(file);
		const char *be = backend ? backend
				 : len > 3 && !strcmp(file + len - 3, ".cu")
				     ? "cuda"
				     : "host";
		struct kf_task *t = task_of(task_dir, file);
		const char **libs = NULL;
		struct kf_compile_opts co = {0};
		co.backend = be;
		co.no_cache = no_cache;
		if (t) {
			co.arch = t->cuda_arch;
			libs = kf_xcalloc(
			    (size_t)(t->n_libraries + t->n_cuda_libraries + 1),
			    sizeof(*libs));
			for (int i = 0; i < t->n_libraries; i++)
				libs[co.n_libraries++] = t->libraries[i];
			for (int i = 0;
			     i < t->n_cuda_libraries && !strcmp(be, "cuda");
			     i++)
				libs[co.n_libraries++] = t->cuda_libraries[i];
			co.libraries = libs;
		}
		struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
		struct kf_err err = KF_ERR_INIT;
		uint64_t t0 = kf_now_ns();
		int crc = kf_compile(file, &co, &r, &err);
		double wall = (double)(kf_now_ns() - t0) * 1e-9;
		char **names = NULL;
		int n = 0;
		if (!crc && r.ok &&
		    kf_compile_imports(r.so_path, &names, &n, &err))
			crc = err.code;
		if (crc) {
			fprintf(stderr, "kforge: %s: %s\n", file, err.msg);
			rc = 2;
		} else if (!r.ok && rc == 0) {
			rc = 1;
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "file", file);
		cJSON_AddBoolToObject(o, "ok", !crc && r.ok);
		cJSON_AddBoolToObject(o, "cached", r.cached);
		cJSON_AddBoolToObject(o, "timed_out", r.timed_out);
		cJSON_AddNumberToObject(o, "wall_s", wall);
		cJSON_AddNumberToObject(o, "compiler_s", r.seconds);
		cJSON_AddStringToObject(o, "key", r.key ? r.key : "");
		cJSON_AddStringToObject(o, "command",
					r.command ? r.command : "");
		cJSON *imp = cJSON_AddArrayToObject(o, "imports");
		for (int i = 0; i < n; i++) {
			cJSON_AddItemToArray(imp, cJSON_CreateString(names[i]));
			free(names[i]);
		}
		free(names);
		if (!json)
			printf("%-6s %-6s %8.4f s %4d imports  %s\n",
			       !crc && r.ok ? "ok" : "failed",
			       r.cached ? "cached" : "cold", wall, n, file);
		else
			cJSON_AddItemToArray(arr, o);
		if (!json)
			cJSON_Delete(o);
		kf_compile_result_release(&r);
		free(libs);
		kf_task_free(t);
	}
	if (json) {
		char *s = cJSON_Print(arr);
		puts(s);
		free(s);
	}
	cJSON_Delete(arr);
	return rc;
}
