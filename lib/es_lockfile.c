/*
 * es_lockfile.c - exclusive lock on a state directory (es_lockfile.h).
 */
#include "es_lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

es_err es_lockfile_acquire(const char *path, int *fd, char *err, size_t errsz)
{
	char buf[32];
	ssize_t n;
	int f;

	*fd = -1;
	f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (f < 0)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	if (flock(f, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		if (e == EWOULDBLOCK) {
			n = pread(f, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			close(f);
			return es_errf(ES_ERR_STATE, err, errsz,
				       "%s: the state directory is in use by another "
				       "process (pid %s)", path, *buf ? buf : "unknown");
		}
		close(f);
		return es_errf(ES_ERR_IO, err, errsz, "%s: cannot lock: %s", path,
			       strerror(e));
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(f, 0) != 0 || pwrite(f, buf, (size_t)n, 0) != n) {
		int e = errno;

		close(f);
		return es_errf(ES_ERR_IO, err, errsz, "%s: cannot write: %s", path,
			       strerror(e));
	}
	*fd = f;
	return ES_OK;
}

void es_lockfile_release(int fd)
{
	if (fd < 0)
		return;
	(void)flock(fd, LOCK_UN);
	close(fd);
}
