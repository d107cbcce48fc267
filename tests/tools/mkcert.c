/*
 * es-mkcert - issues test certificates (including hostile ones) with
 * es_pki_issue, for the integration tests.
 *
 * Exit status: 0 written, 1 runtime failure (unreadable CA, mbedTLS or I/O
 * error), 2 usage error naming the bad flag.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_pki.h"
#include "es_time.h"

#define MAX_SANS 32
#define CA_FILE_MAX (64 * 1024)

static const char usage_text[] =
	"usage: es-mkcert --out-cert FILE --out-key FILE --cn NAME [options]\n"
	"\n"
	"Makes a P-256 key and an X.509 certificate, signed by the given CA or\n"
	"self-signed when no CA is given.\n"
	"\n"
	"  --out-cert FILE       write the PEM certificate here (mode 0644)\n"
	"  --out-key FILE        write the PEM key here (mode 0600)\n"
	"  --cn NAME             subject common name (1..64 bytes)\n"
	"  --uri URI             a URI subjectAltName (e.g. a SPIFFE ID)\n"
	"  --dns NAME            a DNS subjectAltName (repeatable)\n"
	"  --ip ADDR             an IPv4/IPv6 subjectAltName (repeatable)\n"
	"  --ca                  make a CA certificate (keyCertSign, cRLSign)\n"
	"  --server              extendedKeyUsage serverAuth\n"
	"  --client              extendedKeyUsage clientAuth\n"
	"  --ca-cert FILE        issuing CA certificate (PEM); needs --ca-key\n"
	"  --ca-key FILE         issuing CA key (PEM); needs --ca-cert\n"
	"  --not-before TIME     RFC 3339 (default: now - 5 minutes)\n"
	"  --not-after TIME      RFC 3339 (default: not-before + 365 days)\n"
	"  -h, --help            this text\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "es-mkcert: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage_text);
	return 2;
}

/* Reads a whole PEM file; returns a malloc'd string or NULL with errno-ish
 * text in err. */
static char *read_pem(const char *path, char *err, size_t errsz)
{
	FILE *f = fopen(path, "re");
	char *b = NULL;
	size_t n;

	if (!f) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		return NULL;
	}
	b = calloc(1, CA_FILE_MAX + 1);
	if (!b) {
		snprintf(err, errsz, "%s: out of memory", path);
		goto out;
	}
	n = fread(b, 1, CA_FILE_MAX + 1, f);
	if (ferror(f) || n > CA_FILE_MAX) {
		snprintf(err, errsz, "%s: %s", path,
			 ferror(f) ? strerror(errno) : "larger than 64 KiB");
		free(b);
		b = NULL;
	}
out:
	fclose(f);
	return b;
}

enum {
	OPT_OUT_CERT = 256, OPT_OUT_KEY, OPT_CN, OPT_URI, OPT_DNS, OPT_IP, OPT_CA,
	OPT_SERVER, OPT_CLIENT, OPT_CA_CERT, OPT_CA_KEY, OPT_NOT_BEFORE, OPT_NOT_AFTER,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"out-cert", required_argument, NULL, OPT_OUT_CERT},
		{"out-key", required_argument, NULL, OPT_OUT_KEY},
		{"cn", required_argument, NULL, OPT_CN},
		{"uri", required_argument, NULL, OPT_URI},
		{"dns", required_argument, NULL, OPT_DNS},
		{"ip", required_argument, NULL, OPT_IP},
		{"ca", no_argument, NULL, OPT_CA},
		{"server", no_argument, NULL, OPT_SERVER},
		{"client", no_argument, NULL, OPT_CLIENT},
		{"ca-cert", required_argument, NULL, OPT_CA_CERT},
		{"ca-key", required_argument, NULL, OPT_CA_KEY},
		{"not-before", required_argument, NULL, OPT_NOT_BEFORE},
		{"not-after", required_argument, NULL, OPT_NOT_AFTER},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *dns[MAX_SANS + 1] = {0}, *ips[MAX_SANS + 1] = {0};
	const char *out_cert = NULL, *out_key = NULL, *ca_cert_path = NULL,
		   *ca_key_path = NULL;
	size_t ndns = 0, nip = 0;
	char *ca_cert = NULL, *ca_key = NULL, *cert = NULL, *key = NULL;
	char err[512];
	es_pki_req req;
	int c, status = 1;
	es_err rc;

	memset(&req, 0, sizeof(req));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_OUT_CERT: out_cert = optarg; break;
		case OPT_OUT_KEY: out_key = optarg; break;
		case OPT_CN: req.common_name = optarg; break;
		case OPT_URI:
			if (req.uri_san)
				return usage_error("--uri: given twice (one URI SAN at most)");
			req.uri_san = optarg;
			break;
		case OPT_DNS:
			if (ndns == MAX_SANS)
				return usage_error("--dns: more than 32");
			dns[ndns++] = optarg;
			break;
		case OPT_IP:
			if (nip == MAX_SANS)
				return usage_error("--ip: more than 32");
			ips[nip++] = optarg;
			break;
		case OPT_CA: req.is_ca = 1; break;
		case OPT_SERVER: req.server_auth = 1; break;
		case OPT_CLIENT: req.client_auth = 1; break;
		case OPT_CA_CERT: ca_cert_path = optarg; break;
		case OPT_CA_KEY: ca_key_path = optarg; break;
		case OPT_NOT_BEFORE:
			if (es_time_parse_rfc3339(optarg, &req.not_before) != 0)
				return usage_error("--not-before: \"%s\" is not an RFC 3339 time",
						   optarg);
			break;
		case OPT_NOT_AFTER:
			if (es_time_parse_rfc3339(optarg, &req.not_after) != 0)
				return usage_error("--not-after: \"%s\" is not an RFC 3339 time",
						   optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case ':':
			return usage_error("%s: missing value", argv[optind - 1]);
		default:
			return usage_error("%s: unknown flag", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument \"%s\"", argv[optind]);
	if (!out_cert)
		return usage_error("--out-cert is required");
	if (!out_key)
		return usage_error("--out-key is required");
	if (!req.common_name)
		return usage_error("--cn is required");
	if (!ca_cert_path != !ca_key_path)
		return usage_error("--ca-cert and --ca-key go together");
	if (req.not_before && req.not_after && req.not_after <= req.not_before)
		return usage_error("--not-after must be later than --not-before");
	req.dns_sans = ndns ? dns : NULL;
	req.ip_sans = nip ? ips : NULL;

	if (ca_cert_path) {
		ca_cert = read_pem(ca_cert_path, err, sizeof(err));
		ca_key = ca_cert ? read_pem(ca_key_path, err, sizeof(err)) : NULL;
		if (!ca_cert || !ca_key) {
			fprintf(stderr, "es-mkcert: %s\n", err);
			goto cleanup;
		}
	}
	rc = es_pki_issue(&req, ca_cert, ca_key, &cert, &key, err, sizeof(err));
	if (rc == ES_ERR_INVAL) {
		status = usage_error("%s", err);
		goto cleanup;
	}
	if (rc != ES_OK) {
		fprintf(stderr, "es-mkcert: %s\n", err);
		goto cleanup;
	}
	if (es_pki_write_file_atomic(out_key, key, strlen(key), 0600, err,
				     sizeof(err)) != ES_OK ||
	    es_pki_write_file_atomic(out_cert, cert, strlen(cert), 0644, err,
				     sizeof(err)) != ES_OK) {
		fprintf(stderr, "es-mkcert: %s\n", err);
		goto cleanup;
	}
	status = 0;
cleanup:
	free(ca_cert);
	free(ca_key);
	free(cert);
	free(key);
	return status;
}
