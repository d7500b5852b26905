/*
 * ask.c: how the llm, mcts and islands policies talk to a model: the
 * client's settings and the template from the policy's options, the
 * candidates seen with their feedback, one call (examples picked across
 * score buckets, the candidate to improve with its feedback, the prompt
 * rendered, sent, recorded in the store) and the code taken back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

void kf_policy_note(const struct kf_policy_env *env, const char *line)
{
	if (env->note)
		env->note(env->note_ctx, line);
	else
		kf_log(KF_LOG_WARN, "%s", line);
}

int kf_seen_add(struct kf_seen_list *l, const struct kf_observation *obs)
{
	l->v = kf_xrealloc(l->v, sizeof(*l->v) * (size_t)(l->n + 1));
	struct kf_seen *e = &l->v[l->n];
	e->candidate = obs->candidate;
	e->source = kf_xstrdup(obs->source);
	e->status = kf_xstrdup(obs->status ? obs->status : "infra_error");
	e->speedup = obs->speedup;
	e->feedback = obs->result ? kf_prompt_feedback(obs->result) : NULL;
	return l->n++;
}

int kf_seen_find(const struct kf_seen_list *l, int64_t id)
{
	for (int i = l->n - 1; i >= 0; i--)
		if (l->v[i].candidate == id)
			return i;
	return -1;
}

void kf_seen_release(struct kf_seen_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->v[i].source);
		free(l->v[i].status);
		free(l->v[i].feedback);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Applies the options: the client's config file, then "llm" settings. */
static int configure(struct kf_asker *a, const cJSON *opts, struct kf_err *err)
{
	int rc = kf_llm_config_init(&a->cfg, err);
	const char *file = kf_json_str(opts, "llm_config");
	if (!rc && file)
		rc = kf_llm_config_file(&a->cfg, file, err);
	const cJSON *set = cJSON_GetObjectItem(opts, "llm");
	const cJSON *v;
	cJSON_ArrayForEach(v, set)
	{
		if (rc)
			break;
		char num[64];
		const char *text = v->valuestring;
		if (cJSON_IsNumber(v)) {
			snprintf(num, sizeof(num), "%.17g", v->valuedouble);
			text = num;
		} else if (!cJSON_IsString(v)) {
			rc = kf_err_set(err, KF_EINVAL,
					"llm: setting '%s' is neither a string "
					"nor a number",
					v->string);
			break;
		}
		rc = kf_llm_config_set(&a->cfg, v->string, text, err);
	}
	if (!rc && !a->cfg.model)
		rc = kf_err_set(err, KF_EINVAL,
				"llm: no model: give --model NAME or set "
				"KFORGE_LLM_MODEL (the server is %s)",
				a->cfg.base_url);
	return rc;
}

int kf_asker_open(struct kf_asker *a, const struct kf_policy_env *env,
		  struct kf_err *err)
{
	const cJSON *opts = env->options;
	memset(a, 0, sizeof(*a));
	a->env = env;
	a->k = (int)kf_json_num(opts, "examples", 4);
	a->template_name = kf_json_str(opts, "template");
	if (!a->template_name)
		a->template_name = kf_prompt_default_template(env->task);
	a->templates_dir = kf_json_str(opts, "templates");
	a->calls_max = KF_ASK_CALLS_PER_EVAL * env->budget;
	if (a->k < 0 || a->k > 64)
		return kf_err_set(err, KF_EINVAL,
				  "--examples: %d is out of range (0 to 64)",
				  a->k);
	int rc = configure(a, opts, err);
	char *ref_path = NULL;
	if (!rc) {
		ref_path = kf_task_reference(env->task, env->backend, err);
		rc = ref_path ? 0 : err->code ? err->code : KF_ENOENT;
	}
	if (!rc)
		rc = kf_file_read(ref_path, KF_PROMPT_SOURCE_CAP, &a->reference,
				  NULL, err);
	free(ref_path);
	return rc;
}

void kf_asker_release(struct kf_asker *a)
{
	if (!a)
		return;
	kf_llm_config_release(&a->cfg);
	free(a->reference);
	a->reference = NULL;
}

/* The prompt's messages as the JSON array the store keeps. */
static char *messages_json(const char *system, const char *user)
{
	cJSON *arr = cJSON_CreateArray();
	if (system) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "system");
		cJSON_AddStringToObject(m, "content", system);
		cJSON_AddItemToArray(arr, m);
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", user);
	cJSON_AddItemToArray(arr, m);
	char *s = kf_json_print(arr);
	cJSON_Delete(arr);
	return s;
}

