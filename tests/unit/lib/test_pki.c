/*
 * test_pki.c - certificate issuing, the peer-certificate check and
 * development-mode PKI (lib/es_pki.c).
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

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#include "es_pki.h"

#define TD "edgesync.local"

typedef struct pki_fixture {
	char *ca_crt, *ca_key;
	char dir[256];
} pki_fixture;

static int setup(void **state)
{
	pki_fixture *f = calloc(1, sizeof(*f));
	es_pki_req req = {0};
	char err[256];

	assert_non_null(f);
	req.common_name = "test CA";
	req.is_ca = 1;
	assert_int_equal(es_pki_issue(&req, NULL, NULL, &f->ca_crt, &f->ca_key, err,
				      sizeof(err)), ES_OK);
	snprintf(f->dir, sizeof(f->dir), "/tmp/es-test-pki-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	pki_fixture *f = *state;
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f->ca_crt);
	free(f->ca_key);
	free(f);
	return 0;
}

/* Parses PEM into crt (caller frees). */
static void parse_pem(mbedtls_x509_crt *crt, const char *pem)
{
	mbedtls_x509_crt_init(crt);
	assert_int_equal(mbedtls_x509_crt_parse(crt, (const unsigned char *)pem,
						strlen(pem) + 1), 0);
}

/* Issues a leaf from the fixture CA and runs es_pki_check_peer on it. */
static es_err issue_and_check(pki_fixture *f, const es_pki_req *req,
			      es_identity_kind want, char *name, char *err, size_t errsz)
{
	char *crt = NULL, *key = NULL;
	mbedtls_x509_crt x;
	es_err rc;

	assert_int_equal(es_pki_issue(req, f->ca_crt, f->ca_key, &crt, &key, err, errsz),
			 ES_OK);
	parse_pem(&x, crt);
	rc = es_pki_check_peer(x.raw.p, x.raw.len, TD, want, name, 254, err, errsz);
	mbedtls_x509_crt_free(&x);
	free(crt);
	free(key);
	return rc;
}

static void test_issue_and_accept(void **state)
{
	pki_fixture *f = *state;
	es_pki_req req = {0};
	char *crt = NULL, *key = NULL, name[254], err[256];
	mbedtls_x509_crt leaf, ca;
	uint32_t flags = 0;

	req.common_name = "edge-01";
	req.uri_san = "spiffe://" TD "/node/edge-01";
	req.client_auth = 1;
	assert_int_equal(es_pki_issue(&req, f->ca_crt, f->ca_key, &crt, &key, err,
				      sizeof(err)), ES_OK);
	assert_non_null(strstr(crt, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(key, "PRIVATE KEY"));
	parse_pem(&leaf, crt);
	parse_pem(&ca, f->ca_crt);

	/* The chain verifies: issuer name and signature match the CA. */
	assert_int_equal(mbedtls_x509_crt_verify(&leaf, &ca, NULL, NULL, &flags, NULL,
						 NULL), 0);
	assert_int_equal(flags, 0);
	/* 16-byte positive serial, leaf not a CA, clientAuth only. */
	assert_int_equal(leaf.serial.len, 16);
	assert_true((leaf.serial.p[0] & 0x80) == 0);
	assert_int_equal(mbedtls_x509_crt_get_ca_istrue(&leaf), 0);
	assert_int_equal(mbedtls_x509_crt_get_ca_istrue(&ca), 1);
	assert_int_equal(mbedtls_x509_crt_check_extended_key_usage(
		&leaf, MBEDTLS_OID_CLIENT_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)), 0);
	assert_int_not_equal(mbedtls_x509_crt_check_extended_key_usage(
		&leaf, MBEDTLS_OID_SERVER_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)), 0);
	assert_int_equal(mbedtls_x509_crt_check_key_usage(&ca, MBEDTLS_X509_KU_KEY_CERT_SIGN), 0);
	assert_int_not_equal(mbedtls_x509_crt_check_key_usage(&leaf,
							      MBEDTLS_X509_KU_KEY_CERT_SIGN), 0);
	assert_int_equal(mbedtls_pk_get_type(&leaf.pk), MBEDTLS_PK_ECKEY);
	assert_int_equal(mbedtls_pk_get_bitlen(&leaf.pk), 256);

	memset(name, 'x', sizeof(name));
	assert_int_equal(es_pki_check_peer(leaf.raw.p, leaf.raw.len, TD, ES_ID_NODE, name,
					   sizeof(name), err, sizeof(err)), ES_OK);
	assert_string_equal(name, "edge-01");

	mbedtls_x509_crt_free(&leaf);
	mbedtls_x509_crt_free(&ca);
	free(crt);
	free(key);
}

