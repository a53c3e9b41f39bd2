/* proto/procs.c: the procedure table. Every row the wire serves is
 * complete, and the rows say what the switches they replaced said: which
 * calls the duplicate-request cache keeps, which mutate, which the
 * metadata cache may answer, and which handle each call is about; and the
 * engine's rows (cachefsd/engine/engine_procs.c) say what the engine's switches
 * said: which attributes of which handle each reply carries, the evidence
 * it proves, what the metadata cache keeps and drops, how a call is taken. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../../cachefsd/engine/engine_int.h"
#include "../../cachefsd/engine/engine_procs.h"
#include "../../proto/proto_int.h"
#include "procs.h"
#include "proto.h"

static int in(uint32_t proc, const uint32_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == proc)
			return 1;
	return 0;
}

static void test_rows_complete(void **state)
{
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct proc_row *r = proc_row(NFS_PROGRAM, p);
		assert_non_null(r);
		assert_non_null(r->name);
		assert_non_null(r->check);
		assert_non_null(r->dec);
		assert_non_null(r->enc);
		assert_non_null(r->send); /* every NFSv3 call can be forwarded */
	}
	for (uint32_t p = 0; p < MOUNT3_NPROCS; p++) {
		const struct proc_row *r = proc_row(MOUNT_PROGRAM, p);
		assert_non_null(r);
		assert_non_null(r->check);
		assert_null(r->send); /* MOUNT is answered by the proxy */
	}
	for (uint32_t p = 0; p < NSM1_NPROCS; p++) {
		const struct proc_row *r = proc_row(NSM_PROGRAM, p);
		assert_non_null(r);
		assert_non_null(r->check);
		assert_null(r->send); /* NSM is answered by the proxy (locks/nsm.c) */
	}
	assert_null(proc_row(NSM_PROGRAM, NSM1_NPROCS));
	assert_non_null(proc_prog(NSM_PROGRAM, NSM_V1));
	/* UDP: NSM (sm-notify sends SM_NOTIFY by UDP only); NFS and MOUNT: TCP */
	assert_true(proc_prog(NSM_PROGRAM, NSM_V1)->flags & PROG_UDP);
	assert_true(proc_udp(NSM_PROGRAM));
	assert_false(proc_udp(NFS_PROGRAM));
	assert_false(proc_udp(MOUNT_PROGRAM));
	/* registered: sm-notify finds NSM through the proxy host's portmapper */
	assert_true(proc_prog(NSM_PROGRAM, NSM_V1)->flags & PROG_REGISTER);
	assert_null(proc_row(NFS_PROGRAM, NFS3_NPROCS));
	assert_null(proc_row(MOUNT_PROGRAM, MOUNT3_NPROCS));
	assert_non_null(proc_prog(NLM_PROGRAM, NLM_V4));
	assert_null(proc_prog(NLM_PROGRAM, 3)); /* v1 and v3: PROG_MISMATCH 4..4 */
	assert_non_null(proc_prog(NFS_PROGRAM, NFS_V3));
	assert_null(proc_prog(NFS_PROGRAM, 2));
	assert_non_null(proc_prog(MOUNT_PROGRAM, MOUNT_V3));
	assert_non_null(proc_prog(MOUNT_PROGRAM, MOUNT_V1)); /* showmount asks v1 */
	assert_null(proc_prog(MOUNT_PROGRAM, 2));
}

/* Versions: PROG_MISMATCH names the table's range; a version's rows are
 * its own (v1 MNT's result is the 32-byte fhstatus, v3's the mountres3);
 * names and counters come from the newest. */
