/*
 * compile.c: turns a kernel source into a shared object with cc (host) or
 * nvcc (cuda), through a content-addressed cache in kf_cache_dir()/compile.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/compile.h>

/* Bump when the key's inputs or the command lines change meaning. */
#define KEY_FORMAT "kforge-compile-3"
#define SOURCE_CAP (16u << 20)	 /* bytes of a source we accept */
#define KERNEL_H_CAP (1u << 20)	 /* bytes of kernel.h */
#define VERSION_CAP 8192	 /* bytes of `--version` output read */
#define VERSION_TIMEOUT_MS 10000 /* for `--version` */
#define DEFAULT_TIMEOUT_MS 120000
#define DEFAULT_ARCH "sm_90"
/* Room kept below KF_COMPILE_LOG_CAP for the notes added to a log. */
#define LOG_NOTE_ROOM 256

/* A command line: argv is NULL-terminated and owns its strings. The source,
 * output and include arguments are left out of the key (their contents are
 * in it), so the same bytes hit the cache from any path. */
struct command {
	char **argv;
	int argc, alloc;
	int src_i, out_i, inc_i, dlpack_i; /* -1 when absent */
	int obj_i;			   /* a link step's input object */
};
#define COMMAND_INIT                                                           \
	{                                                                      \
		NULL, 0, 0, -1, -1, -1, -1, -1                                 \
	}

/*
 * How a .cu becomes a shared object. NVCC_SHARED: one `nvcc -shared` (the
 * compile, a device link and a g++ link). SPLIT (the default): `nvcc -c`,
 * then the host compiler links the object itself: no device link (whole-
 * program compilation needs none; the object registers its own fatbinary)
 * and no nvcc driver around the link. The link line is nvcc's own, less
 * the device link's object and -lcudadevrt (relocatable device code only):
 * the launch stubs need libstdc++ (static guards, the personality).
 */
enum cuda_mode { NVCC_SHARED, SPLIT };

struct build {
	struct command cc;   /* the compiler */
	struct command link; /* SPLIT: the link line */
	bool split;
};

static void cmd_add(struct command *c, char *owned)
{
	if (c->argc + 2 > c->alloc) {
		c->alloc = c->alloc ? c->alloc * 2 : 32;
		c->argv =
		    kf_xrealloc(c->argv, (size_t)c->alloc * sizeof(char *));
	}
	c->argv[c->argc++] = owned;
	c->argv[c->argc] = NULL;
}

static void cmd_release(struct command *c)
{
	for (int i = 0; i < c->argc; i++)
		free(c->argv[i]);
	free(c->argv);
	c->argv = NULL;
	c->argc = c->alloc = 0;
}

static int is_host(const char *backend)
{
	return !backend || strcmp(backend, "host") == 0;
}

/*
 * The compiler of a backend. host: $KFORGE_CC (a path or a name on PATH;
 * tests point it at a stand-in), else cc on PATH. cuda: $KFORGE_NVCC, else
 * /usr/local/cuda/bin/nvcc, else nvcc on PATH. NULL with err set when
 * missing; caller frees.
 */
static char *find_compiler(const char *backend, struct kf_err *err)
{
	const char *env = is_host(backend) ? "KFORGE_CC" : "KFORGE_NVCC";
	const char *name = is_host(backend) ? "cc" : "nvcc";
	const char *set = getenv(env);
	char *path = NULL;
	if (set && *set) {
		path = kf_which(set);
		if (!path)
			kf_err_set(err, KF_ENOENT,
				   "%s not found: %s=%s is not an executable",
				   name, env, set);
		return path;
	}
	if (!is_host(backend) && kf_is_executable("/usr/local/cuda/bin/nvcc"))
		return kf_xstrdup("/usr/local/cuda/bin/nvcc");
	path = kf_which(name);
	if (!path)
		kf_err_set(err, KF_ENOENT,
			   "%s not found on PATH (set %s to its path%s)", name,
			   env, is_host(backend) ? "" : " or install CUDA");
	return path;
}

/* A line of the output of `compiler --version`: the first for cc; for nvcc
 * the last that starts with "Build" or "Cuda compilation tools". NULL when
 * the compiler does not answer; caller frees. */
static char *version_line(const char *backend, const char *compiler)
{
	char *argv[] = {kf_xstrdup(compiler), kf_xstrdup("--version"), NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	char *line = NULL;
	int status = 0;
	if (kf_proc_run(argv, VERSION_TIMEOUT_MS, VERSION_CAP, &out, &status,
			NULL) != 0 ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		goto out;
	for (const char *s = kf_strbuf_str(&out); *s;) {
		size_t n = strcspn(s, "\r\n");
		int want =
		    is_host(backend)
			? n > 0
			: strncmp(s, "Build", 5) == 0 ||
			      strncmp(s, "Cuda compilation tools", 22) == 0;
		if (want && n < VERSION_CAP) {
			free(line);
			line = kf_xasprintf("%.*s", (int)n, s);
			if (is_host(backend))
				break;
		}
		s += n;
		s += strspn(s, "\r\n");
	}
out:
	kf_strbuf_release(&out);
	free(argv[0]);
	free(argv[1]);
	return line;
}

/*
 * The version line of a compiler, remembered by the identity of its binary
 * (device, inode, size, mtime and ctime: a replaced or rewritten binary
 * changes at least one), in this process and in
 * kf_cache_dir()/compile/toolchain/, so that a cache lookup spawns no
 * `--version`. NULL when the compiler does not answer; caller frees.
 */
#define TC_MEMO 8
static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held over the file's read and write: kf_file_write_atomic's temporary is
 * named by the process, so two threads must not write the same file. */
static pthread_mutex_t tc_file_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *ident; /* backend, path and stat fields */
	char *line;
} tc_memo[TC_MEMO];
static int tc_next;

static char *binary_identity(const char *backend, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return NULL;
	return kf_xasprintf("%s\n%s\n%llu:%llu:%lld:%lld.%09ld:%lld.%09ld",
			    backend, path, (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino,
			    (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			    st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
			    st.st_ctim.tv_nsec);
}

static char *toolchain_line(const char *backend, const char *compiler)
{
	char *ident = binary_identity(backend, compiler);
	if (!ident)
		return version_line(backend, compiler);
	char *line = NULL;
	pthread_mutex_lock(&tc_lock);
	for (int i = 0; i < TC_MEMO && !line; i++)
		if (tc_memo[i].ident && !strcmp(tc_memo[i].ident, ident))
			line = kf_xstrdup(tc_memo[i].line);
	pthread_mutex_unlock(&tc_lock);
	if (line) {
		free(ident);
		return line;
	}
	struct kf_sha256 sha;
	char hex[65];
	kf_sha256_init(&sha);
	kf_sha256_update(&sha, ident, strlen(ident));
	kf_sha256_final_hex(&sha, hex);
	char *dir = kf_path_join(kf_cache_dir(), "compile/toolchain");
	char *path = kf_xasprintf("%s/%s.txt", dir, hex);
	char *text = NULL;
	size_t n = 0;
	pthread_mutex_lock(&tc_file_lock);
	/* The file holds the identity, a NUL, then the line. */
	if (kf_file_read(path, VERSION_CAP * 2, &text, &n, NULL) == 0 &&
	    strlen(text) < n && !strcmp(text, ident))
		line = kf_xstrdup(text + strlen(text) + 1);
	free(text);
	if (!line) {
		line = version_line(backend, compiler);
		if (line && kf_mkdir_p(dir, NULL) == 0) {
			struct kf_strbuf sb = KF_STRBUF_INIT;
			kf_strbuf_add(&sb, ident, strlen(ident) + 1);
			kf_strbuf_addstr(&sb, line);
			kf_file_write_atomic(path, sb.buf, sb.len, NULL);
			kf_strbuf_release(&sb);
		}
	}
	pthread_mutex_unlock(&tc_file_lock);
	if (line) {
		pthread_mutex_lock(&tc_lock);
		free(tc_memo[tc_next].ident);
		free(tc_memo[tc_next].line);
		tc_memo[tc_next].ident = ident;
		tc_memo[tc_next].line = kf_xstrdup(line);
		tc_next = (tc_next + 1) % TC_MEMO;
		pthread_mutex_unlock(&tc_lock);
		ident = NULL;
	}
	free(ident);
	free(dir);
	free(path);
	return line;
}

char *kf_compile_toolchain(const char *backend)
{
	if (!is_host(backend) && strcmp(backend, "cuda") != 0)
		return NULL;
	char *compiler = find_compiler(backend, NULL);
	if (!compiler)
		return NULL;
	char *line = toolchain_line(backend, compiler);
	free(compiler);
	return line;
}

/*
 * What -march=native depends on: the identity and features of the CPU, from
 * the first processor of /proc/cpuinfo (x86 and Arm field names). Unlike the
 * rest of that block, these fields are the same on every core and over time.
 * Caller frees.
 */
static char *cpu_identity_read(void)
{
	static const char *const fields[] = {
	    "vendor_id",	"cpu family",  "model",
	    "model name",	"flags",       "CPU implementer",
	    "CPU architecture", "CPU variant", "CPU part",
	    "Features",
	};
	struct kf_strbuf sb = KF_STRBUF_INIT;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return kf_xstrdup("unknown");
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[0] == '\n' && sb.len)
			break; /* the end of the first processor's block */
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		size_t k = (size_t)(colon - line);
		while (k && (line[k - 1] == ' ' || line[k - 1] == '\t'))
			k--;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (strlen(fields[i]) == k &&
			    memcmp(line, fields[i], k) == 0)
				kf_strbuf_add(&sb, line, (size_t)n);
	}
	free(line);
	fclose(f);
	if (!sb.len)
		kf_strbuf_addstr(&sb, "unknown");
	return kf_strbuf_detach(&sb);
}

static char *cpu_ident;
static void cpu_identity_once(void)
{
	cpu_ident = cpu_identity_read();
}

/* The same, read once per process; caller frees. */
static char *cpu_identity(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, cpu_identity_once);
	return kf_xstrdup(cpu_ident);
}

