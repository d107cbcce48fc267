/* Unit tests of controller/store/store_etcd_enroll_rec.c: the records of
 * joining on etcd, the rules that decide each call and the
 * compare-and-swap txn they build. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "etcd/etcd_msg.h"
#include "store/store_etcd_enroll.h"

#define SHA "aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11"
#define SHA2 "ff11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11"
#define PIN "sha256:" "bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22"
#define PIN2 "sha256:" "cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33cc33"

static cJSON *rec(es_enr_rec k, const char *text)
{
	char err[256];
	cJSON *o = NULL;

	assert_int_equal(es_store_etcd_enroll_parse(k, text, strlen(text), &o, err,
						    sizeof(err)), ES_OK);
	return o;
}

static void req_init(es_store_etcd_enroll_req *r, es_enr_op op)
{
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->node = strdup("edge-1");
	r->token_id = strdup("abc123");
	r->secret_sha256 = strdup(SHA);
	r->key_pin = strdup(PIN);
	r->serial = strdup("0a0b");
	r->old_serial = strdup("0102");
	r->extra = strdup("");
	r->not_after = 2000;
	r->now = 1000;
	assert_int_equal(es_store_etcd_enroll_keys(r, "/es/"), ES_OK);
}

static const char *token_text(int used, int usages, int expires)
{
	static char b[512];

	snprintf(b, sizeof(b), "{\"secretSha256\":\"" SHA "\",\"expires\":%d,"
		 "\"usages\":%d,\"used\":%d,\"labels\":{\"site\":\"x\"},"
		 "\"namePrefix\":\"edge-\",\"created\":900}", expires, usages, used);
	return b;
}

static void test_parse_refuses_bad_records(void **state)
{
	char err[256];
	cJSON *o = NULL;
	static const char *bad = "{\"secretSha256\":\"x\",\"expires\":\"soon\"}";

	(void)state;
	assert_int_equal(es_store_etcd_enroll_parse(ES_ENR_TOKEN, bad, strlen(bad), &o, err,
						    sizeof(err)), ES_ERR_PROTO);
	assert_null(o);
	assert_non_null(strstr(err, "token"));
	assert_int_equal(es_store_etcd_enroll_parse(ES_ENR_CERT, "[1]", 3, &o, err,
						    sizeof(err)), ES_ERR_PROTO);
	assert_int_equal(es_store_etcd_enroll_parse(ES_ENR_REVOKED,
						    "{\"serials\":[1],\"revoked\":1}", 27,
						    &o, err, sizeof(err)), ES_ERR_PROTO);
	o = rec(ES_ENR_NODE, "{\"keyPin\":\"p\",\"tokenId\":\"t\",\"labels\":{},"
		"\"enrolled\":5,\"later\":true}");
	cJSON_Delete(o);
}

static void test_token_rec_round_trip(void **state)
{
	cJSON *labels = cJSON_Parse("{\"a\":\"b\"}"), *o;
	es_db_token t = { "abc123", SHA, 5000, 3, labels, "edge-", 100 };
	char *text;

	(void)state;
	o = es_store_etcd_enroll_token_rec(&t, 2);
	assert_non_null(o);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	o = rec(ES_ENR_TOKEN, text);
	assert_int_equal(cJSON_GetObjectItem(o, "used")->valuedouble, 2);
	assert_int_equal(cJSON_GetObjectItem(o, "usages")->valuedouble, 3);
	assert_string_equal(cJSON_GetObjectItem(o, "namePrefix")->valuestring, "edge-");
	assert_null(strstr(text, "token\"")); /* never the secret itself */
	free(text);
	cJSON_Delete(o);
	cJSON_Delete(labels);
}

