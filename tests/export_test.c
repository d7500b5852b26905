/*
 * export_test.c: `kforge export` as a user runs it: sft, dpo and rft JSONL
 * from a store of real runs (the replay policy over the shipped candidates
 * of three tasks, built once and kept under the build directory), the
 * split by task, deduplication, errors, the spans against hand-marked
 * kernels, and loading with Python's `datasets` where it is installed.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/export.h>
#include <kforge/prompt.h>
#include <kforge/store.h>
#include <kforge/task.h>

#include "harness.h"

/* The tasks of the store: row_sum, gelu and transpose, each with a fast, a
 * naive and a wrong candidate; gelu has a second run that replays fast.c
 * reformatted, with a comment (a duplicate). */
static const char *const tasks[] = {"reduction/row_sum", "activation/gelu",
				    "layout/transpose"};
#define N_TASKS 3
/* Each made smaller (kf_test_small_task): 10 evaluations took 2 minutes at
 * the shipped sizes, 12 s at these. */
static const char *const small_dims[] = {"{\"B\": 512, \"N\": 1024}",
					 "{\"N\": 131072}",
					 "{\"M\": 512, \"N\": 640}"};

/* Where a task's small copy is (made by store()). */
static char *small_task(const char *task_id)
{
	char *dir = kf_test_data_dir("export");
	char *p = kf_xasprintf("%s/small/%s", dir, task_id);
	free(dir);
	return p;
}

struct outcome {
	int code;
	char *out; /* stdout and stderr together */
};

static struct outcome kforge_v(const char *const *args)
{
	int ec = 0;
	char *out = kf_test_kforge(args, 300000, 64 << 20, &ec);
	return (struct outcome){ec, out};
}

#define KFORGE(...) kforge_v((const char *const[]){__VA_ARGS__, NULL})

/* What the store is made from: the schema and the replayed sources, as a
 * SHA-256; a store made from other inputs is made again. */
static void inputs_key(char hex[65])
{
	struct kf_sha256 h;
	kf_sha256_init(&h);
	char schema[32];
	snprintf(schema, sizeof(schema), "schema %d\n", KF_STORE_SCHEMA);
	kf_sha256_update(&h, schema, strlen(schema));
	for (int i = 0; i < N_TASKS; i++)
		kf_sha256_update(&h, small_dims[i], strlen(small_dims[i]) + 1);
	const char *names[] = {"fast.c", "naive.c", "wrong.c"};
	for (int i = 0; i < N_TASKS; i++)
		for (int k = 0; k < 3; k++) {
			char *p = kf_xasprintf("tasks/%s/candidates/%s",
					       tasks[i], names[k]);
			char *t = kf_test_read_text(p);
			kf_sha256_update(&h, t, strlen(t) + 1);
			free(t);
			free(p);
		}
	kf_sha256_final_hex(&h, hex);
}

/* Replays the candidates in dir for task into the store at db. */
static void replay(const char *task, const char *dir, const char *db)
{
	struct outcome o = KFORGE("optimize", task, "--policy", "replay",
				  "--from", dir, "--budget", "8", "--time-cap",
				  "0.2", "--trials", "5", "--db", db);
	CHECK_MSG(o.code == 0, "replay of %s: %s", dir, o.out);
	free(o.out);
}

/*
 * The shared store: k.db in kf_test_data_dir("export") (make check reads
 * make test's), made by the first case
 * that needs it (about a minute) and made again when its inputs change (the
 * key file beside it); a lock keeps two test runs from making it at once.
 * Returns the path of the case's own copy; caller frees.
 */
