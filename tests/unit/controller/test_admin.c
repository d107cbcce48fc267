/*
 * test_admin.c - the admin REST API (controller/api/admin.h) over a real store:
 * apply semantics, validation and path errors as Kubernetes Status objects,
 * lists, delete, hooks, and the describe view of desired beside reported.
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

#include "api/admin.h"
#include "api/admin_int.h"
#include "es_cond.h"
#include "es_json.h"
#include "testutil.h"

#define API "/apis/edgesync.io/v1alpha1/"

typedef struct hook_call {
	cJSON *prev, *cur;
} hook_call;

typedef struct fx {
	char dir[64];
	es_db *db;
	es_admin_hooks hooks;
	hook_call calls[16];
	int ncalls;
} fx;

static void on_change(void *ud, const cJSON *prev, const cJSON *cur)
{
	fx *f = ud;

	assert_true(f->ncalls < 16);
	f->calls[f->ncalls].prev = prev ? cJSON_Duplicate(prev, 1) : NULL;
	f->calls[f->ncalls].cur = cur ? cJSON_Duplicate(cur, 1) : NULL;
	f->ncalls++;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char path[128], err[256];

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "test-admin", path, sizeof(path),
		       "controller.db");
	assert_int_equal(es_db_open(path, &f->db, err, sizeof(err)), ES_OK);
	f->hooks.object_changed = on_change;
	f->hooks.ud = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	int rc;

	for (int i = 0; i < f->ncalls; i++) {
		cJSON_Delete(f->calls[i].prev);
		cJSON_Delete(f->calls[i].cur);
	}
	es_db_close(f->db);
	rc = es_test_rmtree(f->dir);
	free(f);
	return rc;
}

/* Performs a request; returns the parsed JSON body (NULL for non-JSON). */
static cJSON *req(fx *f, const char *method, const char *path, const char *query,
		  const char *body, int want_status)
{
	es_admin_resp resp;
	cJSON *out = NULL;
	char err[128];

	assert_int_equal(es_admin_handle(f->db, &f->hooks, method, path, query, body,
					 body ? strlen(body) : 0, "admin-test", &resp), ES_OK);
	assert_non_null(resp.body);
	if (resp.status != want_status)
		fail_msg("%s %s: status %d, want %d: %s", method, path, resp.status,
			 want_status, resp.body);
	if (strcmp(resp.content_type, "application/json") == 0)
		assert_int_equal(es_json_parse(resp.body, resp.body_len, ES_JSON_MAX_DEPTH,
					       &out, err, sizeof(err)), ES_OK);
	free(resp.body);
	return out;
}

