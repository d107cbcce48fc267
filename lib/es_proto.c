/*
 * es_proto.c - protocol v1 message codec. proto/PROTOCOL.md is the contract;
 * proto/schemas/ describes the same rules as JSON Schema.
 */
#include "es_proto.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "es_json.h"
#include "es_obj.h"
#include "es_time.h"

/* Capabilities this implementation announces in `hello` (PROTOCOL.md,
 * "hello"): the desired kinds the agent handles and merge-patch reports. */
static const char *const hello_capabilities[] = {"CollectorConfig", "HealthRule",
						   "EgressPolicy", "merge-patch"};

/* Bounds of welcome.heartbeatSeconds accepted from a controller. */
#define HEARTBEAT_MIN_S 1
#define HEARTBEAT_MAX_S 3600

static const struct {
	const char *name;
	int close_code;
} pc_table[] = {
	[ES_PC_MALFORMED] = {"MalformedMessage", 1007},
	[ES_PC_INVALID] = {"InvalidMessage", 1008},
	[ES_PC_UNKNOWN_TYPE] = {"UnknownMessageType", 4002},
	[ES_PC_TOO_BIG] = {"MessageTooBig", 1009},
	[ES_PC_PROTOCOL] = {"ProtocolViolation", 1002},
	[ES_PC_VERSION] = {"UnsupportedVersion", 4001},
	[ES_PC_IDENTITY] = {"IdentityMismatch", 1008},
	[ES_PC_INTERNAL] = {"Internal", 1011},
	[ES_PC_OVERLOADED] = {"Overloaded", 1013},
};
#define PC_COUNT (sizeof(pc_table) / sizeof(pc_table[0]))

static const char *const type_names[] = {
	[ES_MSG_UNKNOWN] = NULL,
	[ES_MSG_HELLO] = "hello",
	[ES_MSG_WELCOME] = "welcome",
	[ES_MSG_DESIRED] = "desired",
	[ES_MSG_DESIRED_ACK] = "desiredAck",
	[ES_MSG_REPORT] = "report",
	[ES_MSG_ACK] = "ack",
	[ES_MSG_RESYNC] = "resync",
	[ES_MSG_PING] = "ping",
	[ES_MSG_PONG] = "pong",
	[ES_MSG_ERROR] = "error",
	[ES_MSG_CERT_REQUEST] = "certificateRequest",
	[ES_MSG_CERTIFICATE] = "certificate",
	[ES_MSG_CERT_REFUSED] = "certificateRefused",
};
#define TYPE_COUNT (sizeof(type_names) / sizeof(type_names[0]))

const char *es_proto_code_name(es_proto_code c)
{
	if ((unsigned)c >= PC_COUNT)
		return "Internal";
	return pc_table[c].name;
}

int es_proto_close_code(es_proto_code c)
{
	if ((unsigned)c >= PC_COUNT)
		return 1011;
	return pc_table[c].close_code;
}

