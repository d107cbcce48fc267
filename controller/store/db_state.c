/*
 * db_state.c - the reported state of nodes held in memory: what a report
 * does to a node's state (db__state_apply, the one place that knows), an
 * LRU of parsed states keyed by node name, checkpoints of the state text
 * into the node's row, and the replay of the reports stored past a
 * checkpoint (docs/ARCHITECTURE.md, "Durability").
 *
 * Invariant: a node's state at nodes.state_seq is nodes.state (the state at
 * nodes.state_ckpt) with the node's state reports of its stream past
 * state_ckpt applied in seq order by db__state_apply. The history bound
 * never removes such a report while it still matters: the entry is
 * checkpointed first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db_int.h"
#include "es_json.h"
#include "es_log.h"
#include "es_kpatch.h"
#include "es_mpatch.h"

#define NBUCKETS 16384

int db__report_is_change(const char *type)
{
	return strcmp(type, "patch") == 0 || strcmp(type, "delta") == 0;
}

int db__state_would_apply(const cJSON *state, int64_t state_seq, const db_report *r)
{
	if (strcmp(r->type, "snapshot") == 0)
		return 1;
	return db__report_is_change(r->type) && state && r->base_seq == state_seq;
}

es_err db__state_apply(const char *node, cJSON **state, int64_t *state_seq,
		       const db_report *r, int *changed, int *need_resync)
{
	char why[256] = "";
	cJSON *next;
	es_err rc;

	*changed = 0;
	if (strcmp(r->type, "snapshot") == 0) {
		if (!(next = cJSON_Duplicate(r->body, 1)))
			return ES_ERR_NOMEM;
		cJSON_Delete(*state);
		*state = next;
	} else if (db__report_is_change(r->type)) {
		if (!db__state_would_apply(*state, *state_seq, r)) {
			*need_resync = 1;
			return ES_OK;
		}
		if (strcmp(r->type, "delta") == 0)
			rc = es_kpatch_apply(state, r->body, why, sizeof(why));
		else
			rc = es_mpatch_apply(state, r->body);
		if (rc == ES_ERR_INVAL) {
			/* Stored and acknowledged, not applied: the agent
			 * sends a snapshot (as for another base). */
			char seq[24];

			snprintf(seq, sizeof(seq), "%lld", (long long)r->seq);
			es_log_warn("store", "a delta report cannot be applied; asking "
				    "for a snapshot", "node", node ? node : "", "seq", seq,
				    "error", why, NULL);
			*need_resync = 1;
			return ES_OK;
		}
		if (rc != ES_OK)
			return rc;
	} else {
		return ES_OK;
	}
	*state_seq = r->seq;
	*changed = 1;
	return ES_OK;
}

static size_t hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % NBUCKETS;
}

db_state *db__state_peek(es_db *db, const char *node)
{
	db_state *e;

	if (!db->buckets)
		return NULL;
	for (e = db->buckets[hash(node)]; e; e = e->hnext)
		if (strcmp(e->name, node) == 0)
			return e;
	return NULL;
}

