/*
 * es_mounts.h - the kernel's mount table, read one entry at a time.
 *
 * Reads /proc/<pid>/mountinfo (proc(5): "36 35 98:0 /mnt1 /mnt2 rw,noatime
 * master:1 - ext3 /dev/root rw,errors=continue") and, for tables written in
 * the /proc/mounts (fstab(5)) format, "source target type options 0 0"; the
 * format is detected per line. The kernel writes a space, tab, newline and
 * backslash inside a field as the octal escapes \040, \011, \012 and \134
 * (getmntent(3); the kernel's seq_escape); every field is decoded the same
 * way.
 *
 * Bounded (es_fs_lines, es_fs.h): a line longer than ES_FS_LINE_MAX - 1
 * bytes is reported as a bad line, a table larger than ES_FS_FILE_MAX bytes
 * as an error. The reader holds one line buffer and nothing else, whatever
 * the table's size.
 */
#ifndef ES_MOUNTS_H
#define ES_MOUNTS_H

#include <stddef.h>
#include "es_err.h"

/* The mount table of the calling process. */
#define ES_MOUNTS_SELF "/proc/self/mountinfo"

/* One entry. The strings are decoded and live in the reader: they are
 * valid until the next es_mounts_next or es_mounts_close. */
typedef struct es_mount {
	const char *source;  /* the mounted device or "none", "proc", ... */
	const char *target;  /* the mount point */
	const char *fstype;  /* "ext4", "fuse.sshfs", ... */
	const char *options; /* mountinfo: per-mount options (field 6);
			      * mounts format: all options (field 4) */
	const char *root;    /* mountinfo: the directory of the filesystem
			      * mounted at target (field 4, "/" for the whole
			      * filesystem); NULL in the mounts format */
	const char *devid;   /* mountinfo: "major:minor" as written (field 3);
			      * NULL in the mounts format */
	unsigned major, minor; /* devid's numbers; 0 in the mounts format */
	int mountinfo;       /* 1: a mountinfo line; 0: a mounts-format line */
} es_mount;

typedef struct es_mounts es_mounts;

/*
 * Opens the mount table at path (NULL: ES_MOUNTS_SELF; tests pass a
 * fixture) for es_mounts_next. *out is the new reader, to free with
 * es_mounts_close; NULL on error.
 * Errors: ES_ERR_IO (cannot open: err "<path>: <strerror>", errno kept),
 * ES_ERR_NOMEM.
 */
es_err es_mounts_open(const char *path, es_mounts **out, char *err, size_t errsz);

/*
 * Reads the next entry into *ent. Lines of blanks only are skipped.
 * *more is 1 when a line was read (an entry, or a bad line), 0 at the end
 * of the table or on a read error.
 * Returns ES_OK (*more 1: *ent set; *more 0: the end), or:
 * - ES_ERR_PARSE with *more 1: the line is neither format, or too long
 *   (err "<path>:<line number>: not a mount table line"); *ent is not set
 *   and the next call reads on;
 * - ES_ERR_IO (read failed, errno kept) or ES_ERR_TOOBIG (more than
 *   ES_FS_FILE_MAX bytes), *more 0, err naming the table.
 */
es_err es_mounts_next(es_mounts *m, es_mount *ent, int *more, char *err,
		      size_t errsz);

/* Closes the table and frees the reader. NULL-safe. */
void es_mounts_close(es_mounts *m);

/*
 * Finds the first entry of the table at path (NULL: ES_MOUNTS_SELF) whose
 * fstype is fstype and, when not NULL, whose target is target and whose
 * root is root (mountinfo entries only then), and copies its decoded target
 * into where (wsz bytes). Bad lines and entries whose target does not fit
 * are skipped.
 * Errors: ES_ERR_NOTFOUND (no such entry: err says what was looked for),
 * and those of es_mounts_open and es_mounts_next (ES_ERR_IO, ES_ERR_TOOBIG,
 * ES_ERR_NOMEM) when the table cannot be read.
 */
es_err es_mounts_find(const char *path, const char *fstype, const char *target,
		      const char *root, char *where, size_t wsz, char *err,
		      size_t errsz);

#endif
