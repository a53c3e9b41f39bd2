/* The store: opening the cache directory (identity, index, recovery),
 * transactions, accounting. Records are in store_obj.c, the background
 * thread in store_bg.c, culling in store_cull.c. */
#include "store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define IDENTITY_MAX     4096
#define META_KEY         "totals"

uint64_t store_now(const struct store *s)
{
	return s->test_now ? s->test_now : (uint64_t)time(NULL);
}

uint64_t store_now_ms(const struct store *s)
{
	struct timespec ts;

	if (s->test_now)
		return s->test_now * 1000;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int store_mdb_errno(int rc)
{
	if (rc == 0)
		return 0;
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		return -ENOSPC;
	if (rc > 0)
		return -rc; /* a system errno */
	return -EIO;
}

int store_mdb_fatal(int rc)
{
	/* MDB_BAD_TXN too: every failure the store sees ends its transaction
	 * (store_txn_fail, pass end), so a transaction found unusable was made
	 * so by a failure LMDB kept to itself. That is damage: mdb_stat() and
	 * mdb_cursor_open() refresh a named database's root through
	 * mdb_cursor_init(), which drops the MDB_CORRUPTED of a damaged main
	 * tree, returns 0 and leaves the transaction unusable; without this,
	 * every later lookup failed with MDB_BAD_TXN and the index never
	 * counted as broken (93-metrics-alerts). */
	return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_PANIC ||
	       rc == MDB_BAD_TXN;
}

void store_set_broken(struct store *s, int rc, const char *what)
{
	char text[256];
	int fd, n;

	if (s->broken)
		return;
	s->broken = 1;
	log_err("cache index %s/index/data.mdb is damaged (%s: %s): caching disabled; the next "
	        "start replaces it with an empty index (restart cachefsd to recover now)",
	        s->dir, what, mdb_strerror(rc));
	/* the mark survives us: LMDB may map the damage without noticing
	 * at the next open (our check sees structure, not every value); a
	 * new file, as everything we create under the cache dir */
	unlinkat(s->indexfd, "damaged", 0);
	fd = openat(s->indexfd, "damaged", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	            0600);
	if (fd < 0)
		return;
	n = snprintf(text, sizeof(text), "%s: %s\n", what, mdb_strerror(rc));
	if (write(fd, text, (size_t)n) != n)
		log_warn("cache index: cannot write %s/index/damaged: %s", s->dir, strerror(errno));
	close(fd);
}

/* --- transactions ------------------------------------------------------- */

MDB_txn *store_txn_read(struct store *s, int *rc)
{
	int r;

	if (s->broken) {
		*rc = -EIO;
		return NULL;
	}
	if (s->wtxn)
		return s->wtxn;
	if (s->rtxn_live)
		return s->rtxn;
	r = s->rtxn ? mdb_txn_renew(s->rtxn) : mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->rtxn);
	if (r) {
		log_err("cache index: cannot begin a read transaction: %s", mdb_strerror(r));
		*rc = store_mdb_errno(r);
		return NULL;
	}
	s->rtxn_live = 1;
	return s->rtxn;
}

uint64_t store_db_entries(struct store *s, MDB_dbi db, const char *what)
{
	MDB_stat st;
	MDB_txn *txn;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return 0;
	rc = mdb_stat(txn, db, &st);
	if (rc) {
		/* mdb_stat can hide MDB_CORRUPTED behind MDB_BAD_TXN: both are
		 * damage (store_mdb_fatal) */
		if (store_mdb_fatal(rc))
			store_set_broken(s, rc, what);
		return 0;
	}
	return st.ms_entries;
}

MDB_txn *store_txn_write(struct store *s, int *rc)
{
	int r;

	if (s->broken) {
		*rc = -EIO;
		return NULL;
	}
	if (s->wtxn)
		return s->wtxn;
	/* One transaction per thread at a time (lmdb.h). */
	store_pass_end(s);
	r = mdb_txn_begin(s->env, NULL, 0, &s->wtxn);
	if (r) {
		s->wtxn = NULL;
		log_err("cache index: cannot begin a write transaction: %s", mdb_strerror(r));
		if (store_mdb_fatal(r))
			store_set_broken(s, r, "write transaction");
		*rc = store_mdb_errno(r);
		return NULL;
	}
	s->txn_bytes = 0;
	return s->wtxn;
}

/* The batch is gone: the in-memory state goes back to the last commit.
 * next_data_id does not: ids handed out stay used. */
static void rollback(struct store *s)
{
	store_meta_memo_clear(s); /* it may hold this pass's lost writes */
	s->tot = s->tot_committed;
	s->txq_len = 0;
	s->txq_bytes = 0;
	s->txn_bytes = 0;
	s->txn_drops = 0;
}

/* The pages LMDB has used in the index file: its last page's number + 1,
 * times the page size (a high-water mark: pages that evictions free are
 * reused below it, so it does not shrink). Read after a commit and at
 * open, not at a scrape: a damaged or truncated file is not touched again
 * once the store is broken. */
