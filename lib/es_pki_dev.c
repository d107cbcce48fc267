/*
 * es_pki_dev.c - crash-safe writes of certificate and key files, and the
 * development-mode CA with its controller, admin and node certificates.
 */
#include "es_pki.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "es_fs.h"
#include "es_obj.h"
#include "es_pki_int.h"

/* Largest PEM file es_pki reads (certificate or key). */
#define PEM_FILE_MAX (64 * 1024)

es_err es_pki_write_file_atomic(const char *path, const char *data, size_t len,
				unsigned mode, char *err, size_t errsz)
{
	char tmp[PATH_MAX];
	int fd = -1;
	size_t off = 0;
	es_err rc;

	tmp[0] = '\0';
	if (!path || (!data && len > 0))
		return es_errf(ES_ERR_INVAL, err, errsz, "write file: missing argument");
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp)) {
		tmp[0] = '\0';
		rc = es_errf(ES_ERR_INVAL, err, errsz, "%s: path too long", path);
		goto cleanup;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "cannot write %s: %s", path,
			     strerror(errno));
		tmp[0] = '\0';
		goto cleanup;
	}
	if (fchmod(fd, (mode_t)mode) != 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: chmod: %s", tmp, strerror(errno));
		goto cleanup;
	}
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = es_errf(ES_ERR_IO, err, errsz, "%s: write: %s", tmp,
				     strerror(errno));
			goto cleanup;
		}
		off += (size_t)n;
	}
	if (fsync(fd) != 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: fsync: %s", tmp, strerror(errno));
		goto cleanup;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: close: %s", tmp, strerror(errno));
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: rename: %s", path, strerror(errno));
		goto cleanup;
	}
	tmp[0] = '\0';
	rc = es_fs_sync_parent(path, err, errsz);
cleanup:
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlink(tmp);
	return rc;
}

/* Reads a whole small text file. *out malloc'd, NUL-terminated. */
static es_err read_text(const char *path, char **out, char *err, size_t errsz)
{
	FILE *f = NULL;
	char *b = NULL;
	size_t n;
	es_err rc;

	*out = NULL;
	f = fopen(path, "re");
	if (!f) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	b = calloc(1, PEM_FILE_MAX + 1);
	if (!b) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
		goto cleanup;
	}
	n = fread(b, 1, PEM_FILE_MAX + 1, f);
	if (ferror(f)) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: read: %s", path, strerror(errno));
		goto cleanup;
	}
	if (n > PEM_FILE_MAX) {
		rc = es_errf(ES_ERR_TOOBIG, err, errsz, "%s: larger than %d bytes", path,
			     PEM_FILE_MAX);
		goto cleanup;
	}
	*out = b;
	b = NULL;
	rc = ES_OK;
cleanup:
	free(b);
	if (f)
		fclose(f);
	return rc;
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/*
 * Makes or reuses the pair base.crt/base.key. The key is written first, so a
 * certificate without its key is damage that is reported, and a key without
 * its certificate (a crash in between) is replaced. With force, an existing
 * pair is replaced (its CA changed). On return *cert and *key hold the pair's
 * PEM when wanted (non-NULL), and *made says whether it was issued now.
 */
