/*
 * report_test.c: `kforge report` as a user runs it: the HTML page of a
 * tuner's run and of a replayed run (each chart's data against the
 * store), the CSV against the store, a bench's page and CSV against the
 * summary of `kforge bench --json`, the errors, and the page rendered by
 * headless Chromium with no script error (a screenshot kept).
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/report.h>
#include <kforge/store.h>

#include "harness.h"

struct outcome {
	int code;
	char *out; /* stdout and stderr together */
};

static struct outcome run_argv(char *const *argv, int timeout_ms)
{
	int ec = 0;
	char *out = kf_test_run(argv, timeout_ms, 64 << 20, &ec);
	struct outcome o = {ec, out};
	return o;
}

static struct outcome kforge_exe(const char *exe, const char *const *args)
{
	char *argv[40] = {(char *)exe};
	int n = 1;
	for (; args[n - 1]; n++) {
		KF_ASSERT(n < 39);
		argv[n] = (char *)args[n - 1];
	}
	argv[n] = NULL;
	return run_argv(argv, 600000);
}

static struct outcome kforge_v(const char *const *args)
{
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	struct outcome o = kforge_exe(exe, args);
	free(exe);
	return o;
}

#define KFORGE(...) kforge_v((const char *const[]){__VA_ARGS__, NULL})

/* <build>/test-data/report, made once and shared by the cases (a lock
 * keeps two test runs from making its files at once); the fixtures are
 * made again when what they are made from changes. */
static char *data_dir(int *lock_fd)
{
	char *dir = kf_test_data_dir("report");
	char *lock = kf_path_join(dir, "lock");
	*lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	CHECK(*lock_fd >= 0 && flock(*lock_fd, LOCK_EX) == 0);
	free(lock);
	/* The cache must be absolute: the sandbox binds it. */
	char *abs = realpath(dir, NULL);
	CHECK(abs != NULL);
	char *cache = kf_path_join(abs, "cache");
	setenv("KFORGE_CACHE", cache, 1);
	free(cache);
	free(abs);
	return dir;
}

static void unlock(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
}

#define ROW_SUM "tasks/reduction/row_sum"
/* row_sum made 32 times smaller: 1.5 minutes of evaluations became 7 s. */
#define ROW_SUM_DIMS "{\"B\": 512, \"N\": 1024}"

/* The key of the inputs: the schema and the sources named. */
static char *inputs_key(const char *const *files)
{
	struct kf_sha256 h;
	kf_sha256_init(&h);
	char schema[96];
	/* The store's schema and what the results hold (2: timing.samples):
	 * fixtures made by an older kforge are made again. */
	snprintf(schema, sizeof(schema), "schema %d results 3 %s\n",
		 KF_STORE_SCHEMA, ROW_SUM_DIMS);
	kf_sha256_update(&h, schema, strlen(schema));
	for (int i = 0; files[i]; i++) {
		char *t = kf_test_read_text(files[i]);
		kf_sha256_update(&h, t, strlen(t) + 1);
		free(t);
	}
	char hex[65];
	kf_sha256_final_hex(&h, hex);
	return kf_xstrdup(hex);
}

static bool fresh(const char *dir, const char *name, const char *key)
{
	char *p = kf_path_join(dir, name);
	char *k = kf_xasprintf("%s.key", p);
	bool ok = kf_file_exists(p) && kf_file_exists(k);
	if (ok) {
		char *have = kf_test_read_text(k);
		ok = !strcmp(have, key);
		free(have);
	}
	free(p);
	free(k);
	return ok;
}

static void mark_fresh(const char *dir, const char *name, const char *key)
{
	char *k = kf_xasprintf("%s/%s.key", dir, name);
	kf_test_write_text(k, key);
	free(k);
}

/*
 * The store: run 1, the tuner over row_sum's tunable.c (4 evaluations);
 * run 2, the replay of its fast, naive and wrong candidates; both on a copy
 * of row_sum with ROW_SUM_DIMS. Returns the path of the case's own copy;
 * caller frees.
 */
