/* Private to the store (store*.c) and its unit test. The contract is
 * include/store.h.
 *
 * Index (LMDB, <dir>/index), named databases, all integers little endian
 * unless said otherwise:
 *
 *   objects  key fh (1..64 bytes)
 *            value: the record below, then inline_len inline bytes
 *   chunks   key fhlen (1 byte) + fh + chunk index (u32 big endian), so one
 *            object's chunks are contiguous and in order
 *            value: xxh3-64 (u64) + length (u32)                 12 bytes
 *   lru      key last_access (u64 big endian, unix ms) + fh; empty value
 *   meta     key "totals": u32 version (1), u32 zero, then u64 bytes,
 *            objects, chunks, next_data_id, evictions, evicted_bytes,
 *            checksum failures                                   64 bytes
 *            key "fh_key": u64 xxh3-64 of the handle key the map was
 *            last used with (store_fhmap.c: a change is logged)
 *   mcache   the metadata cache's records (store_meta.c)
 *   fhmap    key a mapped client handle (STORE_FH_MAPPED_LEN bytes)
 *            value: u8 version (1), u8 upstream handle length n (1..128),
 *            the upstream handle, u64 xxh3-64 of key and those bytes
 *            (seeded with the key's xxh3-64, as mcache's)  10 + n bytes
 *            Never removed but with the whole index (store_fhmap.c).
 *
 * Object record (REC_HDR = 156 bytes before the inline bytes; version 2:
 * REC_HDR2 = 164, the snapshot's change attribute at 156):
 *     0 u8  version (1: no change attribute, an NFSv3 filer's; 2: with
 *           one, an NFSv4 filer's)
 *                            1 u8 guard            2 u16 guard_hour
 *     4 u32 flags
 *       (guard and guard_hour: STORE_GUARD_*, store.h; builds before them
 *       wrote zeros there, STORE_GUARD_LEGACY)
 *     8 u64 snap.size       16 u32 snap.mtime_s   20 u32 snap.mtime_ns
 *    24 u32 snap.ctime_s    28 u32 snap.ctime_ns
 *    32 fattr3: type mode nlink uid gid (u32 each), size used (u64),
 *       rdev.specdata1/2 (u32), fsid fileid (u64), atime mtime ctime
 *       (u32 seconds + u32 nseconds each)                      84 bytes
 *   116 u32 chunk_size     120 u64 data_id       128 u64 cached_bytes
 *   136 u64 last_access (unix ms: the API gives seconds)
 *   144 u32 inline_len     148 u64 inline xxh3-64
 *   156 inline bytes (version 1)
 *   156 u64 snap.change, 164 inline bytes (version 2)
 * Builds before version 2 refuse a version-2 record (dropped as damaged:
 * the data is fetched again), so an NFSv4 run's snapshot is never taken
 * without its change attribute.
 *
 * Data ids: next_data_id is persistent and only grows. Each open starts a
 * new run at the next multiple of 2^40 and makes that durable before any
 * id of the run is handed out, so a data file left by a crashed run (data
 * written, index commit lost) can never be taken for a new object's, and
 * the orphan scan may remove unreferenced files below the run's first id
 * without racing this run's writers. */
#ifndef CFS_STORE_INT_H
#define CFS_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/statvfs.h>

#include "store.h"

static inline void store_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void store_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t store_get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t store_get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline void store_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static inline uint64_t store_get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

#define STORE_REC_VERSION  1
#define STORE_REC_VERSION2 2
#define STORE_REC_HDR      156
#define STORE_REC_HDR2     164
#define STORE_REC_HDR_MAX  STORE_REC_HDR2
#define STORE_ATTRS_OFF    32
#define STORE_ATTRS_LEN    84
#define STORE_CACHED_OFF   128
#define STORE_ACCESS_OFF   136
#define STORE_CHUNK_VAL    12
#define STORE_META_LEN     64
#define STORE_RUN_SHIFT    40

