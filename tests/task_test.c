/*
 * task_test.c: tests of the task module: loading task.json, the messages of
 * malformed specs, expressions, dimension sets, distributions, finding tasks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/task.h>

#include "harness.h"

/* Specs are written with ' for " so that they read well in C strings. */
#define GOOD_SPEC                                                              \
	"{'name': 'gelu', 'description': 'y = gelu(x) + b, row-wise.',"        \
	" 'dims': {'M': 64, 'N': 1024},"                                       \
	" 'hidden_dims': [{'M': 3, 'N': 1000}, {'N': 77, 'M': 5}],"            \
	" 'inputs': [{'name': 'x', 'dtype': 'float32', 'shape': ['M', 'N']},"  \
	"  {'name': 'b', 'dtype': 'float32', 'shape': ['N'],"                  \
	"   'dist': {'kind': 'uniform', 'low': '-N', 'high': 'N/2'}}],"        \
	" 'outputs': [{'name': 'y', 'dtype': 'float32', 'shape': ['M', "       \
	"'N']}],"                                                              \
	" 'flops': '8*M*N', 'bytes': '4*(2*M*N + N)'}"

/* A spec without a name, to be completed with its inputs. */
#define HEAD                                                                   \
	"{'description': 'd', 'dims': {'N': 8},"                               \
	" 'hidden_dims': [{'N': 3}, {'N': 7}], "
#define TAIL                                                                   \
	", 'outputs': [{'name': 'y', 'dtype': 'float32', 'shape': ['N']}],"    \
	" 'flops': 'N', 'bytes': 'N'}"
/* A valid spec that fits any directory. */
#define ANON_SPEC                                                              \
	HEAD "'inputs': [{'name': 'x', 'dtype': 'float32', 'shape': "          \
	     "['N']}]" TAIL

static void mkdir_p(const char *path)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(buf, 0777);
		*p = '/';
	}
	mkdir(buf, 0777);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

/* Writes spec (with ' for ") as <tmp>/<rel>/task.json; returns the dir. */
static char *write_task(const char *rel, const char *spec)
{
	char *dir = kf_xasprintf("%s/%s", kf_test_tmpdir(), rel);
	mkdir_p(dir);
	char *json = kf_xstrdup(spec);
	for (char *p = json; *p; p++)
		if (*p == '\'')
			*p = '"';
	char *path = kf_xasprintf("%s/task.json", dir);
	write_file(path, json);
	free(path);
	free(json);
	return dir;
}

/* spec with the first occurrence of from replaced by to; caller frees. */
static char *with(const char *spec, const char *from, const char *to)
{
	const char *at = strstr(spec, from);
	CHECK_MSG(at, "'%s' not in the spec", from);
	return kf_xasprintf("%.*s%s%s", (int)(at - spec), spec, to,
			    at + strlen(from));
}

/* Loads spec from act/gelu and expects it to fail with a message that is
 * "<path>: " followed by text containing each needle. */
static void expect_error(const char *spec, const char *needle,
			 const char *needle2)
{
	char *dir = write_task("act/gelu", spec);
	char *path = kf_xasprintf("%s/task.json: ", dir);
	struct kf_task *t = NULL;
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_task_load(dir, &t, &err);
	CHECK_MSG(rc == KF_EINVAL, "rc %d for a spec that should fail (%s)", rc,
		  needle);
	CHECK(t == NULL);
	CHECK_MSG(strncmp(err.msg, path, strlen(path)) == 0,
		  "'%s' does not start with the path", err.msg);
	CHECK_CONTAINS(err.msg, needle);
	if (needle2)
		CHECK_CONTAINS(err.msg, needle2);
	free(path);
	free(dir);
}

