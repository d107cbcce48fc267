/* Unit tests of controller/etcd/etcd_msg.c: the request bodies and the
 * answers of etcd's v3 JSON gateway. The answers are as etcd 3.4.23 writes
 * them (64-bit numbers as strings, zero values left out). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "etcd/etcd_msg.h"
#include "testutil.h"

#define K(s) (s), strlen(s)

static cJSON *parse(char *text)
{
	cJSON *o;

	assert_non_null(text);
	o = cJSON_Parse(text);
	free(text);
	assert_non_null(o);
	return o;
}

static void test_range_body(void **state)
{
	cJSON *o;

	(void)state;
	/* "/es/" = L2VzLw==, "/es0" = L2VzMA== */
	o = parse(es_etcd_msg_range(K("/es/"), "/es0", 4, 42, 10));
	assert_string_equal(es_test_str(o, "key"), "L2VzLw==");
	assert_string_equal(es_test_str(o, "range_end"), "L2VzMA==");
	assert_string_equal(es_test_str(o, "revision"), "42");
	assert_string_equal(es_test_str(o, "limit"), "10");
	cJSON_Delete(o);
	/* the latest revision, no limit, one key: nothing else is sent */
	o = parse(es_etcd_msg_range(K("k"), NULL, 0, 0, 0));
	assert_string_equal(es_test_str(o, "key"), "aw==");
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "range_end"));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "revision"));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "limit"));
	cJSON_Delete(o);
}

static void test_put_and_lease_bodies(void **state)
{
	cJSON *o;

	(void)state;
	o = parse(es_etcd_msg_put(K("k"), "\0\xff", 2, 7587861231234567890LL));
	assert_string_equal(es_test_str(o, "value"), "AP8=");
	/* a 64-bit ID past 2^53 survives as a string */
	assert_string_equal(es_test_str(o, "lease"), "7587861231234567890");
	cJSON_Delete(o);
	o = parse(es_etcd_msg_put(K("k"), NULL, 0, 0));
	assert_string_equal(es_test_str(o, "value"), "");
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "lease"));
	cJSON_Delete(o);
	o = parse(es_etcd_msg_lease_grant(15, 0));
	assert_string_equal(es_test_str(o, "TTL"), "15");
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "ID"));
	cJSON_Delete(o);
	o = parse(es_etcd_msg_lease_id(-5));
	assert_string_equal(es_test_str(o, "ID"), "-5");
	cJSON_Delete(o);
}

static void test_watch_body(void **state)
{
	cJSON *o, *c;

	(void)state;
	o = parse(es_etcd_msg_watch_create(K("/es/"), "/es0", 4, 17));
	c = cJSON_GetObjectItemCaseSensitive(o, "create_request");
	assert_non_null(c);
	assert_string_equal(es_test_str(c, "key"), "L2VzLw==");
	assert_string_equal(es_test_str(c, "start_revision"), "17");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "progress_notify")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "prev_kv")));
	cJSON_Delete(o);
}

