/*
 * fuzz_yaml.c - libFuzzer target: edgesyncctl's manifest loader
 * (edgesyncctl/yaml.c es_yaml_load, YAML or JSON) and the YAML emitter
 * (edgesyncctl/yaml_emit.c es_yaml_emit).
 *
 * Every input is loaded as a manifest. A refused one must leave no tree and
 * say why. From an accepted one, every object is emitted as YAML, and the
 * emitted text must load again to exactly that object (fuzz_json_equal:
 * the same numbers, not only close ones), as yaml.h promises, and emitting
 * it again gives the same text. An object of kind List (one that was an
 * item of a top-level sequence) loads again as its items, as any List
 * document does.
 */
#include <stdlib.h>
#include <string.h>

#include "edgesyncctl/yaml.h"
#include "fuzz_util.h"

/* A document of kind List: its items (absent or null: none); NULL when
 * obj is not one. */
static const cJSON *list_items(const cJSON *obj)
{
	static const cJSON none = {.type = cJSON_Array};
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(obj, "items");

	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "List") != 0)
		return NULL;
	return cJSON_IsArray(items) ? items : &none;
}

static void round_trip(const cJSON *obj)
{
	char err[512] = "";
	char *text = es_yaml_emit(obj, err, sizeof(err)), *text2 = NULL;
	const cJSON *items = list_items(obj);
	cJSON *again = NULL;
	es_err rc;

	/* The loader never makes a non-finite number, so only a lack of
	 * memory may stop the emitter. */
	FUZZ_CHECK(text != NULL || strstr(err, "memory") != NULL || err[0] == '\0',
		   "emit failed: %s", err);
	if (!text)
		return;
	rc = es_yaml_load(text, strlen(text), "emitted", &again, err, sizeof(err));
	if (items) {
		const cJSON *it;
		int all_objects = 1;

		cJSON_ArrayForEach(it, items)
			all_objects &= cJSON_IsObject(it);
		FUZZ_CHECK(all_objects ? rc == ES_OK || rc == ES_ERR_NOMEM : rc == ES_ERR_INVAL,
			   "emitted List loads with error %d: %s\n--- emitted:\n%.2000s", rc,
			   err, text);
		FUZZ_CHECK(rc != ES_OK || fuzz_json_equal(items, again),
			   "emitted List loads as %s, not its items %s", fuzz_json_show(again, 0),
			   fuzz_json_show(items, 1));
		goto cleanup;
	}
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM,
		   "emitted YAML does not load: %s\n--- emitted:\n%.2000s", err, text);
	if (rc != ES_OK)
		goto cleanup;
	FUZZ_CHECK(cJSON_GetArraySize(again) == 1,
		   "emitted YAML loads as %d objects\n--- emitted:\n%.2000s",
		   cJSON_GetArraySize(again), text);
	FUZZ_CHECK(fuzz_json_equal(obj, again->child),
		   "emitted YAML loads as another object: %s vs %s\n--- emitted:\n%.2000s",
		   fuzz_json_show(obj, 0), fuzz_json_show(again->child, 1), text);
	text2 = es_yaml_emit(again->child, err, sizeof(err));
	FUZZ_CHECK(!text2 || strcmp(text, text2) == 0,
		   "emitting the loaded object again differs:\n%.2000s\n--- vs:\n%.2000s",
		   text, text2);
cleanup:
	cJSON_Delete(again);
	free(text);
	free(text2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *list = NULL;
	const cJSON *obj;
	char err[512] = "";
	es_err rc = es_yaml_load((const char *)data, size, "fuzz", &list, err, sizeof(err));

	if (rc != ES_OK) {
		FUZZ_CHECK(list == NULL, "a refused manifest left a tree");
		FUZZ_CHECK(rc == ES_ERR_PARSE || rc == ES_ERR_INVAL || rc == ES_ERR_TOOBIG ||
			   rc == ES_ERR_NOMEM, "unexpected error %d", rc);
		FUZZ_CHECK(err[0] != '\0', "refused without a message");
		return 0;
	}
	FUZZ_CHECK(cJSON_IsArray(list), "a manifest loads as an array");
	cJSON_ArrayForEach(obj, list) {
		FUZZ_CHECK(cJSON_IsObject(obj), "a manifest item is not an object");
		round_trip(obj);
	}
	cJSON_Delete(list);
	return 0;
}
