/*
 * fsim_certs.c - per-node certificates of the fleet simulator and their
 * cache (fsim_certs.h).
 */
#include "fsim_certs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <mbedtls/sha256.h>

#include "es_fs.h"
#include "es_obj.h"
#include "es_pki.h"

#define PEM_MAX (64 * 1024)
#define CERT_DAYS 3650

void fsim_node_name(const char *prefix, int idx, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s-%05d", prefix, idx);
}

static es_err read_pem(const char *path, char **out, char *err, size_t errsz)
{
	FILE *f = fopen(path, "re");
	size_t n;

	*out = NULL;
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	*out = calloc(1, PEM_MAX + 1);
	if (!*out) {
		fclose(f);
		return es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
	}
	n = fread(*out, 1, PEM_MAX + 1, f);
	fclose(f);
	if (n == 0 || n > PEM_MAX) {
		free(*out);
		*out = NULL;
		return es_errf(ES_ERR_IO, err, errsz, "%s: empty or over %d bytes", path,
			       PEM_MAX);
	}
	return ES_OK;
}

/* Writes text to path through a temporary file and a rename. */
static es_err write_text(const char *path, const char *text, mode_t mode, char *err,
			 size_t errsz)
{
	char tmp[PATH_MAX];
	FILE *f;
	int ok;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: path too long", path);
	f = fopen(tmp, "we");
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", tmp, strerror(errno));
	ok = fchmod(fileno(f), mode) == 0 && fputs(text, f) >= 0;
	ok = (fclose(f) == 0) && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	}
	return ES_OK;
}

/* The cache directory of the CA whose certificate (PEM) is ca_pem. */
static es_err ca_dir(const char *cache_dir, const char *ca_pem, char *out, size_t outsz,
		     char *err, size_t errsz)
{
	unsigned char sum[32];
	char hex[17];

	if (mbedtls_sha256((const unsigned char *)ca_pem, strlen(ca_pem), sum, 0) != 0)
		return es_errf(ES_ERR_TLS, err, errsz, "sha256 failed");
	for (int i = 0; i < 8; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (snprintf(out, outsz, "%s/%s", cache_dir, hex) >= (int)outsz)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: path too long", cache_dir);
	return es_fs_mkdir_p(out, 0700, err, errsz);
}

/* Issues node name's pair into dir unless both files exist. */
static es_err ensure_node(const char *dir, const char *name, const char *td,
			  const char *ca_pem, const char *ca_key_pem, int *made,
			  char *err, size_t errsz)
{
	char crt[PATH_MAX], key[PATH_MAX], uri[512];
	char *c = NULL, *k = NULL;
	struct stat sb;
	es_pki_req req;
	es_err rc;

	*made = 0;
	snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
	snprintf(key, sizeof(key), "%s/%s.key", dir, name);
	if (stat(crt, &sb) == 0 && stat(key, &sb) == 0)
		return ES_OK;
	if (!es_obj_name_valid(name))
		return es_errf(ES_ERR_INVAL, err, errsz, "node name \"%.64s\" is not an "
			       "RFC 1123 DNS subdomain", name);
	memset(&req, 0, sizeof(req));
	snprintf(uri, sizeof(uri), "spiffe://%s/node/%s", td, name);
	req.common_name = name;
	req.uri_san = uri;
	req.client_auth = 1;
	req.not_after = time(NULL) + CERT_DAYS * 24L * 3600;
	rc = es_pki_issue(&req, ca_pem, ca_key_pem, &c, &k, err, errsz);
	if (rc == ES_OK)
		rc = write_text(key, k, 0600, err, errsz);
	if (rc == ES_OK)
		rc = write_text(crt, c, 0644, err, errsz);
	*made = rc == ES_OK;
	free(c);
	if (k) {
		explicit_bzero(k, strlen(k));
		free(k);
	}
	return rc;
}

es_err fsim_certs_ensure(const char *cache_dir, const char *ca_crt, const char *ca_key,
			 const char *trust_domain, const char *prefix, int first, int n,
			 char *dir_out, size_t dirsz, int *issued, char *err,
			 size_t errsz)
{
	char *ca_pem = NULL, *key_pem = NULL, name[256];
	int made;
	es_err rc;

	*issued = 0;
	if ((rc = read_pem(ca_crt, &ca_pem, err, errsz)) != ES_OK ||
	    (rc = read_pem(ca_key, &key_pem, err, errsz)) != ES_OK)
		goto cleanup;
	if ((rc = ca_dir(cache_dir, ca_pem, dir_out, dirsz, err, errsz)) != ES_OK)
		goto cleanup;
	for (int i = 0; i < n; i++) {
		fsim_node_name(prefix, first + i, name, sizeof(name));
		rc = ensure_node(dir_out, name, trust_domain, ca_pem, key_pem, &made, err,
				 errsz);
		if (rc != ES_OK)
			goto cleanup;
		*issued += made;
	}
	rc = ES_OK;
cleanup:
	free(ca_pem);
	if (key_pem) {
		explicit_bzero(key_pem, strlen(key_pem));
		free(key_pem);
	}
	return rc;
}
