/* The store: the cache directory on local disk.
 *
 *   <cache-dir>/CACHE            identity: layout version + upstream
 *   <cache-dir>/index/           LMDB environment (see below)
 *   <cache-dir>/data/xx/yy/<id>  sparse data files of chunked objects
 *
 * Objects are keyed by the upstream file handle (1..64 bytes). An object
 * record holds the attributes its data was stored under (the snapshot), the
 * full fattr3 last stored, and either inline data (small files, inside the
 * LMDB value: a warm small-file read is one B-tree lookup, no open()) or a
 * data file of aligned chunks with a presence entry and an xxh3-64 checksum
 * per chunk. An LRU database orders objects by last access.
 *
 * Threading: every function runs on the loop thread unless marked [worker];
 * those only touch data files and may run on any thread concurrently.
 * Writes to the index go into one write transaction (a batch) that stays
 * open until store_commit(); reads made through the store see them. The
 * caller decides when to commit (the engine: at the end of a pass when
 * the batch removes something or the store is broken, else from a
 * one-shot timer armed when the batch was first left open, see
 * store_commit_deferrable() and store_commit_wait_ms()); a pass that does
 * not commit ends with store_pass_end().
 *
 * Durability: the index is opened with MDB_NOSYNC and synced every few
 * seconds by a background thread, data files are never fsynced. A process
 * crash (kill -9) loses nothing committed; an OS crash may lose the last
 * seconds or leave an index entry whose data did not reach the disk, which
 * the checksum catches on read. Data is always written before the index
 * entry pointing at it is committed.
 *
 * Errors: 0 or a negative errno. */
#ifndef CFS_STORE_H
#define CFS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "counters.h"

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#define STORE_LAYOUT_VERSION 1
#define STORE_FH_MAX	     64

struct store;

/* The change attribute an NFSv4 filer sent with a file's attributes:
 * exact where mtime and ctime are not (a same-size rewrite within one
 * timestamp tick moves it). has 0: none (NFSv3, or not sent). */
struct store_chg {
	uint64_t change;
	int has;
};

/* What the cached data of an object was stored under. Two snapshots that
 * differ in any field mean the file changed upstream: one with a change
 * attribute never equals one without (a record of an NFSv3 run is not
 * taken by an NFSv4 run, nor the other way). */
struct store_snap {
	uint64_t size;
	uint32_t mtime_s, mtime_ns;
	uint32_t ctime_s, ctime_ns;
	uint32_t has_change;
	uint64_t change;
};

#define STORE_OBJ_INLINE 0x1u /* data is inline (inline_len bytes) */

/* On what ground the fresh guard let an object's data in (the engine's
 * judgement, cachefsd/engine/fclock.h): by the filer's clock as the proxy
 * knew it (SOUND), or only by assuming the filer's clock close to the
 * proxy's (ASSUMED, at guard_hour). LEGACY: written by a build that judged
 * by the proxy's own clock; the engine does not serve such data. A new
 * record is SOUND until store_obj_set_guard() says otherwise. */
#define STORE_GUARD_LEGACY  0
#define STORE_GUARD_SOUND   1
#define STORE_GUARD_ASSUMED 2

struct store_obj {
	struct store_snap snap; /* attributes the data was stored under */
	fattr3 attrs;		/* full attributes last stored (for replies) */
	uint32_t flags;
	uint32_t chunk_size;	/* of this object's data file */
	uint64_t data_id;	/* names the data file; unique per cache dir */
	uint64_t cached_bytes;	/* inline bytes or sum of chunk lengths */
	uint64_t last_access;	/* unix seconds */
	uint32_t inline_len;
	uint8_t guard;	     /* STORE_GUARD_* */
	uint16_t guard_hour; /* ASSUMED: when (hours since the epoch, mod 2^16) */
};

struct store_params {
	const char *dir;
	const char *identity;  /* e.g. "nfs://host/export" */
	uint32_t chunk_size;   /* power of two, 64 KiB .. 1 MiB */
	uint32_t inline_max;   /* bytes, <= 1 MiB */
	uint64_t cache_size;   /* cap on cached bytes; 0: only the thresholds */
	int brun, bcull, bstop; /* % of free blocks on the cache filesystem */
	int frun, fcull, fstop; /* % of free files (inodes) */
	uint64_t map_size;      /* LMDB map size in bytes; 0: default (64 GiB) */
};