static void test_versions(void **state)
{
	uint32_t lo = 0, hi = 0;
	size_t n = 0, reg = 0;
	const struct prog_row *p = proc_progs(&n);

	(void)state;
	assert_int_equal(proc_versions(MOUNT_PROGRAM, &lo, &hi), 0);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 3);
	assert_int_equal(proc_versions(NFS_PROGRAM, &lo, &hi), 0);
	assert_int_equal(lo, 3);
	assert_int_equal(hi, 3);
	assert_int_equal(proc_versions(NLM_PROGRAM, &lo, &hi), 0);
	assert_int_equal(lo, 4);
	assert_int_equal(hi, 4);
	assert_int_equal(proc_versions(100099, &lo, &hi), -ENOENT);
	assert_ptr_equal(proc_row_vers(MOUNT_PROGRAM, MOUNT_V1, MOUNT1_MNT)->enc,
	                 (zdrproc_t)zdr_mountres1);
	assert_ptr_equal(proc_row_vers(MOUNT_PROGRAM, MOUNT_V3, MOUNT3_MNT)->enc,
	                 (zdrproc_t)zdr_mountres3);
	assert_ptr_equal(proc_row(MOUNT_PROGRAM, MOUNT3_MNT),
	                 proc_row_vers(MOUNT_PROGRAM, MOUNT_V3, MOUNT3_MNT));
	assert_ptr_equal(proc_row_vers(MOUNT_PROGRAM, MOUNT_V1, MOUNT1_EXPORT)->enc,
	                 (zdrproc_t)zdr_exports);
	assert_null(proc_row_vers(MOUNT_PROGRAM, 2, MOUNT3_NULL));
	/* every program row served is registered with rpcbind */
	for (size_t i = 0; i < n; i++)
		reg += !!(p[i].flags & PROG_REGISTER);
	assert_int_equal(n, 5); /* NFS 3, MOUNT 3 and 1, NSM 1, NLM 4 */
	assert_int_equal(reg, 5);
}

static void test_flags(void **state)
{
	static const uint32_t drc[] = {NFS3_SETATTR, NFS3_CREATE, NFS3_MKDIR,
	                               NFS3_SYMLINK, NFS3_MKNOD,  NFS3_REMOVE,
	                               NFS3_RMDIR,   NFS3_RENAME, NFS3_LINK};
	static const uint32_t cached[] = {NFS3_GETATTR,  NFS3_LOOKUP,  NFS3_ACCESS,
	                                  NFS3_READLINK, NFS3_READDIR, NFS3_READDIRPLUS,
	                                  NFS3_FSSTAT,   NFS3_FSINFO,  NFS3_PATHCONF};
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		int d = in(p, drc, sizeof(drc) / sizeof(drc[0]));
		assert_int_equal(drc_wanted(NFS_PROGRAM, p), d);
		/* WRITE and COMMIT mutate but are idempotent */
		assert_int_equal(proto_proc_mutates(p), d || p == NFS3_WRITE || p == NFS3_COMMIT);
		assert_int_equal(!!(proc_row(NFS_PROGRAM, p)->flags & PROC_CACHED),
		                 in(p, cached, sizeof(cached) / sizeof(cached[0])));
	}
	for (uint32_t p = 0; p < MOUNT3_NPROCS; p++)
		assert_int_equal(drc_wanted(MOUNT_PROGRAM, p), 0);
	assert_int_equal(drc_wanted(NFS_PROGRAM, NFS3_NPROCS), 0);
	assert_int_equal(proto_proc_mutates(NFS3_NPROCS), 0);
}

static void test_handles(void **state)
{
	union cfs_args a;
	(void)state;
	assert_ptr_equal(proc_fh(proc_row(NFS_PROGRAM, NFS3_LOOKUP), &a), &a.lookup.what.dir);
	assert_ptr_equal(proc_fh(proc_row(NFS_PROGRAM, NFS3_READ), &a), &a.read.file);
	assert_ptr_equal(proc_fh(proc_row(NFS_PROGRAM, NFS3_FSINFO), &a), &a.fsinfo.fsroot);
	/* directory operations: which handle is stale is unknown */
	assert_null(proc_fh(proc_row(NFS_PROGRAM, NFS3_CREATE), &a));
	assert_null(proc_fh(proc_row(NFS_PROGRAM, NFS3_RENAME), &a));
	assert_null(proc_fh(proc_row(NFS_PROGRAM, NFS3_NULL), &a));
	assert_null(proc_fh(proc_row(MOUNT_PROGRAM, MOUNT3_MNT), &a));
	assert_null(proc_fh(NULL, &a));
}

/* --- the engine's rows ------------------------------------------------------ */

/* One entry as the old switch in observe_result said it: kind, the handle
 * (the post_op_fh3 for a new object), the attributes. */
struct want_ent {
	int what;
	const void *fh, *at;
	uint32_t bits;
};

static union cfs_args A;
static union nfs3_res R;

