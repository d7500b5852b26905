/* compile_test.c: tests of the compile module: host and cuda builds, the
 * content-addressed cache, compile errors, deadlines and the log cap. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <kforge/compile.h>
#include <kforge/kernel.h>

#include "harness.h"

static const char good_c[] =
    "#include <kforge/kernel.h>\n"
    "int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,\n"
    "\t     void *stream)\n"
    "{\n"
    "\t(void)n_in; (void)n_out; (void)stream;\n"
    "\tconst float *x = in[0].data;\n"
    "\tfloat *y = out[0].data;\n"
    "\tfor (int64_t i = 0; i < kf_numel(&in[0]); i++)\n"
    "\t\ty[i] = 2.0f * x[i] + 1.0f;\n"
    "\treturn 0;\n"
    "}\n";

/* Points the cache at this case's directory; call first in every case. */
static void use_tmp_cache(void)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", dir, 1) == 0);
	free(dir);
}

/* Writes text to <tmpdir>/name; returns the path (caller frees). */
static char *write_tmp(const char *name, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	char *path = kf_path_join(kf_test_tmpdir(), name);
	CHECK_MSG(kf_file_write_atomic(path, text, strlen(text), &err) == 0,
		  "%s", err.msg);
	return path;
}

static struct kf_compile_opts host_opts(void)
{
	struct kf_compile_opts o = {0};
	o.backend = "host";
	o.include_dir = "include";
	return o;
}

/* Compiles and checks that the engine could try; prints the log when the
 * outcome differs from want_ok. */
static void compile_ok(const char *path, const struct kf_compile_opts *o,
		       struct kf_compile_result *r, int want_ok)
{
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_compile(path, o, r, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK_MSG(r->ok == (want_ok != 0), "log: %s", r->log ? r->log : "");
	CHECK(r->key && strlen(r->key) == 64);
	CHECK(r->command && r->toolchain && r->log);
}

static void test_compile_host_exports_kf_entry(void)
{
	use_tmp_cache();
	char *src = write_tmp("good.c", good_c);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 1);
	CHECK(!r.cached && !r.timed_out && r.seconds > 0);
	CHECK(r.so_path && kf_file_exists(r.so_path));
	CHECK_CONTAINS(r.so_path, r.key);
	CHECK_CONTAINS(r.so_path, kf_test_tmpdir());
	CHECK_CONTAINS(r.command, "-march=native");
	CHECK_CONTAINS(r.command, "good.c");

	void *h = dlopen(r.so_path, RTLD_NOW | RTLD_LOCAL);
	CHECK_MSG(h, "%s", dlerror());
	int (*entry)(const DLTensor *, int, DLTensor *, int, void *);
	*(void **)&entry = dlsym(h, "kf_entry");
	CHECK_MSG(entry, "%s", dlerror());
	float x[3] = {1.0f, -2.0f, 0.5f}, y[3] = {0};
	int64_t shape[1] = {3};
	DLTensor in = {0}, out = {0};
	in.data = x;
	in.device.device_type = kDLCPU;
	in.ndim = 1;
	in.dtype.code = kDLFloat;
	in.dtype.bits = 32;
	in.dtype.lanes = 1;
	in.shape = shape;
	out = in;
	out.data = y;
	CHECK(entry(&in, 1, &out, 1, NULL) == 0);
	CHECK(y[0] == 3.0f && y[1] == -3.0f && y[2] == 2.0f);
	dlclose(h);
	kf_compile_result_release(&r);
	free(src);
}

/* A candidate saved directly in /tmp compiles: its directory is bound
 * read-only in the compile's sandbox, over the compiler's usual place for
 * temporary files ("Cannot create temporary file in ./" before). */
static void test_compile_candidate_in_tmp_itself(void)
{
	use_tmp_cache();
	char *src = kf_xasprintf("/tmp/kforge-test-%d-in-tmp.c", (int)getpid());
	char *text = kf_xasprintf("/* %s */\n%s", src, good_c);
	CHECK(kf_file_write_atomic(src, text, strlen(text), NULL) == 0);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 1);
	CHECK(!r.cached);
	unlink(src);
	kf_compile_result_release(&r);
	free(text);
	free(src);
}

static void test_compile_second_compile_is_cache_hit(void)
{
	use_tmp_cache();
	char *src = write_tmp("good.c", good_c);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result a = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result b = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result c = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &a, 1);
	CHECK(!a.cached);
	compile_ok(src, &o, &b, 1);
	CHECK(b.cached && b.seconds == 0);
	CHECK_STR(b.so_path, a.so_path);
	CHECK_STR(b.key, a.key);
	CHECK_STR(b.log, a.log);
	CHECK_STR(b.command, a.command);

	/* The same bytes under another name are the same object. */
	char *copy = write_tmp("copy.c", good_c);
	struct kf_compile_result d = KF_COMPILE_RESULT_INIT;
	compile_ok(copy, &o, &d, 1);
	CHECK(d.cached);
	CHECK_STR(d.so_path, a.so_path);

	o.no_cache = true;
	compile_ok(src, &o, &c, 1);
	CHECK(!c.cached && c.seconds > 0);
	CHECK_STR(c.so_path, a.so_path);
	CHECK(kf_file_exists(c.so_path));
	kf_compile_result_release(&a);
	kf_compile_result_release(&b);
	kf_compile_result_release(&c);
	kf_compile_result_release(&d);
	free(src);
	free(copy);
}

