/*
 * farm.c: the compile pool and the device slots (farm.h).
 *
 * Compile threads take candidates in order and build them through the
 * compile cache with the options kf_eval uses, so that the evaluation then
 * finds its object cached; each built candidate goes into a bounded queue
 * (a full queue stalls the compilers: they never run more than queue_cap
 * candidates ahead). A slot thread per device pops a candidate and runs
 * kf_eval with the worker pinned to its device. A candidate that does not
 * compile is evaluated on the compile thread (kf_eval stops at the compile
 * error before any worker starts), so it never holds a device slot.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/compile.h>
#include <kforge/eval.h>
#include <kforge/exec.h>
#include <kforge/farm.h>
#include <kforge/task.h>

void kf_queue_init(struct kf_queue *q, int cap)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->cap = cap > 0 ? cap : 1;
	q->items = kf_xcalloc((size_t)q->cap, sizeof(int));
}

void kf_queue_destroy(struct kf_queue *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->not_empty);
	pthread_cond_destroy(&q->not_full);
	free(q->items);
	q->items = NULL;
}

int kf_queue_push(struct kf_queue *q, int v)
{
	pthread_mutex_lock(&q->lock);
	while (q->len == q->cap && !q->closed)
		pthread_cond_wait(&q->not_full, &q->lock);
	if (q->closed) {
		pthread_mutex_unlock(&q->lock);
		return -1;
	}
	q->items[(q->head + q->len) % q->cap] = v;
	q->len++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

int kf_queue_pop(struct kf_queue *q, int *v)
{
	pthread_mutex_lock(&q->lock);
	while (q->len == 0 && !q->closed)
		pthread_cond_wait(&q->not_empty, &q->lock);
	if (q->len == 0) {
		pthread_mutex_unlock(&q->lock);
		return -1;
	}
	*v = q->items[q->head];
	q->head = (q->head + 1) % q->cap;
	q->len--;
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void kf_queue_close(struct kf_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->not_empty);
	pthread_cond_broadcast(&q->not_full);
	pthread_mutex_unlock(&q->lock);
}

/* A task of the batch: loaded, and its reference built, once, by the
 * first compile thread that needs it. */
struct task_ctx {
	const char *path;
	pthread_mutex_t lock;
	int state; /* 0: not yet; 1: ready; -1: failed (err says why) */
	char err[1024];
	struct kf_task *t;
	struct kf_compile_opts co; /* its candidates' compile options */
	const char **libs;
	int unopened; /* KernelBench-format pairs not yet loaded (the pool) */
};

struct farm {
	const struct kf_farm_opts *o; /* no_cache off: see kf_farm_run */
	bool no_cache;		      /* the caller's */
	const char *backend;
	struct kf_farm_item *items;
	int n;
	struct task_ctx *tasks;
	int n_tasks;
	int *task_of;		      /* per item: its task_ctx */
	struct kf_compile_result *cr; /* per item: the precompile */
	uint64_t *compiled_at;
	struct kf_queue ready;
	/* KernelBench-format pairs are loaded on the compile threads, each
	 * bridge started and its task and candidate loaded while the slot
	 * measures another (preload: one slot); pending[i] holds item i's
	 * until its slot takes it. The compile threads then run on every
	 * core but timing_core, which the slot pins each bridge to. */
	bool preload;
	int timing_core; /* -1: none reserved */
	struct kf_eval_pending **pending;
	/* Warm bridges (o->eval.pool, with preload): a pair's bridge serves
	 * the next pair of its task once it has ended cleanly, its judge and
	 * reference's runner kept and the candidate loaded into a runner it
	 * started ahead; the compile threads start them all, and outlive
	 * the pool. */
	struct kf_bridge_pool *pool;
	/* The evaluations not loaded ahead run through the executor's
	 * thread kind (include/kforge/exec.h), on the slots' threads. */
	struct kf_exec *exec;
	/* Measured pairs whose bridges end beside the slot's next one
	 * (kf_eval_measure, then kf_eval_finish on the closing thread). */
	struct kf_queue closing;
	bool closer;
	/* A bridge dies with the thread that started it (PR_SET_PDEATHSIG
	 * follows the thread), so the compile threads outlive every
	 * evaluation: each counts itself in compiled, then waits for
	 * drained. */
	pthread_cond_t changed;
	int compiled;
	bool drained;
	pthread_mutex_t lock; /* next, the progress counters and callback */
	int next;
	struct kf_farm_progress prog;
};