static int has_kernel_h(const char *dir)
{
	char *p = kf_path_join(dir, "kforge/kernel.h");
	int yes = kf_file_exists(p);
	free(p);
	return yes;
}

/* The directory that holds kforge/kernel.h: given, else $KFORGE_INCLUDE,
 * else beside the executable (build/ or build/san/), else ./include. */
static int find_include_dir(const char *given, char **out, struct kf_err *err)
{
	const char *env = getenv("KFORGE_INCLUDE");
	if (given && *given) {
		*out = kf_xstrdup(given);
		return 0;
	}
	if (env && *env) {
		*out = kf_xstrdup(env);
		return 0;
	}
	const char *const rel[] = {"../include", "../../include"};
	for (size_t i = 0; i < 2; i++) {
		char *d = kf_path_join(kf_exe_dir(), rel[i]);
		if (has_kernel_h(d)) {
			*out = d;
			return 0;
		}
		free(d);
	}
	if (has_kernel_h("include")) {
		*out = kf_xstrdup("include");
		return 0;
	}
	return kf_err_set(err, KF_ENOENT,
			  "kforge/kernel.h not found beside %s or in "
			  "./include: set KFORGE_INCLUDE",
			  kf_exe_dir());
}

/* "sm_" then digits then at most one lower-case letter ("sm_90a"). */
static int valid_arch(const char *a)
{
	if (strncmp(a, "sm_", 3) != 0 || !(a[3] >= '0' && a[3] <= '9'))
		return 0;
	a += 3;
	while (*a >= '0' && *a <= '9')
		a++;
	if (*a >= 'a' && *a <= 'z')
		a++;
	return *a == '\0';
}

/* A library name as -l takes it; anything else is refused, so that a task
 * cannot pass options through its list of libraries. */
static int valid_library(const char *l)
{
	if (!*l || *l == '-')
		return 0;
	for (; *l; l++)
		if (!((*l >= 'a' && *l <= 'z') || (*l >= 'A' && *l <= 'Z') ||
		      (*l >= '0' && *l <= '9') || strchr("_.+-", *l)))
			return 0;
	return 1;
}

/* The cuda target: opts->arch or sm_90, raised to sm_90a for a source that
 * uses wgmma or asks for it, since those only build for sm_90a. */
static const char *cuda_arch(const char *arch, const char *src, size_t bytes)
{
	static const char marker[] = "kforge: sm_90a";
	if (!arch || strcmp(arch, "sm_90") == 0) {
		if (memmem(src, bytes, "wgmma", 5) ||
		    memmem(src, bytes, marker, sizeof(marker) - 1))
			return "sm_90a";
	}
	return arch ? arch : DEFAULT_ARCH;
}

/* The directory of libcudart.so beside nvcc, as nvcc itself finds it
 * (<bin>/../targets/<target>/lib), or NULL; caller frees. */
static char *cuda_lib_dir(const char *nvcc)
{
#if defined(__x86_64__)
	const char *target = "x86_64-linux";
#elif defined(__aarch64__)
	const char *target = "sbsa-linux";
#else
	const char *target = NULL;
#endif
	if (!target)
		return NULL;
	const char *slash = strrchr(nvcc, '/');
	if (!slash)
		return NULL;
	char *dir = kf_xasprintf("%.*s/../targets/%s/lib", (int)(slash - nvcc),
				 nvcc, target);
	char *probe = kf_path_join(dir, "libcudart.so");
	char *real = realpath(dir, NULL);
	int ok = real && kf_file_exists(probe);
	free(probe);
	free(dir);
	if (!ok) {
		free(real);
		return NULL;
	}
	return real;
}

/* SPLIT when $KFORGE_NVCC_LINK is not "nvcc", nothing changes nvcc's own
 * choice of host compiler or flags (NVCC_CCBIN, NVCC_PREPEND_FLAGS,
 * NVCC_APPEND_FLAGS), and gcc and nvcc's libcudart.so are found; the host
 * compiler (gcc, as nvcc's) and the library directory go to *cc, *lib. */
static enum cuda_mode cuda_mode(const char *nvcc, char **cc, char **lib)
{
	const char *mode = getenv("KFORGE_NVCC_LINK");
	*cc = *lib = NULL;
	if ((mode && !strcmp(mode, "nvcc")) || getenv("NVCC_CCBIN") ||
	    getenv("NVCC_PREPEND_FLAGS") || getenv("NVCC_APPEND_FLAGS"))
		return NVCC_SHARED;
	*cc = kf_which("gcc");
	*lib = *cc ? cuda_lib_dir(nvcc) : NULL;
	if (!*lib) {
		free(*cc);
		*cc = NULL;
		return NVCC_SHARED;
	}
	return SPLIT;
}

static void build_release(struct build *b)
{
	cmd_release(&b->cc);
	cmd_release(&b->link);
}

