/*
 * kforge-serve.c: the reward service's HTTP server (`kforge serve` runs it):
 * libmicrohttpd, a thread per connection, in front of src/server. It caps
 * request bodies (413, without reading past the cap) and answers 408 to a
 * client whose body has not arrived within --client-timeout (stalled or
 * trickling), then closes its connection. A WebSocket handshake on /ws
 * (OpenEnv's sessions, docs/rl.md) is answered 101 and the connection
 * handed to kf_server_ws_serve in a thread of its own. Run as `kforge-serve
 * --eval-child ...` it is the process that evaluates one item
 * (kf_exec_child_main, include/kforge/exec.h).
 *
 * Kept out of build/kforge so that the CLI does not need libmicrohttpd (nor
 * libwslay and nettle, which src/server/websocket.c uses).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include <kforge/base.h>
#include <kforge/search.h>
#include <kforge/exec.h>
#include <kforge/server.h>

#include "serve_usage.h"

/* A thread per connection, each with this stack: thousands of waiting
 * requests (a training step sent one rollout per call) take address space,
 * not memory. */
#define SERVE_THREAD_STACK (1u << 20)

struct http {
	struct kf_server *srv;
	double client_timeout_s;
	/* Requests whose body is still coming in, for the watchdog. */
	pthread_mutex_t lock;
	struct conn *receiving;
	int active; /* requests begun and not completed */
	bool stop;
	struct wsconn *ws; /* WebSocket sessions, under lock */
	int n_ws;
};

/* One upgraded connection: an OpenEnv session on /ws. */
struct wsconn {
	struct http *h;
	int fd;
	struct MHD_UpgradeResponseHandle *urh;
	char *extra; /* read past the handshake */
	size_t extra_len;
	struct wsconn *prev, *next;
};

/* One request's state across the access handler's calls. */
struct conn {
	struct kf_strbuf body;
	uint64_t started_ns;
	int fd;		 /* the connection's socket */
	bool answered;	 /* a response is queued (an early 4xx) */
	bool registered; /* in http.receiving */
	bool cut;	 /* answered on the socket itself, then shut */
	struct conn *prev, *next;
};

static enum MHD_Result send_answer(struct MHD_Connection *c,
				   struct kf_server_response *r)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    strlen(r->body), r->body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type",
				r->content_type ? r->content_type
						: "application/json");
	if (r->retry_after > 0) {
		char v[16];
		snprintf(v, sizeof(v), "%d", r->retry_after);
		MHD_add_response_header(resp, "Retry-After", v);
	}
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void unregister(struct http *h, struct conn *k)
{
	pthread_mutex_lock(&h->lock);
	if (k->registered) {
		if (k->prev)
			k->prev->next = k->next;
		else
			h->receiving = k->next;
		if (k->next)
			k->next->prev = k->prev;
		k->registered = false;
	}
	pthread_mutex_unlock(&h->lock);
}

/*
 * Answers on the socket itself and shuts it: libmicrohttpd queues no
 * response while a body is arriving, so a 4xx in the middle of one (a
 * body past the cap without Content-Length, a client too slow to send its
 * body) is written directly. The connection's thread is then reading,
 * never writing; the shutdown ends its read and it closes the connection.
 * Under h->lock.
 */
static void cut(struct http *h, struct conn *k, int status, const char *reason,
		const char *code, const char *msg)
{
	struct kf_server_response r;
	kf_server_error(h->srv, status, code, msg, &r);
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			 "Connection: close\r\nContent-Length: %zu\r\n\r\n",
			 status, reason, strlen(r.body));
	if (send(k->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
		(void)!send(k->fd, r.body, strlen(r.body),
			    MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(k->fd, SHUT_RDWR);
	kf_server_response_release(&r);
	k->cut = true;
}

/* Times out requests whose body has not arrived within the client
 * timeout: 408. */
static void *watchdog(void *arg)
{
	struct http *h = arg;
	uint64_t limit = (uint64_t)(h->client_timeout_s * 1e9);
	for (;;) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&h->lock);
		if (h->stop) {
			pthread_mutex_unlock(&h->lock);
			return NULL;
		}
		uint64_t now = kf_now_ns();
		for (struct conn *k = h->receiving; k; k = k->next)
			if (!k->cut && now - k->started_ns > limit) {
				char msg[160];
				snprintf(msg, sizeof(msg),
					 "the request body did not arrive "
					 "within %g s",
					 h->client_timeout_s);
				cut(h, k, 408, "Request Timeout",
				    "request_timeout", msg);
			}
		pthread_mutex_unlock(&h->lock);
	}
}

