/*
 * base.h: what every kforge module stands on: error codes and messages,
 * allocation, growable strings, files, hashing, clocks, child processes and
 * the length-prefixed JSON frames that carry the worker protocol.
 */
#ifndef KFORGE_BASE_H
#define KFORGE_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define KF_VERSION "0.1.0"

/* Error codes: functions that can fail return 0 or one of these. */
enum {
	KF_OK = 0,
	KF_EINVAL = -1,	   /* bad input: a spec, an argument, a frame */
	KF_EIO = -2,	   /* a read or write failed */
	KF_ENOENT = -3,	   /* a file or symbol is missing */
	KF_ETIMEDOUT = -4, /* a deadline passed */
	KF_ERANGE = -5,	   /* a size cap was hit */
	KF_EPROTO = -6,	   /* a peer broke the protocol */
	KF_ECHILD = -7,	   /* a child process failed */
	KF_ENOSYS = -8,	   /* not available on this machine */
	KF_EFAULT = -9,	   /* candidate code broke the device (illegal
			      address, trap): the context is lost */
};

/* Names an error code ("invalid input", ...); never NULL. */
const char *kf_strerror(int code);

/*
 * The detailed message of a failure. Callers own it (usually on the stack);
 * functions that fail fill it through kf_err_set. The message names the
 * subject (file, field, symbol) and why.
 */
struct kf_err {
	int code;
	char msg[1024];
};
#define KF_ERR_INIT                                                            \
	{                                                                      \
		0,                                                             \
		{                                                              \
			0                                                      \
		}                                                              \
	}

/* Sets code and message; returns code so that callers can `return
 * kf_err_set(...)`. */
