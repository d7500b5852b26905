/*
 * score.c: scoring items: their parsing and checking, their evaluation
 * through the queue (a source evaluated once per task; a reply without code
 * of its own, or whose code is the task's reference or its prompt's, is
 * not evaluated), the store, their rewards (per group; groups across
 * requests through groups.c), each item's answer and feedback, and the
 * routes POST /v1/score and POST /v1/openrlhf (OpenRLHF's remote reward
 * model protocol). Episodes (episodes.c) score their steps here too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/profile.h>
#include <kforge/prompt.h>
#include <kforge/task.h>

#include "server_int.h"

static const cJSON *path_get(const cJSON *o, const char *a, const char *b,
			     const char *c)
{
	o = cJSON_GetObjectItemCaseSensitive(o, a);
	if (o && b)
		o = cJSON_GetObjectItemCaseSensitive(o, b);
	if (o && c)
		o = cJSON_GetObjectItemCaseSensitive(o, c);
	return o;
}

static double path_num(const cJSON *o, const char *a, const char *b,
		       const char *c)
{
	const cJSON *v = path_get(o, a, b, c);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void sha256_hex(const char *text, char hex[65])
{
	struct kf_sha256 h;
	kf_sha256_init(&h);
	kf_sha256_update(&h, text, strlen(text));
	kf_sha256_final_hex(&h, hex);
}

/* A string or integer member as text (ids may be either); NULL when
 * absent; *bad when present with another type or too long. */
static char *id_member(const cJSON *o, const char *key, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*bad = false;
	if (!v || cJSON_IsNull(v))
		return NULL;
	char buf[64];
	if (cJSON_IsString(v)) {
		if (!*v->valuestring ||
		    strlen(v->valuestring) > KF_SERVER_ID_CAP) {
			*bad = true;
			return NULL;
		}
		return kf_xstrdup(v->valuestring);
	}
	if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
	    fabs(v->valuedouble) < 9e15) {
		snprintf(buf, sizeof(buf), "%.0f", v->valuedouble);
		return kf_xstrdup(buf);
	}
	*bad = true;
	return NULL;
}

void api_sitems_free(struct sitem *it, int n)
{
	for (int i = 0; i < n; i++) {
		free(it[i].id);
		free(it[i].problem);
		free(it[i].task_path);
		free(it[i].task_id);
		free(it[i].code);
		free(it[i].refused);
		free(it[i].group);
		cJSON_Delete(it[i].synth);
	}
	free(it);
}

char *api_nul_why(bool code)
{
	return kf_xasprintf("the %s holds a NUL character (\\u0000), past "
			    "which kforge cannot read it: not evaluated",
			    code ? "code" : "completion");
}

void api_item_refuse(struct sitem *it, const char *check, char *why)
{
	free(it->refused);
	it->refused = why;
	it->refused_check = check;
	it->code_given = true; /* nothing to extract */
	free(it->code);
	it->code = NULL;
	it->completion = NULL;
}

void api_item_text(struct kf_server *s, struct sitem *it, const char *text,
		   bool code_given)
{
	it->code_given = code_given;
	size_t len = strlen(text);
	if (len > s->o.code_cap) {
		api_item_refuse(
		    it, "code_too_large",
		    kf_xasprintf("the %s of %zu bytes is over the cap of %zu "
				 "bytes (--max-code): not evaluated",
				 code_given ? "code" : "completion", len,
				 s->o.code_cap));
		return;
	}
	if (code_given)
		it->code = kf_xstrdup(text);
	else
		it->completion = text;
}

