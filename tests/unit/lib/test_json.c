/* Unit tests of lib/es_json.c: strict parsing and typed getters. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "es_json.h"

static es_err parse_str(const char *s, cJSON **out, char *err, size_t errsz)
{
	return es_json_parse(s, strlen(s), ES_JSON_MAX_DEPTH, out, err, errsz);
}

/* n nested arrays: "[[[...]]]". */
static char *nested(size_t n)
{
	char *s = malloc(2 * n + 1);

	assert_non_null(s);
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	return s;
}

static void test_depth_64_ok(void **state)
{
	char err[256] = "";
	cJSON *v = NULL;
	char *s = nested(64);

	(void)state;
	assert_int_equal(parse_str(s, &v, err, sizeof(err)), ES_OK);
	assert_non_null(v);
	cJSON_Delete(v);
	free(s);
}

static void test_depth_65_refused(void **state)
{
	char err[256] = "";
	cJSON *v = (cJSON *)&err;
	char *s = nested(65);

	(void)state;
	assert_int_equal(parse_str(s, &v, err, sizeof(err)), ES_ERR_PARSE);
	assert_null(v);
	assert_non_null(strstr(err, "nesting deeper than 64"));
	free(s);
}

static void test_depth_objects(void **state)
{
	char err[256] = "";
	char buf[1024] = "";
	cJSON *v = NULL;
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 64; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"a\":");
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "1");
	for (int i = 0; i < 64; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}");
	assert_int_equal(parse_str(buf, &v, err, sizeof(err)), ES_OK);
	cJSON_Delete(v);
	/* Brackets inside strings do not count. */
	assert_int_equal(parse_str("[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]",
				   &v, err, sizeof(err)), ES_OK);
	cJSON_Delete(v);
}

static void test_depth_10000_refused(void **state)
{
	char err[256] = "";
	cJSON *v = NULL;
	char *s = nested(10000);

	(void)state;
	assert_int_equal(parse_str(s, &v, err, sizeof(err)), ES_ERR_PARSE);
	assert_null(v);
	/* Unclosed: only the openers. */
	s[10000] = '\0';
	assert_int_equal(parse_str(s, &v, err, sizeof(err)), ES_ERR_PARSE);
	free(s);
}

static void test_nul_escape_refused(void **state)
{
	char err[256] = "";
	cJSON *v = NULL;

	(void)state;
	assert_int_equal(parse_str("{\"a\":\"x\\u0000y\"}", &v, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_null(v);
	assert_non_null(strstr(err, "\\u0000"));
	assert_int_equal(parse_str("{\"a\\u0000\":1}", &v, err, sizeof(err)),
			 ES_ERR_PARSE);
	/* An escaped backslash followed by the text u0000 is fine. */
	assert_int_equal(parse_str("[\"\\\\u0000\"]", &v, err, sizeof(err)), ES_OK);
	assert_string_equal(cJSON_GetArrayItem(v, 0)->valuestring, "\\u0000");
	cJSON_Delete(v);
	assert_int_equal(parse_str("[\"\\u0041\"]", &v, err, sizeof(err)), ES_OK);
	assert_string_equal(cJSON_GetArrayItem(v, 0)->valuestring, "A");
	cJSON_Delete(v);
}

static void test_raw_nul_refused(void **state)
{
	static const char in_string[] = "{\"a\":\"x\0y\"}";
	static const char after[] = "{}\0";
	char err[256] = "";
	cJSON *v = NULL;

	(void)state;
	assert_int_equal(es_json_parse(in_string, sizeof(in_string) - 1, 64, &v,
				       err, sizeof(err)), ES_ERR_PARSE);
	assert_null(v);
	assert_non_null(strstr(err, "NUL byte at offset 7"));
	assert_int_equal(es_json_parse(after, sizeof(after) - 1, 64, &v, err,
				       sizeof(err)), ES_ERR_PARSE);
	assert_null(v);
}

static void test_truncated_and_trailing(void **state)
{
	static const char *const bad[] = {
		"{\"a\":1", "[1,2", "\"abc", "{\"a\":", "tru", "{} x", "[1]]",
		"", " ", "{\"a\":1,}", "[01]", "[1.]", "[-.5]", "[00]", "[-]",
		"[1e]", "[1.5e+]", "[+1]", "[.5]",
	};
	char err[256];
	cJSON *v = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse_str(bad[i], &v, err, sizeof(err)), ES_ERR_PARSE);
		assert_null(v);
		assert_true(err[0] != '\0');
	}
	/* Whitespace after the value is allowed. */
	assert_int_equal(parse_str(" {\"a\":1} \n\t", &v, err, sizeof(err)), ES_OK);
	cJSON_Delete(v);
	/* len bounds the text: bytes after it are never read. */
	assert_int_equal(es_json_parse("{}garbage", 2, 64, &v, err, sizeof(err)), ES_OK);
	cJSON_Delete(v);
	assert_int_equal(es_json_parse("{\"a\":1}", 5, 64, &v, err, sizeof(err)),
			 ES_ERR_PARSE);
}