static void test_txn_body(void **state)
{
	es_etcd_txn t;
	cJSON *o, *cmp, *op;
	es_err rc;

	(void)state;
	assert_int_equal(es_etcd_txn_init(&t), ES_OK);
	assert_int_equal(es_etcd_txn_compare(&t, K("/c"), ES_ETCD_CMP_MOD,
					     ES_ETCD_EQUAL, 9, NULL, 0), ES_OK);
	assert_int_equal(es_etcd_txn_compare(&t, K("/v"), ES_ETCD_CMP_VALUE,
					     ES_ETCD_NOT_EQUAL, 0, K("x")), ES_OK);
	assert_int_equal(es_etcd_txn_put(&t, 1, K("/c"), K("2"), 0), ES_OK);
	assert_int_equal(es_etcd_txn_delete(&t, 1, K("/d"), NULL, 0), ES_OK);
	assert_int_equal(es_etcd_txn_range(&t, 0, K("/c"), NULL, 0), ES_OK);
	o = parse(es_etcd_msg_txn_body(&t, &rc));
	assert_int_equal(rc, ES_OK);
	cmp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "compare"), 0);
	assert_string_equal(es_test_str(cmp, "target"), "MOD");
	assert_string_equal(es_test_str(cmp, "result"), "EQUAL");
	assert_string_equal(es_test_str(cmp, "mod_revision"), "9");
	cmp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "compare"), 1);
	assert_string_equal(es_test_str(cmp, "target"), "VALUE");
	assert_string_equal(es_test_str(cmp, "result"), "NOT_EQUAL");
	assert_string_equal(es_test_str(cmp, "value"), "eA==");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "success")), 2);
	op = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "success"), 1);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(op, "request_delete_range"));
	op = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "failure"), 0);
	assert_string_equal(es_test_str(cJSON_GetObjectItemCaseSensitive(op, "request_range"), "key"),
			    "L2M=");
	cJSON_Delete(o);
	assert_int_equal(t.n_ops, 3);
	assert_int_equal(t.n_writes, 2); /* the put and the delete */

	/* a bad piece is refused and sticks: the body is not made */
	assert_int_equal(es_etcd_txn_put(&t, 1, "", 0, K("v"), 0), ES_ERR_INVAL);
	assert_int_equal(es_etcd_txn_range(&t, 1, K("/ok"), NULL, 0), ES_ERR_INVAL);
	assert_null(es_etcd_msg_txn_body(&t, &rc));
	assert_int_equal(rc, ES_ERR_INVAL);
	es_etcd_txn_free(&t);
	es_etcd_txn_free(NULL);
}

static void test_prefix_end(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(es_etcd_prefix_end(K("/es/"), out), 4);
	assert_memory_equal(out, "/es0", 4);
	assert_int_equal(es_etcd_prefix_end("a\xff", 2, out), 1);
	assert_memory_equal(out, "b", 1);
	/* nothing to increment: no upper bound, one NUL byte */
	assert_int_equal(es_etcd_prefix_end("\xff\xff", 2, out), 1);
	assert_int_equal(out[0], '\0');
	assert_int_equal(es_etcd_prefix_end("", 0, out), 1);
	assert_int_equal(out[0], '\0');
}

