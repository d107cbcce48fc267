/*
 * sync_tls.c - the sync client's TLS side (sync.h, sync_int.h): its
 * credential files, checked and re-read before every dial, the vhost built
 * from them, the check of the controller's certificate after the handshake,
 * the message of a TLS failure, and the record size it asks for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/ssl.h>

#include "es_log.h"
#include "es_pki.h"
#include "es_time.h"
#include "es_ws.h"
#include "sync/sync_int.h"

int __real_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf);
int __wrap_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf);

/*
 * Every client connection asks for records of at most
 * ES_SYNC_TLS_MAX_FRAGMENT bytes (RFC 6066 max_fragment_length), so that a
 * controller built with MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH holds small
 * record buffers for it (cmake/EsThirdParty.cmake), and so does this
 * agent. libwebsockets makes one mbedTLS configuration per connection and
 * offers no hook before its handshake starts, so this is set where mbedTLS
 * binds it to the connection: mbedtls_ssl_setup is wrapped at link time
 * (agent/sync/CMakeLists.txt).
 */
int __wrap_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf)
{
#if defined(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH)
	if (conf && mbedtls_ssl_conf_get_endpoint(conf) == MBEDTLS_SSL_IS_CLIENT)
		(void)mbedtls_ssl_conf_max_frag_len((mbedtls_ssl_config *)conf,
						    ES_SYNC_TLS_MFL_CODE);
#endif
	return __real_mbedtls_ssl_setup(ssl, conf);
}

/* Condition reasons of a bad file, by es_pki_file and es_pki_file_state. */
static const char *const bad_reasons[ES_PKI_NFILES][3] = {
	[ES_PKI_CERT] = { NULL, "CertFileMissing", "CertFileInvalid" },
	[ES_PKI_KEY] = { NULL, "KeyFileMissing", "KeyFileInvalid" },
	[ES_PKI_CA] = { NULL, "CAFileMissing", "CAFileInvalid" },
};

/* Records what the credentials are; logs a change (a problem at error). */
static void set_creds(es_sync *s, int ok, const char *reason, const char *msg)
{
	int changed = s->creds_ok != ok || strcmp(s->creds_msg, msg) != 0;

	s->creds_ok = ok;
	snprintf(s->creds_reason, sizeof(s->creds_reason), "%s", reason);
	snprintf(s->creds_msg, sizeof(s->creds_msg), "%s", msg);
	if (!ok)
		sync__set_error(s, msg, NULL);
	if (!changed)
		es_log_debug("sync", ok ? "credentials unchanged" : "credentials still unusable",
			     "reason", reason, NULL);
	else if (ok)
		es_log_info("sync", "credentials loaded", "detail", msg, NULL);
	else
		es_log_error("sync", "credentials unusable, running offline", "reason",
			     reason, "error", msg, NULL);
}

/* A vhost "sync" on s->ctx carrying the credential files. */
static struct lws_vhost *new_vhost(es_sync *s)
{
	struct lws_context_creation_info info;

	memset(&info, 0, sizeof(info));
	info.vhost_name = "sync";
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.protocols = sync__protocols;
	/* No WebSocket extension: PROTOCOL.md "Transport" says why there is
	 * no permessage-deflate. */
	info.extensions = NULL;
	info.client_ssl_ca_filepath = s->ca;
	info.client_ssl_cert_filepath = s->cert;
	info.client_ssl_private_key_filepath = s->key;
	info.user = s;
	/* The TLS session (its RFC 5077 ticket) is kept for the next dial, so
	 * a reconnect, also to a restarted controller, is an abbreviated
	 * handshake; kept as long as a controller accepts a ticket at most
	 * (tls-ticket-lifetime, 7 days), and dropped with the vhost when the
	 * credential files change. */
	info.tls_session_timeout = ES_SYNC_TLS_SESSION_KEEP_S;
	info.tls_session_cache_max = 4;
	return lws_create_vhost(s->ctx, &info);
}

