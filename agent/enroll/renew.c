/*
 * renew.c - renewal of an expired node certificate at the join listener,
 * and the dates CertificateValid reports (renew.h).
 */
#define _GNU_SOURCE /* asprintf */
#include "enroll/renew.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>

#include "enroll/join.h"
#include "es_enroll.h"
#include "es_http.h"
#include "es_json.h"
#include "es_pki.h"
#include "es_time.h"
#include "es_version.h"

/* Connect, handshake and each wait for data of a renewal, ms. */
#define RENEW_TIMEOUT_MS 10000

es_err es_renew_cert_read(const char *path, es_renew_cert *out, char *err,
			  size_t errsz)
{
	mbedtls_x509_crt crt;
	char *pem = NULL;
	es_err rc;

	memset(out, 0, sizeof(*out));
	if ((rc = es_join_read_pem("cert", path, &pem, err, errsz)) != ES_OK)
		return rc;
	if (!pem)
		return es_errf(ES_ERR_NOTFOUND, err, errsz, "cert %s: no such file", path);
	mbedtls_x509_crt_init(&crt);
	/* A chain after the leaf may fail to parse; the leaf is what counts. */
	if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)pem, strlen(pem) + 1) < 0 &&
	    crt.raw.len == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "cert %s: not a PEM certificate", path);
		goto cleanup;
	}
	if (crt.raw.len == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "cert %s: no certificate in it", path);
		goto cleanup;
	}
	out->not_before = es_pki_not_before(&crt);
	out->not_after = es_pki_not_after(&crt);
	for (size_t i = 0; i < crt.serial.len && i < 20; i++)
		snprintf(out->serial + 2 * i, 3, "%02x", crt.serial.p[i]);
	rc = ES_OK;
cleanup:
	mbedtls_x509_crt_free(&crt);
	free(pem);
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
