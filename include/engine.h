/* The cache engine: policy for every client call (answer locally, from the
 * cache, or upstream). Owns no sockets. */
#ifndef CFS_ENGINE_H
#define CFS_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "counters.h"
#include "loop.h"
#include "proto.h"
#include "req.h"
#include "origin.h"

struct engine;
struct store;
struct store_stats;
struct workers;

#define ENGINE_NPROCS NFS3_NPROCS /* arrays by NFSv3 procedure (procs.h) */

/* How an NFS call was answered (the metrics' outcome label):
 * HIT          by the proxy alone (data or metadata cache, NULL);
 * MISS         the cache could not answer: a READ that needed a fill, a
 *              ttl-mode metadata call not in the cache;
 * PASSTHROUGH  forwarded as it was (changes, strict-mode metadata, READs
 *              that bypass the cache);
 * ERROR        the proxy had no answer to give (upstream RPC error, soft
 *              timeout): the client got an RPC error or NFS3ERR_IO.
 * An NFS error status from the server (NOENT, ACCES, ...) is the server's
 * answer: it counts under HIT, MISS or PASSTHROUGH, and in nfs_errors. */
enum engine_outcome {
	ENGINE_HIT = 0,
	ENGINE_MISS,
	ENGINE_PASSTHROUGH,
	ENGINE_ERROR,
	ENGINE_NOUTCOMES
};

/* Where a row of engine_counters.def stands in the stats lines (among the
 * lines not in that list). */
enum engine_counter_sec {
	ENGINE_SEC_READ,     /* after nfs_calls_* */
	ENGINE_SEC_FILL,     /* after fills_blocked */
	ENGINE_SEC_META,     /* before meta_records */
	ENGINE_SEC_WRITER,   /* after meta_records */
	ENGINE_SEC_UPSTREAM, /* after upstream_waiting */
	ENGINE_SEC_OPS,      /* after the per-procedure outcomes */
	ENGINE_SEC_MOUNT,    /* last */
};

struct engine_counters {
	/* by procedure (NFSv3, MOUNT, NSM) */
	uint64_t nfs_calls[ENGINE_NPROCS];
	uint64_t nfs_errors[ENGINE_NPROCS]; /* replies with a status other than NFS3_OK */
	uint64_t nfs_latency_us[ENGINE_NPROCS];
	uint64_t mount_calls[MOUNT3_NPROCS];
	uint64_t nsm_calls[NSM1_NPROCS];
	/* the scalars: one row each in engine_counters.def, which says what they mean */
#define ENGINE_COUNTER(field, sec, type, metric, label, help) uint64_t field;
#include "engine_counters.def"
#undef ENGINE_COUNTER
	/* by procedure and outcome; READ hits and misses are read_hits and
	 * read_misses (see engine_outcomes()) */
	uint64_t nfs_outcomes[ENGINE_NPROCS][ENGINE_NOUTCOMES];
	/* client-side latency (decoded to reply queued), cfs_lat_bucket() */
	uint64_t nfs_latency_hist[ENGINE_NPROCS][CFS_LAT_NBUCKETS];
};

/* The rows of engine_counters.def, in stats order (counters.h); static
 * storage. */
extern const struct cfs_counter_desc engine_counter_descs[];
extern const size_t engine_counter_ndescs;

/* The stats name of counter FIELD, checked at compile time: a field that is
 * not in struct engine_counters does not build (for readers of the stats
 * lines such as cachefsctl). */
#define ENGINE_STAT(field) (sizeof(((struct engine_counters *)0)->field) ? #field : #field)

/* Creates the engine and opens the cache (store) in cfg->cache_dir. The
 * export clients mount is cfg->export_path or the upstream's path. Returns 0
 * or -errno with a message in err. */
int engine_new(struct loop *l, const struct cfs_config *cfg, struct origin *up,
	       struct engine **out, char *err, size_t errlen);
/* Finishes disk work and commits (before the upstream goes away). */
void engine_stop(struct engine *e);
void engine_free(struct engine *e);

/* proto_submit_fn: takes ownership of req (see proto.h). */
void engine_submit(struct cfs_req *req, void *engine);
/* Who takes the calls of prog, a program a room above the engine answers
 * (NLM: the locks room, include/locks.h; NSM: include/nsm.h): submit owns
 * each request as a proto_submit_fn does. Until one is set, the program's
 * calls are answered PROG_UNAVAIL. 0, or -ENOSPC (ENGINE_ROOMS set). */
int engine_set_room(struct engine *e, uint32_t prog, proto_submit_fn submit, void *arg);
/* The fleet's peers (include/peers.h; NULL: none): chunk fills ask the
 * owner of a chunk before the filer (read.c). p must outlive the engine's
 * calls to it: stopped after engine_stop(), before the origin. */
struct peers;
void engine_set_peers(struct engine *e, struct peers *p);
/* Gauges that are read, not counted (peers_up): set to what they are now;
 * before the stats or /metrics are written. */
