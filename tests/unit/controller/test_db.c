/*
 * test_db.c - the controller store (controller/store/db.h): generation and
 * resourceVersion rules, tombstones and the change feed, node hello, report
 * cursor with duplicates, snapshot + merge patch state, reopen, refusal of
 * newer or foreign files; batches (many reports from several nodes in one
 * commit, invisible to other readers until then; a write outside the batch
 * commits it first), the history bounded by count and by bytes without
 * losing the state, and the state rebuilt from the stored reports after a
 * crash (a copy of the files taken while the store was open).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/db.h"
#include "es_json.h"
#include "testutil.h"
#include "db_sqlutil.h"

typedef db_fx fx;

static int setup(void **state)
{
	return db_fx_open(state, "test-db");
}

static int teardown(void **state)
{
	return db_fx_close(state);
}

static cJSON *cc(const char *name, int interval, const char *labels)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		 "\"metadata\":{\"name\":\"%s\",\"labels\":%s},"
		 "\"spec\":{\"intervalSeconds\":%d}}", name, labels, interval);
	return es_test_json(buf);
}

static void put(es_db *db, cJSON *take, cJSON **stored, int *created, int *changed)
{
	assert_int_equal(es_db_object_put(db, take, stored, NULL, created, changed), ES_OK);
	cJSON_Delete(take);
}

static int64_t current_rv(es_db *db)
{
	int64_t cur = -1, comp = -1;

	assert_int_equal(es_db_rv(db, &cur, &comp), ES_OK);
	return cur;
}

static void test_put_rules(void **state)
{
	fx *f = *state;
	cJSON *s1 = NULL, *s = NULL, *prev = NULL, *o;
	int created = -1, changed = -1;
	char uid[64];

	assert_int_equal(current_rv(f->db), 0);
	put(f->db, cc("a", 10, "{}"), &s1, &created, &changed);
	assert_int_equal(created, 1);
	assert_int_equal(changed, 1);
	assert_int_equal(es_obj_generation(s1), 1);
	assert_int_equal(es_obj_resource_version(s1), 1);
	assert_non_null(es_obj_uid(s1));
	assert_int_equal(strlen(es_obj_uid(s1)), 36);
	snprintf(uid, sizeof(uid), "%s", es_obj_uid(s1));
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(s1, "metadata"),
					    "creationTimestamp"));

	/* Same object again: nothing written. */
	put(f->db, cc("a", 10, "{}"), &s, &created, &changed);
	assert_int_equal(created, 0);
	assert_int_equal(changed, 0);
	assert_int_equal(es_obj_resource_version(s), 1);
	assert_int_equal(current_rv(f->db), 1);
	cJSON_Delete(s);

	/* Labels only: new resourceVersion, same generation and uid. */
	put(f->db, cc("a", 10, "{\"x\":\"1\"}"), &s, &created, &changed);
	assert_int_equal(changed, 1);
	assert_int_equal(es_obj_generation(s), 1);
	assert_int_equal(es_obj_resource_version(s), 2);
	assert_string_equal(es_obj_uid(s), uid);
	cJSON_Delete(s);

	/* Spec change: generation 2, uid and creationTimestamp kept. */
	o = cc("a", 20, "{\"x\":\"1\"}");
	assert_int_equal(es_db_object_put(f->db, o, &s, &prev, &created, &changed), ES_OK);
	cJSON_Delete(o);
	assert_int_equal(created, 0);
	assert_int_equal(changed, 1);
	assert_int_equal(es_obj_generation(s), 2);
	assert_int_equal(es_obj_resource_version(s), 3);
	assert_string_equal(es_obj_uid(s), uid);
	assert_int_equal(es_obj_generation(prev), 1);
	assert_true(cJSON_Compare(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metadata"), "creationTimestamp"),
				  cJSON_GetObjectItem(cJSON_GetObjectItem(s1, "metadata"), "creationTimestamp"), 1));
	cJSON_Delete(s);
	cJSON_Delete(prev);

	/* Stored copy equals what get returns. */
	assert_int_equal(es_db_object_get(f->db, ES_KIND_COLLECTOR_CONFIG, "a", &o), ES_OK);
	assert_int_equal(es_obj_generation(o), 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"),
					     "intervalSeconds")->valueint, 20);
	cJSON_Delete(o);
	assert_int_equal(es_db_object_get(f->db, ES_KIND_HEALTH_RULE, "a", &o), ES_ERR_NOTFOUND);
	assert_null(o);
	cJSON_Delete(s1);
}

