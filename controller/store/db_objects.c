/*
 * db_objects.c - the controller store's desired objects (create, replace,
 * delete with a tombstone) and the change feed used for resumable sync.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db_int.h"
#include "es_json.h"
#include "es_log.h"
#include "es_time.h"

es_err db__object_load(es_db *db, const char *kind, const char *name, cJSON **out)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_OBJECT_LOAD, &st);
	int s;

	*out = NULL;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		rc = es_sqlite_column_json(db->sq, st, 0, "object get", out);
	else if (s == SQLITE_DONE)
		rc = ES_ERR_NOTFOUND;
	else
		rc = es_sqlite_fail(db->sq, "object get");
	if (rc == ES_OK && !*out)
		rc = ES_ERR_DB;
	sqlite3_reset(st);
	return rc;
}

static int meta_managed(const char *key)
{
	static const char *const keys[] = { "name", "uid", "generation",
		"resourceVersion", "creationTimestamp", "labels" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(key, keys[i]) == 0)
			return 1;
	return 0;
}

/* The object as stored: apiVersion, kind, metadata (controller-managed
 * members set here, labels and any other member taken from obj), spec. */
static cJSON *build_stored(const cJSON *obj, const char *uid, const char *created,
			   int64_t generation, int64_t rv)
{
	const cJSON *src_meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(src_meta, "labels");
	const cJSON *m;
	cJSON *out = cJSON_CreateObject(), *meta = NULL, *c;

	if (!out || !cJSON_AddStringToObject(out, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(out, "kind", es_obj_kind_str(obj)) ||
	    !(meta = cJSON_AddObjectToObject(out, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", es_obj_name(obj)) ||
	    !cJSON_AddStringToObject(meta, "uid", uid) ||
	    !es_json_add_int(meta, "generation", generation) ||
	    !es_json_add_int(meta, "resourceVersion", rv) ||
	    !cJSON_AddStringToObject(meta, "creationTimestamp", created))
		goto fail;
	if (cJSON_IsObject(labels)) {
		if (!(c = cJSON_Duplicate(labels, 1)))
			goto fail;
		cJSON_AddItemToObject(meta, "labels", c);
	}
	cJSON_ArrayForEach(m, src_meta) {
		if (!m->string || meta_managed(m->string))
			continue;
		if (!(c = cJSON_Duplicate(m, 1)))
			goto fail;
		cJSON_AddItemToObject(meta, m->string, c);
	}
	c = spec ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject();
	if (!c)
		goto fail;
	cJSON_AddItemToObject(out, "spec", c);
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}

es_err db__object_write(es_db *db, const cJSON *o)
{
	sqlite3_stmt *st = NULL;
	char *text = es_json_print(o);
	es_err rc;

	if (!text)
		return ES_ERR_NOMEM;
	rc = db__stmt(db, DB_ST_OBJECT_WRITE, &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, es_obj_kind_str(o), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, es_obj_name(o), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, es_obj_uid(o), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, es_obj_generation(o));
	sqlite3_bind_int64(st, 5, es_obj_resource_version(o));
	sqlite3_bind_text(st, 6, text, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "object put");
cleanup:
	if (st)
		sqlite3_reset(st);
	free(text);
	return rc;
}

es_err db__exec_kind_name(es_db *db, const char *sql, const char *kind,
			  const char *name, const char *op)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, sql, &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, op);
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_object_next(const cJSON *obj, const cJSON *prev, cJSON **out,
			 int *differs)
{
	char uid[37], now[ES_TIME_RFC3339_LEN];
	const char *ctime;
	int64_t gen = 1, rv = 0;
	cJSON *cur;
	es_err rc;

	*out = NULL;
	*differs = 1;
	if (es_obj_kind(obj) < ES_KIND_COLLECTOR_CONFIG || !es_obj_name(obj))
		return ES_ERR_INVAL;
	if (!prev) {
		if ((rc = es_obj_new_uid(uid)) != ES_OK)
			return rc;
		ctime = es_time_now_rfc3339(now);
	} else {
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(prev, "metadata"),
			"creationTimestamp");
		snprintf(uid, sizeof(uid), "%s", es_obj_uid(prev) ? es_obj_uid(prev) : "");
		ctime = cJSON_IsString(ts) ? ts->valuestring : es_time_now_rfc3339(now);
		gen = es_obj_generation(prev);
		/* es_json_equal: in proportion to the spec's size, numbers
		 * exact; out of memory (-1) counts as a change. */
		if (es_json_equal(cJSON_GetObjectItemCaseSensitive(prev, "spec"),
				  cJSON_GetObjectItemCaseSensitive(obj, "spec")) != 1)
			gen++;
		rv = es_obj_resource_version(prev);
	}
	if (!(cur = build_stored(obj, uid, ctime, gen, rv)))
		return ES_ERR_NOMEM;
	if (prev && es_json_equal(prev, cur) == 1)
		*differs = 0;
	*out = cur;
	return ES_OK;
}

es_err es_db_object_put(es_db *db, const cJSON *obj, cJSON **stored,
			cJSON **previous, int *created, int *changed)
{
	const char *kind = es_obj_kind_str(obj), *name = es_obj_name(obj);
	cJSON *prev = NULL, *cur = NULL;
	int64_t rv = 0;
	int is_new = 0, differs = 1;
	es_err rc;

	if (stored)
		*stored = NULL;
	if (previous)
		*previous = NULL;
	if (es_obj_kind(obj) < ES_KIND_COLLECTOR_CONFIG || !name)
		return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = db__object_load(db, kind, name, &prev);
	if (rc == ES_ERR_NOTFOUND)
		is_new = 1;
	else if (rc != ES_OK)
		goto cleanup;
	if ((rc = es_db_object_next(obj, prev, &cur, &differs)) != ES_OK)
		goto cleanup;
	if (differs) {
		if ((rc = es_db_next_rv(db, &rv)) != ES_OK)
			goto cleanup;
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cur, "metadata"),
			"resourceVersion"), (double)rv);
		/* The deletion records of earlier objects of this name stay:
		 * an agent that still holds one of them learns of its deletion
		 * even when the new object does not target it. */
		if ((rc = db__object_write(db, cur)) != ES_OK)
			goto cleanup;
		if ((rc = es_sqlite_commit(db->sq)) != ES_OK)
			goto cleanup;
	} else {
		es_sqlite_rollback(db->sq);
	}
	if (created)
		*created = is_new;
	if (changed)
		*changed = differs;
	if (stored) {
		*stored = cur;
		cur = NULL;
	}
	if (previous) {
		*previous = prev;
		prev = NULL;
	}
