/* Answering from the metadata cache (ttl mode): GETATTR, ACCESS, LOOKUP,
 * READDIR(PLUS), READLINK and FS* calls whose answer the cache holds fresh
 * (meta.c), given to a caller only with evidence that the server would
 * give it the same (engine_evidence()); and in strict mode an ACCESS call
 * the server's GETATTR of the same revalidation leaves nothing to add to,
 * and the GETATTR right after the server's LOOKUP (strict_answer()). A
 * handler: called by the dispatcher (engine.c) before a call is
 * forwarded; above the reply pipeline and the store of records it reads. */
#include "engine_int.h"
#include "engine_procs.h"
#include "procs.h"
#include "proto.h"

#include <errno.h>
#include <string.h>

/* The fresh attributes of fh from the cache as a post_op_attr (none:
 * attributes_follow 0). */
static void attrs_post(struct engine *e, const nfs_fh3 *fh, post_op_attr *pa)
{
	memset(pa, 0, sizeof(*pa));
	if (meta_get_attrs(e, fh, &pa->post_op_attr_u.attributes) == 0)
		pa->attributes_follow = 1;
}

static int answer_getattr(struct engine *e, struct cfs_req *req)
{
	GETATTR3res res;

	memset(&res, 0, sizeof(res));
	if (meta_get_attrs(e, &req->args.getattr.object, &res.GETATTR3res_u.resok.obj_attributes))
		return -ENOENT;
	res.status = NFS3_OK;
	engine_count_reply(e, req, NFS3_OK);
	engine_reply(e, req, &res);
	return 0;
}

static int answer_access(struct engine *e, struct cfs_req *req)
{
	ACCESS3res res;
	fattr3 *a = &res.ACCESS3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	uint32_t bits;

	memset(&res, 0, sizeof(res));
	struct access_ent ev;
	uint32_t asked = req->args.access.access;

	if (meta_get_attrs(e, &req->args.access.object, a) ||
	    meta_get_access(e, &req->args.access.object, &req->cred, &ev) ||
	    ev.ctime_s != a->ctime.seconds || ev.ctime_ns != a->ctime.nseconds ||
	    (ev.asked & asked) != asked)
		return -ENOENT;
	bits = ev.bits & asked; /* the server's own answer to this credential */
	res.status = NFS3_OK;
	res.ACCESS3res_u.resok.obj_attributes.attributes_follow = 1;
	res.ACCESS3res_u.resok.access = bits;
	engine_count_reply(e, req, NFS3_OK);
	engine_reply(e, req, &res);
	return 0;
}

/* A cached answer about obj goes to req's caller only with evidence that
 * the server would give it that answer: what it answered this credential
 * before (or an ACCESS grant the mode bits agree with), under obj's
 * freshest attributes (*pa, filled here: it must have them). */
static int allowed(struct engine *e, struct cfs_req *req, const nfs_fh3 *obj, uint32_t want,
		   post_op_attr *pa)
{
	attrs_post(e, obj, pa);
	if (pa->attributes_follow &&
	    engine_evidence(e, obj, &req->cred, want, &pa->post_op_attr_u.attributes) == EV_SERVE)
		return 1;
	e->ctr.meta_no_evidence++;
	return 0;
}

static int answer_lookup(struct engine *e, struct cfs_req *req)
{
	LOOKUP3res res;
	uint8_t child[NFS3_FHSIZE];
	uint32_t len = 0;
	nfsstat3 st;
	post_op_attr dir_pa;
	int known;

	memset(&res, 0, sizeof(res));
	known = meta_child(e, &req->args.lookup.what.dir, req->args.lookup.what.name, child, &len);
	if (known < 0)
		return -ENOENT;
	st = known ? NFS3_OK : NFS3ERR_NOENT;
	/* names in a directory are for those who may search it */
	if (!allowed(e, req, &req->args.lookup.what.dir, ACCESS3_LOOKUP, &dir_pa))
		return -ENOENT;
	if (st == NFS3_OK) {
		LOOKUP3resok *ok = &res.LOOKUP3res_u.resok;
		ok->object.data.data_len = len;
		ok->object.data.data_val = (char *)child;
		/* the object's attributes must be fresh too: clients rely on them */
		attrs_post(e, &ok->object, &ok->obj_attributes);
		if (!ok->obj_attributes.attributes_follow)
			return -ENOENT;
		ok->dir_attributes = dir_pa;
	} else {
		res.LOOKUP3res_u.resfail.dir_attributes = dir_pa;
	}
	res.status = st;
	if (st == NFS3_OK)
		engine_lookup_prefetch(e, &res.LOOKUP3res_u.resok.object,
				       &res.LOOKUP3res_u.resok.obj_attributes, &req->cred);
	engine_count_reply(e, req, st);
	engine_reply(e, req, &res);
	return 0;
}

