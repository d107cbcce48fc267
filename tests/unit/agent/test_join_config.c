/*
 * test_join_config.c - the join settings of edgesync-agent
 * (agent/enroll/join.c, es_join_config_finish): the token's and the CA
 * hash's shapes, controller-url required, join-url and the credential
 * paths derived, and errors that never quote the token's secret; the
 * token from token-file; what CertificateValid says about a certificate's
 * dates (agent/enroll/renew.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include "enroll/join.h"
#include "enroll/renew.h"

#define HASH "sha256:" "ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB"

static void fill(es_agent_config *c, const char *url, const char *tok,
		 const char *hash)
{
	memset(c, 0, sizeof(*c));
	c->controller_url = url ? strdup(url) : NULL;
	c->token = tok ? strdup(tok) : NULL;
	c->ca_hash = hash ? strdup(hash) : NULL;
	c->state_dir = strdup("/var/lib/es");
}

static void derived(void **state)
{
	es_agent_config c;
	char err[256];

	(void)state;
	fill(&c, "wss://ctl.example:7443", "abcdef.0123456789abcdef", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_url, "https://ctl.example:7445");
	assert_string_equal(c.cert, "/var/lib/es/pki/node.crt");
	assert_string_equal(c.key, "/var/lib/es/pki/node.key");
	assert_string_equal(c.ca, "/var/lib/es/pki/ca.crt");
	/* Lower-cased in place. */
	assert_string_equal(c.ca_hash, "sha256:" "abababababababababababababababababababababababababababababababab");
	es_agent_config_free(&c);

	fill(&c, "wss://[::1]:7443", "abcdef.0123456789abcdef", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_url, "https://[::1]:7445");
	es_agent_config_free(&c);

	/* The join listener is beside the agents' port, wherever that is. */
	fill(&c, "wss://127.0.0.1:27443", "abcdef.0123456789abcdef", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_url, "https://127.0.0.1:27445");
	es_agent_config_free(&c);

	/* A list of controllers: the first is joined. */
	fill(&c, "wss://a.example:9443, wss://b.example:7443", "abcdef.0123456789abcdef", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_url, "https://a.example:9445");
	es_agent_config_free(&c);

	/* No port beside 65535. */
	fill(&c, "wss://a.example:65535", "abcdef.0123456789abcdef", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "join-url: required"));
	es_agent_config_free(&c);
}

/* A node that joined, run without its token: its files are the defaults. */
static void joined_without_token(void **state)
{
	char dir[] = "/tmp/es-join-XXXXXX", pki[64], crt[96];
	es_agent_config c;
	char err[256];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fill(&c, "wss://ctl.example:7443", NULL, NULL);
	free(c.state_dir);
	c.state_dir = strdup(dir);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_true(c.cert == NULL || c.cert[0] == '\0'); /* not joined: no default */
	snprintf(pki, sizeof(pki), "%s/pki", dir);
	assert_int_equal(mkdir(pki, 0700), 0);
	snprintf(crt, sizeof(crt), "%s/node.crt", pki);
	f = fopen(crt, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.cert, crt);
	assert_non_null(strstr(c.key, "/pki/node.key"));
	assert_non_null(strstr(c.ca, "/pki/ca.crt"));
	es_agent_config_free(&c);
	unlink(crt);
	rmdir(pki);
	rmdir(dir);
}

static void refused(void **state)
{
	es_agent_config c;
	char err[256];

	(void)state;
	fill(&c, NULL, "abcdef.0123456789abcdef", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "controller-url"));
	es_agent_config_free(&c);

	fill(&c, "wss://c:1", "abcdef.0123456789abcdef", NULL);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "ca-hash"));
	es_agent_config_free(&c);

	fill(&c, "wss://c:1", "abcdef.0123456789ABCDEF", HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "token"));
	assert_null(strstr(err, "0123456789"));
	es_agent_config_free(&c);

	fill(&c, "wss://c:1", NULL, HASH);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "only meaningful with token"));
	es_agent_config_free(&c);

	/* No token, no join settings: nothing changes. */
	fill(&c, "wss://c:1", NULL, NULL);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_null(c.cert);
	assert_int_equal(es_join_needed(&c), 0);
	es_agent_config_free(&c);
}

