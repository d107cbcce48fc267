/*
 * egress_backend.c - what the EgressPolicy backends share (see
 * egress_backend.h).
 */
#include "egress/egress_backend.h"

cJSON *es_egb_unloaded(const char *backend, const char *reason)
{
	cJSON *a = cJSON_CreateObject();

	if (!a || !cJSON_AddStringToObject(a, "backend", backend) ||
	    !cJSON_AddBoolToObject(a, "loaded", 0) ||
	    !cJSON_AddStringToObject(a, "reason", reason)) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}
