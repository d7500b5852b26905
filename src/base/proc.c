/*
 * proc.c: child processes: the sandboxed worker (pipes, rlimits) and tools
 * run to completion with a deadline and a cap on what they print.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/base.h>

static void set_limit(int res, uint64_t v)
{
	struct rlimit rl = {(rlim_t)v, (rlim_t)v};
	setrlimit(res, &rl);
}

/* The soft CPU-time limit, in whole seconds as the kernel keeps it. */
static rlim_t cpu_soft(const struct kf_limits *lim)
{
	return (rlim_t)(lim->cpu_s + 0.999);
}

static void apply_limits(const struct kf_limits *lim)
{
	if (!lim)
		return;
	if (lim->no_core)
		set_limit(RLIMIT_CORE, 0);
	if (lim->cpu_s > 0) {
		/* The soft limit sends SIGXCPU, the hard one SIGKILL a second
		 * later, so a candidate that ignores SIGXCPU still ends. */
		struct rlimit rl = {cpu_soft(lim), cpu_soft(lim) + 1};
		setrlimit(RLIMIT_CPU, &rl);
	}
	if (lim->as_bytes)
		set_limit(RLIMIT_AS, lim->as_bytes);
	if (lim->fsize_bytes)
		set_limit(RLIMIT_FSIZE, lim->fsize_bytes);
	if (lim->nproc)
		set_limit(RLIMIT_NPROC, lim->nproc);
	if (lim->data_bytes)
		set_limit(RLIMIT_DATA, lim->data_bytes);
}

int kf_proc_spawn(struct kf_proc *p, char *const argv[],
		  const struct kf_limits *lim, int stderr_fd,
		  struct kf_err *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, ex[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    pipe2(ex, O_CLOEXEC)) {
		kf_err_set(err, KF_EIO, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		kf_err_set(err, KF_ECHILD, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		/* The child: only async-signal-safe calls until exec. It dies
		 * with the thread that started it, however that ends (the
		 * setting survives exec): an eval child, a worker or a
		 * compiler killed from above takes its own children along,
		 * for they are in process groups of their own. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (stderr_fd >= 0) {
			dup2(stderr_fd, 2);
		} else {
			int nul = open("/dev/null", O_WRONLY);
			if (nul >= 0)
				dup2(nul, 2);
		}
		setpgid(0, 0);
		apply_limits(lim);
		execv(argv[0], argv);
		int e = errno;
		ssize_t w = write(ex[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(ex[1]);
	int child_errno = 0;
	ssize_t n;
	while ((n = read(ex[0], &child_errno, sizeof(child_errno))) < 0 &&
	       errno == EINTR)
		;
	close(ex[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		close(in[1]);
		close(out[0]);
		return kf_err_set(err, KF_ECHILD, "%s: cannot run: %s", argv[0],
				  strerror(child_errno));
	}
	p->pid = pid;
	p->to_child = in[1];
	p->from_child = out[0];
	p->cpu_soft_s = lim && lim->cpu_s > 0 ? (double)cpu_soft(lim) : 0;
	p->cpu_used_s = 0;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (ex[i] >= 0)
			close(ex[i]);
	}
	return err ? err->code : KF_EIO;
}

static void close_pipes(struct kf_proc *p)
{
	if (p->to_child >= 0)
		close(p->to_child);
	if (p->from_child >= 0)
		close(p->from_child);
	p->to_child = p->from_child = -1;
}

static int reap(struct kf_proc *p, int options, int *status, long *maxrss_kib)
{
	struct rusage ru;
	int st = 0;
	pid_t r;
	while ((r = wait4(p->pid, &st, options, &ru)) < 0 && errno == EINTR)
		;
	if (r == p->pid) {
		if (status)
			*status = st;
		if (maxrss_kib)
			*maxrss_kib = ru.ru_maxrss;
		p->cpu_used_s =
		    (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	}
	return r == p->pid;
}

void kf_proc_kill(struct kf_proc *p, int *status)
{
	close_pipes(p);
	if (p->pid <= 0)
		return;
	kill(-p->pid, SIGKILL); /* the whole group: no grandchild survives */
	kill(p->pid, SIGKILL);
	reap(p, 0, status, NULL);
	p->pid = 0;
}

int kf_proc_wait(struct kf_proc *p, int timeout_ms, int *status,
		 long *maxrss_kib)
{
	close_pipes(p);
	if (p->pid <= 0)
		return 0;
	uint64_t end = kf_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		if (reap(p, WNOHANG, status, maxrss_kib)) {
			kill(-p->pid, SIGKILL);
			p->pid = 0;
			return 0;
		}
		if (kf_now_ns() >= end)
			break;
		usleep(1000);
	}
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
	reap(p, 0, status, maxrss_kib);
	p->pid = 0;
	return KF_ETIMEDOUT;
}

long kf_proc_peak_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = 0;
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6)) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

