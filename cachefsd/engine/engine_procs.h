/* The engine's columns of the procedure table: what each NFSv3 procedure
 * means to the cache. One row per procedure, indexed by the same numbers
 * as the shared table (include/procs.h) and sized NFS3_NPROCS, in
 * cachefsd/engine/engine_procs.c.
 *
 * Why a second table and not more columns in proto's rows: these columns
 * name the engine's own things (the metadata cache's record types, its
 * invalidations, the ACCESS3 evidence rule, struct engine in the hooks),
 * and proto/ must not know them; the shared rows stay what both layers
 * read. What proto's rows already say is not repeated here: the handle a
 * call is about (proc_fh(), for STALE and the metadata keys), PROC_MUTATES
 * (the mutation path), PROC_CACHED (the metadata cache may answer it), the
 * result codec (proc_row()->enc, for stored replies) and the reply size
 * (proc_row()->reply_want_args).
 *
 * Offsets are into the decoded arguments (union cfs_args: every member
 * starts at 0, so offsetof(LOOKUP3args, what.dir) is the offset in the
 * union) and into the result struct (union nfs3_res, the same). Adding a
 * procedure is adding a row here as well as in proto/procs.c. */
#ifndef CFS_ENGINE_PROCS_H
#define CFS_ENGINE_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "procs.h"
#include "req.h"

struct engine;

/* --- what a reply says (observe.c) --------------------------------------- */

enum obs_what {
	OBS_END,      /* no more entries */
	OBS_FATTR,    /* fattr3 at at_off: the handle's attributes */
	OBS_POST,     /* post_op_attr at at_off */
	OBS_WCC,      /* wcc_data at at_off: its after attributes */
	OBS_EVIDENCE, /* the call's answer proves (or refuses) the ACCESS3 bits
	               * `bits` to the caller under the post_op_attr at at_off
	               * (observe.c answered()) */
	OBS_MORE,     /* the row's observe_more(): what data cannot say */
};

/* Which arm of the result an entry reads: the status says which is there. */
enum obs_arm {
	ARM_OK = 1,   /* status NFS3_OK: the resok arm */
	ARM_FAIL = 2, /* any other status: the resfail arm */
};

/* Where the handle an entry is about is. */
enum obs_fh {
	FH_ARGS,    /* an nfs_fh3 in the arguments */
	FH_RES,     /* an nfs_fh3 in the result (LOOKUP's object) */
	FH_RES_OPT, /* a post_op_fh3 in the result: a new object, when it follows */
};

struct obs_ent {
	uint8_t what;  /* enum obs_what */
	uint8_t arm;   /* enum obs_arm */
	uint8_t fh_in; /* enum obs_fh */
	/* OBS_EVIDENCE: NFS3ERR_NOENT also means the call was allowed (a
	 * LOOKUP of a missing name searched the directory) */
	uint8_t noent_allowed;
	/* OBS_FATTR / OBS_POST: the answer is a revalidation of the handle by
	 * the server (GETATTR, LOOKUP's object): it stamps cobj.reval_ms */
	uint8_t reval;
	/* OBS_WCC: a successful call changed the object (its ctime is the
	 * filer's clock during the call: a measure of that clock, fclock.h) */
	uint8_t changes;
	uint32_t bits; /* OBS_EVIDENCE: ACCESS3 bits */
	size_t fh_off;
	size_t at_off; /* in the result */
};

/* The per-row step of OBS_MORE: returns ACCESS3 bits the later evidence
 * entries of the row also prove (READDIRPLUS: the entries' handles). */
typedef uint32_t (*obs_more_fn)(struct engine *e, const union cfs_args *a,
                                const struct cfs_cred *cred, const void *res);

#define EP_MAXOBS 6

/* --- what the metadata cache keeps and drops (meta.c) --------------------- */

enum meta_name {
	NAME_NONE,
	NAME_LOOKUP, /* a name and the nfs_fh3 it points to; NOENT kept too */
	NAME_NEW,    /* a name made by the call: the post_op_fh3 of the new object */
};

enum inv_what {
	INV_END,
	INV_ATTRS, /* the 'a' record of the nfs_fh3 at off */
	INV_NAME,  /* the name in the diropargs3 at off, and the attributes of
	            * what it pointed to (meta.c name_changed()) */
	INV_DIR,   /* the listing and attributes of the diropargs3's directory */
};

struct inv_ent {
	uint8_t what; /* enum inv_what */
	size_t off;   /* in the arguments */
};

#define EP_MAXINV 4

/* --- how the engine takes the call (engine.c) ----------------------------- */

enum ep_dispatch {
	ED_FORWARD, /* sent upstream (mutating calls: first invalidated, mutate.c) */
	ED_PROXY,   /* answered by the proxy itself (NULL) */
	ED_META,    /* the metadata cache may answer it (PROC_CACHED), else forwarded */
	ED_READ,    /* the data cache (read.c) */
};

