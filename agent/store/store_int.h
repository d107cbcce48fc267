/*
 * store_int.h - what store.c and store_outbox.c share inside the store
 * module; not for other modules (they use store.h).
 */
#ifndef ES_AGENT_STORE_INT_H
#define ES_AGENT_STORE_INT_H

#include <sqlite3.h>
#include "es_sqlite.h"
#include "store/store.h"

struct es_store {
	es_sqlite *db;
	/* The last committed `desired` message was full with more=true: the
	 * next full message continues the same object set (temp.full_seen). */
	int full_pending;
	/* es_store_changes: desired commits and status puts since open. */
	uint64_t changes;
};

/* Integer cursor in meta, inside the caller's transaction. */
es_err store__meta_get(es_store *st, const char *key, int64_t def, int64_t *out);
es_err store__meta_set(es_store *st, const char *key, int64_t v);

#endif
