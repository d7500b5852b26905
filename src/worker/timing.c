/*
 * timing.c: timed pairs under kforge's protocol (interleaved, fresh
 * inputs, every timed output compared), KernelBench's protocol, and
 * energy per call.
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

/* The timing sets: two of them, whose buffers the pairs alternate between,
 * and the base inputs that each pair's inputs are rotated from. */
static int timing_ready(struct worker *w, uint64_t seed, struct kf_err *err)
{
	if (w->base.ready)
		return 0;
	w->timing_seed = seed;
	int rc = wk_set_make(w, &w->base, 0, seed, NULL, true, false, err);
	if (!rc)
		rc =
		    wk_set_make(w, &w->timing[0], 0, 0, NULL, false, true, err);
	if (!rc)
		rc =
		    wk_set_make(w, &w->timing[1], 0, 0, NULL, false, true, err);
	return rc;
}

/* The base inputs of dist entry d (the same bytes whenever drawn again),
 * with their fresh counts where they are known. */
static int base_draw(struct worker *w, int d, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	w->base_dist = d;
	w->fresh_set = w->fresh_all_set;
	for (int i = 0; i < t->n_inputs; i++) {
		if (w->fresh_all_set) {
			w->fresh[i] = w->fresh_by_dist[d][i];
			w->fresh_bites[i] = w->bites_by_dist[d][i];
		}
		const struct kf_tensor_spec *sp = &t->inputs[i];
		const struct kf_dist *dd = &sp->dists[d % sp->n_dists];
		struct kf_fill f = {w->timing_seed + (uint64_t)d,
				    (uint32_t)i,
				    dd->kind,
				    {0, 0},
				    0};
		kf_dist_params(t, dd, 0, f.p);
		int rc = w->ops->fill(w->ctx, w->base.in_c[i].ptr, sp->dtype,
				      w->base.in_c[i].n, &f, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int fresh_calibrate(struct worker *w, struct kf_err *err);

/*
 * Each timing request (a batch of pairs) draws its base inputs from the
 * next of the inputs' distributions in turn (batch b: entry b % len of each
 * list), so that timed calls too see every input the task declares (heavy
 * tails, large values, ties...), not only the first kind. On a device the
 * fresh counts of every entry are set at the first request, before its
 * warm-up pairs: reference calls made for the calibration between the
 * timed pairs of a later batch moved the outside view of the reference's
 * next few calls by 0.25 ms there (an H200, 2026-12-02). On the host,
 * where each base costs a fill of the inputs on the CPU, each base is
 * calibrated when first drawn.
 */
static int timing_dists(struct worker *w, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	int most = 1;
	for (int i = 0; i < t->n_inputs; i++)
		if (t->inputs[i].n_dists > most)
			most = t->inputs[i].n_dists;
	int rc = 0;
	if (w->ops->device_type != kDLCPU && !w->fresh_all_set) {
		for (int d = 0; d < most && !rc; d++) {
			rc = base_draw(w, d, err);
			if (!rc)
				rc = fresh_calibrate(w, err);
			for (int i = 0; i < t->n_inputs && !rc; i++) {
				w->fresh_by_dist[d][i] = w->fresh[i];
				w->bites_by_dist[d][i] = w->fresh_bites[i];
			}
		}
		if (rc)
			return rc;
		w->fresh_all_set = true;
		w->base_dist = -1;
	}
	int d = w->batches++ % most;
	return d == w->base_dist ? 0 : base_draw(w, d, err);
}

/* Fresh values per input per pair to start from, and the factor by which
 * their number grows while a cached output would still pass. */
#define FRESH_VALUES 256
#define FRESH_GROWTH 16
/* A cached output must be off by this many tolerances to count as caught. */
#define FRESH_MARGIN 4
/* Pairs get this many times the fewest fresh values that were seen to
 * catch a cached output: those may have caught it only through the few
 * elements that sway an output on their own (the logits at a
 * cross-entropy's targets), which a cache can read exactly. */
#define FRESH_SAFETY 256

/*
 * The inputs of pair p: each base input rotated by a random number of
 * elements, with fresh[i] fresh values at random places (all of an input no
 * larger than that), into both sides of set s. No two pairs see the same
 * inputs, so an output cached by pointer, by content or by call count is
 * wrong; and since the fresh values are scattered, not one run, finding
 * them all means reading every element.
 */
static int rotate_inputs_n(struct worker *w, struct tensor_set *s, uint32_t p,
			   const int64_t *fresh, struct kf_err *err)
{
	int rc = 0;
	for (int i = 0; i < w->task->n_inputs && !rc; i++) {
		struct tensor *b = &w->base.in_c[i];
		const uint32_t ctr[4] = {p, (uint32_t)i, 0x726f74u, 0};
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
		const struct kf_tensor_spec *sp = &w->task->inputs[i];
		const struct kf_dist *d =
		    &sp->dists[w->base_dist % sp->n_dists];
		struct kf_fill f = {((uint64_t)r[3] << 32) | r[2],
				    (uint32_t)i,
				    d->kind,
				    {0, 0},
				    b->n <= fresh[i] ? 0 : fresh[i]};
		kf_dist_params(w->task, d, 0, f.p);
		if (!rc && fresh[i] > 0)
			rc =
			    w->ops->fill(w->ctx, dst, sp->dtype, b->n, &f, err);
		if (!rc)
			rc = w->ops->copy(w->ctx, s->in_r[i].ptr, dst, b->bytes,
					  err);
		if (!rc)
			rc = w->ops->checksum(w->ctx, dst, b->bytes,
					      &s->in_sum[i], err);
	}
	return rc;
}

/*
 * How many fresh values each input of this base needs per pair: the fewest
 * (from FRESH_VALUES up, by FRESH_GROWTH) for which the reference's outputs
 * differ, by FRESH_MARGIN tolerances, from its outputs on the same inputs
 * with none of that input's fresh values, i.e. from what a cache of earlier
 * outputs, rotated back, would answer for that input; times FRESH_SAFETY,
 * at most all of it. Each input on its own: fully fresh targets must not
 * vouch for the logits. Scattered values can average out (a mean over a
 * million inputs hardly moves when 256 of them change); an input whose
 * all-fresh values do not move the outputs that far gets all-fresh values
 * in every pair.
 */
static int fresh_calibrate(struct worker *w, struct kf_err *err)
{
	const struct kf_task *t = w->task;
	struct tensor_set *stale = &w->timing[0], *fresh = &w->timing[1];
	const uint32_t p = 0xfffffff0u; /* no pair's rotation */
	struct kf_sample smp;
	uint64_t wall;
	int rc = 0;
	for (int i = 0; i < t->n_inputs; i++) {
		w->fresh[i] = FRESH_VALUES;
		w->fresh_bites[i] = false;
	}
	for (int i = 0; i < t->n_inputs && !rc; i++) {
		int64_t n = w->base.in_c[i].n, keep = w->fresh[i];
		w->fresh[i] = 0;
		rc = rotate_inputs_n(w, stale, p, w->fresh, err);
		if (!rc)
			rc = wk_call(w, SIDE_REF, stale, true, false, &smp,
				     &wall, err);
		for (int64_t k = keep; !rc; k *= FRESH_GROWTH) {
			w->fresh[i] = k < n ? k : n;
			rc = rotate_inputs_n(w, fresh, p, w->fresh, err);
			if (!rc)
				rc = wk_call(w, SIDE_REF, fresh, true, false,
					     &smp, &wall, err);
			int64_t moved = 0;
			for (int j = 0; j < t->n_outputs && !rc; j++) {
				struct kf_cmp c;
				struct kf_tolerance tol =
				    t->tol[t->outputs[j].dtype];
				tol.atol *= FRESH_MARGIN;
				tol.rtol *= FRESH_MARGIN;
				rc = w->ops->compare(
				    w->ctx, stale->out_r[j].ptr,
				    fresh->out_r[j].ptr, t->outputs[j].dtype,
				    stale->out_r[j].n, tol, &c, err);
				moved += c.mismatches;
			}
			w->fresh_bites[i] = moved > 0;
			if (moved > 0 || k >= n) {
				w->fresh[i] =
				    k < n / FRESH_SAFETY ? k * FRESH_SAFETY : n;
				break;
			}
		}
	}
	w->fresh_set = !rc;
	return rc;
}

static int rotate_inputs(struct worker *w, struct tensor_set *s, int p,
			 struct kf_err *err)
{
	int rc = w->fresh_set ? 0 : fresh_calibrate(w, err);
	return rc ? rc : rotate_inputs_n(w, s, (uint32_t)p, w->fresh, err);
}

/* The rotation index of a check call drawn as the timed calls' inputs are,
 * from its seed: outside the indices of the timed pairs (from 0), of
 * KernelBench's calls (KB_PAIR_BASE on) and of the calibration. */
static uint32_t check_rotation(uint64_t seed)
{
	return 0x80000000u + (uint32_t)(seed % 0x7fff0000u);
}

/*
 * One check call of a timing request (its entry ck: "seed", and "like"
 * "timed" or a trial's "dists") on set s, which the next timed call would
 * use. Drawn as the timed calls' inputs are, its inputs are this base
 * rotated by an amount of their own with as many fresh values as a pair
 * gets: by their values (a value seen before, the base's statistics), by
 * their buffers and by their shapes a candidate cannot tell it from a
 * timed call. The frame says which it was ("like"), what its inputs were
 * drawn as ("dists", "trial") and under which seed; NULL with *rc set on
 * an engine error.
 */
static cJSON *check_call(struct worker *w, struct tensor_set *s,
			 const cJSON *ck, bool ref_before, int *rc,
			 struct kf_err *err)
{
	const struct kf_task *t = w->task;
	uint64_t seed = wk_parse_u64(ck, "seed");
	const char *like = kf_json_str(ck, "like");
	bool timed = like && !strcmp(like, "timed");
	int dist_index[KF_MAX_TENSORS] = {0};
	const cJSON *ds = cJSON_GetObjectItem(ck, "dists");
	for (int i = 0; i < t->n_inputs; i++) {
		if (timed)
			dist_index[i] = w->base_dist % t->inputs[i].n_dists;
		else if (i < cJSON_GetArraySize(ds))
			dist_index[i] = cJSON_GetArrayItem(ds, i)->valueint;
	}
	*rc = timed ? rotate_inputs(w, s, (int)check_rotation(seed), err) : 0;
	cJSON *f =
	    *rc ? NULL
		: wk_check_call(w, s, seed, timed ? NULL : dist_index,
				ref_before, rc, err);
	if (!f)
		return NULL;
	cJSON_AddStringToObject(f, "like", timed ? "timed" : "trial");
	if (!timed)
		cJSON_AddNumberToObject(f, "trial",
					kf_json_num(ck, "trial", 0));
	cJSON_AddStringToObject(
	    f, "seed", kf_json_str(ck, "seed") ? kf_json_str(ck, "seed") : "0");
	cJSON *d = cJSON_AddArrayToObject(f, "dists");
	for (int i = 0; i < t->n_inputs; i++)
		cJSON_AddItemToArray(d, cJSON_CreateNumber(dist_index[i]));
	return f;
}

/* A check call's frame that is the verdict already: wrong values, a
 * violation, or no outputs to compare. */
static bool check_failed(const cJSON *f)
{
	const cJSON *o;
	cJSON_ArrayForEach(o, cJSON_GetObjectItem(f, "outputs"))
	{
		if (kf_json_num(o, "mismatches", 0) +
			kf_json_num(o, "unwritten", 0) >
		    0)
			return true;
	}
	return !cJSON_GetObjectItem(f, "outputs") ||
	       cJSON_GetObjectItem(f, "violation");
}

/* Runs the request's check calls placed before call at of the batch
 * (warm-ups counted from 0) on set s, their frames into cfr with "at" and
 * key (the next timed pair's index, or the next call's), idx; ref_before:
 * the next pair calls the reference first (check_call). True when one's
 * frame is the verdict already; *rc set (false) on an engine error. */
static bool checks_at(struct worker *w, struct tensor_set *s,
		      const cJSON *checks, int at, const char *key, int idx,
		      bool ref_before, cJSON *cfr, int *rc, struct kf_err *err)
{
	const cJSON *ck;
	cJSON_ArrayForEach(ck, checks)
	{
		if ((int)kf_json_num(ck, "at", -1) != at)
			continue;
		cJSON *f = check_call(w, s, ck, ref_before, rc, err);
		if (!f)
			return false;
		wk_cand_idle_check(w);
		cJSON_AddNumberToObject(f, "at", at);
		cJSON_AddNumberToObject(f, key, idx);
		cJSON_AddItemToArray(cfr, f);
		if (check_failed(f))
			return true;
	}
	return false;
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

int wk_do_time(struct worker *w, const cJSON *req)
{
	const struct kf_task *t = w->task;
	struct kf_err err = KF_ERR_INIT;
	int rc = timing_ready(w, wk_parse_u64(req, "seed"), &err);
	if (!rc)
		rc = timing_dists(w, &err);
	if (rc)
		return wk_reply_engine_error(w, rc, &err);
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
	/* The supervisor's check calls: where among this batch's calls
	 * (warm-ups counted from 0) each goes, what its inputs are drawn
	 * like, and its seed. Untimed: none of their figures enters the
	 * samples. */
	const cJSON *checks = cJSON_GetObjectItem(req, "checks");
	cJSON *cfr = cJSON_AddArrayToObject(m, "checks");
	bool failed = false;
	for (int k = -warmup; k < pairs && !failed; k++) {
		/* Every pair, warm-up included, has inputs of its own. */
		int p = w->pairs_done;
		struct tensor_set *s = &w->timing[p & 1];
		/* A failed check is the verdict: no need to go on. */
		failed = checks_at(w, s, checks, k + warmup, "pair",
				   k < 0 ? -1 : p, (p & 2) != 0, cfr, &rc,
				   &err);
		if (rc)
			goto engine_error;
		if (failed)
			break;
		w->pairs_done++;
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
				rc = wk_call(w, is_cand ? SIDE_CAND : SIDE_REF,
					     s, true, false, &smp, &wall, &err);
			if (!rc && is_cand)
				rc = wk_reference_intact(w, s, &err);
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
		wk_cand_idle_check(w);
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
	cJSON *fv = cJSON_AddArrayToObject(m, "fresh_values");
	cJSON *fm = cJSON_AddArrayToObject(m, "fresh_moves_outputs");
	for (int i = 0; i < t->n_inputs; i++) {
		int64_t n = w->base.in_c[i].n;
		cJSON_AddItemToArray(
		    fv, cJSON_CreateNumber(
			    (double)(w->fresh[i] < n ? w->fresh[i] : n)));
		cJSON_AddItemToArray(fm, cJSON_CreateBool(w->fresh_bites[i]));
	}
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
	wk_add_violation(w, m);
	return wk_reply(w, m);
engine_error:
	cJSON_Delete(m);
	return wk_reply_engine_error(w, rc, &err);
}

/* The rotation index of KernelBench-protocol call k (warm-ups from 0):
 * outside the timed pairs' indices, the same for both sides. */
#define KB_PAIR_BASE 0x40000000u

/*
 * KernelBench's timing, for one side: 3 synchronised warm-up calls, then
 * 101 calls each after a cache flush, timed by events on the side's stream
 * only (no device trace), the first dropped. kforge's additions, which
 * KernelBench does not make: every call, warm-ups included, has inputs of
 * its own (rotated and with fresh values, as the timed pairs; the same
 * sequence for both sides), so that a cache of the last input's output is
 * wrong; and on the candidate's side every call's outputs are compared with
 * the reference's on the same inputs (the reference called after it,
 * untimed) and its inputs checked, so that a call that skips its work is
 * caught whichever call it is.
 */
int wk_do_time_kb(struct worker *w, const cJSON *req)
{
	const struct kf_task *t = w->task;
	struct kf_err err = KF_ERR_INIT;
	int rc = timing_ready(w, wk_parse_u64(req, "seed"), &err);
	if (!rc && w->base_dist < 0)
		rc = base_draw(w, 0, &err);
	if (rc)
		return wk_reply_engine_error(w, rc, &err);
	struct tensor_set *s = &w->timing[0];
	const char *side_name = kf_json_str(req, "side");
	int side =
	    side_name && !strcmp(side_name, "reference") ? SIDE_REF : SIDE_CAND;
	int warmup = (int)kf_json_num(req, "warmup", 3);
	int calls = (int)kf_json_num(req, "calls", 101);
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "ev", "samples_kb");
	cJSON_AddStringToObject(m, "side", side_name ? side_name : "candidate");
	cJSON *ns = cJSON_AddArrayToObject(m, "ns");
	int nonzero = 0, cuda_errors = 0, bad_call = -1;
	int64_t mism = 0, unwr = 0;
	bool intact = true, failed = false;
	timed_l1_reset(w);
	/* The candidate's side carries the supervisor's check calls, drawn as
	 * these calls' inputs are, at places among them (warm-ups counted
	 * from 0). */
	const cJSON *checks =
	    side == SIDE_CAND ? cJSON_GetObjectItem(req, "checks") : NULL;
	cJSON *cfr =
	    side == SIDE_CAND ? cJSON_AddArrayToObject(m, "checks") : NULL;
	for (int k = -warmup; k < calls && !w->violation_check[0]; k++) {
		struct kf_sample smp;
		uint64_t wall;
		failed = checks_at(w, s, checks, k + warmup, "call", k + warmup,
				   false, cfr, &rc, &err);
		if (rc || failed)
			break;
		rc = rotate_inputs(w, s, (int)(KB_PAIR_BASE + (k + warmup)),
				   &err);
		if (!rc)
			rc = wk_call(w, side, s, k >= 0, false, &smp, &wall,
				     &err);
		if (rc)
			break;
		nonzero += smp.rc != 0;
		cuda_errors += w->cuda_error != 0;
		if (k >= 1) /* the first timed call is dropped */
			cJSON_AddItemToArray(ns,
					     cJSON_CreateNumber(smp.event_ns));
		if (side != SIDE_CAND)
			continue;
		struct kf_sample rs;
		uint64_t rwall;
		wk_cand_idle_check(w);
		rc = wk_reference_intact(w, s, &err);
		if (!rc)
			rc = wk_call(w, SIDE_REF, s, false, false, &rs, &rwall,
				     &err);
		int64_t before = mism + unwr;
		if (!rc)
			rc = check_pair(w, s, k + warmup, &mism, &unwr, &err);
		for (int i = 0; i < t->n_inputs && !rc; i++) {
			uint64_t a;
			rc = w->ops->checksum(w->ctx, s->in_c[i].ptr,
					      s->in_c[i].bytes, &a, &err);
			intact = intact && a == s->in_sum[i];
		}
		if (rc)
			break;
		if (mism + unwr > before || !intact || nonzero || cuda_errors) {
			bad_call = k + warmup;
			break; /* the verdict is in */
		}
	}
	if (rc) {
		cJSON_Delete(m);
		return wk_reply_engine_error(w, rc, &err);
	}
	cJSON_AddNumberToObject(m, "rc_nonzero", nonzero);
	cJSON_AddNumberToObject(m, "cuda_errors", cuda_errors);
	if (side == SIDE_CAND) {
		cJSON *chk = cJSON_AddObjectToObject(m, "check");
		cJSON_AddNumberToObject(chk, "mismatches", (double)mism);
		cJSON_AddNumberToObject(chk, "unwritten", (double)unwr);
		cJSON_AddNumberToObject(chk, "first_bad_call", bad_call);
		cJSON_AddNumberToObject(chk, "calls_checked",
					bad_call >= 0 ? bad_call + 1
						      : warmup + calls);
		cJSON_AddBoolToObject(chk, "inputs_intact", intact);
		timed_l1_json(w, chk);
	}
	wk_add_violation(w, m);
	return wk_reply(w, m);
}

/* Joules per call: each side called back to back, without flushes, for
 * at least min_s seconds, against the device's energy counter. The worker
 * counts the calls itself. */
int wk_do_energy(struct worker *w, const cJSON *req)
{
	struct kf_err err = KF_ERR_INIT;
	struct tensor_set *s = &w->timing[0];
	double min_s = kf_json_num(req, "seconds", 0.5);
	double mj0, mj1;
	int rc = 0;
	if (!w->ops->energy_mj || !w->base.ready)
		return wk_reply_error(w, "error", NULL,
				      "energy: not available");
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
			rc = wk_call(w, is_cand ? SIDE_CAND : SIDE_REF, s,
				     false, true, &smp, &wall, &err);
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
		return wk_reply_engine_error(w, rc, &err);
	}
	return wk_reply(w, m);
}
