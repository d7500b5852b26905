/*
 * sandbox.c: what confines the candidate's runner. Namespaces and a
 * read-only root of its own from the moment it is forked, a user id of its
 * own and sealed relocation tables before it loads the candidate, and a
 * seccomp filter (a classic BPF program over the system call number and,
 * for clone and the signal calls, an argument) that backs the link-time
 * policy: a system call made without an import is stopped here.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "worker_int.h"

#define MAX_INSNS 256

struct prog {
	struct sock_filter f[MAX_INSNS];
	int n;
};

static void emit(struct prog *p, struct sock_filter insn)
{
	KF_ASSERT(p->n < MAX_INSNS);
	p->f[p->n++] = insn;
}

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARCH_OFF offsetof(struct seccomp_data, arch)
/* The low 32 bits of argument i (little-endian). */
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

static void load_nr(struct prog *p)
{
	emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF));
}

/* if (nr == n) return action; */
static void on(struct prog *p, long n, unsigned action)
{
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					     (unsigned)n, 0, 1));
	emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action));
}

/* if (nr == n && (unsigned)arg[i] != value && arg[i] != alt) kill; the
 * accumulator holds nr again afterwards. */
static void kill_unless_arg(struct prog *p, long n, int i, unsigned value,
			    unsigned alt)
{
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					     (unsigned)n, 0, 5));
	emit(p,
	     (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(i)));
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value,
					     2, 0));
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, alt, 1,
					     0));
	emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					     SECCOMP_RET_KILL_PROCESS));
	load_nr(p);
}

/* if (nr == n && (arg[i] & mask)) kill; the accumulator holds nr after. */
static void kill_if_flags(struct prog *p, long n, int i, unsigned mask)
{
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					     (unsigned)n, 0, 4));
	emit(p,
	     (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(i)));
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask,
					     0, 1));
	emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					     SECCOMP_RET_KILL_PROCESS));
	load_nr(p);
}

static int install(struct prog *p, struct kf_err *err)
{
	struct sock_fprog fprog = {(unsigned short)p->n, p->f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return kf_err_set(err, KF_EIO, "PR_SET_NO_NEW_PRIVS: %s",
				  strerror(errno));
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog))
		return kf_err_set(err, KF_EIO, "seccomp: %s", strerror(errno));
	return 0;
}

/* Kills every system call that creates, removes, renames or writes a
 * file; files may still be opened read-only. */
static void no_file_changes(struct prog *p)
{
	static const long changes[] = {
	    SYS_creat,	  SYS_unlink,	 SYS_unlinkat, SYS_rename,
	    SYS_renameat, SYS_renameat2, SYS_mkdir,    SYS_mkdirat,
	    SYS_rmdir,	  SYS_truncate,	 SYS_symlink,  SYS_link};
	const unsigned writing =
	    O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
		on(p, changes[i], SECCOMP_RET_KILL_PROCESS);
	kill_if_flags(p, SYS_open, 1, writing);
	kill_if_flags(p, SYS_openat, 2, writing);
	/* openat2's flags live in memory a filter cannot read. */
	on(p, SYS_openat2, SECCOMP_RET_ERRNO | ENOSYS);
}