static void index_size_update(struct store *s)
{
	MDB_envinfo info;
	MDB_stat st;

	if (mdb_env_info(s->env, &info) == 0 && mdb_env_stat(s->env, &st) == 0)
		s->index_used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

/* A put or commit found the LMDB map full: culling makes room (store_cull_step). */
static void index_full_hit(struct store *s)
{
	s->index_full = 1;
	s->index_full_at = store_now(s);
	s->index_full_events++;
}

int store_txn_fail(struct store *s, int rc, const char *what)
{
	if (s->wtxn) {
		mdb_txn_abort(s->wtxn);
		s->wtxn = NULL;
	}
	rollback(s);
	if (rc == MDB_MAP_FULL) {
		/* Full again and again when the index is what limits the cache:
		 * say so once a minute. */
		if (s->index_full_logged == 0 || store_now(s) >= s->index_full_logged + 60) {
			log_err("cache index is full (map_size %" PRIu64 " bytes): this pass's "
			        "changes are lost; evicting",
			        s->map_size);
			s->index_full_logged = store_now(s);
		}
		index_full_hit(s);
	} else {
		log_err("cache index: %s failed: %s; this pass's changes are lost", what,
		        mdb_strerror(rc));
	}
	if (store_mdb_fatal(rc))
		store_set_broken(s, rc, what);
	return store_mdb_errno(rc);
}

static void meta_pack(uint8_t *b, const struct store *s)
{
	memset(b, 0, STORE_META_LEN);
	store_put_le32(b, 1);
	store_put_le64(b + 8, s->tot.bytes);
	store_put_le64(b + 16, s->tot.objects);
	store_put_le64(b + 24, s->tot.chunks);
	store_put_le64(b + 32, s->next_data_id);
	store_put_le64(b + 40, s->tot.evictions);
	store_put_le64(b + 48, s->tot.evicted_bytes);
	store_put_le64(b + 56, s->tot.csum_failures);
}

static int meta_unpack(const MDB_val *v, struct store *s)
{
	const uint8_t *b = v->mv_data;

	if (v->mv_size != STORE_META_LEN || store_get_le32(b) != 1)
		return -EINVAL;
	s->tot.bytes = store_get_le64(b + 8);
	s->tot.objects = store_get_le64(b + 16);
	s->tot.chunks = store_get_le64(b + 24);
	s->next_data_id = store_get_le64(b + 32);
	s->tot.evictions = store_get_le64(b + 40);
	s->tot.evicted_bytes = store_get_le64(b + 48);
	s->tot.csum_failures = store_get_le64(b + 56);
	return 0;
}

static int meta_put(struct store *s)
{
	uint8_t b[STORE_META_LEN];
	MDB_val k = {sizeof(META_KEY) - 1, META_KEY}, v = {sizeof(b), b};

	meta_pack(b, s);
	return mdb_put(s->wtxn, s->db_meta, &k, &v, 0);
}

int store_txn_commit(struct store *s)
{
	int rc;

	if (s->wtxn == NULL)
		return 0;
	/* After a failed commit the next waits for its backoff; the batch
	 * stays open meanwhile (store_cull.c). */
	if (!store_commit_due(s))
		return -EAGAIN;
	store_commit_prepare(s);
	rc = meta_put(s);
	if (rc)
		return store_txn_fail(s, rc, "commit");
	rc = mdb_txn_commit(s->wtxn);
	s->wtxn = NULL; /* freed even when the commit failed */
	if (rc) {
		rollback(s);
		if (rc == MDB_MAP_FULL)
			index_full_hit(s);
		if (store_mdb_fatal(rc))
			store_set_broken(s, rc, "commit");
		store_commit_failed(s, rc); /* logs; lmdb returns the write's errno */
		return store_mdb_errno(rc);
	}
	s->tot_committed = s->tot;
	index_size_update(s);
	if (s->txq_len) {
		store_bg_push(s, s->txq, s->txq_len);
		s->txq_len = 0;
		s->txq_bytes = 0;
	}
	s->txn_bytes = 0;
	s->txn_drops = 0;
	store_bg_committed(s);
	s->oldest_access = store_lru_oldest(s);
	store_commit_worked(s);
	return 0;
}

int store_commit_deferrable(const struct store *s)
{
	return s && s->wtxn && !s->txn_drops && !s->broken;
}

void store_pass_end(struct store *s)
{
	if (s && s->rtxn_live) {
		mdb_txn_reset(s->rtxn);
		s->rtxn_live = 0;
	}
}

int store_commit(struct store *s)
{
	int rc, rc2;

	if (s == NULL || s->broken)
		return s ? -EIO : 0;
	rc = store_touch_flush(s, STORE_TOUCH_BATCH, 0);
	rc2 = store_txn_commit(s);
	store_pass_end(s);
	return rc2 ? rc2 : rc;
}

uint64_t store_new_data_id(struct store *s)
{
	return s->next_data_id++;
}

/* --- the directory and its identity -------------------------------------- */

/* Renames name to prefix-<time>[-n]; the new name goes to out. */
static int move_aside(struct store *s, const char *name, const char *prefix, char *out,
                      size_t outlen)
{
	char stamp[32];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (int i = 0; i < 100; i++) {
		if (i == 0)
			snprintf(out, outlen, "%s-%s", prefix, stamp);
		else
			snprintf(out, outlen, "%s-%s-%d", prefix, stamp, i);
		if (renameat(s->dirfd, name, s->dirfd, out) == 0)
			return 0;
		if (errno != EEXIST && errno != ENOTEMPTY)
			return -errno;
	}
	return -EEXIST;
}

static int exists_at(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* What a cache directory may hold besides CACHE: ours, ext4's lost+found
 * (the cache on its own filesystem) and the start-up writability probe. */
static int name_is_ours(const char *n)
{
	static const char *const exact[] = {".", "..", "index", "data", "CACHE.tmp", "lost+found"};
	static const char *const prefix[] = {"index.corrupt-", "index.old-", "data.old-",
	                                     ".probe."};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(n, exact[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncmp(n, prefix[i], strlen(prefix[i])) == 0)
			return 1;
	return 0;
}

/* 1 with the offending name in *bad when the directory holds anything
 * that is not ours. */
static int dir_foreign(struct store *s, char *bad, size_t badlen)
{
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;
	int foreign = 0;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		snprintf(bad, badlen, "(unreadable)");
		return 1;
	}
	while (!foreign && (de = readdir(d)) != NULL) {
		if (!name_is_ours(de->d_name)) {
			snprintf(bad, badlen, "%s", de->d_name);
			foreign = 1;
		}
	}
	closedir(d);
	return foreign;
}

static int write_identity(struct store *s)
{
	char text[IDENTITY_MAX + 128];
	int n = snprintf(text, sizeof(text),
	                 "# cachefsd cache directory: do not edit\nlayout %d\nupstream %s\n",
	                 STORE_LAYOUT_VERSION, s->identity);
	int fd;

	/* a new file of ours: nothing left there is written through */
	if (unlinkat(s->dirfd, "CACHE.tmp", 0) != 0 && errno != ENOENT)
		return -errno;
	fd = openat(s->dirfd, "CACHE.tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	            0600);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (write(fd, text, (size_t)n) != n || fsync(fd) != 0) {

		int e = errno ? errno : EIO;

		close(fd);
		return -e;
	}
	close(fd);
	if (renameat(s->dirfd, "CACHE.tmp", s->dirfd, "CACHE") != 0)
		return -errno;
	fsync(s->dirfd);
	return 0;
}

/* Parses CACHE: 0 with *layout and ident filled, or -EINVAL. */
static int parse_identity(char *text, int *layout, char *ident, size_t identlen)
{
	int have_layout = 0, have_ident = 0;
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (strncmp(line, "layout ", 7) == 0) {
			char *end;
			long v = strtol(line + 7, &end, 10);

			if (*end != '\0' || v < 0 || v > 1000000)
				return -EINVAL;
			*layout = (int)v;
			have_layout = 1;
		} else if (strncmp(line, "upstream ", 9) == 0) {
			snprintf(ident, identlen, "%s", line + 9);
			have_ident = 1;
		}
	}
	return have_layout && have_ident ? 0 : -EINVAL;
}

static int check_identity(struct store *s, char *err, size_t errlen)
{
	char text[IDENTITY_MAX + 256], ident[IDENTITY_MAX + 1], bad[256], aside[64];
	int fd, layout = -1, rc;
	ssize_t n;

	fd = openat(s->dirfd, "CACHE", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n < 0 || (size_t)n == sizeof(text) - 1) {
			snprintf(err, errlen, "cache_dir %s: cannot read its CACHE file", s->dir);
			return -EIO;
		}
		text[n] = '\0';
		if (parse_identity(text, &layout, ident, sizeof(ident)) != 0) {
			snprintf(
			    err, errlen,
			    "cache_dir %s: its CACHE file is not a cachefsd identity; refusing "
			    "to use it: remove it or choose another cache_dir",
			    s->dir);
			return -EINVAL;
		}
		if (layout != STORE_LAYOUT_VERSION || strcmp(ident, s->identity) != 0) {
			snprintf(err, errlen,
			         "cache_dir %s was made for upstream %s (layout %d); refusing to "
			         "use it for %s (layout %d): remove it or choose another cache_dir",
			         s->dir, ident, layout, s->identity, STORE_LAYOUT_VERSION);
			return -EEXIST;
		}
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "cache_dir %s: cannot read its CACHE file: %s", s->dir,
		         strerror(errno));
		return -errno;
	}
	if (dir_foreign(s, bad, sizeof(bad))) {
		snprintf(err, errlen,
		         "cache_dir %s is not empty and has no CACHE file (it holds '%s'): not a "
		         "cachefsd cache; refusing to use it: empty it or choose another cache_dir",
		         s->dir, bad);
		return -EEXIST;
	}
	/* An index or data without CACHE: made for an unknown upstream. */
	if (exists_at(s->dirfd, "index") || exists_at(s->dirfd, "data")) {
		log_warn("cache_dir %s has no CACHE file: discarding its index and data", s->dir);
		if (exists_at(s->dirfd, "index") &&
		    move_aside(s, "index", "index.old", aside, sizeof(aside)) != 0)
			goto cannot;
		if (exists_at(s->dirfd, "data") &&
		    move_aside(s, "data", "data.old", aside, sizeof(aside)) != 0)
			goto cannot;
	}
	rc = write_identity(s);
	if (rc) {
		snprintf(err, errlen, "cache_dir %s: cannot write its CACHE file: %s", s->dir,
		         strerror(-rc));
		return rc;
	}
	return 0;
