/*
 * request.c: what the routes share in reading a request: a problem id
 * resolved to its task under the tasks root (nothing outside it is loaded),
 * an optional integer member, the request's reward design and its deadline,
 * and which of its strings held \u0000. Each answers a request it cannot
 * take itself (respond.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/task.h>

#include "server_int.h"

/* The strings of a request that hold \u0000: kforge's strings end at a
 * NUL, so such a request is refused whole (nul_in_string), unless every
 * one is an item's code or completion (items[i].completion or .code on
 * /v1/score, query[i] on /v1/openrlhf, completion or code of an episode's
 * step, action.completion or .code of OpenEnv's /step, data.completion or
 * .code of a /ws message): then that item alone is not evaluated and
 * fails (a model's reply must not void its batch). Held for the handling
 * thread while the request is routed (srv_nuls_begin, srv_request_nul,
 * srv_nuls_leave). */
struct request_nuls {
	struct kf_json_nul_at *at;
	int n;
};
static __thread struct request_nuls *request_nuls;

static bool nul_is_text(const struct kf_json_nul_at *a)
{
	return !strcmp(a->key2, "completion") || !strcmp(a->key2, "code");
}

/* Whether every NUL of q is an item's text; else *bad is the first that
 * is not. */
static bool nuls_in_items(const char *path, const struct request_nuls *q,
			  int *bad)
{
	*bad = 0;
	if (q->n < 1)
		return false;
	size_t pl = strlen(path);
	bool step = !strncmp(path, "/v1/episodes/", 13) && pl > 18 &&
		    !strcmp(path + pl - 5, "/step");
	for (int k = 0; k < q->n; k++) {
		const struct kf_json_nul_at *a = &q->at[k];
		bool ok = !strcmp(path, "/v1/score")
			      ? a->depth == 3 && !strcmp(a->key0, "items") &&
				    a->idx1 >= 0 && nul_is_text(a)
			  : !strcmp(path, "/v1/openrlhf")
			      ? a->depth == 2 && !strcmp(a->key0, "query") &&
				    a->idx1 >= 0
			  : step ? a->depth == 1 &&
				       (!strcmp(a->key0, "completion") ||
					!strcmp(a->key0, "code"))
			  : !strcmp(path, "/step") || !strcmp(path, "/ws")
			      ? a->depth == 2 &&
				    !strcmp(a->key0, path[1] == 's' ? "action"
								    : "data") &&
				    (!strcmp(a->key1, "completion") ||
				     !strcmp(a->key1, "code"))
			      : false;
		if (!ok) {
			*bad = k;
			return false;
		}
	}
	return true;
}

bool srv_request_nul(const char *key0, long idx1, const char *key2)
{
	const struct request_nuls *q = request_nuls;
	for (int k = 0; q && k < q->n; k++) {
		const struct kf_json_nul_at *a = &q->at[k];
		if (!strcmp(a->key0, key0) && a->idx1 == idx1 &&
		    !strcmp(a->key2, key2 ? key2 : ""))
			return true;
	}
	return false;
}

bool srv_request_nul_in(const char *key0, const char *key1)
{
	const struct request_nuls *q = request_nuls;
	for (int k = 0; q && k < q->n; k++)
		if (q->at[k].depth == 2 && !strcmp(q->at[k].key0, key0) &&
		    !strcmp(q->at[k].key1, key1))
			return true;
	return false;
}

static void nuls_free(struct request_nuls *q)
{
	if (q)
		free(q->at);
	free(q);
}

void *srv_nuls_enter(void)
{
	void *outer = request_nuls;
	request_nuls = NULL;
	return outer;
}

bool srv_nuls_begin(const char *path, const char *body, size_t len,
		    long *bad_at)
{
	struct request_nuls *q = kf_xcalloc(1, sizeof(*q));
	/* Every one of them, however many items hold one. */
	int n = kf_json_nul_paths(body, len, NULL, 0);
	q->at = kf_xcalloc((size_t)(n > 0 ? n : 1), sizeof(*q->at));
	q->n = kf_json_nul_paths(body, len, q->at, n);
	int bad;
	if (!nuls_in_items(path, q, &bad)) {
		*bad_at = q->n > 0 ? q->at[bad].at : -1;
		nuls_free(q);
		return false;
	}
	nuls_free(request_nuls);
	request_nuls = q;
	return true;
}

void *srv_nuls_inner(const char *key0)
{
	void *outer = srv_nuls_enter();
	if (key0) {
		struct request_nuls *q = kf_xcalloc(1, sizeof(*q));
		q->at = kf_xcalloc(1, sizeof(*q->at));
		q->n = 1;
		snprintf(q->at[0].key0, sizeof(q->at[0].key0), "%s", key0);
		q->at[0].idx1 = -1;
		q->at[0].depth = 1;
		request_nuls = q;
	}
	return outer;
}

void srv_nuls_leave(void *outer)
{
	nuls_free(request_nuls);
	request_nuls = outer;
}

/* An optional integer member in [lo, hi]: 0 and *out set (dflt when
 * absent), -1 when present and not such an integer. */
int api_int_member(const cJSON *o, const char *key, int lo, int hi, int dflt,
		   int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v || cJSON_IsNull(v)) {
		*out = dflt;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < lo || v->valuedouble > hi)
		return -1;
	*out = (int)v->valuedouble;
	return 0;
}

/* Why id is not a problem id, or NULL when it is one: a relative path of
 * plain components, each of [A-Za-z0-9_.-], none empty, "." or "..". */
