/* base_test.c: tests of the base module: hashes, strings, files, frames and
 * child processes, each checked the way a caller of include/kforge/base.h
 * would see it. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/base.h>

#include "harness.h"

/* ---- helpers ---- */

static void sha_hex(const void *data, size_t bytes, char hex[65])
{
	struct kf_sha256 s;
	kf_sha256_init(&s);
	kf_sha256_update(&s, data, bytes);
	kf_sha256_final_hex(&s, hex);
}

static char *tmp_path(const char *name)
{
	return kf_path_join(kf_test_tmpdir(), name);
}

static void write_file(const char *path, const void *data, size_t bytes)
{
	FILE *f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(data, 1, bytes, f) == bytes);
	CHECK(fclose(f) == 0);
}

/* Number of entries of dir other than "." and "..". */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	CHECK(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Writes raw bytes to a pipe (small writes never block). */
static void write_raw(int fd, const void *data, size_t bytes)
{
	CHECK(write(fd, data, bytes) == (ssize_t)bytes);
}

static void write_header(int fd, uint32_t n)
{
	uint8_t h[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
			(uint8_t)(n >> 24)};
	write_raw(fd, h, 4);
}

/* ---- SHA-256 and FNV-1a ---- */

static void test_base_sha256_known_answers(void)
{
	/* FIPS 180-2 appendix B and the empty string. */
	char hex[65];
	sha_hex("", 0, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb924"
		       "27ae41e4649b934ca495991b7852b855");
	sha_hex("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
		       "b00361a396177a9cb410ff61f20015ad");
	const char *m448 =
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha_hex(m448, strlen(m448), hex);
	CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039"
		       "a33ce45964ff2167f6ecedd419db06c1");
	const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklm"
			   "ghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
			   "mnopqrstnopqrstu";
	sha_hex(m896, strlen(m896), hex);
	CHECK_STR(hex, "cf5b16a778af8380036ce59e7b049237"
		       "0b249b11e8f07a51afac45037afee9d1");
}

static void test_base_sha256_padding_boundaries(void)
{
	/* Lengths around the 56-byte point where the length field no longer
	 * fits in the last block (values from Python's hashlib). */
	static const struct {
		size_t n;
		const char *hex;
	} cases[] = {
	    {55, "9f4390f8d30c2dd92ec9f095b65e2b9a"
		 "e9b0a925a5258e241c9f1e910f734318"},
	    {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f"
		 "590ce20f1bde7090ef7970686ec6738a"},
	    {63, "7d3e74a05d7db15bce4ad9ec0658ea98"
		 "e3f06eeecf16b4c6fff2da457ddc2f34"},
	    {64, "ffe054fe7ae0cb6dc65c3af9b61d5209"
		 "f439851db43d0ba5997337df154668eb"},
	    {65, "635361c48bb9eab14198e76ea8ab7f1a"
		 "41685d6ad62aa9146d301d4f17eb0ae0"},
	    {119, "31eba51c313a5c08226adf18d4a359cf"
		  "dfd8d2e816b13f4af952f7ea6584dcfb"},
	    {120, "2f3d335432c70b580af0e8e1b3674a7c"
		  "020d683aa5f73aaaedfdc55af904c21c"},
	};
	char a[128], hex[65];
	memset(a, 'a', sizeof(a));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sha_hex(a, cases[i].n, hex);
		CHECK_MSG(!strcmp(hex, cases[i].hex), "length %zu: %s",
			  cases[i].n, hex);
	}
}

static void test_base_sha256_million_a_in_odd_chunks(void)
{
	/* One million 'a's, fed in chunks of 1, 3, 7, ... 127 bytes, so that
	 * chunks straddle block boundaries in every possible way. */
	static char a[1000];
	memset(a, 'a', sizeof(a));
	struct kf_sha256 s;
	kf_sha256_init(&s);
	size_t left = 1000000, k = 0;
	while (left) {
		size_t take = 2 * (k++ % 64) + 1;
		if (take > left)
			take = left;
		kf_sha256_update(&s, a, take);
		left -= take;
	}
	char hex[65];
	kf_sha256_final_hex(&s, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
		       "f1809a48a497200e046d39ccc7112cd0");
}

static void test_base_sha256_update_with_zero_bytes(void)
{
	struct kf_sha256 s;
	kf_sha256_init(&s);
	kf_sha256_update(&s, "ab", 2);
	kf_sha256_update(&s, "", 0);
	kf_sha256_update(&s, "c", 1);
	char hex[65];
	kf_sha256_final_hex(&s, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
		       "b00361a396177a9cb410ff61f20015ad");
}

static void test_base_fnv1a64_known_answers(void)
{
	/* The published FNV-1a 64-bit values; seed 0 is plain FNV-1a. */
	CHECK(kf_fnv1a64("", 0, 0) == 0xcbf29ce484222325ull);
	CHECK(kf_fnv1a64("a", 1, 0) == 0xaf63dc4c8601ec8cull);
	CHECK(kf_fnv1a64("foobar", 6, 0) == 0x85944171f73967e8ull);
	CHECK(kf_fnv1a64("foobar", 6, 1) != kf_fnv1a64("foobar", 6, 0));
}

/* ---- errors ---- */

static void test_base_strerror_names_every_code(void)
{
	const int codes[] = {KF_OK,	   KF_EINVAL, KF_EIO,	 KF_ENOENT,
			     KF_ETIMEDOUT, KF_ERANGE, KF_EPROTO, KF_ECHILD,
			     KF_ENOSYS,	   KF_EFAULT};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *s = kf_strerror(codes[i]);
		CHECK(s && *s);
		CHECK_MSG(strcmp(s, "unknown error"), "code %d", codes[i]);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(s, kf_strerror(codes[j])));
	}
	CHECK_STR(kf_strerror(-1000), "unknown error");
	CHECK_STR(kf_strerror(KF_ETIMEDOUT), "timed out");
}