/* Parses items[i] of a request. 0, or -1 with the answer set. */
static int parse_item(struct kf_server *s, const cJSON *o, int i,
		      struct sitem *it, struct kf_server_response *out)
{
	bool bad;
	if (!cJSON_IsObject(o)) {
		srv_errorf(out, 400, "bad_request",
			   "items[%d] is not an object", i);
		return -1;
	}
	it->turn = -1;
	it->id = id_member(o, "id", &bad);
	if (!it->id) {
		srv_errorf(
		    out, 400, bad ? "bad_field" : "missing_field",
		    bad ? "items[%d].id must be a non-empty string (at most "
			  "256 bytes) or an integer"
			: "items[%d].id is missing",
		    i);
		return -1;
	}
	const char *pid = kf_json_str(o, "problem_id");
	if (!pid || !*pid) {
		srv_errorf(out, 400, "missing_field",
			   "items[%d] (id %s): problem_id is missing or not a "
			   "string",
			   i, it->id);
		return -1;
	}
	if (strlen(pid) > KF_SERVER_ID_CAP) {
		srv_errorf(out, 400, "bad_field",
			   "items[%d] (id %s): problem_id is over 256 bytes", i,
			   it->id);
		return -1;
	}
	it->problem = kf_xstrdup(pid);
	const char *code = kf_json_str(o, "code");
	const char *completion = kf_json_str(o, "completion");
	if (!code && !completion) {
		srv_errorf(out, 400, "missing_field",
			   "items[%d] (id %s): give completion (a model's raw "
			   "reply) or code (a kernel source) as a string",
			   i, it->id);
		return -1;
	}
	if (code && completion) {
		srv_errorf(
		    out, 422, "conflicting_fields",
		    "items[%d] (id %s): give completion or code, not both", i,
		    it->id);
		return -1;
	}
	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(o, "prompt");
	if (pr && !cJSON_IsString(pr) && !cJSON_IsNull(pr)) {
		srv_errorf(
		    out, 400, "bad_field",
		    "items[%d] (id %s): prompt must be a string (the prompt "
		    "the completion answers)",
		    i, it->id);
		return -1;
	}
	it->prompt = cJSON_IsString(pr) ? pr->valuestring : NULL;
	api_item_text(s, it, code ? code : completion, code != NULL);
	if (srv_request_nul("items", i, code ? "code" : "completion"))
		api_item_refuse(it, "nul_in_completion", api_nul_why(code != NULL));
	it->group = id_member(o, "group_id", &bad);
	if (bad) {
		srv_errorf(out, 400, "bad_field",
			   "items[%d] (id %s): group_id must be a string or an "
			   "integer",
			   i, it->id);
		return -1;
	}
	if (api_int_member(o, "group_size", 1, 100000, 0, &it->group_size) ||
	    api_int_member(o, "turn", 0, 1000000, -1, &it->turn)) {
		srv_errorf(
		    out, 400, "bad_field",
		    "items[%d] (id %s): group_size must be an integer >= 1 "
		    "and turn an integer >= 0",
		    i, it->id);
		return -1;
	}
	if (it->group_size && !it->group) {
		srv_errorf(out, 422, "bad_group",
			   "items[%d] (id %s): group_size without group_id", i,
			   it->id);
		return -1;
	}
	char where[KF_SERVER_ID_CAP + 40];
	snprintf(where, sizeof(where), "items[%d] (id %s)", i, it->id);
	return api_resolve_problem(s, it->problem, &it->task_path, &it->task_id,
				   out, where, "problem_id");
}

/* Checks ids are unique and no request holds more of a group than its
 * size; a group of which the request holds fewer is completed by others
 * (groups.c). */
static int check_items(struct sitem *it, int n, struct kf_server_response *out)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(it[i].id, it[j].id)) {
				srv_errorf(
				    out, 422, "duplicate_id",
				    "items[%d] and items[%d] share the id "
				    "%s",
				    j, i, it[i].id);
				return -1;
			}
	for (int i = 0; i < n; i++) {
		if (!it[i].group)
			continue;
		int count = 0, size = 0;
		for (int j = 0; j < n; j++)
			if (it[j].group && !strcmp(it[j].group, it[i].group)) {
				/* A group is the rollouts of one prompt: its
				 * rewards compare their speedups. */
				if (strcmp(it[j].problem, it[i].problem)) {
					srv_errorf(
					    out, 422, "bad_group",
					    "group %s: items[%d] is on problem "
					    "%s and items[%d] on %s: a group's "
					    "items are of one problem",
					    it[i].group, i, it[i].problem, j,
					    it[j].problem);
					return -1;
				}
				count++;
				if (it[j].group_size) {
					if (size && size != it[j].group_size) {
						srv_errorf(
						    out, 422, "bad_group",
						    "group %s: its items "
						    "give group_size %d "
						    "and %d",
						    it[i].group, size,
						    it[j].group_size);
						return -1;
					}
					size = it[j].group_size;
				}
			}
		if (size && count > size) {
			srv_errorf(out, 422, "bad_group",
				   "group %s: group_size is %d but the request "
				   "holds %d of its items",
				   it[i].group, size, count);
			return -1;
		}
		it[i].across = size && count < size;
		if (size)
			it[i].group_size = size;
	}
	return 0;
}