static void record_call(struct kf_asker *a, const struct kf_llm_reply *r,
			const char *error, int candidates)
{
	struct kf_store_llm_call c = {
	    .run = a->env->run,
	    .model = r->model ? r->model : a->cfg.model,
	    .prompt_tokens = r->prompt_tokens,
	    .completion_tokens = r->completion_tokens,
	    .latency_ms = r->latency_ms,
	    .attempts = r->attempts,
	    .http_status = r->http_status,
	    .status = error ? "error" : "ok",
	    .error = error,
	    .completions = r->n,
	    .candidates = candidates,
	};
	struct kf_err err = KF_ERR_INIT;
	if (a->env->store &&
	    kf_store_llm_call_add(a->env->store, &c, NULL, &err)) {
		char line[1200];
		snprintf(line, sizeof(line), "llm: call not recorded: %s",
			 err.msg);
		kf_policy_note(a->env, line);
	}
}

/* Picks the examples of q: their indices into q->seen, rising in score. */
static int pick(const struct kf_asker *a, const struct kf_ask *q, int *picked)
{
	const struct kf_seen_list *seen = q->seen;
	int n = q->pool ? q->n_pool : seen->n;
	struct kf_prompt_example *all = kf_xcalloc((size_t)n + 1, sizeof(*all));
	for (int i = 0; i < n; i++) {
		const struct kf_seen *s = &seen->v[q->pool ? q->pool[i] : i];
		all[i].source = s->source;
		all[i].status = s->status;
		all[i].speedup = s->speedup;
		all[i].feedback = s->feedback;
	}
	int np = kf_prompt_pick_examples(all, n, a->k, q->seed, picked);
	for (int i = 0; q->pool && i < np; i++)
		picked[i] = q->pool[picked[i]];
	free(all);
	return np;
}

int kf_asker_ask(struct kf_asker *a, const struct kf_ask *q,
		 struct kf_ask_reply *r, struct kf_err *err)
{
	memset(r, 0, sizeof(*r));
	if (a->calls >= a->calls_max)
		return kf_err_set(err, KF_ERANGE,
				  "llm: %d calls made, the most for a budget "
				  "of %d evaluations",
				  a->calls, a->env->budget);
	const struct kf_seen_list *seen = q->seen;
	int *picked = kf_xcalloc((size_t)a->k + 1, sizeof(int));
	int np = pick(a, q, picked);
	struct kf_prompt_example *shown =
	    kf_xcalloc((size_t)np + 1, sizeof(*shown));
	for (int i = 0; i < np; i++) {
		const struct kf_seen *s = &seen->v[picked[i]];
		shown[i] = (struct kf_prompt_example){s->source, s->status,
						      s->speedup, s->feedback};
	}
	/* Picked rise in score: the best, shown last, comes first. */
	for (int i = np - 1; i >= 0 && r->n_shown < KF_POLICY_PARENTS_MAX; i--)
		r->shown[r->n_shown++] = seen->v[picked[i]].candidate;
	const struct kf_seen *focus = q->focus >= 0 ? &seen->v[q->focus] : NULL;
	struct kf_prompt_input in = {
	    .task = a->env->task,
	    .backend = a->env->backend,
	    .reference = a->reference,
	    .examples = shown,
	    .n_examples = np,
	    .feedback = focus ? focus->feedback : NULL,
	    .previous = focus ? focus->source : NULL,
	};
	char *system = NULL, *user = NULL;
	struct kf_llm_reply reply = KF_LLM_REPLY_INIT;
	int rc = kf_prompt_render(a->templates_dir, a->template_name, &in,
				  &system, &user, err);
	if (rc)
		goto out;
	struct kf_llm_msg msgs[2];
	int nm = 0;
	if (system)
		msgs[nm++] = (struct kf_llm_msg){"system", system};
	msgs[nm++] = (struct kf_llm_msg){"user", user};
	r->prompt = messages_json(system, user);
	a->calls++;
	rc = kf_llm_chat(&a->cfg, msgs, nm, &reply, err);
	if (rc) {
		record_call(a, &reply, err->msg, 0);
		kf_err_prefix(err, "llm");
		goto out;
	}
	if (reply.continued ||
	    (a->cfg.max_tokens > 0 && reply.max_tokens < a->cfg.max_tokens)) {
		char line[300];
		snprintf(line, sizeof(line),
			 "llm: %d continuation request%s for replies cut at "
			 "the token limit; budget %d tokens (asked %d)",
			 reply.continued, reply.continued == 1 ? "" : "s",
			 reply.max_tokens, a->cfg.max_tokens);
		kf_policy_note(a->env, line);
	}
	r->codes = kf_xcalloc((size_t)reply.n + 1, sizeof(char *));
	enum kf_code_kind kind = a->env->task && a->env->task->kernelbench
				     ? KF_CODE_MODELNEW
				     : KF_CODE_KERNEL;
	for (int i = 0; i < reply.n; i++) {
		char *code = kf_prompt_extract_as(reply.texts[i],
						  KF_STORE_SOURCE_CAP, kind);
		if (code)
			r->codes[r->n_codes++] = code;
	}
	record_call(a, &reply, NULL, r->n_codes);
	if (!r->n_codes) {
		char line[300];
		snprintf(line, sizeof(line),
			 "llm: %d repl%s without a code block defining "
			 "kf_entry (finish reason '%s')",
			 reply.n, reply.n == 1 ? "y" : "ies",
			 reply.n ? reply.finish_reasons[0] : "");
		kf_policy_note(a->env, line);
	}
out:
	if (rc)
		kf_ask_reply_release(r);
	kf_llm_reply_release(&reply);
	free(system);
	free(user);
	free(shown);
	free(picked);
	return rc;
}

