/*
 * redis.c: the farm on Redis Streams (farm_redis.h, docs/scale.md).
 *
 * Keys: kforge:jobs:BACKEND (the jobs' stream, consumer group "workers"),
 * kforge:results:BATCH (one submission's results), kforge:worker:NAME (a
 * worker's heartbeat, a hash with a TTL), kforge:stats (counters). A job's
 * fields: job (BATCH:INDEX, the id its result carries), results (the
 * stream to answer on), task, name (the candidate's path at the
 * submitter), source, opts (kf_eval_opts_json). A result's: job, worker,
 * deliveries, rc, err, eval_s, result (the result JSON, empty when kf_eval
 * could not start).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <kforge/farm_redis.h>

static int bad_url(const char *url, const char *why, struct kf_err *err)
{
	return kf_err_set(err, KF_EINVAL,
			  "'%s' is not a Redis URL "
			  "(redis://[:PASSWORD@]HOST[:PORT][/DB] or "
			  "unix:///PATH): %s",
			  url, why);
}

/* A decimal in [lo, hi] spanning s[0..len). */
static int parse_int(const char *s, size_t len, long lo, long hi, int *out)
{
	if (!len || len > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int kf_redis_url_parse(const char *url, struct kf_redis_url *u,
		       struct kf_err *err)
{
	memset(u, 0, sizeof(*u));
	u->port = 6379;
	if (!url || !*url)
		return bad_url("", "empty", err);
	if (!strncmp(url, "unix://", 7)) {
		const char *p = url + 7;
		size_t len = strcspn(p, "?");
		if (p[0] != '/')
			return bad_url(url, "the socket's path is not absolute",
				       err);
		if (len >= sizeof(u->path))
			return bad_url(url, "the path is too long", err);
		memcpy(u->path, p, len);
		if (p[len]) {
			if (strncmp(p + len, "?db=", 4) ||
			    parse_int(p + len + 4, strlen(p + len + 4), 0,
				      100000, &u->db))
				return bad_url(
				    url, "the only query is ?db=NUMBER", err);
		}
		return 0;
	}
	if (strncmp(url, "redis://", 8))
		return bad_url(
		    url, "it does not start with redis:// or unix://", err);
	const char *p = url + 8;
	const char *at = strrchr(p, '@');
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		if (!colon)
			return bad_url(url,
				       "credentials are USER:PASSWORD or "
				       ":PASSWORD",
				       err);
		size_t ul = (size_t)(colon - p), pl = (size_t)(at - colon - 1);
		if (ul >= sizeof(u->user) || pl >= sizeof(u->password))
			return bad_url(url, "the credentials are too long",
				       err);
		memcpy(u->user, p, ul);
		memcpy(u->password, colon + 1, pl);
		p = at + 1;
	}
	size_t hl;
	if (*p == '[') { /* [IPv6] */
		const char *close = strchr(p, ']');
		if (!close)
			return bad_url(url, "an IPv6 host lacks its ']'", err);
		hl = (size_t)(close - p - 1);
		if (hl >= sizeof(u->host))
			return bad_url(url, "the host is too long", err);
		memcpy(u->host, p + 1, hl);
		p = close + 1;
	} else {
		hl = strcspn(p, ":/");
		if (hl >= sizeof(u->host))
			return bad_url(url, "the host is too long", err);
		memcpy(u->host, p, hl);
		p += hl;
	}
	if (!u->host[0])
		return bad_url(url, "no host", err);
	for (const char *h = u->host; *h; h++)
		if (*h == ' ' || *h == '?' || *h == '#' || *h == '@')
			return bad_url(url,
				       "the host has a character no host "
				       "name has",
				       err);
	if (*p == ':') {
		size_t pl = strcspn(p + 1, "/");
		if (parse_int(p + 1, pl, 1, 65535, &u->port))
			return bad_url(url,
				       "the port is not a number from 1 "
				       "to 65535",
				       err);
		p += 1 + pl;
	}
	if (*p == '/' && p[1]) {
		if (parse_int(p + 1, strlen(p + 1), 0, 100000, &u->db))
			return bad_url(url,
				       "the database after '/' is not a "
				       "number",
				       err);
	} else if (*p && strcmp(p, "/")) {
		return bad_url(url, "unexpected text after the host", err);
	}
	return 0;
}

#ifndef KF_HAVE_HIREDIS

bool kf_redis_available(void)
{
	return false;
}

static int nosys(struct kf_err *err)
{
	return kf_err_set(err, KF_ENOSYS,
			  "kforge was built without hiredis: the Redis farm "
			  "is not available here (make deps, then make)");
}

int kf_redis_check(const char *url, double timeout_s, struct kf_err *err)
{
	(void)url;
	(void)timeout_s;
	return nosys(err);
}

int kf_rfarm_worker_run(const struct kf_rfarm_worker_opts *o,
			struct kf_err *err)
{
	(void)o;
	return nosys(err);
}

int kf_rfarm_submit(const struct kf_rfarm_submit_opts *so,
		    const char *task_path, struct kf_farm_item *items, int n,
		    const struct kf_eval_opts *eo, struct kf_rfarm_stats *stats,
		    struct kf_err *err)
{
	(void)so;
	(void)task_path;
	(void)items;
	(void)n;
	(void)eo;
	(void)stats;
	return nosys(err);
}

int kf_rfarm_status(const char *url, cJSON **status, struct kf_err *err)
{
	(void)url;
	*status = NULL;
	return nosys(err);
}

#else /* KF_HAVE_HIREDIS */

#include <hiredis/hiredis.h>

#define GROUP "workers"
#define STATS_KEY "kforge:stats"
#define RESULTS_TTL "86400" /* a results stream nobody reads: a day */

bool kf_redis_available(void)
{
	return true;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- one connection, reopened after a failure ---- */

struct conn {
	const char *url;
	struct kf_redis_url u;
	redisContext *c;
	double timeout_s; /* connect, and every command beyond its BLOCK */
};

static struct timeval tv_of(double s)
{
	struct timeval tv;
	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - floor(s)) * 1e6);
	return tv;
}

static void conn_drop(struct conn *k)
{
	if (k->c)
		redisFree(k->c);
	k->c = NULL;
}

