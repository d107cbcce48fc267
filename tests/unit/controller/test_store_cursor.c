/* Unit tests of the report cursors on etcd (controller/store/
 * store_etcd_cursor.c): the compare-and-swap txn of a batch, the node
 * record's value and its parsing, and the provisional rows of the
 * controller's file (es_db_node_cursor_set in db_nodes.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "testutil.h"
#include "es_json.h"
#include "store/db.h"
#include "store/store_etcd_int.h"

static cJSON *txn_json(es_etcd_txn *t)
{
	es_err rc = ES_OK;
	char *text = es_etcd_msg_txn_body(t, &rc);
	cJSON *o;

	assert_int_equal(rc, ES_OK);
	assert_non_null(text);
	o = cJSON_Parse(text);
	free(text);
	assert_non_null(o);
	return o;
}

static void test_txn_two_nodes(void **state)
{
	char k0[] = "/es/nodes/a", k1[] = "/es/nodes/b", v0[] = "{}", v1[] = "{\"x\":1}";
	char *keys[] = { k0, k1 }, *values[] = { v0, v1 };
	size_t klens[] = { strlen(k0), strlen(k1) };
	int64_t mods[] = { 0, 42 };
	es_etcd_txn t;
	cJSON *o, *cmp, *c0, *c1, *succ, *fail;

	(void)state;
	assert_int_equal(store_etcd__cursor_txn(&t, keys, klens, mods, values, 2), ES_OK);
	o = txn_json(&t);
	cmp = cJSON_GetObjectItemCaseSensitive(o, "compare");
	succ = cJSON_GetObjectItemCaseSensitive(o, "success");
	fail = cJSON_GetObjectItemCaseSensitive(o, "failure");
	assert_int_equal(cJSON_GetArraySize(cmp), 2);
	assert_int_equal(cJSON_GetArraySize(succ), 2);
	assert_int_equal(cJSON_GetArraySize(fail), 2);
	/* A new node's key: create_revision 0; a known one: its mod_revision. */
	c0 = cJSON_GetArrayItem(cmp, 0);
	c1 = cJSON_GetArrayItem(cmp, 1);
	assert_string_equal(es_test_str(c0, "target"), "CREATE");
	assert_string_equal(es_test_str(c0, "create_revision"), "0");
	assert_string_equal(es_test_str(c0, "result"), "EQUAL");
	assert_string_equal(es_test_str(c1, "target"), "MOD");
	assert_string_equal(es_test_str(c1, "mod_revision"), "42");
	assert_string_equal(es_test_str(c1, "key"), "L2VzL25vZGVzL2I="); /* "/es/nodes/b" */
	/* Success: the puts; failure: a read of each key, in the same order. */
	assert_non_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(succ, 1),
							 "request_put"));
	assert_string_equal(es_test_str(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fail, 0),
								 "request_range"), "key"),
			    "L2VzL25vZGVzL2E=");
	cJSON_Delete(o);
	es_etcd_txn_free(&t);
}

static void test_txn_op_limit(void **state)
{
	static char kbuf[STORE_ETCD_TXN_NODES + 1][32];
	char *keys[STORE_ETCD_TXN_NODES + 1], *values[STORE_ETCD_TXN_NODES + 1];
	size_t klens[STORE_ETCD_TXN_NODES + 1];
	int64_t mods[STORE_ETCD_TXN_NODES + 1];
	char v[] = "{}";
	es_etcd_txn t;
	cJSON *o;

	(void)state;
	for (int i = 0; i <= STORE_ETCD_TXN_NODES; i++) {
		klens[i] = (size_t)snprintf(kbuf[i], sizeof(kbuf[i]), "/es/nodes/n%d", i);
		keys[i] = kbuf[i];
		values[i] = v;
		mods[i] = i;
	}
	/* etcd's default --max-txn-ops is 128: one more is refused here. */
	assert_int_equal(STORE_ETCD_TXN_NODES, 128);
	assert_int_equal(store_etcd__cursor_txn(&t, keys, klens, mods, values,
						STORE_ETCD_TXN_NODES + 1), ES_ERR_INVAL);
	es_etcd_txn_free(&t);
	assert_int_equal(store_etcd__cursor_txn(&t, keys, klens, mods, values, 0),
			 ES_ERR_INVAL);
	es_etcd_txn_free(&t);
	assert_int_equal(store_etcd__cursor_txn(&t, keys, klens, mods, values,
						STORE_ETCD_TXN_NODES), ES_OK);
	o = txn_json(&t);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "compare")), 128);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "success")), 128);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "failure")), 128);
	cJSON_Delete(o);
	es_etcd_txn_free(&t);
}