static char *store(void)
{
	struct kf_err err = KF_ERR_INIT;
	char *dir = kf_test_data_dir("export");
	char *db = kf_path_join(dir, "k.db");
	char *lock = kf_path_join(dir, "lock");
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
	char *keyfile = kf_path_join(dir, "key");
	char want[65];
	inputs_key(want);
	char *have = kf_file_exists(keyfile) && kf_file_exists(db)
			 ? kf_test_read_text(keyfile)
			 : kf_xstrdup("");
	if (strcmp(have, want)) {
		/* The cache must be absolute: the sandbox binds it. */
		char *abs = realpath(dir, NULL);
		CHECK(abs != NULL);
		char *cache = kf_path_join(abs, "cache");
		setenv("KFORGE_CACHE", cache, 1);
		free(cache);
		free(abs);
		char *fresh = kf_path_join(dir, "k.db.new");
		char *side[] = {kf_xasprintf("%s-wal", fresh),
				kf_xasprintf("%s-shm", fresh)};
		unlink(fresh);
		unlink(side[0]);
		unlink(side[1]);
		for (int i = 0; i < N_TASKS; i++) {
			char *cands = kf_xasprintf("%s/cands/%d", dir, i);
			CHECK(kf_mkdir_p(cands, &err) == 0);
			const char *names[] = {"fast.c", "naive.c", "wrong.c"};
			for (int k = 0; k < 3; k++) {
				char *from =
				    kf_xasprintf("tasks/%s/candidates/%s",
						 tasks[i], names[k]);
				char *to = kf_path_join(cands, names[k]);
				kf_test_copy_file(from, to);
				free(from);
				free(to);
			}
			char *real = kf_xasprintf("tasks/%s", tasks[i]);
			char *small = kf_path_join(dir, "small");
			char *task =
			    kf_test_small_task(real, small, small_dims[i]);
			replay(task, cands, fresh);
			free(task);
			free(small);
			free(real);
			free(cands);
		}
		/* gelu's fast.c again, reformatted and commented. */
		char *src =
		    kf_test_read_text("tasks/activation/gelu/candidates/fast.c");
		struct kf_strbuf sb = KF_STRBUF_INIT;
		kf_strbuf_addstr(&sb, "/* the same kernel, reformatted */\n");
		for (const char *p = src; *p; p++)
			kf_strbuf_addstr(&sb,
					 *p == '\t' ? "    " : (char[]){*p, 0});
		char *dup = kf_xasprintf("%s/cands/dup", dir);
		CHECK(kf_mkdir_p(dup, &err) == 0);
		char *to = kf_path_join(dup, "fast_again.c");
		kf_test_write_text(to, kf_strbuf_str(&sb));
		char *gelu = small_task("activation/gelu");
		replay(gelu, dup, fresh);
		free(gelu);
		/* One file: the WAL checkpointed into it. */
		struct outcome o = KFORGE("runs", "--db", fresh);
		CHECK(o.code == 0);
		free(o.out);
		unlink(db);
		CHECK(rename(fresh, db) == 0);
		char *wal = kf_xasprintf("%s-wal", db);
		char *shm = kf_xasprintf("%s-shm", db);
		unlink(wal);
		unlink(shm);
		rename(side[0], wal);
		rename(side[1], shm);
		free(wal);
		free(shm);
		free(to);
		free(dup);
		free(src);
		kf_strbuf_release(&sb);
		free(fresh);
		free(side[0]);
		free(side[1]);
		kf_test_write_text(keyfile, want);
	}
	free(have);
	free(keyfile);
	flock(fd, LOCK_UN);
	close(fd);
	/* Each case reads its own copy: opening a store may write to it. */
	char *copy = kf_path_join(kf_test_tmpdir(), "k.db");
	kf_test_copy_file(db, copy);
	char *wal = kf_xasprintf("%s-wal", db);
	if (kf_file_exists(wal)) {
		char *cw = kf_xasprintf("%s-wal", copy);
		kf_test_copy_file(wal, cw);
		free(cw);
	}
	free(wal);
	free(lock);
	free(db);
	free(dir);
	return copy;
}

/* The lines of a JSONL text, parsed; each must be a JSON object. */
static cJSON *lines_of(const char *text)
{
	cJSON *arr = cJSON_CreateArray();
	const char *p = text;
	int n = 0;
	while (*p) {
		const char *e = strchr(p, '\n');
		CHECK_MSG(e != NULL, "line %d does not end in a newline",
			  n + 1);
		char *line = kf_xmalloc((size_t)(e - p) + 1);
		memcpy(line, p, (size_t)(e - p));
		line[e - p] = 0;
		cJSON *j = cJSON_Parse(line);
		CHECK_MSG(cJSON_IsObject(j), "line %d is not a JSON object: %s",
			  n + 1, line);
		cJSON_AddItemToArray(arr, j);
		free(line);
		n++;
		p = e + 1;
	}
	return arr;
}

/* Runs kforge export with the arguments, -o OUT in the case's directory;
 * returns the file's lines. */
static cJSON *export_lines(const char *const *args, char **log)
{
	char *out = kf_path_join(kf_test_tmpdir(), "out.jsonl");
	const char *argv[32];
	int n = 0;
	argv[n++] = "export";
	for (; args[n - 1]; n++)
		argv[n] = args[n - 1];
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n] = NULL;
	struct outcome o = kforge_v(argv);
	CHECK_MSG(o.code == 0, "%s", o.out);
	char *text = kf_test_read_text(out);
	cJSON *lines = lines_of(text);
	free(text);
	free(out);
	if (log)
		*log = o.out;
	else
		free(o.out);
	return lines;
}

#define EXPORT(log, ...)                                                       \
	export_lines((const char *const[]){__VA_ARGS__, NULL}, log)

static const cJSON *get(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	CHECK_MSG(v != NULL, "no \"%s\"", key);
	return v;
}

/* Checks a message list: the roles in order, each content a string. */
static void check_roles(const cJSON *msgs, const char *const *roles, int n)
{
	CHECK(cJSON_IsArray(msgs));
	CHECK_MSG(cJSON_GetArraySize(msgs) == n, "%d messages, not %d",
		  cJSON_GetArraySize(msgs), n);
	for (int i = 0; i < n; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i);
		CHECK_STR(kf_json_str(m, "role"), roles[i]);
		CHECK(kf_json_str(m, "content") != NULL);
	}
}

/* The prompt kforge's LLM policy shows first for a task (the store's small
 * copy) on the host. */