/* What observe_result's switch did for proc in the arm (ARM_OK / ARM_FAIL),
 * in its order; returns how many. */
static int switch_said(uint32_t proc, int arm, struct want_ent *w)
{
	int ok = arm == ARM_OK, n = 0;
#define E(wh, f, a, b) (w[n++] = (struct want_ent){wh, f, a, b})
	switch (proc) {
	case NFS3_GETATTR:
		if (ok)
			E(OBS_FATTR, &A.getattr.object,
			  &R.getattr.GETATTR3res_u.resok.obj_attributes, 0);
		break;
	case NFS3_SETATTR:
		E(OBS_WCC, &A.setattr.object,
		  ok ? &R.setattr.SETATTR3res_u.resok.obj_wcc
		     : &R.setattr.SETATTR3res_u.resfail.obj_wcc,
		  0);
		break;
	case NFS3_LOOKUP:
		E(OBS_EVIDENCE, &A.lookup.what.dir,
		  ok ? &R.lookup.LOOKUP3res_u.resok.dir_attributes
		     : &R.lookup.LOOKUP3res_u.resfail.dir_attributes,
		  ACCESS3_LOOKUP);
		if (ok) {
			E(OBS_POST, &R.lookup.LOOKUP3res_u.resok.object,
			  &R.lookup.LOOKUP3res_u.resok.obj_attributes, 0);
			E(OBS_POST, &A.lookup.what.dir, &R.lookup.LOOKUP3res_u.resok.dir_attributes,
			  0);
		} else {
			E(OBS_POST, &A.lookup.what.dir,
			  &R.lookup.LOOKUP3res_u.resfail.dir_attributes, 0);
		}
		break;
	case NFS3_ACCESS:
		E(OBS_POST, &A.access.object,
		  ok ? &R.access.ACCESS3res_u.resok.obj_attributes
		     : &R.access.ACCESS3res_u.resfail.obj_attributes,
		  0);
		if (ok)
			E(OBS_MORE, NULL, NULL, 0);
		break;
	case NFS3_READLINK: {
		const void *pa = ok ? &R.readlink.READLINK3res_u.resok.symlink_attributes
		                    : &R.readlink.READLINK3res_u.resfail.symlink_attributes;
		E(OBS_POST, &A.readlink.symlink, pa, 0);
		E(OBS_EVIDENCE, &A.readlink.symlink, pa, ACCESS3_READ);
		break;
	}
	case NFS3_READ: {
		const void *pa = ok ? &R.read.READ3res_u.resok.file_attributes
		                    : &R.read.READ3res_u.resfail.file_attributes;
		E(OBS_POST, &A.read.file, pa, 0);
		E(OBS_EVIDENCE, &A.read.file, pa, ACCESS3_READ);
		break;
	}
	case NFS3_WRITE:
		E(OBS_WCC, &A.write.file,
		  ok ? &R.write.WRITE3res_u.resok.file_wcc : &R.write.WRITE3res_u.resfail.file_wcc,
		  0);
		break;
#define MAKES(x, X, U)                                                                             \
	case NFS3_##X:                                                                             \
		if (ok)                                                                            \
			E(OBS_POST, &R.x.U.resok.obj, &R.x.U.resok.obj_attributes, 0);             \
		E(OBS_WCC, &A.x.where.dir, ok ? &R.x.U.resok.dir_wcc : &R.x.U.resfail.dir_wcc, 0); \
		break;
		MAKES(create, CREATE, CREATE3res_u)
		MAKES(mkdir, MKDIR, MKDIR3res_u)
		MAKES(symlink, SYMLINK, SYMLINK3res_u)
		MAKES(mknod, MKNOD, MKNOD3res_u)
#undef MAKES
	case NFS3_REMOVE:
		E(OBS_WCC, &A.remove.object.dir,
		  ok ? &R.remove.REMOVE3res_u.resok.dir_wcc
		     : &R.remove.REMOVE3res_u.resfail.dir_wcc,
		  0);
		break;
	case NFS3_RMDIR:
		E(OBS_WCC, &A.rmdir.object.dir,
		  ok ? &R.rmdir.RMDIR3res_u.resok.dir_wcc : &R.rmdir.RMDIR3res_u.resfail.dir_wcc,
		  0);
		break;
	case NFS3_RENAME:
		E(OBS_WCC, &A.rename.from.dir,
		  ok ? &R.rename.RENAME3res_u.resok.fromdir_wcc
		     : &R.rename.RENAME3res_u.resfail.fromdir_wcc,
		  0);
		E(OBS_WCC, &A.rename.to.dir,
		  ok ? &R.rename.RENAME3res_u.resok.todir_wcc
		     : &R.rename.RENAME3res_u.resfail.todir_wcc,
		  0);
		break;
	case NFS3_LINK:
		E(OBS_POST, &A.link.file,
		  ok ? &R.link.LINK3res_u.resok.file_attributes
		     : &R.link.LINK3res_u.resfail.file_attributes,
		  0);
		E(OBS_WCC, &A.link.link.dir,
		  ok ? &R.link.LINK3res_u.resok.linkdir_wcc
		     : &R.link.LINK3res_u.resfail.linkdir_wcc,
		  0);
		break;
	case NFS3_READDIR: {
		const void *pa = ok ? &R.readdir.READDIR3res_u.resok.dir_attributes
		                    : &R.readdir.READDIR3res_u.resfail.dir_attributes;
		E(OBS_POST, &A.readdir.dir, pa, 0);
		E(OBS_EVIDENCE, &A.readdir.dir, pa, ACCESS3_READ);
		break;
	}
	case NFS3_READDIRPLUS: {
		const void *pa = ok ? &R.readdirplus.READDIRPLUS3res_u.resok.dir_attributes
		                    : &R.readdirplus.READDIRPLUS3res_u.resfail.dir_attributes;
		E(OBS_POST, &A.readdirplus.dir, pa, 0);
		if (ok)
			E(OBS_MORE, NULL, NULL, 0); /* the entries */
		E(OBS_EVIDENCE, &A.readdirplus.dir, pa, ACCESS3_READ);
		break;
	}
	case NFS3_FSSTAT:
		E(OBS_POST, &A.fsstat.fsroot,
		  ok ? &R.fsstat.FSSTAT3res_u.resok.obj_attributes
		     : &R.fsstat.FSSTAT3res_u.resfail.obj_attributes,
		  0);
		break;
	case NFS3_FSINFO:
		E(OBS_POST, &A.fsinfo.fsroot,
		  ok ? &R.fsinfo.FSINFO3res_u.resok.obj_attributes
		     : &R.fsinfo.FSINFO3res_u.resfail.obj_attributes,
		  0);
		break;
	case NFS3_PATHCONF:
		E(OBS_POST, &A.pathconf.object,
		  ok ? &R.pathconf.PATHCONF3res_u.resok.obj_attributes
		     : &R.pathconf.PATHCONF3res_u.resfail.obj_attributes,
		  0);
		break;
	case NFS3_COMMIT:
		E(OBS_WCC, &A.commit.file,
		  ok ? &R.commit.COMMIT3res_u.resok.file_wcc
		     : &R.commit.COMMIT3res_u.resfail.file_wcc,
		  0);
		break;
	default:
		break;
	}
#undef E
	return n;
}

