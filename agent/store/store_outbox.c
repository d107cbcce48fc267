/*
 * store_outbox.c - the report outbox and the patch base (store.h;
 * PROTOCOL.md, "Reports").
 *
 * Invariants: seqs come from the "next_seq" cursor, so they are contiguous
 * and survive restarts; a sent row (wire IS NOT NULL) is never modified,
 * only deleted by an ack or by event dropping; "reports_dropped" counts
 * every event row deleted unacknowledged.
 */
#include <stdlib.h>
#include <string.h>

#include "es_json.h"
#include "es_log.h"
#include "store/store_int.h"

void es_outbox_row_free(es_outbox_row *row)
{
	if (!row)
		return;
	free(row->doc);
	free(row->wire);
	row->doc = NULL;
	row->wire = NULL;
}

/* Inserts a row under the next seq and advances "next_seq". */
static es_err outbox_insert(es_store *st, int is_state, const char *doc,
			    time_t now, int64_t *seq)
{
	sqlite3_stmt *s = NULL;
	es_err rc = store__meta_get(st, "next_seq", 1, seq);

	if (rc != ES_OK)
		goto cleanup;
	rc = es_sqlite_prepare(st->db, "INSERT INTO outbox(seq, is_state, doc, wire, created)"
			 " VALUES(?1, ?2, ?3, NULL, ?4)", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_int64(s, 1, *seq) != SQLITE_OK ||
	    sqlite3_bind_int(s, 2, is_state) != SQLITE_OK ||
	    sqlite3_bind_text(s, 3, doc, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 4, (int64_t)now) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox insert bind");
		goto cleanup;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox insert");
	if (rc == ES_OK)
		rc = store__meta_set(st, "next_seq", *seq + 1);
cleanup:
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_outbox_put_state(es_store *st, const char *doc, time_t now,
				 int64_t *seq_out)
{
	sqlite3_stmt *s = NULL;
	int64_t seq = 0;
	int r, unsent = 0;
	es_err rc;

	if (!st || !doc)
		return ES_ERR_INVAL;
	rc = es_sqlite_begin(st->db);
	if (rc != ES_OK)
		return rc;
	rc = es_sqlite_prepare(st->db, "SELECT seq, wire IS NULL FROM outbox WHERE"
			 " is_state = 1 ORDER BY seq DESC LIMIT 1", &s);
	if (rc != ES_OK)
		goto end;
	r = sqlite3_step(s);
	if (r == SQLITE_ROW) {
		seq = sqlite3_column_int64(s, 0);
		unsent = sqlite3_column_int(s, 1);
	} else if (r != SQLITE_DONE) {
		rc = es_sqlite_fail(st->db, "outbox newest state");
		goto end;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (!unsent) {
		rc = outbox_insert(st, 1, doc, now, &seq);
		goto end;
	}
	rc = es_sqlite_prepare(st->db, "UPDATE outbox SET doc = ?2, created = ?3"
			 " WHERE seq = ?1 AND wire IS NULL", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, seq) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, doc, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 3, (int64_t)now) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox coalesce bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox coalesce");
end:
	sqlite3_finalize(s);
	rc = es_sqlite_end(st->db, rc);
	if (rc == ES_OK && seq_out)
		*seq_out = seq;
	return rc;
}

es_err es_store_outbox_put_event(es_store *st, const cJSON *event, time_t now,
				 size_t max_events, int64_t *seq_out)
{
	sqlite3_stmt *s = NULL;
	char *doc = NULL;
	int64_t seq = 0, events = 0, over = 0, dropped = 0;
	es_err rc;

	if (!st || !event)
		return ES_ERR_INVAL;
	doc = es_json_print(event);
	if (!doc)
		return ES_ERR_NOMEM;
	rc = es_sqlite_begin(st->db);
	if (rc != ES_OK)
		goto cleanup;
	rc = outbox_insert(st, 0, doc, now, &seq);
	if (rc == ES_OK)
		rc = es_sqlite_prepare(st->db, "SELECT count(*) FROM outbox WHERE is_state = 0",
				 &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_step(s) != SQLITE_ROW) {
		rc = es_sqlite_fail(st->db, "outbox count events");
		goto end;
	}
	events = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	s = NULL;
	if (max_events > (size_t)INT64_MAX || events <= (int64_t)max_events)
		goto end;
	over = events - (int64_t)max_events;
	rc = es_sqlite_prepare(st->db, "DELETE FROM outbox WHERE seq IN (SELECT seq FROM"
			 " outbox WHERE is_state = 0 ORDER BY seq LIMIT ?1)", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, over) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox drop bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox drop events");
	if (rc == ES_OK)
		rc = store__meta_get(st, "reports_dropped", 0, &dropped);
	if (rc == ES_OK)
		rc = store__meta_set(st, "reports_dropped", dropped + over);
end:
	sqlite3_finalize(s);
	rc = es_sqlite_end(st->db, rc);
	if (rc == ES_OK && over > 0)
		es_log_warn("store", "outbox full: oldest events dropped",
			    "path", st->db->path, NULL);
	if (rc == ES_OK && seq_out)
		*seq_out = seq;
cleanup:
	free(doc);
	return rc;
}

static char *dup_column(sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);

	return t ? strdup((const char *)t) : NULL;
}

es_err es_store_outbox_next(es_store *st, int64_t after, es_outbox_row *row)
{
	sqlite3_stmt *s = NULL;
	es_err rc;
	int r;

	if (!st || !row)
		return ES_ERR_INVAL;
	memset(row, 0, sizeof(*row));
	rc = es_sqlite_prepare(st->db, "SELECT seq, is_state, doc, wire, created FROM outbox"
			 " WHERE seq > ?1 ORDER BY seq LIMIT 1", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_int64(s, 1, after) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox next bind");
		goto cleanup;
	}
	r = sqlite3_step(s);
	if (r == SQLITE_DONE) {
		rc = ES_ERR_NOTFOUND;
		goto cleanup;
	}
	if (r != SQLITE_ROW) {
		rc = es_sqlite_fail(st->db, "outbox next");
		goto cleanup;
	}
	row->seq = sqlite3_column_int64(s, 0);
	row->is_state = sqlite3_column_int(s, 1) ? 1 : 0;
	row->created = (time_t)sqlite3_column_int64(s, 4);
	row->doc = dup_column(s, 2);
	if (sqlite3_column_type(s, 3) != SQLITE_NULL)
		row->wire = dup_column(s, 3);
	if (!row->doc || (sqlite3_column_type(s, 3) != SQLITE_NULL && !row->wire)) {
		es_outbox_row_free(row);
		rc = ES_ERR_NOMEM;
	}
cleanup:
	sqlite3_finalize(s);
	return rc;
}

/* Errors: ES_ERR_INVAL (wire NULL), ES_ERR_NOTFOUND (no row seq: acked or
 * dropped meanwhile), ES_ERR_DB. */
es_err es_store_outbox_mark_sent(es_store *st, int64_t seq, const char *wire)
{
	sqlite3_stmt *s = NULL;
	es_err rc;

	if (!st || !wire)
		return ES_ERR_INVAL;
	rc = es_sqlite_begin(st->db);
	if (rc != ES_OK)
		return rc;
	rc = es_sqlite_prepare(st->db, "UPDATE outbox SET wire = ?2 WHERE seq = ?1"
			 " AND wire IS NULL", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, seq) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, wire, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox mark sent bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox mark sent");
	if (rc != ES_OK || sqlite3_changes(st->db->h) > 0)
		goto end;
	sqlite3_finalize(s);
	rc = es_sqlite_prepare(st->db, "SELECT 1 FROM outbox WHERE seq = ?1", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, seq) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox find bind");
		goto end;
	}
	switch (sqlite3_step(s)) {
	case SQLITE_ROW:
		break;
	case SQLITE_DONE:
		rc = ES_ERR_NOTFOUND;
		break;
	default:
		rc = es_sqlite_fail(st->db, "outbox find");
	}
end:
	sqlite3_finalize(s);
	return es_sqlite_end(st->db, rc);
}

