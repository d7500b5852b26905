/*
 * run.c: one profile. Both sides are compiled through the cache, each is
 * run by the driver (driver.c) once plainly, for a call's wall time, and
 * once under `ncu --csv --page raw`, in a bubblewrap sandbox of its own
 * (read-only system, no network, a private /tmp, the GPU's device files);
 * the CSV is parsed, cuobjdump's resource usage attached, and the
 * analysers run. On the host backend nothing is measured: it says why.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kforge/compile.h>
#include <kforge/profile.h>

/* The host: whether this process may count its own cycles. */
static char *host_note(void)
{
	struct perf_event_attr pe;
	memset(&pe, 0, sizeof(pe));
	pe.type = PERF_TYPE_HARDWARE;
	pe.size = sizeof(pe);
	pe.config = PERF_COUNT_HW_INSTRUCTIONS;
	pe.disabled = 1;
	pe.exclude_kernel = 1;
	pe.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
	if (fd < 0)
		return kf_xasprintf(
		    "the host backend has no hardware counters on this "
		    "machine (perf_event_open: %s), so there is nothing to "
		    "profile; kforge profiles kernels on the cuda backend "
		    "(--backend cuda) with Nsight Compute",
		    strerror(errno));
	close((int)fd);
	return kf_xstrdup("this machine has hardware counters "
			  "(perf_event_open), but kforge profiles kernels "
			  "on the cuda backend only (--backend cuda, with "
			  "Nsight Compute); on the host its timing and "
			  "roofline are the feedback");
}

/* The device's peaks as an evaluation on it measured them (the roofline
 * probe's cache, kf_cache_dir()/peaks/cuda-*.json), or NULL. */
static cJSON *cached_peaks(const char *device)
{
	char *pat = kf_xasprintf("%s/peaks/cuda-*.json", kf_cache_dir());
	glob_t g;
	cJSON *found = NULL;
	if (!glob(pat, 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc && !found; i++) {
			char *text = NULL;
			if (kf_file_read(g.gl_pathv[i], 1u << 16, &text, NULL,
					 NULL))
				continue;
			cJSON *o = cJSON_Parse(text);
			free(text);
			const char *d = kf_json_str(o, "device");
			if (o && d && !strcmp(d, device) &&
			    kf_json_num(o, "bytes_per_s", 0) > 0)
				found = o;
			else
				cJSON_Delete(o);
		}
		globfree(&g);
	}
	free(pat);
	return found;
}

/* kforge's analytic roofline at the task's timing dims: the bound whose
 * time is longer, work at the compute peak (the matrix one for half
 * inputs, as eval.c) or bytes at the copy peak. */
static void roofline(struct kf_profile *p, const cJSON *peak)
{
	double pf = kf_json_num(peak, "flops_per_s", 0);
	double pm = kf_json_num(peak, "matrix_flops_per_s", 0);
	double pb = kf_json_num(peak, "bytes_per_s", 0);
	if (p->half_inputs && pm > pf)
		pf = pm;
	if (pf > 0 && pb > 0 && (p->flops > 0 || p->bytes > 0))
		snprintf(p->roof_bound, sizeof(p->roof_bound), "%s",
			 p->flops / pf >= p->bytes / pb ? "compute" : "memory");
}

static int compile_side(const struct kf_task *t, const char *src,
			const struct kf_profile_opts *o, char **so,
			struct kf_err *err)
{
	struct kf_compile_opts co = {0};
	co.backend = "cuda";
	co.include_dir = o->include_dir;
	co.arch = t->cuda_arch;
	const char *libs[2 * 16 + 1];
	int nl = 0;
	for (int i = 0; i < t->n_libraries && nl < 16; i++)
		libs[nl++] = t->libraries[i];
	for (int i = 0; i < t->n_cuda_libraries && nl < 32; i++)
		libs[nl++] = t->cuda_libraries[i];
	co.libraries = libs;
	co.n_libraries = nl;
	struct kf_compile_result r = KF_COMPILE_RESULT_INIT;
	int rc = kf_compile(src, &co, &r, err);
	if (!rc && !r.ok)
		rc = kf_err_set(err, KF_EINVAL, "%s does not compile%s: %.600s",
				src, r.timed_out ? " (timed out)" : "",
				r.log ? r.log : "");
	if (!rc)
		*so = kf_xstrdup(r.so_path);
	kf_compile_result_release(&r);
	return rc;
}

