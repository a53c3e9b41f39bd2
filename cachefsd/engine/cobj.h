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
	int unkept;           /* taken from its owner and not stored (peer_keep = no):
	                       * of the version its attrs describe, served once */
	fattr3 attrs;
	struct store_chg chg; /* ... and the change attribute (NFSv4) */
	struct op_wait *waiters;
	struct fill *fill;    /* while FILLING: the fill (read.c), which holds the chunk */
	int refs;	      /* users besides the table: workers, fills */
	struct chunk *next;   /* in obj->chunks */
	struct chunk *mprev, *mnext; /* memory LRU of READY chunks */
};

/* What the server said one credential may do with an object, under the
 * ctime it said it under: its answer to an ACCESS call (bits allowed among
 * those asked), and what its answers to real calls proved, in ACCESS3
 * bits: a READ answered with data or a READDIR/READLINK answered proves
 * ACCESS3_READ, a LOOKUP answered (found or not) proves ACCESS3_LOOKUP on
 * the directory, NFS3ERR_ACCES refuses them. RFC 1813 calls ACCESS
 * advisory: a server's READ may refuse what its ACCESS granted (unfs3
 * computes ACCESS as root), so an ACCESS grant alone does not let cached
 * answers out (cobj_evidence()). */
struct access_ent {
	struct cfs_cred cred;
	uint32_t bits;	     /* ACCESS3 bits allowed */
	uint32_t asked;	     /* ACCESS3 bits asked */
	uint32_t proven;     /* ACCESS3 bits the server's answers to calls proved */
	uint32_t refused;    /* ... and refused (NFS3ERR_ACCES) */
	uint32_t ctime_s, ctime_ns; /* attributes they were given under */
	uint64_t when_ms;
	struct access_ent *next;
	/* The ACCESS answer (asked, bits) was given under this mode, owner and
	 * group too, at acc_ms (0: no ACCESS answer under the current ctime):
	 * what the strict-mode reuse compares (cobj_access_reusable()). */
	uint32_t acc_mode, acc_uid, acc_gid;
	uint64_t acc_ms;
};

/* What a call answered from the cache by a credential may do
 * (cobj_evidence()). */