/* Loads the task and builds its reference; 0 or a negative code. */
static int task_prepare(struct farm *f, struct task_ctx *c)
{
	struct kf_err err = KF_ERR_INIT;
	pthread_mutex_lock(&c->lock);
	if (c->state) {
		pthread_mutex_unlock(&c->lock);
		return c->state > 0 ? 0 : -1;
	}
	int rc = kf_task_load(c->path, &c->t, &err);
	char *ref = NULL;
	if (!rc) {
		bool cuda = !strcmp(f->backend, "cuda");
		struct kf_task *t = c->t;
		c->co.backend = f->backend;
		c->co.include_dir = f->o->eval.include_dir;
		c->co.no_cache = f->no_cache;
		c->co.arch = t->cuda_arch;
		c->libs = kf_xcalloc(
		    (size_t)(t->n_libraries + t->n_cuda_libraries + 1),
		    sizeof(*c->libs));
		for (int i = 0; i < t->n_libraries; i++)
			c->libs[c->co.n_libraries++] = t->libraries[i];
		for (int i = 0; i < t->n_cuda_libraries && cuda; i++)
			c->libs[c->co.n_libraries++] = t->cuda_libraries[i];
		c->co.libraries = c->libs;
		ref = kf_task_reference(t, f->backend, &err);
		rc = ref ? 0 : (err.code ? err.code : KF_ENOENT);
	}
	if (!rc) {
		/* Once, here: every evaluation then finds it cached
		 * instead of building it n times at once. */
		struct kf_compile_result rr = KF_COMPILE_RESULT_INIT;
		rc = kf_compile(ref, &c->co, &rr, &err);
		if (!rc && !rr.ok)
			rc = kf_err_set(&err, KF_EINVAL,
					"%s: the reference does not compile: "
					"%s",
					ref, rr.log ? rr.log : "");
		kf_compile_result_release(&rr);
	}
	free(ref);
	c->state = rc ? -1 : 1;
	if (rc)
		snprintf(c->err, sizeof(c->err), "%s", err.msg);
	pthread_mutex_unlock(&c->lock);
	return rc ? -1 : 0;
}

static void report(struct farm *f, int i, bool compiled)
{
	pthread_mutex_lock(&f->lock);
	if (compiled) {
		f->prog.compiled++;
		f->prog.item = NULL;
	} else {
		f->prog.done++;
		const cJSON *res = f->items[i].result;
		if (f->items[i].rc || !res ||
		    kf_result_status(res) != KF_STATUS_OK)
			f->prog.failed++;
		f->prog.item = &f->items[i];
	}
	if (f->o->progress)
		f->o->progress(f->o->progress_arg, &f->prog);
	pthread_mutex_unlock(&f->lock);
}

/* Sets a number inside result.compile.candidate. */
static void set_compile_field(cJSON *res, const char *key, cJSON *v)
{
	cJSON *c = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(res, "compile"), "candidate");
	if (c && cJSON_GetObjectItemCaseSensitive(c, key))
		cJSON_ReplaceItemInObjectCaseSensitive(c, key, v);
	else
		cJSON_Delete(v);
}

/* Item i's evaluation options: its own or the farm's, with the farm's
 * backend, cache rule and bridge pool. */
static struct kf_eval_opts item_opts(const struct farm *f, int i)
{
	struct kf_eval_opts eo =
	    f->items[i].eval ? *f->items[i].eval : f->o->eval;
	eo.backend = f->backend;
	eo.no_cache = false;
	eo.pool = f->o->eval.pool;
	return eo;
}