static redisReply *raw_call(struct conn *k, int argc, const char **argv,
			    const size_t *lens)
{
	/* A write to a socket whose peer has gone raises SIGPIPE: block it
	 * for the call and take back the one it raised (as frame.c does),
	 * so that the caller sees a failed call, not its end. */
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGPIPE);
	redisReply *r = redisCommandArgv(k->c, argc, argv, lens);
	if (!was_pending) {
		const struct timespec zero = {0, 0};
		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static redisReply *call_argv(struct conn *k, struct kf_err *err,
			     const char *const *args);

static int conn_open(struct conn *k, struct kf_err *err)
{
	if (k->c)
		return 0;
	struct timeval tv = tv_of(k->timeout_s);
	redisContext *c =
	    k->u.path[0] ? redisConnectUnixWithTimeout(k->u.path, tv)
			 : redisConnectWithTimeout(k->u.host, k->u.port, tv);
	if (!c)
		return kf_err_set(err, KF_EIO, "%s: cannot connect: no memory",
				  k->url);
	if (c->err) {
		kf_err_set(err, KF_EIO, "%s: cannot connect: %s", k->url,
			   c->errstr);
		redisFree(c);
		return KF_EIO;
	}
	/* Commands block for at most a second (BLOCK 1000) beyond this. */
	redisSetTimeout(c, tv_of(k->timeout_s + 1.0));
	redisEnableKeepAlive(c);
	k->c = c;
	redisReply *r = NULL;
	char db[16];
	if (k->u.password[0]) {
		r = k->u.user[0]
			? call_argv(k, err,
				    (const char *const[]){"AUTH", k->u.user,
							  k->u.password, NULL})
			: call_argv(k, err,
				    (const char *const[]){"AUTH", k->u.password,
							  NULL});
		if (!r)
			goto fail;
		freeReplyObject(r);
	}
	if (k->u.db) {
		snprintf(db, sizeof(db), "%d", k->u.db);
		r = call_argv(k, err,
			      (const char *const[]){"SELECT", db, NULL});
		if (!r)
			goto fail;
		freeReplyObject(r);
	}
	return 0;
fail:
	conn_drop(k);
	return err->code ? err->code : KF_EIO;
}

/* Runs one command (args NULL-terminated). NULL with err set: KF_EIO when
 * the connection failed (it is dropped, to be reopened by the next call),
 * KF_EPROTO for an error reply (the connection stays). */
static redisReply *call_argv(struct conn *k, struct kf_err *err,
			     const char *const *args)
{
	const char *argv[40];
	size_t lens[40];
	int argc = 0;
	while (args[argc]) {
		KF_ASSERT(argc < 40);
		argv[argc] = args[argc];
		lens[argc] = strlen(args[argc]);
		argc++;
	}
	if (!k->c && conn_open(k, err))
		return NULL;
	redisReply *r = raw_call(k, argc, argv, lens);
	if (!r) {
		kf_err_set(err, KF_EIO, "%s: %s: %s", k->url, argv[0],
			   k->c->errstr[0] ? k->c->errstr : "connection lost");
		conn_drop(k);
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		kf_err_set(err, KF_EPROTO, "%s: %s: %s", k->url, argv[0],
			   r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

#define CALL(k, err, ...)                                                      \
	call_argv(k, err, (const char *const[]){__VA_ARGS__, NULL})

/* Runs a command whose reply is not needed; 0 or the error's code. */
#define DO(k, err, ...) do_reply(CALL(k, err, __VA_ARGS__), err)
static int do_reply(redisReply *r, struct kf_err *err)
{
	if (!r)
		return err->code ? err->code : KF_EIO;
	freeReplyObject(r);
	return 0;
}

/* Worth waiting out: the connection failed, or Redis is still loading
 * its data after a restart. */
static bool transient(const struct kf_err *err)
{
	return err->code == KF_EIO || strstr(err->msg, "LOADING") ||
	       strstr(err->msg, "MASTERDOWN") || strstr(err->msg, "TRYAGAIN");
}

static int conn_init(struct conn *k, const char *url, double timeout_s,
		     struct kf_err *err)
{
	memset(k, 0, sizeof(*k));
	k->url = url;
	k->timeout_s = timeout_s;
	return kf_redis_url_parse(url, &k->u, err);
}

int kf_redis_check(const char *url, double timeout_s, struct kf_err *err)
{
	struct conn k;
	if (conn_init(&k, url, timeout_s, err))
		return err->code;
	int rc = DO(&k, err, "PING");
	conn_drop(&k);
	return rc;
}

/* ---- replies ---- */

static const redisReply *el(const redisReply *r, size_t i)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return NULL;
	return r->element[i];
}

static const char *str_of(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING ||
		     r->type == REDIS_REPLY_STATUS)
		   ? r->str
		   : NULL;
}

/* The value of name in a flat [field, value, ...] array, or NULL. */
static const char *field(const redisReply *kv, const char *name)
{
	for (size_t i = 0; kv && i + 1 < kv->elements; i += 2) {
		const char *f = str_of(el(kv, i));
		if (f && !strcmp(f, name))
			return str_of(el(kv, i + 1));
	}
	return NULL;
}

static void jobs_key(const char *backend, char *out, size_t size)
{
	snprintf(out, size, "kforge:jobs:%s",
		 backend && *backend ? backend : "host");
}

/* The consumer group, created at the stream's start (with the stream)
 * unless it is there. */
static int ensure_group(struct conn *k, const char *key, struct kf_err *err)
{
	redisReply *r =
	    CALL(k, err, "XGROUP", "CREATE", key, GROUP, "0", "MKSTREAM");
	if (r) {
		freeReplyObject(r);
		return 0;
	}
	if (err->code == KF_EPROTO && strstr(err->msg, "BUSYGROUP")) {
		*err = (struct kf_err)KF_ERR_INIT;
		return 0;
	}
	return err->code;
}

static double unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the worker ---- */

struct worker {
	const struct kf_rfarm_worker_opts *o;
	char name[192], host[128], key[64], hb_key[224], tmpdir[256];
	int slots, running;
	double visibility_s, heartbeat_s;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	char (*sid)[64];  /* the stream entry each slot holds, "" none */
	char (*job)[128]; /* its job id */
	long done, reclaimed, abandoned;
	uint64_t started_ns, active_ns;
	bool quit;
};

struct slot {
	struct worker *w;
	int i;
	char consumer[208], cursor[64];
	struct conn k;
	bool down; /* Redis unreachable: said once */
};

static bool stopping(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	bool s = w->quit || (w->o->stop && *w->o->stop);
	pthread_mutex_unlock(&w->lock);
	return s;
}

/* Says once that Redis went away; waits a little before the next try. */
static void lost(struct slot *s, const struct kf_err *err, int *backoff_ms)
{
	if (!s->down)
		kf_log(KF_LOG_WARN, "farm worker %s: %s (retrying)",
		       s->consumer, err->msg);
	s->down = true;
	*backoff_ms = *backoff_ms ? *backoff_ms * 2 : 100;
	if (*backoff_ms > 2000)
		*backoff_ms = 2000;
	sleep_ms(*backoff_ms);
}

static void back(struct slot *s, int *backoff_ms)
{
	if (s->down)
		kf_log(KF_LOG_WARN, "farm worker %s: Redis is back",
		       s->consumer);
	s->down = false;
	*backoff_ms = 0;
}

/* A file name for the candidate's source: the submitter's base name, its
 * odd characters replaced. */
static void base_name(const char *name, char *out, size_t size)
{
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	size_t j = 0;
	for (; *b && j + 1 < size; b++)
		out[j++] =
		    (strchr("._-", *b) || (*b >= '0' && *b <= '9') ||
		     (*b >= 'a' && *b <= 'z') || (*b >= 'A' && *b <= 'Z'))
			? *b
			: '_';
	out[j] = '\0';
	if (!j || out[0] == '.')
		snprintf(out, size, "candidate.c");
}

static cJSON *abandoned_result(const char *task, const char *name,
			       const char *backend, int deliveries, int cap)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "kforge", KF_VERSION);
	char *now = kf_utc_iso8601();
	cJSON_AddStringToObject(r, "created_at", now);
	free(now);
	cJSON_AddStringToObject(r, "status", "infra_error");
	cJSON_AddStringToObject(r, "check", "farm_attempts");
	char *why = kf_xasprintf(
	    "the job was delivered %d times (the cap is %d): each worker that "
	    "took it stopped answering before it finished (killed, or cut "
	    "off from Redis past the visibility timeout)",
	    deliveries, cap);
	cJSON_AddStringToObject(r, "reason", why);
	free(why);
	cJSON_AddStringToObject(r, "backend", backend);
	cJSON *t = cJSON_AddObjectToObject(r, "task");
	cJSON_AddStringToObject(t, "path", task ? task : "");
	cJSON *c = cJSON_AddObjectToObject(r, "candidate");
	cJSON_AddStringToObject(c, "path", name ? name : "");
	cJSON_AddArrayToObject(r, "trials");
	return r;
}

