/*
 * kernelbench.c: KernelBench-format tasks, Python files that define Model,
 * get_inputs and get_init_inputs. The supervisor knows only their path and
 * tolerance; the PyTorch bridge (runner/) reports their tensors on loading.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kforge/task.h>

#include "task_int.h"

#define KB_FILE_CAP (1u << 20) /* bytes of one task file */
/* KernelBench's tolerance for every dtype: atol = rtol = 1e-2. */
#define KB_TOL 1e-2
/* Python calls cost more than C ones, and level-3 models on a CPU take
 * seconds: the longest one call may take in checks, in ms. */
#define KB_CALL_TIMEOUT_MS 20000

bool kf_task_is_kernelbench(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && !strcmp(path + n - 3, ".py");
}

bool kf_task_kb_named(const char *id, const char *name)
{
	const char *stem = strrchr(id, '/');
	stem = stem ? stem + 1 : id;
	size_t n = strlen(stem);
	return !strcmp(name, id) || !strcmp(name, stem) ||
	       (!strncmp(name, stem, n) && !strcmp(name + n, ".py"));
}

/* True when text defines name at the start of a line ("def get_inputs",
 * "class Model"). */
static bool defines(const char *text, const char *def)
{
	size_t n = strlen(def);
	for (const char *p = text; (p = strstr(p, def)); p += n) {
		char next = p[n];
		bool line_start = p == text || p[-1] == '\n';
		if (line_start && (next == '(' || next == ':' || next == ' '))
			return true;
	}
	return false;
}

/* The level from a "levelN" component of the path; 0 when none. */
static int path_level(const char *path)
{
	for (const char *p = path; (p = strstr(p, "level")); p += 5) {
		bool start = p == path || p[-1] == '/' || p[-1] == '_';
		char *end;
		long v = strtol(p + 5, &end, 10);
		if (start && end != p + 5 && (*end == '/' || *end == '\0') &&
		    v > 0 && v < 100)
			return (int)v;
	}
	return 0;
}

int kf_task_load_kernelbench(const char *path, struct kf_task **out,
			     struct kf_err *err)
{
	struct kf_task *t = NULL;
	char *text = NULL;
	struct stat st;
	int rc = 0;
	*out = NULL;
	if (stat(path, &st) != 0) {
		rc = kf_err_set(err, errno == ENOENT ? KF_ENOENT : KF_EIO,
				"%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = kf_err_set(err, KF_EINVAL, "%s: not a regular file", path);
		goto out;
	}
	if ((rc = kf_file_read(path, KB_FILE_CAP, &text, NULL, err)))
		goto out;
	static const char *const need[] = {"class Model", "def get_inputs",
					   "def get_init_inputs"};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!defines(text, need[i])) {
			rc = kf_err_set(err, KF_EINVAL,
					"%s: not a KernelBench-format task: "
					"no '%s' at the start of a line",
					path, need[i]);
			goto out;
		}
	}
	t = kf_xcalloc(1, sizeof(*t));
	t->kernelbench = true;
	t->path = kf_xstrdup(path);
	const char *slash = strrchr(path, '/');
	t->dir = slash ? kf_xasprintf("%.*s", (int)(slash - path), path)
		       : kf_xstrdup(".");
	const char *base = slash ? slash + 1 : path;
	t->name = kf_xasprintf("%.*s", (int)(strlen(base) - 3), base);
	const char *parent = strrchr(t->dir, '/');
	parent = parent ? parent + 1 : t->dir;
	t->id = strcmp(parent, ".") && *parent
		    ? kf_xasprintf("%s/%s", parent, t->name)
		    : kf_xstrdup(t->name);
	t->level = path_level(path);
	t->description = kf_xstrdup("");
	t->n_dimsets = 1;
	t->n_fixed_dimsets = 1;
	t->dimsets = kf_xcalloc(1, sizeof(*t->dimsets));
	t->cuda_dimset = -1;
	/* PyTorch's own kernels are not all deterministic on a GPU (atomics
	 * in reductions and scatters): two calls must agree within the
	 * tolerance, not bit for bit. */
	t->determinism_bitwise = false;
	t->call_timeout_ms = KB_CALL_TIMEOUT_MS;
	for (int d = 0; d < KF_DTYPE_COUNT; d++) {
		bool fl = kf_dtype_is_float((enum kf_dtype)d);
		t->tol[d].atol = fl ? KB_TOL : 0;
		t->tol[d].rtol = fl ? KB_TOL : 0;
	}
	*out = t;
out:
	free(text);
	return rc;
}

