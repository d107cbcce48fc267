/*
 * store_etcd_enroll_rec.c - the records of joining on etcd and the rules
 * that decide each call (store_etcd_enroll.h): pure functions, no I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_enroll.h"
#include "es_json.h"
#include "store/store_etcd_enroll.h"

/* Records and what each must hold. */
static const struct { const char *name; const char *str[3]; const char *num[4];
		      const char *obj; const char *arr; } shapes[] = {
	[ES_ENR_TOKEN] = { "token", { "secretSha256", "namePrefix" },
			   { "expires", "usages", "used", "created" }, "labels", NULL },
	[ES_ENR_NODE] = { "enrollment", { "keyPin", "tokenId" }, { "enrolled" }, "labels",
			  NULL },
	[ES_ENR_CERT] = { "certificate", { "keyPin" }, { "notAfter", "issued" }, NULL, NULL },
	[ES_ENR_REVOKED] = { "revocation", { NULL }, { "revoked" }, NULL, "serials" },
};

es_err es_store_etcd_enroll_parse(es_enr_rec rec, const char *value, size_t len,
				  cJSON **out, char *err, size_t errsz)
{
	char perr[256];
	const char *sv;
	const cJSON *ov, *it;
	int64_t iv;
	cJSON *o = NULL;
	es_err rc;

	*out = NULL;
	if (rec != ES_ENR_TOKEN && rec != ES_ENR_NODE && rec != ES_ENR_CERT &&
	    rec != ES_ENR_REVOKED)
		return es_errf(ES_ERR_PROTO, err, errsz, "not a record kind");
	rc = es_json_parse(value, len, 8, &o, perr, sizeof(perr));
	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK || !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return es_errf(ES_ERR_PROTO, err, errsz, "%s record: not a JSON object",
			       shapes[rec].name);
	}
	for (int i = 0; i < 3 && shapes[rec].str[i]; i++)
		if (es_json_get_str(o, shapes[rec].name, shapes[rec].str[i], 1, &sv, perr,
				    sizeof(perr)) != ES_OK)
			goto bad;
	for (int i = 0; i < 4 && shapes[rec].num[i]; i++)
		if (es_json_get_int(o, shapes[rec].name, shapes[rec].num[i], 1, 0,
				    ES_JSON_MAX_INT, &iv, perr, sizeof(perr)) != ES_OK)
			goto bad;
	if (shapes[rec].obj && es_json_get_obj(o, shapes[rec].name, shapes[rec].obj, 1, &ov,
					       perr, sizeof(perr)) != ES_OK)
		goto bad;
	if (shapes[rec].arr) {
		if (es_json_get_arr(o, shapes[rec].name, shapes[rec].arr, 1, &ov, perr,
				    sizeof(perr)) != ES_OK)
			goto bad;
		cJSON_ArrayForEach(it, ov)
			if (!cJSON_IsString(it) || !*it->valuestring) {
				snprintf(perr, sizeof(perr), "%s.%s: expected strings",
					 shapes[rec].name, shapes[rec].arr);
				goto bad;
			}
	}
	*out = o;
	return ES_OK;
bad:
	cJSON_Delete(o);
	return es_errf(ES_ERR_PROTO, err, errsz, "%s", perr);
}

