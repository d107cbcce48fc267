/*
 * test_health_eval.c - HealthRules on the agent (agent/node/health.h): the
 * Applied outcome, and evaluation over a fake clock with the conditions set
 * as the agent sets them (es_cond_set): a transition only after `for`,
 * lastTransitionTime moving only on a status change, Unknown on a missing
 * metric, conditions of deleted rules removed. Also the reconciler's
 * Applied condition for HealthRules over a real store.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_cond.h"
#include "es_time.h"
#include "node/health.h"
#include "reconcile/reconcile.h"
#include "testutil.h"

#define T0 ((time_t)1700000000)

/* calloc is wrapped (health.cmake): fails while fail_calloc is set. */
static int fail_calloc;
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	return fail_calloc ? NULL : __real_calloc(n, size);
}

static cJSON *J(const char *text)
{
	cJSON *o = cJSON_Parse(text);

	if (!o)
		fail_msg("bad test JSON: %s", text);
	return o;
}

static const char *sget(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v))
		fail_msg("no string member %s", key);
	return v->valuestring;
}

/* A HealthRule object as the desired cache holds it. */
static cJSON *rule(const char *name, const char *uid, int gen, const char *spec)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		 "\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"generation\":%d},"
		 "\"spec\":%s}", name, uid, gen, spec);
	return J(text);
}

#define MANY(forv) "{\"metric\":\"processes.count\",\"operator\":\"Gt\"," \
	"\"threshold\":100,\"for\":\"" forv "\",\"conditionType\":\"ManyProcesses\"}"

/* One round's Node status with `count` processes (count < 0: the processes
 * collector is not enabled). */
static cJSON *status_with(int count)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "{\"usage\":{\"processes\":{\"count\":%d,\"threads\":%d}},"
		 "\"collectors\":[{\"name\":\"processes\",\"enabled\":%s,"
		 "\"healthy\":true}]}", count < 0 ? 0 : count, count < 0 ? 0 : count,
		 count < 0 ? "false" : "true");
	return J(text);
}

/* es_health_eval_run over the sample of one round's Node status st
 * (kernel.pid_max pid_max). */
static size_t eval_run(es_health_eval *he, const cJSON *st, int64_t pid_max,
		       int64_t t_ms, const cJSON *conds, const es_health_result **res)
{
	es_sample s;
	size_t n;

	es_sample_init(&s);
	es_test_sample(st, pid_max, &s);
	n = es_health_eval_run(he, &s, t_ms, conds, res);
	es_sample_clear(&s);
	return n;
}

typedef struct run_out {
	const char *status, *reason;
	char message[256];
	int changed;
} run_out;

/* Evaluates at (T0 + t_ms / 1000, t_ms) and applies the one result to conds
 * as the agent does. */
static run_out eval_at(es_health_eval *he, cJSON *conds, int count, int64_t t_ms)
{
	const es_health_result *res = NULL;
	cJSON *st = status_with(count);
	run_out o;
	size_t n;

	memset(&o, 0, sizeof(o));
	n = eval_run(he, st, 0, t_ms, conds, &res);
	assert_int_equal(n, 1);
	assert_string_equal(res[0].type, "ManyProcesses");
	assert_int_equal(es_cond_set(conds, res[0].type, res[0].status, res[0].reason,
				     res[0].message, res[0].generation,
				     T0 + (time_t)(t_ms / 1000), &o.changed), ES_OK);
	o.status = res[0].status;
	o.reason = res[0].reason;
	snprintf(o.message, sizeof(o.message), "%s", res[0].message);
	cJSON_Delete(st);
	return o;
}

static const char *ltt(const cJSON *conds)
{
	return sget(es_cond_find(conds, "ManyProcesses"), "lastTransitionTime");
}

static es_health_eval *eval_with(const char *spec)
{
	es_health_eval *he = NULL;
	cJSON *list = cJSON_CreateArray();

	assert_int_equal(es_health_eval_new(&he), ES_OK);
	cJSON_AddItemToArray(list, rule("many", "u-1", 1, spec));
	assert_int_equal(es_health_eval_set_rules(he, list), ES_OK);
	assert_int_equal(es_health_eval_count(he), 1);
	cJSON_Delete(list);
	return he;
}

