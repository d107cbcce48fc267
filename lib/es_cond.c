/*
 * es_cond.c - status conditions (Kubernetes API conventions, "Typical status
 * properties").
 */
#include <string.h>

#include "es_cond.h"
#include "es_json.h"
#include "es_time.h"

int es_cond_is_camel(const char *s)
{
	if (s == NULL || !(*s >= 'A' && *s <= 'Z'))
		return 0;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

cJSON *es_cond_find(const cJSON *conds, const char *type)
{
	cJSON *c;

	if (!cJSON_IsArray(conds) || type == NULL)
		return NULL;
	cJSON_ArrayForEach(c, conds) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");

		if (cJSON_IsString(t) && t->valuestring != NULL &&
		    strcmp(t->valuestring, type) == 0)
			return c;
	}
	return NULL;
}

static int status_valid(const char *s)
{
	return s != NULL && (strcmp(s, "True") == 0 || strcmp(s, "False") == 0 ||
			     strcmp(s, "Unknown") == 0);
}

es_err es_cond_set(cJSON *conds, const char *type, const char *status,
		   const char *reason, const char *message,
		   int64_t observed_generation, time_t now, int *changed)
{
	cJSON *old, *c = NULL;
	const cJSON *old_status, *old_ltt;
	const char *ltt;
	char nowbuf[ES_TIME_RFC3339_LEN];
	int transition;

	if (!cJSON_IsArray(conds) || !es_cond_is_camel(type) ||
	    !status_valid(status) || !es_cond_is_camel(reason))
		return ES_ERR_INVAL;
	if (message == NULL)
		message = "";
	old = es_cond_find(conds, type);
	old_status = cJSON_GetObjectItemCaseSensitive(old, "status");
	old_ltt = cJSON_GetObjectItemCaseSensitive(old, "lastTransitionTime");
	transition = old == NULL || !cJSON_IsString(old_status) ||
		     old_status->valuestring == NULL ||
		     strcmp(old_status->valuestring, status) != 0;
	if (!transition && cJSON_IsString(old_ltt) && old_ltt->valuestring != NULL)
		ltt = old_ltt->valuestring;
	else
		ltt = es_time_rfc3339(now, nowbuf);

	c = cJSON_CreateObject();
	if (c == NULL ||
	    cJSON_AddStringToObject(c, "type", type) == NULL ||
	    cJSON_AddStringToObject(c, "status", status) == NULL ||
	    es_json_add_int(c, "observedGeneration", observed_generation) == NULL ||
	    cJSON_AddStringToObject(c, "lastTransitionTime", ltt) == NULL ||
	    cJSON_AddStringToObject(c, "reason", reason) == NULL ||
	    cJSON_AddStringToObject(c, "message", message) == NULL)
		goto nomem;
	if (old != NULL) {
		if (!cJSON_ReplaceItemViaPointer(conds, old, c))
			goto nomem;
	} else if (!cJSON_AddItemToArray(conds, c)) {
		goto nomem;
	}
	if (changed != NULL)
		*changed = transition;
	return ES_OK;
nomem:
	cJSON_Delete(c);
	return ES_ERR_NOMEM;
}
