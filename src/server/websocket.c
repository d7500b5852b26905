/*
 * websocket.c: RFC 6455 for OpenEnv's /ws endpoint. The handshake is ours:
 * its accept key here (nettle's SHA-1 and base64), the 101 in the HTTP
 * layer. The frames are libwslay's: it parses and unmasks the client's
 * frames, checks their order (fragments, control frames between them),
 * reserved bits, masking and UTF-8, answers a ping with its payload and a
 * close with a close, and frames what we send. What a message means is
 * openenv.c's.
 *
 * A session has two threads: the caller's answers messages in order (a
 * step takes seconds), and an I/O thread owns the socket meanwhile, so that
 * pings are answered at once and a client's keepalive (the websockets
 * library pings every 20 s) does not time out during a long step. The
 * wslay context is not thread-safe: both threads use it under one lock, and
 * only the I/O thread touches the socket; the answering thread queues its
 * answer and wakes it through an eventfd.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <wslay/wslay.h>

#include "server_int.h"

_Static_assert(BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) == 28,
	       "an accept key is 28 characters");

void kf_server_ws_accept(const char *key, char out[29])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	struct sha1_ctx c;
	uint8_t d[SHA1_DIGEST_SIZE];
	sha1_init(&c);
	sha1_update(&c, strlen(key), (const uint8_t *)key);
	sha1_update(&c, strlen(guid), (const uint8_t *)guid);
	sha1_digest(&c, sizeof(d), d);
	base64_encode_raw(out, sizeof(d), d); /* padded: 28 characters */
	out[28] = 0;
}

/* Messages waiting for an answer, at most this many. */
#define WS_QUEUE_MAX 64

struct ws_msg {
	char *text;
	size_t len;
	struct ws_msg *next;
};

struct ws {
	int fd;
	int wake; /* an eventfd: the answering thread has queued something */
	const char *extra; /* read past the handshake, consumed first */
	size_t extra_len, extra_at;
	size_t cap; /* one message's bytes */

	pthread_mutex_t lock; /* the wslay context and everything below */
	pthread_cond_t cond;
	wslay_event_context_ptr ctx;
	struct kf_strbuf msg; /* the text message coming in */
	bool in_text;	      /* the frame coming in is part of it */
	struct ws_msg *head, *tail;
	int queued;
	bool ended;	/* the I/O thread is done: EOF, close or error */
	bool closing;	/* a close is queued or in: no more answers */
	bool io_failed; /* the socket failed or the client went away */
	int close_code; /* ours, queued once what is before it is out */
	const char *close_why;
};

/* ---- wslay's callbacks (the I/O thread's, under the lock) ---- */

/* What a recv or send gave, as wslay wants it: the bytes, or -1 with the
 * error set (it would block; or the socket failed, or recv's 0: the client
 * went away). */
