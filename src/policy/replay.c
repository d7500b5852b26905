/*
 * replay.c: the policy that proposes recorded candidates: the source files of
 * a directory, one file, or the {"code"|"source"|"custom_code": ...} lines of
 * a JSONL file (bad lines reported as file:line and why). A line that names
 * its task ("task", or KernelBench's "level_id" and "task_id", as CUDA-L1's
 * released kernels do) is replayed only for that task. For re-evaluation,
 * released datasets and tests.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy_int.h"

#define REPLAY_FILE_CAP ((size_t)256 << 20) /* one JSONL file */
#define REPLAY_ITEMS_MAX 100000

struct item {
	char *origin; /* owned: the file, or file:line */
	char *source; /* owned; NULL until read (directory entries) */
};

struct replay {
	struct item *items;
	int n, next;
	const struct kf_policy_env *env;
};

static void note(const struct kf_policy_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(const struct kf_policy_env *env, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (env->note)
		env->note(env->note_ctx, line);
	else
		kf_log(KF_LOG_WARN, "%s", line);
}

static void push(struct replay *r, char *origin, char *source)
{
	r->items =
	    kf_xrealloc(r->items, sizeof(*r->items) * (size_t)(r->n + 1));
	r->items[r->n].origin = origin;
	r->items[r->n].source = source;
	r->n++;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->origin,
		      ((const struct item *)b)->origin);
}

/* Source files of a directory for the backend, sorted by name; read
 * lazily, when proposed. */
static int open_dir(struct replay *r, const char *dir, const char *ext,
		    struct kf_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return kf_err_set(err, KF_ENOENT,
				  "%s: cannot open the "
				  "directory",
				  dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !ends_with(e->d_name, ext))
			continue;
		if (r->n == REPLAY_ITEMS_MAX) {
			note(r->env,
			     "%s: more than %d files: the rest are "
			     "left out",
			     dir, REPLAY_ITEMS_MAX);
			break;
		}
		push(r, kf_path_join(dir, e->d_name), NULL);
	}
	closedir(d);
	if (r->n)
		qsort(r->items, (size_t)r->n, sizeof(*r->items), name_cmp);
	return 0;
}

/* The problem number of a KernelBench task: the digits its file name
 * starts with ("level1/19_ReLU" -> 19), or -1. */
static long kb_problem(const struct kf_task *t)
{
	const char *b = t && t->id ? strrchr(t->id, '/') : NULL;
	b = b ? b + 1 : (t && t->id ? t->id : "");
	if (*b < '0' || *b > '9')
		return -1;
	return strtol(b, NULL, 10);
}

/* Whether record o is for task t: 1 when it names t, 0 when it names
 * another task, -1 when it names none. "task" is t's id, its file's stem
 * or its file's name; "level_id" and "task_id" its KernelBench level and
 * problem number. */
static int record_task(const cJSON *o, const struct kf_task *t)
{
	const char *name = kf_json_str(o, "task");
	const cJSON *lv = cJSON_GetObjectItem(o, "level_id");
	const cJSON *ti = cJSON_GetObjectItem(o, "task_id");
	if (name)
		return t && t->id && kf_task_kb_named(t->id, name);
	if (cJSON_IsNumber(lv) && cJSON_IsNumber(ti))
		return t && t->kernelbench &&
		       t->level == (int)lv->valuedouble &&
		       kb_problem(t) == (long)ti->valuedouble;
	return -1;
}

/* Every usable line of a JSONL file for the task; the others are noted
 * (lines for other tasks are counted). */