static struct kf_task *load_ok(const char *rel, const char *spec)
{
	char *dir = write_task(rel, spec);
	struct kf_task *t = NULL;
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_task_load(dir, &t, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(t);
	free(dir);
	return t;
}

static double eval_src(const char *src)
{
	static const char *const names[] = {"M", "N", "K"};
	static const int64_t values[] = {6, 10, 3};
	struct kf_expr *e = NULL;
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_expr_parse(src, names, 3, &e, &err);
	CHECK_MSG(rc == 0, "%s: %s", src, err.msg);
	CHECK_STR(kf_expr_src(e), src);
	double v = kf_expr_eval(e, values);
	kf_expr_free(e);
	return v;
}

static void expr_error(const char *src, const char *needle)
{
	static const char *const names[] = {"M", "N"};
	struct kf_expr *e = NULL;
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_expr_parse(src, names, 2, &e, &err);
	CHECK_MSG(rc == KF_EINVAL, "'%s' parsed", src);
	CHECK(e == NULL);
	CHECK_CONTAINS(err.msg, needle);
}

static void test_task_load_valid_spec(void)
{
	struct kf_task *t = load_ok("act/gelu", GOOD_SPEC);
	CHECK_STR(t->id, "act/gelu");
	CHECK_STR(t->name, "gelu");
	CHECK_STR(t->description, "y = gelu(x) + b, row-wise.");
	char *want = kf_xasprintf("%s/act/gelu/task.json", kf_test_tmpdir());
	CHECK_STR(t->path, want);
	free(want);

	CHECK(t->n_dims == 2);
	CHECK_STR(t->dim_names[0], "M");
	CHECK_STR(t->dim_names[1], "N");
	CHECK(t->n_dimsets == 3);
	/* The second hidden set lists N first; values follow dim_names. */
	CHECK(kf_task_dims(t, 2)[0] == 5 && kf_task_dims(t, 2)[1] == 77);

	CHECK(t->n_inputs == 2 && t->n_outputs == 1);
	CHECK_STR(t->inputs[0].name, "x");
	CHECK(t->inputs[0].dtype == KF_F32);
	CHECK(t->inputs[0].ndim == 2);
	CHECK_STR(kf_expr_src(t->inputs[0].shape[1]), "N");
	CHECK_STR(t->outputs[0].name, "y");
	CHECK(t->outputs[0].dists == NULL && t->outputs[0].n_dists == 0);

	CHECK(kf_task_flops(t, 0) == 8.0 * 64 * 1024);
	CHECK(kf_task_bytes(t, 1) == 4.0 * (2 * 3 * 1000 + 1000));

	/* The defaults of the optional fields. */
	CHECK(t->n_libraries == 0);
	CHECK(t->determinism_bitwise);
	CHECK(t->call_timeout_ms == 2000);
	CHECK(t->tol[KF_F32].atol == 1e-4 && t->tol[KF_F32].rtol == 1e-4);
	CHECK(t->tol[KF_F64].atol == 1e-9);
	CHECK(t->tol[KF_F16].rtol == 1e-2);
	CHECK(t->tol[KF_BF16].atol == 2e-2);
	CHECK(t->tol[KF_I32].atol == 0 && t->tol[KF_I64].rtol == 0);
	kf_task_free(t);
	kf_task_free(NULL);
}

static void test_task_load_accepts_file_path_and_trailing_slash(void)
{
	char *dir = write_task("act/gelu", GOOD_SPEC);
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;

	char *file = kf_xasprintf("%s/task.json", dir);
	CHECK_MSG(kf_task_load(file, &t, &err) == 0, "%s", err.msg);
	CHECK_STR(t->dir, dir);
	CHECK_STR(t->id, "act/gelu");
	kf_task_free(t);

	char *slash = kf_xasprintf("%s//", dir);
	CHECK_MSG(kf_task_load(slash, &t, &err) == 0, "%s", err.msg);
	CHECK_STR(t->dir, dir);
	CHECK_STR(t->path, file);
	kf_task_free(t);

	/* A directory without task.json names the file it looked for. */
	char *empty = kf_xasprintf("%s/act/none", kf_test_tmpdir());
	mkdir_p(empty);
	CHECK(kf_task_load(empty, &t, &err) == KF_ENOENT);
	CHECK_CONTAINS(err.msg, "act/none/task.json");
	CHECK(kf_task_load("/nonexistent/kforge/x", &t, &err) == KF_ENOENT);
	CHECK_CONTAINS(err.msg, "/nonexistent/kforge/x");
	free(empty);
	free(slash);
	free(file);
	free(dir);
}

static void test_task_id_from_dot_and_symlinked_suite(void)
{
	char *dir = write_task("act/gelu", GOOD_SPEC);
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	/* "." names no suite: the id comes from the real path. */
	CHECK(chdir(dir) == 0);
	CHECK_MSG(kf_task_load(".", &t, &err) == 0, "%s", err.msg);
	CHECK_STR(t->id, "act/gelu");
	kf_task_free(t);
	CHECK_MSG(kf_task_load("task.json", &t, &err) == 0, "%s", err.msg);
	CHECK_STR(t->id, "act/gelu");
	CHECK_STR(t->dir, ".");
	kf_task_free(t);

	/* A suite reached through a link keeps the name it was given. */
	char *act = kf_xasprintf("%s/act", kf_test_tmpdir());
	char *link = kf_xasprintf("%s/activations", kf_test_tmpdir());
	CHECK(symlink(act, link) == 0);
	char *via = kf_xasprintf("%s/gelu", link);
	CHECK_MSG(kf_task_load(via, &t, &err) == 0, "%s", err.msg);
	CHECK_STR(t->id, "activations/gelu");
	kf_task_free(t);
	free(via);
	free(link);
	free(act);
	free(dir);
}

static void test_task_expr_precedence(void)
{
	CHECK(eval_src("1+2*3") == 7);
	CHECK(eval_src("(1+2)*3") == 9);
	CHECK(eval_src("2-3-4") == -5); /* left-associative */
	CHECK(eval_src("64/4/2") == 8); /* left-associative */
	CHECK(eval_src("7/2") == 3.5);	/* division is exact, not integer */
	CHECK(eval_src("N%4") == 2);
	CHECK(eval_src("1+N%4*2") == 5); /* % binds like * */
	CHECK(eval_src("-N+1") == -9);	 /* unary minus binds tightest */
	CHECK(eval_src("2*-3") == -6);
	CHECK(eval_src("--M") == 6);
	CHECK(eval_src("-(M-N)*2") == 8);
	CHECK(eval_src(" M * N + K ") == 63);
	CHECK(eval_src("0.5*N") == 5);
	CHECK(eval_src("1e3+.25") == 1000.25);
	CHECK(eval_src("4*M*N*K") == 720);
}

static void test_task_expr_functions(void)
{
	CHECK(eval_src("cdiv(7,2)") == 4);
	CHECK(eval_src("cdiv(8,2)") == 4);
	CHECK(eval_src("cdiv(N, K)") == 4);
	CHECK(eval_src("min(M, N)") == 6);
	CHECK(eval_src("max(M, N)") == 10);
	CHECK(eval_src("max(min(M, K), 2) * 2") == 6);
	CHECK(eval_src("cdiv(N, 4) * 4 - N") == 2);
	CHECK(eval_src("min(-M, -N)") == -10);
	/* A name is used as a number wherever it stands. */
	CHECK(eval_src("min(M*2, N+3)") == 12);
}

static void test_task_expr_errors(void)
{
	expr_error("K*N", "unknown name 'K' in 'K*N' (names: M, N)");
	expr_error("N+", "in 'N+' at column 3: unexpected end");
	expr_error("N+*2", "in 'N+*2' at column 3: expected a number");
	expr_error("(N+1", "expected ')'");
	expr_error("N)", "unmatched ')'");
	expr_error("min(N)", "expected ','");
	expr_error("min(N, M, 2)", "expected ')'");
	expr_error("min + 1", "a function needs its arguments");
	expr_error("foo(N, 2)", "unknown function 'foo'");
	expr_error("2N", "in '2N' at column 2: expected an operator");
	expr_error("N $ 2", "at column 3");
	expr_error("", "empty expression");
	expr_error("   ", "empty expression");
	expr_error("1e999", "number out of range");
	expr_error("0x10", "expected an operator");

	/* Hostile input: deep nesting is refused, not a stack overflow. */
	char deep[2100];
	memset(deep, '(', 1000);
	deep[1000] = '1';
	memset(deep + 1001, ')', 1000);
	deep[2001] = 0;
	expr_error(deep, "longer than");
	memset(deep, '(', 200);
	deep[200] = '1';
	memset(deep + 201, ')', 200);
	deep[401] = 0;
	expr_error(deep, "nested too deeply");

	struct kf_expr *e = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_expr_parse("x", NULL, 0, &e, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "no names are defined");
	kf_expr_free(NULL);
}

static void test_task_dtype_names(void)
{
	static const char *const names[] = {"float32",	"float64", "float16",
					    "bfloat16", "int32",   "int64"};
	static const size_t bytes[] = {4, 8, 2, 2, 4, 8};
	for (int d = 0; d < KF_DTYPE_COUNT; d++) {
		enum kf_dtype got;
		CHECK_STR(kf_dtype_name((enum kf_dtype)d), names[d]);
		CHECK(kf_dtype_parse(names[d], &got) == 0 && (int)got == d);
		CHECK(kf_dtype_bytes((enum kf_dtype)d) == bytes[d]);
		CHECK(kf_dtype_is_float((enum kf_dtype)d) == (d <= KF_BF16));
	}
	enum kf_dtype got;
	CHECK(kf_dtype_parse("float", &got) == KF_EINVAL);
	CHECK(kf_dtype_parse("Float32", &got) == KF_EINVAL);
	CHECK(kf_dtype_name(KF_DTYPE_COUNT) == NULL);
	CHECK_STR(kf_dist_name(KF_DIST_HEAVY), "heavy");
	CHECK_STR(kf_dist_name(KF_DIST_CONST), "const");
}

static void test_task_rejects_unknown_dtype(void)
{
	char *spec = with(GOOD_SPEC, "'float32'", "'float33'");
	char *dir = write_task("act/gelu", spec);
	struct kf_task *t = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_task_load(dir, &t, &err) == KF_EINVAL);
	char *want = kf_xasprintf(
	    "%s/task.json: inputs[0].dtype: unknown dtype 'float33' "
	    "(expected float32, float64, float16, bfloat16, int32, int64)",
	    dir);
	CHECK_STR(err.msg, want);
	free(want);
	free(dir);
	free(spec);
}