/* Replaces from by to in every string of j (the candidate's file here by
 * its name at the submitter, in compile logs and reasons). */
static void replace_path(cJSON *j, const char *from, const char *to)
{
	cJSON *c;
	cJSON_ArrayForEach(c, j)
	{
		if (cJSON_IsString(c) && strstr(c->valuestring, from)) {
			struct kf_strbuf sb = KF_STRBUF_INIT;
			const char *p = c->valuestring, *hit;
			while ((hit = strstr(p, from))) {
				kf_strbuf_add(&sb, p, (size_t)(hit - p));
				kf_strbuf_addstr(&sb, to);
				p = hit + strlen(from);
			}
			kf_strbuf_addstr(&sb, p);
			cJSON_SetValuestring(c, kf_strbuf_str(&sb));
			kf_strbuf_release(&sb);
		} else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
			replace_path(c, from, to);
		}
	}
}

static void replace_in(char *s, size_t size, const char *from, const char *to)
{
	char *hit = strstr(s, from);
	if (!hit)
		return;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_add(&sb, s, (size_t)(hit - s));
	kf_strbuf_addstr(&sb, to);
	kf_strbuf_addstr(&sb, hit + strlen(from));
	snprintf(s, size, "%s", kf_strbuf_str(&sb));
	kf_strbuf_release(&sb);
}

/* Evaluates one job's candidate; *res or *rc and why. */
static void evaluate(struct slot *s, const char *task, const char *name,
		     const char *source, const char *opts, cJSON **res, int *rc,
		     char *why, size_t why_size)
{
	struct worker *w = s->w;
	struct kf_err err = KF_ERR_INIT;
	cJSON *oj = cJSON_Parse(opts);
	if (!cJSON_IsObject(oj)) {
		*rc = KF_EINVAL;
		snprintf(why, why_size,
			 "malformed job: its opts are not a "
			 "JSON object");
		cJSON_Delete(oj);
		return;
	}
	struct kf_eval_opts eo;
	kf_eval_opts_from_json(oj, &eo);
	/* This node's own paths; the backend is the queue's. */
	eo.worker_path = NULL;
	eo.include_dir = NULL;
	eo.python = w->o->python;
	eo.backend = w->o->backend;
	eo.device = strcmp(w->o->backend, "cuda") ? -1 : s->i;
	char base[128];
	base_name(name, base, sizeof(base));
	char *path = kf_xasprintf("%s/%d/%s", w->tmpdir, s->i, base);
	if (kf_file_write_atomic(path, source, strlen(source), &err)) {
		*rc = err.code;
		snprintf(why, why_size, "%s", err.msg);
	} else {
		*rc = kf_eval(task, path, &eo, res, &err);
		if (*rc)
			snprintf(why, why_size, "%s", err.msg);
		unlink(path);
	}
	/* The record names the candidate as the submitter did. */
	if (*res)
		replace_path(*res, path, name);
	replace_in(why, why_size, path, name);
	free(path);
	cJSON_Delete(oj);
}

/* Answers the job and acknowledges it, in one transaction: the result is
 * written before (and with) the acknowledgement, or neither is. */
