/*
 * store.c - the agent's SQLite database (store.h): schema and opening (the
 * SQLite plumbing is lib/es_sqlite.c), cursors, desired objects and their
 * status. The outbox is in store_outbox.c, faults and rebuilds in
 * store_fault.c.
 *
 * Invariants kept here:
 * - meta holds the integer cursors "desired_rv", "next_seq" and
 *   "reports_dropped", and the text "stream_id", made at the first open.
 * - status(kind, name) references desired(kind, name) ON DELETE CASCADE, so
 *   a status row never outlives its object; desired rows are therefore
 *   updated in place (upsert), never replaced.
 * - The database's application_id marks it as an edgesync agent store.
 */
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_sqlite.h"
#include "store/store_int.h"

#define ST_APP_ID 0x45534147 /* "ESAG" */

/* migrations[v] brings user_version v to v + 1. */
static const char *const st_migrations[ES_STORE_SCHEMA_VERSION] = {
	"CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value);"
	"CREATE TABLE desired(kind TEXT NOT NULL, name TEXT NOT NULL, uid TEXT,"
	" generation INTEGER NOT NULL DEFAULT 0,"
	" resource_version INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL,"
	" PRIMARY KEY(kind, name));"
	"CREATE TABLE status(kind TEXT NOT NULL, name TEXT NOT NULL,"
	" body TEXT NOT NULL, PRIMARY KEY(kind, name),"
	" FOREIGN KEY(kind, name) REFERENCES desired(kind, name)"
	" ON DELETE CASCADE);"
	"CREATE TABLE outbox(seq INTEGER PRIMARY KEY, is_state INTEGER NOT NULL,"
	" doc TEXT NOT NULL, wire TEXT, created INTEGER NOT NULL);"
	"CREATE INDEX outbox_by_type ON outbox(is_state, seq);"
	"CREATE TABLE base(id INTEGER PRIMARY KEY CHECK (id = 1),"
	" seq INTEGER NOT NULL, doc TEXT NOT NULL);",
};

static const es_sqlite_schema st_schema = {
	.log = "store",
	.what = "edgesync agent database",
	.application_id = ST_APP_ID,
	.foreign_err = ES_ERR_UNSUPPORTED,
	.version = ES_STORE_SCHEMA_VERSION,
	.migrations = st_migrations,
	/* The agent reads a few rows per round; its resident memory is
	 * budgeted (README, "Installing and running it"). */
	.cache_kib = 64,
	/* The state directory may be in RAM (/var on OpenWrt) or on flash:
	 * no 4 MiB write-ahead log (SQLite's default checkpoint size). */
	.wal_kib = 1024,
	/* The event loop writes: it holds what it cannot write now and
	 * tries again later instead of waiting (store.h, "Faults"). */
	.busy_ms = ES_STORE_BUSY_MS,
};

/* Gives the store its report stream id (a random UUID) unless it has one:
 * a new database starts a new stream (PROTOCOL.md, "hello"). */
static es_err stream_id_init(es_store *st, char *err, size_t errsz)
{
	char id[37];
	sqlite3_stmt *s = NULL;
	es_err rc = es_obj_new_uid(id);

	if (rc != ES_OK)
		return es_errf(rc, err, errsz, "%s: no randomness for the report "
			       "stream id", st->db->path);
	if ((rc = es_sqlite_begin(st->db)) != ES_OK)
		goto cleanup;
	rc = es_sqlite_prepare(st->db, "INSERT OR IGNORE INTO meta(key, value)"
			       " VALUES('stream_id', ?1)", &s);
	if (rc == ES_OK && sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC) != SQLITE_OK)
		rc = es_sqlite_fail(st->db, "stream id bind");
	if (rc == ES_OK)
		rc = es_sqlite_step_done(st->db, s, "stream id");
	rc = es_sqlite_end(st->db, rc);
cleanup:
	sqlite3_finalize(s);
	if (rc != ES_OK)
		es_errf(rc, err, errsz, "%s: cannot record the report stream id: %s",
			st->db->path, sqlite3_errmsg(st->db->h));
	return rc;
}

