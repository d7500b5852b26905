/*
 * worker.c: the protocol inside the worker. It owns every buffer the
 * candidate touches, makes inputs from seeds, has the reference and the
 * candidate called in runner processes of their own (runner.c), poisons
 * outputs before each call, checks what each call left, and reports raw
 * measurements (comparisons, checksums, timing samples) to the supervisor,
 * which alone judges them.
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
#include <unistd.h>

#include <kforge/backend.h>
#include <kforge/task.h>
#include <kforge/worker.h>

#include "../eval/judge.h"
#include "worker_int.h"

struct tensor {
	const struct kf_tensor_spec *spec;
	void *ptr;
	size_t bytes;
	int64_t n;
	int64_t shape[KF_MAX_NDIM];
};

/* The tensors of one call: inputs and outputs for candidate and reference,
 * in separate buffers so that neither sees the other's memory. */
struct view {
	DLTensor in[KF_MAX_TENSORS], out[KF_MAX_TENSORS];
	int64_t in_shape[KF_MAX_TENSORS][KF_MAX_NDIM];
	int64_t out_shape[KF_MAX_TENSORS][KF_MAX_NDIM];
};

struct tensor_set {
	struct tensor in_c[KF_MAX_TENSORS], in_r[KF_MAX_TENSORS];
	struct tensor out_c[KF_MAX_TENSORS], out_r[KF_MAX_TENSORS];
	/* What each side is handed: descriptors and shapes in an allocation
	 * of its own, so that nothing at a fixed offset from a candidate's
	 * arguments leads to the reference's. */
	struct view *view_c, *view_r;
	DLTensor *dl_in_c, *dl_in_r, *dl_out_c, *dl_out_r;
	uint64_t in_sum[KF_MAX_TENSORS]; /* checksums after filling */
	/* One arena per side, with the same layout inside, so that neither
	 * side is favoured by where its buffers fall (cache sets, 4 KiB
	 * aliasing between an input and an output). A shared set's arenas
	 * are slots of the sides' pools, which the runners see; the others
	 * are the worker's alone. */
	void *arena_c, *arena_r;
	/* The candidate's arena outside its tensors, in n_inputs + n_outputs
	 * + 1 regions (before the first, between, after the last up to
	 * area, the arena's bytes), all guard bytes; sum: each region's
	 * checksum on a device. */
	struct slack {
		size_t off, bytes;
		uint64_t sum;
	} slack[2 * KF_MAX_TENSORS + 1];
	size_t area;
	int slot; /* -1: not in the pools */
	bool ready;
};

enum { SIDE_REF, SIDE_CAND };

/* Slots of one side's pool: the memory its runner maps. A trial's set and
 * the two timing sets are live at once. */
#define POOL_SLOTS 3
struct pool {
	void *base;
	size_t bytes, slot_bytes;
	size_t flush_off; /* a device: where the runner's flush writes */
	struct kf_share share;
};

struct worker {
	int out_fd;
	struct kf_task *task;
	const struct kf_backend_ops *ops;
	void *ctx;
	struct kf_runner run[2]; /* by side */
	struct pool pool[2];
	bool slot_used[POOL_SLOTS];
	bool loaded;
	bool kb_inputs;	      /* timing[0] holds KernelBench's inputs */
	bool flush_by_engine; /* KFORGE_FLUSH=engine (a device only) */
	uint64_t flush_state; /* flush keys and the places checked */
	uint32_t flush_last;
	/* The candidate runner's CPU clock when it last answered, and the
	 * most it used between calls since the last report. */
	uint64_t cand_cpu_after;
	uint64_t cpu_after[2]; /* each runner's CPU clock after its last call */
	uint64_t cand_idle_cpu_ns;
	/* Each runner's own CPU time per call around the entry (median and
	 * most of calls with no entry, before any object was loaded): what
	 * the host's samples leave out. */
	double overhead_ns[2], overhead_max_ns[2];
	char cand_state0[sizeof(((struct kf_run_rep *)0)->text)];
	/* Timing: two sets whose buffers alternate between pairs, and the
	 * inputs they are rotated from. */
	struct tensor_set timing[2], base;
	uint64_t timing_seed;
	int base_dist; /* which of its inputs' dists the base holds */
	int batches;   /* timing requests so far */
	int pairs_done;	  /* alternates the order within a pair */
	char state0[512]; /* the worker's global state at load (what is
			     device-wide shows here too) */
	/* What the candidate's last call broke beyond its outputs: guards
	 * ("out_of_bounds") or global state ("global_state"); "" if none. */
	char violation_check[32];
	char violation[1200];
	/* Per output, the timed pair whose output was furthest from the
	 * reference's in L1 (the precision check of timed outputs): the
	 * error over the larger of |want| and n * atol, both summed. Reset
	 * by each timing request. */
	struct timed_l1 {
		double score, l1_err, l1_want, max_abs, want_absmax;
		int64_t n;
		int pair; /* -1: none compared yet */
	} tl1[KF_MAX_TENSORS];
	bool faulted;	/* the device is lost: report and exit */
	int cuda_error; /* the CUDA runtime's error after the last call */
	char cuda_error_name[64];
};

static DLDataType dl_dtype(enum kf_dtype d)
{
	DLDataType t = {kDLFloat, 32, 1};
	switch (d) {
	case KF_F32:
		break;
	case KF_F64:
		t.bits = 64;
		break;
	case KF_F16:
		t.bits = 16;
		break;
	case KF_BF16:
		t.code = kDLBfloat;
		t.bits = 16;
		break;
	case KF_I32:
		t.code = kDLInt;
		break;
	default:
		t.code = kDLInt;
		t.bits = 64;
		break;
	}
	return t;
}

static int reply(struct worker *w, cJSON *msg)
{
	struct kf_err err = KF_ERR_INIT;
	int rc = kf_frame_write(w->out_fd, msg, &err);
	cJSON_Delete(msg);
	return rc;
}

static int reply_error(struct worker *w, const char *ev, const char *what,
		       const char *message)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", ev);
	if (what)
		cJSON_AddStringToObject(m, "what", what);
	cJSON_AddStringToObject(m, "message", message);
	return reply(w, m);
}

/* A failed call of the engine: a device fault (the candidate's doing) or
 * an error of the engine itself. */
static int reply_engine_error(struct worker *w, int rc, struct kf_err *err)
{
	return reply_error(w, rc == KF_EFAULT ? "fault" : "error", NULL,
			   err->msg);
}

static void add_cuda_error(struct worker *w, cJSON *m, const char *key)
{
	char *s = kf_xasprintf("%s (%d)", w->cuda_error_name, w->cuda_error);
	cJSON_AddStringToObject(m, key, s);
	free(s);
}

/* Reports what the candidate broke beyond its outputs, if anything; true
 * when it did. */
static bool add_violation(struct worker *w, cJSON *m)
{
	if (!w->violation_check[0])
		return false;
	cJSON *v = cJSON_AddObjectToObject(m, "violation");
	cJSON_AddStringToObject(v, "check", w->violation_check);
	cJSON_AddStringToObject(v, "detail", w->violation);
	return true;
}

static char *hex64(uint64_t v)
{
	return kf_xasprintf("%016" PRIx64, v);
}

static void add_hex(cJSON *obj, const char *key, uint64_t v)
{
	char *s = hex64(v);
	cJSON_AddStringToObject(obj, key, s);
	free(s);
}

static uint64_t parse_u64(const cJSON *obj, const char *key)
{
	const char *s = kf_json_str(obj, key);
	return s ? strtoull(s, NULL, 10) : (uint64_t)kf_json_num(obj, key, 0);
}

