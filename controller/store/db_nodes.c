/*
 * db_nodes.c - the controller store's nodes: hello records, connection
 * state, the per-node report cursor, the reported Node state (last snapshot
 * with later changes applied, as keyed rows: db_state.c) and the kept
 * reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db_int.h"
#include "es_json.h"
#include "es_log.h"
#include "es_kpatch.h"
#include "es_mpatch.h"
#include "es_proto.h"
#include "es_time.h"

static void bind_str_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

es_err es_db_node_hello(es_db *db, const char *node, const cJSON *labels,
			const char *agent_version, const char *boot_id,
			time_t now, int64_t *acked_seq, int *labels_changed)
{
	sqlite3_stmt *st = NULL;
	cJSON *old = NULL, *empty = NULL;
	const cJSON *cur = labels;
	char *text = NULL;
	int64_t acked = 0;
	int is_new = 0, pending = 0, changed, s;
	es_err rc;

	if (!node || !es_obj_name_valid(node) || (labels && !cJSON_IsObject(labels)))
		return ES_ERR_INVAL;
	if (!cur && !(cur = empty = cJSON_CreateObject()))
		return ES_ERR_NOMEM;
	if (!(text = es_json_print(cur))) {
		cJSON_Delete(empty);
		return ES_ERR_NOMEM;
	}
	if ((rc = db__begin(db)) != ES_OK)
		goto cleanup;
	if ((rc = es_sqlite_prepare(db->sq, "SELECT labels, acked_seq, full_pending FROM nodes"
				    " WHERE name = ?", &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		rc = es_sqlite_column_json(db->sq, st, 0, "node hello", &old);
		if (rc != ES_OK)
			goto cleanup;
		acked = sqlite3_column_int64(st, 1);
		pending = sqlite3_column_int(st, 2);
	} else if (s == SQLITE_DONE) {
		is_new = 1;
	} else {
		rc = es_sqlite_fail(db->sq, "node hello");
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	changed = is_new || !old || es_json_equal(old, cur) != 1;
	rc = es_sqlite_prepare(db->sq, is_new ?
		"INSERT INTO nodes (labels, agent_version, boot_id, connected,"
		" last_seen, name, created, full_pending) VALUES (?, ?, ?, 1, ?4, ?, ?4, 1)" :
		"UPDATE nodes SET labels = ?, agent_version = ?, boot_id = ?,"
		" connected = 1, last_seen = ?, full_pending = full_pending OR ?6"
		" WHERE name = ?5", &st);
	if (rc != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	bind_str_or_null(st, 2, agent_version);
	bind_str_or_null(st, 3, boot_id);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)now);
	sqlite3_bind_text(st, 5, node, -1, SQLITE_STATIC);
	if (!is_new)
		sqlite3_bind_int(st, 6, changed);
	if ((rc = es_sqlite_step_done(db->sq, st, "node hello")) != ES_OK)
		goto cleanup;
	if ((rc = es_sqlite_commit(db->sq)) != ES_OK)
		goto cleanup;
	if (acked_seq)
		*acked_seq = acked;
	if (labels_changed)
		*labels_changed = changed || pending;
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	cJSON_Delete(old);
	cJSON_Delete(empty);
	free(text);
	return rc;
}

/* Prepares sql, a SELECT of one nodes row bound with ?1 = node, into *st
 * and steps to that row (the caller finalizes *st).
 * Errors: ES_ERR_NOTFOUND (no such node), ES_ERR_DB (logged with op). */
static es_err node_row(es_db *db, const char *sql, const char *node,
		       sqlite3_stmt **st, const char *op)
{
	es_err rc = es_sqlite_prepare(db->sq, sql, st);
	int s;

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(*st, 1, node, -1, SQLITE_STATIC);
	s = sqlite3_step(*st);
	if (s == SQLITE_ROW)
		return ES_OK;
	return s == SQLITE_DONE ? ES_ERR_NOTFOUND : es_sqlite_fail(db->sq, op);
}

/* Keeps the newest db->reports_kept reports of node (in the order
 * received) and counts the bytes of what stays, inside the caller's
 * transaction (a new report stream: rare). */
