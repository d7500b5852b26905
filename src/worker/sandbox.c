/*
 * sandbox.c: the worker's seccomp filter (a classic BPF program over the
 * system call number and, for clone and the signal calls, an argument).
 * It backs the link-time policy: a candidate that makes a system call
 * without importing the function (inline `syscall`) is stopped here.
 */
#include <errno.h>
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
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			on(&p, files[i], SECCOMP_RET_KILL_PROCESS);
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
	if (host) {
		no_file_changes(&p);
		/* No code is made or changed once the engine is loaded:
		 * nothing may become executable. */
		kill_if_flags(&p, SYS_mprotect, 2, PROT_EXEC);
		kill_if_flags(&p, SYS_pkey_mprotect, 2, PROT_EXEC);
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
