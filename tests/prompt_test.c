/*
 * prompt_test.c: prompt templates (built-in and overridden), the choice of
 * earlier candidates, code extraction from replies, and feedback from real
 * results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kforge/eval.h>
#include <kforge/prompt.h>

#include "harness.h"

#define ROWSUM "tests/fixtures/rowsum"

static struct kf_task *load_rowsum(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	CHECK_MSG(kf_task_load(ROWSUM, &t, &err) == 0, "%s", err.msg);
	return t;
}

static char *write_tmp(const char *dir, const char *name, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	char *p = kf_path_join(dir, name);
	CHECK(kf_file_write_atomic(p, text, strlen(text), &err) == 0);
	return p;
}

/* --- extraction --- */

static void test_prompt_extract_last_block_with_entry(void)
{
	const char *reply =
	    "Analysis.\n\n```python\nkf_entry = 1\n```\n"
	    "A helper:\n```c\nstatic int helper(void);\n```\n"
	    "First try:\n```cuda\nint kf_entry(void) { return 1; }\n```\n"
	    "Better:\n```c\nint kf_entry(void) { return 2; }\n```\n"
	    "And a usage note:\n```\n$ make\n```\n";
	char *code = kf_prompt_extract_code(reply, 1 << 20);
	CHECK_STR(code, "int kf_entry(void) { return 2; }\n");
	free(code);
}

static void test_prompt_extract_unterminated_block(void)
{
	/* The reply was cut off inside its second block: the first one is
	 * the last complete one. */
	const char *cut = "```c\nint kf_entry(void) { return 1; }\n```\n"
			  "Faster:\n```c\nint kf_entry(void) { return";
	char *code = kf_prompt_extract_code(cut, 1 << 20);
	CHECK_STR(code, "int kf_entry(void) { return 1; }\n");
	free(code);
	CHECK(kf_prompt_extract_code("```c\nint kf_entry(void) {\n", 1 << 20) ==
	      NULL);
	CHECK(kf_prompt_extract_code("```c", 1 << 20) == NULL);
}

static void test_prompt_extract_no_block(void)
{
	CHECK(kf_prompt_extract_code("", 100) == NULL);
	CHECK(kf_prompt_extract_code(NULL, 100) == NULL);
	CHECK(kf_prompt_extract_code("int kf_entry(void) { return 0; }", 100) ==
	      NULL);
	/* Inline code is not a block. */
	CHECK(kf_prompt_extract_code("Call ```kf_entry()``` once.", 100) ==
	      NULL);
	/* A block without kf_entry is not a candidate. */
	CHECK(kf_prompt_extract_code("```c\nint main(void);\n```\n", 100) ==
	      NULL);
}

static void test_prompt_extract_language_tags(void)
{
	const char *ok[] = {"c",   "C",	  "cuda", "cu", "cpp",
			    "c++", "CXX", "cc",	  "",	"c {.numberLines}"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *reply = kf_xasprintf(
		    "Code:\n```%s\nint kf_entry(void);\n```\n", ok[i]);
		char *code = kf_prompt_extract_code(reply, 100);
		CHECK_MSG(code != NULL, "tag \"%s\" refused", ok[i]);
		CHECK_STR(code, "int kf_entry(void);\n");
		free(code);
		free(reply);
	}
	const char *bad[] = {"python", "bash", "text", "json", "rust"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *reply = kf_xasprintf(
		    "Code:\n```%s\nint kf_entry(void);\n```\n", bad[i]);
		CHECK_MSG(kf_prompt_extract_code(reply, 100) == NULL,
			  "tag \"%s\" accepted", bad[i]);
		free(reply);
	}
}

