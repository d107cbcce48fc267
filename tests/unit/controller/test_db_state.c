/*
 * test_db_state.c - the reported state stored as keyed rows (db_state.c):
 * what a delta or patch report does to the rows equals es_kpatch_apply /
 * es_mpatch_apply on the parsed state, for the captured reports of
 * bench/fleetsim/data/v2 and for random-ish changes of its snapshot (item
 * reorder, add, remove, a->b->a round trips), across a reopen; and the
 * upgrade of a version 5 file (state text at a checkpoint, reports past
 * it) keeps the state.
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
#include "store/db.h"
#include "es_json.h"
#include "es_kpatch.h"
#include "es_mpatch.h"
#include "testutil.h"
#include "db_sqlutil.h"

typedef db_fx fx;

static int setup(void **state)
{
	db_fx_open(state, "test-dbs");
	assert_int_equal(es_db_node_hello(((fx *)*state)->db, "n1", NULL, "v", "b", 1000,
					  NULL, NULL), ES_OK);
	return 0;
}

static int teardown(void **state)
{
	return db_fx_close(state);
}

/* Stores one report of type with body (borrowed); asserts its outcome. */
static void store(es_db *db, int64_t seq, const char *type, int64_t base,
		  const cJSON *body, int want_resync)
{
	cJSON *m = cJSON_CreateObject();
	int dup = -1, resync = -1;

	assert_non_null(m);
	cJSON_AddStringToObject(m, "type", "report");
	cJSON_AddNumberToObject(m, "seq", (double)seq);
	cJSON_AddStringToObject(m, "reportType", type);
	cJSON_AddNumberToObject(m, "baseSeq", (double)base);
	cJSON_AddItemToObject(m, "body", cJSON_Duplicate(body, 1));
	assert_int_equal(es_db_report_store(db, "n1", m, 2000, &dup, &resync), ES_OK);
	assert_int_equal(dup, 0);
	assert_int_equal(resync, want_resync);
	cJSON_Delete(m);
}

/* The admin view's state less what the view adds (status.sync, metadata,
 * apiVersion, kind), compared with want the same way. */
static void assert_state(es_db *db, const cJSON *want, const char *what)
{
	cJSON *n = NULL, *w = cJSON_Duplicate(want, 1);
	const char *drop[] = { "metadata", "apiVersion", "kind" };

	assert_int_equal(es_db_node_get(db, "n1", &n), ES_OK);
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		cJSON_DeleteItemFromObjectCaseSensitive(n, drop[i]);
		cJSON_DeleteItemFromObjectCaseSensitive(w, drop[i]);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItem(n, "status"), "sync");
	if (!cJSON_GetObjectItem(w, "status") &&
	    cJSON_GetArraySize(cJSON_GetObjectItem(n, "status")) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(n, "status");
	if (es_json_equal(n, w) != 1) {
		char *a = es_json_print(n), *b = es_json_print(w);

		fprintf(stderr, "%s:\n got  %s\n want %s\n", what, a, b);
		free(a);
		free(b);
		fail();
	}
	cJSON_Delete(n);
	cJSON_Delete(w);
}

static cJSON *load_json(const char *rel)
{
	char path[512];
	cJSON *v;

	char *text;

	snprintf(path, sizeof(path), "%s/%s", ES_SOURCE_DIR, rel);
	text = es_test_slurp(path, NULL);
	v = es_test_json(text);
	free(text);
	return v;
}

/* The captured reports, in order: each state report's result equals
 * applying it to the parsed state. */
static void test_captured(void **state)
{
	fx *f = *state;
	char path[512], line[65536];
	cJSON *cur = load_json("bench/fleetsim/data/v2/snapshot.json");
	int64_t seq = 1, last = 1;
	int deltas = 0;
	FILE *in;

	store(f->db, seq, "snapshot", 0, cur, 0);
	assert_state(f->db, cur, "snapshot");
	snprintf(path, sizeof(path), "%s/bench/fleetsim/data/v2/reports.jsonl", ES_SOURCE_DIR);
	assert_non_null(in = fopen(path, "r"));
	while (fgets(line, sizeof(line), in)) {
		cJSON *r = es_test_json(line);
		const cJSON *type = cJSON_GetObjectItem(r, "reportType");
		const cJSON *body = cJSON_GetObjectItem(r, "body");

		seq++;
		if (strcmp(type->valuestring, "delta") == 0) {
			assert_int_equal(es_kpatch_apply(&cur, body, NULL, 0), ES_OK);
			store(f->db, seq, "delta", last, body, 0);
			last = seq;
			deltas++;
			assert_state(f->db, cur, "captured delta");
		} else {
			store(f->db, seq, type->valuestring, 0, body, 0);
			if (strcmp(type->valuestring, "snapshot") == 0) {
				cJSON_Delete(cur);
				cur = cJSON_Duplicate(body, 1);
				last = seq;
			}
		}
		cJSON_Delete(r);
	}
	fclose(in);
	assert_true(deltas > 0);
	cJSON_Delete(cur);
}