static const char *member_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_delete_changes_compact(void **state)
{
	fx *f = *state;
	cJSON *s = NULL, *objs = NULL, *tombs = NULL, *del = NULL, *list = NULL;
	int64_t cur, comp;
	char uid_a[64];

	put(f->db, cc("a", 10, "{}"), &s, NULL, NULL);
	snprintf(uid_a, sizeof(uid_a), "%s", es_obj_uid(s));
	cJSON_Delete(s);
	put(f->db, cc("b", 10, "{}"), NULL, NULL, NULL);
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", &del), ES_OK);
	assert_string_equal(es_obj_name(del), "a");
	cJSON_Delete(del);
	assert_int_equal(current_rv(f->db), 3);
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", NULL),
			 ES_ERR_NOTFOUND);
	assert_int_equal(current_rv(f->db), 3);

	assert_int_equal(es_db_object_list(f->db, ES_KIND_UNKNOWN, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 1);
	assert_string_equal(es_obj_name(cJSON_GetArrayItem(list, 0)), "b");
	cJSON_Delete(list);

	assert_int_equal(es_db_changes_since(f->db, 0, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(objs), 1);
	assert_string_equal(es_obj_name(cJSON_GetArrayItem(objs, 0)), "b");
	assert_int_equal(cJSON_GetArraySize(tombs), 1);
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 0), "kind"), "CollectorConfig");
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 0), "name"), "a");
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 0), "uid"), uid_a);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(tombs, 0),
					     "resourceVersion")->valuedouble, 3);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);

	assert_int_equal(es_db_changes_since(f->db, 2, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(objs), 0);
	assert_int_equal(cJSON_GetArraySize(tombs), 1);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);
	assert_int_equal(es_db_changes_since(f->db, 3, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(objs), 0);
	assert_int_equal(cJSON_GetArraySize(tombs), 0);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);

	assert_int_equal(es_db_compact(f->db, 3), ES_OK);
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(cur, 3);
	assert_int_equal(comp, 3);
	assert_int_equal(es_db_changes_since(f->db, 0, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(tombs), 0);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);
	/* The compaction point never moves back. */
	assert_int_equal(es_db_compact(f->db, 1), ES_OK);
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(comp, 3);
}

/* Deletion records are bounded: past the bound the oldest go and the
 * compaction point moves past them. */
static void test_tombstones_bounded(void **state)
{
	fx *f = *state;
	cJSON *objs = NULL, *tombs = NULL;
	int64_t cur = 0, comp = 0;

	es_db_set_tombstones_kept(f->db, 1);
	put(f->db, cc("a", 10, "{}"), NULL, NULL, NULL); /* rv 1 */
	put(f->db, cc("b", 10, "{}"), NULL, NULL, NULL); /* rv 2 */
	put(f->db, cc("c", 10, "{}"), NULL, NULL, NULL); /* rv 3 */
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", NULL), ES_OK); /* rv 4 */
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(comp, 0);
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "b", NULL), ES_OK); /* rv 5 */
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(cur, 5);
	assert_int_equal(comp, 4);
	assert_int_equal(es_db_changes_since(f->db, 4, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(tombs), 1);
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 0), "name"), "b");
	cJSON_Delete(objs);
	cJSON_Delete(tombs);
}

/* A re-created object does not replace the deletion record of the one
 * before it: an agent that still holds the first object learns of its
 * deletion, also when the new one does not target it. */
static void test_recreate_keeps_tombstone(void **state)
{
	fx *f = *state;
	cJSON *s = NULL, *objs = NULL, *tombs = NULL;
	char uid1[64], uid2[64];

	put(f->db, cc("a", 10, "{}"), &s, NULL, NULL);
	snprintf(uid1, sizeof(uid1), "%s", es_obj_uid(s));
	cJSON_Delete(s);
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", NULL), ES_OK);
	put(f->db, cc("a", 10, "{}"), &s, NULL, NULL);
	assert_string_not_equal(es_obj_uid(s), uid1);
	assert_int_equal(es_obj_generation(s), 1);
	assert_int_equal(es_obj_resource_version(s), 3);
	snprintf(uid2, sizeof(uid2), "%s", es_obj_uid(s));
	cJSON_Delete(s);
	assert_int_equal(es_db_changes_since(f->db, 0, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(objs), 1);
	assert_int_equal(cJSON_GetArraySize(tombs), 1);
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 0), "uid"), uid1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(tombs, 0),
					     "resourceVersion")->valuedouble, 2);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);
	/* Deleted and re-created again: one record per uid. */
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", NULL), ES_OK);
	put(f->db, cc("a", 10, "{}"), NULL, NULL, NULL);
	assert_int_equal(es_db_changes_since(f->db, 0, &objs, &tombs), ES_OK);
	assert_int_equal(cJSON_GetArraySize(tombs), 2);
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 0), "uid"), uid1);
	assert_string_equal(member_str(cJSON_GetArrayItem(tombs, 1), "uid"), uid2);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);
}

