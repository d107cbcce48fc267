/* Unit tests of lib/es_urllist.c: splitting a list of server URLs, going
 * through their addresses and URLs in turn, a repeated flag as a list,
 * the rendezvous order of a node. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>

#include "es_urllist.h"

static void test_split(void **state)
{
	es_urllist l;
	char err[256];

	(void)state;
	assert_int_equal(es_urllist_split("controller-url",
					  " wss://a:7443 ,wss://b:7443,\twss://[::1]:7443",
					  &l, err, sizeof(err)), ES_OK);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[0], "wss://a:7443");
	assert_string_equal(l.items[1], "wss://b:7443");
	assert_string_equal(l.items[2], "wss://[::1]:7443");
	assert_string_equal(es_urllist_current(&l), "wss://a:7443");
	es_urllist_free(&l);
	assert_int_equal(l.n, 0);
	es_urllist_free(NULL);

	/* one URL is a list of one */
	assert_int_equal(es_urllist_split("server", "https://h:7444", &l, err,
					  sizeof(err)), ES_OK);
	assert_int_equal(l.n, 1);
	es_urllist_free(&l);
}

static void test_split_bad(void **state)
{
	char err[256], big[ES_URLLIST_MAX * 4 + 8] = "";
	es_urllist l;

	(void)state;
	assert_int_equal(es_urllist_split("controller-url", "", &l, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "controller-url: empty");
	assert_int_equal(es_urllist_split("controller-url", "wss://a,,wss://b", &l, err,
					  sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "an empty entry"));
	assert_int_equal(l.n, 0);
	assert_int_equal(es_urllist_split("server", "https://a, ", &l, err,
					  sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "server: "));
	for (int i = 0; i <= ES_URLLIST_MAX; i++)
		strcat(big, i ? ",u" : "u");
	assert_int_equal(es_urllist_split("server", big, &l, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "more than 16"));
}

static void test_advance(void **state)
{
	es_urllist l;
	char err[64];

	(void)state;
	assert_int_equal(es_urllist_split("k", "a,b", &l, err, sizeof(err)), ES_OK);
	/* a's name has three addresses: all of them, then b, then a again */
	assert_int_equal(es_urllist_advance(&l, 3), 0);
	assert_int_equal(l.cur, 0);
	assert_int_equal(l.addr, 1);
	assert_int_equal(es_urllist_advance(&l, 3), 0);
	assert_int_equal(l.addr, 2);
	assert_int_equal(es_urllist_advance(&l, 3), 0);
	assert_int_equal(l.cur, 1);
	assert_int_equal(l.addr, 0);
	assert_string_equal(es_urllist_current(&l), "b");
	/* b is a literal (1 address; 0 when its name did not resolve) */
	assert_int_equal(es_urllist_advance(&l, 0), 1);
	assert_int_equal(l.cur, 0);
	assert_int_equal(l.addr, 0);
	es_urllist_free(&l);

	/* one URL with one address stays where it is, each round wraps */
	assert_int_equal(es_urllist_split("k", "only", &l, err, sizeof(err)), ES_OK);
	assert_int_equal(es_urllist_advance(&l, 1), 1);
	assert_int_equal(l.cur, 0);
	es_urllist_free(&l);
}

static void test_join_flag(void **state)
{
	char *argv[] = { "prog", "run", "--controller-url", "wss://a", "--log-level",
			 "debug", "--controller-url=wss://b", "--controller-urlx=no",
			 "--", "--controller-url", "wss://c" };
	char *one[] = { "prog", "--controller-url", "wss://a" };
	char *missing[] = { "prog", "--controller-url=wss://a", "--controller-url" };
	char err[128], *out = (char *)"x";

	(void)state;
	assert_int_equal(es_urllist_join_flag(11, argv, 2, "controller-url", &out, err,
					      sizeof(err)), ES_OK);
	assert_non_null(out);
	assert_string_equal(out, "wss://a,wss://b");
	free(out);
	/* given once: left to the settings parser */
	assert_int_equal(es_urllist_join_flag(3, one, 1, "controller-url", &out, err,
					      sizeof(err)), ES_OK);
	assert_null(out);
	assert_int_equal(es_urllist_join_flag(3, missing, 1, "controller-url", &out, err,
					      sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--controller-url: missing value");
	assert_null(out);
}

/* The weights are pinned: every agent and build must give the same order.
 * The values were computed apart from this code (FNV-1a 64 over node,
 * NUL, target; then splitmix64's finaliser). */
static void test_weight(void **state)
{
	(void)state;
	assert_true(es_urllist_weight("", "") == 0x71b8262bb6e2e086ULL);
	assert_true(es_urllist_weight(NULL, NULL) == 0x71b8262bb6e2e086ULL);
	assert_true(es_urllist_weight("node-a", "wss://10.0.0.1:7443") ==
		    0xb42de1186352855aULL);
	assert_true(es_urllist_weight("edge-7", "wss://ctl-b.example:7443/v1/sync") ==
		    0x9ce7a3a7c9fb16aeULL);
	/* the NUL separates node from target */
	assert_true(es_urllist_weight("ab", "c") != es_urllist_weight("a", "bc"));
	assert_true(es_urllist_weight("node-a", "x") != es_urllist_weight("node-b", "x"));
}

static const char *const three[] = {
	"wss://10.0.0.1:7443", "wss://10.0.0.2:7443", "wss://10.0.0.3:7443",
};

/* A permutation, the same on every call, and the same targets in the same
 * order whatever order they are listed in. */
static void test_order(void **state)
{
	const char *const rev[] = { three[2], three[1], three[0] };
	size_t o[3], again[3], r[3];
	int firsts[3] = { 0 };
	char node[32];

	(void)state;
	for (int k = 0; k < 50; k++) {
		int seen[3] = { 0 };

		snprintf(node, sizeof(node), "node-%d", k);
		es_urllist_order(node, three, 3, o);
		es_urllist_order(node, three, 3, again);
		es_urllist_order(node, rev, 3, r);
		for (int i = 0; i < 3; i++) {
			assert_true(o[i] < 3);
			seen[o[i]]++;
			assert_int_equal(o[i], again[i]);
			assert_string_equal(three[o[i]], rev[r[i]]);
			if (i)
				assert_true(es_urllist_weight(node, three[o[i - 1]]) >=
					    es_urllist_weight(node, three[o[i]]));
		}
		for (int i = 0; i < 3; i++)
			assert_int_equal(seen[i], 1);
		firsts[o[0]]++;
	}
	/* the order is the node's: 50 nodes do not all start at one */
	for (int i = 0; i < 3; i++)
		assert_true(firsts[i] > 0);

	/* the same target twice: listed order between the two */
	{
		const char *const dup[] = { "b", "a", "b" };
		size_t d[3];

		es_urllist_order("n", dup, 3, d);
		for (int i = 0, last = -1; i < 3; i++) {
			if (d[i] != 1) {
				assert_true((int)d[i] > last);
				last = (int)d[i];
			}
		}
	}
	es_urllist_order("n", NULL, 0, o); /* nothing to order */
}

/* |got - want| within 6 standard deviations of a binomial(n, p): a fair
 * hash misses that once in about 5e8. */
static void assert_binomial(int got, int n, double p)
{
	double sd = sqrt(n * p * (1 - p));

	if (fabs(got - n * p) > 6 * sd)
		fail_msg("%d of %d, expected %.0f +- %.0f", got, n, n * p, 6 * sd);
}

/* 3000 nodes over 3 targets: about a third start at each; with one target
 * gone, the nodes of the others stay where they are and the gone one's
 * split about evenly over the two left. */
static void test_spread(void **state)
{
	enum { NODES = 3000 };
	static unsigned char first[NODES];
	int per[3] = { 0 };
	char node[32];
	size_t o[3];

	(void)state;
	for (int k = 0; k < NODES; k++) {
		snprintf(node, sizeof(node), "node-%05d", k);
		es_urllist_order(node, three, 3, o);
		first[k] = (unsigned char)o[0];
		per[o[0]]++;
	}
	for (int i = 0; i < 3; i++)
		assert_binomial(per[i], NODES, 1.0 / 3);
	for (int gone = 0; gone < 3; gone++) {
		const char *left[2];
		int moved[2] = { 0 }, n = 0;

		for (int i = 0; i < 3; i++)
			if (i != gone)
				left[n++] = three[i];
		for (int k = 0; k < NODES; k++) {
			size_t o2[2];

			snprintf(node, sizeof(node), "node-%05d", k);
			es_urllist_order(node, left, 2, o2);
			if (first[k] != gone) {
				assert_string_equal(left[o2[0]], three[first[k]]);
				continue;
			}
			moved[o2[0]]++;
			/* its second choice of the three */
			es_urllist_order(node, three, 3, o);
			assert_string_equal(left[o2[0]], three[o[1]]);
		}
		assert_int_equal(moved[0] + moved[1], per[gone]);
		assert_binomial(moved[0], per[gone], 0.5);
	}
}

static void test_order_for(void **state)
{
	es_urllist l;
	size_t perm[3], o[3];
	char err[64];

	(void)state;
	assert_int_equal(es_urllist_split("k", "wss://10.0.0.1:7443,wss://10.0.0.2:7443,"
					  "wss://10.0.0.3:7443", &l, err, sizeof(err)), ES_OK);
	l.cur = 2;
	l.addr = 1;
	es_urllist_order_for(&l, "node-a", perm);
	es_urllist_order("node-a", three, 3, o);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(perm[i], o[i]);
		assert_string_equal(l.items[i], three[o[i]]);
	}
	assert_int_equal(l.cur, 0);
	assert_int_equal(l.addr, 0);
	assert_string_equal(es_urllist_current(&l), three[o[0]]);
	es_urllist_order_for(&l, "node-a", NULL); /* ordered again: no change */
	for (int i = 0; i < 3; i++)
		assert_string_equal(l.items[i], three[o[i]]);
	es_urllist_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_bad),
		cmocka_unit_test(test_advance),
		cmocka_unit_test(test_join_flag),
		cmocka_unit_test(test_weight),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_order_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
