/*
 * test_health.c - HealthRule specs (lib/es_health.h): durations, validation
 * messages per field, operators, and metric values read from a Node
 * status.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "es_health.h"
#include "es_obj.h"
#include "testutil.h"

static cJSON *J(const char *text)
{
	cJSON *o = cJSON_Parse(text);

	if (!o)
		fail_msg("bad test JSON: %s", text);
	return o;
}

static void expect_duration(const char *s, int64_t want_ms)
{
	char err[200] = "";
	int64_t ms = -1;

	if (es_health_duration_parse(s, &ms, err, sizeof(err)) != ES_OK)
		fail_msg("\"%s\" refused: %s", s, err);
	if (ms != want_ms)
		fail_msg("\"%s\": %lld ms, want %lld", s, (long long)ms, (long long)want_ms);
}

static void expect_bad_duration(const char *s, const char *want)
{
	char err[200] = "";
	int64_t ms = 12345;

	if (es_health_duration_parse(s, &ms, err, sizeof(err)) != ES_ERR_INVAL)
		fail_msg("\"%s\" accepted (%lld ms)", s, (long long)ms);
	if (!strstr(err, want))
		fail_msg("\"%s\": error \"%s\" lacks \"%s\"", s, err, want);
	assert_int_equal(ms, 12345);
}

static void test_duration_parse(void **state)
{
	(void)state;
	expect_duration("0s", 0);
	expect_duration("0", 0);
	expect_duration("-0s", 0);
	expect_duration("60s", 60000);
	expect_duration("+60s", 60000);
	expect_duration("5m", 300000);
	expect_duration("1h30m", 5400000);
	expect_duration("1.5h", 5400000);
	expect_duration(".5s", 500);
	expect_duration("1.s", 1000);
	expect_duration("2h45m30.5s", (2 * 3600 + 45 * 60 + 30) * 1000LL + 500);
	expect_duration("500ms", 500);
	expect_duration("1500us", 2);       /* rounded up to whole ms */
	expect_duration("1us", 1);
	expect_duration("1\xc2\xb5s", 1);
	expect_duration("999999ns", 1);
	expect_duration("8760h", ES_HEALTH_FOR_MAX_MS);
	expect_duration("1m1m", 120000);

	expect_bad_duration("", "empty duration");
	expect_bad_duration("-5s", "negative duration \"-5s\"");
	expect_bad_duration("-1h30m", "negative duration");
	expect_bad_duration("-99999999999h", "negative duration");
	expect_bad_duration("5", "missing unit");
	expect_bad_duration("1h30", "missing unit");
	expect_bad_duration("5d", "unknown unit \"d\"");
	expect_bad_duration("5 s", "unknown unit \" s\"");
	expect_bad_duration("s", "expected a number");
	expect_bad_duration("-", "invalid duration");
	expect_bad_duration("8760h1ms", "longer than 8760h");
	expect_bad_duration("99999999999999999999999h", "longer than 8760h");
}

static void test_duration_format(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(es_health_duration_format(0, b, sizeof(b)), "0s");
	assert_string_equal(es_health_duration_format(500, b, sizeof(b)), "500ms");
	assert_string_equal(es_health_duration_format(2000, b, sizeof(b)), "2s");
	assert_string_equal(es_health_duration_format(1500, b, sizeof(b)), "1.5s");
	assert_string_equal(es_health_duration_format(1250, b, sizeof(b)), "1.25s");
	assert_string_equal(es_health_duration_format(90000, b, sizeof(b)), "1m30s");
	assert_string_equal(es_health_duration_format(3600000, b, sizeof(b)), "1h");
	assert_string_equal(es_health_duration_format(5400000, b, sizeof(b)), "1h30m");
	assert_string_equal(es_health_duration_format(3601000, b, sizeof(b)), "1h1s");
}

