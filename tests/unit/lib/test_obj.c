/* Unit tests of lib/es_obj.c: kinds, names, validation, selectors, uids. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_json.h"
#include "es_obj.h"

static cJSON *J(const char *s)
{
	char err[256] = "";
	cJSON *v = NULL;

	if (es_json_parse(s, strlen(s), ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK)
		fail_msg("fixture does not parse: %s: %s", s, err);
	return v;
}

static void test_name_valid(void **state)
{
	char longest[ES_NAME_MAX + 2];
	static const char *const good[] = {
		"a", "0", "node-1", "a.b.c", "edge01.site-a.example", "1-2", "a-b.c-d",
	};
	static const char *const bad[] = {
		"", "-a", "a-", ".a", "a.", "a..b", "a.-b", "a-.b", "Node1", "a_b",
		"a b", "a/b", "\xc3\xa9", "a\nb",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!es_obj_name_valid(good[i]))
			fail_msg("\"%s\" refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (es_obj_name_valid(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
	assert_false(es_obj_name_valid(NULL));
	memset(longest, 'a', ES_NAME_MAX);
	longest[ES_NAME_MAX] = '\0';
	assert_true(es_obj_name_valid(longest));
	longest[ES_NAME_MAX] = 'a';
	longest[ES_NAME_MAX + 1] = '\0';
	assert_false(es_obj_name_valid(longest));
}

static void test_kind_parse(void **state)
{
	(void)state;
	assert_int_equal(es_obj_kind_parse("CollectorConfig"), ES_KIND_COLLECTOR_CONFIG);
	assert_int_equal(es_obj_kind_parse("collectorconfig"), ES_KIND_COLLECTOR_CONFIG);
	assert_int_equal(es_obj_kind_parse("collectorconfigs"), ES_KIND_COLLECTOR_CONFIG);
	assert_int_equal(es_obj_kind_parse("CC"), ES_KIND_COLLECTOR_CONFIG);
	assert_int_equal(es_obj_kind_parse("healthrules"), ES_KIND_HEALTH_RULE);
	assert_int_equal(es_obj_kind_parse("hr"), ES_KIND_HEALTH_RULE);
	assert_int_equal(es_obj_kind_parse("EgressPolicies"), ES_KIND_EGRESS_POLICY);
	assert_int_equal(es_obj_kind_parse("ep"), ES_KIND_EGRESS_POLICY);
	assert_int_equal(es_obj_kind_parse("egresspolicy"), ES_KIND_EGRESS_POLICY);
	assert_int_equal(es_obj_kind_parse("nodes"), ES_KIND_NODE);
	assert_int_equal(es_obj_kind_parse("node"), ES_KIND_NODE);
	assert_int_equal(es_obj_kind_parse("no"), ES_KIND_NODE);
	assert_int_equal(es_obj_kind_parse("pods"), ES_KIND_UNKNOWN);
	assert_int_equal(es_obj_kind_parse("egresspolicys"), ES_KIND_UNKNOWN);
	assert_int_equal(es_obj_kind_parse(""), ES_KIND_UNKNOWN);
	assert_int_equal(es_obj_kind_parse(NULL), ES_KIND_UNKNOWN);
	assert_string_equal(es_obj_kind_name(ES_KIND_HEALTH_RULE), "HealthRule");
	assert_string_equal(es_obj_kind_plural(ES_KIND_EGRESS_POLICY), "egresspolicies");
	assert_string_equal(es_obj_kind_plural(ES_KIND_NODE), "nodes");
	assert_null(es_obj_kind_name(ES_KIND_UNKNOWN));
	assert_null(es_obj_kind_plural(ES_KIND_UNKNOWN));
	/* REST path segments: the exact plural only */
	assert_int_equal(es_obj_kind_from_plural("collectorconfigs"), ES_KIND_COLLECTOR_CONFIG);
	assert_int_equal(es_obj_kind_from_plural("healthrules"), ES_KIND_HEALTH_RULE);
	assert_int_equal(es_obj_kind_from_plural("egresspolicies"), ES_KIND_EGRESS_POLICY);
	assert_int_equal(es_obj_kind_from_plural("nodes"), ES_KIND_NODE);
	assert_int_equal(es_obj_kind_from_plural("Nodes"), ES_KIND_UNKNOWN);
	assert_int_equal(es_obj_kind_from_plural("hr"), ES_KIND_UNKNOWN);
	assert_int_equal(es_obj_kind_from_plural("HealthRule"), ES_KIND_UNKNOWN);
	assert_int_equal(es_obj_kind_from_plural(NULL), ES_KIND_UNKNOWN);
}

