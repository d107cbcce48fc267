/*
 * es_pki.c - X.509 identities with mbedTLS 3.6: SPIFFE ID parsing, the
 * controller's peer-certificate check, certificate issuing for development
 * mode and tests. File writes and the development CA are in es_pki_dev.c.
 */
#include "es_pki.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

#include "es_obj.h"
#include "es_pki_int.h"
#include "es_time.h"

#define SPIFFE_SCHEME "spiffe://"
#define URI_MAX ES_PKI__URI_MAX
/* Output buffer for one PEM certificate or key. */
#define PEM_BUF 4096
#define CN_MAX ES_PKI__CN_MAX
#define SERIAL_LEN 16

es_err es_pki_tls_err(char *err, size_t errsz, const char *what, int ret)
{
	char m[128];

	mbedtls_strerror(ret, m, sizeof(m));
	return es_errf(ES_ERR_TLS, err, errsz, "%s: %s (-0x%04x)", what, m,
		       (unsigned)-ret);
}

es_err es_pki_spiffe_parse(const char *uri, const char *trust_domain,
			   es_identity_kind *kind, char *name_out, size_t name_sz,
			   char *err, size_t errsz)
{
	const char *td, *slash, *seg, *name;
	size_t tdlen;

	if (!uri || !trust_domain || !kind || !name_out)
		return es_errf(ES_ERR_INVAL, err, errsz, "spiffe: missing argument");
	if (strncmp(uri, SPIFFE_SCHEME, strlen(SPIFFE_SCHEME)) != 0)
		return es_errf(ES_ERR_AUTH, err, errsz,
			       "URI SAN \"%.128s\" is not a SPIFFE ID (scheme must be "
			       "spiffe://)", uri);
	td = uri + strlen(SPIFFE_SCHEME);
	slash = strchr(td, '/');
	if (!slash)
		return es_errf(ES_ERR_AUTH, err, errsz,
			       "SPIFFE ID \"%.128s\" has no path", uri);
	tdlen = (size_t)(slash - td);
	if (tdlen != strlen(trust_domain) || strncmp(td, trust_domain, tdlen) != 0)
		return es_errf(ES_ERR_AUTH, err, errsz,
			       "SPIFFE ID \"%.128s\": trust domain \"%.*s\" is not "
			       "\"%s\"", uri, (int)(tdlen > 255 ? 255 : tdlen), td,
			       trust_domain);
	seg = slash + 1;
	if (strncmp(seg, "node/", 5) == 0) {
		*kind = ES_ID_NODE;
		name = seg + 5;
	} else if (strncmp(seg, "admin/", 6) == 0) {
		*kind = ES_ID_ADMIN;
		name = seg + 6;
	} else {
		return es_errf(ES_ERR_AUTH, err, errsz,
			       "SPIFFE ID \"%.128s\": path must be /node/<name> or "
			       "/admin/<name>", uri);
	}
	if (!es_obj_name_valid(name))
		return es_errf(ES_ERR_AUTH, err, errsz,
			       "SPIFFE ID \"%.128s\": name \"%.64s\" is not an RFC 1123 "
			       "DNS subdomain", uri, name);
	if (strlen(name) >= name_sz)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spiffe: name buffer of %zu bytes is too small", name_sz);
	memcpy(name_out, name, strlen(name) + 1);
	return ES_OK;
}

