/*
 * call.c: one call of a side's kernel in its runner, the engine's view of
 * it from outside, and what is checked around a candidate's call (guards,
 * global state, the reference's inputs, CPU time after a return, the device
 * flush); the judge (src/eval/judge.c) decides what each observation means.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/task.h>
#include <kforge/worker.h>

#include "worker_state.h"

/* Keeps the judge's verdict over something seen during a candidate call as
 * the violation to report, unless one is kept already; true when v is one
 * (kept or not). */
static bool violate(struct worker *w, const struct verdict *v)
{
	if (v->status == KF_STATUS_OK)
		return false;
	if (!w->violation_check[0]) {
		snprintf(w->violation_check, sizeof(w->violation_check), "%s",
			 v->check);
		snprintf(w->violation, sizeof(w->violation), "%s", v->reason);
	}
	return true;
}

/* After a candidate call: its guards and the global state must be as
 * they were: the candidate's own process's (as its runner reports it) and
 * the worker's, where what is device-wide shows. The first violation is
 * kept in w->violation*. */
static int check_side_effects(struct worker *w, struct tensor_set *s,
			      const char *cand_state, struct kf_err *err)
{
	char where[128];
	int rc = wk_guards_check(w, s, where, sizeof(where), err);
	if (rc)
		return rc;
	struct verdict v = {0};
	kf_judge_guards(where, &v);
	if (violate(w, &v) || !w->ops->state)
		return 0;
	char now[sizeof(w->cand_state0)];
	const char *was = w->state0;
	w->ops->state(w->ctx, now, sizeof(now));
	if (!strcmp(now, w->state0) && strcmp(cand_state, w->cand_state0)) {
		snprintf(now, sizeof(now), "%s", cand_state);
		was = w->cand_state0;
	}
	kf_judge_global_state(now, was, &v);
	violate(w, &v);
	return 0;
}

/* The reference's inputs must still be the pristine copies after a
 * candidate call: a candidate that reaches them (to make the reference
 * compute something trivial) is caught. */
int wk_reference_intact(struct worker *w, struct tensor_set *s,
			struct kf_err *err)
{
	for (int i = 0; i < w->task->n_inputs; i++) {
		uint64_t sum;
		int rc = w->ops->checksum(w->ctx, s->in_r[i].ptr,
					  s->in_r[i].bytes, &sum, err);
		if (rc)
			return rc;
		if (sum != s->in_sum[i]) {
			struct verdict v = {0};
			kf_judge_reference_input(s->in_r[i].spec->name, &v);
			violate(w, &v);
		}
	}
	return 0;
}

/* A runner is gone: this process ends the same way, so that the
 * supervisor reads the candidate's crash, sandbox kill or CPU limit from
 * the worker's end as before there were runners. */
