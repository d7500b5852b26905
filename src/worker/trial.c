/*
 * trial.c: one checking trial: both sides on the same fresh inputs of one
 * dim set, their outputs compared, everything else they touched checked.
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
	char hex[2][24];
	snprintf(hex[0], sizeof(hex[0]), "0x%llx",
		 (unsigned long long)c->worst_got_bits);
	snprintf(hex[1], sizeof(hex[1]), "0x%llx",
		 (unsigned long long)c->worst_want_bits);
	cJSON_AddStringToObject(o, "worst_got_bits", hex[0]);
	cJSON_AddStringToObject(o, "worst_want_bits", hex[1]);
	cJSON_AddNumberToObject(o, "l1_err", c->l1_err);
	cJSON_AddNumberToObject(o, "l1_want", c->l1_want);
	cJSON_AddNumberToObject(o, "toward_zero", (double)c->toward_zero);
	cJSON_AddNumberToObject(o, "away_from_zero", (double)c->away_from_zero);
	cJSON_AddNumberToObject(o, "want_mean", c->want_mean);
	cJSON_AddNumberToObject(o, "want_std", c->want_std);
	cJSON_AddNumberToObject(o, "want_min", c->want_min);
	cJSON_AddNumberToObject(o, "want_max", c->want_max);
	return o;
}

/*
 * The reference's float noise on set s's inputs, for the judge's
 * measured-noise precision rule (judge.c, kf_judge_precision): its outputs
 * again on the same inputs with every finite nonzero float32 element moved
 * one unit in the last place (the backend's nudge), and per float32 output
 * the L1 distance of those outputs from its first ones into noise[j], at
 * least the outputs' own rounding (-1 elsewhere). A task's reference is its
 * ground truth, computed in float64 and rounded once: its distance from a
 * float64 run is its last rounding, which tells nothing of the problem;
 * how far float32 rounding of its operands moves it does (cancellation: a
 * layernorm of rows of mean 30 moves thousands of times more than a
 * softmax). Everything stays in the backend's memory: the copies kept, the
 * nudge and the distance (the backend's compare) run on the device, where
 * host round trips of a 268 MB input cost about a second a call. Where
 * that memory cannot be had the noise is not measured (-1: the judge
 * holds the output to its dtype's bound). Its inputs and outputs are put
 * back as they were; nothing of this reaches the candidate's side.
 */
static int ref_noise(struct worker *w, struct tensor_set *s, uint64_t seed,
		     double *noise, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	const struct kf_backend_ops *ops = w->ops;
	void *keep_in[KF_MAX_TENSORS] = {0}, *keep_out[KF_MAX_TENSORS] = {0};
	bool any_in = false, any_out = false, have = true;
	int rc = 0;
	for (int j = 0; j < t->n_outputs; j++) {
		noise[j] = -1;
		any_out = any_out || t->outputs[j].dtype == KF_F32;
	}
	for (int i = 0; i < t->n_inputs; i++)
		any_in = any_in || (t->inputs[i].dtype == KF_F32 &&
				    s->in_r[i].n > 0);
	if (!any_in || !any_out)
		return 0;
	for (int i = 0; i < t->n_inputs && have; i++) {
		struct kf_err e2 = KF_ERR_INIT;
		if (t->inputs[i].dtype == KF_F32 && s->in_r[i].n > 0)
			have = !ops->alloc(w->ctx, s->in_r[i].bytes,
					   &keep_in[i], &e2);
	}
	for (int j = 0; j < t->n_outputs && have; j++) {
		struct kf_err e2 = KF_ERR_INIT;
		have = !ops->alloc(w->ctx, s->out_r[j].bytes, &keep_out[j],
				   &e2);
	}
	for (int i = 0; i < t->n_inputs && have && !rc; i++)
		if (keep_in[i]) {
			rc = ops->copy(w->ctx, keep_in[i], s->in_r[i].ptr,
				       s->in_r[i].bytes, err);
			if (!rc)
				rc = ops->nudge(w->ctx, s->in_r[i].ptr,
						s->in_r[i].n, seed, i, err);
		}
	for (int j = 0; j < t->n_outputs && have && !rc; j++)
		rc = ops->copy(w->ctx, keep_out[j], s->out_r[j].ptr,
			       s->out_r[j].bytes, err);
	struct kf_sample smp = {0};
	uint64_t wall;
	if (have && !rc)
		rc = wk_call(w, SIDE_REF, s, false, false, &smp, &wall, err);
	for (int j = 0; j < t->n_outputs && have && !rc; j++) {
		if (t->outputs[j].dtype != KF_F32 || smp.rc || w->cuda_error)
			continue;
		/* The backend's compare sums |new - first| and |first| over
		 * the elements finite on both sides. */
		struct kf_cmp c;
		struct kf_tolerance exact = {0, 0};
		rc = ops->compare(w->ctx, s->out_r[j].ptr, keep_out[j], KF_F32,
				  s->out_r[j].n, exact, &c, err);
		/* At least the outputs' own rounding to float32: half a unit
		 * in the last place, at most 2^-24 of each value. */
		if (!rc)
			noise[j] = fmax(c.l1_err, c.l1_want * 0x1p-24);
	}
	for (int i = 0; i < t->n_inputs; i++)
		if (keep_in[i]) {
			int r2 = rc || !have
				     ? 0
				     : ops->copy(w->ctx, s->in_r[i].ptr,
						 keep_in[i], s->in_r[i].bytes,
						 err);
			rc = rc ? rc : r2;
		}
	for (int j = 0; j < t->n_outputs; j++)
		if (keep_out[j]) {
			int r2 = rc || !have
				     ? 0
				     : ops->copy(w->ctx, s->out_r[j].ptr,
						 keep_out[j], s->out_r[j].bytes,
						 err);
			rc = rc ? rc : r2;
		}
	/* The copies back are done before their memory goes. */
	if (!rc && have)
		rc = ops->sync(w->ctx, err);
	for (int i = 0; i < t->n_inputs; i++)
		if (keep_in[i])
			ops->free(w->ctx, keep_in[i]);
	for (int j = 0; j < t->n_outputs; j++)
		if (keep_out[j])
			ops->free(w->ctx, keep_out[j]);
	return rc;
}