/* READDIRPLUS's row: cached pages carry entry attributes from when they
 * were listed: the freshest known replace them, and an entry whose
 * attributes are no longer known fresh goes without (RFC 1813 lets a
 * server omit them; the client asks): the page stays its pass's, and the
 * listing the snapshot it began with (meta.c "listing passes"). */
int meta_refresh_entries(struct engine *e, void *res)
{
	READDIRPLUS3res *r = res;
	entryplus3 *en = r->READDIRPLUS3res_u.resok.reply.entries;

	while (en) {
		entryplus3 ent;
		memcpy(&ent, en, sizeof(ent));
		if (ent.name_handle.handle_follows) {
			post_op_attr pa;
			attrs_post(e, &ent.name_handle.post_op_fh3_u.handle, &pa);
			ent.name_attributes = pa;
		} else {
			memset(&ent.name_attributes, 0, sizeof(ent.name_attributes));
		}
		memcpy(en, &ent, sizeof(ent));
		en = ent.nextentry;
	}
	return 0;
}

/* A whole kept reply (the row's blob type): its attributes refreshed,
 * for a caller the row's evidence rule lets see it. */
static int answer_blob(struct engine *e, struct cfs_req *req, const struct engine_proc *ep)
{
	union nfs3_res res;
	struct meta_rec rec;
	const nfs_fh3 *obj = proc_fh(proc_row(req->prog, req->proc), &req->args);
	post_op_attr *pa = (post_op_attr *)((char *)&res + ep->answer_at);
	struct engine_call call;

	engine_call_of(&call, req);
	if (obj == NULL || meta_get_reply(e, &call, &res, &rec) != 0)
		return -ENOENT;
	/* a listing's later pages go with its first (meta.c "listing passes") */
	uint64_t pass = meta_page_pass(req->proc, &res);
	int reader = pass && meta_pass_reader(e, &call, pass, 0);
	if ((ep->answer_refresh && ep->answer_refresh(e, &res) != 0) ||
	    (ep->answer_want && !reader ? !allowed(e, req, obj, ep->answer_want, pa)
	                                : (attrs_post(e, obj, pa), 0))) {
		meta_rec_free(&rec);
		return -ENOENT;
	}
	if (pass)
		meta_pass_reader(e, &call, pass, 1);
	struct cfs_cred lister = req->cred;
	int listed = req->proc == NFS3_READDIRPLUS;
	engine_count_reply(e, req, NFS3_OK);
	engine_reply(e, req, &res); /* frees req */
	if (listed) {
		engine_warm_ahead(e, &res);
		engine_access_ahead(e, &lister, &res);
	}
	meta_rec_free(&rec);
	return 0;
}

/* How recent the server's GETATTR or LOOKUP of a file must be for its
 * attributes to stand for this revalidation of it: a client's open sends
 * LOOKUP and GETATTR, then ACCESS, back to back (docs/coherence.md). */
#define REVAL_WINDOW_MS 1000

/* How old an ACCESS answer may be to be reused (strict_access_ttl): the
 * bound on how late what the attributes do not show (a group database
 * change) is seen. */
static uint64_t strict_access_age_ms(const struct engine *e)
{
	return (uint64_t)e->cfg->strict_access_ttl * 1000;
}

/* Strict mode: the stored ACCESS answer of req's credential for its
 * handle, in memory or kept by an earlier run (then put back in memory,
 * with its age, as the evidence a READ from the cache needs). NULL: none. */
static struct access_ent *strict_stored(struct engine *e, struct cfs_req *req, struct cobj *o)
{
	struct access_ent *a = cobj_access_find(o, &req->cred);
	uint32_t asked, bits;
	uint64_t age, now = loop_now(e->loop);
	fattr3 under;

	if (a && a->acc_ms)
		return a;
	if (meta_get_strict_access(e, &req->args.access.object, &req->cred, &asked, &bits, &under,
	                           &age) != 0 ||
	    age >= now || age >= strict_access_age_ms(e) || under.ctime.seconds != o->attrs.ctime.seconds ||
	    under.ctime.nseconds != o->attrs.ctime.nseconds)
		return NULL;
	cobj_access_restore(o, &req->cred, asked, bits, &under, now - age);
	return cobj_access_find(o, &req->cred);
}

/* The attributes a and b say the same of the file's data and its access
 * (what a GETATTR's answer is read for). */
static int attrs_same(const fattr3 *a, const fattr3 *b)
{
	return a->ctime.seconds == b->ctime.seconds && a->ctime.nseconds == b->ctime.nseconds &&
	       a->mtime.seconds == b->mtime.seconds && a->mtime.nseconds == b->mtime.nseconds &&
	       a->size == b->size && a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
	       a->nlink == b->nlink && a->type == b->type;
}

