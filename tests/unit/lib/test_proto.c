/*
 * test_proto.c - protocol codec (lib/es_proto.c) against proto/golden and
 * hostile inputs (tests/fixtures/proto).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "es_json.h"
#include "es_obj.h"
#include "es_proto.h"

#define GOLDEN_DIR ES_SOURCE_DIR "/proto/golden"
#define HOSTILE_DIR ES_FIXTURES "/proto"

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int64_t get_int(const cJSON *m, const char *key)
{
	int64_t v = -1;
	char err[256];

	assert_int_equal(es_json_get_int(m, "t", key, 1, 0, ES_JSON_MAX_INT, &v, err,
					 sizeof(err)), ES_OK);
	return v;
}

static const char *get_str(const cJSON *m, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(m, key);

	assert_true(cJSON_IsString(it));
	return it->valuestring;
}

static cJSON *dup_member(const cJSON *m, const char *key)
{
	cJSON *d = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m, key), 1);

	assert_non_null(d);
	return d;
}

/* Re-encodes a decoded message with the es_proto_* encoders from its
 * members only. */
/* A hello or welcome of version 2 when m is one (es_proto_make_v2). */
static cJSON *v2_if(const cJSON *m, cJSON *msg)
{
	if (msg && es_proto_version_of(m) == 2)
		assert_int_equal(es_proto_make_v2(msg, es_proto_has_capability(
			m, ES_PROTO_CAP_DEFLATE)), ES_OK);
	return msg;
}

static cJSON *reencode(es_msg_type t, const cJSON *m)
{
	switch (t) {
	case ES_MSG_HELLO:
		return v2_if(m, es_proto_hello(get_str(m, "node"), get_str(m, "agentVersion"),
				      get_str(m, "bootId"), dup_member(m, "labels"),
				      get_int(m, "resourceVersion"), get_int(m, "nextSeq"),
				      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
					      m, "streamId"))));
	case ES_MSG_WELCOME:
		return v2_if(m, es_proto_welcome(get_str(m, "node"),
						 get_str(m, "controllerVersion"),
						 get_int(m, "ackedSeq")));
	case ES_MSG_DESIRED: {
		cJSON *del = cJSON_CreateArray();
		const cJSON *it;
		const cJSON *more = cJSON_GetObjectItemCaseSensitive(m, "more");

		assert_non_null(del);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(m, "deleted")) {
			const cJSON *rv = cJSON_GetObjectItemCaseSensitive(it, "resourceVersion");
			cJSON *r = es_proto_deleted_ref(get_str(it, "kind"), get_str(it, "name"),
							get_str(it, "uid"),
							rv ? get_int(it, "resourceVersion") : 0);
			assert_non_null(r);
			cJSON_AddItemToArray(del, r);
		}
		return es_proto_desired(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "full")),
					get_int(m, "resourceVersion"), dup_member(m, "objects"),
					del, cJSON_IsTrue(more));
	}
	case ES_MSG_DESIRED_ACK:
		return es_proto_desired_ack(get_int(m, "resourceVersion"));
	case ES_MSG_REPORT: {
		const char *rt = get_str(m, "reportType");
		const cJSON *body = cJSON_GetObjectItemCaseSensitive(m, "body");
		cJSON *nb;

		if (strcmp(rt, "event") == 0) {
			const cJSON *io = cJSON_GetObjectItemCaseSensitive(body, "involvedObject");
			const cJSON *uid = cJSON_GetObjectItemCaseSensitive(io, "uid");

			nb = es_proto_event(get_str(body, "type"), get_str(body, "reason"),
					    get_str(body, "message"), get_str(io, "kind"),
					    get_str(io, "name"),
					    uid ? uid->valuestring : NULL, get_str(body, "time"));
			/* Version 2 activity events carry their entries. */
			if (nb && cJSON_GetObjectItemCaseSensitive(body, "records"))
				cJSON_AddItemToObject(nb, "records", dup_member(body, "records"));
		} else {
			nb = cJSON_Duplicate(body, 1);
		}
		assert_non_null(nb);
		return es_proto_report(get_int(m, "seq"), get_str(m, "time"), rt,
				       cJSON_GetObjectItemCaseSensitive(m, "baseSeq") ?
				       get_int(m, "baseSeq") : 0,
				       nb);
	}
	case ES_MSG_ACK:
		return es_proto_ack(get_int(m, "seq"));
	case ES_MSG_RESYNC:
		return es_proto_resync();
	case ES_MSG_PING:
		return es_proto_ping(get_str(m, "time"));
	case ES_MSG_PONG:
		return es_proto_pong(get_str(m, "time"));
	case ES_MSG_ERROR: {
		int c = es_proto_code_parse(get_str(m, "code"));

		assert_true(c >= 0);
		if (c == ES_PC_OVERLOADED)
			return es_proto_overloaded((int)get_int(m, "retryAfterSeconds"),
						   get_str(m, "message"));
		return es_proto_error((es_proto_code)c, get_str(m, "message"));
	}
	case ES_MSG_CERT_REQUEST:
		return es_proto_cert_request(get_str(m, "csr"));
	case ES_MSG_CERTIFICATE:
		return es_proto_certificate(get_str(m, "certificate"), get_str(m, "caBundle"),
					    get_str(m, "serial"), get_str(m, "notAfter"));
	case ES_MSG_CERT_REFUSED:
		return es_proto_cert_refused(get_str(m, "reason"), get_str(m, "message"),
					     cJSON_GetObjectItemCaseSensitive(m, "retryAfterSeconds")
					     ? (int)get_int(m, "retryAfterSeconds") : 0);
	case ES_MSG_UNKNOWN:
		break;
	}
	fail_msg("unexpected type %d", (int)t);
	return NULL;
}