static char *store(void)
{
	int fd;
	char *dir = data_dir(&fd);
	static const char *const files[] = {
	    ROW_SUM "/task.json",	   ROW_SUM "/candidates/tunable.c",
	    ROW_SUM "/candidates/fast.c",  ROW_SUM "/candidates/naive.c",
	    ROW_SUM "/candidates/wrong.c", NULL};
	char *key = inputs_key(files);
	char *db = kf_path_join(dir, "r.db");
	if (!fresh(dir, "r.db", key)) {
		char *tmp = kf_path_join(dir, "r.db.new");
		char *side[] = {kf_xasprintf("%s-wal", tmp),
				kf_xasprintf("%s-shm", tmp)};
		unlink(tmp);
		unlink(side[0]);
		unlink(side[1]);
		char *small = kf_path_join(dir, "small");
		char *task = kf_test_small_task(ROW_SUM, small, ROW_SUM_DIMS);
		struct outcome o =
		    KFORGE("optimize", task, "--budget", "4", "--time-cap",
			   "0.2", "--trials", "5", "--seed", "7", "--db", tmp);
		CHECK_MSG(o.code == 0, "tune: %s", o.out);
		free(o.out);
		char *cands = kf_path_join(dir, "cands");
		struct kf_err err = KF_ERR_INIT;
		CHECK(kf_mkdir_p(cands, &err) == 0);
		const char *names[] = {"fast.c", "naive.c", "wrong.c"};
		for (int k = 0; k < 3; k++) {
			char *from =
			    kf_xasprintf(ROW_SUM "/candidates/%s", names[k]);
			char *to = kf_path_join(cands, names[k]);
			kf_test_copy_file(from, to);
			free(from);
			free(to);
		}
		o = KFORGE("optimize", task, "--policy", "replay", "--from",
			   cands, "--budget", "3", "--time-cap", "0.2",
			   "--trials", "5", "--db", tmp);
		free(task);
		free(small);
		CHECK_MSG(o.code == 0, "replay: %s", o.out);
		free(o.out);
		/* One file: the WAL checkpointed into it on close. */
		o = KFORGE("runs", "--db", tmp);
		CHECK(o.code == 0);
		free(o.out);
		CHECK(rename(tmp, db) == 0);
		unlink(side[0]);
		unlink(side[1]);
		mark_fresh(dir, "r.db", key);
		free(side[0]);
		free(side[1]);
		free(cands);
		free(tmp);
	}
	unlock(fd);
	char *copy = kf_path_join(kf_test_tmpdir(), "r.db");
	kf_test_copy_file(db, copy);
	free(db);
	free(key);
	free(dir);
	return copy;
}

#define KB "tests/data/kernelbench/"

/*
 * A bench: two level-1 tasks with their candidates in modelnew/, one
 * without a candidate, one level-2 task whose candidate is its Model.
 * Returns the path of the summary `kforge bench --json` printed (shared,
 * read only); caller frees. Skips without torch.
 */
static char *bench_json(void)
{
	kf_test_need_torch();
	int fd;
	char *dir = data_dir(&fd);
	static const char *const files[] = {KB "level1/1_ReLU.py",
					    KB "level1/3_Sum_reduction.py",
					    KB "level1/9_Tanh.py",
					    KB "level2/7_Cumsum.py",
					    KB "modelnew/1_ReLU.py",
					    KB "modelnew/3_Sum_reduction.py",
					    NULL};
	char *key = inputs_key(files);
	char *path = kf_path_join(dir, "bench.json");
	char *direct = kf_path_join(dir, "bench-direct.html");
	if (!fresh(dir, "bench.json", key) || !kf_file_exists(direct)) {
		struct kf_err err = KF_ERR_INIT;
		char *cands = kf_path_join(dir, "bench-cands");
		CHECK(kf_mkdir_p(cands, &err) == 0);
		const char *names[] = {"1_ReLU.py", "3_Sum_reduction.py"};
		for (int k = 0; k < 2; k++) {
			char *from = kf_xasprintf(KB "modelnew/%s", names[k]);
			char *to = kf_path_join(cands, names[k]);
			kf_test_copy_file(from, to);
			free(from);
			free(to);
		}
		char *model = kf_test_read_text(KB "level2/7_Cumsum.py");
		char *same = kf_xasprintf("%s\n\nclass ModelNew(Model):\n"
					  "    pass\n",
					  model);
		char *to = kf_path_join(cands, "7_Cumsum.py");
		kf_test_write_text(to, same);
		char *er = kf_path_join(dir, "eval_results.json");
		struct outcome o = KFORGE(
		    "bench", KB "level1/1_ReLU.py",
		    KB "level1/3_Sum_reduction.py", KB "level1/9_Tanh.py",
		    KB "level2/7_Cumsum.py", "--candidates", cands, "--out", er,
		    "--trials", "5", "--time-cap", "0.1", "--json",
		    "--report", direct);
		CHECK_MSG(o.code == 0, "bench: %s", o.out);
		/* stdout's JSON comes first, then stderr's lines. */
		const char *end = NULL;
		cJSON *sum = cJSON_ParseWithOpts(o.out, &end, false);
		CHECK_MSG(sum && o.out[0] == '{', "%s", o.out);
		CHECK_MSG(*end == '\n' && strstr(end, "kforge: report: wrote"),
			  "after the JSON: %s", end);
		char *text = kf_xasprintf("%.*s\n", (int)(end - o.out), o.out);
		kf_test_write_text(path, text);
		free(text);
		cJSON_Delete(sum);
		mark_fresh(dir, "bench.json", key);
		free(o.out);
		free(er);
		free(to);
		free(same);
		free(model);
		free(cands);
	}
	unlock(fd);
	free(key);
	free(dir);
	free(direct);
	return path;
}

/* The model embedded in a page: the JSON of <script id="kf-model">. */
static cJSON *model_of(const char *html)
{
	const char *tag = "<script type=\"application/json\" id=\"kf-model\">";
	const char *p = strstr(html, tag);
	CHECK_MSG(p, "no model in the page");
	p += strlen(tag);
	const char *e = strstr(p, "</script>");
	CHECK(e != NULL);
	char *json = kf_xmalloc((size_t)(e - p) + 1);
	memcpy(json, p, (size_t)(e - p));
	json[e - p] = 0;
	cJSON *m = cJSON_Parse(json);
	CHECK_MSG(m, "the model is not JSON");
	free(json);
	return m;
}

