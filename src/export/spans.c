/*
 * spans.c: the regions of a kernel's code that a trainer may weight (as
 * CuSeT does): kernel bodies, launch configurations, shared memory,
 * synchronisation, intrinsics and memory qualifiers, found by a small
 * lexer over C, CUDA and host SIMD code. docs/export.md states the rules.
 */
#include <stdlib.h>
#include <string.h>

#include <kforge/export.h>

static const char *const kind_names[KF_SPAN_KINDS] = {
    "kernel_body",     "launch_config", "shared_memory",
    "synchronization", "intrinsic",	"memory_qualifier",
};

const char *kf_span_kind_name(enum kf_span_kind k)
{
	return (unsigned)k < KF_SPAN_KINDS ? kind_names[k] : "unknown";
}

struct scan {
	const char *s;
	size_t n;
	bool c; /* skip comments and literals */
	struct kf_span *spans;
	size_t n_spans, cap;
	size_t kernel_start, kernel_end; /* the last kernel body */
};

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

static void add(struct scan *sc, size_t start, size_t end,
		enum kf_span_kind kind)
{
	if (sc->n_spans == sc->cap) {
		sc->cap = sc->cap ? 2 * sc->cap : 16;
		sc->spans =
		    kf_xrealloc(sc->spans, sc->cap * sizeof(*sc->spans));
	}
	sc->spans[sc->n_spans++] = (struct kf_span){start, end, kind};
}

/* The end of the comment or literal that starts at i, or i when none does
 * (or when the scan does not lex C). A literal ends at its closing quote or
 * at the end of its line. */
static size_t skip_inert(const struct scan *sc, size_t i)
{
	const char *s = sc->s;
	if (!sc->c || i >= sc->n)
		return i;
	if (s[i] == '/' && s[i + 1] == '/') {
		while (i < sc->n && s[i] != '\n')
			i++;
		return i;
	}
	if (s[i] == '/' && s[i + 1] == '*') {
		const char *e = strstr(s + i + 2, "*/");
		return e ? (size_t)(e - s) + 2 : sc->n;
	}
	if (s[i] == '"' || s[i] == '\'') {
		char q = s[i++];
		while (i < sc->n && s[i] != q && s[i] != '\n') {
			if (s[i] == '\\' && i + 1 < sc->n)
				i++;
			i++;
		}
		return i < sc->n && s[i] == q ? i + 1 : i;
	}
	return i;
}

/* The next position from i that is neither white space nor inert. */
static size_t next_sig(const struct scan *sc, size_t i)
{
	for (;;) {
		while (i < sc->n && space(sc->s[i]))
			i++;
		size_t j = skip_inert(sc, i);
		if (j == i)
			return i;
		i = j;
	}
}

/* With s[i] == open: the position after its matching close; 0 when it is
 * not closed. */
static size_t match(const struct scan *sc, size_t i, char open, char close)
{
	int depth = 0;
	while (i < sc->n) {
		size_t j = skip_inert(sc, i);
		if (j != i) {
			i = j;
			continue;
		}
		if (sc->s[i] == open)
			depth++;
		else if (sc->s[i] == close && --depth == 0)
			return i + 1;
		i++;
	}
	return 0;
}

/* The end of a call whose name ends at e: after the matching ')' when an
 * argument list follows, else e. */
static size_t call_end(const struct scan *sc, size_t e)
{
	size_t p = next_sig(sc, e);
	if (p < sc->n && sc->s[p] == '(') {
		size_t m = match(sc, p, '(', ')');
		if (m)
			return m;
	}
	return e;
}

static bool is(const char *id, size_t len, const char *word)
{
	return strlen(word) == len && !strncmp(id, word, len);
}

static bool starts(const char *id, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && !strncmp(id, prefix, n);
}

/* Identifiers (or their prefixes, ending in '*') that are synchronisation. */
static const char *const sync_names[] = {
    "__syncthreads",	"__syncthreads_count", "__syncthreads_and",
    "__syncthreads_or", "__syncwarp",	       "__threadfence*",
    "__barrier_sync",	"_mm_sfence",	       "_mm_lfence",
    "_mm_mfence",
};

