/*
 * kforge-worker.c: the disposable process in which candidate code runs. The
 * supervisor spawns one per evaluation and speaks frames on stdin/stdout.
 */
#include <stdio.h>
#include <unistd.h>

#include <kforge/worker.h>

int main(void)
{
	/* Frames go to a private copy of stdout; whatever the candidate
	 * prints lands on stderr (the worker's log), never in a frame. */
	int frames = dup(1);
	if (frames < 0 || dup2(2, 1) < 0) {
		perror("kforge-worker: dup");
		return 1;
	}
	return kf_worker_main(0, frames);
}
