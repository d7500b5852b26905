/*
 * openenv.c: kforge's episodes in OpenEnv's protocol (huggingface/OpenEnv
 * at 385de5e, docs/rl.md "OpenEnv"): the HTTP routes /reset, /step, /state,
 * /schema, /metadata, /health and the messages of a /ws session. It only
 * translates: every episode is made, stepped, read and ended by
 * episodes.c's /v1/episodes routes, through api_episodes_route.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

/* GET /schema: the JSON schemas of integrations/openenv/models.py's
 * KforgeAction, KforgeObservation and KforgeState as pydantic writes them
 * (`python3 integrations/openenv/models.py`; the test compares the two). */
static const char schema_text[] =
    "{\"action\": {\"additionalProperties\": false, \"description\": \"A ke"
    "rnel for kforge to compile, check and time: exactly one of completion"
    "\\n(a model's raw reply; the code is taken from its fenced block) and "
    "code (the\\nsource itself).\", \"properties\": {\"code\": {\"anyOf\": "
    "[{\"type\": \"string\"}, {\"type\": \"null\"}], \"default\": null, \"d"
    "escription\": \"The kernel's source itself\", \"title\": \"Code\"}, \""
    "completion\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\""
    "}], \"default\": null, \"description\": \"A model's raw reply; its fen"
    "ced code block is evaluated\", \"title\": \"Completion\"}, \"metadata"
    "\": {\"additionalProperties\": true, \"description\": \"Additional met"
    "adata for the action\", \"title\": \"Metadata\", \"type\": \"object\"}"
    ", \"problem_id\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"nu"
    "ll\"}], \"default\": null, \"description\": \"The problem of a statele"
    "ss HTTP /step (default: kforge serve --openenv-problem); in a session,"
    " if given, the episode's problem\", \"title\": \"Problem Id\"}}, \"tit"
    "le\": \"KforgeAction\", \"type\": \"object\"}, \"observation\": {\"add"
    "itionalProperties\": false, \"description\": \"What kforge answers a r"
    "eset or a step with: the fields of kernrl's\\nKernelObservation (OpenE"
    "nv's envs/kernrl/models.py:35-62 at 685de41), with\\nthe same names, t"
    "ypes and defaults. kforge's own facts (episode_id, the\\nsystem prompt"
    ", the scored item) are in metadata, which kforge sends inside\\nthe ob"
    "servation (upstream's serialize_observation leaves metadata out).\", "
    "\"properties\": {\"compilation_error\": {\"anyOf\": [{\"type\": \"stri"
    "ng\"}, {\"type\": \"null\"}], \"default\": null, \"description\": \"Wh"
    "y the kernel did not compile, when it did not\", \"title\": \"Compilat"
    "ion Error\"}, \"compilation_success\": {\"default\": false, \"descript"
    "ion\": \"Whether the kernel compiled (true after a reset, as kernrl's)"
    "\", \"title\": \"Compilation Success\", \"type\": \"boolean\"}, \"corr"
    "ectness_pass\": {\"anyOf\": [{\"type\": \"boolean\"}, {\"type\": \"nul"
    "l\"}], \"default\": null, \"description\": \"Whether the kernel's outp"
    "uts matched the reference; null when not checked\", \"title\": \"Corre"
    "ctness Pass\"}, \"done\": {\"default\": false, \"description\": \"Whet"
    "her the episode has terminated\", \"title\": \"Done\", \"type\": \"boo"
    "lean\"}, \"feedback\": {\"default\": \"\", \"description\": \"kforge's"
    " feedback on the last kernel; empty after a reset\", \"title\": \"Feed"
    "back\", \"type\": \"string\"}, \"gpu_info\": {\"description\": \"The d"
    "evice kforge evaluates on\", \"title\": \"Gpu Info\", \"type\": \"stri"
    "ng\"}, \"max_diff\": {\"anyOf\": [{\"type\": \"number\"}, {\"type\": "
    "\"null\"}], \"default\": null, \"description\": \"The largest absolute"
    " error over the outputs checked; null when none was\", \"title\": \"Ma"
    "x Diff\"}, \"max_turns\": {\"default\": 10, \"description\": \"Steps t"
    "he episode allows\", \"minimum\": 1, \"title\": \"Max Turns\", \"type"
    "\": \"integer\"}, \"metadata\": {\"additionalProperties\": true, \"des"
    "cription\": \"Additional metadata for the observation\", \"title\": \""
    "Metadata\", \"type\": \"object\"}, \"problem_description\": {\"descrip"
    "tion\": \"The task's prompt as kforge renders it (the user message)\","
    " \"title\": \"Problem Description\", \"type\": \"string\"}, \"problem_"
    "id\": {\"description\": \"The task, relative to kforge serve --tasks\""
    ", \"title\": \"Problem Id\", \"type\": \"string\"}, \"reference_code\""
    ": {\"description\": \"The task's reference source on the server's back"
    "end\", \"title\": \"Reference Code\", \"type\": \"string\"}, \"reward"
    "\": {\"anyOf\": [{\"type\": \"boolean\"}, {\"type\": \"integer\"}, {\""
    "type\": \"number\"}, {\"type\": \"null\"}], \"default\": null, \"descr"
    "iption\": \"Reward signal from the last action\", \"title\": \"Reward"
    "\"}, \"speedup\": {\"anyOf\": [{\"type\": \"number\"}, {\"type\": \"nu"
    "ll\"}], \"default\": null, \"description\": \"The reference's time ove"
    "r the kernel's (median)\", \"title\": \"Speedup\"}, \"turn\": {\"defau"
    "lt\": 0, \"description\": \"Steps scored in the episode\", \"minimum\""
    ": 0, \"title\": \"Turn\", \"type\": \"integer\"}}, \"required\": [\"pr"
    "oblem_id\", \"problem_description\", \"reference_code\", \"gpu_info\"]"
    ", \"title\": \"KforgeObservation\", \"type\": \"object\"}, \"state\": "
    "{\"additionalProperties\": true, \"description\": \"A session's episod"
    "e: kernrl's KernelState fields (models.py:65-76) and\\nkforge's own; e"
    "pisode_id null and step_count 0 before a reset.\", \"properties\": {\""
    "best_speedup\": {\"default\": 0.0, \"description\": \"The best speedup"
    " of a correct kernel so far\", \"minimum\": 0.0, \"title\": \"Best Spe"
    "edup\", \"type\": \"number\"}, \"done\": {\"default\": false, \"descri"
    "ption\": \"Whether the episode has terminated\", \"title\": \"Done\", "
    "\"type\": \"boolean\"}, \"episode_id\": {\"anyOf\": [{\"type\": \"stri"
    "ng\"}, {\"type\": \"null\"}], \"default\": null, \"description\": \"Un"
    "ique identifier for the current episode\", \"title\": \"Episode Id\"},"
    " \"max_turns\": {\"default\": 10, \"description\": \"Steps the episode"
    " allows\", \"minimum\": 1, \"title\": \"Max Turns\", \"type\": \"integ"
    "er\"}, \"problem_id\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\":"
    " \"null\"}], \"default\": null, \"description\": \"The episode's task"
    "\", \"title\": \"Problem Id\"}, \"rewards\": {\"description\": \"The r"
    "eward of each scored step\", \"items\": {\"anyOf\": [{\"type\": \"numb"
    "er\"}, {\"type\": \"null\"}]}, \"title\": \"Rewards\", \"type\": \"arr"
    "ay\"}, \"solved\": {\"default\": false, \"description\": \"Whether a c"
    "orrect kernel with speedup above 1.05 was scored (kernrl's rule)\", \""
    "title\": \"Solved\", \"type\": \"boolean\"}, \"step_count\": {\"defaul"
    "t\": 0, \"description\": \"Number of steps taken in the current episod"
    "e\", \"minimum\": 0, \"title\": \"Step Count\", \"type\": \"integer\"}"
    ", \"trajectory_reward\": {\"anyOf\": [{\"type\": \"number\"}, {\"type"
    "\": \"null\"}], \"default\": null, \"description\": \"The first-turn-a"
    "nchored reward of the steps so far\", \"title\": \"Trajectory Reward\""
    "}, \"turn\": {\"default\": 0, \"description\": \"Steps scored in the e"
    "pisode\", \"minimum\": 0, \"title\": \"Turn\", \"type\": \"integer\"}}"
    ", \"title\": \"KforgeState\", \"type\": \"object\"}}";