es_err es_pki_check_peer(const unsigned char *der, size_t der_len,
			 const char *trust_domain, es_identity_kind want,
			 char *name_out, size_t name_sz, char *err, size_t errsz)
{
	mbedtls_x509_crt crt;
	const mbedtls_x509_sequence *cur;
	char uri[URI_MAX + 1];
	int nuri = 0, ret;
	es_identity_kind kind = 0;
	es_err rc;

	mbedtls_x509_crt_init(&crt);
	uri[0] = '\0';
	if (!der || der_len == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "peer certificate: empty");
		goto cleanup;
	}
	ret = mbedtls_x509_crt_parse_der(&crt, der, der_len);
	if (ret == MBEDTLS_ERR_X509_ALLOC_FAILED) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "peer certificate: out of memory");
		goto cleanup;
	}
	if (ret != 0) {
		char m[128];

		mbedtls_strerror(ret, m, sizeof(m));
		rc = es_errf(ES_ERR_PARSE, err, errsz,
			     "peer certificate: not an X.509 certificate: %s", m);
		goto cleanup;
	}
	if (mbedtls_x509_crt_get_ca_istrue(&crt)) {
		rc = es_errf(ES_ERR_AUTH, err, errsz,
			     "peer certificate is a CA (basicConstraints cA=TRUE); "
			     "a leaf is required");
		goto cleanup;
	}
	for (cur = &crt.subject_alt_names; cur && cur->buf.p; cur = cur->next) {
		mbedtls_x509_subject_alternative_name san;
		int tagv = cur->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK;

		if (tagv != MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER)
			continue;
		memset(&san, 0, sizeof(san));
		ret = mbedtls_x509_parse_subject_alt_name(&cur->buf, &san);
		if (ret != 0 || san.type != MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER) {
			mbedtls_x509_free_subject_alt_name(&san);
			rc = es_errf(ES_ERR_AUTH, err, errsz,
				     "peer certificate: unreadable URI subjectAltName");
			goto cleanup;
		}
		nuri++;
		if (nuri == 1) {
			size_t n = san.san.unstructured_name.len;

			if (n > URI_MAX ||
			    memchr(san.san.unstructured_name.p, 0, n) != NULL) {
				mbedtls_x509_free_subject_alt_name(&san);
				rc = es_errf(ES_ERR_AUTH, err, errsz,
					     "peer certificate: URI subjectAltName is "
					     "longer than %d bytes or holds a NUL",
					     URI_MAX);
				goto cleanup;
			}
			memcpy(uri, san.san.unstructured_name.p, n);
			uri[n] = '\0';
		}
		mbedtls_x509_free_subject_alt_name(&san);
	}
	if (nuri != 1) {
		rc = es_errf(ES_ERR_AUTH, err, errsz,
			     "peer certificate has %d URI subjectAltNames; exactly one "
			     "(a SPIFFE ID) is required", nuri);
		goto cleanup;
	}
	rc = es_pki_spiffe_parse(uri, trust_domain, &kind, name_out, name_sz, err,
				 errsz);
	if (rc != ES_OK)
		goto cleanup;
	if (kind != want) {
		rc = es_errf(ES_ERR_AUTH, err, errsz,
			     "peer certificate identity \"%.128s\" is %s identity; "
			     "%s identity is required", uri,
			     kind == ES_ID_NODE ? "a node" : "an admin",
			     want == ES_ID_NODE ? "a node" : "an admin");
		name_out[0] = '\0';
		goto cleanup;
	}
	rc = ES_OK;
cleanup:
	mbedtls_x509_crt_free(&crt);
	return rc;
}

/* ---- validity and server names ------------------------------------------ */

static time_t x509_time_unix(const mbedtls_x509_time *t)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = t->year - 1900;
	tm.tm_mon = t->mon - 1;
	tm.tm_mday = t->day;
	tm.tm_hour = t->hour;
	tm.tm_min = t->min;
	tm.tm_sec = t->sec;
	return timegm(&tm);
}

time_t es_pki_not_after(const struct mbedtls_x509_crt *crt)
{
	return x509_time_unix(&crt->valid_to);
}

time_t es_pki_not_before(const struct mbedtls_x509_crt *crt)
{
	return x509_time_unix(&crt->valid_from);
}

time_t es_pki__crt_not_after(const mbedtls_x509_crt *crt)
{
	return x509_time_unix(&crt->valid_to);
}

es_err es_pki__crt_validity(const mbedtls_x509_crt *crt, time_t now,
			    char *why, size_t whysz)
{
	char t[ES_TIME_RFC3339_LEN], n[ES_TIME_RFC3339_LEN];
	time_t from = x509_time_unix(&crt->valid_from);
	time_t to = x509_time_unix(&crt->valid_to);

	if (now < from)
		return es_errf(ES_ERR_AUTH, why, whysz,
			       "not valid before %s; the host clock says %s: "
			       "check the clock", es_time_rfc3339(from, t),
			       es_time_rfc3339(now, n));
	if (now > to)
		return es_errf(ES_ERR_AUTH, why, whysz,
			       "expired at %s (the host clock says %s)",
			       es_time_rfc3339(to, t), es_time_rfc3339(now, n));
	return ES_OK;
}

