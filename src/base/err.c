/*
 * err.c: error codes and messages, allocation that cannot return NULL,
 * assertions for programmer errors, and logging to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/base.h>

const char *kf_strerror(int code)
{
	switch (code) {
	case KF_OK:
		return "success";
	case KF_EINVAL:
		return "invalid input";
	case KF_EIO:
		return "input/output error";
	case KF_ENOENT:
		return "not found";
	case KF_ETIMEDOUT:
		return "timed out";
	case KF_ERANGE:
		return "size limit exceeded";
	case KF_EPROTO:
		return "protocol error";
	case KF_ECHILD:
		return "child process failed";
	case KF_ENOSYS:
		return "not available";
	case KF_EFAULT:
		return "device fault";
	}
	return "unknown error";
}

int kf_err_set(struct kf_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

void kf_err_prefix(struct kf_err *err, const char *fmt, ...)
{
	if (!err)
		return;
	char pre[512], old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* A message that no longer fits is cut at the end. */
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", pre, old) >=
	    (int)sizeof(err->msg))
		err->msg[sizeof(err->msg) - 1] = '\0';
}

static void oom(size_t bytes)
{
	fprintf(stderr, "kforge: out of memory allocating %zu bytes\n", bytes);
	abort();
}

void *kf_xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	if (!p)
		oom(bytes);
	return p;
}

void *kf_xcalloc(size_t n, size_t bytes)
{
	void *p = calloc(n ? n : 1, bytes ? bytes : 1);
	if (!p)
		oom(n * bytes);
	return p;
}

void *kf_xrealloc(void *p, size_t bytes)
{
	void *q = realloc(p, bytes ? bytes : 1);
	if (!q)
		oom(bytes);
	return q;
}

char *kf_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = kf_xmalloc(n);
	memcpy(p, s, n);
	return p;
}

char *kf_xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	KF_ASSERT(n >= 0);
	char *p = kf_xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void kf_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "kforge: %s:%d: assertion failed: %s\n", file, line,
		what);
	abort();
}

static int log_level(void)
{
	static int level = -1;
	if (level < 0) {
		const char *s = getenv("KFORGE_LOG");
		level = KF_LOG_WARN;
		if (s && !strcmp(s, "error"))
			level = KF_LOG_ERROR;
		else if (s && !strcmp(s, "info"))
			level = KF_LOG_INFO;
		else if (s && !strcmp(s, "debug"))
			level = KF_LOG_DEBUG;
	}
	return level;
}

void kf_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info",
					    "debug"};
	if (level > log_level())
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "kforge: %s: ", names[level]);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