enum evidence {
	EV_SERVE,    /* the server would answer the same: answer from the cache */
	EV_REFUSED,  /* the server said no: forward, the client gets its answer */
	EV_ASK_CALL, /* no evidence an ACCESS call could complete: forward the
		      * call; the server's answer becomes the evidence */
	EV_UNKNOWN,  /* ask the server ACCESS first (or forward the call) */
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
	/* the change attribute an NFSv4 filer sent with them (has 0: none):
	 * part of the snapshot the cached data is compared with */
	struct store_chg chg;
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
	/* the upstream called the handle STALE: a GETATTR asks whether it is
	 * (engine_stale()); until it answers, READs pass through */
	int stale_check;
	/* changed through the proxy in a way no reply described: attributes
	 * from calls issued before this time (loop_clock_us) are not taken */
	uint64_t attrs_stale_us;
	/* when the server last answered a GETATTR or LOOKUP of it whose
	 * attributes are the freshest known (loop_now; 0: never): a client's
	 * revalidation, which the strict-mode ACCESS reuse needs */
	uint64_t reval_ms;
	/* strict mode: the client connection (proto_req_conn_serial(); 0:
	 * none) whose LOOKUP the server answered with the freshest attributes,
	 * and when (loop_clock_us): its next GETATTR may take them */
	uint64_t lookup_conn;
	uint64_t lookup_us;
	/* a READ was answered from the store's inline copy of this version
	 * (1; 0: not known): a LOOKUP of it then needs no look in the index
	 * for whether to prefetch it. A hint only: it decides no answer */
	int inline_known;
	struct store_snap inline_snap;
	/* Changes the proxy knows of that its attributes may not show (a
	 * WRITE, SETATTR or COMMIT through it, a lock granted): bumped by
	 * cobj_invalidate(). A READ that began under another value answers
	 * nothing from what it gathered (read.c). */
	uint64_t gen;
	/* when the last of those was answered (loop_clock_us; 0: none):
	 * older attributes from calls issued before it are old news */
	uint64_t changed_us;
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
/* o changed in a way its attributes may not show: bumps o->gen and
 * detaches every chunk, READY, LOADING and FILLING (their owners see
 * idx == UINT32_MAX: a fill or load in flight is then neither served nor
 * stored, and the READs waiting for it are forwarded when it ends).
 * Returns how many were in flight. */
int cobj_invalidate(struct cobj_table *t, struct cobj *o);

/* ACCESS evidence of cred for o. */
struct access_ent *cobj_access_find(struct cobj *o, const struct cfs_cred *cred);
/* Records an ACCESS answer (bits allowed among asked) ... */
void cobj_access_set(struct cobj *o, const struct cfs_cred *cred, uint32_t asked, uint32_t bits,
		     const fattr3 *attrs, uint64_t now_ms);
/* ... or what the server's answer to a call proved or refused (ACCESS3
 * bits), under attrs. Either merges with what is known under the same
 * ctime; a new ctime starts afresh. */
void cobj_access_answered(struct cobj *o, const struct cfs_cred *cred, uint32_t proven,
			  uint32_t refused, const fattr3 *attrs, uint64_t now_ms);
void cobj_access_clear(struct cobj *o);
/* Puts back an ACCESS answer kept across a restart (strict mode): asked
 * and bits under the ctime, mode, owner and group in attrs, given at
 * when_ms (loop_now's clock), unless more is known under that ctime. */
void cobj_access_restore(struct cobj *o, const struct cfs_cred *cred, uint32_t asked, uint32_t bits,
                         const fattr3 *attrs, uint64_t when_ms);
/* Merges an ACCESS answer (asked, bits) and/or what a call proved or
 * refused into a, which holds what was known for the same credential
 * (zeroed: nothing). */
void access_ent_merge(struct access_ent *a, uint32_t asked, uint32_t bits, uint32_t proven,
		      uint32_t refused, const fattr3 *attrs, uint64_t now_ms);

/* 1 when an AUTH_SYS check of cred against the mode, owner and group in
 * attrs allows every bit of want (ACCESS3_READ: r; ACCESS3_LOOKUP and
 * ACCESS3_EXECUTE: x): the owner's bits for the owner, else the group's
 * for a member of the file's group, else the others'. uid 0 gets no
 * privilege (servers squash root); AUTH_NONE callers are others. */
int cfs_mode_allows(const fattr3 *attrs, const struct cfs_cred *cred, uint32_t want);
/* The decision for a call by cred that needs the ACCESS3 bits want and
 * could be answered from the cache, with a (NULL: none) the evidence
 * recorded for it, attrs the object's freshest known attributes, rule an
 * enum cfs_read_evidence, max_age_ms 0 or the age beyond which evidence
 * is not used. */
enum evidence cobj_evidence(const struct access_ent *a, const fattr3 *attrs,
			    const struct cfs_cred *cred, uint32_t want, int rule,
			    uint64_t now_ms, uint64_t max_age_ms);

/* Strict mode (access_reuse): whether an ACCESS call asking `asked` may
 * be answered with a's stored ACCESS answer: 1 with *bits (what the server
 * granted among asked) when the server's answer to a GETATTR or LOOKUP at
 * reval_ms, no more than window_ms before now_ms, gave attrs (the
 * freshest known) with the ctime, mode, uid and gid that answer was given
 * under, the answer covers every bit asked and is younger than max_age_ms
 * (0: no bound); else 0 (forward the call). */
int cobj_access_reusable(const struct access_ent *a, const fattr3 *attrs, uint64_t reval_ms,
                         uint32_t asked, uint64_t now_ms, uint64_t window_ms, uint64_t max_age_ms,
                         uint32_t *bits);

/* The time used to keep objects in the writer state from being trimmed. */
void cobj_set_now(struct cobj_table *t, uint64_t now_ms);
uint64_t cobj_memory_used(const struct cobj_table *t);
uint32_t cobj_count(const struct cobj_table *t);

#endif
