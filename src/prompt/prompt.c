/*
 * prompt.c: renders prompt templates (files with {{placeholders}} and
 * {{#x}}...{{/x}} sections) from a task, its reference and earlier
 * candidates, and picks those candidates across score buckets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/prompt.h>

/* The values a template can name; NULL until computed. */
enum var {
	V_TASK_ID,
	V_TASK_NAME,
	V_DESCRIPTION,
	V_BACKEND,
	V_LANGUAGE,
	V_FENCE,
	V_TENSORS,
	V_DIMS,
	V_HIDDEN_DIMS,
	V_TOLERANCE,
	V_LIBRARIES,
	V_ABI,
	V_REFERENCE,
	V_EXAMPLES,
	V_N_EXAMPLES,
	V_FEEDBACK,
	V_PREVIOUS,
	V_COUNT
};

static const char *const var_names[V_COUNT] = {
    "task_id",	 "task_name", "description", "backend",	  "language",  "fence",
    "tensors",	 "dims",      "hidden_dims", "tolerance", "libraries", "abi",
    "reference", "examples",  "n_examples",  "feedback",  "previous",
};

struct render {
	const char *dir;     /* the user's directory, or NULL */
	const char *builtin; /* the built-in directory */
	const struct kf_prompt_input *in;
	char *vals[V_COUNT];
	const char *file; /* the template being rendered, for messages */
	struct kf_strbuf out;
};

static int valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

static int has_contrastive(const char *dir)
{
	char *p = kf_path_join(dir, "contrastive.user");
	int yes = kf_file_exists(p);
	free(p);
	return yes;
}

int kf_prompt_builtin_dir(char **out, struct kf_err *err)
{
	const char *env = getenv("KFORGE_PROMPTS");
	if (env && *env) {
		*out = kf_xstrdup(env);
		return 0;
	}
	const char *const rel[] = {"../prompts", "../../prompts"};
	for (size_t i = 0; i < 2; i++) {
		char *d = kf_path_join(kf_exe_dir(), rel[i]);
		if (has_contrastive(d)) {
			*out = d;
			return 0;
		}
		free(d);
	}
	if (has_contrastive("prompts")) {
		*out = kf_xstrdup("prompts");
		return 0;
	}
	return kf_err_set(err, KF_ENOENT,
			  "prompt templates (contrastive.user) not found "
			  "beside %s or in ./prompts: set KFORGE_PROMPTS",
			  kf_exe_dir());
}

/*
 * Reads <file> from the user's directory, else the built-in one. *path
 * gets where it was found (caller frees). KF_ENOENT names both places.
 */
static int read_template(struct render *r, const char *file, char **text,
			 char **path, struct kf_err *err)
{
	const char *dirs[2] = {r->dir, r->builtin};
	for (int i = 0; i < 2; i++) {
		if (!dirs[i])
			continue;
		char *p = kf_path_join(dirs[i], file);
		if (kf_file_exists(p)) {
			int rc = kf_file_read(p, KF_PROMPT_TEMPLATE_CAP, text,
					      NULL, err);
			if (rc) {
				free(p);
				return rc;
			}
			*path = p;
			return 0;
		}
		free(p);
	}
	if (r->dir)
		return kf_err_set(err, KF_ENOENT,
				  "prompt template %s is neither in %s nor in "
				  "%s",
				  file, r->dir, r->builtin);
	return kf_err_set(err, KF_ENOENT, "prompt template %s is not in %s",
			  file, r->builtin);
}

/* The language a candidate is written in, and its code fence: a
 * KernelBench-format task's candidate is a Python ModelNew (with its CUDA
 * inline), whatever the backend. */
static const char *language(const struct kf_prompt_input *in)
{
	if (in->task && in->task->kernelbench)
		return "PyTorch and CUDA C++";
	return strcmp(in->backend, "cuda") == 0 ? "CUDA C++" : "C";
}

static const char *fence(const struct kf_prompt_input *in)
{
	if (in->task && in->task->kernelbench)
		return "python";
	return strcmp(in->backend, "cuda") == 0 ? "cuda" : "c";
}

static void add_shape(struct kf_strbuf *sb, const struct kf_tensor_spec *ts)
{
	kf_strbuf_addstr(sb, "[");
	for (int d = 0; d < ts->ndim; d++)
		kf_strbuf_addf(sb, "%s%s", d ? ", " : "",
			       kf_expr_src(ts->shape[d]));
	kf_strbuf_addstr(sb, ts->ndim ? "]" : "] (a scalar)");
}

