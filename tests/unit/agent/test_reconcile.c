/*
 * test_reconcile.c - the agent's reconciler (agent/reconcile/reconcile.h) over a real
 * store in a temporary directory.
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
#include "reconcile/reconcile.h"
#include "testutil.h"

#define T0 1700000000
#define VERSION "9.8.7"

typedef struct fx {
	char dir[64];
	char path[128];
	es_store *st;
	cJSON *events;
	es_collector_cfg eff;
	int applied, skipped;
	int rv; /* the resourceVersion of the last change set committed */
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char err[256] = "";

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "reconcile-test", f->path,
		       sizeof(f->path), "agent.db");
	assert_int_equal(es_store_open(f->path, &f->st, err, sizeof(err)), ES_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	cJSON_Delete(f->events);
	es_store_close(f->st);
	es_test_rmtree(f->dir);
	free(f);
	return 0;
}

/* Runs the reconciler at time t with a fresh events array. */
static void run(fx *f, time_t t)
{
	cJSON_Delete(f->events);
	f->events = cJSON_CreateArray();
	assert_non_null(f->events);
	f->eff.interval_s = -1;
	f->eff.mask = 0xdead;
	f->applied = f->skipped = -1;
	assert_int_equal(es_reconcile_run(f->st, t, VERSION, &f->eff, f->events,
					  &f->applied, &f->skipped), ES_OK);
}

static void commit(fx *f, const char *text)
{
	cJSON *msg = cJSON_Parse(text);

	assert_non_null(msg);
	assert_int_equal(es_store_desired_commit(f->st, msg), ES_OK);
	cJSON_Delete(msg);
}

/* Commits one object of kind/name/uid/generation with a spec, in a change
 * set past the last one (the store ignores one that is not). */
static void put_obj(fx *f, const char *kind, const char *name, const char *uid,
		    int gen, const char *spec)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"full\":false,\"resourceVersion\":%d,\"objects\":["
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"%s\","
		 "\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"generation\":%d,"
		 "\"resourceVersion\":%d},\"spec\":%s}]}",
		 f->rv + 1, kind, name, uid, gen, f->rv + 1, spec);
	f->rv++;
	commit(f, text);
}

static void del_obj(fx *f, const char *kind, const char *name, const char *uid)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "{\"full\":false,\"resourceVersion\":%d,\"objects\":[],"
		 "\"deleted\":[{\"kind\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\"}]}",
		 ++f->rv, kind, name, uid);
	commit(f, text);
}

/* The stored Applied condition of kind/name (owned by *status_out). */
static const cJSON *applied_cond(fx *f, const char *kind, const char *name,
				 cJSON **status_out)
{
	const cJSON *c;

	assert_int_equal(es_store_status_get(f->st, kind, name, status_out), ES_OK);
	c = es_cond_find(cJSON_GetObjectItem(*status_out, "conditions"), "Applied");
	assert_non_null(c);
	return c;
}

