/*
 * harness.h: kforge's test harness. Each test file defines its cases and a
 * table KF_TESTS(module); tests/main.c runs every case in its own child
 * process, so a crash fails one case, and ends with the summary line.
 */
#ifndef KFORGE_TESTS_HARNESS_H
#define KFORGE_TESTS_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kf_test {
	const char *name; /* test_<module>_<behaviour> */
	void (*fn)(void);
};

#define KF_TEST(fn)                                                            \
	{                                                                      \
#fn, fn                                                        \
	}
#define KF_TESTS(module) const struct kf_test kf_tests_##module[]
#define KF_TESTS_END                                                           \
	{                                                                      \
		NULL, NULL                                                     \
	}

/* Exit status of a skipped case; the reason goes to stdout first. */
#define KF_TEST_SKIP_STATUS 77

/* Fails the case: prints where and why, then exits the child. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("    %s:%d: CHECK failed: %s\n", __FILE__,      \
			       __LINE__, #cond);                               \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_MSG(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("    %s:%d: CHECK failed: %s: ", __FILE__,      \
			       __LINE__, #cond);                               \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                       \
			printf("    %s:%d: \"%s\" != \"%s\"\n", __FILE__,      \
			       __LINE__, a_ ? a_ : "(null)",                   \
			       b_ ? b_ : "(null)");                            \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* True when haystack contains needle. */
#define CHECK_CONTAINS(haystack, needle)                                       \
	do {                                                                   \
		const char *h_ = (haystack), *n_ = (needle);                   \
		if (!h_ || !strstr(h_, n_)) {                                  \
			printf("    %s:%d: \"%s\" does not contain \"%s\"\n",  \
			       __FILE__, __LINE__, h_ ? h_ : "(null)", n_);    \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define SKIP(...)                                                              \
	do {                                                                   \
		printf("    skipped: ");                                       \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		exit(KF_TEST_SKIP_STATUS);                                     \
	} while (0)

/* Where the built binaries are ($KFORGE_BUILD, default "build"). */
/* Runs argv (argv[0] a path) to its end within timeout_ms, its stdout and
 * stderr together kept up to cap bytes, and returns them (malloc'd) with
 * its exit code in *code; a process that cannot be run, or that a signal
 * ends, fails the test (its output is still returned). */
char *kf_test_run(char *const argv[], int timeout_ms, size_t cap, int *code);
/* A file's text (malloc'd, up to 64 MiB), failing the test where it cannot
 * be read. */
char *kf_test_read_text(const char *path);
/* Runs <build>/kforge with args (NULL-ended, at most 46) as kf_test_run
 * does: its output (malloc'd), its exit code in *code. */
char *kf_test_kforge(const char *const *args, int timeout_ms, size_t cap,
		     int *code);
/* Writes text to path (atomically), failing the test where it cannot. */
void kf_test_write_text(const char *path, const char *text);
/* Copies a file's bytes to another path, failing the test where it cannot. */
void kf_test_copy_file(const char *from, const char *to);
/* A copy of the task directory `task` (".../suite/name": its task.json,
 * references and candidates) as into/suite/name, its "dims" replaced by
 * dims (a JSON object), so that a fixture made from the task's own
 * candidates takes seconds (the shipped sizes take 8-25 s an evaluation
 * on the host). Its id is the task's. Returns the copy's path. */
char *kf_test_small_task(const char *task, const char *into,
			 const char *dims);
/* Runs a shell command line; its stdout (malloc'd), *code its exit status
 * (-1 where a signal ended it). */
char *kf_test_shell(const char *cmd, int *code);
const char *kf_test_build_dir(void);
/* Where fixtures named name (made once, kept between runs, keyed by what
 * they are made from) live: $KFORGE_TEST_DATA/name where that is set (make
 * check reads make test's: the stores and benches are data, made once),
 * else <build>/test-data/name. Made if missing (malloc'd). */
char *kf_test_data_dir(const char *name);
/* A fresh empty directory for this case (removed by the runner). */
const char *kf_test_tmpdir(void);
/* Skips the case unless a python3 on PATH has torch. */
void kf_test_need_torch(void);

#endif