cJSON *es_store_etcd_enroll_token_rec(const es_db_token *t, int64_t used)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "secretSha256", t->secret_sha256) ||
	    !es_json_add_int(o, "expires", (int64_t)t->expires) ||
	    !es_json_add_int(o, "usages", t->usages) || !es_json_add_int(o, "used", used) ||
	    !cJSON_AddItemToObject(o, "labels", t->labels ? cJSON_Duplicate(t->labels, 1) :
				   cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(o, "namePrefix", t->name_prefix ? t->name_prefix : "") ||
	    !es_json_add_int(o, "created", (int64_t)t->created)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static char *mkkey(const char *prefix, const char *dir, const char *a, const char *b)
{
	size_t n = strlen(prefix) + strlen(dir) + strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
	char *k = malloc(n);

	if (k)
		snprintf(k, n, "%s%s%s%s%s", prefix, dir, a, b ? "/" : "", b ? b : "");
	return k;
}

es_err es_store_etcd_enroll_keys(es_store_etcd_enroll_req *r, const char *prefix)
{
	int want[ES_ENR_N] = { 0 };

	switch (r->op) {
	case ES_ENR_OP_TOKEN_CREATE:
	case ES_ENR_OP_TOKEN_DELETE:
		want[ES_ENR_TOKEN] = 1;
		break;
	case ES_ENR_OP_JOIN:
		want[ES_ENR_TOKEN] = want[ES_ENR_NODE] = want[ES_ENR_CERT] = 1;
		break;
	case ES_ENR_OP_RENEW:
	case ES_ENR_OP_CERT_RENEW:
		want[ES_ENR_NODE] = want[ES_ENR_CERT] = want[ES_ENR_OLD_CERT] = 1;
		want[ES_ENR_REVOKED] = 1;
		break;
	case ES_ENR_OP_REVOKE:
		want[ES_ENR_NODE] = want[ES_ENR_REVOKED] = want[ES_ENR_CERTS] = 1;
		break;
	}
	if (want[ES_ENR_TOKEN] && !(r->key[ES_ENR_TOKEN] = mkkey(prefix, "tokens/",
								  r->token_id, NULL)))
		return ES_ERR_NOMEM;
	if (want[ES_ENR_NODE] && !(r->key[ES_ENR_NODE] = mkkey(prefix, "enrollments/",
								r->node, NULL)))
		return ES_ERR_NOMEM;
	if (want[ES_ENR_CERT] && !(r->key[ES_ENR_CERT] = mkkey(prefix, "certs/", r->node,
								r->serial)))
		return ES_ERR_NOMEM;
	if (want[ES_ENR_OLD_CERT] && !(r->key[ES_ENR_OLD_CERT] = mkkey(prefix, "certs/",
									r->node, r->old_serial)))
		return ES_ERR_NOMEM;
	if (want[ES_ENR_REVOKED] && !(r->key[ES_ENR_REVOKED] = mkkey(prefix, "revoked/",
								      r->node, NULL)))
		return ES_ERR_NOMEM;
	if (want[ES_ENR_CERTS]) {
		if (!(r->key[ES_ENR_CERTS] = mkkey(prefix, "certs/", r->node, "")))
			return ES_ERR_NOMEM;
		if (strlen(r->key[ES_ENR_CERTS]) >= sizeof(r->certs_end))
			return ES_ERR_INVAL;
		r->certs_end_len = es_etcd_prefix_end(r->key[ES_ENR_CERTS],
						      strlen(r->key[ES_ENR_CERTS]), r->certs_end);
	}
	for (int i = 0; i < ES_ENR_N; i++)
		if (r->key[i] && strlen(r->key[i]) > 500)
			return ES_ERR_INVAL;
	return ES_OK;
}

static const char *str_of(const cJSON *o, const char *k)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));

	return v ? v : "";
}

static int64_t int_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* 1 when the array arr holds the string s. */
static int has_str(const cJSON *arr, const char *s)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0)
			return 1;
	return 0;
}

static void cmp(es_store_etcd_enroll_plan *p, const es_store_etcd_enroll_req *r,
		const es_store_etcd_enroll_reads *rd, es_enr_rec k)
{
	p->cmp_key[p->n_cmp] = r->key[k];
	p->cmp_mod[p->n_cmp++] = rd->mod[k];
}

/* Adds a put of o (printed; NULL: a delete) of key k. Returns 0, or -1
 * when memory ran out. */
static int wr(es_store_etcd_enroll_plan *p, const es_store_etcd_enroll_req *r,
	      es_enr_rec k, const cJSON *o, int is_delete)
{
	char *v = NULL;

	if (!is_delete && (!o || !(v = es_json_print(o))))
		return -1;
	p->w_key[p->n_w] = r->key[k];
	p->w_value[p->n_w++] = v;
	return 0;
}

static cJSON *cert_rec(const es_store_etcd_enroll_req *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "keyPin", r->key_pin) ||
	    !es_json_add_int(o, "notAfter", r->not_after) ||
	    !es_json_add_int(o, "issued", r->now)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The node record after a join (token: the token record) or with a new
 * key (node: the current record). */
static cJSON *node_rec(const es_store_etcd_enroll_req *r, const cJSON *token,
		       const cJSON *node)
{
	cJSON *o;

	if (node) {
		if (!(o = cJSON_Duplicate(node, 1)))
			return NULL;
		cJSON_DeleteItemFromObjectCaseSensitive(o, "keyPin");
		if (!cJSON_AddStringToObject(o, "keyPin", r->key_pin)) {
			cJSON_Delete(o);
			return NULL;
		}
		return o;
	}
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "keyPin", r->key_pin) ||
	    !cJSON_AddStringToObject(o, "tokenId", r->token_id) ||
	    !cJSON_AddItemToObject(o, "labels", cJSON_Duplicate(
		    cJSON_GetObjectItemCaseSensitive(token, "labels"), 1)) ||
	    !es_json_add_int(o, "enrolled", r->now)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

