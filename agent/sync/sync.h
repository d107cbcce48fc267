/*
 * sync.h - the agent's sync client (proto/PROTOCOL.md is the contract): one
 * WebSocket over mutual TLS to the controller, hello/welcome, desired state
 * in, reports out of the SQLite outbox in sequence order, liveness, and
 * reconnection with exponential backoff and full jitter (backoff.h).
 *
 * Runs on the agent's libwebsockets context and thread; all timers are
 * lws_sul timers of that context.
 */
#ifndef ES_AGENT_SYNC_H
#define ES_AGENT_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include "es_err.h"
#include "endpoint/metrics.h"
#include "store/store.h"

typedef struct es_sync es_sync;

typedef struct es_sync_opts {
	const char *url;           /* wss://host[:port][/path], a list of them
				    * (es_agent_urls_parse) */
	int listed;                /* 1: dial url's targets as listed; 0: in
				    * node's rendezvous order (es_urllist_order:
				    * the URLs, and a name's addresses) */
	const char *cert, *key, *ca; /* PEM file paths */
	const char *node;          /* node name sent in hello */
	const char *agent_version;
	const char *boot_id;       /* "" when unknown */
	const cJSON *labels;       /* object of strings, copied */
	es_agent_metrics *metrics; /* borrowed, may be NULL: reports sent and
				    * acknowledged, last sync (metrics.h) */
	int protocol_version;      /* hello.protocolVersion: 1, or 2 (keyed
				    * changes; 0 counts as 2) */
	int deflate;               /* 1: offer compressed messages (version 2) */
	int renew_percent;         /* renew the certificate over the session at
				    * this percent of its lifetime, 1..99; 0:
				    * never (PROTOCOL.md "Renewal") */
} es_sync_opts;

typedef struct es_sync_hooks {
	void *user;
	/* Queue the agent's current Node state now (es_store_outbox_put_state):
	 * called after a welcome and on resync, before the next report goes. */
	void (*queue_state)(void *user);
	/* Desired objects were committed and acknowledged: reconcile them.
	 * Called from a timer once the desiredAck is written to the
	 * connection (at most 100 ms after the commit, or when the
	 * connection drops first), so the acknowledgement never waits for a
	 * reconcile or a collection round. */
	void (*desired_changed)(void *user);
} es_sync_hooks;

/* What /v1/state and `status` show about the connection. */
typedef struct es_sync_info {
	int connected;          /* 1 once a welcome arrived on the live connection */
	const char *state;      /* "idle", "connecting", "handshaking", "ready" */
	const char *url;
	time_t last_connected;  /* last welcome, 0 = never */
	const char *last_error; /* "" when none */
	int64_t reconnects;     /* connection attempts after the first */
	int64_t last_acked_seq; /* highest seq acknowledged by the controller */
	int64_t next_dial_ms;   /* idle: ms until the next dial is due (0: now);
				 * -1 when none is scheduled or not idle */
} es_sync_info;

/* Seconds between two looks at credential files that were found unusable
 * (missing, unreadable, not PEM, out of their validity, not matching). */
#define ES_SYNC_CREDS_RETRY_S 5
/* Seconds between two looks at the credential files while they are in use
 * (changed files are taken by a reconnect) and at the renewal's due time. */
#define ES_SYNC_CREDS_POLL_S 2
/* Seconds the agent keeps a TLS session for resuming it (sync_tls.c): the
 * longest ticket lifetime a controller accepts. */
#define ES_SYNC_TLS_SESSION_KEEP_S (7u * 24 * 3600)
/* Largest TLS record the agent asks the controller to send, bytes
 * (RFC 6066 max_fragment_length: 512, 1024, 2048 or 4096), and its code. */
#define ES_SYNC_TLS_MAX_FRAGMENT 4096
#define ES_SYNC_TLS_MFL_CODE MBEDTLS_SSL_MAX_FRAG_LEN_4096

