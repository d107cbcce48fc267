/*
 * http_client.c - blocking HTTPS/1.1 client that keeps one connection open
 * across requests (see http.h, es_http_client_*).
 */
#define _GNU_SOURCE /* asprintf, MSG_NOSIGNAL */
#include "http.h"
#include "http_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct es_http_client {
	mbedtls_net_context net; /* fd -1 when not connected */
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca, cert;
	mbedtls_pk_context key;
	int connected;  /* handshake done; the connection may be reused */
	char host[256]; /* of the open connection */
	char port[6];
	unsigned long connections;
};

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
			int one = 1;
			fcntl(fd, F_SETFL, flags);
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			/* A request is one write: Nagle would hold its last
			 * segment until the server's delayed ACK (~40 ms). */
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
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

static es_err handshake(es_http_client *c, const char *url, char *err, size_t errsz)
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

/* mbedtls_net_send without SIGPIPE: a keep-alive connection the server has
 * closed must give an error, not end the process. */
static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	mbedtls_net_context *n = ctx;
	ssize_t r = send(n->fd, buf, len, MSG_NOSIGNAL);

	if (r >= 0)
		return (int)r;
	if (errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	if (errno == EPIPE || errno == ECONNRESET)
		return MBEDTLS_ERR_NET_CONN_RESET;
	return MBEDTLS_ERR_NET_SEND_FAILED;
}

/* Parses a PEM file; names it by its setting in the message. */
static es_err load_crt(mbedtls_x509_crt *crt, const char *setting, const char *path,
		       char *err, size_t errsz)
{
	char msg[160];
	int ret;

	if (access(path, R_OK) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s file %s: %s", setting, path,
			       strerror(errno));
	ret = mbedtls_x509_crt_parse_file(crt, path);
	if (ret == 0)
		return ES_OK;
	mbedtls_strerror(ret, msg, sizeof(msg));
	return es_errf(ES_ERR_INVAL, err, errsz, "%s file %s: not a PEM certificate: %s (-0x%04x)",
		       setting, path, msg, (unsigned)(ret < 0 ? -ret : ret));
}

es_err es_http_client_new(const es_http_tls *tls, es_http_client **out,
			  char *err, size_t errsz)
{
	es_http_client *c = NULL;
	psa_status_t ps;
	es_err rc = ES_OK;
	int ret;

	if (!out)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_client_new: missing argument");
	*out = NULL;
	if (!tls)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_client_new: missing argument");
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

	ps = psa_crypto_init();
	if (ps != PSA_SUCCESS) {
		rc = es_errf(ES_ERR_TLS, err, errsz, "psa_crypto_init failed (%d)", (int)ps);
		goto cleanup;
	}
	ret = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
				    (const unsigned char *)"edgesyncctl", 11);
	if (ret) {
		rc = tls_err(ES_ERR_TLS, ret, "TLS", "seeding the random generator", err, errsz);
		goto cleanup;
	}
	if (!tls->ca_file || !*tls->ca_file) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "ca: no CA file given (the server's certificate cannot be checked)");
		goto cleanup;
	}
	rc = load_crt(&c->ca, "ca", tls->ca_file, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if ((tls->cert_file && *tls->cert_file) != (tls->key_file && *tls->key_file)) {
		rc = es_errf(ES_ERR_INVAL, err, errsz, "%s given without %s",
			     tls->cert_file && *tls->cert_file ? "cert" : "key",
			     tls->cert_file && *tls->cert_file ? "key" : "cert");
		goto cleanup;
	}
	if (tls->cert_file && *tls->cert_file) {
		char msg[160];
		rc = load_crt(&c->cert, "cert", tls->cert_file, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
		if (access(tls->key_file, R_OK) != 0) {
			rc = es_errf(ES_ERR_INVAL, err, errsz, "key file %s: %s", tls->key_file,
				     strerror(errno));
			goto cleanup;
		}
		ret = mbedtls_pk_parse_keyfile(&c->key, tls->key_file, NULL,
					       mbedtls_ctr_drbg_random, &c->drbg);
		if (ret) {
			mbedtls_strerror(ret, msg, sizeof(msg));
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "key file %s: not an unencrypted PEM private key: %s (-0x%04x)",
				     tls->key_file, msg, (unsigned)-ret);
			goto cleanup;
		}
		ret = mbedtls_pk_check_pair(&c->cert.pk, &c->key, mbedtls_ctr_drbg_random, &c->drbg);
		if (ret) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "cert file %s and key file %s do not belong together "
				     "(the key is not the certificate's private key)",
				     tls->cert_file, tls->key_file);
			goto cleanup;
		}
	}
	ret = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT,
					  MBEDTLS_SSL_TRANSPORT_STREAM,
					  MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret) {
		rc = tls_err(ES_ERR_TLS, ret, "TLS", "configuration", err, errsz);
		goto cleanup;
	}
	mbedtls_ssl_conf_min_tls_version(&c->conf, MBEDTLS_SSL_VERSION_TLS1_2);
	mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, NULL);
	mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &c->drbg);
	mbedtls_ssl_conf_read_timeout(&c->conf, ES_HTTP_TIMEOUT_MS);
	if (tls->cert_file && *tls->cert_file) {
		ret = mbedtls_ssl_conf_own_cert(&c->conf, &c->cert, &c->key);
		if (ret) {
			rc = tls_err(ES_ERR_TLS, ret, "TLS", "client certificate", err, errsz);
			goto cleanup;
		}
	}
	ret = mbedtls_ssl_setup(&c->ssl, &c->conf);
	if (ret) {
		rc = tls_err(ES_ERR_TLS, ret, "TLS", "setup", err, errsz);
		goto cleanup;
	}
	mbedtls_ssl_set_bio(&c->ssl, &c->net, bio_send, NULL, mbedtls_net_recv_timeout);