/* Accesses (store_touch) are kept in memory with their exact time and
 * written to the LRU index in rounds: one every this many seconds (or when
 * this many objects are pending), at most STORE_TOUCH_BATCH objects per
 * commit. Writing each access at once would rewrite the record, up to
 * inline_max bytes, of every hot object every second. Eviction consults
 * the pending accesses, so its order is exact; a crash forgets at most the
 * last round, which only makes a few objects look older. */
#define STORE_TOUCH_ROUND_SECONDS 60
#define STORE_TOUCH_MAX           65536
#define STORE_TOUCH_BATCH         256

/* A write transaction is committed early once it has written this much, to
 * stay far below LMDB's dirty page limit (MDB_TXN_FULL). */
#define STORE_TXN_SOFT_MAX (64u << 20)

#define STORE_SYNC_SECONDS 5

/* The LMDB map (address space, not memory): 16 GiB held about 11 M
 * objects of the cost-curve mix (1.4 KB of index each, docs/bench.md
 * "Cost curves"), and a 10 M-object index grew past it with churn. */
#define STORE_DEFAULT_MAP_SIZE (64ull << 30)

/* The index check at open (store_check.c) reads every page the index
 * uses: 0.25 s for a 180 MB index in the page cache, 1.5 s from the disk,
 * minutes for the 10 M-object one (docs/bench.md "Cost curves"). An index
 * file up to STORE_CHECK_SYNC_MAX bytes is checked whole before LMDB maps
 * it, as always. A larger one gets the quick check (meta pages, sizes, the
 * database records, the top STORE_CHECK_QUICK_DEPTH levels of every tree)
 * before, and the whole check on a thread of its own after the open, under
 * a read transaction that keeps its snapshot's pages from being reused.
 * index/checking is there while that check runs: a start that finds it
 * (the last run crashed, maybe on the damage being looked for, or stopped
 * before its check was done) checks the whole index before serving. Damage
 * found in the background makes the index broken (store_set_broken):
 * caching stops, the next start replaces it. */
#define STORE_CHECK_SYNC_MAX    (256ull << 20)
#define STORE_CHECK_QUICK_DEPTH 2
#define STORE_CHECKING          "checking"

struct store_totals {
	uint64_t bytes;
	uint64_t objects;
	uint64_t chunks;
	uint64_t evictions;
	uint64_t evicted_bytes;
	uint64_t csum_failures;
};

/* A data file to unlink once the transaction dropping it has committed. */
struct store_unlink {
	uint64_t data_id;
	uint64_t bytes;
};

struct store_touch_ent {
	uint64_t when;    /* last access, unix ms */
	uint64_t applied; /* when as written to the index (0: not yet) */
	uint8_t len;
	uint8_t fh[STORE_FH_MAX];
};

/* Objects accessed and not yet written to the LRU index. */
struct store_touch_set {
	struct store_touch_ent *ents;
	uint32_t n;
	uint32_t *slots; /* entry index + 1; 0 = empty */
	uint32_t nslots; /* power of two; twice the entries' room */
};

/* The free-space thresholds as applied to a filesystem of `total` bytes:
 * free bytes below which filling stops, culling starts, and up to which
 * culling goes and filling resumes (store_cull.c, space_levels). */
struct store_levels {
	uint64_t total, stop, cull, run;
};

/* Writes to the cache failing (store_cull.c): a data file write or an
 * index commit with a disk error. Filling stops; commits and fills are
 * tried again after a backoff that doubles up to STORE_RETRY_MAX_MS, and
 * the first success of what failed ends the episode. */
struct store_trouble {
	int commit_err;    /* errno of the failing commits; 0: they work */
	int write_err;     /* errno of the failing data writes; 0: they work */
	uint64_t fails;    /* failures in this episode */
	uint64_t since_ms; /* first failure of the episode (monotonic) */
	uint64_t ended_ms; /* end of the last episode */
	uint64_t delay_ms; /* the backoff now */
	uint64_t retry_ms; /* no commit or fill before this */
	uint64_t tried_ms; /* the last retry window that failed again */
};

