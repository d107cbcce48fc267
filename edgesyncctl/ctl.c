/*
 * ctl.c - edgesyncctl subcommands (see ctl.h).
 */
#define _GNU_SOURCE /* asprintf */
#include "ctl.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "describe.h"
#include "es_config.h"
#include "es_http.h"
#include "es_json.h"
#include "es_obj.h"
#include "es_url.h"
#include "es_urllist.h"
#include "es_version.h"
#include "ident.h"
#include "print.h"
#include "tokens.h"
#include "wait.h"
#include "yaml.h"
#include "es_health.h"

#define API_PREFIX "/apis/edgesync.io/v1alpha1/"

typedef struct ctl_cfg {
	char *server;
	char *cert;
	char *key;
	char *ca;
} ctl_cfg;

static const es_setting settings[] = {
	{ "server", "EDGESYNCCTL_SERVER", "server", ES_SET_STRING, ES_CTL_DEFAULT_SERVER, 0, 0,
	  offsetof(ctl_cfg, server), "admin API URL (https://host:port[/path prefix], no "
	  "query); several, comma-separated or the flag repeated, are tried in the order given", NULL },
	{ "cert", "EDGESYNCCTL_CERT", "cert", ES_SET_STRING, NULL, 0, 0,
	  offsetof(ctl_cfg, cert), "admin client certificate file (PEM)", NULL },
	{ "key", "EDGESYNCCTL_KEY", "key", ES_SET_STRING, NULL, 0, 0,
	  offsetof(ctl_cfg, key), "private key file of --cert (PEM)", NULL },
	{ "ca", "EDGESYNCCTL_CA", "ca", ES_SET_STRING, NULL, 0, 0,
	  offsetof(ctl_cfg, ca), "CA file the controller's certificate chains to (PEM)", NULL },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

typedef struct ctl {
	ctl_cfg cfg;
	const char *file;    /* -f */
	es_print_fmt fmt;    /* -o */
	const char **pos;    /* positional arguments, borrowed from argv */
	int npos;
	es_http_client *http; /* one connection for all requests of a command */
	es_urllist servers;   /* --server as a list; cur: the one that answered */
	es_ctl_token_opts tok; /* create token's --ttl, --usages, --labels, --name-prefix */
	int forbidden;        /* a 403, or a TLS failure without a cert: explain the
	                         identity at the end */
	int wait;             /* apply --wait */
	const char *timeout;  /* apply --timeout (a duration), NULL: 30s */
} ctl;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: edgesyncctl [flags] COMMAND [args]\n\n"
		"Commands:\n"
		"  apply -f FILE             create or update the objects in FILE (YAML or JSON; - for stdin)\n"
		"      [--wait [--timeout 30s]]  then wait until each connected node the objects\n"
		"                            select has acknowledged them (exit 1 when one did\n"
		"                            not in time; nodes not connected are listed);\n"
		"                            --timeout 1s to 1h, for all nodes together, in\n"
		"                            whole seconds\n"
		"  get nodes|node NAME       list nodes or show one (-o wide: with store = etcd,\n"
		"                            the CONTROLLER serving each)\n"
		"  get KIND [NAME]           list objects of KIND (collectorconfigs, healthrules,\n"
		"                            egresspolicies; short names cc, hr, ep, no) or show one\n"
		"  describe node NAME        a node's state, conditions and objects, desired beside reported;\n"
		"                            with store = etcd also the controller serving it and the\n"
		"                            controller whose state is shown (Controller, Status From)\n"
		"  delete KIND NAME          delete an object (also: delete -f FILE)\n"
		"  create token [--ttl 24h] [--usages N] [--labels k=v,...] [--name-prefix P]\n"
		"                            a bootstrap token for joining nodes; prints it and\n"
		"                            the edgesync-agent join command\n"
		"  get tokens                list bootstrap tokens (never their secrets)\n"
		"  delete token ID           delete a bootstrap token\n"
		"  version                   print the client version\n\n"
		"Flags:\n"
		"  -f, --filename FILE       manifest for apply/delete\n"
		"  -o, --output FORMAT       json, yaml or wide (get)\n"
		"  --config FILE             config file (env EDGESYNCCTL_CONFIG; default\n"
		"                            ~/.config/edgesync/edgesyncctl.conf when it exists)\n"
		"  -h, --help                this help\n"
		"  --version                 print the client version\n\n"
		"Settings (config key, environment variable, flag):\n");
	es_config_print_help(settings, NSETTINGS, f);
	fprintf(f, "The agent's and controller's EDGESYNC_SERVER, EDGESYNC_CERT, EDGESYNC_KEY "
		"and\nEDGESYNC_CA are not read. cert must be an admin certificate: one URI SAN\n"
		"spiffe://<trust-domain>/admin/<name>, from the controller's client-ca.\n");
	fprintf(f, "\nExit status: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

/* Takes value of a short/long flag: "-f X", "-fX", "-f=X", "--filename=X". */
static int flag_value(int argc, char **argv, int *i, const char *s, const char *l,
		      const char **val)
{
	const char *a = argv[*i];
	size_t sl = strlen(s), ll = strlen(l);

	if (strcmp(a, s) == 0 || strcmp(a, l) == 0) {
		*val = *i + 1 < argc ? argv[++*i] : NULL;
		return 1;
	}
	if (strncmp(a, l, ll) == 0 && a[ll] == '=') {
		*val = a + ll + 1;
		return 1;
	}
	if (strncmp(a, s, sl) == 0 && a[sl]) {
		*val = a + sl + (a[sl] == '=');
		return 1;
	}
	return 0;
}

/* create token's flags, long only: "--ttl X" or "--ttl=X". Sets *val to
 * the value (NULL when missing) and returns 1 when argv[*i] is one. */
static int token_flag(int argc, char **argv, int *i, es_ctl_token_opts *o,
		      const char **val)
{
	static const struct { const char *flag; size_t off; } fl[] = {
		{ "--ttl", offsetof(es_ctl_token_opts, ttl) },
		{ "--usages", offsetof(es_ctl_token_opts, usages) },
		{ "--labels", offsetof(es_ctl_token_opts, labels) },
		{ "--name-prefix", offsetof(es_ctl_token_opts, name_prefix) },
	};
	const char *a = argv[*i];

	for (size_t k = 0; k < sizeof(fl) / sizeof(fl[0]); k++) {
		size_t n = strlen(fl[k].flag);

		if (strncmp(a, fl[k].flag, n) != 0 || (a[n] && a[n] != '='))
			continue;
		*val = a[n] == '=' ? a + n + 1 : *i + 1 < argc ? argv[++*i] : NULL;
		*(const char **)((char *)o + fl[k].off) = *val;
		return 1;
	}
	return 0;
}

static int is_table_flag(const char *a)
{
	size_t i;

	if (strncmp(a, "--", 2) != 0)
		return 0;
	if (strcmp(a + 2, "config") == 0)
		return 1;
	for (i = 0; i < NSETTINGS; i++)
		if (strcmp(a + 2, settings[i].flag) == 0)
			return 1;
	return 0;
}

static int load_settings(ctl *c, int argc, char **argv, char **rest, int nrest)
{
	char err[512] = "", home_conf[4096];
	const char *conf = es_config_find_file(argc, argv, 1, "EDGESYNCCTL_CONFIG");
	const char *home = getenv("HOME");

	if (es_config_defaults(settings, NSETTINGS, &c->cfg, err, sizeof(err)) != ES_OK)
		goto fail;
	if (!conf && home && *home) {
		snprintf(home_conf, sizeof(home_conf), "%s/.config/edgesync/edgesyncctl.conf", home);
		if (access(home_conf, F_OK) == 0)
			conf = home_conf;
	}
	if (conf && es_config_load_file(settings, NSETTINGS, &c->cfg, conf, err, sizeof(err)) != ES_OK)
		goto fail;
	if (es_config_load_env(settings, NSETTINGS, &c->cfg, err, sizeof(err)) != ES_OK)
		goto fail;
	if (es_config_load_args(settings, NSETTINGS, &c->cfg, nrest, rest, 0, c->pos,
				&c->npos, err, sizeof(err)) != ES_OK)
		goto fail;
	/* --server given several times is a list, as a comma-separated value is */
	{
		char *joined = NULL;

		if (es_urllist_join_flag(nrest, rest, 0, "server", &joined, err,
					 sizeof(err)) != ES_OK)
			goto fail;
		if (joined) {
			free(c->cfg.server);
			c->cfg.server = joined;
		}
	}
	return 0;
fail:
	fprintf(stderr, "error: %s\n", err);
	return -1;
}

static void server_error(const char *what, const es_http_resp *r)
{
	es_print_server_error(stderr, what, r->status, r->body, r->body_len);
}

/* One request; path is appended to the server URL (its path a prefix, its
 * trailing '/' dropped; open_client refused a query or fragment). When a
 * server cannot be reached (ES_ERR_IO: resolve, connect, send, receive,
 * timeout), the next of --server is tried, each once, and the one that
 * answers is used for the command's later requests. -1 on a transport
 * error (printed, naming each URL tried), else 0 with *r filled. */
static int call(ctl *c, const char *method, const char *path, const char *body,
		es_http_resp *r)
{
	char err[768] = "", all[2048] = "", *url = NULL;
	size_t used = 0;
	es_err rc = ES_ERR_IO;

	for (size_t tried = 0; tried < c->servers.n; tried++) {
		const char *server = es_urllist_current(&c->servers);
		size_t sl = strlen(server);

		while (sl && server[sl - 1] == '/')
			sl--;
		if (asprintf(&url, "%.*s%s", (int)sl, server, path) < 0) {
			fprintf(stderr, "error: out of memory\n");
			return -1;
		}
		rc = es_http_client_request(c->http, method, url, body,
					    body ? strlen(body) : 0, r, err, sizeof(err));
		free(url);
		if (rc != ES_ERR_IO || c->servers.n == 1)
			break;
		if (used < sizeof(all))
			used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s",
						 used ? "; " : "", err);
		es_urllist_advance(&c->servers, 0);
	}
	if (rc != ES_OK) {
		fprintf(stderr, "error: %s\n", rc == ES_ERR_IO && all[0] ? all : err);
		/* The controller ends the handshake of a client without a
		 * certificate: say that none was sent. */
		if (rc == ES_ERR_TLS && !c->cfg.cert)
			c->forbidden = 1;
		return -1;
	}
	if (r->status == 403)
		c->forbidden = 1;
	return 0;
}

