/*
 * renew.c - the agent's certificate renewal apart from the session, the
 * dates CertificateValid reports, and the renewal of an expired
 * certificate at the join listener (renew.h).
 */
#define _GNU_SOURCE /* asprintf */
#include "enroll/renew.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>

#include "enroll/join.h"
#include "es_enroll.h"
#include "es_fs.h"
#include "es_http.h"
#include "es_json.h"
#include "es_pki.h"
#include "es_time.h"
#include "es_version.h"

/* Connect, handshake and each wait for data of a renewal, ms. */
#define RENEW_TIMEOUT_MS 10000

/* es_join_read_pem of the file path, with its length in *len. */
static es_err slurp(const char *path, char **out, size_t *len, char *err, size_t errsz)
{
	es_err rc = es_join_read_pem("file", path, out, err, errsz);

	*len = *out ? strlen(*out) : 0;
	return rc;
}

es_err es_renew_cert_read(const char *path, es_renew_cert *out, char *err,
			  size_t errsz)
{
	mbedtls_x509_crt crt;
	struct stat st;
	char *pem = NULL;
	size_t len = 0;
	es_err rc;

	memset(out, 0, sizeof(*out));
	mbedtls_x509_crt_init(&crt);
	if ((rc = slurp(path, &pem, &len, err, errsz)) != ES_OK)
		return rc;
	if (!pem)
		return es_errf(ES_ERR_NOTFOUND, err, errsz, "%s: no such file", path);
	/* A chain after the leaf may fail to parse; the leaf is what counts. */
	if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)pem, len + 1) < 0 &&
	    crt.raw.len == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: not a PEM certificate", path);
		goto cleanup;
	}
	out->not_before = es_pki_not_before(&crt);
	out->not_after = es_pki_not_after(&crt);
	for (size_t i = 0; i < crt.serial.len && 2 * i + 2 < sizeof(out->serial); i++)
		snprintf(out->serial + 2 * i, 3, "%02x", crt.serial.p[i]);
	if (stat(path, &st) == 0)
		out->written = st.st_mtime;
cleanup:
	mbedtls_x509_crt_free(&crt);
	free(pem);
	return rc;
}

time_t es_renew_due(const es_renew_cert *c, int percent, uint32_t rnd)
{
	time_t start = c->not_before;
	int64_t span, jmax;
	int jpct;

	if (c->written > start && c->written < c->not_after)
		start = c->written;
	span = (int64_t)c->not_after - (int64_t)start;
	if (span <= 0)
		return start;
	if (percent < 1)
		percent = 1;
	if (percent > 99)
		percent = 99;
	jpct = (100 - percent) / 2 < ES_RENEW_JITTER_PCT ? (100 - percent) / 2 :
	       ES_RENEW_JITTER_PCT;
	jmax = span * jpct / 100;
	return start + (time_t)(span * percent / 100) +
	       (time_t)((jmax * (int64_t)rnd) >> 32);
}

int64_t es_renew_retry_s(int n, uint32_t rnd, int64_t retry_after)
{
	int64_t d = ES_RENEW_RETRY_MIN_S, half;

	for (int i = 1; i < n && d < ES_RENEW_RETRY_MAX_S; i++)
		d *= 2;
	if (d > ES_RENEW_RETRY_MAX_S)
		d = ES_RENEW_RETRY_MAX_S;
	half = d / 2;
	d = half + (((d - half) * (int64_t)rnd) >> 32);
	return d < retry_after ? retry_after : d;
}