int es_proto_code_parse(const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < PC_COUNT; i++)
		if (strcmp(pc_table[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *es_proto_type_name(es_msg_type t)
{
	if ((unsigned)t >= TYPE_COUNT)
		return NULL;
	return type_names[t];
}

static es_msg_type type_parse(const char *s)
{
	for (size_t i = 1; i < TYPE_COUNT; i++)
		if (strcmp(type_names[i], s) == 0)
			return (es_msg_type)i;
	return ES_MSG_UNKNOWN;
}

/* ---- decoding ------------------------------------------------------------ */

/* A required RFC 3339 time string member. */
static es_err get_time(const cJSON *obj, const char *what, const char *key,
		       char *err, size_t errsz)
{
	const char *s = NULL;
	size_t n;
	time_t t;
	es_err rc = es_json_get_str(obj, what, key, 1, &s, err, errsz);

	if (rc != ES_OK)
		return rc;
	n = strlen(s);
	if (n == 0 || s[n - 1] != 'Z' || es_time_parse_rfc3339(s, &t) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s.%s: expected an RFC 3339 time in UTC ending in Z, "
			       "got \"%.64s\"", what, key, s);
	return ES_OK;
}

static es_err get_name(const cJSON *obj, const char *what, const char *key,
		       char *err, size_t errsz)
{
	const char *s = NULL;
	es_err rc = es_json_get_str(obj, what, key, 1, &s, err, errsz);

	if (rc != ES_OK)
		return rc;
	if (!es_obj_name_valid(s))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s.%s: \"%.64s\" is not an RFC 1123 DNS subdomain "
			       "(at most 253 characters of [a-z0-9.-], starting and "
			       "ending alphanumeric)", what, key, s);
	return ES_OK;
}

/* hello.streamId, optional: 1..ES_PROTO_STREAM_ID_MAX characters of
 * [A-Za-z0-9._-] (PROTOCOL.md, "hello"). */
static es_err get_stream_id(const cJSON *m, char *err, size_t errsz)
{
	const char *s = NULL;
	size_t n;
	es_err rc = es_json_get_str(m, "hello", "streamId", 0, &s, err, errsz);

	if (rc == ES_ERR_NOTFOUND)
		return ES_OK;
	if (rc != ES_OK)
		return rc;
	n = strlen(s);
	if (n == 0 || n > ES_PROTO_STREAM_ID_MAX ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		   "0123456789._-") != n)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "hello.streamId: expected 1 to %d characters of "
			       "[A-Za-z0-9._-], got \"%.64s\"", ES_PROTO_STREAM_ID_MAX, s);
	return ES_OK;
}

/* A required member that is an object whose every member is a string. */
static es_err get_string_map(const cJSON *obj, const char *what, const char *key,
			     char *err, size_t errsz)
{
	const cJSON *m = NULL, *it;
	es_err rc = es_json_get_obj(obj, what, key, 1, &m, err, errsz);

	if (rc != ES_OK)
		return rc;
	cJSON_ArrayForEach(it, m) {
		if (!cJSON_IsString(it))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s.%s.%.64s: expected a string", what, key,
				       it->string ? it->string : "");
	}
	return ES_OK;
}

/* A required member that is an array of strings. */
static es_err get_string_array(const cJSON *obj, const char *what, const char *key,
			       char *err, size_t errsz)
{
	const cJSON *a = NULL, *it;
	int i = 0;
	es_err rc = es_json_get_arr(obj, what, key, 1, &a, err, errsz);

	if (rc != ES_OK)
		return rc;
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s.%s[%d]: expected a string", what, key, i);
		i++;
	}
	return ES_OK;
}

static es_err check_hello(const cJSON *m, es_proto_code *code, char *err, size_t errsz)
{
	const char *s = NULL;
	int64_t v = 0;
	es_err rc;

	rc = es_json_get_int(m, "hello", "protocolVersion", 1, 0, ES_JSON_MAX_INT, &v,
			     err, errsz);
	if (rc != ES_OK)
		return rc;
	if (v < ES_PROTO_VERSION || v > ES_PROTO_VERSION_MAX) {
		*code = ES_PC_VERSION;
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "hello.protocolVersion: %lld is not supported (this "
			       "side speaks %d to %d)", (long long)v, ES_PROTO_VERSION,
			       ES_PROTO_VERSION_MAX);
	}
	if ((rc = get_name(m, "hello", "node", err, errsz)) != ES_OK ||
	    (rc = es_json_get_str(m, "hello", "agentVersion", 1, &s, err, errsz)) != ES_OK ||
	    (rc = es_json_get_str(m, "hello", "bootId", 1, &s, err, errsz)) != ES_OK ||
	    (rc = get_string_map(m, "hello", "labels", err, errsz)) != ES_OK ||
	    (rc = get_string_array(m, "hello", "capabilities", err, errsz)) != ES_OK ||
	    (rc = es_json_get_int(m, "hello", "resourceVersion", 1, 0, ES_JSON_MAX_INT,
				  &v, err, errsz)) != ES_OK ||
	    (rc = es_json_get_int(m, "hello", "nextSeq", 1, 1, ES_JSON_MAX_INT, &v,
				  err, errsz)) != ES_OK ||
	    (rc = get_stream_id(m, err, errsz)) != ES_OK)
		return rc;
	return ES_OK;
}