static void test_for_duration(void **state)
{
	es_health_eval *he = eval_with(MANY("2s"));
	cJSON *conds = cJSON_CreateArray();
	char t[ES_TIME_RFC3339_LEN];
	run_out o;

	(void)state;
	o = eval_at(he, conds, 50, 0);
	assert_string_equal(o.status, "False");
	assert_string_equal(o.reason, "ThresholdNotMet");
	assert_non_null(strstr(o.message, "processes.count is 50"));
	assert_non_null(strstr(o.message, "Gt 100"));
	assert_string_equal(ltt(conds), es_time_rfc3339(T0, t));

	/* Holds, but not for 2 s yet: still False, time unchanged. */
	o = eval_at(he, conds, 150, 1000);
	assert_string_equal(o.status, "False");
	assert_string_equal(o.reason, "ThresholdPending");
	assert_int_equal(o.changed, 0);
	assert_non_null(strstr(o.message, "processes.count is 150"));
	assert_non_null(strstr(o.message, "not yet for 2s"));
	o = eval_at(he, conds, 160, 2999);
	assert_string_equal(o.status, "False");
	assert_string_equal(ltt(conds), es_time_rfc3339(T0, t));

	/* Held 2 s: True, the one transition. */
	o = eval_at(he, conds, 170, 3000);
	assert_string_equal(o.status, "True");
	assert_string_equal(o.reason, "ThresholdMet");
	assert_int_equal(o.changed, 1);
	assert_non_null(strstr(o.message, "processes.count is 170, Gt 100 for 2s"));
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 3, t));
	o = eval_at(he, conds, 180, 4000);
	assert_string_equal(o.status, "True");
	assert_int_equal(o.changed, 0);
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 3, t));

	/* Stops holding: False at once. */
	o = eval_at(he, conds, 90, 5000);
	assert_string_equal(o.status, "False");
	assert_string_equal(o.reason, "ThresholdNotMet");
	assert_int_equal(o.changed, 1);
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 5, t));

	/* Holding must be continuous: a break restarts the wait. */
	o = eval_at(he, conds, 150, 6000);
	assert_string_equal(o.reason, "ThresholdPending");
	o = eval_at(he, conds, 100, 7000); /* not Gt 100 */
	assert_string_equal(o.reason, "ThresholdNotMet");
	o = eval_at(he, conds, 150, 8000);
	assert_string_equal(o.reason, "ThresholdPending");
	o = eval_at(he, conds, 150, 9000);
	assert_string_equal(o.reason, "ThresholdPending");
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 5, t));
	o = eval_at(he, conds, 150, 10000);
	assert_string_equal(o.status, "True");
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 10, t));

	/* Metric missing: Unknown, and the hold starts again afterwards. */
	o = eval_at(he, conds, -1, 11000);
	assert_string_equal(o.status, "Unknown");
	assert_string_equal(o.reason, "MetricUnavailable");
	assert_non_null(strstr(o.message, "processes.count unavailable: collector "
				"processes is not enabled"));
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 11, t));
	o = eval_at(he, conds, 150, 12000);
	assert_string_equal(o.reason, "ThresholdPending");
	cJSON_Delete(conds);
	es_health_eval_free(he);
}

static void test_zero_for_and_generation(void **state)
{
	es_health_eval *he = eval_with(MANY("0s"));
	cJSON *conds = cJSON_CreateArray();
	const es_health_result *res;
	cJSON *st = status_with(101);
	run_out o;

	(void)state;
	o = eval_at(he, conds, 101, 0);
	assert_string_equal(o.status, "True");
	assert_int_equal(eval_run(he, st, 0, 1, conds, &res), 1);
	assert_int_equal(res[0].generation, 1);
	assert_int_equal(res[0].critical, 0);
	cJSON_Delete(st);
	cJSON_Delete(conds);
	es_health_eval_free(he);

	he = eval_with("{\"metric\":\"processes.threads\",\"operator\":\"Le\","
		       "\"threshold\":5,\"severity\":\"Critical\","
		       "\"conditionType\":\"ManyProcesses\"}");
	conds = cJSON_CreateArray();
	o = eval_at(he, conds, 5, 0);
	assert_string_equal(o.status, "True");
	st = status_with(5);
	eval_run(he, st, 0, 1, conds, &res);
	assert_int_equal(res[0].critical, 1);
	cJSON_Delete(st);
	cJSON_Delete(conds);
	es_health_eval_free(he);
}

/* Reloading the same rule keeps the hold; a condition already True (the
 * agent restarted) stays True without waiting again. */
static void test_reload_and_restart(void **state)
{
	es_health_eval *he = eval_with(MANY("2s"));
	cJSON *conds = cJSON_CreateArray(), *list = cJSON_CreateArray();
	char t[ES_TIME_RFC3339_LEN];
	run_out o;

	(void)state;
	o = eval_at(he, conds, 150, 0);
	assert_string_equal(o.reason, "ThresholdPending");
	cJSON_AddItemToArray(list, rule("many", "u-1", 1, MANY("2s")));
	assert_int_equal(es_health_eval_set_rules(he, list), ES_OK);
	o = eval_at(he, conds, 150, 2000);
	assert_string_equal(o.status, "True");
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 2, t));
	es_health_eval_free(he);

	/* A new evaluator (agent restart) over the seeded True condition. */
	he = eval_with(MANY("2s"));
	o = eval_at(he, conds, 150, 50000);
	assert_string_equal(o.status, "True");
	assert_int_equal(o.changed, 0);
	assert_string_equal(ltt(conds), es_time_rfc3339(T0 + 2, t));
	es_health_eval_free(he);

	/* ... but not when it was False. */
	he = eval_with(MANY("2s"));
	o = eval_at(he, conds, 50, 60000);
	assert_string_equal(o.status, "False");
	es_health_eval_free(he);
	he = eval_with(MANY("2s"));
	o = eval_at(he, conds, 150, 61000);
	assert_string_equal(o.reason, "ThresholdPending");
	es_health_eval_free(he);
	cJSON_Delete(list);
	cJSON_Delete(conds);
}

