/*
 * ca.h - the controller's signing CA: `edgesync-controller ca init` makes
 * one; at run time it signs node certificate requests (PKCS#10, RFC 2986)
 * into X509-SVIDs (SPIFFE X509-SVID: exactly one URI SAN
 * spiffe://<trust-domain>/node/<name>, not a CA, digitalSignature,
 * extendedKeyUsage clientAuth). Only the request's public key is used: the
 * name, the lifetime and every extension are the controller's.
 */
#ifndef ES_CTRL_CA_H
#define ES_CTRL_CA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "es_enroll.h"
#include "es_err.h"

/* Bounds of cert-lifetime, seconds: ten seconds (tests of renewal and
 * expiry, which then happen within a test's time) to one year; the
 * default is SPIRE's and kubeadm's one day. */
#define ES_CA_LIFETIME_MIN 10
#define ES_CA_LIFETIME_MAX (365 * 24 * 3600)
#define ES_CA_LIFETIME_DEFAULT (24 * 3600)
/* Lifetime of a CA made by es_ca_create: ten years (kubeadm's). */
#define ES_CA_INIT_DAYS 3650
/* A serial as lower-case hex (16 random bytes) and its NUL. */
#define ES_CA_SERIAL_SZ 33

typedef struct es_ca es_ca;

/*
 * Makes a new self-signed P-256 CA, subject CN "<trust_domain> edgesync
 * CA", valid ES_CA_INIT_DAYS, and writes cert_path (0644) and key_path
 * (0600) atomically (es_pki_write_file_atomic), creating neither directory
 * nor file when either exists already. pin (ES_ENROLL_PIN_SZ, may be NULL)
 * gets the certificate's pin for `--ca-hash`.
 * Errors: ES_ERR_EXISTS (a file is there; err names it), ES_ERR_IO,
 * ES_ERR_TLS, ES_ERR_NOMEM.
 */
es_err es_ca_create(const char *cert_path, const char *key_path,
		    const char *trust_domain, char *pin, char *err, size_t errsz);

/*
 * Loads the CA from PEM files: the certificate must be a CA (basic
 * constraints cA=TRUE) and the key its own. *out is freed with es_ca_free.
 * Errors: ES_ERR_IO (unreadable, err names the file), ES_ERR_PARSE (not a
 * certificate or key, not a CA, key mismatch: err says which),
 * ES_ERR_TLS, ES_ERR_NOMEM.
 */
es_err es_ca_open(const char *cert_path, const char *key_path, es_ca **out,
		  char *err, size_t errsz);

void es_ca_free(es_ca *ca); /* NULL-safe */

/* Reads the PEM file path whole (at most ES_PKI_FILE_MAX bytes) into *out
 * (malloc'd, NUL-terminated); what names the setting in errors.
 * Errors: ES_ERR_IO (err names what and the file), ES_ERR_PARSE (too
 * big), ES_ERR_NOMEM. */
es_err es_ca_read_pem(const char *what, const char *path, char **out,
		      char *err, size_t errsz);

/* The CA certificate as PEM (owned by ca). */
const char *es_ca_cert_pem(const es_ca *ca);
/* The CA certificate's pin "sha256:<hex>" (owned by ca). */
const char *es_ca_pin(const es_ca *ca);

/* One issued certificate. */
typedef struct es_ca_issued {
	char *cert_pem;                 /* malloc'd; the caller frees */
	char serial[ES_CA_SERIAL_SZ];   /* lower-case hex */
	char key_pin[ES_ENROLL_PIN_SZ]; /* the pin of the subject's public key */
	time_t not_before, not_after;   /* Unix seconds */
} es_ca_issued;

/*
 * Signs the certificate request csr_pem (NUL-terminated PEM, at most
 * ES_ENROLL_CSR_MAX bytes) for node name (an RFC 1123 subdomain) of
 * trust_domain: valid from now - 5 minutes (clock skew) to now + lifetime
 * seconds (ES_CA_LIFETIME_MIN..MAX), but never past the CA's own notAfter.
 * The request's signature must verify with its own key (proof of
 * possession); its subject and attributes are ignored.
 * Errors: ES_ERR_INVAL (a bad name, lifetime, or a request that does not
 * parse or verify: err says which), ES_ERR_TLS, ES_ERR_NOMEM.
 */
es_err es_ca_sign(es_ca *ca, const char *csr_pem, const char *trust_domain,
		  const char *name, int64_t lifetime, time_t now,
		  es_ca_issued *out, char *err, size_t errsz);

/* Frees out->cert_pem and zeroes *out. NULL-safe. */
void es_ca_issued_free(es_ca_issued *out);

/* A certificate presented for renewal (es_ca_check_presented). */
typedef struct es_ca_presented {
	char node[254];                 /* the node of its SPIFFE ID */
	char serial[41];                /* lower-case hex, up to 20 octets */
	char key_pin[ES_ENROLL_PIN_SZ]; /* the pin of its public key */
	time_t not_before, not_after;   /* Unix seconds */
} es_ca_presented;

/*
 * Checks a node certificate presented for renewal with an expired
 * certificate (PROTOCOL.md "Renewal of an expired certificate"): cert_pem
 * (NUL-terminated PEM, its first certificate is read) must be signed by
 * this CA, verified as a chain in every respect except its validity dates
 * (notBefore/notAfter of the leaf are what renewal is about; RFC 5280
 * section 6.1.3 otherwise), not be a CA, and name exactly one node of
 * trust_domain (SPIFFE X509-SVID). Fills *out. Errors: ES_ERR_PARSE (not
 * a PEM certificate), ES_ERR_AUTH (not signed by this CA, or not a node's
 * X509-SVID: err says which), ES_ERR_NOMEM.
 */
es_err es_ca_check_presented(es_ca *ca, const char *cert_pem, const char *trust_domain,
			     es_ca_presented *out, char *err, size_t errsz);

#endif
