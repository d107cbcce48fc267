/* Unit tests of the nftables backend of EgressPolicy enforcement
 * (agent/egress/nftables/egress_nft_text.c): the exact nft script generated from parsed
 * specs (Deny and Allow, IPv4 and IPv6, port ranges, protocol Any, cgroup
 * levels, carried-over counters), refused inputs, and the policies read
 * back from a table listing in the JSON that libnftables prints. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "egress/nftables/egress_nft.h"
#include "es_egress.h"
#include "es_json.h"

#define UID "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
#define FIX ES_FIXTURES "/egress/nft-listing.json"

static cJSON *J(const char *s)
{
	char err[256] = "";
	cJSON *v = NULL;

	if (es_json_parse(s, strlen(s), ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK)
		fail_msg("fixture does not parse: %s: %s", s, err);
	return v;
}

static void spec_of(const char *json, es_egress_spec *out)
{
	cJSON *v = J(json);
	char err[256] = "";

	if (es_egress_spec_parse(v, out, err, sizeof(err)) != ES_OK)
		fail_msg("spec refused: %s", err);
	cJSON_Delete(v);
}

static void assert_text(const char *got, const char *want)
{
	if (strcmp(got, want))
		fail_msg("ruleset differs.\n--- got:\n%s--- want:\n%s", got, want);
}

static const char DENY[] =
	"{\"action\": \"Deny\", \"rules\": ["
	" {\"cidr\": \"127.0.0.2\", \"protocol\": \"TCP\", \"ports\": [8080]},"
	" {\"cidr\": \"2001:db8::/32\", \"protocol\": \"UDP\", \"ports\": [\"5000-5010\", 53]},"
	" {\"cidr\": \"10.0.0.0/8\"}],"
	" \"targets\": {\"cgroupPathPrefix\": \"/app\"}}";

static const char ALLOW[] =
	"{\"action\": \"Allow\", \"rules\": ["
	" {\"cidr\": \"192.0.2.0/24\", \"protocol\": \"TCP\", \"ports\": [{\"from\": 443, \"to\": 444}]},"
	" {\"cidr\": \"::/0\", \"protocol\": \"Any\", \"ports\": [53]}]}";

static void test_ruleset_deny_targeted(void **state)
{
	static const es_egnft_cgroup cgs[] = {
		{ "unified/app", 1 }, { "unified/x/app.slice", 2 },
	};
	es_egress_spec *s = calloc(1, sizeof(*s));
	es_egnft_input in;
	char err[256] = "", *out = NULL;

	(void)state;
	assert_non_null(s);
	spec_of(DENY, s);
	memset(&in, 0, sizeof(in));
	in.name = "deny-web";
	in.uid = UID;
	in.generation = 3;
	in.spec = s;
	in.cgroups = cgs;
	in.ncgroups = 2;
	if (es_egnft_ruleset(&in, 1, &out, err, sizeof(err)) != ES_OK)
		fail_msg("refused: %s", err);
	assert_text(out,
		"add table inet edgesync_egress\n"
		"delete table inet edgesync_egress\n"
		"table inet edgesync_egress {\n"
		"\tcounter p_deny-web {\n"
		"\t\tpackets 0 bytes 0\n"
		"\t}\n"
		"\tchain output {\n"
		"\t\ttype filter hook output priority 0; policy accept;\n"
		"\t\tsocket cgroupv2 level 1 \"unified/app\" jump p_deny-web comment \"" UID " g3 Deny\"\n"
		"\t\tsocket cgroupv2 level 2 \"unified/x/app.slice\" jump p_deny-web comment \"" UID " g3 Deny\"\n"
		"\t}\n"
		"\tchain p_deny-web {\n"
		"\t\tip daddr 127.0.0.2/32 tcp dport 8080 tcp flags & (syn | ack) == syn counter name \"p_deny-web\" reject with icmpx admin-prohibited comment \"" UID " g3 Deny\"\n"
		"\t\tip6 daddr 2001:db8::/32 udp dport 5000-5010 counter name \"p_deny-web\" drop comment \"" UID " g3 Deny\"\n"
		"\t\tip6 daddr 2001:db8::/32 udp dport 53 counter name \"p_deny-web\" drop comment \"" UID " g3 Deny\"\n"
		"\t\tip daddr 10.0.0.0/8 tcp flags & (syn | ack) == syn counter name \"p_deny-web\" reject with icmpx admin-prohibited comment \"" UID " g3 Deny any\"\n"
		"\t\tip daddr 10.0.0.0/8 meta l4proto udp counter name \"p_deny-web\" drop comment \"" UID " g3 Deny any\"\n"
		"\t}\n"
		"}\n");
	free(out);
	free(s);
}

static void test_ruleset_allow_node_and_deny(void **state)
{
	es_egress_spec *s = calloc(2, sizeof(*s));
	es_egnft_cgroup cg = { ".", 0 };
	es_egnft_input in[2];
	char err[256] = "", *out = NULL;

	(void)state;
	assert_non_null(s);
	spec_of(ALLOW, &s[0]);
	spec_of("{\"action\": \"Deny\", \"rules\": [{\"cidr\": \"2001:db8::1\", "
		"\"protocol\": \"TCP\"}], \"targets\": {\"cgroupPathPrefix\": \"/\"}}", &s[1]);
	memset(in, 0, sizeof(in));
	in[0].name = "allow-only.dns";
	in[0].uid = "";
	in[0].generation = 12;
	in[0].spec = &s[0];
	in[0].packets = 7;
	in[0].bytes = 420;
	in[1].name = "0-root";
	in[1].uid = "u-2";
	in[1].generation = 1;
	in[1].spec = &s[1];
	in[1].cgroups = &cg;
	in[1].ncgroups = 1;
	if (es_egnft_ruleset(in, 2, &out, err, sizeof(err)) != ES_OK)
		fail_msg("refused: %s", err);
	assert_text(out,
		"add table inet edgesync_egress\n"
		"delete table inet edgesync_egress\n"
		"table inet edgesync_egress {\n"
		"\tcounter p_allow-only.dns {\n"
		"\t\tpackets 7 bytes 420\n"
		"\t}\n"
		"\tcounter p_0-root {\n"
		"\t\tpackets 0 bytes 0\n"
		"\t}\n"
		"\tchain output {\n"
		"\t\ttype filter hook output priority 0; policy accept;\n"
		"\t\tjump p_allow-only.dns comment \"- g12 Allow\"\n"
		"\t\tsocket cgroupv2 level 0 \".\" jump p_0-root comment \"u-2 g1 Deny\"\n"
		"\t}\n"
		"\tchain p_allow-only.dns {\n"
		"\t\tip daddr 192.0.2.0/24 tcp dport 443-444 tcp flags & (syn | ack) == syn return comment \"- g12 Allow\"\n"
		"\t\tip6 daddr ::/0 tcp dport 53 tcp flags & (syn | ack) == syn return comment \"- g12 Allow any\"\n"
		"\t\tip6 daddr ::/0 udp dport 53 return comment \"- g12 Allow any\"\n"
		"\t\ttcp flags & (syn | ack) == syn counter name \"p_allow-only.dns\" reject with icmpx admin-prohibited comment \"- g12 Allow rest\"\n"
		"\t\tmeta l4proto udp counter name \"p_allow-only.dns\" drop comment \"- g12 Allow rest\"\n"
		"\t}\n"
		"\tchain p_0-root {\n"
		"\t\tip6 daddr 2001:db8::1/128 tcp flags & (syn | ack) == syn counter name \"p_0-root\" reject with icmpx admin-prohibited comment \"u-2 g1 Deny\"\n"
		"\t}\n"
		"}\n");
	free(out);
	free(s);
}

static void test_ruleset_refused(void **state)
{
	static const struct { const char *name, *uid, *path, *why; } bad[] = {
		{ "Upper", "u", "a", "policy name \"Upper\"" },
		{ "", "u", "a", "policy name \"\"" },
		{ "ok", "u\"x", "a", "uid" },
		{ "ok", "u", "a\"b", "cgroup \"a\"b\"" },
		{ "ok", "u", "a\nb", "cannot be written in nftables syntax" },
	};
	es_egress_spec *s = calloc(1, sizeof(*s));
	es_egnft_cgroup cg;
	es_egnft_input in;
	char err[256], *out = NULL;

	(void)state;
	assert_non_null(s);
	spec_of(DENY, s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&in, 0, sizeof(in));
		memset(&cg, 0, sizeof(cg));
		snprintf(cg.path, sizeof(cg.path), "%s", bad[i].path);
		cg.level = 1;
		in.name = bad[i].name;
		in.uid = bad[i].uid;
		in.spec = s;
		in.cgroups = &cg;
		in.ncgroups = 1;
		err[0] = '\0';
		if (es_egnft_ruleset(&in, 1, &out, err, sizeof(err)) != ES_ERR_INVAL)
			fail_msg("case %zu accepted", i);
		assert_null(out);
		if (!strstr(err, bad[i].why))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].why);
	}
	free(s);
}

static cJSON *load_fixture(void)
{
	FILE *f = fopen(FIX, "r");
	char *buf;
	long n;
	cJSON *v;

	if (!f)
		fail_msg("cannot open %s", FIX);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	v = J(buf);
	free(buf);
	return v;
}

/* Fails unless a (deleted here) is the JSON want_json; name says which. */
static void assert_json(cJSON *a, const char *want_json, const char *name)
{
	cJSON *want = J(want_json);
	char *got = cJSON_PrintUnformatted(a);

	if (!cJSON_Compare(a, want, 1))
		fail_msg("%s read back as %s", name, got);
	free(got);
	cJSON_Delete(a);
	cJSON_Delete(want);
}