static void test_node_hello(void **state)
{
	fx *f = *state;
	cJSON *l1 = es_test_json("{\"site\":\"lab\"}"), *l2 = es_test_json("{\"site\":\"edge\"}"), *n = NULL;
	int64_t acked = -1;
	int changed = -1;

	assert_int_equal(es_db_node_hello(f->db, "n1", l1, "0.1.0", "boot-1", 1000,
					  &acked, &changed), ES_OK);
	assert_int_equal(acked, 0);
	assert_int_equal(changed, 1);
	/* The full list owed to a new node stays owed until acknowledged. */
	assert_int_equal(es_db_node_hello(f->db, "n1", l1, "0.1.0", "boot-2", 1001,
					  &acked, &changed), ES_OK);
	assert_int_equal(changed, 1);
	assert_int_equal(es_db_node_full_done(f->db, "n1", 1001), ES_OK);
	assert_int_equal(es_db_node_hello(f->db, "n1", l1, "0.1.0", "boot-2", 1001,
					  &acked, &changed), ES_OK);
	assert_int_equal(changed, 0);
	assert_int_equal(es_db_node_hello(f->db, "n1", l2, "0.1.0", "boot-2", 1002,
					  &acked, &changed), ES_OK);
	assert_int_equal(changed, 1);
	/* A connection lost before the full list was acknowledged: the next
	 * hello, with the same new labels, still gets one. */
	assert_int_equal(es_db_node_hello(f->db, "n1", l2, "0.1.0", "boot-2", 1002,
					  &acked, &changed), ES_OK);
	assert_int_equal(changed, 1);
	assert_int_equal(es_db_node_full_done(f->db, "nope", 1002), ES_ERR_NOTFOUND);
	assert_int_equal(es_db_node_desired_ack(f->db, "n1", 7, 1003), ES_OK);
	assert_int_equal(es_db_node_disconnected(f->db, "n1", 1004), ES_OK);
	assert_int_equal(es_db_node_disconnected(f->db, "nope", 1004), ES_ERR_NOTFOUND);

	assert_int_equal(es_db_node_get(f->db, "n1", &n), ES_OK);
	assert_string_equal(member_str(n, "kind"), "Node");
	assert_true(cJSON_Compare(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "metadata"), "labels"),
				  l2, 1));
	cJSON *sync = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "sync");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(sync, "connected")));
	assert_int_equal(cJSON_GetObjectItem(sync, "desiredResourceVersion")->valuedouble, 7);
	assert_string_equal(member_str(sync, "bootId"), "boot-2");
	assert_string_equal(member_str(sync, "lastSeen"), "1970-01-01T00:16:44Z");
	cJSON_Delete(n);
	assert_int_equal(es_db_node_get(f->db, "nope", &n), ES_ERR_NOTFOUND);

	/* A restart after a crash: the rows of nodes still connected go to
	 * disconnected, keeping lastSeen; the others are not touched. */
	{
		int64_t reset = -1;

		assert_int_equal(es_db_node_hello(f->db, "n1", l2, "0.1.0", "boot-2", 1005,
						  NULL, NULL), ES_OK);
		assert_int_equal(es_db_node_hello(f->db, "n2", l2, "0.1.0", "boot-9", 1006,
						  NULL, NULL), ES_OK);
		assert_int_equal(es_db_node_disconnected(f->db, "n2", 1007), ES_OK);
		assert_int_equal(es_db_nodes_reset_connected(f->db, &reset), ES_OK);
		assert_int_equal(reset, 1);
		assert_int_equal(es_db_node_get(f->db, "n1", &n), ES_OK);
		sync = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "sync");
		assert_true(cJSON_IsFalse(cJSON_GetObjectItem(sync, "connected")));
		assert_string_equal(member_str(sync, "lastSeen"), "1970-01-01T00:16:45Z");
		cJSON_Delete(n);
		assert_int_equal(es_db_nodes_reset_connected(f->db, &reset), ES_OK);
		assert_int_equal(reset, 0);
	}
	cJSON_Delete(l1);
	cJSON_Delete(l2);
}

static cJSON *report(int64_t seq, const char *type, int64_t base, const char *body)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "{\"type\":\"report\",\"seq\":%lld,"
		 "\"time\":\"2026-01-01T00:00:00Z\",\"reportType\":\"%s\","
		 "\"baseSeq\":%lld,\"body\":%s}", (long long)seq, type,
		 (long long)base, body);
	return es_test_json(buf);
}

static void store(es_db *db, cJSON *take, int want_dup, int want_resync)
{
	int dup = -1, resync = -1;

	assert_int_equal(es_db_report_store(db, "n1", take, 2000, &dup, &resync), ES_OK);
	assert_int_equal(dup, want_dup);
	assert_int_equal(resync, want_resync);
	cJSON_Delete(take);
}

static cJSON *node_status(es_db *db)
{
	cJSON *n = NULL, *st;

	assert_int_equal(es_db_node_get(db, "n1", &n), ES_OK);
	st = cJSON_DetachItemFromObject(n, "status");
	cJSON_Delete(n);
	cJSON_DeleteItemFromObject(st, "sync");
	return st;
}