static void test_prompt_extract_fences_and_thinking(void)
{
	/* A longer fence holds a shorter one; an indented fence counts. */
	const char *nested = "````c\n// kf_entry\n```\nnot the end\n````\n";
	char *code = kf_prompt_extract_code(nested, 100);
	CHECK_STR(code, "// kf_entry\n```\nnot the end\n");
	free(code);
	code = kf_prompt_extract_code("  ```c\nkf_entry\n  ```  \n", 100);
	CHECK_STR(code, "kf_entry\n");
	free(code);
	/* Drafts in the reasoning are not the answer. */
	const char *think = "<think>\n```c\nint kf_entry(void) { draft }\n```\n"
			    "</think>\nFinal:\n```c\nint kf_entry(void) { "
			    "final }\n```\n";
	code = kf_prompt_extract_code(think, 100);
	CHECK_STR(code, "int kf_entry(void) { final }\n");
	free(code);
	CHECK(kf_prompt_extract_code("<think>```c\nkf_entry\n```\n</think>"
				     "no code",
				     100) == NULL);
	/* CRLF line ends. */
	code = kf_prompt_extract_code("```c\r\nkf_entry\r\n```\r\n", 100);
	CHECK_STR(code, "kf_entry\r\n");
	free(code);
	/* The cap. */
	CHECK(kf_prompt_extract_code("```c\nkf_entry\n```\n", 8) == NULL);
	code = kf_prompt_extract_code("```c\nkf_entry\n```\n", 9);
	CHECK_STR(code, "kf_entry\n");
	free(code);
}

/* --- choosing examples --- */

static const char *const srcs[] = {"f0", "f1", "f2", "s0", "s1",
				   "s2", "q0", "q1", "q2", "best"};

static void examples10(struct kf_prompt_example *ex)
{
	const char *st[] = {"wrong_answer", "compile_error",
			    "timeout",	    "ok",
			    "ok",	    "ok",
			    "ok",	    "ok",
			    "ok",	    "ok"};
	const double sp[] = {0, 0, 0, 0.5, 0.7, 0.9, 1.2, 1.5, 2.0, 3.5};
	for (int i = 0; i < 10; i++) {
		ex[i].source = srcs[i];
		ex[i].status = st[i];
		ex[i].speedup = sp[i];
		ex[i].feedback = NULL;
	}
}

static void test_prompt_pick_across_buckets(void)
{
	struct kf_prompt_example ex[10];
	int picked[10];
	examples10(ex);
	for (uint64_t seed = 1; seed <= 20; seed++) {
		int n = kf_prompt_pick_examples(ex, 10, 4, seed, picked);
		CHECK(n == 4);
		/* One of each bucket, from the worst to the best. */
		CHECK_MSG(picked[0] <= 2, "seed %d: %d", (int)seed, picked[0]);
		CHECK(picked[1] >= 3 && picked[1] <= 5);
		CHECK(picked[2] >= 6 && picked[2] <= 8);
		CHECK(picked[3] == 9);
	}
	/* One: the best. */
	CHECK(kf_prompt_pick_examples(ex, 10, 1, 7, picked) == 1);
	CHECK(picked[0] == 9);
	/* Two: the best and a faster one. */
	CHECK(kf_prompt_pick_examples(ex, 10, 2, 7, picked) == 2);
	CHECK(picked[0] >= 6 && picked[0] <= 8 && picked[1] == 9);
	/* More than there are: each once, sorted by score. */
	CHECK(kf_prompt_pick_examples(ex, 10, 50, 3, picked) == 10);
	for (int i = 0; i < 10; i++)
		CHECK(picked[i] >= 3 ? picked[i] == i : picked[i] <= 2);
	/* Seeds vary the draw inside a bucket. */
	int seen[3] = {0};
	for (uint64_t seed = 1; seed <= 30; seed++) {
		kf_prompt_pick_examples(ex, 10, 4, seed, picked);
		seen[picked[0]] = 1;
	}
	CHECK(seen[0] + seen[1] + seen[2] >= 2);
	CHECK(kf_prompt_pick_examples(ex, 0, 4, 1, picked) == 0);
	CHECK(kf_prompt_pick_examples(ex, 10, 0, 1, picked) == 0);
}

static void test_prompt_pick_skips_duplicates_and_failures_only(void)
{
	struct kf_prompt_example ex[4] = {
	    {"same", "ok", 2.0, NULL},
	    {"same", "ok", 1.5, NULL},
	    {"other", "wrong_answer", 0, NULL},
	    {NULL, "ok", 9.0, NULL},
	};
	int picked[4];
	CHECK(kf_prompt_pick_examples(ex, 4, 4, 1, picked) == 2);
	CHECK(picked[0] == 2 && picked[1] == 0);
	struct kf_prompt_example failed[2] = {
	    {"a", "compile_error", 0, NULL},
	    {"b", NULL, 0, NULL},
	};
	CHECK(kf_prompt_pick_examples(failed, 2, 3, 1, picked) == 2);
}

/* --- rendering --- */

