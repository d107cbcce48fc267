/*
 * fleetsim.h - the fleet simulator's shared state: one process holding N
 * simulated agents (nodes --first .. --first + N - 1 of a fleet that
 * several processes may share), each a mutual-TLS WebSocket connection to
 * one of a list of controllers with its own certificate, speaking protocol
 * version 1 or 2 (proto/PROTOCOL.md).
 *
 * Parts: main.c (flags, the loop, signals), fsim_conn.c (connections and
 * the protocol state machine), fsim_certs.c (per-node certificates and
 * their cache), fsim_msg.c (building and reading messages; the one place
 * that knows the report format), fsim_stats.c (latencies, counters, the
 * JSON-lines summary). Everything runs on the one lws service thread.
 */
#ifndef FLEETSIM_H
#define FLEETSIM_H

#include <stddef.h>
#include <stdint.h>
#include <libwebsockets.h>

#include "es_time.h"
#include "es_ws.h"
#include "fsim_msg.h"
#include "fsim_stats.h"

/* What a simulated node is doing. */
typedef enum fsim_state {
	FS_IDLE = 0,    /* not connected; dials at next_dial_ms */
	FS_DIALING,     /* TCP/TLS/WebSocket handshake under way */
	FS_HELLO,       /* hello sent, waiting for welcome */
	FS_READY,       /* welcome received: reporting */
} fsim_state;

/* One queued outgoing message: LWS_PRE bytes of headroom, then len bytes. */
typedef struct fsim_out {
	struct fsim_out *next;
	size_t len;             /* bytes of the message */
	int report;             /* 1: the state report in flight, 2: an event */
	int64_t seq;            /* a report's seq */
	unsigned char *buf;     /* LWS_PRE bytes, then the message */
} fsim_out;

/* A report written to a session (--nodes-out lists them). */
typedef struct fsim_wrote {
	int64_t seq;
	int session;             /* the node's welcomes count when written */
	int acked;               /* an ack of that same session covered it */
} fsim_wrote;

#define FSIM_WROTE_MAX 4096  /* per node; more are counted, not listed */

typedef struct fsim_node {
	struct fsim *sim;
	int idx;
	char name[64];
	char stream_id[64];
	struct lws_vhost *vh;
	struct lws *wsi;
	fsim_state state;
	es_ws_rx rx;
	fsim_out *qhead, *qtail;
	int64_t next_dial_ms;    /* FS_IDLE: when to dial; 0 = not yet allowed */
	int64_t dial_ms;         /* when the current dial started */
	int64_t up_ms;           /* when the current session got its welcome */
	int64_t est_ms;          /* when its WebSocket was established, 0: not */
	int attempt;             /* consecutive failed dials (backoff) */
	int64_t retry_after_ms;  /* Overloaded: come back after this, 0: none */
	int session_acked;       /* a report of this session was acknowledged */
	int url;                 /* index of the controller it dials (o.urls):
				  * fsim_url_first, then fsim_url_next */
	int welcomes;
	/* reports */
	int64_t next_seq;        /* seq of the next report to create */
	int64_t acked_seq;       /* highest seq the controller acknowledged */
	int64_t state_seq;       /* seq of the last acknowledged state report */
	int64_t unacked_seq;     /* seq of the state report in flight, 0: none */
	double unacked_sent_ms;  /* when it was written, 0: not yet */
	int need_snapshot;       /* next state report is a snapshot */
	int pending_state;       /* a round came while one was in flight */
	int64_t next_report_ms;
	size_t patch_pos;        /* next patch of the replay */
	/* version 2 */
	int proto;               /* the session's version (from the welcome) */
	int deflate;             /* compressed messages agreed */
	size_t rec_pos;          /* next record of the version 2 replay */
	int64_t next_rec_ms;     /* when it is due */
	long pending_rec;        /* a delta due while one was in flight, -1: none */
	int64_t ev_seq;          /* the last event written, for its ack time */
	double ev_sent_ms;       /* ... when (0: none waiting) */
	int64_t last_ping_ms;
	int64_t last_rx_ms;
	int heartbeat_s;         /* from the welcome */
	/* desired state */
	int64_t rv;              /* resourceVersion held */
	int64_t rv_pending;      /* a split full list's version, until its last part */
	/* every report written, for the check that none acknowledged is lost */
	fsim_wrote *wrote;
	int nwrote, capwrote;
	int64_t wrote_dropped;   /* written past FSIM_WROTE_MAX */
} fsim_node;