static void test_compile_key_covers_source_and_flags(void)
{
	use_tmp_cache();
	char *src = write_tmp("good.c", good_c);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result a = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result b = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result c = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &a, 1);

	char *edited = kf_xstrdup(good_c);
	char *two = strstr(edited, "2.0f");
	CHECK(two);
	two[0] = '3'; /* one byte */
	free(src);
	src = write_tmp("good.c", edited);
	compile_ok(src, &o, &b, 1);
	CHECK(!b.cached);
	CHECK(strcmp(a.key, b.key) != 0);
	CHECK(strcmp(a.so_path, b.so_path) != 0);

	free(src);
	src = write_tmp("good.c", good_c);
	const char *libs[] = {"m"};
	o.libraries = libs;
	o.n_libraries = 1;
	compile_ok(src, &o, &c, 1);
	CHECK(!c.cached);
	CHECK(strcmp(a.key, c.key) != 0 && strcmp(b.key, c.key) != 0);
	CHECK_CONTAINS(c.command, "-lm -lm");
	kf_compile_result_release(&a);
	kf_compile_result_release(&b);
	kf_compile_result_release(&c);
	free(edited);
	free(src);
}

/* A header the source includes from its own directory is part of the key:
 * with the header changed, the object is built again, not taken from the
 * cache (a stale object once ran the old layout of a copied struct). */
static void test_compile_key_covers_local_headers(void)
{
	use_tmp_cache();
	static const char with_header[] =
	    "#include \"scale.h\"\n"
	    "#include <kforge/kernel.h>\n"
	    "int kf_entry(const DLTensor *in, int n_in, DLTensor *out,\n"
	    "             int n_out, void *stream)\n"
	    "{ (void)in; (void)n_in; (void)n_out; (void)stream;\n"
	    "  ((float *)out[0].data)[0] = SCALE; return 0; }\n";
	char *hdr = write_tmp("scale.h", "#define SCALE 2.0f\n");
	char *src = write_tmp("scaled.c", with_header);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result a = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result b = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &a, 1);
	free(hdr);
	hdr = write_tmp("scale.h", "#define SCALE 3.0f\n");
	compile_ok(src, &o, &b, 1);
	CHECK(!b.cached);
	CHECK(strcmp(a.key, b.key) != 0);
	kf_compile_result_release(&a);
	kf_compile_result_release(&b);
	free(hdr);
	free(src);
}

static void test_compile_rejects_option_as_library(void)
{
	use_tmp_cache();
	char *src = write_tmp("good.c", good_c);
	struct kf_compile_opts o = host_opts();
	const char *libs[] = {"-o/tmp/x"};
	o.libraries = libs;
	o.n_libraries = 1;
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_compile(src, &o, &r, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "-o/tmp/x");
	kf_compile_result_release(&r);
	free(src);
}

/* Counts the entries of dir whose names end with suffix. */
static int count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	CHECK(d);
	int n = 0;
	struct dirent *e;
	size_t sl = strlen(suffix);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l >= sl && strcmp(e->d_name + l - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static void test_compile_syntax_error_names_file_and_line(void)
{
	use_tmp_cache();
	char *src =
	    write_tmp("bad.c", "#include <kforge/kernel.h>\n"
			       "int kf_entry(const DLTensor *in, int n_in,"
			       " DLTensor *out, int n_out, void *s)\n"
			       "{\n"
			       "\treturn 0 +;\n"
			       "}\n");
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 0);
	CHECK(!r.timed_out && !r.cached && !r.so_path);
	CHECK_CONTAINS(r.log, "bad.c:4");
	CHECK_CONTAINS(r.log, "error");

	/* The error is the source's on any machine: kept, so that the next
	 * try costs no compiler time and says the same (a source whose
	 * build burns 89 s of CPU before its error was built again at every
	 * resubmission), under any CPU limit; --no-cache builds again. */
	struct kf_compile_result again = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &again, 0);
	CHECK(again.cached && !again.so_path && !again.cpu_spent &&
	      again.seconds == 0);
	CHECK_STR(again.key, r.key);
	CHECK_STR(again.log, r.log);
	char *dir = kf_path_join(kf_cache_dir(), "compile");
	char *so = kf_xasprintf("%s/%s.so", dir, r.key);
	char *log = kf_xasprintf("%s/%s.log", dir, r.key);
	char *fail = kf_xasprintf("%s/%s.fail", dir, r.key);
	CHECK(!kf_file_exists(so));
	CHECK(kf_file_exists(log));
	CHECK(kf_file_exists(fail));
	kf_compile_result_release(&again);
	CHECK(setenv("KFORGE_COMPILE_CPU_S", "7", 1) == 0);
	compile_ok(src, &o, &again, 0);
	CHECK(again.cached && !again.cpu_spent);
	kf_compile_result_release(&again);
	CHECK(unsetenv("KFORGE_COMPILE_CPU_S") == 0);
	o.no_cache = true;
	compile_ok(src, &o, &again, 0);
	CHECK(!again.cached && again.seconds > 0);
	CHECK_CONTAINS(again.log, "bad.c:4");
	kf_compile_result_release(&again);
	/* The same name with the error fixed is another key: it builds. */
	o.no_cache = false;
	free(src);
	src = write_tmp("bad.c", good_c);
	compile_ok(src, &o, &again, 1);
	CHECK(!again.cached && again.so_path);
	kf_compile_result_release(&again);
	kf_compile_result_release(&r);
	free(dir);
	free(so);
	free(log);
	free(fail);
	free(src);
}

