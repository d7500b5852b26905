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

struct tensor {
	const struct kf_tensor_spec *spec;
	void *ptr;
	size_t bytes;
	int64_t n;
	int64_t shape[KF_MAX_NDIM];
};

/* The tensors of one call: inputs and outputs for candidate and reference,
 * in separate buffers so that neither sees the other's memory. */
struct tensor_set {
	struct tensor in_c[KF_MAX_TENSORS], in_r[KF_MAX_TENSORS];
	struct tensor out_c[KF_MAX_TENSORS], out_r[KF_MAX_TENSORS];
	DLTensor dl_in_c[KF_MAX_TENSORS], dl_in_r[KF_MAX_TENSORS];
	DLTensor dl_out_c[KF_MAX_TENSORS], dl_out_r[KF_MAX_TENSORS];
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
	struct tensor_set timing;
	int pairs_done; /* alternates the order within a pair */
	bool faulted;	/* the device is lost: report and exit */
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
	char *s = kf_xasprintf("%s (%d)", name ? name : "cudaError",
			       w->cuda_error);
	cJSON_AddStringToObject(m, key, s);
	free(s);
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

/* Where tensor k (inputs first, then outputs) starts in an arena: each on
 * a 4 KiB boundary plus k times 17 cache lines, so that no two tensors
 * alias modulo 4 KiB in the same way. */
static size_t arena_offset(size_t *cursor, int k, size_t bytes)
{
	size_t at = ((*cursor + 4095) & ~(size_t)4095) + (size_t)k * 17 * 64;
	*cursor = at + bytes;
	return at;
}

static void set_release(struct worker *w, struct tensor_set *s)
{
	w->ops->free(w->ctx, s->arena_c);
	w->ops->free(w->ctx, s->arena_r);
	memset(s, 0, sizeof(*s));
}

/* Allocates and fills a tensor set for one dimension set and seed. */
static int set_make(struct worker *w, struct tensor_set *s, int dimset,
		    uint64_t seed, const int *dist_index, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	size_t off_in[KF_MAX_TENSORS], off_out[KF_MAX_TENSORS], end = 0;
	int rc = 0;
	memset(s, 0, sizeof(*s));
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
	for (int i = 0; i < t->n_inputs && !rc; i++) {
		const struct kf_tensor_spec *sp = &t->inputs[i];
		const struct kf_dist *d =
			&sp->dists[dist_index ? dist_index[i] % sp->n_dists
					      : 0];
		struct kf_fill f = {seed, (uint32_t)i, d->kind, {0, 0}};
		kf_dist_params(t, d, dimset, f.p);
		rc = w->ops->fill(w->ctx, s->in_c[i].ptr, sp->dtype,
				  s->in_c[i].n, &f, err);
		if (!rc)
			rc = w->ops->copy(w->ctx, s->in_r[i].ptr,
					  s->in_c[i].ptr, s->in_c[i].bytes,
					  err);
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

/* One call of fn on (in, out) with the outputs poisoned first. */
static int call(struct worker *w, kf_entry_fn fn, DLTensor *in, DLTensor *out,
		struct tensor *outs, bool flush, struct kf_sample *smp,
		struct kf_err *err)
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
	int rc = set_make(w, &s, dimset, seed, dist_index, &err);
	if (rc)
		return reply_error(w, "error", NULL, err.msg);

	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "trial");
	cJSON_AddNumberToObject(m, "index", kf_json_num(req, "index", 0));
	struct kf_sample smp;
	int c_rc = 0;
	rc = call(w, w->ref, s.dl_in_r, s.dl_out_r, s.out_r, false, &smp,
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
	rc = call(w, w->cand, s.dl_in_c, s.dl_out_c, s.out_c, false, &smp,
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
	if (c_rc)
		goto done;

	cJSON *outs = cJSON_AddArrayToObject(m, "outputs");
	uint64_t first[KF_MAX_TENSORS];
	for (int j = 0; j < t->n_outputs; j++) {
		struct kf_cmp c;
		uint64_t ref_sum;
		rc = w->ops->compare(w->ctx, s.out_c[j].ptr, s.out_r[j].ptr,
				     t->outputs[j].dtype, s.out_c[j].n,
				     t->tol[t->outputs[j].dtype], &c, &err);
		if (!rc)
			rc = w->ops->checksum(w->ctx, s.out_c[j].ptr,
					      s.out_c[j].bytes, &first[j],
					      &err);
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
	rc = call(w, w->cand, s.dl_in_c, s.dl_out_c, s.out_c, false, &smp,
		  &err);
	if (rc)
		goto engine_error;
	c_rc = smp.rc;
	cJSON_AddNumberToObject(m, "cand_rc_2", c_rc);
	if (w->cuda_error) {
		add_cuda_error(w, m, "cand_cuda_error");
		goto done;
	}
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
			rc = w->ops->compare(w->ctx, s.out_c[j].ptr,
					     s.out_r[j].ptr,
					     t->outputs[j].dtype, s.out_c[j].n,
					     t->tol[t->outputs[j].dtype], &c,
					     &err);
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

static int do_time(struct worker *w, const cJSON *req)
{
	const struct kf_task *t = w->task;
	struct kf_err err = KF_ERR_INIT;
	struct tensor_set *s = &w->timing;
	int rc = 0;
	if (!s->ready) {
		rc = set_make(w, s, 0, parse_u64(req, "seed"), NULL, &err);
		if (rc)
			return reply_error(w, "error", NULL, err.msg);
	}
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
	int nonzero = 0, cuda_errors = 0;
	for (int k = -warmup; k < pairs; k++) {
		/* Alternate which goes first, so that neither always runs
		 * right after the other's flush. */
		bool cand_first = ((w->pairs_done + (k < 0 ? 0 : k)) & 1) == 0;
		for (int side = 0; side < 2; side++) {
			bool is_cand = (side == 0) == cand_first;
			struct kf_sample smp;
			rc = is_cand ? call(w, w->cand, s->dl_in_c,
					    s->dl_out_c, s->out_c, true, &smp,
					    &err)
				     : call(w, w->ref, s->dl_in_r, s->dl_out_r,
					    s->out_r, true, &smp, &err);
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
					cstreams,
					cJSON_CreateNumber(smp.streams));
			}
		}
	}
	cJSON_AddNumberToObject(m, "cand_cuda_errors", cuda_errors);
	w->pairs_done += pairs;
	cJSON_AddNumberToObject(m, "cand_rc_nonzero", nonzero);
	/* The last timed call of each must still agree, and the inputs must
	 * still be what they were. */
	int64_t mism = 0, unwr = 0;
	for (int j = 0; j < t->n_outputs; j++) {
		struct kf_cmp c;
		rc = w->ops->compare(w->ctx, s->out_c[j].ptr, s->out_r[j].ptr,
				     t->outputs[j].dtype, s->out_c[j].n,
				     t->tol[t->outputs[j].dtype], &c, &err);
		if (rc)
			goto engine_error;
		mism += c.mismatches;
		unwr += c.unwritten;
	}
	bool intact = true;
	for (int i = 0; i < t->n_inputs; i++) {
		uint64_t sum;
		rc = w->ops->checksum(w->ctx, s->in_c[i].ptr, s->in_c[i].bytes,
				      &sum, &err);
		if (rc)
			goto engine_error;
		intact = intact && sum == s->in_sum[i];
	}
	cJSON *chk = cJSON_AddObjectToObject(m, "check");
	cJSON_AddNumberToObject(chk, "mismatches", (double)mism);
	cJSON_AddNumberToObject(chk, "unwritten", (double)unwr);
	cJSON_AddBoolToObject(chk, "inputs_intact", intact);
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
	struct tensor_set *s = &w->timing;
	double min_s = kf_json_num(req, "seconds", 0.5);
	double mj0, mj1;
	int rc = 0;
	if (!w->ops->energy_mj || !s->ready)
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
		return kf_err_set(err, KF_ENOENT, "cannot load: %s",
				  dlerror());
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
	if (open_entry(cand, "kf_entry", &w->cand_so, &fn, &err))
		return reply_error(w, "load_error", "candidate", err.msg);
	w->cand = (kf_entry_fn)fn;
	if (w->ops->device_type == kDLCUDA) {
		/* dlsym through the candidate's handle also searches the
		 * libraries it depends on, the CUDA runtime among them. */
		*(void **)&w->rt_last_error = dlsym(w->cand_so,
						   "cudaGetLastError");
		*(void **)&w->rt_error_name = dlsym(w->cand_so,
						   "cudaGetErrorName");
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "loaded");
	cJSON_AddItemToObject(m, "device", w->ops->describe(w->ctx));
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
			rc = reply_error(&w, "error", NULL, "request has no op");
		else if (!strcmp(op, "load"))
			rc = do_load(&w, req);
		else if (!strcmp(op, "peaks"))
			rc = do_peaks(&w, req);
		else if (!w.cand && (!strcmp(op, "trial") ||
				     !strcmp(op, "time")))
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
		set_release(&w, &w.timing);
		w.ops->fini(w.ctx);
	}
	kf_task_free(w.task);
	return code;
}