/* Runs argv; *log gets its output (stdout and stderr). */
static int run(char **argv, int timeout_ms, struct kf_strbuf *log,
	       struct kf_err *err)
{
	int status = 0;
	int rc = kf_proc_run(argv, timeout_ms, 1u << 20, log, &status, err);
	if (rc)
		return rc;
	if (status) {
		char *why = kf_wait_describe(status);
		rc = kf_err_set(err, KF_ECHILD, "%s %s", argv[0], why);
		free(why);
	}
	return rc;
}

static bool sandboxed(void)
{
	const char *s = getenv("KFORGE_PROFILE_SANDBOX");
	return !(s && !strcmp(s, "off"));
}

/* bubblewrap's part of the command: the system read-only, a private /tmp,
 * no network, the GPU's device files, the work directory writable and
 * what the driver reads (the task's directory, kforge's own) read-only. */
static int sandbox_argv(struct kf_argv *a, const char *work, const char *task_dir,
			const char *so, struct kf_err *err)
{
	char *bwrap = kf_bwrap_path();
	if (!bwrap)
		return kf_err_set(err, KF_ENOENT,
				  "profile: no bubblewrap to sandbox the "
				  "profiled process (install bubblewrap, or "
				  "set KFORGE_BWRAP; KFORGE_PROFILE_SANDBOX=off "
				  "runs it unconfined)");
	kf_argv_add(a, bwrap);
	free(bwrap);
	static const char *const flags[] = {
	    "--die-with-parent", "--new-session", "--unshare-net",
	    "--unshare-ipc",	 "--unshare-uts", "--unshare-pid",
	    "--ro-bind",	 "/",		  "/",
	    "--dev",		 "/dev",	  "--proc",
	    "/proc",		 "--tmpfs",	  "/tmp",
	    "--tmpfs",		 "/dev/shm",	  NULL};
	for (int i = 0; flags[i]; i++)
		kf_argv_add(a, flags[i]);
	glob_t g;
	if (!glob("/dev/nvidia*", 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			kf_argv_add(a, "--dev-bind");
			kf_argv_add(a, g.gl_pathv[i]);
			kf_argv_add(a, g.gl_pathv[i]);
		}
		globfree(&g);
	}
	char real[PATH_MAX];
	/* The shared objects live in kforge's compile cache, which may be
	 * anywhere (KFORGE_CACHE=/tmp/..., under the private /tmp). */
	char *so_dir = kf_xstrdup(so);
	char *slash = strrchr(so_dir, '/');
	if (slash)
		*slash = '\0';
	const char *ro[] = {task_dir, kf_exe_dir(), slash ? so_dir : NULL};
	for (int i = 0; i < 3; i++)
		if (ro[i] && realpath(ro[i], real)) {
			kf_argv_add(a, "--ro-bind");
			kf_argv_add(a, real);
			kf_argv_add(a, real);
		}
	free(so_dir);
	kf_argv_add(a, "--bind");
	kf_argv_add(a, work);
	kf_argv_add(a, work);
	return 0;
}

/* text without ncu's ==WARNING== and ==PROF== lines (and a warning's
 * continuation lines); the caller frees it. */
static char *quiet_ncu(const char *text)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	bool in_warning = false;
	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
		bool banner = !strncmp(l, "==WARNING==", 11) ||
			      !strncmp(l, "==PROF==", 8);
		if (banner)
			in_warning = !strncmp(l, "==WARNING==", 11);
		else if (!strncmp(l, "==", 2) || len <= 1)
			in_warning = false;
		if (!banner && !in_warning)
			kf_strbuf_addf(&sb, "%.*s", (int)len, l);
		l += len;
	}
	return kf_strbuf_detach(&sb);
}

