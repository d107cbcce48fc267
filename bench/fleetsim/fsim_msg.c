/*
 * fsim_msg.c - the simulator's protocol v1 messages (fsim_msg.h).
 *
 * Report bodies are printed once, when the fixture is loaded, with a
 * placeholder for the node's name; a report is then the envelope and the
 * parts copied around the name, so thousands of nodes cost copies, not
 * JSON printing.
 */
#include "fsim_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "es_json.h"
#include "es_proto.h"
#include "es_time.h"

/* Stands for the node name in a printed body (inside its quotes): a
 * string no report holds. */
#define HOLE "@fleetsim-node@"
/* Largest fixture file. */
#define FIXTURE_MAX (16u * 1024 * 1024)

/* Sets member key of obj (an object) to the placeholder, when obj has it.
 * Returns 0 when out of memory. */
static int set_hole(cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj) || !cJSON_GetObjectItemCaseSensitive(obj, key))
		return 1;
	return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(HOLE))
	       ? 1 : 0;
}

static void tmpl_free(fsim_tmpl *t);

/* Prints body with its name members made holes, split at the holes. */
static es_err make_tmpl(cJSON *body, fsim_tmpl *t)
{
	cJSON *status = cJSON_GetObjectItemCaseSensitive(body, "status");
	char *text = NULL, *p, *hit;
	size_t n = 1;
	es_err rc = ES_ERR_NOMEM;

	memset(t, 0, sizeof(*t));
	if (!set_hole(cJSON_GetObjectItemCaseSensitive(body, "metadata"), "name") ||
	    !set_hole(cJSON_GetObjectItemCaseSensitive(status, "nodeInfo"), "hostname"))
		goto cleanup;
	if (!(text = es_json_print(body)))
		goto cleanup;
	for (p = text; (hit = strstr(p, HOLE)); p = hit + strlen(HOLE))
		n++;
	if (!(t->parts = calloc(n, sizeof(*t->parts))))
		goto cleanup;
	for (p = text; t->nparts < n; t->nparts++) {
		size_t len;

		hit = strstr(p, HOLE);
		len = hit ? (size_t)(hit - p) : strlen(p);
		if (!(t->parts[t->nparts] = strndup(p, len)))
			goto cleanup;
		t->bytes += len;
		p = hit ? hit + strlen(HOLE) : p + len;
	}
	rc = ES_OK;
cleanup:
	free(text);
	if (rc != ES_OK)
		tmpl_free(t);
	return rc;
}

static void tmpl_free(fsim_tmpl *t)
{
	for (size_t i = 0; t->parts && i < t->nparts; i++)
		free(t->parts[i]);
	free(t->parts);
	memset(t, 0, sizeof(*t));
}

static es_err read_file(const char *path, char **out, size_t *len, char *err,
			size_t errsz)
{
	FILE *f = fopen(path, "re");
	es_buf b = { 0 };
	char chunk[65536];
	size_t n;

	*out = NULL;
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s: cannot open", path);
	es_buf_init(&b, FIXTURE_MAX);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		es_buf_append(&b, chunk, n);
	fclose(f);
	if (b.err != ES_OK) {
		es_buf_free(&b);
		return es_errf(b.err, err, errsz, "%s: over %u bytes or out of memory",
			       path, FIXTURE_MAX);
	}
	*out = es_buf_detach(&b, len);
	if (!*out)
		*out = strdup("");
	return *out ? ES_OK : ES_ERR_NOMEM;
}

es_err fsim_replay_load(fsim_replay *r, const char *dir, char *err, size_t errsz)
{
	char path[4096], *text = NULL, *line, *save = NULL;
	cJSON *j = NULL;
	size_t len, lineno = 0;
	es_err rc;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "%s/snapshot.json", dir);
	if ((rc = read_file(path, &text, &len, err, errsz)) != ES_OK)
		goto cleanup;
	if (es_json_parse(text, len, ES_JSON_MAX_DEPTH, &j, err, errsz) != ES_OK ||
	    !cJSON_IsObject(j)) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: not a JSON object", path);
		goto cleanup;
	}
	if ((rc = make_tmpl(j, &r->snapshot)) != ES_OK)
		goto cleanup;
	cJSON_Delete(j);
	j = NULL;
	free(text);
	snprintf(path, sizeof(path), "%s/patches.jsonl", dir);
	if ((rc = read_file(path, &text, &len, err, errsz)) != ES_OK)
		goto cleanup;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		fsim_tmpl *grown;

		lineno++;
		if (es_json_parse(line, strlen(line), ES_JSON_MAX_DEPTH, &j, err, errsz) !=
		    ES_OK || !cJSON_IsObject(j)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%zu: not a JSON object",
				     path, lineno);
			goto cleanup;
		}
		grown = realloc(r->patches, (r->npatches + 1) * sizeof(*grown));
		rc = ES_ERR_NOMEM;
		if (!grown)
			goto cleanup;
		r->patches = grown;
		if ((rc = make_tmpl(j, &r->patches[r->npatches])) != ES_OK)
			goto cleanup;
		r->npatches++;
		cJSON_Delete(j);
		j = NULL;
	}
	if (r->npatches == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: no patch", path);
		goto cleanup;
	}
	rc = ES_OK;
cleanup:
	cJSON_Delete(j);
	free(text);
	if (rc != ES_OK)
		fsim_replay_free(r);
	return rc;
}

void fsim_replay_free(fsim_replay *r)
{
	if (!r)
		return;
	tmpl_free(&r->snapshot);
	for (size_t i = 0; i < r->npatches; i++)
		tmpl_free(&r->patches[i]);
	free(r->patches);
	memset(r, 0, sizeof(*r));
}

