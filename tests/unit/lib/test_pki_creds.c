/*
 * test_pki_creds.c - the checks of credential files, certificate validity
 * and server names (lib/es_pki_creds.c, lib/es_pki.c): every bad file is
 * named with what is wrong with it; a certificate from the future says to
 * check the clock; a server certificate must name the dialled host in a
 * DNS or IP subjectAltName, never only in its common name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <mbedtls/x509_crt.h>

#include "es_pki.h"
#include "es_time.h"

typedef struct fx {
	char dir[64];
	char *ca_crt, *ca_key, *crt, *key;
	char p_ca[128], p_crt[128], p_key[128];
} fx;

static void put(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void put_s(const char *path, const char *text)
{
	put(path, text, strlen(text));
}

static void issue(const fx *f, const char *cn, time_t nb, time_t na, int is_ca,
		  char **crt, char **key)
{
	es_pki_req req = {0};
	char err[256];

	req.common_name = cn;
	req.not_before = nb;
	req.not_after = na;
	req.is_ca = is_ca;
	req.client_auth = !is_ca;
	assert_int_equal(es_pki_issue(&req, f ? f->ca_crt : NULL, f ? f->ca_key : NULL,
				      crt, key, err, sizeof(err)), ES_OK);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/es-test-creds-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	issue(NULL, "test CA", 0, 0, 1, &f->ca_crt, &f->ca_key);
	issue(f, "node-a", 0, 0, 0, &f->crt, &f->key);
	snprintf(f->p_ca, sizeof(f->p_ca), "%s/ca.crt", f->dir);
	snprintf(f->p_crt, sizeof(f->p_crt), "%s/node.crt", f->dir);
	snprintf(f->p_key, sizeof(f->p_key), "%s/node.key", f->dir);
	put_s(f->p_ca, f->ca_crt);
	put_s(f->p_crt, f->crt);
	put_s(f->p_key, f->key);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f->ca_crt);
	free(f->ca_key);
	free(f->crt);
	free(f->key);
	free(f);
	return 0;
}

static es_err check(const fx *f, es_pki_creds *c)
{
	return es_pki_creds_check(f->p_crt, f->p_key, f->p_ca, time(NULL), c);
}

/* Only file `bad` is not ok, in state st, its why containing want. */
static void expect_only(const es_pki_creds *c, es_pki_file bad,
			es_pki_file_state st, const char *want)
{
	for (int i = 0; i < ES_PKI_NFILES; i++) {
		if (i == (int)bad)
			continue;
		assert_int_equal(c->state[i], ES_PKI_FILE_OK);
		assert_string_equal(c->why[i], "");
	}
	assert_int_equal(c->state[bad], st);
	if (!strstr(c->why[bad], want))
		fail_msg("why of %s is \"%s\", expected \"%s\" in it",
			 es_pki_file_names[bad], c->why[bad], want);
}

static void test_good_files(void **state)
{
	fx *f = *state;
	es_pki_creds c, c2;
	unsigned char zero[32] = {0};
	char *k2 = NULL, *c2pem = NULL;

	assert_int_equal(check(f, &c), ES_OK);
	for (int i = 0; i < ES_PKI_NFILES; i++) {
		assert_int_equal(c.state[i], ES_PKI_FILE_OK);
		assert_string_equal(c.why[i], "");
	}
	assert_true(c.cert_not_after > time(NULL) + 300 * 24 * 3600);
	assert_memory_not_equal(c.digest, zero, sizeof(zero));
	/* The same files: the same digest; another key pair: another. */
	assert_int_equal(check(f, &c2), ES_OK);
	assert_memory_equal(c.digest, c2.digest, sizeof(c.digest));
	issue(f, "node-a", 0, 0, 0, &c2pem, &k2);
	put_s(f->p_crt, c2pem);
	put_s(f->p_key, k2);
	assert_int_equal(check(f, &c2), ES_OK);
	assert_memory_not_equal(c.digest, c2.digest, sizeof(c.digest));
	free(c2pem);
	free(k2);
	assert_string_equal(es_pki_file_names[ES_PKI_CA], "ca");
	assert_string_equal(es_pki_file_state_names[ES_PKI_FILE_INVALID], "invalid");
}

static void test_missing(void **state)
{
	fx *f = *state;
	es_pki_creds c;
	char p[160];

	snprintf(p, sizeof(p), "%s/nope/ca.crt", f->dir);
	assert_int_equal(es_pki_creds_check(f->p_crt, f->p_key, p, time(NULL), &c),
			 ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CA, ES_PKI_FILE_MISSING, "no such file");
	assert_int_equal(es_pki_creds_check(NULL, f->p_key, f->p_ca, time(NULL), &c),
			 ES_ERR_INVAL);
	/* The key is still parsed; with no certificate nothing to match. */
	expect_only(&c, ES_PKI_CERT, ES_PKI_FILE_MISSING, "not set");
}

