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
#include "store/db.h"
#include "es_sqlite.h"

struct es_db {
	es_sqlite *sq;
	int64_t tombstones_kept; /* see es_db_set_tombstones_kept */
};

/* Discards the oldest deletion records beyond db->tombstones_kept and moves
 * the compaction point past them (es_db_compact). Errors: ES_ERR_DB. */
es_err es_db_trim_tombstones(es_db *db);

/* Takes the next resourceVersion inside the open transaction (stores it as
 * the current one). Errors: ES_ERR_DB. */
es_err es_db_next_rv(es_db *db, int64_t *rv);

#endif
