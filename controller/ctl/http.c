/*
 * http.c - blocking HTTPS/1.1 client (see http.h).
 */
#define _GNU_SOURCE /* asprintf */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

#include "es_version.h"

static int host_char_ok(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

es_err es_http_url_parse(const char *url, es_http_url *out, char *err,
			 size_t errsz)
{
	const char *p, *hs, *he;
	size_t n;

	if (!url || !out)
		return es_errf(ES_ERR_INVAL, err, errsz, "URL missing");
	memset(out, 0, sizeof(*out));
	for (p = url; *p; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": contains a space or control character", url);
	}
	if (strncasecmp(url, "https://", 8) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "URL \"%s\": scheme must be https://", url);
	p = url + 8;
	if (*p == '[') {
		hs = p + 1;
		he = strchr(hs, ']');
		if (!he)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": IPv6 address lacks ']'", url);
		n = (size_t)(he - hs);
		if (n == 0 || n >= sizeof(out->host))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": bad IPv6 address", url);
		memcpy(out->host, hs, n);
		out->host[n] = '\0';
		{
			struct in6_addr a6;
			if (inet_pton(AF_INET6, out->host, &a6) != 1)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "URL \"%s\": \"%s\" is not an IPv6 address",
					       url, out->host);
		}
		out->ipv6 = 1;
		p = he + 1;
	} else {
		hs = p;
		while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#') {
			if (*p == '@')
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "URL \"%s\": user information is not supported", url);
			if (!host_char_ok((unsigned char)*p))
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "URL \"%s\": invalid character '%c' in host", url, *p);
			p++;
		}
		n = (size_t)(p - hs);
		if (n == 0)
			return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": host missing", url);
		if (n >= sizeof(out->host))
			return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": host too long", url);
		memcpy(out->host, hs, n);
		out->host[n] = '\0';
	}
	if (*p == ':') {
		unsigned long port = 0;
		const char *ps = ++p;
		while (isdigit((unsigned char)*p) && port <= 65535)
			port = port * 10 + (unsigned long)(*p++ - '0');
		if (p == ps || port == 0 || port > 65535 || isalnum((unsigned char)*p))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": port must be 1..65535", url);
		snprintf(out->port, sizeof(out->port), "%lu", port);
	} else {
		strcpy(out->port, "443");
	}
	if (*p && *p != '/' && *p != '?')
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "URL \"%s\": unexpected '%c' after host", url, *p);
	if (strchr(p, '#'))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "URL \"%s\": a fragment is not allowed", url);
	n = strlen(p);
	if (n + 2 > sizeof(out->path))
		return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": path too long", url);
	if (*p != '/')
		out->path[0] = '/';
	strcat(out->path, p);
	return ES_OK;
}

void es_http_resp_free(es_http_resp *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

/* Finds the end of the head ("\r\n\r\n"); returns its length or 0. */
static size_t head_len(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 3 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
		    buf[i + 3] == '\n')
			return i + 4;
	return 0;
}

/* Value of header name in the head (case-insensitive), trimmed into out. */
static int header_get(const char *head, size_t hlen, const char *name,
		      char *out, size_t outsz)
{
	const char *line = memchr(head, '\n', hlen);
	size_t nlen = strlen(name);

	while (line && (size_t)(line - head) < hlen) {
		const char *ls = line + 1, *le;
		le = memchr(ls, '\n', hlen - (size_t)(ls - head));
		if (!le)
			break;
		if ((size_t)(le - ls) > nlen && strncasecmp(ls, name, nlen) == 0 &&
		    ls[nlen] == ':') {
			const char *v = ls + nlen + 1;
			size_t vl;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(le - v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl >= outsz)
				vl = outsz - 1;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return 1;
		}
		line = le;
	}
	return 0;
}

/*
 * Parses buf. *complete is 1 when the response is whole; when it is not and
 * eof is 0 the caller reads more. Fills resp only when complete.
 */
