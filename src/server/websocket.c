/*
 * websocket.c: RFC 6455 for OpenEnv's /ws endpoint: the handshake's accept
 * key (SHA-1 and base64, here: libmicrohttpd exposes neither), text frames
 * in and out, and one session's loop over a socket the HTTP layer has
 * upgraded. What a message means is openenv.c's.
 *
 * A session has two threads: the caller's answers messages in order (a
 * step takes seconds), and a reader takes frames off the socket meanwhile,
 * answering pings at once so that a client's keepalive (the websockets
 * library pings every 20 s) does not time out during a long step.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server_int.h"

/* ---- SHA-1 (FIPS 180-4), only for the handshake ---- */

struct sha1 {
	uint32_t h[5];
	uint64_t bytes;
	unsigned char block[64];
	size_t used;
};

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(struct sha1 *c, const unsigned char *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = c->h[0], b = c->h[1], d = c->h[3], e = c->h[4];
	uint32_t cc = c->h[2];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & cc) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ cc ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & cc) | (b & d) | (cc & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ cc ^ d;
			k = 0xca62c1d6;
		}
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = cc;
		cc = rol(b, 30);
		b = a;
		a = t;
	}
	c->h[0] += a;
	c->h[1] += b;
	c->h[2] += cc;
	c->h[3] += d;
	c->h[4] += e;
}

static void sha1_update(struct sha1 *c, const void *data, size_t n)
{
	const unsigned char *p = data;
	c->bytes += n;
	while (n) {
		size_t k = 64 - c->used < n ? 64 - c->used : n;
		memcpy(c->block + c->used, p, k);
		c->used += k;
		p += k;
		n -= k;
		if (c->used == 64) {
			sha1_block(c, c->block);
			c->used = 0;
		}
	}
}

static void sha1_final(struct sha1 *c, unsigned char out[20])
{
	uint64_t bits = c->bytes * 8;
	unsigned char pad = 0x80, zero = 0, len[8];
	sha1_update(c, &pad, 1);
	while (c->used != 56)
		sha1_update(c, &zero, 1);
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_update(c, len, 8);
	for (int i = 0; i < 20; i++)
		out[i] = (unsigned char)(c->h[i / 4] >> (24 - 8 * (i % 4)));
}

void kf_server_ws_accept(const char *key, char out[29])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct sha1 c = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
			  0xc3d2e1f0},
			 0,
			 {0},
			 0};
	unsigned char d[21] = {0};
	sha1_update(&c, key, strlen(key));
	sha1_update(&c, guid, strlen(guid));
	sha1_final(&c, d);
	/* 20 bytes: six groups of three, then two bytes and one '='. */
	char *o = out;
	for (int i = 0; i < 21; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 |
			     (i + 2 < 21 ? d[i + 2] : 0);
		*o++ = b64[(v >> 18) & 63];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = i == 18 ? '=' : b64[v & 63];
	}
	*o = 0;
}

/* ---- frames ---- */

enum {
	OP_CONT = 0,
	OP_TEXT = 1,
	OP_BINARY = 2,
	OP_CLOSE = 8,
	OP_PING = 9,
	OP_PONG = 10,
};

/* Close codes (RFC 6455 section 7.4.1). */
enum {
	WS_NORMAL = 1000,
	WS_PROTOCOL = 1002,
	WS_UNSUPPORTED = 1003,
	WS_POLICY = 1008,
	WS_TOO_BIG = 1009,
};

/* Messages waiting for an answer, at most this many. */
#define WS_QUEUE_MAX 64

struct ws_msg {
	char *text;
	size_t len;
	struct ws_msg *next;
};

struct ws {
	struct kf_server *s;
	int fd;
	const char *extra; /* read past the handshake, consumed first */
	size_t extra_len, extra_at;
	size_t cap; /* one message's bytes */

	pthread_mutex_t send_lock; /* one frame at a time */
	pthread_mutex_t lock;	   /* everything below */
	pthread_cond_t cond;
	struct ws_msg *head, *tail;
	int queued;
	bool ended;	  /* the reader is done: EOF, close or error */
	bool close_sent;  /* our close frame is out */
};