es_err store__open_db(es_store *st, int *code, char *err, size_t errsz)
{
	es_err rc = es_sqlite_open_code(st->path, &st_schema, &st->db, code, err,
					errsz);

	if (rc != ES_OK)
		return rc;
	if (sqlite3_exec(st->db->h, "CREATE TEMP TABLE full_seen(kind TEXT NOT NULL,"
			 " name TEXT NOT NULL, PRIMARY KEY(kind, name))", NULL, NULL,
			 NULL) != SQLITE_OK) {
		*code = sqlite3_errcode(st->db->h) & 0xff;
		rc = es_errf(ES_ERR_DB, err, errsz, "%s: %s", st->path,
			     sqlite3_errmsg(st->db->h));
		es_sqlite_close(st->db);
		st->db = NULL;
		return rc;
	}
	/* A new database, a rebuilt one included, is a new report stream. */
	rc = stream_id_init(st, err, errsz);
	if (rc != ES_OK) {
		*code = sqlite3_errcode(st->db->h) & 0xff;
		es_sqlite_close(st->db);
		st->db = NULL;
		return rc;
	}
	st->db->fail_fn = store__fault;
	st->db->fail_ud = st;
	return ES_OK;
}

static es_err st_open(const char *path, int repair, es_store **out, char *err,
		      size_t errsz)
{
	es_store *st = NULL;
	es_err rc;

	if (!out || !path || !*path)
		return es_errf(ES_ERR_INVAL, err, errsz, "store: no database path");
	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
		goto cleanup;
	}
	st->fault_error = "";
	rc = store__connect(st, repair, repair, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	*out = st;
	st = NULL;
cleanup:
	es_store_close(st);
	return rc;
}

es_err es_store_open(const char *path, es_store **out, char *err, size_t errsz)
{
	return st_open(path, 0, out, err, errsz);
}

es_err es_store_open_repair(const char *path, es_store **out, char *err,
			    size_t errsz)
{
	return st_open(path, 1, out, err, errsz);
}

void es_store_close(es_store *st)
{
	char n[24];

	if (!st)
		return;
	if (st->held_n || st->held_state) {
		snprintf(n, sizeof(n), "%zu", st->held_n + (st->held_state ? 1 : 0));
		es_log_warn("store", "reports held in memory are lost: the database"
			    " could not be written", "path", st->path, "reports", n,
			    NULL);
	}
	store__held_clear(st);
	es_sqlite_close(st->db);
	free(st->path);
	free(st->rebuilt_why);
	free(st->moved_to);
	free(st);
}

es_err store__meta_get(es_store *st, const char *key, int64_t def, int64_t *out)
{
	sqlite3_stmt *s = NULL;
	es_err rc;
	int r;

	*out = def;
	rc = es_sqlite_prepare(st->db, "SELECT value FROM meta WHERE key = ?1", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "meta get bind");
		goto cleanup;
	}
	r = sqlite3_step(s);
	if (r == SQLITE_ROW) {
		if (sqlite3_column_type(s, 0) != SQLITE_INTEGER) {
			es_log_error("store", "meta value is not an integer",
				     "path", st->db->path, "key", key, NULL);
			store__fault(st, SQLITE_CORRUPT);
			rc = ES_ERR_DB;
			goto cleanup;
		}
		*out = sqlite3_column_int64(s, 0);
	} else if (r != SQLITE_DONE) {
		rc = es_sqlite_fail(st->db, "meta get");
	}
cleanup:
	sqlite3_finalize(s);
	return rc;
}

es_err store__meta_set(es_store *st, const char *key, int64_t v)
{
	sqlite3_stmt *s = NULL;
	es_err rc = es_sqlite_prepare(st->db, "INSERT INTO meta(key, value) VALUES(?1, ?2)"
			    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
			    &s);

	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 2, v) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "meta set bind");
		goto cleanup;
	}
	rc = es_sqlite_step_done(st->db, s, "meta set");
