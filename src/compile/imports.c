/*
 * imports.c: the symbols a compiled candidate imports (undefined dynamic
 * symbols of its shared object), read from the ELF file itself, for the
 * link-time policy of the judge.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/compile.h>


static int bad_elf(struct kf_err *err, const char *path, const char *why)
{
	return kf_err_set(err, KF_EINVAL, "%s: not a usable ELF object: %s",
			  path, why);
}

/* True when [off, off + n) lies inside a file of size bytes. */
static bool inside(uint64_t off, uint64_t n, size_t bytes)
{
	return off <= bytes && n <= bytes - off;
}

int kf_compile_imports(const char *so_path, char ***out, int *n_out,
		       struct kf_err *err)
{
	char *buf = NULL;
	size_t bytes = 0;
	char **names = NULL;
	int n = 0, rc;
	*out = NULL;
	*n_out = 0;
	rc = kf_file_read(so_path, KF_COMPILE_FILE_CAP, &buf, &bytes, err);
	if (rc)
		return rc;
	const Elf64_Ehdr *eh = (const void *)buf;
	if (bytes < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64) {
		rc = bad_elf(err, so_path, "not a 64-bit ELF file");
		goto out;
	}
	if (eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !inside(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr),
		    bytes)) {
		rc = bad_elf(err, so_path, "bad section table");
		goto out;
	}
	const Elf64_Shdr *sh = (const void *)(buf + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		if (sh[i].sh_link >= eh->e_shnum ||
		    !inside(sh[i].sh_offset, sh[i].sh_size, bytes) ||
		    sh[i].sh_entsize != sizeof(Elf64_Sym)) {
			rc = bad_elf(err, so_path, "bad .dynsym");
			goto out;
		}
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		if (!inside(strs->sh_offset, strs->sh_size, bytes)) {
			rc = bad_elf(err, so_path, "bad .dynstr");
			goto out;
		}
		const char *str = buf + strs->sh_offset;
		const Elf64_Sym *sym = (const void *)(buf + sh[i].sh_offset);
		size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
		for (size_t k = 1; k < count; k++) {
			if (sym[k].st_shndx != SHN_UNDEF ||
			    sym[k].st_name >= strs->sh_size)
				continue;
			const char *name = str + sym[k].st_name;
			size_t len =
			    strnlen(name, strs->sh_size - sym[k].st_name);
			if (!len || len == strs->sh_size - sym[k].st_name)
				continue; /* empty or unterminated */
			names = kf_xrealloc(names,
					    sizeof(char *) * (size_t)(n + 1));
			names[n++] = kf_xstrdup(name);
		}
	}
	*out = names;
	*n_out = n;
	names = NULL;
out:
	if (names) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	free(buf);
	return rc;
}
