/* farm_redis_test.c: the farm on Redis Streams (farm_redis.h): URLs, the
 * CLI's errors, and a batch of 200 evaluations on three workers through a
 * worker killed mid-evaluation, a worker joining late and a restart of
 * Redis, with every job answered exactly once; the reward service on the
 * farm (kforge serve --redis) through the same faults, over HTTP, and its
 * /metrics. The tests start their own redis-server on a loopback port in
 * their directory, AOF on. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <math.h>

#include <kforge/farm_redis.h>

#include "harness.h"
#include "serve_proc.h"

#define ROWSUM "tests/fixtures/rowsum"

static void test_farm_redis_url_parse(void)
{
	struct kf_redis_url u;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_redis_url_parse("redis://127.0.0.1:6390/2", &u, &err) == 0);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK(u.port == 6390 && u.db == 2 && !u.path[0]);
	CHECK(kf_redis_url_parse("redis://:s3cret@redis.local", &u, &err) == 0);
	CHECK_STR(u.host, "redis.local");
	CHECK_STR(u.password, "s3cret");
	CHECK(u.port == 6379 && u.db == 0 && !u.user[0]);
	CHECK(kf_redis_url_parse("redis://kf:pw@[::1]:7000/", &u, &err) == 0);
	CHECK_STR(u.host, "::1");
	CHECK_STR(u.user, "kf");
	CHECK(u.port == 7000);
	CHECK(kf_redis_url_parse("unix:///run/redis.sock?db=3", &u, &err) == 0);
	CHECK_STR(u.path, "/run/redis.sock");
	CHECK(u.db == 3);
	static const char *const bad[][2] = {
	    {"localhost:6379", "redis://"},
	    {"redis://", "no host"},
	    {"redis://h:0", "port"},
	    {"redis://h:99999", "port"},
	    {"redis://h:12x", "port"},
	    {"redis://h/db", "database"},
	    {"redis://user@h", "credentials"},
	    {"unix://relative.sock", "absolute"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = (struct kf_err)KF_ERR_INIT;
		CHECK_MSG(kf_redis_url_parse(bad[i][0], &u, &err) == KF_EINVAL,
			  "%s", bad[i][0]);
		CHECK_CONTAINS(err.msg, bad[i][0]);
		CHECK_CONTAINS(err.msg, bad[i][1]);
	}
}

/* Runs the CLI; returns its stderr, *code its exit status. */
static char *cli_err(const char *args, int *code)
{
	char *cmd = kf_xasprintf("%s/kforge %s 2>&1 >/dev/null",
				 kf_test_build_dir(), args);
	char *out = kf_test_shell(cmd, code);
	free(cmd);
	return out;
}

/* A loopback port nobody listens on (bound, then closed). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	socklen_t len = sizeof(a);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_farm_redis_cli_bad_input(void)
{
	char *batch = kf_path_join(kf_test_tmpdir(), "batch");
	FILE *f = fopen(batch, "w");
	CHECK(f);
	fprintf(f, "%s %s/candidates/same.c\n", ROWSUM, ROWSUM);
	fclose(f);
	int code;
	/* A malformed URL: the flag, the URL and why. */
	char *args =
	    kf_xasprintf("eval --batch %s --redis localhost:6379", batch);
	char *e = cli_err(args, &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "--redis");
	CHECK_CONTAINS(e, "'localhost:6379' is not a Redis URL");
	free(e);
	free(args);
	e = cli_err("farm status --redis redis://127.0.0.1:99999", &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "--redis");
	CHECK_CONTAINS(e, "port");
	free(e);
	e = cli_err("farm worker", &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "--redis URL is required");
	free(e);
	e = cli_err("farm wroker --redis redis://127.0.0.1", &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "did you mean 'worker'");
	free(e);
	e = cli_err("farm worker --redis redis://127.0.0.1 --gpis 2", &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "did you mean --gpus");
	free(e);
	if (!kf_redis_available()) {
		free(batch);
		SKIP("kforge was built without hiredis (make deps, then make): "
		     "the unreachable cases need it");
	}
	/* Unreachable: the flag, the URL and why, before any work. */
	int port = free_port();
	args = kf_xasprintf("farm worker --redis redis://127.0.0.1:%d", port);
	e = cli_err(args, &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	char *want = kf_xasprintf("--redis redis://127.0.0.1:%d: cannot "
				  "connect",
				  port);
	CHECK_CONTAINS(e, want);
	free(want);
	free(e);
	free(args);
	args = kf_xasprintf("eval --batch %s --redis redis://127.0.0.1:%d "
			    "--no-timing",
			    batch, port);
	e = cli_err(args, &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "cannot connect");
	CHECK_CONTAINS(e, "--redis");
	free(e);
	free(args);
	free(batch);
}

/* ---- the chaos run ---- */

struct redis_proc {
	pid_t pid;
	int port;
	char url[64], dir[512];
};

static void need_redis(void)
{
	if (!kf_redis_available())
		SKIP("kforge was built without hiredis (make deps, then make)");
	char *rs = kf_which("redis-server");
	if (!rs)
		SKIP("redis-server is not installed (make deps)");
	free(rs);
}