static char *tensors_text(const struct kf_task *t)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < t->n_inputs; i++) {
		const struct kf_tensor_spec *ts = &t->inputs[i];
		kf_strbuf_addf(&sb, "- input in[%d] `%s`: %s ", i, ts->name,
			       kf_dtype_name(ts->dtype));
		add_shape(&sb, ts);
		kf_strbuf_addstr(&sb, "; values drawn from ");
		for (int k = 0; k < ts->n_dists; k++) {
			/* As the results name them, at the timing dims. */
			char *l = kf_dist_label(t, &ts->dists[k], 0);
			kf_strbuf_addf(&sb, "%s%s", k ? ", " : "", l);
			free(l);
		}
		kf_strbuf_addstr(&sb, " distributions\n");
	}
	for (int i = 0; i < t->n_outputs; i++) {
		const struct kf_tensor_spec *ts = &t->outputs[i];
		kf_strbuf_addf(&sb, "- output out[%d] `%s`: %s ", i, ts->name,
			       kf_dtype_name(ts->dtype));
		add_shape(&sb, ts);
		kf_strbuf_addstr(&sb, i + 1 < t->n_outputs ? "\n" : "");
	}
	return kf_strbuf_detach(&sb);
}

/* The fixed hidden sets, then the ranges the drawn ones come from: the
 * drawn sets themselves are secret until an evaluation is over. */
static char *hidden_dims_text(const struct kf_task *t)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int k = 0;
	for (int s = 1; s < t->n_fixed_dimsets; s++) {
		if (s == t->cuda_dimset)
			continue;
		char *d = kf_task_dims_str(t, s);
		kf_strbuf_addf(&sb, "%s%s", k++ ? "; " : "", d);
		free(d);
	}
	if (t->hidden_ranges) {
		kf_strbuf_addf(&sb, "%ssizes drawn for each evaluation from",
			       k ? "; and " : "");
		for (int d = 0; d < t->n_dims; d++) {
			const struct kf_dim_range *r = &t->hidden_ranges[d];
			kf_strbuf_addf(&sb, "%s %s in [%lld, %lld]",
				       d ? "," : "", t->dim_names[d],
				       (long long)r->lo, (long long)r->hi);
			if (r->multiple_of > 1)
				kf_strbuf_addf(&sb, " (multiples of %lld)",
					       (long long)r->multiple_of);
		}
	}
	if (!sb.buf)
		return kf_xstrdup("");
	return kf_strbuf_detach(&sb);
}

static char *tolerance_text(const struct kf_task *t)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int seen[KF_DTYPE_COUNT] = {0};
	for (int i = 0; i < t->n_outputs; i++) {
		enum kf_dtype d = t->outputs[i].dtype;
		if (seen[d]++)
			continue;
		if (kf_dtype_is_float(d))
			kf_strbuf_addf(&sb,
				       "%s%s outputs within atol %g + rtol %g "
				       "x |reference|",
				       sb.len ? "; " : "", kf_dtype_name(d),
				       t->tol[d].atol, t->tol[d].rtol);
		else
			kf_strbuf_addf(&sb, "%s%s outputs exactly equal",
				       sb.len ? "; " : "", kf_dtype_name(d));
	}
	return kf_strbuf_detach(&sb);
}

static char *libraries_text(const struct kf_task *t, const char *backend)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb,
			 strcmp(backend, "cuda") == 0
			     ? "the C and C++ standard libraries, the CUDA "
			       "runtime and CUDA's math functions"
			     : "the C standard library and libm");
	for (int i = 0; i < t->n_libraries; i++)
		kf_strbuf_addf(&sb, ", lib%s", t->libraries[i]);
	if (strcmp(backend, "cuda") == 0)
		for (int i = 0; i < t->n_cuda_libraries; i++)
			kf_strbuf_addf(&sb, ", lib%s", t->cuda_libraries[i]);
	return kf_strbuf_detach(&sb);
}

/* A copy of s without its trailing newlines (a fence follows it). */
static char *trimmed(const char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	char *t = kf_xmalloc(n + 1);
	memcpy(t, s, n);
	t[n] = 0;
	return t;
}

/* Appends s, cut at cap bytes with a note. */
static void add_capped(struct kf_strbuf *sb, const char *s, size_t cap)
{
	size_t n = strlen(s);
	if (n <= cap) {
		kf_strbuf_addstr(sb, s);
		return;
	}
	kf_strbuf_add(sb, s, cap);
	kf_strbuf_addf(sb, "\n/* ... %zu more bytes left out */", n - cap);
}