static void test_join_rules(void **state)
{
	es_store_etcd_enroll_req r;
	es_store_etcd_enroll_reads rd = { 0 };
	es_store_etcd_enroll_plan p;
	es_store_enroll_result res;
	int write;

	(void)state;
	req_init(&r, ES_ENR_OP_JOIN);
	/* absent */
	assert_int_equal(es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p), ES_OK);
	assert_int_equal(write, 0);
	assert_int_equal(res.outcome, ES_DB_JOIN_TOKEN_UNKNOWN);
	rd.rec[ES_ENR_TOKEN] = rec(ES_ENR_TOKEN, token_text(0, 1, 1000));
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_JOIN_TOKEN_EXPIRED);
	cJSON_Delete(rd.rec[ES_ENR_TOKEN]);
	rd.rec[ES_ENR_TOKEN] = rec(ES_ENR_TOKEN, token_text(1, 1, 5000));
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_JOIN_TOKEN_USED_UP);
	cJSON_Delete(rd.rec[ES_ENR_TOKEN]);
	rd.rec[ES_ENR_TOKEN] = rec(ES_ENR_TOKEN, token_text(0, 1, 5000));
	rd.rec[ES_ENR_NODE] = rec(ES_ENR_NODE, "{\"keyPin\":\"" PIN2 "\",\"tokenId\":\"t\","
				  "\"labels\":{},\"enrolled\":5}");
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_JOIN_NAME_TAKEN);
	assert_int_equal(write, 0);
	es_store_etcd_enroll_reads_free(&rd);
	free(r.node);
	r.node = strdup("db-1");
	rd.rec[ES_ENR_TOKEN] = rec(ES_ENR_TOKEN, token_text(0, 1, 5000));
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_JOIN_NAME_PREFIX);
	/* a wrong secret */
	free(r.secret_sha256);
	r.secret_sha256 = strdup(SHA2);
	free(r.node);
	r.node = strdup("edge-1");
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_JOIN_TOKEN_UNKNOWN);
	es_store_etcd_enroll_reads_free(&rd);
	es_store_etcd_enroll_req_free(&r);
}

/* The join's txn: every record compared at the mod_revision read, the
 * token's use counted, the node bound to the key, the certificate new. */
static void test_join_txn(void **state)
{
	es_store_etcd_enroll_req r;
	es_store_etcd_enroll_reads rd = { 0 };
	es_store_etcd_enroll_plan p;
	es_store_enroll_result res;
	es_etcd_txn t;
	cJSON *body, *o;
	char *text;
	es_err rc;
	int write;

	(void)state;
	req_init(&r, ES_ENR_OP_JOIN);
	assert_string_equal(r.key[ES_ENR_TOKEN], "/es/tokens/abc123");
	assert_string_equal(r.key[ES_ENR_NODE], "/es/enrollments/edge-1");
	assert_string_equal(r.key[ES_ENR_CERT], "/es/certs/edge-1/0a0b");
	assert_null(r.key[ES_ENR_OLD_CERT]);
	rd.rec[ES_ENR_TOKEN] = rec(ES_ENR_TOKEN, token_text(1, 2, 5000));
	rd.mod[ES_ENR_TOKEN] = 41;
	assert_int_equal(es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p), ES_OK);
	assert_int_equal(write, 1);
	assert_int_equal(res.outcome, ES_DB_JOIN_OK);
	assert_string_equal(cJSON_GetObjectItem(res.labels, "site")->valuestring, "x");
	assert_int_equal(p.n_cmp, 3);
	assert_string_equal(p.cmp_key[0], "/es/tokens/abc123");
	assert_int_equal(p.cmp_mod[0], 41);
	assert_int_equal(p.cmp_mod[1], 0); /* the node: absent */
	assert_int_equal(p.cmp_mod[2], 0); /* the certificate: absent */
	assert_int_equal(p.n_w, 3);
	o = rec(ES_ENR_TOKEN, p.w_value[0]);
	assert_int_equal(cJSON_GetObjectItem(o, "used")->valuedouble, 2);
	cJSON_Delete(o);
	o = rec(ES_ENR_NODE, p.w_value[1]);
	assert_string_equal(cJSON_GetObjectItem(o, "keyPin")->valuestring, PIN);
	assert_string_equal(cJSON_GetObjectItem(o, "tokenId")->valuestring, "abc123");
	cJSON_Delete(o);
	o = rec(ES_ENR_CERT, p.w_value[2]);
	assert_int_equal(cJSON_GetObjectItem(o, "notAfter")->valuedouble, 2000);
	cJSON_Delete(o);

	assert_int_equal(es_etcd_txn_init(&t), ES_OK);
	assert_int_equal(es_store_etcd_enroll_plan_txn(&r, &p, &t), ES_OK);
	text = es_etcd_msg_txn_body(&t, &rc);
	assert_non_null(text);
	body = cJSON_Parse(text);
	free(text);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(body, "compare")), 3);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(body, "compare"), 0);
	assert_string_equal(cJSON_GetObjectItem(o, "target")->valuestring, "MOD");
	assert_string_equal(cJSON_GetObjectItem(o, "mod_revision")->valuestring, "41");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(body, "success")), 3);
	/* on failure: the three records read again */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(body, "failure")), 3);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(body, "failure"), 0), "request_range"));
	cJSON_Delete(body);
	es_etcd_txn_free(&t);
	es_store_etcd_enroll_plan_free(&p);

	/* The certificate of this join is there: it was applied (an answer
	 * lost), nothing is written again. */
	rd.rec[ES_ENR_CERT] = rec(ES_ENR_CERT, "{\"keyPin\":\"" PIN "\",\"notAfter\":2000,"
				  "\"issued\":1000}");
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(write, 0);
	assert_int_equal(res.outcome, ES_DB_JOIN_OK);
	es_store_etcd_enroll_reads_free(&rd);
	es_store_etcd_enroll_req_free(&r);
}

