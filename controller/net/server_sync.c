/*
 * server_sync.c - the agent side of the sync protocol (proto/PROTOCOL.md):
 * hello and the desired sync that follows it, desired pushes on admin
 * writes, reports and their acks, desiredAck, ping/pong and agent errors.
 */
#include "net/server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "es_json.h"
#include "es_log.h"
#include "es_time.h"
#include "es_version.h"
#include "store/store_etcd.h"

/* Room kept in a desired message for its envelope. */
#define DESIRED_BUDGET (ES_PROTO_MAX_MESSAGE - 4096)

/*
 * Group commit (docs/ARCHITECTURE.md, "Durability"): the first report (or
 * desiredAck) that finds no batch open starts one; what arrives in the
 * next BATCH_WINDOW_US joins it, up to BATCH_MAX_REPORTS reports; then the
 * batch commits (one fsync) and only then are its reports acknowledged.
 * A batch opened when the last commit ended BATCH_WINDOW_US ago or longer
 * (the store is idle: nothing is waiting to share the fsync) commits after
 * BATCH_IDLE_US instead, at the next turn of the loop: what this turn read
 * joins it. Under load commits follow each other closer than the window,
 * and every batch collects for the whole window again.
 */
#define BATCH_WINDOW_US 2000
#define BATCH_IDLE_US 1
#define BATCH_AFTER_ANSWER_US 200
#define BATCH_MAX_REPORTS 1024
/* A batch whose report cursors etcd did not take waits this long (µs)
 * before they are sent again (its acks wait with it). */
#define CURSOR_RETRY_US (1000 * LWS_US_PER_MS)
/* Debug setting (README, "Debugging"): exit at once after the Nth commit
 * of a batch that holds reports, before their acks are sent, like a
 * SIGKILL there. */
#define DEBUG_EXIT_ENV "EDGESYNC_DEBUG_EXIT_AFTER_COMMIT"
#define DEBUG_EXIT_CODE 86

/* ---- agents: desired state ---- */

typedef struct desired_batch {
	conn *c;
	int full;
	int64_t rv;
	cJSON *objs, *dels;
	size_t count, bytes;
} desired_batch;

static es_err batch_flush(desired_batch *b, int more)
{
	/* Every part of a split full list says full: the agent joins the parts
	 * and replaces its set at the last one (PROTOCOL.md, "desired"). */
	cJSON *m = es_proto_desired(b->full, b->rv, b->objs, b->dels, more);

	b->objs = b->dels = NULL;
	b->count = b->bytes = 0;
	if (!m)
		return ES_ERR_NOMEM;
	if (server__queue_msg(b->c, m) != ES_OK)
		return ES_ERR_NOMEM;
	b->c->pushed_rv = b->rv;
	if (more) {
		b->objs = cJSON_CreateArray();
		b->dels = cJSON_CreateArray();
		if (!b->objs || !b->dels)
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}

/* Adds item (taken) to the batch's objects or deleted refs, starting a new
 * message when this one is at ES_PROTO_MAX_OBJECTS_PER_MSG or its size
 * budget. */
static es_err batch_add(desired_batch *b, cJSON *item, int deleted)
{
	char *txt = es_json_print(item);
	size_t sz = txt ? strlen(txt) + 1 : 0;
	es_err rc;

	free(txt);
	if (!txt) {
		cJSON_Delete(item);
		return ES_ERR_NOMEM;
	}
	if (sz > DESIRED_BUDGET) {
		es_log_error("server", "object too large for one message, not sent",
			     "node", b->c->node, "name", es_obj_name(item), NULL);
		cJSON_Delete(item);
		return ES_OK;
	}
	if (b->count && (b->count >= ES_PROTO_MAX_OBJECTS_PER_MSG ||
			 b->bytes + sz > DESIRED_BUDGET)) {
		rc = batch_flush(b, 1);
		if (rc != ES_OK) {
			cJSON_Delete(item);
			return rc;
		}
	}
	cJSON_AddItemToArray(deleted ? b->dels : b->objs, item);
	b->count++;
	b->bytes += sz;
	return ES_OK;
}

/* The deletion of obj for a node, by the write at resourceVersion rv. */
static cJSON *deleted_ref(const cJSON *obj, int64_t rv)
{
	return es_proto_deleted_ref(es_obj_kind_str(obj), es_obj_name(obj),
				    es_obj_uid(obj), rv);
}

/*
 * The sync after a hello (PROTOCOL.md "Desired state"): a full list when
 * since is 0, older than the compaction point, newer than the store, or
 * the labels changed; else the changes since it. Always at least one
 * message.
 */
static es_err sync_desired(conn *c, int64_t since, int labels_changed)
{
	es_db *db = c->srv->db;
	desired_batch b = { .c = c };
	cJSON *list = NULL, *tombs = NULL, *it;
	int64_t compacted = 0;
	es_err rc;

	rc = es_db_rv(db, &b.rv, &compacted);
	if (rc != ES_OK)
		goto cleanup;
	b.full = since == 0 || since < compacted || since > b.rv ||
		 labels_changed;
	c->full_owed = labels_changed;
	c->full_rv = b.rv;
	if (b.full)
		rc = es_db_object_list(db, ES_KIND_UNKNOWN, &list);
	else
		rc = es_db_changes_since(db, since, &list, &tombs);
	if (rc != ES_OK)
		goto cleanup;
	b.objs = cJSON_CreateArray();
	b.dels = cJSON_CreateArray();
	if (!b.objs || !b.dels) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	while (rc == ES_OK && list && (it = list->child) != NULL) {
		cJSON_DetachItemViaPointer(list, it);
		if (es_obj_selects(it, c->labels)) {
			rc = batch_add(&b, it, 0);
		} else if (!b.full) {
			cJSON *ref = deleted_ref(it, es_obj_resource_version(it));

			cJSON_Delete(it);
			rc = ref ? batch_add(&b, ref, 1) : ES_ERR_NOMEM;
		} else {
			cJSON_Delete(it);
		}
	}
	for (it = tombs ? tombs->child : NULL; rc == ES_OK && it; it = it->next) {
		cJSON *ref = es_proto_deleted_ref(
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")),
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")),
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "uid")),
			(int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(it,
					"resourceVersion")));

		rc = ref ? batch_add(&b, ref, 1) : ES_ERR_NOMEM;
	}
	if (rc == ES_OK)
		rc = batch_flush(&b, 0);
	es_log_info("server", b.full ? "desired sync: full list" :
		    "desired sync: changes", "node", c->node, NULL);
