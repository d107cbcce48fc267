/*
 * db_sqlutil.h - what the store's tests share: a fixture with a new store
 * in a temporary directory, and what they do to its file behind the
 * store's back (run SQL on it, read one integer of it). Header-only
 * (static inline), for the cmocka tests of controller/store; include it
 * after cmocka.h, store/db.h and testutil.h.
 */
#ifndef ES_TEST_DB_SQLUTIL_H
#define ES_TEST_DB_SQLUTIL_H

#include <stdint.h>
#include <sqlite3.h>

typedef struct db_fx {
	char dir[64];
	char path[128];
	es_db *db;
} db_fx;

/* cmocka setup: *state gets a db_fx with a new store under a temporary
 * directory named after tag. */
static inline int db_fx_open(void **state, const char *tag)
{
	db_fx *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), tag, f->path, sizeof(f->path),
		       "controller.db");
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	*state = f;
	return 0;
}

/* cmocka teardown of db_fx_open: closes the store, removes the
 * directory. */
static inline int db_fx_close(void **state)
{
	db_fx *f = *state;
	int rc;

	es_db_close(f->db);
	rc = es_test_rmtree(f->dir);
	free(f);
	return rc;
}

/* Runs sql (any number of statements) on the file at path; asserts it
 * succeeded. */
static inline void exec_sql(const char *path, const char *sql)
{
	sqlite3 *h = NULL;

	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

/* Column 0 of the first row sql returns from the file at path (opened
 * read-only), as an integer; -1 when it returns no row. */
static inline int64_t peek(const char *path, const char *sql)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

#endif