static void lru_unlink(es_db *db, db_state *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		db->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		db->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_front(es_db *db, db_state *e)
{
	e->next = db->lru_head;
	e->prev = NULL;
	if (db->lru_head)
		db->lru_head->prev = e;
	db->lru_head = e;
	if (!db->lru_tail)
		db->lru_tail = e;
}

/* Unlinks and frees e without writing anything. */
static void entry_free(es_db *db, db_state *e)
{
	db_state **pp = &db->buckets[hash(e->name)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru_unlink(db, e);
	db->ncached--;
	cJSON_Delete(e->state);
	free(e->name);
	free(e);
}

es_err db__state_checkpoint(es_db *db, db_state *e)
{
	sqlite3_stmt *st;
	char *text = NULL;
	es_err rc;

	if (e->state_seq == e->ckpt_seq) {
		/* What came past the checkpoint changed nothing. */
		e->pending = e->pending_bytes = 0;
		return ES_OK;
	}
	if (e->state && !(text = es_json_print(e->state)))
		return ES_ERR_NOMEM;
	if ((rc = db__stmt(db, DB_ST_NODE_CHECKPOINT, &st)) != ES_OK)
		goto cleanup;
	if (text)
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 1);
	sqlite3_bind_int64(st, 2, e->state_seq);
	sqlite3_bind_text(st, 3, e->name, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "state checkpoint");
	sqlite3_reset(st);
	if (rc == ES_OK) {
		e->ckpt_seq = e->state_seq;
		e->pending = e->pending_bytes = 0;
	}
cleanup:
	free(text);
	return rc;
}

/*
 * Applies the node's stored state reports of stream with from < seq <= upto
 * to *state (at seq *state_seq), in seq order, as db__state_apply did when
 * they arrived. Errors: ES_ERR_DB (a stored body does not parse),
 * ES_ERR_NOMEM.
 */
static es_err replay(es_db *db, const char *node, const char *stream, int64_t from,
		     int64_t upto, cJSON **state, int64_t *state_seq)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_STATE_REPLAY, &st);
	int s, changed, resync;

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, stream, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, from);
	sqlite3_bind_int64(st, 4, upto);
	while (rc == ES_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *body = NULL;
		db_report r = {
			.seq = sqlite3_column_int64(st, 0),
			.type = (const char *)sqlite3_column_text(st, 1),
			.base_seq = sqlite3_column_int64(st, 2),
		};

		if (!r.type)
			continue;
		if ((rc = es_sqlite_column_json(db->sq, st, 3, "state replay", &body)) != ES_OK)
			break;
		r.body = body;
		if (body)
			rc = db__state_apply(node, state, state_seq, &r, &changed, &resync);
		cJSON_Delete(body);
	}
	if (rc == ES_OK && s != SQLITE_DONE)
		rc = es_sqlite_fail(db->sq, "state replay");
	sqlite3_reset(st);
	return rc;
}

/* Drops the least recently used entries past the bound, checkpointing
 * them. */
static es_err evict(es_db *db)
{
	es_err rc;

	while (db->ncached > db->cache_max && db->lru_tail) {
		if ((rc = db__state_checkpoint(db, db->lru_tail)) != ES_OK)
			return rc;
		entry_free(db, db->lru_tail);
	}
	return ES_OK;
}

