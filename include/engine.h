/* The cache engine: policy for every client call (answer locally, from the
 * cache, or upstream). Owns no sockets. */
#ifndef CFS_ENGINE_H
#define CFS_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "loop.h"
#include "req.h"
#include "upstream.h"

struct engine;

#define ENGINE_NPROCS 22

struct engine_counters {
	uint64_t nfs_calls[ENGINE_NPROCS];
	uint64_t nfs_errors[ENGINE_NPROCS]; /* replies with a status other than NFS3_OK */
	uint64_t nfs_latency_us[ENGINE_NPROCS];
	uint64_t mount_calls[6];
	uint64_t mounts_refused;
	uint64_t upstream_failures; /* calls answered with an RPC or I/O error */
	uint64_t bytes_read;	    /* READ payload bytes sent to clients */
	uint64_t bytes_written;	    /* WRITE payload bytes received from clients */
	/* the data cache */
	uint64_t read_hits;	    /* READs answered from the cache only */
	uint64_t read_misses;	    /* READs that needed a fill */
	uint64_t read_passthrough;  /* READs forwarded as they were */
	uint64_t bytes_from_cache;  /* READ payload served from the cache */
	uint64_t fills;		    /* chunk fills from the upstream */
	uint64_t fill_bytes;	    /* bytes fetched by fills */
	uint64_t readahead_fills;
	uint64_t chunk_disk_reads;  /* chunks read (and verified) from the cache disk */
	uint64_t chunk_mem_hits;    /* chunk reads served from memory */
	uint64_t checksum_failures; /* chunks whose bytes did not match: dropped, refetched */
	uint64_t access_checks;	    /* ACCESS asked upstream before serving from the cache */
	uint64_t access_denied;	    /* cached READs refused (NFS3ERR_ACCES) */
	uint64_t data_drops;	    /* cached data dropped: the upstream file changed */
	uint64_t stores;	    /* chunks / inline files written to the cache */
	uint64_t fresh_skips;	    /* fills not stored: the file changed too recently */
	/* coherence */
	uint64_t meta_hits;	    /* metadata calls answered from the cache (ttl mode) */
	uint64_t meta_misses;	    /* ... that had to go upstream */
	uint64_t writer_starts;	    /* files that entered the no-caching writer state */
	uint64_t writer_passthrough; /* READs forwarded because their file is being written */
	uint64_t stale_purges;	    /* handles purged after NFS3ERR_STALE */
};

/* Creates the engine and opens the cache (store) in cfg->cache_dir. The
 * export clients mount is cfg->export_path or the upstream's path. Returns 0
 * or -errno with a message in err. */
int engine_new(struct loop *l, const struct cfs_config *cfg, struct upstream *up,
	       struct engine **out, char *err, size_t errlen);
/* Finishes disk work and commits (before the upstream goes away). */
void engine_stop(struct engine *e);
void engine_free(struct engine *e);

/* proto_submit_fn: takes ownership of req (see proto.h). */
void engine_submit(struct cfs_req *req, void *engine);

const struct engine_counters *engine_counters(const struct engine *e);
const char *engine_export_path(const struct engine *e);
/* Writes a human-readable counter table. */
void engine_dump_stats(const struct engine *e, FILE *out);
/* Writes every counter as "name value" lines (machine-readable). */
void engine_write_stats(const struct engine *e, FILE *out);

/* FSINFO as the proxy advertises it: transfer sizes clamped to CFS_MAX_IO. */
void engine_clamp_fsinfo(FSINFO3resok *r);

/* Normalises a MOUNT path in place: collapses repeated '/', drops a
 * trailing '/'. Returns 0, or -EINVAL for relative paths and ".." parts. */
int engine_normalize_path(char *path);

#endif
