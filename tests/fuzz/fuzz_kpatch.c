/*
 * fuzz_kpatch.c - libFuzzer target: keyed changes of a Node
 * (lib/es_kpatch.c).
 *
 * The input is two JSON values separated by a NUL byte, A and B (a
 * report message stands for its body). Checked:
 *  - es_kpatch_apply(A, B) with B as a change from a peer never crashes
 *    and either fails with ES_ERR_INVAL or ES_ERR_NOMEM leaving A as it
 *    was, or succeeds;
 *  - es_kpatch_diff(A, B) applied to A gives B, lists in B's order (when
 *    B is an object without null members or "$" names, which a Node
 *    never has);
 *  - es_kpatch_diff(B, B) is {}.
 */
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "es_json.h"
#include "es_kpatch.h"
#include "fuzz_util.h"

/* The value of p, or its body when it is a report message. */
static cJSON *parse(const char *p, size_t n)
{
	cJSON *v = NULL, *body;
	char err[256];

	if (es_json_parse(p, n, ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK)
		return NULL;
	body = cJSON_GetObjectItemCaseSensitive(v, "body");
	if (cJSON_IsObject(body)) {
		body = cJSON_DetachItemViaPointer(v, body);
		cJSON_Delete(v);
		return body;
	}
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_piece pc[2];
	size_t n = fuzz_split(data, size, pc, 2);
	cJSON *a = NULL, *b = NULL, *t = NULL, *d = NULL, *self = NULL;
	char err[256];
	es_err rc;

	if (n == 1)
		pc[1] = pc[0];
	if (!(a = parse(pc[0].p, pc[0].n)) || !(b = parse(pc[1].p, pc[1].n)))
		goto cleanup;

	/* B as a change from a peer. */
	if (!(t = cJSON_Duplicate(a, 1)))
		goto cleanup;
	rc = es_kpatch_apply(&t, b, err, sizeof(err));
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_INVAL || rc == ES_ERR_NOMEM,
		   "apply returned %d", (int)rc);
	FUZZ_CHECK(rc == ES_OK || es_json_equal(t, a) == 1,
		   "a refused change altered the target: %s", fuzz_json_show(t, 0));
	cJSON_Delete(t);
	t = NULL;

	/* The change from A to B. */
	if (!cJSON_IsObject(b) || fuzz_has_null_member(b))
		goto cleanup;
	rc = es_kpatch_diff(a, b, &d);
	/* A "$" member (in A or B) no change can express: refused, nothing
	 * else is. */
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM ||
		   (rc == ES_ERR_INVAL &&
		    (es_kpatch_has_directive(a) || es_kpatch_has_directive(b))),
		   "diff refused a document without directives: %d", (int)rc);
	if (rc != ES_OK || !(t = cJSON_Duplicate(a, 1)))
		goto cleanup;
	rc = es_kpatch_apply(&t, d, err, sizeof(err));
	if (rc == ES_ERR_NOMEM)
		goto cleanup;
	FUZZ_CHECK(rc == ES_OK, "the change diff made is refused: %s (%s)", err,
		   fuzz_json_show(d, 0));
	FUZZ_CHECK(es_json_equal(t, b) == 1, "A + diff(A, B) = %s, not B %s",
		   fuzz_json_show(t, 0), fuzz_json_show(b, 1));
	if (es_kpatch_diff(b, b, &self) != ES_OK)
		goto cleanup;
	FUZZ_CHECK(self->child == NULL, "diff(B, B) is not {}: %s", fuzz_json_show(self, 0));
cleanup:
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(t);
	cJSON_Delete(d);
	cJSON_Delete(self);
	return 0;
}