static const char *str_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static const cJSON *at(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static char *cc_body(const char *name, const char *spec)
{
	static char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		 "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, spec);
	return buf;
}

static void test_put_semantics(void **state)
{
	fx *f = *state;
	cJSON *o;
	char uid[64];

	o = req(f, "PUT", API "collectorconfigs/default", NULL,
		cc_body("default", "{\"intervalSeconds\":10}"), 201);
	assert_non_null(str_at(at(o, "metadata"), "uid"));
	snprintf(uid, sizeof(uid), "%s", str_at(at(o, "metadata"), "uid"));
	assert_int_equal(num_at(at(o, "metadata"), "generation"), 1);
	cJSON_Delete(o);
	assert_int_equal(f->ncalls, 1);
	assert_null(f->calls[0].prev);
	assert_string_equal(es_obj_name(f->calls[0].cur), "default");

	o = req(f, "PUT", API "collectorconfigs/default", NULL,
		cc_body("default", "{\"intervalSeconds\":10}"), 200);
	assert_int_equal(num_at(at(o, "metadata"), "generation"), 1);
	assert_string_equal(str_at(at(o, "metadata"), "uid"), uid);
	cJSON_Delete(o);
	assert_int_equal(f->ncalls, 1);

	o = req(f, "PUT", API "collectorconfigs/default", NULL,
		cc_body("default", "{\"intervalSeconds\":30}"), 200);
	assert_int_equal(num_at(at(o, "metadata"), "generation"), 2);
	assert_string_equal(str_at(at(o, "metadata"), "uid"), uid);
	cJSON_Delete(o);
	assert_int_equal(f->ncalls, 2);
	assert_int_equal(es_obj_generation(f->calls[1].prev), 1);
	assert_int_equal(es_obj_generation(f->calls[1].cur), 2);

	o = req(f, "GET", API "collectorconfigs/default", NULL, NULL, 200);
	assert_int_equal(num_at(at(o, "spec"), "intervalSeconds"), 30);
	cJSON_Delete(o);

	/* POST creates, and refuses an existing name. */
	o = req(f, "POST", API "collectorconfigs", NULL, cc_body("second", "{}"), 201);
	cJSON_Delete(o);
	o = req(f, "POST", API "collectorconfigs", NULL, cc_body("second", "{}"), 409);
	assert_string_equal(str_at(o, "reason"), "AlreadyExists");
	cJSON_Delete(o);
	assert_int_equal(f->ncalls, 3);
}

static void test_errors(void **state)
{
	fx *f = *state;
	es_admin_resp resp;
	cJSON *o;

	o = req(f, "PUT", API "collectorconfigs/default", NULL,
		cc_body("default", "{\"intervalSeconds\":0}"), 422);
	assert_string_equal(str_at(o, "kind"), "Status");
	assert_string_equal(str_at(o, "apiVersion"), "v1");
	assert_string_equal(str_at(o, "status"), "Failure");
	assert_string_equal(str_at(o, "reason"), "Invalid");
	assert_int_equal(num_at(o, "code"), 422);
	assert_non_null(strstr(str_at(o, "message"), "spec.intervalSeconds"));
	assert_string_equal(str_at(at(o, "details"), "name"), "default");
	assert_string_equal(str_at(at(o, "details"), "kind"), "CollectorConfig");
	assert_string_equal(str_at(cJSON_GetArrayItem(at(at(o, "details"), "causes"), 0),
				   "field"), "spec.intervalSeconds");
	cJSON_Delete(o);

	o = req(f, "PUT", API "collectorconfigs/other", NULL,
		cc_body("default", "{}"), 400);
	assert_string_equal(str_at(o, "reason"), "BadRequest");
	assert_non_null(strstr(str_at(o, "message"), "metadata.name"));
	cJSON_Delete(o);
	o = req(f, "PUT", API "healthrules/default", NULL, cc_body("default", "{}"), 400);
	assert_non_null(strstr(str_at(o, "message"), "kind"));
	cJSON_Delete(o);
	o = req(f, "PUT", API "collectorconfigs/default", NULL, "{\"kind\":", 400);
	cJSON_Delete(o);
	/* JSON the agents could not read the same way: refused, not stored. */
	o = req(f, "PUT", API "healthrules/hot", NULL,
		"{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"HealthRule\","
		"\"metadata\":{\"name\":\"hot\"},\"spec\":{\"metric\":\"cpu.utilization\","
		"\"operator\":\"Gt\",\"threshold\":1e999,\"conditionType\":\"Hot\"}}", 400);
	assert_non_null(strstr(str_at(o, "message"), "out of range"));
	cJSON_Delete(o);
	o = req(f, "PUT", API "collectorconfigs/default", NULL,
		"{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		"\"metadata\":{\"name\":\"default\",\"name\":\"../x\"},\"spec\":{}}", 400);
	assert_non_null(strstr(str_at(o, "message"), "duplicate member name \"name\""));
	cJSON_Delete(o);
	assert_int_equal(f->ncalls, 0);
	o = req(f, "GET", API "collectorconfigs/default", NULL, NULL, 404);
	assert_string_equal(str_at(o, "reason"), "NotFound");
	cJSON_Delete(o);

	o = req(f, "GET", API "widgets", NULL, NULL, 404);
	cJSON_Delete(o);
	o = req(f, "GET", API "widgets/x", NULL, NULL, 404);
	cJSON_Delete(o);
	o = req(f, "GET", "/apis/other/v1/collectorconfigs", NULL, NULL, 404);
	cJSON_Delete(o);
	o = req(f, "PATCH", API "collectorconfigs/default", NULL, NULL, 405);
	cJSON_Delete(o);
	o = req(f, "PUT", API "nodes/n1", NULL, NULL, 405);
	cJSON_Delete(o);
	/* DELETE revokes a node (test_enroll); one the store never saw is 404. */
	o = req(f, "DELETE", API "nodes/n1", NULL, NULL, 404);
	cJSON_Delete(o);
	o = req(f, "GET", API "nodes/n1/reports", "limit=abc", NULL, 400);
	cJSON_Delete(o);

	assert_int_equal(es_admin_handle(f->db, &f->hooks, "PUT", API "collectorconfigs/x",
					 NULL, "{}", ES_ADMIN_MAX_BODY + 1, "t", &resp), ES_OK);
	assert_int_equal(resp.status, 413);
	free(resp.body);

	assert_int_equal(es_admin_handle(f->db, NULL, "GET", "/healthz", NULL, NULL, 0,
					 "t", &resp), ES_OK);
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.content_type, "text/plain");
	assert_int_equal(resp.body_len, 2);
	assert_memory_equal(resp.body, "ok", 2);
	free(resp.body);
}