/* The compiler sees of the candidate's directory only what the cache key
 * holds: the source and the headers it includes by name. A header named
 * through a macro and a file an assembler directive reads (.incbin) are
 * not there (they were, outside the key: a source whose macro-named header
 * was later changed to a wrong body was served the old object, `ok`, and
 * one whose header had a typo kept its failure after the fix), so such a
 * source fails alike before and after the file changes. An assembler's
 * "Error:" and a build file past its cap are the source's, and kept. */
static void test_compile_sees_only_what_its_key_holds(void)
{
	use_tmp_cache();
	char *hdr = write_tmp("mh.h", "#define SCALE 2.0f\n");
	char *src = write_tmp("macro.c", "#define H \"mh.h\"\n"
					 "#include H\n"
					 "#include <kforge/kernel.h>\n"
					 "float scale(void) { return SCALE; }\n");
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 0);
	CHECK_CONTAINS(r.log, "mh.h");
	CHECK_CONTAINS(r.log, "No such file");
	kf_compile_result_release(&r);
	free(hdr);
	hdr = write_tmp("mh.h", "#define SCALE 1.0f\n");
	compile_ok(src, &o, &r, 0);
	CHECK(r.cached);
	CHECK_CONTAINS(r.log, "No such file");
	kf_compile_result_release(&r);
	/* A plain include of the same header is in the key, and seen. */
	char *plain = write_tmp("plain.c", "#include \"mh.h\"\n"
					   "float scale(void) { return SCALE; }\n");
	compile_ok(plain, &o, &r, 1);
	kf_compile_result_release(&r);
	char *blob = write_tmp("blob.bin", "0123456789abcdef");
	char *inc = write_tmp("incbin.c",
			      "__asm__(\".section .rodata\\n.incbin "
			      "\\\"blob.bin\\\"\\n.text\");\n"
			      "int f(void) { return 1; }\n");
	compile_ok(inc, &o, &r, 0);
	CHECK_CONTAINS(r.log, "blob.bin");
	kf_compile_result_release(&r);
	char *err = write_tmp("asmerr.c", "__asm__(\".err\");\n"
					  "int f(void) { return 1; }\n");
	compile_ok(err, &o, &r, 0);
	CHECK_CONTAINS(r.log, "Error:");
	kf_compile_result_release(&r);
	compile_ok(err, &o, &r, 0);
	CHECK(r.cached && !r.cpu_spent);
	kf_compile_result_release(&r);
	free(hdr);
	free(src);
	free(plain);
	free(blob);
	free(inc);
	free(err);
}

/* A build failed by the machine rather than the source (a full disk, the
 * sandbox, output without a compiler's "error") is not kept: the next
 * try builds again. */
static void test_compile_machine_failure_is_not_kept(void)
{
	const char *says[] = {
	    "cc1: fatal error: cannot write x.s: No space left on device",
	    "bwrap: Creating new namespace failed: error",
	    "x.c:1: internal compiler error: Segmentation fault",
	    "something went wrong"};
	for (int i = 0; i < 4; i++) {
		use_tmp_cache();
		char *script = kf_xasprintf(
		    "#!/bin/sh\n"
		    "case \"$1\" in --version)\n"
		    "\techo 'flaky-cc 1.0'; exit 0;;\n"
		    "esac\n"
		    "echo '%s' >&2\n"
		    "exit 1\n",
		    says[i]);
		char *cc = write_tmp("flaky-cc", script);
		CHECK(chmod(cc, 0755) == 0);
		CHECK(setenv("KFORGE_CC", cc, 1) == 0);
		char *src = write_tmp("flaky.c", good_c);
		struct kf_compile_opts o = host_opts();
		struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
		compile_ok(src, &o, &r, 0);
		CHECK_CONTAINS(r.log, says[i]);
		struct kf_compile_result again = KF_COMPILE_RESULT_INIT;
		compile_ok(src, &o, &again, 0);
		CHECK_MSG(!again.cached && again.seconds > 0, "case %d", i);
		char *dir = kf_path_join(kf_cache_dir(), "compile");
		CHECK(count_suffix(dir, ".fail") == 0);
		unsetenv("KFORGE_CC");
		kf_compile_result_release(&r);
		kf_compile_result_release(&again);
		free(dir);
		free(src);
		free(cc);
		free(script);
	}
}

/* The compiler sees the system's directories, the include directories, the
 * candidate's own directory and nothing else of the machine: a source that
 * includes a file from elsewhere, by absolute or relative path, fails to
 * compile without its text in the log, and a header beside it works. */
