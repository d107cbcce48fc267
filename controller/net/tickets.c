/*
 * tickets.c - TLS session tickets with a key from a file (tickets.h).
 */
#include "net/tickets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/ssl_ticket.h>

#define NAME_LEN 4
#define KEY_LEN 32
#define HEX_LEN (2 * (NAME_LEN + KEY_LEN))

static struct {
	int on;
	uint32_t lifetime;
	time_t armed;           /* when the file's key was last made active */
	unsigned char name[NAME_LEN], key[KEY_LEN];
	mbedtls_ssl_ticket_context tctx;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	unsigned char *resumed;  /* one byte per socket number */
	size_t nresumed;
} g;

int __real_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf);
int __wrap_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf);

static void mark_resumed(mbedtls_ssl_config *conf)
{
	const mbedtls_ssl_context *ssl = mbedtls_ssl_conf_get_user_data_p(conf);
	const mbedtls_net_context *bio;
	unsigned char *n;
	size_t fd;

	if (!ssl || !(bio = ssl->MBEDTLS_PRIVATE(p_bio)) || bio->fd < 0)
		return;
	fd = (size_t)bio->fd;
	if (fd >= g.nresumed) {
		size_t cap = fd + 1024;

		n = realloc(g.resumed, cap);
		if (!n)
			return;
		memset(n + g.nresumed, 0, cap - g.nresumed);
		g.resumed = n;
		g.nresumed = cap;
	}
	g.resumed[fd] = 1;
}

/* mbedtls_ssl_ticket_write_t and _parse_t with p_ticket the connection's
 * configuration (so a resumption is known per connection). */
static int ticket_write(void *p, const mbedtls_ssl_session *session,
			unsigned char *start, const unsigned char *end,
			size_t *tlen, uint32_t *lifetime)
{
	(void)p;
	if (!g.on)
		return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
	return mbedtls_ssl_ticket_write(&g.tctx, session, start, end, tlen, lifetime);
}

static int ticket_parse(void *p, mbedtls_ssl_session *session,
			unsigned char *buf, size_t len)
{
	int rc;

	if (!g.on)
		return MBEDTLS_ERR_SSL_INVALID_MAC;
	rc = mbedtls_ssl_ticket_parse(&g.tctx, session, buf, len);
	if (rc == 0)
		mark_resumed(p);
	return rc;
}

int __wrap_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf)
{
	/* libwebsockets' wrapper gives every connection a configuration of
	 * its own (ssl_pm_new), so setting it here touches no other one. */
	if (g.on && conf && mbedtls_ssl_conf_get_endpoint(conf) == MBEDTLS_SSL_IS_SERVER) {
		mbedtls_ssl_config *c = (mbedtls_ssl_config *)conf;

		mbedtls_ssl_conf_set_user_data_p(c, ssl);
		mbedtls_ssl_conf_session_tickets_cb(c, ticket_write, ticket_parse, c);
	}
	return __real_mbedtls_ssl_setup(ssl, conf);
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Creates path with a random key, mode 0600; EEXIST is not an error (a
 * concurrent creator won: its file is read). */
static es_err create_file(const char *path, char *err, size_t errsz)
{
	unsigned char raw[NAME_LEN + KEY_LEN];
	char hex[HEX_LEN + 2];
	int fd;
	es_err rc = ES_OK;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return es_errf(ES_ERR_IO, err, errsz,
			       "tls-ticket-key %s: no random bytes for a new key", path);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	hex[HEX_LEN] = '\n';
	hex[HEX_LEN + 1] = '\0';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? ES_OK :
		       es_errf(ES_ERR_IO, err, errsz, "tls-ticket-key %s: cannot create: %s",
			       path, strerror(errno));
	if (write(fd, hex, HEX_LEN + 1) != HEX_LEN + 1 || fsync(fd) != 0)
		rc = es_errf(ES_ERR_IO, err, errsz, "tls-ticket-key %s: cannot write: %s",
			     path, strerror(errno));
	close(fd);
	if (rc != ES_OK)
		unlink(path);
	memset(raw, 0, sizeof(raw));
	memset(hex, 0, sizeof(hex));
	return rc;
}

static es_err read_file(const char *path, unsigned char *out, char *err,
			size_t errsz)
{
	char buf[HEX_LEN + 4];
	struct stat st;
	ssize_t n;
	int fd;
	es_err rc = ES_OK;

	/* Followed when a symbolic link: a Kubernetes Secret volume mounts
	 * each key as one; the mode checked is the file's. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return es_errf(ES_ERR_IO, err, errsz, "tls-ticket-key %s: cannot open: %s",
			       path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "tls-ticket-key %s: not a regular file", path);
		goto cleanup;
	}
	/* The owner and, as a Secret volume with defaultMode 0440 gives it,
	 * the group may read; nobody else may read or write. */
	if (st.st_mode & 027) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "tls-ticket-key %s: mode %03o lets %s the key; chmod 600 "
			     "it (0440 for a group)", path, (unsigned)(st.st_mode & 0777),
			     st.st_mode & 007 ? "others at" : "the group write");
		goto cleanup;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "tls-ticket-key %s: cannot read: %s",
			     path, strerror(errno));
		goto cleanup;
	}
	while (n > HEX_LEN && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n != HEX_LEN) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "tls-ticket-key %s: expected %d hexadecimal characters "
			     "(4-byte key name, 32-byte key)", path, HEX_LEN);
		goto cleanup;
	}
	for (int i = 0; i < HEX_LEN / 2; i++) {
		int hi = hexval(buf[2 * i]), lo = hexval(buf[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "tls-ticket-key %s: character %d is not hexadecimal",
				     path, hi < 0 ? 2 * i + 1 : 2 * i + 2);
			goto cleanup;
		}
		out[i] = (unsigned char)(hi << 4 | lo);
	}
