/*
 * test_agent_config.c - edgesync-agent settings (agent/runtime/config.h): defaults,
 * precedence file < environment < flags, and refusals that name the key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/config.h"
#include "egress/egress.h"
#include "es_log.h"

static void clear_env(void)
{
	size_t n, i;
	const es_setting *t = es_agent_settings(&n);

	for (i = 0; i < n; i++)
		if (t[i].env)
			unsetenv(t[i].env);
	unsetenv(ES_AGENT_CONFIG_ENV);
}

static int setup(void **state)
{
	(void)state;
	clear_env();
	return 0;
}

static char *write_file(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/es-agent-config-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static es_err load(es_agent_config *cfg, int argc, char **argv, char *err,
		   size_t errsz)
{
	memset(cfg, 0, sizeof(*cfg));
	return es_agent_config_load(cfg, argc, argv, 2, NULL, NULL, err, errsz);
}

static void test_defaults(void **state)
{
	char *argv[] = { "edgesync-agent", "run" };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 2, argv, err, sizeof(err)), ES_OK);
	assert_string_equal(cfg.controller_url, "");
	assert_string_equal(cfg.state_dir, "/var/lib/edgesync");
	assert_string_equal(cfg.http_listen, "127.0.0.1:9477");
	assert_int_equal(cfg.interval, 10);
	assert_int_equal(cfg.max_events, 1000);
	assert_int_equal(cfg.log_level, ES_LOG_INFO);
	/* offline-only needs no certificates; node-name defaults to the host */
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)), ES_OK);
	assert_non_null(cfg.node_name);
	assert_true(strlen(cfg.node_name) > 0);
	es_agent_config_free(&cfg);
}

static void test_precedence(void **state)
{
	char *path = write_file("# agent\n"
				"node-name = from-file\n"
				"interval = 30\n"
				"labels = site=file\n"
				"state-dir = /tmp/file-dir\n");
	char cfgflag[128];
	char *argv[] = { "edgesync-agent", "run", cfgflag, "--interval", "5",
			 "--state-dir=/tmp/flag-dir" };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	snprintf(cfgflag, sizeof(cfgflag), "--config=%s", path);
	setenv("EDGESYNC_INTERVAL", "20", 1);
	setenv("EDGESYNC_LABELS", "site=env", 1);
	setenv("EDGESYNC_STATE_DIR", "/tmp/env-dir", 1);
	assert_int_equal(load(&cfg, 6, argv, err, sizeof(err)), ES_OK);
	assert_string_equal(cfg.node_name, "from-file"); /* file only */
	assert_string_equal(cfg.labels, "site=env");     /* env over file */
	assert_int_equal(cfg.interval, 5);               /* flag over env */
	assert_string_equal(cfg.state_dir, "/tmp/flag-dir");
	es_agent_config_free(&cfg);

	/* the file named by EDGESYNC_CONFIG is read too */
	clear_env();
	setenv(ES_AGENT_CONFIG_ENV, path, 1);
	assert_int_equal(load(&cfg, 2, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(cfg.interval, 30);
	assert_string_equal(cfg.labels, "site=file");
	es_agent_config_free(&cfg);
	unlink(path);
	clear_env();
}

static void test_bad_interval_named(void **state)
{
	char *argv[] = { "edgesync-agent", "run", "--interval", "0" };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 4, argv, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "interval"));
	es_agent_config_free(&cfg);
}

static void test_ws_refused(void **state)
{
	char *argv[] = { "edgesync-agent", "run", "--controller-url",
			 "ws://localhost:7443", "--cert", "c", "--key", "k",
			 "--ca", "a", "--node-name", "n1" };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 12, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "controller-url"));
	assert_non_null(strstr(err, "wss://"));
	es_agent_config_free(&cfg);

	argv[3] = "https://localhost:7443";
	assert_int_equal(load(&cfg, 12, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "controller-url"));
	es_agent_config_free(&cfg);

	argv[3] = "wss://localhost:7443";
	assert_int_equal(load(&cfg, 12, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)), ES_OK);
	es_agent_config_free(&cfg);
}