es_err es_store_etcd_enroll_decide(const es_store_etcd_enroll_req *r,
				   const es_store_etcd_enroll_reads *rd, int *write,
				   es_store_enroll_result *res,
				   es_store_etcd_enroll_plan *p)
{
	const cJSON *tok = rd->rec[ES_ENR_TOKEN], *node = rd->rec[ES_ENR_NODE];
	const cJSON *old = rd->rec[ES_ENR_OLD_CERT], *it;
	const cJSON *rserials = cJSON_GetObjectItemCaseSensitive(rd->rec[ES_ENR_REVOKED],
								  "serials");
	cJSON *o = NULL, *arr;
	int bad = 0;

	*write = 0;
	memset(p, 0, sizeof(*p));
	res->rc = ES_OK;
	res->outcome = 0;
	res->count = 0;
	res->labels = NULL;
	switch (r->op) {
	case ES_ENR_OP_TOKEN_CREATE:
		if (tok) {
			res->rc = es_enroll_equal(str_of(tok, "secretSha256"),
						  r->secret_sha256) ? ES_OK : ES_ERR_EXISTS;
			return ES_OK;
		}
		cmp(p, r, rd, ES_ENR_TOKEN);
		bad = wr(p, r, ES_ENR_TOKEN, r->token, 0);
		break;
	case ES_ENR_OP_TOKEN_DELETE:
		if (!tok) {
			res->rc = ES_ERR_NOTFOUND;
			return ES_OK;
		}
		cmp(p, r, rd, ES_ENR_TOKEN);
		bad = wr(p, r, ES_ENR_TOKEN, NULL, 1);
		break;
	case ES_ENR_OP_JOIN:
		if (rd->rec[ES_ENR_CERT]) { /* this join's serial: it was applied */
			res->outcome = ES_DB_JOIN_OK;
			res->labels = cJSON_GetObjectItemCaseSensitive(node ? node : tok, "labels");
			return ES_OK;
		}
		if (!tok || !es_enroll_equal(str_of(tok, "secretSha256"), r->secret_sha256))
			res->outcome = ES_DB_JOIN_TOKEN_UNKNOWN;
		else if (int_of(tok, "expires") <= r->now)
			res->outcome = ES_DB_JOIN_TOKEN_EXPIRED;
		else if (int_of(tok, "used") >= int_of(tok, "usages"))
			res->outcome = ES_DB_JOIN_TOKEN_USED_UP;
		else if (strncmp(r->node, str_of(tok, "namePrefix"),
				 strlen(str_of(tok, "namePrefix"))) != 0)
			res->outcome = ES_DB_JOIN_NAME_PREFIX;
		else if (node && strcmp(str_of(node, "keyPin"), r->key_pin) != 0)
			res->outcome = ES_DB_JOIN_NAME_TAKEN;
		if (res->outcome != ES_DB_JOIN_OK)
			return ES_OK;
		res->labels = cJSON_GetObjectItemCaseSensitive(tok, "labels");
		cmp(p, r, rd, ES_ENR_TOKEN);
		cmp(p, r, rd, ES_ENR_NODE);
		cmp(p, r, rd, ES_ENR_CERT);
		if (!(o = cJSON_Duplicate(tok, 1)) ||
		    !cJSON_ReplaceItemInObjectCaseSensitive(o, "used", cJSON_CreateNumber(
			    (double)(int_of(tok, "used") + 1)))) {
			bad = 1;
			break;
		}
		bad = wr(p, r, ES_ENR_TOKEN, o, 0);
		cJSON_Delete(o);
		o = node_rec(r, tok, NULL);
		bad = bad || wr(p, r, ES_ENR_NODE, o, 0);
		cJSON_Delete(o);
		o = cert_rec(r);
		bad = bad || wr(p, r, ES_ENR_CERT, o, 0);
		break;
	case ES_ENR_OP_RENEW:
	case ES_ENR_OP_CERT_RENEW:
		if (rd->rec[ES_ENR_CERT]) { /* this renewal's serial: it was applied */
			res->outcome = r->op == ES_ENR_OP_RENEW ? ES_DB_RENEW_OK : ES_DB_CERT_VALID;
			return ES_OK;
		}
		if (r->op == ES_ENR_OP_RENEW) {
			if (!old)
				res->outcome = ES_DB_RENEW_NOT_ISSUED;
			else if (has_str(rserials, r->old_serial) || !node)
				res->outcome = ES_DB_RENEW_REVOKED;
			else if (strcmp(str_of(old, "keyPin"), r->key_pin) != 0 ||
				 strcmp(str_of(node, "keyPin"), r->key_pin) != 0)
				res->outcome = ES_DB_RENEW_KEY_MISMATCH;
			if (res->outcome != ES_DB_RENEW_OK)
				return ES_OK;
		} else {
			res->outcome = !old ? ES_DB_CERT_UNKNOWN :
				       has_str(rserials, r->old_serial) ? ES_DB_CERT_REVOKED :
				       ES_DB_CERT_VALID;
			if (res->outcome != ES_DB_CERT_VALID)
				return ES_OK;
		}
		cmp(p, r, rd, ES_ENR_NODE);
		cmp(p, r, rd, ES_ENR_CERT);
		cmp(p, r, rd, ES_ENR_OLD_CERT);
		cmp(p, r, rd, ES_ENR_REVOKED);
		/* The enrollment is written again (the new key, or the same):
		 * a revocation racing this one compares it. */
		if (node) {
			o = node_rec(r, NULL, node);
			bad = wr(p, r, ES_ENR_NODE, o, 0);
			cJSON_Delete(o);
		}
		o = cert_rec(r);
		bad = bad || wr(p, r, ES_ENR_CERT, o, 0);
		break;
	case ES_ENR_OP_REVOKE:
		o = rd->rec[ES_ENR_REVOKED] ? cJSON_Duplicate(rd->rec[ES_ENR_REVOKED], 1) :
		    cJSON_CreateObject();
		if (!o || (!(arr = cJSON_GetObjectItemCaseSensitive(o, "serials")) &&
			   !(arr = cJSON_AddArrayToObject(o, "serials")))) {
			bad = 1;
			break;
		}
		cJSON_ArrayForEach(it, rd->certs)
			if (cJSON_IsString(it) && !has_str(arr, it->valuestring)) {
				if (!cJSON_AddItemToArray(arr, cJSON_CreateString(it->valuestring)))
					bad = 1;
				res->count++;
			}
		if (r->extra && *r->extra && !has_str(arr, r->extra)) {
			if (!cJSON_AddItemToArray(arr, cJSON_CreateString(r->extra)))
				bad = 1;
			res->count++;
		}
		if (bad || (res->count == 0 && !node))
			break;
		cmp(p, r, rd, ES_ENR_NODE);
		cmp(p, r, rd, ES_ENR_REVOKED);
		if (res->count > 0) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, "revoked");
			bad = !es_json_add_int(o, "revoked", r->now) ||
			      wr(p, r, ES_ENR_REVOKED, o, 0);
		}
		if (node)
			bad = bad || wr(p, r, ES_ENR_NODE, NULL, 1);
		break;
	}
	cJSON_Delete(o);
	if (bad) {
		es_store_etcd_enroll_plan_free(p);
		return ES_ERR_NOMEM;
	}
	*write = p->n_w > 0;
	return ES_OK;
}