static int answer(struct slot *s, const char *sid, const char *job,
		  const char *results, const char *rjson, int rc,
		  const char *why, double eval_s, int deliveries,
		  bool abandoned, struct kf_err *err)
{
	struct worker *w = s->w;
	char rcs[16], dels[16], evs[32];
	snprintf(rcs, sizeof(rcs), "%d", rc);
	snprintf(dels, sizeof(dels), "%d", deliveries);
	snprintf(evs, sizeof(evs), "%.6f", eval_s);
	struct conn *k = &s->k;
	int e;
	if ((e = DO(k, err, "MULTI")))
		return e;
	if ((e = DO(k, err, "XADD", results, "*", "job", job, "worker",
		    s->consumer, "deliveries", dels, "rc", rcs, "err", why,
		    "eval_s", evs, "result", rjson ? rjson : "")) ||
	    (e = DO(k, err, "EXPIRE", results, RESULTS_TTL)) ||
	    (e = DO(k, err, "XACK", w->key, GROUP, sid)) ||
	    (e = DO(k, err, "XDEL", w->key, sid)) ||
	    (e = DO(k, err, "HINCRBY", STATS_KEY, "done", "1")) ||
	    (deliveries > 1 &&
	     (e = DO(k, err, "HINCRBY", STATS_KEY, "reclaimed", "1"))) ||
	    (abandoned &&
	     (e = DO(k, err, "HINCRBY", STATS_KEY, "abandoned", "1")))) {
		if (k->c) {
			struct kf_err e2 = KF_ERR_INIT;
			DO(k, &e2, "DISCARD");
		}
		return e;
	}
	redisReply *r = CALL(k, err, "EXEC");
	if (!r)
		return err->code;
	bool ok = r->type == REDIS_REPLY_ARRAY;
	freeReplyObject(r);
	if (!ok)
		return kf_err_set(err, KF_EPROTO, "%s: EXEC: aborted", k->url);
	return 0;
}

static void run_job(struct slot *s, const redisReply *entry, bool taken_over)
{
	struct worker *w = s->w;
	const char *sid = str_of(el(entry, 0));
	const redisReply *kv = el(entry, 1);
	const char *job = field(kv, "job"), *results = field(kv, "results");
	const char *task = field(kv, "task"), *name = field(kv, "name");
	const char *source = field(kv, "source"), *opts = field(kv, "opts");
	struct kf_err err = KF_ERR_INIT;
	if (!sid)
		return;
	if (!job || !results) { /* nobody to answer: drop it */
		kf_log(KF_LOG_WARN,
		       "farm worker %s: entry %s is not a kforge job: dropped",
		       s->consumer, sid);
		DO(&s->k, &err, "XACK", w->key, GROUP, sid);
		DO(&s->k, &err, "XDEL", w->key, sid);
		return;
	}
	int deliveries = 1;
	if (taken_over) {
		redisReply *p =
		    CALL(&s->k, &err, "XPENDING", w->key, GROUP, sid, sid, "1");
		const redisReply *n = el(el(p, 0), 3);
		if (n && n->type == REDIS_REPLY_INTEGER)
			deliveries = (int)n->integer;
		if (p)
			freeReplyObject(p);
		else
			deliveries = 2;
	}
	pthread_mutex_lock(&w->lock);
	snprintf(w->sid[s->i], sizeof(w->sid[0]), "%s", sid);
	snprintf(w->job[s->i], sizeof(w->job[0]), "%s", job);
	w->active_ns = kf_now_ns();
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);

	cJSON *res = NULL;
	int rc = 0;
	char why[1024] = "";
	bool abandoned = deliveries > w->o->max_attempts;
	uint64_t t0 = kf_now_ns();
	if (abandoned)
		res = abandoned_result(task, name, w->o->backend, deliveries,
				       w->o->max_attempts);
	else if (!task || !name || !source || !opts) {
		rc = KF_EINVAL;
		snprintf(why, sizeof(why),
			 "malformed job %s: it lacks task, name, source or "
			 "opts",
			 job);
	} else
		evaluate(s, task, name, source, opts, &res, &rc, why,
			 sizeof(why));
	double eval_s = (double)(kf_now_ns() - t0) * 1e-9;
	if (res) {
		cJSON *fm = cJSON_AddObjectToObject(res, "farm");
		cJSON_AddStringToObject(fm, "worker", s->consumer);
		cJSON_AddStringToObject(fm, "job", job);
		cJSON_AddNumberToObject(fm, "deliveries", deliveries);
		cJSON_AddNumberToObject(fm, "slot", s->i);
		if (abandoned)
			cJSON_AddBoolToObject(fm, "abandoned", true);
	}
	char *rjson = res ? cJSON_PrintUnformatted(res) : NULL;
	cJSON_Delete(res);
	/* Until it is written: Redis may be away (restarting, cut off). A
	 * worker told to stop gives up after a while; the job then stays
	 * pending, and another worker takes it over. */
	int backoff = 0;
	uint64_t give_up = 0;
	for (;;) {
		struct kf_err e = KF_ERR_INIT;
		if (!answer(s, sid, job, results, rjson, rc, why, eval_s,
			    deliveries, abandoned, &e)) {
			back(s, &backoff);
			break;
		}
		if (!transient(&e))
			kf_log(KF_LOG_WARN, "farm worker %s: job %s: %s",
			       s->consumer, job, e.msg);
		if (stopping(w)) {
			if (!give_up)
				give_up = kf_now_ns() + 10ull * 1000000000ull;
			else if (kf_now_ns() > give_up) {
				kf_log(KF_LOG_WARN,
				       "farm worker %s: job %s left unanswered "
				       "(another worker will take it over)",
				       s->consumer, job);
				break;
			}
		}
		lost(s, &e, &backoff);
	}
	free(rjson);
	pthread_mutex_lock(&w->lock);
	w->sid[s->i][0] = '\0';
	w->job[s->i][0] = '\0';
	w->done++;
	w->reclaimed += deliveries > 1;
	w->abandoned += abandoned;
	w->active_ns = kf_now_ns();
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

