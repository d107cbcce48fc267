/*
 * admin_tokens.c - bootstrap tokens in the admin API (admin.h):
 *   POST   /apis/edgesync.io/v1alpha1/bootstraptokens      create; the only
 *          response that holds the token's secret
 *   GET    /apis/edgesync.io/v1alpha1/bootstraptokens      BootstrapTokenList
 *   DELETE /apis/edgesync.io/v1alpha1/bootstraptokens/ID   delete
 * The store keeps the SHA-256 of the secret only (store/db_enroll.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/admin.h"
#include "api/admin_int.h"
#include "es_enroll.h"
#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_proto.h"
#include "es_time.h"
#include "store/db_enroll.h"
#include "store/store_enroll.h"

/* Longest name prefix: a node name's first DNS label is at most 63. */
#define PREFIX_MAX 63
/* Attempts at an unused id before giving up (36^6 ids). */
#define ID_TRIES 8

static es_err answer(es_admin_resp *resp, int code, cJSON *take)
{
	char *text = take ? es_json_print(take) : NULL;

	cJSON_Delete(take);
	if (!text)
		return ES_ERR_NOMEM;
	resp->status = code;
	resp->body = text;
	resp->body_len = strlen(text);
	resp->content_type = "application/json";
	return ES_OK;
}

static es_err fail(es_admin_resp *resp, int code, const char *reason,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static es_err fail(es_admin_resp *resp, int code, const char *reason,
		   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return answer(resp, code, es_admin_status(code, reason, msg));
}

/* 1 when p is "" or may begin an RFC 1123 subdomain: [a-z0-9] first, then
 * [a-z0-9.-]. */
static int prefix_valid(const char *p)
{
	if (strlen(p) > PREFIX_MAX)
		return 0;
	for (size_t i = 0; p[i]; i++) {
		char c = p[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '-' && c != '.')))
			return 0;
	}
	return 1;
}

/* A token or node call handed to the store (store_enroll.h): answered
 * from its callback, inside the call (sqlite) or later (etcd: through
 * done). */
typedef struct twait {
	enum { TW_CREATE, TW_DELETE, TW_NODE } what;
	es_store *store;
	const es_admin_hooks *hooks;
	es_admin_done_fn done;
	void *done_ud;
	int returned, completed, tries;
	es_err rc;                /* filling resp ran out of memory */
	es_admin_resp resp;
	char who[ES_NAME_MAX + 1], name[ES_NAME_MAX + 1];
	/* create */
	char tok[ES_ENROLL_TOKEN_SZ], id[8];
	cJSON *labels;
	char prefix[PREFIX_MAX + 1];
	int64_t ttl, usages;
	time_t now;
	/* node */
	int node_known;
} twait;

static void twait_free(twait *w)
{
	explicit_bzero(w->tok, sizeof(w->tok));
	cJSON_Delete(w->labels);
	free(w);
}

/* The answer is in w->resp (w->rc): to the caller, or through done. */
static void twait_complete(twait *w)
{
	w->completed = 1;
	if (!w->returned)
		return;
	admin__answer_late(&w->resp, w->rc, w->done, w->done_ud);
	twait_free(w);
}

/* Hands w to the store (rc: what the call returned) and answers. */
static es_err twait_start(twait *w, es_err rc, es_admin_resp *resp)
{
	if (rc != ES_OK && !w->completed) {
		twait_free(w);
		return rc == ES_ERR_NOMEM ? rc :
		       fail(resp, 500, "InternalError", "the store failed: %s", es_strerror(rc));
	}
	if (!w->completed) {
		w->returned = 1; /* the callback frees w */
		if (!w->done) {
			w->done = NULL;
			return fail(resp, 500, "InternalError", "the %s store answers later;"
				    " the write goes on", es_store_backend(w->store));
		}
		return ES_OK; /* resp->status stays 0: answered through done */
	}
	*resp = w->resp;
	rc = w->rc;
	twait_free(w);
	return rc;
}