static void first_turn(const char *task_id, char **system, char **user)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	char *path = small_task(task_id);
	CHECK_MSG(kf_task_load(path, &t, &err) == 0, "%s", err.msg);
	kf_task_select_backend(t, "host");
	CHECK_MSG(kf_prompt_first_turn(t, "host", system, user, NULL, &err) ==
		      0,
		  "%s", err.msg);
	kf_task_free(t);
	free(path);
}

static int task_index(const char *id)
{
	for (int i = 0; i < N_TASKS; i++)
		if (id && !strcmp(id, tasks[i]))
			return i;
	CHECK_MSG(0, "unexpected task %s", id ? id : "(null)");
	return -1;
}

/* The code of an assistant message, as kforge would extract it. */
static char *code_of(const cJSON *msgs)
{
	const cJSON *m = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	CHECK_STR(kf_json_str(m, "role"), "assistant");
	char *code = kf_prompt_extract_code(kf_json_str(m, "content"), 1 << 20);
	CHECK_MSG(code != NULL, "no code block in: %s",
		  kf_json_str(m, "content"));
	return code;
}

static char *shipped(const char *task_id, const char *name)
{
	char *p = kf_xasprintf("tasks/%s/candidates/%s", task_id, name);
	char *t = kf_test_read_text(p);
	free(p);
	return t;
}

/* Each task's line: the fastest correct candidate under the prompt the
 * LLM policy would show, its spans inside the reply. */
static void test_export_sft_best_kernel_per_task(void)
{
	char *db = store();
	cJSON *lines = EXPORT(NULL, "--format", "sft", "--store", db);
	CHECK(cJSON_GetArraySize(lines) == N_TASKS);
	bool seen[N_TASKS] = {false};
	const cJSON *l;
	cJSON_ArrayForEach(l, lines)
	{
		const char *task = kf_json_str(l, "task");
		int t = task_index(task);
		CHECK(!seen[t]);
		seen[t] = true;
		const cJSON *msgs = get(l, "messages");
		static const char *const roles[] = {"system", "user",
						    "assistant"};
		check_roles(msgs, roles, 3);
		char *system = NULL, *user = NULL;
		first_turn(task, &system, &user);
		CHECK_STR(kf_json_str(cJSON_GetArrayItem(msgs, 0), "content"),
			  system);
		CHECK_STR(kf_json_str(cJSON_GetArrayItem(msgs, 1), "content"),
			  user);
		char want[80];
		snprintf(want, sizeof(want), "# Task %s", task);
		CHECK_CONTAINS(user, want);
		/* The shipped fast.c is the fastest correct one of each. */
		char *code = code_of(msgs);
		char *fast = shipped(task, "fast.c");
		CHECK(kf_prompt_same_code(code, fast));
		CHECK_STR(kf_json_str(l, "backend"), "host");
		double sp = kf_json_num(l, "speedup", 0);
		const cJSON *ci = get(l, "speedup_ci95");
		CHECK(sp > 1);
		CHECK(kf_json_num(l, "run", 0) >= 1 &&
		      kf_json_num(l, "candidate", 0) >= 1);
		CHECK(cJSON_GetArrayItem(ci, 0)->valuedouble <= sp &&
		      sp <= cJSON_GetArrayItem(ci, 1)->valuedouble);
		/* Spans lie inside the reply, sorted, of the named kinds. */
		const char *content =
		    kf_json_str(cJSON_GetArrayItem(msgs, 2), "content");
		size_t cps = 0;
		for (const char *p = content; *p; p++)
			cps += ((unsigned char)*p & 0xc0) != 0x80;
		const cJSON *spans = get(l, "spans");
		CHECK(cJSON_IsArray(spans));
		double prev = 0;
		const cJSON *s;
		cJSON_ArrayForEach(s, spans)
		{
			double a = kf_json_num(s, "start", -1);
			double b = kf_json_num(s, "end", -1);
			CHECK(a >= prev && a < b && b <= (double)cps);
			prev = a;
			const char *k = kf_json_str(s, "kind");
			bool known = false;
			for (int i = 0; i < KF_SPAN_KINDS; i++)
				known =
				    known ||
				    (k && !strcmp(k, kf_span_kind_name((
							 enum kf_span_kind)i)));
			CHECK_MSG(known, "kind %s", k ? k : "(null)");
		}
		if (t == 1) {
			/* gelu's fast.c: `restrict` twice, nothing else. */
			CHECK(cJSON_GetArraySize(spans) == 2);
			cJSON_ArrayForEach(s, spans)
			{
				CHECK_STR(kf_json_str(s, "kind"),
					  "memory_qualifier");
				size_t a = (size_t)kf_json_num(s, "start", 0);
				CHECK(!strncmp(content + a, "restrict", 8));
				CHECK(kf_json_num(s, "end", 0) ==
				      (double)a + 8);
			}
		}
		if (t == 2) {
			/* transpose's fast.c: SSE intrinsics. */
			int intr = 0;
			cJSON_ArrayForEach(s, spans)
			{
				intr += !strcmp(kf_json_str(s, "kind"),
						"intrinsic");
			}
			CHECK(intr >= 8);
		}
		free(fast);
		free(code);
		free(system);
		free(user);
	}
	cJSON_Delete(lines);
	free(db);
}