static void test_prompt_render_builtin_contrastive(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = load_rowsum();
	struct kf_prompt_example ex[2] = {
	    {"int kf_entry(void) { slow }", "wrong_answer", 0,
	     "Status: wrong_answer (check: mismatch)"},
	    {"int kf_entry(void) { fast }", "ok", 2.5, NULL},
	};
	struct kf_prompt_input in = {t,	   "host", "/* THE REFERENCE */", ex, 2,
				     NULL, NULL};
	char *sys = NULL, *user = NULL;
	CHECK_MSG(
	    kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) == 0,
	    "%s", err.msg);
	CHECK_CONTAINS(sys, "fast and correct C kernels");
	CHECK_CONTAINS(user, "# Task fixtures/rowsum");
	CHECK_CONTAINS(user, t->description);
	CHECK_CONTAINS(user, "- input in[0] `x`: float32 [B, N]; values drawn "
			     "from normal, uniform distributions");
	CHECK_CONTAINS(user, "- output out[0] `y`: float32 [B]");
	CHECK_CONTAINS(user, "Timing runs at B=64 N=256");
	CHECK_CONTAINS(user, "B=3 N=100; B=100 N=7");
	CHECK_CONTAINS(user,
		       "float32 outputs within atol 0.0001 + rtol 0.0001");
	CHECK_CONTAINS(user, "int kf_entry(const DLTensor *in, int n_in, "
			     "DLTensor *out, int n_out, void *stream);");
	CHECK_CONTAINS(user, "the C standard library and libm.");
	CHECK_CONTAINS(user, "```c\n/* THE REFERENCE */\n```");
	CHECK_CONTAINS(user, "## Earlier candidates");
	CHECK_CONTAINS(user, "### Candidate 1: wrong_answer\n\n```c\n"
			     "int kf_entry(void) { slow }\n```\n\n"
			     "Evaluation:\n\nStatus: wrong_answer");
	CHECK_CONTAINS(user, "### Candidate 2: correct, 2.5x faster than the "
			     "reference");
	CHECK_CONTAINS(user, "than the best earlier candidate");
	CHECK_CONTAINS(user, "exactly one ```c code block");
	CHECK(strstr(user, "{{") == NULL && strstr(user, "}}") == NULL);
	CHECK(strstr(user, "Your last kernel") == NULL);
	free(sys);
	free(user);
	/* A later turn shows the last kernel and its evaluation. */
	in.previous = "int kf_entry(void) { last }\n";
	in.feedback = "Status: timeout (check: deadline)\n";
	CHECK(kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) ==
	      0);
	CHECK_CONTAINS(user, "## Your last kernel\n\n```c\nint kf_entry(void) "
			     "{ last }\n```\n\nIts evaluation:\n\nStatus: "
			     "timeout (check: deadline)\n\n## What to do");
	CHECK_CONTAINS(user, "fixing what went wrong with your last kernel");
	free(sys);
	free(user);
	in.previous = NULL;
	in.feedback = NULL;
	/* Without examples the section is gone, and so is its blank line. */
	in.n_examples = 0;
	CHECK(kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) ==
	      0);
	CHECK(strstr(user, "Earlier candidates") == NULL);
	CHECK(strstr(user, "best earlier") == NULL);
	CHECK_CONTAINS(user, "```\n\n## What to do");
	free(sys);
	free(user);
	kf_task_free(t);
}

static void test_prompt_hidden_ranges_not_sets(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = NULL;
	CHECK_MSG(kf_task_load("tasks/normalization/softmax", &t, &err) == 0,
		  "%s", err.msg);
	CHECK(kf_task_draw_hidden(t, 5, &err) == 0);
	struct kf_prompt_input in = {t, "host", "/* R */", NULL, 0, NULL, NULL};
	char *sys = NULL, *user = NULL;
	CHECK_MSG(
	    kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) == 0,
	    "%s", err.msg);
	/* The ranges, never the sets drawn for an evaluation. */
	CHECK_CONTAINS(user, "sizes drawn for each evaluation from B in [1, "
			     "20], N in [1, 1100]");
	char *drawn = kf_task_dims_str(t, 2);
	CHECK(strstr(user, drawn) == NULL);
	free(drawn);
	free(sys);
	free(user);
	kf_task_free(t);
}

