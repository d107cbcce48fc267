/*
 * store_fault.c - the store's faults (store.h, "Faults"): the fault episode
 * the connection's failures start, ending it by writing what is held, and
 * replacing a damaged file with a new one (the same opening as a new store:
 * store__connect).
 *
 * Invariants: st->fault is NONE only while writes may go to the file;
 * ES_STORE_FAULT_CORRUPT stays until es_store_rebuild; a damaged file is
 * never deleted by the rebuild that replaces it, only moved aside, and of
 * the moved-aside sets only the ES_STORE_CORRUPT_KEEP newest are kept.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "es_fs.h"
#include "es_log.h"
#include "store/store_int.h"

/* What a failure with primary result code code says about the file. */
static es_store_fault classify(int code)
{
	switch (code) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return ES_STORE_FAULT_BUSY;
	case SQLITE_FULL:
		return ES_STORE_FAULT_FULL;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
	case SQLITE_READONLY:
	case SQLITE_PROTOCOL:
		return ES_STORE_FAULT_IO;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return ES_STORE_FAULT_CORRUPT;
	default:
		return ES_STORE_FAULT_NONE;
	}
}

static const char *const fault_names[] = {
	"none", "busy", "full", "io", "corrupt",
};

/* Sets the episode's fault (CORRUPT is kept until a rebuild) and tells the
 * owner when the episode begins or the file turns out damaged. */
static void set_fault(es_store *st, es_store_fault f, const char *error)
{
	es_store_fault was = st->fault;

	if (f == ES_STORE_FAULT_NONE || was == ES_STORE_FAULT_CORRUPT)
		return;
	st->fault = f;
	st->fault_error = error;
	if (was == ES_STORE_FAULT_NONE)
		st->fault_since = time(NULL);
	if (was == f)
		return;
	es_log_warn("store", f == ES_STORE_FAULT_CORRUPT ? "database damaged" :
		    "database cannot be written: holding reports in memory",
		    "path", st->path, "fault", fault_names[f], "error", error, NULL);
	if (st->notify)
		st->notify(st->notify_user);
}

void store__fault(void *ud, int code)
{
	es_store *st = ud;

	set_fault(st, classify(code), sqlite3_errstr(code));
}

int store__writable(const es_store *st)
{
	return st->db && st->fault == ES_STORE_FAULT_NONE && !st->held_n &&
	       !st->held_state && !st->acked_held;
}

/* PRAGMA quick_check(1) on the open connection: ES_OK when it says "ok";
 * ES_ERR_DB with its first finding (or SQLite's error, *code set) in why. */
static es_err quick_check(es_store *st, int *code, char *why, size_t whysz)
{
	sqlite3_stmt *s = NULL;
	const unsigned char *t;
	es_err rc = ES_ERR_DB;
	int r;

	*code = SQLITE_OK;
	if (sqlite3_prepare_v2(st->db->h, "PRAGMA quick_check(1)", -1, &s, NULL) !=
	    SQLITE_OK) {
		*code = sqlite3_errcode(st->db->h) & 0xff;
		snprintf(why, whysz, "%s", sqlite3_errmsg(st->db->h));
		goto cleanup;
	}
	r = sqlite3_step(s);
	t = r == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
	if (r == SQLITE_ROW && t && strcmp((const char *)t, "ok") == 0) {
		rc = ES_OK;
	} else if (r == SQLITE_ROW) {
		*code = SQLITE_CORRUPT;
		snprintf(why, whysz, "integrity check: %s", t ? (const char *)t : "?");
	} else {
		*code = sqlite3_errcode(st->db->h) & 0xff;
		snprintf(why, whysz, "%s", sqlite3_errmsg(st->db->h));
	}
cleanup:
	sqlite3_finalize(s);
	return rc;
}

/* The directory of path and the name in it ("." and path for a bare name). */
static void split_path(const char *path, char *dir, size_t dirsz,
		       const char **base)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	if (!slash)
		snprintf(dir, dirsz, ".");
	else if (slash == path)
		snprintf(dir, dirsz, "/");
	else
		snprintf(dir, dirsz, "%.*s", (int)(slash - path), path);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when name is a moved-aside database of base ("<base>.corrupt-..."), not
 * its -wal or -shm file. */
static int is_aside(const char *name, const char *base)
{
	static const char infix[] = ".corrupt-";
	size_t nb = strlen(base), n = strlen(name);

	if (strncmp(name, base, nb) != 0 ||
	    strncmp(name + nb, infix, sizeof(infix) - 1) != 0)
		return 0;
	return n < 4 || (strcmp(name + n - 4, "-wal") != 0 &&
			 strcmp(name + n - 4, "-shm") != 0);
}

