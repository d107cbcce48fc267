/* Unit tests of lib/es_egress.c (EgressPolicy spec: CIDRs, ports,
 * validation naming the field, canonical rules, the three-state diff) and
 * agent/egress/egress_plan.c (the rule set written to the kernel maps). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "egress/egress_cgroup.h"
#include "egress/egress_plan.h"
#include "es_egress.h"
#include "es_json.h"
#include "es_obj.h"

static cJSON *J(const char *s)
{
	char err[256] = "";
	cJSON *v = NULL;

	if (es_json_parse(s, strlen(s), ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK)
		fail_msg("fixture does not parse: %s: %s", s, err);
	return v;
}

static void test_cidr_parse(void **state)
{
	static const struct { const char *in, *out; int fam, prefix; } good[] = {
		{ "10.0.0.0/8", "10.0.0.0/8", 4, 8 },
		{ "127.0.0.2", "127.0.0.2/32", 4, 32 },
		{ "0.0.0.0/0", "0.0.0.0/0", 4, 0 },
		{ "2001:db8::/32", "2001:db8::/32", 6, 32 },
		{ "2001:0db8:0000::/48", "2001:db8::/48", 6, 48 },
		{ "::1", "::1/128", 6, 128 },
		{ "::/0", "::/0", 6, 0 },
	};
	static const struct { const char *in, *why; } bad[] = {
		{ "", "empty" },
		{ "10.0.0.1/8", "host bits" },
		{ "10.0.0.0/33", "prefix length over 32" },
		{ "2001:db8::/129", "prefix length over 128" },
		{ "10.0.0.0/", "bad prefix" },
		{ "10.0.0.0/8a", "bad prefix" },
		{ "10.0.0.0/-1", "bad prefix" },
		{ "10.0.0/8", "not an IPv4 or IPv6" },
		{ "example.com/8", "not an IPv4 or IPv6" },
		{ "/8", "not a CIDR" },
		{ "2001:db8::1/32", "host bits" },
		{ "::ffff:10.0.0.0/104", "IPv4-mapped" },
		{ "::ffff:127.0.0.2", "IPv4-mapped" },
	};
	es_egress_cidr c;
	char err[256], buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (es_egress_cidr_parse(good[i].in, &c, err, sizeof(err)) != ES_OK)
			fail_msg("%s refused: %s", good[i].in, err);
		assert_int_equal(c.family, good[i].fam);
		assert_int_equal(c.prefix, good[i].prefix);
		assert_string_equal(es_egress_cidr_format(&c, buf, sizeof(buf)), good[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (es_egress_cidr_parse(bad[i].in, &c, err, sizeof(err)) != ES_ERR_INVAL)
			fail_msg("\"%s\" accepted", bad[i].in);
		if (!strstr(err, bad[i].why))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].in, err, bad[i].why);
	}
}

static void test_cidr_contains(void **state)
{
	es_egress_cidr a, b, c, d;

	(void)state;
	assert_int_equal(es_egress_cidr_parse("10.0.0.0/8", &a, NULL, 0), ES_OK);
	assert_int_equal(es_egress_cidr_parse("10.1.0.0/16", &b, NULL, 0), ES_OK);
	assert_int_equal(es_egress_cidr_parse("11.0.0.0/8", &c, NULL, 0), ES_OK);
	assert_int_equal(es_egress_cidr_parse("::/0", &d, NULL, 0), ES_OK);
	assert_true(es_egress_cidr_contains(&a, &b));
	assert_false(es_egress_cidr_contains(&b, &a));
	assert_false(es_egress_cidr_contains(&a, &c));
	assert_true(es_egress_cidr_contains(&a, &a));
	assert_false(es_egress_cidr_contains(&d, &a));
}

static void test_ports_parse(void **state)
{
	static const struct { const char *json; unsigned from, to; } good[] = {
		{ "443", 443, 443 }, { "\"8000-8080\"", 8000, 8080 },
		{ "\"53\"", 53, 53 }, { "{\"from\": 1, \"to\": 65535}", 1, 65535 },
		{ "{\"from\": 25}", 25, 25 },
	};
	static const struct { const char *json, *why; } bad[] = {
		{ "0", "1..65535" }, { "65536", "1..65535" }, { "1.5", "integer" },
		{ "\"90-80\"", "from is above to" }, { "\"a-b\"", "not a port" },
		{ "\"80-\"", "not a port" }, { "{\"to\": 80}", "from" },
		{ "{\"from\": 80, \"end\": 90}", "unknown member" }, { "true", "expected" },
		{ "\"123456\"", "not a port" },
	};
	es_egress_range r;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cJSON *v = J(good[i].json);

		if (es_egress_range_parse(v, &r, err, sizeof(err)) != ES_OK)
			fail_msg("%s refused: %s", good[i].json, err);
		assert_int_equal(r.from, good[i].from);
		assert_int_equal(r.to, good[i].to);
		cJSON_Delete(v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *v = J(bad[i].json);

		err[0] = '\0';
		if (es_egress_range_parse(v, &r, err, sizeof(err)) != ES_ERR_INVAL)
			fail_msg("%s accepted", bad[i].json);
		if (!strstr(err, bad[i].why))
			fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].json, err, bad[i].why);
		cJSON_Delete(v);
	}
}

static void test_spec_parse_good(void **state)
{
	cJSON *spec = J("{\"nodeSelector\": {\"matchLabels\": {\"site\": \"lab\"}},"
			" \"action\": \"Allow\", \"rules\": ["
			" {\"cidr\": \"10.0.0.0/8\", \"protocol\": \"TCP\", \"ports\": [443, \"8000-8080\"]},"
			" {\"cidr\": \"2001:db8::/32\", \"protocol\": \"UDP\"},"
			" {\"cidr\": \"192.0.2.1\"}],"
			" \"targets\": {\"systemdUnit\": \"nginx.service\","
			" \"containerID\": \"containerd://0123456789abcdef\"}}");
	es_egress_spec *s = calloc(1, sizeof(*s));
	char err[256] = "";

	(void)state;
	assert_non_null(s);
	if (es_egress_spec_parse(spec, s, err, sizeof(err)) != ES_OK)
		fail_msg("refused: %s", err);
	assert_int_equal(s->action, ES_EGRESS_ALLOW);
	assert_int_equal(s->nrules, 3);
	assert_int_equal(s->rules[0].proto, ES_EGRESS_PROTO_TCP);
	assert_int_equal(s->rules[0].nports, 2);
	assert_int_equal(s->rules[0].ports[1].from, 8000);
	assert_int_equal(s->rules[1].proto, ES_EGRESS_PROTO_UDP);
	assert_int_equal(s->rules[1].cidr.family, 6);
	assert_int_equal(s->rules[2].proto, ES_EGRESS_PROTO_ANY);
	assert_int_equal(s->rules[2].nports, 0);
	assert_false(s->targets.node);
	assert_string_equal(s->targets.systemd_unit, "nginx.service");
	assert_string_equal(s->targets.container_id, "0123456789abcdef");
	free(s);
	cJSON_Delete(spec);
}

static void test_spec_refused_naming_field(void **state)
{
	static const struct { const char *spec, *field; } bad[] = {
		{ "{\"rules\": []}", "spec.action" },
		{ "{\"action\": \"deny\", \"rules\": []}", "spec.action" },
		{ "{\"action\": \"Deny\"}", "spec.rules" },
		{ "{\"action\": \"Allow\", \"rules\": []}", "spec.rules" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"::ffff:10.0.0.0/104\"}]}",
		  "spec.rules[0].cidr" },
		{ "{\"action\": \"Deny\", \"rules\": {}}", "spec.rules" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"defaultAction\": \"x\"}",
		  "spec.defaultAction" },
		{ "{\"action\": \"Deny\", \"rules\": [{}]}", "spec.rules[0].cidr" },
		{ "{\"action\": \"Deny\", \"rules\": [1]}", "spec.rules[0]" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"},"
		  " {\"cidr\": \"10.0.0.1/8\"}]}", "spec.rules[1].cidr" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\", "
		  "\"protocol\": \"ICMP\"}]}", "spec.rules[0].protocol" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\", "
		  "\"ports\": [80, 0]}]}", "spec.rules[0].ports[1]" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\", "
		  "\"ports\": 80}]}", "spec.rules[0].ports" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\", "
		  "\"port\": 80}]}", "spec.rules[0].port" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": {}}", "spec.targets" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": {\"pod\": \"x\"}}",
		  "spec.targets.pod" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": "
		  "{\"cgroupPathPrefix\": \"/a/../b\"}}", "spec.targets.cgroupPathPrefix" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": "
		  "{\"systemdUnit\": \"a/b.service\"}}", "spec.targets.systemdUnit" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": "
		  "{\"podUID\": \"not-a-uuid\"}}", "spec.targets.podUID" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": "
		  "{\"containerID\": \"xyz\"}}", "spec.targets.containerID" },
		{ "{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\"}], \"targets\": "
		  "{\"systemdUnit\": \"\"}}", "spec.targets.systemdUnit" },
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *spec = J(bad[i].spec);

		err[0] = '\0';
		if (es_egress_spec_validate(spec, err, sizeof(err)) != ES_ERR_INVAL)
			fail_msg("accepted: %s", bad[i].spec);
		if (strncmp(err, bad[i].field, strlen(bad[i].field)) ||
		    (err[strlen(bad[i].field)] != ':' && err[strlen(bad[i].field)] != '.'))
			fail_msg("%s: message \"%s\" does not start with %s", bad[i].spec,
				 err, bad[i].field);
		cJSON_Delete(spec);
	}
}

static void test_validate_desired_hook(void **state)
{
	cJSON *obj = J("{\"apiVersion\": \"edgesync.io/v1alpha1\", \"kind\": \"EgressPolicy\","
		       " \"metadata\": {\"name\": \"x\"}, \"spec\": {\"action\": \"Deny\","
		       " \"rules\": [{\"cidr\": \"10.0.0.0/33\"}]}}");
	char err[256] = "";

	(void)state;
	assert_int_equal(es_obj_validate_desired(obj, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "spec.rules[0].cidr"));
	cJSON_Delete(obj);
}

static void test_rules_canon_and_diff(void **state)
{
	cJSON *spec = J("{\"action\": \"Deny\", \"rules\": ["
			"{\"cidr\": \"127.0.0.2/32\", \"protocol\": \"TCP\", \"ports\": [8081, 8080]},"
			"{\"cidr\": \"10.0.0.0/8\"}]}");
	cJSON *same = J("{\"backend\": \"ebpf\", \"loaded\": true, \"action\": \"Deny\","
			" \"rules\": [{\"cidr\": \"10.0.0.0/8\", \"protocol\": \"Any\"},"
			" {\"cidr\": \"127.0.0.2/32\", \"protocol\": \"TCP\", \"ports\": [{\"from\": 8080, \"to\": 8080}]},"
			" {\"cidr\": \"127.0.0.2/32\", \"protocol\": \"TCP\", \"ports\": [{\"from\": 8081, \"to\": 8081}]}],"
			" \"attachments\": {\"connect4\": 1, \"connect6\": 1, \"sendmsg4\": 1, \"sendmsg6\": 1}}");
	cJSON *other = J("{\"backend\": \"ebpf\", \"loaded\": true, \"action\": \"Allow\","
			 " \"rules\": [{\"cidr\": \"10.0.0.0/8\"},"
			 " {\"cidr\": \"127.0.0.2/32\", \"protocol\": \"TCP\", \"ports\": [9090]}],"
			 " \"attachments\": {\"connect4\": 2, \"connect6\": 1, \"sendmsg4\": 1, \"sendmsg6\": 1}}");
	cJSON *canon = NULL, *diffs = cJSON_CreateArray();
	char err[256], *txt;

	(void)state;
	assert_int_equal(es_egress_rules_canon(cJSON_GetObjectItem(spec, "rules"), &canon,
					       err, sizeof(err)), ES_OK);
	txt = cJSON_PrintUnformatted(canon);
	assert_string_equal(txt, "[\"Any 10.0.0.0/8 0-65535\",\"TCP 127.0.0.2/32 8080-8080\","
			    "\"TCP 127.0.0.2/32 8081-8081\"]");
	free(txt);
	cJSON_Delete(canon);
	assert_int_equal(es_egress_diff(spec, same, diffs), 0);
	assert_int_equal(cJSON_GetArraySize(diffs), 0);
	assert_int_equal(es_egress_diff(spec, other, diffs), 0);
	txt = cJSON_PrintUnformatted(diffs);
	assert_non_null(strstr(txt, "action in kernel Allow != spec Deny"));
	assert_non_null(strstr(txt, "rule in spec but not in kernel: TCP 127.0.0.2/32 8080-8080"));
	assert_non_null(strstr(txt, "rule in kernel but not in spec: TCP 127.0.0.2/32 9090-9090"));
	assert_non_null(strstr(txt, "attachments of connect4 = 2 (want 1)"));
	assert_null(strstr(txt, "10.0.0.0/8"));
	free(txt);
	cJSON_Delete(diffs);
	diffs = cJSON_CreateArray();
	assert_int_equal(es_egress_diff(spec, NULL, diffs), 0);
	assert_int_equal(cJSON_GetArraySize(diffs), 1);
	cJSON_Delete(diffs);
	cJSON_Delete(spec);
	cJSON_Delete(same);
	cJSON_Delete(other);
}

/* Two policies with nested CIDRs: each stored prefix carries the entries of
 * every rule whose CIDR contains it, own only for its own rules. */
