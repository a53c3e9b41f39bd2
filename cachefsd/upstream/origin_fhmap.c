/* Handles longer than 64 bytes at the NFSv4.0 origin's seam
 * (include/origin_fhmap.h). The handles of a call or an answer are
 * swapped in place, not copied: n4_call() copies a call's arguments at
 * once, and an answer's handles are put back after the callback that
 * hands it on, so each side frees only what it allocated. */
#include "origin_fhmap.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Where the handles of a call's arguments are: 0, 1 or 2 of them. */
static int args_fhs(uint32_t proc, void *args, nfs_fh3 **fh)
{
	switch (proc) {
	case NFS3_GETATTR:
		fh[0] = &((GETATTR3args *)args)->object;
		return 1;
	case NFS3_SETATTR:
		fh[0] = &((SETATTR3args *)args)->object;
		return 1;
	case NFS3_LOOKUP:
		fh[0] = &((LOOKUP3args *)args)->what.dir;
		return 1;
	case NFS3_ACCESS:
		fh[0] = &((ACCESS3args *)args)->object;
		return 1;
	case NFS3_READLINK:
		fh[0] = &((READLINK3args *)args)->symlink;
		return 1;
	case NFS3_READ:
		fh[0] = &((READ3args *)args)->file;
		return 1;
	case NFS3_WRITE:
		fh[0] = &((WRITE3args *)args)->file;
		return 1;
	case NFS3_CREATE:
		fh[0] = &((CREATE3args *)args)->where.dir;
		return 1;
	case NFS3_MKDIR:
		fh[0] = &((MKDIR3args *)args)->where.dir;
		return 1;
	case NFS3_SYMLINK:
		fh[0] = &((SYMLINK3args *)args)->where.dir;
		return 1;
	case NFS3_MKNOD:
		fh[0] = &((MKNOD3args *)args)->where.dir;
		return 1;
	case NFS3_REMOVE:
		fh[0] = &((REMOVE3args *)args)->object.dir;
		return 1;
	case NFS3_RMDIR:
		fh[0] = &((RMDIR3args *)args)->object.dir;
		return 1;
	case NFS3_RENAME:
		fh[0] = &((RENAME3args *)args)->from.dir;
		fh[1] = &((RENAME3args *)args)->to.dir;
		return 2;
	case NFS3_LINK:
		fh[0] = &((LINK3args *)args)->file;
		fh[1] = &((LINK3args *)args)->link.dir;
		return 2;
	case NFS3_READDIR:
		fh[0] = &((READDIR3args *)args)->dir;
		return 1;
	case NFS3_READDIRPLUS:
		fh[0] = &((READDIRPLUS3args *)args)->dir;
		return 1;
	case NFS3_FSSTAT:
		fh[0] = &((FSSTAT3args *)args)->fsroot;
		return 1;
	case NFS3_FSINFO:
		fh[0] = &((FSINFO3args *)args)->fsroot;
		return 1;
	case NFS3_PATHCONF:
		fh[0] = &((PATHCONF3args *)args)->object;
		return 1;
	case NFS3_COMMIT:
		fh[0] = &((COMMIT3args *)args)->file;
		return 1;
	default: /* NULL */
		return 0;
	}
}

int ofh_args_decode(struct store *s, uint32_t proc, void *args, struct ofh_args *a)
{
	nfs_fh3 *fh[2];
	int n = args_fhs(proc, args, fh);
	int rc = 0;

	a->n = 0;
	for (int i = 0; i < n; i++) {
		uint32_t len = 0;

		if (!store_fh_is_mapped(fh[i]->data.data_val, fh[i]->data.data_len))
			continue; /* the upstream's own handle */
		rc = s == NULL ? -ESTALE
		               : store_fh_decode(s, fh[i]->data.data_val, fh[i]->data.data_len, a->up[a->n],
		                     &len);
		if (rc) {
			ofh_args_restore(a);
			return rc == -ESTALE ? -ESTALE : -EIO;
		}
		a->fh[a->n] = fh[i];
		a->saved[a->n] = *fh[i];
		fh[i]->data.data_val = (char *)a->up[a->n];
		fh[i]->data.data_len = len;
		a->n++;
	}
	return 0;
}

void ofh_args_restore(struct ofh_args *a)
{
	for (int i = 0; i < a->n; i++)
		*a->fh[i] = a->saved[i];
	a->n = 0;
}

/* --- answers -------------------------------------------------------------- */

/* Encodes *fh into w (not yet swapped in). 0 old mapping, 1 new, or the
 * store's error. */
static int encode_one(struct store *s, nfs_fh3 *fh, uint32_t *follows, struct ofh_swap *w)
{
	uint32_t len = 0;
	int rc;

	w->fh = fh;
	w->saved = *fh;
	w->follows = follows;
	if (s == NULL)
		return -EAGAIN; /* before the store is open (o4_use_store) */
	rc = store_fh_encode(s, fh->data.data_val, fh->data.data_len, w->mapped, &len);
	if (rc >= 0 && len != STORE_FH_MAPPED_LEN)
		rc = -EIO; /* a handle that needs the map maps to 64 bytes */
	return rc;
}

