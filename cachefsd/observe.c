/* Coherence: every upstream reply that carries attributes of a handle
 * (post-op attributes, wcc data, GETATTR, LOOKUP, READDIRPLUS entries)
 * updates the freshest known attributes of that handle; when they differ
 * from the snapshot the cached data was stored under, the data is dropped
 * before any later READ is answered. ACCESS replies and successful READs
 * also record what the caller may do (the evidence a READ from the cache
 * needs). Step 4 of the reply pipeline (reply.c), which hands it every
 * answer that is not STALE; it calls only the metadata cache's records
 * (meta.c). */
#include "engine_int.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

void engine_drop_data(struct engine *e, struct cobj *o, const char *why)
{
	struct store_obj rec;

	cobj_drop_chunks(e->objs, o);
	o->ra_next = 0;
	if (store_obj_get(e->store, o->fh, o->fhlen, &rec) != 0)
		return;
	if (rec.cached_bytes == 0 && !(rec.flags & STORE_OBJ_INLINE))
		return; /* no data to drop */
	if (store_obj_drop(e->store, o->fh, o->fhlen, 0) == 0) {
		e->ctr.data_drops++;
		log_debug("dropped cached data of a file: %s", why);
	}
}

/* Replies of calls in flight together arrive in any order (parallel WRITEs
 * over several upstream connections, a GETATTR answered late): within this
 * long of learning attributes, a reply with an older ctime is older news. */
#define REORDER_MS 3000

static int ctime_before(const fattr3 *a, const fattr3 *b)
{
	return a->ctime.seconds < b->ctime.seconds ||
	       (a->ctime.seconds == b->ctime.seconds && a->ctime.nseconds < b->ctime.nseconds);
}

/* 1 when attrs, from a reply to a call issued at call_us, may be older
 * than what the proxy knows of o and must not replace it. */
static int outdated(struct engine *e, const struct cobj *o, const fattr3 *attrs, uint64_t call_us)
{
	/* o was changed through the proxy in a way no reply described (a
	 * name of it removed or replaced): only calls issued after that
	 * change's reply say what it is now */
	if (o->attrs_stale_us && call_us < o->attrs_stale_us)
		return 1;
	return o->have_attrs && loop_now(e->loop) - o->attrs_ms < REORDER_MS &&
	       ctime_before(attrs, &o->attrs);
}

void engine_observe_attrs(struct engine *e, const nfs_fh3 *fh, const fattr3 *attrs)
{
	struct cobj *o;
	struct store_obj rec;
	struct store_snap now;

	if (fh->data.data_len == 0 || fh->data.data_len > NFS3_FHSIZE)
		return;
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return;
	if (outdated(e, o, attrs, e->obs_call_us)) {
		cobj_put(e->objs, o);
		return;
	}
	o->attrs_stale_us = 0;
	if (o->have_attrs && o->attrs.ctime.seconds == attrs->ctime.seconds &&
	    o->attrs.ctime.nseconds == attrs->ctime.nseconds &&
	    o->attrs.mtime.seconds == attrs->mtime.seconds &&
	    o->attrs.mtime.nseconds == attrs->mtime.nseconds && o->attrs.size == attrs->size) {
		/* nothing that matters changed: no store lookup */
		o->attrs = *attrs;
		o->attrs_ms = loop_now(e->loop);
		meta_put_attrs(e, fh, attrs); /* fresh again */
		cobj_put(e->objs, o);
		return;
	}
	if (o->have_attrs && (o->attrs.ctime.seconds != attrs->ctime.seconds ||
			      o->attrs.ctime.nseconds != attrs->ctime.nseconds))
		cobj_access_clear(o); /* mode, owner or ACL may have changed */
	o->attrs = *attrs;
	o->have_attrs = 1;
	o->attrs_ms = loop_now(e->loop);
	meta_put_attrs(e, fh, attrs);
	if (store_obj_get(e->store, o->fh, o->fhlen, &rec) == 0) {
		store_snap_of(attrs, &now);
		if (!store_snap_equal(&now, &rec.snap))
			engine_drop_data(e, o, "attributes changed upstream");
	}
	cobj_put(e->objs, o);
}

