/*
 * attention_test.c: the attention family (docs/attention.md): its tasks
 * load and are listed, their naive and generated host candidates pass,
 * the shipped generated candidates are what the generator writes now,
 * every refusal of the spec checker names the file and the field, and
 * every shipped spec's CUDA candidate (and every task's CUDA reference)
 * compiles with nvcc where nvcc is installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/attention.h>
#include <kforge/base.h>
#include <kforge/compile.h>
#include <kforge/eval.h>
#include <kforge/task.h>

#include "harness.h"

static const char *const variants[] = {
    "causal", "sliding_window", "gqa",	  "alibi",
    "softcap", "prefix_lm",	"varlen", "paged_decode"};
#define N_VARIANTS (int)(sizeof(variants) / sizeof(*variants))

/* Every shipped spec, with the task it targets. */
static const char *const specs[][2] = {
    {"causal", "causal"},	  {"causal_expr", "causal"},
    {"sliding_window", "sliding_window"}, {"gqa", "gqa"},
    {"alibi", "alibi"},		  {"softcap", "softcap"},
    {"prefix_lm", "prefix_lm"}, {"varlen", "varlen"},
    {"paged_decode", "paged_decode"}};
#define N_SPECS (int)(sizeof(specs) / sizeof(*specs))

static void use_tmp_cache(void)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", dir, 1);
	free(dir);
}

static char *task_dir(const char *v)
{
	return kf_xasprintf("tasks/attention/%s", v);
}

static char *spec_path(const char *s)
{
	return kf_xasprintf("tasks/attention/specs/%s.json", s);
}

/* The spec's candidate for backend, generated into the case's tmpdir. */
static char *generate(const char *spec, const char *backend)
{
	char *p = spec_path(spec);
	struct kf_attn_spec *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_attn_spec_load(p, &s, &err) == 0, "%s", err.msg);
	char *src = kf_attn_generate(s, backend);
	CHECK(src);
	char *name = kf_xasprintf("%s.%s", spec,
				  strcmp(backend, "cuda") ? "c" : "cu");
	char *out = kf_path_join(kf_test_tmpdir(), name);
	kf_test_write_text(out, src);
	free(name);
	free(src);
	free(p);
	kf_attn_spec_free(s);
	return out;
}

/* Checks only, on the host: the candidate's status must be ok. */
static void eval_ok(const char *task, const char *cand)
{
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 7;
	o.no_timing = true;
	o.include_dir = "include";
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	CHECK_MSG(kf_eval(task, cand, &o, &res, &err) == 0, "%s: %s", cand,
		  err.msg);
	const char *st = kf_json_str(res, "status");
	const char *why = kf_json_str(res, "reason");
	CHECK_MSG(st && !strcmp(st, "ok"), "%s on %s: %s (%s)", cand, task,
		  st ? st : "?", why ? why : "");
	cJSON_Delete(res);
}

static void test_attention_tasks_load_and_are_listed(void)
{
	for (int i = 0; i < N_VARIANTS; i++) {
		char *d = task_dir(variants[i]);
		struct kf_task *t = NULL;
		struct kf_err err = KF_ERR_INIT;
		CHECK_MSG(kf_task_load(d, &t, &err) == 0, "%s", err.msg);
		for (int k = 0; k < 2; k++) {
			char *ref = kf_task_reference(
			    t, k ? "cuda" : "host", &err);
			CHECK_MSG(ref && kf_file_exists(ref), "%s", err.msg);
			free(ref);
		}
		kf_task_free(t);
		free(d);
	}
	const char *args[] = {"tasks", NULL};
	int code = 0;
	char *out = kf_test_kforge(args, 60000, 1 << 20, &code);
	CHECK_MSG(code == 0, "%s", out);
	for (int i = 0; i < N_VARIANTS; i++) {
		char *id = kf_xasprintf("attention/%s ", variants[i]);
		CHECK_CONTAINS(out, id);
		free(id);
	}
	free(out);
}

