/* strbuf.c: growable NUL-terminated strings (struct kf_strbuf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/base.h>

static void grow(struct kf_strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return;
	size_t n = sb->alloc ? sb->alloc : 64;
	while (n < need)
		n *= 2;
	sb->buf = kf_xrealloc(sb->buf, n);
	sb->alloc = n;
}

void kf_strbuf_add(struct kf_strbuf *sb, const void *data, size_t bytes)
{
	grow(sb, bytes);
	memcpy(sb->buf + sb->len, data, bytes);
	sb->len += bytes;
	sb->buf[sb->len] = '\0';
}

void kf_strbuf_addstr(struct kf_strbuf *sb, const char *s)
{
	kf_strbuf_add(sb, s, strlen(s));
}

void kf_strbuf_vaddf(struct kf_strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	KF_ASSERT(n >= 0);
	grow(sb, (size_t)n);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
}

void kf_strbuf_addf(struct kf_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kf_strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

const char *kf_strbuf_str(const struct kf_strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

char *kf_strbuf_detach(struct kf_strbuf *sb)
{
	char *p = sb->buf ? sb->buf : kf_xstrdup("");
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	return p;
}

void kf_strbuf_release(struct kf_strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

/* Length of the valid UTF-8 sequence at p (2 to 4), or 0. */
static size_t utf8_seq(const unsigned char *p)
{
	size_t n;
	uint32_t cp;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* No overlong forms, surrogates or values past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void kf_text_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		if (*p >= 0x80) {
			size_t n = utf8_seq(p);
			if (n) {
				p += n;
				continue;
			}
			*p = '?';
		} else if (*p < 0x20 && *p != '\n' && *p != '\t') {
			*p = '?';
		} else if (*p == 0x7f) {
			*p = '?';
		}
		p++;
	}
}
