/*
 * store_reports.c - es-bench-store-reports: the CPU the controller's SQLite
 * store spends per stored report (es_db_report_store), by report type,
 * for the captured reports of a real agent (bench/fleetsim/data/v2: its
 * first snapshot, then each minute two activity events and one delta),
 * the work of the report path of a fleet (bench/fleet.py) without its
 * TLS, WebSocket and JSON parsing. Figures, never pass/fail.
 *
 * It creates a database in a new temporary directory (removed at the
 * end), says hello for --nodes nodes and stores each one's snapshot, then
 * for --rounds rounds stores, node after node, each of the captured
 * reports in order (a delta's baseSeq is the node's previous delta or
 * snapshot, as the agent sends them), --batch reports to a commit
 * (es_db_batch_begin / es_db_batch_commit, as the controller batches
 * them). It prints, per report type, the reports stored and the mean CPU
 * (CLOCK_PROCESS_CPUTIME_ID) in es_db_report_store, the CPU of the
 * commits per report, and the reports stored per second of wall time
 * (commits are fsync'd: synchronous=FULL).
 *
 * Usage: es-bench-store-reports [--nodes N] [--rounds R] [--batch B]
 *        [--data DIR]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "es_fs.h"
#include "store/db.h"
#include "es_json.h"

#ifndef BENCH_DEFAULT_DATA
#define BENCH_DEFAULT_DATA "bench/fleetsim/data/v2"
#endif

enum { T_SNAPSHOT, T_DELTA, T_EVENT, T_N };
static const char *const type_names[T_N] = { "snapshot", "delta", "event" };

typedef struct tstat {
	long n;
	double cpu; /* seconds in es_db_report_store */
} tstat;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A report message {type, seq, reportType, baseSeq, body} owning body. */
static cJSON *report_msg(const char *type, cJSON *body)
{
	cJSON *m = cJSON_CreateObject();

	if (!m || !cJSON_AddStringToObject(m, "type", "report") ||
	    !cJSON_AddNumberToObject(m, "seq", 1) ||
	    !cJSON_AddStringToObject(m, "reportType", type) ||
	    !cJSON_AddNumberToObject(m, "baseSeq", 0)) {
		cJSON_Delete(m);
		cJSON_Delete(body);
		return NULL;
	}
	cJSON_AddItemToObject(m, "body", body);
	return m;
}

static void set_num(cJSON *m, const char *key, int64_t v)
{
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(m, key), (double)v);
}

static int type_of(const cJSON *m)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "reportType"));

	for (int i = 0; i < T_N; i++)
		if (t && strcmp(t, type_names[i]) == 0)
			return i;
	return -1;
}

typedef struct bench {
	es_db *db;
	int batch, in_batch;
	double commit_cpu;
	long commits;
	tstat st[T_N];
} bench;

static int commit(bench *b)
{
	double c0 = cpu_now();
	es_err rc = es_db_batch_commit(b->db);

	b->commit_cpu += cpu_now() - c0;
	b->commits++;
	b->in_batch = 0;
	if (rc != ES_OK) {
		fprintf(stderr, "es-bench-store-reports: commit failed: %s\n", es_strerror(rc));
		return -1;
	}
	return 0;
}

/* Stores m for node (seq, baseSeq set by the caller), timing it. */
static int store(bench *b, const char *node, const cJSON *m)
{
	int dup = 0, resync = 0, t = type_of(m);
	double c0;
	es_err rc;

	if (!b->in_batch)
		es_db_batch_begin(b->db);
	c0 = cpu_now();
	rc = es_db_report_store(b->db, node, m, time(NULL), &dup, &resync);
	b->st[t].cpu += cpu_now() - c0;
	b->st[t].n++;
	if (rc != ES_OK || dup || resync) {
		fprintf(stderr, "es-bench-store-reports: node %s: report store: %s%s%s\n", node,
			es_strerror(rc), dup ? " (a duplicate)" : "",
			resync ? " (asked for a snapshot)" : "");
		return -1;
	}
	if (++b->in_batch >= b->batch)
		return commit(b);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: es-bench-store-reports [--nodes N] [--rounds R] [--batch B]"
		" [--data DIR]\n"
		"  --nodes N   nodes, each its own snapshot and reports [300]\n"
		"  --rounds R  rounds of the captured reports per node [3]\n"
		"  --batch B   reports per committed batch [64]\n"
		"  --data DIR  snapshot.json and reports.jsonl [%s]\n", BENCH_DEFAULT_DATA);
}

static int arg_int(const char *name, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x;

	errno = 0;
	x = v ? strtol(v, &end, 10) : 0;
	if (!v || errno || *end || x < lo || x > hi) {
		fprintf(stderr, "es-bench-store-reports: %s wants an integer in [%d, %d], got %s\n",
			name, lo, hi, v ? v : "nothing");
		return -1;
	}
	*out = (int)x;
	return 0;
}