#define STORE_RETRY_MIN_MS   250
#define STORE_RETRY_MAX_MS   10000
#define STORE_RETRY_RESET_MS 60000 /* a quiet minute resets the backoff */

typedef int (*store_statvfs_fn)(const char *path, struct statvfs *out, void *arg);

/* The background thread: unlinks, the periodic index sync, the orphan scan.
 * Everything below mu is protected by it. */
struct store_bg {
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* wakes the thread */
	pthread_cond_t idle_cv; /* broadcast when it has nothing left to do */
	int stop;
	struct store_unlink *q;
	size_t qlen, qcap;
	uint64_t pending_bytes; /* queued or being unlinked */
	uint64_t pending_files;
	uint64_t commits; /* bumped per commit; synced when it moved */
	int scan;         /* orphan scan still to do */
	int busy;
	uint64_t scan_below; /* orphans: unreferenced ids below this */
	uint64_t orphans_removed;
};

struct store {
	char *dir;  /* as configured: named in messages */
	char *path; /* absolute */

	char *identity;
	int dirfd;   /* flock()ed: one daemon per cache dir */
	int indexfd; /* index/ */
	int datafd;  /* data/: data files are opened below it, never through a link */
	uint32_t chunk_size, inline_max;
	uint64_t cache_size;
	int brun, bcull, bstop, frun, fcull, fstop;

	MDB_env *env;
	MDB_dbi db_obj, db_chunk, db_lru, db_meta;
	MDB_dbi db_mcache; /* the metadata cache (store_meta.c) */
	MDB_dbi db_fhmap;  /* mapped handles (store_fhmap.c) */
	/* the handle key as seeds of the mapped handles' hash; fh_keyed 0:
	 * not set yet */
	uint64_t fh_seed[4];
	int fh_keyed;
	int fh_test_collide;  /* test hook: the hash ignores the handle */
	uint64_t fh_collisions; /* salts skipped since start (logged) */
	uint64_t fh_collide_logged, fh_bad_logged; /* unix seconds */
	uint64_t mcache_sweep_ms; /* next expiry sweep */
	uint64_t mcache_bad, mcache_bad_logged; /* records failing their checksum */
	uint8_t mcache_cursor[512]; /* where the sweep goes on */
	size_t mcache_cursor_len;
	/* the last records read or written, verified (store_meta.c): a warm
	 * walk reads the same few records per call; NULL until first used */
	struct mmemo_slot *mmemo;
	/* slots of an older generation are empty */
	uint32_t mmemo_gen;
	MDB_txn *wtxn; /* the pass's write transaction, or NULL */
	MDB_txn *rtxn; /* reusable read-only transaction */
	int rtxn_live;
	uint64_t txn_bytes; /* written by wtxn, roughly */
	int txn_drops;      /* wtxn removes data or metadata, or makes a handle
	                     * mapping: commit it at the end of the pass */
	int broken;         /* sticky: the index failed at run time */
	uint64_t lost_logged;             /* data id of the last unusable data file logged */
	uint64_t data_refused;            /* unusable data files met */
	uint32_t recoveries[STORE_DMG_N]; /* damaged indexes replaced at open */
	char kept[64];                    /* the damaged index moved aside by this open (kept) */

	struct store_totals tot, tot_committed;
	uint64_t next_data_id;
	uint64_t run_first_id;
	uint64_t oldest_access;

	struct store_unlink *txq; /* unlinks waiting for wtxn to commit */
	size_t txq_len, txq_cap;
	uint64_t txq_bytes;

	struct store_touch_set touched;
	uint32_t touch_pos; /* next entry of the round in progress */
	int touch_round;    /* a round is in progress */
	uint64_t touch_round_ms;

