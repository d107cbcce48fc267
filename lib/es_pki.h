/*
 * es_pki.h - X.509 identities for edgesync with mbedTLS 3.6: SPIFFE IDs
 * (the SPIFFE standards "SPIFFE Identity and Verifiable Identity Document"
 * and "X.509 SPIFFE Verifiable Identity Document"), certificate issuing for development mode and tests, and the
 * controller's check of a peer certificate.
 *
 * Keys are ECDSA P-256; certificates are X.509 v3, PEM-encoded.
 */
#ifndef ES_PKI_H
#define ES_PKI_H

#include <stddef.h>
#include <time.h>
#include "es_err.h"

#define ES_PKI_DEFAULT_TRUST_DOMAIN "edgesync.local"

typedef enum es_identity_kind {
	ES_ID_NODE = 1,   /* spiffe://<td>/node/<name> */
	ES_ID_ADMIN = 2,  /* spiffe://<td>/admin/<name> */
} es_identity_kind;

/*
 * Parses a SPIFFE ID "spiffe://<trust-domain>/<node|admin>/<name>". The
 * trust domain must equal trust_domain (lower-case); name must be an RFC 1123
 * DNS subdomain. On success sets *kind and copies name into name_out
 * (name_sz >= 254). Errors: ES_ERR_AUTH with err saying which part is wrong.
 */
es_err es_pki_spiffe_parse(const char *uri, const char *trust_domain,
			   es_identity_kind *kind, char *name_out, size_t name_sz,
			   char *err, size_t errsz);

/*
 * Checks a peer's leaf certificate (DER, der_len bytes) that the TLS layer
 * has already verified against the CA: it must not be a CA (basic
 * constraints), must carry exactly one URI subjectAltName, and that URI
 * must be a SPIFFE ID of trust_domain whose kind is `want`. On success copies
 * the name into name_out (name_sz >= 254). Errors: ES_ERR_PARSE (not a
 * certificate), ES_ERR_AUTH (err says which rule failed), ES_ERR_NOMEM.
 * Rule source: SPIFFE X509-SVID sections 2 and 4.
 */
es_err es_pki_check_peer(const unsigned char *der, size_t der_len,
			 const char *trust_domain, es_identity_kind want,
			 char *name_out, size_t name_sz, char *err, size_t errsz);

/*
 * Checks that the X.509 certificate der (der_len bytes) is inside its
 * validity period at now (Unix seconds; RFC 5280 section 4.1.2.5). Errors:
 * ES_ERR_PARSE (not a certificate), ES_ERR_AUTH with why set to a phrase
 * that names both times, "not valid before 2030-01-01T00:00:00Z; the host
 * clock says 2026-12-01T15:44:06Z: check the clock" or "expired at
 * 2021-01-01T00:00:00Z (the host clock says ...)", ES_ERR_NOMEM.
 */
es_err es_pki_check_validity(const unsigned char *der, size_t der_len,
			     time_t now, char *why, size_t whysz);

/*
 * Checks that the server certificate der (der_len bytes) names host, the
 * host a client dialled, in a subjectAltName (RFC 6125 section 6): an IP
 * literal (IPv4 or IPv6, without brackets) must equal an iPAddress SAN; a
 * DNS name must equal a dNSName SAN, ignoring case and one trailing dot,
 * or match a wildcard that is the whole leftmost label ("*.example.com").
 * The subject common name is never used: a certificate without a DNS or IP
 * SAN is refused (PROTOCOL.md "Transport"), although mbedTLS's own check
 * falls back to it. Errors: ES_ERR_PARSE (not a certificate), ES_ERR_AUTH
 * with why saying what the certificate names instead, ES_ERR_INVAL (host
 * empty), ES_ERR_NOMEM.
 */
es_err es_pki_check_server_name(const unsigned char *der, size_t der_len,
				const char *host, char *why, size_t whysz);

/* The credential files of a mutual-TLS client (es_pki_creds_check), by the
 * names of the settings that hold them. */
typedef enum es_pki_file {
	ES_PKI_CERT = 0, /* "cert": the certificate, a leaf, then its chain */
	ES_PKI_KEY = 1,  /* "key": the certificate's private key */
	ES_PKI_CA = 2,   /* "ca": the CA certificate(s) the peer must chain to */
} es_pki_file;
#define ES_PKI_NFILES 3

typedef enum es_pki_file_state {
	ES_PKI_FILE_OK = 0,
	ES_PKI_FILE_MISSING = 1, /* no such file */
	ES_PKI_FILE_INVALID = 2, /* unreadable, empty, not PEM, ... (why says) */
} es_pki_file_state;

/* "cert", "key", "ca", indexed by es_pki_file, NULL-terminated. */
extern const char *const es_pki_file_names[];
/* "ok", "missing", "invalid", indexed by es_pki_file_state. */
extern const char *const es_pki_file_state_names[];

/* Largest credential file read (a CA bundle may hold many certificates). */
#define ES_PKI_FILE_MAX (1024 * 1024)