cannot:
	snprintf(err, errlen, "cache_dir %s: cannot move old contents aside: %s", s->dir,
	         strerror(errno));
	return -EIO;
}

/* The command that gives the cache directory dir to the user cachefsd runs
 * as (store_chown.c): its name when it has one, else its number. */
static const char *chown_fix(char *buf, size_t len, const char *dir)
{
	struct passwd *pw = getpwuid(geteuid());

	if (pw && pw->pw_name[0])
		snprintf(buf, len, "cachefsctl chown %s --cache-dir %s", pw->pw_name, dir);
	else
		snprintf(buf, len, "cachefsctl chown %u --cache-dir %s", (unsigned)geteuid(), dir);
	return buf;
}

int store_refuse_owner(const char *dir, const char *what, uid_t owner, char *err, size_t errlen)
{
	char fix[PATH_MAX + 64];
	uid_t me = geteuid();

	snprintf(err, errlen,
	         "cache_dir: %s is owned by uid %u, not by uid %u that cachefsd runs as: another "
	         "user could plant or replace cache files; refusing to use it. To move the cache "
	         "to uid %u, stop what uses it and run as root: %s (or run cachefsd as uid %u)",
	         what, (unsigned)owner, (unsigned)me, (unsigned)me,
	         chown_fix(fix, sizeof(fix), dir), (unsigned)owner);
	return -EPERM;
}

