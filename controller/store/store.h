/*
 * store.h - the writes of desired objects behind one interface with two
 * backends (docs/ARCHITECTURE.md, "The store"):
 *
 *   sqlite  the controller's own file (db.h): every call completes before
 *           it returns (its callback runs inside the call).
 *   etcd    store/store_etcd.h: the write is an etcd compare-and-swap
 *           transaction; its callback runs later on the event loop, once
 *           the controller's mirror (the same db.h file, fed by the etcd
 *           watch) holds the write, so a read after the answer sees it.
 *
 * Reads (get, list, resourceVersion, changes since) are synchronous on the
 * db.h file in both cases: with etcd it is the mirror. The nodes read
 * (es_store_nodes_read: who serves each node, and its record) goes to etcd
 * and answers later, as writes do.
 *
 * Every committed change, made here or (etcd) by any other controller, is
 * told to the store's changed callback after it is in the file, with the
 * object before (NULL: created) and after (NULL: deleted); the server fans
 * it out to its agents from there.
 */
#ifndef ES_CTRL_STORE_H
#define ES_CTRL_STORE_H

#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_obj.h"
#include "store/db.h"

typedef struct es_store_result {
	/* ES_OK; ES_ERR_NOTFOUND (delete: no such object); ES_ERR_EXISTS
	 * (create_only: the name is taken); ES_ERR_CONFLICT (the object kept
	 * changing under the write); ES_ERR_IO (etcd did not answer, or the
	 * outcome of a sent write is unknown); ES_ERR_DB; ES_ERR_NOMEM;
	 * ES_ERR_PROTO (etcd holds a value that is not a stored object). */
	es_err rc;
	const cJSON *object;   /* put: as stored; delete: as it was; borrowed */
	const cJSON *previous; /* put: before the write, NULL when created */
	int created, changed;  /* put: changed 0 when nothing differed */
	const char *error;     /* "" on success, else one sentence */
} es_store_result;

/* Called once per write with its outcome (r borrowed for the call). */
typedef void (*es_store_cb)(void *ud, const es_store_result *r);

/* Told of every committed change (store.h header comment). */
typedef void (*es_store_changed_fn)(void *ud, const cJSON *prev, const cJSON *cur);

typedef struct es_store es_store;
/* Joining's operations (store_enroll.h). */
struct es_store_enroll_ops;

/* One node's report cursor and status as es_store_cursors_put writes it
 * (every member borrowed for the call only). */
typedef struct es_store_cursor {
	const char *node;
	const char *stream;      /* the report stream id; "" when none */
	int64_t seq;             /* highest seq stored (the cursor) */
	int64_t desired_ack;     /* the last desiredAck resourceVersion */
	time_t last_report;      /* when the last report arrived; 0: none */
	const cJSON *conditions; /* reported status.conditions; may be NULL */
} es_store_cursor;

/* The outcome of one es_store_cursor, in the order given. */
typedef struct es_store_cursor_result {
	/* ES_OK: committed (nothing of it is lost from here); ES_ERR_EXISTS:
	 * another controller moved the node's cursor (it serves the node), or
	 * this controller gave the node's session up meanwhile; ES_ERR_IO:
	 * etcd did not answer or its outcome stayed unknown. */
	es_err rc;
	/* ES_OK: the cursor committed. ES_ERR_EXISTS: the cursor this
	 * controller's reports of the node are committed up to as etcd says
	 * (where the other controller's tenure began): its local reports of
	 * the stream above it are provisional; -1 when etcd told nothing of
	 * it (nothing may be dropped then). */
	int64_t committed;
	const char *error;       /* "" on success, else one sentence */
} es_store_cursor_result;

typedef void (*es_store_cursors_cb)(void *ud, const es_store_cursor_result *res,
				    size_t n);
/* Told when this controller lost node's session to another controller
 * (etcd: a newer session of the node there took the key or the node's
 * record, or the key was taken while this controller's lease was lost).
 * The node's connections here are to close; the session is not dropped
 * (it is not this controller's). */
typedef void (*es_store_lost_fn)(void *ud, const char *node, const char *why);

/* One node as the store holds it (es_store_nodes_read; every member
 * borrowed for the callback only). */