/* call() for the token commands (tokens.h). */
static int api_call(void *ctx, const char *method, const char *path, const char *body,
		    es_http_resp *r)
{
	return call(ctx, method, path, body, r);
}

/* Checks the server URL and the credential files before anything is sent:
 * a bad one is a configuration error (exit 2) naming the setting. */
static int open_client(ctl *c)
{
	es_http_opts opts = { .tls = 1, .ca_file = c->cfg.ca, .cert_file = c->cfg.cert,
			      .key_file = c->cfg.key,
			      .user_agent = "edgesyncctl/" ES_VERSION };
	es_url u;
	char err[768] = "";
	es_err rc;

	if (es_urllist_split("server", c->cfg.server, &c->servers, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "error: %s\n", err);
		return ES_CTL_EXIT_USAGE;
	}
	for (size_t i = 0; i < c->servers.n; i++) {
		if (es_url_parse("server", c->servers.items[i], "https", &u, err,
				 sizeof(err)) != ES_OK) {
			fprintf(stderr, "error: %s\n", err);
			return ES_CTL_EXIT_USAGE;
		}
		/* The API paths are appended to the server URL (call): a
		 * query would end up before them. */
		if (strchr(u.path, '?')) {
			fprintf(stderr, "error: server: \"%s\": a query is not allowed "
				"(the API paths are appended to the URL's path)\n",
				c->servers.items[i]);
			return ES_CTL_EXIT_USAGE;
		}
	}
	rc = es_http_client_new(&opts, &c->http, err, sizeof(err));
	if (rc != ES_OK) {
		fprintf(stderr, "error: %s\n", err);
		return rc == ES_ERR_INVAL ? ES_CTL_EXIT_USAGE : ES_CTL_EXIT_RUNTIME;
	}
	return ES_CTL_EXIT_OK;
}