static char *examples_text(const struct kf_prompt_input *in)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < in->n_examples; i++) {
		const struct kf_prompt_example *e = &in->examples[i];
		const char *st = e->status ? e->status : "unknown";
		kf_strbuf_addf(&sb, "%s### Candidate %d: ", i ? "\n\n" : "",
			       i + 1);
		if (strcmp(st, "ok") == 0 && e->speedup > 0)
			kf_strbuf_addf(&sb,
				       "correct, %.3gx %s than the "
				       "reference\n\n",
				       e->speedup >= 1 ? e->speedup
						       : 1.0 / e->speedup,
				       e->speedup >= 1 ? "faster" : "slower");
		else if (strcmp(st, "ok") == 0)
			kf_strbuf_addstr(&sb, "correct, not timed\n\n");
		else
			kf_strbuf_addf(&sb, "%s\n\n", st);
		kf_strbuf_addf(&sb, "```%s\n", fence(in));
		char *src = trimmed(e->source ? e->source : "");
		add_capped(&sb, src, KF_PROMPT_SOURCE_CAP);
		free(src);
		kf_strbuf_addstr(&sb, "\n```");
		if (e->feedback && *e->feedback) {
			kf_strbuf_addstr(&sb, "\n\nEvaluation:\n\n");
			add_capped(&sb, e->feedback, KF_PROMPT_FEEDBACK_CAP);
		}
	}
	return kf_strbuf_detach(&sb);
}

/* The value of variable v, computed on first use. */
static int value(struct render *r, enum var v, const char **out,
		 struct kf_err *err)
{
	const struct kf_prompt_input *in = r->in;
	const struct kf_task *t = in->task;
	if (r->vals[v]) {
		*out = r->vals[v];
		return 0;
	}
	switch (v) {
	case V_TASK_ID:
		r->vals[v] = kf_xstrdup(t->id);
		break;
	case V_TASK_NAME:
		r->vals[v] = kf_xstrdup(t->name);
		break;
	case V_DESCRIPTION:
		r->vals[v] = kf_xstrdup(t->description);
		break;
	case V_BACKEND:
		r->vals[v] = kf_xstrdup(in->backend);
		break;
	case V_LANGUAGE:
		r->vals[v] = kf_xstrdup(language(in));
		break;
	case V_FENCE:
		r->vals[v] = kf_xstrdup(fence(in));
		break;
	case V_TENSORS:
		r->vals[v] = tensors_text(t);
		break;
	case V_DIMS:
		r->vals[v] = kf_task_dims_str(t, 0);
		break;
	case V_HIDDEN_DIMS:
		r->vals[v] = hidden_dims_text(t);
		break;
	case V_TOLERANCE:
		r->vals[v] = tolerance_text(t);
		break;
	case V_LIBRARIES:
		r->vals[v] = libraries_text(t, in->backend);
		break;
	case V_ABI: {
		char *file = kf_xasprintf("abi.%s", in->backend);
		char *path = NULL, *text = NULL;
		int rc = read_template(r, file, &text, &path, err);
		free(file);
		free(path);
		if (rc)
			return rc;
		/* One trailing newline is the file's, not the text's. */
		size_t n = strlen(text);
		if (n && text[n - 1] == '\n')
			text[n - 1] = 0;
		r->vals[v] = text;
		break;
	}
	case V_REFERENCE:
		r->vals[v] = trimmed(in->reference ? in->reference : "");
		break;
	case V_EXAMPLES:
		r->vals[v] = examples_text(in);
		break;
	case V_N_EXAMPLES:
		r->vals[v] = in->n_examples > 0
				 ? kf_xasprintf("%d", in->n_examples)
				 : kf_xstrdup("");
		break;
	case V_FEEDBACK:
		r->vals[v] = trimmed(in->feedback ? in->feedback : "");
		break;
	case V_PREVIOUS:
		r->vals[v] = trimmed(in->previous ? in->previous : "");
		break;
	default:
		KF_ASSERT(0);
	}
	*out = r->vals[v];
	return 0;
}

static int lookup(const char *name, size_t n)
{
	for (int i = 0; i < V_COUNT; i++)
		if (strlen(var_names[i]) == n &&
		    strncmp(var_names[i], name, n) == 0)
			return i;
	return -1;
}

/* The line number of position p in text, for messages. */
static int line_of(const char *text, const char *p)
{
	int line = 1;
	for (const char *q = text; q < p; q++)
		line += *q == '\n';
	return line;
}

/*
 * Renders text[0..n) into r->out. whole is the whole template (for line
 * numbers). A section tag alone on its line takes its newline with it.
 */