es_err db__state_get(es_db *db, const char *node, db_state **out)
{
	sqlite3_stmt *st;
	db_state *e;
	int64_t row_seq;
	size_t h;
	es_err rc;
	int s;

	*out = NULL;
	if ((e = db__state_peek(db, node)) != NULL) {
		lru_unlink(db, e);
		lru_front(db, e);
		*out = e;
		return ES_OK;
	}
	if (!db->buckets && !(db->buckets = calloc(NBUCKETS, sizeof(*db->buckets))))
		return ES_ERR_NOMEM;
	if ((rc = db__stmt(db, DB_ST_NODE_CURSOR, &st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s != SQLITE_ROW) {
		rc = s == SQLITE_DONE ? ES_ERR_NOTFOUND : es_sqlite_fail(db->sq, "state load");
		sqlite3_reset(st);
		return rc;
	}
	if (!(e = calloc(1, sizeof(*e))) || !(e->name = strdup(node))) {
		free(e);
		sqlite3_reset(st);
		return ES_ERR_NOMEM;
	}
	e->acked = sqlite3_column_int64(st, 0);
	row_seq = sqlite3_column_int64(st, 1);
	e->ckpt_seq = e->state_seq = sqlite3_column_int64(st, 2);
	snprintf(e->stream, sizeof(e->stream), "%s", sqlite3_column_text(st, 3) ?
		 (const char *)sqlite3_column_text(st, 3) : "");
	e->history_bytes = sqlite3_column_int64(st, 4);
	rc = es_sqlite_column_json(db->sq, st, 5, "state load", &e->state);
	sqlite3_reset(st);
	if (rc == ES_OK && row_seq != e->ckpt_seq) {
		/* Reports stored after the last checkpoint (a crash). */
		rc = replay(db, node, e->stream, e->ckpt_seq, e->acked, &e->state,
			    &e->state_seq);
		if (rc == ES_OK && e->state_seq != row_seq) {
			char a[24], b[24];

			snprintf(a, sizeof(a), "%lld", (long long)row_seq);
			snprintf(b, sizeof(b), "%lld", (long long)e->state_seq);
			es_log_warn("db", "node state replay ended at another seq than "
				    "stored; keeping the replayed one", "node", node,
				    "stateSeq", a, "replayedSeq", b, NULL);
		}
	}
	if (rc != ES_OK) {
		cJSON_Delete(e->state);
		free(e->name);
		free(e);
		return rc;
	}
	h = hash(node);
	e->hnext = db->buckets[h];
	db->buckets[h] = e;
	lru_front(db, e);
	db->ncached++;
	/* A replayed state is written at once: the reports past the
	 * checkpoint may then be trimmed like any other. */
	if ((rc = db__state_checkpoint(db, e)) != ES_OK || (rc = evict(db)) != ES_OK) {
		entry_free(db, e);
		return rc;
	}
	*out = e;
	return ES_OK;
}

es_err db__state_drop(es_db *db, const char *node, int in_tx)
{
	db_state *e = db__state_peek(db, node);
	es_err rc;
	int joined;

	if (!e)
		return ES_OK;
	if (e->state_seq == e->ckpt_seq) {
		entry_free(db, e);
		return ES_OK;
	}
	if (in_tx) {
		rc = db__state_checkpoint(db, e);
		entry_free(db, e);
		return rc;
	}
	if ((rc = db__op_begin(db, &joined)) != ES_OK)
		return rc;
	rc = db__op_end(db, joined, db__state_checkpoint(db, e));
	entry_free(db, e);
	return rc;
}

void db__state_forget(es_db *db, const char *node)
{
	db_state *e;

	if (node) {
		if ((e = db__state_peek(db, node)) != NULL)
			entry_free(db, e);
		return;
	}
	while (db->lru_head)
		entry_free(db, db->lru_head);
}

void db__state_close(es_db *db)
{
	int dirty = 0;

	for (db_state *e = db->lru_head; e; e = e->next)
		dirty |= e->state_seq != e->ckpt_seq;
	if (dirty && es_sqlite_begin(db->sq) == ES_OK) {
		es_err rc = ES_OK;

		for (db_state *e = db->lru_head; e && rc == ES_OK; e = e->next)
			rc = db__state_checkpoint(db, e);
		if (es_sqlite_end(db->sq, rc) != ES_OK)
			es_log_warn("db", "node states not written at close; the stored "
				    "reports are replayed at the next start", NULL);
	}
	db__state_forget(db, NULL);
	free(db->buckets);
	db->buckets = NULL;
}

es_err db__state_view(es_db *db, const char *node, const char *stream,
		      sqlite3_stmt *row, int state_col, int64_t ckpt,
		      int64_t state_seq, cJSON **out)
{
	db_state *e = db__state_peek(db, node);
	int64_t seq = ckpt;
	es_err rc;

	*out = NULL;
	if (e) {
		if (e->state && !(*out = cJSON_Duplicate(e->state, 1)))
			return ES_ERR_NOMEM;
		return ES_OK;
	}
	rc = es_sqlite_column_json(db->sq, row, state_col, "node get", out);
	if (rc == ES_OK && state_seq != ckpt)
		rc = replay(db, node, stream, ckpt, INT64_MAX, out, &seq);
	if (rc != ES_OK) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	return rc;
}