/* Deletes the oldest moved-aside sets of st->path (names sort by time) so
 * that at most keep remain. Failures are logged, not returned: a set left
 * over costs space, not correctness. */
static void prune_aside(es_store *st, size_t keep)
{
	char dir[4096], victim[4200];
	const char *base;
	char **names = NULL, **grown;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;

	split_path(st->path, dir, sizeof(dir), &base);
	d = opendir(dir);
	if (!d) {
		es_log_warn("store", "cannot list the state directory", "path", dir,
			    "error", strerror(errno), NULL);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!is_aside(de->d_name, base))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown)
				break;
			names = grown;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; n > keep && i < n - keep; i++) {
		static const char *const suffix[] = { "", "-wal", "-shm" };

		for (size_t k = 0; k < 3; k++) {
			snprintf(victim, sizeof(victim), "%s/%s%s", dir, names[i], suffix[k]);
			if (unlink(victim) == 0)
				es_log_info("store", "old damaged database deleted",
					    "path", victim, NULL);
			else if (errno != ENOENT)
				es_log_warn("store", "cannot delete an old damaged database",
					    "path", victim, "error", strerror(errno), NULL);
		}
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Renames from+suffix to to+suffix; a missing source is fine. */
static es_err move_one(const char *from, const char *to, const char *suffix,
		       char *err, size_t errsz)
{
	char a[4200], b[4250];

	snprintf(a, sizeof(a), "%s%s", from, suffix);
	snprintf(b, sizeof(b), "%s%s", to, suffix);
	if (rename(a, b) == 0 || errno == ENOENT)
		return ES_OK;
	return es_errf(ES_ERR_IO, err, errsz, "%s: cannot move it aside to %s: %s",
		       a, b, strerror(errno));
}

/* Moves the (closed) database at st->path and its -wal and -shm files to
 * "<path>.corrupt-<UTC time>[-N]", keeping ES_STORE_CORRUPT_KEEP sets;
 * st->moved_to gets the name. Errors: ES_ERR_IO, ES_ERR_NOMEM. */
static es_err move_aside(es_store *st, char *err, size_t errsz)
{
	char stamp[32], to[4200], e2[160];
	struct stat sb;
	struct tm tm;
	time_t now = time(NULL);
	es_err rc;
	int i;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(to, sizeof(to), "%s.corrupt-%s", st->path, stamp);
	for (i = 2; lstat(to, &sb) == 0 && i < 100; i++)
		snprintf(to, sizeof(to), "%s.corrupt-%s-%d", st->path, stamp, i);
	prune_aside(st, ES_STORE_CORRUPT_KEEP - 1);
	/* The log first: the new file must never meet the old log. */
	rc = move_one(st->path, to, "-wal", err, errsz);
	if (rc == ES_OK)
		rc = move_one(st->path, to, "-shm", err, errsz);
	if (rc == ES_OK)
		rc = move_one(st->path, to, "", err, errsz);
	if (rc != ES_OK)
		return rc;
	if (es_fs_sync_parent(st->path, e2, sizeof(e2)) != ES_OK)
		es_log_warn("store", "moved aside, not yet durable", "error", e2, NULL);
	free(st->moved_to);
	st->moved_to = strdup(to);
	return st->moved_to ? ES_OK : ES_ERR_NOMEM;
}

/* Records a rebuild that moved a file damaged because of why. */
static void note_rebuilt(es_store *st, const char *why)
{
	char *copy = strdup(why && *why ? why : "damaged");

	free(st->rebuilt_why);
	st->rebuilt_why = copy;
	st->rebuilt = 1;
	st->rebuilt_at = time(NULL);
	st->rebuilds++;
	st->full_pending = 0;
	st->changes++;
	/* An ack of the old file's reports means nothing to the new one. */
	st->acked_held = 0;
	es_log_error("store", "database damaged: moved aside and replaced with a new"
		     " empty one; the desired state comes again from the controller",
		     "path", st->path, "movedTo", st->moved_to ? st->moved_to : "",
		     "error", copy ? copy : why, NULL);
}

es_err store__connect(es_store *st, int check, int repair, char *err,
		      size_t errsz)
{
	char why[256] = "";
	int code = SQLITE_OK;
	es_err rc;

	rc = store__open_db(st, &code, err, errsz);
	if (rc == ES_OK && check && quick_check(st, &code, why, sizeof(why)) != ES_OK) {
		es_sqlite_close_as_is(st->db);
		st->db = NULL;
		rc = es_errf(ES_ERR_DB, err, errsz, "%s: %s", st->path, why);
	} else if (rc != ES_OK) {
		/* SQLite's words: err also names the path. */
		snprintf(why, sizeof(why), "%s", sqlite3_errstr(code));
	}
	if (rc == ES_OK || !repair || rc != ES_ERR_DB ||
	    classify(code) != ES_STORE_FAULT_CORRUPT)
		return rc;
	rc = move_aside(st, err, errsz);
	if (rc != ES_OK)
		return rc;
	/* The old file is gone: whatever follows, this is a new store. */
	note_rebuilt(st, why);
	return store__open_db(st, &code, err, errsz);
}

void es_store_health_get(const es_store *st, es_store_health *h)
{
	memset(h, 0, sizeof(*h));
	h->error = "";
	h->path = "";
	if (!st)
		return;
	h->path = st->path;
	h->fault = st->fault;
	h->since = st->fault_since;
	h->error = st->fault_error ? st->fault_error : "";
	h->held_events = st->held_n;
	h->held_state = st->held_state != NULL;
	h->held_dropped = st->held_dropped;
	h->rebuilt = st->rebuilt;
	h->rebuilt_at = st->rebuilt_at;
	h->rebuilt_why = st->rebuilt_why ? st->rebuilt_why : "";
	h->moved_to = st->moved_to ? st->moved_to : "";
	h->rebuilds = st->rebuilds;
}

void es_store_set_notify(es_store *st, es_store_notify_fn fn, void *user)
{
	if (!st)
		return;
	st->notify = fn;
	st->notify_user = user;
}

/* The episode is over. */
static void clear_fault(es_store *st)
{
	if (st->fault != ES_STORE_FAULT_NONE)
		es_log_info("store", "database writable again", "path", st->path, NULL);
	st->fault = ES_STORE_FAULT_NONE;
	st->fault_since = 0;
	st->fault_error = "";
	st->io_flushes = 0;
}

es_err es_store_flush(es_store *st)
{
	char err[512];
	es_err rc;

	if (!st)
		return ES_ERR_INVAL;
	if (st->fault == ES_STORE_FAULT_CORRUPT)
		return ES_ERR_STATE;
	if (!st->db) {
		rc = store__connect(st, 1, 1, err, sizeof(err));
		if (rc != ES_OK) {
			es_log_warn("store", "cannot open the database", "error", err, NULL);
			set_fault(st, ES_STORE_FAULT_IO, "cannot open the database");
			goto failed;
		}
	}
	if (store__writable(st))
		return ES_OK;
	rc = es_sqlite_begin(st->db);
	if (rc == ES_OK)
		rc = es_sqlite_end(st->db, store__flush_held(st));
	if (rc == ES_OK) {
		store__held_clear(st);
		clear_fault(st);
		return ES_OK;
	}
failed:
	if (st->fault == ES_STORE_FAULT_IO && ++st->io_flushes >= ES_STORE_IOERR_LIMIT)
		set_fault(st, ES_STORE_FAULT_CORRUPT, st->db ?
			  "I/O errors on every write" :
			  "the database cannot be opened");
	return st->fault == ES_STORE_FAULT_CORRUPT ? ES_ERR_STATE : rc;
}

es_err es_store_rebuild(es_store *st, const char *why, char *err, size_t errsz)
{
	char reason[256];
	es_err rc;

	if (!st)
		return es_errf(ES_ERR_INVAL, err, errsz, "store: none");
	snprintf(reason, sizeof(reason), "%s", why ? why :
		 st->fault_error && *st->fault_error ? st->fault_error : "damaged");
	/* Moved aside as it is: no checkpoint into a damaged file. */
	es_sqlite_close_as_is(st->db);
	st->db = NULL;
	rc = move_aside(st, err, errsz);
	if (rc == ES_OK) {
		note_rebuilt(st, reason);
		rc = store__connect(st, 0, 0, err, errsz);
	}
	if (rc != ES_OK) {
		/* No connection: the next flush opens (and checks) it again. */
		st->fault = ES_STORE_FAULT_IO;
		st->fault_error = rc == ES_ERR_IO ? "cannot move the damaged database aside" :
			"cannot create a new database";
		if (!st->fault_since)
			st->fault_since = time(NULL);
		st->io_flushes = 0;
		return rc;
	}
	clear_fault(st);
	return ES_OK;
}
