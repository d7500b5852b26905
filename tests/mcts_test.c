/*
 * mcts_test.c: the mcts and islands policies against the scripted model
 * server (tests/llm_server.py) and a scripted scorer (KFORGE_SCORES), so
 * that their choices are checked: which node MCTS expands (UCT order, the
 * widening limit), which cell the islands policy fills or replaces, what
 * migrates, and that a run killed and resumed makes the same choices.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/store.h>

#include "chat_server.h"
#include "harness.h"

#define ROWSUM "tests/fixtures/rowsum"

struct outcome {
	int code;
	char *out; /* stdout and stderr together */
};

static char **argv_of(const char *const *args)
{
	static char *argv[48];
	argv[0] = kf_path_join(kf_test_build_dir(), "kforge");
	int n = 1;
	for (; args[n - 1]; n++) {
		KF_ASSERT(n < 47);
		argv[n] = (char *)args[n - 1];
	}
	argv[n] = NULL;
	return argv;
}

static struct outcome kforge_v(const char *const *args)
{
	int ec = 0;
	char *out = kf_test_kforge(args, 240000, 4 << 20, &ec);
	return (struct outcome){ec, out};
}

#define KFORGE(...) kforge_v((const char *const[]){__VA_ARGS__, NULL})

/* A model's reply holding the kernel named by marker, padded to about pad
 * bytes of source. */
static char *reply_of(const char *marker, int pad)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addf(&sb,
		       "Analysis: ...\n```c\n/* <%s> */\n#include "
		       "<kforge/kernel.h>\nint kf_entry(void) { return 0; }\n",
		       marker);
	for (int i = 0; i < pad / 64; i++)
		kf_strbuf_addf(&sb, "/* padding padding padding padding "
				    "padding padding padding */\n");
	kf_strbuf_addstr(&sb, "```\n");
	return kf_strbuf_detach(&sb);
}

/* Sets KFORGE_SCORES to a table of lines (JSON objects, one per string). */
static void scores(const char *const *lines, int n)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < n; i++)
		kf_strbuf_addf(&sb, "%s\n", lines[i]);
	char *path = kf_path_join(kf_test_tmpdir(), "scores.jsonl");
	CHECK(kf_file_write_atomic(path, kf_strbuf_str(&sb), sb.len, &err) ==
	      0);
	setenv("KFORGE_SCORES", path, 1);
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	unsetenv("KFORGE_LLM_API_KEY");
	unsetenv("OPENAI_API_KEY");
	free(cache);
	free(path);
	kf_strbuf_release(&sb);
}

/* The marker of a source, "<X>" as X; caller frees. */
static char *marker(const char *source)
{
	const char *a = source ? strchr(source, '<') : NULL;
	while (a && !strncmp(a, "<kforge", 7))
		a = strchr(a + 1, '<');
	const char *b = a ? strchr(a, '>') : NULL;
	CHECK_MSG(a && b, "no marker in %s", source ? source : "(null)");
	return kf_xasprintf("%.*s", (int)(b - a - 1), a + 1);
}

/* Run 1's candidates in order: "X<P" per candidate (X its marker, P its
 * first parent's, "-" for none), "|origin" when with_origin; the number
 * evaluated in *n. Caller frees. */
