/*
 * es_mpatch.h - JSON Merge Patch, RFC 7386.
 */
#ifndef ES_MPATCH_H
#define ES_MPATCH_H

#include <cjson/cJSON.h>
#include "es_err.h"

/*
 * Applies patch to *target following RFC 7386 section 2 (MergePatch):
 * a non-object patch replaces the target; null members delete; objects
 * merge recursively. *target may be NULL (treated as absent). On success
 * *target is replaced by the result (the old tree is consumed or reused).
 * patch is not modified. Errors: ES_ERR_NOMEM (then *target is unchanged
 * and still owned by the caller).
 */
es_err es_mpatch_apply(cJSON **target, const cJSON *patch);

/*
 * Computes a merge patch that turns from into to: applying *out to a copy of
 * from yields a value equal to to (es_json_equal: numbers exactly). Members
 * equal in both are omitted, members missing from to become null,
 * non-object values and arrays are replaced whole. When from and to are
 * equal, *out is an empty object. RFC 7386 cannot express a null value
 * inside an object; such members in `to` are dropped (edgesync documents
 * never contain nulls). Time grows with the sizes times the nesting depth
 * (and a log), never with a product of member counts.
 * Errors: ES_ERR_NOMEM. *out owned by caller.
 */
es_err es_mpatch_diff(const cJSON *from, const cJSON *to, cJSON **out);

#endif