static void test_renewals(void **state)
{
	es_store_etcd_enroll_req r;
	es_store_etcd_enroll_reads rd = { 0 };
	es_store_etcd_enroll_plan p;
	es_store_enroll_result res;
	cJSON *o;
	int write;

	(void)state;
	req_init(&r, ES_ENR_OP_RENEW);
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_RENEW_NOT_ISSUED);
	rd.rec[ES_ENR_OLD_CERT] = rec(ES_ENR_CERT, "{\"keyPin\":\"" PIN "\",\"notAfter\":9,"
				      "\"issued\":1}");
	rd.mod[ES_ENR_OLD_CERT] = 7;
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_RENEW_REVOKED); /* not enrolled */
	rd.rec[ES_ENR_NODE] = rec(ES_ENR_NODE, "{\"keyPin\":\"" PIN2 "\",\"tokenId\":\"t\","
				  "\"labels\":{},\"enrolled\":5}");
	rd.mod[ES_ENR_NODE] = 8;
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_RENEW_KEY_MISMATCH);
	rd.rec[ES_ENR_REVOKED] = rec(ES_ENR_REVOKED, "{\"serials\":[\"0102\"],\"revoked\":3}");
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_RENEW_REVOKED);
	es_store_etcd_enroll_req_free(&r);

	/* Over the session: a valid old serial binds the node to the new key
	 * in the same txn as the certificate. */
	req_init(&r, ES_ENR_OP_CERT_RENEW);
	cJSON_Delete(rd.rec[ES_ENR_REVOKED]);
	rd.rec[ES_ENR_REVOKED] = NULL;
	assert_int_equal(es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p), ES_OK);
	assert_int_equal(res.outcome, ES_DB_CERT_VALID);
	assert_int_equal(write, 1);
	assert_int_equal(p.n_cmp, 4);
	assert_int_equal(p.n_w, 2);
	assert_string_equal(p.w_key[0], "/es/enrollments/edge-1");
	o = rec(ES_ENR_NODE, p.w_value[0]);
	assert_string_equal(cJSON_GetObjectItem(o, "keyPin")->valuestring, PIN);
	cJSON_Delete(o);
	assert_string_equal(p.w_key[1], "/es/certs/edge-1/0a0b");
	es_store_etcd_enroll_plan_free(&p);
	es_store_etcd_enroll_reads_free(&rd);
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.outcome, ES_DB_CERT_UNKNOWN);
	assert_int_equal(write, 0);
	es_store_etcd_enroll_req_free(&r);
}

