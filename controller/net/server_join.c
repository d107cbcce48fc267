/*
 * server_join.c - joining nodes (PROTOCOL.md,
 * "Joining"): a listener of its own (join-listen), HTTPS without client
 * certificates, since libwebsockets on mbedTLS asks for one optionally or
 * requires it depending on the TLS server name the client sends:
 *   GET  /v1/join/ca  the trust bundle (PEM), for the agent to compare with
 *                     its pinned hash before it sends anything secret;
 *   POST /v1/join     {token, nodeName, csr} -> {certificate, caBundle,
 *                     labels}, or a Kubernetes Status naming why not;
 *   POST /v1/join/renew {certificate, csr} -> the same answer: a node whose
 *                     certificate expired renews it with the same key
 *                     within renewal-grace.
 *   GET  /healthz     200 "ok" while the event loop runs;
 *   GET  /readyz      200 "ready", or 503 "not ready: why" (server__ready:
 *                     with store = etcd, while etcd cannot be reached), for
 *                     probes that present no client certificate (kubelet).
 */
#include "net/server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ca/ca.h"
#include <mbedtls/x509_crt.h>

#include "es_buf.h"
#include "es_enroll.h"
#include "es_json.h"
#include "es_log.h"
#include "es_time.h"
#include "es_ws.h"
#include "store/db_enroll.h"
#include "store/store_enroll.h"

/* Largest join request: a certificate request and little else. */
#define JOIN_MAX_BODY (ES_ENROLL_CSR_MAX + 4096)


/* A join or renewal the store answers (store_enroll.h): freed by its
 * callback; r NULL once the connection went away. */
typedef struct join_wait {
	es_server *s;
	struct lws *wsi;
	join_req *r;
	int is_renew, returned, answered, rc;
	es_ca_issued iss;
	char name[254], id[8], peer[64], old_serial[41];
} join_wait;

static void req_reset(join_req *r)
{
	if (r->wait)
		r->wait->r = NULL; /* its callback frees it */
	es_buf_free(&r->body);
	free(r->resp);
	memset(r, 0, sizeof(*r));
	es_buf_init(&r->body, JOIN_MAX_BODY);
}

static int respond(struct lws *wsi, join_req *r, int status, const char *ctype,
		   char *body)
{
	if (!body)
		return -1;
	free(r->resp);
	r->resp = body;
	r->resp_len = strlen(body);
	r->resp_off = 0;
	r->responding = 1;
	if (server__http_headers(wsi, status, ctype, r->resp_len, 0) != 0)
		return -1;
	lws_callback_on_writable(wsi);
	return 0;
}

static char *status_body(int code, const char *reason, const char *message)
{
	cJSON *st = es_admin_status(code, reason, message);
	char *b = st ? es_json_print(st) : NULL;

	cJSON_Delete(st);
	return b;
}

static int respond_status(struct lws *wsi, join_req *r, int code,
			  const char *reason, const char *message)
{
	return respond(wsi, r, code, "application/json",
		       status_body(code, reason, message));
}

/* The store's answer to w's request: written at once when the store
 * answered inside the call (w->rc is what the lws callback returns),
 * else headers from the next LWS_CALLBACK_HTTP_WRITEABLE. body taken. */
