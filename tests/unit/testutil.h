/*
 * testutil.h - helpers shared by the CMocka unit tests: temporary
 * directories, whole-file reads, JSON from literal text. Each helper fails
 * the running test (cmocka fail_msg) instead of returning an error, so a
 * test reads as the behaviour it checks. Compiled into the tests that list
 * testutil.c in their SOURCES; include after <cmocka.h>.
 */
#ifndef ES_TESTUTIL_H
#define ES_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_sample.h"

/*
 * Makes a new, empty, private (0700) directory /tmp/es-<tag>-XXXXXX
 * (mkdtemp) and writes its path into dir (dirsz bytes), and, when path is
 * not NULL, the path of file (not created) inside it into path (pathsz
 * bytes). Fails the test when the paths do not fit or mkdtemp fails.
 */
void es_test_tmpdir(char *dir, size_t dirsz, const char *tag, char *path,
		    size_t pathsz, const char *file);

/* Removes dir and everything below it (symbolic links are removed, not
 * followed). A missing dir is not an error. Returns 0, or -1 when something
 * could not be removed. */
int es_test_rmtree(const char *dir);

/* Reads the whole file at path into a new buffer the caller frees, with a
 * NUL after the *len bytes of content (len may be NULL). Fails the test
 * when the file cannot be read. */
char *es_test_slurp(const char *path, size_t *len);

/* Runs main_fn(argc, argv) with stderr (fd 2) sent to a file in dir
 * (removed after), for the programs' entry points that print their
 * errors there. Returns main_fn's result; *errout gets what it wrote
 * (NUL-terminated; the caller frees). */
int es_test_run_stderr(const char *dir, int (*main_fn)(int, char **), int argc,
		       char **argv, char **errout);

/* Fails the test unless the file at path holds exactly the len bytes of
 * want (a file the code under test must have left untouched). */
void es_test_assert_file_bytes(const char *path, const char *want, size_t len);

/* Parses JSON text (ES_JSON_MAX_DEPTH) into a new item the caller owns.
 * Fails the test, naming the error, when text does not parse. */
cJSON *es_test_json(const char *text);

/* The string member name of o, or NULL when it is absent or not a
 * string (borrowed from o). */
const char *es_test_str(const cJSON *o, const char *name);

/* Fails the test, printing text, unless text holds "\n" line "\n": line
 * as a whole line that is not the first one (line: up to 509 bytes, longer
 * is cut). For rendered text formats such as Prometheus exposition. */
void es_test_assert_line(const char *text, const char *line);

/*
 * Reads a Node status as the agent reports it (its usage and collectors
 * members, PROTOCOL.md "Node"; borrowed) into out (es_sample.h, cleared
 * first; es_sample_clear it), member by member: what is absent or not a
 * number stays uncollected. out->pid_max gets pid_max. Lets tests written
 * as Node status JSON drive the readers of a sample, and checks the
 * collectors' sample against their JSON. Fails the test on allocation
 * failure.
 */
void es_test_sample(const cJSON *status, int64_t pid_max, es_sample *out);

#endif