#define SNAP "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":" \
	"{\"capacity\":{\"cpu\":4},\"usage\":{\"load\":{\"load1\":0.5,\"load5\":0.25}}}}"

static void test_reports(void **state)
{
	fx *f = *state;
	cJSON *st, *want, *list = NULL, *n = NULL;
	int64_t acked = -1;
	int dup = -1, resync = -1;

	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	st = report(1, "snapshot", 0, SNAP);
	assert_int_equal(es_db_report_store(f->db, "n2", st, 2000, &dup, &resync), ES_ERR_NOTFOUND);
	cJSON_Delete(st);

	store(f->db, report(1, "snapshot", 0, SNAP), 0, 0);
	store(f->db, report(1, "snapshot", 0, SNAP), 1, 0);
	st = node_status(f->db);
	want = es_test_json("{\"capacity\":{\"cpu\":4},\"usage\":{\"load\":{\"load1\":0.5,\"load5\":0.25}}}");
	assert_true(cJSON_Compare(st, want, 1));
	cJSON_Delete(st);
	cJSON_Delete(want);

	store(f->db, report(2, "patch", 1, "{\"status\":{\"usage\":{\"load\":"
			    "{\"load1\":1.5,\"load5\":null}}}}"), 0, 0);
	want = es_test_json("{\"capacity\":{\"cpu\":4},\"usage\":{\"load\":{\"load1\":1.5}}}");
	st = node_status(f->db);
	assert_true(cJSON_Compare(st, want, 1));
	cJSON_Delete(st);

	/* Wrong base: stored and acknowledged, not applied, resync asked. */
	store(f->db, report(3, "patch", 1, "{\"status\":{\"capacity\":null}}"), 0, 1);
	st = node_status(f->db);
	assert_true(cJSON_Compare(st, want, 1));
	cJSON_Delete(st);
	cJSON_Delete(want);

	store(f->db, report(4, "event", 0, "{\"type\":\"Normal\",\"reason\":\"Applied\","
			    "\"message\":\"ok\",\"time\":\"2026-01-01T00:00:00Z\","
			    "\"involvedObject\":{\"kind\":\"CollectorConfig\",\"name\":\"a\","
			    "\"uid\":\"u\"}}"), 0, 0);
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	assert_int_equal(acked, 4);

	assert_int_equal(es_db_node_get(f->db, "n1", &n), ES_OK);
	cJSON *sync = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "sync");
	assert_int_equal(cJSON_GetObjectItem(sync, "ackedSeq")->valuedouble, 4);
	assert_int_equal(cJSON_GetObjectItem(sync, "stateSeq")->valuedouble, 2);
	cJSON_Delete(n);

	assert_int_equal(es_db_reports_list(f->db, "n1", 0, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, i), "seq")->valuedouble,
				 i + 1);
	assert_string_equal(member_str(cJSON_GetArrayItem(list, 1), "reportType"), "patch");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "baseSeq")->valuedouble, 1);
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "baseSeq"));
	assert_string_equal(member_str(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 3), "event"),
				       "reason"), "Applied");
	cJSON_Delete(list);
	assert_int_equal(es_db_reports_list(f->db, "n1", 2, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "seq")->valuedouble, 3);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "seq")->valuedouble, 4);
	cJSON_Delete(list);
	assert_int_equal(es_db_reports_list(f->db, "nope", 2, &list), ES_ERR_NOTFOUND);

	/* Reports older than the last ES_DB_REPORTS_KEPT seqs are pruned; the
	 * cursor stays. */
	store(f->db, report(3 + ES_DB_REPORTS_KEPT, "event", 0, "{}"), 0, 0);
	assert_int_equal(es_db_reports_list(f->db, "n1", 0, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "seq")->valuedouble, 4);
	cJSON_Delete(list);
	st = node_status(f->db);
	assert_non_null(cJSON_GetObjectItem(st, "capacity"));
	cJSON_Delete(st);

	/* A patch before any snapshot cannot be applied. */
	assert_int_equal(es_db_node_hello(f->db, "n3", NULL, "v", "b", 1000, NULL, NULL), ES_OK);
	st = report(1, "patch", 0, "{\"status\":{}}");
	assert_int_equal(es_db_report_store(f->db, "n3", st, 2000, &dup, &resync), ES_OK);
	assert_int_equal(resync, 1);
	cJSON_Delete(st);
}

/* A report number past 2^53 written with a fraction (I-JSON takes it) is
 * stored so that the node reads back (found by tests/fuzz/fuzz_report:
 * the stored text held the integer literal 9007199254740994, which
 * es_json_parse refuses, and es_db_node_get failed from then on). */
