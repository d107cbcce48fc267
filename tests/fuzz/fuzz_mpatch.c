/*
 * fuzz_mpatch.c - libFuzzer target: JSON Merge Patch (lib/es_mpatch.c).
 *
 * Input: TARGET '\0' PATCH, two JSON texts (es_json_parse); an input with no
 * NUL byte is used as both. Checks:
 *  - es_mpatch_apply(target, patch) equals ref_merge below, the pseudo-code
 *    of RFC 7386 section 2 written out with cJSON's plain linear lookups;
 *  - the patch is left as it was;
 *  - a merge patch is idempotent: applying it to its own result changes
 *    nothing;
 *  - es_mpatch_diff(target, result) applied to target gives result (when
 *    result has no null member inside an object, which a merge patch cannot
 *    express: es_mpatch.h), and then diff(result, result) is empty.
 *
 * Speed is checked too: es_mpatch_apply and es_mpatch_diff must take time in
 * proportion to the input (their lookups are indexed, their comparisons
 * es_json_equal). libFuzzer's -timeout= (seconds per input; the CTest run
 * uses -timeout=2) turns an input that makes them quadratic into a failure:
 * the CTest test fuzz_mpatch_large runs this target on two pairs of objects
 * of 5 000 and 12 000 members (tests/fuzz/seed.sh) that a quadratic merge
 * or diff cannot finish in time (about 6 s each here, against 0.2 s). The
 * reference and the comparisons (fuzz_json_equal, which checks
 * es_json_equal against cJSON_Compare) look members up linearly, quadratic
 * in an object's member count themselves, so they run only on inputs of at
 * most REF_MAX bytes; larger inputs run the library alone.
 */
#include <stdlib.h>

#include "es_json.h"
#include "es_mpatch.h"
#include "fuzz_util.h"

/* Largest input (bytes) whose results are compared with the reference. */
#define REF_MAX 16384

/*
 * RFC 7386 section 2:
 *
 *   define MergePatch(Target, Patch):
 *     if Patch is an Object:
 *       if Target is not an Object:
 *         Target = {} # Ignore the contents and set it to an empty Object
 *       for each Name/Value pair in Patch:
 *         if Value is null:
 *           if Name exists in Target:
 *             remove the Name/Value pair from Target
 *         else:
 *           Target[Name] = MergePatch(Target[Name], Value)
 *       return Target
 *     else:
 *       return Patch
 *
 * target is consumed (NULL: absent); returns the result, NULL when out of
 * memory.
 */
static cJSON *ref_merge(cJSON *target, const cJSON *patch)
{
	const cJSON *pair;

	if (!cJSON_IsObject(patch)) {
		cJSON_Delete(target);
		return cJSON_Duplicate(patch, 1);
	}
	if (!cJSON_IsObject(target)) {
		cJSON_Delete(target);
		if (!(target = cJSON_CreateObject()))
			return NULL;
	}
	cJSON_ArrayForEach(pair, patch) {
		cJSON *old, *merged;

		if (cJSON_IsNull(pair)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, pair->string);
			continue;
		}
		old = cJSON_DetachItemFromObjectCaseSensitive(target, pair->string);
		merged = ref_merge(old, pair);
		if (!merged || !cJSON_AddItemToObject(target, pair->string, merged)) {
			cJSON_Delete(merged);
			cJSON_Delete(target);
			return NULL;
		}
	}
	return target;
}

static cJSON *parse(const char *p, size_t n)
{
	cJSON *v = NULL;
	char err[256];

	if (es_json_parse(p, n, ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK)
		return NULL;
	return v;
}

/* es_mpatch_apply to a copy of target; NULL when out of memory. */
static cJSON *apply_copy(const cJSON *target, const cJSON *patch)
{
	cJSON *t = cJSON_Duplicate(target, 1);

	if (!t)
		return NULL;
	if (es_mpatch_apply(&t, patch) != ES_OK) {
		cJSON_Delete(t);
		return NULL;
	}
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_piece pc[2];
	size_t n = fuzz_split(data, size, pc, 2);
	int compare = size <= REF_MAX;
	cJSON *target = NULL, *patch = NULL, *patch_copy = NULL, *result = NULL;
	cJSON *ref = NULL, *twice = NULL, *diff = NULL, *back = NULL, *self = NULL;

	if (n == 1)
		pc[1] = pc[0];
	if (!(target = parse(pc[0].p, pc[0].n)) || !(patch = parse(pc[1].p, pc[1].n)) ||
	    !(patch_copy = cJSON_Duplicate(patch, 1)))
		goto cleanup;

	if (!(result = apply_copy(target, patch)))
		goto cleanup;
	FUZZ_CHECK(!compare || fuzz_json_equal(patch, patch_copy), "the patch changed");
	if (compare) {
		if (!(ref = ref_merge(cJSON_Duplicate(target, 1), patch)))
			goto cleanup;
		FUZZ_CHECK(fuzz_json_equal(result, ref),
			   "result differs from RFC 7386: %s vs %s",
			   fuzz_json_show(result, 0), fuzz_json_show(ref, 1));
	}

	if (!(twice = apply_copy(result, patch)))
		goto cleanup;
	FUZZ_CHECK(!compare || fuzz_json_equal(twice, result),
		   "applying the patch again changed the result: %s vs %s",
		   fuzz_json_show(twice, 0), fuzz_json_show(result, 1));

	if (es_mpatch_diff(target, result, &diff) != ES_OK || !(back = apply_copy(target, diff)))
		goto cleanup;
	FUZZ_CHECK(!compare || fuzz_has_null_member(result) || fuzz_json_equal(back, result),
		   "target + diff(target, result) = %s, not the result %s",
		   fuzz_json_show(back, 0), fuzz_json_show(result, 1));

	if (es_mpatch_diff(result, result, &self) != ES_OK)
		goto cleanup;
	FUZZ_CHECK(!cJSON_IsObject(result) || fuzz_has_null_member(result) ||
		   (cJSON_IsObject(self) && self->child == NULL),
		   "diff(result, result) is not {}: %s", fuzz_json_show(self, 0));
cleanup:
	cJSON_Delete(target);
	cJSON_Delete(patch);
	cJSON_Delete(patch_copy);
	cJSON_Delete(result);
	cJSON_Delete(ref);
	cJSON_Delete(twice);
	cJSON_Delete(diff);
	cJSON_Delete(back);
	cJSON_Delete(self);
	return 0;
}