void wk_die_like(const struct kf_runner *r)
{
	int st = r->status;
	fflush(NULL);
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		sigset_t set;
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		kill(getpid(), sig);
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

void wk_cand_memory_check(struct worker *w)
{
	static uint64_t limit;
	struct kf_runner *r = &w->run[SIDE_CAND];
	if (!r->pid)
		return;
	if (!limit) {
		struct kf_err e = KF_ERR_INIT;
		/* Checked before the worker started (kf_session_spawn). */
		if (kf_runner_mem_limit(&limit, &e))
			limit = (uint64_t)KF_RUNNER_MEM_MB_DEFAULT << 20;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)r->pid);
	FILE *f = fopen(path, "r");
	unsigned long long size = 0, res = 0;
	int n = f ? fscanf(f, "%llu %llu", &size, &res) : 0;
	if (f)
		fclose(f);
	if (n != 2)
		return;
	uint64_t rss = (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t tensors = w->pool[SIDE_CAND].bytes;
	uint64_t most = limit + 4 * tensors;
	if (rss <= most)
		return;
	char *msg = kf_xasprintf(
	    "the candidate's process held %llu MiB of memory resident, over "
	    "the limit of %llu MiB (KFORGE_RUNNER_MEM_MB=%llu plus four times "
	    "its %.1f MiB of tensors): it was stopped",
	    (unsigned long long)(rss >> 20), (unsigned long long)(most >> 20),
	    (unsigned long long)(limit >> 20), (double)tensors / (1 << 20));
	kf_runner_stop(r);
	wk_reply_error(w, "memory", NULL, msg);
	free(msg);
	_exit(0);
}

/* Waits until the candidate's process blocks, as an honest runner does
 * within microseconds of its reply (it reads the next request), or has
 * used more than KF_IDLE_CPU_NS since its last answer (at most 1 s of
 * wall time). Work a candidate does after its reply then falls in the gap
 * before the next request, where wk_cand_idle_check counts it, and not
 * only partly, under its limit, with the rest in the next call's view,
 * where it read as a forged reply: which of the two saw it depended on how
 * fast the engine, and so the machine, was (a wall-clock bound of 20 ms
 * was too short beside three busy loops: 5 ms of CPU took longer). Only
 * on the host, where the runner has one thread. */
static void cand_settle(struct worker *w)
{
	struct kf_runner *r = &w->run[SIDE_CAND];
	if (w->ops->device_type != kDLCPU || !w->cand_cpu_after)
		return;
	uint64_t until = kf_now_ns() + 1000000000u;
	struct timespec nap = {0, 20000};
	while (kf_runner_running(r) &&
	       kf_runner_cpu_ns(r) <= w->cand_cpu_after + KF_IDLE_CPU_NS &&
	       kf_now_ns() < until)
		nanosleep(&nap, NULL);
}

/* Notes the CPU time the candidate's process used since it last
 * answered: an honest runner waits for the next request without any. */
void wk_cand_idle_check(struct worker *w)
{
	/* On a device the driver's own threads in the runner use CPU time
	 * between calls; work the candidate leaves on the device is what
	 * the fence and the unaccounted-time check see there. */
	if (!w->cand_cpu_after || w->ops->device_type != kDLCPU)
		return;
	uint64_t now = kf_runner_cpu_ns(&w->run[SIDE_CAND]);
	uint64_t used = now > w->cand_cpu_after ? now - w->cand_cpu_after : 0;
	if (used > w->cand_idle_cpu_ns)
		w->cand_idle_cpu_ns = used;
	struct verdict v = {0};
	kf_judge_idle_cpu(used, &w->idle_cpu_strikes, &v);
	violate(w, &v);
	w->cand_cpu_after = now;
}

/* Where tensor t of a shared set lies for its side's runner. */
static void run_tensor(struct worker *w, int side, const struct tensor *t,
		       const DLTensor *dl, struct kf_run_tensor *rt)
{
	memset(rt, 0, sizeof(*rt));
	rt->offset =
	    (uint64_t)((const char *)t->ptr - (const char *)w->pool[side].base);
	rt->ndim = dl->ndim;
	rt->code = dl->dtype.code;
	rt->bits = dl->dtype.bits;
	rt->lanes = dl->dtype.lanes;
	memcpy(rt->shape, t->shape, sizeof(rt->shape));
}

/* The next of the flush's random numbers (splitmix64 over flush_state,
 * which the runners cannot read). */
static uint64_t flush_random(struct worker *w)
{
	uint64_t z = w->flush_state += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The value a device flush writes before a call: fresh for every call,
 * never 0 (0 asks for none), never the last one (already there). */
static uint32_t flush_key(struct worker *w)
{
	uint32_t k;
	do
		k = (uint32_t)flush_random(w);
	while (!k || k == w->flush_last);
	w->flush_last = k;
	return k;
}

/* Whether the flush before a call was done: it writes key into every
 * word of the side's flush region, and the worker reads back words at
 * places the runner cannot know in advance. A candidate that serves the
 * runner's protocol itself and skips the flush (warm caches, a shorter
 * call seen from outside) must still write the whole region, which is
 * the flush. Returns 0, or 1 with what was found in *got. */
static int wk_flush_verify(struct worker *w, int side, uint32_t key,
			   uint32_t *got, struct kf_err *err)
{
	const struct pool *p = &w->pool[side];
	size_t words = (p->bytes - p->flush_off) / 4;
	enum { CHUNKS = 8, WORDS = 16 };
	for (int c = 0; c < CHUNKS; c++) {
		uint32_t buf[WORDS];
		size_t at = (size_t)(flush_random(w) % (words - WORDS + 1));
		int rc = w->ops->read(
		    w->ctx, buf, (const char *)p->base + p->flush_off + at * 4,
		    sizeof(buf), err);
		if (rc)
			return rc;
		for (int i = 0; i < WORDS; i++)
			if (buf[i] != key) {
				*got = buf[i];
				return 1;
			}
	}
	return 0;
}

/*
 * One call of a side's kernel on set, in its runner, with the outputs
 * poisoned first (unless bare). *wall_ns is the worker's view: from the
 * request to the wk_reply (on a device, to the moment the worker's own queue
 * ran after it, so that work the call left behind counts). On the host the
 * sample is the runner's CPU time, which the kernel keeps for it; on a
 * device, what the runner measured (events and the device trace).
 */
int wk_call(struct worker *w, int side, struct tensor_set *set, bool flush,
	    bool bare, struct kf_sample *smp, uint64_t *wall_ns,
	    struct kf_err *err)
{
	const struct kf_task *t = w->task;
	struct tensor *in = side == SIDE_CAND ? set->in_c : set->in_r;
	struct tensor *outs = side == SIDE_CAND ? set->out_c : set->out_r;
	DLTensor *dl_in = side == SIDE_CAND ? set->dl_in_c : set->dl_in_r;
	DLTensor *dl_out = side == SIDE_CAND ? set->dl_out_c : set->dl_out_r;
	bool host = w->ops->device_type == kDLCPU;
	static struct kf_run_req q;
	static struct kf_run_rep a;
	int rc = bare ? 0 : wk_poison_outputs(w, outs, err);
	if (!rc)
		rc = w->ops->sync(w->ctx, err);
	if (rc)
		return rc;
	KF_ASSERT(set->slot >= 0);
	memset(&q, 0, sizeof(q));
	q.op = KF_RUN_CALL;
	q.n_in = t->n_inputs;
	q.n_out = t->n_outputs;
	for (int i = 0; i < t->n_inputs; i++)
		run_tensor(w, side, &in[i], &dl_in[i], &q.t[i]);
	for (int j = 0; j < t->n_outputs; j++)
		run_tensor(w, side, &outs[j], &dl_out[j],
			   &q.t[t->n_inputs + j]);
	/* On the host the worker evicts the caches, on the core the runners
	 * share with it. On a device each runner flushes in its own queue
	 * right before the call: flushed from the worker's queue, the device
	 * switches contexts between flush and call, which adds about 70 us
	 * to every call on an H200 and moved a self-against-self speedup to
	 * 1.012 (docs/measuring.md). KFORGE_FLUSH=engine flushes from the
	 * worker, to compare. A candidate that skips its runner's flush
	 * gains at most what the unaccounted-time check allows. */
	bool by_runner = !host && !w->flush_by_engine;
	if (flush && !by_runner && w->ops->flush_range) {
		for (int i = 0; i < t->n_inputs; i++)
			w->ops->flush_range(w->ctx, in[i].ptr, in[i].bytes);
		for (int j = 0; j < t->n_outputs; j++)
			w->ops->flush_range(w->ctx, outs[j].ptr, outs[j].bytes);
	}
	if (flush && !by_runner)
		rc = w->ops->flush(w->ctx, err);
	q.flush = flush && by_runner;
	if (q.flush && w->pool[side].flush_off) {
		q.flush_key = flush_key(w);
		q.flush_off = w->pool[side].flush_off;
	}
	if (rc)
		return rc;
	if (side == SIDE_CAND) {
		cand_settle(w);
		wk_cand_idle_check(w);
	}
	struct kf_runner *r = &w->run[side];
	/* On a device the runner says "done" as soon as the call's work has
	 * finished and only then reads its trace and clock, whose cost grows
	 * with the kernels the call ran: the worker's view then holds the
	 * same runner work for both sides. */
	q.staged = !host && w->ops->time_finish;
	uint64_t c0 = kf_runner_cpu_ns(r);
	uint64_t t0 = kf_now_ns(), t1 = 0;
	rc = kf_runner_send(r, &q, -1, err);
	if (!rc)
		rc = kf_runner_recv(r, &q, &a, err);
	if (!rc && a.stage == 1) {
		/* The fence: the worker's queue runs once the device serves
		 * it, after what the call left running. */
		uint64_t word;
		rc = w->ops->read(w->ctx, &word, w->pool[side].base, 8, err);
		t1 = kf_now_ns();
		if (!rc)
			rc = kf_runner_recv(r, &q, &a, err);
	} else if (!rc && !host) {
		uint64_t word;
		rc = w->ops->read(w->ctx, &word, w->pool[side].base, 8, err);
		t1 = kf_now_ns();
	}
	if (!rc && a.stage != 0)
		rc = kf_err_set(err, KF_EPROTO,
				"the %s runner answered request %u out of "
				"stage",
				r->role, q.seq);
	if (rc == KF_ECHILD)
		wk_die_like(r);
	if (rc == KF_EPROTO && side == SIDE_CAND) {
		struct verdict v = {0};
		kf_judge_out_of_turn(err->msg, &v);
		violate(w, &v);
		kf_runner_stop(r);
		memset(smp, 0, sizeof(*smp));
		*wall_ns = 0;
		return 0;
	}
	if (!t1)
		t1 = kf_now_ns();
	uint64_t c1 = kf_runner_cpu_ns(r);
	if (rc)
		return rc;
	if (side == SIDE_CAND)
		wk_cand_memory_check(w);
	if (side == SIDE_CAND)
		w->cand_cpu_after = c1;
	if (a.rc) {
		if (a.rc == KF_EFAULT)
			w->faulted = true;
		/* What goes wrong in the candidate's process is its doing. */
		return kf_err_set(
		    err, side == SIDE_CAND ? KF_EFAULT : a.rc, "%s%s",
		    side == SIDE_CAND ? "the candidate's call: " : "", a.text);
	}
	*smp = a.smp;
	/* The host backend never says a call was throttled (no clock to hold
	 * down): a runner that does forged its reply, and would have its
	 * pairs dropped until the timing ran far past its cap. */
	if (host)
		smp->throttled = false;
	if (q.flush_key) {
		uint32_t got = 0;
		rc = wk_flush_verify(w, side, q.flush_key, &got, err);
		if (rc < 0)
			return rc;
		if (rc && side == SIDE_CAND) {
			struct verdict v = {0};
			kf_judge_flush(got, q.flush_key, &v);
			violate(w, &v);
		} else if (rc)
			return kf_err_set(err, KF_EIO,
					  "the reference runner's flush left "
					  "0x%08x where 0x%08x was written",
					  got, q.flush_key);
		rc = 0;
	}
	/* The engine's own view of the call: on the host the CPU time the
	 * kernel counted for the runner (immune to what else the machine
	 * runs), on a device the wall time to the fence. The sample is the
	 * runner's measurement; the judge holds the candidate's against this
	 * view (unaccounted_time), and here a gross forgery is caught at
	 * once: one thread cannot use more CPU time than the time it
	 * reports, beyond the runner's own cost. */
	if (host) {
		/* The outside view runs from the end of this runner's previous
		 * call, so that CPU time it used between calls (after its
		 * reply, before this request) is charged too: every
		 * nanosecond its process runs falls in some call's view. */
		uint64_t from = w->cpu_after[side] ? w->cpu_after[side] : c0;
		w->cpu_after[side] = c1;
		if (side == SIDE_CAND) {
			struct verdict v = {0};
			kf_judge_reply_cpu(a.smp.ns, (double)(c1 - c0),
					   w->overhead_max_ns[side],
					   &w->reply_cpu_strikes, &v);
			violate(w, &v);
		}
		t1 = t0 + (c1 - from);
	}
	*wall_ns = t1 - t0;
	w->cuda_error = a.cuda_error;
	snprintf(w->cuda_error_name, sizeof(w->cuda_error_name), "%s", a.name);
	if (side == SIDE_CAND && !w->violation_check[0] && !bare)
		rc = check_side_effects(w, set, a.text, err);
	return rc;
}