/* Pairs under one prompt: a correct kernel over an incorrect one, or over
 * a correct one measured slower beyond both intervals. */
static void test_export_dpo_chosen_beats_rejected(void)
{
	char *db = store();
	cJSON *lines = EXPORT(NULL, "--format", "dpo", "--store", db);
	int pairs[N_TASKS] = {0}, over_wrong[N_TASKS] = {0};
	const cJSON *l;
	cJSON_ArrayForEach(l, lines)
	{
		int t = task_index(kf_json_str(l, "task"));
		static const char *const proles[] = {"system", "user"};
		static const char *const aroles[] = {"assistant"};
		check_roles(get(l, "prompt"), proles, 2);
		check_roles(get(l, "chosen"), aroles, 1);
		check_roles(get(l, "rejected"), aroles, 1);
		char *system = NULL, *user = NULL;
		first_turn(tasks[t], &system, &user);
		CHECK_STR(kf_json_str(cJSON_GetArrayItem(get(l, "prompt"), 1),
				      "content"),
			  user);
		char *chosen = code_of(get(l, "chosen"));
		char *rejected = code_of(get(l, "rejected"));
		CHECK(!kf_prompt_same_code(chosen, rejected));
		const cJSON *cm = get(l, "chosen_meta");
		const cJSON *rm = get(l, "rejected_meta");
		CHECK_STR(kf_json_str(cm, "status"), "ok");
		double cs = kf_json_num(cm, "speedup", NAN);
		CHECK(isfinite(cs));
		CHECK(cJSON_IsArray(get(cm, "speedup_ci95")));
		CHECK(cJSON_IsArray(get(rm, "speedup_ci95")));
		get(rm, "check");
		if (!strcmp(kf_json_str(rm, "status"), "ok")) {
			double rs = kf_json_num(rm, "speedup", NAN);
			CHECK_MSG(cs > rs, "chosen %g <= rejected %g", cs, rs);
			double clo =
			    cJSON_GetArrayItem(get(cm, "speedup_ci95"), 0)
				->valuedouble;
			double rhi =
			    cJSON_GetArrayItem(get(rm, "speedup_ci95"), 1)
				->valuedouble;
			CHECK(clo > rhi);
		} else {
			CHECK_STR(kf_json_str(rm, "status"), "wrong_answer");
			CHECK(kf_json_str(rm, "check") != NULL);
			char *wrong = shipped(tasks[t], "wrong.c");
			CHECK(kf_prompt_same_code(rejected, wrong));
			free(wrong);
			over_wrong[t]++;
		}
		pairs[t]++;
		free(chosen);
		free(rejected);
		free(system);
		free(user);
	}
	for (int t = 0; t < N_TASKS; t++) {
		/* fast and naive are correct: both beat wrong.c. */
		CHECK_MSG(over_wrong[t] == 2, "%s: %d pairs over wrong.c",
			  tasks[t], over_wrong[t]);
		CHECK(pairs[t] >= 2 && pairs[t] <= 3);
	}
	cJSON_Delete(lines);
	free(db);
}

/* Every scored completion once, with its reward; a correct one above an
 * incorrect one of its task; another design when asked. */
static void test_export_rft_rewards_each_completion(void)
{
	char *db = store();
	char *summary = NULL;
	cJSON *lines = EXPORT(&summary, "--format", "rft", "--store", db);
	/* 3 candidates of 3 tasks; gelu's reformatted copy is left out. */
	CHECK_MSG(cJSON_GetArraySize(lines) == 9, "%d lines",
		  cJSON_GetArraySize(lines));
	CHECK_CONTAINS(summary, "9 records of 3 tasks");
	CHECK_CONTAINS(summary,
		       "10 evaluated candidates of 4 runs; left out: 1 "
		       "duplicate");
	double lo_ok[N_TASKS], hi_bad[N_TASKS];
	for (int t = 0; t < N_TASKS; t++)
		lo_ok[t] = INFINITY, hi_bad[t] = -INFINITY;
	const cJSON *l;
	cJSON_ArrayForEach(l, lines)
	{
		int t = task_index(kf_json_str(l, "task"));
		static const char *const proles[] = {"system", "user"};
		static const char *const aroles[] = {"assistant"};
		check_roles(get(l, "prompt"), proles, 2);
		check_roles(get(l, "completion"), aroles, 1);
		double r = kf_json_num(l, "reward", NAN);
		CHECK(isfinite(r));
		CHECK_STR(kf_json_str(l, "reward_design"), "log_speedup");
		const char *st = kf_json_str(l, "status");
		if (!strcmp(st, "ok")) {
			lo_ok[t] = fmin(lo_ok[t], r);
			/* log_speedup: the log of the speedup within
			 * [-3, 3] (docs/rewards.md), */
			double want = fmax(
			    -3, fmin(3, log(kf_json_num(l, "speedup", 0))));
			CHECK(fabs(r - want) < 1e-9);
		} else {
			/* and -3 - 1 for an incorrect kernel. */
			CHECK(r == -4);
			hi_bad[t] = fmax(hi_bad[t], r);
		}
	}
	for (int t = 0; t < N_TASKS; t++)
		CHECK(lo_ok[t] > hi_bad[t] && isfinite(hi_bad[t]));
	cJSON_Delete(lines);
	free(summary);

	lines = EXPORT(NULL, "--format", "rft", "--store", db, "--reward",
		       "leap_rank");
	cJSON_ArrayForEach(l, lines)
	{
		CHECK_STR(kf_json_str(l, "reward_design"), "leap_rank");
		double r = kf_json_num(l, "reward", NAN);
		CHECK(r >= -1 && r <= 1);
	}
	cJSON_Delete(lines);
	free(db);
}