static void test_engine_observe(void **state)
{
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct engine_proc *ep = engine_proc(p);
		assert_non_null(ep);
		for (int arm = ARM_OK; arm <= ARM_FAIL; arm++) {
			struct want_ent w[EP_MAXOBS];
			int n = switch_said(p, arm, w), k = 0, attrs = 0;

			for (int i = 0; i < EP_MAXOBS && ep->obs[i].what != OBS_END; i++) {
				const struct obs_ent *o = &ep->obs[i];
				if (o->arm != arm)
					continue;
				assert_true(k < n);
				assert_int_equal(o->what, w[k].what);
				attrs += o->what != OBS_EVIDENCE && o->what != OBS_MORE;
				if (o->what == OBS_MORE) {
					assert_non_null(ep->observe_more);
					k++;
					continue;
				}
				const char *base =
				    o->fh_in == FH_ARGS ? (const char *)&A : (const char *)&R;
				assert_ptr_equal(base + o->fh_off, w[k].fh);
				assert_ptr_equal((const char *)&R + o->at_off, w[k].at);
				assert_int_equal(o->bits, w[k].bits);
				/* found or not: only LOOKUP's NOENT proves a search */
				assert_int_equal(o->noent_allowed,
				                 o->what == OBS_EVIDENCE && p == NFS3_LOOKUP);
				k++;
			}
			assert_int_equal(k, n);
			/* every reply but NULL's (and a failed GETATTR's) carries
			 * attributes, and its row says where */
			assert_int_equal(attrs > 0,
			                 p != NFS3_NULL && !(p == NFS3_GETATTR && arm == ARM_FAIL));
		}
	}
	/* new objects: a post_op_fh3 of the result */
	assert_int_equal(engine_proc(NFS3_CREATE)->obs[0].fh_in, FH_RES_OPT);
	assert_int_equal(engine_proc(NFS3_LOOKUP)->obs[2].fh_in, FH_RES);
	assert_null(engine_proc(NFS3_NPROCS));
}

