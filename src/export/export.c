/*
 * export.c: training datasets from the run store. Evaluated candidates are
 * read run by run, grouped by task and backend (one prompt each: the first
 * turn of the LLM policy, src/prompt), deduplicated by normalised source,
 * and written as sft, dpo or rft JSONL, optionally split by task
 * (docs/export.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/eval.h>
#include <kforge/export.h>
#include <kforge/prompt.h>
#include <kforge/task.h>

int kf_export_format_parse(const char *name)
{
	if (!name)
		return -1;
	if (!strcmp(name, "sft"))
		return KF_EXPORT_SFT;
	if (!strcmp(name, "dpo"))
		return KF_EXPORT_DPO;
	if (!strcmp(name, "rft"))
		return KF_EXPORT_RFT;
	return -1;
}

/* One evaluated candidate; strings borrow from the store's JSON. */
struct item {
	int64_t run, candidate;
	const char *task_id, *backend, *task_path; /* the run's */
	const char *source, *status, *check, *reason;
	const cJSON *result;
	double speedup, lo, hi; /* NAN when not measured */
	int trials;		/* the correctness trials the run asked for */
	char hash[65];
};

/* The items of one task on one backend: one prompt. */
struct group {
	const char *task_id, *backend, *task_path;
	int64_t run; /* the first run of it, for messages */
	struct item **items;
	int n;
	bool test;
	int records; /* written */
	/* Loaded when a record needs them. */
	struct kf_task *task;
	char *system, *user;
};

struct build {
	const struct kf_export_opts *o;
	cJSON *keep; /* every JSON the items borrow from */
	struct item *items;
	int n_items;
	struct group *groups;
	int n_groups;
	struct kf_strbuf out[2];
	struct kf_export_stats *stats;
};

static double num_or_nan(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int read_run(struct build *b, struct kf_store *st, cJSON *run,
		    struct kf_err *err)
{
	int64_t id = (int64_t)kf_json_num(run, "id", 0);
	cJSON *cands = NULL;
	int rc = kf_store_candidate_list(st, id, true, true, &cands, err);
	if (rc)
		return rc;
	cJSON_AddItemToArray(b->keep, cands);
	struct kf_eval_opts eo = KF_EVAL_OPTS_INIT;
	const cJSON *ev =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(run, "config"), "eval");
	if (cJSON_IsObject(ev))
		kf_eval_opts_from_json(ev, &eo);
	b->stats->runs++;
	const cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
		if (!cJSON_IsObject(e))
			continue;
		b->stats->evaluated++;
		const char *status = kf_json_str(e, "status");
		const char *source = kf_json_str(c, "source");
		if (!status || !source || !strcmp(status, "infra_error")) {
			b->stats->infra++;
			continue;
		}
		if (!kf_utf8_valid(source)) {
			b->stats->not_utf8++;
			continue;
		}
		b->items = kf_xrealloc(b->items, sizeof(*b->items) *
						     (size_t)(b->n_items + 1));
		struct item *it = &b->items[b->n_items++];
		memset(it, 0, sizeof(*it));
		it->run = id;
		it->task_id = kf_json_str(run, "task_id");
		it->backend = kf_json_str(run, "backend");
		it->task_path = kf_json_str(run, "task");
		it->candidate = (int64_t)kf_json_num(c, "id", 0);
		it->source = source;
		it->status = status;
		it->check = kf_json_str(e, "check");
		it->reason = kf_json_str(e, "reason");
		it->result = cJSON_GetObjectItem(e, "result");
		it->speedup = num_or_nan(e, "speedup");
		const cJSON *ci = cJSON_GetObjectItem(e, "speedup_ci95");
		const cJSON *lo = cJSON_GetArrayItem(ci, 0);
		const cJSON *hi = cJSON_GetArrayItem(ci, 1);
		it->lo = cJSON_IsNumber(lo) ? lo->valuedouble : NAN;
		it->hi = cJSON_IsNumber(hi) ? hi->valuedouble : NAN;
		it->trials = eo.trials;
		kf_prompt_code_hash(source, it->hash);
	}
	return 0;
}