/* The link line of SPLIT (see enum cuda_mode). */
static void build_link(struct build *b, const char *cc, const char *lib,
		       const struct kf_compile_opts *opts)
{
	{
		struct command *l = &b->link;
		cmd_add(l, kf_xstrdup(cc));
		cmd_add(l, kf_xstrdup("-shared"));
		cmd_add(l, kf_xstrdup("-fPIC"));
		cmd_add(l, kf_xstrdup("-Wl,-z,relro,-z,now"));
		cmd_add(l, kf_xstrdup("-o"));
		l->out_i = l->argc;
		cmd_add(l, kf_xstrdup(""));
		l->obj_i = l->argc;
		cmd_add(l, kf_xstrdup(""));
		/* The directories of nvcc's link line, stubs included. */
		cmd_add(l, kf_xasprintf("-L%s/stubs", lib));
		cmd_add(l, kf_xasprintf("-L%s", lib));
		cmd_add(l, kf_xstrdup("-lcudart"));
		for (int i = 0; opts && i < opts->n_libraries; i++)
			cmd_add(l, kf_xasprintf("-l%s", opts->libraries[i]));
		cmd_add(l, kf_xstrdup("-lstdc++"));
		cmd_add(l, kf_xstrdup("-lm"));
	}
}

static int build_command(struct command *c, const char *backend,
			 const char *compiler, const char *source_path,
			 const char *include_dir, const char *arch,
			 const struct kf_compile_opts *opts, bool split,
			 struct kf_err *err)
{
	int n_libs = opts ? opts->n_libraries : 0;
	for (int i = 0; i < n_libs; i++)
		if (!opts->libraries[i] || !valid_library(opts->libraries[i]))
			return kf_err_set(
			    err, KF_EINVAL,
			    "library %d: \"%s\" is not a library "
			    "name",
			    i,
			    opts->libraries[i] ? opts->libraries[i] : "(null)");
	cmd_add(c, kf_xstrdup(compiler));
	if (is_host(backend)) {
		/* Full RELRO and BIND_NOW, as the runner's own binary. */
		const char *flags[] = {"-std=gnu11",	"-O3",
				       "-march=native", "-fPIC",
				       "-shared",	"-Wl,-z,relro,-z,now"};
		for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
			cmd_add(c, kf_xstrdup(flags[i]));
	} else {
		if (!valid_arch(arch))
			return kf_err_set(err, KF_EINVAL,
					  "arch \"%s\": expected sm_<digits> "
					  "with an optional letter",
					  arch);
		/* The shared CUDA runtime: candidate and reference then share
		 * one, and the worker can ask it for launch errors. */
		const char *flags[] = {"-O3",
				       "-std=c++17",
				       "-Xcompiler",
				       "-fPIC",
				       split ? "-c" : "-shared",
				       "-cudart",
				       "shared",
				       "-gencode"};
		for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
			cmd_add(c, kf_xstrdup(flags[i]));
		cmd_add(c, kf_xasprintf("arch=compute_%s,code=sm_%s", arch + 3,
					arch + 3));
		/* Full RELRO and BIND_NOW, as the runner's own binary. */
		if (!split) {
			cmd_add(c, kf_xstrdup("-Xlinker"));
			cmd_add(c, kf_xstrdup("-z,relro,-z,now"));
		}
	}
	c->inc_i = c->argc;
	cmd_add(c, kf_xasprintf("-I%s", include_dir));
	/* Where the system lacks DLPack's header (the GPU machines), the
	 * build ships Debian's copy beside the binaries. */
	char *shipped = kf_path_join(kf_exe_dir(), "include");
	char *probe = kf_path_join(shipped, "dlpack/dlpack.h");
	if (!kf_file_exists("/usr/include/dlpack/dlpack.h") &&
	    kf_file_exists(probe)) {
		cmd_add(c, kf_xstrdup("-isystem"));
		c->dlpack_i = c->argc;
		cmd_add(c, kf_xstrdup(shipped));
	}
	free(probe);
	free(shipped);
	c->src_i = c->argc;
	cmd_add(c, kf_xstrdup(source_path));
	cmd_add(c, kf_xstrdup("-o"));
	c->out_i = c->argc;
	cmd_add(c, kf_xstrdup("")); /* the output, set when known */
	if (split)
		return 0; /* libraries go to the link step */
	cmd_add(c, kf_xstrdup(is_host(backend) ? "-lm" : "-lcudart"));
	for (int i = 0; i < n_libs; i++)
		cmd_add(c, kf_xasprintf("-l%s", opts->libraries[i]));
	return 0;
}

/* One input of the key: a tag, the length in decimal, then the bytes, so
 * that no two different lists of inputs hash the same stream. */
static void key_add(struct kf_sha256 *s, const char *tag, const void *data,
		    size_t bytes)
{
	char len[32];
	int n = snprintf(len, sizeof(len), "%zu:", bytes);
	kf_sha256_update(s, tag, strlen(tag) + 1);
	kf_sha256_update(s, len, (size_t)n);
	kf_sha256_update(s, data, bytes);
}

/*
 * Adds to the key the files a source includes by quotes from its own
 * directory (`#include "x.h"`), and theirs, to a small depth: without
 * them a changed header would hit the cache with the object built from
 * the old one. Headers found by the compiler's search path are covered by
 * the toolchain and kernel.h.
 */
/* Calls fn for every local include of the source at path (text src), and
 * of theirs to a small depth: the file's path as the compiler resolves a
 * quoted include (beside the including file), its name as written, its
 * text. */
typedef void (*include_fn)(const char *inc_path, const char *name,
			   size_t name_len, const char *text, size_t n,
			   void *ctx);
static void walk_local_includes(const char *path, const char *src, size_t bytes,
				int depth, include_fn fn, void *ctx)
{
	if (depth > 4)
		return;
	const char *slash = strrchr(path, '/');
	size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
	const char *p = src, *end = src + bytes;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *q = p;
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if (q < eol && *q == '#') {
			q++;
			while (q < eol && (*q == ' ' || *q == '\t'))
				q++;
			if (eol - q > 8 && !strncmp(q, "include", 7)) {
				const char *a =
				    memchr(q, '"', (size_t)(eol - q));
				const char *b =
				    a ? memchr(a + 1, '"',
					       (size_t)(eol - a - 1))
				      : NULL;
				if (a && b && b - a > 1 && b - a < 256) {
					char *inc = kf_xasprintf(
					    "%.*s%.*s", (int)dir_len, path,
					    (int)(b - a - 1), a + 1);
					char *text = NULL;
					size_t n = 0;
					struct kf_err e = KF_ERR_INIT;
					if (!kf_file_read(inc, SOURCE_CAP,
							  &text, &n, &e)) {
						fn(inc, a + 1,
						   (size_t)(b - a - 1), text, n,
						   ctx);
						walk_local_includes(
						    inc, text, n, depth + 1, fn,
						    ctx);
					}
					free(text);
					free(inc);
				}
			}
		}
		p = eol + 1;
	}
}

static void key_add_include(const char *inc_path, const char *name,
			    size_t name_len, const char *text, size_t n,
			    void *ctx)
{
	(void)inc_path;
	key_add(ctx, "include", name, name_len);
	key_add(ctx, "include text", text, n);
}

static void key_add_local_includes(struct kf_sha256 *s, const char *path,
				   const char *src, size_t bytes, int depth)
{
	walk_local_includes(path, src, bytes, depth, key_add_include, s);
}

static void command_flags(const struct command *c, struct kf_strbuf *sb)
{
	for (int i = 1; i < c->argc; i++) {
		const char *a = i == c->src_i	   ? "<source>"
				: i == c->out_i	   ? "<output>"
				: i == c->obj_i	   ? "<object>"
				: i == c->inc_i	   ? "-I<include>"
				: i == c->dlpack_i ? "<dlpack>"
						   : c->argv[i];
		kf_strbuf_add(sb, a, strlen(a) + 1);
	}
}