static enum MHD_Result early_error(struct http *h, struct MHD_Connection *c,
				   struct conn *k, int status, const char *code,
				   const char *msg)
{
	struct kf_server_response r;
	kf_server_error(h->srv, status, code, msg, &r);
	enum MHD_Result ret = send_answer(c, &r);
	kf_server_response_release(&r);
	k->answered = true;
	return ret;
}

static void *ws_main(void *arg)
{
	struct wsconn *w = arg;
	struct http *h = w->h;
	kf_server_ws_serve(h->srv, w->fd, w->extra, w->extra_len);
	pthread_mutex_lock(&h->lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		h->ws = w->next;
	if (w->next)
		w->next->prev = w->prev;
	h->n_ws--;
	pthread_mutex_unlock(&h->lock);
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	free(w->extra);
	free(w);
	return NULL;
}

/* libmicrohttpd has sent the 101: the session runs in a thread of its own
 * (main() ends them at shutdown by shutting their sockets). */
static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls,
		       const char *extra_in, size_t extra_in_size,
		       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)c;
	(void)con_cls;
	struct http *h = cls;
	struct wsconn *w = kf_xcalloc(1, sizeof(*w));
	w->h = h;
	w->fd = sock;
	w->urh = urh;
	if (extra_in_size) {
		w->extra = kf_xmalloc(extra_in_size);
		memcpy(w->extra, extra_in, extra_in_size);
		w->extra_len = extra_in_size;
	}
	pthread_mutex_lock(&h->lock);
	w->next = h->ws;
	if (w->next)
		w->next->prev = w;
	h->ws = w;
	h->n_ws++;
	pthread_mutex_unlock(&h->lock);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, SERVE_THREAD_STACK);
	pthread_t t;
	if (pthread_create(&t, &a, ws_main, w)) {
		/* No thread: the session ends at once, its socket closed. */
		shutdown(sock, SHUT_RDWR);
		ws_main(w);
	}
	pthread_attr_destroy(&a);
}

/* Whether a comma-separated header value holds token (case-insensitive). */
static bool has_token(const char *v, const char *token)
{
	size_t n = strlen(token);
	while (v && *v) {
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		size_t k = strcspn(v, ",");
		size_t e = k;
		while (e && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e == n && !strncasecmp(v, token, n))
			return true;
		v += k;
	}
	return false;
}

/* Answers a WebSocket handshake on /ws (RFC 6455 section 4.2.2) with 101,
 * or returns false when the request is not one (the library answers). */
