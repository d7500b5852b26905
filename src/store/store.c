/*
 * store.c: the run store on SQLite: schema, versioning (user_version), and
 * the writes and reads of runs, candidates, evaluations and LLM calls. Each
 * write is one transaction, committed before the function returns.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include <kforge/store.h>

struct kf_store {
	sqlite3 *db;
	char *path;
	char journal[16];
};

static const char schema_sql[] =
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " task TEXT NOT NULL,"
    " task_id TEXT NOT NULL,"
    " backend TEXT NOT NULL,"
    " policy TEXT NOT NULL,"
    " config TEXT NOT NULL,"
    " budget INTEGER NOT NULL,"
    " started_at TEXT NOT NULL,"
    " finished_at TEXT,"
    " state TEXT NOT NULL,"
    " note TEXT,"
    " pid INTEGER);"
    "CREATE TABLE candidates ("
    " id INTEGER PRIMARY KEY,"
    " run INTEGER NOT NULL REFERENCES runs(id),"
    " seq INTEGER NOT NULL,"
    " sha256 TEXT NOT NULL,"
    " source TEXT NOT NULL,"
    " parents TEXT NOT NULL,"
    " policy TEXT NOT NULL,"
    " origin TEXT,"
    " prompt TEXT,"
    " params TEXT,"
    " created_at TEXT NOT NULL,"
    " UNIQUE (run, sha256), UNIQUE (run, seq));"
    "CREATE TABLE evaluations ("
    " id INTEGER PRIMARY KEY,"
    " candidate INTEGER NOT NULL UNIQUE REFERENCES candidates(id),"
    " status TEXT NOT NULL,"
    " check_name TEXT,"
    " reason TEXT,"
    " speedup REAL,"
    " speedup_lo REAL,"
    " speedup_hi REAL,"
    " candidate_ms REAL,"
    " reference_ms REAL,"
    " compile_ms REAL,"
    " seconds REAL,"
    " result TEXT NOT NULL,"
    " created_at TEXT NOT NULL);"
    "CREATE TABLE llm_calls ("
    " id INTEGER PRIMARY KEY,"
    " run INTEGER NOT NULL REFERENCES runs(id),"
    " model TEXT,"
    " prompt_tokens INTEGER,"
    " completion_tokens INTEGER,"
    " latency_ms REAL,"
    " attempts INTEGER,"
    " http_status INTEGER,"
    " status TEXT NOT NULL,"
    " error TEXT,"
    " completions INTEGER,"
    " candidates INTEGER,"
    " created_at TEXT NOT NULL);"
    "CREATE INDEX candidates_run ON candidates(run, seq);"
    "CREATE INDEX llm_calls_run ON llm_calls(run);"
    "PRAGMA user_version = 1;";

/* Version 2: short timings (successive halving's rungs), kept apart from a
 * candidate's one full evaluation. A version 1 file gains the table. */
static const char schema2_sql[] =
    "CREATE TABLE screenings ("
    " id INTEGER PRIMARY KEY,"
    " candidate INTEGER NOT NULL REFERENCES candidates(id),"
    " rung INTEGER NOT NULL,"
    " time_cap_s REAL NOT NULL,"
    " status TEXT NOT NULL,"
    " speedup REAL,"
    " candidate_ms REAL,"
    " reference_ms REAL,"
    " seconds REAL,"
    " result TEXT NOT NULL,"
    " created_at TEXT NOT NULL,"
    " UNIQUE (candidate, rung));"
    "CREATE INDEX screenings_candidate ON screenings(candidate);"
    "PRAGMA user_version = 2;";

static int db_fail(struct kf_store *s, struct kf_err *err, const char *what)
{
	return kf_err_set(err, KF_EIO, "%s: %s: %s", s->path, what,
			  sqlite3_errmsg(s->db));
}

static int exec(struct kf_store *s, const char *sql, struct kf_err *err)
{
	char *msg = NULL;
	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		kf_err_set(err, KF_EIO, "%s: %s", s->path,
			   msg ? msg : sqlite3_errmsg(s->db));
		sqlite3_free(msg);
		return KF_EIO;
	}
	return 0;
}

static int prepare(struct kf_store *s, const char *sql, sqlite3_stmt **st,
		   struct kf_err *err)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(s, err, "prepare");
	return 0;
}