cleanup:
	es_sqlite_rollback(db->sq);
	cJSON_Delete(prev);
	cJSON_Delete(cur);
	return rc;
}

es_err es_db_object_get(es_db *db, es_kind kind, const char *name, cJSON **out)
{
	*out = NULL;
	if (kind < ES_KIND_COLLECTOR_CONFIG || !es_obj_kind_name(kind) || !name)
		return ES_ERR_NOTFOUND;
	return db__object_load(db, es_obj_kind_name(kind), name, out);
}

es_err es_db_object_list(es_db *db, es_kind kind, cJSON **out)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	*out = NULL;
	if (kind == ES_KIND_UNKNOWN)
		rc = es_sqlite_prepare(db->sq, "SELECT body FROM objects ORDER BY kind, name", &st);
	else if (kind >= ES_KIND_COLLECTOR_CONFIG && es_obj_kind_name(kind))
		rc = es_sqlite_prepare(db->sq, "SELECT body FROM objects WHERE kind = ?"
				   " ORDER BY name", &st);
	else
		return ES_ERR_INVAL;
	if (rc != ES_OK)
		return rc;
	if (kind != ES_KIND_UNKNOWN)
		sqlite3_bind_text(st, 1, es_obj_kind_name(kind), -1, SQLITE_STATIC);
	rc = es_sqlite_collect(db->sq, st, NULL, NULL, "object list", out);
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_object_delete(es_db *db, es_kind kind, const char *name,
			   cJSON **deleted)
{
	sqlite3_stmt *st = NULL;
	cJSON *prev = NULL;
	int64_t rv = 0;
	es_err rc;

	if (deleted)
		*deleted = NULL;
	if (kind < ES_KIND_COLLECTOR_CONFIG || !es_obj_kind_name(kind) || !name)
		return ES_ERR_NOTFOUND;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	if ((rc = db__object_load(db, es_obj_kind_name(kind), name, &prev)) != ES_OK)
		goto cleanup;
	if ((rc = es_db_next_rv(db, &rv)) != ES_OK)
		goto cleanup;
	if ((rc = db__exec_kind_name(db, "DELETE FROM objects WHERE kind = ? AND name = ?",
				 es_obj_kind_name(kind), name, "object delete")) != ES_OK)
		goto cleanup;
	if ((rc = es_sqlite_prepare(db->sq, "INSERT INTO tombstones (kind, name, uid,"
				" resource_version) VALUES (?,?,?,?)", &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, es_obj_kind_name(kind), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, es_obj_uid(prev) ? es_obj_uid(prev) : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, rv);
	if ((rc = es_sqlite_step_done(db->sq, st, "tombstone insert")) != ES_OK)
		goto cleanup;
	if ((rc = es_sqlite_commit(db->sq)) != ES_OK)
		goto cleanup;
	/* The deletion is committed; a failed trim (logged) only keeps more
	 * records than asked and is retried at the next deletion. */
	(void)es_db_trim_tombstones(db);
	if (deleted) {
		*deleted = prev;
		prev = NULL;
	}
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	cJSON_Delete(prev);
	return rc;
}

/* {kind, name, uid, resourceVersion} of the tombstone row st is positioned
 * on (an es_sqlite_row_fn). */
static es_err tombstone_from_row(void *ud, sqlite3_stmt *st, cJSON **out)
{
	cJSON *t = cJSON_CreateObject();

	(void)ud;
	*out = NULL;
	if (!t ||
	    !cJSON_AddStringToObject(t, "kind", (const char *)sqlite3_column_text(st, 0)) ||
	    !cJSON_AddStringToObject(t, "name", (const char *)sqlite3_column_text(st, 1)) ||
	    !cJSON_AddStringToObject(t, "uid", (const char *)sqlite3_column_text(st, 2)) ||
	    !es_json_add_int(t, "resourceVersion", sqlite3_column_int64(st, 3))) {
		cJSON_Delete(t);
		return ES_ERR_NOMEM;
	}
	*out = t;
	return ES_OK;
}

es_err es_db_changes_since(es_db *db, int64_t since, cJSON **objects,
			   cJSON **tombstones)
{
	sqlite3_stmt *st = NULL;
	cJSON *objs = NULL, *tombs = NULL;
	es_err rc;

	*objects = NULL;
	*tombstones = NULL;
	rc = es_sqlite_prepare(db->sq, "SELECT body FROM objects WHERE resource_version > ?"
			   " ORDER BY resource_version", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, since);
	if ((rc = es_sqlite_collect(db->sq, st, NULL, NULL, "changes since", &objs)) != ES_OK)
		goto cleanup;
	sqlite3_finalize(st);
	rc = es_sqlite_prepare(db->sq, "SELECT kind, name, uid, resource_version FROM tombstones"
			   " WHERE resource_version > ? ORDER BY resource_version", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, since);
	rc = es_sqlite_collect(db->sq, st, tombstone_from_row, NULL, "tombstones since",
			       &tombs);
	if (rc != ES_OK)
		goto cleanup;
	*objects = objs;
	*tombstones = tombs;
	objs = tombs = NULL;
cleanup:
	sqlite3_finalize(st);
	cJSON_Delete(objs);
	cJSON_Delete(tombs);
	return rc;
}
