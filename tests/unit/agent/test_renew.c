/*
 * test_renew.c - the agent's certificate renewal apart from the session
 * (agent/enroll/renew.c): when a certificate is due, the waits after a
 * failure, the checks of a trust bundle, writing a renewed identity and
 * finishing one a crash cut short.
 */
#define _GNU_SOURCE /* asprintf */
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

#include <mbedtls/pem.h>
#include <mbedtls/x509_crt.h>

#include "enroll/renew.h"
#include "es_pki.h"

typedef struct fx {
	char dir[64];
	char *ca_crt, *ca_key, *crt, *key, *other_crt, *other_key, *foreign_ca;
	char *foreign_ca_key;
} fx;

static char *issue(const char *cn, const char *uri, int is_ca, const char *ca_crt,
		   const char *ca_key, char **key)
{
	es_pki_req r = { .common_name = cn, .uri_san = uri, .is_ca = is_ca,
			 .client_auth = !is_ca };
	char *crt = NULL, err[256];

	assert_int_equal(es_pki_issue(&r, ca_crt, ca_key, &crt, key, err, sizeof(err)),
			 ES_OK);
	return crt;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/es-renew-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->ca_crt = issue("ca", NULL, 1, NULL, NULL, &f->ca_key);
	f->crt = issue("n", "spiffe://edgesync.local/node/n", 0, f->ca_crt, f->ca_key,
		       &f->key);
	f->other_crt = issue("n", "spiffe://edgesync.local/node/n", 0, f->ca_crt,
			     f->ca_key, &f->other_key);
	f->foreign_ca = issue("other ca", NULL, 1, NULL, NULL, &f->foreign_ca_key);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f->ca_crt);
	free(f->ca_key);
	free(f->crt);
	free(f->key);
	free(f->other_crt);
	free(f->other_key);
	free(f->foreign_ca);
	free(f->foreign_ca_key);
	free(f);
	return 0;
}

static void put(const char *path, const char *text)
{
	FILE *o = fopen(path, "w");

	assert_non_null(o);
	assert_int_equal(fputs(text, o) >= 0, 1);
	assert_int_equal(fclose(o), 0);
}

static char *get(const char *path)
{
	FILE *i = fopen(path, "r");
	char *b = calloc(1, 65536);

	assert_non_null(i);
	assert_non_null(b);
	assert_true(fread(b, 1, 65535, i) > 0);
	fclose(i);
	return b;
}

static void due(void **state)
{
	es_renew_cert c = { .not_before = 1000, .not_after = 1100 };

	(void)state;
	/* Half the lifetime, plus up to 10 % of it as jitter. */
	assert_int_equal(es_renew_due(&c, 50, 0), 1050);
	assert_int_equal(es_renew_due(&c, 50, 0xffffffffu), 1059);
	assert_int_equal(es_renew_due(&c, 50, 0x80000000u), 1055);
	/* Written after notBefore: the start is the write (a backdated
	 * notBefore would make a short certificate due at once). */
	c = (es_renew_cert){ .not_before = 700, .not_after = 1020, .written = 1000 };
	assert_int_equal(es_renew_due(&c, 50, 0), 1010);
	/* Written before notBefore, or after notAfter: notBefore counts. */
	c = (es_renew_cert){ .not_before = 1000, .not_after = 1100, .written = 900 };
	assert_int_equal(es_renew_due(&c, 50, 0), 1050);
	c.written = 1200;
	assert_int_equal(es_renew_due(&c, 50, 0), 1050);
	/* 90 %: the jitter is at most half the rest (5 %). */
	c.written = 0;
	assert_int_equal(es_renew_due(&c, 90, 0xffffffffu), 1094);
	/* Bounds of percent. */
	assert_int_equal(es_renew_due(&c, 0, 0), 1001);
	assert_int_equal(es_renew_due(&c, 150, 0), 1099);
	/* No lifetime left: due at its start. */
	c = (es_renew_cert){ .not_before = 1000, .not_after = 1000 };
	assert_int_equal(es_renew_due(&c, 50, 0xffffffffu), 1000);
}

static void retry(void **state)
{
	(void)state;
	/* The upper half of 5, 10, 20 ... s, at most 300 s. */
	assert_int_equal(es_renew_retry_s(1, 0, 0), 2);
	assert_int_equal(es_renew_retry_s(1, 0xffffffffu, 0), 4);
	assert_int_equal(es_renew_retry_s(2, 0, 0), 5);
	assert_int_equal(es_renew_retry_s(3, 0, 0), 10);
	assert_int_equal(es_renew_retry_s(20, 0, 0), 150);
	assert_true(es_renew_retry_s(20, 0xffffffffu, 0) <= 300);
	assert_true(es_renew_retry_s(20, 0xffffffffu, 0) >= 299);
	/* The controller's retryAfterSeconds is the floor. */
	assert_int_equal(es_renew_retry_s(1, 0, 1000), 1000);
}

/* DER of the first certificate of pem into *der (malloc'd). */
static size_t der_of(const char *pem, unsigned char **der)
{
	mbedtls_x509_crt c;
	size_t n;

	mbedtls_x509_crt_init(&c);
	assert_int_equal(mbedtls_x509_crt_parse(&c, (const unsigned char *)pem,
						strlen(pem) + 1), 0);
	n = c.raw.len;
	*der = malloc(n);
	assert_non_null(*der);
	memcpy(*der, c.raw.p, n);
	mbedtls_x509_crt_free(&c);
	return n;
}

