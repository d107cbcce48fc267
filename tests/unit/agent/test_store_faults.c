/*
 * test_store_faults.c - the agent store's faults (agent/store/store.h,
 * "Faults"): damaged files moved aside and replaced at open and at run
 * time, only a few of them kept; writes held in memory while another
 * connection holds the write lock, the filesystem is full or the disk
 * fails, bounded and counted, and written in order by es_store_flush; I/O
 * errors that persist counting as damage.
 *
 * A full filesystem and disk errors come from a VFS registered as SQLite's
 * default that passes every call to "unix" and fails writes on demand
 * (sqlite.org/vfs.html).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "store/store.h"
#include "testutil.h"

/* ---- a VFS whose writes fail on demand ---------------------------------- */

/* SQLITE_OK: writes pass; else the code every write (and truncate, sync)
 * of a database, log or shared-memory file returns. */
static int write_fault;

typedef struct ff_file {
	sqlite3_file base;   /* methods: ff_io */
	sqlite3_file *real;  /* the "unix" file, right after this struct */
} ff_file;

static sqlite3_vfs *unix_vfs;
static sqlite3_vfs ff_vfs;
static sqlite3_io_methods ff_io;

static int ff_close(sqlite3_file *f)
{
	ff_file *p = (ff_file *)f;
	int rc = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;

	return rc;
}

static int ff_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xRead(p->real, buf, n, off);
}

static int ff_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	ff_file *p = (ff_file *)f;

	if (write_fault != SQLITE_OK)
		return write_fault;
	return p->real->pMethods->xWrite(p->real, buf, n, off);
}

static int ff_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	ff_file *p = (ff_file *)f;

	if (write_fault != SQLITE_OK)
		return write_fault;
	return p->real->pMethods->xTruncate(p->real, size);
}

static int ff_sync(sqlite3_file *f, int flags)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xSync(p->real, flags);
}

static int ff_size(sqlite3_file *f, sqlite3_int64 *size)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xFileSize(p->real, size);
}

static int ff_lock(sqlite3_file *f, int l)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xLock(p->real, l);
}

static int ff_unlock(sqlite3_file *f, int l)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xUnlock(p->real, l);
}

static int ff_check_lock(sqlite3_file *f, int *out)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xCheckReservedLock(p->real, out);
}

static int ff_fcntl(sqlite3_file *f, int op, void *arg)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xFileControl(p->real, op, arg);
}

static int ff_sector(sqlite3_file *f)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xSectorSize(p->real);
}

static int ff_devchar(sqlite3_file *f)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xDeviceCharacteristics(p->real);
}

static int ff_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **out)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xShmMap(p->real, pg, sz, extend, out);
}

static int ff_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xShmLock(p->real, off, n, flags);
}

static void ff_shm_barrier(sqlite3_file *f)
{
	ff_file *p = (ff_file *)f;

	p->real->pMethods->xShmBarrier(p->real);
}

static int ff_shm_unmap(sqlite3_file *f, int del)
{
	ff_file *p = (ff_file *)f;

	return p->real->pMethods->xShmUnmap(p->real, del);
}

static int ff_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
		   int *out_flags)
{
	ff_file *p = (ff_file *)f;
	int rc;

	(void)vfs;
	p->real = (sqlite3_file *)(p + 1);
	memset(p->real, 0, (size_t)unix_vfs->szOsFile);
	rc = unix_vfs->xOpen(unix_vfs, name, p->real, flags, out_flags);
	/* No methods: SQLite calls no xClose on a file that failed to open. */
	p->base.pMethods = p->real->pMethods ? &ff_io : NULL;
	return rc;
}

static int ff_delete(sqlite3_vfs *v, const char *name, int sync)
{
	(void)v;
	return unix_vfs->xDelete(unix_vfs, name, sync);
}

static int ff_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
	(void)v;
	return unix_vfs->xAccess(unix_vfs, name, flags, out);
}

static int ff_fullpath(sqlite3_vfs *v, const char *name, int n, char *out)
{
	(void)v;
	return unix_vfs->xFullPathname(unix_vfs, name, n, out);
}

static int ff_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return unix_vfs->xRandomness(unix_vfs, n, out);
}

