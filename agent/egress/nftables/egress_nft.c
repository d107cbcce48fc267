/*
 * egress_nft.c - the nftables backend inside the EgressPolicy enforcer:
 * libnftables, cgroup paths, drift, counters, actual state (see
 * egress_nft.h).
 */
#define _GNU_SOURCE
#include "egress/nftables/egress_nft.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <dlfcn.h>
#include <nftables/libnftables.h>

#include "egress/egress_cgroup.h"
#include "egress/egress_int.h"
#include "es_json.h"
#include "es_log.h"

#define CG_MAX_DEPTH 64
#define TABLE "inet " ES_EGNFT_TABLE

struct es_egnft {
	struct nft_ctx *ctx;
	char *written;     /* the ruleset last written, counters at 0 */
	cJSON *ref;        /* the table as listed right after that write,
			      normalized (norm_listing) */
	cJSON *counters;   /* the last counters listing (es_egnft_poll) */
	int adopting;      /* 1 until the first enforce after loading */
};

/*
 * libnftables, loaded with dlopen(3) the first time the nftables backend is
 * used: linked in, it and its dependencies (libnftnl, libmnl, libjansson,
 * libgmp, libxtables) cost every agent about 0.7 MiB of resident memory,
 * while the backend only runs where cgroup BPF is missing.
 */
#define ES_LIBNFTABLES "libnftables.so.1"

static struct {
	int tried;
	void *h;
	struct nft_ctx *(*ctx_new)(uint32_t flags);
	void (*ctx_free)(struct nft_ctx *ctx);
	int (*buffer_output)(struct nft_ctx *ctx);
	int (*buffer_error)(struct nft_ctx *ctx);
	void (*output_set_flags)(struct nft_ctx *ctx, unsigned int flags);
	int (*run_cmd)(struct nft_ctx *ctx, const char *buf);
	const char *(*get_output)(struct nft_ctx *ctx);
	const char *(*get_error)(struct nft_ctx *ctx);
} lib;

static int lib_load(void)
{
	if (lib.h)
		return 1;
	if (lib.tried)
		return 0;
	lib.tried = 1;
	lib.h = dlopen(ES_LIBNFTABLES, RTLD_NOW | RTLD_LOCAL);
	if (!lib.h)
		return 0;
	*(void **)&lib.ctx_new = dlsym(lib.h, "nft_ctx_new");
	*(void **)&lib.ctx_free = dlsym(lib.h, "nft_ctx_free");
	*(void **)&lib.buffer_output = dlsym(lib.h, "nft_ctx_buffer_output");
	*(void **)&lib.buffer_error = dlsym(lib.h, "nft_ctx_buffer_error");
	*(void **)&lib.output_set_flags = dlsym(lib.h, "nft_ctx_output_set_flags");
	*(void **)&lib.run_cmd = dlsym(lib.h, "nft_run_cmd_from_buffer");
	*(void **)&lib.get_output = dlsym(lib.h, "nft_ctx_get_output_buffer");
	*(void **)&lib.get_error = dlsym(lib.h, "nft_ctx_get_error_buffer");
	if (!lib.ctx_new || !lib.ctx_free || !lib.buffer_output ||
	    !lib.buffer_error || !lib.output_set_flags || !lib.run_cmd ||
	    !lib.get_output || !lib.get_error) {
		dlclose(lib.h);
		memset(&lib, 0, sizeof(lib));
		lib.tried = 1;
		return 0;
	}
	return 1;
}

static void ctx_free(struct nft_ctx *c)
{
	if (c && lib.h)
		lib.ctx_free(c);
}

/* A buffered libnftables context, or NULL when the library cannot be loaded
 * (ES_LIBNFTABLES, Debian package libnftables1) or a context not made. */
static struct nft_ctx *ctx_new(void)
{
	struct nft_ctx *c;

	if (!lib_load())
		return NULL;
	c = lib.ctx_new(NFT_CTX_DEFAULT);
	if (c && (lib.buffer_output(c) != 0 || lib.buffer_error(c) != 0)) {
		lib.ctx_free(c);
		return NULL;
	}
	return c;
}

/* Runs cmd; *out (may be NULL) gets the output (valid until the next run).
 * On failure err gets nft's first error line. */