/* Why an operation failed, in both of OpenEnv's forms: an HTTP status with
 * FastAPI's {"detail": [{"type", "loc", "msg"}]} (http_server.py:638-641),
 * and a WebSocket error code (types.py:37-46) with the same list. */
struct oe_fail {
	int status;
	const char *code;
	int retry_after;
	char message[1200];
	cJSON *errors;
};

/* "body.action.code" as ["body", "action", "code"]. */
static cJSON *loc_json(const char *loc)
{
	cJSON *a = cJSON_CreateArray();
	while (loc && *loc) {
		size_t n = strcspn(loc, ".");
		char part[80];
		snprintf(part, sizeof(part), "%.*s", (int)n, loc);
		cJSON_AddItemToArray(a, cJSON_CreateString(part));
		loc += n + (loc[n] == '.');
	}
	return a;
}

static void failf(struct oe_fail *f, int status, const char *code,
		  const char *type, const char *loc, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void failf(struct oe_fail *f, int status, const char *code,
		  const char *type, const char *loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	f->status = status;
	f->code = code;
	cJSON_Delete(f->errors);
	f->errors = cJSON_CreateArray();
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddItemToObject(e, "loc", loc_json(loc));
	cJSON_AddStringToObject(e, "msg", f->message);
	cJSON_AddItemToArray(f->errors, e);
}

/* An input that does not fit the schema: 422, VALIDATION_ERROR. */
#define invalid(f, type, loc, ...)                                             \
	failf(f, 422, "VALIDATION_ERROR", type, loc, __VA_ARGS__)

/*
 * Runs one of episodes.c's routes. 0 with its answer in *answer (caller
 * frees), or -1 with the failure: kforge's status, code (as the error's
 * type) and message, as OpenEnv's EXECUTION_ERROR (the environment's reset
 * or step failed: http_server.py:1471-1478), CAPACITY_REACHED when the
 * server keeps no more episodes.
 */
static int call(struct kf_server *s, const char *method, const char *path,
		cJSON *body, const char *nul_key, const char *loc,
		cJSON **answer, struct oe_fail *f)
{
	struct kf_server_response r;
	memset(&r, 0, sizeof(r));
	/* The inner request's own NUL marks: nul_key (an action's text that
	 * held \u0000, cut at it in body) or none. */
	void *outer = srv_nuls_inner(nul_key);
	api_episodes_route(s, method, path, body, &r);
	srv_nuls_leave(outer);
	cJSON *j = r.body ? cJSON_Parse(r.body) : NULL;
	int rc = 0;
	if (r.status < 400 && cJSON_IsObject(j)) {
		*answer = j;
		j = NULL;
	} else {
		const cJSON *e = cJSON_GetObjectItem(j, "error");
		const char *code = kf_json_str(e, "code");
		const char *msg = kf_json_str(e, "message");
		bool full = code && !strcmp(code, "too_many_episodes");
		failf(f, r.status >= 400 ? r.status : 500,
		      full ? "CAPACITY_REACHED" : "EXECUTION_ERROR",
		      code ? code : "internal_error", loc, "%s",
		      msg ? msg : "kforge's episode route gave no answer");
		f->retry_after = r.retry_after;
		rc = -1;
	}
	cJSON_Delete(j);
	kf_server_response_release(&r);
	return rc;
}

struct srv_openenv {
	struct kf_server *s;
	char *episode; /* the open episode's id; NULL before a reset */
	char *problem; /* its problem id */
	/* From the episode's first answer, repeated in every observation as
	 * kernrl's are (kernrl_environment.py:320-324). */
	char *description, *reference, *system;
	double best_speedup; /* KernelState.best_speedup */
	bool solved;	     /* KernelState.solved */
};

struct srv_openenv *srv_openenv_open(struct kf_server *s)
{
	struct srv_openenv *o = kf_xcalloc(1, sizeof(*o));
	o->s = s;
	return o;
}

/* Ends the open episode, if any (it may have expired: nothing to end). */
static void oe_end(struct srv_openenv *o)
{
	if (o->episode) {
		char *path = kf_xasprintf("/v1/episodes/%s", o->episode);
		struct kf_server_response r;
		memset(&r, 0, sizeof(r));
		api_episodes_route(o->s, "DELETE", path, NULL, &r);
		kf_server_response_release(&r);
		free(path);
	}
	free(o->episode);
	free(o->problem);
	free(o->description);
	free(o->reference);
	free(o->system);
	o->episode = NULL;
	o->problem = NULL;
	o->description = NULL;
	o->reference = NULL;
	o->system = NULL;
	o->best_speedup = 0;
	o->solved = false;
}

void srv_openenv_close(struct srv_openenv *o)
{
	if (!o)
		return;
	oe_end(o);
	free(o);
}

static void add_copy(cJSON *to, const char *key, const cJSON *from,
		     const char *from_key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, from_key);
	cJSON_AddItemToObject(to, key,
			      v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
}

char *srv_device_line(const cJSON *device)
{
	const char *name = kf_json_str(device, "name");
	if (!name || !*name)
		return NULL;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, name);
	const char *sep = " (";
	double mem = kf_json_num(device, "memory_bytes", 0);
	if (mem > 0) {
		/* GB as kernrl's (kernrl_environment.py's _get_gpu_info) */
		kf_strbuf_addf(&sb, "%s%.1f GB", sep, mem / 1e9);
		sep = ", ";
	}
	/* The native worker's keys (cuda.c's describe), else the PyTorch
	 * bridge's (kforge_bridge.py's device_desc). */
	static const char *const facts[][3] = {
	    {"compute capability ", "compute_capability", "capability"},
	    {"driver ", "driver", NULL},
	    {"CUDA ", "cuda_driver_api", "torch_cuda"},
	};
	for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
		const char *v = kf_json_str(device, facts[i][1]);
		if ((!v || !*v) && facts[i][2])
			v = kf_json_str(device, facts[i][2]);
		if (v && *v) {
			kf_strbuf_addf(&sb, "%s%s%s", sep, facts[i][0], v);
			sep = ", ";
		}
	}
	if (strcmp(sep, " ("))
		kf_strbuf_addstr(&sb, ")");
	return kf_strbuf_detach(&sb);
}

