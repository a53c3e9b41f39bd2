/* The store's background thread: unlinks data files once the transaction
 * that dropped them has committed (so the loop never waits for the
 * filesystem to free extents), syncs the index every few seconds, and
 * after open removes orphan data files and old trees moved aside.
 *
 * It uses LMDB only for mdb_env_sync() and one read transaction of its own
 * during the orphan scan; both are allowed next to the loop thread's write
 * transaction. */
#include "store_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

struct scan {
	int phase; /* 0 old trees, 1 referenced ids, 2 data dirs, 3 done */
	int next_dir;
	uint64_t *ids; /* referenced data ids below scan_below, sorted */
	size_t nids;
	uint64_t files, bytes;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void abstime_ms(struct timespec *ts, uint64_t ms)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000;
}

int store_rmtree(int parent, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth <= 0)
		return -ELOOP;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (store_rmtree(dirfd(d), de->d_name, depth - 1) != 0)
			rc = -EIO;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Collects the data ids below scan_below that records reference. 0 or an
 * LMDB code (its one caller logs it with mdb_strerror). */
static int scan_ids(struct store *s, struct scan *sc, uint64_t below)
{
	struct store_obj o;
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	size_t cap = 0;
	int rc;

	rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return rc;
	rc = mdb_cursor_open(txn, s->db_obj, &cur);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		if (store_rec_unpack(v.mv_data, v.mv_size, &o, NULL, NULL) != 0 || o.data_id == 0 ||
		    o.data_id >= below)
			continue;
		if (sc->nids == cap) {
			uint64_t *n;

			cap = cap ? 2 * cap : 1024;
			n = realloc(sc->ids, cap * sizeof(*n));
			if (n == NULL) {
				rc = ENOMEM;
				break;
			}
			sc->ids = n;
		}
		sc->ids[sc->nids++] = o.data_id;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (rc != MDB_NOTFOUND)
		return rc;
	if (sc->nids)
		qsort(sc->ids, sc->nids, sizeof(*sc->ids), cmp_u64);
	return 0;
}

static int parse_id(const char *name, uint64_t *id)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		char c = name[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			return -1;
		v = (v << 4) | (uint64_t)d;
	}
	if (name[16] != '\0')
		return -1;
	*id = v;
	return 0;
}

/* Removes the orphans in one data/xx/yy directory. */
static void scan_leaf(struct scan *sc, int fd, uint64_t below)
{
	struct dirent *de;
	struct stat st;
	uint64_t id;
	DIR *d = fdopendir(fd);

	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (parse_id(de->d_name, &id) != 0 || id >= below)
			continue;
		if (sc->nids && bsearch(&id, sc->ids, sc->nids, sizeof(id), cmp_u64))
			continue;
		/* a link or other non-file in our place goes too (unlinkat
		 * removes the link, never its target) */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    S_ISDIR(st.st_mode))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0) {
			sc->files++;
			sc->bytes += (uint64_t)st.st_blocks * 512;
		}
	}
	closedir(d);
}

/* Scans data/<xx> for xx = sc->next_dir: the yy directories it has (a
 * small cache has few). */
static void scan_dir(struct store *s, struct scan *sc, uint64_t below)
{
	char path[16];
	struct dirent *de;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "data/%02x", sc->next_dir);
	fd = openat(s->dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		int lfd;

		if (strlen(de->d_name) != 2 || !isxdigit((unsigned char)de->d_name[0]) ||
		    !isxdigit((unsigned char)de->d_name[1]))
			continue;
		lfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lfd >= 0)
			scan_leaf(sc, lfd, below);
	}
	closedir(d);
}

#define CORRUPT_PREFIX "index.corrupt-"

/* Removes trees moved aside by an earlier open (index.old-*, data.old-*),
 * and every damaged index but the newest (this open's, or else the one
 * with the latest name: they are named by time), so that a disk that
 * keeps damaging the index cannot fill up with old ones. */
