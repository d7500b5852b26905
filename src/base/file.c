/* file.c: whole-file reads with a cap, atomic writes, directories and the
 * cache location. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kforge/base.h>

int kf_file_read(const char *path, size_t cap_bytes, char **out,
		 size_t *out_bytes, struct kf_err *err)
{
	int rc = 0;
	char *buf = NULL;
	size_t len = 0, alloc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kf_err_set(err, errno == ENOENT ? KF_ENOENT : KF_EIO,
				  "%s: cannot open: %s", path, strerror(errno));
	for (;;) {
		if (len + 4096 + 1 > alloc) {
			alloc = alloc ? alloc * 2 : 8192;
			buf = kf_xrealloc(buf, alloc);
		}
		ssize_t n = read(fd, buf + len, alloc - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = kf_err_set(err, KF_EIO, "%s: cannot read: %s",
					path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > cap_bytes) {
			rc =
			    kf_err_set(err, KF_ERANGE,
				       "%s: larger than the limit of %zu bytes",
				       path, cap_bytes);
			goto out;
		}
	}
	if (!buf)
		buf = kf_xmalloc(1);
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
	if (out_bytes)
		*out_bytes = len;
out:
	free(buf);
	close(fd);
	return rc;
}

int kf_file_write_atomic(const char *path, const void *data, size_t bytes,
			 struct kf_err *err)
{
	int rc = 0;
	char *tmp = kf_xasprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = kf_err_set(err, KF_EIO, "%s: cannot create: %s", tmp,
				strerror(errno));
		goto out;
	}
	const char *p = data;
	size_t left = bytes;
	while (left) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = kf_err_set(err, KF_EIO, "%s: cannot write: %s",
					tmp, strerror(errno));
			close(fd);
			unlink(tmp);
			goto out;
		}
		p += n;
		left -= (size_t)n;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		rc = kf_err_set(err, KF_EIO, "%s: cannot write: %s", path,
				strerror(errno));
		unlink(tmp);
	}
out:
	free(tmp);
	return rc;
}

int kf_mkdir_p(const char *path, struct kf_err *err)
{
	char buf[PATH_MAX];
	if (!*path) /* the walk below starts after the first byte */
		return kf_err_set(err, KF_EINVAL, "empty directory path");
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return kf_err_set(err, KF_ERANGE, "%s: path too long", path);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return kf_err_set(err, KF_EIO,
					  "%s: cannot create directory: %s",
					  buf, strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	/* mkdir() says EEXIST for a file too: the last component must be a
	 * directory, or the caller's files inside it would fail later. */
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return kf_err_set(err, KF_EIO, "%s: not a directory", path);
	return 0;
}

int kf_file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The cache and executable directories are worked out once and then only
 * read; the lock makes the first use safe from several threads at once
 * (`redteam --jobs`, the farm): two threads cutting the same buffer at its
 * last slash once gave the directory above the executable's. */
static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static char cache_dir[PATH_MAX];

void kf_cache_dir_set(const char *dir)
{
	pthread_mutex_lock(&dirs_lock);
	snprintf(cache_dir, sizeof(cache_dir), "%s", dir);
	pthread_mutex_unlock(&dirs_lock);
}

const char *kf_cache_dir(void)
{
	pthread_mutex_lock(&dirs_lock);
	char *dir = cache_dir;
	if (!dir[0]) {
		const char *k = getenv("KFORGE_CACHE");
		const char *x = getenv("XDG_CACHE_HOME");
		const char *h = getenv("HOME");
		if (k && *k)
			snprintf(dir, sizeof(cache_dir), "%s", k);
		else if (x && *x)
			snprintf(dir, sizeof(cache_dir), "%s/kforge", x);
		else if (h && *h)
			snprintf(dir, sizeof(cache_dir), "%s/.cache/kforge",
				 h);
		else
			snprintf(dir, sizeof(cache_dir), "/tmp/kforge-cache");
	}
	pthread_mutex_unlock(&dirs_lock);
	return dir;
}

char *kf_path_join(const char *a, const char *b)
{
	size_t n = strlen(a);
	if (n && a[n - 1] == '/')
		return kf_xasprintf("%s%s", a, b);
	return kf_xasprintf("%s/%s", a, b);
}

const char *kf_exe_dir(void)
{
	static char dir[PATH_MAX];
	pthread_mutex_lock(&dirs_lock);
	if (!dir[0]) {
		char got[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", got, sizeof(got) - 1);
		if (n <= 0) {
			snprintf(got, sizeof(got), ".");
		} else {
			got[n] = '\0';
			char *slash = strrchr(got, '/');
			if (slash && slash != got)
				*slash = '\0';
		}
		memcpy(dir, got, sizeof(dir));
	}
	pthread_mutex_unlock(&dirs_lock);
	return dir;
}

char *kf_bwrap_path(void)
{
	const char *k = getenv("KFORGE_BWRAP");
	if (k)
		return kf_is_executable(k) ? kf_xstrdup(k) : NULL;
	if (kf_is_executable("/usr/bin/bwrap"))
		return kf_xstrdup("/usr/bin/bwrap");
	char *p = kf_path_join(kf_exe_dir(), "bin/bwrap");
	if (kf_is_executable(p))
		return p;
	free(p);
	return NULL;
}
