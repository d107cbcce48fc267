/*
 * db.h - the controller's SQLite store: desired objects with generation and
 * resourceVersion, deletion records (tombstones) for resumable sync, nodes
 * with their reported state, and a per-node report cursor that drops
 * duplicates (docs/ARCHITECTURE.md, "Durability"; proto/PROTOCOL.md).
 *
 * WAL mode, busy timeout 5 s, synchronous=FULL, schema versioned with
 * PRAGMA user_version and forward migrations; every write is one
 * BEGIN IMMEDIATE transaction committed before the function returns (so
 * before any acknowledgement), except inside a batch (es_db_batch_begin):
 * then reports, desiredAck records and disconnections join one
 * transaction that es_db_batch_commit makes durable, and the caller
 * acknowledges after that. Statements of the report path stay prepared
 * for the life of the handle. Used only from the event-loop thread.
 *
 * resourceVersion is one controller-wide counter, increased by every object
 * write and deletion; generation increases only when an object's spec
 * changes (Kubernetes API conventions, "Metadata").
 */
#ifndef ES_CTRL_DB_H
#define ES_CTRL_DB_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_obj.h"
#include "es_proto.h"

typedef struct es_db es_db;

#define ES_DB_SCHEMA_VERSION 6
/* Deletion records kept by default (es_db_set_tombstones_kept). */
#define ES_DB_TOMBSTONES_KEPT 10000
/* Reports kept per node and stream (older ones are pruned; the cursor is
 * kept); when a new stream starts, the node's earlier streams keep their
 * newest ES_DB_REPORTS_KEPT reports between them. */
#define ES_DB_REPORTS_KEPT 10000
/* Bytes of report bodies (their stored JSON text) kept per node, over all
 * its streams; the oldest go first, the newest report always stays. */
#define ES_DB_REPORT_BYTES_KEPT (1024 * 1024)

/* Opens or creates the database at path; refuses a newer schema
 * (ES_ERR_UNSUPPORTED) or a file that is not a database (ES_ERR_DB), both
 * without touching it. err names the path. */
es_err es_db_open(const char *path, es_db **out, char *err, size_t errsz);
void es_db_close(es_db *db); /* NULL-safe */

/*
 * Creates or replaces a desired object (already validated with
 * es_obj_validate_desired; copied). On create: uid (UUID v4),
 * creationTimestamp, generation 1. On replace: uid and creationTimestamp
 * kept; generation + 1 only when spec differs; labels may change. Creating
 * an object under a name reused after a deletion leaves that deletion's
 * tombstone in place (one per uid). A replace
 * that changes nothing writes nothing (*changed = 0, same resourceVersion).
 * Any other write takes the next resourceVersion. *stored (may be NULL)
 * receives the stored object (caller owns); *previous (may be NULL) the
 * object before the write or NULL when created. *created / *changed may be
 * NULL. Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_db_object_put(es_db *db, const cJSON *obj, cJSON **stored,
			cJSON **previous, int *created, int *changed);

/*
 * The object a put of obj (validated, borrowed) over prev (the stored
 * object, borrowed; NULL when there is none) stores, by the rules of
 * es_db_object_put: a new uid, creationTimestamp now and generation 1
 * without prev, else prev's uid and creationTimestamp and its generation,
 * + 1 when the spec differs; resourceVersion prev's (0 without prev).
 * *out (caller owns) gets it; *differs 0 when it equals prev (nothing to
 * write). Shared by both store backends (store/store.h).
 * Errors: ES_ERR_INVAL (not a desired kind, no name), ES_ERR_NOMEM.
 */
es_err es_db_object_next(const cJSON *obj, const cJSON *prev, cJSON **out,
			 int *differs);

/* One object by kind and name (caller owns *out). ES_ERR_NOTFOUND. */
es_err es_db_object_get(es_db *db, es_kind kind, const char *name, cJSON **out);

/* All live objects of kind (ES_KIND_UNKNOWN: every desired kind), ordered by
 * kind then name, as a new array. */
es_err es_db_object_list(es_db *db, es_kind kind, cJSON **out);

/* Deletes an object, leaving a tombstone {kind,name,uid,resourceVersion}
 * under the next resourceVersion. *deleted (may be NULL) gets the object as
 * it was. ES_ERR_NOTFOUND when absent. */
es_err es_db_object_delete(es_db *db, es_kind kind, const char *name,
			   cJSON **deleted);