static es_err reports_trim_node(es_db *db, const char *node)
{
	sqlite3_stmt *st = NULL;
	es_err rc = es_sqlite_prepare(db->sq, "DELETE FROM reports WHERE node = ?1 AND"
			" id <= (SELECT id FROM reports WHERE node = ?1"
			" ORDER BY id DESC LIMIT 1 OFFSET ?2)", &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, db->reports_kept);
	rc = es_sqlite_step_done(db->sq, st, "reports trim");
	sqlite3_finalize(st);
	st = NULL;
	if (rc != ES_OK)
		return rc;
	rc = es_sqlite_prepare(db->sq, "UPDATE nodes SET history_bytes = (SELECT"
			       " coalesce(sum(length(CAST(body AS BLOB))), 0) FROM reports"
			       " WHERE node = ?1) WHERE name = ?1", &st);
	if (rc == ES_OK) {
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
		rc = es_sqlite_step_done(db->sq, st, "reports trim");
	}
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_node_stream(es_db *db, const char *node, const char *stream_id,
			 int64_t next_seq, int64_t *acked_seq, int *new_stream,
			 char *prev, size_t prevsz)
{
	sqlite3_stmt *st = NULL;
	char old[ES_PROTO_STREAM_ID_MAX + 1] = "";
	int64_t acked = 0;
	int fresh = 0;
	es_err rc;

	if (!node || !stream_id || !*stream_id ||
	    strlen(stream_id) > ES_PROTO_STREAM_ID_MAX)
		return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	if ((rc = node_row(db, "SELECT stream_id, acked_seq FROM nodes WHERE name = ?1",
			   node, &st, "node stream")) != ES_OK)
		goto cleanup;
	snprintf(old, sizeof(old), "%s", sqlite3_column_text(st, 0) ?
		 (const char *)sqlite3_column_text(st, 0) : "");
	acked = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	st = NULL;
	if (strcmp(old, stream_id) == 0)
		goto done;
	/* The first stream id of a node whose agent made at least every report
	 * stored: the same reports, now named. */
	fresh = old[0] || next_seq <= acked;
	if (fresh) {
		acked = 0;
		rc = reports_trim_node(db, node);
	} else {
		rc = es_sqlite_prepare(db->sq, "UPDATE reports SET stream = ?1"
				       " WHERE node = ?2 AND stream = ''", &st);
		if (rc == ES_OK) {
			sqlite3_bind_text(st, 1, stream_id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
			rc = es_sqlite_step_done(db->sq, st, "reports stream");
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	if (rc != ES_OK)
		goto cleanup;
	if ((rc = es_sqlite_prepare(db->sq, fresh ?
			"UPDATE nodes SET stream_id = ?1, acked_seq = 0, state_seq = 0,"
			" state_ckpt = 0 WHERE name = ?2" :
			"UPDATE nodes SET stream_id = ?1 WHERE name = ?2", &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, stream_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, "node stream")) != ES_OK)
		goto cleanup;
	if ((rc = es_sqlite_commit(db->sq)) != ES_OK)
		goto cleanup;
done:
	if (acked_seq)
		*acked_seq = acked;
	if (new_stream)
		*new_stream = fresh;
	if (prev && prevsz)
		snprintf(prev, prevsz, "%s", old);
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

/* Runs the kept UPDATE id of one node row bound with (int64 a, time now,
 * node), joining an open batch; ES_ERR_NOTFOUND when no row changed. */
static es_err node_update(es_db *db, enum db_stmt_id id, int64_t a, time_t now,
			  const char *node, const char *op)
{
	sqlite3_stmt *st = NULL;
	int joined = 0;
	es_err rc;

	if (!node)
		return ES_ERR_NOTFOUND;
	if ((rc = db__op_begin(db, &joined)) != ES_OK)
		return rc;
	if ((rc = db__stmt(db, id, &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)now);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, op)) != ES_OK)
		goto cleanup;
	if (sqlite3_changes(db->sq->h) == 0)
		rc = ES_ERR_NOTFOUND;
cleanup:
	if (st)
		sqlite3_reset(st);
	return db__op_end(db, joined, rc);
}

es_err es_db_nodes_reset_connected(es_db *db, int64_t *n)
{
	es_err rc = db__begin(db);

	if (rc != ES_OK)
		return rc;
	rc = es_sqlite_exec(db->sq, "UPDATE nodes SET connected = 0 WHERE connected != 0");
	if (rc == ES_OK && n)
		*n = sqlite3_changes(db->sq->h);
	if (rc == ES_OK)
		return es_sqlite_commit(db->sq);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_node_disconnected(es_db *db, const char *node, time_t now)
{
	return node_update(db, DB_ST_NODE_DISCONNECTED, 0, now, node, "node disconnected");
}

es_err es_db_node_full_done(es_db *db, const char *node, time_t now)
{
	return node_update(db, DB_ST_NODE_FULL_DONE, 0, now, node, "node full done");
}

es_err es_db_node_desired_ack(es_db *db, const char *node, int64_t rv, time_t now)
{
	return node_update(db, DB_ST_NODE_DESIRED_ACK, rv, now, node, "node desired ack");
}

static es_err report_parse(const cJSON *msg, db_report *r)
{
	char e[128];

	memset(r, 0, sizeof(*r));
	if (es_json_get_int(msg, "report", "seq", 1, 1, ES_JSON_MAX_INT, &r->seq,
			    e, sizeof(e)) != ES_OK ||
	    es_json_get_str(msg, "report", "reportType", 1, &r->type, e, sizeof(e)) != ES_OK ||
	    es_json_get_obj(msg, "report", "body", 1, &r->body, e, sizeof(e)) != ES_OK ||
	    !cJSON_IsObject(r->body))
		return ES_ERR_INVAL;
	if (es_json_get_str(msg, "report", "time", 0, &r->time, e, sizeof(e)) == ES_ERR_INVAL)
		return ES_ERR_INVAL;
	if (db__report_is_change(r->type)) {
		if (es_json_get_int(msg, "report", "baseSeq", 1, 0, ES_JSON_MAX_INT,
				    &r->base_seq, e, sizeof(e)) != ES_OK)
			return ES_ERR_INVAL;
	} else if (strcmp(r->type, "snapshot") != 0 && strcmp(r->type, "event") != 0) {
		return ES_ERR_INVAL;
	}
	return ES_OK;
}

/* A node's report cursor as the report path needs it (its nodes row). */
typedef struct db_cursor {
	const char *name;
	char stream[ES_PROTO_STREAM_ID_MAX + 1];
	int64_t acked, state_seq, history_bytes;
} db_cursor;

/* Reads node's cursor into *c. Errors: ES_ERR_NOTFOUND, ES_ERR_DB. */
static es_err cursor_load(es_db *db, const char *node, db_cursor *c)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_NODE_CURSOR, &st);
	int s;

	memset(c, 0, sizeof(*c));
	c->name = node;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		c->acked = sqlite3_column_int64(st, 0);
		c->state_seq = sqlite3_column_int64(st, 1);
		snprintf(c->stream, sizeof(c->stream), "%s", sqlite3_column_text(st, 2) ?
			 (const char *)sqlite3_column_text(st, 2) : "");
		c->history_bytes = sqlite3_column_int64(st, 3);
	} else {
		rc = s == SQLITE_DONE ? ES_ERR_NOTFOUND : es_sqlite_fail(db->sq, "report cursor");
	}
	sqlite3_reset(st);
	return rc;
}

static es_err report_insert(es_db *db, const char *node, const char *stream,
			    const db_report *r, const char *text, time_t now)
{
	sqlite3_stmt *st = NULL;
	es_err rc = db__stmt(db, DB_ST_REPORT_INSERT, &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->seq);
	sqlite3_bind_text(st, 3, r->type, -1, SQLITE_STATIC);
	if (db__report_is_change(r->type))
		sqlite3_bind_int64(st, 4, r->base_seq);
	else
		sqlite3_bind_null(st, 4);
	bind_str_or_null(st, 5, r->time);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)now);
	sqlite3_bind_text(st, 7, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, stream, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "report insert");
	sqlite3_reset(st);
	return rc;
}