	uint8_t *scratch; /* copy of a value being rewritten */
	size_t scratch_cap;

	int culling, fill_stopped, index_full;
	uint64_t index_full_logged; /* unix seconds */
	uint64_t index_full_at;     /* unix seconds of the last put or commit that found it full */
	uint64_t index_full_events; /* since start */
	uint64_t map_size;
	uint64_t index_used; /* bytes of the index file LMDB has used, at the last commit */
	/* fills whose bytes were not stored, by enum store_fill_reason and
	 * STORE_REFUSED_INDEX_FULL (store_fill_refused) */
	uint64_t fills_refused[STORE_REFUSED_N];

	int free_blocks_pct, free_files_pct;
	/* bytes of the cache filesystem at the last reading */
	uint64_t fs_avail, fs_total;
	/* Reserved by fills and not written yet, and written in all (data
	 * and index bytes): atomic, the workers' writes update them as they
	 * land (store_write_landed), so a reading, which takes fs_wrote
	 * before statvfs, never counts a write twice. */
	uint64_t fs_pending, fs_wrote;
	uint64_t fs_wrote_at_reading;
	uint64_t fs_freed;      /* unlinked by the loop thread since the reading */
	struct store_levels lv; /* the thresholds in bytes, for fs_total */
	int cull_wanted;        /* a reservation crossed bcull: cull before sleeping */
	uint64_t cull_logged;   /* unix seconds of the last "culling" info line */
	int disk_full;          /* a commit failed for lack of disk space */
	/* Why filling is stopped (store_cull.c): the inputs, and the state
	 * they last gave (logged when it changes) */
	int space_low, files_low; /* below bstop/fstop, until brun/frun */
	int fs_rdonly;            /* the last reading had ST_RDONLY */
	int too_small;            /* the filesystem cannot hold two chunks */
	enum store_fill_reason reason;
	struct store_trouble tr;
	uint64_t commit_failures, write_failures;           /* since start */
	uint64_t write_errs_unlogged, write_errs_logged_ms; /* other errors */

	uint64_t test_now;
	store_statvfs_fn statvfs_fn;
	void *statvfs_arg;

	struct store_bg bg;

	/* the whole index check after the open (STORE_CHECK_SYNC_MAX) */
	int check_deferred; /* to start after the open */
	int check_started;  /* check_thread runs or ran */
	int check_stop;     /* atomic: store_free asks it to give up */
	int check_state;    /* atomic: 0 running, 1 intact, 2 damaged, 3 gave up */
	int check_handled;  /* the loop thread acted on a final state */
	pthread_t check_thread;
	char check_why[320]; /* damage found (written before check_state 2) */
	/* the last cull step evicted nothing: culling in progress waits for
	 * the next timer step instead of every loop pass */
	int cull_stalled;
};

/* store.c */
uint64_t store_now(const struct store *s);
uint64_t store_now_ms(const struct store *s);
MDB_txn *store_txn_read(struct store *s, int *rc);
/* The entries of db (0 when the index cannot say; LMDB's damage marks the
 * index broken, named by what). */
uint64_t store_db_entries(struct store *s, MDB_dbi db, const char *what);
MDB_txn *store_txn_write(struct store *s, int *rc);
/* LMDB codes (MDB_* or, as LMDB returns them, a positive system errno)
 * stay inside the store: a function that calls LMDB converts what it gets
 * with store_mdb_errno() or store_txn_fail() (which also log it), and
 * returns 0 or a negative errno; the few helpers that return an LMDB code
 * say so. */

/* Aborts the write transaction after a failed LMDB call (rc an LMDB
 * code), rolls the in-memory state back, logs with LMDB's words; returns
 * the negative errno for rc. */
int store_txn_fail(struct store *s, int rc, const char *what);
/* Called with an LMDB code that says the index is damaged: caching stops
 * (logged once) and index/damaged tells the next start to replace it. */
