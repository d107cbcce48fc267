/*
 * config.c - edgesync-agent settings (see config.h).
 */
#include "runtime/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "egress/egress.h"
#include "enroll/join.h"
#include "es_addr.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_proto.h"
#include "es_urllist.h"

#define S(k, env, type, def, lo, hi, member, help) \
	{ k, "EDGESYNC_" env, k, type, def, lo, hi, \
	  offsetof(es_agent_config, member), help, NULL }
/* An ES_SET_ENUM setting; names indexed by the member's enum. */
#define E(k, env, def, names, member, help) \
	{ k, "EDGESYNC_" env, k, ES_SET_ENUM, def, 0, 0, \
	  offsetof(es_agent_config, member), help, names }

static const char *const order_names[] = {
	[ES_AGENT_ORDER_NODE] = "node", [ES_AGENT_ORDER_LISTED] = "listed", NULL,
};
static const char *const kc_backend_names[] = {
	[ES_AGENT_KC_AUTO] = "auto", [ES_AGENT_KC_PROCFS] = "procfs", NULL,
};
static const char *const egress_backend_names[] = {
	[ES_EGRESS_BACKEND_AUTO] = "auto", [ES_EGRESS_BACKEND_EBPF] = "ebpf",
	[ES_EGRESS_BACKEND_NFTABLES] = "nftables", NULL,
};