static void test_operators(void **state)
{
	static const char *const names[] = {"Gt", "Ge", "Lt", "Le", "Eq", "Ne"};
	char b[32];

	(void)state;
	for (int i = 0; i < 6; i++) {
		es_health_op op = es_health_op_parse(names[i]);

		assert_int_not_equal(op, 0);
		assert_string_equal(es_health_op_name(op), names[i]);
	}
	assert_int_equal(es_health_op_parse(">"), 0);
	assert_int_equal(es_health_op_parse("gt"), 0);
	assert_null(es_health_op_name(0));
	assert_true(es_health_compare(ES_HEALTH_GT, 2, 1));
	assert_false(es_health_compare(ES_HEALTH_GT, 1, 1));
	assert_true(es_health_compare(ES_HEALTH_GE, 1, 1));
	assert_false(es_health_compare(ES_HEALTH_GE, 0.5, 1));
	assert_true(es_health_compare(ES_HEALTH_LT, 0.5, 1));
	assert_false(es_health_compare(ES_HEALTH_LT, 1, 1));
	assert_true(es_health_compare(ES_HEALTH_LE, 1, 1));
	assert_false(es_health_compare(ES_HEALTH_LE, 2, 1));
	assert_true(es_health_compare(ES_HEALTH_EQ, 0, 0));
	assert_false(es_health_compare(ES_HEALTH_EQ, 0, 1));
	assert_true(es_health_compare(ES_HEALTH_NE, 0, 1));
	assert_false(es_health_compare(ES_HEALTH_NE, 1, 1));
	assert_string_equal(es_health_format_value(104857600, b, sizeof(b)), "104857600");
	assert_string_equal(es_health_format_value(0.123456, b, sizeof(b)), "0.1235");
	assert_string_equal(es_health_format_value(-3, b, sizeof(b)), "-3");
	assert_string_equal(es_health_format_value(1e18, b, sizeof(b)), "1e+18");
}

static void expect_rule_error(const char *spec, const char *want)
{
	cJSON *o = J(spec);
	char err[512] = "";

	if (es_health_rule_parse(o, NULL, err, sizeof(err)) != ES_ERR_INVAL)
		fail_msg("accepted: %s", spec);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("%s: error \"%s\" does not start with \"%s\"", spec, err, want);
	cJSON_Delete(o);
}

#define R(rest) "{\"metric\":\"processes.count\",\"operator\":\"Gt\"," \
		"\"threshold\":400," rest "}"

