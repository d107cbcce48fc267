/*
 * fuzz_util.h - helpers shared by the libFuzzer targets of tests/fuzz/.
 */
#ifndef ES_FUZZ_UTIL_H
#define ES_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* The entry point libFuzzer calls with each input (data is not
 * NUL-terminated); returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Checks a property of the code under test: when cond is false, prints the
 * file, line, the condition and the message (printf format) to stderr and
 * aborts, so that libFuzzer keeps the input as a crash.
 */
#define FUZZ_CHECK(cond, ...)                                              \
	do {                                                               \
		if (!(cond))                                               \
			fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* Prints "file:line: check failed: expr: message" and aborts. */
void fuzz_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

/* One piece of an input split at NUL bytes (borrowed from the input). */
typedef struct fuzz_piece {
	const char *p;
	size_t n;
} fuzz_piece;

/*
 * Splits data at its NUL bytes into at most max pieces (the last piece
 * keeps the rest, NUL bytes included) and returns how many there are, at
 * least 1 (an empty input is one empty piece).
 */
size_t fuzz_split(const uint8_t *data, size_t size, fuzz_piece *pieces, size_t max);

/*
 * Compact JSON text of v for a failure message: a static buffer holding at
 * most 400 bytes of it ("(null)" for NULL); each call overwrites the one
 * before it of the same slot (0 or 1, so that two trees can be shown).
 */
const char *fuzz_json_show(const cJSON *v, int slot);

/*
 * es_json_equal(a, b) (lib/es_json.h: exact), checked against cJSON's own
 * comparison: values es_json_equal finds equal must be equal for
 * cJSON_Compare too (it only adds a relative epsilon for numbers). Aborts
 * through FUZZ_CHECK on a disagreement or when memory runs out. Returns 1
 * or 0. cJSON_Compare is quadratic in a member count: use on small trees.
 */
int fuzz_json_equal(const cJSON *a, const cJSON *b);

/* 1 when an object anywhere in v (v itself included) has a null member,
 * else 0. */
int fuzz_has_null_member(const cJSON *v);

#endif
