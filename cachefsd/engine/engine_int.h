/* Private to the engine (cachefsd/engine/): engine.c, mount.c,
 * metaanswer.c, mutate.c, read.c, passread.c, forward.c, accessahead.c, reply.c,
 * observe.c, meta.c (in the order they call each other, from the top:
 * docs/design.md, "The engine's files"), engine_procs.c (their rows), and
 * the engine's unit tests. */
#ifndef CFS_ENGINE_INT_H
#define CFS_ENGINE_INT_H

#include "cobj.h"
#include "engine.h"
#include "fclock.h"
#include "nfs3res.h"
#include "store.h"
#include "workers.h"

struct mount_entry {
	char *host;
	char *dir;
	struct mount_entry *next;
};

/* What the engine calls outside itself: the filer through the origin
 * interface (origin.h)
 * and the reply writer (proto_reply()). engine_new() binds the real ones
 * (engine_io_real); the engine's unit tests bind a scripted upstream and
 * read the answers (engine_new_io()). Every call of the engine goes
 * through the engine_up_*() and engine_reply() wrappers below; every
 * answer that carries a result (NFS and MOUNT, engine_reply_failure()'s
 * NFS3ERR_IO and NAMETOOLONG included) goes through engine_reply(). What
 * carries none goes to proto directly: RPC-level errors
 * (proto_reply_accept_error(), _auth_error(), _prog_mismatch()) and
 * proto_drop(). */
struct engine_io {
	int (*call)(struct origin *up, uint32_t proc, void *args, const struct cfs_cred *cred,
	            upstream_cb cb, void *priv);
	int (*call_for)(struct origin *up, uint32_t proc, void *args,
	                const struct cfs_cred *cred, upstream_cb cb, upstream_alive_fn alive,
	                void *priv);
	const struct upstream_info *(*info)(const struct origin *up);
	const struct upstream_counters *(*counters)(const struct origin *up);
	int (*max_inflight)(const struct origin *up);
	/* the coherence tokens of the answer being delivered (origin.h) */
	const struct origin_coh *(*answer_coh)(const struct origin *up);
	/* an NFS answer with its result struct; frees req (proto_reply()) */
	int (*reply)(struct cfs_req *req, void *res);
	/* whether req's client is still there to answer (proto_req_alive()) */
	int (*req_alive)(const struct cfs_req *req);
	/* a READ answer whose data is lent until release(a, b)
	 * (proto_reply_read()); NULL: answers go through reply, copied */
	int (*reply_read)(struct cfs_req *req, READ3res *res, proto_release_fn release, void *a,
	                  void *b);
};
extern const struct engine_io engine_io_real;

/* engine_new() with io instead of engine_io_real (io and up must outlive
 * the engine). */
int engine_new_io(struct loop *l, const struct cfs_config *cfg, struct origin *up,
                  const struct engine_io *io, struct engine **out, char *err, size_t errlen);

#define ENGINE_ROOMS 4 /* programs answered by rooms above the engine */

