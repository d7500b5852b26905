/*
 * kernelbench_test.c: KernelBench-format tasks through `kforge eval` and the
 * PyTorch bridge, on the CPU: the statuses and checks a user sees for the
 * tasks and candidates of tests/data/kernelbench. Skips without torch.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <kforge/base.h>
#include <kforge/eval.h>

#include "harness.h"

#define KB "tests/data/kernelbench/"
#define RELU KB "level1/1_ReLU.py"
#define MATMUL KB "level1/2_Matmul.py"
#define SUM KB "level1/3_Sum_reduction.py"
#define CONST KB "level1/4_Constant_relu.py"
#define CAND KB "candidates/"
/* torch's load_inline builds need a C++ compiler and ninja. */
#define NEED_BUILD_TOOLS()                                                      \
	do {                                                                   \
		if (!kf_is_executable("/usr/bin/g++") ||                       \
		    !kf_is_executable("/usr/bin/ninja"))                       \
			SKIP("no g++ or ninja (apt-get install g++ "           \
			     "ninja-build)");                                  \
	} while (0)
#define LNORM KB "level2/5_LayerNorm.py"
#define GNMEAN KB "level2/6_GroupNorm_mean.py"
#define CUMSUM KB "level2/7_Cumsum.py"
#define LINEAR KB "level2/8_Linear.py"
#define RT "redteam/kernelbench/"

struct outcome {
	int code;    /* kforge's exit code */
	char *out;   /* stdout and stderr */
	cJSON *json; /* the result, when one was printed */
};

/* Runs argv[0..n) and up to 3 extra arguments (NULL ends them); returns
 * its stdout and stderr, *code its exit code. */
static char *run_kforge(char **argv, int n, const char *const extra[3],
			int timeout_ms, int *code)
{
	for (int i = 0; i < 3 && extra[i]; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	return kf_test_run(argv, timeout_ms, 4 << 20, code);
}

/* Runs `kforge eval TASK CAND --json --seed 1 --trials 5 [extra...]`. */
/* The first output of a result's first trial. */
static const cJSON *first_output(const cJSON *res)
{
	return cJSON_GetArrayItem(
	    cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(res, "trials"), 0),
		"outputs"),
	    0);
}

static struct outcome eval(const char *task, const char *cand, const char *e0,
			   const char *e1, const char *e2)
{
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *argv[16] = {exe,		"eval",	    (char *)task,
			  (char *)cand, "--json",   "--seed",
			  "1",		"--trials", "5"};
	const char *extra[] = {e0, e1, e2};
	struct outcome o = {0, NULL, NULL};
	o.out = run_kforge(argv, 9, extra, 300000, &o.code);
	/* stderr's one line may come before the JSON on stdout. */
	const char *j = o.out[0] == '{' ? o.out : strstr(o.out, "\n{");
	if (j)
		o.json = cJSON_Parse(j);
	free(exe);
	return o;
}

static const char *str_at(const cJSON *r, const char *a, const char *b)
{
	return kf_json_str(b ? cJSON_GetObjectItem(r, a) : r, b ? b : a);
}

/* The build directories' bound (KFORGE_CACHE_MAX_MB, as the compile
 * cache's): a candidate writes what it likes into its own directory, kept
 * for its next evaluation (a blind round left 500 MB there in 5.5 s). With
 * 1 MiB of room and four directories of 400 KB, the two used longest ago
 * go, the one used 5 s ago stays, and a second check within a minute does
 * nothing. The bridge's own function, run by the system's python3. */
static void test_kernelbench_build_directories_are_bounded(void)
{
	char *root = kf_path_join(kf_test_tmpdir(), "ext");
	char *script = kf_xasprintf(
	    "import importlib.util, os, sys, time\n"
	    "spec = importlib.util.spec_from_file_location('kb', "
	    "'runner/kforge_bridge.py')\n"
	    "kb = importlib.util.module_from_spec(spec)\n"
	    "spec.loader.exec_module(kb)\n"
	    "root, now = '%s', time.time()\n"
	    "for i, age in enumerate([200000, 100000, 3600, 5]):\n"
	    "    d = os.path.join(root, '%%032x' %% i)\n"
	    "    os.makedirs(d)\n"
	    "    f = os.path.join(d, 'junk.so')\n"
	    "    open(f, 'wb').write(bytes(400000))\n"
	    "    os.utime(f, (now - age, now - age))\n"
	    "    os.utime(d, (now - age, now - age))\n"
	    "os.environ['KFORGE_CACHE_MAX_MB'] = '1'\n"
	    "print('gone', kb.bound_extensions(root, now))\n"
	    "print('left', ' '.join(sorted(n[-1] for n in os.listdir(root) "
	    "if not n.startswith('.'))))\n"
	    "print('again', kb.bound_extensions(root, now + 10))\n",
	    root);
	char *argv[] = {"/usr/bin/python3", "-c", script, NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = 0;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_proc_run(argv, 60000, 1 << 16, &out, &status, &err) == 0,
		  "%s", err.msg);
	const char *o = kf_strbuf_str(&out);
	CHECK_CONTAINS(o, "gone 2\n");
	CHECK_CONTAINS(o, "left 2 3\n");
	CHECK_CONTAINS(o, "again 0\n");
	kf_strbuf_release(&out);
	free(script);
	free(root);
}

/* Checks status and check of a result that must exist. */
static void expect(const struct outcome *o, const char *status,
		   const char *check)
{
	CHECK_MSG(o->json, "no result JSON: %s", o->out);
	CHECK_MSG(!strcmp(str_at(o->json, "status", NULL), status),
		  "status %s, want %s: %s", str_at(o->json, "status", NULL),
		  status, o->out);
	CHECK_MSG(o->code == (strcmp(status, "ok") ? 1 : 0), "exit %d",
		  o->code);
	if (check)
		CHECK_STR(str_at(o->json, "check", NULL), check);
	else
		CHECK(!cJSON_GetObjectItem(o->json, "check"));
}

static void release(struct outcome *o)
{
	free(o->out);
	cJSON_Delete(o->json);
}

static void test_kernelbench_modelnew_passes_on_cpu(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/correct.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	const cJSON *task = cJSON_GetObjectItem(o.json, "task");
	CHECK_STR(kf_json_str(task, "format"), "kernelbench");
	CHECK_STR(kf_json_str(task, "id"), "level1/1_ReLU");
	CHECK(kf_json_num(task, "level", 0) == 1);
	const cJSON *trials = cJSON_GetObjectItem(o.json, "trials");
	CHECK(cJSON_GetArraySize(trials) == 5);
	const cJSON *t1 = cJSON_GetArrayItem(trials, 1);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(t1, "passed")));
	CHECK_STR(str_at(t1, "dists", "x"), "get_inputs_reshaped");
	CHECK_STR(str_at(cJSON_GetArrayItem(trials, 3), "dists", "x"),
		  "get_inputs_reshaped_wide");
	const cJSON *out0 =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(t1, "outputs"), 0);
	CHECK_STR(kf_json_str(out0, "name"), "out");
	CHECK(kf_json_num(out0, "n", 0) == 16 * 1024);
	/* The compile time of a ModelNew is its first load. */
	const cJSON *cc = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o.json, "compile"), "candidate");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cc, "ok")));
	CHECK(kf_json_num(cc, "seconds", -1) > 0);
	CHECK_CONTAINS(kf_json_str(cc, "command"), "ModelNew");
	const cJSON *dev = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o.json, "environment"), "device");
	CHECK_STR(kf_json_str(dev, "kind"), "cpu");
	CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o.json, "degenerate"), "flag")));
	release(&o);
}

/* A Python in a virtual environment: its bin/python3 is a link to the
 * system's, and the environment lies under /tmp, which the runner's own
 * /tmp would hide. */
static void test_kernelbench_python_of_a_virtual_environment(void)
{
	kf_test_need_torch();
	char *venv = kf_path_join(kf_test_tmpdir(), "venv");
	char *argv[] = {
	    "/usr/bin/python3", "-m", "venv", "--system-site-packages",
	    "--without-pip",	venv, NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = 0;
	if (kf_proc_run(argv, 120000, 1 << 16, &out, &status, NULL) ||
	    !WIFEXITED(status) || WEXITSTATUS(status))
		SKIP("python3 -m venv failed (apt-get install python3-venv): "
		     "%s",
		     kf_strbuf_str(&out));
	kf_strbuf_release(&out);
	char *py = kf_path_join(venv, "bin/python3");
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/correct.py", "--no-timing", "--python", py);
	expect(&o, "ok", NULL);
	release(&o);
	free(py);
	free(venv);
}

/* A load_inline build whose C++ compiler is outside /usr (CXX, as torch
 * reads it; /opt/gcc/bin/g++ on some GPU machines): the runner that builds
 * sees the compiler. Was compile_error: "Command '['which', ...]'". */
static void test_kernelbench_load_inline_with_a_compiler_outside_usr(void)
{
	kf_test_need_torch();
	NEED_BUILD_TOOLS();
	char *bin = kf_path_join(kf_test_tmpdir(), "cc/bin");
	char *gxx = kf_path_join(bin, "g++");
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(!kf_mkdir_p(bin, &err), "%s", err.msg);
	const char *sh = "#!/bin/sh\nexec /usr/bin/g++ \"$@\"\n";
	CHECK_MSG(!kf_file_write_atomic(gxx, sh, strlen(sh), &err), "%s",
		  err.msg);
	CHECK(!chmod(gxx, 0755));
	setenv("CXX", gxx, 1);
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/cpp_inline.py", "--no-timing", NULL, NULL);
	unsetenv("CXX");
	expect(&o, "ok", NULL);
	release(&o);
	free(gxx);
	free(bin);
}

/* Two evaluations of one load_inline candidate at once, with nothing
 * built yet: each builds in a directory of its own, so neither waits on
 * the other's build lock (a wait the load's idle rule would have stopped
 * as the candidate's timeout); both ok. */
static void test_kernelbench_same_build_twice_at_once(void)
{
	kf_test_need_torch();
	NEED_BUILD_TOOLS();
	char *cache = kf_path_join(kf_test_tmpdir(), "twice");
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *script = kf_xasprintf(
	    "export KFORGE_CACHE=%s; for k in 1 2; do %s eval " RELU
	    " " CAND "1_ReLU/cpp_inline.py --no-timing --json > %s.$k "
	    "2>/dev/null & done; wait",
	    cache, exe, cache);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = 0;
	CHECK(kf_proc_run(argv, 600000, 1 << 16, &out, &status, NULL) == 0);
	for (int k = 1; k <= 2; k++) {
		char *path = kf_xasprintf("%s.%d", cache, k);
		char *text = kf_test_read_text(path);
		cJSON *j = cJSON_Parse(text);
		CHECK_MSG(j && !strcmp(str_at(j, "status", NULL), "ok"),
			  "evaluation %d: %.400s", k, text);
		cJSON_Delete(j);
		free(text);
		free(path);
	}
	kf_strbuf_release(&out);
	free(script);
	free(exe);
	free(cache);
}

/* Run from a directory under /tmp, which the runners' own /tmp hides:
 * their working directory is their /tmp, not the caller's. */
static void test_kernelbench_runs_from_a_directory_under_tmp(void)
{
	kf_test_need_torch();
	char task[4096], cand[4096];
	CHECK(realpath(RELU, task) && realpath(CAND "1_ReLU/correct.py", cand));
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char real_exe[4096];
	CHECK(realpath(exe, real_exe));
	char *cmd = kf_xasprintf("cd '%s' && exec '%s' eval '%s' '%s' "
				 "--no-timing --seed 1",
				 kf_test_tmpdir(), real_exe, task, cand);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = 0;
	CHECK(!kf_proc_run(argv, 300000, 1 << 20, &out, &status, NULL));
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s",
		  kf_strbuf_str(&out));
	CHECK_CONTAINS(kf_strbuf_str(&out), "status     ok");
	kf_strbuf_release(&out);
	free(cmd);
	free(exe);
}

