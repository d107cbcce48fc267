/*
 * sync_msg.c - the sync client's messages (sync.h; proto/PROTOCOL.md):
 * hello, the controller's welcome, desired, ack, resync, ping and error,
 * and building the reports sent from the outbox (sync_int.h has the
 * invariants they keep).
 */
#include <stdlib.h>
#include <string.h>

#include "es_json.h"
#include "es_kpatch.h"
#include "es_log.h"
#include "es_mpatch.h"
#include "es_time.h"
#include "runtime/heap.h"
#include "sync/sync_int.h"

/* Keeps the highest acknowledged seq, also in the store ("acked_seq") so
 * /v1/state shows it across restarts. */
static void set_acked(es_sync *s, int64_t seq)
{
	if (seq == s->last_acked_seq)
		return;
	s->last_acked_seq = seq;
	if (es_store_set_int(s->st, "acked_seq", seq) != ES_OK)
		es_log_warn("sync", "cannot record the acknowledged seq", NULL);
}

/* Builds the wire text of a row never sent. *snapshot says which kind of
 * state report it became. Returns a malloc'd string or NULL (err set). */
static char *build_report(es_sync *s, const es_outbox_row *row, int *snapshot,
			  char *err, size_t errsz)
{
	cJSON *doc = NULL, *base = NULL, *body = NULL, *msg = NULL;
	const char *type = "event";
	int64_t base_seq = 0;
	char t[ES_TIME_RFC3339_LEN], *text = NULL;
	es_err rc;

	*snapshot = 0;
	rc = es_json_parse(row->doc, strlen(row->doc), ES_JSON_MAX_DEPTH, &doc,
			   err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if (row->is_state) {
		type = "snapshot";
		if (s->snapshot_sent &&
		    es_store_base_get(s->st, &base_seq, &base) == ES_OK) {
			/* Version 2: a keyed change (es_kpatch.h); 1: RFC 7386.
			 * A state a keyed change cannot express (a member
			 * named "$...") goes whole, as a snapshot. */
			rc = s->proto == 2 ? es_kpatch_diff(base, doc, &body) :
					     es_mpatch_diff(base, doc, &body);
			if (rc == ES_OK)
				type = s->proto == 2 ? "delta" : "patch";
			else if (rc != ES_ERR_INVAL || s->proto != 2) {
				es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
				goto cleanup;
			}
		}
		if (!body) {
			base_seq = 0;
			body = doc;
			doc = NULL;
			*snapshot = 1;
		}
	} else {
		body = doc;
		doc = NULL;
	}
	msg = es_proto_report(row->seq, es_time_now_rfc3339(t), type, base_seq, body);
	body = NULL;
	if (!msg || !(text = es_json_print(msg)))
		es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
cleanup:
	cJSON_Delete(doc);
	cJSON_Delete(base);
	cJSON_Delete(body);
	cJSON_Delete(msg);
	return text;
}

int sync__send_next_report(es_sync *s, struct lws *wsi)
{
	es_outbox_row row;
	char err[256] = "", seqs[24];
	char *text = NULL;
	int snapshot = 0, rv = 0, built = 0;
	es_err rc;

	memset(&row, 0, sizeof(row));
	rc = es_store_outbox_next(s->st, s->sent_after, &row);
	if (rc == ES_ERR_NOTFOUND)
		return 0;
	if (rc != ES_OK) {
		es_log_error("sync", "reading the outbox failed", "error",
			     es_strerror(rc), NULL);
		return 0;
	}
	if (row.is_state && s->state_inflight)
		goto cleanup;
	if (row.wire) {
		text = strdup(row.wire);
		if (!text)
			goto cleanup;
	} else {
		text = build_report(s, &row, &snapshot, err, sizeof(err));
		built = row.is_state;
		if (!text) {
			snprintf(seqs, sizeof(seqs), "%lld", (long long)row.seq);
			es_log_error("sync", "cannot build report", "seq", seqs,
				     "error", err, NULL);
			goto cleanup;
		}
		rc = es_store_outbox_mark_sent(s->st, row.seq, text);
		if (rc != ES_OK) {
			es_log_error("sync", "recording a sent report failed",
				     "error", es_strerror(rc), NULL);
			goto cleanup;
		}
	}
	if (es_ws_send_json_text(wsi, text, strlen(text), s->deflate) != 0) {
		sync__set_error(s, "write failed", NULL);
		rv = -1;
		goto cleanup;
	}
	es_agent_metrics_report_sent(s->metrics, row.seq);
	/* A report is a sign of life, and its ack one back: the next ping
	 * is due a heartbeat later (PROTOCOL.md "Liveness"). */
	s->last_ping_ms = es_time_mono_ms();
	s->sent_after = row.seq;
	if (row.is_state)
		s->state_inflight = row.seq;
	if (snapshot)
		s->snapshot_sent = 1;
	lws_callback_on_writable(wsi);
cleanup:
	free(text);
	es_outbox_row_free(&row);
	/* Building a state report parsed the state and its patch base and
	 * diffed them: several times the text's size, now free. */
	if (built)
		es_heap_trim();
	return rv;
}

void sync__send_hello(es_sync *s)
{
	int64_t rv = 0, next = 1;
	cJSON *labels, *msg, *caps;
	char stream[64];

	es_store_get_int(s->st, "desired_rv", 0, &rv);
	es_store_get_int(s->st, "next_seq", 1, &next);
	/* Without its stream id the hello is an older agent's: the controller
	 * keeps one cursor for the node. */
	if (es_store_stream_id(s->st, stream, sizeof(stream)) != ES_OK) {
		es_log_warn("sync", "no report stream id in the agent database; "
			    "hello without streamId", NULL);
		stream[0] = '\0';
	}
	labels = cJSON_Duplicate(s->labels, 1);
	if (!labels) {
		sync__fail_conn(s, -1, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION,
				"out of memory");
		return;
	}
	msg = es_proto_hello(s->node, s->agent_version, s->boot_id, labels, rv,
			     next < 1 ? 1 : next, stream);
	if (msg && s->proto_offer == 2 &&
	    es_proto_make_v2(msg, s->deflate_offer) != ES_OK) {
		cJSON_Delete(msg);
		msg = NULL;
	}
	if (msg && !cJSON_GetObjectItemCaseSensitive(msg, "capabilities")) {
		caps = cJSON_AddArrayToObject(msg, "capabilities");
		if (!caps ||
		    !cJSON_AddItemToArray(caps, cJSON_CreateString("CollectorConfig")) ||
		    !cJSON_AddItemToArray(caps, cJSON_CreateString("merge-patch"))) {
			cJSON_Delete(msg);
			msg = NULL;
		}
	}
	if (sync__queue_msg(s, msg) != ES_OK)
		sync__fail_conn(s, -1, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION,
				"out of memory");
}

static void on_welcome(es_sync *s, const cJSON *msg)
{
	int64_t acked = 0, hb = ES_PROTO_HEARTBEAT_S, next = 1;
	char a[24];

	s->refused = 0;
	es_json_get_int(msg, "welcome", "ackedSeq", 0, 0, ES_JSON_MAX_INT, &acked,
			NULL, 0);
	if (es_json_get_int(msg, "welcome", "heartbeatSeconds", 0, 1, 3600, &hb,
			    NULL, 0) != ES_OK)
		hb = ES_PROTO_HEARTBEAT_S;
	s->heartbeat_s = (int)hb;
	if (es_store_outbox_ack(s->st, acked) != ES_OK) {
		sync__proto_fail(s, ES_PC_INTERNAL, "agent database: acknowledging reports failed");
		return;
	}
	es_store_get_int(s->st, "next_seq", 1, &next);
	if (acked >= next) {
		snprintf(a, sizeof(a), "%lld", (long long)acked);
		es_log_warn("sync", "controller holds newer reports than this agent "
			    "made; continuing after them", "ackedSeq", a, NULL);
		es_store_set_int(s->st, "next_seq", acked + 1);
	}
	/* The welcome says the version of the session (absent: 1, an older
	 * controller); compression only when both sides announced it. */
	s->proto = es_proto_version_of(msg) == 2 && s->proto_offer == 2 ? 2 : 1;
	s->deflate = s->proto == 2 && s->deflate_offer &&
		     es_proto_has_capability(msg, ES_PROTO_CAP_DEFLATE);
	s->rx.inflate = s->deflate;
	s->q.deflate = s->deflate;
		set_acked(s, acked);
	es_agent_metrics_acked(s->metrics, acked);
	es_agent_metrics_synced(s->metrics, time(NULL));
	s->state = ST_READY;
	s->last_connected = time(NULL);
	s->last_error[0] = '\0';
	s->sent_after = 0;
	s->state_inflight = 0;
	s->snapshot_sent = 0;
	s->session_acked = 0;
	s->last_ping_ms = es_time_mono_ms();
	snprintf(a, sizeof(a), "%lld", (long long)acked);
	es_log_info("sync", "connected", "url", s->url, "ackedSeq", a, NULL);
	sync__renew_on_welcome(s, msg);
	if (s->hooks.queue_state)
		s->hooks.queue_state(s->hooks.user);
	lws_callback_on_writable(s->wsi);
}

/*
 * Desired state never goes back (PROTOCOL.md, "Desired state"): a change set
 * at the version held is a duplicate, one below it is old; neither is
 * applied, and the answer acknowledges the version held. A full list is the
 * controller's whole state and is followed, but a lower version than the
 * one held is said out loud.
 */
static void desired_order_log(int full, int64_t rv, int64_t held)
{
	char a[24], b[24];

	snprintf(a, sizeof(a), "%lld", (long long)rv);
	snprintf(b, sizeof(b), "%lld", (long long)held);
	if (full)
		es_log_warn("sync", "full desired list older than the state held "
			    "(the controller's store was replaced or restored?); "
			    "following the controller", "resourceVersion", a,
			    "heldResourceVersion", b, NULL);
	else if (rv < held)
		es_log_warn("sync", "desired change set older than the state held, "
			    "ignored", "resourceVersion", a, "heldResourceVersion",
			    b, NULL);
	else
		es_log_debug("sync", "desired change set at the version held, "
			     "nothing to apply", "resourceVersion", a, NULL);
}

static void on_desired(es_sync *s, const cJSON *msg)
{
	int64_t rv = 0, held = 0;
	int more = 0, full = 0;
	char err[160];
	es_err rc;

	es_json_get_int(msg, "desired", "resourceVersion", 0, 0, ES_JSON_MAX_INT,
			&rv, NULL, 0);
	es_json_get_bool(msg, "desired", "more", 0, &more, NULL, 0);
	es_json_get_bool(msg, "desired", "full", 0, &full, NULL, 0);
	es_store_get_int(s->st, "desired_rv", 0, &held);
	rc = es_store_desired_commit(s->st, msg);
	if (rc == ES_ERR_CONFLICT) {
		desired_order_log(0, rv, held);
		if (!more)
			sync__queue_msg(s, es_proto_desired_ack(held));
		return;
	}
	if (rc == ES_OK && full && !more && rv < held)
		desired_order_log(1, rv, held);
	if (rc == ES_ERR_INVAL) {
		sync__proto_fail(s, ES_PC_INVALID, "desired.objects: an object without kind or metadata.name");
		return;
	}
	if (rc != ES_OK) {
		snprintf(err, sizeof(err), "agent database: %s", es_strerror(rc));
		sync__proto_fail(s, ES_PC_INTERNAL, err);
		return;
	}
	if (more)
		return;
	sync__queue_msg(s, es_proto_desired_ack(rv));
	es_agent_metrics_synced(s->metrics, time(NULL));
	sync__reconcile_after_ack(s);
}

void sync__on_message(es_sync *s, const char *buf, size_t len)
{
	es_msg_type type = ES_MSG_UNKNOWN;
	es_proto_code code = ES_PC_INTERNAL;
	cJSON *msg = NULL;
	char err[256] = "";
	const char *c = NULL, *m = NULL;
	int64_t seq = 0;
	es_err rc;

	rc = es_proto_decode(buf, len, &type, &msg, &code, err, sizeof(err));
	if (rc != ES_OK) {
		sync__proto_fail(s, rc == ES_ERR_PROTO ? code : ES_PC_INTERNAL,
				 rc == ES_ERR_PROTO ? err : "out of memory");
		return;
	}
	if (s->state == ST_HANDSHAKING && type != ES_MSG_WELCOME && type != ES_MSG_ERROR) {
		snprintf(err, sizeof(err), "%s before welcome", es_proto_type_name(type));
		sync__proto_fail(s, ES_PC_PROTOCOL, err);
		goto cleanup;
	}
	switch (type) {
	case ES_MSG_WELCOME:
		if (s->state != ST_HANDSHAKING)
			sync__proto_fail(s, ES_PC_PROTOCOL, "a second welcome");
		else
			on_welcome(s, msg);
		break;
	case ES_MSG_DESIRED:
		on_desired(s, msg);
		break;
	case ES_MSG_ACK:
		es_json_get_int(msg, "ack", "seq", 1, 0, ES_JSON_MAX_INT, &seq, NULL, 0);
		if (es_store_outbox_ack(s->st, seq) != ES_OK) {
			sync__proto_fail(s, ES_PC_INTERNAL, "agent database: acknowledging reports failed");
			break;
		}
		if (seq > s->last_acked_seq)
			set_acked(s, seq);
		es_agent_metrics_acked(s->metrics, seq);
		es_agent_metrics_synced(s->metrics, time(NULL));
		if (s->state_inflight && seq >= s->state_inflight)
			s->state_inflight = 0;
		/* Welcome received and a report acknowledged: this session
		 * worked, so its loss is a blip, not a failing controller. */
		if (!s->session_acked) {
			s->session_acked = 1;
			es_backoff_ok(&s->bo);
		}
		lws_callback_on_writable(s->wsi);
		break;
	case ES_MSG_RESYNC:
		es_log_info("sync", "controller asked for a snapshot", NULL);
		s->snapshot_sent = 0;
		if (s->hooks.queue_state)
			s->hooks.queue_state(s->hooks.user);
		lws_callback_on_writable(s->wsi);
		break;
	case ES_MSG_PING:
		es_json_get_str(msg, "ping", "time", 0, &m, NULL, 0);
		sync__queue_msg(s, es_proto_pong(m ? m : ""));
		break;
	case ES_MSG_PONG:
		break;
	case ES_MSG_CERTIFICATE:
		sync__renew_on_certificate(s, msg);
		break;
	case ES_MSG_CERT_REFUSED:
		sync__renew_on_refused(s, msg);
		break;
	case ES_MSG_ERROR:
		es_json_get_str(msg, "error", "code", 0, &c, NULL, 0);
		es_json_get_str(msg, "error", "message", 0, &m, NULL, 0);
		if (c && strcmp(c, es_proto_code_name(ES_PC_OVERLOADED)) == 0) {
			int64_t after = 0;
			char a[24];

			es_json_get_int(msg, "error", "retryAfterSeconds", 0, 1,
					ES_PROTO_RETRY_AFTER_MAX_S, &after, NULL, 0);
			if (after < 1)
				after = 1;
			es_backoff_retry_after(&s->bo, after * 1000);
			snprintf(a, sizeof(a), "%lld", (long long)after);
			es_log_warn("sync", "controller overloaded, coming back later",
				    "retryAfterSeconds", a, "message", m, NULL);
			snprintf(err, sizeof(err), "controller overloaded: retry after %s s",
				 a);
			sync__set_error(s, err, NULL);
			break;
		}
		es_log_warn("sync", "controller reported an error", "code", c,
			    "message", m, NULL);
		if (c && strcmp(c, es_proto_code_name(ES_PC_UNKNOWN_TYPE)) == 0)
			sync__renew_unknown_type(s);
		if (c && strcmp(c, es_proto_code_name(ES_PC_IDENTITY)) == 0) {
			const char *why = NULL;

			/* This certificate is refused (revoked, or another
			 * node's): redialling soon would be refused again. */
			es_json_get_str(msg, "error", "reason", 0, &why, NULL, 0);
			s->refused = 1;
			snprintf(s->refused_reason, sizeof(s->refused_reason), "%s",
				 why && !strcmp(why, "CertificateRevoked") ? "Revoked" :
				 "IdentityMismatch");
			snprintf(s->refused_msg, sizeof(s->refused_msg), "%s", m ? m : "");
			es_backoff_retry_after(&s->bo, ES_BACKOFF_CAP_MS / 2);
		}
		/* A controller of version 1 refuses a version 2 hello: the
		 * next connections offer version 1 (PROTOCOL.md "Versions"). */
		if (c && strcmp(c, "UnsupportedVersion") == 0 && s->proto_offer == 2) {
			es_log_warn("sync", "the controller does not speak protocol "
				    "version 2; offering version 1", NULL);
			s->proto_offer = 1;
			s->deflate_offer = 0;
		}
		snprintf(err, sizeof(err), "controller: %s: %s", c ? c : "",
			 m ? m : "");
		sync__set_error(s, err, NULL);
		break;
	default:
		snprintf(err, sizeof(err), "%s is not sent by a controller",
			 es_proto_type_name(type) ? es_proto_type_name(type) : "message");
		sync__proto_fail(s, ES_PC_PROTOCOL, err);
		break;
	}
cleanup:
	cJSON_Delete(msg);
}