cleanup:
	cJSON_Delete(b.objs);
	cJSON_Delete(b.dels);
	cJSON_Delete(list);
	cJSON_Delete(tombs);
	return rc;
}

/* The change set {objects:[obj]} (del 0) or {deleted:[ref of obj]} (del 1)
 * at rv, serialised once for every connection it goes to. Errors:
 * ES_ERR_NOMEM, ES_ERR_TOOBIG. */
static es_err change_buf(const cJSON *obj, int del, int64_t rv, es_ws_buf **out)
{
	cJSON *objs = cJSON_CreateArray(), *dels = cJSON_CreateArray();
	cJSON *item = del ? deleted_ref(obj, rv) : cJSON_Duplicate(obj, 1);

	*out = NULL;
	if (!objs || !dels || !item) {
		cJSON_Delete(objs);
		cJSON_Delete(dels);
		cJSON_Delete(item);
		return ES_ERR_NOMEM;
	}
	cJSON_AddItemToArray(del ? dels : objs, item);
	return es_ws_buf_json(es_proto_desired(0, rv, objs, dels, 0),
			      ES_PROTO_MAX_MESSAGE, out);
}

void es_server_object_changed(void *ud, const cJSON *prev, const cJSON *cur)
{
	es_server *s = ud;
	int64_t rv = 0, compacted = 0, now_us = es_time_mono_us();
	/* [0]: the object for nodes it targets, [1]: its deletion for nodes
	 * it targeted; each built at its first use. */
	es_ws_buf *bufs[2] = { NULL, NULL };
	es_err built[2] = { ES_ERR_NOTFOUND, ES_ERR_NOTFOUND };

	if (es_db_rv(s->db, &rv, &compacted) != ES_OK)
		rv = es_obj_resource_version(cur ? cur : prev);
	for (conn *c = s->conns; c; c = c->next) {
		int del;

		if (c->state != CS_READY)
			continue;
		if (cur && es_obj_selects(cur, c->labels))
			del = 0;
		else if (prev && es_obj_selects(prev, c->labels))
			del = 1;
		else
			continue;
		if (built[del] == ES_ERR_NOTFOUND) {
			built[del] = change_buf(del ? prev : cur, del, rv, &bufs[del]);
			if (built[del] == ES_ERR_TOOBIG)
				es_log_error("server", "change set over the size "
					     "limit not sent", "name",
					     es_obj_name(del ? prev : cur), NULL);
		}
		if (built[del] == ES_ERR_TOOBIG)
			continue;
		if (built[del] == ES_OK && server__queue_buf(c, bufs[del]) == ES_OK) {
			es_ctrl_metrics_pushed(&c->acks, rv, now_us);
			c->pushed_rv = rv;
			continue;
		}
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
	}
	es_ws_buf_unref(bufs[0]);
	es_ws_buf_unref(bufs[1]);
	/* A write that targets no waiting node still moves the store's
	 * resourceVersion up to what a wait asks for. */
	if (s->waits)
		server__wait_check(s, NULL);
}

/* ---- agents: batches of reports ---- */

/* uthash (Debian uthash-dev) groups a batch's connections by node. */
static int group_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (group_oom = 1)
#include <uthash.h>

