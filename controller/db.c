/*
 * db.c - the controller store: opening, schema migrations, transactions,
 * the resourceVersion counter and compaction. Desired objects and tombstones
 * are in db_objects.c, nodes and reports in db_nodes.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "db_int.h"
#include "es_json.h"
#include "es_log.h"
#include "es_time.h"

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
};

es_err es_db_fail(es_db *db, const char *op)
{
	es_log_error("db", "sqlite error", "op", op, "error",
		     db && db->h ? sqlite3_errmsg(db->h) : "no connection", NULL);
	return ES_ERR_DB;
}

es_err es_db_prepare(es_db *db, const char *sql, sqlite3_stmt **st)
{
	*st = NULL;
	if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK) {
		sqlite3_finalize(*st);
		*st = NULL;
		return es_db_fail(db, sql);
	}
	return ES_OK;
}

es_err es_db_tx_begin(es_db *db)
{
	if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return es_db_fail(db, "begin");
	return ES_OK;
}

es_err es_db_tx_commit(es_db *db)
{
	if (sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		es_err rc = es_db_fail(db, "commit");
		es_db_tx_rollback(db);
		return rc;
	}
	return ES_OK;
}

void es_db_tx_rollback(es_db *db)
{
	if (!sqlite3_get_autocommit(db->h))
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

es_err es_db_parse_stored(es_db *db, const unsigned char *text, int len,
			  const char *op, cJSON **out)
{
	char perr[128];
	es_err rc;

	*out = NULL;
	if (!text)
		return ES_OK;
	rc = es_json_parse((const char *)text, (size_t)len, ES_JSON_MAX_DEPTH,
			   out, perr, sizeof(perr));
	if (rc == ES_ERR_PARSE) {
		es_log_error("db", "stored JSON does not parse", "op", op,
			     "error", perr, NULL);
		return ES_ERR_DB;
	}
	return rc;
}

/* ES_ERR_DB with err when path exists, is not empty and does not start with
 * the SQLite header ("SQLite format 3\0", SQLite file format, section 1.3);
 * checked before SQLite opens the file so that nothing is written to it. */
static es_err check_header(const char *path, char *err, size_t errsz)
{
	static const char magic[16] = "SQLite format 3";
	char buf[16];
	struct stat sb;
	ssize_t n;
	int fd;

	if (stat(path, &sb) != 0)
		return ES_OK;
	if (!S_ISREG(sb.st_mode))
		return es_errf(ES_ERR_DB, err, errsz, "%s: not a regular file", path);
	if (sb.st_size == 0)
		return ES_OK;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return es_errf(ES_ERR_DB, err, errsz, "%s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != (ssize_t)sizeof(buf) || memcmp(buf, magic, sizeof(buf)) != 0)
		return es_errf(ES_ERR_DB, err, errsz,
			       "%s: not an SQLite database (refusing to touch it)", path);
	return ES_OK;
}

static es_err int_query(es_db *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_db_prepare(db, sql, &st);

	if (rc != ES_OK)
		return rc;
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = es_db_fail(db, sql);
	else
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

static es_err migrate(es_db *db, char *err, size_t errsz)
{
	char sql[64];
	int64_t uv = 0;
	es_err rc = es_db_tx_begin(db);

	if (rc != ES_OK)
		goto fail;
	if ((rc = int_query(db, "PRAGMA user_version", &uv)) != ES_OK)
		goto fail;
	if (uv > ES_DB_SCHEMA_VERSION || uv < 0) {
		rc = es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			     "%s: schema version %lld is newer than this controller's (%d)",
			     db->path, (long long)uv, ES_DB_SCHEMA_VERSION);
		goto cleanup;
	}
	for (; uv < ES_DB_SCHEMA_VERSION; uv++) {
		if (sqlite3_exec(db->h, migrations[uv], NULL, NULL, NULL) != SQLITE_OK) {
			rc = es_db_fail(db, "migrate");
			goto fail;
		}
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld", (long long)uv + 1);
		if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK) {
			rc = es_db_fail(db, "migrate");
			goto fail;
		}
	}
	rc = es_db_tx_commit(db);
	if (rc != ES_OK)
		goto fail;
	return ES_OK;
fail:
	es_errf(ES_ERR_DB, err, errsz, "%s: %s", db->path, sqlite3_errmsg(db->h));
	rc = ES_ERR_DB;
cleanup:
	es_db_tx_rollback(db);
	return rc;
}

