/*
 * es_enroll.h - what joining a node needs on both sides, with mbedTLS 3.6:
 * bootstrap tokens of the kubeadm shape "<id>.<secret>" (6 and 16
 * characters of [a-z0-9]; kubeadm's "Bootstrap Tokens" reference), the
 * SHA-256 of a secret as the store keeps it, the pin of a CA certificate
 * (SHA-256 of its DER SubjectPublicKeyInfo, RFC 5280 section 4.1.2.7,
 * written "sha256:<64 hex>" as kubeadm's --discovery-token-ca-cert-hash),
 * and the node's key and PKCS#10 certificate request (RFC 2986).
 */
#ifndef ES_ENROLL_H
#define ES_ENROLL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "es_err.h"

#define ES_ENROLL_ID_LEN 6
#define ES_ENROLL_SECRET_LEN 16
/* "<id>.<secret>" and its NUL. */
#define ES_ENROLL_TOKEN_SZ (ES_ENROLL_ID_LEN + 1 + ES_ENROLL_SECRET_LEN + 1)
/* 64 hex digits and a NUL. */
#define ES_ENROLL_HEX_SZ 65
/* "sha256:" + 64 hex digits and a NUL. */
#define ES_ENROLL_PIN_SZ (7 + 64 + 1)
/* Largest certificate request accepted (PEM). */
#define ES_ENROLL_CSR_MAX 8192
/* The join listener's port by default: the agents' port plus this (7443,
 * 7444 admin, 7445 join), so a controller moved to other ports moves its
 * join listener with them, and an agent finds it from controller-url. */
#define ES_ENROLL_JOIN_PORT_OFFSET 2

/*
 * Makes a new token from the system's random generator into out
 * (ES_ENROLL_TOKEN_SZ bytes): 6 then 16 characters of [a-z0-9] joined by
 * '.'. Errors: ES_ERR_TLS (no randomness).
 */
es_err es_enroll_token_new(char out[ES_ENROLL_TOKEN_SZ]);

/*
 * Splits token into its id (ES_ENROLL_ID_LEN + 1 bytes) and secret
 * (ES_ENROLL_SECRET_LEN + 1 bytes), checking the shape
 * ^[a-z0-9]{6}\.[a-z0-9]{16}$. Errors: ES_ERR_INVAL with err saying what
 * is wrong (never quoting the secret).
 */
es_err es_enroll_token_split(const char *token, char *id, char *secret,
			     char *err, size_t errsz);

/* 1 when id is 6 characters of [a-z0-9]. */
int es_enroll_token_id_valid(const char *id);

/* SHA-256 of the NUL-terminated s as lower-case hex into hex
 * (ES_ENROLL_HEX_SZ bytes). Errors: ES_ERR_TLS. */
es_err es_enroll_sha256_hex(const char *s, size_t len, char hex[ES_ENROLL_HEX_SZ]);

/* 1 when the two NUL-terminated strings are equal, in time that depends
 * only on their lengths. */
int es_enroll_equal(const char *a, const char *b);

/*
 * The pin of the X.509 certificate der (der_len bytes): "sha256:" and the
 * hex SHA-256 of its SubjectPublicKeyInfo, into pin (ES_ENROLL_PIN_SZ).
 * Errors: ES_ERR_PARSE (not a certificate), ES_ERR_TLS.
 */
es_err es_enroll_cert_pin(const unsigned char *der, size_t der_len,
			  char pin[ES_ENROLL_PIN_SZ]);

/* The same pin of the public key of a PEM or DER private key, public key or
 * certificate request (whichever pem holds; NUL-terminated when PEM).
 * Errors: ES_ERR_PARSE, ES_ERR_TLS. */
es_err es_enroll_key_pin(const char *pem, char pin[ES_ENROLL_PIN_SZ]);

/*
 * Checks that s is a pin as written by an operator: "sha256:" then 64 hex
 * digits (either case). Copies it, lower-cased, into out
 * (ES_ENROLL_PIN_SZ). Errors: ES_ERR_INVAL with err naming the problem.
 */
es_err es_enroll_pin_parse(const char *s, char out[ES_ENROLL_PIN_SZ],
			   char *err, size_t errsz);

/*
 * Makes a new ECDSA P-256 private key; *key_pem gets it as a malloc'd PEM
 * string (caller wipes and frees). Errors: ES_ERR_TLS, ES_ERR_NOMEM.
 */
es_err es_enroll_key_new(char **key_pem, char *err, size_t errsz);

/*
 * A PKCS#10 request (RFC 2986) signed with key_pem, subject CN=cn, no
 * extensions: the controller takes only its public key. *csr_pem is a
 * malloc'd PEM string. Errors: ES_ERR_PARSE (key unreadable),
 * ES_ERR_INVAL (cn empty or over 64 bytes), ES_ERR_TLS, ES_ERR_NOMEM.
 */
es_err es_enroll_csr_new(const char *key_pem, const char *cn, char **csr_pem,
			 char *err, size_t errsz);

/* Default renewal grace, seconds (renewal-grace): 30 days. */
#define ES_ENROLL_GRACE_DEFAULT (30 * 24 * 3600)
/* Largest renewal grace, seconds: one year. */
#define ES_ENROLL_GRACE_MAX (365 * 24 * 3600)

/* Where a certificate's validity stands at a moment (es_enroll_cert_phase). */
typedef enum es_enroll_phase {
	ES_ENROLL_VALID = 0,        /* notBefore <= now <= notAfter */
	ES_ENROLL_NOT_YET_VALID = 1, /* now < notBefore */
	ES_ENROLL_IN_GRACE = 2,     /* notAfter < now <= notAfter + grace */
	ES_ENROLL_PAST_GRACE = 3,   /* past the grace, or expired with grace 0 */
} es_enroll_phase;

/*
 * The phase of a certificate valid from not_before to not_after (Unix
 * seconds, inclusive, RFC 5280 section 4.1.2.5) at now, with a renewal
 * grace of grace_s seconds after notAfter (PROTOCOL.md "Renewal of an
 * expired certificate": an expired certificate may be renewed while
 * now <= notAfter + grace; grace_s <= 0 turns that off, so every expired
 * certificate is ES_ENROLL_PAST_GRACE). Never fails.
 */
es_enroll_phase es_enroll_cert_phase(time_t not_before, time_t not_after,
				     time_t now, int64_t grace_s);

#endif