static const es_setting settings[] = {
	S("controller-url", "CONTROLLER_URL", ES_SET_STRING, "", 0, 0, controller_url,
	  "controller sync URL, wss://host:port[/path]; several, comma-separated "
	  "or the flag repeated, are tried in turn, in controller-order (empty: offline only)"),
	E("controller-order", "CONTROLLER_ORDER", "node", order_names, controller_order,
	  "order controller-url's controllers are tried in: node (each node its "
	  "own, by rendezvous hashing of its name, so a fleet spreads over them) "
	  "or listed"),
	S("node-name", "NODE_NAME", ES_SET_STRING, NULL, 0, 0, node_name,
	  "node name, an RFC 1123 subdomain (default: the host name)"),
	S("labels", "LABELS", ES_SET_STRING, "", 0, 0, labels,
	  "node labels, k=v,k2=v2"),
	S("cert", "CERT", ES_SET_STRING, NULL, 0, 0, cert,
	  "client certificate (PEM) with the node's SPIFFE ID"),
	S("key", "KEY", ES_SET_STRING, NULL, 0, 0, key,
	  "private key (PEM) of the client certificate"),
	S("ca", "CA", ES_SET_STRING, NULL, 0, 0, ca,
	  "CA certificate(s) (PEM) the controller's certificate must chain to"),
	S("state-dir", "STATE_DIR", ES_SET_STRING, "/var/lib/edgesync", 0, 0, state_dir,
	  "directory of the agent database (agent.db)"),
	S("http-listen", "HTTP_LISTEN", ES_SET_STRING, "127.0.0.1:9477", 0, 0, http_listen,
	  "local HTTP endpoint ip:port (empty: disabled)"),
	S("interval", "INTERVAL", ES_SET_INT, "10", 1, 3600, interval,
	  "seconds between collections (a CollectorConfig overrides it)"),
	E("log-level", "LOG_LEVEL", "info", es_log_level_names, log_level,
	  "most verbose level logged"),
	S("max-events", "MAX_EVENTS", ES_SET_INT, "1000", 1, 1000000, max_events,
	  "events kept in the outbox before the oldest are dropped"),
	E("collector-backend", "COLLECTOR_BACKEND", "auto", kc_backend_names,
	  collector_backend,
	  "kernel collectors: auto (eBPF where it works) or procfs (force the fallback)"),
	S("ringbuf-bytes", "RINGBUF_BYTES", ES_SET_INT, "131072", 4096, 67108864,
	  ringbuf_bytes,
	  "size of the BPF ring buffer the kernel collectors share (rounded up to a power of 2)"),
	S("cgroup-root", "CGROUP_ROOT", ES_SET_STRING, "", 0, 0, cgroup_root,
	  "cgroup v2 hierarchy to watch and enforce in, such as the host's "
	  "/sys/fs/cgroup mounted into a container (empty: the mounted one, or "
	  "one mounted in state-dir)"),
	S("btf-path", "BTF_PATH", ES_SET_STRING, "", 0, 0, btf_path,
	  "BTF of this kernel for the eBPF collectors when "
	  "/sys/kernel/btf/vmlinux is missing: a file, or a directory of "
	  "<kernel release>.btf files (empty: none)"),
	S("egress-pin-dir", "EGRESS_PIN_DIR", ES_SET_STRING, "/sys/fs/bpf/edgesync/egress",
	  0, 0, egress_pin_dir,
	  "bpffs directory where EgressPolicy programs and maps are pinned"),
	S("egress-check-interval", "EGRESS_CHECK_INTERVAL", ES_SET_INT, "30", 1, 3600,
	  egress_check_interval,
	  "seconds between checks (and repairs) of the EgressPolicy kernel state"),
	E("egress-backend", "EGRESS_BACKEND", "auto", egress_backend_names,
	  egress_backend,
	  "EgressPolicy enforcement: auto (cgroup BPF where it works, else nftables), "
	  "ebpf or nftables"),
	S("token", "TOKEN", ES_SET_STRING, "", 0, 0, token,
	  "bootstrap token <id>.<secret> to join with when there is no certificate "
	  "(cert, key, ca then default to <state-dir>/pki/)"),
	S("token-file", "TOKEN_FILE", ES_SET_STRING, "", 0, 0, token_file,
	  "file whose first line is the bootstrap token (instead of token, which "
	  "`ps` would show)"),
	S("ca-hash", "CA_HASH", ES_SET_STRING, "", 0, 0, ca_hash,
	  "sha256:<hex> of the controller CA's public key, checked before the token is sent"),
	S("join-url", "JOIN_URL", ES_SET_STRING, "", 0, 0, join_url,
	  "the controller's join listener, https://host:port "
	  "(default: controller-url's host, its port + 2)"),
	S("usage-report-interval", "USAGE_REPORT_INTERVAL", ES_SET_INT, "60", 1, 86400,
	  usage_report_interval,
	  "seconds between reports of usage figures (usage, activity, collector event "
	  "counts, condition messages); condition changes, object statuses and "
	  "events go at once"),
	S("usage-min-change", "USAGE_MIN_CHANGE", ES_SET_INT, "5", 0, 100,
	  usage_min_change,
	  "percent a usage figure must move from the value last sent before it is "
	  "sent again (0: every change)"),
	S("protocol-version", "PROTOCOL_VERSION", ES_SET_INT, "2", 1, 2,
	  protocol_version,
	  "sync protocol version to speak: 2 (keyed changes, activity events, "
	  "compression), or 1 for a controller older than this agent"),
	S("compress", "COMPRESS", ES_SET_BOOL, "true", 0, 0, compress,
	  "compress messages (deflate) when the controller agrees (protocol 2)"),
	S("renew-percent", "RENEW_PERCENT", ES_SET_INT, "50", 0, 99, renew_percent,
	  "renew the certificate over the session at this percent of its lifetime, "
	  "plus up to 10% jitter, when the controller issued it (0: never; changed "
	  "cert, key and ca files are taken either way)"),
};
#undef S
#undef E

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

const es_setting *es_agent_settings(size_t *n)
{
	if (n)
		*n = NSETTINGS;
	return settings;
}