int kf_sandbox_loaded(const char *backend, struct kf_err *err)
{
#if defined(__x86_64__)
	static const long files[] = {SYS_open, SYS_openat, SYS_openat2};
	struct prog p = {.n = 0};
	load_nr(&p);
	if (!strcmp(backend, "host")) {
		/* Refused, not killed: the C library opens files behind
		 * calls a kernel may make (get_nprocs() and
		 * sysconf(_SC_NPROCESSORS_ONLN) read
		 * /sys/devices/system/cpu/online, then fall back to
		 * sched_getaffinity), and what a refused open could have
		 * read stays unread either way. */
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			on(&p, files[i], SECCOMP_RET_ERRNO | EACCES);
	} else {
		/* The driver may still read files it needs; nothing may be
		 * written. */
		no_file_changes(&p);
	}
	/* Everything executable is mapped by now: nothing else may become
	 * so (no patching of the engine's code). */
	kill_if_flags(&p, SYS_mmap, 2, PROT_EXEC);
	kill_if_flags(&p, SYS_mprotect, 2, PROT_EXEC);
	kill_if_flags(&p, SYS_pkey_mprotect, 2, PROT_EXEC);
	emit(&p,
	     (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	return install(&p, err);
#else
	(void)backend;
	return kf_err_set(err, KF_ENOSYS,
			  "the seccomp filter is written for x86-64");
#endif
}

int kf_sandbox_enter(const char *backend, struct kf_err *err)
{
#if defined(__x86_64__)
	static const long killed[] = {
	    SYS_execve,
	    SYS_execveat,
	    SYS_fork,
	    SYS_vfork,
	    SYS_socket,
	    SYS_socketpair,
	    SYS_connect,
	    SYS_bind,
	    SYS_listen,
	    SYS_accept,
	    SYS_accept4,
	    SYS_ptrace,
	    SYS_process_vm_readv,
	    SYS_process_vm_writev,
	    SYS_tkill,
	    SYS_setrlimit,
	    SYS_prlimit64,
	    SYS_chroot,
	    SYS_mount,
	    SYS_unshare,
	    SYS_setns,
	    SYS_kexec_load,
	    SYS_init_module,
	    SYS_finit_module,
	    SYS_bpf,
	    SYS_perf_event_open,
	    /* Files without open(2), sockets and files through a ring
	     * the filter never sees, signals through pid file
	     * descriptors. */
	    SYS_name_to_handle_at,
	    SYS_open_by_handle_at,
	    SYS_io_uring_setup,
	    SYS_io_uring_enter,
	    SYS_io_uring_register,
	    SYS_pidfd_open,
	    SYS_pidfd_send_signal,
	    SYS_pidfd_getfd,
	    /* The kernel's keyrings: keys a runner's user adds outlive its
	     * process (20 KB of kernel memory held after an evaluation
	     * ended), a store outside the sandbox. */
	    SYS_add_key,
	    SYS_request_key,
	    SYS_keyctl,
	};
	/* Loading the candidate still opens files (its object, its
	 * libraries): on the host they are opened read-only here, and
	 * kf_sandbox_loaded then closes files altogether. */
	bool host = !strcmp(backend, "host");
	unsigned pid = (unsigned)getpid();
	struct prog p = {.n = 0};
	emit(&p,
	     (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH_OFF));
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      AUDIT_ARCH_X86_64, 1, 0));
	emit(&p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_KILL_PROCESS));
	load_nr(&p);
	/* x32 system call numbers would dodge every rule below. */
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
					      0x40000000u, 0, 1));
	emit(&p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_KILL_PROCESS));
	for (size_t i = 0; i < sizeof(killed) / sizeof(killed[0]); i++)
		on(&p, killed[i], SECCOMP_RET_KILL_PROCESS);
	/* Executable memory without PROT_EXEC: personality(2)'s
	 * READ_IMPLIES_EXEC makes every readable mapping made after it
	 * executable (the query, 0xffffffff, is allowed), and shmat(2)'s
	 * SHM_EXEC maps a System V segment executable. */
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      SYS_personality, 0, 5));
	emit(&p,
	     (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      0xffffffffu, 2, 0));
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
					      READ_IMPLIES_EXEC, 0, 1));
	emit(&p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_KILL_PROCESS));
	load_nr(&p);
	kill_if_flags(&p, SYS_shmat, 2, SHM_EXEC);
	/* No System V segments or message queues: their memory is the
	 * kernel's, held by the runner's IPC namespace until it ends, and no
	 * limit of the process counts it (a segment detached after use is in
	 * no address space). Refused, not killed: a library that tries one
	 * carries on. */
	on(&p, SYS_shmget, SECCOMP_RET_ERRNO | EPERM);
	on(&p, SYS_msgget, SECCOMP_RET_ERRNO | EPERM);
	if (host) {
		/* No timers: a handler could finish the work after the call
		 * returned, outside the timed window. */
		static const long timers[] = {SYS_alarm, SYS_setitimer,
					      SYS_timer_create,
					      SYS_timerfd_create};
		for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++)
			on(&p, timers[i], SECCOMP_RET_KILL_PROCESS);
		no_file_changes(&p);
		/* No code is made or changed once the engine is loaded:
		 * nothing may become executable. */
		kill_if_flags(&p, SYS_mprotect, 2, PROT_EXEC);
		kill_if_flags(&p, SYS_pkey_mprotect, 2, PROT_EXEC);
		/* The runner stays on the core the worker pinned it to and
		 * flushes: a candidate that moved itself elsewhere would run
		 * with caches the flush never touched. Its constructors run
		 * under this filter too, so the call fails from the first
		 * instruction (EPERM, as for a process without the right:
		 * libraries that try it carry on). */
		on(&p, SYS_sched_setaffinity, SECCOMP_RET_ERRNO | EPERM);
		/* No memory files: a memfd's pages, once unmapped, are in no
		 * address space and count toward no limit of the process
		 * (9.7 GB held through kept descriptors passed the runner's
		 * memory check). Refused, as System V segments are. Only on
		 * the host: whether the CUDA driver makes them is not yet
		 * known here. */
		on(&p, SYS_memfd_create, SECCOMP_RET_ERRNO | EPERM);
		on(&p, SYS_memfd_secret, SECCOMP_RET_ERRNO | EPERM);
	}
	/* clone3's flags live in memory a filter cannot read: make the C
	 * library fall back to clone, whose flags it can. */
	on(&p, SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS);
	if (host) {
		on(&p, SYS_clone, SECCOMP_RET_KILL_PROCESS);
	} else {
		/* Threads (the CUDA driver starts some), not processes. */
		emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      SYS_clone, 0, 4));
		emit(&p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						      ARG_LO(0)));
		emit(&p, (struct sock_filter)BPF_JUMP(
			     BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0));
		emit(&p, (struct sock_filter)BPF_STMT(
			     BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
		load_nr(&p);
	}
	/* Signals only to itself (abort() uses tgkill on its own pid). */
	kill_unless_arg(&p, SYS_kill, 0, pid, 0);
	kill_unless_arg(&p, SYS_tgkill, 0, pid, pid);
	kill_unless_arg(&p, SYS_rt_sigqueueinfo, 0, pid, pid);
	kill_unless_arg(&p, SYS_rt_tgsigqueueinfo, 0, pid, pid);
	emit(&p,
	     (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	return install(&p, err);
#else
	(void)backend;
	return kf_err_set(err, KF_ENOSYS,
			  "the seccomp filter is written for x86-64");
#endif
}

/* ---- namespaces, the root, the user, the seals ---- */

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

/* The user ids of confined runners, when kforge runs as root: this plus
 * the runner's pid, unique among live processes and owned by no one. */
#define KF_SANDBOX_UID_BASE 536870912u

/* Where the new root is built: a tmpfs over /tmp of this process's own
 * mount namespace (its sources are opened first, so that one under /tmp
 * is still found). */
#define NEW_ROOT "/tmp"
/* kf_cache_dir() inside the root. */
#define SANDBOX_CACHE "/kforge/engine-cache"
#define MAX_BINDS 64

struct bind {
	int fd;		   /* O_PATH descriptor of the source */
	char dst[4096];	   /* the path inside the new root */
	bool dir, symlink; /* kind of the source */
	bool copy;	   /* copied, readable by all (the object) */
	char target[4096]; /* where a symlink points */
};

struct root_plan {
	struct bind b[MAX_BINDS];
	int n;
};

/* True when path lies inside a directory the plan already binds at the
 * same place. */
static bool plan_covers(const struct root_plan *p, const char *path)
{
	for (int i = 0; i < p->n; i++) {
		const struct bind *b = &p->b[i];
		size_t n = strlen(b->dst);
		if (b->dir && !b->copy && !strncmp(path, b->dst, n) &&
		    path[n] == '/')
			return true;
	}
	return false;
}

static void plan_add(struct root_plan *p, const char *src, const char *dst)
{
	struct stat st;
	if (p->n >= MAX_BINDS || lstat(src, &st))
		return;
	/* Inside a directory already bound (a CUDA library directory under
	 * /usr, from LD_LIBRARY_PATH), it is there already; only a directory
	 * is bound again, since it may be a mount of its own, which a bind
	 * of its parent does not carry. */
	if (!strcmp(src, dst) && plan_covers(p, dst) && !S_ISDIR(st.st_mode))
		return;
	struct bind *b = &p->b[p->n];
	memset(b, 0, sizeof(*b));
	snprintf(b->dst, sizeof(b->dst), "%s", dst);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(src, b->target, sizeof(b->target) - 1);
		if (n <= 0)
			return;
		b->target[n] = '\0';
		b->symlink = true;
		b->fd = -1;
		p->n++;
		return;
	}
	b->fd = open(src, O_PATH | O_CLOEXEC);
	if (b->fd < 0)
		return;
	b->dir = S_ISDIR(st.st_mode);
	p->n++;
}

/* mkdir -p of path's parents (and of path itself when dir). */
static int make_path(const char *path, bool dir)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (dir)
		return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
	int fd = open(buf, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Copies the object into the new root, readable by the runner's own user
 * whatever the cache's modes. */
static int copy_in(const struct bind *b, const char *dst, struct kf_err *err)
{
	char src[64], buf[65536];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", b->fd);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	int out = make_path(dst, false) < 0
		      ? -1
		      : open(dst, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	int e = errno;
	if (out >= 0 && fchmod(out, 0444))
		n = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (in < 0 || out < 0 || n < 0)
		return kf_err_set(err, KF_EIO, "sandbox: copy %s: %s", b->dst,
				  strerror(e));
	return 0;
}

/* Makes b's bind under the new root read-only (device nodes keep working:
 * a read-only mount still opens them for writing). A second pass, after
 * every bind is in place: a directory bound inside another bound one
 * (/usr/local/nvidia/lib64 from LD_LIBRARY_PATH, under /usr) needs its
 * mount point while the outer bind is still writable. */
static int seal_one(const struct bind *b, struct kf_err *err)
{
	char dst[4200];
	if (b->symlink || b->copy)
		return 0;
	snprintf(dst, sizeof(dst), NEW_ROOT "%s", b->dst);
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID,
		  NULL))
		return kf_err_set(err, KF_EIO, "sandbox: bind %s: %s", b->dst,
				  strerror(errno));
	return 0;
}

/* Binds b under the new root (seal_one makes it read-only). A directory's
 * bind is recursive: the mounts inside it (a driver's or toolkit's library
 * directory mounted into a container under /usr) come along; those stay as
 * writable as they were, which the runner's own user id and its missing
 * capabilities keep it from using. */
static int bind_one(const struct bind *b, struct kf_err *err)
{
	char dst[4200], src[64];
	snprintf(dst, sizeof(dst), NEW_ROOT "%s", b->dst);
	if (b->symlink) {
		if (make_path(dst, false) < 0 || unlink(dst) ||
		    symlink(b->target, dst))
			return kf_err_set(err, KF_EIO,
					  "sandbox: symlink %s: %s", b->dst,
					  strerror(errno));
		return 0;
	}
	if (b->copy)
		return copy_in(b, dst, err);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", b->fd);
	if (make_path(dst, b->dir) < 0)
		return kf_err_set(err, KF_EIO, "sandbox: mkdir %s: %s", b->dst,
				  strerror(errno));
	if (mount(src, dst, NULL, MS_BIND | (b->dir ? MS_REC : 0), NULL))
		return kf_err_set(err, KF_EIO, "sandbox: bind %s: %s", b->dst,
				  strerror(errno));
	return 0;
}

void kf_sandbox_object_path(const char *object, char *buf, size_t cap)
{
	const char *base = strrchr(object, '/');
	snprintf(buf, cap, "/kforge/%s", base ? base + 1 : object);
}

/* What the runner may read: the system's libraries, the object, the
 * device. Nothing else of the machine (no task, no cache, no home).
 * /etc/alternatives is there for the links through it: on Ubuntu
 * /usr/local/cuda, where NVRTC is looked for, is one. */
static void plan_root(struct root_plan *p, const char *backend,
		      const char *object)
{
	static const char *const sys[] = {"/usr",
					  "/lib",
					  "/lib64",
					  "/lib32",
					  "/libx32",
					  "/bin",
					  "/sbin",
					  "/sys",
					  "/etc/ld.so.cache",
					  "/etc/alternatives",
					  "/dev/null",
					  "/dev/zero",
					  "/dev/full",
					  "/dev/random",
					  "/dev/urandom"};
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		plan_add(p, sys[i], sys[i]);
	/* Libraries found through LD_LIBRARY_PATH (CUDA's, often). */
	const char *llp = getenv("LD_LIBRARY_PATH");
	while (llp && *llp) {
		size_t n = strcspn(llp, ":");
		char d[4096];
		if (n && n < sizeof(d) && llp[0] == '/') {
			memcpy(d, llp, n);
			d[n] = '\0';
			plan_add(p, d, d);
		}
		llp += n + (llp[n] == ':');
	}
	if (strcmp(backend, "host")) {
		/* The engine's own kernels, built once per device (cuda.c):
		 * read-only, so that the runner need not build them again;
		 * at a path of the root's own, so that the root shows no
		 * directory of the machine's (a cache under /tmp or a home
		 * showed /tmp or /root to a constructor's open). */
		char *cubins = kf_path_join(kf_cache_dir(), "cuda");
		plan_add(p, cubins, SANDBOX_CACHE "/cuda");
		free(cubins);
		DIR *dev = opendir("/dev");
		struct dirent *e;
		while (dev && (e = readdir(dev))) {
			if (strncmp(e->d_name, "nvidia", 6))
				continue;
			char d[300];
			snprintf(d, sizeof(d), "/dev/%s", e->d_name);
			plan_add(p, d, d);
		}
		if (dev)
			closedir(dev);
	}
	if (object && object[0] == '/') {
		int n = p->n;
		char in_root[4096];
		kf_sandbox_object_path(object, in_root, sizeof(in_root));
		plan_add(p, object, in_root);
		if (p->n > n)
			p->b[n].copy = true;
	}
}

static int write_str(const char *path, const char *text, struct kf_err *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)strlen(text))
		return kf_err_set(err, KF_EIO, "sandbox: %s: %s", path,
				  strerror(e));
	return 0;
}

