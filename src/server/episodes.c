/*
 * episodes.c: multi-turn episodes (docs/api.md): an episode holds a problem,
 * a reward design and the rewards of its turns; each step scores one
 * completion through score.c. It is done at its last turn (or its first
 * correct one, with stop_on_correct) and kept until DELETE or until idle
 * past --episode-ttl. The routes POST /v1/episodes, POST
 * /v1/episodes/{id}/step and GET and DELETE /v1/episodes/{id}; OpenEnv's
 * (openenv.c) go through them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <kforge/prompt.h>
#include <kforge/task.h>

#include "server_int.h"

struct episode {
	struct episode *next;
	char id[40];
	char *problem, *task_path, *task_id;
	struct kf_reward reward;
	double alpha;
	int max_turns, turn;
	bool busy, done, stop_on_correct;
	double rewards[64];
	uint64_t last_ns;
};

static void episode_free(struct episode *e)
{
	free(e->problem);
	free(e->task_path);
	free(e->task_id);
	free(e);
}

void api_episodes_free(struct kf_server *s)
{
	while (s->episodes) {
		struct episode *e = s->episodes;
		s->episodes = e->next;
		episode_free(e);
	}
	s->n_episodes = 0;
}

/* Drops idle episodes past their time to live; under s->lock. */
static void episodes_expire(struct kf_server *s)
{
	uint64_t now = kf_now_ns();
	uint64_t ttl = (uint64_t)(s->o.episode_ttl_s * 1e9);
	struct episode **pp = &s->episodes;
	while (*pp) {
		struct episode *e = *pp;
		if (!e->busy && now - e->last_ns > ttl) {
			*pp = e->next;
			episode_free(e);
			s->n_episodes--;
		} else {
			pp = &e->next;
		}
	}
}

static struct episode *episode_find(struct kf_server *s, const char *id)
{
	for (struct episode *e = s->episodes; e; e = e->next)
		if (!strcmp(e->id, id))
			return e;
	return NULL;
}

static double trajectory_reward(const struct episode *e)
{
	double v = NAN;
	struct kf_err err = KF_ERR_INIT;
	if (e->turn &&
	    kf_reward_anchor(e->rewards, (size_t)e->turn, e->alpha, &v, &err))
		v = NAN;
	return v;
}

/* The first observation: the built-in prompt for the task, else its
 * description. */
static void first_prompt(struct kf_server *s, const char *task_path, cJSON *b)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	char *ref = NULL, *system = NULL, *user = NULL;
	if (kf_task_load(task_path, &t, &err))
		goto out;
	kf_task_select_backend(t, s->o.eo.backend);
	if (kf_prompt_first_turn(t, s->o.eo.backend, &system, &user, &ref,
				 &err)) {
		system = NULL;
		user = NULL;
	}
out:
	if (user)
		cJSON_AddStringToObject(b, "observation", user);
	else
		cJSON_AddStringToObject(b, "observation",
					t && t->description ? t->description
							    : "");
	if (system)
		cJSON_AddStringToObject(b, "system", system);
	else
		cJSON_AddNullToObject(b, "system");
	if (ref)
		cJSON_AddStringToObject(b, "reference", ref);
	else
		cJSON_AddNullToObject(b, "reference");
	free(system);
	free(user);
	free(ref);
	kf_task_free(t);
}

static cJSON *episode_json(const struct episode *e)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "episode_id", e->id);
	cJSON_AddStringToObject(b, "problem_id", e->problem);
	cJSON_AddNumberToObject(b, "turn", e->turn);
	cJSON_AddNumberToObject(b, "max_turns", e->max_turns);
	cJSON_AddBoolToObject(b, "done", e->done);
	cJSON *r = cJSON_AddArrayToObject(b, "rewards");
	for (int i = 0; i < e->turn; i++)
		cJSON_AddItemToArray(r, isfinite(e->rewards[i])
					    ? cJSON_CreateNumber(e->rewards[i])
					    : cJSON_CreateNull());
	srv_add_num(b, "trajectory_reward", trajectory_reward(e));
	return b;
}

