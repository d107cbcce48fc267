/*
 * admin.c - the admin REST API over the store (admin.h). Paths, verbs and
 * the Status error object follow the Kubernetes API conventions.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admin.h"
#include "api/admin_int.h"
#include "es_json.h"
#include "es_log.h"
#include "es_proto.h"

#define API_PREFIX "/apis/" ES_API_GROUP "/v1alpha1/"
#define JSON_TYPE "application/json"
#define REPORTS_DEFAULT_LIMIT 100

typedef struct req {
	es_db *db;
	const es_admin_hooks *hooks;
	const char *method;
	const char *who;
	es_admin_resp *resp;
} req;

static es_err respond(req *r, int status, const char *type, char *take_body)
{
	if (!take_body)
		return ES_ERR_NOMEM;
	r->resp->status = status;
	r->resp->body = take_body;
	r->resp->body_len = strlen(take_body);
	r->resp->content_type = type;
	return ES_OK;
}

static es_err respond_json(req *r, int status, cJSON *take)
{
	char *text = take ? es_json_print(take) : NULL;

	cJSON_Delete(take);
	return respond(r, status, JSON_TYPE, text);
}

static const char *reason_of(int code)
{
	switch (code) {
	case 400: return "BadRequest";
	case 404: return "NotFound";
	case 405: return "MethodNotAllowed";
	case 409: return "AlreadyExists";
	case 413: return "RequestEntityTooLarge";
	case 422: return "Invalid";
	default: return "InternalError";
	}
}

cJSON *es_admin_status(int code, const char *reason, const char *message)
{
	cJSON *st = cJSON_CreateObject();

	if (!st || !cJSON_AddStringToObject(st, "kind", "Status") ||
	    !cJSON_AddStringToObject(st, "apiVersion", "v1") ||
	    !cJSON_AddObjectToObject(st, "metadata") ||
	    !cJSON_AddStringToObject(st, "status", "Failure") ||
	    !cJSON_AddStringToObject(st, "message", message) ||
	    !cJSON_AddStringToObject(st, "reason", reason) ||
	    !es_json_add_int(st, "code", code)) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

/* An es_admin_status response with the reason of code. details (taken, may
 * be NULL) is added as `details`. */
static es_err fail_details(req *r, int code, cJSON *details, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static es_err fail_details(req *r, int code, cJSON *details, const char *fmt, ...)
{
	char msg[1024];
	cJSON *st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!(st = es_admin_status(code, reason_of(code), msg))) {
		cJSON_Delete(details);
		return ES_ERR_NOMEM;
	}
	if (details)
		cJSON_AddItemToObject(st, "details", details);
	return respond_json(r, code, st);
}

/* details {name, group, kind}; NULL on allocation failure. */
static cJSON *details_of(const char *name, const char *kind)
{
	cJSON *d = cJSON_CreateObject();

	if (!d || (name && !cJSON_AddStringToObject(d, "name", name)) ||
	    !cJSON_AddStringToObject(d, "group", ES_API_GROUP) ||
	    !cJSON_AddStringToObject(d, "kind", kind)) {
		cJSON_Delete(d);
		return NULL;
	}
	return d;
}

static es_err not_found(req *r, es_kind kind, const char *name)
{
	cJSON *d = details_of(name, es_obj_kind_plural(kind));

	if (!d)
		return ES_ERR_NOMEM;
	return fail_details(r, 404, d, "%s \"%s\" not found",
			    es_obj_kind_plural(kind), name);
}

/* Maps a store error: NOMEM is returned, anything else answers 500. */
static es_err store_failed(req *r, es_err rc, const char *what)
{
	if (rc == ES_ERR_NOMEM)
		return rc;
	es_log_error("admin", "store failed", "op", what, "error", es_strerror(rc),
		     "by", r->who, NULL);
	return fail_details(r, 500, NULL, "%s: %s", what, es_strerror(rc));
}