/* The same code, reformatted or commented, counts once; only within what
 * is exported. */
static void test_export_dedup_by_normalised_source(void)
{
	char hex1[65], hex2[65], hex3[65];
	kf_prompt_code_hash("int f(int x)\n{\n\treturn x + 1; // one\n}\n",
			    hex1);
	kf_prompt_code_hash("/* f */ int f(int x) { return x+1; }", hex2);
	kf_prompt_code_hash("int f(int x) { return x + 2; }", hex3);
	CHECK_STR(hex1, hex2);
	CHECK(strcmp(hex1, hex3) != 0);
	CHECK(strlen(hex1) == 64);

	char *db = store();
	char *summary = NULL;
	/* Runs 2 (gelu) and 4 (its copy): the copy is left out ... */
	cJSON *lines =
	    EXPORT(&summary, "--format", "rft", "2", "4", "--db", db);
	CHECK(cJSON_GetArraySize(lines) == 3);
	CHECK_CONTAINS(summary, "left out: 1 duplicate,");
	const cJSON *l;
	cJSON_ArrayForEach(l, lines) CHECK(kf_json_num(l, "run", 0) == 2);
	cJSON_Delete(lines);
	free(summary);
	/* ... and run 4 alone has it. */
	lines = EXPORT(&summary, "--format", "sft", "4", "--db", db);
	CHECK(cJSON_GetArraySize(lines) == 1);
	CHECK_CONTAINS(summary, "left out: 0 duplicates");
	char *code = code_of(get(cJSON_GetArrayItem(lines, 0), "messages"));
	CHECK_CONTAINS(code, "/* the same kernel, reformatted */");
	free(code);
	cJSON_Delete(lines);
	free(summary);
	free(db);
}

/* --split writes OUT.train.jsonl and OUT.test.jsonl, no task in both, the
 * same files for the same seed. */
static void test_export_split_keeps_tasks_apart(void)
{
	/* The rule itself: round(f * n) tasks, at least one each side. */
	const char *ids[] = {"a/1", "a/2", "a/3", "b/1", "b/2",
			     "c/1", "c/2", "c/3", "d/1", "d/2"};
	bool t1[10], t2[10];
	int n1 = 0, differ = 0;
	kf_export_split(ids, 10, 0.3, 42, t1);
	kf_export_split(ids, 10, 0.3, 42, t2);
	for (int i = 0; i < 10; i++) {
		CHECK(t1[i] == t2[i]);
		n1 += t1[i];
	}
	CHECK(n1 == 3);
	for (uint64_t seed = 1; seed < 20; seed++) {
		kf_export_split(ids, 10, 0.3, seed, t2);
		for (int i = 0; i < 10; i++)
			differ += t1[i] != t2[i];
	}
	CHECK(differ > 0);
	kf_export_split(ids, 2, 0.01, 0, t1);
	CHECK(t1[0] + t1[1] == 1);
	kf_export_split(ids, 2, 0.99, 0, t1);
	CHECK(t1[0] + t1[1] == 1);
	kf_export_split(ids, 1, 0.5, 0, t1);
	CHECK(!t1[0]);

	char *db = store();
	char *out = kf_path_join(kf_test_tmpdir(), "d.jsonl");
	char *train = kf_path_join(kf_test_tmpdir(), "d.train.jsonl");
	char *test = kf_path_join(kf_test_tmpdir(), "d.test.jsonl");
	const char *formats[] = {"sft", "dpo", "rft"};
	for (int f = 0; f < 3; f++) {
		struct outcome o =
		    KFORGE("export", "--format", formats[f], "--store", db,
			   "--split", "test=0.34", "--seed", "7", "-o", out);
		CHECK_MSG(o.code == 0, "%s", o.out);
		CHECK_CONTAINS(o.out, "train ");
		CHECK_CONTAINS(o.out, "1 task to");
		CHECK(!kf_file_exists(out));
		char *a = kf_test_read_text(train), *b = kf_test_read_text(test);
		cJSON *la = lines_of(a), *lb = lines_of(b);
		CHECK(cJSON_GetArraySize(la) > 0 && cJSON_GetArraySize(lb) > 0);
		bool in_train[N_TASKS] = {false}, in_test[N_TASKS] = {false};
		const cJSON *l;
		cJSON_ArrayForEach(l, la)
		    in_train[task_index(kf_json_str(l, "task"))] = true;
		cJSON_ArrayForEach(l, lb)
		    in_test[task_index(kf_json_str(l, "task"))] = true;
		int n_test = 0;
		for (int t = 0; t < N_TASKS; t++) {
			CHECK_MSG(!(in_train[t] && in_test[t]),
				  "%s in both splits", tasks[t]);
			CHECK(in_train[t] || in_test[t]);
			n_test += in_test[t];
		}
		CHECK(n_test == 1); /* round(0.34 * 3) */
		/* The same seed, the same files. */
		o = KFORGE("export", "--format", formats[f], "--store", db,
			   "--split", "test=0.34", "--seed", "7", "-o", out);
		CHECK(o.code == 0);
		free(o.out);
		char *a2 = kf_test_read_text(train), *b2 = kf_test_read_text(test);
		CHECK_STR(a, a2);
		CHECK_STR(b, b2);
		free(a), free(b), free(a2), free(b2);
		cJSON_Delete(la), cJSON_Delete(lb);
	}
	free(out), free(train), free(test);
	free(db);
}

