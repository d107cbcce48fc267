/*
 * store_etcd_record.c - the value of a node's record on etcd,
 * <prefix>nodes/<node> (docs/ARCHITECTURE.md "The store", report cursors
 * and node status): its JSON, its parsing, and the compare-and-swap txn
 * that writes a batch of them. No state: store_etcd_cursor.c keeps it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_etcd_int.h"
#include "es_json.h"
#include "es_time.h"

/* The earlierStreams member of a record: an array of n entries. */
static int add_earlier(cJSON *o, const store_etcd__stream *e, size_t n)
{
	cJSON *arr, *it;
	char fid[24];

	if (n == 0)
		return 1;
	if (!(arr = cJSON_AddArrayToObject(o, "earlierStreams")))
		return 0;
	for (size_t i = 0; i < n && i < STORE_ETCD_EARLIER_MAX; i++) {
		snprintf(fid, sizeof(fid), "%" PRId64, e[i].file);
		if (!(it = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, it) ||
		    !cJSON_AddStringToObject(it, "streamId", e[i].id) ||
		    !es_json_add_int(it, "seq", e[i].seq) ||
		    !es_json_add_int(it, "since", e[i].since) ||
		    !cJSON_AddStringToObject(it, "file", fid))
			return 0;
	}
	return 1;
}

char *store_etcd__cursor_value(const char *controller, int64_t file_id,
			       const es_store_cursor *c, int64_t since,
			       const store_etcd__stream *earlier, size_t n)
{
	char ts[ES_TIME_RFC3339_LEN], fid[24];
	cJSON *o = cJSON_CreateObject(), *conds;
	char *out = NULL;

	snprintf(fid, sizeof(fid), "%" PRId64, file_id);
	if (!o || !cJSON_AddStringToObject(o, "streamId", c->stream ? c->stream : "") ||
	    !es_json_add_int(o, "seq", c->seq) || !es_json_add_int(o, "since", since) ||
	    !cJSON_AddStringToObject(o, "controller", controller) ||
	    !cJSON_AddStringToObject(o, "file", fid) ||
	    !es_json_add_int(o, "desiredAck", c->desired_ack) || !add_earlier(o, earlier, n))
		goto done;
	if (c->last_report &&
	    !cJSON_AddStringToObject(o, "lastReport", es_time_rfc3339(c->last_report, ts)))
		goto done;
	if (cJSON_IsArray(c->conditions)) {
		if (!(conds = cJSON_Duplicate(c->conditions, 1)))
			goto done;
		cJSON_AddItemToObject(o, "conditions", conds);
	}
	out = es_json_print(o);
done:
	cJSON_Delete(o);
	return out;
}

/* The earlierStreams member of record o into out; ES_ERR_PROTO when it is
 * not an array of entries with a streamId and seq. */
static es_err parse_earlier(const cJSON *o, store_etcd__rec *out)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "earlierStreams"), *it;
	const char *id, *fid;

	if (!arr)
		return ES_OK;
	if (!cJSON_IsArray(arr))
		return ES_ERR_PROTO;
	cJSON_ArrayForEach(it, arr) {
		store_etcd__stream *e = &out->earlier[out->n_earlier];

		id = fid = NULL;
		if (!cJSON_IsObject(it) ||
		    es_json_get_str(it, "earlier stream", "streamId", 1, &id, NULL, 0) != ES_OK ||
		    strlen(id) > ES_PROTO_STREAM_ID_MAX ||
		    es_json_get_str(it, "earlier stream", "file", 0, &fid, NULL, 0) == ES_ERR_INVAL ||
		    es_json_get_int(it, "earlier stream", "seq", 1, 0, ES_JSON_MAX_INT, &e->seq,
				    NULL, 0) != ES_OK ||
		    es_json_get_int(it, "earlier stream", "since", 0, 0, ES_JSON_MAX_INT,
				    &e->since, NULL, 0) == ES_ERR_INVAL)
			return ES_ERR_PROTO;
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->file = fid ? strtoll(fid, NULL, 10) : 0;
		if (++out->n_earlier == STORE_ETCD_EARLIER_MAX)
			break;
	}
	return ES_OK;
}