/* ---- random-ish changes ---- */

static uint32_t rng = 12345;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

/* A copy of item with every string member suffixed and every number
 * member moved: a new merge key for any list. */
static cJSON *fresh_item(const cJSON *item)
{
	cJSON *c = cJSON_Duplicate(item, 1), *m;
	char buf[512];
	uint32_t r = rnd(1000000);

	cJSON_ArrayForEach(m, c) {
		if (cJSON_IsString(m)) {
			snprintf(buf, sizeof(buf), "%.400s~%u", m->valuestring, r);
			cJSON_SetValuestring(m, buf);
		} else if (cJSON_IsNumber(m)) {
			cJSON_SetNumberValue(m, m->valuedouble + 1000003.0 * (r + 1));
		}
	}
	return c;
}

/* Changes v in place, at random: numbers moved, members removed or added,
 * list items swapped, removed or added. */
static void mutate(cJSON *v, int depth)
{
	cJSON *m, *next;

	if (cJSON_IsArray(v) && cJSON_IsObject(v->child)) {
		int n = cJSON_GetArraySize(v);
		uint32_t what = rnd(10);

		if (what == 0 && n >= 2) {
			/* Reorder: move one item to the front. */
			cJSON *it = cJSON_DetachItemFromArray(v, (int)rnd((uint32_t)n));

			cJSON_InsertItemInArray(v, 0, it);
		} else if (what == 1 && n >= 1) {
			cJSON_DeleteItemFromArray(v, (int)rnd((uint32_t)n));
		} else if (what == 2 && n >= 1) {
			cJSON_AddItemToArray(v, fresh_item(cJSON_GetArrayItem(v, (int)rnd((uint32_t)n))));
		}
	}
	for (m = v ? v->child : NULL; m; m = next) {
		next = m->next;
		if (cJSON_IsNumber(m) && rnd(8) == 0)
			cJSON_SetNumberValue(m, (double)rnd(100000));
		else if (cJSON_IsString(m) && rnd(20) == 0 && m->string &&
			 strcmp(m->string, "type") && strcmp(m->string, "name"))
			cJSON_SetValuestring(m, rnd(2) ? "changed" : "other");
		else if (m->string && depth > 0 && rnd(60) == 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(v, m));
		else if (cJSON_IsObject(m) || cJSON_IsArray(m))
			mutate(m, depth + 1);
	}
	if (cJSON_IsObject(v) && depth > 0 && rnd(40) == 0) {
		char name[32];

		snprintf(name, sizeof(name), "added%u", rnd(1000));
		if (!cJSON_GetObjectItemCaseSensitive(v, name))
			cJSON_AddNumberToObject(v, name, rnd(100));
	}
}

static void test_random_changes(void **state)
{
	fx *f = *state;
	cJSON *snap = load_json("bench/fleetsim/data/v2/snapshot.json");
	cJSON *cur = cJSON_Duplicate(snap, 1), *prev = NULL;
	int64_t seq = 1;
	char err[256];

	store(f->db, seq, "snapshot", 0, cur, 0);
	for (int step = 0; step < 300; step++) {
		cJSON *next, *change = NULL, *applied = cJSON_Duplicate(cur, 1);
		int keyed = step % 5 != 4;

		if (prev && step % 7 == 0) {
			next = prev; /* a -> b -> a */
			prev = NULL;
		} else {
			next = cJSON_Duplicate(cur, 1);
			mutate(next, 0);
		}
		if (keyed)
			assert_int_equal(es_kpatch_diff(cur, next, &change), ES_OK);
		else
			assert_int_equal(es_mpatch_diff(cur, next, &change), ES_OK);
		assert_int_equal(keyed ? es_kpatch_apply(&applied, change, err, sizeof(err)) :
				 es_mpatch_apply(&applied, change), ES_OK);
		store(f->db, seq + 1, keyed ? "delta" : "patch", seq, change, 0);
		seq++;
		assert_state(f->db, applied, keyed ? "random delta" : "random patch");
		if (step == 150) {
			/* Nothing of it was held in memory. */
			char e[256];

			es_db_close(f->db);
			assert_int_equal(es_db_open(f->path, &f->db, e, sizeof(e)), ES_OK);
			assert_state(f->db, applied, "after reopen");
		}
		cJSON_Delete(change);
		cJSON_Delete(prev);
		prev = cur;
		cur = applied;
		cJSON_Delete(next);
	}
	/* A change on another base is not applied. */
	{
		cJSON *c = es_test_json("{\"status\":{\"x\":1}}");

		store(f->db, seq + 1, "delta", seq - 1, c, 1);
		assert_state(f->db, cur, "other base");
		cJSON_Delete(c);
	}
	cJSON_Delete(prev);
	cJSON_Delete(cur);
	cJSON_Delete(snap);
}

/* Keyed lists by hand: reorder, add, remove, replace, and a bad delta
 * (stored, not applied, a resync asked for). */
