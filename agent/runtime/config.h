/*
 * config.h - edgesync-agent settings (README "Configuration";
 * docs/HACKING.md, "Adding a setting"): one table, applied from defaults,
 * the config file (--config or EDGESYNC_CONFIG), EDGESYNC_* environment
 * variables and flags, later winning (lib/es_config.h).
 */
#ifndef ES_AGENT_CONFIG_H
#define ES_AGENT_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_config.h"
#include "es_err.h"
#include "es_url.h"
#include "es_urllist.h"

#define ES_AGENT_CONFIG_ENV "EDGESYNC_CONFIG"

/* Setting collector-backend: where the kernel collectors run. */
typedef enum es_agent_kc_backend {
	ES_AGENT_KC_AUTO = 0,   /* "auto": eBPF where it works, else /proc */
	ES_AGENT_KC_PROCFS = 1, /* "procfs": always the /proc fallback */
} es_agent_kc_backend;

/* Setting controller-order: which of controller-url's targets the agent
 * dials first and next (lib/es_urllist.h). */
typedef enum es_agent_order {
	ES_AGENT_ORDER_NODE = 0,   /* "node": rendezvous order of the node name */
	ES_AGENT_ORDER_LISTED = 1, /* "listed": as listed */
} es_agent_order;

typedef struct es_agent_config {
	char *controller_url;  /* wss://host[:port][/path], comma-separated; "" = offline only */
	int controller_order;  /* es_agent_order */
	char *node_name;       /* default: the host name, lower-cased */
	char *labels;          /* "k=v,k2=v2" */
	char *cert, *key, *ca; /* PEM files for mutual TLS */
	char *state_dir;       /* holds agent.db */
	char *http_listen;     /* "ip:port" or "[v6]:port" of the local HTTP endpoint
				  (IP literals only, es_addr_parse flags 0); "" disables */
	int64_t interval;      /* seconds between collections, 1..3600 */
	int log_level;         /* es_log_level (es_log.h) */
	int64_t max_events;    /* events kept in the outbox */
	int collector_backend; /* es_agent_kc_backend (kernel collectors) */
	int64_t ringbuf_bytes; /* bytes of the kernel collectors' shared BPF ring buffer */
	char *cgroup_root;     /* cgroup v2 hierarchy to use; "" = find one (cgroot.h) */
	char *btf_path;        /* BTF file or directory for kernels without BTF; "" = none */
	char *egress_pin_dir;  /* bpffs directory of the EgressPolicy pins */
	int64_t egress_check_interval; /* seconds between EgressPolicy drift checks */
	int egress_backend;    /* es_egress_backend (egress/egress.h) */
	char *token;           /* bootstrap token "<id>.<secret>" to join with; "" none */
	char *token_file;      /* file holding the token; "" none */
	char *ca_hash;         /* "sha256:<hex>" pin of the controller's CA (join) */
	char *join_url;        /* https URL of the join listener; "" derived */
	int64_t usage_report_interval; /* seconds between usage reports */
	int64_t usage_min_change;      /* percent a usage figure must move */
	int64_t protocol_version;      /* hello.protocolVersion, 1 or 2 */
	int compress;                  /* offer deflate (protocol 2) */
	int64_t renew_percent;         /* renew over the session at this percent
					* of the certificate's lifetime; 0 never */
} es_agent_config;

/* The settings table (for help output and tests); *n gets its length. */
const es_setting *es_agent_settings(size_t *n);

/*
 * Fills cfg (zeroed by the caller) from defaults, the config file named by
 * "--config" in argv[first..) or $EDGESYNC_CONFIG, the environment and the
 * flags in argv[first..). positional/npositional as in es_config_load_args
 * (NULL: any non-flag argument is an error). Does not validate across
 * settings (es_agent_config_validate does). Free with es_agent_config_free,
 * also after an error. Errors: ES_ERR_IO (config file unreadable, err names
 * it), ES_ERR_INVAL (err names the key, variable or flag; a log-level,
 * controller-order, collector-backend or egress-backend not among its
 * names is refused here, the message naming the value and listing the
 * names), ES_ERR_NOMEM.
 */
es_err es_agent_config_load(es_agent_config *cfg, int argc, char **argv,
			    int first, const char **positional,
			    int *npositional, char *err, size_t errsz);

/*
 * Checks the settings of `run` and fills the node name default (the host
 * name, lower-cased). Refuses, naming the key: a controller-url that is not
 * wss:// (plaintext ws:// is refused: PROTOCOL.md "Transport" has no
 * plaintext mode), a missing cert, key or ca when controller-url is set, a
 * bad label (naming it), a node-name that is not an RFC 1123 subdomain, a
 * bad http-listen, an empty state-dir.
 * Errors: ES_ERR_INVAL, ES_ERR_NOMEM.
 */
es_err es_agent_config_validate(es_agent_config *cfg, char *err, size_t errsz);

/* Frees the strings of cfg. NULL-safe. */
void es_agent_config_free(es_agent_config *cfg);

/* A parsed controller URL (es_url.h): host without IPv6 brackets, port
 * default 443, path default "/v1/sync". */
typedef es_url es_agent_url;

/*
 * Parses the controller-url setting: wss://host[:port][/path]
 * (es_url_parse with scheme "wss"; "[v6addr]" accepted), with no query;
 * an empty path or "/" becomes ES_PROTO_PATH. Errors: ES_ERR_INVAL naming
 * controller-url: empty, plaintext ws:// or http:// (PROTOCOL.md
 * "Transport" has no plaintext mode), another scheme, a bad URL, a query.
 */
es_err es_agent_url_parse(const char *url, es_agent_url *out, char *err,
			  size_t errsz);

/*
 * Parses controller-url as a list of controllers: es_urllist_split into
 * *l (the caller frees it with es_urllist_free), then each URL with
 * es_agent_url_parse into urls[i]. Errors: those two's; *l is empty then.
 */
es_err es_agent_urls_parse(const char *list, es_urllist *l,
			   es_agent_url urls[ES_URLLIST_MAX], char *err,
			   size_t errsz);

/*
 * Parses "k=v,k2=v2" into a new JSON object of strings (*out, caller owns).
 * Keys and values follow Kubernetes label syntax (API conventions, "Labels
 * and Selectors"): key = [DNS-subdomain prefix "/"] name, name and value at
 * most 63 characters of [A-Za-z0-9._-] starting and ending alphanumeric
 * (value may be empty). Whitespace around items is ignored; "" gives {}.
 * Errors: ES_ERR_INVAL naming the bad label, ES_ERR_NOMEM.
 */
es_err es_agent_labels_parse(const char *s, cJSON **out, char *err,
			     size_t errsz);

#endif