static void test_record_round_trip(void **state)
{
	cJSON *conds = cJSON_Parse("[{\"type\":\"Ready\",\"status\":\"True\"}]");
	es_store_cursor c = { .node = "n1", .stream = "s-1", .seq = 77, .desired_ack = 9,
			      .last_report = 1767225600, .conditions = conds };
	store_etcd__rec rec;
	char *v;
	cJSON *o;
	store_etcd__stream earlier[2] = { { "s-0", 12, 3, 9 }, { "s-old", 5, 0, INT64_MAX } };

	(void)state;
	v = store_etcd__cursor_value("host/uuid", INT64_MAX - 5, &c, 40, earlier, 2);
	assert_non_null(v);
	assert_int_equal(store_etcd__cursor_parse(v, strlen(v), &rec), ES_OK);
	assert_int_equal(rec.n_earlier, 2);
	assert_string_equal(rec.earlier[0].id, "s-0");
	assert_int_equal(rec.earlier[0].seq, 12);
	assert_int_equal(rec.earlier[0].since, 3);
	assert_int_equal(rec.earlier[0].file, 9);
	assert_string_equal(rec.earlier[1].id, "s-old");
	assert_true(rec.earlier[1].file == INT64_MAX);
	assert_string_equal(rec.stream, "s-1");
	assert_string_equal(rec.controller, "host/uuid");
	assert_int_equal(rec.seq, 77);
	assert_int_equal(rec.since, 40);
	assert_int_equal(rec.desired_ack, 9);
	assert_true(rec.file == INT64_MAX - 5); /* a string: no double rounding */
	o = cJSON_Parse(v);
	assert_string_equal(es_test_str(o, "lastReport"), "2026-01-01T00:00:00Z");
	assert_string_equal(es_test_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o,
				"conditions"), 0), "type"), "Ready");
	cJSON_Delete(o);
	free(v);
	cJSON_Delete(conds);
}

static void test_record_refused(void **state)
{
	static const char *const bad[] = {
		"not json",
		"[]",
		"{\"controller\":\"c\",\"seq\":1}",                 /* no streamId */
		"{\"streamId\":\"s\",\"seq\":1}",                   /* no controller */
		"{\"streamId\":\"s\",\"controller\":\"c\"}",        /* no seq */
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":-1}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":\"1\"}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"file\":7}",
		/* earlier streams: an array of entries with streamId and seq */
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"earlierStreams\":{}}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"earlierStreams\":[1]}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"earlierStreams\":"
		"[{\"seq\":1}]}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"earlierStreams\":"
		"[{\"streamId\":\"t\"}]}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"earlierStreams\":"
		"[{\"streamId\":\"t\",\"seq\":-2}]}",
		"{\"streamId\":\"s\",\"controller\":\"c\",\"seq\":1,\"earlierStreams\":"
		"[{\"streamId\":\"t\",\"seq\":2,\"file\":3}]}",
	};
	store_etcd__rec rec;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(store_etcd__cursor_parse(bad[i], strlen(bad[i]), &rec),
				 ES_ERR_PROTO);
}

/* The earlier streams a record keeps when the node's stream changes: the
 * record's own first, the one taken up again out, at most
 * STORE_ETCD_EARLIER_MAX; the same stream keeps them as they are. */