static void test_report_large_number(void **state)
{
	fx *f = *state;
	cJSON *st;
	int64_t acked = -1;

	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	store(f->db, report(1, "snapshot", 0, "{\"status\":{\"x\":9007199254740993.5}}"), 0, 0);
	st = node_status(f->db);
	assert_true(cJSON_GetObjectItemCaseSensitive(st, "x")->valuedouble == 9007199254740994.0);
	cJSON_Delete(st);
	store(f->db, report(2, "patch", 1, "{\"status\":{\"y\":1.5e300}}"), 0, 0);
	st = node_status(f->db);
	assert_true(cJSON_GetObjectItemCaseSensitive(st, "x")->valuedouble == 9007199254740994.0);
	assert_true(cJSON_GetObjectItemCaseSensitive(st, "y")->valuedouble == 1.5e300);
	cJSON_Delete(st);
}

static void test_reopen(void **state)
{
	fx *f = *state;
	cJSON *o = NULL, *list = NULL;
	char err[256];
	int64_t acked = 0;

	put(f->db, cc("a", 10, "{}"), NULL, NULL, NULL);
	put(f->db, cc("b", 10, "{}"), NULL, NULL, NULL);
	assert_int_equal(es_db_object_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "b", NULL), ES_OK);
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, NULL, NULL), ES_OK);
	store(f->db, report(5, "snapshot", 0, SNAP), 0, 0);
	es_db_close(f->db);
	f->db = NULL;

	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	assert_int_equal(current_rv(f->db), 3);
	assert_int_equal(es_db_object_get(f->db, ES_KIND_COLLECTOR_CONFIG, "a", &o), ES_OK);
	assert_int_equal(es_obj_resource_version(o), 1);
	cJSON_Delete(o);
	assert_int_equal(es_db_changes_since(f->db, 1, &o, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 1);
	cJSON_Delete(o);
	cJSON_Delete(list);
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	assert_int_equal(acked, 5);
	assert_int_equal(es_db_reports_list(f->db, "n1", 10, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 1);
	cJSON_Delete(list);
}

static void assert_refused_untouched(const char *path, es_err want, const char *needle)
{
	char err[256] = "";
	size_t n = 0;
	char *before = es_test_slurp(path, &n);
	es_db *db = NULL;

	assert_int_equal(es_db_open(path, &db, err, sizeof(err)), want);
	assert_null(db);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, needle));
	es_test_assert_file_bytes(path, before, n);
	free(before);
}

static void test_refuse_newer_and_foreign(void **state)
{
	fx *f = *state;
	char path[160];
	FILE *fp;

	put(f->db, cc("a", 10, "{}"), NULL, NULL, NULL);
	es_db_close(f->db);
	f->db = NULL;
	exec_sql(f->path, "PRAGMA user_version = 99");
	assert_refused_untouched(f->path, ES_ERR_UNSUPPORTED, "newer");

	snprintf(path, sizeof(path), "%s/garbage.db", f->dir);
	fp = fopen(path, "wb");
	assert_non_null(fp);
	for (int i = 0; i < 300; i++)
		fputs("not a database ", fp);
	fclose(fp);
	assert_refused_untouched(path, ES_ERR_DB, "not an SQLite database");

	snprintf(path, sizeof(path), "%s/foreign.db", f->dir);
	exec_sql(path, "CREATE TABLE t (x); INSERT INTO t VALUES (1)");
	assert_refused_untouched(path, ES_ERR_DB, "not an edgesync");
}

static int64_t stream(es_db *db, const char *node, const char *id, int64_t next,
		      int want_new, const char *want_prev)
{
	int64_t acked = -1;
	int fresh = -1;
	char prev[80] = "?";

	assert_int_equal(es_db_node_stream(db, node, id, next, &acked, &fresh, prev,
					   sizeof(prev)), ES_OK);
	assert_int_equal(fresh, want_new);
	assert_string_equal(prev, want_prev);
	return acked;
}

/* The seqs and stream ids of n1's reports, "1 2 3/s1 ...". */
static void report_seqs(es_db *db, char *buf, size_t sz)
{
	cJSON *list = NULL;
	const cJSON *r;
	size_t n = 0;

	buf[0] = '\0';
	assert_int_equal(es_db_reports_list(db, "n1", 0, &list), ES_OK);
	cJSON_ArrayForEach(r, list) {
		const cJSON *s = cJSON_GetObjectItem(r, "streamId");

		n += (size_t)snprintf(buf + n, sz - n, "%s%.0f%s%s", n ? " " : "",
				      cJSON_GetObjectItem(r, "seq")->valuedouble,
				      s ? "/" : "", s ? s->valuestring : "");
	}
	cJSON_Delete(list);
}

#define EVENT "{\"type\":\"Normal\",\"reason\":\"R\",\"message\":\"m\"," \
	"\"time\":\"2026-01-01T00:00:00Z\",\"involvedObject\":{\"kind\":\"Node\"," \
	"\"name\":\"n1\"}}"

