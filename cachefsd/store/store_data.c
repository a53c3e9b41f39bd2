/* Data files: data/xx/yy/<data id>, chunk i at i * chunk_size, sparse.
 * Called from worker threads: only the immutable datafd is shared. Each
 * call opens and closes the file (a few microseconds next to a chunk's
 * I/O).
 *
 * Nothing planted or swapped in under data/ is ever used: files are opened
 * below the data/ descriptor with no symbolic link followed anywhere on
 * the way (openat2 RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW step per level
 * where the kernel has no openat2); a new object's file is created with
 * O_EXCL (one already there is refused, never reused); and an existing one
 * is used only if it is a regular file of the daemon's user with a single
 * link (no hard link to someone else's file). */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include "log.h"

/* 0 once openat2 turned out to be missing (ENOSYS), or for a unit test. */
static int use_openat2 = 1;

void store_data_path(char *buf, size_t len, uint64_t data_id)
{
	snprintf(buf, len, "data/%02x/%02x/%016" PRIx64, (unsigned)(data_id & 0xff),
	         (unsigned)((data_id >> 8) & 0xff), data_id);
}

/* The file's name below data/: "xx/yy/<id>". */
static void rel_path(char *buf, size_t len, uint64_t data_id)
{
	store_data_path(buf, len, data_id);
	memmove(buf, buf + 5, strlen(buf + 5) + 1);
}

/* Opens data/xx/yy of data_id one level at a time, never through a link;
 * creates the levels (0700) when create. An fd or -errno. */
static int leaf_dir(const struct store *s, uint64_t data_id, int create)
{
	const unsigned lv[2] = {(unsigned)(data_id & 0xff), (unsigned)((data_id >> 8) & 0xff)};
	int fd = s->datafd;

	for (int i = 0; i < 2; i++) {
		char name[4];
		int next;

		snprintf(name, sizeof(name), "%02x", lv[i]);
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0700) != 0 && errno != EEXIST)
				next = -1;
			else
				next = openat(fd, name,
				              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			int e = errno == ENOTDIR ? ELOOP : errno; /* a link or file in the way */

			if (fd != s->datafd)
				close(fd);
			return -e;
		}
		if (fd != s->datafd)
			close(fd);
		fd = next;
	}
	return fd;
}

/* Opens an existing data file (flags O_RDONLY or O_WRONLY). */
static int open_existing(const struct store *s, uint64_t data_id, int flags)
{
	char rel[64];
	int fd, dir;

	rel_path(rel, sizeof(rel), data_id);
	if (__atomic_load_n(&use_openat2, __ATOMIC_RELAXED)) {
		struct open_how how = {
		    .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
		};
		long r = syscall(SYS_openat2, s->datafd, rel, &how, sizeof(how));

		if (r >= 0)
			return (int)r;
		if (errno != ENOSYS)
			return errno == ENOTDIR ? -ELOOP : errno == EISDIR ? -EPERM : -errno;
		__atomic_store_n(&use_openat2, 0, __ATOMIC_RELAXED);
	}
	dir = leaf_dir(s, data_id, 0);
	if (dir < 0)
		return dir;
	fd = openat(dir, strrchr(rel, '/') + 1, flags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fd = errno == EISDIR ? -EPERM : -errno;
	close(dir);
	return fd;
}

/* An existing file is ours to use: a regular file of our user, one link. */
static int check_ours(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
		return -EPERM;
	return 0;
}

/* The new object's file: created here, or refused. */
static int create_new(const struct store *s, uint64_t data_id)
{
	char rel[64];
	int fd, dir = leaf_dir(s, data_id, 1);

	if (dir < 0)
		return dir;
	rel_path(rel, sizeof(rel), data_id);
	fd = openat(dir, strrchr(rel, '/') + 1,
	            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = -errno;
	close(dir);
	return fd;
}

int store_data_write(struct store *s, uint64_t data_id, uint64_t off, const void *buf, size_t len,
                     int fresh)
{
	const uint8_t *p = buf;
	int fd, rc = 0;

	if (data_id == 0 || off > INT64_MAX || len > INT64_MAX - off)
		return -EINVAL;
	fd = fresh ? create_new(s, data_id) : open_existing(s, data_id, O_WRONLY);
	if (fd < 0)
		return fd;
	if (!fresh && (rc = check_ours(fd)) != 0) {
		close(fd);
		return rc;
	}
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
	uint8_t *p = buf;
	int fd, rc = 0;

	if (data_id == 0 || off > INT64_MAX || len > INT64_MAX - off)
		return -EINVAL;
	fd = open_existing(s, data_id, O_RDONLY);
	if (fd < 0)
		return fd;
	rc = check_ours(fd);
	while (rc == 0 && len > 0) {
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

int store_data_unlink(struct store *s, uint64_t data_id)
{
	char rel[64];
	int dir = leaf_dir(s, data_id, 0), rc = 0;

	if (dir < 0)
		return dir == -ELOOP ? -ENOENT : dir; /* not a directory of ours: no file */
	rel_path(rel, sizeof(rel), data_id);
	if (unlinkat(dir, strrchr(rel, '/') + 1, 0) != 0)
		rc = -errno;
	close(dir);
	return rc;
}

uint64_t store_checksum(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

void store_test_set_openat2(int on)
{
	__atomic_store_n(&use_openat2, on, __ATOMIC_RELAXED);
}
