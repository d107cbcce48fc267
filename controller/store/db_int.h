/*
 * db_int.h - what db.c (open, schema, counters, batches, kept statements),
 * db_objects.c (desired objects), db_nodes.c (nodes, reports) and
 * db_state.c (the reported state of nodes, as keyed rows) share. Private
 * to the db module: nothing outside those files includes it.
 */
#ifndef ES_CTRL_DB_INT_H
#define ES_CTRL_DB_INT_H

#include <sqlite3.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "store/db.h"
#include "es_proto.h"
#include "es_sqlite.h"

/* The columns node_from_row (db_nodes.c) reads, in its order. */
#define DB_NODE_COLS "name, labels, agent_version, boot_id, connected, last_seen," \
	" acked_seq, state_seq, state, desired_ack_rv, created, NULLIF(stream_id, '')"
/* The columns es_db_node_briefs (db_nodes.c) reads, in its order. */
#define DB_NODE_BRIEF_COLS "name, connected, last_seen, desired_ack_rv, acked_seq," \
	" coalesce(stream_id, '')"

/* Statements kept prepared for the life of the handle (db__stmt). */
enum db_stmt_id {
	DB_ST_NODE_CURSOR = 0,
	DB_ST_REPORT_INSERT,
	DB_ST_REPORT_PRUNE_SEQ,
	DB_ST_REPORT_OLDEST,
	DB_ST_REPORT_PRUNE_ID,
	DB_ST_NODE_REPORTED,
	DB_ST_STATE_REPLAY,
	DB_ST_ROW_GET,
	DB_ST_ROW_PUT,
	DB_ST_ROW_BODY,
	DB_ST_ROW_UPSERT,
	DB_ST_ROW_DEL,
	DB_ST_ROWS_DEL_UNDER,
	DB_ST_ROWS_DEL_NODE,
	DB_ST_ROW_NEXT_ORD,
	DB_ST_ROWS_UNDER,
	DB_ST_ROWS_LIST,
	DB_ST_ROWS_NODE,
	DB_ST_NODE_DISCONNECTED,
	DB_ST_NODE_FULL_DONE,
	DB_ST_NODE_DESIRED_ACK,
	DB_ST_META_GET,
	DB_ST_META_SET,
	DB_ST_OBJECT_LOAD,
	DB_ST_OBJECT_WRITE,
	DB_ST_NODE_GET,
	DB_ST_NODE_BRIEF,
	DB_ST_NODE_BRIEFS,
	DB_ST_SAVEPOINT,
	DB_ST_RELEASE,
	DB_ST_ROLLBACK_TO,
	DB_ST_N
};

struct es_db {
	es_sqlite *sq;
	int64_t tombstones_kept; /* see es_db_set_tombstones_kept */
	int64_t reports_kept;    /* es_db_set_reports_kept: count ... */
	int64_t report_bytes_kept; /* ... and bytes of bodies per node */
	sqlite3_stmt *stmts[DB_ST_N];
	int batch;          /* es_db_batch_begin called, es_db_batch_commit not yet */
	int tx_open;        /* the batch's transaction is open */
	es_err batch_rc;    /* first failure of the batch's commit(s) */
	uint64_t commits;   /* every COMMIT (the commit hook) */
};

/* Discards the oldest deletion records beyond db->tombstones_kept and moves
 * the compaction point past them (es_db_compact). Errors: ES_ERR_DB. */
es_err es_db_trim_tombstones(es_db *db);

/* Takes the next resourceVersion inside the open transaction (stores it as
 * the current one). Errors: ES_ERR_DB. */
es_err es_db_next_rv(es_db *db, int64_t *rv);

/*
 * BEGIN IMMEDIATE of a write that does not join a batch (objects, hello,
 * report streams, compaction): the open batch transaction, if any, is
 * committed first (its failure is kept for es_db_batch_commit and
 * returned). Errors: es_sqlite_begin's, es_sqlite_commit's.
 */
es_err db__begin(es_db *db);

/*
 * Opens one write that may join a batch: inside a batch (opening its
 * transaction when needed) a SAVEPOINT, so the write can be undone alone;
 * else BEGIN IMMEDIATE. *joined tells db__end which. Errors: ES_ERR_DB.
 */
es_err db__op_begin(es_db *db, int *joined);

/* Ends what db__op_begin opened: rc ES_OK releases the savepoint or
 * commits; else rolls back to the savepoint or rolls back. Returns rc or
 * the commit's error. */
es_err db__op_end(es_db *db, int joined, es_err rc);

/*
 * The kept statement id, reset with its bindings cleared, prepared on first
 * use from its SQL (SQLITE_PREPARE_PERSISTENT). The caller binds, steps and
 * then calls sqlite3_reset; it never finalizes it (es_db_close does).
 * Errors: es_sqlite_prepare's.
 */
