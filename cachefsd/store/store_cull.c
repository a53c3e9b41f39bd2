/* Space: the cache_size cap and cachefilesd-style thresholds on the cache
 * filesystem, and what stops filling.
 *
 * The thresholds are applied in bytes (space_levels): bstop/bcull/brun
 * percent of the filesystem, each raised so that a chunk fits between stop
 * and cull and another between cull and run. A fill reserves its chunk
 * against the last reading and is refused below stop, which asks for
 * culling but leaves the fill state alone; culling starts below cull and
 * goes on, a few objects per step, least recently used first, until the
 * cache is at 90% of cache_size and run is regained. Without the raise, a
 * chunk larger than the stop..run band (1 MiB against 10/7/3 % of 8 MiB)
 * crossed the whole band with every reservation.
 *
 * Filling stops (reads pass through) for one reason at a time, logged when
 * it changes (fill_update): readings below stop until run (blocks) or
 * fstop until frun (files), a read-only filesystem, and write failures:
 * a data write or index commit failing with a disk error starts an episode
 * in which commits and fills are tried again after a backoff, doubling from
 * STORE_RETRY_MIN_MS to STORE_RETRY_MAX_MS, until what failed works again.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static double pct(uint64_t avail, uint64_t total)
{
	if (total == 0 || avail >= total)
		return 100.0;
	return 100.0 * (double)avail / (double)total;
}

/* p percent of total, without overflow */
static uint64_t pct_of(uint64_t total, int p)
{
	return total / 100 * (uint64_t)p + total % 100 * (uint64_t)p / 100;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The backoff runs on the monotonic clock (a clock step must not stretch
 * it); the unit test's pretended time drives it too. */
static uint64_t mono_ms(const struct store *s)
{
	struct timespec ts;

	if (s->test_now)
		return s->test_now * 1000;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "512 KiB", "8.0 MiB": for messages */
static const char *fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b == UINT64_MAX)
		snprintf(buf, len, "(no size)");
	else if (b < (1u << 20))
		snprintf(buf, len, "%" PRIu64 " KiB", (b + 1023) / 1024);
	else if (b < (1ull << 30))
		snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, len, "%.1f GiB", (double)b / (1 << 30));
	return buf;
}