static es_err parse_resp(const char *buf, size_t len, int eof, int *complete,
			 es_http_resp *resp, char *err, size_t errsz)
{
	size_t hl = head_len(buf, len), blen = 0, pos;
	char val[128];
	char *body = NULL;
	int status, chunked = 0, has_cl = 0;
	unsigned long long cl = 0;

	*complete = 0;
	if (!hl) {
		if (len > ES_HTTP_MAX_HEAD)
			return es_errf(ES_ERR_TOOBIG, err, errsz,
				       "response head exceeds %u bytes", ES_HTTP_MAX_HEAD);
		if (eof)
			return es_errf(ES_ERR_PROTO, err, errsz,
				       "response truncated before the end of its headers");
		return ES_OK;
	}
	if (hl > ES_HTTP_MAX_HEAD)
		return es_errf(ES_ERR_TOOBIG, err, errsz,
			       "response head exceeds %u bytes", ES_HTTP_MAX_HEAD);
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)buf[7]) ||
	    buf[8] != ' ' || !isdigit((unsigned char)buf[9]) ||
	    !isdigit((unsigned char)buf[10]) || !isdigit((unsigned char)buf[11]) ||
	    (buf[12] != ' ' && buf[12] != '\r'))
		return es_errf(ES_ERR_PROTO, err, errsz,
			       "response is not HTTP/1.x (status line \"%.40s\")", buf);
	status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (status < 100 || status > 599)
		return es_errf(ES_ERR_PROTO, err, errsz, "response status %d out of range", status);
	if (header_get(buf, hl, "Transfer-Encoding", val, sizeof(val))) {
		if (strcasecmp(val, "chunked") != 0)
			return es_errf(ES_ERR_PROTO, err, errsz,
				       "unsupported Transfer-Encoding \"%s\"", val);
		chunked = 1;
	} else if (header_get(buf, hl, "Content-Length", val, sizeof(val))) {
		char *end = NULL;
		errno = 0;
		cl = strtoull(val, &end, 10);
		if (!isdigit((unsigned char)val[0]) || *end || errno)
			return es_errf(ES_ERR_PROTO, err, errsz, "bad Content-Length \"%s\"", val);
		if (cl > ES_HTTP_MAX_BODY)
			return es_errf(ES_ERR_TOOBIG, err, errsz,
				       "response body of %llu bytes exceeds %u", cl, ES_HTTP_MAX_BODY);
		has_cl = 1;
	}
	if (status == 204 || status == 304 || status < 200) {
		has_cl = 1;
		cl = 0;
		chunked = 0;
	}
	body = calloc(1, (chunked ? len - hl : has_cl ? cl : len - hl) + 1);
	if (!body)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (chunked) {
		pos = hl;
		for (;;) {
			const char *le = NULL;
			char *end = NULL;
			unsigned long long sz;
			size_t i;
			for (i = pos; i + 1 < len; i++)
				if (buf[i] == '\r' && buf[i + 1] == '\n') {
					le = buf + i;
					break;
				}
			if (!le)
				goto incomplete;
			if (!isxdigit((unsigned char)buf[pos])) {
				free(body);
				return es_errf(ES_ERR_PROTO, err, errsz, "bad chunk size line");
			}
			errno = 0;
			sz = strtoull(buf + pos, &end, 16);
			if (errno || end > le || (*end != ';' && end != le)) {
				free(body);
				return es_errf(ES_ERR_PROTO, err, errsz, "bad chunk size line");
			}
			pos = (size_t)(le - buf) + 2;
			if (sz == 0)
				break;
			if (sz > ES_HTTP_MAX_BODY - blen) {
				free(body);
				return es_errf(ES_ERR_TOOBIG, err, errsz,
					       "response body exceeds %u bytes", ES_HTTP_MAX_BODY);
			}
			if (len - pos < sz + 2)
				goto incomplete;
			if (buf[pos + sz] != '\r' || buf[pos + sz + 1] != '\n') {
				free(body);
				return es_errf(ES_ERR_PROTO, err, errsz, "chunk not followed by CRLF");
			}
			memcpy(body + blen, buf + pos, sz);
			blen += sz;
			pos += sz + 2;
		}
	} else if (has_cl) {
		if (len - hl < cl)
			goto incomplete;
		memcpy(body, buf + hl, cl);
		blen = cl;
	} else {
		if (!eof) {
			free(body);
			return ES_OK;
		}
		if (len - hl > ES_HTTP_MAX_BODY) {
			free(body);
			return es_errf(ES_ERR_TOOBIG, err, errsz,
				       "response body exceeds %u bytes", ES_HTTP_MAX_BODY);
		}
		memcpy(body, buf + hl, len - hl);
		blen = len - hl;
	}
	body[blen] = '\0';
	resp->status = status;
	resp->body = body;
	resp->body_len = blen;
	*complete = 1;
	return ES_OK;

