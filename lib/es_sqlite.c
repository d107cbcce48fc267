/*
 * es_sqlite.c - opening, migrating and transacting on an SQLite store
 * (es_sqlite.h).
 */
#include "es_sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "es_json.h"
#include "es_log.h"

/* What es_sqlite_open reads before it writes anything. */
typedef struct sq_state {
	int64_t version, app, tables;
} sq_state;

/* Tells the owner of db of a failure with primary result code code. */
static void tell_fail(es_sqlite *db, int code)
{
	if (db && db->fail_fn)
		db->fail_fn(db->fail_ud, code);
}

es_err es_sqlite_fail(es_sqlite *db, const char *op)
{
	sqlite3 *h = db ? db->h : NULL;
	int code = h ? sqlite3_errcode(h) & 0xff : SQLITE_MISUSE;

	es_log_error(db && db->log ? db->log : "sqlite", "database operation failed",
		     "path", db && db->path ? db->path : "", "op", op, "error",
		     h ? sqlite3_errmsg(h) : "no connection", NULL);
	tell_fail(db, code);
	return code == SQLITE_NOMEM ? ES_ERR_NOMEM : ES_ERR_DB;
}

es_err es_sqlite_exec(es_sqlite *db, const char *sql)
{
	if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
		return es_sqlite_fail(db, sql);
	return ES_OK;
}

es_err es_sqlite_prepare(es_sqlite *db, const char *sql, sqlite3_stmt **out)
{
	*out = NULL;
	if (sqlite3_prepare_v2(db->h, sql, -1, out, NULL) != SQLITE_OK) {
		sqlite3_finalize(*out);
		*out = NULL;
		return es_sqlite_fail(db, sql);
	}
	return ES_OK;
}

es_err es_sqlite_step_done(es_sqlite *db, sqlite3_stmt *s, const char *op)
{
	if (sqlite3_step(s) != SQLITE_DONE)
		return es_sqlite_fail(db, op);
	return ES_OK;
}

es_err es_sqlite_begin(es_sqlite *db)
{
	return es_sqlite_exec(db, "BEGIN IMMEDIATE");
}

void es_sqlite_rollback(es_sqlite *db)
{
	if (db && db->h && !sqlite3_get_autocommit(db->h))
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

es_err es_sqlite_commit(es_sqlite *db)
{
	es_err rc = es_sqlite_exec(db, "COMMIT");

	if (rc != ES_OK)
		es_sqlite_rollback(db);
	return rc;
}

es_err es_sqlite_end(es_sqlite *db, es_err rc)
{
	if (rc == ES_OK)
		return es_sqlite_commit(db);
	es_sqlite_rollback(db);
	return rc;
}

es_err es_sqlite_column_json(es_sqlite *db, sqlite3_stmt *s, int col,
			     const char *what, cJSON **out)
{
	const unsigned char *text;
	char msg[160];
	es_err rc;

	*out = NULL;
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		return ES_OK;
	text = sqlite3_column_text(s, col);
	if (!text)
		return ES_ERR_NOMEM;
	rc = es_json_parse((const char *)text, (size_t)sqlite3_column_bytes(s, col),
			   ES_JSON_MAX_DEPTH, out, msg, sizeof(msg));
	if (rc == ES_ERR_NOMEM || rc == ES_OK)
		return rc;
	es_log_error(db->log, "stored document is corrupt", "path", db->path,
		     "what", what, "error", msg, NULL);
	tell_fail(db, SQLITE_CORRUPT);
	return ES_ERR_DB;
}

es_err es_sqlite_collect(es_sqlite *db, sqlite3_stmt *s, es_sqlite_row_fn row_fn,
			 void *ud, const char *op, cJSON **out)
{
	cJSON *arr = cJSON_CreateArray(), *item = NULL;
	es_err rc = ES_OK;
	int r;

	*out = NULL;
	if (!arr)
		return ES_ERR_NOMEM;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		if (row_fn)
			rc = row_fn(ud, s, &item);
		else
			rc = es_sqlite_column_json(db, s, 0, op, &item);
		if (rc == ES_OK && !item) {
			tell_fail(db, SQLITE_CORRUPT);
			rc = ES_ERR_DB;
		}
		if (rc == ES_OK && !cJSON_AddItemToArray(arr, item)) {
			cJSON_Delete(item);
			rc = ES_ERR_NOMEM;
		}
		if (rc != ES_OK)
			goto cleanup;
		item = NULL;
	}
	if (r != SQLITE_DONE) {
		rc = es_sqlite_fail(db, op);
		goto cleanup;
	}
	*out = arr;
	arr = NULL;
cleanup:
	cJSON_Delete(arr);
	return rc;
}