es_err es_agent_config_load(es_agent_config *cfg, int argc, char **argv,
			    int first, const char **positional,
			    int *npositional, char *err, size_t errsz)
{
	const char *file;
	es_err rc;

	rc = es_config_defaults(settings, NSETTINGS, cfg, err, errsz);
	if (rc != ES_OK)
		return rc;
	file = es_config_find_file(argc, argv, first, ES_AGENT_CONFIG_ENV);
	if (file) {
		rc = es_config_load_file(settings, NSETTINGS, cfg, file, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	rc = es_config_load_env(settings, NSETTINGS, cfg, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_config_load_args(settings, NSETTINGS, cfg, argc, argv, first,
				 positional, npositional, err, errsz);
	if (rc != ES_OK)
		return rc;
	/* --controller-url given several times is a list, as a comma-separated
	 * value is. */
	{
		char *joined = NULL;

		rc = es_urllist_join_flag(argc, argv, first, "controller-url", &joined,
					  err, errsz);
		if (rc == ES_OK && joined) {
			free(cfg->controller_url);
			cfg->controller_url = joined;
		}
	}
	return rc;
}

void es_agent_config_free(es_agent_config *cfg)
{
	if (!cfg)
		return;
	es_config_free(settings, NSETTINGS, cfg);
}

es_err es_agent_url_parse(const char *url, es_agent_url *out, char *err,
			  size_t errsz)
{
	es_err rc;

	memset(out, 0, sizeof(*out));
	if (!url || !*url)
		return es_errf(ES_ERR_INVAL, err, errsz, "controller-url: empty");
	if (!strncasecmp(url, "ws://", 5) || !strncasecmp(url, "http://", 7))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "controller-url: plaintext \"%.*s\" is refused: "
			       "the sync protocol runs only over TLS, use wss://",
			       (int)(strchr(url, ':') - url + 3), url);
	rc = es_url_parse("controller-url", url, "wss", out, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (strchr(out->path, '?'))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "controller-url: \"%s\": a query is not allowed", url);
	if (!strcmp(out->path, "/"))
		snprintf(out->path, sizeof(out->path), "%s", ES_PROTO_PATH);
	return ES_OK;
}

es_err es_agent_urls_parse(const char *list, es_urllist *l,
			   es_agent_url urls[ES_URLLIST_MAX], char *err,
			   size_t errsz)
{
	es_err rc = es_urllist_split("controller-url", list, l, err, errsz);

	for (size_t i = 0; rc == ES_OK && i < l->n; i++)
		rc = es_agent_url_parse(l->items[i], &urls[i], err, errsz);
	if (rc != ES_OK)
		es_urllist_free(l);
	return rc;
}

es_err es_agent_labels_parse(const char *s, cJSON **out, char *err,
			     size_t errsz)
{
	return es_obj_labels_parse(s, "labels", out, err, errsz);
}

static int empty(const char *s)
{
	return !s || !*s;
}

static es_err default_node_name(es_agent_config *cfg, char *err, size_t errsz)
{
	char host[256] = "";
	char *p;

	if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "node-name: not set and the host name is unavailable");
	for (p = host; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	cfg->node_name = strdup(host);
	if (!cfg->node_name)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	return ES_OK;
}

es_err es_agent_config_validate(es_agent_config *cfg, char *err, size_t errsz)
{
	es_addr addr;
	cJSON *labels = NULL;
	es_err rc;

	if (empty(cfg->node_name)) {
		free(cfg->node_name);
		cfg->node_name = NULL;
		rc = default_node_name(cfg, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	if (!es_obj_name_valid(cfg->node_name))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "node-name: \"%s\" is not an RFC 1123 subdomain "
			       "(lower-case letters, digits, '-' and '.', at most 253)",
			       cfg->node_name);
	rc = es_join_config_finish(cfg, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (!empty(cfg->controller_url)) {
		es_agent_url urls[ES_URLLIST_MAX];
		es_urllist l;

		rc = es_agent_urls_parse(cfg->controller_url, &l, urls, err, errsz);
		if (rc != ES_OK)
			return rc;
		es_urllist_free(&l);
		if (empty(cfg->cert))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "cert: required when controller-url is set");
		if (empty(cfg->key))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "key: required when controller-url is set");
		if (empty(cfg->ca))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "ca: required when controller-url is set");
	}
	rc = es_agent_labels_parse(cfg->labels, &labels, err, errsz);
	cJSON_Delete(labels);
	if (rc != ES_OK)
		return rc;
	if (empty(cfg->state_dir))
		return es_errf(ES_ERR_INVAL, err, errsz, "state-dir: must not be empty");
	if (!empty(cfg->http_listen)) {
		rc = es_addr_parse("http-listen", cfg->http_listen, 0, &addr,
				   err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	return ES_OK;
}
