/*
 * fuzz_yaml.c - libFuzzer target: edgesyncctl's manifest loader
 * (edgesyncctl/yaml.c es_yaml_load, YAML or JSON) and the YAML emitter
 * (edgesyncctl/yaml_emit.c es_yaml_emit).
 *
 * Every input is loaded as a manifest. A refused one must leave no tree and
 * say why. From an accepted one, every object is emitted as YAML, and the
 * emitted text must load again to exactly one object equal to it
 * (fuzz_json_equal: the same numbers, not only close ones), as yaml.h
 * promises; emitting that object again gives the same text.
 */
#include <stdlib.h>
#include <string.h>

#include "edgesyncctl/yaml.h"
#include "fuzz_util.h"

static void round_trip(const cJSON *obj)
{
	char err[512] = "";
	char *text = es_yaml_emit(obj, err, sizeof(err)), *text2 = NULL;
	cJSON *again = NULL;
	es_err rc;

	/* The loader never makes a non-finite number, so only a lack of
	 * memory may stop the emitter. */
	FUZZ_CHECK(text != NULL || strstr(err, "memory") != NULL || err[0] == '\0',
		   "emit failed: %s", err);
	if (!text)
		return;
	rc = es_yaml_load(text, strlen(text), "emitted", &again, err, sizeof(err));
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