static void test_empty_and_not_pem(void **state)
{
	fx *f = *state;
	es_pki_creds c;

	put_s(f->p_ca, "");
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CA, ES_PKI_FILE_INVALID, "empty file");
	put_s(f->p_ca, " \n\r\n\t");
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CA, ES_PKI_FILE_INVALID, "empty file");
	put_s(f->p_ca, "this is not a certificate\n");
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CA, ES_PKI_FILE_INVALID, "not a PEM certificate");
	put_s(f->p_ca, f->ca_crt);

	put(f->p_key, "\0\0\0", 3);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_KEY, ES_PKI_FILE_INVALID, "not a PEM private key");
	put_s(f->p_key, f->key);

	/* Truncated in the middle of its base64. */
	put(f->p_crt, f->crt, strlen(f->crt) / 2);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	assert_int_equal(c.state[ES_PKI_CERT], ES_PKI_FILE_INVALID);
	assert_non_null(strstr(c.why[ES_PKI_CERT], "not a readable certificate"));
	/* A directory is not a file. */
	assert_int_equal(es_pki_creds_check(f->dir, f->p_key, f->p_ca, time(NULL), &c),
			 ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CERT, ES_PKI_FILE_INVALID, "not a regular file");
}

static void test_key_mismatch_and_encrypted(void **state)
{
	fx *f = *state;
	es_pki_creds c;
	char *other = NULL, *okey = NULL, want[200];

	issue(f, "other", 0, 0, 0, &other, &okey);
	put_s(f->p_key, okey);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	snprintf(want, sizeof(want), "does not match the certificate in %s", f->p_crt);
	expect_only(&c, ES_PKI_KEY, ES_PKI_FILE_INVALID, want);
	put_s(f->p_key, "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
		       "MIGbMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAh3Yk7ceGHU5QICCAAw\n"
		       "-----END ENCRYPTED PRIVATE KEY-----\n");
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_KEY, ES_PKI_FILE_INVALID, "encrypted");
	free(other);
	free(okey);
}

static void test_validity(void **state)
{
	fx *f = *state;
	es_pki_creds c;
	char *crt = NULL, *key = NULL;
	time_t now = time(NULL);

	/* From the future: the host clock is wrong. */
	issue(f, "node-a", now + 86400, now + 2 * 86400, 0, &crt, &key);
	put_s(f->p_crt, crt);
	put_s(f->p_key, key);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CERT, ES_PKI_FILE_INVALID, "certificate not valid before ");
	assert_non_null(strstr(c.why[ES_PKI_CERT], "; the host clock says "));
	assert_non_null(strstr(c.why[ES_PKI_CERT], ": check the clock"));
	free(crt);
	free(key);
	/* Expired. */
	issue(f, "node-a", now - 2 * 86400, now - 86400, 0, &crt, &key);
	put_s(f->p_crt, crt);
	put_s(f->p_key, key);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CERT, ES_PKI_FILE_INVALID, "certificate expired at ");
	assert_int_equal(c.cert_not_after, now - 86400);
	free(crt);
	free(key);
}

static void test_ca_rules(void **state)
{
	fx *f = *state;
	es_pki_creds c;
	char *old = NULL, *oldkey = NULL, *both = NULL;
	time_t now = time(NULL);

	/* A leaf in the CA file. */
	put_s(f->p_ca, f->crt);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CA, ES_PKI_FILE_INVALID,
		    "certificate 1 (CN=node-a) is not a CA");
	/* An expired CA alone; beside a valid one it is fine. */
	issue(NULL, "old CA", now - 2 * 86400, now - 86400, 1, &old, &oldkey);
	put_s(f->p_ca, old);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CA, ES_PKI_FILE_INVALID, "CA certificate expired at ");
	both = calloc(1, strlen(old) + strlen(f->ca_crt) + 1);
	assert_non_null(both);
	strcat(strcpy(both, old), f->ca_crt);
	put_s(f->p_ca, both);
	assert_int_equal(check(f, &c), ES_OK);
	/* The CA's own pair as the client certificate: not a leaf. */
	put_s(f->p_crt, f->ca_crt);
	put_s(f->p_key, f->ca_key);
	assert_int_equal(check(f, &c), ES_ERR_INVAL);
	expect_only(&c, ES_PKI_CERT, ES_PKI_FILE_INVALID, "is a CA");
	free(old);
	free(oldkey);
	free(both);
}

