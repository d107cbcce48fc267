/*
 * store.h - the agent's SQLite database: desired objects, their applied
 * status, the report outbox and the sync cursors (docs/ARCHITECTURE.md,
 * "Durability"; proto/PROTOCOL.md, "Reports").
 *
 * One file, WAL mode, busy timeout ES_STORE_BUSY_MS, schema versioned with
 * PRAGMA user_version and forward migrations. Every write is one
 * transaction (BEGIN IMMEDIATE ... COMMIT) that is committed before the
 * function returns, so what the agent acknowledges survives power loss
 * (synchronous=FULL). Used only from the agent's event-loop thread.
 *
 * Faults (README, "Where state lives"): a write that fails because another
 * process holds the file's write lock (SQLITE_BUSY), the filesystem is full
 * (SQLITE_FULL) or the disk fails (SQLITE_IOERR) starts a fault episode.
 * Reports queued meanwhile are held in memory (the state report coalesces,
 * at most ES_STORE_HELD_EVENTS events, the oldest dropped and counted), so
 * is the controller's latest ack, and other writes fail at once
 * (ES_ERR_DB) without touching the file, until es_store_flush writes what
 * is held. Reads go on (WAL readers are not blocked by a writer). A damaged file (SQLITE_CORRUPT,
 * SQLITE_NOTADB, a stored document that does not parse, I/O errors over
 * ES_STORE_IOERR_LIMIT flushes) is moved aside by es_store_rebuild and
 * replaced with a new empty database, as one found damaged at
 * es_store_open_repair is.
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
/* How long a statement waits for another process's lock, ms: the event
 * loop never stalls longer on the file. */
#define ES_STORE_BUSY_MS 200
/* Events held in memory at most while the file cannot be written. */
#define ES_STORE_HELD_EVENTS 64
/* Damaged databases kept beside the store, the newest; older ones are
 * deleted so that a failing disk does not fill up with them. */
#define ES_STORE_CORRUPT_KEEP 3
/* Failed es_store_flush calls in a row, every one on an I/O error, after
 * which the file counts as damaged. */
#define ES_STORE_IOERR_LIMIT 5

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

/*
 * es_store_open, except that a damaged file is not refused: one that is
 * not an SQLite file, that SQLite finds corrupt, or that fails PRAGMA
 * quick_check (sqlite.org/pragma.html#pragma_quick_check) is moved aside,
 * with its -wal and -shm files, to "<path>.corrupt-<UTC time>" (e.g.
 * agent.db.corrupt-20250102T030405Z; "-2", "-3" ... after the time when
 * that name is taken), only the ES_STORE_CORRUPT_KEEP newest such sets are
 * kept, and a new empty database is created at path: a fresh store
 * (desired_rv 0, next_seq 1) whose es_store_health_get says rebuilt. A newer or
 * foreign database is still refused and left untouched.
 * Errors: es_store_open's (for a file that is not damaged, or when the new
 * database cannot be created), ES_ERR_IO (the damaged file cannot be moved
 * aside); err names the path.
 */
es_err es_store_open_repair(const char *path, es_store **out, char *err,
			    size_t errsz);

/* Closes the database; logs the number of reports still held in memory
 * (es_store_flush first to keep them). NULL-safe. */
void es_store_close(es_store *st);

/* What went wrong with the file; the current fault episode. */
typedef enum es_store_fault {
	ES_STORE_FAULT_NONE = 0, /* writes go through */
	ES_STORE_FAULT_BUSY,     /* another process holds the write lock */
	ES_STORE_FAULT_FULL,     /* the filesystem is full */
	ES_STORE_FAULT_IO,       /* I/O errors, or no connection */
	ES_STORE_FAULT_CORRUPT,  /* damaged: es_store_rebuild */
} es_store_fault;

/* The store's health (es_store_health_get). Strings are borrowed from the
 * store, valid until the next call into it. */
typedef struct es_store_health {
	const char *path;
	es_store_fault fault;
	time_t since;          /* when the episode began, 0 when none */
	const char *error;     /* SQLite's words for its last fault, "" when none */
	size_t held_events;    /* events held in memory */
	int held_state;        /* a state report held in memory */
	int64_t held_dropped;  /* events dropped from memory, not yet counted in the file */
	/* The file was found damaged and replaced (es_store_rebuild or
	 * es_store_open_repair), and no full desired list has been committed
	 * since: the store holds none of the desired objects it held. */
	int rebuilt;
	time_t rebuilt_at;
	const char *rebuilt_why; /* what was wrong with the old file */
	const char *moved_to;    /* where it went */
	uint64_t rebuilds;       /* since the process started */
} es_store_health;

