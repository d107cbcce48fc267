/*
 * db_enroll.c - bootstrap tokens, issued certificates and enrollments in
 * the controller store (store/db_enroll.h).
 */
#include <stdlib.h>
#include <string.h>

#include "es_enroll.h"
#include "es_json.h"
#include "es_time.h"
#include "store/db_enroll.h"
#include "store/db_int.h"

es_err es_db_token_create(es_db *db, const es_db_token *t)
{
	sqlite3_stmt *st = NULL;
	char *labels = es_json_print(t->labels);
	es_err rc;

	if (!labels)
		return ES_ERR_NOMEM;
	if ((rc = db__begin(db)) != ES_OK)
		goto cleanup;
	rc = es_sqlite_prepare(db->sq, "SELECT 1 FROM bootstrap_tokens WHERE id = ?", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		rc = ES_ERR_EXISTS;
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = es_sqlite_prepare(db->sq, "INSERT INTO bootstrap_tokens (id, secret_sha256,"
			       " expires, usages, labels, name_prefix, created)"
			       " VALUES (?, ?, ?, ?, ?, ?, ?)", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->secret_sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)t->expires);
	sqlite3_bind_int64(st, 4, t->usages);
	sqlite3_bind_text(st, 5, labels, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, t->name_prefix ? t->name_prefix : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, (int64_t)t->created);
	rc = es_sqlite_step_done(db->sq, st, "token create");
	if (rc == ES_OK)
		rc = es_sqlite_commit(db->sq);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	free(labels);
	return rc;
}

static es_err token_row(void *ud, sqlite3_stmt *s, cJSON **item)
{
	es_db *db = ud;
	char t1[ES_TIME_RFC3339_LEN], t2[ES_TIME_RFC3339_LEN];
	cJSON *o = cJSON_CreateObject(), *labels = NULL;
	es_err rc;

	*item = NULL;
	if (!o)
		return ES_ERR_NOMEM;
	rc = es_sqlite_column_json(db->sq, s, 4, "token labels", &labels);
	if (rc != ES_OK) {
		cJSON_Delete(o);
		return rc;
	}
	if (!labels)
		labels = cJSON_CreateObject();
	if (!labels ||
	    !cJSON_AddStringToObject(o, "id", (const char *)sqlite3_column_text(s, 0)) ||
	    !cJSON_AddStringToObject(o, "expires",
				     es_time_rfc3339((time_t)sqlite3_column_int64(s, 1), t1)) ||
	    !es_json_add_int(o, "usages", sqlite3_column_int64(s, 2)) ||
	    !es_json_add_int(o, "used", sqlite3_column_int64(s, 3)) ||
	    !cJSON_AddStringToObject(o, "namePrefix",
				     (const char *)sqlite3_column_text(s, 5)) ||
	    !cJSON_AddStringToObject(o, "creationTimestamp",
				     es_time_rfc3339((time_t)sqlite3_column_int64(s, 6), t2))) {
		cJSON_Delete(labels);
		cJSON_Delete(o);
		return ES_ERR_NOMEM;
	}
	cJSON_AddItemToObject(o, "labels", labels);
	*item = o;
	return ES_OK;
}

es_err es_db_token_list(es_db *db, cJSON **out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "SELECT id, expires, usages, used, labels,"
				      " name_prefix, created FROM bootstrap_tokens"
				      " ORDER BY id", &st);

	*out = NULL;
	if (rc != ES_OK)
		return rc;
	rc = es_sqlite_collect(db->sq, st, token_row, db, "token list", out);
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_token_delete(es_db *db, const char *id)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = es_sqlite_prepare(db->sq, "DELETE FROM bootstrap_tokens WHERE id = ?", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "token delete");
	if (rc == ES_OK && sqlite3_changes(db->sq->h) == 0)
		rc = ES_ERR_NOTFOUND;
	if (rc == ES_OK)
		rc = es_sqlite_commit(db->sq);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