static void test_prompt_render_cuda(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = load_rowsum();
	kf_task_select_backend(t, "cuda");
	struct kf_prompt_input in = {
	    t, "cuda", "__global__ void k();", NULL, 0, NULL, NULL};
	char *sys = NULL, *user = NULL;
	CHECK(kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) ==
	      0);
	CHECK_CONTAINS(sys, "CUDA C++ kernels");
	CHECK_CONTAINS(user, "```cuda\n__global__ void k();\n```");
	CHECK_CONTAINS(user, "extern \"C\" int kf_entry(");
	CHECK_CONTAINS(user, "cudaStream_t");
	free(sys);
	free(user);
	in.backend = "tpu";
	CHECK(kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) ==
	      KF_EINVAL);
	kf_task_free(t);
}

static void test_prompt_render_override_directory(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = load_rowsum();
	const char *dir = kf_test_tmpdir();
	free(write_tmp(dir, "contrastive.user",
		       "T={{task_id}} on {{backend}}\n"
		       "{{#feedback}}\nF={{feedback}}\n{{/feedback}}\n"
		       "{{^examples}}no examples{{/examples}}\n{{abi}}"));
	free(write_tmp(dir, "abi.host", "MY ABI\n"));
	struct kf_prompt_input in = {t, "host", "ref", NULL, 0, NULL, NULL};
	char *sys = NULL, *user = NULL;
	CHECK_MSG(
	    kf_prompt_render(dir, "contrastive", &in, &sys, &user, &err) == 0,
	    "%s", err.msg);
	CHECK_STR(user, "T=fixtures/rowsum on host\nno examples\nMY ABI");
	/* The system message was not overridden: the built-in one. */
	CHECK_CONTAINS(sys, "performance engineer");
	free(sys);
	free(user);
	in.feedback = "it crashed";
	CHECK(kf_prompt_render(dir, "contrastive", &in, &sys, &user, &err) ==
	      0);
	CHECK_STR(
	    user,
	    "T=fixtures/rowsum on host\nF=it crashed\nno examples\nMY ABI");
	free(sys);
	free(user);
	/* A template of its own, without a system part. */
	free(write_tmp(dir, "terse.user", "{{dims}}"));
	CHECK(kf_prompt_render(dir, "terse", &in, &sys, &user, &err) == 0);
	CHECK(sys == NULL);
	CHECK_STR(user, "B=64 N=256");
	free(user);
	CHECK(kf_prompt_render(dir, "missing", &in, &sys, &user, &err) ==
	      KF_ENOENT);
	CHECK_CONTAINS(err.msg, "missing.user is neither in");
	CHECK(kf_prompt_render(dir, "../etc", &in, &sys, &user, &err) ==
	      KF_EINVAL);
	kf_task_free(t);
}

