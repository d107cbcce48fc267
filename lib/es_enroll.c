/*
 * es_enroll.c - bootstrap tokens, secret hashes, CA pins, the node's key and
 * certificate request (es_enroll.h).
 */
#include "es_enroll.h"
#include "es_pki.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/psa_util.h>
#include <mbedtls/sha256.h>
#include <mbedtls/x509_crt.h>
#include <mbedtls/x509_csr.h>
#include <psa/crypto.h>

#define TOKEN_ALPHABET "abcdefghijklmnopqrstuvwxyz0123456789"
#define PEM_BUF 4096
/* Largest DER SubjectPublicKeyInfo written (P-256 is 91 bytes, RSA-8192
 * about 1.1 KiB). */
#define SPKI_MAX 2048


es_err es_enroll_token_new(char out[ES_ENROLL_TOKEN_SZ])
{
	unsigned char b[64];
	size_t n = 0, used = sizeof(b);

	while (n < ES_ENROLL_ID_LEN + ES_ENROLL_SECRET_LEN) {
		if (used == sizeof(b)) {
			if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
				return ES_ERR_TLS;
			used = 0;
		}
		/* 252 = 7 * 36: no bias (rejection sampling). */
		if (b[used] < 252) {
			size_t pos = n < ES_ENROLL_ID_LEN ? n : n + 1;

			out[pos] = TOKEN_ALPHABET[b[used] % 36];
			n++;
		}
		used++;
	}
	out[ES_ENROLL_ID_LEN] = '.';
	out[ES_ENROLL_TOKEN_SZ - 1] = '\0';
	explicit_bzero(b, sizeof(b));
	return ES_OK;
}

static int token_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

int es_enroll_token_id_valid(const char *id)
{
	return id && strlen(id) == ES_ENROLL_ID_LEN && token_chars(id, ES_ENROLL_ID_LEN);
}

es_err es_enroll_token_split(const char *token, char *id, char *secret,
			     char *err, size_t errsz)
{
	const char *dot;

	if (!token || !*token)
		return es_errf(ES_ERR_INVAL, err, errsz, "token: empty");
	dot = strchr(token, '.');
	if (!dot || strlen(token) != ES_ENROLL_TOKEN_SZ - 1 ||
	    dot - token != ES_ENROLL_ID_LEN)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "token: expected <id>.<secret>, 6 and 16 characters "
			       "of a-z and 0-9");
	if (!token_chars(token, ES_ENROLL_ID_LEN) ||
	    !token_chars(dot + 1, ES_ENROLL_SECRET_LEN))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "token: only lower-case letters and digits may "
			       "appear around the '.'");
	memcpy(id, token, ES_ENROLL_ID_LEN);
	id[ES_ENROLL_ID_LEN] = '\0';
	memcpy(secret, dot + 1, ES_ENROLL_SECRET_LEN);
	secret[ES_ENROLL_SECRET_LEN] = '\0';
	return ES_OK;
}

static void to_hex(const unsigned char *d, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[2 * n] = '\0';
}

es_err es_enroll_sha256_hex(const char *s, size_t len, char hex[ES_ENROLL_HEX_SZ])
{
	unsigned char d[32];

	if (mbedtls_sha256((const unsigned char *)s, len, d, 0) != 0)
		return ES_ERR_TLS;
	to_hex(d, sizeof(d), hex);
	return ES_OK;
}

int es_enroll_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char acc = (unsigned char)(la != lb);

	for (size_t i = 0; i < la && i < lb; i++)
		acc |= (unsigned char)(a[i] ^ b[i]);
	return acc == 0;
}