static pid_t spawn(const char *const *argv, const char *log)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void redis_start(struct redis_proc *r)
{
	char port[16], log[600];
	snprintf(port, sizeof(port), "%d", r->port);
	snprintf(log, sizeof(log), "%s/redis.out", r->dir);
	/* AOF on, fsynced before each write is answered, so that a kill
	 * of the server itself loses nothing; no RDB snapshots. */
	const char *argv[] = {"redis-server",
			      "--port",
			      port,
			      "--bind",
			      "127.0.0.1",
			      "--dir",
			      r->dir,
			      "--appendonly",
			      "yes",
			      "--appendfsync",
			      "always",
			      "--save",
			      "",
			      "--daemonize",
			      "no",
			      NULL};
	r->pid = spawn(argv, log);
	struct kf_err err = KF_ERR_INIT;
	for (int i = 0; i < 200; i++) {
		err = (struct kf_err)KF_ERR_INIT;
		if (!kf_redis_check(r->url, 1.0, &err))
			return;
		kf_test_sleep_ms(50);
	}
	CHECK_MSG(0, "redis-server did not answer: %s", err.msg);
}

/* A free loopback port and a directory of the case's for a redis-server;
 * redis_new starts it there. */
static void redis_dir(struct redis_proc *r)
{
	r->port = free_port();
	snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
	snprintf(r->dir, sizeof(r->dir), "%s/redis", kf_test_tmpdir());
	CHECK(mkdir(r->dir, 0755) == 0);
}

static void redis_new(struct redis_proc *r)
{
	redis_dir(r);
	redis_start(r);
}

static pid_t worker_start_with(const struct redis_proc *r, const char *name,
			       const char *visibility, const char *attempts)
{
	char exe[512], log[600];
	snprintf(exe, sizeof(exe), "%s/kforge", kf_test_build_dir());
	snprintf(log, sizeof(log), "%s/%s.log", kf_test_tmpdir(), name);
	const char *argv[] = {
	    exe,	"farm",		  "worker", "--redis",
	    r->url,	"--name",	  name,	    "--visibility-timeout",
	    visibility, "--max-attempts", attempts, NULL};
	return spawn(argv, log);
}

static pid_t worker_start(const struct redis_proc *r, const char *name)
{
	return worker_start_with(r, name, "2", "3");
}

