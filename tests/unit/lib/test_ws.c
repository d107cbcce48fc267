/*
 * test_ws.c - lib/es_ws.c: reassembling fragments into one message, the
 * size limit, refusing binary messages unless compression was agreed, and
 * compressed messages (PROTOCOL.md "Transport", "Limits", "Compressed
 * messages"),
 * and the outgoing queue with its limits. libwebsockets' frame flags and
 * writes are wrapped (lws_is_final_fragment, lws_frame_is_binary,
 * lws_write, lws_callback_on_writable), and realloc, to fail on demand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <zlib.h>

#include "es_json.h"
#include "es_ws.h"

/* What the wrapped libwebsockets calls see and answer. */
static int frame_final = 1, frame_binary;
static int writable_asks, write_fails, realloc_fails;
static char written[4][256];
static size_t written_len[4];
static int written_binary[4];
static int nwritten;

/* Never dereferenced: every lws call on it is wrapped. */
static struct lws *const fake_wsi = (struct lws *)&frame_final;

int __wrap_lws_is_final_fragment(struct lws *wsi);
int __wrap_lws_frame_is_binary(struct lws *wsi);
int __wrap_lws_write(struct lws *wsi, unsigned char *buf, size_t len,
		     enum lws_write_protocol wp);
int __wrap_lws_callback_on_writable(struct lws *wsi);
void *__real_realloc(void *p, size_t sz);
void *__wrap_realloc(void *p, size_t sz);

int __wrap_lws_is_final_fragment(struct lws *wsi)
{
	assert_ptr_equal(wsi, fake_wsi);
	return frame_final;
}

int __wrap_lws_frame_is_binary(struct lws *wsi)
{
	assert_ptr_equal(wsi, fake_wsi);
	return frame_binary;
}

int __wrap_lws_write(struct lws *wsi, unsigned char *buf, size_t len,
		     enum lws_write_protocol wp)
{
	assert_ptr_equal(wsi, fake_wsi);
	assert_true(wp == LWS_WRITE_TEXT || wp == LWS_WRITE_BINARY);
	if (write_fails)
		return -1;
	assert_true(nwritten < 4 && len < sizeof(written[0]));
	written_binary[nwritten] = wp == LWS_WRITE_BINARY;
	memcpy(written[nwritten], buf, len);
	written_len[nwritten++] = len;
	return (int)len;
}

int __wrap_lws_callback_on_writable(struct lws *wsi)
{
	assert_ptr_equal(wsi, fake_wsi);
	writable_asks++;
	return 1;
}

void *__wrap_realloc(void *p, size_t sz)
{
	return realloc_fails ? NULL : __real_realloc(p, sz);
}

static int reset(void **state)
{
	(void)state;
	frame_final = 1;
	frame_binary = 0;
	writable_asks = write_fails = realloc_fails = 0;
	nwritten = 0;
	return 0;
}

/* Adds a piece with the given flags. */
static es_err add(es_ws_rx *rx, const char *text, size_t len, int binary,
		  int final, es_ws_msg *m)
{
	frame_binary = binary;
	frame_final = final;
	return es_ws_rx_add(rx, fake_wsi, text, len, m);
}