static void bundle(void **state)
{
	fx *f = *state;
	unsigned char *der = NULL, *foreign_der = NULL;
	size_t n = der_of(f->crt, &der), fn;
	char *two, *leafy, *foreign_leaf, *fk = NULL, err[300], path[128], *back;
	int changed = -1;

	/* The peer here is a leaf of the CA (its name is not checked). */
	assert_int_equal(es_renew_bundle_check(f->ca_crt, der, n, err, sizeof(err)), ES_OK);
	assert_int_equal(es_renew_bundle_check(f->ca_crt, NULL, 0, err, sizeof(err)), ES_OK);
	/* Old and new CA together (the overlap window). */
	assert_true(asprintf(&two, "%s%s", f->foreign_ca, f->ca_crt) > 0);
	assert_int_equal(es_renew_bundle_check(two, der, n, err, sizeof(err)), ES_OK);
	/* A bundle without the CA of the session's controller. */
	assert_int_equal(es_renew_bundle_check(f->foreign_ca, der, n, err, sizeof(err)),
			 ES_ERR_AUTH);
	assert_non_null(strstr(err, "does not verify"));
	foreign_leaf = issue("x", "spiffe://edgesync.local/node/x", 0, f->foreign_ca,
			     f->foreign_ca_key, &fk);
	fn = der_of(foreign_leaf, &foreign_der);
	assert_int_equal(es_renew_bundle_check(two, foreign_der, fn, err, sizeof(err)),
			 ES_OK);
	/* Not CAs, not PEM, empty. */
	assert_true(asprintf(&leafy, "%s%s", f->ca_crt, f->crt) > 0);
	assert_int_equal(es_renew_bundle_check(leafy, NULL, 0, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_non_null(strstr(err, "certificate 2 is not a CA"));
	assert_int_equal(es_renew_bundle_check("hello", NULL, 0, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_int_equal(es_renew_bundle_check("", NULL, 0, err, sizeof(err)),
			 ES_ERR_PARSE);

	/* Written when it differs, not when it is the same. */
	snprintf(path, sizeof(path), "%s/ca.crt", f->dir);
	assert_int_equal(es_renew_bundle_write(path, f->ca_crt, &changed, err, sizeof(err)),
			 ES_OK);
	assert_int_equal(changed, 1);
	assert_int_equal(es_renew_bundle_write(path, f->ca_crt, &changed, err, sizeof(err)),
			 ES_OK);
	assert_int_equal(changed, 0);
	assert_int_equal(es_renew_bundle_write(path, two, &changed, err, sizeof(err)), ES_OK);
	assert_int_equal(changed, 1);
	back = get(path);
	assert_string_equal(back, two);
	free(back);
	free(two);
	free(leafy);
	free(foreign_leaf);
	free(fk);
	free(der);
	free(foreign_der);
}

static void install_and_recover(void **state)
{
	fx *f = *state;
	char crt[128], key[128], next[160], err[300], *back;
	struct stat st;
	es_renew_cert rc;
	int rec = -1;

	snprintf(crt, sizeof(crt), "%s/node.crt", f->dir);
	snprintf(key, sizeof(key), "%s/node.key", f->dir);
	snprintf(next, sizeof(next), "%s" ES_RENEW_KEY_NEXT, key);
	put(crt, f->crt);
	put(key, f->key);

	/* A certificate for another key: refused, nothing written. */
	assert_int_equal(es_renew_install(crt, key, f->other_crt, f->key, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "not for the key"));
	back = get(crt);
	assert_string_equal(back, f->crt);
	free(back);
	assert_int_equal(access(next, F_OK), -1);
	assert_int_equal(es_renew_install(crt, key, "junk", f->other_key, err, sizeof(err)),
			 ES_ERR_PARSE);

	/* The new pair in place, the key 0600, no .next left. */
	assert_int_equal(es_renew_install(crt, key, f->other_crt, f->other_key, err,
					  sizeof(err)), ES_OK);
	back = get(crt);
	assert_string_equal(back, f->other_crt);
	free(back);
	back = get(key);
	assert_string_equal(back, f->other_key);
	free(back);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(access(next, F_OK), -1);
	assert_int_equal(es_renew_cert_read(crt, &rc, err, sizeof(err)), ES_OK);
	assert_true(rc.not_after > rc.not_before);
	assert_true(rc.written > 0);
	assert_true(strlen(rc.serial) >= 2);

	/* Nothing to recover. */
	assert_int_equal(es_renew_recover(crt, key, &rec, err, sizeof(err)), ES_OK);
	assert_int_equal(rec, 0);
	/* A crash after the certificate's rename: the new key under .next,
	 * the old one in place. */
	put(crt, f->crt);
	put(next, f->key);
	put(key, f->other_key);
	assert_int_equal(es_renew_recover(crt, key, &rec, err, sizeof(err)), ES_OK);
	assert_int_equal(rec, 1);
	back = get(key);
	assert_string_equal(back, f->key);
	free(back);
	assert_int_equal(access(next, F_OK), -1);
	/* A crash before it: the .next is not the certificate's, removed. */
	put(next, f->other_key);
	assert_int_equal(es_renew_recover(crt, key, &rec, err, sizeof(err)), ES_OK);
	assert_int_equal(rec, 0);
	assert_int_equal(access(next, F_OK), -1);
	back = get(key);
	assert_string_equal(back, f->key);
	free(back);

	assert_int_equal(es_renew_cert_read("/nonexistent/x.crt", &rc, err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_int_equal(es_renew_cert_read(key, &rc, err, sizeof(err)), ES_ERR_PARSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(due),
		cmocka_unit_test(retry),
		cmocka_unit_test_setup_teardown(bundle, setup, teardown),
		cmocka_unit_test_setup_teardown(install_and_recover, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