cleanup:
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_get_int(es_store *st, const char *key, int64_t def, int64_t *out)
{
	if (!st || !key || !out)
		return ES_ERR_INVAL;
	if (!st->db) {
		*out = def;
		return ES_ERR_DB;
	}
	return store__meta_get(st, key, def, out);
}

es_err es_store_stream_id(es_store *st, char *buf, size_t sz)
{
	sqlite3_stmt *s = NULL;
	const unsigned char *v;
	es_err rc;

	if (!st || !buf || sz == 0)
		return ES_ERR_INVAL;
	buf[0] = '\0';
	rc = es_sqlite_prepare(st->db, "SELECT value FROM meta WHERE key = 'stream_id'"
			       " AND typeof(value) = 'text'", &s);
	if (rc != ES_OK)
		return rc;
	switch (sqlite3_step(s)) {
	case SQLITE_ROW:
		v = sqlite3_column_text(s, 0);
		if (!v || (size_t)sqlite3_column_bytes(s, 0) >= sz)
			rc = ES_ERR_DB;
		else
			memcpy(buf, v, (size_t)sqlite3_column_bytes(s, 0) + 1);
		break;
	case SQLITE_DONE:
		rc = ES_ERR_NOTFOUND;
		break;
	default:
		rc = es_sqlite_fail(st->db, "stream id get");
	}
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_set_int(es_store *st, const char *key, int64_t v)
{
	if (!st || !key)
		return ES_ERR_INVAL;
	if (!store__writable(st) || es_sqlite_begin(st->db) != ES_OK)
		return ES_ERR_DB;
	return es_sqlite_end(st->db, store__meta_set(st, key, v));
}

/* Runs sql with ?1 = kind, ?2 = name and optionally ?3 = text3 (NULL binds
 * SQL NULL when use3). */
static es_err st_kn(es_store *st, const char *sql, const char *kind,
		    const char *name, int use3, const char *text3)
{
	sqlite3_stmt *s = NULL;
	es_err rc = es_sqlite_prepare(st->db, sql, &s);

	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC) != SQLITE_OK ||
	    (use3 && sqlite3_bind_text(s, 3, text3, -1, SQLITE_STATIC) !=
			     SQLITE_OK)) {
		rc = es_sqlite_fail(st->db, "bind");
		goto cleanup;
	}
	rc = es_sqlite_step_done(st->db, s, sql);
cleanup:
	sqlite3_finalize(s);
	return rc;
}

static const char *str_member(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static es_err desired_upsert(es_store *st, const cJSON *obj, int full)
{
	const char *kind = es_obj_kind_str(obj), *name = es_obj_name(obj);
	const char *uid = es_obj_uid(obj);
	sqlite3_stmt *s = NULL;
	char *body = NULL;
	es_err rc;

	/* A new uid under the same name is a new object: its status goes. */
	rc = st_kn(st, "DELETE FROM status WHERE kind = ?1 AND name = ?2 AND"
		   " EXISTS (SELECT 1 FROM desired d WHERE d.kind = ?1 AND"
		   " d.name = ?2 AND d.uid IS NOT ?3)", kind, name, 1, uid);
	if (rc == ES_OK && full)
		rc = st_kn(st, "INSERT OR IGNORE INTO temp.full_seen(kind, name)"
			   " VALUES(?1, ?2)", kind, name, 0, NULL);
	if (rc != ES_OK)
		goto cleanup;
	body = es_json_print(obj);
	if (!body) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	rc = es_sqlite_prepare(st->db, "INSERT INTO desired(kind, name, uid, generation,"
		     " resource_version, body) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"
		     " ON CONFLICT(kind, name) DO UPDATE SET uid = excluded.uid,"
		     " generation = excluded.generation,"
		     " resource_version = excluded.resource_version,"
		     " body = excluded.body", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 3, uid, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 4, es_obj_generation(obj)) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 5, es_obj_resource_version(obj)) != SQLITE_OK ||
	    sqlite3_bind_text(s, 6, body, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "desired bind");
		goto cleanup;
	}
	rc = es_sqlite_step_done(st->db, s, "desired upsert");