static void test_golden_roundtrip(void **state)
{
	DIR *d = opendir(GOLDEN_DIR);
	struct dirent *de;
	unsigned seen = 0;
	int files = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char path[1024], err[512], prefix[64];
		size_t len, n = strlen(de->d_name);
		char *text, *printed;
		cJSON *msg = NULL, *golden, *again = NULL, *re;
		es_msg_type t = ES_MSG_UNKNOWN, t2 = ES_MSG_UNKNOWN;
		es_proto_code code = ES_PC_INTERNAL;
		es_err rc;

		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", GOLDEN_DIR, de->d_name);
		text = read_all(path, &len);
		err[0] = '\0';
		rc = es_proto_decode(text, len, &t, &msg, &code, err, sizeof(err));
		if (rc != ES_OK)
			fail_msg("%s: decode failed (%d, code %s): %s", de->d_name, rc,
				 es_proto_code_name(code), err);
		assert_non_null(msg);

		/* The file name starts with the type name. */
		n = strcspn(de->d_name, "-.");
		assert_true(n < sizeof(prefix));
		memcpy(prefix, de->d_name, n);
		prefix[n] = '\0';
		assert_string_equal(es_proto_type_name(t), prefix);
		seen |= 1u << t;

		golden = cJSON_Parse(text);
		assert_non_null(golden);
		re = reencode(t, msg);
		assert_non_null(re);
		if (!cJSON_Compare(re, golden, 1)) {
			char *a = cJSON_Print(re);

			fail_msg("%s: re-encoding differs from the golden file:\n%s",
				 de->d_name, a);
		}

		/* What the encoders produce decodes again. */
		printed = es_json_print(re);
		assert_non_null(printed);
		rc = es_proto_decode(printed, strlen(printed), &t2, &again, &code, err,
				     sizeof(err));
		if (rc != ES_OK)
			fail_msg("%s: re-encoding does not decode: %s", de->d_name, err);
		assert_int_equal(t2, t);
		assert_true(cJSON_Compare(again, golden, 1));

		free(printed);
		cJSON_Delete(again);
		cJSON_Delete(re);
		cJSON_Delete(golden);
		cJSON_Delete(msg);
		free(text);
		files++;
	}
	closedir(d);
	assert_true(files >= 10);
	for (int t = ES_MSG_HELLO; t <= ES_MSG_LAST; t++)
		if (!(seen & (1u << t)))
			fail_msg("no golden file for type %s", es_proto_type_name((es_msg_type)t));
}

