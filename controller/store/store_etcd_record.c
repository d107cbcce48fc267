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

char *store_etcd__cursor_value(const char *controller, int64_t file_id,
			       const es_store_cursor *c, int64_t since)
{
	char ts[ES_TIME_RFC3339_LEN], fid[24];
	cJSON *o = cJSON_CreateObject(), *conds;
	char *out = NULL;

	snprintf(fid, sizeof(fid), "%" PRId64, file_id);
	if (!o || !cJSON_AddStringToObject(o, "streamId", c->stream ? c->stream : "") ||
	    !es_json_add_int(o, "seq", c->seq) || !es_json_add_int(o, "since", since) ||
	    !cJSON_AddStringToObject(o, "controller", controller) ||
	    !cJSON_AddStringToObject(o, "file", fid) ||
	    !es_json_add_int(o, "desiredAck", c->desired_ack))
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
	    strlen(stream) > ES_PROTO_STREAM_ID_MAX || strlen(ctrl) >= sizeof(out->controller)) {
		cJSON_Delete(o);
		return ES_ERR_PROTO;
	}
	snprintf(out->stream, sizeof(out->stream), "%s", stream);
	snprintf(out->controller, sizeof(out->controller), "%s", ctrl);
	out->file = fid ? strtoll(fid, NULL, 10) : 0;
	cJSON_Delete(o);
	return ES_OK;
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

