/*
 * worker.c: the protocol inside the sandboxed worker. It owns every buffer
 * the candidate touches, makes inputs from seeds, runs the reference on
 * pristine copies, poisons outputs before each candidate call, and reports
 * raw measurements (comparisons, checksums, timing samples) to the
 * supervisor, which alone judges them.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/backend.h>
#include <kforge/task.h>
#include <kforge/worker.h>

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
	 * aliasing between an input and an output). */
	void *arena_c, *arena_r;
	bool ready;
};

struct worker {
	int out_fd;
	struct kf_task *task;
	const struct kf_backend_ops *ops;
	void *ctx;
	void *cand_so, *ref_so;
	kf_entry_fn cand, ref;
	/* Timing: two sets whose buffers alternate between pairs, and the
	 * inputs they are rotated from. */
	struct tensor_set timing[2], base;
	uint64_t timing_seed;
	int pairs_done;	  /* alternates the order within a pair */
	char state0[512]; /* global state at load (backend->state) */
	/* What the candidate's last call broke beyond its outputs: guards
	 * ("out_of_bounds") or global state ("global_state"); "" if none. */
	char violation_check[32];
	char violation[1200];
	bool faulted; /* the device is lost: report and exit */
	/* The CUDA runtime's error query, found through the candidate's
	 * object (NULL on the host backend). */
	int (*rt_last_error)(void);
	const char *(*rt_error_name)(int);
	int cuda_error;
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
	const char *name =
	    w->rt_error_name ? w->rt_error_name(w->cuda_error) : NULL;
	char *s =
	    kf_xasprintf("%s (%d)", name ? name : "cudaError", w->cuda_error);
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

/* Bytes of guard before and after every tensor: a candidate that writes
 * outside its buffers changes them. */
#define GUARD_BYTES 256
#define GUARD_BYTE 0xcb

/* Where tensor k (inputs first, then outputs) starts in an arena: each on
 * a 4 KiB boundary plus k times 17 cache lines (so that no two tensors
 * alias modulo 4 KiB in the same way), with guards on both sides. */
static size_t arena_offset(size_t *cursor, int k, size_t bytes)
{
	size_t at = ((*cursor + GUARD_BYTES + 4095) & ~(size_t)4095) +
		    (size_t)k * 17 * 64;
	*cursor = at + bytes + GUARD_BYTES;
	return at;
}

/* Writes the guards around every tensor of a side. */
static int guards_set(struct worker *w, struct tensor *in, struct tensor *out,
		      struct kf_err *err)
{
	unsigned char g[GUARD_BYTES];
	int rc = 0;
	memset(g, GUARD_BYTE, sizeof(g));
	for (int k = 0; k < w->task->n_inputs + w->task->n_outputs && !rc;
	     k++) {
		struct tensor *t = k < w->task->n_inputs
				       ? &in[k]
				       : &out[k - w->task->n_inputs];
		rc = w->ops->write(w->ctx, (char *)t->ptr - GUARD_BYTES, g,
				   GUARD_BYTES, err);
		if (!rc)
			rc = w->ops->write(w->ctx, (char *)t->ptr + t->bytes, g,
					   GUARD_BYTES, err);
	}
	return rc;
}

/* The first guard of the candidate's side that changed, as "output 'y'
 * (after)", or NULL in *where when all are intact. */
static int guards_check(struct worker *w, struct tensor_set *s, char *where,
			size_t cap, struct kf_err *err)
{
	unsigned char g[GUARD_BYTES];
	where[0] = '\0';
	for (int k = 0; k < w->task->n_inputs + w->task->n_outputs; k++) {
		bool is_in = k < w->task->n_inputs;
		struct tensor *t =
		    is_in ? &s->in_c[k] : &s->out_c[k - w->task->n_inputs];
		for (int side = 0; side < 2; side++) {
			char *at = side ? (char *)t->ptr + t->bytes
					: (char *)t->ptr - GUARD_BYTES;
			int rc = w->ops->read(w->ctx, g, at, GUARD_BYTES, err);
			if (rc)
				return rc;
			for (int i = 0; i < GUARD_BYTES; i++) {
				if (g[i] == GUARD_BYTE)
					continue;
				snprintf(where, cap, "%s '%s' (%s it)",
					 is_in ? "input" : "output",
					 t->spec->name,
					 side ? "after" : "before");
				return 0;
			}
		}
	}
	return 0;
}

static void set_release(struct worker *w, struct tensor_set *s)
{
	w->ops->free(w->ctx, s->arena_c);
	w->ops->free(w->ctx, s->arena_r);
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

/* Allocates a tensor set for one dimension set and, with fill, fills its
 * inputs from seed (both sides alike). */
static int set_make(struct worker *w, struct tensor_set *s, int dimset,
		    uint64_t seed, const int *dist_index, bool fill,
		    struct kf_err *err)
{
	const struct kf_task *t = w->task;
	size_t off_in[KF_MAX_TENSORS], off_out[KF_MAX_TENSORS], end = 0;
	int rc = 0;
	memset(s, 0, sizeof(*s));
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
	if (!rc)
		rc = w->ops->alloc(w->ctx, end, &s->arena_c, err);
	if (!rc)
		rc = w->ops->alloc(w->ctx, end, &s->arena_r, err);
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
	rc = guards_set(w, s->in_c, s->out_c, err);
	if (!rc)
		rc = guards_set(w, s->in_r, s->out_r, err);
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

/* After a candidate call: its guards and the global state must be as
 * they were. The first violation is kept in w->violation*. */
static int check_side_effects(struct worker *w, struct tensor_set *s,
			      struct kf_err *err)
{
	char where[128];
	int rc = guards_check(w, s, where, sizeof(where), err);
	if (rc)
		return rc;
	if (where[0]) {
		snprintf(w->violation_check, sizeof(w->violation_check),
			 "out_of_bounds");
		snprintf(w->violation, sizeof(w->violation),
			 "the candidate wrote outside its buffers: the guard "
			 "bytes %s changed",
			 where);
		return 0;
	}
	if (w->ops->state) {
		char now[sizeof(w->state0)];
		w->ops->state(w->ctx, now, sizeof(now));
		if (strcmp(now, w->state0)) {
			snprintf(w->violation_check, sizeof(w->violation_check),
				 "global_state");
			/* A description that does not fit is cut. */
			if (snprintf(w->violation, sizeof(w->violation),
				     "the candidate changed global state: %s, "
				     "was %s",
				     now, w->state0) < 0)
				w->violation[0] = '\0';
		}
	}
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
		if (sum != s->in_sum[i] && !w->violation_check[0]) {
			snprintf(w->violation_check, sizeof(w->violation_check),
				 "tampering");
			snprintf(w->violation, sizeof(w->violation),
				 "the reference's copy of input '%s' changed "
				 "during the candidate's call: the candidate "
				 "wrote to memory of the engine",
				 s->in_r[i].spec->name);
		}
	}
	return 0;
}

/* One call of fn on (in, out) of set with the outputs poisoned first. */
static int call(struct worker *w, kf_entry_fn fn, struct tensor_set *set,
		DLTensor *in, DLTensor *out, struct tensor *outs, bool flush,
		struct kf_sample *smp, struct kf_err *err)
{
	int rc = poison_outputs(w, outs, err);
	if (!rc)
		rc = w->ops->sync(w->ctx, err);
	if (!rc && w->rt_last_error)
		w->rt_last_error(); /* clear what an earlier call left */
	if (!rc)
		rc = w->ops->time_call(w->ctx, fn, in, w->task->n_inputs, out,
				       w->task->n_outputs, flush, smp, err);
	if (rc == KF_EFAULT)
		w->faulted = true;
	if (!rc && fn == w->cand && !w->violation_check[0])
		rc = check_side_effects(w, set, err);
	/* A launch that failed (bad configuration, too many resources) is
	 * recorded by the CUDA runtime the candidate linked. */
	w->cuda_error = 0;
	if (!rc && w->rt_last_error)
		w->cuda_error = w->rt_last_error();
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
	int rc = set_make(w, &s, dimset, seed, dist_index, true, &err);
	if (rc)
		return reply_error(w, "error", NULL, err.msg);

	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "trial");
	cJSON_AddNumberToObject(m, "index", kf_json_num(req, "index", 0));
	struct kf_sample smp;
	int c_rc = 0;
	/* The candidate runs before the reference: there is no reference
	 * output anywhere in the process to copy. */
	rc = call(w, w->cand, &s, s.dl_in_c, s.dl_out_c, s.out_c, false, &smp,
		  &err);
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
	rc = call(w, w->ref, &s, s.dl_in_r, s.dl_out_r, s.out_r, false, &smp,
		  &err);
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
	rc = call(w, w->cand, &s, s.dl_in_c, s.dl_out_c, s.out_c, false, &smp,
		  &err);
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
	int rc = set_make(w, &w->base, 0, seed, NULL, true, err);
	if (!rc)
		rc = set_make(w, &w->timing[0], 0, 0, NULL, false, err);
	if (!rc)
		rc = set_make(w, &w->timing[1], 0, 0, NULL, false, err);
	return rc;
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
		struct kf_fill f = {((uint64_t)r[3] << 32) | r[2],
				    (uint32_t)i,
				    sp->dists[0].kind,
				    {0, 0}};
		kf_dist_params(w->task, &sp->dists[0], 0, f.p);
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

/* After a timed pair: the candidate's outputs against the reference's on
 * the same inputs. */
static int check_pair(struct worker *w, struct tensor_set *s, int64_t *mism,
		      int64_t *unwr, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	for (int j = 0; j < t->n_outputs; j++) {
		struct kf_cmp c;
		int rc =
		    w->ops->compare(w->ctx, s->out_c[j].ptr, s->out_r[j].ptr,
				    t->outputs[j].dtype, s->out_c[j].n,
				    t->tol[t->outputs[j].dtype], &c, err);
		if (rc)
			return rc;
		*mism += c.mismatches;
		*unwr += c.unwritten;
	}
	return 0;
}

static int do_time(struct worker *w, const cJSON *req)
{
	const struct kf_task *t = w->task;
	struct kf_err err = KF_ERR_INIT;
	int rc = timing_ready(w, parse_u64(req, "seed"), &err);
	if (rc)
		return reply_engine_error(w, rc, &err);
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
			if (is_cand && !cand_first)
				rc = stash_reference(w, s, true, &err);
			if (!rc)
				rc = is_cand ? call(w, w->cand, s, s->dl_in_c,
						    s->dl_out_c, s->out_c, true,
						    &smp, &err)
					     : call(w, w->ref, s, s->dl_in_r,
						    s->dl_out_r, s->out_r, true,
						    &smp, &err);
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
		int64_t before = mism + unwr;
		rc = check_pair(w, s, &mism, &unwr, &err);
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
	cJSON_AddNumberToObject(m, "cand_rc_nonzero", nonzero);
	cJSON_AddNumberToObject(m, "cand_cuda_errors", cuda_errors);
	cJSON *chk = cJSON_AddObjectToObject(m, "check");
	cJSON_AddNumberToObject(chk, "mismatches", (double)mism);
	cJSON_AddNumberToObject(chk, "unwritten", (double)unwr);
	cJSON_AddNumberToObject(chk, "first_bad_pair", bad_pair);
	cJSON_AddBoolToObject(chk, "inputs_intact", intact);
	add_violation(w, m);
	return reply(w, m);
engine_error:
	cJSON_Delete(m);
	return reply_engine_error(w, rc, &err);
}

/* Joules per call: each side called back to back, without flushes, for
 * at least min_s seconds, against the device's energy counter. */
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
		kf_entry_fn fn = is_cand ? w->cand : w->ref;
		DLTensor *in = is_cand ? s->dl_in_c : s->dl_in_r;
		DLTensor *out = is_cand ? s->dl_out_c : s->dl_out_r;
		long calls = 0;
		rc = w->ops->sync(w->ctx, &err);
		if (!rc)
			rc = w->ops->energy_mj(w->ctx, &mj0, &err);
		uint64_t t0 = kf_now_ns();
		while (!rc && (calls < 10 ||
			       (double)(kf_now_ns() - t0) < min_s * 1e9)) {
			fn(in, w->task->n_inputs, out, w->task->n_outputs,
			   w->ops->stream(w->ctx));
			calls++;
			if (calls % 16 == 0)
				rc = w->ops->sync(w->ctx, &err);
		}
		if (!rc)
			rc = w->ops->sync(w->ctx, &err);
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

static int do_load(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	const char *task = kf_json_str(req, "task");
	const char *backend = kf_json_str(req, "backend");
	const char *ref = kf_json_str(req, "reference");
	const char *cand = kf_json_str(req, "candidate");
	if (!task || !backend || !ref || !cand)
		return reply_error(w, "error", NULL, "load: missing field");
	if (kf_task_load(task, &w->task, &err))
		return reply_error(w, "load_error", "task", err.msg);
	kf_task_select_backend(w->task, backend);
	w->ops = kf_backend_find(backend);
	if (!w->ops)
		return reply_error(w, "load_error", "backend",
				   "unknown backend");
	if (w->ops->init(&w->ctx, &err))
		return reply_error(w, "load_error", "backend", err.msg);
	void *fn;
	if (open_entry(ref, "kf_entry", &w->ref_so, &fn, &err))
		return reply_error(w, "load_error", "reference", err.msg);
	w->ref = (kf_entry_fn)fn;
	/* The global state as the engine left it, before any candidate code
	 * (its constructors run when it is loaded). */
	if (w->ops->state)
		w->ops->state(w->ctx, w->state0, sizeof(w->state0));
	/* From here on candidate code can run: confine the process first. */
	if (kf_sandbox_enter(backend, &err))
		return reply_error(w, "load_error", "sandbox", err.msg);
	if (open_entry(cand, "kf_entry", &w->cand_so, &fn, &err))
		return reply_error(w, "load_error", "candidate", err.msg);
	w->cand = (kf_entry_fn)fn;
	if (w->ops->device_type == kDLCUDA) {
		/* dlsym through the candidate's handle also searches the
		 * libraries it depends on, the CUDA runtime among them. */
		*(void **)&w->rt_last_error =
		    dlsym(w->cand_so, "cudaGetLastError");
		*(void **)&w->rt_error_name =
		    dlsym(w->cand_so, "cudaGetErrorName");
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "loaded");
	cJSON_AddItemToObject(m, "device", w->ops->describe(w->ctx));
	if (kf_sandbox_loaded(backend, &err)) {
		cJSON_Delete(m);
		return reply_error(w, "load_error", "sandbox", err.msg);
	}
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
	struct worker w;
	memset(&w, 0, sizeof(w));
	w.out_fd = out_fd;
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
		else if (!w.cand &&
			 (!strcmp(op, "trial") || !strcmp(op, "time")))
			rc = reply_error(&w, "error", NULL, "nothing loaded");
		else if (!strcmp(op, "trial"))
			rc = do_trial(&w, req);
		else if (!strcmp(op, "time"))
			rc = do_time(&w, req);
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
	if (w.ops && w.ctx && !w.faulted) {
		set_release(&w, &w.timing[0]);
		set_release(&w, &w.timing[1]);
		set_release(&w, &w.base);
		w.ops->fini(w.ctx);
	}
	kf_task_free(w.task);
	return code;
}
