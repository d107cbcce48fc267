/*
 * sync_renew.c - the sync client's certificate rotation (sync.h,
 * PROTOCOL.md "Renewal"):
 *  - renewal over the session: on a session whose welcome offers
 *    `certificate-renewal`, at renew-percent of the certificate's lifetime
 *    (plus jitter) a new key and a certificateRequest for it; the answer is
 *    written (enroll/renew.h) and the connection is closed between messages
 *    and redialled at once with the new files, so the outbox (sent until
 *    acknowledged) loses nothing and enforcement, which is local, never
 *    stops; failures retry with backoff;
 *  - the trust bundle of the welcome or the answer, written to the ca file
 *    when it differs and verifies the controller of the session;
 *  - the watch of the credential files: every ES_SYNC_CREDS_POLL_S their
 *    identity (device, inode, size, mtime, through symbolic links, so a
 *    Kubernetes volume's ..data swap counts) is compared; changed files
 *    that check out (es_pki_creds_check) and differ from the loaded ones
 *    are taken by a reconnect, a bad set is logged and the loaded one kept.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <psa/crypto.h>

#include "enroll/renew.h"
#include "es_enroll.h"
#include "es_json.h"
#include "es_log.h"
#include "es_pki.h"
#include "es_time.h"
#include "es_ws.h"
#include "sync/sync_int.h"

/* Longest wait for the answer to a certificateRequest, seconds. */
#define RENEW_ANSWER_S 30

static uint32_t rnd32(void)
{
	uint32_t v = 0;

	if (psa_crypto_init() != PSA_SUCCESS ||
	    psa_generate_random((uint8_t *)&v, sizeof(v)) != PSA_SUCCESS)
		v = (uint32_t)random();
	return v;
}

static void drop_key(es_sync *s)
{
	if (s->renew_key) {
		explicit_bzero(s->renew_key, strlen(s->renew_key));
		free(s->renew_key);
	}
	s->renew_key = NULL;
}

/* The next attempt after a failure (retry_after: the controller's). */
static void renew_failed(es_sync *s, const char *why, int64_t retry_after)
{
	int64_t d;
	char ds[24];

	drop_key(s);
	s->renew_sent_ms = 0;
	s->renew_failures++;
	d = es_renew_retry_s(s->renew_failures, rnd32(), retry_after);
	s->renew_due = time(NULL) + (time_t)d;
	snprintf(ds, sizeof(ds), "%lld", (long long)d);
	es_log_warn("sync", "certificate renewal failed, retrying", "error", why,
		    "retry_s", ds, NULL);
}

/* renew_due for the files the vhost was built from, once per digest. */
static void schedule(es_sync *s)
{
	es_renew_cert c;
	char err[256], at[ES_TIME_RFC3339_LEN];

	if (!s->vh || !memcmp(s->renew_digest, s->vh_digest, sizeof(s->renew_digest)))
		return;
	memcpy(s->renew_digest, s->vh_digest, sizeof(s->renew_digest));
	s->renew_failures = 0;
	s->renew_due = 0;
	if (es_renew_cert_read(s->cert, &c, err, sizeof(err)) != ES_OK) {
		es_log_warn("sync", "cannot read the certificate to schedule its "
			    "renewal", "error", err, NULL);
		return;
	}
	snprintf(s->cert_serial, sizeof(s->cert_serial), "%s", c.serial);
	s->renew_due = es_renew_due(&c, s->renew_percent, rnd32());
	if (s->renew_percent > 0)
		es_log_debug("sync", "certificate renewal scheduled", "serial", c.serial,
			     "at", es_time_rfc3339(s->renew_due, at), NULL);
}

