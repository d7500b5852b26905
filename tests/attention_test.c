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

#include "../src/attention/attn_int.h"
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
    /* Integers that C leaves undefined: no value of them may leave 64
     * bits nor divide by 0 for any run-time b, h, q_idx, kv_idx,
     * n_heads (a blind round's INT_MIN / -1 and products crashed or
     * wrapped in the kernel while the checker's int64 agreed). */
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score + q_idx * q_idx * q_idx\"}",
     "bad.json: score_mod: integer overflow: 'q_idx * q_idx * q_idx' can "
     "leave the 64-bit integers (at run time b, h, q_idx and kv_idx may be "
     "any of [0, 2147483647] and n_heads any of [1, 2147483647]) at column "
     "23"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"params\": {\"n\": 2147483647}, \"score_mod\": "
     "\"score + n * n * (-n) * 0.5\"}",
     "bad.json: score_mod: integer overflow: 'n * n * (-n)'"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score + (q_idx * kv_idx * 2 + "
     "b * h * 2) / 3\"}",
     "bad.json: score_mod: integer overflow: '(q_idx * kv_idx * 2 + b * h "
     "* 2)' can leave the 64-bit integers"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"kv_idx * h * n_heads > "
     "q_idx\"}}",
     "bad.json: mask.expr: integer overflow: 'kv_idx * h * n_heads'"},
    /* a divisor 0 only past the check grid's positions */
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score + q_idx / (kv_idx - 64)\"}",
     "bad.json: score_mod: integer division by zero: the divisor '(kv_idx "
     "- 64)' can be 0 (it ranges over [-64, 2147483583]"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"q_idx % (h - 1) == 0\"}}",
     "bad.json: mask.expr: integer modulo by zero: the divisor '(h - 1)'"},
    /* no shifts or bit operators in the language */
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score + (q_idx << 31)\"}",
     "bad.json: score_mod: unexpected '<' at column 17"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"(kv_idx & 1) == 0\"}}",
     "bad.json: mask.expr: expected ')' at column 9"},
};

/*
 * NULs: cJSON decodes \u0000 inside a string and keeps no length, so
 * "float16\u0000x" read as "float16". Every string of a spec, key or
 * value, is refused with its field named.
 */
static const struct {
	const char *json;
	const char *want;
} nul_refusals[] = {
    {"{\"dtype\": \"float16\\u0000x\", \"head_dim\": 64, \"heads\": "
     "{\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: dtype: the string holds a NUL character (\\u0000)"},
    {"{\"name\": \"a\\u0000b\", \"dtype\": \"float16\", \"head_dim\": 64, "
     "\"heads\": {\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: name: the string holds a NUL"},
    {"{\"task\": \"attention/causal\\u0000\", \"dtype\": \"float16\", "
     "\"head_dim\": 64, \"heads\": {\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: task: the string holds a NUL"},
    {"{\"description\": \"x\\u0000\", \"dtype\": \"float16\", \"head_dim\": "
     "64, \"heads\": {\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: description: the string holds a NUL"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"layout\": \"varlen\\u0000\"}",
     "bad.json: layout: the string holds a NUL"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"layout\": {\"kind\": \"paged\\u0000\", "
     "\"block_size\": 16}}",
     "bad.json: layout.kind: the string holds a NUL"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": \"causal\\u0000\"}",
     "bad.json: mask: the string holds a NUL"},
    /* the expression the checker would have read is not the text */
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"mask\": {\"expr\": \"kv_idx <= q_idx\\u0000 || "
     "kv_idx > 0\", \"causal\": true}}",
     "bad.json: mask.expr: the string holds a NUL"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"score_mod\": \"score\\u0000 * 1e9\"}",
     "bad.json: score_mod: the string holds a NUL"},
    /* keys: "cap\u0000x" read as the param cap, "dtype\u0000" as dtype */
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
     "\"n_kv_heads\": 8}, \"params\": {\"cap\\u0000x\": 30}, \"score_mod\": "
     "\"score + cap\"}",
     "bad.json: params.cap\\u0000...: the key holds a NUL"},
    {"{\"dtype\\u0000\": \"float16\", \"head_dim\": 64, \"heads\": "
     "{\"n_heads\": 8, \"n_kv_heads\": 8}}",
     "bad.json: dtype\\u0000...: the key holds a NUL"},
    {"{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\\u0000\": "
     "8, \"n_kv_heads\": 8}}",
     "bad.json: heads.n_heads\\u0000...: the key holds a NUL"},
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

