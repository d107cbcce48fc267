/*
 * admin.h - the controller's admin REST API, independent of the transport:
 * the server calls es_admin_handle for each complete HTTPS request.
 *
 * Paths (Kubernetes API conventions):
 *   GET    /apis/edgesync.io/v1alpha1/nodes                 NodeList
 *   GET    /apis/edgesync.io/v1alpha1/nodes/NAME            Node
 *          (?waitForDesiredResourceVersion=N&timeoutSeconds=T: a wait the
 *          server answers with a Status itself, net/server_wait.c)
 *   DELETE /apis/edgesync.io/v1alpha1/nodes/NAME            revoke the node: its
 *          certificates are refused from then on, its name may join again
 *   GET    /apis/edgesync.io/v1alpha1/nodes/NAME/describe   desired beside reported
 *   GET    /apis/edgesync.io/v1alpha1/nodes/NAME/reports    stored reports (?limit=N)
 *   GET    /apis/edgesync.io/v1alpha1/PLURAL                List of a desired kind
 *   GET    /apis/edgesync.io/v1alpha1/PLURAL/NAME           one object
 *   POST   /apis/edgesync.io/v1alpha1/PLURAL                create (409 when it exists)
 *   PUT    /apis/edgesync.io/v1alpha1/PLURAL/NAME           create or replace (apply)
 *   DELETE /apis/edgesync.io/v1alpha1/PLURAL/NAME           delete
 *   POST   /apis/edgesync.io/v1alpha1/bootstraptokens       create a token
 *          {ttlSeconds?, usages?, labels?, namePrefix?} -> 201 with `token`
 *          (the only response that holds its secret)
 *   GET    /apis/edgesync.io/v1alpha1/bootstraptokens       BootstrapTokenList
 *   DELETE /apis/edgesync.io/v1alpha1/bootstraptokens/ID    delete a token
 *   GET    /healthz                                         "ok"
 * Errors are a Kubernetes `Status` object (kind Status, apiVersion v1,
 * status Failure, message, reason, code): 400 BadRequest (not JSON, name in
 * path and body differ), 404 NotFound, 405 MethodNotAllowed, 409
 * AlreadyExists, 413 RequestEntityTooLarge, 422 Invalid (validation; message
 * names the field), 500 InternalError, 503 ServiceUnavailable (a write the
 * store could not make, or a node GET (not .../reports) it could not read:
 * etcd did not answer; the message names the store and what its client
 * said).
 * A Node (GET nodes, nodes/NAME) is this controller's row merged with the
 * store's view (admin_int.h, admin__node_merge): status.sync.controller,
 * stateController, recordController; Ready Unknown (NodeStatusUnknown)
 * while no controller holds the node's session.
 */
#ifndef ES_CTRL_ADMIN_H
#define ES_CTRL_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "store/db.h"
#include "store/store.h"

/* Largest request body accepted. */
#define ES_ADMIN_MAX_BODY (4 * 1024 * 1024)

typedef struct es_admin_hooks {
	/* Called after a committed write: prev is the object before (NULL when
	 * created), cur the object after (NULL when deleted). The server pushes
	 * `desired` changes to connected agents from here. May be NULL. */
	void (*object_changed)(void *ud, const cJSON *prev, const cJSON *cur);
	/* (Not with es_admin_handle_async's store: that tells its own
	 * changed callback.) */
	void *ud;
	/* For the join command a new bootstrap token is shown with: the
	 * signing CA's hash (NULL: the controller signs nothing) and the URL
	 * agents dial (advertise-url). */
	const char *ca_pin;
	const char *join_url;
	/* Called after DELETE nodes/NAME revoked the node in the store: the
	 * server closes its sessions. May be NULL. */
	void (*node_revoked)(void *ud, const char *node);
} es_admin_hooks;

typedef struct es_admin_resp {
	int status;               /* HTTP status code */
	char *body;               /* malloc'd, caller frees; never NULL on ES_OK */
	size_t body_len;
	const char *content_type; /* static string */
} es_admin_resp;

/*
 * A Kubernetes Status object (API conventions, "Response Status Kind"):
 * {kind: Status, apiVersion: v1, metadata: {}, status: Failure, message,
 * reason, code}. Returns a new object (caller owns; add `details` to it as
 * needed) or NULL on allocation failure.
 */
cJSON *es_admin_status(int code, const char *reason, const char *message);

/*
 * Handles one request. method is "GET", "POST", "PUT", "DELETE"; path is the
 * URL path without query; query may be NULL ("limit=10"); body/len the
 * request body (may be NULL/0). who is the caller's admin identity (for
 * logs). Fills *resp (every outcome, including client errors, is ES_OK with
 * an HTTP status). Errors: ES_ERR_NOMEM only (the server answers 500).
 */
es_err es_admin_handle(es_db *db, const es_admin_hooks *hooks,
		       const char *method, const char *path, const char *query,
		       const char *body, size_t len, const char *who,
		       es_admin_resp *resp);

/* The answer to a request es_admin_handle_async left pending: resp (the
 * callee owns resp->body then, as after es_admin_handle), or NULL when
 * memory ran out (answer 500). */
typedef void (*es_admin_done_fn)(void *ud, es_admin_resp *resp);

/*
 * es_admin_handle with object writes going to store (store.h; NULL: the
 * SQLite backend over db, telling hooks->object_changed, as
 * es_admin_handle does), for a store that answers later (the etcd
 * backend): a write handed to the store, and a node GET (it reads the
 * store's nodes too), leaves resp->status 0, and done(done_ud, resp) runs
 * once with the answer when the store has answered (later on the event
 * loop; also when the store closes). Every other request is answered in
 * resp before this returns, as by es_admin_handle (which is this with
 * done NULL: what the store would answer later is then answered 500 at
 * once, and a write goes on). done_ud must stay valid until done ran.
 * Errors: ES_ERR_NOMEM only.
 */
es_err es_admin_handle_async(es_db *db, es_store *store,
			     const es_admin_hooks *hooks, const char *method, const char *path, const char *query,
			     const char *body, size_t len, const char *who,
			     es_admin_done_fn done, void *done_ud, es_admin_resp *resp);

#endif
