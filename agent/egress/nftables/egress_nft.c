/*
 * egress_nft.c - the nftables backend of the EgressPolicy enforcer
 * (es_egb_nft_ops, egress_backend.h; the table is egress_nft.h's):
 * libnftables, cgroup paths, drift, counters, actual state.
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

#include "egress/egress_backend.h"
#include "egress/egress_cgroup.h"
#include "es_json.h"
#include "es_log.h"

#define CG_MAX_DEPTH 64
#define TABLE "inet " ES_EGNFT_TABLE

/* The backend's state. */
typedef struct egnft {
	struct nft_ctx *ctx;
	char *written;     /* the ruleset last written, counters at 0 */
	cJSON *ref;        /* the table as listed right after that write,
			      normalized (norm_listing) */
	cJSON *counters;   /* the last counters listing (nft_poll) */
	char cg_root[512]; /* the cgroup v2 hierarchy it was opened on */
	char state_dir[512]; /* where the marker goes ("": nowhere) */
} egnft;

/*
 * libnftables, loaded with dlopen(3) the first time the nftables backend is
 * used: linked in, it and its dependencies (libnftnl, libmnl, libjansson,
 * libgmp, libxtables) cost every agent about 0.7 MiB of resident memory,
 * while the backend only runs where cgroup BPF is missing.
 */
#define ES_LIBNFTABLES "libnftables.so.1"
/* What to do when it cannot be loaded: a static agent (the musl build,
 * ES_STATIC_AGENT) cannot load any library, installing it does not help. */
#ifdef ES_STATIC_AGENT
#define ES_LIBNFTABLES_MISSING ES_LIBNFTABLES " cannot be loaded by this " \
	"static agent (no dlopen): the nftables backend is not available"
#else
#define ES_LIBNFTABLES_MISSING ES_LIBNFTABLES " cannot be loaded (install the " \
	"nftables package)"
#endif

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

static void marker_path(const char *state_dir, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s/" ES_EGNFT_MARKER, state_dir);
}

static int nft_leftover(const es_egb_env *env)
{
	char p[640];
	struct stat st;

	if (!env->state_dir[0])
		return 0;
	marker_path(env->state_dir, p, sizeof(p));
	return stat(p, &st) == 0;
}

/* Creates the marker, durably, before the first write of the table. */
static es_err marker_write(const egnft *n, char *err, size_t errsz)
{
	static const char text[] = "table " TABLE " written by this agent\n";
	char p[640];
	int fd, dfd, ok;

	if (!n->state_dir[0])
		return ES_OK;
	marker_path(n->state_dir, p, sizeof(p));
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", p, strerror(errno));
	ok = write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1) &&
	     fsync(fd) == 0;
	close(fd);
	dfd = open(n->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok = ok && dfd >= 0 && fsync(dfd) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", p, strerror(errno));
	return ES_OK;
}

static void nft_free(void *p)
{
	egnft *n = p;

	if (!n)
		return;
	if (n->ctx)
		ctx_free(n->ctx);
	free(n->written);
	cJSON_Delete(n->ref);
	cJSON_Delete(n->counters);
	free(n);
}