static int open_jsonl(struct replay *r, const char *path, struct kf_err *err)
{
	char *text = NULL;
	size_t bytes = 0;
	int rc = kf_file_read(path, REPLAY_FILE_CAP, &text, &bytes, err);
	if (rc)
		return rc;
	int line = 0, others = 0;
	for (char *p = text; p < text + bytes;) {
		char *end = memchr(p, '\n', (size_t)(text + bytes - p));
		if (!end)
			end = text + bytes;
		*end = '\0';
		line++;
		char *s = p;
		p = end + 1;
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			continue;
		cJSON *o = cJSON_Parse(s);
		const char *code = kf_json_str(o, "code");
		if (!code)
			code = kf_json_str(o, "source");
		if (!code)
			code = kf_json_str(o, "custom_code");
		if (o && cJSON_IsObject(o) && record_task(o, r->env->task) == 0)
			others++;
		else if (!o)
			note(r->env, "%s:%d: not JSON: skipped", path, line);
		else if (!cJSON_IsObject(o))
			note(r->env, "%s:%d: not a JSON object: skipped", path,
			     line);
		else if (!code)
			note(r->env,
			     "%s:%d: no string \"code\", \"source\" or "
			     "\"custom_code\": skipped",
			     path, line);
		else if (!*code)
			note(r->env, "%s:%d: empty code: skipped", path, line);
		else if (strlen(code) > KF_STORE_SOURCE_CAP)
			note(r->env,
			     "%s:%d: code of %zu bytes is over the cap "
			     "of %zu: skipped",
			     path, line, strlen(code), KF_STORE_SOURCE_CAP);
		else if (r->n == REPLAY_ITEMS_MAX)
			note(r->env,
			     "%s:%d: more than %d candidates: "
			     "skipped",
			     path, line, REPLAY_ITEMS_MAX);
		else
			push(r, kf_xasprintf("%s:%d", path, line),
			     kf_xstrdup(code));
		cJSON_Delete(o);
	}
	free(text);
	if (others)
		note(r->env, "%s: %d line%s for other tasks left out", path,
		     others, others == 1 ? "" : "s");
	return 0;
}

static void replay_close(void *state)
{
	struct replay *r = state;
	if (!r)
		return;
	for (int i = 0; i < r->n; i++) {
		free(r->items[i].origin);
		free(r->items[i].source);
	}
	free(r->items);
	free(r);
}

static int replay_open(const struct kf_policy_env *env, void **state,
		       struct kf_err *err)
{
	const char *from = kf_json_str(env->options, "from");
	if (!from)
		return kf_err_set(err, KF_EINVAL,
				  "replay: nothing to replay (give --from DIR, "
				  "--from FILE.jsonl or --from FILE)");
	struct replay *r = kf_xcalloc(1, sizeof(*r));
	r->env = env;
	struct stat sb;
	int rc = 0;
	const char *ext = env->task && env->task->kernelbench ? ".py"
			  : strcmp(env->backend, "cuda")      ? ".c"
							      : ".cu";
	if (stat(from, &sb))
		rc = kf_err_set(err, KF_ENOENT,
				"%s: no such file or "
				"directory",
				from);
	else if (S_ISDIR(sb.st_mode))
		rc = open_dir(r, from, ext, err);
	else if (ends_with(from, ".jsonl"))
		rc = open_jsonl(r, from, err);
	else
		push(r, kf_xstrdup(from), NULL);
	if (!rc && r->n == 0)
		rc = kf_err_set(err, KF_EINVAL, "%s: no candidates to replay%s",
				from,
				S_ISDIR(sb.st_mode)
				    ? (!strcmp(ext, ".py")  ? " (no *.py file)"
				       : !strcmp(ext, ".c") ? " (no *.c file)"
							    : " (no *.cu file)")
				: ends_with(from, ".jsonl") ? " for this task"
							    : "");
	if (rc) {
		replay_close(r);
		return rc;
	}
	*state = r;
	return 0;
}

static int replay_propose(void *state, int max, struct kf_proposal *out, int *n,
			  struct kf_err *err)
{
	struct replay *r = state;
	*n = 0;
	while (*n < max && r->next < r->n) {
		struct item *it = &r->items[r->next++];
		char *src = it->source;
		it->source = NULL;
		if (!src) {
			struct kf_err e = KF_ERR_INIT;
			if (kf_file_read(it->origin, KF_STORE_SOURCE_CAP, &src,
					 NULL, &e)) {
				note(r->env, "%s: skipped", e.msg);
				continue;
			}
		}
		struct kf_proposal *p = &out[(*n)++];
		memset(p, 0, sizeof(*p));
		p->source = src;
		p->origin = kf_xstrdup(it->origin);
	}
	(void)err;
	return 0;
}

const struct kf_policy_ops kf_policy_replay_ops = {
    .version = KF_POLICY_OPS_VERSION,
    .name = "replay",
    .open = replay_open,
    .propose = replay_propose,
    .observe = NULL,
    .close = replay_close,
};