/* {apiVersion, kind: <Kind>List, items, metadata: {resourceVersion}}. */
static es_err respond_list(req *r, const char *kind, cJSON *take_items)
{
	char list_kind[64];
	int64_t rv = 0;
	cJSON *l = NULL, *m;
	es_err rc = es_db_rv(r->db, &rv, NULL);

	if (rc != ES_OK) {
		cJSON_Delete(take_items);
		return store_failed(r, rc, "list");
	}
	snprintf(list_kind, sizeof(list_kind), "%sList", kind);
	if (!(l = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(l, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(l, "kind", list_kind)) {
		cJSON_Delete(l);
		cJSON_Delete(take_items);
		return ES_ERR_NOMEM;
	}
	cJSON_AddItemToObject(l, "items", take_items);
	if (!(m = cJSON_AddObjectToObject(l, "metadata")) ||
	    !es_json_add_int(m, "resourceVersion", rv)) {
		cJSON_Delete(l);
		return ES_ERR_NOMEM;
	}
	return respond_json(r, 200, l);
}

/* Parses and checks a PUT/POST body for kind (and path_name on PUT).
 * On ES_OK either *obj is the valid object, or *obj is NULL and the
 * response (400, 413, 422) is already filled. */
static es_err read_body(req *r, es_kind kind, const char *path_name,
			const char *body, size_t len, cJSON **obj)
{
	char perr[512], field[256] = "";
	const char *bkind, *bname;
	cJSON *o = NULL, *d, *causes, *cause;
	const char *colon;
	es_err rc;

	*obj = NULL;
	if (len > ES_ADMIN_MAX_BODY)
		return fail_details(r, 413, NULL, "request body of %zu bytes is over the"
				    " limit of %d bytes", len, ES_ADMIN_MAX_BODY);
	if (!body || len == 0)
		return fail_details(r, 400, NULL, "request body is empty");
	rc = es_json_parse(body, len, ES_PROTO_MAX_OBJECT_DEPTH, &o, perr, sizeof(perr));
	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK)
		return fail_details(r, 400, NULL, "request body is not valid JSON: %s", perr);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return fail_details(r, 400, NULL, "request body must be a JSON object");
	}
	bkind = es_obj_kind_str(o);
	bname = es_obj_name(o);
	if (!bkind || strcmp(bkind, es_obj_kind_name(kind)) != 0) {
		rc = fail_details(r, 400, NULL, "kind: the object's kind (%s) does not"
				  " match the resource %s (kind %s)", bkind ? bkind : "missing",
				  es_obj_kind_plural(kind), es_obj_kind_name(kind));
		cJSON_Delete(o);
		return rc;
	}
	if (path_name && (!bname || strcmp(bname, path_name) != 0)) {
		rc = fail_details(r, 400, NULL, "metadata.name: the name of the object (%s)"
				  " does not match the name on the URL (%s)",
				  bname ? bname : "missing", path_name);
		cJSON_Delete(o);
		return rc;
	}
	if (es_obj_validate_desired(o, perr, sizeof(perr)) == ES_OK) {
		char *txt = es_json_print(o);
		size_t sz = txt ? strlen(txt) : 0;

		free(txt);
		if (!txt) {
			cJSON_Delete(o);
			return ES_ERR_NOMEM;
		}
		if (sz > ES_PROTO_MAX_OBJECT) {
			rc = fail_details(r, 413, details_of(bname, es_obj_kind_name(kind)),
					  "%s \"%s\" is %zu bytes as JSON; an object must"
					  " fit in one desired message: at most %d bytes",
					  es_obj_kind_name(kind), bname ? bname : "", sz,
					  ES_PROTO_MAX_OBJECT);
			cJSON_Delete(o);
			return rc;
		}
		*obj = o;
		return ES_OK;
	}
	/* Kubernetes' Invalid status: details.causes[] {reason, message, field}. */
	colon = strstr(perr, ": ");
	if (colon)
		snprintf(field, sizeof(field), "%.*s", (int)(colon - perr), perr);
	if (!(d = details_of(bname, es_obj_kind_name(kind))) ||
	    !(causes = cJSON_AddArrayToObject(d, "causes")) ||
	    !(cause = cJSON_CreateObject())) {
		cJSON_Delete(d);
		cJSON_Delete(o);
		return ES_ERR_NOMEM;
	}
	cJSON_AddItemToArray(causes, cause);
	if (!cJSON_AddStringToObject(cause, "reason", "FieldValueInvalid") ||
	    !cJSON_AddStringToObject(cause, "message", colon ? colon + 2 : perr) ||
	    (colon && !cJSON_AddStringToObject(cause, "field", field))) {
		cJSON_Delete(d);
		cJSON_Delete(o);
		return ES_ERR_NOMEM;
	}
	rc = fail_details(r, 422, d, "%s \"%s\" is invalid: %s", es_obj_kind_name(kind),
			  bname ? bname : "", perr);
	cJSON_Delete(o);
	return rc;
}