static void test_server_cert_sans(void **state)
{
	pki_fixture *f = *state;
	static const char *const dns[] = {"localhost", "controller.example", NULL};
	static const char *const ips[] = {"127.0.0.1", "::1", NULL};
	es_pki_req req = {0};
	char *crt = NULL, *key = NULL, err[256];
	mbedtls_x509_crt x, ca;
	uint32_t flags = 0;

	req.common_name = "edgesync-controller";
	req.dns_sans = dns;
	req.ip_sans = ips;
	req.server_auth = 1;
	assert_int_equal(es_pki_issue(&req, f->ca_crt, f->ca_key, &crt, &key, err,
				      sizeof(err)), ES_OK);
	parse_pem(&x, crt);
	parse_pem(&ca, f->ca_crt);
	/* Host name checks against the DNS and IP SANs. */
	assert_int_equal(mbedtls_x509_crt_verify(&x, &ca, NULL, "localhost", &flags, NULL,
						 NULL), 0);
	assert_int_equal(mbedtls_x509_crt_verify(&x, &ca, NULL, "controller.example", &flags,
						 NULL, NULL), 0);
	assert_int_equal(mbedtls_x509_crt_verify(&x, &ca, NULL, "127.0.0.1", &flags, NULL,
						 NULL), 0);
	assert_int_not_equal(mbedtls_x509_crt_verify(&x, &ca, NULL, "other.example", &flags,
						     NULL, NULL), 0);
	/* No URI SAN: not an identity. */
	assert_int_equal(es_pki_check_peer(x.raw.p, x.raw.len, TD, ES_ID_NODE, err, 254,
					   err, sizeof(err)), ES_ERR_AUTH);
	assert_non_null(strstr(err, "0 URI"));
	mbedtls_x509_crt_free(&x);
	mbedtls_x509_crt_free(&ca);
	free(crt);
	free(key);
}

/* A self-signed certificate with the given URI SANs, built with mbedTLS
 * directly (es_pki_issue writes at most one). Returns DER length in der. */
static size_t cert_with_uris(const char *const *uris, unsigned char *der, size_t size)
{
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_pk_context key;
	mbedtls_x509write_cert w;
	mbedtls_x509_san_list san[4];
	unsigned char serial[1] = {1};
	size_t n = 0;
	int len;

	memset(san, 0, sizeof(san));
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_pk_init(&key);
	mbedtls_x509write_crt_init(&w);
	assert_int_equal(mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent, NULL, 0), 0);
	assert_int_equal(mbedtls_pk_setup(&key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)), 0);
	assert_int_equal(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key),
					     mbedtls_ctr_drbg_random, &drbg), 0);
	for (; uris[n]; n++) {
		san[n].node.type = MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER;
		san[n].node.san.unstructured_name.p = (unsigned char *)uris[n];
		san[n].node.san.unstructured_name.len = strlen(uris[n]);
		if (n > 0)
			san[n - 1].next = &san[n];
	}
	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, &key);
	mbedtls_x509write_crt_set_issuer_key(&w, &key);
	assert_int_equal(mbedtls_x509write_crt_set_serial_raw(&w, serial, 1), 0);
	assert_int_equal(mbedtls_x509write_crt_set_validity(&w, "20250101000000",
							    "20400101000000"), 0);
	assert_int_equal(mbedtls_x509write_crt_set_subject_name(&w, "CN=two"), 0);
	assert_int_equal(mbedtls_x509write_crt_set_issuer_name(&w, "CN=two"), 0);
	assert_int_equal(mbedtls_x509write_crt_set_basic_constraints(&w, 0, -1), 0);
	if (n > 0)
		assert_int_equal(mbedtls_x509write_crt_set_subject_alternative_name(&w, san), 0);
	len = mbedtls_x509write_crt_der(&w, der, size, mbedtls_ctr_drbg_random, &drbg);
	assert_true(len > 0);
	memmove(der, der + size - (size_t)len, (size_t)len);
	mbedtls_x509write_crt_free(&w);
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&ent);
	return (size_t)len;
}