static void test_engine_meta(void **state)
{
	static const struct {
		uint32_t proc;
		char type;
	} blobs[] = {{NFS3_READLINK, 'r'}, {NFS3_FSSTAT, 's'},  {NFS3_FSINFO, 'i'},
	             {NFS3_PATHCONF, 'c'}, {NFS3_READDIR, 'D'}, {NFS3_READDIRPLUS, 'P'}};
	static const uint32_t mk[] = {NFS3_CREATE, NFS3_MKDIR, NFS3_SYMLINK, NFS3_MKNOD};
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct engine_proc *ep = engine_proc(p);
		char type = 0;
		for (size_t i = 0; i < sizeof(blobs) / sizeof(blobs[0]); i++)
			if (blobs[i].proc == p)
				type = blobs[i].type;
		assert_int_equal(ep->blob, type);
		if (type) { /* kept replies are of answerable calls, keyed by a handle */
			assert_true(proc_row(NFS_PROGRAM, p)->flags & PROC_CACHED);
			assert_non_null(proc_fh(proc_row(NFS_PROGRAM, p), &A));
		}
		assert_int_equal(ep->page_ncounts != 0, p == NFS3_READDIR || p == NFS3_READDIRPLUS);
		if (ep->page_ncounts) { /* the room a stored page needs, where it ends */
			assert_non_null(proc_row(NFS_PROGRAM, p)->reply_want_args);
			assert_non_null(ep->page_end);
		}
		assert_int_equal(ep->name, p == NFS3_LOOKUP                        ? NAME_LOOKUP
		                           : in(p, mk, sizeof(mk) / sizeof(mk[0])) ? NAME_NEW
		                                                                   : NAME_NONE);
		assert_int_equal(ep->record_more != NULL, p == NFS3_READDIRPLUS);
		assert_int_equal(ep->as_told != NULL, p == NFS3_FSINFO);
	}
	/* the page keys: cookie, verifier, counts */
	const struct engine_proc *rdp = engine_proc(NFS3_READDIRPLUS);
	assert_ptr_equal((char *)&A + rdp->page_cookie, &A.readdirplus.cookie);
	assert_ptr_equal((char *)&A + rdp->page_verf, &A.readdirplus.cookieverf);
	assert_int_equal(rdp->page_ncounts, 2);
	assert_ptr_equal((char *)&A + rdp->page_count[0], &A.readdirplus.dircount);
	assert_ptr_equal((char *)&A + rdp->page_count[1], &A.readdirplus.maxcount);
	/* the verifier a client is told: the reply's */
	assert_ptr_equal((char *)&R + rdp->page_res_verf,
	                 &R.readdirplus.READDIRPLUS3res_u.resok.cookieverf);
	const struct engine_proc *rd = engine_proc(NFS3_READDIR);
	assert_int_equal(rd->page_ncounts, 1);
	assert_ptr_equal((char *)&A + rd->page_count[0], &A.readdir.count);
	assert_ptr_equal((char *)&R + rd->page_res_verf, &R.readdir.READDIR3res_u.resok.cookieverf);
	/* the names recorded */
	assert_ptr_equal((char *)&A + engine_proc(NFS3_LOOKUP)->name_args, &A.lookup.what);
	assert_ptr_equal((char *)&R + engine_proc(NFS3_LOOKUP)->name_res,
	                 &R.lookup.LOOKUP3res_u.resok.object);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_MKDIR)->name_args, &A.mkdir.where);
	assert_ptr_equal((char *)&R + engine_proc(NFS3_MKDIR)->name_res,
	                 &R.mkdir.MKDIR3res_u.resok.obj);
}

