/* See include/files.h. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

FILE *cfs_fopen_nofollow(const char *path, const char *mode)
{
	int flags, fd;
	FILE *f;

	if (strcmp(mode, "r") == 0) {
		flags = O_RDONLY;
	} else if (strcmp(mode, "w") == 0) {
		/* a new file: nothing left there (a link, someone's file) is
		 * written through */
		if (unlink(path) != 0 && errno != ENOENT)
			return NULL;
		flags = O_WRONLY | O_CREAT | O_EXCL;
	} else if (strcmp(mode, "a") == 0) {
		flags = O_WRONLY | O_CREAT | O_APPEND;
	} else {
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, mode);
	if (f == NULL) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}