static es_err check_welcome(const cJSON *m, char *err, size_t errsz)
{
	const char *s = NULL;
	int64_t v = 0;
	es_err rc;

	if ((rc = get_name(m, "welcome", "node", err, errsz)) != ES_OK ||
	    (rc = es_json_get_str(m, "welcome", "controllerVersion", 1, &s, err,
				  errsz)) != ES_OK ||
	    (rc = es_json_get_int(m, "welcome", "ackedSeq", 1, 0, ES_JSON_MAX_INT, &v,
				  err, errsz)) != ES_OK ||
	    (rc = es_json_get_int(m, "welcome", "heartbeatSeconds", 1, HEARTBEAT_MIN_S,
				  HEARTBEAT_MAX_S, &v, err, errsz)) != ES_OK ||
	    (rc = es_json_get_int(m, "welcome", "maxMessageBytes", 1, 1,
				  ES_JSON_MAX_INT, &v, err, errsz)) != ES_OK)
		return rc;
	rc = es_json_get_int(m, "welcome", "protocolVersion", 0, ES_PROTO_VERSION,
			     ES_PROTO_VERSION_MAX, &v, err, errsz);
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return rc;
	if (cJSON_GetObjectItemCaseSensitive(m, "capabilities") &&
	    (rc = get_string_array(m, "welcome", "capabilities", err, errsz)) != ES_OK)
		return rc;
	return ES_OK;
}

static es_err check_desired(const cJSON *m, char *err, size_t errsz)
{
	const cJSON *objs = NULL, *del = NULL, *it;
	int b = 0, i;
	int64_t v = 0;
	es_err rc;

	if ((rc = es_json_get_bool(m, "desired", "full", 1, &b, err, errsz)) != ES_OK ||
	    (rc = es_json_get_int(m, "desired", "resourceVersion", 1, 0,
				  ES_JSON_MAX_INT, &v, err, errsz)) != ES_OK ||
	    (rc = es_json_get_arr(m, "desired", "objects", 1, &objs, err,
				  errsz)) != ES_OK ||
	    (rc = es_json_get_arr(m, "desired", "deleted", 1, &del, err,
				  errsz)) != ES_OK)
		return rc;
	rc = es_json_get_bool(m, "desired", "more", 0, &b, err, errsz);
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return rc;

	if (cJSON_GetArraySize(objs) > ES_PROTO_MAX_OBJECTS_PER_MSG)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "desired.objects: %d objects, at most %d per message",
			       cJSON_GetArraySize(objs), ES_PROTO_MAX_OBJECTS_PER_MSG);
	i = 0;
	cJSON_ArrayForEach(it, objs) {
		if (!cJSON_IsObject(it))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "desired.objects[%d]: expected an object", i);
		i++;
	}
	i = 0;
	cJSON_ArrayForEach(it, del) {
		char what[48];
		const char *s = NULL;

		snprintf(what, sizeof(what), "desired.deleted[%d]", i);
		if (!cJSON_IsObject(it))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s: expected an object {kind, name, uid}", what);
		if ((rc = es_json_get_str(it, what, "kind", 1, &s, err, errsz)) != ES_OK ||
		    (rc = es_json_get_str(it, what, "name", 1, &s, err, errsz)) != ES_OK ||
		    (rc = es_json_get_str(it, what, "uid", 1, &s, err, errsz)) != ES_OK)
			return rc;
		rc = es_json_get_int(it, what, "resourceVersion", 0, 0, ES_JSON_MAX_INT,
				     &v, err, errsz);
		if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
			return rc;
		i++;
	}
	return ES_OK;
}