/* Steps a DELETE ... RETURNING length(body) to its end, subtracting the
 * bytes it removed from e->history_bytes. */
static es_err prune_step(es_db *db, sqlite3_stmt *st, db_cursor *e)
{
	int s;

	while ((s = sqlite3_step(st)) == SQLITE_ROW)
		e->history_bytes -= sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return s == SQLITE_DONE ? ES_OK : es_sqlite_fail(db->sq, "report prune");
}

/*
 * Bounds the history after the report at seq was stored (es_db_set_reports_kept):
 * the stream's reports of its last reports_kept sequence numbers (at most
 * that many rows; fewer where the agent dropped events), then the node's
 * oldest reports while its bodies exceed report_bytes_kept, the newest
 * always kept. The state does not depend on the history (its rows are
 * written with each report), so any report may go.
 */
static es_err history_bound(es_db *db, db_cursor *e, int64_t seq)
{
	sqlite3_stmt *st = NULL;
	int64_t cut = seq - db->reports_kept, over, id = -1;
	es_err rc;

	if (cut >= 1) {
		if ((rc = db__stmt(db, DB_ST_REPORT_PRUNE_SEQ, &st)) != ES_OK)
			return rc;
		sqlite3_bind_text(st, 1, e->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, e->stream, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, cut);
		if ((rc = prune_step(db, st, e)) != ES_OK)
			return rc;
	}
	if (db->report_bytes_kept <= 0 || e->history_bytes <= db->report_bytes_kept)
		return ES_OK;
	over = e->history_bytes - db->report_bytes_kept;
	if ((rc = db__stmt(db, DB_ST_REPORT_OLDEST, &st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, e->name, -1, SQLITE_STATIC);
	for (int64_t freed = 0; freed < over && sqlite3_step(st) == SQLITE_ROW;) {
		id = sqlite3_column_int64(st, 0);
		freed += sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (id < 0)
		return ES_OK;
	if ((rc = db__stmt(db, DB_ST_REPORT_PRUNE_ID, &st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, e->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	return prune_step(db, st, e);
}

es_err es_db_report_store(es_db *db, const char *node, const cJSON *msg,
			  time_t now, int *duplicate, int *need_resync)
{
	sqlite3_stmt *st = NULL;
	db_cursor e;
	char *text = NULL;
	int joined = 0, changed = 0, resync = 0;
	db_report r;
	es_err rc;

	if (duplicate)
		*duplicate = 0;
	if (need_resync)
		*need_resync = 0;
	if (!node)
		return ES_ERR_NOTFOUND;
	if (report_parse(msg, &r) != ES_OK)
		return ES_ERR_INVAL;
	if ((rc = db__op_begin(db, &joined)) != ES_OK)
		return rc;
	if ((rc = cursor_load(db, node, &e)) != ES_OK)
		goto cleanup;
	if (r.seq <= e.acked) {
		if (duplicate)
			*duplicate = 1;
		goto cleanup;
	}
	if (!(text = es_json_print(r.body))) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	if ((rc = report_insert(db, node, e.stream, &r, text, now)) != ES_OK)
		goto cleanup;
	/* The state's rows change in this same write (undone with it). */
	if ((rc = db__rows_apply(db, node, &e.state_seq, &r, &changed, &resync)) != ES_OK)
		goto cleanup;
	e.acked = r.seq;
	e.history_bytes += (int64_t)strlen(text);
	if ((rc = history_bound(db, &e, r.seq)) != ES_OK)
		goto cleanup;
	if ((rc = db__stmt(db, DB_ST_NODE_REPORTED, &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, e.acked);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)now);
	sqlite3_bind_int64(st, 3, e.state_seq);
	sqlite3_bind_int64(st, 4, e.history_bytes);
	sqlite3_bind_text(st, 5, node, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "report store");
	sqlite3_reset(st);
	if (rc == ES_OK && need_resync)
		*need_resync = resync;
cleanup:
	free(text);
	return db__op_end(db, joined, rc);
}

static cJSON *add_opt_str(cJSON *o, const char *key, const unsigned char *s)
{
	return s ? cJSON_AddStringToObject(o, key, (const char *)s) : cJSON_AddNullToObject(o, key);
}

/* Builds the admin view of the node row st is positioned on (ud: the
 * es_db; an es_sqlite_row_fn). */
static es_err node_from_row(void *ud, sqlite3_stmt *st, cJSON **out)
{
	es_db *db = ud;
	char ts[ES_TIME_RFC3339_LEN];
	cJSON *node = NULL, *labels = NULL, *meta, *status, *sync, *c;
	const char *name = (const char *)sqlite3_column_text(st, 0);
	time_t seen = (time_t)sqlite3_column_int64(st, 5);
	es_err rc;

	*out = NULL;
	rc = db__rows_get(db, name, &node);
	if (rc != ES_OK)
		return rc;
	if (!cJSON_IsObject(node)) {
		cJSON_Delete(node);
		if (!(node = cJSON_CreateObject()))
			return ES_ERR_NOMEM;
	}
	rc = es_sqlite_column_json(db->sq, st, 1, "node get", &labels);
	if (rc != ES_OK)
		goto cleanup;
	rc = ES_ERR_NOMEM;
	cJSON_DeleteItemFromObjectCaseSensitive(node, "apiVersion");
	cJSON_DeleteItemFromObjectCaseSensitive(node, "kind");
	if (!cJSON_AddStringToObject(node, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(node, "kind", "Node"))
		goto cleanup;
	if (!(meta = es_json_object_member(node, "metadata")))
		goto cleanup;
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "name");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "labels");
	/* A node's creationTimestamp is its first hello. */
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "creationTimestamp");
	if (!cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "creationTimestamp",
				     es_time_rfc3339((time_t)sqlite3_column_int64(st, 10), ts)))
		goto cleanup;
	if (labels) {
		cJSON_AddItemToObject(meta, "labels", labels);
		labels = NULL;
	}
	if (!(status = es_json_object_member(node, "status")))
		goto cleanup;
	cJSON_DeleteItemFromObjectCaseSensitive(status, "sync");
	if (!(sync = cJSON_AddObjectToObject(status, "sync")) ||
	    !cJSON_AddBoolToObject(sync, "connected", sqlite3_column_int(st, 4) != 0))
		goto cleanup;
	c = seen ? cJSON_AddStringToObject(sync, "lastSeen", es_time_rfc3339(seen, ts)) :
		   cJSON_AddNullToObject(sync, "lastSeen");
	if (!c || !es_json_add_int(sync, "ackedSeq", sqlite3_column_int64(st, 6)) ||
	    !es_json_add_int(sync, "stateSeq", sqlite3_column_int64(st, 7)) ||
	    !es_json_add_int(sync, "desiredResourceVersion", sqlite3_column_int64(st, 9)) ||
	    !add_opt_str(sync, "agentVersion", sqlite3_column_text(st, 2)) ||
	    !add_opt_str(sync, "bootId", sqlite3_column_text(st, 3)) ||
	    !add_opt_str(sync, "streamId", sqlite3_column_text(st, 11)))
		goto cleanup;
	*out = node;
	node = NULL;
	rc = ES_OK;
cleanup:
	cJSON_Delete(node);
	cJSON_Delete(labels);
	return rc;
}

es_err es_db_node_get(es_db *db, const char *node, cJSON **out)
{
	sqlite3_stmt *st = NULL;
	es_err rc;
	int s;

	*out = NULL;
	if (!node)
		return ES_ERR_NOTFOUND;
	if ((rc = db__stmt(db, DB_ST_NODE_GET, &st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		rc = node_from_row(db, st, out);
	else if (s == SQLITE_DONE)
		rc = ES_ERR_NOTFOUND;
	else
		rc = es_sqlite_fail(db->sq, "node get");
	sqlite3_reset(st);
	return rc;
}

es_err es_db_node_list(es_db *db, cJSON **out)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	*out = NULL;
	rc = es_sqlite_prepare(db->sq, "SELECT " DB_NODE_COLS " FROM nodes ORDER BY name", &st);
	if (rc == ES_OK)
		rc = es_sqlite_collect(db->sq, st, node_from_row, db, "node list", out);
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_node_briefs(es_db *db, const char *node, es_db_node_brief **out,
			 size_t *n)
{
	sqlite3_stmt *st = NULL;
	es_db_node_brief *b = NULL, *nb;
	size_t cap = 0, len = 0;
	es_err rc;
	int s;

	*out = NULL;
	*n = 0;
	rc = db__stmt(db, node ? DB_ST_NODE_BRIEF : DB_ST_NODE_BRIEFS, &st);
	if (rc != ES_OK)
		return rc;
	if (node)
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			if (!(nb = realloc(b, cap * sizeof(*b)))) {
				rc = ES_ERR_NOMEM;
				goto cleanup;
			}
			b = nb;
		}
		memset(&b[len], 0, sizeof(b[len]));
		snprintf(b[len].name, sizeof(b[len].name), "%s",
			 (const char *)sqlite3_column_text(st, 0));
		b[len].connected = sqlite3_column_int(st, 1) != 0;
		b[len].last_seen = (time_t)sqlite3_column_int64(st, 2);
		b[len].desired_ack = sqlite3_column_int64(st, 3);
		b[len].seq = sqlite3_column_int64(st, 4);
		snprintf(b[len].stream, sizeof(b[len].stream), "%s",
			 (const char *)sqlite3_column_text(st, 5));
		len++;
	}
	if (s != SQLITE_DONE) {
		rc = es_sqlite_fail(db->sq, "node briefs");
		goto cleanup;
	}
	sqlite3_reset(st);
	st = NULL;
	for (size_t i = 0; i < len; i++)
		if ((rc = es_db_node_conditions(db, b[i].name, &b[i].conditions)) != ES_OK)
			goto cleanup;
	*out = b;
	*n = len;
	b = NULL;
	len = 0;
cleanup:
	if (st)
		sqlite3_reset(st);
	es_db_node_briefs_free(b, len);
	return rc;
}

void es_db_node_briefs_free(es_db_node_brief *b, size_t n)
{
	if (!b)
		return;
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(b[i].conditions);
	free(b);
}

/* One entry of es_db_reports_list from the row st is positioned on (ud: the
 * es_db; an es_sqlite_row_fn). */
static es_err report_from_row(void *ud, sqlite3_stmt *st, cJSON **out)
{
	char ts[ES_TIME_RFC3339_LEN];
	const char *type = (const char *)sqlite3_column_text(st, 1);
	cJSON *item = cJSON_CreateObject(), *ev = NULL;
	es_db *db = ud;
	es_err rc = ES_ERR_NOMEM;

	*out = NULL;
	if (!item ||
	    !es_json_add_int(item, "seq", sqlite3_column_int64(st, 0)) ||
	    !cJSON_AddStringToObject(item, "reportType", type ? type : "") ||
	    !add_opt_str(item, "time", sqlite3_column_text(st, 3)) ||
	    !cJSON_AddStringToObject(item, "receivedTime",
				     es_time_rfc3339((time_t)sqlite3_column_int64(st, 4), ts)))
		goto cleanup;
	if (sqlite3_column_type(st, 2) != SQLITE_NULL &&
	    !es_json_add_int(item, "baseSeq", sqlite3_column_int64(st, 2)))
		goto cleanup;
	if (sqlite3_column_type(st, 6) != SQLITE_NULL &&
	    !cJSON_AddStringToObject(item, "streamId",
				     (const char *)sqlite3_column_text(st, 6)))
		goto cleanup;
	if (type && strcmp(type, "event") == 0) {
		rc = es_sqlite_column_json(db->sq, st, 5, "reports list", &ev);
		if (rc != ES_OK)
			goto cleanup;
		if (ev)
			cJSON_AddItemToObject(item, "event", ev);
	}
	*out = item;
	item = NULL;
	rc = ES_OK;
cleanup:
	cJSON_Delete(item);
	return rc;
}

es_err es_db_reports_list(es_db *db, const char *node, int limit, cJSON **out)
{
	sqlite3_stmt *st = NULL;
	es_err rc;
	int s;

	*out = NULL;
	if (!node)
		return ES_ERR_NOTFOUND;
	if ((rc = es_sqlite_prepare(db->sq, "SELECT 1 FROM nodes WHERE name = ?", &st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (s == SQLITE_DONE)
		return ES_ERR_NOTFOUND;
	if (s != SQLITE_ROW)
		return es_sqlite_fail(db->sq, "reports list");
	if ((rc = es_sqlite_prepare(db->sq, "SELECT seq, report_type, base_seq, time, received,"
				" body, NULLIF(stream, '') FROM (SELECT * FROM reports"
				" WHERE node = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
				&st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, limit > 0 ? limit : (int)db->reports_kept);
	rc = es_sqlite_collect(db->sq, st, report_from_row, db, "reports list", out);
	sqlite3_finalize(st);
	return rc;
}

es_err es_db_node_cursor_set(es_db *db, const char *node, const char *stream,
			     int64_t seq, int lower_only, int64_t *dropped)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	es_err rc;

	if (dropped)
		*dropped = 0;
	if (!node || !stream || seq < 0)
		return ES_ERR_INVAL;
	if ((rc = db__begin(db)) != ES_OK)
		return rc;
	if ((rc = node_row(db, "SELECT coalesce(stream_id, '') FROM nodes WHERE name = ?1",
			   node, &st, "node cursor")) != ES_OK ||
	    strcmp((const char *)sqlite3_column_text(st, 0), stream) != 0) {
		if (rc == ES_ERR_NOTFOUND) /* no such node */
			rc = ES_OK;
		goto cleanup; /* another stream: not this one's cursor */
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = es_sqlite_prepare(db->sq, "DELETE FROM reports WHERE node = ?1 AND"
				    " stream = ?2 AND seq > ?3", &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, stream, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, seq);
	if ((rc = es_sqlite_step_done(db->sq, st, "node cursor")) != ES_OK)
		goto cleanup;
	n = sqlite3_changes(db->sq->h);
	sqlite3_finalize(st);
	st = NULL;
	/* The state is the agent's word and is whole again at its next
	 * snapshot (every connect begins with one); it only must not claim a
	 * seq past the cursor. */
	if ((rc = es_sqlite_prepare(db->sq, lower_only ?
			"UPDATE nodes SET acked_seq = min(acked_seq, ?1),"
			" state_seq = min(state_seq, ?1), state_ckpt = min(state_ckpt, ?1),"
			" history_bytes = (SELECT coalesce(sum(length(CAST(body AS BLOB))), 0)"
			" FROM reports WHERE node = ?2) WHERE name = ?2" :
			"UPDATE nodes SET acked_seq = ?1,"
			" state_seq = min(state_seq, ?1), state_ckpt = min(state_ckpt, ?1),"
			" history_bytes = (SELECT coalesce(sum(length(CAST(body AS BLOB))), 0)"
			" FROM reports WHERE node = ?2) WHERE name = ?2", &st)) != ES_OK)
		goto cleanup;
	sqlite3_bind_int64(st, 1, seq);
	sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
	if ((rc = es_sqlite_step_done(db->sq, st, "node cursor")) != ES_OK)
		goto cleanup;
	rc = es_sqlite_commit(db->sq);
	if (rc == ES_OK && dropped)
		*dropped = n;
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	return rc;
}

es_err es_db_node_conditions(es_db *db, const char *node, cJSON **out)
{
	cJSON *conds = NULL;
	es_err rc;

	*out = NULL;
	if (!node)
		return ES_OK;
	if ((rc = db__rows_member(db, node, "status", "conditions", &conds)) != ES_OK)
		return rc;
	if (cJSON_IsArray(conds))
		*out = conds;
	else
		cJSON_Delete(conds);
	return ES_OK;
}

es_err es_db_node_cursor_get(es_db *db, const char *node, char *stream,
			     size_t streamsz, int64_t *seq, int64_t *desired_ack)
{
	sqlite3_stmt *st = NULL;
	es_err rc;

	if (!node)
		return ES_ERR_NOTFOUND;
	rc = node_row(db, "SELECT coalesce(stream_id, ''), acked_seq, desired_ack_rv"
		      " FROM nodes WHERE name = ?1", node, &st, "node cursor get");
	if (rc == ES_OK) {
		snprintf(stream, streamsz, "%s", (const char *)sqlite3_column_text(st, 0));
		*seq = sqlite3_column_int64(st, 1);
		*desired_ack = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	return rc;
}