/* The pin of a public key: SHA-256 over its DER SubjectPublicKeyInfo. */
static es_err pk_pin(mbedtls_pk_context *pk, char pin[ES_ENROLL_PIN_SZ])
{
	unsigned char buf[SPKI_MAX], d[32];
	int n = mbedtls_pk_write_pubkey_der(pk, buf, sizeof(buf));

	if (n <= 0)
		return ES_ERR_TLS;
	/* mbedtls writes DER at the end of the buffer. */
	if (mbedtls_sha256(buf + sizeof(buf) - (size_t)n, (size_t)n, d, 0) != 0)
		return ES_ERR_TLS;
	memcpy(pin, "sha256:", 7);
	to_hex(d, sizeof(d), pin + 7);
	return ES_OK;
}

es_err es_enroll_cert_pin(const unsigned char *der, size_t der_len,
			  char pin[ES_ENROLL_PIN_SZ])
{
	mbedtls_x509_crt crt;
	unsigned char d[32];
	es_err rc = ES_OK;

	mbedtls_x509_crt_init(&crt);
	if (mbedtls_x509_crt_parse_der(&crt, der, der_len) != 0) {
		rc = ES_ERR_PARSE;
		goto cleanup;
	}
	/* pk_raw is the certificate's SubjectPublicKeyInfo as it was signed. */
	if (mbedtls_sha256(crt.pk_raw.p, crt.pk_raw.len, d, 0) != 0) {
		rc = ES_ERR_TLS;
		goto cleanup;
	}
	memcpy(pin, "sha256:", 7);
	to_hex(d, sizeof(d), pin + 7);
cleanup:
	mbedtls_x509_crt_free(&crt);
	return rc;
}

es_err es_enroll_key_pin(const char *pem, char pin[ES_ENROLL_PIN_SZ])
{
	mbedtls_pk_context pk;
	mbedtls_x509_csr csr;
	mbedtls_x509_crt crt;
	size_t len = strlen(pem) + 1;
	es_err rc = ES_ERR_PARSE;

	mbedtls_pk_init(&pk);
	mbedtls_x509_csr_init(&csr);
	mbedtls_x509_crt_init(&crt);
	if (psa_crypto_init() != PSA_SUCCESS) {
		rc = ES_ERR_TLS;
		goto cleanup;
	}
	if (mbedtls_x509_csr_parse(&csr, (const unsigned char *)pem, len) == 0)
		rc = pk_pin(&csr.pk, pin);
	else if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)pem, len) == 0)
		rc = pk_pin(&crt.pk, pin);
	else if (mbedtls_pk_parse_public_key(&pk, (const unsigned char *)pem, len) == 0 ||
		 mbedtls_pk_parse_key(&pk, (const unsigned char *)pem, len, NULL, 0,
				      mbedtls_psa_get_random,
				      MBEDTLS_PSA_RANDOM_STATE) == 0)
		rc = pk_pin(&pk, pin);
cleanup:
	mbedtls_pk_free(&pk);
	mbedtls_x509_csr_free(&csr);
	mbedtls_x509_crt_free(&crt);
	return rc;
}

es_err es_enroll_pin_parse(const char *s, char out[ES_ENROLL_PIN_SZ],
			   char *err, size_t errsz)
{
	if (!s || strncmp(s, "sha256:", 7) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "ca-hash: expected sha256:<64 hex digits> (the "
			       "SHA-256 of the CA certificate's public key)");
	if (strlen(s + 7) != 64)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "ca-hash: %zu hex digits after sha256:, expected 64",
			       strlen(s + 7));
	memcpy(out, "sha256:", 7);
	for (size_t i = 0; i < 64; i++) {
		if (!isxdigit((unsigned char)s[7 + i]))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "ca-hash: '%c' is not a hex digit", s[7 + i]);
		out[7 + i] = (char)tolower((unsigned char)s[7 + i]);
	}
	out[ES_ENROLL_PIN_SZ - 1] = '\0';
	return ES_OK;
}

