/*
 * test_fanout.c - a desired change pushed to every agent it concerns is
 * serialised once (controller/net/server_sync.c, es_server_object_changed):
 * every targeted connection's queue holds the same shared buffer
 * (lib/es_ws.h, es_ws_buf), connections the change does not concern get
 * nothing, and nodes an object no longer targets share one deletion.
 * The connections are fakes on the server's private structures
 * (net/server_int.h); lws_callback_on_writable is wrapped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/server_int.h"
#include "es_json.h"
#include "testutil.h"

static int writable_asks;
static int fake_target;
#define FAKE_WSI ((struct lws *)&fake_target)

int __wrap_lws_callback_on_writable(struct lws *wsi);
int __wrap_lws_callback_on_writable(struct lws *wsi)
{
	assert_ptr_equal(wsi, FAKE_WSI);
	writable_asks++;
	return 1;
}

typedef struct fx {
	char dir[256], path[512];
	es_db *db;
	es_server srv;
	conn c[4];
} fx;

static const char *const sites[4] = { "lab", "lab", "lab", "edge" };

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "test-fanout", f->path,
		       sizeof(f->path), "controller.db");
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	f->srv.db = f->db;
	for (int i = 0; i < 4; i++) {
		conn *c = &f->c[i];

		c->srv = &f->srv;
		c->wsi = FAKE_WSI;
		c->state = CS_READY;
		snprintf(c->node, sizeof(c->node), "node-%d", i);
		c->labels = cJSON_CreateObject();
		assert_non_null(cJSON_AddStringToObject(c->labels, "site", sites[i]));
		es_ws_queue_init(&c->q, ES_PROTO_MAX_MESSAGE, ES_WS_SEND_QUEUE_MAX);
		c->next = f->srv.conns;
		if (f->srv.conns)
			f->srv.conns->prev = c;
		f->srv.conns = c;
	}
	writable_asks = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	for (int i = 0; i < 4; i++) {
		es_ws_queue_clear(&f->c[i].q);
		es_ctrl_pending_free(&f->c[i].acks);
		cJSON_Delete(f->c[i].labels);
	}
	es_db_close(f->db);
	es_test_rmtree(f->dir);
	free(f);
	return 0;
}

static cJSON *rule(const char *site)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"CollectorConfig\","
		 "\"metadata\":{\"name\":\"fast\",\"uid\":\"6f1c2a34-0000-4000-8000-000000000001\","
		 "\"resourceVersion\":7},"
		 "\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"site\":\"%s\"}},"
		 "\"intervalSeconds\":5}}", site);
	return es_test_json(text);
}

/* The number of entries of member `which` ("objects" or "deleted") of
 * the desired message in b. */
static int entries(const es_ws_buf *b, const char *which)
{
	char *text = strndup(es_ws_buf_text(b), es_ws_buf_len(b));
	cJSON *m = text ? es_test_json(text) : NULL;
	int n;

	assert_non_null(m);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "type")),
			    "desired");
	n = cJSON_GetArraySize(cJSON_GetObjectItem(m, which));
	cJSON_Delete(m);
	free(text);
	return n;
}

static void test_one_buffer_for_all_targets(void **state)
{
	fx *f = *state;
	cJSON *obj = rule("lab");
	es_ws_buf *b;

	es_server_object_changed(&f->srv, NULL, obj);
	b = es_ws_queue_peek(&f->c[0].q);
	assert_non_null(b);
	assert_int_equal(entries(b, "objects"), 1);
	assert_int_equal(entries(b, "deleted"), 0);
	/* the three "lab" nodes hold the same bytes, once; "edge" nothing */
	assert_ptr_equal(es_ws_queue_peek(&f->c[1].q), b);
	assert_ptr_equal(es_ws_queue_peek(&f->c[2].q), b);
	assert_null(es_ws_queue_peek(&f->c[3].q));
	assert_int_equal(es_ws_buf_refs(b), 3);
	assert_int_equal(writable_asks, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(f->c[i].acks.n, 1);
	assert_int_equal(f->c[3].acks.n, 0);
	cJSON_Delete(obj);
}

static void test_retargeted_object(void **state)
{
	fx *f = *state;
	cJSON *prev = rule("lab"), *cur = rule("edge");
	es_ws_buf *del, *upd;

	/* The object moves from the lab to the edge: the three lab nodes
	 * share one deletion, the edge node gets the object. */
	es_server_object_changed(&f->srv, prev, cur);
	del = es_ws_queue_peek(&f->c[0].q);
	upd = es_ws_queue_peek(&f->c[3].q);
	assert_non_null(del);
	assert_non_null(upd);
	assert_ptr_not_equal(del, upd);
	assert_ptr_equal(es_ws_queue_peek(&f->c[1].q), del);
	assert_ptr_equal(es_ws_queue_peek(&f->c[2].q), del);
	assert_int_equal(es_ws_buf_refs(del), 3);
	assert_int_equal(es_ws_buf_refs(upd), 1);
	assert_int_equal(entries(del, "deleted"), 1);
	assert_int_equal(entries(del, "objects"), 0);
	assert_int_equal(entries(upd, "objects"), 1);
	cJSON_Delete(prev);
	cJSON_Delete(cur);
}

/* Connections not past their hello get no push. */
static void test_not_ready_skipped(void **state)
{
	fx *f = *state;
	cJSON *obj = rule("lab");

	f->c[0].state = CS_HELLO;
	f->c[1].state = CS_CLOSING;
	es_server_object_changed(&f->srv, NULL, obj);
	assert_null(es_ws_queue_peek(&f->c[0].q));
	assert_null(es_ws_queue_peek(&f->c[1].q));
	assert_non_null(es_ws_queue_peek(&f->c[2].q));
	assert_int_equal(es_ws_buf_refs(es_ws_queue_peek(&f->c[2].q)), 1);
	cJSON_Delete(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_buffer_for_all_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retargeted_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_ready_skipped, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