static cJSON *synth_result(struct kf_server *s, const struct sitem *it,
			   const char *status, const char *check,
			   const char *reason)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "kforge", KF_VERSION);
	char *now = kf_utc_iso8601();
	cJSON_AddStringToObject(r, "created_at", now);
	free(now);
	cJSON_AddStringToObject(r, "status", status);
	if (check)
		cJSON_AddStringToObject(r, "check", check);
	cJSON_AddStringToObject(r, "reason", reason);
	cJSON_AddStringToObject(r, "backend", s->o.eo.backend);
	cJSON *t = cJSON_AddObjectToObject(r, "task");
	cJSON_AddStringToObject(t, "id", it->task_id);
	cJSON_AddStringToObject(t, "path", it->task_path);
	cJSON *c = cJSON_AddObjectToObject(r, "compile");
	cJSON_AddBoolToObject(cJSON_AddObjectToObject(c, "candidate"), "ok",
			      false);
	cJSON_AddArrayToObject(r, "trials");
	cJSON_AddStringToObject(r, "made_by", "kforge serve");
	return r;
}

#define COPIED_REASON                                                          \
	"the completion's code is the task's reference or a code block of "    \
	"its prompt, copied: no kernel of its own is evaluated"

/* The profile feedback mode: the item's code profiled beside the
 * reference (src/profile) when its result is ok, the advice added to the
 * feedback, and the profile itself in *prof. Paid only when asked for. */
static char *profiled_feedback(const struct sitem *it, cJSON **prof)
{
	cJSON *r = cJSON_Duplicate(it->result, 1);
	const char *status = kf_json_str(r, "status");
	if (status && !strcmp(status, "ok")) {
		struct kf_err err = KF_ERR_INIT;
		char *dir = kf_path_join(kf_cache_dir(), "profile");
		char *path = kf_xasprintf(
		    "%s/src-%016llx%s", dir,
		    (unsigned long long)kf_fnv1a64(it->code, strlen(it->code),
						   0),
		    strcmp(it->profile_backend, "cuda") ? ".c" : ".cu");
		if (!kf_mkdir_p(dir, &err) &&
		    !kf_file_write_atomic(path, it->code, strlen(it->code),
					  &err))
			kf_profile_attach(r, it->task_path, path,
					  it->profile_backend,
					  it->profile_include);
		else
			cJSON_AddStringToObject(
			    cJSON_AddObjectToObject(r, "profile"), "error",
			    err.msg);
		unlink(path);
		free(path);
		free(dir);
	}
	char *fb = kf_prompt_feedback(r);
	cJSON *p = cJSON_DetachItemFromObject(r, "profile");
	if (prof)
		*prof = p;
	else
		cJSON_Delete(p);
	cJSON_Delete(r);
	return fb;
}

static char *item_feedback(const struct sitem *it, cJSON **prof)
{
	if (it->copied)
		return kf_xstrdup(
		    "The code in your reply is the task's reference, copied "
		    "from the prompt: write a kernel of your own, faster than "
		    "the reference, in one fenced block that defines "
		    "kf_entry.");
	if (!it->code)
		return kf_xstrdup(
		    "No code was found in your reply: answer with the whole "
		    "kernel source in one fenced ```c block (```cuda on the "
		    "cuda backend) that defines kf_entry.");
	if (it->ri.status == KF_STATUS_INFRA_ERROR &&
	    (!it->job || !it->job->result))
		return kf_xasprintf("The evaluation failed on the server's "
				    "side, not because of your kernel: %s",
				    kf_json_str(it->result, "reason"));
	if (it->profile_backend)
		return profiled_feedback(it, prof);
	return kf_prompt_feedback(it->result);
}

/* The largest absolute error over the outputs of the result's trials
 * (trials[].outputs[].max_abs); NAN when no output was checked. */
static double worst_abs_error(const cJSON *r)
{
	double worst = NAN;
	const cJSON *trials = cJSON_GetObjectItemCaseSensitive(r, "trials");
	for (const cJSON *t = trials ? trials->child : NULL; t; t = t->next) {
		const cJSON *outs =
		    cJSON_GetObjectItemCaseSensitive(t, "outputs");
		for (const cJSON *o = outs ? outs->child : NULL; o;
		     o = o->next) {
			const cJSON *m =
			    cJSON_GetObjectItemCaseSensitive(o, "max_abs");
			if (cJSON_IsNumber(m) && isfinite(m->valuedouble) &&
			    !(m->valuedouble <= worst))
				worst = m->valuedouble;
		}
	}
	return worst;
}

