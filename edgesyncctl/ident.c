/*
 * ident.c - the certificate edgesyncctl sent, described (ident.h).
 */
#include "ident.h"

#include <stdlib.h>
#include <string.h>

#include <mbedtls/x509_crt.h>

es_err es_ctl_ident_describe(const char *path, char *buf, size_t bufsz)
{
	mbedtls_x509_crt crt;
	const mbedtls_x509_sequence *cur;
	char dn[256];
	size_t used;
	int nuri = 0, ret;
	es_err rc = ES_OK;

	if (!path || !buf || bufsz == 0)
		return ES_ERR_INVAL;
	mbedtls_x509_crt_init(&crt);
	ret = mbedtls_x509_crt_parse_file(&crt, path);
	if (ret == MBEDTLS_ERR_X509_ALLOC_FAILED) {
		rc = es_errf(ES_ERR_NOMEM, buf, bufsz, "out of memory");
		goto cleanup;
	}
	/* A positive ret: some of several certificates did not parse; the
	 * first one is what TLS sends. */
	if (ret < 0 || !crt.raw.len) {
		rc = es_errf(ES_ERR_PARSE, buf, bufsz, "cannot read a PEM certificate from it");
		goto cleanup;
	}
	if (mbedtls_x509_dn_gets(dn, sizeof(dn), &crt.subject) < 0)
		snprintf(dn, sizeof(dn), "?");
	snprintf(buf, bufsz, "subject %s", dn[0] ? dn : "(empty)");
	for (cur = &crt.subject_alt_names; cur && cur->buf.p; cur = cur->next) {
		mbedtls_x509_subject_alternative_name san;

		if ((cur->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK) !=
		    MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER)
			continue;
		memset(&san, 0, sizeof(san));
		if (mbedtls_x509_parse_subject_alt_name(&cur->buf, &san) == 0 &&
		    san.type == MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER) {
			size_t n = san.san.unstructured_name.len;

			used = strlen(buf);
			snprintf(buf + used, bufsz - used, "%s%.*s",
				 nuri ? ", " : strncmp((const char *)san.san.unstructured_name.p,
						       "spiffe://", n < 9 ? n : 9) == 0
						  ? ", SPIFFE ID " : ", URI SAN ",
				 (int)(n > 256 ? 256 : n), (const char *)san.san.unstructured_name.p);
			nuri++;
		}
		mbedtls_x509_free_subject_alt_name(&san);
	}
	if (nuri == 0) {
		used = strlen(buf);
		snprintf(buf + used, bufsz - used, ", no URI subjectAltName (no SPIFFE ID)");
	}
cleanup:
	mbedtls_x509_crt_free(&crt);
	return rc;
}

void es_ctl_ident_forbidden_hint(FILE *f, const char *cert)
{
	static const char *const daemon_vars[][2] = {
		{ "EDGESYNC_CERT", "EDGESYNCCTL_CERT" }, { "EDGESYNC_KEY", "EDGESYNCCTL_KEY" },
		{ "EDGESYNC_CA", "EDGESYNCCTL_CA" }, { "EDGESYNC_SERVER", "EDGESYNCCTL_SERVER" },
	};
	char what[768];

	if (cert && *cert) {
		es_ctl_ident_describe(cert, what, sizeof(what));
		fprintf(f, "The certificate sent: %s (%s).\n", cert, what);
	} else {
		fprintf(f, "No client certificate was sent: cert is not set.\n");
	}
	fprintf(f, "The admin API accepts a client certificate that chains to the "
		"controller's client-ca\nand has exactly one URI subjectAltName, the SPIFFE ID "
		"spiffe://<trust-domain>/admin/<name>\n(a node's spiffe://<trust-domain>/node/<name> "
		"is refused). Choose it with cert and key\n(EDGESYNCCTL_CERT and EDGESYNCCTL_KEY, "
		"--cert and --key, or the config file;\nwith --dev: <state-dir>/dev/admin.crt "
		"and admin.key, in <state-dir>/dev/edgesyncctl.conf).\n");
	for (size_t i = 0; i < sizeof(daemon_vars) / sizeof(daemon_vars[0]); i++)
		if (getenv(daemon_vars[i][0]))
			fprintf(f, "Note: %s is set, but it is the agent's and the controller's; "
				"edgesyncctl reads %s.\n", daemon_vars[i][0], daemon_vars[i][1]);
}