static void log_encode_failure(int rc, uint32_t len)
{
	static struct log_limit lim;

	log_limited(&lim, CFS_LOG_WARN,
	            "NFSv4 upstream: a handle of %u bytes cannot be mapped to a 64-byte one "
	            "(%s): %s",
	            len, strerror(-rc),
	            rc == -ENOSPC ? "the index is full; culling makes room, the client retries"
	                          : "left out of the answer");
}

static void swap_in(struct ofh_swap *w)
{
	w->fh->data.data_val = (char *)w->mapped;
	w->fh->data.data_len = STORE_FH_MAPPED_LEN;
}

/* A handle the client cannot be given: left out (handle_follows 0). */
static void leave_out(struct ofh_swap *w)
{
	*w->follows = 0;
}

int ofh_res_encode(struct store *s, uint32_t proc, void *res3, struct ofh_res *r)
{
	int made = 0, rc;

	memset(r, 0, sizeof(*r));
	if (proc == NFS3_LOOKUP) {
		LOOKUP3res *lr = res3;
		nfs_fh3 *fh = &lr->LOOKUP3res_u.resok.object;

		if (lr->status != NFS3_OK || !store_fh_needs_map(fh->data.data_val, fh->data.data_len))
			return 0;
		rc = encode_one(s, fh, NULL, &r->one);
		if (rc == 1 && store_commit(s) != 0)
			rc = -EAGAIN; /* not durable: the client asks again */
		if (rc < 0) {
			log_encode_failure(rc, fh->data.data_len);
			r->lookup_failed = rc == -ENOSPC || rc == -EAGAIN ? NFS3ERR_JUKEBOX : NFS3ERR_IO;
			return 0;
		}
		swap_in(&r->one);
		r->n = 1;
		r->mapped = 1;
		r->created = rc == 1;
		return 0;
	}
	if (proc == NFS3_CREATE || proc == NFS3_MKDIR || proc == NFS3_SYMLINK ||
	    proc == NFS3_MKNOD) {
		/* the four resok structs start alike: post_op_fh3 obj first */
		CREATE3res *cr = res3;
		post_op_fh3 *obj = &cr->CREATE3res_u.resok.obj;
		nfs_fh3 *fh = &obj->post_op_fh3_u.handle;

		if (cr->status != NFS3_OK || !obj->handle_follows ||
		    !store_fh_needs_map(fh->data.data_val, fh->data.data_len))
			return 0;
		rc = encode_one(s, fh, &obj->handle_follows, &r->one);
		if (rc == 1 && store_commit(s) != 0)
			rc = -EAGAIN;
		r->n = 1;
		if (rc < 0) {
			/* created: the client LOOKUPs it for its handle */
			log_encode_failure(rc, fh->data.data_len);
			leave_out(&r->one);
			return 0;
		}
		swap_in(&r->one);
		r->mapped = 1;
		r->created = rc == 1;
		return 0;
	}
	if (proc == NFS3_READDIRPLUS) {
		READDIRPLUS3res *dr = res3;
		entryplus3 *en;
		int n = 0, i = 0;

		if (dr->status != NFS3_OK)
			return 0;
		for (en = dr->READDIRPLUS3res_u.resok.reply.entries; en; en = en->nextentry) {
			nfs_fh3 *fh = &en->name_handle.post_op_fh3_u.handle;

			n += en->name_handle.handle_follows &&
			     store_fh_needs_map(fh->data.data_val, fh->data.data_len);
		}
		if (n == 0)
			return 0;
		r->many = calloc((size_t)n, sizeof(*r->many));
		if (r->many == NULL)
			return -ENOMEM;
		for (en = dr->READDIRPLUS3res_u.resok.reply.entries; en; en = en->nextentry) {
			nfs_fh3 *fh = &en->name_handle.post_op_fh3_u.handle;
			struct ofh_swap *w = &r->many[i];

			if (!en->name_handle.handle_follows ||
			    !store_fh_needs_map(fh->data.data_val, fh->data.data_len))
				continue;
			rc = encode_one(s, fh, &en->name_handle.handle_follows, w);
			i++;
			if (rc < 0) {
				log_encode_failure(rc, fh->data.data_len);
				leave_out(w);
				continue;
			}
			made += rc == 1;
			swap_in(w);
			r->mapped++;
		}
		r->n = i;
		/* one commit for the page's new mappings, before the reply */
		if (made && store_commit(s) != 0) {
			for (i = 0; i < r->n; i++)
				leave_out(&r->many[i]); /* old mappings too: one rule */
			log_encode_failure(-EAGAIN, 0);
			r->mapped = 0;
			made = 0;
		}
		r->created = (uint64_t)made;
		return 0;
	}
	return 0;
}

void ofh_res_restore(struct ofh_res *r)
{
	struct ofh_swap *w = r->many ? r->many : &r->one;

	for (int i = 0; i < r->n; i++) {
		*w[i].fh = w[i].saved;
		if (w[i].follows)
			*w[i].follows = 1;
	}
	free(r->many);
	r->many = NULL;
	r->n = 0;
}