/* One integer from a query without parameters. */
static int query_int(struct kf_store *s, const char *sql, int64_t *out,
		     struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(s, sql, &st, err);
	if (rc)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = db_fail(s, err, sql);
	else
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

/* Creates the schema in a new file, or checks the version of an old one. */
static int schema(struct kf_store *s, struct kf_err *err)
{
	int64_t version = 0, tables = 0;
	int rc = exec(s, "BEGIN IMMEDIATE", err);
	if (rc)
		return rc;
	rc = query_int(s, "PRAGMA user_version", &version, err);
	if (!rc)
		rc = query_int(s,
			       "SELECT count(*) FROM sqlite_schema WHERE "
			       "type = 'table'",
			       &tables, err);
	if (rc)
		goto out;
	if (version == 0 && tables == 0) {
		rc = exec(s, schema_sql, err);
		if (!rc)
			rc = exec(s, schema2_sql, err);
	} else if (version == 1) {
		rc = exec(s, schema2_sql, err);
	} else if (version == 0) {
		rc = kf_err_set(err, KF_EINVAL,
				"%s: not a kforge store (a SQLite database "
				"with other tables)",
				s->path);
	} else if (version > KF_STORE_SCHEMA) {
		rc = kf_err_set(err, KF_EINVAL,
				"%s: schema version %lld is newer than this "
				"kforge's (%d): use a newer kforge",
				s->path, (long long)version, KF_STORE_SCHEMA);
	}
out:
	if (rc) {
		exec(s, "ROLLBACK", NULL);
		return rc;
	}
	return exec(s, "COMMIT", err);
}

int kf_store_open(const char *path, int busy_timeout_ms, struct kf_store **out,
		  struct kf_err *err)
{
	struct kf_store *s = kf_xcalloc(1, sizeof(*s));
	int rc = 0;
	s->path = kf_xstrdup(path);
	*out = NULL;
	if (sqlite3_open_v2(path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = kf_err_set(err, KF_EIO, "%s: cannot open: %s", path,
				s->db ? sqlite3_errmsg(s->db) : "no memory");
		goto out;
	}
	sqlite3_busy_timeout(s->db,
			     busy_timeout_ms > 0 ? busy_timeout_ms : 10000);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st,
			       NULL) != SQLITE_OK) {
		/* "file is not a database" comes here or at the step. */
		rc = kf_err_set(err, KF_EINVAL, "%s: not a kforge store: %s",
				path, sqlite3_errmsg(s->db));
		goto out;
	}
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(s->journal, sizeof(s->journal), "%s",
			 (const char *)sqlite3_column_text(st, 0));
	} else {
		rc = kf_err_set(err, KF_EINVAL, "%s: not a kforge store: %s",
				path, sqlite3_errmsg(s->db));
		sqlite3_finalize(st);
		goto out;
	}
	sqlite3_finalize(st);
	if (strcmp(s->journal, "wal")) {
		rc = kf_err_set(err, KF_EIO,
				"%s: SQLite refused WAL mode (journal mode "
				"'%s'); is the file on a network file system?",
				path, s->journal);
		goto out;
	}
	/* FULL: a commit survives a power loss too, not just a kill. */
	rc =
	    exec(s, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", err);
	if (!rc)
		rc = schema(s, err);
out:
	if (rc) {
		kf_store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void kf_store_close(struct kf_store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	free(s->path);
	free(s);
}

const char *kf_store_journal_mode(struct kf_store *s)
{
	return s->journal;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static void bind_real(sqlite3_stmt *st, int i, bool have, double v)
{
	if (have)
		sqlite3_bind_double(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

/*
 * Runs one prepared write as its own transaction and finalizes it. The
 * statement is stepped once; *id gets the new row id when id is not NULL.
 */
static int write_one(struct kf_store *s, sqlite3_stmt *st, int64_t *id,
		     const char *what, struct kf_err *err)
{
	int rc = exec(s, "BEGIN IMMEDIATE", err);
	if (rc) {
		sqlite3_finalize(st);
		return rc;
	}
	int step = sqlite3_step(st);
	if (step != SQLITE_DONE) {
		if (sqlite3_extended_errcode(s->db) ==
			SQLITE_CONSTRAINT_UNIQUE ||
		    sqlite3_extended_errcode(s->db) ==
			SQLITE_CONSTRAINT_FOREIGNKEY)
			rc = kf_err_set(err, KF_EINVAL, "%s: %s: %s", s->path,
					what, sqlite3_errmsg(s->db));
		else
			rc = db_fail(s, err, what);
		sqlite3_finalize(st);
		exec(s, "ROLLBACK", NULL);
		return rc;
	}
	if (id)
		*id = sqlite3_last_insert_rowid(s->db);
	sqlite3_finalize(st);
	return exec(s, "COMMIT", err);
}

int kf_store_run_add(struct kf_store *s, const struct kf_store_run *r,
		     int64_t *id, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 "INSERT INTO runs (task, task_id, backend, policy, "
			 "config, budget, started_at, state, pid) VALUES "
			 "(?, ?, ?, ?, ?, ?, ?, 'running', ?)",
			 &st, err);
	if (rc)
		return rc;
	char *now = kf_utc_iso8601();
	bind_text(st, 1, r->task);
	bind_text(st, 2, r->task_id);
	bind_text(st, 3, r->backend);
	bind_text(st, 4, r->policy);
	bind_text(st, 5, r->config ? r->config : "{}");
	sqlite3_bind_int(st, 6, r->budget);
	bind_text(st, 7, now);
	sqlite3_bind_int64(st, 8, (int64_t)getpid());
	free(now);
	return write_one(s, st, id, "adding a run", err);
}

int kf_store_run_set_state(struct kf_store *s, int64_t run, const char *state,
			   const char *note, struct kf_err *err)
{
	bool running = !strcmp(state, "running");
	KF_ASSERT(running || !strcmp(state, "done") ||
		  !strcmp(state, "failed") || !strcmp(state, "stopped"));
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 running ? "UPDATE runs SET state = ?, note = ?, "
				   "finished_at = NULL, pid = ? WHERE id = ?"
				 : "UPDATE runs SET state = ?, note = ?, "
				   "finished_at = ?, pid = NULL WHERE id = ?",
			 &st, err);
	if (rc)
		return rc;
	char *now = kf_utc_iso8601();
	bind_text(st, 1, state);
	bind_text(st, 2, note);
	if (running)
		sqlite3_bind_int64(st, 3, (int64_t)getpid());
	else
		bind_text(st, 3, now);
	sqlite3_bind_int64(st, 4, run);
	free(now);
	rc = write_one(s, st, NULL, "setting a run's state", err);
	if (!rc && sqlite3_changes(s->db) == 0)
		rc = kf_err_set(err, KF_ENOENT, "%s: no run %lld", s->path,
				(long long)run);
	return rc;
}

/* A column as a cJSON value: text, number or null. */
static cJSON *column_json(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return cJSON_CreateNumber((double)sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return cJSON_CreateNumber(sqlite3_column_double(st, i));
	case SQLITE_TEXT:
		return cJSON_CreateString(
		    (const char *)sqlite3_column_text(st, i));
	default:
		return cJSON_CreateNull();
	}
}

/* A JSON text column parsed; null when absent or not JSON. */
static cJSON *column_parsed(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	cJSON *v = t ? cJSON_Parse(t) : NULL;
	return v ? v : cJSON_CreateNull();
}

/* Every column of the current row into obj, under its column name. */
static void row_into(sqlite3_stmt *st, cJSON *obj)
{
	int n = sqlite3_column_count(st);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToObject(obj, sqlite3_column_name(st, i),
				      column_json(st, i));
}

static bool pid_alive(int64_t pid)
{
	if (pid <= 0)
		return false;
	if (pid == (int64_t)getpid())
		return true;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static const char run_select[] =
    "SELECT r.id, r.task, r.task_id, r.backend, r.policy, r.budget,"
    " r.started_at, r.finished_at, r.state, r.note, r.pid,"
    " (SELECT count(*) FROM candidates c WHERE c.run = r.id) AS candidates,"
    " (SELECT count(*) FROM evaluations e JOIN candidates c"
    "  ON e.candidate = c.id WHERE c.run = r.id) AS evaluated,"
    " (SELECT count(*) FROM screenings x JOIN candidates c"
    "  ON x.candidate = c.id WHERE c.run = r.id) AS short_timings,"
    " (SELECT count(*) FROM evaluations e JOIN candidates c"
    "  ON e.candidate = c.id WHERE c.run = r.id AND e.status != 'ok')"
    "  AS failures,"
    " (SELECT max(e.speedup) FROM evaluations e JOIN candidates c"
    "  ON e.candidate = c.id WHERE c.run = r.id AND e.status = 'ok')"
    "  AS best_speedup,"
    " (SELECT c.id FROM evaluations e JOIN candidates c"
    "  ON e.candidate = c.id WHERE c.run = r.id AND e.status = 'ok'"
    "  AND e.speedup IS NOT NULL ORDER BY e.speedup DESC, c.seq LIMIT 1)"
    "  AS best_candidate,"
    " r.config"
    " FROM runs r";

/* The current row of run_select as an object. */
static cJSON *run_row(sqlite3_stmt *st)
{
	cJSON *o = cJSON_CreateObject();
	int n = sqlite3_column_count(st);
	for (int i = 0; i < n; i++) {
		const char *name = sqlite3_column_name(st, i);
		if (!strcmp(name, "config"))
			cJSON_AddItemToObject(o, name, column_parsed(st, i));
		else
			cJSON_AddItemToObject(o, name, column_json(st, i));
	}
	const char *state = kf_json_str(o, "state");
	if (state && !strcmp(state, "running") &&
	    !pid_alive((int64_t)kf_json_num(o, "pid", 0)))
		cJSON_ReplaceItemInObject(o, "state",
					  cJSON_CreateString("interrupted"));
	return o;
}

int kf_store_run_get(struct kf_store *s, int64_t run, cJSON **out,
		     struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	char *sql = kf_xasprintf("%s WHERE r.id = ?", run_select);
	int rc = prepare(s, sql, &st, err);
	free(sql);
	*out = NULL;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		*out = run_row(st);
	else if (step == SQLITE_DONE)
		rc = kf_err_set(err, KF_ENOENT, "%s: no run %lld", s->path,
				(long long)run);
	else
		rc = db_fail(s, err, "reading a run");
	sqlite3_finalize(st);
	return rc;
}

int kf_store_run_list(struct kf_store *s, cJSON **out, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	char *sql = kf_xasprintf("%s ORDER BY r.id DESC", run_select);
	int rc = prepare(s, sql, &st, err);
	free(sql);
	*out = NULL;
	if (rc)
		return rc;
	cJSON *arr = cJSON_CreateArray();
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW)
		cJSON_AddItemToArray(arr, run_row(st));
	if (step != SQLITE_DONE) {
		rc = db_fail(s, err, "listing runs");
		cJSON_Delete(arr);
	} else {
		*out = arr;
	}
	sqlite3_finalize(st);
	return rc;
}

int kf_store_candidate_add(struct kf_store *s, int64_t run,
			   const struct kf_store_candidate *c, int64_t *id,
			   struct kf_err *err)
{
	size_t bytes = strlen(c->source);
	if (bytes > KF_STORE_SOURCE_CAP)
		return kf_err_set(err, KF_ERANGE,
				  "candidate source of %zu bytes is over the "
				  "store's cap of %zu",
				  bytes, KF_STORE_SOURCE_CAP);
	if (c->prompt && strlen(c->prompt) > KF_STORE_PROMPT_CAP)
		return kf_err_set(err, KF_ERANGE,
				  "prompt of %zu bytes is over the store's "
				  "cap of %zu",
				  strlen(c->prompt), KF_STORE_PROMPT_CAP);
	cJSON *parents = cJSON_CreateArray();
	for (int i = 0; i < c->n_parents; i++)
		cJSON_AddItemToArray(parents,
				     cJSON_CreateNumber((double)c->parents[i]));
	char *ptext = kf_json_print(parents);
	cJSON_Delete(parents);
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 "INSERT INTO candidates (run, seq, sha256, source, "
			 "parents, policy, origin, prompt, params, created_at)"
			 " VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM "
			 "candidates WHERE run = ?1), ?2, ?3, ?4, ?5, ?6, ?7, "
			 "?8, ?9)",
			 &st, err);
	if (rc) {
		free(ptext);
		return rc;
	}
	char *now = kf_utc_iso8601();
	sqlite3_bind_int64(st, 1, run);
	bind_text(st, 2, c->sha256);
	bind_text(st, 3, c->source);
	bind_text(st, 4, ptext);
	bind_text(st, 5, c->policy);
	bind_text(st, 6, c->origin);
	bind_text(st, 7, c->prompt);
	bind_text(st, 8, c->params);
	bind_text(st, 9, now);
	free(now);
	free(ptext);
	return write_one(s, st, id, "adding a candidate", err);
}

int kf_store_candidate_find(struct kf_store *s, int64_t run, const char *sha256,
			    int64_t *id, bool *evaluated, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 "SELECT c.id, e.id FROM candidates c LEFT JOIN "
			 "evaluations e ON e.candidate = c.id WHERE c.run = ? "
			 "AND c.sha256 = ?",
			 &st, err);
	*id = 0;
	*evaluated = false;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	bind_text(st, 2, sha256);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*evaluated = sqlite3_column_type(st, 1) != SQLITE_NULL;
	} else if (step != SQLITE_DONE) {
		rc = db_fail(s, err, "finding a candidate");
	}
	sqlite3_finalize(st);
	return rc;
}