static char *lineage(const char *db, bool with_origin, int *n)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	CHECK_MSG(kf_store_open(db, 0, &st, &err) == 0, "%s", err.msg);
	cJSON *cands = NULL;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	char *names[256] = {0};
	*n = 0;
	if (kf_store_candidate_list(st, 1, true, false, &cands, &err) == 0) {
		const cJSON *c;
		cJSON_ArrayForEach(c, cands)
		{
			int id = (int)kf_json_num(c, "id", 0);
			CHECK(id > 0 && id < 256);
			names[id] = marker(kf_json_str(c, "source"));
			const cJSON *p = cJSON_GetArrayItem(
			    cJSON_GetObjectItem(c, "parents"), 0);
			int pid = p ? (int)p->valuedouble : 0;
			CHECK(pid >= 0 && pid < id);
			kf_strbuf_addf(&sb, "%s%s<%s", sb.len ? " " : "",
				       names[id], pid ? names[pid] : "-");
			if (with_origin)
				kf_strbuf_addf(&sb, "|%s",
					       kf_json_str(c, "origin"));
			if (cJSON_IsObject(
				cJSON_GetObjectItem(c, "evaluation")))
				(*n)++;
		}
	}
	for (int i = 0; i < 256; i++)
		free(names[i]);
	cJSON_Delete(cands);
	kf_store_close(st);
	return kf_strbuf_detach(&sb);
}

/* Adds a rule to script: the reply of marker to prompts that hold every
 * string of when ('|'-separated, may be empty) and, with unless, not it. */
static void rule(cJSON *rules, const char *when, const char *unless,
		 const char *reply_marker)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *w = cJSON_AddArrayToObject(r, "when");
	char *copy = kf_xstrdup(when);
	for (char *t = strtok(copy, "|"); t; t = strtok(NULL, "|"))
		cJSON_AddItemToArray(w, cJSON_CreateString(t));
	free(copy);
	if (unless) {
		cJSON *u = cJSON_AddArrayToObject(r, "unless");
		cJSON_AddItemToArray(u, cJSON_CreateString(unless));
	}
	char *text = reply_of(reply_marker, 0);
	cJSON_AddStringToObject(r, "content", text);
	free(text);
	cJSON_AddItemToArray(rules, r);
}

/*
 * The MCTS case: a model whose reply depends on the prompt alone (the
 * candidate shown to improve, the refinements of it shown), and known
 * speedups. With C = 1, alpha = 0.5, exploration 1 and failures at -2:
 *   1 root (0 visits, limit 1) -> A (2x)
 *   2 root full (1 of 1) -> A (limit 1, no child) -> A1 (4x)
 *   3 root (2 visits, limit 2, 1 child) -> B (1x)
 *   4 root full: UCT A 1.781, B 1.048 -> A (2 visits, limit 2) -> A2
 *     (wrong answer)
 *   5 root full: UCT A 0.706, B 1.177 -> B (limit 1) -> B1 (1.5x)
 *   6 root (5 visits, limit 3, 2 children) -> C (0.5x)
 *   7 root full: UCT A 0.799, B 1.149, C 0.645 -> B (2 visits, limit 2,
 *     1 child) -> B2 (3x)
 *   8 root full: UCT A 0.831, B 1.307, C 0.702 -> B full (3 visits,
 *     limit 2): UCT B1 1.453, B2 2.147 -> B2 -> B21
 */
static const char mcts_want[] = "A<- A1<A B<- A2<A B1<B C<- B2<B B21<B2";

static void mcts_setup(struct kf_test_chat_server *srv, int delay_ms)
{
	const char *table[] = {
	    "{\"contains\": \"<A>\", \"speedup\": 2.0}",
	    "{\"contains\": \"<A1>\", \"speedup\": 4.0}",
	    "{\"contains\": \"<A2>\", \"status\": \"wrong_answer\"}",
	    "{\"contains\": \"<B>\", \"speedup\": 1.0}",
	    "{\"contains\": \"<B1>\", \"speedup\": 1.5}",
	    "{\"contains\": \"<B2>\", \"speedup\": 3.0}",
	    "{\"contains\": \"<B21>\", \"speedup\": 5.0}",
	    "{\"contains\": \"<C>\", \"speedup\": 0.5}",
	};
	scores(table, 8);
	cJSON *script = cJSON_CreateObject();
	cJSON_AddNumberToObject(script, "delay_ms", delay_ms);
	cJSON *rules = cJSON_AddArrayToObject(script, "rules");
	const char *mine = "Your last kernel";
	/* New candidates: the root's children shown, none to improve. */
	rule(rules, "<A>|<B>", mine, "C");
	rule(rules, "<A>", mine, "B");
	rule(rules, "", mine, "A");
	/* Refinements: the candidate to improve and its children shown. */
	rule(rules, "<B2>", NULL, "B21");
	rule(rules, "<A1>", NULL, "A2");
	rule(rules, "<A>", NULL, "A1");
	rule(rules, "<B1>", NULL, "B2");
	rule(rules, "<B>", NULL, "B1");
	char *text = kf_json_print(script);
	cJSON_Delete(script);
	kf_test_chat_server_start(srv, text, 120);
	free(text);
}

