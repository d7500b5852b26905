/* Raw system calls (the `syscall` instruction, no import for the link policy
 * to see) and the row sum the confinement cases compute when their attack
 * works; copied by an attacker who writes no libc calls. */
#ifndef REDTEAM_RAW_H
#define REDTEAM_RAW_H

#include <stdint.h>

#include <kforge/kernel.h>

static inline long raw6(long nr, long a, long b, long c, long d, long e,
			long f)
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
#define raw3(nr, a, b, c) raw6(nr, (long)(a), (long)(b), (long)(c), 0, 0, 0)

enum { NR_read = 0, NR_close = 3, NR_mmap = 9, NR_mprotect = 10,
       NR_rt_sigaction = 13, NR_getpid = 39, NR_kill = 62,
       NR_ptrace = 101, NR_getppid = 110, NR_getdents64 = 217,
       NR_timer_create = 222, NR_openat = 257 };
#define AT_FDCWD_ (-100)

/* open(path, O_RDONLY) by raw syscall: a descriptor or a negative errno. */
static inline long raw_open(const char *path)
{
	return raw3(NR_openat, AT_FDCWD_, path, 0);
}

/* Reads up to cap - 1 bytes of path into buf (NUL-terminated); the count
 * or a negative errno. */
static inline long raw_slurp(const char *path, char *buf, long cap)
{
	long fd = raw_open(path), n = 0, r;
	if (fd < 0)
		return fd;
	while (n < cap - 1 && (r = raw3(NR_read, fd, buf + n, cap - 1 - n)) > 0)
		n += r;
	raw3(NR_close, fd, 0, 0);
	buf[n] = 0;
	return n;
}

static inline void fmt_u(char *p, unsigned long v)
{
	char t[24];
	int n = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = t[--n];
	*p = 0;
}

/* "/proc/<pid>/<leaf>" into buf. */
static inline void proc_path(char *buf, long pid, const char *leaf)
{
	const char *pre = "/proc/";
	while (*pre)
		*buf++ = *pre++;
	fmt_u(buf, (unsigned long)pid);
	while (*buf)
		buf++;
	*buf++ = '/';
	while (*leaf)
		*buf++ = *leaf++;
	*buf = 0;
}

/* The row sum when won is set; zeros (a wrong answer) when the attack
 * found nothing. */
static inline int row_sum_if(int won, const DLTensor *in, DLTensor *out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; won && j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}

#endif