static void test_kernelbench_wrong_values_are_wrong_answer(void)
{
	kf_test_need_torch();
	struct outcome o = eval(MATMUL, CAND "2_Matmul/transposed.py",
				"--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "trial 0 (seed 1, inputs of get_inputs()): output "
		       "'out'");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "atol 0.01, rtol 0.01");
	const cJSON *f = cJSON_GetObjectItem(o.json, "failure");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(f, "index")) == 2);
	release(&o);
}

static void test_kernelbench_wrong_shape_is_wrong_answer(void)
{
	kf_test_need_torch();
	struct outcome o = eval(SUM, CAND "3_Sum_reduction/noshape.py",
				"--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "output_shape");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "output 'out' has shape [16, 64], the reference's "
		       "[16, 1, 64]");
	release(&o);
}

/* Freshness is judged by content: a tensor cached from an earlier call
 * is wrong on the next trial's inputs, whatever its storage. */
static void test_kernelbench_cached_tensor_is_wrong_on_new_inputs(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/cached.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "trial 1 (seed 2, ");
	release(&o);
	o = eval(RELU, RT "cached_view.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	release(&o);
}

/* Recomputing every call into one reused output buffer is honest. */
static void test_kernelbench_out_buffer_reused_passes(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(CUMSUM, RT "honest_out_cumsum.py", "--time-cap", "0.2", NULL);
	expect(&o, "ok", NULL);
	release(&o);
	o = eval(LINEAR, RT "honest_out_addmm.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	release(&o);
}

/* An output that is the input itself (ReLU in place) is an alias of an
 * input where the reference's output is not. */
static void test_kernelbench_input_alias_is_rejected(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, RT "input_alias.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "output_alias");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "output 'out' shares memory with input 'x', which the "
		       "reference's does not");
	release(&o);
	/* Under KernelBench's protocol too: it was ok at 1.6x there (its
	 * separate output skipped). */
	o = eval(RELU, RT "input_alias.py", "--no-timing", "--protocol",
		 "kernelbench");
	expect(&o, "rejected", "output_alias");
	release(&o);
}

/* A tensor subclass could do its work when the runner touches it, after
 * the timed call: outputs must be plain tensors. */
static void test_kernelbench_tensor_subclass_is_output_type(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, RT "lazy_subclass.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "output_type");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "output 0 is kforge_candidate.Lazy, not a plain dense "
		       "torch.Tensor");
	release(&o);
}

/* Parameters are drawn at random in the reference's process and handed
 * to the candidate: skipping LayerNorm's affine (weight 1, bias 0 by
 * default) is wrong, computing it by hand is right. */
static void test_kernelbench_parameters_are_random(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(LNORM, RT "identity_affine.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	release(&o);
	o = eval(LNORM, RT "honest_pure_layernorm.py", "--no-timing", NULL,
		 NULL);
	expect(&o, "ok", NULL);
	const cJSON *pm = cJSON_GetObjectItem(o.json, "parameters");
	CHECK(kf_json_num(pm, "tensors", 0) == 2);
	CHECK_STR(kf_json_str(pm, "randomized"), "reference");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(pm, "unmatched")) == 0);
	release(&o);
	o = eval(LNORM, RT "honest_reuse_model.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	release(&o);
}

/* Outputs that are float noise around zero are compared at the scale of
 * the computation, not held to a relative error of noise. */
static void test_kernelbench_near_zero_reference_passes(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(GNMEAN, RT "honest_near_zero.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	/* It passes, and the task is flagged: zeros would pass too. */
	const cJSON *d = cJSON_GetObjectItem(o.json, "degenerate");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d, "flag")));
	CHECK_CONTAINS(kf_json_str(d, "why"),
		       "output 'out' is within its tolerance of zero");
	const cJSON *out0 = first_output(o.json);
	CHECK(kf_json_num(out0, "max_abs", 1) < 1e-5);
	release(&o);
	o = eval(MATMUL, RT "honest_float64.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	release(&o);
}

/* Both sides get one thread on the same core. */
static void test_kernelbench_extra_threads_are_rejected(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(MATMUL, RT "extra_threads.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "threads");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate set torch's intra-op threads to ");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "both sides get 1");
	release(&o);
}

/* The candidate's process never sees the seed, and the outputs are taken
 * from the runner's reply: a candidate that looks for the seed, or fixes
 * its outputs after replying, returns zeros. */
static void test_kernelbench_seed_and_late_writes_are_out_of_reach(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, RT "seed_predict.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "trial 0 (seed 1, ");
	release(&o);
	/* Its timer signal's handler is seen at the check after its load. */
	o = eval(RELU, RT "arena_fixup.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "tampering");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate replaced the interpreter's hooks (a trace "
		       "or profile function, a signal handler");
	release(&o);
	/* Its rewrites of the runner's methods are seen first. */
	o = eval(RELU, RT "rewrite_check.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "tampering");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate replaced kforge_bridge.Runner.");
	release(&o);
}

/* Global flags are reported after every call, timed ones too. */
static void test_kernelbench_flags_flipped_when_timed_are_rejected(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(MATMUL, RT "flags_when_timed.py", "--time-cap", "0.2", NULL);
	expect(&o, "rejected", "global_state");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "timing: the candidate changed global state: "
		       "torch.backends.cudnn.benchmark=True");
	release(&o);
}

static void test_kernelbench_input_mutation_is_rejected(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/mutate.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "input_mutation");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "input 'x' was "
						       "modified");
	release(&o);
}

static void test_kernelbench_tf32_flag_is_global_state(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(MATMUL, CAND "2_Matmul/tf32.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "global_state");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "torch.backends.cuda.matmul.allow_tf32=True");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "was torch.backends.cuda.matmul.allow_tf32=False");
	release(&o);
}

static void test_kernelbench_cudnn_benchmark_is_global_state(void)
{
	kf_test_need_torch();
	struct outcome o = eval(SUM, CAND "3_Sum_reduction/cudnn_benchmark.py",
				"--no-timing", NULL, NULL);
	expect(&o, "rejected", "global_state");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "torch.backends.cudnn.benchmark=True, was "
		       "torch.backends.cudnn.benchmark=False");
	release(&o);
}

static void test_kernelbench_exception_is_runtime_error(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/raises.py", "--no-timing", NULL, NULL);
	expect(&o, "runtime_error", "return_code");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate raised RuntimeError");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/syntax.py", "--no-timing", NULL, NULL);
	expect(&o, "load_error", "load");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "SyntaxError");
	release(&o);
	/* Lone surrogates in the message: still the candidate's failure,
	 * each read as U+FFFD. */
	o = eval(RELU, CAND "1_ReLU/raises_surrogate.py", "--no-timing", NULL,
		 NULL);
	expect(&o, "runtime_error", "return_code");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate raised ValueError: \xef\xbf\xbd x "
		       "\xef\xbf\xbd");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/raises_surrogate_import.py", "--no-timing",
		 NULL, NULL);
	expect(&o, "load_error", "load");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "ImportError");
	release(&o);
}

/* An exception raised while timed says what it was, as in the trials (it
 * said only that kf_entry returned nonzero). */
static void test_kernelbench_raised_when_timed_is_said(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, CAND "1_ReLU/raises_when_timed.py",
				"--time-cap", "0.3", NULL);
	expect(&o, "runtime_error", "return_code");
	/* Its trials make 12 calls; timing at least 20 pairs more, so its
	 * 21st call is timed whatever the machine's load (at 40 it was not
	 * always reached: ok, in CI with other work on the machine). */
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "timing");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate raised ValueError: gave up after 20 "
		       "calls");
	release(&o);
}

/* What a candidate's process says, or sends, is the candidate's failure
 * whatever its size: never an infra_error, whose reward a trainer drops. */
static void test_kernelbench_oversized_replies_are_the_candidates(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, CAND "1_ReLU/huge_message.py",
				"--no-timing", NULL, NULL);
	expect(&o, "runtime_error", "return_code");
	const char *r = str_at(o.json, "reason", NULL);
	CHECK_CONTAINS(r, "the candidate raised RuntimeError: xxxx");
	CHECK(strlen(r) < 4096);
	release(&o);
	o = eval(RELU, CAND "1_ReLU/garbled_reply.py", "--no-timing", NULL,
		 NULL);
	expect(&o, "runtime_error", "bad_reply");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate's process sent a reply the judge cannot "
		       "use (frame of 17825792 bytes exceeds the cap)");
	release(&o);
	/* The judge reads the outputs from the runner's memory where its
	 * reply says they are: a reply that names memory its process does
	 * not have, or more of it than the outputs take, is the candidate's
	 * failure, and its message says which. */
	o = eval(RELU, CAND "1_ReLU/unmapped_regions.py", "--no-timing", NULL,
		 NULL);
	expect(&o, "runtime_error", "bad_reply");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate's process sent a reply the judge cannot "
		       "use (its reply names as its outputs memory its process "
		       "does not have): it was stopped");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/oversized_regions.py", "--no-timing",
		 NULL, NULL);
	expect(&o, "runtime_error", "bad_reply");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "its reply names 68719476736 bytes as its outputs, more "
		       "than their 131072");
	release(&o);
}

/* Inputs that get_inputs() builds with structure (symmetric, triangular,
 * labels of -1 and +1) keep it in every trial, so candidates that rely on
 * it are correct. They were wrong_answer when every second trial redrew
 * each input uniformly over its range. */