es_err store_etcd__cursor_parse(const char *value, size_t len, store_etcd__rec *out)
{
	char perr[128];
	cJSON *o = NULL;
	const char *stream = NULL, *ctrl = NULL, *fid = NULL;
	es_err rc;

	memset(out, 0, sizeof(*out));
	rc = es_json_parse(value, len, 8, &o, perr, sizeof(perr));
	if (rc != ES_OK)
		return rc == ES_ERR_NOMEM ? rc : ES_ERR_PROTO;
	if (!cJSON_IsObject(o) ||
	    es_json_get_str(o, "node record", "streamId", 1, &stream, NULL, 0) != ES_OK ||
	    es_json_get_str(o, "node record", "controller", 1, &ctrl, NULL, 0) != ES_OK ||
	    es_json_get_str(o, "node record", "file", 0, &fid, NULL, 0) == ES_ERR_INVAL ||
	    es_json_get_int(o, "node record", "seq", 1, 0, ES_JSON_MAX_INT, &out->seq,
			    NULL, 0) != ES_OK ||
	    es_json_get_int(o, "node record", "since", 0, 0, ES_JSON_MAX_INT, &out->since,
			    NULL, 0) == ES_ERR_INVAL ||
	    es_json_get_int(o, "node record", "desiredAck", 0, 0, ES_JSON_MAX_INT,
			    &out->desired_ack, NULL, 0) == ES_ERR_INVAL ||
	    strlen(stream) > ES_PROTO_STREAM_ID_MAX || strlen(ctrl) >= sizeof(out->controller) ||
	    parse_earlier(o, out) != ES_OK) {
		cJSON_Delete(o);
		memset(out, 0, sizeof(*out));
		return ES_ERR_PROTO;
	}
	snprintf(out->stream, sizeof(out->stream), "%s", stream);
	snprintf(out->controller, sizeof(out->controller), "%s", ctrl);
	out->file = fid ? strtoll(fid, NULL, 10) : 0;
	cJSON_Delete(o);
	return ES_OK;
}

const store_etcd__stream *store_etcd__earlier_find(const store_etcd__stream *e, size_t n,
						   const char *id)
{
	for (size_t i = 0; id && i < n; i++)
		if (strcmp(e[i].id, id) == 0)
			return &e[i];
	return NULL;
}

size_t store_etcd__earlier_next(const char *cur, int64_t cur_seq, int64_t cur_since,
				int64_t file, const store_etcd__stream *e, size_t n,
				const char *next, store_etcd__stream out[STORE_ETCD_EARLIER_MAX])
{
	size_t k = 0;
	int same = cur && next && strcmp(cur, next) == 0, pushed = 0;

	if (!same && cur && *cur) {
		snprintf(out[0].id, sizeof(out[0].id), "%s", cur);
		out[0].seq = cur_seq;
		out[0].since = cur_since;
		out[0].file = file;
		k = pushed = 1;
	}
	for (size_t i = 0; i < n && k < STORE_ETCD_EARLIER_MAX; i++)
		if (same || ((!next || strcmp(e[i].id, next) != 0) &&
			     (!pushed || strcmp(e[i].id, cur) != 0)))
			out[k++] = e[i];
	return k;
}

es_err store_etcd__cursor_txn(es_etcd_txn *t, char *const *keys, const size_t *klens,
			      const int64_t *mods, char *const *values, size_t n)
{
	es_err rc = es_etcd_txn_init(t);

	if (rc != ES_OK)
		return rc;
	if (n == 0 || n > STORE_ETCD_TXN_NODES)
		return ES_ERR_INVAL;
	for (size_t i = 0; i < n; i++) {
		if (mods[i])
			es_etcd_txn_compare(t, keys[i], klens[i], ES_ETCD_CMP_MOD, ES_ETCD_EQUAL,
					    mods[i], NULL, 0);
		else
			es_etcd_txn_compare(t, keys[i], klens[i], ES_ETCD_CMP_CREATE,
					    ES_ETCD_EQUAL, 0, NULL, 0);
		es_etcd_txn_put(t, 1, keys[i], klens[i], values[i], strlen(values[i]), 0);
		rc = es_etcd_txn_range(t, 0, keys[i], klens[i], NULL, 0);
	}
	return rc;
}

char *store_etcd__node_key(const est *s, const char *node, size_t *len)
{
	size_t n = s->nplen + strlen(node) + 1;
	char *k = malloc(n);

	if (k)
		*len = (size_t)snprintf(k, n, "%s%s", s->npfx, node);
	return k;
}

