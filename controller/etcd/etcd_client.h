/*
 * etcd_client.h - an asynchronous client of etcd's v3 API on the
 * controller's libwebsockets event loop, through etcd's JSON gateway
 * (HTTP/1.1 POST to /v3/...; docs/ARCHITECTURE.md, "Talking to etcd").
 *
 * Every call returns at once; its callback runs later on the loop, exactly
 * once (unless the client is destroyed first: then never). Nothing blocks.
 * Each request is its own connection (TLS with the client certificate for
 * https endpoints, etcd's --client-cert-auth).
 *
 * Endpoints and failover: the client keeps a current endpoint and starts
 * every request there. When an endpoint cannot be reached (refused, reset,
 * TLS failure, no answer within the request timeout) or answers
 * "unavailable" (gRPC 14, e.g. a member without a leader), the next one
 * becomes current and the request goes on there, each endpoint tried at
 * most once per request. A request that may change data (put, delete, txn,
 * lease grant) is moved on only when it was not sent yet: once sent, a
 * timeout or a lost connection ends it with `unknown` set, since etcd may
 * have applied it (re-read, or make the write a compare-and-swap).
 *
 * Errors in es_etcd_result: rc ES_OK; ES_ERR_IO (no endpoint answered:
 * message names each endpoint and what went wrong; code 14, or 4 for a
 * timeout); ES_ERR_NOTFOUND (etcd: lease not found, or a keepalive of an
 * expired lease; code 5); ES_ERR_CONFLICT (etcd: the revision asked for
 * is compacted; code 11); ES_ERR_INVAL (etcd refused the request; code 3
 * or 9); ES_ERR_AUTH (code 7 or 16); ES_ERR_PROTO (the answer was not
 * etcd's: bad JSON, unexpected status); ES_ERR_TOOBIG (the answer passed
 * max_response_bytes); ES_ERR_NOMEM.
 */
#ifndef ES_ETCD_CLIENT_H
#define ES_ETCD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <libwebsockets.h>

#include "etcd/etcd_msg.h"
#include "es_err.h"
#include "es_url.h"

/* etcd's client port (IANA), the port of an endpoint that names none. */
#define ES_ETCD_DEFAULT_PORT 2379

/*
 * Parses one etcd-endpoints entry into *out (es_url_parse's rules):
 * "http://host[:port]" or "https://host[:port]", host a name or an IPv4
 * or bracketed IPv6 literal, port 1..65535 and ES_ETCD_DEFAULT_PORT when
 * not given (not 80 or 443: these are etcd's URLs, as etcdctl takes them),
 * no path other than "/", no query, no userinfo or fragment.
 * Errors: ES_ERR_INVAL, err naming etcd-endpoints and the entry: another
 * scheme, no host, a bad host or port, a path or query.
 */
es_err es_etcd_endpoint_parse(const char *url, es_url *out, char *err,
			      size_t errsz);

/* Most endpoints one client takes. */
#define ES_ETCD_MAX_ENDPOINTS 16
/* The gateway's path prefix (etcd 3.4 serves /v3/ and /v3beta/; 3.5 and
 * later /v3/ only). */
#define ES_ETCD_PATH_PREFIX "/v3/"

/*
 * Told of every request's end and of every watch stream's start and break,
 * for metrics (README "Metrics"). op: "range", "put", "delete", "txn",
 * "lease" (grant, keepalive, revoke), "watch" or "other" (es_etcd_call).
 * rc: the request's result (es_etcd_result.rc); a watch: ES_OK when a
 * (re)dialled stream got its first message from etcd, ES_ERR_IO when it
 * broke or could not be opened, ES_ERR_CONFLICT or ES_ERR_INVAL when etcd
 * cancelled it (compacted, or another reason). reached: 1 when etcd
 * answered in a way the client can go on with (success, or etcd's refusal
 * of that one request: lease not found, compacted, invalid), 0 when no
 * endpoint answered, the answer was not etcd's (ES_ERR_PROTO, ES_ERR_TOOBIG)
 * or etcd refused the client (ES_ERR_AUTH). seconds: from the request's
 * start (a watch: the dial) to its end (a watch: its first message), or
 * -1 when there is none to measure (a watch that broke). Runs on the loop,
 * before the request's own callback.
 */
typedef void (*es_etcd_observe_fn)(void *ud, const char *op, es_err rc,
				   int reached, double seconds);

typedef struct es_etcd_opts {
	/* "http://host[:port]" or "https://host[:port]" (no path;
	 * es_etcd_endpoint_parse), 1 to ES_ETCD_MAX_ENDPOINTS, copied. */
	const char *const *endpoints;
	size_t n_endpoints;
	/* PEM files for https endpoints: client certificate and key (both or
	 * neither) and the CA that signed etcd's server certificate (needed
	 * for https). Copied. */
	const char *cert, *key, *ca;
	int request_timeout_ms;   /* per endpoint tried; 0: 5000 */
	int watch_idle_ms;        /* a watch silent this long is redialled; 0: never */
	size_t max_response_bytes; /* 0: 64 MiB */
	es_etcd_observe_fn observe; /* NULL: none */
	void *observe_ud;          /* borrowed */
} es_etcd_opts;

typedef struct es_etcd_result {
	es_err rc;
	int code;               /* gRPC status code (ES_ETCD_CODE_*), 0 on success */
	int unknown;            /* 1: a write was sent and its outcome is unknown */
	const char *endpoint;   /* the endpoint that answered last (or failed) */
	const char *error;      /* "" on success, else one sentence naming the
	                         * endpoint(s); valid during the callback */
	const es_etcd_resp *resp; /* the parsed answer when rc is ES_OK;
	                           * borrowed for the callback */
} es_etcd_result;