static void test_task_rejects_unknown_keys(void)
{
	static const struct {
		const char *from, *to, *field, *why;
	} cases[] = {
	    {"'flops'", "'flop': 1, 'flops'", "flop: ", "unknown key"},
	    {"'dtype': 'float32', 'shape': ['M', 'N']}",
	     "'dtype': 'float32', 'shape': ['M', 'N'], 'layout': 'nc'}",
	     "inputs[0].layout: ", "unknown key (expected name, dtype"},
	    {"'shape': ['M', 'N']}]", "'shape': ['M', 'N'], 'dist': 'normal'}]",
	     "outputs[0].dist: ", "outputs have no dist"},
	    {"'low': '-N'", "'lo': '-N'",
	     "inputs[1].dist.lo: ", "expected kind, low, high"},
	    {"'flops'",
	     "'tolerance': {'float32': {'atol': 1, 'eps': 2}}, "
	     "'flops'",
	     "tolerance.float32.eps: ", "unknown key (expected atol, rtol)"},
	    {"'flops'", "'tolerance': {'float33': {'atol': 1}}, 'flops'",
	     "tolerance.float33: ", "unknown dtype 'float33'"},
	    {"'flops'", "'bytes': 1, 'flops'", "bytes: ", "duplicate key"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *spec = with(GOOD_SPEC, cases[i].from, cases[i].to);
		expect_error(spec, cases[i].field, cases[i].why);
		free(spec);
	}
}

static void test_task_rejects_missing_fields(void)
{
	static const char *const required[] = {
	    "description", "dims",  "hidden_dims", "inputs",
	    "outputs",	   "flops", "bytes",
	};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		/* Remove the member through cJSON, so the rest stays valid. */
		char *json = kf_xstrdup(GOOD_SPEC);
		for (char *p = json; *p; p++)
			if (*p == '\'')
				*p = '"';
		cJSON *root = cJSON_Parse(json);
		CHECK(root);
		cJSON_DeleteItemFromObjectCaseSensitive(root, required[i]);
		char *spec = cJSON_PrintUnformatted(root);
		/* Without hidden_dims the spec lacks hidden sets of either
		 * kind: the message names the ranges first. */
		char *field = kf_xasprintf(
		    ": %s: ", strcmp(required[i], "hidden_dims") ? required[i]
								 : "hidden");
		expect_error(spec, field, "required field is missing");
		free(field);
		free(spec);
		cJSON_Delete(root);
		free(json);
	}
	char *spec = with(GOOD_SPEC, "'name': 'x', 'dtype'", "'dtype'");
	expect_error(spec, "inputs[0].name: ", "required field is missing");
	free(spec);
	spec = with(GOOD_SPEC, ", 'shape': ['N'],", ",");
	expect_error(spec, "inputs[1].shape: ", "required field is missing");
	free(spec);
	spec = with(GOOD_SPEC, "'kind': 'uniform', ", "");
	expect_error(spec,
		     "inputs[1].dist.kind: ", "required field is missing");
	free(spec);
}

static void test_task_rejects_wrong_types(void)
{
	static const struct {
		const char *from, *to, *field, *why;
	} cases[] = {
	    {"{'M': 64, 'N': 1024}", "[64, 1024]",
	     ": dims: ", "must be an object, got array"},
	    {"'M': 64,", "'M': '64',",
	     "dims.M: ", "must be a positive integer, got string"},
	    {"'M': 64,", "'M': 0,",
	     "dims.M: ", "must be a positive integer, got 0"},
	    {"'M': 64,", "'M': 6.5,",
	     "dims.M: ", "must be a positive integer, got 6.5"},
	    {"'description': 'y = gelu(x) + b, row-wise.'",
	     "'description': ['y']",
	     "description: ", "must be a string, got array"},
	    {"'description': 'y = gelu(x) + b, row-wise.'", "'description': ''",
	     "description: ", "must not be empty"},
	    {"'shape': ['N'],", "'shape': 'N',",
	     "inputs[1].shape: ", "must be an array, got string"},
	    {"'shape': ['N'],", "'shape': [true],", "inputs[1].shape[0]: ",
	     "must be a positive integer or an expression string, got "
	     "boolean"},
	    {"'shape': ['N'],", "'shape': [0],",
	     "inputs[1].shape[0]: ", "got 0"},
	    {"'flops': '8*M*N'", "'flops': false", "flops: ",
	     "must be a number or an expression string, got boolean"},
	    {"'dtype': 'float32'", "'dtype': 32",
	     "inputs[0].dtype: ", "must be a string, got number"},
	    {"'outputs': [", "'outputs': [3, ",
	     "outputs[0]: ", "must be an object, got number"},
	    {"'outputs': [{'name': 'y', 'dtype': 'float32', 'shape': ['M', "
	     "'N']}]",
	     "'outputs': []", ": outputs: ", "0 tensors, expected 1 to 16"},
	    {"{'kind': 'uniform', 'low': '-N', 'high': 'N/2'}", "7",
	     "inputs[1].dist: ", "must be a string or an object, got number"},
	    {"'flops'", "'libraries': 'm', 'flops'",
	     "libraries: ", "must be an array, got string"},
	    {"'flops'", "'libraries': ['m', '-o/tmp/x'], 'flops'",
	     "libraries[1]: ", "'-o/tmp/x' is not a library name"},
	    {"'flops'", "'determinism': 'exact', 'flops'", "determinism: ",
	     "unknown value 'exact' (expected bitwise, tolerance)"},
	    {"'flops'", "'call_timeout_ms': -1, 'flops'",
	     "call_timeout_ms: ", "must be above 0"},
	    {"'flops'", "'call_timeout_ms': '5', 'flops'",
	     "call_timeout_ms: ", "must be a number, got string"},
	    {"'name': 'x'", "'name': 'x y'",
	     "inputs[0].name: ", "'x y' is not a valid tensor name"},
	    {"'M': 64,", "'min': 64,", "dims.min: ", "the name of a function"},
	    {"'shape': ['N'],", "'shape': ['N', 1, 1, 1, 1, 1, 1, 1, 1],",
	     "inputs[1].shape: ", "9 dimensions, at most 8"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *spec = with(GOOD_SPEC, cases[i].from, cases[i].to);
		expect_error(spec, cases[i].field, cases[i].why);
		free(spec);
	}
	expect_error("[1, 2]", "must hold a JSON object, got array", NULL);
}

static void test_task_rejects_bad_hidden_dims(void)
{
	static const struct {
		const char *to, *field, *why;
	} cases[] = {
	    /* A hidden set equal to the timing set hides nothing. */
	    {"[{'M': 3, 'N': 1000}, {'N': 1024, 'M': 64}]",
	     "hidden_dims[1]: ", "the same as dims"},
	    {"[{'M': 3, 'N': 1000}]",
	     "hidden_dims: ", "1 set given, at least 2 are required"},
	    {"[]", "hidden_dims: ", "0 sets given"},
	    {"[{'M': 3, 'N': 1000}, {'M': 5}]",
	     "hidden_dims[1]: ", "dimension 'N' is missing"},
	    {"[{'M': 3, 'N': 1000, 'K': 2}, {'M': 5, 'N': 7}]",
	     "hidden_dims[0].K: ", "not a dimension of dims (M, N)"},
	    {"[{'M': 3, 'N': 1000}, {'M': 5, 'N': -7}]",
	     "hidden_dims[1].N: ", "must be a positive integer, got -7"},
	    {"[{'M': 3, 'N': 1000}, {'M': 5, 'N': 7, 'N': 8}]",
	     "hidden_dims[1].N: ", "duplicate key"},
	    {"[{'M': 3, 'N': 1000}, 5]",
	     "hidden_dims[1]: ", "must be an object, got number"},
	    {"{'M': 3, 'N': 1000}",
	     "hidden_dims: ", "must be an array, got object"},
	};
	const char *from = "[{'M': 3, 'N': 1000}, {'N': 77, 'M': 5}]";
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *spec = with(GOOD_SPEC, from, cases[i].to);
		expect_error(spec, cases[i].field, cases[i].why);
		free(spec);
	}
}

