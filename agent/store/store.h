/*
 * store.h - the agent's SQLite database: desired objects, their applied
 * status, the report outbox and the sync cursors (docs/ARCHITECTURE.md,
 * "Durability"; proto/PROTOCOL.md, "Reports").
 *
 * One file, WAL mode, busy timeout 5 s, schema versioned with
 * PRAGMA user_version and forward migrations. Every write is one
 * transaction (BEGIN IMMEDIATE ... COMMIT) that is committed before the
 * function returns, so what the agent acknowledges survives power loss
 * (synchronous=FULL). Used only from the agent's event-loop thread.
 */
#ifndef ES_AGENT_STORE_H
#define ES_AGENT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"

typedef struct es_store es_store;

/* Schema version this build writes (PRAGMA user_version). */
#define ES_STORE_SCHEMA_VERSION 1

/*
 * Opens or creates the database at path (its directory must exist) and
 * migrates it forward, and gives it a report stream id when it has none
 * (es_store_stream_id). A database with a newer user_version than this build
 * knows is refused (ES_ERR_UNSUPPORTED) and left untouched; a file that is
 * not a database is refused (ES_ERR_DB) and left untouched.
 * Errors: ES_ERR_DB, ES_ERR_UNSUPPORTED, ES_ERR_NOMEM, ES_ERR_IO (no
 * randomness for the stream id); err names the path.
 */
es_err es_store_open(const char *path, es_store **out, char *err, size_t errsz);
/* Closes the database. NULL-safe. */
void es_store_close(es_store *st);

/* Cursor values in a key/value table. Known keys: "desired_rv" (last
 * desired resourceVersion committed), "next_seq" (next report sequence
 * number; starts at 1). get: *out = def when unset. */
es_err es_store_get_int(es_store *st, const char *key, int64_t def, int64_t *out);
es_err es_store_set_int(es_store *st, const char *key, int64_t v);

/*
 * The id of this database's report stream (PROTOCOL.md, "hello": a UUID made
 * at the first es_store_open of the file, kept with the cursors), copied to
 * buf (at least 37 bytes). A database made anew has a new one, so the
 * controller starts a new report cursor for it.
 * Errors: ES_ERR_INVAL (sz 0), ES_ERR_NOTFOUND (none stored), ES_ERR_DB.
 */
es_err es_store_stream_id(es_store *st, char *buf, size_t sz);

/*
 * Commits one `desired` message (PROTOCOL.md, "desired"; msg is the decoded
 * message) in one transaction: full=true replaces every cached object with
 * msg.objects; full=false upserts msg.objects and removes msg.deleted (by
 * kind and name: the object of that uid, or of any uid when the entry's
 * resourceVersion is newer than the cached object's, as PROTOCOL.md
 * "desired" says); the status rows of removed objects go too; "desired_rv"
 * becomes msg.resourceVersion unless msg.more is true. A change set
 * (full=false) whose resourceVersion is not greater than "desired_rv" is
 * not applied (PROTOCOL.md, "Desired state": desired state never goes
 * back); a full list always is, also at a lower version.
 * Errors: ES_ERR_INVAL (an object without kind or name), ES_ERR_CONFLICT
 * (a change set at or below "desired_rv": nothing written), ES_ERR_DB.
 */
es_err es_store_desired_commit(es_store *st, const cJSON *msg);

/* All cached desired objects ordered by kind then name, as a new JSON array
 * the caller owns. Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err es_store_desired_list(es_store *st, cJSON **out);

/* Applied status of one object (the object's status member: uid,
 * generation, observedGeneration, conditions). get: ES_ERR_NOTFOUND when
 * none; *out owned by the caller. put copies status. */
es_err es_store_status_get(es_store *st, const char *kind, const char *name,
			   cJSON **out);
es_err es_store_status_put(es_store *st, const char *kind, const char *name,
			   const cJSON *status);

/* A count that grows with every es_store_desired_commit and
 * es_store_status_put since open (whether it committed or not): what a
 * caller derives from the desired objects and their statuses stays valid
 * while the count does not move. */
uint64_t es_store_changes(const es_store *st);

/* One outbox row. */
typedef struct es_outbox_row {
	int64_t seq;
	int is_state;     /* 1: a state report (snapshot/patch), 0: an event */
	char *doc;        /* state: the full Node document; event: the Event body (JSON text) */
	char *wire;       /* the report message exactly as first sent, or NULL if never sent */
	time_t created;
} es_outbox_row;
void es_outbox_row_free(es_outbox_row *row); /* frees members; NULL-safe */

/*
 * Queues the current node state: node_json is a Node object as JSON text
 * (es_json_print), copied. Latest wins: when
 * the newest state row was never sent, its doc is replaced and it keeps its
 * seq; otherwise a new row takes "next_seq" (incremented in the same
 * transaction). *seq_out (may be NULL) gets the row's seq.
 * Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_store_outbox_put_state(es_store *st, const char *node_json, time_t now,
				 int64_t *seq_out);

/*
 * Queues an event body (copied) under a new seq. When more than max_events
 * event rows are queued, the oldest event rows are deleted and the dropped
 * counter ("reports_dropped") grows by their number, in the same
 * transaction. Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_store_outbox_put_event(es_store *st, const cJSON *event, time_t now,
				 size_t max_events, int64_t *seq_out);

/* The first row with seq > after (in seq order) into *row (caller frees with
 * es_outbox_row_free). Errors: ES_ERR_NOTFOUND when there is none, ES_ERR_DB. */
es_err es_store_outbox_next(es_store *st, int64_t after, es_outbox_row *row);

/* Records the wire text of row seq the first time it is sent; a row's wire
 * text never changes afterwards (later calls keep the first). */
es_err es_store_outbox_mark_sent(es_store *st, int64_t seq, const char *wire);

/*
 * Handles a cumulative acknowledgement: deletes every row with seq <= seq.
 * When deleted rows include state rows, the newest of them becomes the
 * patch base (its seq and doc are kept as "base_seq" / base document) in the
 * same transaction. Errors: ES_ERR_DB.
 */
es_err es_store_outbox_ack(es_store *st, int64_t seq);

/* The patch base: the seq and Node document of the last acknowledged state
 * report. ES_ERR_NOTFOUND when none. *doc owned by the caller. */
es_err es_store_base_get(es_store *st, int64_t *seq, cJSON **doc);

/* The Node document of the newest queued state report, else the patch
 * base's (es_store_base_get). *doc owned by the caller.
 * Errors: ES_ERR_NOTFOUND when neither exists, ES_ERR_DB, ES_ERR_NOMEM. */
es_err es_store_state_latest(es_store *st, cJSON **doc);

/* Rows queued now, and reports dropped so far (for status and metrics). */
es_err es_store_outbox_depth(es_store *st, int64_t *rows);
es_err es_store_dropped(es_store *st, int64_t *dropped);

#endif