/* Decodes buf and expects failure with code; err must contain want (if not
 * NULL). */
static void expect_fail(const char *label, const char *buf, size_t len,
			es_proto_code want_code, const char *want)
{
	char err[512];
	cJSON *msg = (cJSON *)1;
	es_msg_type t = ES_MSG_PING;
	es_proto_code code = ES_PC_INTERNAL;
	es_err rc;

	err[0] = '\0';
	rc = es_proto_decode(buf, len, &t, &msg, &code, err, sizeof(err));
	if (rc != ES_ERR_PROTO)
		fail_msg("%s: expected ES_ERR_PROTO, got %d (%s)", label, rc, err);
	assert_null(msg);
	assert_int_equal(t, ES_MSG_UNKNOWN);
	if (code != want_code)
		fail_msg("%s: expected %s, got %s (%s)", label,
			 es_proto_code_name(want_code), es_proto_code_name(code), err);
	assert_true(err[0] != '\0');
	if (want && !strstr(err, want))
		fail_msg("%s: error \"%s\" does not mention \"%s\"", label, err, want);
}

static const struct {
	const char *file;
	es_proto_code code;
	const char *mentions;
} hostile[] = {
	{"not-json.txt", ES_PC_MALFORMED, NULL},
	{"truncated.json", ES_PC_MALFORMED, NULL},
	{"trailing-garbage.json", ES_PC_MALFORMED, NULL},
	{"invalid-utf8.json", ES_PC_MALFORMED, NULL},
	{"hello-nul-escape.json", ES_PC_MALFORMED, NULL},
	{"not-object.json", ES_PC_MALFORMED, "object"},
	{"type-missing.json", ES_PC_INVALID, "type"},
	{"type-number.json", ES_PC_INVALID, "type"},
	{"unknown-type.json", ES_PC_UNKNOWN_TYPE, "subscribe"},
	{"report-seq-string.json", ES_PC_INVALID, "report.seq"},
	{"report-seq-zero.json", ES_PC_INVALID, "report.seq"},
	{"report-seq-fraction.json", ES_PC_INVALID, "report.seq"},
	{"report-seq-too-big.json", ES_PC_MALFORMED, "out of range"},
	{"hello-dup-type.json", ES_PC_MALFORMED, "duplicate member name \"type\""},
	{"report-bom.json", ES_PC_MALFORMED, "byte-order mark"},
	{"hello-raw-control.json", ES_PC_MALFORMED, "raw control character"},
	{"ping-infinite.json", ES_PC_MALFORMED, "out of range"},
	{"report-patch-no-baseseq.json", ES_PC_INVALID, "report.baseSeq"},
	{"report-bad-type.json", ES_PC_INVALID, "report.reportType"},
	{"report-body-array.json", ES_PC_INVALID, "report.body"},
	{"report-time-bad.json", ES_PC_INVALID, "report.time"},
	{"report-event-bad-type.json", ES_PC_INVALID, "report.body.type"},
	{"hello-node-number.json", ES_PC_INVALID, "hello.node"},
	{"hello-node-invalid.json", ES_PC_INVALID, "hello.node"},
	{"hello-missing-nextseq.json", ES_PC_INVALID, "hello.nextSeq"},
	{"hello-version-3.json", ES_PC_VERSION, "hello.protocolVersion"},
	{"hello-version-string.json", ES_PC_INVALID, "hello.protocolVersion"},
	{"hello-label-number.json", ES_PC_INVALID, "hello.labels.site"},
	{"hello-capability-number.json", ES_PC_INVALID, "hello.capabilities[1]"},
	{"hello-stream-empty.json", ES_PC_INVALID, "hello.streamId"},
	{"hello-stream-slash.json", ES_PC_INVALID, "hello.streamId"},
	{"hello-stream-number.json", ES_PC_INVALID, "hello.streamId"},
	{"desired-object-number.json", ES_PC_INVALID, "desired.objects[0]"},
	{"desired-deleted-no-uid.json", ES_PC_INVALID, "desired.deleted[0]"},
	{"desired-deleted-rv-string.json", ES_PC_INVALID, "desired.deleted[0].resourceVersion"},
	{"desired-full-string.json", ES_PC_INVALID, "desired.full"},
	{"desired-more-number.json", ES_PC_INVALID, "desired.more"},
	{"welcome-acked-negative.json", ES_PC_INVALID, "welcome.ackedSeq"},
	{"error-unknown-code.json", ES_PC_INVALID, "error.code"},
	{"ping-time-offset.json", ES_PC_INVALID, "ping.time"},
};