/* What was wrong with an index found damaged at open (the metric's reason
 * label, store_damage_name()). */
enum store_damage {
	STORE_DMG_NONE,
	STORE_DMG_EMPTY,    /* 0 bytes */
	STORE_DMG_NOT_FILE, /* a directory, link or device where data.mdb should be */
	STORE_DMG_SIZE,     /* shorter than its pages say: truncated */
	STORE_DMG_HEADER,   /* meta pages or database records inconsistent */
	STORE_DMG_PAGE,     /* a tree page or node out of bounds, order or place */
	STORE_DMG_READ,     /* an I/O error reading it */
	STORE_DMG_LMDB,     /* LMDB reported damage (at open, or while running) */
	STORE_DMG_N
};

/* "none", "empty", "not_a_file", "size", "header", "page", "read_error",
 * "lmdb"; static. */
const char *store_damage_name(int reason);

/* Checks an index file without mapping it, as store_open does first
 * (cachefsctl check-index): path is opened without following a link and
 * read with pread; map_size as in store_params (0: the default). 0 intact,
 * 1 damaged (*reason an enum store_damage, why a sentence), -errno when it
 * cannot be opened. Run it on a live index only with cachefsd stopped: a
 * commit in progress can look like damage. */
int store_index_check_path(const char *path, uint64_t map_size, int *reason, char *why,
                           size_t whylen);

/* Why filling is stopped (reads pass through meanwhile). */
enum store_fill_reason {
	STORE_FILL_ON = 0,
	STORE_FILL_INDEX_DAMAGED, /* the index failed at run time: until restart */
	STORE_FILL_READ_ONLY,     /* the cache filesystem is read-only (ST_RDONLY, EROFS) */
	STORE_FILL_DISK_FULL,     /* a write or commit found no space (ENOSPC, EDQUOT) */
	STORE_FILL_WRITE_ERRORS,  /* writes or commits fail otherwise (EIO) */
	STORE_FILL_SPACE,         /* free blocks below bstop, until brun */
	STORE_FILL_FILES,         /* free files below fstop, until frun */
	STORE_FILL_NREASONS
};
/* Why a fill's bytes were not stored (store_fill_refused()): the reasons
 * filling stops (STORE_FILL_ON unused), and the index full: a put or
 * commit found the LMDB map full (culling makes room; filling goes on). */
#define STORE_REFUSED_INDEX_FULL STORE_FILL_NREASONS
#define STORE_REFUSED_N          (STORE_FILL_NREASONS + 1)
/* cachefsd_index_full stays 1 this long after the index was found full. */
#define STORE_INDEX_FULL_HOLD_S 60

/* Where a row of store_counters.def stands in the stats lines. */
enum store_counter_sec {
	STORE_SEC_CACHE,  /* after writer_* */
	STORE_SEC_INDEX,  /* after index_recoveries */
	STORE_SEC_SPACE,  /* after fill_stopped_reason */
	STORE_SEC_OLDEST, /* after the operator interfaces' engine lines */
};

struct store_stats {
	/* one row each in store_counters.def, which says what they mean */
#define STORE_COUNTER(field, stat, sec, type, metric, label, help) uint64_t field;
#include "store_counters.def"
#undef STORE_COUNTER
	enum store_fill_reason fill_reason; /* fill_stopped is 1 while not STORE_FILL_ON */
	/* indexes found damaged at open, moved aside and replaced by an
	 * empty one, by enum store_damage (at most one per start) */
	uint32_t index_recoveries[STORE_DMG_N];
	/* fills whose bytes were not stored, by reason (STORE_REFUSED_*) */
	uint64_t fills_refused[STORE_REFUSED_N];
};
/* The rows of store_counters.def, in stats order (counters.h); static
 * storage (counters.c). */
extern const struct cfs_counter_desc store_counter_descs[];
extern const size_t store_counter_ndescs;
/* A row's index in store_counter_descs, and its stats name: STORE_STAT(field)
 * does not build for a field that is not a row (for readers of the stats
 * lines such as cachefsctl). */
enum store_counter_row {
#define STORE_COUNTER(field, stat, sec, type, metric, label, help) STORE_ROW_##field,
#include "store_counters.def"
#undef STORE_COUNTER
};
#define STORE_STAT(field) (store_counter_descs[STORE_ROW_##field].name)