/* KernelObservation.gpu_info: the device kforge evaluates on. The host
 * backend's is the CPU's model name (/proc/cpuinfo, as the host backend's
 * device facts give it). Another backend's is the device the latest
 * evaluation ran on, as its worker described it (the server opens no
 * device itself); before any evaluation, the backend's name. */
static char *gpu_info(struct kf_server *s)
{
	const char *backend = s->o.eo.backend ? s->o.eo.backend : "host";
	if (strcmp(backend, "host")) {
		pthread_mutex_lock(&s->lock);
		char *line = srv_device_line(s->device);
		pthread_mutex_unlock(&s->lock);
		return line ? line
			    : kf_xasprintf("%s device (kforge serve --backend "
					   "%s)",
					   backend, backend);
	}
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512], *model = NULL;
	while (f && !model && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (colon && (!strncmp(line, "model name", 10) ||
			      !strncmp(line, "Processor", 9))) {
			colon += 1 + (colon[1] == ' ');
			colon[strcspn(colon, "\n")] = '\0';
			model = kf_xasprintf("host CPU: %s", colon);
		}
	}
	if (f)
		fclose(f);
	return model ? model : kf_xstrdup("host CPU: unknown model");
}

static void add_str_or_null(cJSON *to, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(to, key, v);
	else
		cJSON_AddNullToObject(to, key);
}

/*
 * OpenEnv's answer to a reset or a step, {"observation", "reward", "done"}
 * (ResetResponse, StepResponse: types.py:110-166), from an answer of POST
 * /v1/episodes or of its step. The observation has kernrl's
 * KernelObservation fields (envs/kernrl/models.py:35-62); kforge's own
 * facts go in its metadata, which kforge sends inside the observation:
 * upstream's serialize_observation (serialization.py:154-160) leaves
 * metadata out, kernrl's client reads it from there (client.py:121).
 */