int kf_store_candidate_list(struct kf_store *s, int64_t run, bool with_source,
			    bool with_result, cJSON **out, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(
	    s,
	    "SELECT c.id, c.seq, c.sha256, c.parents, c.policy, c.origin,"
	    " c.params, c.created_at, c.source, c.prompt, e.id, e.status,"
	    " e.check_name, e.reason, e.speedup, e.speedup_lo, e.speedup_hi,"
	    " e.candidate_ms, e.reference_ms, e.compile_ms, e.seconds,"
	    " e.created_at, e.result FROM candidates c LEFT JOIN evaluations e"
	    " ON e.candidate = c.id WHERE c.run = ? ORDER BY c.seq",
	    &st, err);
	*out = NULL;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	cJSON *arr = cJSON_CreateArray();
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "id", column_json(st, 0));
		cJSON_AddItemToObject(o, "seq", column_json(st, 1));
		cJSON_AddItemToObject(o, "sha256", column_json(st, 2));
		cJSON_AddItemToObject(o, "parents", column_parsed(st, 3));
		cJSON_AddItemToObject(o, "policy", column_json(st, 4));
		cJSON_AddItemToObject(o, "origin", column_json(st, 5));
		cJSON_AddItemToObject(o, "params", column_parsed(st, 6));
		cJSON_AddItemToObject(o, "created_at", column_json(st, 7));
		if (with_source) {
			cJSON_AddItemToObject(o, "source", column_json(st, 8));
			if (sqlite3_column_type(st, 9) != SQLITE_NULL)
				cJSON_AddItemToObject(o, "prompt",
						      column_json(st, 9));
		}
		if (sqlite3_column_type(st, 10) == SQLITE_NULL) {
			cJSON_AddNullToObject(o, "evaluation");
		} else {
			cJSON *e = cJSON_AddObjectToObject(o, "evaluation");
			cJSON_AddItemToObject(e, "status", column_json(st, 11));
			cJSON_AddItemToObject(e, "check", column_json(st, 12));
			cJSON_AddItemToObject(e, "reason", column_json(st, 13));
			cJSON_AddItemToObject(e, "speedup",
					      column_json(st, 14));
			cJSON *ci = cJSON_AddArrayToObject(e, "speedup_ci95");
			cJSON_AddItemToArray(ci, column_json(st, 15));
			cJSON_AddItemToArray(ci, column_json(st, 16));
			cJSON_AddItemToObject(e, "candidate_ms",
					      column_json(st, 17));
			cJSON_AddItemToObject(e, "reference_ms",
					      column_json(st, 18));
			cJSON_AddItemToObject(e, "compile_ms",
					      column_json(st, 19));
			cJSON_AddItemToObject(e, "seconds",
					      column_json(st, 20));
			cJSON_AddItemToObject(e, "created_at",
					      column_json(st, 21));
			if (with_result)
				cJSON_AddItemToObject(e, "result",
						      column_parsed(st, 22));
		}
		cJSON_AddItemToArray(arr, o);
	}
	if (step != SQLITE_DONE) {
		rc = db_fail(s, err, "listing candidates");
		cJSON_Delete(arr);
	} else {
		*out = arr;
	}
	sqlite3_finalize(st);
	return rc;
}