/* Sends the certificateRequest when one is due on a ready session. */
static void maybe_request(es_sync *s)
{
	char err[256], *csr = NULL;
	int64_t now_ms = es_time_mono_ms();

	if (s->renew_sent_ms && now_ms - s->renew_sent_ms > RENEW_ANSWER_S * 1000LL)
		renew_failed(s, "no answer from the controller", 0);
	if (s->renew_percent <= 0 || !s->renew_offered || s->renew_unsupported ||
	    s->renew_sent_ms || s->state != ST_READY || s->close_code ||
	    !s->renew_due || time(NULL) < s->renew_due)
		return;
	drop_key(s);
	if (es_enroll_key_new(&s->renew_key, err, sizeof(err)) != ES_OK ||
	    es_enroll_csr_new(s->renew_key, s->node, &csr, err, sizeof(err)) != ES_OK) {
		renew_failed(s, err, 0);
		return;
	}
	if (sync__queue_msg(s, es_proto_cert_request(csr)) != ES_OK) {
		free(csr);
		renew_failed(s, "out of memory", 0);
		return;
	}
	free(csr);
	s->renew_sent_ms = now_ms ? now_ms : 1;
	es_log_info("sync", "renewing the certificate", "serial", s->cert_serial, NULL);
}

/* Closes the connection between messages and redials at once: the next
 * dial builds the TLS client from the files on disk (sync__tls_load). */
static void switch_creds(es_sync *s, const char *why)
{
	if (!s->wsi || s->close_code) {
		s->redial_now = s->state == ST_IDLE ? 0 : 1;
		return;
	}
	s->redial_now = 1;
	sync__fail_conn(s, -1, LWS_CLOSE_STATUS_GOINGAWAY, why);
}

/* The identity of the three files now, through symbolic links. */
static void file_sig(const es_sync *s, struct es_sync_filesig sig[ES_PKI_NFILES])
{
	const char *const paths[ES_PKI_NFILES] = { s->cert, s->key, s->ca };
	struct stat st;

	memset(sig, 0, sizeof(*sig) * ES_PKI_NFILES);
	for (int i = 0; i < ES_PKI_NFILES; i++) {
		if (stat(paths[i], &st) != 0)
			continue;
		sig[i].dev = (uint64_t)st.st_dev;
		sig[i].ino = (uint64_t)st.st_ino;
		sig[i].size = (int64_t)st.st_size;
		sig[i].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL +
				  st.st_mtim.tv_nsec;
	}
}

/* The watch (this file's header comment): once a TLS client is built,
 * changed files are checked and, when good and different, taken by a
 * reconnect (offline, the next dial takes them). */
static void watch(es_sync *s)
{
	struct es_sync_filesig sig[ES_PKI_NFILES];
	es_pki_creds c;
	char msg[sizeof(s->watch_bad)];
	size_t used = 0;

	/* A dial in progress is looked at again once it is through. */
	if (!s->vh || s->state == ST_CONNECTING)
		return;
	file_sig(s, sig);
	if (s->watch_set && !memcmp(sig, s->watch_sig, sizeof(sig)))
		return;
	memcpy(s->watch_sig, sig, sizeof(sig));
	s->watch_set = 1;
	if (es_pki_creds_check(s->cert, s->key, s->ca, time(NULL), &c) == ES_ERR_NOMEM)
		return;
	for (int i = 0; i < ES_PKI_NFILES && used < sizeof(msg); i++)
		if (c.state[i] != ES_PKI_FILE_OK)
			used += (size_t)snprintf(msg + used, sizeof(msg) - used, "%s%s: %s",
						 used ? "; " : "", es_pki_file_names[i],
						 c.why[i]);
	if (used) {
		/* Mid-update (a file written, its partner not yet) looks the
		 * same: logged once, looked at again when a file changes. */
		if (strcmp(msg, s->watch_bad) != 0)
			es_log_error("sync", "credential files changed on disk but "
				     "unusable; keeping the loaded ones", "error", msg, NULL);
		snprintf(s->watch_bad, sizeof(s->watch_bad), "%s", msg);
		return;
	}
	s->watch_bad[0] = '\0';
	if (!memcmp(c.digest, s->vh_digest, sizeof(c.digest)))
		return;
	es_log_info("sync", "credential files changed on disk; reconnecting with "
		    "them", "cert", s->cert, NULL);
	switch_creds(s, "credential files changed");
}

static void creds_timer(lws_sorted_usec_list_t *sul)
{
	es_sync *s = lws_container_of(sul, es_sync, sul_creds);

	if (s->stopping)
		return;
	schedule(s);
	watch(s);
	maybe_request(s);
	lws_sul_schedule(s->ctx, 0, &s->sul_creds, creds_timer,
			 ES_SYNC_CREDS_POLL_S * LWS_US_PER_SEC);
}

