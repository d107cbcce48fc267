/*
 * test_enroll.c - joining at the controller: token shape and hashes, CA
 * pins (lib/es_enroll.c), `ca init` and signing requests (controller/ca/),
 * and the enrollment records of the store (controller/store/db_enroll.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>
#include <mbedtls/x509_csr.h>

#include "api/admin.h"
#include "ca/ca.h"
#include "es_enroll.h"
#include "es_json.h"
#include "es_pki.h"
#include "store/db.h"
#include "store/db_enroll.h"
#include "testutil.h"

#define TD "edgesync.local"

static void token_shape(void **state)
{
	char tok[ES_ENROLL_TOKEN_SZ], tok2[ES_ENROLL_TOKEN_SZ], id[8], sec[20], err[256];

	(void)state;
	assert_int_equal(es_enroll_token_new(tok), ES_OK);
	assert_int_equal(es_enroll_token_new(tok2), ES_OK);
	assert_string_not_equal(tok, tok2);
	assert_int_equal(strlen(tok), 23);
	assert_int_equal(tok[6], '.');
	assert_int_equal(es_enroll_token_split(tok, id, sec, err, sizeof(err)), ES_OK);
	assert_true(es_enroll_token_id_valid(id));
	assert_int_equal(strlen(sec), 16);
	assert_int_equal(strspn(sec, "abcdefghijklmnopqrstuvwxyz0123456789"), 16);
	/* kubeadm's examples. */
	assert_int_equal(es_enroll_token_split("abcdef.0123456789abcdef", id, sec, err,
					       sizeof(err)), ES_OK);
	assert_string_equal(id, "abcdef");
	assert_int_equal(es_enroll_token_split("ABCDEF.0123456789abcdef", id, sec, err,
					       sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_enroll_token_split("abcde.0123456789abcdefg", id, sec, err,
					       sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "6 and 16"));
	assert_int_equal(es_enroll_token_split("abcdef0123456789abcdef", id, sec, err,
					       sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_enroll_token_split("", id, sec, err, sizeof(err)), ES_ERR_INVAL);
	assert_true(es_enroll_equal("abc", "abc"));
	assert_false(es_enroll_equal("abc", "abd"));
	assert_false(es_enroll_equal("abc", "abcd"));
}

static void sha256_and_pin_parse(void **state)
{
	char hex[ES_ENROLL_HEX_SZ], pin[ES_ENROLL_PIN_SZ], err[256];

	(void)state;
	assert_int_equal(es_enroll_sha256_hex("abc", 3, hex), ES_OK);
	/* FIPS 180-2, appendix B.1. */
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(es_enroll_pin_parse("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
					     pin, err, sizeof(err)), ES_OK);
	assert_string_equal(pin + 7, hex);
	assert_int_equal(es_enroll_pin_parse("ba7816bf", pin, err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_enroll_pin_parse("sha256:ba7816bf", pin, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "expected 64"));
	assert_int_equal(es_enroll_pin_parse("sha256:zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
					     pin, err, sizeof(err)), ES_ERR_INVAL);
}

typedef struct fx {
	char dir[64];
	char crt[128], key[128], db[128];
	es_ca *ca;
	es_db *sdb;
	char pin[ES_ENROLL_PIN_SZ];
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char err[512];

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "test-enroll", f->crt, sizeof(f->crt),
		       "ca.crt");
	snprintf(f->key, sizeof(f->key), "%s/ca.key", f->dir);
	snprintf(f->db, sizeof(f->db), "%s/controller.db", f->dir);
	assert_int_equal(es_ca_create(f->crt, f->key, TD, f->pin, err, sizeof(err)), ES_OK);
	assert_int_equal(es_ca_open(f->crt, f->key, &f->ca, err, sizeof(err)), ES_OK);
	assert_int_equal(es_db_open(f->db, &f->sdb, err, sizeof(err)), ES_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	int rc;

	es_ca_free(f->ca);
	es_db_close(f->sdb);
	rc = es_test_rmtree(f->dir);
	free(f);
	return rc;
}

static void ca_init_files(void **state)
{
	fx *f = *state;
	struct stat st;
	char err[512], pin[ES_ENROLL_PIN_SZ];
	char *before = es_test_slurp(f->key, NULL);

	assert_int_equal(stat(f->key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_string_equal(es_ca_pin(f->ca), f->pin);
	assert_int_equal(es_enroll_key_pin(es_ca_cert_pem(f->ca), pin), ES_OK);
	assert_string_equal(pin, f->pin);
	/* Never overwritten. */
	assert_int_equal(es_ca_create(f->crt, f->key, TD, NULL, err, sizeof(err)), ES_ERR_EXISTS);
	assert_non_null(strstr(err, "never overwritten"));
	es_test_assert_file_bytes(f->key, before, strlen(before));
	free(before);
	/* A certificate that cannot be written leaves no key behind (a retry
	 * would say "exists already"), and the error names the file. */
	{
		char key2[160];

		snprintf(key2, sizeof(key2), "%s/k2.key", f->dir);
		assert_int_equal(es_ca_create("/nonexistent-dir/ca.crt", key2, TD, NULL,
					      err, sizeof(err)), ES_ERR_IO);
		assert_non_null(strstr(err, "cannot write /nonexistent-dir/ca.crt"));
		assert_int_equal(access(key2, F_OK), -1);
	}
}

static void ca_open_refuses(void **state)
{
	fx *f = *state;
	char err[512], other_crt[160], other_key[160];
	es_ca *ca = NULL;

	snprintf(other_crt, sizeof(other_crt), "%s/o.crt", f->dir);
	snprintf(other_key, sizeof(other_key), "%s/o.key", f->dir);
	assert_int_equal(es_ca_create(other_crt, other_key, TD, NULL, err, sizeof(err)), ES_OK);
	assert_int_equal(es_ca_open(f->crt, other_key, &ca, err, sizeof(err)), ES_ERR_PARSE);
	assert_null(ca);
	assert_non_null(strstr(err, "is not the key of"));
	assert_int_equal(es_ca_open("/nonexistent/ca.crt", f->key, &ca, err, sizeof(err)),
			 ES_ERR_IO);
	assert_non_null(strstr(err, "/nonexistent/ca.crt"));
	assert_int_equal(es_ca_open(f->key, f->key, &ca, err, sizeof(err)), ES_ERR_PARSE);
}

/* Signs a fresh request and checks the leaf's X509-SVID properties. */
static void sign_leaf(void **state)
{
	fx *f = *state;
	char *key = NULL, *csr = NULL, err[512], name[256], kpin[ES_ENROLL_PIN_SZ];
	es_ca_issued iss;
	mbedtls_x509_crt crt;
	mbedtls_x509_csr req;
	time_t now = time(NULL);
	uint32_t flags = 0;

	assert_int_equal(es_enroll_key_new(&key, err, sizeof(err)), ES_OK);
	assert_int_equal(es_enroll_csr_new(key, "edge-1", &csr, err, sizeof(err)), ES_OK);
	/* The request carries a public key only. */
	assert_null(strstr(csr, "PRIVATE"));
	mbedtls_x509_csr_init(&req);
	assert_int_equal(mbedtls_x509_csr_parse(&req, (const unsigned char *)csr,
						strlen(csr) + 1), 0);
	mbedtls_x509_csr_free(&req);
	assert_int_equal(es_ca_sign(f->ca, csr, TD, "edge-1", 3600, now, &iss, err,
				    sizeof(err)), ES_OK);
	assert_int_equal(strlen(iss.serial), 32);
	assert_int_equal(iss.not_after, now + 3600);
	assert_int_equal(es_enroll_key_pin(key, kpin), ES_OK);
	assert_string_equal(iss.key_pin, kpin);

	mbedtls_x509_crt_init(&crt);
	assert_int_equal(mbedtls_x509_crt_parse(&crt, (const unsigned char *)iss.cert_pem,
						strlen(iss.cert_pem) + 1), 0);
	assert_int_equal(es_pki_check_peer(crt.raw.p, crt.raw.len, TD, ES_ID_NODE, name,
					   sizeof(name), err, sizeof(err)), ES_OK);
	assert_string_equal(name, "edge-1");
	assert_false(crt.MBEDTLS_PRIVATE(ca_istrue));
	{
		mbedtls_x509_crt ca;

		mbedtls_x509_crt_init(&ca);
		assert_int_equal(mbedtls_x509_crt_parse_file(&ca, f->crt), 0);
		assert_int_equal(mbedtls_x509_crt_verify(&crt, &ca, NULL, NULL, &flags,
							 NULL, NULL), 0);
		mbedtls_x509_crt_free(&ca);
	}
	mbedtls_x509_crt_free(&crt);
	es_ca_issued_free(&iss);

	/* Lifetime bounds and names. */
	assert_int_equal(es_ca_sign(f->ca, csr, TD, "edge-1", ES_CA_LIFETIME_MIN - 1, now, &iss, err,
				    sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "lifetime"));
	assert_int_equal(es_ca_sign(f->ca, csr, TD, "Edge_1", 3600, now, &iss, err,
				    sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_ca_sign(f->ca, "not a csr", TD, "edge-1", 3600, now, &iss,
				    err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "PKCS#10"));
	assert_null(iss.cert_pem);
	free(csr);
	explicit_bzero(key, strlen(key));
	free(key);
}

/* A request whose signed part was changed no longer verifies: refused. */
static void sign_refuses_forged_request(void **state)
{
	fx *f = *state;
	char *k1 = NULL, *c1 = NULL, err[512], *p;
	es_ca_issued iss;

	assert_int_equal(es_enroll_key_new(&k1, err, sizeof(err)), ES_OK);
	assert_int_equal(es_enroll_csr_new(k1, "edge-1", &c1, err, sizeof(err)), ES_OK);
	/* A byte inside the subject's name (base64 of the CN). */
	p = c1 + strlen("-----BEGIN CERTIFICATE REQUEST-----\n") + 40;
	*p = *p == 'A' ? 'B' : 'A';
	assert_int_equal(es_ca_sign(f->ca, c1, TD, "edge-1", 3600, time(NULL), &iss, err,
				    sizeof(err)), ES_ERR_INVAL);
	assert_null(iss.cert_pem);
	free(c1);
	free(k1);
}

static void db_tokens(void **state)
{
	fx *f = *state;
	cJSON *labels = es_test_json("{\"site\":\"berlin\"}"), *list = NULL, *got = NULL;
	char hex[ES_ENROLL_HEX_SZ], bad[ES_ENROLL_HEX_SZ];
	time_t now = 1700000000;
	es_db_token t = { "abcdef", hex, now + 3600, 2, labels, "edge-", now };
	es_db_join j = { "abcdef", hex, "edge-1", "sha256:k1", "01", now + 86400 };
	es_db_join_result res;
	es_db_cert_status cs;
	int64_t n;

	assert_int_equal(es_enroll_sha256_hex("0123456789abcdef", 16, hex), ES_OK);
	assert_int_equal(es_enroll_sha256_hex("0123456789abcdeX", 16, bad), ES_OK);
	assert_int_equal(es_db_token_create(f->sdb, &t), ES_OK);
	assert_int_equal(es_db_token_create(f->sdb, &t), ES_ERR_EXISTS);
	/* Inside a report batch whose transaction is open (a desiredAck
	 * stored), token and enrollment writes still go through. */
	{
		es_db_token t2 = t;
		int64_t acked;
		int changed;

		t2.id = "bcdefg";
		es_db_batch_begin(f->sdb);
		assert_int_equal(es_db_node_hello(f->sdb, "edge-9", NULL, "v", "b", now,
						  &acked, &changed), ES_OK);
		assert_int_equal(es_db_node_desired_ack(f->sdb, "edge-9", 1, now), ES_OK);
		assert_int_equal(es_db_token_create(f->sdb, &t2), ES_OK);
		assert_int_equal(es_db_token_delete(f->sdb, "bcdefg"), ES_OK);
		assert_int_equal(es_db_batch_commit(f->sdb), ES_OK);
	}
	assert_int_equal(es_db_token_list(f->sdb, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "id")->valuestring,
			    "abcdef");
	/* The hash is never shown. */
	{
		char *txt = es_json_print(list);

		assert_null(strstr(txt, hex));
		free(txt);
	}
	cJSON_Delete(list);

	/* Wrong secret, outside the prefix. */
	j.secret_sha256 = bad;
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_TOKEN_UNKNOWN);
	j.secret_sha256 = hex;
	j.node = "db-1";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_NAME_PREFIX);
	/* Good; the labels come with it. */
	j.node = "edge-1";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, &got), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_OK);
	assert_string_equal(cJSON_GetObjectItem(got, "site")->valuestring, "berlin");
	cJSON_Delete(got);
	assert_int_equal(es_db_cert_state(f->sdb, "01", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_VALID);
	assert_int_equal(es_db_cert_state(f->sdb, "01", "edge-2", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_REVOKED);
	assert_int_equal(es_db_cert_state(f->sdb, "99", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	/* A second key for the same name. */
	j.key_pin = "sha256:k2";
	j.serial = "02";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_NAME_TAKEN);
	/* A second node uses the token up. */
	j.node = "edge-2";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_OK);
	j.node = "edge-3";
	j.serial = "03";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_TOKEN_USED_UP);
	assert_int_equal(es_db_cert_state(f->sdb, "03", "edge-3", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	/* Expired. */
	assert_int_equal(es_db_join_record(f->sdb, &j, now + 3600, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_TOKEN_EXPIRED);

	/* Revoking edge-1 frees its name for another key. */
	assert_int_equal(es_db_node_revoke(f->sdb, "edge-1", "aa", now, &n), ES_OK);
	assert_int_equal(n, 2);
	assert_int_equal(es_db_cert_state(f->sdb, "01", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_REVOKED);
	assert_int_equal(es_db_cert_state(f->sdb, "aa", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_REVOKED);
	assert_int_equal(es_db_enroll_labels(f->sdb, "edge-1", &got), ES_OK);
	assert_null(got->child);
	cJSON_Delete(got);

	assert_int_equal(es_db_token_delete(f->sdb, "abcdef"), ES_OK);
	assert_int_equal(es_db_token_delete(f->sdb, "abcdef"), ES_ERR_NOTFOUND);
	j.node = "edge-1";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_TOKEN_UNKNOWN);
	cJSON_Delete(labels);
}

/* Renewal over the session (es_db_cert_renew): only from a serial valid
 * for the node; the new serial recorded and the name bound to the new key,
 * so that a join with the old key is NameTaken. */
static void db_cert_renew(void **state)
{
	fx *f = *state;
	char hex[ES_ENROLL_HEX_SZ];
	time_t now = 1700000000;
	es_db_token t = { "abcdef", hex, now + 3600, 5, NULL, "", now };
	es_db_join j = { "abcdef", hex, "edge-1", "sha256:k1", "01", now + 86400 };
	es_db_join_result res;
	es_db_cert_status cs;
	cJSON *labels = es_test_json("{}");
	int64_t n;

	t.labels = labels;
	assert_int_equal(es_enroll_sha256_hex("0123456789abcdef", 16, hex), ES_OK);
	assert_int_equal(es_db_token_create(f->sdb, &t), ES_OK);
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_OK);
	/* A serial never issued, or issued to another node: nothing written. */
	assert_int_equal(es_db_cert_renew(f->sdb, "edge-1", "99", "02", "sha256:k2",
					  now + 100, now, &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	assert_int_equal(es_db_cert_renew(f->sdb, "edge-2", "01", "02", "sha256:k2",
					  now + 100, now, &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_REVOKED);
	assert_int_equal(es_db_cert_state(f->sdb, "02", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	/* Renewed with a new key; inside an open report batch too. */
	es_db_batch_begin(f->sdb);
	assert_int_equal(es_db_cert_renew(f->sdb, "edge-1", "01", "02", "sha256:k2",
					  now + 100, now, &cs), ES_OK);
	assert_int_equal(es_db_batch_commit(f->sdb), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_VALID);
	assert_int_equal(es_db_cert_state(f->sdb, "02", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_VALID);
	/* The old key may not join under the name any more; the new one may. */
	j.serial = "03";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_NAME_TAKEN);
	j.key_pin = "sha256:k2";
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_OK);
	/* Revocation covers the renewed certificates. */
	assert_int_equal(es_db_node_revoke(f->sdb, "edge-1", NULL, now, &n), ES_OK);
	assert_int_equal(n, 3);
	assert_int_equal(es_db_cert_renew(f->sdb, "edge-1", "02", "04", "sha256:k3",
					  now + 100, now, &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_REVOKED);
	assert_int_equal(es_db_cert_state(f->sdb, "04", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	cJSON_Delete(labels);
}

/* One admin request; *out gets the parsed body (caller frees). */
static int admin(es_db *db, const es_admin_hooks *h, const char *method,
		 const char *path, const char *body, cJSON **out)
{
	es_admin_resp resp;

	assert_int_equal(es_admin_handle(db, h, method, path, NULL, body,
					 body ? strlen(body) : 0, "test", &resp), ES_OK);
	*out = es_test_json(resp.body);
	free(resp.body);
	return resp.status;
}

#define TOKENS "/apis/edgesync.io/v1alpha1/bootstraptokens"

static void admin_tokens(void **state)
{
	fx *f = *state;
	es_admin_hooks h = { NULL, NULL, "sha256:abc", "wss://c:7443", NULL };
	cJSON *v = NULL, *l = NULL;
	char id[8], sec[20], err[256], hex[ES_ENROLL_HEX_SZ], path[128], *txt;
	es_db_join_result res;
	es_db_join j;

	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS,
			       "{\"ttlSeconds\":600,\"usages\":2,\"namePrefix\":\"edge-\","
			       "\"labels\":{\"site\":\"berlin\"}}", &v), 201);
	assert_string_equal(cJSON_GetObjectItem(v, "caHash")->valuestring, "sha256:abc");
	assert_string_equal(cJSON_GetObjectItem(v, "controllerURL")->valuestring,
			    "wss://c:7443");
	assert_int_equal(es_enroll_token_split(cJSON_GetObjectItem(v, "token")->valuestring,
					       id, sec, err, sizeof(err)), ES_OK);
	assert_string_equal(cJSON_GetObjectItem(v, "id")->valuestring, id);
	cJSON_Delete(v);

	/* The list never holds the secret; the store its hash only, which a
	 * join with the secret matches. */
	assert_int_equal(admin(f->sdb, &h, "GET", TOKENS, NULL, &l), 200);
	txt = es_json_print(l);
	assert_null(strstr(txt, sec));
	assert_int_equal((int)cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "items"), 0), "usages")->valuedouble, 2);
	free(txt);
	cJSON_Delete(l);
	assert_int_equal(es_enroll_sha256_hex(sec, strlen(sec), hex), ES_OK);
	j = (es_db_join){ id, hex, "edge-7", "sha256:k", "0a", time(NULL) + 60 };
	assert_int_equal(es_db_join_record(f->sdb, &j, time(NULL), &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_OK);

	/* Refusals name the field. */
	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS, "{\"ttlSeconds\":5}", &v), 422);
	assert_non_null(strstr(cJSON_GetObjectItem(v, "message")->valuestring, "ttlSeconds"));
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS, "{\"usages\":0}", &v), 422);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS, "{\"namePrefix\":\"-x\"}", &v), 422);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS, "{\"labels\":{\"a b\":\"x\"}}", &v),
			 422);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS, "{\"secret\":\"x\"}", &v), 422);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "POST", TOKENS, "[]", &v), 400);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "PUT", TOKENS, "{}", &v), 405);
	cJSON_Delete(v);

	snprintf(path, sizeof(path), TOKENS "/%s", id);
	assert_int_equal(admin(f->sdb, &h, "DELETE", path, NULL, &v), 200);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "DELETE", path, NULL, &v), 404);
	cJSON_Delete(v);
	assert_int_equal(admin(f->sdb, &h, "DELETE", TOKENS "/BAD", NULL, &v), 404);
	cJSON_Delete(v);
	/* A deleted token lets nobody join. */
	j.node = "edge-8";
	assert_int_equal(es_db_join_record(f->sdb, &j, time(NULL), &res, NULL), ES_OK);
	assert_int_equal(res, ES_DB_JOIN_TOKEN_UNKNOWN);
}