static void test_parse_range(void **state)
{
	static const char body[] =
		"{\"header\":{\"cluster_id\":\"15118495548433857066\","
		"\"member_id\":\"13668033151171901709\",\"revision\":\"12\","
		"\"raft_term\":\"2\"},\"kvs\":[{\"key\":\"L2VzL2E=\","
		"\"create_revision\":\"3\",\"mod_revision\":\"9\",\"version\":\"4\","
		"\"value\":\"djE=\",\"lease\":\"7587861231234567890\"},"
		"{\"key\":\"L2VzL2I=\",\"create_revision\":\"5\","
		"\"mod_revision\":\"5\",\"version\":\"1\"}],\"more\":true,"
		"\"count\":\"3\"}";
	es_etcd_resp r;
	char err[256];

	(void)state;
	assert_int_equal(es_etcd_msg_parse(K(body), &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.revision, 12);
	assert_int_equal(r.raft_term, 2);
	assert_true(r.member_id == 13668033151171901709ULL);
	assert_int_equal(r.n_kvs, 2);
	assert_int_equal(r.count, 3);
	assert_true(r.more);
	assert_string_equal(r.kvs[0].key, "/es/a");
	assert_string_equal(r.kvs[0].value, "v1");
	assert_int_equal(r.kvs[0].value_len, 2);
	assert_int_equal(r.kvs[0].mod_revision, 9);
	assert_int_equal(r.kvs[0].create_revision, 3);
	assert_int_equal(r.kvs[0].version, 4);
	assert_true(r.kvs[0].lease == 7587861231234567890LL);
	/* an empty value is left out by etcd: it reads as "" */
	assert_string_equal(r.kvs[1].value, "");
	assert_int_equal(r.kvs[1].value_len, 0);
	assert_int_equal(r.kvs[1].lease, 0);
	es_etcd_resp_free(&r);

	/* an empty range: no kvs, count 0, nothing allocated */
	assert_int_equal(es_etcd_msg_parse(K("{\"header\":{\"revision\":\"5\"}}"), &r,
					   err, sizeof(err)), ES_OK);
	assert_int_equal(r.n_kvs, 0);
	assert_null(r.kvs);
	assert_int_equal(r.count, 0);
	es_etcd_resp_free(&r);
}

static void test_parse_txn_and_lease(void **state)
{
	static const char txn[] =
		"{\"header\":{\"revision\":\"8\"},\"responses\":[{\"response_range\":"
		"{\"header\":{\"revision\":\"8\"},\"kvs\":[{\"key\":\"L2M=\","
		"\"mod_revision\":\"7\",\"value\":\"Mg==\"}],\"count\":\"1\"}},"
		"{\"response_put\":{\"header\":{\"revision\":\"8\"}}}]}";
	static const char keepalive[] =
		"{\"result\":{\"header\":{\"revision\":\"4\"},\"ID\":\"4111120373635015689\"}}";
	es_etcd_resp r;
	char err[256];

	(void)state;
	assert_int_equal(es_etcd_msg_parse(K(txn), &r, err, sizeof(err)), ES_OK);
	assert_false(r.succeeded); /* left out: the failure branch ran */
	assert_int_equal(r.n_ops, 2);
	assert_int_equal(r.ops[0].n_kvs, 1);
	assert_string_equal(r.ops[0].kvs[0].value, "2");
	assert_int_equal(r.ops[0].kvs[0].mod_revision, 7);
	assert_int_equal(r.ops[1].revision, 8);
	es_etcd_resp_free(&r);

	/* a keepalive of an expired lease: 200, wrapped, without TTL */
	assert_int_equal(es_etcd_msg_parse(K(keepalive), &r, err, sizeof(err)), ES_OK);
	assert_true(r.lease_id == 4111120373635015689LL);
	assert_int_equal(r.ttl, 0);
	es_etcd_resp_free(&r);
}

static void test_parse_bad(void **state)
{
	es_etcd_resp r;
	char err[256];

	(void)state;
	assert_int_equal(es_etcd_msg_parse(K("{\"kvs\":[{\"key\":\"!!!\"}]}"), &r,
					   err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "kvs"));
	assert_null(r.kvs);
	assert_int_equal(es_etcd_msg_parse(K("{\"header\":{\"revision\":\"12x\"}}"), &r,
					   err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "header"));
	assert_int_equal(es_etcd_msg_parse(K("{\"kvs\":{}}"), &r, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_int_equal(es_etcd_msg_parse(K("{\"responses\":[5]}"), &r, err,
					   sizeof(err)), ES_ERR_PARSE);
	assert_int_equal(es_etcd_msg_parse(K("not json"), &r, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_int_equal(es_etcd_msg_parse(K("[]"), &r, err, sizeof(err)),
			 ES_ERR_PARSE);
}

static void test_errors(void **state)
{
	char msg[128];
	int code;

	(void)state;
	assert_true(es_etcd_msg_error(K("{\"error\":\"etcdserver: mvcc: required revision "
					"has been compacted\",\"message\":\"etcdserver: mvcc: "
					"required revision has been compacted\",\"code\":11}"),
				      &code, msg, sizeof(msg)));
	assert_int_equal(code, ES_ETCD_CODE_OUT_OF_RANGE);
	assert_string_equal(msg, "etcdserver: mvcc: required revision has been compacted");
	/* a stream's error object */
	assert_true(es_etcd_msg_error(K("{\"error\":{\"grpc_code\":14,\"http_code\":503,"
					"\"message\":\"etcdserver: no leader\"}}"),
				      &code, msg, sizeof(msg)));
	assert_int_equal(code, ES_ETCD_CODE_UNAVAILABLE);
	assert_string_equal(msg, "etcdserver: no leader");
	/* not errors */
	assert_false(es_etcd_msg_error(K("{\"header\":{}}"), &code, msg, sizeof(msg)));
	assert_false(es_etcd_msg_error(K("<html>"), &code, msg, sizeof(msg)));
	assert_int_equal(code, 0);
}

static void test_watch_parse(void **state)
{
	static const char events[] =
		"{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":["
		"{\"kv\":{\"key\":\"L2VzL2E=\",\"create_revision\":\"2\","
		"\"mod_revision\":\"8\",\"version\":\"2\",\"value\":\"djI=\"},"
		"\"prev_kv\":{\"key\":\"L2VzL2E=\",\"mod_revision\":\"2\",\"value\":\"djE=\"}},"
		"{\"type\":\"DELETE\",\"kv\":{\"key\":\"L2VzL2I=\",\"mod_revision\":\"9\"}}]}}";
	static const char compacted[] =
		"{\"result\":{\"header\":{\"raft_term\":\"2\"},\"canceled\":true,"
		"\"compact_revision\":\"3\"}}";
	es_etcd_watch_msg m;
	char err[256];

	(void)state;
	assert_int_equal(es_etcd_msg_watch_parse(K(events), &m, err, sizeof(err)), ES_OK);
	assert_int_equal(m.revision, 9);
	assert_int_equal(m.n_events, 2);
	assert_int_equal(m.events[0].type, ES_ETCD_EV_PUT); /* PUT is left out */
	assert_string_equal(m.events[0].kv.value, "v2");
	assert_true(m.events[0].has_prev);
	assert_string_equal(m.events[0].prev_kv.value, "v1");
	assert_int_equal(m.events[1].type, ES_ETCD_EV_DELETE);
	assert_string_equal(m.events[1].kv.key, "/es/b");
	assert_int_equal(m.events[1].kv.mod_revision, 9);
	assert_false(m.events[1].has_prev);
	es_etcd_watch_msg_free(&m);

	assert_int_equal(es_etcd_msg_watch_parse(K(compacted), &m, err, sizeof(err)), ES_OK);
	assert_true(m.canceled);
	assert_int_equal(m.compact_revision, 3);
	assert_int_equal(m.n_events, 0);
	es_etcd_watch_msg_free(&m);

	assert_int_equal(es_etcd_msg_watch_parse(K("{\"result\":{\"events\":[{\"type\":"
						   "\"EXPLODE\",\"kv\":{}}]}}"),
						 &m, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "type"));
	assert_int_equal(es_etcd_msg_watch_parse(K("{\"header\":{}}"), &m, err,
						 sizeof(err)), ES_ERR_PARSE);
}

typedef struct lines {
	int n;
	char got[8][64];
	int stop_at;
} lines;

static int on_line(void *ud, const char *text, size_t n)
{
	lines *l = ud;

	snprintf(l->got[l->n], sizeof(l->got[0]), "%.*s", (int)n, text);
	l->n++;
	return l->stop_at && l->n == l->stop_at;
}

static void test_lines(void **state)
{
	es_buf b;
	lines l;

	(void)state;
	memset(&l, 0, sizeof(l));
	es_buf_init(&b, 16);
	/* a line split over pieces, CRLF, empty lines skipped */
	assert_int_equal(es_etcd_lines_feed(&b, K("{\"a\""), on_line, &l), ES_OK);
	assert_int_equal(l.n, 0);
	assert_int_equal(es_etcd_lines_feed(&b, K(":1}\r\n\n{\"b\":2}\n{\"c"), on_line, &l),
			 ES_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.got[0], "{\"a\":1}");
	assert_string_equal(l.got[1], "{\"b\":2}");
	assert_int_equal(b.len, 3); /* {"c kept */
	/* a stop drops the rest */
	l.stop_at = 3;
	assert_int_equal(es_etcd_lines_feed(&b, K("\"}\nx\n"), on_line, &l), ES_ERR_STATE);
	assert_string_equal(l.got[2], "{\"c\"}");
	assert_int_equal(l.n, 3);
	assert_int_equal(b.len, 0);
	/* one line past the bound */
	es_buf_reset(&b);
	assert_int_equal(es_etcd_lines_feed(&b, K("0123456789abcdefXYZ"), on_line, &l),
			 ES_ERR_TOOBIG);
	es_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_body),
		cmocka_unit_test(test_put_and_lease_bodies),
		cmocka_unit_test(test_watch_body),
		cmocka_unit_test(test_txn_body),
		cmocka_unit_test(test_prefix_end),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test(test_parse_txn_and_lease),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_watch_parse),
		cmocka_unit_test(test_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