static ssize_t io_result(wslay_event_context_ptr ctx, struct ws *w, ssize_t r)
{
	if (r > 0)
		return r;
	bool again = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	w->io_failed = !again;
	wslay_event_set_error(ctx, again ? WSLAY_ERR_WOULDBLOCK
					 : WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
		       int flags, void *user)
{
	(void)flags;
	struct ws *w = user;
	if (w->extra_at < w->extra_len) {
		size_t n = w->extra_len - w->extra_at;
		if (n > len)
			n = len;
		memcpy(buf, w->extra + w->extra_at, n);
		w->extra_at += n;
		return (ssize_t)n;
	}
	ssize_t r;
	do
		r = recv(w->fd, buf, len, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	return io_result(ctx, w, r);
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data,
		       size_t len, int flags, void *user)
{
	struct ws *w = user;
	int fl = MSG_NOSIGNAL | MSG_DONTWAIT |
		 (flags & WSLAY_MSG_MORE ? MSG_MORE : 0);
	ssize_t r;
	do
		r = send(w->fd, data, len, fl);
	while (r < 0 && errno == EINTR);
	return io_result(ctx, w, r);
}

/* Fails the connection: our close with its reason (at most 123 bytes),
 * and nothing more is read. */
static void refuse(struct ws *w, int code, const char *why)
{
	wslay_event_queue_close(w->ctx, (uint16_t)code, (const uint8_t *)why,
				strlen(why));
	wslay_event_shutdown_read(w->ctx);
	w->in_text = false;
	w->closing = true;
}

/* A frame begins. The library's own size limit is off: it would refuse
 * with no reason, so a data frame's length is checked here, before any of
 * its payload is kept. */
static void on_frame_start(wslay_event_context_ptr ctx,
			   const struct wslay_event_on_frame_recv_start_arg *a,
			   void *user)
{
	(void)ctx;
	struct ws *w = user;
	w->in_text = false;
	if (w->closing || wslay_is_ctrl_frame(a->opcode))
		return; /* a control frame's payload is the library's */
	if (a->opcode == WSLAY_BINARY_FRAME) {
		refuse(w, WSLAY_CODE_UNSUPPORTED_DATA,
		       "OpenEnv's messages are text (JSON)");
		return;
	}
	if (a->payload_length > w->cap - w->msg.len) {
		char why[120];
		snprintf(why, sizeof(why),
			 "the message is over the server's body cap of %zu "
			 "bytes (--max-body)",
			 w->cap);
		refuse(w, WSLAY_CODE_MESSAGE_TOO_BIG, why);
		return;
	}
	w->in_text = true;
}

/* Part of a frame's payload, unmasked: a text message's is kept. */
static void on_frame_chunk(wslay_event_context_ptr ctx,
			   const struct wslay_event_on_frame_recv_chunk_arg *a,
			   void *user)
{
	(void)ctx;
	struct ws *w = user;
	if (w->in_text && a->data_length)
		kf_strbuf_add(&w->msg, a->data, a->data_length);
}

/* A whole message: a text one goes onto the queue. */
static void on_msg(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *a, void *user)
{
	(void)ctx;
	struct ws *w = user;
	if (w->closing)
		return;
	if (a->opcode == WSLAY_CONNECTION_CLOSE) {
		w->closing = true; /* the library has queued its answer */
		return;
	}
	if (a->opcode != WSLAY_TEXT_FRAME)
		return; /* a ping (the library answers it) or a pong */
	if (w->queued >= WS_QUEUE_MAX) {
		w->msg.len = 0;
		refuse(w, WSLAY_CODE_POLICY_VIOLATION,
		       "too many messages waiting for an answer");
		return;
	}
	struct ws_msg *m = kf_xcalloc(1, sizeof(*m));
	m->len = w->msg.len;
	m->text = kf_strbuf_detach(&w->msg);
	if (w->tail)
		w->tail->next = m;
	else
		w->head = m;
	w->tail = m;
	w->queued++;
	pthread_cond_broadcast(&w->cond);
}

/* ---- the I/O thread ---- */

/* Sends what is queued, our close once nothing is before it; stops where
 * the socket is full. 0, or the library's error. */
static int flush(struct ws *w)
{
	for (;;) {
		if (w->close_code &&
		    !wslay_event_get_queued_msg_count(w->ctx)) {
			wslay_event_queue_close(w->ctx, (uint16_t)w->close_code,
						(const uint8_t *)w->close_why,
						strlen(w->close_why));
			w->close_code = 0;
			w->closing = true;
		}
		if (!wslay_event_want_write(w->ctx))
			return 0;
		int rc = wslay_event_send(w->ctx);
		if (rc || wslay_event_want_write(w->ctx))
			return rc;
	}
}

static void *io_main(void *arg)
{
	struct ws *w = arg;
	bool readable = w->extra_len > 0; /* the bytes past the handshake */
	pthread_mutex_lock(&w->lock);
	for (;;) {
		int rc = 0;
		if (readable && wslay_event_want_read(w->ctx))
			rc = wslay_event_recv(w->ctx);
		if (rc) {
			/* Where the socket did not fail, the library could
			 * not parse a frame (a control frame over 125 bytes
			 * or fragmented, a length not in its shortest form)
			 * and has queued a close: it goes out, once. */
			w->closing = true;
			if (!w->io_failed)
				flush(w);
			break;
		}
		/* Reading stops at a close frame, ours or the client's, and at
		 * a protocol error (the library has queued its close). */
		if (!wslay_event_get_read_enabled(w->ctx))
			w->closing = true;
		if (flush(w))
			break;
		short ev =
		    (short)((wslay_event_want_read(w->ctx) ? POLLIN : 0) |
			    (wslay_event_want_write(w->ctx) ? POLLOUT : 0));
		if (!ev)
			break; /* closed both ways */
		struct pollfd p[2] = {{w->fd, ev, 0}, {w->wake, POLLIN, 0}};
		pthread_mutex_unlock(&w->lock);
		int n = poll(p, 2, -1);
		pthread_mutex_lock(&w->lock);
		if (n < 0 && errno != EINTR)
			break;
		eventfd_t v;
		if (n > 0 && p[1].revents)
			eventfd_read(w->wake, &v);
		readable =
		    n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR));
	}
	w->ended = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* ---- the session ---- */

static void queue_text(struct ws *w, const char *text)
{
	struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)text,
				    strlen(text)};
	pthread_mutex_lock(&w->lock);
	wslay_event_queue_msg(w->ctx, &m); /* not after a close */
	pthread_mutex_unlock(&w->lock);
	eventfd_write(w->wake, 1);
}