es_err es_renew_bundle_check(const char *bundle_pem, const unsigned char *peer_der,
			     size_t peer_len, char *err, size_t errsz)
{
	mbedtls_x509_crt ca, peer;
	uint32_t flags = 0;
	int n = 0, ret;
	es_err rc = ES_OK;

	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&peer);
	ret = mbedtls_x509_crt_parse(&ca, (const unsigned char *)bundle_pem,
				     strlen(bundle_pem) + 1);
	if (ret != 0) {
		rc = ret < 0 ? es_pki_tls_err(err, errsz, "trust bundle", ret) :
		     es_errf(ES_ERR_PARSE, err, errsz, "trust bundle: %d "
			     "certificates do not parse", ret);
		if (rc == ES_ERR_TLS)
			rc = ES_ERR_PARSE;
		goto cleanup;
	}
	for (mbedtls_x509_crt *c = &ca; c && c->raw.len; c = c->next, n++)
		if (!c->MBEDTLS_PRIVATE(ca_istrue)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "trust bundle: certificate "
				     "%d is not a CA", n + 1);
			goto cleanup;
		}
	if (n == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "trust bundle: no certificate");
		goto cleanup;
	}
	if (!peer_der)
		goto cleanup;
	if (mbedtls_x509_crt_parse_der(&peer, peer_der, peer_len) != 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "the controller's certificate "
			     "does not parse");
		goto cleanup;
	}
	if (mbedtls_x509_crt_verify(&peer, &ca, NULL, NULL, &flags, NULL, NULL) != 0 &&
	    (flags & (MBEDTLS_X509_BADCERT_NOT_TRUSTED | MBEDTLS_X509_BADCERT_REVOKED |
		      MBEDTLS_X509_BADCERT_MISSING | MBEDTLS_X509_BADCERT_BAD_MD |
		      MBEDTLS_X509_BADCERT_BAD_PK | MBEDTLS_X509_BADCERT_BAD_KEY |
		      MBEDTLS_X509_BADCERT_OTHER)))
		rc = es_errf(ES_ERR_AUTH, err, errsz, "trust bundle: it does not verify "
			     "the controller's certificate of this session (flags "
			     "0x%x); not taken, so that the next connect still works",
			     (unsigned)flags);
cleanup:
	mbedtls_x509_crt_free(&ca);
	mbedtls_x509_crt_free(&peer);
	return rc;
}

es_err es_renew_bundle_write(const char *ca_path, const char *bundle_pem,
			     int *changed, char *err, size_t errsz)
{
	char *cur = NULL;
	size_t len = 0;
	es_err rc;

	if (changed)
		*changed = 0;
	if ((rc = slurp(ca_path, &cur, &len, err, errsz)) != ES_OK)
		return rc;
	if (cur && len == strlen(bundle_pem) && memcmp(cur, bundle_pem, len) == 0) {
		free(cur);
		return ES_OK;
	}
	free(cur);
	rc = es_pki_write_file_atomic(ca_path, bundle_pem, strlen(bundle_pem), 0644, err,
				      errsz);
	if (rc == ES_OK && changed)
		*changed = 1;
	return rc;
}

/* path + ES_RENEW_KEY_NEXT into buf. Errors: ES_ERR_INVAL (too long). */
static es_err next_path(const char *key_path, char *buf, size_t sz, char *err,
			size_t errsz)
{
	if ((size_t)snprintf(buf, sz, "%s" ES_RENEW_KEY_NEXT, key_path) >= sz)
		return es_errf(ES_ERR_INVAL, err, errsz, "key %s: path too long", key_path);
	return ES_OK;
}

es_err es_renew_install(const char *cert_path, const char *key_path,
			const char *cert_pem, const char *key_pem, char *err,
			size_t errsz)
{
	char cpin[ES_ENROLL_PIN_SZ], kpin[ES_ENROLL_PIN_SZ], next[4096];
	es_err rc;

	if (es_enroll_key_pin(cert_pem, cpin) != ES_OK)
		return es_errf(ES_ERR_PARSE, err, errsz, "the new certificate does not parse");
	if (es_enroll_key_pin(key_pem, kpin) != ES_OK)
		return es_errf(ES_ERR_PARSE, err, errsz, "the new key does not parse");
	if (strcmp(cpin, kpin) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "the new certificate is not for "
			       "the key this agent made for it");
	if ((rc = next_path(key_path, next, sizeof(next), err, errsz)) != ES_OK ||
	    (rc = es_pki_write_file_atomic(next, key_pem, strlen(key_pem), 0600, err,
					   errsz)) != ES_OK ||
	    (rc = es_pki_write_file_atomic(cert_path, cert_pem, strlen(cert_pem), 0644,
					   err, errsz)) != ES_OK)
		return rc;
	if (rename(next, key_path) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "%s: rename to %s: %s", next, key_path,
			       strerror(errno));
	return es_fs_sync_parent(key_path, err, errsz);
}