/* Current resourceVersion (0 on an empty store) and the compaction point:
 * the newest resourceVersion whose tombstones were discarded (0: none). */
es_err es_db_rv(es_db *db, int64_t *current, int64_t *compacted);

/*
 * Changes after resourceVersion since: *objects gets every live object with
 * resourceVersion > since, *tombstones every tombstone with
 * resourceVersion > since ({kind,name,uid,resourceVersion}). Both new arrays
 * the caller owns. The caller must check since >= compacted first.
 */
es_err es_db_changes_since(es_db *db, int64_t since, cJSON **objects,
			   cJSON **tombstones);

/* Discards tombstones with resourceVersion <= upto and moves the compaction
 * point there. */
es_err es_db_compact(es_db *db, int64_t upto);

/*
 * Bounds the deletion records: after each deletion only the newest n
 * (>= 0) are kept, and the compaction point moves past the discarded ones.
 * An agent whose resourceVersion is older than the compaction point then
 * gets a full list instead of a change set (PROTOCOL.md, "Desired state").
 * Default ES_DB_TOMBSTONES_KEPT.
 */
void es_db_set_tombstones_kept(es_db *db, int64_t n);

/*
 * Bounds every node's report history (PROTOCOL.md, "Reports"): count
 * (>= 1) reports per stream by sequence number (the earlier streams of a
 * node keep count between them), and bytes (>= 0; 0: no byte bound) of
 * stored bodies per node over all streams, the oldest dropped first and the
 * newest report always kept. Defaults ES_DB_REPORTS_KEPT and
 * ES_DB_REPORT_BYTES_KEPT. A value out of range keeps the current one.
 */
void es_db_set_reports_kept(es_db *db, int64_t count, int64_t bytes);

/*
 * Starts a batch: from now until es_db_batch_commit, es_db_report_store,
 * es_db_node_desired_ack, es_db_node_full_done and es_db_node_disconnected
 * write into one open transaction, each report under its own savepoint (a
 * report that fails is undone alone). Any other write first commits what
 * the batch holds so far. Nothing of the batch may be acknowledged before
 * es_db_batch_commit returned ES_OK. A second call while a batch is open
 * does nothing.
 */
void es_db_batch_begin(es_db *db);

/*
 * Ends the batch: commits its transaction (synchronous=FULL: fsync'd when
 * this returns). ES_OK when there was nothing to commit. Errors: ES_ERR_DB
 * (this commit, or a commit made earlier for a write outside the batch,
 * failed: what the batch held is not stored, and the node states held in
 * memory are dropped so they are read again from the file).
 */
es_err es_db_batch_commit(es_db *db);

/* 1 while a batch is open. */
int es_db_batch_open(const es_db *db);

/* Transactions committed on this handle so far (an SQLite commit hook; for
 * tests and figures). */
uint64_t es_db_commit_count(const es_db *db);

/*
 * The mirror of an etcd store (store/store_etcd.h, docs/ARCHITECTURE.md,
 * "The store"): the objects and tombstones tables then hold what etcd
 * holds under the store's prefix, resourceVersion is etcd's revision, and
 * only the etcd watch writes them, through these calls (each one
 * committed transaction). The meta row `mirror` says the tables follow
 * etcd (es_db_mirror_reset set it), so a file that was a SQLite store
 * before is listed again first.
 */
/* *following 1 when the file mirrors etcd; *rev the revision it has seen
 * up to (es_db_rv's current). Errors: ES_ERR_DB. */
es_err es_db_mirror_state(es_db *db, int *following, int64_t *rev);
/* This file's own id (a random positive 63-bit number made on first use
 * and kept in the meta table), so that etcd records written by this
 * controller before a restart are known as its own (store_etcd.h, report
 * cursors). Errors: ES_ERR_IO (no randomness), ES_ERR_DB. */
es_err es_db_mirror_file_id(es_db *db, int64_t *id);
/* Stores obj (a stored object whose resourceVersion is its etcd
 * mod_revision rev; borrowed) and moves the current revision to rev.
 * An object of the same name with another uid is replaced and leaves a
 * tombstone at rev. *previous (may be NULL) gets the object it replaced
 * or NULL. Errors: ES_ERR_INVAL (not a desired object), ES_ERR_DB,
 * ES_ERR_NOMEM. */
