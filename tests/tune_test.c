/*
 * tune_test.c: the tuner's constraints (KF_PARAM_RULE: parsed, evaluated,
 * refused with the file, line, rule and why; points they forbid never
 * stored nor evaluated), its strategies (successive halving against
 * exhaustive on a scored grid whose best is known: the same best, fewer
 * full evaluations, short timings stored as such) and the --objective
 * option. Runs are scored by KFORGE_SCORES: no kernel is compiled.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/policy.h>
#include <kforge/reward.h>
#include <kforge/search.h>
#include <kforge/store.h>

#include "harness.h"

#define ROWSUM "tests/fixtures/rowsum"

struct outcome {
	int code;
	char *out; /* stdout and stderr together */
};

static struct outcome kforge_v(const char *const *args)
{
	int ec = 0;
	char *out = kf_test_kforge(args, 240000, 4 << 20, &ec);
	return (struct outcome){ec, out};
}

#define KFORGE(...) kforge_v((const char *const[]){__VA_ARGS__, NULL})

/* A tunable source over BX and BY (1 .. 64), with rules. */
static const char grid_src[] =
    "#include <kforge/kernel.h>\n"
    "KF_PARAM(BX, 1, 2, 4, 8, 16, 32, 64)\n"
    "KF_PARAM(BY, 1, 2, 4, 8, 16, 32, 64)\n"
    "KF_PARAM_RULE(BX * BY <= 256) // a block of at most 256\n"
    "KF_PARAM_RULE(BX >= BY || BX == 1);\n"
    "int kf_entry(void) { return 0; }\n";

static void test_tune_rules_parse_and_evaluate(void)
{
	struct kf_params ps;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_policy_params_parse(grid_src, "grid.c", &ps, &err) == 0,
		  "%s", err.msg);
	CHECK(ps.n == 2);
	CHECK(ps.n_rules == 2);
	CHECK_STR(ps.rules[0].expr, "BX * BY <= 256");
	CHECK(ps.rules[0].line == 4);
	CHECK_STR(ps.rules[1].expr, "BX >= BY || BX == 1");
	/* idx: positions in the lists; BX=16 BY=16 is allowed, BX=32 BY=16
	 * is over 256, BX=2 BY=4 breaks the second rule, BX=1 BY=64 holds. */
	int a[] = {4, 4}, b[] = {5, 4}, c[] = {1, 2}, d[] = {0, 6};
	CHECK(kf_policy_params_allowed(&ps, a, &err) == 1);
	CHECK(kf_policy_params_allowed(&ps, b, &err) == 0);
	CHECK(kf_policy_params_allowed(&ps, c, &err) == 0);
	CHECK(kf_policy_params_allowed(&ps, d, &err) == 1);
	/* The concrete source keeps each rule as a comment: it declares
	 * nothing more. */
	char *src = kf_policy_params_apply(grid_src, &ps, a);
	CHECK_CONTAINS(src, "#define BX 16 /* KF_PARAM(BX, 1, 2, 4, 8, 16");
	CHECK_CONTAINS(src, "\n/* KF_PARAM_RULE(BX * BY <= 256) */\n");
	struct kf_params again;
	CHECK(kf_policy_params_parse(src, "concrete.c", &again, &err) == 0);
	CHECK(again.n == 0 && again.n_rules == 0);
	free(src);
	/* Precedence, short circuits, unary operators. */
	static const struct {
		const char *rule;
		int allowed; /* at A=6, B=0 */
	} exprs[] = {
	    {"A + 2 * 3 == 12", 1},	  {"(A + 2) * 3 == 24", 1},
	    {"B != 0 && A % B == 0", 0}, {"B == 0 || A / B > 1", 1},
	    {"!(A < 4) && -A == -6", 1}, {"A % 4 == 2 && A >= 6", 1},
	    {"A > 5 && B > 0", 0},	  {"+A - 7 < 0", 1},
	};
	for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		char *text = kf_xasprintf("KF_PARAM(A, 1, 6)\n"
					  "KF_PARAM(B, 0, 3)\n"
					  "KF_PARAM_RULE(%s)\n",
					  exprs[i].rule);
		struct kf_params p2;
		int rc = kf_policy_params_parse(text, "e.c", &p2, &err);
		CHECK_MSG(rc == 0, "%s: %s", exprs[i].rule, err.msg);
		int at[] = {1, 0};
		CHECK_MSG(kf_policy_params_allowed(&p2, at, &err) ==
			      exprs[i].allowed,
			  "%s", exprs[i].rule);
		free(text);
	}
}