/* The chart with this id, or NULL. */
static const cJSON *chart(const cJSON *model, const char *id)
{
	const cJSON *s, *c;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(model, "sections"))
	{
		cJSON_ArrayForEach(c, cJSON_GetObjectItem(s, "charts"))
		{
			if (!strcmp(kf_json_str(c, "id"), id))
				return c;
		}
	}
	return NULL;
}

static int n_charts(const cJSON *model)
{
	int n = 0;
	const cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(model, "sections"))
	{
		n += cJSON_GetArraySize(cJSON_GetObjectItem(s, "charts"));
	}
	return n;
}

/* The data of the dataset with this label in a chart. */
static const cJSON *dataset(const cJSON *c, const char *label)
{
	const cJSON *d;
	cJSON_ArrayForEach(d, cJSON_GetObjectItem(
				  cJSON_GetObjectItem(
				      cJSON_GetObjectItem(c, "config"), "data"),
				  "datasets"))
	{
		if (!strcmp(kf_json_str(d, "label"), label))
			return cJSON_GetObjectItem(d, "data");
	}
	return NULL;
}

/* The whole text of a page's section, its tables' cells and paragraphs,
 * one per line. */
static char *section_text(const cJSON *model, const char *id)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	const cJSON *s, *x, *t, *r;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(model, "sections"))
	{
		if (strcmp(kf_json_str(s, "id"), id))
			continue;
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(s, "tables"))
		{
			cJSON_ArrayForEach(r, cJSON_GetObjectItem(t, "rows"))
			{
				cJSON_ArrayForEach(x, r)
				{
					kf_strbuf_addf(&sb, "%s|",
						       x->valuestring);
				}
				kf_strbuf_addstr(&sb, "\n");
			}
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItem(s, "text"))
		{
			kf_strbuf_addf(&sb, "%s\n", x->valuestring);
		}
	}
	return kf_strbuf_detach(&sb);
}

/* The evaluated candidates of a run in the order recorded (as the report
 * orders them: evaluation time, then seq). */
static int by_recorded(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a,
		    *y = *(const cJSON *const *)b;
	const char *tx =
	    kf_json_str(cJSON_GetObjectItem(x, "evaluation"), "created_at");
	const char *ty =
	    kf_json_str(cJSON_GetObjectItem(y, "evaluation"), "created_at");
	int d = strcmp(tx, ty);
	if (d)
		return d;
	return (int)(kf_json_num(x, "seq", 0) - kf_json_num(y, "seq", 0));
}

static cJSON *candidates(const char *db, int run, const cJSON ***ev, int *n)
{
	struct kf_store *st = NULL;
	struct kf_err err = KF_ERR_INIT;
	cJSON *cands = NULL;
	CHECK_MSG(kf_store_open(db, 0, &st, &err) == 0, "%s", err.msg);
	CHECK(kf_store_candidate_list(st, run, false, true, &cands, &err) == 0);
	kf_store_close(st);
	*ev = kf_xcalloc((size_t)cJSON_GetArraySize(cands) + 1, sizeof(**ev));
	*n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		if (cJSON_IsObject(cJSON_GetObjectItem(c, "evaluation")))
			(*ev)[(*n)++] = c;
	}
	qsort(*ev, (size_t)*n, sizeof(**ev), by_recorded);
	return cands;
}

static const char *status_of(const cJSON *c)
{
	return kf_json_str(cJSON_GetObjectItem(c, "evaluation"), "status");
}

static double speedup_of(const cJSON *c)
{
	return !strcmp(status_of(c), "ok")
		   ? kf_json_num(cJSON_GetObjectItem(c, "evaluation"),
				 "speedup", NAN)
		   : NAN;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(1, fabs(b));
}

static double num_at(const cJSON *arr, int i)
{
	const cJSON *v = cJSON_GetArrayItem(arr, i);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Writes the page of args into the case's directory; returns its text. */
static char *page(const char *name, const char *a0, const char *a1,
		  const char *a2)
{
	char *out = kf_path_join(kf_test_tmpdir(), name);
	struct outcome o = a1 ? KFORGE("report", a0, a1, a2, "-o", out)
			      : KFORGE("report", a0, "-o", out);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, out);
	char *html = kf_test_read_text(out);
	free(o.out);
	free(out);
	return html;
}

/* Self-contained: Chart.js and its license inline, nothing fetched. */
static void check_self_contained(const char *html)
{
	CHECK_CONTAINS(html, "Chart.js v3");
	CHECK_CONTAINS(html, "Permission is hereby granted");
	CHECK(!strstr(html, "<script src"));
	CHECK(!strstr(html, "<link"));
	CHECK(!strstr(html, "<img"));
}

/* The tuner's run: each evaluation's speedup, the best so far, the
 * statuses, the lineage of the best and the landscape, as the store
 * holds them. */