void sync__renew_start(es_sync *s)
{
	lws_sul_schedule(s->ctx, 0, &s->sul_creds, creds_timer, 1);
}

void sync__renew_conn_down(es_sync *s)
{
	s->renew_offered = 0;
	if (s->renew_sent_ms) {
		/* The answer, if any, is lost with the connection: ask again on
		 * the next session, after a short wait. */
		drop_key(s);
		s->renew_sent_ms = 0;
	}
}

/* Takes bundle (from the welcome or a certificate answer) into the ca
 * file when it differs and verifies this session's controller. */
static void take_bundle(es_sync *s, const char *bundle)
{
	unsigned char *der = NULL;
	size_t len = 0;
	char err[300];
	int changed = 0;

	if (!bundle || !*bundle)
		return;
	if (es_ws_peer_cert(s->wsi, &der, &len) != ES_OK) {
		der = NULL;
		len = 0;
	}
	if (es_renew_bundle_check(bundle, der, len, err, sizeof(err)) != ES_OK) {
		es_log_error("sync", "trust bundle from the controller refused", "error",
			     err, NULL);
	} else if (es_renew_bundle_write(s->ca, bundle, &changed, err, sizeof(err)) != ES_OK) {
		es_log_error("sync", "cannot write the trust bundle", "error", err, NULL);
	} else if (changed) {
		es_log_info("sync", "trust bundle updated from the controller; used from "
			    "the next connect", "ca", s->ca, NULL);
	}
	free(der);
}

void sync__renew_on_welcome(es_sync *s, const cJSON *welcome)
{
	s->renew_offered = es_proto_has_capability(welcome, ES_PROTO_CAP_RENEWAL);
	if (!s->renew_offered)
		return;
	s->renew_unsupported = 0;
	take_bundle(s, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		welcome, "trustBundle")));
}

void sync__renew_on_certificate(es_sync *s, const cJSON *msg)
{
	const char *crt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
							"certificate"));
	const char *serial = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
							"serial"));
	char err[300];

	if (!s->renew_sent_ms || !s->renew_key) {
		es_log_warn("sync", "certificate from the controller without a "
			    "request; ignored", NULL);
		return;
	}
	if (es_renew_install(s->cert, s->key, crt, s->renew_key, err, sizeof(err)) != ES_OK) {
		renew_failed(s, err, 0);
		return;
	}
	drop_key(s);
	s->renew_sent_ms = 0;
	s->renew_failures = 0;
	es_log_info("sync", "certificate renewed; reconnecting with it", "serial",
		    s->cert_serial, "newSerial", serial, NULL);
	take_bundle(s, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
							"caBundle")));
	/* The watch takes the new files now rather than a poll later. */
	s->watch_set = 0;
	watch(s);
}

void sync__renew_on_refused(es_sync *s, const cJSON *msg)
{
	const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
							"reason"));
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg,
							"message"));
	int64_t after = 0;
	char why[300];

	es_json_get_int(msg, "certificateRefused", "retryAfterSeconds", 0, 1,
			ES_PROTO_RETRY_AFTER_MAX_S, &after, NULL, 0);
	snprintf(why, sizeof(why), "%s: %s", reason ? reason : "", m ? m : "");
	if (reason && (!strcmp(reason, "NotSigning") || !strcmp(reason, "NotIssuedHere") ||
		       !strcmp(reason, "Revoked"))) {
		/* This controller will not renew this certificate: the files
		 * are watched, so one renewed elsewhere is still taken. */
		drop_key(s);
		s->renew_sent_ms = 0;
		s->renew_offered = 0;
		es_log_warn("sync", "the controller does not renew this certificate",
			    "error", why, NULL);
		return;
	}
	renew_failed(s, why, after);
}

void sync__renew_unknown_type(es_sync *s)
{
	if (!s->renew_sent_ms)
		return;
	drop_key(s);
	s->renew_sent_ms = 0;
	s->renew_unsupported = 1;
	es_log_warn("sync", "the controller does not know certificateRequest; not "
		    "renewing over the session (the files are still watched)", NULL);
}

void sync__renew_free(es_sync *s)
{
	drop_key(s);
}