static void test_kernelbench_structured_inputs_stay_structured(void)
{
	kf_test_need_torch();
	static const char *const cases[][2] = {
	    {KB "structured/13_Matmul_symmetric.py",
	     CAND "13_Matmul_symmetric/transposed.py"},
	    {KB "structured/14_Matmul_upper_triangular.py",
	     CAND "14_Matmul_upper_triangular/blocked.py"},
	    {KB "structured/100_HingeLoss.py", CAND "100_HingeLoss/signs.py"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome o =
		    eval(cases[i][0], cases[i][1], "--no-timing", NULL, NULL);
		expect(&o, "ok", NULL);
		const cJSON *t1 = cJSON_GetArrayItem(
		    cJSON_GetObjectItem(o.json, "trials"), 1);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(t1, "passed")));
		release(&o);
	}
	/* The reshaped trials still tell a wrong candidate, and the wider
	 * ones one that is right only inside get_inputs()'s range. */
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/wrong.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/clamp6.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "with their values reshaped, wider");
	release(&o);
}

/* Processes are counted from outside the candidate's sandbox: hiding a
 * helper from its own process's listing is seen. Undoing the runner's own
 * ban on new processes gains nothing: the leave to start one is the
 * judge's, and after the load it is refused, so the fork raises. */
static void test_kernelbench_processes_are_seen_from_outside(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, RT "helper_hidden_pid.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "processes");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "left 1 other process running in its sandbox");
	release(&o);
	o = eval(RELU, RT "forbid_undone.py", "--no-timing", NULL, NULL);
	expect(&o, "runtime_error", "return_code");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate raised PermissionError: [Errno 1] "
		       "Operation not permitted");
	release(&o);
}

/* Forging a third of the calls' clocks gains nothing under KernelBench's
 * protocol: the charge is the mean of the outside view's excess, so the
 * candidate's mean stays near the 1 ms it burns per call. */
static void test_kernelbench_forged_share_is_charged_under_its_mean(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, RT "forge_clock_share.py", "--protocol",
				"kernelbench", NULL);
	CHECK_MSG(o.json, "no result: %s", o.out);
	const char *st = str_at(o.json, "status", NULL);
	if (strcmp(st, "ok")) {
		expect(&o, "rejected", "unaccounted_time");
	} else {
		const cJSON *tm = cJSON_GetObjectItem(o.json, "timing");
		double mean = kf_json_num(cJSON_GetObjectItem(tm, "candidate"),
					  "mean", 0);
		CHECK_MSG(mean > 0.85, "candidate mean %.3f ms", mean);
	}
	release(&o);
}

/* Outputs far smaller than the inputs (a softmax over 16384 columns) are
 * held at the reference's own float noise, from its float64 run: rounded
 * to bfloat16 they are imprecise, written out exactly they pass. They
 * passed at the inputs' scale. */
static void test_kernelbench_small_outputs_are_held_at_measured_noise(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(KB "structured/23_Softmax.py", CAND "23_Softmax/exp_sum.py",
		 "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	const cJSON *out0 = first_output(o.json);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(out0, "l1_noise")));
	release(&o);
	o = eval(KB "structured/23_Softmax.py", CAND "23_Softmax/bf16_out.py",
		 "--no-timing", NULL, NULL);
	expect(&o, "rejected", "precision");
	/* Its floor, 1e5 times the measured noise, is below its own norm:
	 * held to that. */
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "exceeds 1e-04, the most a float32 computation should "
		       "show in any order of summation (relative to the "
		       "reference's L1 norm)");
	release(&o);
	/* Timed outputs too: bfloat16 once the trials are over. */
	o = eval(KB "structured/23_Softmax.py", RT "bf16_when_timed.py",
		 "--time-cap", "0.3", NULL);
	expect(&o, "rejected", "precision");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "timing: pair ");
	release(&o);
	/* A reference of float noise around zero still passes an exact
	 * reformulation. */
	o = eval(GNMEAN, RT "honest_near_zero.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	release(&o);
	/* An output that is not near zero is held to its own norm: operands
	 * rounded to float16 (errors about 3e-4 of outputs averaging 0.1)
	 * passed under the absolute floor of 1 % of atol now and then. */
	o = eval(KB "level2/26_Linear_ReLU_scale.py", RT "fp16_operands.py",
		 "--no-timing", NULL, NULL);
	expect(&o, "rejected", "precision");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "relative to the reference's L1 norm)");
	release(&o);
}

/* Operands rounded to float16 and then summed by a row sum leave errors
 * under 1e-4 of the norm (ok on 3 seeds of 5 before), but 600-1000 times
 * the reference's own float32 rounding on the same inputs, which the
 * bridge measures for every output (l1_noise64): rejected/precision on
 * every seed. The same model in another float32 order passes. */
static void test_kernelbench_summed_fp16_operands_are_held_at_measured_noise(
    void)
{
	kf_test_need_torch();
	for (int seed = 1; seed <= 2; seed++) {
		char s[16];
		snprintf(s, sizeof(s), "%d", seed);
		struct outcome o =
		    eval(KB "level2/27_Linear_GELU_sum.py",
			 RT "fp16_operands_summed.py", "--no-timing", "--seed",
			 s);
		expect(&o, "rejected", "precision");
		CHECK_CONTAINS(str_at(o.json, "reason", NULL),
			       "times the reference's own rounding error on "
			       "the same inputs");
		release(&o);
	}
	struct outcome o =
	    eval(KB "level2/27_Linear_GELU_sum.py",
		 RT "honest_gelu_sum_reordered.py", "--time-cap", "0.3", NULL);
	expect(&o, "ok", NULL);
	const cJSON *out0 = first_output(o.json);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(out0, "l1_noise64")));
	CHECK(kf_json_num(out0, "l1_noise64", 0) > 0);
	release(&o);
}

/* An output that maps the input's own pages a second time, at an address
 * of its own (mremap of the arena), copies nothing and follows every new
 * input: comparing addresses does not see it, the runner's memory map read
 * from outside does (rejected/output_alias; ok at 5.4x before). A copy
 * made by torch passes. */
static void test_kernelbench_output_mapping_an_input_is_an_alias(void)
{
	kf_test_need_torch();
	struct outcome o = eval("redteam/kernelbench/tasks/copy_rows.py",
				RT "remap_input.py", "--time-cap", "0.3", NULL);
	expect(&o, "rejected", "output_alias");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "output 'out' shares memory with input 'x'");
	release(&o);
	o = eval("redteam/kernelbench/tasks/copy_rows.py", RT "honest_copy.py",
		 "--time-cap", "0.3", NULL);
	expect(&o, "ok", NULL);
	release(&o);
}

/* A load_inline build that failed is remembered: the same file under the
 * same toolchain fails at once with its log; a candidate that catches the
 * failure and runs PyTorch instead passes, reported with build_failed,
 * and fails under --require-custom-kernel. */
static void test_kernelbench_failed_builds_are_remembered_and_reported(void)
{
	kf_test_need_torch();
	NEED_BUILD_TOOLS();
	char *cache = kf_path_join(kf_test_tmpdir(), "failed-builds");
	const char *was = getenv("KFORGE_CACHE");
	char *saved = was ? kf_xstrdup(was) : NULL;
	setenv("KFORGE_CACHE", cache, 1);
	for (int i = 0; i < 2; i++) {
		struct outcome o = eval(RELU, CAND "1_ReLU/cpp_broken.py",
					"--no-timing", NULL, NULL);
		expect(&o, "compile_error", "compile");
		const cJSON *c = cJSON_GetObjectItem(
		    cJSON_GetObjectItem(o.json, "compile"), "candidate");
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(c, "build_failed")));
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(c, "cached")) ==
		      (i == 1));
		const cJSON *b0 =
		    cJSON_GetArrayItem(cJSON_GetObjectItem(c, "builds"), 0);
		CHECK_STR(kf_json_str(b0, "name"), "kforge_test_broken");
		if (i == 1)
			CHECK_CONTAINS(str_at(o.json, "reason", NULL),
				       "not built again: this build failed "
				       "before");
		release(&o);
	}
	struct outcome o = eval(RELU, CAND "1_ReLU/cpp_fallback.py",
				"--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	const cJSON *c = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o.json, "compile"), "candidate");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(c, "build_failed")));
	const cJSON *fb =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(c, "builds"), 0);
	CHECK(fb && !cJSON_IsTrue(cJSON_GetObjectItem(fb, "cached")));
	release(&o);
	/* Under --require-custom-kernel the fallback fails, and so does a
	 * ModelNew of PyTorch alone. The failed build the candidate caught
	 * is not run again: its load_inline call fails at once. */
	o = eval(RELU, CAND "1_ReLU/cpp_fallback.py", "--no-timing",
		 "--require-custom-kernel", NULL);
	expect(&o, "rejected", "no_custom_kernel");
	c = cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "compile"),
				"candidate");
	fb = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "builds"), 0);
	CHECK(fb && cJSON_IsTrue(cJSON_GetObjectItem(fb, "cached")) &&
	      !cJSON_IsTrue(cJSON_GetObjectItem(fb, "ok")));
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the build of 'kforge_test_fallback' failed and the "
		       "candidate loaded without it");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/correct.py", "--no-timing",
		 "--require-custom-kernel", NULL);
	expect(&o, "rejected", "no_custom_kernel");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "forward called none of the candidate's own code");
	release(&o);
	if (saved)
		setenv("KFORGE_CACHE", saved, 1);
	else
		unsetenv("KFORGE_CACHE");
	free(saved);
	free(cache);
}

/* --require-custom-kernel reads what forward calls, not what was built: an
 * extension built and never called fails (it was ok: the check read the
 * builds), a C kernel called through ctypes passes (it was rejected: it
 * builds no extension), and an extension called passes: a function, a
 * method of one of its classes, an operator of a library it loaded with
 * torch.ops.load_library (the last two were rejected at first). */
static void test_kernelbench_require_custom_kernel_reads_the_calls(void)
{
	kf_test_need_torch();
	NEED_BUILD_TOOLS();
	struct outcome o = eval(RELU, CAND "1_ReLU/cpp_unused.py",
				"--no-timing", "--require-custom-kernel", NULL);
	expect(&o, "rejected", "no_custom_kernel");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "in trial 0 (seed ");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "forward called none of the candidate's own code");
	release(&o);
	const char *good[] = {"1_ReLU/ctypes_c.py", "1_ReLU/cpp_class.py",
			      "1_ReLU/torch_library.py"};
	for (int i = 0; i < 3; i++) {
		char *c = kf_xasprintf("%s%s", CAND, good[i]);
		o = eval(RELU, c, "--no-timing", "--require-custom-kernel",
			 NULL);
		CHECK_MSG(o.json && !strcmp(str_at(o.json, "status", NULL),
					    "ok"),
			  "%s: %s", good[i], o.out);
		release(&o);
		free(c);
	}
}

/* Both sides' calls are forward(*inputs): a ModelNew whose class replaces
 * __call__ (with one that answers zeros) is judged by its forward, and a
 * plain class with a __call__ and no forward does not load, with a message
 * that says why. Skipping nn.Module's dispatch on one side only gave
 * 1.16-1.27x on 1_ReLU for the reference's own torch.relu. */
