/*
 * extract.c: finds the code to evaluate in a model's reply: the last
 * complete fenced C/CUDA/C++ block that defines kf_entry.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kforge/prompt.h>

/* Info-string words accepted as C, CUDA or C++ (compared without case). */
static const char *const tags[] = {"",	  "c",	 "cuda", "cu",
				   "cpp", "c++", "cxx",	 "cc"};

static int tag_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		if (strlen(tags[i]) == n && strncasecmp(tags[i], s, n) == 0)
			return 1;
	return 0;
}

/* The end of the line that starts at p: its '\n' or the NUL. */
static const char *eol(const char *p)
{
	const char *e = strchr(p, '\n');
	return e ? e : p + strlen(p);
}

/*
 * If the line at p is a fence, returns the number of backticks (>= 3) and
 * sets *info to what follows them. Up to three spaces may indent it.
 */
static size_t fence_at(const char *p, const char **info)
{
	int indent = 0;
	while (*p == ' ' && indent < 3) {
		p++;
		indent++;
	}
	size_t n = 0;
	while (p[n] == '`')
		n++;
	if (n < 3)
		return 0;
	*info = p + n;
	return n;
}

/* True when the line at p closes a fence of `ticks` backticks. */
static int closes(const char *p, size_t ticks)
{
	const char *info = NULL;
	size_t n = fence_at(p, &info);
	if (n < ticks)
		return 0;
	for (const char *q = info; *q && *q != '\n'; q++)
		if (*q != ' ' && *q != '\t' && *q != '\r')
			return 0;
	return 1;
}

/* Does [s, e) contain "kf_entry"? */
static int mentions_entry(const char *s, const char *e)
{
	static const char word[] = "kf_entry";
	size_t w = sizeof(word) - 1;
	for (const char *p = s; p + w <= e; p++)
		if (memcmp(p, word, w) == 0)
			return 1;
	return 0;
}

char *kf_prompt_extract_code(const char *reply, size_t max_bytes)
{
	const char *best = NULL, *best_end = NULL;
	if (!reply)
		return NULL;
	/* Reasoning models think before they answer; only the answer
	 * counts. */
	const char *p = reply;
	for (const char *t = strstr(reply, "</think>"); t;
	     t = strstr(t + 1, "</think>"))
		p = t + strlen("</think>");
	while (*p) {
		const char *info = NULL;
		size_t ticks = fence_at(p, &info);
		const char *line_end = eol(p);
		if (!ticks || memchr(info, '`', (size_t)(line_end - info))) {
			p = *line_end ? line_end + 1 : line_end;
			continue;
		}
		/* The first word of the info string is the language. */
		const char *w = info;
		while (*w == ' ' || *w == '\t')
			w++;
		size_t wn = 0;
		while (w[wn] && w[wn] != ' ' && w[wn] != '\t' &&
		       w[wn] != '\n' && w[wn] != '\r' && w[wn] != '{')
			wn++;
		int lang_ok = tag_ok(w, wn);
		if (!*line_end)
			break; /* a fence on the last line opens nothing */
		const char *body = line_end + 1, *q = body;
		while (*q && !closes(q, ticks)) {
			const char *e = eol(q);
			q = *e ? e + 1 : e;
		}
		if (!*q)
			break; /* unterminated: the reply was cut off */
		if (lang_ok && mentions_entry(body, q)) {
			best = body;
			best_end = q;
		}
		const char *e = eol(q);
		p = *e ? e + 1 : e;
	}
	if (!best)
		return NULL;
	size_t n = (size_t)(best_end - best);
	if (n > max_bytes)
		return NULL;
	char *code = kf_xmalloc(n + 1);
	memcpy(code, best, n);
	code[n] = 0;
	return code;
}

/* The next character of C source that is neither white space nor inside a
 * comment, from *p on (advancing *p past it); '\0' at the end. String and
 * character literals are taken as they are. */
static char next_significant(const char **p)
{
	const char *s = *p;
	for (;;) {
		while (*s && isspace((unsigned char)*s))
			s++;
		if (s[0] == '/' && s[1] == '/') {
			while (*s && *s != '\n')
				s++;
			continue;
		}
		if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");
			s = e ? e + 2 : s + strlen(s);
			continue;
		}
		break;
	}
	char c = *s;
	*p = *s ? s + 1 : s;
	return c;
}

bool kf_prompt_same_code(const char *a, const char *b)
{
	if (!a || !b)
		return false;
	for (;;) {
		char x = next_significant(&a), y = next_significant(&b);
		if (x != y)
			return false;
		if (!x)
			return true;
	}
}

const char *kf_prompt_after(const char *text, const char *prefix)
{
	const char *t = text, *p = prefix;
	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			return t;
		while (*t && isspace((unsigned char)*t))
			t++;
		if (*t != *p)
			return NULL;
		t++;
		p++;
	}
}