static bool ws_handshake(struct http *h, struct MHD_Connection *c,
			 const char *url, const char *method,
			 enum MHD_Result *ret)
{
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_UPGRADE);
	if (strcmp(url, "/ws") || strcmp(method, "GET") ||
	    !has_token(up, "websocket"))
		return false;
	const char *conn = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION);
	const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      "Sec-WebSocket-Version");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      "Sec-WebSocket-Key");
	const char *bad = NULL;
	if (!has_token(conn, "upgrade"))
		bad = "Connection must hold Upgrade";
	else if (!ver || strcmp(ver, "13"))
		bad = "Sec-WebSocket-Version must be 13";
	else if (!key || strlen(key) != 24)
		bad = "Sec-WebSocket-Key must be 16 bytes in base64";
	struct MHD_Response *resp;
	if (bad) {
		struct kf_server_response r;
		kf_server_error(h->srv, 400, "bad_handshake", bad, &r);
		resp = MHD_create_response_from_buffer(
		    strlen(r.body), r.body, MHD_RESPMEM_MUST_COPY);
		kf_server_response_release(&r);
		if (!resp) {
			*ret = MHD_NO;
			return true;
		}
		MHD_add_response_header(resp, "Content-Type",
					"application/json");
		MHD_add_response_header(resp, "Sec-WebSocket-Version", "13");
		*ret = MHD_queue_response(c, 400, resp);
		MHD_destroy_response(resp);
		return true;
	}
	char accept[29];
	kf_server_ws_accept(key, accept);
	resp = MHD_create_response_for_upgrade(on_upgrade, h);
	if (!resp) {
		*ret = MHD_NO;
		return true;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	*ret = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	(void)version;
	struct http *h = cls;
	size_t cap = kf_server_body_cap(h->srv);
	struct conn *k = *con_cls;
	if (!k) {
		k = kf_xcalloc(1, sizeof(*k));
		k->started_ns = kf_now_ns();
		pthread_mutex_lock(&h->lock);
		h->active++;
		pthread_mutex_unlock(&h->lock);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		    c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k->fd = ci ? ci->connect_fd : -1;
		*con_cls = k;
		const char *cl = MHD_lookup_connection_value(
		    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > cap) {
			char msg[200];
			snprintf(msg, sizeof(msg),
				 "Content-Length %s is over the body cap of "
				 "%zu bytes",
				 cl, cap);
			return early_error(h, c, k, 413, "body_too_large", msg);
		}
		if (k->fd >= 0) {
			pthread_mutex_lock(&h->lock);
			k->next = h->receiving;
			if (k->next)
				k->next->prev = k;
			h->receiving = k;
			k->registered = true;
			pthread_mutex_unlock(&h->lock);
		}
		return MHD_YES;
	}
	pthread_mutex_lock(&h->lock);
	bool was_cut = k->cut;
	pthread_mutex_unlock(&h->lock);
	if (was_cut)
		return MHD_NO;
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (k->answered)
			return MHD_YES;
		if (k->body.len + n > cap) {
			char msg[200];
			snprintf(msg, sizeof(msg),
				 "the body is over the cap of %zu bytes", cap);
			pthread_mutex_lock(&h->lock);
			cut(h, k, 413, "Content Too Large", "body_too_large",
			    msg);
			pthread_mutex_unlock(&h->lock);
			unregister(h, k);
			return MHD_NO;
		}
		kf_strbuf_add(&k->body, upload, n);
		return MHD_YES;
	}
	/* The body is in: no more a matter for the watchdog. */
	unregister(h, k);
	pthread_mutex_lock(&h->lock);
	was_cut = k->cut;
	pthread_mutex_unlock(&h->lock);
	if (was_cut)
		return MHD_NO;
	if (k->answered)
		return MHD_YES;
	enum MHD_Result ret;
	if (ws_handshake(h, c, url, method, &ret)) {
		k->answered = true;
		return ret;
	}
	struct kf_server_response r;
	kf_server_handle(h->srv, method, url, k->body.buf, k->body.len, &r);
	ret = send_answer(c, &r);
	kf_server_response_release(&r);
	k->answered = true;
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	(void)c;
	(void)why;
	struct http *h = cls;
	struct conn *k = *con_cls;
	if (k) {
		unregister(h, k);
		pthread_mutex_lock(&h->lock);
		h->active--;
		pthread_mutex_unlock(&h->lock);
		kf_strbuf_release(&k->body);
		free(k);
		*con_cls = NULL;
	}
}