static void *slot_main(void *arg)
{
	struct slot *s = arg;
	struct worker *w = s->w;
	int backoff = 0;
	bool group = false;
	char vis[32];
	snprintf(vis, sizeof(vis), "%.0f", w->visibility_s * 1000);
	snprintf(s->cursor, sizeof(s->cursor), "0-0");
	while (!stopping(w)) {
		struct kf_err err = KF_ERR_INIT;
		if (!group) {
			if (ensure_group(&s->k, w->key, &err)) {
				lost(s, &err, &backoff);
				continue;
			}
			group = true;
		}
		/* First a job whose worker stopped answering, then a new
		 * one. */
		const redisReply *entry = NULL;
		bool taken_over = false;
		redisReply *r = CALL(&s->k, &err, "XAUTOCLAIM", w->key, GROUP,
				     s->consumer, vis, s->cursor, "COUNT", "1");
		if (r) {
			const char *next = str_of(el(r, 0));
			snprintf(s->cursor, sizeof(s->cursor), "%s",
				 next ? next : "0-0");
			const redisReply *e = el(el(r, 1), 0);
			if (e && e->type == REDIS_REPLY_ARRAY && el(e, 1) &&
			    el(e, 1)->type == REDIS_REPLY_ARRAY) {
				entry = e;
				taken_over = true;
			} else {
				freeReplyObject(r);
				r = CALL(&s->k, &err, "XREADGROUP", "GROUP",
					 GROUP, s->consumer, "COUNT", "1",
					 "BLOCK", "1000", "STREAMS", w->key,
					 ">");
				entry = r ? el(el(el(r, 0), 1), 0) : NULL;
			}
		}
		if (!r) {
			group = false; /* NOGROUP after a restart without
					  persistence: made again */
			lost(s, &err, &backoff);
			continue;
		}
		back(s, &backoff);
		if (entry) {
			if (taken_over)
				kf_log(KF_LOG_INFO,
				       "farm worker %s: took over entry %s",
				       s->consumer, str_of(el(entry, 0)));
			run_job(s, entry, taken_over);
		} else if (w->o->idle_exit_s > 0) {
			pthread_mutex_lock(&w->lock);
			bool busy = false;
			for (int i = 0; i < w->slots; i++)
				busy = busy || w->sid[i][0];
			if (!busy &&
			    (double)(kf_now_ns() - w->active_ns) * 1e-9 >
				w->o->idle_exit_s)
				w->quit = true;
			pthread_mutex_unlock(&w->lock);
		}
		freeReplyObject(r);
	}
	conn_drop(&s->k);
	pthread_mutex_lock(&w->lock);
	w->running--;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The heartbeat: the worker's hash (with a TTL of five periods) and the
 * idle time of the jobs it holds kept at zero, so that nobody takes them
 * over while they are evaluated. */
static void beat(struct worker *w, struct conn *k, struct slot *slots)
{
	struct kf_err err = KF_ERR_INIT;
	char sids[64][64];
	struct kf_strbuf jobs = KF_STRBUF_INIT;
	pthread_mutex_lock(&w->lock);
	int n = w->slots < 64 ? w->slots : 64;
	for (int i = 0; i < n; i++) {
		memcpy(sids[i], w->sid[i], sizeof(sids[i]));
		if (w->job[i][0])
			kf_strbuf_addf(&jobs, "%s%s", jobs.len ? " " : "",
				       w->job[i]);
	}
	char done[32], reclaimed[32], slots_s[16], gpus[16], pid[16], seen[32],
	    up[32];
	snprintf(done, sizeof(done), "%ld", w->done);
	snprintf(reclaimed, sizeof(reclaimed), "%ld", w->reclaimed);
	pthread_mutex_unlock(&w->lock);
	snprintf(slots_s, sizeof(slots_s), "%d", w->slots);
	/* A host node evaluates on its CPUs: no GPU. */
	snprintf(gpus, sizeof(gpus), "%d",
		 strcmp(w->o->backend, "cuda") ? 0 : w->slots);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(seen, sizeof(seen), "%.3f", unix_now());
	snprintf(up, sizeof(up), "%.3f",
		 (double)(kf_now_ns() - w->started_ns) * 1e-9);
	char ttl[16];
	snprintf(ttl, sizeof(ttl), "%d",
		 (int)ceil(w->heartbeat_s * 5 > 5 ? w->heartbeat_s * 5 : 5));
	int rc =
	    DO(k, &err, "HSET", w->hb_key, "name", w->name, "host", w->host,
	       "pid", pid, "backend", w->o->backend, "slots", slots_s, "gpus",
	       gpus, "jobs",
	       jobs.len ? kf_strbuf_str(&jobs) : "-", "done", done, "reclaimed",
	       reclaimed, "seen", seen, "up_s", up);
	if (!rc)
		rc = DO(k, &err, "EXPIRE", w->hb_key, ttl);
	for (int i = 0; !rc && i < n; i++) {
		if (!sids[i][0])
			continue;
		/* Still this slot's (not taken over meanwhile)? */
		redisReply *p = CALL(k, &err, "XPENDING", w->key, GROUP,
				     sids[i], sids[i], "1", slots[i].consumer);
		if (!p) {
			rc = err.code;
			break;
		}
		bool mine = el(p, 0) != NULL;
		freeReplyObject(p);
		if (mine)
			rc = DO(k, &err, "XCLAIM", w->key, GROUP,
				slots[i].consumer, "0", sids[i], "JUSTID");
	}
	kf_strbuf_release(&jobs);
	if (rc && transient(&err))
		conn_drop(k);
}

static void worker_cleanup_dir(struct worker *w)
{
	for (int i = 0; i < w->slots; i++) {
		char *d = kf_xasprintf("%s/%d", w->tmpdir, i);
		rmdir(d);
		free(d);
	}
	rmdir(w->tmpdir);
}

int kf_rfarm_worker_run(const struct kf_rfarm_worker_opts *o,
			struct kf_err *err)
{
	struct worker w;
	memset(&w, 0, sizeof(w));
	w.o = o;
	struct conn hk;
	if (conn_init(&hk, o->url, 5.0, err))
		return err->code;
	if (DO(&hk, err, "PING")) {
		conn_drop(&hk);
		return err->code == KF_EPROTO ? KF_EIO : err->code;
	}
	if (gethostname(w.host, sizeof(w.host) - 1))
		snprintf(w.host, sizeof(w.host), "unknown");
	if (o->name && *o->name)
		snprintf(w.name, sizeof(w.name), "%s", o->name);
	else
		snprintf(w.name, sizeof(w.name), "%s-%d", w.host,
			 (int)getpid());
	jobs_key(o->backend, w.key, sizeof(w.key));
	snprintf(w.hb_key, sizeof(w.hb_key), "kforge:worker:%s", w.name);
	w.slots = o->slots;
	if (w.slots <= 0)
		w.slots = strcmp(o->backend, "cuda") ? 1 : kf_farm_gpu_count();
	if (w.slots <= 0) {
		conn_drop(&hk);
		return kf_err_set(err, KF_ENOSYS,
				  "--backend cuda: no GPU is visible here "
				  "(--gpus N to say how many)");
	}
	if (w.slots > 64)
		w.slots = 64;
	w.visibility_s = o->visibility_s > 0 ? o->visibility_s : 60.0;
	w.heartbeat_s = o->heartbeat_s > 0 ? o->heartbeat_s : 2.0;
	if (w.heartbeat_s > w.visibility_s / 4)
		w.heartbeat_s = w.visibility_s / 4;
	const char *tmp = getenv("TMPDIR");
	snprintf(w.tmpdir, sizeof(w.tmpdir), "%s/kforge-farm-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(w.tmpdir)) {
		conn_drop(&hk);
		return kf_err_set(err, KF_EIO, "%s: %s", w.tmpdir,
				  strerror(errno));
	}
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.wake, NULL);
	w.sid = kf_xcalloc((size_t)w.slots, sizeof(*w.sid));
	w.job = kf_xcalloc((size_t)w.slots, sizeof(*w.job));
	w.started_ns = w.active_ns = kf_now_ns();
	struct slot *slots = kf_xcalloc((size_t)w.slots, sizeof(*slots));
	pthread_t *th = kf_xcalloc((size_t)w.slots, sizeof(*th));
	kf_log(KF_LOG_INFO, "farm worker %s: %d slot(s) on %s, backend %s",
	       w.name, w.slots, o->url, o->backend);
	for (int i = 0; i < w.slots; i++) {
		slots[i].w = &w;
		slots[i].i = i;
		snprintf(slots[i].consumer, sizeof(slots[i].consumer), "%s/%d",
			 w.name, i);
		conn_init(&slots[i].k, o->url, 5.0, err);
		char *d = kf_xasprintf("%s/%d", w.tmpdir, i);
		if (kf_mkdir_p(d, err))
			KF_ASSERT(!"cannot make a slot's directory");
		free(d);
	}
	w.running = w.slots;
	for (int i = 0; i < w.slots; i++)
		KF_ASSERT(pthread_create(&th[i], NULL, slot_main, &slots[i]) ==
			  0);
	/* This thread beats until the slots are done. */
	pthread_mutex_lock(&w.lock);
	while (w.running > 0) {
		pthread_mutex_unlock(&w.lock);
		beat(&w, &hk, slots);
		pthread_mutex_lock(&w.lock);
		if (w.running <= 0)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		double t = ts.tv_sec + ts.tv_nsec * 1e-9 + w.heartbeat_s;
		ts.tv_sec = (time_t)t;
		ts.tv_nsec = (long)((t - floor(t)) * 1e9);
		pthread_cond_timedwait(&w.wake, &w.lock, &ts);
	}
	pthread_mutex_unlock(&w.lock);
	for (int i = 0; i < w.slots; i++)
		pthread_join(th[i], NULL);
	struct kf_err e2 = KF_ERR_INIT;
	DO(&hk, &e2, "DEL", w.hb_key);
	conn_drop(&hk);
	kf_log(KF_LOG_INFO, "farm worker %s: %ld job(s) done", w.name, w.done);
	worker_cleanup_dir(&w);
	free(slots);
	free(th);
	free(w.sid);
	free(w.job);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.wake);
	*err = (struct kf_err)KF_ERR_INIT;
	return 0;
}

