/*
 * etcd_msg.c - request bodies and response parsing of etcd's v3 JSON
 * gateway (see etcd_msg.h for the mapping rules).
 */
#include "etcd/etcd_msg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/base64.h>

#include "es_json.h"

/* --- building ----------------------------------------------------------- */

/* Adds name: base64(data) to obj. Returns 0, or -1 when memory ran out. */
static int add_b64(cJSON *obj, const char *name, const void *data, size_t len)
{
	size_t need = 0;
	char *text;
	int rc = -1;

	mbedtls_base64_encode(NULL, 0, &need, data, len);
	text = malloc(need + 1);
	if (!text)
		return -1;
	text[0] = '\0'; /* mbedtls writes nothing for empty data */
	if (mbedtls_base64_encode((unsigned char *)text, need + 1, &need, data,
				  len) == 0 && cJSON_AddStringToObject(obj, name, text))
		rc = 0;
	free(text);
	return rc;
}

/* Adds name: "n" (a 64-bit integer as a string, as proto3 JSON writes one). */
static int add_i64(cJSON *obj, const char *name, int64_t n)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, n);
	return cJSON_AddStringToObject(obj, name, text) ? 0 : -1;
}

static char *finish(cJSON *o, int failed)
{
	char *text = failed ? NULL : es_json_print(o);

	cJSON_Delete(o);
	return text;
}

/* The members of a RangeRequest (or DeleteRangeRequest) into o. */
static int add_range(cJSON *o, const void *key, size_t klen,
		     const void *range_end, size_t relen)
{
	if (add_b64(o, "key", key, klen) != 0)
		return -1;
	if (range_end && add_b64(o, "range_end", range_end, relen) != 0)
		return -1;
	return 0;
}

char *es_etcd_msg_range(const void *key, size_t klen, const void *range_end,
			size_t relen, int64_t revision, int64_t limit)
{
	cJSON *o = cJSON_CreateObject();
	int bad = !o || add_range(o, key, klen, range_end, relen) != 0;

	if (!bad && revision > 0)
		bad = add_i64(o, "revision", revision) != 0;
	if (!bad && limit > 0)
		bad = add_i64(o, "limit", limit) != 0;
	return finish(o, bad);
}

/* The members of a PutRequest into o. */
static int add_put(cJSON *o, const void *key, size_t klen, const void *value,
		   size_t vlen, int64_t lease)
{
	if (add_b64(o, "key", key, klen) != 0 ||
	    add_b64(o, "value", value ? value : "", value ? vlen : 0) != 0)
		return -1;
	return lease ? add_i64(o, "lease", lease) : 0;
}

char *es_etcd_msg_put(const void *key, size_t klen, const void *value,
		      size_t vlen, int64_t lease)
{
	cJSON *o = cJSON_CreateObject();

	return finish(o, !o || add_put(o, key, klen, value, vlen, lease) != 0);
}

char *es_etcd_msg_delete(const void *key, size_t klen, const void *range_end,
			 size_t relen)
{
	cJSON *o = cJSON_CreateObject();

	return finish(o, !o || add_range(o, key, klen, range_end, relen) != 0);
}

char *es_etcd_msg_lease_grant(int64_t ttl_s, int64_t id)
{
	cJSON *o = cJSON_CreateObject();
	int bad = !o || add_i64(o, "TTL", ttl_s) != 0;

	if (!bad && id)
		bad = add_i64(o, "ID", id) != 0;
	return finish(o, bad);
}

char *es_etcd_msg_lease_id(int64_t id)
{
	cJSON *o = cJSON_CreateObject();

	return finish(o, !o || add_i64(o, "ID", id) != 0);
}

char *es_etcd_msg_watch_create(const void *key, size_t klen,
			       const void *range_end, size_t relen,
			       int64_t start_revision)
{
	cJSON *o = cJSON_CreateObject(), *c = cJSON_CreateObject();
	int bad = !o || !c || add_range(c, key, klen, range_end, relen) != 0 ||
		  (start_revision > 0 &&
		   add_i64(c, "start_revision", start_revision) != 0) ||
		  !cJSON_AddTrueToObject(c, "progress_notify") ||
		  !cJSON_AddTrueToObject(c, "prev_kv");

	if (!bad && cJSON_AddItemToObject(o, "create_request", c))
		c = NULL; /* o owns it now */
	else
		bad = 1;
	cJSON_Delete(c);
	return finish(o, bad);
}