static void test_hostile_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		char path[1024];
		size_t len;
		char *buf;

		snprintf(path, sizeof(path), "%s/%s", HOSTILE_DIR, hostile[i].file);
		buf = read_all(path, &len);
		expect_fail(hostile[i].file, buf, len, hostile[i].code, hostile[i].mentions);
		free(buf);
	}
}

static void test_hostile_generated(void **state)
{
	static const char ping[] = "{\"type\":\"ping\",\"time\":\"2026-11-30T04:07:32Z\"}";
	const size_t depth = 10000;
	size_t big = 10 * 1024 * 1024, n;
	char *buf;
	char err[256];
	cJSON *msg = NULL;
	es_msg_type t;
	es_proto_code code;

	(void)state;
	/* Nesting 10000 deep, and 65 deep (one past the limit). */
	buf = calloc(1, 2 * depth + 1);
	assert_non_null(buf);
	memset(buf, '[', depth);
	memset(buf + depth, ']', depth);
	expect_fail("nesting 10000", buf, 2 * depth, ES_PC_MALFORMED, NULL);
	n = (size_t)snprintf(buf, 2 * depth, "{\"type\":\"ping\",\"time\":\"2026-11-30T04:07:32Z\",\"x\":");
	for (int i = 0; i < ES_JSON_MAX_DEPTH; i++)
		buf[n++] = '[';
	for (int i = 0; i < ES_JSON_MAX_DEPTH; i++)
		buf[n++] = ']';
	buf[n++] = '}';
	expect_fail("nesting 65", buf, n, ES_PC_MALFORMED, NULL);
	free(buf);

	/* 10 MiB message, and one byte over the 1 MiB limit. */
	buf = malloc(big);
	assert_non_null(buf);
	memset(buf, ' ', big);
	memcpy(buf, ping, sizeof(ping) - 1);
	expect_fail("10 MiB", buf, big, ES_PC_TOO_BIG, "1048576");
	expect_fail("1 MiB + 1", buf, ES_PROTO_MAX_MESSAGE + 1, ES_PC_TOO_BIG, NULL);
	/* Exactly the limit is accepted (trailing white space is JSON). */
	assert_int_equal(es_proto_decode(buf, ES_PROTO_MAX_MESSAGE, &t, &msg, &code, err,
					 sizeof(err)), ES_OK);
	assert_int_equal(t, ES_MSG_PING);
	cJSON_Delete(msg);
	free(buf);

	/* A raw NUL byte inside a string, and right after the message. */
	{
		char nul[] = "{\"type\":\"ping\",\"time\":\"2026-11-30T04:07:32Z\",\"x\":\"a\0b\"}";
		char tail[sizeof(ping) + 1];

		expect_fail("raw NUL in string", nul, sizeof(nul) - 1, ES_PC_MALFORMED, NULL);
		memcpy(tail, ping, sizeof(ping));
		tail[sizeof(ping)] = 'x';
		expect_fail("raw NUL after message", tail, sizeof(tail), ES_PC_MALFORMED,
			    NULL);
	}
	expect_fail("empty", "", 0, ES_PC_MALFORMED, NULL);
	expect_fail("NULL buffer", NULL, 0, ES_PC_MALFORMED, NULL);
}

/* The renewal messages (PROTOCOL.md "Renewal"): each member required,
 * with its type and bounds. */
