/*
 * serve_proc.h: a real kforge-serve for the tests that talk to it over
 * HTTP (server_test.c, server_openenv_test.c): started on a port of its
 * choosing with the test defaults, stopped, dialled.
 */
#ifndef KFORGE_TESTS_SERVE_PROC_H
#define KFORGE_TESTS_SERVE_PROC_H

#include <stdbool.h>
#include <sys/types.h>

struct kf_test_serve {
	pid_t pid;
	int port;
	char db[512];
};

void kf_test_sleep_ms(int ms);
/* Starts kforge-serve (through `kforge serve` when via_cli) with the test
 * defaults (tests/fixtures, --trials 5, a store in the test's directory)
 * and extra arguments (NULL-terminated): checks only unless the extra
 * arguments set a --time-cap, so that a loaded machine's timing noise
 * cannot turn a verdict. Skips the test where kforge-serve is not built. */
void kf_test_serve_start(struct kf_test_serve *s, bool via_cli,
			 const char *const *extra);
/* Stops it; it must exit 0. */
void kf_test_serve_stop(struct kf_test_serve *s);
struct kf_server;
/* The server library without HTTP (kf_server_handle), with the test
 * defaults (tests/fixtures, checks only, --trials 5, a queue of 4) and a
 * store named db in the test's directory; the caller frees it
 * (kf_server_free). Skips the test where kforge-serve is not built. */
struct kf_server *kf_test_server_lib(const char *db);
/* A connected socket to the loopback port, reads timing out after 180 s. */
int kf_test_dial(int port);
/* One HTTP exchange with the server on port ("Connection: close", a JSON
 * body or none): the status (0 where no status line came) and the body
 * after the headers in *out (malloc'd). Fails no test itself, so that
 * client threads may call it. */
int kf_test_http(int port, const char *method, const char *path,
		 const char *body, char **out);
/* Its first half: the request sent; the connection's fd, to read the
 * answer from. */
int kf_test_http_send(int port, const char *method, const char *path,
		      const char *body);

/* A file's text (malloc'd); fails the test where it cannot be read. */
char *kf_test_text(const char *path);

/* A kernel for tests/fixtures/scale that computes 3x where 2x is asked. */
#define KF_TEST_WRONG_SCALE_SRC                                                \
	"#include <kforge/kernel.h>\n"                                         \
	"int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "       \
	"n_out, void *stream)\n"                                               \
	"{ (void)n_in; (void)n_out; (void)stream;\n"                           \
	"  const float *x = in[0].data; float *y = out[0].data;\n"             \
	"  for (int64_t i = 0; i < kf_numel(&in[0]); i++) y[i] = 3 * x[i];\n"  \
	"  return 0; }\n"

#endif
