/*
 * egress_nft_text.c - the nft script of the EgressPolicy table and the
 * policies read back from its JSON listing (see egress_nft.h).
 */
#define _GNU_SOURCE
#include "egress/nftables/egress_nft.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_json.h"

#define COMMENT_MAX 128 /* nftables' limit on a rule comment */
#define TCP_SYN "tcp flags & (syn | ack) == syn"
#define REJECT "reject with icmpx admin-prohibited"

static int name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 253)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n;
}

static int uid_ok(const char *s)
{
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789-") == strlen(s) && strlen(s) < 64;
}

/* A cgroup path nft can take between double quotes. */
static int path_ok(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* One kernel rule: the destination, protocol (TCP or UDP), port range
 * (pr: an index of r->ports, or -1 for every port), verdict. */
static void put_rule(FILE *f, const es_egnft_input *p, const es_egress_rule *r,
		     int pr, es_egress_proto proto, const char *tag, int any)
{
	char cidr[64];
	int tcp = proto == ES_EGRESS_PROTO_TCP;

	fprintf(f, "\t\t%s daddr %s", r->cidr.family == 4 ? "ip" : "ip6",
		es_egress_cidr_format(&r->cidr, cidr, sizeof(cidr)));
	if (pr >= 0) {
		fprintf(f, " %s dport %u", tcp ? "tcp" : "udp", r->ports[pr].from);
		if (r->ports[pr].to != r->ports[pr].from)
			fprintf(f, "-%u", r->ports[pr].to);
	} else if (!tcp) {
		fputs(" meta l4proto udp", f);
	}
	if (tcp)
		fputs(" " TCP_SYN, f);
	if (p->spec->action == ES_EGRESS_ALLOW)
		fputs(" return", f);
	else
		fprintf(f, " counter name \"p_%s\" %s", p->name, tcp ? REJECT : "drop");
	fprintf(f, " comment \"%s%s\"\n", tag, any ? " any" : "");
}

static void put_policy_chain(FILE *f, const es_egnft_input *p, const char *tag)
{
	const es_egress_spec *s = p->spec;

	fprintf(f, "\tchain p_%s {\n", p->name);
	for (size_t i = 0; i < s->nrules; i++) {
		const es_egress_rule *r = &s->rules[i];
		int any = r->proto == ES_EGRESS_PROTO_ANY;

		for (int pr = r->nports ? 0 : -1; pr < (int)r->nports; pr++) {
			if (r->proto != ES_EGRESS_PROTO_UDP)
				put_rule(f, p, r, pr, ES_EGRESS_PROTO_TCP, tag, any);
			if (r->proto != ES_EGRESS_PROTO_TCP)
				put_rule(f, p, r, pr, ES_EGRESS_PROTO_UDP, tag, any);
			if (pr < 0)
				break;
		}
	}
	if (s->action == ES_EGRESS_ALLOW) {
		fprintf(f, "\t\t" TCP_SYN " counter name \"p_%s\" " REJECT
			" comment \"%s rest\"\n", p->name, tag);
		fprintf(f, "\t\tmeta l4proto udp counter name \"p_%s\" drop "
			"comment \"%s rest\"\n", p->name, tag);
	}
	fputs("\t}\n", f);
}

/* The comment of p's rules: "<uid or -> g<generation> <action>"; returns
 * its length. */
static size_t make_tag(const es_egnft_input *p, char *tag, size_t tagsz)
{
	int n = snprintf(tag, tagsz, "%s g%" PRId64 " %s",
			 p->uid && *p->uid ? p->uid : "-", p->generation,
			 p->spec->action == ES_EGRESS_ALLOW ? "Allow" : "Deny");

	return n < 0 ? 0 : (size_t)n;
}

static es_err check_input(const es_egnft_input *p, char *err, size_t errsz)
{
	const char *uid = p->uid && *p->uid ? p->uid : "-";
	char tag[256];

	if (!name_ok(p->name))
		return es_errf(ES_ERR_INVAL, err, errsz, "policy name \"%s\" cannot "
			       "name an nftables chain", p->name ? p->name : "");
	if (!uid_ok(uid))
		return es_errf(ES_ERR_INVAL, err, errsz, "policy %s: uid \"%s\" "
			       "cannot be written in an nftables comment", p->name, uid);
	if (make_tag(p, tag, sizeof(tag)) + strlen(" rest") > COMMENT_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz, "policy %s: rule comment over "
			       "%d bytes", p->name, COMMENT_MAX);
	if (p->spec->targets.node)
		return ES_OK;
	for (size_t c = 0; c < p->ncgroups; c++)
		if (!path_ok(p->cgroups[c].path) || p->cgroups[c].level < 0)
			return es_errf(ES_ERR_INVAL, err, errsz, "policy %s: cgroup "
				       "\"%s\" cannot be written in nftables syntax",
				       p->name, p->cgroups[c].path);
	return ES_OK;
}

es_err es_egnft_ruleset(const es_egnft_input *in, size_t n, char **out,
			char *err, size_t errsz)
{
	char *buf = NULL, tag[256];
	size_t len = 0;
	FILE *f;
	es_err rc = ES_OK;

	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		rc = check_input(&in[i], err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	f = open_memstream(&buf, &len);
	if (!f)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	fprintf(f, "add table inet " ES_EGNFT_TABLE "\n"
		"delete table inet " ES_EGNFT_TABLE "\n"
		"table inet " ES_EGNFT_TABLE " {\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\tcounter p_%s {\n\t\tpackets %" PRIu64 " bytes %" PRIu64
			"\n\t}\n", in[i].name, in[i].packets, in[i].bytes);
	fputs("\tchain " ES_EGNFT_CHAIN " {\n"
	      "\t\ttype filter hook output priority 0; policy accept;\n", f);
	for (size_t i = 0; i < n; i++) {
		const es_egnft_input *p = &in[i];

		make_tag(p, tag, sizeof(tag));
		if (p->spec->targets.node) {
			fprintf(f, "\t\tjump p_%s comment \"%s\"\n", p->name, tag);
			continue;
		}
		for (size_t c = 0; c < p->ncgroups; c++)
			fprintf(f, "\t\tsocket cgroupv2 level %d \"%s\" jump p_%s "
				"comment \"%s\"\n", p->cgroups[c].level,
				p->cgroups[c].path, p->name, tag);
	}
	fputs("\t}\n", f);
	for (size_t i = 0; i < n; i++) {
		make_tag(&in[i], tag, sizeof(tag));
		put_policy_chain(f, &in[i], tag);
	}
	fputs("}\n", f);
	if (ferror(f))
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (fclose(f) != 0 && rc == ES_OK)
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (rc != ES_OK) {
		free(buf);
		return rc;
	}
	*out = buf;
	return ES_OK;
}

/* ---- reading the listing back ---- */

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The element of kind ("rule", "counter", ...) of it, an element of the
 * listing's "nftables" array, or NULL. */
static const cJSON *item(const cJSON *it, const char *kind)
{
	return cJSON_GetObjectItemCaseSensitive(it, kind);
}

static const cJSON *items(const cJSON *listing)
{
	return listing ? cJSON_GetObjectItemCaseSensitive(listing, "nftables") : NULL;
}

uint64_t es_egnft_counter(const cJSON *listing, const char *name,
			  uint64_t *bytes, int *found)
{
	const cJSON *it;
	char want[300];

	snprintf(want, sizeof(want), "p_%s", name);
	if (found)
		*found = 0;
	if (bytes)
		*bytes = 0;
	cJSON_ArrayForEach(it, items(listing)) {
		const cJSON *c = item(it, "counter");
		const cJSON *pk = cJSON_GetObjectItemCaseSensitive(c, "packets");
		const cJSON *by = cJSON_GetObjectItemCaseSensitive(c, "bytes");
		const char *n = str_of(c, "name"), *t = str_of(c, "table");

		if (!c || !n || strcmp(n, want) || !t || strcmp(t, ES_EGNFT_TABLE))
			continue;
		if (found)
			*found = 1;
		if (bytes && cJSON_IsNumber(by) && by->valuedouble > 0)
			*bytes = (uint64_t)by->valuedouble;
		return cJSON_IsNumber(pk) && pk->valuedouble > 0 ?
			(uint64_t)pk->valuedouble : 0;
	}
	return 0;
}

/* The jump target of rule r, or NULL. */
static const char *jump_of(const cJSON *r)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "expr")) {
		const cJSON *j = cJSON_GetObjectItemCaseSensitive(x, "jump");

		if (j)
			return str_of(j, "target");
	}
	return NULL;
}