#define CC_HEAD "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\"," \
		"\"metadata\":{\"name\":\"default\"},"

static void expect_invalid(const char *text, const char *msg_part)
{
	cJSON *o = J(text);
	char err[256] = "";

	if (es_obj_validate_desired(o, err, sizeof(err)) != ES_ERR_INVAL)
		fail_msg("accepted: %s", text);
	if (strstr(err, msg_part) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"", err, msg_part);
	cJSON_Delete(o);
}

static void expect_valid(const char *text)
{
	cJSON *o = J(text);
	char err[256] = "";

	if (es_obj_validate_desired(o, err, sizeof(err)) != ES_OK)
		fail_msg("refused: %s: %s", text, err);
	cJSON_Delete(o);
}

static void test_validate_desired(void **state)
{
	(void)state;
	expect_valid(CC_HEAD "\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\"}},"
		     "\"intervalSeconds\":10,\"collectors\":[\"cpu\",\"memory\","
		     "\"filesystem\",\"network\",\"processes\"]}}");
	expect_valid(CC_HEAD "\"spec\":{}}");
	expect_valid(CC_HEAD "\"spec\":{\"intervalSeconds\":3600,\"collectors\":[]}}");
	expect_valid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		     "\"metadata\":{\"name\":\"hot\",\"uid\":\"u\",\"generation\":2,"
		     "\"resourceVersion\":7,\"creationTimestamp\":\"2026-01-02T03:04:05Z\","
		     "\"labels\":{\"example.com/team\":\"a_b.c\",\"empty\":\"\"}},"
		     "\"spec\":{\"metric\":\"processes.count\",\"operator\":\"Gt\","
		     "\"threshold\":400,\"for\":\"2s\",\"conditionType\":\"ManyProcesses\"}}");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{\"anything\":1}}",
		       "spec.anything: unknown member of a HealthRule spec");

	expect_invalid(CC_HEAD "\"spec\":{\"intervalSeconds\":0}}",
		       "spec.intervalSeconds: must be an integer in 1..3600");
	expect_invalid(CC_HEAD "\"spec\":{\"intervalSeconds\":3601}}", "spec.intervalSeconds");
	expect_invalid(CC_HEAD "\"spec\":{\"intervalSeconds\":1.5}}", "spec.intervalSeconds");
	expect_invalid(CC_HEAD "\"spec\":{\"intervalSeconds\":\"10\"}}", "spec.intervalSeconds");
	expect_invalid(CC_HEAD "\"spec\":{\"collectors\":[\"cpu\",\"gpu\"]}}",
		       "spec.collectors[1]: unknown collector \"gpu\"");
	expect_invalid(CC_HEAD "\"spec\":{\"collectors\":[\"cpu\",\"memory\",\"cpu\"]}}",
		       "spec.collectors[2]: duplicate collector \"cpu\"");
	expect_invalid(CC_HEAD "\"spec\":{\"collectors\":\"cpu\"}}", "spec.collectors");
	expect_invalid(CC_HEAD "\"spec\":{\"collectors\":[1]}}", "spec.collectors[0]");
	expect_invalid(CC_HEAD "\"spec\":{\"intervalSecond\":5}}",
		       "spec.intervalSecond: unknown member");
	expect_invalid(CC_HEAD "\"spec\":[]}", "spec: expected an object");
	expect_invalid(CC_HEAD "\"status\":{}}", "spec: required");
	expect_invalid("{\"apiVersion\":\"v1\",\"kind\":\"CollectorConfig\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{}}",
		       "apiVersion: must be \"edgesync.io/v1alpha1\", got \"v1\"");
	expect_invalid("{\"kind\":\"CollectorConfig\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}",
		       "apiVersion");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"Pod\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{}}",
		       "kind: unknown kind \"Pod\"");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"collectorconfig\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{}}", "kind: unknown kind");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"Node\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{}}", "kind: Node");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		       "\"metadata\":{\"name\":\"Bad_Name\"},\"spec\":{}}",
		       "metadata.name: \"Bad_Name\" is not a valid name");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		       "\"metadata\":{},\"spec\":{}}", "metadata.name");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"spec\":{}}", "metadata");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":1}},\"spec\":{}}",
		       "metadata.labels.a: expected a string");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"metadata\":{\"name\":\"x\",\"labels\":{\"-a\":\"b\"}},\"spec\":{}}",
		       "metadata.labels: invalid label key \"-a\"");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"0123456789012345678901"
		       "234567890123456789012345678901234567890123\"}},\"spec\":{}}",
		       "metadata.labels.a: invalid label value");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"metadata\":{\"name\":\"x\",\"generation\":-1},\"spec\":{}}",
		       "metadata.generation");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeSelector\":[]}}",
		       "spec.nodeSelector: expected an object");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"EgressPolicy\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeSelector\":"
		       "{\"matchLabels\":{\"site\":1}}}}",
		       "spec.nodeSelector.matchLabels.site: expected a string");
	expect_invalid("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		       "\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeSelector\":"
		       "{\"matchExpressions\":[]}}}",
		       "spec.nodeSelector.matchExpressions: unknown member");
	expect_invalid("[]", "expected a JSON object");
}