static int by_id(const void *a, const void *b)
{
	double x = kf_json_num(*(const cJSON *const *)a, "id", 0);
	double y = kf_json_num(*(const cJSON *const *)b, "id", 0);
	return x < y ? -1 : x > y;
}

/* Reads the runs, oldest first, into b->items. */
static int read_runs(struct build *b, struct kf_store *st, struct kf_err *err)
{
	cJSON *runs = NULL;
	int rc = 0;
	if (b->o->n_runs > 0) {
		runs = cJSON_CreateArray();
		for (int i = 0; i < b->o->n_runs && !rc; i++) {
			cJSON *r = NULL;
			rc = kf_store_run_get(st, b->o->runs[i], &r, err);
			if (!rc)
				cJSON_AddItemToArray(runs, r);
		}
	} else {
		rc = kf_store_run_list(st, &runs, err);
	}
	if (runs)
		cJSON_AddItemToArray(b->keep, runs);
	if (rc)
		return rc;
	int n = cJSON_GetArraySize(runs);
	cJSON **v = kf_xcalloc((size_t)n + 1, sizeof(*v));
	int k = 0;
	cJSON *r;
	cJSON_ArrayForEach(r, runs) v[k++] = r;
	qsort(v, (size_t)n, sizeof(*v), by_id);
	int64_t prev = 0;
	for (int i = 0; i < n && !rc; i++) {
		int64_t id = (int64_t)kf_json_num(v[i], "id", 0);
		if (id == prev)
			continue; /* a run named twice is read once */
		prev = id;
		rc = read_run(b, st, v[i], err);
	}
	free(v);
	return rc;
}

/* Groups the items by task and backend, dropping repeated sources. */
static void group_items(struct build *b)
{
	for (int i = 0; i < b->n_items; i++) {
		struct item *it = &b->items[i];
		const char *task_id = it->task_id, *backend = it->backend;
		struct group *g = NULL;
		for (int k = 0; k < b->n_groups && !g; k++)
			if (!strcmp(b->groups[k].task_id, task_id) &&
			    !strcmp(b->groups[k].backend, backend))
				g = &b->groups[k];
		if (!g) {
			b->groups = kf_xrealloc(b->groups,
						sizeof(*b->groups) *
						    (size_t)(b->n_groups + 1));
			g = &b->groups[b->n_groups++];
			memset(g, 0, sizeof(*g));
			g->task_id = task_id;
			g->backend = backend;
			g->task_path = it->task_path;
			g->run = it->run;
		}
		bool dup = false;
		for (int k = 0; k < g->n && !dup; k++)
			dup = !strcmp(g->items[k]->hash, it->hash);
		if (dup) {
			b->stats->duplicates++;
			continue;
		}
		g->items = kf_xrealloc(g->items,
				       sizeof(*g->items) * (size_t)(g->n + 1));
		g->items[g->n++] = it;
	}
}

static int by_task(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	int c = strcmp(x->task_id, y->task_id);
	return c ? c : strcmp(x->backend, y->backend);
}

struct ranked {
	uint64_t h;
	const char *id;
	int i;
};

static int by_rank(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return strcmp(x->id, y->id);
}

void kf_export_split(const char *const *ids, int n, double fraction,
		     uint64_t seed, bool *test)
{
	for (int i = 0; i < n; i++)
		test[i] = false;
	if (n < 2 || !(fraction > 0))
		return;
	struct ranked *r = kf_xcalloc((size_t)n, sizeof(*r));
	for (int i = 0; i < n; i++) {
		char *key =
		    kf_xasprintf("%llu:%s", (unsigned long long)seed, ids[i]);
		struct kf_sha256 h;
		char hex[65];
		kf_sha256_init(&h);
		kf_sha256_update(&h, key, strlen(key));
		kf_sha256_final_hex(&h, hex);
		free(key);
		hex[16] = '\0';
		r[i] = (struct ranked){strtoull(hex, NULL, 16), ids[i], i};
	}
	qsort(r, (size_t)n, sizeof(*r), by_rank);
	long k = lround(fraction * n);
	if (k < 1)
		k = 1;
	if (k > n - 1)
		k = n - 1;
	for (long i = 0; i < k; i++)
		test[r[i].i] = true;
	free(r);
}

