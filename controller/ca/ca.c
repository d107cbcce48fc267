/*
 * ca.c - the controller's signing CA (ca.h).
 */
#include "ca/ca.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/md.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <mbedtls/x509_csr.h>
#include <psa/crypto.h>

#include "es_obj.h"
#include "es_pki.h"

#define PEM_BUF 4096
#define SERIAL_LEN 16
#define SKEW_S 300

struct es_ca {
	mbedtls_x509_crt crt;
	mbedtls_pk_context key;
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	char *cert_pem;
	char pin[ES_ENROLL_PIN_SZ];
	char subject[1024];
	time_t not_after;
};


es_err es_ca_create(const char *cert_path, const char *key_path,
		    const char *trust_domain, char *pin, char *err, size_t errsz)
{
	char cn[96], *cert = NULL, *key = NULL;
	es_pki_req req = { 0 };
	time_t now = time(NULL);
	es_err rc;

	if (access(cert_path, F_OK) == 0 || access(key_path, F_OK) == 0)
		return es_errf(ES_ERR_EXISTS, err, errsz,
			       "%s exists already: a CA is never overwritten "
			       "(move it away to make a new one)",
			       access(cert_path, F_OK) == 0 ? cert_path : key_path);
	snprintf(cn, sizeof(cn), "%.60s edgesync CA", trust_domain);
	req.common_name = cn;
	req.is_ca = 1;
	req.not_before = now - SKEW_S;
	req.not_after = now + (time_t)ES_CA_INIT_DAYS * 24 * 3600;
	rc = es_pki_issue(&req, NULL, NULL, &cert, &key, err, errsz);
	if (rc == ES_OK)
		rc = es_pki_write_file_atomic(key_path, key, strlen(key), 0600, err, errsz);
	if (rc == ES_OK) {
		rc = es_pki_write_file_atomic(cert_path, cert, strlen(cert), 0644, err,
					      errsz);
		/* A key without its certificate is no CA, and would make the next
		 * try say "exists already". */
		if (rc != ES_OK)
			(void)unlink(key_path);
	}
	if (rc == ES_OK && pin && es_enroll_key_pin(cert, pin) != ES_OK)
		rc = es_errf(ES_ERR_TLS, err, errsz, "cannot hash the new CA's key");
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	return rc;
}

void es_ca_free(es_ca *ca)
{
	if (!ca)
		return;
	mbedtls_x509_crt_free(&ca->crt);
	mbedtls_pk_free(&ca->key);
	mbedtls_ctr_drbg_free(&ca->drbg);
	mbedtls_entropy_free(&ca->ent);
	free(ca->cert_pem);
	free(ca);
}

es_err es_ca_read_pem(const char *what, const char *path, char **out,
		       char *err, size_t errsz)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	size_t n;

	*out = NULL;
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s %s: %s", what, path,
			       strerror(errno));
	b = malloc(ES_PKI_FILE_MAX + 1);
	if (!b) {
		fclose(f);
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	}
	n = fread(b, 1, ES_PKI_FILE_MAX + 1, f);
	fclose(f);
	if (n > ES_PKI_FILE_MAX) {
		free(b);
		return es_errf(ES_ERR_PARSE, err, errsz, "%s %s: over %d bytes", what,
			       path, ES_PKI_FILE_MAX);
	}
	b[n] = '\0';
	*out = b;
	return ES_OK;
}