static void test_rx_fragments(void **state)
{
	es_ws_rx rx = { 0 };
	es_ws_msg m;

	(void)state;
	assert_int_equal(add(&rx, "{\"type\"", 7, 0, 0, &m), ES_OK);
	assert_false(m.done);
	assert_int_equal(add(&rx, "", 0, 0, 0, &m), ES_OK);
	assert_false(m.done);
	assert_int_equal(add(&rx, ":\"pong\"}", 8, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_int_equal(m.len, 15);
	assert_memory_equal(m.text, "{\"type\":\"pong\"}", 15);
	/* The next message starts afresh. */
	assert_int_equal(add(&rx, "{}", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_int_equal(m.len, 2);
	assert_memory_equal(m.text, "{}", 2);
	es_ws_rx_free(&rx);
	es_ws_rx_free(NULL);
}

static void test_rx_empty(void **state)
{
	es_ws_rx rx = { 0 };
	es_ws_msg m;

	(void)state;
	assert_int_equal(add(&rx, NULL, 0, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_null(m.text);
	assert_int_equal(m.len, 0);
	es_ws_rx_free(&rx);
}

static void test_rx_binary(void **state)
{
	es_ws_rx rx = { 0 };
	es_ws_msg m;

	(void)state;
	/* A binary message is refused at its final fragment, even when it
	 * holds valid JSON. */
	assert_int_equal(add(&rx, "{\"type\":", 8, 1, 0, &m), ES_OK);
	assert_false(m.done);
	assert_int_equal(add(&rx, "\"pong\"}", 7, 1, 1, &m), ES_ERR_PROTO);
	assert_false(m.done);
	assert_int_equal(m.code, ES_PC_MALFORMED);
	assert_string_equal(m.why, "binary message; one JSON text message expected");
	assert_int_equal(add(&rx, "{}", 2, 1, 1, &m), ES_ERR_PROTO);
	assert_int_equal(m.code, ES_PC_MALFORMED);
	/* A text message after it is taken. */
	assert_int_equal(add(&rx, "{}", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_memory_equal(m.text, "{}", 2);
	es_ws_rx_free(&rx);
}

static void test_rx_size_limit(void **state)
{
	const size_t half = ES_PROTO_MAX_MESSAGE / 2;
	char *big = malloc(ES_PROTO_MAX_MESSAGE + 1);
	es_ws_rx rx = { 0 };
	es_ws_msg m;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', ES_PROTO_MAX_MESSAGE + 1);
	/* Exactly the limit, in two fragments: taken. */
	assert_int_equal(add(&rx, big, half, 0, 0, &m), ES_OK);
	assert_int_equal(add(&rx, big, ES_PROTO_MAX_MESSAGE - half, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_int_equal(m.len, ES_PROTO_MAX_MESSAGE);
	/* One byte more: refused as soon as it is passed; the rest of the
	 * message is dropped, the next one taken. */
	assert_int_equal(add(&rx, big, half, 0, 0, &m), ES_OK);
	assert_int_equal(add(&rx, big, ES_PROTO_MAX_MESSAGE - half + 1, 0, 0, &m),
			 ES_ERR_TOOBIG);
	assert_int_equal(m.code, ES_PC_TOO_BIG);
	assert_string_equal(m.why, "message over 1048576 bytes");
	assert_int_equal(add(&rx, big, half, 0, 0, &m), ES_OK);
	assert_false(m.done);
	assert_int_equal(add(&rx, "}", 1, 0, 1, &m), ES_OK);
	assert_false(m.done);
	assert_int_equal(add(&rx, "[]", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_memory_equal(m.text, "[]", 2);
	/* A binary message over the limit is too big, not malformed. */
	assert_int_equal(add(&rx, big, ES_PROTO_MAX_MESSAGE + 1, 1, 1, &m),
			 ES_ERR_TOOBIG);
	assert_int_equal(m.code, ES_PC_TOO_BIG);
	/* A final piece over the limit ends the message: nothing is skipped. */
	assert_int_equal(add(&rx, "{}", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	free(big);
	es_ws_rx_free(&rx);
}

static void test_rx_nomem_reset(void **state)
{
	es_ws_rx rx = { 0 };
	es_ws_msg m;

	(void)state;
	realloc_fails = 1;
	assert_int_equal(add(&rx, "{", 1, 0, 0, &m), ES_ERR_NOMEM);
	assert_int_equal(m.code, ES_PC_INTERNAL);
	assert_string_equal(m.why, "out of memory");
	realloc_fails = 0;
	assert_int_equal(add(&rx, "}", 1, 0, 1, &m), ES_OK);
	assert_false(m.done);
	/* A reset (new connection) forgets a message in progress. */
	assert_int_equal(add(&rx, "{\"a\":", 5, 0, 0, &m), ES_OK);
	es_ws_rx_reset(&rx);
	assert_int_equal(add(&rx, "{}", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_int_equal(m.len, 2);
	assert_memory_equal(m.text, "{}", 2);
	es_ws_rx_free(&rx);
}

static cJSON *msg(const char *type)
{
	cJSON *o = cJSON_CreateObject();

	assert_non_null(o);
	assert_non_null(cJSON_AddStringToObject(o, "type", type));
	return o;
}

static void test_queue(void **state)
{
	es_ws_queue q = { 0 };

	(void)state;
	assert_false(es_ws_queue_pending(&q));
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), 0);
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("ping")), ES_OK);
	assert_int_equal(es_ws_queue_json(&q, NULL, msg("pong")), ES_OK);
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, NULL), ES_ERR_NOMEM);
	assert_int_equal(writable_asks, 1);
	assert_true(es_ws_queue_pending(&q));
	assert_int_equal(q.bytes, 30);
	assert_false(es_ws_queue_over(&q));
	/* Oldest first, one per call, compact JSON. */
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), 1);
	assert_int_equal(q.bytes, 15);
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), 1);
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), 0);
	assert_int_equal(nwritten, 2);
	assert_int_equal(written_len[0], 15);
	assert_memory_equal(written[0], "{\"type\":\"ping\"}", 15);
	assert_memory_equal(written[1], "{\"type\":\"pong\"}", 15);
	assert_int_equal(q.bytes, 0);
	assert_false(es_ws_queue_pending(&q));
	/* A failed write drops the message and says so. */
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("ping")), ES_OK);
	write_fails = 1;
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), -1);
	assert_false(es_ws_queue_pending(&q));
	es_ws_queue_clear(&q);
	es_ws_queue_clear(NULL);
}