static void test_report_run_html_holds_the_store_data(void)
{
	char *db = store();
	char *html = page("tune.html", "1", "--db", db);
	check_self_contained(html);
	cJSON *m = model_of(html);
	CHECK_STR(kf_json_str(m, "kind"), "run");
	const cJSON **ev;
	int n;
	cJSON *cands = candidates(db, 1, &ev, &n);
	CHECK(n == 4);
	const cJSON *sp = chart(m, "speedup");
	CHECK(sp != NULL);
	const cJSON *pts = dataset(sp, "speedup (ok)");
	const cJSON *best = dataset(sp, "best so far");
	const cJSON *ci = dataset(sp, "95% interval");
	CHECK(pts && best && ci);
	CHECK(cJSON_GetArraySize(pts) == n);
	double top = NAN, best_sp = NAN;
	const cJSON *best_c = NULL;
	for (int i = 0; i < n; i++) {
		double s = speedup_of(ev[i]);
		CHECK_MSG(isnan(s) ? !cJSON_IsNumber(cJSON_GetArrayItem(pts, i))
				   : near(num_at(pts, i), s),
			  "evaluation %d", i + 1);
		if (!isnan(s) && !(s <= top))
			top = s;
		if (!isnan(s) && !(s <= best_sp)) {
			best_sp = s;
			best_c = ev[i];
		}
		CHECK(isnan(top) || near(num_at(best, i), top));
		const cJSON *eci = cJSON_GetObjectItem(
		    cJSON_GetObjectItem(ev[i], "evaluation"), "speedup_ci95");
		const cJSON *r = cJSON_GetArrayItem(ci, i);
		if (!isnan(s) && cJSON_GetArraySize(eci) == 2) {
			CHECK(near(num_at(r, 0), num_at(eci, 0)));
			CHECK(near(num_at(r, 1), num_at(eci, 1)));
		}
	}
	CHECK(best_c != NULL);
	/* Statuses: the last count of each equals the store's. */
	const cJSON *st = chart(m, "statuses");
	CHECK(st != NULL);
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += !strcmp(status_of(ev[i]), "ok");
	const cJSON *okd = dataset(st, "ok");
	CHECK(okd && num_at(okd, n - 1) == ok);
	/* Lineage: the best at its seq and speedup. */
	const cJSON *lin = chart(m, "lineage");
	CHECK(lin != NULL);
	const cJSON *b = cJSON_GetArrayItem(dataset(lin, "best"), 0);
	CHECK(kf_json_num(b, "x", 0) == kf_json_num(best_c, "seq", -1));
	CHECK(near(kf_json_num(b, "y", 0), best_sp));
	/* Landscape: one chart per parameter, one point per evaluation at
	 * its value. */
	const cJSON *params = cJSON_GetObjectItem(ev[0], "params");
	CHECK(cJSON_GetArraySize(params) >= 1);
	int k = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, params)
	{
		char id[32];
		snprintf(id, sizeof(id), "landscape-%d", k++);
		const cJSON *c = chart(m, id);
		CHECK_MSG(c, "no chart %s", id);
		CHECK_CONTAINS(kf_json_str(c, "title"), p->string);
		const cJSON *d = dataset(c, "speedup (ok)");
		CHECK(cJSON_GetArraySize(d) == ok);
	}
	/* The best candidate's timing and roofline, from its result. */
	char id[64];
	snprintf(id, sizeof(id), "candidate-%g-timing",
		 kf_json_num(best_c, "id", 0));
	const cJSON *tc = chart(m, id);
	CHECK_MSG(tc, "no chart %s", id);
	const cJSON *res = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(best_c, "evaluation"), "result");
	const cJSON *tm = cJSON_GetObjectItem(res, "timing");
	const cJSON *med = dataset(tc, "median");
	CHECK(near(
	    num_at(med, 0),
	    kf_json_num(cJSON_GetObjectItem(tm, "reference"), "median", 0)));
	CHECK(near(
	    num_at(med, 1),
	    kf_json_num(cJSON_GetObjectItem(tm, "candidate"), "median", 0)));
	/* Each call's time, from the result's samples. */
	snprintf(id, sizeof(id), "candidate-%g-samples",
		 kf_json_num(best_c, "id", 0));
	const cJSON *sc = chart(m, id);
	CHECK_MSG(sc, "no chart %s", id);
	const cJSON *smp = cJSON_GetObjectItem(tm, "samples");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(smp, "candidate_ms")) > 0);
	CHECK(cJSON_GetArraySize(dataset(sc, "candidate")) ==
	      cJSON_GetArraySize(cJSON_GetObjectItem(smp, "candidate_ms")));
	CHECK(cJSON_GetArraySize(dataset(sc, "reference")) ==
	      cJSON_GetArraySize(cJSON_GetObjectItem(smp, "reference_ms")));
	CHECK(near(kf_json_num(cJSON_GetArrayItem(dataset(sc, "candidate"), 0),
			       "y", -1),
		   num_at(cJSON_GetObjectItem(smp, "candidate_ms"), 0)));
	snprintf(id, sizeof(id), "candidate-%g-roofline",
		 kf_json_num(best_c, "id", 0));
	const cJSON *rc = chart(m, id);
	CHECK_MSG(rc, "no chart %s", id);
	const cJSON *rl = cJSON_GetObjectItem(res, "roofline");
	const cJSON *cp = cJSON_GetArrayItem(dataset(rc, "candidate"), 0);
	CHECK(near(kf_json_num(cp, "y", 0), kf_json_num(rl, "flops_per_s", 0)));
	/* The manifest: what the result holds, "not recorded" for the
	 * rest (no model was called). */
	char *env = section_text(m, "environment");
	const cJSON *dev = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(res, "environment"), "device");
	CHECK_CONTAINS(env, kf_json_str(dev, "name"));
	CHECK_CONTAINS(env, kf_json_str(res, "toolchain"));
	CHECK_CONTAINS(env, "tokens|not recorded");
	CHECK_CONTAINS(env, "torch|not recorded");
	free(env);
	free(ev);
	cJSON_Delete(cands);
	cJSON_Delete(m);
	free(html);
	free(db);
}

