/*
 * connerr.h - words for a failed attempt to reach the controller: what the
 * sync client logs and shows as sync.lastError when libwebsockets reports
 * LWS_CALLBACK_CLIENT_CONNECTION_ERROR.
 *
 * libwebsockets' own reason can mislead: a TLS handshake that dies because
 * the peer closed the connection is reported as a certificate that "didn't
 * look good ... CA is not trusted" (its mbedTLS wrapper maps "no
 * verification result" to that), and a name that did not resolve, for
 * want of an /etc/hosts or a resolver, as "Closed before conn". These
 * functions look at the socket and the name to say what happened.
 */
#ifndef ES_AGENT_SYNC_CONNERR_H
#define ES_AGENT_SYNC_CONNERR_H

#include <stddef.h>

/* What the peer of a TCP connection did (es_connerr_peer_state). */
typedef enum es_connerr_peer {
	ES_CONNERR_PEER_UNKNOWN = 0, /* no TCP socket, or TCP_INFO unavailable */
	ES_CONNERR_PEER_SENT,        /* it sent bytes (a TLS reply at least) */
	ES_CONNERR_PEER_SILENT,      /* connected, nothing received, still open */
	ES_CONNERR_PEER_CLOSED,      /* closed it (FIN) before sending anything */
	ES_CONNERR_PEER_RESET,       /* reset it (RST) before sending anything */
} es_connerr_peer;

/* resolve_rc of es_connerr_describe when the name was not looked up (glibc's
 * EAI_* codes are negative). */
#define ES_CONNERR_UNRESOLVED 1

/*
 * What the peer of the TCP socket fd did, from getsockopt(TCP_INFO)
 * (Linux: tcpi_state and tcpi_data_segs_in, Linux 4.6 and later). fd < 0,
 * a socket that is not TCP or an older kernel give ES_CONNERR_PEER_UNKNOWN.
 * Only meaningful for a socket that was connected: one that never was also
 * reads as closed.
 */
es_connerr_peer es_connerr_peer_state(int fd);

/*
 * Writes into out (outsz bytes, always terminated when outsz > 0) the reason
 * for one failed attempt, without the "connection failed: " prefix:
 * - lws_text "conn fail: N" (N an errno): strerror(N), e.g. "Connection
 *   refused";
 * - a TLS failure (lws_text names a certificate, TLS, SSL or mbedTLS) whose
 *   peer sent nothing (peer CLOSED or RESET): "the connection was closed
 *   (reset) before the controller sent anything; is it stopping?", since
 *   no certificate was ever checked;
 * - else, when resolve_rc is an EAI_* code (getaddrinfo(3) of host failed):
 *   "cannot resolve HOST: <gai_strerror>", with a hint about /etc/hosts when
 *   host is "localhost";
 * - else lws_text without trailing white space, or "unknown" when NULL or
 *   empty.
 * resolve_rc: 0 resolved, ES_CONNERR_UNRESOLVED not looked up, else the
 * getaddrinfo error. host may be NULL (then not named). Cannot fail.
 */
void es_connerr_describe(const char *lws_text, const char *host,
			 es_connerr_peer peer, int resolve_rc, char *out,
			 size_t outsz);

/*
 * es_connerr_describe with the facts gathered: the peer state of fd (the
 * attempt's socket, -1 when there is none) for a TLS failure, and, only when
 * neither an errno nor a TLS failure explains it and host is not a numeric
 * address, getaddrinfo(3) of host (a blocking lookup, as libwebsockets' own).
 * lws_text: libwebsockets' reason (may be NULL, need not be terminated
 * within len bytes; at most 255 bytes are read). Cannot fail.
 */
void es_connerr_explain(const char *lws_text, size_t len, const char *host,
			int fd, char *out, size_t outsz);

#endif