/* Refuses (ES_ERR_DB) a path that exists and is not a regular file, or is
 * not empty and does not start with the SQLite header ("SQLite format 3\0",
 * SQLite file format, section 1.3), before SQLite opens it and could write
 * to it. *code: es_sqlite_open_code's. */
static es_err check_header(const char *path, int *code, char *err, size_t errsz)
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
	*code = SQLITE_CANTOPEN;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return es_errf(ES_ERR_DB, err, errsz, "%s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return es_errf(ES_ERR_DB, err, errsz, "%s: %s", path, strerror(errno));
	*code = SQLITE_NOTADB;
	if (n != (ssize_t)sizeof(buf) || memcmp(buf, magic, sizeof(buf)) != 0)
		return es_errf(ES_ERR_DB, err, errsz,
			       "%s: not an SQLite database (refusing to touch it)", path);
	*code = SQLITE_OK;
	return ES_OK;
}

/* The message of the connection's last error, naming the path; its code
 * goes to db->fail_fn (es_sqlite_open_code's *code while opening). */
static es_err open_fail(es_sqlite *db, const char *what, char *err, size_t errsz)
{
	int code = sqlite3_errcode(db->h) & 0xff;

	tell_fail(db, code);
	if (code == SQLITE_NOMEM)
		return es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", db->path);
	if (code == SQLITE_NOTADB)
		return es_errf(ES_ERR_DB, err, errsz,
			       "%s: not an SQLite database (refusing to touch it)",
			       db->path);
	return es_errf(ES_ERR_DB, err, errsz, "%s: %s%s%s", db->path, what,
		       *what ? ": " : "", sqlite3_errmsg(db->h));
}

/* Reads one integer from static SQL (for open: errors name the path). */
static es_err query_int(es_sqlite *db, const char *sql, int64_t *out,
			char *err, size_t errsz)
{
	sqlite3_stmt *s = NULL;
	es_err rc = ES_OK;

	if (sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW)
		rc = open_fail(db, "", err, errsz);
	else
		*out = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rc;
}

static es_err check_version(es_sqlite *db, const es_sqlite_schema *sc,
			    int64_t version, char *err, size_t errsz)
{
	if (version > sc->version || version < 0)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "%s: schema version %lld is newer than this build's (%d)",
			       db->path, (long long)version, sc->version);
	return ES_OK;
}

static es_err read_state(es_sqlite *db, const es_sqlite_schema *sc,
			 sq_state *st, char *err, size_t errsz)
{
	int fresh, own;
	es_err rc = query_int(db, "PRAGMA user_version", &st->version, err, errsz);

	if (rc == ES_OK)
		rc = query_int(db, "PRAGMA application_id", &st->app, err, errsz);
	if (rc == ES_OK)
		rc = query_int(db, "SELECT count(*) FROM sqlite_master", &st->tables,
			       err, errsz);
	if (rc == ES_OK)
		rc = check_version(db, sc, st->version, err, errsz);
	if (rc != ES_OK)
		return rc;
	fresh = st->app == 0 && st->version == 0 && st->tables == 0;
	own = st->app == sc->application_id &&
	      (sc->application_id != 0 || st->version != 0);
	if (!fresh && !own)
		return es_errf(sc->foreign_err, err, errsz,
			       "%s: an SQLite database that is not an %s"
			       " (application_id %lld, %lld tables)", db->path,
			       sc->what, (long long)st->app, (long long)st->tables);
	return ES_OK;
}

static es_err set_wal(es_sqlite *db, char *err, size_t errsz)
{
	sqlite3_stmt *s = NULL;
	const char *mode;
	es_err rc = ES_OK;

	if (sqlite3_prepare_v2(db->h, "PRAGMA journal_mode = WAL", -1, &s,
			       NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
		rc = open_fail(db, "cannot set WAL mode", err, errsz);
		goto cleanup;
	}
	mode = (const char *)sqlite3_column_text(s, 0);
	if (!mode || strcmp(mode, "wal") != 0)
		rc = es_errf(ES_ERR_DB, err, errsz,
			     "%s: cannot set WAL mode (journal mode is %s)", db->path,
			     mode ? mode : "unknown");
cleanup:
	sqlite3_finalize(s);
	return rc;
}

/* Runs static SQL during open (errors name the path). */
static es_err exec_open(es_sqlite *db, const char *sql, char *err, size_t errsz)
{
	if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
		return open_fail(db, "", err, errsz);
	return ES_OK;
}

static es_err migrate(es_sqlite *db, const es_sqlite_schema *sc, char *err,
		      size_t errsz)
{
	char sql[64];
	int64_t v = 0;
	es_err rc;

	if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return open_fail(db, "cannot lock for migration", err, errsz);
	/* Another process may have migrated since the unlocked read. */
	rc = query_int(db, "PRAGMA user_version", &v, err, errsz);
	if (rc == ES_OK)
		rc = check_version(db, sc, v, err, errsz);
	for (; rc == ES_OK && v < sc->version; v++) {
		rc = exec_open(db, sc->migrations[v], err, errsz);
		/* PRAGMA takes no bound parameters; the value is an integer. */
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld",
			 (long long)v + 1);
		if (rc == ES_OK)
			rc = exec_open(db, sql, err, errsz);
	}
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %ld",
		 (long)sc->application_id);
	if (rc == ES_OK && sc->application_id != 0)
		rc = exec_open(db, sql, err, errsz);
	if (rc == ES_OK &&
	    sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = open_fail(db, "cannot commit the migration", err, errsz);
	es_sqlite_rollback(db);
	return rc;
}