static void deliver(join_wait *w, int status, char *body)
{
	join_req *r = w->r;

	w->answered = 1;
	if (!w->returned) {
		w->rc = respond(w->wsi, r, status, "application/json", body);
		return;
	}
	if (!r) {
		free(body);
		return;
	}
	r->wait = NULL;
	free(r->resp);
	if (!body)
		body = status_body(500, "InternalError", "out of memory");
	r->resp = body;
	r->resp_len = body ? strlen(body) : 0;
	r->owed_status = body ? status : 0;
	if (body)
		lws_callback_on_writable(w->wsi);
	else
		lws_set_timeout(w->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
}

es_store *server__enroll_store(es_server *s, es_store *local)
{
	if (s->store)
		return s->store;
	es_store_sqlite_init(local, s->db, NULL, NULL);
	return local;
}

/* The reason and message a refused join is answered with (403). */
static const struct { const char *reason, *message; } refusals[] = {
	[ES_DB_JOIN_TOKEN_UNKNOWN] = { "TokenInvalid", "no such bootstrap token, or a wrong secret" },
	[ES_DB_JOIN_TOKEN_EXPIRED] = { "TokenExpired", "the bootstrap token has expired" },
	[ES_DB_JOIN_TOKEN_USED_UP] = { "TokenUsedUp", "the bootstrap token has no usages left" },
	[ES_DB_JOIN_NAME_PREFIX] = { "NameOutsidePrefix", "the node name does not start with the token's name prefix" },
	[ES_DB_JOIN_NAME_TAKEN] = { "NameTaken", "the node name is enrolled with another key; delete the node first (edgesyncctl delete node NAME)" },
};

static char *issued_body(es_server *s, const es_ca_issued *iss, const cJSON *labels);
static void finish_wait(join_wait *w);

static void on_join_done(void *ud, const es_store_enroll_result *res)
{
	join_wait *w = ud;
	int status = 200;
	char *body;

	if (res->rc != ES_OK) {
		es_log_error("server", "join: the store failed", "peer", w->peer, "node",
			     w->name, "error", res->error, NULL);
		status = 500;
		body = status_body(500, "InternalError", "the store failed");
	} else if (res->outcome != ES_DB_JOIN_OK) {
		es_log_warn("server", "join refused", "peer", w->peer, "node", w->name,
			    "token", w->id, "reason", refusals[res->outcome].reason, NULL);
		status = 403;
		body = status_body(403, refusals[res->outcome].reason,
				   refusals[res->outcome].message);
	} else {
		es_log_info("server", "node joined", "peer", w->peer, "node", w->name,
			    "token", w->id, "serial", w->iss.serial, NULL);
		body = issued_body(w->s, &w->iss, res->labels);
	}
	deliver(w, status, body);
	finish_wait(w);
}

/* Frees w unless the store answered inside the call (the caller frees). */
static void finish_wait(join_wait *w)
{
	if (!w->returned)
		return;
	es_ca_issued_free(&w->iss);
	free(w);
}

/* Hands the recorded issue to the store and answers. */
static int store_call(struct lws *wsi, join_req *r, join_wait *w, es_err rc)
{
	int out;

	if (rc != ES_OK) {
		es_ca_issued_free(&w->iss);
		free(w);
		return respond_status(wsi, r, 500, "InternalError", "the store failed");
	}
	if (w->answered) { /* answered inside the call (sqlite) */
		out = w->rc;
		es_ca_issued_free(&w->iss);
		free(w);
		return out;
	}
	w->returned = 1;
	r->wait = w;
	return 0;
}

static int join(struct lws *wsi, es_server *s, join_req *r)
{
	char perr[512], id[8], secret[20], hex[ES_ENROLL_HEX_SZ];
	const char *token = NULL, *name = NULL, *csr = NULL;
	cJSON *req = NULL;
	join_wait *w = NULL;
	es_db_join j;
	es_store local, *st = server__enroll_store(s, &local);
	time_t now = time(NULL);
	int rc;

	if (!s->ca)
		return respond_status(wsi, r, 404, "NotFound", "this controller signs no "
				      "certificates (no ca-cert): joining is off");
	if (r->too_big)
		return respond_status(wsi, r, 413, "RequestEntityTooLarge",
				      "join request over its limit");
	if (es_json_parse(r->body.p, r->body.len, 4, &req, perr, sizeof(perr)) != ES_OK ||
	    es_json_get_str(req, "join request", "token", 1, &token, perr, sizeof(perr)) != ES_OK ||
	    es_json_get_str(req, "join request", "nodeName", 1, &name, perr, sizeof(perr)) != ES_OK ||
	    es_json_get_str(req, "join request", "csr", 1, &csr, perr, sizeof(perr)) != ES_OK ||
	    es_enroll_token_split(token, id, secret, perr, sizeof(perr)) != ES_OK) {
		rc = respond_status(wsi, r, 400, "BadRequest", perr);
		goto cleanup;
	}
	if (!(w = calloc(1, sizeof(*w)))) {
		rc = respond_status(wsi, r, 500, "InternalError", "out of memory");
		goto cleanup;
	}
	if (es_enroll_sha256_hex(secret, strlen(secret), hex) != ES_OK ||
	    es_ca_sign(s->ca, csr, s->trust_domain, name, s->cert_lifetime, now, &w->iss,
		       perr, sizeof(perr)) != ES_OK) {
		es_ca_issued_free(&w->iss);
		free(w);
		rc = respond_status(wsi, r, 422, "Invalid", perr);
		goto cleanup;
	}
	w->s = s;
	w->wsi = wsi;
	w->r = r;
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->id, sizeof(w->id), "%s", id);
	snprintf(w->peer, sizeof(w->peer), "%s", r->peer);
	j = (es_db_join){ id, hex, name, w->iss.key_pin, w->iss.serial, w->iss.not_after };
	rc = store_call(wsi, r, w, es_store_join(st, &j, now, on_join_done, w));
cleanup:
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(hex, sizeof(hex));
	cJSON_Delete(req);
	return rc;
}