/* What meta_mutation's switch deleted, in its order. */
static int inv_said(uint32_t proc, struct inv_ent *w)
{
	int n = 0;
#define V(wh, ptr) (w[n++] = (struct inv_ent){wh, (size_t)((const char *)(ptr) - (char *)&A)})
	switch (proc) {
	case NFS3_SETATTR:
		V(INV_ATTRS, &A.setattr.object);
		break;
	case NFS3_WRITE:
		V(INV_ATTRS, &A.write.file);
		break;
	case NFS3_COMMIT:
		V(INV_ATTRS, &A.commit.file);
		break;
	case NFS3_CREATE:
		V(INV_NAME, &A.create.where);
		V(INV_DIR, &A.create.where);
		break;
	case NFS3_MKDIR:
		V(INV_NAME, &A.mkdir.where);
		V(INV_DIR, &A.mkdir.where);
		break;
	case NFS3_SYMLINK:
		V(INV_NAME, &A.symlink.where);
		V(INV_DIR, &A.symlink.where);
		break;
	case NFS3_MKNOD:
		V(INV_NAME, &A.mknod.where);
		V(INV_DIR, &A.mknod.where);
		break;
	case NFS3_REMOVE:
		V(INV_NAME, &A.remove.object);
		V(INV_DIR, &A.remove.object);
		break;
	case NFS3_RMDIR:
		V(INV_NAME, &A.rmdir.object);
		V(INV_DIR, &A.rmdir.object);
		break;
	case NFS3_RENAME:
		V(INV_NAME, &A.rename.from);
		V(INV_NAME, &A.rename.to);
		V(INV_DIR, &A.rename.from);
		V(INV_DIR, &A.rename.to);
		break;
	case NFS3_LINK:
		V(INV_ATTRS, &A.link.file);
		V(INV_NAME, &A.link.link);
		V(INV_DIR, &A.link.link);
		break;
	default:
		break;
	}
#undef V
	return n;
}

static void test_engine_mutations(void **state)
{
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct engine_proc *ep = engine_proc(p);
		struct inv_ent w[EP_MAXINV];
		int n = inv_said(p, w), k = 0;

		for (; k < EP_MAXINV && ep->inv[k].what != INV_END; k++) {
			assert_true(k < n);
			assert_int_equal(ep->inv[k].what, w[k].what);
			assert_int_equal(ep->inv[k].off, w[k].off);
		}
		assert_int_equal(k, n);
		/* every mutating call makes something stale, and only they do */
		assert_int_equal(n > 0, proto_proc_mutates(p));
		/* the names whose objects go or are replaced */
		assert_int_equal(ep->nnamed, p == NFS3_RENAME                      ? 2
		                             : p == NFS3_REMOVE || p == NFS3_RMDIR ? 1
		                                                                   : 0);
		assert_int_equal(ep->purge_named, p == NFS3_RMDIR);
		assert_int_equal(ep->prepare != NULL, p == NFS3_WRITE);
	}
	assert_ptr_equal((char *)&A + engine_proc(NFS3_REMOVE)->named[0], &A.remove.object);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_RMDIR)->named[0], &A.rmdir.object);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_RENAME)->named[0], &A.rename.from);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_RENAME)->named[1], &A.rename.to);
}

static void test_engine_dispatch(void **state)
{
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct engine_proc *ep = engine_proc(p);
		int cached = !!(proc_row(NFS_PROGRAM, p)->flags & PROC_CACHED);

		assert_int_equal(ep->dispatch, p == NFS3_NULL   ? ED_PROXY
		                               : p == NFS3_READ ? ED_READ
		                               : cached         ? ED_META
		                                                : ED_FORWARD);
		assert_int_equal(ep->nclamp, p == NFS3_READDIRPLUS                 ? 2
		                             : p == NFS3_READ || p == NFS3_READDIR ? 1
		                                                                   : 0);
	}
	assert_ptr_equal((char *)&A + engine_proc(NFS3_READ)->clamp[0], &A.read.count);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_READDIR)->clamp[0], &A.readdir.count);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_READDIRPLUS)->clamp[0],
	                 &A.readdirplus.maxcount);
	assert_ptr_equal((char *)&A + engine_proc(NFS3_READDIRPLUS)->clamp[1],
	                 &A.readdirplus.dircount);
}

