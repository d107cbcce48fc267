/*
 * admin_describe.c - a node's desired objects beside what its agent reports
 * for them (PROTOCOL.md "Status of desired objects") and, where the agent
 * reports it, the actual state it reads back from the kernel (EgressPolicy:
 * the rules loaded), with the differences spelled out.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admin_int.h"
#include "es_cond.h"
#include "es_egress.h"
#include "es_json.h"
#include "es_obj.h"

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str_member(const cJSON *o, const char *key)
{
	const cJSON *s = member(o, key);
	return cJSON_IsString(s) ? s->valuestring : NULL;
}

static int same_str(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* The entry of status.objects with this kind and name, or NULL. */
static const cJSON *find_reported(const cJSON *reported, const char *kind,
				  const char *name, int *index)
{
	const cJSON *r;
	int i = 0;

	cJSON_ArrayForEach(r, reported) {
		if (same_str(str_member(r, "kind"), kind) &&
		    same_str(str_member(r, "name"), name)) {
			*index = i;
			return r;
		}
		i++;
	}
	return NULL;
}

static int add_diff(cJSON *diffs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_diff(cJSON *diffs, const char *fmt, ...)
{
	char buf[512];
	cJSON *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!(s = cJSON_CreateString(buf)))
		return -1;
	cJSON_AddItemToArray(diffs, s);
	return 0;
}

/* {generation?, observedGeneration, conditions} of a status.objects entry. */
static cJSON *reported_view(const cJSON *r)
{
	const cJSON *m;
	cJSON *v = cJSON_CreateObject(), *c;
	static const char *const keys[] = { "generation", "observedGeneration" };

	if (!v)
		return NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		m = member(r, keys[i]);
		c = m ? cJSON_Duplicate(m, 1) : cJSON_CreateNull();
		if (!c)
			goto fail;
		cJSON_AddItemToObject(v, keys[i], c);
	}
	m = member(r, "conditions");
	c = cJSON_IsArray(m) ? cJSON_Duplicate(m, 1) : cJSON_CreateArray();
	if (!c)
		goto fail;
	cJSON_AddItemToObject(v, "conditions", c);
	return v;
fail:
	cJSON_Delete(v);
	return NULL;
}

/* Appends to diffs why reported r is not the applied state of desired d. */
static int compare(const cJSON *d, const cJSON *r, cJSON *diffs)
{
	const char *uid = es_obj_uid(d), *ruid = str_member(r, "uid");
	const cJSON *og = member(r, "observedGeneration");
	const cJSON *applied = es_cond_find(member(r, "conditions"), "Applied");
	const char *st, *reason, *msg;
	int64_t gen = es_obj_generation(d);

	if (ruid && uid && strcmp(ruid, uid) != 0 &&
	    add_diff(diffs, "uid %s != %s (the agent holds an earlier object of this name)",
		     ruid, uid))
		return -1;
	if (!cJSON_IsNumber(og)) {
		if (add_diff(diffs, "observedGeneration missing != generation %" PRId64, gen))
			return -1;
	} else if (og->valuedouble != (double)gen) { /* gen < 2^53: exact */
		if (add_diff(diffs, "observedGeneration %.0f != generation %" PRId64,
			     og->valuedouble, gen))
			return -1;
	}
	if (!applied)
		return add_diff(diffs, "condition Applied missing");
	st = str_member(applied, "status");
	if (same_str(st, "True"))
		return 0;
	reason = str_member(applied, "reason");
	msg = str_member(applied, "message");
	return add_diff(diffs, "Applied=%s reason %s%s%s", st ? st : "missing",
			reason ? reason : "none", msg && *msg ? ": " : "",
			msg && *msg ? msg : "");
}

static cJSON *desired_view(const cJSON *d)
{
	const cJSON *spec = member(d, "spec");
	cJSON *v = cJSON_CreateObject(), *c;

	if (!v || !es_json_add_int(v, "generation", es_obj_generation(d)))
		goto fail;
	c = spec ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject();
	if (!c)
		goto fail;
	cJSON_AddItemToObject(v, "spec", c);
	return v;
fail:
	cJSON_Delete(v);
	return NULL;
}

/* One describe entry. d (desired, NULL when the agent reports an object the
 * controller no longer has for the node) or r (reported, may be NULL). */
/* d desired (or NULL), r reported (or NULL); orphan_why says why r has no
 * d, missing_why why d has no r. */