struct engine {
	struct loop *loop;
	const struct cfs_config *cfg;
	struct origin *up;
	struct peers *peers; /* NULL: no fleet (engine_set_peers()) */
	const struct engine_io *io; /* how up is called and clients answered */
	struct store *store;
	struct workers *workers;
	struct cobj_table *objs;
	char *export_path;
	struct mount_entry *mounts;
	/* MNT walks (mount.c): at most MNT_WALKS_MAX at once and one per
	 * client connection; the others wait, first in first out */
	struct mnt_walk *mnt_wait_head, *mnt_wait_tail;
	struct mnt_walk *mnt_active;
	int mnt_nactive;
	int mnt_scheduling, mnt_again;
	struct engine_counters ctr;
	/* the programs the rooms above answer (engine_set_room()): NLM the
	 * locks room's, NSM its status monitor's */
	struct {
		uint32_t prog;
		proto_submit_fn submit;
		void *arg;
	} rooms[ENGINE_ROOMS];
	struct loop_timer *cull_timer;
	struct loop_timer *commit_timer; /* commits a deferred batch */
	int fills_inflight; /* upstream fills, readahead included */
	int ra_inflight;    /* readahead fills (and lookup prefetches) */
	/* Fills ask a chunk as READs of fill_piece bytes (the upstream's
	 * rtmax, lowered when it answers less). The readahead budget counts
	 * READs, not fills: a fill is up to FILL_WINDOW READs, and the
	 * upstream's in-flight slots must keep room for clients' calls. */
	uint32_t fill_piece;
	int fill_reads_inflight; /* READs of fills in flight */
	int ra_reads;            /* ... of readahead fills and lookup prefetches */
	int ra_read_budget;      /* ra_reads at most (half the upstream's slots) */
	/* Caching must never stop silently (read.c fill_trouble()): what the
	 * upstream did that keeps fills from being stored. */
	int fill_blocked;               /* enum engine_fill_block while paused, else 0 */
	uint64_t fill_blocked_until_ms; /* fills are tried again from then on */
	int fill_trouble_streak;        /* consecutive fills that hit it */
	unsigned fill_logged;           /* bit per enum engine_fill_block logged */
	/* the filer's clock as its answers show it: the fresh guard's
	 * measure (fclock.h, observe.c) */
	struct fclock fclock;
	/* The reply pipeline's last step (reply.c): engine_lookup_prefetch(),
	 * bound by engine_new(). The pipeline lies below read.c, whose fills
	 * hand it their answers, so it does not call read.c by name. */
	void (*lookup_prefetch)(struct engine *e, const nfs_fh3 *fh, const post_op_attr *pa,
	                        const struct cfs_cred *cred);
	int stopping;
	int prefetch_stop;	  /* read by the index prefetch job's worker */
	/* while observing a reply: when its call was issued (loop_clock_us;
	 * UINT64_MAX outside engine_observe_result: now) */
	uint64_t obs_call_us;
	uint64_t prefetch_bytes;  /* what it asked the kernel to read */
	uint64_t prefetch_t0_ms;
	/* ACCESS calls fetched ahead (accessahead.c): in flight, and those
	 * waiting for room, first in first out (struct ahead, owned here) */
	int access_ahead_inflight;
	struct ahead *ahead_head, *ahead_tail;
	int ahead_queued;
	int warm_queued; /* jobs of warmahead.c with the workers */
	/* listing passes being read to their end (listpass.c; owned by their
	 * upstream calls) */
	struct lpass *lpasses;
	int nlpasses;
	/* a small file's bytes from the store on their way into a READ reply
	 * (read.c; inline_max bytes, allocated at first use, owned here): one
	 * buffer, as a READ is answered before the next is read */
	uint8_t *inline_buf;
};

/* The upstream and the reply writer, through e->io (see struct engine_io). */
static inline int engine_up_call(struct engine *e, uint32_t proc, void *args,
                                 const struct cfs_cred *cred, upstream_cb cb, void *priv)
{
	return e->io->call(e->up, proc, args, cred, cb, priv);
}

static inline int engine_up_call_for(struct engine *e, uint32_t proc, void *args,
                                     const struct cfs_cred *cred, upstream_cb cb,
                                     upstream_alive_fn alive, void *priv)
{
	return e->io->call_for(e->up, proc, args, cred, cb, alive, priv);
}

static inline const struct upstream_info *engine_up_info(const struct engine *e)
{
	return e->io->info(e->up);
}

static inline const struct upstream_counters *engine_up_counters(const struct engine *e)
{
	return e->io->counters(e->up);
}

static inline int engine_up_max_inflight(const struct engine *e)
{
	return e->io->max_inflight(e->up);
}

/* The change attribute the answer being delivered carries for attributes
 * a (observe.c): out->has 0 when it carries none (NFSv3; outside an
 * answer; attributes it has no token for, as READDIRPLUS entries). */
void engine_reply_chg(const struct engine *e, const fattr3 *a, struct store_chg *out);

static inline int engine_reply(struct engine *e, struct cfs_req *req, void *res)
{
	return e->io->reply(req, res);
}

static inline int engine_req_alive(const struct engine *e, const struct cfs_req *req)
{
	return e->io->req_alive(req);
}

/* What the reply pipeline, the observers and the metadata cache's recorder
 * know of a call (not a struct cfs_req: the engine makes calls of its own,
 * a fill's READs, a READ's ACCESS check, a MNT walk's LOOKUPs). A copy; the
 * pointers in args (handles, names) point into memory the call's owner
 * keeps until the pipeline returns. */
