/*
 * runner.c: the processes that call kernels. The worker forks one runner
 * per side (reference, candidate) before it opens the device; each maps
 * only its own side's memory, loads one shared object and calls it when
 * asked. Candidate code therefore never shares an address space with the
 * engine: it cannot reach the reference, the comparisons or the frames.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/worker.h>

#include "worker_int.h"

/* What a runner holds: its device context, its side's memory, its entry. */
struct runner {
	int fd;
	const struct kf_backend_ops *ops;
	void *ctx;
	void *base; /* the side's pool, mapped here */
	size_t bytes;
	struct kf_share share;
	void *so;
	kf_entry_fn fn;
	int (*rt_last_error)(void);
	const char *(*rt_error_name)(int);
	struct kf_err confine_err; /* why confinement failed, if it did */
};

static int send_msg(int fd, const void *buf, size_t len, int pass_fd)
{
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* Receives one message of exactly len bytes (and a descriptor, if one
 * came, into *got_fd). Returns 0, 1 at end of stream, -1 on error, -2
 * for a message of another size. */
static int recv_msg(int fd, void *buf, size_t len, int *got_fd)
{
	struct iovec iov = {buf, len};
	struct msghdr mh;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	if (got_fd)
		*got_fd = -1;
	ssize_t n;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int f;
			memcpy(&f, CMSG_DATA(c), sizeof(int));
			if (got_fd && *got_fd < 0)
				*got_fd = f;
			else
				close(f);
		}
	}
	if (n < 0)
		return -1;
	return n == (ssize_t)len && !(mh.msg_flags & MSG_TRUNC) ? 0 : -2;
}

static void rep_error(struct kf_run_rep *a, int rc, const char *msg)
{
	a->rc = rc;
	snprintf(a->text, sizeof(a->text), "%s", msg);
}

static void run_init(struct runner *r, const struct kf_run_req *q,
		     struct kf_run_rep *a)
{
	struct kf_err err = KF_ERR_INIT;
	if (r->confine_err.code) {
		snprintf(a->name, sizeof(a->name), "sandbox");
		return rep_error(a, r->confine_err.code, r->confine_err.msg);
	}
	r->ops = kf_backend_find(q->text);
	if (!r->ops)
		return rep_error(a, KF_EINVAL, "unknown backend");
	if (r->ops->init(&r->ctx, &err))
		return rep_error(a, err.code, err.msg);
}

/* The read-only ranges of the pool (each slot's inputs), and what SIGSEGV
 * did before. */
#define MAX_RO 16
static uintptr_t ro_lo[MAX_RO], ro_hi[MAX_RO];
static int n_ro;
static struct sigaction prev_segv;

/* A fault at a store into the inputs ends the runner with a status of its
 * own; any other goes on to what handled SIGSEGV before (the default, or
 * a sanitizer's report) when the faulting instruction runs again. A
 * candidate's own handler replaces this one; then it skipped the store, or
 * picks its own end. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t at = (uintptr_t)si->si_addr;
	for (int i = 0; i < n_ro; i++)
		if (at >= ro_lo[i] && at < ro_hi[i])
			_exit(KF_WORKER_EXIT_INPUT_STORE);
	sigaction(sig, &prev_segv, NULL);
}

static void run_map(struct runner *r, const struct kf_run_req *q, int fd,
		    struct kf_run_rep *a)
{
	struct kf_err err = KF_ERR_INIT;
	if (!r->ops || r->base)
		return rep_error(a, KF_EPROTO, "map: out of order");
	r->share.fd = fd;
	memcpy(r->share.handle, q->handle, sizeof(r->share.handle));
	r->bytes = q->bytes;
	if (r->ops->map(r->ctx, &r->share, r->bytes, &r->base, &err))
		return rep_error(a, err.code, err.msg);
	if (r->ops->device_type != kDLCPU)
		return;
	/* The host's pool: nothing but the mapping reaches it any more (no
	 * write(2) or fallocate(2) through the descriptor), and each slot's
	 * inputs are read-only for good, so that a store into an input,
	 * even one put back before the call returns, ends the process
	 * (input_mutation). */
	close(r->share.fd);
	r->share.fd = -1;
	if (!q->ro_bytes || !q->ro_stride || q->ro_bytes > q->ro_stride)
		return;
	for (uint64_t at = 0; at + q->ro_stride <= r->bytes;
	     at += q->ro_stride) {
		if (n_ro == MAX_RO)
			return rep_error(a, KF_EINVAL,
					 "map: more than 16 read-only slots");
		ro_lo[n_ro] = (uintptr_t)r->base + at;
		ro_hi[n_ro] = ro_lo[n_ro] + q->ro_bytes;
		if (kf_sandbox_read_only((char *)r->base + at, q->ro_bytes,
					 &err))
			return rep_error(a, err.code, err.msg);
		n_ro++;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &prev_segv);
}

