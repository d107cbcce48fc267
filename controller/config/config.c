/*
 * config.c - the settings table of edgesync-controller and the checks of
 * `run` across settings.
 */
#include "config/config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_buf.h"
#include "es_enroll.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_urllist.h"
#include "es_pki.h"
#include "ca/ca.h"
#include "etcd/etcd_client.h"

#define ES_CCFG_STRING(k, e, def, member, help)                               \
	{ k, "EDGESYNC_" e, k, ES_SET_STRING, def, 0, 0,                      \
	  offsetof(es_ccfg, member), help, NULL }

const char *const es_ccfg_store_names[] = { "sqlite", "etcd", NULL };
const char *const es_ccfg_event_loop_names[] = { "auto", "poll", "libuv", NULL };

static const es_setting ccfg_table[] = {
	ES_CCFG_STRING("listen", "LISTEN", "127.0.0.1:7443", listen,
		       "agents' WebSocket listener, ip:port"),
	ES_CCFG_STRING("admin-listen", "ADMIN_LISTEN", "127.0.0.1:7444",
		       admin_listen, "admin API listener (HTTPS), ip:port"),
	ES_CCFG_STRING("state-dir", "STATE_DIR", "/var/lib/edgesync-controller",
		       state_dir, "state directory (database, dev certificates)"),
	ES_CCFG_STRING("db", "DB", NULL, db,
		       "SQLite database file (default <state-dir>/controller.db)"),
	ES_CCFG_STRING("cert", "CERT", NULL, cert,
		       "controller certificate, PEM (dev: <state-dir>/dev/controller.crt)"),
	ES_CCFG_STRING("key", "KEY", NULL, key,
		       "controller private key, PEM (dev: <state-dir>/dev/controller.key)"),
	ES_CCFG_STRING("client-ca", "CLIENT_CA", NULL, client_ca,
		       "CA that issues agent certificates, PEM (dev: <state-dir>/dev/ca.crt)"),
	ES_CCFG_STRING("admin-ca", "ADMIN_CA", NULL, admin_ca,
		       "CA that issues admin certificates, PEM (default: client-ca)"),
	ES_CCFG_STRING("trust-domain", "TRUST_DOMAIN", ES_PKI_DEFAULT_TRUST_DOMAIN,
		       trust_domain, "SPIFFE trust domain of node and admin identities"),
	{ "log-level", "EDGESYNC_LOG_LEVEL", "log-level", ES_SET_ENUM, "info", 0, 0,
	  offsetof(es_ccfg, log_level), "most verbose level logged",
	  es_log_level_names },
	{ "dev", "EDGESYNC_DEV", "dev", ES_SET_BOOL, "false", 0, 0,
	  offsetof(es_ccfg, dev),
	  "development mode: make a throwaway CA and certificates in <state-dir>/dev",
	  NULL },
	ES_CCFG_STRING("dev-node", "DEV_NODE", NULL, dev_node,
		       "dev mode: also issue a certificate for this node (repeatable, or a,b,c)"),
	{ "tombstones-kept", "EDGESYNC_TOMBSTONES_KEPT", "tombstones-kept",
	  ES_SET_INT, "10000", 0, INT64_C(1000000000),
	  offsetof(es_ccfg, tombstones_kept),
	  "deletion records kept; an agent older than the oldest gets a full list",
	  NULL },
	{ "reports-kept", "EDGESYNC_REPORTS_KEPT", "reports-kept",
	  ES_SET_INT, "10000", 1, INT64_C(1000000000),
	  offsetof(es_ccfg, reports_kept),
	  "reports kept per node and report stream (older ones are pruned)",
	  NULL },
	{ "report-bytes-kept", "EDGESYNC_REPORT_BYTES_KEPT", "report-bytes-kept",
	  ES_SET_INT, "1048576", 0, INT64_C(1) << 40,
	  offsetof(es_ccfg, report_bytes_kept),
	  "bytes of report bodies kept per node, oldest pruned first (0: no bound)",
	  NULL },
	{ "state-cache-nodes", "EDGESYNC_STATE_CACHE_NODES", "state-cache-nodes",
	  ES_SET_INT, "4096", 1, INT64_C(10000000),
	  offsetof(es_ccfg, state_cache_nodes),
	  "deprecated, no effect (the reported state is not held in memory)",
	  NULL },
	ES_CCFG_STRING("ca-cert", "CA_CERT", NULL, ca_cert,
		       "signing CA certificate for joining nodes, PEM (edgesync-controller "
		       "ca init; dev: <state-dir>/dev/ca.crt; unset: no joins)"),
	ES_CCFG_STRING("ca-key", "CA_KEY", NULL, ca_key,
		       "private key of ca-cert, PEM (dev: <state-dir>/dev/ca.key)"),
	{ "cert-lifetime", "EDGESYNC_CERT_LIFETIME", "cert-lifetime", ES_SET_INT,
	  "86400", ES_CA_LIFETIME_MIN, ES_CA_LIFETIME_MAX,
	  offsetof(es_ccfg, cert_lifetime),
	  "seconds a node certificate the controller signs is valid", NULL },
	{ "renewal-grace", "EDGESYNC_RENEWAL_GRACE", "renewal-grace", ES_SET_INT,
	  "2592000", 0, ES_ENROLL_GRACE_MAX, offsetof(es_ccfg, renewal_grace),
	  "seconds past its notAfter a node may still renew its expired certificate "
	  "at the join listener (0: never)", NULL },
	ES_CCFG_STRING("advertise-url", "ADVERTISE_URL", NULL, advertise_url,
		       "wss:// URL agents dial, shown in join commands "
		       "(default wss://<listen>; a wildcard address becomes the host name)"),
	ES_CCFG_STRING("join-listen", "JOIN_LISTEN", NULL, join_listen,
		       "listener for joining nodes (HTTPS, no client certificate; only "
		       "with ca-cert), ip:port (default <listen host>:<listen port + 2>)"),
	ES_CCFG_STRING("trust-bundle", "TRUST_BUNDLE", NULL, trust_bundle,
		       "PEM file of the CAs that verify cert, given to joining agents "
		       "(default: ca-cert)"),
	{ "max-handshakes", "EDGESYNC_MAX_HANDSHAKES", "max-handshakes",
	  ES_SET_INT, "128", 0, INT64_C(1000000), offsetof(es_ccfg, max_handshakes),
	  "TLS handshakes in progress at once (0: no limit); more connections wait in the listen backlog",
	  NULL },
	{ "max-sessions", "EDGESYNC_MAX_SESSIONS", "max-sessions",
	  ES_SET_INT, "50000", 0, INT64_C(10000000), offsetof(es_ccfg, max_sessions),
	  "agent sessions (0: no limit); past it a hello is told to come back later",
	  NULL },
	{ "handshake-timeout", "EDGESYNC_HANDSHAKE_TIMEOUT", "handshake-timeout",
	  ES_SET_INT, "10", 1, 600, offsetof(es_ccfg, handshake_timeout),
	  "seconds an agent connection has from accept to its hello (TLS, upgrade, hello)",
	  NULL },
	{ "overload-retry-seconds", "EDGESYNC_OVERLOAD_RETRY_SECONDS",
	  "overload-retry-seconds", ES_SET_INT, "30", 1, 3600,
	  offsetof(es_ccfg, overload_retry),
	  "retryAfterSeconds told to an agent refused for load (it waits that to twice that)",
	  NULL },
	{ "event-loop", "EDGESYNC_EVENT_LOOP", "event-loop", ES_SET_ENUM, "auto", 0, 0,
	  offsetof(es_ccfg, event_loop),
	  "event loop of the listeners: libuv (epoll; scales to many agents), poll"
	  " (poll() over every socket each turn) or auto (libuv when built in)",
	  es_ccfg_event_loop_names },
	{ "store", "EDGESYNC_STORE", "store", ES_SET_ENUM, "sqlite", 0, 0,
	  offsetof(es_ccfg, store),
	  "where desired objects live: sqlite (this controller's db) or etcd (shared by"
	  " every controller on it; db then mirrors it)", es_ccfg_store_names },
	ES_CCFG_STRING("etcd-endpoints", "ETCD_ENDPOINTS", NULL, etcd_endpoints,
		       "store = etcd: etcd client URLs, https://host[:port] or http://host[:port],"
		       " port default 2379 (repeatable, or a,b,c; tried in turn)"),
	ES_CCFG_STRING("etcd-cert", "ETCD_CERT", NULL, etcd_cert,
		       "store = etcd: client certificate for etcd's mutual TLS, PEM"),
	ES_CCFG_STRING("etcd-key", "ETCD_KEY", NULL, etcd_key,
		       "store = etcd: private key of etcd-cert, PEM"),
	ES_CCFG_STRING("etcd-ca", "ETCD_CA", NULL, etcd_ca,
		       "store = etcd: CA that signed etcd's server certificate, PEM"),
	ES_CCFG_STRING("etcd-prefix", "ETCD_PREFIX", "/edgesync/", etcd_prefix,
		       "store = etcd: key prefix of this fleet's data, ending in '/'"),
	ES_CCFG_STRING("tls-ticket-key", "TLS_TICKET_KEY", NULL, tls_ticket_key,
		       "TLS session ticket key file, created 0600 if missing; give every controller the same (default <state-dir>/tls-ticket.key)"),
	{ "tls-ticket-lifetime", "EDGESYNC_TLS_TICKET_LIFETIME", "tls-ticket-lifetime",
	  ES_SET_INT, "604800", 0, 604800, offsetof(es_ccfg, tls_ticket_lifetime),
	  "seconds a session ticket resumes a TLS session (0: no tickets, every connect is a full handshake)",
	  NULL },
};