/* Parses der into crt (initialised by the caller). */
static es_err parse_der(mbedtls_x509_crt *crt, const unsigned char *der,
			size_t der_len, char *why, size_t whysz)
{
	int ret;
	char m[128];

	if (!der || der_len == 0)
		return es_errf(ES_ERR_PARSE, why, whysz, "no certificate");
	ret = mbedtls_x509_crt_parse_der(crt, der, der_len);
	if (ret == MBEDTLS_ERR_X509_ALLOC_FAILED)
		return es_errf(ES_ERR_NOMEM, why, whysz, "out of memory");
	if (ret == 0)
		return ES_OK;
	mbedtls_strerror(ret, m, sizeof(m));
	return es_errf(ES_ERR_PARSE, why, whysz, "not an X.509 certificate: %s", m);
}

es_err es_pki_check_validity(const unsigned char *der, size_t der_len,
			     time_t now, char *why, size_t whysz)
{
	mbedtls_x509_crt crt;
	es_err rc;

	mbedtls_x509_crt_init(&crt);
	rc = parse_der(&crt, der, der_len, why, whysz);
	if (rc == ES_OK)
		rc = es_pki__crt_validity(&crt, now, why, whysz);
	mbedtls_x509_crt_free(&crt);
	return rc;
}

/* RFC 6125 section 6.4: name (len bytes, from a dNSName SAN) matches host
 * (lower-case, no trailing dot), ignoring case; a wildcard only as the
 * whole leftmost label of a name with at least two more labels. */
static int dns_match(const unsigned char *name, size_t len, const char *host)
{
	const char *dot;
	size_t hlen = strlen(host);

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == hlen && strncasecmp((const char *)name, host, len) == 0)
		return 1;
	if (len < 4 || name[0] != '*' || name[1] != '.' ||
	    !memchr(name + 2, '.', len - 2))
		return 0;
	dot = strchr(host, '.');
	if (!dot || dot == host)
		return 0;
	return (size_t)(host + hlen - dot) == len - 1 &&
	       strncasecmp(dot, (const char *)name + 1, len - 1) == 0;
}

/* Appends one SAN ("DNS:x" or "IP:y") to the list in buf (bufsz bytes). */
static void add_san(char *buf, size_t bufsz, const char *kind,
		    const unsigned char *v, size_t len)
{
	char text[INET6_ADDRSTRLEN + 1];
	size_t used = strlen(buf);

	if (used + 8 >= bufsz)
		return;
	if (!strcmp(kind, "IP")) {
		if (!inet_ntop(len == 4 ? AF_INET : AF_INET6, v, text, sizeof(text)))
			snprintf(text, sizeof(text), "?");
		snprintf(buf + used, bufsz - used, "%sIP:%s", used ? ", " : "", text);
	} else {
		snprintf(buf + used, bufsz - used, "%sDNS:%.*s", used ? ", " : "",
			 (int)(len > 253 ? 253 : len), (const char *)v);
	}
}

es_err es_pki_check_server_name(const unsigned char *der, size_t der_len,
				const char *host, char *why, size_t whysz)
{
	mbedtls_x509_crt crt;
	const mbedtls_x509_sequence *cur;
	unsigned char ip[16];
	char lower[256], names[512] = "";
	size_t iplen = 0, n;
	int found = 0;
	es_err rc;

	if (!host || !*host || strlen(host) >= sizeof(lower))
		return es_errf(ES_ERR_INVAL, why, whysz, "server name: empty or too long");
	if (inet_pton(AF_INET, host, ip) == 1)
		iplen = 4;
	else if (inet_pton(AF_INET6, host, ip) == 1)
		iplen = 16;
	for (n = 0; host[n]; n++)
		lower[n] = (char)((host[n] >= 'A' && host[n] <= 'Z') ? host[n] + 32 : host[n]);
	if (n > 0 && lower[n - 1] == '.')
		n--;
	lower[n] = '\0';
	mbedtls_x509_crt_init(&crt);
	rc = parse_der(&crt, der, der_len, why, whysz);
	if (rc != ES_OK)
		goto cleanup;
	for (cur = &crt.subject_alt_names; cur && cur->buf.p && !found; cur = cur->next) {
		int tagv = cur->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK;

		if (tagv == MBEDTLS_X509_SAN_DNS_NAME) {
			found = !iplen && dns_match(cur->buf.p, cur->buf.len, lower);
			add_san(names, sizeof(names), "DNS", cur->buf.p, cur->buf.len);
		} else if (tagv == MBEDTLS_X509_SAN_IP_ADDRESS &&
			   (cur->buf.len == 4 || cur->buf.len == 16)) {
			found = iplen && cur->buf.len == iplen &&
				memcmp(cur->buf.p, ip, iplen) == 0;
			add_san(names, sizeof(names), "IP", cur->buf.p, cur->buf.len);
		}
	}
	if (found) {
		rc = ES_OK;
	} else if (!names[0]) {
		rc = es_errf(ES_ERR_AUTH, why, whysz,
			     "the certificate has no DNS or IP subjectAltName (only "
			     "its subject names a host); one naming %s is required",
			     host);
	} else {
		rc = es_errf(ES_ERR_AUTH, why, whysz,
			     "the certificate names %s, not %s", names, host);
	}
cleanup:
	mbedtls_x509_crt_free(&crt);
	return rc;
}

