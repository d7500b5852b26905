/* serve_proc.c: a real kforge-serve for the tests (serve_proc.h). */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/server.h>

#include "harness.h"
#include "serve_proc.h"

void kf_test_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

void kf_test_serve_start(struct kf_test_serve *s, bool via_cli,
			 const char *const *extra)
{
	char exe[512], port_file[512], tasks[512];
	snprintf(exe, sizeof(exe), "%s/%s", kf_test_build_dir(),
		 via_cli ? "kforge" : "kforge-serve");
	snprintf(port_file, sizeof(port_file), "%s/port", kf_test_tmpdir());
	snprintf(s->db, sizeof(s->db), "%s/serve.db", kf_test_tmpdir());
	snprintf(tasks, sizeof(tasks), "tests/fixtures");
	char serve[512];
	snprintf(serve, sizeof(serve), "%s/kforge-serve", kf_test_build_dir());
	if (!kf_is_executable(serve))
		SKIP("%s is not built (no libmicrohttpd here)", serve);
	const char *argv[64];
	int n = 0;
	argv[n++] = exe;
	if (via_cli)
		argv[n++] = "serve";
	const char *base[] = {"--port",	  "0",	 "--port-file", port_file,
			      "--db",	  s->db, "--tasks",	tasks,
			      "--trials", "5",	 NULL};
	for (int i = 0; base[i]; i++)
		argv[n++] = base[i];
	bool timed = false;
	for (int i = 0; extra && extra[i]; i++) {
		timed |= !strcmp(extra[i], "--time-cap");
		argv[n++] = extra[i];
	}
	if (!timed)
		argv[n++] = "--no-timing";
	argv[n] = NULL;
	unlink(port_file);
	fflush(NULL);
	s->pid = fork();
	CHECK(s->pid >= 0);
	if (s->pid == 0) {
		/* A failed case exits at once: its server goes with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0 && !getenv("KFORGE_TEST_VERBOSE"))
			dup2(fd, 2);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(port_file, "r");
		if (f) {
			int ok = fscanf(f, "%d", &s->port);
			fclose(f);
			if (ok == 1 && s->port > 0)
				return;
		}
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid)
			CHECK_MSG(0, "kforge-serve exited at start (%d)", st);
		kf_test_sleep_ms(50);
	}
	CHECK_MSG(0, "kforge-serve did not write its port");
}

void kf_test_serve_stop(struct kf_test_serve *s)
{
	kill(s->pid, SIGTERM);
	int st = 0;
	for (int i = 0; i < 200; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				  "kforge-serve ended with status %d", st);
			return;
		}
		kf_test_sleep_ms(50);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
	CHECK_MSG(0, "kforge-serve did not stop on SIGTERM");
}

int kf_test_dial(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	struct timeval tv = {180, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

int kf_test_http_send(int port, const char *method, const char *path,
		      const char *body)
{
	int fd = kf_test_dial(port);
	size_t n = body ? strlen(body) : 0;
	char *head = kf_xasprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				  "Connection: close\r\n"
				  "Content-Type: application/json\r\n"
				  "Content-Length: %zu\r\n\r\n",
				  method, path, n);
	struct kf_strbuf msg = KF_STRBUF_INIT;
	kf_strbuf_addstr(&msg, head);
	if (n)
		kf_strbuf_add(&msg, body, n);
	free(head);
	const char *p = kf_strbuf_str(&msg);
	size_t left = msg.len;
	while (left) {
		ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		p += w;
		left -= (size_t)w;
	}
	kf_strbuf_release(&msg);
	return fd;
}

int kf_test_http(int port, const char *method, const char *path,
		 const char *body, char **out)
{
	int fd = kf_test_http_send(port, method, path, body);
	struct kf_strbuf sb = KF_STRBUF_INIT;
	char buf[16384];
	ssize_t r;
	int e = 0;
	for (;;) {
		r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = r < 0 ? errno : 0;
			break;
		}
		kf_strbuf_add(&sb, buf, (size_t)r);
	}
	close(fd);
	const char *all = kf_strbuf_str(&sb);
	int status = 0;
	if (sscanf(all, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	const char *sep = strstr(all, "\r\n\r\n");
	/* No status line: say what the socket did, for the failing check's
	 * message (a reset, a timeout, or an orderly close with nothing). */
	*out = sep ? kf_xstrdup(sep + 4)
	       : status ? kf_xstrdup("")
			: kf_xasprintf("(no response: %zu bytes, then %s)",
				       sb.len,
				       e ? strerror(e) : "the server closed "
							  "the connection");
	kf_strbuf_release(&sb);
	return status;
}

char *kf_test_text(const char *path)
{
	char *out = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(!kf_file_read(path, 1 << 20, &out, NULL, &err), "%s",
		  err.msg);
	return out;
}

struct kf_server *kf_test_server_lib(const char *db_name)
{
	char exe[512], db[512];
	snprintf(exe, sizeof(exe), "%s/kforge-serve", kf_test_build_dir());
	if (!kf_is_executable(exe))
		SKIP("%s is not built (no libmicrohttpd here)", exe);
	snprintf(db, sizeof(db), "%s/%s", kf_test_tmpdir(), db_name);
	struct kf_server_opts o = KF_SERVER_OPTS_INIT;
	o.tasks_dir = "tests/fixtures";
	o.db_path = db;
	o.eval_exe = exe;
	o.eo.no_timing = true;
	o.eo.trials = 5;
	o.queue_cap = 4;
	struct kf_server *s = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(!kf_server_new(&o, &s, &err), "%s", err.msg);
	return s;
}