static void test_prune(void **state)
{
	es_health_eval *he = eval_with(MANY("0s"));
	cJSON *conds = cJSON_CreateArray(), *list = cJSON_CreateArray();

	(void)state;
	es_cond_set(conds, "Ready", "True", "AgentReady", "", 0, T0, NULL);
	es_cond_set(conds, "MemoryPressure", "True", "ThresholdMet", "", 0, T0, NULL);
	es_cond_set(conds, "ManyProcesses", "True", "ThresholdMet", "", 0, T0, NULL);
	es_cond_set(conds, "DiskFull", "False", "ThresholdPending", "", 0, T0, NULL);
	es_cond_set(conds, "Other", "False", "SomethingElse", "", 0, T0, NULL);
	/* DiskFull belongs to no current rule. */
	assert_int_equal(es_health_eval_prune(he, conds), 1);
	assert_null(es_cond_find(conds, "DiskFull"));
	assert_non_null(es_cond_find(conds, "ManyProcesses"));
	/* The rule is deleted: its condition goes, the others stay. */
	assert_int_equal(es_health_eval_set_rules(he, list), ES_OK);
	assert_int_equal(es_health_eval_count(he), 0);
	assert_int_equal(es_health_eval_prune(he, conds), 1);
	assert_null(es_cond_find(conds, "ManyProcesses"));
	assert_non_null(es_cond_find(conds, "Ready"));
	assert_non_null(es_cond_find(conds, "MemoryPressure"));
	assert_non_null(es_cond_find(conds, "Other"));
	assert_int_equal(cJSON_GetArraySize(conds), 3);
	cJSON_Delete(list);
	cJSON_Delete(conds);
	es_health_eval_free(he);
}

static void test_applied_outcome(void **state)
{
	cJSON *list = cJSON_CreateArray(), *a, *b, *bad, *other;
	es_health_eval *he = NULL;
	es_health_applied ha;

	(void)state;
	a = rule("b-many", "u-b", 1, MANY("2s"));
	b = rule("a-many", "u-a", 1, "{\"metric\":\"processes.threads\",\"operator\":"
		 "\"Gt\",\"threshold\":5,\"conditionType\":\"ManyProcesses\"}");
	bad = rule("0-bad", "u-0", 1, "{\"metric\":\"foo\",\"operator\":\"Gt\","
		   "\"threshold\":1,\"conditionType\":\"ManyProcesses\"}");
	other = rule("z-disk", "u-z", 1, "{\"metric\":\"filesystem.availableRatio\","
		     "\"operator\":\"Lt\",\"threshold\":0.05,\"for\":\"1m\","
		     "\"conditionType\":\"DiskPressure\",\"severity\":\"Critical\"}");
	cJSON_AddItemToArray(list, bad);
	cJSON_AddItemToArray(list, a);
	cJSON_AddItemToArray(list, other);

	es_health_applied_outcome(list, a, &ha);
	assert_int_equal(ha.applied, 1);
	assert_string_equal(ha.reason, "Applied");
	assert_string_equal(ha.event_reason, "Applied");
	assert_string_equal(ha.message, "sets condition ManyProcesses when processes.count "
			    "Gt 100 for 2s (severity Warning)");
	es_health_applied_outcome(list, other, &ha);
	assert_int_equal(ha.applied, 1);
	assert_string_equal(ha.message, "sets condition DiskPressure when "
			    "filesystem.availableRatio Lt 0.05 for 1m (severity Critical)");

	/* Invalid, though its name sorts first: it supersedes nothing. */
	es_health_applied_outcome(list, bad, &ha);
	assert_int_equal(ha.applied, 0);
	assert_string_equal(ha.reason, "InvalidSpec");
	assert_string_equal(ha.event_type, "Warning");
	assert_string_equal(ha.event_reason, "ApplyFailed");
	assert_non_null(strstr(ha.message, "invalid spec: spec.metric: unknown metric \"foo\""));

	/* A valid rule whose name sorts first takes the condition type. */
	cJSON_AddItemToArray(list, b);
	es_health_applied_outcome(list, a, &ha);
	assert_int_equal(ha.applied, 0);
	assert_string_equal(ha.reason, "Superseded");
	assert_non_null(strstr(ha.message, "superseded by HealthRule a-many"));
	es_health_applied_outcome(list, b, &ha);
	assert_int_equal(ha.applied, 1);

	/* The evaluator loads the applied ones only. */
	assert_int_equal(es_health_eval_new(&he), ES_OK);
	assert_int_equal(es_health_eval_set_rules(he, list), ES_OK);
	assert_int_equal(es_health_eval_count(he), 2);
	es_health_eval_free(he);
	es_health_eval_free(NULL);
	cJSON_Delete(list);
}

