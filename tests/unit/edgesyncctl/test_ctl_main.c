/* test_ctl_main.c - edgesyncctl/ctl.c: exit statuses and the messages that
 * name what was wrong (README: 0 ok, 1 runtime failure, 2 usage or
 * configuration error naming the bad flag, key or file). No server runs:
 * every case must be decided before a connection, except the last. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgesyncctl/ctl.h"
#include "edgesyncctl/ident.h"
#include "es_pki.h"
#include "testutil.h"

static char dir[] = "/tmp/test_ctl_main.XXXXXX";
static char ca[256], crt[256], key[256], key2[256], garbage[256], conf[256], bad[256];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	fclose(f);
}

static int setup(void **state)
{
	es_pki_req req = { .common_name = "t", .client_auth = 1 };
	char *c1 = NULL, *k1 = NULL, *c2 = NULL, *k2 = NULL, err[256];
	(void)state;

	if (!mkdtemp(dir))
		return -1;
	if (es_pki_issue(&req, NULL, NULL, &c1, &k1, err, sizeof(err)) != ES_OK ||
	    es_pki_issue(&req, NULL, NULL, &c2, &k2, err, sizeof(err)) != ES_OK)
		return -1;
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/admin.crt", dir);
	snprintf(key, sizeof(key), "%s/admin.key", dir);
	snprintf(key2, sizeof(key2), "%s/other.key", dir);
	snprintf(garbage, sizeof(garbage), "%s/garbage.pem", dir);
	snprintf(conf, sizeof(conf), "%s/empty.conf", dir);
	snprintf(bad, sizeof(bad), "%s/bad.yaml", dir);
	write_file(ca, c2);
	write_file(crt, c1);
	write_file(key, k1);
	write_file(key2, k2);
	write_file(garbage, "this is not PEM\n");
	write_file(conf, "# empty\n");
	write_file(bad, "kind: CollectorConfig\nmetadata:\n  name: x\n  labels: [a\n");
	free(c1);
	free(k1);
	free(c2);
	free(k2);
	unsetenv("EDGESYNC_SERVER");
	unsetenv("EDGESYNC_CERT");
	unsetenv("EDGESYNC_KEY");
	unsetenv("EDGESYNC_CA");
	unsetenv("EDGESYNCCTL_SERVER");
	unsetenv("EDGESYNCCTL_CERT");
	unsetenv("EDGESYNCCTL_KEY");
	unsetenv("EDGESYNCCTL_CA");
	return 0;
}

static int teardown(void **state)
{
	const char *files[] = { ca, crt, key, key2, garbage, conf, bad };
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(dir);
	return 0;
}

/* Runs edgesyncctl --config EMPTY ARGS... and returns its status; *errout
 * gets what it wrote to stderr (caller frees). */
static int run(char **errout, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "edgesyncctl";
	argv[argc++] = "--config";
	argv[argc++] = conf;
	va_start(ap, errout);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	return es_test_run_stderr(dir, es_ctl_main, argc, argv, errout);
}

static void expect(int got_rc, char *msg, int want_rc, const char *n1, const char *n2)
{
	if (got_rc != want_rc || !strstr(msg, n1) || (n2 && !strstr(msg, n2)))
		fail_msg("exit %d (want %d), stderr: %s(want it to name %s%s%s)", got_rc, want_rc,
			 msg, n1, n2 ? " and " : "", n2 ? n2 : "");
	free(msg);
}

#define SRV "--server", "https://127.0.0.1:1"

static void test_server_must_be_https(void **state)
{
	char *e;
	int rc;
	(void)state;
	rc = run(&e, "--server", "http://127.0.0.1:7444", "--ca", ca, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "server", "https://");
}

/* The API paths are appended to the server URL: a query or a fragment in
 * it is a configuration error naming the setting; a path prefix is kept,
 * its trailing '/' dropped (the error of a request names the URL tried). */
static void test_server_url_shape(void **state)
{
	char *e;
	int rc;
	(void)state;
	rc = run(&e, "--server", "https://h:1/x?y", "--ca", ca, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "server: \"https://h:1/x?y\"", "query");
	rc = run(&e, "--server", "https://h:1/x?", "--ca", ca, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "server: \"https://h:1/x?\"", "query");
	rc = run(&e, "--server", "https://h:1/x#f", "--ca", ca, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "server: \"https://h:1/x#f\"", "fragment");
	rc = run(&e, "--server", "https://127.0.0.1:1/edge/", "--ca", ca, "--cert", crt,
		 "--key", key, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_RUNTIME,
	       "error: https://127.0.0.1:1/edge/apis/edgesync.io/v1alpha1/collectorconfigs: ",
	       "cannot connect");
	rc = run(&e, "--server", "https://127.0.0.1:1", "--ca", ca, "--cert", crt,
		 "--key", key, "get", "hr", "x", NULL);
	expect(rc, e, ES_CTL_EXIT_RUNTIME,
	       "error: https://127.0.0.1:1/apis/edgesync.io/v1alpha1/healthrules/x: ", NULL);
}