/*
 * Besides store.h's contract: "next_seq" moves past seq when it is not
 * already, so that after the agent's database was replaced its new reports
 * are not taken for duplicates of reports the controller stored.
 */
es_err es_store_outbox_ack(es_store *st, int64_t seq)
{
	sqlite3_stmt *s = NULL;
	int64_t next = 0;
	es_err rc;

	if (!st || seq < 0)
		return ES_ERR_INVAL;
	rc = es_sqlite_begin(st->db);
	if (rc != ES_OK)
		return rc;
	rc = es_sqlite_prepare(st->db, "INSERT INTO base(id, seq, doc) SELECT 1, seq, doc"
			 " FROM outbox WHERE is_state = 1 AND seq <= ?1"
			 " ORDER BY seq DESC LIMIT 1 ON CONFLICT(id) DO UPDATE"
			 " SET seq = excluded.seq, doc = excluded.doc", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, seq) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox ack bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox ack base");
	if (rc != ES_OK)
		goto end;
	sqlite3_finalize(s);
	rc = es_sqlite_prepare(st->db, "DELETE FROM outbox WHERE seq <= ?1", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, seq) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox ack bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox ack delete");
	if (rc == ES_OK)
		rc = store__meta_get(st, "next_seq", 1, &next);
	if (rc == ES_OK && next <= seq)
		rc = store__meta_set(st, "next_seq", seq + 1);
end:
	sqlite3_finalize(s);
	return es_sqlite_end(st->db, rc);
}

