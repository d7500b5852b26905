/*
 * worker_int.h: shared inside the worker module.
 */
#ifndef KFORGE_WORKER_INT_H
#define KFORGE_WORKER_INT_H

#include <kforge/base.h>

/*
 * Confines this process for the rest of its life with a seccomp filter,
 * once the device is open and before the candidate is loaded (so that its
 * constructors run confined too): no new processes, programs, sockets or
 * signals to other processes; on the host backend no threads, files opened
 * read-only only, and no memory made executable. A forbidden call kills the
 * process with SIGSYS, which the supervisor reports as rejected
 * ("sandbox").
 */
int kf_sandbox_enter(const char *backend, struct kf_err *err);

/* A second filter, once the candidate is loaded: no memory becomes
 * executable any more; on the host no file is opened, on cuda none is
 * written. */
int kf_sandbox_loaded(const char *backend, struct kf_err *err);

#endif
