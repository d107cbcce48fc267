/*
 * admin_int.h - what admin.c shares with admin_describe.c. Private to the
 * admin module.
 */
#ifndef ES_CTRL_ADMIN_INT_H
#define ES_CTRL_ADMIN_INT_H

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

#endif