/* The command as a shell would take it, for the record. */
static char *command_string(char *const argv[])
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; argv[i]; i++) {
		const char *a = argv[i];
		if (i)
			kf_strbuf_addstr(&sb, " ");
		if (*a && strspn(a, "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				    "_./=,+:@%^-") == strlen(a)) {
			kf_strbuf_addstr(&sb, a);
			continue;
		}
		kf_strbuf_addstr(&sb, "'");
		for (; *a; a++) {
			if (*a == '\'')
				kf_strbuf_addstr(&sb, "'\\''");
			else
				kf_strbuf_add(&sb, a, 1);
		}
		kf_strbuf_addstr(&sb, "'");
	}
	return kf_strbuf_detach(&sb);
}

/* A unique empty file "<dir>/<key>.tmp-XXXXXX<suffix>"; caller frees. */
static char *make_temp(const char *dir, const char *key, const char *suffix,
		       struct kf_err *err)
{
	char *tmp = kf_xasprintf("%s/%s.tmp-XXXXXX%s", dir, key, suffix);
	int fd = mkstemps(tmp, (int)strlen(suffix));
	if (fd < 0) {
		kf_err_set(err, KF_EIO, "%s: cannot create: %s", tmp,
			   strerror(errno));
		free(tmp);
		return NULL;
	}
	close(fd);
	return tmp;
}

/* Writes the log through a unique temporary file and rename(): threads of
 * one process may write the same key at once. */
static int write_log(const char *dir, const char *key, const char *path,
		     const char *log, struct kf_err *err)
{
	int rc = 0;
	char *tmp = make_temp(dir, key, ".log", err);
	if (!tmp)
		return err ? err->code : KF_EIO;
	size_t n = strlen(log);
	FILE *f = fopen(tmp, "we");
	int ok = f && fwrite(log, 1, n, f) == n;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, path) != 0) {
		rc = kf_err_set(err, KF_EIO, "%s: cannot write: %s", path,
				strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

/* A failed build is kept as key.fail beside its log when the source makes
 * it on any machine, so that a resubmission costs no compiler time:
 *  - one that used up its CPU time (kf_compile_cpu_limit) holds the limit
 *    it met, and stands for builds under a limit no larger (under a larger
 *    one it is built again: a build under KFORGE_COMPILE_CPU_S=1 must not
 *    fail an honest kernel under the default);
 *  - an ordinary error (the compiler exited with its diagnostics: see
 *    plain_error) holds "error", and stands under any limit.
 * Timeouts, memory limits and the machine's own failures are not kept. */
#define KEPT_ERROR UINT64_MAX

static void keep_failure(const char *dir, const char *key, uint64_t cpu_s)
{
	char *path = kf_xasprintf("%s/%s.fail", dir, key);
	char text[32];
	int n = cpu_s == KEPT_ERROR
		    ? snprintf(text, sizeof(text), "error\n")
		    : snprintf(text, sizeof(text), "%llu\n",
			       (unsigned long long)cpu_s);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, text, (size_t)n) != n)
			unlink(path); /* kept whole or not at all */
		close(fd);
	}
	free(path);
}

/* The CPU limit a kept failure met (KEPT_ERROR for an ordinary error; 0:
 * none readable, built again). */
static uint64_t kept_failure_limit(const char *path)
{
	char *text = NULL;
	uint64_t s = 0;
	if (kf_file_read(path, 64, &text, NULL, NULL) == 0 && text) {
		char *end = NULL;
		unsigned long long v = strtoull(text, &end, 10);
		if (!strcmp(text, "error\n"))
			s = KEPT_ERROR;
		else if (end != text && (*end == '\n' || *end == '\0'))
			s = v;
	}
	free(text);
	return s;
}

static off_t file_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* The bytes of the source still the ones hashed? Otherwise the object
 * belongs to no key and must not enter the cache. */
static int source_unchanged(const char *path, const char *src, size_t bytes)
{
	char *now = NULL;
	size_t now_bytes = 0;
	int same =
	    kf_file_read(path, SOURCE_CAP, &now, &now_bytes, NULL) == 0 &&
	    now_bytes == bytes && memcmp(now, src, bytes) == 0;
	free(now);
	return same;
}

/* ---- The compiler's confinement ----
 * The compiler reads what the candidate's source names (`#include
 * "/etc/hostname"` put that file into the log a model is shown), so it
 * runs under bubblewrap, in namespaces of its own with no network, seeing
 * the system's directories, the include directories of its command line,
 * the candidate's directory and the local headers it includes from under
 * the current directory, all read-only, and a directory of its own for
 * its output. */

/* Whether path lies in the system's directories, which every compile
 * sees already (/usr, read-only, and the links to it). */
static const char *const system_dirs[] = {"/usr",    "/lib", "/lib64", "/lib32",
					  "/libx32", "/bin", "/sbin"};
#define N_SYSTEM_DIRS (sizeof(system_dirs) / sizeof(system_dirs[0]))