cleanup:
	sqlite3_finalize(s);
	free(body);
	return rc;
}

/*
 * Forgets the cached object a desired.deleted entry names (PROTOCOL.md,
 * "desired"): the one of that kind and name when its uid is the entry's (or
 * either uid is missing), or when the entry's resourceVersion is newer than
 * the cached object's: the controller then had another object under that
 * name after the agent's copy was written, so it no longer has the copy's
 * uid. An entry without resourceVersion (an older controller) goes by uid
 * only.
 */
static es_err desired_forget(es_store *st, const cJSON *ref)
{
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(ref, "resourceVersion");
	sqlite3_stmt *s = NULL;
	es_err rc = es_sqlite_prepare(st->db, "DELETE FROM desired WHERE kind = ?1"
			" AND name = ?2 AND (?3 IS NULL OR uid IS NULL OR uid = ?3"
			" OR resource_version < ?4)", &s);

	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_text(s, 1, str_member(ref, "kind"), -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, str_member(ref, "name"), -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 3, str_member(ref, "uid"), -1, SQLITE_STATIC) != SQLITE_OK ||
	    (cJSON_IsNumber(rv) ? sqlite3_bind_int64(s, 4, (sqlite3_int64)rv->valuedouble)
				: sqlite3_bind_null(s, 4)) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "desired forget bind");
		goto cleanup;
	}
	rc = es_sqlite_step_done(st->db, s, "desired forget");
cleanup:
	sqlite3_finalize(s);
	return rc;
}

/* Checks the members desired_commit relies on before touching the file. */
static es_err desired_check(const cJSON *msg, const cJSON **objects,
			    const cJSON **deleted, int64_t *rv)
{
	const cJSON *it;

	*objects = cJSON_GetObjectItemCaseSensitive(msg, "objects");
	*deleted = cJSON_GetObjectItemCaseSensitive(msg, "deleted");
	if (!cJSON_IsObject(msg) ||
	    es_json_get_int(msg, "desired", "resourceVersion", 1, 0,
			    ES_JSON_MAX_INT, rv, NULL, 0) != ES_OK ||
	    (*objects && !cJSON_IsArray(*objects)) ||
	    (*deleted && !cJSON_IsArray(*deleted)))
		return ES_ERR_INVAL;
	cJSON_ArrayForEach(it, *objects)
		if (!str_member(it, "kind") || !es_obj_name(it) ||
		    !es_obj_name(it)[0])
			return ES_ERR_INVAL;
	cJSON_ArrayForEach(it, *deleted)
		if (!str_member(it, "kind") || !str_member(it, "name"))
			return ES_ERR_INVAL;
	return ES_OK;
}