static void notify(req *r, const cJSON *prev, const cJSON *cur)
{
	if (r->hooks && r->hooks->object_changed)
		r->hooks->object_changed(r->hooks->ud, prev, cur);
}

/* PUT (path_name set: create or replace) and POST (path_name NULL: create,
 * 409 when it exists). */
static es_err apply(req *r, es_kind kind, const char *path_name,
		    const char *body, size_t len)
{
	cJSON *obj = NULL, *stored = NULL, *prev = NULL, *existing = NULL;
	int created = 0, changed = 0;
	char rvs[32];
	es_err rc = read_body(r, kind, path_name, body, len, &obj);

	if (rc != ES_OK || !obj)
		return rc;
	if (!path_name) {
		rc = es_db_object_get(r->db, kind, es_obj_name(obj), &existing);
		if (rc == ES_OK) {
			cJSON *d = details_of(es_obj_name(obj), es_obj_kind_plural(kind));
			rc = d ? fail_details(r, 409, d, "%s \"%s\" already exists",
					      es_obj_kind_plural(kind), es_obj_name(obj)) :
				 ES_ERR_NOMEM;
			goto cleanup;
		}
		if (rc != ES_ERR_NOTFOUND) {
			rc = store_failed(r, rc, "get");
			goto cleanup;
		}
	}
	rc = es_db_object_put(r->db, obj, &stored, &prev, &created, &changed);
	if (rc != ES_OK) {
		rc = store_failed(r, rc, "put");
		goto cleanup;
	}
	snprintf(rvs, sizeof(rvs), "%" PRId64, es_obj_resource_version(stored));
	es_log_info("admin", created ? "object created" : changed ? "object replaced" :
		    "object unchanged", "kind", es_obj_kind_name(kind),
		    "name", es_obj_name(stored), "resourceVersion", rvs, "by", r->who, NULL);
	if (changed)
		notify(r, prev, stored);
	rc = respond_json(r, created ? 201 : 200, stored);
	stored = NULL;
cleanup:
	cJSON_Delete(obj);
	cJSON_Delete(stored);
	cJSON_Delete(prev);
	cJSON_Delete(existing);
	return rc;
}

static es_err desired_one(req *r, es_kind kind, const char *name)
{
	cJSON *obj = NULL;
	es_err rc;

	if (strcmp(r->method, "GET") == 0) {
		rc = es_db_object_get(r->db, kind, name, &obj);
		if (rc == ES_ERR_NOTFOUND)
			return not_found(r, kind, name);
		if (rc != ES_OK)
			return store_failed(r, rc, "get");
		return respond_json(r, 200, obj);
	}
	if (strcmp(r->method, "DELETE") == 0) {
		rc = es_db_object_delete(r->db, kind, name, &obj);
		if (rc == ES_ERR_NOTFOUND)
			return not_found(r, kind, name);
		if (rc != ES_OK)
			return store_failed(r, rc, "delete");
		es_log_info("admin", "object deleted", "kind", es_obj_kind_name(kind),
			    "name", name, "by", r->who, NULL);
		notify(r, obj, NULL);
		return respond_json(r, 200, obj);
	}
	return ES_ERR_INVAL;
}

static es_err method_not_allowed(req *r, const char *path)
{
	return fail_details(r, 405, NULL, "method %s is not allowed on %s", r->method, path);
}

