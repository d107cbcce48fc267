/*
 * egress_view.c - the actual kernel state of each EgressPolicy for the
 * Node's status.objects (egress.h, es_egress_annotate), and freeing the
 * enforcer.
 */
#include <stdlib.h>
#include <string.h>

#include "egress/egress_int.h"
#include "es_json.h"
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

static cJSON *unloaded(const char *reason)
{
	cJSON *a = cJSON_CreateObject();

	if (!a || !cJSON_AddStringToObject(a, "backend", "none") ||
	    !cJSON_AddBoolToObject(a, "loaded", 0) ||
	    !cJSON_AddStringToObject(a, "reason", reason)) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

/* The actual state of policy p from the kernel's active set cur. */
static cJSON *actual_of(const es_egress *e, const eg_pol *p,
			const es_eg_plan *cur, int set, const es_egk_attach *at)
{
	const struct es_eg_pol *kp;
	cJSON *a, *o, *rules;
	int loaded;

	if (!p || p->slot < 0)
		return unloaded(!p ? "not known to the enforcer" :
				!p->spec ? "invalid spec" : "no policy slot left");
	kp = &cur->pol[p->slot];
	loaded = kp->used && !strncmp(kp->uid, p->uid, sizeof(kp->uid));
	if (!(a = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(a, "backend", "ebpf") ||
	    !cJSON_AddBoolToObject(a, "loaded", loaded) ||
	    !es_json_add_int(a, "activeSet", set) ||
	    !es_json_add_int(a, "slot", p->slot))
		goto fail;
	if (loaded) {
		if (!es_json_add_int(a, "generation", (int64_t)kp->generation) ||
		    !cJSON_AddStringToObject(a, "action", kp->action == ES_EG_ACTION_ALLOW ?
					     "Allow" : "Deny") ||
		    !(rules = es_eg_plan_rules_json(cur, p->slot)) ||
		    !cJSON_AddItemToObject(a, "rules", rules) ||
		    !cJSON_AddBoolToObject(a, "nodeWide", (cur->cfg.all >> p->slot) & 1) ||
		    !es_json_add_int(a, "targetCgroups",
				     (int64_t)es_eg_plan_targets(cur, p->slot)))
			goto fail;
	}
	if (!(o = cJSON_AddObjectToObject(a, "attachments")))
		goto fail;
	for (int h = 0; h < ES_EGK_HOOKS; h++)
		if (!es_json_add_int(o, es_egk_hook_names[h], at->ours[h]))
			goto fail;
	if (!(o = cJSON_AddObjectToObject(a, "programIds")))
		goto fail;
	for (int h = 0; h < ES_EGK_HOOKS; h++)
		if (!es_json_add_int(o, es_egk_hook_names[h], at->prog_id[h]))
			goto fail;
	if (!es_json_add_int(a, "violations",
			     (int64_t)es_egk_violations(e->k, p->slot)))
		goto fail;
	return a;
fail:
	cJSON_Delete(a);
	return NULL;
}

int es_egress_annotate(es_egress *e, cJSON *objects)
{
	es_eg_plan cur;
	es_egk_attach at;
	char err[300] = "";
	cJSON *entry, *a;
	int set = 0, have = 0, ret = 0;

	if (!e)
		return 0;
	if (e->nft)
		return es_egnft_annotate(e, objects);
	memset(&cur, 0, sizeof(cur));
	memset(&at, 0, sizeof(at));
	if (e->k && es_egk_read(e->k, &cur, &set, err, sizeof(err)) == ES_OK &&
	    es_egk_attachments(e->k, &at, err, sizeof(err)) == ES_OK)
		have = 1;
	cJSON_ArrayForEach(entry, objects) {
		if (es_obj_kind(entry) != ES_KIND_EGRESS_POLICY)
			continue;
		if (have)
			a = actual_of(e, find(e, entry), &cur, set, &at);
		else
			a = unloaded(e->unavailable[0] ? e->unavailable :
				     err[0] ? err : "the enforcer is not loaded");
		if (!a) {
			ret = -1;
			break;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(entry, "actual");
		cJSON_AddItemToObject(entry, "actual", a);
	}
	es_eg_plan_free(&cur);
	return ret;
}

void es_egress_free(es_egress *e)
{
	if (!e)
		return;
	if (e->ctx)
		lws_sul_cancel(&e->sul);
	es_egk_close(e->k);
	es_egnft_free(e->nft);
	es_eg_plan_free(&e->written);
	egress__pols_free(e);
	free(e);
}
