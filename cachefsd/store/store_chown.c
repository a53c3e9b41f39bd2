/* Moving a cache directory to another user (cachefsctl chown): what makes a
 * cache made by root usable by the cachefsd service user without weakening
 * the checks of store.c (check_private, check_ours), which refuse what
 * another user could have planted or swapped.
 *
 * Only what the cache's owner could have made is given away: the entries
 * of the directory's owner (or of the new user already: a second run after
 * an interrupted one). Nothing is followed or given that someone else could
 * have put there: a symbolic link, another user's file, a file with more
 * than one link (a hard link to a file elsewhere, e.g. /etc/shadow, would
 * otherwise change that file's owner), a directory its group or others may
 * write (what is in it may be anyone's). Those are left as they are and
 * reported; the store refuses or removes them as it did before. Each
 * entry is opened without following links and changed through its
 * descriptor (fchown), after checking the descriptor is the entry that was
 * examined. The directory itself is changed last, and the cache's lock
 * (the flock a running cachefsd holds, store.c open_dir) is held
 * throughout: no daemon uses the cache meanwhile. */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHOWN_DEPTH 8 /* data/xx/yy/file is 3; index.corrupt-*, nsm/sm/ less */

struct chown_walk {
	uid_t from, to;
	gid_t gid; /* (gid_t)-1: unchanged */
	struct store_chown_result *res;
	store_chown_skip_fn skip;
	void *arg;
	char *err;
	size_t errlen;
};

static void skipped(struct chown_walk *w, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void skipped(struct chown_walk *w, const char *path, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	w->res->skipped++;
	if (w->skip)
		w->skip(path, why, w->arg);
}

/* Gives the open entry fd (examined as st) to the new owner. */
static int give(struct chown_walk *w, int fd, const struct stat *st, const char *path)
{
	if (st->st_uid == w->to && (w->gid == (gid_t)-1 || st->st_gid == w->gid)) {
		w->res->already++;
		return 0;
	}
	if (fchown(fd, w->to, w->gid) != 0) {
		int e = errno;

		snprintf(w->err, w->errlen, "cannot give %s to uid %u: %s%s", path, (unsigned)w->to,
		         strerror(e), e == EPERM ? " (run cachefsctl chown as root)" : "");
		return -e;
	}
	w->res->changed++;
	return 0;
}

/* Opens name in dfd as what st says it is, without following a link, and
 * checks it is still that entry: the descriptor, or -errno (-ESTALE: the
 * entry changed meanwhile). */
static int open_same(int dfd, const char *name, const struct stat *st)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	struct stat now;
	int fd;

	if (S_ISDIR(st->st_mode))
		flags |= O_DIRECTORY;
	fd = openat(dfd, name, flags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    now.st_uid != st->st_uid || (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT) ||
	    now.st_nlink != st->st_nlink) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int walk_dir(struct chown_walk *w, int dfd, const char *path, int depth)
{
	int rc = 0, fd = dup(dfd);
	struct dirent *de;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(w->err, w->errlen, "cannot read %s: %s", path, strerror(-rc));
		return rc;
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		char sub[4200];
		struct stat st;
		int efd;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			rc = -errno;
			snprintf(w->err, w->errlen, "cannot stat %s: %s", sub, strerror(-rc));
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			skipped(w, sub,
			        "a symbolic link (cachefsd follows none, and removes one "
			        "where a data file should be)");
			continue;
		}
		if (st.st_uid != w->from && st.st_uid != w->to) {
			skipped(w, sub,
			        "owned by uid %u, not by the cache's owner (uid %u): not "
			        "theirs to give",
			        (unsigned)st.st_uid, (unsigned)w->from);
			continue;
		}
		if (S_ISREG(st.st_mode) && st.st_nlink != 1) {
			skipped(w, sub, "a file with %lu links (one may be outside the cache)",
			        (unsigned long)st.st_nlink);
			continue;
		}
		if (S_ISDIR(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH))) {
			skipped(w, sub,
			        "a directory its group or others may write (mode %04o): "
			        "what is in it may be anyone's",
			        (unsigned)(st.st_mode & 07777));
			continue;
		}
		if (S_ISDIR(st.st_mode) && depth >= CHOWN_DEPTH) {
			skipped(w, sub, "deeper than any directory of a cache");
			continue;
		}
		if (S_ISSOCK(st.st_mode)) {
			/* the control socket: cannot be opened; nothing but its
			 * owner can replace it in a directory no one else writes */
			if (st.st_uid == w->to && (w->gid == (gid_t)-1 || st.st_gid == w->gid))
				w->res->already++;
			else if (fchownat(dfd, de->d_name, w->to, w->gid, AT_SYMLINK_NOFOLLOW) == 0)
				w->res->changed++;
			else
				skipped(w, sub, "a socket: %s", strerror(errno));
			continue;
		}
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
			skipped(w, sub, "neither a file nor a directory");
			continue;
		}
		efd = open_same(dfd, de->d_name, &st);
		if (efd == -ESTALE || efd == -ELOOP || efd == -ENOENT) {
			skipped(w, sub, "changed while it was looked at");
			continue;
		}
		if (efd < 0) {
			rc = efd;
			snprintf(w->err, w->errlen, "cannot open %s: %s", sub, strerror(-rc));
			break;
		}
		if (S_ISDIR(st.st_mode))
			rc = walk_dir(w, efd, sub, depth + 1); /* its entries first */
		if (rc == 0)
			rc = give(w, efd, &st, sub);
		close(efd);
	}
	if (rc == 0 && errno != 0) {
		rc = -errno;
		snprintf(w->err, w->errlen, "cannot read %s: %s", path, strerror(-rc));
	}
	closedir(d);
	return rc;
}

