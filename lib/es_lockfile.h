/*
 * es_lockfile.h - one process per state directory.
 *
 * Two agents (or controllers) on the same state directory would share one
 * database and take the controller connection from each other in turn. The
 * owner holds an exclusive flock(2) on a lock file for its lifetime; the
 * kernel drops it when the process exits, however it exits, so a crash
 * never leaves a stale lock.
 */
#ifndef ES_LOCKFILE_H
#define ES_LOCKFILE_H

#include <stddef.h>
#include "es_err.h"

/*
 * Opens or creates path (mode 0600), takes an exclusive non-blocking flock
 * on it and writes this process's pid into it. On success *fd is the open
 * descriptor, to keep until es_lockfile_release.
 * Errors: ES_ERR_STATE when another process holds the lock (err names the
 * file and, when readable, the holder's pid); ES_ERR_IO when the file cannot
 * be opened or locked (err names the file and errno text).
 */
es_err es_lockfile_acquire(const char *path, int *fd, char *err, size_t errsz);

/* Releases the lock and closes fd. A negative fd is ignored. The file is
 * left in place (removing it would race with a new owner). */
void es_lockfile_release(int fd);

#endif