struct engine_call {
	uint32_t prog, proc;
	uint64_t t_call_us; /* when it was issued (loop_clock_us); 0: not known */
	uint64_t listing_pass; /* listpass.c's page call: the pass it extends */
	struct cfs_cred cred;
	union cfs_args args;
};
/* The view of a client's call (reply.c). */
void engine_call_of(struct engine_call *call, const struct cfs_req *req);
/* The reply pipeline (reply.c): an upstream answer res (status 0: decoded)
 * to call, NFSv3: STALE handling, then record (meta_record()), observe
 * (engine_observe_result()) and the lookup prefetch. res is not freed; an
 * FSINFO answer is clamped in place (engine_clamp_fsinfo()). */
void engine_answered(struct engine *e, const struct engine_call *call, void *res);

/* Forwards req upstream unchanged (forward.c); the reply goes back to the
 * client through engine_forward_reply(). Not for READ: see
 * engine_forward_read(). */
void engine_forward(struct engine *e, struct cfs_req *req);
/* Forwards READ req (passread.c): as READs of at most the upstream's rtmax
 * sent together when it asks more, else as one READ cut to rtmax. */
void engine_forward_read(struct engine *e, struct cfs_req *req);
/* req could not be sent (upstream_call's rc): log, answer the client. */
void engine_send_failed(struct engine *e, struct cfs_req *req, int rc);
/* What engine_forward does with the upstream's answer (status 0 and res,
 * or a failure): observe, count, reply. */
void engine_forward_reply(struct engine *e, struct cfs_req *req, int status, void *res);
/* Forwards a call that changes something (mutate.c), after deleting what
 * it makes stale (meta_mutation()); in ttl mode it first finds the objects
 * its names point to, whose attributes it changes without its reply
 * saying so. */
void engine_mutate(struct engine *e, struct cfs_req *req);
/* Every attribute an upstream reply carries about a handle (observe.c):
 * updates the freshest known attributes and drops cached data whose
 * snapshot no longer matches; records what the reply proves its caller may
 * do. Step 4 of the reply pipeline (not for a STALE answer). */
void engine_observe_result(struct engine *e, const struct engine_call *call, void *res);
/* The upstream answered NFS3ERR_STALE to a call by cred about fh (observe.c).
 * Servers say STALE for other reasons too (unfs3 for a LOOKUP below a
 * regular file or of an over-long name), so nothing is purged until a
 * GETATTR of the handle itself says STALE; until then its READs pass
 * through. */
void engine_stale(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred);
void engine_observe_attrs(struct engine *e, const nfs_fh3 *fh, const fattr3 *attrs);
void engine_observe_post(struct engine *e, const nfs_fh3 *fh, const post_op_attr *pa);
/* Whether the server would answer cred's call about fh that needs the
 * ACCESS3 bits want, by what it answered cred before under attrs' ctime
 * (in memory, or the metadata cache's record), younger than
 * engine_evidence_age_ms(), by the read_evidence rule (observe.c). */
enum evidence engine_evidence(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
			      uint32_t want, const fattr3 *attrs);
/* How long evidence is used: meta_ttl in ttl mode, evidence_ttl in strict. */
uint64_t engine_evidence_age_ms(const struct engine *e);
/* fh changed through the proxy and no reply said how (observe.c). */
void engine_attrs_changed(struct engine *e, const nfs_fh3 *fh);
/* The proxy made or saw a change of fh its attributes may not show (a
 * WRITE, SETATTR or COMMIT answered, a lock granted, observe.c): fills
 * and disk loads of it in flight, and its chunks in memory, are neither
 * served nor stored from now on (cobj_invalidate()); replies to calls
 * issued before now with an older ctime are old news. The store's copy is
 * judged by its snapshot as always. */
void engine_data_changed(struct engine *e, const nfs_fh3 *fh);
/* The fresh guard (observe.c, after fclock.h): whether a fill of a file
 * with attributes a, whose READs were sent from start_ms (loop_clock_us()
 * / 1000) on, may be stored, and on what ground. */
enum fclock_verdict engine_fresh_judge(struct engine *e, uint64_t start_ms, const fattr3 *a);
/* Whether data stored under rec may be served: let in on a sound ground,
 * or on the assumption within the last hour or two while nothing has
 * shown the assumption wrong. */