static void test_bad_credential_files(void **state)
{
	char *e;
	int rc;
	(void)state;
	rc = run(&e, SRV, "--ca", ca, "--cert", garbage, "--key", key, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "cert", garbage);
	rc = run(&e, SRV, "--ca", ca, "--cert", crt, "--key", garbage, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "key", garbage);
	rc = run(&e, SRV, "--ca", garbage, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "ca", garbage);
	rc = run(&e, SRV, "--ca", "/nonexistent/ca.crt", "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "/nonexistent/ca.crt", "No such file");
	rc = run(&e, SRV, "--ca", ca, "--cert", crt, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "cert given without key", NULL);
}

static void test_cert_key_mismatch(void **state)
{
	char *e;
	int rc;
	(void)state;
	rc = run(&e, SRV, "--ca", ca, "--cert", crt, "--key", key2, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, crt, key2);
}

static void test_bad_manifests(void **state)
{
	char *e, where[300];
	int rc;
	(void)state;
	rc = run(&e, SRV, "--ca", ca, "apply", "-f", "/nonexistent/m.yaml", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "/nonexistent/m.yaml", NULL);
	snprintf(where, sizeof(where), "%s:5:1:", bad);
	rc = run(&e, SRV, "--ca", ca, "apply", "-f", bad, NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, where, NULL);
	rc = run(&e, SRV, "--ca", ca, "delete", "-f", bad, NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, where, NULL);
}

/* With a good configuration, an unreachable server is a runtime failure. */
static void test_unreachable_is_runtime(void **state)
{
	char *e;
	int rc;
	(void)state;
	rc = run(&e, SRV, "--ca", ca, "--cert", crt, "--key", key, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_RUNTIME, "cannot connect", NULL);
}

/* edgesyncctl's variables are EDGESYNCCTL_*: the agent's EDGESYNC_SERVER
 * and EDGESYNC_CERT, exported in the same shell, are not read. */
static void test_own_variables(void **state)
{
	char *e;
	int rc;
	(void)state;
	setenv("EDGESYNC_SERVER", "http://agent-var:1", 1);
	setenv("EDGESYNC_CERT", garbage, 1);
	rc = run(&e, SRV, "--ca", ca, "--cert", crt, "--key", key, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_RUNTIME, "cannot connect", NULL);
	rc = run(&e, "--ca", ca, "--cert", crt, "--key", key, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_RUNTIME, "https://127.0.0.1:7444", NULL);
	setenv("EDGESYNCCTL_SERVER", "http://ctl-var:1", 1);
	rc = run(&e, "--ca", ca, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "server", "https://");
	setenv("EDGESYNCCTL_CERT", garbage, 1);
	rc = run(&e, SRV, "--ca", ca, "--key", key, "get", "cc", NULL);
	expect(rc, e, ES_CTL_EXIT_USAGE, "cert", garbage);
	unsetenv("EDGESYNC_SERVER");
	unsetenv("EDGESYNC_CERT");
	unsetenv("EDGESYNCCTL_SERVER");
	unsetenv("EDGESYNCCTL_CERT");
}

/* What a refused operator is told about the certificate sent. */
static void test_ident_describe(void **state)
{
	es_pki_req req = { .common_name = "web-1", .client_auth = 1,
			   .uri_san = "spiffe://edgesync.local/node/web-1" };
	char *c = NULL, *k = NULL, err[256], buf[512], path[300];
	FILE *f;

	(void)state;
	assert_int_equal(es_pki_issue(&req, NULL, NULL, &c, &k, err, sizeof(err)), ES_OK);
	snprintf(path, sizeof(path), "%s/node.crt", dir);
	write_file(path, c);
	assert_int_equal(es_ctl_ident_describe(path, buf, sizeof(buf)), ES_OK);
	assert_string_equal(buf, "subject CN=web-1, SPIFFE ID spiffe://edgesync.local/node/web-1");
	assert_int_equal(es_ctl_ident_describe(crt, buf, sizeof(buf)), ES_OK);
	assert_string_equal(buf, "subject CN=t, no URI subjectAltName (no SPIFFE ID)");
	assert_int_equal(es_ctl_ident_describe(garbage, buf, sizeof(buf)), ES_ERR_PARSE);

	/* The hint names the file, its identity, the identity expected and
	 * the agent's variable that is set but not read. */
	setenv("EDGESYNC_CERT", path, 1);
	f = tmpfile();
	assert_non_null(f);
	es_ctl_ident_forbidden_hint(f, path);
	rewind(f);
	memset(buf, 0, sizeof(buf));
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
	fclose(f);
	assert_non_null(strstr(buf, path));
	assert_non_null(strstr(buf, "spiffe://edgesync.local/node/web-1"));
	assert_non_null(strstr(buf, "spiffe://<trust-domain>/admin/<name>"));
	unsetenv("EDGESYNC_CERT");
	unlink(path);
	free(c);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_must_be_https),
		cmocka_unit_test(test_server_url_shape),
		cmocka_unit_test(test_bad_credential_files),
		cmocka_unit_test(test_cert_key_mismatch),
		cmocka_unit_test(test_bad_manifests),
		cmocka_unit_test(test_unreachable_is_runtime),
		cmocka_unit_test(test_own_variables),
		cmocka_unit_test(test_ident_describe),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
