/* Takes over the worker: from its first call it reads the supervisor's
 * requests on fd 0 and writes forged replies (every trial passed, a 100x
 * speedup) on the frame pipe, then exits. Defeated: the candidate's process has
 * no frame pipe; it finds nothing to forge and returns zeros. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kforge/kernel.h>

static int frames = -1; /* the worker's private copy of stdout */

static int put(const char *json)
{
	uint32_t n = (uint32_t)strlen(json);
	unsigned char hdr[4] = {(unsigned char)n, (unsigned char)(n >> 8),
				(unsigned char)(n >> 16),
				(unsigned char)(n >> 24)};
	return write(frames, hdr, 4) == 4 &&
	       write(frames, json, n) == (ssize_t)n;
}

static char *get(void)
{
	unsigned char hdr[4];
	size_t got = 0;
	while (got < 4) {
		ssize_t r = read(0, hdr + got, 4 - got);
		if (r <= 0)
			return NULL;
		got += (size_t)r;
	}
	uint32_t n = hdr[0] | hdr[1] << 8 | hdr[2] << 16 |
		     (uint32_t)hdr[3] << 24;
	char *s = malloc((size_t)n + 1);
	for (got = 0; s && got < n;) {
		ssize_t r = read(0, s + got, n - got);
		if (r <= 0) {
			free(s);
			return NULL;
		}
		got += (size_t)r;
	}
	if (s)
		s[n] = '\0';
	return s;
}

static double field(const char *req, const char *key, double dflt)
{
	char pat[32];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(req, pat);
	return p ? atof(p + strlen(pat)) : dflt;
}

/* A trial in which everything passed; the reference's statistics vary from
 * trial to trial so that the task does not look degenerate. */
static int trial(int index)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"ev\":\"trial\",\"index\":%d,\"ref_rc\":0,\"ref_ns\":2e7,"
		 "\"cand_rc\":0,\"cand_ns\":2e5,\"outputs\":[{\"name\":\"y\","
		 "\"n\":4096,\"mismatches\":0,\"unwritten\":0,\"nan_got\":0,"
		 "\"inf_got\":0,\"nan_want\":0,\"inf_want\":0,\"max_abs\":0,"
		 "\"max_rel\":0,\"worst_index\":0,\"worst_got\":%d,"
		 "\"worst_want\":%d,\"l1_err\":0,\"l1_want\":%d,"
		 "\"want_mean\":%d.5,\"want_std\":9,\"want_min\":-%d,"
		 "\"want_max\":%d,\"checksum_ref\":\"%016x\","
		 "\"checksum_1\":\"%016x\",\"checksum_2\":\"%016x\"}],"
		 "\"inputs\":[{\"name\":\"x\","
		 "\"before\":\"00000000000000%02x\","
		 "\"after\":\"00000000000000%02x\"}],\"cand_rc_2\":0}",
		 index, index, index, 1000 + index, index, 50 + index,
		 60 + index, 0x1000 + index, 0x2000 + index, 0x2000 + index,
		 index, index);
	return put(buf);
}

/* Timing samples: 4 ms for the candidate (under the roofline), 400 ms for
 * the reference. */
static int samples(int pairs)
{
	size_t cap = 512 + (size_t)pairs * 64;
	char *buf = malloc(cap);
	const char *arrays[] = {"cand_ns", "ref_ns", "cand_mhz", "ref_mhz",
				"cand_throttled", "ref_throttled",
				"cand_kernels", "cand_streams"};
	const char *value[] = {"4000000", "400000000", "0", "0",
			       "false", "false", "-1", "-1"};
	size_t len = (size_t)snprintf(buf, cap, "{\"ev\":\"samples\"");
	for (int a = 0; a < 8; a++) {
		len += (size_t)snprintf(buf + len, cap - len, ",\"%s\":[",
					arrays[a]);
		for (int i = 0; i < pairs; i++)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s",
						i ? "," : "", value[a]);
		len += (size_t)snprintf(buf + len, cap - len, "]");
	}
	snprintf(buf + len, cap - len,
		 ",\"cand_rc_nonzero\":0,\"cand_cuda_errors\":0,\"check\":"
		 "{\"mismatches\":0,\"unwritten\":0,\"first_bad_pair\":-1,"
		 "\"inputs_intact\":true}}");
	int ok = put(buf);
	free(buf);
	return ok;
}

static void leave(void)
{
	__asm__ volatile("syscall" : : "a"(231 /* exit_group */), "D"(0));
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)in;
	(void)n_in;
	(void)n_out;
	(void)stream;
	struct stat st;
	for (int fd = 3; fd < 16 && frames < 0; fd++)
		if (!fstat(fd, &st) && S_ISFIFO(st.st_mode))
			frames = fd;
	memset(out[0].data, 0, (size_t)kf_numel(&out[0]) * sizeof(float));
	if (frames < 0 || !trial(0))
		return 0; /* no pipe to forge: zeros, and wrong */
	for (char *req; (req = get()); free(req)) {
		if (strstr(req, "\"op\":\"trial\""))
			trial((int)field(req, "index", 0));
		else if (strstr(req, "\"op\":\"time\""))
			samples((int)field(req, "pairs", 10));
		else if (strstr(req, "\"op\":\"quit\""))
			break;
		else
			put("{\"ev\":\"error\",\"message\":\"unknown op\"}");
	}
	leave();
	return 0;
}