/* Refuses what another user could change under us: the cache directory
 * (name NULL) or an entry of it that is not of type want and the daemon
 * user's own, or that its group or others may write. Anyone who can write
 * there can plant a data file the next fill writes a user's bytes into, or
 * swap a file for a link. Absent entries are fine (created 0700/0600). */
static int check_private(struct store *s, const char *name, mode_t want, char *err, size_t errlen)
{
	const char *kind = want == S_IFDIR ? "directory" : "file";
	char what[PATH_MAX + 64];
	uid_t me = geteuid();
	struct stat st;
	int r = name ? fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) : fstat(s->dirfd, &st);

	if (name)
		snprintf(what, sizeof(what), "%s/%s", s->dir, name);
	else
		snprintf(what, sizeof(what), "%s", s->dir);
	if (r != 0 && errno == ENOENT)
		return 0;
	if (r != 0) {
		snprintf(err, errlen, "cache_dir: cannot stat %s: %s", what, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen,
		         "cache_dir: %s is a symbolic link; cachefsd follows no links inside its "
		         "cache directory: replace it with a %s (or remove it)",
		         what, kind);
		return -ELOOP;
	}
	if ((st.st_mode & S_IFMT) != want) {
		snprintf(err, errlen, "cache_dir: %s is not a %s: remove it", what, kind);
		return -EINVAL;
	}
	if (st.st_uid != me)
		return store_refuse_owner(s->dir, what, st.st_uid, err, errlen);
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
		         "cache_dir: %s is writable by %s (mode %04o): another user could plant or "
		         "replace cache files; refusing to use it: chmod go-w %s (0%o is usual)",
		         what,
		         (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "its group and others"
		         : st.st_mode & S_IWGRP                           ? "its group"
		                                                          : "others",
		         (unsigned)(st.st_mode & 07777), what, want == S_IFDIR ? 0700 : 0600);
		return -EPERM;
	}
	return 0;
}

static int check_entries(struct store *s, char *err, size_t errlen)
{
	int rc = check_private(s, NULL, S_IFDIR, err, errlen);

	if (rc == 0)
		rc = check_private(s, "CACHE", S_IFREG, err, errlen);
	if (rc == 0)
		rc = check_private(s, "index", S_IFDIR, err, errlen);
	if (rc == 0)
		rc = check_private(s, "data", S_IFDIR, err, errlen);
	return rc;
}

static int open_dir(struct store *s, char *err, size_t errlen)
{
	if (mkdir(s->dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cache_dir %s: cannot create: %s", s->dir, strerror(errno));
		return -errno;
	}
	s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		snprintf(err, errlen, "cache_dir %s: cannot open: %s", s->dir, strerror(errno));
		return -errno;
	}
	/* LMDB opens by path: absolute, in case the process changes directory. */
	s->path = realpath(s->dir, NULL);
	if (s->path == NULL) {
		snprintf(err, errlen, "cache_dir %s: %s", s->dir, strerror(errno));
		return -errno;
	}
	if (flock(s->dirfd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		if (e == EWOULDBLOCK)
			snprintf(err, errlen, "cache_dir %s is in use by another cachefsd", s->dir);
		else
			snprintf(err, errlen, "cache_dir %s: cannot lock: %s", s->dir, strerror(e));
		return -e;
	}
	return check_entries(s, err, errlen);
}

/* --- the index ------------------------------------------------------------ */

static int index_corrupt(int rc)
{
	return rc == MDB_CORRUPTED || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ||
	       rc == MDB_INCOMPATIBLE || rc == MDB_PAGE_NOTFOUND || rc == MDB_PANIC;
}

uint64_t store_index_prefetch(const char *dir, uint64_t limit, const int *stop)
{
	const size_t step = 1u << 20;
	char mdb[PATH_MAX];
	struct stat st;
	uint64_t done = 0;
	uint8_t *buf;
	int fd;

	/* links inside the cache dir are not followed (store_open checked
	 * them; this runs later, on a worker) */
	snprintf(mdb, sizeof(mdb), "%s/index", dir);
	fd = open(mdb, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int dfd = openat(fd, "data.mdb", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	fd = dfd;
	if (fd < 0)
		return 0;
	buf = malloc(step);
	if (buf && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		uint64_t end = (uint64_t)st.st_size < limit ? (uint64_t)st.st_size : limit;

		/* One read at a time (not a POSIX_FADV_WILLNEED per 128 KiB, which
		 * queued the whole file at once): a client's lookup, the index
		 * check or an fsync at start waits for at most one 1 MiB read
		 * (before, the NSM state file's fsync at start waited 1.5 s behind
		 * 1.6 GB of read-ahead of a 1 M-object index). */
		posix_fadvise(fd, 0, (off_t)end, POSIX_FADV_SEQUENTIAL);
		while (done < end && !__atomic_load_n(stop, __ATOMIC_RELAXED)) {
			size_t want = end - done < step ? (size_t)(end - done) : step;
			ssize_t n = pread(fd, buf, want, (off_t)done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done += (uint64_t)n;
		}
	}
	free(buf);
	close(fd);
	return done;
}

/* Rebuilds the totals from the records (the meta record was bad). 0 or
 * an LMDB code (for env_open). */
static int recount(struct store *s, MDB_txn *txn)
{
	struct store_obj o;
	MDB_cursor *cur;
	MDB_stat st;
	MDB_val k, v;
	uint64_t max;
	int rc;

	memset(&s->tot, 0, sizeof(s->tot));
	rc = mdb_cursor_open(txn, s->db_obj, &cur);
	if (rc)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		if (store_rec_unpack(v.mv_data, v.mv_size, &o, NULL, NULL) != 0)
			continue;
		s->tot.objects++;
		s->tot.bytes += o.cached_bytes;
		if (o.data_id >= s->next_data_id)
			s->next_data_id = o.data_id + 1;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return rc;
	/* Ids of dropped objects may be above every referenced one: a new run
	 * must start above every file there is. */
	max = store_data_max_id(s);
	if (max >= s->next_data_id)
		s->next_data_id = max + 1;
	rc = mdb_stat(txn, s->db_chunk, &st);
	s->tot.chunks = st.ms_entries;
	return rc;
}

/* Where the open path meets an LMDB code (env_open and the helpers it
 * calls speak LMDB): returns the negative errno store_mdb_errno() gives,
 * keeps LMDB's own words in why (for the message: errno cannot name
 * every LMDB error) and sets *damaged when they say the index is damaged
 * (it is then replaced). */
static int env_fail(int rc, int *damaged, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s", mdb_strerror(rc));
	*damaged = index_corrupt(rc);
	return store_mdb_errno(rc);
}

/* Opens the environment and its databases, loads the totals. *fresh = 1
 * when the index had no totals and no objects (new). 0, or a negative
 * errno with LMDB's words in why (see env_fail). */
static int env_open(struct store *s, uint64_t map_size, int *fresh, int *damaged, char *why,
                    size_t whylen)
{
	char path[PATH_MAX];
	MDB_val k = {sizeof(META_KEY) - 1, META_KEY}, v;
	MDB_stat st;
	MDB_txn *txn;
	int rc, dead;

	*fresh = 0;
	*damaged = 0;
	snprintf(path, sizeof(path), "%s/index", s->path);
	rc = mdb_env_create(&s->env);
	if (rc)
		return env_fail(rc, damaged, why, whylen);
	mdb_env_set_maxdbs(s->env, 8);
	s->map_size = map_size;
	rc = mdb_env_set_mapsize(s->env, map_size);

	if (rc == 0)
		rc = mdb_env_open(s->env, path, MDB_NOSYNC | MDB_NORDAHEAD, 0600);
	if (rc)
		goto fail;
	/* the index is read into the page cache in the background by
	 * store_index_prefetch(), started by the engine */
	mdb_reader_check(s->env, &dead);
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc)
		goto fail;
	rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &s->db_obj);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "chunks", MDB_CREATE, &s->db_chunk);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "lru", MDB_CREATE, &s->db_lru);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->db_meta);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "mcache", MDB_CREATE, &s->db_mcache);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "fhmap", MDB_CREATE, &s->db_fhmap);
	if (rc == 0)
		rc = store_meta_open(s, txn);
	if (rc == 0)
		rc = mdb_get(txn, s->db_meta, &k, &v);
	if (rc == 0 && meta_unpack(&v, s) != 0) {
		log_warn("cache index: bad totals record: recounting");
		rc = recount(s, txn);
	} else if (rc == MDB_NOTFOUND) {
		rc = mdb_stat(txn, s->db_obj, &st);
		if (rc == 0 && st.ms_entries == 0)
			*fresh = 1;
		else if (rc == 0)
			rc = recount(s, txn);
	}
	if (rc) {
		mdb_txn_abort(txn);
		goto fail;
	}
	rc = mdb_txn_commit(txn);
	if (rc)
		goto fail;
	index_size_update(s);
	return 0;