static int read_all(struct ws *w, void *dst, size_t n)
{
	unsigned char *p = dst;
	while (n && w->extra_at < w->extra_len) {
		*p++ = (unsigned char)w->extra[w->extra_at++];
		n--;
	}
	while (n) {
		ssize_t r = recv(w->fd, p, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Sends one unmasked frame (servers do not mask: section 5.1). */
static int send_frame(struct ws *w, int op, const void *data, size_t n)
{
	unsigned char head[10];
	size_t h = 0;
	head[h++] = (unsigned char)(0x80 | op);
	if (n < 126) {
		head[h++] = (unsigned char)n;
	} else if (n <= 0xffff) {
		head[h++] = 126;
		head[h++] = (unsigned char)(n >> 8);
		head[h++] = (unsigned char)n;
	} else {
		head[h++] = 127;
		for (int i = 7; i >= 0; i--)
			head[h++] = (unsigned char)((uint64_t)n >> (8 * i));
	}
	int rc = 0;
	pthread_mutex_lock(&w->send_lock);
	const unsigned char *parts[2] = {head, data};
	size_t lens[2] = {h, n};
	for (int k = 0; k < 2 && !rc; k++) {
		const unsigned char *p = parts[k];
		size_t left = lens[k];
		while (left) {
			ssize_t r = send(w->fd, p, left, MSG_NOSIGNAL);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				rc = -1;
				break;
			}
			p += r;
			left -= (size_t)r;
		}
	}
	pthread_mutex_unlock(&w->send_lock);
	return rc;
}

/* Our close frame, once: code and a reason of at most 123 bytes. */
static void send_close(struct ws *w, int code, const char *reason)
{
	pthread_mutex_lock(&w->lock);
	bool sent = w->close_sent;
	w->close_sent = true;
	pthread_mutex_unlock(&w->lock);
	if (sent)
		return;
	unsigned char b[125];
	size_t n = strlen(reason);
	if (n > 123)
		n = 123;
	b[0] = (unsigned char)(code >> 8);
	b[1] = (unsigned char)code;
	memcpy(b + 2, reason, n);
	send_frame(w, OP_CLOSE, b, n + 2);
}

static void ended(struct ws *w)
{
	pthread_mutex_lock(&w->lock);
	w->ended = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* The reader: frames in, whole text messages onto the queue. */
static void *reader_main(void *arg)
{
	struct ws *w = arg;
	struct kf_strbuf msg = KF_STRBUF_INIT;
	bool in_msg = false;
	int code = 0;
	const char *why = "";
	for (;;) {
		unsigned char h[2], mask[4];
		if (read_all(w, h, 2))
			break;
		int op = h[0] & 15;
		bool fin = h[0] & 0x80, masked = h[1] & 0x80;
		uint64_t n = h[1] & 127;
		if (n == 126 || n == 127) {
			unsigned char e[8];
			int k = n == 126 ? 2 : 8;
			if (read_all(w, e, (size_t)k))
				break;
			n = 0;
			for (int i = 0; i < k; i++)
				n = n << 8 | e[i];
		}
		if (h[0] & 0x70) {
			code = WS_PROTOCOL;
			why = "no extension was negotiated";
			break;
		}
		if (!masked) {
			code = WS_PROTOCOL;
			why = "client frames must be masked";
			break;
		}
		bool control = op >= 8;
		if (control && (n > 125 || !fin)) {
			code = WS_PROTOCOL;
			why = "a control frame is short and whole";
			break;
		}
		if (!control && n > w->cap - msg.len) {
			code = WS_TOO_BIG;
			why = "the message is over the server's body cap";
			break;
		}
		if (read_all(w, mask, 4))
			break;
		char *p = kf_xmalloc(n + 1);
		if (read_all(w, p, (size_t)n)) {
			free(p);
			break;
		}
		for (uint64_t i = 0; i < n; i++)
			p[i] ^= (char)mask[i % 4];
		if (op == OP_PING) {
			send_frame(w, OP_PONG, p, (size_t)n);
		} else if (op == OP_CLOSE) {
			/* Echo its code (section 5.5.1) unless ours is out. */
			int c = n >= 2 ? ((unsigned char)p[0] << 8 |
					  (unsigned char)p[1])
				       : WS_NORMAL;
			free(p);
			send_close(w, c, "");
			break;
		} else if (op == OP_TEXT || op == OP_BINARY ||
			   op == OP_CONT) {
			if ((op == OP_CONT) != in_msg) {
				free(p);
				code = WS_PROTOCOL;
				why = in_msg ? "a new message inside a "
					       "fragmented one"
					     : "a continuation of no message";
				break;
			}
			if (op == OP_BINARY) {
				free(p);
				code = WS_UNSUPPORTED;
				why = "OpenEnv's messages are text (JSON)";
				break;
			}
			in_msg = true;
			kf_strbuf_add(&msg, p, (size_t)n);
			if (fin) {
				in_msg = false;
				struct ws_msg *m = kf_xcalloc(1, sizeof(*m));
				m->len = msg.len;
				m->text = kf_strbuf_detach(&msg);
				pthread_mutex_lock(&w->lock);
				bool full = w->queued >= WS_QUEUE_MAX;
				if (!full) {
					if (w->tail)
						w->tail->next = m;
					else
						w->head = m;
					w->tail = m;
					w->queued++;
					pthread_cond_broadcast(&w->cond);
				}
				pthread_mutex_unlock(&w->lock);
				if (full) {
					free(m->text);
					free(m);
					free(p);
					code = WS_POLICY;
					why = "too many messages waiting for "
					      "an answer";
					break;
				}
			}
		} else if (op != OP_PONG) {
			free(p);
			code = WS_PROTOCOL;
			why = "unknown opcode";
			break;
		}
		free(p);
	}
	if (code)
		send_close(w, code, why);
	kf_strbuf_release(&msg);
	ended(w);
	return NULL;
}

void kf_server_ws_serve(struct kf_server *s, int fd, const char *extra,
			size_t extra_len)
{
	struct ws w;
	memset(&w, 0, sizeof(w));
	w.s = s;
	w.fd = fd;
	w.extra = extra;
	w.extra_len = extra ? extra_len : 0;
	w.cap = kf_server_body_cap(s);
	pthread_mutex_init(&w.send_lock, NULL);
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	/* The HTTP layer's sockets are non-blocking; the session's threads
	 * block on theirs. */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	pthread_t reader;
	struct srv_openenv *o = srv_openenv_open(s);
	if (pthread_create(&reader, NULL, reader_main, &w)) {
		send_close(&w, 1011, "the server cannot start a thread");
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
		bool stop = w.close_sent;
		pthread_mutex_unlock(&w.lock);
		if (!m)
			break; /* the reader ended and nothing is left */
		bool close = false;
		char *answer = stop ? NULL
				    : srv_openenv_message(o, m->text, m->len,
							  &close);
		free(m->text);
		free(m);
		if (answer)
			send_frame(&w, OP_TEXT, answer, strlen(answer));
		free(answer);
		if (close) {
			/* {"type": "close"}: the session ends
			 * (http_server.py:1429-1431); the client's close
			 * frame answers ours, or the socket closes. */
			send_close(&w, WS_NORMAL, "session closed");
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 5;
			pthread_mutex_lock(&w.lock);
			while (!w.ended && pthread_cond_timedwait(
					       &w.cond, &w.lock, &until) == 0)
				;
			pthread_mutex_unlock(&w.lock);
			break;
		}
	}
	shutdown(fd, SHUT_RDWR);
	pthread_join(reader, NULL);
	while (w.head) {
		struct ws_msg *m = w.head;
		w.head = m->next;
		free(m->text);
		free(m);
	}
out:
	/* The connection was the session: its episode ends with it. */
	srv_openenv_close(o);
	pthread_mutex_destroy(&w.send_lock);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
}