void kf_server_ws_serve(struct kf_server *s, int fd, const char *extra,
			size_t extra_len)
{
	static const struct wslay_event_callbacks cb = {
	    .recv_callback = on_recv,
	    .send_callback = on_send,
	    .on_frame_recv_start_callback = on_frame_start,
	    .on_frame_recv_chunk_callback = on_frame_chunk,
	    .on_msg_recv_callback = on_msg,
	};
	struct ws w;
	memset(&w, 0, sizeof(w));
	w.fd = fd;
	w.extra = extra;
	w.extra_len = extra ? extra_len : 0;
	w.cap = kf_server_body_cap(s);
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	struct srv_openenv *o = srv_openenv_open(s);
	pthread_t io;
	bool started = false;
	w.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w.wake >= 0 && !wslay_event_context_server_init(&w.ctx, &cb, &w)) {
		/* Text messages are put together in on_frame_chunk, so that
		 * the cap is checked before a frame's payload is kept. */
		wslay_event_config_set_no_buffering(w.ctx, 1);
		wslay_event_config_set_max_recv_msg_length(w.ctx, UINT64_MAX);
		started = !pthread_create(&io, NULL, io_main, &w);
	}
	if (!started) {
		static const char why[] = "the server cannot start a session";
		/* One try: a fresh socket has room for a close frame. */
		if (w.ctx && !wslay_event_queue_close(
				 w.ctx, WSLAY_CODE_INTERNAL_SERVER_ERROR,
				 (const uint8_t *)why, strlen(why)))
			wslay_event_send(w.ctx);
		shutdown(fd, SHUT_RDWR);
		goto out;
	}
	for (;;) {
		pthread_mutex_lock(&w.lock);
		while (!w.head && !w.ended)
			pthread_cond_wait(&w.cond, &w.lock);
		struct ws_msg *m = w.head;
		if (m) {
			w.head = m->next;
			if (!w.head)
				w.tail = NULL;
			w.queued--;
		}
		bool stop = w.closing;
		pthread_mutex_unlock(&w.lock);
		if (!m)
			break; /* the I/O thread ended and nothing is left */
		bool close = false;
		char *answer =
		    stop ? NULL
			 : srv_openenv_message(o, m->text, m->len, &close);
		free(m->text);
		free(m);
		if (answer)
			queue_text(&w, answer);
		free(answer);
		if (close) {
			/* {"type": "close"}: the session ends
			 * (http_server.py:1429-1431); the client's close
			 * frame answers ours, or the socket closes. */
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 5;
			pthread_mutex_lock(&w.lock);
			w.close_code = WSLAY_CODE_NORMAL_CLOSURE;
			w.close_why = "session closed";
			eventfd_write(w.wake, 1);
			while (!w.ended && pthread_cond_timedwait(
					       &w.cond, &w.lock, &until) == 0)
				;
			pthread_mutex_unlock(&w.lock);
			break;
		}
	}
	shutdown(fd, SHUT_RDWR);
	eventfd_write(w.wake, 1);
	pthread_join(io, NULL);
	while (w.head) {
		struct ws_msg *m = w.head;
		w.head = m->next;
		free(m->text);
		free(m);
	}
out:
	/* The connection was the session: its episode ends with it. */
	srv_openenv_close(o);
	wslay_event_context_free(w.ctx);
	if (w.wake >= 0)
		close(w.wake);
	kf_strbuf_release(&w.msg);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
}
