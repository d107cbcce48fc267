/*
 * es_egress.c - EgressPolicy spec parsing, validation and the comparison
 * with the actual kernel state (see es_egress.h).
 */
#include "es_egress.h"
#include "es_json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

es_err es_egress_cidr_parse(const char *s, es_egress_cidr *out, char *err,
			    size_t errsz)
{
	char addr[64];
	const char *slash;
	size_t alen;
	int bits, i;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return es_errf(ES_ERR_INVAL, err, errsz, "empty CIDR");
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof(addr))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "\"%.80s\" is not a CIDR (expected 10.0.0.0/8 or "
			       "2001:db8::/32)", s);
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, out->addr) == 1) {
		out->family = 4;
		bits = 32;
	} else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
		static const unsigned char v4mapped[12] = {
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		/* Sockets see IPv4 peers of dual-stack sockets as IPv4
		 * (connect4/sendmsg4), so an IPv4-mapped CIDR (RFC 4291
		 * section 2.5.5.2) would never match: ask for the IPv4 form. */
		if (!memcmp(out->addr, v4mapped, sizeof(v4mapped)))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "\"%.80s\" is an IPv4-mapped IPv6 address: "
				       "write the IPv4 CIDR (e.g. 10.0.0.0/8)", s);
		out->family = 6;
		bits = 128;
	} else {
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "\"%.80s\" is not an IPv4 or IPv6 address", addr);
	}
	out->prefix = bits;
	if (slash) {
		const char *p = slash + 1;
		long v = 0;

		if (!*p || strlen(p) > 3)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "\"%.80s\": bad prefix length", s);
		for (; *p; p++) {
			if (!isdigit((unsigned char)*p))
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "\"%.80s\": bad prefix length", s);
			v = v * 10 + (*p - '0');
		}
		if (v > bits)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "\"%.80s\": prefix length over %d", s, bits);
		out->prefix = (int)v;
	}
	for (i = out->prefix; i < bits; i++)
		if (out->addr[i / 8] & (0x80u >> (i % 8)))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "\"%.80s\" has host bits set (the address must "
				       "be the network's)", s);
	return ES_OK;
}

char *es_egress_cidr_format(const es_egress_cidr *c, char *buf, size_t sz)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, a, sizeof(a));
	snprintf(buf, sz, "%s/%d", a, c->prefix);
	return buf;
}

int es_egress_cidr_contains(const es_egress_cidr *outer,
			    const es_egress_cidr *inner)
{
	int i;

	if (outer->family != inner->family || outer->prefix > inner->prefix)
		return 0;
	for (i = 0; i < outer->prefix; i++) {
		unsigned m = 0x80u >> (i % 8);

		if ((outer->addr[i / 8] & m) != (inner->addr[i / 8] & m))
			return 0;
	}
	return 1;
}

static int parse_port_num(const char *s, const char *end, long *v)
{
	*v = 0;
	if (s == end || end - s > 5)
		return -1;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		*v = *v * 10 + (*s - '0');
	}
	return 0;
}

/* An integer of any size a port check can then refuse (1e999 or 2^64 are
 * not integers here: es_json_int_value checks before converting). */
static int int_value(const cJSON *v, long *out)
{
	int64_t n;

	if (es_json_int_value(v, -ES_JSON_MAX_INT, ES_JSON_MAX_INT, &n) != 0)
		return -1;
	*out = (long)n;
	return 0;
}

es_err es_egress_range_parse(const cJSON *v, es_egress_range *out, char *err,
			     size_t errsz)
{
	long from = 0, to = 0;

	if (cJSON_IsNumber(v)) {
		if (int_value(v, &from))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "a port must be an integer");
		to = from;
	} else if (cJSON_IsString(v)) {
		const char *s = v->valuestring, *dash = strchr(s, '-');
		const char *end = s + strlen(s);

		if (parse_port_num(s, dash ? dash : end, &from) ||
		    (dash && parse_port_num(dash + 1, end, &to)))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "\"%.40s\" is not a port or a range FROM-TO", s);
		if (!dash)
			to = from;
	} else if (cJSON_IsObject(v)) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, "from");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "to");
		const cJSON *m;

		cJSON_ArrayForEach(m, v)
			if (!m->string || (strcmp(m->string, "from") &&
					   strcmp(m->string, "to")))
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "%.40s: unknown member (expected from, to)",
					       m->string ? m->string : "");
		if (!f || int_value(f, &from))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "from: expected an integer port");
		if (t && int_value(t, &to))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "to: expected an integer port");
		if (!t)
			to = from;
	} else {
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "expected a port, \"FROM-TO\" or {from, to}");
	}
	if (from < 1 || from > 65535 || to < 1 || to > 65535)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "ports must be in 1..65535 (got %ld-%ld)", from, to);
	if (from > to)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "range %ld-%ld: from is above to", from, to);
	out->from = (uint16_t)from;
	out->to = (uint16_t)to;
	return ES_OK;
}