es_err es_db_open(const char *path, es_db **out, char *err, size_t errsz)
{
	sqlite3_stmt *st = NULL;
	int64_t uv = 0, tables = 0;
	es_db *db = NULL;
	es_err rc;

	*out = NULL;
	if ((rc = check_header(path, err, errsz)) != ES_OK)
		return rc;
	db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
		goto cleanup;
	}
	db->tombstones_kept = ES_DB_TOMBSTONES_KEPT;
	if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) != SQLITE_OK) {
		rc = es_errf(ES_ERR_DB, err, errsz, "%s: %s", path,
			     db->h ? sqlite3_errmsg(db->h) : "out of memory");
		goto cleanup;
	}
	sqlite3_busy_timeout(db->h, 5000);
	/* Read before anything that could write (journal_mode changes the
	 * header), so a newer or foreign file stays untouched. */
	if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		rc = es_errf(ES_ERR_DB, err, errsz, "%s: %s", path, sqlite3_errmsg(db->h));
		goto cleanup;
	}
	uv = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (uv > ES_DB_SCHEMA_VERSION || uv < 0) {
		rc = es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			     "%s: schema version %lld is newer than this controller's (%d)",
			     path, (long long)uv, ES_DB_SCHEMA_VERSION);
		goto cleanup;
	}
	if (uv == 0) {
		if (int_query(db, "SELECT count(*) FROM sqlite_master", &tables) != ES_OK) {
			rc = es_errf(ES_ERR_DB, err, errsz, "%s: %s", path, sqlite3_errmsg(db->h));
			goto cleanup;
		}
		if (tables) {
			rc = es_errf(ES_ERR_DB, err, errsz, "%s: an SQLite database that is"
				     " not an edgesync controller store", path);
			goto cleanup;
		}
	}
	if (sqlite3_prepare_v2(db->h, "PRAGMA journal_mode = WAL", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_text(st, 0) ||
	    strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
		rc = es_errf(ES_ERR_DB, err, errsz, "%s: cannot enable WAL mode: %s",
			     path, sqlite3_errmsg(db->h));
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_exec(db->h, "PRAGMA synchronous = FULL", NULL, NULL, NULL) != SQLITE_OK) {
		rc = es_errf(ES_ERR_DB, err, errsz, "%s: %s", path, sqlite3_errmsg(db->h));
		goto cleanup;
	}
	if ((rc = migrate(db, err, errsz)) != ES_OK)
		goto cleanup;
	*out = db;
	db = NULL;
cleanup:
	sqlite3_finalize(st);
	es_db_close(db);
	return rc;
}

void es_db_close(es_db *db)
{
	if (!db)
		return;
	sqlite3_close(db->h);
	free(db->path);
	free(db);
}

static es_err meta_get(es_db *db, const char *key, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_db_prepare(db, "SELECT value FROM meta WHERE key = ?", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = es_db_fail(db, "meta get");
	else
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

static es_err meta_set(es_db *db, const char *key, int64_t v)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_db_prepare(db, "UPDATE meta SET value = ? WHERE key = ?", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_int64(st, 1, v);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = es_db_fail(db, "meta set");
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
	if ((rc = es_db_tx_begin(db)) != ES_OK)
		return rc;
	if ((rc = meta_get(db, "rv", &cur)) != ES_OK ||
	    (rc = meta_get(db, "compacted", &compacted)) != ES_OK)
		goto cleanup;
	if (upto > cur)
		upto = cur;
	if (upto <= compacted)
		goto cleanup;
	if ((rc = es_db_prepare(db, "DELETE FROM tombstones WHERE resource_version <= ?",
				&st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, upto);
	if (sqlite3_step(st) != SQLITE_DONE) {
		rc = es_db_fail(db, "compact");
		goto cleanup;
	}
	if ((rc = meta_set(db, "compacted", upto)) != ES_OK)
		goto cleanup;
	rc = es_db_tx_commit(db);
cleanup:
	sqlite3_finalize(st);
	es_db_tx_rollback(db);
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
	rc = es_db_prepare(db, "SELECT resource_version FROM tombstones"
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
		rc = es_db_fail(db, "tombstone trim");
	}
	sqlite3_finalize(st);
	if (rc == ES_OK && upto >= 0)
		rc = es_db_compact(db, upto);
	return rc;
}