static bool in_system(const char *path)
{
	for (size_t i = 0; i < N_SYSTEM_DIRS; i++) {
		size_t n = strlen(system_dirs[i]);
		if (!strncmp(path, system_dirs[i], n) &&
		    (path[n] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

/* --ro-bind of path's real path onto itself, when it exists and lies
 * outside the system's directories. */
static void av_ro(struct kf_argv *a, const char *path)
{
	char real[PATH_MAX];
	if (!path || path[0] != '/' || !realpath(path, real) ||
	    (in_system(real) && in_system(path)))
		return;
	if (!in_system(real)) {
		kf_argv_add(a, "--ro-bind");
		kf_argv_add(a, real);
		kf_argv_add(a, real);
	}
	if (strcmp(real, path) && !in_system(path)) {
		/* The path as the command line names it, through links. */
		kf_argv_add(a, "--ro-bind");
		kf_argv_add(a, real);
		kf_argv_add(a, path);
	}
}

struct include_binds {
	struct kf_argv *a;
	char cwd[PATH_MAX];    /* "" when / or unknown */
	char src_dir[PATH_MAX];
};

static bool under(const char *path, const char *dir)
{
	size_t l = strlen(dir);
	return l && !strncmp(path, dir, l) && path[l] == '/';
}

/* A local include the key holds (walked from the source's real path, as
 * the compiler resolves it), visible when it lies in the source's
 * directory or under the current one: at its real path and at the path
 * the compiler opens. */
static void bind_include(const char *inc_path, const char *name,
			 size_t name_len, const char *text, size_t n, void *ctx)
{
	(void)name;
	(void)name_len;
	(void)text;
	(void)n;
	struct include_binds *ib = ctx;
	char real[PATH_MAX];
	if (inc_path[0] == '/' && realpath(inc_path, real) &&
	    (under(real, ib->src_dir) || under(real, ib->cwd)))
		av_ro(ib->a, inc_path);
}

/* argv under bubblewrap (bwrap), writing only into work; source_path (at
 * argv[src_i], when src_i >= 0) is passed by its real path. */
static char **confine(const char *bwrap, char *const argv[], int src_i,
		      const char *work, const char *source_path,
		      const char *src, size_t src_bytes, struct kf_argv *a)
{
	static const char *const flags[] = {
	    "--unshare-all", "--die-with-parent",
	    "--new-session", "--cap-drop",
	    "ALL",	     NULL};
	kf_argv_add(a, bwrap);
	for (int i = 0; flags[i]; i++)
		kf_argv_add(a, flags[i]);
	/* The system's directories, or the links to them (merged /usr). */
	for (size_t i = 0; i < N_SYSTEM_DIRS; i++) {
		const char *top = system_dirs[i];
		char link[PATH_MAX];
		ssize_t k = readlink(top, link, sizeof(link) - 1);
		struct stat st;
		if (k > 0) {
			link[k] = '\0';
			kf_argv_add(a, "--symlink");
			kf_argv_add(a, link);
			kf_argv_add(a, top);
		} else if (stat(top, &st) == 0 && S_ISDIR(st.st_mode)) {
			kf_argv_add(a, "--ro-bind");
			kf_argv_add(a, top);
			kf_argv_add(a, top);
		}
	}
	static const char *const etc[] = {"/etc/ld.so.cache",
					  "/etc/alternatives"};
	for (size_t i = 0; i < sizeof(etc) / sizeof(etc[0]); i++) {
		kf_argv_add(a, "--ro-bind-try");
		kf_argv_add(a, etc[i]);
		kf_argv_add(a, etc[i]);
	}
	kf_argv_add(a, "--tmpfs");
	kf_argv_add(a, "/tmp");
	kf_argv_add(a, "--proc");
	kf_argv_add(a, "/proc");
	kf_argv_add(a, "--dev");
	kf_argv_add(a, "/dev");
	/* Libraries the toolchain finds through LD_LIBRARY_PATH. */
	const char *llp = getenv("LD_LIBRARY_PATH");
	while (llp && *llp) {
		size_t k = strcspn(llp, ":");
		char d[PATH_MAX];
		if (k && k < sizeof(d)) {
			memcpy(d, llp, k);
			d[k] = '\0';
			av_ro(a, d);
		}
		llp += k + (llp[k] == ':');
	}
	/* The compiler and the directories of its command line, by their
	 * real paths (the compile runs in the candidate's directory). */
	struct kf_argv cmd = {0};
	for (int i = 0; argv[i]; i++)
		kf_argv_add(&cmd, argv[i]);
	av_ro(a, argv[0]);
	for (int i = 1; cmd.v[i]; i++) {
		char *x = cmd.v[i], real[PATH_MAX];
		bool joined =
		    (!strncmp(x, "-I", 2) || !strncmp(x, "-L", 2)) && x[2];
		bool next = (!strcmp(x, "-I") || !strcmp(x, "-isystem") ||
			     !strcmp(x, "-L")) &&
			    cmd.v[i + 1];
		const char *d = joined ? x + 2 : next ? cmd.v[i + 1] : NULL;
		if (!d || !realpath(d, real))
			continue;
		av_ro(a, real);
		if (joined) {
			char *y = kf_xasprintf("%.2s%s", x, real);
			free(cmd.v[i]);
			cmd.v[i] = y;
		} else {
			free(cmd.v[++i]);
			cmd.v[i] = kf_xstrdup(real);
		}
	}
	char real_src[PATH_MAX], src_dir[PATH_MAX];
	bool have_src = src_i >= 0 && realpath(source_path, real_src);
	if (have_src) {
		snprintf(src_dir, sizeof(src_dir), "%s", real_src);
		char *slash = strrchr(src_dir, '/');
		if (slash && slash != src_dir)
			*slash = '\0';
		/* The source and the local headers it includes by name, the
		 * files the cache key holds, and nothing else of its
		 * directory: a header named through a macro or a file an
		 * assembler directive reads (.incbin) would be outside the
		 * key, and a changed one would be served the object (or the
		 * kept failure) built from the old. */
		av_ro(a, real_src);
		struct include_binds ib;
		ib.a = a;
		snprintf(ib.src_dir, sizeof(ib.src_dir), "%s", src_dir);
		/* Headers elsewhere under the current directory only for a
		 * source under it (a served candidate's, in a directory of
		 * its own, sees none of the server's). */
		if (!getcwd(ib.cwd, sizeof(ib.cwd)) || !strcmp(ib.cwd, "/") ||
		    !under(real_src, ib.cwd))
			ib.cwd[0] = '\0';
		walk_local_includes(real_src, src, src_bytes, 0, bind_include,
				    &ib);
	}
	kf_argv_add(a, "--bind");
	kf_argv_add(a, work);
	kf_argv_add(a, work);
	/* The compiler's own temporary files go to the work directory: /tmp
	 * is read-only where the candidate's directory is /tmp itself (a
	 * candidate saved as /tmp/x.c got "Cannot create temporary file"). */
	kf_argv_add(a, "--setenv");
	kf_argv_add(a, "TMPDIR");
	kf_argv_add(a, work);
	kf_argv_add(a, "--chdir");
	kf_argv_add(a, have_src ? src_dir : work);
	kf_argv_add(a, "--");
	for (int i = 0; cmd.v[i]; i++)
		kf_argv_add(a, i == src_i && have_src ? real_src : cmd.v[i]);
	kf_argv_free(&cmd);
	return a->v;
}

/*
 * The compile cache's bound: KFORGE_CACHE_MAX_MB (default 20480) of objects
 * and logs in kf_cache_dir()/compile. A reward service compiles every
 * completion it is sent, so without one the cache grows by each; past the
 * bound the entries least recently built or found are removed, oldest
 * first, down to 90 % of it, never one used in the last CACHE_KEEP_S
 * seconds (another process may be about to load it). Checked at a
 * process's first new object and every CACHE_TRIM_EVERY after, at most
 * once a minute on the machine. A bad value is an error naming the
 * variable.
 */
#define CACHE_MAX_MB_DEFAULT 20480
#define CACHE_TRIM_EVERY 16
#define CACHE_KEEP_S 120
#define CACHE_TRIM_GAP_S 60

int kf_compile_cache_max(uint64_t *bytes, struct kf_err *err)
{
	return kf_env_mib("KFORGE_CACHE_MAX_MB", CACHE_MAX_MB_DEFAULT, 1,
		       "the compile cache's bound", bytes, err);
}

struct cache_entry {
	char key[72];
	time_t used; /* the newest mtime of its files */
	uint64_t bytes;
};

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct cache_entry *)a)->key,
		      ((const struct cache_entry *)b)->key);
}

static int by_used(const void *a, const void *b)
{
	const struct cache_entry *x = a, *y = b;
	return (x->used > y->used) - (x->used < y->used);
}

int kf_compile_cache_trim(const char *dir, uint64_t cap, int *removed,
			  uint64_t *left)
{
	*removed = 0;
	*left = 0;
	DIR *d = opendir(dir);
	if (!d)
		return KF_EIO;
	struct cache_entry *e = NULL;
	size_t n = 0, alloc = 0;
	uint64_t total = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *dot = strchr(de->d_name, '.');
		size_t klen = dot ? (size_t)(dot - de->d_name) : 0;
		if (!dot || klen != 64 ||
		    (strcmp(dot, ".so") && strcmp(dot, ".o") &&
		     strcmp(dot, ".log") && strcmp(dot, ".fail")))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			e = kf_xrealloc(e, alloc * sizeof(*e));
		}
		memset(&e[n], 0, sizeof(e[n]));
		memcpy(e[n].key, de->d_name, klen);
		e[n].bytes = (uint64_t)st.st_size;
		e[n].used = st.st_mtime;
		n++;
		total += (uint64_t)st.st_size;
	}
	if (total > cap) {
		/* A key's files (object, log) as one entry. */
		qsort(e, n, sizeof(*e), by_key);
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			if (m && !strcmp(e[m - 1].key, e[i].key)) {
				e[m - 1].bytes += e[i].bytes;
				if (e[i].used > e[m - 1].used)
					e[m - 1].used = e[i].used;
			} else {
				e[m++] = e[i];
			}
		}
		n = m;
		qsort(e, n, sizeof(*e), by_used);
		time_t now = time(NULL);
		for (size_t i = 0; i < n && total > cap / 10 * 9; i++) {
			if (now - e[i].used < CACHE_KEEP_S)
				break;
			static const char *const ext[] = {".so", ".o", ".log",
							  ".fail"};
			for (int k = 0; k < 4; k++) {
				char name[80];
				snprintf(name, sizeof(name), "%s%s", e[i].key,
					 ext[k]);
				unlinkat(dirfd(d), name, 0);
			}
			total -= e[i].bytes;
			(*removed)++;
		}
	}
	closedir(d);
	free(e);
	*left = total;
	return 0;
}