static void test_tune_bad_rules_name_file_line_rule_and_why(void)
{
	static const struct {
		const char *src, *want;
	} cases[] = {
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX * <= 4)\n",
	     "k.c:2: KF_PARAM_RULE(BX * <= 4): expected an operand, found "
	     "'<' at column 6"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX * BZ <= 4)\n",
	     "k.c:2: KF_PARAM_RULE(BX * BZ <= 4): unknown name 'BZ' (a rule "
	     "names only parameters declared with KF_PARAM) at column 6"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX = 2)\n",
	     "KF_PARAM_RULE(BX = 2): unexpected '=' (write '==' to compare) "
	     "at column 4"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE((BX < 4)\n",
	     "k.c:2: KF_PARAM_RULE((BX < 4): no closing ')' on the same line"},
	    {"KF_PARAM(M, fast, slow)\nKF_PARAM_RULE(M > 1)\n",
	     "KF_PARAM_RULE(M > 1): parameter M has the value 'fast', not an "
	     "integer, at column 1"},
	    {"KF_PARAM(T, 0, 4, 8)\n\nKF_PARAM_RULE(64 % T == 0)\n",
	     "k.c:3: KF_PARAM_RULE(64 % T == 0): division by zero at column 6, "
	     "for the point T=0"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX > 2)\n",
	     "k.c:2: KF_PARAM_RULE(BX > 2): no choice of the parameters' values "
	     "satisfies it"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX > 1)\nKF_PARAM_RULE(BX < "
	     "2)\n",
	     "k.c: its 2 KF_PARAM_RULE lines (lines 2 to 3) together allow no "
	     "point"},
	    {"KF_PARAM_RULE(1 < 2)\n",
	     "k.c:1: KF_PARAM_RULE(1 < 2): no KF_PARAM is declared"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE()\n",
	     "k.c:2: KF_PARAM_RULE(): an empty rule"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX < 2) int x;\n",
	     "k.c:2: KF_PARAM_RULE(BX < 2): unexpected text after ')'"},
	    {"KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX < 99999999999999999999)\n",
	     "'99999999999999999999' is not an integer at column 6"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kf_params ps;
		struct kf_err err = KF_ERR_INIT;
		CHECK_MSG(kf_policy_params_parse(cases[i].src, "k.c", &ps,
						 &err) == KF_EINVAL,
			  "case %zu parsed", i);
		CHECK_CONTAINS(err.msg, cases[i].want);
		CHECK(ps.n == 0);
	}
}

/* Writes the scores table: every point of grid_src scored by
 * speedup(BX, BY), which peaks at BX=16 BY=8 (the rules allow it). */
static double speedup_of(int bx, int by)
{
	int dx = bx > 16 ? bx / 16 : 16 / bx, dy = by > 8 ? by / 8 : 8 / by;
	return 4.0 / (double)(dx * dy) + 0.01 * bx / 64.0;
}

static void grid_scores(const char *path)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int bx = 1; bx <= 64; bx *= 2)
		for (int by = 1; by <= 64; by *= 2) {
			/* The two define lines of one point, together. */
			kf_strbuf_addf(&sb,
				       "{\"contains\": \"#define BX %d /* "
				       "KF_PARAM(BX, 1, 2, 4, 8, 16, 32, 64) "
				       "*/\\n#define BY %d \", \"speedup\": "
				       "%.4f}\n",
				       bx, by, speedup_of(bx, by));
		}
	kf_test_write_text(path, kf_strbuf_str(&sb));
	kf_strbuf_release(&sb);
	setenv("KFORGE_SCORES", path, 1);
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	free(cache);
}

