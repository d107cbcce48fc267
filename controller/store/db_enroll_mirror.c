/*
 * db_enroll_mirror.c - the enrollment tables as the mirror of an etcd
 * store's records (store/db_enroll.h, "the mirror of enrollment").
 */
#include <stdlib.h>
#include <string.h>

#include "es_json.h"
#include "store/db_enroll.h"
#include "store/db_int.h"

/* One argument of a statement: text (t non-NULL) or an integer. */
typedef struct arg {
	const char *t;
	int64_t i;
} arg;

/* Runs sql with args in a transaction of its own. */
static es_err run(es_db *db, const char *sql, const arg *a, int n, const char *what)
{
	sqlite3_stmt *st = NULL;
	es_err rc = db__begin(db);

	if (rc != ES_OK)
		return rc;
	if ((rc = es_sqlite_prepare(db->sq, sql, &st)) != ES_OK)
		goto cleanup;
	for (int k = 0; k < n; k++) {
		if (a[k].t)
			sqlite3_bind_text(st, k + 1, a[k].t, -1, SQLITE_STATIC);
		else
			sqlite3_bind_int64(st, k + 1, a[k].i);
	}
	if ((rc = es_sqlite_step_done(db->sq, st, what)) == ES_OK)
		rc = es_sqlite_commit(db->sq);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_enroll_mirror_clear(es_db *db)
{
	es_err rc = db__begin(db);

	if (rc != ES_OK)
		return rc;
	if ((rc = es_sqlite_exec(db->sq, "DELETE FROM bootstrap_tokens;"
				 " DELETE FROM certificates; DELETE FROM enrollments")) == ES_OK)
		rc = es_sqlite_commit(db->sq);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_enroll_mirror_token(es_db *db, const es_db_token *t, int64_t used)
{
	char *labels = t->labels ? es_json_print(t->labels) : strdup("{}");
	arg a[] = { { t->id, 0 }, { t->secret_sha256, 0 }, { NULL, (int64_t)t->expires },
		    { NULL, t->usages }, { NULL, used }, { labels, 0 },
		    { t->name_prefix ? t->name_prefix : "", 0 }, { NULL, (int64_t)t->created } };
	es_err rc;

	if (!labels)
		return ES_ERR_NOMEM;
	rc = run(db, "INSERT OR REPLACE INTO bootstrap_tokens (id, secret_sha256, expires,"
		 " usages, used, labels, name_prefix, created) VALUES (?,?,?,?,?,?,?,?)",
		 a, 8, "token mirror");
	free(labels);
	return rc;
}

es_err es_db_enroll_mirror_token_delete(es_db *db, const char *id)
{
	arg a[] = { { id, 0 } };

	return run(db, "DELETE FROM bootstrap_tokens WHERE id = ?", a, 1, "token mirror");
}

es_err es_db_enroll_mirror_cert(es_db *db, const char *serial, const char *node,
				const char *key_pin, time_t not_after, time_t issued)
{
	arg a[] = { { serial, 0 }, { node, 0 }, { key_pin, 0 }, { NULL, (int64_t)not_after },
		    { NULL, (int64_t)issued } };

	return run(db, "INSERT INTO certificates (serial, node, key_pin, not_after, issued,"
		   " revoked) VALUES (?1, ?2, ?3, ?4, ?5, 0) ON CONFLICT (serial) DO UPDATE"
		   " SET node = ?2, key_pin = ?3, not_after = ?4, issued = ?5",
		   a, 5, "certificate mirror");
}

es_err es_db_enroll_mirror_revoked(es_db *db, const char *serial, const char *node,
				   time_t when)
{
	arg a[] = { { serial, 0 }, { node, 0 }, { NULL, (int64_t)when } };

	return run(db, "INSERT INTO certificates (serial, node, key_pin, not_after, issued,"
		   " revoked) VALUES (?1, ?2, '', 0, ?3, 1) ON CONFLICT (serial) DO UPDATE"
		   " SET revoked = 1", a, 3, "revocation mirror");
}

es_err es_db_enroll_mirror_node(es_db *db, const char *node, const char *key_pin,
				const char *token_id, const cJSON *labels,
				time_t enrolled)
{
	char *text = labels ? es_json_print(labels) : strdup("{}");
	arg a[] = { { node, 0 }, { key_pin, 0 }, { token_id ? token_id : "", 0 },
		    { text, 0 }, { NULL, (int64_t)enrolled } };
	es_err rc;

	if (!text)
		return ES_ERR_NOMEM;
	rc = run(db, "INSERT OR REPLACE INTO enrollments (node, key_pin, token_id, labels,"
		 " enrolled) VALUES (?,?,?,?,?)", a, 5, "enrollment mirror");
	free(text);
	return rc;
}

es_err es_db_enroll_mirror_node_delete(es_db *db, const char *node)
{
	arg a[] = { { node, 0 } };

	return run(db, "DELETE FROM enrollments WHERE node = ?", a, 1, "enrollment mirror");
}