static void test_kernelbench_forward_is_called_on_both_sides(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, CAND "1_ReLU/call_replaced.py",
				"--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	release(&o);
	o = eval(RELU, CAND "1_ReLU/no_forward.py", "--no-timing", NULL,
		 NULL);
	CHECK_MSG(o.json, "%s", o.out);
	CHECK(strcmp(str_at(o.json, "status", NULL), "ok"));
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "ModelNew defines no forward: kforge calls "
		       "forward(*inputs) on both sides");
	release(&o);
}

/* An A/A pair with a large output: the same module on both sides is ok.
 * Before both runners' malloc followed fixed rules, one of them paid page
 * faults for its output on every call and the pair was rejected
 * unaccounted_time (sin over 1M floats, on the host). */
static void test_kernelbench_large_output_aa_is_ok(void)
{
	kf_test_need_torch();
	const char *body =
	    "import torch\n"
	    "class %s(torch.nn.Module):\n"
	    "    def forward(self, x):\n"
	    "        return torch.sin(x)\n"
	    "def get_inputs():\n"
	    "    return [torch.randn(1 << 20)]\n"
	    "def get_init_inputs():\n"
	    "    return []\n";
	char *task = kf_path_join(kf_test_tmpdir(), "sin_1m.py");
	char *cand = kf_path_join(kf_test_tmpdir(), "sin_1m_new.py");
	char *t = kf_xasprintf(body, "Model"), *c = kf_xasprintf(body, "ModelNew");
	CHECK(kf_file_write_atomic(task, t, strlen(t), NULL) == 0);
	CHECK(kf_file_write_atomic(cand, c, strlen(c), NULL) == 0);
	for (int i = 0; i < 2; i++) {
		struct outcome o = eval(task, cand, "--time-cap", "1", NULL);
		expect(&o, "ok", NULL);
		release(&o);
	}
	free(t);
	free(c);
	free(task);
	free(cand);
}

static void test_kernelbench_constant_reference_is_flagged(void)
{
	kf_test_need_torch();
	struct outcome o = eval(CONST, CAND "4_Constant_relu/zeros.py",
				"--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	const cJSON *d = cJSON_GetObjectItem(o.json, "degenerate");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d, "flag")));
	CHECK_CONTAINS(kf_json_str(d, "why"),
		       "output 'out' is the same constant in every trial");
	release(&o);
}

static void test_kernelbench_timing_kforge_protocol(void)
{
	kf_test_need_torch();
	/* A cap of 1 s: 20 pairs even with the cores oversubscribed (0.3 s
	 * gave fewer under four busy loops on two cores). */
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/correct.py", "--time-cap", "1", NULL);
	expect(&o, "ok", NULL);
	const cJSON *tm = cJSON_GetObjectItem(o.json, "timing");
	CHECK_STR(kf_json_str(tm, "protocol"), "kforge");
	CHECK(kf_json_num(tm, "pairs", 0) >= 20);
	const cJSON *c = cJSON_GetObjectItem(tm, "candidate");
	CHECK(kf_json_num(c, "median", 0) > 0);
	CHECK(kf_json_num(cJSON_GetObjectItem(tm, "speedup"), "median", 0) > 0);
	/* On the CPU each runner reports its thread's CPU time, the judge
	 * the runner process's CPU time from outside. */
	const cJSON *raw = cJSON_GetObjectItem(tm, "raw");
	CHECK_STR(kf_json_str(raw, "ns_clock"), "thread_cpu");
	CHECK_STR(kf_json_str(raw, "view_clock"), "process_cpu");
	CHECK(kf_json_num(raw, "candidate_view_ms", 0) >=
	      kf_json_num(raw, "candidate_ms", 1));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(tm, "unaccounted_ms"), "difference")));
	/* The runner's checks after each call, in requests of their own,
	 * each side's CPU time seen apart: both sides ran them. */
	const cJSON *cv = cJSON_GetObjectItem(tm, "checks_view_ms");
	CHECK_STR(kf_json_str(cv, "view"), "cpu");
	CHECK(kf_json_num(cv, "candidate", 0) > 0);
	CHECK(kf_json_num(cv, "reference", 0) > 0);
	CHECK(kf_json_num(cv, "candidate", 0) >
	      0.5 * kf_json_num(cv, "reference", 0));
	/* No FLOP or byte counts: no cap, and the result says so. */
	const cJSON *rf = cJSON_GetObjectItem(o.json, "roofline");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(rf, "bound")));
	CHECK_CONTAINS(kf_json_str(rf, "why"),
		       "the task states no FLOP or byte counts");
	release(&o);
}

static void test_kernelbench_protocol_kernelbench(void)
{
	kf_test_need_torch();
	/* KernelBench checks values and shapes only: a candidate that turns
	 * on TF32 passes its 5 trials, and is timed its way. */
	struct outcome o = eval(MATMUL, CAND "2_Matmul/tf32.py", "--protocol",
				"kernelbench", NULL);
	expect(&o, "ok", NULL);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o.json, "trials")) == 5);
	const cJSON *tm = cJSON_GetObjectItem(o.json, "timing");
	CHECK_STR(kf_json_str(tm, "protocol"), "kernelbench");
	const cJSON *c = cJSON_GetObjectItem(tm, "candidate");
	CHECK(kf_json_num(c, "n", 0) == 100);
	CHECK(kf_json_num(cJSON_GetObjectItem(tm, "reference"), "n", 0) == 100);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(tm, "speedup")));
	CHECK_STR(kf_json_str(tm, "inputs"), "fresh");
	/* Its trial seeds are drawn from the base seed, as KernelBench's. */
	const cJSON *t0 =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(o.json, "trials"), 0);
	CHECK(strcmp(kf_json_str(t0, "seed"), "1"));
	release(&o);
	/* Every timed call gets fresh inputs and is compared: replaying the
	 * last output is wrong, a content cache never hits. */
	o = eval(RELU, RT "replay_last.py", "--protocol", "kernelbench", NULL);
	expect(&o, "wrong_answer", "timed_output");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "timing: the output of timing pair ");
	release(&o);
	o = eval(MATMUL, RT "content_cache.py", "--protocol", "kernelbench",
		 NULL);
	expect(&o, "ok", NULL);
	release(&o);
	/* A cached tensor is still wrong on the next trial's inputs. */
	o = eval(RELU, CAND "1_ReLU/cached.py", "--protocol", "kernelbench",
		 "--no-timing");
	expect(&o, "wrong_answer", "mismatch");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "trial 1 (seed ");
	release(&o);
	/* The timed outputs are held to kforge's precision check: exact in
	 * its 5 trials, then 2e-4 off (twice the bound, within the
	 * tolerance) once timed passed before. */
	o = eval(RELU, RT "relu_scaled_when_timed.py", "--protocol",
		 "kernelbench", NULL);
	expect(&o, "rejected", "precision");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "timing (kernelbench): call ");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "its L1 relative error 0.0002 exceeds 1e-04");
	release(&o);
	/* ... but KernelBench passes lower precision throughout (3e-4 of
	 * the norm in every call, trials included): its timed outputs may be
	 * as imprecise as its trials were. kforge's protocol rejects it. */
	o = eval(RELU, CAND "1_ReLU/scaled.py", "--protocol", "kernelbench",
		 NULL);
	expect(&o, "ok", NULL);
	release(&o);
	o = eval(RELU, CAND "1_ReLU/scaled.py", "--no-timing", NULL, NULL);
	expect(&o, "rejected", "precision");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "trial 0 (seed 1, ");
	release(&o);
}

/*
 * A ModelNew can tell check calls drawn like the trials (values reshaped:
 * standard deviations of 0.3, 0.5, 2.9) from the timed calls (get_inputs():
 * about 1) by their statistics. layernorm_rsqrt_when_timed is exact on the
 * trials (counted out) and on such inputs, and rounds its reciprocal square
 * root to 12 bits otherwise: about 5e-5 of the norm, under the timed
 * outputs' yardstick where get_inputs() draws rows of mean 30 in a trial
 * (their noise is twenty times larger), so it passed. Check calls drawn
 * as the timed calls' inputs are meet it and measure their own inputs'
 * noise; the honest two-pass normalisation passes them.
 */
static void test_kernelbench_check_calls_drawn_as_timed_inputs(void)
{
	kf_test_need_torch();
	const char *task = RT "tasks/layernorm_offset.py";
	struct outcome o = eval(task, RT "layernorm_rsqrt_when_timed.py",
				"--time-cap", "1", NULL);
	expect(&o, "rejected", "precision");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "timing: check call ");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       ", on inputs drawn as the timed calls' are "
		       "(get_inputs() under a fresh seed): output 'out' is "
		       "within the tolerance");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "times the reference's own rounding error on the same "
		       "inputs");
	release(&o);
	o = eval(task, RT "honest_layernorm_offset.py", "--time-cap", "1",
		 NULL);
	CHECK_MSG(o.json, "no result: %s", o.out);
	const char *st = str_at(o.json, "status", NULL);
	if (strcmp(st, "ok"))
		expect(&o, "rejected", "unaccounted_time");
	else
		CHECK(kf_json_num(cJSON_GetObjectItem(o.json, "timing"),
				  "check_calls", 0) >= 6);
	release(&o);
}

static void test_kernelbench_bad_input_exits_2(void)
{
	char *bad = kf_path_join(kf_test_tmpdir(), "9_NoModel.py");
	const char *text = "import torch\ndef get_inputs():\n    return []\n";
	CHECK(kf_file_write_atomic(bad, text, strlen(text), NULL) == 0);
	struct outcome o =
	    eval(bad, CAND "1_ReLU/correct.py", "--no-timing", NULL, NULL);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "9_NoModel.py: not a KernelBench-format task: "
			      "no 'class Model'");
	release(&o);
	o = eval(RELU, "tests/fixtures/rowsum/task.json", "--no-timing", NULL,
		 NULL);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "task.json: a candidate for a KernelBench-format "
			      "task is a Python file defining ModelNew");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/correct.py", "--python", "/bin/true", NULL);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "--python: /bin/true cannot import torch");
	release(&o);
	free(bad);
}

static void test_kernelbench_kforge_kernel_fast_path(void)
{
	kf_test_need_torch();
	/* A kf_entry kernel, compiled by kforge's toolchain, called on the
	 * tensors of get_inputs() with outputs kforge allocates. */
	struct outcome o = eval(RELU, CAND "1_ReLU/kernel.c", "--no-timing",
				"--no-cache", NULL);
	expect(&o, "ok", NULL);
	const cJSON *cc = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o.json, "compile"), "candidate");
	CHECK(kf_json_num(cc, "seconds", 0) > 0);
	CHECK(strlen(kf_json_str(cc, "key")) == 64);
	CHECK_CONTAINS(kf_json_str(cc, "command"), "kernel.c");
	CHECK(cJSON_IsArray(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o.json, "candidate"), "imports")));
	release(&o);
	/* Its outputs are poisoned: what it leaves unwritten shows. */
	o = eval(RELU, CAND "1_ReLU/kernel_half.c", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "unwritten");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "8192 of 16384 elements were not written");
	release(&o);
}

