/*
 * fsim_msg.c - the simulator's messages, protocol versions 1 and 2
 * (fsim_msg.h).
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

#include "es_fs.h"
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
	cJSON *inv = cJSON_GetObjectItemCaseSensitive(body, "involvedObject");
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(inv, "kind");
	char *text = NULL, *p, *hit;
	size_t n = 1;
	es_err rc = ES_ERR_NOMEM;

	memset(t, 0, sizeof(*t));
	if (!set_hole(cJSON_GetObjectItemCaseSensitive(body, "metadata"), "name") ||
	    !set_hole(cJSON_GetObjectItemCaseSensitive(status, "nodeInfo"), "hostname"))
		goto cleanup;
	/* an event about the Node must name the connection's node */
	if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Node") == 0 &&
	    !set_hole(inv, "name"))
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

/* Loads one version 2 line (j, an object) as r's next record. */
static es_err add_rec(fsim_replay *r, cJSON *j, const char *path, size_t lineno,
		      char *err, size_t errsz)
{
	const cJSON *after = cJSON_GetObjectItemCaseSensitive(j, "afterSeconds");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "reportType");
	cJSON *body = cJSON_GetObjectItemCaseSensitive(j, "body");
	fsim_rec *grown, *rec;
	int event;
	es_err rc;

	if (!cJSON_IsNumber(after) || after->valuedouble < 0 || after->valuedouble > 86400)
		return es_errf(ES_ERR_PARSE, err, errsz,
			       "%s:%zu: afterSeconds: expected a number in 0..86400",
			       path, lineno);
	if (!cJSON_IsString(type) || (strcmp(type->valuestring, "delta") != 0 &&
				      strcmp(type->valuestring, "event") != 0))
		return es_errf(ES_ERR_PARSE, err, errsz,
			       "%s:%zu: reportType: expected \"delta\" or \"event\"",
			       path, lineno);
	if (!cJSON_IsObject(body))
		return es_errf(ES_ERR_PARSE, err, errsz, "%s:%zu: body: expected an object",
			       path, lineno);
	event = strcmp(type->valuestring, "event") == 0;
	if (!(grown = realloc(r->recs, (r->nrecs + 1) * sizeof(*grown))))
		return ES_ERR_NOMEM;
	r->recs = grown;
	rec = &r->recs[r->nrecs];
	memset(rec, 0, sizeof(*rec));
	if ((rc = make_tmpl(body, &rec->body)) != ES_OK)
		return rc;
	rec->after_s = after->valuedouble;
	rec->event = event;
	r->recs_s += rec->after_s;
	r->nrecs++;
	return ES_OK;
}

es_err fsim_replay_load(fsim_replay *r, const char *dir, int version, char *err,
			size_t errsz)
{
	char path[4096], *text = NULL, *line, *save = NULL;
	const char *sub = version == 2 ? "/v2" : "";
	cJSON *j = NULL;
	size_t len, lineno = 0, deltas = 0;
	es_err rc;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "%s%s/snapshot.json", dir, sub);
	if ((rc = es_fs_read_all(path, FIXTURE_MAX, &text, &len, err, errsz)) != ES_OK)
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
	snprintf(path, sizeof(path), "%s%s/%s", dir, sub,
		 version == 2 ? "reports.jsonl" : "patches.jsonl");
	if ((rc = es_fs_read_all(path, FIXTURE_MAX, &text, &len, err, errsz)) != ES_OK)
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
		if (version == 2) {
			if ((rc = add_rec(r, j, path, lineno, err, errsz)) != ES_OK)
				goto cleanup;
			deltas += !r->recs[r->nrecs - 1].event;
			cJSON_Delete(j);
			j = NULL;
			continue;
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
	if (version != 2 && r->npatches == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: no patch", path);
		goto cleanup;
	}
	if (version == 2 && deltas == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: no delta", path);
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
	for (size_t i = 0; i < r->nrecs; i++)
		tmpl_free(&r->recs[i].body);
	free(r->recs);
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

void fsim_msg_hello_v2(es_buf *b, const char *node, const char *stream_id,
		       int64_t rv, int64_t next_seq, int deflate)
{
	cJSON *labels = cJSON_CreateObject(), *m;
	char *text = NULL;

	if (labels && !cJSON_AddStringToObject(labels, "fleetsim", "true")) {
		cJSON_Delete(labels);
		labels = NULL;
	}
	m = labels ? es_proto_hello(node, "fleetsim", stream_id, labels, rv, next_seq,
				    stream_id) : NULL;
	if (m && es_proto_make_v2(m, deflate) == ES_OK)
		text = es_json_print(m);
	cJSON_Delete(m);
	if (!text) {
		b->err = ES_ERR_NOMEM;
		return;
	}
	es_buf_append_str(b, text);
	free(text);
}

void fsim_msg_report(es_buf *b, const fsim_tmpl *t, int64_t seq, const char *type,
		     int64_t base_seq, const char *node)
{
	char now[ES_TIME_RFC3339_LEN];

	es_buf_appendf(b, "{\"type\":\"report\",\"seq\":%lld,\"time\":\"%s\","
		       "\"reportType\":\"%s\",", (long long)seq,
		       es_time_now_rfc3339(now), type);
	if (strcmp(type, "patch") == 0 || strcmp(type, "delta") == 0)
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
		if (!get_int(m, "protocolVersion", &out->proto))
			out->proto = 1;
		out->deflate = es_proto_has_capability(m, ES_PROTO_CAP_DEFLATE);
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
		snprintf(out->code, sizeof(out->code), "%s",
			 (s = get_str(m, "code")) ? s : "");
		if (!get_int(m, "retryAfterSeconds", &out->retry_after_s) ||
		    out->retry_after_s < 0)
			out->retry_after_s = 0;
		break;
	default:
		break;
	}
	rc = ES_OK;
cleanup:
	cJSON_Delete(m);
	return rc;
}
