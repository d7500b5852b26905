/*
 * search.c: the optimization loop: proposals go to the store, then to the
 * executor (include/kforge/exec.h: an eval child per evaluation, or a job on
 * the farm); results go to the store, then to the policy and the progress
 * line. Resuming replays a run's history.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/exec.h>
#include <kforge/farm_redis.h>
#include <kforge/policy.h>
#include <kforge/reward.h>
#include <kforge/profile.h>
#include <kforge/search.h>
#include <kforge/task.h>

#include "search_int.h"

/* An evaluated candidate of the run, for duplicates and the policy. */
struct rec {
	int64_t id;
	char sha[65];
	char *source;
	char *origin;
	char *status;
	double speedup;
	cJSON *params;
	cJSON *result;
	int64_t parents[KF_POLICY_PARENTS_MAX];
	int n_parents;
	double score;	   /* the objective's ratio */
	bool short_timing; /* a halving rung's timing, not the evaluation */
	int rung;
	double time_cap_s;
};

/* One evaluation in flight. */
struct slot {
	bool busy;
	struct kf_exec_job job;
	struct kf_eval_opts eo; /* the job's options (a short timing's) */
	int64_t cand;
	char sha[65];
	char *source;
	char *origin;
	cJSON *params;
	char *path;
	int attempts;
	bool pending; /* a candidate stored by an earlier session */
	int64_t parents[KF_POLICY_PARENTS_MAX];
	int n_parents;
	int rung;	   /* a short timing's rung */
	double time_cap_s; /* > 0: a short timing under this cap */
};

struct loop {
	const struct kf_search_opts *o;
	struct kf_store *store;
	int64_t run;
	char *task_path;
	char *task_id;
	const char *policy_name;
	struct kf_task *task;
	struct kf_eval_opts eo;
	char *backend;
	struct kf_policy *pol;
	int budget, parallel;
	int evaluated; /* in the run, earlier sessions included */
	int session;   /* evaluations of this session */
	int dupes;
	struct slot *slots;
	struct kf_exec *exec;
	int inflight, pending_inflight;
	cJSON *queue; /* candidates stored but not evaluated (resume) */
	int queue_next;
	struct rec *recs;
	int n_recs;
	struct kf_progress prog;
	uint64_t t0_ns;
	char objective[16];
	int short_timings; /* of them, in the run */
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void sha256_hex(const char *text, char hex[65])
{
	struct kf_sha256 h;
	kf_sha256_init(&h);
	kf_sha256_update(&h, text, strlen(text));
	kf_sha256_final_hex(&h, hex);
}

static void note_cb(void *ctx, const char *line)
{
	kf_progress_note(&((struct loop *)ctx)->prog, line);
}

/* Eval options back from a run's config; strings borrow from cfg. */
static int eval_opts_from(const cJSON *cfg, struct kf_eval_opts *eo,
			  struct kf_err *err)
{
	const cJSON *e = cJSON_GetObjectItem(cfg, "eval");
	if (!cJSON_IsObject(e))
		return kf_err_set(err, KF_EINVAL,
				  "the run's config has no eval object");
	kf_eval_opts_from_json(e, eo);
	return 0;
}

static uint64_t draw_seed(void)
{
	uint64_t s = 0;
	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s) || s == 0)
		s = kf_now_ns() ^ ((uint64_t)getpid() << 32);
	return s;
}

static void rec_add(struct loop *l, int64_t id, const char *sha,
		    const char *source, const char *origin, const cJSON *params,
		    const int64_t *parents, int n_parents, cJSON *result)
{
	l->recs =
	    kf_xrealloc(l->recs, sizeof(*l->recs) * (size_t)(l->n_recs + 1));
	struct rec *r = &l->recs[l->n_recs++];
	const cJSON *sp = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(result, "timing"),
				"speedup"),
	    "median");
	const char *st = kf_json_str(result, "status");
	r->id = id;
	snprintf(r->sha, sizeof(r->sha), "%s", sha);
	r->source = kf_xstrdup(source);
	r->origin = origin ? kf_xstrdup(origin) : NULL;
	r->status = kf_xstrdup(st ? st : "infra_error");
	r->speedup = cJSON_IsNumber(sp) ? sp->valuedouble : 0;
	r->params = params ? cJSON_Duplicate(params, 1) : NULL;
	r->result = result;
	r->n_parents = 0;
	for (int i = 0; i < n_parents && i < KF_POLICY_PARENTS_MAX; i++)
		r->parents[r->n_parents++] = parents[i];
	r->score = kf_reward_objective_ratio(
	    l->objective[0] ? l->objective : "time", result, NULL);
	r->short_timing = false;
	r->rung = 0;
	r->time_cap_s = 0;
}

