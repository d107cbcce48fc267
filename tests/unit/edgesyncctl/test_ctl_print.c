/* test_ctl_print.c - edgesyncctl/print.c: ages, sizes, node tables,
 * server errors, filesystem use (and its place in describe node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgesyncctl/describe.h"
#include "es_time.h"
#include "edgesyncctl/print.h"
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
	assert_non_null(strstr(out, "LAST-SEEN   CONTROLLER\n"));
	assert_non_null(strstr(out, "30s         -\n"));
	free(out);
	/* store = etcd: the serving controller, "<none>" when none holds the
	 * node's session */
	out = capture_nodes("{\"kind\":\"NodeList\",\"items\":["
			    "{\"metadata\":{\"name\":\"x\"},\"status\":{\"sync\":"
			    "{\"controller\":\"h/b\",\"stateController\":\"h/a\"}}},"
			    "{\"metadata\":{\"name\":\"y\"},\"status\":{\"sync\":"
			    "{\"stateController\":\"h/a\"}}}]}", 1);
	assert_non_null(strstr(out, "   h/b\n"));
	assert_non_null(strstr(out, "   <none>\n"));
	free(out);
	out = capture_nodes("{\"kind\":\"NodeList\",\"items\":[]}", 0);
	assert_string_equal(out, "No resources found.\n");
	free(out);
}

static char *capture_error(int status, const char *body)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	es_print_server_error(f, "collectorconfig/nosuch", status, body, body ? strlen(body) : 0);
	fclose(f);
	return buf;
}

/* kubectl's form: the Status reason, then its message, nothing before. */
static void test_server_error(void **state)
{
	char *out;
	(void)state;

	out = capture_error(404, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
			    "\"message\":\"collectorconfigs \\\"nosuch\\\" not found\","
			    "\"reason\":\"NotFound\",\"code\":404}");
	assert_string_equal(out, "Error from server (NotFound): collectorconfigs \"nosuch\" not found\n");
	free(out);
	out = capture_error(500, "{\"message\":\"disk full\"}");
	assert_string_equal(out, "Error from server: disk full\n");
	free(out);
	/* Not a Status (a proxy, or the agents' listener): said so, one line. */
	out = capture_error(404, "<html>\r\n<body>WebSocket only</body></html>\n");
	assert_string_equal(out, "Error from server (HTTP 404): collectorconfig/nosuch: not an answer "
			    "of the edgesync admin API (is the server URL the controller's "
			    "admin-listen address?): <html>  <body>WebSocket only</body></html> \n");
	free(out);
	out = capture_error(503, NULL);
	assert_string_equal(out, "Error from server (HTTP 503): collectorconfig/nosuch: not an answer "
			    "of the edgesync admin API (is the server URL the controller's "
			    "admin-listen address?)\n");
	free(out);
}

static const char *use(const char *fs, char *buf, size_t bufsz)
{
	cJSON *v = NULL;
	assert_int_equal(es_json_parse(fs, strlen(fs), 8, &v, NULL, 0), ES_OK);
	es_print_fs_use(cJSON_GetObjectItem(v, "sizeBytes"), cJSON_GetObjectItem(v, "availBytes"),
			cJSON_GetObjectItem(v, "freeBytes"), buf, bufsz);
	cJSON_Delete(v);
	return buf;
}

/* df's Use%: used / (used + avail), rounded up; reserved blocks excluded. */
static void test_fs_use(void **state)
{
	char b[32];
	(void)state;

	/* 100 GB, 10 free of which 5 reserved: df says 95% (90/95 = 94.7), not 90% */
	assert_string_equal(use("{\"sizeBytes\":100000000000,\"freeBytes\":10000000000,"
				"\"availBytes\":5000000000}", b, sizeof(b)), "95%");
	/* exactly half stays 50%; the smallest use rounds up to 1% */
	assert_string_equal(use("{\"sizeBytes\":200,\"freeBytes\":100,\"availBytes\":100}", b,
				sizeof(b)), "50%");
	assert_string_equal(use("{\"sizeBytes\":1000000,\"freeBytes\":999999,\"availBytes\":999999}",
				b, sizeof(b)), "1%");
	/* full to the reserve: avail 0 is 100% although free > 0 */
	assert_string_equal(use("{\"sizeBytes\":1000,\"freeBytes\":50,\"availBytes\":0}", b,
				sizeof(b)), "100%");
	/* largest JSON integers do not overflow */
	assert_string_equal(use("{\"sizeBytes\":9007199254740991,\"freeBytes\":0,"
				"\"availBytes\":9007199254740991}", b, sizeof(b)), "50%");
	assert_string_equal(use("{\"sizeBytes\":0,\"freeBytes\":0,\"availBytes\":0}", b,
				sizeof(b)), "-");
	assert_string_equal(use("{\"sizeBytes\":10,\"freeBytes\":20,\"availBytes\":0}", b,
				sizeof(b)), "<unknown>");
	assert_string_equal(use("{\"sizeBytes\":10,\"availBytes\":0}", b, sizeof(b)), "<unknown>");
	assert_string_equal(use("{\"sizeBytes\":10.5,\"freeBytes\":1,\"availBytes\":0}", b,
				sizeof(b)), "<unknown>");
}