es_err es_ca_open(const char *cert_path, const char *key_path, es_ca **out,
		  char *err, size_t errsz)
{
	static const char pers[] = "edgesync-ca";
	es_ca *ca = calloc(1, sizeof(*ca));
	char *key = NULL;
	int ret;
	es_err rc;

	*out = NULL;
	if (!ca)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	mbedtls_x509_crt_init(&ca->crt);
	mbedtls_pk_init(&ca->key);
	mbedtls_entropy_init(&ca->ent);
	mbedtls_ctr_drbg_init(&ca->drbg);
	if (psa_crypto_init() != PSA_SUCCESS) {
		rc = es_errf(ES_ERR_TLS, err, errsz, "PSA crypto initialisation failed");
		goto cleanup;
	}
	ret = mbedtls_ctr_drbg_seed(&ca->drbg, mbedtls_entropy_func, &ca->ent,
				    (const unsigned char *)pers, sizeof(pers) - 1);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "seeding the random generator", ret);
		goto cleanup;
	}
	if ((rc = es_ca_read_pem("ca-cert", cert_path, &ca->cert_pem, err, errsz)) != ES_OK ||
	    (rc = es_ca_read_pem("ca-key", key_path, &key, err, errsz)) != ES_OK)
		goto cleanup;
	rc = ES_ERR_PARSE;
	if (mbedtls_x509_crt_parse(&ca->crt, (const unsigned char *)ca->cert_pem,
				   strlen(ca->cert_pem) + 1) != 0) {
		es_errf(rc, err, errsz, "ca-cert %s: not a PEM X.509 certificate",
			cert_path);
		goto cleanup;
	}
	if (!ca->crt.MBEDTLS_PRIVATE(ca_istrue)) {
		es_errf(rc, err, errsz, "ca-cert %s: not a CA certificate "
			"(basicConstraints cA is not TRUE)", cert_path);
		goto cleanup;
	}
	if (mbedtls_pk_parse_key(&ca->key, (const unsigned char *)key,
				 strlen(key) + 1, NULL, 0, mbedtls_ctr_drbg_random,
				 &ca->drbg) != 0) {
		es_errf(rc, err, errsz, "ca-key %s: not an unencrypted PEM private key",
			key_path);
		goto cleanup;
	}
	if (mbedtls_pk_check_pair(&ca->crt.pk, &ca->key, mbedtls_ctr_drbg_random,
				  &ca->drbg) != 0) {
		es_errf(rc, err, errsz, "ca-key %s is not the key of ca-cert %s",
			key_path, cert_path);
		goto cleanup;
	}
	if (mbedtls_x509_dn_gets(ca->subject, sizeof(ca->subject),
				 &ca->crt.subject) < 0 ||
	    es_enroll_cert_pin(ca->crt.raw.p, ca->crt.raw.len, ca->pin) != ES_OK) {
		es_errf(rc, err, errsz, "ca-cert %s: unreadable subject", cert_path);
		goto cleanup;
	}
	ca->not_after = es_pki_not_after(&ca->crt);
	*out = ca;
	ca = NULL;
	rc = ES_OK;
cleanup:
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	es_ca_free(ca);
	return rc;
}

const char *es_ca_cert_pem(const es_ca *ca)
{
	return ca->cert_pem;
}

const char *es_ca_pin(const es_ca *ca)
{
	return ca->pin;
}

void es_ca_issued_free(es_ca_issued *out)
{
	if (!out)
		return;
	free(out->cert_pem);
	memset(out, 0, sizeof(*out));
}

/* "YYYYMMDDhhmmss" in UTC for mbedtls_x509write_crt_set_validity. */
static int fmt_time(time_t t, char out[32])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999)
		return -1;
	snprintf(out, 32, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return 0;
}

/* The request's signature over its CertificationRequestInfo verifies with
 * the request's own key (RFC 2986 section 3: proof of possession). */
static int csr_verify(const mbedtls_x509_csr *csr)
{
	unsigned char hash[MBEDTLS_MD_MAX_SIZE];
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(csr->MBEDTLS_PRIVATE(sig_md));

	if (!md || mbedtls_md(md, csr->cri.p, csr->cri.len, hash) != 0)
		return -1;
	return mbedtls_pk_verify_ext(csr->MBEDTLS_PRIVATE(sig_pk),
				     csr->MBEDTLS_PRIVATE(sig_opts),
				     (mbedtls_pk_context *)&csr->pk,
				     csr->MBEDTLS_PRIVATE(sig_md), hash,
				     mbedtls_md_get_size(md), csr->MBEDTLS_PRIVATE(sig).p,
				     csr->MBEDTLS_PRIVATE(sig).len) == 0 ? 0 : -1;
}