/* Marks the latest record a short timing. */
static void rec_short(struct loop *l, int rung, double time_cap_s)
{
	struct rec *r = &l->recs[l->n_recs - 1];
	r->short_timing = true;
	r->rung = rung;
	r->time_cap_s = time_cap_s;
}

static bool objective_is(const char *o, const char *name)
{
	return !strcmp(o ? o : "time", name);
}

int kf_search_objective_check(const char *objective,
			      const struct kf_eval_opts *eo,
			      struct kf_err *err)
{
	if (!objective || objective_is(objective, "time"))
		return 0;
	if (!objective_is(objective, "energy") && !objective_is(objective, "edp"))
		return kf_err_set(err, KF_EINVAL,
				  "--objective: unknown objective '%s' (one of "
				  "time, energy, edp)",
				  objective);
	const struct kf_backend_ops *ops = kf_backend_find(eo->backend);
	if (ops && !ops->energy_mj)
		return kf_err_set(err, KF_EINVAL,
				  "--objective %s: the %s backend measures no "
				  "energy (its results carry no \"energy\"; "
				  "only a backend with an energy counter, cuda "
				  "through NVML, does): use --objective time",
				  objective, eo->backend);
	if (eo->energy_s <= 0)
		return kf_err_set(err, KF_EINVAL,
				  "--objective %s: the evaluations' energy "
				  "step is off (energy time %g s)",
				  objective, eo->energy_s);
	return 0;
}

/* The ids of a stored candidate's "parents" array. */
static int parents_from(const cJSON *c, int64_t *out)
{
	int n = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "parents"))
	{
		if (n < KF_POLICY_PARENTS_MAX && cJSON_IsNumber(p))
			out[n++] = (int64_t)p->valuedouble;
	}
	return n;
}

static void observe(struct loop *l, const struct rec *r)
{
	struct kf_observation obs = {
	    .candidate = r->id,
	    .sha256 = r->sha,
	    .source = r->source,
	    .origin = r->origin,
	    .params = r->params,
	    .result = r->result,
	    .status = r->status,
	    .speedup = r->speedup,
	    .parents = r->parents,
	    .n_parents = r->n_parents,
	    .score = r->score,
	    .short_timing = r->short_timing,
	    .rung = r->rung,
	    .time_cap_s = r->time_cap_s,
	};
	kf_policy_observe(l->pol, &obs);
}

static const struct rec *rec_find(const struct loop *l, const char *sha)
{
	for (int i = 0; i < l->n_recs; i++)
		if (!strcmp(l->recs[i].sha, sha) && !l->recs[i].short_timing)
			return &l->recs[i];
	return NULL;
}

/* s with every occurrence of from replaced by to (malloc'd). */
static char *replaced(const char *s, const char *from, const char *to)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	size_t n = strlen(from);
	const char *p;
	while (n && (p = strstr(s, from))) {
		kf_strbuf_add(&sb, s, (size_t)(p - s));
		kf_strbuf_addstr(&sb, to);
		s = p + n;
	}
	kf_strbuf_addstr(&sb, s);
	return kf_strbuf_detach(&sb);
}

/* The result's texts name the candidate by label, not by the cache path
 * it was evaluated from (a hash, meaningless to a reader or a model): its
 * reason and its compile log. */
static void relabel(cJSON *res, const char *path, const char *label)
{
	cJSON *cc = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(res, "compile"), "candidate");
	cJSON *holders[] = {res, cc};
	for (int i = 0; i < 2; i++) {
		const char *keys[] = {"reason", "log"};
		for (int k = 0; k < 2; k++) {
			const char *v = kf_json_str(holders[i], keys[k]);
			if (!v || !strstr(v, path))
				continue;
			char *r = replaced(v, path, label);
			cJSON_ReplaceItemInObjectCaseSensitive(
			    holders[i], keys[k], cJSON_CreateString(r));
			free(r);
		}
	}
}

