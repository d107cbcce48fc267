/*
 * es_urllist.h - a list of server URLs to go through in turn: the agent's
 * controller-url and edgesyncctl's --server, each of which may name
 * several controllers. Given comma-separated ("wss://a:7443,wss://b:7443")
 * or as a flag repeated (es_urllist_join_flag); a name in a URL that
 * resolves to several addresses counts as one target per address
 * (es_urllist_advance walks them before the next URL).
 *
 * The list keeps only where it stands (cur, addr): nothing per server.
 *
 * Where to start and which target comes next is the order of items: as
 * listed, or per node by rendezvous hashing (es_urllist_order_for), so
 * that the agents of one list spread over its servers, and the nodes of a
 * server that fails spread evenly over the others. The addresses of a
 * name are a caller's to order the same way (es_urllist_order over their
 * text) in their URL's place: two levels, so a dead address's nodes go on
 * to that name's other addresses first. A list of single-address URLs,
 * or one name of many addresses, is one level, and the spread is even.
 */
#ifndef ES_URLLIST_H
#define ES_URLLIST_H

#include <stddef.h>
#include <stdint.h>
#include "es_err.h"

/* Most URLs one list takes. */
#define ES_URLLIST_MAX 16

typedef struct es_urllist {
	char *items[ES_URLLIST_MAX]; /* each URL as given, spaces trimmed; owned */
	size_t n;                    /* 1..ES_URLLIST_MAX after a parse */
	size_t cur;                  /* the URL in use */
	size_t addr;                 /* the address of cur's host in use */
} es_urllist;

/*
 * Splits list at commas into out (zeroed first; free with
 * es_urllist_free), spaces around each URL dropped; cur and addr 0. Each
 * URL is only split here: the caller parses it (es_url_parse or its own
 * rules). key names the setting in messages.
 * Errors: ES_ERR_INVAL (list NULL or empty, an empty entry as in "a,,b" or
 * a trailing comma, more than ES_URLLIST_MAX URLs: err names key),
 * ES_ERR_NOMEM.
 */
es_err es_urllist_split(const char *key, const char *list, es_urllist *out,
			char *err, size_t errsz);

/* Frees what l holds and zeroes it. NULL-safe. */
void es_urllist_free(es_urllist *l);

/* The URL in use (never NULL after a successful split). */
const char *es_urllist_current(const es_urllist *l);

/*
 * Moves on after the target in use failed. naddrs is how many addresses
 * the current URL's host had (0 or 1 for an address literal or a name
 * that gave one): the next address of the same URL while there is one,
 * else the first address of the next URL (the first URL after the last).
 * Returns 1 when that move wrapped around to the first target of all (a
 * whole round failed), else 0.
 */
int es_urllist_advance(es_urllist *l, size_t naddrs);

/*
 * Joins every value of a repeated flag ("--flag V" and "--flag=V" in
 * argv[first..argc)) with commas, in order, into *out (malloc'd, the
 * caller frees), so that a flag given several times means a list; *out is
 * NULL when the flag is given at most once (the settings parser then
 * handles it as usual). Arguments after "--" are not looked at.
 * Errors: ES_ERR_INVAL (the flag last with no value: err names it),
 * ES_ERR_NOMEM.
 */
es_err es_urllist_join_flag(int argc, char **argv, int first, const char *flag,
			    char **out, char *err, size_t errsz);

/*
 * The rendezvous (highest random weight) weight of target for node:
 * Thaler and Ravishankar, "Using name-based mappings to increase hit
 * rates", IEEE/ACM Transactions on Networking 6(1), 1998. It is FNV-1a 64
 * (Fowler, Noll, Vo; draft-eastlake-fnv) over the bytes of node, one NUL
 * byte and the bytes of target, finished with the splitmix64 mixer
 * (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014), so that every output bit depends on every input bit and
 * names that differ in one character (node-1, node-2) get unrelated
 * orders. node and target are NUL-terminated text (NULL counts as "").
 * The value is part of the agent's behaviour (every agent, every build
 * and the fleet simulator must give the same one), so it never changes:
 * the unit test pins it.
 */
uint64_t es_urllist_weight(const char *node, const char *target);

/*
 * Fills order[0..n) with 0..n-1 sorted by es_urllist_weight(node,
 * targets[i]), highest first; equal weights (the same target listed twice)
 * keep their listed order. Every node gets its own order of the same
 * targets, the same on every call; when a target is removed the others
 * keep their relative order, so the nodes that had it first move to their
 * second, which is spread evenly over the rest. targets[i] are
 * NUL-terminated (borrowed); any n (the sort is quadratic: meant for a
 * list or the addresses of one name). Allocates nothing, cannot fail.
 */
void es_urllist_order(const char *node, const char *const *targets, size_t n,
		      size_t *order);

/*
 * Puts l's URLs in node's rendezvous order (es_urllist_order over
 * l->items) and starts at the first: cur and addr 0. perm, when not NULL,
 * gets for each new position the old index (perm[new] = old; n entries),
 * for a caller that keeps something per URL beside the list.
 */
void es_urllist_order_for(es_urllist *l, const char *node, size_t *perm);

#endif
