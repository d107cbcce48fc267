/*
 * db_mirror.c - the controller store's objects and tombstones as a mirror
 * of an etcd store (db.h, "The mirror of an etcd store"): written only
 * from the etcd watch, each call one committed transaction.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store/db_int.h"

/* The meta row key (0 when absent). */
static es_err meta_read(es_db *db, const char *key, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "SELECT value FROM meta WHERE key = ?", &st);
	int s;

	*out = 0;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else if (s != SQLITE_DONE)
		rc = es_sqlite_fail(db->sq, "mirror meta get");
	sqlite3_finalize(st);
	return rc;
}

static es_err meta_write(es_db *db, const char *key, int64_t v)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "INSERT OR REPLACE INTO meta (key, value)"
				      " VALUES (?, ?)", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, v);
	rc = es_sqlite_step_done(db->sq, st, "mirror meta set");
	sqlite3_finalize(st);
	return rc;
}

/* The current revision becomes rev when that is past it. */
static es_err move_rev(es_db *db, int64_t rev)
{
	int64_t cur = 0;
	es_err rc = meta_read(db, "rv", &cur);

	if (rc == ES_OK && rev > cur)
		rc = meta_write(db, "rv", rev);
	return rc;
}

/* A tombstone of (kind, name, uid) at rev; when one holds rev already,
 * the compaction point moves to rev. */
static es_err tombstone(es_db *db, const char *kind, const char *name,
			const char *uid, int64_t rev)
{
	sqlite3_stmt *st = NULL;
	int64_t compacted = 0;
	es_err rc = es_sqlite_prepare(db->sq, "INSERT OR IGNORE INTO tombstones (kind, name,"
				      " uid, resource_version) VALUES (?,?,?,?)", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, uid ? uid : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, rev);
	rc = es_sqlite_step_done(db->sq, st, "mirror tombstone");
	sqlite3_finalize(st);
	if (rc != ES_OK || sqlite3_changes(db->sq->h) > 0)
		return rc;
	/* Two deletions in one etcd revision (a range deleted at once): the
	 * table keeps one record per resourceVersion, so older agents get a
	 * full list instead. */
	if ((rc = meta_read(db, "compacted", &compacted)) == ES_OK && rev > compacted)
		rc = meta_write(db, "compacted", rev);
	return rc;
}

es_err es_db_mirror_state(es_db *db, int *following, int64_t *rev)
{
	int64_t f = 0;
	es_err rc = meta_read(db, "mirror", &f);

	*following = rc == ES_OK && f == 1;
	if (rc == ES_OK)
		rc = meta_read(db, "rv", rev);
	return rc;
}

es_err es_db_mirror_put(es_db *db, const cJSON *obj, int64_t rev, cJSON **previous)
{
	const char *kind = es_obj_kind_str(obj), *name = es_obj_name(obj);
	cJSON *prev = NULL;
	es_err rc;

	if (previous)
		*previous = NULL;
	if (es_obj_kind(obj) < ES_KIND_COLLECTOR_CONFIG || !name || !es_obj_uid(obj))
		return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = db__object_load(db, kind, name, &prev);
	if (rc == ES_ERR_NOTFOUND)
		rc = ES_OK;
	if (rc != ES_OK)
		goto cleanup;
	if (prev && es_obj_uid(prev) && strcmp(es_obj_uid(prev), es_obj_uid(obj)) != 0 &&
	    (rc = tombstone(db, kind, name, es_obj_uid(prev), rev)) != ES_OK)
		goto cleanup;
	if ((rc = db__object_write(db, obj)) != ES_OK || (rc = move_rev(db, rev)) != ES_OK ||
	    (rc = es_sqlite_commit(db->sq)) != ES_OK)
		goto cleanup;
	if (previous) {
		*previous = prev;
		prev = NULL;
	}
cleanup:
	es_sqlite_rollback(db->sq);
	cJSON_Delete(prev);
	return rc;
}

es_err es_db_mirror_delete(es_db *db, es_kind kind, const char *name, int64_t rev,
			   cJSON **deleted)
{
	const char *k = es_obj_kind_name(kind);
	cJSON *prev = NULL;
	es_err rc;

	if (deleted)
		*deleted = NULL;
	if (kind < ES_KIND_COLLECTOR_CONFIG || !k || !name)
		return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = db__object_load(db, k, name, &prev);
	if (rc == ES_ERR_NOTFOUND)
		rc = ES_OK;
	if (rc != ES_OK)
		goto cleanup;
	if (prev) {
		if ((rc = db__exec_kind_name(db, "DELETE FROM objects WHERE kind = ? AND"
					     " name = ?", k, name, "mirror delete")) != ES_OK ||
		    (rc = tombstone(db, k, name, es_obj_uid(prev), rev)) != ES_OK)
			goto cleanup;
	}
	if ((rc = move_rev(db, rev)) != ES_OK || (rc = es_sqlite_commit(db->sq)) != ES_OK)
		goto cleanup;
	/* Committed; a failed trim (logged) keeps more records than asked. */
	(void)es_db_trim_tombstones(db);
	if (deleted) {
		*deleted = prev;
		prev = NULL;
	}
cleanup:
	es_sqlite_rollback(db->sq);
	cJSON_Delete(prev);
	return rc;
}

es_err es_db_mirror_progress(es_db *db, int64_t rev)
{
	int64_t cur = 0;
	es_err rc = meta_read(db, "rv", &cur);

	if (rc != ES_OK || rev <= cur)
		return rc;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = meta_write(db, "rv", rev);
	return es_sqlite_end(db->sq, rc);
}

es_err es_db_mirror_reset(es_db *db, const cJSON *objects, int64_t rev)
{
	const cJSON *o;
	es_err rc;

	cJSON_ArrayForEach(o, objects)
		if (es_obj_kind(o) < ES_KIND_COLLECTOR_CONFIG || !es_obj_name(o) ||
		    !es_obj_uid(o))
			return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	if ((rc = es_sqlite_exec(db->sq, "DELETE FROM objects")) != ES_OK ||
	    (rc = es_sqlite_exec(db->sq, "DELETE FROM tombstones")) != ES_OK)
		goto cleanup;
	cJSON_ArrayForEach(o, objects)
		if ((rc = db__object_write(db, o)) != ES_OK)
			goto cleanup;
	if ((rc = meta_write(db, "rv", rev)) == ES_OK &&
	    (rc = meta_write(db, "compacted", rev)) == ES_OK)
		rc = meta_write(db, "mirror", 1);
cleanup:
	return es_sqlite_end(db->sq, rc);
}

es_err es_db_mirror_file_id(es_db *db, int64_t *id)
{
	int64_t v = 0;
	es_err rc = meta_read(db, "file_id", &v);
	FILE *f;

	*id = 0;
	if (rc != ES_OK)
		return rc;
	if (v == 0) {
		if (!(f = fopen("/dev/urandom", "rb")))
			return ES_ERR_IO;
		if (fread(&v, sizeof(v), 1, f) != 1)
			v = 0;
		fclose(f);
		v &= INT64_MAX;
		if (v == 0)
			return ES_ERR_IO;
		if ((rc = db__begin(db)) != ES_OK)
			return rc;
		if ((rc = meta_write(db, "file_id", v)) == ES_OK)
			rc = es_sqlite_commit(db->sq);
		es_sqlite_rollback(db->sq);
		if (rc != ES_OK)
			return rc;
	}
	*id = v;
	return ES_OK;
}