void strict_lookup_seen(struct engine *e, const struct cfs_req *req, const void *res)
{
	const LOOKUP3res *r = res;
	const LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	struct cobj *o;
	uint64_t conn = proto_req_conn_serial(req);

	if (req->prog != NFS_PROGRAM || req->proc != NFS3_LOOKUP || r == NULL ||
	    r->status != NFS3_OK || !ok->obj_attributes.attributes_follow || meta_enabled(e) ||
	    e->cfg->strict_lookup_attrs <= 0 || conn == 0)
		return;
	o = cobj_find(e->objs, ok->object.data.data_val, ok->object.data.data_len);
	/* only attributes the proxy took as the freshest (not older news) */
	if (o == NULL || !o->have_attrs || o->attrs_stale_us ||
	    !attrs_same(&o->attrs, &ok->obj_attributes.post_op_attr_u.attributes))
		return;
	o->lookup_conn = conn;
	o->lookup_us = loop_clock_us();
}

/* Strict mode: the first GETATTR of a file on the connection whose
 * LOOKUP of it the server answered at most strict_lookup_attrs µs before: the client's open revalidated the file through that LOOKUP
 * (the Linux client and libnfs's nfs_open() take a LOOKUP's attributes as
 * the open's), so its GETATTR gets them; later ones go to the server. */
static int strict_getattr(struct engine *e, struct cfs_req *req)
{
	const nfs_fh3 *fh = &req->args.getattr.object;
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);
	uint64_t conn = proto_req_conn_serial(req);
	GETATTR3res res;

	if (o == NULL || conn == 0 || o->lookup_conn != conn || !o->have_attrs ||
	    o->attrs_stale_us || req->t_start_us < o->lookup_us ||
	    req->t_start_us - o->lookup_us > (uint64_t)e->cfg->strict_lookup_attrs)
		return -ENOENT;
	o->lookup_conn = 0; /* one GETATTR per LOOKUP */
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.GETATTR3res_u.resok.obj_attributes = o->attrs;
	e->ctr.strict_lookup_attrs++;
	engine_count_reply(e, req, NFS3_OK);
	engine_reply(e, req, &res);
	return 0;
}

int strict_answer(struct engine *e, struct cfs_req *req)
{
	ACCESS3res res;
	struct cobj *o;
	struct access_ent *a;
	uint32_t bits;

	if (req->prog == NFS_PROGRAM && req->proc == NFS3_GETATTR && !meta_enabled(e) &&
	    e->cfg->strict_lookup_attrs > 0)
		return strict_getattr(e, req);
	if (req->proc != NFS3_ACCESS || meta_enabled(e) || !e->cfg->strict_access_reuse)
		return -ENOENT;
	o = cobj_find(e->objs, req->args.access.object.data.data_val,
	              req->args.access.object.data.data_len);
	/* no revalidation by the server just now: nothing to compare with */
	if (o == NULL || !o->have_attrs || o->attrs_stale_us || o->reval_ms == 0 ||
	    loop_now(e->loop) - o->reval_ms > REVAL_WINDOW_MS)
		return -ENOENT;
	a = strict_stored(e, req, o);
	if (!cobj_access_reusable(a, &o->attrs, o->reval_ms, req->args.access.access,
	                          loop_now(e->loop), REVAL_WINDOW_MS, strict_access_age_ms(e),
	                          &bits))
		return -ENOENT;
	/* the server's attributes just confirmed what the answer was given
	 * under: it is fresh evidence for a READ from the cache again
	 * (evidence_ttl from now), its own age as a reused answer stays */
	a->when_ms = loop_now(e->loop);
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	/* the attributes the server just gave, and only what it granted */
	res.ACCESS3res_u.resok.obj_attributes.attributes_follow = 1;
	res.ACCESS3res_u.resok.obj_attributes.post_op_attr_u.attributes = o->attrs;
	res.ACCESS3res_u.resok.access = bits;
	e->ctr.strict_access_reused++;
	engine_count_reply(e, req, NFS3_OK);
	engine_reply(e, req, &res);
	return 0;
}

/* ttl mode: answers req from the cache when it can (0), else -ENOENT and
 * the caller forwards it. */
int meta_answer(struct engine *e, struct cfs_req *req)
{
	const struct engine_proc *ep = engine_proc(req->proc);
	int rc;

	if (!meta_enabled(e) || ep == NULL)
		return -ENOENT;
	switch (ep->answer) {
	case ANS_GETATTR:
		rc = answer_getattr(e, req);
		break;
	case ANS_ACCESS:
		rc = answer_access(e, req);
		break;
	case ANS_LOOKUP:
		rc = answer_lookup(e, req);
		break;
	case ANS_BLOB:
		rc = answer_blob(e, req, ep);
		/* a page its pass is fetching: the call waits for it */
		if (rc != 0 && ep->page_ncounts && engine_pass_wait(e, req) == 0)
			return 0;
		break;
	default:
		return -ENOENT;
	}
	if (rc == 0) {
		e->ctr.meta_hits++;
	} else {
		e->ctr.meta_misses++;
		meta_page_forward(e, req); /* a page: the server's own verifier */
	}
	return rc;
}