es_err es_ca_sign(es_ca *ca, const char *csr_pem, const char *trust_domain,
		  const char *name, int64_t lifetime, time_t now,
		  es_ca_issued *out, char *err, size_t errsz)
{
	mbedtls_x509_csr csr;
	mbedtls_x509write_cert w;
	mbedtls_x509_san_list san = { 0 };
	mbedtls_asn1_sequence eku = { 0 };
	unsigned char serial[SERIAL_LEN], *buf = NULL;
	char uri[512], subject[96], nb[32], na[32];
	size_t len;
	int ret;
	es_err rc = ES_ERR_INVAL;

	memset(out, 0, sizeof(*out));
	mbedtls_x509_csr_init(&csr);
	mbedtls_x509write_crt_init(&w);
	if (!name || !es_obj_name_valid(name) || strlen(name) > 63) {
		es_errf(rc, err, errsz, "node name \"%.80s\": expected an RFC 1123 "
			"DNS subdomain of at most 63 characters", name ? name : "");
		goto cleanup;
	}
	if (lifetime < ES_CA_LIFETIME_MIN || lifetime > ES_CA_LIFETIME_MAX) {
		es_errf(rc, err, errsz, "certificate lifetime %lld s: outside %d..%d",
			(long long)lifetime, ES_CA_LIFETIME_MIN, ES_CA_LIFETIME_MAX);
		goto cleanup;
	}
	len = csr_pem ? strlen(csr_pem) : 0;
	if (len == 0 || len > ES_ENROLL_CSR_MAX) {
		es_errf(rc, err, errsz, "certificate request: empty or over %d bytes",
			ES_ENROLL_CSR_MAX);
		goto cleanup;
	}
	if (mbedtls_x509_csr_parse(&csr, (const unsigned char *)csr_pem, len + 1) != 0) {
		es_errf(rc, err, errsz, "certificate request: not a PEM PKCS#10 request");
		goto cleanup;
	}
	if (!mbedtls_pk_can_do(&csr.pk, MBEDTLS_PK_ECKEY) &&
	    !mbedtls_pk_can_do(&csr.pk, MBEDTLS_PK_RSA)) {
		es_errf(rc, err, errsz, "certificate request: the key is neither EC nor RSA");
		goto cleanup;
	}
	if (csr_verify(&csr) != 0) {
		es_errf(rc, err, errsz, "certificate request: its signature does not "
			"verify with its own key");
		goto cleanup;
	}
	out->not_before = now - SKEW_S;
	out->not_after = now + (time_t)lifetime;
	if (out->not_after > ca->not_after)
		out->not_after = ca->not_after;
	if (fmt_time(out->not_before, nb) || fmt_time(out->not_after, na)) {
		es_errf(rc, err, errsz, "certificate validity out of range");
		goto cleanup;
	}
	if (!(buf = calloc(1, PEM_BUF))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	ret = mbedtls_ctr_drbg_random(&ca->drbg, serial, sizeof(serial));
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "serial number", ret);
		goto cleanup;
	}
	/* RFC 5280 section 4.1.2.2: positive; the top bit set keeps all 16
	 * octets, so the hex form is unique. */
	serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);
	for (size_t i = 0; i < SERIAL_LEN; i++)
		snprintf(out->serial + 2 * i, 3, "%02x", serial[i]);
	snprintf(uri, sizeof(uri), "spiffe://%s/node/%s", trust_domain, name);
	snprintf(subject, sizeof(subject), "CN=%s", name);
	san.node.type = MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER;
	san.node.san.unstructured_name.p = (unsigned char *)uri;
	san.node.san.unstructured_name.len = strlen(uri);
	eku.buf.tag = MBEDTLS_ASN1_OID;
	eku.buf.p = (unsigned char *)MBEDTLS_OID_CLIENT_AUTH;
	eku.buf.len = MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH);

	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, &csr.pk);
	mbedtls_x509write_crt_set_issuer_key(&w, &ca->key);
	if ((ret = mbedtls_x509write_crt_set_serial_raw(&w, serial, sizeof(serial))) != 0 ||
	    (ret = mbedtls_x509write_crt_set_validity(&w, nb, na)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_name(&w, subject)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_issuer_name(&w, ca->subject)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_basic_constraints(&w, 0, -1)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_key_usage(&w,
			MBEDTLS_X509_KU_DIGITAL_SIGNATURE)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_key_identifier(&w)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_authority_key_identifier(&w)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_alternative_name(&w, &san)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_ext_key_usage(&w, &eku)) != 0 ||
	    (ret = mbedtls_x509write_crt_pem(&w, buf, PEM_BUF, mbedtls_ctr_drbg_random,
					     &ca->drbg)) != 0) {
		rc = es_pki_tls_err(err, errsz, "signing the node certificate", ret);
		goto cleanup;
	}
	if (es_enroll_key_pin(csr_pem, out->key_pin) != ES_OK) {
		rc = es_errf(ES_ERR_TLS, err, errsz, "cannot hash the request's key");
		goto cleanup;
	}
	if (!(out->cert_pem = strdup((const char *)buf))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	rc = ES_OK;
cleanup:
	if (rc != ES_OK)
		es_ca_issued_free(out);
	free(buf);
	mbedtls_x509write_crt_free(&w);
	mbedtls_x509_csr_free(&csr);
	return rc;
}