static void test_compile_sees_only_the_candidates_directory(void)
{
	use_tmp_cache();
	struct kf_err err = KF_ERR_INIT;
	char *secret_dir = kf_path_join(kf_test_tmpdir(), "secret");
	char *cand_dir = kf_path_join(kf_test_tmpdir(), "cand");
	CHECK(kf_mkdir_p(secret_dir, &err) == 0);
	CHECK(kf_mkdir_p(cand_dir, &err) == 0);
	char *secret = kf_path_join(secret_dir, "secret.txt");
	const char *text = "KFORGE_SECRET_7c1e\n";
	CHECK(kf_file_write_atomic(secret, text, strlen(text), &err) == 0);
	char *hdr = kf_path_join(cand_dir, "util.h");
	const char *util = "static inline float twice(float x) { return x + "
			   "x; }\n";
	CHECK(kf_file_write_atomic(hdr, util, strlen(util), &err) == 0);
	const char *names[] = {secret, "../secret/secret.txt"};
	for (int i = 0; i < 2; i++) {
		char *src = kf_xasprintf("#include <kforge/kernel.h>\n"
					 "#include \"%s\"\n%s",
					 names[i], good_c);
		char *path = kf_path_join(cand_dir, "leak.c");
		CHECK(kf_file_write_atomic(path, src, strlen(src), &err) == 0);
		struct kf_compile_opts o = host_opts();
		struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
		compile_ok(path, &o, &r, 0);
		CHECK_MSG(!strstr(r.log, "KFORGE_SECRET"), "%s", r.log);
		CHECK_CONTAINS(r.log, "No such file");
		kf_compile_result_release(&r);
		free(src);
		free(path);
	}
	char *src = kf_xasprintf("#include <kforge/kernel.h>\n"
				 "#include \"util.h\"\n%s",
				 good_c);
	char *path = kf_path_join(cand_dir, "local.c");
	CHECK(kf_file_write_atomic(path, src, strlen(src), &err) == 0);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(path, &o, &r, 1);
	kf_compile_result_release(&r);
	free(src);
	free(path);
	free(hdr);
	free(secret);
	free(secret_dir);
	free(cand_dir);
}


static void test_compile_hung_compiler_is_killed(void)
{
	use_tmp_cache();
	/* A stand-in compiler that answers --version and then hangs. */
	char *cc = write_tmp("hang-cc", "#!/bin/sh\n"
					"case \"$1\" in --version)\n"
					"\techo 'hang-cc 1.0'; exit 0;;\n"
					"esac\n"
					"echo compiling...\n"
					"sleep 30\n");
	CHECK(chmod(cc, 0755) == 0);
	CHECK(setenv("KFORGE_CC", cc, 1) == 0);
	char *src = write_tmp("good.c", good_c);
	struct kf_compile_opts o = host_opts();
	o.timeout_ms = 500;
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	compile_ok(src, &o, &r, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
		   (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	CHECK_MSG(s < 10.0, "took %.1f s", s);
	CHECK(r.timed_out && !r.so_path);
	CHECK_STR(r.toolchain, "hang-cc 1.0");
	CHECK_CONTAINS(r.log, "compiling...");
	CHECK_CONTAINS(r.log, "compiler killed after 500 ms");
	char *dir = kf_path_join(kf_cache_dir(), "compile");
	CHECK(count_suffix(dir, ".so") == 0); /* no object, no temporary */
	CHECK(count_suffix(dir, ".log") == 1);
	kf_compile_result_release(&r);
	free(dir);
	free(src);
	free(cc);
}

/* A source that keeps its compiler busy (a compile bomb): the build's
 * processes meet their CPU time (KFORGE_COMPILE_CPU_S) long before the
 * wall clock, the log says so, and the failure is kept under the build's
 * key: the same source again is that failure from the cache, the compiler
 * not run. CPU time does not stretch with the machine's load as the wall
 * clock does; a build stopped by the wall clock is not kept
 * (test_compile_hung_compiler_is_killed). A bad value is refused, named. */
static void test_compile_cpu_bomb_fails_once_and_is_kept(void)
{
	use_tmp_cache();
	char *cc = write_tmp("spin-cc", "#!/bin/sh\n"
					"case \"$1\" in --version)\n"
					"\techo 'spin-cc 1.0'; exit 0;;\n"
					"esac\n"
					"echo spinning\n"
					"while :; do :; done\n");
	CHECK(chmod(cc, 0755) == 0);
	CHECK(setenv("KFORGE_CC", cc, 1) == 0);
	CHECK(setenv("KFORGE_COMPILE_CPU_S", "1", 1) == 0);
	char *src = write_tmp("bomb.c", good_c);
	struct kf_compile_opts o = host_opts();
	o.timeout_ms = 120000;
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 0);
	CHECK_MSG(!r.timed_out && r.cpu_spent && !r.cached, "log: %s", r.log);
	CHECK_CONTAINS(r.log, "spinning");
	CHECK_CONTAINS(r.log, "a process of the build used up its CPU time; each may use 1 s "
			      "(KFORGE_COMPILE_CPU_S");
	CHECK_CONTAINS(r.log, "the failure is kept in the cache for builds "
			      "under a limit no larger");
	char *dir = kf_path_join(kf_cache_dir(), "compile");
	CHECK(count_suffix(dir, ".fail") == 1);
	CHECK(count_suffix(dir, ".so") == 0);
	struct kf_compile_result r2 = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r2, 0);
	CHECK(r2.cached && r2.cpu_spent && !r2.timed_out && r2.seconds == 0);
	CHECK_STR(r2.key, r.key);
	CHECK_STR(r2.log, r.log);
	/* Kept for builds under a limit no larger: under 2 s the compiler
	 * runs again (a failure under a low limit failed an honest kernel
	 * under the default), and that failure then stands under 1 s. */
	CHECK(setenv("KFORGE_COMPILE_CPU_S", "2", 1) == 0);
	struct kf_compile_result r5 = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r5, 0);
	CHECK_MSG(!r5.cached && r5.cpu_spent && r5.seconds > 0, "log: %s",
		  r5.log);
	CHECK_CONTAINS(r5.log, "each may use 2 s");
	CHECK(setenv("KFORGE_COMPILE_CPU_S", "1", 1) == 0);
	struct kf_compile_result r6 = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r6, 0);
	CHECK(r6.cached && r6.cpu_spent);
	CHECK_CONTAINS(r6.log, "each may use 2 s");
	kf_compile_result_release(&r5);
	kf_compile_result_release(&r6);
	/* Not kept past --no-cache: the compiler runs again. */
	o.no_cache = true;
	struct kf_compile_result r3 = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r3, 0);
	CHECK(!r3.cached && r3.cpu_spent && r3.seconds > 0);
	CHECK(setenv("KFORGE_COMPILE_CPU_S", "0", 1) == 0);
	struct kf_compile_result r4 = KF_COMPILE_RESULT_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_compile(src, &o, &r4, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "KFORGE_COMPILE_CPU_S=0: the CPU time a "
				"build's process may use is a whole number of "
				"seconds, at least 1");
	unsetenv("KFORGE_COMPILE_CPU_S");
	unsetenv("KFORGE_CC");
	kf_compile_result_release(&r);
	kf_compile_result_release(&r2);
	kf_compile_result_release(&r3);
	kf_compile_result_release(&r4);
	free(dir);
	free(src);
	free(cc);
}

