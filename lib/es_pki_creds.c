/*
 * es_pki_creds.c - the check of a mutual-TLS client's credential files
 * (es_pki_creds_check, es_pki.h): read as the TLS layer would read them,
 * each problem named with its file.
 */
#include "es_pki.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

#include "es_pki_int.h"

#define PEM_CERT "-----BEGIN CERTIFICATE-----"

const char *const es_pki_file_names[] = { "cert", "key", "ca", NULL };
const char *const es_pki_file_state_names[] = { "ok", "missing", "invalid", NULL };

/* One file's contents, NUL-terminated (len excludes the NUL). */
typedef struct cred_file {
	unsigned char *buf;
	size_t len;
} cred_file;

static void set_bad(es_pki_creds *c, int i, es_pki_file_state st,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void set_bad(es_pki_creds *c, int i, es_pki_file_state st,
		    const char *fmt, ...)
{
	va_list ap;

	c->state[i] = st;
	va_start(ap, fmt);
	vsnprintf(c->why[i], sizeof(c->why[i]), fmt, ap);
	va_end(ap);
}

static void free_file(cred_file *f)
{
	if (f->buf) {
		explicit_bzero(f->buf, f->len);
		free(f->buf);
	}
	f->buf = NULL;
	f->len = 0;
}

static int blank(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n')
			return 0;
	return 1;
}

/* Reads file i at path into f; a problem is set in c (f->buf stays NULL).
 * Returns ES_OK or ES_ERR_NOMEM. */
static es_err read_file(const char *path, es_pki_creds *c, int i, cred_file *f)
{
	struct stat sb;
	FILE *fp;
	size_t n;

	if (!path || !*path) {
		set_bad(c, i, ES_PKI_FILE_MISSING, "not set");
		return ES_OK;
	}
	fp = fopen(path, "rbe");
	if (!fp) {
		if (errno == ENOENT || errno == ENOTDIR)
			set_bad(c, i, ES_PKI_FILE_MISSING, "no such file");
		else
			set_bad(c, i, ES_PKI_FILE_INVALID, "cannot read: %s",
				strerror(errno));
		return ES_OK;
	}
	if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
		set_bad(c, i, ES_PKI_FILE_INVALID, "not a regular file");
		goto done;
	}
	if (sb.st_size > ES_PKI_FILE_MAX) {
		set_bad(c, i, ES_PKI_FILE_INVALID, "larger than %d bytes",
			ES_PKI_FILE_MAX);
		goto done;
	}
	f->buf = calloc(1, (size_t)sb.st_size + 2);
	if (!f->buf) {
		fclose(fp);
		return ES_ERR_NOMEM;
	}
	n = fread(f->buf, 1, (size_t)sb.st_size + 1, fp);
	if (ferror(fp) || n > (size_t)sb.st_size) {
		set_bad(c, i, ES_PKI_FILE_INVALID, "cannot read: %s",
			ferror(fp) ? strerror(errno) : "it grew while being read");
		free_file(f);
		goto done;
	}
	f->len = n;
	if (blank(f->buf, n)) {
		set_bad(c, i, ES_PKI_FILE_INVALID, "empty file");
		free_file(f);
	}
done:
	fclose(fp);
	return ES_OK;
}

/* Parses the PEM certificates of f into crt. Returns 0, or -1 with why. */
static int parse_pem_certs(const cred_file *f, mbedtls_x509_crt *crt,
			   char *why, size_t whysz)
{
	char m[128];
	int ret;

	if (!strstr((const char *)f->buf, PEM_CERT)) {
		snprintf(why, whysz, "not a PEM certificate (no " PEM_CERT " line)");
		return -1;
	}
	ret = mbedtls_x509_crt_parse(crt, f->buf, f->len + 1);
	if (ret > 0) {
		snprintf(why, whysz, "%d of its certificates cannot be parsed", ret);
		return -1;
	}
	if (ret < 0) {
		mbedtls_strerror(ret, m, sizeof(m));
		snprintf(why, whysz, "not a readable certificate: %s", m);
		return -1;
	}
	return 0;
}

/* cert: its leaf parsed into crt (left parsed for the key check when only
 * its validity or CA flag is wrong). Returns 1 when crt holds the leaf. */
static int check_cert(const cred_file *f, time_t now, mbedtls_x509_crt *crt,
		      es_pki_creds *c)
{
	char why[sizeof(c->why[0])];

	if (parse_pem_certs(f, crt, why, sizeof(why)) != 0) {
		set_bad(c, ES_PKI_CERT, ES_PKI_FILE_INVALID, "%s", why);
		return 0;
	}
	c->cert_not_after = es_pki__crt_not_after(crt);
	if (mbedtls_x509_crt_get_ca_istrue(crt))
		set_bad(c, ES_PKI_CERT, ES_PKI_FILE_INVALID,
			"its first certificate is a CA (basicConstraints cA=TRUE); "
			"a leaf certificate is required");
	else if (es_pki__crt_validity(crt, now, why, sizeof(why)) != ES_OK)
		set_bad(c, ES_PKI_CERT, ES_PKI_FILE_INVALID, "certificate %s", why);
	return 1;
}

