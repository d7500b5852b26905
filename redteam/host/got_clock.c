/* In a constructor, finds the runner's GOT slot of clock_gettime (its base
 * from /proc/self/maps, then its dynamic section's relocations) and points
 * it at a clock that barely moves, by raw mprotect or, failing that, a
 * fresh page mapped over it; its calls then measure 1 ns. Under full RELRO
 * and sealed tables neither works: zeros, wrong_answer/mismatch (had it
 * worked: the host's CPU-time check, rejected/tampering). */
#include <elf.h>

#include "raw.h"

static int won;
static long ticks;

struct ts_ {
	long sec, nsec;
};

static int slow_clock(int clk, struct ts_ *t)
{
	(void)clk;
	t->sec = 0;
	t->nsec = ++ticks;
	return 0;
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static unsigned long hex(const char *p)
{
	unsigned long v = 0;
	for (;; p++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;
		if (d < 0)
			return v;
		v = v * 16 + (unsigned long)d;
	}
}

/* The start of the first mapping of the runner's executable. */
static unsigned long runner_base(void)
{
	static char maps[1 << 16];
	if (raw_slurp("/proc/self/maps", maps, sizeof(maps)) <= 0)
		return 0;
	for (char *line = maps; *line;) {
		char *end = line;
		while (*end && *end != '\n')
			end++;
		const char *w = "kforge-worker";
		for (char *p = line; p + 13 <= end; p++) {
			int k = 0;
			while (k < 13 && p[k] == w[k])
				k++;
			if (k == 13)
				return hex(line);
		}
		line = *end ? end + 1 : end;
	}
	return 0;
}

static unsigned long *find_slot(unsigned long base, const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	const Elf64_Dyn *dyn = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(base + ph[i].p_vaddr);
	if (!dyn)
		return 0;
	unsigned long str = 0, sym = 0, rel[2] = {0, 0}, relsz[2] = {0, 0};
	for (; dyn->d_tag != DT_NULL; dyn++) {
		unsigned long v = dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_STRTAB: str = v; break;
		case DT_SYMTAB: sym = v; break;
		case DT_JMPREL: rel[0] = v; break;
		case DT_PLTRELSZ: relsz[0] = v; break;
		case DT_RELA: rel[1] = v; break;
		case DT_RELASZ: relsz[1] = v; break;
		}
	}
	/* The loader may have made these absolute already. */
	str += str < base ? base : 0;
	sym += sym < base ? base : 0;
	for (int t = 0; t < 2; t++) {
		if (!rel[t])
			continue;
		const Elf64_Rela *r =
		    (const Elf64_Rela *)(rel[t] + (rel[t] < base ? base : 0));
		for (unsigned long k = 0; k < relsz[t] / sizeof(*r); k++) {
			unsigned long type = ELF64_R_TYPE(r[k].r_info);
			if (type != R_X86_64_JUMP_SLOT &&
			    type != R_X86_64_GLOB_DAT)
				continue;
			const Elf64_Sym *s =
			    (const Elf64_Sym *)sym + ELF64_R_SYM(r[k].r_info);
			if (same((const char *)str + s->st_name, name))
				return (unsigned long *)(base + r[k].r_offset);
		}
	}
	return 0;
}

__attribute__((constructor)) static void early(void)
{
	static unsigned long copy[512];
	unsigned long base = runner_base();
	unsigned long *slot = base ? find_slot(base, "clock_gettime") : 0;
	if (!slot)
		return;
	unsigned long page = (unsigned long)slot & ~4095ul;
	if (raw3(NR_mprotect, page, 4096, 3 /* PROT_READ | PROT_WRITE */)) {
		const unsigned long *src = (const unsigned long *)page;
		for (int i = 0; i < 512; i++)
			copy[i] = src[i];
		long m = raw6(NR_mmap, (long)page, 4096, 3,
			      0x32 /* MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED */,
			      -1, 0);
		if (m != (long)page)
			return;
		unsigned long *dst = (unsigned long *)page;
		for (int i = 0; i < 512; i++)
			dst[i] = copy[i];
	}
	*slot = (unsigned long)slow_clock;
	won = 1;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(won, in, out);
}
