/*
 * config.h - edgesync-controller settings (README "Configuration";
 * docs/HACKING.md, "Adding a setting"): one table, applied from defaults,
 * the config file (--config or EDGESYNC_CONFIG), EDGESYNC_* environment
 * variables and flags, later winning (lib/es_config.h).
 */
#ifndef ES_CTRL_CONFIG_H
#define ES_CTRL_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "es_addr.h"
#include "es_config.h"
#include "es_err.h"

#define ES_CCFG_CONFIG_ENV "EDGESYNC_CONFIG"
/* The default of the deprecated state-cache-nodes (no effect; a warning
 * when set to another value). */
#define ES_CCFG_STATE_CACHE_NODES 4096

/* What listen and admin-listen take (es_addr_parse): an IP literal only.
 * libwebsockets binds its "iface" as a numeric address or an interface
 * name, never looks a host name up, and keeps retrying a bind it cannot
 * make: a host name or a zoned IPv6 address would leave the controller
 * running without that listener. */
#define ES_CCFG_LISTEN_FLAGS 0u

typedef struct es_ccfg {
	char *listen;        /* agents' listener "ip:port" (ES_CCFG_LISTEN_FLAGS) */
	char *admin_listen;  /* admin API listener "ip:port" */
	char *state_dir;     /* holds the database and, with dev, dev/ */
	char *db;            /* SQLite file; default <state-dir>/controller.db */
	char *cert, *key;    /* the controller's certificate and key (PEM) */
	char *client_ca;     /* CA that issues agents' certificates */
	char *admin_ca;      /* CA that issues admin certificates; default client-ca */
	char *trust_domain;  /* SPIFFE trust domain */
	int log_level;       /* es_log_level (es_log.h) */
	int dev;             /* development mode: throwaway CA in <state-dir>/dev */
	char *dev_node;      /* comma-separated node names to issue in dev mode */
	int64_t tombstones_kept; /* deletion records kept for resumable sync */
	int64_t reports_kept;    /* reports kept per node and stream */
	int64_t report_bytes_kept; /* bytes of reports kept per node (0: no bound) */
	int64_t state_cache_nodes; /* deprecated, no effect (its default: ES_CCFG_STATE_CACHE_NODES) */
	char *ca_cert, *ca_key;  /* signing CA for joining nodes (ca/ca.h); NULL: no joins */
	int64_t cert_lifetime;   /* seconds, ES_CA_LIFETIME_MIN..MAX */
	int64_t renewal_grace;   /* seconds past notAfter an expired node
				  * certificate may still be renewed; 0 off */
	char *advertise_url;     /* wss:// URL agents dial; default from listen */
	char *join_listen;       /* join listener "host:port"; default <listen host>:<listen port + 2> */
	char *trust_bundle;      /* CAs joining agents trust for this controller; NULL: ca-cert */
	/* connections (PROTOCOL.md "Errors", `Overloaded`) */
	int64_t max_handshakes;    /* TLS handshakes in progress at once */
	int64_t max_sessions;      /* agent sessions; 0: no limit */
	int64_t handshake_timeout; /* seconds from accept to hello */
	int64_t overload_retry;    /* retryAfterSeconds when overloaded */
	char *tls_ticket_key;      /* session ticket key file; default
				    * <state-dir>/tls-ticket.key */
	int64_t tls_ticket_lifetime; /* seconds; 0: no tickets */
	int event_loop;            /* ES_CCFG_LOOP_* (net/server.h, uv_run_once) */
	/* the store (store/store.h): ES_CCFG_STORE_* */
	int store;
	char *etcd_endpoints;      /* comma-separated client URLs */
	char *etcd_cert, *etcd_key, *etcd_ca; /* etcd's mutual TLS, PEM files */
	char *etcd_prefix;         /* key prefix, ends in '/' */
} es_ccfg;

/* Values of `store` (es_ccfg_store_names). */
enum { ES_CCFG_STORE_SQLITE = 0, ES_CCFG_STORE_ETCD = 1 };
extern const char *const es_ccfg_store_names[];

/* Values of `event-loop` (es_ccfg_event_loop_names): auto is libuv in a
 * program built with it (ES_CONTROLLER_LIBUV), else poll. */
enum { ES_CCFG_LOOP_AUTO = 0, ES_CCFG_LOOP_POLL = 1, ES_CCFG_LOOP_LIBUV = 2 };
extern const char *const es_ccfg_event_loop_names[];

/* The settings table (for help output and tests); *n gets its length. */
const es_setting *es_ccfg_settings(size_t *n);

/*
 * Fills cfg (zeroed by the caller) from defaults, the config file named by
 * "--config" in argv[first..) or $EDGESYNC_CONFIG, the environment and the
 * flags in argv[first..). "--dev-node NAME" may be repeated: the values
 * given as flags are joined with ',' and replace any file or environment
 * value. Any non-flag argument is an error. Then fills the derived defaults
 * and validates as es_ccfg_finish does. Free with es_ccfg_free, also after
 * an error. Errors: ES_ERR_IO (config file unreadable, err names it),
 * ES_ERR_INVAL (err names the key, variable or flag), ES_ERR_NOMEM.
 */
es_err es_ccfg_load(es_ccfg *cfg, int argc, char **argv, int first,
		    char *err, size_t errsz);

/*
 * Fills derived defaults and checks the settings of `run`: db defaults to
 * <state-dir>/controller.db; with dev, cert, key, client-ca default to
 * <state-dir>/dev/{controller.crt,controller.key,ca.crt}, and ca-cert,
 * ca-key to <state-dir>/dev/{ca.crt,ca.key}; admin-ca defaults to
 * client-ca. ca-cert and ca-key go together. Refuses, naming the key: a bad listen or admin-listen
 * (es_addr_parse, ES_CCFG_LISTEN_FLAGS), both on the same address and
 * port, an empty
 * state-dir, a missing cert, key or client-ca without dev, a trust-domain that is not a lower-case DNS name, a dev-node
 * entry that is not an RFC 1123 subdomain.
 * Errors: ES_ERR_INVAL, ES_ERR_NOMEM.
 */
es_err es_ccfg_finish(es_ccfg *cfg, char *err, size_t errsz);

/* Frees the strings of cfg and zeroes it. NULL-safe. */
void es_ccfg_free(es_ccfg *cfg);

/*
 * The node names development mode issues certificates for: hostname
 * lower-cased when it is an RFC 1123 subdomain (may be NULL or invalid:
 * then left out), followed by every dev-node entry, duplicates dropped.
 * *out gets a NULL-terminated malloc'd array of malloc'd strings (free with
 * es_ccfg_strv_free). Errors: ES_ERR_INVAL (a dev-node entry is not a valid
 * name, or the list is empty), ES_ERR_NOMEM.
 */
es_err es_ccfg_dev_nodes(const es_ccfg *cfg, const char *hostname,
			 char ***out, char *err, size_t errsz);

/* Frees a NULL-terminated string array. NULL-safe. */
void es_ccfg_strv_free(char **v);

/* Prints the settings (flag, environment variable, default, help). */
void es_ccfg_print_help(FILE *f);

#endif