static void remove_old_trees(struct store *s)
{
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char keep[sizeof(s->kept)];
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	snprintf(keep, sizeof(keep), "%s", s->kept); /* set before the thread started */
	if (keep[0] == '\0') {
		while ((de = readdir(d)) != NULL)
			if (strncmp(de->d_name, CORRUPT_PREFIX, strlen(CORRUPT_PREFIX)) == 0 &&
			    strcmp(de->d_name, keep) > 0 && strlen(de->d_name) < sizeof(keep))
				memcpy(keep, de->d_name, strlen(de->d_name) + 1);
		rewinddir(d);
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "data.old-", 9) != 0 &&
		    strncmp(de->d_name, "index.old-", 10) != 0 &&
		    (strncmp(de->d_name, CORRUPT_PREFIX, strlen(CORRUPT_PREFIX)) != 0 ||
		     strcmp(de->d_name, keep) == 0))
			continue;
		if (store_rmtree(s->dirfd, de->d_name, 8) == 0)
			log_info("cache %s: removed %s", s->dir, de->d_name);
		else
			log_warn("cache %s: cannot remove %s completely", s->dir, de->d_name);
	}
	closedir(d);
}

/* One step of the orphan scan; returns 1 when it is finished. */
static int scan_step(struct store *s, struct scan *sc, uint64_t below)
{
	int rc;

	switch (sc->phase) {
	case 0:
		remove_old_trees(s);
		sc->phase = 1;
		return 0;
	case 1:
		rc = scan_ids(s, sc, below);
		if (rc) {
			log_warn("cache %s: orphan scan skipped: %s", s->dir, mdb_strerror(rc));
			sc->phase = 3;
			return 1;
		}
		sc->phase = 2;
		return 0;
	case 2:
		scan_dir(s, sc, below);
		if (++sc->next_dir < 256)
			return 0;
		if (sc->files)
			log_info("cache %s: removed %" PRIu64 " orphan data files (%" PRIu64
			         " bytes)",
			         s->dir, sc->files, sc->bytes);
		sc->phase = 3;
		return 1;
	default:
		return 1;
	}
}

static void unlink_batch(struct store *s, struct store_unlink *q, size_t n)
{
	char path[64];
	int rc;

	for (size_t i = 0; i < n; i++) {
		rc = store_data_unlink(s, q[i].data_id);
		if (rc && rc != -ENOENT) {
			store_data_path(path, sizeof(path), q[i].data_id);
			log_warn("cache %s: cannot remove %s: %s", s->dir, path, strerror(-rc));
		}
	}
}

static void *bg_main(void *arg)
{
	struct store *s = arg;
	struct store_bg *b = &s->bg;
	struct scan sc = {0};
	struct store_unlink *work = NULL;
	size_t workcap = 0;
	uint64_t synced = 0, next_sync = mono_ms() + STORE_SYNC_SECONDS * 1000;
	struct timespec ts;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		if (b->qlen) {
			/* Swap the queue out and unlink without the lock. */
			struct store_unlink *q = b->q;
			size_t n = b->qlen, cap = b->qcap;
			uint64_t bytes = 0;

			b->q = work;
			b->qcap = workcap;
			b->qlen = 0;
			work = q;
			workcap = cap;
			b->busy = 1;
			pthread_mutex_unlock(&b->mu);
			unlink_batch(s, work, n);
			for (size_t i = 0; i < n; i++)
				bytes += work[i].bytes;
			pthread_mutex_lock(&b->mu);
			b->pending_bytes -= bytes < b->pending_bytes ? bytes : b->pending_bytes;
			b->pending_files -= n < b->pending_files ? n : b->pending_files;
			b->busy = 0;
			continue;
		}
		if (b->stop)
			break;
		if (mono_ms() >= next_sync) {
			uint64_t c = b->commits;

			if (c != synced) {
				pthread_mutex_unlock(&b->mu);
				mdb_env_sync(s->env, 1);
				pthread_mutex_lock(&b->mu);
				synced = c;
			}
			next_sync = mono_ms() + STORE_SYNC_SECONDS * 1000;
			continue;
		}
		if (b->scan) {
			uint64_t below = b->scan_below;
			int done;

			b->busy = 1;
			pthread_mutex_unlock(&b->mu);
			done = scan_step(s, &sc, below);
			pthread_mutex_lock(&b->mu);
			b->busy = 0;
			if (done) {
				b->scan = 0;
				b->orphans_removed = sc.files;
				free(sc.ids);
				sc.ids = NULL;
			}
			continue;
		}
		pthread_cond_broadcast(&b->idle_cv);
		abstime_ms(&ts, next_sync);
		pthread_cond_timedwait(&b->cv, &b->mu, &ts);
	}
	pthread_cond_broadcast(&b->idle_cv);
	pthread_mutex_unlock(&b->mu);
	free(sc.ids);
	free(work);
	return NULL;
}