/* limit=N from the query string (other parameters ignored). -1: bad. */
static int parse_limit(const char *query)
{
	const char *p = query;
	char *end;
	long v;

	while (p && *p) {
		if (strncmp(p, "limit=", 6) == 0) {
			v = strtol(p + 6, &end, 10);
			if (end == p + 6 || (*end && *end != '&') || v < 1 ||
			    v > ES_DB_REPORTS_KEPT)
				return -1;
			return (int)v;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return REPORTS_DEFAULT_LIMIT;
}

static es_err nodes(req *r, const char *path, const char *name, const char *sub,
		    const char *query)
{
	cJSON *node = NULL, *out = NULL, *desired = NULL, *res;
	es_err rc;
	int limit;

	if (name && !sub && strcmp(r->method, "DELETE") == 0)
		return admin__node_delete(r->db, r->hooks, name, r->who, r->resp);
	if (strcmp(r->method, "GET") != 0)
		return method_not_allowed(r, path);
	if (!name) {
		if ((rc = es_db_node_list(r->db, &out)) != ES_OK)
			return store_failed(r, rc, "node list");
		return respond_list(r, "Node", out);
	}
	if (sub && strcmp(sub, "reports") == 0) {
		if ((limit = parse_limit(query)) < 0)
			return fail_details(r, 400, NULL, "limit: must be an integer"
					    " in 1..%d", ES_DB_REPORTS_KEPT);
		rc = es_db_reports_list(r->db, name, limit, &out);
		if (rc == ES_ERR_NOTFOUND)
			return not_found(r, ES_KIND_NODE, name);
		if (rc != ES_OK)
			return store_failed(r, rc, "reports list");
		if (!(res = cJSON_CreateObject()) ||
		    !cJSON_AddStringToObject(res, "node", name)) {
			cJSON_Delete(res);
			cJSON_Delete(out);
			return ES_ERR_NOMEM;
		}
		cJSON_AddItemToObject(res, "items", out);
		return respond_json(r, 200, res);
	}
	if (sub && strcmp(sub, "describe") != 0)
		return fail_details(r, 404, NULL, "no such path %s", path);
	rc = es_db_node_get(r->db, name, &node);
	if (rc == ES_ERR_NOTFOUND)
		return not_found(r, ES_KIND_NODE, name);
	if (rc != ES_OK)
		return store_failed(r, rc, "node get");
	if (!sub)
		return respond_json(r, 200, node);
	rc = es_db_object_list(r->db, ES_KIND_UNKNOWN, &desired);
	if (rc != ES_OK) {
		rc = store_failed(r, rc, "object list");
		goto cleanup;
	}
	if ((rc = es_admin_describe_build(node, desired, &out)) != ES_OK)
		goto cleanup;
	rc = respond_json(r, 200, out);
cleanup:
	cJSON_Delete(node);
	cJSON_Delete(desired);
	return rc;
}

static es_err route(req *r, const char *path, const char *query,
		    const char *body, size_t len)
{
	char buf[1024], *seg[4] = { 0 }, *save = NULL, *tok;
	int n = 0;
	es_kind kind;

	if (strcmp(path, "/healthz") == 0) {
		if (strcmp(r->method, "GET") != 0)
			return method_not_allowed(r, path);
		return respond(r, 200, "text/plain", strdup("ok"));
	}
	if (strncmp(path, API_PREFIX, strlen(API_PREFIX)) != 0 ||
	    strlen(path) >= sizeof(buf))
		return fail_details(r, 404, NULL, "no such path %s", path);
	snprintf(buf, sizeof(buf), "%s", path + strlen(API_PREFIX));
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (n == 3)
			return fail_details(r, 404, NULL, "no such path %s", path);
		seg[n++] = tok;
	}
	if (n && n < 3 && strcmp(seg[0], "bootstraptokens") == 0)
		return admin__tokens(r->db, r->hooks, r->method, path, seg[1], body, len,
				     r->who, r->resp);
	kind = n ? es_obj_kind_from_plural(seg[0]) : ES_KIND_UNKNOWN;
	if (kind == ES_KIND_UNKNOWN)
		return fail_details(r, 404, NULL, "no such resource type: %s",
				    n ? seg[0] : path);
	if (kind == ES_KIND_NODE)
		return nodes(r, path, seg[1], seg[2], query);
	if (n == 3)
		return fail_details(r, 404, NULL, "no such path %s", path);
	if (n == 1) {
		es_err rc;
		cJSON *items = NULL;

		if (strcmp(r->method, "POST") == 0)
			return apply(r, kind, NULL, body, len);
		if (strcmp(r->method, "GET") != 0)
			return method_not_allowed(r, path);
		if ((rc = es_db_object_list(r->db, kind, &items)) != ES_OK)
			return store_failed(r, rc, "list");
		return respond_list(r, es_obj_kind_name(kind), items);
	}
	if (strcmp(r->method, "PUT") == 0)
		return apply(r, kind, seg[1], body, len);
	if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "DELETE") == 0)
		return desired_one(r, kind, seg[1]);
	return method_not_allowed(r, path);
}

es_err es_admin_handle(es_db *db, const es_admin_hooks *hooks,
		       const char *method, const char *path, const char *query,
		       const char *body, size_t len, const char *who,
		       es_admin_resp *resp)
{
	req r = { db, hooks, method ? method : "", who ? who : "", resp };
	es_err rc;

	memset(resp, 0, sizeof(*resp));
	if (!path)
		path = "";
	rc = route(&r, path, query, body, len);
	if (rc != ES_OK) {
		free(resp->body);
		memset(resp, 0, sizeof(*resp));
		return ES_ERR_NOMEM;
	}
	return ES_OK;
}
