/*
 * server_session.c - one controller at a time per node (store.h,
 * es_store_session_take): a hello waits for the store to give this
 * controller the node's session, and a node served by another controller
 * is told to come back later; the session is given up when the node's
 * last connection here ends.
 */
#include "net/server_int.h"

#include <string.h>

#include "es_log.h"
#include "store/store_etcd.h"

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
		es_log_warn("server", "agent session refused: another controller serves"
			    " the node", "node", c->node, "reason", r->error, NULL);
		es_ctrl_metrics_refused(s->metrics, "Overloaded");
		server__pending_done(c->wsi);
		(void)server__queue_msg(c, es_proto_overloaded(ES_STORE_ETCD_SESSION_TTL,
							       r->error));
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
		c->session_held = 0; /* another controller's now: not dropped */
		es_ctrl_metrics_refused(s->metrics, "Overloaded");
		(void)server__queue_msg(c, es_proto_overloaded(ES_STORE_ETCD_SESSION_TTL, why));
		server__start_close(c, es_proto_close_code(ES_PC_OVERLOADED),
				    es_proto_code_name(ES_PC_OVERLOADED));
	}
}