es_err es_ca_check_presented(es_ca *ca, const char *cert_pem, const char *trust_domain,
			     es_ca_presented *out, char *err, size_t errsz)
{
	mbedtls_x509_crt crt;
	uint32_t flags = 0;
	size_t len = cert_pem ? strlen(cert_pem) : 0;
	es_err rc = ES_ERR_PARSE;

	memset(out, 0, sizeof(*out));
	mbedtls_x509_crt_init(&crt);
	if (len == 0 || len > ES_ENROLL_CSR_MAX ||
	    mbedtls_x509_crt_parse(&crt, (const unsigned char *)cert_pem, len + 1) != 0) {
		es_errf(rc, err, errsz, "certificate: not a PEM X.509 certificate of at "
			"most %d bytes", ES_ENROLL_CSR_MAX);
		goto cleanup;
	}
	rc = ES_ERR_AUTH;
	/* Every check of the chain but the leaf's dates: a certificate
	 * past its notAfter is what this path exists for. */
	(void)mbedtls_x509_crt_verify(&crt, &ca->crt, NULL, NULL, &flags, NULL, NULL);
	if (flags & ~(uint32_t)(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE)) {
		es_errf(rc, err, errsz, "certificate: not signed by this controller's "
			"signing CA (verify flags 0x%x)", (unsigned)flags);
		goto cleanup;
	}
	if ((rc = es_pki_check_peer(crt.raw.p, crt.raw.len, trust_domain, ES_ID_NODE,
				    out->node, sizeof(out->node), err, errsz)) != ES_OK)
		goto cleanup;
	if (crt.serial.len == 0 || crt.serial.len > 20) {
		rc = es_errf(ES_ERR_AUTH, err, errsz, "certificate: serial of %u octets "
			     "(RFC 5280 section 4.1.2.2: 1..20)", (unsigned)crt.serial.len);
		goto cleanup;
	}
	for (size_t i = 0; i < crt.serial.len; i++)
		snprintf(out->serial + 2 * i, 3, "%02x", crt.serial.p[i]);
	if (es_enroll_cert_pin(crt.raw.p, crt.raw.len, out->key_pin) != ES_OK) {
		rc = es_errf(ES_ERR_AUTH, err, errsz, "certificate: cannot hash its key");
		goto cleanup;
	}
	out->not_before = es_pki_not_before(&crt);
	out->not_after = es_pki_not_after(&crt);
	rc = ES_OK;
cleanup:
	if (rc != ES_OK)
		memset(out, 0, sizeof(*out));
	mbedtls_x509_crt_free(&crt);
	return rc;
}
