/*
 * main.c: runs the test cases of every module, each in its own process, and
 * prints "tests: N passed, N failed, N skipped". Arguments filter cases by
 * substring of their names; an argument "-x" leaves out those holding x,
 * and "+x" keeps those holding x whatever else the arguments say.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <kforge/base.h>

#include "harness.h"

extern const struct kf_test kf_tests_base[];
extern const struct kf_test kf_tests_task[];
extern const struct kf_test kf_tests_compile[];
extern const struct kf_test kf_tests_backend[];
extern const struct kf_test kf_tests_eval[];
extern const struct kf_test kf_tests_judge[];
extern const struct kf_test kf_tests_cli[];
extern const struct kf_test kf_tests_llm[];
extern const struct kf_test kf_tests_prompt[];
extern const struct kf_test kf_tests_reward[];
extern const struct kf_test kf_tests_store[];
extern const struct kf_test kf_tests_search[];
extern const struct kf_test kf_tests_server[];
extern const struct kf_test kf_tests_server_openenv[];
extern const struct kf_test kf_tests_gpu[];
extern const struct kf_test kf_tests_farm[];
extern const struct kf_test kf_tests_farm_redis[];
extern const struct kf_test kf_tests_kernelbench[];
extern const struct kf_test kf_tests_worker[];
extern const struct kf_test kf_tests_export[];
extern const struct kf_test kf_tests_report[];
extern const struct kf_test kf_tests_mcts[];
extern const struct kf_test kf_tests_tune[];
extern const struct kf_test kf_tests_profile[];
extern const struct kf_test kf_tests_attention[];

static const struct kf_test *const all_tables[] = {
    kf_tests_base,	  kf_tests_task,       kf_tests_compile,
    kf_tests_backend,	  kf_tests_eval,       kf_tests_judge,
    kf_tests_cli,	  kf_tests_llm,	       kf_tests_prompt,
    kf_tests_reward,	  kf_tests_store,      kf_tests_search,
    kf_tests_server,	  kf_tests_gpu,	       kf_tests_farm,
    kf_tests_kernelbench, kf_tests_worker,     kf_tests_server_openenv,
    kf_tests_export,	  kf_tests_report,     kf_tests_farm_redis,
    kf_tests_mcts,	  kf_tests_tune,       kf_tests_profile,
    kf_tests_attention,
};

static char tmpdir[256];

char *kf_test_run(char *const argv[], int timeout_ms, size_t cap, int *code)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	struct kf_err err = KF_ERR_INIT;
	int status = 0;
	int rc = kf_proc_run(argv, timeout_ms, cap, &sb, &status, &err);
	CHECK_MSG(rc == 0, "%s: %s", argv[0], err.msg);
	CHECK_MSG(WIFEXITED(status), "%s ended by signal %d", argv[0],
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return kf_strbuf_detach(&sb);
}

char *kf_test_read_text(const char *path)
{
	struct kf_err err = KF_ERR_INIT;
	char *t = NULL;
	CHECK_MSG(kf_file_read(path, 64 << 20, &t, NULL, &err) == 0, "%s",
		  err.msg);
	return t;
}

void kf_test_write_text(const char *path, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_file_write_atomic(path, text, strlen(text), &err) == 0,
		  "%s", err.msg);
}

void kf_test_copy_file(const char *from, const char *to)
{
	struct kf_err err = KF_ERR_INIT;
	char *t = NULL;
	size_t n = 0;
	CHECK_MSG(kf_file_read(from, 64 << 20, &t, &n, &err) == 0, "%s",
		  err.msg);
	CHECK_MSG(kf_file_write_atomic(to, t, n, &err) == 0, "%s", err.msg);
	free(t);
}

char *kf_test_small_task(const char *task, const char *into, const char *dims)
{
	const char *name = strrchr(task, '/');
	CHECK(name != NULL && name > task);
	const char *suite = name;
	while (suite > task && suite[-1] != '/')
		suite--;
	char *dest = kf_xasprintf("%s/%.*s", into, (int)(strlen(suite)), suite);
	char *cmd = kf_xasprintf("rm -rf '%s' && mkdir -p '%s' && cp -r '%s'/. "
				 "'%s'",
				 dest, dest, task, dest);
	int code = 0;
	free(kf_test_shell(cmd, &code));
	CHECK_MSG(code == 0, "%s", cmd);
	free(cmd);
	char *json = kf_path_join(dest, "task.json");
	char *text = kf_test_read_text(json);
	cJSON *t = cJSON_Parse(text);
	cJSON *d = cJSON_Parse(dims);
	CHECK_MSG(t && d && cJSON_GetObjectItem(t, "dims"), "%s: %s", json,
		  dims);
	cJSON_ReplaceItemInObject(t, "dims", d);
	char *out = cJSON_Print(t);
	kf_test_write_text(json, out);
	free(out);
	cJSON_Delete(t);
	free(text);
	free(json);
	return dest;
}

char *kf_test_shell(const char *cmd, int *code)
{
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	struct kf_strbuf sb = KF_STRBUF_INIT;
	char buf[4096];
	size_t n;
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		kf_strbuf_add(&sb, buf, n);
	int st = p ? pclose(p) : -1;
	*code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return kf_strbuf_detach(&sb);
}

const char *kf_test_build_dir(void)
{
	const char *b = getenv("KFORGE_BUILD");
	return b && *b ? b : "build";
}

char *kf_test_kforge(const char *const *args, int timeout_ms, size_t cap,
		     int *code)
{
	char *argv[48];
	argv[0] = kf_path_join(kf_test_build_dir(), "kforge");
	int n = 1;
	for (; args[n - 1]; n++) {
		KF_ASSERT(n < 47);
		argv[n] = (char *)args[n - 1];
	}
	argv[n] = NULL;
	char *out = kf_test_run(argv, timeout_ms, cap, code);
	free(argv[0]);
	return out;
}

char *kf_test_data_dir(const char *name)
{
	struct kf_err err = KF_ERR_INIT;
	const char *shared = getenv("KFORGE_TEST_DATA");
	char *base = shared && *shared
			 ? kf_xstrdup(shared)
			 : kf_path_join(kf_test_build_dir(), "test-data");
	char *dir = kf_path_join(base, name);
	free(base);
	CHECK(kf_mkdir_p(dir, &err) == 0);
	return dir;
}

const char *kf_test_tmpdir(void)
{
	return tmpdir;
}

/* A case runs when its name holds one of the arguments that do not start
 * with '-' (all cases when there are none) and none of those that do
 * ("-corpus" leaves out the cases whose names hold "corpus"). */