static int ff_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return unix_vfs->xSleep(unix_vfs, us);
}

static int ff_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return unix_vfs->xCurrentTime(unix_vfs, out);
}

static int ff_last_error(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return unix_vfs->xGetLastError(unix_vfs, n, out);
}

static int ff_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return unix_vfs->xCurrentTimeInt64(unix_vfs, out);
}

/* Registers the faulty VFS as the default, once. */
static void ff_register(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	unix_vfs = sqlite3_vfs_find("unix");
	assert_non_null(unix_vfs);
	ff_io.iVersion = 2;
	ff_io.xClose = ff_close;
	ff_io.xRead = ff_read;
	ff_io.xWrite = ff_write;
	ff_io.xTruncate = ff_truncate;
	ff_io.xSync = ff_sync;
	ff_io.xFileSize = ff_size;
	ff_io.xLock = ff_lock;
	ff_io.xUnlock = ff_unlock;
	ff_io.xCheckReservedLock = ff_check_lock;
	ff_io.xFileControl = ff_fcntl;
	ff_io.xSectorSize = ff_sector;
	ff_io.xDeviceCharacteristics = ff_devchar;
	ff_io.xShmMap = ff_shm_map;
	ff_io.xShmLock = ff_shm_lock;
	ff_io.xShmBarrier = ff_shm_barrier;
	ff_io.xShmUnmap = ff_shm_unmap;
	ff_vfs.iVersion = 2;
	ff_vfs.szOsFile = (int)sizeof(ff_file) + unix_vfs->szOsFile;
	ff_vfs.mxPathname = unix_vfs->mxPathname;
	ff_vfs.zName = "faulty";
	ff_vfs.xOpen = ff_open;
	ff_vfs.xDelete = ff_delete;
	ff_vfs.xAccess = ff_access;
	ff_vfs.xFullPathname = ff_fullpath;
	ff_vfs.xRandomness = ff_random;
	ff_vfs.xSleep = ff_sleep;
	ff_vfs.xCurrentTime = ff_time;
	ff_vfs.xGetLastError = ff_last_error;
	ff_vfs.xCurrentTimeInt64 = ff_time64;
	assert_int_equal(sqlite3_vfs_register(&ff_vfs, 1), SQLITE_OK);
}

/* ---- fixture ------------------------------------------------------------- */

typedef struct fx {
	char dir[64];
	char path[128];
	es_store *st;
	sqlite3 *locker;  /* another connection, holding the write lock */
	int notified;
} fx;

static void on_notify(void *user)
{
	((fx *)user)->notified++;
}

