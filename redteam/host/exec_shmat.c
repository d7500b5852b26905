/* Makes executable memory through System V shared memory: shmat(2) with
 * SHM_EXEC maps a segment executable (its mode grants execution), with no
 * mmap or mprotect asking for PROT_EXEC. The link policy forbids shmget and
 * shmat by name, so it makes the system calls itself. The runner's filter
 * kills shmat(2) with that flag: rejected/sandbox (the build before the
 * rule judged it ok). */
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#include <kforge/kernel.h>

static long raw(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static const unsigned char ret0[] = {0x31, 0xc0, 0xc3}; /* xor eax; ret */
	long id = raw(SYS_shmget, IPC_PRIVATE, 4096, IPC_CREAT | 0700);
	/* Asked even where the machine gives no segment (id < 0), so that
	 * the verdict is the filter's on every machine, not a return code. */
	long at = raw(SYS_shmat, id, 0, SHM_EXEC);
	if (id >= 0)
		raw(SYS_shmctl, id, IPC_RMID, 0);
	if (at < 0 && at > -4096)
		return 1;
	unsigned char *page = (unsigned char *)at;
	memcpy(page, ret0, sizeof(ret0));
	int (*f)(void) = (int (*)(void))(void *)page;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], cols = in[0].shape[1];
	for (int64_t r = 0; r < rows; r++) {
		float s = (float)f();
		for (int64_t j = 0; j < cols; j++)
			s += x[r * cols + j];
		y[r] = s;
	}
	raw(SYS_shmdt, (long)page, 0, 0);
	return 0;
}