#define CCFG_N (sizeof(ccfg_table) / sizeof(ccfg_table[0]))

const es_setting *es_ccfg_settings(size_t *n)
{
	if (n)
		*n = CCFG_N;
	return ccfg_table;
}

void es_ccfg_print_help(FILE *f)
{
	es_config_print_help(ccfg_table, CCFG_N, f);
}

void es_ccfg_free(es_ccfg *cfg)
{
	if (!cfg)
		return;
	es_config_free(ccfg_table, CCFG_N, cfg);
	memset(cfg, 0, sizeof(*cfg));
}

void es_ccfg_strv_free(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

/*
 * Takes every "--dev-node V" / "--dev-node=V" out of argv[first..): *rest
 * gets the other arguments (borrowed pointers, *nrest of them, argv[0..first)
 * kept in front), *joined the values joined with ','.
 */
static es_err split_dev_nodes(int argc, char **argv, int first, char ***rest,
			      int *nrest, char **joined, char *err, size_t errsz)
{
	static const char flag[] = "--dev-node";
	const size_t fl = sizeof(flag) - 1;
	char **r = calloc((size_t)argc + 1, sizeof(*r));
	es_buf nodes = { 0 };
	int n = 0;
	es_err rc = ES_OK;

	if (!r)
		return ES_ERR_NOMEM;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = NULL;

		if (i < first || strncmp(a, flag, fl) != 0 ||
		    (a[fl] != '\0' && a[fl] != '=')) {
			r[n++] = argv[i];
			continue;
		}
		if (a[fl] == '=') {
			v = a + fl + 1;
		} else if (i + 1 < argc) {
			v = argv[++i];
		} else {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "--dev-node: missing value");
			goto cleanup;
		}
		rc = es_buf_appendf(&nodes, "%s%s", nodes.len ? "," : "", v);
		if (rc != ES_OK)
			goto cleanup;
	}
	*rest = r;
	*nrest = n;
	r = NULL;
	*joined = es_buf_detach(&nodes, NULL);