int store_bg_start(struct store *s)
{
	sigset_t all, old;
	int rc;

	/* Signals belong to the loop thread: its handlers set flags the loop
	 * must wake up for. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&s->bg.thread, NULL, bg_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	s->bg.started = 1;
	return 0;
}

void store_bg_stop(struct store *s)
{
	if (!s->bg.started)
		return;
	pthread_mutex_lock(&s->bg.mu);
	s->bg.stop = 1;
	pthread_cond_signal(&s->bg.cv);
	pthread_mutex_unlock(&s->bg.mu);
	pthread_join(s->bg.thread, NULL);
	s->bg.started = 0;
}

void store_bg_push(struct store *s, const struct store_unlink *u, size_t n)
{
	struct store_bg *b = &s->bg;

	pthread_mutex_lock(&b->mu);
	if (b->qlen + n > b->qcap) {
		size_t cap = b->qcap ? b->qcap : 64;
		struct store_unlink *q;

		while (cap < b->qlen + n)
			cap *= 2;
		q = realloc(b->q, cap * sizeof(*q));
		if (q == NULL) {
			/* The files stay as orphans until the next start. */
			pthread_mutex_unlock(&b->mu);
			log_warn("cache %s: out of memory: %zu data files left behind", s->dir, n);
			return;
		}
		b->q = q;
		b->qcap = cap;
	}
	memcpy(b->q + b->qlen, u, n * sizeof(*u));
	b->qlen += n;
	for (size_t i = 0; i < n; i++)
		b->pending_bytes += u[i].bytes;
	b->pending_files += n;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void store_bg_committed(struct store *s)
{
	pthread_mutex_lock(&s->bg.mu);
	s->bg.commits++;
	pthread_mutex_unlock(&s->bg.mu);
}

void store_bg_pending(struct store *s, uint64_t *bytes, uint64_t *files)
{
	pthread_mutex_lock(&s->bg.mu);
	*bytes = s->bg.pending_bytes;
	*files = s->bg.pending_files;
	pthread_mutex_unlock(&s->bg.mu);
}

static DIR *open_sub(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (d == NULL)
		close(fd);
	return d;
}

uint64_t store_data_max_id(struct store *s)
{
	struct dirent *e1, *e2, *e3;
	DIR *d1, *d2, *d3;
	uint64_t max = 0, id;

	d1 = open_sub(s->dirfd, "data");
	if (d1 == NULL)
		return 0;
	while ((e1 = readdir(d1)) != NULL) {
		if (e1->d_name[0] == '.' || (d2 = open_sub(dirfd(d1), e1->d_name)) == NULL)
			continue;
		while ((e2 = readdir(d2)) != NULL) {
			if (e2->d_name[0] == '.' || (d3 = open_sub(dirfd(d2), e2->d_name)) == NULL)
				continue;
			while ((e3 = readdir(d3)) != NULL)
				if (parse_id(e3->d_name, &id) == 0 && id > max)
					max = id;
			closedir(d3);
		}
		closedir(d2);
	}
	closedir(d1);
	return max;
}

int store_test_wait_idle(struct store *s, int timeout_ms)
{
	struct store_bg *b = &s->bg;
	uint64_t deadline = mono_ms() + (uint64_t)timeout_ms;
	struct timespec ts;
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	while (b->qlen || b->busy || b->scan) {
		if (mono_ms() >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		pthread_cond_signal(&b->cv);
		abstime_ms(&ts, mono_ms() + 10 < deadline ? mono_ms() + 10 : deadline);
		pthread_cond_timedwait(&b->idle_cv, &b->mu, &ts);
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}