static es_err run(struct nft_ctx *c, int json, const char *cmd,
		  const char **out, char *err, size_t errsz)
{
	const char *o, *e;
	int r;

	lib.output_set_flags(c, json ? NFT_CTX_OUTPUT_JSON : 0);
	r = lib.run_cmd(c, cmd);
	o = lib.get_output(c);
	e = lib.get_error(c);
	if (out)
		*out = o ? o : "";
	if (r == 0)
		return ES_OK;
	e = e && *e ? e : "nft failed without a message";
	return es_errf(ES_ERR_IO, err, errsz, "nft: %.*s", (int)strcspn(e, "\n"), e);
}

/* *out: the JSON listing of the table, NULL when there is none. */
static es_err list_table(struct nft_ctx *c, cJSON **out, char *err, size_t errsz)
{
	const char *o;
	cJSON *tables = NULL, *it;
	int found = 0;
	es_err rc;

	*out = NULL;
	rc = run(c, 1, "list tables inet", &o, err, errsz);
	if (rc == ES_OK)
		rc = es_json_parse(o, strlen(o), ES_JSON_MAX_DEPTH, &tables, err, errsz);
	if (rc != ES_OK)
		return rc;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(tables, "nftables")) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "table");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");

		if (cJSON_IsString(name) && !strcmp(name->valuestring, ES_EGNFT_TABLE))
			found = 1;
	}
	cJSON_Delete(tables);
	if (!found)
		return ES_OK;
	rc = run(c, 1, "list table " TABLE, &o, err, errsz);
	if (rc == ES_OK)
		rc = es_json_parse(o, strlen(o), ES_JSON_MAX_DEPTH, out, err, errsz);
	return rc;
}

/* In place: drops metainfo and counter values, and turns every cgroupv2
 * match's path (which nft finds by walking ES_EGNFT_CGROUP_BASE, so it
 * changes when a cgroup goes) into the cgroup id. 0, or -1. */
static int norm_listing(cJSON *l)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(l, "nftables"), *it, *next;

	for (it = arr ? arr->child : NULL; it; it = next) {
		cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "counter");
		cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "rule"), *x;

		next = it->next;
		if (cJSON_GetObjectItemCaseSensitive(it, "metainfo")) {
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, it));
			continue;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(c, "packets");
		cJSON_DeleteItemFromObjectCaseSensitive(c, "bytes");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "expr")) {
			cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "match");
			cJSON *s = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(m, "left"), "socket");
			cJSON *right = cJSON_GetObjectItemCaseSensitive(m, "right"), *id;
			char path[ES_EGNFT_PATH_MAX + 32];
			struct stat st;

			if (!s || !cJSON_IsString(right))
				continue;
			snprintf(path, sizeof(path), ES_EGNFT_CGROUP_BASE "/%s",
				 right->valuestring);
			if (stat(path, &st) != 0)
				continue;
			if (!(id = cJSON_CreateNumber((double)st.st_ino)) ||
			    !cJSON_ReplaceItemInObjectCaseSensitive(m, "right", id)) {
				cJSON_Delete(id);
				return -1;
			}
		}
	}
	return 0;
}

static void marker_path(const es_egress *e, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s/" ES_EGNFT_MARKER, e->state_dir);
}

int es_egnft_owned(const es_egress *e)
{
	char p[640];
	struct stat st;

	if (e->nft)
		return 1;
	if (!e->state_dir[0])
		return 0;
	marker_path(e, p, sizeof(p));
	return stat(p, &st) == 0;
}

/* Creates the marker, durably, before the first write of the table. */
static es_err marker_write(const es_egress *e, char *err, size_t errsz)
{
	static const char text[] = "table " TABLE " written by this agent\n";
	char p[640];
	int fd, dfd, ok;

	if (!e->state_dir[0])
		return ES_OK;
	marker_path(e, p, sizeof(p));
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", p, strerror(errno));
	ok = write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1) &&
	     fsync(fd) == 0;
	close(fd);
	dfd = open(e->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok = ok && dfd >= 0 && fsync(dfd) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", p, strerror(errno));
	return ES_OK;
}

static es_err open_ctx(es_egress *e, char *err, size_t errsz)
{
	es_egnft *n = calloc(1, sizeof(*n));

	if (!n)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (!(n->ctx = ctx_new())) {
		free(n);
		return es_errf(lib.h ? ES_ERR_NOMEM : ES_ERR_UNSUPPORTED, err, errsz,
			       lib.h ? "cannot create a libnftables context" :
			       ES_LIBNFTABLES " cannot be loaded (install the "
			       "nftables package)");
	}
	if (run(n->ctx, 0, "list tables", NULL, err, errsz) != ES_OK) {
		es_egnft_free(n);
		return ES_ERR_UNSUPPORTED;
	}
	n->adopting = 1;
	e->nft = n;
	return ES_OK;
}