cleanup:
	free(r);
	es_buf_free(&nodes);
	return rc;
}

es_err es_ccfg_load(es_ccfg *cfg, int argc, char **argv, int first,
		    char *err, size_t errsz)
{
	char **args = NULL, *flag_nodes = NULL;
	const char *file;
	int nargs = 0;
	es_err rc;

	rc = es_config_defaults(ccfg_table, CCFG_N, cfg, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	file = es_config_find_file(argc, argv, first, ES_CCFG_CONFIG_ENV);
	if (file) {
		rc = es_config_load_file(ccfg_table, CCFG_N, cfg, file, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
	}
	rc = es_config_load_env(ccfg_table, CCFG_N, cfg, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	rc = split_dev_nodes(argc, argv, first, &args, &nargs, &flag_nodes,
			     err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	rc = es_config_load_args(ccfg_table, CCFG_N, cfg, nargs, args, first,
				 NULL, NULL, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	/* --etcd-endpoints given several times is a list. */
	{
		char *joined = NULL;

		rc = es_urllist_join_flag(argc, argv, first, "etcd-endpoints", &joined,
					  err, errsz);
		if (rc == ES_OK && joined) {
			free(cfg->etcd_endpoints);
			cfg->etcd_endpoints = joined;
		}
		if (rc != ES_OK)
			goto cleanup;
	}
	if (flag_nodes) {
		rc = es_config_set(ccfg_table, CCFG_N, cfg, "dev-node",
				   flag_nodes, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
	}
	rc = es_ccfg_finish(cfg, err, errsz);
cleanup:
	free(args);
	free(flag_nodes);
	return rc;
}

/* *dst = dir + "/" + leaf, unless *dst is already set. */
static es_err default_path(char **dst, const char *dir, const char *leaf)
{
	size_t n;
	char *p;

	if (*dst && **dst)
		return ES_OK;
	n = strlen(dir) + strlen(leaf) + 2;
	p = malloc(n);
	if (!p)
		return ES_ERR_NOMEM;
	snprintf(p, n, "%s/%s", dir, leaf);
	free(*dst);
	*dst = p;
	return ES_OK;
}

static es_err default_copy(char **dst, const char *src)
{
	char *p;

	if (*dst && **dst)
		return ES_OK;
	p = strdup(src);
	if (!p)
		return ES_ERR_NOMEM;
	free(*dst);
	*dst = p;
	return ES_OK;
}

/* Checks each comma-separated entry of dev-node. */
static es_err check_dev_nodes(const char *list, char *err, size_t errsz)
{
	const char *p = list;

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		char name[ES_NAME_MAX + 2];

		if (l > ES_NAME_MAX)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "dev-node: a name is longer than %d characters",
				       ES_NAME_MAX);
		memcpy(name, p, l);
		name[l] = '\0';
		if (!es_obj_name_valid(name))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "dev-node: \"%s\" is not an RFC 1123 DNS subdomain "
				       "(lower-case letters, digits, '-', '.')", name);
		p = c ? c + 1 : NULL;
	}
	return ES_OK;
}

/* The etcd settings of store = etcd: endpoints (es_urllist_split's
 * rules, each as es_etcd_endpoint_parse takes it, https needing etcd-ca),
 * etcd-cert and etcd-key together, a prefix ending in '/'; with another
 * store, etcd-endpoints refused. */
static es_err check_etcd(const es_ccfg *cfg, char *err, size_t errsz)
{
	es_urllist l;
	es_err rc;

	if (cfg->store != ES_CCFG_STORE_ETCD)
		/* An operator who set etcd-endpoints and forgot store = etcd
		 * would run cut off from the shared objects, unwarned. */
		return cfg->etcd_endpoints && *cfg->etcd_endpoints ?
			es_errf(ES_ERR_INVAL, err, errsz, "etcd-endpoints: set, but"
				" store is sqlite; set store = etcd to use etcd, or"
				" remove etcd-endpoints") : ES_OK;
	if (!cfg->etcd_endpoints || !*cfg->etcd_endpoints)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "etcd-endpoints: required with store = etcd");
	if ((rc = es_urllist_split("etcd-endpoints", cfg->etcd_endpoints, &l, err,
				   errsz)) != ES_OK)
		return rc;
	for (size_t i = 0; i < l.n && rc == ES_OK; i++) {
		es_url u;

		rc = es_etcd_endpoint_parse(l.items[i], &u, err, errsz);
		if (rc == ES_OK && !strcmp(u.scheme, "https") &&
		    !(cfg->etcd_ca && *cfg->etcd_ca))
			rc = es_errf(ES_ERR_INVAL, err, errsz, "etcd-ca: required for %s",
				     l.items[i]);
	}
	es_urllist_free(&l);
	if (rc != ES_OK)
		return rc;
	if (!(cfg->etcd_cert && *cfg->etcd_cert) != !(cfg->etcd_key && *cfg->etcd_key))
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: required with %s",
			       cfg->etcd_cert && *cfg->etcd_cert ? "etcd-key" : "etcd-cert",
			       cfg->etcd_cert && *cfg->etcd_cert ? "etcd-cert" : "etcd-key");
	if (!cfg->etcd_prefix || !*cfg->etcd_prefix ||
	    cfg->etcd_prefix[strlen(cfg->etcd_prefix) - 1] != '/')
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "etcd-prefix: \"%s\": must end with '/'",
			       cfg->etcd_prefix ? cfg->etcd_prefix : "");
	return ES_OK;
}