#define EP_MAXCLAMP 2

/* --- answering from the metadata cache (metaanswer.c) --------------------- */

enum ep_answer {
	ANS_NONE,
	ANS_GETATTR, /* the 'a' record, under fresh evidence-free rules */
	ANS_ACCESS,  /* the caller's stored evidence (ACCESS3 bits) */
	ANS_LOOKUP,  /* the name's record, then its object's attributes */
	ANS_BLOB,    /* the whole reply kept under the row's blob type: its
	              * post_op_attr at answer_at (resok arm) refreshed, for a
	              * caller with evidence of answer_want (0: anyone) */
};

/* READDIRPLUS: the stored page's entries take their freshest attributes;
 * 0, or -ENOENT when one is not known fresh (then it is forwarded). */
typedef int (*answer_refresh_fn)(struct engine *e, void *res);

struct engine_proc {
	/* Every attribute and evidence a reply carries, in the order they are
	 * observed (order matters: attributes with a new ctime clear the
	 * evidence known before them); OBS_END ends the list. */
	struct obs_ent obs[EP_MAXOBS];
	obs_more_fn observe_more;

	/* Metadata cache, recording a successful reply (meta_record()). */
	uint8_t name; /* enum meta_name: the diropargs3 at name_args, the handle at name_res */
	size_t name_args, name_res;
	/* The record type a whole reply is kept as ('r', 's', ...), keyed by
	 * the row's handle (proc_fh()); 0: not kept. Directory pages ('P',
	 * 'D') are kept by listing pass (meta.c): the arguments' cookie,
	 * verifier and counts at page_*, the reply's verifier at
	 * page_res_verf, and page_end() says where a page ends (its last
	 * entry's cookie and eof; returns the number of entries). */
	char blob;
	uint8_t page_ncounts;
	size_t page_cookie, page_verf, page_count[2];
	size_t page_res_verf;
	uint32_t (*page_end)(const void *res, uint64_t *last, int *eof);
	/* READDIRPLUS: its entries are also lookup answers */
	void (*record_more)(struct engine *e, const union cfs_args *a, void *res);
	/* The reply as the client is told it (FSINFO's clamped sizes), before
	 * it is kept */
	void (*as_told)(struct engine *e, void *res);

	/* What a call made through the proxy makes stale (meta_mutation()),
	 * in order; INV_END ends it. */
	struct inv_ent inv[EP_MAXINV];
	/* The file whose bytes or size the call may change (WRITE, SETATTR,
	 * COMMIT), at changes_fh in the arguments when `changes_data`: once
	 * it is answered, nothing read of the file before is served or stored
	 * (engine_data_changed(), forward.c). */
	uint8_t changes_data;
	size_t changes_fh;
	/* The names whose objects the call removes or replaces (mutate.c):
	 * diropargs3 offsets. purge_named: those objects' listings and names
	 * go too (RMDIR). */
	uint8_t nnamed, purge_named;
	size_t named[2];

	uint8_t dispatch; /* enum ep_dispatch */
	/* Counts (uint32_t at clamp[i]) held to CFS_MAX_IO before the call is
	 * taken: a reply above libnfs's record limit would kill the upstream
	 * connection and come back forever. */
	uint8_t nclamp;
	size_t clamp[EP_MAXCLAMP];
	/* A mutating call's arguments before it is sent (WRITE: no more than
	 * the upstream takes) */
	void (*prepare)(struct engine *e, union cfs_args *a);

	/* How the metadata cache answers it (ED_META rows; meta_answer()). */
	uint8_t answer; /* enum ep_answer */
	uint32_t answer_want;
	size_t answer_at;
	answer_refresh_fn answer_refresh;
};

extern const struct engine_proc engine_procs[NFS3_NPROCS];

/* The row of an NFSv3 procedure, or NULL. */
static inline const struct engine_proc *engine_proc(uint32_t proc)
{
	return proc < NFS3_NPROCS ? &engine_procs[proc] : NULL;
}

/* The hooks of the rows, in the files whose state they touch. */
uint32_t engine_observe_access(struct engine *e, const union cfs_args *a,
                               const struct cfs_cred *cred, const void *res);
uint32_t engine_observe_entries(struct engine *e, const union cfs_args *a,
                                const struct cfs_cred *cred, const void *res);
void meta_record_entries(struct engine *e, const union cfs_args *a, void *res);
uint32_t meta_page_end_dir(const void *res, uint64_t *last, int *eof);
uint32_t meta_page_end_plus(const void *res, uint64_t *last, int *eof);
void engine_fsinfo_as_told(struct engine *e, void *res);
void engine_write_prepare(struct engine *e, union cfs_args *a);
int meta_refresh_entries(struct engine *e, void *res);

#endif