static void open_store(fx *f, int repair)
{
	char err[512] = "";
	es_err rc;

	es_store_close(f->st);
	f->st = NULL;
	rc = repair ? es_store_open_repair(f->path, &f->st, err, sizeof(err)) :
		      es_store_open(f->path, &f->st, err, sizeof(err));
	if (rc != ES_OK)
		fail_msg("open %s: %s", f->path, err);
	es_store_set_notify(f->st, on_notify, f);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	ff_register();
	write_fault = SQLITE_OK;
	es_test_tmpdir(f->dir, sizeof(f->dir), "store-faults", f->path,
		       sizeof(f->path), "agent.db");
	open_store(f, 1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	write_fault = SQLITE_OK;
	if (f->locker)
		sqlite3_close(f->locker);
	es_store_close(f->st);
	es_test_rmtree(f->dir);
	free(f);
	return 0;
}

/* Another connection takes the database's write lock (BEGIN IMMEDIATE, as
 * `BEGIN EXCLUSIVE` does in WAL mode) and keeps it until unlock(). */
static void lock_db(fx *f)
{
	assert_int_equal(sqlite3_open(f->path, &f->locker), SQLITE_OK);
	assert_int_equal(sqlite3_exec(f->locker, "BEGIN IMMEDIATE", NULL, NULL, NULL),
			 SQLITE_OK);
}

static void unlock_db(fx *f)
{
	assert_int_equal(sqlite3_exec(f->locker, "ROLLBACK", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_close(f->locker), SQLITE_OK);
	f->locker = NULL;
}

#define OBJ(kind, name, uid) \
	"{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"" kind "\"," \
	"\"metadata\":{\"name\":\"" name "\",\"uid\":\"" uid "\"," \
	"\"generation\":1,\"resourceVersion\":7},\"spec\":{\"pad\":" \
	"\"0123456789012345678901234567890123456789\"}}"

static void commit_objects(es_store *st)
{
	cJSON *msg = es_test_json("{\"full\":true,\"resourceVersion\":7,\"objects\":["
				  OBJ("HealthRule", "a", "u1") ","
				  OBJ("HealthRule", "b", "u2") ","
				  OBJ("CollectorConfig", "c", "u3") "]}");

	assert_int_equal(es_store_desired_commit(st, msg), ES_OK);
	cJSON_Delete(msg);
}

static int64_t get_int(es_store *st, const char *key, int64_t def)
{
	int64_t v = -1;

	assert_int_equal(es_store_get_int(st, key, def, &v), ES_OK);
	return v;
}

static int n_desired(es_store *st)
{
	cJSON *list = NULL;
	int n;

	assert_int_equal(es_store_desired_list(st, &list), ES_OK);
	n = cJSON_GetArraySize(list);
	cJSON_Delete(list);
	return n;
}

static void put_event(es_store *st, int n, size_t max)
{
	char text[64];
	cJSON *ev;

	snprintf(text, sizeof(text), "{\"reason\":\"E%d\"}", n);
	ev = es_test_json(text);
	assert_int_equal(es_store_outbox_put_event(st, ev, 1000 + n, max, NULL), ES_OK);
	cJSON_Delete(ev);
}

/* The outbox as "seq:doc,seq:doc". */
static void outbox(es_store *st, char *buf, size_t sz)
{
	es_outbox_row row;
	int64_t after = 0;
	size_t n = 0;

	buf[0] = '\0';
	while (es_store_outbox_next(st, after, &row) == ES_OK) {
		n += (size_t)snprintf(buf + n, sz - n, "%s%lld:%s", n ? "," : "",
				      (long long)row.seq, row.doc);
		after = row.seq;
		es_outbox_row_free(&row);
	}
}

/* Moved-aside databases in f->dir (not their -wal/-shm), and the first. */
static int count_aside(fx *f, char *first, size_t firstsz)
{
	struct dirent *de;
	DIR *d = opendir(f->dir);
	int n = 0;

	assert_non_null(d);
	if (first)
		first[0] = '\0';
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "agent.db.corrupt-", 17) != 0 ||
		    (len > 4 && (!strcmp(de->d_name + len - 4, "-wal") ||
				 !strcmp(de->d_name + len - 4, "-shm"))))
			continue;
		if (first && (!first[0] || strcmp(de->d_name, first) < 0))
			snprintf(first, firstsz, "%s", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* Overwrites page (1-based) of the closed database at path with garbage. */
static void damage_page(const char *path, int64_t page, int64_t page_size)
{
	char *junk = malloc((size_t)page_size);
	int fd = open(path, O_WRONLY);

	assert_non_null(junk);
	assert_true(fd >= 0);
	for (int64_t i = 0; i < page_size; i++)
		junk[i] = (char)(0xA5 ^ (i * 31));
	assert_int_equal(pwrite(fd, junk, (size_t)page_size, (page - 1) * page_size),
			 page_size);
	close(fd);
	free(junk);
}

/* The root page of table and the page size of the (closed) database. */
static void table_page(const char *path, const char *table, int64_t *page,
		       int64_t *page_size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT rootpage, (SELECT page_size FROM"
					    " pragma_page_size) FROM sqlite_schema"
					    " WHERE name = ?1", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	*page = sqlite3_column_int64(s, 0);
	*page_size = sqlite3_column_int64(s, 1);
	sqlite3_finalize(s);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* A rebuilt store is a new one: nothing of the old file, and the health
 * says where the old file went. */
static void assert_rebuilt(fx *f)
{
	es_store_health h;
	struct stat sb;
	char first[256];

	es_store_health_get(f->st, &h);
	assert_true(h.rebuilt);
	assert_int_equal(h.fault, ES_STORE_FAULT_NONE);
	assert_non_null(strstr(h.moved_to, "/agent.db.corrupt-"));
	assert_int_equal(stat(h.moved_to, &sb), 0);
	assert_int_equal(count_aside(f, first, sizeof(first)), 1);
	assert_non_null(strstr(h.moved_to, first));
	assert_int_equal(n_desired(f->st), 0);
	assert_int_equal(get_int(f->st, "desired_rv", 0), 0);
	assert_int_equal(get_int(f->st, "next_seq", 1), 1);
	/* It takes writes like a new store; its first report is seq 1. */
	put_event(f->st, 1, 1000);
	{
		char buf[128];

		outbox(f->st, buf, sizeof(buf));
		assert_string_equal(buf, "1:{\"reason\":\"E1\"}");
	}
}

/* ---- damaged files ------------------------------------------------------ */

static void test_garbage_moved_aside(void **state)
{
	fx *f = *state;
	char text[4096], *moved;
	size_t n = 0;
	es_store_health h;

	es_store_close(f->st);
	f->st = NULL;
	memset(text, 'x', sizeof(text));
	write_file(f->path, text, sizeof(text));
	open_store(f, 1);
	assert_rebuilt(f);
	/* Moved, byte for byte. */
	es_store_health_get(f->st, &h);
	moved = es_test_slurp(h.moved_to, &n);
	assert_int_equal(n, sizeof(text));
	assert_memory_equal(moved, text, sizeof(text));
	free(moved);
	assert_string_equal(h.rebuilt_why, "file is not a database");
	/* A full desired list ends the rebuilt state. */
	commit_objects(f->st);
	es_store_health_get(f->st, &h);
	assert_false(h.rebuilt);
	assert_int_equal(h.rebuilds, 1);
}

static void test_truncated_moved_aside_with_log(void **state)
{
	fx *f = *state;
	char wal[160], moved_wal[300];
	struct stat sb;
	es_store_health h;
	int i;

	commit_objects(f->st);
	for (i = 0; i < 200; i++)
		put_event(f->st, i, 1000);
	es_store_close(f->st);
	f->st = NULL;
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(truncate(f->path, sb.st_size / 2), 0);
	/* A log left beside it must go with it, not into the new file. */
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	write_file(wal, "not a log", 9);
	open_store(f, 1);
	assert_rebuilt(f);
	es_store_health_get(f->st, &h);
	snprintf(moved_wal, sizeof(moved_wal), "%s-wal", h.moved_to);
	assert_int_equal(stat(moved_wal, &sb), 0);
	assert_int_equal(sb.st_size, 9);
}

static void test_damaged_page_found_at_open(void **state)
{
	fx *f = *state;
	int64_t page = 0, psz = 0;

	commit_objects(f->st);
	es_store_close(f->st);
	f->st = NULL;
	table_page(f->path, "desired", &page, &psz);
	damage_page(f->path, page, psz);
	open_store(f, 1);
	assert_rebuilt(f);
}

/* At run time: the first read that meets the damage tells the owner, and
 * es_store_rebuild replaces the file under the same store object. */
static void test_damaged_page_found_at_run_time(void **state)
{
	fx *f = *state;
	int64_t page = 0, psz = 0;
	es_store_health h;
	cJSON *list = NULL;
	char err[512] = "", buf[256];

	commit_objects(f->st);
	es_store_close(f->st);
	f->st = NULL;
	table_page(f->path, "desired", &page, &psz);
	damage_page(f->path, page, psz);
	open_store(f, 0);  /* no check: as if it broke while open */
	put_event(f->st, 1, 1000);
	assert_int_equal(es_store_desired_list(f->st, &list), ES_ERR_DB);
	assert_null(list);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_CORRUPT);
	assert_int_equal(f->notified, 1);
	/* Meanwhile reports are held, not lost. */
	put_event(f->st, 2, 1000);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.held_events, 1);
	assert_int_equal(es_store_flush(f->st), ES_ERR_STATE);
	assert_int_equal(es_store_rebuild(f->st, NULL, err, sizeof(err)), ES_OK);
	es_store_health_get(f->st, &h);
	assert_true(h.rebuilt);
	assert_string_equal(h.rebuilt_why, "database disk image is malformed");
	assert_int_equal(es_store_flush(f->st), ES_OK);
	outbox(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1:{\"reason\":\"E2\"}");
	assert_int_equal(n_desired(f->st), 0);
	assert_int_equal(count_aside(f, NULL, 0), 1);
}

/* A stored document that does not parse is damage too. */
static void test_bad_document_is_damage(void **state)
{
	fx *f = *state;
	sqlite3 *db = NULL;
	cJSON *list = NULL;
	es_store_health h;

	commit_objects(f->st);
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE desired SET body = '{\"kind\":'"
				      " WHERE name = 'a'", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	assert_int_equal(es_store_desired_list(f->st, &list), ES_ERR_DB);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_CORRUPT);
	assert_int_equal(f->notified, 1);
}

/* Only the newest ES_STORE_CORRUPT_KEEP moved-aside sets stay, however
 * often the file is replaced (here within one second: "-2", "-3" ...). */
static void test_few_kept(void **state)
{
	fx *f = *state;
	char err[512] = "", first[256], oldest[300], oldest_wal[320];
	es_store_health h;
	int i;

	for (i = 0; i < 6; i++) {
		put_event(f->st, i, 1000);
		assert_int_equal(es_store_rebuild(f->st, "test", err, sizeof(err)), ES_OK);
		if (i == 0) {
			es_store_health_get(f->st, &h);
			snprintf(oldest, sizeof(oldest), "%s", h.moved_to);
			snprintf(oldest_wal, sizeof(oldest_wal), "%s-wal", h.moved_to);
			write_file(oldest_wal, "log", 3);
		}
	}
	assert_int_equal(count_aside(f, first, sizeof(first)), ES_STORE_CORRUPT_KEEP);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.rebuilds, 6);
	assert_string_equal(h.rebuilt_why, "test");
	/* The oldest went, with its log. */
	assert_int_not_equal(access(oldest, F_OK), 0);
	assert_int_not_equal(access(oldest_wal, F_OK), 0);
}

/* Not damaged, so still refused and untouched: a newer database. */
static void test_newer_still_refused(void **state)
{
	fx *f = *state;
	sqlite3 *db = NULL;
	es_store *st = NULL;
	char err[512] = "";

	es_store_close(f->st);
	f->st = NULL;
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	assert_int_equal(es_store_open_repair(f->path, &st, err, sizeof(err)),
			 ES_ERR_UNSUPPORTED);
	assert_null(st);
	assert_non_null(strstr(err, "newer"));
	assert_int_equal(count_aside(f, NULL, 0), 0);
}

/* ---- writes that cannot be done now ------------------------------------- */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_busy_held_then_flushed_in_order(void **state)
{
	fx *f = *state;
	es_store_health h;
	int64_t depth = 0, seq = -1, dropped = -1;
	char buf[512];
	double t0;
	cJSON *s = es_test_json("{}");

	commit_objects(f->st);
	put_event(f->st, 0, 1000);
	lock_db(f);
	t0 = now_s();
	put_event(f->st, 1, 1000);
	assert_int_equal(es_store_outbox_put_state(f->st, "{\"n\":1}", 2001, &seq), ES_OK);
	assert_int_equal(seq, 0);
	put_event(f->st, 2, 1000);
	assert_int_equal(es_store_outbox_put_state(f->st, "{\"n\":2}", 2002, NULL), ES_OK);
	/* One wait of the busy timeout, then at once. */
	assert_int_equal(es_store_status_put(f->st, "HealthRule", "a", s), ES_ERR_DB);
	assert_true(now_s() - t0 < 4 * ES_STORE_BUSY_MS / 1000.0);
	assert_int_equal(f->notified, 1);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_BUSY);
	assert_string_equal(h.error, "database is locked");
	assert_true(h.since > 0);
	assert_int_equal(h.held_events, 2);
	assert_true(h.held_state);
	/* Truthful while held: one stored event, two held, one held state. */
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 4);
	assert_int_equal(es_store_dropped(f->st, &dropped), ES_OK);
	assert_int_equal(dropped, 0);
	/* Reads go on. */
	assert_int_equal(n_desired(f->st), 3);
	assert_int_equal(es_store_flush(f->st), ES_ERR_DB);
	unlock_db(f);
	assert_int_equal(es_store_flush(f->st), ES_OK);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_NONE);
	assert_int_equal(h.held_events, 0);
	assert_false(h.held_state);
	outbox(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1:{\"reason\":\"E0\"},2:{\"reason\":\"E1\"},"
			    "3:{\"reason\":\"E2\"},4:{\"n\":2}");
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 4);
	assert_int_equal(es_store_status_put(f->st, "HealthRule", "a", s), ES_OK);
	cJSON_Delete(s);
}