void engine_refresh_gauges(struct engine *e);
/* Revalidation at lock time (revalidate.c): a GETATTR of fh as cred,
 * its answer observed as a client's GETATTR would be (cached data under
 * other attributes dropped, ttl mode's record refreshed). done gets 0 or
 * the upstream's failure (upstream_cb statuses). Returns 0 (exactly one
 * done follows, never from inside this call) or -errno (none). */
typedef void (*engine_reval_fn)(int status, void *priv);
int engine_revalidate(struct engine *e, const void *fh, uint32_t fhlen, const struct cfs_cred *cred,
                      engine_reval_fn done, void *priv);
/* The engine's counters, writable: the locks room counts its NLM rows of
 * engine_counters.def here (one list for stats, control and metrics). */
struct engine_counters *engine_counters_rw(struct engine *e);

const struct engine_counters *engine_counters(const struct engine *e);
const char *engine_export_path(const struct engine *e);
/* Writes a human-readable counter table. */
void engine_dump_stats(const struct engine *e, FILE *out);
/* Writes every counter as "name value" lines (machine-readable). */
void engine_write_stats(const struct engine *e, FILE *out);

/* --- for the operator interfaces (control.c, metrics.c, main.c) --------- */

/* Replies by procedure and outcome (enum engine_outcome). */
void engine_outcomes(const struct engine *e, uint64_t out[ENGINE_NPROCS][ENGINE_NOUTCOMES]);
/* The cache directory's totals and state. */
void engine_cache_stats(const struct engine *e, struct store_stats *out);
/* The store and the disk workers, for operator walks (verify, cull); valid
 * until engine_stop(). */
struct store *engine_store(struct engine *e);
struct workers *engine_workers(struct engine *e);
/* Bytes of verified chunks kept in memory (memory_cache). */
uint64_t engine_memory_used(const struct engine *e);
/* Forgets everything cached about a handle: data (disk and memory),
 * attributes, ACCESS evidence, metadata records. The next READ is a miss.
 * Returns 0, or -EINVAL for a bad handle length. */
int engine_invalidate_fh(struct engine *e, const void *fh, uint32_t fhlen);
/* Drops every metadata-cache record (cachefsctl invalidate --all). */
void engine_invalidate_meta(struct engine *e);
/* After a reload changed the configuration the engine was given: pushes
 * the cache limits to the store; a switch to strict mode drops the
 * metadata cache (it would not be kept current). */
void engine_reconfigure(struct engine *e);

/* Why fills are paused: caching is impossible for now, READs pass
 * through, and fills are tried again every minute. */
enum engine_fill_block {
	ENGINE_FILL_OK = 0,
	ENGINE_FILL_NO_ATTRS,  /* READ replies carry no file attributes: nothing can be stored */
	ENGINE_FILL_BAD_READS, /* READ replies are unusable (more bytes than asked, none before
	                          EOF, no progress) */
};

/* How fills fetch a chunk from the upstream, and whether they can. */
struct engine_fill_state {
	uint32_t chunk_size;
	uint32_t read_size; /* bytes per fill READ: rtmax, or less if the server answers less */
	uint32_t reads_per_chunk; /* READs one full chunk takes */
	int blocked;              /* enum engine_fill_block */
};
void engine_fill_state(const struct engine *e, struct engine_fill_state *out);
/* The filer's clock as the fresh guard knows it (docs/coherence.md,
 * "Timestamps"), in this host's wall-clock terms: filer minus proxy. */
struct engine_clock_state {
	int known;	    /* 0 nothing; 1 a lower bound (the times it reports); 2 both
			     * bounds (changes made through the proxy) */
	int64_t lo_ms;	    /* known >= 1: the filer is at least this far ahead */
	int64_t hi_ms;	    /* known == 2: ... and at most this far */
	int64_t offset_ms;  /* known == 2: the middle; else 0 */
	int64_t error_ms;   /* known == 2: half the width; else -1 */
	uint64_t tick_ns;   /* the granularity of its timestamps (1e9 until known) */
	int tick_known;
};
void engine_filer_clock(const struct engine *e, struct engine_clock_state *out);
/* Stable names for enum engine_fill_block ("none", "no_read_attributes",
 * "bad_read_replies"), for info lines and metric labels. */
const char *engine_fill_block_name(int blocked);

/* FSINFO as the proxy advertises it: transfer sizes clamped to CFS_MAX_IO;
 * READs of at least chunk_size (an upstream with a smaller rtmax gets a
 * larger READ in pieces: engine_forward_read_split()); WRITEs never above
 * what the upstream allows. */
void engine_clamp_fsinfo(FSINFO3resok *r, uint32_t chunk_size);

/* Normalises a MOUNT path in place: collapses repeated '/', drops a
 * trailing '/'. Returns 0, or -EINVAL for relative paths and ".." parts. */
int engine_normalize_path(char *path);

#endif