static void test_invalid_utf8_refused(void **state)
{
	static const char *const bad[] = {
		"[\"\xff\"]",             /* never valid */
		"[\"\xc0\xaf\"]",         /* overlong '/' */
		"[\"\xe0\x80\xaf\"]",     /* overlong, 3 bytes */
		"[\"\xed\xa0\x80\"]",     /* UTF-16 surrogate */
		"[\"\xf4\x90\x80\x80\"]", /* above U+10FFFF */
		"[\"\xe2\x82\"]",         /* truncated sequence */
		"[\"\x80\"]",             /* lone continuation byte */
	};
	char err[256];
	cJSON *v = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse_str(bad[i], &v, err, sizeof(err)), ES_ERR_PARSE);
		assert_null(v);
		assert_non_null(strstr(err, "invalid UTF-8 at offset 2"));
	}
	assert_int_equal(parse_str("[\"\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9\"]", &v,
				   err, sizeof(err)), ES_OK);
	cJSON_Delete(v);
}

static void test_getters(void **state)
{
	char err[256];
	cJSON *v = NULL;
	const char *s = "unchanged";
	int64_t n = 42;
	int b = 7;
	const cJSON *o = NULL;

	(void)state;
	assert_int_equal(parse_str("{\"node\":\"n1\",\"nextSeq\":\"3\",\"seq\":5,"
				   "\"full\":true,\"labels\":{},\"objects\":[],"
				   "\"frac\":1.5,\"neg\":-1}",
				   &v, err, sizeof(err)), ES_OK);

	assert_int_equal(es_json_get_str(v, "hello", "node", 1, &s, err, sizeof(err)), ES_OK);
	assert_string_equal(s, "n1");
	assert_int_equal(es_json_get_str(v, "hello", "seq", 1, &s, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "hello.seq: expected a string");

	assert_int_equal(es_json_get_int(v, "hello", "nextSeq", 1, 0, ES_JSON_MAX_INT,
					 &n, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "hello.nextSeq: expected an integer in 0..2^53-1");
	assert_int_equal(n, 42);
	assert_int_equal(es_json_get_int(v, "hello", "seq", 1, 0, ES_JSON_MAX_INT,
					 &n, err, sizeof(err)), ES_OK);
	assert_int_equal(n, 5);
	assert_int_equal(es_json_get_int(v, "hello", "seq", 1, 6, 10, &n, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "hello.seq: expected an integer in 6..10");
	assert_int_equal(es_json_get_int(v, "x", "frac", 1, 0, 10, &n, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "x.frac: expected an integer in 0..10");
	assert_int_equal(es_json_get_int(v, "x", "neg", 1, 0, 10, &n, err,
					 sizeof(err)), ES_ERR_INVAL);

	/* Missing: required names the member; optional is silent. */
	err[0] = '\0';
	assert_int_equal(es_json_get_str(v, "hello", "bootId", 0, &s, err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_string_equal(err, "");
	assert_string_equal(s, "n1");
	assert_int_equal(es_json_get_str(v, "hello", "bootId", 1, &s, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "hello.bootId"));

	assert_int_equal(es_json_get_bool(v, "desired", "full", 1, &b, err, sizeof(err)), ES_OK);
	assert_int_equal(b, 1);
	assert_int_equal(es_json_get_bool(v, "desired", "seq", 1, &b, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "desired.seq: expected a boolean");

	assert_int_equal(es_json_get_obj(v, "hello", "labels", 1, &o, err, sizeof(err)), ES_OK);
	assert_true(cJSON_IsObject(o));
	assert_int_equal(es_json_get_obj(v, "hello", "objects", 1, &o, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "hello.objects: expected an object");
	assert_int_equal(es_json_get_arr(v, "desired", "objects", 1, &o, err, sizeof(err)), ES_OK);
	assert_true(cJSON_IsArray(o));
	assert_int_equal(es_json_get_arr(v, "desired", "labels", 1, &o, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "desired.labels: expected an array");
	cJSON_Delete(v);
}

static void test_int_limits(void **state)
{
	char err[256];
	cJSON *v = NULL, *o;
	char *txt;
	int64_t n = 0;

	(void)state;
	/* The parser refuses numbers past 2^53-1 (test_number_range); the
	 * getters check the range again for trees built in memory. */
	assert_int_equal(parse_str("{\"max\":9007199254740991,\"exp\":1e3}", &v,
				   err, sizeof(err)), ES_OK);
	assert_non_null(cJSON_AddNumberToObject(v, "over", 9007199254740992.0));
	assert_non_null(cJSON_AddNumberToObject(v, "big", 9007199254740994.0));
	assert_non_null(cJSON_AddNumberToObject(v, "huge", INFINITY));
	assert_int_equal(es_json_get_int(v, "m", "max", 1, 0, INT64_MAX, &n, err,
					 sizeof(err)), ES_OK);
	assert_true(n == ES_JSON_MAX_INT);
	assert_int_equal(es_json_get_int(v, "m", "over", 1, 0, INT64_MAX, &n, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "m.over: expected an integer in 0..2^53-1");
	assert_int_equal(es_json_get_int(v, "m", "big", 1, 0, INT64_MAX, &n, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_json_get_int(v, "m", "huge", 1, INT64_MIN, INT64_MAX, &n,
					 err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_json_get_int(v, "m", "exp", 1, 0, 5000, &n, err,
					 sizeof(err)), ES_OK);
	assert_int_equal(n, 1000);
	cJSON_Delete(v);

	/* add_int and print keep 2^53-1 exact. */
	o = cJSON_CreateObject();
	assert_non_null(es_json_add_int(o, "v", ES_JSON_MAX_INT));
	txt = es_json_print(o);
	assert_non_null(txt);
	assert_string_equal(txt, "{\"v\":9007199254740991}");
	cJSON_Delete(o);
	assert_int_equal(parse_str(txt, &v, err, sizeof(err)), ES_OK);
	assert_int_equal(es_json_get_int(v, "m", "v", 1, 0, ES_JSON_MAX_INT, &n, err,
					 sizeof(err)), ES_OK);
	assert_true(n == ES_JSON_MAX_INT);
	cJSON_Delete(v);
	free(txt);

	/* Large integers, fractions and escapes survive a print/parse round. */
	assert_int_equal(parse_str("{\"a\":[1234567890123456,-9007199254740991,0.1,"
				   "2.5e-7,1e300],\"s\":\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\"}",
				   &v, err, sizeof(err)), ES_OK);
	txt = es_json_print(v);
	assert_non_null(txt);
	assert_string_equal(txt, "{\"a\":[1234567890123456,-9007199254740991,0.1,"
			    "2.5e-07,1e+300],\"s\":\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\"}");
	assert_int_equal(parse_str(txt, &o, err, sizeof(err)), ES_OK);
	assert_true(cJSON_Compare(v, o, 1));
	cJSON_Delete(o);
	cJSON_Delete(v);
	free(txt);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/es_test_json_XXXXXX";
	char err[256];
	cJSON *v = NULL;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"a\": [1, 2]}\n", 14), 14);
	close(fd);
	assert_int_equal(es_json_load_file(path, 1024, &v, err, sizeof(err)), ES_OK);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(v, "a")), 2);
	cJSON_Delete(v);
	assert_int_equal(es_json_load_file(path, 13, &v, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_null(v);
	assert_non_null(strstr(err, path));
	unlink(path);
	assert_int_equal(es_json_load_file(path, 1024, &v, err, sizeof(err)), ES_ERR_IO);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "No such file"));
}

/* Parses s and expects ES_ERR_PARSE with want somewhere in the message. */
static void refused(const char *s, size_t len, const char *want)
{
	char err[256] = "";
	cJSON *v = (cJSON *)1;

	assert_int_equal(es_json_parse(s, len, ES_JSON_MAX_DEPTH, &v, err,
				       sizeof(err)), ES_ERR_PARSE);
	assert_null(v);
	if (strstr(err, want) == NULL)
		fail_msg("input %.40s: message \"%s\" lacks \"%s\"", s, err, want);
}

static void accepted(const char *s)
{
	char err[256] = "";
	cJSON *v = NULL;

	if (parse_str(s, &v, err, sizeof(err)) != ES_OK)
		fail_msg("input %.60s refused: %s", s, err);
	cJSON_Delete(v);
}

static void test_bom_refused(void **state)
{
	(void)state;
	refused("\xef\xbb\xbf{}", 5, "byte-order mark");
	accepted("\"\xef\xbb\xbf\""); /* U+FEFF inside a string is a character */
}

static void test_control_characters(void **state)
{
	(void)state;
	refused("\"a\tb\"", 5, "raw control character 0x09");
	refused("\"a\nb\"", 5, "raw control character 0x0a");
	refused("{\"k\":\"\x1f\"}", 8, "0x1f");
	refused("[1,\x01" "2]", 5, "raw control character 0x01");
	accepted("{\n\t\"k\" :\r\n [1, 2]\n}");
	accepted("\"a\\tb\\u001f\"");
}

static void test_number_range(void **state)
{
	(void)state;
	refused("1e999", 5, "out of range");
	refused("[-1e999]", 8, "out of range");
	refused("{\"port\":18446744073709551616}", 29, "out of range");
	refused("9007199254740992", 16, "out of range");
	refused("-9007199254740992", 17, "out of range");
	refused("123456789012345678901234567890123456789012345678901234567890123456789012",
		72, "out of range");
	refused("1.5e308000000000000000000000000000000000000000000000000000000000000000000",
		73, "out of range");
	accepted("9007199254740991");
	accepted("-9007199254740991");
	/* Numbers with a fraction or an exponent are doubles: finite is enough. */
	accepted("[0.5, -0.25, 1e-300, 0, -0, 12.5e3, 1e18, 1E+16, 1.7976931348623157e308]");
	accepted("0.1234567890123456789012345678901234567890123456789012345678901234567890");
}

static void test_duplicate_members(void **state)
{
	char big[1024];
	size_t n = 0;

	(void)state;
	refused("{\"type\":\"ping\",\"type\":\"hello\"}", 30,
		"duplicate member name \"type\"");
	refused("{\"metadata\":{\"name\":\"a\",\"name\":\"../x\"}}", 39,
		"duplicate member name \"name\"");
	refused("[{\"a\":1},{\"b\":1,\"b\":2}]", 23, "\"b\"");
	/* Past the linear-search size: the sorted path. */
	n += (size_t)snprintf(big + n, sizeof(big) - n, "{");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "\"k%d\":%d,", i, i);
	n += (size_t)snprintf(big + n, sizeof(big) - n, "\"k17\":0}");
	refused(big, n, "duplicate member name \"k17\"");
	big[n - 8] = '\0';
	strcat(big, "\"k99\":0}");
	accepted(big);
	/* The same name in two objects is fine. */
	accepted("{\"a\":{\"x\":1},\"b\":{\"x\":1}}");
}

static void test_overlong_utf8_refused(void **state)
{
	(void)state;
	refused("\"\xc0\xaf\"", 4, "invalid UTF-8");
	refused("\"\xe0\x80\xaf\"", 5, "invalid UTF-8");
	refused("\"\xf0\x80\x80\xaf\"", 6, "invalid UTF-8");
	refused("\"\xed\xa0\x80\"", 5, "invalid UTF-8"); /* a surrogate */
	refused("\"\xf4\x90\x80\x80\"", 6, "invalid UTF-8"); /* above U+10FFFF */
	accepted("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

static void test_index(void **state)
{
	char err[256] = "", text[4096];
	size_t n = 0;
	cJSON *small = NULL, *bigobj = NULL;
	es_json_index ix;

	(void)state;
	assert_int_equal(parse_str("{\"a\":1,\"b\":2}", &small, err, sizeof(err)), ES_OK);
	assert_int_equal(es_json_index_init(&ix, small), ES_OK);
	assert_null(ix.sorted);
	assert_int_equal(es_json_index_find(&ix, "b")->valueint, 2);
	assert_null(es_json_index_find(&ix, "c"));
	es_json_index_free(&ix);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{");
	for (int i = 200; i > 0; i--)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"m%d\":%d",
				      i == 200 ? "" : ",", i, i);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "}");
	assert_int_equal(parse_str(text, &bigobj, err, sizeof(err)), ES_OK);
	assert_int_equal(es_json_index_init(&ix, bigobj), ES_OK);
	assert_non_null(ix.sorted);
	for (int i = 1; i <= 200; i++) {
		char key[16];

		snprintf(key, sizeof(key), "m%d", i);
		assert_int_equal(es_json_index_find(&ix, key)->valueint, i);
	}
	assert_null(es_json_index_find(&ix, "m0"));
	assert_null(es_json_index_find(&ix, "m201"));
	es_json_index_free(&ix);
	/* Not an object: empty. */
	assert_int_equal(es_json_index_init(&ix, NULL), ES_OK);
	assert_null(es_json_index_find(&ix, "a"));
	es_json_index_free(&ix);
	cJSON_Delete(small);
	cJSON_Delete(bigobj);
}

static void test_int_value(void **state)
{
	cJSON *v;
	int64_t out = -7;

	(void)state;
	v = cJSON_CreateNumber(INFINITY);
	assert_int_equal(es_json_int_value(v, 0, 65535, &out), -1);
	cJSON_SetNumberValue(v, NAN);
	assert_int_equal(es_json_int_value(v, 0, 65535, &out), -1);
	cJSON_SetNumberValue(v, 1.8446744073709552e19);
	assert_int_equal(es_json_int_value(v, INT64_MIN, INT64_MAX, &out), -1);
	cJSON_SetNumberValue(v, 80.5);
	assert_int_equal(es_json_int_value(v, 0, 65535, &out), -1);
	cJSON_SetNumberValue(v, 65536);
	assert_int_equal(es_json_int_value(v, 0, 65535, &out), -1);
	assert_int_equal(out, -7);
	cJSON_SetNumberValue(v, 443);
	assert_int_equal(es_json_int_value(v, 0, 65535, &out), 0);
	assert_int_equal(out, 443);
	cJSON_Delete(v);
}

/* es_json_equal: exact, in any member order, in proportion to size. */
static void test_equal(void **state)
{
	static const char *const same[][2] = {
		{"{\"a\":1,\"b\":[1,\"x\",null,true]}", "{\"b\":[1,\"x\",null,true],\"a\":1.0}"},
		{"{}", "{}"}, {"[]", "[]"}, {"null", "null"}, {"0", "-0"}, {"\"\"", "\"\""},
		{"{\"a\":{\"b\":{\"c\":[{}]}}}", "{\"a\":{\"b\":{\"c\":[{}]}}}"},
	};
	static const char *const differ[][2] = {
		{"{\"a\":1}", "{\"a\":1,\"b\":2}"}, {"{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":2}"},
		{"[1,2]", "[2,1]"}, {"[1]", "[1,1]"}, {"1", "\"1\""}, {"true", "false"},
		{"null", "{}"}, {"{\"a\":\"x\"}", "{\"a\":\"X\"}"},
		/* cJSON_Compare takes these as equal (within 2^-52). */
		{"1", "1.0000000000000002"}, {"9007199254740991", "9007199254740990"},
	};
	char err[256] = "";
	cJSON *a = NULL, *b = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		assert_int_equal(parse_str(same[i][0], &a, err, sizeof(err)), ES_OK);
		assert_int_equal(parse_str(same[i][1], &b, err, sizeof(err)), ES_OK);
		assert_int_equal(es_json_equal(a, b), 1);
		assert_int_equal(es_json_equal(b, a), 1);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
		assert_int_equal(parse_str(differ[i][0], &a, err, sizeof(err)), ES_OK);
		assert_int_equal(parse_str(differ[i][1], &b, err, sizeof(err)), ES_OK);
		assert_int_equal(es_json_equal(a, b), 0);
		assert_int_equal(es_json_equal(b, a), 0);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	assert_int_equal(es_json_equal(NULL, NULL), 1);
	a = cJSON_CreateObject();
	assert_int_equal(es_json_equal(a, NULL), 0);
	assert_int_equal(es_json_equal(NULL, a), 0);
	cJSON_Delete(a);
}

/* A name given twice: the first counts on both sides, and every name of
 * one side must be in the other. */
static void test_equal_duplicate_names(void **state)
{
	cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();

	(void)state;
	assert_non_null(cJSON_AddNumberToObject(a, "x", 1));
	assert_non_null(cJSON_AddNumberToObject(a, "x", 1));
	assert_non_null(cJSON_AddNumberToObject(b, "x", 1));
	assert_non_null(cJSON_AddNumberToObject(b, "y", 1));
	assert_int_equal(es_json_equal(a, b), 0);
	assert_int_equal(es_json_equal(b, a), 0);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* Equal objects of 200 000 members each, one level down: member lookups in
 * a list (cJSON_Compare) would take 2e10 string comparisons (minutes; the
 * past the test's CTest timeout). */
static void test_equal_large(void **state)
{
	const int n = 200000;
	cJSON *a = cJSON_CreateObject(), *oa = cJSON_AddObjectToObject(a, "o"), *b, *m;
	char k[16];

	(void)state;
	assert_non_null(oa);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "m%d", i);
		assert_non_null(cJSON_AddNumberToObject(oa, k, i));
	}
	b = cJSON_Duplicate(a, 1);
	assert_non_null(b);
	assert_int_equal(es_json_equal(a, b), 1);
	m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "o"), "m199999");
	cJSON_SetNumberValue(m, 0);
	assert_int_equal(es_json_equal(a, b), 0);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* Printed numbers read back as the same double, and are never integer
 * literals past 2^53-1, which es_json_parse refuses (found by
 * tests/fuzz/fuzz_proto: 9007199254740993.5 was printed as
 * "9007199254740994", and a controller that stored it could not read its
 * node back). */
static void test_print_numbers_read_back(void **state)
{
	static const char *const texts[][2] = {
		{"9007199254740993.5", "9007199254740994.0"},
		{"9.007199254740992e15", "9007199254740992.0"},
		{"-9007199254740993.5", "-9007199254740994.0"},
		{"1e17", "1e+17"},
		{"9007199254740991", "9007199254740991"},
		{"0.30000000000000004", "0.30000000000000004"},
		{"1.0000000000000002", "1.0000000000000002"},
		{"0.1", "0.1"},
		{"90071992547409224.0191", NULL},
		{"123456789012345678.5", NULL},
		{"5e-324", NULL},
		{"1.7976931348623157e308", NULL},
	};
	char err[256] = "", buf[ES_JSON_NUMBER_LEN];
	cJSON *v = NULL, *again = NULL;
	char *txt;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		assert_int_equal(parse_str(texts[i][0], &v, err, sizeof(err)), ES_OK);
		txt = es_json_print(v);
		assert_non_null(txt);
		if (texts[i][1])
			assert_string_equal(txt, texts[i][1]);
		assert_string_equal(es_json_number_text(v->valuedouble, buf), txt);
		assert_int_equal(parse_str(txt, &again, err, sizeof(err)), ES_OK);
		assert_true(again->valuedouble == v->valuedouble);
		cJSON_Delete(again);
		cJSON_Delete(v);
		free(txt);
	}
	assert_null(es_json_number_text(INFINITY, buf));
	assert_null(es_json_number_text(NAN, buf));
}

/* Records each es_json_diff_members call as "name:f:t" ('-' for NULL, else
 * the member printed), stopping with -7 at a member named "stop". */
static int record_member(const char *name, const cJSON *f, const cJSON *t, void *ctx)
{
	char *log = ctx, *fs = f ? cJSON_PrintUnformatted(f) : NULL,
	     *ts = t ? cJSON_PrintUnformatted(t) : NULL;
	size_t len = strlen(log);

	snprintf(log + len, 512 - len, "%s%s:%s:%s", len ? " " : "", name,
		 fs ? fs : "-", ts ? ts : "-");
	free(fs);
	free(ts);
	return strcmp(name, "stop") == 0 ? -7 : 0;
}

static void walk(const char *from, const char *to, const char *want, int rc)
{
	cJSON *f = cJSON_Parse(from), *t = cJSON_Parse(to);
	char log[512] = "";

	assert_non_null(f);
	assert_non_null(t);
	assert_int_equal(es_json_diff_members(f, t, record_member, log), rc);
	assert_string_equal(log, want);
	cJSON_Delete(f);
	cJSON_Delete(t);
}

static void test_diff_members(void **state)
{
	(void)state;
	/* removed (absent or null in to), changed, added; equal ones skipped;
	 * from's order first, then to's additions. */
	walk("{\"a\":1,\"b\":2,\"c\":3,\"d\":4}",
	     "{\"e\":5,\"c\":30,\"a\":1,\"d\":null}",
	     "b:2:- c:3:30 d:4:- e:-:5", 0);
	/* a null in from that to gives a value is one change, not also an
	 * addition; a null in to that from lacks is nothing. */
	walk("{\"a\":null}", "{\"a\":{\"x\":1},\"z\":null}", "a:null:{\"x\":1}", 0);
	/* the first of a name given twice counts */
	walk("{\"a\":1,\"a\":2}", "{\"a\":1}", "", 0);
	walk("{}", "{\"a\":1,\"a\":2}", "a:-:1", 0);
	/* not objects: empty */
	walk("[1]", "{\"a\":1}", "a:-:1", 0);
	walk("{\"a\":1}", "7", "a:1:-", 0);
	/* the callback's negative value stops the walk and is returned */
	walk("{\"stop\":1,\"b\":1}", "{}", "stop:1:-", -7);
}

/* es_json_object_member: an object member as it is, anything else (or
 * nothing) replaced by an empty object. */
static void test_object_member(void **state)
{
	cJSON *o = cJSON_Parse("{\"a\":{\"x\":1},\"b\":3}");
	cJSON *m;

	(void)state;
	assert_non_null(o);
	m = es_json_object_member(o, "a");
	assert_ptr_equal(m, cJSON_GetObjectItemCaseSensitive(o, "a"));
	assert_non_null(cJSON_GetObjectItemCaseSensitive(m, "x"));
	m = es_json_object_member(o, "b");
	assert_true(cJSON_IsObject(m));
	assert_null(m->child);
	assert_ptr_equal(m, cJSON_GetObjectItemCaseSensitive(o, "b"));
	m = es_json_object_member(o, "c");
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "c")));
	assert_int_equal(cJSON_GetArraySize(o), 3);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_depth_64_ok),
		cmocka_unit_test(test_diff_members),
		cmocka_unit_test(test_depth_65_refused),
		cmocka_unit_test(test_depth_objects),
		cmocka_unit_test(test_depth_10000_refused),
		cmocka_unit_test(test_nul_escape_refused),
		cmocka_unit_test(test_raw_nul_refused),
		cmocka_unit_test(test_truncated_and_trailing),
		cmocka_unit_test(test_invalid_utf8_refused),
		cmocka_unit_test(test_getters),
		cmocka_unit_test(test_int_limits),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_bom_refused),
		cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_number_range),
		cmocka_unit_test(test_duplicate_members),
		cmocka_unit_test(test_overlong_utf8_refused),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_int_value),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_equal_duplicate_names),
		cmocka_unit_test(test_equal_large),
		cmocka_unit_test(test_print_numbers_read_back),
		cmocka_unit_test(test_object_member),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