/* Gives up every capability (a worker run as root has them all), so that
 * nothing lets the process override the others' protections, such as the
 * worker's memory behind /proc. */
static int drop_capabilities(struct kf_err *err)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	for (int c = 0; c <= 63; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	if (syscall(SYS_capset, &h, d))
		return kf_err_set(err, KF_EIO, "capset: %s", strerror(errno));
	return 0;
}

#if defined(__SANITIZE_ADDRESS__)
/* Under AddressSanitizer the worker's memory cap is ASan's RSS limit,
 * which a thread of ASan's enforces; a forked runner has no such thread.
 * The runner caps its address space instead, at what it has mapped (ASan's
 * shadow included) plus that limit. */
static void asan_cap(void)
{
	const char *o = getenv("ASAN_OPTIONS");
	const char *k = o ? strstr(o, "hard_rss_limit_mb=") : NULL;
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!k || !f || fscanf(f, "%llu", &pages) != 1) {
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	unsigned long long mb =
	    strtoull(k + strlen("hard_rss_limit_mb="), NULL, 10);
	rlim_t cap =
	    (rlim_t)(pages * (unsigned long long)getpagesize() + (mb << 20));
	struct rlimit as = {cap, cap};
	setrlimit(RLIMIT_AS, &as);
}
#endif

/* Set in a runner confined at start (kf_runner_start). */
static bool confined;

static void run_load(struct runner *r, const struct kf_run_req *q,
		     struct kf_run_rep *a)
{
	struct kf_err err = KF_ERR_INIT;
	if (!r->base || r->so)
		return rep_error(a, KF_EPROTO, "load: out of order");
	/* The global state as the engine left it, before the object's
	 * constructors run. */
	if (r->ops->state)
		r->ops->state(r->ctx, a->text, sizeof(a->text));
	/* From here on its code can run: confine the process first. */
	struct rlimit fsize = {64u << 20, 64u << 20};
	if (q->sandbox && setrlimit(RLIMIT_FSIZE, &fsize))
		return rep_error(a, KF_EIO, "cannot limit file sizes");
#if defined(__SANITIZE_ADDRESS__)
	if (q->sandbox)
		asan_cap();
#endif
	if (q->sandbox && !confined)
		kf_err_set(&err, KF_EPROTO,
			   "sandbox: the runner was not confined at start");
	if (q->sandbox && (err.code || kf_sandbox_drop_user(&err) ||
			   drop_capabilities(&err) || kf_sandbox_seal(&err) ||
			   kf_sandbox_enter(r->ops->name, &err))) {
		a->rc = err.code;
		snprintf(a->name, sizeof(a->name), "sandbox");
		snprintf(a->text, sizeof(a->text), "%s", err.msg);
		return;
	}
	char path[sizeof(q->text) + 16];
	if (q->sandbox)
		kf_sandbox_object_path(q->text, path, sizeof(path));
	else
		snprintf(path, sizeof(path), "%s", q->text);
	r->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!r->so) {
		a->rc = KF_ENOENT;
		snprintf(a->name, sizeof(a->name), "load");
		snprintf(a->text, sizeof(a->text), "cannot load: %s",
			 dlerror());
		return;
	}
	dlerror();
	*(void **)&r->fn = dlsym(r->so, "kf_entry");
	if (!r->fn) {
		a->rc = KF_ENOENT;
		snprintf(a->name, sizeof(a->name), "load");
		snprintf(a->text, sizeof(a->text), "no symbol kf_entry: %s",
			 dlerror());
		return;
	}
	if (r->ops->device_type == kDLCUDA) {
		/* dlsym through the object's handle also searches the
		 * libraries it depends on, the CUDA runtime among them. */
		*(void **)&r->rt_last_error = dlsym(r->so, "cudaGetLastError");
		*(void **)&r->rt_error_name = dlsym(r->so, "cudaGetErrorName");
	}
	if (q->sandbox && kf_sandbox_loaded(r->ops->name, &err)) {
		a->rc = err.code;
		snprintf(a->name, sizeof(a->name), "sandbox");
		snprintf(a->text, sizeof(a->text), "%s", err.msg);
	}
}

