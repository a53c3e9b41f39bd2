/* The origin interface: the one seam between cachefsd and the filer it
 * caches. Everything that talks to the filer (the engine through struct
 * engine_io, control's invalidate, the metrics, main) holds a struct origin
 * and calls it in NFSv3 semantics: libnfs's v3 argument structs in, v3 result
 * structs out, the caller's credential, a callback that comes exactly once.
 * Behind it a backend speaks the filer's protocol:
 *   3  cachefsd/upstream/upstream.c, the NFSv3 pool (MOUNT, NFSv3), as before;
 *   4  cachefsd/upstream/origin_nfs4.c over nfs4.c, the NFSv4.0 client; its
 *      answers come with the objects' change attributes
 *      (origin_answer_coh()), the coherence snapshot of an NFSv4 filer.
 * upstream_version (config) chooses: auto takes 3 when the server's MOUNT
 * and NFSv3 answer for the export, else 4. docs/design.md, "The origin
 * interface". */
#ifndef CFS_ORIGIN_H
#define CFS_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "loop.h"
#include "req.h"
#include "upstream.h"

struct origin;
struct store;
struct n4_client;

/* The coherence tokens of an answer: for each object whose attributes the
 * answer carries and whose filer sent a change attribute with them (NFSv4),
 * that attribute with the fields of the fattr3 it came with that identify
 * it (fsid, fileid) and the version (size, mtime, ctime). The engine takes
 * the change attribute for an fattr3 of the answer equal in those fields
 * (engine_reply_chg()). NFSv3 answers have none. */
#define ORIGIN_COH_MAX 2
struct origin_chg {
	uint64_t fsid, fileid, size;
	nfstime3 mtime, ctime;
	uint64_t change;
};
struct origin_coh {
	unsigned n;
	struct origin_chg c[ORIGIN_COH_MAX];
};

/* What a backend does; be is the backend's own state. */
struct origin_ops {
	int version; /* the NFS version spoken to the filer: 3 or 4 */
	/* upstream_call_for()'s contract (include/upstream.h): 0 and exactly
	 * one callback later, never from inside the call; or -errno and none */
	int (*call_for)(void *be, uint32_t proc, void *args, const struct cfs_cred *cred,
	                upstream_cb cb, upstream_alive_fn alive, void *priv);
	/* the export's URL, the filer's address, the root handle (≤ 64
	 * bytes: what NFSv3 clients take), FSINFO of the root (limits:
	 * rtmax, wtmax) */
	const struct upstream_info *(*info)(const void *be);
	/* state and health for stats and metrics */
	const struct upstream_counters *(*counters)(const void *be);
	int (*max_inflight)(const void *be);
	/* calls waiting or in flight complete with -ECANCELED */
	void (*stop)(void *be);
	/* the cache's store, once the engine opened it: a backend whose
	 * filer's handles may exceed 64 bytes maps them in it (NULL: none
	 * can). 0 or -errno with a message in err. */
	int (*use_store)(void *be, struct store *s, char *err, size_t errlen);
	/* NFSv4.0 only (NULL otherwise): the v4 client, where the locks room
	 * keeps NLM's locks as v4 state (include/nfs4up.h, nfs4lock.c) */
	struct n4_client *(*nfs4_client)(void *be);
	/* the filer's own handle for one a client sent (NULL: the same
	 * bytes); origin_fh_upstream() */
	int (*fh_upstream)(void *be, const void *fh, uint32_t len, uint8_t *out, uint32_t *outlen);
	/* the coherence tokens of the answer whose callback is running (only
	 * from inside an upstream_cb of this backend; NULL outside one); NULL
	 * op: none ever (NFSv3) */
	const struct origin_coh *(*answer_coh)(const void *be);
};

/* Starts the backend cfg->upstream_version chooses (auto: 3 when MOUNT and
 * NFSv3 answer, else 4), driving the loop until the export's root is known
 * or the start fails (cfg->upstream_timeout per backend tried). 0 or -errno
 * with a message in err. */
int origin_start(struct loop *l, const struct cfs_config *cfg, struct origin **out, char *err,
                 size_t errlen);
void origin_stop(struct origin *o);
/* Hands the backend the cache's store (main, after engine_new; before any
 * client is served): over NFSv4.0 the handle map's key is set from the
 * export's root handle and the root handle clients get (upstream_info's
 * root_fh) is known from then on. 0 or -errno with a message in err. */
int origin_use_store(struct origin *o, struct store *s, char *err, size_t errlen);

/* An origin around a started backend (origin_start() and the tests). */
struct origin *origin_new(const struct origin_ops *ops, void *be);

int origin_version(const struct origin *o);
int origin_call(struct origin *o, uint32_t proc, void *args, const struct cfs_cred *cred,
                upstream_cb cb, void *priv);
int origin_call_for(struct origin *o, uint32_t proc, void *args, const struct cfs_cred *cred,
                    upstream_cb cb, upstream_alive_fn alive, void *priv);
const struct upstream_info *origin_info(const struct origin *o);
const struct upstream_counters *origin_counters(const struct origin *o);
int origin_max_inflight(const struct origin *o);
/* The NFSv4.0 client behind o (the locks room's "NFSv4 locks"), or NULL
 * when the filer is spoken to over NFSv3 (the room relays NLM). */
struct n4_client *origin_nfs4_client(struct origin *o);
/* The filer's own handle for a handle a client sent, for rooms that talk
 * to the filer without origin_call (the locks room over NFSv4.0): a mapped
 * handle (the filer's is over 64 bytes; docs/design.md, "Handles longer
 * than 64 bytes") is read from the store's map, any other copied. out holds
 * ORIGIN_FH_MAX bytes. 0, -ESTALE (a mapped handle this cache does not
 * know), -EIO (the map could not be read) or -EINVAL (len 0 or too long). */
#define ORIGIN_FH_MAX 128
int origin_fh_upstream(struct origin *o, const void *fh, uint32_t len, uint8_t *out,
                       uint32_t *outlen);
/* The coherence tokens of the answer being delivered: valid only inside an
 * upstream_cb of o; NULL outside one and for NFSv3. */
const struct origin_coh *origin_answer_coh(const struct origin *o);

/* The NFSv4.0 backend (origin_nfs4.c). */
int origin_nfs4_start(struct loop *l, const struct cfs_config *cfg, struct origin **out, char *err,
                      size_t errlen);

#endif