static void check_key(const cred_file *f, const mbedtls_x509_crt *leaf,
		      const char *cert_path, mbedtls_ctr_drbg_context *drbg,
		      es_pki_creds *c)
{
	mbedtls_pk_context pk;
	char m[128];
	int ret;

	if (!strstr((const char *)f->buf, "-----BEGIN ") ||
	    !strstr((const char *)f->buf, "PRIVATE KEY-----")) {
		set_bad(c, ES_PKI_KEY, ES_PKI_FILE_INVALID,
			"not a PEM private key (no -----BEGIN ... PRIVATE KEY----- line)");
		return;
	}
	mbedtls_pk_init(&pk);
	ret = mbedtls_pk_parse_key(&pk, f->buf, f->len + 1, NULL, 0,
				   mbedtls_ctr_drbg_random, drbg);
	if (ret == MBEDTLS_ERR_PK_PASSWORD_REQUIRED) {
		set_bad(c, ES_PKI_KEY, ES_PKI_FILE_INVALID,
			"encrypted: a key that needs a passphrase cannot be used");
	} else if (ret != 0) {
		mbedtls_strerror(ret, m, sizeof(m));
		set_bad(c, ES_PKI_KEY, ES_PKI_FILE_INVALID,
			"not a readable private key: %s", m);
	} else if (leaf && mbedtls_pk_check_pair(&leaf->pk, &pk,
						 mbedtls_ctr_drbg_random, drbg) != 0) {
		set_bad(c, ES_PKI_KEY, ES_PKI_FILE_INVALID,
			"does not match the certificate in %.200s", cert_path);
	}
	mbedtls_pk_free(&pk);
}

static void check_ca(const cred_file *f, time_t now, es_pki_creds *c)
{
	mbedtls_x509_crt ca;
	const mbedtls_x509_crt *it;
	char why[sizeof(c->why[0])], first[sizeof(c->why[0])] = "", dn[160];
	int n = 0, valid = 0;

	mbedtls_x509_crt_init(&ca);
	if (parse_pem_certs(f, &ca, why, sizeof(why)) != 0) {
		set_bad(c, ES_PKI_CA, ES_PKI_FILE_INVALID, "%s", why);
		goto cleanup;
	}
	for (it = &ca; it && it->raw.p; it = it->next) {
		n++;
		if (!mbedtls_x509_crt_get_ca_istrue(it)) {
			if (mbedtls_x509_dn_gets(dn, sizeof(dn), &it->subject) < 0)
				snprintf(dn, sizeof(dn), "?");
			set_bad(c, ES_PKI_CA, ES_PKI_FILE_INVALID,
				"certificate %d (%s) is not a CA (basicConstraints cA "
				"is not TRUE)", n, dn);
			goto cleanup;
		}
		if (es_pki__crt_validity(it, now, why, sizeof(why)) == ES_OK)
			valid = 1;
		else if (!first[0])
			snprintf(first, sizeof(first), "%s", why);
	}
	if (!valid && n == 1)
		set_bad(c, ES_PKI_CA, ES_PKI_FILE_INVALID, "CA certificate %s", first);
	else if (!valid)
		set_bad(c, ES_PKI_CA, ES_PKI_FILE_INVALID,
			"none of its %d CA certificates is valid now; the first is %s",
			n, first);
cleanup:
	mbedtls_x509_crt_free(&ca);
}

/* SHA-256 over each file's length and contents. */
static void digest(const cred_file *files, unsigned char out[32])
{
	mbedtls_sha256_context h;
	unsigned char len[8];

	mbedtls_sha256_init(&h);
	mbedtls_sha256_starts(&h, 0);
	for (int i = 0; i < ES_PKI_NFILES; i++) {
		for (int b = 0; b < 8; b++)
			len[b] = (unsigned char)((uint64_t)files[i].len >> (8 * b));
		mbedtls_sha256_update(&h, len, sizeof(len));
		mbedtls_sha256_update(&h, files[i].buf, files[i].len);
	}
	mbedtls_sha256_finish(&h, out);
	mbedtls_sha256_free(&h);
}

es_err es_pki_creds_check(const char *cert, const char *key, const char *ca,
			  time_t now, es_pki_creds *out)
{
	static const char pers[] = "edgesync-creds";
	const char *paths[ES_PKI_NFILES] = { cert, key, ca };
	cred_file files[ES_PKI_NFILES];
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_x509_crt leaf;
	int have_leaf = 0, i;
	es_err rc = ES_OK;

	memset(out, 0, sizeof(*out));
	memset(files, 0, sizeof(files));
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_x509_crt_init(&leaf);
	for (i = 0; i < ES_PKI_NFILES && rc == ES_OK; i++)
		rc = read_file(paths[i], out, i, &files[i]);
	if (rc != ES_OK)
		goto cleanup;
	if (files[ES_PKI_CERT].buf)
		have_leaf = check_cert(&files[ES_PKI_CERT], now, &leaf, out);
	if (files[ES_PKI_KEY].buf) {
		if (psa_crypto_init() != PSA_SUCCESS ||
		    mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
					  (const unsigned char *)pers,
					  sizeof(pers) - 1) != 0)
			set_bad(out, ES_PKI_KEY, ES_PKI_FILE_INVALID,
				"cannot be checked: the random generator failed");
		else
			check_key(&files[ES_PKI_KEY], have_leaf ? &leaf : NULL,
				  cert, &drbg, out);
	}
	if (files[ES_PKI_CA].buf)
		check_ca(&files[ES_PKI_CA], now, out);
	for (i = 0; i < ES_PKI_NFILES; i++)
		if (out->state[i] != ES_PKI_FILE_OK)
			rc = ES_ERR_INVAL;
	if (rc == ES_OK)
		digest(files, out->digest);
cleanup:
	for (i = 0; i < ES_PKI_NFILES; i++)
		free_file(&files[i]);
	mbedtls_x509_crt_free(&leaf);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&entropy);
	return rc;
}
