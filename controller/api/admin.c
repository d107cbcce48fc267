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
	es_store *store;          /* es_admin_handle_async's, or the request's own sqlite one */
	es_admin_done_fn done;    /* es_admin_handle_async's (may be NULL) */
	void *done_ud;
} req;

/* A write handed to the store: answered from its callback, inside the
 * es_store call (sqlite) or later (etcd: through done). */
typedef struct pending {
	es_kind kind;
	int create_only, is_delete, returned, completed;
	char who[ES_NAME_MAX + 1];
	char name[ES_NAME_MAX + 1];
	es_admin_resp resp;
	es_err rc;                /* filling resp ran out of memory */
	es_admin_done_fn done;
	void *done_ud;
	const char *backend;      /* es_store_backend's, static */
} pending;

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
	case 503: return "ServiceUnavailable";
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
static es_err vfail(es_admin_resp *resp, int code, cJSON *details, const char *fmt,
		    va_list ap) __attribute__((format(printf, 4, 0)));

static es_err vfail(es_admin_resp *resp, int code, cJSON *details, const char *fmt,
		    va_list ap)
{
	req r = { .resp = resp };
	char msg[1024];
	cJSON *st;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!(st = es_admin_status(code, reason_of(code), msg))) {
		cJSON_Delete(details);
		return ES_ERR_NOMEM;
	}
	if (details)
		cJSON_AddItemToObject(st, "details", details);
	return respond_json(&r, code, st);
}

