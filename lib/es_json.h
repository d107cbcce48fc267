/*
 * es_json.h - strict JSON parsing and typed member access on top of cJSON.
 *
 * cJSON accepts input edgesync must refuse (a raw NUL ends the text early,
 * "\u0000" silently truncates a string, nesting is bounded only at 1000), so
 * every JSON that crosses a trust boundary goes through es_json_parse.
 */
#ifndef ES_JSON_H
#define ES_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "es_err.h"

/* Deepest nesting es_json_parse accepts (PROTOCOL.md, "Limits"). */
#define ES_JSON_MAX_DEPTH 64

/* Largest integer a JSON number may carry exactly (2^53 - 1). */
#define ES_JSON_MAX_INT 9007199254740991LL

/*
 * Parses exactly len bytes of text (need not be NUL-terminated) as one JSON
 * value (RFC 8259), stricter than cJSON, with the I-JSON rules of RFC 7493.
 * Refuses: a raw 0 byte, the escape \u0000, invalid UTF-8 (overlong forms,
 * surrogates, above U+10FFFF), a byte-order mark, raw control characters
 * (in strings, and outside them other than tab, LF, CR), a number that is
 * not finite, an integer (no fraction or exponent) above 2^53-1 in
 * magnitude, an object with the same
 * member name twice, nesting deeper than max_depth (use
 * ES_JSON_MAX_DEPTH), trailing non-space bytes. Time is in proportion to
 * len (times log of the largest object's member count).
 * On success *out owns a new cJSON tree (free with cJSON_Delete).
 * Errors: ES_ERR_PARSE (err names the problem and the byte offset),
 * ES_ERR_NOMEM. *out is NULL on error.
 */
es_err es_json_parse(const char *text, size_t len, int max_depth, cJSON **out,
		     char *err, size_t errsz);

/*
 * Typed member getters. obj must be a JSON object. `what` names the object
 * in messages ("hello", "metadata"). Each returns ES_OK and sets *out; or
 * ES_ERR_NOTFOUND when the member is absent (and required==0: *out is left
 * unchanged, no message); or ES_ERR_INVAL when the member is absent and
 * required, or has the wrong type or range, with err set to e.g.
 * "hello.nextSeq: expected an integer in 0..2^53-1".
 * Strings are borrowed from obj (valid while obj lives).
 */
es_err es_json_get_str(const cJSON *obj, const char *what, const char *key,
		       int required, const char **out, char *err, size_t errsz);
/* Integer: a number with no fraction in [min, max]. */
es_err es_json_get_int(const cJSON *obj, const char *what, const char *key,
		       int required, int64_t min, int64_t max, int64_t *out,
		       char *err, size_t errsz);
es_err es_json_get_bool(const cJSON *obj, const char *what, const char *key,
			int required, int *out, char *err, size_t errsz);
/* Object or array member: *out borrowed. */
es_err es_json_get_obj(const cJSON *obj, const char *what, const char *key,
		       int required, const cJSON **out, char *err, size_t errsz);
es_err es_json_get_arr(const cJSON *obj, const char *what, const char *key,
		       int required, const cJSON **out, char *err, size_t errsz);

/*
 * A lookup index of one object's members by name, so that finding k names
 * in an object of n members costs O((n + k) log n), not O(n k). Objects of
 * at most ES_JSON_INDEX_MIN members are searched linearly (no allocation).
 * The index borrows obj: it is valid while obj lives and is not modified.
 */
#define ES_JSON_INDEX_MIN 8
typedef struct es_json_index_entry {
	const cJSON *item;
	size_t pos; /* place in the object, so equal names keep their order */
} es_json_index_entry;
typedef struct es_json_index {
	const cJSON *obj;
	es_json_index_entry *sorted; /* by name, then pos; NULL if small */
	size_t n;
} es_json_index;

/* Builds the index of obj (an object; anything else gives an empty index).
 * Errors: ES_ERR_NOMEM (ix is then empty and may still be freed). */
es_err es_json_index_init(es_json_index *ix, const cJSON *obj);
/* The first member named key, or NULL. */
const cJSON *es_json_index_find(const es_json_index *ix, const char *key);
/* Frees what es_json_index_init allocated. NULL-safe; ix may be reused. */
void es_json_index_free(es_json_index *ix);

