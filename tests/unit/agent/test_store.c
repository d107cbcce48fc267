/*
 * test_store.c - the agent's SQLite store (agent/store/store.h): desired cache,
 * cursors, schema refusals, and the outbox semantics of PROTOCOL.md
 * "Reports".
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "store/store.h"
#include "testutil.h"

typedef struct fx {
	char dir[64];
	char path[128];
	es_store *st;
} fx;

/* Closes the store (if open) and opens f->path again. */
static void reopen(fx *f)
{
	char err[256] = "";

	es_store_close(f->st);
	f->st = NULL;
	if (es_store_open(f->path, &f->st, err, sizeof(err)) != ES_OK)
		fail_msg("es_store_open %s: %s", f->path, err);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	es_test_tmpdir(f->dir, sizeof(f->dir), "store-test", f->path, sizeof(f->path),
		       "agent.db");
	reopen(f);
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	es_store_close(f->st);
	es_test_rmtree(f->dir);
	free(f);
	return 0;
}

static void commit(es_store *st, const char *msg_text, es_err want)
{
	cJSON *msg = es_test_json(msg_text);

	assert_int_equal(es_store_desired_commit(st, msg), want);
	cJSON_Delete(msg);
}

/* "kind/name,kind/name" of the cached objects, in list order. */
static void list_names(es_store *st, char *buf, size_t sz)
{
	cJSON *list = NULL;
	const cJSON *o;
	size_t n = 0;

	buf[0] = '\0';
	assert_int_equal(es_store_desired_list(st, &list), ES_OK);
	cJSON_ArrayForEach(o, list) {
		const cJSON *md = cJSON_GetObjectItem(o, "metadata");
		n += (size_t)snprintf(buf + n, sz - n, "%s%s/%s", n ? "," : "",
				      cJSON_GetObjectItem(o, "kind")->valuestring,
				      cJSON_GetObjectItem(md, "name")->valuestring);
	}
	cJSON_Delete(list);
}

static int64_t get_int(es_store *st, const char *key)
{
	int64_t v = -1;

	assert_int_equal(es_store_get_int(st, key, 0, &v), ES_OK);
	return v;
}

static void put_status(es_store *st, const char *kind, const char *name,
		       const char *text)
{
	cJSON *s = es_test_json(text);

	assert_int_equal(es_store_status_put(st, kind, name, s), ES_OK);
	cJSON_Delete(s);
}

static int has_status(es_store *st, const char *kind, const char *name)
{
	cJSON *s = NULL;
	es_err rc = es_store_status_get(st, kind, name, &s);

	assert_true(rc == ES_OK || rc == ES_ERR_NOTFOUND);
	cJSON_Delete(s);
	return rc == ES_OK;
}

#define OBJ(kind, name, uid, gen) \
	"{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"" kind "\"," \
	"\"metadata\":{\"name\":\"" name "\",\"uid\":\"" uid "\"," \
	"\"generation\":" #gen ",\"resourceVersion\":1},\"spec\":{}}"

static void test_desired_full_delta_deleted(void **state)
{
	fx *f = *state;
	char names[256];

	assert_int_equal(get_int(f->st, "desired_rv"), 0);
	commit(f->st, "{\"full\":true,\"resourceVersion\":5,\"objects\":["
	       OBJ("HealthRule", "hot", "u1", 1) ","
	       OBJ("CollectorConfig", "b", "u2", 1) ","
	       OBJ("CollectorConfig", "a", "u3", 1) "],\"deleted\":[]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a,CollectorConfig/b,HealthRule/hot");
	assert_int_equal(get_int(f->st, "desired_rv"), 5);
	put_status(f->st, "CollectorConfig", "a", "{\"uid\":\"u3\"}");
	put_status(f->st, "CollectorConfig", "b", "{\"uid\":\"u2\"}");
	put_status(f->st, "HealthRule", "hot", "{\"uid\":\"u1\"}");

	/* Delta: upsert c, delete b (its status goes), a keeps its status. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":6,\"objects\":["
	       OBJ("CollectorConfig", "c", "u4", 1) "],\"deleted\":["
	       "{\"kind\":\"CollectorConfig\",\"name\":\"b\",\"uid\":\"u2\"}]}",
	       ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a,CollectorConfig/c,HealthRule/hot");
	assert_int_equal(get_int(f->st, "desired_rv"), 6);
	assert_false(has_status(f->st, "CollectorConfig", "b"));
	assert_true(has_status(f->st, "CollectorConfig", "a"));

	/* Full: everything not listed goes, with its status; a kept object
	 * keeps its status. */
	commit(f->st, "{\"full\":true,\"resourceVersion\":9,\"objects\":["
	       OBJ("CollectorConfig", "a", "u3", 2) "],\"deleted\":[]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a");
	assert_int_equal(get_int(f->st, "desired_rv"), 9);
	assert_true(has_status(f->st, "CollectorConfig", "a"));
	assert_false(has_status(f->st, "HealthRule", "hot"));
	/* The upsert replaced the body (generation 2). */
	{
		cJSON *list = NULL;
		assert_int_equal(es_store_desired_list(f->st, &list), ES_OK);
		assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(
			cJSON_GetArrayItem(list, 0), "metadata"), "generation")->valueint, 2);
		cJSON_Delete(list);
	}
}