static int expand(struct render *r, const char *whole, const char *text,
		  size_t n, struct kf_err *err)
{
	const char *p = text, *end = text + n;
	while (p < end) {
		const char *open = strstr(p, "{{");
		if (!open || open >= end) {
			kf_strbuf_add(&r->out, p, (size_t)(end - p));
			break;
		}
		kf_strbuf_add(&r->out, p, (size_t)(open - p));
		const char *close = strstr(open + 2, "}}");
		if (!close || close + 2 > end)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%d: \"{{\" without \"}}\"",
					  r->file, line_of(whole, open));
		const char *name = open + 2;
		char kind =
		    *name == '#' || *name == '^' || *name == '/' ? *name++ : 0;
		int v = lookup(name, (size_t)(close - name));
		if (v < 0)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%d: unknown placeholder "
					  "{{%.*s}}",
					  r->file, line_of(whole, open),
					  (int)(close - open - 2), open + 2);
		const char *val = NULL;
		int rc = value(r, (enum var)v, &val, err);
		if (rc)
			return rc;
		p = close + 2;
		if (!kind) {
			kf_strbuf_addstr(&r->out, val);
			goto check;
		}
		if (kind == '/')
			return kf_err_set(
			    err, KF_EINVAL, "%s:%d: {{/%s}} closes no section",
			    r->file, line_of(whole, open), var_names[v]);
		char tag[80];
		snprintf(tag, sizeof(tag), "{{/%s}}", var_names[v]);
		const char *stop = strstr(p, tag);
		if (!stop || stop >= end)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%d: {{%c%s}} without %s", r->file,
					  line_of(whole, open), kind,
					  var_names[v], tag);
		int standalone =
		    (open == whole || open[-1] == '\n') && *p == '\n';
		const char *body = p + standalone;
		const char *after = stop + strlen(tag);
		if (standalone && (stop == whole || stop[-1] == '\n') &&
		    *after == '\n')
			after++;
		if ((kind == '#') == (*val != 0)) {
			rc = expand(r, whole, body, (size_t)(stop - body), err);
			if (rc)
				return rc;
		}
		p = after;
	check:
		if (r->out.len > KF_PROMPT_OUTPUT_CAP)
			return kf_err_set(err, KF_ERANGE,
					  "%s: the rendered prompt is over "
					  "%zu bytes",
					  r->file, KF_PROMPT_OUTPUT_CAP);
	}
	return 0;
}

/* Renders one file; *out is NULL (and 0 returned) when optional and
 * missing. */