static void test_renewal_messages(void **state)
{
	static const struct {
		const char *label, *text, *mentions;
	} bad[] = {
		{ "request without csr", "{\"type\":\"certificateRequest\"}",
		  "certificateRequest.csr" },
		{ "request empty csr", "{\"type\":\"certificateRequest\",\"csr\":\"\"}",
		  "certificateRequest.csr" },
		{ "request csr number", "{\"type\":\"certificateRequest\",\"csr\":7}",
		  "certificateRequest.csr" },
		{ "certificate without caBundle",
		  "{\"type\":\"certificate\",\"certificate\":\"x\",\"serial\":\"01\","
		  "\"notAfter\":\"2026-12-02T00:00:00Z\"}", "certificate.caBundle" },
		{ "certificate bad notAfter",
		  "{\"type\":\"certificate\",\"certificate\":\"x\",\"caBundle\":\"y\","
		  "\"serial\":\"01\",\"notAfter\":\"tomorrow\"}", "certificate.notAfter" },
		{ "refused empty reason",
		  "{\"type\":\"certificateRefused\",\"reason\":\"\",\"message\":\"m\"}",
		  "certificateRefused.reason" },
		{ "refused retry 0",
		  "{\"type\":\"certificateRefused\",\"reason\":\"Internal\",\"message\":\"m\","
		  "\"retryAfterSeconds\":0}", "certificateRefused.retryAfterSeconds" },
	};
	char *big, err[256];
	cJSON *m, *msg = NULL;
	es_msg_type t;
	es_proto_code code;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail(bad[i].label, bad[i].text, strlen(bad[i].text), ES_PC_INVALID,
			    bad[i].mentions);
	/* A csr one byte over ES_PROTO_PEM_MAX is refused, at it accepted. */
	big = malloc(ES_PROTO_PEM_MAX + 2);
	assert_non_null(big);
	memset(big, 'A', ES_PROTO_PEM_MAX + 1);
	big[ES_PROTO_PEM_MAX + 1] = '\0';
	m = es_proto_cert_request(big);
	assert_non_null(m);
	free(big);
	big = es_json_print(m);
	assert_non_null(big);
	expect_fail("csr too long", big, strlen(big), ES_PC_INVALID, "certificateRequest.csr");
	n = strlen(big);
	/* Drop one 'A': exactly the limit. */
	memmove(big + 40, big + 41, n - 40);
	assert_int_equal(es_proto_decode(big, n - 1, &t, &msg, &code, err, sizeof(err)), ES_OK);
	assert_int_equal(t, ES_MSG_CERT_REQUEST);
	cJSON_Delete(msg);
	cJSON_Delete(m);
	free(big);
	/* retryAfterSeconds: 0 leaves it out, more than the bound is clamped. */
	m = es_proto_cert_refused("Internal", "m", 0);
	assert_non_null(m);
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "retryAfterSeconds"));
	cJSON_Delete(m);
	m = es_proto_cert_refused("Internal", "m", 99999);
	assert_non_null(m);
	assert_int_equal(get_int(m, "retryAfterSeconds"), ES_PROTO_RETRY_AFTER_MAX_S);
	cJSON_Delete(m);
	assert_string_equal(es_proto_type_name(ES_MSG_CERT_REFUSED), "certificateRefused");
}

