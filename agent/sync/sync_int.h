/*
 * sync_int.h - what sync.c (connection, framing, timers) and sync_msg.c
 * (messages and reports) share inside the sync module; not for other
 * modules (they use sync.h).
 */
#ifndef ES_AGENT_SYNC_INT_H
#define ES_AGENT_SYNC_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include "sync/backoff.h"
#include "runtime/config.h"
#include "es_err.h"
#include "es_proto.h"
#include "es_ws.h"
#include "store/store.h"
#include "sync/sync.h"

enum sync_state { ST_IDLE = 0, ST_CONNECTING, ST_HANDSHAKING, ST_READY };

/*
 * Invariants while ready: reports leave in seq order (es_store_outbox_next
 * after sent_after), at most one state report is unacknowledged
 * (state_inflight), a row once sent is resent byte for byte (its stored wire
 * text), and the first new state report of a connection is a snapshot.
 */
struct es_sync {
	struct lws_context *ctx;
	struct lws_vhost *vh;
	es_store *st;
	es_sync_hooks hooks;
	es_agent_metrics *metrics;
	char *url, *node, *agent_version, *boot_id;
	cJSON *labels;
	es_agent_url u;
	char host_hdr[300];

	struct lws *wsi;
	enum sync_state state;
	es_backoff bo;
	lws_sorted_usec_list_t sul_dial, sul_tick;
	int stopping;

	es_ws_rx rx;          /* the message being received (es_ws.h) */
	es_ws_queue q;        /* control messages to send, no limits */
	int close_code;

	int64_t sent_after, state_inflight;
	int snapshot_sent;
	int64_t last_rx_ms, last_ping_ms;
	int heartbeat_s;

	time_t last_connected;
	char last_error[256];
	int64_t attempts, last_acked_seq;
};

/* sync.c */

void sync__set_error(es_sync *s, const char *what, const char *detail);
/* Queues a control message (not an outbox report); consumes msg. */
es_err sync__queue_msg(es_sync *s, cJSON *msg);
/* Sends an `error` (when code >= 0) then closes with close_code. */
void sync__fail_conn(es_sync *s, int code, int close_code, const char *msg);
void sync__proto_fail(es_sync *s, es_proto_code code, const char *msg);

/* sync_msg.c */

/* Sends the next outbox row when allowed. Returns -1 to drop the
 * connection, else 0. */
int sync__send_next_report(es_sync *s, struct lws *wsi);
void sync__send_hello(es_sync *s);
/* Handles one complete message received from the controller. */
void sync__on_message(es_sync *s, const char *buf, size_t len);

#endif
