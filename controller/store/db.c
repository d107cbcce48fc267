/*
 * db.c - the controller store: its schema and opening (the SQLite plumbing
 * is lib/es_sqlite.c), the resourceVersion counter and compaction, batches
 * and the statements kept prepared. Desired objects and tombstones are in
 * db_objects.c, nodes and reports in db_nodes.c, the reported state (keyed
 * rows) in db_state.c.
 */
#include <stdlib.h>

#include "store/db_int.h"

/* migrations[v] turns schema version v into v + 1. */
static const char *const migrations[ES_DB_SCHEMA_VERSION] = {
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"INSERT INTO meta (key, value) VALUES ('rv', 0), ('compacted', 0);"
	"CREATE TABLE objects (kind TEXT NOT NULL, name TEXT NOT NULL,"
	" uid TEXT NOT NULL, generation INTEGER NOT NULL,"
	" resource_version INTEGER NOT NULL, body TEXT NOT NULL,"
	" PRIMARY KEY (kind, name));"
	"CREATE INDEX objects_rv ON objects (resource_version);"
	"CREATE TABLE tombstones (kind TEXT NOT NULL, name TEXT NOT NULL,"
	" uid TEXT NOT NULL, resource_version INTEGER PRIMARY KEY);"
	"CREATE TABLE nodes (name TEXT PRIMARY KEY, labels TEXT NOT NULL,"
	" agent_version TEXT, boot_id TEXT, connected INTEGER NOT NULL DEFAULT 0,"
	" last_seen INTEGER NOT NULL DEFAULT 0,"
	" acked_seq INTEGER NOT NULL DEFAULT 0,"
	" state_seq INTEGER NOT NULL DEFAULT 0, state TEXT,"
	" desired_ack_rv INTEGER NOT NULL DEFAULT 0,"
	" created INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE reports (node TEXT NOT NULL, seq INTEGER NOT NULL,"
	" report_type TEXT NOT NULL, base_seq INTEGER, time TEXT,"
	" received INTEGER NOT NULL, body TEXT,"
	" PRIMARY KEY (node, seq));",
	/* 2: a full list is owed to the node (its labels changed) until it
	 * acknowledges one. */
	"ALTER TABLE nodes ADD COLUMN full_pending INTEGER NOT NULL DEFAULT 0;",
	/* 3: report streams (hello.streamId): the node's cursor belongs to
	 * one stream ('' for agents that name none); reports are kept per
	 * stream, in the order received (id). */
	"ALTER TABLE nodes ADD COLUMN stream_id TEXT NOT NULL DEFAULT '';"
	"CREATE TABLE reports3 (id INTEGER PRIMARY KEY, node TEXT NOT NULL,"
	" stream TEXT NOT NULL DEFAULT '', seq INTEGER NOT NULL,"
	" report_type TEXT NOT NULL, base_seq INTEGER, time TEXT,"
	" received INTEGER NOT NULL, body TEXT, UNIQUE (node, stream, seq));"
	"INSERT INTO reports3 (node, stream, seq, report_type, base_seq, time,"
	" received, body) SELECT node, '', seq, report_type, base_seq, time,"
	" received, body FROM reports ORDER BY node, seq;"
	"DROP TABLE reports;"
	"ALTER TABLE reports3 RENAME TO reports;"
	"CREATE INDEX reports_by_node ON reports (node, id);",
	/* 4: the state text is a checkpoint at state_ckpt (the reports of
	 * the stream past it are replayed); the bytes of a node's stored
	 * report bodies, for the history's byte bound. */
	"ALTER TABLE nodes ADD COLUMN state_ckpt INTEGER NOT NULL DEFAULT 0;"
	"UPDATE nodes SET state_ckpt = state_seq;"
	"ALTER TABLE nodes ADD COLUMN history_bytes INTEGER NOT NULL DEFAULT 0;"
	"UPDATE nodes SET history_bytes = (SELECT coalesce(sum(length(CAST(body AS BLOB))), 0)"
	" FROM reports WHERE reports.node = nodes.name);",
	/* 5: enrollment (db_enroll.c): bootstrap tokens (the secret's SHA-256
	 * only), the certificates the signing CA issued, and the key each
	 * enrolled node name is bound to. */
	"CREATE TABLE bootstrap_tokens (id TEXT PRIMARY KEY,"
	" secret_sha256 TEXT NOT NULL, expires INTEGER NOT NULL,"
	" usages INTEGER NOT NULL, used INTEGER NOT NULL DEFAULT 0,"
	" labels TEXT NOT NULL, name_prefix TEXT NOT NULL,"
	" created INTEGER NOT NULL);"
	"CREATE TABLE certificates (serial TEXT PRIMARY KEY, node TEXT NOT NULL,"
	" key_pin TEXT NOT NULL, not_after INTEGER NOT NULL,"
	" issued INTEGER NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX certificates_by_node ON certificates (node);"
	"CREATE TABLE enrollments (node TEXT PRIMARY KEY, key_pin TEXT NOT NULL,"
	" token_id TEXT NOT NULL, labels TEXT NOT NULL,"
	" enrolled INTEGER NOT NULL);",
	/* 6: the reported state as keyed rows (db_state.c); the state text
	 * of nodes.state moves into them once at open (db__state_upgrade). */
	"CREATE TABLE node_state (node TEXT NOT NULL, parent TEXT NOT NULL,"
	" name TEXT NOT NULL, ord INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT,"
	" PRIMARY KEY (node, parent, name)) WITHOUT ROWID;"
	"INSERT INTO meta (key, value) VALUES ('state_rows_pending', 1);",
};