static void test_list_delete(void **state)
{
	fx *f = *state;
	cJSON *o, *items;

	cJSON_Delete(req(f, "PUT", API "collectorconfigs/b", NULL, cc_body("b", "{}"), 201));
	cJSON_Delete(req(f, "PUT", API "collectorconfigs/a", NULL, cc_body("a", "{}"), 201));
	o = req(f, "GET", API "collectorconfigs", NULL, NULL, 200);
	assert_string_equal(str_at(o, "apiVersion"), "edgesync.io/v1alpha1");
	assert_string_equal(str_at(o, "kind"), "CollectorConfigList");
	assert_int_equal(num_at(at(o, "metadata"), "resourceVersion"), 2);
	items = (cJSON *)at(o, "items");
	assert_int_equal(cJSON_GetArraySize(items), 2);
	assert_string_equal(es_obj_name(cJSON_GetArrayItem(items, 0)), "a");
	assert_string_equal(es_obj_name(cJSON_GetArrayItem(items, 1)), "b");
	cJSON_Delete(o);
	o = req(f, "GET", API "healthrules", NULL, NULL, 200);
	assert_string_equal(str_at(o, "kind"), "HealthRuleList");
	assert_int_equal(cJSON_GetArraySize(at(o, "items")), 0);
	cJSON_Delete(o);

	o = req(f, "DELETE", API "collectorconfigs/a", NULL, NULL, 200);
	assert_string_equal(es_obj_name(o), "a");
	cJSON_Delete(o);
	assert_int_equal(f->ncalls, 3);
	assert_string_equal(es_obj_name(f->calls[2].prev), "a");
	assert_null(f->calls[2].cur);
	cJSON_Delete(req(f, "GET", API "collectorconfigs/a", NULL, NULL, 404));
	cJSON_Delete(req(f, "DELETE", API "collectorconfigs/a", NULL, NULL, 404));
	assert_int_equal(f->ncalls, 3);
}

static void snapshot(fx *f, int64_t seq, const char *uid, int og, const char *applied)
{
	char buf[1024];
	cJSON *msg;
	int dup = -1, resync = -1;

	snprintf(buf, sizeof(buf),
		 "{\"type\":\"report\",\"seq\":%lld,\"time\":\"2026-01-01T00:00:00Z\","
		 "\"reportType\":\"snapshot\",\"body\":{\"kind\":\"Node\","
		 "\"metadata\":{\"name\":\"n1\"},\"status\":{"
		 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ok\"}],"
		 "\"objects\":[{\"kind\":\"CollectorConfig\",\"name\":\"lab\",\"uid\":\"%s\","
		 "\"generation\":%d,\"observedGeneration\":%d,\"conditions\":[{\"type\":"
		 "\"Applied\",\"status\":\"%s\",\"reason\":\"Applied\"}]},"
		 "{\"kind\":\"CollectorConfig\",\"name\":\"gone\",\"uid\":\"u-gone\","
		 "\"generation\":1,\"observedGeneration\":1,\"conditions\":[]}]}}}",
		 (long long)seq, uid, og, og, applied);
	msg = es_test_json(buf);
	assert_int_equal(es_db_report_store(f->db, "n1", msg, 100, &dup, &resync), ES_OK);
	assert_int_equal(dup, 0);
	cJSON_Delete(msg);
}

static const cJSON *describe_entry(const cJSON *d, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, at(d, "objects"))
		if (strcmp(str_at(e, "name"), name) == 0)
			return e;
	return NULL;
}