/* POST /v1/episodes */
static void route_episode_new(struct kf_server *s, const cJSON *body,
			      struct kf_server_response *out)
{
	const char *pid = kf_json_str(body, "problem_id");
	if (!pid || !*pid) {
		srv_errorf(out, 400, "missing_field",
			   "problem_id is missing or not a string");
		return;
	}
	if (strlen(pid) > KF_SERVER_ID_CAP) {
		srv_errorf(out, 400, "bad_field",
			   "problem_id is over 256 bytes");
		return;
	}
	struct episode *e = kf_xcalloc(1, sizeof(*e));
	e->alpha = KF_REWARD_ANCHOR_ALPHA;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(body, "alpha");
	if (api_int_member(body, "max_turns", 1, 64, s->o.max_turns,
			   &e->max_turns)) {
		srv_errorf(out, 422, "bad_field",
			   "max_turns must be an integer from 1 to 64");
		goto fail;
	}
	if (a && !cJSON_IsNull(a)) {
		if (!cJSON_IsNumber(a) || !(a->valuedouble >= 0) ||
		    a->valuedouble > 1) {
			srv_errorf(out, 422, "bad_field",
				   "alpha must be a number in [0, 1]");
			goto fail;
		}
		e->alpha = a->valuedouble;
	}
	e->stop_on_correct = cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(body, "stop_on_correct"));
	if (api_request_reward(s, body, &e->reward, out))
		goto fail;
	if (e->reward.ops->group) {
		srv_errorf(out, 422, "bad_reward",
			   "reward %s scores groups; an episode's turns are "
			   "scored one at a time: use a per-item design "
			   "(log_speedup, musacoder)",
			   e->reward.ops->name);
		goto fail;
	}
	if (api_resolve_problem(s, pid, &e->task_path, &e->task_id, out,
				"the episode", "problem_id"))
		goto fail;
	e->problem = kf_xstrdup(pid);
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = kf_now_ns();
	pthread_mutex_lock(&s->lock);
	episodes_expire(s);
	if (s->n_episodes >= s->o.max_episodes) {
		pthread_mutex_unlock(&s->lock);
		srv_errorf(out, 503, "too_many_episodes",
			   "%d episodes are open, the most this server keeps: "
			   "end some (DELETE /v1/episodes/{id})",
			   s->n_episodes);
		out->retry_after = 10;
		goto fail;
	}
	snprintf(e->id, sizeof(e->id), "ep-%llu-%016llx",
		 (unsigned long long)++s->episode_seq, (unsigned long long)rnd);
	e->last_ns = kf_now_ns();
	e->next = s->episodes;
	s->episodes = e;
	s->n_episodes++;
	cJSON *b = episode_json(e);
	pthread_mutex_unlock(&s->lock);
	cJSON_AddItemToObject(b, "reward", kf_reward_json(&e->reward));
	first_prompt(s, e->task_path, b);
	srv_respond(out, 201, b);
	return;
fail:
	episode_free(e);
}

