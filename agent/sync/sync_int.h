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

/* What the credential watch compares of one file (sync_renew.c). */
struct es_sync_filesig {
	uint64_t dev, ino;
	int64_t size, mtime_ns;
};

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
	char *node, *agent_version, *boot_id;
	const char *url;      /* the controller in use: borrowed from urls */
	cJSON *labels;
	es_agent_url u;       /* the controller in use (a copy of us[urls.cur]) */
	char host_hdr[300];
	/* Every controller of controller-url, gone through in turn: on each
	 * failure the next address of u's host (addr: the one dialled, naddrs
	 * how many its name had at the dial), then the next URL. The URLs are
	 * in node's rendezvous order unless listed (es_sync_new), and so are
	 * a name's addresses at each dial (pick_addr). */
	es_urllist urls;
	int listed;
	es_agent_url us[ES_URLLIST_MAX];
	char addr[ES_ADDR_HOST_MAX + 1];
	size_t naddrs;

	struct lws *wsi;
	enum sync_state state;
	es_backoff bo;
	lws_sorted_usec_list_t sul_dial, sul_tick;
	int64_t dial_at_ms;  /* es_time_mono_ms of the scheduled dial; 0: none */
	int stopping;
	/* A desired message was committed and its desiredAck queued: the
	 * desired_changed hook runs once that ack is written (sync.c), or
	 * after RECONCILE_WAIT_MS, or when the connection drops. */
	int reconcile_owed;
	lws_sorted_usec_list_t sul_reconcile;

	es_ws_rx rx;          /* the message being received (es_ws.h) */
	es_ws_queue q;        /* control messages to send, no limits */
	int close_code;

	int64_t sent_after, state_inflight;
	int snapshot_sent;
	int session_acked;    /* 1: a report of this session was acknowledged
			       * (the backoff was reset, backoff.h) */
	/* The protocol: what the hello offers (es_sync_opts), and what the
	 * welcome of the live connection agreed (version 1 until then). */
	int proto_offer, deflate_offer;
	int proto, deflate;
	int64_t last_rx_ms, last_ping_ms;
	int heartbeat_s;

	time_t last_connected;
	char last_error[256];
	int64_t attempts, last_acked_seq;

	/* sync_tls.c: the credential files, what they were found to be, and
	 * the digest (es_pki_creds) of the files vh was built from. */
	char *cert, *key, *ca;
	int creds_ok;            /* 1 usable, 0 not, -1 not read yet */
	char creds_reason[32];   /* the condition reason (es_sync_credentials) */
	char creds_msg[1024];
	unsigned char vh_digest[32];
	int peer_refused;        /* 1: sync__tls_check_peer refused this dial's peer */
	time_t vh_not_after;     /* the notAfter of the certificate vh holds */

	/* sync_renew.c: renewal over the session and the credential watch. */
	int renew_percent;       /* es_sync_opts.renew_percent; 0: off */
	int renew_offered;       /* the live session's welcome offered renewal */
	int renew_unsupported;   /* the controller did not know certificateRequest */
	int renew_failures;      /* failed renewals in a row */
	time_t renew_due;        /* when to renew the loaded certificate; 0: never */
	unsigned char renew_digest[32]; /* the vh_digest renew_due is for */
	int64_t renew_sent_ms;   /* a request is out since (monotonic); 0: none */
	char *renew_key;         /* PEM of the key the request is for */
	char cert_serial[41];    /* the loaded certificate's serial, hex */
	lws_sorted_usec_list_t sul_creds;
	struct es_sync_filesig watch_sig[3];
	int watch_set;
	char watch_bad[512];     /* the last unusable set logged */
	int redial_now;          /* conn_down: redial at once, same controller */
	/* The controller refused this certificate (`error` IdentityMismatch,
	 * es_sync_refused): the condition reason, the controller's message;
	 * cleared by a welcome and by es_sync_credentials_changed. */
	int refused;
	char refused_reason[32];
	char refused_msg[512];
};

/* sync.c */

void sync__set_error(es_sync *s, const char *what, const char *detail);
/* Queues a control message (not an outbox report); consumes msg. */
es_err sync__queue_msg(es_sync *s, cJSON *msg);
/* Runs the desired_changed hook after the desiredAck just queued is on
 * the wire (the acknowledgement first, then reconcile and collect). */
void sync__reconcile_after_ack(es_sync *s);
/* Sends an `error` (when code >= 0) then closes with close_code. */
void sync__fail_conn(es_sync *s, int code, int close_code, const char *msg);
void sync__proto_fail(es_sync *s, es_proto_code code, const char *msg);

/* The protocol list of the client's vhost (sync.c's callback). */
extern const struct lws_protocols sync__protocols[];

/* sync_tls.c */

/* Reads and checks the credential files (es_pki_creds_check) and builds
 * the vhost from them when they changed since it was built (or there is
 * none). Returns 0 when s->vh can dial; -1 when a file is bad or the TLS
 * client cannot be built: creds_* and last_error say why (logged at error
 * when it changed). */
int sync__tls_load(es_sync *s);
/* At LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH: the controller's
 * certificate must name the dialled host in a DNS or IP SAN
 * (es_pki_check_server_name). Returns 0, or -1 (refuse: peer_refused and
 * last_error set, logged at error). */
int sync__tls_check_peer(es_sync *s, struct lws *wsi);
/* The message of LWS_CALLBACK_CLIENT_CONNECTION_ERROR (in: lws's text, may
 * be NULL) in why: errno text for a failed TCP connect; for a certificate
 * the handshake refused, what is wrong with it (validity with the host
 * clock, the name, the issuer). */
void sync__tls_conn_error(es_sync *s, const char *in, char *why, size_t whysz);

/* sync_renew.c (its header comment says what it does) */

/* Arms the credential timer (es_sync_start). */
void sync__renew_start(es_sync *s);
/* The connection is gone: a request in flight is dropped. */
void sync__renew_conn_down(es_sync *s);
/* At welcome: whether it offers renewal; its trustBundle taken. */
void sync__renew_on_welcome(es_sync *s, const cJSON *welcome);
/* The controller's `certificate` and `certificateRefused` (decoded). */
void sync__renew_on_certificate(es_sync *s, const cJSON *msg);
void sync__renew_on_refused(es_sync *s, const cJSON *msg);
/* The controller answered UnknownMessageType: when a request was out, it
 * does not renew (an older controller), for the life of the process. */
void sync__renew_unknown_type(es_sync *s);
/* Wipes and frees what renewal holds (es_sync_free). */
void sync__renew_free(es_sync *s);

/* sync_msg.c */

/* Sends the next outbox row when allowed. Returns -1 to drop the
 * connection, else 0. */
int sync__send_next_report(es_sync *s, struct lws *wsi);
void sync__send_hello(es_sync *s);
/* Handles one complete message received from the controller. */
void sync__on_message(es_sync *s, const char *buf, size_t len);

#endif