#define MCTS_ARGS(url, db)                                                     \
	"optimize", ROWSUM, "--policy", "mcts", "--model", "scripted",         \
	    "--base-url", url, "--llm", "retries=0", "--budget", "8",          \
	    "--seed", "5", "--widen-c", "1", "--widen-alpha", "0.5",           \
	    "--explore", "1", "--fail-reward", "-2", "--db", db

static void test_mcts_expands_by_uct_within_the_widening_limit(void)
{
	struct kf_test_chat_server srv;
	mcts_setup(&srv, 0);
	char *db = kf_path_join(kf_test_tmpdir(), "k.db");
	struct outcome o = KFORGE(MCTS_ARGS(srv.url, db), "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "policy mcts");
	/* A scored run says so: nothing in it is verified. */
	CHECK_CONTAINS(o.out, ": candidates are scored from that table, not "
			      "evaluated; no result of this session is "
			      "verified");
	/* What the notes say of the widening limit. */
	CHECK_CONTAINS(o.out,
		       "mcts: expanding the root (visits 0, children 0 of 1)");
	CHECK_CONTAINS(o.out, "mcts: expanding #1 (visits 2, children 1 of 2)");
	CHECK_CONTAINS(o.out,
		       "mcts: expanding the root (visits 5, children 2 of 3)");
	CHECK_CONTAINS(o.out, "mcts: expanding #7 (visits 1, children 0 of 1)");
	free(o.out);
	int n = 0;
	char *got = lineage(db, false, &n);
	CHECK_STR(got, mcts_want);
	CHECK(n == 8);
	free(got);
	kf_test_chat_server_stop(&srv);
	free(db);
}

/* Spawns argv, kills it with SIGKILL once db holds at least `after`
 * evaluations; returns how many it held. */
static int kill_after(const char *const *args, const char *db, int after)
{
	char **argv = argv_of(args);
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_proc_spawn(&p, argv, NULL, -1, &err) == 0, "%s", err.msg);
	int n = 0;
	for (int i = 0; i < 1200 && n < after; i++) {
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
		if (kf_file_exists(db))
			free(lineage(db, false, &n));
	}
	CHECK_MSG(n >= after, "%d evaluations within 60 s", n);
	kill(p.pid, SIGKILL);
	int status = 0;
	kf_proc_wait(&p, 10000, &status, NULL);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	free(argv[0]);
	free(lineage(db, false, &n));
	return n;
}

static void test_mcts_resume_after_sigkill_makes_the_same_choices(void)
{
	struct kf_test_chat_server srv;
	mcts_setup(&srv, 300);
	char *db = kf_path_join(kf_test_tmpdir(), "k.db");
	const char *args[] = {MCTS_ARGS(srv.url, db), NULL};
	int n = kill_after(args, db, 3);
	CHECK_MSG(n >= 3 && n < 8, "%d evaluations at the kill", n);
	struct outcome o = KFORGE("optimize", "--resume", "1", "--db", db);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "resuming run 1");
	free(o.out);
	char *got = lineage(db, false, &n);
	CHECK_STR(got, mcts_want);
	CHECK(n == 8);
	free(got);
	kf_test_chat_server_stop(&srv);
	free(db);
}

