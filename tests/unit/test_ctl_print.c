/* test_ctl_print.c - controller/ctl/print.c: ages, sizes, node tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/print.h"
#include "es_json.h"

static void test_age(void **state)
{
	char b[32];
	(void)state;
	assert_string_equal(es_print_age(-5, b, sizeof(b)), "0s");
	assert_string_equal(es_print_age(45, b, sizeof(b)), "45s");
	assert_string_equal(es_print_age(330, b, sizeof(b)), "5m30s");
	assert_string_equal(es_print_age(42 * 60, b, sizeof(b)), "42m");
	assert_string_equal(es_print_age(3 * 3600 + 20 * 60, b, sizeof(b)), "3h20m");
	assert_string_equal(es_print_age(30 * 3600, b, sizeof(b)), "30h");
	assert_string_equal(es_print_age(3 * 86400 + 4 * 3600, b, sizeof(b)), "3d4h");
	assert_string_equal(es_print_age(120 * 86400, b, sizeof(b)), "120d");
	assert_string_equal(es_print_age_of("2026-01-01T00:00:10Z", 1767225610 + 60, b, sizeof(b)), "60s");
	assert_string_equal(es_print_age_of("garbage", 0, b, sizeof(b)), "<unknown>");
}

static void test_bytes(void **state)
{
	char b[32];
	(void)state;
	assert_string_equal(es_print_bytes(512, b, sizeof(b)), "512");
	assert_string_equal(es_print_bytes(1536, b, sizeof(b)), "1.5Ki");
	assert_string_equal(es_print_bytes(16.0 * 1024 * 1024 * 1024, b, sizeof(b)), "16Gi");
}

static char *capture_nodes(const char *json, int wide)
{
	cJSON *v = NULL;
	FILE *f = tmpfile();
	char *buf = calloc(1, 4096);
	size_t n;

	assert_non_null(f);
	assert_int_equal(es_json_parse(json, strlen(json), 64, &v, NULL, 0), ES_OK);
	assert_int_equal(es_print_nodes(f, v, wide, 1767225600 + 90), ES_OK);
	rewind(f);
	n = fread(buf, 1, 4095, f);
	buf[n] = '\0';
	fclose(f);
	cJSON_Delete(v);
	return buf;
}

static void test_nodes_table(void **state)
{
	const char *list =
		"{\"kind\":\"NodeList\",\"items\":["
		"{\"metadata\":{\"name\":\"node-a\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
		"\"status\":{\"nodeInfo\":{\"agentVersion\":\"0.1.0\",\"kernelVersion\":\"6.1.0\",\"osImage\":\"Debian 12\"},"
		"\"capacity\":{\"cpu\":4,\"memoryBytes\":17179869184},"
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
		"\"sync\":{\"connected\":true,\"lastSeen\":\"2026-01-01T00:01:00Z\"}}},"
		"{\"metadata\":{\"name\":\"b\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
		"\"sync\":{\"connected\":false}}}]}";
	char *out;
	(void)state;

	out = capture_nodes(list, 0);
	assert_string_equal(out,
		"NAME     STATUS     CONNECTED   AGE         VERSION\n"
		"node-a   Ready      true        90s         0.1.0\n"
		"b        NotReady   false       <unknown>   <unknown>\n");
	free(out);
	out = capture_nodes(list, 1);
	assert_non_null(strstr(out, "KERNEL-VERSION   OS-IMAGE    CPU         MEMORY      LAST-SEEN"));
	assert_non_null(strstr(out, "6.1.0            Debian 12   4           16Gi        30s"));
	free(out);
	out = capture_nodes("{\"kind\":\"NodeList\",\"items\":[]}", 0);
	assert_string_equal(out, "No resources found.\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_nodes_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
