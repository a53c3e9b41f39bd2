/* Space: the cache_size cap and cachefilesd-style thresholds on the cache
 * filesystem. Culling starts above cache_size or below bcull/fcull and goes
 * on, a few objects per step, least recently used first, until the cache is
 * at 90% of cache_size and brun/frun are regained. Filling stops below
 * bstop/fstop until brun/frun. */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "log.h"

static double pct(uint64_t avail, uint64_t total)
{
	if (total == 0 || avail >= total)
		return 100.0;
	return 100.0 * (double)avail / (double)total;
}

static void update_fill(struct store *s, double b, double f);

int store_fs_read(struct store *s, struct statvfs *st)
{
	int rc;

	memset(st, 0, sizeof(*st));
	if (s->statvfs_fn)
		rc = s->statvfs_fn(s->dir, st, s->statvfs_arg);
	else
		rc = fstatvfs(s->dirfd, st) == 0 ? 0 : -errno;
	if (rc)
		return rc;
	s->free_blocks_pct = (int)pct(st->f_bavail, st->f_blocks);
	s->free_files_pct = (int)pct(st->f_favail, st->f_files);
	{
		uint64_t unit = st->f_frsize ? st->f_frsize : st->f_bsize;
		s->fs_avail = (uint64_t)st->f_bavail * unit;
		s->fs_total = (uint64_t)st->f_blocks * unit;
		s->fs_reserved = 0;
	}
	return 0;
}

/* Fills are fast and the statvfs reading is taken once a second: between
 * readings every byte a fill is about to write is subtracted from the last
 * reading, so a fast reader cannot run the cache filesystem full. */
int store_reserve(struct store *s, uint64_t bytes)
{
	double b;

	if (s == NULL || s->broken || s->fill_stopped)
		return -ENOSPC;
	if (s->fs_total == 0)
		return 0; /* no reading yet */
	s->fs_reserved += bytes;
	/* cache_size too is kept between the once-a-second cull steps */
	if (s->cache_size && s->tot.bytes + bytes > s->cache_size)
		s->cull_wanted = 1;
	b = s->fs_avail > s->fs_reserved
		    ? pct(s->fs_avail - s->fs_reserved + s->txq_bytes, s->fs_total)
		    : 0.0;
	if (b < s->bcull)
		s->cull_wanted = 1;
	if (b < s->bstop) {
		update_fill(s, b, 100.0);
		return -ENOSPC;
	}
	return 0;
}

int store_cull_wanted(const struct store *s)
{
	return s && (s->cull_wanted || s->disk_full);
}

/* The cache filesystem is full: LMDB cannot commit (copy-on-write needs
 * free pages) and evictions only free space after their commit. So the data
 * files of the objects evicted in this transaction are removed now, before
 * the commit: if the commit then fails, the index points at missing files,
 * which a read treats like a checksum failure (refetch). */
static void unlink_now(struct store *s)
{
	char path[64];
	int rc;

	for (size_t i = 0; i < s->txq_len; i++) {
		rc = store_data_unlink(s, s->txq[i].data_id);
		if (rc && rc != -ENOENT) {
			store_data_path(path, sizeof(path), s->txq[i].data_id);
			log_warn("cache %s: unlink %s: %s", s->dir, path, strerror(-rc));
		}
	}
}

/* Free space once the queued unlinks are done: ext4 shows freed space only
 * after the unlink, and evictions of this pass are not even committed. */
static void estimate(struct store *s, const struct statvfs *st, double *b, double *f)
{
	uint64_t bytes, files, unit = st->f_frsize ? st->f_frsize : st->f_bsize;

	store_bg_pending(s, &bytes, &files);
	bytes += s->txq_bytes;
	files += s->txq_len;
	*b = pct(st->f_bavail + bytes / (unit ? unit : 4096), st->f_blocks);
	*f = pct(st->f_favail + files, st->f_files);
}