static void stop(pid_t pid, int sig)
{
	if (pid <= 0)
		return;
	kill(pid, sig);
	for (int i = 0; i < 300; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		kf_test_sleep_ms(50);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The farm's status, or NULL while Redis is away. */
static cJSON *status(const struct redis_proc *r)
{
	cJSON *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	if (kf_rfarm_status(r->url, &s, &err))
		return NULL;
	return s;
}

static double done(const struct redis_proc *r)
{
	cJSON *s = status(r);
	double d = kf_json_num(cJSON_GetObjectItem(s, "totals"), "done", -1);
	cJSON_Delete(s);
	return d;
}

/* True when worker name's slot holds a job it has not answered (the job
 * is pending under its consumer). */
static bool holds(const struct redis_proc *r, const char *name)
{
	char *cmd = kf_xasprintf("redis-cli -p %d XPENDING kforge:jobs:host "
				 "workers - + 10 %s/0",
				 r->port, name);
	FILE *p = popen(cmd, "r");
	CHECK(p);
	char buf[256];
	bool held = fgets(buf, sizeof(buf), p) && buf[0] > ' ';
	pclose(p);
	free(cmd);
	return held;
}

/* Stops pid (SIGSTOP) at a moment it holds a job it has not answered;
 * false, and pid running again, when it held none. */
static bool freeze_holding(const struct redis_proc *r, pid_t pid,
			   const char *name)
{
	kill(pid, SIGSTOP);
	kf_test_sleep_ms(5);
	bool held = holds(r, name);
	if (!held)
		kill(pid, SIGCONT);
	return held;
}

/* SIGKILLs the worker *pid (and reaps it, *pid 0) at a moment it holds a
 * job it has not answered; false, and the worker running, when it held
 * none. */
static bool killed_holding(const struct redis_proc *r, pid_t *pid,
			   const char *name)
{
	if (!freeze_holding(r, *pid, name))
		return false;
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
	return true;
}

static bool exited(pid_t pid, int *st)
{
	return waitpid(pid, st, WNOHANG) == pid;
}

static void test_farm_redis_survives_kills_and_a_restart(void)
{
	need_redis();
	enum { N = 200 };
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", cache, 1) == 0);
	free(cache);
	struct redis_proc r = {0};
	redis_new(&r);

	/* 200 evaluations, checks only: mostly an honest kernel, with
	 * wrong answers and a compile error among them. */
	char *batch = kf_path_join(kf_test_tmpdir(), "batch");
	FILE *f = fopen(batch, "w");
	CHECK(f);
	int want_ok = 0;
	for (int i = 0; i < N; i++) {
		const char *c = i % 25 == 7    ? "partial"
				: i % 50 == 13 ? "syntax"
					       : "same";
		want_ok += !strcmp(c, "same");
		fprintf(f, "%s %s/candidates/%s.c\n", ROWSUM, ROWSUM, c);
	}
	fclose(f);

	pid_t w[4] = {0};
	w[0] = worker_start(&r, "w1");
	w[1] = worker_start(&r, "w2");
	w[2] = worker_start(&r, "w3");
	char exe[512], out[600], err_path[600];
	snprintf(exe, sizeof(exe), "%s/kforge", kf_test_build_dir());
	snprintf(out, sizeof(out), "%s/out.json", kf_test_tmpdir());
	snprintf(err_path, sizeof(err_path), "%s/submit.err", kf_test_tmpdir());
	uint64_t t0 = kf_now_ns();
	fflush(NULL);
	pid_t sub = fork();
	CHECK(sub >= 0);
	if (sub == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(o, 1);
		dup2(e, 2);
		execl(exe, exe, "eval", "--batch", batch, "--redis", r.url,
		      "--no-timing", "--trials", "5", "--seed", "1", "--json",
		      "--deadline", "900", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	int phase = 0;
	double at[5] = {0}, thaw_done = 0;
	int by_w4 = 0;
	while (!exited(sub, &st)) {
		CHECK_MSG((kf_now_ns() - t0) < 900ull * 1000000000ull,
			  "the batch did not finish in 900 s");
		double now = (kf_now_ns() - t0) * 1e-9;
		double d = done(&r);
		if (phase == 0 && d >= 20 && killed_holding(&r, &w[0], "w1")) {
			/* w1 killed in the middle of an evaluation. */
			at[phase++] = now;
		} else if (phase == 1 && d >= 35) {
			w[3] = worker_start(&r, "w4"); /* joins late */
			at[phase++] = now;
		} else if (phase == 2 && d >= 50 &&
			   freeze_holding(&r, w[1], "w2")) {
			/* w2 cut off mid-evaluation past the visibility
			 * timeout: its job is taken over; once back, it
			 * answers it too. */
			at[phase++] = now;
		} else if (phase == 3 && !holds(&r, "w2")) {
			/* Taken over: w2 back, its answer now a
			 * duplicate of the other worker's. */
			kill(w[1], SIGCONT);
			thaw_done = d;
			at[phase++] = now;
		} else if (phase == 4 && d >= thaw_done + 15) {
			/* Redis killed and started again on its AOF, same
			 * directory and port. */
			stop(r.pid, SIGKILL);
			redis_start(&r);
			at[phase++] = now;
		}
		kf_test_sleep_ms(20);
	}
	CHECK_MSG(phase == 5, "the batch ended before the faults (phase %d)",
		  phase);
	double seconds = (kf_now_ns() - t0) * 1e-9;
	char *errs = kf_test_text(err_path);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1,
		  "submitter: status %d: %s", st, errs);
	/* Every job answered exactly once, in the input's order. */
	char *text = NULL;
	struct kf_err rerr = KF_ERR_INIT;
	CHECK_MSG(!kf_file_read(out, 64u << 20, &text, NULL, &rerr), "%s",
		  rerr.msg);
	cJSON *arr = cJSON_Parse(text);
	CHECK_MSG(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == N, "%s",
		  errs);
	int ok = 0, other = 0, reclaimed = 0;
	char *seen = kf_xcalloc(N, 1);
	for (int i = 0; i < N; i++) {
		const cJSON *res = cJSON_GetArrayItem(arr, i);
		CHECK_MSG(cJSON_IsObject(res), "job %d has no result", i);
		const cJSON *fm = cJSON_GetObjectItem(res, "farm");
		const char *job = kf_json_str(fm, "job");
		CHECK(job && strchr(job, ':'));
		int idx = atoi(strchr(job, ':') + 1);
		CHECK_MSG(idx == i, "result %d is job %s", i, job);
		CHECK(!seen[idx]);
		seen[idx] = 1;
		const char *path =
		    kf_json_str(cJSON_GetObjectItem(res, "candidate"), "path");
		const char *status_s = kf_json_str(res, "status");
		CHECK_MSG(strcmp(status_s, "infra_error"), "job %d: %s", i,
			  kf_json_str(res, "reason"));
		bool same = strstr(path, "/same.c") != NULL;
		CHECK_MSG(!strcmp(status_s, same ? "ok"
					    : strstr(path, "syntax")
						? "compile_error"
						: "wrong_answer"),
			  "job %d (%s): %s", i, path, status_s);
		ok += same;
		other += !same;
		reclaimed += kf_json_num(fm, "deliveries", 1) > 1;
		by_w4 += !strncmp(kf_json_str(fm, "worker"), "w4/", 3);
	}
	CHECK(ok == want_ok && ok + other == N);
	CHECK_MSG(by_w4 > 0, "the late worker answered nothing");
	/* The summary: all answered, none abandoned, the killed worker's
	 * job taken over. */
	int jobs = 0, answered = 0, dups = 0, over = 0, abandoned = 0,
	    reconnects = 0;
	const char *sum = strstr(errs, "kforge: farm: ");
	CHECK_MSG(sum, "%s", errs);
	CHECK_MSG(sscanf(sum + 8,
			 "farm: %d jobs, %d answered, %d duplicates dropped, "
			 "%d taken over, %d abandoned, %d reconnects",
			 &jobs, &answered, &dups, &over, &abandoned,
			 &reconnects) == 6,
		  "%s", sum);
	CHECK(jobs == N && answered == N && abandoned == 0);
	/* w1's job answered by a worker that took it over; w2's answered
	 * twice, by w2 once back and by the one that took it over, one of
	 * the two kept (whichever came first). */
	CHECK_MSG(over >= 1 && over == reclaimed,
		  "taken over %d, %d in the results", over, reclaimed);
	CHECK_MSG(dups >= 1, "w2's job was not answered twice: %s", sum);
	CHECK_MSG(over + dups >= 2, "%s", sum);
	CHECK_MSG(reconnects >= 1, "%s", sum);
	/* Nothing left in the queue. */
	cJSON *s = status(&r);
	const cJSON *q =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(s, "queues"), 0);
	CHECK_STR(kf_json_str(q, "backend"), "host");
	CHECK(kf_json_num(q, "waiting", -1) == 0);
	CHECK(kf_json_num(q, "in_flight", -1) == 0);
	cJSON_Delete(s);
	printf("    farm: %d jobs on 3 workers (w1 SIGKILLed mid-evaluation "
	       "at %.1f s; w4 joined at %.1f s and answered %d; w2 stopped "
	       "mid-evaluation at %.1f s, resumed at %.1f s; redis-server "
	       "SIGKILLed and restarted at %.1f s): %d answered once each, "
	       "%d duplicates dropped, %d taken over, %d abandoned, %d "
	       "submitter reconnects, %.1f s\n",
	       N, at[0], at[1], by_w4, at[2], at[3], at[4], answered, dups,
	       over, abandoned, reconnects, seconds);
	for (int i = 0; i < 4; i++)
		stop(w[i], SIGTERM);
	stop(r.pid, SIGTERM);
	free(seen);
	cJSON_Delete(arr);
	free(text);
	free(errs);
	free(batch);
}

/* Runs redis-cli against r with args; its first line of output. */
static char *redis_cli(const struct redis_proc *r, const char *args)
{
	char *cmd = kf_xasprintf("redis-cli -p %d %s", r->port, args);
	FILE *p = popen(cmd, "r");
	CHECK(p);
	char buf[512] = "";
	if (!fgets(buf, sizeof(buf), p))
		buf[0] = '\0';
	pclose(p);
	free(cmd);
	buf[strcspn(buf, "\n")] = '\0';
	return kf_xstrdup(buf);
}

/* kforge bench --redis: the candidates evaluated by a farm worker, the
 * rows as a local bench gives them; --jobs refused beside it. */
static void test_farm_redis_bench_on_a_worker(void)
{
	need_redis();
	kf_test_need_torch();
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", cache, 1) == 0);
	free(cache);
	struct redis_proc r = {0};
	redis_new(&r);
	pid_t w = worker_start(&r, "bencher");
	const char *kb = "tests/data/kernelbench/";
	char *common = kf_xasprintf(
	    "bench %slevel1/1_ReLU.py --candidates %smodelnew --no-timing "
	    "--json --out %s/eval.json",
	    kb, kb, kf_test_tmpdir());
	int code = 0;
	char *cmd = kf_xasprintf("%s/kforge %s --redis %s 2>/dev/null",
				 kf_test_build_dir(), common, r.url);
	char *farmed = kf_test_shell(cmd, &code);
	CHECK_MSG(code == 0, "exit %d: %s", code, farmed);
	free(cmd);
	cmd = kf_xasprintf("%s/kforge %s 2>/dev/null", kf_test_build_dir(),
			   common);
	char *local = kf_test_shell(cmd, &code);
	CHECK_MSG(code == 0, "exit %d: %s", code, local);
	free(cmd);
	cJSON *a = cJSON_Parse(farmed), *b = cJSON_Parse(local);
	CHECK_MSG(a && b, "%s\n%s", farmed, local);
	CHECK(kf_json_num(a, "correct", -1) == 1);
	const cJSON *ra = cJSON_GetObjectItem(a, "tasks");
	const cJSON *rb = cJSON_GetObjectItem(b, "tasks");
	CHECK(cJSON_GetArraySize(ra) == 1 && cJSON_GetArraySize(rb) == 1);
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(ra, 0), "status"),
		  kf_json_str(cJSON_GetArrayItem(rb, 0), "status"));
	/* The worker did it. */
	CHECK(done(&r) == 1);
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(farmed);
	free(local);
	char *args = kf_xasprintf("%s --redis %s --jobs 2", common, r.url);
	char *e = cli_err(args, &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "--jobs: does not apply with --redis");
	free(e);
	free(args);
	free(common);
	stop(w, SIGTERM);
	stop(r.pid, SIGTERM);
}