/* The SQL of the kept statements (enum db_stmt_id). */
static const char *const stmt_sql[DB_ST_N] = {
	[DB_ST_NODE_CURSOR] = "SELECT acked_seq, state_seq, stream_id, history_bytes"
		" FROM nodes WHERE name = ?1",
	[DB_ST_REPORT_INSERT] = "INSERT INTO reports (node, seq, report_type,"
		" base_seq, time, received, body, stream) VALUES (?,?,?,?,?,?,?,?)",
	[DB_ST_REPORT_PRUNE_SEQ] = "DELETE FROM reports WHERE node = ?1 AND"
		" stream = ?2 AND seq <= ?3 RETURNING length(CAST(body AS BLOB))",
	/* The node's reports oldest first, but for its newest. */
	[DB_ST_REPORT_OLDEST] = "SELECT id, length(CAST(body AS BLOB)) FROM reports"
		" WHERE node = ?1 AND id < (SELECT max(id) FROM reports WHERE node = ?1)"
		" ORDER BY id",
	[DB_ST_REPORT_PRUNE_ID] = "DELETE FROM reports WHERE node = ?1 AND id <= ?2"
		" RETURNING length(CAST(body AS BLOB))",
	[DB_ST_NODE_REPORTED] = "UPDATE nodes SET acked_seq = ?1, last_seen = ?2,"
		" state_seq = ?3, history_bytes = ?4 WHERE name = ?5",
	[DB_ST_STATE_REPLAY] = "SELECT seq, report_type, base_seq, body FROM reports"
		" WHERE node = ?1 AND stream = ?2 AND seq > ?3 AND seq <= ?4"
		" AND report_type <> 'event' ORDER BY seq",
	[DB_ST_ROW_GET] = "SELECT kind, ord, body FROM node_state"
		" WHERE node = ?1 AND parent = ?2 AND name = ?3",
	[DB_ST_ROW_PUT] = "INSERT OR REPLACE INTO node_state (node, parent, name, ord,"
		" kind, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[DB_ST_ROW_BODY] = "UPDATE node_state SET body = ?4"
		" WHERE node = ?1 AND parent = ?2 AND name = ?3",
	/* A member of text: replaced in its place, or new after the last. */
	[DB_ST_ROW_UPSERT] = "INSERT INTO node_state (node, parent, name, ord, kind, body)"
		" VALUES (?1, ?2, ?3, (SELECT coalesce(max(ord), -1) + 1 FROM node_state"
		" WHERE node = ?1 AND parent = ?2), 'v', ?4) ON CONFLICT (node, parent, name)"
		" DO UPDATE SET kind = 'v', body = excluded.body",
	[DB_ST_ROW_DEL] = "DELETE FROM node_state WHERE node = ?1 AND parent = ?2"
		" AND name = ?3",
	/* Below path ?2: parent ?2 or one that begins with ?2 || '.'. */
	[DB_ST_ROWS_DEL_UNDER] = "DELETE FROM node_state WHERE node = ?1 AND"
		" (parent = ?2 OR (parent > (?2 || '.') AND parent < (?2 || '/')))",
	[DB_ST_ROWS_DEL_NODE] = "DELETE FROM node_state WHERE node = ?1",
	[DB_ST_ROW_NEXT_ORD] = "SELECT coalesce(max(ord), -1) + 1 FROM node_state"
		" WHERE node = ?1 AND parent = ?2",
	[DB_ST_ROWS_UNDER] = "SELECT parent, name, ord, kind, body FROM node_state"
		" WHERE node = ?1 AND (parent = ?2 OR (parent > (?2 || '.') AND"
		" parent < (?2 || '/'))) ORDER BY parent, ord",
	/* The items of one keyed list (a delta's list change reads them in
	 * one scan, db_state.c load_items). */
	[DB_ST_ROWS_LIST] = "SELECT name, ord, body FROM node_state"
		" WHERE node = ?1 AND parent = ?2",
	[DB_ST_ROWS_NODE] = "SELECT parent, name, ord, kind, body FROM node_state"
		" WHERE node = ?1 AND parent <> '#' ORDER BY parent, ord",
	[DB_ST_NODE_DISCONNECTED] = "UPDATE nodes SET connected = ?1, last_seen = ?2"
		" WHERE name = ?3",
	[DB_ST_NODE_FULL_DONE] = "UPDATE nodes SET full_pending = ?1, last_seen = ?2"
		" WHERE name = ?3",
	[DB_ST_NODE_DESIRED_ACK] = "UPDATE nodes SET desired_ack_rv = ?1,"
		" last_seen = ?2 WHERE name = ?3",
	/* The apply path (es_db_object_put, es_db_rv) and the node reads of
	 * the admin API (es_db_node_get, es_db_node_briefs). */
	[DB_ST_META_GET] = "SELECT value FROM meta WHERE key = ?1",
	[DB_ST_META_SET] = "UPDATE meta SET value = ?1 WHERE key = ?2",
	[DB_ST_OBJECT_LOAD] = "SELECT body FROM objects WHERE kind = ?1 AND name = ?2",
	[DB_ST_OBJECT_WRITE] = "INSERT OR REPLACE INTO objects (kind, name, uid,"
		" generation, resource_version, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[DB_ST_NODE_GET] = "SELECT " DB_NODE_COLS " FROM nodes WHERE name = ?1",
	[DB_ST_NODE_BRIEF] = "SELECT " DB_NODE_BRIEF_COLS " FROM nodes WHERE name = ?1",
	[DB_ST_NODE_BRIEFS] = "SELECT " DB_NODE_BRIEF_COLS " FROM nodes ORDER BY name",
	[DB_ST_SAVEPOINT] = "SAVEPOINT report",
	[DB_ST_RELEASE] = "RELEASE report",
	[DB_ST_ROLLBACK_TO] = "ROLLBACK TO report",
};