/* The replayed run: the failures in the statuses, no landscape. */
static void test_report_run_html_shows_failures(void)
{
	char *db = store();
	char *html = page("replay.html", "2", "--db", db);
	cJSON *m = model_of(html);
	const cJSON **ev;
	int n;
	cJSON *cands = candidates(db, 2, &ev, &n);
	CHECK(n == 3);
	const cJSON *st = chart(m, "statuses");
	int failed = 0;
	for (int i = 0; i < n; i++) {
		const cJSON *e = cJSON_GetObjectItem(ev[i], "evaluation");
		if (!strcmp(status_of(ev[i]), "ok"))
			continue;
		failed++;
		char *label = kf_xasprintf("%s/%s", kf_json_str(e, "status"),
					   kf_json_str(e, "check"));
		const cJSON *d = dataset(st, label);
		CHECK_MSG(d, "no dataset %s", label);
		CHECK(num_at(d, n - 1) >= 1);
		free(label);
	}
	CHECK(failed >= 1);
	const cJSON *bad = dataset(chart(m, "speedup"), "failed (no speedup)");
	int crosses = 0;
	for (int i = 0; i < cJSON_GetArraySize(bad); i++)
		crosses += cJSON_IsNumber(cJSON_GetArrayItem(bad, i));
	CHECK(crosses == failed);
	CHECK(chart(m, "landscape-0") == NULL);
	char *search = section_text(m, "search");
	CHECK_CONTAINS(search, "no evaluation has numeric parameters");
	free(search);
	free(ev);
	cJSON_Delete(cands);
	cJSON_Delete(m);
	free(html);
	free(db);
}

/* Splits CSV text into rows of cells (quoted cells with "" inside). */
static cJSON *csv_parse(const char *t)
{
	cJSON *rows = cJSON_CreateArray(), *row = cJSON_CreateArray();
	struct kf_strbuf cell = KF_STRBUF_INIT;
	bool q = false;
	for (const char *p = t; *p; p++) {
		if (q) {
			if (*p == '"' && p[1] == '"')
				kf_strbuf_add(&cell, p++, 1);
			else if (*p == '"')
				q = false;
			else
				kf_strbuf_add(&cell, p, 1);
		} else if (*p == '"') {
			q = true;
		} else if (*p == ',' || *p == '\n') {
			cJSON_AddItemToArray(
			    row, cJSON_CreateString(kf_strbuf_str(&cell)));
			kf_strbuf_release(&cell);
			if (*p == '\n') {
				cJSON_AddItemToArray(rows, row);
				row = cJSON_CreateArray();
			}
		} else {
			kf_strbuf_add(&cell, p, 1);
		}
	}
	CHECK(cJSON_GetArraySize(row) == 0 && cell.len == 0);
	cJSON_Delete(row);
	kf_strbuf_release(&cell);
	return rows;
}

static const char *cell(const cJSON *rows, int r, int c)
{
	return cJSON_GetArrayItem(cJSON_GetArrayItem(rows, r), c)->valuestring;
}

static double cell_num(const cJSON *rows, int r, int c)
{
	const char *s = cell(rows, r, c);
	return *s ? strtod(s, NULL) : NAN;
}

