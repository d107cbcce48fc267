/*
 * test_ctrl_store.c - the store interface's SQLite backend (controller/store/
 * store.h: completion inside the call, changed told after the commit,
 * create-only refused when the name exists, delete of a missing name) and
 * the mirror of an etcd store (db.h: es_db_mirror_*): revisions from etcd,
 * a tombstone per deleted uid and per uid replaced under a reused name,
 * two deletions at one revision moving the compaction point, progress,
 * and a list again dropping what etcd no longer holds; the etcd backend's
 * refusal of a bad prefix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store.h"
#include "store/store_etcd.h"
#include "es_json.h"
#include "testutil.h"

typedef struct fx {
	char dir[64];
	char path[128];
	es_db *db;
	int changes, results;
	es_store_result last;
	char last_uid[64];
	int64_t last_rv;
	int saw_prev, saw_cur;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "test-store", f->path, sizeof(f->path),
		       "controller.db");
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	int rc;

	es_db_close(f->db);
	rc = es_test_rmtree(f->dir);
	free(f);
	return rc;
}

static cJSON *cc(const char *name, int interval)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"intervalSeconds\":%d}}",
		 name, interval);
	return es_test_json(buf);
}

/* A stored object as etcd's watch would bring it. */
static cJSON *stored(const char *name, const char *uid, int64_t rv)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		 "\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"generation\":1,"
		 "\"resourceVersion\":%lld,\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
		 "\"spec\":{\"intervalSeconds\":5}}", name, uid, (long long)rv);
	return es_test_json(buf);
}

static void on_changed(void *ud, const cJSON *prev, const cJSON *cur)
{
	fx *f = ud;

	f->changes++;
	f->saw_prev = prev != NULL;
	f->saw_cur = cur != NULL;
}

static void on_result(void *ud, const es_store_result *r)
{
	fx *f = ud;

	f->results++;
	f->last = *r;
	f->last.object = f->last.previous = NULL;
	f->last_uid[0] = '\0';
	f->last_rv = 0;
	if (r->object) {
		snprintf(f->last_uid, sizeof(f->last_uid), "%s", es_obj_uid(r->object));
		f->last_rv = es_obj_resource_version(r->object);
	}
}

static void test_sqlite_backend(void **state)
{
	fx *f = *state;
	es_store s;
	cJSON *o = cc("a", 5);
	char uid[64];

	es_store_sqlite_init(&s, f->db, on_changed, f);
	assert_string_equal(es_store_backend(&s), "sqlite");
	/* completed inside the call, changed told once */
	assert_int_equal(es_store_put(&s, o, 1, on_result, f), ES_OK);
	assert_int_equal(f->results, 1);
	assert_int_equal(f->last.rc, ES_OK);
	assert_true(f->last.created);
	assert_int_equal(f->changes, 1);
	assert_false(f->saw_prev);
	snprintf(uid, sizeof(uid), "%s", f->last_uid);
	/* create-only of a name that exists: refused, nothing told */
	assert_int_equal(es_store_put(&s, o, 1, on_result, f), ES_OK);
	assert_int_equal(f->last.rc, ES_ERR_EXISTS);
	assert_string_equal(f->last_uid, uid);
	assert_int_equal(f->changes, 1);
	/* the same again: unchanged, nothing told */
	assert_int_equal(es_store_put(&s, o, 0, on_result, f), ES_OK);
	assert_int_equal(f->last.rc, ES_OK);
	assert_false(f->last.changed);
	assert_int_equal(f->changes, 1);
	/* delete, then delete again */
	assert_int_equal(es_store_delete(&s, ES_KIND_COLLECTOR_CONFIG, "a", on_result, f),
			 ES_OK);
	assert_int_equal(f->last.rc, ES_OK);
	assert_int_equal(f->changes, 2);
	assert_true(f->saw_prev);
	assert_false(f->saw_cur);
	assert_int_equal(es_store_delete(&s, ES_KIND_COLLECTOR_CONFIG, "a", on_result, f),
			 ES_OK);
	assert_int_equal(f->last.rc, ES_ERR_NOTFOUND);
	assert_int_equal(f->results, 5);
	/* refused at once: cb never runs */
	assert_int_equal(es_store_delete(&s, ES_KIND_NODE, "a", on_result, f), ES_ERR_INVAL);
	assert_int_equal(f->results, 5);
	es_store_close(&s);
	cJSON_Delete(o);
}

static void changes(es_db *db, int64_t since, int *nobj, int *ntomb)
{
	cJSON *o = NULL, *t = NULL;

	assert_int_equal(es_db_changes_since(db, since, &o, &t), ES_OK);
	*nobj = cJSON_GetArraySize(o);
	*ntomb = cJSON_GetArraySize(t);
	cJSON_Delete(o);
	cJSON_Delete(t);
}

