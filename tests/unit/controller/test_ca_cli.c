/*
 * test_ca_cli.c - `edgesync-controller ca hash FILE` (controller/ca/ca_cli.c):
 * bad input is exit status 2 with one line that names the file and what
 * is wrong, the system's reason for a file that cannot be read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ca/ca.h"
#include "ca/ca_cli.h"
#include "es_pki.h"
#include "testutil.h"

static char dir[256];

/* Runs `edgesync-controller ca hash file`; *errout gets its stderr (the
 * caller frees). Returns the exit status. */
static int hash(const char *file, char **errout)
{
	char *argv[] = { "edgesync-controller", "ca", "hash", (char *)file, NULL };

	return es_test_run_stderr(dir, es_ca_cli_main, 4, argv, errout);
}

static void expect(const char *file, int want_rc, const char *want_msg)
{
	char *msg = NULL;
	int rc = hash(file, &msg);

	if (rc != want_rc || !strstr(msg, want_msg))
		fail_msg("ca hash %s: exit %d (want %d), stderr: %s(want \"%s\")", file, rc,
			 want_rc, msg, want_msg);
	free(msg);
}

static void missing_file_names_file_and_reason(void **state)
{
	char path[300], want[400];

	(void)state;
	snprintf(path, sizeof(path), "%s/nonexist", dir);
	snprintf(want, sizeof(want), "cannot read %s: No such file or directory", path);
	expect(path, 2, want);
}

static void directory_is_refused(void **state)
{
	char want[400];

	(void)state;
	snprintf(want, sizeof(want), "cannot read %s: Is a directory", dir);
	expect(dir, 2, want);
}

static void not_pem_and_no_ca(void **state)
{
	char junk[300], crt[300], key[300], err[256], want[400];
	FILE *f;

	(void)state;
	snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
	f = fopen(junk, "w");
	assert_non_null(f);
	fputs("not a certificate\n", f);
	fclose(f);
	snprintf(want, sizeof(want), "%s: not a file of PEM certificates", junk);
	expect(junk, 2, want);

	/* A CA made by ca init hashes; its key file holds no certificate. */
	snprintf(crt, sizeof(crt), "%s/ca.crt", dir);
	snprintf(key, sizeof(key), "%s/ca.key", dir);
	assert_int_equal(es_ca_create(crt, key, "edgesync.local", NULL, err, sizeof(err)),
			 ES_OK);
	expect(crt, 0, "");
	snprintf(want, sizeof(want), "%s: not a file of PEM certificates", key);
	expect(key, 2, want);

	/* A leaf certificate is not a CA. */
	{
		es_pki_req req = { .common_name = "leaf", .client_auth = 1 };
		char *c = NULL, *k = NULL, leaf[300];

		assert_int_equal(es_pki_issue(&req, NULL, NULL, &c, &k, err, sizeof(err)), ES_OK);
		snprintf(leaf, sizeof(leaf), "%s/leaf.crt", dir);
		f = fopen(leaf, "w");
		assert_non_null(f);
		fputs(c, f);
		fclose(f);
		free(c);
		free(k);
		snprintf(want, sizeof(want), "%s holds no CA certificate", leaf);
		expect(leaf, 2, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(missing_file_names_file_and_reason),
		cmocka_unit_test(directory_is_refused),
		cmocka_unit_test(not_pem_and_no_ca),
	};
	int rc;

	es_test_tmpdir(dir, sizeof(dir), "ca-cli", NULL, 0, NULL);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	es_test_rmtree(dir);
	return rc;
}