/* token-file: its first line is the token; refused with token, missing,
 * empty; without a token join-url is derived for renewal. */
static void token_file(void **state)
{
	char dir[] = "/tmp/test-join-config-XXXXXX", path[96], err[256];
	es_agent_config c;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("  abcdef.0123456789abcdef \nsecond line\n", f);
	fclose(f);
	fill(&c, "wss://ctl.example:7443", NULL, HASH);
	c.token_file = strdup(path);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.token, "abcdef.0123456789abcdef");
	assert_string_equal(c.join_url, "https://ctl.example:7445");
	es_agent_config_free(&c);

	fill(&c, "wss://ctl.example:7443", "abcdef.0123456789abcdef", HASH);
	c.token_file = strdup(path);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "token and token-file"));
	es_agent_config_free(&c);

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("\n\n", f);
	fclose(f);
	fill(&c, "wss://ctl.example:7443", NULL, HASH);
	c.token_file = strdup(path);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "empty"));
	es_agent_config_free(&c);
	unlink(path);

	fill(&c, "wss://ctl.example:7443", NULL, HASH);
	c.token_file = strdup(path);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, path));
	es_agent_config_free(&c);
	rmdir(dir);

	/* No token: join-url derived for renewal, or checked when given. */
	fill(&c, "wss://ctl.example:7443", NULL, NULL);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_string_equal(c.join_url, "https://ctl.example:7445");
	es_agent_config_free(&c);
	fill(&c, "wss://ctl.example:65535", NULL, NULL);
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_OK);
	assert_true(!c.join_url || !*c.join_url);
	es_agent_config_free(&c);
	fill(&c, "wss://ctl.example:7443", NULL, NULL);
	c.join_url = strdup("ftp://x");
	assert_int_equal(es_join_config_finish(&c, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "join-url"));
	es_agent_config_free(&c);
}

/* CertificateValid's reading of the dates: inclusive bounds, RFC 3339. */
static void cert_status(void **state)
{
	es_renew_cert c = { .not_before = 1764000000, .not_after = 1764003600, .serial = "4a01" };
	const char *reason;
	char msg[200];

	(void)state;
	assert_int_equal(es_renew_cert_status(&c, 1764000000, &reason, msg, sizeof(msg)),
			 ES_RENEW_VALID);
	assert_string_equal(reason, "Valid");
	assert_string_equal(msg, "valid until 2025-11-24T17:00:00Z (serial 4a01)");
	assert_int_equal(es_renew_cert_status(&c, 1764003600, &reason, msg, sizeof(msg)),
			 ES_RENEW_VALID);
	assert_int_equal(es_renew_cert_status(&c, 1764003601, &reason, msg, sizeof(msg)),
			 ES_RENEW_EXPIRED);
	assert_string_equal(reason, "Expired");
	assert_string_equal(msg, "expired at 2025-11-24T17:00:00Z (serial 4a01)");
	assert_int_equal(es_renew_cert_status(&c, 1763999999, &reason, msg, sizeof(msg)),
			 ES_RENEW_NOT_YET_VALID);
	assert_string_equal(reason, "NotYetValid");
	assert_non_null(strstr(msg, "not valid before 2025-11-24T16:00:00Z"));
	assert_non_null(strstr(msg, "clock"));
}

/* es_renew_cert_read: missing, not PEM. */
static void cert_read(void **state)
{
	char dir[] = "/tmp/test-join-cert-XXXXXX", path[96], err[256];
	es_renew_cert c;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/node.crt", dir);
	assert_int_equal(es_renew_cert_read(path, &c, err, sizeof(err)), ES_ERR_NOTFOUND);
	assert_non_null(strstr(err, path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	assert_int_equal(es_renew_cert_read(path, &c, err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "not a PEM certificate"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(derived),
		cmocka_unit_test(joined_without_token),
		cmocka_unit_test(refused),
		cmocka_unit_test(token_file),
		cmocka_unit_test(cert_status),
		cmocka_unit_test(cert_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
