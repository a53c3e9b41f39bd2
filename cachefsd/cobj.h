/* In-memory state per file handle (private to the engine): the freshest
 * known attributes, ACCESS evidence per credential, chunks being loaded or
 * filled, recently verified chunk bytes, sequential-read detection.
 * Persistent state lives in the store; this table is a bounded working set:
 * idle entries are trimmed, least recently used first. */
#ifndef CFS_COBJ_H
#define CFS_COBJ_H

#include <stdint.h>

#include "req.h"
#include "store.h"

struct read_op;
struct fill;

enum chunk_state {
	CH_LOADING, /* being read from the store by a worker */
	CH_FILLING, /* being fetched from the upstream */
	CH_READY,   /* bytes in memory, verified or fresh from the upstream */
};

struct op_wait {
	struct read_op *op;
	struct op_wait *next;
	/* the op needs only [from, to) of this chunk (chunk-relative) and can
	 * be answered as soon as a fill has those bytes, before the rest */
	int early;
	uint32_t from, to;
};

struct chunk {
	struct cobj *obj;
	uint32_t idx;
	enum chunk_state state;
	uint64_t data_id; /* store data the bytes belong to (0: not stored) */
	uint8_t *buf;     /* while FILLING: filled piece by piece by its fill */
	uint32_t len;     /* bytes at buf (0 until READY) */
	int eof;	      /* the upstream said EOF at the end of this chunk */
	int have_attrs;	      /* attributes the upstream sent with a fill */
	fattr3 attrs;
	struct op_wait *waiters;
	struct fill *fill;    /* while FILLING: the fill (read.c), which holds the chunk */
	int refs;	      /* users besides the table: workers, fills */
	struct chunk *next;   /* in obj->chunks */
	struct chunk *mprev, *mnext; /* memory LRU of READY chunks */
};

#define ACCESS_READ_OK	 1
#define ACCESS_READ_DENY 2

struct access_ent {
	struct cfs_cred cred;
	uint32_t bits;	     /* ACCESS3 bits allowed */
	uint32_t asked;	     /* ACCESS3 bits asked */
	uint32_t ctime_s, ctime_ns; /* attributes they were granted under */
	uint64_t when_ms;
	struct access_ent *next;
};

struct cobj {
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fhlen;
	uint32_t hash;
	struct cobj *hnext;
	struct cobj *lprev, *lnext; /* table LRU */
	int refs;		    /* pinned by operations in progress */
	int have_attrs;
	fattr3 attrs; /* freshest known */
	uint64_t attrs_ms;
	struct access_ent *access;
	int naccess;
	struct chunk *chunks;
	/* sequential detection and readahead */
	uint64_t next_off;
	int seq;
	uint32_t ra_next; /* first chunk index not yet prefetched */
	/* writers (the coherence issue): caching off until this time */
	uint64_t nocache_until_ms;
};

struct cobj_table;

struct cobj_table *cobj_table_new(uint64_t memory_cap, uint32_t max_objects);
void cobj_table_free(struct cobj_table *t);

/* Finds or creates the entry for fh; pinned until cobj_put(). NULL: no
 * memory or a bad handle length. */
struct cobj *cobj_get(struct cobj_table *t, const void *fh, uint32_t fhlen);
/* Finds without creating (not pinned); NULL if absent. */
struct cobj *cobj_find(struct cobj_table *t, const void *fh, uint32_t fhlen);
void cobj_put(struct cobj_table *t, struct cobj *o);

/* Chunks of an object. */
struct chunk *chunk_find(struct cobj *o, uint32_t idx);
struct chunk *chunk_new(struct cobj_table *t, struct cobj *o, uint32_t idx, enum chunk_state st);
/* The chunk became READY: account its bytes in the memory LRU (may evict
 * other READY chunks beyond the cap). */
void chunk_ready(struct cobj_table *t, struct chunk *c);
/* Marks a READY chunk as just used. */
void chunk_touch(struct cobj_table *t, struct chunk *c);
/* Removes c from its object; frees it when nothing else holds it. */
void chunk_remove(struct cobj_table *t, struct chunk *c);
void chunk_hold(struct chunk *c);
void chunk_release(struct cobj_table *t, struct chunk *c);
/* Drops every READY chunk of o (its data changed). Loading and filling
 * chunks finish and are discarded by their owners. */
void cobj_drop_chunks(struct cobj_table *t, struct cobj *o);

/* ACCESS evidence of cred for o. */
struct access_ent *cobj_access_find(struct cobj *o, const struct cfs_cred *cred);
void cobj_access_set(struct cobj *o, const struct cfs_cred *cred, uint32_t asked, uint32_t bits,
		     const fattr3 *attrs, uint64_t now_ms);
void cobj_access_clear(struct cobj *o);

/* The time used to keep objects in the writer state from being trimmed. */
void cobj_set_now(struct cobj_table *t, uint64_t now_ms);
uint64_t cobj_memory_used(const struct cobj_table *t);
uint32_t cobj_count(const struct cobj_table *t);

#endif