/* A number at a path of object keys; *have is false when it is absent. */
static double num_at(const cJSON *o, const char *const *keys, int n, bool *have)
{
	for (int i = 0; i < n && o; i++)
		o = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
	*have = cJSON_IsNumber(o);
	return *have ? o->valuedouble : 0;
}

/* A result's JSON text (*text, malloc'd) for a row of what (an
 * evaluation, a short timing) of a candidate; an error where it has no
 * status or is over the store's cap. */
static int result_text(const cJSON *result, const char *what,
		       int64_t candidate, char **text, size_t *bytes,
		       struct kf_err *err)
{
	*text = NULL;
	if (!kf_json_str(result, "status"))
		return kf_err_set(err, KF_EINVAL,
				  "%s of candidate %lld: the result has no "
				  "status",
				  what, (long long)candidate);
	char *t = kf_json_print(result);
	*bytes = strlen(t);
	if (*bytes > KF_STORE_RESULT_CAP) {
		free(t);
		return kf_err_set(err, KF_ERANGE,
				  "%s of candidate %lld: result of %zu bytes "
				  "is over the store's cap of %zu",
				  what, (long long)candidate, *bytes,
				  KF_STORE_RESULT_CAP);
	}
	*text = t;
	return 0;
}

/* The timing's numbers a row keeps beside the result, bound from
 * parameter first on: speedup, candidate ms, reference ms (medians). */