static int member_known(const char *name, const char *const *known, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (name && strcmp(name, known[i]) == 0)
			return 1;
	return 0;
}

static es_err parse_rule(const cJSON *r, int idx, es_egress_rule *out,
			 char *err, size_t errsz)
{
	static const char *const known[] = { "cidr", "protocol", "ports" };
	const cJSON *m, *cidr, *proto, *ports;
	char why[200];
	int i = 0;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(r))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.rules[%d]: expected an object", idx);
	cJSON_ArrayForEach(m, r)
		if (!member_known(m->string, known, 3))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.rules[%d].%.80s: unknown member (expected "
				       "cidr, protocol, ports)", idx,
				       m->string ? m->string : "");
	cidr = cJSON_GetObjectItemCaseSensitive(r, "cidr");
	if (!cJSON_IsString(cidr))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.rules[%d].cidr: required, a string such as "
			       "\"10.0.0.0/8\" or \"2001:db8::/32\"", idx);
	if (es_egress_cidr_parse(cidr->valuestring, &out->cidr, why,
				 sizeof(why)) != ES_OK)
		return es_errf(ES_ERR_INVAL, err, errsz, "spec.rules[%d].cidr: %s",
			       idx, why);
	proto = cJSON_GetObjectItemCaseSensitive(r, "protocol");
	out->proto = ES_EGRESS_PROTO_ANY;
	if (proto) {
		const char *p = cJSON_IsString(proto) ? proto->valuestring : "";

		if (!strcmp(p, "TCP"))
			out->proto = ES_EGRESS_PROTO_TCP;
		else if (!strcmp(p, "UDP"))
			out->proto = ES_EGRESS_PROTO_UDP;
		else if (strcmp(p, "Any"))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.rules[%d].protocol: must be TCP, UDP or Any",
				       idx);
	}
	ports = cJSON_GetObjectItemCaseSensitive(r, "ports");
	if (!ports)
		return ES_OK;
	if (!cJSON_IsArray(ports))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.rules[%d].ports: expected an array", idx);
	if (cJSON_GetArraySize(ports) > ES_EGRESS_PORTS_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.rules[%d].ports: at most %d entries", idx,
			       ES_EGRESS_PORTS_MAX);
	cJSON_ArrayForEach(m, ports) {
		if (es_egress_range_parse(m, &out->ports[i], why, sizeof(why)) != ES_OK)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.rules[%d].ports[%d]: %s", idx, i, why);
		i++;
	}
	out->nports = (size_t)i;
	return ES_OK;
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return 0;
	return 1;
}

static int uuid_valid(const char *s)
{
	if (strlen(s) != 36)
		return 0;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!is_hex(s + i, 1)) {
			return 0;
		}
	}
	return 1;
}

/* Checks the value of one target member and copies it into dst. */
static es_err check_target(const char *name, const cJSON *v, char *dst,
			   char *err, size_t errsz)
{
	const char *s, *p;
	size_t n;

	if (!cJSON_IsString(v) || !*v->valuestring)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.targets.%s: expected a non-empty string", name);
	s = v->valuestring;
	n = strlen(s);
	if (n >= ES_EGRESS_TARGET_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.targets.%s: longer than %d bytes", name,
			       ES_EGRESS_TARGET_MAX - 1);
	for (p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.targets.%s: control character", name);
	if (!strcmp(name, "cgroupPathPrefix")) {
		if (strstr(s, "/../") || !strncmp(s, "../", 3) ||
		    (n >= 3 && !strcmp(s + n - 3, "/..")) || !strcmp(s, ".."))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.targets.cgroupPathPrefix: \"..\" is not "
				       "allowed (a path in the cgroup v2 hierarchy)");
	} else if (strchr(s, '/') && strcmp(name, "containerID")) {
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.targets.%s: must not contain '/'", name);
	}
	if (!strcmp(name, "podUID") && !uuid_valid(s))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.targets.podUID: \"%.60s\" is not a lower-case "
			       "RFC 4122 UUID", s);
	if (!strcmp(name, "containerID")) {
		const char *sep = strstr(s, "://");
		const char *id = sep ? sep + 3 : s;
		size_t idn = strlen(id);

		if (idn < 12 || idn > 64 || !is_hex(id, idn) ||
		    (sep && strchr(id, '/')))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.targets.containerID: \"%.80s\" is not 12..64 "
				       "lower-case hex digits (optionally after "
				       "<runtime>://)", s);
		s = id;
	}
	snprintf(dst, ES_EGRESS_TARGET_MAX, "%s", s);
	return ES_OK;
}

