/* test_ctl_yaml.c - edgesyncctl/yaml.c: manifests to JSON and back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgesyncctl/yaml.h"
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
	/* A JSON manifest is held to the same rules as a YAML one. */
	assert_int_equal(es_yaml_load("{\"a\":1,\"a\":2}", 13, "jd", &out, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_non_null(strstr(err, "duplicate member name \"a\""));
	assert_int_equal(es_yaml_load("{\"n\":1e999}", 11, "ji", &out, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(es_yaml_load("{\"n\":18446744073709551616}", 26, "jb", &out, err,
				      sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "out of range"));
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

/* Writes "spec:\n  a: " and depth '[' then depth ']' into a new string. */
static char *nested(size_t depth, size_t *len)
{
	static const char head[] = "spec:\n  a: ";
	size_t hl = sizeof(head) - 1;
	char *s = malloc(hl + 2 * depth + 2);

	assert_non_null(s);
	memcpy(s, head, hl);
	memset(s + hl, '[', depth);
	memset(s + hl + depth, ']', depth);
	s[hl + 2 * depth] = '\n';
	s[hl + 2 * depth + 1] = '\0';
	*len = hl + 2 * depth + 1;
	return s;
}

/* A 400 KB document 200 000 levels deep is refused at level 65, before the
 * rest is read (the node-graph loader took over a minute on it). */
static void test_deep_nesting_refused(void **state)
{
	char err[256] = "";
	cJSON *out = (cJSON *)1;
	size_t len;
	char *s;
	(void)state;

	s = nested(200000, &len);
	assert_int_equal(es_yaml_load(s, len, "deep.yaml", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_null(out);
	assert_non_null(strstr(err, "nesting deeper than 64"));
	/* the document is level 1, spec's mapping level 2, the first '[' (column
	 * 6) level 3: the 63rd, at column 68, opens level 65 */
	assert_non_null(strstr(err, "deep.yaml:2:"));
	assert_non_null(strstr(err, "deep.yaml:2:68: "));
	free(s);

	/* level 64 is allowed: two mappings, then 62 sequences */
	s = nested(62, &len);
	assert_int_equal(es_yaml_load(s, len, "ok", &out, err, sizeof(err)), ES_OK);
	cJSON_Delete(out);
	free(s);
	/* a scalar at level 65 is refused like a container */
	{
		char *t = malloc(200);
		size_t n;
		assert_non_null(t);
		strcpy(t, "spec:\n  a: ");
		n = strlen(t);
		memset(t + n, '[', 62);
		t[n + 62] = '1';
		memset(t + n + 63, ']', 62);
		t[n + 125] = '\0';
		assert_int_equal(es_yaml_load(t, strlen(t), "s", &out, err, sizeof(err)), ES_ERR_PARSE);
		assert_non_null(strstr(err, "nesting deeper than 64"));
		free(t);
	}
}

/* An alias counts with the height and size of the node it copies. */
static void test_aliases(void **state)
{
	char err[256] = "";
	cJSON *out = NULL;
	const char *ok = "kind: A\nmetadata: &m {name: x, labels: {k: &v \"10\"}}\n"
			 "spec: {copy: *m, v: *v, n: &n 5, m: *n, *v : key}\n";
	const char *self = "kind: A\nspec: &s {a: *s}\n";
	const char *undef = "kind: A\nspec: *nope\n";
	const char *mapkey = "kind: A\nspec: {[a]: 1}\n";
	(void)state;

	assert_int_equal(es_yaml_load(ok, strlen(ok), "ok", &out, err, sizeof(err)), ES_OK);
	assert_json_eq(cJSON_GetArrayItem(out, 0),
		"{\"kind\":\"A\",\"metadata\":{\"name\":\"x\",\"labels\":{\"k\":\"10\"}},"
		"\"spec\":{\"copy\":{\"name\":\"x\",\"labels\":{\"k\":\"10\"}},\"v\":\"10\","
		"\"n\":5,\"m\":5,\"10\":\"key\"}}");
	cJSON_Delete(out);
	assert_int_equal(es_yaml_load(self, strlen(self), "self", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "self:2:14: alias *s refers to a node that contains it"));
	assert_int_equal(es_yaml_load(undef, strlen(undef), "u", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "u:2:7: undefined alias *nope"));
	assert_int_equal(es_yaml_load(mapkey, strlen(mapkey), "k", &out, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "mapping key is not a scalar"));
	/* an alias of a 59-level node placed at level 7 would reach level 65 */
	{
		size_t len, n;
		char *s = nested(59, &len), *t;
		/* "spec:\n  a: &d [[...]]" is levels 3..61; *d is at level 7 */
		t = malloc(len + 64);
		assert_non_null(t);
		n = (size_t)snprintf(t, len + 64, "spec:\n  a: &d %s", s + 11);
		n += (size_t)snprintf(t + n, len + 64 - n, "  b: [[[[*d]]]]\n");
		assert_int_equal(es_yaml_load(t, n, "h", &out, err, sizeof(err)), ES_ERR_PARSE);
		assert_non_null(strstr(err, "h:3:10: nesting deeper than 64"));
		free(s);
		free(t);
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
		  "\"n\":[0,-7,1.5,0.1,1e300,-2.5e-10,9007199254740991,-9007199254740991],"
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
		cmocka_unit_test(test_deep_nesting_refused),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_emit_roundtrip),
		cmocka_unit_test(test_emit_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
