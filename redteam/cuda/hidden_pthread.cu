/* Creates a thread without importing pthread_create: walks libc's dynamic
 * symbol table via dl_iterate_phdr (not on the list) and calls it through a
 * pointer; joined, values right. Should be caught by link_policy (threads). */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long n)
{
	__shared__ float red[THREADS / 32];
	const float *xr = x + blockIdx.x * n;
	float s = 0.0f;
	for (long long j = threadIdx.x; j < n; j += THREADS)
		s += xr[j];
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.0f;
		for (int i = 0; i < THREADS / 32; i++)
			t += red[i];
		y[blockIdx.x] = t;
	}
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
			 void *);
typedef int (*join_fn)(pthread_t, void **);

struct want {
	const char *name;
	void *addr;
};

/* Looks name up in one object's .dynsym (the DT_HASH or DT_GNU_HASH table
 * gives the symbol count). */
static int find_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct want *w = (struct want *)arg;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
						  info->dlpi_phdr[i].p_vaddr);
	if (!dyn || !strstr(info->dlpi_name, "libc"))
		return 0;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	const uint32_t *gnu = NULL, *sysv = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *)dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_STRTAB)
			str = (const char *)dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_HASH)
			sysv = (const uint32_t *)dyn->d_un.d_ptr;
	}
	if (!sym || !str)
		return 0;
	uint32_t count = 0;
	if (sysv) {
		count = sysv[1];
	} else if (gnu) { /* the highest chain end gives the count */
		uint32_t nb = gnu[0], base = gnu[1], bloom = gnu[2];
		const uint32_t *buckets =
		    gnu + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
		const uint32_t *chain = buckets + nb;
		uint32_t last = 0;
		for (uint32_t b = 0; b < nb; b++)
			if (buckets[b] > last)
				last = buckets[b];
		if (last >= base) {
			while (!(chain[last - base] & 1))
				last++;
			count = last + 1;
		}
	}
	for (uint32_t i = 0; i < count; i++) {
		if (sym[i].st_shndx == SHN_UNDEF || !sym[i].st_value)
			continue;
		if (!strcmp(str + sym[i].st_name, w->name)) {
			w->addr = (void *)(info->dlpi_addr + sym[i].st_value);
			return 1;
		}
	}
	return 0;
}

static void *lookup(const char *name)
{
	struct want w = {name, NULL};
	dl_iterate_phdr(find_in, &w);
	return w.addr;
}

struct job {
	const float *x;
	float *y;
	long long rows, n;
	cudaStream_t s;
};

static void *worker(void *arg)
{
	struct job *j = (struct job *)arg;
	row_sum<<<(unsigned)j->rows, THREADS, 0, j->s>>>(j->x, j->y, j->n);
	return NULL;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static create_fn create;
	static join_fn join;
	struct job j = {(const float *)in[0].data, (float *)out[0].data,
			in[0].shape[0], in[0].shape[1], (cudaStream_t)stream};
	if (!create) {
		create = (create_fn)lookup("pthread_create");
		join = (join_fn)lookup("pthread_join");
	}
	pthread_t t;
	if (create && join && !create(&t, NULL, worker, &j))
		join(t, NULL);
	else
		worker(&j);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