/* Allocation failures are errors, and keep the old rule set. */
static void test_out_of_memory(void **state)
{
	es_health_eval *he = NULL;
	cJSON *list = cJSON_CreateArray();

	(void)state;
	fail_calloc = 1;
	assert_int_equal(es_health_eval_new(&he), ES_ERR_NOMEM);
	assert_null(he);
	fail_calloc = 0;
	he = eval_with(MANY("0s"));
	cJSON_AddItemToArray(list, rule("a", "u-a", 1, MANY("0s")));
	cJSON_AddItemToArray(list, rule("b", "u-b", 1, "{\"metric\":\"processes.threads\","
					"\"operator\":\"Gt\",\"threshold\":1,"
					"\"conditionType\":\"ManyThreads\"}"));
	fail_calloc = 1;
	assert_int_equal(es_health_eval_set_rules(he, list), ES_ERR_NOMEM);
	fail_calloc = 0;
	assert_int_equal(es_health_eval_count(he), 1);
	assert_int_equal(es_health_eval_set_rules(he, list), ES_OK);
	assert_int_equal(es_health_eval_count(he), 2);
	cJSON_Delete(list);
	es_health_eval_free(he);
}

/* The reconciler's Applied condition for HealthRules over a real store. */
static void test_reconcile_health_rules(void **state)
{
	char dir[64] = "/tmp/es-health-test-XXXXXX", path[128], err[256] = "";
	char text[2048];
	es_store *st = NULL;
	cJSON *events = cJSON_CreateArray(), *status = NULL, *msg;
	const cJSON *c;
	int applied = 0, skipped = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/agent.db", dir);
	if (es_store_open(path, &st, err, sizeof(err)) != ES_OK)
		fail_msg("es_store_open: %s", err);
	snprintf(text, sizeof(text),
		 "{\"full\":true,\"resourceVersion\":3,\"objects\":["
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		 "\"metadata\":{\"name\":\"good\",\"uid\":\"u-g\",\"generation\":1},"
		 "\"spec\":%s},"
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		 "\"metadata\":{\"name\":\"neg\",\"uid\":\"u-n\",\"generation\":1},"
		 "\"spec\":{\"metric\":\"processes.count\",\"operator\":\"Gt\","
		 "\"threshold\":1,\"for\":\"-5s\",\"conditionType\":\"Other\"}}]}",
		 MANY("2s"));
	msg = J(text);
	assert_int_equal(es_store_desired_commit(st, msg), ES_OK);
	cJSON_Delete(msg);
	assert_int_equal(es_reconcile_run(st, T0, "1.0", NULL, events, &applied,
					  &skipped), ES_OK);
	assert_int_equal(applied, 2);

	assert_int_equal(es_store_status_get(st, "HealthRule", "good", &status), ES_OK);
	c = es_cond_find(cJSON_GetObjectItem(status, "conditions"), "Applied");
	assert_string_equal(sget(c, "status"), "True");
	assert_string_equal(sget(c, "reason"), "Applied");
	assert_non_null(strstr(sget(c, "message"), "ManyProcesses"));
	cJSON_Delete(status);
	assert_int_equal(es_store_status_get(st, "HealthRule", "neg", &status), ES_OK);
	c = es_cond_find(cJSON_GetObjectItem(status, "conditions"), "Applied");
	assert_string_equal(sget(c, "status"), "False");
	assert_string_equal(sget(c, "reason"), "InvalidSpec");
	assert_non_null(strstr(sget(c, "message"), "spec.for: negative duration"));
	cJSON_Delete(status);
	assert_int_equal(cJSON_GetArraySize(events), 2);

	es_store_close(st);
	cJSON_Delete(events);
	unlink(path);
	snprintf(text, sizeof(text), "%s/agent.db-wal", dir);
	unlink(text);
	snprintf(text, sizeof(text), "%s/agent.db-shm", dir);
	unlink(text);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_for_duration),
		cmocka_unit_test(test_zero_for_and_generation),
		cmocka_unit_test(test_reload_and_restart),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_applied_outcome),
		cmocka_unit_test(test_reconcile_health_rules),
		cmocka_unit_test(test_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