/* ---- issuing --------------------------------------------------------------- */

/* Escapes a common name for mbedtls_x509_string_to_names (RFC 4514
 * section 2.4 special characters). out holds at least 2*CN_MAX+1 bytes. */
static void escape_cn(const char *cn, char *out)
{
	size_t j = 0;

	for (size_t i = 0; cn[i]; i++) {
		if (strchr(",=+<>#;\"\\", cn[i]) || (i == 0 && cn[i] == ' ') ||
		    (cn[i + 1] == '\0' && cn[i] == ' '))
			out[j++] = '\\';
		out[j++] = cn[i];
	}
	out[j] = '\0';
}

static es_err check_req(const es_pki_req *req, char *err, size_t errsz)
{
	size_t n;

	if (!req)
		return es_errf(ES_ERR_INVAL, err, errsz, "certificate request: missing");
	if (!req->common_name || !*req->common_name)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "certificate request: common_name is required");
	n = strlen(req->common_name);
	if (n > CN_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "certificate request: common_name longer than %d bytes",
			       CN_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)req->common_name[i] < 0x20 ||
		    req->common_name[i] == 0x7f)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "certificate request: common_name holds a "
				       "control character");
	if (req->uri_san && (!*req->uri_san || strlen(req->uri_san) > URI_MAX))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "certificate request: uri_san must be 1..%d bytes",
			       URI_MAX);
	for (size_t i = 0; req->dns_sans && req->dns_sans[i]; i++)
		if (!*req->dns_sans[i] || strlen(req->dns_sans[i]) > 253)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "certificate request: dns_sans[%zu] must be "
				       "1..253 bytes", i);
	return ES_OK;
}

/* Builds the SAN list of req into nodes (caller-sized) and ipbuf (16 bytes
 * per IP). Returns the list head through *head (NULL when no SAN). */
static es_err build_sans(const es_pki_req *req, mbedtls_x509_san_list *nodes,
			 unsigned char (*ipbuf)[16], mbedtls_x509_san_list **head,
			 char *err, size_t errsz)
{
	size_t k = 0;

	*head = NULL;
	if (req->uri_san) {
		nodes[k].node.type = MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER;
		nodes[k].node.san.unstructured_name.p = (unsigned char *)req->uri_san;
		nodes[k].node.san.unstructured_name.len = strlen(req->uri_san);
		k++;
	}
	for (size_t i = 0; req->dns_sans && req->dns_sans[i]; i++, k++) {
		nodes[k].node.type = MBEDTLS_X509_SAN_DNS_NAME;
		nodes[k].node.san.unstructured_name.p = (unsigned char *)req->dns_sans[i];
		nodes[k].node.san.unstructured_name.len = strlen(req->dns_sans[i]);
	}
	for (size_t i = 0; req->ip_sans && req->ip_sans[i]; i++, k++) {
		size_t len;

		if (inet_pton(AF_INET, req->ip_sans[i], ipbuf[i]) == 1)
			len = 4;
		else if (inet_pton(AF_INET6, req->ip_sans[i], ipbuf[i]) == 1)
			len = 16;
		else
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "certificate request: ip_sans[%zu] \"%.64s\" is "
				       "not an IPv4 or IPv6 address", i, req->ip_sans[i]);
		nodes[k].node.type = MBEDTLS_X509_SAN_IP_ADDRESS;
		nodes[k].node.san.unstructured_name.p = ipbuf[i];
		nodes[k].node.san.unstructured_name.len = len;
	}
	for (size_t i = 0; i + 1 < k; i++)
		nodes[i].next = &nodes[i + 1];
	if (k > 0)
		*head = &nodes[0];
	return ES_OK;
}