static void bind_timing(sqlite3_stmt *st, int first, const cJSON *result)
{
	static const char *const k_sp[] = {"timing", "speedup", "median"};
	static const char *const k_cand[] = {"timing", "candidate", "median"};
	static const char *const k_ref[] = {"timing", "reference", "median"};
	const char *const *keys[] = {k_sp, k_cand, k_ref};
	for (int i = 0; i < 3; i++) {
		bool have;
		double v = num_at(result, keys[i], 3, &have);
		bind_real(st, first + i, have, v);
	}
}

int kf_store_evaluation_add(struct kf_store *s, int64_t candidate,
			    const cJSON *result, struct kf_err *err)
{
	size_t bytes = 0;
	char *text = NULL;
	int rc = result_text(result, "evaluation", candidate, &text, &bytes,
			     err);
	if (rc)
		return rc;
	sqlite3_stmt *st = NULL;
	rc = prepare(s,
			 "INSERT INTO evaluations (candidate, status, "
			 "check_name, reason, speedup, candidate_ms, "
			 "reference_ms, speedup_lo, speedup_hi, compile_ms, "
			 "seconds, result, created_at) VALUES "
			 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			 &st, err);
	if (rc) {
		free(text);
		return rc;
	}
	static const char *const k_comp[] = {"compile", "candidate", "seconds"};
	static const char *const k_sec[] = {"seconds"};
	bool have;
	double v;
	char *now = kf_utc_iso8601();
	sqlite3_bind_int64(st, 1, candidate);
	bind_text(st, 2, kf_json_str(result, "status"));
	bind_text(st, 3, kf_json_str(result, "check"));
	bind_text(st, 4, kf_json_str(result, "reason"));
	bind_timing(st, 5, result);
	const cJSON *ci = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(result, "timing"), "speedup"),
	    "ci95");
	const cJSON *lo = cJSON_GetArrayItem(ci, 0);
	const cJSON *hi = cJSON_GetArrayItem(ci, 1);
	bind_real(st, 8, cJSON_IsNumber(lo), lo ? lo->valuedouble : 0);
	bind_real(st, 9, cJSON_IsNumber(hi), hi ? hi->valuedouble : 0);
	v = num_at(result, k_comp, 3, &have);
	bind_real(st, 10, have, v * 1e3);
	v = num_at(result, k_sec, 1, &have);
	bind_real(st, 11, have, v);
	sqlite3_bind_text(st, 12, text, (int)bytes, SQLITE_TRANSIENT);
	bind_text(st, 13, now);
	free(now);
	free(text);
	return write_one(s, st, NULL, "adding an evaluation", err);
}