static void test_desired_more(void **state)
{
	fx *f = *state;
	char names[256];

	commit(f->st, "{\"full\":true,\"resourceVersion\":3,\"objects\":["
	       OBJ("CollectorConfig", "old", "u0", 1) "]}", ES_OK);
	/* A full list split over two messages: the union is the set; the
	 * resourceVersion moves only with the last message. */
	commit(f->st, "{\"full\":true,\"resourceVersion\":20,\"more\":true,\"objects\":["
	       OBJ("CollectorConfig", "x", "u1", 1) "]}", ES_OK);
	assert_int_equal(get_int(f->st, "desired_rv"), 3);
	commit(f->st, "{\"full\":true,\"resourceVersion\":20,\"objects\":["
	       OBJ("CollectorConfig", "y", "u2", 1) "]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/x,CollectorConfig/y");
	assert_int_equal(get_int(f->st, "desired_rv"), 20);

	commit(f->st, "{\"full\":false,\"resourceVersion\":21,\"more\":true,\"objects\":["
	       OBJ("CollectorConfig", "z", "u3", 1) "]}", ES_OK);
	assert_int_equal(get_int(f->st, "desired_rv"), 20);
	commit(f->st, "{\"full\":false,\"resourceVersion\":22,\"objects\":[]}", ES_OK);
	assert_int_equal(get_int(f->st, "desired_rv"), 22);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/x,CollectorConfig/y,CollectorConfig/z");
}

static void test_desired_uid_and_refusals(void **state)
{
	fx *f = *state;
	char names[256];

	commit(f->st, "{\"full\":false,\"resourceVersion\":2,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 1) "]}", ES_OK);
	put_status(f->st, "CollectorConfig", "a", "{\"uid\":\"u1\"}");
	/* Same uid again: status kept. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":3,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 2) "]}", ES_OK);
	assert_true(has_status(f->st, "CollectorConfig", "a"));
	/* Recreated under the same name (new uid) with the old one's
	 * tombstone: the new object stays, the old status goes. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":4,\"objects\":["
	       OBJ("CollectorConfig", "a", "u2", 1) "],\"deleted\":["
	       "{\"kind\":\"CollectorConfig\",\"name\":\"a\",\"uid\":\"u1\"}]}",
	       ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a");
	assert_false(has_status(f->st, "CollectorConfig", "a"));
	/* A late tombstone of the old uid does not remove the new object. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":5,\"objects\":[],"
	       "\"deleted\":[{\"kind\":\"CollectorConfig\",\"name\":\"a\",\"uid\":\"u1\"}]}",
	       ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a");

	/* Refused messages change nothing. */
	commit(f->st, "{\"full\":true,\"resourceVersion\":7,\"objects\":["
	       "{\"kind\":\"CollectorConfig\",\"metadata\":{}}]}", ES_ERR_INVAL);
	commit(f->st, "{\"full\":true,\"resourceVersion\":7,\"objects\":[],"
	       "\"deleted\":[{\"name\":\"a\"}]}", ES_ERR_INVAL);
	commit(f->st, "{\"full\":true,\"objects\":[]}", ES_ERR_INVAL);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a");
	assert_int_equal(get_int(f->st, "desired_rv"), 5);
	/* A status needs its object. */
	{
		cJSON *s = es_test_json("{}");
		assert_int_equal(es_store_status_put(f->st, "HealthRule", "nope", s),
				 ES_ERR_NOTFOUND);
		cJSON_Delete(s);
	}
}