es_err es_store_etcd_enroll_reads_add(const es_store_etcd_enroll_req *r,
				      es_etcd_txn *t, int on_success)
{
	es_err rc = ES_OK;

	for (int k = 0; k < ES_ENR_N && rc == ES_OK; k++) {
		if (!r->key[k])
			continue;
		if (k == ES_ENR_CERTS)
			rc = es_etcd_txn_range(t, on_success, r->key[k], strlen(r->key[k]),
					       r->certs_end, r->certs_end_len);
		else
			rc = es_etcd_txn_range(t, on_success, r->key[k], strlen(r->key[k]),
					       NULL, 0);
	}
	return rc;
}

es_err es_store_etcd_enroll_plan_txn(const es_store_etcd_enroll_req *r,
				     const es_store_etcd_enroll_plan *p, es_etcd_txn *t)
{
	for (size_t i = 0; i < p->n_cmp; i++)
		es_etcd_txn_compare(t, p->cmp_key[i], strlen(p->cmp_key[i]), ES_ETCD_CMP_MOD,
				    ES_ETCD_EQUAL, p->cmp_mod[i], NULL, 0);
	for (size_t i = 0; i < p->n_w; i++) {
		if (p->w_value[i])
			es_etcd_txn_put(t, 1, p->w_key[i], strlen(p->w_key[i]), p->w_value[i],
					strlen(p->w_value[i]), 0);
		else
			es_etcd_txn_delete(t, 1, p->w_key[i], strlen(p->w_key[i]), NULL, 0);
	}
	return es_store_etcd_enroll_reads_add(r, t, 0);
}

void es_store_etcd_enroll_plan_free(es_store_etcd_enroll_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_w; i++)
		free(p->w_value[i]);
	memset(p, 0, sizeof(*p));
}

void es_store_etcd_enroll_req_free(es_store_etcd_enroll_req *r)
{
	if (!r)
		return;
	free(r->node);
	free(r->token_id);
	free(r->secret_sha256);
	free(r->key_pin);
	free(r->serial);
	free(r->old_serial);
	free(r->extra);
	cJSON_Delete(r->token);
	for (int k = 0; k < ES_ENR_N; k++)
		free(r->key[k]);
	memset(r, 0, sizeof(*r));
}

void es_store_etcd_enroll_reads_free(es_store_etcd_enroll_reads *rd)
{
	if (!rd)
		return;
	for (int k = 0; k < ES_ENR_N; k++)
		cJSON_Delete(rd->rec[k]);
	cJSON_Delete(rd->certs);
	memset(rd, 0, sizeof(*rd));
}