/* A node of the batch being grouped: its index into the cursors. */
typedef struct group_node {
	UT_hash_handle hh;
	size_t k;
} group_node;

/*
 * A batch committed to this controller's file whose report cursors the
 * store (etcd) is committing: its acks wait for that (docs/ARCHITECTURE.md,
 * "The store"). w[i].c is NULL once that connection closed.
 */
typedef struct cursor_wait {
	conn *c;
	int64_t seq;
	int resync;
	size_t node;              /* index into the group's cursors */
} cursor_wait;

typedef struct cursor_group {
	struct cursor_group *next;
	es_server *s;
	lws_sorted_usec_list_t retry; /* etcd did not answer: sent again */
	cursor_wait *w;
	size_t n_w;
	es_store_cursor *cur;
	size_t n_cur;
	char (*names)[ES_NAME_MAX + 1];
	char (*streams)[ES_PROTO_STREAM_ID_MAX + 1];
	cJSON **conds;
} cursor_group;

static void group_free(cursor_group *g)
{
	cursor_group **pp;

	if (!g)
		return;
	lws_sul_cancel(&g->retry);
	for (pp = &g->s->cursor_groups; *pp && *pp != g; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = g->next;
	for (size_t i = 0; g->conds && i < g->n_cur; i++)
		cJSON_Delete(g->conds[i]);
	free(g->conds);
	free(g->w);
	free(g->cur);
	free(g->names);
	free(g->streams);
	free(g);
}

/* Acknowledges what c is owed, or closes it when the store failed. */
static void owe_answer(conn *c, int64_t seq, int resync, es_err rc)
{
	if (rc != ES_OK) {
		server__queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
		return;
	}
	if ((seq && server__queue_msg(c, es_proto_ack(seq)) != ES_OK) ||
	    (resync && server__queue_msg(c, es_proto_resync()) != ES_OK))
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
}

static void cursors_retry(lws_sorted_usec_list_t *sul);

void server__cursor_groups_free(es_server *s)
{
	while (s->cursor_groups) {
		cursor_group *g = s->cursor_groups;

		for (size_t i = 0; i < g->n_w; i++)
			if (g->w[i].c)
				g->w[i].c->cursor_wait--;
		group_free(g); /* unlinks g */
	}
}

static void on_cursors(void *ud, const es_store_cursor_result *res, size_t n)
{
	cursor_group *g = ud;
	es_server *s = g->s;
	int64_t dropped = 0;
	size_t kept = 0;
	char d[24];

	for (size_t i = 0; i < n && i < g->n_cur; i++) {
		dropped = 0;
		if (res[i].rc != ES_ERR_EXISTS)
			continue;
		/* Another controller serves the node: what this one stored
		 * past what etcd says it committed is provisional and goes
		 * (nothing when etcd said nothing: the other controller's
		 * record, once read, bounds it). */
		if (res[i].committed >= 0 &&
		    es_db_node_cursor_set(s->db, g->names[i], g->streams[i],
					  res[i].committed, 1, &dropped) != ES_OK)
			es_log_error("server", "could not drop provisional reports",
				     "node", g->names[i], NULL);
		snprintf(d, sizeof(d), "%lld", (long long)dropped);
		es_log_warn("server", "report cursor lost to another controller; the"
			    " reports are not acknowledged", "node", g->names[i],
			    "reason", res[i].error, "provisionalDropped", d, NULL);
	}
	for (size_t i = 0; i < g->n_w; i++) {
		conn *c = g->w[i].c;
		const es_store_cursor_result *r = g->w[i].node < n ? &res[g->w[i].node] : NULL;

		if (!c)
			continue;
		if (r && r->rc == ES_ERR_IO && !s->stop) {
			/* etcd did not answer (or kept failing): the session
			 * stays, its reports wait as provisional rows and
			 * unacknowledged, and the cursors go again. */
			if (!kept)
				es_log_gated(&s->cursor_gate, ES_LOG_WARN, "server",
					     "report cursors not committed to etcd;"
					     " the acks wait and the write goes again",
					     "node", c->node, "error", r->error, NULL);
			g->w[kept++] = g->w[i];
			continue;
		}
		c->cursor_wait--;
		if (r && r->rc == ES_OK)
			es_log_gate_reset(&s->cursor_gate);
		if (r && r->rc == ES_ERR_EXISTS) {
			/* A newer session of the node on another controller
			 * moved its record: this one is replaced. */
			server__session_replaced(c, r->error);
			continue;
		}
		if (r && r->rc != ES_OK)
			es_log_error("server", "report cursor not committed to the store;"
				     " the reports are not acknowledged", "node", c->node,
				     "error", r->error, NULL);
		owe_answer(c, g->w[i].seq, g->w[i].resync, r ? r->rc : ES_ERR_IO);
	}
	if (kept) {
		g->n_w = kept;
		lws_sul_schedule(s->ctx, 0, &g->retry, cursors_retry, CURSOR_RETRY_US);
		return;
	}
	group_free(g);
}

/* The group's cursors sent again, each node's as the file holds it now
 * (later batches may have moved it: never a cursor older than theirs). */
static void cursors_retry(lws_sorted_usec_list_t *sul)
{
	cursor_group *g = lws_container_of(sul, cursor_group, retry);
	es_server *s = g->s;
	es_err rc = s->stop ? ES_ERR_IO : ES_OK;

	for (size_t k = 0; rc == ES_OK && k < g->n_cur; k++) {
		es_store_cursor *e = &g->cur[k];

		cJSON_Delete(g->conds[k]);
		g->conds[k] = NULL;
		rc = es_db_node_cursor_get(s->db, g->names[k], g->streams[k],
					   sizeof(g->streams[k]), &e->seq, &e->desired_ack);
		if (rc == ES_OK)
			rc = es_db_node_conditions(s->db, g->names[k], &g->conds[k]);
		e->conditions = g->conds[k];
	}
	if (rc == ES_OK)
		rc = es_store_cursors_put(s->store, g->cur, g->n_cur, on_cursors, g);
	if (rc == ES_OK)
		return;
	for (size_t i = 0; i < g->n_w; i++)
		if (g->w[i].c) {
			g->w[i].c->cursor_wait--;
			owe_answer(g->w[i].c, g->w[i].seq, g->w[i].resync, rc);
		}
	group_free(g);
}

/* The cursors of the committed batch's nodes to the store; 1 when the
 * store answers later (the acks wait in a group), 0 when it keeps no
 * cursors (acknowledge now), -1 on failure. */
static int cursors_send(es_server *s, conn *batch)
{
	cursor_group *g = calloc(1, sizeof(*g));
	size_t n = 0;
	time_t now = time(NULL);
	group_node *nodes, *byname = NULL;
	es_err rc;

	for (conn *c = batch; c; c = c->batch_next)
		n++;
	nodes = calloc(n ? n : 1, sizeof(*nodes));
	if (!g || !nodes || !(g->w = calloc(n, sizeof(*g->w))) || !(g->cur = calloc(n, sizeof(*g->cur))) ||
	    !(g->names = calloc(n, sizeof(*g->names))) ||
	    !(g->streams = calloc(n, sizeof(*g->streams))) ||
	    !(g->conds = calloc(n, sizeof(*g->conds)))) {
		if (g) {
			free(g->w);
			free(g->cur);
			free(g->names);
			free(g->streams);
		}
		free(g);
		free(nodes);
		return -1;
	}
	g->s = s;
	g->next = s->cursor_groups;
	s->cursor_groups = g;
	for (conn *c = batch; c; c = c->batch_next) {
		size_t k = g->n_cur;
		group_node *gn = NULL;

		HASH_FIND(hh, byname, c->node, strlen(c->node), gn);
		if (gn)
			k = gn->k;
		else {
			es_store_cursor *e = &g->cur[k];

			snprintf(g->names[k], sizeof(g->names[k]), "%s", c->node);
			nodes[k].k = k;
			group_oom = 0;
			HASH_ADD_KEYPTR(hh, byname, g->names[k], strlen(g->names[k]), &nodes[k]);
			if (group_oom ||
			    es_db_node_cursor_get(s->db, c->node, g->streams[k],
						  sizeof(g->streams[k]), &e->seq,
						  &e->desired_ack) != ES_OK ||
			    es_db_node_conditions(s->db, c->node, &g->conds[k]) != ES_OK) {
				HASH_CLEAR(hh, byname);
				free(nodes);
				group_free(g);
				return -1;
			}
			e->node = g->names[k];
			e->stream = g->streams[k];
			e->last_report = now;
			e->conditions = g->conds[k];
			g->n_cur++;
		}
		g->w[g->n_w].c = c;
		g->w[g->n_w].seq = c->ack_owed;
		g->w[g->n_w].resync = c->resync_owed;
		g->w[g->n_w].node = k;
		g->n_w++;
		c->cursor_wait++;
	}
	HASH_CLEAR(hh, byname);
	free(nodes);
	rc = es_store_cursors_put(s->store, g->cur, g->n_cur, on_cursors, g);
	if (rc == ES_OK)
		return 1;
	for (size_t i = 0; i < g->n_w; i++)
		g->w[i].c->cursor_wait--;
	group_free(g);
	return rc == ES_ERR_UNSUPPORTED ? 0 : -1;
}

void server__batch_flush(es_server *s)
{
	es_err rc;
	conn *c;
	int later = 0;

	lws_sul_cancel(&s->batch_sul);
	if (!es_db_batch_open(s->db))
		return;
	rc = es_db_batch_commit(s->db);
	s->batch_done_us = es_time_mono_us();
	if (rc == ES_OK && s->batch_reports && s->debug_exit_after > 0 &&
	    --s->debug_exit_after == 0) {
		es_log_warn("server", "debug: exiting after a commit, before its acks",
			    "setting", DEBUG_EXIT_ENV, NULL);
		_exit(DEBUG_EXIT_CODE);
	}
	s->batch_reports = 0;
	/* Stopping with a store (closed by now): the cursors of this batch
	 * never reach etcd, so it is not acknowledged; its reports are
	 * provisional here and the agents send them again. */
	if (s->stopping && s->store)
		later = 1;
	/* store = etcd: the acks wait for the nodes' cursors there too. */
	else if (rc == ES_OK && s->batch && s->store &&
		 (later = cursors_send(s, s->batch)) < 0)
		rc = ES_ERR_NOMEM;
	while ((c = s->batch) != NULL) {
		int64_t seq = c->ack_owed;
		int resync = c->resync_owed;

		s->batch = c->batch_next;
		c->batch_next = NULL;
		c->in_batch = 0;
		c->ack_owed = 0;
		c->resync_owed = 0;
		if (later <= 0)
			owe_answer(c, seq, resync, rc);
	}
}

static void batch_timer(lws_sorted_usec_list_t *sul)
{
	server__batch_flush(lws_container_of(sul, es_server, batch_sul));
}

/* Opens a batch when none is, and arms its commit: after the window, or
 * at the next turn of the loop when the store was idle. */
static void batch_join(es_server *s)
{
	if (s->debug_exit_after < 0) {
		const char *v = getenv(DEBUG_EXIT_ENV);

		s->debug_exit_after = v && *v ? strtoll(v, NULL, 10) : 0;
		if (s->debug_exit_after < 0)
			s->debug_exit_after = 0;
	}
	if (es_db_batch_open(s->db))
		return;
	es_db_batch_begin(s->db);
	s->batch_idle = es_time_mono_us() - s->batch_done_us >= BATCH_WINDOW_US;
	lws_sul_schedule(s->ctx, 0, &s->batch_sul, batch_timer,
			 s->batch_idle ? BATCH_IDLE_US : BATCH_WINDOW_US);
}

/* An admin answer was owed in this turn of the loop (a wait that a
 * desiredAck ended): a batch that would commit at the next turn, before
 * the loop writes, commits BATCH_AFTER_ANSWER_US later instead, so the
 * answer goes out first and does not wait for the fsync. Lost in a crash
 * in between, the desiredAck is recorded again after the agent's next
 * hello: the sync after every hello is acknowledged (PROTOCOL.md,
 * "Desired state"). */
static void batch_after_answers(es_server *s)
{
	if (es_db_batch_open(s->db) && s->batch_idle)
		lws_sul_schedule(s->ctx, 0, &s->batch_sul, batch_timer,
				 BATCH_AFTER_ANSWER_US);
}

/* c is owed an ack of seq (and a resync) when the batch commits. */
static void batch_owe(conn *c, int64_t seq, int resync)
{
	es_server *s = c->srv;

	if (seq > c->ack_owed)
		c->ack_owed = seq;
	c->resync_owed |= resync;
	if (!c->in_batch) {
		c->in_batch = 1;
		c->batch_next = s->batch;
		s->batch = c;
	}
	if (++s->batch_reports >= BATCH_MAX_REPORTS)
		server__batch_flush(s);
}

void server__batch_forget(conn *c)
{
	conn **pp;

	if (c->cursor_wait && c->srv)
		for (cursor_group *g = c->srv->cursor_groups; g; g = g->next)
			for (size_t i = 0; i < g->n_w; i++)
				if (g->w[i].c == c)
					g->w[i].c = NULL;
	c->cursor_wait = 0;
	if (!c->in_batch || !c->srv)
		return;
	for (pp = &c->srv->batch; *pp; pp = &(*pp)->batch_next)
		if (*pp == c) {
			*pp = c->batch_next;
			break;
		}
	c->in_batch = 0;
	c->batch_next = NULL;
}

/* ---- agents: messages ---- */

/* Binds the node's report cursor to the hello's streamId (PROTOCOL.md,
 * "hello"); *acked: the node's cursor before, then the one that applies. */
static es_err hello_stream(conn *c, const char *stream, int64_t next_seq,
			   int64_t *acked)
{
	char prev[ES_PROTO_STREAM_ID_MAX + 1], was[24], nxt[24];
	int fresh = 0;
	int64_t before = *acked;
	es_err rc = es_db_node_stream(c->srv->db, c->node, stream, next_seq, acked,
				      &fresh, prev, sizeof(prev));

	if (rc != ES_OK || !fresh)
		return rc;
	snprintf(was, sizeof(was), "%lld", (long long)before);
	snprintf(nxt, sizeof(nxt), "%lld", (long long)next_seq);
	es_log_warn("server", "new report stream: the agent's database was made "
		    "anew; its reports count from seq 1, the earlier ones stay in "
		    "the history", "node", c->node, "streamId", stream,
		    "previousStreamId", prev[0] ? prev : "(none)",
		    "previousAckedSeq", was, "nextSeq", nxt, NULL);
	return ES_OK;
}

/*
 * store = etcd: the node's cursor is the one etcd holds (read when this
 * controller took the session) for the hello's stream: the record's own,
 * or one of the earlier streams it keeps (two agents with one identity,
 * or an agent back with an older database, switch the node's stream);
 * a stream it does not name: nothing of it is committed (0). This file's
 * reports of the stream above it are provisional (stored here, never
 * committed to etcd) and go: the agent sends them again. No record on
 * etcd: the file's cursor stands (the first write creates the record).
 */
static es_err hello_cursor(conn *c, const char *stream, int64_t *acked)
{
	char d[24], a[24];
	int64_t seq = 0, dropped = 0;
	es_err rc;

	if (!es_store_cursor_get(c->srv->store, c->node, stream ? stream : "", &seq))
		return ES_OK;
	rc = es_db_node_cursor_set(c->srv->db, c->node, stream ? stream : "", seq, 0,
				   &dropped);
	if (rc != ES_OK)
		return rc;
	if (dropped || seq != *acked) {
		snprintf(d, sizeof(d), "%lld", (long long)dropped);
		snprintf(a, sizeof(a), "%lld", (long long)seq);
		es_log_info("server", "report cursor taken from the store", "node", c->node,
			    "ackedSeq", a, "provisionalDropped", d, NULL);
	}
	*acked = seq;
	return ES_OK;
}

/* 1 when another session of c's node is up (c's hello replaces it, so it
 * adds no session). */
static int node_has_session(const es_server *s, const conn *c)
{
	for (const conn *o = s->conns; o; o = o->next)
		if (o != c && o->state == CS_READY && strcmp(o->node, c->node) == 0)
			return 1;
	return 0;
}

/*
 * The welcome answering hello (PROTOCOL.md "welcome"): of the hello's
 * protocol version. A version 2 agent that announced `deflate` gets the
 * capability back, and from the welcome on both directions may carry
 * compressed messages (es_ws.h, ES_WS_DEFLATE_MIN).
 */
static es_err queue_welcome(conn *c, const cJSON *hello, int64_t acked)
{
	cJSON *w = es_proto_welcome(c->node, ES_VERSION, acked);
	int v2 = es_proto_version_of(hello) == 2;
	int deflate = v2 && es_proto_has_capability(hello, ES_PROTO_CAP_DEFLATE);
	es_err rc;

	if (w && ((v2 && es_proto_make_v2(w, deflate) != ES_OK) ||
		  server__renew_welcome(c, w) != ES_OK)) {
		cJSON_Delete(w);
		w = NULL;
	}
	if ((rc = server__queue_msg(c, w)) != ES_OK)
		return rc;
	c->rx.inflate = deflate;
	c->q.deflate = deflate;
	return ES_OK;
}

static void on_hello(conn *c, const cJSON *msg)
{
	es_server *s = c->srv;
	const char *node = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "node"));
	const cJSON *labels = cJSON_GetObjectItem(msg, "labels");
	const char *stream = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "streamId"));
	int64_t since = 0, acked = 0, next_seq = 1;
	int labels_changed = 0;
	char e[512];

	if (c->helloed) {
		server__queue_error(c, ES_PC_PROTOCOL,
				    "a second hello on this connection");
		return;
	}
	if (!node || strcmp(node, c->node) != 0) {
		snprintf(e, sizeof(e),
			 "hello.node \"%.253s\" is not the certificate's node \"%s\"",
			 node ? node : "", c->node);
		server__queue_error(c, ES_PC_IDENTITY, e);
		return;
	}
	if (s->max_sessions && s->n_ready >= s->max_sessions &&
	    !node_has_session(s, c)) {
		/* Come back later (PROTOCOL.md "Errors"), before any store
		 * work: the agent waits retryAfterSeconds and some jitter. */
		es_log_warn("server", "agent session refused: max-sessions reached",
			    "node", c->node, NULL);
		es_ctrl_metrics_refused(s->metrics, "Overloaded");
		server__pending_done(c->wsi);
		(void)server__queue_msg(c, es_proto_overloaded(
			s->overload_retry_s, "too many agent sessions; come back later"));
		server__start_close(c, es_proto_close_code(ES_PC_OVERLOADED),
				    es_proto_code_name(ES_PC_OVERLOADED));
		return;
	}
	if (server__enroll_check(c) != 0 || server__session_take(c, msg) != 0)
		return;
	es_json_get_int(msg, "hello", "resourceVersion", 0, 0, ES_JSON_MAX_INT,
			&since, NULL, 0);
	es_json_get_int(msg, "hello", "nextSeq", 0, 1, ES_JSON_MAX_INT, &next_seq,
			NULL, 0);
	for (conn *o = s->conns; o; o = o->next) {
		if (o == c || o->state != CS_READY || strcmp(o->node, c->node))
			continue;
		es_log_info("server", "connection replaced by a newer one",
			    "node", o->node, NULL);
		o->replaced = 1;
		server__queue_clear(o);
		server__start_close(o, ES_SERVER_CLOSE_REPLACED, "replaced");
	}
	c->labels = cJSON_IsObject(labels) ? cJSON_Duplicate(labels, 1)
					   : cJSON_CreateObject();
	if (!c->labels || server__enroll_labels(c) != ES_OK) {
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
		return;
	}
	if (es_db_node_hello(s->db, c->node, c->labels,
			     cJSON_GetStringValue(cJSON_GetObjectItem(msg, "agentVersion")),
			     cJSON_GetStringValue(cJSON_GetObjectItem(msg, "bootId")),
			     time(NULL), &acked, &labels_changed) != ES_OK ||
	    (stream && hello_stream(c, stream, next_seq, &acked) != ES_OK)) {
		server__queue_error(c, ES_PC_INTERNAL,
				    "the controller's store failed");
		return;
	}
	if (hello_cursor(c, stream, &acked) != ES_OK) {
		server__queue_error(c, ES_PC_INTERNAL,
				    "the controller's store failed");
		return;
	}
	c->helloed = 1;
	c->state = CS_READY;
	s->n_ready++;
	server__pending_done(c->wsi);
	es_log_info("server", "agent connected", "node", c->node, "protocolVersion",
		    es_proto_version_of(msg) == 2 ? "2" : "1", "compression",
		    es_proto_version_of(msg) == 2 &&
		    es_proto_has_capability(msg, ES_PROTO_CAP_DEFLATE) ? "deflate" : "none",
		    "serial", c->serial[0] ? c->serial : "(unread)", NULL);
	if (queue_welcome(c, msg, acked) != ES_OK ||
	    sync_desired(c, since, labels_changed) != ES_OK)
		server__queue_error(c, ES_PC_INTERNAL,
				    "could not compute the desired state");
}