/* ---- the submitter ---- */

/* The task as the workers see it: relative to the kforge tree, taken to
 * be the current directory, when it lies under it. */
static const char *task_ref(const char *task, const char *cwd)
{
	size_t n = strlen(cwd);
	if (task[0] == '/' && n && !strncmp(task, cwd, n) && task[n] == '/')
		return task + n + 1;
	return task;
}

static void item_error(struct kf_farm_item *it, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void item_error(struct kf_farm_item *it, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->err, sizeof(it->err), fmt, ap);
	va_end(ap);
	it->rc = rc ? rc : KF_EIO;
	it->result = NULL;
}

struct submission {
	struct conn k;
	struct kf_farm_item *items;
	int n;
	bool *answered;
	uint64_t t0;
	struct kf_rfarm_stats *st;
	struct kf_farm_progress pg;
	void (*progress)(void *, const struct kf_farm_progress *);
	void *parg;
	const char *batch;
	volatile sig_atomic_t *cancel;
};

static bool cancelled(const struct submission *sb)
{
	return sb->cancel && *sb->cancel;
}

/* Takes one result entry: the first per job is kept. */
static void take(struct submission *sb, const redisReply *entry)
{
	const redisReply *kv = el(entry, 1);
	const char *job = field(kv, "job");
	size_t bl = strlen(sb->batch);
	if (!job || strncmp(job, sb->batch, bl) || job[bl] != ':')
		return;
	int i = -1;
	if (parse_int(job + bl + 1, strlen(job + bl + 1), 0, sb->n - 1, &i))
		return;
	if (sb->answered[i]) {
		sb->st->duplicates++;
		return;
	}
	struct kf_farm_item *it = &sb->items[i];
	const char *rjson = field(kv, "result");
	const char *rcs = field(kv, "rc"), *why = field(kv, "err");
	const char *evs = field(kv, "eval_s"), *dels = field(kv, "deliveries");
	it->eval_s = evs ? strtod(evs, NULL) : 0;
	int deliveries = dels ? atoi(dels) : 1;
	if (rjson && *rjson) {
		it->result = cJSON_Parse(rjson);
		if (!it->result) {
			item_error(it, KF_EPROTO,
				   "job %s: its result is not JSON", job);
		} else {
			it->rc = 0;
			const cJSON *fm =
			    cJSON_GetObjectItem(it->result, "farm");
			it->device = (int)kf_json_num(fm, "slot", -1);
			const cJSON *cc = cJSON_GetObjectItem(
			    cJSON_GetObjectItem(it->result, "compile"),
			    "candidate");
			if (!cJSON_IsTrue(cJSON_GetObjectItem(cc, "cached")))
				it->compile_s = kf_json_num(cc, "seconds", 0);
			if (cJSON_IsTrue(cJSON_GetObjectItem(fm, "abandoned")))
				sb->st->abandoned++;
		}
	} else {
		item_error(it, rcs ? atoi(rcs) : KF_EIO, "%s",
			   why && *why ? why : "no result");
		it->device = -1;
	}
	double since = (double)(kf_now_ns() - sb->t0) * 1e-9;
	it->wait_s = since > it->eval_s ? since - it->eval_s : 0;
	sb->answered[i] = true;
	sb->st->answered++;
	if (deliveries > 1)
		sb->st->reclaimed++;
	sb->pg.done++;
	if (it->rc || kf_result_status(it->result) != KF_STATUS_OK)
		sb->pg.failed++;
	if (sb->progress) {
		sb->pg.item = it;
		sb->progress(sb->parg, &sb->pg);
	}
}