es_err es_renew_recover(const char *cert_path, const char *key_path,
			int *recovered, char *err, size_t errsz)
{
	char next[4096], kpin[ES_ENROLL_PIN_SZ], cpin[ES_ENROLL_PIN_SZ];
	char *key = NULL, *crt = NULL;
	size_t len = 0;
	es_err rc;

	*recovered = 0;
	if (!cert_path || !*cert_path || !key_path || !*key_path)
		return ES_OK;
	if ((rc = next_path(key_path, next, sizeof(next), err, errsz)) != ES_OK ||
	    (rc = slurp(next, &key, &len, err, errsz)) != ES_OK || !key)
		return rc;
	if ((rc = slurp(cert_path, &crt, &len, err, errsz)) != ES_OK)
		goto cleanup;
	if (crt && es_enroll_key_pin(key, kpin) == ES_OK &&
	    es_enroll_key_pin(crt, cpin) == ES_OK && strcmp(kpin, cpin) == 0) {
		if (rename(next, key_path) != 0) {
			rc = es_errf(ES_ERR_IO, err, errsz, "%s: rename to %s: %s", next,
				     key_path, strerror(errno));
			goto cleanup;
		}
		*recovered = 1;
		rc = es_fs_sync_parent(key_path, err, errsz);
	} else if (unlink(next) != 0 && errno != ENOENT) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", next, strerror(errno));
	}
cleanup:
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(crt);
	return rc;
}

es_renew_state es_renew_cert_status(const es_renew_cert *c, time_t now,
				    const char **reason, char *msg, size_t msgsz)
{
	char t[ES_TIME_RFC3339_LEN];

	if (now < c->not_before) {
		*reason = "NotYetValid";
		snprintf(msg, msgsz, "not valid before %s (serial %s): check this host's "
			 "clock", es_time_rfc3339(c->not_before, t), c->serial);
		return ES_RENEW_NOT_YET_VALID;
	}
	if (now > c->not_after) {
		*reason = "Expired";
		snprintf(msg, msgsz, "expired at %s (serial %s)",
			 es_time_rfc3339(c->not_after, t), c->serial);
		return ES_RENEW_EXPIRED;
	}
	*reason = "Valid";
	snprintf(msg, msgsz, "valid until %s (serial %s)", es_time_rfc3339(c->not_after, t),
		 c->serial);
	return ES_RENEW_VALID;
}

es_err es_renew_run(const es_agent_config *cfg, FILE *out, char *reason, size_t rsz,
		    char *err, size_t errsz)
{
	es_http_opts o = { .tls = 1, .timeout_ms = RENEW_TIMEOUT_MS,
			   .user_agent = "edgesync-agent/" ES_VERSION };
	es_http_resp r = { 0 };
	char *key = NULL, *cert = NULL, *csr = NULL, *url = NULL, *body = NULL;
	char kpin[ES_ENROLL_PIN_SZ];
	cJSON *req = NULL;
	es_err rc;

	if (rsz)
		reason[0] = '\0';
	if (!cfg->join_url || !*cfg->join_url)
		return es_errf(ES_ERR_INVAL, err, errsz, "join-url: not set and not "
			       "derivable from controller-url: nowhere to renew");
	if ((rc = es_join_read_pem("cert", cfg->cert, &cert, err, errsz)) != ES_OK ||
	    (rc = es_join_read_pem("key", cfg->key, &key, err, errsz)) != ES_OK)
		goto cleanup;
	if (!cert || !key) {
		rc = es_errf(ES_ERR_INVAL, err, errsz, "%s %s: no such file: nothing to "
			     "renew", cert ? "key" : "cert", cert ? cfg->key : cfg->cert);
		goto cleanup;
	}
	if (es_enroll_key_pin(key, kpin) != ES_OK) {
		rc = es_errf(ES_ERR_INVAL, err, errsz, "key %s: not a private key", cfg->key);
		goto cleanup;
	}
	if ((rc = es_enroll_csr_new(key, cfg->node_name, &csr, err, errsz)) != ES_OK)
		goto cleanup;
	if (!(req = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(req, "certificate", cert) ||
	    !cJSON_AddStringToObject(req, "csr", csr) || !(body = es_json_print(req)) ||
	    asprintf(&url, "%s/v1/join/renew", cfg->join_url) < 0) {
		url = NULL;
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	o.ca_file = cfg->ca;
	if ((rc = es_http_request(&o, "POST", url, body, strlen(body), &r, err, errsz)) != ES_OK)
		goto cleanup;
	rc = es_join_answer(cfg, &r, url, "renewal", kpin, NULL, out, reason, rsz, err,
			    errsz);
cleanup:
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	free(csr);
	free(url);
	free(body);
	cJSON_Delete(req);
	es_http_resp_free(&r);
	return rc;
}