void store_set_broken(struct store *s, int rc, const char *what);
/* 1 when the LMDB code rc says the index is damaged at run time. */
int store_mdb_fatal(int rc);
/* The negative errno for an LMDB code: 0 stays 0, MDB_NOTFOUND -ENOENT,
 * a full map or transaction -ENOSPC, a system errno its negative, any
 * other LMDB error -EIO (log mdb_strerror(rc) where the detail matters). */
int store_mdb_errno(int rc);
/* Commits the write transaction (without applying touches). 0 or a
 * negative errno (-EAGAIN: a failed commit's backoff is not over). */
int store_txn_commit(struct store *s);
/* Allocates a data id of this run. */
uint64_t store_new_data_id(struct store *s);

/* store_meta.c */
/* Forgets every remembered metadata record (a write transaction was lost). */
void store_meta_memo_clear(struct store *s);
void store_meta_memo_free(struct store *s);
/* At open, in the open's transaction: drops metadata records of an older
 * format (no checksum). An LMDB code. */
int store_meta_open(struct store *s, MDB_txn *txn);

/* store_rec.c */
/* The length of o's record header: STORE_REC_HDR, or STORE_REC_HDR2 when
 * its snapshot has a change attribute. */
size_t store_rec_hdr(const struct store_obj *o);
/* Packs the record header (store_rec_hdr(o) bytes) into b. */
void store_rec_pack(uint8_t *b, const struct store_obj *o, uint64_t csum);
/* Packs attributes (STORE_ATTRS_LEN bytes) into p. */
void store_attrs_pack(uint8_t *p, const fattr3 *a);
/* Unpacks and checks an object record; *csum and *inl (pointing into val)
 * may be NULL. 0 or -EINVAL. */
int store_rec_unpack(const void *val, size_t len, struct store_obj *o, uint64_t *csum,
                     const uint8_t **inl);

/* store_obj.c */

/* Evicts the least recently used object: 1 when one was evicted (*freed
 * gets its cached bytes), 0 when the LRU head was only stale (removed) or
 * accessed since (moved), -ENOENT when the LRU is empty, or -errno. */
int store_evict_oldest(struct store *s, uint64_t *freed);
/* Writes pending accesses to the LRU index, at most budget objects; starts
 * a round when one is due (see STORE_TOUCH_ROUND_SECONDS) or with force. */
int store_touch_flush(struct store *s, uint32_t budget, int force);
/* The unix time (seconds) of the LRU head, 0 if empty. */
uint64_t store_lru_oldest(struct store *s);

/* store_touch.c */
struct store_touch_ent *store_touchset_find(const struct store_touch_set *t, const void *fh,
                                            uint32_t fhlen);
/* Records an access (keeps the later time): 0, -ENOSPC when a new entry
 * would be the max + 1st, -ENOMEM. */
int store_touchset_put(struct store_touch_set *t, const void *fh, uint32_t fhlen, uint64_t when,
                       uint32_t max);

/* Keeps only the entries accessed again since they were written. */
void store_touchset_compact(struct store_touch_set *t);
void store_touchset_free(struct store_touch_set *t);

/* Queues the data file of data_id for unlink once wtxn commits. */
int store_unlink_later(struct store *s, uint64_t data_id, uint64_t bytes);

/* store_data.c */
/* "data/xx/yy/<16 hex digits>", relative to the cache directory. */
void store_data_path(char *buf, size_t len, uint64_t data_id);
/* Removes the data file of data_id (a link is removed, not followed);
 * 0 or -errno (-ENOENT: there was none). */
int store_data_unlink(struct store *s, uint64_t data_id);

/* store_check.c */
/* Reads the LMDB file fd with pread (never mapped) and checks what LMDB
 * relies on when it maps it; map_size is the map the store asks for.
 * 0: intact; 1: damaged, *reason and why (a sentence) say how; -ENOMEM. */
