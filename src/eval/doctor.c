/* doctor.c: what this machine offers kforge: CPU, GPUs (or plainly none),
 * compilers, driver, and a Python with torch for KernelBench tasks. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <kforge/backend.h>
#include <kforge/compile.h>
#include <kforge/eval.h>

#include <kforge/worker.h>

#include "eval_int.h"

static void add_or_null(cJSON *o, const char *key, char *value)
{
	if (value)
		cJSON_AddStringToObject(o, key, value);
	else
		cJSON_AddNullToObject(o, key);
	free(value);
}

/* Counts CUDA devices through the driver library, opened at run time. */
static cJSON *gpus(void)
{
	cJSON *g = cJSON_CreateObject();
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cuda) {
		cJSON_AddNumberToObject(g, "count", 0);
		cJSON_AddStringToObject(g, "why",
					"no NVIDIA driver (libcuda.so.1 not "
					"found)");
		return g;
	}
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
	int (*count)(int *) = (int (*)(int *))dlsym(cuda, "cuDeviceGetCount");
	int n = 0, rc = init ? init(0) : -1;
	if (rc == 0 && count)
		rc = count(&n);
	cJSON_AddNumberToObject(g, "count", rc == 0 ? n : 0);
	if (rc == 0 && n > 0) {
		/* The device kforge would use, described by its backend. */
		const struct kf_backend_ops *ops = kf_backend_find("cuda");
		struct kf_err err = KF_ERR_INIT;
		void *ctx = NULL;
		if (ops->init(&ctx, &err) == 0)
			cJSON_AddItemToObject(g, "device", ops->describe(ctx));
		else
			cJSON_AddStringToObject(g, "why", err.msg);
		ops->fini(ctx);
	}
	if (rc != 0) {
		char *why = kf_xasprintf("the CUDA driver is present but "
					 "cuInit failed (error %d)",
					 rc);
		cJSON_AddStringToObject(g, "why", why);
		free(why);
	}
	return g; /* the driver stays loaded: unloading it is unsupported */
}

static char *driver_version(void)
{
	char *text = NULL;
	if (kf_file_read("/proc/driver/nvidia/version", 1 << 16, &text, NULL,
			 NULL))
		return NULL;
	text[strcspn(text, "\n")] = '\0';
	return text;
}

void kf_add_system(cJSON *obj, bool with_host)
{
	struct utsname u;
	cJSON_AddStringToObject(obj, "kforge", KF_VERSION);
	if (uname(&u) != 0)
		return;
	char *os = kf_xasprintf("%s %s %s", u.sysname, u.release, u.machine);
	cJSON_AddStringToObject(obj, "os", os);
	free(os);
	if (with_host)
		cJSON_AddStringToObject(obj, "host", u.nodename);
}

/* Whether bubblewrap can build a runner's confinement here: the
 * namespaces and mounts the bridge asks of it (kforge_bridge.py,
 * confined_argv), around a shell that prints "ok". Returns "ok", or what
 * bwrap said. */
static char *bwrap_works(const char *bwrap)
{
	char *argv[] = {(char *)bwrap,
			"--unshare-all",
			"--die-with-parent",
			"--new-session",
			"--cap-drop",
			"ALL",
			"--ro-bind",
			"/",
			"/",
			"--proc",
			"/proc",
			"--dev",
			"/dev",
			"--tmpfs",
			"/tmp",
			"--",
			"/bin/sh",
			"-c",
			"echo ok",
			NULL};
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int status = 0;
	char *out;
	if (kf_proc_run(argv, 10000, 2048, &sb, &status, NULL))
		out = kf_xstrdup("does not run: it took more than 10 s");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		 !strncmp(kf_strbuf_str(&sb), "ok", 2))
		out = kf_xstrdup("ok");
	else {
		char *how = kf_wait_describe(status);
		const char *said = kf_strbuf_str(&sb);
		out = kf_xasprintf("fails (%s): %.*s", how,
				   (int)strcspn(said, "\n"), said);
		free(how);
	}
	kf_strbuf_release(&sb);
	return out;
}

cJSON *kf_doctor(void)
{
	cJSON *d = cJSON_CreateObject();
	struct kf_err err = KF_ERR_INIT;
	kf_add_system(d, false);
	const struct kf_backend_ops *host = kf_backend_find("host");
	void *ctx = NULL;
	if (host->init(&ctx, &err) == 0) {
		cJSON_AddItemToObject(d, "cpu", host->describe(ctx));
		host->fini(ctx);
	}
	cJSON_AddItemToObject(d, "gpus", gpus());
	add_or_null(d, "nvidia_driver", driver_version());
	add_or_null(d, "cc", kf_compile_toolchain("host"));
	add_or_null(d, "nvcc", kf_compile_toolchain("cuda"));
	char *python = kf_which("python3");
	char *py[] = {python ? python : "python3", "-c",
		      "import torch; print('torch', torch.__version__, "
		      "'cuda', torch.version.cuda)",
		      NULL};
	char *pyv[] = {py[0], "--version", NULL};
	add_or_null(d, "python",
		    python ? kf_proc_first_line(pyv, 10000) : NULL);
	add_or_null(d, "torch", python ? kf_proc_first_line(py, 30000) : NULL);
	free(python);
	cJSON_AddStringToObject(d, "cache", kf_cache_dir());
	char why[512];
	cJSON_AddStringToObject(
	    d, "sandbox", kf_sandbox_check(why, sizeof(why)) ? why : "ok");
	char *bwrap = kf_bwrap_path();
	add_or_null(d, "bwrap", bwrap ? kf_xstrdup(bwrap) : NULL);
	if (bwrap)
		add_or_null(d, "bwrap_confines", bwrap_works(bwrap));
	free(bwrap);
	return d;
}