static void test_rule_parse_valid(void **state)
{
	es_health_rule r;
	char err[512] = "";
	cJSON *o;

	(void)state;
	o = J("{\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\"}},"
	      "\"metric\":\"memory.availableRatio\",\"operator\":\"Lt\","
	      "\"threshold\":0.1,\"for\":\"1h30m\",\"conditionType\":\"MemoryLow\","
	      "\"severity\":\"Critical\"}");
	memset(&r, 0xff, sizeof(r));
	if (es_health_rule_parse(o, &r, err, sizeof(err)) != ES_OK)
		fail_msg("refused: %s", err);
	assert_string_equal(es_health_metric_at((size_t)r.metric)->name, "memory.availableRatio");
	assert_int_equal(r.op, ES_HEALTH_LT);
	assert_true(r.threshold == 0.1);
	assert_int_equal(r.for_ms, 5400000);
	assert_string_equal(r.condition_type, "MemoryLow");
	assert_int_equal(r.severity, ES_HEALTH_CRITICAL);
	cJSON_Delete(o);

	/* for and severity are optional: 0s, Warning. */
	o = J(R("\"conditionType\":\"ManyProcesses\""));
	memset(&r, 0xff, sizeof(r));
	assert_int_equal(es_health_rule_parse(o, &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.for_ms, 0);
	assert_int_equal(r.severity, ES_HEALTH_WARNING);
	assert_int_equal(r.op, ES_HEALTH_GT);
	assert_true(r.threshold == 400);
	cJSON_Delete(o);

	/* A built-in condition type may be set: the rule overrides it. */
	o = J("{\"metric\":\"memory.availableBytes\",\"operator\":\"Lt\","
	      "\"threshold\":1e18,\"conditionType\":\"MemoryPressure\"}");
	assert_int_equal(es_health_rule_parse(o, NULL, err, sizeof(err)), ES_OK);
	cJSON_Delete(o);
	assert_true(es_health_is_builtin("MemoryPressure"));
	assert_true(es_health_is_builtin("NetworkUnavailable"));
	assert_false(es_health_is_builtin("Ready"));
	assert_false(es_health_is_builtin("ManyProcesses"));
}

static void test_rule_parse_errors(void **state)
{
	(void)state;
	expect_rule_error("[]", "spec: expected an object");
	expect_rule_error(R("\"conditionType\":\"A\",\"reason\":\"X\""),
			  "spec.reason: unknown member of a HealthRule spec");
	/* metric */
	expect_rule_error("{\"operator\":\"Gt\",\"threshold\":1,\"conditionType\":\"A\"}",
			  "spec.metric: required");
	expect_rule_error("{\"metric\":7,\"operator\":\"Gt\",\"threshold\":1,"
			  "\"conditionType\":\"A\"}", "spec.metric: expected");
	expect_rule_error("{\"metric\":\"foo\",\"operator\":\"Gt\",\"threshold\":1,"
			  "\"conditionType\":\"A\"}",
			  "spec.metric: unknown metric \"foo\"; known: cpu.utilization, "
			  "load.load1, ");
	/* operator */
	expect_rule_error("{\"metric\":\"processes.count\",\"threshold\":1,"
			  "\"conditionType\":\"A\"}", "spec.operator: required");
	expect_rule_error("{\"metric\":\"processes.count\",\"operator\":\">\","
			  "\"threshold\":1,\"conditionType\":\"A\"}",
			  "spec.operator: unknown operator \">\" (expected Gt, Ge, Lt");
	expect_rule_error("{\"metric\":\"processes.count\",\"operator\":1,"
			  "\"threshold\":1,\"conditionType\":\"A\"}",
			  "spec.operator: expected");
	/* threshold */
	expect_rule_error("{\"metric\":\"processes.count\",\"operator\":\"Gt\","
			  "\"conditionType\":\"A\"}", "spec.threshold: required");
	expect_rule_error("{\"metric\":\"processes.count\",\"operator\":\"Gt\","
			  "\"threshold\":\"400\",\"conditionType\":\"A\"}",
			  "spec.threshold: expected a number");
	/* for */
	expect_rule_error(R("\"for\":\"-5s\",\"conditionType\":\"A\""),
			  "spec.for: negative duration");
	expect_rule_error(R("\"for\":\"5\",\"conditionType\":\"A\""),
			  "spec.for: missing unit");
	expect_rule_error(R("\"for\":\"2d\",\"conditionType\":\"A\""),
			  "spec.for: unknown unit \"d\"");
	expect_rule_error(R("\"for\":60,\"conditionType\":\"A\""),
			  "spec.for: expected a duration string");
	/* conditionType */
	expect_rule_error(R("\"for\":\"1s\""), "spec.conditionType: required");
	expect_rule_error(R("\"conditionType\":\"many_processes\""),
			  "spec.conditionType: \"many_processes\" is not a CamelCase");
	expect_rule_error(R("\"conditionType\":\"Ready\""),
			  "spec.conditionType: Ready summarises");
	expect_rule_error(R("\"conditionType\":\"StoreDegraded\""),
			  "spec.conditionType: StoreDegraded is the agent's own");
	expect_rule_error(R("\"conditionType\":\"A123456789012345678901234567890"
			    "1234567890123456789012345678901234\""),
			  "spec.conditionType: ");
	/* severity */
	expect_rule_error(R("\"conditionType\":\"A\",\"severity\":\"critical\""),
			  "spec.severity: unknown severity \"critical\"");
	expect_rule_error(R("\"conditionType\":\"A\",\"severity\":true"),
			  "spec.severity: expected");
}

/* es_obj_validate_desired (what the controller runs at apply time) uses the
 * same checks. */
static void test_validate_desired_object(void **state)
{
	cJSON *o;
	char err[512] = "";

	(void)state;
	o = J("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
	      "\"metadata\":{\"name\":\"many\"},\"spec\":" R("\"for\":\"2s\","
	      "\"conditionType\":\"ManyProcesses\"") "}");
	if (es_obj_validate_desired(o, err, sizeof(err)) != ES_OK)
		fail_msg("refused: %s", err);
	cJSON_Delete(o);
	o = J("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
	      "\"metadata\":{\"name\":\"many\"},\"spec\":{\"metric\":\"foo\","
	      "\"operator\":\"Gt\",\"threshold\":1,\"conditionType\":\"A\"}}");
	assert_int_equal(es_obj_validate_desired(o, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "spec.metric: unknown metric \"foo\""));
	/* The whole catalogue fits in the controller's message buffer. */
	assert_non_null(strstr(err, "processes.pidUsageRatio"));
	cJSON_Delete(o);
	o = J("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
	      "\"metadata\":{\"name\":\"many\"},\"spec\":{}}");
	assert_int_equal(es_obj_validate_desired(o, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "spec.metric: required"));
	cJSON_Delete(o);
}

#define STATUS_COLLECTORS \
	"\"collectors\":[" \
	"{\"name\":\"cpu\",\"enabled\":true,\"healthy\":true}," \
	"{\"name\":\"memory\",\"enabled\":true,\"healthy\":true}," \
	"{\"name\":\"filesystem\",\"enabled\":true,\"healthy\":true}," \
	"{\"name\":\"network\",\"enabled\":true,\"healthy\":true}," \
	"{\"name\":\"processes\",\"enabled\":true,\"healthy\":true}]"

static const char full_status[] =
	"{\"usage\":{"
	"\"cpu\":{\"utilization\":0.25},"
	"\"load\":{\"load1\":1.5,\"load5\":1.25,\"load15\":1},"
	"\"memory\":{\"MemTotal\":4000,\"MemAvailable\":1000},"
	"\"filesystems\":["
	"{\"mountpoint\":\"/boot\",\"sizeBytes\":100,\"availBytes\":5,\"files\":10,\"filesFree\":9},"
	"{\"mountpoint\":\"/\",\"sizeBytes\":200,\"availBytes\":50,\"files\":100,\"filesFree\":20},"
	"{\"mountpoint\":\"/empty\",\"sizeBytes\":0,\"availBytes\":0}],"
	"\"network\":[{\"interface\":\"lo\"},{\"interface\":\"eth0\"},{\"interface\":\"wlan0\"}],"
	"\"processes\":{\"count\":300,\"threads\":500,\"running\":3,\"blocked\":1}},"
	STATUS_COLLECTORS "}";

/* es_health_metric_value over the sample of a Node status. */
static es_err metric_value(const cJSON *status, int m, int64_t pid_max, double *v,
			   char *why, size_t whysz)
{
	es_sample s;
	es_err rc;

	es_sample_init(&s);
	es_test_sample(status, pid_max, &s);
	rc = es_health_metric_value(&s, m, v, why, whysz);
	es_sample_clear(&s);
	return rc;
}

static double value_of(const cJSON *status, const char *metric, int64_t pid_max)
{
	char why[200] = "";
	double v = -1;
	int m = es_health_metric_find(metric);

	assert_true(m >= 0);
	if (metric_value(status, m, pid_max, &v, why, sizeof(why)) != ES_OK)
		fail_msg("%s missing: %s", metric, why);
	return v;
}

static void expect_missing(const cJSON *status, const char *metric, const char *want)
{
	char why[200] = "";
	double v = -1;

	assert_int_equal(metric_value(status, es_health_metric_find(metric), 0,
				      &v, why, sizeof(why)), ES_ERR_NOTFOUND);
	if (!strstr(why, want))
		fail_msg("%s: \"%s\" lacks \"%s\"", metric, why, want);
}

static void test_metric_values(void **state)
{
	cJSON *st = J(full_status), *bad;
	char why[200];
	double v;

	(void)state;
	/* Every metric of the catalogue reads from a complete status. */
	for (size_t i = 0; i < es_health_metric_count(); i++) {
		const es_health_metric_info *mi = es_health_metric_at(i);

		assert_non_null(mi->name);
		assert_non_null(mi->collector);
		assert_non_null(mi->source);
		assert_int_equal(es_health_metric_find(mi->name), (int)i);
		if (metric_value(st, (int)i, 3000, &v, why, sizeof(why)) != ES_OK)
			fail_msg("%s missing: %s", mi->name, why);
	}
	assert_null(es_health_metric_at(es_health_metric_count()));
	assert_int_equal(es_health_metric_find("processes.Count"), -1);
	assert_int_equal(metric_value(st, -1, 0, &v, NULL, 0), ES_ERR_INVAL);

	assert_true(value_of(st, "cpu.utilization", 0) == 0.25);
	assert_true(value_of(st, "load.load1", 0) == 1.5);
	assert_true(value_of(st, "load.load5", 0) == 1.25);
	assert_true(value_of(st, "load.load15", 0) == 1);
	assert_true(value_of(st, "memory.availableBytes", 0) == 1000);
	assert_true(value_of(st, "memory.availableRatio", 0) == 0.25);
	assert_true(value_of(st, "filesystem.rootAvailableBytes", 0) == 50);
	assert_true(value_of(st, "filesystem.rootAvailableRatio", 0) == 0.25);
	assert_true(value_of(st, "filesystem.rootInodesFreeRatio", 0) == 0.2);
	assert_true(value_of(st, "filesystem.availableRatio", 0) == 0.05);
	assert_true(value_of(st, "network.interfaces", 0) == 2);
	assert_true(value_of(st, "processes.count", 0) == 300);
	assert_true(value_of(st, "processes.threads", 0) == 500);
	assert_true(value_of(st, "processes.running", 0) == 3);
	assert_true(value_of(st, "processes.blocked", 0) == 1);
	assert_true(value_of(st, "processes.pidUsageRatio", 3000) == 0.1);
	expect_missing(st, "processes.pidUsageRatio", "kernel.pid_max");
	cJSON_Delete(st);

	/* Collectors not enabled, or failing; members absent. */
	bad = J("{\"usage\":{\"memory\":{\"MemTotal\":0,\"MemAvailable\":5},"
		"\"load\":{},\"filesystems\":[{\"mountpoint\":\"/data\","
		"\"sizeBytes\":0}],\"processes\":{\"count\":3}},\"collectors\":["
		"{\"name\":\"cpu\",\"enabled\":true,\"healthy\":true},"
		"{\"name\":\"memory\",\"enabled\":true,\"healthy\":true},"
		"{\"name\":\"filesystem\",\"enabled\":true,\"healthy\":true},"
		"{\"name\":\"network\",\"enabled\":false,\"healthy\":true},"
		"{\"name\":\"processes\",\"enabled\":true,\"healthy\":false,"
		"\"error\":\"/proc/stat: unreadable\"}]}");
	expect_missing(bad, "cpu.utilization", "two rounds");
	expect_missing(bad, "load.load1", "usage.load.load1 not collected");
	assert_true(value_of(bad, "memory.availableBytes", 0) == 5);
	expect_missing(bad, "memory.availableRatio", "MemAvailable or MemTotal");
	expect_missing(bad, "filesystem.rootAvailableRatio", "no filesystem mounted at /");
	expect_missing(bad, "filesystem.availableRatio", "no filesystem with a size");
	expect_missing(bad, "network.interfaces", "collector network is not enabled");
	expect_missing(bad, "processes.count",
		       "collector processes failed: /proc/stat: unreadable");
	cJSON_Delete(bad);
	bad = J("{\"usage\":{}}");
	expect_missing(bad, "memory.availableBytes", "collector memory is not enabled");
	cJSON_Delete(bad);
}

/* A sample where every field a metric may read has its own value. */
static void distinct_sample(es_sample *s)
{
	es_sample_init(s);
	for (int i = 0; i < ES_SAMPLE_COLLECTORS; i++) {
		s->collectors[i].enabled = 1;
		s->collectors[i].healthy = 1;
	}
	s->has_cpu = 1;
	s->cpu_utilization = 0.125;
	s->load1 = 1.5;
	s->load5 = 5.25;
	s->load15 = 15.75;
	s->has_memory = 1;
	s->mem_total = 8000;
	s->mem_available = 1000;
	s->has_filesystems = 1;
	assert_int_equal(es_sample_fs_alloc(s, 2), ES_OK);
	assert_int_equal(es_sample_set_str(&s->fs[0].mountpoint, "/data"), ES_OK);
	s->fs[0].size_bytes = 1000;
	s->fs[0].avail_bytes = 50;   /* the lowest ratio: 0.05 */
	s->fs[0].free_bytes = 60;
	s->fs[0].files = 10;
	s->fs[0].files_free = 1;
	assert_int_equal(es_sample_set_str(&s->fs[1].mountpoint, "/"), ES_OK);
	s->fs[1].size_bytes = 400;
	s->fs[1].avail_bytes = 100;  /* ratio 0.25 */
	s->fs[1].free_bytes = 120;
	s->fs[1].files = 200;
	s->fs[1].files_free = 150;   /* ratio 0.75 */
	s->has_network = 1;
	assert_int_equal(es_sample_ifaces_alloc(s, 4), ES_OK);
	assert_int_equal(es_sample_set_str(&s->ifaces[0].name, "lo"), ES_OK);
	assert_int_equal(es_sample_set_str(&s->ifaces[1].name, "eth0"), ES_OK);
	assert_int_equal(es_sample_set_str(&s->ifaces[2].name, "eth1"), ES_OK);
	assert_int_equal(es_sample_set_str(&s->ifaces[3].name, "wg0"), ES_OK);
	s->proc_count = 300;
	s->proc_threads = 700;
	s->proc_running = 7;
	s->proc_blocked = 2;
	s->pid_max = 4000;
}

/* Each catalogue metric reads its own field of the sample, and needs its
 * own collector. */
static void test_metric_fields(void **state)
{
	static const struct { const char *metric; double want; } cases[] = {
		{ "cpu.utilization", 0.125 },
		{ "load.load1", 1.5 },
		{ "load.load5", 5.25 },
		{ "load.load15", 15.75 },
		{ "memory.availableBytes", 1000 },
		{ "memory.availableRatio", 0.125 },
		{ "filesystem.rootAvailableBytes", 100 },
		{ "filesystem.rootAvailableRatio", 0.25 },
		{ "filesystem.rootInodesFreeRatio", 0.75 },
		{ "filesystem.availableRatio", 0.05 },
		{ "network.interfaces", 3 },
		{ "processes.count", 300 },
		{ "processes.threads", 700 },
		{ "processes.running", 7 },
		{ "processes.blocked", 2 },
		{ "processes.pidUsageRatio", 0.075 },
	};
	es_sample s;
	char why[200];
	double v;

	(void)state;
	assert_int_equal(sizeof(cases) / sizeof(cases[0]), es_health_metric_count());
	distinct_sample(&s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int m = es_health_metric_find(cases[i].metric);
		const es_health_metric_info *mi = es_health_metric_at((size_t)m);
		char want[160];
		int c;

		assert_true(m >= 0);
		v = -1;
		if (es_health_metric_value(&s, m, &v, why, sizeof(why)) != ES_OK)
			fail_msg("%s missing: %s", cases[i].metric, why);
		if (v != cases[i].want)
			fail_msg("%s is %g, want %g", cases[i].metric, v, cases[i].want);
		/* Its collector, by the name the catalogue gives. */
		for (c = 0; c < ES_SAMPLE_COLLECTORS; c++)
			if (strcmp(es_collector_names[c], mi->collector) == 0)
				break;
		assert_true(c < ES_SAMPLE_COLLECTORS);
		s.collectors[c].enabled = 0;
		assert_int_equal(es_health_metric_value(&s, m, &v, why, sizeof(why)),
				 ES_ERR_NOTFOUND);
		snprintf(want, sizeof(want), "collector %s is not enabled", mi->collector);
		assert_string_equal(why, want);
		s.collectors[c].enabled = 1;
		s.collectors[c].healthy = 0;
		assert_int_equal(es_health_metric_value(&s, m, &v, why, sizeof(why)),
				 ES_ERR_NOTFOUND);
		snprintf(want, sizeof(want), "collector %s failed: no reason given",
			 mi->collector);
		assert_string_equal(why, want);
		s.collectors[c].healthy = 1;
	}
	/* A field that was not collected is missing, named. */
	s.load5 = ES_SAMPLE_NONE;
	assert_int_equal(es_health_metric_value(&s, es_health_metric_find("load.load5"),
						&v, why, sizeof(why)), ES_ERR_NOTFOUND);
	assert_string_equal(why, "usage.load.load5 not collected");
	s.fs[1].files = 0;
	assert_int_equal(es_health_metric_value(
				 &s, es_health_metric_find("filesystem.rootInodesFreeRatio"),
				 &v, why, sizeof(why)), ES_ERR_NOTFOUND);
	assert_string_equal(why, "the inode counts of / not collected or zero");
	assert_int_equal(es_health_metric_value(NULL, 0, &v, why, sizeof(why)),
			 ES_ERR_NOTFOUND);
	assert_string_equal(why, "collector cpu is not enabled");
	es_sample_clear(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_parse),
		cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_rule_parse_valid),
		cmocka_unit_test(test_rule_parse_errors),
		cmocka_unit_test(test_validate_desired_object),
		cmocka_unit_test(test_metric_values),
		cmocka_unit_test(test_metric_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