/* Describes tensor t of shape spec at dimset, placed at ptr. */
static int tensor_init(struct worker *w, struct tensor *t,
		       const struct kf_tensor_spec *spec, int dimset,
		       DLTensor *dl, struct kf_err *err)
{
	memset(t, 0, sizeof(*t));
	t->spec = spec;
	int64_t n = kf_task_shape(w->task, spec, dimset, t->shape, err);
	if (n < 0)
		return (int)n;
	t->n = n;
	t->bytes = (size_t)n * kf_dtype_bytes(spec->dtype);
	memset(dl, 0, sizeof(*dl));
	dl->device.device_type = w->ops->device_type;
	dl->device.device_id = 0;
	dl->ndim = spec->ndim;
	dl->dtype = dl_dtype(spec->dtype);
	dl->shape = t->shape;
	dl->strides = NULL;
	dl->byte_offset = 0;
	return 0;
}

/* Bytes of gap before and after every tensor, at the least; every byte of
 * an arena that is not a tensor holds the guard byte (see guards_set). */
#define GUARD_BYTES 256
#define GUARD_BYTE 0xcb
#define GUARD_WORD 0xcbcbcbcbu

/* Where tensor k (inputs first, then outputs) starts in an arena: each on
 * a 4 KiB boundary plus k times 17 cache lines (so that no two tensors
 * alias modulo 4 KiB in the same way), with a gap on both sides. */
static size_t arena_offset(size_t *cursor, int k, size_t bytes)
{
	size_t at = ((*cursor + GUARD_BYTES + 4095) & ~(size_t)4095) +
		    (size_t)k * 17 * 64;
	*cursor = at + bytes + GUARD_BYTES;
	return at;
}

/* The tensor a slack region follows (k >= 1: tensor k-1) or precedes
 * (region 0: tensor 0), by its index among inputs then outputs. */
static struct tensor *slack_tensor(struct worker *w, struct tensor *in,
				   struct tensor *out, int k)
{
	int n_in = w->task->n_inputs;
	return k < n_in ? &in[k] : &out[k - n_in];
}

/* Fills [at, at + bytes) with the guard byte. On the host the worker's
 * mapping is written directly; on a device the aligned middle is one fill
 * of int32 words (a kernel), the ragged ends small writes. */
static int canary_fill(struct worker *w, char *at, size_t bytes,
		       struct kf_err *err)
{
	unsigned char g[8];
	memset(g, GUARD_BYTE, sizeof(g));
	if (w->ops->device_type == kDLCPU) {
		memset(at, GUARD_BYTE, bytes);
		return 0;
	}
	size_t head = (size_t)(-(uintptr_t)at & 3);
	if (head > bytes)
		head = bytes;
	size_t words = (bytes - head) / 4, tail = bytes - head - words * 4;
	int rc = head ? w->ops->write(w->ctx, at, g, head, err) : 0;
	if (!rc && words) {
		struct kf_fill f = {0, 0, KF_DIST_CONST,
				    {(double)(int32_t)GUARD_WORD, 0}};
		rc = w->ops->fill(w->ctx, at + head, KF_I32, (int64_t)words,
				  &f, err);
	}
	if (!rc && tail)
		rc = w->ops->write(w->ctx, at + head + words * 4, g, tail,
				   err);
	return rc;
}

/* The first byte of [at, at + bytes) that is not the guard byte, or -1. */
static int64_t canary_first_bad(struct worker *w, const char *at, size_t bytes,
				struct kf_err *err, int *rc)
{
	static unsigned char buf[1u << 20];
	*rc = 0;
	for (size_t done = 0; done < bytes;) {
		size_t n = bytes - done < sizeof(buf) ? bytes - done
						      : sizeof(buf);
		const unsigned char *p = (const unsigned char *)at + done;
		if (w->ops->device_type != kDLCPU) {
			*rc = w->ops->read(w->ctx, buf, at + done, n, err);
			if (*rc)
				return -1;
			p = buf;
		}
		size_t i = 0;
		/* Word by word while aligned: most of a scan is clean. */
		while (i < n && ((uintptr_t)(p + i) & 7))
			if (p[i++] != GUARD_BYTE)
				return (int64_t)(done + i - 1);
		for (; i + 8 <= n; i += 8)
			if (*(const uint64_t *)(const void *)(p + i) !=
			    0xcbcbcbcbcbcbcbcbull)
				break;
		for (; i < n; i++)
			if (p[i] != GUARD_BYTE)
				return (int64_t)(done + i);
		done += n;
	}
	return -1;
}

/*
 * Fills every byte of the candidate's arena that is not a tensor with the
 * guard byte: before the first tensor, between tensors and after the last
 * up to the arena's end (its slot's end in the pools), so that a write
 * anywhere outside the buffers, however far past an end, changes a guard.
 * On a device each region's checksum is kept, to be compared after every
 * call (guards_check).
 */
static int guards_set(struct worker *w, struct tensor_set *s, size_t area,
		      struct kf_err *err)
{
	int n = w->task->n_inputs + w->task->n_outputs;
	char *base = s->arena_c;
	size_t from = 0;
	int rc = 0;
	s->area = area;
	for (int k = 0; k <= n && !rc; k++) {
		size_t to = area;
		if (k < n)
			to = (size_t)((char *)slack_tensor(w, s->in_c, s->out_c,
							  k)
					  ->ptr -
				      base);
		s->slack[k].off = from;
		s->slack[k].bytes = to - from;
		rc = canary_fill(w, base + from, to - from, err);
		if (!rc && w->ops->device_type != kDLCPU)
			rc = w->ops->checksum(w->ctx, base + from, to - from,
					      &s->slack[k].sum, err);
		if (k < n)
			from = to + slack_tensor(w, s->in_c, s->out_c, k)->bytes;
	}
	return rc;
}

/* The first guard of the candidate's side that changed, as "after output
 * 'y' (the first at byte 4100 past its end)", or "" in where when every
 * guard byte is intact. */
static int guards_check(struct worker *w, struct tensor_set *s, char *where,
			size_t cap, struct kf_err *err)
{
	int n = w->task->n_inputs + w->task->n_outputs;
	char *base = s->arena_c;
	where[0] = '\0';
	for (int k = 0; k <= n; k++) {
		const struct slack *r = &s->slack[k];
		if (!r->bytes)
			continue;
		int rc = 0;
		if (w->ops->device_type != kDLCPU) {
			uint64_t sum;
			rc = w->ops->checksum(w->ctx, base + r->off, r->bytes,
					      &sum, err);
			if (rc)
				return rc;
			if (sum == r->sum)
				continue;
		}
		int64_t at = canary_first_bad(w, base + r->off, r->bytes, err,
					      &rc);
		if (rc)
			return rc;
		if (at < 0)
			continue;
		bool before = k == 0;
		struct tensor *t =
		    slack_tensor(w, s->in_c, s->out_c, before ? 0 : k - 1);
		bool is_in = t >= s->in_c && t < s->in_c + KF_MAX_TENSORS;
		if (before)
			snprintf(where, cap,
				 "before %s '%s' (the first at byte %lld "
				 "before its start)",
				 is_in ? "input" : "output", t->spec->name,
				 (long long)(r->bytes - (size_t)at));
		else
			snprintf(where, cap,
				 "after %s '%s' (the first at byte %lld past "
				 "its end)",
				 is_in ? "input" : "output", t->spec->name,
				 (long long)at);
		return 0;
	}
	return 0;
}

static void set_release(struct worker *w, struct tensor_set *s)
{
	if (s->slot >= 0) {
		w->slot_used[s->slot] = false;
	} else {
		w->ops->free(w->ctx, s->arena_c);
		w->ops->free(w->ctx, s->arena_r);
	}
	free(s->view_c);
	free(s->view_r);
	memset(s, 0, sizeof(*s));
}