static int on_commit(void *ud)
{
	((es_db *)ud)->commits++;
	return 0;
}

static const es_sqlite_schema db_schema = {
	.log = "db",
	.what = "edgesync controller store",
	.application_id = 0,
	.foreign_err = ES_ERR_DB,
	.version = ES_DB_SCHEMA_VERSION,
	.migrations = migrations,
};

es_err es_db_open(const char *path, es_db **out, char *err, size_t errsz)
{
	es_db *db = NULL;
	es_err rc;

	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
	db->tombstones_kept = ES_DB_TOMBSTONES_KEPT;
	db->reports_kept = ES_DB_REPORTS_KEPT;
	db->report_bytes_kept = ES_DB_REPORT_BYTES_KEPT;
	rc = es_sqlite_open(path, &db_schema, &db->sq, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if ((rc = db__state_upgrade(db)) != ES_OK) {
		es_errf(rc, err, errsz, "%s: the node states could not be moved into rows",
			path);
		goto cleanup;
	}
	sqlite3_commit_hook(db->sq->h, on_commit, db);
	*out = db;
	db = NULL;
cleanup:
	es_db_close(db);
	return rc;
}

void es_db_close(es_db *db)
{
	if (!db)
		return;
	if (db->sq) {
		if (db->batch)
			(void)es_db_batch_commit(db);
	}
	for (int i = 0; i < DB_ST_N; i++)
		sqlite3_finalize(db->stmts[i]);
	es_sqlite_close(db->sq);
	free(db);
}

es_err db__stmt(es_db *db, enum db_stmt_id id, sqlite3_stmt **out)
{
	sqlite3_stmt *st = db->stmts[id];

	*out = NULL;
	if (!st) {
		if (sqlite3_prepare_v3(db->sq->h, stmt_sql[id], -1,
				       SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
			sqlite3_finalize(st);
			return es_sqlite_fail(db->sq, stmt_sql[id]);
		}
		db->stmts[id] = st;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	*out = st;
	return ES_OK;
}

static es_err exec_kept(es_db *db, enum db_stmt_id id)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, id, &st);

	if (rc == ES_OK) {
		rc = es_sqlite_step_done(db->sq, st, stmt_sql[id]);
		sqlite3_reset(st);
	}
	return rc;
}

/* Commits the batch's open transaction; a failure is kept in batch_rc. */
static es_err batch_tx_commit(es_db *db)
{
	es_err rc;

	if (!db->tx_open)
		return ES_OK;
	db->tx_open = 0;
	/* SQLite rolls a transaction back by itself on some errors (a full
	 * disk, I/O errors): then there is nothing left to commit. */
	rc = sqlite3_get_autocommit(db->sq->h) ? ES_ERR_DB : es_sqlite_commit(db->sq);
	if (rc != ES_OK && db->batch_rc == ES_OK)
		db->batch_rc = rc;
	return rc;
}

es_err db__begin(es_db *db)
{
	es_err rc = batch_tx_commit(db);

	return rc != ES_OK ? rc : es_sqlite_begin(db->sq);
}

es_err db__op_begin(es_db *db, int *joined)
{
	es_err rc;

	*joined = db->batch;
	if (!db->batch)
		return es_sqlite_begin(db->sq);
	if (db->tx_open && sqlite3_get_autocommit(db->sq->h))
		(void)batch_tx_commit(db); /* rolled back under us: failed */
	if (!db->tx_open) {
		if ((rc = es_sqlite_begin(db->sq)) != ES_OK)
			return rc;
		db->tx_open = 1;
	}
	return exec_kept(db, DB_ST_SAVEPOINT);
}

es_err db__op_end(es_db *db, int joined, es_err rc)
{
	if (!joined)
		return es_sqlite_end(db->sq, rc);
	if (rc == ES_OK)
		return exec_kept(db, DB_ST_RELEASE);
	/* Undo this write alone; the savepoint is released after. */
	if (exec_kept(db, DB_ST_ROLLBACK_TO) == ES_OK)
		(void)exec_kept(db, DB_ST_RELEASE);
	return rc;
}

void es_db_batch_begin(es_db *db)
{
	if (db && !db->batch) {
		db->batch = 1;
		db->batch_rc = ES_OK;
	}
}

es_err es_db_batch_commit(es_db *db)
{
	es_err rc;

	if (!db || !db->batch)
		return ES_OK;
	(void)batch_tx_commit(db);
	rc = db->batch_rc;
	db->batch = 0;
	db->batch_rc = ES_OK;
	return rc;
}

int es_db_batch_open(const es_db *db)
{
	return db && db->batch;
}

uint64_t es_db_commit_count(const es_db *db)
{
	return db ? db->commits : 0;
}

void es_db_set_reports_kept(es_db *db, int64_t count, int64_t bytes)
{
	if (!db)
		return;
	if (count >= 1)
		db->reports_kept = count;
	if (bytes >= 0)
		db->report_bytes_kept = bytes;
}

static es_err meta_get(es_db *db, const char *key, int64_t *out)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_META_GET, &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = es_sqlite_fail(db->sq, "meta get");
	else
		*out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc;
}