/* The points the rules of grid_src allow: BX*BY <= 256 and (BX >= BY or
 * BX == 1). */
static int allowed_points(void)
{
	int n = 0;
	for (int bx = 1; bx <= 64; bx *= 2)
		for (int by = 1; by <= 64; by *= 2)
			n += bx * by <= 256 && (bx >= by || bx == 1);
	return n;
}

struct run_facts {
	int candidates, evaluated, short_timings;
	int violating; /* candidates whose params break a rule */
	char best[64]; /* "BX=16 BY=8" */
	double best_speedup;
	bool best_fully_timed;
	double max_short_cap;
};

static void facts_of(const char *db, int64_t run, struct run_facts *f)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	memset(f, 0, sizeof(*f));
	CHECK_MSG(kf_store_open(db, 0, &st, &err) == 0, "%s", err.msg);
	cJSON *cands = NULL, *shorts = NULL, *rep = NULL;
	CHECK(kf_store_candidate_list(st, run, false, false, &cands, &err) ==
	      0);
	CHECK(kf_store_screening_list(st, run, true, &shorts, &err) == 0);
	CHECK(kf_search_report(st, run, 5, &rep, &err) == 0);
	const cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		f->candidates++;
		const cJSON *p = cJSON_GetObjectItem(c, "params");
		int bx = atoi(kf_json_str(p, "BX")), by = atoi(kf_json_str(p, "BY"));
		if (!(bx * by <= 256 && (bx >= by || bx == 1)))
			f->violating++;
		f->evaluated +=
		    cJSON_IsObject(cJSON_GetObjectItem(c, "evaluation"));
	}
	cJSON_ArrayForEach(c, shorts)
	{
		f->short_timings++;
		double cap = kf_json_num(c, "time_cap_s", 0);
		if (cap > f->max_short_cap)
			f->max_short_cap = cap;
		/* The stored result says what it was. */
		double said = kf_json_num(cJSON_GetObjectItem(c, "result"),
					  "short_timing_cap_s", 0);
		CHECK_MSG(said > 0 && fabs(said - cap) < 1e-9 * cap,
			  "result says %g, row %g", said, cap);
	}
	const cJSON *best = cJSON_GetObjectItem(rep, "best");
	if (cJSON_IsObject(best)) {
		const cJSON *p = cJSON_GetObjectItem(best, "params");
		snprintf(f->best, sizeof(f->best), "BX=%s BY=%s",
			 kf_json_str(p, "BX"), kf_json_str(p, "BY"));
		const cJSON *e = cJSON_GetObjectItem(best, "evaluation");
		f->best_fully_timed = cJSON_IsObject(e);
		f->best_speedup = kf_json_num(e, "speedup", 0);
	}
	cJSON_Delete(cands);
	cJSON_Delete(shorts);
	cJSON_Delete(rep);
	kf_store_close(st);
}

/* A case's directory: the grid's source, its scores table
 * (KFORGE_SCORES) and a store path. */
struct grid {
	char *dir, *src, *table, *db;
};

static void grid_setup(const char *name, struct grid *g)
{
	struct kf_err err = KF_ERR_INIT;
	g->dir = kf_path_join(kf_test_tmpdir(), name);
	CHECK(kf_mkdir_p(g->dir, &err) == 0);
	g->src = kf_path_join(g->dir, "grid.c");
	g->table = kf_path_join(g->dir, "scores.jsonl");
	g->db = kf_path_join(g->dir, "k.db");
	kf_test_write_text(g->src, grid_src);
	grid_scores(g->table);
}

static void grid_free(struct grid *g)
{
	free(g->db);
	free(g->table);
	free(g->src);
	free(g->dir);
}