#define OBJ_RV(kind, name, uid, rv) \
	"{\"apiVersion\":\"edgesync.io/v1alpha1\",\"kind\":\"" kind "\"," \
	"\"metadata\":{\"name\":\"" name "\",\"uid\":\"" uid "\"," \
	"\"generation\":1,\"resourceVersion\":" #rv "},\"spec\":{}}"
#define DEL_RV(kind, name, uid, rv) \
	"{\"kind\":\"" kind "\",\"name\":\"" name "\",\"uid\":\"" uid "\"," \
	"\"resourceVersion\":" #rv "}"

/* The name reused while the agent was away (PROTOCOL.md, "desired"): a
 * deletion newer than the cached object removes it whatever its uid; an
 * older one (an earlier object of the name) does not. */
static void test_desired_name_reused(void **state)
{
	fx *f = *state;
	char names[256];

	commit(f->st, "{\"full\":true,\"resourceVersion\":5,\"objects\":["
	       OBJ_RV("HealthRule", "x", "u1", 4) ","
	       OBJ_RV("HealthRule", "y", "u5", 5) "]}", ES_OK);
	put_status(f->st, "HealthRule", "x", "{\"uid\":\"u1\"}");
	/* x deleted (rv 6), then re-created as u2 for other nodes (rv 7): the
	 * change set names u2, which no longer targets the node. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":7,\"objects\":[],"
	       "\"deleted\":[" DEL_RV("HealthRule", "x", "u2", 7) "]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "HealthRule/y");
	assert_false(has_status(f->st, "HealthRule", "x"));

	/* A late deletion of an earlier object of the name keeps the newer
	 * cached one. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":9,\"objects\":[],"
	       "\"deleted\":[" DEL_RV("HealthRule", "y", "u0", 3) "]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "HealthRule/y");

	/* A change set split in two: the re-created object first, the old
	 * one's deletion (older than it) after: the new one stays. */
	commit(f->st, "{\"full\":false,\"resourceVersion\":12,\"more\":true,"
	       "\"objects\":[" OBJ_RV("HealthRule", "y", "u6", 11) "]}", ES_OK);
	put_status(f->st, "HealthRule", "y", "{\"uid\":\"u6\"}");
	commit(f->st, "{\"full\":false,\"resourceVersion\":12,\"objects\":[],"
	       "\"deleted\":[" DEL_RV("HealthRule", "y", "u5", 10) "]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "HealthRule/y");
	assert_true(has_status(f->st, "HealthRule", "y"));

	/* A full list replaces an object of the same name and another uid,
	 * and its status. */
	commit(f->st, "{\"full\":true,\"resourceVersion\":14,\"objects\":["
	       OBJ_RV("HealthRule", "y", "u7", 14) "]}", ES_OK);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "HealthRule/y");
	assert_false(has_status(f->st, "HealthRule", "y"));
}

/* The generation of the one cached object. */
static int64_t cached_generation(es_store *st)
{
	cJSON *list = NULL;
	int64_t g;

	assert_int_equal(es_store_desired_list(st, &list), ES_OK);
	assert_int_equal(cJSON_GetArraySize(list), 1);
	g = (int64_t)cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0),
							     "metadata"), "generation")->valuedouble;
	cJSON_Delete(list);
	return g;
}

/* Desired state never goes back (PROTOCOL.md, "Desired state"): a change
 * set at or below the version held is not applied; a full list is the
 * controller's whole state and is followed, also to a lower version. */