/*
 * Creates the client on ctx (a context created with
 * LWS_SERVER_OPTION_EXPLICIT_VHOSTS). Does not dial yet (es_sync_start).
 * The credential files are read and checked now and again before every
 * dial (es_pki_creds_check): while one is unusable the client does not
 * dial (unless a TLS client built from good files before holds a
 * certificate still valid: it dials with that), says why (es_sync_credentials, lastError; logged at error when it
 * changes) and looks again every ES_SYNC_CREDS_RETRY_S seconds, so fixing
 * a file on disk reconnects without a restart; files that changed are
 * loaded into a new vhost "sync" (the client certificate, key and CA, no
 * WebSocket extension). While connected, files that change on disk and
 * check out are taken by closing and redialling at once; with
 * renew_percent the certificate is renewed over the session
 * (PROTOCOL.md "Renewal"; sync_renew.c). Borrowed: ctx and st must outlive the client.
 * Strings are copied. Errors: ES_ERR_INVAL (bad URL, naming
 * controller-url), ES_ERR_NOMEM; a bad credential file is not an error.
 */
es_err es_sync_new(struct lws_context *ctx, es_store *st,
		   const es_sync_opts *opts, const es_sync_hooks *hooks,
		   es_sync **out, char *err, size_t errsz);

/* Dials now; from then on the client keeps a connection up until
 * es_sync_stop. */
void es_sync_start(es_sync *s);

/* Tells the client new outbox rows are queued (sends when ready). */
void es_sync_kick(es_sync *s);

/* The store was replaced by a new empty one (es_store_rebuild): forgets
 * what the client knew of the old one and closes the connection (why is
 * its reason), so that the next hello carries the new store's
 * resourceVersion (0: the controller sends the full list) and nextSeq.
 * NULL-safe. */
void es_sync_restart(es_sync *s, const char *why);

/* Fills *info; its strings are borrowed from s and valid until the next
 * call into s. */
void es_sync_get_info(const es_sync *s, es_sync_info *info);

/*
 * Whether the credential files were usable at the last look: 1 yes, 0 no,
 * -1 not read yet. *reason gets a CamelCase reason for the node's
 * CredentialsValid condition (CredentialsLoaded; CertFileMissing,
 * CertFileInvalid, KeyFileMissing, KeyFileInvalid, CAFileMissing,
 * CAFileInvalid naming the first bad file; TLSSetupFailed), *message what
 * was found ("ca /etc/edgesync/ca.crt: empty file"); both borrowed from s
 * until its next look.
 */
int es_sync_credentials(const es_sync *s, const char **reason,
			const char **message);

/*
 * Whether the controller refused the certificate at the last connection
 * (PROTOCOL.md "Revocation": an `error` IdentityMismatch, after which the
 * client redials only after 30 to 60 s, the backoff's cap): 1 with
 * *reason "Revoked" (the error's reason CertificateRevoked) or
 * "IdentityMismatch" and *message the controller's message, both borrowed
 * until the next call into s; 0 when not (no refusal since the last
 * welcome or es_sync_credentials_changed).
 */
int es_sync_refused(const es_sync *s, const char **reason, const char **message);

/* The credential files were replaced (a renewal or a join wrote them):
 * forgets a refusal, resets the backoff, and when no connection is up,
 * dials at once (the files are read again first). NULL-safe. */
void es_sync_credentials_changed(es_sync *s);

/* The info as a new JSON object {connected, state, url, lastConnected,
 * lastError, reconnects, lastAckedSeq}, or NULL on allocation failure. */
cJSON *es_sync_info_json(const es_sync *s);

/* Cancels timers and stops reacting to callbacks; call before the lws
 * context is destroyed. NULL-safe. */
void es_sync_stop(es_sync *s);

/* Frees the client (after lws_context_destroy). NULL-safe. */
void es_sync_free(es_sync *s);

#endif
