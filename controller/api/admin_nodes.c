/*
 * admin_nodes.c - the admin view of nodes (admin.h: GET nodes, nodes/NAME,
 * nodes/NAME/describe): this controller's rows (store/db.h) merged with
 * what the store holds of each node (es_store_nodes_read): which
 * controller serves it and, on etcd, the record that controller keeps of
 * it, so every controller on one etcd shows the same serving controller
 * and Ready=Unknown for a node no controller holds a session of.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admin_int.h"
#include "es_cond.h"
#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_time.h"

/* A read handed to the store: answered from its callback, inside the
 * es_store call (sqlite) or later (etcd: through done). */
typedef struct nwait {
	es_db *db;
	es_admin_done_fn done;
	void *done_ud;
	int returned, completed, describe, one;
	es_err rc;                /* filling resp ran out of memory */
	es_admin_resp resp;
	const char *backend;      /* es_store_backend's, static */
	char who[ES_NAME_MAX + 1], name[ES_NAME_MAX + 1];
} nwait;

es_err admin__ready_unknown(cJSON *conds, const char *last_seen)
{
	char msg[320];
	cJSON *ready = es_cond_find(conds, "Ready");
	const cJSON *was, *ltt;
	time_t since = 0;

	if (!ready)
		return ES_OK;
	was = cJSON_GetObjectItemCaseSensitive(ready, "status");
	ltt = cJSON_GetObjectItemCaseSensitive(ready, "lastTransitionTime");
	/* A view computed at each read: its transition time must not move from
	 * one read to the next, so it is when the node was last heard from (or,
	 * never seen, the time its condition already carries). */
	if ((!last_seen || es_time_parse_rfc3339(last_seen, &since) != 0) &&
	    (!cJSON_IsString(ltt) || es_time_parse_rfc3339(ltt->valuestring, &since) != 0))
		since = time(NULL);
	snprintf(msg, sizeof(msg), "no controller holds a session of the node: its agent"
		 " is not connected (last seen %s); it last reported Ready=%s",
		 last_seen ? last_seen : "never",
		 cJSON_IsString(was) ? was->valuestring : "?");
	return es_cond_set(conds, "Ready", "Unknown", "NodeStatusUnknown", msg, 0, since,
			   NULL);
}

/* Sets o's member key to the string s (NULL: null). 0 when out of memory. */
static int set_str(cJSON *o, const char *key, const char *s)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, key);
	return (s ? cJSON_AddStringToObject(o, key, s) : cJSON_AddNullToObject(o, key)) != NULL;
}

static int set_int(cJSON *o, const char *key, int64_t v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, key);
	return es_json_add_int(o, key, v) != NULL;
}

/* The view of another controller's record: its conditions and cursor. */
static es_err from_record(cJSON *status, cJSON *sync, const es_store_node *v)
{
	char ts[ES_TIME_RFC3339_LEN];
	cJSON *c;

	cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
	if (v->conditions) {
		if (!(c = cJSON_Duplicate(v->conditions, 1)))
			return ES_ERR_NOMEM;
		cJSON_AddItemToObject(status, "conditions", c);
	}
	if (!set_int(sync, "desiredResourceVersion", v->desired_ack) ||
	    !set_int(sync, "ackedSeq", v->seq) ||
	    !set_str(sync, "streamId", v->stream && *v->stream ? v->stream : NULL) ||
	    (v->last_report && !set_str(sync, "lastSeen", es_time_rfc3339(v->last_report, ts))) ||
	    (*v->writer && !set_str(sync, "recordController", v->writer)))
		return ES_ERR_NOMEM;
	return ES_OK;
}