int engine_stored_trusted(struct engine *e, const struct store_obj *rec);
/* The STORE_GUARD_* ground and hour to record for a verdict. */
void engine_guard_of(enum fclock_verdict v, uint8_t *guard, uint16_t *hour);
/* Drops the cached data of o (store and memory). */
void engine_drop_data(struct engine *e, struct cobj *o, const char *why);
/* A client looked up fh (attrs from the same reply): fetch a small file's
 * bytes now (lookup_prefetch). */
void engine_lookup_prefetch(struct engine *e, const nfs_fh3 *fh, const post_op_attr *pa,
			    const struct cfs_cred *cred);
/* A listing (READDIRPLUS3res res, NFS3_OK) reached cred's client: ask the
 * upstream, in the background and as cred, the ACCESS answers of its
 * entries that cred has no fresh record of (accessahead.c; ttl mode,
 * access_prefetch). res is only read during the call. */
void engine_access_ahead(struct engine *e, const struct cfs_cred *cred, const void *res);
/* A READDIRPLUS answer res (the upstream's or the cache's) reached its
 * caller: the cache-disk pages of its regular files' records are read
 * ahead on a worker (warmahead.c; warm_ahead). res is only read during
 * the call. */
void engine_warm_ahead(struct engine *e, const void *res);
/* Frees the ACCESS calls still waiting to be fetched ahead. */
void engine_access_ahead_drop(struct engine *e);
/* READ (read.c). */
void engine_read(struct engine *e, struct cfs_req *req);
/* Sets up the fill parameters from the upstream's FSINFO (read.c). */
void engine_fills_init(struct engine *e);
/* Counts and times a reply about to be sent. */
void engine_count_reply(struct engine *e, const struct cfs_req *req, nfsstat3 status);

/* The metadata cache (meta.c). */
uint64_t wall_ms(void);
int meta_enabled(const struct engine *e);
/* ttl mode: answers req from the cache when it can (0), else -ENOENT and
 * the caller forwards it (metaanswer.c). */
int meta_answer(struct engine *e, struct cfs_req *req);
/* What a later call may be answered with (ttl mode): step 3 of the reply
 * pipeline. */
void meta_record(struct engine *e, const struct engine_call *call, void *res);
void meta_mutation(struct engine *e, struct cfs_req *req);
void meta_purge(struct engine *e, const nfs_fh3 *fh);
/* A decoded record: the struct points into a private copy, freed by
 * meta_rec_free(). */
struct meta_rec {
	uint64_t stored;
	uint8_t *copy;
	ZDR z;
};
void meta_rec_free(struct meta_rec *r);
/* The recorded answer to call (READDIR, READDIRPLUS, READLINK, FSSTAT,
 * FSINFO, PATHCONF), fresh and NFS3_OK: 0 with *res, whose pointers point
 * into rec until meta_rec_free(rec); else -ENOENT (nothing to free). */
int meta_get_reply(struct engine *e, const struct engine_call *call, union nfs3_res *res,
                   struct meta_rec *rec);
/* A READDIR(PLUS) about to be forwarded in ttl mode: a verifier the proxy
 * gave (a listing pass's id) becomes the server's again (the client then
 * gets the server's, and the rest of its listing goes to the server). */
void meta_page_forward(struct engine *e, struct cfs_req *req);
/* The arguments of the next page of pass id of dir (proc's; dir's handle
 * is the caller's to set): 0, or -ENOENT when the pass is not the
 * directory's current one, too old, or has its last page. */
int meta_pass_next(struct engine *e, uint32_t proc, const nfs_fh3 *dir, uint64_t id,
                   union cfs_args *a);
/* The pass a page answer (proc's res) names in its verifier; 0: none. */
uint64_t meta_page_pass(uint32_t proc, const void *res);
/* A listing's first page (cookie 0) of a READDIR/READDIRPLUS call a: its
 * directory's handle copied into buf (NFS3_FHSIZE bytes) and described by
 * dir, valid while buf is; -ENOENT for any other call. */
int meta_first_page_dir(uint32_t proc, const union cfs_args *a, uint8_t *buf, nfs_fh3 *dir);
/* call's credential began a listing on pass id (was given its first
 * page): 1 for a continuation (cookie not 0) of such a listing, else 0;
 * with add, a first page it was given is remembered. */