incomplete:
	free(body);
	if (eof)
		return es_errf(ES_ERR_PROTO, err, errsz, "response body truncated");
	return ES_OK;
}

es_err es_http_parse_response(const char *buf, size_t len, es_http_resp *resp,
			      char *err, size_t errsz)
{
	int complete = 0;
	es_err rc;

	memset(resp, 0, sizeof(*resp));
	rc = parse_resp(buf, len, 1, &complete, resp, err, errsz);
	if (rc == ES_OK && !complete)
		rc = es_errf(ES_ERR_PROTO, err, errsz, "response truncated");
	return rc;
}

/* Connects with a timeout; mbedtls_net_connect has none. Returns the fd. */
static es_err tcp_connect(const es_http_url *u, const char *url, int *fd_out,
			  char *err, size_t errsz)
{
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1, gai, last = 0;
	es_err rc = ES_ERR_IO;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	gai = getaddrinfo(u->host, u->port, &hints, &res);
	if (gai != 0)
		return es_errf(ES_ERR_IO, err, errsz, "%s: cannot resolve %s: %s", url,
			       u->host, gai_strerror(gai));
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		struct timeval tv = { ES_HTTP_TIMEOUT_MS / 1000, 0 };
		int soerr = 0, flags, r;
		socklen_t sl = sizeof(soerr);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		flags = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
		r = connect(fd, ai->ai_addr, ai->ai_addrlen);
		if (r < 0 && errno == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			r = poll(&pfd, 1, ES_HTTP_TIMEOUT_MS);
			if (r == 0) {
				last = ETIMEDOUT;
				r = -1;
			} else if (r > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
				   soerr == 0) {
				r = 0;
			} else {
				last = soerr ? soerr : errno;
				r = -1;
			}
		} else if (r < 0) {
			last = errno;
		}
		if (r == 0) {
			fcntl(fd, F_SETFL, flags);
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			*fd_out = fd;
			rc = ES_OK;
			break;
		}
		close(fd);
		fd = -1;
	}
	if (rc != ES_OK)
		es_errf(ES_ERR_IO, err, errsz, "%s: cannot connect to %s port %s: %s", url,
			u->host, u->port, strerror(last ? last : ECONNREFUSED));
	freeaddrinfo(res);
	return rc;
}

static es_err tls_err(es_err code, int ret, const char *url, const char *what,
		      char *err, size_t errsz)
{
	char msg[160];

	mbedtls_strerror(ret, msg, sizeof(msg));
	return es_errf(code, err, errsz, "%s: %s: %s (-0x%04x)", url, what, msg,
		       (unsigned)-ret);
}

typedef struct conn {
	mbedtls_net_context net;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca, cert;
	mbedtls_pk_context key;
} conn;