es_err es_egnft_load(es_egress *e, const char *prior, char *why, size_t whysz)
{
	int forced = e->backend == EG_BACKEND_NFT;
	char err[400];

	snprintf(err, sizeof(err), "%s", prior);
	if (!e->cg_root[0] || open_ctx(e, err, sizeof(err)) != ES_OK) {
		if (forced)
			snprintf(why, whysz, "nftables unavailable (%s)", err);
		else
			snprintf(why, whysz, "no enforcement backend: cgroup BPF "
				 "unavailable (%s); nftables unavailable (%s)", prior, err);
		e->unavail_reason = forced ? "NftablesUnavailable" :
			"EnforcementUnavailable";
		return ES_ERR_UNSUPPORTED;
	}
	e->unavailable[0] = '\0';
	es_log_info("egress", "enforcing with nftables", "table", TABLE, "cgroup2",
		    e->cg_root, "cgroup-bpf", forced ?
		    "not tried (egress-backend nftables)" : prior, NULL);
	if (es_egk_pinned(e->pin_dir) &&
	    es_egk_remove(NULL, e->pin_dir, err, sizeof(err)) != ES_OK)
		es_log_error("egress", "removing the pins of an earlier run", "error",
			     err, NULL);
	return ES_OK;
}

/* ---- cgroup ids to the paths nft takes ---- */

typedef struct cgw {
	const uint64_t *ids;
	size_t n, left;
	es_egnft_cgroup *out;   /* out[i] for ids[i]; level -1: not found */
	char prefix[600];       /* the cgroup v2 root relative to the base
				   ("" when it is the base); rel paths
				   ("/a/b", "" for the root) follow it */
} cgw;

static void cg_found(cgw *w, const char *abs, const char *rel, int level)
{
	uint64_t id;

	if (es_egcg_id(abs, &id, NULL, 0) != ES_OK)
		return;
	for (size_t i = 0; i < w->n; i++) {
		if (w->ids[i] != id || w->out[i].level >= 0)
			continue;
		if (w->prefix[0])
			snprintf(w->out[i].path, sizeof(w->out[i].path), "%s%s",
				 w->prefix, rel);
		else
			snprintf(w->out[i].path, sizeof(w->out[i].path), "%s",
				 rel[0] ? rel + 1 : ".");
		w->out[i].level = level;
		w->left--;
	}
}

static void cg_walk(cgw *w, const char *abs, const char *rel, int level)
{
	DIR *d;
	struct dirent *de;

	cg_found(w, abs, rel, level);
	if (level >= CG_MAX_DEPTH || !w->left || !(d = opendir(abs)))
		return;
	while (w->left && (de = readdir(d)) != NULL) {
		char cabs[4096], crel[4096];

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") ||
		    !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(cabs, sizeof(cabs), "%s/%s", abs, de->d_name) >=
			    sizeof(cabs) ||
		    (size_t)snprintf(crel, sizeof(crel), "%s/%s", rel, de->d_name) >=
			    sizeof(crel))
			continue;
		cg_walk(w, cabs, crel, level + 1);
	}
	closedir(d);
}

/* out[i] (level -1 when gone) for ids[i] under the cgroup v2 root. */
static void cg_paths(const char *root, const uint64_t *ids, size_t n,
		     es_egnft_cgroup *out)
{
	const size_t blen = strlen(ES_EGNFT_CGROUP_BASE);
	cgw w;

	memset(&w, 0, sizeof(w));
	w.ids = ids;
	w.n = w.left = n;
	w.out = out;
	for (size_t i = 0; i < n; i++)
		out[i].level = -1;
	if (!strcmp(root, ES_EGNFT_CGROUP_BASE))
		w.prefix[0] = '\0';
	else if (!strncmp(root, ES_EGNFT_CGROUP_BASE "/", blen + 1))
		snprintf(w.prefix, sizeof(w.prefix), "%s", root + blen + 1);
	else
		snprintf(w.prefix, sizeof(w.prefix), "../../..%s", root);
	if (n)
		cg_walk(&w, root, "", 0);
}

/* ---- enforcing ---- */

typedef struct plan {
	es_egnft_input *in;
	size_t n;
	es_egnft_cgroup *cgs;
} plan;

static void plan_free(plan *p)
{
	free(p->in);
	free(p->cgs);
	memset(p, 0, sizeof(*p));
}