static void test_queue_limits(void **state)
{
	es_ws_queue q;

	(void)state;
	es_ws_queue_init(&q, 15, 30);
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("error")), ES_ERR_TOOBIG);
	assert_false(es_ws_queue_pending(&q));
	assert_int_equal(writable_asks, 0);
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("ping")), ES_OK);
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("pong")), ES_OK);
	assert_false(es_ws_queue_over(&q));
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("ack")), ES_OK);
	assert_true(es_ws_queue_over(&q));
	es_ws_queue_clear(&q);
	assert_false(es_ws_queue_over(&q));
	assert_int_equal(q.max_msg, 15);
	assert_int_equal(q.max, 30);
	assert_int_equal(q.bytes, 0);
}

/* One buffer queued on three connections: one text, written three times
 * byte for byte, freed with the last queue's reference. */
static void test_shared_buf_fanout(void **state)
{
	es_ws_queue q[3];
	es_ws_buf *b = NULL;

	(void)state;
	assert_int_equal(es_ws_buf_json(msg("desired"), 0, &b), ES_OK);
	assert_int_equal(es_ws_buf_len(b), 18);
	for (int i = 0; i < 3; i++) {
		es_ws_queue_init(&q[i], 1024, 4096);
		assert_int_equal(es_ws_queue_buf(&q[i], fake_wsi, b), ES_OK);
		assert_ptr_equal(es_ws_queue_peek(&q[i]), b);
		assert_int_equal(q[i].bytes, 18);
	}
	assert_int_equal(writable_asks, 3);
	assert_int_equal(es_ws_buf_refs(b), 4);
	es_ws_buf_unref(b); /* the fan-out's own reference */
	assert_int_equal(es_ws_buf_refs(b), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(es_ws_queue_write(&q[i], fake_wsi), 1);
		assert_int_equal(written_len[i], 18);
		assert_memory_equal(written[i], "{\"type\":\"desired\"}", 18);
		if (i < 2)
			assert_int_equal(es_ws_buf_refs(b), 2 - (unsigned)i);
	}
	/* The last write freed it (ASan and valgrind see a leak or a
	 * use-after-free otherwise); the queues are empty. */
	for (int i = 0; i < 3; i++)
		assert_null(es_ws_queue_peek(&q[i]));
}

/* A queue's limits apply to shared buffers; clearing a queue drops its
 * reference only. */
static void test_shared_buf_limits(void **state)
{
	es_ws_queue q, r;
	es_ws_buf *b = NULL;

	(void)state;
	assert_int_equal(es_ws_buf_json(msg("desired"), 10, &b), ES_ERR_TOOBIG);
	assert_null(b);
	assert_int_equal(es_ws_buf_json(NULL, 0, &b), ES_ERR_NOMEM);
	assert_int_equal(es_ws_buf_json(msg("desired"), 0, &b), ES_OK);
	es_ws_queue_init(&q, 10, 0);
	assert_int_equal(es_ws_queue_buf(&q, fake_wsi, b), ES_ERR_TOOBIG);
	assert_false(es_ws_queue_pending(&q));
	es_ws_queue_init(&r, 0, 30);
	assert_int_equal(es_ws_queue_buf(&r, NULL, b), ES_OK);
	assert_false(es_ws_queue_over(&r));
	assert_int_equal(es_ws_queue_buf(&r, NULL, b), ES_OK);
	assert_true(es_ws_queue_over(&r));
	assert_int_equal(es_ws_buf_refs(b), 3);
	es_ws_queue_clear(&r);
	assert_int_equal(es_ws_buf_refs(b), 1);
	es_ws_buf_unref(b);
	es_ws_buf_unref(NULL);
}