static es_err meta_set(es_db *db, const char *key, int64_t v)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_META_SET, &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_int64(st, 1, v);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "meta set");
	sqlite3_reset(st);
	return rc;
}

es_err es_db_next_rv(es_db *db, int64_t *rv)
{
	int64_t cur = 0;
	es_err rc = meta_get(db, "rv", &cur);

	if (rc != ES_OK)
		return rc;
	*rv = cur + 1;
	return meta_set(db, "rv", *rv);
}

es_err es_db_rv(es_db *db, int64_t *current, int64_t *compacted)
{
	int64_t c = 0, k = 0;
	es_err rc = meta_get(db, "rv", &c);

	if (rc == ES_OK)
		rc = meta_get(db, "compacted", &k);
	if (rc != ES_OK)
		return rc;
	if (current)
		*current = c;
	if (compacted)
		*compacted = k;
	return ES_OK;
}

es_err es_db_compact(es_db *db, int64_t upto)
{
	sqlite3_stmt *st = NULL;
	int64_t cur = 0, compacted = 0;
	es_err rc;

	if (upto < 0)
		return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	if ((rc = meta_get(db, "rv", &cur)) != ES_OK ||
	    (rc = meta_get(db, "compacted", &compacted)) != ES_OK)
		goto cleanup;
	if (upto > cur)
		upto = cur;
	if (upto <= compacted)
		goto cleanup;
	if ((rc = es_sqlite_prepare(db->sq, "DELETE FROM tombstones WHERE resource_version <= ?",
				&st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, upto);
	rc = es_sqlite_step_done(db->sq, st, "compact");
	if (rc == ES_OK)
		rc = meta_set(db, "compacted", upto);
	if (rc == ES_OK)
		rc = es_sqlite_commit(db->sq);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

void es_db_set_tombstones_kept(es_db *db, int64_t n)
{
	if (db && n >= 0)
		db->tombstones_kept = n;
}

es_err es_db_trim_tombstones(es_db *db)
{
	sqlite3_stmt *st = NULL;
	int64_t upto = -1;
	es_err rc;

	/* The newest resourceVersion among the records past the bound. */
	rc = es_sqlite_prepare(db->sq, "SELECT resource_version FROM tombstones"
			   " ORDER BY resource_version DESC LIMIT 1 OFFSET ?", &st);
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_int64(st, 1, db->tombstones_kept);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		upto = sqlite3_column_int64(st, 0);
		break;
	case SQLITE_DONE:
		break;
	default:
		rc = es_sqlite_fail(db->sq, "tombstone trim");
	}
	sqlite3_finalize(st);
	if (rc == ES_OK && upto >= 0)
		rc = es_db_compact(db, upto);
	return rc;
}