/* One process's user and system time in ticks, its state, and its
 * children, from /proc. */
static double tree_ticks(pid_t pid, int depth, bool *runnable)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: the fields
	 * start after the last ')'. */
	char *p = strrchr(buf, ')');
	char state = 0;
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 1,
			 " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			 "%llu",
			 &state, &ut, &st) != 3)
		return -1;
	if (state == 'R' && runnable)
		*runnable = true;
	double ticks = (double)(ut + st);
	if (depth >= 8)
		return ticks;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	f = fopen(path, "r");
	if (!f)
		return ticks;
	int child;
	while (fscanf(f, "%d", &child) == 1) {
		double t = tree_ticks((pid_t)child, depth + 1, runnable);
		if (t > 0)
			ticks += t;
	}
	fclose(f);
	return ticks;
}

double kf_proc_tree_cpu_ms(pid_t pid, bool *runnable)
{
	if (runnable)
		*runnable = false;
	double ticks = tree_ticks(pid, 0, runnable);
	long hz = sysconf(_SC_CLK_TCK);
	return ticks < 0 || hz <= 0 ? -1 : ticks * 1000.0 / (double)hz;
}

char *kf_wait_describe(int status)
{
	if (WIFEXITED(status))
		return kf_xasprintf("exited with code %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbrev = sigabbrev_np(sig);
		return kf_xasprintf("killed by signal %d (SIG%s: %s)", sig,
				    abbrev ? abbrev : "?", strsignal(sig));
	}
	return kf_xasprintf("ended with wait status 0x%x", status);
}

int kf_proc_run(char *const argv[], int timeout_ms, size_t cap_bytes,
		struct kf_strbuf *out, int *status, struct kf_err *err)
{
	return kf_proc_run_limited(argv, NULL, timeout_ms, cap_bytes, out,
				   status, err);
}

