/*
 * es_proto.h - protocol v1 message codec (proto/PROTOCOL.md is the contract).
 *
 * Decoding validates the envelope and every listed member of the message's
 * type and returns the parsed tree; it never trusts the peer. Encoding
 * builds messages as cJSON trees.
 */
#ifndef ES_PROTO_H
#define ES_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"

#define ES_PROTO_SUBPROTOCOL "edgesync.v1"
#define ES_PROTO_PATH "/v1/sync"
/* Protocol versions this side speaks (PROTOCOL.md "hello"): 2 adds
 * keyed changes (`delta` reports), activity events and compressed
 * messages; a controller serves both, an agent says which in hello. */
#define ES_PROTO_VERSION 1
#define ES_PROTO_VERSION_MAX 2
/* Capabilities of protocol version 2 (hello, welcome): keyed changes, and
 * binary messages holding deflate-compressed JSON. */
#define ES_PROTO_CAP_KEYED "keyed-patch"
#define ES_PROTO_CAP_DEFLATE "deflate"
/* Capability of a welcome (either version, PROTOCOL.md "Renewal"): this
 * controller issued the session's certificate and answers
 * certificateRequest on it. */
#define ES_PROTO_CAP_RENEWAL "certificate-renewal"
#define ES_PROTO_MAX_MESSAGE (1024 * 1024)
/* Longest PEM member of the renewal messages (a CA bundle). */
#define ES_PROTO_PEM_MAX (256 * 1024)
#define ES_PROTO_HEARTBEAT_S 20
#define ES_PROTO_AGENT_DEAD_S 45
#define ES_PROTO_CONTROLLER_DEAD_S 60
#define ES_PROTO_MAX_EVENTS 1000
#define ES_PROTO_MAX_OBJECTS_PER_MSG 1000
/* Longest hello.streamId (PROTOCOL.md, "hello"). */
#define ES_PROTO_STREAM_ID_MAX 64
/* Largest desired object, as compact JSON, the admin API accepts: it must
 * fit in one desired message with the envelope and the metadata the
 * controller adds (PROTOCOL.md "Limits"). */
#define ES_PROTO_MAX_OBJECT (ES_PROTO_MAX_MESSAGE - 8192)
/* Deepest desired object the admin API accepts: a desired message holds it
 * two levels down ({"objects": [object]}), within ES_JSON_MAX_DEPTH. */
#define ES_PROTO_MAX_OBJECT_DEPTH (ES_JSON_MAX_DEPTH - 2)

typedef enum es_msg_type {
	ES_MSG_UNKNOWN = 0,
	ES_MSG_HELLO,
	ES_MSG_WELCOME,
	ES_MSG_DESIRED,
	ES_MSG_DESIRED_ACK,
	ES_MSG_REPORT,
	ES_MSG_ACK,
	ES_MSG_RESYNC,
	ES_MSG_PING,
	ES_MSG_PONG,
	ES_MSG_ERROR,
	/* Renewal (PROTOCOL.md "Renewal"): agent -> controller, and the
	 * controller's two answers. */
	ES_MSG_CERT_REQUEST,
	ES_MSG_CERTIFICATE,
	ES_MSG_CERT_REFUSED,
} es_msg_type;
/* The last message type (for tables over every type). */
#define ES_MSG_LAST ES_MSG_CERT_REFUSED

/* Protocol error codes and their WebSocket close codes (PROTOCOL.md,
 * "Errors"). */
typedef enum es_proto_code {
	ES_PC_MALFORMED = 0,      /* "MalformedMessage", 1007 */
	ES_PC_INVALID,            /* "InvalidMessage", 1008 */
	ES_PC_UNKNOWN_TYPE,       /* "UnknownMessageType", 4002 */
	ES_PC_TOO_BIG,            /* "MessageTooBig", 1009 */
	ES_PC_PROTOCOL,           /* "ProtocolViolation", 1002 */
	ES_PC_VERSION,            /* "UnsupportedVersion", 4001 */
	ES_PC_IDENTITY,           /* "IdentityMismatch", 1008 */
	ES_PC_INTERNAL,           /* "Internal", 1011 */
	ES_PC_OVERLOADED,         /* "Overloaded", 1013 (come back later) */
} es_proto_code;

/* WebSocket close code of a session replaced by a newer one of the same
 * node (PROTOCOL.md "Errors"; private-use range, RFC 6455 section 7.4.2). */
#define ES_PROTO_CLOSE_REPLACED 4000

/* Bounds of error.retryAfterSeconds (PROTOCOL.md "Errors"). */
#define ES_PROTO_RETRY_AFTER_MAX_S 3600

const char *es_proto_code_name(es_proto_code c);
int es_proto_close_code(es_proto_code c);
/* Name → code; returns -1 when unknown. */
int es_proto_code_parse(const char *name);

/* "hello", "welcome", ...; NULL for ES_MSG_UNKNOWN. */
const char *es_proto_type_name(es_msg_type t);