static void test_base_err_set_and_prefix(void)
{
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_err_set(&err, KF_EINVAL, "field '%s': must be %d", "n", 3) ==
	      KF_EINVAL);
	CHECK(err.code == KF_EINVAL);
	CHECK_STR(err.msg, "field 'n': must be 3");
	kf_err_prefix(&err, "%s", "tasks/x/task.json");
	CHECK_STR(err.msg, "tasks/x/task.json: field 'n': must be 3");
	CHECK(err.code == KF_EINVAL);
	kf_err_prefix(&err, "load %d", 2);
	CHECK_STR(err.msg, "load 2: tasks/x/task.json: field 'n': must be 3");

	/* A NULL err is allowed: the code still comes back. */
	CHECK(kf_err_set(NULL, KF_EIO, "x") == KF_EIO);
	kf_err_prefix(NULL, "y");
}

static void test_base_err_prefix_truncates_long_messages(void)
{
	struct kf_err err = KF_ERR_INIT;
	char big[2000];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	kf_err_set(&err, KF_EIO, "%s", big);
	CHECK(strlen(err.msg) == sizeof(err.msg) - 1);
	kf_err_prefix(&err, "prefix");
	CHECK(strlen(err.msg) == sizeof(err.msg) - 1);
	CHECK(!strncmp(err.msg, "prefix: mmm", 11));
}

/* ---- strbuf ---- */

static void test_base_strbuf_empty_is_empty_string(void)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	CHECK_STR(kf_strbuf_str(&sb), "");
	CHECK(sb.len == 0);
	char *s = kf_strbuf_detach(&sb);
	CHECK_STR(s, "");
	free(s);
	kf_strbuf_release(&sb);
	kf_strbuf_release(&sb); /* releasing twice is harmless */
}

static void test_base_strbuf_grows_and_keeps_content(void)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; i < 100000; i++) {
		char c = (char)('a' + i % 26);
		kf_strbuf_add(&sb, &c, 1);
	}
	CHECK(sb.len == 100000);
	CHECK(sb.alloc > sb.len);
	CHECK(strlen(kf_strbuf_str(&sb)) == 100000);
	for (int i = 0; i < 100000; i++)
		CHECK(sb.buf[i] == 'a' + i % 26);

	/* Bytes with a NUL inside are kept; len counts them. */
	kf_strbuf_release(&sb);
	kf_strbuf_add(&sb, "a\0b", 3);
	CHECK(sb.len == 3);
	CHECK(!memcmp(sb.buf, "a\0b", 4));
	kf_strbuf_release(&sb);
	CHECK(sb.buf == NULL && sb.len == 0);
}

static void test_base_strbuf_addf_formats_and_appends(void)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, "x=");
	kf_strbuf_addf(&sb, "%d, y=%.2f, s=%s", 42, 1.5, "ok");
	CHECK_STR(kf_strbuf_str(&sb), "x=42, y=1.50, s=ok");
	CHECK(sb.len == strlen("x=42, y=1.50, s=ok"));

	/* A formatted piece far larger than the first allocation. */
	char big[5000];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	kf_strbuf_addf(&sb, "[%s]", big);
	CHECK(sb.len == strlen("x=42, y=1.50, s=ok") + 2 + 4999);
	CHECK(sb.buf[sb.len] == '\0');
	CHECK(sb.buf[sb.len - 1] == ']');
	CHECK(sb.buf[sb.len - 2] == 'z');
	kf_strbuf_release(&sb);
}

static void test_base_strbuf_detach_hands_over_and_empties(void)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	kf_strbuf_addstr(&sb, "hello");
	char *s = kf_strbuf_detach(&sb);
	CHECK_STR(s, "hello");
	CHECK(sb.buf == NULL && sb.len == 0 && sb.alloc == 0);
	CHECK_STR(kf_strbuf_str(&sb), "");
	/* The strbuf is reusable and does not share the detached buffer. */
	kf_strbuf_addstr(&sb, "again");
	CHECK_STR(kf_strbuf_str(&sb), "again");
	CHECK_STR(s, "hello");
	free(s);
	kf_strbuf_release(&sb);
}

/* ---- files ---- */