static void test_tune_rules_points_never_evaluated(void)
{
	struct grid g;
	grid_setup("rules", &g);
	char *src = g.src, *db = g.db;
	/* A budget as large as the whole grid: the local search and random
	 * strategies draw until every allowed point is taken. */
	const char *const strategies[] = {"local", "random", "exhaustive"};
	for (int i = 0; i < 3; i++) {
		struct outcome o = KFORGE(
		    "optimize", ROWSUM, "--from", src, "--budget", "49",
		    "--seed", "5", "--db", db, "--tune-strategy",
		    strategies[i]);
		CHECK_MSG(o.code == 0, "%s: %s", strategies[i], o.out);
		CHECK_CONTAINS(o.out, "the policy had nothing more to propose");
		struct run_facts f;
		facts_of(db, i + 1, &f);
		CHECK_MSG(f.violating == 0, "%s: %d candidates break a rule",
			  strategies[i], f.violating);
		CHECK_MSG(f.candidates == allowed_points() &&
			      f.evaluated == allowed_points(),
			  "%s: %d candidates, %d evaluated, %d allowed",
			  strategies[i], f.candidates, f.evaluated,
			  allowed_points());
		CHECK_STR(f.best, "BX=16 BY=8");
		free(o.out);
	}
	/* A bad rule stops the run before it is stored. */
	kf_test_write_text(src, "KF_PARAM(BX, 1, 2)\nKF_PARAM_RULE(BX * "
				"BQ < 4)\n");
	struct outcome o =
	    KFORGE("optimize", ROWSUM, "--from", src, "--db", db);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "grid.c:2: KF_PARAM_RULE(BX * BQ < 4): unknown "
			      "name 'BQ'");
	free(o.out);
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	cJSON *run = NULL;
	CHECK(kf_store_open(db, 0, &st, &err) == 0);
	CHECK(kf_store_run_get(st, 4, &run, &err) == KF_ENOENT);
	kf_store_close(st);
	grid_free(&g);
}

static void test_tune_halving_same_best_fewer_full_evaluations(void)
{
	struct grid g;
	grid_setup("halving", &g);
	char *src = g.src, *db = g.db;
	struct outcome o =
	    KFORGE("optimize", ROWSUM, "--from", src, "--budget", "100",
		   "--seed", "3", "--db", db, "--tune-strategy", "exhaustive",
		   "--time-cap", "0.9");
	CHECK_MSG(o.code == 0, "%s", o.out);
	free(o.out);
	o = KFORGE("optimize", ROWSUM, "--from", src, "--budget", "100",
		   "--seed", "3", "--db", db, "--tune-strategy", "halving",
		   "--time-cap", "0.9");
	CHECK_MSG(o.code == 0, "%s", o.out);
	/* The progress lines say which timings were short. */
	CHECK_CONTAINS(o.out, "short timing (cap 0.05s) ok");
	CHECK_CONTAINS(o.out, "short timing (cap 0.1s) ok");
	CHECK_CONTAINS(o.out, "short timing (cap 0.3s) ok");
	free(o.out);
	struct run_facts ex, hv;
	facts_of(db, 1, &ex);
	facts_of(db, 2, &hv);
	/* 28 points: rungs of 28, 10 and 4 timed briefly (caps 0.05 s, the
	 * floor, 0.1 s and 0.3 s), then 2 timed fully (0.9 s). */
	int n = allowed_points();
	CHECK(n == 28);
	CHECK(ex.evaluated == n && ex.short_timings == 0);
	CHECK_MSG(hv.short_timings == 28 + 10 + 4 && hv.evaluated == 2,
		  "halving: %d short timings, %d full", hv.short_timings,
		  hv.evaluated);
	CHECK(hv.violating == 0 && hv.candidates == n);
	CHECK(hv.evaluated < ex.evaluated);
	CHECK_STR(ex.best, "BX=16 BY=8");
	CHECK_STR(hv.best, ex.best);
	CHECK(hv.best_fully_timed);
	CHECK(hv.best_speedup == ex.best_speedup);
	CHECK(hv.max_short_cap > 0.29 && hv.max_short_cap < 0.31);
	/* The report counts both kinds. */
	o = KFORGE("show", "2", "--db", db);
	CHECK_CONTAINS(o.out, "budget     100 evaluations: 44 done (2 full, "
			      "42 short timings), 28 candidates stored (26 "
			      "timed only briefly)");
	CHECK_CONTAINS(o.out, "best       candidate");
	free(o.out);
	/* A budget too small for every point: fewer points, same rungs. */
	o = KFORGE("optimize", ROWSUM, "--from", src, "--budget", "13",
		   "--seed", "3", "--db", db, "--tune-strategy", "halving",
		   "--halving-eta", "2", "--time-cap", "0.8");
	CHECK_MSG(o.code == 0, "%s", o.out);
	free(o.out);
	struct run_facts small;
	facts_of(db, 3, &small);
	/* 7 points: 7 + 4 + 2 = 13. */
	CHECK_MSG(small.short_timings == 11 && small.evaluated == 2,
		  "%d short, %d full", small.short_timings, small.evaluated);
	grid_free(&g);
}