static void test_selects(void **state)
{
	cJSON *labels = J("{\"site\":\"lab\",\"arch\":\"arm64\"}");
	cJSON *o;

	(void)state;
	o = J("{\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\"}}}}");
	assert_true(es_obj_selects(o, labels));
	assert_false(es_obj_selects(o, NULL));
	cJSON_Delete(o);
	o = J("{\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\",\"arch\":\"amd64\"}}}}");
	assert_false(es_obj_selects(o, labels));
	cJSON_Delete(o);
	o = J("{\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"zone\":\"lab\"}}}}");
	assert_false(es_obj_selects(o, labels));
	cJSON_Delete(o);
	o = J("{\"spec\":{\"nodeSelector\":{\"matchLabels\":{}}}}");
	assert_true(es_obj_selects(o, labels));
	assert_true(es_obj_selects(o, NULL));
	cJSON_Delete(o);
	o = J("{\"spec\":{}}");
	assert_true(es_obj_selects(o, labels));
	cJSON_Delete(o);
	o = J("{\"spec\":{\"nodeSelector\":{}}}");
	assert_true(es_obj_selects(o, NULL));
	cJSON_Delete(o);
	/* A malformed selector targets nothing. */
	o = J("{\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"site\":1}}}}");
	assert_false(es_obj_selects(o, labels));
	cJSON_Delete(o);
	cJSON_Delete(labels);
}

static void test_accessors_and_cfg(void **state)
{
	cJSON *o = J(CC_HEAD "\"spec\":{\"intervalSeconds\":30,\"collectors\":[\"memory\",\"network\"]}}");
	es_collector_cfg cfg = {0, 0};
	char err[256];

	(void)state;
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "metadata"), "generation", 3);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "metadata"), "resourceVersion",
				9007199254740991.0);
	assert_string_equal(es_obj_name(o), "default");
	assert_string_equal(es_obj_kind_str(o), "CollectorConfig");
	assert_int_equal(es_obj_kind(o), ES_KIND_COLLECTOR_CONFIG);
	assert_null(es_obj_uid(o));
	assert_int_equal(es_obj_generation(o), 3);
	assert_true(es_obj_resource_version(o) == ES_JSON_MAX_INT);
	assert_int_equal(es_obj_collector_cfg(cJSON_GetObjectItem(o, "spec"), &cfg, err,
					      sizeof(err)), ES_OK);
	assert_int_equal(cfg.interval_s, 30);
	assert_int_equal(cfg.mask, ES_COLLECT_MEMORY | ES_COLLECT_NETWORK);
	assert_int_equal(es_obj_collector_cfg(NULL, &cfg, err, sizeof(err)), ES_OK);
	assert_int_equal(cfg.interval_s, ES_COLLECT_DEFAULT_INTERVAL);
	assert_int_equal(cfg.mask, ES_COLLECT_ALL);
	cJSON_Delete(o);
	assert_string_equal(es_collector_names[4], "processes");
	assert_null(es_obj_name(NULL));
	assert_int_equal(es_obj_kind(NULL), ES_KIND_UNKNOWN);
}

static void test_new_uid(void **state)
{
	char a[37], b[37];

	(void)state;
	assert_int_equal(es_obj_new_uid(a), ES_OK);
	assert_int_equal(es_obj_new_uid(b), ES_OK);
	assert_int_equal(strlen(a), 36);
	assert_string_not_equal(a, b);
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(a[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", a[i]));
	}
	assert_int_equal(a[14], '4');
	assert_non_null(strchr("89ab", a[19]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_valid),
		cmocka_unit_test(test_kind_parse),
		cmocka_unit_test(test_validate_desired),
		cmocka_unit_test(test_selects),
		cmocka_unit_test(test_accessors_and_cfg),
		cmocka_unit_test(test_new_uid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
