/*
 * scores.c: KFORGE_SCORES, a table of recorded results that stands in for
 * evaluation, so that policies can be compared on the same recorded
 * candidates (bench/policy_replay.py) and tested with known scores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/prompt.h>
#include <kforge/store.h>

#include "search_int.h"

#define SCORES_CAP ((size_t)256 << 20)

/* The result a table line gives: its own, an export line's, or one made
 * from "status", "speedup" and "fraction". */
static cJSON *line_result(const cJSON *line, const char *where)
{
	const cJSON *r = cJSON_GetObjectItem(line, "result");
	if (!cJSON_IsObject(r))
		r = cJSON_GetObjectItem(cJSON_GetObjectItem(line, "evaluation"),
					"result");
	if (cJSON_IsObject(r))
		return cJSON_Duplicate(r, 1);
	const char *status = kf_json_str(line, "status");
	if (!status)
		status = "ok";
	cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "status", status);
	cJSON_AddStringToObject(res, "scored", where);
	if (strcmp(status, "ok")) {
		char *why = kf_xasprintf("scored %s by %s", status, where);
		cJSON_AddStringToObject(res, "check", "scored");
		cJSON_AddStringToObject(res, "reason", why);
		free(why);
		return res;
	}
	double x = kf_json_num(line, "speedup", 1.0);
	cJSON *t = cJSON_AddObjectToObject(res, "timing");
	cJSON *sp = cJSON_AddObjectToObject(t, "speedup");
	cJSON_AddNumberToObject(sp, "median", x);
	cJSON *ci = cJSON_AddArrayToObject(sp, "ci95");
	cJSON_AddItemToArray(ci, cJSON_CreateNumber(x));
	cJSON_AddItemToArray(ci, cJSON_CreateNumber(x));
	const cJSON *f = cJSON_GetObjectItem(line, "fraction");
	if (cJSON_IsNumber(f)) {
		cJSON *roof = cJSON_AddObjectToObject(res, "roofline");
		cJSON_AddStringToObject(roof, "bound", "memory");
		cJSON_AddNumberToObject(roof, "fraction", f->valuedouble);
	}
	return res;
}

static bool line_matches(const cJSON *line, const char *source)
{
	const char *sub = kf_json_str(line, "contains");
	if (sub)
		return strstr(source, sub) != NULL;
	const char *code = kf_json_str(line, "code");
	if (!code)
		code = kf_json_str(line, "source");
	return code && kf_prompt_same_code(code, source);
}

int kf_search_score(const char *table, const char *path, cJSON **out,
		    struct kf_err *err)
{
	char *text = NULL, *source = NULL;
	*out = NULL;
	int rc = kf_file_read(table, SCORES_CAP, &text, NULL, err);
	if (!rc)
		rc =
		    kf_file_read(path, KF_STORE_SOURCE_CAP, &source, NULL, err);
	int lineno = 0;
	for (char *l = text, *next; !rc && l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		cJSON *line = cJSON_Parse(l);
		if (!line) {
			if (strspn(l, " \t\r") == strlen(l))
				continue;
			rc = kf_err_set(err, KF_EINVAL,
					"KFORGE_SCORES: %s:%d: not JSON", table,
					lineno);
			break;
		}
		if (line_matches(line, source)) {
			char where[300];
			snprintf(where, sizeof(where), "%.280s:%d", table,
				 lineno);
			*out = line_result(line, where);
			/* Every scored result says so, a recorded one too:
			 * nothing verified it in this run. */
			cJSON_DeleteItemFromObject(*out, "scored");
			cJSON_AddStringToObject(*out, "scored", where);
		}
		cJSON_Delete(line);
		if (*out)
			break;
	}
	if (!rc && !*out)
		rc = kf_err_set(err, KF_ENOENT,
				"KFORGE_SCORES: %s: no line scores %s", table,
				path);
	free(source);
	free(text);
	return rc;
}