static void add_noise(cJSON *o, double noise)
{
	if (noise >= 0)
		cJSON_AddNumberToObject(o, "l1_noise64", noise);
}

int wk_do_trial(struct worker *w, const cJSON *req)
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
		return wk_reply_error(w, "error", NULL, "trial: bad dimset");
	uint64_t seed = wk_parse_u64(req, "seed");
	int rc = wk_set_make(w, &s, dimset, seed, dist_index, true, true, &err);
	if (rc)
		return wk_reply_error(w, "error", NULL, err.msg);

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
	rc = wk_call(w, SIDE_CAND, &s, true, false, &smp, &wall, &err);
	if (rc)
		goto engine_error;
	c_rc = smp.rc;
	cJSON_AddNumberToObject(m, "cand_rc", c_rc);
	cJSON_AddNumberToObject(m, "cand_ns", smp.ns);
	if (w->cuda_error) {
		wk_add_cuda_error(w, m, "cand_cuda_error");
		goto done;
	}
	if (wk_add_violation(w, m) || c_rc)
		goto done;
	rc = wk_reference_intact(w, &s, &err);
	if (rc)
		goto engine_error;
	if (wk_add_violation(w, m))
		goto done;
	rc = wk_call(w, SIDE_REF, &s, false, false, &smp, &wall, &err);
	if (rc)
		goto engine_error;
	cJSON_AddNumberToObject(m, "ref_rc", smp.rc);
	cJSON_AddNumberToObject(m, "ref_ns", smp.ns);
	if (smp.rc || w->cuda_error) {
		if (w->cuda_error)
			wk_add_cuda_error(w, m, "ref_cuda_error");
		goto done;
	}

	double noise[KF_MAX_TENSORS];
	rc = ref_noise(w, &s, seed, noise, &err);
	if (rc)
		goto engine_error;
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
		add_noise(o, noise[j]);
		wk_add_hex(o, "checksum_ref", ref_sum);
		wk_add_hex(o, "checksum_1", first[j]);
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
		wk_add_hex(o, "before", s.in_sum[i]);
		wk_add_hex(o, "after", after);
		cJSON_AddItemToArray(ins, o);
	}
	/* The determinism check: a second call on the same inputs. */
	rc = wk_call(w, SIDE_CAND, &s, true, false, &smp, &wall, &err);
	if (rc)
		goto engine_error;
	c_rc = smp.rc;
	cJSON_AddNumberToObject(m, "cand_rc_2", c_rc);
	if (w->cuda_error) {
		wk_add_cuda_error(w, m, "cand_cuda_error");
		goto done;
	}
	if (wk_add_violation(w, m))
		goto done;
	for (int j = 0; j < t->n_outputs && !c_rc; j++) {
		uint64_t second;
		cJSON *o = cJSON_GetArrayItem(outs, j);
		rc = w->ops->checksum(w->ctx, s.out_c[j].ptr, s.out_c[j].bytes,
				      &second, &err);
		if (rc)
			goto engine_error;
		wk_add_hex(o, "checksum_2", second);
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
	wk_set_release(w, &s);
	return wk_reply(w, m);
engine_error:
	wk_set_release(w, &s);
	cJSON_Delete(m);
	return wk_reply_engine_error(w, rc, &err);
}

/*
 * A check call among the timed calls (wk_do_time, wk_do_time_kb) on the
 * timing set s that the next timed call would use (the same buffers,
 * shapes and flush as a timed call): with dist_index, inputs drawn under
 * a seed the supervisor chose from the distributions a trial had (dist
 * index per input) at the timing dims; without it (NULL), the inputs the
 * caller wrote into s, drawn as a timed call's are. The candidate is
 * called, then the reference, and their outputs compared as in a trial,
 * with the reference's float noise on these inputs measured (seeded by
 * seed). The frame has a trial's form, with one call of the candidate
 * (checksum_2 is checksum_1; the trials hold determinism); NULL with *rc
 * set on an engine error.
 */
