/*
 * fuzz_proto.c - libFuzzer target: the sync message decoder
 * (lib/es_proto.c, es_proto_decode).
 *
 * Every input is decoded as one message. A refused message must leave no
 * tree and say why. An accepted one must survive two round trips:
 *  1. its compact text (es_json_print) decodes again to the same type and
 *     an equal tree (exactly: fuzz_json_equal);
 *  2. the message built again by the encoders (es_proto_hello, ...) from
 *     the decoded members decodes to the same type, with every member the
 *     encoder carries equal to the original's.
 * Accepted times also round-trip through es_time: the second a time names,
 * formatted by es_time_rfc3339, parses back to the same second (when RFC
 * 3339 can write it in UTC).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "es_json.h"
#include "es_proto.h"
#include "es_time.h"
#include "fuzz_util.h"

static cJSON *dup_member(const cJSON *m, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);

	return v ? cJSON_Duplicate(v, 1) : NULL;
}

static const char *str_member(const cJSON *m, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t int_member(const cJSON *m, const char *key)
{
	int64_t v = 0;

	es_json_int_value(cJSON_GetObjectItemCaseSensitive(m, key), -ES_JSON_MAX_INT,
			  ES_JSON_MAX_INT, &v);
	return v;
}

static int bool_member(const cJSON *m, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, key));
}

/* Decodes text, which must be accepted as a message of type want. */
static cJSON *decode_ok(const char *text, es_msg_type want, const char *what)
{
	es_msg_type type;
	es_proto_code code;
	cJSON *msg = NULL;
	char err[512] = "";
	es_err rc = es_proto_decode(text, strlen(text), &type, &msg, &code, err,
				    sizeof(err));

	FUZZ_CHECK(rc == ES_OK, "%s refused: %s: %.300s", what, err, text);
	FUZZ_CHECK(type == want, "%s decodes as %s, not %s", what,
		   es_proto_type_name(type), es_proto_type_name(want));
	return msg;
}

/* Every member of keys (NULL-terminated) is equal in a and b (or absent
 * from both). */
static void same_members(const cJSON *a, const cJSON *b, const char *const *keys,
			 const char *what)
{
	for (; *keys; keys++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, *keys);
		const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, *keys);

		FUZZ_CHECK((!x && !y) || fuzz_json_equal(x, y),
			   "%s: member %s differs: %s vs %s", what, *keys,
			   fuzz_json_show(x, 0), fuzz_json_show(y, 1));
	}
}

/* An accepted time: its second formatted again parses to that second. */
static void check_time(const char *s)
{
	char buf[ES_TIME_RFC3339_LEN];
	time_t t, t2;

	if (!s)
		return;
	FUZZ_CHECK(es_time_parse_rfc3339(s, &t) == 0, "accepted time %s does not parse", s);
	/* "9999-12-31T23:59:60Z" or "0000-01-01T00:00:00+01:00" name seconds
	 * RFC 3339 cannot write in UTC: es_time_rfc3339 writes the bound. */
	if ((int64_t)t < ES_TIME_RFC3339_MIN || (int64_t)t > ES_TIME_RFC3339_MAX)
		return;
	es_time_rfc3339(t, buf);
	FUZZ_CHECK(es_time_parse_rfc3339(buf, &t2) == 0 && t2 == t,
		   "time %s formats as %s, which does not parse back", s, buf);
}

/* The same message built by the encoders from msg's members (caller owns),
 * and the members the encoder copies; NULL when out of memory. */
