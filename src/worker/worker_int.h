/*
 * worker_int.h: shared inside the worker module.
 */
#ifndef KFORGE_WORKER_INT_H
#define KFORGE_WORKER_INT_H

#include <kforge/base.h>

/*
 * Confines this process for the rest of its life with a seccomp filter,
 * once the device is open and the candidate loaded: no new processes,
 * programs, sockets or signals to other processes, and on the host backend
 * no threads and no files. A forbidden call kills the process with SIGSYS,
 * which the supervisor reports as rejected ("sandbox").
 */
int kf_sandbox_enter(const char *backend, struct kf_err *err);

#endif