/* 1 when rule r belongs to policy chain want ("p_<name>"): in it, or a jump
 * to it from the base chain. */
static int rule_of(const cJSON *r, const char *want)
{
	const char *chain = str_of(r, "chain"), *t = str_of(r, "table");
	const char *j;

	if (!chain || !t || strcmp(t, ES_EGNFT_TABLE))
		return 0;
	if (!strcmp(chain, want))
		return 1;
	j = jump_of(r);
	return !strcmp(chain, ES_EGNFT_CHAIN) && j && !strcmp(j, want);
}

char *es_egnft_uid(const cJSON *listing, const char *name, char *buf,
		   size_t sz)
{
	const cJSON *it;
	char want[300];

	snprintf(want, sizeof(want), "p_%s", name);
	buf[0] = '\0';
	cJSON_ArrayForEach(it, items(listing)) {
		const cJSON *r = item(it, "rule");
		const char *c = str_of(r, "comment");

		if (!r || !c || !rule_of(r, want))
			continue;
		snprintf(buf, sz, "%.*s", (int)strcspn(c, " "), c);
		if (!strcmp(buf, "-"))
			buf[0] = '\0';
		return buf;
	}
	return buf;
}

/* The parts of a policy-chain rule, from its match expressions. */
typedef struct kr {
	char cidr[64];
	const char *proto;      /* "TCP", "UDP" or NULL */
	const cJSON *ports;     /* the dport match's right side, or NULL */
	int any, rest;
} kr;