static void test_mirror(void **state)
{
	fx *f = *state;
	int following = -1, no, nt;
	int64_t rev = -1, cur, comp;
	cJSON *o, *prev = NULL, *got = NULL;

	assert_int_equal(es_db_mirror_state(f->db, &following, &rev), ES_OK);
	assert_int_equal(following, 0);
	/* a list: revision and compaction point from etcd */
	o = cJSON_CreateArray();
	cJSON_AddItemToArray(o, stored("a", "uid-a1", 3));
	assert_int_equal(es_db_mirror_reset(f->db, o, 10), ES_OK);
	cJSON_Delete(o);
	assert_int_equal(es_db_mirror_state(f->db, &following, &rev), ES_OK);
	assert_int_equal(following, 1);
	assert_int_equal(rev, 10);
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(comp, 10);
	/* the watch: a delete, then the name made again with another uid */
	assert_int_equal(es_db_mirror_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", 11, &prev),
			 ES_OK);
	assert_non_null(prev);
	assert_string_equal(es_obj_uid(prev), "uid-a1");
	cJSON_Delete(prev);
	o = stored("a", "uid-a2", 12);
	assert_int_equal(es_db_mirror_put(f->db, o, 12, &prev), ES_OK);
	assert_null(prev);
	cJSON_Delete(o);
	changes(f->db, 10, &no, &nt);
	assert_int_equal(no, 1);
	assert_int_equal(nt, 1); /* uid-a1's deletion is kept */
	/* a put replacing another uid under the name leaves its tombstone */
	o = stored("a", "uid-a3", 13);
	assert_int_equal(es_db_mirror_put(f->db, o, 13, &prev), ES_OK);
	assert_string_equal(es_obj_uid(prev), "uid-a2");
	cJSON_Delete(prev);
	cJSON_Delete(o);
	changes(f->db, 10, &no, &nt);
	assert_int_equal(nt, 2);
	assert_int_equal(es_db_object_get(f->db, ES_KIND_COLLECTOR_CONFIG, "a", &got), ES_OK);
	assert_int_equal(es_obj_resource_version(got), 13);
	cJSON_Delete(got);
	/* two deletions at one revision: the compaction point moves there */
	o = stored("b", "uid-b", 14);
	assert_int_equal(es_db_mirror_put(f->db, o, 14, NULL), ES_OK);
	cJSON_Delete(o);
	assert_int_equal(es_db_mirror_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "a", 15, NULL),
			 ES_OK);
	assert_int_equal(es_db_mirror_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "b", 15, NULL),
			 ES_OK);
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(cur, 15);
	assert_int_equal(comp, 15);
	/* a deletion the mirror never held moves only the revision */
	assert_int_equal(es_db_mirror_delete(f->db, ES_KIND_COLLECTOR_CONFIG, "z", 16, &prev),
			 ES_OK);
	assert_null(prev);
	/* progress: forward only */
	assert_int_equal(es_db_mirror_progress(f->db, 20), ES_OK);
	assert_int_equal(es_db_mirror_progress(f->db, 18), ES_OK);
	assert_int_equal(es_db_rv(f->db, &cur, NULL), ES_OK);
	assert_int_equal(cur, 20);
	/* bad input changes nothing */
	o = es_test_json("{\"kind\":\"CollectorConfig\",\"metadata\":{\"name\":\"x\"}}");
	assert_int_equal(es_db_mirror_put(f->db, o, 21, NULL), ES_ERR_INVAL);
	cJSON_Delete(o);
	/* a list again: what etcd no longer holds is gone, no tombstones */
	o = cJSON_CreateArray();
	cJSON_AddItemToArray(o, stored("c", "uid-c", 25));
	assert_int_equal(es_db_mirror_reset(f->db, o, 30), ES_OK);
	cJSON_Delete(o);
	assert_int_equal(es_db_object_list(f->db, ES_KIND_UNKNOWN, &got), ES_OK);
	assert_int_equal(cJSON_GetArraySize(got), 1);
	cJSON_Delete(got);
	changes(f->db, 0, &no, &nt);
	assert_int_equal(nt, 0);
	assert_int_equal(es_db_rv(f->db, &cur, &comp), ES_OK);
	assert_int_equal(cur, 30);
	assert_int_equal(comp, 30);
}

static void test_object_next(void **state)
{
	cJSON *o = cc("n", 5), *o2 = cc("n", 6), *first = NULL, *next = NULL;
	int differs = -1;

	(void)state;
	assert_int_equal(es_db_object_next(o, NULL, &first, &differs), ES_OK);
	assert_int_equal(differs, 1);
	assert_int_equal(es_obj_generation(first), 1);
	assert_non_null(es_obj_uid(first));
	assert_int_equal(es_db_object_next(o, first, &next, &differs), ES_OK);
	assert_int_equal(differs, 0);
	cJSON_Delete(next);
	assert_int_equal(es_db_object_next(o2, first, &next, &differs), ES_OK);
	assert_int_equal(differs, 1);
	assert_int_equal(es_obj_generation(next), 2);
	assert_string_equal(es_obj_uid(next), es_obj_uid(first));
	cJSON_Delete(next);
	cJSON_Delete(first);
	cJSON_Delete(o);
	cJSON_Delete(o2);
}

/* A prefix that does not end in '/' is refused naming the setting, before
 * anything is dialled. */
static void test_etcd_bad_prefix(void **state)
{
	fx *f = *state;
	const char *eps[] = { "http://127.0.0.1:1" };
	es_store_etcd_opts o = { .endpoints = eps, .n_endpoints = 1, .prefix = "/x" };
	es_store s;
	char err[256] = "";

	assert_int_equal(es_store_etcd_open(NULL, &o, f->db, NULL, NULL, &s, err,
					    sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "etcd-prefix"));
	assert_null(s.ops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sqlite_backend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mirror, setup, teardown),
		cmocka_unit_test(test_object_next),
		cmocka_unit_test_setup_teardown(test_etcd_bad_prefix, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