static void naive_host_ok(const char *v)
{
	use_tmp_cache();
	char *d = task_dir(v);
	char *c = kf_xasprintf("%s/candidates/naive.c", d);
	eval_ok(d, c);
	free(c);
	free(d);
}

static void generated_host_ok(const char *spec, const char *v)
{
	use_tmp_cache();
	char *d = task_dir(v);
	char *c = generate(spec, "host");
	eval_ok(d, c);
	free(c);
	free(d);
}

#define VARIANT_TESTS(v)                                                       \
	static void test_attention_##v##_naive_host_ok(void)                   \
	{                                                                      \
		naive_host_ok(#v);                                             \
	}                                                                      \
	static void test_attention_##v##_generated_host_ok(void)               \
	{                                                                      \
		generated_host_ok(#v, #v);                                     \
	}
VARIANT_TESTS(causal)
VARIANT_TESTS(sliding_window)
VARIANT_TESTS(gqa)
VARIANT_TESTS(alibi)
VARIANT_TESTS(softcap)
VARIANT_TESTS(prefix_lm)
VARIANT_TESTS(varlen)
VARIANT_TESTS(paged_decode)

static void test_attention_causal_expr_generated_host_ok(void)
{
	generated_host_ok("causal_expr", "causal");
}

/* A mask one key too wide is caught: the checks are not blind to the
 * variants' masks. */
static void test_attention_wrong_mask_is_wrong_answer(void)
{
	use_tmp_cache();
	char *c = generate("causal", "host");
	char *src = kf_test_read_text(c);
	char *at = strstr(src, "return kv <= q;");
	CHECK(at);
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_add(&sb, src, (size_t)(at - src));
	kf_strbuf_addstr(&sb, "return kv <= q + 1;");
	kf_strbuf_addstr(&sb, at + strlen("return kv <= q;"));
	kf_test_write_text(c, kf_strbuf_str(&sb));
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 7;
	o.no_timing = true;
	o.include_dir = "include";
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	CHECK_MSG(kf_eval("tasks/attention/causal", c, &o, &res, &err) == 0,
		  "%s", err.msg);
	CHECK_STR(kf_json_str(res, "status"), "wrong_answer");
	cJSON_Delete(res);
	kf_strbuf_release(&sb);
	free(src);
	free(c);
}

/* The candidates shipped in each task are the generator's output today. */
static void test_attention_shipped_candidates_are_current(void)
{
	for (int i = 0; i < N_SPECS; i++) {
		const char *suffix =
		    strcmp(specs[i][0], specs[i][1]) ? "_expr" : "";
		for (int k = 0; k < 2; k++) {
			const char *be = k ? "cuda" : "host";
			char *gen = generate(specs[i][0], be);
			char *want = kf_test_read_text(gen);
			char *shipped = kf_xasprintf(
			    "tasks/attention/%s/candidates/generated%s.%s",
			    specs[i][1], suffix, k ? "cu" : "c");
			char *have = kf_test_read_text(shipped);
			CHECK_MSG(!strcmp(want, have),
				  "%s is not what kforge attention gen %s "
				  "writes now: regenerate it",
				  shipped, specs[i][0]);
			free(have);
			free(shipped);
			free(want);
			free(gen);
		}
	}
}

/* Each spec refused, with the file and field its message must name. */
static const struct {
	const char *json;
	const char *want;
} refusals[] = {
    {"{\"dtype\": \"float16\", \"head_dim\": 96, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}}",
     "bad.json: head_dim: 96 is not supported"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 12, "
     "\"n_kv_heads\": 5}}",
     "bad.json: heads: n_heads (12) is not a multiple of n_kv_heads (5)"},
    {"{\"dtype\": \"float32\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}}",
     "bad.json: dtype: must be \"float16\" or \"bfloat16\""},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score * qidx\"}",
     "bad.json: score_mod: unknown identifier 'qidx'"},
    /* Strings the generated source carries: nothing that ends its
     * comment (a blind round's spec wrote #error lines into the kernel). */
    {"{\"name\": \"x */ #error injected /*\", \"dtype\": \"float16\", "
     "\"head_dim\": 64, \"heads\": {\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: name: must be 1 to 64 letters, digits"},
    {"{\"task\": \"attention/x\\n#define a b\", \"dtype\": \"float16\", "
     "\"head_dim\": 64, \"heads\": {\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: task: must be a task id"},
    /* A number the checker holds in double but the kernel's float
     * cannot (1e308f is inf: NaN everywhere). */
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": "
     "8, \"n_kv_heads\": 8}, \"params\": {\"cap\": 1e308}, "
     "\"score_mod\": \"score * cap\"}",
     "bad.json: params.cap: must be a finite number a float holds"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"softplus(score)\"}",
     "bad.json: score_mod: unknown function 'softplus'"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score - alibi_slope(h + 1)\"}",
     "bad.json: score_mod: alibi_slope's head index is 8, out of range [0, "
     "n_heads)"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"kv_idx <= q_idx + 1\", "
     "\"causal\": true}}",
     "bad.json: mask.expr: the mask is declared causal but keeps kv_idx=1 "
     "for q_idx=0"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"score > 0\"}}",
     "bad.json: mask.expr: unknown identifier 'score'"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"q_idx - kv_idx\"}}",
     "bad.json: mask.expr: a mask must be a condition"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score + (q_idx > kv_idx)\"}",
     "bad.json: score_mod: '+' needs numbers, got a condition"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score / (q_idx % (kv_idx - "
     "kv_idx))\"}",
     "bad.json: score_mod: integer modulo by zero"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"tanh(score, 2)\"}",
     "bad.json: score_mod: tanh takes 1 argument, got 2"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score * (2\"}",
     "bad.json: score_mod: expected ')' at column 11"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": \"bidirectional\"}",
     "bad.json: mask: unknown mask 'bidirectional'"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"layout\": {\"kind\": \"paged\", \"block_size\": "
     "12}}",
     "bad.json: layout.block_size: 12 is not a power of two"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"window\": 4}",
     "bad.json: window: unknown key"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"params\": {\"h\": 2}}",
     "bad.json: params.h: 'h' is a built-in name"},
    {"{\"dtype\": \"float16\", \"heads\": {\"n_heads\": 8, \"n_kv_heads\": "
     "8}}",
     "bad.json: head_dim: required field is missing"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64,", "bad.json: invalid JSON"},
};

static void test_attention_spec_refusals_name_file_and_field(void)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(*refusals); i++) {
		struct kf_attn_spec *s = NULL;
		struct kf_err err = KF_ERR_INIT;
		int rc = kf_attn_spec_parse(refusals[i].json, "bad.json", &s,
					    &err);
		CHECK_MSG(rc == KF_EINVAL && !s, "refusal %zu was accepted", i);
		CHECK_CONTAINS(err.msg, refusals[i].want);
	}
}

/* The CLI: check and gen on a refused spec exit 1 with the error; gen
 * writes to stdout without -o. */
static void test_attention_cli_check_and_gen(void)
{
	char *bad = kf_path_join(kf_test_tmpdir(), "bad.json");
	kf_test_write_text(bad, refusals[1].json);
	const char *chk[] = {"attention", "check", bad, NULL};
	int code = 0;
	char *out = kf_test_kforge(chk, 30000, 1 << 16, &code);
	CHECK(code == 1);
	CHECK_CONTAINS(out, "bad.json: heads: n_heads (12)");
	free(out);
	const char *gen[] = {"attention", "gen", "tasks/attention/specs/alibi.json",
			     "--backend", "host", NULL};
	out = kf_test_kforge(gen, 30000, 1 << 20, &code);
	CHECK(code == 0);
	CHECK_CONTAINS(out, "kfa_alibi_slope(h, n_heads)");
	CHECK_CONTAINS(out, "int kf_entry(");
	free(out);
	const char *genbad[] = {"attention", "gen", bad, NULL};
	out = kf_test_kforge(genbad, 30000, 1 << 16, &code);
	CHECK(code == 1);
	free(out);
	free(bad);
}

static void compile_cuda_ok(const char *path)
{
	struct kf_compile_opts o = {0};
	o.backend = "cuda";
	o.include_dir = "include";
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_compile(path, &o, &r, &err) == 0, "%s", err.msg);
	CHECK_MSG(r.ok, "%s: %s", path, r.log ? r.log : "");
	kf_compile_result_release(&r);
}

static void need_nvcc(void)
{
	char *tc = kf_compile_toolchain("cuda");
	if (!tc)
		SKIP("nvcc not found");
	free(tc);
}

/* Every shipped spec's CUDA candidate compiles (sm_90a, as evaluations
 * compile it). */
static void test_attention_generated_cuda_compiles_with_nvcc(void)
{
	need_nvcc();
	use_tmp_cache();
	for (int i = 0; i < N_SPECS; i++) {
		char *c = generate(specs[i][0], "cuda");
		compile_cuda_ok(c);
		free(c);
	}
}

static void test_attention_cuda_references_compile_with_nvcc(void)
{
	need_nvcc();
	use_tmp_cache();
	for (int i = 0; i < N_VARIANTS; i++) {
		char *p = kf_xasprintf("tasks/attention/%s/reference.cu",
				       variants[i]);
		compile_cuda_ok(p);
		free(p);
	}
}

/* The KernelBench-format versions parse (they run where torch is: the
 * bench, docs/attention.md). */
static void test_attention_kernelbench_versions_parse(void)
{
	for (int i = 0; i < N_VARIANTS; i++) {
		char *cmd = kf_xasprintf(
		    "python3 -c 'import ast,sys; "
		    "t=ast.parse(open(sys.argv[1]).read()); "
		    "n={d.name for d in t.body if hasattr(d, \"name\")}; "
		    "sys.exit(0 if {\"Model\",\"get_inputs\","
		    "\"get_init_inputs\"} <= n else 3)' "
		    "tasks/attention/kernelbench/%d_%s.py 2>&1",
		    i + 1, variants[i]);
		int code = 0;
		char *out = kf_test_shell(cmd, &code);
		CHECK_MSG(code == 0, "%s: %s", cmd, out);
		free(out);
		free(cmd);
	}
}

#define VARIANT_ENTRIES(v)                                                     \
	KF_TEST(test_attention_##v##_naive_host_ok),                           \
	    KF_TEST(test_attention_##v##_generated_host_ok)

KF_TESTS(attention) = {
    KF_TEST(test_attention_tasks_load_and_are_listed),
    KF_TEST(test_attention_spec_refusals_name_file_and_field),
    KF_TEST(test_attention_cli_check_and_gen),
    KF_TEST(test_attention_kernelbench_versions_parse),
    KF_TEST(test_attention_shipped_candidates_are_current),
    VARIANT_ENTRIES(causal),
    VARIANT_ENTRIES(sliding_window),
    VARIANT_ENTRIES(gqa),
    VARIANT_ENTRIES(alibi),
    VARIANT_ENTRIES(softcap),
    VARIANT_ENTRIES(prefix_lm),
    VARIANT_ENTRIES(varlen),
    VARIANT_ENTRIES(paged_decode),
    KF_TEST(test_attention_causal_expr_generated_host_ok),
    KF_TEST(test_attention_wrong_mask_is_wrong_answer),
    KF_TEST(test_attention_generated_cuda_compiles_with_nvcc),
    KF_TEST(test_attention_cuda_references_compile_with_nvcc),
    KF_TESTS_END};