/* es_sqlite_open_code's fail_fn: keeps the first code in *(int *)ud. */
static void record_code(void *ud, int code)
{
	int *out = ud;

	if (*out == SQLITE_OK)
		*out = code;
}

/* Before SQLite initializes (its first open in this process): no up-front
 * page cache block per pager. SQLite's default preallocates 20 pages
 * (SQLITE_DEFAULT_PCACHE_INITSZ, about 87 KiB) for each database a
 * connection opens, main and temp, used or not; without it pages are
 * allocated as read, within cache_size (sqlite.org/c3ref/c_config_covering_index_scan.html,
 * SQLITE_CONFIG_PAGECACHE). Once SQLite is initialized sqlite3_config
 * refuses (SQLITE_MISUSE) and the default stays: harmless. */
static void config_once(void)
{
	static int done;

	if (!done) {
		done = 1;
		(void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
	}
}

es_err es_sqlite_open(const char *path, const es_sqlite_schema *schema,
		      es_sqlite **out, char *err, size_t errsz)
{
	int code = SQLITE_OK;

	return es_sqlite_open_code(path, schema, out, &code, err, errsz);
}

es_err es_sqlite_open_code(const char *path, const es_sqlite_schema *schema,
			   es_sqlite **out, int *code, char *err, size_t errsz)
{
	es_sqlite *db = NULL;
	sq_state st = { 0 };
	es_err rc;
	int r;

	if (out)
		*out = NULL;
	*code = SQLITE_OK;
	if (!out || !schema || !path || !*path)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: no database path",
			       schema && schema->log ? schema->log : "sqlite");
	rc = check_header(path, code, err, errsz);
	if (rc != ES_OK)
		return rc;
	db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
		goto cleanup;
	}
	db->log = schema->log;
	/* Until it returns, open_fail leaves SQLite's code in *code. */
	db->fail_fn = record_code;
	db->fail_ud = code;
	config_once();
	r = sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL);
	if (r != SQLITE_OK) {
		rc = db->h ? open_fail(db, "cannot open database", err, errsz) :
			     es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
		goto cleanup;
	}
	sqlite3_extended_result_codes(db->h, 1);
	sqlite3_busy_timeout(db->h, schema->busy_ms > 0 ? schema->busy_ms :
							  ES_SQLITE_BUSY_MS);
	rc = read_state(db, schema, &st, err, errsz);
	if (rc == ES_OK)
		rc = set_wal(db, err, errsz);
	if (rc == ES_OK)
		rc = exec_open(db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON",
			       err, errsz);
	if (rc == ES_OK && schema->cache_kib > 0) {
		char sql[48];

		snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", schema->cache_kib);
		rc = exec_open(db, sql, err, errsz);
	}
	if (rc == ES_OK && schema->wal_kib > 0) {
		char sql[96];
		int64_t page = 0;

		rc = query_int(db, "PRAGMA page_size", &page, err, errsz);
		if (rc == ES_OK) {
			snprintf(sql, sizeof(sql),
				 "PRAGMA wal_autocheckpoint = %lld; "
				 "PRAGMA journal_size_limit = %lld",
				 (long long)(schema->wal_kib * 1024LL / page),
				 schema->wal_kib * 1024LL);
			rc = exec_open(db, sql, err, errsz);
		}
	}
	if (rc == ES_OK && st.version < schema->version)
		rc = migrate(db, schema, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	*out = db;
	db = NULL;
cleanup:
	if (db) {
		db->fail_fn = NULL;
		db->fail_ud = NULL;
	}
	/* A refused file keeps its write-ahead log as it is. */
	es_sqlite_close_as_is(db);
	return rc;
}

void es_sqlite_close_as_is(es_sqlite *db)
{
	if (db && db->h)
		sqlite3_db_config(db->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	es_sqlite_close(db);
}

void es_sqlite_close(es_sqlite *db)
{
	if (!db)
		return;
	if (db->h && sqlite3_close(db->h) != SQLITE_OK)
		es_log_error(db->log, "close failed", "path", db->path, "error",
			     sqlite3_errmsg(db->h), NULL);
	free(db->path);
	free(db);
}