int store_index_check(int fd, uint64_t map_size, int *reason, char *why, size_t whylen);
/* The quick check (see STORE_CHECK_SYNC_MAX): O(1) pages. */
int store_index_check_quick(int fd, uint64_t map_size, int *reason, char *why, size_t whylen);
/* The whole check, giving up with -ECANCELED once *stop is nonzero. */
int store_index_check_stop(int fd, uint64_t map_size, int *reason, char *why, size_t whylen,
                           const int *stop);
/* The same check; on success *n gets the pages some tree uses (the first
 * max, ascending), for tests that damage live pages. */
int store_index_pages(int fd, uint64_t map_size, uint64_t *pages, size_t max, size_t *n, char *why,
                      size_t whylen);

/* store_cull.c */
/* Reads the cache filesystem into free_blocks_pct/free_files_pct, the
 * byte levels and the read-only flag. 0 or statvfs's -errno (nothing
 * changes then). */
int store_fs_read(struct store *s, struct statvfs *st);
/* The smallest filesystem that holds two chunks of chunk_size above the
 * run level of these thresholds (UINT64_MAX: none does). */
uint64_t store_space_min(uint32_t chunk_size, int brun, int bcull, int bstop);
/* At open: refuses (message in err) a cache filesystem smaller than
 * store_space_min(). */
int store_space_check(struct store *s, char *err, size_t errlen);
/* A commit is allowed now: no failure episode, or its backoff is over. */
int store_commit_due(const struct store *s);
/* An index commit failed with rc (an LMDB code: a disk error comes as
 * its positive errno) / succeeded:
 * the failure episode and the fill state follow. */
void store_commit_failed(struct store *s, int rc);
/* Before a commit: on a full filesystem (a write or commit found no
 * space, or the reading is below stop), the data files of the objects it
 * evicts go first (see unlink_now). */
void store_commit_prepare(struct store *s);
void store_commit_worked(struct store *s);

/* store.c: the loop thread takes the background check's result (from
 * store_cull_step, once a second): damage found makes the index broken. */
void store_check_poll(struct store *s);

/* store_bg.c */
int store_bg_start(struct store *s);
void store_bg_stop(struct store *s);
/* Hands committed unlinks to the thread (copies them). */
void store_bg_push(struct store *s, const struct store_unlink *u, size_t n);
void store_bg_committed(struct store *s);
void store_bg_pending(struct store *s, uint64_t *bytes, uint64_t *files);
/* The highest data id with a file under data/ (a slow walk: recovery
 * only). */
uint64_t store_data_max_id(struct store *s);
/* Removes a directory tree below dirfd (bounded depth). */
int store_rmtree(int parent, const char *name, int depth);

/* --- test hooks (tests/unit/test_store.c only) ---------------------------- */

/* Pretends the unix time is now (0: the real clock). */
void store_test_set_now(struct store *s, uint64_t now);
/* The index size above which the whole check runs after the open
 * (STORE_CHECK_SYNC_MAX); hold: that check waits until called again with
 * hold 0. */
void store_test_set_check(uint64_t sync_max, int hold);
/* Replaces statvfs(2) for the cull step (NULL: the real one). */
void store_test_set_statvfs(struct store *s, store_statvfs_fn fn, void *arg);
/* 0: open data files the way kernels without openat2 do (one level at a
 * time); 1: openat2 when the kernel has it (the default). */
void store_test_set_openat2(int on);
/* on: every mapped handle's hash ignores the upstream handle, so that any
 * two long handles collide (store_fhmap.c); 0: the real hash. */
void store_test_fh_collide(struct store *s, int on);
/* Waits until the background thread has unlinked everything queued and
 * finished the orphan scan; 0 or -ETIMEDOUT. */
int store_test_wait_idle(struct store *s, int timeout_ms);

#endif