/* error.retryAfterSeconds: optional, an integer 1 .. 3600. */
static void test_retry_after_bounds(void **state)
{
	static const char zero[] = "{\"type\":\"error\",\"code\":\"Overloaded\","
				   "\"message\":\"m\",\"retryAfterSeconds\":0}";
	static const char big[] = "{\"type\":\"error\",\"code\":\"Overloaded\","
				  "\"message\":\"m\",\"retryAfterSeconds\":3601}";
	static const char str[] = "{\"type\":\"error\",\"code\":\"Overloaded\","
				  "\"message\":\"m\",\"retryAfterSeconds\":\"30\"}";
	cJSON *m;

	(void)state;
	expect_fail("retryAfterSeconds 0", zero, sizeof(zero) - 1, ES_PC_INVALID,
		    "retryAfterSeconds");
	expect_fail("retryAfterSeconds 3601", big, sizeof(big) - 1, ES_PC_INVALID,
		    "retryAfterSeconds");
	expect_fail("retryAfterSeconds string", str, sizeof(str) - 1, ES_PC_INVALID,
		    "retryAfterSeconds");
	/* the builder clamps */
	m = es_proto_overloaded(0, "m");
	assert_int_equal(get_int(m, "retryAfterSeconds"), 1);
	cJSON_Delete(m);
	m = es_proto_overloaded(99999, "m");
	assert_int_equal(get_int(m, "retryAfterSeconds"), ES_PROTO_RETRY_AFTER_MAX_S);
	assert_string_equal(get_str(m, "code"), "Overloaded");
	cJSON_Delete(m);
}

static void test_codes_and_names(void **state)
{
	static const struct {
		es_proto_code c;
		const char *name;
		int close;
	} want[] = {
		{ES_PC_MALFORMED, "MalformedMessage", 1007},
		{ES_PC_INVALID, "InvalidMessage", 1008},
		{ES_PC_UNKNOWN_TYPE, "UnknownMessageType", 4002},
		{ES_PC_TOO_BIG, "MessageTooBig", 1009},
		{ES_PC_PROTOCOL, "ProtocolViolation", 1002},
		{ES_PC_VERSION, "UnsupportedVersion", 4001},
		{ES_PC_IDENTITY, "IdentityMismatch", 1008},
		{ES_PC_INTERNAL, "Internal", 1011},
		{ES_PC_OVERLOADED, "Overloaded", 1013},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_string_equal(es_proto_code_name(want[i].c), want[i].name);
		assert_int_equal(es_proto_close_code(want[i].c), want[i].close);
		assert_int_equal(es_proto_code_parse(want[i].name), (int)want[i].c);
	}
	assert_int_equal(es_proto_code_parse("Oops"), -1);
	assert_int_equal(es_proto_code_parse(NULL), -1);
	assert_null(es_proto_type_name(ES_MSG_UNKNOWN));
	assert_string_equal(es_proto_type_name(ES_MSG_DESIRED_ACK), "desiredAck");
	assert_string_equal(es_proto_type_name(ES_MSG_ERROR), "error");
}

static void test_encoder_details(void **state)
{
	cJSON *m;
	const cJSON *io;

	(void)state;
	/* baseSeq only for patch; more only when set; NULL arrays become []. */
	m = es_proto_report(5, "2026-11-30T04:07:12Z", "snapshot", 4, NULL);
	assert_non_null(m);
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "baseSeq"));
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(m, "body")));
	cJSON_Delete(m);
	m = es_proto_report(5, "2026-11-30T04:07:12Z", "patch", 4, cJSON_CreateObject());
	assert_non_null(m);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "baseSeq")->valuedouble, 4);
	cJSON_Delete(m);
	m = es_proto_desired(0, 7, NULL, NULL, 0);
	assert_non_null(m);
	assert_null(cJSON_GetObjectItemCaseSensitive(m, "more"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "objects")), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "deleted")), 0);
	cJSON_Delete(m);
	m = es_proto_desired(1, 7, NULL, NULL, 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "more")));
	cJSON_Delete(m);
	/* Integers up to 2^53-1 are exact. */
	m = es_proto_ack(ES_JSON_MAX_INT);
	{
		char *s = es_json_print(m);

		assert_non_null(strstr(s, "9007199254740991"));
		free(s);
	}
	cJSON_Delete(m);
	/* An event without uid leaves it out. */
	m = es_proto_event("Warning", "ReportsDropped", "3 dropped", "Node", "edge-01", NULL,
			   "2026-11-30T04:07:12Z");
	io = cJSON_GetObjectItemCaseSensitive(m, "involvedObject");
	assert_non_null(io);
	assert_null(cJSON_GetObjectItemCaseSensitive(io, "uid"));
	cJSON_Delete(m);
	/* welcome carries the protocol's constants. */
	m = es_proto_welcome("edge-01", "0.1.0", 3);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "heartbeatSeconds")->valuedouble,
			 ES_PROTO_HEARTBEAT_S);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "maxMessageBytes")->valuedouble,
			 ES_PROTO_MAX_MESSAGE);
	cJSON_Delete(m);
}