/* Runs kf_eval for item i with the worker on device (-1: any). */
static void evaluate(struct farm *f, int i, int device)
{
	struct kf_farm_item *it = &f->items[i];
	struct task_ctx *c = &f->tasks[f->task_of[i]];
	struct kf_eval_opts eo = item_opts(f, i);
	struct kf_err err = KF_ERR_INIT;
	eo.device = device;
	/* The reference is built; the candidate too (with the same
	 * options): the evaluation takes both from the cache, and a failed
	 * build as it is (a failure not kept, a timeout's, was built twice:
	 * 2 x 120 s). */
	eo.no_cache = false;
	if (!f->cr[i].ok)
		eo.compiled = &f->cr[i];
	uint64_t t0 = kf_now_ns();
	if (f->pending[i]) {
		/* Loaded on a compile thread: measured on the slot's core
		 * (here, or before on the slot, kf_eval_measure). */
		struct kf_eval_pending *p = f->pending[i];
		f->pending[i] = NULL;
		it->rc = kf_eval_finish(p, f->timing_core, &it->result);
	} else if (c->state < 0) {
		it->rc = KF_EINVAL;
		snprintf(it->err, sizeof(it->err), "%s", c->err);
	} else {
		/* Not through the pool: a bridge started on this thread
		 * must not outlive it. */
		eo.pool = NULL;
		struct kf_exec_job j;
		memset(&j, 0, sizeof(j));
		j.task = c->path;
		j.candidate = it->candidate;
		j.eval = &eo;
		kf_exec_run(f->exec, &j);
		it->result = j.result;
		it->rc = j.result ? 0 : j.rc;
		if (!j.result)
			kf_err_set(&err, j.rc, "%s", j.error);
		free(j.error);
	}
	/* No pair of its task left to load: its idle bridges end. */
	if (f->pool && c->path && kf_task_is_kernelbench(c->path)) {
		pthread_mutex_lock(&f->lock);
		bool last = c->unopened == 0;
		pthread_mutex_unlock(&f->lock);
		if (last)
			kf_bridge_pool_retire(f->pool, c->path);
	}
	it->eval_s = (double)(kf_now_ns() - t0) * 1e-9;
	it->device = device;
	if (it->rc) {
		if (c->state >= 0)
			snprintf(it->err, sizeof(it->err), "%s", err.msg);
		it->result = NULL;
	} else if (!kf_task_is_kernelbench(c->path)) {
		/* The record tells what the compile cost, as a lone
		 * evaluation's would (a failure's first build too, not the
		 * evaluation's hit on what it kept). */
		set_compile_field(it->result, "seconds",
				  cJSON_CreateNumber(f->cr[i].seconds));
		set_compile_field(it->result, "cached",
				  cJSON_CreateBool(f->cr[i].cached));
	}
	report(f, i, false);
}

static void *compile_thread(void *arg)
{
	struct farm *f = arg;
	if (f->timing_core >= 0) {
		/* Off the slot's core: what these threads start (builds,
		 * bridges loading) inherits it. */
		cpu_set_t set;
		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
		    CPU_COUNT(&set) > 1) {
			CPU_CLR(f->timing_core, &set);
			(void)pthread_setaffinity_np(pthread_self(),
						     sizeof(set), &set);
		}
	}
	for (;;) {
		pthread_mutex_lock(&f->lock);
		int i = f->next < f->n ? f->next++ : -1;
		pthread_mutex_unlock(&f->lock);
		if (i < 0)
			break;
		struct task_ctx *c = &f->tasks[f->task_of[i]];
		struct kf_err err = KF_ERR_INIT;
		struct kf_compile_result *r = &f->cr[i];
		if (c->path && kf_task_is_kernelbench(c->path)) {
			/* A KernelBench-format task: what the candidate asks
			 * torch to build is built here, on no device, so
			 * that its evaluation in a device slot finds it
			 * built. A prebuild that cannot run costs nothing
			 * but time: the evaluation builds and decides. */
			double secs = 0;
			struct kf_eval_opts eo = item_opts(f, i);
			(void)kf_bridge_prebuild(c->path, f->items[i].candidate,
						 &eo, &secs, &err);
			if (f->preload) {
				/* Loaded now, measured in the slot. One that
				 * cannot open is evaluated there, which says
				 * why. */
				struct kf_err oerr = KF_ERR_INIT;
				eo.device = !strcmp(f->backend, "cuda") ? 0 : -1;
				if (kf_eval_open(c->path,
						 f->items[i].candidate, &eo,
						 &f->pending[i], &oerr))
					f->pending[i] = NULL;
			}
			pthread_mutex_lock(&f->lock);
			c->unopened--;
			pthread_mutex_unlock(&f->lock);
			r->ok = true;
			r->cached = false;
			r->seconds = secs;
			f->items[i].compile_s = secs;
			f->compiled_at[i] = kf_now_ns();
			report(f, i, true);
			if (kf_queue_push(&f->ready, i) != 0)
				evaluate(f, i, -1);
			continue;
		}
		if (task_prepare(f, c) == 0 &&
		    kf_compile(f->items[i].candidate, &c->co, r, &err) != 0)
			r->ok = false; /* kf_eval will say why */
		f->items[i].compile_s = r->seconds;
		f->compiled_at[i] = kf_now_ns();
		report(f, i, true);
		if (!r->ok) {
			evaluate(f, i, -1);
			continue;
		}
		if (kf_queue_push(&f->ready, i) != 0)
			evaluate(f, i, -1); /* cannot happen: closed late */
	}
	pthread_mutex_lock(&f->lock);
	f->compiled++;
	pthread_cond_broadcast(&f->changed);
	while (!f->drained)
		pthread_cond_wait(&f->changed, &f->lock);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