static void test_desired_never_goes_back(void **state)
{
	fx *f = *state;

	commit(f->st, "{\"full\":true,\"resourceVersion\":10,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 2) "]}", ES_OK);
	put_status(f->st, "CollectorConfig", "a", "{\"uid\":\"u1\"}");
	commit(f->st, "{\"full\":false,\"resourceVersion\":5,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 1) "]}", ES_ERR_CONFLICT);
	commit(f->st, "{\"full\":false,\"resourceVersion\":9,\"objects\":[],"
	       "\"deleted\":[{\"kind\":\"CollectorConfig\",\"name\":\"a\","
	       "\"uid\":\"u1\"}]}", ES_ERR_CONFLICT);
	commit(f->st, "{\"full\":false,\"resourceVersion\":10,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 1) "]}", ES_ERR_CONFLICT);
	assert_int_equal(cached_generation(f->st), 2);
	assert_true(has_status(f->st, "CollectorConfig", "a"));
	assert_int_equal(get_int(f->st, "desired_rv"), 10);

	commit(f->st, "{\"full\":false,\"resourceVersion\":11,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 3) "]}", ES_OK);
	assert_int_equal(cached_generation(f->st), 3);
	assert_int_equal(get_int(f->st, "desired_rv"), 11);

	/* A controller restored from an older backup: its full list rules. */
	commit(f->st, "{\"full\":true,\"resourceVersion\":4,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 1) "]}", ES_OK);
	assert_int_equal(cached_generation(f->st), 1);
	assert_int_equal(get_int(f->st, "desired_rv"), 4);
	commit(f->st, "{\"full\":false,\"resourceVersion\":5,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 2) "]}", ES_OK);
	assert_int_equal(get_int(f->st, "desired_rv"), 5);
}

/* The report stream id (PROTOCOL.md, "hello"): made with the database,
 * kept across opens, another one for a database made anew. */
static void test_stream_id(void **state)
{
	fx *f = *state;
	char a[64], b[64], small[8];

	assert_int_equal(es_store_stream_id(f->st, a, sizeof(a)), ES_OK);
	assert_int_equal(strlen(a), 36);
	assert_int_equal(es_store_stream_id(f->st, small, sizeof(small)), ES_ERR_DB);
	reopen(f);
	assert_int_equal(es_store_stream_id(f->st, b, sizeof(b)), ES_OK);
	assert_string_equal(a, b);
	es_store_close(f->st);
	f->st = NULL;
	assert_int_equal(unlink(f->path), 0);
	reopen(f);
	assert_int_equal(es_store_stream_id(f->st, b, sizeof(b)), ES_OK);
	assert_string_not_equal(a, b);
	/* The other cursors are integers beside it. */
	assert_int_equal(es_store_set_int(f->st, "next_seq", 3), ES_OK);
	assert_int_equal(get_int(f->st, "next_seq"), 3);
}

static void test_survives_reopen(void **state)
{
	fx *f = *state;
	char names[256];
	const char *node = "{\"kind\":\"Node\",\"n\":1}";
	cJSON *st_doc = NULL;
	int64_t seq = 0, v = 0;

	commit(f->st, "{\"full\":true,\"resourceVersion\":11,\"objects\":["
	       OBJ("CollectorConfig", "a", "u1", 3) "]}", ES_OK);
	put_status(f->st, "CollectorConfig", "a", "{\"uid\":\"u1\",\"observedGeneration\":3}");
	assert_int_equal(es_store_set_int(f->st, "custom", 42), ES_OK);
	assert_int_equal(es_store_outbox_put_state(f->st, node, 100, &seq), ES_OK);
	assert_int_equal(seq, 1);
	reopen(f);
	list_names(f->st, names, sizeof(names));
	assert_string_equal(names, "CollectorConfig/a");
	assert_int_equal(get_int(f->st, "desired_rv"), 11);
	assert_int_equal(get_int(f->st, "custom"), 42);
	assert_int_equal(es_store_get_int(f->st, "unset", 77, &v), ES_OK);
	assert_int_equal(v, 77);
	assert_int_equal(es_store_status_get(f->st, "CollectorConfig", "a", &st_doc), ES_OK);
	assert_int_equal(cJSON_GetObjectItem(st_doc, "observedGeneration")->valueint, 3);
	cJSON_Delete(st_doc);
	{
		es_outbox_row row;
		assert_int_equal(es_store_outbox_next(f->st, 0, &row), ES_OK);
		assert_int_equal(row.seq, 1);
		assert_int_equal(row.is_state, 1);
		assert_int_equal(row.created, 100);
		assert_string_equal(row.doc, "{\"kind\":\"Node\",\"n\":1}");
		assert_null(row.wire);
		es_outbox_row_free(&row);
	}
}

/* Opening path must fail with want, name the path, contain needle, and
 * leave the file byte for byte as it was. */
static void assert_refused_unchanged(const char *path, es_err want,
				     const char *needle)
{
	size_t n = 0;
	char *before = es_test_slurp(path, &n);
	es_store *st = NULL;
	char err[512] = "";

	assert_int_equal(es_store_open(path, &st, err, sizeof(err)), want);
	assert_null(st);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, needle));
	es_test_assert_file_bytes(path, before, n);
	free(before);
}