/* What es_pki_creds_check found. */
typedef struct es_pki_creds {
	es_pki_file_state state[ES_PKI_NFILES];
	/* What is wrong with each file, a phrase without its path ("empty
	 * file"); "" when it is ok. */
	char why[ES_PKI_NFILES][384];
	time_t cert_not_after;   /* the leaf's notAfter; 0 when unread */
	/* SHA-256 over the three files' contents, set when all are ok: a
	 * changed digest means changed files. */
	unsigned char digest[32];
} es_pki_creds;

/*
 * Reads and checks the three credential files of a mutual-TLS client, as
 * the TLS layer would load them, so that a bad one is named before a
 * connection fails obscurely. At most ES_PKI_FILE_MAX bytes each, PEM.
 *   cert: readable, not empty, a PEM certificate whose first (the leaf) is
 *         valid at now (Unix seconds) and not a CA;
 *   key:  readable, not empty, an unencrypted PEM private key that matches
 *         the leaf of cert (when cert could be parsed);
 *   ca:   readable, not empty, PEM certificates that all parse, each a CA
 *         (basicConstraints cA=TRUE, RFC 5280 section 4.2.1.9), at least
 *         one valid at now.
 * Fills *out for every file, also when one is bad. Returns ES_OK when all
 * three are ok, ES_ERR_INVAL when one is missing or invalid (out says
 * which and why), ES_ERR_NOMEM.
 */
es_err es_pki_creds_check(const char *cert, const char *key, const char *ca,
			  time_t now, es_pki_creds *out);

/* What to put in an issued certificate. Unused pointers may be NULL. */
typedef struct es_pki_req {
	const char *common_name;      /* subject CN, required */
	const char *uri_san;          /* one URI SAN, e.g. a SPIFFE ID */
	const char *const *dns_sans;  /* NULL-terminated list of DNS names */
	const char *const *ip_sans;   /* NULL-terminated list of IPv4/IPv6 literals */
	time_t not_before;            /* 0: now - 5 minutes */
	time_t not_after;             /* 0: not_before + 365 days */
	int is_ca;                    /* 1: a CA (keyCertSign, cRLSign) */
	int server_auth;              /* 1: extendedKeyUsage serverAuth */
	int client_auth;              /* 1: extendedKeyUsage clientAuth */
} es_pki_req;

/*
 * Makes a new P-256 key and a certificate for req, signed by the CA given as
 * PEM strings (ca_cert_pem/ca_key_pem), or self-signed when both are NULL.
 * On success *cert_pem and *key_pem are malloc'd NUL-terminated PEM strings
 * the caller frees. Errors: ES_ERR_INVAL (bad req: err names the field),
 * ES_ERR_PARSE (CA PEM unreadable), ES_ERR_TLS (mbedTLS failed, err carries
 * its message), ES_ERR_NOMEM.
 */
es_err es_pki_issue(const es_pki_req *req, const char *ca_cert_pem,
		    const char *ca_key_pem, char **cert_pem, char **key_pem,
		    char *err, size_t errsz);

struct mbedtls_x509_crt;
/* The notAfter of a parsed certificate as Unix seconds (UTC). */
time_t es_pki_not_after(const struct mbedtls_x509_crt *crt);
/* The notBefore of a parsed certificate as Unix seconds (UTC). */
time_t es_pki_not_before(const struct mbedtls_x509_crt *crt);

/* ES_ERR_TLS with err "what: <mbedTLS's text for ret> (-0xNNNN)". */
es_err es_pki_tls_err(char *err, size_t errsz, const char *what, int ret);

/*
 * Writes data to path so that a crash leaves either the old file or the new
 * one: a temporary file in the same directory, fsync, rename, fsync of the
 * directory. mode is the file's permission bits (0600 for keys).
 * Errors: ES_ERR_IO with err naming the path and errno text.
 */
es_err es_pki_write_file_atomic(const char *path, const char *data, size_t len,
				unsigned mode, char *err, size_t errsz);

/*
 * Development mode: makes, under dir (created 0700 if missing), a throwaway
 * CA and certificates unless they already exist (existing files are reused,
 * so restarts keep identities):
 *   dir/ca.crt, dir/ca.key
 *   dir/controller.crt/.key  DNS SANs "localhost" and each of extra_dns,
 *                            IP SANs 127.0.0.1 and ::1; serverAuth
 *   dir/admin.crt/.key       URI SAN spiffe://<td>/admin/admin; clientAuth
 *   dir/nodes/<name>.crt/.key for each name in nodes (NULL-terminated):
 *                            URI SAN spiffe://<td>/node/<name>; clientAuth
 * Keys are written 0600. Errors: as es_pki_issue and
 * es_pki_write_file_atomic; ES_ERR_INVAL for a node name that is not an
 * RFC 1123 subdomain.
 */
es_err es_pki_dev_init(const char *dir, const char *trust_domain,
		       const char *const *nodes, const char *const *extra_dns,
		       char *err, size_t errsz);

#endif