/* Bad input: exit 2, one line naming the flag, file or run and why, and
 * nothing written. */
static void test_export_errors_name_the_flag(void)
{
	char *db = store();
	char *out = kf_path_join(kf_test_tmpdir(), "e.jsonl");
	char *missing = kf_path_join(kf_test_tmpdir(), "none.db");
	kf_test_write_text(out, "old\n");
	struct {
		const char *args[14];
		const char *want;
	} cases[] = {
	    {{"export", "--format", "csv", "--store", db, "-o", out, NULL},
	     "--format: 'csv' is not a format (sft, dpo, rft, jsonl)"},
	    {{"export", "--store", db, "-o", out, NULL},
	     "--format is required"},
	    {{"export", "--format", "sft", "--store", missing, "-o", out, NULL},
	     "none.db: no such store"},
	    {{"export", "--format", "sft", "99", "--db", db, "-o", out, NULL},
	     "no run 99"},
	    {{"export", "--format", "dpo", "1", "x", "--db", db, "-o", out,
	      NULL},
	     "export: 'x' is not a run id"},
	    {{"export", "--format", "sft", "--store", db, "--split", "0.2",
	      "-o", out, NULL},
	     "--split: '0.2' is not test=F"},
	    {{"export", "--format", "sft", "--store", db, "--split", "test=1",
	      "-o", out, NULL},
	     "--split: 'test=1' is not test=F"},
	    {{"export", "--format", "sft", "--store", db, "--split", "test=0.2",
	      NULL},
	     "--split needs -o OUT.jsonl"},
	    {{"export", "--format", "sft", "--store", db, "--reward",
	      "log_speedup", "-o", out, NULL},
	     "--reward applies to --format rft only"},
	    {{"export", "--format", "rft", "--store", db, "--reward", "nope",
	      "-o", out, NULL},
	     "--reward: "},
	    {{"export", "--format", "rft", "--store", db, "--reward-params",
	      "[1]", "-o", out, NULL},
	     "--reward-params: not a JSON object"},
	    {{"export", "--format", "sft", "--store", db, "--db", db, "-o", out,
	      NULL},
	     "--db and --store both name the store"},
	    {{"export", "--format", "sft", "--store", db, "-o",
	      "/nonexistent/dir/x.jsonl", NULL},
	     "-o: /nonexistent/dir/x.jsonl.tmp."},
	    {{"export", "--format", "jsonl", "--db", db, "-o", out, NULL},
	     "--format jsonl: expected one RUN"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome o = kforge_v(cases[i].args);
		CHECK_MSG(o.code == 2, "case %zu exited %d: %s", i, o.code,
			  o.out);
		CHECK_CONTAINS(o.out, cases[i].want);
		CHECK_MSG(!strchr(o.out, '\n') || !strchr(o.out, '\n')[1],
			  "case %zu: more than one line: %s", i, o.out);
		free(o.out);
		char *t = kf_test_read_text(out);
		CHECK_STR(t, "old\n");
		free(t);
	}
	CHECK(!kf_file_exists(missing));
	struct outcome o = KFORGE("export", "--help");
	CHECK(o.code == 0);
	CHECK_CONTAINS(o.out, "usage: kforge export --format sft|dpo|rft");
	free(o.out);
	o = KFORGE("--help");
	CHECK(o.code == 0);
	CHECK_CONTAINS(o.out, "  export    training datasets from the store "
			      "(docs/export.md)");
	free(o.out);
	/* The run's own JSONL is still there. */
	o = KFORGE("export", "1", "--format", "jsonl", "--db", db);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "{\"run\":{");
	free(o.out);
	free(out);
	free(missing);
	free(db);
}

/* Hand-marked spans of a CUDA kernel (code points, after a non-ASCII
 * comment) and of a host kernel (bytes), checked exactly. */
