/*
 * test_db_batch.c - the controller store's batches and history bounds
 * (controller/store/db.h): many reports from several nodes commit in one
 * transaction and are invisible to other readers until then; a write
 * outside the batch commits it first; the history is bounded by count and
 * by bytes without losing the node's state; the state held in memory is
 * rebuilt from the stored reports after a crash (a copy of the files taken
 * while the store was open, before any checkpoint).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/db.h"
#include "es_json.h"
#include "testutil.h"

typedef struct fx {
	char dir[64];
	char path[128];
	es_db *db;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	es_test_tmpdir(f->dir, sizeof(f->dir), "test-dbb", f->path, sizeof(f->path),
		       "controller.db");
	assert_int_equal(es_db_open(f->path, &f->db, err, sizeof(err)), ES_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	int rc;

	es_db_close(f->db);
	rc = es_test_rmtree(f->dir);
	free(f);
	return rc;
}

static void put_report(es_db *db, const char *node, int64_t seq, const char *type,
		       int64_t base, const char *body, int want_dup, int want_resync)
{
	char *buf = NULL;
	cJSON *m;
	int dup = -1, resync = -1;

	assert_true(asprintf(&buf, "{\"type\":\"report\",\"seq\":%lld,"
			     "\"time\":\"2026-01-01T00:00:00Z\",\"reportType\":\"%s\","
			     "\"baseSeq\":%lld,\"body\":%s}", (long long)seq, type,
			     (long long)base, body) > 0);
	m = es_test_json(buf);
	free(buf);
	assert_int_equal(es_db_report_store(db, node, m, 2000, &dup, &resync), ES_OK);
	assert_int_equal(dup, want_dup);
	assert_int_equal(resync, want_resync);
	cJSON_Delete(m);
}

static void snapshot(es_db *db, const char *node, int64_t seq, int counter)
{
	char body[256];

	snprintf(body, sizeof(body), "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
		 "\"status\":{\"capacity\":{\"cpu\":4},\"usage\":{\"n\":%d}}}", node,
		 counter);
	put_report(db, node, seq, "snapshot", 0, body, 0, 0);
}

static void patch(es_db *db, const char *node, int64_t seq, int counter)
{
	char body[128];

	snprintf(body, sizeof(body), "{\"status\":{\"usage\":{\"n\":%d}}}", counter);
	put_report(db, node, seq, "patch", seq - 1, body, 0, 0);
}

/* status.usage.n of the node as the admin view shows it; -1 when absent. */
static int usage_n(es_db *db, const char *node)
{
	cJSON *n = NULL, *v;
	int out;

	assert_int_equal(es_db_node_get(db, node, &n), ES_OK);
	v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"),
						    "usage"), "n");
	out = cJSON_IsNumber(v) ? v->valueint : -1;
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "capacity"));
	cJSON_Delete(n);
	return out;
}

/* One integer from SQL run on a connection of its own (what another reader
 * of the file sees: committed data only). */
static int64_t peek(const char *path, const char *sql)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

static void hello(es_db *db, const char *node)
{
	assert_int_equal(es_db_node_hello(db, node, NULL, "v", "b", 1000, NULL, NULL), ES_OK);
}

static void test_group_commit(void **state)
{
	fx *f = *state;
	const char *nodes[] = { "n1", "n2", "n3", "n4" };
	uint64_t before;
	cJSON *obj;

	for (int i = 0; i < 4; i++)
		hello(f->db, nodes[i]);
	before = es_db_commit_count(f->db);
	es_db_batch_begin(f->db);
	assert_true(es_db_batch_open(f->db));
	/* 4 sessions x 25 reports, interleaved as they would arrive. */
	for (int seq = 1; seq <= 25; seq++)
		for (int i = 0; i < 4; i++) {
			if (seq == 1)
				snapshot(f->db, nodes[i], 1, 0);
			else
				patch(f->db, nodes[i], seq, seq * 10 + i);
		}
	for (int i = 0; i < 4; i++)
		assert_int_equal(es_db_node_desired_ack(f->db, nodes[i], 3, 1001), ES_OK);
	/* A duplicate inside the batch (its first copy is not committed). */
	put_report(f->db, "n1", 25, "patch", 24, "{}", 1, 0);
	/* Nothing is visible to another reader before the commit. */
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 0);
	assert_int_equal(es_db_commit_count(f->db), before);
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
	assert_false(es_db_batch_open(f->db));
	/* 100 reports and 4 desiredAck records: one commit. */
	assert_int_equal(es_db_commit_count(f->db), before + 1);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 100);
	assert_int_equal(peek(f->path, "SELECT count(DISTINCT node || ':' || seq) FROM reports"),
			 100);
	assert_int_equal(peek(f->path, "SELECT min(acked_seq) FROM nodes"), 25);
	assert_int_equal(peek(f->path, "SELECT min(desired_ack_rv) FROM nodes"), 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(usage_n(f->db, nodes[i]), 250 + i);

	/* A write outside the batch commits what it holds first. */
	es_db_batch_begin(f->db);
	patch(f->db, "n1", 26, 7);
	obj = es_test_json("{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":"
			   "\"CollectorConfig\",\"metadata\":{\"name\":\"c\"},"
			   "\"spec\":{\"intervalSeconds\":5}}");
	assert_int_equal(es_db_object_put(f->db, obj, NULL, NULL, NULL, NULL), ES_OK);
	cJSON_Delete(obj);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 101);
	patch(f->db, "n1", 27, 8);
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports"), 102);
	assert_int_equal(usage_n(f->db, "n1"), 8);
	/* Nothing open: a commit is a no-op. */
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
}

