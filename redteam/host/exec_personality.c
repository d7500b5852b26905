/* Makes executable memory without ever asking for PROT_EXEC: with
 * personality(2)'s READ_IMPLIES_EXEC every readable mapping made after it
 * is executable, so a plain read-write page holding machine code can be
 * called. The runner's filter kills personality(2) with that flag:
 * rejected/sandbox. */
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static const unsigned char ret0[] = {0x31, 0xc0, 0xc3}; /* xor eax; ret */
	int was = personality(0xffffffff);
	if (was == -1 || personality((unsigned long)was | READ_IMPLIES_EXEC) == -1)
		return 1;
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
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
	return 0;
}