/* Report streams (PROTOCOL.md, "hello"): the first stream id of a node
 * takes over its cursor; another one starts a new cursor, and duplicates
 * are dropped per stream. */
static void test_report_streams(void **state)
{
	fx *f = *state;
	char seqs[256];
	int64_t acked = -1;
	cJSON *n = NULL;

	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	for (int i = 1; i <= 3; i++)
		store(f->db, report(i, "event", 0, EVENT), 0, 0);
	assert_int_equal(stream(f->db, "n1", "s1", 4, 0, ""), 3);
	store(f->db, report(3, "event", 0, EVENT), 1, 0);
	store(f->db, report(4, "event", 0, EVENT), 0, 0);
	report_seqs(f->db, seqs, sizeof(seqs));
	assert_string_equal(seqs, "1/s1 2/s1 3/s1 4/s1");
	assert_int_equal(stream(f->db, "n1", "s1", 5, 0, "s1"), 4);

	/* The database made anew: from 0, the history kept. */
	assert_int_equal(stream(f->db, "n1", "s2", 1, 1, "s1"), 0);
	store(f->db, report(1, "event", 0, EVENT), 0, 0);
	store(f->db, report(1, "event", 0, EVENT), 1, 0);
	store(f->db, report(2, "snapshot", 0, SNAP), 0, 0);
	report_seqs(f->db, seqs, sizeof(seqs));
	assert_string_equal(seqs, "1/s1 2/s1 3/s1 4/s1 1/s2 2/s2");
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	assert_int_equal(acked, 2);
	assert_int_equal(es_db_node_get(f->db, "n1", &n), ES_OK);
	{
		cJSON *sync = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "sync");

		assert_string_equal(member_str(sync, "streamId"), "s2");
		assert_int_equal(cJSON_GetObjectItem(sync, "stateSeq")->valuedouble, 2);
	}
	cJSON_Delete(n);
	/* Another stream, however far its sequence numbers. */
	assert_int_equal(stream(f->db, "n1", "s3", 100, 1, "s2"), 0);

	/* A first stream id from an agent that made fewer reports than are
	 * stored cannot be the same reports. */
	assert_int_equal(es_db_node_hello(f->db, "n2", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	{
		cJSON *r = report(1, "event", 0, EVENT);

		assert_int_equal(es_db_report_store(f->db, "n2", r, 2000, NULL, NULL), ES_OK);
		cJSON_Delete(r);
	}
	assert_int_equal(stream(f->db, "n2", "x", 1, 1, ""), 0);
	assert_int_equal(es_db_node_stream(f->db, "nope", "x", 1, &acked, NULL, NULL, 0),
			 ES_ERR_NOTFOUND);
	assert_int_equal(es_db_node_stream(f->db, "n1", "", 1, &acked, NULL, NULL, 0),
			 ES_ERR_INVAL);
}

/* A store of schema version 2 (one report cursor per node) migrates with
 * its reports and cursor. */
static void test_migrate_from_v2(void **state)
{
	fx *f = *state;
	char err[256], seqs[128], *sql;
	int64_t acked = -1;

	es_db_close(f->db);
	f->db = NULL;
	assert_int_equal(unlink(f->path), 0);
	sql = es_test_slurp(ES_FIXTURES "/db/controller-v2.sql", NULL);
	exec_sql(f->path, sql);
	free(sql);
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	report_seqs(f->db, seqs, sizeof(seqs));
	assert_string_equal(seqs, "7 8");
	assert_int_equal(es_db_node_hello(f->db, "n1", NULL, "v", "b", 1000, &acked, NULL), ES_OK);
	assert_int_equal(acked, 8);
	store(f->db, report(8, "event", 0, EVENT), 1, 0);
	store(f->db, report(9, "event", 0, EVENT), 0, 0);
	report_seqs(f->db, seqs, sizeof(seqs));
	assert_string_equal(seqs, "7 8 9");
}

/* ---- batches, history bounds, replay after a crash ---- */

static void put_report(es_db *db, const char *node, int64_t seq, const char *type,
		       int64_t base, const char *body, int want_dup, int want_resync)
{
	char buf[2048];
	cJSON *m;
	int dup = -1, resync = -1;

	assert_true((size_t)snprintf(buf, sizeof(buf), "{\"type\":\"report\",\"seq\":%lld,"
				     "\"time\":\"2026-01-01T00:00:00Z\",\"reportType\":\"%s\","
				     "\"baseSeq\":%lld,\"body\":%s}", (long long)seq, type,
				     (long long)base, body) < sizeof(buf));
	m = es_test_json(buf);
	assert_int_equal(es_db_report_store(db, node, m, 2000, &dup, &resync), ES_OK);
	assert_int_equal(dup, want_dup);
	assert_int_equal(resync, want_resync);
	cJSON_Delete(m);
}

static void snapshot(es_db *db, const char *node, int64_t seq, int counter)
{
	char body[256];

	snprintf(body, sizeof(body), "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
		 "\"status\":{\"capacity\":{\"cpu\":4},\"usage\":{\"n\":%d}}}", node,
		 counter);
	put_report(db, node, seq, "snapshot", 0, body, 0, 0);
}

static void patch(es_db *db, const char *node, int64_t seq, int counter)
{
	char body[128];

	snprintf(body, sizeof(body), "{\"status\":{\"usage\":{\"n\":%d}}}", counter);
	put_report(db, node, seq, "patch", seq - 1, body, 0, 0);
}

/* status.usage.n of the node as the admin view shows it; -1 when absent. */
static int usage_n(es_db *db, const char *node)
{
	cJSON *n = NULL, *v;
	int out;

	assert_int_equal(es_db_node_get(db, node, &n), ES_OK);
	v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"),
						    "usage"), "n");
	out = cJSON_IsNumber(v) ? v->valueint : -1;
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "capacity"));
	cJSON_Delete(n);
	return out;
}