int store_chown(const char *dir, uid_t uid, gid_t gid, struct store_chown_result *res,
                store_chown_skip_fn skip, void *arg, char *err, size_t errlen)
{
	struct chown_walk w = {.to = uid,
	                       .gid = gid,
	                       .res = res,
	                       .skip = skip,
	                       .arg = arg,
	                       .err = err,
	                       .errlen = errlen};
	struct stat st, id;
	int dfd, rc;

	memset(res, 0, sizeof(*res));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cache_dir %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (fstat(dfd, &st) != 0) {
		rc = -errno;
		snprintf(err, errlen, "cache_dir %s: %s", dir, strerror(-rc));
		goto out;
	}
	w.from = st.st_uid;
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
		         "cache_dir %s is writable by its group or others (mode %04o): what is in "
		         "it may be anyone's; nothing changed: look at its contents, chmod go-w "
		         "it, or start with an empty cache",
		         dir, (unsigned)(st.st_mode & 07777));
		rc = -EPERM;
		goto out;
	}
	/* a cache (its identity file), or an empty directory: not any tree
	 * a mistyped --cache-dir names */
	if (fstatat(dfd, "CACHE", &id, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(id.st_mode)) {
		DIR *d;
		struct dirent *de;
		int empty = 1, fd = dup(dfd);

		d = fd >= 0 ? fdopendir(fd) : NULL;
		if (d == NULL) {
			rc = -errno;
			if (fd >= 0)
				close(fd);
			snprintf(err, errlen, "cache_dir %s: %s", dir, strerror(-rc));
			goto out;
		}
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				empty = 0;
		closedir(d);
		if (!empty) {
			snprintf(err, errlen,
			         "cache_dir %s has no CACHE file: not a cachefsd cache; nothing "
			         "changed",
			         dir);
			rc = -EINVAL;
			goto out;
		}
	}
	if (flock(dfd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (rc == -EBUSY)
			snprintf(err, errlen,
			         "cache_dir %s is in use by a running cachefsd: stop it first; "
			         "nothing changed",
			         dir);
		else
			snprintf(err, errlen, "cache_dir %s: cannot lock: %s", dir, strerror(-rc));
		goto out;
	}
	rc = walk_dir(&w, dfd, dir, 0);
	if (rc == 0)
		rc = give(&w, dfd, &st, dir); /* last: a second run finds the rest */
out:
	close(dfd); /* releases the lock */
	return rc;
}