/* What the metadata cache answers with, as meta_answer()'s switch said:
 * GETATTR, ACCESS and LOOKUP by their own records; the kept replies with
 * the attributes of their resok arm, for a caller with evidence of the
 * listed bits (the FS* answers: anyone); READDIRPLUS's entries refreshed. */
static void test_engine_answers(void **state)
{
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct engine_proc *ep = engine_proc(p);

		assert_int_equal(ep->answer != ANS_NONE, ep->dispatch == ED_META);
		assert_int_equal(ep->answer == ANS_BLOB, ep->blob != 0);
		assert_int_equal(ep->answer_refresh != NULL, p == NFS3_READDIRPLUS);
	}
	assert_int_equal(engine_proc(NFS3_GETATTR)->answer, ANS_GETATTR);
	assert_int_equal(engine_proc(NFS3_ACCESS)->answer, ANS_ACCESS);
	assert_int_equal(engine_proc(NFS3_LOOKUP)->answer, ANS_LOOKUP);
#define AT(p) ((char *)&R + engine_proc(p)->answer_at)
	assert_ptr_equal(AT(NFS3_READDIRPLUS),
	                 &R.readdirplus.READDIRPLUS3res_u.resok.dir_attributes);
	assert_ptr_equal(AT(NFS3_READDIR), &R.readdir.READDIR3res_u.resok.dir_attributes);
	assert_ptr_equal(AT(NFS3_READLINK), &R.readlink.READLINK3res_u.resok.symlink_attributes);
	assert_ptr_equal(AT(NFS3_FSSTAT), &R.fsstat.FSSTAT3res_u.resok.obj_attributes);
	assert_ptr_equal(AT(NFS3_FSINFO), &R.fsinfo.FSINFO3res_u.resok.obj_attributes);
	assert_ptr_equal(AT(NFS3_PATHCONF), &R.pathconf.PATHCONF3res_u.resok.obj_attributes);
#undef AT
	assert_int_equal(engine_proc(NFS3_READDIRPLUS)->answer_want, ACCESS3_READ | ACCESS3_LOOKUP);
	assert_int_equal(engine_proc(NFS3_READDIR)->answer_want, ACCESS3_READ);
	assert_int_equal(engine_proc(NFS3_READLINK)->answer_want, ACCESS3_READ);
	assert_int_equal(engine_proc(NFS3_FSSTAT)->answer_want, 0);
	assert_int_equal(engine_proc(NFS3_FSINFO)->answer_want, 0);
	assert_int_equal(engine_proc(NFS3_PATHCONF)->answer_want, 0);
}

/* NLM v4: a LOCK call's arguments, encoded with libnfs's own encoder. */
static uint32_t nlm_lock_bytes(uint8_t *buf, uint32_t cap, uint32_t fhlen, const char *caller,
                               const char *oh)
{
	static char fh[NLM4_MAXFH + 8];
	NLM4_LOCKargs a;
	ZDR z;

	memset(&a, 0, sizeof(a));
	memset(fh, 0xab, sizeof(fh));
	a.cookie.data.data_len = 4;
	a.cookie.data.data_val = "ck01";
	a.block = 1;
	a.exclusive = 1;
	a.lock.caller_name = (char *)caller;
	a.lock.fh.data.data_len = fhlen;
	a.lock.fh.data.data_val = fh;
	a.lock.oh = (char *)oh;
	a.lock.svid = 42;
	a.lock.l_len = 10;
	zdrmem_create(&z, (char *)buf, cap, ZDR_ENCODE);
	assert_true(zdr_NLM4_LOCKargs(&z, &a));
	return zdr_getpos(&z);
}