static cJSON *entry(const cJSON *d, const cJSON *r, const char *orphan_why,
		    const char *missing_why)
{
	const char *kind = d ? es_obj_kind_str(d) : str_member(r, "kind");
	const char *name = d ? es_obj_name(d) : str_member(r, "name");
	const char *uid = d ? es_obj_uid(d) : str_member(r, "uid");
	cJSON *e = cJSON_CreateObject(), *diffs = NULL, *c;

	if (!e || !cJSON_AddStringToObject(e, "kind", kind ? kind : "") ||
	    !cJSON_AddStringToObject(e, "name", name ? name : "") ||
	    !(uid ? cJSON_AddStringToObject(e, "uid", uid) : cJSON_AddNullToObject(e, "uid")) ||
	    !cJSON_AddBoolToObject(e, "deleted", d == NULL))
		goto fail;
	c = d ? desired_view(d) : cJSON_CreateNull();
	if (!c)
		goto fail;
	cJSON_AddItemToObject(e, "desired", c);
	c = r ? reported_view(r) : cJSON_CreateNull();
	if (!c)
		goto fail;
	cJSON_AddItemToObject(e, "reported", c);
	c = r && cJSON_IsObject(member(r, "actual")) ?
		cJSON_Duplicate(member(r, "actual"), 1) : cJSON_CreateNull();
	if (!c)
		goto fail;
	cJSON_AddItemToObject(e, "actual", c);
	if (!(diffs = cJSON_CreateArray()))
		goto fail;
	if (!d) {
		if (add_diff(diffs, "%s", orphan_why))
			goto fail;
	} else if (!r) {
		if (add_diff(diffs, "%s", missing_why))
			goto fail;
	} else if (compare(d, r, diffs)) {
		goto fail;
	} else if (es_obj_kind(d) == ES_KIND_EGRESS_POLICY &&
		   es_egress_diff(member(d, "spec"), member(r, "actual"), diffs)) {
		goto fail;
	}
	if (!cJSON_AddBoolToObject(e, "inSync", cJSON_GetArraySize(diffs) == 0))
		goto fail;
	cJSON_AddItemToObject(e, "differences", diffs);
	return e;
fail:
	cJSON_Delete(diffs);
	cJSON_Delete(e);
	return NULL;
}

static const cJSON *find_desired(const cJSON *desired, const char *kind,
				 const char *name)
{
	const cJSON *d;

	cJSON_ArrayForEach(d, desired)
		if (same_str(es_obj_kind_str(d), kind) && same_str(es_obj_name(d), name))
			return d;
	return NULL;
}

static es_err add_copy(cJSON *out, const char *key, const cJSON *v, int array)
{
	cJSON *c;

	if (v && (array ? cJSON_IsArray(v) : cJSON_IsObject(v)))
		c = cJSON_Duplicate(v, 1);
	else
		c = array ? cJSON_CreateArray() : cJSON_CreateObject();
	if (!c)
		return ES_ERR_NOMEM;
	cJSON_AddItemToObject(out, key, c);
	return ES_OK;
}

es_err es_admin_describe_build(const cJSON *node, const cJSON *desired,
			       cJSON **out)
{
	const cJSON *meta = member(node, "metadata");
	const cJSON *labels = member(meta, "labels");
	const cJSON *status = member(node, "status");
	const cJSON *reported = member(status, "objects");
	const cJSON *d, *r;
	const char *name = str_member(meta, "name");
	const cJSON *omitted = member(member(status, "agent"), "objectsOmitted");
	int nrep = cJSON_IsArray(reported) ? cJSON_GetArraySize(reported) : 0;
	char *matched = NULL, missing[160] = "not reported by the agent";
	cJSON *res = NULL, *objs, *e;
	es_err rc = ES_ERR_NOMEM;
	int i;

	*out = NULL;
	if (!cJSON_IsArray(reported))
		reported = NULL;
	if (!cJSON_IsObject(labels))
		labels = NULL;
	if (cJSON_IsNumber(omitted) && omitted->valuedouble > 0)
		snprintf(missing, sizeof(missing), "not in the agent's report, which left "
			 "%.0f objects out to fit one message (status.agent.objectsOmitted)",
			 omitted->valuedouble);
	if (!(matched = calloc((size_t)nrep + 1, 1)) ||
	    !(res = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(res, "node", name ? name : "") ||
	    !(objs = cJSON_AddArrayToObject(res, "objects")))
		goto cleanup;
	cJSON_ArrayForEach(d, desired) {
		if (!es_obj_selects(d, labels))
			continue;
		i = -1;
		r = find_reported(reported, es_obj_kind_str(d), es_obj_name(d), &i);
		if (r)
			matched[i] = 1;
		if (!(e = entry(d, r, NULL, missing)))
			goto cleanup;
		cJSON_AddItemToArray(objs, e);
	}
	i = 0;
	cJSON_ArrayForEach(r, reported) {
		if (!matched[i++]) {
			const char *why = find_desired(desired, str_member(r, "kind"),
						       str_member(r, "name")) ?
				"no longer targets this node; the agent still holds it" :
				"deleted on the controller; the agent still holds it";
			if (!(e = entry(NULL, r, why, NULL)))
				goto cleanup;
			cJSON_AddItemToArray(objs, e);
		}
	}
	if (add_copy(res, "conditions", member(status, "conditions"), 1) != ES_OK ||
	    add_copy(res, "sync", member(status, "sync"), 0) != ES_OK)
		goto cleanup;
	*out = res;
	res = NULL;
	rc = ES_OK;
cleanup:
	free(matched);
	cJSON_Delete(res);
	return rc;
}
