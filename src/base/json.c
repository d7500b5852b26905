/* json.c: small accessors over cJSON used across modules. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <kforge/base.h>

const char *kf_json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double kf_json_num(const cJSON *obj, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

char *kf_json_print(const cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);
	KF_ASSERT(s);
	return s;
}

long kf_json_nul_escape(const char *text, size_t len)
{
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (!in_string) {
			if (c == '"')
				in_string = true;
			continue;
		}
		if (c == '"') {
			in_string = false;
		} else if (c == '\\' && i + 1 < len) {
			if (text[i + 1] == 'u' && i + 5 < len &&
			    !memcmp(text + i + 2, "0000", 4))
				return (long)i;
			i++; /* the escaped character */
		}
	}
	return -1;
}

#define NUL_PATH_DEPTH 64

int kf_json_nul_paths(const char *text, size_t len,
		      struct kf_json_nul_at *out, int max)
{
	/* One frame per open container: whether an array, its index, and
	 * for an object the key whose value comes next. */
	struct {
		bool array, want_key;
		long index;
		char key[64];
	} f[NUL_PATH_DEPTH];
	int depth = 0, found = 0;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '{' || c == '[') {
			if (depth < NUL_PATH_DEPTH) {
				f[depth].array = c == '[';
				f[depth].want_key = c == '{';
				f[depth].index = 0;
				f[depth].key[0] = '\0';
			}
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',' && depth > 0 && depth <= NUL_PATH_DEPTH) {
			if (f[depth - 1].array)
				f[depth - 1].index++;
			else
				f[depth - 1].want_key = true;
		} else if (c == '"') {
			size_t b = ++i;
			bool nul = false;
			long at = -1;
			while (i < len && text[i] != '"') {
				if (text[i] == '\\' && i + 1 < len) {
					if (text[i + 1] == 'u' && i + 5 < len &&
					    !memcmp(text + i + 2, "0000", 4) &&
					    !nul) {
						nul = true;
						at = (long)i;
					}
					i++;
				}
				i++;
			}
			bool is_key = depth > 0 && depth <= NUL_PATH_DEPTH &&
				      !f[depth - 1].array &&
				      f[depth - 1].want_key;
			if (is_key) {
				size_t n = i - b < 63 ? i - b : 63;
				memcpy(f[depth - 1].key, text + b, n);
				f[depth - 1].key[n] = '\0';
				f[depth - 1].want_key = false;
			}
			if (!nul)
				continue;
			if (found < max) {
				struct kf_json_nul_at *o = &out[found];
				memset(o, 0, sizeof(*o));
				o->idx1 = -1;
				o->depth = is_key ? -1 : depth;
				o->at = at;
				/* A key holding a NUL: depth -1. */
				if (depth >= 1 && !f[0].array)
					snprintf(o->key0, sizeof(o->key0), "%s",
						 is_key ? "" : f[0].key);
				if (depth >= 2 && f[1].array)
					o->idx1 = f[1].index;
				if (depth >= 2 && !f[1].array &&
				    !(depth == 2 && is_key))
					snprintf(o->key1, sizeof(o->key1), "%s",
						 f[1].key);
				if (depth >= 3 && !f[2].array && !is_key)
					snprintf(o->key2, sizeof(o->key2), "%s",
						 f[2].key);
			}
			found++;
		}
	}
	return found;
}

static int hex4(const char *p)
{
	int v = 0;
	for (int k = 0; k < 4; k++) {
		char c = p[k];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

long kf_json_lone_surrogates(const char *text, char *rewrite, size_t len)
{
	long n = 0;
	for (size_t i = 0; i + 1 < len; i++) {
		if (text[i] != '\\')
			continue;
		if (text[i + 1] != 'u' || i + 6 > len) {
			i++; /* the escaped character */
			continue;
		}
		int u = hex4(text + i + 2);
		if (u < 0xd800 || u > 0xdfff) {
			i += 5;
			continue;
		}
		if (u <= 0xdbff && i + 12 <= len && text[i + 6] == '\\' &&
		    text[i + 7] == 'u') {
			int lo = hex4(text + i + 8);
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				i += 11; /* a pair */
				continue;
			}
		}
		if (rewrite)
			memcpy(rewrite + i + 2, "fffd", 4);
		n++;
		i += 5;
	}
	return n;
}

char *kf_json_fix_lone_surrogates(const char *text, size_t len)
{
	if (kf_json_lone_surrogates(text, NULL, len) == 0)
		return NULL;
	char *fixed = kf_xmalloc(len + 1);
	memcpy(fixed, text, len);
	fixed[len] = '\0';
	kf_json_lone_surrogates(text, fixed, len);
	return fixed;
}
