/*
 * store_enroll.h - the writes of joining behind the store interface
 * (store.h; docs/ARCHITECTURE.md, "The store"): bootstrap tokens, the
 * certificates the signing CA issued and the key each node name is bound
 * to, and revocation, by the rules of db_enroll.h.
 *
 *   sqlite  the db_enroll.h call on the controller's own file; the
 *           callback runs inside the call.
 *   etcd    store_etcd_enroll.h: compare-and-swap txns on records every
 *           controller of the etcd shares; the callback runs later on the
 *           event loop, once the controller's copy (the db_enroll.h tables,
 *           fed by watches) holds the write.
 *
 * Reads (es_db_token_list, es_db_cert_state, es_db_enroll_labels) stay
 * synchronous on the db_enroll.h tables in both cases.
 */
#ifndef ES_CTRL_STORE_ENROLL_H
#define ES_CTRL_STORE_ENROLL_H

#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "es_err.h"
#include "store/db_enroll.h"
#include "store/store.h"

typedef struct es_store_enroll_result {
	/* ES_OK (outcome says whether the rules let it happen);
	 * ES_ERR_EXISTS (token create: the id is taken); ES_ERR_NOTFOUND
	 * (token delete: no such token); ES_ERR_CONFLICT (the records kept
	 * changing under the write); ES_ERR_IO (etcd did not answer, or the
	 * outcome of a sent write is unknown); ES_ERR_PROTO (etcd holds a
	 * record that is not one); ES_ERR_DB; ES_ERR_NOMEM. */
	es_err rc;
	/* join: es_db_join_result; renew: es_db_renew_result; cert_renew:
	 * es_db_cert_status of the old serial (written only when VALID). */
	int outcome;
	const cJSON *labels; /* join, ES_DB_JOIN_OK: the token's labels; borrowed */
	int64_t count;       /* revoke: certificates revoked */
	const char *error;   /* "" on success, else one sentence */
} es_store_enroll_result;

/* Called once per call with its outcome (r borrowed for the call). */
typedef void (*es_store_enroll_cb)(void *ud, const es_store_enroll_result *r);

/* Told of a revocation of node that this store's copy holds now, made by
 * this controller or (etcd) any other one. */
typedef void (*es_store_revoked_fn)(void *ud, const char *node);

/* The etcd backend's operations (es_store_ops.enroll; NULL: sqlite). */
struct es_store_enroll_ops {
	es_err (*token_create)(es_store *s, const es_db_token *t,
			       es_store_enroll_cb cb, void *ud);
	es_err (*token_delete)(es_store *s, const char *id, es_store_enroll_cb cb,
			       void *ud);
	es_err (*join)(es_store *s, const es_db_join *j, time_t now,
		       es_store_enroll_cb cb, void *ud);
	es_err (*renew)(es_store *s, const es_db_renew *r, time_t now,
			es_store_enroll_cb cb, void *ud);
	es_err (*cert_renew)(es_store *s, const es_db_renew *r, time_t now,
			     es_store_enroll_cb cb, void *ud);
	es_err (*revoke)(es_store *s, const char *node, const char *extra_serial,
			 time_t now, es_store_enroll_cb cb, void *ud);
	void (*on_revoked)(es_store *s, es_store_revoked_fn fn, void *ud);
};

/*
 * Each call checks and records by the rules of its db_enroll.h
 * counterpart, then cb(ud, result) runs exactly once: inside the call
 * (sqlite) or later on the loop (etcd), unless the call itself fails.
 * Arguments are copied. Errors returned at once (cb then never runs):
 * ES_ERR_INVAL (s or cb NULL), ES_ERR_NOMEM.
 */
/* es_db_token_create. */
es_err es_store_token_create(es_store *s, const es_db_token *t,
			     es_store_enroll_cb cb, void *ud);
/* es_db_token_delete. */
es_err es_store_token_delete(es_store *s, const char *id, es_store_enroll_cb cb,
			     void *ud);
/* es_db_join_record: outcome an es_db_join_result, labels the token's. */
es_err es_store_join(es_store *s, const es_db_join *j, time_t now,
		     es_store_enroll_cb cb, void *ud);
/* es_db_renew_record: outcome an es_db_renew_result. */
es_err es_store_renew(es_store *s, const es_db_renew *r, time_t now,
		      es_store_enroll_cb cb, void *ud);
/* es_db_cert_renew (r->node, r->old_serial, r->serial, r->key_pin,
 * r->not_after): outcome the es_db_cert_status of old_serial. */
es_err es_store_cert_renew(es_store *s, const es_db_renew *r, time_t now,
			   es_store_enroll_cb cb, void *ud);
/* es_db_node_revoke (extra_serial may be NULL): count the certificates
 * revoked. */
es_err es_store_node_revoke(es_store *s, const char *node, const char *extra_serial,
			    time_t now, es_store_enroll_cb cb, void *ud);

/* Tells fn(ud, node) of each revocation the store learns of from other
 * controllers (etcd; with sqlite there are none: the caller of
 * es_store_node_revoke knows). fn NULL: no more. */
void es_store_on_revoked(es_store *s, es_store_revoked_fn fn, void *ud);

/* 1 when the store's enrollment answers later (etcd), else 0. */
int es_store_enroll_async(const es_store *s);

#endif