static int render_file(struct render *r, const char *name, const char *ext,
		       int optional, char **out, struct kf_err *err)
{
	char *file = kf_xasprintf("%s.%s", name, ext);
	char *text = NULL, *path = NULL;
	int rc = read_template(r, file, &text, &path, err);
	*out = NULL;
	if (rc == KF_ENOENT && optional) {
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	r->file = path;
	r->out.len = 0;
	if (r->out.buf)
		r->out.buf[0] = 0;
	rc = expand(r, text, text, strlen(text), err);
	if (rc)
		goto out;
	*out = kf_xstrdup(kf_strbuf_str(&r->out));
out:
	r->file = NULL;
	free(file);
	free(text);
	free(path);
	return rc;
}

int kf_prompt_render(const char *templates_dir, const char *name,
		     const struct kf_prompt_input *in, char **system,
		     char **user, struct kf_err *err)
{
	struct render r;
	int rc = 0;
	memset(&r, 0, sizeof(r));
	*system = *user = NULL;
	if (!valid_name(name))
		return kf_err_set(
		    err, KF_EINVAL,
		    "prompt template name \"%.64s\": use letters, "
		    "digits, '_' and '-'",
		    name ? name : "");
	if (!in || !in->task || !in->backend ||
	    (strcmp(in->backend, "host") && strcmp(in->backend, "cuda")))
		return kf_err_set(err, KF_EINVAL,
				  "prompt %s: no task, or a backend other than "
				  "host and cuda",
				  name);
	r.in = in;
	r.dir = templates_dir && *templates_dir ? templates_dir : NULL;
	char *builtin = NULL;
	rc = kf_prompt_builtin_dir(&builtin, err);
	if (rc)
		return rc;
	r.builtin = builtin;
	rc = render_file(&r, name, "system", 1, system, err);
	if (!rc)
		rc = render_file(&r, name, "user", 0, user, err);
	if (rc) {
		free(*system);
		*system = NULL;
	}
	for (int i = 0; i < V_COUNT; i++)
		free(r.vals[i]);
	kf_strbuf_release(&r.out);
	free(builtin);
	return rc;
}

int kf_prompt_first_turn(const struct kf_task *t, const char *backend,
			 char **system, char **user, char **reference,
			 struct kf_err *err)
{
	char *ref = NULL;
	*system = *user = NULL;
	if (reference)
		*reference = NULL;
	char *ref_path = kf_task_reference(t, backend, err);
	if (!ref_path)
		return err ? err->code : KF_EINVAL;
	int rc = kf_file_read(ref_path, KF_PROMPT_SOURCE_CAP, &ref, NULL, err);
	free(ref_path);
	if (rc)
		return rc;
	struct kf_prompt_input in = {
	    .task = t,
	    .backend = backend,
	    .reference = ref,
	};
	rc = kf_prompt_render(NULL, kf_prompt_default_template(t), &in, system,
			      user, err);
	if (reference)
		*reference = ref;
	else
		free(ref);
	return rc;
}

char *kf_prompt_code_block(const struct kf_task *t, const char *backend,
			   const char *code, size_t *code_at)
{
	struct kf_prompt_input in = {.task = t, .backend = backend};
	/* The longest run of backticks that opens a line of the code. */
	size_t longest = 0;
	for (const char *p = code; *p;) {
		const char *q = p;
		while (*q == ' ' || *q == '\t')
			q++;
		size_t n = 0;
		while (q[n] == '`')
			n++;
		if (n > longest)
			longest = n;
		const char *e = strchr(p, '\n');
		p = e ? e + 1 : p + strlen(p);
	}
	size_t ticks = longest < 3 ? 3 : longest + 1;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (size_t i = 0; i < ticks; i++)
		kf_strbuf_addstr(&sb, "`");
	kf_strbuf_addf(&sb, "%s\n", fence(&in));
	*code_at = sb.len;
	char *body = trimmed(code);
	kf_strbuf_addstr(&sb, body);
	free(body);
	kf_strbuf_addstr(&sb, "\n");
	for (size_t i = 0; i < ticks; i++)
		kf_strbuf_addstr(&sb, "`");
	return kf_strbuf_detach(&sb);
}

/* xorshift64*: a small generator, so that the pick is reproducible. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int is_ok(const struct kf_prompt_example *e)
{
	return e->status && strcmp(e->status, "ok") == 0;
}

/* The order of picked examples: failed first, then by rising speedup. */
static double score(const struct kf_prompt_example *e)
{
	return is_ok(e) ? e->speedup : -1.0;
}

int kf_prompt_pick_examples(const struct kf_prompt_example *all, int n, int k,
			    uint64_t seed, int *picked)
{
	enum { B_BEST, B_FASTER, B_SLOWER, B_FAILED, N_BUCKETS };
	int got = 0, best = -1;
	int *bucket = NULL;
	char *taken = NULL;
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	if (n <= 0 || k <= 0)
		return 0;
	bucket = kf_xmalloc((size_t)n * sizeof(int));
	taken = kf_xcalloc((size_t)n, 1);
	for (int i = 0; i < n; i++)
		if (is_ok(&all[i]) && all[i].source &&
		    (best < 0 || all[i].speedup > all[best].speedup))
			best = i;
	for (int i = 0; i < n; i++) {
		if (!all[i].source)
			bucket[i] = -1;
		else if (i == best)
			bucket[i] = B_BEST;
		else if (!is_ok(&all[i]))
			bucket[i] = B_FAILED;
		else
			bucket[i] = all[i].speedup >= 1 ? B_FASTER : B_SLOWER;
	}
	for (int progress = 1; got < k && progress;) {
		progress = 0;
		for (int b = 0; b < N_BUCKETS && got < k; b++) {
			/* Draw among this bucket's candidates still free and
			 * unlike every one taken. */
			int m = 0, choice = -1;
			for (int i = 0; i < n; i++) {
				if (bucket[i] != b || taken[i])
					continue;
				int dup = 0;
				for (int j = 0; j < got && !dup; j++)
					dup = strcmp(all[picked[j]].source,
						     all[i].source) == 0;
				if (dup) {
					taken[i] = 1;
					continue;
				}
				/* Reservoir sampling: each equally likely. */
				if (next_rand(&rng) % (uint64_t)++m == 0)
					choice = i;
			}
			if (choice < 0)
				continue;
			taken[choice] = 1;
			picked[got++] = choice;
			progress = 1;
		}
	}
	/* Insertion sort by score; stable, k is small. */
	for (int i = 1; i < got; i++) {
		int x = picked[i], j = i - 1;
		while (j >= 0 && score(&all[picked[j]]) > score(&all[x])) {
			picked[j + 1] = picked[j];
			j--;
		}
		picked[j + 1] = x;
	}
	free(bucket);
	free(taken);
	return got;
}