static void test_compile_log_is_capped(void)
{
	use_tmp_cache();
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < 3000; i++)
		kf_strbuf_addf(&sb,
			       "#error this line makes the compiler print a "
			       "long complaint, number %d of many\n",
			       i);
	char *src = write_tmp("noisy.c", kf_strbuf_str(&sb));
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 0);
	CHECK_MSG(strlen(r.log) <= KF_COMPILE_LOG_CAP, "%zu bytes",
		  strlen(r.log));
	CHECK(strlen(r.log) > KF_COMPILE_LOG_CAP / 2);
	CHECK_CONTAINS(r.log, "noisy.c:1");
	CHECK_CONTAINS(r.log, "dropped");
	kf_compile_result_release(&r);
	kf_strbuf_release(&sb);
	free(src);
}

/* A source that includes /dev/zero: the preprocessor reads forever into
 * memory. The build's processes are held to KFORGE_COMPILE_MEM_MB, so the
 * compile fails at once with a log that says why, instead of growing until
 * the kernel's OOM killer picks a process of the machine. */
static void test_compile_memory_is_limited(void)
{
	use_tmp_cache();
	CHECK(setenv("KFORGE_COMPILE_MEM_MB", "512", 1) == 0);
	char *src = write_tmp("zero.c", "#include \"/dev/zero\"\n");
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	compile_ok(src, &o, &r, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
		   (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	CHECK_MSG(s < 60.0, "took %.1f s", s);
	CHECK(!r.timed_out && !r.so_path);
	CHECK_CONTAINS(r.log, "out of memory");
	CHECK_CONTAINS(r.log, "may take 512 MiB each (KFORGE_COMPILE_MEM_MB)");
	kf_compile_result_release(&r);
	/* A limit of this machine's settings: not kept. */
	char *mdir = kf_path_join(kf_cache_dir(), "compile");
	CHECK(count_suffix(mdir, ".fail") == 0);
	free(mdir);

	/* A value that is not a whole number of MiB, or too small, is an
	 * error naming the variable; nothing is compiled. */
	const char *bad[] = {"12x", "100", "-1", ""};
	for (int i = 0; i < 3; i++) {
		CHECK(setenv("KFORGE_COMPILE_MEM_MB", bad[i], 1) == 0);
		struct kf_compile_result q = KF_COMPILE_RESULT_INIT;
		struct kf_err err = KF_ERR_INIT;
		o.no_cache = true;
		CHECK(kf_compile(src, &o, &q, &err) == KF_EINVAL);
		CHECK_CONTAINS(err.msg, "KFORGE_COMPILE_MEM_MB=");
		CHECK_CONTAINS(err.msg, bad[i]);
		CHECK_CONTAINS(err.msg, "at least 256");
		CHECK(!q.ok && !q.so_path);
		kf_compile_result_release(&q);
	}
	CHECK(unsetenv("KFORGE_COMPILE_MEM_MB") == 0);
	/* Under the default an honest source builds as before. */
	char *good = write_tmp("good-mem.c", good_c);
	o.no_cache = true;
	compile_ok(good, &o, &r, 1);
	kf_compile_result_release(&r);
	free(good);
	free(src);
}

/* A candidate that has its assembler write a section .fill'ed with 300 MB
 * (past KF_COMPILE_FILE_CAP, 64 MiB)
 * (a blind round's way to turn a wrong kernel into infra_error, which a
 * trainer drops instead of punishing): the build's files are held to
 * KF_COMPILE_FILE_CAP, so it is a compile error, its own, whose log says
 * why, and nothing of it stays behind. An honest source builds as before. */
static void test_compile_output_size_is_limited(void)
{
	use_tmp_cache();
	char *src = write_tmp(
	    "bigjunk.c",
	    "__asm__(\".section .bigjunk,\\\"\\\",@progbits\\n"
	    ".fill 300000000,1,7\\n.text\\n\");\n"
	    "int kf_entry(void) { return 0; }\n");
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &r, 0);
	CHECK(!r.timed_out && !r.so_path);
	CHECK_CONTAINS(r.log, "a file of the build grew past 64 MiB");
	kf_compile_result_release(&r);
	struct kf_strbuf out = KF_STRBUF_INIT;
	char *cmd = kf_xasprintf("du -sm '%s'", getenv("KFORGE_CACHE"));
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	int status = 0;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_run(argv, 10000, 4096, &out, &status, &err) == 0);
	CHECK_MSG(atoi(kf_strbuf_str(&out)) < 8, "the cache holds %s",
		  kf_strbuf_str(&out));
	kf_strbuf_release(&out);
	free(cmd);
	char *good = write_tmp("good-size.c", good_c);
	compile_ok(good, &o, &r, 1);
	kf_compile_result_release(&r);
	free(good);
	free(src);
}