static void test_tune_objective_and_strategy_options_validated(void)
{
	char *db = kf_path_join(kf_test_tmpdir(), "objective.db");
	char *src = kf_path_join(kf_test_tmpdir(), "objective.c");
	kf_test_write_text(src, grid_src);
	struct {
		const char *args[12];
		const char *want;
	} cases[] = {
	    {{"optimize", ROWSUM, "--from", src, "--objective", "energy", "--db", db, NULL},
	     "--objective energy: the host backend measures no energy"},
	    {{"optimize", ROWSUM, "--from", src, "--objective", "edp", "--db", db, NULL},
	     "--objective edp: the host backend measures no energy"},
	    {{"optimize", ROWSUM, "--from", src, "--objective", "power", "--db", db, NULL},
	     "--objective: unknown objective 'power' (one of time, energy, "
	     "edp)"},
	    {{"optimize", ROWSUM, "--from", src, "--tune-strategy", "grid", "--db", db, NULL},
	     "--tune-strategy: unknown strategy 'grid' (one of local, random, "
	     "exhaustive, halving)"},
	    {{"optimize", ROWSUM, "--from", src, "--halving-eta", "3", "--db", db, NULL},
	     "--halving-eta: applies to --tune-strategy halving, not local"},
	    {{"optimize", ROWSUM, "--from", src, "--tune-strategy", "halving",
	      "--halving-eta", "1", "--db", db, NULL},
	     "--halving-eta"},
	    {{"optimize", ROWSUM, "--from", src, "--policy", "replay",
	      "--tune-strategy", "random", "--db", db, NULL},
	     "--tune-strategy: applies to --policy tune, not replay"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome o = kforge_v(cases[i].args);
		CHECK_MSG(o.code == 2, "case %zu exited %d: %s", i, o.code,
			  o.out);
		CHECK_CONTAINS(o.out, cases[i].want);
		free(o.out);
	}
	/* The reward service takes the same objectives, checked the same
	 * way before it listens. */
	char *serve = kf_path_join(kf_test_build_dir(), "kforge-serve");
	if (kf_is_executable(serve)) {
		const char *sv[][8] = {
		    {"serve", "--port", "0", "--objective", "energy", NULL},
		    {"serve", "--port", "0", "--objective", "power", NULL},
		};
		const char *want[] = {
		    "kforge serve: --objective energy: the host backend "
		    "measures no energy",
		    "kforge serve: --objective: unknown objective 'power'"};
		for (int i = 0; i < 2; i++) {
			struct outcome o = kforge_v(sv[i]);
			CHECK_MSG(o.code == 2, "serve case %d exited %d: %s",
				  i, o.code, o.out);
			CHECK_CONTAINS(o.out, want[i]);
			free(o.out);
		}
	}
	free(serve);
	/* Nothing was stored for a refused run. */
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	cJSON *run = NULL;
	if (kf_file_exists(db)) {
		CHECK(kf_store_open(db, 0, &st, &err) == 0);
		CHECK(kf_store_run_get(st, 1, &run, &err) == KF_ENOENT);
		kf_store_close(st);
	}
	free(db);
	free(src);
	/* The objectives' ratios over a result that measured energy. */
	cJSON *res = cJSON_Parse(
	    "{\"status\": \"ok\", \"timing\": {\"speedup\": {\"median\": 2.0},"
	    " \"candidate\": {\"median\": 1.0}, \"reference\": {\"median\": "
	    "2.0}}, \"energy\": {\"candidate\": {\"joules_per_call\": 0.5}, "
	    "\"reference\": {\"joules_per_call\": 0.75}}}");
	CHECK(kf_reward_objective_ratio("time", res, NULL) == 2.0);
	CHECK(kf_reward_objective_ratio("energy", res, NULL) == 1.5);
	CHECK(kf_reward_objective_ratio("edp", res, NULL) == 3.0);
	cJSON_DeleteItemFromObject(res, "energy");
	const char *why = NULL;
	CHECK(kf_reward_objective_ratio("energy", res, &why) == 0);
	CHECK_STR(why, "its result has no energy measurement");
	cJSON_Delete(res);
	struct kf_eval_opts eo = KF_EVAL_OPTS_INIT;
	eo.backend = "cuda";
	CHECK(kf_search_objective_check("edp", &eo, &err) == 0);
	eo.energy_s = 0;
	CHECK(kf_search_objective_check("edp", &eo, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "the evaluations' energy step is off");
}

/* Rules each satisfiable alone but never all at once, over eight
 * parameters of seven values (5.8 million points, too many for the
 * parser's check): a blind round's model reply of this kind held the
 * loop for good, each forbidden point kept and searched linearly. Now
 * the tuner gives up after a bounded run of forbidden points, with an
 * error that says so, and the run ends. */
static void test_tune_rules_allowing_nothing_end_the_tuner(void)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "pigeon");
	CHECK(kf_mkdir_p(dir, NULL) == 0);
	char *path = kf_path_join(dir, "pigeon8.c");
	kf_test_write_text(path,
			   "#include <kforge/kernel.h>\n"
    "KF_PARAM(V0, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V1, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V2, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V3, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V4, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V5, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V6, 0,1,2,3,4,5,6)\n"
    "KF_PARAM(V7, 0,1,2,3,4,5,6)\n"
    "KF_PARAM_RULE(V3 != V4 && V3 != V5 && V3 != V6 && V3 != V7 && V4 != V5 && V4 != V6 && V4 != V7 && V5 != V6 && V5 != V7 && V6 != V7)\n"
    "KF_PARAM_RULE(V0 != V1 && V0 != V2 && V0 != V6 && V0 != V7 && V1 != V2 && V1 != V6 && V1 != V7 && V2 != V6 && V2 != V7 && V6 != V7)\n"
    "KF_PARAM_RULE(V1 != V2 && V1 != V3 && V1 != V4 && V1 != V5 && V2 != V3 && V2 != V4 && V2 != V5 && V3 != V4 && V3 != V5 && V4 != V5)\n"
    "KF_PARAM_RULE(V0 != V3 && V0 != V4 && V0 != V5 && V0 != V7 && V3 != V4 && V3 != V5 && V3 != V7 && V4 != V5 && V4 != V7 && V5 != V7)\n"
			   "int kf_entry(void) { return 0; }\n");
	char *db = kf_path_join(dir, "runs.db");
	struct outcome o = KFORGE("optimize", ROWSUM, "--policy", "tune",
				  "--from", path, "--budget", "2", "--db", db);
	CHECK_MSG(o.code != 0 || strstr(o.out, "giving up"), "%s", o.out);
	CHECK_CONTAINS(o.out, "pigeon8.c: its 4 KF_PARAM_RULE lines allowed "
			      "none of 1048576 points in a row (of 5764801)");
	free(o.out);
	free(db);
	free(path);
	free(dir);
}

KF_TESTS(tune) = {
    KF_TEST(test_tune_rules_parse_and_evaluate),
    KF_TEST(test_tune_bad_rules_name_file_line_rule_and_why),
    KF_TEST(test_tune_rules_points_never_evaluated),
    KF_TEST(test_tune_rules_allowing_nothing_end_the_tuner),
    KF_TEST(test_tune_halving_same_best_fewer_full_evaluations),
    KF_TEST(test_tune_objective_and_strategy_options_validated),
    KF_TESTS_END,
};
