/* Unit tests of lib/es_kpatch.c: keyed changes of a Node (diff, apply). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_json.h"
#include "es_kpatch.h"
#include "testutil.h"

#define J es_test_json

/* Applies diff(a, b) to a copy of a and checks that it gives b, the
 * order of every list included; returns the printed change (caller
 * frees). */
static char *round_trip(const cJSON *a, const cJSON *b)
{
	cJSON *d = NULL, *got = cJSON_Duplicate(a, 1);
	char err[256] = "", *text;

	assert_int_equal(es_kpatch_diff(a, b, &d), ES_OK);
	assert_int_equal(es_kpatch_apply(&got, d, err, sizeof(err)), ES_OK);
	if (es_json_equal(got, b) != 1) {
		char *g = es_json_print(got), *w = es_json_print(b), *p = es_json_print(d);

		fail_msg("apply(a, diff(a, b)) != b\n got  %s\n want %s\n diff %s", g, w, p);
	}
	text = es_json_print(d);
	cJSON_Delete(d);
	cJSON_Delete(got);
	return text;
}

static const char *node_a =
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{"
	"\"conditions\":["
	"{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"AgentReady\"},"
	"{\"type\":\"DiskPressure\",\"status\":\"False\",\"reason\":\"Ok\"},"
	"{\"type\":\"StoreDegraded\",\"status\":\"False\",\"reason\":\"Ok\"}],"
	"\"usage\":{\"cpu\":0.5,\"network\":["
	"{\"interface\":\"lo\",\"receiveBytes\":10},"
	"{\"interface\":\"eth0\",\"receiveBytes\":20},"
	"{\"interface\":\"eth1\",\"receiveBytes\":30}],"
	"\"filesystems\":[{\"mountpoint\":\"/\",\"availBytes\":5}]},"
	"\"objects\":["
	"{\"kind\":\"HealthRule\",\"name\":\"r1\",\"uid\":\"u1\",\"conditions\":["
	"{\"type\":\"Applied\",\"status\":\"True\"},{\"type\":\"Healthy\",\"status\":\"True\"}]},"
	"{\"kind\":\"CollectorConfig\",\"name\":\"r1\",\"uid\":\"u2\",\"conditions\":["
	"{\"type\":\"Applied\",\"status\":\"True\"}]}],"
	"\"activity\":{\"tcp\":{\"topConnections\":["
	"{\"saddr\":\"10.0.0.1\",\"sport\":1,\"daddr\":\"10.0.0.2\",\"dport\":80,\"bytesSent\":1},"
	"{\"saddr\":\"10.0.0.1\",\"sport\":2,\"daddr\":\"10.0.0.2\",\"dport\":80,\"bytesSent\":2}]}}}}";

/* Items reordered, added, removed and changed in every keyed list, a
 * nested keyed list (an object's conditions) and the two-member key of
 * status.objects. */
static const char *node_b =
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{"
	"\"conditions\":["
	"{\"type\":\"MemoryPressure\",\"status\":\"False\",\"reason\":\"Ok\"},"
	"{\"type\":\"StoreDegraded\",\"status\":\"False\",\"reason\":\"Ok\"},"
	"{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"StoreDegraded\"}],"
	"\"usage\":{\"cpu\":0.25,\"network\":["
	"{\"interface\":\"eth1\",\"receiveBytes\":30},"
	"{\"interface\":\"wg0\",\"receiveBytes\":1},"
	"{\"interface\":\"lo\",\"receiveBytes\":11}],"
	"\"filesystems\":[]},"
	"\"objects\":["
	"{\"kind\":\"CollectorConfig\",\"name\":\"r1\",\"uid\":\"u2\",\"conditions\":["
	"{\"type\":\"Applied\",\"status\":\"True\"}]},"
	"{\"kind\":\"HealthRule\",\"name\":\"r1\",\"uid\":\"u1\",\"conditions\":["
	"{\"type\":\"Healthy\",\"status\":\"False\"},{\"type\":\"Applied\",\"status\":\"True\"}]},"
	"{\"kind\":\"EgressPolicy\",\"name\":\"p\",\"uid\":\"u3\",\"conditions\":[]}],"
	"\"activity\":{\"tcp\":{\"topConnections\":["
	"{\"saddr\":\"10.0.0.1\",\"sport\":2,\"daddr\":\"10.0.0.2\",\"dport\":80,\"bytesSent\":9},"
	"{\"saddr\":\"10.0.0.1\",\"sport\":3,\"daddr\":\"10.0.0.2\",\"dport\":80,\"bytesSent\":3}]}}}}";

static void test_round_trip_reorder_add_remove(void **state)
{
	cJSON *a = J(node_a), *b = J(node_b);

	(void)state;
	free(round_trip(a, b));
	free(round_trip(b, a));
	free(round_trip(NULL, b));
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* One changed condition costs that condition's changed member and its
 * key, not the list. */
static void test_one_item_costs_one_item(void **state)
{
	cJSON *a = J(node_a), *b = J(node_a), *want;
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "status"),
							   "conditions"), 1);
	char *got;

	(void)state;
	cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("True"));
	got = round_trip(a, b);
	want = J("{\"status\":{\"conditions\":[{\"type\":\"DiskPressure\",\"status\":\"True\"}]}}");
	{
		cJSON *g = J(got);

		assert_int_equal(es_json_equal(g, want), 1);
		cJSON_Delete(g);
	}
	free(got);
	cJSON_Delete(want);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_equal_is_empty(void **state)
{
	cJSON *a = J(node_a), *d = NULL;

	(void)state;
	assert_int_equal(es_kpatch_diff(a, a, &d), ES_OK);
	assert_non_null(d);
	assert_null(d->child);
	cJSON_Delete(d);
	cJSON_Delete(a);
}

