/*
 * test_sqlite.c - what lib/es_sqlite.c adds for stores that handle faults:
 * es_sqlite_open_code's codes (a file that is not SQLite's, a truncated
 * one, a newer one), the failure hook (es_sqlite_fail, a stored document
 * that does not parse), the schema's busy timeout, and
 * es_sqlite_close_as_is keeping the write-ahead log.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "es_sqlite.h"
#include "testutil.h"

static const char *const migrations[] = {
	"CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)",
};

static const es_sqlite_schema schema = {
	.log = "test", .what = "test database", .application_id = 0x54455354,
	.foreign_err = ES_ERR_UNSUPPORTED, .version = 1, .migrations = migrations,
	.busy_ms = 100,
};

typedef struct fx {
	char dir[64], path[128];
	int codes[8], ncodes;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "sqlite", f->path, sizeof(f->path), "t.db");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	es_test_rmtree(f->dir);
	free(f);
	return 0;
}

static void record(void *ud, int code)
{
	fx *f = ud;

	if (f->ncodes < 8)
		f->codes[f->ncodes++] = code;
}

static es_sqlite *open_ok(fx *f)
{
	es_sqlite *db = NULL;
	char err[256] = "";
	int code = -1;

	if (es_sqlite_open_code(f->path, &schema, &db, &code, err, sizeof(err)) != ES_OK)
		fail_msg("open: %s", err);
	assert_int_equal(code, SQLITE_OK);
	db->fail_fn = record;
	db->fail_ud = f;
	return db;
}

static void fill(fx *f)
{
	es_sqlite *db = open_ok(f);
	char sql[128];

	for (int i = 0; i < 300; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO t(v) VALUES('%0100d')", i);
		assert_int_equal(es_sqlite_exec(db, sql), ES_OK);
	}
	es_sqlite_close(db);
}

static int open_code(fx *f, es_err want)
{
	es_sqlite *db = NULL;
	char err[256] = "";
	int code = -1;

	assert_int_equal(es_sqlite_open_code(f->path, &schema, &db, &code, err,
					     sizeof(err)), want);
	assert_null(db);
	assert_non_null(strstr(err, f->path));
	return code;
}

static void test_open_codes(void **state)
{
	fx *f = *state;
	struct stat sb;
	FILE *fp;
	es_sqlite *db;

	fill(f);
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(truncate(f->path, sb.st_size / 3), 0);
	/* Truncated: SQLite finds it corrupt while opening. */
	assert_int_equal(open_code(f, ES_ERR_DB), SQLITE_CORRUPT);
	/* Not SQLite's. */
	fp = fopen(f->path, "wb");
	assert_non_null(fp);
	fputs("garbage garbage garbage", fp);
	fclose(fp);
	assert_int_equal(open_code(f, ES_ERR_DB), SQLITE_NOTADB);
	/* Newer: a refusal of this module's, not SQLite's. */
	unlink(f->path);
	db = open_ok(f);
	assert_int_equal(es_sqlite_exec(db, "PRAGMA user_version = 9"), ES_OK);
	es_sqlite_close(db);
	assert_int_equal(open_code(f, ES_ERR_UNSUPPORTED), SQLITE_OK);
}

/* Told of every failure; a document that does not parse is corruption. */
static void test_fail_hook(void **state)
{
	fx *f = *state;
	es_sqlite *db = open_ok(f);
	sqlite3_stmt *s = NULL;
	cJSON *out = NULL;

	assert_int_equal(es_sqlite_exec(db, "INSERT INTO t(k) VALUES(1);"
				      "INSERT INTO t(k) VALUES(1)"), ES_ERR_DB);
	assert_int_equal(f->codes[0], SQLITE_CONSTRAINT);
	assert_int_equal(es_sqlite_exec(db, "UPDATE t SET v = '{\"a\":' WHERE k = 1"),
			 ES_OK);
	assert_int_equal(es_sqlite_prepare(db, "SELECT v FROM t", &s), ES_OK);
	assert_int_equal(es_sqlite_collect(db, s, NULL, NULL, "t", &out), ES_ERR_DB);
	assert_null(out);
	sqlite3_finalize(s);
	assert_int_equal(f->ncodes, 2);
	assert_int_equal(f->codes[1], SQLITE_CORRUPT);
	es_sqlite_close(db);
}

/* schema.busy_ms, not ES_SQLITE_BUSY_MS. */
static void test_busy_timeout(void **state)
{
	fx *f = *state;
	es_sqlite *db = open_ok(f), *other = open_ok(f);
	struct timespec t0, t1;
	double took;

	assert_int_equal(es_sqlite_begin(other), ES_OK);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(es_sqlite_begin(db), ES_ERR_DB);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(took < 1.0);
	assert_int_equal(f->codes[f->ncodes - 1], SQLITE_BUSY);
	es_sqlite_rollback(other);
	es_sqlite_close(other);
	es_sqlite_close(db);
}

static void test_close_as_is_keeps_the_log(void **state)
{
	fx *f = *state;
	es_sqlite *db = open_ok(f);
	char wal[160];
	struct stat sb;

	assert_int_equal(es_sqlite_exec(db, "INSERT INTO t(v) VALUES('x')"), ES_OK);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size > 0);
	es_sqlite_close_as_is(db);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size > 0);
	/* A plain close checkpoints and removes it. */
	db = open_ok(f);
	es_sqlite_close(db);
	assert_int_not_equal(stat(wal, &sb), 0);
	es_sqlite_close_as_is(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_hook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_as_is_keeps_the_log, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