static void test_attention_spec_nul_in_strings_refused(void)
{
	for (size_t i = 0; i < sizeof(nul_refusals) / sizeof(*nul_refusals);
	     i++) {
		struct kf_attn_spec *s = NULL;
		struct kf_err err = KF_ERR_INIT;
		int rc = kf_attn_spec_parse(nul_refusals[i].json, "bad.json", &s,
					    &err);
		CHECK_MSG(rc == KF_EINVAL && !s, "NUL case %zu was accepted", i);
		CHECK_CONTAINS(err.msg, nul_refusals[i].want);
	}
	/* an escaped backslash before "u0000" is text, not a NUL */
	struct kf_attn_spec *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_attn_spec_parse(
		      "{\"description\": \"a \\\\u0000 \\\"q\\\" b\", \"dtype\": "
		      "\"float16\", \"head_dim\": 64, \"heads\": {\"n_heads\": 8, "
		      "\"n_kv_heads\": 8}}",
		      "ok.json", &s, &err) == 0,
		  "%s", err.msg);
	kf_attn_spec_free(s);
	/* a NUL byte in the file would end the text the parser reads */
	char *path = kf_path_join(kf_test_tmpdir(), "nul.json");
	static const char bytes[] =
	    "{\"dtype\": \"float16\", \"head_dim\": 64, \"heads\": "
	    "{\"n_heads\": 8, \"n_kv_heads\": 8}}\n\0{\"mask\": \"x\"}";
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(bytes, 1, sizeof(bytes) - 1, f) == sizeof(bytes) - 1);
	fclose(f);
	s = NULL;
	CHECK(kf_attn_spec_load(path, &s, &err) == KF_EINVAL && !s);
	CHECK_CONTAINS(err.msg, "nul.json: a NUL byte at line 2, column 1");
	free(path);
}

/*
 * Integer expressions mean their mathematical values (docs/attention.md):
 * where 32 bits cannot hold a value the kernel computes in 64. Each
 * expression below, with C's undefined cases at 32 bits (INT_MIN / -1,
 * INT_MIN % -1, -INT_MIN, abs(INT_MIN), products and sums past 2^31),
 * is accepted, emitted as the generator writes it into the host kernel,
 * compiled under UBSan (any undefined operation ends the program) and
 * run at the extremes of every variable's run-time range: each value
 * printed must be the checker's evaluator's.
 */
static const char *const exact_exprs[] = {
    "(-2147483647 - 1) / -1",
    "(-2147483647 - 1) % -1",
    "abs(-2147483647 - 1)",
    "-(-2147483647 - 1)",
    "(q_idx - 2147483647 - 1) / -1 % 7",
    "(q_idx - 2147483647 - 1) % -1 + abs(kv_idx - 2147483647 - 1)",
    "-(q_idx - 2147483647 - 1) - abs(q_idx - kv_idx)",
    "q_idx * kv_idx - b * h",
    "q_idx + kv_idx + b + h + n_heads",
    "big * q_idx + neg * kv_idx",
    "min(q_idx + big, kv_idx) - max(-h * 2, neg - 1)",
    "where(q_idx > kv_idx, q_idx * 3, -kv_idx * 3) / (n_heads + 1)",
    "q_idx * big + 1 > q_idx * big",
    "(q_idx + kv_idx) % n_heads == h % n_heads",
    "-q_idx / 7 * 7 + -q_idx % 7",
    "q_idx * big / (kv_idx + 1) - q_idx * big % -(kv_idx + 1)",
};
#define N_EXACT (int)(sizeof(exact_exprs) / sizeof(*exact_exprs))

