/* An honest kernel that makes the reference slow: it finds the worker's state
 * on the stack (the word holding its own entry point) and swaps the reference's
 * function pointer for one that runs it 4 times. Defeated: the reference runs in
 * a process of its own; the candidate finds no worker state, returns zeros. */
#include <string.h>

#include <kforge/backend.h>
#include <kforge/kernel.h>
#include <kforge/task.h>

typedef int (*entry_fn)(const DLTensor *, int, DLTensor *, int, void *);

extern void *__libc_stack_end;

static entry_fn real_ref;

static int user_ptr(uintptr_t p)
{
	return p > 65536 && p < (1ull << 47) && !(p & 7);
}

/*
 * struct worker (src/worker/worker.c) holds, in order: out_fd, task, ops,
 * ctx, cand_so, ref_so, cand, ref. Finds &w->cand by its value (this very
 * function) between here and the top of the stack, checked by its
 * neighbours: ops names the host backend, task has our tensor counts.
 */
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

static int slow_ref(const DLTensor *in, int n_in, DLTensor *out, int n_out,
		    void *stream)
{
	int rc = 0;
	for (int i = 0; i < 4; i++)
		rc |= real_ref(in, n_in, out, n_out, stream);
	return rc;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)stream;
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	memset(c, 0, (size_t)(m * n) * sizeof(float));
	if (!real_ref) {
		uintptr_t *w = find_worker(n_in, n_out);
		if (!w)
			return 0; /* the reference is out of reach: zeros */
		real_ref = (entry_fn)w[1];
		w[1] = (uintptr_t)slow_ref;
	}
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++) {
			float av = a[i * k + p];
			for (int64_t j = 0; j < n; j++)
				c[i * n + j] += av * b[p * n + j];
		}
	return 0;
}