static void test_check_peer_rejects(void **state)
{
	pki_fixture *f = *state;
	es_pki_req req = {0};
	char name[254], err[256];
	unsigned char der[4096];
	size_t len;

	/* A CA certificate, even with a node SPIFFE ID. */
	req.common_name = "sub CA";
	req.uri_san = "spiffe://" TD "/node/edge-01";
	req.is_ca = 1;
	assert_int_equal(issue_and_check(f, &req, ES_ID_NODE, name, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "CA"));

	/* No SAN at all. */
	memset(&req, 0, sizeof(req));
	req.common_name = "edge-01";
	req.client_auth = 1;
	assert_int_equal(issue_and_check(f, &req, ES_ID_NODE, name, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "0 URI"));

	/* A URI that is not a SPIFFE ID. */
	req.uri_san = "https://edge-01.example/node/edge-01";
	assert_int_equal(issue_and_check(f, &req, ES_ID_NODE, name, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "spiffe"));

	/* Another trust domain. */
	req.uri_san = "spiffe://evil.example/node/edge-01";
	assert_int_equal(issue_and_check(f, &req, ES_ID_NODE, name, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "trust domain"));

	/* An admin identity where a node is wanted, and the reverse. */
	req.uri_san = "spiffe://" TD "/admin/alice";
	assert_int_equal(issue_and_check(f, &req, ES_ID_NODE, name, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "admin"));
	assert_int_equal(issue_and_check(f, &req, ES_ID_ADMIN, name, err, sizeof(err)),
			 ES_OK);
	assert_string_equal(name, "alice");
	req.uri_san = "spiffe://" TD "/node/edge-01";
	assert_int_equal(issue_and_check(f, &req, ES_ID_ADMIN, name, err, sizeof(err)),
			 ES_ERR_AUTH);

	/* A node name that is not an RFC 1123 subdomain. */
	req.uri_san = "spiffe://" TD "/node/Edge_01";
	assert_int_equal(issue_and_check(f, &req, ES_ID_NODE, name, err, sizeof(err)),
			 ES_ERR_AUTH);

	/* Two URI SANs, even both valid. */
	{
		static const char *const two[] = {"spiffe://" TD "/node/edge-01",
						  "spiffe://" TD "/node/edge-02", NULL};
		static const char *const one[] = {"spiffe://" TD "/node/edge-01", NULL};

		len = cert_with_uris(two, der, sizeof(der));
		assert_int_equal(es_pki_check_peer(der, len, TD, ES_ID_NODE, name,
						   sizeof(name), err, sizeof(err)),
				 ES_ERR_AUTH);
		assert_non_null(strstr(err, "2 URI"));
		/* The same builder with one URI is accepted: the rejection above
		 * is the count. */
		len = cert_with_uris(one, der, sizeof(der));
		assert_int_equal(es_pki_check_peer(der, len, TD, ES_ID_NODE, name,
						   sizeof(name), err, sizeof(err)), ES_OK);
		assert_string_equal(name, "edge-01");
		/* Truncated DER. */
		assert_int_equal(es_pki_check_peer(der, len / 2, TD, ES_ID_NODE, name,
						   sizeof(name), err, sizeof(err)),
				 ES_ERR_PARSE);
	}

	/* Garbage. */
	memset(der, 0x5a, 512);
	assert_int_equal(es_pki_check_peer(der, 512, TD, ES_ID_NODE, name, sizeof(name),
					   err, sizeof(err)), ES_ERR_PARSE);
	assert_int_equal(es_pki_check_peer(NULL, 0, TD, ES_ID_NODE, name, sizeof(name),
					   err, sizeof(err)), ES_ERR_PARSE);
}

static void test_spiffe_parse(void **state)
{
	static const char *const bad[] = {
		"spiffe://" TD,
		"spiffe://" TD "/",
		"spiffe://" TD "/node/",
		"spiffe://" TD "/node/a/b",
		"spiffe://" TD "/nodes/a",
		"spiffe://" TD ":443/node/a",
		"spiffe://EDGESYNC.LOCAL/node/a",
		"SPIFFE://" TD "/node/a",
		"spiffe://" TD "/node/a?x=1",
		"spiffe://" TD "/node/-a",
		"spiffe:///node/a",
		"",
	};
	es_identity_kind kind = 0;
	char name[254], err[256];

	(void)state;
	assert_int_equal(es_pki_spiffe_parse("spiffe://" TD "/node/gw-7.lab", TD, &kind, name,
					     sizeof(name), err, sizeof(err)), ES_OK);
	assert_int_equal(kind, ES_ID_NODE);
	assert_string_equal(name, "gw-7.lab");
	assert_int_equal(es_pki_spiffe_parse("spiffe://" TD "/admin/admin", TD, &kind, name,
					     sizeof(name), err, sizeof(err)), ES_OK);
	assert_int_equal(kind, ES_ID_ADMIN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (es_pki_spiffe_parse(bad[i], TD, &kind, name, sizeof(name), err,
					sizeof(err)) != ES_ERR_AUTH)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_true(err[0] != '\0');
	}
}

