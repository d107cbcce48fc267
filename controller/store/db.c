/*
 * db.c - the controller store: its schema and opening (the SQLite plumbing
 * is lib/es_sqlite.c), the resourceVersion counter and compaction. Desired objects and tombstones
 * are in db_objects.c, nodes and reports in db_nodes.c.
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
	/* 4: enrollment (db_enroll.c): bootstrap tokens (the secret's SHA-256
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
};

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
	rc = es_sqlite_open(path, &db_schema, &db->sq, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
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
	es_sqlite_close(db->sq);
	free(db);
}

static es_err meta_get(es_db *db, const char *key, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "SELECT value FROM meta WHERE key = ?", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = es_sqlite_fail(db->sq, "meta get");
	else
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

static es_err meta_set(es_db *db, const char *key, int64_t v)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "UPDATE meta SET value = ? WHERE key = ?", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_int64(st, 1, v);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "meta set");
	sqlite3_finalize(st);
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
	if ((rc = es_sqlite_begin(db->sq)) != ES_OK)
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