/* Fills *h. A NULL st reads as no fault. */
void es_store_health_get(const es_store *st, es_store_health *h);

/* Called from inside the store call that met it when a fault episode
 * begins or the file turns out damaged; it must not call into the store,
 * only arrange for es_store_flush or es_store_rebuild to run later. */
typedef void (*es_store_notify_fn)(void *user);
void es_store_set_notify(es_store *st, es_store_notify_fn fn, void *user);

/*
 * Ends a fault episode: opens the file again when the store has no
 * connection (as es_store_open_repair), then writes what is held in memory
 * in one transaction: the ack, the events in order (bounded by the
 * max_events of the latest es_store_outbox_put_event), the events dropped
 * from memory added to "reports_dropped", then the state report
 * (es_store_outbox_put_state's rules). ES_OK: nothing is held and writes
 * go through again.
 * Errors: ES_ERR_STATE (the file is damaged, or I/O errors went on for
 * ES_STORE_IOERR_LIMIT flushes: es_store_rebuild), ES_ERR_DB (still
 * failing; es_store_health_get says why), ES_ERR_NOMEM.
 */
es_err es_store_flush(es_store *st);

/*
 * Replaces a damaged file: closes it, moves it aside and creates a new
 * empty database in its place, exactly as es_store_open_repair does (why,
 * copied, says what was wrong: it is es_store_health_get's rebuilt_why; NULL
 * takes the last fault's words). The store stays the same object; what is
 * held in memory stays held (es_store_flush writes it into the new file);
 * everything the old file held is gone (desired_rv 0, next_seq 1).
 * Errors: ES_ERR_IO (the file cannot be moved aside), es_store_open's (the
 * new database cannot be made); then the store has no connection, its
 * fault is ES_STORE_FAULT_IO, and es_store_flush tries again.
 */
es_err es_store_rebuild(es_store *st, const char *why, char *err, size_t errsz);

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
 * During a fault episode (or when this write starts one) the state is held
 * in memory instead, replacing one held before, ES_OK is returned and
 * *seq_out is 0; es_store_flush writes it.
 * Errors: ES_ERR_DB (another SQLite error), ES_ERR_NOMEM.
 */
es_err es_store_outbox_put_state(es_store *st, const char *node_json, time_t now,
				 int64_t *seq_out);

/*
 * Queues an event body (copied) under a new seq. When more than max_events
 * event rows are queued, the oldest event rows are deleted and the dropped
 * counter ("reports_dropped") grows by their number, in the same
 * transaction. During a fault episode (or when this write starts one) the
 * event is held in memory instead (ES_OK, *seq_out 0): past
 * ES_STORE_HELD_EVENTS the oldest held one is dropped and counted, and
 * es_store_flush adds the count to "reports_dropped".
 * Errors: ES_ERR_DB (another SQLite error), ES_ERR_NOMEM.
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
 * same transaction. During a fault episode the ack is held in memory
 * instead (ES_OK) and the outbox reads as if it were written;
 * es_store_flush writes it. Errors: ES_ERR_INVAL, ES_ERR_DB (another
 * SQLite error).
 */
es_err es_store_outbox_ack(es_store *st, int64_t seq);

/* The patch base: the seq and Node document of the last acknowledged state
 * report. ES_ERR_NOTFOUND when none. *doc owned by the caller. */
es_err es_store_base_get(es_store *st, int64_t *seq, cJSON **doc);

/* The Node document of the newest queued state report, else the patch
 * base's (es_store_base_get). *doc owned by the caller.
 * Errors: ES_ERR_NOTFOUND when neither exists, ES_ERR_DB, ES_ERR_NOMEM. */
es_err es_store_state_latest(es_store *st, cJSON **doc);

/* Reports queued now, the ones held in memory included (a held state
 * report that will replace an unsent one counts once), and reports dropped
 * so far, the events dropped from memory included (for status and
 * metrics). Errors: ES_ERR_DB. */
es_err es_store_outbox_depth(es_store *st, int64_t *rows);
es_err es_store_dropped(es_store *st, int64_t *dropped);

#endif