/* A user namespace where this process keeps its user id, for a kforge not
 * run as root (the same id outside: the seccomp filter, not the kernel's
 * permission checks, then keeps it from other processes). */
static int own_user_ns(struct kf_err *err)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER))
		return kf_err_set(err, KF_ENOSYS,
				  "sandbox: no user namespace (%s): kforge "
				  "needs root or unprivileged user "
				  "namespaces",
				  strerror(errno));
	char m[64];
	snprintf(m, sizeof(m), "%u %u 1\n", uid, uid);
	if (write_str("/proc/self/setgroups", "deny", err) ||
	    write_str("/proc/self/uid_map", m, err))
		return KF_EIO;
	snprintf(m, sizeof(m), "%u %u 1\n", gid, gid);
	return write_str("/proc/self/gid_map", m, err);
}

int kf_sandbox_confine(const char *backend, const char *object,
		       struct kf_err *err)
{
	struct root_plan plan;
	int rc = 0;
	bool root = geteuid() == 0;
	plan.n = 0;
	if (!root && (rc = own_user_ns(err)))
		goto out;
	if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)) {
		rc = kf_err_set(err, KF_ENOSYS,
				"sandbox: cannot make namespaces (mount, "
				"network, IPC, UTS): %s",
				strerror(errno));
		goto out;
	}
	/* The sources are opened in the new namespace (a bind takes a mount
	 * of its own namespace) and before the tmpfs hides /tmp. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    (plan_root(&plan, backend, object), 0) ||
	    mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID, "mode=0755")) {
		rc = kf_err_set(err, KF_EIO, "sandbox: new root: %s",
				strerror(errno));
		goto out;
	}
	for (int i = 0; i < plan.n; i++)
		if ((rc = bind_one(&plan.b[i], err)))
			goto out;
	for (int i = 0; i < plan.n; i++)
		if ((rc = seal_one(&plan.b[i], err)))
			goto out;
	/* Its own /proc: with hidepid=2 it lists this process only, since
	 * every other one belongs to another user. Without root the
	 * namespace cannot mount one: then there is no /proc at all. */
	if (mkdir(NEW_ROOT "/proc", 0555) ||
	    (root && mount("proc", NEW_ROOT "/proc", "proc",
			   MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2"))) {
		rc = kf_err_set(err, KF_EIO, "sandbox: /proc: %s",
				strerror(errno));
		goto out;
	}
	if (mkdir(NEW_ROOT "/.old", 0700) ||
	    syscall(SYS_pivot_root, NEW_ROOT, NEW_ROOT "/.old") || chdir("/") ||
	    umount2("/.old", MNT_DETACH) || rmdir("/.old")) {
		rc = kf_err_set(err, KF_EIO, "sandbox: pivot_root: %s",
				strerror(errno));
		goto out;
	}
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID, NULL)) {
		rc = kf_err_set(err, KF_EIO, "sandbox: read-only root: %s",
				strerror(errno));
		goto out;
	}
	kf_cache_dir_set(SANDBOX_CACHE);