/* DER of a certificate issued for the SANs given (NULL lists: none). */
static void der_of(const fx *f, const char *const *dns, const char *const *ips,
		   mbedtls_x509_crt *x)
{
	es_pki_req req = {0};
	char *crt = NULL, *key = NULL, err[256];

	req.common_name = "localhost";
	req.dns_sans = dns;
	req.ip_sans = ips;
	req.server_auth = 1;
	assert_int_equal(es_pki_issue(&req, f->ca_crt, f->ca_key, &crt, &key, err,
				      sizeof(err)), ES_OK);
	mbedtls_x509_crt_init(x);
	assert_int_equal(mbedtls_x509_crt_parse(x, (const unsigned char *)crt,
						strlen(crt) + 1), 0);
	free(crt);
	free(key);
}

static void test_check_validity_messages(void **state)
{
	fx *f = *state;
	mbedtls_x509_crt x;
	char why[256], want[256], nb[ES_TIME_RFC3339_LEN], cl[ES_TIME_RFC3339_LEN];
	const char *tail = "; the host clock says 2020-01-01T00:00:00Z: check the clock";
	time_t t;

	der_of(f, NULL, NULL, &x);
	assert_int_equal(es_pki_check_validity(x.raw.p, x.raw.len, time(NULL), why,
					       sizeof(why)), ES_OK);
	assert_int_equal(es_time_parse_rfc3339("2020-01-01T00:00:00Z", &t), 0);
	assert_int_equal(es_pki_check_validity(x.raw.p, x.raw.len, t, why, sizeof(why)),
			 ES_ERR_AUTH);
	/* "not valid before <notBefore>; the host clock says <now>: check the clock" */
	assert_memory_equal(why, "not valid before 20", 19);
	assert_int_equal(strlen(why), strlen("not valid before ") +
			 strlen(es_time_rfc3339(t, nb)) + strlen(tail));
	assert_string_equal(why + strlen(why) - strlen(tail), tail);
	t = time(NULL) + 400L * 86400;
	assert_int_equal(es_pki_check_validity(x.raw.p, x.raw.len, t, why, sizeof(why)),
			 ES_ERR_AUTH);
	assert_memory_equal(why, "expired at 20", 13);
	snprintf(want, sizeof(want), " (the host clock says %s)", es_time_rfc3339(t, cl));
	assert_string_equal(why + strlen(why) - strlen(want), want);
	assert_int_equal(es_pki_check_validity((const unsigned char *)"xx", 2, t, why,
					       sizeof(why)), ES_ERR_PARSE);
	mbedtls_x509_crt_free(&x);
}

static void test_server_name(void **state)
{
	fx *f = *state;
	static const char *const dns[] = {"localhost", "Ctl.Example.COM",
					  "*.fleet.example", NULL};
	static const char *const ips[] = {"127.0.0.1", "::1", NULL};
	static const char *const dns_ip_text[] = {"10.0.0.1", NULL};
	mbedtls_x509_crt x;
	char why[512];

	der_of(f, dns, ips, &x);
#define NAME(h) es_pki_check_server_name(x.raw.p, x.raw.len, h, why, sizeof(why))
	assert_int_equal(NAME("localhost"), ES_OK);
	assert_int_equal(NAME("LOCALHOST."), ES_OK);
	assert_int_equal(NAME("ctl.example.com"), ES_OK);
	assert_int_equal(NAME("127.0.0.1"), ES_OK);
	assert_int_equal(NAME("::1"), ES_OK);
	assert_int_equal(NAME("0:0:0:0:0:0:0:1"), ES_OK);
	assert_int_equal(NAME("a.fleet.example"), ES_OK);
	/* A wildcard covers one whole label, not two, not none. */
	assert_int_equal(NAME("a.b.fleet.example"), ES_ERR_AUTH);
	assert_int_equal(NAME("fleet.example"), ES_ERR_AUTH);
	assert_int_equal(NAME("127.0.0.2"), ES_ERR_AUTH);
	assert_int_equal(NAME("other.example"), ES_ERR_AUTH);
	/* (es_pki_issue writes the SANs in reverse) */
	assert_string_equal(why, "the certificate names IP:::1, IP:127.0.0.1, "
			    "DNS:*.fleet.example, DNS:Ctl.Example.COM, DNS:localhost, "
			    "not other.example");
	assert_int_equal(NAME(""), ES_ERR_INVAL);
	mbedtls_x509_crt_free(&x);

	/* An IP literal is matched against iPAddress SANs only. */
	der_of(f, dns_ip_text, NULL, &x);
	assert_int_equal(NAME("10.0.0.1"), ES_ERR_AUTH);
	mbedtls_x509_crt_free(&x);

	/* No SAN: the common name "localhost" is not enough. */
	der_of(f, NULL, NULL, &x);
	assert_int_equal(NAME("localhost"), ES_ERR_AUTH);
	assert_string_equal(why, "the certificate has no DNS or IP subjectAltName (only "
			    "its subject names a host); one naming localhost is required");
	mbedtls_x509_crt_free(&x);
#undef NAME
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_not_pem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_mismatch_and_encrypted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_validity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_validity_messages, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_server_name, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