/* Opens (creating if needed) the cache directory. Refuses, with a message
 * naming both, a directory whose CACHE file names another upstream or
 * layout version; with a message naming the path and the fix, a directory
 * (or its index/, data/, CACHE, index files) that is not the daemon
 * user's own or that its group or others may write, or a symbolic link
 * where one of them should be. An index found damaged (checked with pread
 * before LMDB maps it, or reported by LMDB) is moved aside to
 * index.corrupt-<time> (the newest one is kept), logged, counted in
 * index_recoveries, and an empty one started: the cache is lost, the
 * service is not. Orphan data files (no index entry) are removed in the
 * background. Returns 0, or a negative errno with a message naming the
 * cache directory in err (LMDB's own words where LMDB refused). */
int store_open(const struct store_params *p, struct store **out, char *err, size_t errlen);
/* Commits, syncs and closes. */
void store_close(struct store *s);

/* The refusal of a cache directory dir whose entry what (dir itself, or a
 * path in it) is owned by owner, not by the user cachefsd runs as: the
 * message in err names the fix, `cachefsctl chown USER --cache-dir DIR`.
 * Returns -EPERM. (Also used before the store is opened: main.c.) */
int store_refuse_owner(const char *dir, const char *what, uid_t owner, char *err, size_t errlen);
/* What store_chown() did: entries given to the new owner, entries that
 * were theirs already, entries left alone (each reported to skip). */
struct store_chown_result {
	uint64_t changed, already, skipped;
};
/* Called for each entry store_chown() leaves alone: its path and why. */
typedef void (*store_chown_skip_fn)(const char *path, const char *why, void *arg);
/* Without a daemon using it (its lock is taken: -EBUSY otherwise), gives
 * the cache directory dir and what its owner made in it to uid and gid
 * ((gid_t)-1: groups unchanged), so that a cachefsd running as uid
 * accepts it (cachefsctl chown; store_chown.c says what is left alone and
 * why: links, other users' entries, files of several links, directories
 * others may write). Refuses, changing nothing, a directory that is not a
 * cache (no CACHE file, not empty) or that its group or others may write.
 * The directory is changed last. Returns 0 (res filled; res->skipped may
 * be non-zero) or a negative errno with a message naming the path in err
 * (-EPERM from fchown: not root). */
int store_chown(const char *dir, uid_t uid, gid_t gid, struct store_chown_result *res,
                store_chown_skip_fn skip, void *arg, char *err, size_t errlen);
/* [worker] Reads the index file of the cache directory dir into the page
 * cache, at most limit bytes from its start, so that lookups after a
 * restart or a reboot of the proxy host do not fault pages in from the
 * disk one by one on the event loop (the FS-Cache lesson). It reads 1 MiB
 * at a time with pread, one read in flight: other reads and fsyncs at
 * start wait for at most one of them (asking the kernel for the whole file
 * at once, POSIX_FADV_WILLNEED 128 KiB at a time, queued all of it ahead of
 * them). Stops early once *stop is nonzero. Returns the bytes read. */
uint64_t store_index_prefetch(const char *dir, uint64_t limit, const int *stop);

/* Commits the pending write transaction (the batch), with a bounded part
 * of the pending accesses written to the LRU index first (a round, when
 * one is due). Cheap when nothing changed. Returns
 * 0 or -errno (the batch is lost, logged); -EIO while the index is broken
 * (see store_set_broken); after a failed commit, -EAGAIN until its
 * backoff is over (the batch stays open; see store_commit_wait_ms). */
int store_commit(struct store *s);

/* 0 when a commit may run now; else the milliseconds until its retry
 * (index commits failed: they back off, and store_commit() keeps the
 * batch open meanwhile and returns -EAGAIN). */
uint64_t store_commit_wait_ms(const struct store *s);

/* Whether a write transaction is open and may wait for a later commit:
 * 0 when there is none, or when it removes data or metadata (a crash must
 * not bring back what was dropped as stale or changed through the proxy).
 * Reads in this thread see the open transaction. */
int store_commit_deferrable(const struct store *s);

/* End of a loop pass without a commit: releases the read snapshot so the
 * next pass reads what is current. */
void store_pass_end(struct store *s);

/* --- objects ------------------------------------------------------------ */