/* The renewal window (PROTOCOL.md "Renewal of an expired certificate"):
 * valid, not yet valid, inside the grace (its last second included), past
 * it, and grace 0 (off). */
static void cert_phase(void **state)
{
	const time_t nb = 1000, na = 2000;

	(void)state;
	assert_int_equal(es_enroll_cert_phase(nb, na, 999, 0), ES_ENROLL_NOT_YET_VALID);
	assert_int_equal(es_enroll_cert_phase(nb, na, 1000, 0), ES_ENROLL_VALID);
	assert_int_equal(es_enroll_cert_phase(nb, na, 2000, 0), ES_ENROLL_VALID);
	assert_int_equal(es_enroll_cert_phase(nb, na, 2001, 0), ES_ENROLL_PAST_GRACE);
	assert_int_equal(es_enroll_cert_phase(nb, na, 2001, 100), ES_ENROLL_IN_GRACE);
	assert_int_equal(es_enroll_cert_phase(nb, na, 2100, 100), ES_ENROLL_IN_GRACE);
	assert_int_equal(es_enroll_cert_phase(nb, na, 2101, 100), ES_ENROLL_PAST_GRACE);
	assert_int_equal(es_enroll_cert_phase(nb, na, 2001, -5), ES_ENROLL_PAST_GRACE);
	assert_int_equal(es_enroll_cert_phase(nb, na, na + ES_ENROLL_GRACE_DEFAULT,
					      ES_ENROLL_GRACE_DEFAULT), ES_ENROLL_IN_GRACE);
	assert_int_equal(es_enroll_cert_phase(nb, na, na + ES_ENROLL_GRACE_DEFAULT + 1,
					      ES_ENROLL_GRACE_DEFAULT), ES_ENROLL_PAST_GRACE);
}