static void test_describe(void **state)
{
	fx *f = *state;
	cJSON *labels = es_test_json("{\"site\":\"lab\"}"), *o, *d;
	const cJSON *e;
	char uid[64];

	assert_int_equal(es_db_node_hello(f->db, "n1", labels, "0.1.0", "boot", 100,
					  NULL, NULL), ES_OK);
	cJSON_Delete(labels);
	o = req(f, "PUT", API "collectorconfigs/lab", NULL,
		cc_body("lab", "{\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\"}}}"), 201);
	snprintf(uid, sizeof(uid), "%s", str_at(at(o, "metadata"), "uid"));
	cJSON_Delete(o);
	cJSON_Delete(req(f, "PUT", API "collectorconfigs/elsewhere", NULL,
			 cc_body("elsewhere", "{\"nodeSelector\":{\"matchLabels\":"
				 "{\"site\":\"far\"}}}"), 201));

	d = req(f, "GET", API "nodes/n1/describe", NULL, NULL, 200);
	assert_string_equal(str_at(d, "node"), "n1");
	assert_int_equal(cJSON_GetArraySize(at(d, "objects")), 1);
	e = describe_entry(d, "lab");
	assert_non_null(e);
	assert_string_equal(str_at(e, "uid"), uid);
	assert_true(cJSON_IsNull(at(e, "reported")));
	assert_true(cJSON_IsFalse(at(e, "inSync")));
	assert_int_equal(num_at(at(e, "desired"), "generation"), 1);
	assert_true(cJSON_GetArraySize(at(e, "differences")) > 0);
	assert_true(cJSON_IsObject(at(d, "sync")));
	cJSON_Delete(d);

	snapshot(f, 1, uid, 1, "True");
	d = req(f, "GET", API "nodes/n1/describe", NULL, NULL, 200);
	e = describe_entry(d, "lab");
	assert_true(cJSON_IsTrue(at(e, "inSync")));
	assert_int_equal(cJSON_GetArraySize(at(e, "differences")), 0);
	assert_int_equal(num_at(at(e, "reported"), "observedGeneration"), 1);
	e = describe_entry(d, "gone");
	assert_non_null(e);
	assert_true(cJSON_IsTrue(at(e, "deleted")));
	assert_true(cJSON_IsFalse(at(e, "inSync")));
	assert_true(cJSON_IsNull(at(e, "desired")));
	assert_null(describe_entry(d, "elsewhere"));
	assert_string_equal(str_at(cJSON_GetArrayItem(at(d, "conditions"), 0), "type"), "Ready");
	assert_int_equal(num_at(at(d, "sync"), "stateSeq"), 1);
	cJSON_Delete(d);

	/* A spec change the agent has not observed yet. */
	cJSON_Delete(req(f, "PUT", API "collectorconfigs/lab", NULL,
			 cc_body("lab", "{\"nodeSelector\":{\"matchLabels\":{\"site\":\"lab\"}},"
				 "\"intervalSeconds\":20}"), 200));
	d = req(f, "GET", API "nodes/n1/describe", NULL, NULL, 200);
	e = describe_entry(d, "lab");
	assert_true(cJSON_IsFalse(at(e, "inSync")));
	assert_string_equal(cJSON_GetArrayItem(at(e, "differences"), 0)->valuestring,
			    "observedGeneration 1 != generation 2");
	cJSON_Delete(d);

	/* Observed but not applied. */
	snapshot(f, 2, uid, 2, "False");
	d = req(f, "GET", API "nodes/n1/describe", NULL, NULL, 200);
	e = describe_entry(d, "lab");
	assert_true(cJSON_IsFalse(at(e, "inSync")));
	assert_int_equal(cJSON_GetArraySize(at(e, "differences")), 1);
	assert_non_null(strstr(cJSON_GetArrayItem(at(e, "differences"), 0)->valuestring,
			       "Applied=False"));
	cJSON_Delete(d);

	cJSON_Delete(req(f, "GET", API "nodes/n2/describe", NULL, NULL, 404));
}

static void test_nodes(void **state)
{
	fx *f = *state;
	cJSON *o;

	assert_int_equal(es_db_node_hello(f->db, "n2", NULL, "0.1.0", "b", 100, NULL, NULL), ES_OK);
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "0.1.0", "b", 100, NULL, NULL), ES_OK);
	snapshot(f, 1, "u", 1, "True");
	snapshot(f, 2, "u", 1, "True");
	o = req(f, "GET", API "nodes", NULL, NULL, 200);
	assert_string_equal(str_at(o, "kind"), "NodeList");
	assert_int_equal(cJSON_GetArraySize(at(o, "items")), 2);
	assert_string_equal(es_obj_name(cJSON_GetArrayItem(at(o, "items"), 0)), "n1");
	cJSON_Delete(o);
	o = req(f, "GET", API "nodes/n1", NULL, NULL, 200);
	assert_string_equal(str_at(o, "kind"), "Node");
	assert_true(cJSON_IsTrue(at(at(at(o, "status"), "sync"), "connected")));
	cJSON_Delete(o);
	cJSON_Delete(req(f, "GET", API "nodes/n9", NULL, NULL, 404));
	o = req(f, "GET", API "nodes/n1/reports", "limit=1", NULL, 200);
	assert_string_equal(str_at(o, "node"), "n1");
	assert_int_equal(cJSON_GetArraySize(at(o, "items")), 1);
	assert_int_equal(num_at(cJSON_GetArrayItem(at(o, "items"), 0), "seq"), 2);
	cJSON_Delete(o);
	o = req(f, "GET", API "nodes/n1/reports", NULL, NULL, 200);
	assert_int_equal(cJSON_GetArraySize(at(o, "items")), 2);
	cJSON_Delete(o);
}