/* `describe node` of the Node JSON text node at now: the output, malloc'd. */
static char *describe_at(const char *node, time_t now)
{
	cJSON *v = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(es_json_parse(node, strlen(node), 16, &v, NULL, 0), ES_OK);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(es_describe_node(f, v, NULL, NULL, now), ES_OK);
	fclose(f);
	cJSON_Delete(v);
	return buf;
}

static char *describe(const char *node)
{
	return describe_at(node, 0);
}

/* The line of text that contains needle, cut at its end (text modified). */
static char *line_with(char *text, const char *needle)
{
	char *line = strstr(text, needle);

	assert_non_null(line);
	*strchr(line, '\n') = '\0';
	return line;
}

/* describe node's Filesystems table uses df's figure. */
static void test_describe_fs_use(void **state)
{
	char *buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
			     "{\"usage\":{\"filesystems\":[{\"device\":\"/dev/sda1\","
			     "\"mountpoint\":\"/\",\"fstype\":\"ext4\",\"sizeBytes\":100000000000,"
			     "\"freeBytes\":10000000000,\"availBytes\":5000000000}]}}}");
	(void)state;

	assert_non_null(strstr(line_with(buf, "/dev/sda1"), " 95%"));
	free(buf);
}

/* The usage figures say when they were measured (status.usage.timestamp,
 * PROTOCOL.md "Usage figures"), or that the agent did not say. */
static void test_describe_usage_age(void **state)
{
	time_t at;
	char *buf;

	(void)state;
	assert_int_equal(es_time_parse_rfc3339("2026-12-01T20:55:03Z", &at), 0);
	buf = describe_at("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
			  "{\"usage\":{\"timestamp\":\"2026-12-01T20:55:03Z\","
			  "\"load\":{\"load1\":1,\"load5\":1,\"load15\":1}}}}", at + 12);
	assert_string_equal(line_with(buf, "Usage"), "Usage (as of 12s ago, 2026-12-01T20:55:03Z):");
	free(buf);
	buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
		       "{\"usage\":{\"load\":{\"load1\":1,\"load5\":1,\"load15\":1}}}}");
	assert_string_equal(line_with(buf, "Usage"),
			    "Usage (time of measurement not reported by this agent):");
	free(buf);
}

/* describe node's Collectors table shows events, losses and the reason a
 * collector is not on ebpf. */
static void test_describe_collectors(void **state)
{
	char *buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
			     "{\"collectors\":[{\"name\":\"process\",\"backend\":\"ebpf\","
			     "\"enabled\":true,\"healthy\":true,\"events\":1234,\"eventsLost\":56},"
			     "{\"name\":\"tcp\",\"backend\":\"procfs\",\"enabled\":true,"
			     "\"healthy\":true,\"reason\":\"forced\",\"events\":0,\"eventsLost\":0},"
			     "{\"name\":\"cpu\",\"backend\":\"procfs\",\"enabled\":true,"
			     "\"healthy\":true,\"eventsLost\":0}]}}"), *line;
	(void)state;

	assert_non_null(strstr(buf, "EVENTS"));
	line = line_with(buf, "  process");
	assert_non_null(strstr(line, " 1234 "));
	assert_non_null(strstr(line, " 56"));
	assert_non_null(strstr(line_with(line + strlen(line) + 1, "  tcp"), "forced"));
	free(buf);
}

/* describe node names the serving controller and whose file the status
 * came from on the etcd store (status.sync.controller, stateController,
 * recordController), "<none>" for each one absent; neither line with the
 * SQLite store, which names no controller. */
static void test_describe_controller(void **state)
{
	char *buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
			     "{\"sync\":{\"connected\":false,\"controller\":\"h/b\","
			     "\"stateController\":\"h/a\",\"recordController\":\"h/b\"}}}");
	(void)state;

	assert_string_equal(line_with(buf, "Controller:"), "Controller:          h/b");
	free(buf);
	buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
		       "{\"sync\":{\"connected\":false,\"stateController\":\"h/a\"}}}");
	assert_string_equal(line_with(buf, "  Controller:"), "  Controller:          <none>");
	free(buf);
	buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
		       "{\"sync\":{\"controller\":\"h/b\",\"recordController\":\"h/b\"}}}");
	assert_string_equal(line_with(buf, "Status From:"), "Status From:         <none>");
	free(buf);
	buf = describe("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
		       "{\"sync\":{\"connected\":true}}}");
	assert_null(strstr(buf, "Controller:"));
	assert_null(strstr(buf, "Status From:"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_nodes_table),
		cmocka_unit_test(test_server_error),
		cmocka_unit_test(test_fs_use),
		cmocka_unit_test(test_describe_fs_use),
		cmocka_unit_test(test_describe_collectors),
		cmocka_unit_test(test_describe_usage_age),
		cmocka_unit_test(test_describe_controller),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