void kf_ask_reply_release(struct kf_ask_reply *r)
{
	for (int i = 0; i < r->n_codes; i++)
		free(r->codes[i]);
	free(r->codes);
	free(r->prompt);
	memset(r, 0, sizeof(*r));
}

void kf_asker_proposal(const struct kf_asker *a, struct kf_ask_reply *r, int i,
		       int64_t focus, bool shown, struct kf_proposal *out)
{
	memset(out, 0, sizeof(*out));
	out->source = r->codes[i];
	r->codes[i] = NULL;
	out->origin = kf_xasprintf("llm:%s", a->cfg.model);
	out->prompt = r->prompt ? kf_xstrdup(r->prompt) : NULL;
	if (focus)
		out->parents[out->n_parents++] = focus;
	for (int k = 0;
	     shown && k < r->n_shown && out->n_parents < KF_POLICY_PARENTS_MAX;
	     k++)
		if (r->shown[k] != focus)
			out->parents[out->n_parents++] = r->shown[k];
}

int kf_policy_option(const cJSON *opts, const char *key, const char *flag,
		     double def, double lo, double hi, double *out,
		     struct kf_err *err)
{
	const cJSON *v = cJSON_GetObjectItem(opts, key);
	*out = def;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return kf_err_set(err, KF_EINVAL, "%s: not a number", flag);
	if (v->valuedouble < lo || v->valuedouble > hi)
		return kf_err_set(err, KF_EINVAL,
				  "%s: %g is out of range (%g to %g)", flag,
				  v->valuedouble, lo, hi);
	*out = v->valuedouble;
	return 0;
}

uint64_t kf_policy_seed(uint64_t run_seed, int observed, int asks)
{
	uint64_t s = run_seed ^ (0xbf58476d1ce4e5b9ull * (uint64_t)observed) ^
		     (0x94d049bb133111ebull * (uint64_t)asks);
	return kf_policy_rand(&s);
}

void kf_policy_sha256(const char *text, char hex[65])
{
	struct kf_sha256 h;
	kf_sha256_init(&h);
	kf_sha256_update(&h, text, strlen(text));
	kf_sha256_final_hex(&h, hex);
}

bool kf_pending_has(const struct kf_pending_list *l, const char *sha)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].sha, sha))
			return true;
	return false;
}

void kf_pending_add(struct kf_pending_list *l, const char *sha, int slot)
{
	l->v = kf_xrealloc(l->v, sizeof(*l->v) * (size_t)(l->n + 1));
	snprintf(l->v[l->n].sha, sizeof(l->v[l->n].sha), "%s", sha);
	l->v[l->n++].slot = slot;
}

int kf_pending_take(struct kf_pending_list *l, const char *sha)
{
	for (int i = 0; sha && i < l->n; i++)
		if (!strcmp(l->v[i].sha, sha)) {
			int slot = l->v[i].slot;
			l->v[i] = l->v[--l->n];
			return slot;
		}
	return -1;
}

void kf_pending_release(struct kf_pending_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}