static void update_fill(struct store *s, double b, double f)
{
	if (!s->fill_stopped && (b < s->bstop || f < s->fstop)) {
		s->fill_stopped = 1;
		if (b < s->bstop)
			log_warn("cache filesystem below bstop (%d%% free): filling stopped, reads "
			         "pass through",
			         (int)b);
		else
			log_warn("cache filesystem below fstop (%d%% files free): filling stopped, "
			         "reads pass through",
			         (int)f);
	} else if (s->fill_stopped && b >= s->brun && f >= s->frun) {
		s->fill_stopped = 0;
		log_info("cache filesystem back to %d%% free blocks, %d%% free files: filling "
		         "resumed",
		         (int)b, (int)f);
	}
}

static int cull_start(const struct store *s, double b, double f, char *why, size_t len)
{
	if (s->cache_size && s->tot.bytes > s->cache_size)
		snprintf(why, len, "%" PRIu64 " bytes cached, above cache_size %" PRIu64,
		         s->tot.bytes, s->cache_size);
	else if (b < s->bcull)
		snprintf(why, len, "%d%% free blocks, below bcull %d%%", (int)b, s->bcull);
	else if (f < s->fcull)
		snprintf(why, len, "%d%% free files, below fcull %d%%", (int)f, s->fcull);
	else if (s->index_full)
		snprintf(why, len, "the index is full");
	else if (s->disk_full)
		snprintf(why, len, "the cache filesystem is full");
	else
		return 0;
	return 1;
}

static int cull_done(const struct store *s, double b, double f)
{
	return (s->cache_size == 0 || s->tot.bytes <= s->cache_size / 10 * 9) && b >= s->brun &&
	       f >= s->frun;
}

int store_cull_step(struct store *s, int max)
{
	struct statvfs st;
	double b = 100.0, f = 100.0;
	char why[128];
	uint64_t freed;
	int have, n = 0, rc;

	if (s == NULL || s->broken)
		return 0;
	s->cull_wanted = 0;
	have = store_fs_read(s, &st) == 0;
	if (have)
		update_fill(s, pct(st.f_bavail, st.f_blocks), pct(st.f_favail, st.f_files));
	/* Idle loops commit rarely: the timer carries the rounds on. */
	store_touch_flush(s, STORE_TOUCH_BATCH, 0);
	if (have)
		estimate(s, &st, &b, &f);
	if (!s->culling) {
		if (!cull_start(s, b, f, why, sizeof(why)))
			return 0;
		s->culling = 1;
		/* Trimming to cache_size is routine; a filling disk is news,
		 * once a minute. */
		int news = !(s->cache_size && s->tot.bytes > s->cache_size) &&
			   store_now(s) >= s->cull_logged + 60;
		if (news)
			s->cull_logged = store_now(s);
		log_msg(news ? CFS_LOG_INFO : CFS_LOG_DEBUG, "cache culling: %s", why);
	}
	if (s->disk_full && !s->fill_stopped) {
		s->fill_stopped = 1;
		log_warn("cache filesystem is full: filling stopped, reads pass through");
	}
	for (int tries = 0; n < max && tries < 2 * max + 16; tries++) {
		if (!s->index_full && !s->disk_full && cull_done(s, b, f))
			break;
		rc = store_evict_oldest(s, &freed);
		if (rc < 0)
			break;
		n += rc;
		if (have)
			estimate(s, &st, &b, &f);
	}
	if (s->disk_full && n > 0) {
		unlink_now(s);
		if (store_txn_commit(s) == 0) {
			s->disk_full = 0;
			log_info("cache filesystem full: %d objects evicted to make room", n);
		}
	}
	if (s->index_full && n > 0) {
		/* LMDB reuses pages freed by a transaction only from the second
		 * commit after it: commit the evictions and an empty batch now,
		 * or every put would fail again before anything commits. */
		if (store_txn_commit(s) == 0 && store_txn_write(s, &rc) != NULL)
			store_txn_commit(s);
	}
	s->index_full = 0;
	if (cull_done(s, b, f)) {

		s->culling = 0;
		log_debug("cache culling done: %" PRIu64
		          " bytes cached, %d%% blocks and %d%% files "
		          "free",
		          s->tot.bytes, (int)b, (int)f);
	}
	return n;
}