cleanup:
	memset(buf, 0, sizeof(buf));
	close(fd);
	return rc;
}

void es_tickets_shutdown(void)
{
	if (g.on) {
		mbedtls_ssl_ticket_free(&g.tctx);
		mbedtls_ctr_drbg_free(&g.drbg);
		mbedtls_entropy_free(&g.entropy);
	}
	free(g.resumed);
	memset(&g, 0, sizeof(g));
}

es_err es_tickets_init(const char *path, uint32_t lifetime_s, char *err,
		       size_t errsz)
{
	unsigned char raw[NAME_LEN + KEY_LEN];
	es_err rc;

	if (!path || !*path || lifetime_s < 1 || lifetime_s > ES_TICKETS_LIFETIME_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "tls-ticket-key: no file, or lifetime not in 1..%u s",
			       ES_TICKETS_LIFETIME_MAX);
	rc = create_file(path, err, errsz);
	if (rc == ES_OK)
		rc = read_file(path, raw, err, errsz);
	if (rc != ES_OK)
		return rc;
	es_tickets_shutdown();
	mbedtls_entropy_init(&g.entropy);
	mbedtls_ctr_drbg_init(&g.drbg);
	mbedtls_ssl_ticket_init(&g.tctx);
	g.on = 1;
	memcpy(g.name, raw, NAME_LEN);
	memcpy(g.key, raw + NAME_LEN, KEY_LEN);
	memset(raw, 0, sizeof(raw));
	g.lifetime = lifetime_s;
	if (mbedtls_ctr_drbg_seed(&g.drbg, mbedtls_entropy_func, &g.entropy,
				  (const unsigned char *)"edgesync-tickets", 16) != 0 ||
	    mbedtls_ssl_ticket_setup(&g.tctx, mbedtls_ctr_drbg_random, &g.drbg,
				     MBEDTLS_CIPHER_AES_256_GCM, lifetime_s) != 0 ||
	    mbedtls_ssl_ticket_rotate(&g.tctx, g.name, NAME_LEN, g.key, KEY_LEN,
				      lifetime_s) != 0) {
		es_tickets_shutdown();
		return es_errf(ES_ERR_TLS, err, errsz,
			       "tls-ticket-key %s: mbedTLS refused the key", path);
	}
	g.armed = time(NULL);
	return ES_OK;
}

void es_tickets_tick(void)
{
	time_t now;

	if (!g.on)
		return;
	now = time(NULL);
	/* Before mbedTLS's own rotation (after lifetime) would swap in a
	 * random key: make the file's key active again, in the other slot. */
	if (now - g.armed < (time_t)(g.lifetime / 2) && now >= g.armed)
		return;
	if (mbedtls_ssl_ticket_rotate(&g.tctx, g.name, NAME_LEN, g.key, KEY_LEN,
				      g.lifetime) == 0)
		g.armed = now;
}

void es_tickets_forget(int fd)
{
	if (fd >= 0 && (size_t)fd < g.nresumed)
		g.resumed[fd] = 0;
}

int es_tickets_take_resumed(int fd)
{
	int r = 0;

	if (fd >= 0 && (size_t)fd < g.nresumed) {
		r = g.resumed[fd];
		g.resumed[fd] = 0;
	}
	return r;
}
