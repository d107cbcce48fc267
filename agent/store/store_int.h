/*
 * store_int.h - what store.c, store_outbox.c and store_fault.c share inside
 * the store module; not for other modules (they use store.h).
 */
#ifndef ES_AGENT_STORE_INT_H
#define ES_AGENT_STORE_INT_H

#include <sqlite3.h>
#include "es_sqlite.h"
#include "store/store.h"

/* One event held in memory while the file cannot be written. */
typedef struct store_held {
	char *doc;      /* the event body, JSON text */
	time_t created;
} store_held;

struct es_store {
	/* NULL while the store has no connection (a rebuild that could not
	 * make the new file): reads fail, writes are held or fail. */
	es_sqlite *db;
	char *path;
	/* The last committed `desired` message was full with more=true: the
	 * next full message continues the same object set (temp.full_seen). */
	int full_pending;
	/* es_store_changes: desired commits and status puts since open, and
	 * rebuilds. */
	uint64_t changes;

	/* The fault episode (store_fault.c). */
	es_store_fault fault;
	time_t fault_since;
	const char *fault_error;  /* sqlite3_errstr of its last code (static) */
	unsigned io_flushes;      /* failed flushes in a row on I/O errors */
	es_store_notify_fn notify;
	void *notify_user;

	/* Held in memory during a fault episode (store_outbox.c): a ring of
	 * held_n events from held_first, the state report, the count of
	 * events dropped from memory, the controller's latest ack. */
	store_held held[ES_STORE_HELD_EVENTS];
	size_t held_first, held_n;
	char *held_state;
	time_t held_state_at;
	int64_t held_dropped;
	int64_t acked_held;       /* an ack not yet written, 0: none */
	size_t max_events;        /* of the latest put_event */

	/* The last rebuild (es_store_health_get). */
	int rebuilt;
	time_t rebuilt_at;
	char *rebuilt_why, *moved_to;
	uint64_t rebuilds;
};

/* store.c */

/* es_sqlite_open_code of st->path with the store's schema into st->db
 * (NULL before; NULL again on error, *code then says why), its temp table
 * made and its failures routed to store__fault.
 * Errors: es_store_open's. */
es_err store__open_db(es_store *st, int *code, char *err, size_t errsz);
/* Integer cursor in meta, inside the caller's transaction. */
es_err store__meta_get(es_store *st, const char *key, int64_t def, int64_t *out);
es_err store__meta_set(es_store *st, const char *key, int64_t v);

/* store_fault.c */

/* Opens st->path into st->db (st->db must be NULL): es_sqlite_open_code;
 * with check, PRAGMA quick_check too; with repair, a damaged file is moved
 * aside and a new one made (st->rebuilt set). Creates the connection's
 * temp table and routes its failures to the fault episode.
 * Errors: es_store_open_repair's (es_store_open's without repair). */
es_err store__connect(es_store *st, int check, int repair, char *err,
		      size_t errsz);
/* Starts or updates the fault episode for a failure with primary SQLite
 * code code (es_sqlite_fail_fn); codes that are no fault are ignored. */
void store__fault(void *st, int code);
/* 1 when writes go to the file now: a connection and no fault episode. */
int store__writable(const es_store *st);

/* store_outbox.c */

/* The held reports are written into the open transaction (es_store_flush's
 * order). Errors: ES_ERR_DB, ES_ERR_NOMEM. */
es_err store__flush_held(es_store *st);
/* Forgets what is held (once store__flush_held committed it, or at close),
 * the count of events dropped from memory too. */
void store__held_clear(es_store *st);

#endif