/* Intrinsics: CUDA's warp, cache, atomic, math and conversion intrinsics,
 * tensor-core fragments, and the x86 SIMD intrinsics and vector types. */
static const char *const intrinsic_names[] = {
    "__shfl*",
    "__ldg",
    "__ldcg",
    "__ldca",
    "__ldcs",
    "__ldlu",
    "__ldcv",
    "__stwb",
    "__stcg",
    "__stcs",
    "__stwt",
    "__ballot_sync",
    "__any_sync",
    "__all_sync",
    "__activemask",
    "__match_*",
    "__reduce_*",
    "__expf",
    "__exp10f",
    "__logf",
    "__log2f",
    "__log10f",
    "__sinf",
    "__cosf",
    "__sincosf",
    "__tanf",
    "__powf",
    "__fdividef",
    "__fdiv_*",
    "__frcp_*",
    "__fsqrt_*",
    "__frsqrt_*",
    "__fmaf_*",
    "__fma_*",
    "__fmul_*",
    "__fadd_*",
    "__fsub_*",
    "__dmul_*",
    "__dadd_*",
    "__saturatef",
    "__hadd*",
    "__hsub*",
    "__hmul*",
    "__hdiv*",
    "__hfma*",
    "__hmax*",
    "__hmin*",
    "__hneg*",
    "__habs*",
    "__half2float",
    "__float2half*",
    "__half22float2",
    "__float22half2*",
    "__float2bfloat16*",
    "__bfloat162float",
    "__popc*",
    "__clz*",
    "__ffs*",
    "__brev*",
    "__byte_perm",
    "__dp4a",
    "__dp2a*",
    "__umulhi",
    "__mulhi",
    "__funnelshift*",
    "__float_as_*",
    "__int_as_float",
    "__uint_as_float",
    "mma_sync",
    "load_matrix_sync",
    "store_matrix_sync",
    "fill_fragment",
    "_mm*",
    "__m128*",
    "__m256*",
    "__m512*",
};

/* Qualifiers of where memory lives or how it may alias. */
static const char *const qualifier_names[] = {
    "__restrict__", "__restrict", "restrict", "__constant__", "__managed__",
};

static bool listed(const char *id, size_t len, const char *const *names,
		   size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(names[i]);
		if (names[i][k - 1] == '*') {
			if (len >= k - 1 && !strncmp(id, names[i], k - 1))
				return true;
		} else if (is(id, len, names[i])) {
			return true;
		}
	}
	return false;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* `cuda...Synchronize`: the host waiting for the device. */
static bool cuda_synchronize(const char *id, size_t len)
{
	static const char tail[] = "Synchronize";
	size_t t = sizeof(tail) - 1;
	return starts(id, len, "cuda") && len > 4 + t &&
	       !strncmp(id + len - t, tail, t);
}

/* `x.sync(`, `x->sync(`, `cg::sync(`: a cooperative group's barrier. */
static bool group_sync(const struct scan *sc, size_t i, size_t e)
{
	const char *s = sc->s;
	if (!is(s + i, e - i, "sync"))
		return false;
	size_t p = next_sig(sc, e);
	if (p >= sc->n || s[p] != '(')
		return false;
	size_t b = i;
	while (b > 0 && space(s[b - 1]))
		b--;
	return (b >= 1 && s[b - 1] == '.') ||
	       (b >= 2 && s[b - 2] == ':' && s[b - 1] == ':') ||
	       (b >= 2 && s[b - 2] == '-' && s[b - 1] == '>');
}

/* __global__ at i (ending at e): through the body's closing brace. */
static void kernel(struct scan *sc, size_t i, size_t e)
{
	int depth = 0;
	for (size_t p = e; p < sc->n;) {
		size_t j = skip_inert(sc, p);
		if (j != p) {
			p = j;
			continue;
		}
		char c = sc->s[p];
		if (c == '(')
			depth++;
		else if (c == ')')
			depth--;
		else if (depth == 0 && c == ';')
			return; /* a declaration */
		else if (depth == 0 && c == '{') {
			size_t m = match(sc, p, '{', '}');
			if (m) {
				add(sc, i, m, KF_SPAN_KERNEL_BODY);
				sc->kernel_start = i;
				sc->kernel_end = m;
			}
			return;
		}
		p++;
	}
}