static const char *sget(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static void test_generation_skip(void **state)
{
	fx *f = *state;
	const cJSON *ev, *io;

	put_obj(f, "CollectorConfig", "default", "u-1", 1,
		"{\"intervalSeconds\":30,\"collectors\":[\"cpu\",\"memory\"]}");
	run(f, T0);
	assert_int_equal(f->applied, 1);
	assert_int_equal(f->skipped, 0);
	assert_int_equal(f->eff.interval_s, 30);
	assert_int_equal(f->eff.mask, ES_COLLECT_CPU | ES_COLLECT_MEMORY);
	assert_int_equal(cJSON_GetArraySize(f->events), 1);
	ev = cJSON_GetArrayItem(f->events, 0);
	assert_string_equal(sget(ev, "type"), "Normal");
	assert_string_equal(sget(ev, "reason"), "Applied");
	io = cJSON_GetObjectItem(ev, "involvedObject");
	assert_string_equal(sget(io, "kind"), "CollectorConfig");
	assert_string_equal(sget(io, "name"), "default");
	assert_string_equal(sget(io, "uid"), "u-1");

	run(f, T0 + 60);
	assert_int_equal(f->applied, 0);
	assert_int_equal(f->skipped, 1);
	assert_int_equal(cJSON_GetArraySize(f->events), 0);
	/* The effective config is produced on every run, skipped or not. */
	assert_int_equal(f->eff.interval_s, 30);
	assert_int_equal(f->eff.mask, ES_COLLECT_CPU | ES_COLLECT_MEMORY);
}

static void test_generation_bump(void **state)
{
	fx *f = *state;
	cJSON *status = NULL;
	const cJSON *c;
	char t0[ES_TIME_RFC3339_LEN];

	put_obj(f, "CollectorConfig", "default", "u-1", 1, "{\"intervalSeconds\":30}");
	run(f, T0);
	put_obj(f, "CollectorConfig", "default", "u-1", 2, "{\"intervalSeconds\":5}");
	run(f, T0 + 100);
	assert_int_equal(f->applied, 1);
	assert_int_equal(f->skipped, 0);
	assert_int_equal(cJSON_GetArraySize(f->events), 1);
	assert_int_equal(f->eff.interval_s, 5);
	assert_int_equal(f->eff.mask, ES_COLLECT_ALL);

	c = applied_cond(f, "CollectorConfig", "default", &status);
	assert_int_equal(cJSON_GetObjectItem(status, "observedGeneration")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(status, "generation")->valueint, 2);
	assert_string_equal(sget(status, "uid"), "u-1");
	assert_string_equal(sget(c, "status"), "True");
	assert_int_equal(cJSON_GetObjectItem(c, "observedGeneration")->valueint, 2);
	/* Status stayed True: the transition time is the first one. */
	assert_string_equal(sget(c, "lastTransitionTime"), es_time_rfc3339(T0, t0));
	cJSON_Delete(status);
}

static void test_two_configs_and_promotion(void **state)
{
	fx *f = *state;
	cJSON *status = NULL;
	const cJSON *c, *ev;
	char t1[ES_TIME_RFC3339_LEN];

	put_obj(f, "CollectorConfig", "zeta", "u-z", 1, "{\"intervalSeconds\":60}");
	put_obj(f, "CollectorConfig", "alpha", "u-a", 1,
		"{\"intervalSeconds\":15,\"collectors\":[\"network\"]}");
	run(f, T0);
	assert_int_equal(f->applied, 2);
	assert_int_equal(f->eff.interval_s, 15);
	assert_int_equal(f->eff.mask, ES_COLLECT_NETWORK);
	c = applied_cond(f, "CollectorConfig", "alpha", &status);
	assert_string_equal(sget(c, "status"), "True");
	assert_string_equal(sget(c, "reason"), "Applied");
	cJSON_Delete(status);
	c = applied_cond(f, "CollectorConfig", "zeta", &status);
	assert_string_equal(sget(c, "status"), "False");
	assert_string_equal(sget(c, "reason"), "Superseded");
	assert_non_null(strstr(sget(c, "message"), "alpha"));
	cJSON_Delete(status);

	/* Deleting the winner promotes the other; its generation did not
	 * change but its outcome did. */
	del_obj(f, "CollectorConfig", "alpha", "u-a");
	assert_int_equal(es_store_status_get(f->st, "CollectorConfig", "alpha", &status),
			 ES_ERR_NOTFOUND);
	run(f, T0 + 10);
	assert_int_equal(f->applied, 1);
	assert_int_equal(f->skipped, 0);
	assert_int_equal(f->eff.interval_s, 60);
	assert_int_equal(f->eff.mask, ES_COLLECT_ALL);
	assert_int_equal(cJSON_GetArraySize(f->events), 1);
	ev = cJSON_GetArrayItem(f->events, 0);
	assert_string_equal(sget(ev, "reason"), "Applied");
	assert_string_equal(sget(cJSON_GetObjectItem(ev, "involvedObject"), "name"), "zeta");
	c = applied_cond(f, "CollectorConfig", "zeta", &status);
	assert_string_equal(sget(c, "status"), "True");
	assert_string_equal(sget(c, "lastTransitionTime"), es_time_rfc3339(T0 + 10, t1));
	cJSON_Delete(status);
}

/* When the CollectorConfig in effect goes, every other one's message
 * names the new winner: their statuses are rewritten, but only the
 * promoted one emits an event (Kubernetes events record transitions; a
 * message alone is not one), so one delete does not flood the outbox. */
static void test_message_change_is_not_an_event(void **state)
{
	fx *f = *state;
	cJSON *status = NULL;
	const cJSON *c, *ev;

	put_obj(f, "CollectorConfig", "alpha", "u-a", 1, "{\"intervalSeconds\":15}");
	put_obj(f, "CollectorConfig", "beta", "u-b", 1, "{\"intervalSeconds\":20}");
	put_obj(f, "CollectorConfig", "gamma", "u-g", 1, "{\"intervalSeconds\":30}");
	run(f, T0);
	assert_int_equal(cJSON_GetArraySize(f->events), 3);
	del_obj(f, "CollectorConfig", "alpha", "u-a");
	run(f, T0 + 10);
	assert_int_equal(f->applied, 2);
	c = applied_cond(f, "CollectorConfig", "gamma", &status);
	assert_non_null(strstr(sget(c, "message"), "beta"));
	cJSON_Delete(status);
	assert_int_equal(cJSON_GetArraySize(f->events), 1);
	ev = cJSON_GetArrayItem(f->events, 0);
	assert_string_equal(sget(cJSON_GetObjectItem(ev, "involvedObject"), "name"), "beta");
}

static void test_defaults_and_unsupported(void **state)
{
	fx *f = *state;
	cJSON *status = NULL;
	const cJSON *c, *ev;

	run(f, T0);
	assert_int_equal(f->eff.interval_s, ES_COLLECT_DEFAULT_INTERVAL);
	assert_int_equal(f->eff.mask, ES_COLLECT_ALL);
	assert_int_equal(f->applied, 0);
	assert_int_equal(f->skipped, 0);

	put_obj(f, "Widget", "hot", "u-h", 1, "{}");
	put_obj(f, "Gadget", "deny", "u-e", 1, "{}");
	run(f, T0);
	assert_int_equal(f->applied, 2);
	assert_int_equal(f->eff.interval_s, ES_COLLECT_DEFAULT_INTERVAL);
	assert_int_equal(f->eff.mask, ES_COLLECT_ALL);
	c = applied_cond(f, "Widget", "hot", &status);
	assert_string_equal(sget(c, "status"), "False");
	assert_string_equal(sget(c, "reason"), "KindNotSupported");
	assert_non_null(strstr(sget(c, "message"), "Widget"));
	assert_non_null(strstr(sget(c, "message"), VERSION));
	cJSON_Delete(status);
	c = applied_cond(f, "Gadget", "deny", &status);
	assert_string_equal(sget(c, "reason"), "KindNotSupported");
	cJSON_Delete(status);
	assert_int_equal(cJSON_GetArraySize(f->events), 2);
	cJSON_ArrayForEach(ev, f->events) {
		assert_string_equal(sget(ev, "type"), "Warning");
		assert_string_equal(sget(ev, "reason"), "KindNotSupported");
	}
	run(f, T0 + 1);
	assert_int_equal(f->applied, 0);
	assert_int_equal(f->skipped, 2);
	assert_int_equal(cJSON_GetArraySize(f->events), 0);

	/* A generation bump with the same outcome is still observed. */
	put_obj(f, "Widget", "hot", "u-h", 2, "{\"threshold\":1}");
	run(f, T0 + 2);
	assert_int_equal(f->applied, 1);
	assert_int_equal(f->skipped, 1);
	assert_int_equal(cJSON_GetArraySize(f->events), 1);
	c = applied_cond(f, "Widget", "hot", &status);
	assert_int_equal(cJSON_GetObjectItem(status, "observedGeneration")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(c, "observedGeneration")->valueint, 2);
	cJSON_Delete(status);
}

static void test_uid_change_is_new(void **state)
{
	fx *f = *state;
	cJSON *status = NULL;
	const cJSON *c;
	char t[ES_TIME_RFC3339_LEN];

	put_obj(f, "HealthRule", "hot", "u-old", 1, "{}");
	run(f, T0);
	/* Deleted and recreated under the same name: generation is 1 again,
	 * yet it is a new object and is reconciled. */
	put_obj(f, "HealthRule", "hot", "u-new", 1, "{}");
	run(f, T0 + 5);
	assert_int_equal(f->applied, 1);
	assert_int_equal(cJSON_GetArraySize(f->events), 1);
	c = applied_cond(f, "HealthRule", "hot", &status);
	assert_string_equal(sget(status, "uid"), "u-new");
	assert_string_equal(sget(c, "lastTransitionTime"), es_time_rfc3339(T0 + 5, t));
	cJSON_Delete(status);
}

static void test_objects_status(void **state)
{
	fx *f = *state;
	cJSON *arr = NULL;
	const cJSON *o, *conds;

	put_obj(f, "CollectorConfig", "a", "u-a", 3, "{}");
	assert_int_equal(es_reconcile_objects_status(f->st, &arr), ES_OK);
	assert_int_equal(cJSON_GetArraySize(arr), 1);
	o = cJSON_GetArrayItem(arr, 0);
	assert_int_equal(cJSON_GetObjectItem(o, "observedGeneration")->valueint, 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "conditions")), 0);
	cJSON_Delete(arr);

	run(f, T0);
	assert_int_equal(es_reconcile_objects_status(f->st, &arr), ES_OK);
	o = cJSON_GetArrayItem(arr, 0);
	assert_string_equal(sget(o, "kind"), "CollectorConfig");
	assert_string_equal(sget(o, "name"), "a");
	assert_string_equal(sget(o, "uid"), "u-a");
	assert_int_equal(cJSON_GetObjectItem(o, "generation")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItem(o, "observedGeneration")->valueint, 3);
	conds = cJSON_GetObjectItem(o, "conditions");
	assert_int_equal(cJSON_GetArraySize(conds), 1);
	assert_string_equal(sget(es_cond_find(conds, "Applied"), "status"), "True");
	cJSON_Delete(arr);
}

static void test_invalid_winner(void **state)
{
	fx *f = *state;
	cJSON *status = NULL;
	const cJSON *c;

	put_obj(f, "CollectorConfig", "a", "u-a", 1, "{\"intervalSeconds\":0}");
	run(f, T0);
	assert_int_equal(f->eff.interval_s, ES_COLLECT_DEFAULT_INTERVAL);
	assert_int_equal(f->eff.mask, ES_COLLECT_ALL);
	c = applied_cond(f, "CollectorConfig", "a", &status);
	assert_string_equal(sget(c, "status"), "False");
	assert_string_equal(sget(c, "reason"), "InvalidSpec");
	assert_non_null(strstr(sget(c, "message"), "intervalSeconds"));
	assert_string_equal(sget(cJSON_GetArrayItem(f->events, 0), "reason"), "ApplyFailed");
	cJSON_Delete(status);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_generation_skip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generation_bump, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_configs_and_promotion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_message_change_is_not_an_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults_and_unsupported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uid_change_is_new, setup, teardown),
		cmocka_unit_test_setup_teardown(test_objects_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_winner, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