static struct store_levels space_levels(uint32_t chunk, int brun, int bcull, int bstop,
                                        uint64_t total)
{
	struct store_levels l = {total, pct_of(total, bstop), 0, 0};

	l.cull = max64(pct_of(total, bcull), l.stop + chunk);
	l.run = max64(pct_of(total, brun), l.cull + chunk);
	return l;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* Two chunks above run: T - max(rT, bcT + c, sT + 2c) >= 2c. */
uint64_t store_space_min(uint32_t chunk_size, int brun, int bcull, int bstop)
{
	uint64_t c = chunk_size;

	if (brun >= 100 || bcull >= 100 || bstop >= 100)
		return UINT64_MAX;
	return max64(ceil_div(200 * c, (uint64_t)(100 - brun)),
	             max64(ceil_div(300 * c, (uint64_t)(100 - bcull)),
	                   ceil_div(400 * c, (uint64_t)(100 - bstop))));
}

int store_space_check(struct store *s, char *err, size_t errlen)
{
	struct statvfs st;
	uint64_t total, need, need_min;
	char b1[32], b2[32], b3[32], b4[32], hint[96] = "";

	if (fstatvfs(s->dirfd, &st) != 0)
		return 0; /* no reading: the thresholds find out later */
	total = (uint64_t)st.f_blocks * (st.f_frsize ? st.f_frsize : st.f_bsize);
	need = store_space_min(s->chunk_size, s->brun, s->bcull, s->bstop);
	if (total == 0 || total >= need)
		return 0;
	if (need == UINT64_MAX) {
		snprintf(err, errlen,
		         "cache_dir %s: brun/bcull/bstop %d/%d/%d %%: culling to 100%% free leaves "
		         "no room for cached data: lower brun",
		         s->dir, s->brun, s->bcull, s->bstop);
		return -EINVAL;
	}
	need_min = store_space_min(64u << 10, s->brun, s->bcull, s->bstop);
	if (s->chunk_size > (64u << 10) && need_min <= total)
		snprintf(hint, sizeof(hint), ", or a smaller chunk_size (64K needs %s)",
		         fmt_bytes(b4, sizeof(b4), need_min));
	snprintf(err, errlen,
	         "cache_dir %s: its filesystem holds %s, too small for chunk_size %s with "
	         "brun/bcull/bstop %d/%d/%d %%: it needs at least %s (two chunks above the "
	         "free-space run level, which is at least bstop plus two chunks): give the cache "
	         "a larger filesystem%s",
	         s->dir, fmt_bytes(b1, sizeof(b1), total), fmt_bytes(b2, sizeof(b2), s->chunk_size),
	         s->brun, s->bcull, s->bstop, fmt_bytes(b3, sizeof(b3), need), hint);
	return -ENOSPC;
}

static void fill_update(struct store *s);
static void trouble_over(struct store *s, int commit);

int store_fs_read(struct store *s, struct statvfs *st)
{
	uint64_t unit, need;
	int rc, ro;

	memset(st, 0, sizeof(*st));
	/* before statvfs: what landed until now is in the reading */
	s->fs_wrote_at_reading = __atomic_load_n(&s->fs_wrote, __ATOMIC_ACQUIRE);
	if (s->statvfs_fn)
		rc = s->statvfs_fn(s->dir, st, s->statvfs_arg);
	else
		rc = fstatvfs(s->dirfd, st) == 0 ? 0 : -errno;
	if (rc)
		return rc;
	s->free_blocks_pct = (int)pct(st->f_bavail, st->f_blocks);
	s->free_files_pct = (int)pct(st->f_favail, st->f_files);
	unit = st->f_frsize ? st->f_frsize : st->f_bsize;
	s->fs_avail = (uint64_t)st->f_bavail * unit;
	s->fs_freed = 0; /* unlinked on this thread before: in the reading */
	s->fs_total = (uint64_t)st->f_blocks * unit;
	s->lv = space_levels(s->chunk_size, s->brun, s->bcull, s->bstop, s->fs_total);
	if (s->fs_total) {
		if (s->fs_avail < s->lv.stop)
			s->space_low = 1;
		else if (s->fs_avail >= s->lv.run)
			s->space_low = 0;
	}
	if (s->free_files_pct < s->fstop)
		s->files_low = 1;
	else if (s->free_files_pct >= s->frun)
		s->files_low = 0;
	ro = (st->f_flag & ST_RDONLY) != 0;
	if (s->fs_rdonly && !ro)
		s->tr.retry_ms = mono_ms(s); /* writable again: retry at once */
	s->fs_rdonly = ro;
	/* refused at open; a reload or a resize can get here */
	need = store_space_min(s->chunk_size, s->brun, s->bcull, s->bstop);
	if (s->fs_total && s->fs_total < need && !s->too_small) {
		char b1[32], b2[32];

		log_warn("cache filesystem of %s holds %s, less than the %s chunk_size %u with "
		         "brun/bcull/bstop %d/%d/%d %% needs: little or nothing will be cached",
		         s->dir, fmt_bytes(b1, sizeof(b1), s->fs_total),
		         fmt_bytes(b2, sizeof(b2), need), s->chunk_size, s->brun, s->bcull,
		         s->bstop);
	}
	s->too_small = s->fs_total && s->fs_total < need;
	/* A data write found no space and this reading finds enough: the
	 * reading says it is over (nothing else would try until a read
	 * comes), but not before the backoff (ENOSPC with blocks free: out
	 * of inodes, reserved blocks). */
	if (s->tr.write_err == ENOSPC && !s->tr.commit_err && s->fs_total &&
	    s->fs_avail >= s->lv.run && !s->files_low && mono_ms(s) >= s->tr.retry_ms)
		trouble_over(s, 0);
	return 0;
}

/* --- write failures ------------------------------------------------------ */

static int disk_error(int e)
{
	return e == EROFS || e == ENOSPC || e == EDQUOT || e == EIO;
}

/* A data write (commit 0) or an index commit (1) failed with disk error e:
 * an episode starts, or goes on. */
static void trouble(struct store *s, int commit, int e)
{
	struct store_trouble *t = &s->tr;
	uint64_t now = mono_ms(s);
	struct statvfs st;

	/* LMDB reports a short write as EIO: on a filesystem this full, it is
	 * the lack of space */
	if (e == EIO && store_fs_read(s, &st) == 0 && s->fs_total && s->fs_avail < s->lv.cull)
		e = ENOSPC;
	if (!t->commit_err && !t->write_err) {
		/* Episodes close together keep doubling the backoff: a failure
		 * that a success interrupts now and then (a quota) cannot
		 * make them frequent. */
		if (t->ended_ms && now < t->ended_ms + STORE_RETRY_RESET_MS)
			t->delay_ms = t->delay_ms * 2 < STORE_RETRY_MAX_MS ? t->delay_ms * 2
			                                                   : STORE_RETRY_MAX_MS;
		else
			t->delay_ms = STORE_RETRY_MIN_MS;
		t->fails = 0;
		t->since_ms = now;
		t->retry_ms = now + t->delay_ms;
	} else if (now >= t->retry_ms && t->tried_ms != t->retry_ms) {
		/* the retry failed: wait longer (once per retry window: the
		 * trial fills that window let through fail together) */
		t->tried_ms = t->retry_ms;
		t->delay_ms =
		    t->delay_ms * 2 < STORE_RETRY_MAX_MS ? t->delay_ms * 2 : STORE_RETRY_MAX_MS;
		t->retry_ms = now + t->delay_ms;
	}
	t->fails++;
	if (commit)
		t->commit_err = e;
	else
		t->write_err = e;
	if (e == ENOSPC || e == EDQUOT)
		s->cull_wanted = 1;
	fill_update(s);
}

/* What had failed worked: the episode ends when nothing fails any more. */
static void trouble_over(struct store *s, int commit)
{
	struct store_trouble *t = &s->tr;

	if (commit)
		t->commit_err = 0;
	else
		t->write_err = 0;
	if (t->commit_err || t->write_err || t->fails == 0)
		return;
	t->ended_ms = mono_ms(s);
	fill_update(s);
	t->fails = 0;
}

int store_commit_due(const struct store *s)
{
	return !s->tr.commit_err || mono_ms(s) >= s->tr.retry_ms;
}

uint64_t store_commit_wait_ms(const struct store *s)
{
	uint64_t now;

	if (s == NULL || !s->tr.commit_err)
		return 0;
	now = mono_ms(s);
	return now >= s->tr.retry_ms ? 0 : s->tr.retry_ms - now;
}

void store_commit_failed(struct store *s, int rc)
{
	s->commit_failures++;
	if (rc > 0 && disk_error(rc)) {
		if (rc != EROFS)
			s->disk_full = 1; /* cull, and remove the files before the commit */
		trouble(s, 1, rc);
		return;
	}
	log_err("cache index: commit failed: %s; this pass's changes are lost", mdb_strerror(rc));
}

void store_commit_worked(struct store *s)
{
	s->disk_full = 0;
	if (s->tr.commit_err)
		trouble_over(s, 1);
}

/* Bytes fills will still write, and wrote since the reading. */
static uint64_t fs_used(const struct store *s)
{
	return __atomic_load_n(&s->fs_pending, __ATOMIC_ACQUIRE) +
	       (__atomic_load_n(&s->fs_wrote, __ATOMIC_ACQUIRE) - s->fs_wrote_at_reading);
}

void store_write_landed(struct store *s, uint64_t bytes, int rc)
{
	/* written first, then no longer pending: a reader in between counts
	 * it twice (harmless), never not at all */
	if (rc == 0)
		__atomic_add_fetch(&s->fs_wrote, bytes, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&s->fs_pending, bytes, __ATOMIC_RELEASE);
}

void store_write_end(struct store *s, int rc)
{
	uint64_t now;

	if (s == NULL)
		return;
	if (rc == 0) {
		if (s->tr.write_err)
			trouble_over(s, 0);
		return;
	}
	if (rc == -ECANCELED)
		return;
	s->write_failures++;
	if (disk_error(-rc)) {
		trouble(s, 0, -rc);
		return;
	}
	/* anything else is about one file: say so, once a minute */
	now = mono_ms(s);
	if (s->write_errs_logged_ms && now < s->write_errs_logged_ms + 60000) {
		s->write_errs_unlogged++;
		return;
	}
	if (s->write_errs_unlogged)
		log_warn("cannot write to the cache: %s (and %" PRIu64 " more failures in the last "
		         "minute)",
		         strerror(-rc), s->write_errs_unlogged);
	else
		log_warn("cannot write to the cache: %s", strerror(-rc));
	s->write_errs_unlogged = 0;
	s->write_errs_logged_ms = now;
}

/* --- the fill state ------------------------------------------------------ */

static const char *const reason_names[STORE_FILL_NREASONS] = {
    [STORE_FILL_ON] = "none",
    [STORE_FILL_INDEX_DAMAGED] = "index_damaged",
    [STORE_FILL_READ_ONLY] = "read_only",
    [STORE_FILL_DISK_FULL] = "disk_full",
    [STORE_FILL_WRITE_ERRORS] = "write_errors",
    [STORE_FILL_SPACE] = "space",
    [STORE_FILL_FILES] = "files",
};

const char *store_fill_reason_name(enum store_fill_reason r)
{
	return (unsigned)r < STORE_FILL_NREASONS ? reason_names[r] : "unknown";
}

const char *store_refused_name(int r)
{
	return r == STORE_REFUSED_INDEX_FULL ? "index_full"
	                                     : store_fill_reason_name((enum store_fill_reason)r);
}

void store_fill_refused(struct store *s, int rc)
{
	int r;

	if (s == NULL || rc == -ECANCELED) /* not tried: as store_write_end */
		return;
	if (s->broken)
		r = STORE_FILL_INDEX_DAMAGED;
	else if (rc == 0)
		r = s->reason != STORE_FILL_ON ? (int)s->reason : STORE_FILL_SPACE;
	else if (rc == -EROFS)
		r = STORE_FILL_READ_ONLY;
	else if (rc == -ENOSPC && s->index_full)
		r = STORE_REFUSED_INDEX_FULL; /* a put found the map full (store_mdb_errno) */
	else if (rc == -ENOSPC || rc == -EDQUOT)
		r = STORE_FILL_DISK_FULL;
	else
		r = STORE_FILL_WRITE_ERRORS;
	s->fills_refused[r]++;
}

static enum store_fill_reason fill_reason(const struct store *s)
{
	int e = s->tr.commit_err ? s->tr.commit_err : s->tr.write_err;

	if (s->broken)
		return STORE_FILL_INDEX_DAMAGED;
	if (s->fs_rdonly || e == EROFS)
		return STORE_FILL_READ_ONLY;
	if (e == ENOSPC || e == EDQUOT)
		return STORE_FILL_DISK_FULL;
	if (e)
		return STORE_FILL_WRITE_ERRORS;
	if (s->space_low)
		return STORE_FILL_SPACE;
	if (s->files_low)
		return STORE_FILL_FILES;
	return STORE_FILL_ON;
}

/* Why filling stopped, for the log line. */
static void reason_text(const struct store *s, enum store_fill_reason r, char *buf, size_t len)
{
	const struct store_trouble *t = &s->tr;
	int e = t->commit_err ? t->commit_err : t->write_err;
	const char *what = t->commit_err ? "an index commit" : "a data file write";
	char b1[32], b2[32], b3[32], b4[32];

	switch (r) {
	case STORE_FILL_READ_ONLY:
		if (e == EROFS)
			snprintf(buf, len, "the cache filesystem is read-only (%s on %s)",
			         strerror(e), what);
		else
			snprintf(buf, len, "the cache filesystem is mounted read-only");
		break;
	case STORE_FILL_DISK_FULL:
	case STORE_FILL_WRITE_ERRORS:
		snprintf(buf, len, "%s failed: %s%s; tried again after a backoff of up to %d s",
		         what, strerror(e),
		         r == STORE_FILL_DISK_FULL ? " (the cache filesystem is full)" : "",
		         STORE_RETRY_MAX_MS / 1000);
		break;
	case STORE_FILL_SPACE:
		snprintf(buf, len,
		         "the cache filesystem has %s free of %s, below the stop level %s (bstop "
		         "%d%%, at least a chunk below the cull level); until %s free (brun %d%%)",
		         fmt_bytes(b1, sizeof(b1), s->fs_avail),
		         fmt_bytes(b2, sizeof(b2), s->fs_total),
		         fmt_bytes(b3, sizeof(b3), s->lv.stop), s->bstop,
		         fmt_bytes(b4, sizeof(b4), s->lv.run), s->brun);
		break;
	case STORE_FILL_FILES:
		snprintf(buf, len,
		         "the cache filesystem has %d%% files free, below fstop %d%%; until "
		         "frun %d%%",
		         s->free_files_pct, s->fstop, s->frun);
		break;
	default:
		snprintf(buf, len, "%s", store_fill_reason_name(r));
		break;
	}
}

/* Recomputes the reason; logs when it changed. A failure episode that
 * ended since is told with its count. */
static void fill_update(struct store *s)
{
	enum store_fill_reason r = fill_reason(s), old = s->reason;
	const struct store_trouble *t = &s->tr;
	char why[320], tail[128] = "";
	int ended = !t->commit_err && !t->write_err && t->fails;

	s->reason = r;
	s->fill_stopped = r != STORE_FILL_ON;
	if (r == old)
		return;
	if (ended)
		snprintf(tail, sizeof(tail),
		         " (writes to the cache work again after %" PRIu64 " failures in %.1f s)",
		         t->fails, (double)(t->ended_ms - t->since_ms) / 1000.0);
	if (r == STORE_FILL_INDEX_DAMAGED)
		return; /* said where it was found */
	reason_text(s, r, why, sizeof(why));
	if (old == STORE_FILL_ON)
		log_warn("filling stopped: %s; reads pass through", why);
	else if (r != STORE_FILL_ON)
		log_info("filling still stopped, now because %s%s", why, tail);
	else
		log_info("filling resumed: %d%% free blocks, %d%% free files%s", s->free_blocks_pct,
		         s->free_files_pct, tail);
}

int store_fill_allowed(const struct store *s)
{
	if (s->reason == STORE_FILL_ON)
		return !s->broken;
	/* only data writes fail: a trial once the backoff is over */
	if (s->broken || s->fs_rdonly || s->space_low || s->files_low || s->tr.commit_err ||
	    !s->tr.write_err)
		return 0;
	return mono_ms(s) >= s->tr.retry_ms;
}

/* --- reservations -------------------------------------------------------- */

/* Free bytes for a reservation of `bytes`: the reading, what was freed and
 * what fills wrote or will write since. */
static uint64_t fs_free_for(const struct store *s, uint64_t bytes)
{
	uint64_t have = s->fs_avail + s->fs_freed, used = fs_used(s) + bytes;

	return have > used ? have - used : 0;
}

/* Fills are fast and the statvfs reading is taken once a second, or when a
 * reservation asks for culling: what fills are writing and wrote since the
 * reading is subtracted from it, so a fast reader cannot run the cache
 * filesystem full. */
static int reserve(struct store *s, uint64_t bytes)
{
	uint64_t free;

	if (s == NULL || !store_fill_allowed(s))
		return -ENOSPC;
	/* cache_size too is kept between the once-a-second cull steps */
	if (s->cache_size && s->tot.bytes + bytes > s->cache_size)
		s->cull_wanted = 1;
	if (s->fs_total == 0)
		return 0; /* no reading */
	free = fs_free_for(s, bytes);
	if (free < s->lv.cull)
		s->cull_wanted = 1;
	return free < s->lv.stop ? -ENOSPC : 0;
}

int store_reserve(struct store *s, uint64_t bytes)
{
	int rc = reserve(s, bytes);

	if (rc == 0) /* index bytes: as if written now */
		__atomic_add_fetch(&s->fs_wrote, bytes, __ATOMIC_RELEASE);
	return rc;
}

int store_reserve_write(struct store *s, uint64_t bytes)
{
	int rc = reserve(s, bytes);

	if (rc == 0)
		__atomic_add_fetch(&s->fs_pending, bytes, __ATOMIC_RELEASE);
	return rc;
}

int store_cull_wanted(const struct store *s)
{
	return s && (s->cull_wanted || s->disk_full || (s->culling && !s->cull_stalled));
}

/* --- culling ------------------------------------------------------------- */

/* The cache filesystem is full: LMDB cannot commit (copy-on-write needs
 * free pages) and evictions only free space after their commit. So the data
 * files of the objects evicted in this transaction are removed now, before
 * the commit: if the commit then fails, the index points at missing files,
 * which a read treats like a checksum failure (refetch). They leave the
 * queue (the commit has nothing left to unlink) and count as freed until
 * the next reading. */
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
	s->fs_freed += s->txq_bytes;
	s->txq_len = 0;
	s->txq_bytes = 0;
}