static cJSON *item_json(const struct sitem *it)
{
	const cJSON *r = it->result;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", it->id);
	cJSON_AddStringToObject(o, "problem_id", it->problem);
	srv_add_num(o, "reward", it->reward);
	cJSON_AddStringToObject(o, "status", kf_status_name(it->ri.status));
	const char *reason = kf_json_str(r, "reason");
	if (reason)
		cJSON_AddStringToObject(o, "reason", reason);
	else
		cJSON_AddNullToObject(o, "reason");
	cJSON_AddBoolToObject(o, "compiled", it->ri.compiled);
	cJSON_AddBoolToObject(o, "correct", it->ri.status == KF_STATUS_OK);
	srv_add_num(o, "speedup", path_num(r, "timing", "speedup", "median"));
	cJSON *t = cJSON_AddObjectToObject(o, "times");
	srv_add_num(t, "candidate_ms",
		    path_num(r, "timing", "candidate", "median"));
	srv_add_num(t, "reference_ms",
		    path_num(r, "timing", "reference", "median"));
	srv_add_num(t, "compile_s",
		    path_num(r, "compile", "candidate", "seconds"));
	srv_add_num(t, "eval_s", path_num(r, "seconds", NULL, NULL));
	cJSON *prof = NULL;
	char *fb = item_feedback(it, &prof);
	cJSON_AddStringToObject(o, "feedback", fb);
	free(fb);
	if (prof)
		cJSON_AddItemToObject(o, "profile", prof);
	cJSON *m = cJSON_AddObjectToObject(o, "metrics");
	srv_add_num(m, "pass_fraction",
		    it->ri.status == KF_STATUS_INFRA_ERROR
			? NAN
			: it->ri.pass_fraction);
	srv_add_num(m, "advantage", it->advantage);
	srv_add_num(m, "max_abs_error", worst_abs_error(r));
	const cJSON *ci = path_get(r, "timing", "speedup", "ci95");
	if (cJSON_IsArray(ci))
		cJSON_AddItemToObject(m, "speedup_ci95",
				      cJSON_Duplicate(ci, 1));
	else
		cJSON_AddNullToObject(m, "speedup_ci95");
	if (it->group) {
		cJSON_AddStringToObject(m, "group_id", it->group);
		cJSON_AddNumberToObject(m, "group_members", it->members);
		cJSON_AddBoolToObject(m, "group_complete", it->group_complete);
	} else {
		cJSON_AddNullToObject(m, "group_id");
		cJSON_AddNullToObject(m, "group_members");
		cJSON_AddNullToObject(m, "group_complete");
	}
	if (it->turn >= 0)
		cJSON_AddNumberToObject(m, "turn", it->turn);
	else
		cJSON_AddNullToObject(m, "turn");
	cJSON_AddBoolToObject(m, "code_found", it->code != NULL);
	cJSON_AddBoolToObject(m, "deduplicated", it->dup);
	const char *check = kf_json_str(r, "check");
	if (check)
		cJSON_AddStringToObject(m, "check", check);
	else
		cJSON_AddNullToObject(m, "check");
	cJSON_AddNumberToObject(m, "run_id", (double)it->run_id);
	cJSON_AddNumberToObject(m, "candidate_id", (double)it->cand_id);
	return o;
}

/* Writes every item's result to the store: one run per problem of the
 * request, each item a candidate with its evaluation. */
static int store_items(struct kf_server *s, struct sitem *it, int n,
		       const char *route, const cJSON *extra,
		       const struct kf_reward *rw, struct kf_err *err)
{
	int rc = 0;
	pthread_mutex_lock(&s->store_lock);
	for (int i = 0; i < n && !rc; i++) {
		if (it[i].run_id)
			continue;
		cJSON *cfg = cJSON_CreateObject();
		cJSON_AddStringToObject(cfg, "service", "kforge serve");
		cJSON_AddStringToObject(cfg, "route", route);
		cJSON_AddItemToObject(cfg, "reward", kf_reward_json(rw));
		cJSON_AddItemToObject(cfg, "eval", cJSON_Parse(s->eo_json));
		if (extra)
			cJSON_AddItemToObject(cfg, "request",
					      cJSON_Duplicate(extra, 1));
		char *cfg_text = kf_json_print(cfg);
		cJSON_Delete(cfg);
		int budget = 0;
		for (int j = i; j < n; j++)
			if (!strcmp(it[j].task_path, it[i].task_path))
				budget++;
		struct kf_store_run run = {
		    .task = it[i].task_path,
		    .task_id = it[i].task_id,
		    .backend = s->o.eo.backend,
		    .policy = "serve",
		    .config = cfg_text,
		    .budget = budget,
		};
		int64_t run_id = 0;
		rc = kf_store_run_add(s->store, &run, &run_id, err);
		free(cfg_text);
		for (int j = i; j < n && !rc; j++) {
			if (strcmp(it[j].task_path, it[i].task_path))
				continue;
			it[j].run_id = run_id;
			/* A text over the code cap is not kept: what it was
			 * stands in its place. */
			const char *src = it[j].code	   ? it[j].code
					  : it[j].refused ? it[j].refused
							  : it[j].completion;
			char sha[65];
			sha256_hex(src, sha);
			int64_t cid = 0;
			bool evaluated = false;
			rc = kf_store_candidate_find(s->store, run_id, sha,
						     &cid, &evaluated, err);
			if (rc)
				break;
			if (!cid) {
				char *origin = kf_xasprintf(
				    "serve:%s%s", it[j].id,
				    it[j].code      ? ""
				    : it[j].refused ? " (over the code cap, not "
						      "kept)"
						    : " (no code found)");
				struct kf_store_candidate c = {
				    .source = src,
				    .sha256 = sha,
				    .policy = "serve",
				    .origin = origin,
				    .prompt = NULL,
				};
				rc = kf_store_candidate_add(s->store, run_id,
							    &c, &cid, err);
				free(origin);
			}
			it[j].cand_id = cid;
			if (!rc && !evaluated)
				rc = kf_store_evaluation_add(s->store, cid,
							     it[j].result, err);
		}
		if (!rc)
			rc = kf_store_run_set_state(s->store, run_id, "done",
						    NULL, err);
	}
	pthread_mutex_unlock(&s->store_lock);
	return rc;
}