static void test_task_shapes_under_hidden_sets(void)
{
	struct kf_task *t = load_ok(
	    "mm/tiled",
	    "{'description': 'tiles', 'dims': {'M': 128, 'N': 64},"
	    " 'hidden_dims': [{'M': 7, 'N': 9}, {'M': 1, 'N': 100}],"
	    " 'inputs': [{'name': 'a', 'dtype': 'float16', 'shape': ['M', "
	    "'N']}, {'name': 's', 'dtype': 'float32', 'shape': []}],"
	    " 'outputs': [{'name': 'p', 'dtype': 'float32',"
	    "  'shape': ['cdiv(M, 4)', 'max(N, 16)', 2]}],"
	    " 'flops': 'M*N', 'bytes': 2e6}");
	int64_t sh[KF_MAX_NDIM];
	struct kf_err err = KF_ERR_INIT;
	const struct kf_tensor_spec *p = &t->outputs[0];
	CHECK(kf_task_shape(t, p, 0, sh, &err) == 32 * 64 * 2);
	CHECK(sh[0] == 32 && sh[1] == 64 && sh[2] == 2);
	CHECK(kf_task_shape(t, p, 1, sh, &err) == 2 * 16 * 2);
	CHECK(sh[0] == 2 && sh[1] == 16);
	CHECK(kf_task_shape(t, p, 2, sh, &err) == 1 * 100 * 2);
	CHECK(kf_task_shape(t, &t->inputs[0], 1, sh, &err) == 63);
	/* A scalar has no dimensions and one element. */
	CHECK(t->inputs[1].ndim == 0);
	CHECK(kf_task_shape(t, &t->inputs[1], 2, sh, &err) == 1);

	char *s = kf_task_dims_str(t, 0);
	CHECK_STR(s, "M=128 N=64");
	free(s);
	s = kf_task_dims_str(t, 2);
	CHECK_STR(s, "M=1 N=100");
	free(s);
	CHECK(kf_task_flops(t, 1) == 63);
	CHECK(kf_task_bytes(t, 2) == 2e6);
	CHECK_STR(kf_expr_src(t->bytes), "2000000");
	kf_task_free(t);
}

static void test_task_rejects_bad_shape_in_hidden_set(void)
{
	/* N/2 is fine for the timing dims but not for N=7: caught at load,
	 * naming the tensor, the dimension and the set. */
	expect_error(HEAD "'inputs': [{'name': 'x', 'dtype': 'float32',"
			  " 'shape': ['N', 'N/2']}]" TAIL,
		     "inputs[0].shape[1]: 'N/2' is 1.5 under hidden_dims[0] "
		     "(N=3)",
		     "dimension 1 of tensor 'x' must be a positive integer");
	expect_error(HEAD "'inputs': [{'name': 'x', 'dtype': 'float32',"
			  " 'shape': ['N-8']}]" TAIL,
		     "inputs[0].shape[0]: 'N-8' is 0 under dims (N=8)", NULL);
	expect_error(HEAD "'inputs': [{'name': 'x', 'dtype': 'float32',"
			  " 'shape': ['N*K']}]" TAIL,
		     "inputs[0].shape[0]: unknown name 'K' in 'N*K'", NULL);
	expect_error(HEAD "'inputs': [{'name': 'x', 'dtype': 'float32',"
			  " 'shape': ['N']}]"
			  ", 'outputs': [{'name': 'y', 'dtype': 'float32',"
			  " 'shape': ['N', '(N+'] }], 'flops': 1, 'bytes': 1}",
		     "outputs[0].shape[1]: in '(N+' at column 4", NULL);
}

static void test_task_dist_parsing(void)
{
	struct kf_task *t =
	    load_ok("nn/embed",
		    "{'description': 'embedding', 'dims': {'V': 1000, 'N': 64},"
		    " 'hidden_dims': [{'V': 10, 'N': 3}, {'V': 77, 'N': 5}],"
		    " 'inputs': ["
		    "  {'name': 'idx', 'dtype': 'int64', 'shape': ['N'],"
		    "   'dist': [{'kind': 'int', 'high': 'V'},"
		    "            {'kind': 'const', 'value': 'V-1'}]},"
		    "  {'name': 'w', 'dtype': 'float32', 'shape': ['V', 4],"
		    "   'dist': ['wide', {'kind': 'heavy', 'clip': 100},"
		    "            {'kind': 'normal', 'mean': 1, 'std': '1/N'},"
		    "            {'kind': 'int', 'low': -3, 'high': 4}]},"
		    "  {'name': 'g', 'dtype': 'bfloat16', 'shape': [4]},"
		    "  {'name': 'h', 'dtype': 'float64', 'shape': [4],"
		    "   'dist': 'uniform'}],"
		    " 'outputs': [{'name': 'y', 'dtype': 'float32', 'shape': "
		    "['N', 4]}],"
		    " 'flops': 0, 'bytes': '4*N*4 + 8*N'}");
	double p[2];

	const struct kf_tensor_spec *idx = &t->inputs[0];
	CHECK(idx->dtype == KF_I64 && idx->n_dists == 2);
	CHECK(idx->dists[0].kind == KF_DIST_INT);
	/* int: low defaults to 0, high follows V in every set. */
	kf_dist_params(t, &idx->dists[0], 0, p);
	CHECK(p[0] == 0 && p[1] == 1000);
	kf_dist_params(t, &idx->dists[0], 2, p);
	CHECK(p[0] == 0 && p[1] == 77);
	CHECK(idx->dists[1].kind == KF_DIST_CONST);
	kf_dist_params(t, &idx->dists[1], 1, p);
	CHECK(p[0] == 9);

	const struct kf_tensor_spec *w = &t->inputs[1];
	CHECK(w->n_dists == 4);
	CHECK(w->dists[0].kind == KF_DIST_WIDE);
	CHECK(w->dists[0].p_expr[0] == NULL && w->dists[0].p_expr[1] == NULL);
	kf_dist_params(t, &w->dists[0], 0, p);
	CHECK(p[0] == -4 && p[1] == 4);
	CHECK(w->dists[1].kind == KF_DIST_HEAVY);
	kf_dist_params(t, &w->dists[1], 0, p);
	CHECK(p[0] == 1 && p[1] == 100);
	CHECK(w->dists[2].kind == KF_DIST_NORMAL);
	kf_dist_params(t, &w->dists[2], 0, p);
	CHECK(p[0] == 1 && p[1] == 1.0 / 64);
	kf_dist_params(t, &w->dists[2], 2, p);
	CHECK(p[1] == 1.0 / 5);
	/* Integers into a float tensor are allowed. */
	CHECK(w->dists[3].kind == KF_DIST_INT);
	kf_dist_params(t, &w->dists[3], 1, p);
	CHECK(p[0] == -3 && p[1] == 4);

	/* No dist on a float input: normal, uniform, heavy with defaults. */
	const struct kf_tensor_spec *g = &t->inputs[2];
	CHECK(g->n_dists == 3);
	CHECK(g->dists[0].kind == KF_DIST_NORMAL);
	CHECK(g->dists[1].kind == KF_DIST_UNIFORM);
	CHECK(g->dists[2].kind == KF_DIST_HEAVY);
	kf_dist_params(t, &g->dists[1], 0, p);
	CHECK(p[0] == -1 && p[1] == 1);
	kf_dist_params(t, &g->dists[2], 0, p);
	CHECK(p[0] == 1 && p[1] == 1000);
	kf_dist_params(t, &g->dists[0], 0, p);
	CHECK(p[0] == 0 && p[1] == 1);

	/* A single string is a list of one. */
	CHECK(t->inputs[3].n_dists == 1);
	CHECK(t->inputs[3].dists[0].kind == KF_DIST_UNIFORM);
	CHECK(kf_task_flops(t, 0) == 0);
	kf_task_free(t);
}