/* The inputs of the enforced policies, targets resolved, counters 0. */
static es_err plan_build(es_egress *e, plan *pl, char *err, size_t errsz)
{
	size_t total = 0, off = 0;
	uint64_t *ids = NULL;
	es_err rc = ES_OK;

	memset(pl, 0, sizeof(*pl));
	if ((rc = egress__resolve_targets(e, err, errsz)) != ES_OK)
		return rc;
	for (size_t i = 0; i < e->npols; i++)
		if (e->pols[i].slot >= 0)
			total += e->pols[i].ncgids;
	pl->in = calloc(e->npols + 1, sizeof(*pl->in));
	pl->cgs = calloc(total + 1, sizeof(*pl->cgs));
	ids = calloc(total + 1, sizeof(*ids));
	if (!pl->in || !pl->cgs || !ids) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < e->npols; i++)
		for (size_t c = 0; e->pols[i].slot >= 0 && c < e->pols[i].ncgids; c++)
			ids[off++] = e->pols[i].cgids[c];
	cg_paths(e->cg_root, ids, total, pl->cgs);
	off = 0;
	for (size_t i = 0; i < e->npols; i++) {
		eg_pol *p = &e->pols[i];
		es_egnft_input *in = &pl->in[pl->n];
		size_t kept = 0;

		if (p->slot < 0)
			continue;
		in->name = p->name;
		in->uid = p->uid;
		in->generation = p->generation;
		in->spec = p->spec;
		in->cgroups = &pl->cgs[off];
		for (size_t c = 0; c < p->ncgids; c++)
			if (pl->cgs[off + c].level >= 0)
				pl->cgs[off + kept++] = pl->cgs[off + c];
		in->ncgroups = kept;
		off += p->ncgids;
		pl->n++;
	}
cleanup:
	free(ids);
	if (rc != ES_OK)
		plan_free(pl);
	return rc;
}

/* Counters of the policies that the kernel's table holds for their uid. */
static void seed(plan *pl, const cJSON *cur)
{
	char uid[64];

	for (size_t i = 0; i < pl->n; i++) {
		es_egnft_input *in = &pl->in[i];

		if (!cur || strcmp(es_egnft_uid(cur, in->name, uid, sizeof(uid)),
				   in->uid ? in->uid : ""))
			continue;
		in->packets = es_egnft_counter(cur, in->name, &in->bytes, NULL);
	}
}

/* After loading: the refusals counted before count as reported. */
static void adopt(es_egress *e, const cJSON *cur)
{
	char uid[64];
	time_t now = time(NULL);

	for (size_t i = 0; cur && i < e->npols; i++) {
		eg_pol *p = &e->pols[i];
		int found = 0;
		uint64_t c = es_egnft_counter(cur, p->name, NULL, &found);

		if (found && p->uid[0] &&
		    !strcmp(es_egnft_uid(cur, p->name, uid, sizeof(uid)), p->uid)) {
			p->reported = c;
			p->last_event = now;
		}
	}
}

static void check_drift(es_egnft *n, const cJSON *cur, char *drift, size_t sz)
{
	cJSON *norm;

	drift[0] = '\0';
	if (!n->ref)
		return;
	if (!cur) {
		snprintf(drift, sz, "nftables table " TABLE " missing");
		return;
	}
	norm = cJSON_Duplicate(cur, 1);
	if (norm && norm_listing(norm) == 0 && !cJSON_Compare(norm, n->ref, 1))
		snprintf(drift, sz, "nftables table " TABLE " edited: its chains, "
			 "rules or counters differ from what the agent wrote");
	cJSON_Delete(norm);
}