/* One row per evaluation, in order, each matching the store. */
static void test_report_run_csv_matches_the_store(void)
{
	char *db = store();
	for (int run = 1; run <= 2; run++) {
		char r[16];
		snprintf(r, sizeof(r), "%d", run);
		struct outcome o =
		    KFORGE("report", r, "--db", db, "--format", "csv");
		CHECK_MSG(o.code == 0, "%s", o.out);
		cJSON *rows = csv_parse(o.out);
		const char *header =
		    "run,evaluation,seq,candidate,parents,policy,origin,params,"
		    "status,check,reason,speedup,speedup_lo,speedup_hi,best_so_"
		    "far,candidate_ms,reference_ms,compile_ms,seconds,"
		    "evaluated_at\n";
		CHECK(!strncmp(o.out, header, strlen(header)));
		const cJSON **ev;
		int n;
		cJSON *cands = candidates(db, run, &ev, &n);
		CHECK(cJSON_GetArraySize(rows) == n + 1);
		double top = NAN;
		for (int i = 0; i < n; i++) {
			const cJSON *e =
			    cJSON_GetObjectItem(ev[i], "evaluation");
			CHECK(cJSON_GetArraySize(
				  cJSON_GetArrayItem(rows, i + 1)) == 20);
			CHECK(cell_num(rows, i + 1, 0) == run);
			CHECK(cell_num(rows, i + 1, 2) ==
			      kf_json_num(ev[i], "seq", -1));
			CHECK(cell_num(rows, i + 1, 3) ==
			      kf_json_num(ev[i], "id", -1));
			CHECK_STR(cell(rows, i + 1, 8), status_of(ev[i]));
			const char *chk = kf_json_str(e, "check");
			CHECK_STR(cell(rows, i + 1, 9), chk ? chk : "");
			double s = kf_json_num(e, "speedup", NAN);
			CHECK(isnan(s) ? isnan(cell_num(rows, i + 1, 11))
				       : near(cell_num(rows, i + 1, 11), s));
			if (!isnan(speedup_of(ev[i])) &&
			    !(speedup_of(ev[i]) <= top))
				top = speedup_of(ev[i]);
			CHECK(isnan(top)
				  ? isnan(cell_num(rows, i + 1, 14))
				  : near(cell_num(rows, i + 1, 14), top));
			CHECK_STR(cell(rows, i + 1, 19),
				  kf_json_str(e, "created_at"));
			const cJSON *params =
			    cJSON_GetObjectItem(ev[i], "params");
			if (cJSON_IsObject(params)) {
				cJSON *pp = cJSON_Parse(cell(rows, i + 1, 7));
				CHECK(cJSON_Compare(pp, params, true));
				cJSON_Delete(pp);
			}
		}
		free(ev);
		cJSON_Delete(cands);
		cJSON_Delete(rows);
		free(o.out);
	}
	free(db);
}

/* A bench's page: fast_p per baseline, the speedups per level and the
 * verdicts as the summary holds them; its CSV row by row. */
static void test_report_bench_html_and_csv_match_the_summary(void)
{
	char *path = bench_json();
	char *text = kf_test_read_text(path);
	cJSON *b = cJSON_Parse(text);
	CHECK(b != NULL);
	char *html = page("bench.html", path, NULL, NULL);
	check_self_contained(html);
	cJSON *m = model_of(html);
	CHECK_STR(kf_json_str(m, "kind"), "bench");
	/* kforge bench --report wrote the same page's model at its end. */
	char *direct = kf_xasprintf("%.*s/bench-direct.html",
				    (int)(strrchr(path, '/') - path), path);
	char *dhtml = kf_test_read_text(direct);
	check_self_contained(dhtml);
	cJSON *dm = model_of(dhtml);
	CHECK_STR(kf_json_str(dm, "kind"), "bench");
	CHECK(cJSON_GetArraySize(dataset(chart(dm, "fast-p"), "eager")) ==
	      cJSON_GetArraySize(dataset(chart(m, "fast-p"), "eager")));
	cJSON_Delete(dm);
	free(dhtml);
	free(direct);
	const cJSON *fp = dataset(chart(m, "fast-p"), "eager");
	CHECK(fp != NULL);
	const cJSON *want =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(b, "baselines"), "eager");
	want = cJSON_GetObjectItem(want, "fast_p");
	CHECK(cJSON_GetArraySize(fp) == cJSON_GetArraySize(want));
	int i = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, want)
	{
		const cJSON *pt = cJSON_GetArrayItem(fp, i++);
		CHECK(kf_json_num(pt, "x", -1) == strtod(p->string, NULL));
		CHECK(near(kf_json_num(pt, "y", -1), p->valuedouble));
	}
	/* Levels: each correct task's speedup in its level's dataset. */
	const cJSON *rows = cJSON_GetObjectItem(b, "tasks");
	const cJSON *lv = chart(m, "levels");
	CHECK(lv != NULL);
	int ok = 0, counted[3] = {0};
	const cJSON *row;
	cJSON_ArrayForEach(row, rows)
	{
		double s = kf_json_num(row, "speedup", NAN);
		if (isnan(s))
			continue;
		ok++;
		int l = atoi(kf_json_str(row, "task") + 5);
		CHECK(l == 1 || l == 2);
		char label[16];
		snprintf(label, sizeof(label), "level %d", l);
		const cJSON *d = dataset(lv, label);
		CHECK_MSG(d, "no dataset %s", label);
		bool found = false;
		for (int k = 0; k < cJSON_GetArraySize(d); k++)
			found |= near(
			    kf_json_num(cJSON_GetArrayItem(d, k), "y", 0), s);
		CHECK_MSG(found, "%s: speedup %g not drawn",
			  kf_json_str(row, "task"), s);
		counted[l]++;
	}
	CHECK(ok >= 2 && counted[1] >= 1 && counted[2] >= 1);
	/* Verdicts: counts over all tasks; the task without a candidate is
	 * one of them. */
	const cJSON *vd = chart(m, "verdicts");
	const cJSON *counts = dataset(vd, "tasks");
	double total = 0;
	for (int k = 0; k < cJSON_GetArraySize(counts); k++)
		total += num_at(counts, k);
	CHECK(total == cJSON_GetArraySize(rows));
	CHECK_CONTAINS(html, "no candidate");
	/* Per candidate: the fastest one's timing, and each of its calls. */
	const cJSON *tc = chart(m, "candidate-1-timing");
	CHECK(tc != NULL);
	CHECK(cJSON_GetArraySize(dataset(chart(m, "candidate-1-samples"),
					 "candidate")) > 0);
	/* CSV. */
	struct outcome o = KFORGE("report", path, "--format", "csv");
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK(!strncmp(o.out,
		       "task,level,status,check,error,speedup,speedup_lo,"
		       "speedup_hi,speedup_kernelbench,candidate_ms,"
		       "reference_ms,compile_s,seconds\n",
		       strlen("task,level")));
	cJSON *csv = csv_parse(o.out);
	CHECK(cJSON_GetArraySize(csv) == cJSON_GetArraySize(rows) + 1);
	i = 1;
	cJSON_ArrayForEach(row, rows)
	{
		CHECK_STR(cell(csv, i, 0), kf_json_str(row, "task"));
		CHECK_STR(cell(csv, i, 2), kf_json_str(row, "status"));
		double s = kf_json_num(row, "speedup", NAN);
		CHECK(isnan(s) ? isnan(cell_num(csv, i, 5))
			       : near(cell_num(csv, i, 5), s));
		const cJSON *tm = cJSON_GetObjectItem(row, "timing");
		if (tm)
			CHECK(near(
			    cell_num(csv, i, 9),
			    kf_json_num(cJSON_GetObjectItem(tm, "candidate"),
					"median", 0)));
		i++;
	}
	cJSON_Delete(csv);
	free(o.out);
	cJSON_Delete(m);
	free(html);
	cJSON_Delete(b);
	free(text);
	free(path);
}