int sync__tls_load(es_sync *s)
{
	const char *const paths[ES_PKI_NFILES] = { s->cert, s->key, s->ca };
	char msg[sizeof(s->creds_msg)], until[ES_TIME_RFC3339_LEN];
	const char *reason = NULL;
	struct lws_vhost *vh;
	es_pki_creds c;
	size_t used = 0;
	es_err rc;

	rc = es_pki_creds_check(s->cert, s->key, s->ca, time(NULL), &c);
	if (rc == ES_ERR_NOMEM) {
		sync__set_error(s, "credentials: out of memory", NULL);
		return -1;
	}
	if (rc != ES_OK) {
		msg[0] = '\0';
		for (int i = 0; i < ES_PKI_NFILES; i++) {
			if (c.state[i] == ES_PKI_FILE_OK || used >= sizeof(msg))
				continue;
			if (!reason)
				reason = bad_reasons[i][c.state[i]];
			used += (size_t)snprintf(msg + used, sizeof(msg) - used,
						 "%s%s %s: %s", used ? "; " : "",
						 es_pki_file_names[i], paths[i] ? paths[i] : "",
						 c.why[i]);
		}
		if (s->vh && s->vh_not_after > time(NULL)) {
			/* Files changed into a bad set: the ones loaded before
			 * still work (sync_renew.c); never down to none. The
			 * condition keeps saying what was loaded. */
			es_log_error("sync", "credential files unusable; dialling with "
				     "the ones loaded before", "reason", reason, "error",
				     msg, NULL);
			return 0;
		}
		set_creds(s, 0, reason, msg);
		return -1;
	}
	if (!s->vh || memcmp(c.digest, s->vh_digest, sizeof(s->vh_digest)) != 0) {
		vh = new_vhost(s);
		if (!vh) {
			snprintf(msg, sizeof(msg),
				 "libwebsockets could not build the TLS client from "
				 "cert %s, key %s, ca %s", s->cert, s->key, s->ca);
			set_creds(s, 0, "TLSSetupFailed", msg);
			return -1;
		}
		if (s->vh) {
			es_log_info("sync", "credential files changed, TLS client "
				    "rebuilt", NULL);
			lws_vhost_destroy(s->vh);
		}
		s->vh = vh;
		s->vh_not_after = c.cert_not_after;
		memcpy(s->vh_digest, c.digest, sizeof(s->vh_digest));
	}
	snprintf(msg, sizeof(msg), "cert %s (valid until %s), key %s, ca %s", s->cert,
		 es_time_rfc3339(c.cert_not_after, until), s->key, s->ca);
	set_creds(s, 1, "CredentialsLoaded", msg);
	return 0;
}

int sync__tls_check_peer(es_sync *s, struct lws *wsi)
{
	unsigned char *der = NULL;
	size_t len = 0;
	char why[512], msg[600];
	es_err rc;

	rc = es_ws_peer_cert(wsi, &der, &len);
	if (rc == ES_OK)
		rc = es_pki_check_server_name(der, len, s->u.host, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", rc == ES_ERR_NOMEM ? "out of memory"
			 : "its certificate could not be read");
	free(der);
	if (rc == ES_OK)
		return 0;
	snprintf(msg, sizeof(msg), "controller certificate refused: %s", why);
	sync__set_error(s, msg, NULL);
	s->peer_refused = 1;
	es_log_error("sync", "controller certificate refused", "url", s->url,
		     "reason", why, NULL);
	return -1;
}

/* Length of s without trailing white space. */
static int trimmed(const char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r')))
		n--;
	return (int)(n > 400 ? 400 : n);
}

void sync__tls_conn_error(es_sync *s, const char *in, char *why, size_t whysz)
{
	char now[ES_TIME_RFC3339_LEN];

	if (!in)
		in = "unknown";
	if (!strncmp(in, "conn fail: ", 11) && atoi(in + 11) > 0) {
		snprintf(why, whysz, "connection failed: %s", strerror(atoi(in + 11)));
		return;
	}
	/* lws_tls_client_confirm_peer_cert's text. The handshake was aborted
	 * (verification is required), so lws on mbedTLS no longer has the
	 * certificate to read its dates or names from. */
	if (!strncmp(in, "mbedtls connect ", 16))
		snprintf(why, whysz, "TLS handshake with the controller failed (%.*s)",
			 trimmed(in), in);
	else if (!strstr(in, "cert didn't look good"))
		snprintf(why, whysz, "connection failed: %.*s", trimmed(in), in);
	else if (strstr(in, "notyetvalid"))
		snprintf(why, whysz, "controller certificate not valid yet (its "
			 "notBefore is later than the host clock, %s): check the clock",
			 es_time_now_rfc3339(now));
	else if (strstr(in, "expired"))
		snprintf(why, whysz, "controller certificate expired (the host clock "
			 "says %s)", es_time_now_rfc3339(now));
	else if (strstr(in, "hostname"))
		snprintf(why, whysz, "controller certificate does not name %s, the "
			 "host dialled", s->u.host);
	else if (strstr(in, "invalidca"))
		snprintf(why, whysz, "controller certificate does not chain to a CA "
			 "in ca %s", s->ca);
	else
		snprintf(why, whysz, "controller certificate refused: %.*s",
			 trimmed(in), in);
}

int es_sync_credentials(const es_sync *s, const char **reason,
			const char **message)
{
	*reason = s->creds_reason;
	*message = s->creds_msg;
	return s->creds_ok;
}
