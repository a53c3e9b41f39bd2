/* Answering from the metadata cache (ttl mode): GETATTR, ACCESS, LOOKUP,
 * READDIR(PLUS), READLINK and FS* calls whose answer the cache holds fresh
 * (meta.c), given to a caller only with evidence that the server would
 * give it the same (engine_evidence()). A handler: called by the
 * dispatcher (engine.c) before a call is forwarded; above the reply
 * pipeline and the store of records it reads. */
#include "engine_int.h"

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

/* Cached READDIRPLUS pages carry entry attributes from when they were
 * listed: the freshest known replace them (or the page is not used when an
 * entry's attributes are gone). */
static int refresh_page(struct engine *e, READDIRPLUS3res *r)
{
	entryplus3 *en = r->READDIRPLUS3res_u.resok.reply.entries;

	while (en) {
		entryplus3 ent;
		memcpy(&ent, en, sizeof(ent));
		if (ent.name_handle.handle_follows) {
			post_op_attr pa;
			attrs_post(e, &ent.name_handle.post_op_fh3_u.handle, &pa);
			if (!pa.attributes_follow && ent.name_attributes.attributes_follow)
				return -ENOENT;
			ent.name_attributes = pa;
			memcpy(en, &ent, sizeof(ent));
		}
		en = ent.nextentry;
	}
	return 0;
}

static int answer_blob(struct engine *e, struct cfs_req *req)
{
	union nfs3_res res;
	struct meta_rec rec;
	const nfs_fh3 *obj;
	post_op_attr *pa;
	uint32_t want = 0; /* FSSTAT, FSINFO, PATHCONF: anyone */
	struct engine_call call;

	engine_call_of(&call, req);
	if (meta_get_reply(e, &call, &res, &rec) != 0)
		return -ENOENT;
	switch (req->proc) {
	case NFS3_READDIRPLUS:
		obj = &req->args.readdirplus.dir;
		pa = &res.readdirplus.READDIRPLUS3res_u.resok.dir_attributes;
		/* the listing and the entries' handles: read and search */
		want = ACCESS3_READ | ACCESS3_LOOKUP;
		if (refresh_page(e, &res.readdirplus) != 0) {
			meta_rec_free(&rec);
			return -ENOENT;
		}
		break;
	case NFS3_READDIR:
		obj = &req->args.readdir.dir;
		pa = &res.readdir.READDIR3res_u.resok.dir_attributes;
		want = ACCESS3_READ;
		break;
	case NFS3_READLINK:
		obj = &req->args.readlink.symlink;
		pa = &res.readlink.READLINK3res_u.resok.symlink_attributes;
		want = ACCESS3_READ;
		break;
	case NFS3_FSSTAT:
		obj = &req->args.fsstat.fsroot;
		pa = &res.fsstat.FSSTAT3res_u.resok.obj_attributes;
		break;
	case NFS3_FSINFO:
		obj = &req->args.fsinfo.fsroot;
		pa = &res.fsinfo.FSINFO3res_u.resok.obj_attributes;
		break;
	default:
		obj = &req->args.pathconf.object;
		pa = &res.pathconf.PATHCONF3res_u.resok.obj_attributes;
		break;
	}
	if (want ? !allowed(e, req, obj, want, pa) : (attrs_post(e, obj, pa), 0)) {
		meta_rec_free(&rec);
		return -ENOENT;
	}
	engine_count_reply(e, req, NFS3_OK);
	engine_reply(e, req, &res);
	meta_rec_free(&rec);
	return 0;
}

/* ttl mode: answers req from the cache when it can (0), else -ENOENT and
 * the caller forwards it. */
int meta_answer(struct engine *e, struct cfs_req *req)
{
	int rc;

	if (!meta_enabled(e))
		return -ENOENT;
	switch (req->proc) {
	case NFS3_GETATTR:
		rc = answer_getattr(e, req);
		break;
	case NFS3_ACCESS:
		rc = answer_access(e, req);
		break;
	case NFS3_LOOKUP:
		rc = answer_lookup(e, req);
		break;
	case NFS3_READDIR:
	case NFS3_READDIRPLUS:
	case NFS3_READLINK:
	case NFS3_FSSTAT:
	case NFS3_FSINFO:
	case NFS3_PATHCONF:
		rc = answer_blob(e, req);
		break;
	default:
		return -ENOENT;
	}
	if (rc == 0)
		e->ctr.meta_hits++;
	else
		e->ctr.meta_misses++;
	return rc;
}