/* Each bad input: exit 2 and a message that names what is wrong. */
static void test_report_errors_name_the_input(void)
{
	char *db = store();
	const char *dir = kf_test_tmpdir();
	struct outcome o = KFORGE("report", "99", "--db", db);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "no run 99");
	free(o.out);
	char *nodb = kf_path_join(dir, "none.db");
	o = KFORGE("report", "1", "--db", nodb);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "none.db: no such store");
	free(o.out);
	o = KFORGE("report", "1", "--db", db, "--format", "pdf");
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "--format: 'pdf' is not a format (html or csv)");
	free(o.out);
	o = KFORGE("report", "1", "--db", db, "--format", "htm");
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "did you mean 'html'");
	free(o.out);
	o = KFORGE("report", "1", "--db", db, "--fromat", "csv");
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "did you mean --format");
	free(o.out);
	o = KFORGE("report");
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "expected one RUN");
	free(o.out);
	char *missing = kf_path_join(dir, "missing.json");
	o = KFORGE("report", missing);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "missing.json: no such file");
	free(o.out);
	char *bad = kf_path_join(dir, "bad.json");
	kf_test_write_text(bad, "{\"tasks\": [");
	o = KFORGE("report", bad);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "bad.json: not valid JSON");
	free(o.out);
	char *er = kf_path_join(dir, "eval_results.json");
	kf_test_write_text(er, "{\"1\": [{\"sample_id\": 0, \"compiled\": true}]}");
	o = KFORGE("report", er);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "eval_results.json: this is KernelBench's");
	free(o.out);
	char *other = kf_path_join(dir, "other.json");
	kf_test_write_text(other, "{\"n\": 3}");
	o = KFORGE("report", other);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "other.json: no \"tasks\" array");
	free(o.out);
	o = KFORGE("report", other, "--db", db);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "--db applies to a RUN");
	free(o.out);
	free(other);
	free(er);
	free(bad);
	free(missing);
	free(nodb);
	free(db);
}

/* A kforge without build/share/chart.js beside it: the page is refused
 * (exit 2, naming the file and make deps); CSV needs no Chart.js. */
static void test_report_without_chartjs_says_make_deps(void)
{
	char *db = store();
	char *src = kf_path_join(kf_test_build_dir(), "kforge");
	char *exe = kf_path_join(kf_test_tmpdir(), "kforge");
	kf_test_copy_file(src, exe);
	CHECK(chmod(exe, 0755) == 0);
	char *out = kf_path_join(kf_test_tmpdir(), "r.html");
	const char *a[] = {"report", "1", "--db", db, "-o", out, NULL};
	struct outcome o = kforge_exe(exe, a);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "share/chart.js/chart.min.js: missing");
	CHECK_CONTAINS(o.out, "make deps");
	CHECK(!kf_file_exists(out));
	free(o.out);
	const char *c[] = {"report", "1", "--db", db, "--format", "csv", NULL};
	o = kforge_exe(exe, c);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK(!strncmp(o.out, "run,evaluation,", 15));
	free(o.out);
	free(out);
	free(exe);
	free(src);
	free(db);
}

/* chromium on PATH (Debian's, or chromium-browser), or NULL. */
static char *find_chromium(void)
{
	const char *path = getenv("PATH");
	char *dirs = kf_xstrdup(path ? path : "/usr/bin:/bin");
	char *save = NULL, *found = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		const char *names[] = {"chromium", "chromium-browser"};
		for (int i = 0; i < 2 && !found; i++) {
			char *p = kf_path_join(d, names[i]);
			if (kf_is_executable(p))
				found = p;
			else
				free(p);
		}
	}
	free(dirs);
	return found;
}

