/*
 * fuzz_report.c - libFuzzer target: the controller's report handling
 * (es_proto_decode, then controller/store/db.h es_db_report_store and the
 * node view es_db_node_get built from what it stored).
 *
 * Input: one or more messages separated by NUL bytes, decoded with
 * es_proto_decode; those refused are skipped. Each input gets a node of its
 * own (a new name, made with es_db_node_hello), so that report cursors left
 * by earlier inputs do not turn its reports into duplicates; then, in
 * order, a hello is recorded with es_db_node_hello, a desiredAck with
 * es_db_node_desired_ack and a report with es_db_report_store. A model kept
 * here (the RFC 7386 merge of es_mpatch_apply, the keyed changes of
 * es_kpatch_apply, the cursor rules of db.h)
 * says what each call must answer: duplicate for a seq at or below the
 * cursor, need_resync for a patch whose baseSeq is not the state's seq.
 * At the end the node view must show the cursor, the state's seq and the
 * state itself (every member of the last snapshot as patched, outside what
 * the view sets: apiVersion, kind, metadata, status.sync), the report list
 * the reports kept; then the node is marked disconnected and shown again.
 *
 * One database stays open across inputs (a static es_db) so that inputs
 * cost a few transactions, not a schema creation; it lives in /dev/shm when
 * there is one (synchronous=FULL costs nothing there) and is replaced by a
 * fresh one every ROTATE inputs so that it stays small. It is removed at
 * exit.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "es_json.h"
#include "es_kpatch.h"
#include "es_mpatch.h"
#include "es_proto.h"
#include "fuzz_util.h"
#include "store/db.h"

#define MAX_MSGS 16
#define ROTATE 20000
#define NOW ((time_t)1780000000)

static es_db *db;
static char dir[128], path[192];
static unsigned long inputs;

static void remove_db(void)
{
	static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
	char p[256];

	es_db_close(db);
	db = NULL;
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, suffix[i]);
		unlink(p);
	}
}

static void cleanup_at_exit(void)
{
	remove_db();
	if (dir[0])
		rmdir(dir);
}

/* The open database, made (again) when there is none or ROTATE inputs used
 * the one there is. */
static es_db *database(void)
{
	char err[512] = "";
	es_err rc;

	if (db && inputs % ROTATE != 0)
		return db;
	if (!dir[0]) {
		const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
				   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

		snprintf(dir, sizeof(dir), "%s/es-fuzz-report-XXXXXX", base);
		FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
		snprintf(path, sizeof(path), "%s/controller.db", dir);
		atexit(cleanup_at_exit);
	}
	remove_db();
	rc = es_db_open(path, &db, err, sizeof(err));
	FUZZ_CHECK(rc == ES_OK, "es_db_open: %s", err);
	return db;
}

/* What the store must hold for the node. */
typedef struct model {
	int64_t cursor;     /* highest report seq stored */
	int64_t state_seq;  /* seq of the state, 0: none */
	cJSON *state;       /* the node's state, NULL: none */
	int64_t seqs[MAX_MSGS]; /* seqs of the reports stored */
	size_t nseqs;
} model;

static void store_report(const char *node, const cJSON *msg, model *m)
{
	int64_t seq = 0, base = 0;
	const char *rt = cJSON_GetObjectItemCaseSensitive(msg, "reportType")->valuestring;
	const cJSON *body = cJSON_GetObjectItemCaseSensitive(msg, "body");
	int dup = -1, resync = -1, want_resync = 0;
	es_err rc;

	es_json_int_value(cJSON_GetObjectItemCaseSensitive(msg, "seq"), 1, ES_JSON_MAX_INT, &seq);
	es_json_int_value(cJSON_GetObjectItemCaseSensitive(msg, "baseSeq"), 1, ES_JSON_MAX_INT,
			  &base);
	rc = es_db_report_store(db, node, msg, NOW, &dup, &resync);
	if (rc == ES_ERR_NOMEM)
		return;
	FUZZ_CHECK(rc == ES_OK, "report store: error %d", rc);
	FUZZ_CHECK(dup == (seq <= m->cursor), "seq %lld with cursor %lld: duplicate = %d",
		   (long long)seq, (long long)m->cursor, dup);
	if (dup) {
		FUZZ_CHECK(resync == 0, "a duplicate asked for a resync");
		return;
	}
	if (strcmp(rt, "snapshot") == 0) {
		cJSON_Delete(m->state);
		m->state = cJSON_Duplicate(body, 1);
		FUZZ_CHECK(m->state != NULL, "out of memory");
		m->state_seq = seq;
	} else if (strcmp(rt, "patch") == 0) {
		if (m->state && base == m->state_seq) {
			FUZZ_CHECK(es_mpatch_apply(&m->state, body) == ES_OK, "out of memory");
			m->state_seq = seq;
		} else {
			want_resync = 1;
		}
	} else if (strcmp(rt, "delta") == 0) {
		/* A keyed change; one that cannot be applied asks for a
		 * snapshot and leaves the state (PROTOCOL.md "Reports"). */
		es_err ar = ES_ERR_INVAL;

		if (m->state && base == m->state_seq)
			ar = es_kpatch_apply(&m->state, body, NULL, 0);
		FUZZ_CHECK(ar != ES_ERR_NOMEM, "out of memory");
		if (ar == ES_OK)
			m->state_seq = seq;
		else
			want_resync = 1;
	}
	FUZZ_CHECK(resync == want_resync, "%s seq %lld baseSeq %lld on state seq %lld: "
		   "need_resync = %d", rt, (long long)seq, (long long)base,
		   (long long)m->state_seq, resync);
	m->cursor = seq;
	m->seqs[m->nseqs++] = seq;
}