/* Rewards of the items whose groups come in several requests: each joins
 * its group, then each waits for the group's answer (groups.c), until the
 * request's deadline at most. */
static void group_rewards(struct kf_server *s, struct sitem *it, int n,
			  const struct kf_reward *r, uint64_t until_ns)
{
	struct srv_group **g = kf_xcalloc((size_t)n, sizeof(*g));
	int *slot = kf_xcalloc((size_t)n, sizeof(int));
	for (int i = 0; i < n; i++) {
		if (!it[i].across)
			continue;
		struct kf_err err = KF_ERR_INIT;
		if (srv_group_join(s, r, it[i].group, it[i].problem,
				   it[i].group_size,
				   &it[i].ri, &g[i], &slot[i], &err)) {
			/* Scored alone rather than lost. */
			kf_log(KF_LOG_WARN, "serve: item %s: %s", it[i].id,
			       err.msg);
			it[i].reward = NAN;
			srv_rewards(r, &it[i].ri, 1, false, &it[i].reward,
				    &it[i].advantage, it[i].id);
			it[i].members = 1;
			it[i].group_complete = false;
		}
	}
	for (int i = 0; i < n; i++) {
		if (!g[i])
			continue;
		struct srv_group_answer a;
		srv_group_answer(s, g[i], slot[i], until_ns, &a);
		it[i].reward = a.reward;
		it[i].advantage = a.advantage;
		it[i].members = a.members;
		it[i].group_complete = a.complete;
	}
	free(g);
	free(slot);
}

/* Rewards per group: items with a group_id are scored with the rest of
 * their group (those of other requests through group_rewards); the others
 * each alone. GRPO advantages within groups. */
static void compute_rewards(struct kf_server *s, struct sitem *it, int n,
			    const struct kf_reward *r, uint64_t until_ns)
{
	bool *seen = kf_xcalloc((size_t)n, sizeof(bool));
	struct kf_reward_item *gi = kf_xcalloc((size_t)n, sizeof(*gi));
	int *idx = kf_xcalloc((size_t)n, sizeof(int));
	double *out = kf_xcalloc((size_t)n, sizeof(double));
	double *adv = kf_xcalloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		if (seen[i] || it[i].across)
			continue;
		int m = 0;
		for (int j = i; j < n; j++) {
			bool same =
			    j == i || (it[i].group && it[j].group &&
				       !strcmp(it[i].group, it[j].group));
			if (same && !seen[j]) {
				seen[j] = true;
				idx[m] = j;
				gi[m++] = it[j].ri;
			}
		}
		srv_rewards(r, gi, m, it[i].group != NULL, out, adv,
			    it[i].group ? it[i].group : it[i].id);
		for (int k = 0; k < m; k++) {
			it[idx[k]].reward = out[k];
			it[idx[k]].advantage = adv[k];
			it[idx[k]].members = m;
			it[idx[k]].group_complete = true;
		}
	}
	free(seen);
	free(gi);
	free(idx);
	free(out);
	free(adv);
	group_rewards(s, it, n, r, until_ns);
}

/* Whether code is the reference of the task at task_path on the server's
 * backend, up to comments and white space. */
static bool is_reference(struct kf_server *s, const char *task_path,
			 const char *code)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	char *ref_path = NULL, *ref = NULL;
	bool same = false;
	if (!kf_task_load(task_path, &t, &err)) {
		kf_task_select_backend(t, s->o.eo.backend);
		ref_path = kf_task_reference(t, s->o.eo.backend, &err);
		if (ref_path && !kf_file_read(ref_path, KF_PROMPT_SOURCE_CAP,
					      &ref, NULL, &err))
			same = kf_prompt_same_code(code, ref);
	}
	free(ref);
	free(ref_path);
	kf_task_free(t);
	return same;
}