enum {
	O_PORT = 256,
	O_HOST,
	O_PORT_FILE,
	O_DB,
	O_TASKS,
	O_BACKEND,
	O_WORKERS,
	O_QUEUE,
	O_DEADLINE,
	O_OPENRLHF_DEADLINE,
	O_OPENRLHF_GROUP_SIZE,
	O_GROUP_WAIT,
	O_MAX_GROUPS,
	O_MAX_BODY,
	O_MAX_CODE,
	O_CLIENT_TIMEOUT,
	O_MAX_CONN,
	O_REWARD,
	O_REWARD_PARAMS,
	O_MAX_TURNS,
	O_MAX_EPISODES,
	O_EPISODE_TTL,
	O_OPENENV_PROBLEM,
	O_TRIALS,
	O_TIME_CAP,
	O_NO_TIMING,
	O_CALL_TIMEOUT,
	O_MEM_LIMIT,
	O_REQUIRE_CUSTOM,
	O_REDIS,
	O_OBJECTIVE,
	O_HELP,
};

static const struct option longopts[] = {
    {"port", required_argument, NULL, O_PORT},
    {"host", required_argument, NULL, O_HOST},
    {"port-file", required_argument, NULL, O_PORT_FILE},
    {"db", required_argument, NULL, O_DB},
    {"tasks", required_argument, NULL, O_TASKS},
    {"backend", required_argument, NULL, O_BACKEND},
    {"workers", required_argument, NULL, O_WORKERS},
    {"queue", required_argument, NULL, O_QUEUE},
    {"deadline", required_argument, NULL, O_DEADLINE},
    {"openrlhf-deadline", required_argument, NULL, O_OPENRLHF_DEADLINE},
    {"openrlhf-group-size", required_argument, NULL, O_OPENRLHF_GROUP_SIZE},
    {"group-wait", required_argument, NULL, O_GROUP_WAIT},
    {"max-groups", required_argument, NULL, O_MAX_GROUPS},
    {"max-body", required_argument, NULL, O_MAX_BODY},
    {"max-code", required_argument, NULL, O_MAX_CODE},
    {"client-timeout", required_argument, NULL, O_CLIENT_TIMEOUT},
    {"max-connections", required_argument, NULL, O_MAX_CONN},
    {"reward", required_argument, NULL, O_REWARD},
    {"reward-params", required_argument, NULL, O_REWARD_PARAMS},
    {"max-turns", required_argument, NULL, O_MAX_TURNS},
    {"max-episodes", required_argument, NULL, O_MAX_EPISODES},
    {"episode-ttl", required_argument, NULL, O_EPISODE_TTL},
    {"openenv-problem", required_argument, NULL, O_OPENENV_PROBLEM},
    {"trials", required_argument, NULL, O_TRIALS},
    {"time-cap", required_argument, NULL, O_TIME_CAP},
    {"no-timing", no_argument, NULL, O_NO_TIMING},
    {"call-timeout-ms", required_argument, NULL, O_CALL_TIMEOUT},
    {"mem-limit-mb", required_argument, NULL, O_MEM_LIMIT},
    {"require-custom-kernel", no_argument, NULL, O_REQUIRE_CUSTOM},
    {"redis", required_argument, NULL, O_REDIS},
    {"objective", required_argument, NULL, O_OBJECTIVE},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static int bad(const char *opt, const char *v, const char *what)
{
	fprintf(stderr, "kforge serve: --%s: '%s' is not %s\n", opt, v, what);
	return 2;
}

/* A number in [lo, hi]; 0 or 2 (a message printed). */
static int num(const char *opt, const char *v, double lo, double hi,
	       double *out)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (!*v || *end || errno || !(x >= lo && x <= hi)) {
		char what[96];
		snprintf(what, sizeof(what), "a number from %g to %g", lo, hi);
		return bad(opt, v, what);
	}
	*out = x;
	return 0;
}

