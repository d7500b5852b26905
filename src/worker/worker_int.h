/*
 * worker_int.h: shared inside the worker module.
 */
#ifndef KFORGE_WORKER_INT_H
#define KFORGE_WORKER_INT_H

#include <sys/types.h>
#include <time.h>

#include <kforge/backend.h>
#include <kforge/base.h>

/*
 * The candidate's runner, right after fork (single-threaded, before the
 * device is opened): mount, network, IPC and UTS namespaces (and a user
 * namespace when not root); a read-only root holding the system's
 * libraries, /sys, a few devices (cuda: /dev/nvidia*), the directories of
 * LD_LIBRARY_PATH and the object at its own path; a /proc that shows this
 * process only. A missing mechanism is an error, never a weaker sandbox.
 */
int kf_sandbox_confine(const char *backend, const char *object,
		       struct kf_err *err);
/* Leaves the confined runner only the environment the device and the
 * loader read, wiping the rest where /proc/self/environ would show it. */
void kf_sandbox_scrub_env(void);
/* Where the object lies in that root: /kforge/<its file name>, so that no
 * directory of the machine's shows there. */
void kf_sandbox_object_path(const char *object, char *buf, size_t cap);
/* As root: a user id of its own (536870912 + pid), every thread, which
 * clears the capabilities. Before the candidate is loaded. */
int kf_sandbox_drop_user(struct kf_err *err);
/* Seals (mseal) the read-only relocation segments of everything mapped, so
 * that no raw mprotect, mmap or mremap makes the GOT writable again. An
 * error where mseal is missing, unless KFORGE_SANDBOX_WEAK has "mseal". */
int kf_sandbox_seal(struct kf_err *err);
/* Maps [at, at + bytes) read-only for good (mprotect, then mseal where the
 * kernel has it): the inputs of the candidate's pool on the host. */
int kf_sandbox_read_only(void *at, size_t bytes, struct kf_err *err);

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

/*
 * The runners (runner.c): one process per side that maps only that side's
 * memory, loads one object and calls it on request. Requests and replies
 * are fixed-size messages on a socket pair (one message per send).
 */
enum kf_run_op {
	KF_RUN_INIT = 1, /* text: the backend; opens the device */
	KF_RUN_MAP,	 /* bytes, handle (+ a descriptor on the host):
			    maps the side's pool */
	KF_RUN_LOAD,	 /* text: the object; sandbox: confine first. The
			    reply's text is the global state before it */
	KF_RUN_CALL,	 /* tensors at offsets into the pool; one timed
			    call, the global state after it in text (or,
			    with empty, the same steps around no call) */
	KF_RUN_QUIT,
};

struct kf_run_tensor {
	uint64_t offset; /* into the side's pool */
	int32_t ndim;
	uint8_t code, bits;
	uint16_t lanes;
	int64_t shape[KF_MAX_NDIM];
};

struct kf_run_req {
	uint32_t op, seq;
	uint32_t flush, sandbox;
	int32_t n_in, n_out;
	uint32_t empty;	    /* KF_RUN_CALL: everything but the object's entry
			       (the runner's own cost per call) */
	uint32_t staged;    /* KF_RUN_CALL: reply "done" (stage 1) as soon as
			       the call's work has finished, then the sample */
	uint32_t flush_key; /* KF_RUN_CALL with flush on a device: the value */
	uint64_t flush_off; /* the flush writes over the pool at this offset */
	uint64_t bytes;
	/* KF_RUN_MAP on the host: the first ro_bytes of every ro_stride
	 * bytes of the pool (each slot's inputs and the slack around them)
	 * are mapped read-only and sealed */
	uint64_t ro_stride, ro_bytes;
	unsigned char handle[64];
	char text[512];
	struct kf_run_tensor t[2 * KF_MAX_TENSORS]; /* inputs, then outputs */
};

struct kf_run_rep {
	uint32_t seq;
	int32_t rc;	/* 0, or the engine's error code (KF_EFAULT: a device
			   fault) with the message in text */
	uint32_t stage; /* 1: the early "done" of a staged call; 0: the
			   reply */
	uint32_t pad;
	struct kf_sample smp;
	int32_t cuda_error; /* the CUDA runtime's error after the call */
	char name[64];	    /* its name; or the failing step of a load */
	char text[1200];
};

struct kf_runner {
	pid_t pid; /* 0 once gone */
	int fd;
	clockid_t cpu; /* its CPU-time clock: all its threads */
	uint32_t seq;
	int status; /* how it ended, once pid is 0 */
	const char *role;
};

/* Forks a runner, pinned to cpu unless it is negative. It must be started
 * before this process opens a device (CUDA does not survive fork). When
 * confine is not NULL (the candidate's: the object it will load, on
 * backend) the runner is confined from the start (kf_sandbox_confine); a
 * failure there is the reply to its first request. */
int kf_runner_start(struct kf_runner *r, const char *role, int cpu,
		    const char *backend, const char *confine,
		    struct kf_err *err);
/* Sends q (with a descriptor unless pass_fd < 0) and waits for its reply.
 * KF_ECHILD when the runner died (reaped: r->status says how). */
int kf_runner_exchange(struct kf_runner *r, struct kf_run_req *q, int pass_fd,
		       struct kf_run_rep *a, struct kf_err *err);
/* The two halves of an exchange, for a staged call: kf_runner_send, then
 * kf_runner_recv for each message it answers with (stage 1, then 0). */
int kf_runner_send(struct kf_runner *r, struct kf_run_req *q, int pass_fd,
		   struct kf_err *err);
int kf_runner_recv(struct kf_runner *r, const struct kf_run_req *q,
		   struct kf_run_rep *a, struct kf_err *err);
/* The CPU time the runner has used, all threads, in ns (0 once gone). */
uint64_t kf_runner_cpu_ns(const struct kf_runner *r);
/* Whether the runner is running or waiting to run (its state is R), not
 * blocked: an honest one blocks reading its next request once it has
 * answered. */
bool kf_runner_running(const struct kf_runner *r);
void kf_runner_stop(struct kf_runner *r);

#endif