/* [extern] __shared__ at i: through the declaration's ';'. */
static void shared(struct scan *sc, size_t i, size_t e)
{
	size_t start = i, b = i;
	while (b > 0 && space(sc->s[b - 1]))
		b--;
	if (b >= 6 && !strncmp(sc->s + b - 6, "extern", 6) &&
	    (b == 6 || !ident_char(sc->s[b - 7])))
		start = b - 6;
	for (size_t p = e; p < sc->n;) {
		size_t j = skip_inert(sc, p);
		if (j != p) {
			p = j;
			continue;
		}
		if (sc->s[p] == ';') {
			add(sc, start, p + 1, KF_SPAN_SHARED_MEMORY);
			return;
		}
		if (sc->s[p] == '{' || sc->s[p] == '}')
			break;
		p++;
	}
	add(sc, start, e, KF_SPAN_SHARED_MEMORY);
}

/* `const T... *` at i inside a kernel body: through the '*'. */
static void const_pointer(struct scan *sc, size_t e)
{
	size_t i = e - 5, p = e;
	int words = 0;
	for (;;) {
		p = next_sig(sc, p);
		if (p >= sc->n)
			return;
		if (ident_start(sc->s[p])) {
			while (p < sc->n && ident_char(sc->s[p]))
				p++;
			words++;
		} else if (sc->s[p] == ':' && sc->s[p + 1] == ':') {
			p += 2;
		} else {
			break;
		}
	}
	if (words > 0 && sc->s[p] == '*')
		add(sc, i, p + 1, KF_SPAN_MEMORY_QUALIFIER);
}

/* #pragma omp at i ('#' at the start of its line): the whole directive,
 * continuation lines included. Returns where the scan goes on. */
static size_t pragma(struct scan *sc, size_t i)
{
	const char *s = sc->s;
	size_t p = i + 1;
	while (p < sc->n && (s[p] == ' ' || s[p] == '\t'))
		p++;
	if (strncmp(s + p, "pragma", 6) || ident_char(s[p + 6]))
		return i + 1;
	p += 6;
	while (p < sc->n && (s[p] == ' ' || s[p] == '\t'))
		p++;
	if (strncmp(s + p, "omp", 3) || ident_char(s[p + 3]))
		return i + 1;
	p += 3;
	while (p < sc->n && (s[p] == ' ' || s[p] == '\t'))
		p++;
	size_t w = p;
	while (p < sc->n && ident_char(s[p]))
		p++;
	static const char *const sync_directives[] = {
	    "barrier", "critical", "atomic", "flush", "taskwait", "ordered",
	};
	enum kf_span_kind kind =
	    listed(s + w, p - w, sync_directives, N(sync_directives))
		? KF_SPAN_SYNCHRONIZATION
		: KF_SPAN_LAUNCH_CONFIG;
	size_t end = p;
	while (end < sc->n && s[end] != '\n') {
		if (s[end] == '\\' && end + 1 < sc->n && s[end + 1] == '\n')
			end++;
		end++;
	}
	size_t next = end;
	while (end > i && space(s[end - 1]))
		end--;
	add(sc, i, end, kind);
	return next;
}

static bool line_start(const struct scan *sc, size_t i)
{
	while (i > 0 && (sc->s[i - 1] == ' ' || sc->s[i - 1] == '\t'))
		i--;
	return i == 0 || sc->s[i - 1] == '\n';
}