static es_err ensure_pair(const char *base, const es_pki_req *req, const char *ca_crt,
			  const char *ca_key, int force, char **cert, char **key,
			  int *made, char *err, size_t errsz)
{
	char crt_path[PATH_MAX], key_path[PATH_MAX];
	char *c = NULL, *k = NULL;
	es_err rc;

	*made = 0;
	if (snprintf(crt_path, sizeof(crt_path), "%s.crt", base) >= (int)sizeof(crt_path) ||
	    snprintf(key_path, sizeof(key_path), "%s.key", base) >= (int)sizeof(key_path))
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: path too long", base);
	if (!force && exists(crt_path)) {
		if (!exists(key_path))
			return es_errf(ES_ERR_IO, err, errsz,
				       "%s exists but its key %s is missing; remove "
				       "the certificate to issue a new pair",
				       crt_path, key_path);
		if (cert && (rc = read_text(crt_path, &c, err, errsz)) != ES_OK)
			goto cleanup;
		if (key && (rc = read_text(key_path, &k, err, errsz)) != ES_OK)
			goto cleanup;
	} else {
		rc = es_pki_issue(req, ca_crt, ca_key, &c, &k, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
		if ((rc = es_pki_write_file_atomic(key_path, k, strlen(k), 0600, err,
						   errsz)) != ES_OK ||
		    (rc = es_pki_write_file_atomic(crt_path, c, strlen(c), 0644, err,
						   errsz)) != ES_OK)
			goto cleanup;
		*made = 1;
	}
	if (cert) {
		*cert = c;
		c = NULL;
	}
	if (key) {
		*key = k;
		k = NULL;
	}
	rc = ES_OK;
cleanup:
	free(c);
	if (k) {
		explicit_bzero(k, strlen(k));
		free(k);
	}
	return rc;
}

es_err es_pki_dev_init(const char *dir, const char *trust_domain,
		       const char *const *nodes, const char *const *extra_dns,
		       char *err, size_t errsz)
{
	static const char *const loopback_ips[] = {"127.0.0.1", "::1", NULL};
	char path[PATH_MAX], uri[ES_PKI__URI_MAX];
	char *ca_crt = NULL, *ca_key = NULL;
	const char **dns = NULL;
	int new_ca = 0, made = 0;
	size_t ndns = es_pki__list_len(extra_dns);
	es_pki_req req;
	es_err rc;

	if (!dir || !*dir)
		return es_errf(ES_ERR_INVAL, err, errsz, "dev init: no directory");
	if (!trust_domain || !*trust_domain)
		trust_domain = ES_PKI_DEFAULT_TRUST_DOMAIN;
	for (size_t i = 0; nodes && nodes[i]; i++)
		if (!es_obj_name_valid(nodes[i]))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "dev node name \"%.64s\" is not an RFC 1123 DNS "
				       "subdomain", nodes[i]);
	if (snprintf(path, sizeof(path), "%s/nodes", dir) >= (int)sizeof(path))
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: path too long", dir);
	if ((rc = es_fs_mkdir_p(path, 0700, err, errsz)) != ES_OK)
		return rc;
	dns = calloc(ndns + 2, sizeof(*dns));
	if (!dns)
		return es_errf(ES_ERR_NOMEM, err, errsz, "dev init: out of memory");
	dns[0] = "localhost";
	for (size_t i = 0; i < ndns; i++)
		dns[i + 1] = extra_dns[i];

	memset(&req, 0, sizeof(req));
	req.common_name = "edgesync dev CA";
	req.is_ca = 1;
	req.not_after = time(NULL) + 10L * 365 * 24 * 3600;
	snprintf(path, sizeof(path), "%s/ca", dir);
	rc = ensure_pair(path, &req, NULL, NULL, 0, &ca_crt, &ca_key, &new_ca, err, errsz);
	if (rc != ES_OK)
		goto cleanup;

	memset(&req, 0, sizeof(req));
	req.common_name = "edgesync-controller";
	req.dns_sans = dns;
	req.ip_sans = loopback_ips;
	req.server_auth = 1;
	snprintf(path, sizeof(path), "%s/controller", dir);
	rc = ensure_pair(path, &req, ca_crt, ca_key, new_ca, NULL, NULL, &made, err, errsz);
	if (rc != ES_OK)
		goto cleanup;

	memset(&req, 0, sizeof(req));
	req.common_name = "admin";
	snprintf(uri, sizeof(uri), "spiffe://%s/admin/admin", trust_domain);
	req.uri_san = uri;
	req.client_auth = 1;
	snprintf(path, sizeof(path), "%s/admin", dir);
	rc = ensure_pair(path, &req, ca_crt, ca_key, new_ca, NULL, NULL, &made, err, errsz);
	if (rc != ES_OK)
		goto cleanup;

	for (size_t i = 0; nodes && nodes[i]; i++) {
		memset(&req, 0, sizeof(req));
		req.common_name = strlen(nodes[i]) <= ES_PKI__CN_MAX ? nodes[i]
								 : "edgesync node";
		snprintf(uri, sizeof(uri), "spiffe://%s/node/%s", trust_domain, nodes[i]);
		req.uri_san = uri;
		req.client_auth = 1;
		if (snprintf(path, sizeof(path), "%s/nodes/%s", dir, nodes[i]) >=
		    (int)sizeof(path)) {
			rc = es_errf(ES_ERR_INVAL, err, errsz, "%s: path too long", dir);
			goto cleanup;
		}
		rc = ensure_pair(path, &req, ca_crt, ca_key, new_ca, NULL, NULL, &made,
				 err, errsz);
		if (rc != ES_OK)
			goto cleanup;
	}
	rc = ES_OK;
cleanup:
	free(dns);
	free(ca_crt);
	if (ca_key) {
		explicit_bzero(ca_key, strlen(ca_key));
		free(ca_key);
	}
	return rc;
}
