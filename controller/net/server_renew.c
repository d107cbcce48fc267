/*
 * server_renew.c - renewal over the agent's session (PROTOCOL.md
 * "Renewal"): the welcome of a session whose certificate this controller
 * issued offers `certificate-renewal` and carries the trust bundle; a
 * `certificateRequest` on it is signed by the signing CA, recorded with
 * the node's new key in one transaction and answered with `certificate`,
 * or with `certificateRefused` (the session stays up).
 */
#include "net/server_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ca/ca.h"
#include "es_json.h"
#include "es_log.h"
#include "es_time.h"
#include "store/db_enroll.h"

/* retryAfterSeconds of a refusal the agent may ask again after (the
 * store failed, or the session renewed already). */
#define RENEW_RETRY_S 30

/* The PEM the agent trusts for the controller (as a join answers). */
static const char *trust_bundle(const es_server *s)
{
	return s->trust_bundle ? s->trust_bundle : es_ca_cert_pem(s->ca);
}

/* 1 when c's certificate is one the signing CA issued to c's node and not
 * revoked: the session may renew. -1 when the store failed. */
static int renewable(conn *c, es_db_cert_status *st)
{
	*st = ES_DB_CERT_UNKNOWN;
	if (!c->srv->ca || !c->serial[0])
		return 0;
	if (es_db_cert_state(c->srv->db, c->serial, c->node, st) != ES_OK)
		return -1;
	return *st == ES_DB_CERT_VALID;
}

es_err server__renew_welcome(conn *c, cJSON *w)
{
	es_db_cert_status st;
	cJSON *caps, *v;

	if (renewable(c, &st) != 1)
		return ES_OK;
	caps = cJSON_GetObjectItemCaseSensitive(w, "capabilities");
	if (!caps && !(caps = cJSON_AddArrayToObject(w, "capabilities")))
		return ES_ERR_NOMEM;
	if (!(v = cJSON_CreateString(ES_PROTO_CAP_RENEWAL)) ||
	    !cJSON_AddItemToArray(caps, v)) {
		cJSON_Delete(v);
		return ES_ERR_NOMEM;
	}
	if (!cJSON_AddStringToObject(w, "trustBundle", trust_bundle(c->srv)))
		return ES_ERR_NOMEM;
	return ES_OK;
}

static void refuse(conn *c, const char *reason, const char *message, int retry_s)
{
	es_log_warn("server", "certificate renewal refused", "node", c->node,
		    "serial", c->serial, "reason", reason, "error", message, NULL);
	if (server__queue_msg(c, es_proto_cert_refused(reason, message, retry_s)) != ES_OK)
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
}

void server__on_cert_request(conn *c, const cJSON *msg)
{
	es_server *s = c->srv;
	const char *csr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "csr"));
	es_ca_issued iss = { 0 };
	es_db_cert_status st = ES_DB_CERT_UNKNOWN;
	char perr[512], until[ES_TIME_RFC3339_LEN];
	time_t now = time(NULL);
	int ok;

	if (!s->ca) {
		refuse(c, "NotSigning", "this controller signs no certificates (no "
		       "ca-cert): renew the certificate where it came from", 0);
		return;
	}
	ok = renewable(c, &st);
	if (ok < 0) {
		refuse(c, "Internal", "the controller's store failed", RENEW_RETRY_S);
		return;
	}
	if (!ok) {
		if (st == ES_DB_CERT_REVOKED)
			refuse(c, "Revoked", "the session's certificate is revoked", 0);
		else
			refuse(c, "NotIssuedHere", "the session's certificate was not "
			       "issued by this controller's signing CA: renew it where "
			       "it came from (the agent re-reads its files)", 0);
		return;
	}
	/* One certificate per session: the agent reconnects with it, so a
	 * second request is a misbehaving client, and each would add a
	 * certificate to the store. */
	if (c->renewed) {
		refuse(c, "AlreadyRenewed", "this session renewed its certificate "
		       "already: reconnect with the new one", RENEW_RETRY_S);
		return;
	}
	if (!csr || strlen(csr) > ES_ENROLL_CSR_MAX) {
		snprintf(perr, sizeof(perr), "certificateRequest.csr: over %d bytes",
			 ES_ENROLL_CSR_MAX);
		refuse(c, "Invalid", perr, 0);
		return;
	}
	if (es_ca_sign(s->ca, csr, s->trust_domain, c->node, s->cert_lifetime, now,
		       &iss, perr, sizeof(perr)) != ES_OK) {
		refuse(c, "Invalid", perr, 0);
		goto cleanup;
	}
	/* Recorded before the answer: a certificate the store does not know
	 * would be "not issued here" at its first hello. */
	if (es_db_cert_renew(s->db, c->node, c->serial, iss.serial, iss.key_pin,
			     iss.not_after, now, &st) != ES_OK) {
		refuse(c, "Internal", "the controller's store failed", RENEW_RETRY_S);
		goto cleanup;
	}
	if (st != ES_DB_CERT_VALID) {
		refuse(c, "Revoked", "the session's certificate is revoked", 0);
		goto cleanup;
	}
	c->renewed = 1;
	es_log_info("server", "certificate renewed", "node", c->node, "serial",
		    c->serial, "newSerial", iss.serial, "notAfter",
		    es_time_rfc3339(iss.not_after, until), NULL);
	if (server__queue_msg(c, es_proto_certificate(iss.cert_pem, trust_bundle(s),
						      iss.serial, until)) != ES_OK)
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
cleanup:
	es_ca_issued_free(&iss);
}