static void tensor_bind(struct runner *r, DLTensor *dl,
			const struct kf_run_tensor *t)
{
	memset(dl, 0, sizeof(*dl));
	dl->data = (char *)r->base + t->offset;
	dl->device.device_type = r->ops->device_type;
	dl->ndim = t->ndim;
	dl->dtype.code = t->code;
	dl->dtype.bits = t->bits;
	dl->dtype.lanes = t->lanes;
	dl->shape = (int64_t *)t->shape;
}

static int no_call(const DLTensor *in, int n_in, DLTensor *out, int n_out,
		   void *stream)
{
	(void)in;
	(void)n_in;
	(void)out;
	(void)n_out;
	(void)stream;
	return 0;
}

static void run_call(struct runner *r, struct kf_run_req *q,
		     struct kf_run_rep *a)
{
	struct kf_err err = KF_ERR_INIT;
	/* The descriptors live in this process's memory; the candidate may
	 * scribble on them without reaching anything of the engine's. */
	static DLTensor in[KF_MAX_TENSORS], out[KF_MAX_TENSORS];
	kf_entry_fn fn = q->empty ? no_call : r->fn;
	if (!fn || !r->base || q->n_in < 0 || q->n_out < 0 ||
	    q->n_in > KF_MAX_TENSORS || q->n_out > KF_MAX_TENSORS)
		return rep_error(a, KF_EPROTO, "call: bad request");
	for (int i = 0; i < q->n_in + q->n_out; i++) {
		const struct kf_run_tensor *t = &q->t[i];
		if (t->offset >= r->bytes || t->ndim < 0 ||
		    t->ndim > KF_MAX_NDIM)
			return rep_error(a, KF_EPROTO, "call: bad tensor");
		tensor_bind(r, i < q->n_in ? &in[i] : &out[i - q->n_in], t);
	}
	if (q->flush && q->flush_key && r->ops->flush_into) {
		/* The flush writes where the worker will look for it. */
		size_t fb = r->ops->flush_bytes(r->ctx);
		if (q->flush_off > r->bytes || r->bytes - q->flush_off < fb)
			return rep_error(a, KF_EPROTO, "call: bad flush");
		r->ops->flush_into(r->ctx, (char *)r->base + q->flush_off,
				   q->flush_key);
	}
	if (r->rt_last_error)
		r->rt_last_error(); /* clear what an earlier call left */
	int rc = r->ops->time_call(r->ctx, fn, in, q->n_in, out, q->n_out,
				   q->flush, &a->smp, &err);
	if (rc)
		return rep_error(a, rc, err.msg);
	if (r->ops->time_finish) {
		/* The work is done: the worker's view of the call ends here,
		 * before the bookkeeping below. */
		static struct kf_run_rep done;
		memset(&done, 0, sizeof(done));
		done.seq = q->seq;
		done.stage = 1;
		if (q->staged && send_msg(r->fd, &done, sizeof(done), -1))
			return rep_error(a, KF_EIO, "call: cannot reply");
		rc = r->ops->time_finish(r->ctx, &a->smp, &err);
		if (rc)
			return rep_error(a, rc, err.msg);
	}
	/* A launch that failed (bad configuration, too many resources) is
	 * recorded by the CUDA runtime the object linked. */
	if (r->rt_last_error) {
		a->cuda_error = r->rt_last_error();
		const char *name = a->cuda_error && r->rt_error_name
				       ? r->rt_error_name(a->cuda_error)
				       : NULL;
		snprintf(a->name, sizeof(a->name), "%s",
			 name ? name : "cudaError");
	}
	if (r->ops->state)
		r->ops->state(r->ctx, a->text, sizeof(a->text));
}

/* The runner's life: requests in, replies out, until the worker goes. */
static int runner_main(int fd, const struct kf_err *confine_err)
{
	struct runner r;
	static struct kf_run_req q;
	static struct kf_run_rep a;
	memset(&r, 0, sizeof(r));
	r.fd = fd;
	r.confine_err = *confine_err;
	for (;;) {
		int got_fd = -1;
		if (recv_msg(fd, &q, sizeof(q), &got_fd))
			break;
		memset(&a, 0, sizeof(a));
		a.seq = q.seq;
		q.text[sizeof(q.text) - 1] = '\0';
		switch (q.op) {
		case KF_RUN_INIT:
			run_init(&r, &q, &a);
			break;
		case KF_RUN_MAP:
			run_map(&r, &q, got_fd, &a);
			got_fd = -1;
			break;
		case KF_RUN_LOAD:
			run_load(&r, &q, &a);
			break;
		case KF_RUN_CALL:
			run_call(&r, &q, &a);
			break;
		case KF_RUN_QUIT:
			return 0;
		default:
			rep_error(&a, KF_EPROTO, "unknown request");
		}
		if (got_fd >= 0)
			close(got_fd);
		if (send_msg(fd, &a, sizeof(a), -1))
			break;
		/* A device fault leaves nothing to serve. */
		if (a.rc == KF_EFAULT)
			return 3;
	}
	return 0;
}