struct slot {
	struct farm *f;
	int device;
};

static void *slot_thread(void *arg)
{
	struct slot *s = arg;
	struct farm *f = s->f;
	int i;
	while (kf_queue_pop(&f->ready, &i) == 0) {
		f->items[i].wait_s =
		    (double)(kf_now_ns() - f->compiled_at[i]) * 1e-9;
		if (f->pending[i] && f->closer) {
			/* Measured here; its bridge's end (2.1 s, median, on
			 * an H100) is waited for on the closing thread. */
			uint64_t t0 = kf_now_ns();
			kf_eval_measure(f->pending[i], f->timing_core);
			f->items[i].eval_s = (double)(kf_now_ns() - t0) * 1e-9;
			if (kf_queue_push(&f->closing, i) == 0)
				continue;
		}
		evaluate(f, i, s->device);
	}
	return NULL;
}

static void *closing_thread(void *arg)
{
	struct farm *f = arg;
	int i;
	while (kf_queue_pop(&f->closing, &i) == 0) {
		double measured = f->items[i].eval_s;
		evaluate(f, i, -1);
		f->items[i].eval_s += measured;
	}
	return NULL;
}

int kf_farm_run(const char *task_path, struct kf_farm_item *items, int n,
		const struct kf_farm_opts *opts, struct kf_err *err)
{
	static const struct kf_farm_opts defaults = KF_FARM_OPTS_INIT;
	if (!opts)
		opts = &defaults;
	struct farm f;
	memset(&f, 0, sizeof(f));
	struct kf_farm_opts o = *opts;
	o.eval.no_cache = false;
	f.o = &o;
	f.no_cache = opts->eval.no_cache;
	f.backend = opts->eval.backend ? opts->eval.backend : "host";
	o.eval.backend = f.backend;
	bool cuda = !strcmp(f.backend, "cuda");
	f.items = items;
	f.n = n;
	f.prog.total = n;
	int rc = 0;

	/* The process-wide lazily computed paths, before any thread. */
	(void)kf_cache_dir();
	(void)kf_exe_dir();

	/* The distinct tasks, the run's first. */
	f.tasks = kf_xcalloc((size_t)n + 1, sizeof(*f.tasks));
	f.task_of = kf_xcalloc((size_t)n + 1, sizeof(int));
	if (task_path)
		f.tasks[f.n_tasks++].path = task_path;
	for (int i = 0; i < n; i++) {
		const char *tp = items[i].task ? items[i].task : task_path;
		int k = 0;
		while (k < f.n_tasks &&
		       (!tp || !f.tasks[k].path || strcmp(f.tasks[k].path, tp)))
			k++;
		if (k == f.n_tasks)
			f.tasks[f.n_tasks++].path = tp;
		f.task_of[i] = k;
		f.tasks[k].unopened++;
		items[i].result = NULL;
		items[i].rc = 0;
		items[i].err[0] = '\0';
		items[i].device = -1;
		items[i].compile_s = items[i].wait_s = items[i].eval_s = 0;
	}
	for (int k = 0; k < f.n_tasks; k++) {
		pthread_mutex_init(&f.tasks[k].lock, NULL);
		if (!f.tasks[k].path) {
			f.tasks[k].state = -1;
			snprintf(f.tasks[k].err, sizeof(f.tasks[k].err),
				 "no task for this candidate");
		}
	}
	/* The run's own task must be sound: say so before anything runs
	 * (a KernelBench-format task is loaded by each evaluation's bridge). */
	if (task_path && !kf_task_is_kernelbench(task_path) &&
	    task_prepare(&f, &f.tasks[0]) != 0) {
		rc = kf_err_set(err, KF_EINVAL, "%s", f.tasks[0].err);
		goto out;
	}

	int jobs =
	    opts->jobs > 0 ? opts->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (jobs < 1)
		jobs = 1;
	if (jobs > n)
		jobs = n > 0 ? n : 1;
	int slots = opts->slots;
	if (slots <= 0)
		slots = cuda ? kf_farm_gpu_count() : 1;
	if (slots <= 0)
		slots = 1; /* no GPU: the evaluations will say so */
	int cap = opts->queue_cap > 0 ? opts->queue_cap : 2 * slots;
	f.cr = kf_xcalloc((size_t)(n > 0 ? n : 1), sizeof(*f.cr));
	f.pending = kf_xcalloc((size_t)(n > 0 ? n : 1), sizeof(*f.pending));
	f.timing_core = -1;
	f.preload = slots == 1;
	if (f.preload) {
		/* The last core this process may use is the slot's. */
		cpu_set_t set;
		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
		    CPU_COUNT(&set) > 1)
			for (int k = CPU_SETSIZE - 1; k >= 0; k--)
				if (CPU_ISSET(k, &set)) {
					f.timing_core = k;
					break;
				}
	}
	if (f.preload) {
		/* Two bridges a task (one measured, one loaded ahead), and
		 * a few idle ones of tasks that come again later. */
		f.pool = kf_bridge_pool_new(jobs + 2, 2);
		o.eval.pool = f.pool;
	}
	struct kf_exec_opts xo = KF_EXEC_OPTS_INIT;
	xo.eval = o.eval;
	rc = kf_exec_open(&xo, &f.exec, err);
	if (rc) {
		kf_bridge_pool_free(f.pool);
		goto out;
	}
	f.compiled_at = kf_xcalloc((size_t)(n > 0 ? n : 1), sizeof(uint64_t));
	kf_queue_init(&f.ready, cap);
	pthread_mutex_init(&f.lock, NULL);
	pthread_cond_init(&f.changed, NULL);

	kf_queue_init(&f.closing, n > 0 ? n : 1);
	pthread_t closer;
	f.closer = f.preload &&
		   pthread_create(&closer, NULL, closing_thread, &f) == 0;
	pthread_t *ct = kf_xcalloc((size_t)jobs, sizeof(pthread_t));
	pthread_t *st = kf_xcalloc((size_t)slots, sizeof(pthread_t));
	struct slot *sl = kf_xcalloc((size_t)slots, sizeof(struct slot));
	int n_ct = 0, n_st = 0;
	int gpus = cuda ? kf_farm_gpu_count() : 1;
	for (int s = 0; s < slots; s++) {
		sl[s].f = &f;
		sl[s].device = cuda ? s % (gpus > 0 ? gpus : 1) : -1;
		if (pthread_create(&st[n_st], NULL, slot_thread, &sl[s]) == 0)
			n_st++;
	}
	if (n_st == 0) {
		/* No slot thread: measure here once all is compiled, so the
		 * queue must hold everything. */
		kf_queue_destroy(&f.ready);
		kf_queue_init(&f.ready, n > 0 ? n : 1);
	}
	for (int j = 0; j < jobs; j++)
		if (pthread_create(&ct[n_ct], NULL, compile_thread, &f) == 0)
			n_ct++;
	if (n_ct == 0) { /* no thread: compile here */
		f.drained = true;
		compile_thread(&f);
	}
	pthread_mutex_lock(&f.lock);
	while (f.compiled < n_ct)
		pthread_cond_wait(&f.changed, &f.lock);
	pthread_mutex_unlock(&f.lock);
	kf_queue_close(&f.ready);
	if (n_st == 0) { /* no slot thread: measure here */
		struct slot here = {&f, cuda ? 0 : -1};
		slot_thread(&here);
	}
	for (int s = 0; s < n_st; s++)
		pthread_join(st[s], NULL);
	kf_queue_close(&f.closing);
	if (f.closer)
		pthread_join(closer, NULL);
	kf_exec_close(f.exec);
	/* Before the compile threads that started them end. */
	kf_bridge_pool_free(f.pool);
	f.pool = NULL;
	pthread_mutex_lock(&f.lock);
	f.drained = true;
	pthread_cond_broadcast(&f.changed);
	pthread_mutex_unlock(&f.lock);
	for (int j = 0; j < n_ct; j++)
		pthread_join(ct[j], NULL);

	for (int i = 0; i < n; i++) {
		kf_compile_result_release(&f.cr[i]);
		kf_eval_discard(f.pending[i]); /* none: each was measured */
	}
	free(f.pending);
	free(f.cr);
	free(f.compiled_at);
	free(ct);
	free(st);
	free(sl);
	kf_queue_destroy(&f.ready);
	kf_queue_destroy(&f.closing);
	pthread_cond_destroy(&f.changed);
	pthread_mutex_destroy(&f.lock);
out:
	for (int k = 0; k < f.n_tasks; k++) {
		pthread_mutex_destroy(&f.tasks[k].lock);
		kf_task_free(f.tasks[k].t);
		free(f.tasks[k].libs);
	}
	free(f.tasks);
	free(f.task_of);
	return rc;
}