/* The executor's ops for KFORGE_SCORES (tests of the policies): each
 * candidate is scored from that table, not evaluated. */
static void scores_run(struct kf_exec *x, void *ctx, struct kf_exec_job *j)
{
	(void)x;
	struct kf_err err = KF_ERR_INIT;
	if (kf_search_score(ctx, j->candidate, &j->result, &err))
		j->error = kf_xstrdup(err.msg);
}

static const struct kf_exec_ops scores_ops = {"scores", scores_run, NULL};

static int slot_start(struct loop *l, struct slot *s, struct kf_err *err)
{
	if (!s->path) {
		int rc = kf_exec_write_source(l->task_path, l->backend, s->sha,
					      s->source, &s->path, err);
		if (rc)
			return rc;
	}
	s->eo = l->eo;
	if (s->time_cap_s > 0 && s->time_cap_s < s->eo.time_cap_s) {
		/* A short timing: its cap, and as many fewer pairs before
		 * the cap may end it (at least 5). */
		int mp = (int)(s->eo.min_pairs * s->time_cap_s /
				   s->eo.time_cap_s +
			       0.5);
		s->eo.min_pairs = mp < 5 ? 5 : mp;
		s->eo.time_cap_s = s->time_cap_s;
	}
	memset(&s->job, 0, sizeof(s->job));
	s->job.task = l->task_path;
	s->job.candidate = s->path;
	s->job.eval = &s->eo;
	/* The profile feedback mode: paid only when asked for. */
	s->job.profile = l->o->feedback && !strcmp(l->o->feedback, "profile");
	s->job.user = s;
	s->busy = true;
	s->attempts++;
	l->inflight++;
	kf_exec_submit(l->exec, &s->job);
	return 0;
}

static void slot_clear(struct slot *s)
{
	free(s->source);
	free(s->origin);
	free(s->path);
	cJSON_Delete(s->params);
	cJSON_Delete(s->job.result);
	free(s->job.error);
	memset(s, 0, sizeof(*s));
}

static struct slot *free_slot(struct loop *l)
{
	for (int i = 0; i < l->parallel; i++)
		if (!l->slots[i].busy)
			return &l->slots[i];
	return NULL;
}

/* Whether candidate id is being evaluated. */
static bool in_flight(const struct loop *l, int64_t id)
{
	for (int i = 0; i < l->parallel; i++)
		if (l->slots[i].busy && l->slots[i].cand == id)
			return true;
	return false;
}

/* Candidate id (sha its source's) evaluated in a free slot, taking the
 * proposal's source, origin and parameters. */
static int slot_fill(struct loop *l, struct kf_proposal *p, int64_t id,
		     const char *sha, struct kf_err *err)
{
	struct slot *s = free_slot(l);
	KF_ASSERT(s);
	s->cand = id;
	snprintf(s->sha, sizeof(s->sha), "%s", sha);
	s->source = p->source;
	s->origin = p->origin;
	s->params = p->params;
	memcpy(s->parents, p->parents, sizeof(s->parents));
	s->n_parents = p->n_parents;
	s->rung = p->rung;
	s->time_cap_s = p->time_cap_s;
	p->source = p->origin = NULL;
	p->params = NULL;
	int rc = slot_start(l, s, err);
	if (rc)
		slot_clear(s);
	return rc;
}

/* Stores a proposal and starts its evaluation; takes p's contents. */
static int start_proposal(struct loop *l, struct kf_proposal *p,
			  struct kf_err *err)
{
	char sha[65];
	int rc = 0;
	if (strlen(p->source) > KF_STORE_SOURCE_CAP) {
		char line[256];
		snprintf(line, sizeof(line),
			 "%s: a source of %zu bytes is over the cap of %zu: "
			 "skipped",
			 p->origin ? p->origin : "proposal", strlen(p->source),
			 KF_STORE_SOURCE_CAP);
		kf_progress_note(&l->prog, line);
		goto out;
	}
	sha256_hex(p->source, sha);
	int64_t id = 0;
	bool evaluated = false;
	rc = kf_store_candidate_find(l->store, l->run, sha, &id, &evaluated,
				     err);
	if (rc)
		goto out;
	if (id && p->rung > 0 && !evaluated && !in_flight(l, id)) {
		/* Another timing of a candidate the run holds (a rung of
		 * successive halving): the same candidate, timed again. */
		rc = slot_fill(l, p, id, sha, err);
		goto out;
	}
	if (id) {
		/* Already tried: evaluated once, never counted twice. */
		l->dupes++;
		const struct rec *r = rec_find(l, sha);
		if (r)
			observe(l, r);
		goto out;
	}
	char *ptext = p->params ? kf_json_print(p->params) : NULL;
	struct kf_store_candidate c = {
	    .source = p->source,
	    .sha256 = sha,
	    .parents = p->parents,
	    .n_parents = p->n_parents,
	    .policy = l->policy_name,
	    .origin = p->origin,
	    .prompt = p->prompt,
	    .params = ptext,
	};
	rc = kf_store_candidate_add(l->store, l->run, &c, &id, err);
	free(ptext);
	if (rc)
		goto out;
	rc = slot_fill(l, p, id, sha, err);
out:
	kf_policy_proposal_release(p);
	return rc;
}