cleanup:
	if (rc != ES_OK) {
		es_http_client_free(c);
		return rc;
	}
	*out = c;
	return ES_OK;
}

/* Closes the connection (close_notify first when it is healthy). */
static void disconnect(es_http_client *c, int notify)
{
	if (c->net.fd < 0)
		return;
	if (notify && c->connected)
		(void)mbedtls_ssl_close_notify(&c->ssl);
	mbedtls_net_free(&c->net);
	(void)mbedtls_ssl_session_reset(&c->ssl);
	c->connected = 0;
}

/* 1 when the idle connection still looks open: the server has sent nothing
 * (a close_notify or FIN would make it readable). */
static int still_open(const es_http_client *c)
{
	struct pollfd pfd = { c->net.fd, POLLIN, 0 };

	return poll(&pfd, 1, 0) == 0;
}

static es_err connect_to(es_http_client *c, const es_http_url *u, const char *url,
			 char *err, size_t errsz)
{
	int fd = -1, ret;
	es_err rc;

	ret = mbedtls_ssl_set_hostname(&c->ssl, u->host);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, url, "setting the server name", err, errsz);
	rc = tcp_connect(u, url, &fd, err, errsz);
	if (rc != ES_OK)
		return rc;
	c->net.fd = fd;
	c->connections++;
	rc = handshake(c, url, err, errsz);
	if (rc != ES_OK) {
		disconnect(c, 0);
		return rc;
	}
	c->connected = 1;
	snprintf(c->host, sizeof(c->host), "%s", u->host);
	snprintf(c->port, sizeof(c->port), "%s", u->port);
	return ES_OK;
}

static es_err send_all(es_http_client *c, const unsigned char *p, size_t len,
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

/* Reads one response; *nread counts the bytes received, fr says whether the
 * connection can carry the next request. */
static es_err read_resp(es_http_client *c, const char *url, es_http_resp *resp,
			es_http_framing *fr, size_t *nread, char *err, size_t errsz)
{
	const size_t cap_max = ES_HTTP_MAX_HEAD + 2 * (size_t)ES_HTTP_MAX_BODY;
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap);
	int eof = 0;
	es_err rc = ES_OK;

	memset(fr, 0, sizeof(*fr));
	*nread = 0;
	if (!buf)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	while (!fr->complete) {
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
		*nread = len;
		rc = es_http__parse(buf, len, eof, fr, resp, err, errsz);
		if (rc != ES_OK) {
			char inner[256];
			snprintf(inner, sizeof(inner), "%s", err ? err : "");
			es_errf(rc, err, errsz, "%s: %s", url, inner);
			goto cleanup;
		}
	}
	if (eof || fr->used != len)
		fr->keep_alive = 0;
cleanup:
	free(buf);
	return rc;
}