static void test_task_rejects_bad_dists(void)
{
	static const struct {
		const char *input, *field, *why;
	} cases[] = {
	    {"{'name': 'i', 'dtype': 'int32', 'shape': ['N']}",
	     "inputs[0].dist: ", "required for an integer input"},
	    {"{'name': 'i', 'dtype': 'int32', 'shape': ['N'], 'dist': "
	     "[{'kind': 'int', 'high': 4}, 'normal']}",
	     "inputs[0].dist[1]: ", "'normal' cannot fill an integer tensor"},
	    {"{'name': 'i', 'dtype': 'int64', 'shape': ['N'], 'dist': "
	     "{'kind': 'uniform'}}",
	     "inputs[0].dist.kind: ", "'uniform' cannot fill an integer"},
	    {"{'name': 'i', 'dtype': 'int32', 'shape': ['N'], 'dist': "
	     "'int'}",
	     "inputs[0].dist: ", "kind int needs the parameter 'high'"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "[{'kind': 'const'}]}",
	     "inputs[0].dist[0]: ", "kind const needs the parameter 'value'"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "['normal', 'uniform', {'kind': 'cauchy'}]}",
	     "inputs[0].dist[2].kind: ",
	     "unknown distribution 'cauchy' (expected normal, uniform"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "['gauss']}",
	     "inputs[0].dist[0]: ", "unknown distribution 'gauss'"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': []}",
	     "inputs[0].dist: ", "empty list"},
	    /* Empty ranges, constant and per set. */
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "{'kind': 'uniform', 'low': 1, 'high': 1}}",
	     "inputs[0].dist: ", "low (1) must be below high (1)"},
	    {"{'name': 'i', 'dtype': 'int32', 'shape': ['N'], 'dist': "
	     "{'kind': 'int', 'low': 5, 'high': 2}}",
	     "inputs[0].dist: ", "low (5) must be below high (2)"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "{'kind': 'uniform', 'low': 4, 'high': 'N'}}",
	     "inputs[0].dist: ",
	     "low (4) must be below high (3) under hidden_dims[0] (N=3)"},
	    {"{'name': 'i', 'dtype': 'int32', 'shape': ['N'], 'dist': "
	     "{'kind': 'int', 'high': 'N/2'}}",
	     "inputs[0].dist: ", "high (1.5) must be an integer"},
	    {"{'name': 'i', 'dtype': 'int32', 'shape': ['N'], 'dist': "
	     "{'kind': 'int', 'high': 3e9}}",
	     "inputs[0].dist: ", "do not fit in int32"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "{'kind': 'normal', 'std': '-1'}}",
	     "inputs[0].dist: ", "std (-1) must not be negative"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "{'kind': 'normal', 'std': 'sqrt(N)'}}",
	     "inputs[0].dist.std: ", "unknown function 'sqrt'"},
	    {"{'name': 'x', 'dtype': 'float32', 'shape': ['N'], 'dist': "
	     "{'kind': 'normal', 'mean': '0/0'}}",
	     "inputs[0].dist.mean: ", "it must be a finite number"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *spec =
		    kf_xasprintf(HEAD "'inputs': [%s]" TAIL, cases[i].input);
		expect_error(spec, cases[i].field, cases[i].why);
		free(spec);
	}
}

/* A spec with ranges instead of fixed hidden sets. */
#define RANGE_SPEC                                                             \
	"{'description': 'd', 'dims': {'B': 64, 'N': 4096},"                   \
	" 'hidden': {'B': [1, 64], 'N': [1, 4097]},"                           \
	" 'inputs': [{'name': 'x', 'dtype': 'float32', 'shape': ['B', 'N']}]," \
	" 'outputs': [{'name': 'y', 'dtype': 'float32', 'shape': ['B']}],"     \
	" 'flops': 'B*N', 'bytes': '4*B*N'}"

static void test_task_hidden_sets_drawn_from_ranges(void)
{
	struct kf_task *t = load_ok("red/rows", RANGE_SPEC);
	struct kf_err err = KF_ERR_INIT;
	CHECK(t->n_dimsets == 1); /* nothing drawn until an evaluation */
	CHECK(t->hidden_sets == 9);
	CHECK(t->hidden_ranges[1].lo == 1 && t->hidden_ranges[1].hi == 4097);
	CHECK(kf_task_draw_hidden(t, 12345, &err) == 0);
	CHECK(t->n_dimsets == 10);
	int64_t first[9][2];
	bool odd = false;
	for (int s = 1; s < 10; s++) {
		const int64_t *v = kf_task_dims(t, s);
		CHECK(v[0] >= 1 && v[0] <= 64 && v[1] >= 1 && v[1] <= 4097);
		CHECK(!(v[0] == 64 && v[1] == 4096));
		if (s == 2 || s == 3)
			odd = odd || (v[1] & 1);
		first[s - 1][0] = v[0];
		first[s - 1][1] = v[1];
	}
	/* The first set takes the edge of every range; the next two odd
	 * sizes that no vector width divides; the next four 2^a times an odd
	 * number, a = 1, 2, 3 and a in 4-6, for paths taken only at such
	 * sizes. */
	CHECK(first[0][0] == 1 && first[0][1] == 1);
	CHECK(odd);
	for (int s = 3; s < 7; s++)
		for (int d = 0; d < 2; d++) {
			int64_t v = first[s][d];
			int a = 0;
			while (!(v & 1)) {
				v >>= 1;
				a++;
			}
			CHECK_MSG(s < 6 ? a == s - 2 : a >= 4 && a <= 6,
				  "set %d dim %d: %lld", s + 1, d,
				  (long long)first[s][d]);
		}
	/* The eighth: N a multiple of 2^7 or more (B the largest power of
	 * two its range holds but 64, the timing B), never the timing N; the
	 * ninth at the top of each range. */
	CHECK(first[7][1] % 128 == 0 && first[7][1] != 4096);
	CHECK(first[7][0] == 32); /* 64 is the timing B */
	CHECK(first[8][1] >= 4094 && first[8][1] != 4096);
	CHECK(first[8][0] == 63);
	/* Another seed, other sets; drawing again replaces them. */
	CHECK(kf_task_draw_hidden(t, 999, &err) == 0);
	CHECK(t->n_dimsets == 10);
	bool differ = false;
	for (int s = 2; s < 6; s++)
		differ = differ || kf_task_dims(t, s)[1] != first[s - 1][1];
	CHECK(differ);
	/* The same seed, the same sets: the worker can be told them. */
	CHECK(kf_task_draw_hidden(t, 12345, &err) == 0);
	CHECK(kf_task_dims(t, 2)[1] == first[1][1]);
	kf_task_free(t);

	/* multiple_of, a fixed value and hidden_sets. */
	char *spec =
	    with(RANGE_SPEC, "'hidden': {'B': [1, 64], 'N': [1, 4097]}",
		 "'hidden': {'B': 7, 'N': {'range': [3, 100], "
		 "'multiple_of': 4}}, 'hidden_sets': 5");
	t = load_ok("red/rows", spec);
	free(spec);
	CHECK(kf_task_draw_hidden(t, 7, &err) == 0);
	CHECK(t->n_dimsets == 6);
	/* Five sets: the last two are the large power of two and the top. */
	CHECK(kf_task_dims(t, 4)[1] % 64 == 0);
	CHECK(kf_task_dims(t, 5)[1] >= 96);
	for (int s = 1; s < t->n_dimsets; s++) {
		const int64_t *v = kf_task_dims(t, s);
		CHECK(v[0] == 7 && v[1] % 4 == 0 && v[1] >= 4 && v[1] <= 100);
	}
	/* A set given by the supervisor is checked like any other. */
	int64_t bad_set[2] = {7, 0}, good_set[2] = {7, 8};
	CHECK(kf_task_add_dimset(t, good_set, &err) == 0);
	CHECK(kf_task_add_dimset(t, bad_set, &err) == KF_EINVAL);
	kf_task_free(t);
}

/* True when v (of a range [lo, hi]) lies in the range's top 2 %. */
static bool in_top(int64_t v, int64_t lo, int64_t hi)
{
	return (double)v >= (double)hi - 0.02 * (double)(hi - lo);
}

/* Over 200 evaluations' draws, every evaluation meets, in each dimension
 * whose range allows it, a multiple of 128 other than the timing value,
 * a value in the top 2 % of the range, and sizes of every class of
 * residues mod 16 a vector loop's tail meets; the ranges' cost stays theirs
 * (no set leaves its ranges). */