/* Waits out a lost connection until the deadline; 0 when back. */
static int reconnect(struct submission *sb, uint64_t deadline,
		     struct kf_err *err, bool *said)
{
	if (!*said)
		kf_log(KF_LOG_WARN, "farm: %s (retrying)", err->msg);
	*said = true;
	int backoff = 100;
	while (kf_now_ns() < deadline && !cancelled(sb)) {
		sleep_ms(backoff);
		backoff = backoff < 2000 ? backoff * 2 : 2000;
		struct kf_err e = KF_ERR_INIT;
		if (!DO(&sb->k, &e, "PING")) {
			sb->st->reconnects++;
			*said = false;
			return 0;
		}
	}
	return KF_ETIMEDOUT;
}

int kf_rfarm_submit(const struct kf_rfarm_submit_opts *so,
		    const char *task_path, struct kf_farm_item *items, int n,
		    const struct kf_eval_opts *eo, struct kf_rfarm_stats *stats,
		    struct kf_err *err)
{
	struct kf_rfarm_stats st0;
	struct kf_rfarm_stats *st = stats ? stats : &st0;
	memset(st, 0, sizeof(*st));
	st->jobs = n;
	const char *label = so->label && *so->label ? so->label : "the batch";
	double deadline_s = so->deadline_s > 0 ? so->deadline_s : 3600;
	struct submission sb;
	memset(&sb, 0, sizeof(sb));
	if (conn_init(&sb.k, so->url, 5.0, err))
		return err->code;
	sb.items = items;
	sb.n = n;
	sb.st = st;
	sb.progress = so->progress;
	sb.parg = so->progress_arg;
	sb.cancel = so->cancel;
	sb.t0 = kf_now_ns();
	sb.pg.total = n;
	uint64_t deadline = sb.t0 + (uint64_t)(deadline_s * 1e9);
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)(kf_now_ns() >> (i * 3));
	char batch[32], rkey[64], key[64];
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(batch + 2 * i, 3, "%02x", rnd[i]);
	sb.batch = batch;
	snprintf(rkey, sizeof(rkey), "kforge:results:%s", batch);
	jobs_key(eo->backend, key, sizeof(key));
	bool said = false;
	/* Redis at the start: an error at once, or waited out. */
	for (;;) {
		if (!DO(&sb.k, err, "PING") && !ensure_group(&sb.k, key, err))
			break;
		if (!so->wait_for_redis || !transient(err)) {
			conn_drop(&sb.k);
			err->code = KF_EIO;
			return KF_EIO;
		}
		if (reconnect(&sb, deadline, err, &said)) {
			/* Redis did not answer before the deadline (or
			 * the call was cancelled): every item is an error
			 * of its own; the call itself ran. */
			for (int i = 0; i < n; i++) {
				items[i].device = -1;
				if (cancelled(&sb))
					item_error(&items[i], KF_EIO,
						   "%s: cancelled before it "
						   "was submitted to %s",
						   label, so->url);
				else
					item_error(&items[i], KF_ETIMEDOUT,
						   "%s: not submitted within "
						   "the deadline (%.3g s): %s",
						   label, deadline_s, err->msg);
			}
			st->answered = 0;
			st->seconds = (double)(kf_now_ns() - sb.t0) * 1e-9;
			conn_drop(&sb.k);
			*err = (struct kf_err)KF_ERR_INIT;
			return 0;
		}
	}
	*err = (struct kf_err)KF_ERR_INIT;
	/* The options that travel: not this machine's paths. */
	cJSON *oj = kf_eval_opts_json(eo);
	cJSON_DeleteItemFromObject(oj, "worker_path");
	cJSON_DeleteItemFromObject(oj, "include_dir");
	cJSON_DeleteItemFromObject(oj, "python");
	char *opts = cJSON_PrintUnformatted(oj);
	cJSON_Delete(oj);
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	sb.answered = kf_xcalloc((size_t)n, sizeof(bool));
	char(*sids)[64] = kf_xcalloc((size_t)n, sizeof(*sids));
	for (int i = 0; i < n; i++) {
		struct kf_farm_item *it = &items[i];
		const char *task = it->task ? it->task : task_path;
		char *src = NULL;
		struct kf_err e = KF_ERR_INIT;
		it->device = -1;
		if (!task) {
			item_error(it, KF_EINVAL, "no task");
		} else if (!kf_file_exists(it->candidate)) {
			item_error(it, KF_ENOENT, "%s: no such file",
				   it->candidate);
		} else if (kf_file_read(it->candidate, 16u << 20, &src, NULL,
					&e)) {
			item_error(it, e.code, "%s", e.msg);
		}
		if (it->rc) { /* an error of the item, as locally */
			sb.answered[i] = true;
			st->answered++;
			sb.pg.done++;
			sb.pg.failed++;
			continue;
		}
		char jid[64];
		snprintf(jid, sizeof(jid), "%s:%d", batch, i);
		for (;;) {
			e = (struct kf_err)KF_ERR_INIT;
			redisReply *r = CALL(
			    &sb.k, &e, "XADD", key, "*", "job", jid, "results",
			    rkey, "task", task_ref(task, cwd), "name",
			    it->candidate, "source", src, "opts", opts);
			if (r) {
				snprintf(sids[i], sizeof(sids[i]), "%s",
					 str_of(r) ? str_of(r) : "");
				freeReplyObject(r);
				break;
			}
			if (!transient(&e) ||
			    reconnect(&sb, deadline, &e, &said)) {
				item_error(it, e.code, "%s: not submitted: %s",
					   label, e.msg);
				sb.answered[i] = true;
				st->answered++;
				sb.pg.done++;
				sb.pg.failed++;
				break;
			}
		}
		free(src);
		sb.pg.compiled++;
		if (sb.progress) {
			sb.pg.item = NULL;
			sb.progress(sb.parg, &sb.pg);
		}
	}
	free(opts);
	/* Results, in the order they come, until all are in. */
	char last[64] = "0-0";
	while (st->answered < n && kf_now_ns() < deadline &&
	       !cancelled(&sb)) {
		struct kf_err e = KF_ERR_INIT;
		redisReply *r = CALL(&sb.k, &e, "XREAD", "COUNT", "100",
				     "BLOCK", "1000", "STREAMS", rkey, last);
		if (!r) {
			if (transient(&e) &&
			    !reconnect(&sb, deadline, &e, &said))
				continue;
			if (!transient(&e))
				kf_log(KF_LOG_WARN, "farm: %s", e.msg);
			sleep_ms(500);
			continue;
		}
		const redisReply *entries = el(el(r, 0), 1);
		for (size_t j = 0; entries && j < entries->elements; j++) {
			const redisReply *en = el(entries, j);
			const char *id = str_of(el(en, 0));
			if (id)
				snprintf(last, sizeof(last), "%s", id);
			take(&sb, en);
		}
		freeReplyObject(r);
	}
	/* Late ones: withdrawn from the queue, an error of their item. */
	for (int i = 0; i < n; i++) {
		if (sb.answered[i])
			continue;
		struct kf_err e = KF_ERR_INIT;
		if (sids[i][0])
			DO(&sb.k, &e, "XDEL", key, sids[i]);
		if (cancelled(&sb))
			item_error(&items[i], KF_EIO,
				   "%s: cancelled before its result came: the "
				   "job was withdrawn from %s",
				   label, key);
		else
			item_error(&items[i], KF_ETIMEDOUT,
				   "%s: no result from the farm within the "
				   "deadline (%.3g s): the job was withdrawn from "
				   "%s",
				   label, deadline_s, key);
	}
	struct kf_err e = KF_ERR_INIT;
	DO(&sb.k, &e, "DEL", rkey);
	conn_drop(&sb.k);
	st->seconds = (double)(kf_now_ns() - sb.t0) * 1e-9;
	free(sids);
	free(sb.answered);
	return 0;
}

