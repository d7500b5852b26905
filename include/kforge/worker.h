/*
 * worker.h: the code that runs inside the sandboxed worker process. The
 * supervisor (eval) sends requests as frames; the worker loads the task, the
 * reference and the candidate, runs trials and timing samples through the
 * backend, and answers with raw measurements only: it never judges.
 *
 * Requests ("op"): load, peaks, trial, time, quit. Replies ("ev"): loaded,
 * load_error, peaks, trial, samples, error. docs/results.md describes them.
 */
#ifndef KFORGE_WORKER_H
#define KFORGE_WORKER_H

#include <stddef.h>

/* The exit status of a runner whose process stored into memory it maps
 * read-only (on the host: every input and the slack around it); the worker
 * ends with the same status, and the judge names it. */
#define KF_WORKER_EXIT_INPUT_STORE 83

/* Serves requests read from in_fd, answering on out_fd, until "quit" or end
 * of input. Returns the process exit code. */
int kf_worker_main(int in_fd, int out_fd);

/* For kforge doctor: tries each mechanism that confines a candidate's
 * runner (namespaces and a root of its own, a user id of its own, mseal) in
 * a child process; returns how many are missing and names them in why (cap
 * bytes). A missing one fails every evaluation with an error naming it. */
int kf_sandbox_check(char *why, size_t cap);

#endif
