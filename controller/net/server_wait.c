/*
 * server_wait.c - admin requests that wait until a node's agent holds the
 * desired state up to a resourceVersion (GET .../nodes/NAME?
 * waitForDesiredResourceVersion=N, server_int.h): the waits, their
 * timeouts and the check made when a desiredAck arrives or a write is
 * pushed.
 *
 * A node is in sync as of N when this controller has taken in every write
 * up to N (its store's resourceVersion is N or later, which with etcd
 * means its mirror has caught up) and the node's connection here has
 * acknowledged every desired message pushed to it up to N: its latest
 * desiredAck is at least min(N, the last resourceVersion pushed to it).
 * A write that does not target the node is never pushed to it, so it
 * needs no acknowledgement. A node with no ready session here is in sync
 * when the last desiredAck recorded here reaches N (what its last session
 * acknowledged); else the wait goes on until a session of the node here
 * acknowledges (its sync after the hello) or the timeout. With store =
 * etcd, where another controller may serve the node, a node without a
 * session here when the wait starts is refused at once (409).
 */
#include "net/server_int.h"

#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store.h"

struct node_wait {
	struct node_wait *prev, *next;
	es_server *srv;
	lws_sorted_usec_list_t timeout;
	char node[ES_NAME_MAX + 1];
	int64_t rv;
	int timeout_s;
	server_wait_fn done;
	void *ud;
};

/* Reads a decimal integer of min..max from s (len bytes); -1 when it is
 * anything else. */
static int64_t param_int(const char *s, size_t len, int64_t min, int64_t max)
{
	int64_t v = 0;

	if (!len || len > 19)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	return v >= min ? v : -1;
}

/* 1 when the query item p (len bytes, "name" or "name=value") is named
 * name; *val and *vlen are its value (NULL, 0 when it has no '='). */
static int item_is(const char *p, size_t len, const char *name, const char **val,
		   size_t *vlen)
{
	size_t n = strlen(name);

	if (len < n || strncmp(p, name, n) != 0 || (len > n && p[n] != '='))
		return 0;
	*val = len > n ? p + n + 1 : NULL;
	*vlen = len > n ? len - n - 1 : 0;
	return 1;
}

/* Says in why that parameter name must be "<what>an integer of min to
 * max<unit>", not val (vlen bytes; NULL: no value given); returns -1. */
static int bad_value(char *why, size_t whysz, const char *name, const char *what,
		     int64_t min, int64_t max, const char *unit, const char *val,
		     size_t vlen)
{
	int n = snprintf(why, whysz, "%s must be %san integer of %lld to %lld%s, not ",
			 name, what, (long long)min, (long long)max, unit);

	if (n < 0 || (size_t)n >= whysz)
		return -1;
	if (val)
		snprintf(why + n, whysz - (size_t)n, "\"%.*s\"",
			 (int)(vlen > 64 ? 64 : vlen), val);
	else
		snprintf(why + n, whysz - (size_t)n, "empty");
	return -1;
}

int server__wait_params(const char *query, int64_t *rv, int *timeout_s,
			char *why, size_t whysz)
{
	const char *p = query;
	int found = 0, timeout_given = 0;
	const char *twice = NULL;

	*rv = 0;
	*timeout_s = SERVER_WAIT_DEFAULT_S;
	while (p && *p) {
		const char *amp = strchr(p, '&'), *val;
		size_t len = amp ? (size_t)(amp - p) : strlen(p), vlen;
		int64_t v;

		if (item_is(p, len, SERVER_WAIT_PARAM, &val, &vlen)) {
			v = val ? param_int(val, vlen, 1, ES_JSON_MAX_INT) : -1;
			if (v < 0)
				return bad_value(why, whysz, SERVER_WAIT_PARAM, "a resourceVersion, ",
						 1, ES_JSON_MAX_INT, "", val, vlen);
			*rv = v;
			twice = found ? SERVER_WAIT_PARAM : twice;
			found = 1;
		} else if (item_is(p, len, SERVER_WAIT_TIMEOUT_PARAM, &val, &vlen)) {
			v = val ? param_int(val, vlen, 0, SERVER_WAIT_MAX_S) : -1;
			if (v < 0)
				return bad_value(why, whysz, SERVER_WAIT_TIMEOUT_PARAM, "", 0,
						 SERVER_WAIT_MAX_S, " (seconds)", val, vlen);
			*timeout_s = (int)v;
			twice = timeout_given ? SERVER_WAIT_TIMEOUT_PARAM : twice;
			timeout_given = 1;
		}
		p = amp ? amp + 1 : NULL;
	}
	if (twice) {
		snprintf(why, whysz, "%s is given more than once", twice);
		return -1;
	}
	if (timeout_given && !found) {
		snprintf(why, whysz, "%s applies only with %s", SERVER_WAIT_TIMEOUT_PARAM,
			 SERVER_WAIT_PARAM);
		return -1;
	}
	return found;
}

