/*
 * es_http.c - blocking HTTP/1.1 client over TCP or TLS that keeps one
 * connection open across requests (see es_http.h, es_http_client_*).
 * Responses go through the incremental parser of es_http_parse.c.
 */
#define _GNU_SOURCE /* asprintf, MSG_NOSIGNAL */
#include "es_http.h"

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

#include "es_url.h"

/* Bytes asked of the connection per read. */
#define READ_CHUNK 16384

struct es_http_client {
	int tls;                 /* https:// over TLS, else http:// over TCP */
	int timeout_ms;          /* connect, handshake */
	int resp_timeout_ms;     /* each wait for a response's data */
	const char *user_agent;
	mbedtls_net_context net; /* the socket, fd -1 when not connected */
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca, cert;
	mbedtls_pk_context key;
	int connected;  /* (TLS: handshake done;) the connection may be reused */
	char host[ES_ADDR_HOST_MAX + 1]; /* of the open connection */
	int port;
	unsigned long connections;
};

/* Connects with a timeout; mbedtls_net_connect has none. Returns the fd. */
static es_err tcp_connect(const es_http_client *c, const es_url *u,
			  const char *url, int *fd_out, char *err, size_t errsz)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8];
	int fd = -1, gai, last = 0;
	es_err rc = ES_ERR_IO;

	snprintf(port, sizeof(port), "%d", u->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	gai = getaddrinfo(u->host, port, &hints, &res);
	if (gai != 0)
		return es_errf(ES_ERR_IO, err, errsz, "%s: cannot resolve %s: %s", url,
			       u->host, gai_strerror(gai));
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		struct timeval tv = { c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000 };
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
			r = poll(&pfd, 1, c->timeout_ms);
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
		es_errf(ES_ERR_IO, err, errsz, "%s: cannot connect to %s port %d: %s", url,
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
		return es_errf(ES_ERR_IO, err, errsz, "%s: TLS handshake timed out after %g s",
			       url, c->timeout_ms / 1000.0);
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

/* The TLS part of es_http_client_new: credentials, configuration. */
static es_err tls_setup(es_http_client *c, const es_http_opts *o, char *err,
			size_t errsz)
{
	int has_cert = o->cert_file && *o->cert_file;
	int has_key = o->key_file && *o->key_file;
	psa_status_t ps;
	char msg[160];
	es_err rc;
	int ret;

	ps = psa_crypto_init();
	if (ps != PSA_SUCCESS)
		return es_errf(ES_ERR_TLS, err, errsz, "psa_crypto_init failed (%d)", (int)ps);
	ret = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
				    (const unsigned char *)"es_http", 7);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, "TLS", "seeding the random generator", err,
			       errsz);
	if (o->ca_pem && *o->ca_pem) {
		if (mbedtls_x509_crt_parse(&c->ca, (const unsigned char *)o->ca_pem,
					   strlen(o->ca_pem) + 1) != 0)
			return es_errf(ES_ERR_INVAL, err, errsz, "ca: not a PEM certificate");
	} else if (!o->insecure_discovery) {
		if (!o->ca_file || !*o->ca_file)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "ca: no CA file given (the server's certificate "
				       "cannot be checked)");
		rc = load_crt(&c->ca, "ca", o->ca_file, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	if (has_cert != has_key)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s given without %s",
			       has_cert ? "cert" : "key", has_cert ? "key" : "cert");
	if (has_cert) {
		rc = load_crt(&c->cert, "cert", o->cert_file, err, errsz);
		if (rc != ES_OK)
			return rc;
		if (access(o->key_file, R_OK) != 0)
			return es_errf(ES_ERR_INVAL, err, errsz, "key file %s: %s",
				       o->key_file, strerror(errno));
		ret = mbedtls_pk_parse_keyfile(&c->key, o->key_file, NULL,
					       mbedtls_ctr_drbg_random, &c->drbg);
		if (ret) {
			mbedtls_strerror(ret, msg, sizeof(msg));
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "key file %s: not an unencrypted PEM private key: %s (-0x%04x)",
				       o->key_file, msg, (unsigned)-ret);
		}
		ret = mbedtls_pk_check_pair(&c->cert.pk, &c->key, mbedtls_ctr_drbg_random,
					    &c->drbg);
		if (ret)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "cert file %s and key file %s do not belong together "
				       "(the key is not the certificate's private key)",
				       o->cert_file, o->key_file);
	}
	ret = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT,
					  MBEDTLS_SSL_TRANSPORT_STREAM,
					  MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, "TLS", "configuration", err, errsz);
	mbedtls_ssl_conf_min_tls_version(&c->conf, MBEDTLS_SSL_VERSION_TLS1_2);
	if (o->insecure_discovery && !(o->ca_pem && *o->ca_pem)) {
		mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_NONE);
	} else {
		mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, NULL);
	}
	mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &c->drbg);
	mbedtls_ssl_conf_read_timeout(&c->conf, (uint32_t)c->timeout_ms);
	if (has_cert) {
		ret = mbedtls_ssl_conf_own_cert(&c->conf, &c->cert, &c->key);
		if (ret)
			return tls_err(ES_ERR_TLS, ret, "TLS", "client certificate", err, errsz);
	}
	ret = mbedtls_ssl_setup(&c->ssl, &c->conf);
	if (ret)
		return tls_err(ES_ERR_TLS, ret, "TLS", "setup", err, errsz);
	mbedtls_ssl_set_bio(&c->ssl, &c->net, bio_send, NULL, mbedtls_net_recv_timeout);
	return ES_OK;
}