static void test_newer_version_refused(void **state)
{
	fx *f = *state;
	sqlite3 *db = NULL;

	/* Our own database, then bumped to a version from the future. */
	es_store_close(f->st);
	f->st = NULL;
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode = DELETE;"
				      "PRAGMA user_version = 2", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	assert_refused_unchanged(f->path, ES_ERR_UNSUPPORTED, "newer");
	assert_refused_unchanged(f->path, ES_ERR_UNSUPPORTED, "newer");
}

static void test_foreign_database_refused(void **state)
{
	fx *f = *state;
	sqlite3 *db = NULL;
	char other[160];

	snprintf(other, sizeof(other), "%s/other.db", f->dir);
	assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x); PRAGMA user_version = 1",
				      NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	assert_refused_unchanged(other, ES_ERR_UNSUPPORTED, "not an edgesync");
	/* No schema version, but another program's tables. */
	unlink(other);
	assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	assert_refused_unchanged(other, ES_ERR_UNSUPPORTED, "not an edgesync");
}

static void test_garbage_refused(void **state)
{
	fx *f = *state;
	char bad[160];
	FILE *fp;
	int i;

	snprintf(bad, sizeof(bad), "%s/garbage.db", f->dir);
	fp = fopen(bad, "wb");
	assert_non_null(fp);
	for (i = 0; i < 200; i++)
		fputs("this is not an SQLite database, just text\n", fp);
	fclose(fp);
	assert_refused_unchanged(bad, ES_ERR_DB, "not an SQLite database");
	/* Shorter than an SQLite header. */
	fp = fopen(bad, "wb");
	assert_non_null(fp);
	fputs("garbage", fp);
	fclose(fp);
	assert_refused_unchanged(bad, ES_ERR_DB, "not an SQLite database");
}

static int64_t put_event(es_store *st, int n, size_t max)
{
	char text[64];
	cJSON *ev;
	int64_t seq = 0;

	snprintf(text, sizeof(text), "{\"reason\":\"E%d\"}", n);
	ev = es_test_json(text);
	assert_int_equal(es_store_outbox_put_event(st, ev, 1000 + n, max, &seq), ES_OK);
	cJSON_Delete(ev);
	return seq;
}

static int64_t put_state(es_store *st, int n)
{
	char text[64];
	int64_t seq = 0;

	snprintf(text, sizeof(text), "{\"kind\":\"Node\",\"n\":%d}", n);
	assert_int_equal(es_store_outbox_put_state(st, text, 2000 + n, &seq), ES_OK);
	return seq;
}

/* The seqs in the outbox, in order, as "1,2,3". */
static void seqs(es_store *st, char *buf, size_t sz)
{
	es_outbox_row row;
	int64_t after = 0;
	size_t n = 0;

	buf[0] = '\0';
	while (es_store_outbox_next(st, after, &row) == ES_OK) {
		n += (size_t)snprintf(buf + n, sz - n, "%s%lld", n ? "," : "",
				      (long long)row.seq);
		after = row.seq;
		es_outbox_row_free(&row);
	}
}

static void test_outbox_seqs(void **state)
{
	fx *f = *state;
	char buf[128];
	int64_t depth = 0;
	es_outbox_row row;

	assert_int_equal(es_store_outbox_next(f->st, 0, &row), ES_ERR_NOTFOUND);
	assert_int_equal(put_event(f->st, 1, 1000), 1);
	assert_int_equal(put_state(f->st, 1), 2);
	assert_int_equal(put_event(f->st, 2, 1000), 3);
	reopen(f);
	assert_int_equal(get_int(f->st, "next_seq"), 4);
	assert_int_equal(put_event(f->st, 3, 1000), 4);
	seqs(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1,2,3,4");
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 4);
	assert_int_equal(es_store_outbox_next(f->st, 2, &row), ES_OK);
	assert_int_equal(row.seq, 3);
	assert_int_equal(row.is_state, 0);
	assert_string_equal(row.doc, "{\"reason\":\"E2\"}");
	assert_int_equal(row.created, 1002);
	es_outbox_row_free(&row);
}