typedef struct es_store_node {
	const char *node;
	/* The controller holding the node's session (etcd: the value of
	 * <prefix>sessions/<node>); "" for this controller where the backend
	 * names none (sqlite: the agent is connected here); NULL when no
	 * controller holds one (nobody serves the node). */
	const char *controller;
	/* Who wrote what follows (etcd: the node record's `controller`;
	 * sqlite: ""); NULL when there is no record of the node (then the
	 * members below are 0 and NULL). */
	const char *writer;
	const cJSON *conditions; /* reported status.conditions; NULL: none */
	int64_t desired_ack;     /* the last desiredAck resourceVersion */
	time_t last_report;      /* the last report (sqlite: hello or report); 0: none */
	const char *stream;      /* the report stream id; "" when none */
	int64_t seq;             /* the report cursor */
} es_store_node;

/* What es_store_nodes_read found (borrowed for the callback). */
typedef struct es_store_nodes_result {
	/* ES_OK; ES_ERR_IO (etcd did not answer, or the controller is
	 * stopping: error says why); ES_ERR_PROTO (etcd's answer was not
	 * one); ES_ERR_DB; ES_ERR_NOMEM. */
	es_err rc;
	const char *error;          /* "" on success, else one sentence */
	const char *self;           /* this controller's id (sqlite: "") */
	const es_store_node *nodes; /* ordered by name (byte order) */
	size_t n;
} es_store_nodes_result;

typedef void (*es_store_nodes_cb)(void *ud, const es_store_nodes_result *r);

/* One backend (a table of operations, docs/HACKING.md "Naming"). */
typedef struct es_store_ops {
	const char *name; /* "sqlite", "etcd" */
	es_err (*put)(es_store *s, const cJSON *obj, int create_only,
		      es_store_cb cb, void *ud);
	es_err (*del)(es_store *s, es_kind kind, const char *name,
		      es_store_cb cb, void *ud);
	void (*close)(es_store *s);
	/* Node sessions (es_store_session_take); NULL: none to take. */
	es_err (*session_take)(es_store *s, const char *node, es_store_cb cb,
			       void *ud, void **token);
	void (*session_cancel)(es_store *s, void *token);
	void (*session_drop)(es_store *s, const char *node);
	es_err (*sessions_leave)(es_store *s, es_store_cb cb, void *ud);
	/* Report cursors (es_store_cursors_put); NULL: kept locally only. */
	es_err (*cursors_put)(es_store *s, const es_store_cursor *cur, size_t n,
			      es_store_cursors_cb cb, void *ud);
	int (*cursor_get)(es_store *s, const char *node, const char *stream,
			  int64_t *seq);
	/* Node records and sessions (es_store_nodes_read). */
	es_err (*nodes_read)(es_store *s, const char *node, es_store_nodes_cb cb,
			     void *ud);
	/* Joining (store_enroll.h); NULL: the db_enroll.h calls on db. */
	const struct es_store_enroll_ops *enroll;
} es_store_ops;

struct es_store {
	const es_store_ops *ops;
	void *impl;                 /* the backend's own state */
	es_db *db;                  /* the file reads go to (borrowed) */
	es_store_changed_fn changed; /* may be NULL */
	void *changed_ud;
	es_store_lost_fn lost;       /* may be NULL */
	void *lost_ud;
};

/*
 * Creates or replaces obj (validated with es_obj_validate_desired;
 * borrowed for the call) by the rules of es_db_object_put (es_db_object_next).
 * create_only 1: refused with ES_ERR_EXISTS when the name exists (a POST).
 * cb(ud, result) runs exactly once, inside the call (sqlite) or later on
 * the loop (etcd), unless the call itself fails.
 * Errors returned at once (cb then never runs): ES_ERR_INVAL (not a
 * desired object), ES_ERR_NOMEM.
 */
es_err es_store_put(es_store *s, const cJSON *obj, int create_only,
		    es_store_cb cb, void *ud);

/* Deletes kind/name, leaving a tombstone (db.h); otherwise as
 * es_store_put. */
es_err es_store_delete(es_store *s, es_kind kind, const char *name,
		       es_store_cb cb, void *ud);

/*
 * Takes node's session for this controller, so that one controller at a
 * time serves a node (etcd: the key <prefix>sessions/<node>, bound to
 * this controller's lease, so it goes when the controller does). The
 * newer session wins: one another controller holds is taken over from it
 * (that one closes its session, told by its lost callback). cb runs once
 * with rc ES_OK (this controller holds it, also when it held it already),
 * ES_ERR_EXISTS (the session kept moving between controllers under the
 * take, 4 attempts: come back later; error says so) or ES_ERR_IO (etcd
 * did not answer, or the store is stopping); *token (set before cb can run) is
 * for es_store_session_cancel. Returns ES_ERR_UNSUPPORTED when the
 * backend has no sessions (sqlite: the one controller serves every node;
 * cb never runs), ES_ERR_NOMEM.
 */
