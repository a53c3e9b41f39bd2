/* The reply pipeline: what the engine does with every upstream answer to a
 * call, whoever made the call. A client's call forwarded (forward.c), a
 * fill's READ and a READ's ACCESS check (read.c), a MNT walk's LOOKUP
 * (mount.c): each hands its answer to engine_answered(), with a narrow view
 * of the call (struct engine_call), and nothing else of the engine looks
 * at an answer.
 *
 * In order:
 *   1. NFS3ERR_STALE: the handle may be gone; a GETATTR asks
 *      (engine_stale(), observe.c), and nothing else is taken from the
 *      answer.
 *   2. An answer is made what the client is told (the row's as_told:
 *      FSINFO's sizes, engine_clamp_fsinfo()), so the metadata cache
 *      keeps that.
 *   3. record: what a later call may be answered with (meta_record(),
 *      meta.c; ttl mode).
 *   4. observe: the attributes it carries about handles, and what it
 *      proves the caller may do (engine_observe_result(), observe.c).
 *   5. prefetch: a LOOKUP that found a small file starts fetching its
 *      bytes (engine_lookup_prefetch(), read.c).
 * Steps 3 and 4 touch different records (names and replies; attributes and
 * evidence) and ran in this order before the pipeline was one place.
 *
 * The pipeline lies below read.c: read.c's fills hand it their READ
 * answers, and a fill may be one the pipeline started (step 5). So step 5
 * calls read.c through e->lookup_prefetch, bound by engine_new(), not by
 * name: the files of the engine call each other in one direction only. It
 * is the same call at the same moment as before (the prefetch starts while
 * the LOOKUP's answer is handled, before the client is answered), which a
 * prefetch queued for the loop's before-sleep hook would not be: a READ of
 * the file arriving in the same loop pass would find no fill. */
#include "engine_int.h"
#include "engine_procs.h"
#include "procs.h"

#include <string.h>

void engine_call_of(struct engine_call *call, const struct cfs_req *req)
{
	call->prog = req->prog;
	call->proc = req->proc;
	call->t_call_us = req->t_start_us;
	call->listing_pass = 0; /* a client's call extends no pass (listpass.c) */
	call->cred = req->cred;
	call->args = req->args;
}

void engine_clamp_fsinfo(FSINFO3resok *r, uint32_t cs)
{
	if (r->rtmax == 0 || r->rtmax > CFS_MAX_IO)
		r->rtmax = CFS_MAX_IO;
	if (r->rtmax < cs && cs <= CFS_MAX_IO) {
		/* a chunk per client READ: served from the cache in one call,
		 * forwarded in pieces of the upstream's rtmax (passread.c) */
		r->rtmax = cs;
		r->rtpref = cs;
	}
	if (r->wtmax == 0 || r->wtmax > CFS_MAX_IO)
		r->wtmax = CFS_MAX_IO;
	if (r->rtpref == 0 || r->rtpref > r->rtmax)
		r->rtpref = r->rtmax;
	if (r->wtpref == 0 || r->wtpref > r->wtmax)
		r->wtpref = r->wtmax;
	if (r->dtpref == 0 || r->dtpref > CFS_MAX_IO)
		r->dtpref = CFS_MAX_IO;
}

/* FSINFO's row: what the client is told (engine_clamp_fsinfo()). */
void engine_fsinfo_as_told(struct engine *e, void *res)
{
	FSINFO3res *r = res;

	engine_clamp_fsinfo(&r->FSINFO3res_u.resok, (uint32_t)e->cfg->chunk_size);
}

/* The handle a call is about (for NFS3ERR_STALE): its row's; directory
 * operations have none (which handle is stale is unknown). */
static const nfs_fh3 *primary_fh(const struct engine_call *call)
{
	return proc_fh(proc_row(call->prog, call->proc), &call->args);
}

void engine_answered(struct engine *e, const struct engine_call *call, void *res)
{
	union nfs3_res *r = res;
	const struct engine_proc *ep = call->prog == NFS_PROGRAM ? engine_proc(call->proc) : NULL;

	if (r->status == NFS3ERR_STALE) {
		const nfs_fh3 *fh = primary_fh(call);

		if (fh && fh->data.data_len && fh->data.data_len <= NFS3_FHSIZE)
			engine_stale(e, fh, &call->cred);
		return;
	}
	if (ep && ep->as_told && r->status == NFS3_OK)
		ep->as_told(e, res);
	meta_record(e, call, res);
	engine_observe_result(e, call, res);
	if (call->proc == NFS3_LOOKUP && r->status == NFS3_OK)
		e->lookup_prefetch(e, &r->lookup.LOOKUP3res_u.resok.object,
		                   &r->lookup.LOOKUP3res_u.resok.obj_attributes, &call->cred);
}
