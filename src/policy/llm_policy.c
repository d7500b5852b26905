/*
 * llm_policy.c: the LLM policy, CUDA-L1's contrastive loop: prompts show
 * earlier candidates across score buckets with speedups and feedback; replies
 * that declare KF_PARAM are tuned; every call is recorded in the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/llm.h>
#include <kforge/prompt.h>

#include "policy_int.h"

#define LLM_CALLS_PER_EVAL 4 /* calls allowed per evaluation of budget */
#define LLM_EMPTY_MAX 3	     /* replies in a row without code */
#define LLM_TUNERS_MAX 256

struct example {
	int64_t candidate;
	char *source;
	char *status;
	double speedup;
	char *feedback;
};

struct llm_policy {
	const struct kf_policy_env *env;
	struct kf_llm_config cfg;
	char *reference;
	const char *template_name;
	const char *templates_dir; /* may be NULL: the built-in ones */
	int k;			   /* examples per prompt */
	int tune_each;		   /* evaluations per tunable reply */
	int calls, calls_max;
	uint64_t rng;
	struct example *ex;
	int n_ex;
	int last; /* index of the latest observation, -1 when none */
	struct kf_tuner *tuners[LLM_TUNERS_MAX];
	int n_tuners;
	struct kf_proposal *ready; /* plain proposals not yet handed out */
	int n_ready;
};

static void llm_close(void *state)
{
	struct llm_policy *p = state;
	if (!p)
		return;
	kf_llm_config_release(&p->cfg);
	free(p->reference);
	for (int i = 0; i < p->n_ex; i++) {
		free(p->ex[i].source);
		free(p->ex[i].status);
		free(p->ex[i].feedback);
	}
	free(p->ex);
	for (int i = 0; i < p->n_tuners; i++)
		kf_tuner_free(p->tuners[i]);
	for (int i = 0; i < p->n_ready; i++)
		kf_policy_proposal_release(&p->ready[i]);
	free(p->ready);
	free(p);
}

/* Applies the options: the client's config file, then "llm" settings. */
static int configure(struct llm_policy *p, const cJSON *opts,
		     struct kf_err *err)
{
	int rc = kf_llm_config_init(&p->cfg, err);
	const char *file = kf_json_str(opts, "llm_config");
	if (!rc && file)
		rc = kf_llm_config_file(&p->cfg, file, err);
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
		rc = kf_llm_config_set(&p->cfg, v->string, text, err);
	}
	if (!rc && !p->cfg.model)
		rc = kf_err_set(err, KF_EINVAL,
				"llm: no model: give --model NAME or set "
				"KFORGE_LLM_MODEL (the server is %s)",
				p->cfg.base_url);
	return rc;
}

static int llm_open(const struct kf_policy_env *env, void **state,
		    struct kf_err *err)
{
	struct llm_policy *p = kf_xcalloc(1, sizeof(*p));
	const cJSON *opts = env->options;
	p->env = env;
	p->last = -1;
	p->rng = env->seed;
	p->k = (int)kf_json_num(opts, "examples", 4);
	p->tune_each = (int)kf_json_num(opts, "tune_each", 6);
	p->template_name = kf_json_str(opts, "template");
	if (!p->template_name)
		p->template_name = kf_prompt_default_template(env->task);
	p->templates_dir = kf_json_str(opts, "templates");
	p->calls_max = LLM_CALLS_PER_EVAL * env->budget;
	int rc = 0;
	if (p->k < 0 || p->k > 64)
		rc = kf_err_set(err, KF_EINVAL,
				"llm: examples %d is out of range (0 to 64)",
				p->k);
	else if (p->tune_each < 1 || p->tune_each > 10000)
		rc = kf_err_set(err, KF_EINVAL,
				"llm: tune_each %d is out of range (1 to "
				"10000)",
				p->tune_each);
	if (!rc)
		rc = configure(p, opts, err);
	char *ref_path = NULL;
	if (!rc) {
		ref_path = kf_task_reference(env->task, env->backend, err);
		rc = ref_path ? 0 : err->code ? err->code : KF_ENOENT;
	}
	if (!rc)
		rc = kf_file_read(ref_path, KF_PROMPT_SOURCE_CAP, &p->reference,
				  NULL, err);
	free(ref_path);
	if (rc) {
		llm_close(p);
		return rc;
	}
	*state = p;
	return 0;
}

static void note(struct llm_policy *p, const char *line)
{
	if (p->env->note)
		p->env->note(p->env->note_ctx, line);
	else
		kf_log(KF_LOG_WARN, "%s", line);
}

