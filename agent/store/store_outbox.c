/*
 * store_outbox.c - the report outbox and the patch base (store.h;
 * PROTOCOL.md, "Reports").
 *
 * Invariants: seqs come from the "next_seq" cursor, so they are contiguous
 * and survive restarts; a sent row (wire IS NOT NULL) is never modified,
 * only deleted by an ack or by event dropping; "reports_dropped" counts
 * every event row deleted unacknowledged, and with held_dropped every event
 * dropped from memory. Reports are held in memory only during a fault
 * episode or until the flush after a rebuild, and while any is held new
 * ones are held behind them, so the file receives them in order.
 */
#include <stdio.h>
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

/* es_store_outbox_put_state inside the caller's transaction. */
static es_err put_state_tx(es_store *st, const char *doc, time_t now, int64_t *seq)
{
	sqlite3_stmt *s = NULL;
	int r, unsent = 0;
	es_err rc;

	*seq = 0;
	rc = es_sqlite_prepare(st->db, "SELECT seq, wire IS NULL FROM outbox WHERE"
			 " is_state = 1 ORDER BY seq DESC LIMIT 1", &s);
	if (rc != ES_OK)
		goto end;
	r = sqlite3_step(s);
	if (r == SQLITE_ROW) {
		*seq = sqlite3_column_int64(s, 0);
		unsent = sqlite3_column_int(s, 1);
	} else if (r != SQLITE_DONE) {
		rc = es_sqlite_fail(st->db, "outbox newest state");
		goto end;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (!unsent) {
		rc = outbox_insert(st, 1, doc, now, seq);
		goto end;
	}
	rc = es_sqlite_prepare(st->db, "UPDATE outbox SET doc = ?2, created = ?3"
			 " WHERE seq = ?1 AND wire IS NULL", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, *seq) != SQLITE_OK ||
	    sqlite3_bind_text(s, 2, doc, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(s, 3, (int64_t)now) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox coalesce bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox coalesce");
end:
	sqlite3_finalize(s);
	return rc;
}

/* es_store_outbox_put_event inside the caller's transaction; *over gets the
 * number of events dropped for max_events. */
static es_err put_event_tx(es_store *st, const char *doc, time_t now,
			   size_t max_events, int64_t *seq, int64_t *over)
{
	sqlite3_stmt *s = NULL;
	int64_t events = 0, dropped = 0;
	es_err rc;

	*over = 0;
	rc = outbox_insert(st, 0, doc, now, seq);
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
	*over = events - (int64_t)max_events;
	rc = es_sqlite_prepare(st->db, "DELETE FROM outbox WHERE seq IN (SELECT seq FROM"
			 " outbox WHERE is_state = 0 ORDER BY seq LIMIT ?1)", &s);
	if (rc != ES_OK)
		goto end;
	if (sqlite3_bind_int64(s, 1, *over) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "outbox drop bind");
		goto end;
	}
	rc = es_sqlite_step_done(st->db, s, "outbox drop events");
	if (rc == ES_OK)
		rc = store__meta_get(st, "reports_dropped", 0, &dropped);
	if (rc == ES_OK)
		rc = store__meta_set(st, "reports_dropped", dropped + *over);
end:
	sqlite3_finalize(s);
	return rc;
}

static void log_dropped(es_store *st, const char *msg, int64_t n)
{
	char count[24];

	snprintf(count, sizeof(count), "%lld", (long long)n);
	es_log_warn("store", msg, "path", st->path, "dropped", count, NULL);
}

/* Holds the state report doc (copied) in memory, replacing a held one. */
static es_err hold_state(es_store *st, const char *doc, time_t now)
{
	char *copy = strdup(doc);

	if (!copy)
		return ES_ERR_NOMEM;
	free(st->held_state);
	st->held_state = copy;
	st->held_state_at = now;
	return ES_OK;
}

/* Holds the event doc (taken) in memory, dropping the oldest held ones
 * while more than ES_STORE_HELD_EVENTS (or max_events, when smaller) would
 * be held. */
static void hold_event(es_store *st, char *doc, time_t now)
{
	size_t cap = st->max_events < ES_STORE_HELD_EVENTS ? st->max_events :
							      ES_STORE_HELD_EVENTS;
	int64_t dropped = 0;
	store_held *h;

	while (st->held_n > 0 && st->held_n >= cap) {
		free(st->held[st->held_first].doc);
		st->held[st->held_first].doc = NULL;
		st->held_first = (st->held_first + 1) % ES_STORE_HELD_EVENTS;
		st->held_n--;
		dropped++;
	}
	if (cap == 0) {
		free(doc);
		dropped++;
	}
	st->held_dropped += dropped;
	if (dropped)
		log_dropped(st, "events held in memory: the oldest dropped", dropped);
	if (cap == 0)
		return;
	h = &st->held[(st->held_first + st->held_n) % ES_STORE_HELD_EVENTS];
	h->doc = doc;
	h->created = now;
	st->held_n++;
}

/* 1 when the failed write that returned rc is to be held (the store is in
 * a fault episode), 0 when rc is the caller's error. */
static int to_hold(const es_store *st, es_err rc)
{
	return rc != ES_ERR_NOMEM && st->fault != ES_STORE_FAULT_NONE;
}

es_err es_store_outbox_put_state(es_store *st, const char *doc, time_t now,
				 int64_t *seq_out)
{
	int64_t seq = 0;
	es_err rc;

	if (!st || !doc)
		return ES_ERR_INVAL;
	if (seq_out)
		*seq_out = 0;
	if (store__writable(st)) {
		rc = es_sqlite_begin(st->db);
		if (rc == ES_OK)
			rc = es_sqlite_end(st->db, put_state_tx(st, doc, now, &seq));
		if (rc == ES_OK && seq_out)
			*seq_out = seq;
		if (rc == ES_OK || !to_hold(st, rc))
			return rc;
	}
	return hold_state(st, doc, now);
}

es_err es_store_outbox_put_event(es_store *st, const cJSON *event, time_t now,
				 size_t max_events, int64_t *seq_out)
{
	char *doc = NULL;
	int64_t seq = 0, over = 0;
	es_err rc = ES_OK;

	if (!st || !event)
		return ES_ERR_INVAL;
	if (seq_out)
		*seq_out = 0;
	st->max_events = max_events;
	doc = es_json_print(event);
	if (!doc)
		return ES_ERR_NOMEM;
	if (store__writable(st)) {
		rc = es_sqlite_begin(st->db);
		if (rc == ES_OK)
			rc = es_sqlite_end(st->db, put_event_tx(st, doc, now, max_events,
								&seq, &over));
		if (rc == ES_OK && over > 0)
			log_dropped(st, "outbox full: oldest events dropped", over);
		if (rc == ES_OK && seq_out)
			*seq_out = seq;
		if (rc == ES_OK || !to_hold(st, rc)) {
			free(doc);
			return rc;
		}
	}
	hold_event(st, doc, now);
	return ES_OK;
}

static es_err ack_tx(es_store *st, int64_t seq);

es_err store__flush_held(es_store *st)
{
	int64_t seq = 0, over = 0, dropped = 0, lost = 0;
	es_err rc = ES_OK;
	size_t i;

	if (st->acked_held)
		rc = ack_tx(st, st->acked_held);
	for (i = 0; i < st->held_n && rc == ES_OK; i++) {
		const store_held *h = &st->held[(st->held_first + i) % ES_STORE_HELD_EVENTS];

		rc = put_event_tx(st, h->doc, h->created, st->max_events, &seq, &over);
		lost += over;
	}
	/* Written even when nothing was dropped: a flush always writes, so
	 * that it shows the file takes writes again. */
	if (rc == ES_OK)
		rc = store__meta_get(st, "reports_dropped", 0, &dropped);
	if (rc == ES_OK)
		rc = store__meta_set(st, "reports_dropped", dropped + st->held_dropped);
	if (rc == ES_OK && st->held_state)
		rc = put_state_tx(st, st->held_state, st->held_state_at, &seq);
	if (rc == ES_OK && lost > 0)
		log_dropped(st, "outbox full: oldest events dropped", lost);
	return rc;
}

void store__held_clear(es_store *st)
{
	size_t i;

	for (i = 0; i < ES_STORE_HELD_EVENTS; i++) {
		free(st->held[i].doc);
		st->held[i].doc = NULL;
	}
	st->held_first = 0;
	st->held_n = 0;
	free(st->held_state);
	st->held_state = NULL;
	st->held_dropped = 0;
	st->acked_held = 0;
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
	if (!st->db)
		return ES_ERR_DB;
	rc = es_sqlite_prepare(st->db, "SELECT seq, is_state, doc, wire, created FROM outbox"
			 " WHERE seq > ?1 ORDER BY seq LIMIT 1", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_int64(s, 1, after > st->acked_held ? after :
						      st->acked_held) != SQLITE_OK) {
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
	if (!store__writable(st))
		return ES_ERR_DB;
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

/* 1 when an ack of seq changes nothing (no row up to seq, "next_seq"
 * already past it), so it needs no write; 0 otherwise or when that cannot
 * be read. */
static int ack_is_noop(es_store *st, int64_t seq)
{
	sqlite3_stmt *s = NULL;
	int64_t next = 0;
	int noop = 0;

	if (es_sqlite_prepare(st->db, "SELECT EXISTS(SELECT 1 FROM outbox WHERE"
			      " seq <= ?1)", &s) != ES_OK)
		return 0;
	if (sqlite3_bind_int64(s, 1, seq) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 0 &&
	    store__meta_get(st, "next_seq", 1, &next) == ES_OK && next > seq)
		noop = 1;
	sqlite3_finalize(s);
	return noop;
}

/* es_store_outbox_ack inside the caller's transaction. */
static es_err ack_tx(es_store *st, int64_t seq)
{
	sqlite3_stmt *s = NULL;
	int64_t next = 0;
	es_err rc;

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
	return rc;
}

/*
 * Besides store.h's contract: "next_seq" moves past seq when it is not
 * already, so that after the agent's database was replaced its new reports
 * are not taken for duplicates of reports the controller stored. An ack
 * that changes nothing writes nothing. During a fault episode the ack is
 * held in memory (acked_held, cumulative) and the readers act as if it
 * were written: es_store_outbox_next skips the rows it covers,
 * es_store_base_get answers the newest state row it covers; es_store_flush
 * writes it first. So a connection survives the episode.
 */
es_err es_store_outbox_ack(es_store *st, int64_t seq)
{
	es_err rc;

	if (!st || seq < 0)
		return ES_ERR_INVAL;
	if (seq <= st->acked_held || (st->db && ack_is_noop(st, seq)))
		return ES_OK;
	if (store__writable(st)) {
		rc = es_sqlite_begin(st->db);
		if (rc == ES_OK)
			rc = es_sqlite_end(st->db, ack_tx(st, seq));
		if (rc == ES_OK || !to_hold(st, rc))
			return rc;
	}
	st->acked_held = seq;
	return ES_OK;
}

es_err es_store_base_get(es_store *st, int64_t *seq, cJSON **doc)
{
	sqlite3_stmt *s = NULL;
	es_err rc;
	int r;

	if (!st || !seq || !doc)
		return ES_ERR_INVAL;
	*doc = NULL;
	if (!st->db)
		return ES_ERR_DB;
	/* A held ack makes the newest state row it covers the base. */
	rc = es_sqlite_prepare(st->db, "SELECT seq, doc FROM outbox WHERE is_state = 1"
			       " AND seq <= ?1 UNION ALL SELECT seq, doc FROM base"
			       " WHERE id = 1 ORDER BY 1 DESC LIMIT 1", &s);
	if (rc != ES_OK)
		goto cleanup;
	if (sqlite3_bind_int64(s, 1, st->acked_held) != SQLITE_OK) {
		rc = es_sqlite_fail(st->db, "base get bind");
		goto cleanup;
	}
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
	if (!st->db)
		return ES_ERR_DB;
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
	if (!st->db)
		return ES_ERR_DB;
	/* The rows, and whether the newest state row is unsent (a held state
	 * replaces it rather than adding one). */
	rc = es_sqlite_prepare(st->db, "SELECT count(*), coalesce((SELECT wire IS NULL"
			       " FROM outbox WHERE is_state = 1 ORDER BY seq DESC"
			       " LIMIT 1), 0) FROM outbox WHERE seq > ?1", &s);
	if (rc == ES_OK && sqlite3_bind_int64(s, 1, st->acked_held) != SQLITE_OK)
		rc = es_sqlite_fail(st->db, "outbox depth bind");
	if (rc == ES_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			*rows = sqlite3_column_int64(s, 0) + (int64_t)st->held_n +
				(st->held_state && !sqlite3_column_int(s, 1));
		else
			rc = es_sqlite_fail(st->db, "outbox depth");
	}
	sqlite3_finalize(s);
	return rc;
}

es_err es_store_dropped(es_store *st, int64_t *dropped)
{
	es_err rc;

	if (!st || !dropped)
		return ES_ERR_INVAL;
	if (!st->db)
		return ES_ERR_DB;
	rc = store__meta_get(st, "reports_dropped", 0, dropped);
	if (rc == ES_OK)
		*dropped += st->held_dropped;
	return rc;
}