static void test_earlier_streams(void **state)
{
	store_etcd__stream e[STORE_ETCD_EARLIER_MAX] = {
		{ "b", 20, 20, 2 }, { "c", 7, 0, 3 }, { "d", 4, 1, 3 }, { "e", 1, 0, 3 } };
	store_etcd__stream out[STORE_ETCD_EARLIER_MAX];
	size_t n;

	(void)state;
	/* the same stream: unchanged */
	assert_int_equal(store_etcd__earlier_next("a", 30, 25, 1, e, 2, "a", out), 2);
	assert_string_equal(out[0].id, "b");
	assert_string_equal(out[1].id, "c");
	/* a switch back to b (two agents with one identity): a joins, b leaves */
	n = store_etcd__earlier_next("a", 30, 25, 1, e, 2, "b", out);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].id, "a");
	assert_int_equal(out[0].seq, 30);
	assert_int_equal(out[0].since, 25);
	assert_int_equal(out[0].file, 1);
	assert_string_equal(out[1].id, "c");
	assert_non_null(store_etcd__earlier_find(out, n, "a"));
	assert_null(store_etcd__earlier_find(out, n, "b"));
	/* a new stream with the list full: the oldest goes */
	n = store_etcd__earlier_next("a", 30, 25, 1, e, STORE_ETCD_EARLIER_MAX, "new", out);
	assert_int_equal(n, STORE_ETCD_EARLIER_MAX);
	assert_string_equal(out[0].id, "a");
	assert_string_equal(out[STORE_ETCD_EARLIER_MAX - 1].id, "d");
	assert_null(store_etcd__earlier_find(out, n, "e"));
	/* no record yet (no current stream): nothing joins */
	assert_int_equal(store_etcd__earlier_next(NULL, 0, 0, 1, NULL, 0, "a", out), 0);
	assert_int_equal(store_etcd__earlier_next("", 0, 0, 1, NULL, 0, "a", out), 0);
	/* a stale entry of the record's own stream is not kept twice */
	e[1] = (store_etcd__stream){ "a", 3, 0, 3 };
	n = store_etcd__earlier_next("a", 30, 25, 1, e, 2, "z", out);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].id, "a");
	assert_int_equal(out[0].seq, 30);
	assert_string_equal(out[1].id, "b");
}

static cJSON *report(int64_t seq)
{
	char text[256];

	snprintf(text, sizeof(text), "{\"type\":\"report\",\"seq\":%lld,\"reportType\":"
		 "\"snapshot\",\"body\":{\"kind\":\"Node\",\"status\":{\"n\":%lld}}}",
		 (long long)seq, (long long)seq);
	return cJSON_Parse(text);
}

/* Rows above the cursor etcd holds are provisional: they go, and the
 * file's cursor follows etcd's (both ways at a hello, only down else). */
static void test_provisional_rows(void **state)
{
	char dir[256], path[300], err[256], stream[64];
	es_db *db = NULL;
	int64_t dropped = -1, seq = 0, dack = 0;
	cJSON *items = NULL;
	int dup = 0, resync = 0;

	(void)state;
	es_test_tmpdir(dir, sizeof(dir), "cursor", path, sizeof(path), "c.db");
	assert_int_equal(es_db_open(path, &db, err, sizeof(err)), ES_OK);
	assert_int_equal(es_db_node_hello(db, "n1", NULL, "t", "b", 1000, NULL, NULL), ES_OK);
	assert_int_equal(es_db_node_stream(db, "n1", "s1", 1, &seq, NULL, NULL, 0), ES_OK);
	for (int64_t i = 1; i <= 5; i++) {
		cJSON *m = report(i);

		assert_int_equal(es_db_report_store(db, "n1", m, 1000, &dup, &resync), ES_OK);
		cJSON_Delete(m);
	}
	/* Another stream: nothing changes. */
	assert_int_equal(es_db_node_cursor_set(db, "n1", "other", 0, 1, &dropped), ES_OK);
	assert_int_equal(dropped, 0);
	/* Another controller's tenure began at 3: 4 and 5 go. */
	assert_int_equal(es_db_node_cursor_set(db, "n1", "s1", 3, 1, &dropped), ES_OK);
	assert_int_equal(dropped, 2);
	assert_int_equal(es_db_node_cursor_get(db, "n1", stream, sizeof(stream), &seq, &dack),
			 ES_OK);
	assert_string_equal(stream, "s1");
	assert_int_equal(seq, 3);
	assert_int_equal(es_db_reports_list(db, "n1", 0, &items), ES_OK);
	assert_int_equal(cJSON_GetArraySize(items), 3);
	cJSON_Delete(items);
	/* lower_only never raises it; a hello's set does (etcd's is 9). */
	assert_int_equal(es_db_node_cursor_set(db, "n1", "s1", 8, 1, &dropped), ES_OK);
	assert_int_equal(es_db_node_cursor_get(db, "n1", stream, sizeof(stream), &seq, &dack),
			 ES_OK);
	assert_int_equal(seq, 3);
	assert_int_equal(es_db_node_cursor_set(db, "n1", "s1", 9, 0, &dropped), ES_OK);
	assert_int_equal(es_db_node_cursor_get(db, "n1", stream, sizeof(stream), &seq, &dack),
			 ES_OK);
	assert_int_equal(seq, 9);
	/* A seq at or below it is now a duplicate. */
	{
		cJSON *m = report(9);

		assert_int_equal(es_db_report_store(db, "n1", m, 1000, &dup, &resync), ES_OK);
		assert_int_equal(dup, 1);
		cJSON_Delete(m);
	}
	assert_int_equal(es_db_node_cursor_set(db, "nope", "s1", 1, 0, &dropped), ES_OK);
	assert_int_equal(dropped, 0);
	es_db_close(db);
	es_test_rmtree(dir);
}