/* The candidate's module replaces torch.relu, which the task's Model
 * calls: the reference runs in a process that never imported it. */
static void test_kernelbench_candidate_cannot_patch_the_reference(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, CAND "1_ReLU/patch_reference.py",
				"--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	release(&o);
}

/* A candidate that makes the reference sleep in its own process is timed
 * against a reference it could not touch. */
static void test_kernelbench_reference_is_timed_in_a_clean_process(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, CAND "1_ReLU/slow_reference.py",
				"--time-cap", "0.3", NULL);
	expect(&o, "ok", NULL);
	const cJSON *tm = cJSON_GetObjectItem(o.json, "timing");
	double sp =
	    kf_json_num(cJSON_GetObjectItem(tm, "speedup"), "median", 0);
	/* With a reference slowed by 5 ms a call it would be about 30x. */
	CHECK_MSG(sp > 0 && sp < 3, "speedup %.3f", sp);
	release(&o);
}

/* A candidate that forges the CPU clock its runner reads: the judge reads
 * the process's CPU time from outside and sees the time it hid. */
static void test_kernelbench_forged_clock_is_unaccounted_time(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, RT "forge_cpu_clock.py", "--time-cap", "0.2", NULL);
	expect(&o, "rejected", "unaccounted_time");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "but the engine's own view of its calls (CPU time) "
		       "exceeded that by ");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "time its process did not report");
	release(&o);
}

/* A candidate that replaces a function its runner times with (the thread
 * CPU clock, wound back after each call) is told so, by name, whatever it
 * gained. */
static void test_kernelbench_replaced_clock_is_tampering(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, RT "patch_thread_clock.py", "--time-cap", "0.2", NULL);
	expect(&o, "rejected", "tampering");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate replaced time.thread_time_ns when "
		       "loaded: functions its runner times, synchronises, "
		       "copies or checks with");
	release(&o);
}

/* The whole KernelBench-format corpus (redteam/kernelbench.json): every
 * hack caught for its reason, every honest ModelNew accepted, two at once
 * (each verdict must hold at load). A few minutes; run once, in make
 * test. */
static void test_kernelbench_corpus_all_as_expected(void)
{
	kf_test_need_torch();
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *argv[10] = {exe, "redteam", "--manifest",
			  "redteam/kernelbench.json", "--jobs", "2"};
	const char *extra[3] = {NULL, NULL, NULL};
	int code = 0;
	char *out = run_kforge(argv, 6, extra, 3600000, &code);
	CHECK_MSG(code == 0, "%s", out);
	CHECK_CONTAINS(out, "as expected, 0 not");
	CHECK(!strstr(out, "UNEXPECTED"));
	free(out);
	free(exe);
}

/* The candidate's process dies of a signal: the judge ends the same way,
 * and the evaluation reports the crash as for any candidate, naming the
 * candidate's process (not the bridge, which only mirrored its end). */
static void test_kernelbench_candidate_crash_is_reported(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/segfault.py", "--no-timing", NULL, NULL);
	expect(&o, "runtime_error", "crash");
	const char *why = str_at(o.json, "reason", NULL);
	CHECK_CONTAINS(why, "SIGSEGV");
	CHECK_CONTAINS(why, "the candidate's process died");
	CHECK(!strstr(why, "bridge"));
	release(&o);
}

/* A ModelNew whose import-time code lists other processes, reads their
 * command lines, signals them, opens the machine's files, writes outside
 * its build directory or uses the network finds none of it (its runner is
 * in namespaces of its own under bubblewrap) and falls back to zeros. */
static void test_kernelbench_candidate_runner_is_confined(void)
{
	kf_test_need_torch();
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/escape.py", "--no-timing", NULL, NULL);
	expect(&o, "wrong_answer", "mismatch");
	CHECK_CONTAINS(o.out, "escape: []");
	release(&o);
}

/* Without bubblewrap the runners are not started unconfined: the
 * evaluation is the engine's failure, and says what is missing. */
static void test_kernelbench_missing_bwrap_is_infra_error(void)
{
	kf_test_need_torch();
	setenv("KFORGE_BWRAP", "/nonexistent/bwrap", 1);
	struct outcome o =
	    eval(RELU, CAND "1_ReLU/correct.py", "--no-timing", NULL, NULL);
	CHECK_STR(str_at(o.json, "status", NULL), "infra_error");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL), "bubblewrap");
	release(&o);
}

/* The check calls among the timed calls are asked as the timed calls are:
 * a candidate that reads its runner's request (sys._getframe) finds the
 * same keys on every one (a check call lacked inputs_after, and a
 * precision cut made only where it was absent passed, blind round 25). */
static void test_kernelbench_check_calls_are_asked_as_timed_calls(void)
{
	kf_test_need_torch();
	struct outcome o = eval(RELU, CAND "1_ReLU/reads_request.py",
				"--time-cap", "1", NULL);
	expect(&o, "runtime_error", "return_code");
	const char *why = str_at(o.json, "reason", NULL);
	CHECK_CONTAINS(why, "APART ");
	CHECK_CONTAINS(why, " SHORT 0");
	CHECK_MSG(!strstr(why, "APART 0 "), "%s", why);
	release(&o);
}

/* A build directory past 10,000 entries stops the candidate's runner
 * (runtime_error/files) and is removed, nothing of it kept in the cache:
 * empty files cost inodes the bytes bound does not see (blind round 25). */
static void test_kernelbench_build_directory_entries_are_bounded(void)
{
	kf_test_need_torch();
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	struct outcome o = eval(RELU, CAND "1_ReLU/many_files.py",
				"--no-timing", NULL, NULL);
	expect(&o, "runtime_error", "files");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate's build directory held more than 10000 "
		       "entries");
	release(&o);
	char *cmd = kf_xasprintf("find %s/torch_extensions | wc -l", cache);
	FILE *f = popen(cmd, "r");
	long n = -1;
	CHECK(f && fscanf(f, "%ld", &n) == 1);
	if (f)
		pclose(f);
	CHECK_MSG(n >= 0 && n < 100, "%ld entries left", n);
	free(cmd);
	free(cache);
}

/* A candidate whose load waits (a sleep at import: no CPU, nothing
 * runnable) is stopped after 10 s of it, its own timeout/load_time: it
 * held a worker until the request's deadline and its wrong answer became
 * an infra_error (blind round 25). */
static void test_kernelbench_load_that_waits_is_the_candidates_timeout(void)
{
	kf_test_need_torch();
	uint64_t t0 = kf_now_ns();
	struct outcome o = eval(RELU, CAND "1_ReLU/sleeps_at_import.py",
				"--no-timing", NULL, NULL);
	expect(&o, "timeout", "load_time");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "the candidate's load waited 10.");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "without using a CPU (a sleep or a blocking call at "
		       "import or in its constructor), past the limit of 10 s");
	/* Stopped, not waited for: the sleep is 600 s. */
	CHECK((kf_now_ns() - t0) / 1e9 < 300);
	release(&o);
}

/* A runner's resident memory past KFORGE_RUNNER_MEM_MB (plus four times
 * its tensors) stops it: the candidate's runtime_error (memory), the
 * figures in the reason; an honest candidate under the same limit is ok;
 * a bad value is refused naming the variable (a blind round held 3 GB of
 * memory no limit counted from one ModelNew). */
static void test_kernelbench_runner_memory_limit(void)
{
	kf_test_need_torch();
	setenv("KFORGE_RUNNER_MEM_MB", "768", 1);
	struct outcome o = eval(RELU, CAND "1_ReLU/memory_hog.py",
				"--no-timing", NULL, NULL);
	expect(&o, "runtime_error", "memory");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "over the limit of 768 MiB (KFORGE_RUNNER_MEM_MB=768 "
		       "plus four times its 0.1 MiB of tensors)");
	release(&o);
	o = eval(RELU, CAND "1_ReLU/correct.py", "--no-timing", NULL, NULL);
	expect(&o, "ok", NULL);
	release(&o);
	setenv("KFORGE_RUNNER_MEM_MB", "12k", 1);
	o = eval(RELU, CAND "1_ReLU/correct.py", "--no-timing", NULL, NULL);
	CHECK_STR(str_at(o.json, "status", NULL), "infra_error");
	CHECK_CONTAINS(str_at(o.json, "reason", NULL),
		       "KFORGE_RUNNER_MEM_MB=12k: a candidate runner's "
		       "resident memory limit is a whole number of MiB");
	release(&o);
	unsetenv("KFORGE_RUNNER_MEM_MB");
}

/* `kforge eval --batch` takes KernelBench-format pairs: each is evaluated
 * by the bridge in a device slot (nothing native is compiled for it), a
 * correct candidate ok and a wrong one wrong_answer, in the batch's order. */