static void test_attention_integers_exact_in_checker_and_kernel(void)
{
	static const int bs[] = {0, 2147483647}, hs[] = {0, 5, 2147483647};
	static const int pos[] = {0, 1, 63, 2147483646, 2147483647};
	static const int nhs[] = {1, 7, 2147483647};
	struct kfa_param params[2] = {{"big", 2147483647.0, true},
				      {"neg", -2147483647.0, true}};
	struct kfa_scope sc = {(1u << KFA_V_B) | (1u << KFA_V_H) |
				   (1u << KFA_V_Q) | (1u << KFA_V_KV) |
				   (1u << KFA_V_NHEADS),
			       params, 2};
	/* the kernel's helpers and includes: a generated host candidate */
	struct kf_attn_spec *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_attn_spec_load("tasks/attention/specs/causal.json", &s,
				    &err) == 0,
		  "%s", err.msg);
	char *gen = kf_attn_generate(s, "host");
	kf_attn_spec_free(s);
	struct kf_strbuf src = KF_STRBUF_INIT, want = KF_STRBUF_INIT;
	kf_strbuf_addstr(&src, gen);
	free(gen);
	kf_strbuf_addstr(&src, "\n#include <stdio.h>\n");
	struct kfa_expr e[N_EXACT];
	for (int k = 0; k < N_EXACT; k++) {
		CHECK_MSG(kfa_expr_parse(exact_exprs[k], &sc, &e[k], &err) == 0,
			  "'%s' refused: %s", exact_exprs[k], err.msg);
		CHECK(e[k].type != KFA_FLOAT);
		kf_strbuf_addf(&src,
			       "static long long kfa_t%d(int b, int h, int "
			       "q_idx, int kv_idx, int n_heads)\n{\n\t(void)b;"
			       "\n\t(void)h;\n\t(void)q_idx;\n\t(void)kv_idx;"
			       "\n\t(void)n_heads;\n\treturn ",
			       k);
		kfa_expr_emit(&e[k], &src);
		kf_strbuf_addstr(&src, ";\n}\n");
	}
	kf_strbuf_addstr(&src,
			 "int main(void)\n{\n"
			 "\tstatic const int bs[] = {0, 2147483647}, "
			 "hs[] = {0, 5, 2147483647};\n"
			 "\tstatic const int pos[] = {0, 1, 63, 2147483646, "
			 "2147483647};\n"
			 "\tstatic const int nhs[] = {1, 7, 2147483647};\n"
			 "\tlong long (*const fn[])(int, int, int, int, int) "
			 "= {");
	for (int k = 0; k < N_EXACT; k++)
		kf_strbuf_addf(&src, "%skfa_t%d", k ? ", " : "", k);
	kf_strbuf_addf(&src,
		       "};\n"
		       "\tfor (int k = 0; k < %d; k++)\n"
		       "\tfor (int b = 0; b < 2; b++)\n"
		       "\tfor (int h = 0; h < 3; h++)\n"
		       "\tfor (int q = 0; q < 5; q++)\n"
		       "\tfor (int kv = 0; kv < 5; kv++)\n"
		       "\tfor (int n = 0; n < 3; n++)\n"
		       "\t\tprintf(\"%%lld\\n\", fn[k](bs[b], hs[h], "
		       "pos[q], pos[kv], nhs[n]));\n"
		       "\treturn 0;\n}\n",
		       N_EXACT);
	for (int k = 0; k < N_EXACT; k++)
		for (int b = 0; b < 2; b++)
			for (int h = 0; h < 3; h++)
				for (int q = 0; q < 5; q++)
					for (int kv = 0; kv < 5; kv++)
						for (int n = 0; n < 3; n++) {
							double v[KFA_NVARS] = {
							    0, bs[b], hs[h],
							    pos[q], pos[kv],
							    nhs[n]};
							struct kfa_value out;
							CHECK_MSG(
							    kfa_expr_eval(
								&e[k], v, &out,
								&err) == 0,
							    "%s", err.msg);
							kf_strbuf_addf(
							    &want, "%lld\n",
							    (long long)out.i);
						}
	char *c = kf_path_join(kf_test_tmpdir(), "ints.c");
	char *exe = kf_path_join(kf_test_tmpdir(), "ints");
	kf_test_write_text(c, kf_strbuf_str(&src));
	char *cmd = kf_xasprintf(
	    "cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-function "
	    "-fsanitize=undefined -fno-sanitize-recover=undefined -Iinclude "
	    "-I%s/include -o %s %s -lm 2>&1 && %s 2>&1",
	    kf_test_build_dir(), exe, c, exe);
	int code = 0;
	char *got = kf_test_shell(cmd, &code);
	CHECK_MSG(code == 0, "%s: %s", cmd, got);
	CHECK_MSG(!strcmp(got, kf_strbuf_str(&want)),
		  "the kernel's integers are not the checker's (%s)", c);
	for (int k = 0; k < N_EXACT; k++)
		kfa_expr_release(&e[k]);
	free(got);
	free(cmd);
	free(exe);
	free(c);
	kf_strbuf_release(&want);
	kf_strbuf_release(&src);
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
	/* integers past 32 bits: long long casts and helpers in device code */
	struct kf_attn_spec *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(
	    kf_attn_spec_parse(
		"{\"dtype\": \"bfloat16\", \"head_dim\": 128, \"heads\": "
		"{\"n_heads\": 8, \"n_kv_heads\": 2}, \"params\": {\"big\": "
		"2147483647}, \"mask\": {\"expr\": \"kv_idx <= q_idx + big || "
		"(q_idx - 2147483647 - 1) % -1 == abs(kv_idx - big - 1)\", "
		"\"causal\": false}, \"score_mod\": \"score + 1e-18 * "
		"(min(q_idx + big, kv_idx * big) - max(-h * big, -(q_idx - big - "
		"1)) + (-2147483647 - 1) / -1)\"}",
		"wide.json", &s, &err) == 0,
	    "%s", err.msg);
	char *src = kf_attn_generate(s, "cuda");
	CHECK_CONTAINS(src, "kfa_lmin(");
	CHECK_CONTAINS(src, "kfa_labs(");
	char *c = kf_path_join(kf_test_tmpdir(), "wide.cu");
	kf_test_write_text(c, src);
	compile_cuda_ok(c);
	free(c);
	free(src);
	kf_attn_spec_free(s);
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
    KF_TEST(test_attention_spec_nul_in_strings_refused),
    KF_TEST(test_attention_integers_exact_in_checker_and_kernel),
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