cJSON *wk_check_call(struct worker *w, struct tensor_set *s, uint64_t seed,
		     const int *dist_index, bool ref_before, int *rc,
		     struct kf_err *err)
{
	const struct kf_task *t = w->task;
	struct kf_sample smp;
	uint64_t wall;
	*rc = 0;
	for (int i = 0; dist_index && i < t->n_inputs && !*rc; i++) {
		const struct kf_tensor_spec *sp = &t->inputs[i];
		const struct kf_dist *d = &sp->dists[dist_index[i] % sp->n_dists];
		struct kf_fill f = {seed, (uint32_t)i, d->kind, {0, 0}, 0};
		kf_dist_params(t, d, 0, f.p);
		*rc = w->ops->fill(w->ctx, s->in_c[i].ptr, sp->dtype,
				   s->in_c[i].n, &f, err);
		if (!*rc)
			*rc = w->ops->copy(w->ctx, s->in_r[i].ptr,
					   s->in_c[i].ptr, s->in_c[i].bytes,
					   err);
		if (!*rc)
			*rc = w->ops->checksum(w->ctx, s->in_c[i].ptr,
					       s->in_c[i].bytes, &s->in_sum[i],
					       err);
	}
	if (*rc)
		return NULL;
	cJSON *m = cJSON_CreateObject();
	/* Before a reference-first pair, the reference first here too: the
	 * candidate's time since its last call is no shorter than before a
	 * timed call (the sixteenth round's clock tell); its outputs are made
	 * again after the candidate's call. */
	if (ref_before) {
		*rc = wk_call(w, SIDE_REF, s, true, false, &smp, &wall, err);
		if (*rc)
			goto engine_error;
	}
	cJSON_AddBoolToObject(m, "ref_before", ref_before);
	*rc = wk_call(w, SIDE_CAND, s, true, false, &smp, &wall, err);
	if (*rc)
		goto engine_error;
	cJSON_AddNumberToObject(m, "cand_rc", smp.rc);
	cJSON_AddNumberToObject(m, "cand_ns", smp.ns);
	if (w->cuda_error) {
		wk_add_cuda_error(w, m, "cand_cuda_error");
		return m;
	}
	if (wk_add_violation(w, m) || smp.rc)
		return m;
	*rc = wk_reference_intact(w, s, err);
	if (*rc)
		goto engine_error;
	if (wk_add_violation(w, m))
		return m;
	*rc = wk_call(w, SIDE_REF, s, false, false, &smp, &wall, err);
	if (*rc)
		goto engine_error;
	cJSON_AddNumberToObject(m, "ref_rc", smp.rc);
	if (smp.rc || w->cuda_error) {
		if (w->cuda_error)
			wk_add_cuda_error(w, m, "ref_cuda_error");
		return m;
	}
	double noise[KF_MAX_TENSORS];
	*rc = ref_noise(w, s, seed, noise, err);
	if (*rc)
		goto engine_error;
	cJSON_AddNumberToObject(m, "cand_rc_2", 0);
	cJSON *outs = cJSON_AddArrayToObject(m, "outputs");
	for (int j = 0; j < t->n_outputs; j++) {
		struct kf_cmp c;
		uint64_t sum, ref_sum;
		*rc = w->ops->compare(w->ctx, s->out_c[j].ptr, s->out_r[j].ptr,
				      t->outputs[j].dtype, s->out_c[j].n,
				      t->tol[t->outputs[j].dtype], &c, err);
		if (!*rc)
			*rc = w->ops->checksum(w->ctx, s->out_c[j].ptr,
					       s->out_c[j].bytes, &sum, err);
		if (!*rc)
			*rc = w->ops->checksum(w->ctx, s->out_r[j].ptr,
					       s->out_r[j].bytes, &ref_sum, err);
		if (*rc)
			goto engine_error;
		cJSON *o = cmp_json(&c);
		cJSON_AddStringToObject(o, "name", t->outputs[j].name);
		add_noise(o, noise[j]);
		wk_add_hex(o, "checksum_ref", ref_sum);
		wk_add_hex(o, "checksum_1", sum);
		wk_add_hex(o, "checksum_2", sum);
		cJSON_AddItemToArray(outs, o);
	}
	cJSON *ins = cJSON_AddArrayToObject(m, "inputs");
	for (int i = 0; i < t->n_inputs; i++) {
		uint64_t after;
		*rc = w->ops->checksum(w->ctx, s->in_c[i].ptr, s->in_c[i].bytes,
				       &after, err);
		if (*rc)
			goto engine_error;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->inputs[i].name);
		wk_add_hex(o, "before", s->in_sum[i]);
		wk_add_hex(o, "after", after);
		cJSON_AddItemToArray(ins, o);
	}
	return m;
engine_error:
	cJSON_Delete(m);
	return NULL;
}