es_err es_http_client_new(const es_http_opts *opts, es_http_client **out,
			  char *err, size_t errsz)
{
	es_http_client *c = NULL;
	es_err rc = ES_OK;

	if (!out)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_client_new: missing argument");
	*out = NULL;
	if (!opts)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_client_new: missing argument");
	c = calloc(1, sizeof(*c));
	if (!c)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	c->tls = opts->tls;
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : ES_HTTP_TIMEOUT_MS;
	c->resp_timeout_ms = c->timeout_ms;
	c->user_agent = opts->user_agent;
	mbedtls_net_init(&c->net);
	mbedtls_entropy_init(&c->entropy);
	mbedtls_ctr_drbg_init(&c->drbg);
	mbedtls_ssl_init(&c->ssl);
	mbedtls_ssl_config_init(&c->conf);
	mbedtls_x509_crt_init(&c->ca);
	mbedtls_x509_crt_init(&c->cert);
	mbedtls_pk_init(&c->key);
	if (c->tls)
		rc = tls_setup(c, opts, err, errsz);
	if (rc != ES_OK) {
		es_http_client_free(c);
		return rc;
	}
	*out = c;
	return ES_OK;
}

/* Closes the connection (TLS: close_notify first when it is healthy). */
static void disconnect(es_http_client *c, int notify)
{
	if (c->net.fd < 0)
		return;
	if (c->tls && notify && c->connected)
		(void)mbedtls_ssl_close_notify(&c->ssl);
	mbedtls_net_free(&c->net);
	if (c->tls)
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

static es_err connect_to(es_http_client *c, const es_url *u, const char *url,
			 char *err, size_t errsz)
{
	int fd = -1, ret;
	es_err rc;

	if (c->tls) {
		ret = mbedtls_ssl_set_hostname(&c->ssl, u->host);
		if (ret)
			return tls_err(ES_ERR_TLS, ret, url, "setting the server name", err,
				       errsz);
	}
	rc = tcp_connect(c, u, url, &fd, err, errsz);
	if (rc != ES_OK)
		return rc;
	c->net.fd = fd;
	c->connections++;
	if (c->tls) {
		rc = handshake(c, url, err, errsz);
		if (rc != ES_OK) {
			disconnect(c, 0);
			return rc;
		}
	}
	c->connected = 1;
	snprintf(c->host, sizeof(c->host), "%s", u->host);
	c->port = u->port;
	return ES_OK;
}

static es_err send_all(es_http_client *c, const char *p, size_t len,
		       const char *url, char *err, size_t errsz)
{
	while (len) {
		int ret;

		if (c->tls) {
			ret = mbedtls_ssl_write(&c->ssl, (const unsigned char *)p, len);
			if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE ||
			    ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
				continue;
			if (ret < 0)
				return tls_err(ES_ERR_IO, ret, url, "sending the request", err,
					       errsz);
		} else {
			ssize_t r = send(c->net.fd, p, len, MSG_NOSIGNAL);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return es_errf(ES_ERR_IO, err, errsz, "%s: sending the request: %s",
					       url, strerror(errno));
			ret = (int)r;
		}
		p += ret;
		len -= (size_t)ret;
	}
	return ES_OK;
}

/* Outcomes of conn_recv besides a byte count. */
#define RECV_EOF 0
#define RECV_TIMEOUT (-1)
#define RECV_ERROR (-2)

/* Reads up to cap bytes: their count, RECV_EOF when the server closed the
 * connection, RECV_TIMEOUT after timeout_ms without data, RECV_ERROR (err
 * set). */
static int conn_recv(es_http_client *c, char *buf, size_t cap, const char *url,
		     char *err, size_t errsz)
{
	for (;;) {
		if (c->tls) {
			int ret = mbedtls_ssl_read(&c->ssl, (unsigned char *)buf, cap);

			if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE ||
			    ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
				continue;
			if (ret == MBEDTLS_ERR_SSL_TIMEOUT)
				return RECV_TIMEOUT;
			if (ret == 0 || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ||
			    ret == MBEDTLS_ERR_NET_CONN_RESET)
				return RECV_EOF;
			if (ret < 0) {
				tls_err(ES_ERR_IO, ret, url, "reading the response", err, errsz);
				return RECV_ERROR;
			}
			return ret;
		} else {
			struct pollfd pfd = { c->net.fd, POLLIN, 0 };
			ssize_t r;
			int pr = poll(&pfd, 1, c->resp_timeout_ms);

			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0)
				return RECV_TIMEOUT;
			r = pr < 0 ? -1 : recv(c->net.fd, buf, cap, 0);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0 || (r < 0 && errno == ECONNRESET))
				return RECV_EOF;
			if (r < 0) {
				es_errf(ES_ERR_IO, err, errsz, "%s: reading the response: %s", url,
					strerror(errno));
				return RECV_ERROR;
			}
			return (int)r;
		}
	}
}

