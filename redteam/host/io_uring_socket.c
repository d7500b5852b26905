/* Opens a socket without socket(2): an io_uring IORING_OP_SOCKET request, which
 * the kernel runs on the ring's behalf where seccomp never sees it (setup,
 * mmap, enter by raw syscall). Should be caught by sandbox (io_uring_setup). */
#include <linux/io_uring.h>
#include <string.h>

#include <kforge/kernel.h>

static long raw6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* A socket fd obtained through an io_uring, or a negative value. */
static long ring_socket(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	long ring = raw6(425 /* io_uring_setup */, 4, (long)&p, 0, 0, 0, 0);
	if (ring < 0)
		return ring;
	size_t sq_bytes = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_bytes =
		p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (cq_bytes > sq_bytes)
		sq_bytes = cq_bytes; /* one mapping for both (SINGLE_MMAP) */
	char *sq = (char *)raw6(9 /* mmap */, 0, (long)sq_bytes, 3, 1, ring,
				(long)IORING_OFF_SQ_RING);
	struct io_uring_sqe *sqes = (void *)raw6(
		9, 0, (long)(p.sq_entries * sizeof(struct io_uring_sqe)), 3, 1,
		ring, (long)IORING_OFF_SQES);
	if ((unsigned long)sq > -4096ul || (unsigned long)sqes > -4096ul)
		return -1;
	char *cq = sq;
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
	unsigned *array = (unsigned *)(sq + p.sq_off.array);
	unsigned idx = *tail & *(unsigned *)(sq + p.sq_off.ring_mask);
	memset(&sqes[idx], 0, sizeof(sqes[idx]));
	sqes[idx].opcode = IORING_OP_SOCKET;
	sqes[idx].fd = 2;  /* AF_INET */
	sqes[idx].off = 2; /* SOCK_DGRAM */
	array[idx] = idx;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (raw6(426 /* io_uring_enter */, ring, 1, 1,
		 IORING_ENTER_GETEVENTS, 0, 0) < 0)
		return -1;
	unsigned *head = (unsigned *)(cq + p.cq_off.head);
	struct io_uring_cqe *cqes = (void *)(cq + p.cq_off.cqes);
	unsigned h = *head & *(unsigned *)(cq + p.cq_off.ring_mask);
	long res = cqes[h].res;
	__atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
	return res;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static long sock = -1;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (sock < 0)
		sock = ring_socket();
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s + (float)(sock & 0);
	}
	return 0;
}