static int parse_json_body(const es_http_resp *r, cJSON **out)
{
	char err[256];

	if (es_json_parse(r->body, r->body_len, ES_JSON_MAX_DEPTH, out, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "error: the server's response is not JSON: %s\n", err);
		return -1;
	}
	return 0;
}

static void lower_kind(es_kind k, char *buf, size_t bufsz)
{
	size_t i;

	snprintf(buf, bufsz, "%s", es_obj_kind_name(k));
	for (i = 0; buf[i]; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
}

/* Reads FILE or stdin ("-") into a malloc'd buffer, at most ES_YAML_MAX_INPUT. */
static char *read_input(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char *buf = NULL;
	size_t cap = ES_YAML_MAX_INPUT + 1, n;

	if (!f) {
		fprintf(stderr, "error: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	buf = malloc(cap);
	if (!buf) {
		fprintf(stderr, "error: out of memory\n");
		errno = ENOMEM;
		goto cleanup;
	}
	n = fread(buf, 1, cap, f);
	if (ferror(f) || n == cap) {
		fprintf(stderr, "error: %s: %s\n", path,
			n == cap ? "larger than 8 MiB" : strerror(errno));
		free(buf);
		buf = NULL;
		errno = EINVAL;
		goto cleanup;
	}
	*len = n;
cleanup:
	if (f != stdin)
		fclose(f);
	return buf;
}

/* Reads and parses a manifest into *out. A file that cannot be read or is
 * not a valid manifest is a usage error (exit 2): bad input, not a failure
 * of the system. */
static int load_manifest(const char *path, cJSON **out)
{
	char err[512], *text;
	size_t len = 0;
	es_err rc;

	*out = NULL;
	text = read_input(path, &len);
	if (!text)
		return errno == ENOMEM ? ES_CTL_EXIT_RUNTIME : ES_CTL_EXIT_USAGE;
	rc = es_yaml_load(text, len, strcmp(path, "-") ? path : "stdin", out, err, sizeof(err));
	free(text);
	if (rc != ES_OK) {
		fprintf(stderr, "error: %s\n", err);
		return rc == ES_ERR_NOMEM ? ES_CTL_EXIT_RUNTIME : ES_CTL_EXIT_USAGE;
	}
	if (cJSON_GetArraySize(*out) == 0) {
		fprintf(stderr, "error: no objects passed (%s has none)\n", path);
		cJSON_Delete(*out);
		*out = NULL;
		return ES_CTL_EXIT_USAGE;
	}
	return ES_CTL_EXIT_OK;
}

/* Resolves an object of a manifest to kind, its lower-case name and path. */
static int object_path(const cJSON *o, int idx, char *path, size_t pathsz, char *id, size_t idsz)
{
	const char *ks = es_obj_kind_str(o), *name = es_obj_name(o);
	es_kind k = ks ? es_obj_kind_parse(ks) : ES_KIND_UNKNOWN;
	char lk[64];

	if (k == ES_KIND_UNKNOWN || k == ES_KIND_NODE || !ks || strcmp(ks, es_obj_kind_name(k))) {
		fprintf(stderr, "error: object %d: kind %s%s%s is not a desired kind "
			"(CollectorConfig, HealthRule, EgressPolicy)\n", idx + 1,
			ks ? "\"" : "", ks ? ks : "missing", ks ? "\"" : "");
		return -1;
	}
	if (!name || !es_obj_name_valid(name)) {
		fprintf(stderr, "error: object %d (%s): metadata.name %s\n", idx + 1, ks,
			name ? "is not an RFC 1123 DNS subdomain" : "is missing");
		return -1;
	}
	lower_kind(k, lk, sizeof(lk));
	snprintf(id, idsz, "%s/%s", lk, name);
	snprintf(path, pathsz, API_PREFIX "%s/%s", es_obj_kind_plural(k), name);
	return 0;
}

static int64_t rv_of(const es_http_resp *r)
{
	cJSON *o = NULL;
	int64_t rv = -1;

	if (es_json_parse(r->body, r->body_len, ES_JSON_MAX_DEPTH, &o, NULL, 0) == ES_OK)
		rv = es_obj_resource_version(o);
	cJSON_Delete(o);
	return rv;
}

/* apply --timeout as milliseconds (default 30 s); -1 when bad (printed). */
static int64_t wait_timeout_ms(const ctl *c)
{
	char err[256];
	int64_t ms = 30000;

	if (!c->timeout)
		return ms;
	if (es_health_duration_parse(c->timeout, &ms, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "error: --timeout: %s\n", err);
		return -1;
	}
	if (ms < 1000 || ms > 3600000) {
		fprintf(stderr, "error: --timeout: \"%s\" is not a duration of 1s to 1h\n",
			c->timeout);
		return -1;
	}
	return ms;
}

static int cmd_apply(ctl *c)
{
	cJSON *objs, *o, *applied = NULL;
	int idx = 0, failed = 0, rc;
	int64_t timeout_ms = wait_timeout_ms(c);

	if (!c->file) {
		fprintf(stderr, "error: apply needs -f FILE (- for stdin)\n");
		return ES_CTL_EXIT_USAGE;
	}
	if (timeout_ms < 0)
		return ES_CTL_EXIT_USAGE;
	rc = load_manifest(c->file, &objs);
	if (rc != ES_CTL_EXIT_OK)
		return rc;
	if (c->wait && !(applied = cJSON_CreateArray())) {
		fprintf(stderr, "error: out of memory\n");
		cJSON_Delete(objs);
		return ES_CTL_EXIT_RUNTIME;
	}
	cJSON_ArrayForEach(o, objs) {
		char path[512], id[400], *body = NULL;
		es_http_resp r = { 0 };
		int64_t before = -1;
		int existed = 0;

		if (object_path(o, idx++, path, sizeof(path), id, sizeof(id)) != 0) {
			failed = 1;
			continue;
		}
		if (call(c, "GET", path, NULL, &r) != 0) {
			failed = 1;
			continue;
		}
		if (r.status == 200) {
			existed = 1;
			before = rv_of(&r);
		}
		es_http_resp_free(&r);
		body = es_json_print(o);
		if (!body) {
			fprintf(stderr, "error: out of memory\n");
			failed = 1;
			break;
		}
		if (call(c, "PUT", path, body, &r) != 0) {
			free(body);
			failed = 1;
			continue;
		}
		free(body);
		if (r.status == 200 || r.status == 201) {
			const char *what = r.status == 201 || !existed ? "created"
					   : rv_of(&r) == before && before >= 0 ? "unchanged"
					   : "configured";
			cJSON *got = NULL;

			printf("%s %s\n", id, what);
			if (applied && es_json_parse(r.body, r.body_len, ES_JSON_MAX_DEPTH,
						     &got, NULL, 0) == ES_OK)
				cJSON_AddItemToArray(applied, got);
		} else {
			server_error(id, &r);
			failed = 1;
		}
		es_http_resp_free(&r);
	}
	cJSON_Delete(objs);
	/* What was applied is waited for, also when another object failed. */
	if (applied && cJSON_GetArraySize(applied) > 0) {
		es_ctl_api api = { api_call, c };
		int64_t longest = timeout_ms < ES_CTL_WAIT_MAX_S * 1000 ?
				  timeout_ms : ES_CTL_WAIT_MAX_S * 1000;

		fflush(stdout);
		/* The controller holds a waiting request: its answer may take
		 * the whole wait and then some. */
		es_http_client_set_timeout(c->http, (int)longest + ES_HTTP_TIMEOUT_MS);
		if (es_ctl_wait_applied(&api, applied, timeout_ms, stdout) != ES_CTL_EXIT_OK)
			failed = 1;
		es_http_client_set_timeout(c->http, 0);
	}
	cJSON_Delete(applied);
	return failed ? ES_CTL_EXIT_RUNTIME : ES_CTL_EXIT_OK;
}

static int resolve_kind(const char *s, es_kind *k)
{
	*k = es_obj_kind_parse(s);
	if (*k == ES_KIND_UNKNOWN) {
		fprintf(stderr, "error: unknown kind \"%s\" (nodes, collectorconfigs, healthrules, "
			"egresspolicies)\n", s);
		return -1;
	}
	return 0;
}

static int check_name(const char *name)
{
	if (!es_obj_name_valid(name)) {
		fprintf(stderr, "error: \"%s\" is not a valid name (RFC 1123 DNS subdomain)\n", name);
		return -1;
	}
	return 0;
}

static int cmd_get(ctl *c)
{
	char path[512], err[256] = "";
	const char *name = c->npos > 2 ? c->pos[2] : NULL;
	es_http_resp r = { 0 };
	cJSON *v = NULL;
	es_kind k;
	int rc = ES_CTL_EXIT_RUNTIME;

	if (c->npos < 2 || c->npos > 3) {
		fprintf(stderr, "error: usage: get KIND [NAME] [-o json|yaml|wide]\n");
		return ES_CTL_EXIT_USAGE;
	}
	if (resolve_kind(c->pos[1], &k) != 0 || (name && check_name(name) != 0))
		return ES_CTL_EXIT_USAGE;
	snprintf(path, sizeof(path), API_PREFIX "%s%s%s", es_obj_kind_plural(k), name ? "/" : "",
		 name ? name : "");
	if (call(c, "GET", path, NULL, &r) != 0)
		return ES_CTL_EXIT_RUNTIME;
	if (r.status != 200) {
		server_error(name ? name : c->pos[1], &r);
		goto cleanup;
	}
	if (parse_json_body(&r, &v) != 0)
		goto cleanup;
	if (c->fmt == ES_PRINT_JSON || c->fmt == ES_PRINT_YAML) {
		if (es_print_value(stdout, v, c->fmt, err, sizeof(err)) != ES_OK) {
			fprintf(stderr, "error: %s\n", err);
			goto cleanup;
		}
	} else if ((k == ES_KIND_NODE ? es_print_nodes(stdout, v, c->fmt == ES_PRINT_WIDE, time(NULL))
				      : es_print_objects(stdout, v, c->fmt == ES_PRINT_WIDE,
							 time(NULL))) != ES_OK) {
		fprintf(stderr, "error: out of memory\n");
		goto cleanup;
	}
	rc = ES_CTL_EXIT_OK;
cleanup:
	cJSON_Delete(v);
	es_http_resp_free(&r);
	return rc;
}

static int cmd_describe(ctl *c)
{
	char path[512], derr[512] = "";
	es_http_resp r = { 0 }, d = { 0 };
	cJSON *node = NULL, *desc = NULL;
	es_kind k;
	int rc = ES_CTL_EXIT_RUNTIME;

	if (c->npos != 3) {
		fprintf(stderr, "error: usage: describe node NAME\n");
		return ES_CTL_EXIT_USAGE;
	}
	if (resolve_kind(c->pos[1], &k) != 0 || check_name(c->pos[2]) != 0)
		return ES_CTL_EXIT_USAGE;
	if (k != ES_KIND_NODE) {
		fprintf(stderr, "error: describe supports nodes only (use get %s %s -o yaml)\n",
			c->pos[1], c->pos[2]);
		return ES_CTL_EXIT_USAGE;
	}
	snprintf(path, sizeof(path), API_PREFIX "nodes/%s", c->pos[2]);
	if (call(c, "GET", path, NULL, &r) != 0)
		return ES_CTL_EXIT_RUNTIME;
	if (r.status != 200) {
		server_error(c->pos[2], &r);
		goto cleanup;
	}
	if (parse_json_body(&r, &node) != 0)
		goto cleanup;
	snprintf(path, sizeof(path), API_PREFIX "nodes/%s/describe", c->pos[2]);
	if (call(c, "GET", path, NULL, &d) != 0) {
		snprintf(derr, sizeof(derr), "request failed");
	} else if (d.status != 200) {
		snprintf(derr, sizeof(derr), "HTTP status %d", d.status);
	} else if (es_json_parse(d.body, d.body_len, ES_JSON_MAX_DEPTH, &desc, derr,
				 sizeof(derr)) != ES_OK) {
		desc = NULL;
	}
	if (es_describe_node(stdout, node, desc, desc ? NULL : derr, time(NULL)) != ES_OK) {
		fprintf(stderr, "error: out of memory\n");
		goto cleanup;
	}
	rc = ES_CTL_EXIT_OK;
cleanup:
	cJSON_Delete(node);
	cJSON_Delete(desc);
	es_http_resp_free(&r);
	es_http_resp_free(&d);
	return rc;
}

static int delete_one(ctl *c, const char *path, const char *id)
{
	es_http_resp r = { 0 };
	int rc = ES_CTL_EXIT_RUNTIME;

	if (call(c, "DELETE", path, NULL, &r) != 0)
		return rc;
	if (r.status >= 200 && r.status < 300) {
		printf("%s deleted\n", id);
		rc = ES_CTL_EXIT_OK;
	} else {
		server_error(id, &r);
	}
	es_http_resp_free(&r);
	return rc;
}

static int cmd_delete(ctl *c)
{
	char path[512], id[400], lk[64];
	es_kind k;

	if (c->file) {
		cJSON *objs, *o;
		int idx = 0, failed = 0, rc;
		if (c->npos != 1) {
			fprintf(stderr, "error: usage: delete -f FILE, or delete KIND NAME\n");
			return ES_CTL_EXIT_USAGE;
		}
		rc = load_manifest(c->file, &objs);
		if (rc != ES_CTL_EXIT_OK)
			return rc;
		cJSON_ArrayForEach(o, objs) {
			if (object_path(o, idx++, path, sizeof(path), id, sizeof(id)) != 0 ||
			    delete_one(c, path, id) != ES_CTL_EXIT_OK)
				failed = 1;
		}
		cJSON_Delete(objs);
		return failed ? ES_CTL_EXIT_RUNTIME : ES_CTL_EXIT_OK;
	}
	if (c->npos != 3) {
		fprintf(stderr, "error: usage: delete KIND NAME, or delete -f FILE\n");
		return ES_CTL_EXIT_USAGE;
	}
	if (resolve_kind(c->pos[1], &k) != 0 || check_name(c->pos[2]) != 0)
		return ES_CTL_EXIT_USAGE;
	lower_kind(k, lk, sizeof(lk));
	snprintf(id, sizeof(id), "%s/%s", lk, c->pos[2]);
	snprintf(path, sizeof(path), API_PREFIX "%s/%s", es_obj_kind_plural(k), c->pos[2]);
	return delete_one(c, path, id);
}

int es_ctl_main(int argc, char **argv)
{
	ctl c;
	es_ctl_api api = { api_call, &c };
	char **rest = NULL;
	int nrest = 0, i, rc = ES_CTL_EXIT_USAGE, help = 0, version = 0;
	const char *out = NULL, *cmd;

	memset(&c, 0, sizeof(c));
	rest = calloc((size_t)argc + 1, sizeof(*rest));
	c.pos = calloc((size_t)argc + 1, sizeof(*c.pos));
	if (!rest || !c.pos) {
		fprintf(stderr, "error: out of memory\n");
		rc = ES_CTL_EXIT_RUNTIME;
		goto cleanup;
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			help = 1;
		} else if (strcmp(a, "--version") == 0) {
			version = 1;
		} else if (flag_value(argc, argv, &i, "-f", "--filename", &val)) {
			if (!val) {
				fprintf(stderr, "error: -f needs a file name\n");
				goto cleanup;
			}
			c.file = val;
		} else if (flag_value(argc, argv, &i, "-o", "--output", &val)) {
			out = val ? val : "";
			if (es_print_fmt_parse(out, &c.fmt) != 0) {
				fprintf(stderr, "error: -o: unknown output format \"%s\" (json, yaml, wide)\n",
					out);
				goto cleanup;
			}
		} else if (strcmp(a, "--wait") == 0) {
			c.wait = 1;
		} else if (!strcmp(a, "--timeout") || !strncmp(a, "--timeout=", 10)) {
			val = a[9] == '=' ? a + 10 : i + 1 < argc ? argv[++i] : NULL;
			if (!val) {
				fprintf(stderr, "error: --timeout needs a duration (30s, 2m)\n");
				goto cleanup;
			}
			c.timeout = val;
		} else if (token_flag(argc, argv, &i, &c.tok, &val)) {
			if (!val) {
				fprintf(stderr, "error: %s needs a value\n", a);
				goto cleanup;
			}
		} else if (is_table_flag(a)) {
			rest[nrest++] = argv[i];
			if (i + 1 < argc)
				rest[nrest++] = argv[++i];
		} else {
			rest[nrest++] = argv[i];
		}
	}
	if (help) {
		usage(stdout);
		rc = ES_CTL_EXIT_OK;
		goto cleanup;
	}
	if (version) {
		printf("edgesyncctl %s\n", ES_VERSION);
		rc = ES_CTL_EXIT_OK;
		goto cleanup;
	}
	if (load_settings(&c, argc, argv, rest, nrest) != 0)
		goto cleanup;
	if (c.npos == 0) {
		usage(stderr);
		goto cleanup;
	}
	cmd = c.pos[0];
	if ((c.tok.ttl || c.tok.usages || c.tok.labels || c.tok.name_prefix) &&
	    !(strcmp(cmd, "create") == 0 && c.npos == 2 && strcmp(c.pos[1], "token") == 0)) {
		fprintf(stderr, "error: --ttl, --usages, --labels and --name-prefix are "
			"flags of create token only\n");
		goto cleanup;
	}
	if ((c.wait || c.timeout) && strcmp(cmd, "apply") != 0) {
		fprintf(stderr, "error: --wait and --timeout are flags of apply only\n");
		goto cleanup;
	}
	if (c.timeout && !c.wait) {
		fprintf(stderr, "error: --timeout needs --wait\n");
		goto cleanup;
	}
	if ((strcmp(cmd, "apply") == 0 || strcmp(cmd, "get") == 0 ||
	     strcmp(cmd, "describe") == 0 || strcmp(cmd, "delete") == 0 ||
	     strcmp(cmd, "create") == 0) &&
	    (rc = open_client(&c)) != ES_CTL_EXIT_OK)
		goto cleanup;
	rc = ES_CTL_EXIT_USAGE;
	if (strcmp(cmd, "version") == 0) {
		printf("edgesyncctl %s\n", ES_VERSION);
		rc = ES_CTL_EXIT_OK;
	} else if (strcmp(cmd, "apply") == 0) {
		rc = c.npos == 1 ? cmd_apply(&c) : ES_CTL_EXIT_USAGE;
		if (c.npos != 1)
			fprintf(stderr, "error: apply takes no arguments besides -f FILE\n");
	} else if (c.npos >= 2 && !strcmp(cmd, "create")) {
		rc = ES_CTL_EXIT_USAGE;
		if (c.npos != 2 || strcmp(c.pos[1], "token") != 0)
			fprintf(stderr, "error: usage: create token [--ttl 24h] [--usages N] "
				"[--labels k=v,...] [--name-prefix P]\n");
		else
			rc = es_ctl_token_create(&api, &c.tok);
	} else if (c.npos >= 2 && !strcmp(cmd, "get") &&
		   (!strcmp(c.pos[1], "tokens") || !strcmp(c.pos[1], "token"))) {
		rc = c.npos == 2 ? es_ctl_token_list(&api, c.fmt) :
			ES_CTL_EXIT_USAGE;
		if (c.npos != 2)
			fprintf(stderr, "error: usage: get tokens [-o json|yaml]\n");
	} else if (c.npos >= 2 && !strcmp(cmd, "delete") &&
		   (!strcmp(c.pos[1], "token") || !strcmp(c.pos[1], "tokens"))) {
		rc = c.npos == 3 ? es_ctl_token_delete(&api, c.pos[2]) :
			ES_CTL_EXIT_USAGE;
		if (c.npos != 3)
			fprintf(stderr, "error: usage: delete token ID\n");
	} else if (strcmp(cmd, "get") == 0) {
		rc = cmd_get(&c);
	} else if (strcmp(cmd, "describe") == 0) {
		rc = cmd_describe(&c);
	} else if (strcmp(cmd, "delete") == 0) {
		rc = cmd_delete(&c);
	} else {
		fprintf(stderr, "error: unknown command \"%s\" (apply, get, describe, delete, create, version; "
			"see --help)\n", cmd);
	}
cleanup:
	if (c.forbidden)
		es_ctl_ident_forbidden_hint(stderr, c.cfg.cert);
	es_http_client_free(c.http);
	es_urllist_free(&c.servers);
	es_config_free(settings, NSETTINGS, &c.cfg);
	free(rest);
	free((void *)c.pos);
	return rc;
}