es_err es_store_base_get(es_store *st, int64_t *seq, cJSON **doc)
{
	sqlite3_stmt *s = NULL;
	es_err rc;
	int r;

	if (!st || !seq || !doc)
		return ES_ERR_INVAL;
	*doc = NULL;
	rc = es_sqlite_prepare(st->db, "SELECT seq, doc FROM base WHERE id = 1", &s);
	if (rc != ES_OK)
		goto cleanup;
	r = sqlite3_step(s);
	if (r == SQLITE_DONE) {
		rc = ES_ERR_NOTFOUND;
	} else if (r != SQLITE_ROW) {
		rc = es_sqlite_fail(st->db, "base get");
	} else {
		rc = es_sqlite_column_json(st->db, s, 1, "base", doc);
		if (rc == ES_OK)
			*seq = sqlite3_column_int64(s, 0);
	}
cleanup:
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_state_latest(es_store *st, cJSON **doc)
{
	sqlite3_stmt *s = NULL;
	int64_t seq = 0;
	es_err rc;
	int r;

	if (!st || !doc)
		return ES_ERR_INVAL;
	*doc = NULL;
	rc = es_sqlite_prepare(st->db, "SELECT doc FROM outbox WHERE is_state = 1"
			 " ORDER BY seq DESC LIMIT 1", &s);
	if (rc != ES_OK)
		goto cleanup;
	r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		rc = es_sqlite_column_json(st->db, s, 0, "outbox state", doc);
	else if (r == SQLITE_DONE)
		rc = es_store_base_get(st, &seq, doc);
	else
		rc = es_sqlite_fail(st->db, "outbox newest state");
cleanup:
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_outbox_depth(es_store *st, int64_t *rows)
{
	sqlite3_stmt *s = NULL;
	es_err rc;

	if (!st || !rows)
		return ES_ERR_INVAL;
	rc = es_sqlite_prepare(st->db, "SELECT count(*) FROM outbox", &s);
	if (rc == ES_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			*rows = sqlite3_column_int64(s, 0);
		else
			rc = es_sqlite_fail(st->db, "outbox depth");
	}
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_dropped(es_store *st, int64_t *dropped)
{
	if (!st || !dropped)
		return ES_ERR_INVAL;
	return store__meta_get(st, "reports_dropped", 0, dropped);
}