/*
 * The islands case: two islands, 4 bins, migration every 4 results; the
 * model's replies come in order (c1 ... c6), so the candidates are fixed
 * and the islands take them in turn (c1, c3, c5 island 0). Cells are
 * [performance, length]: a roofline fraction in [0.25, 0.5) is row 1, in
 * [0.5, 1) row 2; under 512 bytes column 0, under 1 KiB column 1.
 */
static const char *const islands_table[] = {
    "{\"contains\": \"<c1>\", \"speedup\": 1.0, \"fraction\": 0.3}",
    "{\"contains\": \"<c2>\", \"speedup\": 1.2, \"fraction\": 0.3}",
    "{\"contains\": \"<c3>\", \"speedup\": 1.5, \"fraction\": 0.35}",
    "{\"contains\": \"<c4>\", \"status\": \"wrong_answer\"}",
    "{\"contains\": \"<c5>\", \"speedup\": 1.1, \"fraction\": 0.6}",
    "{\"contains\": \"<c6>\", \"speedup\": 1.0, \"fraction\": 0.3}",
};

static void islands_setup(struct kf_test_chat_server *srv, int delay_ms)
{
	scores(islands_table, 6);
	cJSON *script = cJSON_CreateObject();
	cJSON_AddNumberToObject(script, "delay_ms", delay_ms);
	cJSON *steps = cJSON_AddArrayToObject(script, "steps");
	for (int i = 1; i <= 6; i++) {
		char m[8];
		snprintf(m, sizeof(m), "c%d", i);
		char *text = reply_of(m, i == 5 ? 600 : 0);
		cJSON *st = cJSON_CreateObject();
		cJSON_AddStringToObject(st, "content", text);
		cJSON_AddItemToArray(steps, st);
		free(text);
	}
	char *text = kf_json_print(script);
	cJSON_Delete(script);
	kf_test_chat_server_start(srv, text, 120);
	free(text);
}

#define ISLANDS_ARGS(url, db)                                                  \
	"optimize", ROWSUM, "--policy", "islands", "--model", "scripted",      \
	    "--base-url", url, "--llm", "retries=0", "--budget", "6",          \
	    "--seed", "9", "--islands", "2", "--bins", "4", "--migrate-every", \
	    "4", "--db", db

/* Each island improves one of its elites (with none, a new candidate);
 * c5 and c6 improve c3, the only elite of each island by then. */
static const char islands_want[] =
    "c1<-|llm:scripted island 0 c2<-|llm:scripted island 1 "
    "c3<c1|llm:scripted island 0 c4<c2|llm:scripted island 1 "
    "c5<c3|llm:scripted island 0 c6<c3|llm:scripted island 1";

static void test_islands_fill_replace_and_migrate_cells(void)
{
	struct kf_test_chat_server srv;
	islands_setup(&srv, 0);
	char *db = kf_path_join(kf_test_tmpdir(), "k.db");
	struct outcome o = KFORGE(ISLANDS_ARGS(srv.url, db), "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	const char *want[] = {
	    "islands: candidate #1 fills island 0 cell [1,0]",
	    "islands: candidate #2 fills island 1 cell [1,0]",
	    "islands: candidate #3 replaces #1 in island 0 cell [1,0] "
	    "(1.500x over 1.000x)",
	    "islands: candidate #4 of island 1: wrong_answer, no cell",
	    "islands: migrant from island 0 #3 replaces #2 in island 1 cell "
	    "[1,0] (1.500x over 1.200x)",
	    "islands: migrant from island 1 #2 stays out of island 0 cell "
	    "[1,0], held by #3 (1.200x, not over 1.500x)",
	    "islands: candidate #5 fills island 0 cell [2,1]",
	    "islands: candidate #6 stays out of island 1 cell [1,0], held "
	    "by #3 (1.000x, not over 1.500x)",
	};
	const char *at = o.out;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *hit = strstr(at, want[i]);
		CHECK_MSG(hit, "no \"%s\" (in order) in:\n%s", want[i], o.out);
		at = hit;
	}
	free(o.out);
	int n = 0;
	char *got = lineage(db, true, &n);
	CHECK_STR(got, islands_want);
	CHECK(n == 6);
	free(got);
	kf_test_chat_server_stop(&srv);
	free(db);
}