out:
	for (int i = 0; i < plan.n; i++)
		if (plan.b[i].fd >= 0)
			close(plan.b[i].fd);
	return rc;
}

int kf_sandbox_drop_user(struct kf_err *err)
{
	if (geteuid() != 0)
		return 0; /* its own user namespace already, from the start */
	uid_t id = KF_SANDBOX_UID_BASE + (uid_t)getpid();
	/* The bounding set first, while CAP_SETPCAP is still held. */
	for (int c = 0; c <= 63; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	/* The C library applies these to every thread (cuda: the
	 * driver's); leaving uid 0 clears each one's capabilities. */
	pid_t parent = getppid();
	if (setgroups(0, NULL) || setresgid(id, id, id) ||
	    setresuid(id, id, id))
		return kf_err_set(err, KF_EIO, "sandbox: setresuid %u: %s", id,
				  strerror(errno));
	/* A change of user clears the parent-death signal (prctl(2)): set it
	 * again, so that the runner still dies with its worker. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	return 0;
}

int kf_sandbox_read_only(void *at, size_t bytes, struct kf_err *err)
{
	if (mprotect(at, bytes, PROT_READ))
		return kf_err_set(err, KF_EIO,
				  "sandbox: cannot map %zu bytes of inputs "
				  "read-only: %s",
				  bytes, strerror(errno));
	/* Without mseal(2) the protection stands but could be undone; a
	 * sandboxed load then fails in kf_sandbox_seal, unless the user
	 * runs weak on purpose. */
	if (syscall(SYS_mseal, at, bytes, 0) && errno != ENOSYS)
		return kf_err_set(err, KF_EIO,
				  "sandbox: mseal of the inputs: %s",
				  strerror(errno));
	return 0;
}

static int seal_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	int *failed = arg;
	uintptr_t page = (uintptr_t)getpagesize();
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_GNU_RELRO)
			continue;
		/* The range the loader made read-only (its end rounded
		 * down: the rest of that page stays writable data). */
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
		uintptr_t hi =
		    (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
		if (lo < hi && syscall(SYS_mseal, lo, hi - lo, 0) && !*failed)
			*failed = errno;
	}
	return 0;
}

