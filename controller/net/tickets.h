/*
 * tickets.h - TLS session tickets for the controller's listeners (RFC 5077;
 * libwebsockets 4.3 on mbedTLS speaks TLS 1.2 only), so that an agent that
 * reconnects, also after a controller restart or to another controller
 * given the same key file, makes an abbreviated handshake instead of a
 * full one (no certificate exchange, no signature).
 *
 * The key (a 4-byte key name and a 32-byte AES-256-GCM key) is read from a
 * file of 72 hexadecimal characters (name, then key; a trailing newline is
 * allowed). A missing file is created with a random key, mode 0600. Copy
 * the same file to every controller of a fleet.
 *
 * libwebsockets gives no hook between creating a connection's mbedTLS
 * configuration (one per connection, in SSL_new) and its first handshake
 * step, so the ticket callbacks are set where mbedTLS binds a
 * configuration to a connection: mbedtls_ssl_setup is wrapped at link time
 * (-Wl,--wrap=mbedtls_ssl_setup, set by this module's CMake target for
 * every program that links it). Only server-side configurations get them.
 *
 * A resumed session carries the client certificate it was made with (the
 * ticket holds it, MBEDTLS_SSL_KEEP_PEER_CERTIFICATE), so the identity
 * checks of server.h apply to it unchanged; a ticket is accepted for
 * lifetime seconds after the full handshake that issued it.
 *
 * Process-wide state, used from the server's event-loop thread only.
 */
#ifndef ES_CTRL_TICKETS_H
#define ES_CTRL_TICKETS_H

#include <stddef.h>
#include <stdint.h>
#include "es_err.h"

/* Longest ticket lifetime accepted, seconds (7 days). */
#define ES_TICKETS_LIFETIME_MAX (7u * 24 * 3600)

struct lws;

/*
 * Loads (or creates) the key file at path and turns tickets on for every
 * server-side TLS configuration made from now on; lifetime_s: how long a
 * ticket is accepted, 1 .. ES_TICKETS_LIFETIME_MAX. A second call replaces
 * the key. Errors (err names the file): ES_ERR_IO (cannot read or create
 * it), ES_ERR_INVAL (not 72 hex characters, or readable by group or
 * others), ES_ERR_TLS (mbedTLS refused the key), ES_ERR_NOMEM.
 */
es_err es_tickets_init(const char *path, uint32_t lifetime_s, char *err,
		       size_t errsz);

/* Keeps the key of the file active (mbedTLS would otherwise replace it with
 * a random one after lifetime_s). Call about once a second; cheap. No-op
 * when tickets are off. */
void es_tickets_tick(void);

/* Forgets which socket's handshake resumed (a new connection on fd). */
void es_tickets_forget(int fd);

/* 1 when the TLS handshake of the connection on socket fd was resumed
 * from a ticket, else 0; the mark is cleared. */
int es_tickets_take_resumed(int fd);

/* Turns tickets off for later connections and frees the key. */
void es_tickets_shutdown(void);

#endif