static void test_rx_trim(void **state)
{
	es_ws_rx rx = { 0 };
	es_ws_msg m;
	static char big[20000];
	size_t cap;

	(void)state;
	memset(big, 'x', sizeof(big));
	assert_int_equal(es_ws_rx_add(&rx, fake_wsi, big, sizeof(big), &m), ES_OK);
	assert_true(m.done);
	assert_true(rx.buf.cap >= sizeof(big));
	es_ws_rx_trim(&rx);
	assert_null(rx.buf.p);
	assert_int_equal(rx.buf.cap, 0);
	assert_int_equal(es_ws_rx_add(&rx, fake_wsi, "{}", 2, &m), ES_OK);
	assert_true(m.done);
	/* a small message holds a small buffer again, not the big one's */
	assert_true(rx.buf.cap > 2 && rx.buf.cap <= 4096);
	/* inside a message: kept */
	frame_final = 0;
	assert_int_equal(es_ws_rx_add(&rx, fake_wsi, "{", 1, &m), ES_OK);
	cap = rx.buf.cap;
	es_ws_rx_trim(&rx);
	assert_non_null(rx.buf.p);
	assert_int_equal(rx.buf.cap, cap);
	frame_final = 1;
	assert_int_equal(es_ws_rx_add(&rx, fake_wsi, "}", 1, &m), ES_OK);
	assert_true(m.done);
	assert_memory_equal(m.text, "{}", 2);
	es_ws_rx_trim(&rx);
	assert_null(rx.buf.p);
	es_ws_rx_free(&rx);
	es_ws_rx_trim(NULL);
}

static void test_send_text(void **state)
{
	(void)state;
	assert_int_equal(es_ws_send_text(fake_wsi, "{\"type\":\"ack\"}", 14), 0);
	assert_int_equal(nwritten, 1);
	assert_memory_equal(written[0], "{\"type\":\"ack\"}", 14);
	write_fails = 1;
	assert_int_equal(es_ws_send_text(fake_wsi, "{}", 2), -1);
}

/* A message of about n bytes of JSON text that compresses well. */
static cJSON *long_msg(size_t n)
{
	char *pad = malloc(n + 1);
	cJSON *m = cJSON_CreateObject();

	assert_non_null(pad);
	memset(pad, 'a', n);
	pad[n] = '\0';
	cJSON_AddStringToObject(m, "type", "ping");
	cJSON_AddStringToObject(m, "time", pad);
	free(pad);
	return m;
}

/* Compressed messages (PROTOCOL.md "Compressed messages"): a queued
 * message of ES_WS_DEFLATE_MIN bytes or more goes as a binary zlib
 * stream, a shorter one as text; the receiver with inflate set gives back
 * the text; rx_reset and queue_clear forget the agreement. */