static void test_farm_redis_caps_attempts(void)
{
	need_redis();
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", cache, 1) == 0);
	free(cache);
	struct redis_proc r = {0};
	redis_new(&r);
	char *batch = kf_path_join(kf_test_tmpdir(), "batch");
	FILE *f = fopen(batch, "w");
	CHECK(f);
	fprintf(f, "%s %s/candidates/same.c\n", ROWSUM, ROWSUM);
	fclose(f);
	char exe[512], out[600];
	snprintf(exe, sizeof(exe), "%s/kforge", kf_test_build_dir());
	snprintf(out, sizeof(out), "%s/out.json", kf_test_tmpdir());
	fflush(NULL);
	pid_t sub = fork();
	CHECK(sub >= 0);
	if (sub == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open("/dev/null", O_WRONLY);
		dup2(o, 1);
		dup2(e, 2);
		execl(exe, exe, "eval", "--batch", batch, "--redis", r.url,
		      "--no-timing", "--seed", "1", "--json", "--deadline",
		      "120", (char *)NULL);
		_exit(127);
	}
	/* A consumer that takes the job and dies without answering. */
	char *got = NULL;
	for (int i = 0; i < 200; i++) {
		free(got);
		got = redis_cli(&r, "XREADGROUP GROUP workers ghost/0 COUNT 1 "
				    "STREAMS kforge:jobs:host '>'");
		if (!strcmp(got, "kforge:jobs:host"))
			break;
		kf_test_sleep_ms(50);
	}
	CHECK_STR(got, "kforge:jobs:host");
	free(got);
	/* A worker whose cap is one delivery takes it over: infra_error. */
	pid_t w = worker_start_with(&r, "capped", "1", "1");
	int st = 0;
	CHECK(waitpid(sub, &st, 0) == sub);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
	char *text = kf_test_text(out);
	cJSON *arr = cJSON_Parse(text);
	const cJSON *res = cJSON_GetArrayItem(arr, 0);
	CHECK_STR(kf_json_str(res, "status"), "infra_error");
	CHECK_STR(kf_json_str(res, "check"), "farm_attempts");
	CHECK_CONTAINS(kf_json_str(res, "reason"), "delivered 2 times");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(res, "candidate"), "path"),
		  ROWSUM "/candidates/same.c");
	const cJSON *fm = cJSON_GetObjectItem(res, "farm");
	CHECK(kf_json_num(fm, "deliveries", 0) == 2);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(fm, "abandoned")));
	/* Its status counts it. */
	cJSON *s = status(&r);
	CHECK(kf_json_num(cJSON_GetObjectItem(s, "totals"), "abandoned", 0) ==
	      1);
	cJSON_Delete(s);
	cJSON_Delete(arr);
	free(text);
	free(batch);
	stop(w, SIGTERM);
	stop(r.pid, SIGTERM);
}