static const char *problem_id_flaw(const char *id)
{
	if (!*id)
		return "it is empty";
	if (strlen(id) > KF_SERVER_ID_CAP)
		return "it is longer than 256 bytes";
	if (id[0] == '/')
		return "it is an absolute path";
	for (const char *c = id; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9') || strchr("_.-/", *c)))
			return "it holds a character other than A-Z, a-z, "
			       "0-9, '_', '.', '-' and '/'";
	for (const char *c = id; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0)
			return "it has an empty component";
		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return "it has a '.' or '..' component";
		c += n;
		if (*c == '/') {
			c++;
			if (!*c)
				return "it has an empty component";
		}
	}
	return NULL;
}

/* The real path of p (symlinks followed) when it lies inside root (a real
 * path); NULL otherwise, *outside set when p exists but lies elsewhere. */
static char *real_inside(const char *root, const char *p, bool *outside)
{
	char *r = realpath(p, NULL);
	if (!r)
		return NULL;
	size_t n = strlen(root);
	if (strncmp(r, root, n) || (r[n] != '/' && strcmp(root, "/"))) {
		free(r);
		*outside = true;
		return NULL;
	}
	return r;
}

/* Finds the task of a problem id under the tasks root: the task directory
 * <tasks_dir>/<id>, else the KernelBench-format task <tasks_dir>/<id>.py
 * ("level1/19_ReLU" in a KernelBench checkout's KernelBench/). The id must
 * be a relative path of plain components and its real path must lie inside
 * the root's: nothing outside the root is loaded or evaluated. 0 with the
 * real path in *task_path, or -1 with the answer set (400 bad_field for an
 * id that is not one or leads out of the root, 404 unknown_problem for no
 * task). */
int api_resolve_problem(struct kf_server *s, const char *id, char **task_path,
			char **task_id, struct kf_server_response *out,
			const char *where, const char *field)
{
	const char *flaw = problem_id_flaw(id);
	if (flaw) {
		srv_errorf(
		    out, 400, "bad_field",
		    "%s: %s '%.300s' is not a problem id: %s (a problem id "
		    "is a path relative to the tasks directory, of "
		    "components of A-Z, a-z, 0-9, '_', '.' and '-', none "
		    "of them '.' or '..')",
		    where, field, id, flaw);
		return -1;
	}
	char *root = realpath(s->o.tasks_dir, NULL);
	if (!root) {
		srv_errorf(
		    out, 404, "unknown_problem",
		    "%s: unknown problem id '%s': the tasks directory %s "
		    "cannot be read (%s)",
		    where, id, s->o.tasks_dir, strerror(errno));
		return -1;
	}
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	bool outside = false;
	char *p = kf_path_join(s->o.tasks_dir, id);
	char *py = kf_xasprintf("%s.py", p);
	char *real = real_inside(root, p, &outside);
	if (!real && !outside)
		real = real_inside(root, py, &outside);
	free(p);
	free(py);
	free(root);
	if (outside) {
		srv_errorf(out, 400, "bad_field",
			   "%s: %s '%s' leads out of the tasks directory %s (a "
			   "symbolic link to elsewhere): not evaluated",
			   where, field, id, s->o.tasks_dir);
		return -1;
	}
	if (!real || kf_task_load(real, &t, &err)) {
		free(real);
		srv_errorf(
		    out, 404, "unknown_problem",
		    "%s: unknown problem id '%s': no task directory %s/%s "
		    "nor KernelBench-format task %s/%s.py",
		    where, id, s->o.tasks_dir, id, s->o.tasks_dir, id);
		return -1;
	}
	*task_path = real;
	*task_id = kf_xstrdup(t->id);
	kf_task_free(t);
	return 0;
}

/* The design of a request: "reward": NAME or {"name", "params"}; the
 * server's when absent. 0, or -1 with a 422. */
int api_request_reward(struct kf_server *s, const cJSON *body,
		       struct kf_reward *r, struct kf_server_response *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "reward");
	if (!v || cJSON_IsNull(v)) {
		*r = s->reward;
		return 0;
	}
	const char *name = NULL;
	const cJSON *params = NULL;
	if (cJSON_IsString(v)) {
		name = v->valuestring;
	} else if (cJSON_IsObject(v)) {
		name = kf_json_str(v, "name");
		params = cJSON_GetObjectItemCaseSensitive(v, "params");
		if (params && !cJSON_IsObject(params) &&
		    !cJSON_IsNull(params)) {
			srv_errorf(out, 422, "bad_reward",
				   "reward.params must be an object");
			return -1;
		}
		if (cJSON_IsNull(params))
			params = NULL;
	}
	if (!name) {
		srv_errorf(out, 422, "bad_reward",
			   "reward must be a design name or {\"name\": ..., "
			   "\"params\": {...}}");
		return -1;
	}
	struct kf_err err = KF_ERR_INIT;
	if (kf_reward_init(r, name, params, &err)) {
		srv_errorf(out, 422, "bad_reward", "reward: %s", err.msg);
		return -1;
	}
	return 0;
}

/* The deadline of a request: "deadline_s", at most the server's. */
int api_request_deadline(struct kf_server *s, const cJSON *body,
			 double *deadline_s, struct kf_server_response *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "deadline_s");
	*deadline_s = s->o.deadline_s;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0)) {
		srv_errorf(out, 422, "bad_deadline",
			   "deadline_s must be a number above 0");
		return -1;
	}
	if (v->valuedouble < *deadline_s)
		*deadline_s = v->valuedouble;
	return 0;
}