es_err admin__node_merge(cJSON *node, const es_store_node *v, const char *self,
			 int local)
{
	cJSON *status = es_json_object_member(node, "status"), *sync, *ls;
	const char *ctrl = v ? v->controller : NULL;
	int here = ctrl && strcmp(ctrl, self) == 0;
	es_err rc;

	if (!status || !(sync = es_json_object_member(status, "sync")))
		return ES_ERR_NOMEM;
	cJSON_DeleteItemFromObjectCaseSensitive(sync, "controller");
	cJSON_DeleteItemFromObjectCaseSensitive(sync, "stateController");
	cJSON_DeleteItemFromObjectCaseSensitive(sync, "recordController");
	if ((ctrl && *ctrl && !set_str(sync, "controller", ctrl)) ||
	    (local && *self && !set_str(sync, "stateController", self)))
		return ES_ERR_NOMEM;
	/* The serving controller's rows are the freshest; elsewhere its record
	 * is (this file's rows of a node it served before stay as they were,
	 * and are its record when it wrote the last one). */
	if (v && v->writer && !here && (!local || strcmp(v->writer, self) != 0) &&
	    (rc = from_record(status, sync, v)) != ES_OK)
		return rc;
	if (ctrl)
		return ES_OK;
	ls = cJSON_GetObjectItemCaseSensitive(sync, "lastSeen");
	return admin__ready_unknown(cJSON_GetObjectItemCaseSensitive(status, "conditions"),
				    cJSON_IsString(ls) ? ls->valuestring : NULL);
}

/* A node this controller has no row of: {apiVersion, kind, metadata.name,
 * status.sync} as es_db_node_get's with nothing known. */