/* Marks the groups of the test split: a task's groups go together. */
static void split(struct build *b)
{
	const char **ids = kf_xcalloc((size_t)b->n_groups + 1, sizeof(*ids));
	bool *test = kf_xcalloc((size_t)b->n_groups + 1, sizeof(*test));
	int n = 0;
	for (int i = 0; i < b->n_groups; i++)
		if (!n || strcmp(ids[n - 1], b->groups[i].task_id))
			ids[n++] = b->groups[i].task_id;
	kf_export_split(ids, n, b->o->test_fraction, b->o->seed, test);
	for (int i = 0; i < b->n_groups; i++)
		for (int k = 0; k < n; k++)
			if (!strcmp(ids[k], b->groups[i].task_id))
				b->groups[i].test = test[k];
	free(ids);
	free(test);
}

/* Loads g's task and renders its prompt, once. */
static int load_group(struct group *g, struct kf_err *err)
{
	if (g->user)
		return 0;
	int rc = kf_task_load(g->task_path, &g->task, err);
	if (!rc) {
		kf_task_select_backend(g->task, g->backend);
		rc = kf_prompt_first_turn(g->task, g->backend, &g->system,
					  &g->user, NULL, err);
	}
	if (rc)
		kf_err_prefix(err, "run %lld: task %s", (long long)g->run,
			      g->task_path);
	return rc;
}

static void add_message(cJSON *arr, const char *role, const char *content)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", role);
	cJSON_AddStringToObject(m, "content", content);
	cJSON_AddItemToArray(arr, m);
}

/* The prompt's messages: the system message (when the template has one)
 * and the user message. */
static cJSON *prompt_messages(const struct group *g)
{
	cJSON *a = cJSON_CreateArray();
	if (g->system)
		add_message(a, "system", g->system);
	add_message(a, "user", g->user);
	return a;
}

/* The assistant's reply carrying the item's code; *spans (when not NULL) gets
 * the spans of that content. */
static cJSON *completion(const struct group *g, const struct item *it,
			 cJSON **spans)
{
	size_t at = 0;
	char *content =
	    kf_prompt_code_block(g->task, g->backend, it->source, &at);
	cJSON *a = cJSON_CreateArray();
	add_message(a, "assistant", content);
	if (spans)
		*spans = kf_spans_json(content, at, !g->task->kernelbench);
	free(content);
	return a;
}

static void add_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void add_ci(cJSON *o, const struct item *it)
{
	cJSON *ci = cJSON_AddArrayToObject(o, "speedup_ci95");
	cJSON_AddItemToArray(ci, isfinite(it->lo) ? cJSON_CreateNumber(it->lo)
						  : cJSON_CreateNull());
	cJSON_AddItemToArray(ci, isfinite(it->hi) ? cJSON_CreateNumber(it->hi)
						  : cJSON_CreateNull());
}

static void add_source_fields(cJSON *o, const struct group *g,
			      const struct item *it)
{
	cJSON_AddStringToObject(o, "task", g->task_id);
	cJSON_AddStringToObject(o, "backend", g->backend);
	cJSON_AddNumberToObject(o, "run", (double)it->run);
	cJSON_AddNumberToObject(o, "candidate", (double)it->candidate);
}

/* The measured figures of an item, as dpo's chosen_meta and
 * rejected_meta hold them. */
static cJSON *meta(const struct item *it)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "status", it->status);
	if (it->check)
		cJSON_AddStringToObject(m, "check", it->check);
	else
		cJSON_AddNullToObject(m, "check");
	if (it->reason)
		cJSON_AddStringToObject(m, "reason", it->reason);
	else
		cJSON_AddNullToObject(m, "reason");
	add_num(m, "speedup", it->speedup);
	add_ci(m, it);
	cJSON_AddNumberToObject(m, "run", (double)it->run);
	cJSON_AddNumberToObject(m, "candidate", (double)it->candidate);
	return m;
}

