/*
 * store_int.h - what store.c and store_outbox.c share inside the store
 * module; not for other modules (they use store.h).
 */
#ifndef ES_AGENT_STORE_INT_H
#define ES_AGENT_STORE_INT_H

#include <sqlite3.h>
#include "store.h"

struct es_store {
	sqlite3 *db;
	char *path;
	/* The last committed `desired` message was full with more=true: the
	 * next full message continues the same object set (temp.full_seen). */
	int full_pending;
};

/* Logs SQLite's last error for op; returns ES_ERR_NOMEM or ES_ERR_DB. */
es_err store__fail(es_store *st, const char *op);
/* Runs static SQL that has no values. */
es_err store__exec(es_store *st, const char *sql);
es_err store__prep(es_store *st, const char *sql, sqlite3_stmt **out);
/* Steps a statement that returns no row (SQLITE_DONE expected). */
es_err store__done(es_store *st, sqlite3_stmt *s, const char *op);
/* BEGIN IMMEDIATE. */
es_err store__begin(es_store *st);
/* Commits when rc is ES_OK, else (or when COMMIT fails) rolls back;
 * returns the final result. */
es_err store__end(es_store *st, es_err rc);
/* Parses JSON text read back from the database into *out (caller owns);
 * corrupt text is ES_ERR_DB (logged, naming what). */
es_err store__parse(es_store *st, const unsigned char *text, int len,
		    const char *what, cJSON **out);
/* Integer cursor in meta, inside the caller's transaction. */
es_err store__meta_get(es_store *st, const char *key, int64_t def, int64_t *out);
es_err store__meta_set(es_store *st, const char *key, int64_t v);

#endif