/* Event body (PROTOCOL.md, "Event body"); involvedObject.uid may be absent
 * for an object that has none on the agent (the Node itself). */
static es_err check_event(const cJSON *ev, char *err, size_t errsz)
{
	const char *s = NULL;
	const cJSON *io = NULL;
	es_err rc;

	if ((rc = es_json_get_str(ev, "report.body", "type", 1, &s, err, errsz)) != ES_OK)
		return rc;
	if (strcmp(s, "Normal") != 0 && strcmp(s, "Warning") != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "report.body.type: expected \"Normal\" or \"Warning\", "
			       "got \"%.32s\"", s);
	if ((rc = es_json_get_str(ev, "report.body", "reason", 1, &s, err, errsz)) != ES_OK)
		return rc;
	if (*s == '\0')
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "report.body.reason: must not be empty");
	if ((rc = es_json_get_str(ev, "report.body", "message", 1, &s, err,
				  errsz)) != ES_OK ||
	    (rc = get_time(ev, "report.body", "time", err, errsz)) != ES_OK ||
	    (rc = es_json_get_obj(ev, "report.body", "involvedObject", 1, &io, err,
				  errsz)) != ES_OK ||
	    (rc = es_json_get_str(io, "report.body.involvedObject", "kind", 1, &s, err,
				  errsz)) != ES_OK ||
	    (rc = es_json_get_str(io, "report.body.involvedObject", "name", 1, &s, err,
				  errsz)) != ES_OK)
		return rc;
	rc = es_json_get_str(io, "report.body.involvedObject", "uid", 0, &s, err, errsz);
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return rc;
	return ES_OK;
}

static es_err check_report(const cJSON *m, char *err, size_t errsz)
{
	const char *rt = NULL;
	const cJSON *body = NULL;
	int64_t v = 0;
	es_err rc;

	if ((rc = es_json_get_int(m, "report", "seq", 1, 1, ES_JSON_MAX_INT, &v, err,
				  errsz)) != ES_OK ||
	    (rc = get_time(m, "report", "time", err, errsz)) != ES_OK ||
	    (rc = es_json_get_str(m, "report", "reportType", 1, &rt, err, errsz)) != ES_OK)
		return rc;
	if (strcmp(rt, "snapshot") != 0 && strcmp(rt, "patch") != 0 &&
	    strcmp(rt, "delta") != 0 && strcmp(rt, "event") != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "report.reportType: expected \"snapshot\", \"patch\", "
			       "\"delta\" or \"event\", got \"%.32s\"", rt);
	if ((strcmp(rt, "patch") == 0 || strcmp(rt, "delta") == 0) &&
	    (rc = es_json_get_int(m, "report", "baseSeq", 1, 1, ES_JSON_MAX_INT, &v,
				  err, errsz)) != ES_OK)
		return rc;
	if ((rc = es_json_get_obj(m, "report", "body", 1, &body, err, errsz)) != ES_OK)
		return rc;
	if (strcmp(rt, "event") == 0)
		return check_event(body, err, errsz);
	return ES_OK;
}

static es_err check_error(const cJSON *m, char *err, size_t errsz)
{
	const char *s = NULL;
	int64_t retry = 0;
	es_err rc;

	if ((rc = es_json_get_str(m, "error", "code", 1, &s, err, errsz)) != ES_OK)
		return rc;
	if (es_proto_code_parse(s) < 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "error.code: \"%.48s\" is not a protocol error code", s);
	rc = es_json_get_int(m, "error", "retryAfterSeconds", 0, 1,
			     ES_PROTO_RETRY_AFTER_MAX_S, &retry, err, errsz);
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return rc;
	return es_json_get_str(m, "error", "message", 1, &s, err, errsz);
}