static es_err fail_details(req *r, int code, cJSON *details, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static es_err fail_details(req *r, int code, cJSON *details, const char *fmt, ...)
{
	va_list ap;
	es_err rc;

	va_start(ap, fmt);
	rc = vfail(r->resp, code, details, fmt, ap);
	va_end(ap);
	return rc;
}

es_err admin__fail(es_admin_resp *resp, int code, cJSON *details, const char *fmt, ...)
{
	va_list ap;
	es_err rc;

	va_start(ap, fmt);
	rc = vfail(resp, code, details, fmt, ap);
	va_end(ap);
	return rc;
}

es_err admin__respond_json(es_admin_resp *resp, int status, cJSON *take)
{
	req r = { .resp = resp };

	return respond_json(&r, status, take);
}

/* details {name, group, kind}; NULL on allocation failure. */
cJSON *admin__details(const char *name, const char *kind)
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

es_err admin__not_found(es_admin_resp *resp, es_kind kind, const char *name)
{
	cJSON *d = admin__details(name, es_obj_kind_plural(kind));

	if (!d)
		return ES_ERR_NOMEM;
	return admin__fail(resp, 404, d, "%s \"%s\" not found",
			   es_obj_kind_plural(kind), name);
}

static es_err not_found(req *r, es_kind kind, const char *name)
{
	return admin__not_found(r->resp, kind, name);
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
	return admin__respond_list(r->db, r->resp, r->who, kind, take_items);
}

es_err admin__respond_list(es_db *db, es_admin_resp *resp, const char *who,
			   const char *kind, cJSON *take_items)
{
	req rq = { .db = db, .resp = resp, .who = who }, *r = &rq;
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
			rc = fail_details(r, 413, admin__details(bname, es_obj_kind_name(kind)),
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
	if (!(d = admin__details(bname, es_obj_kind_name(kind))) ||
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

void admin__answer_late(es_admin_resp *resp, es_err rc, es_admin_done_fn done,
			void *done_ud)
{
	if (rc != ES_OK) {
		free(resp->body);
		memset(resp, 0, sizeof(*resp));
	}
	if (done)
		done(done_ud, rc == ES_OK ? resp : NULL);
	else
		free(resp->body);
}

/* The answer to a finished write (es_store_cb). */
static void write_done(void *ud, const es_store_result *res)
{
	pending *p = ud;
	req r = { .resp = &p->resp, .who = p->who };
	const char *kn = es_obj_kind_name(p->kind), *plural = es_obj_kind_plural(p->kind);
	char rvs[32];
	cJSON *d;

	p->completed = 1;
	if (res->rc == ES_ERR_NOTFOUND) {
		p->rc = not_found(&r, p->kind, p->name);
	} else if (res->rc == ES_ERR_EXISTS) {
		d = admin__details(p->name, plural);
		p->rc = d ? fail_details(&r, 409, d, "%s \"%s\" already exists", plural,
					 p->name) : ES_ERR_NOMEM;
	} else if (res->rc == ES_ERR_CONFLICT) {
		d = admin__details(p->name, plural);
		p->rc = d ? fail_details(&r, 409, d, "%s \"%s\": %s; try again", plural,
					 p->name, res->error) : ES_ERR_NOMEM;
	} else if (res->rc == ES_ERR_IO) {
		/* The store did not answer (etcd down or without a quorum):
		 * nothing is acknowledged; the client may try again later. */
		es_log_warn("admin", "store unavailable", "op", p->is_delete ? "delete" :
			    "put", "kind", kn, "name", p->name, "error", res->error,
			    "by", p->who, NULL);
		d = admin__details(p->name, plural);
		p->rc = d ? fail_details(&r, 503, d, "%s %s \"%s\": the %s store is"
					 " unavailable: %s", p->is_delete ? "delete" : "put",
					 plural, p->name, p->backend, res->error) :
			    ES_ERR_NOMEM;
	} else if (res->rc != ES_OK) {
		p->rc = store_failed(&r, res->rc, p->is_delete ? "delete" : "put");
	} else if (p->is_delete) {
		es_log_info("admin", "object deleted", "kind", kn, "name", p->name,
			    "by", p->who, NULL);
		p->rc = respond_json(&r, 200, cJSON_Duplicate(res->object, 1));
	} else {
		snprintf(rvs, sizeof(rvs), "%" PRId64, es_obj_resource_version(res->object));
		es_log_info("admin", res->created ? "object created" : res->changed ?
			    "object replaced" : "object unchanged", "kind", kn,
			    "name", p->name, "resourceVersion", rvs, "by", p->who, NULL);
		p->rc = respond_json(&r, res->created ? 201 : 200,
				     cJSON_Duplicate(res->object, 1));
	}
	if (!p->returned)
		return;
	admin__answer_late(&p->resp, p->rc, p->done, p->done_ud);
	free(p);
}

/* Hands a write to the store. obj: the object of a put (borrowed), NULL
 * for a delete of kind/name. */
static es_err write_start(req *r, es_kind kind, const char *name, const cJSON *obj,
			  int create_only)
{
	pending *p = calloc(1, sizeof(*p));
	es_err rc;

	if (!p)
		return ES_ERR_NOMEM;
	p->kind = kind;
	p->create_only = create_only;
	p->is_delete = obj == NULL;
	p->done = r->done;
	p->done_ud = r->done_ud;
	p->backend = es_store_backend(r->store);
	snprintf(p->who, sizeof(p->who), "%s", r->who);
	snprintf(p->name, sizeof(p->name), "%s", name);
	rc = obj ? es_store_put(r->store, obj, create_only, write_done, p) :
		   es_store_delete(r->store, kind, name, write_done, p);
	if (rc != ES_OK) {
		free(p);
		return rc == ES_ERR_NOMEM ? rc : store_failed(r, rc, obj ? "put" : "delete");
	}
	if (!p->completed) {
		p->returned = 1; /* write_done frees p */
		if (!p->done) /* es_admin_handle over an asynchronous store */
			return fail_details(r, 500, NULL, "the %s store answers later;"
					    " the write goes on", es_store_backend(r->store));
		return ES_OK; /* resp->status stays 0: answered through done */
	}
	*r->resp = p->resp;
	rc = p->rc;
	free(p);
	return rc;
}

/* PUT (path_name set: create or replace) and POST (path_name NULL: create,
 * 409 when it exists). */
static es_err apply(req *r, es_kind kind, const char *path_name,
		    const char *body, size_t len)
{
	cJSON *obj = NULL;
	es_err rc = read_body(r, kind, path_name, body, len, &obj);

	if (rc != ES_OK || !obj)
		return rc;
	rc = write_start(r, kind, es_obj_name(obj), obj, path_name == NULL);
	cJSON_Delete(obj);
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
		if (strlen(name) > ES_NAME_MAX)
			return not_found(r, kind, name);
		return write_start(r, kind, name, NULL, 0);
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
	admin__enroll_ctx x = { r->db, r->store, r->hooks, r->who, r->done, r->done_ud };
	cJSON *out = NULL, *res;
	es_err rc;
	int limit;

	if (name && !sub && strcmp(r->method, "DELETE") == 0)
		return admin__node_delete(&x, name, r->resp);
	if (strcmp(r->method, "GET") != 0)
		return method_not_allowed(r, path);
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
	return admin__nodes_get(&x, name, sub != NULL, r->resp);
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
		return admin__tokens(&(admin__enroll_ctx){ r->db, r->store, r->hooks, r->who,
				     r->done, r->done_ud }, r->method, path, seg[1], body,
				     len, r->resp);
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

es_err es_admin_handle_async(es_db *db, es_store *store,
			     const es_admin_hooks *hooks, const char *method, const char *path, const char *query,
			     const char *body, size_t len, const char *who,
			     es_admin_done_fn done, void *done_ud, es_admin_resp *resp)
{
	es_store local;
	req r = { db, hooks, method ? method : "", who ? who : "", resp,
		  store, done, done_ud };
	es_err rc;

	memset(resp, 0, sizeof(*resp));
	if (!r.store) {
		es_store_sqlite_init(&local, db, hooks ? hooks->object_changed : NULL,
				     hooks ? hooks->ud : NULL);
		r.store = &local;
	}
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

es_err es_admin_handle(es_db *db, const es_admin_hooks *hooks,
		       const char *method, const char *path, const char *query,
		       const char *body, size_t len, const char *who,
		       es_admin_resp *resp)
{
	return es_admin_handle_async(db, NULL, hooks, method, path, query, body, len, who,
				     NULL, NULL, resp);
}