/* After a new object: the bound, checked now and then, and by one process
 * of the machine's at most once a minute (the stamp .trimmed's mtime: an
 * evaluation per process would otherwise read the whole directory each). */
static void cache_bound(const char *dir)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static unsigned stores;
	pthread_mutex_lock(&lock);
	bool now = stores++ % CACHE_TRIM_EVERY == 0;
	pthread_mutex_unlock(&lock);
	uint64_t cap;
	struct kf_err err = KF_ERR_INIT;
	if (!now || kf_compile_cache_max(&cap, &err))
		return;
	char *stamp = kf_path_join(dir, ".trimmed");
	struct stat st;
	bool recent = stat(stamp, &st) == 0 &&
		      time(NULL) - st.st_mtime < CACHE_TRIM_GAP_S;
	if (!recent) {
		int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			futimens(fd, NULL);
			close(fd);
		}
	}
	free(stamp);
	if (recent)
		return;
	int removed = 0;
	uint64_t left = 0;
	pthread_mutex_lock(&lock);
	kf_compile_cache_trim(dir, cap, &removed, &left);
	pthread_mutex_unlock(&lock);
	if (removed)
		kf_log(KF_LOG_INFO,
		       "compile cache %s: removed the %d entries least "
		       "recently used, %llu MiB left (KFORGE_CACHE_MAX_MB "
		       "%llu)",
		       dir, removed, (unsigned long long)(left >> 20),
		       (unsigned long long)(cap >> 20));
}

int kf_compile_cpu_limit(int timeout_ms, uint64_t *seconds,
			 struct kf_err *err)
{
	uint64_t s = 0;
	int rc = kf_env_whole("KFORGE_COMPILE_CPU_S", KF_COMPILE_CPU_S_DEFAULT,
			      1, "seconds", "the CPU time a build's process "
			      "may use", &s, err);
	uint64_t most = (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 3 / 4000;
	if (!rc && s > most)
		s = most > 0 ? most : 1;
	*seconds = rc ? 0 : s;
	return rc;
}

int kf_compile_mem_limit(uint64_t *bytes, struct kf_err *err)
{
	return kf_env_mib("KFORGE_COMPILE_MEM_MB", KF_COMPILE_MEM_MB_DEFAULT, 256,
		       "the memory a build's process may take", bytes, err);
}

/* What a compiler prints when an allocation fails: cc1 ("out of memory
 * allocating"), C++ passes (std::bad_alloc), the C library's strerror. */
static bool says_no_memory(const char *text)
{
	return text && (strstr(text, "out of memory") ||
			strstr(text, "bad_alloc") ||
			strstr(text, "Cannot allocate memory") ||
			strstr(text, "virtual memory exhausted"));
}

/* Whether a step failed on RLIMIT_FSIZE: killed by SIGXFSZ itself, or a
 * driver reporting that of a tool it ran (gcc: "terminated with signal
 * 25"; the tools' own "File too large"). */
static bool says_too_big(int status, const char *text)
{
	return (WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) ||
	       (text && (strstr(text, "signal 25") ||
			 strstr(text, "File size limit exceeded") ||
			 strstr(text, "File too large")));
}

/* Whether a step's process met its CPU time (RLIMIT_CPU's SIGXCPU: the
 * soft limit, a second before the hard one): killed by it itself, the
 * sandbox's exit code for it (128 + SIGXCPU), or a driver reporting that
 * of a tool it ran (gcc: "CPU time limit exceeded signal terminated
 * program cc1"; nvcc: "'cicc' died due to signal 24"). The CPU time
 * cannot be read from the sandbox's exit: its init does not pass its
 * children's times on. */
static bool says_cpu_spent(int status, const char *text)
{
	return (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) ||
	       (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGXCPU) ||
	       (text && (strstr(text, "CPU time limit exceeded") ||
			 strstr(text, "due to signal 24") ||
			 strstr(text, "with signal 24")));
}

/* Whether a build that exited with an error, within its limits, failed on
 * the source alone: the compiler's diagnostics say "error", and nothing of
 * the machine's own failures (the sandbox's, a full disk, too many files
 * or processes, an unreadable file, a tool that crashed) is there, so that the same source,
 * flags and toolchain fail the same way on any machine. */
static bool plain_error(const char *text)
{
	static const char *const machine[] = {
	    "bwrap:",
	    "No space left",
	    "Too many open files",
	    "Resource temporarily unavailable",
	    "Input/output error",
	    "Read-only file system",
	    "Disk quota",
	    "cannot fork",
	    "Cannot allocate",
	    "Memory allocation",
	    "Killed",
	    "Permission denied",
	    "Stale file handle",
	    /* a tool that crashed (a driver reports a tool's signal and
	     * exits 1): a compiler's fault, or the machine's memory */
	    "internal compiler error",
	    "Segmentation fault",
	    "signal"};
	/* gcc's and nvcc's "error", the GNU assembler's "Error:" */
	if (!text || (!strstr(text, "error") && !strstr(text, "Error:")))
		return false;
	for (size_t i = 0; i < sizeof(machine) / sizeof(machine[0]); i++)
		if (strstr(text, machine[i]))
			return false;
	return true;
}

void kf_compile_mem_note(struct kf_strbuf *log, uint64_t bytes)
{
	kf_strbuf_addf(log,
		       "%sthe build's processes may take %llu MiB each "
		       "(KFORGE_COMPILE_MEM_MB)\n",
		       log->len && log->buf[log->len - 1] != '\n' ? "\n" : "",
		       (unsigned long long)(bytes >> 20));
}

/* Runs one step within the deadline, each of its processes held to
 * mem_bytes (RLIMIT_DATA) and cpu_s seconds of CPU time (RLIMIT_CPU); the
 * output joins log. Returns 0 with *ok, *timed_out, *cpu_spent (the step
 * failed having used its CPU time: one of its processes met the limit) or
 * *plain (an ordinary error: plain_error) set, or a negative code when it
 * could not run. */
static int run_step(char *const argv[], uint64_t mem_bytes, uint64_t cpu_s,
		    uint64_t deadline_ns, int timeout_ms,
		    struct kf_strbuf *log, bool *ok, bool *timed_out,
		    bool *cpu_spent, bool *plain, struct kf_err *err)
{
	struct kf_limits lim = {0};
	lim.data_bytes = mem_bytes;
	lim.fsize_bytes = KF_COMPILE_FILE_CAP;
	lim.cpu_s = (double)cpu_s;
	int status = 0;
	uint64_t now = kf_now_ns();
	int left_ms = now >= deadline_ns
			  ? 1
			  : (int)((deadline_ns - now + 999999) / 1000000);
	size_t room = KF_COMPILE_LOG_CAP - LOG_NOTE_ROOM;
	struct kf_strbuf out = KF_STRBUF_INIT;
	int rc = kf_proc_run_limited(argv, &lim, left_ms,
				     room > log->len ? room - log->len : 0,
				     &out, &status, err);
	*ok = false;
	if (rc == KF_ETIMEDOUT) {
		rc = 0;
		*timed_out = true;
		kf_strbuf_add(log, out.buf ? out.buf : "", out.len);
		kf_strbuf_addf(log, "%scompiler killed after %d ms\n",
			       log->len && log->buf[log->len - 1] != '\n' ? "\n"
									  : "",
			       timeout_ms);
	} else if (!rc) {
		kf_strbuf_add(log, out.buf ? out.buf : "", out.len);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (!WIFEXITED(status) || !out.len) {
				char *why = kf_wait_describe(status);
				kf_strbuf_addf(log, "\ncompiler %s\n", why);
				free(why);
			}
			if (cpu_s > 0 && says_cpu_spent(status, out.buf)) {
				*cpu_spent = true;
				kf_strbuf_addf(
				    log,
				    "%sa process of the build used up its CPU "
				    "time; each may use %llu s "
				    "(KFORGE_COMPILE_CPU_S, at most 3/4 of the "
				    "compile timeout): this source spends it "
				    "on any machine, and the failure is kept "
				    "in the cache for builds under a limit no "
				    "larger\n",
				    log->len && log->buf[log->len - 1] != '\n'
					? "\n"
					: "",
				    (unsigned long long)cpu_s);
			} else if (says_too_big(status, out.buf)) {
				/* KF_COMPILE_FILE_CAP is the same on every
				 * machine: the source's failure. */
				*plain = true;
				kf_strbuf_addf(
				    log,
				    "%sa file of the build grew past %u MiB, "
				    "the most a build may write\n",
				    log->len && log->buf[log->len - 1] != '\n'
					? "\n"
					: "",
				    KF_COMPILE_FILE_CAP >> 20);
			} else if (!WIFEXITED(status) ||
				 says_no_memory(out.buf))
				kf_compile_mem_note(log, mem_bytes);
			else
				*plain = plain_error(out.buf);
		} else {
			*ok = true;
		}
	}
	kf_strbuf_release(&out);
	return rc;
}