static const char hand_cu[] =
    "// Größe – naïve row sum: __syncthreads() in a comment is no span\n"
    "#include <kforge/kernel.h>\n"
    "__constant__ float scale[4];\n"
    "__global__ void __launch_bounds__(256)\n"
    "k(const float *__restrict__ x, float *y, int n)\n"
    "{\n"
    "\textern __shared__ float buf[];\n"
    "\tconst char *s = \"__syncthreads() é\";\n"
    "\tfloat v = __ldg(x + threadIdx.x);\n"
    "\tv = __shfl_down_sync(0xffffffffu, v, 16);\n"
    "\t__syncthreads();\n"
    "\tatomicAdd(y, __expf(v));\n"
    "\tcg::this_grid().sync();\n"
    "}\n"
    "int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out, "
    "void *stream)\n"
    "{\n"
    "\tk<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(in[0].data, "
    "out[0].data, n);\n"
    "\treturn 0;\n"
    "}\n";

struct hand_span {
	int start, end;
	const char *kind, *text;
};

/* Offsets in "```cuda\n" + hand_cu + "\n```", in code points. */
static const struct hand_span hand_cu_spans[] = {
    {101, 113, "memory_qualifier", "__constant__"},
    {130, 437, "kernel_body", NULL},
    {146, 168, "launch_config", "__launch_bounds__(256)"},
    {171, 184, "memory_qualifier", "const float *"},
    {184, 196, "memory_qualifier", "__restrict__"},
    {220, 250, "shared_memory", "extern __shared__ float buf[];"},
    {252, 264, "memory_qualifier", "const char *"},
    {300, 322, "intrinsic", "__ldg(x + threadIdx.x)"},
    {329, 365, "intrinsic", "__shfl_down_sync(0xffffffffu, v, 16)"},
    {368, 383, "synchronization", "__syncthreads()"},
    {386, 409, "intrinsic", "atomicAdd(y, __expf(v))"},
    {399, 408, "intrinsic", "__expf(v)"},
    {428, 434, "synchronization", "sync()"},
    {525, 576, "launch_config",
     "<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>"},
};

static const char hand_c[] =
    "#include <immintrin.h>\n"
    "void f(const float *restrict x, float *restrict y, long n)\n"
    "{\n"
    "#pragma omp parallel for schedule(static) \\\n"
    "\tnum_threads(2)\n"
    "\tfor (long i = 0; i < n; i += 8)\n"
    "\t\t_mm256_storeu_ps(y + i, _mm256_loadu_ps(x + i));\n"
    "\t#pragma omp barrier\n"
    "\t_mm_sfence(); /* _mm_pause() */\n"
    "}\n";

/* Byte offsets in hand_c. */
static const struct hand_span hand_c_spans[] = {
    {43, 51, "memory_qualifier", "restrict"},
    {62, 70, "memory_qualifier", "restrict"},
    {84, 143, "launch_config",
     "#pragma omp parallel for schedule(static) \\\n\tnum_threads(2)"},
    {179, 226, "intrinsic", "_mm256_storeu_ps(y + i, _mm256_loadu_ps(x + i))"},
    {203, 225, "intrinsic", "_mm256_loadu_ps(x + i)"},
    {229, 248, "synchronization", "#pragma omp barrier"},
    {250, 262, "synchronization", "_mm_sfence()"},
};

/* The byte offset of code point cp in s. */
static size_t byte_at(const char *s, int cp)
{
	size_t b = 0;
	for (int seen = 0; s[b]; b++) {
		if (((unsigned char)s[b] & 0xc0) != 0x80 && seen++ == cp)
			return b;
	}
	return b;
}

