/*
 * resources.c: the static facts of a cubin, from `cuobjdump
 * --dump-resource-usage`, whose lines read
 *
 *   Function _Z5scalePKfPfi:
 *    REG:10 STACK:0 SHARED:2048 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 ...
 *
 * once per fatbin entry (an arch). STACK is the per-thread stack frame:
 * spilled registers and arrays the compiler could not keep in registers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/profile.h>

static int field(const char *line, const char *key)
{
	const char *p = line;
	size_t k = strlen(key);
	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ' || p[-1] == '\t') && p[k] == ':')
			return atoi(p + k + 1);
		p += k;
	}
	return 0;
}

int kf_profile_parse_resources(const char *text, struct kf_prof_resources **out,
			       int *n, struct kf_err *err)
{
	struct kf_prof_resources *v = NULL;
	int cnt = 0, cap = 0, cur = -1;
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		p = e ? e + 1 : NULL;
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!strncmp(s, "Function ", 9)) {
			char *name = s + 9, *colon = strrchr(name, ':');
			if (colon)
				*colon = '\0';
			cur = -1;
			for (int i = 0; i < cnt; i++)
				if (!strcmp(v[i].name, name))
					cur = i;
			if (cur < 0) {
				if (cnt == cap)
					v = kf_xrealloc(
					    v, sizeof(*v) *
						   (size_t)(cap = cap ? 2 * cap
								      : 8));
				cur = cnt++;
				memset(&v[cur], 0, sizeof(v[cur]));
				snprintf(v[cur].name, sizeof(v[cur].name),
					 "%s", name);
			}
			continue;
		}
		if (cur >= 0 && strstr(s, "REG:")) {
			v[cur].regs = field(s, "REG");
			v[cur].stack = field(s, "STACK");
			v[cur].shared = field(s, "SHARED");
			v[cur].local = field(s, "LOCAL");
			cur = -1;
		}
	}
	if (!cnt) {
		free(v);
		return kf_err_set(err, KF_EPROTO,
				  "cuobjdump: no function in its resource "
				  "usage (no device code?)");
	}
	*out = v;
	*n = cnt;
	return 0;
}

char *kf_profile_find_tool(const char *name)
{
	char env[64];
	snprintf(env, sizeof(env), "KFORGE_%s", name);
	for (char *c = env + 7; *c; c++)
		*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
	const char *e = getenv(env);
	if (e && *e)
		return kf_is_executable(e) ? kf_xstrdup(e) : NULL;
	char *p = kf_xasprintf("/usr/local/cuda/bin/%s", name);
	if (kf_is_executable(p))
		return p;
	free(p);
	p = kf_which(name);
	if (p)
		return p;
	if (!strcmp(name, "ncu")) {
		/* Nsight Compute's own installs: /opt/nvidia/nsight-compute/
		 * <version>/ncu, /usr/local/cuda/nsight-compute-<v>/ncu. */
		static const char *const globs[] = {
		    "/opt/nvidia/nsight-compute", "/usr/local/cuda"};
		for (size_t g = 0; g < 2; g++) {
			char *cmd = kf_xasprintf(
			    g ? "%s/nsight-compute-*/ncu"
			      : "%s/*/ncu",
			    globs[g]);
			char *argv[] = {"/bin/sh", "-c", NULL, NULL};
			char *sh = kf_xasprintf(
			    "for f in %s; do [ -x \"$f\" ] && echo \"$f\"; "
			    "done | sort -V | tail -n 1",
			    cmd);
			argv[2] = sh;
			char *line = kf_proc_first_line(argv, 5000);
			free(sh);
			free(cmd);
			if (line && *line)
				return line;
			free(line);
		}
	}
	return NULL;
}

int kf_profile_resources(const char *so_path, struct kf_prof_resources **out,
			 int *n, struct kf_err *err)
{
	char *tool = kf_profile_find_tool("cuobjdump");
	if (!tool)
		return kf_err_set(err, KF_ENOENT,
				  "no cuobjdump ($KFORGE_CUOBJDUMP, "
				  "/usr/local/cuda/bin, PATH)");
	char *argv[] = {tool, "--dump-resource-usage", (char *)so_path, NULL};
	struct kf_strbuf o = KF_STRBUF_INIT;
	int status = 0;
	int rc = kf_proc_run(argv, 60000, 4u << 20, &o, &status, err);
	if (!rc && status != 0) {
		rc = kf_err_set(err, KF_EIO, "cuobjdump %s failed: %.300s",
				so_path, o.buf ? o.buf : "");
	}
	if (!rc)
		rc = kf_profile_parse_resources(o.buf ? o.buf : "", out, n,
						err);
	kf_strbuf_release(&o);
	free(tool);
	return rc;
}

/* True when the mangled name m is that of the function whose demangled
 * name (up to its '(' or template '<') is d: the last component of d,
 * with its length before it, appears in m ("_Z5scalePKfPfi" for
 * "scale(const float *, float *, int)"; extern "C" names are equal). */
static bool names_match(const char *m, const char *d)
{
	size_t end = strcspn(d, "(<");
	while (end && d[end - 1] == ' ')
		end--;
	if (strlen(m) == end && !strncmp(m, d, end))
		return true;
	size_t start = end;
	while (start && d[start - 1] != ':' && d[start - 1] != ' ')
		start--;
	if (start == end)
		return false;
	char want[300];
	snprintf(want, sizeof(want), "%zu%.*s", end - start, (int)(end - start),
		 d + start);
	const char *hit = strstr(m, want);
	/* not a prefix of a longer name: a digit must not precede it */
	return hit && (hit == m || hit[-1] < '0' || hit[-1] > '9');
}

void kf_profile_attach_resources(struct kf_prof_side *s,
				 const struct kf_prof_resources *r, int n)
{
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < n; j++)
			if (names_match(r[j].name, s->k[i].name)) {
				s->k[i].static_regs = r[j].regs;
				s->k[i].stack_bytes = r[j].stack;
				s->k[i].static_shared = r[j].shared;
				break;
			}
}
