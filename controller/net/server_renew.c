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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ca/ca.h"
#include "es_json.h"
#include "es_log.h"
#include "es_time.h"
#include "store/db_enroll.h"
#include "store/store_enroll.h"

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

/* A renewal the store answers (store_enroll.h): c NULL once the
 * connection went away. */
typedef struct renew_wait {
	conn *c;
	int returned;
	es_ca_issued iss;
} renew_wait;

void server__renew_forget(conn *c)
{
	if (c->renew_wait)
		c->renew_wait->c = NULL;
	c->renew_wait = NULL;
}

static void on_renewed(void *ud, const es_store_enroll_result *res)
{
	renew_wait *w = ud;
	conn *c = w->c;
	char until[ES_TIME_RFC3339_LEN];

	if (!c)
		goto done;
	c->renew_wait = NULL;
	if (res->rc != ES_OK) {
		refuse(c, "Internal", "the controller's store failed", RENEW_RETRY_S);
		goto done;
	}
	if (res->outcome != ES_DB_CERT_VALID) {
		refuse(c, "Revoked", "the session's certificate is revoked", 0);
		goto done;
	}
	c->renewed = 1;
	es_log_info("server", "certificate renewed", "node", c->node, "serial",
		    c->serial, "newSerial", w->iss.serial, "notAfter",
		    es_time_rfc3339(w->iss.not_after, until), NULL);
	if (server__queue_msg(c, es_proto_certificate(w->iss.cert_pem, trust_bundle(c->srv),
						      w->iss.serial, until)) != ES_OK)
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
done:
	if (w->returned) {
		es_ca_issued_free(&w->iss);
		free(w);
	} else {
		w->returned = -1; /* answered inside the call: the caller frees */
	}
}

void server__on_cert_request(conn *c, const cJSON *msg)
{
	es_server *s = c->srv;
	const char *csr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "csr"));
	es_store local, *st = server__enroll_store(s, &local);
	es_db_cert_status st_was = ES_DB_CERT_UNKNOWN;
	es_db_renew rn;
	renew_wait *w;
	char perr[512];
	time_t now = time(NULL);
	es_err rc;
	int ok;

	if (!s->ca) {
		refuse(c, "NotSigning", "this controller signs no certificates (no "
		       "ca-cert): renew the certificate where it came from", 0);
		return;
	}
	ok = renewable(c, &st_was);
	if (ok < 0) {
		refuse(c, "Internal", "the controller's store failed", RENEW_RETRY_S);
		return;
	}
	if (!ok) {
		if (st_was == ES_DB_CERT_REVOKED)
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
	if (c->renewed || c->renew_wait) {
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
	if (!(w = calloc(1, sizeof(*w)))) {
		refuse(c, "Internal", "out of memory", RENEW_RETRY_S);
		return;
	}
	if (es_ca_sign(s->ca, csr, s->trust_domain, c->node, s->cert_lifetime, now,
		       &w->iss, perr, sizeof(perr)) != ES_OK) {
		refuse(c, "Invalid", perr, 0);
		es_ca_issued_free(&w->iss);
		free(w);
		return;
	}
	w->c = c;
	/* Recorded before the answer: a certificate the store does not know
	 * would be "not issued here" at its first hello. */
	rn = (es_db_renew){ c->node, c->serial, w->iss.key_pin, w->iss.serial,
			    w->iss.not_after };
	rc = es_store_cert_renew(st, &rn, now, on_renewed, w);
	if (rc != ES_OK || w->returned == -1) {
		if (rc != ES_OK)
			refuse(c, "Internal", "the controller's store failed", RENEW_RETRY_S);
		es_ca_issued_free(&w->iss);
		free(w);
		return;
	}
	w->returned = 1;
	c->renew_wait = w;
}