static void test_nlm_rows(void **state)
{
	static uint8_t buf[8192];
	static char big[NLM4_MAXSTRLEN + 2];
	uint32_t n;
	(void)state;
	for (uint32_t p = 0; p < NLM4_NPROCS; p++) {
		const struct proc_row *r = proc_row(NLM_PROGRAM, p);
		if (p >= 16 && p <= 19) {
			assert_null(r); /* not part of version 4: PROC_UNAVAIL */
			continue;
		}
		assert_non_null(r);
		assert_non_null(r->check);
		assert_non_null(r->dec);
		assert_non_null(r->enc);
		assert_null(r->send); /* the locks room forwards them */
		assert_int_equal(drc_wanted(NLM_PROGRAM, p), 0);
	}
	assert_null(proc_row(NLM_PROGRAM, NLM4_NPROCS));
	/* a LOCK decodes to what the client sent */
	n = nlm_lock_bytes(buf, sizeof(buf), 32, "hostA", "owner-1");
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n), 0);
	struct cfs_req *req = proto_req_decode(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n);
	assert_non_null(req);
	assert_string_equal(req->args.nlm_lock.lock.caller_name, "hostA");
	assert_string_equal(req->args.nlm_lock.lock.oh, "owner-1");
	assert_int_equal(req->args.nlm_lock.lock.svid, 42);
	uint32_t len;
	const uint8_t *raw = proto_req_args(req, &len);
	assert_int_equal(len, n);
	assert_memory_equal(raw, buf, n); /* forwarded unchanged */
	proto_req_free(req);
	/* short arguments, a handle above 64 bytes, a caller_name above
	 * LM_MAXSTRLEN, an owner handle above MAXNETOBJ_SZ: GARBAGE_ARGS */
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n - 4), -EBADMSG);
	n = nlm_lock_bytes(buf, sizeof(buf), NLM4_MAXFH + 1, "hostA", "o");
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n), -EBADMSG);
	memset(big, 'x', sizeof(big) - 1);
	n = nlm_lock_bytes(buf, sizeof(buf), 32, big, "o");
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n), -EBADMSG);
	n = nlm_lock_bytes(buf, sizeof(buf), 32, "hostA", big);
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n), -EBADMSG);
	assert_null(proto_req_decode(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n));
	/* an absurd length (top bit set) */
	n = nlm_lock_bytes(buf, sizeof(buf), 32, "hostA", "o");
	buf[0] = 0x80;
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_LOCK, buf, n), -EBADMSG);
	/* the shapes composed in proto/nlm.c decode what they encode */
	NLM4_SHAREargs sa, sd;
	ZDR z;
	char fh[8] = "fh-bytes";
	memset(&sa, 0, sizeof(sa));
	sa.cookie.data.data_len = 0;
	sa.share.caller_name = "hostB";
	sa.share.fh.data.data_len = 8;
	sa.share.fh.data.data_val = fh;
	sa.share.oh = "oh";
	sa.share.mode = 1;
	sa.share.access = 3;
	zdrmem_create(&z, (char *)buf, sizeof(buf), ZDR_ENCODE);
	assert_true(zdr_NLM4_SHAREargs(&z, &sa));
	n = zdr_getpos(&z);
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_SHARE, buf, n), 0);
	req = proto_req_decode(NLM_PROGRAM, NLM_V4, NLM4_SHARE, buf, n);
	assert_non_null(req);
	sd = req->args.nlm_share;
	assert_string_equal(sd.share.caller_name, "hostB");
	assert_int_equal(sd.share.access, 3);
	proto_req_free(req);
	buf[n - 8] = 9; /* access out of range */
	assert_int_equal(proto_check_args(NLM_PROGRAM, NLM_V4, NLM4_SHARE, buf, n), -EBADMSG);
	NLM4_NOTIFYargs na = {"hostC", 7};
	zdrmem_create(&z, (char *)buf, sizeof(buf), ZDR_ENCODE);
	assert_true(zdr_NLM4_NOTIFYargs(&z, &na));
	n = zdr_getpos(&z);
	req = proto_req_decode(NLM_PROGRAM, NLM_V4, NLM4_FREE_ALL, buf, n);
	assert_non_null(req);
	assert_string_equal(req->args.nlm_notify.name, "hostC");
	assert_int_equal(req->args.nlm_notify.state, 7);
	proto_req_free(req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows_complete),
	    cmocka_unit_test(test_versions),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_handles),
	    cmocka_unit_test(test_engine_observe),
	    cmocka_unit_test(test_engine_meta),
	    cmocka_unit_test(test_engine_mutations),
	    cmocka_unit_test(test_engine_dispatch),
	    cmocka_unit_test(test_nlm_rows),
	    cmocka_unit_test(test_engine_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