static cJSON *reencode(es_msg_type type, const cJSON *msg, const char *const **keys)
{
	static const char *const hello[] = {"type", "protocolVersion", "node",
		"agentVersion", "bootId", "labels", "resourceVersion", "nextSeq", "streamId",
		NULL};
	static const char *const welcome[] = {"type", "node", "controllerVersion",
		"ackedSeq", NULL};
	static const char *const desired[] = {"type", "full", "resourceVersion",
		"objects", "deleted", NULL};
	static const char *const rv[] = {"type", "resourceVersion", NULL};
	static const char *const report[] = {"type", "seq", "time", "reportType",
		"body", NULL};
	static const char *const patch[] = {"type", "seq", "time", "reportType",
		"baseSeq", "body", NULL};
	static const char *const seq[] = {"type", "seq", NULL};
	static const char *const only_type[] = {"type", NULL};
	static const char *const time_keys[] = {"type", "time", NULL};
	static const char *const error[] = {"type", "code", "message", NULL};
	static const char *const cert_request[] = {"type", "csr", NULL};
	static const char *const certificate[] = {"type", "certificate", "caBundle",
						  "serial", "notAfter", NULL};
	static const char *const cert_refused[] = {"type", "reason", "message", NULL};
	const char *rt;

	switch (type) {
	case ES_MSG_HELLO: {
		cJSON *h;

		*keys = hello;
		h = es_proto_hello(str_member(msg, "node"), str_member(msg, "agentVersion"),
				   str_member(msg, "bootId"), dup_member(msg, "labels"),
				   int_member(msg, "resourceVersion"),
				   int_member(msg, "nextSeq"), str_member(msg, "streamId"));
		/* A version 2 hello is a version 1 one made v2 (as the agent
		 * makes it). */
		if (h && es_proto_version_of(msg) == 2 &&
		    es_proto_make_v2(h, es_proto_has_capability(msg, ES_PROTO_CAP_DEFLATE)) != ES_OK) {
			cJSON_Delete(h);
			h = NULL;
		}
		return h;
	}
	case ES_MSG_WELCOME:
		*keys = welcome;
		return es_proto_welcome(str_member(msg, "node"),
					str_member(msg, "controllerVersion"),
					int_member(msg, "ackedSeq"));
	case ES_MSG_DESIRED:
		*keys = desired;
		return es_proto_desired(bool_member(msg, "full"),
					int_member(msg, "resourceVersion"),
					dup_member(msg, "objects"), dup_member(msg, "deleted"),
					bool_member(msg, "more"));
	case ES_MSG_DESIRED_ACK:
		*keys = rv;
		return es_proto_desired_ack(int_member(msg, "resourceVersion"));
	case ES_MSG_REPORT:
		rt = str_member(msg, "reportType");
		*keys = strcmp(rt, "patch") == 0 ? patch : report;
		return es_proto_report(int_member(msg, "seq"), str_member(msg, "time"), rt,
				       int_member(msg, "baseSeq"), dup_member(msg, "body"));
	case ES_MSG_ACK:
		*keys = seq;
		return es_proto_ack(int_member(msg, "seq"));
	case ES_MSG_RESYNC:
		*keys = only_type;
		return es_proto_resync();
	case ES_MSG_PING:
		*keys = time_keys;
		return es_proto_ping(str_member(msg, "time"));
	case ES_MSG_PONG:
		*keys = time_keys;
		return es_proto_pong(str_member(msg, "time"));
	case ES_MSG_ERROR:
		*keys = error;
		return es_proto_error((es_proto_code)es_proto_code_parse(str_member(msg, "code")),
				      str_member(msg, "message"));
	case ES_MSG_CERT_REQUEST:
		*keys = cert_request;
		return es_proto_cert_request(str_member(msg, "csr"));
	case ES_MSG_CERTIFICATE:
		*keys = certificate;
		return es_proto_certificate(str_member(msg, "certificate"),
					    str_member(msg, "caBundle"),
					    str_member(msg, "serial"),
					    str_member(msg, "notAfter"));
	case ES_MSG_CERT_REFUSED:
		*keys = cert_refused;
		return es_proto_cert_refused(str_member(msg, "reason"),
					     str_member(msg, "message"),
					     (int)int_member(msg, "retryAfterSeconds"));
	case ES_MSG_UNKNOWN:
		break;
	}
	FUZZ_CHECK(0, "decoder accepted an unknown type %d", (int)type);
	return NULL;
}