static es_err tls_setup(conn *c, const es_http_tls *tls, const es_http_url *u,
			const char *url, char *err, size_t errsz)
{
	psa_status_t ps;
	int ret;

	ps = psa_crypto_init();
	if (ps != PSA_SUCCESS)
		return es_errf(ES_ERR_TLS, err, errsz, "%s: psa_crypto_init failed (%d)", url,
			       (int)ps);
	ret = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
				    (const unsigned char *)"edgesyncctl", 11);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, url, "seeding the random generator", err, errsz);
	if (!tls->ca_file || !*tls->ca_file)
		return es_errf(ES_ERR_TLS, err, errsz, "%s: no CA file given (--ca)", url);
	ret = mbedtls_x509_crt_parse_file(&c->ca, tls->ca_file);
	if (ret) {
		char what[600];
		snprintf(what, sizeof(what), "CA file %s", tls->ca_file);
		return tls_err(ES_ERR_TLS, ret, url, what, err, errsz);
	}
	ret = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT,
					  MBEDTLS_SSL_TRANSPORT_STREAM,
					  MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, url, "TLS configuration", err, errsz);
	mbedtls_ssl_conf_min_tls_version(&c->conf, MBEDTLS_SSL_VERSION_TLS1_2);
	mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, NULL);
	mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &c->drbg);
	mbedtls_ssl_conf_read_timeout(&c->conf, ES_HTTP_TIMEOUT_MS);
	if (tls->cert_file && *tls->cert_file) {
		char what[600];
		ret = mbedtls_x509_crt_parse_file(&c->cert, tls->cert_file);
		if (ret) {
			snprintf(what, sizeof(what), "certificate file %s", tls->cert_file);
			return tls_err(ES_ERR_TLS, ret, url, what, err, errsz);
		}
		if (!tls->key_file || !*tls->key_file)
			return es_errf(ES_ERR_TLS, err, errsz, "%s: certificate %s given without a key (--key)",
				       url, tls->cert_file);
		ret = mbedtls_pk_parse_keyfile(&c->key, tls->key_file, NULL,
					       mbedtls_ctr_drbg_random, &c->drbg);
		if (ret) {
			snprintf(what, sizeof(what), "key file %s", tls->key_file);
			return tls_err(ES_ERR_TLS, ret, url, what, err, errsz);
		}
		ret = mbedtls_ssl_conf_own_cert(&c->conf, &c->cert, &c->key);
		if (ret)
			return tls_err(ES_ERR_TLS, ret, url, "client certificate", err, errsz);
	}
	ret = mbedtls_ssl_setup(&c->ssl, &c->conf);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, url, "TLS setup", err, errsz);
	ret = mbedtls_ssl_set_hostname(&c->ssl, u->host);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, url, "setting the server name", err, errsz);
	mbedtls_ssl_set_bio(&c->ssl, &c->net, mbedtls_net_send, NULL,
			    mbedtls_net_recv_timeout);
	return ES_OK;
}

static es_err handshake(conn *c, const char *url, char *err, size_t errsz)
{
	int ret;

	do {
		ret = mbedtls_ssl_handshake(&c->ssl);
	} while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE);
	if (ret == 0)
		return ES_OK;
	if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
		char info[512];
		uint32_t flags = mbedtls_ssl_get_verify_result(&c->ssl);
		size_t n;
		mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
		n = strlen(info);
		while (n && (info[n - 1] == '\n' || info[n - 1] == ' '))
			info[--n] = '\0';
		for (char *p = info; *p; p++)
			if (*p == '\n')
				*p = ';';
		return es_errf(ES_ERR_TLS, err, errsz,
			       "%s: server certificate refused: %s", url, info);
	}
	if (ret == MBEDTLS_ERR_SSL_TIMEOUT)
		return es_errf(ES_ERR_IO, err, errsz, "%s: TLS handshake timed out after %d s",
			       url, ES_HTTP_TIMEOUT_MS / 1000);
	return tls_err(ES_ERR_TLS, ret, url, "TLS handshake failed", err, errsz);
}

static es_err send_all(conn *c, const unsigned char *p, size_t len,
		       const char *url, char *err, size_t errsz)
{
	while (len) {
		int ret = mbedtls_ssl_write(&c->ssl, p, len);
		if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE ||
		    ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
			continue;
		if (ret < 0)
			return tls_err(ES_ERR_IO, ret, url, "sending the request", err, errsz);
		p += ret;
		len -= (size_t)ret;
	}
	return ES_OK;
}