/* Starts the next candidate an earlier session stored but did not
 * evaluate. */
static int start_queued(struct loop *l, struct kf_err *err)
{
	const cJSON *c = cJSON_GetArrayItem(l->queue, l->queue_next++);
	struct slot *s = free_slot(l);
	KF_ASSERT(s && c);
	const cJSON *params = cJSON_GetObjectItem(c, "params");
	const char *origin = kf_json_str(c, "origin");
	s->cand = (int64_t)kf_json_num(c, "id", 0);
	snprintf(s->sha, sizeof(s->sha), "%s", kf_json_str(c, "sha256"));
	s->source = kf_xstrdup(kf_json_str(c, "source"));
	s->origin = origin ? kf_xstrdup(origin) : NULL;
	s->params = cJSON_IsObject(params) ? cJSON_Duplicate(params, 1) : NULL;
	s->n_parents = parents_from(c, s->parents);
	s->pending = true;
	int rc = slot_start(l, s, err);
	if (rc)
		slot_clear(s);
	else
		l->pending_inflight++;
	return rc;
}

/* The result of s's evaluation, which has ended, into *res (NULL when the
 * engine could not evaluate it: the error). Its texts name the candidate by
 * label, not by its cache path. */
static int slot_collect(struct loop *l, struct slot *s, cJSON **res,
			struct kf_err *err)
{
	s->busy = false;
	l->inflight--;
	if (s->pending)
		l->pending_inflight--;
	const char *ext = strrchr(s->path, '.');
	char label[64];
	snprintf(label, sizeof(label), "candidate-%lld%s", (long long)s->cand,
		 ext ? ext : "");
	*res = s->job.result;
	s->job.result = NULL;
	if (!*res) {
		char *e = replaced(s->job.error ? s->job.error : "no result",
				   s->path, label);
		int rc = kf_err_set(err, KF_ECHILD,
				    "the evaluation of candidate %lld: %s",
				    (long long)s->cand, e);
		free(e);
		return rc;
	}
	relabel(*res, s->path, label);
	return 0;
}

/* Waits for one evaluation to end and records it. */
static int wait_one(struct loop *l, struct kf_err *err)
{
	struct kf_exec_job *j = kf_exec_collect(l->exec, 1000);
	kf_progress_tick(&l->prog);
	if (!j)
		return 0;
	{
		struct slot *s = j->user;
		cJSON *res = NULL;
		int rc = slot_collect(l, s, &res, err);
		if (rc) {
			slot_clear(s);
			return rc;
		}
		const char *st = kf_json_str(res, "status");
		if (st && !strcmp(st, "infra_error") && s->attempts < 2) {
			/* The engine's fault, not the candidate's: once
			 * more before it is recorded. */
			char line[512];
			snprintf(line, sizeof(line),
				 "candidate %lld: infra_error (%.300s): "
				 "evaluating it again",
				 (long long)s->cand,
				 kf_json_str(res, "reason")
				     ? kf_json_str(res, "reason")
				     : "");
			kf_progress_note(&l->prog, line);
			cJSON_Delete(res);
			if (s->pending)
				l->pending_inflight++;
			rc = slot_start(l, s, err);
			if (rc)
				slot_clear(s);
			return rc;
		}
		bool short_timing = s->time_cap_s > 0;
		if (short_timing) {
			/* Recorded as what it is: a short timing. */
			cJSON_AddNumberToObject(res, "short_timing_cap_s",
						s->time_cap_s);
			rc = kf_store_screening_add(l->store, s->cand,
						    s->rung, s->time_cap_s,
						    res, err);
		} else {
			rc = kf_store_evaluation_add(l->store, s->cand, res,
						     err);
		}
		if (rc) {
			cJSON_Delete(res);
			slot_clear(s);
			return rc;
		}
		l->evaluated++;
		l->session++;
		l->short_timings += short_timing;
		rec_add(l, s->cand, s->sha, s->source, s->origin, s->params,
			s->parents, s->n_parents, res);
		if (short_timing)
			rec_short(l, s->rung, s->time_cap_s);
		struct rec *rec = &l->recs[l->n_recs - 1];
		kf_progress_result(&l->prog, l->evaluated, s->cand, rec->status,
				   rec->speedup, res, rec->params,
				   short_timing ? s->time_cap_s : 0);
		observe(l, rec);
		slot_clear(s);
	}
	return 0;
}