static void test_base_file_read_whole_file(void)
{
	char *path = tmp_path("data.bin");
	char data[20000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	write_file(path, data, sizeof(data));
	struct kf_err err = KF_ERR_INIT;
	char *buf = NULL;
	size_t n = 0;
	CHECK(kf_file_read(path, sizeof(data), &buf, &n, &err) == 0);
	CHECK(n == sizeof(data));
	CHECK(!memcmp(buf, data, n));
	CHECK(buf[n] == '\0');
	free(buf);
	free(path);
}

static void test_base_file_read_empty_file(void)
{
	char *path = tmp_path("empty");
	write_file(path, "", 0);
	char *buf = NULL;
	size_t n = 99;
	CHECK(kf_file_read(path, 0, &buf, &n, NULL) == 0);
	CHECK(n == 0);
	CHECK_STR(buf, "");
	free(buf);
	free(path);
}

static void test_base_file_read_cap_names_the_path(void)
{
	char *path = tmp_path("big.txt");
	char data[10001];
	memset(data, 'x', sizeof(data));
	write_file(path, data, sizeof(data));
	struct kf_err err = KF_ERR_INIT;
	char *buf = NULL;
	/* Exactly at the cap is fine; one byte over is refused. */
	CHECK(kf_file_read(path, 10001, &buf, NULL, &err) == 0);
	free(buf);
	buf = NULL;
	CHECK(kf_file_read(path, 10000, &buf, NULL, &err) == KF_ERANGE);
	CHECK(err.code == KF_ERANGE);
	CHECK(buf == NULL);
	CHECK_CONTAINS(err.msg, path);
	CHECK_CONTAINS(err.msg, "10000");
	free(path);
}

static void test_base_file_read_missing_is_enoent(void)
{
	char *path = tmp_path("no-such-file");
	struct kf_err err = KF_ERR_INIT;
	char *buf = NULL;
	CHECK(kf_file_read(path, 100, &buf, NULL, &err) == KF_ENOENT);
	CHECK(err.code == KF_ENOENT);
	CHECK_CONTAINS(err.msg, path);
	CHECK(buf == NULL);
	CHECK(!kf_file_exists(path));
	free(path);
}

static void test_base_file_write_atomic_leaves_no_temp_file(void)
{
	char *path = tmp_path("out.json");
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_file_write_atomic(path, "{\"a\":1}", 7, &err) == 0);
	CHECK(count_entries(kf_test_tmpdir()) == 1);
	char *buf = NULL;
	CHECK(kf_file_read(path, 100, &buf, NULL, &err) == 0);
	CHECK_STR(buf, "{\"a\":1}");
	free(buf);

	/* Replacing it: the new content, shorter, and still one file. */
	CHECK(kf_file_write_atomic(path, "2", 1, &err) == 0);
	CHECK(count_entries(kf_test_tmpdir()) == 1);
	CHECK(kf_file_read(path, 100, &buf, NULL, &err) == 0);
	CHECK_STR(buf, "2");
	free(buf);

	/* Zero bytes make an empty file. */
	CHECK(kf_file_write_atomic(path, "", 0, &err) == 0);
	CHECK(kf_file_read(path, 100, &buf, NULL, &err) == 0);
	CHECK_STR(buf, "");
	free(buf);
	CHECK(count_entries(kf_test_tmpdir()) == 1);
	free(path);
}

static void test_base_file_write_atomic_into_missing_dir_fails(void)
{
	char *path = tmp_path("missing/out.txt");
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_file_write_atomic(path, "x", 1, &err) == KF_EIO);
	CHECK_CONTAINS(err.msg, "missing/out.txt");
	CHECK(count_entries(kf_test_tmpdir()) == 0);
	free(path);
}

static void test_base_mkdir_p_nested(void)
{
	char *path = tmp_path("a/b/c/d");
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_mkdir_p(path, &err) == 0);
	CHECK(is_dir(path));
	/* Again: existing directories are fine. */
	CHECK(kf_mkdir_p(path, &err) == 0);
	free(path);

	path = tmp_path("x/y/");
	CHECK(kf_mkdir_p(path, &err) == 0);
	CHECK(is_dir(path));
	free(path);

	/* A file where a directory should be is refused and named. */
	char *file = tmp_path("plain");
	write_file(file, "x", 1);
	path = tmp_path("plain/sub");
	CHECK(kf_mkdir_p(path, &err) == KF_EIO);
	CHECK_CONTAINS(err.msg, "plain");
	free(path);
	free(file);
}

/* kf_exe_dir from several threads at once on its first use: each must get
 * the executable's directory. Two threads cutting one buffer at its last
 * slash once gave the directory above (`redteam --jobs 2` in CI then looked
 * for kforge-worker beside build/). Each child process starts fresh. */
static pthread_barrier_t exe_dir_start;

static void *exe_dir_racer(void *out)
{
	pthread_barrier_wait(&exe_dir_start);
	*(const char **)out = kf_exe_dir();
	return NULL;
}

static void test_base_exe_dir_first_use_from_threads(void)
{
	char want[4096];
	ssize_t n = readlink("/proc/self/exe", want, sizeof(want) - 1);
	CHECK(n > 0);
	want[n] = '\0';
	*strrchr(want, '/') = '\0';
	int bad = 0;
	for (int round = 0; round < 200 && !bad; round++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			enum { T = 8 };
			pthread_t th[T];
			const char *got[T];
			pthread_barrier_init(&exe_dir_start, NULL, T);
			for (int i = 0; i < T; i++)
				pthread_create(&th[i], NULL, exe_dir_racer,
					       &got[i]);
			for (int i = 0; i < T; i++)
				pthread_join(th[i], NULL);
			_exit(strcmp(got[0], want) != 0);
		}
		int st = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	CHECK(!bad);
	CHECK_STR(kf_exe_dir(), want);
}

static void test_base_mkdir_p_refuses_an_existing_file(void)
{
	/* mkdir -p on a path that is a regular file must fail: callers go
	 * on to create files inside it. */
	char *file = tmp_path("plain");
	write_file(file, "x", 1);
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_mkdir_p(file, &err) != 0);
	CHECK_CONTAINS(err.msg, file);
	free(file);
}

static void test_base_mkdir_p_empty_path(void)
{
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_mkdir_p("", &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "empty");
}

static void test_base_path_join(void)
{
	char *p = kf_path_join("a", "b");
	CHECK_STR(p, "a/b");
	free(p);
	p = kf_path_join("a/", "b");
	CHECK_STR(p, "a/b");
	free(p);
	p = kf_path_join("/", "etc");
	CHECK_STR(p, "/etc");
	free(p);
}