es_err es_ccfg_finish(es_ccfg *cfg, char *err, size_t errsz)
{
	char dev_dir[4096];
	es_addr a1, a2;
	es_err rc;

	rc = es_addr_parse("listen", cfg->listen, ES_CCFG_LISTEN_FLAGS, &a1,
			   err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_addr_parse("admin-listen", cfg->admin_listen, ES_CCFG_LISTEN_FLAGS,
			   &a2, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (a1.port == a2.port && strcmp(a1.host, a2.host) == 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "admin-listen: %s is also the agents' listen address",
			       cfg->admin_listen);
	if (!cfg->state_dir || !*cfg->state_dir)
		return es_errf(ES_ERR_INVAL, err, errsz, "state-dir: empty");
	if (strlen(cfg->state_dir) + 32 > sizeof(dev_dir))
		return es_errf(ES_ERR_INVAL, err, errsz, "state-dir: path too long");
	if (!cfg->trust_domain || !es_obj_name_valid(cfg->trust_domain))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "trust-domain: \"%s\": expected a lower-case DNS name",
			       cfg->trust_domain ? cfg->trust_domain : "");
	rc = check_dev_nodes(cfg->dev_node, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (cfg->dev_node && *cfg->dev_node && !cfg->dev)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "dev-node: only meaningful with --dev");

	if ((rc = check_etcd(cfg, err, errsz)) != ES_OK)
		return rc;
	rc = default_path(&cfg->db, cfg->state_dir, "controller.db");
	if (rc == ES_OK)
		rc = default_path(&cfg->tls_ticket_key, cfg->state_dir, "tls-ticket.key");
	if (rc == ES_OK && cfg->dev) {
		snprintf(dev_dir, sizeof(dev_dir), "%s/dev", cfg->state_dir);
		rc = default_path(&cfg->cert, dev_dir, "controller.crt");
		if (rc == ES_OK)
			rc = default_path(&cfg->key, dev_dir, "controller.key");
		if (rc == ES_OK)
			rc = default_path(&cfg->client_ca, dev_dir, "ca.crt");
		if (rc == ES_OK && !(cfg->ca_key && *cfg->ca_key))
			rc = default_path(&cfg->ca_cert, dev_dir, "ca.crt");
		if (rc == ES_OK)
			rc = default_path(&cfg->ca_key, dev_dir, "ca.key");
	}
	if (rc != ES_OK)
		return es_errf(rc, err, errsz, "out of memory");
	if (!cfg->cert || !*cfg->cert)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "cert: required (or run with --dev)");
	if (!cfg->key || !*cfg->key)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "key: required (or run with --dev)");
	if (!cfg->client_ca || !*cfg->client_ca)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "client-ca: required (or run with --dev)");
	if (!cfg->ca_cert != !cfg->ca_key || (cfg->ca_cert && (!*cfg->ca_cert || !*cfg->ca_key)))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s: required with %s", cfg->ca_cert && *cfg->ca_cert ?
			       "ca-key" : "ca-cert", cfg->ca_cert && *cfg->ca_cert ?
			       "ca-cert" : "ca-key");
	if (!cfg->join_listen || !*cfg->join_listen) {
		char jl[300];

		if (a1.port > 65535 - ES_ENROLL_JOIN_PORT_OFFSET)
			return es_errf(ES_ERR_INVAL, err, errsz, "join-listen: required: "
				       "listen's port %d has no port %d beside it",
				       a1.port, a1.port + ES_ENROLL_JOIN_PORT_OFFSET);
		snprintf(jl, sizeof(jl), strchr(a1.host, ':') ? "[%s]:%d" : "%s:%d",
			 a1.host, a1.port + ES_ENROLL_JOIN_PORT_OFFSET);
		if (default_copy(&cfg->join_listen, jl) != ES_OK)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	}
	{
		es_addr a3;

		rc = es_addr_parse("join-listen", cfg->join_listen, ES_CCFG_LISTEN_FLAGS,
				   &a3, err, errsz);
		if (rc != ES_OK)
			return rc;
		if ((a3.port == a1.port && !strcmp(a3.host, a1.host)) ||
		    (a3.port == a2.port && !strcmp(a3.host, a2.host)))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "join-listen: %s is also the %s address",
				       cfg->join_listen, a3.port == a1.port ?
				       "agents' listen" : "admin-listen");
	}
	if (!cfg->advertise_url || !*cfg->advertise_url) {
		char host[256] = "", url[400];

		if (!strcmp(a1.host, "0.0.0.0") || !strcmp(a1.host, "::") || !a1.host[0])
			(void)gethostname(host, sizeof(host) - 1);
		else
			snprintf(host, sizeof(host), "%s", a1.host);
		snprintf(url, sizeof(url), strchr(host, ':') ? "wss://[%s]:%d" :
			 "wss://%s:%d", host, a1.port);
		if (default_copy(&cfg->advertise_url, url) != ES_OK)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	} else if (strncmp(cfg->advertise_url, "wss://", 6) != 0) {
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "advertise-url: \"%s\": expected wss://host:port",
			       cfg->advertise_url);
	}
	if (default_copy(&cfg->admin_ca, cfg->client_ca) != ES_OK)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	return ES_OK;
}