static es_err read_resp(conn *c, const char *url, es_http_resp *resp,
			char *err, size_t errsz)
{
	const size_t cap_max = ES_HTTP_MAX_HEAD + 2 * (size_t)ES_HTTP_MAX_BODY;
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap);
	int complete = 0, eof = 0;
	es_err rc = ES_OK;

	if (!buf)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	while (!complete) {
		int ret;
		if (len == cap) {
			char *nb;
			if (cap >= cap_max) {
				rc = es_errf(ES_ERR_TOOBIG, err, errsz,
					     "%s: response exceeds %zu bytes", url, cap_max);
				goto cleanup;
			}
			cap = cap * 2 > cap_max ? cap_max : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
				goto cleanup;
			}
			buf = nb;
		}
		ret = mbedtls_ssl_read(&c->ssl, (unsigned char *)buf + len, cap - len);
		if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE ||
		    ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
			continue;
		if (ret == MBEDTLS_ERR_SSL_TIMEOUT) {
			rc = es_errf(ES_ERR_IO, err, errsz, "%s: no response within %d s", url,
				     ES_HTTP_TIMEOUT_MS / 1000);
			goto cleanup;
		}
		if (ret == 0 || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ||
		    ret == MBEDTLS_ERR_NET_CONN_RESET)
			eof = 1;
		else if (ret < 0) {
			rc = tls_err(ES_ERR_IO, ret, url, "reading the response", err, errsz);
			goto cleanup;
		} else
			len += (size_t)ret;
		rc = parse_resp(buf, len, eof, &complete, resp, err, errsz);
		if (rc != ES_OK) {
			char inner[256];
			snprintf(inner, sizeof(inner), "%s", err ? err : "");
			es_errf(rc, err, errsz, "%s: %s", url, inner);
			goto cleanup;
		}
	}
cleanup:
	free(buf);
	return rc;
}

es_err es_http_request(const es_http_tls *tls, const char *method,
		       const char *url, const char *body, size_t len,
		       es_http_resp *resp, char *err, size_t errsz)
{
	es_http_url u;
	conn *c = NULL;
	char *head = NULL, hosthdr[300];
	int fd = -1, n;
	es_err rc;

	if (resp)
		memset(resp, 0, sizeof(*resp));
	if (!tls || !method || !resp)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_request: missing argument");
	if (strcmp(method, "GET") && strcmp(method, "PUT") && strcmp(method, "POST") &&
	    strcmp(method, "DELETE"))
		return es_errf(ES_ERR_INVAL, err, errsz, "unsupported HTTP method %s", method);
	rc = es_http_url_parse(url, &u, err, errsz);
	if (rc != ES_OK)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	mbedtls_net_init(&c->net);
	mbedtls_entropy_init(&c->entropy);
	mbedtls_ctr_drbg_init(&c->drbg);
	mbedtls_ssl_init(&c->ssl);
	mbedtls_ssl_config_init(&c->conf);
	mbedtls_x509_crt_init(&c->ca);
	mbedtls_x509_crt_init(&c->cert);
	mbedtls_pk_init(&c->key);

	rc = tls_setup(c, tls, &u, url, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	rc = tcp_connect(&u, url, &fd, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	c->net.fd = fd;
	rc = handshake(c, url, err, errsz);
	if (rc != ES_OK)
		goto cleanup;

	if (u.ipv6)
		snprintf(hosthdr, sizeof(hosthdr), "[%s]:%s", u.host, u.port);
	else
		snprintf(hosthdr, sizeof(hosthdr), "%s:%s", u.host, u.port);
	n = asprintf(&head,
		     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: edgesyncctl/%s\r\n"
		     "Accept: application/json\r\nConnection: close\r\n"
		     "%sContent-Length: %zu\r\n\r\n",
		     method, u.path, hosthdr, ES_VERSION,
		     body ? "Content-Type: application/json\r\n" : "", body ? len : 0);
	if (n < 0) {
		head = NULL;
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	rc = send_all(c, (const unsigned char *)head, (size_t)n, url, err, errsz);
	if (rc == ES_OK && body && len)
		rc = send_all(c, (const unsigned char *)body, len, url, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	rc = read_resp(c, url, resp, err, errsz);
	if (rc == ES_OK)
		mbedtls_ssl_close_notify(&c->ssl);

cleanup:
	free(head);
	if (c) {
		mbedtls_ssl_free(&c->ssl);
		mbedtls_ssl_config_free(&c->conf);
		mbedtls_x509_crt_free(&c->ca);
		mbedtls_x509_crt_free(&c->cert);
		mbedtls_pk_free(&c->key);
		mbedtls_ctr_drbg_free(&c->drbg);
		mbedtls_entropy_free(&c->entropy);
		mbedtls_net_free(&c->net);
		free(c);
	}
	return rc;
}
