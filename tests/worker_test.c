/*
 * worker_test.c: the confinement of the candidate's runner as a user sees
 * it: attacks made before and after loading (constructors included) find
 * nothing to read, nothing to signal and nothing to rewrite, honest code
 * with constructors still passes, and the binaries carry full RELRO.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/eval.h>

#include "../src/worker/worker_int.h"
#include "harness.h"

#define ROWSUM "tasks/reduction/row_sum"
#define RT(name) "redteam/host/" name ".c"

static cJSON *run(const char *cand)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", dir, 1);
	free(dir);
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 1;
	o.no_timing = true;
	o.include_dir = "include";
	o.mem_limit_bytes = 1ull << 30;
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	int rc = kf_eval(ROWSUM, cand, &o, &res, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(res != NULL);
	return res;
}

static void expect(const char *cand, const char *status, const char *check)
{
	cJSON *r = run(cand);
	const char *got = kf_json_str(r, "status");
	const char *why = kf_json_str(r, "reason");
	CHECK_MSG(got && !strcmp(got, status), "%s: status %s (%s), want %s",
		  cand, got ? got : "?", why ? why : "", status);
	if (check)
		CHECK_STR(kf_json_str(r, "check"), check);
	cJSON_Delete(r);
}

/* A constructor that reads every /proc/N/cmdline (the supervisor's --seed)
 * finds no process but its own: it falls back to zeros. */
static void test_worker_candidate_sees_no_other_process(void)
{
	expect(RT("ctor_read_cmdline"), "wrong_answer", "mismatch");
}

/* Nothing of the machine is readable from a constructor: not /etc, not the
 * task, not the cache, not the home directory. */
static void test_worker_candidate_reads_no_file(void)
{
	expect(RT("ctor_open_files"), "wrong_answer", "mismatch");
}

/* What the supervisor's environment holds never reaches the candidate. */
static void test_worker_candidate_environment_is_scrubbed(void)
{
	setenv("KFORGE_TEST_API_KEY", "sk-not-for-candidates", 1);
	expect(RT("environ_secret"), "wrong_answer", "mismatch");
}

/* The runner's GOT is read-only and sealed: a raw mprotect or a page mapped
 * over it fails, so the clock cannot be replaced (which the CPU-time check
 * would report as tampering). */
static void test_worker_runner_got_cannot_be_rewritten(void)
{
	expect(RT("got_clock"), "wrong_answer", "mismatch");
}

/* Signalling the worker from a constructor, or arming a timer, ends the
 * candidate at once (the corpus has the other escapes: `kforge redteam`). */
static void test_worker_escapes_are_sandbox_rejections(void)
{
	expect(RT("sigstop_parent"), "rejected", "sandbox");
	expect(RT("timer_signal"), "rejected", "sandbox");
}

/* Whether the ELF file at path has a PT_GNU_RELRO segment and binds now. */
static bool full_relro(const char *path)
{
	size_t n = 0;
	char *buf = NULL;
	if (kf_file_read(path, 64u << 20, &buf, &n, NULL) ||
	    n < sizeof(Elf64_Ehdr))
		return false;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	bool relro = false, now = false;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph =
		    (const Elf64_Phdr *)(buf + eh->e_phoff) + i;
		if ((const char *)(ph + 1) > buf + n)
			break;
		if (ph->p_type == PT_GNU_RELRO)
			relro = true;
		if (ph->p_type != PT_DYNAMIC)
			continue;
		const Elf64_Dyn *d = (const Elf64_Dyn *)(buf + ph->p_offset);
		for (; (const char *)(d + 1) <= buf + n && d->d_tag != DT_NULL;
		     d++) {
			if (d->d_tag == DT_FLAGS &&
			    (d->d_un.d_val & DF_BIND_NOW))
				now = true;
			if (d->d_tag == DT_FLAGS_1 &&
			    (d->d_un.d_val & DF_1_NOW))
				now = true;
		}
	}
	free(buf);
	return relro && now;
}

/* Every binary a runner maps, and every object kforge links, binds at start
 * and has its GOT in the read-only segment; honest code that runs in a
 * constructor, uses malloc and libm still passes under the confinement. */
static void test_worker_full_relro_and_honest_constructor_passes(void)
{
	const char *names[] = {"kforge-worker", "kforge"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = kf_path_join(kf_test_build_dir(), names[i]);
		CHECK_MSG(full_relro(p), "%s: no full RELRO and BIND_NOW", p);
		free(p);
	}
	cJSON *r = run(RT("honest_ctor_table"));
	CHECK_MSG(!strcmp(kf_json_str(r, "status"), "ok"), "status %s (%s)",
		  kf_json_str(r, "status"), kf_json_str(r, "reason"));
	const cJSON *c =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "compile"), "candidate");
	const char *cmd = kf_json_str(c, "command");
	CHECK_CONTAINS(cmd, "-Wl,-z,relro,-z,now");
	const char *o = strstr(cmd, " -o ");
	CHECK(o != NULL);
	char so[4096];
	CHECK(sscanf(o + 4, "%4095s", so) == 1);
	CHECK_MSG(full_relro(so), "%s: no full RELRO and BIND_NOW", so);
	cJSON_Delete(r);
}