static cJSON *envelope(struct srv_openenv *o, const cJSON *ans, bool step)
{
	const cJSON *item = step ? cJSON_GetObjectItem(ans, "item") : NULL;
	cJSON *obs = cJSON_CreateObject();
	add_copy(obs, "problem_id", ans, "problem_id");
	cJSON_AddStringToObject(obs, "problem_description",
				o->description ? o->description : "");
	cJSON_AddStringToObject(obs, "reference_code",
				o->reference ? o->reference : "");
	char *gi = gpu_info(o->s);
	cJSON_AddStringToObject(obs, "gpu_info", gi);
	free(gi);
	add_copy(obs, "turn", ans, "turn");
	add_copy(obs, "max_turns", ans, "max_turns");
	const char *fb = step ? kf_json_str(ans, "observation") : NULL;
	cJSON_AddStringToObject(obs, "feedback", fb ? fb : "");
	if (!step) {
		/* As kernrl's reset (kernrl_environment.py:255-266). */
		cJSON_AddTrueToObject(obs, "compilation_success");
		cJSON_AddNullToObject(obs, "compilation_error");
		cJSON_AddNullToObject(obs, "correctness_pass");
		cJSON_AddNullToObject(obs, "max_diff");
		cJSON_AddNullToObject(obs, "speedup");
	} else {
		const char *status = kf_json_str(item, "status");
		bool compiled =
		    cJSON_IsTrue(cJSON_GetObjectItem(item, "compiled"));
		cJSON_AddBoolToObject(obs, "compilation_success", compiled);
		const char *reason = kf_json_str(item, "reason");
		add_str_or_null(obs, "compilation_error",
				compiled ? NULL
					 : reason ? reason
					 : status ? status
						  : "not compiled");
		/* Checked only once compiled, and not when the server
		 * failed (infra_error: no verdict on the kernel). */
		bool checked = compiled && status &&
			       strcmp(status, "infra_error");
		bool correct =
		    cJSON_IsTrue(cJSON_GetObjectItem(item, "correct"));
		if (checked)
			cJSON_AddBoolToObject(obs, "correctness_pass", correct);
		else
			cJSON_AddNullToObject(obs, "correctness_pass");
		const cJSON *md = cJSON_GetObjectItem(
		    cJSON_GetObjectItem(item, "metrics"), "max_abs_error");
		if (checked && cJSON_IsNumber(md))
			cJSON_AddNumberToObject(obs, "max_diff",
						md->valuedouble);
		else
			cJSON_AddNullToObject(obs, "max_diff");
		const cJSON *sp = cJSON_GetObjectItem(item, "speedup");
		if (cJSON_IsNumber(sp)) {
			cJSON_AddNumberToObject(obs, "speedup",
						sp->valuedouble);
			/* kernrl_environment.py:299-312 */
			if (correct && sp->valuedouble > o->best_speedup)
				o->best_speedup = sp->valuedouble;
			if (correct && sp->valuedouble > 1.05)
				o->solved = true;
		} else {
			cJSON_AddNullToObject(obs, "speedup");
		}
	}
	cJSON *meta = cJSON_AddObjectToObject(obs, "metadata");
	add_copy(meta, "episode_id", ans, "episode_id");
	add_str_or_null(meta, "system", step ? NULL : o->system);
	if (step) {
		add_copy(meta, "status", item, "status");
		add_copy(meta, "item", ans, "item");
	} else {
		cJSON_AddNullToObject(meta, "status");
		cJSON_AddNullToObject(meta, "item");
	}
	cJSON_AddBoolToObject(meta, "solved", o->solved);
	cJSON_AddNumberToObject(meta, "best_speedup", o->best_speedup);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddItemToObject(b, "observation", obs);
	const cJSON *r = cJSON_GetObjectItem(ans, "reward");
	if (step && cJSON_IsNumber(r))
		cJSON_AddNumberToObject(b, "reward", r->valuedouble);
	else
		cJSON_AddNullToObject(b, "reward");
	cJSON_AddBoolToObject(b, "done",
			      cJSON_IsTrue(cJSON_GetObjectItem(ans, "done")));
	return b;
}

static bool in_list(const char *key, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(key, *list))
			return true;
	return false;
}

/* loc extended by key, in buf. */
static const char *at(char *buf, size_t n, const char *loc, const char *key)
{
	snprintf(buf, n, "%s%s%s", loc, *loc ? "." : "", key);
	return buf;
}

/* The parameters of a reset: ResetRequest's (types.py:94-107: seed and
 * episode_id, accepted and not used: kforge draws its trials' seeds and
 * names its episodes) and those of POST /v1/episodes. */
static const char *const reset_keys[] = {
    "seed", "episode_id", "problem_id", "max_turns", "reward",
    "alpha", "stop_on_correct", NULL};

/*
 * A new episode on kwargs' problem (the server's default when it names
 * none), replacing the session's open one once it is made; its initial
 * observation, or NULL with *f set. loc: where kwargs are in the request.
 */
