/*
 * compile.h: turns a kernel source into a shared object for a backend,
 * through a content-addressed cache in kf_cache_dir()/compile. The key covers
 * the source bytes, kernel.h, the flags, the toolchain's version and the
 * backend, so a changed input never reuses a stale object.
 *
 * A .cu builds in two steps, `nvcc -c` then gcc links the object with
 * nvcc's own link line less the device link (gcc's version joins the key);
 * KFORGE_NVCC_LINK=nvcc keeps one `nvcc -shared` (docs/measuring.md,
 * "Compile latency"). A toolchain's version line is asked once per binary
 * (by its inode, size and times) and kept in kf_cache_dir()/compile/
 * toolchain/, so a cache hit spawns no process.
 */
#ifndef KFORGE_COMPILE_H
#define KFORGE_COMPILE_H

#include <stdbool.h>

#include <kforge/base.h>

#define KF_COMPILE_LOG_CAP (64u << 10) /* bytes of compiler output kept */
/* The largest file a build may write (RLIMIT_FSIZE on every step: a
 * candidate that asks its assembler or linker for more, e.g. a section
 * .fill'ed with hundreds of MiB, fails to compile, its own fault, and
 * leaves nothing in the cache), and the largest object kforge reads for
 * its imports. 64 MiB: an honest object is a few; one just under the cap,
 * built in seconds, is cache the next evaluations must wait to reclaim. */
#define KF_COMPILE_FILE_CAP (64u << 20)

/* The compile cache's bound in bytes, from KFORGE_CACHE_MAX_MB (default 20
 * GiB); KF_EINVAL naming the variable for a bad value. */
int kf_compile_cache_max(uint64_t *bytes, struct kf_err *err);
/* Removes the entries of the compile cache dir least recently built or
 * found (objects and logs, by their files' mtime) until it holds at most
 * 90 % of cap, sparing those used in the last 2 minutes; *removed and
 * *left (bytes) say what it did. 0, or KF_EIO when dir cannot be read. */
int kf_compile_cache_trim(const char *dir, uint64_t cap, int *removed,
			  uint64_t *left);

struct kf_compile_opts {
	const char *backend;	 /* "host" (cc) or "cuda" (nvcc) */
	const char *include_dir; /* holds kforge/kernel.h; NULL: found next to
				    the executable or in the source tree */
	const char *arch;	 /* cuda: "sm_90", "sm_90a"; NULL: detected */
	const char *const *libraries; /* extra -l names the task allows */
	int n_libraries;
	int timeout_ms; /* 0: 120000 */
	bool no_cache;	/* compile even when the object is cached */
};

/* The outcome of one compilation. */
struct kf_compile_result {
	bool ok; /* false: the compiler failed or timed out */
	bool timed_out;
	bool cached;   /* the object (or a failure kept, cpu_spent) came from
			  the cache */
	bool cpu_spent; /* failed: a process of the build used up its CPU
			   time (kf_compile_cpu_limit), a failure the
			   source makes on any machine, kept in the cache */
	char *so_path; /* owned; the shared object, when ok */
	char *log;     /* owned; compiler output, at most KF_COMPILE_LOG_CAP */
	char *key;     /* owned; the cache key (64 hex digits) */
	char *command; /* owned; the command line, for the record */
	char *toolchain; /* owned; the compiler's version line */
	double seconds;	 /* wall time of the compiler, 0 when cached */
};
#define KF_COMPILE_RESULT_INIT                                                 \
	{                                                                      \
		0                                                              \
	}

/*
 * Compiles source_path. Returns 0 when it could try (r->ok tells whether the
 * source compiled: a compile error is an outcome, not a failure); a negative
 * code with err set when it could not (no compiler, unreadable source).
 */
int kf_compile(const char *source_path, const struct kf_compile_opts *opts,
	       struct kf_compile_result *r, struct kf_err *err);
void kf_compile_result_release(struct kf_compile_result *r);
/* *dst becomes a copy of *src (its strings its own). */
void kf_compile_result_copy(struct kf_compile_result *dst,
			    const struct kf_compile_result *src);

/*
 * The symbols a compiled object imports (its undefined dynamic symbols:
 * functions and data it expects from the libraries it is loaded with).
 * *names is an array of n strings; free each and the array.
 */
int kf_compile_imports(const char *so_path, char ***names, int *n,
		       struct kf_err *err);

/*
 * The memory (RLIMIT_DATA, bytes) each process of a build may take: the
 * compiler and its passes under kf_compile, torch's extension builds under
 * the KernelBench-format prebuild. $KFORGE_COMPILE_MEM_MB in MiB (at least
 * 256), else KF_COMPILE_MEM_MB_DEFAULT. A compile that reads /dev/zero
 * through #include ends there, not in the kernel's OOM killer. KF_EINVAL
 * with err naming the variable when it is not a whole number >= 256.
 */
#define KF_COMPILE_MEM_MB_DEFAULT 8192
int kf_compile_mem_limit(uint64_t *bytes, struct kf_err *err);
/* The line a failed build's log gets when it may have met that limit. */
void kf_compile_mem_note(struct kf_strbuf *log, uint64_t bytes);

/*
 * The CPU time (RLIMIT_CPU, whole seconds) each process of a build may use:
 * $KFORGE_COMPILE_CPU_S (at least 1), else KF_COMPILE_CPU_S_DEFAULT, and
 * at most three quarters of the build's wall-time limit (timeout_ms), so
 * that a source that keeps a compiler busy meets it before the wall clock
 * on a quiet machine. CPU time does not grow with the machine's load as
 * the wall clock does: a build that used it up fails the same way on any
 * machine, so that failure is kept in the cache under the build's key and
 * the next request of the same source is answered at once (a compile bomb
 * costs its CPU time once, not once per copy), while a build stopped by
 * the wall clock (a busy machine) is not kept. KF_EINVAL with err naming
 * the variable when it is not a whole number >= 1.
 */
#define KF_COMPILE_CPU_S_DEFAULT 90
int kf_compile_cpu_limit(int timeout_ms, uint64_t *seconds,
			 struct kf_err *err);

/* The toolchain's version line for a backend ("cc (Debian 12.2.0-14) ..."),
 * or NULL when the compiler is missing; caller frees. */
char *kf_compile_toolchain(const char *backend);

#endif
