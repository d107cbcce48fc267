/*
 * egress_view.c - the actual kernel state of each EgressPolicy for the
 * Node's status.objects (egress.h, es_egress_annotate), and freeing the
 * enforcer.
 */
#include <stdlib.h>
#include <string.h>

#include "egress/egress_int.h"
#include "es_obj.h"

static const char *str_member(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const eg_pol *find(const es_egress *e, const cJSON *entry)
{
	const char *uid = str_member(entry, "uid"), *name = str_member(entry, "name");

	for (size_t i = 0; i < e->npols; i++)
		if (name && !strcmp(e->pols[i].name, name) &&
		    (!uid || !strcmp(e->pols[i].uid, uid)))
			return &e->pols[i];
	return NULL;
}

static int is_policy(const cJSON *entry)
{
	return es_obj_kind(entry) == ES_KIND_EGRESS_POLICY;
}

/* The actual state of a policy not enforced: {backend, loaded: false,
 * reason}, or NULL on allocation failure. */
static cJSON *unloaded(const char *backend, const char *reason)
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

int es_egress_annotate(es_egress *e, cJSON *objects)
{
	const es_eg_input **pol = NULL;
	const char **why = NULL;
	es_eg_input *in = NULL;
	cJSON **out = NULL, *entry;
	char err[300] = "";
	size_t n = 0, i = 0;
	es_err rc = ES_OK;
	int ret = -1;

	if (!e)
		return 0;
	cJSON_ArrayForEach(entry, objects)
		n += is_policy(entry);
	pol = calloc(n + 1, sizeof(*pol));
	why = calloc(n + 1, sizeof(*why));
	in = calloc(n + 1, sizeof(*in));
	out = calloc(n + 1, sizeof(*out));
	if (!pol || !why || !in || !out)
		goto cleanup;
	cJSON_ArrayForEach(entry, objects) {
		const eg_pol *p;

		if (!is_policy(entry))
			continue;
		p = find(e, entry);
		if (p && p->slot >= 0) {
			egress__pol_input(p, &in[i]);
			pol[i] = &in[i];
		} else {
			why[i] = !p ? "not known to the enforcer" :
				 !p->spec ? "invalid spec" : "no policy slot left";
		}
		i++;
	}
	if (e->ops)
		rc = e->ops->actual(e->b, pol, n, out, err, sizeof(err));
	if (rc == ES_ERR_NOMEM)
		goto cleanup;
	for (i = 0; i < n; i++) {
		if (e->ops && rc == ES_OK && pol[i])
			continue;
		cJSON_Delete(out[i]);
		if (e->ops && rc == ES_OK)
			out[i] = unloaded(e->ops->unenforced, why[i]);
		else
			out[i] = unloaded("none", e->unavailable[0] ? e->unavailable :
					  err[0] ? err : "the enforcer is not loaded");
	}
	i = 0;
	cJSON_ArrayForEach(entry, objects) {
		if (!is_policy(entry))
			continue;
		if (!out[i])
			goto cleanup;
		cJSON_DeleteItemFromObjectCaseSensitive(entry, "actual");
		cJSON_AddItemToObject(entry, "actual", out[i]);
		out[i++] = NULL;
	}
	ret = 0;
cleanup:
	for (i = 0; out && i < n; i++)
		cJSON_Delete(out[i]);
	free(out);
	free(in);
	free(why);
	free(pol);
	return ret;
}

void es_egress_free(es_egress *e)
{
	if (!e)
		return;
	if (e->ctx)
		lws_sul_cancel(&e->sul);
	if (e->ops)
		e->ops->free(e->b);
	egress__pols_free(e);
	free(e);
}