static cJSON *oe_reset(struct srv_openenv *o, const cJSON *kwargs,
		       const char *loc, struct oe_fail *f)
{
	char b[128];
	if (kwargs && !cJSON_IsNull(kwargs) && !cJSON_IsObject(kwargs)) {
		invalid(f, "dict_type", loc,
			"%s: the reset's parameters must be a JSON object",
			*loc ? loc : "the body");
		return NULL;
	}
	const cJSON *v;
	cJSON_ArrayForEach(v, kwargs)
	{
		if (!in_list(v->string, reset_keys)) {
			invalid(f, "extra_forbidden",
				at(b, sizeof(b), loc, v->string),
				"%s is not a parameter of kforge's reset: "
				"give problem_id, and optionally max_turns, "
				"reward, alpha, stop_on_correct (seed and "
				"episode_id are accepted and not used)",
				v->string);
			return NULL;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(kwargs, "seed");
	if (v && !cJSON_IsNull(v) &&
	    (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	     v->valuedouble < 0)) {
		invalid(f, "int_type", at(b, sizeof(b), loc, "seed"),
			"seed must be an integer >= 0 or null");
		return NULL;
	}
	v = cJSON_GetObjectItemCaseSensitive(kwargs, "episode_id");
	if (v && !cJSON_IsNull(v) &&
	    (!cJSON_IsString(v) || strlen(v->valuestring) > 255)) {
		invalid(f, "string_type", at(b, sizeof(b), loc, "episode_id"),
			"episode_id must be a string of at most 255 "
			"characters or null");
		return NULL;
	}
	v = cJSON_GetObjectItemCaseSensitive(kwargs, "problem_id");
	const char *pid = o->s->o.openenv_problem;
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v)) {
			invalid(f, "string_type",
				at(b, sizeof(b), loc, "problem_id"),
				"problem_id must be a string: a task's path "
				"under the server's tasks directory");
			return NULL;
		}
		pid = v->valuestring;
	}
	if (!pid) {
		invalid(f, "missing", at(b, sizeof(b), loc, "problem_id"),
			"problem_id is missing and this server has no "
			"default problem (kforge serve --openenv-problem)");
		return NULL;
	}
	cJSON *body = cJSON_CreateObject();
	cJSON_ArrayForEach(v, kwargs)
	{
		if (strcmp(v->string, "seed") &&
		    strcmp(v->string, "episode_id") &&
		    strcmp(v->string, "problem_id"))
			cJSON_AddItemToObject(body, v->string,
					      cJSON_Duplicate(v, 1));
	}
	cJSON_AddStringToObject(body, "problem_id", pid);
	cJSON *ans = NULL;
	int rc = call(o->s, "POST", "/v1/episodes", body, NULL, loc, &ans, f);
	cJSON_Delete(body);
	if (rc)
		return NULL;
	oe_end(o);
	o->episode = kf_xstrdup(kf_json_str(ans, "episode_id"));
	o->problem = kf_xstrdup(pid);
	const char *s;
	o->description = (s = kf_json_str(ans, "observation")) ? kf_xstrdup(s)
							       : NULL;
	o->reference = (s = kf_json_str(ans, "reference")) ? kf_xstrdup(s)
							   : NULL;
	o->system = (s = kf_json_str(ans, "system")) ? kf_xstrdup(s) : NULL;
	cJSON *out = envelope(o, ans, false);
	cJSON_Delete(ans);
	return out;
}

/* KforgeAction's fields; Action forbids others (types.py:61-69). */
static const char *const action_keys[] = {"completion", "code", "problem_id",
					  "metadata", NULL};

/* Checks an action against KforgeAction: 0, or -1 with *f set. */
static int check_action(const cJSON *action, const char *loc,
			struct oe_fail *f)
{
	char b[128];
	if (!action || cJSON_IsNull(action)) {
		invalid(f, "missing", loc,
			"%s is missing: give {\"completion\": TEXT} or "
			"{\"code\": SOURCE}",
			loc);
		return -1;
	}
	if (!cJSON_IsObject(action)) {
		invalid(f, "dict_type", loc,
			"%s must be an object: {\"completion\": TEXT} or "
			"{\"code\": SOURCE}",
			loc);
		return -1;
	}
	const cJSON *v;
	cJSON_ArrayForEach(v, action)
	{
		if (!in_list(v->string, action_keys)) {
			invalid(f, "extra_forbidden",
				at(b, sizeof(b), loc, v->string),
				"%s is not a field of kforge's action (give "
				"completion or code, and optionally "
				"problem_id, metadata)",
				v->string);
			return -1;
		}
		bool ok = cJSON_IsNull(v) ||
			  (!strcmp(v->string, "metadata")
			       ? cJSON_IsObject(v)
			       : cJSON_IsString(v));
		if (!ok) {
			invalid(f,
				!strcmp(v->string, "metadata") ? "dict_type"
							       : "string_type",
				at(b, sizeof(b), loc, v->string),
				"%s must be %s", v->string,
				!strcmp(v->string, "metadata") ? "an object"
							       : "a string");
			return -1;
		}
	}
	const char *completion = kf_json_str(action, "completion");
	const char *code = kf_json_str(action, "code");
	if (!completion && !code) {
		invalid(f, "missing", at(b, sizeof(b), loc, "completion"),
			"the action has neither completion (a model's raw "
			"reply) nor code (the kernel's source): give one");
		return -1;
	}
	if (completion && code) {
		invalid(f, "value_error", loc,
			"the action gives both completion and code: give one");
		return -1;
	}
	return 0;
}

/* Scores action as the next step of the session's episode; OpenEnv's
 * answer, or NULL with *f set. timeout_s > 0: the step's deadline. */