static void test_history_bounds(void **state)
{
	fx *f = *state;
	char body[512], pad[301];
	int64_t bytes;

	memset(pad, 'x', 300);
	pad[300] = '\0';
	/* By count: the last 5 sequence numbers of the stream. */
	es_db_set_reports_kept(f->db, 5, 0);
	hello(f->db, "n1");
	for (int seq = 1; seq <= 12; seq++)
		put_report(f->db, "n1", seq, "event", 0, "{\"reason\":\"A\"}", 0, 0);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports WHERE node = 'n1'"), 5);
	assert_int_equal(peek(f->path, "SELECT min(seq) FROM reports WHERE node = 'n1'"), 8);

	/* By bytes: 4096 bytes of bodies, the oldest go first. */
	es_db_set_reports_kept(f->db, 10000, 4096);
	hello(f->db, "n2");
	snapshot(f->db, "n2", 1, 1);
	for (int seq = 2, last = 1; seq <= 200; seq++) {
		char p[128];

		if (seq % 3 == 0) {
			snprintf(body, sizeof(body), "{\"reason\":\"%s\"}", pad);
			put_report(f->db, "n2", seq, "event", 0, body, 0, 0);
			continue;
		}
		/* Based on the last state report: events are not state. */
		snprintf(p, sizeof(p), "{\"status\":{\"usage\":{\"n\":%d}}}", seq);
		put_report(f->db, "n2", seq, "patch", last, p, 0, 0);
		last = seq;
	}
	bytes = peek(f->path, "SELECT sum(length(CAST(body AS BLOB))) FROM reports"
		     " WHERE node = 'n2'");
	assert_true(bytes <= 4096);
	assert_true(bytes > 4096 - 400);
	/* The stored count matches the rows. */
	assert_int_equal(peek(f->path, "SELECT history_bytes FROM nodes WHERE name = 'n2'"),
			 bytes);
	assert_int_equal(peek(f->path, "SELECT max(seq) FROM reports WHERE node = 'n2'"),
			 peek(f->path, "SELECT acked_seq FROM nodes WHERE name = 'n2'"));
	assert_true(peek(f->path, "SELECT min(seq) FROM reports WHERE node = 'n2'") > 100);
	/* The state survived the trimming of the reports it came from. */
	assert_int_equal(usage_n(f->db, "n2"),
			 (int)peek(f->path, "SELECT state_seq FROM nodes WHERE name = 'n2'"));

	/* A report larger than the bound alone stays: the newest is kept. */
	es_db_set_reports_kept(f->db, 10000, 100);
	snprintf(body, sizeof(body), "{\"reason\":\"%s\"}", pad);
	put_report(f->db, "n1", 13, "event", 0, body, 0, 0);
	assert_int_equal(peek(f->path, "SELECT count(*) FROM reports WHERE node = 'n1'"), 1);
	assert_int_equal(peek(f->path, "SELECT seq FROM reports WHERE node = 'n1'"), 13);
}

static void copy_file(const char *from, const char *to)
{
	size_t n = 0;
	char *b;
	FILE *o;

	if (access(from, F_OK) != 0)
		return;
	b = es_test_slurp(from, &n);
	assert_non_null(o = fopen(to, "wb"));
	assert_int_equal(fwrite(b, 1, n, o), n);
	fclose(o);
	free(b);
}

static void test_replay_after_crash(void **state)
{
	fx *f = *state;
	char dir[64], path[128], from[160], to[160], err[256];
	es_db *copy = NULL;

	hello(f->db, "n1");
	es_db_batch_begin(f->db);
	snapshot(f->db, "n1", 1, 1);
	for (int seq = 2; seq <= 10; seq++)
		patch(f->db, "n1", seq, seq * 100);
	assert_int_equal(es_db_batch_commit(f->db), ES_OK);
	/* The state text is still the snapshot's (no checkpoint yet). */
	assert_int_equal(peek(f->path, "SELECT state_ckpt FROM nodes WHERE name = 'n1'"), 1);
	assert_int_equal(peek(f->path, "SELECT state_seq FROM nodes WHERE name = 'n1'"), 10);

	/* The files as a SIGKILL would leave them. */
	es_test_tmpdir(dir, sizeof(dir), "test-dbb-crash", path, sizeof(path), "controller.db");
	copy_file(f->path, path);
	snprintf(from, sizeof(from), "%s-wal", f->path);
	snprintf(to, sizeof(to), "%s-wal", path);
	copy_file(from, to);
	assert_int_equal(es_db_open(path, &copy, err, sizeof(err)), ES_OK);
	/* Not held in memory: the view replays the reports past the
	 * checkpoint. */
	assert_int_equal(usage_n(copy, "n1"), 1000);
	/* The report path loads it the same way, and the chain goes on. */
	patch(copy, "n1", 11, 1100);
	assert_int_equal(usage_n(copy, "n1"), 1100);
	put_report(copy, "n1", 11, "patch", 10, "{}", 1, 0);
	es_db_close(copy);
	/* Closing wrote the state. */
	assert_int_equal(peek(path, "SELECT state_ckpt FROM nodes WHERE name = 'n1'"), 11);
	assert_int_equal(es_test_rmtree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replay_after_crash, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
