/* Handles longer than 64 bytes where they cross the NFSv4.0 origin's seam
 * (origin_nfs4.c): the upstream's handles in answers become client handles
 * (store_fh_encode: at most 64 bytes unchanged, longer ones a 64-byte
 * mapped handle), the client handles in calls become the upstream's
 * (store_fh_decode). Everything above the seam (the engine, its cache
 * keyed by handle, control, the metrics) sees only client handles;
 * nothing below it (nfs4.c, the filer) sees a mapped one. docs/design.md,
 * "Handles longer than 64 bytes". Loop thread only. */
#ifndef CFS_ORIGIN_FHMAP_H
#define CFS_ORIGIN_FHMAP_H

#include <stdint.h>

#include "nfs3res.h"
#include "store.h"

/* The handles of one call's arguments, swapped for their upstream
 * handles in place until ofh_args_restore(). */
struct ofh_args {
	int n;
	nfs_fh3 *fh[2];
	nfs_fh3 saved[2];
	uint8_t up[2][STORE_FH_UP_MAX];
};

/* Decodes the handles in args of NFSv3 procedure proc (libnfs's v3
 * argument struct) in place: a mapped handle is replaced by the upstream
 * handle it stands for, kept in a; other handles are left as they are.
 * 0 (call ofh_args_restore() once the arguments were copied), -ESTALE (a
 * mapped handle this index does not know: answer NFS3ERR_STALE), -EIO
 * (the index cannot be read); on an error args is as it was. */
int ofh_args_decode(struct store *s, uint32_t proc, void *args, struct ofh_args *a);
/* Puts back the caller's handles. */
void ofh_args_restore(struct ofh_args *a);

/* One handle of an answer given to the client in place of the
 * upstream's. */
struct ofh_swap {
	nfs_fh3 *fh;
	nfs_fh3 saved;
	uint32_t *follows; /* post_op_fh3's handle_follows, NULL for LOOKUP's */
	uint8_t mapped[STORE_FH_MAX];
};

struct ofh_res {
	int n;
	struct ofh_swap one;   /* LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD */
	struct ofh_swap *many; /* READDIRPLUS entries (n of them) */
	nfsstat3 lookup_failed; /* LOOKUP: the handle could not be mapped: answer this */
	uint64_t mapped;        /* handles given as mapped handles */
	uint64_t created;       /* ... of which new mappings (committed) */
};

/* Encodes the upstream handles in res3, the NFSv3 answer to proc, in
 * place. New mappings are committed (store_commit) before this returns:
 * the reply carrying them goes out after. A handle that cannot be given
 * (the index full or broken, the commit failed) is left out where NFSv3
 * allows it (a READDIRPLUS entry's or a CREATE's handle: the client
 * LOOKUPs it later); for a LOOKUP r->lookup_failed says what to answer
 * instead (NFS3ERR_JUKEBOX: try again; NFS3ERR_IO). Call ofh_res_restore()
 * after the callback that hands res3 on. 0 or -ENOMEM. */
int ofh_res_encode(struct store *s, uint32_t proc, void *res3, struct ofh_res *r);
/* Puts back the upstream's handles (their owner frees them) and frees
 * what ofh_res_encode() allocated. */
void ofh_res_restore(struct ofh_res *r);

#endif