static cJSON *oe_step(struct srv_openenv *o, const cJSON *action,
		      double timeout_s, const char *loc, struct oe_fail *f)
{
	char b[128];
	if (check_action(action, loc, f))
		return NULL;
	if (!o->episode) {
		failf(f, 409, "EXECUTION_ERROR", "no_episode", loc,
		      "no episode in this session: send a reset first");
		return NULL;
	}
	const char *pid = kf_json_str(action, "problem_id");
	if (pid && strcmp(pid, o->problem)) {
		invalid(f, "value_error", at(b, sizeof(b), loc, "problem_id"),
			"the action names problem %s but the episode is on "
			"%s: reset for another problem",
			pid, o->problem);
		return NULL;
	}
	const char *completion = kf_json_str(action, "completion");
	cJSON *body = cJSON_CreateObject();
	if (completion)
		cJSON_AddStringToObject(body, "completion", completion);
	else
		cJSON_AddStringToObject(body, "code",
					kf_json_str(action, "code"));
	if (timeout_s > 0)
		cJSON_AddNumberToObject(body, "deadline_s", timeout_s);
	char *path = kf_xasprintf("/v1/episodes/%s/step", o->episode);
	cJSON *ans = NULL;
	/* A text that held \u0000 fails as the step's own (nul_in_completion,
	 * the turn counted), as on the episode's route. */
	const char *text_key = completion ? "completion" : "code";
	bool nul = srv_request_nul_in(!strcmp(loc, "data") ? "data" : "action",
				      text_key);
	int rc = call(o->s, "POST", path, body, nul ? text_key : NULL, loc,
		      &ans, f);
	free(path);
	cJSON_Delete(body);
	if (rc)
		return NULL;
	cJSON *out = envelope(o, ans, true);
	cJSON_Delete(ans);
	return out;
}

/* The session's state (KforgeState); a fresh environment's before a reset
 * ({"episode_id": null, "step_count": 0}: State, types.py:178-197). */
static cJSON *oe_state(struct srv_openenv *o, struct oe_fail *f)
{
	cJSON *st = cJSON_CreateObject();
	if (!o->episode) {
		cJSON_AddNullToObject(st, "episode_id");
		cJSON_AddNumberToObject(st, "step_count", 0);
		cJSON_AddNullToObject(st, "problem_id");
		cJSON_AddNumberToObject(st, "turn", 0);
		cJSON_AddNumberToObject(st, "max_turns", o->s->o.max_turns);
		cJSON_AddNumberToObject(st, "best_speedup", 0);
		cJSON_AddFalseToObject(st, "solved");
		cJSON_AddFalseToObject(st, "done");
		cJSON_AddArrayToObject(st, "rewards");
		cJSON_AddNullToObject(st, "trajectory_reward");
		return st;
	}
	char *path = kf_xasprintf("/v1/episodes/%s", o->episode);
	cJSON *ans = NULL;
	int rc = call(o->s, "GET", path, NULL, NULL, "", &ans, f);
	free(path);
	if (rc) {
		cJSON_Delete(st);
		return NULL;
	}
	add_copy(st, "episode_id", ans, "episode_id");
	add_copy(st, "step_count", ans, "turn");
	add_copy(st, "problem_id", ans, "problem_id");
	add_copy(st, "turn", ans, "turn");
	add_copy(st, "max_turns", ans, "max_turns");
	cJSON_AddNumberToObject(st, "best_speedup", o->best_speedup);
	cJSON_AddBoolToObject(st, "solved", o->solved);
	add_copy(st, "done", ans, "done");
	add_copy(st, "rewards", ans, "rewards");
	add_copy(st, "trajectory_reward", ans, "trajectory_reward");
	cJSON_Delete(ans);
	return st;
}

/* ---- the WebSocket session's messages ---- */

/* {"type": type, "data": data} (WSObservationResponse, WSStateResponse,
 * WSErrorResponse: types.py:288-314); takes data. */
static char *ws_answer(const char *type, cJSON *data)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "type", type);
	cJSON_AddItemToObject(m, "data", data);
	char *text = kf_json_print(m);
	cJSON_Delete(m);
	return text;
}

/* {"type": "error", "data": {"message", "code", "errors"}}
 * (http_server.py:1341-1347, 1453-1478). */
static char *ws_error(struct oe_fail *f)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "message", f->message);
	cJSON_AddStringToObject(d, "code", f->code);
	if (f->errors)
		cJSON_AddItemToObject(d, "errors", f->errors);
	f->errors = NULL;
	if (f->retry_after > 0)
		cJSON_AddNumberToObject(d, "retry_after_s", f->retry_after);
	return ws_answer("error", d);
}

/* The members a message of this type may have besides "type"
 * (WSResetMessage etc.: types.py:248-276, extra forbidden). */
static int check_message(const cJSON *m, bool data_ok, struct oe_fail *f)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, m)
	{
		if (strcmp(v->string, "type") &&
		    (!data_ok || strcmp(v->string, "data"))) {
			invalid(f, "extra_forbidden", v->string,
				"Invalid message: %s is not a member of a %s "
				"message (%s)",
				v->string, kf_json_str(m, "type"),
				data_ok ? "type and data" : "type only");
			return -1;
		}
	}
	return 0;
}