/* An object missing from a report the agent shortened (objectsOmitted) is
 * said to be left out, not merely unreported. */
static void test_describe_omitted(void **state)
{
	cJSON *desired = es_test_json(
		"[{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		"\"metadata\":{\"name\":\"a\",\"uid\":\"u\",\"generation\":1},\"spec\":{}}]");
	cJSON *plain = es_test_json("{\"metadata\":{\"name\":\"n1\"},\"status\":"
				    "{\"objects\":[],\"agent\":{}}}");
	cJSON *cut = es_test_json("{\"metadata\":{\"name\":\"n1\"},\"status\":"
				  "{\"objects\":[],\"agent\":{\"objectsOmitted\":7}}}");
	cJSON *d = NULL;
	const cJSON *diff;
	(void)state;

	assert_int_equal(es_admin_describe_build(plain, desired, &d), ES_OK);
	diff = cJSON_GetArrayItem(at(describe_entry(d, "a"), "differences"), 0);
	assert_string_equal(diff->valuestring, "not reported by the agent");
	cJSON_Delete(d);
	assert_int_equal(es_admin_describe_build(cut, desired, &d), ES_OK);
	diff = cJSON_GetArrayItem(at(describe_entry(d, "a"), "differences"), 0);
	assert_non_null(strstr(diff->valuestring, "left 7 objects out"));
	assert_non_null(strstr(diff->valuestring, "objectsOmitted"));
	cJSON_Delete(d);
	cJSON_Delete(desired);
	cJSON_Delete(plain);
	cJSON_Delete(cut);
}

/* A store that answers later: it keeps the callback of the last write. */
typedef struct later {
	es_store_cb cb;
	void *ud;
	int writes;
} later;

static es_err later_put(es_store *s, const cJSON *obj, int create_only,
			es_store_cb cb, void *ud)
{
	later *l = s->impl;

	(void)obj;
	(void)create_only;
	l->cb = cb;
	l->ud = ud;
	l->writes++;
	return ES_OK;
}

static es_err later_del(es_store *s, es_kind kind, const char *name,
			es_store_cb cb, void *ud)
{
	(void)kind;
	(void)name;
	return later_put(s, NULL, 0, cb, ud);
}

static const es_store_ops later_ops = { .name = "later", .put = later_put,
					.del = later_del };

typedef struct answer {
	int n, status;
	char body[512];
	cJSON *json; /* on_done_json's: the whole body parsed */
} answer;

static void on_done_json(void *ud, es_admin_resp *resp)
{
	answer *a = ud;

	a->n++;
	assert_non_null(resp);
	a->status = resp->status;
	a->json = es_test_json(resp->body);
	free(resp->body);
}

static void on_done(void *ud, es_admin_resp *resp)
{
	answer *a = ud;

	a->n++;
	assert_non_null(resp);
	a->status = resp->status;
	snprintf(a->body, sizeof(a->body), "%s", resp->body);
	free(resp->body);
}

/* es_admin_handle_async over a store that answers later: the write leaves
 * the response pending and done gets it; reads answer at once; the
 * synchronous call answers 500 and the late completion goes nowhere. */
