/*
 * es_sqlite.h - the SQLite plumbing shared by the agent's store
 * (agent/store/store.h) and the controller's store (controller/store/db.h): opening a
 * database file safely, forward schema migrations, transactions, statements
 * with logged errors, and JSON read back from columns.
 *
 * Durability rules (docs/ARCHITECTURE.md, "Durability"):
 * WAL journal, synchronous=FULL, a busy timeout (ES_SQLITE_BUSY_MS unless
 * the schema sets one), every write in one BEGIN IMMEDIATE transaction
 * committed before the caller acknowledges anything. foreign_keys is ON. A connection is used from one
 * thread only.
 *
 * Each store keeps its own schema, application_id and names in an
 * es_sqlite_schema; this module knows no table.
 */
#ifndef ES_SQLITE_H
#define ES_SQLITE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>
#include <cjson/cJSON.h>
#include "es_err.h"

/* Busy timeout of a connection whose schema sets none, in milliseconds. */
#define ES_SQLITE_BUSY_MS 5000

/* What one store's database file is (all members static, owned by the
 * caller, outliving every connection opened with it). */
typedef struct es_sqlite_schema {
	/* Log component of the connection's messages ("store", "db"). */
	const char *log;
	/* Names the store in the refusal of a foreign SQLite file, after
	 * "not an": "edgesync agent database". */
	const char *what;
	/* PRAGMA application_id written by the first migration and required
	 * afterwards (SQLite file format, section 1.3, offset 68). 0: the store
	 * has none; then a non-zero user_version is what marks the file. */
	int32_t application_id;
	/* Returned, with the message, for an SQLite file of another program:
	 * ES_ERR_UNSUPPORTED or ES_ERR_DB (as the store's header promises). */
	es_err foreign_err;
	/* The schema version (PRAGMA user_version) this build writes, >= 1. */
	int version;
	/* version entries; migrations[v] is SQL that turns version v into
	 * v + 1 (several statements allowed, no bound values). */
	const char *const *migrations;
	/* Page cache bound of each connection, KiB (PRAGMA cache_size = -N);
	 * 0 keeps SQLite's default (2000 KiB). Pages past it are read again
	 * from the file, which the kernel's page cache usually holds. */
	int cache_kib;
	/* Bound of the write-ahead log, KiB: checkpoint once it holds that
	 * much (PRAGMA wal_autocheckpoint, in pages) and truncate it back to
	 * that size after a checkpoint (PRAGMA journal_size_limit); 0 keeps
	 * SQLite's defaults (a checkpoint every 1000 pages, the file never
	 * shrinks). sqlite.org/pragma.html, sqlite.org/wal.html. */
	int wal_kib;
	/* How long a statement waits for another connection's lock before it
	 * fails with SQLITE_BUSY, ms (sqlite3_busy_timeout); 0 means
	 * ES_SQLITE_BUSY_MS. A program whose event loop must not stall sets
	 * it short and retries later. */
	int busy_ms;
} es_sqlite_schema;

/* Told of every failure es_sqlite_fail logs, with its primary SQLite
 * result code (SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR, SQLITE_CORRUPT,
 * ...), and of a stored document that does not parse (SQLITE_CORRUPT: the
 * file holds what this program did not write). ud is es_sqlite.fail_ud. */
typedef void (*es_sqlite_fail_fn)(void *ud, int code);

/* An open connection. Members are read-only for users (h for sqlite3_*
 * calls, path (owned copy) and log for messages), except fail_fn and
 * fail_ud, which the owner may set after opening (NULL: nobody is told). */
typedef struct es_sqlite {
	sqlite3 *h;
	char *path;
	const char *log;
	es_sqlite_fail_fn fail_fn;
	void *fail_ud;
} es_sqlite;

/*
 * Opens or creates the database file at path (its directory must exist)
 * for schema and migrates it forward to schema->version in one transaction,
 * which also sets user_version (after each step) and application_id.
 *
 * Refused files are left byte for byte untouched: the file header is
 * checked before SQLite opens the file, and user_version, application_id
 * and the table count are read before anything is written (setting WAL
 * mode rewrites the header).
 * A file is the store's own when its application_id equals
 * schema->application_id and (that id is non-zero or user_version is
 * non-zero); a file with application_id 0, user_version 0 and no table is
 * new.
 *
 * On success *out is a new connection the caller closes with
 * es_sqlite_close; on error *out is NULL and err (may be NULL; errsz bytes)
 * holds a message that names path.
 * Errors:
 *   ES_ERR_INVAL        path or schema or out NULL, or path empty;
 *   ES_ERR_DB           path is not a regular file, its header is not
 *                       "SQLite format 3\0" (message "not an SQLite
 *                       database"), SQLite cannot open or read it, WAL mode
 *                       cannot be set, or a migration fails;
 *   ES_ERR_UNSUPPORTED  user_version is newer than schema->version (or
 *                       negative): message "newer";
 *   schema->foreign_err an SQLite file that is not the store's own:
 *                       message "not an <what>";
 *   ES_ERR_NOMEM        out of memory.
 */
