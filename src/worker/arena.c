/*
 * arena.c: the worker's memory: each side's pool (what its runner maps),
 * tensor sets in it with the same layout for both sides, the guard bytes in
 * the slack around the candidate's tensors, and the poison written into
 * outputs before each call.
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

#include "worker_state.h"

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
	dl->dtype = kf_dl_dtype(spec->dtype);
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
		struct kf_fill f = {
		    0, 0, KF_DIST_CONST, {(double)(int32_t)GUARD_WORD, 0}, 0};
		rc = w->ops->fill(w->ctx, at + head, KF_I32, (int64_t)words, &f,
				  err);
	}
	if (!rc && tail)
		rc = w->ops->write(w->ctx, at + head + words * 4, g, tail, err);
	return rc;
}

/* The first byte of [at, at + bytes) that is not the guard byte, or -1. */
static int64_t canary_first_bad(struct worker *w, const char *at, size_t bytes,
				struct kf_err *err, int *rc)
{
	static unsigned char buf[1u << 20];
	*rc = 0;
	for (size_t done = 0; done < bytes;) {
		size_t n =
		    bytes - done < sizeof(buf) ? bytes - done : sizeof(buf);
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
 * wk_call (guards_check).
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
			from =
			    to + slack_tensor(w, s->in_c, s->out_c, k)->bytes;
	}
	return rc;
}

/* The first guard of the candidate's side that changed, as "after output
 * 'y' (the first at byte 4100 past its end)", or "" in where when every
 * guard byte is intact. */
int wk_guards_check(struct worker *w, struct tensor_set *s, char *where,
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
		int64_t at =
		    canary_first_bad(w, base + r->off, r->bytes, err, &rc);
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

void wk_set_release(struct worker *w, struct tensor_set *s)
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

/* Where the outputs of a set begin at the least: in a slot of the pools,
 * past the inputs' part; elsewhere right after the inputs. */
static void outputs_from(size_t *cursor, size_t in_bytes)
{
	if (*cursor < in_bytes)
		*cursor = in_bytes;
}

/* Bytes of one side's arena for a dimension set: with outputs false, those
 * of its inputs and the slack after them, rounded up to whole pages; else
 * the whole arena with the outputs from in_bytes. */
static int64_t arena_bytes(struct worker *w, int dimset, bool outputs,
			   size_t in_bytes, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	size_t end = 0;
	int n = outputs ? t->n_inputs + t->n_outputs : t->n_inputs;
	for (int k = 0; k < n; k++) {
		const struct kf_tensor_spec *sp =
		    k < t->n_inputs ? &t->inputs[k]
				    : &t->outputs[k - t->n_inputs];
		int64_t shape[KF_MAX_NDIM];
		int64_t m = kf_task_shape(t, sp, dimset, shape, err);
		if (m < 0)
			return m;
		if (k == t->n_inputs)
			outputs_from(&end, in_bytes);
		arena_offset(&end, k, (size_t)m * kf_dtype_bytes(sp->dtype));
	}
	if (!outputs)
		end = (end + 4095) & ~(size_t)4095;
	return (int64_t)end;
}

/* Makes each side's pool, big enough for POOL_SLOTS arenas of the largest
 * dimension set, and has each runner map its own. */
int wk_pools_make(struct worker *w, struct kf_err *err)
{
	size_t slot = 0, in_part = 0;
	for (int d = 0; d < w->task->n_dimsets; d++) {
		int64_t b = arena_bytes(w, d, false, 0, err);
		if (b < 0)
			return (int)b;
		if ((size_t)b > in_part)
			in_part = (size_t)b;
	}
	for (int d = 0; d < w->task->n_dimsets; d++) {
		int64_t b = arena_bytes(w, d, true, in_part, err);
		if (b < 0)
			return (int)b;
		if ((size_t)b > slot)
			slot = (size_t)b;
	}
	slot = (slot + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	for (int side = 0; side < 2; side++) {
		struct pool *p = &w->pool[side];
		p->slot_bytes = slot;
		p->in_bytes = in_part;
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
		q.ro_stride = slot;
		q.ro_bytes = in_part;
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
int wk_set_make(struct worker *w, struct tensor_set *s, int dimset,
		uint64_t seed, const int *dist_index, bool fill, bool shared,
		struct kf_err *err)
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
	if (shared)
		outputs_from(&end, w->pool[0].in_bytes);
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
		struct kf_fill f = {seed, (uint32_t)i, d->kind, {0, 0}, 0};
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
		wk_set_release(w, s);
	else
		s->ready = true;
	return rc;
}

int wk_poison_outputs(struct worker *w, struct tensor *outs, struct kf_err *err)
{
	for (int j = 0; j < w->task->n_outputs; j++) {
		int rc = w->ops->poison(w->ctx, outs[j].ptr,
					outs[j].spec->dtype, outs[j].n, err);
		if (rc)
			return rc;
	}
	return 0;
}