/* Drops from list (comma separated) every metric an ncu error line
 * names; true when one was dropped. */
static bool drop_unknown(char *list, const char *log)
{
	bool dropped = false;
	for (const char *l = log; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		if (len > 9 && !strncmp(l, "==ERROR==", 9)) {
			char *q = list;
			while (*q) {
				size_t m = strcspn(q, ",");
				char name[160];
				snprintf(name, sizeof(name), "%.*s", (int)m,
					 q);
				char line[2048];
				snprintf(line, sizeof(line), "%.*s", (int)len,
					 l);
				if (m && strstr(line, name)) {
					size_t rest = strlen(q + m);
					memmove(q, q + m + (q[m] == ','),
						rest + (q[m] != ','));
					if (q > list && !*q && q[-1] == ',')
						q[-1] = '\0';
					dropped = true;
					continue;
				}
				q += m + (q[m] == ',');
			}
		}
		l = e ? e + 1 : NULL;
	}
	return dropped;
}

/* One side: a plain run of the driver, then one under ncu. */
static int profile_side(const struct kf_task *t, const char *so,
			const char *work, const char *tag, const char *ncu,
			const struct kf_profile_opts *o, struct kf_profile *p,
			struct kf_prof_side *s, char *metrics,
			struct kf_err *err)
{
	char calls[16];
	snprintf(calls, sizeof(calls), "%d", o->calls);
	char *worker = o->worker_path
			   ? kf_xstrdup(o->worker_path)
			   : kf_path_join(kf_exe_dir(), "kforge-worker");
	char *out = kf_xasprintf("%s/%s.json", work, tag);
	char *csv = kf_xasprintf("%s/%s.csv", work, tag);
	struct kf_strbuf log = KF_STRBUF_INIT;
	struct kf_argv a = {0};
	char *text = NULL;
	int rc;
	const char *driver[] = {worker, "--profile-driver", t->path, "cuda", so,
				calls, out};
	for (int i = 0; i < 7; i++)
		kf_argv_add(&a, driver[i]);
	rc = run(a.v, 120000, &log, err);
	if (rc) {
		kf_err_set(err, rc,
			   "profile: the %s's calls could not run on the "
			   "GPU: %.600s",
			   tag, log.buf ? log.buf : err->msg);
		goto out;
	}
	if ((rc = kf_file_read(out, 1u << 16, &text, NULL, err)))
		goto out;
	cJSON *j = cJSON_Parse(text);
	s->wall_ms = kf_json_num(j, "wall_ms", NAN);
	if (!p->device[0])
		snprintf(p->device, sizeof(p->device), "%s",
			 kf_json_str(j, "device") ? kf_json_str(j, "device")
						  : "");
	cJSON_Delete(j);
	free(text);
	text = NULL;
	for (int attempt = 0;; attempt++) {
		kf_argv_free(&a);
		kf_strbuf_release(&log);
		if (sandboxed() &&
		    (rc = sandbox_argv(&a, work, t->dir, so, err)))
			goto out;
		const char *filter = getenv("KFORGE_NCU_FILTER");
		/* ncu writes its section files under HOME: the work
		 * directory is the one writable place. */
		char *home = kf_xasprintf("HOME=%s", work);
		kf_argv_add(&a, "/usr/bin/env");
		kf_argv_add(&a, home);
		free(home);
		const char *args[] = {ncu,
				      "--csv",
				      "--page",
				      "raw",
				      "--print-units",
				      "base",
				      "--profile-from-start",
				      "off",
				      "--target-processes",
				      "all",
				      "--log-file",
				      csv,
				      "--metrics",
				      metrics,
				      NULL};
		for (int i = 0; args[i]; i++)
			kf_argv_add(&a, args[i]);
		if (!(filter && !strcmp(filter, "off"))) {
			kf_argv_add(&a, "--kernel-name");
			kf_argv_add(&a, filter && *filter ? filter
						 : kf_profile_ncu_filter());
		}
		for (int i = 0; i < 7; i++)
			kf_argv_add(&a, driver[i]);
		unlink(csv);
		rc = run(a.v, o->timeout_ms, &log, err);
		free(text);
		text = NULL;
		kf_file_read(csv, 64u << 20, &text, NULL, NULL);
		const char *said = text ? text : "";
		if (strstr(said, "ERR_NVGPUCTRPERM") ||
		    (log.buf && strstr(log.buf, "ERR_NVGPUCTRPERM"))) {
			rc = kf_err_set(
			    err, KF_ENOSYS,
			    "profile: ncu may not read the GPU's counters "
			    "here (ERR_NVGPUCTRPERM): run as root, or load "
			    "nvidia with NVreg_RestrictProfilingToAdminUsers=0"
			    "%s",
			    sandboxed() ? "; under bubblewrap root's "
					  "capabilities are dropped, so "
					  "KFORGE_PROFILE_SANDBOX=off may be "
					  "needed as well"
					: "");
			goto out;
		}
		if (rc && attempt < 4 && drop_unknown(metrics, said)) {
			kf_log(1, "profile: ncu refused some metrics; "
				  "asking again without them");
			continue;
		}
		break;
	}
	if (rc) {
		/* What the driver said, not ncu's own banner lines. */
		char *said = quiet_ncu(log.buf);
		char *csvsaid = quiet_ncu(text);
		kf_err_set(err, rc, "profile: ncu failed on the %s: %.800s%s%.400s",
			   tag, said, *csvsaid ? "\n" : "", csvsaid);
		free(said);
		free(csvsaid);
		goto out;
	}
	rc = kf_profile_parse_ncu(text, o->calls, s, err);
	if (!rc && !s->n)
		rc = kf_err_set(err, KF_EPROTO,
				"profile: ncu saw no kernel of the %s (does "
				"it launch any on the GPU?)",
				tag);
	if (!rc) {
		struct kf_prof_resources *res = NULL;
		int nr = 0;
		struct kf_err e2 = KF_ERR_INIT;
		if (!kf_profile_resources(so, &res, &nr, &e2))
			kf_profile_attach_resources(s, res, nr);
		else if (!p->note)
			p->note = kf_xasprintf("no static resources: %s",
					       e2.msg);
		free(res);
	}
out:
	kf_argv_free(&a);
	kf_strbuf_release(&log);
	free(text);
	free(worker);
	free(out);
	free(csv);
	return rc;
}