static void on_token_created(void *ud, const es_store_enroll_result *r);

/* One try at a new token id. Returns the store call's error. */
static es_err token_try(twait *w)
{
	char perr[128], secret[20], hex[ES_ENROLL_HEX_SZ];
	es_db_token t;
	es_err rc;

	if (es_enroll_token_new(w->tok) != ES_OK ||
	    es_enroll_token_split(w->tok, w->id, secret, perr, sizeof(perr)) != ES_OK ||
	    es_enroll_sha256_hex(secret, strlen(secret), hex) != ES_OK) {
		explicit_bzero(secret, sizeof(secret));
		w->rc = fail(&w->resp, 500, "InternalError", "no randomness for a token");
		twait_complete(w);
		return ES_OK;
	}
	explicit_bzero(secret, sizeof(secret));
	t = (es_db_token){ w->id, hex, w->now + (time_t)w->ttl, w->usages, w->labels,
			   w->prefix, w->now };
	rc = es_store_token_create(w->store, &t, on_token_created, w);
	return rc;
}

static void on_token_created(void *ud, const es_store_enroll_result *r)
{
	twait *w = ud;
	char t1[ES_TIME_RFC3339_LEN], t2[ES_TIME_RFC3339_LEN];
	const es_admin_hooks *hooks = w->hooks;
	cJSON *out = NULL;
	es_err rc;

	if (r->rc == ES_ERR_EXISTS && ++w->tries < ID_TRIES) {
		if ((rc = token_try(w)) != ES_OK) {
			w->rc = fail(&w->resp, 500, "InternalError", "storing the token"
				     " failed: %s", es_strerror(rc));
			twait_complete(w);
		}
		return;
	}
	if (r->rc != ES_OK) {
		w->rc = fail(&w->resp, 500, "InternalError", "storing the token failed: %s",
			     r->error);
		twait_complete(w);
		return;
	}
	es_log_info("admin", "bootstrap token created", "id", w->id, "expires",
		    es_time_rfc3339(w->now + (time_t)w->ttl, t1), "by", w->who, NULL);
	if (!(out = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(out, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(out, "kind", "BootstrapToken") ||
	    !cJSON_AddStringToObject(out, "id", w->id) ||
	    !cJSON_AddStringToObject(out, "token", w->tok) ||
	    !cJSON_AddStringToObject(out, "expires",
				     es_time_rfc3339(w->now + (time_t)w->ttl, t1)) ||
	    !es_json_add_int(out, "usages", w->usages) ||
	    !es_json_add_int(out, "used", 0) ||
	    !cJSON_AddItemToObject(out, "labels", cJSON_Duplicate(w->labels, 1)) ||
	    !cJSON_AddStringToObject(out, "namePrefix", w->prefix) ||
	    !cJSON_AddStringToObject(out, "creationTimestamp", es_time_rfc3339(w->now, t2)) ||
	    (hooks && hooks->ca_pin &&
	     !cJSON_AddStringToObject(out, "caHash", hooks->ca_pin)) ||
	    (hooks && hooks->join_url &&
	     !cJSON_AddStringToObject(out, "controllerURL", hooks->join_url))) {
		cJSON_Delete(out);
		w->rc = ES_ERR_NOMEM;
	} else {
		w->rc = answer(&w->resp, 201, out);
	}
	twait_complete(w);
}

static es_err create(const admin__enroll_ctx *x, const char *body, size_t len,
		     es_admin_resp *resp)
{
	char perr[512];
	cJSON *req = NULL, *labels;
	const cJSON *it;
	int64_t ttl = ES_ADMIN_TOKEN_TTL_DEFAULT, usages = 1;
	const char *prefix = "";
	twait *w = NULL;
	es_err rc;

	if (!body || len == 0 || len > ES_ADMIN_MAX_BODY)
		return fail(resp, 400, "BadRequest", "request body: expected a JSON object");
	rc = es_json_parse(body, len, ES_PROTO_MAX_OBJECT_DEPTH, &req, perr, sizeof(perr));
	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK || !cJSON_IsObject(req)) {
		cJSON_Delete(req);
		return fail(resp, 400, "BadRequest", "request body is not a JSON object");
	}
	cJSON_ArrayForEach(it, req) {
		if (strcmp(it->string, "ttlSeconds") && strcmp(it->string, "usages") &&
		    strcmp(it->string, "labels") && strcmp(it->string, "namePrefix")) {
			rc = fail(resp, 422, "Invalid", "%s: unknown field (ttlSeconds, "
				  "usages, labels, namePrefix)", it->string);
			goto cleanup;
		}
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(req, "ttlSeconds")) &&
	    es_json_int_value(it, ES_ADMIN_TOKEN_TTL_MIN, ES_ADMIN_TOKEN_TTL_MAX, &ttl) != 0) {
		rc = fail(resp, 422, "Invalid", "ttlSeconds: must be an integer in %d..%d",
			  ES_ADMIN_TOKEN_TTL_MIN, ES_ADMIN_TOKEN_TTL_MAX);
		goto cleanup;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(req, "usages")) &&
	    es_json_int_value(it, 1, ES_ADMIN_TOKEN_USAGES_MAX, &usages) != 0) {
		rc = fail(resp, 422, "Invalid", "usages: must be an integer in 1..%d",
			  ES_ADMIN_TOKEN_USAGES_MAX);
		goto cleanup;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(req, "namePrefix"))) {
		if (!cJSON_IsString(it) || !prefix_valid(it->valuestring)) {
			rc = fail(resp, 422, "Invalid", "namePrefix: must be the start of "
				  "an RFC 1123 name: at most %d of [a-z0-9.-], starting "
				  "with a letter or digit", PREFIX_MAX);
			goto cleanup;
		}
		prefix = it->valuestring;
	}
	labels = cJSON_GetObjectItemCaseSensitive(req, "labels");
	if (labels && es_obj_labels_check(labels, "labels", perr, sizeof(perr)) != ES_OK) {
		rc = fail(resp, 422, "Invalid", "%s", perr);
		goto cleanup;
	}
	if (!(w = calloc(1, sizeof(*w))) ||
	    !(w->labels = labels ? cJSON_Duplicate(labels, 1) : cJSON_CreateObject())) {
		free(w);
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	w->what = TW_CREATE;
	w->store = x->store;
	w->hooks = x->hooks;
	w->done = x->done;
	w->done_ud = x->done_ud;
	snprintf(w->who, sizeof(w->who), "%s", x->who);
	snprintf(w->prefix, sizeof(w->prefix), "%s", prefix);
	w->ttl = ttl;
	w->usages = usages;
	w->now = time(NULL);
	rc = twait_start(w, token_try(w), resp);
cleanup:
	cJSON_Delete(req);
	return rc;
}

