/*
 * es_cond.h - status conditions with Kubernetes semantics
 * (Kubernetes API conventions, "Typical status properties"):
 * type CamelCase, status True/False/Unknown, reason CamelCase, message,
 * lastTransitionTime (RFC 3339, changes only when status changes),
 * observedGeneration.
 */
#ifndef ES_COND_H
#define ES_COND_H

#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"

/*
 * Sets condition `type` in the JSON array `conds` (an array of condition
 * objects, owned by the caller). status is "True", "False" or "Unknown";
 * reason must be CamelCase (starts with an upper-case letter, letters and
 * digits only); message may be "". If a condition of that type exists, its
 * reason, message and observedGeneration are replaced, and its
 * lastTransitionTime is set to now only when its status differs; otherwise a
 * new condition is appended with lastTransitionTime now.
 * Returns ES_OK, ES_ERR_INVAL (bad status or reason), ES_ERR_NOMEM.
 * *changed (may be NULL) is set to 1 when the status changed or the
 * condition is new, else 0.
 */
es_err es_cond_set(cJSON *conds, const char *type, const char *status,
		   const char *reason, const char *message,
		   int64_t observed_generation, time_t now, int *changed);

/* Returns the condition object of `type` in conds (borrowed), or NULL. */
cJSON *es_cond_find(const cJSON *conds, const char *type);

/* Returns 1 when s is CamelCase as the conventions require, else 0. */
int es_cond_is_camel(const char *s);

#endif