int kf_sandbox_seal(struct kf_err *err)
{
	if (syscall(SYS_mseal, 0, 0, 0)) {
		const char *weak = getenv("KFORGE_SANDBOX_WEAK");
		if (errno == ENOSYS && weak && strstr(weak, "mseal")) {
			fprintf(stderr,
				"kforge-worker: KFORGE_SANDBOX_WEAK=mseal:"
				" the runner's relocation tables are "
				"not sealed\n");
			return 0;
		}
		return kf_err_set(err, KF_ENOSYS,
				  "sandbox: mseal(2) is missing (%s): Linux "
				  "6.10 or later seals the runner's relocation "
				  "tables (KFORGE_SANDBOX_WEAK=mseal runs "
				  "without)",
				  strerror(errno));
	}
	int failed = 0;
	dl_iterate_phdr(seal_relro, &failed);
	if (failed)
		return kf_err_set(err, KF_EIO, "sandbox: mseal: %s",
				  strerror(failed));
	return 0;
}

/* Whether the confined runner keeps the variable env (NAME=value): what
 * the device, the loader and the sanitizers read; never a key or a path of
 * the user's. */
static bool env_kept(const char *env)
{
	static const char *const kept[] = {"CUDA_",
					   "NVIDIA_",
					   "LD_LIBRARY_PATH=",
					   "ASAN_OPTIONS=",
					   "UBSAN_OPTIONS=",
					   "KFORGE_SANDBOX_WEAK=",
					   "OMP_NUM_THREADS=",
					   "LANG=",
					   "LC_ALL=",
					   "KFORGE_DEVICE=",
					   "KFORGE_NO_CUPTI=",
					   "KFORGE_LOG="};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (!strncmp(env, kept[i], strlen(kept[i])))
			return true;
	return false;
}