static void test_kernelbench_eval_batch_takes_kernelbench_pairs(void)
{
	kf_test_need_torch();
	char *batch = kf_path_join(kf_test_tmpdir(), "kb.batch");
	/* A build that fails at once (an option the compiler refuses). */
	char *badflag = kf_path_join(kf_test_tmpdir(), "bad_flag.py");
	const char *bad =
	    "import torch\n"
	    "from torch.utils.cpp_extension import load_inline\n"
	    "ext = load_inline(name='kforge_test_bad_flag', cpp_sources="
	    "'torch::Tensor f(torch::Tensor x) { return x; }', "
	    "functions=['f'], extra_cflags=['-fno-such-option-anywhere'])\n"
	    "class ModelNew(torch.nn.Module):\n"
	    "    def forward(self, x):\n"
	    "        return ext.f(x).clamp(min=0)\n";
	CHECK(kf_file_write_atomic(badflag, bad, strlen(bad), NULL) == 0);
	/* The same in ModelNew's constructor, caught: a fallback. */
	char *ctor = kf_path_join(kf_test_tmpdir(), "bad_flag_ctor.py");
	const char *bad_ctor =
	    "import torch\n"
	    "from torch.utils.cpp_extension import load_inline\n"
	    "class ModelNew(torch.nn.Module):\n"
	    "    def __init__(self):\n"
	    "        super().__init__()\n"
	    "        try:\n"
	    "            self.ext = load_inline(name='kforge_test_bad_ctor', "
	    "cpp_sources='torch::Tensor f(torch::Tensor x) { return x; }', "
	    "functions=['f'], extra_cflags=['-fno-such-option-in-ctor'])\n"
	    "        except RuntimeError:\n"
	    "            self.ext = None\n"
	    "    def forward(self, x):\n"
	    "        return x.clamp(min=0)\n";
	CHECK(kf_file_write_atomic(ctor, bad_ctor, strlen(bad_ctor), NULL) ==
	      0);
	char *text = kf_xasprintf(
	    KB "level1/1_ReLU.py " KB "candidates/1_ReLU/correct.py\n"
	    KB "level1/1_ReLU.py " KB "candidates/1_ReLU/wrong.py\n"
	    KB "level1/3_Sum_reduction.py " KB
	    "candidates/3_Sum_reduction/correct.py\n"
	    KB "level1/1_ReLU.py %s\n" KB "level1/1_ReLU.py %s\n", badflag,
	    ctor);
	CHECK(kf_file_write_atomic(batch, text, strlen(text), NULL) == 0);
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *argv[] = {exe,	    "eval",	"--batch", batch,
			"--jobs",   "2",	"--trials", "5",
			"--time-cap", "0.2", "--energy-time", "0",
			"--json",   NULL};
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int status = 0;
	CHECK(kf_proc_run(argv, 600000, 1 << 22, &sb, &status, NULL) == 0);
	cJSON *all = cJSON_Parse(kf_strbuf_str(&sb));
	CHECK_MSG(cJSON_IsArray(all) && cJSON_GetArraySize(all) == 5, "%s",
		  kf_strbuf_str(&sb));
	const char *want[] = {"ok", "wrong_answer", "ok", "compile_error",
			      "ok"};
	for (int i = 0; i < 5 && all; i++) {
		const cJSON *r = cJSON_GetArrayItem(all, i);
		CHECK_MSG(r && kf_json_str(r, "status") &&
			      !strcmp(kf_json_str(r, "status"), want[i]),
			  "item %d: %s", i, kf_strbuf_str(&sb));
		/* Nothing native is compiled for a ModelNew; one that
		 * builds an extension had it prebuilt, on no device. */
		const cJSON *fm = cJSON_GetObjectItem(r, "farm");
		if (i < 3)
			CHECK(fm && kf_json_num(fm, "compile_s", -1) == 0);
		else
			CHECK(fm && kf_json_num(fm, "compile_s", -1) > 0);
		/* Where its time went: loaded, then its trials (and the
		 * timing of those that passed); the wait for the slot is
		 * not in its seconds. */
		const cJSON *ph = cJSON_GetObjectItem(r, "phases");
		double load = kf_json_num(ph, "load", -1);
		double trials = kf_json_num(ph, "trials", -1);
		double timing = kf_json_num(ph, "timing", -1);
		double wait = kf_json_num(ph, "wait", -1);
		CHECK_MSG(load > 0 && wait >= 0, "item %d phases", i);
		if (!strcmp(want[i], "ok"))
			CHECK_MSG(trials > 0 && timing > 0 &&
				      kf_json_num(r, "seconds", 0) >=
					  load + trials + timing - 0.01,
				  "item %d: phases load %.2f trials %.2f "
				  "timing %.2f, seconds %.2f",
				  i, load, trials, timing,
				  kf_json_num(r, "seconds", 0));
	}
	/* The failed build is the evaluation's own verdict, with its log. */
	const cJSON *last = cJSON_GetArrayItem(all, 3);
	char *last_text = last ? cJSON_PrintUnformatted(last) : NULL;
	CHECK_MSG(last_text && strstr(last_text, "fno-such-option-anywhere"),
		  "%s", last_text ? last_text : "(none)");
	free(last_text);
	/* The constructor's failed build was met by the prebuild: the
	 * evaluation found it remembered and did not build again. */
	const cJSON *b0 = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(
		cJSON_GetObjectItem(
		    cJSON_GetObjectItem(cJSON_GetArrayItem(all, 4), "compile"),
		    "candidate"),
		"builds"),
	    0);
	CHECK_MSG(b0 && cJSON_IsTrue(cJSON_GetObjectItem(b0, "cached")),
		  "%s", kf_strbuf_str(&sb));
	cJSON_Delete(all);
	kf_strbuf_release(&sb);
	free(text);
	free(badflag);
	free(ctor);
	free(exe);
	free(batch);
}

/* The task's own Model as its candidate (an A/A pair), in dir. */
static char *aa_candidate(const char *dir, const char *task)
{
	char *path = kf_path_join(dir, "aa_relu.py");
	char *text = kf_test_read_text(task);
	char *aa = kf_xasprintf("%s\n\nModelNew = Model\n", text);
	kf_test_write_text(path, aa);
	free(aa);
	free(text);
	return path;
}

/* One line of tests/bridge_warm.py's output: the k-th candidate's. */
static cJSON *warm_line(const char *out, int k)
{
	const char *at = out;
	for (int i = 0; i < k && at; i++) {
		at = strchr(at, '\n');
		if (at)
			at++;
	}
	while (at && *at && *at != '{') { /* a line of the bridge's own */
		at = strchr(at, '\n');
		if (at)
			at++;
	}
	return at && *at ? cJSON_ParseWithOpts(at, NULL, false) : NULL;
}

static double runner_pid(const cJSON *line, const char *side)
{
	return kf_json_num(cJSON_GetObjectItem(line, "runners"), side, -1);
}

/* A warm bridge (the bridge's next request, driven as a batch's pool
 * drives it): one judge and one reference's runner for every candidate of
 * the task, each candidate in a runner of its own, whose end is seen. A
 * candidate that changes torch's flags, patches torch.clamp and leaves
 * files in /tmp and its build directory is followed by one that looks for
 * all of it and finds none; after each one's timing the reference is timed
 * alone (op "alone"), its candidate's runner ended first; a crash ends the bridge, and the next
 * candidate loads in a fresh one; the task's own Model as its candidate
 * matches. */
static void test_kernelbench_warm_bridge_renews_the_candidates_runner(void)
{
	kf_test_need_torch();
	struct kf_err err = KF_ERR_INIT;
	char *python = kf_eval_python(&err);
	CHECK_MSG(python, "%s", err.msg);
	char *script =
	    kf_path_join(kf_test_build_dir(), "runner/kforge_bridge.py");
	char *aa = aa_candidate(kf_test_tmpdir(), RELU);
	char *argv[] = {python,
			"tests/bridge_warm.py",
			script,
			RELU,
			CAND "1_ReLU/correct.py",
			CAND "1_ReLU/wrong.py",
			CAND "1_ReLU/leave_state.py",
			CAND "1_ReLU/probe_state.py",
			aa,
			CAND "1_ReLU/segfault.py",
			CAND "1_ReLU/probe_state.py",
			CAND "1_ReLU/correct.py",
			NULL};
	int code = -1;
	char *out = kf_test_run(argv, 600000, 1 << 22, &code);
	CHECK_MSG(code == 0, "%s", out);
	cJSON *l[8];
	for (int k = 0; k < 8; k++) {
		l[k] = warm_line(out, k);
		CHECK_MSG(l[k], "line %d: %s", k, out);
	}
	double ref = runner_pid(l[0], "reference");
	CHECK_STR(kf_json_str(l[0], "op"), "load");
	for (int k = 0; k < 8 && l[0] && l[7]; k++) {
		const cJSON *x = l[k];
		/* Each candidate loaded, in a runner of its own. */
		CHECK_MSG(!strcmp(kf_json_str(x, "load"), "loaded"), "%d: %s",
			  k, out);
		for (int j = 0; j < k; j++)
			CHECK_MSG(runner_pid(x, "candidate") !=
				      runner_pid(l[j], "candidate"),
				  "%d and %d share a runner: %s", k, j, out);
		const cJSON *t0 =
		    cJSON_GetArrayItem(cJSON_GetObjectItem(x, "trials"), 0);
		if (k == 5) { /* the crash ends the bridge */
			CHECK(cJSON_IsString(t0) &&
			      !strcmp(t0->valuestring, "died"));
			continue;
		}
		/* Before the crash, the same reference's runner; after it,
		 * another bridge's, then kept again. */
		if (k < 6)
			CHECK_MSG(runner_pid(x, "reference") == ref, "%d: %s",
				  k, out);
		else
			CHECK_MSG(runner_pid(x, "reference") != ref &&
				      runner_pid(x, "reference") ==
					  runner_pid(l[6], "reference"),
				  "%d: %s", k, out);
		CHECK_STR(kf_json_str(x, "op"), k == 0 || k == 6 ? "load"
								 : "next");
		/* The reference timed alone after the candidate's runner
		 * ended (seen gone), then ended, still seen gone. */
		const cJSON *al = cJSON_GetObjectItem(x, "alone");
		CHECK_MSG(!strcmp(kf_json_str(al, "ev"), "alone") &&
			      kf_json_num(al, "calls", 0) == 3 &&
			      cJSON_IsTrue(cJSON_GetObjectItem(al, "gone")),
			  "%d: %s", k, out);
		CHECK_MSG(cJSON_IsTrue(cJSON_GetObjectItem(
			      cJSON_GetObjectItem(x, "ended"), "gone")),
			  "%d: %s", k, out);
		CHECK_MSG(cJSON_IsNull(cJSON_GetObjectItem(t0, "cand_error")),
			  "%d: %s", k, out);
		const cJSON *mm = cJSON_GetArrayItem(
		    cJSON_GetObjectItem(t0, "mismatches"), 0);
		CHECK_MSG(cJSON_IsNumber(mm) &&
			      (k == 1 ? mm->valuedouble > 0
				      : mm->valuedouble == 0),
			  "%d: %s", k, out);
	}
	for (int k = 0; k < 8; k++)
		cJSON_Delete(l[k]);
	free(out);
	free(aa);
	free(script);
	free(python);
}

/* `kforge eval --batch` with pairs of one task: bridges are kept warm and
 * serve later pairs (worker.warm), with the statuses and reasons a cold
 * evaluation gives: a correct, a wrong, a crash followed by a correct one,
 * one that leaves global state changed followed by one that looks for it,
 * an A/A pair, a syntax error. A warm one's load is the candidate's, not
 * the bridge's start. */
/* kforge kernels (.c) through warm bridges, between ModelNew files of the
 * same task: each verdict as a cold bridge gives it, the outputs poisoned
 * again for each (a kernel that writes half of them is "unwritten" in a
 * bridge whose last candidate wrote them all), and the bridge kept. */