static void test_export_spans_match_hand_marked_kernels(void)
{
	struct kf_task t;
	memset(&t, 0, sizeof(t));
	size_t at = 0;
	char *content = kf_prompt_code_block(&t, "cuda", hand_cu, &at);
	CHECK(!strncmp(content, "```cuda\n", 8) && at == 8);
	char *back = kf_prompt_extract_code(content, 1 << 20);
	CHECK(back && !strncmp(back, hand_cu, strlen(hand_cu) - 1));
	free(back);
	CHECK(kf_utf8_valid(content));
	cJSON *spans = kf_spans_json(content, at, true);
	size_t n = sizeof(hand_cu_spans) / sizeof(hand_cu_spans[0]);
	CHECK_MSG((size_t)cJSON_GetArraySize(spans) == n, "%d spans: %s",
		  cJSON_GetArraySize(spans), kf_json_print(spans));
	for (size_t i = 0; i < n; i++) {
		const struct hand_span *h = &hand_cu_spans[i];
		const cJSON *s = cJSON_GetArrayItem(spans, (int)i);
		CHECK_MSG(kf_json_num(s, "start", -1) == h->start &&
			      kf_json_num(s, "end", -1) == h->end,
			  "span %zu: [%g, %g) %s, not [%d, %d)", i,
			  kf_json_num(s, "start", -1),
			  kf_json_num(s, "end", -1), kf_json_str(s, "kind"),
			  h->start, h->end);
		CHECK_STR(kf_json_str(s, "kind"), h->kind);
		size_t a = byte_at(content, h->start),
		       b = byte_at(content, h->end);
		if (h->text) {
			CHECK(b - a == strlen(h->text));
			CHECK(!strncmp(content + a, h->text, b - a));
		} else {
			CHECK(!strncmp(content + a, "__global__", 10));
			CHECK(content[b - 1] == '}' &&
			      !strncmp(content + b, "\nint kf_entry", 13));
		}
	}
	/* Python's str indexing gives the same text for each span. */
	if (system("python3 -c 'pass' >/dev/null 2>&1") == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "content", content);
		cJSON_AddItemToObject(doc, "spans", spans);
		cJSON *want = cJSON_AddArrayToObject(doc, "want");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(
			    want, cJSON_CreateString(hand_cu_spans[i].text
							 ? hand_cu_spans[i].text
							 : "__global__"));
		char *path = kf_path_join(kf_test_tmpdir(), "spans.json");
		char *text = kf_json_print(doc);
		kf_test_write_text(path, text);
		free(text);
		char *cmd = kf_xasprintf(
		    "python3 -c 'import json,sys; "
		    "d=json.load(open(sys.argv[1], "
		    "encoding=\"utf-8\")); c=d[\"content\"]; "
		    "bad=[(s,w) for s,w in zip(d[\"spans\"], d[\"want\"]) if "
		    "not c[s[\"start\"]:s[\"end\"]].startswith(w)]; "
		    "sys.exit(1 if bad else 0)' %s",
		    path);
		CHECK_MSG(system(cmd) == 0, "python slices differ: %s", cmd);
		free(cmd);
		free(path);
		cJSON_DetachItemViaPointer(doc, spans);
		cJSON_Delete(doc);
	}
	cJSON_Delete(spans);
	free(content);

	struct kf_span *sp = NULL;
	size_t ns = 0;
	kf_spans_find(hand_c, true, &sp, &ns);
	n = sizeof(hand_c_spans) / sizeof(hand_c_spans[0]);
	CHECK_MSG(ns == n, "%zu host spans", ns);
	for (size_t i = 0; i < n; i++) {
		const struct hand_span *h = &hand_c_spans[i];
		CHECK_MSG(sp[i].start == (size_t)h->start &&
			      sp[i].end == (size_t)h->end,
			  "host span %zu: [%zu, %zu), not [%d, %d)", i,
			  sp[i].start, sp[i].end, h->start, h->end);
		CHECK_STR(kf_span_kind_name(sp[i].kind), h->kind);
		CHECK(!strncmp(hand_c + h->start, h->text,
			       (size_t)(h->end - h->start)));
	}
	free(sp);
	/* Invalid UTF-8 is refused; an overlong form too. */
	CHECK(kf_utf8_valid("a\xc3\xa9"));
	CHECK(!kf_utf8_valid("a\xc3"));
	CHECK(!kf_utf8_valid("\xc0\xaf"));
}

/* Each format loads with Hugging Face `datasets` (skipped without it). */
static void test_export_loads_with_datasets(void)
{
	if (system("python3 -c 'import datasets' >/dev/null 2>&1") != 0)
		SKIP("python3 cannot import datasets (pip install datasets; "
		     "make deps does not install it)");
	char *db = store();
	const char *formats[] = {"sft", "dpo", "rft"};
	const char *columns[] = {"messages", "chosen", "reward"};
	for (int f = 0; f < 3; f++) {
		char *out =
		    kf_xasprintf("%s/%s.jsonl", kf_test_tmpdir(), formats[f]);
		struct outcome o = KFORGE("export", "--format", formats[f],
					  "--store", db, "-o", out);
		CHECK_MSG(o.code == 0, "%s", o.out);
		free(o.out);
		char *cmd = kf_xasprintf(
		    "HF_DATASETS_CACHE=%s/hf HF_HUB_OFFLINE=1 python3 -c "
		    "'import sys, datasets; d = "
		    "datasets.load_dataset(\"json\", data_files=sys.argv[1], "
		    "split=\"train\"); assert len(d) > 0 and sys.argv[2] in "
		    "d.column_names, d' %s %s",
		    kf_test_tmpdir(), out, columns[f]);
		CHECK_MSG(system(cmd) == 0, "datasets refused %s", out);
		free(cmd);
		free(out);
	}
	free(db);
}

KF_TESTS(export) = {
    KF_TEST(test_export_spans_match_hand_marked_kernels),
    KF_TEST(test_export_sft_best_kernel_per_task),
    KF_TEST(test_export_dpo_chosen_beats_rejected),
    KF_TEST(test_export_rft_rewards_each_completion),
    KF_TEST(test_export_dedup_by_normalised_source),
    KF_TEST(test_export_split_keeps_tasks_apart),
    KF_TEST(test_export_errors_name_the_flag),
    KF_TEST(test_export_loads_with_datasets),
    KF_TESTS_END,
};