static void test_task_every_evaluation_draws_large_powers_of_two_and_tops(void)
{
	static const char *const specs[] = {
	    RANGE_SPEC,
	    "{'description': 'd', 'dims': {'M': 4096, 'N': 4096, 'K': 4096},"
	    " 'hidden': {'M': [1, 300], 'N': [1, 4099], 'K': [5, 100000]},"
	    " 'inputs': [{'name': 'a', 'dtype': 'float32', 'shape': ['M', "
	    "'K']}, {'name': 'b', 'dtype': 'float32', 'shape': ['K', 'N']}],"
	    " 'outputs': [{'name': 'c', 'dtype': 'float32', 'shape': ['M', "
	    "'N']}], 'flops': '2*M*N*K', 'bytes': '4*(M*K+K*N+M*N)'}",
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct kf_task *t = load_ok("red/rows", specs[i]);
		struct kf_err err = KF_ERR_INIT;
		for (uint64_t seed = 1; seed <= 200; seed++) {
			CHECK(kf_task_draw_hidden(t, seed * 7919, &err) == 0);
			CHECK(t->n_dimsets == 10);
			for (int d = 0; d < t->n_dims; d++) {
				int64_t lo = t->hidden_ranges[d].lo;
				int64_t hi = t->hidden_ranges[d].hi;
				int64_t timing = kf_task_dims(t, 0)[d];
				bool p2 = false, top = false;
				int residues = 0; /* bit r: some v % 16 == r */
				for (int s = 1; s < t->n_dimsets; s++) {
					int64_t v = kf_task_dims(t, s)[d];
					CHECK(v >= lo && v <= hi);
					residues |= 1 << (v % 16);
					p2 =
					    p2 || (v % 128 == 0 && v != timing);
					top = top || (in_top(v, lo, hi) &&
						      v != timing);
				}
				bool p2_possible = hi / 128 > 1 ||
						   (hi >= 128 && timing != 128);
				CHECK_MSG(p2 || !p2_possible,
					  "spec %zu seed %llu: no multiple of "
					  "128 in %s",
					  i, (unsigned long long)seed,
					  t->dim_names[d]);
				CHECK_MSG(top,
					  "spec %zu seed %llu: nothing in the "
					  "top 2%% of %s",
					  i, (unsigned long long)seed,
					  t->dim_names[d]);
				/* 2, 4 and 8 times an odd number: N % 4 ==
				 * 2, N % 8 == 4, N % 16 == 8, wherever the
				 * range holds them (all ranges here do). */
				bool two = residues & (1 << 2 | 1 << 6 |
						       1 << 10 | 1 << 14);
				bool four = residues & (1 << 4 | 1 << 12);
				bool eight = residues & (1 << 8);
				CHECK_MSG(two && four && eight,
					  "spec %zu seed %llu: %s misses a "
					  "class of even sizes (%#x)",
					  i, (unsigned long long)seed,
					  t->dim_names[d], residues);
				/* And odd ones: one short of 16 (N % 16 ==
				 * 15) and N % 8 == 3 or 5. */
				bool short16 = residues & (1 << 15);
				bool mid8 = residues & (1 << 3 | 1 << 5 |
							1 << 11 | 1 << 13);
				CHECK_MSG(short16 && mid8,
					  "spec %zu seed %llu: %s misses a "
					  "class of odd sizes (%#x)",
					  i, (unsigned long long)seed,
					  t->dim_names[d], residues);
			}
		}
		kf_task_free(t);
	}
}

static void test_task_rejects_bad_hidden_ranges(void)
{
	static const struct {
		const char *to, *field, *why;
	} cases[] = {
	    {"'hidden': {'B': [5, 1], 'N': [1, 4097]}",
	     "hidden.B: ", "low (5) must not exceed high (1)"},
	    {"'hidden': {'B': [1, 64], 'N': {'range': [1, 7], "
	     "'multiple_of': 8}}",
	     "hidden.N: ", "no multiple of 8 in [1, 7]"},
	    {"'hidden': {'B': [1, 64], 'N': [0, 7]}",
	     "hidden.N: ", "must be positive integers"},
	    {"'hidden': {'B': [1, 64], 'N': 'many'}",
	     "hidden.N: ", "must be [low, high]"},
	    {"'hidden': {'B': [1, 64]}",
	     "hidden: ", "dimension 'N' is missing"},
	    {"'hidden': {'B': [1, 64], 'N': [1, 9], 'K': [1, 2]}",
	     "hidden.K: ", "not a dimension of dims"},
	    {"'hidden': {'B': 64, 'N': 4096}",
	     "hidden: ", "every range holds only the timing dims"},
	    {"'hidden': {'B': [1, 64], 'N': {'range': [1, 9], 'step': 2}}",
	     "hidden.N.step: ", "unknown key"},
	    {"'hidden': {'B': [1, 64], 'N': [1, 9]}, 'hidden_sets': 0",
	     "hidden_sets: ", "must be an integer in [1, "},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *spec =
		    with(RANGE_SPEC, "'hidden': {'B': [1, 64], 'N': [1, 4097]}",
			 cases[i].to);
		expect_error(spec, cases[i].field, cases[i].why);
		free(spec);
	}
	/* Every corner of the ranges is checked at load: N-5 is not a size
	 * at N = 1. */
	char *spec = with(RANGE_SPEC, "'shape': ['B']", "'shape': ['N-5']");
	expect_error(spec, "outputs[0].shape[0]: ",
		     "'N-5' is -4 under hidden (B=1 N=1)");
	free(spec);
	/* And sets drawn at load: N/2 needs an even N (multiple_of 2). */
	spec = with(RANGE_SPEC, "'shape': ['B']", "'shape': ['N/2']");
	spec = with(spec, "'N': [1, 4097]", "'N': [2, 4098]");
	expect_error(spec, "outputs[0].shape[0]: ", "under hidden (");
	free(spec);
	spec = with(RANGE_SPEC, "'shape': ['B']", "'shape': ['N/2']");
	char *even = with(spec, "'N': [1, 4097]",
			  "'N': {'range': [2, 4098], 'multiple_of': 2}");
	kf_task_free(load_ok("red/rows", even));
	free(even);
	free(spec);
	/* Neither ranges nor fixed sets. */
	spec =
	    with(RANGE_SPEC, "'hidden': {'B': [1, 64], 'N': [1, 4097]},", "");
	expect_error(spec, "hidden: ", "required field is missing");
	free(spec);
}