/* Whether an item's code is the code block of the prompt it answers (the
 * last one holding the entry point, as a reply's is found), up to comments
 * and white space. */
static bool in_prompt(struct kf_server *s, const struct sitem *it)
{
	if (!it->prompt)
		return false;
	char *pc = kf_prompt_extract_as(it->prompt, s->o.code_cap,
					kf_prompt_code_kind(it->task_path));
	bool same = pc && kf_prompt_same_code(it->code, pc);
	free(pc);
	return same;
}

/*
 * Evaluates the parsed items, stores them, computes rewards. 0 with
 * *answers an array of item objects, or -1 with out set (503, 500).
 */
int api_score_items(struct kf_server *s, struct sitem *it, int n,
		    const struct kf_reward *rw, double deadline_s,
		    const char *route, const cJSON *extra, cJSON **answers,
		    struct kf_server_response *out)
{
	struct job **jobs = kf_xcalloc((size_t)n + 1, sizeof(*jobs));
	int nj = 0, rc = 0;
	uint64_t deadline = kf_now_ns() + (uint64_t)(deadline_s * 1e9);
	*answers = NULL;
	pthread_mutex_lock(&s->lock);
	long rq = ++s->score_requests;
	pthread_mutex_unlock(&s->lock);
	for (int i = 0; i < n; i++) {
		if (it[i].refused)
			continue;
		if (!it[i].code_given)
			it[i].code = kf_prompt_extract_as(
			    it[i].completion, s->o.code_cap,
			    kf_prompt_code_kind(it[i].task_path));
		it[i].reward = NAN;
		it[i].advantage = NAN;
		/* A reply with no code of its own can still hold the
		 * reference, echoed with the prompt: it is not scored as a
		 * kernel (and is stored as what it is). */
		if (it[i].code && (is_reference(s, it[i].task_path, it[i].code) ||
				   in_prompt(s, &it[i])))
			it[i].copied = true;
		if (!it[i].code || it[i].copied)
			continue;
		char sha[65];
		sha256_hex(it[i].code, sha);
		/* The same source for the same task is evaluated once. */
		for (int k = 0; k < nj && !it[i].job; k++)
			if (!strcmp(jobs[k]->sha, sha) &&
			    !strcmp(jobs[k]->task_path, it[i].task_path)) {
				it[i].job = jobs[k];
				it[i].dup = true;
			}
		if (it[i].job)
			continue;
		struct job *j = kf_xcalloc(1, sizeof(*j));
		j->task_path = kf_xstrdup(it[i].task_path);
		j->source = kf_xstrdup(it[i].code);
		memcpy(j->sha, sha, sizeof(sha));
		j->deadline_ns = deadline;
		j->label = kf_xasprintf("request %ld (%s), item '%s' (problem "
					"%s)",
					rq, route, it[i].id ? it[i].id : "?",
					it[i].problem	 ? it[i].problem
					: it[i].task_id ? it[i].task_id
							: "?");
		jobs[nj++] = j;
		it[i].job = j;
	}
	struct batch b = {0};
	int retry = 0;
	if (nj && srv_submit(s, jobs, nj, &b, &retry)) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "the queue cannot take %d more evaluations now "
			 "(capacity %d): retry after %d s",
			 nj, s->o.queue_cap, retry);
		srv_error(503, "queue_full", msg, out);
		out->retry_after = retry;
		rc = -1;
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	s->items += n;
	for (int i = 0; i < n; i++)
		if (it[i].dup)
			s->dedup_hits++;
	pthread_mutex_unlock(&s->lock);
	if (nj)
		srv_wait(s, jobs, nj, &b);

	for (int i = 0; i < n; i++) {
		struct sitem *x = &it[i];
		if (x->refused)
			x->synth = synth_result(s, x, "compile_error",
						x->refused_check, x->refused);
		else if (!x->code || x->copied)
			x->synth = synth_result(
			    s, x, "compile_error",
			    x->copied ? "reference_copy" : "no_code",
			    x->copied ? COPIED_REASON
				      : kf_prompt_no_code_reason(
					    kf_prompt_code_kind(x->task_path)));
		else if (!x->job->result)
			x->synth = synth_result(s, x, "infra_error", NULL,
						x->job->error ? x->job->error
							      : "no result");
		x->result = x->synth ? x->synth : x->job->result;
		struct kf_err err = KF_ERR_INIT;
		struct kf_reward_item ri = KF_REWARD_ITEM_INIT;
		if (kf_reward_item_from_result(x->result, s->o.eo.trials, &ri,
					       &err))
			kf_log(KF_LOG_WARN, "serve: item %s: %s", x->id,
			       err.msg);
		kf_reward_item_objective(&ri, s->o.objective, x->result);
		x->ri = ri;
	}
	struct kf_err err = KF_ERR_INIT;
	if (store_items(s, it, n, route, extra, rw, &err)) {
		srv_errorf(out, 500, "store_failed",
			   "the results could not be written to the store: %s",
			   err.msg);
		rc = -1;
		goto out;
	}
	compute_rewards(s, it, n, rw, deadline);
	*answers = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(*answers, item_json(&it[i]));