static void test_base_utc_iso8601_shape(void)
{
	char *s = kf_utc_iso8601();
	CHECK(strlen(s) == 20);
	CHECK(s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
	      s[16] == ':' && s[19] == 'Z');
	free(s);
}

/* ---- JSON helpers ---- */

/* Lone surrogate escapes become \ufffd in place; pairs, escaped
 * backslashes and other escapes are kept; cJSON then reads the text. */
static void test_base_json_lone_surrogates(void)
{
	struct {
		const char *in, *out;
		long n;
	} cases[] = {
	    {"{\"a\": \"x \\ud800 y\"}", "{\"a\": \"x \\ufffd y\"}", 1},
	    {"{\"a\": \"\\uDC00\"}", "{\"a\": \"\\ufffd\"}", 1},
	    {"{\"a\": \"\\ud83d\\ude00\"}", "{\"a\": \"\\ud83d\\ude00\"}", 0},
	    {"{\"a\": \"\\ud800\\u0041\"}", "{\"a\": \"\\ufffd\\u0041\"}", 1},
	    {"{\"a\": \"\\\\ud800\"}", "{\"a\": \"\\\\ud800\"}", 0},
	    {"{\"a\": \"\\ude00\\ud83d\"}", "{\"a\": \"\\ufffd\\ufffd\"}", 2},
	    {"{\"a\": \"\\ud800\\ud800\\udc00\"}",
	     "{\"a\": \"\\ufffd\\ud800\\udc00\"}", 1},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		size_t len = strlen(cases[k].in);
		char *t = kf_xstrdup(cases[k].in);
		CHECK(kf_json_lone_surrogates(cases[k].in, NULL, len) ==
		      cases[k].n);
		CHECK(kf_json_lone_surrogates(cases[k].in, t, len) ==
		      cases[k].n);
		CHECK_STR(t, cases[k].out);
		cJSON *j = cJSON_Parse(t);
		CHECK_MSG(j, "%s", t);
		cJSON_Delete(j);
		free(t);
	}
	/* Cut short at the end: nothing read past len. */
	CHECK(kf_json_lone_surrogates("\"\\ud8", NULL, 5) == 0);
}

static void test_base_json_helpers(void)
{
	cJSON *o = cJSON_Parse("{\"s\":\"v\",\"n\":2.5,\"b\":true}");
	CHECK(o);
	CHECK_STR(kf_json_str(o, "s"), "v");
	CHECK(kf_json_str(o, "n") == NULL);
	CHECK(kf_json_str(o, "nope") == NULL);
	CHECK(kf_json_num(o, "n", -1) == 2.5);
	CHECK(kf_json_num(o, "s", -1) == -1);
	CHECK(kf_json_num(o, "b", -1) == -1);
	char *text = kf_json_print(o);
	CHECK_STR(text, "{\"s\":\"v\",\"n\":2.5,\"b\":true}");
	free(text);
	cJSON_Delete(o);
}

/* ---- frames ---- */

static void test_base_frame_round_trip(void)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	struct kf_err err = KF_ERR_INIT;
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "op", "run");
	cJSON_AddNumberToObject(msg, "n", 7);
	CHECK(kf_frame_write(fds[1], msg, &err) == 0);
	CHECK(kf_frame_write(fds[1], msg, &err) == 0);
	for (int i = 0; i < 2; i++) {
		cJSON *got = NULL;
		CHECK(kf_frame_read(fds[0], 0, &got, &err) == 0);
		CHECK(cJSON_Compare(got, msg, 1));
		cJSON_Delete(got);
	}
	cJSON_Delete(msg);
	close(fds[0]);
	close(fds[1]);
}

static void test_base_frame_larger_than_pipe_buffer(void)
{
	/* A 1 MiB frame needs a concurrent reader: a child writes it. */
	int fds[2];
	CHECK(pipe(fds) == 0);
	size_t n = 1u << 20;
	char *s = kf_xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + i % 26);
	s[n] = '\0';
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "blob", s);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(kf_frame_write(fds[1], msg, NULL) ? 1 : 0);
	}
	close(fds[1]);
	struct kf_err err = KF_ERR_INIT;
	cJSON *got = NULL;
	CHECK(kf_frame_read(fds[0], kf_now_ns() + 60000000000ull, &got, &err) ==
	      0);
	CHECK_STR(kf_json_str(got, "blob"), s);
	/* Then end of file: the writer is gone. */
	cJSON *more = NULL;
	CHECK(kf_frame_read(fds[0], 0, &more, &err) == KF_EIO);
	CHECK(more == NULL);
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cJSON_Delete(got);
	cJSON_Delete(msg);
	free(s);
	close(fds[0]);
}

static void test_base_frame_over_cap_is_refused(void)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	write_header(fds[1], KF_FRAME_CAP + 1);
	struct kf_err err = KF_ERR_INIT;
	cJSON *got = NULL;
	CHECK(kf_frame_read(fds[0], 0, &got, &err) == KF_EPROTO);
	CHECK(err.code == KF_EPROTO);
	CHECK(got == NULL);
	CHECK_CONTAINS(err.msg, "16777217");

	write_header(fds[1], 0xffffffffu);
	CHECK(kf_frame_read(fds[0], 0, &got, &err) == KF_EPROTO);
	CHECK(got == NULL);
	close(fds[0]);
	close(fds[1]);
}