/*
 * Runs the build into a temporary object beside so_path, then renames it
 * onto so_path, so that no reader ever sees half an object. A compile error
 * or a timeout sets r and returns 0; the log is kept in either case.
 */
static int run_compiler(struct build *b, const char *dir,
			const char *source_path, const char *src,
			size_t src_bytes, int timeout_ms, uint64_t cpu,
			struct kf_compile_result *r, struct kf_err *err)
{
	int rc = 0;
	bool ok = false, timed_out = false, cpu_spent = false, plain = false;
	struct kf_strbuf log = KF_STRBUF_INIT;
	char *so_path = kf_xasprintf("%s/%s.so", dir, r->key);
	char *log_path = kf_xasprintf("%s/%s.log", dir, r->key);
	char *obj = NULL, *tmp = NULL, *work = NULL, *bwrap = kf_bwrap_path();
	struct kf_argv ca = {0}, la = {0};
	uint64_t mem = 0;
	rc = kf_compile_mem_limit(&mem, err);
	if (rc)
		goto out;
	if (!bwrap) {
		rc = kf_err_set(err, KF_ENOENT,
				"bubblewrap (bwrap) not found (KFORGE_BWRAP, "
				"/usr/bin/bwrap, build/bin/bwrap): compiles "
				"run confined; make deps installs it");
		goto out;
	}
	/* A directory of the compile's own, the only one it may write. */
	char *tmpl = kf_xasprintf("%s/%s.work-XXXXXX", dir, r->key);
	char real_work[PATH_MAX];
	if (!mkdtemp(tmpl) || !realpath(tmpl, real_work)) {
		rc = kf_err_set(err, KF_EIO, "%s: cannot create: %s", tmpl,
				strerror(errno));
		rmdir(tmpl);
		free(tmpl);
		goto out;
	}
	free(tmpl);
	work = kf_xstrdup(real_work);
	tmp = make_temp(work, r->key, ".so", err);
	if (!tmp) {
		rc = err ? err->code : KF_EIO;
		goto out;
	}
	if (b->split) {
		obj = make_temp(work, r->key, ".o", err);
		if (!obj) {
			rc = err ? err->code : KF_EIO;
			goto out;
		}
	}
	struct command *c = &b->cc;
	free(c->argv[c->out_i]);
	c->argv[c->out_i] = kf_xstrdup(b->split ? obj : tmp);
	uint64_t t0 = kf_now_ns();
	uint64_t deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	rc = run_step(confine(bwrap, c->argv, c->src_i, work, source_path, src,
			      src_bytes, &ca),
		      mem, cpu, deadline, timeout_ms, &log, &ok, &timed_out,
		      &cpu_spent, &plain, err);
	if (b->split && !rc && ok) {
		struct command *l = &b->link;
		free(l->argv[l->out_i]);
		l->argv[l->out_i] = kf_xstrdup(tmp);
		free(l->argv[l->obj_i]);
		l->argv[l->obj_i] = kf_xstrdup(obj);
		rc = run_step(confine(bwrap, l->argv, -1, work, source_path,
				      src, src_bytes, &la),
			      mem, cpu, deadline, timeout_ms, &log, &ok, &timed_out,
		      &cpu_spent, &plain, err);
	}
	r->seconds = (double)(kf_now_ns() - t0) * 1e-9;
	if (rc)
		goto out;
	r->timed_out = timed_out;
	r->cpu_spent = cpu_spent && !ok;
	if (ok && file_bytes(tmp) <= 0) {
		ok = false;
		kf_strbuf_addstr(&log, "\ncompiler succeeded but wrote no "
				       "object\n");
	}
	r->ok = ok;
	/* run_step kept LOG_NOTE_ROOM free for the notes; cut anyway. */
	if (log.len > KF_COMPILE_LOG_CAP) {
		log.len = KF_COMPILE_LOG_CAP;
		log.buf[log.len] = '\0';
	}
	r->log = kf_xstrdup(kf_strbuf_str(&log));
	rc = write_log(dir, r->key, log_path, r->log, err);
	/* Kept only for the bytes the key was made of. */
	bool same = !rc && !r->ok &&
		    source_unchanged(source_path, src, src_bytes);
	if (same && r->cpu_spent)
		keep_failure(dir, r->key, cpu);
	else if (same && plain)
		keep_failure(dir, r->key, KEPT_ERROR);
	if (rc || !r->ok)
		goto out;
	if (!source_unchanged(source_path, src, src_bytes)) {
		r->ok = false;
		rc = kf_err_set(err, KF_EIO,
				"%s: changed while it was being compiled",
				source_path);
		goto out;
	}
	if (rename(tmp, so_path) != 0) {
		r->ok = false;
		rc = kf_err_set(err, KF_EIO, "%s: cannot rename onto %s: %s",
				tmp, so_path, strerror(errno));
		goto out;
	}
	r->so_path = so_path;
	so_path = NULL;
	cache_bound(dir);
out:
	if (tmp && (!r->ok || rc))
		unlink(tmp);
	if (obj)
		unlink(obj);
	if (work)
		rmdir(work);
	free(work);
	free(bwrap);
	kf_argv_free(&ca);
	kf_argv_free(&la);
	kf_strbuf_release(&log);
	free(tmp);
	free(obj);
	free(so_path);
	free(log_path);
	return rc;
}

/* Fills r from the cache when the object is there, or a failure kept
 * (keep_failure) that stands for a build under CPU limit cpu_s; returns
 * whether it was. */
static int cache_hit(const char *dir, uint64_t cpu_s,
		     struct kf_compile_result *r)
{
	char *so_path = kf_xasprintf("%s/%s.so", dir, r->key);
	char *fail_path = kf_xasprintf("%s/%s.fail", dir, r->key);
	uint64_t kept = kf_file_exists(so_path) || !kf_file_exists(fail_path)
			    ? 0
			    : kept_failure_limit(fail_path);
	bool failed = kept && kept >= cpu_s;
	if (failed) {
		char *log_path = kf_xasprintf("%s/%s.log", dir, r->key);
		char *log = NULL;
		bool have = kf_file_read(log_path, KF_COMPILE_LOG_CAP, &log,
					 NULL, NULL) == 0;
		free(log_path);
		if (have) {
			utimensat(AT_FDCWD, fail_path, NULL, 0);
			free(fail_path);
			free(so_path);
			r->ok = false;
			r->cached = true;
			r->cpu_spent = kept != KEPT_ERROR;
			r->seconds = 0;
			r->log = log;
			return 1;
		}
	}
	free(fail_path);
	if (!kf_file_exists(so_path)) {
		free(so_path);
		return 0;
	}
	/* Used now: the cache's bound removes what was used longest ago. */
	utimensat(AT_FDCWD, so_path, NULL, 0);
	char *log_path = kf_xasprintf("%s/%s.log", dir, r->key);
	char *log = NULL;
	if (kf_file_read(log_path, KF_COMPILE_LOG_CAP, &log, NULL, NULL) != 0)
		log = kf_xstrdup("");
	free(log_path);
	r->ok = true;
	r->cached = true;
	r->seconds = 0;
	r->so_path = so_path;
	r->log = log;
	return 1;
}