static void test_async_store(void **state)
{
	fx *f = *state;
	later l = { 0 };
	es_store st = { .ops = &later_ops, .impl = &l, .db = f->db };
	es_store_result r = { .rc = ES_OK, .error = "" };
	es_admin_resp resp;
	answer a = { 0 };
	const char *body = "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":"
		"\"CollectorConfig\",\"metadata\":{\"name\":\"x\"},"
		"\"spec\":{\"intervalSeconds\":5}}";
	cJSON *obj = es_test_json(body);

	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "PUT",
					       API "collectorconfigs/x", NULL, body,
					       strlen(body), "admin-test", on_done, &a,
					       &resp), ES_OK);
	assert_int_equal(resp.status, 0);
	assert_null(resp.body);
	assert_int_equal(l.writes, 1);
	assert_int_equal(a.n, 0);
	r.object = obj;
	r.created = r.changed = 1;
	l.cb(l.ud, &r);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.status, 201);
	assert_non_null(strstr(a.body, "\"name\":\"x\""));
	/* POST of a name the store says exists */
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "POST",
					       API "collectorconfigs", NULL, body,
					       strlen(body), "admin-test", on_done, &a,
					       &resp), ES_OK);
	assert_int_equal(resp.status, 0);
	r.rc = ES_ERR_EXISTS;
	r.object = NULL;
	l.cb(l.ud, &r);
	assert_int_equal(a.status, 409);
	/* a delete the store cannot reach etcd for */
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "DELETE",
					       API "collectorconfigs/x", NULL, NULL, 0,
					       "admin-test", on_done, &a, &resp), ES_OK);
	r.rc = ES_ERR_IO;
	r.error = "no endpoint answered";
	l.cb(l.ud, &r);
	assert_int_equal(a.n, 3);
	assert_int_equal(a.status, 503);
	assert_non_null(strstr(a.body, "\"reason\":\"ServiceUnavailable\""));
	assert_non_null(strstr(a.body, "delete collectorconfigs \\\"x\\\": the later store is"
			       " unavailable: no endpoint answered"));
	/* a read answers at once */
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET",
					       API "collectorconfigs", NULL, NULL, 0,
					       "admin-test", on_done, &a, &resp), ES_OK);
	assert_int_equal(resp.status, 200);
	free(resp.body);
	/* without done: 500 now, the late answer is dropped */
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "PUT",
					       API "collectorconfigs/x", NULL, body,
					       strlen(body), "admin-test", NULL, NULL,
					       &resp), ES_OK);
	assert_int_equal(resp.status, 500);
	free(resp.body);
	r.rc = ES_OK;
	r.object = obj;
	l.cb(l.ud, &r);
	assert_int_equal(a.n, 3);
	assert_int_equal(f->ncalls, 0); /* the store tells changes, not admin */
	cJSON_Delete(obj);
}

/* The SQLite store: a node whose agent is not connected shows Ready
 * Unknown (NodeStatusUnknown, what it last said in the message) and no
 * controller ids; connected, the agent's word. */
static void test_nodes_ready_unknown(void **state)
{
	fx *f = *state;
	const cJSON *ready, *sync;
	cJSON *o;

	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "0.1.0", "b", 100, NULL, NULL), ES_OK);
	snapshot(f, 1, "u", 1, "True");
	o = req(f, "GET", API "nodes/n1", NULL, NULL, 200);
	ready = cJSON_GetArrayItem(at(at(o, "status"), "conditions"), 0);
	assert_string_equal(str_at(ready, "status"), "True");
	sync = at(at(o, "status"), "sync");
	assert_null(at(sync, "controller"));
	assert_null(at(sync, "stateController"));
	cJSON_Delete(o);
	assert_int_equal(es_db_node_disconnected(f->db, "n1", 200), ES_OK);
	o = req(f, "GET", API "nodes", NULL, NULL, 200);
	ready = cJSON_GetArrayItem(at(at(cJSON_GetArrayItem(at(o, "items"), 0), "status"),
				      "conditions"), 0);
	assert_string_equal(str_at(ready, "status"), "Unknown");
	assert_string_equal(str_at(ready, "reason"), "NodeStatusUnknown");
	assert_non_null(strstr(str_at(ready, "message"), "no controller holds a session"));
	assert_non_null(strstr(str_at(ready, "message"), "last reported Ready=True"));
	/* The time it became Unknown is when the node was last seen, the same
	 * on every read (not the time of the read). */
	assert_string_equal(str_at(ready, "lastTransitionTime"),
			    str_at(at(at(cJSON_GetArrayItem(at(o, "items"), 0), "status"), "sync"),
				   "lastSeen"));
	assert_string_equal(str_at(ready, "lastTransitionTime"), "1970-01-01T00:03:20Z");
	cJSON_Delete(o);
}

/* A store of several controllers (etcd) as a fake: "h/a" is this one; it
 * answers the nodes read later with views. */
typedef struct shared {
	es_store_nodes_cb cb;
	void *ud;
	char asked[64];
	int reads;
} shared;

static es_err shared_read(es_store *s, const char *node, es_store_nodes_cb cb, void *ud)
{
	shared *sh = s->impl;

	sh->cb = cb;
	sh->ud = ud;
	snprintf(sh->asked, sizeof(sh->asked), "%s", node ? node : "(all)");
	sh->reads++;
	return ES_OK;
}