size_t es_etcd_prefix_end(const void *prefix, size_t plen, char *out)
{
	const unsigned char *p = prefix;

	for (size_t i = plen; i > 0; i--) {
		if (p[i - 1] != 0xff) {
			memcpy(out, p, i);
			out[i - 1] = (char)(p[i - 1] + 1);
			return i;
		}
	}
	out[0] = '\0';
	return 1;
}

/* --- txn ---------------------------------------------------------------- */

es_err es_etcd_txn_init(es_etcd_txn *t)
{
	memset(t, 0, sizeof(*t));
	t->body = cJSON_CreateObject();
	if (t->body) {
		t->compare = cJSON_AddArrayToObject(t->body, "compare");
		t->success = cJSON_AddArrayToObject(t->body, "success");
		t->failure = cJSON_AddArrayToObject(t->body, "failure");
	}
	if (!t->body || !t->compare || !t->success || !t->failure) {
		t->err = ES_ERR_NOMEM;
		return ES_ERR_NOMEM;
	}
	return ES_OK;
}

void es_etcd_txn_free(es_etcd_txn *t)
{
	if (!t)
		return;
	cJSON_Delete(t->body);
	memset(t, 0, sizeof(*t));
}

static const char *const target_names[] = {
	"VERSION", "CREATE", "MOD", "VALUE", "LEASE"
};
static const char *const target_fields[] = {
	"version", "create_revision", "mod_revision", "value", "lease"
};
static const char *const op_names[] = {
	"EQUAL", "GREATER", "LESS", "NOT_EQUAL"
};

/* The sticky error, or ES_ERR_INVAL (kept) for a NULL or empty key. */
static es_err txn_key_ok(es_etcd_txn *t, const void *key, size_t klen)
{
	if (!t->err && (!key || !klen))
		t->err = ES_ERR_INVAL;
	return t->err;
}

/* Adds item to arr, or deletes it and remembers the failure. */
static es_err txn_add(es_etcd_txn *t, cJSON *arr, cJSON *item, int bad)
{
	if (bad || !item || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		t->err = ES_ERR_NOMEM;
		return t->err;
	}
	return ES_OK;
}

es_err es_etcd_txn_compare(es_etcd_txn *t, const void *key, size_t klen,
			   es_etcd_target target, es_etcd_cmp_op op, int64_t n,
			   const void *value, size_t vlen)
{
	cJSON *c;
	int bad;

	if (txn_key_ok(t, key, klen) != ES_OK)
		return t->err;
	if ((unsigned)target > ES_ETCD_CMP_LEASE || (unsigned)op > ES_ETCD_NOT_EQUAL) {
		t->err = ES_ERR_INVAL;
		return t->err;
	}
	c = cJSON_CreateObject();
	bad = !c || add_b64(c, "key", key, klen) != 0 ||
	      !cJSON_AddStringToObject(c, "target", target_names[target]) ||
	      !cJSON_AddStringToObject(c, "result", op_names[op]);
	if (!bad) {
		if (target == ES_ETCD_CMP_VALUE)
			bad = add_b64(c, "value", value ? value : "", value ? vlen : 0) != 0;
		else
			bad = add_i64(c, target_fields[target], n) != 0;
	}
	return txn_add(t, t->compare, c, bad);
}

/* Adds {name: inner} to the branch; inner is filled by the caller first. */
static es_err txn_op(es_etcd_txn *t, int on_success, const char *name,
		     cJSON *inner, int bad)
{
	cJSON *op = cJSON_CreateObject();

	if (!op || bad || !inner || !cJSON_AddItemToObject(op, name, inner)) {
		if (!op || !cJSON_GetObjectItemCaseSensitive(op, name))
			cJSON_Delete(inner);
		cJSON_Delete(op);
		t->err = ES_ERR_NOMEM;
		return t->err;
	}
	t->n_ops++;
	if (strcmp(name, "request_range") != 0)
		t->n_writes++;
	return txn_add(t, on_success ? t->success : t->failure, op, 0);
}