static es_err parse_targets(const cJSON *t, es_egress_targets *out, char *err,
			    size_t errsz)
{
	static const char *const known[] = { "cgroupPathPrefix", "systemdUnit",
					     "podUID", "containerID" };
	char *dst[4] = { out->cgroup_prefix, out->systemd_unit, out->pod_uid,
			 out->container_id };
	const cJSON *m;
	es_err rc;
	int any = 0;

	memset(out, 0, sizeof(*out));
	if (!t) {
		out->node = 1;
		return ES_OK;
	}
	if (!cJSON_IsObject(t))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.targets: expected an object");
	cJSON_ArrayForEach(m, t)
		if (!member_known(m->string, known, 4))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.targets.%.80s: unknown member (expected "
				       "cgroupPathPrefix, systemdUnit, podUID, "
				       "containerID)", m->string ? m->string : "");
	for (int i = 0; i < 4; i++) {
		m = cJSON_GetObjectItemCaseSensitive(t, known[i]);
		if (!m)
			continue;
		rc = check_target(known[i], m, dst[i], err, errsz);
		if (rc != ES_OK)
			return rc;
		any = 1;
	}
	if (!any)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.targets: empty (omit targets for the whole node)");
	return ES_OK;
}

es_err es_egress_spec_parse(const cJSON *spec, es_egress_spec *out, char *err,
			    size_t errsz)
{
	static const char *const known[] = { "nodeSelector", "action", "rules",
					     "targets" };
	const cJSON *m, *action, *rules;
	int i = 0;
	es_err rc;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(spec))
		return es_errf(ES_ERR_INVAL, err, errsz, "spec: expected an object");
	cJSON_ArrayForEach(m, spec)
		if (!member_known(m->string, known, 4))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.%.80s: unknown member of an EgressPolicy "
				       "spec (expected nodeSelector, action, rules, "
				       "targets)", m->string ? m->string : "");
	action = cJSON_GetObjectItemCaseSensitive(spec, "action");
	if (!cJSON_IsString(action) ||
	    (strcmp(action->valuestring, "Deny") &&
	     strcmp(action->valuestring, "Allow")))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.action: required, Deny or Allow");
	out->action = strcmp(action->valuestring, "Allow") ? ES_EGRESS_DENY
							   : ES_EGRESS_ALLOW;
	rules = cJSON_GetObjectItemCaseSensitive(spec, "rules");
	if (!cJSON_IsArray(rules) || cJSON_GetArraySize(rules) == 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.rules: required, a non-empty array of rules "
			       "(an empty Allow list would cut the targets off "
			       "every destination, the controller included)");
	if (cJSON_GetArraySize(rules) > ES_EGRESS_RULES_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.rules: at most %d rules", ES_EGRESS_RULES_MAX);
	cJSON_ArrayForEach(m, rules) {
		rc = parse_rule(m, i, &out->rules[i], err, errsz);
		if (rc != ES_OK)
			return rc;
		i++;
	}
	out->nrules = (size_t)i;
	return parse_targets(cJSON_GetObjectItemCaseSensitive(spec, "targets"),
			     &out->targets, err, errsz);
}

es_err es_egress_spec_validate(const cJSON *spec, char *err, size_t errsz)
{
	es_egress_spec *s = calloc(1, sizeof(*s));
	es_err rc;

	if (!s)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	rc = es_egress_spec_parse(spec, s, err, errsz);
	free(s);
	return rc;
}