/* Inserts a certificate row inside the open transaction. */
static es_err cert_insert(es_db *db, const char *serial, const char *node,
			  const char *key_pin, time_t not_after, time_t now, int revoked)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "INSERT OR REPLACE INTO certificates"
				      " (serial, node, key_pin, not_after, issued, revoked)"
				      " VALUES (?, ?, ?, ?, ?, ?)", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, serial, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, key_pin, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (int64_t)not_after);
	sqlite3_bind_int64(st, 5, (int64_t)now);
	sqlite3_bind_int(st, 6, revoked);
	rc = es_sqlite_step_done(db->sq, st, "certificate record");
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_join_record(es_db *db, const es_db_join *j, time_t now,
			 es_db_join_result *result, cJSON **labels)
{
	sqlite3_stmt *st = NULL;
	const char *hash, *prefix, *label_text;
	char *labels_copy = NULL;
	es_err rc;

	*result = ES_DB_JOIN_TOKEN_UNKNOWN;
	if (labels)
		*labels = NULL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = es_sqlite_prepare(db->sq, "SELECT secret_sha256, expires, usages, used,"
			       " name_prefix, labels FROM bootstrap_tokens WHERE id = ?",
			       &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, j->token_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto cleanup;
	hash = (const char *)sqlite3_column_text(st, 0);
	prefix = (const char *)sqlite3_column_text(st, 4);
	label_text = (const char *)sqlite3_column_text(st, 5);
	if (!hash || !es_enroll_equal(hash, j->secret_sha256))
		goto cleanup;
	if (sqlite3_column_int64(st, 1) <= (int64_t)now) {
		*result = ES_DB_JOIN_TOKEN_EXPIRED;
		goto cleanup;
	}
	if (sqlite3_column_int64(st, 3) >= sqlite3_column_int64(st, 2)) {
		*result = ES_DB_JOIN_TOKEN_USED_UP;
		goto cleanup;
	}
	if (prefix && strncmp(j->node, prefix, strlen(prefix)) != 0) {
		*result = ES_DB_JOIN_NAME_PREFIX;
		goto cleanup;
	}
	if (!(labels_copy = strdup(label_text ? label_text : "{}"))) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = es_sqlite_prepare(db->sq, "SELECT key_pin FROM enrollments WHERE node = ?", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, j->node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(st, 0), j->key_pin) != 0) {
		*result = ES_DB_JOIN_NAME_TAKEN;
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = es_sqlite_prepare(db->sq, "UPDATE bootstrap_tokens SET used = used + 1"
			       " WHERE id = ?", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, j->token_id, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, "token use")) != ES_OK)
		goto cleanup;
	sqlite3_finalize(st);
	st = NULL;
	rc = es_sqlite_prepare(db->sq, "INSERT OR REPLACE INTO enrollments (node, key_pin,"
			       " token_id, labels, enrolled) VALUES (?, ?, ?, ?, ?)", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, j->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, j->key_pin, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, j->token_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, labels_copy, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)now);
	if ((rc = es_sqlite_step_done(db->sq, st, "enrollment")) != ES_OK ||
	    (rc = cert_insert(db, j->serial, j->node, j->key_pin, j->not_after, now,
			      0)) != ES_OK)
		goto cleanup;
	if (labels) {
		char perr[128];

		rc = es_json_parse(labels_copy, strlen(labels_copy), ES_JSON_MAX_DEPTH,
				   labels, perr, sizeof(perr));
		if (rc != ES_OK)
			goto cleanup;
	}
	rc = es_sqlite_commit(db->sq);
	if (rc == ES_OK)
		*result = ES_DB_JOIN_OK;
cleanup:
	if (rc != ES_OK && labels) {
		cJSON_Delete(*labels);
		*labels = NULL;
	}
	if (*result != ES_DB_JOIN_OK && labels && *labels) {
		cJSON_Delete(*labels);
		*labels = NULL;
	}
	free(labels_copy);
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_cert_record(es_db *db, const char *serial, const char *node,
			 const char *key_pin, time_t not_after, time_t now)
{
	es_err rc = db__begin(db);

	if (rc != ES_OK)
		return rc;
	rc = cert_insert(db, serial, node, key_pin, not_after, now, 0);
	return es_sqlite_end(db->sq, rc);
}

