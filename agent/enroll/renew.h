/*
 * renew.h - a joined node whose certificate expired (the agent was offline
 * past its notAfter) renews it at the controller's join listener with the
 * same key (PROTOCOL.md, "Renewal of an expired certificate"): the
 * agents' listener refuses an expired certificate in the TLS handshake,
 * so the renewal is plain HTTPS, verified against the agent's ca file,
 * POST <join-url>/v1/join/renew {certificate, csr}; the controller takes
 * it within its renewal-grace, for a node it did not revoke. Also: what
 * the node condition CertificateValid says about the certificate's dates.
 */
#ifndef ES_AGENT_RENEW_H
#define ES_AGENT_RENEW_H

#include <stdio.h>
#include <time.h>
#include "es_err.h"
#include "runtime/config.h"

/* What the node certificate file says about itself (es_renew_cert_read). */
typedef struct es_renew_cert {
	time_t not_before, not_after; /* Unix seconds, of the first certificate */
	char serial[41];              /* lower-case hex */
} es_renew_cert;

/*
 * Reads the first certificate of the PEM file path into *out.
 * Errors: ES_ERR_NOTFOUND (no such file), ES_ERR_IO (unreadable),
 * ES_ERR_PARSE (not a PEM certificate); err names the file.
 */
es_err es_renew_cert_read(const char *path, es_renew_cert *out, char *err,
			  size_t errsz);

/* Where a certificate stands for CertificateValid (es_renew_cert_status). */
typedef enum es_renew_state {
	ES_RENEW_VALID = 0,       /* "Valid" */
	ES_RENEW_NOT_YET_VALID,   /* "NotYetValid": the host clock is behind */
	ES_RENEW_EXPIRED,         /* "Expired": renew at the join listener */
} es_renew_state;

/*
 * The state of c at now (RFC 5280 section 4.1.2.5: valid from notBefore
 * to notAfter inclusive), its condition reason (*reason, static) and a
 * message with the date that matters, in RFC 3339 ("valid until
 * 2026-12-01T21:00:00Z (serial 4a..)", "expired at ...", "not valid
 * before ...; check this host's clock") into msg. Never fails.
 */
es_renew_state es_renew_cert_status(const es_renew_cert *c, time_t now,
				    const char **reason, char *msg, size_t msgsz);

/*
 * Renews (cfg validated, join-url set or derived): a PKCS#10 request
 * signed with the key at cfg->key, sent with the certificate at cfg->cert
 * to POST <join-url>/v1/join/renew over TLS verified against cfg->ca
 * (chain and host name); the answer's certificate, which must be for the
 * same key, is written to cfg->cert and its caBundle to cfg->ca, each
 * atomically, the bundle first. out (may be NULL) gets one line per file
 * written. reason (rsz bytes) gets the controller's refusal reason
 * (GraceExpired, CertificateRevoked, KeyMismatch, NotIssued, ...), or "".
 * Errors (err says which and why):
 *   ES_ERR_AUTH   the controller refused (a 4xx Status): renewing again
 *                 will not help, joining with a token may
 *   ES_ERR_INVAL  no join-url, or cert or key missing or unreadable as PEM
 *   ES_ERR_IO, ES_ERR_TLS  the join listener cannot be reached, failed
 *                 (5xx) or spoke nonsense; a file could not be written
 *   ES_ERR_NOMEM
 */
es_err es_renew_run(const es_agent_config *cfg, FILE *out, char *reason, size_t rsz,
		    char *err, size_t errsz);

#endif