static void test_task_stress_distributions(void)
{
	const char *spec =
	    HEAD "'inputs': [{'name': 'x', 'dtype': 'float32', 'shape': ['N'],"
		 " 'dist': [{'kind': 'large', 'scale': 50, 'mean': 7},"
		 " 'denormal', {'kind': 'ties', 'levels': 3},"
		 " {'kind': 'negative', 'max': -100}, {'kind': 'zeros',"
		 " 'fraction': 0.25}]},"
		 " {'name': 'h', 'dtype': 'float16', 'shape': ['N'],"
		 " 'dist': 'denormal'}]" TAIL;
	struct kf_task *t = load_ok("stress/all", spec);
	const struct kf_tensor_spec *x = &t->inputs[0];
	CHECK(x->n_dists == 5);
	CHECK_STR(kf_dist_name(x->dists[0].kind), "large");
	CHECK_STR(kf_dist_name(x->dists[1].kind), "denormal");
	CHECK_STR(kf_dist_name(x->dists[2].kind), "ties");
	CHECK_STR(kf_dist_name(x->dists[3].kind), "negative");
	CHECK_STR(kf_dist_name(x->dists[4].kind), "zeros");
	double p[2];
	kf_dist_params(t, &x->dists[0], 0, p);
	CHECK(p[0] == 50 && p[1] == 7);
	/* denormal defaults to the dtype's subnormal exponents. */
	kf_dist_params(t, &x->dists[1], 0, p);
	CHECK(p[0] == -149 && p[1] == -127);
	kf_dist_params(t, &t->inputs[1].dists[0], 0, p);
	CHECK(p[0] == -24 && p[1] == -15);
	kf_dist_params(t, &x->dists[3], 0, p);
	CHECK(p[0] == 1 && p[1] == -100);
	/* The values, from the counter-based generator. */
	int subnormal = 0, zeros = 0, levels_seen[3] = {0};
	for (int k = 0; k < 4000; k++) {
		struct kf_fill f = {42, 0, KF_DIST_DENORMAL, {0, 0}, 0};
		kf_dist_params(t, &x->dists[1], 0, f.p);
		float v = (float)kf_rng_value(&f, (uint64_t)k);
		subnormal += fpclassify(v) == FP_SUBNORMAL;
		f.kind = KF_DIST_TIES;
		kf_dist_params(t, &x->dists[2], 0, f.p);
		double tv = kf_rng_value(&f, (uint64_t)k);
		CHECK(tv == -1 || tv == 0 || tv == 1);
		levels_seen[(int)tv + 1]++;
		f.kind = KF_DIST_NEGATIVE;
		kf_dist_params(t, &x->dists[3], 0, f.p);
		CHECK(kf_rng_value(&f, (uint64_t)k) <= -100);
		f.kind = KF_DIST_ZEROS;
		kf_dist_params(t, &x->dists[4], 0, f.p);
		zeros += kf_rng_value(&f, (uint64_t)k) == 0;
	}
	CHECK_MSG(subnormal > 1800 && subnormal < 2200, "%d subnormal",
		  subnormal);
	CHECK_MSG(zeros > 800 && zeros < 1200, "%d zeros", zeros);
	CHECK(levels_seen[0] > 1000 && levels_seen[1] > 1000 &&
	      levels_seen[2] > 1000);
	kf_task_free(t);

	static const struct {
		const char *dist, *why;
	} bad[] = {
	    {"{'kind': 'large', 'scale': 0}", "scale (0) must be positive"},
	    {"{'kind': 'denormal', 'min_exp2': -100, 'max_exp2': -140}",
	     "min_exp2 (-100) must not exceed max_exp2 (-140)"},
	    {"{'kind': 'ties', 'levels': 2.5}",
	     "levels (2.5) must be an integer in [1, 2^24]"},
	    {"{'kind': 'negative', 'scale': -1}",
	     "scale (-1) must be positive"},
	    {"{'kind': 'zeros', 'fraction': 1.5}",
	     "fraction (1.5) must lie in [0, 1]"},
	    {"{'kind': 'ties', 'width': 2}", "unknown key"},
	    {"'spiky'", "expected normal, uniform, heavy, wide, int, const, "
			"large, denormal, ties, negative, zeros, bits"},
	    {"{'kind': 'bits', 'scale': 2}", "(expected kind)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *s2 = kf_xasprintf(HEAD "'inputs': [{'name': 'x', 'dtype':"
					     " 'float32', 'shape': ['N'],"
					     " 'dist': %s}]" TAIL,
					bad[i].dist);
		expect_error(s2, "inputs[0].dist", bad[i].why);
		free(s2);
	}
	/* Stress kinds fill float tensors only. */
	expect_error(HEAD "'inputs': [{'name': 'i', 'dtype': 'int32', "
			  "'shape': ['N'], 'dist': 'ties'}]" TAIL,
		     "inputs[0].dist", "'ties' cannot fill an integer tensor");
	expect_error(HEAD "'inputs': [{'name': 'i', 'dtype': 'int32', "
			  "'shape': ['N'], 'dist': 'bits'}]" TAIL,
		     "inputs[0].dist", "'bits' cannot fill an integer tensor");
}

static void test_task_rejects_duplicate_tensor_names(void)
{
	char *spec = with(GOOD_SPEC, "'name': 'b'", "'name': 'x'");
	expect_error(spec, "inputs[1].name: ",
		     "duplicate tensor name 'x' (also inputs[0])");
	free(spec);
	/* Inputs and outputs share one namespace. */
	spec = with(GOOD_SPEC, "'name': 'y'", "'name': 'b'");
	expect_error(spec, "outputs[0].name: ",
		     "duplicate tensor name 'b' (also inputs[1])");
	free(spec);
}

static void test_task_rejects_name_mismatch(void)
{
	char *spec = with(GOOD_SPEC, "'name': 'gelu'", "'name': 'relu'");
	expect_error(spec, ": name: ",
		     "'relu' does not match the directory name 'gelu' "
		     "(rename the directory or set \"name\": \"gelu\")");
	/* A copied task with another error says both, that one first. */
	char *spec2 = with(spec, "'dtype': 'float32'", "'dtype': 'float33'");
	expect_error(spec2, "unknown dtype 'float33'",
		     "; and ");
	expect_error(spec2, "dtype", "'relu' does not match the directory "
				     "name 'gelu'");
	free(spec2);
	free(spec);
	/* Without "name", the directory names the task. */
	spec = with(GOOD_SPEC, "'name': 'gelu', ", "");
	struct kf_task *t = load_ok("act/silu", spec);
	CHECK_STR(t->name, "silu");
	CHECK_STR(t->id, "act/silu");
	kf_task_free(t);
	free(spec);
}

static void test_task_tolerance_and_options(void)
{
	char *spec = with(GOOD_SPEC, "'flops'",
			  "'tolerance': {'float32': {'atol': 1e-3},"
			  " 'int32': {'atol': 1, 'rtol': 0}},"
			  " 'libraries': ['m', 'cublas'],"
			  " 'determinism': 'tolerance',"
			  " 'call_timeout_ms': 500, 'flops'");
	struct kf_task *t = load_ok("act/gelu", spec);
	/* An override of atol keeps the default rtol. */
	CHECK(t->tol[KF_F32].atol == 1e-3 && t->tol[KF_F32].rtol == 1e-4);
	CHECK(t->tol[KF_I32].atol == 1 && t->tol[KF_I32].rtol == 0);
	CHECK(t->tol[KF_F64].atol == 1e-9);
	CHECK(t->n_libraries == 2);
	CHECK_STR(t->libraries[0], "m");
	CHECK_STR(t->libraries[1], "cublas");
	CHECK(!t->determinism_bitwise);
	CHECK(t->call_timeout_ms == 500);
	kf_task_free(t);
	free(spec);

	spec = with(GOOD_SPEC, "'flops'",
		    "'tolerance': {'float32': {'atol': -1}}, 'flops'");
	expect_error(spec, "tolerance.float32.atol: ",
		     "must be a finite number >= 0, got -1");
	free(spec);
	spec = with(GOOD_SPEC, "'flops'",
		    "'tolerance': {'float16': {'rtol': 'big'}}, 'flops'");
	expect_error(
	    spec, "tolerance.float16.rtol: ", "must be a number, got string");
	free(spec);
}

static void test_task_rejects_nonfinite_counts(void)
{
	char *spec = with(GOOD_SPEC, "'8*M*N'", "'8*M*N/(N-77)'");
	/* Finite for the timing dims, infinite for the second hidden set. */
	expect_error(spec,
		     "flops: '8*M*N/(N-77)' is inf under hidden_dims[1] "
		     "(M=5 N=77)",
		     "it must be a finite number");
	free(spec);
	spec = with(GOOD_SPEC, "'4*(2*M*N + N)'", "'N-1000'");
	expect_error(spec, "bytes: 'N-1000' is -923 under hidden_dims[1]",
		     "it must not be negative");
	free(spec);
	spec = with(GOOD_SPEC, "'8*M*N'", "'1/0'");
	expect_error(spec, "flops: '1/0' is inf; it must be a finite number",
		     NULL);
	free(spec);
}

static void test_task_rejects_bad_json_and_oversized(void)
{
	expect_error("{'description': 'd',\n 'dims': {'N': 8,}\n}",
		     "invalid JSON at line 2", NULL);
	expect_error("", "invalid JSON at line 1", NULL);

	/* A task.json over 1 MiB is refused before it is parsed. */
	char *dir = write_task("big/spec", GOOD_SPEC);
	char *path = kf_xasprintf("%s/task.json", dir);
	FILE *f = fopen(path, "a");
	CHECK(f);
	for (int i = 0; i < (1 << 20) / 64 + 1; i++)
		fputs("                                                 "
		      "              \n",
		      f);
	CHECK(fclose(f) == 0);
	struct kf_task *t = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_task_load(dir, &t, &err) == KF_ERANGE);
	CHECK(t == NULL);
	CHECK_CONTAINS(err.msg, path);
	CHECK_CONTAINS(err.msg, "1 MiB");
	free(path);
	free(dir);
}

static void test_task_find_sorted(void)
{
	const char *tmp = kf_test_tmpdir();
	free(write_task("tasks/b/x", ANON_SPEC));
	free(write_task("tasks/a/z", ANON_SPEC));
	free(write_task("tasks/a/y", ANON_SPEC));
	free(write_task("tasks/a-b/w", ANON_SPEC));
	/* Not tasks: too shallow, too deep, without task.json, hidden. */
	free(write_task("tasks/top", ANON_SPEC));
	free(write_task("tasks/c/d/e", ANON_SPEC));
	free(write_task("tasks/.git/q", ANON_SPEC));
	char *p = kf_xasprintf("%s/tasks/a/nospec", tmp);
	mkdir_p(p);
	free(p);
	p = kf_xasprintf("%s/tasks/readme.md", tmp);
	write_file(p, "not a suite");
	free(p);

	char *root = kf_xasprintf("%s/tasks", tmp);
	char **found = NULL;
	int n = -1;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_task_find(root, &found, &n, &err) == 0, "%s", err.msg);
	CHECK_MSG(n == 4, "found %d", n);
	static const char *const want[] = {"a/y", "a/z", "a-b/w", "b/x"};
	for (int i = 0; i < 4; i++) {
		char *w = kf_xasprintf("%s/%s", root, want[i]);
		CHECK_STR(found[i], w);
		free(w);
		free(found[i]);
	}
	free(found);

	/* Found paths load as they are. */
	char *slash = kf_xasprintf("%s/", root);
	CHECK(kf_task_find(slash, &found, &n, &err) == 0 && n == 4);
	struct kf_task *t = NULL;
	CHECK_MSG(kf_task_load(found[3], &t, &err) == 0, "%s", err.msg);
	CHECK_STR(t->id, "b/x");
	kf_task_free(t);
	for (int i = 0; i < n; i++)
		free(found[i]);
	free(found);
	free(slash);

	char *none = kf_xasprintf("%s/missing", tmp);
	CHECK(kf_task_find(none, &found, &n, &err) == KF_ENOENT);
	CHECK_CONTAINS(err.msg, none);
	CHECK(found == NULL && n == 0);
	free(none);
	free(root);
}