/* The compile cache's bound (KFORGE_CACHE_MAX_MB): with 1 MiB of room and
 * four entries of 400 KB (a reward service keeps every completion's
 * object), a process's first new object removes the entries used longest
 * ago down to 90 % of the bound, and a cache hit marks its entry used. A bad value is an
 * error naming the variable. */
static void test_compile_cache_is_bounded(void)
{
	use_tmp_cache();
	char *dir = kf_path_join(getenv("KFORGE_CACHE"), "compile");
	CHECK(kf_mkdir_p(dir, NULL) == 0);
	char *blob = kf_xcalloc(1, 400000);
	const char *keys[] = {
	    "1111111111111111111111111111111111111111111111111111111111111111",
	    "2222222222222222222222222222222222222222222222222222222222222222",
	    "3333333333333333333333333333333333333333333333333333333333333333",
	    "4444444444444444444444444444444444444444444444444444444444444444"};
	time_t now = time(NULL);
	for (int i = 0; i < 4; i++) {
		char *so = kf_xasprintf("%s/%s.so", dir, keys[i]);
		struct kf_err err = KF_ERR_INIT;
		CHECK(kf_file_write_atomic(so, blob, 400000, &err) == 0);
		/* 1 and 2 used days ago (1 first), 3 an hour ago, 4 now. */
		struct timespec ts[2] = {{0, 0}, {0, 0}};
		ts[0].tv_sec = ts[1].tv_sec = i == 0   ? now - 200000
					      : i == 1 ? now - 100000
					      : i == 2 ? now - 3600
						       : now;
		CHECK(utimensat(AT_FDCWD, so, ts, 0) == 0);
		free(so);
	}
	CHECK(setenv("KFORGE_CACHE_MAX_MB", "1", 1) == 0);
	char *good = write_tmp("good-bound.c", good_c);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_ok(good, &o, &r, 1);
	CHECK(!r.cached);
	bool there[4];
	for (int i = 0; i < 4; i++) {
		char *so = kf_xasprintf("%s/%s.so", dir, keys[i]);
		there[i] = kf_file_exists(so);
		free(so);
	}
	/* 1.6 MB and the new object, over 1 MiB: the least recently used
	 * go until at most 0.9 MiB is left, so 1 and 2 (3, 4 and the new
	 * one: 0.82 MB). */
	CHECK_MSG(!there[0] && !there[1] && there[2] && there[3],
		  "left: %d %d %d %d", there[0], there[1], there[2], there[3]);
	CHECK(kf_file_exists(r.so_path));
	kf_compile_result_release(&r);
	/* A hit marks its entry used. */
	struct stat st;
	char *so4 = kf_xasprintf("%s/%s.so", dir, keys[3]);
	struct timespec old[2] = {{now - 500000, 0}, {now - 500000, 0}};
	compile_ok(good, &o, &r, 1);
	CHECK(r.cached);
	CHECK(utimensat(AT_FDCWD, r.so_path, old, 0) == 0);
	kf_compile_result_release(&r);
	compile_ok(good, &o, &r, 1);
	CHECK(r.cached && stat(r.so_path, &st) == 0);
	CHECK(st.st_mtime >= now - 5);
	kf_compile_result_release(&r);
	/* A bad bound names the variable. */
	CHECK(setenv("KFORGE_CACHE_MAX_MB", "lots", 1) == 0);
	uint64_t cap;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_compile_cache_max(&cap, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "KFORGE_CACHE_MAX_MB=lots");
	CHECK(unsetenv("KFORGE_CACHE_MAX_MB") == 0);
	CHECK(kf_compile_cache_max(&cap, &err) == 0 && cap == 20480ull << 20);
	free(so4);
	free(good);
	free(blob);
	free(dir);
}

static void test_compile_missing_source_is_enoent(void)
{
	use_tmp_cache();
	char *src = kf_path_join(kf_test_tmpdir(), "nowhere.c");
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_compile(src, &o, &r, &err) == KF_ENOENT);
	CHECK(err.code == KF_ENOENT);
	CHECK_CONTAINS(err.msg, src);
	CHECK_CONTAINS(err.msg, "cannot open");
	CHECK(!r.ok && !r.so_path);
	kf_compile_result_release(&r);
	free(src);
}

/* A .cu given to the host backend: what it is and what to do, not the
 * linker's "syntax error". */