/*
 * 1 when a and b are the same JSON value: the same type, numbers equal as
 * doubles (==), strings byte for byte, arrays element by element, objects
 * with as many members, each name of one found in the other with an equal
 * value (in any order; the first of a name given twice counts, as for
 * cJSON lookups), else 0. NULL equals only NULL. Unlike cJSON_Compare,
 * whose object comparison looks every member up linearly and whose numbers
 * are equal within a relative 2^-52 (so 2^53-1 equals 2^53-2), time is in
 * proportion to the sizes (times log of the largest object's member count)
 * and numbers compare exactly. The recursion is as deep as the trees.
 * Returns -1 when memory for an index runs out.
 */
int es_json_equal(const cJSON *a, const cJSON *b);

/*
 * Walks the members by which the object to differs from the object from,
 * as a merge patch (RFC 7386) or a keyed change sees them: for each name
 * (the first member of a name given twice counts, as for cJSON lookups)
 * calls fn(name, f, t, ctx) once, where
 *   - removed: f is from's member, t is NULL (the name is absent from to,
 *     or null there);
 *   - changed: f and t are both members and not es_json_equal (f may be a
 *     JSON null when to gives a value);
 *   - added:   f is NULL (absent from from), t is to's member, not null.
 * Names with equal values are skipped. Members of from come first, in
 * from's order, then the added ones in to's order. Both objects are
 * borrowed. Anything but an object counts as an empty object.
 * Returns 0 when every call returned 0; -1 when memory for an index ran
 * out; else the first negative value fn returned (the walk stops there).
 */
typedef int (*es_json_member_fn)(const char *name, const cJSON *f,
				 const cJSON *t, void *ctx);
int es_json_diff_members(const cJSON *from, const cJSON *to,
			 es_json_member_fn fn, void *ctx);

/*
 * Exact integer of a number item, range-checked before any conversion (a
 * cast of an infinite or huge double is undefined behaviour): returns 0 and
 * sets *out when v is a number with no fraction in [min, max] (clamped to
 * +-(2^53-1)), else -1 and *out is unchanged.
 */
int es_json_int_value(const cJSON *v, int64_t min, int64_t max, int64_t *out);

/* Room for any text es_json_number_text writes, with its NUL. */
#define ES_JSON_NUMBER_LEN 32

/*
 * Writes the JSON text of the finite number d into buf, text es_json_parse
 * reads back as the same double: an integer within 2^53-1 as one ("42");
 * any other number with the fewest of 15, 16 or 17 significant digits that
 * read back exactly ("0.1", "0.30000000000000004"), given ".0" when that
 * leaves an integer literal, which past 2^53-1 es_json_parse refuses
 * (RFC 7493 section 2.2: "9007199254740994.0"; "1e+17" is kept). Returns
 * buf, or NULL for NaN and infinities, which JSON cannot carry (buf is
 * then unchanged).
 */
char *es_json_number_text(double d, char buf[ES_JSON_NUMBER_LEN]);

/*
 * Serialises v compactly (no spaces), numbers as es_json_number_text
 * writes them (NaN and infinities, which JSON cannot carry, as null), so
 * that es_json_parse reads what it parsed back to an equal tree. Returns a
 * malloc'd NUL-terminated string the caller frees with free(), or NULL on
 * allocation failure.
 */
char *es_json_print(const cJSON *v);

/* Adds an integer member exactly (as a double, which is exact up to 2^53).
 * Returns the new item or NULL on allocation failure. */
cJSON *es_json_add_int(cJSON *obj, const char *key, int64_t v);

/* parent's member key when it is an object; else (absent, or another type)
 * a new empty object put in its place. Returns it (borrowed from parent),
 * or NULL on allocation failure. */
cJSON *es_json_object_member(cJSON *parent, const char *key);

/* Reads a whole file (at most max_bytes) and parses it with es_json_parse.
 * Errors: ES_ERR_IO (err names the path and errno text), ES_ERR_TOOBIG,
 * ES_ERR_PARSE, ES_ERR_NOMEM. */
es_err es_json_load_file(const char *path, size_t max_bytes, cJSON **out,
			 char *err, size_t errsz);

#endif