static void test_islands_resume_after_sigkill_makes_the_same_choices(void)
{
	struct kf_test_chat_server srv;
	islands_setup(&srv, 300);
	char *db = kf_path_join(kf_test_tmpdir(), "k.db");
	const char *args[] = {ISLANDS_ARGS(srv.url, db), NULL};
	int n = kill_after(args, db, 3);
	CHECK_MSG(n >= 3 && n < 6, "%d evaluations at the kill", n);
	struct outcome o = KFORGE("optimize", "--resume", "1", "--db", db);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "resuming run 1");
	/* The archive was rebuilt: c6 meets the migrant c3 in island 1. */
	CHECK_CONTAINS(o.out, "islands: candidate #6 stays out of island 1 "
			      "cell [1,0], held by #3");
	free(o.out);
	char *got = lineage(db, true, &n);
	CHECK_STR(got, islands_want);
	CHECK(n == 6);
	free(got);
	kf_test_chat_server_stop(&srv);
	free(db);
}

static void test_mcts_bad_options_name_the_flag(void)
{
	char *db = kf_path_join(kf_test_tmpdir(), "k.db");
	struct {
		const char *args[12];
		const char *want;
	} cases[] = {
	    {{"optimize", ROWSUM, "--policy", "mcts", "--widen-alpha", "x",
	      NULL},
	     "--widen-alpha: 'x' is not a number"},
	    {{"optimize", ROWSUM, "--policy", "mcts", "--model", "m",
	      "--widen-alpha", "2", "--db", db, NULL},
	     "--widen-alpha: 2 is out of range (0 to 1)"},
	    {{"optimize", ROWSUM, "--policy", "mcts", "--model", "m",
	      "--fail-reward", "1", "--db", db, NULL},
	     "--fail-reward: 1 is out of range (-100 to 0)"},
	    {{"optimize", ROWSUM, "--policy", "mcts", "--model", "m",
	      "--widen-c", "0", "--db", db, NULL},
	     "--widen-c: 0 is out of range"},
	    {{"optimize", ROWSUM, "--policy", "islands", "--model", "m",
	      "--islands", "0", "--db", db, NULL},
	     "--islands: 0 is out of range (1 to 64)"},
	    {{"optimize", ROWSUM, "--policy", "islands", "--model", "m",
	      "--bins", "2.5", "--db", db, NULL},
	     "--bins: not a whole number"},
	    {{"optimize", ROWSUM, "--policy", "mcts", "--islands", "2", NULL},
	     "--islands: applies to --policy islands, not mcts"},
	    {{"optimize", ROWSUM, "--policy", "islands", "--explore", "1",
	      NULL},
	     "--explore: applies to --policy mcts, not islands"},
	    {{"optimize", ROWSUM, "--policy", "tree", NULL},
	     "--policy: unknown policy 'tree' (one of "
	     "islands|llm|mcts|replay|tune)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome o = kforge_v(cases[i].args);
		CHECK_MSG(o.code == 2, "case %zu exited %d: %s", i, o.code,
			  o.out);
		CHECK_CONTAINS(o.out, cases[i].want);
		free(o.out);
	}
	free(db);
}

KF_TESTS(mcts) = {
    KF_TEST(test_mcts_expands_by_uct_within_the_widening_limit),
    KF_TEST(test_mcts_resume_after_sigkill_makes_the_same_choices),
    KF_TEST(test_islands_fill_replace_and_migrate_cells),
    KF_TEST(test_islands_resume_after_sigkill_makes_the_same_choices),
    KF_TEST(test_mcts_bad_options_name_the_flag),
    KF_TESTS_END,
};