static void emit(struct build *b, struct group *g, cJSON *rec)
{
	int s = g->test ? 1 : 0;
	char *line = kf_json_print(rec);
	kf_strbuf_addstr(&b->out[s], line);
	kf_strbuf_addstr(&b->out[s], "\n");
	free(line);
	cJSON_Delete(rec);
	b->stats->records[s]++;
	g->records++;
}

static bool ok(const struct item *it)
{
	return !strcmp(it->status, "ok");
}

/* Correct items first, by falling speedup (unmeasured last), then the
 * others in the order they were evaluated. */
static int by_merit(const void *a, const void *b)
{
	const struct item *x = *(const struct item *const *)a;
	const struct item *y = *(const struct item *const *)b;
	if (ok(x) != ok(y))
		return ok(x) ? -1 : 1;
	if (ok(x)) {
		bool mx = isfinite(x->speedup), my = isfinite(y->speedup);
		if (mx != my)
			return mx ? -1 : 1;
		if (mx && x->speedup != y->speedup)
			return x->speedup > y->speedup ? -1 : 1;
	}
	if (x->run != y->run)
		return x->run < y->run ? -1 : 1;
	return x->candidate < y->candidate ? -1 : x->candidate > y->candidate;
}

static int sft(struct build *b, struct group *g, struct kf_err *err)
{
	const struct item *best = g->items[0];
	if (!ok(best))
		return 0;
	int rc = load_group(g, err);
	if (rc)
		return rc;
	cJSON *rec = cJSON_CreateObject();
	cJSON *msgs = prompt_messages(g);
	cJSON *spans = NULL;
	cJSON *reply = completion(g, best, &spans);
	cJSON_AddItemToArray(msgs, cJSON_DetachItemFromArray(reply, 0));
	cJSON_Delete(reply);
	cJSON_AddItemToObject(rec, "messages", msgs);
	add_source_fields(rec, g, best);
	add_num(rec, "speedup", best->speedup);
	add_ci(rec, best);
	cJSON_AddItemToObject(rec, "spans", spans);
	emit(b, g, rec);
	return 0;
}

/* Whether a, correct, is preferred to b: b is incorrect, or both are
 * measured and a's interval lies wholly above b's (a's median above b's
 * when either interval is missing). */
static bool preferred(const struct item *a, const struct item *b)
{
	if (!ok(b))
		return true;
	if (!isfinite(a->speedup) || !isfinite(b->speedup))
		return false;
	if (isfinite(a->lo) && isfinite(b->hi) && isfinite(b->lo) &&
	    isfinite(a->hi))
		return a->lo > b->hi;
	return a->speedup > b->speedup;
}

static int dpo(struct build *b, struct group *g, struct kf_err *err)
{
	for (int i = 0; i < g->n && ok(g->items[i]); i++) {
		for (int j = i + 1; j < g->n; j++) {
			const struct item *a = g->items[i], *r = g->items[j];
			if (!preferred(a, r))
				continue;
			int rc = load_group(g, err);
			if (rc)
				return rc;
			cJSON *rec = cJSON_CreateObject();
			cJSON_AddItemToObject(rec, "prompt",
					      prompt_messages(g));
			cJSON_AddItemToObject(rec, "chosen",
					      completion(g, a, NULL));
			cJSON_AddItemToObject(rec, "rejected",
					      completion(g, r, NULL));
			cJSON_AddItemToObject(rec, "chosen_meta", meta(a));
			cJSON_AddItemToObject(rec, "rejected_meta", meta(r));
			cJSON_AddStringToObject(rec, "task", g->task_id);
			cJSON_AddStringToObject(rec, "backend", g->backend);
			emit(b, g, rec);
		}
	}
	return 0;
}