/* A held state that will replace an unsent state row counts once. */
static void test_depth_counts_held_state_once(void **state)
{
	fx *f = *state;
	int64_t depth = 0;

	assert_int_equal(es_store_outbox_put_state(f->st, "{\"n\":1}", 1, NULL), ES_OK);
	lock_db(f);
	assert_int_equal(es_store_outbox_put_state(f->st, "{\"n\":2}", 2, NULL), ES_OK);
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 1);
	unlock_db(f);
	assert_int_equal(es_store_flush(f->st), ES_OK);
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 1);
}

/* Held events are bounded (ES_STORE_HELD_EVENTS, or max_events when
 * smaller): the oldest go, counted at once and in the file after the flush. */
static void test_held_bounded_and_counted(void **state)
{
	fx *f = *state;
	int64_t dropped = 0, depth = 0;
	es_store_health h;
	char buf[256];
	int i;

	lock_db(f);
	for (i = 0; i < ES_STORE_HELD_EVENTS + 10; i++)
		put_event(f->st, i, 1000);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.held_events, ES_STORE_HELD_EVENTS);
	assert_int_equal(h.held_dropped, 10);
	assert_int_equal(es_store_dropped(f->st, &dropped), ES_OK);
	assert_int_equal(dropped, 10);
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, ES_STORE_HELD_EVENTS);
	/* A smaller max-events bounds what is held too. */
	for (i = 0; i < 5; i++)
		put_event(f->st, 100 + i, 3);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.held_events, 3);
	assert_int_equal(h.held_dropped, 10 + ES_STORE_HELD_EVENTS + 2);
	unlock_db(f);
	assert_int_equal(es_store_flush(f->st), ES_OK);
	outbox(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1:{\"reason\":\"E102\"},2:{\"reason\":\"E103\"},"
			    "3:{\"reason\":\"E104\"}");
	open_store(f, 1);
	assert_int_equal(es_store_dropped(f->st, &dropped), ES_OK);
	assert_int_equal(dropped, 10 + ES_STORE_HELD_EVENTS + 2);
}