/* One integer from SQL run on a connection of its own (what another reader
 * of the file sees: committed data only). */
static void hello(es_db *db, const char *node)
{
	assert_int_equal(es_db_node_hello(db, node, NULL, "v", "b", 1000, NULL, NULL), ES_OK);
}

static void test_group_commit(void **state)
{
	fx *f = *state;
	const char *nodes[] = { "n1", "n2", "n3", "n4" };
	uint64_t before;
	cJSON *obj;

	for (int i = 0; i < 4; i++)
		hello(f->db, nodes[i]);
	before = es_db_commit_count(f->db);
	es_db_batch_begin(f->db);
	assert_true(es_db_batch_open(f->db));
	/* 4 sessions x 25 reports, interleaved as they would arrive. */
	for (int seq = 1; seq <= 25; seq++)
		for (int i = 0; i < 4; i++) {
			if (seq == 1)
				snapshot(f->db, nodes[i], 1, 0);
			else
				patch(f->db, nodes[i], seq, seq * 10 + i);
		}
	for (int i = 0; i < 4; i++)
		assert_int_equal(es_db_node_desired_ack(f->db, nodes[i], 3, 1001), ES_OK);
	/* A duplicate inside the batch (its first copy is not committed). */
	put_report(f->db, "n1", 25, "patch", 24, "{}", 1, 0);
	/* Nothing is visible to another reader before the commit. */
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 0);
	assert_int_equal(es_db_commit_count(f->db), before);
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
	assert_false(es_db_batch_open(f->db));
	/* 100 reports and 4 desiredAck records: one commit. */
	assert_int_equal(es_db_commit_count(f->db), before + 1);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 100);
	assert_int_equal(peek(f->path, "SELECT count(DISTINCT node || ':' || seq) FROM reports"),
			 100);
	assert_int_equal(peek(f->path, "SELECT min(acked_seq) FROM nodes"), 25);
	assert_int_equal(peek(f->path, "SELECT min(desired_ack_rv) FROM nodes"), 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(usage_n(f->db, nodes[i]), 250 + i);

	/* A write outside the batch commits what it holds first. */
	es_db_batch_begin(f->db);
	patch(f->db, "n1", 26, 7);
	obj = es_test_json("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":"
			   "\"CollectorConfig\",\"metadata\":{\"name\":\"c\"},"
			   "\"spec\":{\"intervalSeconds\":5}}");
	assert_int_equal(es_db_object_put(f->db, obj, NULL, NULL, NULL, NULL), ES_OK);
	cJSON_Delete(obj);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 101);
	patch(f->db, "n1", 27, 8);
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 102);
	assert_int_equal(usage_n(f->db, "n1"), 8);
	/* Nothing open: a commit is a no-op. */
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
}

