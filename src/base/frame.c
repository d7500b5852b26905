/*
 * frame.c: length-prefixed JSON frames (4-byte little-endian length, then
 * JSON), the wire format between the supervisor and its workers.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kforge/base.h>

static int write_all(int fd, const void *data, size_t bytes, struct kf_err *err)
{
	/* A write to a pipe whose reader has gone raises SIGPIPE, which would
	 * end the caller (a supervisor whose worker died): block it for the
	 * writes, and take back the one a failed write raised, so that the
	 * caller gets KF_EIO instead. */
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGPIPE);
	const char *p = data;
	int rc = 0;
	while (bytes) {
		ssize_t n = write(fd, p, bytes);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;
			if (n < 0 && e == EPIPE && !was_pending) {
				const struct timespec zero = {0, 0};
				sigtimedwait(&pipe_set, NULL, &zero);
			}
			rc = kf_err_set(err, KF_EIO, "frame write: %s",
					n < 0 ? strerror(e) : "closed");
			break;
		}
		p += n;
		bytes -= (size_t)n;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int kf_frame_write(int fd, const cJSON *msg, struct kf_err *err)
{
	char *text = cJSON_PrintUnformatted(msg);
	KF_ASSERT(text);
	size_t n = strlen(text);
	int rc;
	if (n > KF_FRAME_CAP) {
		rc = kf_err_set(err, KF_ERANGE,
				"frame of %zu bytes exceeds the cap of %u", n,
				KF_FRAME_CAP);
		goto out;
	}
	uint8_t hdr[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
			  (uint8_t)(n >> 24)};
	rc = write_all(fd, hdr, 4, err);
	if (!rc)
		rc = write_all(fd, text, n, err);
out:
	free(text);
	return rc;
}

static int read_all(int fd, void *data, size_t bytes, uint64_t deadline_ns,
		    struct kf_err *err)
{
	char *p = data;
	while (bytes) {
		if (deadline_ns) {
			uint64_t now = kf_now_ns();
			if (now >= deadline_ns)
				return kf_err_set(
				    err, KF_ETIMEDOUT,
				    "no frame before the deadline");
			struct pollfd pfd = {fd, POLLIN, 0};
			int ms = (int)((deadline_ns - now) / 1000000ull) + 1;
			int r = poll(&pfd, 1, ms);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				continue;
		}
		ssize_t n = read(fd, p, bytes);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return kf_err_set(err, KF_EIO, "frame read: %s",
					  strerror(errno));
		if (n == 0)
			return kf_err_set(err, KF_EIO,
					  "the peer closed the pipe");
		p += n;
		bytes -= (size_t)n;
	}
	return 0;
}

int kf_frame_read(int fd, uint64_t deadline_ns, cJSON **out, struct kf_err *err)
{
	uint8_t hdr[4];
	int rc = read_all(fd, hdr, 4, deadline_ns, err);
	if (rc)
		return rc;
	uint32_t n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 |
		     (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	if (n > KF_FRAME_CAP)
		return kf_err_set(err, KF_EPROTO,
				  "frame of %u bytes exceeds the cap of %u", n,
				  KF_FRAME_CAP);
	char *buf = kf_xmalloc((size_t)n + 1);
	rc = read_all(fd, buf, n, deadline_ns, err);
	if (rc)
		goto out;
	buf[n] = '\0';
	/* A lone surrogate escape, which Python's json writes for a string
	 * holding one (a candidate's exception message), is read as U+FFFD:
	 * cJSON would refuse the frame, and the candidate's failure would
	 * become the engine's. */
	kf_json_lone_surrogates(buf, buf, n);
	cJSON *msg = cJSON_ParseWithLength(buf, n);
	if (!msg || !cJSON_IsObject(msg)) {
		cJSON_Delete(msg);
		rc = kf_err_set(err, KF_EPROTO,
				"frame of %u bytes is not a JSON object", n);
		goto out;
	}
	*out = msg;
out:
	free(buf);
	return rc;
}