/* The connection that serves node here: ready, or still at its hello
 * (*ready 0); NULL when there is none. A connection being replaced or
 * closing does not count. */
static conn *node_conn(es_server *s, const char *node, int *ready)
{
	conn *hello = NULL;

	for (conn *c = s->conns; c; c = c->next) {
		if (c->replaced || strcmp(c->node, node) != 0)
			continue;
		if (c->state == CS_READY) {
			*ready = 1;
			return c;
		}
		if (c->state == CS_HELLO)
			hello = c;
	}
	*ready = 0;
	return hello;
}

/* The resourceVersion up to which this controller has taken in every
 * write (0 when its file cannot be read). */
static int64_t store_rv(es_server *s)
{
	int64_t cur = 0, compacted = 0;

	return es_db_rv(s->db, &cur, &compacted) == ES_OK ? cur : 0;
}

/* 1 when node, served by c here, is in sync as of rv (the file's head
 * comment); stored is store_rv's. */
static int in_sync(const conn *c, int64_t rv, int64_t stored)
{
	if (!c->pushed_rv || stored < rv)
		return 0;
	return c->acked_rv >= (rv < c->pushed_rv ? rv : c->pushed_rv);
}

static void in_sync_message(const char *node, int64_t rv, int64_t acked, char *msg,
			    size_t msgsz)
{
	snprintf(msg, msgsz, "node %s holds the desired state of resourceVersion %lld "
		 "(its last desiredAck: %lld)", node, (long long)rv, (long long)acked);
}

/* What this controller's file records of node: *known 1 when it has a
 * row, *acked its last desiredAck (0: none). Errors read as unknown. */
static void node_record(es_server *s, const char *node, int *known, int64_t *acked)
{
	es_db_node_brief *b = NULL;
	size_t n = 0;

	*known = 0;
	*acked = 0;
	if (es_db_node_briefs(s->db, node, &b, &n) != ES_OK)
		return;
	if (n) {
		*known = 1;
		*acked = b[0].desired_ack;
	}
	es_db_node_briefs_free(b, n);
}

static void not_connected(const char *node, char *msg, size_t msgsz)
{
	snprintf(msg, msgsz, "node %s has no agent session on this controller: "
		 "another controller may serve it (status.sync.controller names "
		 "the one that does), or none does", node);
}

static void unlink_wait(node_wait *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		w->srv->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	lws_sul_cancel(&w->timeout);
}

/* Ends w: unlinked and freed, then its callback runs. */
static void finish(node_wait *w, int status, const char *reason, const char *msg)
{
	server_wait_fn done = w->done;
	void *ud = w->ud;

	unlink_wait(w);
	free(w);
	done(ud, status, reason, msg);
}

/* The message of a wait that timed out; c as node_conn gave it, acked
 * the node's recorded desiredAck when c is not ready. */