static void test_missing_cert_named(void **state)
{
	char *argv[] = { "edgesync-agent", "run", "--controller-url",
			 "wss://localhost:7443", "--key", "k", "--ca", "a",
			 "--cert", "c", "--node-name", "n1" };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 8, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "cert"));
	es_agent_config_free(&cfg);

	/* with cert given, the missing one named is key */
	argv[4] = "--cert";
	argv[5] = "c";
	assert_int_equal(load(&cfg, 8, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "key"));
	es_agent_config_free(&cfg);
}

static void test_bad_label_named(void **state)
{
	char *argv[] = { "edgesync-agent", "run", "--labels",
			 "site=lab,bad label=x", "--node-name", "n1" };
	es_agent_config cfg;
	cJSON *labels = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 6, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "labels"));
	assert_non_null(strstr(err, "bad label"));
	es_agent_config_free(&cfg);

	assert_int_equal(es_agent_labels_parse("novalue", &labels, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "novalue"));
	assert_int_equal(es_agent_labels_parse("a=-x", &labels, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "-x"));

	assert_int_equal(es_agent_labels_parse(" site = lab , edgesync.io/tier=edge,e=",
					       &labels, err, sizeof(err)), ES_OK);
	assert_string_equal(cJSON_GetObjectItem(labels, "site")->valuestring, "lab");
	assert_string_equal(cJSON_GetObjectItem(labels, "edgesync.io/tier")->valuestring,
			    "edge");
	assert_string_equal(cJSON_GetObjectItem(labels, "e")->valuestring, "");
	cJSON_Delete(labels);
}

static void test_url_parse(void **state)
{
	es_agent_url u;
	char err[256];

	(void)state;
	assert_int_equal(es_agent_url_parse("wss://localhost:7443", &u, err, sizeof(err)),
			 ES_OK);
	assert_string_equal(u.host, "localhost");
	assert_int_equal(u.port, 7443);
	assert_string_equal(u.path, "/v1/sync");
	assert_int_equal(es_agent_url_parse("wss://ctl.example/x/v1/sync", &u, err,
					    sizeof(err)), ES_OK);
	assert_int_equal(u.port, 443);
	assert_string_equal(u.path, "/x/v1/sync");
	assert_int_equal(es_agent_url_parse("wss://h:99999", &u, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "controller-url"));
}

/* controller-url names several controllers: comma-separated, or the flag
 * repeated; each URL is checked and a bad one is named. */