int main(int argc, char **argv)
{
	const char *data = BENCH_DEFAULT_DATA;
	int nodes = 300, rounds = 3, nrep = 0, rcode = 1, made = 0;
	char tmpl[] = "/tmp/es-bench-store-XXXXXX", path[512], err[256], *text = NULL;
	cJSON *snap = NULL, **reps = NULL;
	int64_t *seq = NULL, *base = NULL;
	bench b = { .batch = 64 };
	double w0, w1, cpu_all = 0;
	long n_all = 0;
	char *lines = NULL, *line, *save = NULL;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--nodes") == 0 && !arg_int("--nodes", v, 1, 1000000, &nodes))
			i++;
		else if (strcmp(argv[i], "--rounds") == 0 &&
			 !arg_int("--rounds", v, 1, 100000, &rounds))
			i++;
		else if (strcmp(argv[i], "--batch") == 0 &&
			 !arg_int("--batch", v, 1, 1024, &b.batch))
			i++;
		else if (strcmp(argv[i], "--data") == 0 && v)
			data = argv[++i];
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "es-bench-store-reports: unknown or incomplete argument %s\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	snprintf(path, sizeof(path), "%s/snapshot.json", data);
	if (es_fs_read_all(path, ES_FS_FILE_MAX, &text, NULL, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "es-bench-store-reports: %s\n", err);
		goto out;
	}
	if (!(snap = cJSON_Parse(text)) || !(snap = report_msg("snapshot", snap))) {
		fprintf(stderr, "es-bench-store-reports: %s: cannot read a JSON snapshot\n", path);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/reports.jsonl", data);
	if (es_fs_read_all(path, ES_FS_FILE_MAX, &lines, NULL, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "es-bench-store-reports: %s\n", err);
		goto out;
	}
	for (line = strtok_r(lines, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *r = cJSON_Parse(line), *body, **nr;
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r,
											  "reportType"));

		if (!r || !t || !(body = cJSON_DetachItemFromObjectCaseSensitive(r, "body")) ||
		    !(nr = realloc(reps, (size_t)(nrep + 1) * sizeof(*reps))) ||
		    !(nr[nrep] = report_msg(t, body)) || type_of(nr[nrep]) < 0) {
			fprintf(stderr, "es-bench-store-reports: %s: line %d is not a captured"
				" report\n", path, nrep + 1);
			cJSON_Delete(r);
			goto out;
		}
		reps = nr;
		nrep++;
		cJSON_Delete(r);
	}
	if (!nrep) {
		fprintf(stderr, "es-bench-store-reports: %s: no reports\n", path);
		goto out;
	}
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "es-bench-store-reports: mkdtemp: %s\n", strerror(errno));
		goto out;
	}
	made = 1;
	snprintf(path, sizeof(path), "%s/controller.db", tmpl);
	if (es_db_open(path, &b.db, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "es-bench-store-reports: %s\n", err);
		goto out;
	}
	/* Large enough that no report is pruned (the bench measures storing). */
	es_db_set_reports_kept(b.db, 1000000, 0);
	seq = calloc((size_t)nodes, sizeof(*seq));
	base = calloc((size_t)nodes, sizeof(*base));
	if (!seq || !base)
		goto out;
	for (int i = 0; i < nodes; i++) {
		char node[32];

		snprintf(node, sizeof(node), "sim-%05d", i);
		if (es_db_node_hello(b.db, node, NULL, "bench", "boot", time(NULL), NULL, NULL) !=
		    ES_OK) {
			fprintf(stderr, "es-bench-store-reports: hello of %s failed\n", node);
			goto out;
		}
		set_num(snap, "seq", seq[i] = base[i] = 1);
		if (store(&b, node, snap))
			goto out;
	}
	if (b.in_batch && commit(&b))
		goto out;
	memset(b.st, 0, sizeof(b.st));
	b.commit_cpu = 0;
	b.commits = 0;
	w0 = wall_now();
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < nrep; k++)
			for (int i = 0; i < nodes; i++) {
				char node[32];
				cJSON *m = reps[k];

				snprintf(node, sizeof(node), "sim-%05d", i);
				set_num(m, "seq", ++seq[i]);
				if (type_of(m) != T_EVENT) {
					set_num(m, "baseSeq", base[i]);
					base[i] = seq[i];
				}
				if (store(&b, node, m))
					goto out;
			}
	if (b.in_batch && commit(&b))
		goto out;
	w1 = wall_now();
	printf("es-bench-store-reports: %d nodes, %d rounds of %d captured reports, %d"
	       " reports a commit\n", nodes, rounds, nrep, b.batch);
	for (int t = 0; t < T_N; t++) {
		if (!b.st[t].n)
			continue;
		printf("  %-8s %7ld reports, %8.1f us CPU each in es_db_report_store\n",
		       type_names[t], b.st[t].n, 1e6 * b.st[t].cpu / (double)b.st[t].n);
		cpu_all += b.st[t].cpu;
		n_all += b.st[t].n;
	}
	printf("  commits  %7ld, %8.1f us CPU per report\n", b.commits,
	       1e6 * b.commit_cpu / (double)n_all);
	printf("  all      %7ld reports, %8.1f us CPU each (commits included); %.0f reports"
	       " stored per second of wall time\n", n_all,
	       1e6 * (cpu_all + b.commit_cpu) / (double)n_all, (double)n_all / (w1 - w0));
	rcode = 0;
out:
	es_db_close(b.db);
	if (made) {
		const char *files[] = { "controller.db", "controller.db-wal", "controller.db-shm" };

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", tmpl, files[i]);
			unlink(path);
		}
		rmdir(tmpl);
	}
	free(lines);
	for (int k = 0; k < nrep; k++)
		cJSON_Delete(reps[k]);
	free(reps);
	cJSON_Delete(snap);
	free(text);
	free(seq);
	free(base);
	return rcode;
}
