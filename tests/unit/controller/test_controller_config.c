/* Unit tests of controller/config/config.c: the controller's settings table,
 * derived defaults and cross-setting checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/config.h"
#include "etcd/etcd_client.h"

static const char *const env_vars[] = {
	"EDGESYNC_CONFIG", "EDGESYNC_LISTEN", "EDGESYNC_ADMIN_LISTEN",
	"EDGESYNC_STATE_DIR", "EDGESYNC_DB", "EDGESYNC_CERT", "EDGESYNC_KEY",
	"EDGESYNC_CLIENT_CA", "EDGESYNC_ADMIN_CA", "EDGESYNC_TRUST_DOMAIN",
	"EDGESYNC_LOG_LEVEL", "EDGESYNC_DEV", "EDGESYNC_DEV_NODE", "EDGESYNC_EVENT_LOOP",
};

static int clear_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
	return 0;
}

/* Loads argv (NULL-terminated, after "edgesync-controller run"). */
static es_err load(es_ccfg *cfg, char *err, size_t errsz, ...)
{
	char *argv[32] = { "edgesync-controller", "run" };
	int argc = 2;
	va_list ap;
	char *a;

	va_start(ap, errsz);
	while ((a = va_arg(ap, char *)) != NULL && argc < 31)
		argv[argc++] = a;
	va_end(ap);
	memset(cfg, 0, sizeof(*cfg));
	return es_ccfg_load(cfg, argc, argv, 2, err, errsz);
}

static void test_dev_defaults(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--state-dir",
			      "/tmp/st", NULL), ES_OK);
	assert_string_equal(c.listen, "127.0.0.1:7443");
	assert_string_equal(c.admin_listen, "127.0.0.1:7444");
	assert_string_equal(c.db, "/tmp/st/controller.db");
	assert_string_equal(c.cert, "/tmp/st/dev/controller.crt");
	assert_string_equal(c.key, "/tmp/st/dev/controller.key");
	assert_string_equal(c.client_ca, "/tmp/st/dev/ca.crt");
	assert_string_equal(c.admin_ca, "/tmp/st/dev/ca.crt");
	assert_string_equal(c.trust_domain, "edgesync.local");
	assert_int_equal(c.dev, 1);
	/* The report history's bounds and the state cache (README). */
	assert_int_equal(c.reports_kept, 10000);
	assert_int_equal(c.report_bytes_kept, 1048576);
	assert_int_equal(c.state_cache_nodes, 4096);
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--report-bytes-kept", "0",
			      "--reports-kept", "5", NULL), ES_OK);
	assert_int_equal(c.report_bytes_kept, 0);
	assert_int_equal(c.reports_kept, 5);
	es_ccfg_free(&c);
	/* The join listener sits beside the agents' port (listen + 2). */
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--state-dir", "/tmp/st",
			      NULL), ES_OK);
	assert_int_equal(es_ccfg_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_listen, "127.0.0.1:7445");
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--state-dir", "/tmp/st",
			      "--listen", "127.0.0.1:27443", "--admin-listen",
			      "127.0.0.1:27444", NULL), ES_OK);
	assert_int_equal(es_ccfg_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_listen, "127.0.0.1:27445");
	es_ccfg_free(&c);
}

static void test_default_state_dir(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", NULL), ES_OK);
	assert_string_equal(c.state_dir, "/var/lib/edgesync-controller");
	assert_string_equal(c.db, "/var/lib/edgesync-controller/controller.db");
	es_ccfg_free(&c);
}

static void test_cert_required_without_dev(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), NULL), ES_ERR_INVAL);
	assert_non_null(strstr(err, "cert"));
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--cert", "a.crt", "--key",
			      "a.key", NULL), ES_ERR_INVAL);
	assert_non_null(strstr(err, "client-ca"));
	es_ccfg_free(&c);
}

static void test_explicit_files_win_over_dev(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--cert", "/x.crt",
			      "--admin-ca", "/admin-ca.crt", "--db=/d.db", NULL),
			 ES_OK);
	assert_string_equal(c.cert, "/x.crt");
	assert_string_equal(c.db, "/d.db");
	assert_string_equal(c.admin_ca, "/admin-ca.crt");
	assert_string_equal(c.client_ca,
			    "/var/lib/edgesync-controller/dev/ca.crt");
	es_ccfg_free(&c);
}