/* cJSON allocation hooks that fail the n-th allocation. */
static int alloc_budget = -1;

static void *failing_malloc(size_t sz)
{
	if (alloc_budget == 0)
		return NULL;
	if (alloc_budget > 0)
		alloc_budget--;
	return malloc(sz);
}

static cJSON *build_one(int which)
{
	switch (which) {
	case 0: {
		cJSON *labels = cJSON_CreateObject();

		if (labels)
			cJSON_AddStringToObject(labels, "site", "lab");
		return es_proto_hello("edge-01", "0.1.0", "b", labels, 3, 4, "s");
	}
	case 1:
		return es_proto_desired(1, 3, cJSON_CreateArray(), cJSON_CreateArray(), 1);
	case 2:
		return es_proto_report(3, "2026-11-30T04:07:12Z", "patch", 2,
				       cJSON_CreateObject());
	case 3:
		return es_proto_event("Normal", "Applied", "ok", "CollectorConfig", "default",
				      "3f6c2a8e-9b1d-4c7a-8e2f-5d0b6a9c1e47",
				      "2026-11-30T04:07:12Z");
	case 4:
		return es_proto_error(ES_PC_INVALID, "hello.node: bad");
	default:
		return es_proto_welcome("edge-01", "0.1.0", 1);
	}
}

/* Every allocation failure gives NULL (and, under LeakSanitizer, no leak of
 * the taken arguments); with enough memory the encoder succeeds. */
static void test_encoders_out_of_memory(void **state)
{
	cJSON_Hooks hooks = {failing_malloc, free};

	(void)state;
	cJSON_InitHooks(&hooks);
	for (int which = 0; which < 6; which++) {
		int ok = 0;

		for (int budget = 0; budget < 200 && !ok; budget++) {
			cJSON *m;

			alloc_budget = budget;
			m = build_one(which);
			if (m) {
				ok = 1;
				assert_true(budget > 0);
			}
			alloc_budget = -1;
			cJSON_Delete(m);
		}
		assert_true(ok);
	}
	cJSON_InitHooks(NULL);
}

/* The golden desired objects are objects the controller accepts
 * (es_obj_validate_desired), standalone and inside desired-full. */
static void test_golden_objects_valid(void **state)
{
	static const char *const files[] = {"collectorconfig", "healthrule", "egresspolicy"};
	char path[1024], err[512];
	cJSON *o = NULL, *m = NULL;
	const cJSON *it;
	size_t len;
	char *text;
	es_msg_type t;
	es_proto_code code;

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/objects/%s.json", GOLDEN_DIR, files[i]);
		assert_int_equal(es_json_load_file(path, 1 << 20, &o, err, sizeof(err)), ES_OK);
		if (es_obj_validate_desired(o, err, sizeof(err)) != ES_OK)
			fail_msg("%s: %s", path, err);
		cJSON_Delete(o);
	}
	snprintf(path, sizeof(path), "%s/desired-full.json", GOLDEN_DIR);
	text = read_all(path, &len);
	assert_int_equal(es_proto_decode(text, len, &t, &m, &code, err, sizeof(err)), ES_OK);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(m, "objects")) {
		if (es_obj_validate_desired(it, err, sizeof(err)) != ES_OK)
			fail_msg("desired-full.json: %s", err);
	}
	cJSON_Delete(m);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_roundtrip),
		cmocka_unit_test(test_hostile_fixtures),
		cmocka_unit_test(test_hostile_generated),
		cmocka_unit_test(test_codes_and_names),
		cmocka_unit_test(test_retry_after_bounds),
		cmocka_unit_test(test_renewal_messages),
		cmocka_unit_test(test_encoder_details),
		cmocka_unit_test(test_encoders_out_of_memory),
		cmocka_unit_test(test_golden_objects_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