/* A required string member of at most ES_PROTO_PEM_MAX bytes. */
static es_err get_pem(const cJSON *m, const char *what, const char *key,
		      char *err, size_t errsz)
{
	const char *s = NULL;
	es_err rc = es_json_get_str(m, what, key, 1, &s, err, errsz);

	if (rc != ES_OK)
		return rc;
	if (!*s || strlen(s) > ES_PROTO_PEM_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s.%s: expected PEM text of "
			       "1 to %d bytes", what, key, ES_PROTO_PEM_MAX);
	return ES_OK;
}

static es_err check_certificate(const cJSON *m, char *err, size_t errsz)
{
	const char *s = NULL;
	es_err rc;

	if ((rc = get_pem(m, "certificate", "certificate", err, errsz)) != ES_OK ||
	    (rc = get_pem(m, "certificate", "caBundle", err, errsz)) != ES_OK ||
	    (rc = es_json_get_str(m, "certificate", "serial", 1, &s, err, errsz)) != ES_OK)
		return rc;
	return get_time(m, "certificate", "notAfter", err, errsz);
}

static es_err check_refused(const cJSON *m, char *err, size_t errsz)
{
	const char *s = NULL;
	int64_t retry = 0;
	es_err rc;

	if ((rc = es_json_get_str(m, "certificateRefused", "reason", 1, &s, err,
				  errsz)) != ES_OK)
		return rc;
	if (!*s)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "certificateRefused.reason: must not be empty");
	rc = es_json_get_int(m, "certificateRefused", "retryAfterSeconds", 0, 1,
			     ES_PROTO_RETRY_AFTER_MAX_S, &retry, err, errsz);
	if (rc != ES_OK && rc != ES_ERR_NOTFOUND)
		return rc;
	return es_json_get_str(m, "certificateRefused", "message", 1, &s, err, errsz);
}

static es_err check_members(es_msg_type t, const cJSON *m, es_proto_code *code,
			    char *err, size_t errsz)
{
	int64_t v = 0;

	switch (t) {
	case ES_MSG_HELLO:
		return check_hello(m, code, err, errsz);
	case ES_MSG_WELCOME:
		return check_welcome(m, err, errsz);
	case ES_MSG_DESIRED:
		return check_desired(m, err, errsz);
	case ES_MSG_DESIRED_ACK:
		return es_json_get_int(m, "desiredAck", "resourceVersion", 1, 0,
				       ES_JSON_MAX_INT, &v, err, errsz);
	case ES_MSG_REPORT:
		return check_report(m, err, errsz);
	case ES_MSG_ACK:
		return es_json_get_int(m, "ack", "seq", 1, 0, ES_JSON_MAX_INT, &v,
				       err, errsz);
	case ES_MSG_RESYNC:
		return ES_OK;
	case ES_MSG_PING:
		return get_time(m, "ping", "time", err, errsz);
	case ES_MSG_PONG:
		return get_time(m, "pong", "time", err, errsz);
	case ES_MSG_ERROR:
		return check_error(m, err, errsz);
	case ES_MSG_CERT_REQUEST:
		return get_pem(m, "certificateRequest", "csr", err, errsz);
	case ES_MSG_CERTIFICATE:
		return check_certificate(m, err, errsz);
	case ES_MSG_CERT_REFUSED:
		return check_refused(m, err, errsz);
	case ES_MSG_UNKNOWN:
		break;
	}
	return es_errf(ES_ERR_INVAL, err, errsz, "unknown message type");
}