/* Renders page in headless Chromium: checks the marker the page's script
 * writes once every chart is drawn with data and that no console message
 * or script error was logged; keeps a screenshot at shot. */
static void render(const char *chromium, const char *page_path, int charts,
		   const char *shot)
{
	char *abs = realpath(page_path, NULL);
	CHECK(abs != NULL);
	char *url = kf_xasprintf("file://%s", abs);
	char *profile = kf_path_join(kf_test_tmpdir(), "chromium-profile");
	char *udd = kf_xasprintf("--user-data-dir=%s", profile);
	char *argv[] = {(char *)chromium,
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			udd,
			"--enable-logging=stderr",
			"--v=0",
			"--virtual-time-budget=10000",
			"--dump-dom",
			url,
			NULL};
	struct outcome o = run_argv(argv, 120000);
	CHECK_MSG(o.code == 0, "%s", o.out);
	char *marker = kf_xasprintf(
	    "<div id=\"kf-status\">kforge-report-ok charts=%d</div>", charts);
	CHECK_MSG(strstr(o.out, marker), "%s: not rendered: %s", page_path,
		  strstr(o.out, "kf-status\">") ? strstr(o.out, "kf-status\">")
						: o.out);
	CHECK_MSG(!strstr(o.out, "CONSOLE"), "console message: %s",
		  strstr(o.out, "CONSOLE"));
	CHECK_MSG(!strstr(o.out, "Uncaught"), "%s", strstr(o.out, "Uncaught"));
	free(o.out);
	char *ss = kf_xasprintf("--screenshot=%s", shot);
	char *argv2[] = {(char *)chromium,
			 "--headless",
			 "--no-sandbox",
			 "--disable-gpu",
			 udd,
			 "--hide-scrollbars",
			 "--window-size=1280,2400",
			 "--virtual-time-budget=10000",
			 ss,
			 url,
			 NULL};
	unlink(shot);
	o = run_argv(argv2, 120000);
	CHECK_MSG(o.code == 0, "%s", o.out);
	char *png = NULL;
	size_t n = 0;
	CHECK(kf_file_read(shot, 64 << 20, &png, &n, NULL) == 0);
	CHECK(n > 10000 && !memcmp(png, "\x89PNG", 4));
	printf("    screenshot: %s\n", shot);
	free(png);
	free(o.out);
	free(ss);
	free(marker);
	free(udd);
	free(profile);
	free(url);
	free(abs);
}

static void test_report_renders_in_chromium(void)
{
	char *chromium = find_chromium();
	if (!chromium)
		SKIP("no chromium on PATH (make deps installs Debian's "
		     "chromium)");
	char *db = store();
	char *html = page("tune.html", "1", "--db", db);
	cJSON *m = model_of(html);
	CHECK(n_charts(m) >= 6);
	struct kf_err err = KF_ERR_INIT;
	char *shots =
	    kf_path_join(kf_test_build_dir(), "test-data/report/screenshots");
	CHECK(kf_mkdir_p(shots, &err) == 0);
	char *p = kf_path_join(kf_test_tmpdir(), "tune.html");
	char *shot = kf_path_join(shots, "run.png");
	render(chromium, p, n_charts(m), shot);
	cJSON_Delete(m);
	free(html);
	free(shot);
	free(p);
	/* The replayed run's page too: its charts hold failures. */
	html = page("replay.html", "2", "--db", db);
	m = model_of(html);
	p = kf_path_join(kf_test_tmpdir(), "replay.html");
	shot = kf_path_join(shots, "replay.png");
	render(chromium, p, n_charts(m), shot);
	cJSON_Delete(m);
	free(html);
	free(shot);
	free(p);
	free(shots);
	free(db);
	free(chromium);
}

static void test_report_bench_renders_in_chromium(void)
{
	char *chromium = find_chromium();
	if (!chromium)
		SKIP("no chromium on PATH (make deps installs Debian's "
		     "chromium)");
	char *path = bench_json();
	char *html = page("bench.html", path, NULL, NULL);
	cJSON *m = model_of(html);
	CHECK(n_charts(m) >= 3);
	struct kf_err err = KF_ERR_INIT;
	char *shots =
	    kf_path_join(kf_test_build_dir(), "test-data/report/screenshots");
	CHECK(kf_mkdir_p(shots, &err) == 0);
	char *p = kf_path_join(kf_test_tmpdir(), "bench.html");
	char *shot = kf_path_join(shots, "bench.png");
	render(chromium, p, n_charts(m), shot);
	cJSON_Delete(m);
	free(html);
	free(shot);
	free(p);
	free(shots);
	free(path);
	free(chromium);
}

KF_TESTS(report) = {
    KF_TEST(test_report_run_html_holds_the_store_data),
    KF_TEST(test_report_run_html_shows_failures),
    KF_TEST(test_report_run_csv_matches_the_store),
    KF_TEST(test_report_bench_html_and_csv_match_the_summary),
    KF_TEST(test_report_errors_name_the_input),
    KF_TEST(test_report_without_chartjs_says_make_deps),
    KF_TEST(test_report_renders_in_chromium),
    KF_TEST(test_report_bench_renders_in_chromium),
    KF_TESTS_END,
};
