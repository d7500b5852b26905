/* json.c: small accessors over cJSON used across modules. */
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