out:
	for (int i = 0; i < n; i++)
		if (it[i].synth == NULL && it[i].job)
			it[i].result = NULL; /* about to be freed */
	for (int k = 0; k < nj; k++)
		srv_job_free(jobs[k]);
	for (int i = 0; i < n; i++)
		it[i].job = NULL;
	free(jobs);
	return rc;
}

/* POST /v1/score */
void api_route_score(struct kf_server *s, const cJSON *body,
		     struct kf_server_response *out)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(body, "items");
	if (!items) {
		srv_errorf(
		    out, 400, "missing_field",
		    "items is missing: {\"items\": [{\"id\", "
		    "\"problem_id\", \"completion\" or \"code\"}, ...]}");
		return;
	}
	if (!cJSON_IsArray(items)) {
		srv_errorf(out, 400, "bad_field", "items must be an array");
		return;
	}
	int n = cJSON_GetArraySize(items);
	if (n > s->o.queue_cap) {
		srv_errorf(out, 413, "too_many_items",
			   "%d items are more than the queue holds (%d): split "
			   "the request",
			   n, s->o.queue_cap);
		return;
	}
	struct kf_reward rw;
	double deadline_s;
	if (api_request_reward(s, body, &rw, out) ||
	    api_request_deadline(s, body, &deadline_s, out))
		return;
	/* "feedback": "standard" (the default) or "profile" (the standard
	 * text and the profiler's advice on each ok item: docs/profile.md) */
	const cJSON *fm = cJSON_GetObjectItemCaseSensitive(body, "feedback");
	bool profile = false;
	if (fm && !cJSON_IsNull(fm)) {
		if (!cJSON_IsString(fm) ||
		    (strcmp(fm->valuestring, "standard") &&
		     strcmp(fm->valuestring, "profile"))) {
			srv_errorf(out, 400, "bad_field",
				   "feedback must be \"standard\" or "
				   "\"profile\"");
			return;
		}
		profile = !strcmp(fm->valuestring, "profile");
	}
	struct sitem *it = kf_xcalloc((size_t)n + 1, sizeof(*it));
	int i = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, items)
	{
		if (parse_item(s, o, i, &it[i], out)) {
			api_sitems_free(it, i + 1);
			return;
		}
		if (profile) {
			it[i].profile_backend = s->o.eo.backend;
			it[i].profile_include = s->o.eo.include_dir;
		}
		i++;
	}
	if (check_items(it, n, out)) {
		api_sitems_free(it, n);
		return;
	}
	uint64_t t0 = kf_now_ns();
	cJSON *answers = NULL;
	if (!api_score_items(s, it, n, &rw, deadline_s, "/v1/score", NULL,
			     &answers, out)) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddItemToObject(b, "items", answers);
		cJSON_AddItemToObject(b, "reward", kf_reward_json(&rw));
		cJSON_AddNumberToObject(b, "seconds",
					(double)(kf_now_ns() - t0) / 1e9);
		srv_respond(out, 200, b);
	}
	api_sitems_free(it, n);
}

