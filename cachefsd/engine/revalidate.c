/* Revalidation at lock time (docs/coherence.md, "Locks"): when a lock is
 * granted through the proxy, the file's attributes are asked upstream
 * with the caller's credential before the grant reaches the client, and
 * the answer goes through the reply pipeline as a client's GETATTR
 * would: data cached under other attributes is dropped, and in ttl mode
 * the metadata cache holds the fresh attributes, and fills and disk loads
 * of the file in flight since before the grant are not served
 * (engine_data_changed()). The data read under a lock is the server's
 * current data, as the Linux client's revalidation at lock time promises. */
#include "engine_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define REVAL_MAGIC 0x5245564cu /* "REVL" */

struct reval {
	uint32_t magic;
	struct engine *e;
	struct engine_call call; /* GETATTR: args.getattr.object points at fh */
	uint8_t fh[NFS3_FHSIZE];
	engine_reval_fn done;
	void *priv;
};

static void reval_done(int status, void *res, void *priv)
{
	struct reval *r = priv;

	assert(r->magic == REVAL_MAGIC);
	/* a fill that began before the grant may hold bytes from before the
	 * last holder's writes, under attributes a coarse clock kept equal */
	engine_data_changed(r->e, &r->call.args.getattr.object);
	if (status == 0)
		engine_answered(r->e, &r->call, res);
	else
		r->e->ctr.nlm_reval_failures++;
	r->done(status, r->priv);
	r->magic = 0;
	free(r);
}

int engine_revalidate(struct engine *e, const void *fh, uint32_t fhlen, const struct cfs_cred *cred,
                      engine_reval_fn done, void *priv)
{
	struct reval *r;
	int rc;

	if (fhlen == 0 || fhlen > NFS3_FHSIZE)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	r->magic = REVAL_MAGIC;
	r->e = e;
	memcpy(r->fh, fh, fhlen);
	r->call.prog = NFS_PROGRAM;
	r->call.proc = NFS3_GETATTR;
	r->call.t_call_us = loop_clock_us();
	r->call.cred = *cred;
	r->call.args.getattr.object.data.data_len = fhlen;
	r->call.args.getattr.object.data.data_val = (char *)r->fh;
	r->done = done;
	r->priv = priv;
	e->ctr.nlm_revalidations++;
	rc = engine_up_call(e, NFS3_GETATTR, &r->call.args.getattr, cred, reval_done, r);
	if (rc != 0) {
		r->magic = 0;
		free(r);
	}
	return rc;
}