int kf_proc_run_limited(char *const argv[], const struct kf_limits *lim,
			int timeout_ms, size_t cap_bytes,
			struct kf_strbuf *out, int *status,
			struct kf_err *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return kf_err_set(err, KF_EIO, "pipe: %s", strerror(errno));
	struct kf_proc p = KF_PROC_INIT;
	int rc = kf_proc_spawn(&p, argv, lim, pfd[1], err);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return rc;
	}
	/* stdout joins stderr in pfd: the child's stdout is p.from_child;
	 * read both. */
	close(p.to_child);
	p.to_child = -1;
	uint64_t end = kf_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct pollfd fds[2] = {{p.from_child, POLLIN, 0}, {pfd[0], POLLIN, 0}};
	/* Each stream to its own buffer; out gets stdout whole, then stderr.
	 * Read in turn into one buffer they interleave wherever the child's
	 * writes and these reads happen to fall (a JSON result of two
	 * write()s cut by an earlier progress line, when the machine is
	 * busy). */
	struct kf_strbuf got[2] = {KF_STRBUF_INIT, KF_STRBUF_INIT};
	int open_fds = 2;
	size_t dropped = 0;
	char buf[4096];
	while (open_fds > 0) {
		uint64_t now = kf_now_ns();
		if (now >= end) {
			kf_proc_kill(&p, status);
			rc = kf_err_set(err, KF_ETIMEDOUT,
					"%s: no result after %d ms", argv[0],
					timeout_ms);
			break;
		}
		int r = poll(fds, 2, (int)((end - now) / 1000000ull) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			ssize_t n = read(fds[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			size_t keep = (size_t)n;
			if (got[i].len + keep > cap_bytes)
				keep = cap_bytes > got[i].len
					   ? cap_bytes - got[i].len
					   : 0;
			dropped += (size_t)n - keep;
			if (keep)
				kf_strbuf_add(&got[i], buf, keep);
		}
	}
	close(pfd[0]);
	size_t used = 0;
	for (int i = 0; i < 2; i++) {
		size_t room = cap_bytes - used; /* used <= cap_bytes */
		size_t keep = got[i].len < room ? got[i].len : room;
		used += keep;
		if (keep)
			kf_strbuf_add(out, got[i].buf, keep);
		dropped += got[i].len - keep;
		kf_strbuf_release(&got[i]);
	}
	if (dropped)
		kf_strbuf_addf(out, "\n[%zu more bytes of output dropped]\n",
			       dropped);
	if (rc)
		return rc;
	/* The output has ended but the child may still run: it gets what is
	 * left of the deadline, not a fresh one. */
	uint64_t now = kf_now_ns();
	int left_ms =
	    now < end ? (int)((end - now + 999999ull) / 1000000ull) : 0;
	if (kf_proc_wait(&p, left_ms, status, NULL) == KF_ETIMEDOUT)
		return kf_err_set(err, KF_ETIMEDOUT,
				  "%s: no result after %d ms", argv[0],
				  timeout_ms);
	return 0;
}

char *kf_proc_first_line(char *const argv[], int timeout_ms)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	int status = 0;
	char *line = NULL;
	if (kf_proc_run(argv, timeout_ms, 4096, &sb, &status, NULL) == 0 &&
	    WIFEXITED(status) && WEXITSTATUS(status) == 0 && sb.len) {
		const char *s = kf_strbuf_str(&sb);
		size_t n = strcspn(s, "\n");
		line = kf_xmalloc(n + 1);
		memcpy(line, s, n);
		line[n] = '\0';
	}
	kf_strbuf_release(&sb);
	return line;
}

int kf_is_executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

char *kf_which(const char *name)
{
	if (strchr(name, '/'))
		return kf_is_executable(name) ? kf_xstrdup(name) : NULL;
	const char *p = getenv("PATH");
	if (!p || !*p)
		p = "/usr/local/bin:/usr/bin:/bin";
	for (;;) {
		size_t n = strcspn(p, ":");
		char *d = n ? kf_xasprintf("%.*s", (int)n, p) : kf_xstrdup(".");
		char *full = kf_path_join(d, name);
		free(d);
		if (kf_is_executable(full))
			return full;
		free(full);
		if (!p[n])
			return NULL;
		p += n + 1;
	}
}

void kf_argv_add(struct kf_argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 32;
		a->v = kf_xrealloc(a->v, sizeof(char *) * (size_t)a->cap);
	}
	a->v[a->n++] = kf_xstrdup(s);
	a->v[a->n] = NULL;
}

void kf_argv_free(struct kf_argv *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

int kf_env_whole(const char *name, uint64_t dflt, uint64_t min,
		 const char *unit, const char *what, uint64_t *out,
		 struct kf_err *err)
{
	const char *v = getenv(name);
	uint64_t x = dflt;
	if (v && *v) {
		char *end = NULL;
		errno = 0;
		unsigned long long y = strtoull(v, &end, 10);
		if (errno || *end || *v == '-' || y < min || y > (1ull << 30))
			return kf_err_set(err, KF_EINVAL,
					  "%s=%s: %s is a whole number of "
					  "%s, at least %llu",
					  name, v, what, unit,
					  (unsigned long long)min);
		x = y;
	}
	*out = x;
	return 0;
}

int kf_runner_mem_limit(uint64_t *bytes, struct kf_err *err)
{
	return kf_env_mib("KFORGE_RUNNER_MEM_MB", KF_RUNNER_MEM_MB_DEFAULT, 256,
			  "a candidate runner's resident memory limit", bytes,
			  err);
}

int kf_env_mib(const char *name, uint64_t dflt, uint64_t min_mb,
	       const char *what, uint64_t *bytes, struct kf_err *err)
{
	uint64_t mb = 0;
	int rc = kf_env_whole(name, dflt, min_mb, "MiB", what, &mb, err);
	*bytes = rc ? 0 : mb << 20;
	return rc;
}
