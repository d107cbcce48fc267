/*
 * main.c - edgesync-controller: the cluster-side sync endpoint and admin
 * API (README, "What each program does").
 *
 * Exit status: 0 after a clean stop (SIGINT, SIGTERM), 1 on a runtime
 * failure, 2 on a usage or configuration error.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>

#include "ca/ca.h"
#include "ca/ca_cli.h"
#include "config/config.h"
#include "store/db.h"
#include "store/store_etcd.h"
#include "es_urllist.h"
#include "es_cli.h"
#include "es_fs.h"
#include "es_lockfile.h"
#include "es_log.h"
#include "es_notify.h"
#include "es_pki.h"
#include "es_version.h"
#include "net/server.h"
#include "net/tickets.h"
#ifdef ES_CONTROLLER_LIBUV
#include "evloop_uv.h"
#endif

#define PROG "edgesync-controller"
/* Stopping: how long the reports of the last batches may wait for their
 * cursors on etcd, in milliseconds (es_server_drain). */
#define DRAIN_MS 2000
/* Then: how long the revoke of the etcd lease may take, in milliseconds
 * (es_server_leave). */
#define LEAVE_MS 500

static es_server *g_server;

static void on_signal(int sig)
{
	(void)sig;
	es_server_stop(g_server);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " run [flags]\n"
		"       " PROG " ca init [flags] | ca hash FILE   (" PROG " ca --help)\n"
		"       " PROG " help | --help | --version\n"
		"\n"
		"Serves edgesync agents (WebSocket over mutual TLS, /v1/sync) and the\n"
		"admin API (HTTPS with admin client certificates).\n"
		"\n"
		"Settings: config file (--config FILE or EDGESYNC_CONFIG; key = value\n"
		"lines), then EDGESYNC_* environment variables, then flags; later wins.\n"
		"  --config FILE                config file\n");
	es_ccfg_print_help(f);
	fprintf(f,
		"\n"
		"Development: " PROG " run --dev --state-dir DIR [--dev-node NAME]...\n"
		"makes a throwaway CA and certificates in DIR/dev and writes\n"
		"DIR/dev/edgesyncctl.conf and DIR/dev/agent-<node>.conf.\n"
		"\n"
		"Several controllers: give each --store etcd and the same\n"
		"--etcd-endpoints (with --etcd-cert, --etcd-key, --etcd-ca); desired\n"
		"objects then live in etcd and an apply on any reaches every agent.\n"
		"\n"
		"Exit status: 0 stopped cleanly, 1 runtime failure, 2 usage or\n"
		"configuration error.\n");
#ifdef ES_CONTROLLER_LIBUV
	fprintf(f, "\nEvent loops built in: libuv %s (auto), poll.\n",
		es_evloop_uv_version());
#else
	fprintf(f, "\nEvent loops built in: poll (auto); no libuv.\n");
#endif
}

static int write_conf(const char *path, const char *text)
{
	char err[512];

	if (es_pki_write_file_atomic(path, text, strlen(text), 0600, err,
				     sizeof(err)) != ES_OK) {
		es_log_error("main", "cannot write a dev config file", "error",
			     err, NULL);
		return -1;
	}
	return 0;
}

/*
 * Development mode: certificates via es_pki_dev_init, then the admin CLI's
 * and each agent's config file. Returns 0, 1 (runtime) or 2 (config).
 */