es_err es_store_session_take(es_store *s, const char *node, es_store_cb cb,
			     void *ud, void **token);
/* Forgets a take whose cb has not run yet (cb then never runs). */
void es_store_session_cancel(es_store *s, void *token);
/* Gives node's session up when this controller holds it (no answer). */
void es_store_session_drop(es_store *s, const char *node);
/*
 * Stopping: gives every session of this controller up at once (etcd:
 * revokes its lease, which deletes the keys; no lease is granted again and
 * no take is taken from here). cb(ud, result) runs once later on the loop
 * when etcd answered (rc ES_OK, else the error), unless the store closes
 * first. Returns ES_ERR_UNSUPPORTED (no sessions: sqlite), ES_ERR_NOTFOUND
 * (no lease held), ES_ERR_NOMEM; cb then never runs.
 */
es_err es_store_sessions_leave(es_store *s, es_store_cb cb, void *ud);

/*
 * Commits the report cursors and status of n nodes whose reports this
 * controller has just committed to its own file (docs/ARCHITECTURE.md,
 * "The store"; etcd: <prefix>nodes/<node>, compare-and-swap on the key's
 * mod_revision, as few txns as etcd's op limit allows). A cursor never
 * moves backwards: a write older than the one the key holds from this
 * controller counts as committed. cb(ud, results, n) runs once, later on
 * the loop, with one result per cursor in order; nothing of these reports
 * may be acknowledged before it. Returns ES_ERR_UNSUPPORTED when the
 * backend keeps cursors in the file only (sqlite: cb never runs; the
 * file's commit is the whole of it), ES_ERR_INVAL, ES_ERR_NOMEM.
 */
es_err es_store_cursors_put(es_store *s, const es_store_cursor *cur, size_t n,
			    es_store_cursors_cb cb, void *ud);

/*
 * The report cursor the store holds for node's report stream `stream`
 * (NUL-terminated), as read when this controller took the node's session
 * or last wrote it: returns 1 and sets *seq (0 when the store's record of
 * the node names neither that stream nor it among the earlier streams it
 * keeps, STORE_ETCD_EARLIER_MAX of them on etcd: a new stream), or 0 when
 * the store holds no record of the node (sqlite, or etcd has none yet;
 * the file's cursor stands).
 */
int es_store_cursor_get(es_store *s, const char *node, const char *stream,
			int64_t *seq);

/*
 * Reads what the store holds of node (NULL: of every node) for the admin
 * view (docs/ARCHITECTURE.md, "The store"): per node the controller
 * serving it and its record (conditions, desiredAck, last report, cursor).
 * etcd: one txn reading <prefix>nodes/ and <prefix>sessions/ (the node's
 * two keys, or both prefixes) at one revision, without blocking the loop;
 * a node with either key is in the answer. sqlite: the file's nodes rows,
 * the session being the agent's connection to this controller. A node
 * the store knows nothing of is absent (r->n 0 for a node not known).
 * cb(ud, r) runs exactly once, inside the call (sqlite) or later on the
 * loop (etcd; also when the store closes: ES_ERR_IO), unless the call
 * fails. Errors returned at once (cb then never runs): ES_ERR_INVAL
 * (cb NULL, node longer than a name), ES_ERR_NOMEM.
 */
es_err es_store_nodes_read(es_store *s, const char *node, es_store_nodes_cb cb,
			   void *ud);

/* Sets the callback told of sessions lost to another controller. */
void es_store_set_lost(es_store *s, es_store_lost_fn fn, void *ud);

/* The SQLite backend over db (borrowed), telling changed(ud, ...) (may be
 * NULL) of each committed write. Needs no allocation: s is the caller's. */
void es_store_sqlite_init(es_store *s, es_db *db, es_store_changed_fn changed,
			  void *ud);

/* The backend's name. */
const char *es_store_backend(const es_store *s);

/* Ends the backend (pending etcd writes answer ES_ERR_IO "the controller
 * is stopping") and zeroes s. NULL-safe. */
void es_store_close(es_store *s);

#endif