/* Reads one response; *nread counts the bytes received, *keep_alive says
 * whether the connection can carry the next request, *timed_out whether
 * the response did not come in time (ES_ERR_IO). */
static es_err read_resp(es_http_client *c, const char *url, es_http_resp *resp,
			int *keep_alive, size_t *nread, int *timed_out, char *err,
			size_t errsz)
{
	es_http_parser *p = NULL;
	char *buf = malloc(READ_CHUNK), why[320] = "";
	int eof = 0, extra = 0;
	es_err rc;

	*keep_alive = 0;
	*nread = 0;
	*timed_out = 0;
	/* mbedTLS reads the configuration's timeout at each read; the
	 * handshake keeps timeout_ms. */
	if (c->tls)
		mbedtls_ssl_conf_read_timeout(&c->conf, (uint32_t)c->resp_timeout_ms);
	rc = buf ? es_http_parser_new(ES_HTTP_MAX_BODY, &p) : ES_ERR_NOMEM;
	if (rc != ES_OK) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	while (rc == ES_OK && !es_http_parser_done(p)) {
		int n = conn_recv(c, buf, READ_CHUNK, url, err, errsz);
		size_t used = 0;

		if (n == RECV_ERROR) {
			rc = ES_ERR_IO;
			goto cleanup;
		}
		if (n == RECV_TIMEOUT) {
			int st = es_http_parser_status(p);

			*timed_out = 1;
			if (st)
				rc = es_errf(ES_ERR_IO, err, errsz,
					     "%s: the server answered HTTP %d but its response "
					     "did not end within %g s", url, st,
					     c->resp_timeout_ms / 1000.0);
			else
				rc = es_errf(ES_ERR_IO, err, errsz, "%s: no response within %g s",
					     url, c->resp_timeout_ms / 1000.0);
			goto cleanup;
		}
		if (n == RECV_EOF) {
			eof = 1;
			rc = es_http_parser_eof(p, why, sizeof(why));
			break;
		}
		*nread += (size_t)n;
		rc = es_http_parser_feed(p, buf, (size_t)n, &used, why, sizeof(why));
		if (used < (size_t)n)
			extra = 1;
	}
	if (rc != ES_OK) {
		es_errf(rc, err, errsz, "%s: %s", url, why);
		goto cleanup;
	}
	rc = es_http_parser_take(p, resp, keep_alive);
	if (rc != ES_OK) {
		es_errf(rc, err, errsz, "out of memory");
		goto cleanup;
	}
	/* bytes after the response were not asked for: the connection is in
	 * an unknown state */
	if (eof || extra)
		*keep_alive = 0;
cleanup:
	if (c->tls)
		mbedtls_ssl_conf_read_timeout(&c->conf, (uint32_t)c->timeout_ms);
	es_http_parser_free(p);
	free(buf);
	return rc;
}