static void test_file_env_flag_order(void **state)
{
	char path[] = "/tmp/es-ccfg-XXXXXX";
	int fd = mkstemp(path);
	const char text[] =
		"# controller\nlisten = 127.0.0.1:8000\nadmin-listen = 127.0.0.1:8001\n"
		"trust-domain = file.example\ncert = /f.crt\nkey = /f.key\n"
		"client-ca = /f-ca.crt\n";
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	setenv("EDGESYNC_ADMIN_LISTEN", "127.0.0.1:9001", 1);
	setenv("EDGESYNC_TRUST_DOMAIN", "env.example", 1);
	assert_int_equal(load(&c, err, sizeof(err), "--config", path,
			      "--trust-domain", "flag.example", NULL), ES_OK);
	assert_string_equal(c.listen, "127.0.0.1:8000");
	assert_string_equal(c.admin_listen, "127.0.0.1:9001");
	assert_string_equal(c.trust_domain, "flag.example");
	assert_string_equal(c.admin_ca, "/f-ca.crt");
	es_ccfg_free(&c);

	setenv("EDGESYNC_CONFIG", path, 1);
	assert_int_equal(load(&c, err, sizeof(err), NULL), ES_OK);
	assert_string_equal(c.trust_domain, "env.example");
	assert_string_equal(c.cert, "/f.crt");
	es_ccfg_free(&c);
	unlink(path);
}

static void test_unknown_key_in_file(void **state)
{
	char path[] = "/tmp/es-ccfg-XXXXXX";
	int fd = mkstemp(path);
	const char text[] = "dev = true\nlisten-port = 7\n";
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_int_equal(load(&c, err, sizeof(err), "--config", path, NULL),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "listen-port"));
	es_ccfg_free(&c);
	unlink(path);
}

static void test_unknown_flag_and_positional(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--bogus", NULL),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "--bogus"));
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "extra", NULL),
			 ES_ERR_INVAL);
	es_ccfg_free(&c);
}

static void test_dev_node_repeatable(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	setenv("EDGESYNC_DEV_NODE", "from-env", 1);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", NULL), ES_OK);
	assert_string_equal(c.dev_node, "from-env");
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev-node", "a", "--dev",
			      "--dev-node=b,c", "--dev-node", "d", NULL), ES_OK);
	assert_string_equal(c.dev_node, "a,b,c,d");
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--dev-node", NULL),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "--dev-node"));
	es_ccfg_free(&c);
}

/* store = etcd: endpoints required (a list, the flag repeatable), https
 * needs etcd-ca, etcd-cert and etcd-key together, a prefix ending in '/'. */
static void test_etcd_store_settings(void **state)
{
	static const struct { const char *arg[4]; const char *key; } bad[] = {
		{ { NULL }, "etcd-endpoints" },
		{ { "--etcd-endpoints", "https://e:2379", NULL }, "etcd-ca" },
		{ { "--etcd-endpoints", "e:2379", NULL }, "etcd-endpoints" },
		{ { "--etcd-endpoints", "http://e:2379", "--etcd-cert", "c" }, "etcd-key" },
		{ { "--etcd-endpoints", "http://e:2379", "--etcd-prefix", "/x" }, "etcd-prefix" },
	};
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", NULL), ES_OK);
	assert_int_equal(c.store, ES_CCFG_STORE_SQLITE);
	assert_string_equal(c.etcd_prefix, "/edgesync/");
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--store", "etcd",
			      "--etcd-endpoints", "https://a:2379", "--etcd-endpoints=https://b:2379",
			      "--etcd-ca", "ca.pem", NULL), ES_OK);
	assert_int_equal(c.store, ES_CCFG_STORE_ETCD);
	assert_string_equal(c.etcd_endpoints, "https://a:2379,https://b:2379");
	es_ccfg_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(load(&c, err, sizeof(err), "--dev", "--store", "etcd",
				      bad[i].arg[0], bad[i].arg[1], bad[i].arg[2],
				      bad[i].arg[3], NULL), ES_ERR_INVAL);
		assert_non_null(strstr(err, bad[i].key));
		es_ccfg_free(&c);
	}
	/* each endpoint is a URL: the bad one is named, whichever it is */
	{
		static const char *const bad_ep[] = {
			"ftp://e:2379", "http://", "http://:2379", "http://e:0",
			"http://e:65536", "http://e:x", "http://e:2379/v3", "http://e:2379?a=b",
			"http://u@e:2379", "http://e:2379#f", "http://[::1:2379", "http://e f",
		};

		for (size_t i = 0; i < sizeof(bad_ep) / sizeof(bad_ep[0]); i++) {
			char list[128];

			snprintf(list, sizeof(list), "http://ok:2379,%s", bad_ep[i]);
			err[0] = '\0';
			assert_int_equal(load(&c, err, sizeof(err), "--dev", "--store", "etcd",
					      "--etcd-endpoints", list, NULL), ES_ERR_INVAL);
			if (!strstr(err, "etcd-endpoints") || !strstr(err, bad_ep[i]))
				fail_msg("%s: %s", bad_ep[i], err);
			es_ccfg_free(&c);
		}
	}
	/* etcd-endpoints without store = etcd: refused, not ignored. */
	err[0] = '\0';
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--etcd-endpoints",
			      "http://e:2379", NULL), ES_ERR_INVAL);
	assert_non_null(strstr(err, "store = etcd"));
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--store", "mysql", NULL),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "store"));
	es_ccfg_free(&c);
}