es_err es_sqlite_open(const char *path, const es_sqlite_schema *schema,
		      es_sqlite **out, char *err, size_t errsz);

/*
 * es_sqlite_open, telling why a refusal happened: on error *code (not NULL)
 * is the primary SQLite result code behind it: SQLITE_NOTADB for a file
 * whose header is not SQLite's, the code SQLite returned while opening,
 * reading or migrating the file (SQLITE_CORRUPT, SQLITE_NOTADB,
 * SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_BUSY, ...; SQLITE_CANTOPEN also
 * when the file cannot be read to check its header), and SQLITE_OK for a
 * refusal that is not SQLite's (a newer or foreign database, a path that is
 * not a regular file, an allocation of this module failing). SQLITE_OK on
 * success. code must not be NULL.
 */
es_err es_sqlite_open_code(const char *path, const es_sqlite_schema *schema,
			   es_sqlite **out, int *code, char *err, size_t errsz);

/* Closes the connection (logs when SQLite refuses) and frees db. NULL-safe. */
void es_sqlite_close(es_sqlite *db);

/* es_sqlite_close without the checkpoint SQLite runs when the last
 * connection to a WAL database closes (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE):
 * the -wal and -shm files stay as they are, for a file that is refused or
 * damaged. NULL-safe. */
void es_sqlite_close_as_is(es_sqlite *db);

/* Logs the connection's last SQLite error with op (a short name of the
 * operation, or the SQL) and tells db->fail_fn its primary code. Returns
 * ES_ERR_NOMEM when that error was SQLITE_NOMEM, else ES_ERR_DB. db and
 * db->h may be NULL. */
es_err es_sqlite_fail(es_sqlite *db, const char *op);

/* Runs SQL that binds no values. Errors: es_sqlite_fail's (logged). */
es_err es_sqlite_exec(es_sqlite *db, const char *sql);

/* Prepares sql into *out (the caller finalizes it; NULL on error).
 * Errors: es_sqlite_fail's (logged with the SQL). */
es_err es_sqlite_prepare(es_sqlite *db, const char *sql, sqlite3_stmt **out);

/* Steps s, which must return no row (SQLITE_DONE). Errors: es_sqlite_fail's
 * (logged with op). */
es_err es_sqlite_step_done(es_sqlite *db, sqlite3_stmt *s, const char *op);

/* BEGIN IMMEDIATE: takes the write lock now, waiting up to the busy
 * timeout. Errors: es_sqlite_fail's (logged). */
es_err es_sqlite_begin(es_sqlite *db);

/* COMMIT; when it fails the transaction is rolled back. Errors:
 * es_sqlite_fail's (logged). */
es_err es_sqlite_commit(es_sqlite *db);

/* ROLLBACK of the open transaction; does nothing when none is open, so it
 * may close every exit path. Never fails (a failed rollback leaves SQLite's
 * automatic rollback). */
void es_sqlite_rollback(es_sqlite *db);

/* Ends the open transaction by rc: commits when rc is ES_OK, else rolls
 * back. Returns rc, or es_sqlite_commit's error when the commit fails. */
es_err es_sqlite_end(es_sqlite *db, es_err rc);

/*
 * Parses the JSON text in column col of the row s is positioned on (text
 * this program stored, parsed with ES_JSON_MAX_DEPTH) into *out, which the
 * caller owns. SQL NULL gives ES_OK with *out NULL. what names the data in
 * the log message of a corrupt row.
 * Errors: ES_ERR_DB (the text does not parse: logged with what and the
 * path, db->fail_fn told SQLITE_CORRUPT), ES_ERR_NOMEM.
 */
es_err es_sqlite_column_json(es_sqlite *db, sqlite3_stmt *s, int col,
			     const char *what, cJSON **out);

/* Builds *item (a new JSON item, then owned by the caller) from the row s is
 * positioned on; ud is es_sqlite_collect's. Returns an es_err; on error
 * *item is NULL. */
typedef es_err (*es_sqlite_row_fn)(void *ud, sqlite3_stmt *s, cJSON **item);

/*
 * Steps the prepared (and bound) statement s through every row and returns
 * a new array (caller owns *out) of one item per row, in row order: the
 * item row_fn(ud, s, &item) builds, or with row_fn NULL the stored JSON of
 * column 0 (es_sqlite_column_json; SQL NULL there is a corrupt row,
 * ES_ERR_DB, told to db->fail_fn as SQLITE_CORRUPT). s stays the caller's to finalize. op names the query in log
 * messages. On error *out is NULL.
 * Errors: row_fn's, ES_ERR_DB (corrupt row), ES_ERR_NOMEM, es_sqlite_fail's
 * (a step failed; logged).
 */
es_err es_sqlite_collect(es_sqlite *db, sqlite3_stmt *s, es_sqlite_row_fn row_fn,
			 void *ud, const char *op, cJSON **out);

#endif