/* For any thread (its own read transaction): reads the records of the n
 * handles fhs[i * stride] (lengths lens[i]) and the inline bytes they hold,
 * so that their pages are in the page cache when the loop thread reads
 * them. Returns how many records there were. Nothing is changed. */
unsigned store_warm_objs(struct store *s, const uint8_t *fhs, size_t stride, const uint32_t *lens,
                         unsigned n);
/* Fills *out with the object record; -ENOENT when there is none (a record
 * that does not unpack is dropped, logged, and reads as none), -EIO when
 * the index cannot be read. */
int store_obj_get(struct store *s, const void *fh, uint32_t fhlen, struct store_obj *out);
/* Creates or replaces the record with the snapshot taken from attrs and
 * chg (NULL: no change attribute), for a chunked object with chunk size
 * chunk_size. Any data it had is dropped (and a new data_id assigned).
 * Fills *out with the new record if out != NULL. */
int store_obj_reset(struct store *s, const void *fh, uint32_t fhlen, const fattr3 *attrs,
		    const struct store_chg *chg, struct store_obj *out);
/* Stores newer full attributes without changing the snapshot or the data
 * (for replies); -ENOENT when there is no record. */
int store_obj_set_attrs(struct store *s, const void *fh, uint32_t fhlen, const fattr3 *attrs);
/* Records on what ground the object's data was let in (STORE_GUARD_*,
 * with its hour); -ENOENT when there is no record. */
int store_obj_set_guard(struct store *s, const void *fh, uint32_t fhlen, uint8_t guard,
                        uint16_t hour);
/* Drops the object's data (chunks, data file, inline bytes); with forget
 * the record goes too. -ENOENT when there is no record. */
int store_obj_drop(struct store *s, const void *fh, uint32_t fhlen, int forget);
/* Records an access for the LRU order (batched; cheap). */
void store_touch(struct store *s, const void *fh, uint32_t fhlen);

/* --- inline objects ----------------------------------------------------- */

/* Creates or replaces the object as inline with the whole file's bytes
 * (len <= inline_max, and len == attrs->size), snapshot from attrs and chg
 * (NULL: none). */
int store_inline_put(struct store *s, const void *fh, uint32_t fhlen, const fattr3 *attrs,
		     const struct store_chg *chg, const void *data, uint32_t len);
/* Copies the inline bytes of an inline object into buf (buflen >= its
 * length), fills *obj. -ENOENT: no inline data. -EBADMSG: checksum mismatch;
 * the data has been dropped and store_stats-independent counter
 * store_checksum_failures() incremented. */
int store_inline_get(struct store *s, const void *fh, uint32_t fhlen, struct store_obj *obj,
		     void *buf, uint32_t buflen, uint32_t *len);

/* --- chunks ------------------------------------------------------------- */

/* Presence of chunk idx of object fh: 0 with its checksum and length, or
 * -ENOENT. */
int store_chunk_get(struct store *s, const void *fh, uint32_t fhlen, uint32_t idx,
		    uint64_t *csum, uint32_t *len);
/* Records chunk idx as present with checksum csum and length len (its data
 * must already be in the data file of data_id). Ignored (returns -ESTALE)
 * when the object's data_id is no longer data_id: the object was reset or
 * dropped while the chunk was being written. */
int store_chunk_put(struct store *s, const void *fh, uint32_t fhlen, uint64_t data_id,
		    uint32_t idx, uint64_t csum, uint32_t len);
/* Forgets chunk idx (after a checksum failure) and counts the failure. */
int store_chunk_drop(struct store *s, const void *fh, uint32_t fhlen, uint32_t idx);

/* [worker] Writes len bytes at off into the data file of data_id. fresh:
 * the first write under a data_id store_obj_reset just gave; the file is
 * created (with its directories), exclusively: a file already there is
 * never used (-EEXIST). Otherwise the file must exist (-ENOENT). No
 * symbolic link is followed (-ELOOP), and an existing file that is not a
 * regular file of the daemon's user with one link is not used (-EPERM). */
int store_data_write(struct store *s, uint64_t data_id, uint64_t off, const void *buf, size_t len,
                     int fresh);
/* [worker] Reads exactly len bytes at off; -ENOENT when the file is gone,
 * -EIO on a short read, -ELOOP / -EPERM as for store_data_write. */