static void test_history_bounds(void **state)
{
	fx *f = *state;
	char body[512], pad[301];
	int64_t bytes;

	memset(pad, 'x', 300);
	pad[300] = '\0';
	/* By count: the last 5 sequence numbers of the stream. */
	es_db_set_reports_kept(f->db, 5, 0);
	hello(f->db, "n1");
	for (int seq = 1; seq <= 12; seq++)
		put_report(f->db, "n1", seq, "event", 0, "{\"reason\":\"A\"}", 0, 0);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports WHERE node = 'n1'"), 5);
	assert_int_equal(peek(f->path, "SELECT min(seq) FROM reports WHERE node = 'n1'"), 8);

	/* By bytes: 4096 bytes of bodies, the oldest go first. */
	es_db_set_reports_kept(f->db, 10000, 4096);
	hello(f->db, "n2");
	snapshot(f->db, "n2", 1, 1);
	for (int seq = 2, last = 1; seq <= 200; seq++) {
		char p[128];

		if (seq % 3 == 0) {
			snprintf(body, sizeof(body), "{\"reason\":\"%s\"}", pad);
			put_report(f->db, "n2", seq, "event", 0, body, 0, 0);
			continue;
		}
		/* Based on the last state report: events are not state. */
		snprintf(p, sizeof(p), "{\"status\":{\"usage\":{\"n\":%d}}}", seq);
		put_report(f->db, "n2", seq, "patch", last, p, 0, 0);
		last = seq;
	}
	bytes = peek(f->path, "SELECT sum(length(CAST(body AS BLOB))) FROM reports"
		     " WHERE node = 'n2'");
	assert_true(bytes <= 4096);
	assert_true(bytes > 4096 - 400);
	/* The stored count matches the rows. */
	assert_int_equal(peek(f->path, "SELECT history_bytes FROM nodes WHERE name = 'n2'"),
			 bytes);
	assert_int_equal(peek(f->path, "SELECT max(seq) FROM reports WHERE node = 'n2'"),
			 peek(f->path, "SELECT acked_seq FROM nodes WHERE name = 'n2'"));
	assert_true(peek(f->path, "SELECT min(seq) FROM reports WHERE node = 'n2'") > 100);
	/* The state survived the trimming of the reports it came from. */
	assert_int_equal(usage_n(f->db, "n2"),
			 (int)peek(f->path, "SELECT state_seq FROM nodes WHERE name = 'n2'"));

	/* A report larger than the bound alone stays: the newest is kept. */
	es_db_set_reports_kept(f->db, 10000, 100);
	snprintf(body, sizeof(body), "{\"reason\":\"%s\"}", pad);
	put_report(f->db, "n1", 13, "event", 0, body, 0, 0);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports WHERE node = 'n1'"), 1);
	assert_int_equal(peek(f->path, "SELECT seq FROM reports WHERE node = 'n1'"), 13);
}

static void copy_file(const char *from, const char *to)
{
	size_t n = 0;
	char *b;
	FILE *o;

	if (access(from, F_OK) != 0)
		return;
	b = es_test_slurp(from, &n);
	assert_non_null(o = fopen(to, "wb"));
	assert_int_equal(fwrite(b, 1, n, o), n);
	fclose(o);
	free(b);
}

static void test_state_after_crash(void **state)
{
	fx *f = *state;
	char dir[64], path[128], from[160], to[160], err[256];
	es_db *copy = NULL;

	hello(f->db, "n1");
	es_db_batch_begin(f->db);
	snapshot(f->db, "n1", 1, 1);
	for (int seq = 2; seq <= 10; seq++)
		patch(f->db, "n1", seq, seq * 100);
	/* Not committed yet: the state rows change with the reports. */
	assert_int_equal(peek(f->path, "SELECT count(*) FROM node_state WHERE node = 'n1'"), 0);
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
	assert_int_equal(peek(f->path, "SELECT state_seq FROM nodes WHERE name = 'n1'"), 10);

	/* The files as a SIGKILL would leave them. */
	es_test_tmpdir(dir, sizeof(dir), "test-dbb-crash", path, sizeof(path), "controller.db");
	copy_file(f->path, path);
	snprintf(from, sizeof(from), "%s-wal", f->path);
	snprintf(to, sizeof(to), "%s-wal", path);
	copy_file(from, to);
	assert_int_equal(es_db_open(path, &copy, err, sizeof(err)), ES_OK);
	/* The committed batch is all there: every acknowledged report's
	 * change, once. */
	assert_int_equal(usage_n(copy, "n1"), 1000);
	patch(copy, "n1", 11, 1100);
	assert_int_equal(usage_n(copy, "n1"), 1100);
	put_report(copy, "n1", 11, "patch", 10, "{}", 1, 0);
	assert_int_equal(usage_n(copy, "n1"), 1100);
	/* A batch not committed leaves nothing of it: neither reports nor
	 * state. */
	es_db_batch_begin(copy);
	patch(copy, "n1", 12, 1200);
	snprintf(from, sizeof(from), "%s/killed.db", dir);
	copy_file(path, from);
	{
		char wal[180], wal2[180];

		snprintf(wal, sizeof(wal), "%s-wal", path);
		snprintf(wal2, sizeof(wal2), "%s-wal", from);
		copy_file(wal, wal2);
	}
	assert_int_equal(es_db_batch_commit(copy), ES_OK);
	es_db_close(copy);
	assert_int_equal(es_db_open(from, &copy, err, sizeof(err)), ES_OK);
	assert_int_equal(usage_n(copy, "n1"), 1100);
	patch(copy, "n1", 12, 1250);
	assert_int_equal(usage_n(copy, "n1"), 1250);
	es_db_close(copy);
	assert_int_equal(es_test_rmtree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_changes_compact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tombstones_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recreate_keeps_tombstone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_large_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_newer_and_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_after_crash, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