/* ---- status ---- */

static long long int_reply(redisReply *r)
{
	long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	if (r)
		freeReplyObject(r);
	return v;
}

int kf_rfarm_status(const char *url, cJSON **status, struct kf_err *err)
{
	*status = NULL;
	struct conn k;
	if (conn_init(&k, url, 5.0, err))
		return err->code;
	if (DO(&k, err, "PING"))
		return err->code == KF_EPROTO ? KF_EIO : err->code;
	cJSON *s = cJSON_CreateObject();
	cJSON *qs = cJSON_AddArrayToObject(s, "queues");
	static const char *const backends[] = {"host", "cuda"};
	for (size_t b = 0; b < 2; b++) {
		char key[64];
		jobs_key(backends[b], key, sizeof(key));
		struct kf_err e = KF_ERR_INIT;
		long long len = int_reply(CALL(&k, &e, "XLEN", key));
		redisReply *p = CALL(&k, &e, "XPENDING", key, GROUP);
		long long pending = 0, consumers = 0;
		if (p) {
			const redisReply *c = el(p, 0);
			pending = c && c->type == REDIS_REPLY_INTEGER
				      ? c->integer
				      : 0;
			const redisReply *cs = el(p, 3);
			consumers = cs && cs->type == REDIS_REPLY_ARRAY
					? (long long)cs->elements
					: 0;
			freeReplyObject(p);
		}
		cJSON *q = cJSON_CreateObject();
		cJSON_AddStringToObject(q, "backend", backends[b]);
		cJSON_AddStringToObject(q, "stream", key);
		cJSON_AddNumberToObject(
		    q, "waiting", (double)(len > pending ? len - pending : 0));
		cJSON_AddNumberToObject(q, "in_flight", (double)pending);
		cJSON_AddNumberToObject(q, "consumers_holding",
					(double)consumers);
		cJSON_AddItemToArray(qs, q);
	}
	cJSON *ws = cJSON_AddArrayToObject(s, "workers");
	char cursor[64] = "0";
	double now = unix_now();
	do {
		redisReply *r = CALL(&k, err, "SCAN", cursor, "MATCH",
				     "kforge:worker:*", "COUNT", "100");
		if (!r) {
			cJSON_Delete(s);
			conn_drop(&k);
			return err->code;
		}
		snprintf(cursor, sizeof(cursor), "%s",
			 str_of(el(r, 0)) ? str_of(el(r, 0)) : "0");
		const redisReply *keys = el(r, 1);
		for (size_t i = 0; keys && i < keys->elements; i++) {
			struct kf_err e = KF_ERR_INIT;
			redisReply *h =
			    CALL(&k, &e, "HGETALL", str_of(el(keys, i)));
			if (!h || !h->elements) {
				if (h)
					freeReplyObject(h);
				continue;
			}
			cJSON *o = cJSON_CreateObject();
			const char *v;
			cJSON_AddStringToObject(
			    o, "name", (v = field(h, "name")) ? v : "");
			cJSON_AddStringToObject(
			    o, "host", (v = field(h, "host")) ? v : "");
			cJSON_AddNumberToObject(
			    o, "pid", (v = field(h, "pid")) ? atof(v) : 0);
			cJSON_AddStringToObject(
			    o, "backend", (v = field(h, "backend")) ? v : "");
			cJSON_AddNumberToObject(
			    o, "slots",
			    (v = field(h, "slots")) || (v = field(h, "gpus"))
				? atof(v)
				: 0);
			cJSON_AddNumberToObject(
			    o, "gpus", (v = field(h, "gpus")) ? atof(v) : 0);
			cJSON_AddStringToObject(
			    o, "jobs", (v = field(h, "jobs")) ? v : "-");
			cJSON_AddNumberToObject(
			    o, "done", (v = field(h, "done")) ? atof(v) : 0);
			cJSON_AddNumberToObject(
			    o, "reclaimed",
			    (v = field(h, "reclaimed")) ? atof(v) : 0);
			cJSON_AddNumberToObject(
			    o, "seen_s_ago",
			    (v = field(h, "seen")) ? now - atof(v) : -1);
			cJSON_AddNumberToObject(
			    o, "up_s", (v = field(h, "up_s")) ? atof(v) : 0);
			cJSON_AddItemToArray(ws, o);
			freeReplyObject(h);
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0"));
	struct kf_err e = KF_ERR_INIT;
	redisReply *h = CALL(&k, &e, "HGETALL", STATS_KEY);
	cJSON *t = cJSON_AddObjectToObject(s, "totals");
	static const char *const counters[] = {"done", "reclaimed",
					       "abandoned"};
	for (size_t i = 0; i < 3; i++) {
		const char *v = h ? field(h, counters[i]) : NULL;
		cJSON_AddNumberToObject(t, counters[i], v ? atof(v) : 0);
	}
	if (h)
		freeReplyObject(h);
	conn_drop(&k);
	*status = s;
	return 0;
}

#endif /* KF_HAVE_HIREDIS */
