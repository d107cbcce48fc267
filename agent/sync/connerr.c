/*
 * connerr.c - words for a failed attempt to reach the controller (see
 * connerr.h).
 */
#define _GNU_SOURCE
#include "sync/connerr.h"

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/tcp.h>

/* TCP states of tcpi_state (the kernel's TCP_ESTABLISHED and TCP_CLOSE;
 * the uapi headers do not export them). */
#define TCPS_ESTABLISHED 1
#define TCPS_CLOSE 7
#define TCPS_CLOSE_WAIT 8

#define TEXT_MAX 255

es_connerr_peer es_connerr_peer_state(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (fd < 0)
		return ES_CONNERR_PEER_UNKNOWN;
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_data_segs_in) +
			  sizeof(ti.tcpi_data_segs_in))
		return ES_CONNERR_PEER_UNKNOWN;
	/* Segments with a payload (a FIN alone counts as a received byte in
	 * tcpi_bytes_received, not here). */
	if (ti.tcpi_data_segs_in > 0)
		return ES_CONNERR_PEER_SENT;
	switch (ti.tcpi_state) {
	case TCPS_ESTABLISHED:
		return ES_CONNERR_PEER_SILENT;
	case TCPS_CLOSE_WAIT:
		return ES_CONNERR_PEER_CLOSED;
	case TCPS_CLOSE:
		return ES_CONNERR_PEER_RESET;
	default:
		return ES_CONNERR_PEER_UNKNOWN;
	}
}

/* libwebsockets' "conn fail: N" with N an errno; returns N or 0. */
static int conn_errno(const char *t)
{
	char *end;
	long n;

	if (strncmp(t, "conn fail: ", 11) != 0)
		return 0;
	n = strtol(t + 11, &end, 10);
	return n > 0 && n < 4096 && end != t + 11 ? (int)n : 0;
}

/* A reason from the TLS layer (its certificate check or handshake). */
static int tls_text(const char *t)
{
	return strcasestr(t, "cert") || strcasestr(t, "tls") ||
	       strcasestr(t, "ssl") || strcasestr(t, "x509");
}

void es_connerr_describe(const char *lws_text, const char *host,
			 es_connerr_peer peer, int resolve_rc, char *out,
			 size_t outsz)
{
	const char *t = lws_text && *lws_text ? lws_text : "unknown";
	size_t n;
	int e;

	if (!out || outsz == 0)
		return;
	if ((e = conn_errno(t)) != 0) {
		snprintf(out, outsz, "%s", strerror(e));
		return;
	}
	if (tls_text(t) && (peer == ES_CONNERR_PEER_CLOSED ||
			    peer == ES_CONNERR_PEER_RESET)) {
		snprintf(out, outsz, "the connection was %s before the controller "
			 "sent anything; is it stopping?",
			 peer == ES_CONNERR_PEER_RESET ? "reset" : "closed");
		return;
	}
	if (resolve_rc != 0 && resolve_rc != ES_CONNERR_UNRESOLVED) {
		snprintf(out, outsz, "cannot resolve %s: %s%s", host ? host : "the host",
			 gai_strerror(resolve_rc),
			 host && !strcasecmp(host, "localhost")
				 ? " (no localhost line in /etc/hosts?)" : "");
		return;
	}
	snprintf(out, outsz, "%s", t);
	n = strlen(out);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' ||
			 out[n - 1] == ' ' || out[n - 1] == '\t'))
		out[--n] = '\0';
}

/* 1 when host is an IPv4 or IPv6 literal (nothing to resolve). */
static int numeric_host(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 ||
	       inet_pton(AF_INET6, host, buf) == 1;
}

void es_connerr_explain(const char *lws_text, size_t len, const char *host,
			int fd, char *out, size_t outsz)
{
	char t[TEXT_MAX + 1] = "";
	es_connerr_peer peer = ES_CONNERR_PEER_UNKNOWN;
	int rc = ES_CONNERR_UNRESOLVED;

	if (lws_text) {
		len = strnlen(lws_text, len < TEXT_MAX ? len : TEXT_MAX);
		memcpy(t, lws_text, len);
		t[len] = '\0';
	}
	if (conn_errno(t) == 0) {
		if (tls_text(t))
			peer = es_connerr_peer_state(fd);
		if (!tls_text(t) && host && *host && !numeric_host(host)) {
			struct addrinfo hints, *res = NULL;

			memset(&hints, 0, sizeof(hints));
			hints.ai_family = AF_UNSPEC;
			hints.ai_socktype = SOCK_STREAM;
			rc = getaddrinfo(host, NULL, &hints, &res);
			if (res)
				freeaddrinfo(res);
		}
	}
	es_connerr_describe(t, host, peer, rc, out, outsz);
}