/* An ack during a fault is held: the outbox reads as if it were written
 * (rows skipped, the state row it covers the patch base, depth), and the
 * flush writes it before the held reports. */
static void test_ack_held_during_fault(void **state)
{
	fx *f = *state;
	int64_t seq = 0, bseq = 0, depth = 0;
	es_outbox_row row;
	cJSON *doc = NULL;
	char buf[256];

	put_event(f->st, 1, 1000);
	assert_int_equal(es_store_outbox_put_state(f->st, "{\"n\":1}", 1, &seq), ES_OK);
	assert_int_equal(seq, 2);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 2, "s2"), ES_OK);
	put_event(f->st, 3, 1000);
	lock_db(f);
	put_event(f->st, 4, 1000);
	assert_int_equal(es_store_set_int(f->st, "x", 1), ES_ERR_DB);
	assert_int_equal(es_store_outbox_ack(f->st, 2), ES_OK);
	assert_int_equal(es_store_outbox_ack(f->st, 1), ES_OK);
	assert_int_equal(es_store_outbox_next(f->st, 0, &row), ES_OK);
	assert_int_equal(row.seq, 3);
	es_outbox_row_free(&row);
	assert_int_equal(es_store_base_get(f->st, &bseq, &doc), ES_OK);
	assert_int_equal(bseq, 2);
	assert_int_equal(cJSON_GetObjectItem(doc, "n")->valueint, 1);
	cJSON_Delete(doc);
	/* Row 3 and the held event. */
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 2);
	unlock_db(f);
	assert_int_equal(es_store_flush(f->st), ES_OK);
	outbox(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "3:{\"reason\":\"E3\"},4:{\"reason\":\"E4\"}");
	assert_int_equal(es_store_base_get(f->st, &bseq, &doc), ES_OK);
	assert_int_equal(bseq, 2);
	cJSON_Delete(doc);
	/* An ack that changes nothing needs no write. */
	lock_db(f);
	assert_int_equal(es_store_outbox_ack(f->st, 2), ES_OK);
	{
		es_store_health h;

		es_store_health_get(f->st, &h);
		assert_int_equal(h.fault, ES_STORE_FAULT_NONE);
	}
	unlock_db(f);
}