es_err es_etcd_txn_put(es_etcd_txn *t, int on_success, const void *key,
		       size_t klen, const void *value, size_t vlen, int64_t lease)
{
	cJSON *in;

	if (txn_key_ok(t, key, klen) != ES_OK)
		return t->err;
	in = cJSON_CreateObject();
	return txn_op(t, on_success, "request_put", in,
		      !in || add_put(in, key, klen, value, vlen, lease) != 0);
}

/* A request_range or request_delete_range (name) of [key, range_end). */
static es_err txn_range_op(es_etcd_txn *t, int on_success, const char *name,
			   const void *key, size_t klen, const void *range_end,
			   size_t relen)
{
	cJSON *in;

	if (txn_key_ok(t, key, klen) != ES_OK)
		return t->err;
	in = cJSON_CreateObject();
	return txn_op(t, on_success, name, in,
		      !in || add_range(in, key, klen, range_end, relen) != 0);
}

es_err es_etcd_txn_delete(es_etcd_txn *t, int on_success, const void *key,
			  size_t klen, const void *range_end, size_t relen)
{
	return txn_range_op(t, on_success, "request_delete_range", key, klen,
			    range_end, relen);
}

es_err es_etcd_txn_range(es_etcd_txn *t, int on_success, const void *key,
			 size_t klen, const void *range_end, size_t relen)
{
	return txn_range_op(t, on_success, "request_range", key, klen, range_end,
			    relen);
}

char *es_etcd_msg_txn_body(const es_etcd_txn *t, es_err *rc)
{
	char *text;

	if (t->err || !t->body) {
		*rc = t->err ? t->err : ES_ERR_INVAL;
		return NULL;
	}
	text = es_json_print(t->body);
	*rc = text ? ES_OK : ES_ERR_NOMEM;
	return text;
}

/* --- parsing ------------------------------------------------------------ */

/* A 64-bit integer member, as a string of digits or a number; absent is 0.
 * Returns 0, or -1 for a wrong type or text. */
static int get_i64(const cJSON *o, const char *name, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	char *end;
	long long n;

	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v))
		return es_json_int_value(v, INT64_MIN, INT64_MAX, out);
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return -1;
	errno = 0;
	n = strtoll(v->valuestring, &end, 10);
	if (errno || *end)
		return -1;
	*out = n;
	return 0;
}

/* An unsigned 64-bit member (IDs of cluster and member). */
static int get_u64(const cJSON *o, const char *name, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	char *end;

	*out = 0;
	if (!v)
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring[0] || v->valuestring[0] == '-')
		return -1;
	errno = 0;
	*out = strtoull(v->valuestring, &end, 10);
	return errno || *end ? -1 : 0;
}

static int get_flag(const cJSON *o, const char *name)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* A base64 member decoded into a new NUL-terminated buffer ("" when
 * absent). Returns 0, -1 for bad base64 or a wrong type, -2 for memory. */