/* POST /v1/openrlhf: OpenRLHF's remote reward model protocol. */
void api_route_openrlhf(struct kf_server *s, const cJSON *body,
			struct kf_server_response *out)
{
	const cJSON *query = cJSON_GetObjectItemCaseSensitive(body, "query");
	const cJSON *prompts =
	    cJSON_GetObjectItemCaseSensitive(body, "prompts");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(body, "labels");
	if (!cJSON_IsArray(query) || !cJSON_IsArray(labels)) {
		srv_errorf(
		    out, 400, "missing_field",
		    "query and labels must be arrays: {\"query\": [prompt "
		    "+ response, ...], \"prompts\": [...], \"labels\": "
		    "[problem id, ...]}");
		return;
	}
	int n = cJSON_GetArraySize(query);
	if (cJSON_GetArraySize(labels) != n ||
	    (cJSON_IsArray(prompts) && cJSON_GetArraySize(prompts) != n)) {
		srv_errorf(
		    out, 422, "length_mismatch",
		    "query, prompts and labels must have the same length "
		    "(query has %d)",
		    n);
		return;
	}
	if (n > s->o.queue_cap) {
		srv_errorf(out, 413, "too_many_items",
			   "%d items are more than the queue holds (%d)", n,
			   s->o.queue_cap);
		return;
	}
	struct kf_reward rw;
	double deadline_s;
	if (api_request_reward(s, body, &rw, out) ||
	    api_request_deadline(s, body, &deadline_s, out))
		return;
	if (deadline_s > s->o.openrlhf_deadline_s)
		deadline_s = s->o.openrlhf_deadline_s;
	struct sitem *it = kf_xcalloc((size_t)n + 1, sizeof(*it));
	for (int i = 0; i < n; i++) {
		const cJSON *q = cJSON_GetArrayItem(query, i);
		const cJSON *l = cJSON_GetArrayItem(labels, i);
		const cJSON *p = cJSON_IsArray(prompts)
				     ? cJSON_GetArrayItem(prompts, i)
				     : NULL;
		it[i].turn = -1;
		it[i].id = kf_xasprintf("%d", i);
		if (!cJSON_IsString(q) || !cJSON_IsString(l) ||
		    !*l->valuestring || (p && !cJSON_IsString(p))) {
			srv_errorf(
			    out, 400, "bad_field",
			    "query[%d], prompts[%d] and labels[%d] must be "
			    "strings (labels: problem ids)",
			    i, i, i);
			api_sitems_free(it, i + 1);
			return;
		}
		/* The response is the query after its prompt; the prompt
		 * may hold code blocks of its own (the reference). */
		const char *resp = q->valuestring;
		const char *after =
		    p ? kf_prompt_after(resp, p->valuestring) : NULL;
		if (after)
			resp = after;
		api_item_text(s, &it[i], resp, false);
		if (srv_request_nul("query", i, NULL))
			api_item_refuse(&it[i], "nul_in_completion",
					api_nul_why(false));
		it[i].prompt = p ? p->valuestring : NULL;
		it[i].problem = kf_xstrdup(l->valuestring);
		/* The samples of one prompt form a group. */
		if (p) {
			char sha[65];
			sha256_hex(p->valuestring, sha);
			it[i].group = kf_xstrdup(sha);
			it[i].group_size = s->o.openrlhf_group_size;
		}
		char where[32];
		snprintf(where, sizeof(where), "labels[%d]", i);
		if (api_resolve_problem(s, it[i].problem, &it[i].task_path,
					&it[i].task_id, out, where, "label")) {
			api_sitems_free(it, i + 1);
			return;
		}
	}
	cJSON *answers = NULL;
	if (!api_score_items(s, it, n, &rw, deadline_s, "/v1/openrlhf", NULL,
			     &answers, out)) {
		cJSON *b = cJSON_CreateObject();
		cJSON *rewards = cJSON_AddArrayToObject(b, "rewards");
		cJSON *scores = cJSON_AddArrayToObject(b, "scores");
		cJSON *logs = cJSON_AddObjectToObject(b, "extra_logs");
		cJSON *sp = cJSON_AddArrayToObject(logs, "speedup");
		cJSON *co = cJSON_AddArrayToObject(logs, "correct");
		cJSON *cm = cJSON_AddArrayToObject(logs, "compiled");
		cJSON *ie = cJSON_AddArrayToObject(logs, "infra_error");
		const cJSON *a;
		cJSON_ArrayForEach(a, answers)
		{
			const cJSON *r = cJSON_GetObjectItem(a, "reward");
			bool infra = !cJSON_IsNumber(r);
			bool ok =
			    cJSON_IsTrue(cJSON_GetObjectItem(a, "correct"));
			/* OpenRLHF takes numbers only: no reward is 0. */
			cJSON_AddItemToArray(
			    rewards,
			    cJSON_CreateNumber(infra ? 0 : r->valuedouble));
			cJSON_AddItemToArray(scores,
					     cJSON_CreateNumber(ok ? 1 : 0));
			double v = kf_json_num(a, "speedup", 0);
			cJSON_AddItemToArray(sp,
					     cJSON_CreateNumber(ok ? v : 0));
			cJSON_AddItemToArray(co, cJSON_CreateNumber(ok));
			cJSON_AddItemToArray(
			    cm, cJSON_CreateNumber(cJSON_IsTrue(
				    cJSON_GetObjectItem(a, "compiled"))));
			cJSON_AddItemToArray(ie, cJSON_CreateNumber(infra));
		}
		cJSON_Delete(answers);
		srv_respond(out, 200, b);
	}
	api_sitems_free(it, n);
}