static void test_revoke(void **state)
{
	es_store_etcd_enroll_req r;
	es_store_etcd_enroll_reads rd = { 0 };
	es_store_etcd_enroll_plan p;
	es_store_enroll_result res;
	cJSON *o;
	int write;

	(void)state;
	req_init(&r, ES_ENR_OP_REVOKE);
	assert_string_equal(r.key[ES_ENR_CERTS], "/es/certs/edge-1/");
	assert_int_equal(r.certs_end_len, strlen("/es/certs/edge-10"));
	/* Nothing known: nothing written, count 0 (the admin answers 404). */
	rd.certs = cJSON_CreateArray();
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(write, 0);
	assert_int_equal(res.count, 0);
	/* Two certificates, one revoked before, and a session's serial. */
	cJSON_AddItemToArray(rd.certs, cJSON_CreateString("01"));
	cJSON_AddItemToArray(rd.certs, cJSON_CreateString("02"));
	rd.rec[ES_ENR_REVOKED] = rec(ES_ENR_REVOKED, "{\"serials\":[\"01\"],\"revoked\":3}");
	rd.mod[ES_ENR_REVOKED] = 12;
	rd.rec[ES_ENR_NODE] = rec(ES_ENR_NODE, "{\"keyPin\":\"" PIN "\",\"tokenId\":\"t\","
				  "\"labels\":{},\"enrolled\":5}");
	rd.mod[ES_ENR_NODE] = 13;
	free(r.extra);
	r.extra = strdup("ff");
	assert_int_equal(es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p), ES_OK);
	assert_int_equal(write, 1);
	assert_int_equal(res.count, 2);
	assert_int_equal(p.n_cmp, 2);
	assert_int_equal(p.cmp_mod[0], 13);
	assert_int_equal(p.cmp_mod[1], 12);
	assert_int_equal(p.n_w, 2);
	assert_string_equal(p.w_key[0], "/es/revoked/edge-1");
	o = rec(ES_ENR_REVOKED, p.w_value[0]);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "serials")), 3);
	assert_int_equal(cJSON_GetObjectItem(o, "revoked")->valuedouble, 1000);
	cJSON_Delete(o);
	assert_string_equal(p.w_key[1], "/es/enrollments/edge-1");
	assert_null(p.w_value[1]); /* deleted: the name may join again */
	es_store_etcd_enroll_plan_free(&p);
	es_store_etcd_enroll_reads_free(&rd);
	es_store_etcd_enroll_req_free(&r);
}

static void test_tokens(void **state)
{
	es_store_etcd_enroll_req r;
	es_store_etcd_enroll_reads rd = { 0 };
	es_store_etcd_enroll_plan p;
	es_store_enroll_result res;
	int write;

	(void)state;
	req_init(&r, ES_ENR_OP_TOKEN_CREATE);
	r.token = rec(ES_ENR_TOKEN, token_text(0, 1, 5000));
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(write, 1);
	assert_int_equal(p.n_cmp, 1);
	assert_int_equal(p.cmp_mod[0], 0); /* only when the id is free */
	es_store_etcd_enroll_plan_free(&p);
	rd.rec[ES_ENR_TOKEN] = rec(ES_ENR_TOKEN, token_text(0, 1, 5000));
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(write, 0);
	assert_int_equal(res.rc, ES_OK); /* this create's own secret: applied */
	free(r.secret_sha256);
	r.secret_sha256 = strdup(SHA2);
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.rc, ES_ERR_EXISTS);
	es_store_etcd_enroll_req_free(&r);
	req_init(&r, ES_ENR_OP_TOKEN_DELETE);
	rd.mod[ES_ENR_TOKEN] = 5;
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(write, 1);
	assert_int_equal(p.cmp_mod[0], 5);
	assert_null(p.w_value[0]);
	es_store_etcd_enroll_plan_free(&p);
	es_store_etcd_enroll_reads_free(&rd);
	es_store_etcd_enroll_decide(&r, &rd, &write, &res, &p);
	assert_int_equal(res.rc, ES_ERR_NOTFOUND);
	es_store_etcd_enroll_req_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_refuses_bad_records),
		cmocka_unit_test(test_token_rec_round_trip),
		cmocka_unit_test(test_join_rules),
		cmocka_unit_test(test_join_txn),
		cmocka_unit_test(test_renewals),
		cmocka_unit_test(test_revoke),
		cmocka_unit_test(test_tokens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