int kf_runner_start(struct kf_runner *r, const char *role, int cpu,
		    const char *backend, const char *confine,
		    struct kf_err *err)
{
	int sv[2];
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->role = role;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return kf_err_set(err, KF_EIO, "socketpair: %s",
				  strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return kf_err_set(err, KF_ECHILD, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		/* Dies with the worker, whatever ends it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		/* Only its socket and the log: not the supervisor's frames,
		 * not the other runner's socket. */
		int fd = sv[1];
		if (fd != 3) {
			if (dup2(fd, 3) < 0)
				_exit(1);
			fd = 3;
		}
		if (dup2(2, 1) < 0)
			_exit(1);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (nul < 0 || dup2(nul, 0) < 0)
			_exit(1);
		syscall(SYS_close_range, 4, ~0u, 0);
		if (cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		/* Confined before anything else happens in it, the device's
		 * opening included: single-threaded still, and every file
		 * the driver opens later is one the root holds. */
		struct kf_err cerr = KF_ERR_INIT;
		if (confine)
			kf_sandbox_scrub_env();
		if (confine && !kf_sandbox_confine(backend, confine, &cerr))
			confined = true;
		_exit(runner_main(fd, &cerr));
	}
	close(sv[1]);
	r->pid = pid;
	r->fd = sv[0];
	if (clock_getcpuclockid(pid, &r->cpu)) {
		kf_runner_stop(r);
		return kf_err_set(err, KF_ECHILD,
				  "no CPU clock of the %s runner", role);
	}
	return 0;
}

uint64_t kf_runner_cpu_ns(const struct kf_runner *r)
{
	struct timespec t;
	if (!r->pid || clock_gettime(r->cpu, &t))
		return 0;
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

bool kf_runner_running(const struct kf_runner *r)
{
	char path[64], buf[256];
	if (!r->pid)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)r->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "pid (comm) S ...": the name may hold ')', the state follows the
	 * last one. */
	const char *e = strrchr(buf, ')');
	return e && e[1] == ' ' && e[2] == 'R';
}

/* The runner is gone (or talking nonsense): reaps it, so that the caller
 * can say how it ended. */
static int runner_lost(struct kf_runner *r, struct kf_err *err)
{
	kill(r->pid, SIGKILL);
	while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
		;
	r->pid = 0;
	close(r->fd);
	r->fd = -1;
	return kf_err_set(err, KF_ECHILD, "the %s runner died", r->role);
}

int kf_runner_send(struct kf_runner *r, struct kf_run_req *q, int pass_fd,
		   struct kf_err *err)
{
	if (!r->pid)
		return kf_err_set(err, KF_ECHILD, "the %s runner is gone",
				  r->role);
	q->seq = ++r->seq;
	if (send_msg(r->fd, q, sizeof(*q), pass_fd))
		return runner_lost(r, err);
	return 0;
}

int kf_runner_recv(struct kf_runner *r, const struct kf_run_req *q,
		   struct kf_run_rep *a, struct kf_err *err)
{
	if (!r->pid)
		return kf_err_set(err, KF_ECHILD, "the %s runner is gone",
				  r->role);
	memset(a, 0, sizeof(*a));
	int rc = recv_msg(r->fd, a, sizeof(*a), NULL);
	if (rc == 0 && a->seq == q->seq)
		return 0;
	if (rc == 0)
		return kf_err_set(err, KF_EPROTO,
				  "the %s runner answered request %u with "
				  "reply %u",
				  r->role, q->seq, a->seq);
	if (rc == -2)
		return kf_err_set(err, KF_EPROTO,
				  "the %s runner sent a message of the wrong "
				  "size",
				  r->role);
	return runner_lost(r, err);
}

int kf_runner_exchange(struct kf_runner *r, struct kf_run_req *q, int pass_fd,
		       struct kf_run_rep *a, struct kf_err *err)
{
	int rc = kf_runner_send(r, q, pass_fd, err);
	if (!rc)
		rc = kf_runner_recv(r, q, a, err);
	if (!rc && a->stage != 0)
		rc = kf_err_set(err, KF_EPROTO,
				"the %s runner answered request %u out of "
				"stage",
				r->role, q->seq);
	return rc;
}

void kf_runner_stop(struct kf_runner *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->pid) {
		kill(r->pid, SIGKILL);
		while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
			;
	}
	r->pid = 0;
}