char *srv_openenv_message(struct srv_openenv *o, const char *text,
			  size_t len, bool *close)
{
	/* A lone surrogate escape is read as U+FFFD (server.c). */
	char *fixed = kf_json_fix_lone_surrogates(text, len);
	if (fixed) {
		char *answer = srv_openenv_message(o, fixed, len, close);
		free(fixed);
		return answer;
	}
	struct oe_fail f;
	memset(&f, 0, sizeof(f));
	*close = false;
	const char *end = NULL;
	/* A raw NUL byte would end a string early, unseen (server.c). */
	const char *raw = memchr(text, 0, len);
	if (raw) {
		failf(&f, 400, "INVALID_JSON", "json_invalid", "",
		      "Invalid JSON: a raw NUL byte at byte %zu (JSON writes "
		      "one in a string as \\u0000)",
		      (size_t)(raw - text));
		return ws_error(&f);
	}
	cJSON *m = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	char *answer = NULL;
	if (!m) {
		size_t byte = end ? (size_t)(end - text) : 0;
		failf(&f, 400, "INVALID_JSON", "json_invalid", "",
		      "Invalid JSON: the message is not JSON (near byte %zu)",
		      byte > len ? len : byte);
		return ws_error(&f);
	}
	/* A step's completion or code may hold \u0000 (it fails as that
	 * step's, srv_nuls_begin); any other string may not. */
	long nul = kf_json_nul_escape(text, len);
	void *outer_nuls = srv_nuls_enter();
	if (nul >= 0 && !srv_nuls_begin("/ws", text, len, &nul)) {
		srv_nuls_leave(outer_nuls);
		cJSON_Delete(m);
		invalid(&f, "string_nul", "",
			"Invalid message: \\u0000 (a NUL character) in a "
			"string at byte %ld, not a step's completion or code: "
			"kforge's strings end at a NUL, so what follows it "
			"would be lost",
			nul);
		return ws_error(&f);
	}
	if (!cJSON_IsObject(m)) {
		invalid(&f, "dict_type", "",
			"Invalid message: a message is a JSON object "
			"{\"type\": ..., \"data\": ...}");
		answer = ws_error(&f);
		goto out;
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "type");
	const char *type = cJSON_IsString(t) ? t->valuestring : "";
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(m, "data");
	cJSON *res = NULL;
	if (!strcmp(type, "reset")) {
		if (!check_message(m, true, &f) &&
		    (res = oe_reset(o, data, "data", &f)))
			answer = ws_answer("observation", res);
	} else if (!strcmp(type, "step")) {
		if (!check_message(m, true, &f) &&
		    (res = oe_step(o, data, 0, "data", &f)))
			answer = ws_answer("observation", res);
	} else if (!strcmp(type, "state")) {
		if (!check_message(m, false, &f) && (res = oe_state(o, &f)))
			answer = ws_answer("state", res);
	} else if (!strcmp(type, "close")) {
		if (!check_message(m, false, &f)) {
			*close = true;
			goto out;
		}
	} else {
		char *shown = t ? cJSON_PrintUnformatted(t) : NULL;
		failf(&f, 400, "UNKNOWN_TYPE", "unknown_type", "type",
		      "Unknown message type: %.100s (kforge speaks reset, "
		      "step, state and close)",
		      cJSON_IsString(t) ? type : shown ? shown : "(none)");
		free(shown);
	}
	if (!answer && !*close)
		answer = ws_error(&f);
out:
	srv_nuls_leave(outer_nuls);
	cJSON_Delete(f.errors);
	cJSON_Delete(m);
	return answer;
}

/* ---- the HTTP routes ---- */

static void http_fail(struct kf_server_response *out, struct oe_fail *f)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddItemToObject(b, "detail", f->errors);
	f->errors = NULL;
	srv_respond(out, f->status, b);
	out->retry_after = f->retry_after;
}

/* Starlette's answer to a method a route does not take. */
static void http_method(struct kf_server_response *out)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "detail", "Method Not Allowed");
	srv_respond(out, 405, b);
}

/* POST /reset, stateless as upstream's: a fresh environment per request,
 * closed after it (http_server.py:604-629): the episode is made for its
 * initial observation and ended. */
static void route_reset(struct kf_server *s, const cJSON *body,
			struct kf_server_response *out)
{
	struct oe_fail f;
	memset(&f, 0, sizeof(f));
	struct srv_openenv *o = srv_openenv_open(s);
	cJSON *res = oe_reset(o, body, "body", &f);
	srv_openenv_close(o);
	if (res)
		srv_respond(out, 200, res);
	else
		http_fail(out, &f);
}

/* POST /step, stateless as upstream's (http_server.py:632-667): the
 * action is scored as the one turn of an episode on its problem_id (the
 * server's --openenv-problem when it names none), ended after it. */
static void route_step(struct kf_server *s, const cJSON *body,
		       struct kf_server_response *out)
{
	struct oe_fail f;
	memset(&f, 0, sizeof(f));
	cJSON *res = NULL;
	const cJSON *action = cJSON_GetObjectItemCaseSensitive(body, "action");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout_s");
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(body, "request_id");
	double timeout_s = 0;
	struct srv_openenv *o = NULL;
	/* StepRequest (types.py:126-152): timeout_s > 0, request_id of at
	 * most 255 characters; other members are allowed and unused. */
	if (t && !cJSON_IsNull(t)) {
		if (!cJSON_IsNumber(t) || !(t->valuedouble > 0)) {
			invalid(&f, "greater_than", "body.timeout_s",
				"timeout_s must be a number of seconds above "
				"0 or null");
			goto out;
		}
		timeout_s = t->valuedouble;
	}
	if (rid && !cJSON_IsNull(rid) &&
	    (!cJSON_IsString(rid) || strlen(rid->valuestring) > 255)) {
		invalid(&f, "string_type", "body.request_id",
			"request_id must be a string of at most 255 "
			"characters or null");
		goto out;
	}
	if (check_action(action, "body.action", &f))
		goto out;
	const char *pid = kf_json_str(action, "problem_id");
	if (!pid && !s->o.openenv_problem) {
		invalid(&f, "missing", "body.action.problem_id",
			"problem_id is missing from the action and this "
			"server has no default problem (kforge serve "
			"--openenv-problem)");
		goto out;
	}
	o = srv_openenv_open(s);
	cJSON *kw = cJSON_CreateObject();
	cJSON_AddStringToObject(kw, "problem_id",
				pid ? pid : s->o.openenv_problem);
	cJSON_AddNumberToObject(kw, "max_turns", 1);
	cJSON *first = oe_reset(o, kw, "body.action", &f);
	cJSON_Delete(kw);
	if (first) {
		cJSON_Delete(first);
		res = oe_step(o, action, timeout_s, "body.action", &f);
	}
out:
	srv_openenv_close(o);
	if (res)
		srv_respond(out, 200, res);
	else
		http_fail(out, &f);
}