es_err es_http_client_request(es_http_client *c, const char *method,
			      const char *url, const char *body, size_t len,
			      es_http_resp *resp, char *err, size_t errsz)
{
	es_http_url u;
	char *req = NULL, hosthdr[300];
	int n, attempt;
	es_err rc;

	if (resp)
		memset(resp, 0, sizeof(*resp));
	if (!c || !method || !resp)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_client_request: missing argument");
	if (strcmp(method, "GET") && strcmp(method, "PUT") && strcmp(method, "POST") &&
	    strcmp(method, "DELETE"))
		return es_errf(ES_ERR_INVAL, err, errsz, "unsupported HTTP method %s", method);
	rc = es_http_url_parse(url, &u, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (u.ipv6)
		snprintf(hosthdr, sizeof(hosthdr), "[%s]:%s", u.host, u.port);
	else
		snprintf(hosthdr, sizeof(hosthdr), "%s:%s", u.host, u.port);
	n = asprintf(&req,
		     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: edgesyncctl/%s\r\n"
		     "Accept: application/json\r\n"
		     "%sContent-Length: %zu\r\n\r\n",
		     method, u.path, hosthdr, ES_VERSION,
		     body ? "Content-Type: application/json\r\n" : "", body ? len : 0);
	if (n < 0)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (body && len) {
		char *whole = realloc(req, (size_t)n + len);
		if (!whole) {
			free(req);
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		}
		req = whole;
		memcpy(req + n, body, len);
	}
	if (c->connected &&
	    (strcmp(c->host, u.host) || strcmp(c->port, u.port) || !still_open(c)))
		disconnect(c, 1);
	/* A reused connection the server closed meanwhile fails before any byte
	 * of a response: then the request is sent once more on a new one. Only
	 * idempotent methods are retried (RFC 9110 section 9.2.2). */
	for (attempt = 0; attempt < 2; attempt++) {
		int reused = c->connected;
		es_http_framing fr;
		size_t nread = 0;

		if (!reused) {
			rc = connect_to(c, &u, url, err, errsz);
			if (rc != ES_OK)
				break;
		}
		rc = send_all(c, (const unsigned char *)req, (size_t)n + (body ? len : 0), url,
			      err, errsz);
		if (rc == ES_OK)
			rc = read_resp(c, url, resp, &fr, &nread, err, errsz);
		if (rc == ES_OK) {
			if (!fr.keep_alive)
				disconnect(c, 1);
			break;
		}
		disconnect(c, 0);
		if (!reused || nread || strcmp(method, "POST") == 0 ||
		    rc == ES_ERR_NOMEM || rc == ES_ERR_TOOBIG)
			break;
	}
	free(req);
	return rc;
}

unsigned long es_http_client_connections(const es_http_client *c)
{
	return c ? c->connections : 0;
}

void es_http_client_free(es_http_client *c)
{
	if (!c)
		return;
	disconnect(c, 1);
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

es_err es_http_request(const es_http_tls *tls, const char *method,
		       const char *url, const char *body, size_t len,
		       es_http_resp *resp, char *err, size_t errsz)
{
	es_http_client *c = NULL;
	char inner[512] = "";
	es_err rc;

	if (resp)
		memset(resp, 0, sizeof(*resp));
	if (!tls || !method || !resp)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_request: missing argument");
	rc = es_http_url_parse(url, &(es_http_url){ 0 }, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_http_client_new(tls, &c, inner, sizeof(inner));
	if (rc != ES_OK)
		return es_errf(rc, err, errsz, "%s: %s", url, inner);
	rc = es_http_client_request(c, method, url, body, len, resp, err, errsz);
	es_http_client_free(c);
	return rc;
}