es_err es_db_mirror_put(es_db *db, const cJSON *obj, int64_t rev, cJSON **previous);
/* Removes kind/name, leaving a tombstone at rev (the deletion's revision;
 * when another tombstone holds rev, the compaction point moves to rev
 * instead, so agents older than it get a full list), and moves the
 * current revision to rev. *deleted (may be NULL) gets the object or NULL
 * when the mirror did not hold it (then only the revision moves).
 * Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err es_db_mirror_delete(es_db *db, es_kind kind, const char *name, int64_t rev,
			   cJSON **deleted);
/* Moves the current revision to rev when it is past it (etcd's progress
 * notification: nothing changed up to rev). Errors: ES_ERR_DB. */
es_err es_db_mirror_progress(es_db *db, int64_t rev);
/* Replaces every object with objects (an array of stored objects,
 * borrowed: a full range of etcd at revision rev) and drops every
 * tombstone; current revision and compaction point become rev (an agent
 * older than rev gets a full list: deletions before rev are not known),
 * and the file is marked as following etcd.
 * Errors: ES_ERR_INVAL (an item is not a desired object), ES_ERR_DB,
 * ES_ERR_NOMEM. */
es_err es_db_mirror_reset(es_db *db, const cJSON *objects, int64_t rev);

/*
 * Records a node's hello: creates the node row if new, stores labels,
 * agentVersion, bootId, marks it connected at now. *acked_seq gets the
 * highest report seq stored for the node (0: none); *labels_changed is 1
 * when the labels differ from the ones stored at the previous hello (or the
 * node is new), or when a full list owed since such a change was never
 * acknowledged (es_db_node_full_done): the objects the new labels select
 * may be older than the agent's resourceVersion.
 */
es_err es_db_node_hello(es_db *db, const char *node, const cJSON *labels,
			const char *agent_version, const char *boot_id,
			time_t now, int64_t *acked_seq, int *labels_changed);

/*
 * Binds the node's report cursor to the agent's report stream (PROTOCOL.md,
 * "hello": streamId, 1..64 characters; callers skip this for a hello without
 * one, which keeps the node's cursor as it is). After es_db_node_hello.
 * - The node's stream is stream_id: nothing changes.
 * - The node has no stream yet (a new node, or one last seen with an agent
 *   that sent no stream id) and next_seq (hello.nextSeq) is past its
 *   cursor: the stream takes over the cursor (an upgraded agent).
 * - Otherwise a new cursor starts for stream_id: the acknowledged and state
 *   sequence numbers go to 0, so the agent sends its reports from seq 1 and
 *   none of them counts as stored already; the earlier streams' reports
 *   stay in the history (ES_DB_REPORTS_KEPT of them).
 * *acked_seq: the cursor that applies now; *new_stream: 1 when a new cursor
 * started; prev (prevsz bytes, may be NULL) gets the stream replaced ("" for
 * none). Errors: ES_ERR_INVAL (a bad stream_id), ES_ERR_NOTFOUND (no such
 * node), ES_ERR_DB.
 */
es_err es_db_node_stream(es_db *db, const char *node, const char *stream_id,
			 int64_t next_seq, int64_t *acked_seq, int *new_stream,
			 char *prev, size_t prevsz);

/* At the controller's start: marks every node disconnected (connected=0),
 * keeping lastSeen, since no session outlives the process (after a crash or
 * SIGKILL the rows still say connected, and those nodes would show Ready
 * for ever). *n (may be NULL) gets how many rows changed. Errors:
 * ES_ERR_DB. */
es_err es_db_nodes_reset_connected(es_db *db, int64_t *n);
/* Marks the node disconnected (connected=0) and records lastSeen. */
es_err es_db_node_disconnected(es_db *db, const char *node, time_t now);
/* The node acknowledged, at now, the full list owed after its labels
 * changed (es_db_node_hello): later hellos get changes only.
 * Errors: ES_ERR_NOTFOUND (no such node), ES_ERR_DB. */
es_err es_db_node_full_done(es_db *db, const char *node, time_t now);
/* Records the node's desiredAck resourceVersion and lastSeen. */
es_err es_db_node_desired_ack(es_db *db, const char *node, int64_t rv, time_t now);