static void test_list_rules(void **state)
{
	fx *f = *state;
	cJSON *cur = es_test_json("{\"status\":{\"conditions\":[{\"type\":\"A\",\"v\":1},"
				  "{\"type\":\"B\",\"v\":2},{\"type\":\"C\",\"v\":3}],"
				  "\"usage\":{\"filesystems\":[{\"mountpoint\":\"/\",\"used\":1}]}}}");
	const char *changes[] = {
		"{\"status\":{\"conditions\":[{\"type\":\"B\",\"v\":20}]}}",
		"{\"status\":{\"$setElementOrder/conditions\":[{\"type\":\"C\"},{\"type\":\"A\"},"
		"{\"type\":\"B\"}]}}",
		"{\"status\":{\"conditions\":[{\"type\":\"A\",\"$patch\":\"delete\"},"
		"{\"type\":\"D\",\"v\":4}]}}",
		"{\"status\":{\"conditions\":[{\"type\":\"E\"},{\"type\":\"E\",\"w\":1}],"
		"\"usage\":{\"filesystems\":[{\"$patch\":\"replace\"},{\"mountpoint\":\"/a\"},"
		"{\"mountpoint\":\"/a\"}]}}}",
		"{\"status\":{\"usage\":{\"filesystems\":[{\"mountpoint\":\"/a\",\"used\":5}]}}}",
		"{\"status\":{\"usage\":null,\"conditions\":[{\"type\":\"B\",\"v\":null}]}}",
		"{\"status\":{\"conditions\":\"not a list\"}}",
		"{\"status\":{\"conditions\":[{\"type\":\"Z\"}]}}",
	};
	int64_t seq = 1;

	store(f->db, seq, "snapshot", 0, cur, 0);
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		cJSON *c = es_test_json(changes[i]);

		assert_int_equal(es_kpatch_apply(&cur, c, NULL, 0), ES_OK);
		store(f->db, seq + 1, "delta", seq, c, 0);
		seq++;
		assert_state(f->db, cur, changes[i]);
		cJSON_Delete(c);
	}
	{
		cJSON *bad = es_test_json("{\"status\":{\"conditions\":[{\"v\":1}]}}");

		store(f->db, seq + 1, "delta", seq, bad, 1);
		assert_state(f->db, cur, "bad delta");
		cJSON_Delete(bad);
	}
	cJSON_Delete(cur);
}

/* A version 5 file (the node's state text at its checkpoint 1, a patch
 * and a delta stored past it, as a crash left them) opens with the state
 * in rows, the two reports applied. */
static void test_upgrade_from_v5(void **state)
{
	fx *f = *state;
	char err[256];
	cJSON *want = es_test_json("{\"status\":{\"usage\":{\"n\":3},\"conditions\":["
				   "{\"type\":\"Ready\",\"status\":\"False\"}],\"cpu\":4}}");
	cJSON *c = es_test_json("{\"status\":{\"usage\":{\"n\":4}}}");

	es_db_close(f->db);
	f->db = NULL;
	/* Version 6 less its own table: the version 5 schema. */
	exec_sql(f->path,
		 "DROP TABLE node_state;"
		 "DELETE FROM meta WHERE key = 'state_rows_pending';"
		 "PRAGMA user_version = 5;"
		 "UPDATE nodes SET state = '{\"status\":{\"usage\":{\"n\":1},\"conditions\":"
		 "[{\"type\":\"Ready\",\"status\":\"True\"}],\"cpu\":4}}',"
		 " state_ckpt = 1, state_seq = 3, acked_seq = 3 WHERE name = 'n1';"
		 "INSERT INTO reports (node, stream, seq, report_type, base_seq, time,"
		 " received, body) VALUES"
		 " ('n1', '', 1, 'snapshot', NULL, NULL, 1, '{}'),"
		 " ('n1', '', 2, 'patch', 1, NULL, 1, '{\"status\":{\"usage\":{\"n\":2}}}'),"
		 " ('n1', '', 3, 'delta', 2, NULL, 1, '{\"status\":{\"usage\":{\"n\":3},"
		 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}');");
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	assert_int_equal(peek(f->path, "PRAGMA user_version"), 6);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM nodes WHERE state IS NOT NULL"), 0);
	assert_true(peek(f->path, "SELECT count(*) FROM node_state WHERE node = 'n1'") > 3);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM meta WHERE key ="
			      " 'state_rows_pending'"), 0);
	assert_state(f->db, want, "upgraded");
	/* The chain goes on from the stored seq. */
	assert_int_equal(es_kpatch_apply(&want, c, NULL, 0), ES_OK);
	store(f->db, 4, "delta", 3, c, 0);
	assert_state(f->db, want, "after upgrade");
	/* Opened again: nothing to upgrade, the same state. */
	es_db_close(f->db);
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	assert_state(f->db, want, "reopened");
	cJSON_Delete(want);
	cJSON_Delete(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_captured, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_from_v5, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