es_err db__stmt(es_db *db, enum db_stmt_id id, sqlite3_stmt **out);

/* ---- db_objects.c ---- */

/* The stored object of kind and name (caller owns *out).
 * Errors: ES_ERR_NOTFOUND, ES_ERR_DB, ES_ERR_NOMEM. */
es_err db__object_load(es_db *db, const char *kind, const char *name, cJSON **out);

/* Inserts or replaces the row of stored object o (kind, name, uid,
 * generation and resourceVersion from its metadata) inside the open
 * transaction. Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err db__object_write(es_db *db, const cJSON *o);

/* Runs sql, which binds kind (?1) and name (?2) and returns no row; op
 * names it in the log. Errors: ES_ERR_DB. */
es_err db__exec_kind_name(es_db *db, const char *sql, const char *kind,
			  const char *name, const char *op);

/* ---- db_state.c ---- */

/* The members of a report message the store needs; borrowed from msg. */
typedef struct db_report {
	int64_t seq, base_seq;
	const char *type, *time;
	const cJSON *body;
} db_report;

/* 1 when a report of type `type` changes the state it is based on:
 * `patch` (RFC 7386) or, protocol version 2, `delta` (keyed change,
 * es_kpatch.h); else 0. */
int db__report_is_change(const char *type);

/*
 * Applies state report r (a snapshot, a patch or a delta; events are not
 * state) of node `node` (for the log only; may be NULL) to its state
 * *state at seq *state_seq. The one place that knows what a report does to
 * the state (PROTOCOL.md, "report"): a snapshot replaces it; a patch or
 * delta whose baseSeq is *state_seq is applied, a patch as an RFC 7386
 * merge patch and a delta as a keyed change (es_kpatch_apply); else, and
 * for a delta that cannot be applied (logged at warn with the reason), the
 * state is left alone and *need_resync = 1. On change *state_seq becomes
 * r->seq and *changed = 1. *state may be NULL (no state yet: a change
 * then needs a resync). The same function replays stored reports after a
 * restart, so it must depend on nothing but its arguments.
 * Errors: ES_ERR_NOMEM (then *state is unchanged).
 */
es_err db__state_apply(const char *node, cJSON **state, int64_t *state_seq,
		       const db_report *r, int *changed, int *need_resync);

/* What a report would do, without doing it: 1 when db__state_apply would
 * change the state. */
int db__state_would_apply(const cJSON *state, int64_t state_seq, const db_report *r);

/*
 * Applies state report r of node (the rows of table node_state, see
 * db_state.c) as db__state_apply does to a parsed tree, inside the
 * caller's transaction: a snapshot replaces the rows; a patch or delta
 * whose baseSeq is *state_seq (the node row's) reads only the rows its
 * members reach (a keyed list: the items it names, unless it replaces or
 * reorders the list), applies itself to that part with es_mpatch_apply or
 * es_kpatch_apply and writes back what changed; else, and for a delta
 * that cannot be applied (logged at warn), nothing is written and
 * *need_resync = 1. A node without state rows needs a resync for a
 * change. On change *state_seq = r->seq and *changed = 1. db__rows_get
 * afterwards equals (es_json_equal) db__state_apply on the tree it gave
 * before. Errors: ES_ERR_DB, ES_ERR_NOMEM (the caller rolls the write
 * back).
 */
es_err db__rows_apply(es_db *db, const char *node, int64_t *state_seq,
		      const db_report *r, int *changed, int *need_resync);

/* The node's state assembled from its rows (caller owns *out; NULL when
 * it has none). Errors: ES_ERR_DB (a corrupt row), ES_ERR_NOMEM. */
es_err db__rows_get(es_db *db, const char *node, cJSON **out);

/* The value of member name of the container at cpath ("" the Node,
 * "status", ...) assembled from its rows, reading only those under it
 * (caller owns *out; NULL when the node has no such member).
 * Errors: ES_ERR_DB (a corrupt row), ES_ERR_NOMEM. */
es_err db__rows_member(es_db *db, const char *node, const char *cpath,
		       const char *name, cJSON **out);

/* Replaces the node's rows with those of state (an object, borrowed;
 * NULL: removes them), inside the caller's transaction.
 * Errors: ES_ERR_INVAL (state not an object), ES_ERR_DB, ES_ERR_NOMEM. */
es_err db__rows_put(es_db *db, const char *node, const cJSON *state);

/*
 * Once after the schema went to version 6 (meta row state_rows_pending):
 * every node's state text (the checkpoint, with the stored reports past
 * it replayed by db__state_apply) becomes rows, in one transaction; the
 * text column is cleared. Nothing when the file has no such row.
 * Errors: ES_ERR_DB, ES_ERR_NOMEM (the file is left as it was and the
 * upgrade runs again at the next open).
 */
es_err db__state_upgrade(es_db *db);

#endif