void engine_observe_post(struct engine *e, const nfs_fh3 *fh, const post_op_attr *pa)
{
	if (pa->attributes_follow)
		engine_observe_attrs(e, fh, &pa->post_op_attr_u.attributes);
}

static void observe_wcc(struct engine *e, const nfs_fh3 *fh, const wcc_data *w)
{
	engine_observe_post(e, fh, &w->after);
}

static void observe_access(struct engine *e, const struct engine_call *req, const ACCESS3res *r)
{
	const nfs_fh3 *fh = &req->args.access.object;
	const post_op_attr *pa = r->status == NFS3_OK ? &r->ACCESS3res_u.resok.obj_attributes
						      : &r->ACCESS3res_u.resfail.obj_attributes;
	struct cobj *o;

	engine_observe_post(e, fh, pa);
	if (r->status != NFS3_OK || !pa->attributes_follow)
		return;
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return;
	cobj_access_set(o, &req->cred, req->args.access.access, r->ACCESS3res_u.resok.access,
			&pa->post_op_attr_u.attributes, loop_now(e->loop));
	meta_put_access(e, fh, cobj_access_find(o, &req->cred));
	cobj_put(e->objs, o);
}

/* The server answered a call by cred about fh that needs the ACCESS3 bits
 * `bits` (status: its answer; ok: the answer means it was allowed):
 * evidence for answering that credential from the cache later, under the
 * attributes pa (none: nothing is recorded). */
static void answered(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
		     nfsstat3 status, int ok, const post_op_attr *pa, uint32_t bits)
{
	struct cobj *o;

	if (!pa->attributes_follow || (!ok && status != NFS3ERR_ACCES) || fh->data.data_len == 0 ||
	    fh->data.data_len > NFS3_FHSIZE)
		return;
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return;
	const fattr3 *at = &pa->post_op_attr_u.attributes;
	struct access_ent *a = cobj_access_find(o, cred);
	/* a walk answers many LOOKUPs in one directory: the record is
	 * written when what is known changes, not for each of them */
	int same = a && a->ctime_s == at->ctime.seconds && a->ctime_ns == at->ctime.nseconds &&
		   (ok ? (a->proven & bits) == bits : (a->refused & bits) == bits);
	cobj_access_answered(o, cred, ok ? bits : 0, ok ? 0 : bits, at, loop_now(e->loop));
	if (!same)
		meta_put_access(e, fh, cobj_access_find(o, cred));
	cobj_put(e->objs, o);
}

static void observe_read(struct engine *e, const struct engine_call *req, const READ3res *r)
{
	const nfs_fh3 *fh = &req->args.read.file;
	const post_op_attr *pa = r->status == NFS3_OK ? &r->READ3res_u.resok.file_attributes
						      : &r->READ3res_u.resfail.file_attributes;

	engine_observe_post(e, fh, pa);
	/* the upstream just let this caller read (or refused it) */
	answered(e, fh, &req->cred, r->status, r->status == NFS3_OK, pa, ACCESS3_READ);
}

uint64_t engine_evidence_age_ms(const struct engine *e)
{
	return (uint64_t)(meta_enabled(e) ? e->cfg->meta_ttl : e->cfg->evidence_ttl) * 1000;
}

enum evidence engine_evidence(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
			      uint32_t want, const fattr3 *attrs)
{
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);
	int rule = e->cfg->read_evidence;
	struct access_ent stored;
	enum evidence ev, ev2;

	ev = cobj_evidence(o ? cobj_access_find(o, cred) : NULL, attrs, cred, want, rule,
			   loop_now(e->loop), engine_evidence_age_ms(e));
	if (ev == EV_SERVE || ev == EV_REFUSED || meta_get_access(e, fh, cred, &stored) != 0)
		return ev;
	ev2 = cobj_evidence(&stored, attrs, cred, want, rule, 0, 0); /* meta checked its age */
	return ev2 == EV_UNKNOWN ? ev : ev2;
}

