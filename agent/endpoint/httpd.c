/*
 * httpd.c - the agent's local HTTP endpoint (see httpd.h).
 */
#include "endpoint/httpd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_addr.h"
#include "es_json.h"
#include "es_log.h"
#include "runtime/heap.h"

#define CHUNK 4096
#define CT_TEXT "text/plain; charset=utf-8"
#define CT_JSON "application/json"
/* Prometheus text exposition format 0.0.4 */
#define CT_PROM "text/plain; version=0.0.4; charset=utf-8"

struct es_httpd {
	es_httpd_source src;
	struct lws_vhost *vh;
	es_addr addr; /* http-listen; info.iface points into it */
};

typedef struct pss {
	char *body;
	size_t len, off;
	int close_after;
} pss;

static int text_body(const char *s, char **body, size_t *len)
{
	*body = strdup(s);
	if (!*body)
		return -1;
	*len = strlen(s);
	return 0;
}

int es_httpd_respond(const es_httpd_source *src, const char *method,
		     const char *path, char **body, size_t *body_len,
		     const char **ctype)
{
	int status = 200;
	int r;

	*body = NULL;
	*body_len = 0;
	*ctype = CT_TEXT;
	if (strcmp(method, "GET") != 0) {
		status = 405;
		r = text_body("method not allowed: only GET\n", body, body_len);
	} else if (!strcmp(path, "/healthz")) {
		r = text_body("ok\n", body, body_len);
	} else if (!strcmp(path, "/readyz")) {
		char why[300] = "not ready: ";
		size_t n = strlen(why);

		if (src->ready && src->ready(src->user, why + n, sizeof(why) - n - 1)) {
			r = text_body("ready\n", body, body_len);
		} else {
			status = 503;
			if (!why[n])
				snprintf(why + n, sizeof(why) - n, "no agent");
			strcat(why, "\n");
			r = text_body(why, body, body_len);
		}
	} else if (!strcmp(path, "/v1/state")) {
		cJSON *st = NULL;

		status = src->state ? src->state(src->user, &st) : -1;
		r = -1;
		if (status > 0 && st) {
			*body = es_json_print(st);
			if (*body) {
				*body_len = strlen(*body);
				*ctype = CT_JSON;
				r = 0;
			}
		}
		cJSON_Delete(st);
	} else if (!strcmp(path, "/metrics")) {
		r = -1;
		if (src->metrics && src->metrics(src->user, body, body_len) == 0) {
			r = 0;
			*ctype = CT_PROM;
		}
	} else {
		status = 404;
		r = text_body("not found\n", body, body_len);
	}
	if (r != 0) {
		free(*body);
		*body = NULL;
		*body_len = 0;
		*ctype = CT_TEXT;
		text_body("internal error: out of memory (see the agent's log)\n", body,
			  body_len);
		return 500;
	}
	return status;
}

static const char *req_method(struct lws *wsi)
{
	static const struct {
		enum lws_token_indexes tok;
		const char *name;
	} m[] = {
		{ WSI_TOKEN_GET_URI, "GET" },
		{ WSI_TOKEN_POST_URI, "POST" },
#if defined(LWS_WITH_HTTP_UNCOMMON_HEADERS) || defined(LWS_HTTP_HEADERS_ALL)
		{ WSI_TOKEN_PUT_URI, "PUT" },
		{ WSI_TOKEN_PATCH_URI, "PATCH" },
		{ WSI_TOKEN_DELETE_URI, "DELETE" },
		{ WSI_TOKEN_OPTIONS_URI, "OPTIONS" },
#endif
		{ WSI_TOKEN_HEAD_URI, "HEAD" },
	};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (lws_hdr_total_length(wsi, m[i].tok) > 0)
			return m[i].name;
	return "UNKNOWN";
}

static int start_response(struct lws *wsi, pss *p, const char *path)
{
	es_httpd *h = lws_vhost_user(lws_get_vhost(wsi));
	unsigned char hdr[LWS_PRE + 512], *start = &hdr[LWS_PRE], *q = start,
		      *end = &hdr[sizeof(hdr) - 1];
	const char *method = req_method(wsi), *ctype;
	int status;

	free(p->body);
	p->body = NULL;
	p->off = 0;
	status = es_httpd_respond(&h->src, method, path, &p->body, &p->len, &ctype);
	/* /v1/state and /metrics parse the Node and read the store: give that
	 * heap back (heap.h); the body is given back once sent. */
	es_heap_trim();
	p->close_after = strcmp(method, "GET") != 0;
	if (lws_add_http_common_headers(wsi, (unsigned)status, ctype,
					(lws_filepos_t)p->len, &q, end))
		return -1;
	if (status == 405 &&
	    lws_add_http_header_by_name(wsi, (const unsigned char *)"allow:",
					(const unsigned char *)"GET", 3, &q, end))
		return -1;
	if (lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:",
					(const unsigned char *)"no-store", 8, &q, end))
		return -1;
	if (lws_finalize_write_http_header(wsi, start, &q, end))
		return -1;
	lws_callback_on_writable(wsi);
	return 0;
}

static int write_chunk(struct lws *wsi, pss *p)
{
	unsigned char buf[LWS_PRE + CHUNK];
	size_t n = p->len - p->off;
	enum lws_write_protocol wp = LWS_WRITE_HTTP;

	if (n > CHUNK)
		n = CHUNK;
	if (p->off + n == p->len)
		wp = LWS_WRITE_HTTP_FINAL;
	if (n)
		memcpy(buf + LWS_PRE, p->body + p->off, n);
	if (lws_write(wsi, buf + LWS_PRE, n, wp) != (int)n)
		return -1;
	p->off += n;
	if (p->off < p->len) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	free(p->body);
	p->body = NULL;
	es_heap_trim();
	if (p->close_after)
		return -1;
	if (lws_http_transaction_completed(wsi))
		return -1;
	return 0;
}

static int http_cb(struct lws *wsi, enum lws_callback_reasons reason,
		   void *user, void *in, size_t len)
{
	pss *p = user;
	char path[256];

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		snprintf(path, sizeof(path), "%s", in ? (const char *)in : "/");
		path[strcspn(path, "?")] = '\0';
		return start_response(wsi, p, path);
	case LWS_CALLBACK_HTTP_BODY:
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (!p || !p->body)
			return 0;
		return write_chunk(wsi, p);
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (p) {
			free(p->body);
			p->body = NULL;
		}
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols http_protocols[] = {
	{ "http", http_cb, sizeof(pss), 0, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

es_err es_httpd_new(struct lws_context *ctx, const char *listen,
		    const es_httpd_source *src, es_httpd **out, char *err,
		    size_t errsz)
{
	struct lws_context_creation_info info;
	es_httpd *h;
	es_err rc;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	rc = es_addr_parse("http-listen", listen, 0, &h->addr, err, errsz);
	if (rc == ES_OK)
		rc = es_addr_check_listen("http-listen", &h->addr, 0, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	h->src = *src;
	memset(&info, 0, sizeof(info));
	info.vhost_name = "http";
	info.port = h->addr.port;
	info.iface = h->addr.host;
	info.protocols = http_protocols;
	info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
	if (!h->addr.ipv6)
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.user = h;
	h->vh = lws_create_vhost(ctx, &info);
	if (!h->vh) {
		rc = es_errf(ES_ERR_IO, err, errsz,
			     "http-listen: cannot listen on %s (in use, or not a "
			     "local address)", listen);
		goto cleanup;
	}
	*out = h;
	h = NULL;
cleanup:
	free(h);
	return rc;
}

void es_httpd_free(es_httpd *h)
{
	free(h);
}