/* A stored candidate c (the store's listing) as a record, with the result
 * of row (its evaluation or one of its short timings), taken from row; a
 * row kept without its result records its status alone. */
static void rec_stored(struct loop *l, const cJSON *c, cJSON *row)
{
	cJSON *res = cJSON_DetachItemFromObject(row, "result");
	if (!cJSON_IsObject(res)) {
		cJSON_Delete(res);
		res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "status",
					kf_json_str(row, "status"));
	}
	const cJSON *params = cJSON_GetObjectItem(c, "params");
	int64_t parents[KF_POLICY_PARENTS_MAX];
	int np = parents_from(c, parents);
	rec_add(l, (int64_t)kf_json_num(c, "id", 0), kf_json_str(c, "sha256"),
		kf_json_str(c, "source"), kf_json_str(c, "origin"),
		cJSON_IsObject(params) ? params : NULL, parents, np, res);
}

/* Loads the run's history: evaluated candidates into the policy, the
 * others into the queue. */
static int load_history(struct loop *l, struct kf_err *err)
{
	cJSON *cands = NULL;
	int rc =
	    kf_store_candidate_list(l->store, l->run, true, true, &cands, err);
	if (rc)
		return rc;
	cJSON *shorts = NULL;
	rc = kf_store_screening_list(l->store, l->run, true, &shorts, err);
	if (rc) {
		cJSON_Delete(cands);
		return rc;
	}
	/* Short timings first: they came before any full evaluation of
	 * their candidates (the last rung's). */
	const cJSON *x;
	cJSON_ArrayForEach(x, shorts)
	{
		int64_t cid = (int64_t)kf_json_num(x, "candidate", 0);
		const cJSON *c = NULL, *ci;
		cJSON_ArrayForEach(ci, cands)
		{
			if ((int64_t)kf_json_num(ci, "id", 0) == cid)
				c = ci;
		}
		if (!c)
			continue;
		rec_stored(l, c, (cJSON *)x);
		rec_short(l, (int)kf_json_num(x, "rung", 0),
			  kf_json_num(x, "time_cap_s", 0));
		l->evaluated++;
		l->short_timings++;
	}
	l->queue = cJSON_CreateArray();
	cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		cJSON *e = cJSON_GetObjectItem(c, "evaluation");
		if (!cJSON_IsObject(e)) {
			/* A candidate with short timings is the halving's to
			 * time again, not the queue's. */
			bool screened = false;
			cJSON_ArrayForEach(x, shorts)
			{
				if (kf_json_num(x, "candidate", 0) ==
				    kf_json_num(c, "id", 0))
					screened = true;
			}
			if (!screened)
				cJSON_AddItemReferenceToArray(l->queue, c);
			continue;
		}
		rec_stored(l, c, e);
		l->evaluated++;
		kf_progress_history(&l->prog, l->recs[l->n_recs - 1].id,
				    l->recs[l->n_recs - 1].status,
				    l->recs[l->n_recs - 1].speedup);
	}
	/* The queue holds references into cands: keep cands alive by
	 * making the queue own copies. */
	cJSON *q = cJSON_Duplicate(l->queue, 1);
	cJSON_Delete(l->queue);
	l->queue = q;
	cJSON_Delete(cands);
	cJSON_Delete(shorts);
	return 0;
}

