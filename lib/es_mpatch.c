/*
 * es_mpatch.c - JSON Merge Patch (RFC 7386): apply and diff.
 *
 * Both build new trees from const inputs, so an allocation failure leaves
 * every input as it was.
 */
#include <stddef.h>

#include "es_mpatch.h"

static cJSON *get_member(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

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
 * target may be NULL (absent). Returns NULL only on allocation failure. */
static cJSON *merge(const cJSON *target, const cJSON *patch)
{
	cJSON *result = NULL;
	const cJSON *m;

	if (!cJSON_IsObject(patch))
		return cJSON_Duplicate(patch, 1);
	result = cJSON_CreateObject();
	if (result == NULL)
		return NULL;
	/* Target members the patch does not touch are kept in order. */
	if (cJSON_IsObject(target)) {
		cJSON_ArrayForEach(m, target) {
			if (m->string == NULL || get_member(patch, m->string) != NULL)
				continue;
			if (add_owned(result, m->string, cJSON_Duplicate(m, 1)) < 0)
				goto fail;
		}
	}
	cJSON_ArrayForEach(m, patch) {
		const cJSON *old;

		if (m->string == NULL || cJSON_IsNull(m))
			continue;
		/* A key repeated in the patch: its first occurrence wins, as
		 * for every cJSON lookup. */
		if (get_member(patch, m->string) != m)
			continue;
		old = cJSON_IsObject(target) ? get_member(target, m->string) : NULL;
		if (add_owned(result, m->string, merge(old, m)) < 0)
			goto fail;
	}
	return result;
fail:
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

/* Diff of two objects; NULL on allocation failure. */
static cJSON *diff_objects(const cJSON *from, const cJSON *to)
{
	cJSON *out = cJSON_CreateObject();
	const cJSON *m;

	if (out == NULL)
		return NULL;
	cJSON_ArrayForEach(m, from) {
		const cJSON *t;

		if (m->string == NULL || get_member(from, m->string) != m)
			continue;
		t = get_member(to, m->string);
		if (t == NULL || cJSON_IsNull(t)) {
			if (add_owned(out, m->string, cJSON_CreateNull()) < 0)
				goto fail;
			continue;
		}
		if (cJSON_Compare(m, t, 1))
			continue;
		if (cJSON_IsObject(m) && cJSON_IsObject(t)) {
			cJSON *sub = diff_objects(m, t);

			if (sub == NULL)
				goto fail;
			if (sub->child == NULL) {
				cJSON_Delete(sub);
				continue;
			}
			if (add_owned(out, m->string, sub) < 0)
				goto fail;
			continue;
		}
		if (add_owned(out, m->string, cJSON_Duplicate(t, 1)) < 0)
			goto fail;
	}
	cJSON_ArrayForEach(m, to) {
		if (m->string == NULL || cJSON_IsNull(m) ||
		    get_member(to, m->string) != m)
			continue;
		if (get_member(from, m->string) != NULL &&
		    !cJSON_IsNull(get_member(from, m->string)))
			continue;
		if (add_owned(out, m->string, cJSON_Duplicate(m, 1)) < 0)
			goto fail;
	}
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
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