/* One controller: its agent listener. */
typedef struct fsim_url {
	char host[256];          /* address, e.g. 127.0.0.1 */
	int port;
	char text[300];          /* wss://host:port: the agent's controller-url
				  * entry, weighed for controller-order node */
} fsim_url;

#define FSIM_MAX_URLS 16

typedef struct fsim_opts {
	const char *url_host;    /* controller address, e.g. 127.0.0.1 */
	int port;
	fsim_url urls[FSIM_MAX_URLS]; /* --controller, in order; else host:port */
	int nurls;
	int listed;              /* --controller-order listed: node i starts at
				  * (first + i) mod nurls, then the next; else
				  * each node in its rendezvous order */
	int first;               /* index of the first node (names, certificates) */
	int samples;             /* summaries carry every sample (--samples) */
	const char *server_name; /* host name checked against its certificate */
	const char *ca_cert;     /* CA certificate file (verifies the controller, signs nodes) */
	const char *ca_key;      /* CA key file (signs node certificates) */
	const char *cert_dir;    /* node certificate cache */
	const char *trust_domain;
	const char *data_dir;    /* snapshot.json, patches.jsonl */
	const char *prefix;      /* node names: <prefix>-<index> */
	const char *nodes_out;   /* per-node JSON lines at exit, or NULL */
	int nodes;
	int certs_only;          /* issue the certificates, then exit */
	double duration_s;
	double interval_s;
	double jitter;           /* fraction of the interval, 0..1 */
	double ramp;             /* first dials per second */
	int protocol;            /* protocol version offered: 1 or 2 */
	int compress;            /* version 2: offer deflate */
	double speedup;          /* version 2: the captured gaps divided by it */
} fsim_opts;

typedef struct fsim {
	fsim_opts o;
	struct lws_context *ctx;
	fsim_node *nodes;
	fsim_replay replay;
	fsim_stats st;
	char cert_dir[4096];     /* <cache>/<CA>: <name>.crt, <name>.key */
	int64_t tcp_tx_closed, tcp_rx_closed; /* socket bytes of ended sessions */
	lws_sorted_usec_list_t sul_tick;
	int64_t start_ms;
	int64_t end_ms;
	double ramp_credit;
	int next_first_dial;     /* nodes [0, next_first_dial) were allowed to dial */
	int ready;               /* nodes in FS_READY */
	int stopping;
} fsim;

/* Milliseconds of CLOCK_MONOTONIC with their fraction (es_time_mono_ms
 * gives whole ones). */
static inline double fsim_now_msf(void)
{
	return (double)es_time_mono_us() / 1000.0;
}

/*
 * fsim_conn.c. fsim_conn_protocols: the lws protocol list of every node's
 * vhost. fsim_conn_tick runs every FSIM_TICK_MS from main.c: it allows
 * first dials at the ramp rate, redials with backoff, sends due reports and
 * pings (dt_s: seconds since the last tick). fsim_conn_tcp_bytes adds the socket-level bytes (TCP_INFO: bytes acked
 * by the peer, bytes received) of the open connections to *tx and *rx.
 */
#define FSIM_TICK_MS 20
extern const struct lws_protocols fsim_conn_protocols[];
void fsim_conn_tick(fsim *s, int64_t now, double dt_s);
void fsim_conn_tcp_bytes(fsim *s, int64_t *tx, int64_t *rx);
/* Builds every node's vhost (its TLS client with its certificate) before
 * the first dial. libwebsockets checks the certificate lifetimes of all
 * vhosts, with a broadcast to all of them each (vhosts squared), 5 s after
 * the last vhost was made: made one by one as nodes first dial, that
 * check ran again and again while the fleet ramped up. Returns 0, or -1
 * when one could not be built (printed). */
int fsim_conn_vhosts(fsim *s);
/* Frees the nodes' queues and receive buffers (after the lws context is
 * destroyed). */
void fsim_conn_free(fsim *s);

/*
 * The controller (index in o->urls) node number idx (o->first + i) named
 * node dials first: with o->listed (idx mod nurls), else the first of
 * node's rendezvous order of the urls' texts, as edgesync-agent's
 * controller-order = node (lib/es_urllist.h, es_urllist_order).
 */
int fsim_url_first(const fsim_opts *o, int idx, const char *node);

/* The controller node dials after url failed: the next in the same order
 * (the first after the last). */
int fsim_url_next(const fsim_opts *o, const char *node, int url);

#endif