int kf_store_screening_add(struct kf_store *s, int64_t candidate, int rung,
			   double time_cap_s, const cJSON *result,
			   struct kf_err *err)
{
	size_t bytes = 0;
	char *text = NULL;
	int rc = result_text(result, "short timing", candidate, &text, &bytes,
			     err);
	if (rc)
		return rc;
	sqlite3_stmt *st = NULL;
	rc = prepare(s,
			 "INSERT INTO screenings (candidate, rung, "
			 "time_cap_s, status, speedup, candidate_ms, "
			 "reference_ms, seconds, result, created_at) VALUES "
			 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			 &st, err);
	if (rc) {
		free(text);
		return rc;
	}
	static const char *const k_sec[] = {"seconds"};
	bool have;
	char *now = kf_utc_iso8601();
	sqlite3_bind_int64(st, 1, candidate);
	sqlite3_bind_int(st, 2, rung);
	sqlite3_bind_double(st, 3, time_cap_s);
	bind_text(st, 4, kf_json_str(result, "status"));
	bind_timing(st, 5, result);
	double v = num_at(result, k_sec, 1, &have);
	bind_real(st, 8, have, v);
	sqlite3_bind_text(st, 9, text, (int)bytes, SQLITE_TRANSIENT);
	bind_text(st, 10, now);
	free(now);
	free(text);
	return write_one(s, st, NULL, "adding a short timing", err);
}