/* The reason and message a refused renewal is answered with (403). */
static const struct { const char *reason, *message; } renew_refusals[] = {
	[ES_DB_RENEW_NOT_ISSUED] = { "NotIssued", "this controller did not issue that "
				     "certificate to that node: join with a bootstrap token" },
	[ES_DB_RENEW_REVOKED] = { "CertificateRevoked", "the certificate is revoked (the "
				  "node was deleted): join again with a new token" },
	[ES_DB_RENEW_KEY_MISMATCH] = { "KeyMismatch", "the certificate was issued for "
				       "another key than the request's" },
};

/* The 200 answer of a join or a renewal: the certificate and the bundles
 * (labels borrowed, NULL: none). NULL when memory ran out. */
static char *issued_body(es_server *s, const es_ca_issued *iss, const cJSON *labels)
{
	cJSON *out = cJSON_CreateObject();
	char *b = NULL;

	if (out && cJSON_AddStringToObject(out, "certificate", iss->cert_pem) &&
	    cJSON_AddStringToObject(out, "caBundle", s->trust_bundle ? s->trust_bundle :
				    es_ca_cert_pem(s->ca)) &&
	    cJSON_AddStringToObject(out, "clientCA", es_ca_cert_pem(s->ca)) &&
	    cJSON_AddStringToObject(out, "serial", iss->serial) &&
	    (!labels || cJSON_AddItemToObject(out, "labels", cJSON_Duplicate(labels, 1))))
		b = es_json_print(out);
	cJSON_Delete(out);
	return b;
}

static void on_renew_done(void *ud, const es_store_enroll_result *res)
{
	join_wait *w = ud;
	int status = 200;
	char *body;

	if (res->rc != ES_OK) {
		es_log_error("server", "renewal: the store failed", "peer", w->peer, "node",
			     w->name, "error", res->error, NULL);
		status = 500;
		body = status_body(500, "InternalError", "the store failed");
	} else if (res->outcome != ES_DB_RENEW_OK) {
		es_log_warn("server", "renewal refused", "peer", w->peer, "node", w->name,
			    "serial", w->old_serial, "reason",
			    renew_refusals[res->outcome].reason, NULL);
		status = 403;
		body = status_body(403, renew_refusals[res->outcome].reason,
				   renew_refusals[res->outcome].message);
	} else {
		es_log_info("server", "node renewed an expired certificate", "peer", w->peer,
			    "node", w->name, "old", w->old_serial, "serial", w->iss.serial,
			    NULL);
		body = issued_body(w->s, &w->iss, NULL);
	}
	deliver(w, status, body);
	finish_wait(w);
}