static void test_base_frame_write_over_cap_is_refused(void)
{
	/* Nothing reaches the pipe when the message is too large. */
	int fds[2];
	CHECK(pipe(fds) == 0);
	size_t n = KF_FRAME_CAP + 1;
	char *s = kf_xmalloc(n + 1);
	memset(s, 'q', n);
	s[n] = '\0';
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "blob", s);
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_frame_write(fds[1], msg, &err) == KF_ERANGE);
	CHECK(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
	char c;
	CHECK(read(fds[0], &c, 1) < 0 && errno == EAGAIN);
	cJSON_Delete(msg);
	free(s);
	close(fds[0]);
	close(fds[1]);
}

static void test_base_frame_write_to_closed_pipe_is_eio(void)
{
	/* A worker that died must not take the supervisor with it: the write
	 * fails with KF_EIO instead of killing this process by SIGPIPE. */
	int fds[2];
	CHECK(pipe(fds) == 0);
	close(fds[0]);
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "op", "run");
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_frame_write(fds[1], msg, &err) == KF_EIO);
	CHECK_CONTAINS(err.msg, "frame write");
	/* No SIGPIPE is left pending or blocked behind the call. */
	sigset_t set;
	CHECK(sigpending(&set) == 0 && !sigismember(&set, SIGPIPE));
	CHECK(sigprocmask(SIG_BLOCK, NULL, &set) == 0 &&
	      !sigismember(&set, SIGPIPE));
	cJSON_Delete(msg);
	close(fds[1]);
}

static void test_base_frame_eof_is_eio(void)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	close(fds[1]);
	struct kf_err err = KF_ERR_INIT;
	cJSON *got = NULL;
	CHECK(kf_frame_read(fds[0], 0, &got, &err) == KF_EIO);
	CHECK(got == NULL);
	close(fds[0]);

	/* End of file inside a header, and inside a body. */
	CHECK(pipe(fds) == 0);
	write_raw(fds[1], "\x05\x00", 2);
	close(fds[1]);
	CHECK(kf_frame_read(fds[0], 0, &got, &err) == KF_EIO);
	close(fds[0]);
	CHECK(pipe(fds) == 0);
	write_header(fds[1], 10);
	write_raw(fds[1], "{\"a\"", 4);
	close(fds[1]);
	CHECK(kf_frame_read(fds[0], 0, &got, &err) == KF_EIO);
	CHECK(got == NULL);
	close(fds[0]);
}

static void test_base_frame_deadline_without_writer(void)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	struct kf_err err = KF_ERR_INIT;
	cJSON *got = NULL;
	uint64_t deadline = kf_now_ns() + 100000000ull; /* 100 ms */
	CHECK(kf_frame_read(fds[0], deadline, &got, &err) == KF_ETIMEDOUT);
	CHECK(err.code == KF_ETIMEDOUT);
	CHECK(got == NULL);
	/* It never gives up before the deadline. */
	CHECK(kf_now_ns() >= deadline);

	/* A frame that stops halfway also runs into the deadline. */
	write_header(fds[1], 20);
	write_raw(fds[1], "{\"a\":", 5);
	deadline = kf_now_ns() + 100000000ull;
	CHECK(kf_frame_read(fds[0], deadline, &got, &err) == KF_ETIMEDOUT);
	CHECK(got == NULL);
	close(fds[0]);
	close(fds[1]);
}

static void test_base_frame_non_object_is_refused(void)
{
	const char *payloads[] = {"[1,2,3]", "42",	"\"text\"",
				  "null",    "{\"a\":", "not json"};
	for (size_t i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		int fds[2];
		CHECK(pipe(fds) == 0);
		size_t n = strlen(payloads[i]);
		write_header(fds[1], (uint32_t)n);
		write_raw(fds[1], payloads[i], n);
		struct kf_err err = KF_ERR_INIT;
		cJSON *got = NULL;
		CHECK_MSG(kf_frame_read(fds[0], 0, &got, &err) == KF_EPROTO,
			  "payload %s", payloads[i]);
		CHECK(got == NULL);
		close(fds[0]);
		close(fds[1]);
	}
	/* An empty frame is not an object either. */
	int fds[2];
	CHECK(pipe(fds) == 0);
	write_header(fds[1], 0);
	cJSON *got = NULL;
	CHECK(kf_frame_read(fds[0], 0, &got, NULL) == KF_EPROTO);
	close(fds[0]);
	close(fds[1]);
}

/* ---- child processes ---- */

