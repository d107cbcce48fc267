/*
 * tokens.h - edgesyncctl's bootstrap token commands over the admin API
 * (controller/api/admin.h, bootstraptokens): create token, get tokens,
 * delete token. They return ES_CTL_EXIT_* statuses (ctl.h).
 */
#ifndef ES_CTL_TOKENS_H
#define ES_CTL_TOKENS_H

#include <stdio.h>
#include "print.h"
#include "es_http.h"

/* How the token commands reach the admin API (ctl.c passes its own
 * request function, which tries each --server in turn): call sends one
 * request, path appended to the server URL, and returns -1 on a transport
 * error (already printed), else 0 with *r filled (the caller frees it with
 * es_http_resp_free). */
typedef struct es_ctl_api {
	int (*call)(void *ctx, const char *method, const char *path, const char *body,
		    es_http_resp *r);
	void *ctx;
} es_ctl_api;

/* What `create token` asks for; NULL strings: the controller's defaults. */
typedef struct es_ctl_token_opts {
	const char *ttl;         /* Go duration ("24h", "90m"), whole seconds */
	const char *usages;      /* decimal count of nodes, >= 1 */
	const char *labels;      /* "k=v,k2=v2" */
	const char *name_prefix; /* node names must start with it */
} es_ctl_token_opts;

/*
 * Builds the request body of `create token` into *body (malloc'd JSON):
 * {ttlSeconds?, usages?, labels?, namePrefix?}. Errors: ES_ERR_INVAL with
 * err naming the flag (--ttl not a duration of whole seconds in 1m..8760h,
 * --usages not a positive integer, --labels as es_obj_labels_parse
 * refuses it: no '=', an empty or invalid key or value, a key given
 * twice), ES_ERR_NOMEM.
 */
es_err es_ctl_token_body(const es_ctl_token_opts *o, char **body, char *err,
			 size_t errsz);

/* POSTs a new token and prints the token on the first line and the join
 * command on the second. */
int es_ctl_token_create(const es_ctl_api *api, const es_ctl_token_opts *o);

/* Lists the tokens as a table (ID, USAGES, USED, EXPIRES, NAME-PREFIX,
 * LABELS) or, with fmt JSON/YAML, as the list object. */
int es_ctl_token_list(const es_ctl_api *api, es_print_fmt fmt);

/* Deletes one token by its id (the part before the '.'; a whole token is
 * accepted and only its id is sent) and prints, as kubectl does,
 * `token "ID" deleted`. */
int es_ctl_token_delete(const es_ctl_api *api, const char *id);

#endif