static int get_b64(const cJSON *o, const char *name, char **out, size_t *len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	const char *text = "";
	size_t n = 0, tl;

	*out = NULL;
	*len = 0;
	if (v && !cJSON_IsString(v))
		return -1;
	if (v)
		text = v->valuestring;
	tl = strlen(text);
	if (mbedtls_base64_decode(NULL, 0, &n, (const unsigned char *)text, tl) ==
	    MBEDTLS_ERR_BASE64_INVALID_CHARACTER)
		return -1;
	*out = malloc(n + 1);
	if (!*out)
		return -2;
	if (mbedtls_base64_decode((unsigned char *)*out, n + 1, &n,
				  (const unsigned char *)text, tl) != 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	(*out)[n] = '\0';
	*len = n;
	return 0;
}

static void kv_free(es_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

static es_err bad(es_err rc, char *err, size_t errsz, const char *what)
{
	if (rc == ES_ERR_NOMEM)
		return es_errf(rc, err, errsz, "etcd response: out of memory");
	return es_errf(rc, err, errsz, "etcd response: %s is malformed", what);
}

static es_err parse_kv(const cJSON *o, es_etcd_kv *kv, const char *what,
		       char *err, size_t errsz)
{
	int r;

	memset(kv, 0, sizeof(*kv));
	if (!cJSON_IsObject(o))
		return bad(ES_ERR_PARSE, err, errsz, what);
	if ((r = get_b64(o, "key", &kv->key, &kv->key_len)) != 0 ||
	    (r = get_b64(o, "value", &kv->value, &kv->value_len)) != 0) {
		kv_free(kv);
		return bad(r == -2 ? ES_ERR_NOMEM : ES_ERR_PARSE, err, errsz, what);
	}
	if (get_i64(o, "create_revision", &kv->create_revision) ||
	    get_i64(o, "mod_revision", &kv->mod_revision) ||
	    get_i64(o, "version", &kv->version) ||
	    get_i64(o, "lease", &kv->lease)) {
		kv_free(kv);
		return bad(ES_ERR_PARSE, err, errsz, what);
	}
	return ES_OK;
}

/* An array member of KeyValues into a new array. */
static es_err parse_kvs(const cJSON *o, const char *name, es_etcd_kv **out,
			size_t *n, char *err, size_t errsz)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, name), *it;
	size_t cnt, i = 0;
	es_err rc;

	*out = NULL;
	*n = 0;
	if (!arr)
		return ES_OK;
	if (!cJSON_IsArray(arr))
		return bad(ES_ERR_PARSE, err, errsz, name);
	cnt = (size_t)cJSON_GetArraySize(arr);
	if (!cnt)
		return ES_OK;
	*out = calloc(cnt, sizeof(**out));
	if (!*out)
		return bad(ES_ERR_NOMEM, err, errsz, name);
	cJSON_ArrayForEach(it, arr) {
		rc = parse_kv(it, &(*out)[i], name, err, errsz);
		if (rc != ES_OK) {
			for (size_t j = 0; j < i; j++)
				kv_free(&(*out)[j]);
			free(*out);
			*out = NULL;
			return rc;
		}
		i++;
	}
	*n = i;
	return ES_OK;
}

static es_err parse_header(const cJSON *o, es_etcd_resp *r, char *err,
			   size_t errsz)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "header");

	if (!h)
		return ES_OK;
	if (!cJSON_IsObject(h) || get_i64(h, "revision", &r->revision) ||
	    get_i64(h, "raft_term", &r->raft_term) ||
	    get_u64(h, "member_id", &r->member_id))
		return bad(ES_ERR_PARSE, err, errsz, "header");
	return ES_OK;
}

static es_err parse_resp(const cJSON *o, es_etcd_resp *r, int depth, char *err,
			 size_t errsz);

/* A txn's responses: each {"response_put"|"response_range"|...: {...}}. */
static es_err parse_ops(const cJSON *o, es_etcd_resp *r, int depth, char *err,
			size_t errsz)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "responses"), *it;
	size_t cnt, i = 0;
	es_err rc;

	if (!arr)
		return ES_OK;
	if (!cJSON_IsArray(arr) || depth > 2)
		return bad(ES_ERR_PARSE, err, errsz, "responses");
	cnt = (size_t)cJSON_GetArraySize(arr);
	if (!cnt)
		return ES_OK;
	r->ops = calloc(cnt, sizeof(*r->ops));
	if (!r->ops)
		return bad(ES_ERR_NOMEM, err, errsz, "responses");
	cJSON_ArrayForEach(it, arr) {
		const cJSON *inner = it && cJSON_IsObject(it) ? it->child : NULL;

		if (!inner || !cJSON_IsObject(inner))
			return bad(ES_ERR_PARSE, err, errsz, "responses");
		rc = parse_resp(inner, &r->ops[i], depth + 1, err, errsz);
		r->n_ops = ++i;
		if (rc != ES_OK)
			return rc;
	}
	return ES_OK;
}

