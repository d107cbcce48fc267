/*
 * join.c - joining the controller with a bootstrap token (join.h).
 */
#define _GNU_SOURCE /* asprintf */
#include "enroll/join.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/pem.h>
#include <mbedtls/x509_crt.h>

#include "es_enroll.h"
#include "es_fs.h"
#include "es_http.h"
#include "es_json.h"
#include "es_pki.h"
#include "es_url.h"
#include "es_urllist.h"
#include "es_version.h"

/* Largest answer of the join listener (a CA bundle and a certificate). */
#define JOIN_TIMEOUT_MS 10000

static int empty(const char *s)
{
	return !s || !*s;
}

/* *dst = <dir>/pki/<leaf> unless set. */
static es_err pki_default(char **dst, const char *dir, const char *leaf)
{
	char *p = NULL;

	if (!empty(*dst))
		return ES_OK;
	if (asprintf(&p, "%s/" ES_JOIN_PKI_DIR "/%s", dir, leaf) < 0)
		return ES_ERR_NOMEM;
	free(*dst);
	*dst = p;
	return ES_OK;
}

static es_err join_settings(es_agent_config *cfg, char *err, size_t errsz);

es_err es_join_config_finish(es_agent_config *cfg, char *err, size_t errsz)
{
	es_err rc;

	if (empty(cfg->token)) {
		char *crt = NULL;
		int joined;

		if (!empty(cfg->ca_hash) || !empty(cfg->join_url))
			return es_errf(ES_ERR_INVAL, err, errsz, "%s: only meaningful with token",
				       !empty(cfg->ca_hash) ? "ca-hash" : "join-url");
		/* A node that joined before (`join`, then `run` without the
		 * token): its files in <state-dir>/pki/ are the defaults. */
		if (!empty(cfg->cert) || !empty(cfg->key) || !empty(cfg->ca) ||
		    empty(cfg->state_dir))
			return ES_OK;
		if (pki_default(&crt, cfg->state_dir, "node.crt") != ES_OK)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		joined = access(crt, F_OK) == 0;
		free(crt);
		if (!joined)
			return ES_OK;
	} else if ((rc = join_settings(cfg, err, errsz)) != ES_OK) {
		return rc;
	}
	if (pki_default(&cfg->cert, cfg->state_dir, "node.crt") != ES_OK ||
	    pki_default(&cfg->key, cfg->state_dir, "node.key") != ES_OK ||
	    pki_default(&cfg->ca, cfg->state_dir, "ca.crt") != ES_OK)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	return ES_OK;
}

/* The token's settings (es_join_config_finish): their shapes, and the
 * join URL derived from controller-url when unset. */
static es_err join_settings(es_agent_config *cfg, char *err, size_t errsz)
{
	char id[8], secret[20], pin[ES_ENROLL_PIN_SZ];
	es_url u;
	es_err rc;

	if ((rc = es_enroll_token_split(cfg->token, id, secret, err, errsz)) != ES_OK)
		return rc;
	explicit_bzero(secret, sizeof(secret));
	if (empty(cfg->ca_hash))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "ca-hash: required with token (the controller's "
			       "`edgesync-controller ca hash` or the join command prints it)");
	if ((rc = es_enroll_pin_parse(cfg->ca_hash, pin, err, errsz)) != ES_OK)
		return rc;
	memcpy(cfg->ca_hash, pin, sizeof(pin));
	if (empty(cfg->controller_url))
		return es_errf(ES_ERR_INVAL, err, errsz, "controller-url: required with token");
	if (empty(cfg->join_url)) {
		es_urllist l = { 0 };
		char *p = NULL;

		/* The first of controller-url's URLs names the controller to
		 * join; its join listener is beside its agents' port. */
		if ((rc = es_urllist_split("controller-url", cfg->controller_url, &l, err,
					   errsz)) != ES_OK)
			return rc;
		rc = es_url_parse("controller-url", l.items[0], "wss", &u, err, errsz);
		es_urllist_free(&l);
		if (rc != ES_OK)
			return rc;
		if (u.port > 65535 - ES_ENROLL_JOIN_PORT_OFFSET)
			return es_errf(ES_ERR_INVAL, err, errsz, "join-url: required: "
				       "controller-url's port %d has no port %d beside it for "
				       "the join listener", u.port, u.port + ES_ENROLL_JOIN_PORT_OFFSET);
		if (asprintf(&p, "https://%s%s%s:%d", u.ipv6 ? "[" : "", u.host,
			     u.ipv6 ? "]" : "", u.port + ES_ENROLL_JOIN_PORT_OFFSET) < 0)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		free(cfg->join_url);
		cfg->join_url = p;
	} else if ((rc = es_url_parse("join-url", cfg->join_url, "https", &u, err,
				      errsz)) != ES_OK) {
		return rc;
	}
	return ES_OK;
}