es_err es_http_client_request(es_http_client *c, const char *method,
			      const char *url, const char *body, size_t len,
			      es_http_resp *resp, char *err, size_t errsz)
{
	es_url u;
	char *req = NULL, hosthdr[ES_ADDR_HOST_MAX + 16], ua[300] = "";
	int n, attempt;
	es_err rc;

	if (resp)
		memset(resp, 0, sizeof(*resp));
	if (!c || !method || !resp)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_client_request: missing argument");
	if (strcmp(method, "GET") && strcmp(method, "PUT") && strcmp(method, "POST") &&
	    strcmp(method, "DELETE"))
		return es_errf(ES_ERR_INVAL, err, errsz, "unsupported HTTP method %s", method);
	rc = es_url_parse(NULL, url, c->tls ? "https" : "http", &u, err, errsz);
	if (rc != ES_OK)
		return rc;
	snprintf(hosthdr, sizeof(hosthdr), u.ipv6 ? "[%s]:%d" : "%s:%d", u.host, u.port);
	if (c->user_agent)
		snprintf(ua, sizeof(ua), "User-Agent: %s\r\n", c->user_agent);
	n = asprintf(&req,
		     "%s %s HTTP/1.1\r\nHost: %s\r\n%s"
		     "Accept: application/json\r\n"
		     "%sContent-Length: %zu\r\n\r\n",
		     method, u.path, hosthdr, ua,
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
	    (strcmp(c->host, u.host) || c->port != u.port || !still_open(c)))
		disconnect(c, 1);
	/* A reused connection the server closed meanwhile fails before any byte
	 * of a response: then the request is sent once more on a new one. Only
	 * idempotent methods are retried (RFC 9110 section 9.2.2). */
	for (attempt = 0; attempt < 2; attempt++) {
		int reused = c->connected, keep_alive = 0, timed_out = 0;
		size_t nread = 0;

		if (!reused) {
			rc = connect_to(c, &u, url, err, errsz);
			if (rc != ES_OK)
				break;
		}
		rc = send_all(c, req, (size_t)n + (body ? len : 0), url, err, errsz);
		if (rc == ES_OK)
			rc = read_resp(c, url, resp, &keep_alive, &nread, &timed_out, err,
				       errsz);
		if (rc == ES_OK) {
			if (!keep_alive)
				disconnect(c, 1);
			break;
		}
		disconnect(c, 0);
		/* A timeout is no sign of a connection closed while idle. */
		if (!reused || nread || timed_out || strcmp(method, "POST") == 0 ||
		    rc == ES_ERR_NOMEM || rc == ES_ERR_TOOBIG)
			break;
	}
	free(req);
	return rc;
}

void es_http_client_set_timeout(es_http_client *c, int timeout_ms)
{
	if (!c)
		return;
	c->resp_timeout_ms = timeout_ms > 0 ? timeout_ms : c->timeout_ms;
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

es_err es_http_request(const es_http_opts *opts, const char *method,
		       const char *url, const char *body, size_t len,
		       es_http_resp *resp, char *err, size_t errsz)
{
	es_http_client *c = NULL;
	char inner[512] = "";
	es_url u;
	es_err rc;

	if (resp)
		memset(resp, 0, sizeof(*resp));
	if (!opts || !method || !resp)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_http_request: missing argument");
	rc = es_url_parse(NULL, url, opts->tls ? "https" : "http", &u, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_http_client_new(opts, &c, inner, sizeof(inner));
	if (rc != ES_OK)
		return es_errf(rc, err, errsz, "%s: %s", url, inner);
	rc = es_http_client_request(c, method, url, body, len, resp, err, errsz);
	es_http_client_free(c);
	return rc;
}