int store_data_read(struct store *s, uint64_t data_id, uint64_t off, void *buf, size_t len);
/* After store_data_write or store_data_read returned rc: when rc says the
 * data file of data_id cannot be used (-EEXIST, -ENOENT, -ELOOP, -EPERM),
 * logs what is there (once per data file) and, if fh's record still uses
 * data_id, drops its data, so that the next fill starts a new data file.
 * Returns 1 then, 0 for any other rc. */
int store_data_lost(struct store *s, const void *fh, uint32_t fhlen, uint64_t data_id, int rc);
/* [worker] xxh3-64 of the bytes. */
uint64_t store_checksum(const void *buf, size_t len);

/* --- space -------------------------------------------------------------- */

/* Evicts least recently used objects, at most max of them, while a cull
 * condition holds (cached bytes above cache_size, free blocks or files below
 * bcull/fcull), until bytes <= 90% of cache_size and free space >= brun/frun.
 * Also refreshes the filesystem reading (statvfs) and the fill-stopped
 * state, logging its changes. Returns the number evicted. Call it from a
 * timer: it never blocks on more than max objects. */
int store_cull_step(struct store *s, int max);
/* 0 while filling is stopped (see enum store_fill_reason); after a write
 * failure, 1 again once its backoff is over (a trial). */
int store_fill_allowed(const struct store *s);
/* Before writing bytes of a fill: reserves them against the free space of
 * the last filesystem reading. Returns 0, or -ENOSPC when that would cross
 * the stop level (the caller does not store; culling is asked for; the
 * fill state does not change). A reservation of a data file write ends
 * with store_write_end(); one of an inline object (index bytes) needs
 * none. */
int store_reserve(struct store *s, uint64_t bytes);
/* The same for a data file write: the bytes count as pending until
 * store_write_landed(), which every successful reservation gets, from the
 * worker that wrote them (or with -ECANCELED when the write never ran). */
int store_reserve_write(struct store *s, uint64_t bytes);
/* [worker] The data file write of a reservation of `bytes` returned rc (0
 * or its -errno): the bytes are on the filesystem now, or were not
 * written. */
void store_write_landed(struct store *s, uint64_t bytes, int rc);
/* The loop learns how a data file write went (rc 0 or -errno). A disk
 * error (EROFS, ENOSPC, EDQUOT, EIO) stops filling until a later write
 * works (logged once per episode); other errors are logged at most once a
 * minute. */
void store_write_end(struct store *s, int rc);
/* "none", "read_only", "disk_full", ...: for stats and metrics. */
const char *store_fill_reason_name(enum store_fill_reason r);
/* A fill's bytes are not stored because of the store, counted by reason
 * in fills_refused: rc 0 when it was refused before any write
 * (store_fill_allowed() 0, or a reservation refused: the current reason,
 * "space" when filling is on and the reservation alone would cross the
 * stop level); else the -errno of the data file write or of the index
 * put that failed (the index full, a read-only or full disk, ...). */
void store_fill_refused(struct store *s, int rc);
/* The reasons of fills_refused: store_fill_reason_name()'s words, and
 * "index_full" for STORE_REFUSED_INDEX_FULL; static. */
const char *store_refused_name(int r);
/* 1 when a reservation crossed bcull or a commit found the disk full, or
 * while culling is in progress and its last step evicted something: call
 * store_cull_step() before sleeping (culling then goes on every loop pass,
 * a bounded step each, not only from a once-a-second timer: 256 objects a
 * second could not keep up with a cache of millions). */
int store_cull_wanted(const struct store *s);

void store_get_stats(const struct store *s, struct store_stats *out);
uint64_t store_checksum_failures(const struct store *s);

/* --- operator actions (store_verify.c: cachefsctl verify, cull, ...) ---- */

/* Changes the space limits while running (a configuration reload): the
 * cache_size and threshold fields of p; the others are ignored. The next
 * cull step applies them. */
void store_set_limits(struct store *s, const struct store_params *p);
/* Evicts least recently used objects, at most max, while more than target
 * bytes are cached (cachefsctl cull --to). Returns the number evicted (0
 * when at or below target or nothing is left to evict) or -errno. */
int store_cull_to(struct store *s, uint64_t target, int max);
/* The object after (fh, *fhlen) in handle order (*fhlen 0: the first):
 * 0 with fh (STORE_FH_MAX bytes) and *fhlen replaced, -ENOENT at the end. */