int kf_store_screening_list(struct kf_store *s, int64_t run, bool with_result,
			    cJSON **out, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 "SELECT x.id, x.candidate, x.rung, x.time_cap_s, "
			 "x.status, x.speedup, x.candidate_ms, "
			 "x.reference_ms, x.seconds, x.created_at, x.result "
			 "FROM screenings x JOIN candidates c ON x.candidate "
			 "= c.id WHERE c.run = ? ORDER BY x.id",
			 &st, err);
	*out = NULL;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	cJSON *arr = cJSON_CreateArray();
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *o = cJSON_CreateObject();
		for (int i = 0; i < 10; i++)
			cJSON_AddItemToObject(o, sqlite3_column_name(st, i),
					      column_json(st, i));
		if (with_result)
			cJSON_AddItemToObject(o, "result",
					      column_parsed(st, 10));
		cJSON_AddItemToArray(arr, o);
	}
	if (step != SQLITE_DONE) {
		rc = db_fail(s, err, "reading short timings");
		cJSON_Delete(arr);
	} else {
		*out = arr;
	}
	sqlite3_finalize(st);
	return rc;
}

int kf_store_llm_call_add(struct kf_store *s, const struct kf_store_llm_call *c,
			  int64_t *id, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 "INSERT INTO llm_calls (run, model, prompt_tokens, "
			 "completion_tokens, latency_ms, attempts, "
			 "http_status, status, error, completions, "
			 "candidates, created_at) VALUES "
			 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			 &st, err);
	if (rc)
		return rc;
	char *now = kf_utc_iso8601();
	sqlite3_bind_int64(st, 1, c->run);
	bind_text(st, 2, c->model);
	if (c->prompt_tokens >= 0)
		sqlite3_bind_int64(st, 3, c->prompt_tokens);
	if (c->completion_tokens >= 0)
		sqlite3_bind_int64(st, 4, c->completion_tokens);
	sqlite3_bind_double(st, 5, c->latency_ms);
	sqlite3_bind_int(st, 6, c->attempts);
	sqlite3_bind_int(st, 7, c->http_status);
	bind_text(st, 8, c->status ? c->status : "ok");
	bind_text(st, 9, c->error);
	sqlite3_bind_int(st, 10, c->completions);
	sqlite3_bind_int(st, 11, c->candidates);
	bind_text(st, 12, now);
	free(now);
	return write_one(s, st, id, "adding an LLM call", err);
}

int kf_store_llm_call_list(struct kf_store *s, int64_t run, cJSON **out,
			   struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = prepare(s,
			 "SELECT id, model, prompt_tokens, completion_tokens, "
			 "latency_ms, attempts, http_status, status, error, "
			 "completions, candidates, created_at FROM llm_calls "
			 "WHERE run = ? ORDER BY id",
			 &st, err);
	*out = NULL;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run);
	cJSON *arr = cJSON_CreateArray();
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *o = cJSON_CreateObject();
		row_into(st, o);
		cJSON_AddItemToArray(arr, o);
	}
	if (step != SQLITE_DONE) {
		rc = db_fail(s, err, "listing LLM calls");
		cJSON_Delete(arr);
	} else {
		*out = arr;
	}
	sqlite3_finalize(st);
	return rc;
}