static int wanted(const char *name, int argc, char **argv)
{
	int includes = 0, included = 0;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '+' && argv[i][1] &&
		    strstr(name, argv[i] + 1))
			return 1;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '+')
			continue;
		if (argv[i][0] == '-') {
			if (argv[i][1] && strstr(name, argv[i] + 1))
				return 0;
			continue;
		}
		includes++;
		included = included || strstr(name, argv[i]) != NULL;
	}
	return !includes || included;
}

static int run_case(const struct kf_test *t)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kforge-test-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		printf("    cannot make a temporary directory: %s\n",
		       strerror(errno));
		return 1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		t->fn();
		fflush(stdout);
		_exit(0);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("    could not remove %s\n", tmpdir);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	printf("    killed by signal %d\n", WTERMSIG(status));
	return 1;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t k = 0; k < sizeof(all_tables) / sizeof(all_tables[0]);
	     k++) {
		for (const struct kf_test *t = all_tables[k]; t->name; t++) {
			if (!wanted(t->name, argc, argv))
				continue;
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			int rc = run_case(t);
			clock_gettime(CLOCK_MONOTONIC, &b);
			double s = (double)(b.tv_sec - a.tv_sec) +
				   (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
			const char *word = rc == 0		       ? "ok"
					   : rc == KF_TEST_SKIP_STATUS ? "skip"
								       : "FAIL";
			printf("%-4s %s (%.2f s)\n", word, t->name, s);
			if (rc == 0)
				passed++;
			else if (rc == KF_TEST_SKIP_STATUS)
				skipped++;
			else
				failed++;
		}
	}
	printf("tests: %d passed, %d failed, %d skipped\n", passed, failed,
	       skipped);
	return failed ? 1 : 0;
}

/* Skips the case unless a python3 on PATH has torch. */
void kf_test_need_torch(void)
{
	const char *path = getenv("PATH");
	char *dirs = kf_xstrdup(path ? path : "/usr/bin");
	char *save = NULL;
	bool found = false;
	for (char *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *py = kf_path_join(d, "python3");
		char *argv[] = {py, "-c",
				"import importlib.util; print('torch:', "
				"importlib.util.find_spec('torch') is not "
				"None)",
				NULL};
		struct kf_strbuf out = KF_STRBUF_INIT;
		int status = 0;
		if (kf_is_executable(py) &&
		    !kf_proc_run(argv, 60000, 4096, &out, &status, NULL) &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		    !strcmp(kf_strbuf_str(&out), "torch: True\n"))
			found = true;
		kf_strbuf_release(&out);
		free(py);
	}
	free(dirs);
	if (!found)
		SKIP("no python3 on PATH has torch (apt-get install "
		     "python3-torch)");
}
