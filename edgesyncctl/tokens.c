/*
 * tokens.c - create token, get tokens, delete token (tokens.h).
 */
#include "tokens.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "es_enroll.h"
#include "es_health.h"
#include "es_json.h"
#include "es_obj.h"

#define TOKENS_PATH "/apis/edgesync.io/v1alpha1/bootstraptokens"

es_err es_ctl_token_body(const es_ctl_token_opts *o, char **body, char *err,
			 size_t errsz)
{
	cJSON *b = cJSON_CreateObject(), *l = NULL;
	char derr[256];
	int64_t ms = 0;
	es_err rc = ES_ERR_NOMEM, e;

	*body = NULL;
	if (!b)
		return ES_ERR_NOMEM;
	if (o->ttl) {
		if (es_health_duration_parse(o->ttl, &ms, derr, sizeof(derr)) != ES_OK) {
			rc = es_errf(ES_ERR_INVAL, err, errsz, "--ttl: %s", derr);
			goto cleanup;
		}
		if (ms % 1000 || ms < 60000) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "--ttl: \"%s\": whole seconds, at least 1m", o->ttl);
			goto cleanup;
		}
		if (!es_json_add_int(b, "ttlSeconds", ms / 1000))
			goto cleanup;
	}
	if (o->usages) {
		char *end;
		long long n = strtoll(o->usages, &end, 10);

		if (end == o->usages || *end || n < 1) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "--usages: \"%s\": expected a positive integer", o->usages);
			goto cleanup;
		}
		if (!es_json_add_int(b, "usages", n))
			goto cleanup;
	}
	if (o->name_prefix && !cJSON_AddStringToObject(b, "namePrefix", o->name_prefix))
		goto cleanup;
	if (o->labels) {
		e = es_obj_labels_parse(o->labels, "--labels", &l, err, errsz);
		if (e != ES_OK) {
			rc = e;
			goto cleanup;
		}
		cJSON_AddItemToObject(b, "labels", l);
	}
	if ((*body = es_json_print(b)))
		rc = ES_OK;
cleanup:
	cJSON_Delete(b);
	return rc;
}

static cJSON *parse(const es_http_resp *r)
{
	char err[256];
	cJSON *v = NULL;

	if (es_json_parse(r->body, r->body_len, ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "error: the server's response is not JSON: %s\n", err);
		return NULL;
	}
	return v;
}

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int es_ctl_token_create(const es_ctl_api *api, const es_ctl_token_opts *o)
{
	char err[512], *body = NULL;
	es_http_resp r = { 0 };
	cJSON *v = NULL;
	const char *tok, *hash, *url;
	int rc = ES_CTL_EXIT_RUNTIME;
	es_err e = es_ctl_token_body(o, &body, err, sizeof(err));

	if (e != ES_OK) {
		fprintf(stderr, "error: %s\n", e == ES_ERR_NOMEM ? "out of memory" : err);
		return e == ES_ERR_NOMEM ? ES_CTL_EXIT_RUNTIME : ES_CTL_EXIT_USAGE;
	}
	if (api->call(api->ctx, "POST", TOKENS_PATH, body, &r) != 0)
		goto cleanup;
	if (r.status != 201) {
		es_print_server_error(stderr, "token", r.status, r.body, r.body_len);
		goto cleanup;
	}
	if (!(v = parse(&r)) || !(tok = str_of(v, "token"))) {
		fprintf(stderr, "error: the server's answer holds no token\n");
		goto cleanup;
	}
	hash = str_of(v, "caHash");
	url = str_of(v, "controllerURL");
	printf("%s\n", tok);
	if (hash)
		printf("edgesync-agent join --controller-url %s --token %s --ca-hash %s\n",
		       url ? url : "wss://CONTROLLER:7443", tok, hash);
	else
		fprintf(stderr, "warning: the controller has no signing CA (ca-cert): "
			"no node can join with this token until it has one\n");
	rc = ES_CTL_EXIT_OK;
cleanup:
	free(body);
	cJSON_Delete(v);
	es_http_resp_free(&r);
	return rc;
}