void es_egnft_enforce(es_egress *e, char *drift, size_t driftsz, int *ok,
		      char *err, size_t errsz)
{
	es_egnft *n = e->nft;
	cJSON *cur = NULL, *ref = NULL;
	char *want = NULL, *text = NULL;
	plan pl;

	memset(&pl, 0, sizeof(pl));
	*ok = 0;
	drift[0] = '\0';
	if (plan_build(e, &pl, err, errsz) != ES_OK ||
	    list_table(n->ctx, &cur, err, errsz) != ES_OK)
		goto cleanup;
	if (n->adopting)
		adopt(e, cur);
	n->adopting = 0;
	check_drift(n, cur, drift, driftsz);
	if (es_egnft_ruleset(pl.in, pl.n, &want, err, errsz) != ES_OK)
		goto cleanup;
	if (!drift[0] && cur && n->written && !strcmp(want, n->written)) {
		*ok = 1;
		goto cleanup;
	}
	seed(&pl, cur);
	if (es_egnft_ruleset(pl.in, pl.n, &text, err, errsz) != ES_OK ||
	    marker_write(e, err, errsz) != ES_OK ||
	    run(n->ctx, 0, text, NULL, err, errsz) != ES_OK)
		goto cleanup;
	free(n->written);
	n->written = want;
	want = NULL;
	cJSON_Delete(n->ref);
	n->ref = NULL;
	if (list_table(n->ctx, &ref, err, errsz) != ES_OK)
		goto cleanup;
	if (!ref || norm_listing(ref) != 0) {
		es_errf(ES_ERR_IO, err, errsz, "table " TABLE " not listed back "
			"after the write");
		cJSON_Delete(ref);
		goto cleanup;
	}
	n->ref = ref;
	*ok = 1;
cleanup:
	free(want);
	free(text);
	cJSON_Delete(cur);
	plan_free(&pl);
}

void es_egnft_poll(es_egress *e)
{
	const char *o;
	char err[300];

	cJSON_Delete(e->nft->counters);
	e->nft->counters = NULL;
	if (run(e->nft->ctx, 1, "list counters table " TABLE, &o, err,
		sizeof(err)) == ES_OK)
		es_json_parse(o, strlen(o), ES_JSON_MAX_DEPTH, &e->nft->counters,
			      err, sizeof(err));
}

uint64_t es_egnft_violations(es_egress *e, const char *name)
{
	return e->nft ? es_egnft_counter(e->nft->counters, name, NULL, NULL) : 0;
}

static const eg_pol *pol_of(const es_egress *e, const cJSON *entry)
{
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(entry, "uid");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(entry, "name");

	for (size_t i = 0; cJSON_IsString(name) && i < e->npols; i++)
		if (!strcmp(e->pols[i].name, name->valuestring) &&
		    (!cJSON_IsString(uid) || !strcmp(e->pols[i].uid, uid->valuestring)))
			return &e->pols[i];
	return NULL;
}

int es_egnft_annotate(es_egress *e, cJSON *objects)
{
	cJSON *cur = NULL, *entry;
	char err[300] = "";
	int ret = 0;

	if (list_table(e->nft->ctx, &cur, err, sizeof(err)) != ES_OK)
		es_log_warn("egress", "cannot list the nftables table", "error", err,
			    NULL);
	cJSON_ArrayForEach(entry, objects) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(entry, "kind");
		const eg_pol *p;
		cJSON *a;

		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "EgressPolicy"))
			continue;
		p = pol_of(e, entry);
		if (p && p->slot >= 0) {
			a = es_egnft_actual(cur, p->name, p->uid);
		} else if ((a = cJSON_CreateObject()) &&
			   (!cJSON_AddStringToObject(a, "backend", "nftables") ||
			    !cJSON_AddBoolToObject(a, "loaded", 0) ||
			    !cJSON_AddStringToObject(a, "reason", !p ? "not known to the "
						     "enforcer" : !p->spec ? "invalid spec" :
						     "no policy slot left"))) {
			cJSON_Delete(a);
			a = NULL;
		}
		if (!a) {
			ret = -1;
			break;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(entry, "actual");
		cJSON_AddItemToObject(entry, "actual", a);
	}
	cJSON_Delete(cur);
	return ret;
}

es_err es_egnft_remove(es_egress *e, char *err, size_t errsz)
{
	struct nft_ctx *c = e->nft ? e->nft->ctx : ctx_new();
	char p[640];
	es_err rc;

	if (!c)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "cannot create a "
			       "libnftables context (" ES_LIBNFTABLES " missing: "
			       "install the nftables package)");
	rc = run(c, 0, "add table " TABLE "\ndelete table " TABLE "\n", NULL, err,
		 errsz);
	if (!e->nft)
		ctx_free(c);
	if (rc != ES_OK)
		return rc;
	es_egnft_free(e->nft);
	e->nft = NULL;
	if (e->state_dir[0]) {
		marker_path(e, p, sizeof(p));
		if (unlink(p) != 0 && errno != ENOENT)
			return es_errf(ES_ERR_IO, err, errsz, "%s: %s", p, strerror(errno));
	}
	return ES_OK;
}

void es_egnft_free(es_egnft *n)
{
	if (!n)
		return;
	if (n->ctx)
		ctx_free(n->ctx);
	free(n->written);
	cJSON_Delete(n->ref);
	cJSON_Delete(n->counters);
	free(n);
}