static void test_base_proc_run_captures_stdout_and_stderr(void)
{
	char *argv[] = {"/bin/sh", "-c", "echo a; echo b >&2", NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	struct kf_err err = KF_ERR_INIT;
	int status = -1;
	CHECK(kf_proc_run(argv, 20000, 4096, &out, &status, &err) == 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Two pipes: the order between them is not defined. */
	CHECK(out.len == 4);
	CHECK_CONTAINS(kf_strbuf_str(&out), "a\n");
	CHECK_CONTAINS(kf_strbuf_str(&out), "b\n");
	kf_strbuf_release(&out);
}

/* What a child wrote on stdout before a line on stderr comes before it,
 * whole: a --json result of 60 KB (in the pipe at once), then the status
 * line. */
static void test_base_proc_run_keeps_stdout_before_a_later_stderr_line(void)
{
	/* One write of each: the whole result is in the pipe when the line
	 * comes, as from the CLI's single fflush of its JSON. */
	char *argv[] = {"/usr/bin/python3", "-c",
			"import os; os.write(1, b'a' * 60000); "
			"os.write(2, b'ERR\\n')",
			NULL};
	for (int k = 0; k < 20; k++) {
		struct kf_strbuf out = KF_STRBUF_INIT;
		int status = -1;
		CHECK(kf_proc_run(argv, 20000, 1 << 20, &out, &status, NULL) ==
		      0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK_MSG(out.len == 60004, "%zu bytes", out.len);
		const char *t = kf_strbuf_str(&out);
		CHECK_MSG(strspn(t, "a") == 60000 &&
			      !strcmp(t + 60000, "ERR\n"),
			  "the stderr line at byte %zu", strcspn(t, "E"));
		kf_strbuf_release(&out);
	}
}

/* stdout whole, then stderr, however the child's writes fall: a result
 * of two writes with a progress line written before it and one between
 * (the reader has read the first write by then), as kforge bench --json
 * printed a 6 KB summary through stdio's 4 KB buffer. */
static void test_base_proc_run_keeps_stdout_whole_across_writes(void)
{
	char *argv[] = {"/usr/bin/python3", "-c",
			"import os, time; os.write(2, b'[1/2]\\n'); "
			"os.write(1, b'a' * 4096); time.sleep(0.3); "
			"os.write(2, b'[2/2]\\n'); os.write(1, b'b' * 2000)",
			NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = -1;
	CHECK(kf_proc_run(argv, 20000, 1 << 20, &out, &status, NULL) == 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	const char *t = kf_strbuf_str(&out);
	CHECK_MSG(out.len == 6108, "%zu bytes", out.len);
	CHECK_MSG(strspn(t, "a") == 4096 && strspn(t + 4096, "b") == 2000 &&
		      !strcmp(t + 6096, "[1/2]\n[2/2]\n"),
		  "the stderr line at byte %zu", strcspn(t, "["));
	kf_strbuf_release(&out);
	/* The cap counts both: 5000 of stdout, none of stderr. */
	CHECK(kf_proc_run(argv, 20000, 5000, &out, &status, NULL) == 0);
	CHECK_MSG(out.len > 5000 && strspn(kf_strbuf_str(&out), "ab") == 5000,
		  "%s", kf_strbuf_str(&out) + 5000);
	CHECK_CONTAINS(kf_strbuf_str(&out) + 5000,
		       "[1108 more bytes of output dropped]");
	kf_strbuf_release(&out);
}

static void test_base_proc_run_exit_status(void)
{
	char *argv[] = {"/bin/sh", "-c", "echo bye; exit 3", NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = -1;
	CHECK(kf_proc_run(argv, 20000, 4096, &out, &status, NULL) == 0);
	CHECK(WIFEXITED(status));
	CHECK(WEXITSTATUS(status) == 3);
	CHECK_STR(kf_strbuf_str(&out), "bye\n");
	char *d = kf_wait_describe(status);
	CHECK_STR(d, "exited with code 3");
	free(d);
	kf_strbuf_release(&out);
}

static void test_base_proc_run_output_cap(void)
{
	/* 10,000 bytes of output ("012345678\n" 1000 times), 100 kept. */
	char *argv[] = {"/bin/sh", "-c",
			"i=0; while [ $i -lt 1000 ]; do echo 012345678; "
			"i=$((i+1)); done",
			NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int status = -1;
	CHECK(kf_proc_run(argv, 60000, 100, &out, &status, NULL) == 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	const char *s = kf_strbuf_str(&out);
	for (int i = 0; i < 100; i++)
		CHECK(s[i] == (i % 10 == 9 ? '\n' : '0' + i % 10));
	CHECK_STR(s + 100, "\n[9900 more bytes of output dropped]\n");
	kf_strbuf_release(&out);
}

static void test_base_proc_run_timeout_kills(void)
{
	char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	struct kf_err err = KF_ERR_INIT;
	int status = -1;
	CHECK(kf_proc_run(argv, 200, 4096, &out, &status, &err) ==
	      KF_ETIMEDOUT);
	CHECK(err.code == KF_ETIMEDOUT);
	CHECK_CONTAINS(err.msg, "/bin/sh");
	/* Killed, not finished: sleep 30 would have exited with 0. */
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	kf_strbuf_release(&out);
}

static void test_base_proc_run_timeout_after_output_closes(void)
{
	/* A child that closes its output and then hangs is still past its
	 * deadline: the caller must hear KF_ETIMEDOUT, not success. */
	char *argv[] = {"/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 30",
			NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	struct kf_err err = KF_ERR_INIT;
	int status = -1;
	CHECK(kf_proc_run(argv, 200, 4096, &out, &status, &err) ==
	      KF_ETIMEDOUT);
	CHECK(err.code == KF_ETIMEDOUT);
	CHECK_CONTAINS(err.msg, "/bin/sh");
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	kf_strbuf_release(&out);
}

static void test_base_proc_run_missing_program(void)
{
	char *argv[] = {"/nonexistent/kforge-no-such-tool", NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	struct kf_err err = KF_ERR_INIT;
	int status = 0;
	CHECK(kf_proc_run(argv, 1000, 4096, &out, &status, &err) == KF_ECHILD);
	CHECK_CONTAINS(err.msg, "/nonexistent/kforge-no-such-tool");
	kf_strbuf_release(&out);
}

static void test_base_proc_first_line(void)
{
	char *argv[] = {"/bin/sh", "-c", "echo first; echo second", NULL};
	char *line = kf_proc_first_line(argv, 20000);
	CHECK_STR(line, "first");
	free(line);
	char *fail[] = {"/bin/sh", "-c", "echo out; exit 1", NULL};
	CHECK(kf_proc_first_line(fail, 20000) == NULL);
}

static void test_base_proc_spawn_pipes(void)
{
	char *cat = kf_which("cat");
	if (!cat)
		SKIP("no cat in PATH");
	char *argv[] = {cat, NULL};
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_spawn(&p, argv, NULL, -1, &err) == 0);
	CHECK(p.pid > 0 && p.to_child >= 0 && p.from_child >= 0);
	write_raw(p.to_child, "hello\n", 6);
	close(p.to_child);
	p.to_child = -1;
	char buf[16];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(buf) &&
	       (n = read(p.from_child, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	CHECK(got == 6 && !memcmp(buf, "hello\n", 6));
	int status = -1;
	long rss = -1;
	CHECK(kf_proc_wait(&p, 20000, &status, &rss) == 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(rss > 0);
	CHECK(p.pid == 0 && p.to_child == -1 && p.from_child == -1);
	/* Killing a reaped process is a no-op. */
	kf_proc_kill(&p, &status);
	free(cat);
}

static void test_base_proc_spawn_kill(void)
{
	char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_spawn(&p, argv, NULL, -1, &err) == 0);
	int status = -1;
	kf_proc_kill(&p, &status);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	CHECK(p.pid == 0);
	char *d = kf_wait_describe(status);
	CHECK_CONTAINS(d, "SIGKILL");
	CHECK_CONTAINS(d, "signal 9");
	free(d);
	kf_proc_kill(&p, &status);
}

/* The soft limit of name ("Max cpu time", ...) in the text of a
 * /proc/<pid>/limits file, or -1 when absent or "unlimited". */
static long long limit_of(const char *limits, const char *name)
{
	const char *p = strstr(limits, name);
	if (!p)
		return -1;
	p += strlen(name);
	while (*p == ' ')
		p++;
	return *p >= '0' && *p <= '9' ? strtoll(p, NULL, 10) : -1;
}

static void test_base_proc_spawn_applies_limits(void)
{
	/* The child reads its own limits from /proc. */
	char *cat = kf_which("cat");
	if (!cat || !kf_file_exists("/proc/self/limits"))
		SKIP("no cat or no /proc");
	struct rlimit cur;
	CHECK(getrlimit(RLIMIT_NPROC, &cur) == 0);
	uint64_t nproc = cur.rlim_max == RLIM_INFINITY || cur.rlim_max > 50000
			     ? 50000
			     : (uint64_t)cur.rlim_max;
	struct kf_limits lim = {0};
	lim.cpu_s = 5;
	lim.fsize_bytes = 1 << 20;
	lim.nproc = nproc;
	lim.no_core = 1;
#if !defined(__SANITIZE_ADDRESS__)
	/* ASan reserves terabytes of address space: never limit it there. */
	lim.as_bytes = 1ull << 30;
#endif
	char *argv[] = {cat, "/proc/self/limits", NULL};
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_spawn(&p, argv, &lim, -1, &err) == 0);
	close(p.to_child);
	p.to_child = -1;
	char buf[8192];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(buf) - 1 &&
	       (n = read(p.from_child, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	int status = -1;
	CHECK(kf_proc_wait(&p, 20000, &status, NULL) == 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(limit_of(buf, "Max cpu time") == 5);
	CHECK(limit_of(buf, "Max file size") == 1 << 20);
	CHECK(limit_of(buf, "Max core file size") == 0);
	CHECK(limit_of(buf, "Max processes") == (long long)nproc);
	if (lim.as_bytes)
		CHECK(limit_of(buf, "Max address space") == 1ll << 30);
	free(cat);
}

static void test_base_proc_spawn_cpu_limit(void)
{
	char *argv[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
	struct kf_limits lim = {0};
	lim.cpu_s = 1;
	lim.no_core = 1;
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_spawn(&p, argv, &lim, -1, &err) == 0);
	int status = -1;
	/* Far longer than the limit: the limit, not the wait, must end it. */
	CHECK(kf_proc_wait(&p, 60000, &status, NULL) == 0);
	CHECK(WIFSIGNALED(status));
	int sig = WTERMSIG(status);
	CHECK_MSG(sig == SIGXCPU || sig == SIGKILL, "signal %d", sig);
	char *d = kf_wait_describe(status);
	CHECK_CONTAINS(d, sig == SIGXCPU ? "SIGXCPU" : "SIGKILL");
	free(d);
}

static void test_base_proc_spawn_fsize_limit(void)
{
	char *file = tmp_path("big.out");
	char *cmd = kf_xasprintf("exec head -c 100000 /dev/zero > '%s'", file);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct kf_limits lim = {0};
	lim.fsize_bytes = 4096;
	lim.no_core = 1;
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_spawn(&p, argv, &lim, -1, &err) == 0);
	int status = -1;
	CHECK(kf_proc_wait(&p, 60000, &status, NULL) == 0);
	CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ,
		  "status 0x%x", status);
	char *d = kf_wait_describe(status);
	CHECK_CONTAINS(d, "SIGXFSZ");
	free(d);
	struct stat st;
	CHECK(stat(file, &st) == 0);
	CHECK(st.st_size <= 4096);
	free(cmd);
	free(file);
}

static void test_base_proc_spawn_missing_path(void)
{
	char *argv[] = {"/nonexistent/dir/kforge-worker", "x", NULL};
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_proc_spawn(&p, argv, NULL, -1, &err) == KF_ECHILD);
	CHECK(err.code == KF_ECHILD);
	CHECK_CONTAINS(err.msg, "/nonexistent/dir/kforge-worker");
	CHECK_CONTAINS(err.msg, strerror(ENOENT));
	CHECK(p.pid == 0 && p.to_child == -1 && p.from_child == -1);
}

static void test_base_wait_describe(void)
{
	/* Wait statuses built by a real child of each kind. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(5);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	char *d = kf_wait_describe(status);
	CHECK_STR(d, "exited with code 5");
	free(d);

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	d = kf_wait_describe(status);
	CHECK_CONTAINS(d, "killed by signal 11");
	CHECK_CONTAINS(d, "SIGSEGV");
	free(d);
}

static void test_base_which(void)
{
	char *sh = kf_which("sh");
	CHECK(sh);
	CHECK(sh[0] == '/');
	CHECK(kf_is_executable(sh));
	free(sh);
	CHECK(kf_which("kforge-surely-not-a-command") == NULL);
	/* A name with a '/' is taken as a path, not searched. */
	char *p = kf_which("/bin/sh");
	CHECK_STR(p, "/bin/sh");
	free(p);
	CHECK(kf_which("/nonexistent/sh") == NULL);
}

static void test_base_which_skips_non_executables(void)
{
	/* PATH = a:b; a holds a non-executable "tool", b an executable one. */
	char *a = tmp_path("a"), *b = tmp_path("b");
	CHECK(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0);
	char *ta = kf_path_join(a, "tool"), *tb = kf_path_join(b, "tool");
	write_file(ta, "#!/bin/sh\n", 10);
	write_file(tb, "#!/bin/sh\n", 10);
	CHECK(chmod(ta, 0644) == 0 && chmod(tb, 0755) == 0);
	char *path = kf_xasprintf("%s:%s", a, b);
	CHECK(setenv("PATH", path, 1) == 0);
	char *w = kf_which("tool");
	CHECK_STR(w, tb);
	CHECK(!kf_is_executable(ta));
	CHECK(!kf_is_executable(a)); /* a directory is not a program */
	free(w);
	free(path);
	free(ta);
	free(tb);
	free(a);
	free(b);
}

static void test_base_text_sanitize_keeps_utf8_and_drops_the_rest(void)
{
	char s[] = "caf\xc3\xa9 "
		   "\xe2\x80\x98ok\xe2\x80\x99\x01\xff\xc3(\xed\xa0\x80\n\tend";
	kf_text_sanitize(s);
	CHECK_STR(s, "caf\xc3\xa9 \xe2\x80\x98ok\xe2\x80\x99??"
		     "?(??"
		     "?\n\tend");
}

KF_TESTS(base) = {
    KF_TEST(test_base_text_sanitize_keeps_utf8_and_drops_the_rest),
    KF_TEST(test_base_sha256_known_answers),
    KF_TEST(test_base_sha256_padding_boundaries),
    KF_TEST(test_base_sha256_million_a_in_odd_chunks),
    KF_TEST(test_base_sha256_update_with_zero_bytes),
    KF_TEST(test_base_fnv1a64_known_answers),
    KF_TEST(test_base_strerror_names_every_code),
    KF_TEST(test_base_err_set_and_prefix),
    KF_TEST(test_base_err_prefix_truncates_long_messages),
    KF_TEST(test_base_strbuf_empty_is_empty_string),
    KF_TEST(test_base_strbuf_grows_and_keeps_content),
    KF_TEST(test_base_strbuf_addf_formats_and_appends),
    KF_TEST(test_base_strbuf_detach_hands_over_and_empties),
    KF_TEST(test_base_file_read_whole_file),
    KF_TEST(test_base_file_read_empty_file),
    KF_TEST(test_base_file_read_cap_names_the_path),
    KF_TEST(test_base_file_read_missing_is_enoent),
    KF_TEST(test_base_file_write_atomic_leaves_no_temp_file),
    KF_TEST(test_base_file_write_atomic_into_missing_dir_fails),
    KF_TEST(test_base_mkdir_p_nested),
    KF_TEST(test_base_exe_dir_first_use_from_threads),
    KF_TEST(test_base_mkdir_p_refuses_an_existing_file),
    KF_TEST(test_base_mkdir_p_empty_path),
    KF_TEST(test_base_path_join),
    KF_TEST(test_base_utc_iso8601_shape),
    KF_TEST(test_base_json_helpers),
    KF_TEST(test_base_json_lone_surrogates),
    KF_TEST(test_base_frame_round_trip),
    KF_TEST(test_base_frame_larger_than_pipe_buffer),
    KF_TEST(test_base_frame_over_cap_is_refused),
    KF_TEST(test_base_frame_write_over_cap_is_refused),
    KF_TEST(test_base_frame_write_to_closed_pipe_is_eio),
    KF_TEST(test_base_frame_eof_is_eio),
    KF_TEST(test_base_frame_deadline_without_writer),
    KF_TEST(test_base_frame_non_object_is_refused),
    KF_TEST(test_base_proc_run_captures_stdout_and_stderr),
    KF_TEST(test_base_proc_run_keeps_stdout_before_a_later_stderr_line),
    KF_TEST(test_base_proc_run_keeps_stdout_whole_across_writes),
    KF_TEST(test_base_proc_run_exit_status),
    KF_TEST(test_base_proc_run_output_cap),
    KF_TEST(test_base_proc_run_timeout_kills),
    KF_TEST(test_base_proc_run_timeout_after_output_closes),
    KF_TEST(test_base_proc_run_missing_program),
    KF_TEST(test_base_proc_first_line),
    KF_TEST(test_base_proc_spawn_pipes),
    KF_TEST(test_base_proc_spawn_kill),
    KF_TEST(test_base_proc_spawn_applies_limits),
    KF_TEST(test_base_proc_spawn_cpu_limit),
    KF_TEST(test_base_proc_spawn_fsize_limit),
    KF_TEST(test_base_proc_spawn_missing_path),
    KF_TEST(test_base_wait_describe),
    KF_TEST(test_base_which),
    KF_TEST(test_base_which_skips_non_executables),
    KF_TESTS_END,
};