static void cidr_of(const cJSON *right, const char *fam, char *buf, size_t sz)
{
	const cJSON *pf = cJSON_GetObjectItemCaseSensitive(right, "prefix");
	const cJSON *len = cJSON_GetObjectItemCaseSensitive(pf, "len");

	if (cJSON_IsString(right))
		snprintf(buf, sz, "%s/%s", right->valuestring,
			 !strcmp(fam, "ip") ? "32" : "128");
	else if (str_of(pf, "addr") && cJSON_IsNumber(len))
		snprintf(buf, sz, "%s/%d", str_of(pf, "addr"), len->valueint);
}

static void parse_rule(const cJSON *r, kr *k)
{
	const cJSON *x;
	const char *c = str_of(r, "comment");

	memset(k, 0, sizeof(*k));
	if (c) {
		size_t n = strlen(c);

		k->any = n > 4 && !strcmp(c + n - 4, " any");
		k->rest = n > 5 && !strcmp(c + n - 5, " rest");
	}
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "expr")) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "match");
		const cJSON *left = cJSON_GetObjectItemCaseSensitive(m, "left");
		const cJSON *right = cJSON_GetObjectItemCaseSensitive(m, "right");
		const cJSON *and = cJSON_GetObjectItemCaseSensitive(left, "&");
		const cJSON *pl = cJSON_GetObjectItemCaseSensitive(
			and ? cJSON_GetArrayItem(and, 0) : left, "payload");
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(left, "meta");
		const char *proto = str_of(pl, "protocol"), *field = str_of(pl, "field");

		if (!m)
			continue;
		if (proto && field && !strcmp(field, "daddr") &&
		    (!strcmp(proto, "ip") || !strcmp(proto, "ip6")))
			cidr_of(right, proto, k->cidr, sizeof(k->cidr));
		else if (proto && !strcmp(proto, "tcp"))
			k->proto = "TCP";
		else if (proto && !strcmp(proto, "udp"))
			k->proto = "UDP";
		else if (meta && str_of(meta, "key") && !strcmp(str_of(meta, "key"), "l4proto") &&
			 cJSON_IsString(right))
			k->proto = !strcmp(right->valuestring, "tcp") ? "TCP" :
				   !strcmp(right->valuestring, "udp") ? "UDP" : NULL;
		if (proto && field && !strcmp(field, "dport"))
			k->ports = right;
	}
}

static int add_range(cJSON *ports, const cJSON *v)
{
	const cJSON *rg = cJSON_GetObjectItemCaseSensitive(v, "range");
	cJSON *o;
	double from, to;

	if (cJSON_IsNumber(v)) {
		from = to = v->valuedouble;
	} else if (cJSON_GetArraySize(rg) == 2 &&
		   cJSON_IsNumber(cJSON_GetArrayItem(rg, 0)) &&
		   cJSON_IsNumber(cJSON_GetArrayItem(rg, 1))) {
		from = cJSON_GetArrayItem(rg, 0)->valuedouble;
		to = cJSON_GetArrayItem(rg, 1)->valuedouble;
	} else {
		return 0;
	}
	return (o = cJSON_CreateObject()) && cJSON_AddItemToArray(ports, o) &&
	       es_json_add_int(o, "from", (int64_t)from) &&
	       es_json_add_int(o, "to", (int64_t)to) ? 0 : -1;
}