/*
 * The node a report speaks for, when it is not the connection's
 * (PROTOCOL.md, "Reports"): a snapshot's or patch's Node metadata.name, an
 * event's involvedObject of kind Node. NULL when it names none or c's node;
 * "" for a name that is not a string.
 */
void server__hello_resume(conn *c, const cJSON *msg)
{
	on_hello(c, msg);
}

static const char *report_foreign_node(const conn *c, const cJSON *msg)
{
	const cJSON *body = cJSON_GetObjectItemCaseSensitive(msg, "body");
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
								"reportType"));
	const cJSON *name;

	if (type && strcmp(type, "event") == 0) {
		const cJSON *io = cJSON_GetObjectItemCaseSensitive(body, "involvedObject");
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
			io, "kind"));

		if (!kind || strcmp(kind, "Node") != 0)
			return NULL;
		name = cJSON_GetObjectItemCaseSensitive(io, "name");
	} else {
		name = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(body, "metadata"), "name");
		if (!name)
			return NULL;
	}
	if (cJSON_IsString(name) && strcmp(name->valuestring, c->node) == 0)
		return NULL;
	return cJSON_IsString(name) ? name->valuestring : "";
}

/*
 * Drops from a snapshot's, patch's or delta's status.objects (a merge patch
 * replaces the array whole; a delta's entries are keyed changes) the
 * entries for objects the controller has, with that uid, that do not
 * target c's node; each is logged. Entries for objects the
 * controller no longer has stay: the describe view shows them as still held
 * by the agent. Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
static es_err drop_foreign_status(conn *c, cJSON *msg)
{
	cJSON *objs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(msg, "body"), "status"), "objects");
	cJSON *e = cJSON_IsArray(objs) ? objs->child : NULL, *next;

	for (; e; e = next) {
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "kind"));
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
		const char *uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "uid"));
		es_kind k = kind ? es_obj_kind_parse(kind) : ES_KIND_UNKNOWN;
		cJSON *obj = NULL;
		es_err rc;
		int foreign;

		next = e->next;
		/* A keyed change's directives ("$patch": delete, replace) stay. */
		if (cJSON_GetObjectItemCaseSensitive(e, "$patch"))
			continue;
		if (k < ES_KIND_COLLECTOR_CONFIG || strcmp(es_obj_kind_name(k), kind) != 0 ||
		    !name)
			continue;
		rc = es_db_object_get(c->srv->db, k, name, &obj);
		if (rc == ES_ERR_NOTFOUND)
			continue;
		if (rc != ES_OK)
			return rc;
		foreign = (!uid || (es_obj_uid(obj) && strcmp(uid, es_obj_uid(obj)) == 0)) &&
			  !es_obj_selects(obj, c->labels);
		cJSON_Delete(obj);
		if (!foreign)
			continue;
		es_log_warn("server", "status of an object that does not target this "
			    "node dropped", "node", c->node, "kind", kind, "name", name,
			    NULL);
		cJSON_Delete(cJSON_DetachItemViaPointer(objs, e));
	}
	return ES_OK;
}