/* The listing is what `nft -j list table inet edgesync_egress` printed
 * after the script of test_ruleset_deny_targeted (with cgroups that
 * existed) and the Allow policy of test_ruleset_allow_node_and_deny. */
static void test_actual_read_back(void **state)
{
	cJSON *l = load_fixture(), *a;
	char uid[64];
	uint64_t bytes = 0;
	int found = 0;

	(void)state;
	a = es_egnft_actual(l, "deny-web", UID);
	assert_non_null(a);
	assert_json(a, "{\"backend\": \"nftables\", \"loaded\": true, "
		    "\"table\": \"inet edgesync_egress\", \"chain\": \"p_deny-web\", "
		    "\"generation\": 3, \"action\": \"Deny\", \"rules\": ["
		    "{\"cidr\": \"127.0.0.2/32\", \"protocol\": \"TCP\", \"ports\": [{\"from\": 8080, \"to\": 8080}]},"
		    "{\"cidr\": \"2001:db8::/32\", \"protocol\": \"UDP\", \"ports\": [{\"from\": 5000, \"to\": 5010}]},"
		    "{\"cidr\": \"2001:db8::/32\", \"protocol\": \"UDP\", \"ports\": [{\"from\": 53, \"to\": 53}]},"
		    "{\"cidr\": \"10.0.0.0/8\", \"protocol\": \"Any\"}],"
		    "\"nodeWide\": false, \"targetCgroups\": 2, \"violations\": 5}",
		    "deny-web");

	a = es_egnft_actual(l, "allow-only.dns", NULL);
	assert_json(a, "{\"backend\": \"nftables\", \"loaded\": true, "
		    "\"table\": \"inet edgesync_egress\", \"chain\": \"p_allow-only.dns\", "
		    "\"generation\": 12, \"action\": \"Allow\", \"rules\": ["
		    "{\"cidr\": \"192.0.2.0/24\", \"protocol\": \"TCP\", \"ports\": [{\"from\": 443, \"to\": 444}]},"
		    "{\"cidr\": \"::/0\", \"protocol\": \"Any\", \"ports\": [{\"from\": 53, \"to\": 53}]}],"
		    "\"nodeWide\": true, \"targetCgroups\": 0, \"violations\": 7}",
		    "allow-only.dns");

	/* Another uid (a policy recreated under the same name): not loaded. */
	a = es_egnft_actual(l, "deny-web", "another-uid");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "loaded")));
	assert_null(cJSON_GetObjectItemCaseSensitive(a, "rules"));
	cJSON_Delete(a);
	a = es_egnft_actual(NULL, "deny-web", UID);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "loaded")));
	cJSON_Delete(a);

	assert_int_equal(es_egnft_counter(l, "allow-only.dns", &bytes, &found), 7);
	assert_int_equal(bytes, 420);
	assert_int_equal(found, 1);
	assert_int_equal(es_egnft_counter(l, "absent", NULL, &found), 0);
	assert_int_equal(found, 0);
	assert_string_equal(es_egnft_uid(l, "deny-web", uid, sizeof(uid)), UID);
	assert_string_equal(es_egnft_uid(l, "allow-only.dns", uid, sizeof(uid)), "");
	cJSON_Delete(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ruleset_deny_targeted),
		cmocka_unit_test(test_ruleset_allow_node_and_deny),
		cmocka_unit_test(test_ruleset_refused),
		cmocka_unit_test(test_actual_read_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
