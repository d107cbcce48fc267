/*
 * es_config.h - table-driven settings shared by the three programs.
 *
 * Each program declares its settings once in a table of es_setting: key (as
 * in the config file), environment variable, long flag, type, default,
 * bounds, help line, and where the value lands in the program's own config
 * struct (offsetof). Sources are applied in order, later winning: defaults,
 * config file, EDGESYNC_* environment, command-line flags.
 *
 * Config file format: UTF-8 text, one `key = value` per line; blank lines
 * and lines starting with '#' are ignored; the value runs to the end of the
 * line with surrounding spaces removed; a value may be wrapped in double
 * quotes. Unknown keys, and a key given twice, are an error naming the key,
 * file and line. Messages show a value's control characters, byte order
 * mark and bytes that are not UTF-8 as \xNN.
 */
#ifndef ES_CONFIG_H
#define ES_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include "es_err.h"

typedef enum es_setting_type {
	ES_SET_STRING = 1,  /* char * in the struct, malloc'd, freed by es_config_free */
	ES_SET_INT = 2,     /* int64_t in the struct, bounds [min, max] */
	ES_SET_BOOL = 3,    /* int in the struct: true/false/yes/no/1/0/on/off */
	ES_SET_ENUM = 4,    /* int in the struct: the index in names of the value
			     * given, which must be one of names, matched
			     * ignoring ASCII case (as ES_SET_BOOL's words) */
} es_setting_type;

typedef struct es_setting {
	const char *key;      /* config-file key, e.g. "controller-url" */
	const char *env;      /* e.g. "EDGESYNC_CONTROLLER_URL", or NULL */
	const char *flag;     /* long flag without dashes, e.g. "controller-url", or NULL */
	es_setting_type type;
	const char *def;      /* default as text (parsed like any value); NULL = unset */
	int64_t min, max;     /* bounds for ES_SET_INT */
	size_t offset;        /* offsetof(struct, member) */
	const char *help;     /* one line for --help */
	/* ES_SET_ENUM: the allowed values, NULL-terminated; index i is stored
	 * as i (so an enum whose values are 0, 1, ... can name them). */
	const char *const *names;
} es_setting;

/* Applies every default of table (n entries) to cfg. Errors: ES_ERR_NOMEM,
 * ES_ERR_INVAL (a default does not parse: a programming error). */
es_err es_config_defaults(const es_setting *table, size_t n, void *cfg,
			  char *err, size_t errsz);

/* Reads the config file at path. Errors: ES_ERR_IO (cannot read: err names
 * the file), ES_ERR_INVAL (unknown key, a key given twice, bad value, value
 * out of bounds, an ES_SET_ENUM value not among its names: err names
 * file:line and the key, and for an enum the value and the allowed names,
 * e.g. "agent.conf:3: log-level: \"loud\": expected error, warn, info or
 * debug"; a key given twice also the line of the first), ES_ERR_NOMEM. */
es_err es_config_load_file(const es_setting *table, size_t n, void *cfg,
			   const char *path, char *err, size_t errsz);

/* Applies every set environment variable of the table. A variable set to
 * "" counts as unset for an ES_SET_INT, ES_SET_BOOL or ES_SET_ENUM setting
 * (none of them has an empty value); an ES_SET_STRING setting takes "".
 * Errors: ES_ERR_INVAL naming the variable. */
es_err es_config_load_env(const es_setting *table, size_t n, void *cfg,
			  char *err, size_t errsz);

/*
 * Applies flags from argv[first..argc): "--flag value" and "--flag=value";
 * for ES_SET_BOOL also "--flag" alone (true). Arguments that are not flags
 * of the table are an error unless positional != NULL, in which case
 * non-flag arguments are collected into positional (array of argc pointers,
 * borrowed from argv) and *npositional set. "--config" is skipped (with its
 * value) since es_config_find_file handles it. Errors: ES_ERR_INVAL naming
 * the flag ("unknown flag --foo", "--interval: expected an integer in 1..3600").
 */
es_err es_config_load_args(const es_setting *table, size_t n, void *cfg,
			   int argc, char **argv, int first,
			   const char **positional, int *npositional,
			   char *err, size_t errsz);

/* Returns the value of "--config PATH"/"--config=PATH" in argv[first..), or
 * the environment variable env_var when set, or NULL. Borrowed. */
const char *es_config_find_file(int argc, char **argv, int first,
				const char *env_var);

/* Sets one setting by key from text. Errors: ES_ERR_NOTFOUND (unknown key),
 * ES_ERR_INVAL (bad value, err names the key), ES_ERR_NOMEM. */
es_err es_config_set(const es_setting *table, size_t n, void *cfg,
		     const char *key, const char *value, char *err, size_t errsz);

/* Frees every ES_SET_STRING member of cfg. NULL-safe. */
void es_config_free(const es_setting *table, size_t n, void *cfg);

/* Prints one help line per setting (flag, env, default, help; the bounds
 * of an ES_SET_INT as "(1..3600)", the names of an ES_SET_ENUM as
 * "(auto|procfs)") to f. */
void es_config_print_help(const es_setting *table, size_t n, void *file);

#endif