static void hello(const char *node, const cJSON *msg, const model *m)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(msg, "labels");
	const cJSON *av = cJSON_GetObjectItemCaseSensitive(msg, "agentVersion");
	const cJSON *boot = cJSON_GetObjectItemCaseSensitive(msg, "bootId");
	int64_t acked = -1;
	int changed = -1;
	es_err rc = es_db_node_hello(db, node, labels, av->valuestring, boot->valuestring,
				     NOW, &acked, &changed);

	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM, "node hello: error %d", rc);
	FUZZ_CHECK(rc != ES_OK || acked == m->cursor, "hello: ackedSeq %lld, cursor %lld",
		   (long long)acked, (long long)m->cursor);
}

/* Every member of want outside skip (NULL-terminated) is equal in have. */
static void members_shown(const cJSON *want, const cJSON *have, const char *const *skip,
			  const char *what)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, want) {
		const char *const *s;

		for (s = skip; *s && strcmp(*s, it->string) != 0; s++)
			;
		if (*s)
			continue;
		FUZZ_CHECK(fuzz_json_equal(it, cJSON_GetObjectItemCaseSensitive(have, it->string)),
			   "%s.%s: stored %s, shown %s", what, it->string, fuzz_json_show(it, 0),
			   fuzz_json_show(cJSON_GetObjectItemCaseSensitive(have, it->string), 1));
	}
}

static void check_view(const char *node, const model *m)
{
	static const char *const top_skip[] = {"apiVersion", "kind", "metadata", "status", NULL};
	static const char *const status_skip[] = {"sync", NULL};
	cJSON *view = NULL, *reports = NULL;
	const cJSON *status, *sync;
	int64_t v = -1;
	size_t kept = 0;
	es_err rc = es_db_node_get(db, node, &view);

	if (rc == ES_ERR_NOMEM)
		return;
	FUZZ_CHECK(rc == ES_OK, "node get: error %d", rc);
	status = cJSON_GetObjectItemCaseSensitive(view, "status");
	sync = cJSON_GetObjectItemCaseSensitive(status, "sync");
	FUZZ_CHECK(es_json_int_value(cJSON_GetObjectItemCaseSensitive(sync, "ackedSeq"), 0,
				     ES_JSON_MAX_INT, &v) == 0 && v == m->cursor,
		   "view ackedSeq %lld, cursor %lld", (long long)v, (long long)m->cursor);
	FUZZ_CHECK(es_json_int_value(cJSON_GetObjectItemCaseSensitive(sync, "stateSeq"), 0,
				     ES_JSON_MAX_INT, &v) == 0 && v == m->state_seq,
		   "view stateSeq %lld, state seq %lld", (long long)v, (long long)m->state_seq);
	if (cJSON_IsObject(m->state)) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(m->state, "status");

		members_shown(m->state, view, top_skip, "state");
		if (cJSON_IsObject(ms))
			members_shown(ms, status, status_skip, "state.status");
	}
	cJSON_Delete(view);

	rc = es_db_reports_list(db, node, 0, &reports);
	if (rc == ES_ERR_NOMEM)
		return;
	FUZZ_CHECK(rc == ES_OK, "reports list: error %d", rc);
	for (size_t i = 0; i < m->nseqs; i++)
		kept += m->seqs[i] > m->cursor - ES_DB_REPORTS_KEPT;
	FUZZ_CHECK((size_t)cJSON_GetArraySize(reports) == kept, "%d reports listed, %zu kept",
		   cJSON_GetArraySize(reports), kept);
	cJSON_Delete(reports);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_piece pc[MAX_MSGS];
	size_t n = fuzz_split(data, size, pc, MAX_MSGS);
	model m = {0};
	cJSON *view = NULL, *labels = cJSON_CreateObject();
	char node[64], err[512];
	int64_t acked = -1;
	int changed = 0;
	es_err rc;

	database();
	snprintf(node, sizeof(node), "fuzz-%lu", inputs++);
	rc = es_db_node_hello(db, node, labels, "fuzz", "boot", NOW, &acked, &changed);
	cJSON_Delete(labels);
	if (rc == ES_ERR_NOMEM)
		return 0;
	FUZZ_CHECK(rc == ES_OK && acked == 0, "hello of a new node: error %d, ackedSeq %lld",
		   rc, (long long)acked);

	for (size_t i = 0; i < n; i++) {
		es_msg_type type;
		es_proto_code code;
		cJSON *msg = NULL;
		int64_t rv = 0;

		if (es_proto_decode(pc[i].p, pc[i].n, &type, &msg, &code, err,
				    sizeof(err)) != ES_OK)
			continue;
		if (type == ES_MSG_HELLO) {
			hello(node, msg, &m);
		} else if (type == ES_MSG_REPORT) {
			store_report(node, msg, &m);
		} else if (type == ES_MSG_DESIRED_ACK) {
			es_json_int_value(cJSON_GetObjectItemCaseSensitive(msg, "resourceVersion"),
					  0, ES_JSON_MAX_INT, &rv);
			rc = es_db_node_desired_ack(db, node, rv, NOW);
			FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM, "desiredAck: error %d", rc);
		}
		cJSON_Delete(msg);
	}
	check_view(node, &m);

	rc = es_db_node_disconnected(db, node, NOW + 10);
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM, "disconnected: error %d", rc);
	rc = es_db_node_get(db, node, &view);
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM, "node get, disconnected: error %d", rc);
	cJSON_Delete(view);
	cJSON_Delete(m.state);
	return 0;
}
