/*
 * kforge_serve.c: `kforge serve`, the reward service. The HTTP server is a
 * separate executable, kforge-serve beside this one, so that the CLI does
 * not link libmicrohttpd: this command runs it with the same arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/base.h>

#include "commands.h"
#include "serve_usage.h"

int cmd_serve(int argc, char **argv)
{
	char *exe = kf_path_join(kf_exe_dir(), "kforge-serve");
	if (!kf_is_executable(exe)) {
		for (int i = 1; i < argc; i++)
			if (!strcmp(argv[i], "--help")) {
				fputs(serve_usage_text, stdout);
				free(exe);
				return 0;
			}
		fprintf(stderr,
			"kforge: serve: %s is missing: build it with `make` "
			"where libmicrohttpd is installed (`make deps`)\n",
			exe);
		free(exe);
		return 2;
	}
	char **args = kf_xcalloc((size_t)argc + 1, sizeof(char *));
	args[0] = exe;
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	fflush(NULL);
	execv(exe, args);
	fprintf(stderr, "kforge: serve: cannot run %s: %s\n", exe,
		strerror(errno));
	free(args);
	free(exe);
	return 2;
}
