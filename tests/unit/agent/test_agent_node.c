/*
 * test_agent_node.c - the node conditions' Ready summary (agent/node/agent_node.c;
 * PROTOCOL.md "Node conditions"): Ready is False, CollectorsFailing, only
 * for collectors that are enabled, running and unhealthy; a kernel
 * collector with no backend on this host (backend "unavailable", with its
 * reason) is not failing. agent__queue_event is wrapped: the events the
 * update queues are counted, not stored. CredentialsValid follows the sync
 * client's look at its credential files (es_sync_credentials, wrapped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "runtime/agent_int.h"
#include "es_cond.h"
#include "es_json.h"
#include "testutil.h"

void __wrap_agent__queue_event(es_agent *a, cJSON *ev);

static int queued;

void __wrap_agent__queue_event(es_agent *a, cJSON *ev)
{
	(void)a;
	queued++;
	cJSON_Delete(ev);
}

int __wrap_es_sync_credentials(const es_sync *s, const char **reason,
			       const char **message);

static int creds_ok = -1;
static const char *creds_reason = "", *creds_msg = "";

int __wrap_es_sync_credentials(const es_sync *s, const char **reason,
			       const char **message)
{
	(void)s;
	*reason = creds_reason;
	*message = creds_msg;
	return creds_ok;
}

/* One round's status: the procfs collectors healthy, plus the kernel
 * collector entry kc (JSON text). */
static cJSON *status_with(const char *kc)
{
	char text[2048];
	cJSON *st = NULL;

	snprintf(text, sizeof(text),
		 "{\"usage\":{\"memory\":{\"MemAvailable\":8589934592},"
		 "\"processes\":{\"count\":100},"
		 "\"network\":[{\"interface\":\"eth0\"}],"
		 "\"filesystems\":[{\"mountpoint\":\"/\",\"sizeBytes\":100,\"availBytes\":50}]},"
		 "\"collectors\":["
		 "{\"name\":\"cpu\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true},"
		 "{\"name\":\"memory\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true},"
		 "{\"name\":\"filesystem\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true},"
		 "{\"name\":\"network\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true},"
		 "{\"name\":\"processes\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true},"
		 "%s]}", kc);
	assert_int_equal(es_json_parse(text, strlen(text), ES_JSON_MAX_DEPTH, &st, NULL, 0),
			 ES_OK);
	return st;
}

static const char *member(const cJSON *c, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, name);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

/* The Ready condition (a copy) after one round over status_with(kc) on a
 * fresh agent. */
static cJSON *ready_after(const char *kc)
{
	es_agent_config cfg;
	es_agent *a = calloc(1, sizeof(*a));
	cJSON *st = status_with(kc), *ready;
	es_sample s;

	assert_non_null(a);
	memset(&cfg, 0, sizeof(cfg));
	cfg.node_name = "n1";
	a->cfg = &cfg;
	a->conditions = cJSON_CreateArray();
	assert_non_null(a->conditions);
	assert_int_equal(es_health_eval_new(&a->health), ES_OK);
	es_sample_init(&s);
	es_test_sample(st, 0, &s);
	agent__update_conditions(a, st, &s, 1000);
	es_sample_clear(&s);
	ready = cJSON_Duplicate(es_cond_find(a->conditions, "Ready"), 1);
	cJSON_Delete(st);
	cJSON_Delete(a->conditions);
	es_health_eval_free(a->health);
	free(a);
	return ready;
}

/* collector-backend=procfs: cgroup-network has no fallback and is
 * unavailable; the node is Ready and the message names it. */
static void test_unavailable_is_not_failing(void **state)
{
	cJSON *ready = ready_after(
		"{\"name\":\"cgroup-network\",\"backend\":\"unavailable\",\"enabled\":true,"
		"\"healthy\":false,\"reason\":\"forced by collector-backend=procfs\"},"
		"{\"name\":\"tcp\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true}");

	(void)state;
	assert_non_null(ready);
	assert_string_equal(member(ready, "status"), "True");
	assert_string_equal(member(ready, "reason"), "AgentReady");
	assert_non_null(strstr(member(ready, "message"), "unavailable on this host: cgroup-network"));
	cJSON_Delete(ready);
}

/* A running collector that is unhealthy still makes Ready False, and only
 * it is named. */
static void test_running_unhealthy_is_failing(void **state)
{
	cJSON *ready = ready_after(
		"{\"name\":\"cgroup-network\",\"backend\":\"unavailable\",\"enabled\":true,"
		"\"healthy\":false,\"reason\":\"no cgroup v2\"},"
		"{\"name\":\"tcp\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":false}");

	(void)state;
	assert_non_null(ready);
	assert_string_equal(member(ready, "status"), "False");
	assert_string_equal(member(ready, "reason"), "CollectorsFailing");
	assert_string_equal(member(ready, "message"), "collectors failing: tcp");
	cJSON_Delete(ready);
}

/* A disabled collector is neither failing nor listed. */
static void test_disabled_is_not_failing(void **state)
{
	cJSON *ready = ready_after(
		"{\"name\":\"tcp\",\"backend\":\"procfs\",\"enabled\":false,\"healthy\":false}");

	(void)state;
	assert_non_null(ready);
	assert_string_equal(member(ready, "status"), "True");
	assert_string_equal(member(ready, "message"), "edgesync-agent is collecting");
	cJSON_Delete(ready);
}

/* A Node too long for one message loses entries from the end of
 * status.objects, counted in status.agent.objectsOmitted; a short one is
 * printed as it is. */