static int dev_setup(const es_ccfg *cfg, int listen_port, int admin_port)
{
	char sdir[PATH_MAX], dir[PATH_MAX + 8], path[PATH_MAX + 300];
	char text[4 * PATH_MAX + 1024], cmd[PATH_MAX + 400];
	char host[256] = "", err[512], **nodes = NULL;
	int rc = 1;

	if (!realpath(cfg->state_dir, sdir)) {
		es_log_error("main", "state-dir unusable", "state-dir",
			     cfg->state_dir, "error", strerror(errno), NULL);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/dev", sdir);
	(void)gethostname(host, sizeof(host) - 1);
	if (es_ccfg_dev_nodes(cfg, host, &nodes, err, sizeof(err)) != ES_OK) {
		es_log_error("main", "bad configuration", "error", err, NULL);
		return 2;
	}
	if (es_pki_dev_init(dir, cfg->trust_domain, (const char *const *)nodes,
			    NULL, err, sizeof(err)) != ES_OK) {
		es_log_error("main", "dev mode: cannot make certificates", "dir",
			     dir, "error", err, NULL);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/edgesyncctl.conf", dir);
	snprintf(text, sizeof(text),
		 "# edgesyncctl settings for this development controller\n"
		 "server = https://127.0.0.1:%d\n"
		 "cert = %s/admin.crt\nkey = %s/admin.key\nca = %s/ca.crt\n",
		 admin_port, dir, dir, dir);
	if (write_conf(path, text))
		goto cleanup;
	es_log_info("main", "dev mode: throwaway CA and certificates", "dir",
		    dir, NULL);
	snprintf(cmd, sizeof(cmd), "edgesyncctl --config %s get nodes", path);
	es_log_info("main", "dev mode: admin CLI", "config", path, "command",
		    cmd, NULL);
	for (size_t i = 0; nodes[i]; i++) {
		snprintf(path, sizeof(path), "%s/agent-%s.conf", dir, nodes[i]);
		snprintf(text, sizeof(text),
			 "# edgesync-agent settings for node %s of this development controller\n"
			 "controller-url = wss://localhost:%d\n"
			 "node-name = %s\n"
			 "cert = %s/nodes/%s.crt\nkey = %s/nodes/%s.key\nca = %s/ca.crt\n"
			 "# state-dir: the agent's default (edgesync-agent --help), which\n"
			 "# its systemd unit can write; pass --state-dir DIR to run it\n"
			 "# elsewhere (as another user, or beside another agent).\n",
			 nodes[i], listen_port, nodes[i], dir, nodes[i], dir,
			 nodes[i], dir);
		if (write_conf(path, text))
			goto cleanup;
		snprintf(cmd, sizeof(cmd), "edgesync-agent run --config %s", path);
		es_log_info("main", "dev mode: agent", "node", nodes[i], "config",
			    path, "command", cmd, NULL);
	}
	rc = 0;
cleanup:
	es_ccfg_strv_free(nodes);
	return rc;
}

static int readable(const char *key, const char *path)
{
	if (access(path, R_OK) == 0)
		return 0;
	es_log_error("main", "cannot read a credential file", "setting", key,
		     "path", path, "error", strerror(errno), NULL);
	return -1;
}

/* The file at path holds at least one PEM/DER certificate. */
static int has_cert(const char *key, const char *path)
{
	mbedtls_x509_crt crt;
	int rc;

	if (readable(key, path))
		return -1;
	mbedtls_x509_crt_init(&crt);
	rc = mbedtls_x509_crt_parse_file(&crt, path);
	mbedtls_x509_crt_free(&crt);
	if (rc == 0)
		return 0;
	es_log_error("main", "no usable X.509 certificate in a credential file",
		     "setting", key, "path", path, NULL);
	return -1;
}

/* The key at key is the private key of the certificate at cert (read as
 * es_pki_creds_check reads them); otherwise logged, naming both. Without
 * this check the controller would serve, and every handshake would fail
 * with a bad signature. */
static int key_matches(const char *cert, const char *key, const char *ca)
{
	es_pki_creds c;

	if (es_pki_creds_check(cert, key, ca, time(NULL), &c) == ES_ERR_NOMEM) {
		es_log_error("main", "out of memory", NULL, NULL);
		return -1;
	}
	if (c.state[ES_PKI_KEY] == ES_PKI_FILE_OK)
		return 0;
	es_log_error("main", "unusable serving key", "setting", "key", "path", key,
		     "error", c.why[ES_PKI_KEY], NULL);
	return -1;
}

/* store = etcd: the etcd backend on the server's loop, the db its
 * mirror. Returns 0, or 1 (logged). */
static int etcd_store_open(const es_ccfg *cfg, es_db *db, es_store *st)
{
	es_urllist l = { 0 };
	es_store_etcd_opts eo = { 0 };
	char err[1024];
	es_err rc;

	if ((rc = es_urllist_split("etcd-endpoints", cfg->etcd_endpoints, &l, err,
				   sizeof(err))) == ES_OK) {
		eo.endpoints = (const char *const *)l.items;
		eo.n_endpoints = l.n;
		eo.cert = cfg->etcd_cert;
		eo.key = cfg->etcd_key;
		eo.ca = cfg->etcd_ca;
		eo.prefix = cfg->etcd_prefix;
		eo.observe = es_server_etcd_observed;
		eo.observe_ud = g_server;
		rc = es_store_etcd_open(es_server_context(g_server), &eo, db,
					es_server_object_changed, g_server, st, err,
					sizeof(err));
	}
	es_urllist_free(&l);
	if (rc != ES_OK) {
		es_log_error("main", "cannot use the etcd store", "error", err, NULL);
		return 1;
	}
	es_server_set_store(g_server, st);
	es_log_info("main", "desired objects in etcd", "etcd-endpoints",
		    cfg->etcd_endpoints, "etcd-prefix", cfg->etcd_prefix, NULL);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	es_store store = { 0 };
	es_ccfg cfg = { 0 };
	es_server_opts so = { 0 };
	es_db *db = NULL;
	es_ca *ca = NULL;
	char join_host[256];
	es_addr laddr, aaddr;
	char err[1024], lockpath[4200];
	int rc = 2, lock_fd = -1;

	if (es_cli_has_help(argc, argv, 2)) {
		usage(stdout);
		return 0;
	}
	if (es_ccfg_load(&cfg, argc, argv, 2, err, sizeof(err)) != ES_OK ||
	    es_addr_parse("listen", cfg.listen, ES_CCFG_LISTEN_FLAGS, &laddr,
			  err, sizeof(err)) != ES_OK ||
	    es_addr_parse("admin-listen", cfg.admin_listen, ES_CCFG_LISTEN_FLAGS,
			  &aaddr, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, PROG ": %s\n", err);
		goto cleanup;
	}
	if (cfg.event_loop != ES_CCFG_LOOP_POLL) {
#ifdef ES_CONTROLLER_LIBUV
		so.uv_run_once = es_evloop_uv_run_once;
#else
		if (cfg.event_loop == ES_CCFG_LOOP_LIBUV) {
			fprintf(stderr, PROG ": event-loop: libuv is not built into this "
				"program (configured with ES_CONTROLLER_LIBUV=OFF, the "
				"default of cross builds); use poll or auto\n");
			goto cleanup;
		}
#endif
	}
	so.listen_port = laddr.port;
	so.admin_port = aaddr.port;
	es_log_set_level((es_log_level)cfg.log_level);
	es_log_route_lws();

	rc = 1;
	if (es_fs_mkdir_p(cfg.state_dir, 0700, err, sizeof(err)) != ES_OK) {
		es_log_error("main", "cannot create the state directory",
			     "state-dir", cfg.state_dir, "error", err, NULL);
		goto cleanup;
	}
	snprintf(lockpath, sizeof(lockpath), "%s/controller.lock", cfg.state_dir);
	if (es_lockfile_acquire(lockpath, &lock_fd, err, sizeof(err)) != ES_OK) {
		es_log_error("main", "cannot lock the state directory", "error", err,
			     NULL);
		goto cleanup;
	}
	/* libwebsockets retries a bind to an address this host does not have
	 * forever: refuse it here (after the lock, so a second controller on
	 * this state directory says that first). */
	if (es_addr_check_listen("listen", &laddr, ES_CCFG_LISTEN_FLAGS, err,
				 sizeof(err)) != ES_OK ||
	    es_addr_check_listen("admin-listen", &aaddr, ES_CCFG_LISTEN_FLAGS, err,
				 sizeof(err)) != ES_OK) {
		es_log_error("main", "cannot listen", "error", err, NULL);
		goto cleanup;
	}
	if (cfg.dev) {
		rc = dev_setup(&cfg, so.listen_port, so.admin_port);
		if (rc != 0)
			goto cleanup;
	}
	rc = 2;
	if (has_cert("cert", cfg.cert) || readable("key", cfg.key) ||
	    has_cert("client-ca", cfg.client_ca) ||
	    has_cert("admin-ca", cfg.admin_ca) ||
	    key_matches(cfg.cert, cfg.key, cfg.client_ca))
		goto cleanup;
	if (cfg.ca_cert && es_ca_open(cfg.ca_cert, cfg.ca_key, &ca, err,
				      sizeof(err)) != ES_OK) {
		es_log_error("main", "unusable signing CA", "error", err, NULL);
		goto cleanup;
	}
	if (ca)
		es_log_info("main", "joining nodes enabled", "ca-cert", cfg.ca_cert,
			    "ca-hash", es_ca_pin(ca), NULL);

	rc = 1;
	if (es_db_open(cfg.db, &db, err, sizeof(err)) != ES_OK) {
		es_log_error("main", "cannot open the database", "error", err, NULL);
		goto cleanup;
	}
	{
		int64_t stale = 0;
		char nbuf[24];

		if (es_db_nodes_reset_connected(db, &stale) != ES_OK) {
			es_log_error("main", "cannot mark the nodes disconnected", NULL, NULL);
			goto cleanup;
		}
		if (stale > 0) {
			snprintf(nbuf, sizeof(nbuf), "%lld", (long long)stale);
			es_log_info("main", "nodes left connected by the previous run marked "
				    "disconnected", "nodes", nbuf, NULL);
		}
	}
	es_db_set_tombstones_kept(db, cfg.tombstones_kept);
	es_db_set_reports_kept(db, cfg.reports_kept, cfg.report_bytes_kept);
	if (cfg.state_cache_nodes != ES_CCFG_STATE_CACHE_NODES)
		es_log_warn("main", "state-cache-nodes is deprecated and has no effect: "
			    "the reported state is kept as rows in the store, not in "
			    "memory", NULL);
	so.listen_host = laddr.host;
	so.admin_host = aaddr.host;
	so.cert = cfg.cert;
	so.key = cfg.key;
	so.client_ca = cfg.client_ca;
	so.admin_ca = cfg.admin_ca;
	so.trust_domain = cfg.trust_domain;
	so.db_path = cfg.db;
	so.ca = ca;
	so.cert_lifetime = cfg.cert_lifetime;
	so.renewal_grace = cfg.renewal_grace;
	so.advertise_url = cfg.advertise_url;
	so.trust_bundle = cfg.trust_bundle;
	if (ca) {
		es_addr jaddr;

		if (es_addr_parse("join-listen", cfg.join_listen, ES_CCFG_LISTEN_FLAGS,
				  &jaddr, err, sizeof(err)) != ES_OK ||
		    es_addr_check_listen("join-listen", &jaddr, ES_CCFG_LISTEN_FLAGS, err,
					 sizeof(err)) != ES_OK) {
			es_log_error("main", "cannot listen", "error", err, NULL);
			goto cleanup;
		}
		snprintf(join_host, sizeof(join_host), "%s", jaddr.host);
		so.join_host = join_host;
		so.join_port = jaddr.port;
	}
	so.max_handshakes = (int)cfg.max_handshakes;
	so.max_sessions = (int)cfg.max_sessions;
	so.handshake_timeout_s = (int)cfg.handshake_timeout;
	so.overload_retry_s = (int)cfg.overload_retry;
	if (cfg.tls_ticket_lifetime > 0) {
		es_err te = es_tickets_init(cfg.tls_ticket_key,
					    (uint32_t)cfg.tls_ticket_lifetime, err,
					    sizeof(err));

		if (te != ES_OK) {
			es_log_error("main", "cannot load the TLS session ticket key",
				     "error", err, NULL);
			/* A file of the wrong mode or shape is a setting to fix. */
			rc = te == ES_ERR_INVAL ? 2 : 1;
			goto cleanup;
		}
	}
	if (es_server_new(&so, db, &g_server, err, sizeof(err)) != ES_OK) {
		es_log_error("main", "cannot start", "error", err, NULL);
		goto cleanup;
	}
	if (cfg.store == ES_CCFG_STORE_ETCD && etcd_store_open(&cfg, db, &store) != 0)
		goto cleanup;
	if (es_cli_signals(on_signal) != ES_OK) {
		es_log_error("main", "cannot install signal handlers", NULL, NULL);
		goto cleanup;
	}
	es_log_info("main", "serving", "version", ES_VERSION, "event-loop",
		    so.uv_run_once ? "libuv" : "poll", "listen", cfg.listen,
		    "admin-listen", cfg.admin_listen, "db", cfg.db, "join-listen",
		    ca && cfg.join_listen ? cfg.join_listen : "off (no ca-cert)", NULL);
	if (es_notify_watchdog_start(es_server_context(g_server), NULL, err,
				     sizeof(err)) != ES_OK)
		es_log_warn("main", "systemd watchdog not started", "error", err, NULL);
	es_notify_ready("serving");
	if (es_server_run(g_server) != ES_OK) {
		es_log_error("main", "service loop failed", NULL, NULL);
		goto cleanup;
	}
	es_log_info("main", "stopping", NULL, NULL);
	rc = 0;
cleanup:
	if (g_server)
		es_notify_stopping();
	/* The open batch's cursors to etcd before the store closes: what
	 * etcd did not commit is not acknowledged. */
	es_server_drain(g_server, DRAIN_MS);
	/* Then its nodes go to the other controllers at once. */
	es_server_leave(g_server, LEAVE_MS);
	es_store_close(&store);
	es_server_destroy(g_server);
	es_tickets_shutdown();
	g_server = NULL;
	es_db_close(db);
	es_ca_free(ca);
	es_lockfile_release(lock_fd);
	es_ccfg_free(&cfg);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	int code = es_cli_common(argc, argv, PROG, usage);

	if (code >= 0)
		return code;
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "ca"))
		return es_ca_cli_main(argc, argv);
	fprintf(stderr, PROG ": unknown command \"%s\" (try " PROG " --help)\n", cmd);
	return 2;
}