/* Points a side's descriptors at its own view: shapes copied there. */
static void view_bind(struct view *v, struct tensor *in, struct tensor *out,
		      int n_in, int n_out)
{
	for (int i = 0; i < n_in; i++) {
		memcpy(v->in_shape[i], in[i].shape, sizeof(v->in_shape[i]));
		v->in[i].shape = v->in_shape[i];
	}
	for (int j = 0; j < n_out; j++) {
		memcpy(v->out_shape[j], out[j].shape, sizeof(v->out_shape[j]));
		v->out[j].shape = v->out_shape[j];
	}
}

/* Bytes of one side's arena for a dimension set. */
static int64_t arena_bytes(struct worker *w, int dimset, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	size_t end = 0;
	for (int k = 0; k < t->n_inputs + t->n_outputs; k++) {
		const struct kf_tensor_spec *sp =
		    k < t->n_inputs ? &t->inputs[k]
				    : &t->outputs[k - t->n_inputs];
		int64_t shape[KF_MAX_NDIM];
		int64_t n = kf_task_shape(t, sp, dimset, shape, err);
		if (n < 0)
			return n;
		arena_offset(&end, k, (size_t)n * kf_dtype_bytes(sp->dtype));
	}
	return (int64_t)end;
}

/* Makes each side's pool, big enough for POOL_SLOTS arenas of the largest
 * dimension set, and has each runner map its own. */