static void observe_new_object(struct engine *e, const post_op_fh3 *fh, const post_op_attr *pa)
{
	if (fh->handle_follows)
		engine_observe_post(e, &fh->post_op_fh3_u.handle, pa);
}

static void observe_readdirplus(struct engine *e, const struct engine_call *req,
				const READDIRPLUS3res *r)
{
	const nfs_fh3 *dir = &req->args.readdirplus.dir;
	uint32_t shown = ACCESS3_READ;

	if (r->status != NFS3_OK) {
		engine_observe_post(e, dir, &r->READDIRPLUS3res_u.resfail.dir_attributes);
		answered(e, dir, &req->cred, r->status, 0,
			 &r->READDIRPLUS3res_u.resfail.dir_attributes, ACCESS3_READ);
		return;
	}
	engine_observe_post(e, dir, &r->READDIRPLUS3res_u.resok.dir_attributes);
	const entryplus3 *next = r->READDIRPLUS3res_u.resok.reply.entries;
	while (next) {
		/* libnfs places entries at 4-byte aligned addresses: copy out */
		entryplus3 ent;
		memcpy(&ent, next, sizeof(ent));
		if (ent.name_handle.handle_follows) {
			engine_observe_post(e, &ent.name_handle.post_op_fh3_u.handle,
					    &ent.name_attributes);
			/* it gave this caller the entries' handles: what LOOKUPs
			 * in the directory would */
			shown |= ACCESS3_LOOKUP;
		}
		next = ent.nextentry;
	}
	answered(e, dir, &req->cred, NFS3_OK, 1, &r->READDIRPLUS3res_u.resok.dir_attributes, shown);
}

static void observe_result(struct engine *e, const struct engine_call *req, void *res);

/* A GETATTR of a handle the upstream called STALE in an answer about it. */
struct stale_check {
	struct engine *e;
	struct cobj *o; /* pinned */
	uint64_t t_us;	/* when it was asked */
	GETATTR3args args;
};

static void stale_check_done(int status, void *res, void *priv)
{
	struct stale_check *sc = priv;
	struct engine *e = sc->e;
	struct cobj *o = sc->o;
	GETATTR3res *r = res;
	nfs_fh3 fh = {{o->fhlen, (char *)o->fh}};

	o->stale_check = 0;
	if (status == 0 && r->status == NFS3ERR_STALE) {
		engine_purge(e, &fh);
	} else if (status == 0 && r->status == NFS3_OK) {
		/* alive: the STALE was about the call (a LOOKUP below a file, a
		 * name too long), not the handle */
		e->obs_call_us = sc->t_us;
		engine_observe_attrs(e, &fh, &r->GETATTR3res_u.resok.obj_attributes);
		e->obs_call_us = UINT64_MAX;
		log_debug("a STALE answer about a handle that is not stale: kept its cache");
	}
	/* no answer: keep everything; the next STALE asks again */
	cobj_put(e->objs, o);
	free(sc);
}

void engine_stale(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred)
{
	struct cobj *o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	struct stale_check *sc;

	if (o == NULL)
		return;
	if (o->stale_check || e->stopping || (sc = calloc(1, sizeof(*sc))) == NULL) {
		cobj_put(e->objs, o);
		return;
	}
	sc->e = e;
	sc->o = o;
	sc->t_us = loop_clock_us();
	sc->args.object.data.data_len = o->fhlen;
	sc->args.object.data.data_val = (char *)o->fh;
	o->stale_check = 1;
	e->ctr.stale_checks++;
	if (engine_up_call(e, NFS3_GETATTR, &sc->args, cred, stale_check_done, sc) != 0) {
		o->stale_check = 0;
		cobj_put(e->objs, o);
		free(sc);
	}
}

void engine_purge(struct engine *e, const nfs_fh3 *fh)
{
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);

	if (o) {
		cobj_drop_chunks(e->objs, o);
		cobj_access_clear(o);
		o->have_attrs = 0;
	}
	store_obj_drop(e->store, fh->data.data_val, fh->data.data_len, 1);
	meta_purge(e, fh);
	e->ctr.stale_purges++;
}

