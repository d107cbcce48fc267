/*
 * admin_int.h - what admin.c shares with admin_describe.c. Private to the
 * admin module.
 */
#ifndef ES_CTRL_ADMIN_INT_H
#define ES_CTRL_ADMIN_INT_H

#include <time.h>
#include <cjson/cJSON.h>
#include "api/admin.h"
#include "store/db.h"
#include "store/store.h"

/*
 * Builds the describe view of a node (admin.h, nodes/NAME/describe): node is
 * the Node as es_db_node_get returns it (borrowed), desired every live
 * desired object (es_db_object_list with ES_KIND_UNKNOWN; borrowed).
 * *out (caller owns):
 *   {node, objects: [{kind, name, uid, deleted, desired: {generation, spec}
 *   | null, reported: {generation?, observedGeneration, conditions} | null,
 *   actual: the agent's actual state of the object (status.objects[].actual,
 *   EgressPolicy: rules read back from the kernel) | null,
 *   inSync, differences: [string]}], conditions, sync}
 * EgressPolicy entries also list where actual differs from the spec
 * (es_egress_diff). An object the agent did not report differs with "not
 * reported by the agent", or, when status.agent.objectsOmitted says the
 * agent shortened its report, with a difference that says so.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_admin_describe_build(const cJSON *node, const cJSON *desired,
			       cJSON **out);

/* Bounds of a bootstrap token's ttlSeconds (admin_tokens.c): one minute to
 * one year, default one day (kubeadm's); a token that never expires is a
 * standing credential, so there is none. */
#define ES_ADMIN_TOKEN_TTL_MIN 60
#define ES_ADMIN_TOKEN_TTL_MAX (365 * 24 * 3600)
#define ES_ADMIN_TOKEN_TTL_DEFAULT (24 * 3600)
#define ES_ADMIN_TOKEN_USAGES_MAX 1000000

/* What the token and node-delete paths work with: reads from db, writes
 * to store (store_enroll.h), and es_admin_handle_async's done for an
 * answer the store gives later (NULL: es_admin_handle). Borrowed. */
typedef struct admin__enroll_ctx {
	es_db *db;
	es_store *store;
	const es_admin_hooks *hooks; /* may be NULL; must outlive a later answer */
	const char *who;
	es_admin_done_fn done;
	void *done_ud;
} admin__enroll_ctx;

/*
 * The bootstrap token paths (admin.h): id is the path segment after
 * bootstraptokens/ or NULL; x->hooks (may be NULL) give the CA hash and
 * URL of the join command a new token is shown with. Fills *resp for every
 * outcome, or leaves resp->status 0 when the store answers later through
 * x->done (as es_admin_handle_async). Errors: ES_ERR_NOMEM only.
 */
es_err admin__tokens(const admin__enroll_ctx *x, const char *method, const char *path,
		     const char *id, const char *body, size_t len, es_admin_resp *resp);

/*
 * DELETE nodes/NAME: revokes the node in the store (es_store_node_revoke),
 * then tells hooks->node_revoked. 404 when the store knows neither the
 * node nor a certificate of it. Fills *resp, or answers later as
 * admin__tokens. Errors: ES_ERR_NOMEM only.
 */
es_err admin__node_delete(const admin__enroll_ctx *x, const char *name,
			  es_admin_resp *resp);

/*
 * GET nodes (name NULL), nodes/NAME and (describe 1) nodes/NAME/describe
 * (admin_nodes.c): this controller's rows of the nodes merged with what
 * the store holds of them (es_store_nodes_read; docs/ARCHITECTURE.md "The
 * store"). Fills *resp, or leaves resp->status 0 when the store answers
 * later through x->done (as admin__tokens): 200, 404 (neither this file
 * nor the store knows the node), 503 (the store did not answer: the
 * message names its error), 500. Errors: ES_ERR_NOMEM only.
 */
es_err admin__nodes_get(const admin__enroll_ctx *x, const char *name, int describe,
			es_admin_resp *resp);

/*
 * Merges what the store holds of a node (v; NULL: nothing) into node (the
 * Node as es_db_node_get gives it, local 1, or a skeleton {metadata.name,
 * status.sync} when this controller has no row of it, local 0), self this
 * controller's id (es_store_nodes_result.self): status.sync.controller
 * (the serving controller's id, when it has one), stateController (self,
 * when local and self has an id), and from a record another controller
 * wrote while this one does not serve the node: status.conditions,
 * sync.desiredResourceVersion, ackedSeq, streamId, lastSeen and
 * recordController (that writer). When no controller holds the node's
 * session, Ready is shown Unknown (admin__ready_unknown).
 * Errors: ES_ERR_NOMEM.
 */
es_err admin__node_merge(cJSON *node, const es_store_node *v, const char *self,
			 int local);

/*
 * The reported conditions are the agent's last word; while no controller
 * holds the node's session (with the SQLite store: the agent is not
 * connected) none can vouch for them. Like the Kubernetes node lifecycle
 * controller, the view then shows Ready status Unknown, reason
 * NodeStatusUnknown, its message naming that no controller holds a
 * session, when the node was last seen (last_seen: RFC 3339 text, NULL:
 * never) and what the agent last said. lastTransitionTime is last_seen
 * (when the controllers stopped hearing from the node), so every read of
 * the view shows the same time; with last_seen NULL or not RFC 3339 the
 * condition's own lastTransitionTime stays. Only the view changes. conds
 * without a Ready condition (or NULL) is left as is.
 * Errors: ES_ERR_NOMEM.
 */
es_err admin__ready_unknown(cJSON *conds, const char *last_seen);

/* Response helpers of admin.c. Each fills resp and returns ES_OK, or
 * ES_ERR_NOMEM. fail: a Status of code (details taken, may be NULL);
 * respond_json: take as the body; not_found: 404 for kind/name;
 * respond_list: {apiVersion, kind: <kind>List, items (taken), metadata:
 * {resourceVersion}} of db. admin__details: {name, group, kind} (NULL:
 * out of memory). */
es_err admin__fail(es_admin_resp *resp, int code, cJSON *details, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
es_err admin__respond_json(es_admin_resp *resp, int status, cJSON *take);
es_err admin__not_found(es_admin_resp *resp, es_kind kind, const char *name);
es_err admin__respond_list(es_db *db, es_admin_resp *resp, const char *who,
			   const char *kind, cJSON *take_items);
cJSON *admin__details(const char *name, const char *kind);

/* Hands an answer the store gave after es_admin_handle_async returned to
 * done (resp's body then done's; NULL when rc, the filling of resp, is
 * not ES_OK: memory ran out), or frees it when there is no done (the
 * synchronous call answered 500 already). */
void admin__answer_late(es_admin_resp *resp, es_err rc, es_admin_done_fn done,
			void *done_ud);

#endif
