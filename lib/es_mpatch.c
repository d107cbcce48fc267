/*
 * es_mpatch.c - JSON Merge Patch (RFC 7386): apply and diff.
 *
 * Both build new trees from const inputs, so an allocation failure leaves
 * every input as it was.
 */
#include <stddef.h>

#include "es_json.h"
#include "es_mpatch.h"

/* Adds item under key, taking ownership; deletes it when adding fails. */
static int add_owned(cJSON *obj, const char *key, cJSON *item)
{
	if (item == NULL)
		return -1;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

/* RFC 7386 section 2, MergePatch(Target, Patch), returning a new tree.
 * target may be NULL (absent). Member lookups go through an index of each
 * object, so the cost is in proportion to the sizes (times a log), never
 * to their product. Returns NULL only on allocation failure. */
static cJSON *merge(const cJSON *target, const cJSON *patch)
{
	cJSON *result = NULL;
	const cJSON *m, *keep = cJSON_IsObject(target) ? target : NULL;
	es_json_index pix = {0}, tix = {0};

	if (!cJSON_IsObject(patch))
		return cJSON_Duplicate(patch, 1);
	if (es_json_index_init(&pix, patch) != ES_OK ||
	    es_json_index_init(&tix, target) != ES_OK)
		goto fail;
	result = cJSON_CreateObject();
	if (result == NULL)
		goto fail;
	/* Target members the patch does not touch are kept in order. */
	cJSON_ArrayForEach(m, keep) {
		if (m->string == NULL || es_json_index_find(&pix, m->string) != NULL)
			continue;
		if (add_owned(result, m->string, cJSON_Duplicate(m, 1)) < 0)
			goto fail;
	}
	cJSON_ArrayForEach(m, patch) {
		if (m->string == NULL || cJSON_IsNull(m))
			continue;
		/* A key repeated in the patch: its first occurrence wins, as
		 * for every cJSON lookup. */
		if (es_json_index_find(&pix, m->string) != m)
			continue;
		if (add_owned(result, m->string,
			      merge(es_json_index_find(&tix, m->string), m)) < 0)
			goto fail;
	}
	es_json_index_free(&pix);
	es_json_index_free(&tix);
	return result;
fail:
	es_json_index_free(&pix);
	es_json_index_free(&tix);
	cJSON_Delete(result);
	return NULL;
}

es_err es_mpatch_apply(cJSON **target, const cJSON *patch)
{
	cJSON *result;

	if (target == NULL || patch == NULL)
		return ES_ERR_INVAL;
	result = merge(*target, patch);
	if (result == NULL)
		return ES_ERR_NOMEM;
	cJSON_Delete(*target);
	*target = result;
	return ES_OK;
}

static cJSON *diff_objects(const cJSON *from, const cJSON *to);

/* es_json_diff_members callback: one member's change into the object ctx. */
static int diff_one(const char *name, const cJSON *f, const cJSON *t, void *ctx)
{
	cJSON *out = ctx;

	if (t == NULL)
		return add_owned(out, name, cJSON_CreateNull());
	if (cJSON_IsObject(f) && cJSON_IsObject(t)) {
		cJSON *sub = diff_objects(f, t);

		if (sub == NULL)
			return -1;
		if (sub->child == NULL) {
			cJSON_Delete(sub);
			return 0;
		}
		return add_owned(out, name, sub);
	}
	return add_owned(out, name, cJSON_Duplicate(t, 1));
}

/* Diff of two objects (members paired and compared by
 * es_json_diff_members); NULL on allocation failure. */
static cJSON *diff_objects(const cJSON *from, const cJSON *to)
{
	cJSON *out = cJSON_CreateObject();

	if (out != NULL && es_json_diff_members(from, to, diff_one, out) < 0) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

es_err es_mpatch_diff(const cJSON *from, const cJSON *to, cJSON **out)
{
	cJSON *res;

	if (out == NULL)
		return ES_ERR_INVAL;
	*out = NULL;
	if (to == NULL)
		res = cJSON_CreateNull();
	else if (cJSON_IsObject(from) && cJSON_IsObject(to))
		res = diff_objects(from, to);
	else
		res = cJSON_Duplicate(to, 1);
	if (res == NULL)
		return ES_ERR_NOMEM;
	*out = res;
	return ES_OK;
}