/* ---- the reward service on the farm (kforge serve --redis) ---- */

/* The value of the sample `name` (labels included, as printed) in a
 * Prometheus text exposition; NAN where absent. */
static double prom(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; p && *p;) {
		if (!strncmp(p, name, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NAN;
}

static char *metrics(int port)
{
	char *body = NULL;
	int st = kf_test_http(port, "GET", "/metrics", NULL, &body);
	CHECK_MSG(st == 200, "GET /metrics: %d %s", st, body);
	return body;
}

/* A kernel for tests/fixtures/scale (y = 2x), tagged so that each is a
 * source of its own: right, wrong (3x) or not C. */
static char *scale_src(int i, const char *kind)
{
	if (!strcmp(kind, "syntax"))
		return kf_xasprintf("/* %d */ int kf_entry(oops", i);
	return kf_xasprintf(
	    "#include <kforge/kernel.h>\n/* request %d */\n"
	    "int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "
	    "n_out, void *stream)\n"
	    "{ (void)n_in; (void)n_out; (void)stream;\n"
	    "  const float *x = in[0].data; float *y = out[0].data;\n"
	    "  for (int64_t i = 0; i < kf_numel(&in[0]); i++) y[i] = %s;\n"
	    "  return 0; }\n",
	    i, strcmp(kind, "wrong") ? "x[i] + x[i]" : "3 * x[i]");
}

static const char *scale_kind(int i)
{
	return i % 9 == 4 ? "wrong" : i % 15 == 7 ? "syntax" : "right";
}

static const char *scale_want(const char *kind)
{
	return !strcmp(kind, "right")	? "ok"
	       : !strcmp(kind, "wrong") ? "wrong_answer"
					: "compile_error";
}

enum { SERVE_N = 200, SERVE_CLIENTS = 6 };

struct serve_run {
	int port;
	pthread_mutex_t lock;
	int next;			 /* the next request to send */
	int status[SERVE_N];		 /* its HTTP status */
	char *body[SERVE_N];		 /* its answer */
	int answers[SERVE_N];		 /* answers it got */
	int answered;
};

static void *serve_client(void *arg)
{
	struct serve_run *r = arg;
	for (;;) {
		pthread_mutex_lock(&r->lock);
		int i = r->next < SERVE_N ? r->next++ : -1;
		pthread_mutex_unlock(&r->lock);
		if (i < 0)
			return NULL;
		char *src = scale_src(i, scale_kind(i));
		cJSON *b = cJSON_CreateObject();
		cJSON *items = cJSON_AddArrayToObject(b, "items");
		cJSON *it = cJSON_CreateObject();
		char id[32];
		snprintf(id, sizeof(id), "r%d", i);
		cJSON_AddStringToObject(it, "id", id);
		cJSON_AddStringToObject(it, "problem_id", "scale");
		cJSON_AddStringToObject(it, "code", src);
		cJSON_AddItemToArray(items, it);
		char *text = cJSON_PrintUnformatted(b);
		char *out = NULL;
		int st = kf_test_http(r->port, "POST", "/v1/score", text, &out);
		pthread_mutex_lock(&r->lock);
		r->status[i] = st;
		r->body[i] = out;
		r->answers[i]++;
		r->answered++;
		pthread_mutex_unlock(&r->lock);
		free(text);
		cJSON_Delete(b);
		free(src);
	}
}

static void test_farm_redis_serve_survives_kills_and_a_restart(void)
{
	need_redis();
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", cache, 1) == 0);
	free(cache);
	struct redis_proc r = {0};
	redis_dir(&r);
	redis_start(&r);
	pid_t w[4] = {0};
	w[0] = worker_start(&r, "w1");
	w[1] = worker_start(&r, "w2");
	w[2] = worker_start(&r, "w3");
	struct kf_test_serve s;
	const char *extra[] = {"--redis", r.url, "--deadline", "600", NULL};
	kf_test_serve_start(&s, true, extra);

	struct serve_run run;
	memset(&run, 0, sizeof(run));
	run.port = s.port;
	pthread_mutex_init(&run.lock, NULL);
	uint64_t t0 = kf_now_ns();
	pthread_t th[SERVE_CLIENTS];
	for (int i = 0; i < SERVE_CLIENTS; i++)
		CHECK(pthread_create(&th[i], NULL, serve_client, &run) == 0);
	int phase = 0;
	double at[3] = {0};
	for (;;) {
		pthread_mutex_lock(&run.lock);
		int answered = run.answered;
		pthread_mutex_unlock(&run.lock);
		if (answered == SERVE_N)
			break;
		CHECK_MSG((kf_now_ns() - t0) < 600ull * 1000000000ull,
			  "%d of %d requests answered in 600 s", answered,
			  SERVE_N);
		double now = (kf_now_ns() - t0) * 1e-9;
		double d = done(&r);
		if (phase == 0 && d >= 20 && killed_holding(&r, &w[0], "w1")) {
			/* w1 killed in the middle of an evaluation. */
			at[phase++] = now;
		} else if (phase == 1 && d >= 50) {
			w[3] = worker_start(&r, "w4"); /* joins late */
			at[phase++] = now;
		} else if (phase == 2 && d >= 100) {
			/* Redis killed and started again on its AOF. */
			stop(r.pid, SIGKILL);
			redis_start(&r);
			at[phase++] = now;
		}
		kf_test_sleep_ms(20);
	}
	for (int i = 0; i < SERVE_CLIENTS; i++)
		pthread_join(th[i], NULL);
	double seconds = (kf_now_ns() - t0) * 1e-9;
	CHECK_MSG(phase == 3, "the requests ended before the faults (phase %d)",
		  phase);
	/* Each request answered once, 200, with its own item's verdict. */
	int ok = 0, wrong = 0, syntax = 0;
	for (int i = 0; i < SERVE_N; i++) {
		CHECK_MSG(run.answers[i] == 1, "request %d: %d answers", i,
			  run.answers[i]);
		CHECK_MSG(run.status[i] == 200, "request %d: HTTP %d: %s", i,
			  run.status[i], run.body[i]);
		cJSON *j = cJSON_Parse(run.body[i]);
		const cJSON *items = cJSON_GetObjectItem(j, "items");
		CHECK_MSG(cJSON_GetArraySize(items) == 1, "request %d: %s", i,
			  run.body[i]);
		const cJSON *it = cJSON_GetArrayItem(items, 0);
		char id[32];
		snprintf(id, sizeof(id), "r%d", i);
		CHECK_STR(kf_json_str(it, "id"), id);
		const char *kind = scale_kind(i);
		CHECK_MSG(!strcmp(kf_json_str(it, "status"), scale_want(kind)),
			  "request %d (%s): %s: %s", i, kind,
			  kf_json_str(it, "status"), kf_json_str(it, "reason"));
		ok += !strcmp(kind, "right");
		wrong += !strcmp(kind, "wrong");
		syntax += !strcmp(kind, "syntax");
		cJSON_Delete(j);
	}
	/* The server's own count: one farm job per request, each verdict
	 * counted once, none infra_error; the killed worker's job answered
	 * after its take-over; the restart reconnected to. */
	char *m = metrics(s.port);
	CHECK_MSG(prom(m, "kforge_serve_farm_jobs_total") == SERVE_N, "%s", m);
	CHECK(prom(m, "kforge_items_total") == SERVE_N);
	CHECK(prom(m, "kforge_evaluations_total{status=\"ok\"}") == ok);
	CHECK(prom(m, "kforge_evaluations_total{status=\"wrong_answer\"}") ==
	      wrong);
	CHECK(prom(m, "kforge_evaluations_total{status=\"compile_error\"}") ==
	      syntax);
	CHECK(prom(m, "kforge_evaluations_total{status=\"infra_error\"}") == 0);
	double retried = prom(m, "kforge_serve_farm_retried_total");
	double dups = prom(m, "kforge_serve_farm_duplicates_total");
	double reconnects = prom(m, "kforge_serve_farm_reconnects_total");
	CHECK_MSG(retried >= 1, "w1's job was not taken over: %s", m);
	CHECK_MSG(reconnects >= 1, "no reconnect after the restart: %s", m);
	CHECK(prom(m, "kforge_farm_up") == 1);
	CHECK(prom(m, "kforge_farm_queue_depth{backend=\"host\"}") == 0);
	CHECK(prom(m, "kforge_farm_pending{backend=\"host\"}") == 0);
	CHECK(prom(m, "kforge_farm_workers{backend=\"host\"}") == 3);
	CHECK(prom(m, "kforge_farm_retried_total") >= retried);
	CHECK(prom(m, "kforge_scoring_request_seconds_count") == SERVE_N);
	free(m);
	/* kforge farm status: what an operator reads. */
	char *cmd = kf_xasprintf("%s/kforge farm status --redis %s",
				 kf_test_build_dir(), r.url);
	int code = 0;
	char *st = kf_test_shell(cmd, &code);
	CHECK_MSG(code == 0, "%s", st);
	CHECK_CONTAINS(st, "queue host      0 waiting,    0 pending");
	CHECK_CONTAINS(st, "workers    3 alive");
	CHECK_CONTAINS(st, "retried (taken over from a lost worker)");
	/* w4, a host node: backend host, one slot, no GPU. */
	char *w4 = strstr(st, "\n  w4 ");
	CHECK_MSG(w4, "%s", st);
	char wname[32], whost[128], wback[16];
	int slots = -1, gpus = -1;
	CHECK(sscanf(w4, " %31s %127s %15s %d %d", wname, whost, wback, &slots,
		     &gpus) == 5);
	CHECK_STR(wback, "host");
	CHECK(slots == 1 && gpus == 0);
	free(st);
	free(cmd);
	printf("    serve --redis: %d requests over HTTP (%d clients) on 3 "
	       "host workers (w1 SIGKILLed mid-evaluation at %.1f s; w4 "
	       "joined at %.1f s; redis-server SIGKILLed and restarted at "
	       "%.1f s): %d answered once each (%d ok, %d wrong_answer, %d "
	       "compile_error), %.0f retried after the kill, %.0f duplicates "
	       "dropped, %.0f reconnects, %.1f s\n",
	       SERVE_N, SERVE_CLIENTS, at[0], at[1], at[2], SERVE_N, ok, wrong,
	       syntax, retried, dups, reconnects, seconds);
	kf_test_serve_stop(&s);
	for (int i = 0; i < 4; i++)
		stop(w[i], SIGTERM);
	stop(r.pid, SIGTERM);
	for (int i = 0; i < SERVE_N; i++)
		free(run.body[i]);
	pthread_mutex_destroy(&run.lock);
}

struct pending_req {
	int port;
	int status;
	char *body;
};

static void *send_three(void *arg)
{
	struct pending_req *q = arg;
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "deadline_s", 4);
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	for (int i = 0; i < 3; i++) {
		char *src = scale_src(i, "right");
		cJSON *it = cJSON_CreateObject();
		char id[8];
		snprintf(id, sizeof(id), "%c", 'a' + i);
		cJSON_AddStringToObject(it, "id", id);
		cJSON_AddStringToObject(it, "problem_id", "scale");
		cJSON_AddStringToObject(it, "code", src);
		cJSON_AddItemToArray(items, it);
		free(src);
	}
	char *text = cJSON_PrintUnformatted(b);
	q->status = kf_test_http(q->port, "POST", "/v1/score", text, &q->body);
	free(text);
	cJSON_Delete(b);
	return NULL;
}

static void test_farm_redis_serve_metrics(void)
{
	need_redis();
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", cache, 1) == 0);
	free(cache);
	/* Without --redis: the server's own figures, no farm. */
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	char *m = metrics(s.port);
	CHECK(prom(m, "kforge_evaluations_total{status=\"ok\"}") == 0);
	CHECK(prom(m, "kforge_scoring_request_seconds_count") == 0);
	CHECK(prom(m, "kforge_queue_depth") == 0);
	CHECK_MSG(!strstr(m, "kforge_farm_") && !strstr(m, "kforge_serve_farm"),
		  "%s", m);
	free(m);
	kf_test_serve_stop(&s);

	/* A farm with no worker: the request's three jobs wait in its
	 * queue, which /metrics shows. */
	struct redis_proc r = {0};
	redis_dir(&r);
	redis_start(&r);
	const char *extra[] = {"--redis", r.url, NULL};
	kf_test_serve_start(&s, false, extra);
	m = metrics(s.port);
	CHECK_MSG(prom(m, "kforge_farm_up") == 1, "%s", m);
	CHECK(prom(m, "kforge_farm_workers{backend=\"host\"}") == 0);
	CHECK(prom(m, "kforge_farm_queue_depth{backend=\"host\"}") == 0);
	CHECK(prom(m, "kforge_serve_farm_jobs_total") == 0);
	free(m);
	struct pending_req q = {s.port, 0, NULL};
	pthread_t th;
	CHECK(pthread_create(&th, NULL, send_three, &q) == 0);
	double depth = 0;
	for (int i = 0; i < 100 && depth < 3; i++) {
		kf_test_sleep_ms(30);
		m = metrics(s.port);
		depth = prom(m, "kforge_farm_queue_depth{backend=\"host\"}");
		if (depth == 3) {
			CHECK(prom(m, "kforge_farm_pending{backend=\"host\"}") ==
			      0);
			CHECK(prom(m, "kforge_farm_workers{backend=\"host\"}") ==
			      0);
			CHECK(prom(m, "kforge_queue_depth") == 0);
			CHECK(prom(m, "kforge_busy_workers") == 3);
		}
		free(m);
	}
	CHECK_MSG(depth == 3, "the farm's queue depth is %g, not 3", depth);
	/* Nobody takes them: at the request's deadline each item is an
	 * infra_error that names the request and the item, and the jobs
	 * are withdrawn. */
	pthread_join(th, NULL);
	CHECK_MSG(q.status == 200, "%d %s", q.status, q.body);
	cJSON *j = cJSON_Parse(q.body);
	const cJSON *it;
	int n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "items"))
	{
		CHECK_STR(kf_json_str(it, "status"), "infra_error");
		const char *why = kf_json_str(it, "reason");
		char want[64];
		snprintf(want, sizeof(want), "(/v1/score), item '%s'",
			 kf_json_str(it, "id"));
		CHECK_CONTAINS(why, "request 1 ");
		CHECK_CONTAINS(why, want);
		CHECK_CONTAINS(why, "no result from the farm within the "
				    "deadline");
		CHECK_CONTAINS(why, "withdrawn from kforge:jobs:host");
		n++;
	}
	CHECK(n == 3);
	cJSON_Delete(j);
	free(q.body);
	m = metrics(s.port);
	CHECK(prom(m, "kforge_farm_queue_depth{backend=\"host\"}") == 0);
	CHECK(prom(m, "kforge_serve_farm_jobs_total") == 3);
	CHECK(prom(m, "kforge_evaluations_total{status=\"infra_error\"}") == 3);
	CHECK(prom(m, "kforge_scoring_request_seconds_count") == 1);
	free(m);
	/* A worker joins: one host worker, no GPU, a fresh heartbeat. */
	pid_t w = worker_start(&r, "m1");
	char host[128] = "";
	gethostname(host, sizeof(host) - 1);
	char *gpus = kf_xasprintf("kforge_farm_worker_gpus{worker=\"m1\","
				  "host=\"%s\",backend=\"host\"}",
				  host);
	char *age = kf_xasprintf("kforge_farm_worker_heartbeat_age_seconds{"
				 "worker=\"m1\",host=\"%s\",backend=\"host\"}",
				 host);
	double workers = 0;
	for (int i = 0; i < 200 && workers < 1; i++) {
		kf_test_sleep_ms(30);
		m = metrics(s.port);
		workers = prom(m, "kforge_farm_workers{backend=\"host\"}");
		if (workers == 1) {
			CHECK_MSG(prom(m, gpus) == 0, "%s", m);
			CHECK(prom(m, age) >= 0 && prom(m, age) < 10);
		}
		free(m);
	}
	CHECK(workers == 1);
	free(gpus);
	free(age);
	/* Redis gone: the farm is down, its gauges absent, the server's
	 * own figures still there. */
	stop(w, SIGTERM);
	stop(r.pid, SIGTERM);
	m = metrics(s.port);
	CHECK_MSG(prom(m, "kforge_farm_up") == 0, "%s", m);
	CHECK(isnan(prom(m, "kforge_farm_queue_depth{backend=\"host\"}")));
	CHECK(prom(m, "kforge_serve_farm_jobs_total") == 3);
	free(m);
	kf_test_serve_stop(&s);
}

