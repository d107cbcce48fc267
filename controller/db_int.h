/*
 * db_int.h - what db.c (open, schema, counters), db_objects.c (desired
 * objects) and db_nodes.c (nodes, reports) share. Private to the db module: nothing outside those two files
 * includes it.
 */
#ifndef ES_CTRL_DB_INT_H
#define ES_CTRL_DB_INT_H

#include <sqlite3.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "db.h"

struct es_db {
	sqlite3 *h;
	char *path;
	int64_t tombstones_kept; /* see es_db_set_tombstones_kept */
};

/* Discards the oldest deletion records beyond db->tombstones_kept and moves
 * the compaction point past them (es_db_compact). Errors: ES_ERR_DB. */
es_err es_db_trim_tombstones(es_db *db);

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK. Errors: ES_ERR_DB (logged).
 * es_db_tx_rollback is safe to call when no transaction is open. */
es_err es_db_tx_begin(es_db *db);
es_err es_db_tx_commit(es_db *db);
void es_db_tx_rollback(es_db *db);

/* Prepares sql (ES_ERR_DB, logged, on failure). */
es_err es_db_prepare(es_db *db, const char *sql, sqlite3_stmt **st);

/* Logs the connection's last SQLite error with op and returns ES_ERR_DB. */
es_err es_db_fail(es_db *db, const char *op);

/* Takes the next resourceVersion inside the open transaction (stores it as
 * the current one). Errors: ES_ERR_DB. */
es_err es_db_next_rv(es_db *db, int64_t *rv);

/* Parses a JSON text this module stored (column text, may be NULL: then
 * *out is NULL and ES_OK). A row that does not parse is ES_ERR_DB (logged
 * with op); ES_ERR_NOMEM. */
es_err es_db_parse_stored(es_db *db, const unsigned char *text, int len,
			  const char *op, cJSON **out);

#endif