/*
 * Stores one report (PROTOCOL.md "report"; msg is the decoded message) in
 * one transaction (or, in a batch, one savepoint of the batch's), under the
 * node's current report stream (es_db_node_stream). A seq <= the node's
 * cursor is a duplicate: nothing is stored and *duplicate = 1. Otherwise
 * the report row is kept, the cursor moves to seq, and: a snapshot replaces
 * the node's state; a patch or (protocol version 2) a delta whose baseSeq
 * equals the state's seq is applied, a patch with RFC 7386, a delta as a
 * keyed change (es_kpatch.h) (else, and for a delta that cannot be
 * applied, *need_resync = 1 and the state is left alone); an event is kept
 * (db__state_apply). The history is then trimmed
 * to its bounds (es_db_set_reports_kept). The state is stored as keyed
 * rows and changed in the same transaction (docs/ARCHITECTURE.md,
 * "Durability"); nothing of it is held in memory. Costs: the report's own
 * text printed once, one row inserted, one node row updated (integers),
 * and for a change the rows it reaches read, parsed, patched and written
 * back (a keyed list: the items it names), in proportion to the change,
 * not to the node's whole state.
 * Errors: ES_ERR_NOTFOUND (no such node), ES_ERR_INVAL (not a report),
 * ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_db_report_store(es_db *db, const char *node, const cJSON *msg,
			  time_t now, int *duplicate, int *need_resync);

/*
 * Sets node's report cursor of stream to seq (store = etcd: etcd's cursor
 * is the authoritative one, docs/ARCHITECTURE.md "The store"): the node's
 * reports of that stream above seq are removed (they were provisional:
 * stored here, never committed to etcd) and the cursor becomes seq;
 * lower_only 1: the cursor only moves down (min of both). The state's seq
 * and checkpoint are kept at or below seq. Nothing changes when the
 * node's stream is another one. *dropped (may be NULL): reports removed.
 * One transaction of its own (an open batch is committed first).
 * Errors: ES_ERR_INVAL, ES_ERR_DB.
 */
es_err es_db_node_cursor_set(es_db *db, const char *node, const char *stream,
			     int64_t seq, int lower_only, int64_t *dropped);

/* The node's report stream id ("" when none; truncated to streamsz), its
 * cursor and its last desiredAck resourceVersion, as the file holds them.
 * Errors: ES_ERR_NOTFOUND, ES_ERR_DB. */
es_err es_db_node_cursor_get(es_db *db, const char *node, char *stream,
			     size_t streamsz, int64_t *seq, int64_t *desired_ack);

/* The node's reported status.conditions, read from its state rows alone
 * (caller owns *out; NULL: the node has reported none).
 * Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err es_db_node_conditions(es_db *db, const char *node, cJSON **out);

/*
 * A node as the admin API shows it: a Node object (metadata.name, labels,
 * the reported status as last applied) plus `status.sync`: connected,
 * lastSeen, ackedSeq, stateSeq, desiredResourceVersion, agentVersion,
 * bootId, streamId (null when none). ES_ERR_NOTFOUND.
 */
es_err es_db_node_get(es_db *db, const char *node, cJSON **out);
/* All nodes as es_db_node_get shows them, ordered by name. */
es_err es_db_node_list(es_db *db, cJSON **out);

/* One node's row in brief (es_db_node_briefs). */
typedef struct es_db_node_brief {
	char name[ES_NAME_MAX + 1];
	int connected;           /* an agent session is open here */
	time_t last_seen;        /* the last hello or report; 0: never */
	int64_t desired_ack;     /* the last desiredAck resourceVersion */
	int64_t seq;             /* the report cursor */
	char stream[ES_PROTO_STREAM_ID_MAX + 1]; /* the report stream id; "" when none */
	cJSON *conditions;       /* reported status.conditions (owned); NULL: none */
} es_db_node_brief;

/*
 * The node's row (node NULL: every node's, ordered by name) in brief,
 * with its reported conditions from the state rows: *out (caller frees
 * with es_db_node_briefs_free) holds *n entries (0 for an unknown node;
 * *out may then be NULL). Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_db_node_briefs(es_db *db, const char *node, es_db_node_brief **out,
			 size_t *n);
/* Frees what es_db_node_briefs gave. NULL-safe. */
void es_db_node_briefs_free(es_db_node_brief *b, size_t n);

/* The node's stored reports in the order received, newest last, at most
 * limit: [{seq, reportType, time, receivedTime, baseSeq?, event?,
 * streamId?}] (streamId: the report stream, when the agent named one). */
es_err es_db_reports_list(es_db *db, const char *node, int limit, cJSON **out);

#endif