/* POST /v1/join/renew (PROTOCOL.md "Renewal of an expired certificate"). */
static int renew(struct lws *wsi, es_server *s, join_req *r)
{
	char perr[512], cpin[ES_ENROLL_PIN_SZ], msg[600], t[ES_TIME_RFC3339_LEN];
	const char *cert = NULL, *csr = NULL;
	cJSON *req = NULL;
	es_ca_presented p;
	join_wait *w = NULL;
	es_store local, *st = server__enroll_store(s, &local);
	es_db_renew rn;
	time_t now = time(NULL);
	int rc;

	if (!s->ca)
		return respond_status(wsi, r, 404, "NotFound", "this controller signs no "
				      "certificates (no ca-cert): renewal is off");
	if (r->too_big)
		return respond_status(wsi, r, 413, "RequestEntityTooLarge",
				      "renewal request over its limit");
	if (es_json_parse(r->body.p, r->body.len, 4, &req, perr, sizeof(perr)) != ES_OK ||
	    es_json_get_str(req, "renewal request", "certificate", 1, &cert, perr,
			    sizeof(perr)) != ES_OK ||
	    es_json_get_str(req, "renewal request", "csr", 1, &csr, perr,
			    sizeof(perr)) != ES_OK) {
		rc = respond_status(wsi, r, 400, "BadRequest", perr);
		goto cleanup;
	}
	switch (es_ca_check_presented(s->ca, cert, s->trust_domain, &p, perr, sizeof(perr))) {
	case ES_OK:
		break;
	case ES_ERR_AUTH:
		rc = respond_status(wsi, r, 403, "NotIssued", perr);
		goto cleanup;
	default:
		rc = respond_status(wsi, r, 422, "Invalid", perr);
		goto cleanup;
	}
	if (es_enroll_key_pin(csr, cpin) != ES_OK) {
		rc = respond_status(wsi, r, 422, "Invalid", "csr: not a PEM PKCS#10 request");
		goto cleanup;
	}
	if (strcmp(cpin, p.key_pin) != 0) {
		rc = respond_status(wsi, r, 403, "KeyMismatch", "the request's key is not "
				    "the certificate's: renew with the same key, or join "
				    "with a token");
		goto cleanup;
	}
	if (es_enroll_cert_phase(p.not_before, p.not_after, now, s->renewal_grace) ==
	    ES_ENROLL_PAST_GRACE) {
		char g[24];

		snprintf(g, sizeof(g), "%lld", (long long)s->renewal_grace);
		snprintf(msg, sizeof(msg), "the certificate expired at %s, %s: join "
			 "again with a new bootstrap token", es_time_rfc3339(p.not_after, t),
			 s->renewal_grace > 0 ? "past the renewal grace" :
			 "and renewal of expired certificates is off (renewal-grace 0)");
		es_log_warn("server", "renewal refused", "peer", r->peer, "node", p.node,
			    "serial", p.serial, "reason", "GraceExpired", "renewal-grace", g,
			    NULL);
		rc = respond_status(wsi, r, 403, "GraceExpired", msg);
		goto cleanup;
	}
	if (!(w = calloc(1, sizeof(*w)))) {
		rc = respond_status(wsi, r, 500, "InternalError", "out of memory");
		goto cleanup;
	}
	if (es_ca_sign(s->ca, csr, s->trust_domain, p.node, s->cert_lifetime, now, &w->iss,
		       perr, sizeof(perr)) != ES_OK) {
		es_ca_issued_free(&w->iss);
		free(w);
		rc = respond_status(wsi, r, 422, "Invalid", perr);
		goto cleanup;
	}
	w->s = s;
	w->wsi = wsi;
	w->r = r;
	w->is_renew = 1;
	snprintf(w->name, sizeof(w->name), "%s", p.node);
	snprintf(w->peer, sizeof(w->peer), "%s", r->peer);
	snprintf(w->old_serial, sizeof(w->old_serial), "%s", p.serial);
	rn = (es_db_renew){ p.node, p.serial, p.key_pin, w->iss.serial, w->iss.not_after };
	rc = store_call(wsi, r, w, es_store_renew(st, &rn, now, on_renew_done, w));
cleanup:
	cJSON_Delete(req);
	return rc;
}

static int dispatch(struct lws *wsi, es_server *s, join_req *r)
{
	if (!strcmp(r->path, "/healthz") || !strcmp(r->path, "/readyz")) {
		char why[160] = "", text[200];
		int ready = 1;

		if (r->is_post)
			return respond_status(wsi, r, 405, "MethodNotAllowed",
					      "only GET");
		if (!strcmp(r->path, "/readyz"))
			ready = server__ready(s, why, sizeof(why));
		if (!ready)
			snprintf(text, sizeof(text), "not ready: %s\n", why);
		else
			snprintf(text, sizeof(text), "%s\n",
				 !strcmp(r->path, "/healthz") ? "ok" : "ready");
		return respond(wsi, r, ready ? 200 : 503, "text/plain", strdup(text));
	}
	if (!strcmp(r->path, "/v1/join/ca")) {
		char *b;

		if (r->is_post)
			return respond_status(wsi, r, 405, "MethodNotAllowed",
					      "/v1/join/ca: only GET");
		if (!s->ca && !s->trust_bundle)
			return respond_status(wsi, r, 404, "NotFound", "joining is off "
					      "(no ca-cert)");
		b = strdup(s->trust_bundle ? s->trust_bundle : es_ca_cert_pem(s->ca));
		return respond(wsi, r, 200, "application/x-pem-file", b);
	}
	if (!strcmp(r->path, "/v1/join/renew")) {
		if (!r->is_post)
			return respond_status(wsi, r, 405, "MethodNotAllowed",
					      "/v1/join/renew: only POST");
		return renew(wsi, s, r);
	}
	if (!strcmp(r->path, "/v1/join")) {
		if (!r->is_post)
			return respond_status(wsi, r, 405, "MethodNotAllowed",
					      "/v1/join: only POST");
		return join(wsi, s, r);
	}
	return respond_status(wsi, r, 404, "NotFound", "no such path");
}

