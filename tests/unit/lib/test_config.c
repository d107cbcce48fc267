/* Unit tests of lib/es_config.c: defaults, file, environment, flags. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "es_config.h"

typedef struct test_cfg {
	char *controller_url;
	char *node_name;
	char *label_text;
	int64_t interval;
	int verbose;
} test_cfg;

static const es_setting table[] = {
	{"controller-url", "EDGESYNC_CONTROLLER_URL", "controller-url", ES_SET_STRING,
	 "wss://127.0.0.1:7443", 0, 0, offsetof(test_cfg, controller_url), "controller URL", NULL},
	{"node-name", "EDGESYNC_NODE_NAME", "node-name", ES_SET_STRING, NULL, 0, 0,
	 offsetof(test_cfg, node_name), "node name", NULL},
	{"label-text", NULL, NULL, ES_SET_STRING, NULL, 0, 0,
	 offsetof(test_cfg, label_text), "file only", NULL},
	{"interval", "EDGESYNC_INTERVAL", "interval", ES_SET_INT, "10", 1, 3600,
	 offsetof(test_cfg, interval), "seconds between rounds", NULL},
	{"verbose", "EDGESYNC_VERBOSE", "verbose", ES_SET_BOOL, "false", 0, 0,
	 offsetof(test_cfg, verbose), "more output", NULL},
};
#define N (sizeof(table) / sizeof(table[0]))

static void clear_env(void)
{
	unsetenv("EDGESYNC_CONTROLLER_URL");
	unsetenv("EDGESYNC_NODE_NAME");
	unsetenv("EDGESYNC_INTERVAL");
	unsetenv("EDGESYNC_VERBOSE");
	unsetenv("EDGESYNC_CONFIG");
}

static int setup(void **state)
{
	test_cfg *c = calloc(1, sizeof(*c));
	char err[256];

	clear_env();
	if (c == NULL || es_config_defaults(table, N, c, err, sizeof(err)) != ES_OK)
		return -1;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	es_config_free(table, N, *state);
	free(*state);
	clear_env();
	return 0;
}

static void test_defaults(void **state)
{
	test_cfg *c = *state;

	assert_string_equal(c->controller_url, "wss://127.0.0.1:7443");
	assert_null(c->node_name);
	assert_int_equal(c->interval, 10);
	assert_int_equal(c->verbose, 0);
}

static void test_file(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/good.conf",
					     err, sizeof(err)), ES_OK);
	assert_string_equal(c->controller_url, "wss://ctl.example:7443");
	assert_string_equal(c->node_name, "edge-1");
	assert_string_equal(c->label_text, "  spaced value with # hash  ");
	assert_int_equal(c->interval, 30);
	assert_int_equal(c->verbose, 1);
}

static void test_file_errors(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";

	assert_int_equal(es_config_load_file(table, N, c,
					     ES_FIXTURES "/config/unknown-key.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "unknown-key.conf:4:"));
	assert_non_null(strstr(err, "\"colour\""));

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/bad-int.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "bad-int.conf:1: interval: expected an integer in 1..3600"));
	assert_int_equal(c->interval, 10);

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/no-equals.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "no-equals.conf:2:"));

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/bad-quote.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "bad-quote.conf:1: node-name"));

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/missing.conf",
					     err, sizeof(err)), ES_ERR_IO);
	assert_non_null(strstr(err, "missing.conf"));
}

/* A key given twice in one file is refused at its second line, naming
 * both; the first value is kept. */
static void test_file_duplicate_key(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";

	assert_int_equal(es_config_load_file(table, N, c,
					     ES_FIXTURES "/config/duplicate-key.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "duplicate-key.conf:4: interval: set twice "
			       "(first on line 1)"));
	assert_int_equal(c->interval, 30);
}

/* Bytes that would garble a terminal (control characters, a byte order
 * mark, bytes that are not UTF-8) are shown as \xNN in messages. */