static void test_prompt_render_rejects_bad_templates(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *t = load_rowsum();
	const char *dir = kf_test_tmpdir();
	struct kf_prompt_input in = {t, "host", "ref", NULL, 0, NULL, NULL};
	char *sys = NULL, *user = NULL;
	char *p = write_tmp(dir, "a.user", "line one\n{{task}}\n");
	CHECK(kf_prompt_render(dir, "a", &in, &sys, &user, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, p);
	CHECK_CONTAINS(err.msg, ":2: unknown placeholder {{task}}");
	free(p);
	p = write_tmp(dir, "b.user", "{{#examples}}never closed");
	CHECK(kf_prompt_render(dir, "b", &in, &sys, &user, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "{{#examples}} without {{/examples}}");
	free(p);
	p = write_tmp(dir, "c.user", "{{dims");
	CHECK(kf_prompt_render(dir, "c", &in, &sys, &user, &err) == KF_EINVAL);
	free(p);
	p = write_tmp(dir, "d.user", "{{/dims}}");
	CHECK(kf_prompt_render(dir, "d", &in, &sys, &user, &err) == KF_EINVAL);
	free(p);
	/* A huge value repeated past the output cap. */
	struct kf_strbuf big = KF_STRBUF_INIT;
	for (int i = 0; i < 64; i++)
		kf_strbuf_addstr(&big, "{{reference}}");
	p = write_tmp(dir, "e.user", kf_strbuf_str(&big));
	char *ref = kf_xmalloc(64 << 10);
	memset(ref, 'r', (64 << 10) - 1);
	ref[(64 << 10) - 1] = 0;
	in.reference = ref;
	CHECK(kf_prompt_render(dir, "e", &in, &sys, &user, &err) == KF_ERANGE);
	CHECK(user == NULL && sys == NULL);
	free(ref);
	free(p);
	kf_strbuf_release(&big);
	kf_task_free(t);
}

/* --- feedback --- */

static cJSON *eval_quick(const char *cand)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	cJSON *res = NULL;
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	free(cache);
	o.seed = 1;
	o.no_timing = true;
	o.include_dir = "include";
	CHECK_MSG(kf_eval(ROWSUM, cand, &o, &res, &err) == 0, "%s", err.msg);
	return res;
}

static void test_prompt_feedback_wrong_answer(void)
{
	cJSON *res = eval_quick(ROWSUM "/candidates/hardcode.c");
	CHECK_STR(kf_json_str(res, "status"), "wrong_answer");
	char *fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "Status: wrong_answer (check: mismatch)\n");
	CHECK_CONTAINS(fb, "Reason: trial 1 (seed 2, hidden dims B=3 N=100");
	CHECK_CONTAINS(fb, "Worst element: output 'y' at [0]: got ");
	CHECK_CONTAINS(fb, "3 of 3 elements outside the tolerance, at B=3 "
			   "N=100.");
	CHECK_CONTAINS(fb, "1 of 2 trials passed before this one. In trial 1 "
			   "(hidden dims B=3 N=100):");
	CHECK_CONTAINS(fb,
		       "- output 'y': 3 of 3 elements wrong, 0 not written");
	CHECK(strstr(fb, "Timing") == NULL);
	free(fb);
	cJSON_Delete(res);
	res = eval_quick(ROWSUM "/candidates/partial.c");
	fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "check: unwritten");
	CHECK_CONTAINS(fb, "- output 'y': 32 of 64 elements wrong, 32 not "
			   "written, 32 NaN");
	free(fb);
	cJSON_Delete(res);
}

static void test_prompt_feedback_compile_error(void)
{
	cJSON *res = eval_quick(ROWSUM "/candidates/syntax.c");
	CHECK_STR(kf_json_str(res, "status"), "compile_error");
	char *fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "Status: compile_error (check: compile)");
	CHECK_CONTAINS(fb, "Compiler output:\n");
	CHECK_CONTAINS(fb, "syntax.c:8:17: error: expected");
	CHECK_CONTAINS(fb, "In function");
	free(fb);
	cJSON_Delete(res);
	/* A long log is cut to its start, and the whole stays capped. */
	cJSON *fake = cJSON_Parse("{\"status\": \"compile_error\", \"check\": "
				  "\"compile\", \"reason\": \"x\"}");
	cJSON *cc = cJSON_AddObjectToObject(
	    cJSON_AddObjectToObject(fake, "compile"), "candidate");
	cJSON_AddFalseToObject(cc, "ok");
	struct kf_strbuf log = KF_STRBUF_INIT;
	kf_strbuf_addstr(&log, "cand.c:1:1: error: FIRST\n");
	for (int i = 0; i < 5000; i++)
		kf_strbuf_addf(&log, "cand.c:%d: note: filler\n", i + 2);
	cJSON_AddStringToObject(cc, "log", kf_strbuf_str(&log));
	fb = kf_prompt_feedback(fake);
	CHECK_CONTAINS(fb, "error: FIRST");
	CHECK_CONTAINS(fb, "more bytes of the log left out]");
	CHECK(strlen(fb) < 8192);
	free(fb);
	kf_strbuf_release(&log);
	cJSON_Delete(fake);
}

static void test_prompt_feedback_crash_shows_output(void)
{
	cJSON *res = eval_quick(ROWSUM "/candidates/segv.c");
	char *fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "Status: runtime_error (check: crash)");
	CHECK_CONTAINS(fb, "SIGSEGV");
	free(fb);
	cJSON_Delete(res);
	/* What the process printed: its end, made safe. */
	cJSON *fake = cJSON_Parse("{\"status\": \"runtime_error\", "
				  "\"check\": \"crash\", \"reason\": \"x\"}");
	struct kf_strbuf log = KF_STRBUF_INIT;
	for (int i = 0; i < 200; i++)
		kf_strbuf_addf(&log, "line %d\n", i);
	kf_strbuf_addstr(&log, "last words \x01\x1b[31m\n");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(fake, "worker"), "log",
				kf_strbuf_str(&log));
	fb = kf_prompt_feedback(fake);
	CHECK_CONTAINS(fb, "What the kernel's process printed:\n[... ");
	CHECK_CONTAINS(fb, "earlier bytes left out]");
	CHECK_CONTAINS(fb, "line 199\nlast words ??[31m\n");
	CHECK(strstr(fb, "line 0\n") == NULL);
	free(fb);
	kf_strbuf_release(&log);
	cJSON_Delete(fake);
}