/* Sets up l for a new run, or reloads the run to resume. */
static int prepare(struct loop *l, cJSON **cfg_out, struct kf_err *err)
{
	const struct kf_search_opts *o = l->o;
	cJSON *cfg = NULL;
	int rc = 0;
	if (o->resume) {
		cJSON *run = NULL;
		rc = kf_store_run_get(l->store, o->resume, &run, err);
		if (rc)
			return rc;
		const char *state = kf_json_str(run, "state");
		if (state && !strcmp(state, "running")) {
			rc = kf_err_set(err, KF_EINVAL,
					"run %lld is still running (process "
					"%.0f)",
					(long long)o->resume,
					kf_json_num(run, "pid", 0));
			cJSON_Delete(run);
			return rc;
		}
		l->run = o->resume;
		l->task_path = kf_xstrdup(kf_json_str(run, "task"));
		l->backend = kf_xstrdup(kf_json_str(run, "backend"));
		l->budget = (int)kf_json_num(run, "budget", 0);
		cfg = cJSON_DetachItemFromObject(run, "config");
		l->policy_name = NULL;
		const struct kf_policy_ops *ops =
		    kf_policy_find(kf_json_str(run, "policy"));
		if (ops)
			l->policy_name = ops->name;
		cJSON_Delete(run);
		if (!l->policy_name)
			return kf_err_set(err, KF_EINVAL,
					  "run %lld: unknown policy",
					  (long long)o->resume);
		rc = eval_opts_from(cfg, &l->eo, err);
		if (rc) {
			cJSON_Delete(cfg);
			return rc;
		}
		const char *obj = kf_json_str(cfg, "objective");
		snprintf(l->objective, sizeof(l->objective), "%s",
			 obj ? obj : "time");
		l->parallel = o->parallel > 0
				  ? o->parallel
				  : (int)kf_json_num(cfg, "parallel", 1);
	} else {
		const struct kf_policy_ops *ops = kf_policy_find(o->policy);
		if (!ops)
			return kf_err_set(err, KF_EINVAL,
					  "unknown policy '%s' (one of %s)",
					  o->policy, kf_policy_names());
		l->policy_name = ops->name;
		char *abs = realpath(o->task_path, NULL);
		l->task_path = abs ? abs : kf_xstrdup(o->task_path);
		l->backend = kf_xstrdup(o->eval.backend);
		l->budget = o->budget;
		l->parallel = o->parallel;
		l->eo = o->eval;
		cfg = cJSON_CreateObject();
		cJSON_AddItemToObject(
		    cfg, "policy_options",
		    o->policy_options ? cJSON_Duplicate(o->policy_options, 1)
				      : cJSON_CreateObject());
		char seed[32];
		snprintf(seed, sizeof(seed), "%llu",
			 (unsigned long long)(o->seed ? o->seed : draw_seed()));
		cJSON_AddStringToObject(cfg, "seed", seed);
		cJSON_AddNumberToObject(cfg, "parallel", o->parallel);
		cJSON_AddItemToObject(cfg, "eval", kf_eval_opts_json(&o->eval));
		if (o->suite)
			cJSON_AddStringToObject(cfg, "suite", o->suite);
		snprintf(l->objective, sizeof(l->objective), "%s",
			 o->objective ? o->objective : "time");
		cJSON_AddStringToObject(cfg, "objective", l->objective);
	}
	l->eo.backend = l->backend;
	if (!rc)
		rc = kf_search_objective_check(l->objective, &l->eo, err);
	if (l->budget < 1 || l->budget > KF_SEARCH_BUDGET_MAX)
		rc = kf_err_set(err, KF_EINVAL,
				"budget %d is out of range (1 to %d)",
				l->budget, KF_SEARCH_BUDGET_MAX);
	else if (l->parallel < 1 || l->parallel > KF_SEARCH_PARALLEL_MAX)
		rc = kf_err_set(err, KF_EINVAL,
				"parallel %d is out of range (1 to %d)",
				l->parallel, KF_SEARCH_PARALLEL_MAX);
	if (rc) {
		cJSON_Delete(cfg);
		return rc;
	}
	l->eo.backend = l->backend;
	*cfg_out = cfg;
	return 0;
}

