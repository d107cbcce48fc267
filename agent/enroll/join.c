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
static es_err join_url_finish(es_agent_config *cfg, char *err, size_t errsz);
static es_err token_file_read(es_agent_config *cfg, char *err, size_t errsz);

es_err es_join_config_finish(es_agent_config *cfg, char *err, size_t errsz)
{
	es_err rc;

	if ((rc = token_file_read(cfg, err, errsz)) != ES_OK)
		return rc;
	if (empty(cfg->token)) {
		char *crt = NULL;
		int joined;

		if (!empty(cfg->ca_hash))
			return es_errf(ES_ERR_INVAL, err, errsz, "ca-hash: only meaningful "
				       "with token");
		/* join-url serves a joined node too: renewal of an expired
		 * certificate (renew.h). */
		if (!empty(cfg->join_url) &&
		    (rc = join_url_finish(cfg, err, errsz)) != ES_OK)
			return rc;
		if (empty(cfg->join_url) && !empty(cfg->controller_url) &&
		    join_url_finish(cfg, err, errsz) == ES_ERR_NOMEM)
			return ES_ERR_NOMEM;
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

/* token-file (es_join_config_finish): its first line, without surrounding
 * blanks, becomes token; giving both is refused. */
static es_err token_file_read(es_agent_config *cfg, char *err, size_t errsz)
{
	char *text = NULL, *s, *e;
	size_t n;
	es_err rc;

	if (empty(cfg->token_file))
		return ES_OK;
	if (!empty(cfg->token))
		return es_errf(ES_ERR_INVAL, err, errsz, "token and token-file: give one "
			       "of them, not both");
	if ((rc = es_join_read_pem("token-file", cfg->token_file, &text, err,
				   errsz)) != ES_OK)
		return rc == ES_ERR_IO ? ES_ERR_INVAL : rc;
	if (!text)
		return es_errf(ES_ERR_INVAL, err, errsz, "token-file %s: no such file",
			       cfg->token_file);
	n = strlen(text);
	for (s = text; *s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'; s++)
		;
	e = s + strcspn(s, "\r\n");
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = '\0';
	free(cfg->token);
	cfg->token = strdup(s);
	explicit_bzero(text, n);
	free(text);
	if (!cfg->token)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (!*cfg->token)
		return es_errf(ES_ERR_INVAL, err, errsz, "token-file %s: empty",
			       cfg->token_file);
	return ES_OK;
}

/* The token's settings (es_join_config_finish): their shapes, and the
 * join URL derived from controller-url when unset. */
static es_err join_settings(es_agent_config *cfg, char *err, size_t errsz)
{
	char id[8], secret[20], pin[ES_ENROLL_PIN_SZ];
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
	return join_url_finish(cfg, err, errsz);
}

/* join-url checked, or derived from controller-url's first URL when unset
 * (its host, the agents' port + ES_ENROLL_JOIN_PORT_OFFSET). */
static es_err join_url_finish(es_agent_config *cfg, char *err, size_t errsz)
{
	es_urllist l = { 0 };
	char *p = NULL;
	es_url u;
	es_err rc;

	if (!empty(cfg->join_url))
		return es_url_parse("join-url", cfg->join_url, "https", &u, err, errsz);
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

es_err es_join_read_pem(const char *what, const char *path, char **out, char *err,
			size_t errsz)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	size_t n, cap = ES_PKI_FILE_MAX;
	char *b;

	*out = NULL;
	if (!f)
		return errno == ENOENT ? ES_OK :
		       es_errf(ES_ERR_IO, err, errsz, "%s %s: %s", what, path, strerror(errno));
	/* Sized by the file (read often: the certificate at every look), at
	 * most ES_PKI_FILE_MAX; a file growing meanwhile is cut there. */
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
	    (size_t)st.st_size < cap)
		cap = (size_t)st.st_size;
	b = calloc(1, cap + 1);
	if (!b) {
		fclose(f);
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	}
	n = fread(b, 1, cap, f);
	fclose(f);
	b[n] = '\0';
	*out = b;
	return ES_OK;
}

void es_join_refusal(const es_http_resp *r, char *rbuf, size_t rsz, char *buf,
		     size_t sz)
{
	char perr[64];
	cJSON *v = NULL;
	const cJSON *reason, *msg;

	if (es_json_parse(r->body, r->body_len, 4, &v, perr, sizeof(perr)) == ES_OK &&
	    cJSON_IsString(reason = cJSON_GetObjectItemCaseSensitive(v, "reason")) &&
	    cJSON_IsString(msg = cJSON_GetObjectItemCaseSensitive(v, "message"))) {
		snprintf(buf, sz, "%s: %s", reason->valuestring, msg->valuestring);
		if (rsz)
			snprintf(rbuf, rsz, "%s", reason->valuestring);
	} else {
		snprintf(buf, sz, "HTTP status %d", r->status);
		if (rsz)
			snprintf(rbuf, rsz, "HTTP%d", r->status);
	}
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

		es_join_refusal(&r, NULL, 0, why, sizeof(why));
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

es_err es_join_put(const char *path, const char *data, unsigned mode, FILE *out,
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

es_err es_join_answer(const es_agent_config *cfg, const es_http_resp *r, const char *url,
		      const char *what, const char *kpin, const char *new_key, FILE *out,
		      char *reason, size_t rsz, char *err, size_t errsz)
{
	char cpin[ES_ENROLL_PIN_SZ], why[600];
	const char *crt, *bundle;
	cJSON *ans = NULL;
	es_err rc;

	if (r->status != 200) {
		es_join_refusal(r, reason, rsz, why, sizeof(why));
		return es_errf(r->status >= 500 ? ES_ERR_IO : ES_ERR_AUTH, err, errsz,
			       "the controller refused the %s of %s: %s", what, cfg->node_name,
			       why);
	}
	if (es_json_parse(r->body, r->body_len, 4, &ans, why, sizeof(why)) != ES_OK ||
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
	if ((rc = es_join_put(cfg->ca, bundle, 0644, out, err, errsz)) == ES_OK &&
	    (!new_key || (rc = es_join_put(cfg->key, new_key, 0600, out, err, errsz)) == ES_OK))
		rc = es_join_put(cfg->cert, crt, 0644, out, err, errsz);
cleanup:
	cJSON_Delete(ans);
	return rc;
}

es_err es_join_run(const es_agent_config *cfg, FILE *out, char *err, size_t errsz)
{
	es_http_opts o = { .tls = 1, .timeout_ms = JOIN_TIMEOUT_MS,
			   .user_agent = "edgesync-agent/" ES_VERSION };
	es_http_resp r = { 0 };
	char *key = NULL, *csr = NULL, *pinned = NULL, *url = NULL, *body = NULL;
	char kpin[ES_ENROLL_PIN_SZ];
	cJSON *req = NULL;
	int new_key = 0;
	es_err rc;

	if (empty(cfg->token))
		return es_errf(ES_ERR_INVAL, err, errsz, "token: required to join");
	if ((rc = es_join_read_pem("key", cfg->key, &key, err, errsz)) != ES_OK)
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
	rc = es_join_answer(cfg, &r, url, "join", kpin, new_key ? key : NULL, out, NULL, 0,
			    err, errsz);
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
	es_http_resp_free(&r);
	return rc;
}