static void test_full_held_then_flushed(void **state)
{
	fx *f = *state;
	es_store_health h;
	char buf[256];

	put_event(f->st, 1, 1000);
	write_fault = SQLITE_FULL;
	put_event(f->st, 2, 1000);
	assert_int_equal(es_store_outbox_put_state(f->st, "{\"n\":1}", 5, NULL), ES_OK);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_FULL);
	assert_string_equal(h.error, "database or disk is full");
	assert_int_equal(h.held_events, 1);
	/* However long it lasts: never counted as damage. */
	for (int i = 0; i < 2 * ES_STORE_IOERR_LIMIT; i++)
		assert_int_equal(es_store_flush(f->st), ES_ERR_DB);
	write_fault = SQLITE_OK;
	assert_int_equal(es_store_flush(f->st), ES_OK);
	outbox(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1:{\"reason\":\"E1\"},2:{\"reason\":\"E2\"},3:{\"n\":1}");
	assert_int_equal(f->notified, 1);
}

static void test_io_errors_that_persist_are_damage(void **state)
{
	fx *f = *state;
	es_store_health h;
	char err[512] = "", buf[256];
	int i;

	write_fault = SQLITE_IOERR_WRITE;
	put_event(f->st, 1, 1000);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_IO);
	for (i = 1; i < ES_STORE_IOERR_LIMIT; i++)
		assert_int_equal(es_store_flush(f->st), ES_ERR_DB);
	assert_int_equal(es_store_flush(f->st), ES_ERR_STATE);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_CORRUPT);
	assert_int_equal(f->notified, 2);
	write_fault = SQLITE_OK;
	assert_int_equal(es_store_rebuild(f->st, NULL, err, sizeof(err)), ES_OK);
	es_store_health_get(f->st, &h);
	assert_string_equal(h.rebuilt_why, "I/O errors on every write");
	assert_int_equal(es_store_flush(f->st), ES_OK);
	outbox(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1:{\"reason\":\"E1\"}");
}