static void loop_release(struct loop *l)
{
	/* Evaluations still in flight (a failed run) are killed and
	 * waited for. */
	kf_exec_close(l->exec);
	l->exec = NULL;
	for (int i = 0; l->slots && i < l->parallel; i++)
		slot_clear(&l->slots[i]);
	free(l->slots);
	for (int i = 0; i < l->n_recs; i++) {
		free(l->recs[i].source);
		free(l->recs[i].origin);
		free(l->recs[i].status);
		cJSON_Delete(l->recs[i].params);
		cJSON_Delete(l->recs[i].result);
	}
	free(l->recs);
	cJSON_Delete(l->queue);
	kf_policy_close(l->pol);
	kf_task_free(l->task);
	free(l->task_path);
	free(l->task_id);
	free(l->backend);
	kf_progress_release(&l->prog);
}

/* Fills the free slots: queued candidates first, then proposals. Sets
 * *exhausted when the policy had nothing to propose. */
static int fill(struct loop *l, struct kf_proposal *props, bool *exhausted,
		struct kf_err *err)
{
	int dupe_cap = 100 + 10 * l->budget;
	*exhausted = false;
	while (l->inflight < l->parallel &&
	       l->evaluated + l->inflight < l->budget) {
		if (l->queue_next < cJSON_GetArraySize(l->queue)) {
			int rc = start_queued(l, err);
			if (rc)
				return rc;
			continue;
		}
		/* The policy proposes once it has seen every result of
		 * the earlier sessions. */
		if (l->pending_inflight > 0)
			return 0;
		int want = l->parallel - l->inflight;
		if (want > l->budget - l->evaluated - l->inflight)
			want = l->budget - l->evaluated - l->inflight;
		int n = 0;
		int rc = kf_policy_propose(l->pol, want, props, &n, err);
		if (rc)
			return rc;
		if (n == 0) {
			*exhausted = true;
			return 0;
		}
		for (int i = 0; i < n; i++) {
			if (!rc)
				rc = start_proposal(l, &props[i], err);
			else
				kf_policy_proposal_release(&props[i]);
		}
		if (rc)
			return rc;
		if (l->dupes > dupe_cap) {
			kf_progress_note(&l->prog,
					 "the policy keeps proposing "
					 "candidates already tried: stopping");
			*exhausted = true;
			return 0;
		}
	}
	return 0;
}