es_err es_proto_decode(const char *buf, size_t len, es_msg_type *type,
		       cJSON **msg, es_proto_code *code, char *err, size_t errsz)
{
	cJSON *root = NULL;
	const char *tname = NULL;
	es_msg_type t = ES_MSG_UNKNOWN;
	es_err rc;

	*msg = NULL;
	*type = ES_MSG_UNKNOWN;
	*code = ES_PC_INTERNAL;

	if (len > ES_PROTO_MAX_MESSAGE) {
		*code = ES_PC_TOO_BIG;
		rc = es_errf(ES_ERR_PROTO, err, errsz,
			     "message of %zu bytes exceeds the limit of %d bytes",
			     len, ES_PROTO_MAX_MESSAGE);
		goto cleanup;
	}
	if (!buf) {
		*code = ES_PC_MALFORMED;
		rc = es_errf(ES_ERR_PROTO, err, errsz, "empty message");
		goto cleanup;
	}
	rc = es_json_parse(buf, len, ES_JSON_MAX_DEPTH, &root, err, errsz);
	if (rc == ES_ERR_NOMEM)
		goto cleanup;
	if (rc != ES_OK) {
		*code = ES_PC_MALFORMED;
		rc = ES_ERR_PROTO;
		goto cleanup;
	}
	if (!cJSON_IsObject(root)) {
		*code = ES_PC_MALFORMED;
		rc = es_errf(ES_ERR_PROTO, err, errsz, "message is not a JSON object");
		goto cleanup;
	}
	rc = es_json_get_str(root, "message", "type", 1, &tname, err, errsz);
	if (rc != ES_OK) {
		*code = ES_PC_INVALID;
		rc = ES_ERR_PROTO;
		goto cleanup;
	}
	t = type_parse(tname);
	if (t == ES_MSG_UNKNOWN) {
		*code = ES_PC_UNKNOWN_TYPE;
		rc = es_errf(ES_ERR_PROTO, err, errsz,
			     "message.type: unknown message type \"%.48s\"", tname);
		goto cleanup;
	}
	*code = ES_PC_INVALID;
	rc = check_members(t, root, code, err, errsz);
	if (rc == ES_ERR_NOMEM)
		goto cleanup;
	if (rc != ES_OK) {
		rc = ES_ERR_PROTO;
		goto cleanup;
	}
	*type = t;
	*msg = root;
	root = NULL;
	rc = ES_OK;
cleanup:
	cJSON_Delete(root);
	return rc;
}

/* ---- encoding ------------------------------------------------------------ */