/* cgroupPathPrefix selects a cgroup and what lies below it, by whole path
 * components: a sibling whose name merely starts the same is not a target. */
static void test_resolve_prefix_by_component(void **state)
{
	char root[] = "/tmp/es-egcg-XXXXXX", path[256], err[256];
	const char *dirs[] = { "app", "app/child", "appX", "other" };
	es_egress_targets t;
	uint64_t *ids = NULL, want[1];
	size_t n = 0;

	(void)state;
	assert_non_null(mkdtemp(root));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(path, 0700), 0);
	}
	snprintf(path, sizeof(path), "%s/app", root);
	assert_int_equal(es_egcg_id(path, &want[0], err, sizeof(err)), ES_OK);
	memset(&t, 0, sizeof(t));
	snprintf(t.cgroup_prefix, sizeof(t.cgroup_prefix), "/app/");
	/* The resolver lists the selected cgroup; the kernel side covers its
	 * descendants by ancestry. "/appX" must not be selected. */
	assert_int_equal(es_egcg_resolve(root, &t, &ids, &n, err, sizeof(err)), ES_OK);
	assert_int_equal(n, 1);
	assert_true(ids[0] == want[0]);
	free(ids);
	for (size_t i = sizeof(dirs) / sizeof(dirs[0]); i-- > 0;) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		rmdir(path);
	}
	rmdir(root);
}

