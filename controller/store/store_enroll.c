/*
 * store_enroll.c - joining behind the store interface (store_enroll.h):
 * the etcd backend's operations, or the db_enroll.h calls on the file.
 */
#include <string.h>

#include "store/store_enroll.h"

static const struct es_store_enroll_ops *ops_of(const es_store *s)
{
	return s && s->ops ? s->ops->enroll : NULL;
}

static void answer(es_store_enroll_cb cb, void *ud, es_store_enroll_result *r)
{
	if (!r->error)
		r->error = r->rc == ES_OK ? "" : es_strerror(r->rc);
	cb(ud, r);
}

es_err es_store_token_create(es_store *s, const es_db_token *t,
			     es_store_enroll_cb cb, void *ud)
{
	es_store_enroll_result r = { 0 };

	if (!s || !s->ops || !cb || !t)
		return ES_ERR_INVAL;
	if (ops_of(s))
		return ops_of(s)->token_create(s, t, cb, ud);
	r.rc = es_db_token_create(s->db, t);
	answer(cb, ud, &r);
	return ES_OK;
}

es_err es_store_token_delete(es_store *s, const char *id, es_store_enroll_cb cb,
			     void *ud)
{
	es_store_enroll_result r = { 0 };

	if (!s || !s->ops || !cb || !id)
		return ES_ERR_INVAL;
	if (ops_of(s))
		return ops_of(s)->token_delete(s, id, cb, ud);
	r.rc = es_db_token_delete(s->db, id);
	answer(cb, ud, &r);
	return ES_OK;
}

es_err es_store_join(es_store *s, const es_db_join *j, time_t now,
		     es_store_enroll_cb cb, void *ud)
{
	es_store_enroll_result r = { 0 };
	es_db_join_result res = ES_DB_JOIN_TOKEN_UNKNOWN;
	cJSON *labels = NULL;

	if (!s || !s->ops || !cb || !j)
		return ES_ERR_INVAL;
	if (ops_of(s))
		return ops_of(s)->join(s, j, now, cb, ud);
	r.rc = es_db_join_record(s->db, j, now, &res, &labels);
	r.outcome = (int)res;
	r.labels = labels;
	answer(cb, ud, &r);
	cJSON_Delete(labels);
	return ES_OK;
}

es_err es_store_renew(es_store *s, const es_db_renew *rn, time_t now,
		      es_store_enroll_cb cb, void *ud)
{
	es_store_enroll_result r = { 0 };
	es_db_renew_result res = ES_DB_RENEW_NOT_ISSUED;

	if (!s || !s->ops || !cb || !rn)
		return ES_ERR_INVAL;
	if (ops_of(s))
		return ops_of(s)->renew(s, rn, now, cb, ud);
	r.rc = es_db_renew_record(s->db, rn, now, &res);
	r.outcome = (int)res;
	answer(cb, ud, &r);
	return ES_OK;
}

es_err es_store_cert_renew(es_store *s, const es_db_renew *rn, time_t now,
			   es_store_enroll_cb cb, void *ud)
{
	es_store_enroll_result r = { 0 };
	es_db_cert_status was = ES_DB_CERT_UNKNOWN;

	if (!s || !s->ops || !cb || !rn)
		return ES_ERR_INVAL;
	if (ops_of(s))
		return ops_of(s)->cert_renew(s, rn, now, cb, ud);
	r.rc = es_db_cert_renew(s->db, rn->node, rn->old_serial, rn->serial, rn->key_pin,
				rn->not_after, now, &was);
	r.outcome = (int)was;
	answer(cb, ud, &r);
	return ES_OK;
}

es_err es_store_node_revoke(es_store *s, const char *node, const char *extra_serial,
			    time_t now, es_store_enroll_cb cb, void *ud)
{
	es_store_enroll_result r = { 0 };

	if (!s || !s->ops || !cb || !node)
		return ES_ERR_INVAL;
	if (ops_of(s))
		return ops_of(s)->revoke(s, node, extra_serial, now, cb, ud);
	r.rc = es_db_node_revoke(s->db, node, extra_serial, now, &r.count);
	answer(cb, ud, &r);
	return ES_OK;
}

void es_store_on_revoked(es_store *s, es_store_revoked_fn fn, void *ud)
{
	if (ops_of(s) && ops_of(s)->on_revoked)
		ops_of(s)->on_revoked(s, fn, ud);
}

int es_store_enroll_async(const es_store *s)
{
	return ops_of(s) != NULL;
}