/* Free bytes and files once the queued unlinks and the fills' writes are
 * done: ext4 shows freed space only after the unlink, evictions of this
 * pass are not even committed, and a reading does not see the writes of
 * fills still in flight or done since. */
static void estimate(struct store *s, const struct statvfs *st, uint64_t *b, double *f)
{
	uint64_t bytes, files, used = fs_used(s);

	store_bg_pending(s, &bytes, &files);
	*b = s->fs_avail + s->fs_freed + bytes + s->txq_bytes;
	*b = *b > used ? *b - used : 0;
	*f = pct(st->f_favail + files + s->txq_len, st->f_files);
}

static int cull_start(const struct store *s, uint64_t b, double f, char *why, size_t len)
{
	char b1[32], b2[32];

	if (s->cache_size && s->tot.bytes > s->cache_size)
		snprintf(why, len, "%" PRIu64 " bytes cached, above cache_size %" PRIu64,
		         s->tot.bytes, s->cache_size);
	else if (s->fs_total && b < s->lv.cull)
		snprintf(why, len, "%s free, below the cull level %s (bcull %d%%)",
		         fmt_bytes(b1, sizeof(b1), b), fmt_bytes(b2, sizeof(b2), s->lv.cull),
		         s->bcull);
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

static int cull_done(const struct store *s, uint64_t b, double f)
{
	return (s->cache_size == 0 || s->tot.bytes <= s->cache_size / 10 * 9) &&
	       (s->fs_total == 0 || b >= s->lv.run) && f >= s->frun;
}

void store_commit_prepare(struct store *s)
{
	if (s->txq_len && (s->disk_full || s->tr.write_err == ENOSPC ||
	                   s->tr.commit_err == ENOSPC || (s->fs_total && s->fs_avail < s->lv.stop)))
		unlink_now(s);
}

/* Commits failing: the retry, when its backoff is over. What is open is
 * committed; with nothing open, the totals record alone, which is a real
 * write to the index. */
static void retry_commit(struct store *s)
{
	int rc;

	if (s->wtxn == NULL && store_txn_write(s, &rc) == NULL)
		return;
	store_txn_commit(s);
}

int store_cull_step(struct store *s, int max)
{
	struct statvfs st;
	uint64_t b = UINT64_MAX, freed;
	double f = 100.0;
	char why[160];
	int have, n = 0, rc;

	if (s == NULL)
		return 0;
	store_check_poll(s);
	if (s->broken) {
		fill_update(s);
		return 0;
	}
	s->cull_wanted = 0;
	have = store_fs_read(s, &st) == 0;
	fill_update(s);
	/* While commits wait for their backoff, nothing is evicted: the
	 * evictions could not be committed either. */
	if (!store_commit_due(s))
		return 0;
	/* Idle loops commit rarely: the timer carries the rounds on. */
	store_touch_flush(s, STORE_TOUCH_BATCH, 0);
	if (have)
		estimate(s, &st, &b, &f);
	if (!s->culling) {
		if (!cull_start(s, b, f, why, sizeof(why)))
			goto retry;
		s->culling = 1;
		/* Trimming to cache_size is routine; a filling disk is news,
		 * once a minute. */
		int news = !(s->cache_size && s->tot.bytes > s->cache_size) &&
		           store_now(s) >= s->cull_logged + 60;
		if (news)
			s->cull_logged = store_now(s);
		log_msg(news ? CFS_LOG_INFO : CFS_LOG_DEBUG, "cache culling: %s", why);
	}
	for (int tries = 0; n < max && tries < 2 * max + 16; tries++) {
		if (!s->index_full && cull_done(s, b, f))
			break;
		rc = store_evict_oldest(s, &freed);
		if (rc < 0)
			break;
		n += rc;
		if (have)
			estimate(s, &st, &b, &f);
	}
	if (s->index_full && n > 0) {
		/* LMDB reuses pages freed by a transaction only from the second
		 * commit after it: commit the evictions and an empty batch now,
		 * or every put would fail again before anything commits. */
		if (store_txn_commit(s) == 0 && store_txn_write(s, &rc) != NULL)
			store_txn_commit(s);
	}
	s->index_full = 0;
	s->cull_stalled = n == 0;
	if (cull_done(s, b, f)) {
		s->culling = 0;
		log_debug("cache culling done: %" PRIu64 " bytes cached, %" PRIu64
		          " bytes and %d%% files free",
		          s->tot.bytes, b, (int)f);
	}
retry:
	if (s->tr.commit_err || (s->disk_full && n > 0))
		retry_commit(s);
	return n;
}