static es_err parse_resp(const cJSON *o, es_etcd_resp *r, int depth, char *err,
			 size_t errsz)
{
	es_err rc;

	if (!cJSON_IsObject(o))
		return bad(ES_ERR_PARSE, err, errsz, "the body");
	if ((rc = parse_header(o, r, err, errsz)) != ES_OK ||
	    (rc = parse_kvs(o, "kvs", &r->kvs, &r->n_kvs, err, errsz)) != ES_OK ||
	    (rc = parse_kvs(o, "prev_kvs", &r->prev_kvs, &r->n_prev_kvs, err,
			    errsz)) != ES_OK)
		return rc;
	if (get_i64(o, "count", &r->count) || get_i64(o, "deleted", &r->deleted) ||
	    get_i64(o, "ID", &r->lease_id) || get_i64(o, "TTL", &r->ttl))
		return bad(ES_ERR_PARSE, err, errsz, "a number");
	r->more = get_flag(o, "more");
	r->succeeded = get_flag(o, "succeeded");
	/* A put's prev_kv is one object, not an array. */
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "prev_kv"))) {
		r->prev_kvs = calloc(1, sizeof(*r->prev_kvs));
		if (!r->prev_kvs)
			return bad(ES_ERR_NOMEM, err, errsz, "prev_kv");
		rc = parse_kv(cJSON_GetObjectItemCaseSensitive(o, "prev_kv"),
			      r->prev_kvs, "prev_kv", err, errsz);
		if (rc != ES_OK)
			return rc;
		r->n_prev_kvs = 1;
	}
	return parse_ops(o, r, depth, err, errsz);
}

es_err es_etcd_msg_parse(const char *body, size_t len, es_etcd_resp *out,
			 char *err, size_t errsz)
{
	const cJSON *o;
	cJSON *root = NULL;
	es_err rc;

	memset(out, 0, sizeof(*out));
	rc = es_json_parse(body, len, ES_JSON_MAX_DEPTH, &root, err, errsz);
	if (rc != ES_OK)
		return rc;
	o = root;
	/* A keepalive is a stream of one message: {"result": {...}}. */
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "result")))
		o = cJSON_GetObjectItemCaseSensitive(root, "result");
	rc = parse_resp(o, out, 0, err, errsz);
	cJSON_Delete(root);
	if (rc != ES_OK)
		es_etcd_resp_free(out);
	return rc;
}

void es_etcd_resp_free(es_etcd_resp *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_kvs; i++)
		kv_free(&r->kvs[i]);
	for (size_t i = 0; i < r->n_prev_kvs; i++)
		kv_free(&r->prev_kvs[i]);
	for (size_t i = 0; i < r->n_ops; i++)
		es_etcd_resp_free(&r->ops[i]);
	free(r->kvs);
	free(r->prev_kvs);
	free(r->ops);
	memset(r, 0, sizeof(*r));
}

int es_etcd_msg_error(const char *body, size_t len, int *code, char *msg,
		      size_t msgsz)
{
	const cJSON *e, *m = NULL, *c = NULL;
	cJSON *root = NULL;
	int found = 0;
	int64_t n = 0;

	*code = 0;
	if (msgsz)
		msg[0] = '\0';
	if (es_json_parse(body, len, ES_JSON_MAX_DEPTH, &root, NULL, 0) != ES_OK)
		return 0;
	e = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (cJSON_IsString(e)) {
		/* unary: {"error": text, "message": text, "code": n} */
		m = cJSON_GetObjectItemCaseSensitive(root, "message");
		c = cJSON_GetObjectItemCaseSensitive(root, "code");
		if (!cJSON_IsString(m))
			m = e;
		found = 1;
	} else if (cJSON_IsObject(e)) {
		/* stream: {"error": {"grpc_code": n, "message": text, ...}} */
		m = cJSON_GetObjectItemCaseSensitive(e, "message");
		c = cJSON_GetObjectItemCaseSensitive(e, "grpc_code");
		if (!c)
			c = cJSON_GetObjectItemCaseSensitive(e, "code");
		found = 1;
	}
	if (found) {
		if (c && es_json_int_value(c, 0, 1000, &n) == 0)
			*code = (int)n;
		snprintf(msg, msgsz, "%s",
			 cJSON_IsString(m) ? m->valuestring : "(no message)");
	}
	cJSON_Delete(root);
	return found;
}

/* --- watch -------------------------------------------------------------- */