static void on_report(conn *c, cJSON *msg)
{
	int64_t seq = 0;
	int dup = 0, resync = 0;
	const char *named;
	char e[512], s[24];

	es_json_get_int(msg, "report", "seq", 1, 1, ES_JSON_MAX_INT, &seq, NULL, 0);
	if ((named = report_foreign_node(c, msg)) != NULL) {
		snprintf(s, sizeof(s), "%lld", (long long)seq);
		es_log_warn("server", "report for another node refused", "node", c->node,
			    "named", named, "seq", s, NULL);
		snprintf(e, sizeof(e), "report %s names node \"%.253s\", not the "
			 "certificate's node \"%s\"", s, named, c->node);
		server__queue_error(c, ES_PC_IDENTITY, e);
		return;
	}
	if (drop_foreign_status(c, msg) != ES_OK) {
		server__queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
		return;
	}
	batch_join(c->srv);
	if (es_db_report_store(c->srv->db, c->node, msg, time(NULL), &dup,
			       &resync) != ES_OK) {
		server__queue_error(c, ES_PC_INTERNAL,
				    "the controller's store failed");
		return;
	}
	if (dup)
		es_ctrl_metrics_duplicate(c->srv->metrics);
	/* A duplicate too: its first copy may be in this very batch. */
	batch_owe(c, seq, resync);
}

