/*
 * renew.h - what the agent's certificate renewal needs besides the
 * session, and the renewal of an expired certificate at the join listener
 * (PROTOCOL.md "Renewal of an expired certificate") (PROTOCOL.md "Renewal"; the session side is agent/sync/): when a
 * certificate is due for renewal, how long to wait after a failed attempt,
 * the checks of what the controller sent, and writing the new key,
 * certificate and trust bundle so that a crash at any point leaves a pair
 * that matches.
 */
#ifndef ES_AGENT_RENEW_H
#define ES_AGENT_RENEW_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include "es_err.h"
#include "runtime/config.h"

/* Renewal at this percent of the lifetime by default (SPIRE's X509-SVID
 * rotation at half its lifetime), and the most jitter added, in percent
 * of the lifetime. */
#define ES_RENEW_PERCENT_DEFAULT 50
#define ES_RENEW_JITTER_PCT 10
/* Waits after a failed renewal: full jitter over an exponential backoff
 * from ES_RENEW_RETRY_MIN_S, at most ES_RENEW_RETRY_MAX_S seconds. */
#define ES_RENEW_RETRY_MIN_S 5
#define ES_RENEW_RETRY_MAX_S 300
/* Suffix of the new key written before the certificate is renamed into
 * place (es_renew_install, es_renew_recover). */
#define ES_RENEW_KEY_NEXT ".next"

/* What renewal reads of a certificate file. */
typedef struct es_renew_cert {
	time_t not_before, not_after; /* Unix seconds */
	time_t written;               /* the file's mtime, 0 when unknown */
	char serial[41];              /* lower-case hex */
} es_renew_cert;

/*
 * Reads the leaf (the first certificate) of the PEM file path into *out.
 * Errors (err names the file): ES_ERR_NOTFOUND (no such file), ES_ERR_IO
 * (unreadable), ES_ERR_PARSE (no certificate first in it), ES_ERR_NOMEM.
 */
es_err es_renew_cert_read(const char *path, es_renew_cert *out, char *err,
			  size_t errsz);

/*
 * When a certificate is due for renewal, Unix seconds: percent (1..99) of
 * its lifetime after its start, plus jitter of up to ES_RENEW_JITTER_PCT
 * percent of the lifetime (but at most half the rest of it), rnd/2^32 of
 * that maximum. The start is notBefore, or the time the file was written
 * when that is later: a controller backdates notBefore for clock skew
 * (five minutes), which would make a short-lived certificate due as soon
 * as it arrives. A certificate whose start is not before its notAfter is
 * due at its start. Rule source: SPIRE rotates an X509-SVID at half its
 * lifetime.
 */
time_t es_renew_due(const es_renew_cert *c, int percent, uint32_t rnd);

/*
 * Seconds to wait after the n-th (n >= 1) failed renewal in a row: a
 * uniformly random part (rnd/2^32) of the upper half of
 * min(ES_RENEW_RETRY_MAX_S, ES_RENEW_RETRY_MIN_S * 2^(n-1)), and at least
 * retry_after (the controller's retryAfterSeconds, 0: none).
 */
int64_t es_renew_retry_s(int n, uint32_t rnd, int64_t retry_after);

/*
 * Checks the trust bundle bundle_pem the controller sent: PEM certificates
 * that all parse and are all CAs (RFC 5280 section 4.2.1.9), and, when
 * peer_der is not NULL (the controller's certificate of this session, DER
 * of peer_len bytes), one of them verifies it, so that the agent never
 * takes a bundle that would refuse the controller it is talking to.
 * Errors: ES_ERR_PARSE (err says which certificate and why), ES_ERR_AUTH
 * (the peer does not verify), ES_ERR_NOMEM.
 */
es_err es_renew_bundle_check(const char *bundle_pem, const unsigned char *peer_der,
			     size_t peer_len, char *err, size_t errsz);

/*
 * Writes bundle_pem to ca_path atomically (0644) unless the file holds
 * exactly that already; *changed (may be NULL) says whether it wrote.
 * Errors: ES_ERR_IO (err names the file).
 */
es_err es_renew_bundle_write(const char *ca_path, const char *bundle_pem,
			     int *changed, char *err, size_t errsz);

/*
 * Installs a renewed identity: cert_pem must be a certificate for the
 * public key of key_pem (else ES_ERR_INVAL, nothing written). Writes
 * key_path + ES_RENEW_KEY_NEXT (0600, fsynced), then cert_path
 * atomically (0644), then renames the new key over key_path and fsyncs
 * the directory: a crash in between leaves the new certificate beside
 * the new key under its .next name, which es_renew_recover puts in place.
 * Errors: ES_ERR_INVAL, ES_ERR_PARSE (cert_pem or key_pem unreadable),
 * ES_ERR_IO (err names the file), ES_ERR_TLS.
 */
es_err es_renew_install(const char *cert_path, const char *key_path,
			const char *cert_pem, const char *key_pem, char *err,
			size_t errsz);

/*
 * At start: a key_path + ES_RENEW_KEY_NEXT left by a crash inside
 * es_renew_install is renamed over key_path when it is the key of the
 * certificate at cert_path (*recovered 1), else removed. Nothing to do
 * is ES_OK. Errors: ES_ERR_IO (err names the file).
 */
es_err es_renew_recover(const char *cert_path, const char *key_path,
			int *recovered, char *err, size_t errsz);

/* ---- expired certificates ---------------------------------------------- */

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
