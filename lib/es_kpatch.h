/*
 * es_kpatch.h - keyed changes of a reported Node (protocol version 2,
 * proto/PROTOCOL.md "delta"): a strategic-merge-style patch.
 *
 * A keyed change is a JSON Merge Patch (RFC 7386) except at the keyed
 * paths of es_kpatch_keys (the arrays of named things in a Node: its
 * conditions, filesystems, interfaces, collectors, object statuses,
 * cgroups, connections, devices), where it follows the list rules of the
 * Kubernetes strategic merge patch:
 *   - the patch value is an array of item patches; each carries the
 *     list's merge key members and is merged (recursively, by these same
 *     rules) into the item with that key, or appended when there is none;
 *   - {<key members>, "$patch": "delete"} removes the item with that key;
 *   - an array whose first element is {"$patch": "replace"} replaces the
 *     list with its other elements (lists whose items lack a key, or hold
 *     one key twice);
 *   - "$setElementOrder/<member>" beside a list member gives the final
 *     order as an array of {<key members>}; items it does not name follow
 *     in their order.
 * Member names that begin with "$" are directives; a Node has none.
 */
#ifndef ES_KPATCH_H
#define ES_KPATCH_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "es_err.h"

/* Most merge-key members of one keyed list. */
#define ES_KPATCH_MAX_KEYS 4

/* One keyed list: its path from the Node object's root (members joined
 * by ".", "[]" for "in each item of the list"), and its merge key. */
typedef struct es_kpatch_key {
	const char *path;
	const char *keys[ES_KPATCH_MAX_KEYS]; /* NULL-terminated when fewer */
} es_kpatch_key;

/* The table of keyed paths (PROTOCOL.md "Keyed paths" lists the same),
 * ended by an entry whose path is NULL. */
extern const es_kpatch_key es_kpatch_keys[];

/* The keyed list at path (members joined by ".", "[]" for "in each item";
 * a string, borrowed), or NULL when path is not one of es_kpatch_keys. */
const es_kpatch_key *es_kpatch_key_of(const char *path);

/*
 * The text of item's merge key under k in *out (malloc'd, caller frees):
 * each key member's type and value, length prefixed, so two items have
 * the same text exactly when es_kpatch_apply matches them. Returns 0; 1
 * when item is not an object or a key member is missing or is not a
 * string or number (*out NULL); -1 when out of memory.
 */
int es_kpatch_item_key(const cJSON *item, const es_kpatch_key *k, char **out);

/*
 * 1 when a member name anywhere in v (borrowed; NULL: none) begins with
 * "$": es_kpatch_apply reads such a name in a change as a directive, so no
 * change can add or remove it (a Node has none). Else 0.
 */
int es_kpatch_has_directive(const cJSON *v);

/*
 * Computes the keyed change that turns from into to (both Node objects,
 * borrowed): es_kpatch_apply of *out to a copy of from gives a value equal
 * to to (es_json_equal), the keyed lists' order included. Members equal
 * in both are left out; a keyed list costs the items that changed (only
 * their changed members, with the key), one entry per removed item, and
 * an order only when the order differs from what applying gives. When
 * from and to are equal, *out is an empty object. As for es_mpatch_diff,
 * null members of to are dropped. from may be NULL (absent): then *out
 * builds to from nothing. Time is in proportion to the sizes times the
 * nesting depth, times a log for the keyed lists.
 * Errors: ES_ERR_INVAL (to is not an object, or from or to has a member
 * whose name begins with "$" anywhere: a change reads those as directives,
 * so it cannot express them; send the whole document instead),
 * ES_ERR_NOMEM. *out owned by the caller, NULL on error.
 */
es_err es_kpatch_diff(const cJSON *from, const cJSON *to, cJSON **out);

/*
 * Applies the keyed change patch (an object, borrowed; from a peer, so
 * every directive is checked) to *target (a Node object, or NULL for
 * absent) by the rules above. On success *target is replaced by the result.
 * Errors (err names the path and what is wrong; *target is unchanged and
 * still the caller's): ES_ERR_INVAL (patch is not an object; a keyed
 * list's item patch that is not an object or lacks a key member or has a
 * key member that is not a string or number; an unknown "$patch" value; a
 * "$setElementOrder/" that is not an array; an unknown "$" member),
 * ES_ERR_NOMEM.
 */
es_err es_kpatch_apply(cJSON **target, const cJSON *patch, char *err, size_t errsz);

#endif