int meta_pass_reader(struct engine *e, const struct engine_call *call, uint64_t id, int add);
/* A listing pass read to its end (listpass.c, ttl mode): after the first
 * page of a pass reached its client (res: the answer as told, its verifier
 * the pass's id), the engine asks the next pages itself, as cred. */
void engine_pass_ahead(struct engine *e, uint32_t proc, const nfs_fh3 *dir,
                       const struct cfs_cred *cred, const void *res);
/* req (a page call the cache cannot answer) waits for the page the pass
 * its verifier names is fetching: 0, or -ENOENT (none is). */
int engine_pass_wait(struct engine *e, struct cfs_req *req);
void meta_put_attrs(struct engine *e, const nfs_fh3 *fh, const fattr3 *attrs);
void meta_forget_attrs(struct engine *e, const nfs_fh3 *fh);
/* ttl mode: what dir/name points to, as the metadata cache knows it
 * fresh: 1 with its handle in buf (NFS3_FHSIZE bytes) and *len, 0 for a
 * fresh "no such name", -ENOENT when not known, another -errno when the
 * record cannot be read (-EBADMSG: a bad record). Callers treat every
 * negative value as not known. */
int meta_child(struct engine *e, const nfs_fh3 *dir, const char *name, uint8_t *buf,
	       uint32_t *len);
/* The fresh attributes of fh: 0, -ENOENT when none are known, another
 * -errno when the record cannot be read; callers treat both as a miss. */
int meta_get_attrs(struct engine *e, const nfs_fh3 *fh, fattr3 *out);
/* Persists the evidence a holds for its credential and fh (ttl mode),
 * merged with what is stored under the same ctime. */
void meta_put_access(struct engine *e, const nfs_fh3 *fh, const struct access_ent *a);
/* The stored evidence of cred for fh, younger than meta_ttl: 0 with *out,
 * -ENOENT when there is none, another -errno when the record cannot be
 * read (a miss too). */
int meta_get_access(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
		    struct access_ent *out);
/* Strict mode with strict_access_reuse: keeps the server's ACCESS answer
 * a (cobj_access_set()d under attrs) for a later run ('X' record) ... */
void meta_put_strict_access(struct engine *e, const nfs_fh3 *fh, const struct access_ent *a,
                            const fattr3 *attrs);
/* ... and reads it back: 0 with what was asked and allowed, the ctime,
 * mode, uid and gid in *under (the rest zeroed) and its age by the wall
 * clock; -ENOENT when there is none (or its age is not known), another
 * -errno when it cannot be read. */
int meta_get_strict_access(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
                           uint32_t *asked, uint32_t *bits, fattr3 *under, uint64_t *age_ms);
/* Strict mode: an ACCESS call answered with the server's earlier answer
 * to the same credential when the server's GETATTR or LOOKUP of this
 * revalidation shows nothing changed, and a GETATTR right after the
 * server's LOOKUP of the file for the same connection with that LOOKUP's
 * attributes (metaanswer.c): 0, or -ENOENT and the caller forwards it. */
int strict_answer(struct engine *e, struct cfs_req *req);
/* Strict mode: the server answered req, a client's forwarded call, with
 * res (after the reply pipeline took it): a LOOKUP whose object
 * attributes are the freshest known marks them for that connection's
 * next GETATTR of the object (strict_lookup_attrs). */
void strict_lookup_seen(struct engine *e, const struct cfs_req *req, const void *res);
void meta_sweep(struct engine *e);
void meta_start(struct engine *e);
/* ESTALE: everything cached about fh goes (observe.c). */
void engine_purge(struct engine *e, const nfs_fh3 *fh);

/* Replies to an NFS call with a bare error status. */
void engine_reply_status(struct engine *e, struct cfs_req *req, nfsstat3 status);
/* Finishes req after an upstream failure (status < 0). */
void engine_reply_failure(struct engine *e, struct cfs_req *req, int status);
/* MOUNT program (mount.c). */
void mount_submit(struct engine *e, struct cfs_req *req);
/* Frees the mount list and drops the MNTs still waiting for a walk. */
void mount_free_all(struct engine *e);

#endif
