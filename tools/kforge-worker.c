/*
 * kforge-worker.c: the disposable process in which candidate code runs. The
 * supervisor spawns one per evaluation and speaks frames on stdin/stdout.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kforge/profile.h>
#include <kforge/worker.h>

int main(int argc, char **argv)
{
	/* The profile's driver (src/profile/driver.c), which ncu runs. */
	if (argc > 1 && !strcmp(argv[1], "--profile-driver"))
		return kf_profile_driver_main(argc - 1, argv + 1);
	/* Frames go to a private copy of stdout; whatever the candidate
	 * prints lands on stderr (the worker's log), never in a frame. */
	int frames = dup(1);
	if (frames < 0 || dup2(2, 1) < 0) {
		perror("kforge-worker: dup");
		return 1;
	}
	return kf_worker_main(0, frames);
}