/*
 * Decodes one complete message of len bytes. On success: *type is set and
 * *msg owns the validated tree (cJSON_Delete it). On failure *msg is NULL,
 * *code is the protocol error code to send, and err says what was wrong,
 * naming the member ("report.seq: expected an integer in 1..2^53-1").
 * Checks: len <= ES_PROTO_MAX_MESSAGE (ES_PC_TOO_BIG), es_json_parse with
 * ES_JSON_MAX_DEPTH (ES_PC_MALFORMED), an object with a string `type`
 * (ES_PC_INVALID), a known type (ES_PC_UNKNOWN_TYPE), each member of that
 * type present with its type and range (ES_PC_INVALID; for hello also node
 * name syntax and, when present, streamId syntax), hello.protocolVersion
 * 1 or 2 (ES_PC_VERSION), welcome.protocolVersion (optional) 1 or 2, a
 * report's reportType `snapshot`, `patch`, `delta` (with baseSeq, like
 * `patch`) or `event`; certificateRequest.csr, certificate.certificate
 * and caBundle at most ES_PROTO_PEM_MAX bytes, certificate.notAfter an
 * RFC 3339 time, certificateRefused.reason not empty.
 * Returns ES_OK, ES_ERR_PROTO (peer's fault, *code set), ES_ERR_NOMEM.
 */
es_err es_proto_decode(const char *buf, size_t len, es_msg_type *type,
		       cJSON **msg, es_proto_code *code, char *err, size_t errsz);

/*
 * Encoders: each returns a new cJSON object (caller owns) or NULL on
 * allocation failure. String arguments are copied. Array/object arguments
 * named `take_*` are moved into the message (the caller must not free them,
 * even on failure: they are freed then).
 */
/* stream_id: the agent's report stream (hello.streamId); NULL or "" leaves
 * the member out. */
cJSON *es_proto_hello(const char *node, const char *agent_version,
		      const char *boot_id, cJSON *take_labels,
		      int64_t resource_version, int64_t next_seq,
		      const char *stream_id);
cJSON *es_proto_welcome(const char *node, const char *controller_version,
			int64_t acked_seq);

/*
 * Makes the hello or welcome msg (from es_proto_hello or es_proto_welcome)
 * one of protocol version 2 (PROTOCOL.md "hello", "welcome"): sets
 * protocolVersion to 2 and adds the capability ES_PROTO_CAP_KEYED, and
 * ES_PROTO_CAP_DEFLATE when deflate is not 0 (a welcome gets a
 * capabilities array for them). Errors: ES_ERR_INVAL (msg NULL),
 * ES_ERR_NOMEM (msg is then unchanged or has some of the capabilities:
 * delete it).
 */
es_err es_proto_make_v2(cJSON *msg, int deflate);

/* 1 when msg (a decoded hello or welcome) lists the capability cap in its
 * capabilities array, else 0. */
int es_proto_has_capability(const cJSON *msg, const char *cap);

/* The protocolVersion of a decoded hello or welcome (1 when a welcome
 * has none: a version 1 controller). */
int es_proto_version_of(const cJSON *msg);
cJSON *es_proto_desired(int full, int64_t resource_version,
			cJSON *take_objects, cJSON *take_deleted, int more);
cJSON *es_proto_desired_ack(int64_t resource_version);
/* report_type: "snapshot", "patch", "delta" or "event"; base_seq used for
 * "patch" and "delta". */
cJSON *es_proto_report(int64_t seq, const char *time, const char *report_type,
		       int64_t base_seq, cJSON *take_body);
cJSON *es_proto_ack(int64_t seq);
cJSON *es_proto_resync(void);
cJSON *es_proto_ping(const char *time);
cJSON *es_proto_pong(const char *time);
cJSON *es_proto_error(es_proto_code code, const char *message);
/* The come-back-later `error` (PROTOCOL.md "Errors"): code Overloaded and
 * retryAfterSeconds (1 .. ES_PROTO_RETRY_AFTER_MAX_S, clamped). NULL when
 * out of memory. */
cJSON *es_proto_overloaded(int retry_after_s, const char *message);

/* Renewal (PROTOCOL.md "Renewal"). csr_pem: a PKCS#10 request (PEM). */
cJSON *es_proto_cert_request(const char *csr_pem);
/* certificate: cert_pem the new certificate, ca_bundle the trust bundle
 * for the controller, serial lower-case hex, not_after an RFC 3339 time. */
cJSON *es_proto_certificate(const char *cert_pem, const char *ca_bundle,
			    const char *serial, const char *not_after);
/* certificateRefused: reason CamelCase (PROTOCOL.md's table), message;
 * retry_after_s 0 leaves retryAfterSeconds out, else clamped to
 * 1 .. ES_PROTO_RETRY_AFTER_MAX_S. */
cJSON *es_proto_cert_refused(const char *reason, const char *message,
			     int retry_after_s);

/* A desired.deleted entry {kind, name, uid, resourceVersion}:
 * resource_version is the controller's resourceVersion of the write that
 * took the object from the node (its deletion, or the change after which it
 * no longer targets the node); 0 leaves the member out (PROTOCOL.md,
 * "desired"). */
cJSON *es_proto_deleted_ref(const char *kind, const char *name, const char *uid,
			    int64_t resource_version);

/* An Event body (PROTOCOL.md, "Event body"). */
cJSON *es_proto_event(const char *type, const char *reason, const char *message,
		      const char *kind, const char *name, const char *uid,
		      const char *time);

#endif
