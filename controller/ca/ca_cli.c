/*
 * ca_cli.c - `edgesync-controller ca init | hash` (ca_cli.h).
 */
#define _GNU_SOURCE /* asprintf */
#include "ca/ca_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>

#include "ca/ca.h"
#include "es_config.h"
#include "es_fs.h"
#include "es_obj.h"
#include "es_pki.h"

#define PROG "edgesync-controller"

typedef struct ca_cfg {
	char *state_dir, *ca_cert, *ca_key, *trust_domain;
} ca_cfg;

static const es_setting ca_table[] = {
	{ "state-dir", "EDGESYNC_STATE_DIR", "state-dir", ES_SET_STRING,
	  "/var/lib/edgesync-controller", 0, 0, offsetof(ca_cfg, state_dir),
	  "state directory; the CA goes to <state-dir>/ca/", NULL },
	{ "ca-cert", "EDGESYNC_CA_CERT", "ca-cert", ES_SET_STRING, NULL, 0, 0,
	  offsetof(ca_cfg, ca_cert), "CA certificate to write (default <state-dir>/ca/ca.crt)",
	  NULL },
	{ "ca-key", "EDGESYNC_CA_KEY", "ca-key", ES_SET_STRING, NULL, 0, 0,
	  offsetof(ca_cfg, ca_key), "CA key to write, mode 0600 (default <state-dir>/ca/ca.key)",
	  NULL },
	{ "trust-domain", "EDGESYNC_TRUST_DOMAIN", "trust-domain", ES_SET_STRING,
	  ES_PKI_DEFAULT_TRUST_DOMAIN, 0, 0, offsetof(ca_cfg, trust_domain),
	  "SPIFFE trust domain, named in the CA's subject", NULL },
};
#define CA_N (sizeof(ca_table) / sizeof(ca_table[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " ca init [flags]\n"
		"       " PROG " ca hash FILE\n"
		"\n"
		"ca init makes a signing CA for nodes that join with a bootstrap token\n"
		"and prints its hash for `edgesync-agent join --ca-hash`; it never\n"
		"overwrites a CA. ca hash prints the hash of each CA in a PEM file\n"
		"(exit status 2 when FILE cannot be read, is not PEM or holds no CA).\n");
	es_config_print_help(ca_table, CA_N, f);
}

/* 0 when path can be opened for reading and is not a directory; else -1
 * with errno set (EISDIR for a directory), so that the message can give
 * the system's reason, which mbedTLS's parser does not. */
static int readable(const char *path)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
		e = S_ISDIR(sb.st_mode) ? EISDIR : errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

/* ca hash FILE: a file that cannot be read, is not PEM or holds no CA is
 * bad input (exit 2), named with the reason. */
static int cmd_hash(int argc, char **argv)
{
	mbedtls_x509_crt crt, *c;
	char pin[ES_ENROLL_PIN_SZ];
	int rc = 2, n = 0;

	if (argc != 4) {
		fprintf(stderr, PROG ": usage: ca hash FILE\n");
		return 2;
	}
	mbedtls_x509_crt_init(&crt);
	if (readable(argv[3]) != 0) {
		fprintf(stderr, PROG ": ca hash: cannot read %s: %s\n", argv[3],
			strerror(errno));
		goto cleanup;
	}
	if (mbedtls_x509_crt_parse_file(&crt, argv[3]) != 0) {
		fprintf(stderr, PROG ": ca hash: %s: not a file of PEM certificates\n",
			argv[3]);
		goto cleanup;
	}
	for (c = &crt; c && c->raw.len; c = c->next) {
		if (!c->MBEDTLS_PRIVATE(ca_istrue))
			continue;
		if (es_enroll_cert_pin(c->raw.p, c->raw.len, pin) != ES_OK) {
			fprintf(stderr, PROG ": ca hash: %s: cannot hash a CA's public "
				"key\n", argv[3]);
			rc = 1;
			goto cleanup;
		}
		printf("%s\n", pin);
		n++;
	}
	if (n == 0) {
		fprintf(stderr, PROG ": ca hash: %s holds no CA certificate "
			"(basicConstraints cA=TRUE)\n", argv[3]);
		goto cleanup;
	}
	rc = 0;
cleanup:
	mbedtls_x509_crt_free(&crt);
	return rc;
}

static int cmd_init(int argc, char **argv)
{
	ca_cfg cfg = { 0 };
	char err[1024], dir[4200], pin[ES_ENROLL_PIN_SZ];
	int rc = 2;
	es_err e;

	if (es_config_defaults(ca_table, CA_N, &cfg, err, sizeof(err)) != ES_OK ||
	    es_config_load_env(ca_table, CA_N, &cfg, err, sizeof(err)) != ES_OK ||
	    es_config_load_args(ca_table, CA_N, &cfg, argc, argv, 3, NULL, NULL, err,
				sizeof(err)) != ES_OK)
		goto fail;
	if (!es_obj_name_valid(cfg.trust_domain)) {
		snprintf(err, sizeof(err), "trust-domain: \"%s\": expected a lower-case "
			 "DNS name", cfg.trust_domain);
		goto fail;
	}
	if (strlen(cfg.state_dir) > 4000) {
		snprintf(err, sizeof(err), "state-dir: path too long");
		goto fail;
	}
	snprintf(dir, sizeof(dir), "%s/ca", cfg.state_dir);
	if ((!cfg.ca_cert && asprintf(&cfg.ca_cert, "%s/ca.crt", dir) < 0) ||
	    (!cfg.ca_key && asprintf(&cfg.ca_key, "%s/ca.key", dir) < 0)) {
		snprintf(err, sizeof(err), "out of memory");
		rc = 1;
		goto fail;
	}
	if (strcmp(cfg.ca_cert, cfg.ca_key) == 0) {
		/* One file cannot hold both: the certificate would replace
		 * the key, which is then lost. */
		snprintf(err, sizeof(err), "ca-key: \"%s\" is also ca-cert: give the "
			 "key a file of its own", cfg.ca_key);
		rc = 2;
		goto fail;
	}
	rc = 1;
	if (es_fs_mkdir_p(dir, 0700, err, sizeof(err)) != ES_OK)
		goto fail;
	e = es_ca_create(cfg.ca_cert, cfg.ca_key, cfg.trust_domain, pin, err, sizeof(err));
	if (e != ES_OK) {
		rc = e == ES_ERR_EXISTS ? 2 : 1;
		goto fail;
	}
	printf("CA certificate: %s\nCA key:         %s (mode 0600)\nca-hash:        %s\n\n"
	       "Controller settings that use it (the agents' certificates it signs\n"
	       "must verify against client-ca, so name the same file there):\n"
	       "  ca-cert = %s\n  ca-key = %s\n  client-ca = %s\n",
	       cfg.ca_cert, cfg.ca_key, pin, cfg.ca_cert, cfg.ca_key, cfg.ca_cert);
	rc = 0;
	goto cleanup;
fail:
	fprintf(stderr, PROG ": %s\n", err);
cleanup:
	es_config_free(ca_table, CA_N, &cfg);
	return rc;
}

int es_ca_cli_main(int argc, char **argv)
{
	const char *sub = argc > 2 ? argv[2] : NULL;

	if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		usage(sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	if (!strcmp(sub, "init"))
		return cmd_init(argc, argv);
	if (!strcmp(sub, "hash"))
		return cmd_hash(argc, argv);
	fprintf(stderr, PROG ": unknown command \"ca %s\" (init, hash)\n", sub);
	return 2;
}