static void timeout_message(const char *node, int64_t rv, int timeout_s,
			    const conn *c, int ready, int64_t acked, char *msg,
			    size_t msgsz)
{
	int n = timeout_s ?
		snprintf(msg, msgsz, "node %s did not acknowledge the desired state of "
			 "resourceVersion %lld within %d s", node, (long long)rv, timeout_s) :
		snprintf(msg, msgsz, "node %s has not acknowledged the desired state of "
			 "resourceVersion %lld", node, (long long)rv);

	if (n < 0 || (size_t)n >= msgsz)
		return;
	if (c && ready)
		snprintf(msg + n, msgsz - (size_t)n, " (its last desiredAck: %lld)",
			 (long long)c->acked_rv);
	else if (c)
		snprintf(msg + n, msgsz - (size_t)n, " (its agent's session here is "
			 "still at its hello; its last desiredAck: %lld)", (long long)acked);
	else
		snprintf(msg + n, msgsz - (size_t)n, " (its agent has no session on "
			 "this controller: it closed, or the node has not connected "
			 "since the wait began; its last desiredAck: %lld)",
			 (long long)acked);
}

/* 1 when the store is SQLite (or none is set): this controller alone
 * serves the nodes and keeps their only record. */
static int store_local(const es_server *s)
{
	return !s->store || strcmp(es_store_backend(s->store), "sqlite") == 0;
}

static void on_timeout(lws_sorted_usec_list_t *sul)
{
	node_wait *w = lws_container_of(sul, node_wait, timeout);
	int ready = 0;
	conn *c = node_conn(w->srv, w->node, &ready);
	char msg[512];
	int known;
	int64_t acked = 0;

	if (!c || !ready)
		node_record(w->srv, w->node, &known, &acked);
	timeout_message(w->node, w->rv, w->timeout_s, c, ready, acked, msg, sizeof(msg));
	finish(w, 504, "Timeout", msg);
}

int server__wait_start(es_server *s, const char *node, int64_t rv, int timeout_s,
		       server_wait_fn done, void *ud, node_wait **out,
		       char *msg, size_t msgsz)
{
	int ready = 0, known = 0;
	conn *c = node_conn(s, node, &ready);
	int64_t acked = 0, stored = store_rv(s);
	node_wait *w;

	*out = NULL;
	if (!c || !ready) {
		/* A node known only to another controller (etcd) has no row. */
		node_record(s, node, &known, &acked);
		if (!c && !known && store_local(s)) {
			snprintf(msg, msgsz, "nodes \"%s\" not found", node);
			return 404;
		}
		if (!c && !store_local(s)) {
			not_connected(node, msg, msgsz);
			return 409;
		}
		/* Without its session, which writes did not target the node
		 * is not known: its recorded desiredAck must reach rv. */
		if (known && acked >= rv && stored >= rv) {
			in_sync_message(node, rv, acked, msg, msgsz);
			return 200;
		}
	} else if (in_sync(c, rv, stored)) {
		in_sync_message(node, rv, c->acked_rv, msg, msgsz);
		return 200;
	}
	if (timeout_s == 0) {
		timeout_message(node, rv, 0, c, ready, acked, msg, msgsz);
		return 504;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(msg, msgsz, "out of memory");
		return 500;
	}
	w->srv = s;
	snprintf(w->node, sizeof(w->node), "%s", node);
	w->rv = rv;
	w->timeout_s = timeout_s;
	w->done = done;
	w->ud = ud;
	w->next = s->waits;
	if (s->waits)
		s->waits->prev = w;
	s->waits = w;
	lws_sul_schedule(s->ctx, 0, &w->timeout, on_timeout,
			 (lws_usec_t)timeout_s * LWS_US_PER_SEC);
	*out = w;
	return 0;
}

void server__wait_cancel(node_wait *w)
{
	if (!w)
		return;
	unlink_wait(w);
	free(w);
}

int server__wait_check(es_server *s, const char *node)
{
	node_wait *w = s->waits, *next;
	int64_t stored = w ? store_rv(s) : 0;
	int ended = 0;

	for (; w; w = next) {
		int ready = 0;
		conn *c;
		char msg[512];

		next = w->next;
		if (node && strcmp(w->node, node) != 0)
			continue;
		c = node_conn(s, w->node, &ready);
		if (c && ready && in_sync(c, w->rv, stored)) {
			in_sync_message(w->node, w->rv, c->acked_rv, msg, sizeof(msg));
			finish(w, 200, NULL, msg);
			ended++;
		}
	}
	return ended;
}