/* The prompt's messages as the JSON array the store keeps. */
static char *messages_json(const char *system, const char *user)
{
	cJSON *a = cJSON_CreateArray();
	if (system) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "system");
		cJSON_AddStringToObject(m, "content", system);
		cJSON_AddItemToArray(a, m);
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", user);
	cJSON_AddItemToArray(a, m);
	char *s = kf_json_print(a);
	cJSON_Delete(a);
	return s;
}

static void record_call(struct llm_policy *p, const struct kf_llm_reply *r,
			const char *error, int candidates)
{
	struct kf_store_llm_call c = {
	    .run = p->env->run,
	    .model = r->model ? r->model : p->cfg.model,
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
	if (p->env->store &&
	    kf_store_llm_call_add(p->env->store, &c, NULL, &err)) {
		char line[1200];
		snprintf(line, sizeof(line), "llm: call not recorded: %s",
			 err.msg);
		note(p, line);
	}
}

/* Takes one code block: a tuner when it declares KF_PARAM, else a ready
 * proposal. parents[0..np) are the examples shown, the best first. */
static void take_code(struct llm_policy *p, char *code, const char *prompt,
		      const int64_t *parents, int np)
{
	struct kf_params ps;
	struct kf_err err = KF_ERR_INIT;
	char origin[300];
	snprintf(origin, sizeof(origin), "llm:%s", p->cfg.model);
	if (kf_policy_params_parse(code, origin, &ps, &err)) {
		char line[1200];
		snprintf(line, sizeof(line), "%s: evaluated untuned", err.msg);
		note(p, line);
		ps.n = 0;
	}
	if (ps.n > 0 && p->n_tuners < LLM_TUNERS_MAX) {
		int starts = p->tune_each < 2 ? 1 : 2;
		p->tuners[p->n_tuners++] = kf_tuner_new(
		    code, &ps, starts, p->tune_each, kf_policy_rand(&p->rng),
		    origin, prompt, np ? parents[0] : 0);
		free(code);
		return;
	}
	p->ready =
	    kf_xrealloc(p->ready, sizeof(*p->ready) * (size_t)(p->n_ready + 1));
	struct kf_proposal *pr = &p->ready[p->n_ready++];
	memset(pr, 0, sizeof(*pr));
	pr->source = code;
	pr->origin = kf_xstrdup(origin);
	pr->prompt = kf_xstrdup(prompt);
	for (int i = 0; i < np && i < KF_POLICY_PARENTS_MAX; i++)
		pr->parents[pr->n_parents++] = parents[i];
}

/* One call to the model; its code blocks become tuners or proposals. */
static int ask(struct llm_policy *p, struct kf_err *err)
{
	struct kf_prompt_example *all =
	    kf_xcalloc((size_t)p->n_ex + 1, sizeof(*all));
	int *picked = kf_xcalloc((size_t)p->k + 1, sizeof(int));
	for (int i = 0; i < p->n_ex; i++) {
		all[i].source = p->ex[i].source;
		all[i].status = p->ex[i].status;
		all[i].speedup = p->ex[i].speedup;
		all[i].feedback = p->ex[i].feedback;
	}
	int np = kf_prompt_pick_examples(all, p->n_ex, p->k,
					 kf_policy_rand(&p->rng), picked);
	struct kf_prompt_example *shown =
	    kf_xcalloc((size_t)np + 1, sizeof(*shown));
	int64_t parents[KF_POLICY_PARENTS_MAX];
	int n_parents = 0;
	for (int i = 0; i < np; i++)
		shown[i] = all[picked[i]];
	/* Picked rise in score: the best, shown last, is the first parent. */
	for (int i = np - 1; i >= 0 && n_parents < KF_POLICY_PARENTS_MAX; i--)
		parents[n_parents++] = p->ex[picked[i]].candidate;
	struct kf_prompt_input in = {
	    .task = p->env->task,
	    .backend = p->env->backend,
	    .reference = p->reference,
	    .examples = shown,
	    .n_examples = np,
	    .feedback = p->last >= 0 ? p->ex[p->last].feedback : NULL,
	    .previous = p->last >= 0 ? p->ex[p->last].source : NULL,
	};
	char *system = NULL, *user = NULL, *prompt = NULL;
	struct kf_llm_reply reply = KF_LLM_REPLY_INIT;
	int rc = kf_prompt_render(p->templates_dir, p->template_name, &in,
				  &system, &user, err);
	if (rc)
		goto out;
	struct kf_llm_msg msgs[2];
	int nm = 0;
	if (system)
		msgs[nm++] = (struct kf_llm_msg){"system", system};
	msgs[nm++] = (struct kf_llm_msg){"user", user};
	prompt = messages_json(system, user);
	p->calls++;
	rc = kf_llm_chat(&p->cfg, msgs, nm, &reply, err);
	if (rc) {
		record_call(p, &reply, err->msg, 0);
		kf_err_prefix(err, "llm");
		goto out;
	}
	if (reply.continued ||
	    (p->cfg.max_tokens > 0 && reply.max_tokens < p->cfg.max_tokens)) {
		char line[300];
		snprintf(line, sizeof(line),
			 "llm: %d continuation request%s for replies cut at "
			 "the token limit; budget %d tokens (asked %d)",
			 reply.continued, reply.continued == 1 ? "" : "s",
			 reply.max_tokens, p->cfg.max_tokens);
		note(p, line);
	}
	int found = 0;
	for (int i = 0; i < reply.n; i++) {
		char *code = kf_prompt_extract_as(
		    reply.texts[i], KF_STORE_SOURCE_CAP,
		    p->env->task && p->env->task->kernelbench ? KF_CODE_MODELNEW
							      : KF_CODE_KERNEL);
		if (!code)
			continue;
		found++;
		take_code(p, code, prompt, parents, n_parents);
	}
	record_call(p, &reply, NULL, found);
	if (!found) {
		char line[300];
		snprintf(line, sizeof(line),
			 "llm: %d repl%s without a code block defining "
			 "kf_entry (finish reason '%s')",
			 reply.n, reply.n == 1 ? "y" : "ies",
			 reply.n ? reply.finish_reasons[0] : "");
		note(p, line);
	}
out:
	kf_llm_reply_release(&reply);
	free(system);
	free(user);
	free(prompt);
	free(shown);
	free(picked);
	free(all);
	return rc;
}

/* Hands out what is ready: tuner points first, then plain proposals. */
static void hand_out(struct llm_policy *p, int max, struct kf_proposal *out,
		     int *n)
{
	for (int i = 0; i < p->n_tuners && *n < max; i++) {
		int got = 0;
		kf_tuner_propose(p->tuners[i], max - *n, out + *n, &got);
		*n += got;
	}
	int take = p->n_ready < max - *n ? p->n_ready : max - *n;
	if (take <= 0)
		return;
	for (int i = 0; i < take; i++)
		out[(*n)++] = p->ready[i];
	memmove(p->ready, p->ready + take,
		sizeof(*p->ready) * (size_t)(p->n_ready - take));
	p->n_ready -= take;
}

static bool tuners_waiting(const struct llm_policy *p)
{
	for (int i = 0; i < p->n_tuners; i++)
		if (!kf_tuner_done(p->tuners[i]) &&
		    kf_tuner_pending(p->tuners[i]) > 0)
			return true;
	return false;
}

static int llm_propose(void *state, int max, struct kf_proposal *out, int *n,
		       struct kf_err *err)
{
	struct llm_policy *p = state;
	*n = 0;
	hand_out(p, max, out, n);
	/* A tuner waiting on results may have better points to give once
	 * they come: the model is asked when nothing is in the works. */
	if (*n > 0 || tuners_waiting(p))
		return 0;
	for (int empty = 0; empty < LLM_EMPTY_MAX; empty++) {
		if (p->calls >= p->calls_max)
			return kf_err_set(err, KF_ERANGE,
					  "llm: %d calls made, the most for a "
					  "budget of %d evaluations",
					  p->calls, p->env->budget);
		int rc = ask(p, err);
		if (rc)
			return rc;
		hand_out(p, max, out, n);
		if (*n > 0)
			return 0;
	}
	return kf_err_set(err, KF_EPROTO,
			  "llm: %d replies in a row held no code block "
			  "defining kf_entry",
			  LLM_EMPTY_MAX);
}

static void llm_observe(void *state, const struct kf_observation *obs)
{
	struct llm_policy *p = state;
	for (int i = 0; i < p->n_tuners; i++)
		if (kf_tuner_observe(p->tuners[i], obs))
			break;
	p->ex = kf_xrealloc(p->ex, sizeof(*p->ex) * (size_t)(p->n_ex + 1));
	struct example *e = &p->ex[p->n_ex];
	e->candidate = obs->candidate;
	e->source = kf_xstrdup(obs->source);
	e->status = kf_xstrdup(obs->status ? obs->status : "infra_error");
	e->speedup = obs->speedup;
	e->feedback = obs->result ? kf_prompt_feedback(obs->result) : NULL;
	p->last = p->n_ex++;
}

const struct kf_policy_ops kf_policy_llm_ops = {
    .version = KF_POLICY_OPS_VERSION,
    .name = "llm",
    .open = llm_open,
    .propose = llm_propose,
    .observe = llm_observe,
    .close = llm_close,
};
