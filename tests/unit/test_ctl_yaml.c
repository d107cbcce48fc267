/* test_ctl_yaml.c - controller/ctl/yaml.c: manifests to JSON and back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/yaml.h"
#include "es_json.h"

static cJSON *load_ok(const char *text)
{
	char err[256] = "";
	cJSON *out = NULL;
	es_err rc = es_yaml_load(text, strlen(text), "t.yaml", &out, err, sizeof(err));
	if (rc != ES_OK)
		fail_msg("load failed: %s", err);
	assert_non_null(out);
	return out;
}

static cJSON *json(const char *text)
{
	cJSON *v = NULL;
	assert_int_equal(es_json_parse(text, strlen(text), 64, &v, NULL, 0), ES_OK);
	return v;
}

static void assert_json_eq(const cJSON *got, const char *want)
{
	cJSON *w = json(want);
	if (!cJSON_Compare(got, w, 1)) {
		char *g = cJSON_PrintUnformatted(got);
		fail_msg("got %s\nwant %s", g, want);
	}
	cJSON_Delete(w);
}

static void test_multi_doc_types(void **state)
{
	(void)state;
	cJSON *out = load_ok(
		"apiVersion: edgesync.io/v1alpha1\n"
		"kind: CollectorConfig\n"
		"metadata:\n"
		"  name: default\n"
		"  labels: {site: lab, zone: \"10\"}\n"
		"spec:\n"
		"  intervalSeconds: 10\n"
		"  ratio: 0.5\n"
		"  neg: -3\n"
		"  hex: 0x1F\n"
		"  oct: 0o17\n"
		"  on: true\n"
		"  off: False\n"
		"  none: null\n"
		"  tilde: ~\n"
		"  empty:\n"
		"  quoted: '42'\n"
		"  dq: \"true\"\n"
		"  yes11: yes\n"
		"  word: 10s\n"
		"  inf: .inf\n"
		"  collectors:\n"
		"  - cpu\n"
		"  - memory\n"
		"---\n"
		"# comment only\n"
		"---\n"
		"kind: HealthRule\n"
		"metadata: {name: hr1}\n");
	assert_int_equal(cJSON_GetArraySize(out), 2);
	assert_json_eq(cJSON_GetArrayItem(out, 0),
		"{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		"\"metadata\":{\"name\":\"default\",\"labels\":{\"site\":\"lab\",\"zone\":\"10\"}},"
		"\"spec\":{\"intervalSeconds\":10,\"ratio\":0.5,\"neg\":-3,\"hex\":31,\"oct\":15,"
		"\"on\":true,\"off\":false,\"none\":null,\"tilde\":null,\"empty\":null,"
		"\"quoted\":\"42\",\"dq\":\"true\",\"yes11\":\"yes\",\"word\":\"10s\",\"inf\":\".inf\","
		"\"collectors\":[\"cpu\",\"memory\"]}}");
	assert_json_eq(cJSON_GetArrayItem(out, 1),
		"{\"kind\":\"HealthRule\",\"metadata\":{\"name\":\"hr1\"}}");
	cJSON_Delete(out);
}

static void test_list_expands(void **state)
{
	(void)state;
	cJSON *out = load_ok("apiVersion: v1\nkind: List\nitems:\n"
			     "- {kind: CollectorConfig, metadata: {name: a}}\n"
			     "- {kind: EgressPolicy, metadata: {name: b}}\n"
			     "---\nkind: HealthRule\nmetadata: {name: c}\n");
	assert_int_equal(cJSON_GetArraySize(out), 3);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 0), "metadata"), "name")->valuestring, "a");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 1), "kind")->valuestring, "EgressPolicy");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 2), "kind")->valuestring, "HealthRule");
	cJSON_Delete(out);
}

static void test_json_input(void **state)
{
	(void)state;
	cJSON *out = load_ok("  {\"kind\":\"CollectorConfig\",\"metadata\":{\"name\":\"x\"},"
			     "\"spec\":{\"intervalSeconds\":5}}\n");
	assert_int_equal(cJSON_GetArraySize(out), 1);
	assert_json_eq(cJSON_GetArrayItem(out, 0),
		"{\"kind\":\"CollectorConfig\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"intervalSeconds\":5}}");
	cJSON_Delete(out);
	out = load_ok("{\"kind\":\"List\",\"items\":[{\"kind\":\"A\"},{\"kind\":\"B\"}]}");
	assert_int_equal(cJSON_GetArraySize(out), 2);
	cJSON_Delete(out);
	out = load_ok("[{\"kind\":\"A\"},{\"kind\":\"B\"},{\"kind\":\"C\"}]");
	assert_int_equal(cJSON_GetArraySize(out), 3);
	cJSON_Delete(out);
}

static void test_errors(void **state)
{
	char err[256] = "";
	cJSON *out = (cJSON *)1;
	(void)state;

	/* line 3, column 6: "b: c: d" has a mapping value where none is allowed */
	assert_int_equal(es_yaml_load("a: 1\nx: 2\nb: c: d\n", 18, "m.yaml", &out, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_null(out);
	assert_non_null(strstr(err, "m.yaml:3:5"));
	assert_int_equal(es_yaml_load("a: [1, 2\n", 9, "f", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "f:2:1"));
	assert_int_equal(es_yaml_load("a: 1\na: 2\n", 10, "d", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "duplicate key \"a\""));
	assert_non_null(strstr(err, "d:2:1"));
	assert_int_equal(es_yaml_load("just text\n", 10, "s", &out, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "document 1 is not a mapping"));
	assert_int_equal(es_yaml_load("- 1\n- 2\n", 8, "s", &out, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "list item is not a mapping"));
	assert_int_equal(es_yaml_load("{\"a\": }", 7, "j", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "j: "));
	assert_int_equal(es_yaml_load("n: 9007199254740993\n", 20, "big", &out, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_non_null(strstr(err, "big:1:4"));
	/* alias bomb: bounded by the value count, not by memory */
	{
		const char *bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
				   "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
				   "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
				   "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
				   "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
				   "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n";
		assert_int_equal(es_yaml_load(bomb, strlen(bomb), "bomb", &out, err, sizeof(err)),
				 ES_ERR_TOOBIG);
	}
}

static void roundtrip(const char *json_text)
{
	char err[256] = "";
	cJSON *in = json(json_text), *back = NULL;
	char *y = es_yaml_emit(in, err, sizeof(err));
	if (!y)
		fail_msg("emit failed: %s", err);
	if (es_yaml_load(y, strlen(y), "emitted", &back, err, sizeof(err)) != ES_OK)
		fail_msg("reload failed: %s\n%s", err, y);
	assert_int_equal(cJSON_GetArraySize(back), 1);
	if (!cJSON_Compare(in, cJSON_GetArrayItem(back, 0), 1))
		fail_msg("round trip differs:\n%s", y);
	free(y);
	cJSON_Delete(in);
	cJSON_Delete(back);
}

static void test_emit_roundtrip(void **state)
{
	(void)state;
	roundtrip("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		  "\"metadata\":{\"name\":\"default\",\"generation\":3,\"labels\":{}},"
		  "\"spec\":{\"intervalSeconds\":10,\"collectors\":[\"cpu\",\"memory\"],"
		  "\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\"}},\"empty\":[]}}");
	roundtrip("{\"s\":[\"true\",\"false\",\"null\",\"~\",\"\",\"10\",\"-1.5e3\",\"0x1F\","
		  "\"yes\",\"no\",\"on\",\"a: b\",\"- x\",\"#c\",\" lead\",\"trail \","
		  "\"multi\\nline\\n\",\"tab\\there\",\"quote'\\\"\",\"ünïcode\",\"[x]\",\"{y}\","
		  "\"@at\",\"*star\",\"&amp\",\"!bang\",\"%pct\",\"|pipe\",\">gt\",\"x\\u0001y\"],"
		  "\"n\":[0,-7,1.5,0.1,1e300,-2.5e-10,9007199254740991,9007199254740994],"
		  "\"b\":[true,false,null],\"nested\":[[1,[2]],{\"k\":{\"k2\":[]}}],"
		  "\"true\":1,\"10\":\"ten\",\"key with: colon\":\"v\"}");
}

static void test_emit_layout(void **state)
{
	char err[64];
	cJSON *in = json("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"collectors\":[\"cpu\"],\"v\":\"10\"}}");
	char *y = es_yaml_emit(in, err, sizeof(err));
	(void)state;
	assert_non_null(y);
	assert_string_equal(y, "metadata:\n  name: a\nspec:\n  collectors:\n  - cpu\n  v: \"10\"\n");
	free(y);
	cJSON_Delete(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multi_doc_types),
		cmocka_unit_test(test_list_expands),
		cmocka_unit_test(test_json_input),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_emit_roundtrip),
		cmocka_unit_test(test_emit_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