static void test_plan_nested_prefixes(void **state)
{
	cJSON *s1 = J("{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"10.0.0.0/8\", "
		      "\"protocol\": \"TCP\", \"ports\": [443]}]}");
	cJSON *s2 = J("{\"action\": \"Allow\", \"rules\": [{\"cidr\": \"10.1.0.0/16\"}],"
		      " \"targets\": {\"cgroupPathPrefix\": \"/x\"}}");
	es_egress_spec *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint64_t cg[] = { 77 };
	es_eg_input in[2];
	es_eg_plan p, q;
	char err[256] = "";
	cJSON *rules;
	char *txt;

	(void)state;
	assert_int_equal(es_egress_spec_parse(s1, a, err, sizeof(err)), ES_OK);
	assert_int_equal(es_egress_spec_parse(s2, b, err, sizeof(err)), ES_OK);
	memset(in, 0, sizeof(in));
	in[0].slot = 3; in[0].spec = a; in[0].uid = "u1"; in[0].name = "one"; in[0].generation = 2;
	in[1].slot = 0; in[1].spec = b; in[1].uid = "u2"; in[1].name = "two"; in[1].generation = 1;
	in[1].cgids = cg; in[1].ncgids = 1;
	if (es_eg_plan_build(in, 2, &p, err, sizeof(err)) != ES_OK)
		fail_msg("%s", err);
	assert_int_equal(p.nlpm, 2);
	/* sorted by key: /8 (prefixlen 16) before /16 (prefixlen 24) */
	assert_int_equal(p.lpm[0].key.prefixlen, 8 + 8);
	assert_int_equal(p.lpm[0].val.n, 1);
	assert_int_equal(p.lpm[1].key.prefixlen, 8 + 16);
	assert_int_equal(p.lpm[1].val.n, 2);
	assert_int_equal(p.cfg.all, 1u << 3);
	assert_int_equal(p.cfg.deny, 1u << 3);
	assert_int_equal(p.cfg.allow, 1u << 0);
	assert_int_equal(p.cfg.targeted, 1u << 0);
	assert_int_equal(p.ntgt, 1);
	assert_int_equal(p.tgt[0].cgid, 77);
	assert_int_equal(p.tgt[0].mask, 1u);
	assert_string_equal(p.pol[3].uid, "u1");
	assert_int_equal(es_eg_plan_targets(&p, 0), 1);
	rules = es_eg_plan_rules_json(&p, 3);
	txt = cJSON_PrintUnformatted(rules);
	assert_string_equal(txt, "[{\"cidr\":\"10.0.0.0/8\",\"protocol\":\"TCP\","
			    "\"ports\":[{\"from\":443,\"to\":443}]}]");
	free(txt);
	cJSON_Delete(rules);
	if (es_eg_plan_build(in, 2, &q, err, sizeof(err)) != ES_OK)
		fail_msg("%s", err);
	assert_true(es_eg_plan_equal(&p, &q));
	q.lpm[1].val.e[0].port_to = 1;
	assert_false(es_eg_plan_equal(&p, &q));
	es_eg_plan_free(&q);
	in[1].slot = 3;
	assert_int_equal(es_eg_plan_build(in, 2, &q, err, sizeof(err)), ES_ERR_INVAL);
	es_eg_plan_free(&p);
	free(a);
	free(b);
	cJSON_Delete(s1);
	cJSON_Delete(s2);
}