int store_next_object(struct store *s, uint8_t *fh, uint32_t *fhlen);

/* verify: a walk over the index, objects first, then chunk entries. */
enum store_vkind {
	STORE_V_INLINE,	     /* an inline object, checked: ok tells */
	STORE_V_CHUNK,	     /* a chunk: check it with store_verify_chunk() [worker] */
	STORE_V_BAD_RECORD,  /* an object record that does not unpack */
	STORE_V_ORPHAN,	     /* a chunk entry without a chunked object */
	STORE_V_BAD_ENTRY,   /* a chunk entry of the wrong size */
};

struct store_vitem {
	enum store_vkind kind;
	uint8_t fh[STORE_FH_MAX];
	uint32_t fhlen;
	uint32_t idx;	  /* chunk index */
	uint64_t data_id; /* chunk: the object's data file */
	uint64_t off;	  /* chunk: offset in the data file */
	uint32_t len;	  /* chunk or inline bytes */
	uint64_t csum;
	int ok; /* STORE_V_INLINE: the checksum matched */
	uint8_t key[1 + STORE_FH_MAX + 4 + 1]; /* the index key (longer: cut) */
	uint32_t klen;
};

/* Where a walk is; zero it to start. */
struct store_walk {
	int phase; /* 0 objects, 1 chunks, 2 done */
	int started;
	uint32_t klen;
	uint8_t key[1 + STORE_FH_MAX + 4];
	uint8_t last_fh[STORE_FH_MAX]; /* the chunk phase's object, cached */
	uint32_t last_fhlen;
	int last_kind; /* -1 none, 0 chunked, 1 not a chunked object */
	uint64_t last_data_id;
	uint32_t last_chunk_size;
};

/* The next item of the walk: 0; -EAGAIN after a bounded number of keys
 * without an item (call again, e.g. in the next loop pass); -ENOENT at the
 * end; or -errno. */
int store_verify_next(struct store *s, struct store_walk *w, struct store_vitem *it);
/* [worker] Reads a STORE_V_CHUNK item's bytes and checks them: 0, -EBADMSG
 * (checksum mismatch), -ENOENT (no data file), -EIO (short), -ENOMEM. */
int store_verify_chunk(struct store *s, const struct store_vitem *it);
/* 1 when the index still holds the item as it was walked (a chunk checked
 * meanwhile may have been evicted or replaced: not an error). */
int store_verify_current(struct store *s, const struct store_vitem *it);
/* Removes a bad item: a chunk entry (the chunk is fetched again when
 * read), an inline object's data, a bad record. 0 or -errno. */
int store_verify_drop(struct store *s, const struct store_vitem *it);

/* --- the metadata cache ------------------------------------------------ */

/* Opaque key/value records of the metadata cache (attributes, lookups,
 * directory pages, ...; see cachefsd/engine/meta.c), in the same index and
 * transaction batching as the rest. Keys are 1..500 bytes. */

/* Points *val at the value of key; valid until the next store call.
 * -ENOENT when absent, -EBADMSG when the record fails its checksum (it is
 * dropped and logged), -EINVAL for a key of a bad length, or another
 * -errno when the index cannot be read. */
int store_meta_get(struct store *s, const void *key, size_t klen, const void **val,
		   size_t *vlen);
/* 0, -EINVAL for a bad key, or -errno (the batch is lost, logged). */
int store_meta_put(struct store *s, const void *key, size_t klen, const void *val, size_t vlen);
/* Deletes key; absent is not an error. */
int store_meta_del(struct store *s, const void *key, size_t klen);
/* Deletes every key starting with prefix. Returns the number deleted, or
 * -errno. */
int store_meta_del_prefix(struct store *s, const void *prefix, size_t plen);
/* Walks up to max records from where the last call stopped, deleting those
 * for which expired(value) is true, and those failing their checksum;
 * wraps around. Returns the number deleted, or -errno. */
int store_meta_sweep(struct store *s, int max, int (*expired)(const void *val, size_t vlen, void *arg),
		     void *arg);
/* The number of records; 0 when the index cannot be read. */
uint64_t store_meta_count(struct store *s);

/* --- handles longer than 64 bytes (store_fhmap.c) ------------------------- */

