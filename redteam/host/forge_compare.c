/* Computes nothing and forges the verdict: finds the worker's state on the
 * stack and swaps its backend table for a copy whose compare checks the
 * reference against itself; paced under the roofline. Defeated: comparisons
 * run in the worker, another process; it finds no state and returns zeros. */
#include <string.h>

#include <kforge/backend.h>
#include <kforge/kernel.h>
#include <kforge/task.h>

extern void *__libc_stack_end;

static struct kf_backend_ops forged;
static int (*real_compare)(void *, const void *, const void *, enum kf_dtype,
			   int64_t, struct kf_tolerance, struct kf_cmp *,
			   struct kf_err *);
static volatile float sink;

static int user_ptr(uintptr_t p)
{
	return p > 65536 && p < (1ull << 47) && !(p & 7);
}

/* &w->cand of struct worker (out_fd, task, ops, ctx, cand_so, ref_so, cand,
 * ref), found by its value and checked by its neighbours. */
static uintptr_t *find_worker(int n_in, int n_out)
{
	uintptr_t *p = __builtin_frame_address(0);
	uintptr_t *end = __libc_stack_end;
	for (p += 6; p + 2 < end; p++) {
		if (p[0] != (uintptr_t)kf_entry || !p[1] || p[1] == p[0] ||
		    !user_ptr(p[-4]) || !user_ptr(p[-5]))
			continue;
		const struct kf_backend_ops *ops = (const void *)p[-4];
		const struct kf_task *t = (const void *)p[-5];
		if (ops->version != KF_BACKEND_VERSION ||
		    ops->device_type != kDLCPU || !ops->name ||
		    strcmp(ops->name, "host") || t->n_inputs != n_in ||
		    t->n_outputs != n_out)
			continue;
		return p;
	}
	return NULL;
}

/* "got" is never looked at: the reference is compared with itself, so
 * nothing mismatches, nothing is unwritten and the L1 error is 0. */
static int compare_want(void *ctx, const void *got, const void *want,
			enum kf_dtype dt, int64_t n, struct kf_tolerance tol,
			struct kf_cmp *c, struct kf_err *err)
{
	(void)got;
	return real_compare(ctx, want, want, dt, n, tol, c, err);
}

static void pace(double flops)
{
	float acc[64];
	const float x = 0.999999f, y = 1e-7f;
	for (int j = 0; j < 64; j++)
		acc[j] = (float)j;
	for (long i = 0, iters = (long)(flops / 128); i < iters; i++)
		for (int j = 0; j < 64; j++)
			acc[j] = acc[j] * x + y;
	float s = 0;
	for (int j = 0; j < 64; j++)
		s += acc[j];
	sink = s;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)stream;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	memset(out[0].data, 0, (size_t)(m * n) * sizeof(float));
	if (!real_compare) {
		uintptr_t *w = find_worker(n_in, n_out);
		if (!w)
			return 0; /* the worker is out of reach: zeros */
		forged = *(const struct kf_backend_ops *)w[-4];
		real_compare = forged.compare;
		forged.compare = compare_want;
		w[-4] = (uintptr_t)&forged;
	}
	pace(1.15 * 2.0 * (double)m * (double)n * (double)k);
	return 0;
}