static void test_node_text_fits_one_message(void **state)
{
	const size_t max = 1024 * 1024 - 16384;
	cJSON *node = cJSON_CreateObject(), *st, *objs, *o, *back;
	char name[32], *text;
	int i;
	(void)state;

	st = cJSON_AddObjectToObject(node, "status");
	cJSON_AddObjectToObject(st, "agent");
	objs = cJSON_AddArrayToObject(st, "objects");
	for (i = 0; i < 3000; i++) {
		o = cJSON_CreateObject();
		snprintf(name, sizeof(name), "cc-%04d", i);
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "message", "superseded by CollectorConfig cc-0000, "
					"which sorts first among the CollectorConfigs of this "
					"node; this text pads the entry to about 600 bytes, as "
					"the status of a real object with its conditions is. "
					"Lorem ipsum dolor sit amet, consectetur adipiscing elit, "
					"sed do eiusmod tempor incididunt ut labore et dolore magna "
					"aliqua. Ut enim ad minim veniam, quis nostrud exercitation "
					"ullamco laboris nisi ut aliquip ex ea commodo consequat.");
		cJSON_AddItemToArray(objs, o);
	}
	text = agent__node_text(node, max);
	assert_non_null(text);
	assert_true(strlen(text) <= max);
	back = cJSON_Parse(text);
	assert_non_null(back);
	st = cJSON_GetObjectItem(back, "status");
	i = cJSON_GetArraySize(cJSON_GetObjectItem(st, "objects"));
	assert_true(i > 1000 && i < 3000);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "agent"), "objectsOmitted"));
	assert_int_equal(i + cJSON_GetObjectItem(cJSON_GetObjectItem(st, "agent"),
						 "objectsOmitted")->valueint, 3000);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(st, "objects"), 0), "name")->valuestring, "cc-0000");
	cJSON_Delete(back);
	free(text);

	cJSON_Delete(node);

	node = cJSON_Parse("{\"status\":{\"agent\":{},\"objects\":[{\"name\":\"a\"}]}}");
	assert_non_null(node);
	text = agent__node_text(node, max);
	assert_string_equal(text, "{\"status\":{\"agent\":{},\"objects\":[{\"name\":\"a\"}]}}");
	free(text);
	cJSON_Delete(node);
}

/* CredentialsValid: False with the reason naming the bad file (news when
 * new, as a problem), True once the files load, gone without a
 * controller; Ready is about the node and stays True meanwhile. */
static void test_credentials_condition(void **state)
{
	es_agent_config cfg;
	es_agent *a = calloc(1, sizeof(*a));
	cJSON *st = status_with("{\"name\":\"tcp\",\"backend\":\"procfs\","
				"\"enabled\":true,\"healthy\":true}");
	const cJSON *c;
	es_sample smp;

	(void)state;
	assert_non_null(a);
	memset(&cfg, 0, sizeof(cfg));
	cfg.node_name = "n1";
	a->cfg = &cfg;
	a->sync = (es_sync *)&cfg; /* never dereferenced: es_sync_credentials is wrapped */
	a->conditions = cJSON_CreateArray();
	assert_non_null(a->conditions);
	assert_int_equal(es_health_eval_new(&a->health), ES_OK);

	/* Not read yet: no condition. */
	creds_ok = -1;
	assert_int_equal(agent__credentials_condition(a, 1000), 0);
	assert_null(es_cond_find(a->conditions, "CredentialsValid"));

	creds_ok = 0;
	creds_reason = "CAFileInvalid";
	creds_msg = "ca /etc/edgesync/ca.crt: empty file";
	queued = 0;
	es_sample_init(&smp);
	es_test_sample(st, 0, &smp);
	agent__update_conditions(a, st, &smp, 1000);
	es_sample_clear(&smp);
	c = es_cond_find(a->conditions, "CredentialsValid");
	assert_non_null(c);
	assert_string_equal(member(c, "status"), "False");
	assert_string_equal(member(c, "reason"), "CAFileInvalid");
	assert_string_equal(member(c, "message"), "ca /etc/edgesync/ca.crt: empty file; "
			    "the agent runs offline and reads the files again every 5 s");
	assert_int_equal(queued, 1);
	assert_string_equal(member(es_cond_find(a->conditions, "Ready"), "status"), "True");
	/* The same again: no change, no event. */
	assert_int_equal(agent__credentials_condition(a, 1010), 0);
	assert_int_equal(queued, 1);

	creds_ok = 1;
	creds_reason = "CredentialsLoaded";
	creds_msg = "cert c (valid until 2030-01-01T00:00:00Z), key k, ca a";
	assert_int_equal(agent__credentials_condition(a, 1020), 1);
	c = es_cond_find(a->conditions, "CredentialsValid");
	assert_string_equal(member(c, "status"), "True");
	assert_string_equal(member(c, "message"), creds_msg);
	assert_int_equal(queued, 2);

	/* No controller (a seeded condition from an earlier run goes). */
	a->sync = NULL;
	assert_int_equal(agent__credentials_condition(a, 1030), 0);
	assert_null(es_cond_find(a->conditions, "CredentialsValid"));
	assert_int_equal(queued, 2);

	cJSON_Delete(st);
	cJSON_Delete(a->conditions);
	es_health_eval_free(a->health);
	free(a);
	creds_ok = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credentials_condition),
		cmocka_unit_test(test_unavailable_is_not_failing),
		cmocka_unit_test(test_running_unhealthy_is_failing),
		cmocka_unit_test(test_disabled_is_not_failing),
		cmocka_unit_test(test_node_text_fits_one_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