int kf_search_run(struct kf_store *store, const struct kf_search_opts *o,
		  int64_t *run, struct kf_err *err)
{
	struct loop l;
	memset(&l, 0, sizeof(l));
	l.o = o;
	l.store = store;
	l.t0_ns = kf_now_ns();
	*run = 0;
	cJSON *cfg = NULL;
	struct kf_proposal *props = NULL;
	struct sigaction sa, old_sa;
	bool handler = false;
	struct kf_policy_env env;
	cJSON *empty = NULL;
	memset(&env, 0, sizeof(env));
	const char *end_state = "done";
	char note[1100] = "";
	int rc = prepare(&l, &cfg, err);
	if (rc)
		goto out;
	/* The farm, before anything is stored: a Redis that does not
	 * answer now is a mistake in the command. */
	if (o->redis && (rc = kf_redis_check(o->redis, 5.0, err))) {
		kf_err_prefix(err, "--redis");
		goto out;
	}
	/* Where the evaluations run: a fresh eval child each (`kforge
	 * --eval-child`), a job on the farm, or the tests' table. */
	const char *scores = getenv("KFORGE_SCORES");
	struct kf_exec_opts xo = KF_EXEC_OPTS_INIT;
	xo.kind = o->redis ? "redis" : "process";
	if (scores && *scores) {
		xo.ops = &scores_ops;
		xo.ctx = (void *)scores;
	}
	xo.eval = l.eo;
	xo.slots = l.parallel;
	xo.redis = o->redis;
	if ((rc = kf_exec_open(&xo, &l.exec, err)))
		goto out;
	rc = kf_task_load(l.task_path, &l.task, err);
	if (rc)
		goto out;
	kf_task_select_backend(l.task, l.backend);
	l.task_id = kf_xstrdup(l.task->id);
	if (o->resume)
		rc = load_history(&l, err);
	if (rc)
		goto out;

	/* The policy opens before a new run is stored, so that a policy
	 * that cannot start leaves no run behind. */
	const char *seed = kf_json_str(cfg, "seed");
	const cJSON *popts = cJSON_GetObjectItem(cfg, "policy_options");
	empty = cJSON_CreateObject();
	env.task_path = l.task_path;
	env.task = l.task;
	env.backend = l.backend;
	env.options = cJSON_IsObject(popts) ? popts : empty;
	env.budget = l.budget;
	env.time_cap_s = l.eo.time_cap_s;
	/* Each session draws its own random choices. */
	env.run_seed = seed ? strtoull(seed, NULL, 10) : 1;
	env.seed = env.run_seed + 0x9e3779b97f4a7c15ull * (uint64_t)l.evaluated;
	env.store = store;
	env.run = l.run;
	env.note = note_cb;
	env.note_ctx = &l;
	kf_progress_init(&l.prog, o->log ? o->log : stderr, o->progress,
			 l.budget, o->time_limit_s);
	rc = kf_policy_open(kf_policy_find(l.policy_name), &env, &l.pol, err);
	if (rc)
		goto out;
	if (o->resume) {
		rc = kf_store_run_set_state(store, l.run, "running", NULL, err);
	} else {
		char *ctext = kf_json_print(cfg);
		struct kf_store_run r = {
		    .task = l.task_path,
		    .task_id = l.task_id,
		    .backend = l.backend,
		    .policy = l.policy_name,
		    .config = ctext,
		    .budget = l.budget,
		};
		rc = kf_store_run_add(store, &r, &l.run, err);
		free(ctext);
		env.run = l.run;
	}
	if (rc)
		goto out;
	*run = l.run;
	l.slots = kf_xcalloc((size_t)l.parallel, sizeof(*l.slots));
	props = kf_xcalloc((size_t)l.parallel, sizeof(*props));
	kf_progress_start(&l.prog, l.run, l.task_id, l.backend, l.policy_name,
			  l.parallel, o->resume != 0, l.evaluated);
	if (scores && *scores) {
		/* Said at every start: its results are a table's, not
		 * verified (each result carries "scored"). */
		char *line = kf_xasprintf(
		    "KFORGE_SCORES=%s: candidates are scored from that table, "
		    "not evaluated; no result of this session is verified",
		    scores);
		kf_progress_note(&l.prog, line);
		free(line);
	}
	for (int i = 0; i < l.n_recs; i++)
		observe(&l, &l.recs[i]);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	interrupted = 0;
	handler = sigaction(SIGINT, &sa, &old_sa) == 0;
	bool stopping = false;
	for (;;) {
		double elapsed = (double)(kf_now_ns() - l.t0_ns) * 1e-9;
		if (!stopping && interrupted) {
			stopping = true;
			end_state = "stopped";
			snprintf(note, sizeof(note), "interrupted");
			kf_progress_note(&l.prog,
					 "interrupted: waiting for the "
					 "evaluations in flight");
		}
		if (!stopping && o->time_limit_s > 0 &&
		    elapsed >= o->time_limit_s) {
			stopping = true;
			end_state = "stopped";
			snprintf(note, sizeof(note),
				 "time limit of %g s reached", o->time_limit_s);
		}
		bool exhausted = false;
		if (!stopping) {
			rc = fill(&l, props, &exhausted, err);
			if (rc)
				break;
		}
		if (l.inflight == 0) {
			if (exhausted && l.evaluated < l.budget)
				snprintf(note, sizeof(note),
					 "the policy had nothing more to "
					 "propose");
			break;
		}
		rc = wait_one(&l, err);
		if (rc)
			break;
	}
	if (handler)
		sigaction(SIGINT, &old_sa, NULL);
	if (rc) {
		end_state = "failed";
		snprintf(note, sizeof(note), "%s", err->msg);
	}
	kf_progress_end(&l.prog);
	if (l.run) {
		struct kf_err e2 = KF_ERR_INIT;
		int rc2 = kf_store_run_set_state(store, l.run, end_state,
						 *note ? note : NULL, &e2);
		if (rc2 && !rc) {
			rc = rc2;
			*err = e2;
		}
	}
out:
	free(props);
	/* The policy borrows env and its options: close it first. */
	kf_policy_close(l.pol);
	l.pol = NULL;
	cJSON_Delete(empty);
	cJSON_Delete(cfg);
	loop_release(&l);
	return rc;
}