/* The parts of a message with encoders of their own: desired.deleted
 * entries and event bodies, rebuilt and compared. */
static void check_parts(es_msg_type type, const cJSON *msg)
{
	/* resourceVersion 0 is accepted and written as absent: not compared. */
	static const char *const ref_keys[] = {"kind", "name", "uid", NULL};
	static const char *const ev_keys[] = {"type", "reason", "message", "time", NULL};
	static const char *const io_keys[] = {"kind", "name", "uid", NULL};
	const cJSON *it, *body, *io;
	cJSON *again;

	if (type == ES_MSG_DESIRED) {
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(msg, "deleted")) {
			again = es_proto_deleted_ref(str_member(it, "kind"), str_member(it, "name"),
						     str_member(it, "uid"),
						     int_member(it, "resourceVersion"));
			if (!again)
				return;
			same_members(it, again, ref_keys, "deleted ref");
			cJSON_Delete(again);
		}
		return;
	}
	if (type != ES_MSG_REPORT || strcmp(str_member(msg, "reportType"), "event") != 0)
		return;
	body = cJSON_GetObjectItemCaseSensitive(msg, "body");
	io = cJSON_GetObjectItemCaseSensitive(body, "involvedObject");
	check_time(str_member(body, "time"));
	again = es_proto_event(str_member(body, "type"), str_member(body, "reason"),
			       str_member(body, "message"), str_member(io, "kind"),
			       str_member(io, "name"), str_member(io, "uid"),
			       str_member(body, "time"));
	if (!again)
		return;
	same_members(body, again, ev_keys, "event body");
	same_members(io, cJSON_GetObjectItemCaseSensitive(again, "involvedObject"), io_keys,
		     "event involvedObject");
	cJSON_Delete(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	es_msg_type type;
	es_proto_code code;
	const char *const *keys = NULL;
	cJSON *msg = NULL, *again = NULL, *enc = NULL, *enc_again = NULL;
	char *text = NULL, *enc_text = NULL;
	char err[512] = "";
	es_err rc;

	rc = es_proto_decode((const char *)data, size, &type, &msg, &code, err, sizeof(err));
	if (rc != ES_OK) {
		FUZZ_CHECK(msg == NULL && type == ES_MSG_UNKNOWN,
			   "a refused message left a tree or a type");
		FUZZ_CHECK(rc == ES_ERR_PROTO || rc == ES_ERR_NOMEM, "unexpected error %d", rc);
		FUZZ_CHECK(rc != ES_ERR_PROTO || err[0] != '\0', "refused without a message");
		FUZZ_CHECK(es_proto_code_name(code) != NULL && es_proto_close_code(code) >= 1000,
			   "refused with a bad code %d", (int)code);
		return 0;
	}
	FUZZ_CHECK(msg != NULL && es_proto_type_name(type) != NULL, "accepted without a tree");

	/* 1: the compact text of the tree decodes to an equal tree. */
	if (!(text = es_json_print(msg)))
		goto cleanup;
	again = decode_ok(text, type, "printed message");
	FUZZ_CHECK(fuzz_json_equal(msg, again), "printed message differs: %s vs %s",
		   fuzz_json_show(msg, 0), fuzz_json_show(again, 1));

	/* 2: the encoders rebuild what they carry. */
	if (type == ES_MSG_REPORT || type == ES_MSG_PING || type == ES_MSG_PONG)
		check_time(str_member(msg, "time"));
	if (!(enc = reencode(type, msg, &keys)) || !(enc_text = es_json_print(enc)))
		goto cleanup;
	enc_again = decode_ok(enc_text, type, "re-encoded message");
	same_members(msg, enc_again, keys, "re-encoded message");
	check_parts(type, msg);
cleanup:
	cJSON_Delete(msg);
	cJSON_Delete(again);
	cJSON_Delete(enc);
	cJSON_Delete(enc_again);
	free(text);
	free(enc_text);
	return 0;
}