/* GET /metadata: EnvironmentMetadata (types.py:208-222). */
static cJSON *metadata_json(void)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "name", "kforge");
	cJSON_AddStringToObject(
	    b, "description",
	    "Write a faster kernel: each step's kernel is compiled, checked "
	    "against the task's reference on fresh random inputs (hidden "
	    "shapes among them) in a sandbox, and timed; the reward is "
	    "kforge's design over the verdict and speedup, the next "
	    "observation its feedback.");
	cJSON_AddNullToObject(b, "readme_content");
	cJSON_AddStringToObject(b, "version", KF_VERSION);
	cJSON_AddStringToObject(b, "author", "kforge");
	cJSON_AddNullToObject(b, "documentation_url");
	return b;
}

/* GET /openapi.json: what OpenEnv's runtime validator reads
 * (openenv/cli/_validation.py:128-191, 383-400): info.version as upstream's
 * app declares it (http_server.py:1604-1606), and the paths of this mode. */
static cJSON *openapi_json(void)
{
	static const char *const paths[][2] = {
	    {"/reset", "post"},	  {"/step", "post"},   {"/state", "get"},
	    {"/schema", "get"},	  {"/metadata", "get"}, {"/health", "get"},
	    {"/mcp", "post"},
	};
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "openapi", "3.1.0");
	cJSON *info = cJSON_AddObjectToObject(b, "info");
	cJSON_AddStringToObject(info, "title", "OpenEnv Environment HTTP API");
	cJSON_AddStringToObject(info, "version", "1.0.0");
	cJSON_AddStringToObject(info, "description",
				"kforge serve (docs/rl.md, \"OpenEnv\"); "
				"sessions on the WebSocket /ws");
	cJSON *p = cJSON_AddObjectToObject(b, "paths");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, paths[i][0]),
					paths[i][1]);
	return b;
}

/* POST /mcp: a JSON-RPC 2.0 answer (mcp_types.py:41-43, 164-175); kforge
 * has no MCP tools, so every method is not found. */
static cJSON *mcp_json(const cJSON *body)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(body, "id");
	const char *m = kf_json_str(body, "method");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "jsonrpc", "2.0");
	cJSON *e = cJSON_AddObjectToObject(b, "error");
	cJSON_AddNumberToObject(e, "code", m ? -32601 : -32600);
	char msg[300];
	snprintf(msg, sizeof(msg),
		 m ? "Method not found: %.200s (kforge has no MCP tools: use "
		     "/reset and /step, or /ws)"
		   : "Invalid Request%.0s: a JSON-RPC request has a method",
		 m ? m : "");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddItemToObject(b, "id",
			      (cJSON_IsString(id) || cJSON_IsNumber(id))
				  ? cJSON_Duplicate(id, 1)
				  : cJSON_CreateNull());
	return b;
}

bool srv_openenv_route(struct kf_server *s, const char *method,
		       const char *path, const cJSON *body,
		       struct kf_server_response *out)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	if (!strcmp(path, "/reset")) {
		if (post)
			route_reset(s, body, out);
		else
			http_method(out);
	} else if (!strcmp(path, "/step")) {
		if (post)
			route_step(s, body, out);
		else
			http_method(out);
	} else if (!strcmp(path, "/state")) {
		if (get) {
			/* A fresh environment's (http_server.py:1159-1164):
			 * sessions live on /ws only. */
			struct oe_fail f;
			memset(&f, 0, sizeof(f));
			struct srv_openenv *o = srv_openenv_open(s);
			srv_respond(out, 200, oe_state(o, &f));
			srv_openenv_close(o);
		} else {
			http_method(out);
		}
	} else if (!strcmp(path, "/schema")) {
		if (get)
			srv_respond(out, 200, cJSON_Parse(schema_text));
		else
			http_method(out);
	} else if (!strcmp(path, "/metadata")) {
		if (get)
			srv_respond(out, 200, metadata_json());
		else
			http_method(out);
	} else if (!strcmp(path, "/health")) {
		/* HealthResponse (types.py:239-245, http_server.py:1190) */
		if (get) {
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "status", "healthy");
			srv_respond(out, 200, b);
		} else {
			http_method(out);
		}
	} else if (!strcmp(path, "/openapi.json")) {
		if (get)
			srv_respond(out, 200, openapi_json());
		else
			http_method(out);
	} else if (!strcmp(path, "/mcp")) {
		if (post)
			srv_respond(out, 200, mcp_json(body));
		else
			http_method(out);
	} else if (!strcmp(path, "/ws")) {
		/* The HTTP layer upgrades a WebSocket handshake before it
		 * gets here. */
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(
		    b, "detail",
		    "/ws is OpenEnv's WebSocket endpoint: send a WebSocket "
		    "handshake (GET with Upgrade: websocket, Connection: "
		    "Upgrade, Sec-WebSocket-Version: 13, Sec-WebSocket-Key)");
		srv_respond(out, 426, b);
	} else {
		return false;
	}
	return true;
}