/* Appends a copy of name to v (*n entries, capacity cap) unless present. */
static es_err strv_add(char ***v, size_t *n, size_t *cap, const char *name,
		       size_t len)
{
	char *s;

	for (size_t i = 0; i < *n; i++)
		if (strlen((*v)[i]) == len && memcmp((*v)[i], name, len) == 0)
			return ES_OK;
	if (*n + 2 > *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		char **nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return ES_ERR_NOMEM;
		*v = nv;
		*cap = nc;
	}
	s = strndup(name, len);
	if (!s)
		return ES_ERR_NOMEM;
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return ES_OK;
}

es_err es_ccfg_dev_nodes(const es_ccfg *cfg, const char *hostname,
			 char ***out, char *err, size_t errsz)
{
	char **v = NULL, host[ES_NAME_MAX + 1];
	size_t n = 0, cap = 0;
	const char *p = cfg->dev_node;
	es_err rc = ES_OK;

	*out = NULL;
	if (hostname && strlen(hostname) <= ES_NAME_MAX) {
		size_t i;

		for (i = 0; hostname[i]; i++)
			host[i] = (char)tolower((unsigned char)hostname[i]);
		host[i] = '\0';
		if (es_obj_name_valid(host)) {
			rc = strv_add(&v, &n, &cap, host, i);
			if (rc != ES_OK)
				goto nomem;
		}
	}
	rc = check_dev_nodes(p, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);

		rc = strv_add(&v, &n, &cap, p, l);
		if (rc != ES_OK)
			goto nomem;
		p = c ? c + 1 : NULL;
	}
	if (n == 0) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "dev-node: the host name is not a valid node name; "
			     "name at least one node with --dev-node");
		goto cleanup;
	}
	*out = v;
	v = NULL;
	goto cleanup;
nomem:
	es_errf(rc, err, errsz, "out of memory");
cleanup:
	es_ccfg_strv_free(v);
	return rc;
}