static void test_prompt_feedback_timing_and_roofline(void)
{
	struct kf_err err = KF_ERR_INIT;
	char *text = NULL;
	CHECK(kf_file_read("tests/fixtures/results/rowsum-ok.json", 1 << 20,
			   &text, NULL, &err) == 0);
	cJSON *res = cJSON_Parse(text);
	CHECK(res != NULL);
	char *fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "Status: ok\n");
	CHECK(strstr(fb, "Reason") == NULL);
	CHECK_CONTAINS(fb, "Timing: your kernel ");
	CHECK_CONTAINS(fb, "speedup ");
	CHECK_CONTAINS(fb, "(95% interval ");
	CHECK_CONTAINS(fb, "Roofline: memory-bound;");
	CHECK_CONTAINS(fb, "% of the bound (the reference ");
	free(fb);
	/* Unknown peaks, and no timing at all. */
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(res, "roofline"), "bound",
				  cJSON_CreateNull());
	fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "Roofline: the machine's peaks are unknown.");
	free(fb);
	cJSON_DeleteItemFromObject(res, "timing");
	fb = kf_prompt_feedback(res);
	CHECK_CONTAINS(fb, "Correct on every trial; not timed.");
	free(fb);
	cJSON_Delete(res);
	free(text);
	fb = kf_prompt_feedback(NULL);
	CHECK_CONTAINS(fb, "No result");
	free(fb);
}

/* Copies of the reference are told apart from code of one's own up to
 * comments and white space, not beyond. */
static void test_prompt_same_code_ignores_comments_and_space(void)
{
	const char *a = "int kf_entry(void) { return 0; } /* x */\n";
	CHECK(kf_prompt_same_code(a, "// copied\nint  kf_entry(void)\n{\n"
				     "\treturn 0;\n}\n"));
	CHECK(!kf_prompt_same_code(a, "int kf_entry(void) { return 1; }"));
	CHECK(!kf_prompt_same_code(a, "int kf_entry(void) { return 0; } x"));
	CHECK(!kf_prompt_same_code(a, NULL));
}

/* The reply after its prompt, where a tokenizer moved spaces. */
static void test_prompt_after_skips_a_prefix_up_to_space(void)
{
	const char *prompt = "Write it.\n```c\nint kf_entry(void);\n```\n";
	CHECK_STR(kf_prompt_after(" Write it.\n```c\nint kf_entry(void);"
				  "\n```\n  Here.",
				  prompt),
		  "\n  Here.");
	CHECK_STR(
	    kf_prompt_after("Write it. ```c int kf_entry(void); ```ok", prompt),
	    "ok");
	CHECK(kf_prompt_after("Write that.\n```c\n", prompt) == NULL);
}

KF_TESTS(prompt) = {
    KF_TEST(test_prompt_same_code_ignores_comments_and_space),
    KF_TEST(test_prompt_after_skips_a_prefix_up_to_space),
    KF_TEST(test_prompt_extract_last_block_with_entry),
    KF_TEST(test_prompt_extract_unterminated_block),
    KF_TEST(test_prompt_extract_no_block),
    KF_TEST(test_prompt_extract_language_tags),
    KF_TEST(test_prompt_extract_fences_and_thinking),
    KF_TEST(test_prompt_pick_across_buckets),
    KF_TEST(test_prompt_pick_skips_duplicates_and_failures_only),
    KF_TEST(test_prompt_render_builtin_contrastive),
    KF_TEST(test_prompt_render_cuda),
    KF_TEST(test_prompt_hidden_ranges_not_sets),
    KF_TEST(test_prompt_render_override_directory),
    KF_TEST(test_prompt_render_rejects_bad_templates),
    KF_TEST(test_prompt_feedback_wrong_answer),
    KF_TEST(test_prompt_feedback_compile_error),
    KF_TEST(test_prompt_feedback_crash_shows_output),
    KF_TEST(test_prompt_feedback_timing_and_roofline),
    KF_TESTS_END,
};