/* Needs a libnftables context that can talk to the kernel (`list tables`). */
static es_err nft_open(const es_egb_env *env, void **out, char *err,
		       size_t errsz)
{
	egnft *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (!(n->ctx = ctx_new())) {
		free(n);
		return es_errf(lib.h ? ES_ERR_NOMEM : ES_ERR_UNSUPPORTED, err, errsz,
			       lib.h ? "cannot create a libnftables context" :
			       ES_LIBNFTABLES_MISSING);
	}
	if (run(n->ctx, 0, "list tables", NULL, err, errsz) != ES_OK) {
		nft_free(n);
		return ES_ERR_UNSUPPORTED;
	}
	snprintf(n->cg_root, sizeof(n->cg_root), "%s", env->cg_root);
	snprintf(n->state_dir, sizeof(n->state_dir), "%s", env->state_dir);
	es_log_info("egress", "enforcing with nftables", "table", TABLE, "cgroup2",
		    env->cg_root, "cgroup-bpf", env->forced ?
		    "not tried (egress-backend nftables)" : env->prior, NULL);
	*out = n;
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

/* The inputs of the n enforced policies in[] (targets resolved), with
 * their cgroups as nft names them, counters 0. */
static es_err plan_build(const egnft *nf, const es_eg_input *in, size_t n,
			 plan *pl, char *err, size_t errsz)
{
	size_t total = 0, off = 0;
	uint64_t *ids = NULL;
	es_err rc = ES_OK;

	memset(pl, 0, sizeof(*pl));
	for (size_t i = 0; i < n; i++)
		total += in[i].ncgids;
	pl->in = calloc(n + 1, sizeof(*pl->in));
	pl->cgs = calloc(total + 1, sizeof(*pl->cgs));
	ids = calloc(total + 1, sizeof(*ids));
	if (!pl->in || !pl->cgs || !ids) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < in[i].ncgids; c++)
			ids[off++] = in[i].cgids[c];
	cg_paths(nf->cg_root, ids, total, pl->cgs);
	off = 0;
	for (size_t i = 0; i < n; i++) {
		const es_eg_input *p = &in[i];
		es_egnft_input *ni = &pl->in[pl->n];
		size_t kept = 0;

		ni->name = p->name;
		ni->uid = p->uid;
		ni->generation = p->generation;
		ni->spec = p->spec;
		ni->cgroups = &pl->cgs[off];
		for (size_t c = 0; c < p->ncgids; c++)
			if (pl->cgs[off + c].level >= 0)
				pl->cgs[off + kept++] = pl->cgs[off + c];
		ni->ncgroups = kept;
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

/* After loading: what the table holds counted for each policy of the
 * same uid. */
static es_err nft_adopt_counts(void *p, const es_eg_input *in, size_t n,
			       uint64_t *count, char *err, size_t errsz)
{
	egnft *nf = p;
	cJSON *cur = NULL;
	char uid[64];
	es_err rc = list_table(nf->ctx, &cur, err, errsz);

	if (rc != ES_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		int found = 0;
		uint64_t c = cur ? es_egnft_counter(cur, in[i].name, NULL, &found) : 0;

		count[i] = found && in[i].uid[0] &&
			   !strcmp(es_egnft_uid(cur, in[i].name, uid, sizeof(uid)),
				   in[i].uid) ? c : ES_EGB_NOT_HELD;
	}
	cJSON_Delete(cur);
	return ES_OK;
}

static void check_drift(const egnft *n, const cJSON *cur, char *drift, size_t sz)
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

/* Lists the table, reports in drift a table missing or changed since the
 * last write, and writes the ruleset when it differs from the last one
 * written or drifted (counters carried over). */
static void nft_apply(void *p, const es_eg_input *in, size_t n_in, char *drift,
		      size_t driftsz, int *ok, char *err, size_t errsz)
{
	egnft *n = p;
	cJSON *cur = NULL, *ref = NULL;
	char *want = NULL, *text = NULL;
	plan pl;

	memset(&pl, 0, sizeof(pl));
	*ok = 0;
	drift[0] = '\0';
	if (plan_build(n, in, n_in, &pl, err, errsz) != ES_OK ||
	    list_table(n->ctx, &cur, err, errsz) != ES_OK)
		goto cleanup;
	check_drift(n, cur, drift, driftsz);
	if (es_egnft_ruleset(pl.in, pl.n, &want, err, errsz) != ES_OK)
		goto cleanup;
	if (!drift[0] && cur && n->written && !strcmp(want, n->written)) {
		*ok = 1;
		goto cleanup;
	}
	seed(&pl, cur);
	if (es_egnft_ruleset(pl.in, pl.n, &text, err, errsz) != ES_OK ||
	    marker_write(n, err, errsz) != ES_OK ||
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

/* Lists the counters once per tick (nft_violations). */
static void nft_poll(void *p)
{
	egnft *n = p;
	const char *o;
	char err[300];

	cJSON_Delete(n->counters);
	n->counters = NULL;
	if (run(n->ctx, 1, "list counters table " TABLE, &o, err,
		sizeof(err)) == ES_OK)
		es_json_parse(o, strlen(o), ES_JSON_MAX_DEPTH, &n->counters,
			      err, sizeof(err));
}

/* Refusals counted for the policy as of the last nft_poll. */
static uint64_t nft_violations(void *p, const es_eg_input *pol)
{
	return es_egnft_counter(((egnft *)p)->counters, pol->name, NULL, NULL);
}

static void nft_describe(const es_eg_input *p, char *where, size_t sz)
{
	snprintf(where, sz, "table " TABLE ", chain p_%s", p->name);
}

static es_err nft_actual(void *p, const es_eg_input *const *pol, size_t n,
			 cJSON **out, char *err, size_t errsz)
{
	egnft *nf = p;
	cJSON *cur = NULL;
	es_err rc = ES_OK;

	if (list_table(nf->ctx, &cur, err, errsz) != ES_OK)
		es_log_warn("egress", "cannot list the nftables table", "error", err,
			    NULL);
	for (size_t i = 0; rc == ES_OK && i < n; i++)
		if (pol[i] && !(out[i] = es_egnft_actual(cur, pol[i]->name, pol[i]->uid)))
			rc = ES_ERR_NOMEM;
	cJSON_Delete(cur);
	return rc;
}

/* Deletes the table (when there) and the marker, with the state's context
 * or, without state, a new one. */
static es_err nft_remove(void **p, const es_egb_env *env, char *err,
			 size_t errsz)
{
	egnft *n = *p;
	struct nft_ctx *c = n ? n->ctx : ctx_new();
	char path[640];
	es_err rc;

	if (!c)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       lib.h ? "cannot create a libnftables context" :
			       ES_LIBNFTABLES_MISSING);
	rc = run(c, 0, "add table " TABLE "\ndelete table " TABLE "\n", NULL, err,
		 errsz);
	if (!n)
		ctx_free(c);
	if (rc != ES_OK)
		return rc;
	nft_free(n);
	*p = NULL;
	if (env->state_dir[0]) {
		marker_path(env->state_dir, path, sizeof(path));
		if (unlink(path) != 0 && errno != ENOENT)
			return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path,
				       strerror(errno));
	}
	return ES_OK;
}

const es_egress_backend_ops es_egb_nft_ops = {
	.name = "nftables",
	.unavailable = "nftables unavailable",
	.unavailable_reason = "NftablesUnavailable",
	.unenforced = "nftables",
	.removed = "no EgressPolicy remains: the nftables table inet "
		   ES_EGNFT_TABLE " is deleted",
	.leftover = nft_leftover,
	.open = nft_open,
	.adopt_counts = nft_adopt_counts,
	.apply = nft_apply,
	.poll = nft_poll,
	.violations = nft_violations,
	.describe = nft_describe,
	.actual = nft_actual,
	.remove = nft_remove,
	.free = nft_free,
};