void kf_sandbox_scrub_env(void)
{
	extern char **environ;
	/* The cache's path, fixed while the variables that name it exist
	 * (kf_cache_dir keeps it): the cuda root holds its cubins. */
	(void)kf_cache_dir();
	/* /proc/self/environ shows the original block, not environ: the
	 * strings are wiped where they lie, the kept ones copied first. */
	char *keep[64];
	int n = 0;
	for (char **e = environ; e && *e; e++)
		if (n < 63 && env_kept(*e))
			keep[n++] = kf_xstrdup(*e);
	for (char **e = environ; e && *e; e++)
		memset(*e, 0, strlen(*e));
	clearenv();
	for (int i = 0; i < n; i++)
		putenv(keep[i]); /* owned by the environment from here */
}

/* Each mechanism, tried in a child of its own (namespaces change the
 * process that makes them). */
static const char *probe(int what)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return "cannot fork";
	if (pid == 0) {
		struct kf_err err = KF_ERR_INIT;
		int rc = what == 0   ? kf_sandbox_confine("host", NULL, &err)
			 : what == 1 ? (syscall(SYS_mseal, 0, 0, 0) ? -1 : 0)
				     : kf_sandbox_drop_user(&err);
		_exit(rc ? 1 : 0);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? NULL : "missing";
}

int kf_sandbox_check(char *why, size_t cap)
{
	static const char *const names[] = {"namespaces and a root of its own",
					    "mseal(2) (Linux 6.10)",
					    "a user id of its own"};
	why[0] = '\0';
	int missing = 0;
	for (int i = 0; i < 3; i++) {
		if (!probe(i))
			continue;
		size_t n = strlen(why);
		snprintf(why + n, cap - n, "%s%s", missing++ ? "; " : "",
			 names[i]);
	}
	return missing;
}