int kf_task_add_tensor(struct kf_task *t, bool output, const char *name,
		       enum kf_dtype dtype, int ndim, const int64_t *shape,
		       struct kf_err *err)
{
	const char *kind = output ? "output" : "input";
	int *n = output ? &t->n_outputs : &t->n_inputs;
	struct kf_tensor_spec *arr = output ? t->outputs : t->inputs;
	if (!name || !*name || strlen(name) > 64)
		return kf_err_set(err, KF_EINVAL,
				  "%s: %s %d: the name must be 1 to 64 bytes",
				  t->path, kind, *n);
	if (*n >= KF_MAX_TENSORS)
		return kf_err_set(err, KF_EINVAL,
				  "%s: %s '%s': more than %d %ss", t->path,
				  kind, name, KF_MAX_TENSORS, kind);
	if (ndim < 0 || ndim > KF_MAX_NDIM)
		return kf_err_set(err, KF_EINVAL,
				  "%s: %s '%s': %d dimensions (at most %d)",
				  t->path, kind, name, ndim, KF_MAX_NDIM);
	for (int d = 0; d < ndim; d++)
		if (shape[d] < 1 || shape[d] > (1ll << 40))
			return kf_err_set(err, KF_EINVAL,
					  "%s: %s '%s': size %lld of "
					  "dimension %d is not a positive "
					  "integer below 2^40",
					  t->path, kind, name,
					  (long long)shape[d], d);
	struct kf_tensor_spec *ts = &arr[*n];
	memset(ts, 0, sizeof(*ts));
	ts->name = kf_xstrdup(name);
	ts->dtype = dtype;
	ts->ndim = ndim;
	for (int d = 0; d < ndim; d++)
		ts->shape[d] = kf_expr_const((double)shape[d]);
	if (!output) {
		/* The values come from the task's get_inputs(); the
		 * distribution is only a placeholder for code that lists
		 * one. */
		ts->dists = kf_xcalloc(1, sizeof(*ts->dists));
		ts->dists[0].kind = KF_DIST_NORMAL;
		ts->dists[0].p_default[1] = 1;
		ts->n_dists = 1;
	}
	(*n)++;
	return 0;
}

/* A KernelBench task file name: digits, '_', a name, ".py". */
static bool kb_file_name(const char *name)
{
	size_t n = strlen(name);
	const char *p = name;
	while (*p >= '0' && *p <= '9')
		p++;
	return p > name && *p == '_' && n > 3 && !strcmp(name + n - 3, ".py");
}

/* Where found: a path and whether a directory search found it. */
struct kb_found {
	char *path;
	bool walked;
};

static int kb_walk(const char *dir, int depth, struct kb_found **v, int *n,
		   struct kf_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return kf_err_set(err, KF_ENOENT, "%s: %s", dir,
				  strerror(errno));
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = kf_path_join(dir, e->d_name);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth > 1) {
			rc = kb_walk(p, depth - 1, v, n, err);
		} else if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
			   kb_file_name(e->d_name)) {
			*v = kf_xrealloc(*v, sizeof(**v) * (size_t)(*n + 1));
			(*v)[(*n)++] = (struct kb_found){p, true};
			p = NULL;
		}
		free(p);
	}
	closedir(d);
	return rc;
}

static const char *kb_base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Level, then problem number, then path. */
static int kb_cmp(const void *a, const void *b)
{
	const struct kf_kb_task *x = a, *y = b;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	long nx = strtol(kb_base(x->path), NULL, 10);
	long ny = strtol(kb_base(y->path), NULL, 10);
	if (nx != ny)
		return nx < ny ? -1 : 1;
	return strcmp(x->path, y->path);
}

void kf_kb_tasks_free(struct kf_kb_task *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].id);
	}
	free(v);
}

int kf_task_kb_find(char *const *paths, int n, int depth, int level,
		    struct kf_kb_task **out, int *n_out, struct kf_err *err)
{
	struct kb_found *f = NULL;
	int nf = 0, rc = 0;
	*out = NULL;
	*n_out = 0;
	for (int i = 0; i < n && !rc; i++) {
		struct stat st;
		if (stat(paths[i], &st) != 0) {
			rc = kf_err_set(err, KF_ENOENT, "%s: %s", paths[i],
					strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			rc = kb_walk(paths[i], depth, &f, &nf, err);
		} else {
			f = kf_xrealloc(f, sizeof(*f) * (size_t)(nf + 1));
			f[nf++] = (struct kb_found){kf_xstrdup(paths[i]), false};
		}
	}
	struct kf_kb_task *v = kf_xcalloc((size_t)nf + 1, sizeof(*v));
	int kept = 0;
	for (int i = 0; i < nf; i++) {
		struct kf_task *t = NULL;
		struct kf_err e = KF_ERR_INIT;
		if (!rc && kf_task_is_kernelbench(f[i].path) &&
		    kf_task_load(f[i].path, &t, &e) == 0) {
			if (level <= 0 || t->level == level) {
				v[kept].path = f[i].path;
				v[kept].id = kf_xstrdup(t->id);
				v[kept].level = t->level;
				kept++;
				f[i].path = NULL;
			}
			kf_task_free(t);
		} else if (!rc && !f[i].walked) {
			if (kf_task_is_kernelbench(f[i].path))
				rc = kf_err_set(err, KF_EINVAL, "%s", e.msg);
			else
				rc = kf_err_set(err, KF_EINVAL,
						"%s: not a KernelBench-format "
						"task (.py)",
						f[i].path);
		}
		free(f[i].path);
	}
	free(f);
	if (!rc && kept == 0)
		rc = kf_err_set(err, KF_ENOENT,
				"no KernelBench-format task (N_Name.py) found%s",
				level > 0 ? " at that level" : "");
	if (rc) {
		kf_kb_tasks_free(v, kept);
		return rc;
	}
	qsort(v, (size_t)kept, sizeof(*v), kb_cmp);
	*out = v;
	*n_out = kept;
	return 0;
}