static int pools_make(struct worker *w, struct kf_err *err)
{
	size_t slot = 0;
	for (int d = 0; d < w->task->n_dimsets; d++) {
		int64_t b = arena_bytes(w, d, err);
		if (b < 0)
			return (int)b;
		if ((size_t)b > slot)
			slot = (size_t)b;
	}
	slot = (slot + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	for (int side = 0; side < 2; side++) {
		struct pool *p = &w->pool[side];
		p->slot_bytes = slot;
		p->bytes = slot * POOL_SLOTS;
		if (w->ops->device_type != kDLCPU && w->ops->flush_into) {
			/* The runner flushes over the end of its pool, where
			 * the worker can see that it did (flush_verify). */
			p->flush_off = p->bytes;
			p->bytes += w->ops->flush_bytes(w->ctx);
		}
		int rc =
		    w->ops->share(w->ctx, p->bytes, &p->base, &p->share, err);
		if (rc)
			return rc;
		struct kf_run_req q;
		struct kf_run_rep a;
		memset(&q, 0, sizeof(q));
		q.op = KF_RUN_MAP;
		q.bytes = p->bytes;
		memcpy(q.handle, p->share.handle, sizeof(q.handle));
		rc =
		    kf_runner_exchange(&w->run[side], &q, p->share.fd, &a, err);
		if (!rc && a.rc)
			rc = kf_err_set(err, a.rc, "the %s runner: %s",
					w->run[side].role, a.text);
		if (rc)
			return rc;
	}
	return 0;
}

/* Allocates a tensor set for one dimension set and, with fill, fills its
 * inputs from seed (both sides alike). A shared set lives in the pools,
 * where the runners can call on it. */
static int set_make(struct worker *w, struct tensor_set *s, int dimset,
		    uint64_t seed, const int *dist_index, bool fill,
		    bool shared, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	size_t off_in[KF_MAX_TENSORS], off_out[KF_MAX_TENSORS], end = 0;
	int rc = 0;
	memset(s, 0, sizeof(*s));
	s->slot = -1;
	s->view_c = kf_xcalloc(1, sizeof(*s->view_c));
	s->view_r = kf_xcalloc(1, sizeof(*s->view_r));
	s->dl_in_c = s->view_c->in;
	s->dl_out_c = s->view_c->out;
	s->dl_in_r = s->view_r->in;
	s->dl_out_r = s->view_r->out;
	for (int i = 0; i < t->n_inputs && !rc; i++) {
		rc = tensor_init(w, &s->in_c[i], &t->inputs[i], dimset,
				 &s->dl_in_c[i], err);
		if (!rc)
			rc = tensor_init(w, &s->in_r[i], &t->inputs[i], dimset,
					 &s->dl_in_r[i], err);
		if (!rc)
			off_in[i] = arena_offset(&end, i, s->in_c[i].bytes);
	}
	for (int j = 0; j < t->n_outputs && !rc; j++) {
		rc = tensor_init(w, &s->out_c[j], &t->outputs[j], dimset,
				 &s->dl_out_c[j], err);
		if (!rc)
			rc = tensor_init(w, &s->out_r[j], &t->outputs[j],
					 dimset, &s->dl_out_r[j], err);
		if (!rc)
			off_out[j] = arena_offset(&end, t->n_inputs + j,
						  s->out_c[j].bytes);
	}
	if (!rc && shared) {
		for (int k = 0; k < POOL_SLOTS && s->slot < 0; k++)
			if (!w->slot_used[k])
				s->slot = k;
		KF_ASSERT(s->slot >= 0 && end <= w->pool[0].slot_bytes);
		w->slot_used[s->slot] = true;
		size_t at = (size_t)s->slot * w->pool[0].slot_bytes;
		s->arena_c = (char *)w->pool[SIDE_CAND].base + at;
		s->arena_r = (char *)w->pool[SIDE_REF].base + at;
	} else if (!rc) {
		rc = w->ops->alloc(w->ctx, end, &s->arena_c, err);
		if (!rc)
			rc = w->ops->alloc(w->ctx, end, &s->arena_r, err);
	}
	if (rc)
		goto out;
	for (int i = 0; i < t->n_inputs; i++) {
		s->in_c[i].ptr = s->dl_in_c[i].data =
		    (char *)s->arena_c + off_in[i];
		s->in_r[i].ptr = s->dl_in_r[i].data =
		    (char *)s->arena_r + off_in[i];
	}
	for (int j = 0; j < t->n_outputs; j++) {
		s->out_c[j].ptr = s->dl_out_c[j].data =
		    (char *)s->arena_c + off_out[j];
		s->out_r[j].ptr = s->dl_out_r[j].data =
		    (char *)s->arena_r + off_out[j];
	}
	view_bind(s->view_c, s->in_c, s->out_c, t->n_inputs, t->n_outputs);
	view_bind(s->view_r, s->in_r, s->out_r, t->n_inputs, t->n_outputs);
	/* Only the candidate's side: the reference's runner is the
	 * engine's. */
	if (shared)
		rc = guards_set(w, s, w->pool[SIDE_CAND].slot_bytes, err);
	for (int i = 0; i < t->n_inputs && !rc && fill; i++) {
		const struct kf_tensor_spec *sp = &t->inputs[i];
		const struct kf_dist *d =
		    &sp->dists[dist_index ? dist_index[i] % sp->n_dists : 0];
		struct kf_fill f = {seed, (uint32_t)i, d->kind, {0, 0}};
		kf_dist_params(t, d, dimset, f.p);
		rc = w->ops->fill(w->ctx, s->in_c[i].ptr, sp->dtype,
				  s->in_c[i].n, &f, err);
		if (!rc)
			rc =
			    w->ops->copy(w->ctx, s->in_r[i].ptr, s->in_c[i].ptr,
					 s->in_c[i].bytes, err);
		if (!rc)
			rc = w->ops->checksum(w->ctx, s->in_c[i].ptr,
					      s->in_c[i].bytes, &s->in_sum[i],
					      err);
	}
out:
	if (rc)
		set_release(w, s);
	else
		s->ready = true;
	return rc;
}

static int poison_outputs(struct worker *w, struct tensor *outs,
			  struct kf_err *err)
{
	for (int j = 0; j < w->task->n_outputs; j++) {
		int rc = w->ops->poison(w->ctx, outs[j].ptr,
					outs[j].spec->dtype, outs[j].n, err);
		if (rc)
			return rc;
	}
	return 0;
}

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
	int rc = guards_check(w, s, where, sizeof(where), err);
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
static int reference_intact(struct worker *w, struct tensor_set *s,
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
static void die_like(const struct kf_runner *r)
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


/* Notes the CPU time the candidate's process used since it last
 * answered: an honest runner waits for the next request without any. */
static void cand_idle_check(struct worker *w)
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
	kf_judge_idle_cpu(used, &v);
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

/* The value a device flush writes before a call: fresh for every call,
 * never 0 (0 asks for none), never the last one (already there). */
static uint32_t flush_key(struct worker *w)
{
	uint32_t k;
	do {
		w->flush_state += 0x9E3779B97F4A7C15ull;
		uint64_t z = w->flush_state;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		k = (uint32_t)(z ^ (z >> 31));
	} while (!k || k == w->flush_last);
	w->flush_last = k;
	return k;
}

/* Whether the flush before a call was done: it writes key into every
 * word of the side's flush region, and the worker reads back words at
 * places the runner cannot know in advance. A candidate that serves the
 * runner's protocol itself and skips the flush (warm caches, a shorter
 * call seen from outside) must still write the whole region, which is
 * the flush. Returns 0, or 1 with what was found in *got. */
static int flush_verify(struct worker *w, int side, uint32_t key,
			uint32_t *got, struct kf_err *err)
{
	const struct pool *p = &w->pool[side];
	size_t words = (p->bytes - p->flush_off) / 4;
	enum { CHUNKS = 8, WORDS = 16 };
	for (int c = 0; c < CHUNKS; c++) {
		uint32_t buf[WORDS];
		w->flush_state += 0x9E3779B97F4A7C15ull;
		uint64_t z = w->flush_state * 0xbf58476d1ce4e5b9ull;
		z ^= z >> 29;
		size_t at = (size_t)(z % (words - WORDS + 1));
		int rc = w->ops->read(w->ctx, buf,
				      (const char *)p->base + p->flush_off +
					  at * 4,
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
 * request to the reply (on a device, to the moment the worker's own queue
 * ran after it, so that work the call left behind counts). On the host the
 * sample is the runner's CPU time, which the kernel keeps for it; on a
 * device, what the runner measured (events and the device trace).
 */
static int call(struct worker *w, int side, struct tensor_set *set, bool flush,
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
	int rc = bare ? 0 : poison_outputs(w, outs, err);
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
	if (side == SIDE_CAND)
		cand_idle_check(w);
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
		die_like(r);
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
	if (q.flush_key) {
		uint32_t got = 0;
		rc = flush_verify(w, side, q.flush_key, &got, err);
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
					   w->overhead_max_ns[side], &v);
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

static cJSON *cmp_json(const struct kf_cmp *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "n", (double)c->n);
	cJSON_AddNumberToObject(o, "mismatches", (double)c->mismatches);
	cJSON_AddNumberToObject(o, "unwritten", (double)c->unwritten);
	cJSON_AddNumberToObject(o, "nan_got", (double)c->nan_got);
	cJSON_AddNumberToObject(o, "inf_got", (double)c->inf_got);
	cJSON_AddNumberToObject(o, "nan_want", (double)c->nan_want);
	cJSON_AddNumberToObject(o, "inf_want", (double)c->inf_want);
	cJSON_AddNumberToObject(o, "max_abs", c->max_abs);
	cJSON_AddNumberToObject(o, "max_rel", c->max_rel);
	cJSON_AddNumberToObject(o, "worst_index", (double)c->worst_index);
	/* NaN and infinity are not JSON: send them as strings. */
	const double gw[2] = {c->worst_got, c->worst_want};
	const char *const keys[2] = {"worst_got", "worst_want"};
	for (int i = 0; i < 2; i++) {
		if (gw[i] != gw[i] || gw[i] - gw[i] != 0) {
			char buf[16];
			snprintf(buf, sizeof(buf), "%g", gw[i]);
			cJSON_AddStringToObject(o, keys[i], buf);
		} else {
			cJSON_AddNumberToObject(o, keys[i], gw[i]);
		}
	}
	cJSON_AddNumberToObject(o, "l1_err", c->l1_err);
	cJSON_AddNumberToObject(o, "l1_want", c->l1_want);
	cJSON_AddNumberToObject(o, "want_mean", c->want_mean);
	cJSON_AddNumberToObject(o, "want_std", c->want_std);
	cJSON_AddNumberToObject(o, "want_min", c->want_min);
	cJSON_AddNumberToObject(o, "want_max", c->want_max);
	return o;
}

static int do_trial(struct worker *w, const cJSON *req)
{
	const struct kf_task *t = w->task;
	struct kf_err err = KF_ERR_INIT;
	struct tensor_set s;
	int dist_index[KF_MAX_TENSORS] = {0};
	const cJSON *dists = cJSON_GetObjectItem(req, "dists");
	for (int i = 0; i < t->n_inputs && i < cJSON_GetArraySize(dists); i++)
		dist_index[i] = cJSON_GetArrayItem(dists, i)->valueint;
	int dimset = (int)kf_json_num(req, "dimset", 0);
	if (dimset < 0 || dimset >= t->n_dimsets)
		return reply_error(w, "error", NULL, "trial: bad dimset");
	uint64_t seed = parse_u64(req, "seed");
	int rc = set_make(w, &s, dimset, seed, dist_index, true, true, &err);
	if (rc)
		return reply_error(w, "error", NULL, err.msg);

	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "trial");
	cJSON_AddNumberToObject(m, "index", kf_json_num(req, "index", 0));
	struct kf_sample smp;
	uint64_t wall;
	int c_rc = 0;
	/* The candidate runs before the reference: there is no reference
	 * output anywhere yet, not even in memory it cannot reach. Both of the
	 * candidate's calls come after the cache flush, as timed calls do: it
	 * cannot tell checks from timing by cold caches. (The reference's call
	 * needs none: the candidate's next call is flushed.) */
	rc = call(w, SIDE_CAND, &s, true, false, &smp, &wall, &err);
	if (rc)
		goto engine_error;
	c_rc = smp.rc;
	cJSON_AddNumberToObject(m, "cand_rc", c_rc);
	cJSON_AddNumberToObject(m, "cand_ns", smp.ns);
	if (w->cuda_error) {
		add_cuda_error(w, m, "cand_cuda_error");
		goto done;
	}
	if (add_violation(w, m) || c_rc)
		goto done;
	rc = reference_intact(w, &s, &err);
	if (rc)
		goto engine_error;
	if (add_violation(w, m))
		goto done;
	rc = call(w, SIDE_REF, &s, false, false, &smp, &wall, &err);
	if (rc)
		goto engine_error;
	cJSON_AddNumberToObject(m, "ref_rc", smp.rc);
	cJSON_AddNumberToObject(m, "ref_ns", smp.ns);
	if (smp.rc || w->cuda_error) {
		if (w->cuda_error)
			add_cuda_error(w, m, "ref_cuda_error");
		goto done;
	}

	cJSON *outs = cJSON_AddArrayToObject(m, "outputs");
	uint64_t first[KF_MAX_TENSORS];
	for (int j = 0; j < t->n_outputs; j++) {
		struct kf_cmp c;
		uint64_t ref_sum;
		rc = w->ops->compare(w->ctx, s.out_c[j].ptr, s.out_r[j].ptr,
				     t->outputs[j].dtype, s.out_c[j].n,
				     t->tol[t->outputs[j].dtype], &c, &err);
		if (!rc)
			rc =
			    w->ops->checksum(w->ctx, s.out_c[j].ptr,
					     s.out_c[j].bytes, &first[j], &err);
		if (!rc)
			rc = w->ops->checksum(w->ctx, s.out_r[j].ptr,
					      s.out_r[j].bytes, &ref_sum, &err);
		if (rc)
			goto engine_error;
		cJSON *o = cmp_json(&c);
		cJSON_AddStringToObject(o, "name", t->outputs[j].name);
		add_hex(o, "checksum_ref", ref_sum);
		add_hex(o, "checksum_1", first[j]);
		cJSON_AddItemToArray(outs, o);
	}
	cJSON *ins = cJSON_AddArrayToObject(m, "inputs");
	for (int i = 0; i < t->n_inputs; i++) {
		uint64_t after;
		rc = w->ops->checksum(w->ctx, s.in_c[i].ptr, s.in_c[i].bytes,
				      &after, &err);
		if (rc)
			goto engine_error;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->inputs[i].name);
		add_hex(o, "before", s.in_sum[i]);
		add_hex(o, "after", after);
		cJSON_AddItemToArray(ins, o);
	}
	/* The determinism check: a second call on the same inputs. */
	rc = call(w, SIDE_CAND, &s, true, false, &smp, &wall, &err);
	if (rc)
		goto engine_error;
	c_rc = smp.rc;
	cJSON_AddNumberToObject(m, "cand_rc_2", c_rc);
	if (w->cuda_error) {
		add_cuda_error(w, m, "cand_cuda_error");
		goto done;
	}
	if (add_violation(w, m))
		goto done;
	for (int j = 0; j < t->n_outputs && !c_rc; j++) {
		uint64_t second;
		cJSON *o = cJSON_GetArrayItem(outs, j);
		rc = w->ops->checksum(w->ctx, s.out_c[j].ptr, s.out_c[j].bytes,
				      &second, &err);
		if (rc)
			goto engine_error;
		add_hex(o, "checksum_2", second);
		if (second != first[j]) {
			struct kf_cmp c;
			rc = w->ops->compare(
			    w->ctx, s.out_c[j].ptr, s.out_r[j].ptr,
			    t->outputs[j].dtype, s.out_c[j].n,
			    t->tol[t->outputs[j].dtype], &c, &err);
			if (rc)
				goto engine_error;
			cJSON_AddNumberToObject(o, "mismatches_2",
						(double)c.mismatches);
		}
	}
done:
	set_release(w, &s);
	return reply(w, m);
engine_error:
	set_release(w, &s);
	cJSON_Delete(m);
	return reply_engine_error(w, rc, &err);
}

/* The timing sets: two of them, whose buffers the pairs alternate between,
 * and the base inputs that each pair's inputs are rotated from. */
static int timing_ready(struct worker *w, uint64_t seed, struct kf_err *err)
{
	if (w->base.ready)
		return 0;
	w->timing_seed = seed;
	int rc = set_make(w, &w->base, 0, seed, NULL, true, false, err);
	if (!rc)
		rc = set_make(w, &w->timing[0], 0, 0, NULL, false, true, err);
	if (!rc)
		rc = set_make(w, &w->timing[1], 0, 0, NULL, false, true, err);
	return rc;
}

/*
 * Each timing request (a batch of pairs) draws its base inputs from the
 * next of the inputs' distributions in turn (batch b: entry b % len of each
 * list), so that timed calls too see every input the task declares (heavy
 * tails, large values, ties...), not only the first kind.
 */
static int timing_dists(struct worker *w, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	int most = 1;
	for (int i = 0; i < t->n_inputs; i++)
		if (t->inputs[i].n_dists > most)
			most = t->inputs[i].n_dists;
	int d = w->batches++ % most;
	if (d == w->base_dist)
		return 0;
	w->base_dist = d;
	for (int i = 0; i < t->n_inputs; i++) {
		const struct kf_tensor_spec *sp = &t->inputs[i];
		const struct kf_dist *dd = &sp->dists[d % sp->n_dists];
		struct kf_fill f = {w->timing_seed + (uint64_t)d, (uint32_t)i,
				    dd->kind, {0, 0}};
		kf_dist_params(t, dd, 0, f.p);
		int rc = w->ops->fill(w->ctx, w->base.in_c[i].ptr, sp->dtype,
				      w->base.in_c[i].n, &f, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Elements of every timing input drawn afresh for each pair. */
#define FRESH_WINDOW 256

/*
 * The inputs of pair p: each base input rotated by a random number of
 * elements, with a window of fresh values, into both sides of set s. No two
 * pairs see the same inputs, so an output cached by pointer, by content or
 * by call count is wrong.
 */
static int rotate_inputs(struct worker *w, struct tensor_set *s, int p,
			 struct kf_err *err)
{
	int rc = 0;
	for (int i = 0; i < w->task->n_inputs && !rc; i++) {
		struct tensor *b = &w->base.in_c[i];
		const uint32_t ctr[4] = {(uint32_t)p, (uint32_t)i, 0x726f74u,
					 0};
		const uint32_t key[2] = {(uint32_t)w->timing_seed,
					 (uint32_t)(w->timing_seed >> 32)};
		uint32_t r[4];
		kf_philox4x32(ctr, key, r);
		size_t width = kf_dtype_bytes(b->spec->dtype);
		size_t shift =
		    (size_t)((((uint64_t)r[0] << 32) | r[1]) % (uint64_t)b->n) *
		    width;
		char *dst = s->in_c[i].ptr;
		const char *src = b->ptr;
		rc = w->ops->copy(w->ctx, dst, src + shift, b->bytes - shift,
				  err);
		if (!rc && shift)
			rc = w->ops->copy(w->ctx, dst + b->bytes - shift, src,
					  shift, err);
		/* A window of fresh values at a random place: no function of
		 * earlier inputs (a cached output, rotated back) is right. */
		int64_t len = b->n < FRESH_WINDOW ? b->n : FRESH_WINDOW;
		int64_t at = (int64_t)(r[2] % (uint64_t)(b->n - len + 1));
		const struct kf_tensor_spec *sp = &w->task->inputs[i];
		const struct kf_dist *d = &sp->dists[w->base_dist % sp->n_dists];
		struct kf_fill f = {((uint64_t)r[3] << 32) | r[2], (uint32_t)i,
				    d->kind, {0, 0}};
		kf_dist_params(w->task, d, 0, f.p);
		if (!rc)
			rc = w->ops->fill(w->ctx, dst + (size_t)at * width,
					  sp->dtype, len, &f, err);
		if (!rc)
			rc = w->ops->copy(w->ctx, s->in_r[i].ptr, dst, b->bytes,
					  err);
		if (!rc)
			rc = w->ops->checksum(w->ctx, dst, b->bytes,
					      &s->in_sum[i], err);
	}
	return rc;
}

/* Hides (or brings back) the reference's outputs while the candidate
 * runs after it in a pair: they wait in the base set's spare buffers and
 * the originals hold poison, so there is nothing to copy. */
static int stash_reference(struct worker *w, struct tensor_set *s, bool hide,
			   struct kf_err *err)
{
	int rc = 0;
	for (int j = 0; j < w->task->n_outputs && !rc; j++) {
		struct tensor *o = &s->out_r[j], *spare = &w->base.out_c[j];
		rc = hide ? w->ops->copy(w->ctx, spare->ptr, o->ptr, o->bytes,
					 err)
			  : w->ops->copy(w->ctx, o->ptr, spare->ptr, o->bytes,
					 err);
		if (!rc && hide)
			rc = w->ops->poison(w->ctx, o->ptr, o->spec->dtype,
					    o->n, err);
	}
	return rc;
}

/* Forgets the worst timed outputs, for a new timing request. */
static void timed_l1_reset(struct worker *w)
{
	for (int j = 0; j < KF_MAX_TENSORS; j++) {
		memset(&w->tl1[j], 0, sizeof(w->tl1[j]));
		w->tl1[j].pair = -1;
	}
}

/* After a timed pair (pair p): the candidate's outputs against the
 * reference's on the same inputs, element by element and, for the judge's
 * precision check, in L1 (the worst pair of each output is kept). */
static int check_pair(struct worker *w, struct tensor_set *s, int p,
		      int64_t *mism, int64_t *unwr, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	for (int j = 0; j < t->n_outputs; j++) {
		struct kf_cmp c;
		struct kf_tolerance tol = t->tol[t->outputs[j].dtype];
		int rc = w->ops->compare(w->ctx, s->out_c[j].ptr,
					 s->out_r[j].ptr, t->outputs[j].dtype,
					 s->out_c[j].n, tol, &c, err);
		if (rc)
			return rc;
		*mism += c.mismatches;
		*unwr += c.unwritten;
		double norm = fmax(c.l1_want, (double)c.n * tol.atol);
		double score = norm > 0 ? c.l1_err / norm : 0;
		struct timed_l1 *b = &w->tl1[j];
		if (b->pair < 0 || score > b->score) {
			b->score = score;
			b->l1_err = c.l1_err;
			b->l1_want = c.l1_want;
			b->max_abs = c.max_abs;
			b->want_absmax =
			    fmax(fabs(c.want_min), fabs(c.want_max));
			b->n = c.n;
			b->pair = p;
		}
	}
	return 0;
}

/* The worst timed output of each output, into the "check" of a timing
 * reply. */
static void timed_l1_json(struct worker *w, cJSON *chk)
{
	cJSON *outs = cJSON_AddArrayToObject(chk, "outputs");
	for (int j = 0; j < w->task->n_outputs; j++) {
		const struct timed_l1 *b = &w->tl1[j];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", w->task->outputs[j].name);
		cJSON_AddNumberToObject(o, "pair", b->pair);
		cJSON_AddNumberToObject(o, "n", (double)b->n);
		cJSON_AddNumberToObject(o, "l1_err", b->l1_err);
		cJSON_AddNumberToObject(o, "l1_want", b->l1_want);
		cJSON_AddNumberToObject(o, "max_abs", b->max_abs);
		cJSON_AddNumberToObject(o, "want_absmax", b->want_absmax);
		cJSON_AddItemToArray(outs, o);
	}
}

static int do_time(struct worker *w, const cJSON *req)
{
	const struct kf_task *t = w->task;
	struct kf_err err = KF_ERR_INIT;
	int rc = timing_ready(w, parse_u64(req, "seed"), &err);
	if (!rc)
		rc = timing_dists(w, &err);
	if (rc)
		return reply_engine_error(w, rc, &err);
	timed_l1_reset(w);
	int pairs = (int)kf_json_num(req, "pairs", 10);
	int warmup = (int)kf_json_num(req, "warmup", 0);
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "samples");
	cJSON *cns = cJSON_AddArrayToObject(m, "cand_ns");
	cJSON *rns = cJSON_AddArrayToObject(m, "ref_ns");
	cJSON *cmhz = cJSON_AddArrayToObject(m, "cand_mhz");
	cJSON *rmhz = cJSON_AddArrayToObject(m, "ref_mhz");
	cJSON *cthr = cJSON_AddArrayToObject(m, "cand_throttled");
	cJSON *rthr = cJSON_AddArrayToObject(m, "ref_throttled");
	cJSON *cwall = cJSON_AddArrayToObject(m, "cand_wall_ns");
	cJSON *rwall = cJSON_AddArrayToObject(m, "ref_wall_ns");
	cJSON *ckern = cJSON_AddArrayToObject(m, "cand_kernels");
	cJSON *cstreams = cJSON_AddArrayToObject(m, "cand_streams");
	int nonzero = 0, cuda_errors = 0, bad_pair = -1;
	int64_t mism = 0, unwr = 0;
	bool intact = true;
	for (int k = -warmup; k < pairs; k++) {
		/* Every pair, warm-up included, has inputs of its own. */
		int p = w->pairs_done++;
		struct tensor_set *s = &w->timing[p & 1];
		rc = rotate_inputs(w, s, p, &err);
		if (rc)
			goto engine_error;
		/* Alternate which goes first, so that neither always runs
		 * right after the other's flush. */
		bool cand_first = (p & 2) == 0;
		for (int side = 0; side < 2; side++) {
			bool is_cand = (side == 0) == cand_first;
			struct kf_sample smp;
			uint64_t wall = 0;
			if (is_cand && !cand_first)
				rc = stash_reference(w, s, true, &err);
			if (!rc)
				rc = call(w, is_cand ? SIDE_CAND : SIDE_REF, s,
					  true, false, &smp, &wall, &err);
			if (!rc && is_cand)
				rc = reference_intact(w, s, &err);
			if (!rc && is_cand && !cand_first)
				rc = stash_reference(w, s, false, &err);
			if (rc)
				goto engine_error;
			if (is_cand && smp.rc)
				nonzero++;
			if (is_cand && w->cuda_error)
				cuda_errors++;
			if (k < 0)
				continue;
			cJSON_AddItemToArray(is_cand ? cns : rns,
					     cJSON_CreateNumber(smp.ns));
			cJSON_AddItemToArray(is_cand ? cwall : rwall,
					     cJSON_CreateNumber((double)wall));
			cJSON_AddItemToArray(is_cand ? cmhz : rmhz,
					     cJSON_CreateNumber(smp.clock_mhz));
			cJSON_AddItemToArray(is_cand ? cthr : rthr,
					     cJSON_CreateBool(smp.throttled));
			if (is_cand) {
				cJSON_AddItemToArray(
				    ckern, cJSON_CreateNumber(smp.kernels));
				cJSON_AddItemToArray(
				    cstreams, cJSON_CreateNumber(smp.streams));
			}
		}
		/* Every timed call is checked, warm-up calls included. */
		cand_idle_check(w);
		int64_t before = mism + unwr;
		rc = check_pair(w, s, p, &mism, &unwr, &err);
		if (rc)
			goto engine_error;
		for (int i = 0; i < t->n_inputs; i++) {
			uint64_t a;
			rc = w->ops->checksum(w->ctx, s->in_c[i].ptr,
					      s->in_c[i].bytes, &a, &err);
			if (rc)
				goto engine_error;
			intact = intact && a == s->in_sum[i];
		}
		if ((mism + unwr > before || w->violation_check[0] || nonzero ||
		     cuda_errors || !intact) &&
		    bad_pair < 0) {
			bad_pair = p;
			break; /* the verdict is in: no need to go on */
		}
	}
	/* Each runner measured its own calls; *_wall_ns are the engine's
	 * view of them (CPU time on the host, wall time to a fence on a
	 * device). */
	cJSON_AddStringToObject(m, "ns_source", "runner");
	cJSON_AddNumberToObject(m, "cand_idle_cpu_ns",
				(double)w->cand_idle_cpu_ns);
	w->cand_idle_cpu_ns = 0;
	cJSON_AddNumberToObject(m, "cand_rc_nonzero", nonzero);
	cJSON_AddNumberToObject(m, "cand_cuda_errors", cuda_errors);
	cJSON *chk = cJSON_AddObjectToObject(m, "check");
	cJSON_AddNumberToObject(chk, "mismatches", (double)mism);
	cJSON_AddNumberToObject(chk, "unwritten", (double)unwr);
	cJSON_AddNumberToObject(chk, "first_bad_pair", bad_pair);
	cJSON_AddBoolToObject(chk, "inputs_intact", intact);
	timed_l1_json(w, chk);
	add_violation(w, m);
	return reply(w, m);
engine_error:
	cJSON_Delete(m);
	return reply_engine_error(w, rc, &err);
}

/*
 * KernelBench's timing, for one side: 3 synchronised warm-up calls, then
 * 101 calls each after a cache flush, timed by events on the side's stream
 * only (no device trace), the first dropped. Both sides see the same
 * inputs; the outputs of the last calls are compared afterwards (kforge's
 * addition: KernelBench does not check timed outputs).
 */
static int do_time_kb(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	int rc = timing_ready(w, parse_u64(req, "seed"), &err);
	if (rc)
		return reply_engine_error(w, rc, &err);
	struct tensor_set *s = &w->timing[0];
	const char *side_name = kf_json_str(req, "side");
	int side =
	    side_name && !strcmp(side_name, "reference") ? SIDE_REF : SIDE_CAND;
	int warmup = (int)kf_json_num(req, "warmup", 3);
	int calls = (int)kf_json_num(req, "calls", 101);
	if (!w->kb_inputs) {
		rc = rotate_inputs(w, s, 0, &err);
		if (rc)
			return reply_engine_error(w, rc, &err);
		w->kb_inputs = true;
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "samples_kb");
	cJSON_AddStringToObject(m, "side", side_name ? side_name : "candidate");
	cJSON *ns = cJSON_AddArrayToObject(m, "ns");
	int nonzero = 0, cuda_errors = 0;
	for (int k = -warmup; k < calls && !w->violation_check[0]; k++) {
		struct kf_sample smp;
		uint64_t wall;
		rc = call(w, side, s, k >= 0, false, &smp, &wall, &err);
		if (rc)
			break;
		nonzero += smp.rc != 0;
		cuda_errors += w->cuda_error != 0;
		if (k >= 1) /* the first timed call is dropped */
			cJSON_AddItemToArray(ns,
					     cJSON_CreateNumber(smp.event_ns));
	}
	if (rc) {
		cJSON_Delete(m);
		return reply_engine_error(w, rc, &err);
	}
	cJSON_AddNumberToObject(m, "rc_nonzero", nonzero);
	cJSON_AddNumberToObject(m, "cuda_errors", cuda_errors);
	if (side == SIDE_REF) {
		int64_t mism = 0, unwr = 0;
		timed_l1_reset(w);
		rc = check_pair(w, s, 0, &mism, &unwr, &err);
		if (rc) {
			cJSON_Delete(m);
			return reply_engine_error(w, rc, &err);
		}
		cJSON *chk = cJSON_AddObjectToObject(m, "check");
		cJSON_AddNumberToObject(chk, "mismatches", (double)mism);
		cJSON_AddNumberToObject(chk, "unwritten", (double)unwr);
		timed_l1_json(w, chk);
	}
	add_violation(w, m);
	return reply(w, m);
}

/* Joules per call: each side called back to back, without flushes, for
 * at least min_s seconds, against the device's energy counter. The worker
 * counts the calls itself. */
static int do_energy(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	struct tensor_set *s = &w->timing[0];
	double min_s = kf_json_num(req, "seconds", 0.5);
	double mj0, mj1;
	int rc = 0;
	if (!w->ops->energy_mj || !w->base.ready)
		return reply_error(w, "error", NULL, "energy: not available");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "energy");
	for (int side = 0; side < 2; side++) {
		bool is_cand = side == 0;
		long calls = 0;
		rc = w->ops->sync(w->ctx, &err);
		if (!rc)
			rc = w->ops->energy_mj(w->ctx, &mj0, &err);
		uint64_t t0 = kf_now_ns();
		while (!rc && (calls < 10 ||
			       (double)(kf_now_ns() - t0) < min_s * 1e9)) {
			struct kf_sample smp;
			uint64_t wall;
			rc = call(w, is_cand ? SIDE_CAND : SIDE_REF, s, false,
				  true, &smp, &wall, &err);
			calls++;
		}
		double secs = (double)(kf_now_ns() - t0) / 1e9;
		if (!rc)
			rc = w->ops->energy_mj(w->ctx, &mj1, &err);
		if (rc)
			break;
		cJSON *o = cJSON_AddObjectToObject(m, is_cand ? "candidate"
							      : "reference");
		cJSON_AddNumberToObject(o, "calls", (double)calls);
		cJSON_AddNumberToObject(o, "seconds", secs);
		cJSON_AddNumberToObject(o, "joules", (mj1 - mj0) / 1e3);
	}
	if (rc) {
		cJSON_Delete(m);
		return reply_engine_error(w, rc, &err);
	}
	return reply(w, m);
}

static int open_entry(const char *path, const char *symbol, void **so,
		      void **fn, struct kf_err *err)
{
	*so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*so)
		return kf_err_set(err, KF_ENOENT, "cannot load: %s", dlerror());
	dlerror();
	*fn = dlsym(*so, symbol);
	if (!*fn)
		return kf_err_set(err, KF_ENOENT, "no symbol %s: %s", symbol,
				  dlerror());
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A runner's own CPU time per call: calls that do everything but enter
 * an object, before it loads one (so that the runner's code is still the
 * engine's), each after a flush on the host as timed calls are. */
static int runner_overhead(struct worker *w, int side, struct kf_err *err)
{
	enum { N = 31 };
	static struct kf_run_req q;
	static struct kf_run_rep a;
	double ns[N];
	memset(&q, 0, sizeof(q));
	q.op = KF_RUN_CALL;
	q.empty = 1;
	for (int i = 0; i < N; i++) {
		/* As in a timed call on the host: after the worker's flush,
		 * which leaves the runner's own code and data cold too. */
		if (w->ops->device_type == kDLCPU) {
			int rc = w->ops->flush(w->ctx, err);
			if (rc)
				return rc;
		}
		uint64_t c0 = kf_runner_cpu_ns(&w->run[side]);
		int rc = kf_runner_exchange(&w->run[side], &q, -1, &a, err);
		if (rc == KF_ECHILD)
			die_like(&w->run[side]);
		if (!rc && a.rc)
			rc = kf_err_set(err, a.rc, "the %s runner: %s",
					w->run[side].role, a.text);
		if (rc)
			return rc;
		ns[i] = (double)(kf_runner_cpu_ns(&w->run[side]) - c0);
	}
	qsort(ns, N, sizeof(ns[0]), cmp_double);
	w->overhead_ns[side] = ns[N / 2];
	w->overhead_max_ns[side] = ns[N - 1];
	return 0;
}

/* Has a side's runner load its object; the reply's text is its global
 * state before the object's code ran. */
static int runner_load(struct worker *w, int side, const char *path,
		       struct kf_run_rep *a, struct kf_err *err)
{
	static struct kf_run_req q;
	memset(&q, 0, sizeof(q));
	q.op = KF_RUN_LOAD;
	q.sandbox = side == SIDE_CAND;
	snprintf(q.text, sizeof(q.text), "%s", path);
	int rc = kf_runner_exchange(&w->run[side], &q, -1, a, err);
	if (rc == KF_ECHILD)
		die_like(&w->run[side]);
	return rc;
}

static int do_load(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	static struct kf_run_req q;
	static struct kf_run_rep a;
	const char *task = kf_json_str(req, "task");
	const char *backend = kf_json_str(req, "backend");
	const char *ref = kf_json_str(req, "reference");
	const char *cand = kf_json_str(req, "candidate");
	if (!task || !backend || !ref || !cand)
		return reply_error(w, "error", NULL, "load: missing field");
	if (w->loaded)
		return reply_error(w, "error", NULL, "load: loaded already");
	if (kf_task_load(task, &w->task, &err))
		return reply_error(w, "load_error", "task", err.msg);
	kf_task_select_backend(w->task, backend);
	/* The hidden sets the supervisor drew for this evaluation. */
	const cJSON *hid;
	cJSON_ArrayForEach(hid, cJSON_GetObjectItem(req, "hidden"))
	{
		int64_t v[64];
		if (cJSON_GetArraySize(hid) != w->task->n_dims)
			return reply_error(w, "load_error", "task",
					   "load: a hidden set of the wrong "
					   "size");
		for (int i = 0; i < w->task->n_dims; i++) {
			const cJSON *x = cJSON_GetArrayItem(hid, i);
			v[i] = cJSON_IsNumber(x) ? (int64_t)x->valuedouble : 0;
		}
		if (kf_task_add_dimset(w->task, v, &err))
			return reply_error(w, "load_error", "task", err.msg);
	}
	w->ops = kf_backend_find(backend);
	if (!w->ops)
		return reply_error(w, "load_error", "backend",
				   "unknown backend");
	/* On the host, the worker and both runners share one core: the
	 * worker's cache flush is theirs, and neither side runs on a core
	 * the other left warm. */
	int cpu = -1;
	if (w->ops->device_type == kDLCPU) {
		cpu = sched_getcpu();
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	/* On a device the engine's view of a call is wall time, and a busy
	 * machine (compiles beside it) delays the wake-ups it is made of:
	 * the worker and its runners run ahead of ordinary work where the
	 * system allows it (root; elsewhere they stay as they are). The host
	 * measures CPU time, which load does not change. */
	const char *nice_env = getenv("KFORGE_NICE"); /* 0: as they are */
	if (w->ops->device_type != kDLCPU && !(nice_env && !strcmp(nice_env, "0")))
		(void)setpriority(PRIO_PROCESS, 0, -10);
	/* The runners come first: a device context does not survive fork. */
	static const char *const roles[2] = {"reference", "candidate"};
	for (int side = 0; side < 2; side++)
		if (kf_runner_start(&w->run[side], roles[side], cpu, backend,
				    side == SIDE_CAND ? cand : NULL, &err))
			return reply_error(w, "error", NULL, err.msg);
	for (int side = 0; side < 2; side++) {
		memset(&q, 0, sizeof(q));
		q.op = KF_RUN_INIT;
		snprintf(q.text, sizeof(q.text), "%s", backend);
		int rc = kf_runner_exchange(&w->run[side], &q, -1, &a, &err);
		if (rc == KF_ECHILD)
			die_like(&w->run[side]);
		if (rc)
			return reply_error(w, "error", NULL, err.msg);
		if (a.rc)
			return reply_error(w, "load_error", "backend", a.text);
	}
	if (w->ops->init(&w->ctx, &err))
		return reply_error(w, "load_error", "backend", err.msg);
	if (pools_make(w, &err))
		return reply_error(w, "error", NULL, err.msg);
	if (w->ops->state)
		w->ops->state(w->ctx, w->state0, sizeof(w->state0));
	for (int side = 0; side < 2; side++)
		if (runner_overhead(w, side, &err))
			return reply_error(w, "error", NULL, err.msg);
	if (runner_load(w, SIDE_REF, ref, &a, &err))
		return reply_error(w, "error", NULL, err.msg);
	if (a.rc)
		return reply_error(w, "load_error", "reference", a.text);
	if (runner_load(w, SIDE_CAND, cand, &a, &err))
		return reply_error(w, "error", NULL, err.msg);
	if (a.rc)
		return reply_error(w, "load_error",
				   strcmp(a.name, "sandbox") ? "candidate"
							     : "sandbox",
				   a.text);
	/* The candidate's global state before its code ran (its
	 * constructors run at load: the first call's check catches them). */
	snprintf(w->cand_state0, sizeof(w->cand_state0), "%s", a.text);
	w->cand_cpu_after = kf_runner_cpu_ns(&w->run[SIDE_CAND]);
	const char *fl = getenv("KFORGE_FLUSH");
	w->flush_by_engine = fl && !strcmp(fl, "engine");
	/* Unpredictable to the runners: where the flush is checked. */
	if (getrandom(&w->flush_state, sizeof(w->flush_state), 0) !=
	    (ssize_t)sizeof(w->flush_state))
		w->flush_state = kf_now_ns() ^ ((uint64_t)getpid() << 32);
	w->loaded = true;
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "loaded");
	cJSON_AddItemToObject(m, "device", w->ops->describe(w->ctx));
	cJSON *o = cJSON_AddObjectToObject(m, "runner_overhead_ns");
	cJSON_AddNumberToObject(o, "reference", w->overhead_ns[SIDE_REF]);
	cJSON_AddNumberToObject(o, "candidate", w->overhead_ns[SIDE_CAND]);
	cJSON_AddNumberToObject(o, "reference_max",
				w->overhead_max_ns[SIDE_REF]);
	cJSON_AddNumberToObject(o, "candidate_max",
				w->overhead_max_ns[SIDE_CAND]);
	return reply(w, m);
}

typedef int (*probe_fn)(double *flops_per_s, double *bytes_per_s,
			double *matrix_flops_per_s);

static int do_peaks(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	void *so, *fn;
	const char *path = kf_json_str(req, "probe");
	if (!path || open_entry(path, "kf_probe", &so, &fn, &err))
		return reply_error(w, "error", NULL,
				   path ? err.msg : "peaks: no probe");
	double f = 0, b = 0, mf = 0;
	int rc = ((probe_fn)fn)(&f, &b, &mf);
	dlclose(so);
	if (rc)
		return reply_error(w, "error", NULL, "the probe failed");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "peaks");
	cJSON_AddNumberToObject(m, "flops_per_s", f);
	cJSON_AddNumberToObject(m, "bytes_per_s", b);
	cJSON_AddNumberToObject(m, "matrix_flops_per_s", mf);
	return reply(w, m);
}

int kf_worker_main(int in_fd, int out_fd)
{
	static struct worker w;
	memset(&w, 0, sizeof(w));
	w.out_fd = out_fd;
	w.run[0].fd = w.run[1].fd = -1;
	w.pool[0].share.fd = w.pool[1].share.fd = -1;
	/* Nothing else may read or write this process's memory through
	 * /proc (the candidate's runner holds no capability to override
	 * it). */
	prctl(PR_SET_DUMPABLE, 0);
	int code = 0;
	for (;;) {
		struct kf_err err = KF_ERR_INIT;
		cJSON *req = NULL;
		if (kf_frame_read(in_fd, 0, &req, &err))
			break; /* the supervisor went away */
		const char *op = kf_json_str(req, "op");
		int rc = 0;
		bool quit = false;
		if (!op)
			rc =
			    reply_error(&w, "error", NULL, "request has no op");
		else if (!strcmp(op, "load"))
			rc = do_load(&w, req);
		else if (!strcmp(op, "peaks"))
			rc = do_peaks(&w, req);
		else if (!w.loaded &&
			 (!strcmp(op, "trial") || !strcmp(op, "time") ||
			  !strcmp(op, "time_kb") || !strcmp(op, "energy")))
			rc = reply_error(&w, "error", NULL, "nothing loaded");
		else if (!strcmp(op, "trial"))
			rc = do_trial(&w, req);
		else if (!strcmp(op, "time"))
			rc = do_time(&w, req);
		else if (!strcmp(op, "time_kb"))
			rc = do_time_kb(&w, req);
		else if (!strcmp(op, "energy"))
			rc = do_energy(&w, req);
		else if (!strcmp(op, "quit"))
			quit = true;
		else
			rc = reply_error(&w, "error", NULL, "unknown op");
		cJSON_Delete(req);
		if (rc) {
			code = 1;
			break;
		}
		if (quit || w.faulted)
			break;
	}
	for (int side = 0; side < 2; side++)
		kf_runner_stop(&w.run[side]);
	if (w.ops && w.ctx && !w.faulted) {
		set_release(&w, &w.timing[0]);
		set_release(&w, &w.timing[1]);
		set_release(&w, &w.base);
		for (int side = 0; side < 2; side++)
			if (w.pool[side].base)
				w.ops->unshare(w.ctx, w.pool[side].base,
					       w.pool[side].bytes,
					       &w.pool[side].share, false);
		w.ops->fini(w.ctx);
	}
	kf_task_free(w.task);
	return code;
}