es_err es_db_renew_record(es_db *db, const es_db_renew *r, time_t now,
			  es_db_renew_result *result)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	*result = ES_DB_RENEW_NOT_ISSUED;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = es_sqlite_prepare(db->sq, "SELECT c.key_pin, c.revoked, e.key_pin"
			       " FROM certificates c LEFT JOIN enrollments e"
			       " ON e.node = c.node WHERE c.serial = ? AND c.node = ?", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, r->old_serial, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, r->node, -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		break;
	case SQLITE_DONE:
		goto cleanup;
	default:
		rc = es_sqlite_fail(db->sq, "renewal check");
		goto cleanup;
	}
	if (sqlite3_column_int(st, 1) || sqlite3_column_type(st, 2) == SQLITE_NULL) {
		*result = ES_DB_RENEW_REVOKED;
		goto cleanup;
	}
	if (!sqlite3_column_text(st, 0) ||
	    strcmp((const char *)sqlite3_column_text(st, 0), r->key_pin) != 0 ||
	    strcmp((const char *)sqlite3_column_text(st, 2), r->key_pin) != 0) {
		*result = ES_DB_RENEW_KEY_MISMATCH;
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = cert_insert(db, r->serial, r->node, r->key_pin, r->not_after, now, 0);
	if (rc == ES_OK)
		rc = es_sqlite_commit(db->sq);
	if (rc == ES_OK)
		*result = ES_DB_RENEW_OK;
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_cert_state(es_db *db, const char *serial, const char *node,
			es_db_cert_status *out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "SELECT node, revoked FROM certificates"
				      " WHERE serial = ?", &st);

	*out = ES_DB_CERT_UNKNOWN;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, serial, -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*out = sqlite3_column_int(st, 1) ||
		       strcmp((const char *)sqlite3_column_text(st, 0), node) != 0
		       ? ES_DB_CERT_REVOKED : ES_DB_CERT_VALID;
		break;
	case SQLITE_DONE:
		break;
	default:
		rc = es_sqlite_fail(db->sq, "certificate state");
	}
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_cert_renew(es_db *db, const char *node, const char *old_serial,
			const char *serial, const char *key_pin, time_t not_after,
			time_t now, es_db_cert_status *was)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	*was = ES_DB_CERT_UNKNOWN;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	if ((rc = es_db_cert_state(db, old_serial, node, was)) != ES_OK ||
	    *was != ES_DB_CERT_VALID)
		goto cleanup;
	rc = es_sqlite_prepare(db->sq, "UPDATE enrollments SET key_pin = ? WHERE node = ?",
			       &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, key_pin, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, "enrollment key")) != ES_OK ||
	    (rc = cert_insert(db, serial, node, key_pin, not_after, now, 0)) != ES_OK)
		goto cleanup;
	rc = es_sqlite_commit(db->sq);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_node_revoke(es_db *db, const char *node, const char *extra_serial,
			 time_t now, int64_t *count)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	*count = 0;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	rc = es_sqlite_prepare(db->sq, "UPDATE certificates SET revoked = 1"
			       " WHERE node = ? AND revoked = 0", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, "revoke")) != ES_OK)
		goto cleanup;
	*count = sqlite3_changes(db->sq->h);
	sqlite3_finalize(st);
	st = NULL;
	if (extra_serial && *extra_serial) {
		es_db_cert_status cs;

		if ((rc = es_db_cert_state(db, extra_serial, node, &cs)) != ES_OK)
			goto cleanup;
		if (cs == ES_DB_CERT_UNKNOWN) {
			rc = cert_insert(db, extra_serial, node, "", 0, now, 1);
			if (rc != ES_OK)
				goto cleanup;
			(*count)++;
		}
	}
	rc = es_sqlite_prepare(db->sq, "DELETE FROM enrollments WHERE node = ?", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, "unenroll")) != ES_OK)
		goto cleanup;
	rc = es_sqlite_commit(db->sq);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_enroll_labels(es_db *db, const char *node, cJSON **out)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "SELECT labels FROM enrollments"
				      " WHERE node = ?", &st);

	*out = NULL;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		rc = es_sqlite_column_json(db->sq, st, 0, "enrollment labels", out);
		break;
	case SQLITE_DONE:
		break;
	default:
		rc = es_sqlite_fail(db->sq, "enrollment labels");
	}
	sqlite3_finalize(st);
	if (rc == ES_OK && !*out && !(*out = cJSON_CreateObject()))
		rc = ES_ERR_NOMEM;
	return rc;
}