const char *es_egress_proto_name(es_egress_proto p)
{
	return p == ES_EGRESS_PROTO_TCP ? "TCP" :
	       p == ES_EGRESS_PROTO_UDP ? "UDP" : "Any";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

es_err es_egress_rules_canon(const cJSON *rules, cJSON **out, char *err,
			     size_t errsz)
{
	es_egress_rule rule;
	char **items = NULL, why[256], cidr[64], line[128];
	size_t n = 0, cap = 0, k;
	const cJSON *r;
	cJSON *arr = NULL;
	es_err rc = ES_OK;
	int i = 0;

	*out = NULL;
	if (!cJSON_IsArray(rules))
		return es_errf(ES_ERR_INVAL, err, errsz, "rules: expected an array");
	cJSON_ArrayForEach(r, rules) {
		size_t np;

		rc = parse_rule(r, i, &rule, why, sizeof(why));
		if (rc != ES_OK) {
			es_errf(rc, err, errsz, "%s", why + (strncmp(why, "spec.", 5) ? 0 : 5));
			goto cleanup;
		}
		es_egress_cidr_format(&rule.cidr, cidr, sizeof(cidr));
		np = rule.nports ? rule.nports : 1;
		for (k = 0; k < np; k++) {
			unsigned from = rule.nports ? rule.ports[k].from : 0;
			unsigned to = rule.nports ? rule.ports[k].to : 65535;

			if (n == cap) {
				char **g = realloc(items, (cap ? cap * 2 : 16) * sizeof(*g));

				if (!g) {
					rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
					goto cleanup;
				}
				items = g;
				cap = cap ? cap * 2 : 16;
			}
			snprintf(line, sizeof(line), "%s %s %u-%u",
				 es_egress_proto_name(rule.proto), cidr, from, to);
			if (!(items[n] = strdup(line))) {
				rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
				goto cleanup;
			}
			n++;
		}
		i++;
	}
	if (n)
		qsort(items, n, sizeof(*items), cmp_str);
	if (!(arr = cJSON_CreateArray())) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	for (k = 0; k < n; k++) {
		cJSON *s;

		if (k > 0 && !strcmp(items[k], items[k - 1]))
			continue;
		if (!(s = cJSON_CreateString(items[k])) ||
		    !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
			goto cleanup;
		}
	}
	*out = arr;
	arr = NULL;
cleanup:
	for (k = 0; k < n; k++)
		free(items[k]);
	free(items);
	cJSON_Delete(arr);
	return rc;
}

static int add_diff(cJSON *diffs, const char *a, const char *b, const char *c)
{
	char buf[512];
	cJSON *s;

	snprintf(buf, sizeof(buf), "%s%s%s", a, b ? b : "", c ? c : "");
	if (!(s = cJSON_CreateString(buf)))
		return -1;
	if (!cJSON_AddItemToArray(diffs, s)) {
		cJSON_Delete(s);
		return -1;
	}
	return 0;
}

static int in_list(const cJSON *list, const char *s)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, list)
		if (cJSON_IsString(v) && !strcmp(v->valuestring, s))
			return 1;
	return 0;
}

/* Rules of a or b missing from the other, as differences. */
static int diff_rules(const cJSON *want, const cJSON *have, cJSON *diffs)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, want)
		if (!in_list(have, v->valuestring) &&
		    add_diff(diffs, "rule in spec but not in kernel: ",
			     v->valuestring, NULL))
			return -1;
	cJSON_ArrayForEach(v, have)
		if (!in_list(want, v->valuestring) &&
		    add_diff(diffs, "rule in kernel but not in spec: ",
			     v->valuestring, NULL))
			return -1;
	return 0;
}

int es_egress_diff(const cJSON *spec, const cJSON *actual, cJSON *diffs)
{
	static const char *const hooks[] = { "connect4", "connect6", "sendmsg4",
					     "sendmsg6" };
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(spec, "action");
	const cJSON *kact = cJSON_GetObjectItemCaseSensitive(actual, "action");
	const cJSON *att = cJSON_GetObjectItemCaseSensitive(actual, "attachments");
	cJSON *want = NULL, *have = NULL;
	char why[256], num[32];
	int ret = -1;

	if (!cJSON_IsObject(actual))
		return add_diff(diffs, "actual state not reported: the agent "
				"does not say what its kernel enforces", NULL, NULL);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(actual, "loaded")))
		return add_diff(diffs, "not loaded in the kernel", NULL, NULL);
	if (cJSON_IsString(act) && cJSON_IsString(kact) &&
	    strcmp(act->valuestring, kact->valuestring)) {
		snprintf(why, sizeof(why), "action in kernel %.40s != spec %.40s",
			 kact->valuestring, act->valuestring);
		if (add_diff(diffs, why, NULL, NULL))
			return -1;
	}
	if (es_egress_rules_canon(cJSON_GetObjectItemCaseSensitive(spec, "rules"),
				  &want, why, sizeof(why)) == ES_ERR_NOMEM ||
	    es_egress_rules_canon(cJSON_GetObjectItemCaseSensitive(actual, "rules"),
				  &have, why, sizeof(why)) == ES_ERR_NOMEM)
		goto cleanup;
	if ((want == NULL) != (have == NULL)) {
		if (add_diff(diffs, "rules not comparable: ", why, NULL))
			goto cleanup;
	} else if (want && diff_rules(want, have, diffs)) {
		goto cleanup;
	}
	for (size_t i = 0; i < 4 && cJSON_IsObject(att); i++) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(att, hooks[i]);

		if (cJSON_IsNumber(n) && n->valuedouble == 1)
			continue;
		snprintf(num, sizeof(num), " = %.0f (want 1)",
			 cJSON_IsNumber(n) ? n->valuedouble : 0.0);
		if (add_diff(diffs, "attachments of ", hooks[i], num))
			goto cleanup;
	}
	ret = 0;
cleanup:
	cJSON_Delete(want);
	cJSON_Delete(have);
	return ret;
}