static void identifier(struct scan *sc, size_t i, size_t e)
{
	const char *id = sc->s + i;
	size_t len = e - i;
	if (is(id, len, "__global__"))
		kernel(sc, i, e);
	else if (is(id, len, "__launch_bounds__"))
		add(sc, i, call_end(sc, e), KF_SPAN_LAUNCH_CONFIG);
	else if (is(id, len, "__shared__"))
		shared(sc, i, e);
	else if (listed(id, len, sync_names, N(sync_names)) ||
		 cuda_synchronize(id, len) || group_sync(sc, i, e))
		add(sc, i, call_end(sc, e), KF_SPAN_SYNCHRONIZATION);
	else if (listed(id, len, intrinsic_names, N(intrinsic_names)) ||
		 (starts(id, len, "atomic") && len > 6 && id[6] >= 'A' &&
		  id[6] <= 'Z'))
		add(sc, i, call_end(sc, e), KF_SPAN_INTRINSIC);
	else if (listed(id, len, qualifier_names, N(qualifier_names)))
		add(sc, i, e, KF_SPAN_MEMORY_QUALIFIER);
	else if (is(id, len, "const") && i >= sc->kernel_start &&
		 i < sc->kernel_end)
		const_pointer(sc, e);
}

static int by_start(const void *a, const void *b)
{
	const struct kf_span *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

void kf_spans_find(const char *code, bool c_lexing, struct kf_span **out,
		   size_t *n)
{
	struct scan sc = {.s = code, .n = strlen(code), .c = c_lexing};
	size_t i = 0;
	while (i < sc.n) {
		size_t j = skip_inert(&sc, i);
		if (j != i) {
			i = j;
			continue;
		}
		char c = sc.s[i];
		if (c == '#' && line_start(&sc, i)) {
			i = pragma(&sc, i);
		} else if (c == '<' && !strncmp(sc.s + i, "<<<", 3)) {
			for (size_t p = i + 3; p < sc.n;) {
				size_t k = skip_inert(&sc, p);
				if (k != p) {
					p = k;
				} else if (!strncmp(sc.s + p, ">>>", 3)) {
					add(&sc, i, p + 3,
					    KF_SPAN_LAUNCH_CONFIG);
					break;
				} else if (sc.s[p] == ';') {
					break;
				} else {
					p++;
				}
			}
			i += 3;
		} else if (ident_start(c) &&
			   (i == 0 || !ident_char(sc.s[i - 1]))) {
			size_t e = i;
			while (e < sc.n && ident_char(sc.s[e]))
				e++;
			identifier(&sc, i, e);
			i = e;
		} else {
			i++;
		}
	}
	if (sc.n_spans)
		qsort(sc.spans, sc.n_spans, sizeof(*sc.spans), by_start);
	*out = sc.spans;
	*n = sc.n_spans;
}

bool kf_utf8_valid(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	while (*s) {
		unsigned c = *s;
		int more;
		unsigned min, cp;
		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			more = 1, min = 0x80, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2, min = 0x800, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			more = 3, min = 0x10000, cp = c & 0x07;
		} else {
			return false;
		}
		for (int k = 1; k <= more; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += more + 1;
	}
	return true;
}

cJSON *kf_spans_json(const char *text, size_t code_at, bool c_lexing)
{
	struct kf_span *sp = NULL;
	size_t n = 0;
	kf_spans_find(text + code_at, c_lexing, &sp, &n);
	/* Code points before each byte of the text up to the last end. */
	size_t last = code_at;
	for (size_t i = 0; i < n; i++)
		if (code_at + sp[i].end > last)
			last = code_at + sp[i].end;
	size_t *cp = kf_xcalloc(last + 1, sizeof(*cp));
	for (size_t b = 0; b < last; b++)
		cp[b + 1] =
		    cp[b] + (((unsigned char)text[b] & 0xc0) != 0x80 ? 1 : 0);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "start",
					(double)cp[code_at + sp[i].start]);
		cJSON_AddNumberToObject(o, "end",
					(double)cp[code_at + sp[i].end]);
		cJSON_AddStringToObject(o, "kind",
					kf_span_kind_name(sp[i].kind));
		cJSON_AddItemToArray(arr, o);
	}
	free(cp);
	free(sp);
	return arr;
}