static void test_deflate_round_trip(void **state)
{
	es_ws_queue q = { 0 };
	es_ws_rx rx = { 0 };
	es_ws_msg m;
	cJSON *big = long_msg(600);
	char *want = es_json_print(big);

	(void)state;
	q.deflate = 1;
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, big), ES_OK);
	assert_int_equal(es_ws_queue_json(&q, fake_wsi, msg("ping")), ES_OK);
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), 1);
	assert_int_equal(es_ws_queue_write(&q, fake_wsi), 1);
	assert_true(written_binary[0]);
	assert_true(written_len[0] < strlen(want) / 4);
	assert_false(written_binary[1]);
	assert_memory_equal(written[1], "{\"type\":\"ping\"}", 15);
	rx.inflate = 1;
	assert_int_equal(add(&rx, written[0], 5, 1, 0, &m), ES_OK);
	assert_false(m.done);
	assert_int_equal(add(&rx, written[0] + 5, written_len[0] - 5, 1, 1, &m), ES_OK);
	assert_true(m.done);
	assert_int_equal(m.len, strlen(want));
	assert_memory_equal(m.text, want, m.len);
	/* Between messages trim frees the inflated text too: an idle
	 * connection keeps no buffer of its last compressed message. */
	assert_non_null(rx.ibuf);
	es_ws_rx_trim(&rx);
	assert_null(rx.ibuf);
	assert_int_equal(rx.icap, 0);
	assert_null(rx.buf.p);
	/* ... and the next compressed message inflates into a new one. */
	assert_int_equal(add(&rx, written[0], written_len[0], 1, 1, &m), ES_OK);
	assert_true(m.done);
	assert_int_equal(m.len, strlen(want));
	assert_memory_equal(m.text, want, m.len);
	/* Text messages are still taken. */
	assert_int_equal(add(&rx, "{}", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	assert_memory_equal(m.text, "{}", 2);
	/* A new connection agrees anew. */
	es_ws_rx_reset(&rx);
	assert_false(rx.inflate);
	es_ws_queue_clear(&q);
	assert_false(q.deflate);
	/* es_ws_send_json_text compresses the same way. */
	free(want);
	big = long_msg(150);
	want = es_json_print(big);
	cJSON_Delete(big);
	assert_int_equal(es_ws_send_json_text(fake_wsi, want, strlen(want), 1), 0);
	assert_true(written_binary[2]);
	assert_int_equal(es_ws_send_json_text(fake_wsi, want, strlen(want), 0), 0);
	assert_false(written_binary[3]);
	assert_int_equal(written_len[3], strlen(want));
	free(want);
	es_ws_rx_free(&rx);
}

/* A binary message that is not one complete zlib stream is
 * MalformedMessage; one that inflates past the limit is MessageTooBig. */
static void test_deflate_refused(void **state)
{
	es_ws_rx rx = { 0 };
	es_ws_msg m;
	size_t big = ES_PROTO_MAX_MESSAGE + 16;
	char *text = malloc(big);
	uLongf clen = compressBound((uLong)big);
	unsigned char *z = malloc(clen);

	(void)state;
	assert_non_null(text);
	assert_non_null(z);
	memset(text, ' ', big);
	assert_int_equal(compress2(z, &clen, (const Bytef *)text, (uLong)big, 9), Z_OK);
	rx.inflate = 1;
	assert_int_equal(add(&rx, "not zlib", 8, 1, 1, &m), ES_ERR_PROTO);
	assert_int_equal(m.code, ES_PC_MALFORMED);
	/* Cut short. */
	assert_int_equal(add(&rx, (const char *)z, clen / 2, 1, 1, &m), ES_ERR_PROTO);
	assert_int_equal(m.code, ES_PC_MALFORMED);
	/* Trailing bytes after a complete stream. */
	{
		unsigned char small[64];
		uLongf slen = sizeof(small) - 1;

		assert_int_equal(compress2(small, &slen, (const Bytef *)"{}", 2, 9), Z_OK);
		small[slen] = 'x';
		assert_int_equal(add(&rx, (const char *)small, slen + 1, 1, 1, &m),
				 ES_ERR_PROTO);
		assert_int_equal(m.code, ES_PC_MALFORMED);
		assert_int_equal(add(&rx, (const char *)small, slen, 1, 1, &m), ES_OK);
		assert_true(m.done);
		assert_memory_equal(m.text, "{}", 2);
	}
	/* A stream naming a dictionary that is not edgesync's. */
	{
		unsigned char other[64];
		z_stream zs;

		memset(&zs, 0, sizeof(zs));
		assert_int_equal(deflateInit(&zs, 9), Z_OK);
		assert_int_equal(deflateSetDictionary(&zs, (const Bytef *)"other", 5), Z_OK);
		zs.next_in = (Bytef *)"{}";
		zs.avail_in = 2;
		zs.next_out = other;
		zs.avail_out = sizeof(other);
		assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
		assert_int_equal(add(&rx, (const char *)other, zs.total_out, 1, 1, &m),
				 ES_ERR_PROTO);
		assert_int_equal(m.code, ES_PC_MALFORMED);
		deflateEnd(&zs);
	}
	/* A small stream that inflates past 1 MiB. */
	assert_int_equal(add(&rx, (const char *)z, clen, 1, 1, &m), ES_ERR_TOOBIG);
	assert_int_equal(m.code, ES_PC_TOO_BIG);
	/* Still usable. */
	assert_int_equal(add(&rx, "{}", 2, 0, 1, &m), ES_OK);
	assert_true(m.done);
	free(text);
	free(z);
	es_ws_rx_free(&rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_rx_fragments, reset),
		cmocka_unit_test_setup(test_rx_empty, reset),
		cmocka_unit_test_setup(test_rx_binary, reset),
		cmocka_unit_test_setup(test_rx_size_limit, reset),
		cmocka_unit_test_setup(test_rx_nomem_reset, reset),
		cmocka_unit_test_setup(test_queue, reset),
		cmocka_unit_test_setup(test_queue_limits, reset),
		cmocka_unit_test_setup(test_send_text, reset),
		cmocka_unit_test_setup(test_shared_buf_fanout, reset),
		cmocka_unit_test_setup(test_shared_buf_limits, reset),
		cmocka_unit_test_setup(test_rx_trim, reset),
		cmocka_unit_test_setup(test_deflate_round_trip, reset),
		cmocka_unit_test_setup(test_deflate_refused, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