/* A member named "$..." reads as a directive in a change, so no change can
 * add or remove it: diff refuses such documents, on either side (the
 * fuzzer found a "$" member in from that diff "removed" with a null apply
 * then refused). */
static void test_dollar_members_refused(void **state)
{
	cJSON *a = J(node_a), *b = J("{\"status\":{\"nodeInfo\":{\"$os\":\"linux\"}}}");
	cJSON *d = (cJSON *)1;

	(void)state;
	assert_int_equal(es_kpatch_diff(b, a, &d), ES_ERR_INVAL);
	assert_null(d);
	assert_int_equal(es_kpatch_diff(a, b, &d), ES_ERR_INVAL);
	assert_null(d);
	assert_int_equal(es_kpatch_diff(NULL, b, &d), ES_ERR_INVAL);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* Lists that cannot be merged by key (an item without the key, a key
 * twice) are replaced whole, with {"$patch": "replace"} first; unkeyed
 * paths are replaced as in RFC 7386. */
static void test_unkeyable_lists_replace(void **state)
{
	static const char *const pairs[][2] = {
		{"{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}",
		 "{\"status\":{\"conditions\":[{\"status\":\"True\"},{\"type\":\"A\"}]}}"},
		{"{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}",
		 "{\"status\":{\"conditions\":[{\"type\":\"A\",\"x\":1},{\"type\":\"A\"}]}}"},
		{"{\"status\":{\"conditions\":[{\"type\":\"A\"},{\"type\":\"A\"}]}}",
		 "{\"status\":{\"conditions\":[{\"type\":\"B\"}]}}"},
		{"{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}",
		 "{\"status\":{\"conditions\":[]}}"},
		{"{\"status\":{\"conditions\":\"x\"}}",
		 "{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}"},
		{"{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}",
		 "{\"status\":{\"conditions\":7}}"},
		{"{\"other\":[1,2,3]}", "{\"other\":[3,2]}"},
		{"{}", "{\"status\":{\"objects\":[{\"kind\":\"K\",\"name\":\"n\","
		 "\"conditions\":[{\"type\":\"A\"},{\"type\":\"A\"}]}]}}"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		cJSON *a = J(pairs[i][0]), *b = J(pairs[i][1]);

		free(round_trip(a, b));
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}

/* A bad change from a peer is refused with the path named, and the
 * target is left as it was. */
static void test_bad_patches_refused(void **state)
{
	static const char *const bad[][2] = {
		{"{\"status\":{\"conditions\":[{\"status\":\"True\"}]}}", "status.conditions"},
		{"{\"status\":{\"conditions\":[{\"type\":true}]}}", "status.conditions"},
		{"{\"status\":{\"conditions\":[7]}}", "status.conditions"},
		{"{\"status\":{\"conditions\":[{\"type\":\"A\",\"$patch\":\"merge\"}]}}",
		 "$patch"},
		{"{\"status\":{\"conditions\":[{\"type\":\"A\"},{\"$patch\":\"replace\"}]}}",
		 "status.conditions"},
		{"{\"status\":{\"$setElementOrder/conditions\":{}}}", "status"},
		{"{\"status\":{\"$retainKeys\":[]}}", "unknown directive"},
		{"{\"status\":{\"objects\":[{\"kind\":\"K\"}]}}", "\"name\""},
		{"{\"status\":{\"conditions\":[],\"$setElementOrder/conditions\":[{\"x\":1}]}}",
		 "$setElementOrder"},
		{"[]", "expected an object"},
	};
	cJSON *t = J(node_a), *before = J(node_a);

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *p = J(bad[i][0]);
		char err[256] = "";

		assert_int_equal(es_kpatch_apply(&t, p, err, sizeof(err)), ES_ERR_INVAL);
		if (!strstr(err, bad[i][1]))
			fail_msg("patch %s: error \"%s\" does not name %s", bad[i][0], err,
				 bad[i][1]);
		assert_int_equal(es_json_equal(t, before), 1);
		cJSON_Delete(p);
	}
	cJSON_Delete(t);
	cJSON_Delete(before);
}

/* An order naming items that are gone, and items it does not name, are
 * taken as they come: the named first, the rest in their order. */
static void test_order_is_lenient(void **state)
{
	cJSON *t = J("{\"status\":{\"conditions\":[{\"type\":\"A\"},{\"type\":\"B\"},"
		     "{\"type\":\"C\"}]}}");
	cJSON *p = J("{\"status\":{\"$setElementOrder/conditions\":[{\"type\":\"C\"},"
		     "{\"type\":\"Z\"},{\"type\":\"A\"}]}}");
	cJSON *want = J("{\"status\":{\"conditions\":[{\"type\":\"C\"},{\"type\":\"A\"},"
			"{\"type\":\"B\"}]}}");

	(void)state;
	assert_int_equal(es_kpatch_apply(&t, p, NULL, 0), ES_OK);
	assert_int_equal(es_json_equal(t, want), 1);
	cJSON_Delete(t);
	cJSON_Delete(p);
	cJSON_Delete(want);
}

/* xorshift, so the runs are the same every time. */
static uint32_t rng = 2463534242u;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % n;
}

/* A Node with random interfaces (names from a pool of 12, some with a
 * nested value) and random object statuses with conditions. */
static cJSON *random_node(void)
{
	cJSON *n = cJSON_CreateObject(), *st = cJSON_AddObjectToObject(n, "status");
	cJSON *net = cJSON_AddArrayToObject(cJSON_AddObjectToObject(st, "usage"), "network");
	cJSON *objs = cJSON_AddArrayToObject(st, "objects");
	int used[12] = {0};
	uint32_t k = rnd(10);

	for (uint32_t i = 0; i < k; i++) {
		uint32_t id = rnd(12);
		char name[16];
		cJSON *it;

		if (used[id]++)
			continue;
		snprintf(name, sizeof(name), "if%u", id);
		it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "interface", name);
		es_json_add_int(it, "receiveBytes", rnd(3));
		if (rnd(2))
			es_json_add_int(cJSON_AddObjectToObject(it, "x"), "y", rnd(2));
		cJSON_AddItemToArray(net, it);
	}
	memset(used, 0, sizeof(used));
	k = rnd(6);
	for (uint32_t i = 0; i < k; i++) {
		uint32_t id = rnd(6), nc = rnd(4);
		char name[16];
		cJSON *it, *conds;
		int cu[4] = {0};

		if (used[id]++)
			continue;
		snprintf(name, sizeof(name), "o%u", id / 2);
		it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "kind", id % 2 ? "HealthRule" : "EgressPolicy");
		cJSON_AddStringToObject(it, "name", name);
		conds = cJSON_AddArrayToObject(it, "conditions");
		for (uint32_t c = 0; c < nc; c++) {
			uint32_t t = rnd(4);
			static const char *const types[] = {"Applied", "Healthy", "Enforced", "Drifted"};
			cJSON *cd;

			if (cu[t]++)
				continue;
			cd = cJSON_CreateObject();
			cJSON_AddStringToObject(cd, "type", types[t]);
			cJSON_AddStringToObject(cd, "status", rnd(2) ? "True" : "False");
			cJSON_AddItemToArray(conds, cd);
		}
		cJSON_AddItemToArray(objs, it);
	}
	return n;
}

static void test_random_round_trips(void **state)
{
	(void)state;
	for (int i = 0; i < 3000; i++) {
		cJSON *a = random_node(), *b = random_node();

		free(round_trip(a, b));
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}

/* Every path of the table is a list of the Node schema's shape: a path
 * from the root, member names and "[]" only. */
static void test_table_paths(void **state)
{
	(void)state;
	for (const es_kpatch_key *k = es_kpatch_keys; k->path; k++) {
		assert_true(strncmp(k->path, "status.", 7) == 0);
		assert_non_null(k->keys[0]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_reorder_add_remove),
		cmocka_unit_test(test_one_item_costs_one_item),
		cmocka_unit_test(test_equal_is_empty),
		cmocka_unit_test(test_dollar_members_refused),
		cmocka_unit_test(test_unkeyable_lists_replace),
		cmocka_unit_test(test_bad_patches_refused),
		cmocka_unit_test(test_order_is_lenient),
		cmocka_unit_test(test_random_round_trips),
		cmocka_unit_test(test_table_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