es_err es_etcd_msg_watch_parse(const char *line, size_t len,
			       es_etcd_watch_msg *out, char *err, size_t errsz)
{
	const cJSON *r, *evs, *ev, *reason;
	cJSON *root = NULL;
	es_err rc;
	size_t i = 0, cnt;

	memset(out, 0, sizeof(*out));
	rc = es_json_parse(line, len, ES_JSON_MAX_DEPTH, &root, err, errsz);
	if (rc != ES_OK)
		return rc;
	r = cJSON_GetObjectItemCaseSensitive(root, "result");
	if (!cJSON_IsObject(r)) {
		rc = bad(ES_ERR_PARSE, err, errsz, "watch result");
		goto cleanup;
	}
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "header")) &&
	    get_i64(cJSON_GetObjectItemCaseSensitive(r, "header"), "revision",
		    &out->revision)) {
		rc = bad(ES_ERR_PARSE, err, errsz, "header");
		goto cleanup;
	}
	if (get_i64(r, "watch_id", &out->watch_id) ||
	    get_i64(r, "compact_revision", &out->compact_revision)) {
		rc = bad(ES_ERR_PARSE, err, errsz, "a number");
		goto cleanup;
	}
	out->created = get_flag(r, "created");
	out->canceled = get_flag(r, "canceled");
	reason = cJSON_GetObjectItemCaseSensitive(r, "cancel_reason");
	if (cJSON_IsString(reason))
		snprintf(out->cancel_reason, sizeof(out->cancel_reason), "%s",
			 reason->valuestring);
	evs = cJSON_GetObjectItemCaseSensitive(r, "events");
	if (!evs)
		goto cleanup;
	if (!cJSON_IsArray(evs)) {
		rc = bad(ES_ERR_PARSE, err, errsz, "events");
		goto cleanup;
	}
	cnt = (size_t)cJSON_GetArraySize(evs);
	if (!cnt)
		goto cleanup;
	out->events = calloc(cnt, sizeof(*out->events));
	if (!out->events) {
		rc = bad(ES_ERR_NOMEM, err, errsz, "events");
		goto cleanup;
	}
	cJSON_ArrayForEach(ev, evs) {
		es_etcd_event *e = &out->events[i];
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
		const cJSON *prev = cJSON_GetObjectItemCaseSensitive(ev, "prev_kv");

		if (!cJSON_IsObject(ev)) {
			rc = bad(ES_ERR_PARSE, err, errsz, "an event");
			goto cleanup;
		}
		if (type && !(cJSON_IsString(type) &&
			      (!strcmp(type->valuestring, "PUT") ||
			       !strcmp(type->valuestring, "DELETE")))) {
			rc = bad(ES_ERR_PARSE, err, errsz, "an event's type");
			goto cleanup;
		}
		e->type = type && !strcmp(type->valuestring, "DELETE") ?
			  ES_ETCD_EV_DELETE : ES_ETCD_EV_PUT;
		rc = parse_kv(cJSON_GetObjectItemCaseSensitive(ev, "kv"), &e->kv,
			      "an event's kv", err, errsz);
		if (rc != ES_OK)
			goto cleanup;
		out->n_events = ++i;
		if (prev) {
			rc = parse_kv(prev, &e->prev_kv, "an event's prev_kv", err,
				      errsz);
			if (rc != ES_OK)
				goto cleanup;
			e->has_prev = 1;
		}
	}
cleanup:
	cJSON_Delete(root);
	if (rc != ES_OK)
		es_etcd_watch_msg_free(out);
	return rc;
}

void es_etcd_watch_msg_free(es_etcd_watch_msg *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_events; i++) {
		kv_free(&m->events[i].kv);
		kv_free(&m->events[i].prev_kv);
	}
	free(m->events);
	memset(m, 0, sizeof(*m));
}

es_err es_etcd_lines_feed(es_buf *buf, const char *data, size_t len,
			  es_etcd_line_fn line, void *ud)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len, ln;

		if (es_buf_append(buf, data, n) != ES_OK)
			return buf->err == ES_ERR_NOMEM ? ES_ERR_NOMEM : ES_ERR_TOOBIG;
		if (!nl)
			break;
		data += n + 1;
		len -= n + 1;
		ln = buf->len;
		if (ln && buf->p[ln - 1] == '\r')
			ln--;
		if (ln && line(ud, buf->p, ln) != 0) {
			es_buf_reset(buf);
			return ES_ERR_STATE;
		}
		es_buf_reset(buf);
	}
	return ES_OK;
}