int kf_profile_run(const char *task_path, const char *candidate_path,
		   const struct kf_profile_opts *o, struct kf_profile *p,
		   struct kf_err *err)
{
	struct kf_profile_opts def = {0};
	def.backend = "cuda";
	struct kf_profile_opts op = o ? *o : def;
	if (!op.backend)
		op.backend = "cuda";
	if (op.calls <= 0)
		op.calls = 2;
	if (op.timeout_ms <= 0)
		op.timeout_ms = 600000;
	if (strcmp(op.backend, "cuda") && strcmp(op.backend, "host"))
		return kf_err_set(err, KF_EINVAL,
				  "profile: unknown backend '%s' (expected "
				  "cuda or host)",
				  op.backend);
	if (!kf_file_exists(candidate_path))
		return kf_err_set(err, KF_ENOENT,
				  "profile: no candidate file %s",
				  candidate_path);
	struct kf_task *t = NULL;
	int rc = kf_task_load(task_path, &t, err);
	if (rc) {
		kf_err_prefix(err, "profile: task %s", task_path);
		return rc;
	}
	if (t->kernelbench) {
		kf_task_free(t);
		return kf_err_set(err, KF_EINVAL,
				  "profile: %s is a KernelBench-format task; "
				  "kforge profile takes native tasks",
				  task_path);
	}
	if (!strcmp(op.backend, "host")) {
		kf_task_free(t);
		p->note = host_note();
		return 0;
	}
	kf_task_select_backend(t, "cuda");
	p->flops = kf_task_flops(t, 0);
	p->bytes = kf_task_bytes(t, 0);
	for (int i = 0; i < t->n_inputs; i++)
		p->half_inputs = p->half_inputs ||
				 t->inputs[i].dtype == KF_F16 ||
				 t->inputs[i].dtype == KF_BF16;
	char *ncu = kf_profile_find_tool("ncu");
	char *ref_src = NULL, *ref_so = NULL, *cand_so = NULL, *work = NULL;
	char *metrics = NULL;
	if (access("/dev/nvidiactl", F_OK) != 0) {
		rc = kf_err_set(err, KF_ENOSYS,
				"profile: no NVIDIA GPU on this machine "
				"(/dev/nvidiactl is missing); the cuda "
				"backend's profile needs one");
		goto out;
	}
	if (!ncu) {
		rc = kf_err_set(err, KF_ENOSYS,
				"profile: no Nsight Compute (ncu) here: set "
				"KFORGE_NCU, or put ncu on PATH "
				"(/usr/local/cuda/bin, /opt/nvidia/"
				"nsight-compute/<version>)");
		goto out;
	}
	if (!(ref_src = kf_task_reference(t, "cuda", err))) {
		rc = err->code ? err->code : KF_ENOENT;
		goto out;
	}
	if ((rc = compile_side(t, ref_src, &op, &ref_so, err)) ||
	    (rc = compile_side(t, candidate_path, &op, &cand_so, err)))
		goto out;
	char *dir = kf_path_join(kf_cache_dir(), "profile");
	if ((rc = kf_mkdir_p(dir, err))) {
		free(dir);
		goto out;
	}
	work = kf_xasprintf("%s/run-XXXXXX", dir);
	free(dir);
	if (!mkdtemp(work)) {
		rc = kf_err_set(err, KF_EIO, "profile: mkdtemp %s: %s", work,
				strerror(errno));
		goto out;
	}
	const char *env = getenv("KFORGE_NCU_METRICS");
	metrics = kf_xstrdup(env && *env ? env : kf_profile_ncu_metrics());
	if ((rc = profile_side(t, ref_so, work, "reference", ncu, &op, p,
			       &p->side[0], metrics, err)) ||
	    (rc = profile_side(t, cand_so, work, "candidate", ncu, &op, p,
			       &p->side[1], metrics, err)))
		goto out;
	if (op.roofline && kf_json_str(op.roofline, "bound"))
		snprintf(p->roof_bound, sizeof(p->roof_bound), "%s",
			 kf_json_str(op.roofline, "bound"));
	else {
		cJSON *peak = cached_peaks(p->device);
		if (peak)
			roofline(p, peak);
		cJSON_Delete(peak);
	}
	kf_profile_finish(p);
out:
	if (work && !getenv("KFORGE_PROFILE_KEEP")) {
		char *argv[] = {"/bin/rm", "-rf", work, NULL};
		struct kf_strbuf ig = KF_STRBUF_INIT;
		int st;
		kf_proc_run(argv, 30000, 4096, &ig, &st, NULL);
		kf_strbuf_release(&ig);
	}
	free(work);
	free(metrics);
	free(ncu);
	free(ref_src);
	free(ref_so);
	free(cand_so);
	kf_task_free(t);
	return rc;
}

void kf_profile_attach(cJSON *result, const char *task_path,
		       const char *candidate_path, const char *backend,
		       const char *include_dir)
{
	const char *status = kf_json_str(result, "status");
	if (!result || !status || strcmp(status, "ok"))
		return;
	struct kf_profile p;
	kf_profile_init(&p);
	struct kf_profile_opts o = {0};
	o.backend = backend;
	o.include_dir = include_dir;
	o.roofline = cJSON_GetObjectItemCaseSensitive(result, "roofline");
	struct kf_err err = KF_ERR_INIT;
	cJSON_DeleteItemFromObject(result, "profile");
	if (kf_profile_run(task_path, candidate_path, &o, &p, &err)) {
		cJSON *e = cJSON_AddObjectToObject(result, "profile");
		cJSON_AddStringToObject(e, "error", err.msg);
	} else {
		cJSON_AddItemToObject(result, "profile", kf_profile_json(&p));
	}
	kf_profile_release(&p);
}