void fsim_msg_hello(es_buf *b, const char *node, const char *stream_id,
		    int64_t rv, int64_t next_seq)
{
	es_buf_appendf(b, "{\"type\":\"hello\",\"protocolVersion\":%d,\"node\":\"%s\","
		       "\"agentVersion\":\"fleetsim\",\"bootId\":\"%s\","
		       "\"labels\":{\"fleetsim\":\"true\"},\"capabilities\":"
		       "[\"CollectorConfig\",\"HealthRule\",\"EgressPolicy\",\"merge-patch\"],"
		       "\"resourceVersion\":%lld,\"nextSeq\":%lld,\"streamId\":\"%s\"}",
		       ES_PROTO_VERSION, node, stream_id, (long long)rv,
		       (long long)next_seq, stream_id);
}

void fsim_msg_report(es_buf *b, const fsim_tmpl *t, int64_t seq, int snapshot,
		     int64_t base_seq, const char *node)
{
	char now[ES_TIME_RFC3339_LEN];

	es_buf_appendf(b, "{\"type\":\"report\",\"seq\":%lld,\"time\":\"%s\","
		       "\"reportType\":\"%s\",", (long long)seq,
		       es_time_now_rfc3339(now), snapshot ? "snapshot" : "patch");
	if (!snapshot)
		es_buf_appendf(b, "\"baseSeq\":%lld,", (long long)base_seq);
	es_buf_append_str(b, "\"body\":");
	for (size_t i = 0; i < t->nparts; i++) {
		if (i > 0)
			es_buf_append_str(b, node);
		es_buf_append_str(b, t->parts[i]);
	}
	es_buf_append_str(b, "}");
}

void fsim_msg_desired_ack(es_buf *b, int64_t rv)
{
	es_buf_appendf(b, "{\"type\":\"desiredAck\",\"resourceVersion\":%lld}",
		       (long long)rv);
}

void fsim_msg_ping(es_buf *b)
{
	char now[ES_TIME_RFC3339_LEN];

	es_buf_appendf(b, "{\"type\":\"ping\",\"time\":\"%s\"}", es_time_now_rfc3339(now));
}

void fsim_msg_pong(es_buf *b, const char *time)
{
	char now[ES_TIME_RFC3339_LEN];

	es_buf_appendf(b, "{\"type\":\"pong\",\"time\":\"%s\"}",
		       time ? time : es_time_now_rfc3339(now));
}

/* Message types by name. */
static const struct {
	const char *name;
	fsim_in_type type;
} in_types[] = {
	{ "welcome", FSIM_IN_WELCOME }, { "desired", FSIM_IN_DESIRED },
	{ "ack", FSIM_IN_ACK },         { "resync", FSIM_IN_RESYNC },
	{ "ping", FSIM_IN_PING },       { "error", FSIM_IN_ERROR },
};

/* 1 when m's member key is an integer in 0..2^53-1 (set in *out), else 0. */
static int get_int(const cJSON *m, const char *key, int64_t *out)
{
	return es_json_int_value(cJSON_GetObjectItemCaseSensitive(m, key), 0,
				 ((int64_t)1 << 53) - 1, out) == 0;
}

static const char *get_str(const cJSON *m, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

es_err fsim_msg_parse(const char *text, size_t len, fsim_in *out, char *err,
		      size_t errsz)
{
	cJSON *m = NULL;
	const char *type, *s;
	es_err rc;

	memset(out, 0, sizeof(*out));
	rc = es_json_parse(text ? text : "", len, ES_JSON_MAX_DEPTH, &m, err, errsz);
	if (rc != ES_OK)
		return rc == ES_ERR_NOMEM ? rc : ES_ERR_PARSE;
	rc = ES_ERR_PARSE;
	if (!(type = get_str(m, "type"))) {
		es_errf(rc, err, errsz, "message without a string type");
		goto cleanup;
	}
	for (size_t i = 0; i < sizeof(in_types) / sizeof(in_types[0]); i++)
		if (strcmp(type, in_types[i].name) == 0)
			out->type = in_types[i].type;
	switch (out->type) {
	case FSIM_IN_WELCOME:
		if (!get_int(m, "ackedSeq", &out->acked_seq)) {
			es_errf(rc, err, errsz, "welcome.ackedSeq: expected an integer");
			goto cleanup;
		}
		get_int(m, "heartbeatSeconds", &out->heartbeat_s);
		break;
	case FSIM_IN_ACK:
		if (!get_int(m, "seq", &out->seq)) {
			es_errf(rc, err, errsz, "ack.seq: expected an integer");
			goto cleanup;
		}
		break;
	case FSIM_IN_DESIRED:
		if (!get_int(m, "resourceVersion", &out->rv)) {
			es_errf(rc, err, errsz, "desired.resourceVersion: expected an integer");
			goto cleanup;
		}
		out->full = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "full"));
		out->more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "more"));
		break;
	case FSIM_IN_PING:
		snprintf(out->time, sizeof(out->time), "%s",
			 (s = get_str(m, "time")) ? s : "");
		break;
	case FSIM_IN_ERROR:
		snprintf(out->text, sizeof(out->text), "%s: %s",
			 (s = get_str(m, "code")) ? s : "?",
			 get_str(m, "message") ? get_str(m, "message") : "");
		break;
	default:
		break;
	}
	rc = ES_OK;
cleanup:
	cJSON_Delete(m);
	return rc;
}
