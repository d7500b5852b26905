/*
 * api.c: the routes of the reward service (docs/api.md): api_handle sends
 * each request to its route: OpenEnv's (openenv.c), the episodes'
 * (episodes.c), /v1/score and /v1/openrlhf (score.c), and those answered
 * here: /v1/health, /v1/rewards, and /v1/stats and /metrics (stats.c).
 */
#include <string.h>

#include "server_int.h"

static cJSON *health_json(struct kf_server *s)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "status", "ok");
	cJSON_AddStringToObject(b, "kforge", KF_VERSION);
	cJSON_AddStringToObject(b, "backend", s->o.eo.backend);
	cJSON_AddStringToObject(b, "tasks", s->o.tasks_dir);
	cJSON_AddNumberToObject(b, "workers", s->o.workers);
	/* Where evaluations run: in eval children here, or on the Redis
	 * farm's workers (the URL, which may hold a password, is not
	 * shown). */
	cJSON_AddStringToObject(b, "evaluates", s->o.redis ? "farm" : "local");
	cJSON_AddItemToObject(b, "reward", kf_reward_json(&s->reward));
	return b;
}

static cJSON *rewards_json(void)
{
	cJSON *a = cJSON_CreateArray();
	const struct kf_reward_ops *ops;
	for (size_t i = 0; (ops = kf_reward_at(i)); i++) {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", ops->name);
		cJSON_AddStringToObject(d, "doc", ops->doc);
		cJSON_AddStringToObject(d, "scores",
					ops->group ? "group" : "item");
		cJSON *p = cJSON_AddObjectToObject(d, "params");
		for (int k = 0; k < ops->n_params; k++) {
			cJSON *q =
			    cJSON_AddObjectToObject(p, ops->params[k].name);
			cJSON_AddNumberToObject(q, "default",
						ops->params[k].dflt);
			cJSON_AddNumberToObject(q, "min", ops->params[k].min);
			cJSON_AddNumberToObject(q, "max", ops->params[k].max);
			cJSON_AddStringToObject(q, "doc", ops->params[k].doc);
		}
		cJSON_AddItemToArray(a, d);
	}
	cJSON *b = cJSON_CreateObject();
	cJSON_AddItemToObject(b, "designs", a);
	return b;
}

void api_handle(struct kf_server *s, const char *method, const char *path,
		cJSON *body, struct kf_server_response *out)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	if (srv_openenv_route(s, method, path, body, out))
		return; /* OpenEnv's routes, /health among them */
	if (api_episodes_route(s, method, path, body, out))
		return; /* /v1/episodes and /v1/episodes/{id}[/step] */
	if (!strcmp(path, "/v1/health")) {
		if (get)
			srv_respond(out, 200, health_json(s));
		else
			srv_bad_method(out, method, path, "GET");
	} else if (!strcmp(path, "/v1/stats")) {
		if (get)
			srv_respond(out, 200, kf_server_stats(s));
		else
			srv_bad_method(out, method, path, "GET");
	} else if (!strcmp(path, "/metrics")) {
		if (get) {
			out->status = 200;
			out->body = kf_server_metrics(s);
			out->content_type = KF_SERVER_METRICS_TYPE;
		} else
			srv_bad_method(out, method, path, "GET");
	} else if (!strcmp(path, "/v1/rewards")) {
		if (get)
			srv_respond(out, 200, rewards_json());
		else
			srv_bad_method(out, method, path, "GET");
	} else if (!strcmp(path, "/v1/score")) {
		if (post)
			api_route_score(s, body, out);
		else
			srv_bad_method(out, method, path, "POST");
	} else if (!strcmp(path, "/v1/openrlhf")) {
		if (post)
			api_route_openrlhf(s, body, out);
		else
			srv_bad_method(out, method, path, "POST");
	} else {
		srv_errorf(out, 404, "not_found",
			   "no route %s (see docs/api.md: /v1/score, "
			   "/v1/episodes, /v1/openrlhf, /v1/health, /v1/stats, "
			   "/metrics)",
			   path);
	}
}