fail:
	mdb_env_close(s->env);
	s->env = NULL;
	return env_fail(rc, damaged, why, whylen);
}

/* *fd: the subdirectory name of the cache dir (created 0700 if absent),
 * opened without following a link; the previous *fd is closed. */
static int open_subdir(struct store *s, const char *name, int *fd, char *err, size_t errlen)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	if (mkdirat(s->dirfd, name, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cache_dir %s: cannot create %s/: %s", s->dir, name,
		         strerror(errno));
		return -errno;
	}
	*fd = openat(s->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0) {
		snprintf(err, errlen, "cache_dir %s: cannot open %s/: %s", s->dir, name,
		         strerror(errno));
		return -errno;
	}
	return 0;
}

static int open_indexfd(struct store *s, char *err, size_t errlen)
{
	return open_subdir(s, "index", &s->indexfd, err, errlen);
}

static const char *type_name(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link" : "not a regular file";
}

/* test hooks (store_test_set_check) */
static uint64_t check_sync_max = STORE_CHECK_SYNC_MAX;
static int check_hold;

/* The check of data.mdb (fd) before LMDB maps it: whole, or quick with
 * the whole one deferred to after the open (see STORE_CHECK_SYNC_MAX). As
 * store_index_check. */
static int index_check_at_open(struct store *s, int fd, uint64_t map_size, int *reason, char *why,
                               size_t whylen)
{
	int unfinished = exists_at(s->indexfd, STORE_CHECKING), rc;
	struct stat st;

	s->check_deferred = 0;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > check_sync_max && !unfinished) {
		rc = store_index_check_quick(fd, map_size, reason, why, whylen);
		s->check_deferred = rc == 0;
		return rc;
	}
	if (unfinished)
		log_warn("cache index: the last start did not finish checking %s/index/data.mdb "
		         "(cachefsd crashed or was stopped meanwhile): checking all of it before "
		         "serving",
		         s->dir);
	rc = store_index_check(fd, map_size, reason, why, whylen);
	if (rc == 0 && unfinished)
		unlinkat(s->indexfd, STORE_CHECKING, 0);
	return rc;
}

/* Looks at index/ before LMDB maps anything in it: 0 (intact or new), an
 * enum store_damage with why filled, or -errno with err filled (refused). */