static void test_state_coalesces_until_sent(void **state)
{
	fx *f = *state;
	es_outbox_row row;
	int64_t depth = 0;

	assert_int_equal(put_state(f->st, 1), 1);
	assert_int_equal(put_event(f->st, 1, 1000), 2);
	/* Unsent: latest wins, same seq. */
	assert_int_equal(put_state(f->st, 2), 1);
	assert_int_equal(es_store_outbox_next(f->st, 0, &row), ES_OK);
	assert_int_equal(row.seq, 1);
	assert_string_equal(row.doc, "{\"kind\":\"Node\",\"n\":2}");
	assert_int_equal(row.created, 2002);
	es_outbox_row_free(&row);
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 2);

	/* Sent: frozen; the next state takes a new seq. */
	assert_int_equal(es_store_outbox_mark_sent(f->st, 1, "{\"wire\":1}"), ES_OK);
	assert_int_equal(put_state(f->st, 3), 3);
	assert_int_equal(put_state(f->st, 4), 3);
	assert_int_equal(es_store_outbox_next(f->st, 0, &row), ES_OK);
	assert_string_equal(row.doc, "{\"kind\":\"Node\",\"n\":2}");
	assert_string_equal(row.wire, "{\"wire\":1}");
	es_outbox_row_free(&row);
	assert_int_equal(es_store_outbox_next(f->st, 2, &row), ES_OK);
	assert_int_equal(row.seq, 3);
	assert_string_equal(row.doc, "{\"kind\":\"Node\",\"n\":4}");
	es_outbox_row_free(&row);
}

static void test_wire_frozen(void **state)
{
	fx *f = *state;
	es_outbox_row row;

	assert_int_equal(put_event(f->st, 1, 1000), 1);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 1, "first"), ES_OK);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 1, "second"), ES_OK);
	reopen(f);
	assert_int_equal(es_store_outbox_next(f->st, 0, &row), ES_OK);
	assert_string_equal(row.wire, "first");
	es_outbox_row_free(&row);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 9, "x"), ES_ERR_NOTFOUND);
}

static void test_ack_and_base(void **state)
{
	fx *f = *state;
	cJSON *doc = NULL;
	int64_t bseq = 0, depth = 0;
	char buf[64];

	assert_int_equal(es_store_base_get(f->st, &bseq, &doc), ES_ERR_NOTFOUND);
	assert_int_equal(put_state(f->st, 1), 1);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 1, "s1"), ES_OK);
	assert_int_equal(put_event(f->st, 2, 1000), 2);
	assert_int_equal(put_state(f->st, 3), 3);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 3, "s3"), ES_OK);
	assert_int_equal(put_event(f->st, 4, 1000), 4);
	assert_int_equal(put_state(f->st, 5), 5);

	assert_int_equal(es_store_outbox_ack(f->st, 3), ES_OK);
	seqs(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "4,5");
	assert_int_equal(es_store_base_get(f->st, &bseq, &doc), ES_OK);
	assert_int_equal(bseq, 3);
	assert_int_equal(cJSON_GetObjectItem(doc, "n")->valueint, 3);
	cJSON_Delete(doc);
	doc = NULL;

	/* An ack covering only events leaves the base alone. */
	assert_int_equal(es_store_outbox_ack(f->st, 4), ES_OK);
	assert_int_equal(es_store_base_get(f->st, &bseq, &doc), ES_OK);
	assert_int_equal(bseq, 3);
	cJSON_Delete(doc);
	doc = NULL;
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 1);

	/* The base survives a restart. */
	reopen(f);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 5, "s5"), ES_OK);
	assert_int_equal(es_store_outbox_ack(f->st, 5), ES_OK);
	assert_int_equal(es_store_base_get(f->st, &bseq, &doc), ES_OK);
	assert_int_equal(bseq, 5);
	assert_int_equal(cJSON_GetObjectItem(doc, "n")->valueint, 5);
	cJSON_Delete(doc);
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 0);

	/* A controller that stored more than this database knows: new seqs
	 * continue after its ack. */
	assert_int_equal(es_store_outbox_ack(f->st, 40), ES_OK);
	assert_int_equal(put_event(f->st, 6, 1000), 41);
}