int kf_err_set(struct kf_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes the message with "prefix: " (the outer subject, a file name). */
void kf_err_prefix(struct kf_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Allocation: out of memory aborts with a message, so these never return NULL.
 */
void *kf_xmalloc(size_t bytes);
void *kf_xcalloc(size_t n, size_t bytes);
void *kf_xrealloc(void *p, size_t bytes);
char *kf_xstrdup(const char *s);
char *kf_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An always-on assertion for programmer errors (never for input). */
#define KF_ASSERT(cond)                                                        \
	((cond) ? (void)0 : kf_assert_fail(#cond, __FILE__, __LINE__))
void kf_assert_fail(const char *what, const char *file, int line)
    __attribute__((noreturn));

/* A growable NUL-terminated string; embed with KF_STRBUF_INIT. */
struct kf_strbuf {
	char *buf; /* owned; never NULL after the first add */
	size_t len;
	size_t alloc;
};
#define KF_STRBUF_INIT                                                         \
	{                                                                      \
		NULL, 0, 0                                                     \
	}
void kf_strbuf_add(struct kf_strbuf *sb, const void *data, size_t bytes);
void kf_strbuf_addstr(struct kf_strbuf *sb, const char *s);
void kf_strbuf_addf(struct kf_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kf_strbuf_vaddf(struct kf_strbuf *sb, const char *fmt, va_list ap);
/* The contents, "" when empty; borrowed until the next change. */
const char *kf_strbuf_str(const struct kf_strbuf *sb);
/* Hands the buffer to the caller (free() it) and empties sb. */
char *kf_strbuf_detach(struct kf_strbuf *sb);
void kf_strbuf_release(struct kf_strbuf *sb);

/* Makes text read from outside safe to put in JSON and on a terminal, in
 * place: control bytes (but newline and tab) and bytes that are not valid
 * UTF-8 become '?'. */
void kf_text_sanitize(char *s);

/* Logging to stderr; the level comes from KFORGE_LOG (error|warn|info|debug).
 */
enum { KF_LOG_ERROR, KF_LOG_WARN, KF_LOG_INFO, KF_LOG_DEBUG };
void kf_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Files. */
/* Reads a whole file of at most cap_bytes; *out is NUL-terminated, caller
 * frees. */
int kf_file_read(const char *path, size_t cap_bytes, char **out,
		 size_t *out_bytes, struct kf_err *err);
/* Writes through a temporary file and rename(), so readers see all or nothing.
 */
int kf_file_write_atomic(const char *path, const void *data, size_t bytes,
			 struct kf_err *err);
int kf_mkdir_p(const char *path, struct kf_err *err);
int kf_file_exists(const char *path);
/* The cache directory: $KFORGE_CACHE, else $XDG_CACHE_HOME/kforge, else
 * $HOME/.cache/kforge, else /tmp/kforge-cache. Returned string is static. */
const char *kf_cache_dir(void);
/* Makes kf_cache_dir() answer dir from now on (a confined runner, whose
 * root holds the engine's cache at a path of its own). */
void kf_cache_dir_set(const char *dir);
/* Joins two path parts with one '/'; caller frees. */
char *kf_path_join(const char *a, const char *b);
/* The directory of the running executable; static storage. */
const char *kf_exe_dir(void);
/* bubblewrap, where kforge looks for it (as runner/kforge_bridge.py's
 * find_bwrap does): KFORGE_BWRAP alone when set, else /usr/bin/bwrap, else
 * the copy shipped in build/bin; NULL when none is executable. Caller
 * frees. */
char *kf_bwrap_path(void);

/* SHA-256, for content-addressed caches. */
struct kf_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t block[64];
	size_t fill;
};
void kf_sha256_init(struct kf_sha256 *s);
void kf_sha256_update(struct kf_sha256 *s, const void *data, size_t bytes);
/* Writes 64 hex digits and a NUL into hex. */
void kf_sha256_final_hex(struct kf_sha256 *s, char hex[65]);
/* A 64-bit FNV-1a hash, for checksums of tensor bytes (not for security). */
uint64_t kf_fnv1a64(const void *data, size_t bytes, uint64_t seed);

/* Clocks. */
uint64_t kf_now_ns(void); /* CLOCK_MONOTONIC */
/* CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): time
 * that other load on the machine does not lengthen. */
uint64_t kf_thread_cpu_ns(void);
char *kf_utc_iso8601(void); /* "2026-11-30T01:02:03Z"; caller frees */

/* Child processes. */
struct kf_limits {
	double cpu_s;	      /* RLIMIT_CPU, 0 = unchanged */
	uint64_t as_bytes;    /* RLIMIT_AS, 0 = unchanged */
	uint64_t fsize_bytes; /* RLIMIT_FSIZE, 0 = unchanged */
	uint64_t nproc;	      /* RLIMIT_NPROC, 0 = unchanged */
	uint64_t data_bytes;  /* RLIMIT_DATA, 0 = unchanged */
	int no_core;	      /* RLIMIT_CORE = 0 */
};

struct kf_proc {
	pid_t pid;	   /* 0 when not running */
	int to_child;	   /* write end of the child's stdin, -1 if none */
	int from_child;	   /* read end of the child's stdout, -1 if none */
	double cpu_soft_s; /* its RLIMIT_CPU soft limit (SIGXCPU), 0: none */
	double cpu_used_s; /* once reaped: the CPU time of it and of every
			      descendant it reaped (wait4's rusage) */
};
#define KF_PROC_INIT                                                           \
	{                                                                      \
		0, -1, -1, 0, 0                                                \
	}

/*
 * Starts argv[0] (a path) with pipes on stdin and stdout; the child's stderr
 * goes to stderr_fd (-1: /dev/null). Limits are set in the child before exec.
 */
int kf_proc_spawn(struct kf_proc *p, char *const argv[],
		  const struct kf_limits *lim, int stderr_fd,
		  struct kf_err *err);
/* Kills (SIGKILL) and reaps; *status gets the wait status. Safe on a reaped
 * proc. */
void kf_proc_kill(struct kf_proc *p, int *status);
/* Waits up to timeout_ms for exit (then kills); closes the pipes. */
int kf_proc_wait(struct kf_proc *p, int timeout_ms, int *status,
		 long *maxrss_kib);
/* The CPU time, in ms, that pid and its descendants (those alive, found
 * through /proc) have used, at the kernel's tick resolution; *runnable
 * (if not NULL) says whether any of them is running or waiting for a CPU.
 * -1 when pid cannot be read. */
double kf_proc_tree_cpu_ms(pid_t pid, bool *runnable);
/* A running process's peak resident memory in KiB (VmHWM); 0 when it
 * cannot be read. */
long kf_proc_peak_kib(pid_t pid);
/* Describes a wait status: "exited with code 3", "killed by signal 11
 * (SIGSEGV)". */
char *kf_wait_describe(int status);

/* A whole number of unit (its name, for the message) from environment
 * variable name (dflt when unset or empty), at least min; else KF_EINVAL
 * naming the variable and what it sets (what). One parser for every such
 * variable: KFORGE_COMPILE_CPU_S and, through kf_env_mib, the MiB ones. */
int kf_env_whole(const char *name, uint64_t dflt, uint64_t min,
		 const char *unit, const char *what, uint64_t *out,
		 struct kf_err *err);
/* kf_env_whole in MiB, as bytes: KFORGE_CACHE_MAX_MB,
 * KFORGE_COMPILE_MEM_MB, KFORGE_RUNNER_MEM_MB. */
int kf_env_mib(const char *name, uint64_t dflt, uint64_t min_mb,
	       const char *what, uint64_t *bytes, struct kf_err *err);
/* The resident memory a candidate's runner may hold beyond four times its
 * tensors: KFORGE_RUNNER_MEM_MB (at least 256), else
 * KF_RUNNER_MEM_MB_DEFAULT, as bytes. Kept by the native worker (after the
 * candidate's load and each call) and the KernelBench bridge's judge
 * (every 50 ms); kforge refuses a bad value before either starts. */
#define KF_RUNNER_MEM_MB_DEFAULT 8192
int kf_runner_mem_limit(uint64_t *bytes, struct kf_err *err);

/* A growing, NULL-terminated argument vector of owned copies (a command
 * line for kf_proc_run). */
struct kf_argv {
	char **v;
	int n, cap;
};
void kf_argv_add(struct kf_argv *a, const char *s);
void kf_argv_free(struct kf_argv *a); /* frees every string; zeroes a */

/*
 * Runs argv to completion with stdout and stderr captured into out: all of
 * stdout, then all of stderr (at most cap_bytes kept in all, the rest
 * dropped and counted). Returns KF_ETIMEDOUT when timeout_ms passes (the
 * child is killed; out holds what it wrote), else 0 with *status set.
 */
int kf_proc_run(char *const argv[], int timeout_ms, size_t cap_bytes,
		struct kf_strbuf *out, int *status, struct kf_err *err);
/* kf_proc_run with the child's rlimits set from lim (NULL: none). */
int kf_proc_run_limited(char *const argv[], const struct kf_limits *lim,
			int timeout_ms, size_t cap_bytes,
			struct kf_strbuf *out, int *status,
			struct kf_err *err);
/* Where name would run from: itself when it holds a '/', else the first
 * match in $PATH (kf_proc_spawn uses execv, which does not search). NULL
 * when not found; caller frees. */
char *kf_which(const char *name);
/* True when path is a regular file this process may execute. */
int kf_is_executable(const char *path);
/* Runs a shell-free command and returns the first line of its output, or NULL.
 */
char *kf_proc_first_line(char *const argv[], int timeout_ms);

/*
 * Frames: a 4-byte little-endian length, then that many bytes of JSON.
 * Frames above KF_FRAME_CAP are refused.
 */
#define KF_FRAME_CAP (16u << 20)
int kf_frame_write(int fd, const cJSON *msg, struct kf_err *err);
/* Reads one frame; deadline_ns is a kf_now_ns() time (0 = wait forever).
 * Returns KF_ETIMEDOUT at the deadline, KF_EIO at end of file. */
int kf_frame_read(int fd, uint64_t deadline_ns, cJSON **out,
		  struct kf_err *err);

/* JSON helpers over cJSON. */
/* A string member, or NULL when absent or not a string. Borrowed. */
const char *kf_json_str(const cJSON *obj, const char *key);
/* A number member, or dflt when absent or not a number. */
double kf_json_num(const cJSON *obj, const char *key, double dflt);
/* The byte offset of the first \u0000 escape inside a string of JSON text
 * (cJSON's strings end at a NUL, so whatever follows one in that string
 * would be lost without a word), or -1 when there is none. */
long kf_json_nul_escape(const char *text, size_t len);
/* Where a string holding \u0000 is in well-formed JSON text: the first
 * three components of its path (an object's key; an array's index or an
 * object's key; an object's key; "" or -1 where the path is shorter or
 * they are not those kinds), its depth (components; -1 for a key that
 * holds one) and the escape's byte offset. */
struct kf_json_nul_at {
	char key0[64];
	long idx1;
	char key1[64];
	char key2[64];
	int depth;
	long at;
};
/* Fills out[0..max) with the strings of text that hold \u0000, in order;
 * returns how many there are (possibly more than max). text must be JSON
 * that cJSON parsed. */
int kf_json_nul_paths(const char *text, size_t len,
		      struct kf_json_nul_at *out, int max);
/* Rewrites, in place, each \u escape of a UTF-16 surrogate that is not
 * half of a pair (a high \uD800-\uDBFF followed by a low \uDC00-\uDFFF)
 * into \uFFFD, the replacement character, of the same length, in
 * rewrite (which may be text itself); returns how many it found (rewrite
 * NULL: only counts). cJSON refuses a lone
 * surrogate, which JSON's grammar allows (RFC 8259 8.2). */
long kf_json_lone_surrogates(const char *text, char *rewrite, size_t len);
/* A copy of text[0..len) (NUL-terminated) with its lone surrogates
 * rewritten, or NULL when it has none. */
char *kf_json_fix_lone_surrogates(const char *text, size_t len);
/* Prints compactly; caller frees. */
char *kf_json_print(const cJSON *obj);

#endif
