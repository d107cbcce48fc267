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

static es_err create(es_db *db, const es_admin_hooks *hooks, const char *body,
		     size_t len, const char *who, es_admin_resp *resp)
{
	char perr[512], tok[ES_ENROLL_TOKEN_SZ], id[8], secret[20], hex[ES_ENROLL_HEX_SZ];
	char t1[ES_TIME_RFC3339_LEN], t2[ES_TIME_RFC3339_LEN];
	cJSON *req = NULL, *out = NULL, *labels;
	const cJSON *it;
	int64_t ttl = ES_ADMIN_TOKEN_TTL_DEFAULT, usages = 1;
	const char *prefix = "";
	time_t now = time(NULL);
	es_db_token t;
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
	if (!labels && !(labels = cJSON_AddObjectToObject(req, "labels"))) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	for (int i = 0; i < ID_TRIES; i++) {
		if (es_enroll_token_new(tok) != ES_OK ||
		    es_enroll_token_split(tok, id, secret, perr, sizeof(perr)) != ES_OK ||
		    es_enroll_sha256_hex(secret, strlen(secret), hex) != ES_OK) {
			rc = fail(resp, 500, "InternalError", "no randomness for a token");
			goto cleanup;
		}
		t = (es_db_token){ id, hex, now + (time_t)ttl, usages, labels, prefix, now };
		rc = es_db_token_create(db, &t);
		if (rc != ES_ERR_EXISTS)
			break;
	}
	if (rc != ES_OK) {
		rc = fail(resp, 500, "InternalError", "storing the token failed: %s",
			  es_strerror(rc));
		goto cleanup;
	}
	es_log_info("admin", "bootstrap token created", "id", id, "expires",
		    es_time_rfc3339(now + (time_t)ttl, t1), "by", who, NULL);
	if (!(out = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(out, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(out, "kind", "BootstrapToken") ||
	    !cJSON_AddStringToObject(out, "id", id) ||
	    !cJSON_AddStringToObject(out, "token", tok) ||
	    !cJSON_AddStringToObject(out, "expires", es_time_rfc3339(now + (time_t)ttl, t1)) ||
	    !es_json_add_int(out, "usages", usages) ||
	    !es_json_add_int(out, "used", 0) ||
	    !cJSON_AddItemToObject(out, "labels", cJSON_Duplicate(labels, 1)) ||
	    !cJSON_AddStringToObject(out, "namePrefix", prefix) ||
	    !cJSON_AddStringToObject(out, "creationTimestamp", es_time_rfc3339(now, t2)) ||
	    (hooks && hooks->ca_pin &&
	     !cJSON_AddStringToObject(out, "caHash", hooks->ca_pin)) ||
	    (hooks && hooks->join_url &&
	     !cJSON_AddStringToObject(out, "controllerURL", hooks->join_url))) {
		cJSON_Delete(out);
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	rc = answer(resp, 201, out);
cleanup:
	explicit_bzero(tok, sizeof(tok));
	explicit_bzero(secret, sizeof(secret));
	cJSON_Delete(req);
	return rc;
}

es_err admin__tokens(es_db *db, const es_admin_hooks *hooks, const char *method,
		     const char *path,
		     const char *id, const char *body, size_t len, const char *who,
		     es_admin_resp *resp)
{
	cJSON *items = NULL, *l;
	es_err rc;

	if (!id && !strcmp(method, "POST"))
		return create(db, hooks, body, len, who, resp);
	if (!id && !strcmp(method, "GET")) {
		if ((rc = es_db_token_list(db, &items)) != ES_OK)
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
		rc = es_db_token_delete(db, id);
		if (rc == ES_ERR_NOTFOUND)
			return fail(resp, 404, "NotFound", "bootstraptokens \"%s\" not found",
				    id);
		if (rc != ES_OK)
			return fail(resp, 500, "InternalError", "token delete: %s",
				    es_strerror(rc));
		es_log_info("admin", "bootstrap token deleted", "id", id, "by", who, NULL);
		if (!(l = cJSON_CreateObject()) ||
		    !cJSON_AddStringToObject(l, "kind", "BootstrapToken") ||
		    !cJSON_AddStringToObject(l, "id", id)) {
			cJSON_Delete(l);
			return ES_ERR_NOMEM;
		}
		return answer(resp, 200, l);
	}
	return fail(resp, 405, "MethodNotAllowed", "method %s is not allowed on %s",
		    method, path);
}

es_err admin__node_delete(es_db *db, const es_admin_hooks *hooks, const char *name,
			  const char *who, es_admin_resp *resp)
{
	cJSON *node = NULL, *out;
	int64_t n = 0;
	char cnt[24];
	es_err rc = es_db_node_get(db, name, &node);

	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return fail(resp, 500, "InternalError", "node get: %s", es_strerror(rc));
	rc = es_db_node_revoke(db, name, NULL, time(NULL), &n);
	if (rc != ES_OK) {
		cJSON_Delete(node);
		return fail(resp, 500, "InternalError", "revoke: %s", es_strerror(rc));
	}
	if (!node && n == 0)
		return fail(resp, 404, "NotFound", "nodes \"%s\" not found", name);
	snprintf(cnt, sizeof(cnt), "%lld", (long long)n);
	es_log_info("admin", "node deleted: certificates revoked", "node", name,
		    "certificates", cnt, "by", who, NULL);
	if (hooks && hooks->node_revoked)
		hooks->node_revoked(hooks->ud, name);
	if (!(out = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(out, "kind", "Status") ||
	    !cJSON_AddStringToObject(out, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(out, "status", "Success") ||
	    !cJSON_AddItemToObject(out, "details", cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(cJSON_GetObjectItem(out, "details"), "name", name) ||
	    !cJSON_AddStringToObject(cJSON_GetObjectItem(out, "details"), "kind", "nodes") ||
	    !es_json_add_int(cJSON_GetObjectItem(out, "details"), "certificatesRevoked", n)) {
		cJSON_Delete(out);
		cJSON_Delete(node);
		return ES_ERR_NOMEM;
	}
	cJSON_Delete(node);
	return answer(resp, 200, out);
}
