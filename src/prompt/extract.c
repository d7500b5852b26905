/*
 * extract.c: finds the code to evaluate in a model's reply: the last
 * complete fenced C/CUDA/C++ block that defines kf_entry, or for a
 * KernelBench-format task the last fenced Python block that defines
 * ModelNew.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kforge/prompt.h>

/* Info-string words accepted as C, CUDA or C++, and as Python (compared
 * without case); NULL ends each list. */
static const char *const c_tags[] = {"",    "c",   "cuda", "cu", "cpp",
				     "c++", "cxx", "cc",   NULL};
static const char *const py_tags[] = {"", "python", "py", "python3", NULL};

static int tag_ok(const char *const *tags, const char *s, size_t n)
{
	for (size_t i = 0; tags[i]; i++)
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

/* Does [s, e) contain word? */
static int mentions(const char *s, const char *e, const char *word)
{
	size_t w = strlen(word);
	for (const char *p = s; p + w <= e; p++)
		if (memcmp(p, word, w) == 0)
			return 1;
	return 0;
}

char *kf_prompt_extract_code(const char *reply, size_t max_bytes)
{
	return kf_prompt_extract_as(reply, max_bytes, KF_CODE_KERNEL);
}

char *kf_prompt_extract_as(const char *reply, size_t max_bytes,
			   enum kf_code_kind kind)
{
	const char *const *tags = kind == KF_CODE_MODELNEW ? py_tags : c_tags;
	const char *word =
	    kind == KF_CODE_MODELNEW ? "class ModelNew" : "kf_entry";
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
		int lang_ok = tag_ok(tags, w, wn);
		if (!*line_end)
			break; /* a fence on the last line opens nothing */
		const char *body = line_end + 1, *q = body;
		while (*q && !closes(q, ticks)) {
			const char *e = eol(q);
			q = *e ? e + 1 : e;
		}
		if (!*q)
			break; /* unterminated: the reply was cut off */
		if (lang_ok && mentions(body, q, word)) {
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

void kf_prompt_code_hash(const char *code, char hex[65])
{
	struct kf_sha256 h;
	char buf[256];
	size_t n = 0;
	kf_sha256_init(&h);
	for (const char *p = code ? code : "";;) {
		char c = next_significant(&p);
		if (c)
			buf[n++] = c;
		if (!c || n == sizeof(buf)) {
			kf_sha256_update(&h, buf, n);
			n = 0;
		}
		if (!c)
			break;
	}
	kf_sha256_final_hex(&h, hex);
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

enum kf_code_kind kf_prompt_code_kind(const char *task_path)
{
	return task_path && kf_task_is_kernelbench(task_path) ? KF_CODE_MODELNEW
							      : KF_CODE_KERNEL;
}

const char *kf_prompt_no_code_reason(enum kf_code_kind kind)
{
	return kind == KF_CODE_MODELNEW
		   ? "no fenced python block defining class ModelNew in the "
		     "completion (a KernelBench-format task)"
		   : "no fenced code block containing kf_entry in the "
		     "completion";
}

const char *kf_prompt_default_template(const struct kf_task *t)
{
	return t && t->kernelbench ? "kernelbench" : "contrastive";
}