int es_join_needed(const es_agent_config *cfg)
{
	es_pki_creds pc;

	if (empty(cfg->token))
		return 0;
	if (access(cfg->cert, F_OK) != 0)
		return 1;
	return es_pki_creds_check(cfg->cert, cfg->key, cfg->ca, time(NULL), &pc) != ES_OK;
}

/* Reads a small file whole; *out NULL when it does not exist. */
static es_err read_file(const char *path, char **out, char *err, size_t errsz)
{
	FILE *f = fopen(path, "rb");
	char *b;
	size_t n;

	*out = NULL;
	if (!f)
		return errno == ENOENT ? ES_OK :
		       es_errf(ES_ERR_IO, err, errsz, "key %s: %s", path, strerror(errno));
	b = calloc(1, ES_PKI_FILE_MAX + 1);
	if (!b) {
		fclose(f);
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	}
	n = fread(b, 1, ES_PKI_FILE_MAX, f);
	fclose(f);
	b[n] = '\0';
	*out = b;
	return ES_OK;
}

/* The Kubernetes Status the controller refused with, as "Reason: message". */
static void refusal(const es_http_resp *r, char *buf, size_t sz)
{
	char perr[64];
	cJSON *v = NULL;
	const cJSON *reason, *msg;

	if (es_json_parse(r->body, r->body_len, 4, &v, perr, sizeof(perr)) == ES_OK &&
	    cJSON_IsString(reason = cJSON_GetObjectItemCaseSensitive(v, "reason")) &&
	    cJSON_IsString(msg = cJSON_GetObjectItemCaseSensitive(v, "message")))
		snprintf(buf, sz, "%s: %s", reason->valuestring, msg->valuestring);
	else
		snprintf(buf, sz, "HTTP status %d", r->status);
	cJSON_Delete(v);
}

/*
 * Discovery: GET <join-url>/v1/join/ca without checking the server, then
 * the CA certificate in that bundle whose pin is ca_hash, as PEM
 * (*pinned, malloc'd). Errors: ES_ERR_AUTH (no CA matches: err names the
 * hashes offered), ES_ERR_IO, ES_ERR_TLS, ES_ERR_NOMEM.
 */
static es_err discover(const es_agent_config *cfg, char **pinned, char *err,
		       size_t errsz)
{
	es_http_opts o = { .tls = 1, .insecure_discovery = 1, .timeout_ms = JOIN_TIMEOUT_MS,
			   .user_agent = "edgesync-agent/" ES_VERSION };
	es_http_resp r = { 0 };
	mbedtls_x509_crt crt;
	char *url = NULL, pin[ES_ENROLL_PIN_SZ], offered[400] = "";
	unsigned char pem[8192];
	size_t olen = 0, n = 0;
	es_err rc;

	*pinned = NULL;
	mbedtls_x509_crt_init(&crt);
	if (asprintf(&url, "%s/v1/join/ca", cfg->join_url) < 0)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	rc = es_http_request(&o, "GET", url, NULL, 0, &r, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if (r.status != 200) {
		char why[400];

		refusal(&r, why, sizeof(why));
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", url, why);
		goto cleanup;
	}
	if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)r.body, r.body_len + 1) < 0 &&
	    crt.raw.len == 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: not a PEM CA bundle", url);
		goto cleanup;
	}
	rc = ES_ERR_AUTH;
	for (mbedtls_x509_crt *c = &crt; c && c->raw.len; c = c->next) {
		if (es_enroll_cert_pin(c->raw.p, c->raw.len, pin) != ES_OK)
			continue;
		if (c->MBEDTLS_PRIVATE(ca_istrue) && es_enroll_equal(pin, cfg->ca_hash)) {
			if (mbedtls_pem_write_buffer("-----BEGIN CERTIFICATE-----\n",
						     "-----END CERTIFICATE-----\n", c->raw.p,
						     c->raw.len, pem, sizeof(pem), &olen) != 0 ||
			    !(*pinned = strdup((const char *)pem))) {
				rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
				goto cleanup;
			}
			rc = ES_OK;
			goto cleanup;
		}
		if (n < sizeof(offered))
			n += (size_t)snprintf(offered + n, sizeof(offered) - n, "%s%s",
					      n ? ", " : "", pin);
	}
	es_errf(rc, err, errsz, "the controller's CA does not match ca-hash %s (it "
		"offered %s): wrong hash, or not the controller you meant; nothing "
		"was sent", cfg->ca_hash, n ? offered : "no CA");
cleanup:
	mbedtls_x509_crt_free(&crt);
	es_http_resp_free(&r);
	free(url);
	return rc;
}