typedef void (*es_etcd_cb)(void *ud, const es_etcd_result *r);

typedef struct es_etcd es_etcd;

/*
 * Makes a client on ctx (which must outlive it). It adds its own vhost
 * "etcd" (no listener) to ctx, carrying the TLS files.
 * Errors: ES_ERR_INVAL (no endpoint, too many, a bad URL or a path in one,
 * https without ca, cert without key; err names it), ES_ERR_TLS (the vhost
 * could not be made: a TLS file unreadable), ES_ERR_NOMEM.
 */
es_err es_etcd_new(struct lws_context *ctx, const es_etcd_opts *o,
		   es_etcd **out, char *err, size_t errsz);

/* Ends every request and watch without calling their callbacks and frees
 * the client. NULL-safe. Call it before destroying the context. */
void es_etcd_destroy(es_etcd *e);

/* The current endpoint (the one requests start at). */
const char *es_etcd_endpoint(const es_etcd *e);

/*
 * Requests. Key and value bytes are copied. range_end NULL: the key alone;
 * es_etcd_prefix_end gives a prefix's. revision 0: the latest; limit 0:
 * no limit. lease 0: none. ttl_s: seconds. cb is called once with the
 * result (resp->kvs for a range, resp->succeeded and resp->ops for a txn,
 * resp->lease_id and resp->ttl for a grant or keepalive).
 * A keepalive of a lease that has expired ends with ES_ERR_NOTFOUND.
 * Errors returned at once (cb then never runs): ES_ERR_INVAL (NULL or
 * empty key, ttl_s < 1, id 0, a txn with a sticky error), ES_ERR_NOMEM.
 */
es_err es_etcd_range(es_etcd *e, const void *key, size_t klen,
		     const void *range_end, size_t relen, int64_t revision,
		     int64_t limit, es_etcd_cb cb, void *ud);
es_err es_etcd_put(es_etcd *e, const void *key, size_t klen, const void *value,
		   size_t vlen, int64_t lease, es_etcd_cb cb, void *ud);
es_err es_etcd_delete(es_etcd *e, const void *key, size_t klen,
		      const void *range_end, size_t relen, es_etcd_cb cb,
		      void *ud);
/* t is read (its body copied), not freed. A txn without puts or deletes
 * is idempotent (es_etcd_call): sent, it may still move to another
 * endpoint, and its failure is not said to be possibly applied. */
es_err es_etcd_txn_send(es_etcd *e, const es_etcd_txn *t, es_etcd_cb cb, void *ud);
es_err es_etcd_lease_grant(es_etcd *e, int64_t ttl_s, es_etcd_cb cb, void *ud);
es_err es_etcd_lease_keepalive(es_etcd *e, int64_t id, es_etcd_cb cb, void *ud);
es_err es_etcd_lease_revoke(es_etcd *e, int64_t id, es_etcd_cb cb, void *ud);
/*
 * Any other unary call: method is the path after the prefix
 * ("kv/compaction", "maintenance/status"), body JSON text (copied);
 * idempotent 1 lets it move to another endpoint after it was sent.
 */
es_err es_etcd_call(es_etcd *e, const char *method, const char *body,
		    int idempotent, es_etcd_cb cb, void *ud);

/* --- watch -------------------------------------------------------------- */

typedef enum es_etcd_watch_kind {
	ES_ETCD_WATCH_EVENTS = 0,    /* events[] in revision order */
	ES_ETCD_WATCH_PROGRESS = 1,  /* nothing changed up to revision */
	ES_ETCD_WATCH_COMPACTED = 2, /* the start revision is compacted: the
	                              * watch has ended; compact_revision is the
	                              * oldest kept: list again, watch anew */
	ES_ETCD_WATCH_DOWN = 3,      /* the stream broke (error says why); the
	                              * watch redials the next endpoint by itself
	                              * from the revision after the last seen */
	ES_ETCD_WATCH_FAILED = 4,    /* etcd cancelled the watch for another
	                              * reason (error): the watch has ended */
} es_etcd_watch_kind;

typedef struct es_etcd_watch_ev {
	es_etcd_watch_kind kind;
	int64_t revision;          /* header revision of the message */
	int64_t compact_revision;  /* COMPACTED */
	const es_etcd_event *events; /* EVENTS; borrowed for the callback */
	size_t n_events;
	const char *endpoint;
	const char *error;         /* DOWN, FAILED: one sentence; else "" */
} es_etcd_watch_ev;

typedef void (*es_etcd_watch_cb)(void *ud, const es_etcd_watch_ev *ev);

typedef struct es_etcd_watch es_etcd_watch;

/*
 * Watches [key, range_end) from start_revision (0: from now; else every
 * change with a revision >= start_revision, then the live ones), with
 * etcd's progress notifications (PROGRESS) and prev_kv. After a break the
 * watch resumes by itself from the revision after the last it delivered
 * (backoff 100 ms doubling to 5 s), so no event is lost or repeated.
 * The watch is the caller's until es_etcd_watch_cancel, also after it
 * ended (COMPACTED, FAILED).
 * Errors: ES_ERR_INVAL (NULL or empty key, start_revision < 0),
 * ES_ERR_NOMEM.
 */
es_err es_etcd_watch_start(es_etcd *e, const void *key, size_t klen,
			   const void *range_end, size_t relen,
			   int64_t start_revision, es_etcd_watch_cb cb, void *ud,
			   es_etcd_watch **out);
/* The revision the watch would resume from (the last delivered + 1). */
int64_t es_etcd_watch_next_revision(const es_etcd_watch *w);
/* Stops and frees the watch; its callback is not called again. NULL-safe.
 * Not from inside the watch's own callback. */
void es_etcd_watch_cancel(es_etcd_watch *w);

#endif