static int on_http(struct lws *wsi, es_server *s, join_req *r, const char *in,
		   size_t len)
{
	char cl[32] = "";
	long long clen = -1;

	req_reset(r);
	lws_get_peer_simple(wsi, r->peer, sizeof(r->peer));
	/* The request's whole path: in holds what follows the mount point. */
	if (lws_hdr_copy(wsi, r->path, sizeof(r->path), WSI_TOKEN_GET_URI) <= 0 &&
	    lws_hdr_copy(wsi, r->path, sizeof(r->path), WSI_TOKEN_POST_URI) <= 0)
		return respond_status(wsi, r, 404, "NotFound", "no such path");
	(void)in;
	(void)len;
	r->is_post = lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0;
	if (!r->is_post)
		return dispatch(wsi, s, r);
	if (lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0)
		clen = strtoll(cl, NULL, 10);
	if (clen < 0)
		return respond_status(wsi, r, 411, "LengthRequired",
				      "a join request needs Content-Length");
	if (clen > JOIN_MAX_BODY)
		return respond_status(wsi, r, 413, "RequestEntityTooLarge",
				      "join request over its limit");
	r->want_body = 1;
	return 0;
}

static int on_writeable(struct lws *wsi, es_server *s, join_req *r)
{
	int n;

	if (r->owed_status) {
		char *body = r->resp;
		int status = r->owed_status;

		r->owed_status = 0;
		r->resp = NULL;
		return respond(wsi, r, status, "application/json", body);
	}
	if (!r->responding)
		return 0;
	n = server__http_write_body(wsi, s, r->resp, r->resp_len, &r->resp_off);
	if (n <= 0)
		return n;
	req_reset(r);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int cb_join(struct lws *wsi, enum lws_callback_reasons reason, void *user,
		   void *in, size_t len)
{
	join_req *r = user;
	es_server *s = server__from_wsi(wsi);

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		return r ? on_http(wsi, s, r, in, len) : -1;
	case LWS_CALLBACK_HTTP_BODY:
		if (!r || !r->want_body || r->too_big)
			return 0;
		if (es_buf_append(&r->body, in, len) == ES_ERR_TOOBIG) {
			r->too_big = 1;
			es_buf_free(&r->body);
		}
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (!r || !r->want_body)
			return 0;
		r->want_body = 0;
		return dispatch(wsi, s, r);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return r ? on_writeable(wsi, s, r) : 0;
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (r)
			req_reset(r);
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols join_protocols[] = {
	{ "edgesync-join", cb_join, sizeof(join_req), 16384, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

es_err server__join_vhost(es_server *s, const es_server_opts *o, char *err,
			  size_t errsz)
{
	struct lws_context_creation_info info;

	memset(&info, 0, sizeof(info));
	/* No client certificate is asked for: a joining node has none, and
	 * a renewing one is checked by what it signs (PROTOCOL.md). */
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.vhost_name = "join";
	info.iface = o->join_host;
	info.port = o->join_port;
	info.protocols = join_protocols;
	info.ssl_cert_filepath = o->cert;
	info.ssl_private_key_filepath = o->key;
	info.user = s;
	if (!lws_create_vhost(s->ctx, &info))
		return es_errf(ES_ERR_TLS, err, errsz,
			       "join-listen %s:%d: could not start the join listener "
			       "(address in use, or cert %s, key %s unusable)",
			       o->join_host, o->join_port, o->cert, o->key);
	return ES_OK;
}

/* ---- revocation (PROTOCOL.md "Joining", "Revocation") ---- */

/* The serial of the connection's certificate as lower-case hex into out
 * (sz >= 2 * 20 + 1); "" when unreadable. */
static void peer_serial(struct lws *wsi, char *out, size_t sz)
{
	unsigned char *der = NULL;
	size_t len = 0;
	mbedtls_x509_crt crt;

	out[0] = '\0';
	mbedtls_x509_crt_init(&crt);
	if (es_ws_peer_cert(wsi, &der, &len) == ES_OK &&
	    mbedtls_x509_crt_parse_der(&crt, der, len) == 0) {
		size_t n = crt.serial.len;

		for (size_t i = 0; i < n && 2 * i + 2 < sz; i++)
			snprintf(out + 2 * i, 3, "%02x", crt.serial.p[i]);
	}
	mbedtls_x509_crt_free(&crt);
	free(der);
}

/* The `error` IdentityMismatch for a revoked certificate, with the
 * optional member reason "CertificateRevoked" (PROTOCOL.md "Revocation"),
 * then the close. */
static void queue_revoked(conn *c, const char *text)
{
	cJSON *m;

	if (c->state == CS_CLOSING)
		return;
	es_log_warn("server", "protocol error", "node", c->node, "code",
		    es_proto_code_name(ES_PC_IDENTITY), "reason", "CertificateRevoked",
		    "error", text, NULL);
	m = es_proto_error(ES_PC_IDENTITY, text);
	if (m && !cJSON_AddStringToObject(m, "reason", "CertificateRevoked")) {
		cJSON_Delete(m);
		m = NULL;
	}
	(void)server__queue_msg(c, m);
	server__start_close(c, es_proto_close_code(ES_PC_IDENTITY),
			    es_proto_code_name(ES_PC_IDENTITY));
}

int server__enroll_check(conn *c)
{
	es_db_cert_status st = ES_DB_CERT_UNKNOWN;

	peer_serial(c->wsi, c->serial, sizeof(c->serial));
	if (c->serial[0] &&
	    es_db_cert_state(c->srv->db, c->serial, c->node, &st) != ES_OK) {
		server__queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
		return -1;
	}
	if (st == ES_DB_CERT_REVOKED) {
		es_log_warn("server", "revoked certificate refused", "node", c->node,
			    "serial", c->serial, NULL);
		queue_revoked(c, "this certificate is revoked (the node was deleted): "
			      "join again with a new token");
		return -1;
	}
	return 0;
}

/* The answer to recording a revoked session's serial (no one waits). */
static void on_serial_revoked(void *ud, const es_store_enroll_result *r)
{
	char *node = ud;

	if (r->rc != ES_OK)
		es_log_error("server", "could not record a revoked serial", "node", node,
			     "error", r->error, NULL);
	free(node);
}

void es_server_node_revoked(void *ud, const char *node)
{
	es_server *s = ud;
	es_store local, *st = server__enroll_store(s, &local);
	es_db_cert_status cs;
	char *copy;

	for (conn *c = s->conns; c; c = c->next) {
		if (strcmp(c->node, node) != 0 || c->state == CS_CLOSING)
			continue;
		cs = ES_DB_CERT_UNKNOWN;
		if (c->serial[0] && es_db_cert_state(s->db, c->serial, node, &cs) != ES_OK)
			cs = ES_DB_CERT_UNKNOWN;
		/* A certificate issued after the revocation (the node joined
		 * again, told late by etcd) stays. */
		if (cs == ES_DB_CERT_VALID)
			continue;
		/* One the signing CA did not issue is recorded revoked too. */
		if (c->serial[0] && cs == ES_DB_CERT_UNKNOWN &&
		    (!(copy = strdup(node)) ||
		     es_store_node_revoke(st, node, c->serial, time(NULL), on_serial_revoked,
					  copy) != ES_OK)) {
			free(copy);
			es_log_error("server", "could not record a revoked serial", "node",
				     node, "serial", c->serial, NULL);
		}
		es_log_info("server", "closing the session of a deleted node", "node",
			    node, NULL);
		server__queue_clear(c);
		queue_revoked(c, "the node was deleted: its certificate is revoked");
	}
}

es_err server__enroll_labels(conn *c)
{
	cJSON *extra = NULL, *it;
	es_err rc = es_db_enroll_labels(c->srv->db, c->node, &extra);

	if (rc != ES_OK)
		return rc;
	cJSON_ArrayForEach(it, extra) {
		cJSON *v;

		if (!cJSON_IsString(it) || cJSON_GetObjectItemCaseSensitive(c->labels, it->string))
			continue;
		if (!(v = cJSON_CreateString(it->valuestring)) ||
		    !cJSON_AddItemToObject(c->labels, it->string, v)) {
			cJSON_Delete(v);
			rc = ES_ERR_NOMEM;
			break;
		}
	}
	cJSON_Delete(extra);
	return rc;
}