/* Writes data to path atomically with mode, making its directory (0700). */
static es_err put(const char *path, const char *data, unsigned mode, FILE *out,
		  char *err, size_t errsz)
{
	char *d = strdup(path);
	es_err rc;

	if (!d)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	rc = es_fs_mkdir_p(dirname(d), 0700, err, errsz);
	free(d);
	if (rc == ES_OK)
		rc = es_pki_write_file_atomic(path, data, strlen(data), mode, err, errsz);
	if (rc == ES_OK && out)
		fprintf(out, "wrote %s\n", path);
	return rc;
}

es_err es_join_run(const es_agent_config *cfg, FILE *out, char *err, size_t errsz)
{
	es_http_opts o = { .tls = 1, .timeout_ms = JOIN_TIMEOUT_MS,
			   .user_agent = "edgesync-agent/" ES_VERSION };
	es_http_resp r = { 0 };
	char *key = NULL, *csr = NULL, *pinned = NULL, *url = NULL, *body = NULL;
	char kpin[ES_ENROLL_PIN_SZ], cpin[ES_ENROLL_PIN_SZ], why[600];
	cJSON *req = NULL, *ans = NULL;
	const char *crt, *bundle;
	int new_key = 0;
	es_err rc;

	if (empty(cfg->token))
		return es_errf(ES_ERR_INVAL, err, errsz, "token: required to join");
	if ((rc = read_file(cfg->key, &key, err, errsz)) != ES_OK)
		goto cleanup;
	if (key && es_enroll_key_pin(key, kpin) != ES_OK) {
		rc = es_errf(ES_ERR_INVAL, err, errsz, "key %s: not a private key (move it "
			     "away to join with a new one)", cfg->key);
		goto cleanup;
	}
	if (key) {
		struct stat st;

		/* A key others may read is not the node's alone any more:
		 * refused, as ssh refuses an unprotected private key. */
		if (stat(cfg->key, &st) == 0 && (st.st_mode & 077)) {
			rc = es_errf(ES_ERR_INVAL, err, errsz, "key %s: mode %04o lets "
				     "group or others at it (chmod 600 it, or move it away "
				     "to join with a new key)", cfg->key,
				     (unsigned)(st.st_mode & 07777));
			goto cleanup;
		}
	}
	if (!key) {
		if ((rc = es_enroll_key_new(&key, err, errsz)) != ES_OK)
			goto cleanup;
		new_key = 1;
		if (es_enroll_key_pin(key, kpin) != ES_OK) {
			rc = es_errf(ES_ERR_TLS, err, errsz, "cannot hash the new key");
			goto cleanup;
		}
	}
	if ((rc = es_enroll_csr_new(key, cfg->node_name, &csr, err, errsz)) != ES_OK)
		goto cleanup;
	/* The pin is checked before the token goes anywhere. */
	if ((rc = discover(cfg, &pinned, err, errsz)) != ES_OK)
		goto cleanup;
	if (!(req = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(req, "token", cfg->token) ||
	    !cJSON_AddStringToObject(req, "nodeName", cfg->node_name) ||
	    !cJSON_AddStringToObject(req, "csr", csr) || !(body = es_json_print(req)) ||
	    asprintf(&url, "%s/v1/join", cfg->join_url) < 0) {
		url = NULL;
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	o.ca_pem = pinned;
	if ((rc = es_http_request(&o, "POST", url, body, strlen(body), &r, err, errsz)) != ES_OK)
		goto cleanup;
	if (r.status != 200) {
		refusal(&r, why, sizeof(why));
		rc = es_errf(r.status >= 500 ? ES_ERR_IO : ES_ERR_AUTH, err, errsz,
			     "the controller refused the join of %s: %s", cfg->node_name, why);
		goto cleanup;
	}
	if (es_json_parse(r.body, r.body_len, 4, &ans, why, sizeof(why)) != ES_OK ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ans, "certificate")) ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ans, "caBundle"))) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: the answer holds no certificate", url);
		goto cleanup;
	}
	crt = cJSON_GetObjectItemCaseSensitive(ans, "certificate")->valuestring;
	bundle = cJSON_GetObjectItemCaseSensitive(ans, "caBundle")->valuestring;
	if (es_enroll_key_pin(crt, cpin) != ES_OK || strcmp(cpin, kpin) != 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: the certificate is not for this "
			     "node's key", url);
		goto cleanup;
	}
	if ((rc = put(cfg->ca, bundle, 0644, out, err, errsz)) != ES_OK ||
	    (new_key && (rc = put(cfg->key, key, 0600, out, err, errsz)) != ES_OK) ||
	    (rc = put(cfg->cert, crt, 0644, out, err, errsz)) != ES_OK)
		goto cleanup;
cleanup:
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	if (body) {
		explicit_bzero(body, strlen(body));
		free(body);
	}
	free(csr);
	free(pinned);
	free(url);
	cJSON_Delete(req);
	cJSON_Delete(ans);
	es_http_resp_free(&r);
	return rc;
}