static int opt_name_num(int code, const char *v, double lo, double hi,
			double *out)
{
	for (const struct option *o = longopts; o->name; o++)
		if (o->val == code)
			return num(o->name, v, lo, hi, out);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--eval-child"))
		return kf_exec_child_main(argc - 1, argv + 1);

	struct kf_server_opts so = KF_SERVER_OPTS_INIT;
	double port = 8471, client_timeout = 30, max_conn = 4096, v = 0;
	const char *host = "127.0.0.1", *port_file = NULL;
	bool workers_set = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case O_PORT:
			rc = opt_name_num(c, optarg, 0, 65535, &port);
			break;
		case O_HOST:
			host = optarg;
			break;
		case O_PORT_FILE:
			port_file = optarg;
			break;
		case O_DB:
			so.db_path = optarg;
			break;
		case O_TASKS:
			so.tasks_dir = optarg;
			break;
		case O_BACKEND:
			if (strcmp(optarg, "host") && strcmp(optarg, "cuda"))
				return bad("backend", optarg, "host or cuda");
			so.eo.backend = optarg;
			break;
		case O_WORKERS:
			rc = opt_name_num(c, optarg, 1, KF_SERVER_WORKERS_MAX,
					  &v);
			so.workers = (int)v;
			workers_set = true;
			break;
		case O_QUEUE:
			rc =
			    opt_name_num(c, optarg, 1, KF_SERVER_QUEUE_MAX, &v);
			so.queue_cap = (int)v;
			break;
		case O_DEADLINE:
			rc = opt_name_num(c, optarg, 0.001, 86400,
					  &so.deadline_s);
			break;
		case O_OPENRLHF_DEADLINE:
			rc = opt_name_num(c, optarg, 0.001, 86400,
					  &so.openrlhf_deadline_s);
			break;
		case O_OPENRLHF_GROUP_SIZE:
			rc = opt_name_num(c, optarg, 0, 100000, &v);
			so.openrlhf_group_size = (int)v;
			break;
		case O_GROUP_WAIT:
			rc = opt_name_num(c, optarg, 0.001, 86400,
					  &so.group_wait_s);
			break;
		case O_MAX_GROUPS:
			rc = opt_name_num(c, optarg, 1, 1000000, &v);
			so.max_groups = (int)v;
			break;
		case O_MAX_BODY:
			rc = opt_name_num(c, optarg, 1024, 1 << 30, &v);
			so.body_cap = (size_t)v;
			break;
		case O_MAX_CODE:
			rc = opt_name_num(c, optarg, 64, 1 << 20, &v);
			so.code_cap = (size_t)v;
			break;
		case O_CLIENT_TIMEOUT:
			rc = opt_name_num(c, optarg, 1, 3600, &client_timeout);
			break;
		case O_MAX_CONN:
			rc = opt_name_num(c, optarg, 1, 65536, &max_conn);
			break;
		case O_REWARD:
			so.reward = optarg;
			break;
		case O_REWARD_PARAMS:
			so.reward_params = optarg;
			break;
		case O_MAX_TURNS:
			rc = opt_name_num(c, optarg, 1, 64, &v);
			so.max_turns = (int)v;
			break;
		case O_MAX_EPISODES:
			rc = opt_name_num(c, optarg, 1, 1000000, &v);
			so.max_episodes = (int)v;
			break;
		case O_EPISODE_TTL:
			rc = opt_name_num(c, optarg, 1, 1e7, &so.episode_ttl_s);
			break;
		case O_OPENENV_PROBLEM:
			so.openenv_problem = optarg;
			break;
		case O_TRIALS:
			rc = opt_name_num(c, optarg, 5, 1000, &v);
			so.eo.trials = (int)v;
			break;
		case O_TIME_CAP:
			rc = opt_name_num(c, optarg, 0.01, 3600,
					  &so.eo.time_cap_s);
			break;
		case O_NO_TIMING:
			so.eo.no_timing = true;
			break;
		case O_REQUIRE_CUSTOM:
			so.eo.require_custom_kernel = true;
			break;
		case O_CALL_TIMEOUT:
			rc = opt_name_num(c, optarg, 1, 3.6e6,
					  &so.eo.call_timeout_ms);
			break;
		case O_MEM_LIMIT:
			rc = opt_name_num(c, optarg, 16, 1 << 24, &v);
			so.eo.mem_limit_bytes = (uint64_t)v << 20;
			break;
		case O_REDIS:
			so.redis = optarg;
			break;
		case O_OBJECTIVE:
			so.objective = optarg;
			break;
		case O_HELP:
			fputs(serve_usage_text, stdout);
			return 0;
		default:
			fprintf(stderr, "kforge serve: unknown option %s\n\n%s",
				argv[optind - 1], serve_usage_text);
			return 2;
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "kforge serve: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (so.redis && !workers_set)
		so.workers = KF_SERVER_FARM_WORKERS;
	{
		struct kf_err oerr = KF_ERR_INIT;
		if (kf_search_objective_check(so.objective, &so.eo, &oerr)) {
			fprintf(stderr, "kforge serve: %s\n", oerr.msg);
			return 2;
		}
		if (so.objective && !strcmp(so.objective, "time"))
			so.objective = NULL;
	}
	struct sockaddr_in addr;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
		return bad("host", host, "an IPv4 address");

	/* The main thread waits for these; every other thread blocks them. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct kf_err err = KF_ERR_INIT;
	struct kf_server *srv = NULL;
	if (kf_server_new(&so, &srv, &err)) {
		fprintf(stderr, "kforge serve: %s\n", err.msg);
		return 2;
	}
	struct http h = {srv,	client_timeout, PTHREAD_MUTEX_INITIALIZER,
			 NULL,	0,		false,
			 NULL,	0};
	pthread_t dog;
	if (pthread_create(&dog, NULL, watchdog, &h)) {
		fprintf(stderr, "kforge serve: cannot start a thread\n");
		kf_server_free(srv);
		return 2;
	}
	struct MHD_Daemon *d = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE,
	    (uint16_t)port, NULL, NULL, on_request, &h, MHD_OPTION_SOCK_ADDR,
	    (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned int)client_timeout + 2, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned int)max_conn, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
	    &h, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096,
	    MHD_OPTION_THREAD_STACK_SIZE, (size_t)SERVE_THREAD_STACK,
	    MHD_OPTION_END);
	if (!d) {
		fprintf(stderr,
			"kforge serve: cannot listen on %s:%d (in use?)\n",
			host, (int)port);
		h.stop = true;
		pthread_join(dog, NULL);
		kf_server_free(srv);
		return 2;
	}
	const union MHD_DaemonInfo *info =
	    MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	int bound = info ? info->port : (int)port;
	if (port_file) {
		char text[16];
		int n = snprintf(text, sizeof(text), "%d\n", bound);
		if (kf_file_write_atomic(port_file, text, (size_t)n, &err))
			fprintf(stderr, "kforge serve: %s\n", err.msg);
	}
	fprintf(stderr,
		"kforge serve: listening on http://%s:%d/v1/ (%d "
		"%s, queue %d)\n",
		host, bound, so.workers,
		so.redis ? "evaluations at once on the Redis farm" : "workers",
		so.queue_cap);
	int sig = 0;
	sigwait(&sigs, &sig);
	fprintf(stderr, "kforge serve: %s: stopping\n",
		sig == SIGINT ? "SIGINT" : "SIGTERM");
	MHD_quiesce_daemon(d);
	kf_server_shutdown(srv);
	/* WebSocket sessions end (a step in flight answers first, its
	 * evaluation ended as infra_error); the requests in flight answer:
	 * let the answers go out before the connections are closed, for at
	 * most the client timeout. */
	pthread_mutex_lock(&h.lock);
	for (struct wsconn *w = h.ws; w; w = w->next)
		shutdown(w->fd, SHUT_RD);
	pthread_mutex_unlock(&h.lock);
	uint64_t until = kf_now_ns() + (uint64_t)(client_timeout * 1e9);
	for (;;) {
		pthread_mutex_lock(&h.lock);
		int active = h.active, n_ws = h.n_ws;
		pthread_mutex_unlock(&h.lock);
		if ((!active && !n_ws) || kf_now_ns() > until)
			break;
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
	}
	MHD_stop_daemon(d);
	pthread_mutex_lock(&h.lock);
	h.stop = true;
	pthread_mutex_unlock(&h.lock);
	pthread_join(dog, NULL);
	kf_server_free(srv);
	return 0;
}