/* An expired certificate of this CA is accepted for renewal with its
 * serial, node, key and dates; one of another CA, garbage and a CA are
 * not. */
static void presented_expired(void **state)
{
	fx *f = *state;
	char *key = NULL, *csr = NULL, err[512], ocrt[160], okey[160], kpin[ES_ENROLL_PIN_SZ];
	es_ca_issued iss;
	es_ca_presented p;
	es_ca *other = NULL;
	time_t then = time(NULL) - 7200;

	assert_int_equal(es_enroll_key_new(&key, err, sizeof(err)), ES_OK);
	assert_int_equal(es_enroll_csr_new(key, "edge-1", &csr, err, sizeof(err)), ES_OK);
	assert_int_equal(es_enroll_key_pin(key, kpin), ES_OK);
	assert_int_equal(es_ca_sign(f->ca, csr, TD, "edge-1", 3600, then, &iss, err,
				    sizeof(err)), ES_OK);
	assert_int_equal(es_ca_check_presented(f->ca, iss.cert_pem, TD, &p, err, sizeof(err)),
			 ES_OK);
	assert_string_equal(p.node, "edge-1");
	assert_string_equal(p.serial, iss.serial);
	assert_string_equal(p.key_pin, kpin);
	assert_int_equal(p.not_after, then + 3600);
	assert_int_equal(p.not_before, then - 300);
	/* Expired an hour ago: in a grace of two hours (one hour would be
	 * passed as soon as a second ticks, as under qemu). */
	assert_int_equal(es_enroll_cert_phase(p.not_before, p.not_after, time(NULL), 7200),
			 ES_ENROLL_IN_GRACE);
	/* Another trust domain. */
	assert_int_equal(es_ca_check_presented(f->ca, iss.cert_pem, "other.example", &p, err,
					       sizeof(err)), ES_ERR_AUTH);
	es_ca_issued_free(&iss);

	snprintf(ocrt, sizeof(ocrt), "%s/o.crt", f->dir);
	snprintf(okey, sizeof(okey), "%s/o.key", f->dir);
	assert_int_equal(es_ca_create(ocrt, okey, TD, NULL, err, sizeof(err)), ES_OK);
	assert_int_equal(es_ca_open(ocrt, okey, &other, err, sizeof(err)), ES_OK);
	assert_int_equal(es_ca_sign(other, csr, TD, "edge-1", 3600, then, &iss, err,
				    sizeof(err)), ES_OK);
	assert_int_equal(es_ca_check_presented(f->ca, iss.cert_pem, TD, &p, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "not signed by this controller's signing CA"));
	assert_string_equal(p.serial, "");
	es_ca_issued_free(&iss);
	es_ca_free(other);

	assert_int_equal(es_ca_check_presented(f->ca, "not a certificate", TD, &p, err,
					       sizeof(err)), ES_ERR_PARSE);
	assert_int_equal(es_ca_check_presented(f->ca, "", TD, &p, err, sizeof(err)),
			 ES_ERR_PARSE);
	/* The CA itself is no node. */
	assert_int_equal(es_ca_check_presented(f->ca, es_ca_cert_pem(f->ca), TD, &p, err,
					       sizeof(err)), ES_ERR_AUTH);
	free(csr);
	explicit_bzero(key, strlen(key));
	free(key);
}