static int rft(struct build *b, struct group *g, struct kf_err *err)
{
	if (!g->n)
		return 0;
	struct kf_reward dflt = KF_REWARD_INIT;
	const struct kf_reward *rw = b->o->reward;
	if (!rw) {
		int rc = kf_reward_init(&dflt, "log_speedup", NULL, err);
		KF_ASSERT(rc == 0);
		rw = &dflt;
	}
	struct kf_reward_item *ri = kf_xcalloc((size_t)g->n, sizeof(*ri));
	double *reward = kf_xcalloc((size_t)g->n, sizeof(*reward));
	int rc = 0;
	for (int i = 0; i < g->n && !rc; i++) {
		rc = kf_reward_item_from_result(
		    g->items[i]->result, g->items[i]->trials, &ri[i], err);
		if (rc)
			kf_err_prefix(err, "run %lld: candidate %lld",
				      (long long)g->items[i]->run,
				      (long long)g->items[i]->candidate);
	}
	if (!rc)
		rc = kf_reward_score(rw, ri, (size_t)g->n, reward, err);
	if (!rc)
		rc = load_group(g, err);
	for (int i = 0; i < g->n && !rc; i++) {
		const struct item *it = g->items[i];
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddItemToObject(rec, "prompt", prompt_messages(g));
		cJSON_AddItemToObject(rec, "completion",
				      completion(g, it, NULL));
		add_num(rec, "reward", reward[i]);
		cJSON_AddStringToObject(rec, "reward_design", rw->ops->name);
		cJSON_AddStringToObject(rec, "status", it->status);
		add_num(rec, "speedup", it->speedup);
		add_source_fields(rec, g, it);
		emit(b, g, rec);
	}
	free(ri);
	free(reward);
	return rc;
}

int kf_export_build(struct kf_store *st, const struct kf_export_opts *o,
		    char *out[2], struct kf_export_stats *stats,
		    struct kf_err *err)
{
	struct build b;
	memset(&b, 0, sizeof(b));
	memset(stats, 0, sizeof(*stats));
	b.o = o;
	b.stats = stats;
	b.keep = cJSON_CreateArray();
	b.out[0] = (struct kf_strbuf)KF_STRBUF_INIT;
	b.out[1] = (struct kf_strbuf)KF_STRBUF_INIT;
	out[0] = out[1] = NULL;
	int rc = read_runs(&b, st, err);
	if (!rc) {
		group_items(&b);
		if (b.n_groups)
			qsort(b.groups, (size_t)b.n_groups, sizeof(*b.groups),
			      by_task);
		split(&b);
	}
	for (int i = 0; i < b.n_groups && !rc; i++) {
		struct group *g = &b.groups[i];
		if (g->n)
			qsort(g->items, (size_t)g->n, sizeof(*g->items),
			      by_merit);
		if (o->format == KF_EXPORT_SFT)
			rc = sft(&b, g, err);
		else if (o->format == KF_EXPORT_DPO)
			rc = dpo(&b, g, err);
		else
			rc = rft(&b, g, err);
	}
	/* Tasks with records; a task's groups (backends) are adjacent and in
	 * one split. */
	for (int i = 0; i < b.n_groups; i++) {
		const struct group *g = &b.groups[i];
		int n = 0;
		int k = i;
		for (;
		     k < b.n_groups && !strcmp(b.groups[k].task_id, g->task_id);
		     k++)
			n += b.groups[k].records;
		if (n)
			stats->tasks[g->test ? 1 : 0]++;
		i = k - 1;
	}
	if (!rc) {
		out[0] = kf_strbuf_detach(&b.out[0]);
		if (o->test_fraction > 0)
			out[1] = kf_strbuf_detach(&b.out[1]);
	}
	kf_strbuf_release(&b.out[0]);
	kf_strbuf_release(&b.out[1]);
	for (int i = 0; i < b.n_groups; i++) {
		free(b.groups[i].items);
		kf_task_free(b.groups[i].task);
		free(b.groups[i].system);
		free(b.groups[i].user);
	}
	free(b.groups);
	free(b.items);
	cJSON_Delete(b.keep);
	return rc;
}