static void test_compile_cu_on_host_names_the_backend(void)
{
	use_tmp_cache();
	char *src = write_tmp("k.cu", "__global__ void k(int *p) { *p = 1; }\n");
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_compile(src, &o, &r, &err) == 0);
	CHECK(!r.ok);
	CHECK_CONTAINS(r.log, "is a CUDA source (.cu); the host backend "
			      "compiles C (.c): evaluate it with --backend "
			      "cuda");
	kf_compile_result_release(&r);
	free(src);
}

static void test_compile_missing_compiler_is_enoent(void)
{
	use_tmp_cache();
	CHECK(setenv("KFORGE_NVCC", "/nonexistent/nvcc", 1) == 0);
	char *src = write_tmp("k.cu", "int x;\n");
	struct kf_compile_opts o = host_opts();
	o.backend = "cuda";
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_compile(src, &o, &r, &err) == KF_ENOENT);
	CHECK_CONTAINS(err.msg, "nvcc not found");
	CHECK_CONTAINS(err.msg, "/nonexistent/nvcc");
	CHECK(kf_compile_toolchain("cuda") == NULL);
	CHECK(kf_compile_toolchain("no-such-backend") == NULL);
	char *host = kf_compile_toolchain("host");
	CHECK(host && *host);
	free(host);
	kf_compile_result_release(&r);
	free(src);
}

static const char trivial_cu[] =
    "#include <kforge/kernel.h>\n"
    "__global__ void twice(const float *x, float *y, int64_t n)\n"
    "{\n"
    "\tint64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;\n"
    "\tif (i < n)\n"
    "\t\ty[i] = 2.0f * x[i];\n"
    "}\n"
    "KF_EXTERN_C int kf_entry(const DLTensor *in, int n_in, DLTensor "
    "*out,\n"
    "\t\t\tint n_out, void *stream)\n"
    "{\n"
    "\tint64_t n = kf_numel(&in[0]);\n"
    "\ttwice<<<(unsigned)((n + 255) / 256), 256, 0,\n"
    "\t\t(cudaStream_t)stream>>>((const float *)in[0].data,\n"
    "\t\t(float *)out[0].data, n);\n"
    "\treturn cudaGetLastError() == cudaSuccess ? 0 : 1;\n"
    "}\n";

/* The cuda build of src: checks an ELF shared object came out. */
static void compile_cuda(const char *name, const char *text,
			 struct kf_compile_result *r)
{
	char *tc = kf_compile_toolchain("cuda");
	if (!tc)
		SKIP("nvcc not found");
	free(tc);
	char *src = write_tmp(name, text);
	struct kf_compile_opts o = {0};
	o.backend = "cuda";
	o.include_dir = "include";
	compile_ok(src, &o, r, 1);
	CHECK(r->so_path && !r->cached);
	char *obj = NULL;
	size_t bytes = 0;
	CHECK(kf_file_read(r->so_path, 1u << 30, &obj, &bytes, NULL) == 0);
	CHECK(bytes > 4 && memcmp(obj, "\177ELF", 4) == 0);
	CHECK_CONTAINS(r->toolchain, "cuda");
	free(obj);
	free(src);
}

static void test_compile_cuda_builds_shared_object(void)
{
	use_tmp_cache();
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_cuda("k.cu", trivial_cu, &r);
	CHECK_CONTAINS(r.command, "arch=compute_90,code=sm_90 ");
	CHECK_CONTAINS(r.command, "-lcudart");
	kf_compile_result_release(&r);
}

static void test_compile_cuda_marker_selects_sm_90a(void)
{
	use_tmp_cache();
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addf(&sb, "/* kforge: sm_90a */\n%s", trivial_cu);
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	compile_cuda("k90a.cu", kf_strbuf_str(&sb), &r);
	CHECK_CONTAINS(r.command, "arch=compute_90a,code=sm_90a");
	kf_compile_result_release(&r);
	kf_strbuf_release(&sb);
}

/* The imports of an object, sorted, one per line; caller frees. */
static char *imports_of(const char *so)
{
	char **names = NULL;
	int n = 0;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_compile_imports(so, &names, &n, &err) == 0, "%s", err.msg);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (strcmp(names[i], names[j]) > 0) {
				char *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < n; i++) {
		kf_strbuf_addf(&sb, "%s\n", names[i]);
		free(names[i]);
	}
	free(names);
	return kf_strbuf_detach(&sb);
}