/* A spec-shaped rule {cidr, protocol, ports?} of k. */
static cJSON *spec_rule(const kr *k, const char *proto)
{
	const cJSON *set = cJSON_GetObjectItemCaseSensitive(k->ports, "set");
	const cJSON *v;
	cJSON *o = cJSON_CreateObject(), *ports;

	if (!o || !cJSON_AddStringToObject(o, "cidr", k->cidr) ||
	    !cJSON_AddStringToObject(o, "protocol", proto))
		goto fail;
	if (!k->ports)
		return o;
	if (!(ports = cJSON_AddArrayToObject(o, "ports")))
		goto fail;
	if (set) {
		cJSON_ArrayForEach(v, set)
			if (add_range(ports, v))
				goto fail;
	} else if (add_range(ports, k->ports)) {
		goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* The rules of chain want, in the spec's shape, into arr. 0 or -1. */
static int read_rules(const cJSON *listing, const char *want, cJSON *arr)
{
	const cJSON *it, *it2;

	cJSON_ArrayForEach(it, items(listing)) {
		const cJSON *r = item(it, "rule");
		const char *chain = str_of(r, "chain");
		const char *proto;
		cJSON *o;
		kr k, k2;

		if (!r || !chain || strcmp(chain, want) || !rule_of(r, want))
			continue;
		parse_rule(r, &k);
		if (k.rest || !k.cidr[0] || !k.proto)
			continue;
		proto = k.proto;
		if (k.any) {
			int paired = 0, first = 1;

			/* The pair is reported once, at its first rule. */
			cJSON_ArrayForEach(it2, items(listing)) {
				const cJSON *r2 = item(it2, "rule");

				if (!r2 || r2 == r || !rule_of(r2, want) ||
				    strcmp(str_of(r2, "chain"), want))
					continue;
				parse_rule(r2, &k2);
				if (!k2.any || !k2.proto || !strcmp(k2.proto, k.proto) ||
				    strcmp(k2.cidr, k.cidr) ||
				    (k.ports || k2.ports ?
				     !cJSON_Compare(k.ports, k2.ports, 1) : 0))
					continue;
				paired = 1;
				first = !strcmp(k.proto, "TCP");
			}
			if (paired && !first)
				continue;
			if (paired)
				proto = "Any";
		}
		if (!(o = spec_rule(&k, proto)) || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return -1;
		}
	}
	return 0;
}

/* Generation and action from a comment "<uid> g<gen> <action>...". */
static int parse_tag(const char *c, int64_t *gen, char *action, size_t asz)
{
	const char *g = strchr(c, ' ');
	char *end;

	if (!g || g[1] != 'g')
		return -1;
	*gen = strtoll(g + 2, &end, 10);
	if (*end != ' ')
		return -1;
	snprintf(action, asz, "%.*s", (int)strcspn(end + 1, " "), end + 1);
	return 0;
}

cJSON *es_egnft_actual(const cJSON *listing, const char *name,
		       const char *uid)
{
	const cJSON *it;
	char want[300], kuid[64], action[16] = "";
	cJSON *a = cJSON_CreateObject(), *rules;
	int64_t gen = 0, targets = 0;
	int loaded, node = 0, tagged = 0;

	snprintf(want, sizeof(want), "p_%s", name);
	es_egnft_uid(listing, name, kuid, sizeof(kuid));
	loaded = listing && (!uid || !*uid || !strcmp(kuid, uid)) &&
		 (kuid[0] || !uid || !*uid);
	if (!a || !cJSON_AddStringToObject(a, "backend", "nftables") ||
	    !cJSON_AddBoolToObject(a, "loaded", loaded) ||
	    !cJSON_AddStringToObject(a, "table", "inet " ES_EGNFT_TABLE) ||
	    !cJSON_AddStringToObject(a, "chain", want))
		goto fail;
	if (!loaded)
		return a;
	cJSON_ArrayForEach(it, items(listing)) {
		const cJSON *r = item(it, "rule");
		const char *c = str_of(r, "comment"), *chain = str_of(r, "chain");
		const cJSON *x;
		int cg = 0;

		if (!r || !rule_of(r, want))
			continue;
		if (!tagged && c && parse_tag(c, &gen, action, sizeof(action)) == 0)
			tagged = 1;
		if (strcmp(chain, ES_EGNFT_CHAIN))
			continue;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "expr")) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "match");
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(m, "left"), "socket");

			if (s && str_of(s, "key") && !strcmp(str_of(s, "key"), "cgroupv2"))
				cg = 1;
		}
		if (cg)
			targets++;
		else
			node = 1;
	}
	if (tagged && (!es_json_add_int(a, "generation", gen) ||
		       !cJSON_AddStringToObject(a, "action", action)))
		goto fail;
	if (!(rules = cJSON_AddArrayToObject(a, "rules")) ||
	    read_rules(listing, want, rules) ||
	    !cJSON_AddBoolToObject(a, "nodeWide", node) ||
	    !es_json_add_int(a, "targetCgroups", targets) ||
	    !es_json_add_int(a, "violations",
			     (int64_t)es_egnft_counter(listing, name, NULL, NULL)))
		goto fail;
	return a;
fail:
	cJSON_Delete(a);
	return NULL;
}