static cJSON *skeleton(const char *name)
{
	cJSON *n = cJSON_CreateObject(), *m, *st, *sync;

	if (!n || !cJSON_AddStringToObject(n, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(n, "kind", "Node") ||
	    !(m = cJSON_AddObjectToObject(n, "metadata")) ||
	    !cJSON_AddStringToObject(m, "name", name) ||
	    !(st = cJSON_AddObjectToObject(n, "status")) ||
	    !(sync = cJSON_AddObjectToObject(st, "sync")) ||
	    !cJSON_AddBoolToObject(sync, "connected", 0) ||
	    !cJSON_AddNullToObject(sync, "lastSeen") ||
	    !es_json_add_int(sync, "ackedSeq", 0) || !es_json_add_int(sync, "stateSeq", 0) ||
	    !es_json_add_int(sync, "desiredResourceVersion", 0) ||
	    !cJSON_AddNullToObject(sync, "agentVersion") ||
	    !cJSON_AddNullToObject(sync, "bootId") || !cJSON_AddNullToObject(sync, "streamId")) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

static es_err answer_one(nwait *w, const es_store_nodes_result *r)
{
	const es_store_node *v = r->n && strcmp(r->nodes[0].node, w->name) == 0 ?
				 &r->nodes[0] : NULL;
	cJSON *node = NULL, *desired = NULL, *out = NULL;
	es_err rc = es_db_node_get(w->db, w->name, &node);
	int local = rc == ES_OK;

	if (rc == ES_ERR_NOTFOUND && !v)
		return admin__not_found(&w->resp, ES_KIND_NODE, w->name);
	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return admin__fail(&w->resp, 500, NULL, "node get: %s", es_strerror(rc));
	if (!node && !(node = skeleton(w->name)))
		return ES_ERR_NOMEM;
	if ((rc = admin__node_merge(node, v, r->self, local)) != ES_OK)
		goto cleanup;
	if (!w->describe) {
		rc = admin__respond_json(&w->resp, 200, node);
		node = NULL;
		goto cleanup;
	}
	/* Without this controller's rows the node's labels and reported
	 * objects are not known here: no objects rather than every one
	 * "not reported". */
	if (local)
		rc = es_db_object_list(w->db, ES_KIND_UNKNOWN, &desired);
	else
		rc = (desired = cJSON_CreateArray()) ? ES_OK : ES_ERR_NOMEM;
	if (rc != ES_OK) {
		rc = rc == ES_ERR_NOMEM ? rc : admin__fail(&w->resp, 500, NULL,
							   "object list: %s", es_strerror(rc));
		goto cleanup;
	}
	if ((rc = es_admin_describe_build(node, desired, &out)) == ES_OK)
		rc = admin__respond_json(&w->resp, 200, out);
cleanup:
	cJSON_Delete(node);
	cJSON_Delete(desired);
	return rc;
}

/* Every node of this file's rows or the store's, by name (both ordered by
 * name, in byte order: SQLite's BINARY collation and etcd's keys). */
static es_err answer_list(nwait *w, const es_store_nodes_result *r)
{
	cJSON *rows = NULL, *items = NULL, *row, *node;
	size_t j = 0;
	es_err rc = es_db_node_list(w->db, &rows);

	if (rc != ES_OK)
		return rc == ES_ERR_NOMEM ? rc : admin__fail(&w->resp, 500, NULL,
							     "node list: %s", es_strerror(rc));
	if (!(items = cJSON_CreateArray())) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	row = rows ? rows->child : NULL;
	while (row || j < r->n) {
		const char *rn = row ? es_obj_name(row) : NULL;
		int cmp = !rn ? 1 : j >= r->n ? -1 : strcmp(rn, r->nodes[j].node);
		const es_store_node *v = cmp >= 0 ? &r->nodes[j++] : NULL;

		if (cmp <= 0) {
			cJSON *next = row->next;

			node = cJSON_DetachItemViaPointer(rows, row);
			row = next;
		} else if (!(node = skeleton(v->node))) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		cJSON_AddItemToArray(items, node);
		if ((rc = admin__node_merge(node, v, r->self, cmp <= 0)) != ES_OK)
			goto cleanup;
	}
	rc = admin__respond_list(w->db, &w->resp, w->who, "Node", items);
	items = NULL;
cleanup:
	cJSON_Delete(rows);
	cJSON_Delete(items);
	return rc;
}

static void on_nodes(void *ud, const es_store_nodes_result *r)
{
	nwait *w = ud;

	w->completed = 1;
	if (r->rc == ES_ERR_IO || r->rc == ES_ERR_PROTO) {
		/* The store did not answer (etcd down or without a quorum): who
		 * serves the node is not known; the client may try again. */
		es_log_warn("admin", "store unavailable", "op", "node get", "name",
			    w->one ? w->name : "(all)", "error", r->error, "by", w->who, NULL);
		w->rc = w->one ?
			admin__fail(&w->resp, 503, admin__details(w->name, "nodes"),
				    "get nodes \"%s\": the %s store is unavailable: %s",
				    w->name, w->backend, r->error) :
			admin__fail(&w->resp, 503, admin__details(NULL, "nodes"),
				    "list nodes: the %s store is unavailable: %s",
				    w->backend, r->error);
	} else if (r->rc == ES_ERR_NOMEM) {
		w->rc = ES_ERR_NOMEM;
	} else if (r->rc != ES_OK) {
		w->rc = admin__fail(&w->resp, 500, NULL, "node read: %s", r->error);
	} else {
		w->rc = w->one ? answer_one(w, r) : answer_list(w, r);
	}
	if (!w->returned)
		return;
	admin__answer_late(&w->resp, w->rc, w->done, w->done_ud);
	free(w);
}

es_err admin__nodes_get(const admin__enroll_ctx *x, const char *name, int describe,
			es_admin_resp *resp)
{
	nwait *w;
	es_err rc;

	if (name && (!*name || strlen(name) > ES_NAME_MAX))
		return admin__not_found(resp, ES_KIND_NODE, name);
	if (!(w = calloc(1, sizeof(*w))))
		return ES_ERR_NOMEM;
	w->db = x->db;
	w->done = x->done;
	w->done_ud = x->done_ud;
	w->describe = describe;
	w->one = name != NULL;
	w->backend = es_store_backend(x->store);
	snprintf(w->who, sizeof(w->who), "%s", x->who);
	snprintf(w->name, sizeof(w->name), "%s", name ? name : "");
	if ((rc = es_store_nodes_read(x->store, name, on_nodes, w)) != ES_OK) {
		free(w);
		return rc == ES_ERR_NOMEM ? rc :
		       admin__fail(resp, 500, NULL, "node read: %s", es_strerror(rc));
	}
	if (!w->completed) {
		w->returned = 1; /* on_nodes frees w */
		if (!w->done) /* es_admin_handle over an asynchronous store */
			return admin__fail(resp, 500, NULL, "the %s store answers later",
					   w->backend);
		return ES_OK; /* resp->status stays 0: answered through done */
	}
	*resp = w->resp;
	rc = w->rc;
	free(w);
	return rc;
}