static void test_compile_cuda_split_links_like_nvcc_shared(void)
{
	use_tmp_cache();
	struct kf_compile_result split = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result whole = KF_COMPILE_RESULT_INIT;
	CHECK(unsetenv("KFORGE_NVCC_LINK") == 0);
	compile_cuda("k.cu", trivial_cu, &split);
	/* nvcc -c, then the host compiler links what nvcc's g++ would. */
	CHECK_CONTAINS(split.command, " -c ");
	CHECK_CONTAINS(split.command, " && ");
	CHECK_CONTAINS(split.command, "-lcudart -lstdc++ -lm");
	CHECK(setenv("KFORGE_NVCC_LINK", "nvcc", 1) == 0);
	compile_cuda("k.cu", trivial_cu, &whole);
	CHECK_CONTAINS(whole.command, " -shared ");
	CHECK(!strstr(whole.command, " && "));
	CHECK(strcmp(split.key, whole.key) != 0); /* two paths, two keys */
	char *a = imports_of(split.so_path), *b = imports_of(whole.so_path);
	CHECK_STR(a, b);
	CHECK_CONTAINS(a, "cudaLaunchKernel");
	/* A device-side error fails both paths alike. */
	struct kf_compile_result bad1 = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result bad2 = KF_COMPILE_RESULT_INIT;
	char *src = write_tmp("bad.cu", "__global__ void k(int *p)\n"
					"{ p[0] = undefined_thing; }\n");
	struct kf_compile_opts o = {0};
	o.backend = "cuda";
	o.include_dir = "include";
	compile_ok(src, &o, &bad1, 0);
	CHECK(unsetenv("KFORGE_NVCC_LINK") == 0);
	compile_ok(src, &o, &bad2, 0);
	CHECK_CONTAINS(bad1.log, "undefined_thing");
	CHECK_CONTAINS(bad2.log, "undefined_thing");
	/* No temporary object is left behind. */
	char *dir = kf_path_join(kf_cache_dir(), "compile");
	CHECK(count_suffix(dir, ".o") == 0);
	free(dir);
	free(src);
	free(a);
	free(b);
	kf_compile_result_release(&split);
	kf_compile_result_release(&whole);
	kf_compile_result_release(&bad1);
	kf_compile_result_release(&bad2);
}

/* A stand-in cc that counts its --version calls in <tmp>/asked. */
static char *counting_cc(void)
{
	char *asked = kf_path_join(kf_test_tmpdir(), "asked");
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addf(&sb,
		       "#!/bin/sh\n"
		       "case \"$1\" in --version)\n"
		       "\techo x >> '%s'; echo 'counting-cc 1.0'; exit 0;;\n"
		       "esac\n"
		       "exec cc \"$@\"\n",
		       asked);
	char *cc = write_tmp("counting-cc", kf_strbuf_str(&sb));
	CHECK(chmod(cc, 0755) == 0);
	kf_strbuf_release(&sb);
	free(asked);
	return cc;
}

static int times_asked(void)
{
	char *asked = kf_path_join(kf_test_tmpdir(), "asked");
	char *text = NULL;
	size_t n = 0;
	if (kf_file_read(asked, 1 << 20, &text, &n, NULL) != 0)
		n = 0;
	free(text);
	free(asked);
	return (int)(n / 2);
}

static void test_compile_toolchain_is_asked_once_per_binary(void)
{
	use_tmp_cache();
	char *cc = counting_cc();
	CHECK(setenv("KFORGE_CC", cc, 1) == 0);
	char *src = write_tmp("good.c", good_c);
	struct kf_compile_opts o = host_opts();
	struct kf_compile_result a = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result b = KF_COMPILE_RESULT_INIT;
	struct kf_compile_result c = KF_COMPILE_RESULT_INIT;
	compile_ok(src, &o, &a, 1);
	compile_ok(src, &o, &b, 1);
	CHECK(b.cached);
	CHECK_STR(b.toolchain, "counting-cc 1.0");
	CHECK_MSG(times_asked() == 1, "asked %d times", times_asked());
	/* A rewritten binary is a new toolchain: asked again, new key. */
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL);
	free(counting_cc());
	compile_ok(src, &o, &c, 1);
	CHECK_MSG(times_asked() == 2, "asked %d times", times_asked());
	CHECK(c.cached); /* same version line, same key: still a hit */
	char *tcdir = kf_path_join(kf_cache_dir(), "compile/toolchain");
	CHECK(count_suffix(tcdir, ".txt") == 2);
	free(tcdir);
	kf_compile_result_release(&a);
	kf_compile_result_release(&b);
	kf_compile_result_release(&c);
	free(src);
	free(cc);
}

KF_TESTS(compile) = {
    KF_TEST(test_compile_host_exports_kf_entry),
    KF_TEST(test_compile_candidate_in_tmp_itself),
    KF_TEST(test_compile_second_compile_is_cache_hit),
    KF_TEST(test_compile_key_covers_source_and_flags),
    KF_TEST(test_compile_key_covers_local_headers),
    KF_TEST(test_compile_rejects_option_as_library),
    KF_TEST(test_compile_syntax_error_names_file_and_line),
    KF_TEST(test_compile_sees_only_the_candidates_directory),
    KF_TEST(test_compile_hung_compiler_is_killed),
    KF_TEST(test_compile_sees_only_what_its_key_holds),
    KF_TEST(test_compile_machine_failure_is_not_kept),
    KF_TEST(test_compile_cpu_bomb_fails_once_and_is_kept),
    KF_TEST(test_compile_log_is_capped),
    KF_TEST(test_compile_memory_is_limited),
    KF_TEST(test_compile_output_size_is_limited),
    KF_TEST(test_compile_cache_is_bounded),
    KF_TEST(test_compile_missing_source_is_enoent),
    KF_TEST(test_compile_cu_on_host_names_the_backend),
    KF_TEST(test_compile_missing_compiler_is_enoent),
    KF_TEST(test_compile_cuda_builds_shared_object),
    KF_TEST(test_compile_cuda_marker_selects_sm_90a),
    KF_TEST(test_compile_cuda_split_links_like_nvcc_shared),
    KF_TEST(test_compile_toolchain_is_asked_once_per_binary),
    KF_TESTS_END,
};