static void test_kernelbench_warm_bridge_takes_kforge_kernels(void)
{
	kf_test_need_torch();
	char *batch = kf_path_join(kf_test_tmpdir(), "kernels.batch");
	const char *cands[] = {"kernel.c", "correct.py", "kernel.c",
			       "kernel_half.c", "kernel.c"};
	const char *want[][2] = {{"ok", NULL},
				 {"ok", NULL},
				 {"ok", NULL},
				 {"wrong_answer", "unwritten"},
				 {"ok", NULL}};
	enum { N = 5 };
	struct kf_strbuf text = KF_STRBUF_INIT;
	for (int i = 0; i < N; i++)
		kf_strbuf_addf(&text, "%s %s1_ReLU/%s\n", RELU, CAND, cands[i]);
	kf_test_write_text(batch, kf_strbuf_str(&text));
	const char *args[] = {"eval",	    "--batch",	     batch, "--jobs",
			      "1",	    "--trials",	     "5",   "--time-cap",
			      "0.2",	    "--energy-time", "0",   "--json",
			      NULL};
	int code = -1;
	char *out = kf_test_kforge(args, 600000, 1 << 23, &code);
	cJSON *all = cJSON_Parse(out);
	CHECK_MSG(cJSON_IsArray(all) && cJSON_GetArraySize(all) == N, "%s",
		  out);
	int warm = 0;
	for (int i = 0; i < N && all; i++) {
		const cJSON *r = cJSON_GetArrayItem(all, i);
		CHECK_MSG(!strcmp(kf_json_str(r, "status"), want[i][0]),
			  "item %d (%s): %s, want %s: %s", i, cands[i],
			  kf_json_str(r, "status"), want[i][0],
			  kf_json_str(r, "reason"));
		if (want[i][1])
			CHECK_STR(kf_json_str(r, "check"), want[i][1]);
		const cJSON *wm = cJSON_GetObjectItem(
		    cJSON_GetObjectItem(r, "worker"), "warm");
		CHECK_MSG(cJSON_IsBool(wm), "item %d: no worker.warm", i);
		warm += cJSON_IsTrue(wm);
	}
	CHECK_CONTAINS(kf_json_str(cJSON_GetArrayItem(all, 3), "reason"),
		       "8192 of 16384 elements were not written");
	/* One bridge at a time: all but the first two (the second is
	 * loaded while the first is measured) come warm. */
	CHECK_MSG(warm >= N - 2, "%d of %d warm", warm, N);
	cJSON_Delete(all);
	free(out);
	kf_strbuf_release(&text);
	free(batch);
}

static void test_kernelbench_warm_bridges_in_a_batch(void)
{
	kf_test_need_torch();
	char *batch = kf_path_join(kf_test_tmpdir(), "warm.batch");
	char *aa = aa_candidate(kf_test_tmpdir(), RELU);
	const char *cands[] = {"correct",     "wrong",	     "segfault",
			       "correct",     "leave_state", "probe_state",
			       NULL,	      "syntax",	     "correct"};
	const char *want[][2] = {{"ok", NULL},
				 {"wrong_answer", "mismatch"},
				 {"runtime_error", "crash"},
				 {"ok", NULL},
				 {"rejected", "global_state"},
				 {"ok", NULL},
				 {"ok", NULL},
				 {"load_error", "load"},
				 {"ok", NULL}};
	enum { N = 9 };
	struct kf_strbuf text = KF_STRBUF_INIT;
	for (int i = 0; i < N; i++) {
		if (cands[i])
			kf_strbuf_addf(&text, "%s %s1_ReLU/%s.py\n", RELU,
					 CAND, cands[i]);
		else
			kf_strbuf_addf(&text, "%s %s\n", RELU, aa);
	}
	kf_test_write_text(batch, kf_strbuf_str(&text));
	const char *args[] = {"eval",	    "--batch",	   batch,   "--jobs",
			      "2",	    "--trials",	   "5",	    "--time-cap",
			      "0.2",	    "--energy-time", "0",   "--json",
			      NULL};
	int code = -1;
	char *out = kf_test_kforge(args, 600000, 1 << 23, &code);
	cJSON *all = cJSON_Parse(out);
	CHECK_MSG(cJSON_IsArray(all) && cJSON_GetArraySize(all) == N, "%s",
		  out);
	int warm = 0;
	double cold_max = 0, warm_max = 0;
	for (int i = 0; i < N && all; i++) {
		const cJSON *r = cJSON_GetArrayItem(all, i);
		CHECK_MSG(!strcmp(kf_json_str(r, "status"), want[i][0]),
			  "item %d: %s, want %s: %s", i,
			  kf_json_str(r, "status"), want[i][0],
			  kf_json_str(r, "reason"));
		if (want[i][1])
			CHECK_STR(kf_json_str(r, "check"), want[i][1]);
		const cJSON *w = cJSON_GetObjectItem(r, "worker");
		const cJSON *wm = cJSON_GetObjectItem(w, "warm");
		CHECK_MSG(cJSON_IsBool(wm), "item %d: no worker.warm", i);
		double load =
		    kf_json_num(cJSON_GetObjectItem(r, "phases"), "load", -1);
		if (cJSON_IsTrue(wm)) {
			warm++;
			warm_max = load > warm_max ? load : warm_max;
		} else {
			cold_max = load > cold_max ? load : cold_max;
		}
		/* A bridge kept after a clean end says so; the crash's
		 * ended with the candidate's process. */
		if (i == 2)
			CHECK_CONTAINS(kf_json_str(w, "exit"), "SIGSEGV");
		else
			CHECK_STR(kf_json_str(w, "exit"),
				  "kept for the next evaluation");
	}
	/* What the cold path says of these (see the cases above). */
	const cJSON *r4 = cJSON_GetArrayItem(all, 4);
	CHECK_CONTAINS(kf_json_str(r4, "reason"),
		       "torch.backends.mkldnn.enabled=False");
	const cJSON *r2 = cJSON_GetArrayItem(all, 2);
	CHECK_CONTAINS(kf_json_str(r2, "reason"),
		       "the candidate's process died");
	const cJSON *r7 = cJSON_GetArrayItem(all, 7);
	CHECK_CONTAINS(kf_json_str(r7, "reason"), "1_ReLU/syntax.py: "
						  "SyntaxError");
	/* Two bridges run the task at most: most pairs find one warm. */
	CHECK_MSG(warm >= 4, "%d warm: %s", warm, out);
	CHECK_MSG(warm_max < cold_max, "warm loads up to %.2f s, cold %.2f s",
		  warm_max, cold_max);
	cJSON_Delete(all);
	kf_strbuf_release(&text);
	free(out);
	free(aa);
	free(batch);
}

static void test_kernelbench_bench_jsonl_metrics(void)
{
	kf_test_need_torch();
	const char *dir = kf_test_tmpdir();
	char *jsonl = kf_path_join(dir, "cands.jsonl");
	char *out = kf_path_join(dir, "eval_results.json");
	/* One correct candidate, one wrong; the other two tasks have none. */
	const char *text =
	    "{\"task\": \"1_ReLU\", \"code\": \"import torch\\n"
	    "class ModelNew(torch.nn.Module):\\n"
	    "    def forward(self, x):\\n"
	    "        return x.clamp(min=0)\\n\"}\n"
	    "{\"task\": \"level1/2_Matmul\", \"code\": \"import torch\\n"
	    "class ModelNew(torch.nn.Module):\\n"
	    "    def forward(self, A, B):\\n"
	    "        return A @ B.t()\\n\"}\n";
	CHECK(kf_file_write_atomic(jsonl, text, strlen(text), NULL) == 0);
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *argv[] = {exe,	       "bench",	       RELU,  MATMUL,	SUM,
			CONST,	       "--candidates", jsonl, "--out",	out,
			"--no-timing", "--trials",     "5",   "--json", NULL};
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int status = 0;
	CHECK(kf_proc_run(argv, 300000, 1 << 20, &sb, &status, NULL) == 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s",
		  kf_strbuf_str(&sb));
	const char *j = strstr(kf_strbuf_str(&sb), "\n{");
	cJSON *sum = cJSON_Parse(j ? j : kf_strbuf_str(&sb));
	CHECK_MSG(sum, "%s", kf_strbuf_str(&sb));
	CHECK(kf_json_num(sum, "n", 0) == 4);
	CHECK(kf_json_num(sum, "correct", 0) == 1);
	CHECK(kf_json_num(sum, "correctness_rate", 0) == 0.25);
	/* Untimed candidates are not fast at any p. */
	CHECK(kf_json_num(cJSON_GetObjectItem(sum, "fast_p"), "0", -1) == 0);
	const cJSON *rows = cJSON_GetObjectItem(sum, "tasks");
	CHECK_STR(str_at(cJSON_GetArrayItem(rows, 1), "check", NULL),
		  "mismatch");
	CHECK_STR(str_at(cJSON_GetArrayItem(rows, 2), "error", NULL),
		  "no candidate");
	char *er_text = NULL;
	CHECK(kf_file_read(out, 1 << 20, &er_text, NULL, NULL) == 0);
	cJSON *er = cJSON_Parse(er_text);
	const cJSON *p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(er, "1"), 0);
	const cJSON *p2 = cJSON_GetArrayItem(cJSON_GetObjectItem(er, "2"), 0);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(p1, "correctness")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(p2, "compiled")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(p2, "correctness")));
	cJSON_Delete(er);
	cJSON_Delete(sum);
	free(er_text);
	kf_strbuf_release(&sb);
	free(exe);
	free(jsonl);
	free(out);
}

/* The four level-1 tasks that have a candidate in modelnew/ (level1/ also
 * holds tasks without one, for bench/kernelbench_aa.py). */
static const char *const level1_modelnew[] = {RELU, MATMUL, SUM, CONST, NULL};

/* Runs `kforge bench TASKS... --candidates modelnew/ --trials 5 --time-cap
 * 0.05 [extra...]` with the cache in the case's own directory; returns
 * the output (stdout and stderr), *code its exit code. */
static char *bench_tasks(int *code, const char *const *tasks, const char *e0,
			 const char *e1, const char *e2)
{
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	char *out = kf_path_join(kf_test_tmpdir(), "eval_results.json");
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *argv[24] = {exe, "bench"};
	int n = 2;
	for (int i = 0; tasks[i] && n < 12; i++)
		argv[n++] = (char *)tasks[i];
	const char *rest[] = {
	    "--candidates", KB "modelnew", "--out",	 out,
	    "--trials",	    "5",	   "--time-cap", "0.05"};
	for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
		argv[n++] = (char *)rest[i];
	const char *extra[] = {e0, e1, e2};
	char *text = run_kforge(argv, n, extra, 600000, code);
	free(exe);
	free(out);
	free(cache);
	return text;
}

static char *bench(int *code, const char *task, const char *e0, const char *e1,
		   const char *e2)
{
	const char *tasks[] = {task, NULL};
	return bench_tasks(code, tasks, e0, e1, e2);
}

/* The summary JSON in the output of `kforge bench --json`. */
static cJSON *bench_json(const char *out)
{
	const char *j = out[0] == '{' ? out : strstr(out, "\n{");
	cJSON *sum = j ? cJSON_Parse(j) : NULL;
	CHECK_MSG(sum, "%s", out);
	return sum;
}

/* kforge bench prints each speedup's interval and, with --protocol both,
 * KernelBench's speedup beside it; the JSON rows carry both. */
