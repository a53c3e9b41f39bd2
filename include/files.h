/* Files the daemon and cachefsctl write outside the store (the stats file,
 * warm state and progress files), by default inside the cache directory:
 * opened without following a symbolic link in their place, so that one
 * planted there cannot make us write somewhere else. */
#ifndef CFS_FILES_H
#define CFS_FILES_H

#include <stdio.h>

/* fopen() for mode "r", "w" or "a", with O_NOFOLLOW and O_CLOEXEC; "w"
 * replaces whatever is at path by a new file of mode 0600 (created with
 * O_EXCL), "a" creates one (0600) if there is none. NULL with errno set
 * (ELOOP: a symbolic link is there). The caller fclose()s it. */
FILE *cfs_fopen_nofollow(const char *path, const char *mode);

#endif
