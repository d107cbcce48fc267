/*
 * db_int.h - what db.c (open, schema, counters, batches, kept statements),
 * db_objects.c (desired objects), db_nodes.c (nodes, reports) and
 * db_state.c (the reported state of nodes held in memory) share. Private
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

/* Statements kept prepared for the life of the handle (db__stmt). */
enum db_stmt_id {
	DB_ST_NODE_CURSOR = 0,
	DB_ST_REPORT_INSERT,
	DB_ST_REPORT_PRUNE_SEQ,
	DB_ST_REPORT_OLDEST,
	DB_ST_REPORT_PRUNE_ID,
	DB_ST_NODE_REPORTED,
	DB_ST_NODE_CHECKPOINT,
	DB_ST_STATE_REPLAY,
	DB_ST_NODE_DISCONNECTED,
	DB_ST_NODE_FULL_DONE,
	DB_ST_NODE_DESIRED_ACK,
	DB_ST_SAVEPOINT,
	DB_ST_RELEASE,
	DB_ST_ROLLBACK_TO,
	DB_ST_N
};

typedef struct db_state db_state;

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
	/* db_state.c: the parsed state of nodes that report (an LRU). */
	db_state **buckets;
	size_t nbuckets, ncached, cache_max;
	db_state *lru_head, *lru_tail;
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

/* A node's report cursor and state as the report path needs them. Owned by
 * the cache (db__state_get); valid until the next call into the db. */
struct db_state {
	char *name;
	char stream[ES_PROTO_STREAM_ID_MAX + 1];
	int64_t acked, state_seq, ckpt_seq, history_bytes;
	cJSON *state;           /* the state at state_seq; NULL: none */
	int64_t pending;        /* state reports past ckpt_seq */
	int64_t pending_bytes;  /* ... and their bytes */
	db_state *hnext, *prev, *next;
};

/*
 * The cached state of node, loaded on a miss from its row (the state
 * stored at its checkpoint, then the stored reports past it replayed with
 * db__state_apply). Loading may evict the least recently used entry
 * (checkpointed first, inside the caller's transaction).
 * Errors: ES_ERR_NOTFOUND (no such node), ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err db__state_get(es_db *db, const char *node, db_state **out);

/* The cached entry of node or NULL, without loading. */
db_state *db__state_peek(es_db *db, const char *node);

/* Writes e's state into its row (state, state_ckpt = state_seq) when
 * reports past the checkpoint were applied; inside a transaction.
 * Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err db__state_checkpoint(es_db *db, db_state *e);

/* Checkpoints and forgets node's entry (nothing when there is none): inside
 * the caller's open transaction when in_tx, else in a write of its own
 * (db__op_begin). Errors: as db__state_checkpoint. */
es_err db__state_drop(es_db *db, const char *node, int in_tx);

/* Forgets node's entry (NULL: every entry) without writing: after a failed
 * write the rows are what the file holds, the memory may not be. */
void db__state_forget(es_db *db, const char *node);

/* Checkpoints every entry in one transaction and frees the cache (at
 * close). */
void db__state_close(es_db *db);

/*
 * The state of a node as a new tree (caller owns *out; NULL: none), for
 * the admin view of the row: the cached one when present, else col_state
 * (the row's stored text at ckpt) with the node's reports in stream past
 * ckpt replayed when state_seq (the row's) is not ckpt.
 * Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err db__state_view(es_db *db, const char *node, const char *stream,
		      sqlite3_stmt *row, int state_col, int64_t ckpt,
		      int64_t state_seq, cJSON **out);

#endif