static void test_issue_errors(void **state)
{
	pki_fixture *f = *state;
	static const char *const bad_ip[] = {"300.1.1.1", NULL};
	es_pki_req req = {0};
	char *crt = NULL, *key = NULL, *other_crt = NULL, *other_key = NULL, err[256];

	assert_int_equal(es_pki_issue(&req, NULL, NULL, &crt, &key, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "common_name"));
	assert_null(crt);
	req.common_name = "x";
	req.ip_sans = bad_ip;
	assert_int_equal(es_pki_issue(&req, NULL, NULL, &crt, &key, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "300.1.1.1"));
	req.ip_sans = NULL;
	req.not_before = 2000000000;
	req.not_after = 1900000000;
	assert_int_equal(es_pki_issue(&req, NULL, NULL, &crt, &key, err, sizeof(err)),
			 ES_ERR_INVAL);
	req.not_before = req.not_after = 0;
	assert_int_equal(es_pki_issue(&req, "garbage", f->ca_key, &crt, &key, err,
				      sizeof(err)), ES_ERR_PARSE);
	assert_int_equal(es_pki_issue(&req, f->ca_crt, "garbage", &crt, &key, err,
				      sizeof(err)), ES_ERR_PARSE);
	assert_int_equal(es_pki_issue(&req, f->ca_crt, NULL, &crt, &key, err, sizeof(err)),
			 ES_ERR_INVAL);
	/* A key that is not the CA certificate's. */
	assert_int_equal(es_pki_issue(&req, NULL, NULL, &other_crt, &other_key, err,
				      sizeof(err)), ES_OK);
	assert_int_equal(es_pki_issue(&req, f->ca_crt, other_key, &crt, &key, err,
				      sizeof(err)), ES_ERR_PARSE);
	assert_null(crt);
	assert_null(key);
	free(other_crt);
	free(other_key);
	/* Escaped subject characters survive. */
	req.common_name = "a,b=c+\"d\"\\e";
	assert_int_equal(es_pki_issue(&req, f->ca_crt, f->ca_key, &crt, &key, err,
				      sizeof(err)), ES_OK);
	free(crt);
	free(key);
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char *b = calloc(1, 65536);

	assert_non_null(fp);
	assert_non_null(b);
	assert_true(fread(b, 1, 65535, fp) > 0);
	fclose(fp);
	return b;
}

static unsigned mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static void check_file_peer(const char *path, es_identity_kind want, const char *name)
{
	char *pem = slurp(path), got[254], err[256];
	mbedtls_x509_crt x;

	parse_pem(&x, pem);
	if (es_pki_check_peer(x.raw.p, x.raw.len, TD, want, got, sizeof(got), err,
			      sizeof(err)) != ES_OK)
		fail_msg("%s: %s", path, err);
	assert_string_equal(got, name);
	mbedtls_x509_crt_free(&x);
	free(pem);
}