static void test_kernelbench_bench_shows_intervals_and_both_protocols(void)
{
	kf_test_need_torch();
	int code = 0;
	char *out = bench(&code, RELU, "--protocol", "both", NULL);
	CHECK_MSG(code == 0, "%s", out);
	CHECK_CONTAINS(out, "[95% CI]");
	CHECK_CONTAINS(out, "kb_speedup");
	const char *row = strstr(out, "\nlevel1/1_ReLU ");
	CHECK_MSG(row && strchr(row, '['), "%s", out);
	free(out);
	out = bench(&code, RELU, "--protocol", "both", "--json");
	CHECK_MSG(code == 0, "%s", out);
	cJSON *sum = bench_json(out);
	const cJSON *r0 =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "tasks"), 0);
	const cJSON *ci = cJSON_GetObjectItem(r0, "speedup_ci95");
	CHECK(cJSON_GetArraySize(ci) == 2);
	double sp = kf_json_num(r0, "speedup", NAN);
	CHECK(cJSON_GetArrayItem(ci, 0)->valuedouble <= sp &&
	      sp <= cJSON_GetArrayItem(ci, 1)->valuedouble);
	CHECK(kf_json_num(r0, "speedup_kernelbench", -1) > 0);
	cJSON_Delete(sum);
	free(out);
}

static void test_kernelbench_bench_unknown_baseline_names_the_valid(void)
{
	int code = 0;
	char *out = bench(&code, RELU, "--baseline", "compile,bogus", NULL);
	CHECK(code == 2);
	CHECK_CONTAINS(out, "--baseline: unknown baseline 'bogus' (valid: "
			    "eager, compile, compile_ro, cudagraph)");
	free(out);
}

/* A baseline stands in for the candidate: the task's own Model, eager,
 * checked against itself; a native task has none. */
static void test_kernelbench_baseline_eager_evaluates_the_model(void)
{
	kf_test_need_torch();
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 1;
	o.trials = 5;
	o.no_timing = true;
	o.baseline = "eager";
	cJSON *r = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_eval(RELU, NULL, &o, &r, &err) == 0, "%s", err.msg);
	CHECK_MSG(!strcmp(kf_json_str(r, "status"), "ok"), "%s",
		  kf_json_str(r, "reason"));
	const cJSON *c = cJSON_GetObjectItem(r, "candidate");
	CHECK_STR(kf_json_str(c, "path"), "baseline:eager");
	CHECK(strlen(kf_json_str(c, "sha256")) == 64);
	cJSON_Delete(r);
	r = NULL;
	CHECK(kf_eval("tests/fixtures/rowsum", NULL, &o, &r, &err) ==
	      KF_EINVAL);
	CHECK_CONTAINS(err.msg, "--baseline: tests/fixtures/rowsum is a "
				"native task");
	CHECK(r == NULL);
}

/* torch 1.13 has no torch.compile: every task lacks that baseline, which
 * counts no task fast, while the eager metrics stay as they are. */
static void test_kernelbench_bench_baseline_unavailable_on_old_torch(void)
{
	kf_test_need_torch();
	int code = 0;
	char *out =
	    bench_tasks(&code, level1_modelnew, "--baseline", "compile", NULL);
	CHECK_MSG(code == 0, "%s", out);
	CHECK_CONTAINS(out, "baseline eager (the task's Model as written)");
	CHECK_CONTAINS(out, "lacked     4 of 4 tasks lacked baseline compile");
	free(out);
	out = bench_tasks(&code, level1_modelnew, "--baseline", "compile",
			  "--json");
	cJSON *sum = bench_json(out);
	const cJSON *bs = cJSON_GetObjectItem(sum, "baselines");
	const cJSON *eager = cJSON_GetObjectItem(bs, "eager");
	const cJSON *comp = cJSON_GetObjectItem(bs, "compile");
	CHECK(kf_json_num(comp, "lacked", -1) == 4);
	CHECK(kf_json_num(comp, "timed", -1) == 0);
	CHECK(!cJSON_GetObjectItem(comp, "geomean_speedup"));
	CHECK(kf_json_num(cJSON_GetObjectItem(comp, "fast_p"), "0", -1) == 0);
	/* The eager block is the summary's own figures. */
	CHECK(kf_json_num(eager, "correct", -1) ==
	      kf_json_num(sum, "correct", -2));
	CHECK(kf_json_num(eager, "lacked", -1) == 0);
	CHECK(cJSON_Compare(cJSON_GetObjectItem(eager, "fast_p"),
			    cJSON_GetObjectItem(sum, "fast_p"), true));
	const cJSON *row =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "tasks"), 0);
	const cJSON *rb = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(row, "baselines"), "compile");
	CHECK_STR(kf_json_str(rb, "status"), "load_error");
	CHECK_CONTAINS(kf_json_str(rb, "reason"), "baseline compile: ");
	CHECK(!cJSON_GetObjectItem(rb, "speedup"));
	cJSON_Delete(sum);
	free(out);
}

/* A baseline is evaluated once per task file, protocol and backend: the
 * second run takes it from the cache and says so. */
static void test_kernelbench_bench_baseline_is_cached(void)
{
	kf_test_need_torch();
	int code = 0;
	char *out = bench(&code, RELU, "--baseline", "compile", "--json");
	cJSON *sum = bench_json(out);
	const cJSON *rb = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "tasks"), 0),
		"baselines"),
	    "compile");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(rb, "cached")));
	cJSON_Delete(sum);
	free(out);
	out = bench(&code, RELU, "--baseline", "compile", NULL);
	CHECK_MSG(code == 0, "%s", out);
	CHECK_CONTAINS(out, "n/a*");
	CHECK_CONTAINS(out, "baseline result reused from ");
	free(out);
	/* Another protocol is another measurement. */
	out = bench(&code, RELU, "--baseline=compile", "--protocol",
		    "kernelbench");
	CHECK_MSG(code == 0, "%s", out);
	CHECK(!strstr(out, "n/a*"));
	free(out);
}

KF_TESTS(kernelbench) = {
    KF_TEST(test_kernelbench_modelnew_passes_on_cpu),
    KF_TEST(test_kernelbench_build_directories_are_bounded),
    KF_TEST(test_kernelbench_python_of_a_virtual_environment),
    KF_TEST(test_kernelbench_runs_from_a_directory_under_tmp),
    KF_TEST(test_kernelbench_same_build_twice_at_once),
    KF_TEST(test_kernelbench_load_inline_with_a_compiler_outside_usr),
    KF_TEST(test_kernelbench_failed_builds_are_remembered_and_reported),
    KF_TEST(test_kernelbench_wrong_values_are_wrong_answer),
    KF_TEST(test_kernelbench_wrong_shape_is_wrong_answer),
    KF_TEST(test_kernelbench_cached_tensor_is_wrong_on_new_inputs),
    KF_TEST(test_kernelbench_out_buffer_reused_passes),
    KF_TEST(test_kernelbench_input_alias_is_rejected),
    KF_TEST(test_kernelbench_tensor_subclass_is_output_type),
    KF_TEST(test_kernelbench_parameters_are_random),
    KF_TEST(test_kernelbench_near_zero_reference_passes),
    KF_TEST(test_kernelbench_extra_threads_are_rejected),
    KF_TEST(test_kernelbench_seed_and_late_writes_are_out_of_reach),
    KF_TEST(test_kernelbench_flags_flipped_when_timed_are_rejected),
    KF_TEST(test_kernelbench_input_mutation_is_rejected),
    KF_TEST(test_kernelbench_tf32_flag_is_global_state),
    KF_TEST(test_kernelbench_cudnn_benchmark_is_global_state),
    KF_TEST(test_kernelbench_exception_is_runtime_error),
    KF_TEST(test_kernelbench_raised_when_timed_is_said),
    KF_TEST(test_kernelbench_small_outputs_are_held_at_measured_noise),
    KF_TEST(test_kernelbench_summed_fp16_operands_are_held_at_measured_noise),
    KF_TEST(test_kernelbench_output_mapping_an_input_is_an_alias),
    KF_TEST(test_kernelbench_forged_share_is_charged_under_its_mean),
    KF_TEST(test_kernelbench_processes_are_seen_from_outside),
    KF_TEST(test_kernelbench_structured_inputs_stay_structured),
    KF_TEST(test_kernelbench_oversized_replies_are_the_candidates),
    KF_TEST(test_kernelbench_constant_reference_is_flagged),
    KF_TEST(test_kernelbench_timing_kforge_protocol),
    KF_TEST(test_kernelbench_protocol_kernelbench),
    KF_TEST(test_kernelbench_check_calls_drawn_as_timed_inputs),
    KF_TEST(test_kernelbench_bad_input_exits_2),
    KF_TEST(test_kernelbench_kforge_kernel_fast_path),
    KF_TEST(test_kernelbench_candidate_cannot_patch_the_reference),
    KF_TEST(test_kernelbench_reference_is_timed_in_a_clean_process),
    KF_TEST(test_kernelbench_forged_clock_is_unaccounted_time),
    KF_TEST(test_kernelbench_replaced_clock_is_tampering),
    KF_TEST(test_kernelbench_corpus_all_as_expected),
    KF_TEST(test_kernelbench_candidate_crash_is_reported),
    KF_TEST(test_kernelbench_warm_bridge_renews_the_candidates_runner),
    KF_TEST(test_kernelbench_warm_bridges_in_a_batch),
    KF_TEST(test_kernelbench_warm_bridge_takes_kforge_kernels),
    KF_TEST(test_kernelbench_candidate_runner_is_confined),
    KF_TEST(test_kernelbench_missing_bwrap_is_infra_error),
    KF_TEST(test_kernelbench_runner_memory_limit),
    KF_TEST(test_kernelbench_load_that_waits_is_the_candidates_timeout),
    KF_TEST(test_kernelbench_check_calls_are_asked_as_timed_calls),
    KF_TEST(test_kernelbench_build_directory_entries_are_bounded),
    KF_TEST(test_kernelbench_eval_batch_takes_kernelbench_pairs),
    KF_TEST(test_kernelbench_large_output_aa_is_ok),
    KF_TEST(test_kernelbench_require_custom_kernel_reads_the_calls),
    KF_TEST(test_kernelbench_forward_is_called_on_both_sides),
    KF_TEST(test_kernelbench_bench_jsonl_metrics),
    KF_TEST(test_kernelbench_bench_shows_intervals_and_both_protocols),
    KF_TEST(test_kernelbench_bench_unknown_baseline_names_the_valid),
    KF_TEST(test_kernelbench_baseline_eager_evaluates_the_model),
    KF_TEST(test_kernelbench_bench_baseline_unavailable_on_old_torch),
    KF_TEST(test_kernelbench_bench_baseline_is_cached),
    KF_TESTS_END,
};