static void on_token_deleted(void *ud, const es_store_enroll_result *r)
{
	twait *w = ud;
	cJSON *l;

	if (r->rc == ES_ERR_NOTFOUND) {
		w->rc = fail(&w->resp, 404, "NotFound", "bootstraptokens \"%s\" not found",
			     w->name);
	} else if (r->rc != ES_OK) {
		w->rc = fail(&w->resp, 500, "InternalError", "token delete: %s", r->error);
	} else {
		es_log_info("admin", "bootstrap token deleted", "id", w->name, "by", w->who,
			    NULL);
		if (!(l = cJSON_CreateObject()) ||
		    !cJSON_AddStringToObject(l, "kind", "BootstrapToken") ||
		    !cJSON_AddStringToObject(l, "id", w->name)) {
			cJSON_Delete(l);
			w->rc = ES_ERR_NOMEM;
		} else {
			w->rc = answer(&w->resp, 200, l);
		}
	}
	twait_complete(w);
}

static twait *twait_new(const admin__enroll_ctx *x, int what, const char *name)
{
	twait *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->what = what;
	w->store = x->store;
	w->hooks = x->hooks;
	w->done = x->done;
	w->done_ud = x->done_ud;
	snprintf(w->who, sizeof(w->who), "%s", x->who);
	snprintf(w->name, sizeof(w->name), "%s", name);
	return w;
}