static void test_event_loop(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", NULL), ES_OK);
	assert_int_equal(c.event_loop, ES_CCFG_LOOP_AUTO);
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--event-loop", "poll", NULL),
			 ES_OK);
	assert_int_equal(c.event_loop, ES_CCFG_LOOP_POLL);
	es_ccfg_free(&c);
	setenv("EDGESYNC_EVENT_LOOP", "libuv", 1);
	assert_int_equal(load(&c, err, sizeof(err), "--dev", NULL), ES_OK);
	assert_int_equal(c.event_loop, ES_CCFG_LOOP_LIBUV);
	es_ccfg_free(&c);
	unsetenv("EDGESYNC_EVENT_LOOP");
}

static void test_dev_node_checks(void **state)
{
	es_ccfg c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--dev-node",
			      "Bad_Name", NULL), ES_ERR_INVAL);
	assert_non_null(strstr(err, "dev-node"));
	assert_non_null(strstr(err, "Bad_Name"));
	es_ccfg_free(&c);
	assert_int_equal(load(&c, err, sizeof(err), "--cert", "a", "--key", "b",
			      "--client-ca", "c", "--dev-node", "n1", NULL),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "--dev"));
	es_ccfg_free(&c);
}

static void test_bad_values_name_the_key(void **state)
{
	static const struct { const char *flag, *value, *key; } cases[] = {
		{ "--listen", "127.0.0.1", "listen" },
		{ "--listen", "127.0.0.1:0", "listen" },
		{ "--listen", "127.0.0.1:65536", "listen" },
		{ "--admin-listen", ":7444", "admin-listen" },
		{ "--admin-listen", "127.0.0.1:7443", "admin-listen" },
		{ "--log-level", "loud", "log-level" },
		{ "--trust-domain", "Not A Domain", "trust-domain" },
		{ "--state-dir", "", "state-dir" },
		{ "--dev", "maybe", "--dev" },
		{ "--reports-kept", "0", "reports-kept" },
		{ "--report-bytes-kept", "-1", "report-bytes-kept" },
		{ "--state-cache-nodes", "0", "state-cache-nodes" },
		{ "--event-loop", "epoll", "event-loop" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char arg[128], err[512] = "";
		es_ccfg c;

		snprintf(arg, sizeof(arg), "%s=%s", cases[i].flag, cases[i].value);
		assert_int_equal(load(&c, err, sizeof(err), "--dev", arg, NULL),
				 ES_ERR_INVAL);
		if (!strstr(err, cases[i].key))
			fail_msg("%s: message \"%s\" does not name %s", arg, err,
				 cases[i].key);
		es_ccfg_free(&c);
	}
}

/* listen and admin-listen as the controller reads them (es_addr_parse with
 * ES_CCFG_LISTEN_FLAGS; every rule in tests/unit/lib/test_addr.c). */
static void test_hostport(void **state)
{
	char err[512], longhost[300];
	es_addr a;

	(void)state;
	assert_int_equal(es_addr_parse("listen", "0.0.0.0:1", ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_OK);
	assert_string_equal(a.host, "0.0.0.0");
	assert_int_equal(a.port, 1);
	assert_int_equal(es_addr_parse("listen", "[::1]:7443", ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_OK);
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 7443);
	assert_int_equal(es_addr_parse("listen", "::1:7443", ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_addr_parse("listen", "[::1]7443", ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_addr_parse("listen", "h:12x", ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_addr_parse("listen", "a b:1", ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_ERR_INVAL);
	/* a host longer than the buffer */
	memset(longhost, 'a', sizeof(longhost));
	strcpy(longhost + sizeof(longhost) - 3, ":1");
	assert_int_equal(es_addr_parse("listen", longhost, ES_CCFG_LISTEN_FLAGS, &a,
				       err, sizeof(err)), ES_ERR_INVAL);
	/* IP literals only: libwebsockets never looks a host name up, and
	 * cannot bind a zoned address, and would retry either forever */
	assert_int_equal(es_addr_parse("listen", "localhost:7443", ES_CCFG_LISTEN_FLAGS,
				       &a, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "listen: \"localhost:7443\": \"localhost\" is not an IPv4 "
			    "address (an IPv6 address goes in brackets)");
	assert_int_equal(es_addr_parse("admin-listen", "[fe80::1%lo]:7444",
				       ES_CCFG_LISTEN_FLAGS, &a, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "admin-listen: \"[fe80::1%lo]:7444\": a zone (\"%lo\") is "
			    "not allowed here");
}

static void test_dev_nodes_list(void **state)
{
	es_ccfg c;
	char err[512] = "", **v = NULL;

	(void)state;
	assert_int_equal(load(&c, err, sizeof(err), "--dev", "--dev-node", "n1",
			      "--dev-node", "myhost,n2,n1", NULL), ES_OK);
	assert_int_equal(es_ccfg_dev_nodes(&c, "MyHost", &v, err, sizeof(err)), ES_OK);
	assert_string_equal(v[0], "myhost");
	assert_string_equal(v[1], "n1");
	assert_string_equal(v[2], "n2");
	assert_null(v[3]);
	es_ccfg_strv_free(v);
	assert_int_equal(es_ccfg_dev_nodes(&c, "bad_host", &v, err, sizeof(err)), ES_OK);
	assert_string_equal(v[0], "n1");
	es_ccfg_strv_free(v);
	es_ccfg_free(&c);

	assert_int_equal(load(&c, err, sizeof(err), "--dev", NULL), ES_OK);
	assert_int_equal(es_ccfg_dev_nodes(&c, "edge-1", &v, err, sizeof(err)), ES_OK);
	assert_string_equal(v[0], "edge-1");
	assert_null(v[1]);
	es_ccfg_strv_free(v);
	assert_int_equal(es_ccfg_dev_nodes(&c, "bad_host", &v, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_null(v);
	assert_non_null(strstr(err, "--dev-node"));
	es_ccfg_free(&c);
}

static void test_help_lists_every_setting(void **state)
{
	size_t n = 0;
	const es_setting *t = es_ccfg_settings(&n);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	es_ccfg_print_help(f);
	fclose(f);
	assert_true(n >= 12);
	for (size_t i = 0; i < n; i++) {
		char flag[64];

		snprintf(flag, sizeof(flag), "--%s", t[i].flag);
		if (!strstr(buf, flag))
			fail_msg("help lacks %s", flag);
	}
	free(buf);
}

/* An etcd endpoint's port: the one written, else etcd's 2379 (not the
 * scheme's 80 or 443); IPv6 literals have colons of their own. */
static void test_etcd_endpoint_port(void **state)
{
	static const struct { const char *url; const char *host; int port; } ok[] = {
		{ "http://e", "e", 2379 },
		{ "https://e/", "e", 2379 },
		{ "http://e:2380", "e", 2380 },
		{ "https://10.0.0.1:443", "10.0.0.1", 443 },
		{ "http://[::1]", "::1", 2379 },
		{ "http://[fd00::2]:12379", "fd00::2", 12379 },
		{ "HTTP://E.example", "E.example", 2379 },
	};
	char err[256];
	es_url u;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (es_etcd_endpoint_parse(ok[i].url, &u, err, sizeof(err)) != ES_OK)
			fail_msg("%s: %s", ok[i].url, err);
		assert_string_equal(u.host, ok[i].host);
		assert_int_equal(u.port, ok[i].port);
	}
	assert_int_equal(es_etcd_endpoint_parse("wss://e:2379", &u, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "etcd-endpoints: \"wss://e:2379\": expected "
			    "http://host[:port] or https://host[:port]");
	/* No scheme, or one URLs have but etcd does not: the message names
	 * only the two etcd speaks. */
	assert_int_equal(es_etcd_endpoint_parse("ftp://e:2379", &u, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "etcd-endpoints: \"ftp://e:2379\": expected "
			    "http://host[:port] or https://host[:port]");
	assert_int_equal(es_etcd_endpoint_parse("e:2379", &u, err, sizeof(err)), ES_ERR_INVAL);
	assert_null(strstr(err, "ws://"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_dev_defaults, clear_env),
		cmocka_unit_test_setup(test_default_state_dir, clear_env),
		cmocka_unit_test_setup(test_cert_required_without_dev, clear_env),
		cmocka_unit_test_setup(test_explicit_files_win_over_dev, clear_env),
		cmocka_unit_test_setup(test_file_env_flag_order, clear_env),
		cmocka_unit_test_setup(test_unknown_key_in_file, clear_env),
		cmocka_unit_test_setup(test_unknown_flag_and_positional, clear_env),
		cmocka_unit_test_setup(test_dev_node_repeatable, clear_env),
		cmocka_unit_test_setup(test_dev_node_checks, clear_env),
		cmocka_unit_test_setup(test_etcd_store_settings, clear_env),
		cmocka_unit_test(test_etcd_endpoint_port),
		cmocka_unit_test_setup(test_event_loop, clear_env),
		cmocka_unit_test_setup(test_bad_values_name_the_key, clear_env),
		cmocka_unit_test_setup(test_hostport, clear_env),
		cmocka_unit_test_setup(test_dev_nodes_list, clear_env),
		cmocka_unit_test_setup(test_help_lists_every_setting, clear_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