static es_etcd_kv kv_of(const char *key, const char *value)
{
	es_etcd_kv kv = { .key = (char *)key, .key_len = strlen(key),
			  .value = (char *)value, .value_len = strlen(value) };

	return kv;
}

/* The admin view's read of every node (store_etcd_nodes.c): records and
 * session keys joined by name in order, a node with either key in it, a
 * record that is not one shown without, keys of no node skipped. */
static void test_nodes_join(void **state)
{
	char prefix[] = "/es/", npfx[] = "/es/nodes/", spfx[] = "/es/sessions/";
	est s = { .prefix = prefix, .plen = 4, .npfx = npfx, .nplen = 10, .spfx = spfx,
		  .splen = 13 };
	es_store_cursor c = { .node = "b", .stream = "st", .seq = 9, .desired_ack = 4,
			      .last_report = 1767225600 };
	cJSON *conds = cJSON_Parse("[{\"type\":\"Ready\",\"status\":\"True\"}]");
	char *rec_b, *rec_c;
	es_etcd_kv nk[4], sk[3];
	es_etcd_resp rn = { .kvs = nk, .n_kvs = 4 }, rs = { .kvs = sk, .n_kvs = 3 };
	es_store_node out[7];
	store_etcd__nview views[7];
	size_t n = 99;

	(void)state;
	c.conditions = conds;
	rec_b = store_etcd__cursor_value("h/b", 1, &c, 2, NULL, 0);
	c.conditions = NULL;
	c.last_report = 0;
	rec_c = store_etcd__cursor_value("h/c", 2, &c, 0, NULL, 0);
	assert_non_null(rec_b);
	assert_non_null(rec_c);
	nk[0] = kv_of("/es/nodes/a", "not json");
	nk[1] = kv_of("/es/nodes/b", rec_b);
	nk[2] = kv_of("/es/nodes/c", rec_c);
	nk[3] = kv_of("/es/nodesX", rec_c);         /* no node */
	sk[0] = kv_of("/es/sessions/", "h/x");      /* no node */
	sk[1] = kv_of("/es/sessions/b", "h/a");
	sk[2] = kv_of("/es/sessions/d", "h/d");
	assert_int_equal(store_etcd__nodes_join(&s, &rn, &rs, out, views, &n), ES_OK);
	assert_int_equal(n, 4);
	assert_string_equal(out[0].node, "a");
	assert_null(out[0].writer);
	assert_null(out[0].controller);
	assert_string_equal(out[1].node, "b");
	assert_string_equal(out[1].controller, "h/a");
	assert_string_equal(out[1].writer, "h/b");
	assert_int_equal(out[1].desired_ack, 4);
	assert_int_equal(out[1].seq, 9);
	assert_string_equal(out[1].stream, "st");
	assert_int_equal(out[1].last_report, 1767225600);
	assert_int_equal(es_json_equal(out[1].conditions, conds), 1);
	assert_string_equal(out[2].node, "c");
	assert_null(out[2].controller);
	assert_string_equal(out[2].writer, "h/c");
	assert_null(out[2].conditions);
	assert_int_equal(out[2].last_report, 0);
	assert_string_equal(out[3].node, "d");
	assert_string_equal(out[3].controller, "h/d");
	assert_null(out[3].writer);
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(views[i].conditions);
	/* nothing at all */
	rn.n_kvs = rs.n_kvs = 0;
	assert_int_equal(store_etcd__nodes_join(&s, &rn, &rs, out, views, &n), ES_OK);
	assert_int_equal(n, 0);
	free(rec_b);
	free(rec_c);
	cJSON_Delete(conds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txn_two_nodes),
		cmocka_unit_test(test_txn_op_limit),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_refused),
		cmocka_unit_test(test_earlier_streams),
		cmocka_unit_test(test_provisional_rows),
		cmocka_unit_test(test_nodes_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