static void test_file_errors_escaped(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";
	char *argv[] = {"prog", "--interval", "1\t2", "--node-name", "x"};

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/bom.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "bom.conf:1: unknown key \"\\xef\\xbb\\xbfinterval\""));
	assert_int_equal(es_config_load_file(table, N, c,
					     ES_FIXTURES "/config/control-value.conf",
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "control-value.conf:1: interval: expected an integer in "
			       "1..3600, got \"3\\x01\\x1b[2J\""));
	assert_int_equal(es_config_load_args(table, N, c, 3, argv, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--interval: expected an integer in 1..3600, got \"1\\x092\"");
	/* UTF-8 text is shown as it is; a stray byte is escaped */
	assert_int_equal(es_config_set(table, N, c, "interval", "caf\xc3\xa9\xff", err,
				       sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "interval: expected an integer in 1..3600, got "
			    "\"caf\xc3\xa9\\xff\"");
	assert_int_equal(es_config_set(table, N, c, "no\x7fkey", "1", err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_string_equal(err, "unknown key \"no\\x7fkey\"");
}

static void test_env_and_flags(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";
	char *argv[] = {"prog", "run", "--interval", "60", "--node-name=from-flag",
			"--verbose", "extra", NULL};
	const char *pos[8];
	int npos = -1;

	assert_int_equal(es_config_load_file(table, N, c, ES_FIXTURES "/config/good.conf",
					     err, sizeof(err)), ES_OK);
	setenv("EDGESYNC_INTERVAL", "45", 1);
	setenv("EDGESYNC_NODE_NAME", "from-env", 1);
	setenv("EDGESYNC_VERBOSE", "off", 1);
	assert_int_equal(es_config_load_env(table, N, c, err, sizeof(err)), ES_OK);
	assert_int_equal(c->interval, 45);
	assert_string_equal(c->node_name, "from-env");
	assert_int_equal(c->verbose, 0);
	assert_string_equal(c->controller_url, "wss://ctl.example:7443");

	assert_int_equal(es_config_load_args(table, N, c, 7, argv, 2, pos, &npos, err,
					     sizeof(err)), ES_OK);
	assert_int_equal(c->interval, 60);
	assert_string_equal(c->node_name, "from-flag");
	assert_int_equal(c->verbose, 1);
	assert_int_equal(npos, 1);
	assert_string_equal(pos[0], "extra");

	/* Without a positional array, a stray argument is an error. */
	assert_int_equal(es_config_load_args(table, N, c, 7, argv, 2, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "extra"));

	/* Set empty: an integer or boolean variable is as if unset, a string
	 * takes "". */
	setenv("EDGESYNC_INTERVAL", "", 1);
	setenv("EDGESYNC_VERBOSE", "", 1);
	setenv("EDGESYNC_NODE_NAME", "", 1);
	assert_int_equal(es_config_load_env(table, N, c, err, sizeof(err)), ES_OK);
	assert_int_equal(c->interval, 60);
	assert_int_equal(c->verbose, 1);
	assert_string_equal(c->node_name, "");

	setenv("EDGESYNC_INTERVAL", "soon", 1);
	assert_int_equal(es_config_load_env(table, N, c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "EDGESYNC_INTERVAL: expected an integer in 1..3600"));
}

static void test_flag_errors(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";
	char *big[] = {"prog", "--interval=0"};
	char *big2[] = {"prog", "--interval", "3601"};
	char *unknown[] = {"prog", "--colour", "blue"};
	char *missing[] = {"prog", "--node-name"};
	char *single[] = {"prog", "-x"};
	char *badbool[] = {"prog", "--verbose=maybe"};

	assert_int_equal(es_config_load_args(table, N, c, 2, big, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--interval: expected an integer in 1..3600, got \"0\"");
	assert_int_equal(es_config_load_args(table, N, c, 3, big2, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "--interval: expected an integer in 1..3600"));
	assert_int_equal(c->interval, 10);
	assert_int_equal(es_config_load_args(table, N, c, 3, unknown, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "unknown flag --colour");
	assert_int_equal(es_config_load_args(table, N, c, 2, missing, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--node-name: missing value");
	assert_int_equal(es_config_load_args(table, N, c, 2, single, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "-x"));
	assert_int_equal(es_config_load_args(table, N, c, 2, badbool, 1, NULL, NULL, err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "--verbose:"));
}

static void test_bool_forms(void **state)
{
	test_cfg *c = *state;
	char err[256] = "";
	static const char *const yes[] = {"true", "yes", "1", "on", "TRUE", "Yes"};
	static const char *const no[] = {"false", "no", "0", "off", "OFF"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		c->verbose = 0;
		assert_int_equal(es_config_set(table, N, c, "verbose", yes[i], err,
					       sizeof(err)), ES_OK);
		assert_int_equal(c->verbose, 1);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		c->verbose = 1;
		assert_int_equal(es_config_set(table, N, c, "verbose", no[i], err,
					       sizeof(err)), ES_OK);
		assert_int_equal(c->verbose, 0);
	}
	assert_int_equal(es_config_set(table, N, c, "verbose", "2", err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "verbose:"));
	assert_int_equal(es_config_set(table, N, c, "nope", "1", err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_int_equal(es_config_set(table, N, c, "interval", " 5", err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_int_equal(es_config_set(table, N, c, "interval", "5x", err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_int_equal(es_config_set(table, N, c, "interval", "", err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_int_equal(es_config_set(table, N, c, "interval", "3600", err, sizeof(err)),
			 ES_OK);
	assert_int_equal(c->interval, 3600);
}

static void test_find_file(void **state)
{
	char *a1[] = {"prog", "run", "--config", "/etc/a.conf"};
	char *a2[] = {"prog", "run", "--config=/etc/b.conf", "--interval", "5"};
	char *a3[] = {"prog", "run"};
	char *a4[] = {"prog", "--config", "/x.conf", "--interval", "5"};
	test_cfg *c = *state;
	char err[256] = "";

	assert_string_equal(es_config_find_file(4, a1, 2, "EDGESYNC_CONFIG"), "/etc/a.conf");
	assert_string_equal(es_config_find_file(5, a2, 2, "EDGESYNC_CONFIG"), "/etc/b.conf");
	assert_null(es_config_find_file(2, a3, 2, "EDGESYNC_CONFIG"));
	setenv("EDGESYNC_CONFIG", "/env.conf", 1);
	assert_string_equal(es_config_find_file(2, a3, 2, "EDGESYNC_CONFIG"), "/env.conf");
	/* --config and its value are skipped by load_args. */
	assert_int_equal(es_config_load_args(table, N, c, 5, a4, 1, NULL, NULL, err,
					     sizeof(err)), ES_OK);
	assert_int_equal(c->interval, 5);
}

/* ES_SET_ENUM settings, in a table of their own. */
typedef struct enum_cfg {
	int backend; /* 0 auto, 1 procfs */
	int level;   /* 0 error .. 3 debug */
} enum_cfg;

static const char *const backends[] = {"auto", "procfs", NULL};
static const char *const levels[] = {"error", "warn", "info", "debug", NULL};

static const es_setting etable[] = {
	{"collector-backend", "EDGESYNC_TEST_BACKEND", "collector-backend", ES_SET_ENUM,
	 "auto", 0, 0, offsetof(enum_cfg, backend), "kernel collectors", backends},
	{"log-level", "EDGESYNC_TEST_LEVEL", "log-level", ES_SET_ENUM, "info", 0, 0,
	 offsetof(enum_cfg, level), "most verbose level logged", levels},
};
#define EN (sizeof(etable) / sizeof(etable[0]))

static void test_enum_values(void **state)
{
	enum_cfg c = {-1, -1};
	char err[256] = "";

	(void)state;
	assert_int_equal(es_config_defaults(etable, EN, &c, err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 0);
	assert_int_equal(c.level, 2);
	assert_int_equal(es_config_set(etable, EN, &c, "collector-backend", "procfs",
				       err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 1);
	assert_int_equal(es_config_set(etable, EN, &c, "log-level", "debug", err,
				       sizeof(err)), ES_OK);
	assert_int_equal(c.level, 3);
	/* every enumeration matches ignoring ASCII case, as booleans do */
	assert_int_equal(es_config_set(etable, EN, &c, "log-level", "WARN", err,
				       sizeof(err)), ES_OK);
	assert_int_equal(c.level, 1);
	assert_int_equal(es_config_set(etable, EN, &c, "collector-backend", "auto",
				       err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 0);
	assert_int_equal(es_config_set(etable, EN, &c, "collector-backend", "PROCFS",
				       err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 1);
	assert_int_equal(es_config_set(etable, EN, &c, "collector-backend", "Auto",
				       err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 0);
	/* a value that is not a name is refused, listing the names */
	assert_int_equal(es_config_set(etable, EN, &c, "collector-backend", "procfs2",
				       err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "collector-backend: \"procfs2\": expected auto or procfs");
	assert_int_equal(c.backend, 0);
	assert_int_equal(es_config_set(etable, EN, &c, "log-level", "", err,
				       sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "log-level: \"\": expected error, warn, info or debug");
	assert_int_equal(c.level, 1);
}

static void test_enum_sources(void **state)
{
	char *argv[] = {"prog", "run", "--log-level=loud"};
	char *argv2[] = {"prog", "run", "--collector-backend", "ebpf"};
	char path[64] = "/tmp/es-config-enum-XXXXXX";
	enum_cfg c = {0, 0};
	char err[256] = "";
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(es_config_load_args(etable, EN, &c, 3, argv, 2, NULL, NULL,
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--log-level: \"loud\": expected error, warn, info or debug");
	assert_int_equal(es_config_load_args(etable, EN, &c, 4, argv2, 2, NULL, NULL,
					     err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--collector-backend: \"ebpf\": expected auto or procfs");
	setenv("EDGESYNC_TEST_BACKEND", "nope", 1);
	assert_int_equal(es_config_load_env(etable, EN, &c, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "EDGESYNC_TEST_BACKEND: \"nope\": expected auto or procfs");
	setenv("EDGESYNC_TEST_BACKEND", "procfs", 1);
	assert_int_equal(es_config_load_env(etable, EN, &c, err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 1);
	setenv("EDGESYNC_TEST_BACKEND", "", 1); /* empty: as if unset */
	assert_int_equal(es_config_load_env(etable, EN, &c, err, sizeof(err)), ES_OK);
	assert_int_equal(c.backend, 1);
	unsetenv("EDGESYNC_TEST_BACKEND");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("log-level = \"debug\"\ncollector-backend = proc\n", f);
	fclose(f);
	assert_int_equal(es_config_load_file(etable, EN, &c, path, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_int_equal(c.level, 3);
	assert_non_null(strstr(err, ":2: collector-backend: \"proc\": expected auto or procfs"));
	unlink(path);
}

static void test_enum_help(void **state)
{
	char buf[1024] = "";
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	(void)state;
	assert_non_null(f);
	es_config_print_help(etable, EN, f);
	fclose(f);
	assert_non_null(strstr(buf, "--collector-backend VALUE    kernel collectors "
			       "(auto|procfs) [default: auto] [env: EDGESYNC_TEST_BACKEND]\n"));
	assert_non_null(strstr(buf, "--log-level VALUE            most verbose level logged "
			       "(error|warn|info|debug) [default: info]"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_duplicate_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_errors_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_and_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flag_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bool_forms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_file, setup, teardown),
		cmocka_unit_test(test_enum_values),
		cmocka_unit_test(test_enum_sources),
		cmocka_unit_test(test_enum_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