static void test_farm_redis_serve_bad_url(void)
{
	char serve[512];
	snprintf(serve, sizeof(serve), "%s/kforge-serve", kf_test_build_dir());
	if (!kf_is_executable(serve))
		SKIP("%s is not built (no libmicrohttpd here)", serve);
	int code;
	char *e = cli_err("serve --port 0 --redis localhost:6379", &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "--redis: 'localhost:6379' is not a Redis URL");
	free(e);
	if (!kf_redis_available())
		SKIP("kforge was built without hiredis (make deps, then make)");
	int port = free_port();
	char *args = kf_xasprintf("serve --port 0 --db %s/s.db --redis "
				  "redis://127.0.0.1:%d",
				  kf_test_tmpdir(), port);
	e = cli_err(args, &code);
	CHECK_MSG(code == 2, "exit %d: %s", code, e);
	char *want = kf_xasprintf("--redis: redis://127.0.0.1:%d: cannot "
				  "connect",
				  port);
	CHECK_CONTAINS(e, want);
	free(want);
	free(e);
	free(args);
	args = kf_xasprintf("optimize %s --policy replay --from "
			    "%s/candidates/same.c --db %s/o.db --redis "
			    "redis://127.0.0.1:%d",
			    ROWSUM, ROWSUM, kf_test_tmpdir(), port);
	e = cli_err(args, &code);
	CHECK_MSG(code != 0, "exit %d: %s", code, e);
	CHECK_CONTAINS(e, "--redis: redis://127.0.0.1");
	CHECK_CONTAINS(e, "cannot connect");
	free(e);
	free(args);
}

KF_TESTS(farm_redis) = {
    KF_TEST(test_farm_redis_url_parse),
    KF_TEST(test_farm_redis_cli_bad_input),
    KF_TEST(test_farm_redis_survives_kills_and_a_restart),
    KF_TEST(test_farm_redis_caps_attempts),
    KF_TEST(test_farm_redis_bench_on_a_worker),
    KF_TEST(test_farm_redis_serve_bad_url),
    KF_TEST(test_farm_redis_serve_metrics),
    KF_TEST(test_farm_redis_serve_survives_kills_and_a_restart),
    KF_TESTS_END,
};
