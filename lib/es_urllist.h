/*
 * es_urllist.h - a list of server URLs to go through in turn: the agent's
 * controller-url and edgesyncctl's --server, each of which may name
 * several controllers. Given comma-separated ("wss://a:7443,wss://b:7443")
 * or as a flag repeated (es_urllist_join_flag); a name in a URL that
 * resolves to several addresses counts as one target per address
 * (es_urllist_advance walks them before the next URL).
 *
 * The list keeps only where it stands (cur, addr): nothing per server.
 */
#ifndef ES_URLLIST_H
#define ES_URLLIST_H

#include <stddef.h>
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

#endif