/* An NFSv4 filer's handles are up to 128 bytes; an NFSv3 client takes at
 * most 64 (STORE_FH_MAX). An upstream handle of at most 64 bytes is given
 * to clients unchanged; a longer one as a mapped handle: exactly
 * STORE_FH_MAPPED_LEN bytes, a 6-byte magic, a format version (1), a
 * collision salt, and 56 bytes of a hash of the upstream handle keyed by
 * the handle key. The mapping is kept in the index ("fhmap") and never
 * removed: not by culling, not when the object's data or record goes. A
 * 64-byte upstream handle that starts with the magic is mapped too, so a
 * handle a client sends is a mapped one exactly when store_fh_is_mapped()
 * says so. The same key and upstream handle give the same mapped handle in
 * every store (two proxies in front of one filer agree without talking),
 * except after a collision of the 56-byte hash, resolved in the order this
 * store met the handles. docs/design.md, "Handles longer than 64 bytes". */
#define STORE_FH_UP_MAX     128 /* an upstream handle (NFSv4's NFS4_FHSIZE) */
#define STORE_FH_MAPPED_LEN 64
#define STORE_FH_KEY_MAX    128

/* Sets the handle key: the export's root handle as the filer gives it
 * (1..STORE_FH_KEY_MAX bytes), which every proxy in front of that export
 * learns by itself. Until it is set, handles that need the map cannot be
 * encoded (-EAGAIN); decoding needs no key. A key different from the one
 * the map was last used with (its fingerprint is kept in the index) is
 * logged: handles mapped before still decode, handles mapped from then on
 * follow the new key. 0 or -EINVAL. */
int store_fh_set_key(struct store *s, const void *key, size_t len);
/* 1 when the upstream handle up (1..STORE_FH_UP_MAX bytes) is given to
 * clients as a mapped handle: longer than STORE_FH_MAX, or exactly
 * STORE_FH_MAPPED_LEN and starting with the magic. No store needed. */
int store_fh_needs_map(const void *up, uint32_t uplen);
/* 1 when a client's handle fh is a mapped handle (STORE_FH_MAPPED_LEN
 * bytes starting with the magic, any version); 0: the upstream handle
 * itself. */
int store_fh_is_mapped(const void *fh, uint32_t fhlen);
/* The client handle of upstream handle up (1..STORE_FH_UP_MAX bytes) into
 * out (STORE_FH_MAX bytes), its length in *outlen. 0: up itself, or its
 * mapping as it was already in the index; 1: a new mapping, in the open
 * write transaction, which is then not deferrable (store_commit_deferrable
 * 0): commit it (store_commit) before the handle reaches a client, or a
 * crash before the commit forgets it (the client gets ESTALE for it until
 * the handle is encoded again, which gives the same handle). -EINVAL: a bad
 * length; -EAGAIN: no key yet (store_fh_set_key); -ENOSPC: the index is
 * full (the batch is lost, culling makes room: try again later); -EIO: the
 * index is broken or unreadable; -EOVERFLOW: every salt is taken by
 * another handle (a logged impossibility). */
int store_fh_encode(struct store *s, const void *up, uint32_t uplen, uint8_t *out, uint32_t *outlen);
/* The upstream handle of client handle fh (1..STORE_FH_MAX bytes) into
 * out (STORE_FH_UP_MAX bytes), its length in *outlen. 0: fh itself (not a
 * mapped handle) or the upstream handle its mapping names; -ESTALE: a
 * mapped handle this index does not know (never encoded here, the index
 * was replaced, a version this build does not read, or its record fails
 * its checksum: logged), answered to the client as NFS3ERR_STALE;
 * -EINVAL: a bad length; -EIO: the index is broken or unreadable. */
int store_fh_decode(struct store *s, const void *fh, uint32_t fhlen, uint8_t *out, uint32_t *outlen);
/* The number of mappings in the index; 0 when it cannot be read. */
uint64_t store_fh_count(struct store *s);

/* The snapshot fields of attrs (no change attribute). */
void store_snap_of(const fattr3 *attrs, struct store_snap *out);
/* ... with the change attribute chg (NULL or !chg->has: none). */
void store_snap_of_chg(const fattr3 *attrs, const struct store_chg *chg, struct store_snap *out);
int store_snap_equal(const struct store_snap *a, const struct store_snap *b);

#endif