static int index_inspect(struct store *s, uint64_t map_size, char *why, size_t whylen, char *err,
                         size_t errlen)
{
	static const char *const files[] = {"data.mdb", "lock.mdb"};
	struct stat st;
	int fd, rc, reason;
	ssize_t n;

	/* damage LMDB reported while the last run used it */
	fd = openat(s->indexfd, "damaged", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT) {
		char text[200] = "";

		if (fd >= 0 && (n = read(fd, text, sizeof(text) - 1)) > 0)
			text[n - (text[n - 1] == '\n')] = '\0';
		if (fd >= 0)
			close(fd);
		snprintf(why, whylen, "LMDB reported damage while it was in use (%s)", text);
		return STORE_DMG_LMDB;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (fstatat(s->indexfd, files[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			snprintf(why, whylen, "cannot stat %s: %s", files[i], strerror(errno));
			return STORE_DMG_READ;
		}
		if (!S_ISREG(st.st_mode) && i == 1) {
			/* only a lock table, rebuilt by the first process to
			 * open (us: the cache dir is flock()ed) */
			log_warn("cache index: %s/index/lock.mdb is %s: removed", s->dir,
			         type_name(st.st_mode));
			if (store_rmtree(s->indexfd, files[i], 4) == 0)
				continue;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(why, whylen, "index/%s is %s", files[i], type_name(st.st_mode));
			return STORE_DMG_NOT_FILE;
		}
		if (st.st_uid != geteuid()) {
			char fix[PATH_MAX + 64];

			snprintf(
			    err, errlen,
			    "cache_dir: %s/index/%s is owned by uid %u: cachefsd (uid %u) uses "
			    "only index files of its own: stop what uses the cache and run as "
			    "root: %s",
			    s->dir, files[i], (unsigned)st.st_uid, (unsigned)geteuid(),
			    chown_fix(fix, sizeof(fix), s->dir));
			return -EPERM;
		}
		if (st.st_mode & (S_IWGRP | S_IWOTH)) {
			snprintf(err, errlen,
			         "cache_dir: %s/index/%s is writable by its group or others (mode "
			         "%04o): cachefsd uses only index files no one else may write: "
			         "chmod 0600 %s/index/%s",
			         s->dir, files[i], (unsigned)(st.st_mode & 07777), s->dir,
			         files[i]);
			return -EPERM;
		}
	}
	fd = openat(s->indexfd, "data.mdb", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* a new index */
		snprintf(why, whylen, "cannot open data.mdb: %s", strerror(errno));
		return STORE_DMG_READ;
	}
	rc = index_check_at_open(s, fd, map_size, &reason, why, whylen);
	close(fd);
	if (rc < 0) {
		snprintf(err, errlen, "cache_dir %s: cannot check the index: %s", s->dir,
		         strerror(-rc));
		return rc;
	}
	return rc ? reason : 0;
}

/* Moves the damaged index aside (kept for the operator: the newest one
 * stays, the background thread removes older ones) and starts over. */
static int index_recover(struct store *s, int reason, const char *why, char *err, size_t errlen)
{
	char aside[64];

	if (move_aside(s, "index", "index.corrupt", aside, sizeof(aside)) != 0) {
		snprintf(err, errlen,
		         "cache_dir %s: the index is damaged (%s) and cannot be moved aside: %s",
		         s->dir, why, strerror(errno));
		return -EIO;
	}
	fsync(s->dirfd);
	log_err("cache index %s/index/data.mdb is damaged: %s; moved to %s/%s (kept for "
	        "inspection; older damaged indexes are removed); starting with an empty cache",
	        s->dir, why, s->dir, aside);
	snprintf(s->kept, sizeof(s->kept), "%s", aside);
	s->recoveries[reason]++;
	s->check_deferred = 0;
	memset(&s->tot, 0, sizeof(s->tot));
	s->next_data_id = 0;
	return open_indexfd(s, err, errlen);
}

static int open_index(struct store *s, uint64_t map_size, char *err, size_t errlen)
{
	char aside[64], why[320], lmdb[200];
	int rc, fresh, damaged;

	rc = open_indexfd(s, err, errlen);
	if (rc)
		return rc;
	rc = index_inspect(s, map_size, why, sizeof(why), err, errlen);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		rc = index_recover(s, rc, why, err, errlen);
		if (rc)
			return rc;
	}
	rc = env_open(s, map_size, &fresh, &damaged, lmdb, sizeof(lmdb));
	if (rc && damaged) {
		snprintf(why, sizeof(why), "LMDB says: %s", lmdb);
		rc = index_recover(s, STORE_DMG_LMDB, why, err, errlen);
		if (rc)
			return rc;
		rc = env_open(s, map_size, &fresh, &damaged, lmdb, sizeof(lmdb));
	}
	if (rc) {
		snprintf(err, errlen, "cache_dir %s: cannot open the index: %s", s->dir, lmdb);
		return rc;
	}
	/* A new index knows none of the data files there may be. */
	if (fresh && exists_at(s->dirfd, "data") &&
	    move_aside(s, "data", "data.old", aside, sizeof(aside)) != 0) {
		snprintf(err, errlen, "cache_dir %s: cannot move old data aside: %s", s->dir,
		         strerror(errno));
		return -EIO;
	}
	rc = open_subdir(s, "data", &s->datafd, err, errlen);
	if (rc)
		return rc;
	/* A new run of data ids, durable before any is handed out. */
	s->run_first_id = ((s->next_data_id >> STORE_RUN_SHIFT) + 1) << STORE_RUN_SHIFT;
	s->next_data_id = s->run_first_id;
	s->tot_committed = s->tot;
	if (store_txn_write(s, &rc) != NULL)
		rc = store_txn_commit(s);
	if (rc == 0) {
		int sync = mdb_env_sync(s->env, 1);

		if (sync) {
			snprintf(err, errlen, "cache_dir %s: cannot write the index: %s", s->dir,
			         mdb_strerror(sync));
			return -EIO;
		}
	}
	if (rc) {
		snprintf(err, errlen, "cache_dir %s: cannot write the index: %s", s->dir,
		         strerror(-rc));
		return -EIO;
	}
	s->bg.scan_below = s->run_first_id;
	s->bg.scan = 1;
	return 0;
}

static int check_params(const struct store_params *p, char *err, size_t errlen)
{
	if (p->dir == NULL || p->dir[0] == '\0') {
		snprintf(err, errlen, "cache_dir: not set");
		return -EINVAL;
	}
	if (p->identity == NULL || p->identity[0] == '\0' || strchr(p->identity, '\n') ||
	    strlen(p->identity) > IDENTITY_MAX) {
		snprintf(err, errlen, "cache_dir %s: bad upstream identity", p->dir);
		return -EINVAL;
	}
	if (p->chunk_size < (64u << 10) || p->chunk_size > (1u << 20) ||
	    (p->chunk_size & (p->chunk_size - 1)) != 0) {
		snprintf(err, errlen, "chunk_size %u: must be a power of two from 64K to 1M",
		         p->chunk_size);
		return -EINVAL;
	}
	if (p->inline_max > (1u << 20)) {
		snprintf(err, errlen, "inline_max %u: at most 1M", p->inline_max);
		return -EINVAL;
	}
	if (p->bstop < 0 || p->bstop > p->bcull || p->bcull > p->brun || p->brun > 100) {
		snprintf(err, errlen,
		         "brun/bcull/bstop %d/%d/%d: need 0 <= bstop <= bcull <= "
		         "brun <= 100",
		         p->brun, p->bcull, p->bstop);
		return -EINVAL;
	}
	if (p->fstop < 0 || p->fstop > p->fcull || p->fcull > p->frun || p->frun > 100) {
		snprintf(err, errlen,
		         "frun/fcull/fstop %d/%d/%d: need 0 <= fstop <= fcull <= "
		         "frun <= 100",
		         p->frun, p->fcull, p->fstop);
		return -EINVAL;
	}
	return 0;
}

/* The whole index check of a large index, after the open (see
 * STORE_CHECK_SYNC_MAX). Damage is looked at twice, each time under a
 * read transaction of its own: a commit may rewrite a meta page while it
 * is read. */
static void *check_main(void *arg)
{
	struct store *s = arg;
	struct timespec t0, t1;
	char why[sizeof(s->check_why)];
	int reason, rc = -EIO, state;

	while (__atomic_load_n(&check_hold, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&s->check_stop, __ATOMIC_RELAXED))
		usleep(1000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int tries = 0; tries < 2; tries++) {
		MDB_txn *txn;
		int fd;

		if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != 0) {
			rc = -EIO;
			break;
		}
		fd = openat(s->indexfd, "data.mdb", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno
		            : store_index_check_stop(fd, s->map_size, &reason, why, sizeof(why),
		                                     &s->check_stop);
		if (fd >= 0)
			close(fd);
		mdb_txn_abort(txn);
		if (rc != 1)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == 1) {
		memcpy(s->check_why, why, sizeof(why));
		state = 2;
	} else if (rc == 0) {
		unlinkat(s->indexfd, STORE_CHECKING, 0);
		log_info("cache index %s/index/data.mdb checked in the background: intact (%.1f s)",
		         s->dir,
		         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		state = 1;
	} else if (rc == -ECANCELED) {
		/* a clean stop: no crash to guard the next start against */
		unlinkat(s->indexfd, STORE_CHECKING, 0);
		state = 3;
	} else {
		log_warn("cache index: the background check could not run: %s; the next "
		         "start checks the whole index first",
		         strerror(-rc));
		state = 3;
	}
	__atomic_store_n(&s->check_state, state, __ATOMIC_RELEASE);
	return NULL;
}

/* After the open: marks the check as running (index/checking), starts it. */
static void check_start(struct store *s)
{
	sigset_t all, old;
	int fd, rc;

	if (!s->check_deferred)
		return;
	fd = openat(s->indexfd, STORE_CHECKING, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&s->check_thread, NULL, check_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		log_warn("cache index: cannot start the background check: %s; the next start "
		         "checks the whole index first",
		         strerror(rc));
		return;
	}
	s->check_started = 1;
	log_info("cache index %s/index/data.mdb is larger than %llu MiB: its top levels are "
	         "checked, the rest is being checked in the background while serving",
	         s->dir, (unsigned long long)(STORE_CHECK_SYNC_MAX >> 20));
}

void store_check_poll(struct store *s)
{
	int state;

	if (!s->check_started || s->check_handled)
		return;
	state = __atomic_load_n(&s->check_state, __ATOMIC_ACQUIRE);
	if (state == 0)
		return;
	s->check_handled = 1;
	if (state != 2)
		return;
	log_err("cache index %s/index/data.mdb: the background check found damage: %s", s->dir,
	        s->check_why);
	store_set_broken(s, MDB_CORRUPTED, "background index check");
	unlinkat(s->indexfd, STORE_CHECKING, 0);
}

static void store_free(struct store *s)
{
	if (s == NULL)
		return;
	if (s->check_started) {
		__atomic_store_n(&s->check_stop, 1, __ATOMIC_RELAXED);
		pthread_join(s->check_thread, NULL);
		s->check_started = 0;
	}
	if (s->wtxn)
		mdb_txn_abort(s->wtxn);
	if (s->rtxn)
		mdb_txn_abort(s->rtxn);
	if (s->env) {
		mdb_env_sync(s->env, 1);
		mdb_env_close(s->env);
	}
	if (s->datafd >= 0)
		close(s->datafd);
	if (s->indexfd >= 0)
		close(s->indexfd);
	if (s->dirfd >= 0)
		close(s->dirfd); /* releases the flock */
	pthread_mutex_destroy(&s->bg.mu);
	pthread_cond_destroy(&s->bg.cv);
	pthread_cond_destroy(&s->bg.idle_cv);
	store_touchset_free(&s->touched);
	store_meta_memo_free(s);
	free(s->bg.q);
	free(s->txq);
	free(s->scratch);
	free(s->dir);
	free(s->path);
	free(s->identity);

	free(s);
}

int store_open(const struct store_params *p, struct store **out, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	struct statvfs st;
	struct store *s;
	int rc;

	*out = NULL;
	rc = check_params(p, err, errlen);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto nomem;
	s->dirfd = -1;
	s->indexfd = -1;
	s->datafd = -1;
	s->dir = strdup(p->dir);
	s->identity = strdup(p->identity);
	pthread_mutex_init(&s->bg.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->bg.cv, &ca);
	pthread_cond_init(&s->bg.idle_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (s->dir == NULL || s->identity == NULL)
		goto nomem;
	s->chunk_size = p->chunk_size;
	s->inline_max = p->inline_max;
	store_set_limits(s, p);
	s->free_blocks_pct = 100;
	s->free_files_pct = 100;

	rc = open_dir(s, err, errlen);
	if (rc == 0)
		rc = store_space_check(s, err, errlen);
	if (rc == 0)
		rc = check_identity(s, err, errlen);
	if (rc == 0)
		rc = open_index(s, p->map_size ? p->map_size : STORE_DEFAULT_MAP_SIZE, err, errlen);
	if (rc == 0) {
		rc = store_bg_start(s);
		if (rc)
			snprintf(err, errlen, "cache_dir %s: cannot start its thread: %s", s->dir,
			         strerror(-rc));
	}
	if (rc) {
		store_free(s);
		return rc;
	}
	check_start(s);
	store_fs_read(s, &st);
	s->oldest_access = store_lru_oldest(s);
	store_commit(s);
	log_info("cache %s: %" PRIu64 " objects, %" PRIu64 " bytes cached", s->dir, s->tot.objects,
	         s->tot.bytes);
	*out = s;
	return 0;
nomem:
	snprintf(err, errlen, "cache_dir %s: out of memory", p->dir);
	store_free(s);
	return -ENOMEM;
}

void store_close(struct store *s)
{
	if (s == NULL)
		return;
		/* Twice: a round in progress leaves out entries accessed again. */
	for (int i = 0; i < 2 && !s->broken && s->touched.n; i++)
		if (store_touch_flush(s, UINT32_MAX, 1) != 0)
			break;
	s->tr.retry_ms = 0; /* a last try, backoff or not */
	store_commit(s);

	store_bg_stop(s);
	store_free(s);
}

/* --- stats ---------------------------------------------------------------- */

void store_get_stats(const struct store *s, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->objects = s->tot.objects;
	out->bytes = s->tot.bytes;
	out->chunks = s->tot.chunks;
	out->evictions = s->tot.evictions;
	out->evicted_bytes = s->tot.evicted_bytes;
	out->culling = s->culling;
	out->fill_reason = s->broken ? STORE_FILL_INDEX_DAMAGED : s->reason;
	out->fill_stopped = out->fill_reason != STORE_FILL_ON;
	out->free_blocks_pct = s->free_blocks_pct;
	out->free_files_pct = s->free_files_pct;
	out->fs_bytes = s->fs_total;
	out->fs_free_bytes = s->fs_avail;
	out->stop_bytes = s->lv.stop;
	out->cull_bytes = s->lv.cull;
	out->run_bytes = s->lv.run;
	out->commit_failures = s->commit_failures;
	out->write_failures = s->write_failures;
	out->oldest_access = s->oldest_access;
	memcpy(out->index_recoveries, s->recoveries, sizeof(out->index_recoveries));
	out->index_broken = s->broken;
	out->index_full =
	    s->index_full_at && store_now(s) < s->index_full_at + STORE_INDEX_FULL_HOLD_S;
	out->index_full_events = s->index_full_events;
	out->index_bytes = s->index_used;
	out->index_map_bytes = s->map_size;
	memcpy(out->fills_refused, s->fills_refused, sizeof(out->fills_refused));
	out->data_files_refused = s->data_refused;
	out->index_checking =
	    s->check_started && __atomic_load_n(&s->check_state, __ATOMIC_ACQUIRE) == 0;
}

uint64_t store_checksum_failures(const struct store *s)
{
	return s->tot.csum_failures;
}

void store_snap_of(const fattr3 *attrs, struct store_snap *out)
{
	memset(out, 0, sizeof(*out));
	out->size = attrs->size;
	out->mtime_s = attrs->mtime.seconds;
	out->mtime_ns = attrs->mtime.nseconds;
	out->ctime_s = attrs->ctime.seconds;
	out->ctime_ns = attrs->ctime.nseconds;
}

void store_snap_of_chg(const fattr3 *attrs, const struct store_chg *chg, struct store_snap *out)
{
	store_snap_of(attrs, out);
	if (chg && chg->has) {
		out->has_change = 1;
		out->change = chg->change;
	}
}

int store_snap_equal(const struct store_snap *a, const struct store_snap *b)
{
	return a->size == b->size && a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns &&
	       a->ctime_s == b->ctime_s && a->ctime_ns == b->ctime_ns &&
	       a->has_change == b->has_change && (!a->has_change || a->change == b->change);
}

/* --- test hooks ------------------------------------------------------------ */

void store_test_set_now(struct store *s, uint64_t now)
{
	s->test_now = now;
}

void store_test_set_check(uint64_t sync_max, int hold)
{
	check_sync_max = sync_max;
	__atomic_store_n(&check_hold, hold, __ATOMIC_RELAXED);
}

void store_test_set_statvfs(struct store *s, store_statvfs_fn fn, void *arg)
{
	s->statvfs_fn = fn;
	s->statvfs_arg = arg;
}