static void test_url_list(void **state)
{
	char *argv[] = { "edgesync-agent", "run", "--controller-url",
			 "wss://a:7443", "--controller-url", "wss://b:7443,wss://[::1]:7443",
			 "--cert", "c", "--key", "k", "--ca", "a", "--node-name", "n1" };
	es_agent_url urls[ES_URLLIST_MAX];
	es_agent_config cfg;
	es_urllist l;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 14, argv, err, sizeof(err)), ES_OK);
	assert_string_equal(cfg.controller_url, "wss://a:7443,wss://b:7443,wss://[::1]:7443");
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_urls_parse(cfg.controller_url, &l, urls, err,
					     sizeof(err)), ES_OK);
	assert_int_equal(l.n, 3);
	assert_string_equal(urls[1].host, "b");
	assert_string_equal(urls[2].host, "::1");
	assert_string_equal(urls[2].path, "/v1/sync");
	es_urllist_free(&l);
	es_agent_config_free(&cfg);

	/* one plaintext URL in the list is refused, and named */
	argv[5] = "wss://b:7443,ws://c:7443";
	assert_int_equal(load(&cfg, 14, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "plaintext \"ws://\""));
	es_agent_config_free(&cfg);
	argv[5] = "wss://b:7443,";
	assert_int_equal(load(&cfg, 14, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(es_agent_config_validate(&cfg, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "controller-url"));
	assert_non_null(strstr(err, "empty entry"));
	es_agent_config_free(&cfg);
}

/* The enum settings are stored as their enum and refused at load. */
static void test_enum_settings(void **state)
{
	char *argv[] = { "edgesync-agent", "run", "--collector-backend", "procfs",
			 "--egress-backend=nftables", "--log-level", "DEBUG" };
	char *bad[] = { "edgesync-agent", "run", "--egress-backend", "bpf" };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(load(&cfg, 7, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(cfg.collector_backend, ES_AGENT_KC_PROCFS);
	assert_int_equal(cfg.egress_backend, ES_EGRESS_BACKEND_NFTABLES);
	assert_int_equal(cfg.log_level, ES_LOG_DEBUG);
	es_agent_config_free(&cfg);
	assert_int_equal(load(&cfg, 2, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(cfg.collector_backend, ES_AGENT_KC_AUTO);
	assert_int_equal(cfg.egress_backend, ES_EGRESS_BACKEND_AUTO);
	es_agent_config_free(&cfg);
	assert_int_equal(load(&cfg, 4, bad, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--egress-backend: \"bpf\": expected auto, ebpf or nftables");
	es_agent_config_free(&cfg);
}

/* controller-order: node by default, listed from the file or a flag, any
 * other value refused naming it and the two allowed. */
static void test_controller_order(void **state)
{
	char path[64], bad_path[64]; /* write_file's buffer is static */
	char cfgflag[128], badflag[128];
	char *argv[] = { "edgesync-agent", "run", cfgflag, "--controller-order", "node" };
	char *bad[] = { "edgesync-agent", "run", "--controller-order=Listed-ish" };
	char *badfile[] = { "edgesync-agent", "run", badflag };
	es_agent_config cfg;
	char err[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s", write_file("controller-order = listed\n"));
	snprintf(bad_path, sizeof(bad_path), "%s",
		 write_file("controller-order = random\n"));
	assert_int_equal(load(&cfg, 2, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(cfg.controller_order, ES_AGENT_ORDER_NODE);
	es_agent_config_free(&cfg);
	snprintf(cfgflag, sizeof(cfgflag), "--config=%s", path);
	assert_int_equal(load(&cfg, 3, argv, err, sizeof(err)), ES_OK);
	assert_int_equal(cfg.controller_order, ES_AGENT_ORDER_LISTED);
	es_agent_config_free(&cfg);
	assert_int_equal(load(&cfg, 5, argv, err, sizeof(err)), ES_OK); /* flag wins */
	assert_int_equal(cfg.controller_order, ES_AGENT_ORDER_NODE);
	es_agent_config_free(&cfg);
	assert_int_equal(load(&cfg, 3, bad, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err,
			    "--controller-order: \"Listed-ish\": expected node or listed");
	es_agent_config_free(&cfg);
	snprintf(badflag, sizeof(badflag), "--config=%s", bad_path);
	assert_int_equal(load(&cfg, 3, badfile, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "controller-order"));
	assert_non_null(strstr(err, "\"random\": expected node or listed"));
	es_agent_config_free(&cfg);
	unlink(path);
	unlink(bad_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, setup),
		cmocka_unit_test_setup(test_precedence, setup),
		cmocka_unit_test_setup(test_bad_interval_named, setup),
		cmocka_unit_test_setup(test_ws_refused, setup),
		cmocka_unit_test_setup(test_missing_cert_named, setup),
		cmocka_unit_test_setup(test_bad_label_named, setup),
		cmocka_unit_test_setup(test_url_parse, setup),
		cmocka_unit_test_setup(test_url_list, setup),
		cmocka_unit_test_setup(test_enum_settings, setup),
		cmocka_unit_test_setup(test_controller_order, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