static cJSON *new_msg(es_msg_type t)
{
	cJSON *m = cJSON_CreateObject();

	if (m && !cJSON_AddStringToObject(m, "type", es_proto_type_name(t))) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

/* Adds a string member; a NULL value is encoded as "". Returns 0 or -1. */
static int add_str(cJSON *o, const char *key, const char *v)
{
	return cJSON_AddStringToObject(o, key, v ? v : "") ? 0 : -1;
}

static int add_int(cJSON *o, const char *key, int64_t v)
{
	return es_json_add_int(o, key, v) ? 0 : -1;
}

static int add_bool(cJSON *o, const char *key, int v)
{
	return cJSON_AddBoolToObject(o, key, v ? 1 : 0) ? 0 : -1;
}

/* Moves item (or a new empty container made by mk when item is NULL) into o.
 * item is freed on failure. Returns 0 or -1. */
static int add_taken(cJSON *o, const char *key, cJSON *item, cJSON *(*mk)(void))
{
	if (!item)
		item = mk();
	if (!item)
		return -1;
	if (!o || !cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

cJSON *es_proto_hello(const char *node, const char *agent_version,
		      const char *boot_id, cJSON *take_labels,
		      int64_t resource_version, int64_t next_seq,
		      const char *stream_id)
{
	cJSON *m = new_msg(ES_MSG_HELLO), *caps = NULL;
	size_t i;

	if (add_taken(m, "labels", take_labels, cJSON_CreateObject) != 0)
		goto fail;
	if (!m || add_int(m, "protocolVersion", ES_PROTO_VERSION) != 0 ||
	    add_str(m, "node", node) != 0 ||
	    add_str(m, "agentVersion", agent_version) != 0 ||
	    add_str(m, "bootId", boot_id) != 0 ||
	    !(caps = cJSON_AddArrayToObject(m, "capabilities")))
		goto fail;
	for (i = 0; i < sizeof(hello_capabilities) / sizeof(hello_capabilities[0]); i++) {
		cJSON *s = cJSON_CreateString(hello_capabilities[i]);

		if (!s || !cJSON_AddItemToArray(caps, s)) {
			cJSON_Delete(s);
			goto fail;
		}
	}
	if (add_int(m, "resourceVersion", resource_version) != 0 ||
	    add_int(m, "nextSeq", next_seq) != 0 ||
	    (stream_id && *stream_id && add_str(m, "streamId", stream_id) != 0))
		goto fail;
	return m;
fail:
	cJSON_Delete(m);
	return NULL;
}

cJSON *es_proto_welcome(const char *node, const char *controller_version,
			int64_t acked_seq)
{
	cJSON *m = new_msg(ES_MSG_WELCOME);

	if (!m || add_str(m, "node", node) != 0 ||
	    add_str(m, "controllerVersion", controller_version) != 0 ||
	    add_int(m, "ackedSeq", acked_seq) != 0 ||
	    add_int(m, "heartbeatSeconds", ES_PROTO_HEARTBEAT_S) != 0 ||
	    add_int(m, "maxMessageBytes", ES_PROTO_MAX_MESSAGE) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

es_err es_proto_make_v2(cJSON *msg, int deflate)
{
	cJSON *caps, *v;

	if (!msg)
		return ES_ERR_INVAL;
	if (!(v = cJSON_CreateNumber(2)))
		return ES_ERR_NOMEM;
	if (cJSON_GetObjectItemCaseSensitive(msg, "protocolVersion"))
		cJSON_ReplaceItemInObjectCaseSensitive(msg, "protocolVersion", v);
	else if (!cJSON_AddItemToObject(msg, "protocolVersion", v)) {
		cJSON_Delete(v);
		return ES_ERR_NOMEM;
	}
	caps = cJSON_GetObjectItemCaseSensitive(msg, "capabilities");
	if (!caps && !(caps = cJSON_AddArrayToObject(msg, "capabilities")))
		return ES_ERR_NOMEM;
	if (!cJSON_AddItemToArray(caps, cJSON_CreateString(ES_PROTO_CAP_KEYED)) ||
	    (deflate && !cJSON_AddItemToArray(caps,
					      cJSON_CreateString(ES_PROTO_CAP_DEFLATE))))
		return ES_ERR_NOMEM;
	return ES_OK;
}

int es_proto_has_capability(const cJSON *msg, const char *cap)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(msg, "capabilities"))
		if (cJSON_IsString(it) && strcmp(it->valuestring, cap) == 0)
			return 1;
	return 0;
}

int es_proto_version_of(const cJSON *msg)
{
	int64_t v = ES_PROTO_VERSION;

	if (es_json_get_int(msg, "msg", "protocolVersion", 0, ES_PROTO_VERSION,
			    ES_PROTO_VERSION_MAX, &v, NULL, 0) != ES_OK)
		v = ES_PROTO_VERSION;
	return (int)v;
}

cJSON *es_proto_desired(int full, int64_t resource_version,
			cJSON *take_objects, cJSON *take_deleted, int more)
{
	cJSON *m = new_msg(ES_MSG_DESIRED);
	int bad = 0;

	bad |= add_taken(m, "objects", take_objects, cJSON_CreateArray);
	bad |= add_taken(m, "deleted", take_deleted, cJSON_CreateArray);
	if (bad || !m || add_bool(m, "full", full) != 0 ||
	    add_int(m, "resourceVersion", resource_version) != 0 ||
	    (more && add_bool(m, "more", 1) != 0)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_desired_ack(int64_t resource_version)
{
	cJSON *m = new_msg(ES_MSG_DESIRED_ACK);

	if (!m || add_int(m, "resourceVersion", resource_version) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_report(int64_t seq, const char *time, const char *report_type,
		       int64_t base_seq, cJSON *take_body)
{
	cJSON *m = new_msg(ES_MSG_REPORT);

	if (add_taken(m, "body", take_body, cJSON_CreateObject) != 0 ||
	    add_int(m, "seq", seq) != 0 || add_str(m, "time", time) != 0 ||
	    add_str(m, "reportType", report_type) != 0 ||
	    (report_type && (strcmp(report_type, "patch") == 0 ||
			     strcmp(report_type, "delta") == 0) &&
	     add_int(m, "baseSeq", base_seq) != 0)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_ack(int64_t seq)
{
	cJSON *m = new_msg(ES_MSG_ACK);

	if (!m || add_int(m, "seq", seq) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_resync(void)
{
	return new_msg(ES_MSG_RESYNC);
}

static cJSON *time_msg(es_msg_type t, const char *time)
{
	cJSON *m = new_msg(t);

	if (!m || add_str(m, "time", time) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_ping(const char *time)
{
	return time_msg(ES_MSG_PING, time);
}

cJSON *es_proto_pong(const char *time)
{
	return time_msg(ES_MSG_PONG, time);
}

cJSON *es_proto_error(es_proto_code code, const char *message)
{
	cJSON *m = new_msg(ES_MSG_ERROR);

	if (!m || add_str(m, "code", es_proto_code_name(code)) != 0 ||
	    add_str(m, "message", message) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_cert_request(const char *csr_pem)
{
	cJSON *m = new_msg(ES_MSG_CERT_REQUEST);

	if (!m || add_str(m, "csr", csr_pem) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_certificate(const char *cert_pem, const char *ca_bundle,
			    const char *serial, const char *not_after)
{
	cJSON *m = new_msg(ES_MSG_CERTIFICATE);

	if (!m || add_str(m, "certificate", cert_pem) != 0 ||
	    add_str(m, "caBundle", ca_bundle) != 0 || add_str(m, "serial", serial) != 0 ||
	    add_str(m, "notAfter", not_after) != 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_cert_refused(const char *reason, const char *message,
			     int retry_after_s)
{
	cJSON *m = new_msg(ES_MSG_CERT_REFUSED);

	if (retry_after_s > ES_PROTO_RETRY_AFTER_MAX_S)
		retry_after_s = ES_PROTO_RETRY_AFTER_MAX_S;
	if (!m || add_str(m, "reason", reason) != 0 || add_str(m, "message", message) != 0 ||
	    (retry_after_s > 0 && add_int(m, "retryAfterSeconds", retry_after_s) != 0)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_overloaded(int retry_after_s, const char *message)
{
	cJSON *m = es_proto_error(ES_PC_OVERLOADED, message);

	if (retry_after_s < 1)
		retry_after_s = 1;
	if (retry_after_s > ES_PROTO_RETRY_AFTER_MAX_S)
		retry_after_s = ES_PROTO_RETRY_AFTER_MAX_S;
	if (m && !cJSON_AddNumberToObject(m, "retryAfterSeconds", retry_after_s)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

cJSON *es_proto_deleted_ref(const char *kind, const char *name, const char *uid,
			    int64_t resource_version)
{
	cJSON *r = cJSON_CreateObject();

	if (!r || add_str(r, "kind", kind) != 0 || add_str(r, "name", name) != 0 ||
	    add_str(r, "uid", uid) != 0 ||
	    (resource_version > 0 &&
	     add_int(r, "resourceVersion", resource_version) != 0)) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

cJSON *es_proto_event(const char *type, const char *reason, const char *message,
		      const char *kind, const char *name, const char *uid,
		      const char *time)
{
	cJSON *e = cJSON_CreateObject(), *io = NULL;

	if (!e || add_str(e, "type", type) != 0 || add_str(e, "reason", reason) != 0 ||
	    add_str(e, "message", message) != 0 ||
	    !(io = cJSON_AddObjectToObject(e, "involvedObject")) ||
	    add_str(io, "kind", kind) != 0 || add_str(io, "name", name) != 0 ||
	    (uid && add_str(io, "uid", uid) != 0) || add_str(e, "time", time) != 0) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}