static void test_events_bounded(void **state)
{
	fx *f = *state;
	int64_t dropped = -1, depth = 0;
	char buf[64];
	int i;

	assert_int_equal(es_store_dropped(f->st, &dropped), ES_OK);
	assert_int_equal(dropped, 0);
	assert_int_equal(put_state(f->st, 1), 1);
	for (i = 0; i < 6; i++)
		put_event(f->st, i, 3);
	/* Oldest events (2, 3, 4) dropped; the state row is never dropped. */
	seqs(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1,5,6,7");
	assert_int_equal(es_store_dropped(f->st, &dropped), ES_OK);
	assert_int_equal(dropped, 3);
	assert_int_equal(es_store_outbox_depth(f->st, &depth), ES_OK);
	assert_int_equal(depth, 4);
	reopen(f);
	put_event(f->st, 9, 3);
	assert_int_equal(es_store_dropped(f->st, &dropped), ES_OK);
	assert_int_equal(dropped, 4);
	seqs(f->st, buf, sizeof(buf));
	assert_string_equal(buf, "1,6,7,8");
}

/* The newest queued state wins over the base; the base once the queue
 * holds none; the change count moves with desired commits and status puts. */
static void test_state_latest_and_changes(void **state)
{
	fx *f = *state;
	cJSON *doc = NULL, *st = es_test_json("{\"uid\":\"u1\"}");
	uint64_t c0 = es_store_changes(f->st);

	assert_int_equal(es_store_state_latest(f->st, &doc), ES_ERR_NOTFOUND);
	assert_null(doc);
	assert_int_equal(put_state(f->st, 1), 1);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 1, "s1"), ES_OK);
	assert_int_equal(put_state(f->st, 2), 2);
	assert_int_equal(put_event(f->st, 3, 1000), 3);
	assert_int_equal(es_store_state_latest(f->st, &doc), ES_OK);
	assert_int_equal(cJSON_GetObjectItem(doc, "n")->valueint, 2);
	cJSON_Delete(doc);
	assert_int_equal(es_store_outbox_ack(f->st, 1), ES_OK);
	assert_int_equal(es_store_outbox_mark_sent(f->st, 2, "s2"), ES_OK);
	assert_int_equal(es_store_outbox_ack(f->st, 3), ES_OK);
	assert_int_equal(es_store_state_latest(f->st, &doc), ES_OK);
	assert_int_equal(cJSON_GetObjectItem(doc, "n")->valueint, 2);
	cJSON_Delete(doc);

	assert_int_equal(es_store_changes(f->st), c0);
	commit(f->st, "{\"full\":false,\"resourceVersion\":1,\"objects\":[{\"kind\":"
	       "\"CollectorConfig\",\"metadata\":{\"name\":\"a\",\"uid\":\"u1\"}}]}",
	       ES_OK);
	assert_true(es_store_changes(f->st) > c0);
	c0 = es_store_changes(f->st);
	assert_int_equal(es_store_status_put(f->st, "CollectorConfig", "a", st), ES_OK);
	assert_true(es_store_changes(f->st) > c0);
	cJSON_Delete(st);
}

/* The write-ahead log stays near 1 MiB (store.c wal_kib): 128 state
 * reports of about 64 KiB, 8 MiB in all, go through it. SQLite's defaults
 * leave a 4 MiB log file. */
static void test_wal_stays_bounded(void **state)
{
	static const char head[] = "{\"kind\":\"Node\",\"pad\":\"";
	const size_t h = sizeof(head) - 1;
	fx *f = *state;
	size_t n = 64 * 1024, i;
	char *doc = malloc(h + n + 3), wal[sizeof(f->path) + 8];
	struct stat sb;

	assert_non_null(doc);
	memcpy(doc, head, h);
	memset(doc + h, 'a', n);
	memcpy(doc + h + n, "\"}", 3);
	for (i = 0; i < 128; i++) {
		/* A new length each time: SQLite rewrites only the changed
		 * pages of a same-size value in place. */
		memcpy(doc + h + n - i * 8, "\"}", 3);
		assert_int_equal(es_store_outbox_put_state(f->st, doc, 1000 + (time_t)i,
							   NULL), ES_OK);
	}
	free(doc);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_int_equal(stat(wal, &sb), 0);
	if (sb.st_size > 2 * 1024 * 1024)
		fail_msg("%s is %lld bytes", wal, (long long)sb.st_size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_desired_full_delta_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_desired_more, setup, teardown),
		cmocka_unit_test_setup_teardown(test_desired_uid_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_desired_name_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_desired_never_goes_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_survives_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wal_stays_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_version_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_database_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outbox_seqs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_coalesces_until_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire_frozen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_and_base, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_latest_and_changes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
