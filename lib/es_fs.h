/*
 * es_fs.h - small file system helpers shared by the programs: mkdir -p,
 * syncing a directory, reading a whole file, and bounded line reading of
 * the text files of /proc and /etc.
 */
#ifndef ES_FS_H
#define ES_FS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "es_err.h"

/*
 * mkdir -p: creates the directory path (absolute or relative; borrowed)
 * and each missing parent with mode (the process umask applies, as for
 * mkdir(2)). Directories that exist are left as they are, mode included;
 * symbolic links to directories are followed.
 * Errors: ES_ERR_INVAL (path empty or PATH_MAX bytes or longer: err
 * "\"<path>\": bad path ..."); ES_ERR_IO (a mkdir failed, or a component
 * exists and is not a directory: err "cannot create <component>:
 * <strerror>", errno kept, ENOTDIR for the latter).
 */
es_err es_fs_mkdir_p(const char *path, mode_t mode, char *err, size_t errsz);

/*
 * fsync(2) of the directory that holds path (borrowed): its parent, "." for
 * a name without a slash, "/" for one directly under the root; so that a
 * rename or an unlink in it survives a crash (rename(2), fsync(2)).
 * Errors: ES_ERR_INVAL (path empty or PATH_MAX bytes or longer); ES_ERR_IO
 * (the directory cannot be opened or synced: err "<dir>: fsync of directory:
 * <strerror>", errno kept).
 */
es_err es_fs_sync_parent(const char *path, char *err, size_t errsz);

/*
 * Reads the whole file at path (borrowed) into *out (malloc'd, NUL-added,
 * the caller frees; "" for an empty file) and its length in bytes into
 * *len (NULL: not wanted). max is the most bytes accepted.
 * Errors: ES_ERR_IO ("<path>: <strerror>", errno kept), ES_ERR_TOOBIG
 * ("<path>: over <max> bytes"), ES_ERR_NOMEM; *out is NULL on error.
 */
es_err es_fs_read_all(const char *path, size_t max, char **out, size_t *len, char *err,
		      size_t errsz);

/* Longest line kept, newline excluded, plus 1; longer lines are returned
 * cut, with `overlong` set. */
#define ES_FS_LINE_MAX 4096
/* Largest file read; past it the read fails with ES_ERR_TOOBIG. */
#define ES_FS_FILE_MAX (16u * 1024u * 1024u)

/* A text file read one line at a time, in a fixed buffer (no allocation). */
typedef struct es_fs_lines {
	FILE *f;
	const char *path;       /* borrowed, for messages */
	unsigned long lineno;   /* 1-based number of the current line */
	size_t total;           /* bytes read so far */
	int overlong;           /* current line was longer than ES_FS_LINE_MAX-1 */
	char line[ES_FS_LINE_MAX]; /* current line, without its newline */
} es_fs_lines;

/* Opens path (borrowed: it must outlive lf) for line reading, close-on-exec.
 * Errors: ES_ERR_IO ("<path>: <strerror>", errno kept). */
es_err es_fs_lines_open(es_fs_lines *lf, const char *path, char *err, size_t errsz);
/* Reads the next line into lf->line; *more is 1 for a line, 0 at the end
 * of the file (a last line without a newline is a line). Errors: ES_ERR_IO
 * (read failed; errno kept), ES_ERR_TOOBIG (more than ES_FS_FILE_MAX bytes);
 * err names the file. */
es_err es_fs_lines_next(es_fs_lines *lf, int *more, char *err, size_t errsz);
/* Closes the file. NULL-safe, idempotent. */
void es_fs_lines_close(es_fs_lines *lf);

#endif