static void test_plan_too_many_entries(void **state)
{
	es_egress_spec *a = calloc(1, sizeof(*a));
	es_eg_input in;
	es_eg_plan p;
	char err[256] = "";

	(void)state;
	a->action = ES_EGRESS_DENY;
	a->targets.node = 1;
	a->nrules = 5;
	for (size_t i = 0; i < a->nrules; i++) {
		assert_int_equal(es_egress_cidr_parse("10.0.0.0/8", &a->rules[i].cidr, NULL, 0),
				 ES_OK);
		a->rules[i].nports = ES_EGRESS_PORTS_MAX;
		for (size_t k = 0; k < ES_EGRESS_PORTS_MAX; k++)
			a->rules[i].ports[k].from = a->rules[i].ports[k].to = (uint16_t)(k + 1);
	}
	memset(&in, 0, sizeof(in));
	in.spec = a;
	assert_int_equal(es_eg_plan_build(&in, 1, &p, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_non_null(strstr(err, "10.0.0.0/8"));
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_resolve_prefix_by_component),
		cmocka_unit_test(test_cidr_contains),
		cmocka_unit_test(test_ports_parse),
		cmocka_unit_test(test_spec_parse_good),
		cmocka_unit_test(test_spec_refused_naming_field),
		cmocka_unit_test(test_validate_desired_hook),
		cmocka_unit_test(test_rules_canon_and_diff),
		cmocka_unit_test(test_plan_nested_prefixes),
		cmocka_unit_test(test_plan_too_many_entries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
