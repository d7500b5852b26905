/* json.c: small accessors over cJSON used across modules. */
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