static void test_task_reference_paths(void)
{
	struct kf_task *t = load_ok("act/gelu", GOOD_SPEC);
	char *c = kf_xasprintf("%s/reference.c", t->dir);
	write_file(c, "int kf_entry(void);\n");
	struct kf_err err = KF_ERR_INIT;
	char *got = kf_task_reference(t, "host", &err);
	CHECK_MSG(got, "%s", err.msg);
	CHECK_STR(got, c);
	free(got);

	CHECK(kf_task_reference(t, "cuda", &err) == NULL);
	CHECK(err.code == KF_ENOENT);
	CHECK_CONTAINS(err.msg, "act/gelu/reference.cu");
	CHECK_CONTAINS(err.msg, "cuda");
	CHECK(kf_task_reference(t, "metal", &err) == NULL);
	CHECK_CONTAINS(err.msg, "unknown backend 'metal'");
	free(c);
	kf_task_free(t);
}

static void test_task_cuda_dims_replace_timing_dims_on_cuda(void)
{
	struct kf_task *t =
	    load_ok("big/gpu", HEAD
		    "'cuda_dims': {'N': 4096}, 'cuda_libraries': ['cublas'],"
		    " 'inputs': [{'name': 'x', 'dtype': 'float32', 'shape': "
		    "['N']}]" TAIL);
	CHECK(t->n_dimsets == 3); /* cuda_dims is not a hidden set */
	CHECK(kf_task_dims(t, 0)[0] == 8);
	CHECK(t->n_cuda_libraries == 1);
	CHECK(t->cuda_arch == NULL);
	CHECK_STR(t->cuda_libraries[0], "cublas");
	kf_task_select_backend(t, "host");
	CHECK(kf_task_dims(t, 0)[0] == 8);
	kf_task_select_backend(t, "cuda");
	CHECK(kf_task_dims(t, 0)[0] == 4096);
	CHECK(kf_task_flops(t, 0) == 4096);
	kf_task_select_backend(t, "cuda"); /* once only */
	CHECK(kf_task_dims(t, 0)[0] == 4096);
	CHECK(kf_task_dims(t, 1)[0] == 3 && kf_task_dims(t, 2)[0] == 7);
	kf_task_free(t);
}

static void test_task_rejects_bad_cuda_dims(void)
{
	const char *in = " 'inputs': [{'name': 'x', 'dtype': 'float32', "
			 "'shape': ['N']}]" TAIL;
	char *spec = kf_xasprintf(HEAD "'cuda_dims': {'N': 3},%s", in);
	expect_error(spec, "cuda_dims", "the same as hidden_dims[0]");
	free(spec);
	spec = kf_xasprintf(HEAD "'cuda_dims': {'M': 3},%s", in);
	expect_error(spec, "cuda_dims.M", "not a dimension");
	free(spec);
	spec = kf_xasprintf(HEAD "'cuda_dims': {'N': -1},%s", in);
	expect_error(spec, "cuda_dims.N", "positive integer");
	free(spec);
	spec = kf_xasprintf(HEAD "'cuda_arch': 'compute_90',%s", in);
	expect_error(spec, "cuda_arch", "sm_90a");
	free(spec);
}

KF_TESTS(task) = {
    KF_TEST(test_task_cuda_dims_replace_timing_dims_on_cuda),
    KF_TEST(test_task_rejects_bad_cuda_dims),
    KF_TEST(test_task_load_valid_spec),
    KF_TEST(test_task_load_accepts_file_path_and_trailing_slash),
    KF_TEST(test_task_id_from_dot_and_symlinked_suite),
    KF_TEST(test_task_expr_precedence),
    KF_TEST(test_task_expr_functions),
    KF_TEST(test_task_expr_errors),
    KF_TEST(test_task_dtype_names),
    KF_TEST(test_task_rejects_unknown_dtype),
    KF_TEST(test_task_rejects_unknown_keys),
    KF_TEST(test_task_rejects_missing_fields),
    KF_TEST(test_task_rejects_wrong_types),
    KF_TEST(test_task_rejects_bad_hidden_dims),
    KF_TEST(test_task_hidden_sets_drawn_from_ranges),
    KF_TEST(test_task_every_evaluation_draws_large_powers_of_two_and_tops),
    KF_TEST(test_task_rejects_bad_hidden_ranges),
    KF_TEST(test_task_stress_distributions),
    KF_TEST(test_task_shapes_under_hidden_sets),
    KF_TEST(test_task_rejects_bad_shape_in_hidden_set),
    KF_TEST(test_task_dist_parsing),
    KF_TEST(test_task_rejects_bad_dists),
    KF_TEST(test_task_rejects_duplicate_tensor_names),
    KF_TEST(test_task_rejects_name_mismatch),
    KF_TEST(test_task_tolerance_and_options),
    KF_TEST(test_task_rejects_nonfinite_counts),
    KF_TEST(test_task_rejects_bad_json_and_oversized),
    KF_TEST(test_task_find_sorted),
    KF_TEST(test_task_reference_paths),
    KF_TESTS_END,
};