/* The agent acknowledged the full list owed after its labels changed. */
static void full_acknowledged(conn *c)
{
	if (es_db_node_full_done(c->srv->db, c->node, time(NULL)) != ES_OK)
		server__queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
	else
		c->full_owed = 0;
}

void server__handle_message(conn *c, const char *buf, size_t len)
{
	es_msg_type t = ES_MSG_UNKNOWN;
	es_proto_code code = ES_PC_MALFORMED;
	cJSON *msg = NULL;
	char e[512];
	int64_t rv = 0;
	es_err rc;

	rc = es_proto_decode(buf, len, &t, &msg, &code, e, sizeof(e));
	if (rc == ES_ERR_NOMEM) {
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
		return;
	}
	if (rc != ES_OK) {
		server__queue_error(c, code, e);
		return;
	}
	es_ctrl_metrics_message(c->srv->metrics, es_proto_type_name(t));
	if (t != ES_MSG_HELLO && !c->helloed) {
		snprintf(e, sizeof(e), "%s before hello", es_proto_type_name(t));
		server__queue_error(c, ES_PC_PROTOCOL, e);
		goto cleanup;
	}
	switch (t) {
	case ES_MSG_HELLO:
		on_hello(c, msg);
		break;
	case ES_MSG_REPORT:
		on_report(c, msg);
		break;
	case ES_MSG_DESIRED_ACK:
		es_json_get_int(msg, "desiredAck", "resourceVersion", 1, 0,
				ES_JSON_MAX_INT, &rv, NULL, 0);
		es_ctrl_metrics_acked(c->srv->metrics, &c->acks, rv,
				      es_time_mono_us());
		/* Recorded in the batch: nothing is acknowledged for it. */
		batch_join(c->srv);
		if (es_db_node_desired_ack(c->srv->db, c->node, rv, time(NULL)) != ES_OK)
			server__queue_error(c, ES_PC_INTERNAL,
					    "the controller's store failed");
		else if (c->full_owed && rv >= c->full_rv)
			full_acknowledged(c);
		if (rv > c->acked_rv)
			c->acked_rv = rv;
		if (c->srv->waits && server__wait_check(c->srv, c->node) > 0)
			batch_after_answers(c->srv);
		break;
	case ES_MSG_PING:
		if (server__queue_msg(c, es_proto_pong(cJSON_GetStringValue(
				 cJSON_GetObjectItem(msg, "time")))) != ES_OK)
			server__queue_error(c, ES_PC_INTERNAL, "out of memory");
		break;
	case ES_MSG_PONG:
		break;
	case ES_MSG_CERT_REQUEST:
		server__on_cert_request(c, msg);
		break;
	case ES_MSG_ERROR:
		es_log_warn("server", "agent reported an error", "node", c->node,
			    "code", cJSON_GetStringValue(cJSON_GetObjectItem(msg, "code")),
			    "error", cJSON_GetStringValue(cJSON_GetObjectItem(msg, "message")),
			    NULL);
		break;
	default:
		snprintf(e, sizeof(e), "%s is sent by the controller, not to it",
			 es_proto_type_name(t));
		server__queue_error(c, ES_PC_PROTOCOL, e);
		break;
	}
cleanup:
	cJSON_Delete(msg);
}