es_err admin__tokens(const admin__enroll_ctx *x, const char *method, const char *path,
		     const char *id, const char *body, size_t len, es_admin_resp *resp)
{
	cJSON *items = NULL, *l;
	twait *w;
	es_err rc;

	if (!id && !strcmp(method, "POST"))
		return create(x, body, len, resp);
	if (!id && !strcmp(method, "GET")) {
		if ((rc = es_db_token_list(x->db, &items)) != ES_OK)
			return rc == ES_ERR_NOMEM ? rc :
			       fail(resp, 500, "InternalError", "token list: %s",
				    es_strerror(rc));
		if (!(l = cJSON_CreateObject()) ||
		    !cJSON_AddStringToObject(l, "apiVersion", ES_API_VERSION) ||
		    !cJSON_AddStringToObject(l, "kind", "BootstrapTokenList")) {
			cJSON_Delete(l);
			cJSON_Delete(items);
			return ES_ERR_NOMEM;
		}
		cJSON_AddItemToObject(l, "items", items);
		return answer(resp, 200, l);
	}
	if (id && !strcmp(method, "DELETE")) {
		if (!es_enroll_token_id_valid(id))
			return fail(resp, 404, "NotFound", "bootstraptokens \"%.16s\" not "
				    "found (an id is 6 of [a-z0-9])", id);
		if (!(w = twait_new(x, TW_DELETE, id)))
			return ES_ERR_NOMEM;
		return twait_start(w, es_store_token_delete(x->store, id, on_token_deleted, w),
				   resp);
	}
	return fail(resp, 405, "MethodNotAllowed", "method %s is not allowed on %s",
		    method, path);
}

static void on_node_revoked(void *ud, const es_store_enroll_result *r)
{
	twait *w = ud;
	const es_admin_hooks *hooks = w->hooks;
	const char *name = w->name;
	char cnt[24];
	cJSON *out, *d;

	if (r->rc != ES_OK) {
		w->rc = fail(&w->resp, 500, "InternalError", "revoke: %s", r->error);
		twait_complete(w);
		return;
	}
	if (!w->node_known && r->count == 0) {
		w->rc = fail(&w->resp, 404, "NotFound", "nodes \"%s\" not found", name);
		twait_complete(w);
		return;
	}
	snprintf(cnt, sizeof(cnt), "%lld", (long long)r->count);
	es_log_info("admin", "node deleted: certificates revoked", "node", name,
		    "certificates", cnt, "by", w->who, NULL);
	if (hooks && hooks->node_revoked)
		hooks->node_revoked(hooks->ud, name);
	if (!(out = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(out, "kind", "Status") ||
	    !cJSON_AddStringToObject(out, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(out, "status", "Success") ||
	    !(d = cJSON_AddObjectToObject(out, "details")) ||
	    !cJSON_AddStringToObject(d, "name", name) ||
	    !cJSON_AddStringToObject(d, "kind", "nodes") ||
	    !es_json_add_int(d, "certificatesRevoked", r->count)) {
		cJSON_Delete(out);
		w->rc = ES_ERR_NOMEM;
	} else {
		w->rc = answer(&w->resp, 200, out);
	}
	twait_complete(w);
}

es_err admin__node_delete(const admin__enroll_ctx *x, const char *name,
			  es_admin_resp *resp)
{
	cJSON *node = NULL;
	twait *w;
	es_err rc = es_db_node_get(x->db, name, &node);

	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return fail(resp, 500, "InternalError", "node get: %s", es_strerror(rc));
	cJSON_Delete(node);
	if (!(w = twait_new(x, TW_NODE, name)))
		return ES_ERR_NOMEM;
	w->node_known = rc == ES_OK;
	return twait_start(w, es_store_node_revoke(x->store, name, NULL, time(NULL),
						   on_node_revoked, w), resp);
}
