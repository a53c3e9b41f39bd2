/* Data files: data/xx/yy/<data id>, chunk i at i * chunk_size, sparse.
 * Called from worker threads: only the immutable dirfd is shared. Each call
 * opens and closes the file (a few microseconds next to a chunk's I/O). */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

void store_data_path(char *buf, size_t len, uint64_t data_id)
{
	snprintf(buf, len, "data/%02x/%02x/%016" PRIx64, (unsigned)(data_id & 0xff),
	         (unsigned)((data_id >> 8) & 0xff), data_id);
}

static int mkdirs(int dirfd, const char *path)
{
	char dir[64];

	/* "data/xx/yy/<id>": create "data", "data/xx", "data/xx/yy". */
	for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
		size_t n = (size_t)(p - path);

		memcpy(dir, path, n);
		dir[n] = '\0';
		if (mkdirat(dirfd, dir, 0700) != 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int store_data_write(struct store *s, uint64_t data_id, uint64_t off, const void *buf, size_t len)
{
	char path[64];
	const uint8_t *p = buf;
	int fd, rc = 0;

	if (data_id == 0 || off > INT64_MAX || len > INT64_MAX - off)
		return -EINVAL;
	store_data_path(path, sizeof(path), data_id);
	fd = openat(s->dirfd, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		rc = mkdirs(s->dirfd, path);
		if (rc)
			return rc;
		fd = openat(s->dirfd, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	if (close(fd) != 0 && rc == 0 && errno != EINTR)
		rc = -errno;
	return rc;
}

int store_data_read(struct store *s, uint64_t data_id, uint64_t off, void *buf, size_t len)
{
	char path[64];
	uint8_t *p = buf;
	int fd, rc = 0;

	if (data_id == 0 || off > INT64_MAX || len > INT64_MAX - off)
		return -EINVAL;
	store_data_path(path, sizeof(path), data_id);
	fd = openat(s->dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -EIO; /* short: truncated behind our back */
			break;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	close(fd);
	return rc;
}

uint64_t store_checksum(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}