/* Library directories the loader is pointed at that lie inside a directory
 * the runner's root already binds (a CUDA machine's LD_LIBRARY_PATH under
 * /usr), a symbolic link among them, leave the root buildable: an honest
 * kernel is still ok. (Their mount points were once made after /usr had
 * turned read-only, and every evaluation was an infra_error.) */
static void test_worker_nested_library_paths_keep_the_root_buildable(void)
{
	char *lib = kf_path_join(kf_test_tmpdir(), "lib");
	char *link = kf_path_join(kf_test_tmpdir(), "lib64");
	CHECK(mkdir(lib, 0755) == 0 && symlink("lib", link) == 0);
	char *llp =
	    kf_xasprintf("/usr/lib:/usr/lib/x86_64-linux-gnu:%s:%s", lib, link);
	setenv("LD_LIBRARY_PATH", llp, 1);
	cJSON *r = run("tasks/reduction/row_sum/candidates/fast.c");
	CHECK_MSG(!strcmp(kf_json_str(r, "status"), "ok"), "status %s (%s)",
		  kf_json_str(r, "status"), kf_json_str(r, "reason"));
	cJSON_Delete(r);
	free(llp);
	free(link);
	free(lib);
}

/* A cuda runner's root holds the engine's cubin cache at a path of its own:
 * with the cache under /tmp (KFORGE_CACHE=/tmp/kfc on an H200), /tmp was
 * in the root and a constructor's open("/tmp") succeeded. */
static void test_worker_cuda_root_shows_no_machine_directory(void)
{
	char *cache = kf_path_join(kf_test_tmpdir(), "engine-cache");
	char *cuda = kf_path_join(cache, "cuda");
	char *cubin = kf_path_join(cuda, "engine-test.cubin");
	CHECK(!kf_mkdir_p(cuda, NULL));
	CHECK(!kf_file_write_atomic(cubin, "cubin", 5, NULL));
	pid_t pid = fork();
	if (pid == 0) {
		struct kf_err err = KF_ERR_INIT;
		kf_cache_dir_set(cache);
		if (kf_sandbox_confine("cuda", NULL, &err))
			_exit(10);
		int bad = 0;
		struct stat st;
		/* The test's own directory lies under /tmp. */
		if (stat("/tmp", &st) == 0 || stat(cache, &st) == 0)
			bad |= 1;
		if (strcmp(kf_cache_dir(), "/kforge/engine-cache"))
			bad |= 2;
		char *in_root =
		    kf_path_join(kf_cache_dir(), "cuda/engine-test.cubin");
		char *data = NULL;
		size_t n = 0;
		if (kf_file_read(in_root, 64, &data, &n, NULL) || n != 5 ||
		    memcmp(data, "cubin", 5))
			bad |= 4;
		if (stat("/etc/passwd", &st) == 0)
			bad |= 8;
		_exit(bad);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "confined child: exit %d (10: not confined; bits: 1 /tmp or "
		  "the cache's own path in the root, 2 kf_cache_dir, 4 the "
		  "cubin unreadable, 8 /etc/passwd)",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	free(cubin);
	free(cuda);
	free(cache);
}

/* kforge doctor says whether every mechanism is there. */
static void test_worker_doctor_reports_the_sandbox(void)
{
	cJSON *d = kf_doctor();
	const char *s = kf_json_str(d, "sandbox");
	CHECK(s != NULL);
	CHECK_STR(s, "ok");
	cJSON_Delete(d);
}

KF_TESTS(worker) = {
    KF_TEST(test_worker_candidate_sees_no_other_process),
    KF_TEST(test_worker_candidate_reads_no_file),
    KF_TEST(test_worker_candidate_environment_is_scrubbed),
    KF_TEST(test_worker_runner_got_cannot_be_rewritten),
    KF_TEST(test_worker_escapes_are_sandbox_rejections),
    KF_TEST(test_worker_full_relro_and_honest_constructor_passes),
    KF_TEST(test_worker_nested_library_paths_keep_the_root_buildable),
    KF_TEST(test_worker_cuda_root_shows_no_machine_directory),
    KF_TEST(test_worker_doctor_reports_the_sandbox),
    KF_TESTS_END};