/* POST /v1/episodes/{id}/step */
static void route_episode_step(struct kf_server *s, const char *id,
			       const cJSON *body,
			       struct kf_server_response *out)
{
	const char *code = kf_json_str(body, "code");
	const char *completion = kf_json_str(body, "completion");
	if (!code && !completion) {
		srv_errorf(out, 400, "missing_field",
			   "give completion (a model's raw reply) or code as a "
			   "string");
		return;
	}
	if (code && completion) {
		srv_errorf(out, 422, "conflicting_fields",
			   "give completion or code, not both");
		return;
	}
	double deadline_s;
	if (api_request_deadline(s, body, &deadline_s, out))
		return;
	pthread_mutex_lock(&s->lock);
	episodes_expire(s);
	struct episode *e = episode_find(s, id);
	if (!e || e->busy || e->done) {
		pthread_mutex_unlock(&s->lock);
		if (!e)
			srv_errorf(out, 404, "unknown_episode",
				   "no episode %s (ended, expired or never "
				   "started)",
				   id);
		else
			srv_errorf(
			    out, 409, e->busy ? "episode_busy" : "episode_done",
			    e->busy ? "episode %s is scoring another step"
				    : "episode %s is done: it had its %d "
				      "turns",
			    id, e->turn);
		return;
	}
	e->busy = true;
	struct sitem *it = kf_xcalloc(1, sizeof(*it));
	it->id = kf_xasprintf("%s/%d", e->id, e->turn + 1);
	it->problem = kf_xstrdup(e->problem);
	it->task_path = kf_xstrdup(e->task_path);
	it->task_id = kf_xstrdup(e->task_id);
	it->turn = e->turn;
	struct kf_reward rw = e->reward;
	pthread_mutex_unlock(&s->lock);
	api_item_text(s, it, code ? code : completion, code != NULL);
	if (srv_request_nul(code ? "code" : "completion", -1, NULL))
		api_item_refuse(it, "nul_in_completion",
				api_nul_why(code != NULL));

	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "episode", id);
	cJSON_AddNumberToObject(extra, "turn", it->turn);
	cJSON *answers = NULL;
	int rc = api_score_items(s, it, 1, &rw, deadline_s, "/v1/episodes",
				 extra, &answers, out);
	cJSON_Delete(extra);
	pthread_mutex_lock(&s->lock);
	e->busy = false;
	e->last_ns = kf_now_ns();
	if (rc) {
		pthread_mutex_unlock(&s->lock);
		api_sitems_free(it, 1);
		return;
	}
	cJSON *item = cJSON_DetachItemFromArray(answers, 0);
	cJSON_Delete(answers);
	const cJSON *r = cJSON_GetObjectItem(item, "reward");
	bool infra = !cJSON_IsNumber(r);
	/* A turn lost to the server's failure is not a turn: the same
	 * answer may be sent again. */
	if (!infra) {
		e->rewards[e->turn++] = r->valuedouble;
		bool ok = cJSON_IsTrue(cJSON_GetObjectItem(item, "correct"));
		if (e->turn >= e->max_turns || (ok && e->stop_on_correct))
			e->done = true;
	}
	cJSON *b = episode_json(e);
	pthread_mutex_unlock(&s->lock);
	cJSON_AddItemToObject(
	    b, "observation",
	    cJSON_Duplicate(cJSON_GetObjectItem(item, "feedback"), 1));
	cJSON_AddItemToObject(
	    b, "reward",
	    cJSON_Duplicate(cJSON_GetObjectItem(item, "reward"), 1));
	cJSON_AddItemToObject(b, "item", item);
	srv_respond(out, 200, b);
	api_sitems_free(it, 1);
}

static void route_episode_get(struct kf_server *s, const char *id, bool end,
			      struct kf_server_response *out)
{
	pthread_mutex_lock(&s->lock);
	struct episode *e = episode_find(s, id);
	if (!e || (end && e->busy)) {
		pthread_mutex_unlock(&s->lock);
		if (!e)
			srv_errorf(out, 404, "unknown_episode",
				   "no episode %s (ended, expired or never "
				   "started)",
				   id);
		else
			srv_errorf(out, 409, "episode_busy",
				   "episode %s is scoring a step", id);
		return;
	}
	cJSON *b = episode_json(e);
	if (end) {
		struct episode **pp = &s->episodes;
		while (*pp != e)
			pp = &(*pp)->next;
		*pp = e->next;
		s->n_episodes--;
		episode_free(e);
		cJSON_AddBoolToObject(b, "ended", true);
	}
	pthread_mutex_unlock(&s->lock);
	srv_respond(out, 200, b);
}

bool api_episodes_route(struct kf_server *s, const char *method,
			const char *path, const cJSON *body,
			struct kf_server_response *out)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST"),
	     del = !strcmp(method, "DELETE");
	if (!strcmp(path, "/v1/episodes")) {
		if (post)
			route_episode_new(s, body, out);
		else
			srv_bad_method(out, method, path, "POST");
	} else if (!strncmp(path, "/v1/episodes/", 13) && path[13]) {
		char id[64];
		const char *rest = path + 13;
		const char *slash = strchr(rest, '/');
		size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
		if (len == 0 || len >= sizeof(id)) {
			srv_errorf(out, 404, "unknown_episode",
				   "no episode in %s", path);
			return true;
		}
		memcpy(id, rest, len);
		id[len] = 0;
		if (slash && !strcmp(slash, "/step")) {
			if (post)
				route_episode_step(s, id, body, out);
			else
				srv_bad_method(out, method, path, "POST");
		} else if (!slash) {
			if (get || del)
				route_episode_get(s, id, del, out);
			else
				srv_bad_method(out, method, path,
					       "GET or DELETE");
		} else {
			srv_errorf(out, 404, "not_found", "no route %s", path);
		}
	} else {
		return false;
	}
	return true;
}