int es_ctl_token_list(const es_ctl_api *api, es_print_fmt fmt)
{
	static const char *const head[] = { "ID", "USAGES", "USED", "EXPIRES",
					    "NAME-PREFIX", "LABELS" };
	es_http_resp r = { 0 };
	cJSON *v = NULL, *it;
	es_print_table *t = NULL;
	char err[256];
	int rc = ES_CTL_EXIT_RUNTIME;

	if (api->call(api->ctx, "GET", TOKENS_PATH, NULL, &r) != 0)
		return rc;
	if (r.status != 200) {
		es_print_server_error(stderr, "tokens", r.status, r.body, r.body_len);
		goto cleanup;
	}
	if (!(v = parse(&r)))
		goto cleanup;
	if (fmt == ES_PRINT_JSON || fmt == ES_PRINT_YAML) {
		if (es_print_value(stdout, v, fmt, err, sizeof(err)) != ES_OK) {
			fprintf(stderr, "error: %s\n", err);
			goto cleanup;
		}
		rc = ES_CTL_EXIT_OK;
		goto cleanup;
	}
	if (!(t = es_print_table_new(6)) || es_print_table_add(t, head) != ES_OK)
		goto nomem;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v, "items")) {
		char us[24], ud[24], labels[512] = "";
		const cJSON *l;
		size_t n = 0;
		const char *cells[6];

		snprintf(us, sizeof(us), "%.0f",
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "usages")));
		snprintf(ud, sizeof(ud), "%.0f",
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "used")));
		cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(it, "labels"))
			if (cJSON_IsString(l) && n < sizeof(labels))
				n += (size_t)snprintf(labels + n, sizeof(labels) - n, "%s%s=%s",
						      n ? "," : "", l->string, l->valuestring);
		cells[0] = str_of(it, "id") ? str_of(it, "id") : "";
		cells[1] = us;
		cells[2] = ud;
		cells[3] = str_of(it, "expires") ? str_of(it, "expires") : "";
		cells[4] = str_of(it, "namePrefix") && *str_of(it, "namePrefix")
			   ? str_of(it, "namePrefix") : "<any>";
		cells[5] = n ? labels : "<none>";
		if (es_print_table_add(t, cells) != ES_OK)
			goto nomem;
	}
	es_print_table_write(t, stdout, "");
	rc = ES_CTL_EXIT_OK;
	goto cleanup;
nomem:
	fprintf(stderr, "error: out of memory\n");
cleanup:
	es_print_table_free(t);
	cJSON_Delete(v);
	es_http_resp_free(&r);
	return rc;
}

int es_ctl_token_delete(const es_ctl_api *api, const char *id)
{
	char path[128], tid[ES_ENROLL_ID_LEN + 1];
	es_http_resp r = { 0 };
	int rc = ES_CTL_EXIT_RUNTIME;
	size_t n = strcspn(id, ".");

	if (n != ES_ENROLL_ID_LEN) {
		fprintf(stderr, "error: \"%.*s\" is not a token id (6 of a-z, 0-9)\n",
			(int)(n > 16 ? 16 : n), id);
		return ES_CTL_EXIT_USAGE;
	}
	memcpy(tid, id, n);
	tid[n] = '\0';
	if (!es_enroll_token_id_valid(tid)) {
		fprintf(stderr, "error: \"%s\" is not a token id (6 of a-z, 0-9)\n", tid);
		return ES_CTL_EXIT_USAGE;
	}
	snprintf(path, sizeof(path), TOKENS_PATH "/%s", tid);
	if (api->call(api->ctx, "DELETE", path, NULL, &r) != 0)
		return rc;
	if (r.status == 200) {
		printf("token \"%s\" deleted\n", tid);
		rc = ES_CTL_EXIT_OK;
	} else {
		es_print_server_error(stderr, tid, r.status, r.body, r.body_len);
	}
	es_http_resp_free(&r);
	return rc;
}