/* Changed through the proxy without a reply that says how (a removed or
 * replaced name of it): its attributes are forgotten, and replies to calls
 * issued before now may not bring the old ones back (outdated()). */
void engine_attrs_changed(struct engine *e, const nfs_fh3 *fh)
{
	struct cobj *o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);

	meta_forget_attrs(e, fh);
	if (o == NULL)
		return;
	o->attrs_stale_us = loop_clock_us();
	if (o->attrs_stale_us == 0)
		o->attrs_stale_us = 1;
	cobj_put(e->objs, o);
}

void engine_observe_result(struct engine *e, const struct engine_call *call, void *res)
{
	e->obs_call_us = call->t_call_us; /* 0 (not known): as old as can be */
	observe_result(e, call, res);
	e->obs_call_us = UINT64_MAX;
}

static void observe_result(struct engine *e, const struct engine_call *req, void *res)
{
	union nfs3_res *r = res;
	const union cfs_args *a = &req->args;
	int ok = r->status == NFS3_OK;

	switch (req->proc) {
	case NFS3_GETATTR:
		if (ok)
			engine_observe_attrs(e, &a->getattr.object,
					     &r->getattr.GETATTR3res_u.resok.obj_attributes);
		break;
	case NFS3_SETATTR:
		observe_wcc(e, &a->setattr.object,
			    ok ? &r->setattr.SETATTR3res_u.resok.obj_wcc
			       : &r->setattr.SETATTR3res_u.resfail.obj_wcc);
		break;
	case NFS3_LOOKUP:
		/* found or not, the caller was allowed to search the directory */
		answered(e, &a->lookup.what.dir, &req->cred, r->status,
			 ok || r->status == NFS3ERR_NOENT,
			 ok ? &r->lookup.LOOKUP3res_u.resok.dir_attributes
			    : &r->lookup.LOOKUP3res_u.resfail.dir_attributes,
			 ACCESS3_LOOKUP);
		if (ok) {
			engine_observe_post(e, &r->lookup.LOOKUP3res_u.resok.object,
					    &r->lookup.LOOKUP3res_u.resok.obj_attributes);
			engine_observe_post(e, &a->lookup.what.dir,
					    &r->lookup.LOOKUP3res_u.resok.dir_attributes);
		} else {
			engine_observe_post(e, &a->lookup.what.dir,
					    &r->lookup.LOOKUP3res_u.resfail.dir_attributes);
		}
		break;
	case NFS3_ACCESS:
		observe_access(e, req, &r->access);
		break;
	case NFS3_READLINK: {
		const post_op_attr *pa = ok ? &r->readlink.READLINK3res_u.resok.symlink_attributes
					    : &r->readlink.READLINK3res_u.resfail.symlink_attributes;
		engine_observe_post(e, &a->readlink.symlink, pa);
		answered(e, &a->readlink.symlink, &req->cred, r->status, ok, pa, ACCESS3_READ);
		break;
	}
	case NFS3_READ:
		observe_read(e, req, &r->read);
		break;
	case NFS3_WRITE:
		observe_wcc(e, &a->write.file,
			    ok ? &r->write.WRITE3res_u.resok.file_wcc
			       : &r->write.WRITE3res_u.resfail.file_wcc);
		break;
	case NFS3_CREATE:
		if (ok)
			observe_new_object(e, &r->create.CREATE3res_u.resok.obj,
					   &r->create.CREATE3res_u.resok.obj_attributes);
		observe_wcc(e, &a->create.where.dir,
			    ok ? &r->create.CREATE3res_u.resok.dir_wcc
			       : &r->create.CREATE3res_u.resfail.dir_wcc);
		break;
	case NFS3_MKDIR:
		if (ok)
			observe_new_object(e, &r->mkdir.MKDIR3res_u.resok.obj,
					   &r->mkdir.MKDIR3res_u.resok.obj_attributes);
		observe_wcc(e, &a->mkdir.where.dir,
			    ok ? &r->mkdir.MKDIR3res_u.resok.dir_wcc
			       : &r->mkdir.MKDIR3res_u.resfail.dir_wcc);
		break;
	case NFS3_SYMLINK:
		if (ok)
			observe_new_object(e, &r->symlink.SYMLINK3res_u.resok.obj,
					   &r->symlink.SYMLINK3res_u.resok.obj_attributes);
		observe_wcc(e, &a->symlink.where.dir,
			    ok ? &r->symlink.SYMLINK3res_u.resok.dir_wcc
			       : &r->symlink.SYMLINK3res_u.resfail.dir_wcc);
		break;
	case NFS3_MKNOD:
		if (ok)
			observe_new_object(e, &r->mknod.MKNOD3res_u.resok.obj,
					   &r->mknod.MKNOD3res_u.resok.obj_attributes);
		observe_wcc(e, &a->mknod.where.dir,
			    ok ? &r->mknod.MKNOD3res_u.resok.dir_wcc
			       : &r->mknod.MKNOD3res_u.resfail.dir_wcc);
		break;
	case NFS3_REMOVE:
		observe_wcc(e, &a->remove.object.dir,
			    ok ? &r->remove.REMOVE3res_u.resok.dir_wcc
			       : &r->remove.REMOVE3res_u.resfail.dir_wcc);
		break;
	case NFS3_RMDIR:
		observe_wcc(e, &a->rmdir.object.dir,
			    ok ? &r->rmdir.RMDIR3res_u.resok.dir_wcc
			       : &r->rmdir.RMDIR3res_u.resfail.dir_wcc);
		break;
	case NFS3_RENAME:
		observe_wcc(e, &a->rename.from.dir,
			    ok ? &r->rename.RENAME3res_u.resok.fromdir_wcc
			       : &r->rename.RENAME3res_u.resfail.fromdir_wcc);
		observe_wcc(e, &a->rename.to.dir,
			    ok ? &r->rename.RENAME3res_u.resok.todir_wcc
			       : &r->rename.RENAME3res_u.resfail.todir_wcc);
		break;
	case NFS3_LINK:
		engine_observe_post(e, &a->link.file,
				    ok ? &r->link.LINK3res_u.resok.file_attributes
				       : &r->link.LINK3res_u.resfail.file_attributes);
		observe_wcc(e, &a->link.link.dir,
			    ok ? &r->link.LINK3res_u.resok.linkdir_wcc
			       : &r->link.LINK3res_u.resfail.linkdir_wcc);
		break;
	case NFS3_READDIR: {
		const post_op_attr *pa = ok ? &r->readdir.READDIR3res_u.resok.dir_attributes
					    : &r->readdir.READDIR3res_u.resfail.dir_attributes;
		engine_observe_post(e, &a->readdir.dir, pa);
		answered(e, &a->readdir.dir, &req->cred, r->status, ok, pa, ACCESS3_READ);
		break;
	}
	case NFS3_READDIRPLUS:
		observe_readdirplus(e, req, &r->readdirplus);
		break;
	case NFS3_FSSTAT:
		engine_observe_post(e, &a->fsstat.fsroot,
				    ok ? &r->fsstat.FSSTAT3res_u.resok.obj_attributes
				       : &r->fsstat.FSSTAT3res_u.resfail.obj_attributes);
		break;
	case NFS3_FSINFO:
		engine_observe_post(e, &a->fsinfo.fsroot,
				    ok ? &r->fsinfo.FSINFO3res_u.resok.obj_attributes
				       : &r->fsinfo.FSINFO3res_u.resfail.obj_attributes);
		break;
	case NFS3_PATHCONF:
		engine_observe_post(e, &a->pathconf.object,
				    ok ? &r->pathconf.PATHCONF3res_u.resok.obj_attributes
				       : &r->pathconf.PATHCONF3res_u.resfail.obj_attributes);
		break;
	case NFS3_COMMIT:
		observe_wcc(e, &a->commit.file,
			    ok ? &r->commit.COMMIT3res_u.resok.file_wcc
			       : &r->commit.COMMIT3res_u.resfail.file_wcc);
		break;
	default:
		break;
	}
}