/* A rebuild that cannot make the new file leaves the store without a
 * connection; the next flush makes it. */
static void test_rebuild_retried_by_flush(void **state)
{
	fx *f = *state;
	es_store_health h;
	char err[512] = "";
	cJSON *list = NULL;

	write_fault = SQLITE_IOERR_WRITE;
	assert_int_equal(es_store_rebuild(f->st, "test", err, sizeof(err)), ES_ERR_DB);
	es_store_health_get(f->st, &h);
	assert_int_equal(h.fault, ES_STORE_FAULT_IO);
	assert_int_equal(es_store_desired_list(f->st, &list), ES_ERR_DB);
	put_event(f->st, 1, 1000);
	assert_int_equal(es_store_flush(f->st), ES_ERR_DB);
	write_fault = SQLITE_OK;
	assert_int_equal(es_store_flush(f->st), ES_OK);
	assert_int_equal(n_desired(f->st), 0);
	{
		char buf[128];

		outbox(f->st, buf, sizeof(buf));
		assert_string_equal(buf, "1:{\"reason\":\"E1\"}");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_garbage_moved_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_moved_aside_with_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_page_found_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_page_found_at_run_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_document_is_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_few_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_still_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_held_then_flushed_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_depth_counts_held_state_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_bounded_and_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_held_during_fault, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_held_then_flushed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_io_errors_that_persist_are_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_retried_by_flush, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