static void test_dev_init(void **state)
{
	pki_fixture *f = *state;
	static const char *const nodes[] = {"edge-01", "gw-7.lab", NULL};
	static const char *const extra[] = {"controller.example", NULL};
	static const char *const bad_nodes[] = {"Bad_Name", NULL};
	static const char *const files[] = {"ca", "controller", "admin", "nodes/edge-01",
					    "nodes/gw-7.lab"};
	char dev[512], p[600], err[256];
	char *before[5], *ca_before, *ctl_before;

	snprintf(dev, sizeof(dev), "%s/state/dev", f->dir);
	assert_int_equal(es_pki_dev_init(dev, TD, nodes, extra, err, sizeof(err)), ES_OK);
	assert_int_equal(mode_of(dev), 0700);
	snprintf(p, sizeof(p), "%s/nodes", dev);
	assert_int_equal(mode_of(p), 0700);
	for (size_t i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/%s.key", dev, files[i]);
		assert_int_equal(mode_of(p), 0600);
		snprintf(p, sizeof(p), "%s/%s.crt", dev, files[i]);
		before[i] = slurp(p);
	}
	snprintf(p, sizeof(p), "%s/nodes/edge-01.crt", dev);
	check_file_peer(p, ES_ID_NODE, "edge-01");
	snprintf(p, sizeof(p), "%s/nodes/gw-7.lab.crt", dev);
	check_file_peer(p, ES_ID_NODE, "gw-7.lab");
	snprintf(p, sizeof(p), "%s/admin.crt", dev);
	check_file_peer(p, ES_ID_ADMIN, "admin");

	/* The controller certificate chains to the CA and names the hosts. */
	{
		mbedtls_x509_crt ctl, ca;
		uint32_t flags;

		parse_pem(&ca, before[0]);
		parse_pem(&ctl, before[1]);
		assert_int_equal(mbedtls_x509_crt_verify(&ctl, &ca, NULL, "localhost", &flags,
							 NULL, NULL), 0);
		assert_int_equal(mbedtls_x509_crt_verify(&ctl, &ca, NULL, "controller.example",
							 &flags, NULL, NULL), 0);
		assert_int_equal(mbedtls_x509_crt_verify(&ctl, &ca, NULL, "::1", &flags, NULL,
							 NULL), 0);
		mbedtls_x509_crt_free(&ctl);
		mbedtls_x509_crt_free(&ca);
	}

	/* Idempotent: a second run reuses every file. */
	assert_int_equal(es_pki_dev_init(dev, TD, nodes, extra, err, sizeof(err)), ES_OK);
	for (size_t i = 0; i < 5; i++) {
		char *now;

		snprintf(p, sizeof(p), "%s/%s.crt", dev, files[i]);
		now = slurp(p);
		assert_string_equal(now, before[i]);
		free(now);
	}

	/* A lost node pair is reissued alone, by the same CA. */
	snprintf(p, sizeof(p), "%s/nodes/edge-01.crt", dev);
	assert_int_equal(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/nodes/edge-01.key", dev);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(es_pki_dev_init(dev, TD, nodes, extra, err, sizeof(err)), ES_OK);
	snprintf(p, sizeof(p), "%s/ca.crt", dev);
	ca_before = slurp(p);
	assert_string_equal(ca_before, before[0]);
	snprintf(p, sizeof(p), "%s/controller.crt", dev);
	ctl_before = slurp(p);
	assert_string_equal(ctl_before, before[1]);
	snprintf(p, sizeof(p), "%s/nodes/edge-01.crt", dev);
	{
		char *now = slurp(p);

		assert_string_not_equal(now, before[3]);
		free(now);
	}
	check_file_peer(p, ES_ID_NODE, "edge-01");
	free(ca_before);
	free(ctl_before);

	/* A certificate whose key is gone is reported, not replaced. */
	snprintf(p, sizeof(p), "%s/admin.key", dev);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(es_pki_dev_init(dev, TD, nodes, extra, err, sizeof(err)), ES_ERR_IO);
	assert_non_null(strstr(err, "admin.key"));

	assert_int_equal(es_pki_dev_init(dev, TD, bad_nodes, NULL, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "Bad_Name"));
	for (size_t i = 0; i < 5; i++)
		free(before[i]);
}

static void test_write_file_atomic(void **state)
{
	pki_fixture *f = *state;
	char p[512], err[256], *s;

	snprintf(p, sizeof(p), "%s/atomic.txt", f->dir);
	assert_int_equal(es_pki_write_file_atomic(p, "one\n", 4, 0600, err, sizeof(err)), ES_OK);
	assert_int_equal(mode_of(p), 0600);
	assert_int_equal(es_pki_write_file_atomic(p, "two two\n", 8, 0644, err, sizeof(err)),
			 ES_OK);
	assert_int_equal(mode_of(p), 0644);
	s = slurp(p);
	assert_string_equal(s, "two two\n");
	free(s);
	snprintf(p, sizeof(p), "%s/missing/dir/file", f->dir);
	assert_int_equal(es_pki_write_file_atomic(p, "x", 1, 0600, err, sizeof(err)), ES_ERR_IO);
	assert_non_null(strstr(err, "missing/dir"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_issue_and_accept),
		cmocka_unit_test(test_server_cert_sans),
		cmocka_unit_test(test_check_peer_rejects),
		cmocka_unit_test(test_spiffe_parse),
		cmocka_unit_test(test_issue_errors),
		cmocka_unit_test(test_dev_init),
		cmocka_unit_test(test_write_file_atomic),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