static const es_store_ops shared_ops = { .name = "etcd", .put = later_put,
					 .del = later_del, .nodes_read = shared_read };

static const cJSON *ready_of(const cJSON *node)
{
	return es_cond_find(at(at(node, "status"), "conditions"), "Ready");
}

/* The admin view of nodes with a store shared by controllers: the serving
 * controller from the session, another controller's record where it serves
 * the node, Ready Unknown where none does, nodes this controller never had
 * listed from the store, 503 when the store does not answer. */
static void test_nodes_shared_store(void **state)
{
	fx *f = *state;
	shared sh = { 0 };
	es_store st = { .ops = &shared_ops, .impl = &sh, .db = f->db };
	cJSON *rec = es_test_json("[{\"type\":\"Ready\",\"status\":\"False\","
				  "\"reason\":\"Disk\"}]");
	es_store_node v[3] = {
		{ .node = "n0", .controller = NULL, .writer = "h/b", .conditions = rec,
		  .desired_ack = 7, .last_report = 1000, .stream = "s", .seq = 5 },
		{ .node = "n1", .controller = "h/b", .writer = "h/b", .conditions = rec,
		  .desired_ack = 9, .last_report = 2000, .stream = "s2", .seq = 11 },
		{ .node = "n2", .controller = "h/a", .writer = "h/a", .conditions = rec,
		  .desired_ack = 1, .last_report = 100, .stream = "", .seq = 1 },
	};
	es_store_nodes_result r = { .rc = ES_OK, .error = "", .self = "h/a", .nodes = v,
				    .n = 3 };
	es_admin_resp resp;
	answer a = { 0 };
	const cJSON *items, *n, *sync;
	cJSON *o;

	/* n1 and n2 have rows here (n1 reported Ready=True here before h/b
	 * took it); n0 was only ever served elsewhere. */
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "0.1.0", "b", 100, NULL, NULL), ES_OK);
	snapshot(f, 1, "u", 1, "True");
	assert_int_equal(es_db_node_disconnected(f->db, "n1", 150), ES_OK);
	assert_int_equal(es_db_node_hello(f->db, "n2", NULL, "0.1.0", "b", 100, NULL, NULL), ES_OK);
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET", API "nodes",
					       NULL, NULL, 0, "admin-test", on_done_json, &a,
					       &resp), ES_OK);
	assert_int_equal(resp.status, 0);
	assert_string_equal(sh.asked, "(all)");
	sh.cb(sh.ud, &r);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.status, 200);
	cJSON_Delete(a.json);
	a.json = NULL;

	/* one node at a time */
	{
		static const char *const names[] = { "n0", "n1", "n2" };

		for (int i = 0; i < 3; i++) {
			char path[64];
			es_store_nodes_result one = r;

			snprintf(path, sizeof(path), API "nodes/%s", names[i]);
			one.nodes = &v[i];
			one.n = 1;
			a.n = 0;
			assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET", path,
							       NULL, NULL, 0, "admin-test",
							       on_done_json, &a, &resp), ES_OK);
			assert_int_equal(resp.status, 0);
			assert_string_equal(sh.asked, names[i]);
			sh.cb(sh.ud, &one);
			assert_int_equal(a.status, 200);
			o = a.json;
			a.json = NULL;
			sync = at(at(o, "status"), "sync");
			if (i == 0) {
				/* no row here, no session: the record, Ready Unknown */
				assert_string_equal(str_at(ready_of(o), "status"), "Unknown");
				assert_string_equal(str_at(ready_of(o), "reason"),
						    "NodeStatusUnknown");
				assert_non_null(strstr(str_at(ready_of(o), "message"),
						       "last reported Ready=False"));
				assert_null(at(sync, "controller"));
				assert_null(at(sync, "stateController"));
				assert_string_equal(str_at(sync, "recordController"), "h/b");
				assert_int_equal(num_at(sync, "desiredResourceVersion"), 7);
				assert_int_equal(num_at(sync, "ackedSeq"), 5);
			} else if (i == 1) {
				/* served by h/b: its record's conditions, not this row's */
				assert_string_equal(str_at(sync, "controller"), "h/b");
				assert_string_equal(str_at(sync, "stateController"), "h/a");
				assert_string_equal(str_at(sync, "recordController"), "h/b");
				assert_string_equal(str_at(ready_of(o), "status"), "False");
				assert_string_equal(str_at(ready_of(o), "reason"), "Disk");
				assert_int_equal(num_at(sync, "desiredResourceVersion"), 9);
				assert_string_equal(str_at(sync, "streamId"), "s2");
				assert_true(cJSON_IsFalse(at(sync, "connected")));
			} else {
				/* served here: this row as it is */
				assert_string_equal(str_at(sync, "controller"), "h/a");
				assert_string_equal(str_at(sync, "stateController"), "h/a");
				assert_null(at(sync, "recordController"));
				assert_null(ready_of(o));
			}
			cJSON_Delete(o);
		}
	}

	/* the list: every node of either, in order, merged as one by one */
	a.n = 0;
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET", API "nodes",
					       NULL, NULL, 0, "admin-test", on_done_json, &a,
					       &resp), ES_OK);
	sh.cb(sh.ud, &r);
	o = a.json;
	a.json = NULL;
	items = at(o, "items");
	assert_int_equal(cJSON_GetArraySize(items), 3);
	n = cJSON_GetArrayItem(items, 0);
	assert_string_equal(es_obj_name(n), "n0");
	assert_string_equal(str_at(ready_of(n), "status"), "Unknown");
	n = cJSON_GetArrayItem(items, 1);
	assert_string_equal(str_at(at(at(n, "status"), "sync"), "controller"), "h/b");
	assert_string_equal(str_at(ready_of(n), "status"), "False");
	assert_string_equal(es_obj_name(cJSON_GetArrayItem(items, 2)), "n2");
	cJSON_Delete(o);

	/* describe of a node another controller serves: every object */
	cJSON_Delete(req(f, "PUT", API "collectorconfigs/all", NULL,
			 cc_body("all", "{\"intervalSeconds\":10}"), 201));
	a.n = 0;
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET",
					       API "nodes/n1/describe", NULL, NULL, 0,
					       "admin-test", on_done_json, &a, &resp), ES_OK);
	r.nodes = &v[1];
	r.n = 1;
	sh.cb(sh.ud, &r);
	o = a.json;
	a.json = NULL;
	assert_string_equal(str_at(at(o, "sync"), "controller"), "h/b");
	assert_string_equal(str_at(cJSON_GetArrayItem(at(o, "conditions"), 0), "status"),
			    "False");
	assert_int_equal(cJSON_GetArraySize(at(o, "objects")), 3); /* all; lab, gone reported */
	cJSON_Delete(o);
	/* ... and of one this controller has no rows of: no objects (its
	 * labels and report are not known here), the record's conditions */
	a.n = 0;
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET",
					       API "nodes/n0/describe", NULL, NULL, 0,
					       "admin-test", on_done_json, &a, &resp), ES_OK);
	r.nodes = &v[0];
	sh.cb(sh.ud, &r);
	o = a.json;
	a.json = NULL;
	assert_int_equal(a.status, 200);
	assert_int_equal(cJSON_GetArraySize(at(o, "objects")), 0);
	assert_string_equal(str_at(cJSON_GetArrayItem(at(o, "conditions"), 0), "status"),
			    "Unknown");
	cJSON_Delete(o);

	/* a node neither knows */
	a.n = 0;
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET", API "nodes/n9",
					       NULL, NULL, 0, "admin-test", on_done, &a,
					       &resp), ES_OK);
	r.n = 0;
	sh.cb(sh.ud, &r);
	assert_int_equal(a.status, 404);

	/* the store does not answer */
	a.n = 0;
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET", API "nodes/n1",
					       NULL, NULL, 0, "admin-test", on_done, &a,
					       &resp), ES_OK);
	r.rc = ES_ERR_IO;
	r.error = "no endpoint answered";
	sh.cb(sh.ud, &r);
	assert_int_equal(a.status, 503);
	assert_non_null(strstr(a.body, "\"reason\":\"ServiceUnavailable\""));
	assert_non_null(strstr(a.body, "get nodes \\\"n1\\\": the etcd store is unavailable:"
			       " no endpoint answered"));
	a.n = 0;
	assert_int_equal(es_admin_handle_async(f->db, &st, &f->hooks, "GET", API "nodes",
					       NULL, NULL, 0, "admin-test", on_done, &a,
					       &resp), ES_OK);
	sh.cb(sh.ud, &r);
	assert_int_equal(a.status, 503);
	assert_non_null(strstr(a.body, "list nodes: the etcd store is unavailable"));
	cJSON_Delete(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_semantics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_describe, setup, teardown),
		cmocka_unit_test(test_describe_omitted),
		cmocka_unit_test_setup_teardown(test_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_ready_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_shared_store, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