int kf_compile(const char *source_path, const struct kf_compile_opts *opts,
	       struct kf_compile_result *r, struct kf_err *err)
{
	static const struct kf_compile_opts defaults = {0};
	memset(r, 0, sizeof(*r));
	uint64_t cache_cap;
	/* The cache's bound: a bad value is an error at every compile, hit
	 * or not, rather than a bound silently not kept. */
	int rc = kf_compile_cache_max(&cache_cap, err);
	if (rc)
		return rc;
	char *src = NULL, *kernel_h = NULL, *kernel_h_path = NULL;
	char *include_dir = NULL, *compiler = NULL, *cpu = NULL, *dir = NULL;
	size_t src_bytes = 0, kernel_h_bytes = 0;
	char *host_cc = NULL, *lib_dir = NULL, *host_tc = NULL;
	struct build b = {COMMAND_INIT, COMMAND_INIT, false};
	struct command *cmd = &b.cc;
	struct kf_strbuf flags = KF_STRBUF_INIT;
	struct kf_sha256 sha;
	char key[65];

	memset(r, 0, sizeof(*r));
	if (!opts)
		opts = &defaults;
	const char *backend = opts->backend ? opts->backend : "host";
	if (!is_host(backend) && strcmp(backend, "cuda") != 0) {
		rc = kf_err_set(err, KF_EINVAL,
				"backend \"%s\": expected host or cuda",
				backend);
		goto out;
	}
	rc = kf_file_read(source_path, SOURCE_CAP, &src, &src_bytes, err);
	if (rc)
		goto out;
	size_t pl = strlen(source_path);
	if (is_host(backend) && pl >= 3 &&
	    !strcmp(source_path + pl - 3, ".cu")) {
		/* The C compiler would hand a .cu to the linker as a script
		 * ("syntax error"): say what the file is instead. */
		r->ok = false;
		r->log = kf_xasprintf(
		    "%s is a CUDA source (.cu); the host backend compiles C "
		    "(.c): evaluate it with --backend cuda",
		    source_path);
		goto out;
	}
	rc = find_include_dir(opts->include_dir, &include_dir, err);
	if (rc)
		goto out;
	kernel_h_path = kf_path_join(include_dir, "kforge/kernel.h");
	rc = kf_file_read(kernel_h_path, KERNEL_H_CAP, &kernel_h,
			  &kernel_h_bytes, err);
	if (rc)
		goto out;
	compiler = find_compiler(backend, err);
	if (!compiler) {
		rc = err ? err->code : KF_ENOENT;
		goto out;
	}
	r->toolchain = toolchain_line(backend, compiler);
	if (!r->toolchain) {
		rc = kf_err_set(err, KF_ENOENT,
				"%s: no version from `%s --version`: not a "
				"working compiler",
				compiler, compiler);
		goto out;
	}
	if (!is_host(backend) &&
	    cuda_mode(compiler, &host_cc, &lib_dir) == SPLIT) {
		/* The host compiler now links: its identity joins the key. */
		host_tc = toolchain_line("host", host_cc);
		b.split = host_tc != NULL;
	}
	rc = build_command(cmd, backend, compiler, source_path, include_dir,
			   cuda_arch(opts->arch, src, src_bytes), opts, b.split,
			   err);
	if (rc)
		goto out;
	if (b.split)
		build_link(&b, host_cc, lib_dir, opts);

	kf_sha256_init(&sha);
	key_add(&sha, "format", KEY_FORMAT, strlen(KEY_FORMAT));
	key_add(&sha, "backend", backend, strlen(backend));
	key_add(&sha, "toolchain", r->toolchain, strlen(r->toolchain));
	command_flags(cmd, &flags);
	if (b.split)
		command_flags(&b.link, &flags);
	key_add(&sha, "flags", flags.buf, flags.len);
	if (b.split)
		key_add(&sha, "host toolchain", host_tc, strlen(host_tc));
	key_add(&sha, "source", src, src_bytes);
	{
		/* Walked as the compiler resolves them: from the source's
		 * real path (confine passes that one). */
		char real_src[PATH_MAX];
		key_add_local_includes(
		    &sha, realpath(source_path, real_src) ? real_src : source_path,
		    src, src_bytes, 0);
	}
	key_add(&sha, "kernel.h", kernel_h, kernel_h_bytes);
	if (is_host(backend)) {
		cpu = cpu_identity();
		key_add(&sha, "cpu", cpu, strlen(cpu));
	}
	kf_sha256_final_hex(&sha, key);
	r->key = kf_xstrdup(key);

	dir = kf_path_join(kf_cache_dir(), "compile");
	rc = kf_mkdir_p(dir, err);
	if (rc)
		goto out;
	free(cmd->argv[cmd->out_i]);
	cmd->argv[cmd->out_i] =
	    kf_xasprintf("%s/%s.%s", dir, key, b.split ? "o" : "so");
	r->command = command_string(cmd->argv);
	if (b.split) {
		/* For the record: the compile, then the link. */
		struct command *l = &b.link;
		free(l->argv[l->out_i]);
		l->argv[l->out_i] = kf_xasprintf("%s/%s.so", dir, key);
		free(l->argv[l->obj_i]);
		l->argv[l->obj_i] = kf_xasprintf("%s/%s.o", dir, key);
		char *link = command_string(l->argv);
		char *both = kf_xasprintf("%s && %s", r->command, link);
		free(link);
		free(r->command);
		r->command = both;
	}
	int timeout_ms =
	    opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	uint64_t cpu_s = 0;
	rc = kf_compile_cpu_limit(timeout_ms, &cpu_s, err);
	if (rc)
		goto out;
	if (!opts->no_cache && cache_hit(dir, cpu_s, r))
		goto out;
	rc = run_compiler(&b, dir, source_path, src, src_bytes, timeout_ms,
			  cpu_s, r, err);
out:
	build_release(&b);
	free(host_cc);
	free(lib_dir);
	free(host_tc);
	kf_strbuf_release(&flags);
	free(src);
	free(kernel_h);
	free(kernel_h_path);
	free(include_dir);
	free(compiler);
	free(cpu);
	free(dir);
	return rc;
}

static char *dup_or_null(const char *s)
{
	return s ? kf_xstrdup(s) : NULL;
}

void kf_compile_result_copy(struct kf_compile_result *dst,
			    const struct kf_compile_result *src)
{
	*dst = *src;
	dst->so_path = dup_or_null(src->so_path);
	dst->log = dup_or_null(src->log);
	dst->key = dup_or_null(src->key);
	dst->command = dup_or_null(src->command);
	dst->toolchain = dup_or_null(src->toolchain);
}

void kf_compile_result_release(struct kf_compile_result *r)
{
	if (!r)
		return;
	free(r->so_path);
	free(r->log);
	free(r->key);
	free(r->command);
	free(r->toolchain);
	memset(r, 0, sizeof(*r));
}