size_t es_pki__list_len(const char *const *l)
{
	size_t n = 0;

	while (l && l[n])
		n++;
	return n;
}

/* "YYYYMMDDhhmmss" in UTC, as mbedtls_x509write_crt_set_validity wants. */
static int fmt_validity(time_t t, char out[64])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 1950)
		return -1;
	snprintf(out, 64, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return 0;
}

es_err es_pki_issue(const es_pki_req *req, const char *ca_cert_pem,
		    const char *ca_key_pem, char **cert_pem, char **key_pem,
		    char *err, size_t errsz)
{
	static const char pers[] = "edgesync-pki";
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_pk_context key, ca_key;
	mbedtls_x509_crt ca;
	mbedtls_x509write_cert w;
	mbedtls_x509_san_list *sans = NULL, *san_head = NULL;
	unsigned char (*ipbuf)[16] = NULL;
	mbedtls_asn1_sequence eku[2];
	unsigned char serial[SERIAL_LEN];
	unsigned char *buf = NULL;
	char subject[2 * CN_MAX + 8], issuer[1024], nb[64], na[64];
	time_t not_before, not_after;
	size_t nsans;
	int ret, self = (ca_cert_pem == NULL && ca_key_pem == NULL);
	es_err rc;

	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_pk_init(&key);
	mbedtls_pk_init(&ca_key);
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509write_crt_init(&w);
	memset(eku, 0, sizeof(eku));
	if (cert_pem)
		*cert_pem = NULL;
	if (key_pem)
		*key_pem = NULL;

	if (!cert_pem || !key_pem) {
		rc = es_errf(ES_ERR_INVAL, err, errsz, "certificate request: no output");
		goto cleanup;
	}
	if ((rc = check_req(req, err, errsz)) != ES_OK)
		goto cleanup;
	if (!self && (!ca_cert_pem || !ca_key_pem)) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "certificate request: the CA needs both a certificate and a key");
		goto cleanup;
	}
	not_before = req->not_before ? req->not_before : time(NULL) - 300;
	not_after = req->not_after ? req->not_after : not_before + 365L * 24 * 3600;
	if (not_after <= not_before || fmt_validity(not_before, nb) != 0 ||
	    fmt_validity(not_after, na) != 0) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "certificate request: not_after must be later than "
			     "not_before, both within years 1950..9999");
		goto cleanup;
	}
	nsans = (req->uri_san ? 1 : 0) + es_pki__list_len(req->dns_sans) +
		es_pki__list_len(req->ip_sans);
	sans = calloc(nsans + 1, sizeof(*sans));
	ipbuf = calloc(es_pki__list_len(req->ip_sans) + 1, sizeof(*ipbuf));
	buf = calloc(1, PEM_BUF);
	if (!sans || !ipbuf || !buf) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "certificate: out of memory");
		goto cleanup;
	}
	if ((rc = build_sans(req, sans, ipbuf, &san_head, err, errsz)) != ES_OK)
		goto cleanup;

	if (psa_crypto_init() != PSA_SUCCESS) {
		rc = es_errf(ES_ERR_TLS, err, errsz, "PSA crypto initialisation failed");
		goto cleanup;
	}
	ret = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
				    (const unsigned char *)pers, sizeof(pers) - 1);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "seeding the random generator", ret);
		goto cleanup;
	}

	if (!self) {
		ret = mbedtls_x509_crt_parse(&ca, (const unsigned char *)ca_cert_pem,
					     strlen(ca_cert_pem) + 1);
		if (ret != 0) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "CA certificate: not a PEM X.509 certificate");
			goto cleanup;
		}
		ret = mbedtls_pk_parse_key(&ca_key, (const unsigned char *)ca_key_pem,
					   strlen(ca_key_pem) + 1, NULL, 0,
					   mbedtls_ctr_drbg_random, &drbg);
		if (ret != 0) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "CA key: not a PEM private key (or encrypted)");
			goto cleanup;
		}
		if (mbedtls_pk_check_pair(&ca.pk, &ca_key, mbedtls_ctr_drbg_random,
					  &drbg) != 0) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "CA key does not match the CA certificate");
			goto cleanup;
		}
		ret = mbedtls_x509_dn_gets(issuer, sizeof(issuer), &ca.subject);
		if (ret < 0) {
			rc = es_pki_tls_err(err, errsz, "CA certificate subject", ret);
			goto cleanup;
		}
	}

	ret = mbedtls_pk_setup(&key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (ret == 0)
		ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key),
					  mbedtls_ctr_drbg_random, &drbg);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "generating a P-256 key", ret);
		goto cleanup;
	}

	ret = mbedtls_ctr_drbg_random(&drbg, serial, sizeof(serial));
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "serial number", ret);
		goto cleanup;
	}
	/* RFC 5280 4.1.2.2: positive, at most 20 octets; keep all 16. */
	serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);

	strcpy(subject, "CN=");
	escape_cn(req->common_name, subject + 3);
	if (self)
		snprintf(issuer, sizeof(issuer), "%s", subject);

	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, &key);
	mbedtls_x509write_crt_set_issuer_key(&w, self ? &key : &ca_key);
	if ((ret = mbedtls_x509write_crt_set_serial_raw(&w, serial, sizeof(serial))) != 0 ||
	    (ret = mbedtls_x509write_crt_set_validity(&w, nb, na)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_name(&w, subject)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_issuer_name(&w, issuer)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_basic_constraints(&w, req->is_ca ? 1 : 0,
							       -1)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_key_usage(&w, req->is_ca
			? MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN |
			  MBEDTLS_X509_KU_DIGITAL_SIGNATURE
			: MBEDTLS_X509_KU_DIGITAL_SIGNATURE)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_key_identifier(&w)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_authority_key_identifier(&w)) != 0) {
		rc = es_pki_tls_err(err, errsz, "building the certificate", ret);
		goto cleanup;
	}
	if (san_head &&
	    (ret = mbedtls_x509write_crt_set_subject_alternative_name(&w, san_head)) != 0) {
		rc = es_pki_tls_err(err, errsz, "subjectAltName", ret);
		goto cleanup;
	}
	if (req->server_auth || req->client_auth) {
		mbedtls_asn1_sequence *last = NULL;

		if (req->server_auth) {
			eku[0].buf.tag = MBEDTLS_ASN1_OID;
			eku[0].buf.p = (unsigned char *)MBEDTLS_OID_SERVER_AUTH;
			eku[0].buf.len = MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH);
			last = &eku[0];
		}
		if (req->client_auth) {
			eku[1].buf.tag = MBEDTLS_ASN1_OID;
			eku[1].buf.p = (unsigned char *)MBEDTLS_OID_CLIENT_AUTH;
			eku[1].buf.len = MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH);
			if (last)
				last->next = &eku[1];
		}
		ret = mbedtls_x509write_crt_set_ext_key_usage(&w, req->server_auth
							      ? &eku[0] : &eku[1]);
		if (ret != 0) {
			rc = es_pki_tls_err(err, errsz, "extendedKeyUsage", ret);
			goto cleanup;
		}
	}

	ret = mbedtls_x509write_crt_pem(&w, buf, PEM_BUF, mbedtls_ctr_drbg_random, &drbg);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "signing the certificate", ret);
		goto cleanup;
	}
	*cert_pem = strdup((const char *)buf);
	memset(buf, 0, PEM_BUF);
	ret = mbedtls_pk_write_key_pem(&key, buf, PEM_BUF);
	if (ret != 0) {
		rc = es_pki_tls_err(err, errsz, "writing the key", ret);
		goto cleanup;
	}
	*key_pem = strdup((const char *)buf);
	if (!*cert_pem || !*key_pem) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "certificate: out of memory");
		goto cleanup;
	}
	rc = ES_OK;
cleanup:
	if (rc != ES_OK && cert_pem && key_pem) {
		free(*cert_pem);
		*cert_pem = NULL;
		if (*key_pem) {
			explicit_bzero(*key_pem, strlen(*key_pem));
			free(*key_pem);
		}
		*key_pem = NULL;
	}
	if (buf) {
		explicit_bzero(buf, PEM_BUF);
		free(buf);
	}
	free(sans);
	free(ipbuf);
	mbedtls_x509write_crt_free(&w);
	mbedtls_x509_crt_free(&ca);
	mbedtls_pk_free(&ca_key);
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&entropy);
	return rc;
}