/* es_db_renew_record: the serial issued to the node for the key, not
 * revoked, the node enrolled; the new certificate recorded. */
static void db_renew_record(void **state)
{
	fx *f = *state;
	char hex[ES_ENROLL_HEX_SZ];
	time_t now = 1700000000;
	es_db_token t = { "abcdef", hex, now + 3600, 3, NULL, "", now };
	es_db_join j = { "abcdef", hex, "edge-1", "sha256:k1", "01", now + 60 };
	es_db_renew r = { "edge-1", "01", "sha256:k1", "02", now + 200 };
	es_db_join_result jr;
	es_db_renew_result res;
	es_db_cert_status cs;
	int64_t n;

	t.labels = es_test_json("{}");
	assert_int_equal(es_enroll_sha256_hex("0123456789abcdef", 16, hex), ES_OK);
	assert_int_equal(es_db_token_create(f->sdb, &t), ES_OK);
	assert_int_equal(es_db_join_record(f->sdb, &j, now, &jr, NULL), ES_OK);
	assert_int_equal(jr, ES_DB_JOIN_OK);

	/* Not issued: an unknown serial, or another node's. */
	r.old_serial = "99";
	assert_int_equal(es_db_renew_record(f->sdb, &r, now + 100, &res), ES_OK);
	assert_int_equal(res, ES_DB_RENEW_NOT_ISSUED);
	r.old_serial = "01";
	r.node = "edge-2";
	assert_int_equal(es_db_renew_record(f->sdb, &r, now + 100, &res), ES_OK);
	assert_int_equal(res, ES_DB_RENEW_NOT_ISSUED);
	r.node = "edge-1";
	/* Another key. */
	r.key_pin = "sha256:k2";
	assert_int_equal(es_db_renew_record(f->sdb, &r, now + 100, &res), ES_OK);
	assert_int_equal(res, ES_DB_RENEW_KEY_MISMATCH);
	assert_int_equal(es_db_cert_state(f->sdb, "02", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	/* Good: the new serial is the node's. */
	r.key_pin = "sha256:k1";
	assert_int_equal(es_db_renew_record(f->sdb, &r, now + 100, &res), ES_OK);
	assert_int_equal(res, ES_DB_RENEW_OK);
	assert_int_equal(es_db_cert_state(f->sdb, "02", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_VALID);
	/* Revoked: every serial of the node, and its enrollment gone. */
	assert_int_equal(es_db_node_revoke(f->sdb, "edge-1", NULL, now + 150, &n), ES_OK);
	assert_int_equal(n, 2);
	r.old_serial = "02";
	r.serial = "03";
	assert_int_equal(es_db_renew_record(f->sdb, &r, now + 300, &res), ES_OK);
	assert_int_equal(res, ES_DB_RENEW_REVOKED);
	assert_int_equal(es_db_cert_state(f->sdb, "03", "edge-1", &cs), ES_OK);
	assert_int_equal(cs, ES_DB_CERT_UNKNOWN);
	cJSON_Delete((cJSON *)t.labels);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(token_shape),
		cmocka_unit_test(sha256_and_pin_parse),
		cmocka_unit_test(cert_phase),
		cmocka_unit_test_setup_teardown(presented_expired, setup, teardown),
		cmocka_unit_test_setup_teardown(db_cert_renew, setup, teardown),
		cmocka_unit_test_setup_teardown(ca_init_files, setup, teardown),
		cmocka_unit_test_setup_teardown(ca_open_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(sign_leaf, setup, teardown),
		cmocka_unit_test_setup_teardown(sign_refuses_forged_request, setup, teardown),
		cmocka_unit_test_setup_teardown(db_tokens, setup, teardown),
		cmocka_unit_test_setup_teardown(db_renew_record, setup, teardown),
		cmocka_unit_test_setup_teardown(admin_tokens, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