es_err es_store_desired_commit(es_store *st, const cJSON *msg)
{
	const cJSON *objects = NULL, *deleted = NULL, *it;
	int full, more;
	int64_t rv = 0, held = 0;
	es_err rc;

	if (!st || desired_check(msg, &objects, &deleted, &rv) != ES_OK) {
		es_log_warn("store", "desired message refused: no resourceVersion,"
			    " or an entry without kind or name", "path",
			    st ? st->db->path : "", NULL);
		return ES_ERR_INVAL;
	}
	full = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "full"));
	more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "more"));
	if (!store__writable(st)) {
		st->changes++;
		return ES_ERR_DB;
	}
	rc = es_sqlite_begin(st->db);
	if (rc != ES_OK)
		return rc;
	/* Desired state never goes back: a change set not past the version
	 * held is old or a duplicate (PROTOCOL.md, "Desired state"). */
	if (!full && (rc = store__meta_get(st, "desired_rv", 0, &held)) == ES_OK &&
	    rv <= held) {
		es_sqlite_rollback(st->db);
		return ES_ERR_CONFLICT;
	}
	if (full && !st->full_pending)
		rc = es_sqlite_exec(st->db, "DELETE FROM temp.full_seen");
	/* Deletions first: a tombstone and a recreated object of the same
	 * name may travel in one message. A late tombstone of an earlier
	 * object does not remove the object now cached under that name
	 * (desired_forget). */
	cJSON_ArrayForEach(it, deleted) {
		if (rc != ES_OK)
			break;
		rc = desired_forget(st, it);
	}
	cJSON_ArrayForEach(it, objects) {
		if (rc != ES_OK)
			break;
		rc = desired_upsert(st, it, full);
	}
	if (rc == ES_OK && full && !more) {
		rc = es_sqlite_exec(st->db, "DELETE FROM desired WHERE NOT EXISTS (SELECT 1"
			     " FROM temp.full_seen f WHERE f.kind = desired.kind"
			     " AND f.name = desired.name)");
		if (rc == ES_OK)
			rc = es_sqlite_exec(st->db, "DELETE FROM temp.full_seen");
	}
	if (rc == ES_OK && !more)
		rc = store__meta_set(st, "desired_rv", rv);
	rc = es_sqlite_end(st->db, rc);
	st->changes++;
	if (rc == ES_OK)
		st->full_pending = full && more;
	/* The controller's full list is what a rebuilt store waited for. */
	if (rc == ES_OK && full && !more)
		st->rebuilt = 0;
	return rc;
}

es_err es_store_desired_list(es_store *st, cJSON **out)
{
	sqlite3_stmt *s = NULL;
	es_err rc;

	if (!st || !out)
		return ES_ERR_INVAL;
	*out = NULL;
	if (!st->db)
		return ES_ERR_DB;
	rc = es_sqlite_prepare(st->db, "SELECT body FROM desired ORDER BY kind, name", &s);
	if (rc == ES_OK)
		rc = es_sqlite_collect(st->db, s, NULL, NULL, "desired", out);
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_status_get(es_store *st, const char *kind, const char *name,
			   cJSON **out)
{
	sqlite3_stmt *s = NULL;
	es_err rc;
	int r;

	if (!st || !kind || !name || !out)
		return ES_ERR_INVAL;
	*out = NULL;
	if (!st->db)
		return ES_ERR_DB;
	rc = es_sqlite_prepare(st->db, "SELECT body FROM status WHERE kind = ?1 AND name = ?2", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "status get bind");
		goto cleanup;
	}
	r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		rc = es_sqlite_column_json(st->db, s, 0, "status", out);
	else if (r == SQLITE_DONE)
		rc = ES_ERR_NOTFOUND;
	else
		rc = es_sqlite_fail(st->db, "status get");
cleanup:
	sqlite3_finalize(s);
	return rc;
}

/* A status whose object is not cached violates the foreign key:
 * ES_ERR_NOTFOUND. */
es_err es_store_status_put(es_store *st, const char *kind, const char *name,
			   const cJSON *status)
{
	char *body = NULL;
	es_err rc;

	if (!st || !kind || !name || !status)
		return ES_ERR_INVAL;
	if (!store__writable(st)) {
		st->changes++;
		return ES_ERR_DB;
	}
	body = es_json_print(status);
	if (!body)
		return ES_ERR_NOMEM;
	rc = es_sqlite_begin(st->db);
	if (rc != ES_OK)
		goto cleanup;
	rc = st_kn(st, "INSERT INTO status(kind, name, body) VALUES(?1, ?2, ?3)"
		   " ON CONFLICT(kind, name) DO UPDATE SET body = excluded.body",
		   kind, name, 1, body);
	if (rc != ES_OK &&
	    sqlite3_extended_errcode(st->db->h) == SQLITE_CONSTRAINT_FOREIGNKEY)
		rc = ES_ERR_NOTFOUND;
	rc = es_sqlite_end(st->db, rc);
	st->changes++;
cleanup:
	free(body);
	return rc;
}

uint64_t es_store_changes(const es_store *st)
{
	return st ? st->changes : 0;
}