/* Seeds a CTR-DRBG from the platform entropy. */
static es_err drbg_seed(mbedtls_ctr_drbg_context *drbg,
			mbedtls_entropy_context *ent, char *err, size_t errsz)
{
	static const char pers[] = "edgesync-enroll";
	int ret;

	if (psa_crypto_init() != PSA_SUCCESS)
		return es_errf(ES_ERR_TLS, err, errsz, "PSA crypto initialisation failed");
	ret = mbedtls_ctr_drbg_seed(drbg, mbedtls_entropy_func, ent,
				    (const unsigned char *)pers, sizeof(pers) - 1);
	return ret ? es_pki_tls_err(err, errsz, "seeding the random generator", ret) : ES_OK;
}

es_err es_enroll_key_new(char **key_pem, char *err, size_t errsz)
{
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_pk_context key;
	unsigned char *buf = NULL;
	int ret;
	es_err rc;

	*key_pem = NULL;
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_pk_init(&key);
	if ((rc = drbg_seed(&drbg, &ent, err, errsz)) != ES_OK)
		goto cleanup;
	if (!(buf = calloc(1, PEM_BUF))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "key: out of memory");
		goto cleanup;
	}
	ret = mbedtls_pk_setup(&key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (ret == 0)
		ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key),
					  mbedtls_ctr_drbg_random, &drbg);
	if (ret == 0)
		ret = mbedtls_pk_write_key_pem(&key, buf, PEM_BUF);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "generating a P-256 key", ret);
		goto cleanup;
	}
	if (!(*key_pem = strdup((const char *)buf)))
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "key: out of memory");
cleanup:
	if (buf) {
		explicit_bzero(buf, PEM_BUF);
		free(buf);
	}
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&ent);
	return rc;
}

es_err es_enroll_csr_new(const char *key_pem, const char *cn, char **csr_pem,
			 char *err, size_t errsz)
{
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_pk_context key;
	mbedtls_x509write_csr w;
	unsigned char *buf = NULL;
	char subject[96];
	int ret;
	es_err rc;

	*csr_pem = NULL;
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_pk_init(&key);
	mbedtls_x509write_csr_init(&w);
	if (!cn || !*cn || strlen(cn) > 64 || strpbrk(cn, ",=+<>#;\"\\")) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "certificate request: the common name must be 1..64 "
			     "bytes without DN special characters");
		goto cleanup;
	}
	if ((rc = drbg_seed(&drbg, &ent, err, errsz)) != ES_OK)
		goto cleanup;
	if (mbedtls_pk_parse_key(&key, (const unsigned char *)key_pem,
				 strlen(key_pem) + 1, NULL, 0,
				 mbedtls_ctr_drbg_random, &drbg) != 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz,
			     "certificate request: the key is not a PEM private key");
		goto cleanup;
	}
	if (!(buf = calloc(1, PEM_BUF))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "certificate request: out of memory");
		goto cleanup;
	}
	snprintf(subject, sizeof(subject), "CN=%s", cn);
	mbedtls_x509write_csr_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_csr_set_key(&w, &key);
	ret = mbedtls_x509write_csr_set_subject_name(&w, subject);
	if (ret == 0)
		ret = mbedtls_x509write_csr_pem(&w, buf, PEM_BUF, mbedtls_ctr_drbg_random,
						&drbg);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "writing the certificate request", ret);
		goto cleanup;
	}
	if (!(*csr_pem = strdup((const char *)buf)))
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "certificate request: out of memory");
cleanup:
	free(buf);
	mbedtls_x509write_csr_free(&w);
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&ent);
	return rc;
}

es_enroll_phase es_enroll_cert_phase(time_t not_before, time_t not_after,
				     time_t now, int64_t grace_s)
{
	if (now < not_before)
		return ES_ENROLL_NOT_YET_VALID;
	if (now <= not_after)
		return ES_ENROLL_VALID;
	if (grace_s <= 0 || (int64_t)now - (int64_t)not_after > grace_s)
		return ES_ENROLL_PAST_GRACE;
	return ES_ENROLL_IN_GRACE;
}
