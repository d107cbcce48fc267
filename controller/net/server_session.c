/*
 * server_session.c - one controller at a time per node (store.h,
 * es_store_session_take): a hello waits for the store to give this
 * controller the node's session (taken over from another controller: the
 * newer session wins), and the older session of a node whose newer one
 * is on another controller is closed here (4000 "replaced", as for a
 * newer connection here); the session is given up when the node's last
 * connection here ends, and every one at once when the controller stops.
 */
#include "net/server_int.h"

#include <string.h>

#include "es_log.h"
#include "es_time.h"
#include "store/store_etcd.h"

/* Come back later after a take that kept losing, in seconds. */
#define SESSION_RETRY_S 1
/* es_server_leave: the loop's turns after the agents' closes, in ms. */
#define LEAVE_WRITE_MS 100

static void on_session(void *ud, const es_store_result *r)
{
	conn *c = ud;
	es_server *s = c->srv;
	cJSON *msg = c->hello_msg;

	c->session_wait = NULL;
	c->hello_msg = NULL;
	if (r->rc == ES_OK) {
		c->session_held = 1;
		server__hello_resume(c, msg);
	} else if (r->rc == ES_ERR_EXISTS) {
		es_log_warn("server", "agent session refused: its session kept moving"
			    " between controllers", "node", c->node, "reason", r->error, NULL);
		es_ctrl_metrics_refused(s->metrics, "Overloaded");
		server__pending_done(c->wsi);
		(void)server__queue_msg(c, es_proto_overloaded(SESSION_RETRY_S, r->error));
		server__start_close(c, es_proto_close_code(ES_PC_OVERLOADED),
				    es_proto_code_name(ES_PC_OVERLOADED));
	} else {
		es_log_error("server", "could not take the node's session", "node", c->node,
			     "error", r->error, NULL);
		server__queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
	}
	cJSON_Delete(msg);
}

int server__session_take(conn *c, const cJSON *msg)
{
	es_server *s = c->srv;
	es_err rc;

	if (!s->store_lost_set && s->store) {
		es_store_set_lost(s->store, server__session_lost, s);
		s->store_lost_set = 1;
	}
	if (c->session_held)
		return 0;
	if (s->leaving) {
		/* Stopping: its sessions are given up, none is taken. */
		es_ctrl_metrics_refused(s->metrics, "Overloaded");
		server__pending_done(c->wsi);
		(void)server__queue_msg(c, es_proto_overloaded(SESSION_RETRY_S,
							       "the controller is stopping"));
		server__start_close(c, es_proto_close_code(ES_PC_OVERLOADED),
				    es_proto_code_name(ES_PC_OVERLOADED));
		return 1;
	}
	if (c->session_wait) {
		server__queue_error(c, ES_PC_PROTOCOL, "a second hello on this connection");
		return 1;
	}
	for (conn *o = s->conns; o; o = o->next)
		if (o != c && o->session_held && strcmp(o->node, c->node) == 0) {
			c->session_held = 1; /* this controller holds it already */
			return 0;
		}
	if (!(c->hello_msg = cJSON_Duplicate(msg, 1))) {
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
		return 1;
	}
	rc = es_store_session_take(s->store, c->node, on_session, c, &c->session_wait);
	if (rc == ES_ERR_UNSUPPORTED) {
		cJSON_Delete(c->hello_msg);
		c->hello_msg = NULL;
		return 0;
	}
	if (rc != ES_OK) {
		cJSON_Delete(c->hello_msg);
		c->hello_msg = NULL;
		server__queue_error(c, ES_PC_INTERNAL, "out of memory");
		return 1;
	}
	return 1; /* on_session goes on */
}

void server__session_release(conn *c)
{
	es_server *s = c->srv;

	if (c->session_wait)
		es_store_session_cancel(s->store, c->session_wait);
	c->session_wait = NULL;
	cJSON_Delete(c->hello_msg);
	c->hello_msg = NULL;
	if (!c->session_held)
		return;
	c->session_held = 0;
	for (conn *o = s->conns; o; o = o->next)
		if (o != c && (o->session_held || o->session_wait) &&
		    strcmp(o->node, c->node) == 0)
			return; /* a newer connection here holds or is taking it */
	es_store_session_drop(s->store, c->node);
}

void server__session_lost(void *ud, const char *node, const char *why)
{
	es_server *s = ud;

	for (conn *c = s->conns; c; c = c->next) {
		if (!c->session_held || strcmp(c->node, node) != 0)
			continue;
		server__session_replaced(c, why);
	}
}

void server__session_replaced(conn *c, const char *why)
{
	c->session_held = 0; /* another controller's now: not dropped */
	if (c->state == CS_CLOSING)
		return;
	es_log_info("server", "connection replaced by a newer session on another"
		    " controller", "node", c->node, "reason", why, NULL);
	server__queue_clear(c);
	server__start_close(c, ES_SERVER_CLOSE_REPLACED, "replaced");
}

static void on_leave(void *ud, const es_store_result *r)
{
	es_server *s = ud;

	s->leave_done = 1;
	if (r->rc != ES_OK)
		es_log_warn("server", "the etcd lease could not be revoked; the node"
			    " sessions go when it expires", "error", r->error, NULL);
}

static void leave_timer(lws_sorted_usec_list_t *sul)
{
	(void)sul; /* only wakes the loop */
}

/* Runs the loop until *done or bound_ms passed. */
static void run_until(es_server *s, const int *done, int bound_ms)
{
	int64_t end = es_time_mono_us() + (int64_t)bound_ms * 1000;

	while (!(done && *done) && es_time_mono_us() < end) {
		if (s->uv_run_once)
			s->uv_run_once(s->ctx);
		else if (lws_service(s->ctx, 0) < 0)
			break;
	}
}

void es_server_leave(es_server *s, int bound_ms)
{
	lws_sorted_usec_list_t wake;
	int n = 0;
	es_err rc;

	if (!s || !s->ctx || !s->store)
		return;
	s->leaving = 1;
	memset(&wake, 0, sizeof(wake));
	/* The agents first, each to its next controller, which finds the
	 * session free once the lease is revoked (or takes it over). */
	for (conn *c = s->conns; c; c = c->next) {
		if (!c->session_held && !c->session_wait)
			continue;
		c->session_held = 0; /* the lease's revoke gives it up */
		server__queue_clear(c);
		server__start_close(c, 1001, "going away");
		n++;
	}
	rc = es_store_sessions_leave(s->store, on_leave, s);
	if (rc == ES_OK) {
		/* The deadline wakes the loop should nothing else. */
		lws_sul_schedule(s->ctx, 0, &wake, leave_timer,
				 (lws_usec_t)bound_ms * LWS_US_PER_MS);
		run_until(s, &s->leave_done, bound_ms);
		lws_sul_cancel(&wake);
	} else if (rc != ES_ERR_UNSUPPORTED) {
		es_log_warn("server", "the etcd lease was not revoked; the node sessions"
			    " go when it expires", "error", es_strerror(rc), NULL);
	}
	if (n) {
		lws_sul_schedule(s->ctx, 0, &wake, leave_timer,
				 LEAVE_WRITE_MS * LWS_US_PER_MS);
		run_until(s, NULL, LEAVE_WRITE_MS);
		lws_sul_cancel(&wake);
	}
	es_log_info("server", "node sessions given up", "leaseRevoked",
		    s->leave_done ? "true" : "false", NULL);
}
