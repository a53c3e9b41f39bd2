/* The procedure table (include/procs.h): one row per procedure, with the
 * walker that bounds its argument bytes, its libnfs decoder and encoder,
 * how large its reply can be, whether it mutates, and how it is sent
 * upstream. The walkers of the argument shapes (sattr3, createhow3, ...)
 * live here beside the rows that use them. */
#include "nlm.h"
#include "procs.h"
#include "xdrwalk.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nsm.h>

/* --- argument shapes ------------------------------------------------------ */

static void x_settime(struct xcur *c)
{
	/* DONT_CHANGE, SET_TO_SERVER_TIME, SET_TO_CLIENT_TIME + nfstime3 */
	if (x_enum(c, 0, 2) == 2)
		x_skip(c, 8);
}

static void x_sattr3(struct xcur *c)
{
	for (int i = 0; i < 3; i++) /* mode, uid, gid */
		if (x_bool(c))
			x_skip(c, 4);
	if (x_bool(c)) /* size */
		x_skip(c, 8);
	x_settime(c); /* atime */
	x_settime(c); /* mtime */
}

static void x_createhow(struct xcur *c)
{
	switch (x_enum(c, UNCHECKED, EXCLUSIVE)) {
	case UNCHECKED:
	case GUARDED:
		x_sattr3(c);
		break;
	case EXCLUSIVE:
		x_skip(c, NFS3_CREATEVERFSIZE);
		break;
	}
}

static void x_mknoddata(struct xcur *c)
{
	switch (x_enum(c, NF3REG, NF3FIFO)) {
	case NF3CHR:
	case NF3BLK:
		x_sattr3(c);
		x_skip(c, 8); /* specdata3 */
		break;
	case NF3SOCK:
	case NF3FIFO:
		x_sattr3(c);
		break;
	default:
		break;
	}
}

/* --- arguments of each procedure ----------------------------------------- */

static void args_void(struct xcur *c)
{
	(void)c;
}

/* GETATTR, READLINK, FSSTAT, FSINFO, PATHCONF */
static void args_fh(struct xcur *c)
{
	x_fh(c);
}

static void args_setattr(struct xcur *c)
{
	x_fh(c);
	x_sattr3(c);
	if (x_bool(c)) /* guard ctime */
		x_skip(c, 8);
}

/* LOOKUP, REMOVE, RMDIR */
static void args_diropargs(struct xcur *c)
{
	x_diropargs(c);
}

static void args_access(struct xcur *c)
{
	x_fh(c);
	x_u32(c);
}

/* READ, COMMIT: fh, offset, count */
static void args_fh_range(struct xcur *c)
{
	x_fh(c);
	x_skip(c, 8);
	x_u32(c);
}

static void args_write(struct xcur *c)
{
	x_fh(c);
	x_skip(c, 8);
	x_u32(c);
	x_enum(c, UNSTABLE, FILE_SYNC);
	x_opaque(c, CFS_MAX_IO);
}

static void args_create(struct xcur *c)
{
	x_diropargs(c);
	x_createhow(c);
}

static void args_mkdir(struct xcur *c)
{
	x_diropargs(c);
	x_sattr3(c);
}

static void args_symlink(struct xcur *c)
{
	x_diropargs(c);
	x_sattr3(c);
	x_opaque(c, CFS_MAX_PATH);
}

static void args_mknod(struct xcur *c)
{
	x_diropargs(c);
	x_mknoddata(c);
}

static void args_rename(struct xcur *c)
{
	x_diropargs(c);
	x_diropargs(c);
}

static void args_link(struct xcur *c)
{
	x_fh(c);
	x_diropargs(c);
}

static void args_readdir(struct xcur *c)
{
	x_fh(c);
	x_skip(c, 8 + NFS3_COOKIEVERFSIZE + 4);
}

static void args_readdirplus(struct xcur *c)
{
	x_fh(c);
	x_skip(c, 8 + NFS3_COOKIEVERFSIZE + 4 + 4);
}

/* MNT, UMNT */
static void args_dirpath(struct xcur *c)
{
	x_opaque(c, MNTPATHLEN);
}

/* NSM: host names are strings of at most SM_MAXSTRLEN (1024) bytes */
static void x_my_id(struct xcur *c)
{
	x_opaque(c, NSM_MAXSTRLEN); /* my_name */
	x_skip(c, 12);              /* my_prog, my_vers, my_proc */
}

static void x_mon_id(struct xcur *c)
{
	x_opaque(c, NSM_MAXSTRLEN); /* mon_name */
	x_my_id(c);
}

static void args_nsm_stat(struct xcur *c)
{
	x_opaque(c, NSM_MAXSTRLEN);
}

static void args_nsm_mon(struct xcur *c)
{
	x_mon_id(c);
	x_skip(c, 16); /* priv */
}

static void args_nsm_notify(struct xcur *c)
{
	x_opaque(c, NSM_MAXSTRLEN);
	x_skip(c, 4); /* state */
}

/* NLM v4: every length bounded (include/nlm.h), every enum in range. */
static void x_cookie(struct xcur *c)
{
	x_opaque(c, NLM4_MAXNETOBJ);
}

static void x_caller(struct xcur *c)
{
	x_opaque(c, NLM4_MAXSTRLEN);
}

/* nlm4_lock: caller_name, fh, oh, svid, l_offset, l_len */
static void x_nlm_lock(struct xcur *c)
{
	x_caller(c);
	x_opaque(c, NLM4_MAXFH);
	x_opaque(c, NLM4_MAXNETOBJ);
	x_u32(c);
	x_skip(c, 16);
}

static uint32_t x_nlm_stat(struct xcur *c)
{
	return x_enum(c, NLM4_GRANTED, NLM4_FAILED);
}

/* TEST, TEST_MSG, GRANTED, GRANTED_MSG: cookie, exclusive, lock */
static void args_nlm_test(struct xcur *c)
{
	x_cookie(c);
	x_bool(c);
	x_nlm_lock(c);
}

/* LOCK, LOCK_MSG, NM_LOCK: cookie, block, exclusive, lock, reclaim, state */
static void args_nlm_lock(struct xcur *c)
{
	x_cookie(c);
	x_bool(c);
	x_bool(c);
	x_nlm_lock(c);
	x_bool(c);
	x_u32(c);
}

/* CANCEL, CANCEL_MSG: cookie, block, exclusive, lock */
static void args_nlm_cancel(struct xcur *c)
{
	x_cookie(c);
	x_bool(c);
	x_bool(c);
	x_nlm_lock(c);
}

/* UNLOCK, UNLOCK_MSG: cookie, lock */
static void args_nlm_unlock(struct xcur *c)
{
	x_cookie(c);
	x_nlm_lock(c);
}

/* TEST_RES: cookie, status, and the holder when DENIED */
static void args_nlm_testres(struct xcur *c)
{
	x_cookie(c);
	if (x_nlm_stat(c) == NLM4_DENIED) {
		x_bool(c);
		x_u32(c);
		x_opaque(c, NLM4_MAXNETOBJ);
		x_skip(c, 16);
	}
}

/* LOCK_RES, CANCEL_RES, UNLOCK_RES, GRANTED_RES: nlm4_res */
static void args_nlm_res(struct xcur *c)
{
	x_cookie(c);
	x_nlm_stat(c);
}

/* SHARE, UNSHARE: cookie, caller_name, fh, oh, mode, access, reclaim */
static void args_nlm_share(struct xcur *c)
{
	x_cookie(c);
	x_caller(c);
	x_opaque(c, NLM4_MAXFH);
	x_opaque(c, NLM4_MAXNETOBJ);
	x_enum(c, 0, 3); /* fsh4_mode */
	x_enum(c, 0, 3); /* fsh4_access */
	x_bool(c);
}

/* FREE_ALL: name, state */
static void args_nlm_notify(struct xcur *c)
{
	x_caller(c);
	x_u32(c);
}

/* --- how large the reply can be ------------------------------------------ */

/* From the argument bytes (proto_reply_estimate): the count the call asks for. */
static uint32_t want_read(struct xcur *c) /* fh, offset, count */
{
	x_fh(c);
	x_skip(c, 8);
	return x_u32(c);
}

static uint32_t want_readdir(struct xcur *c) /* fh, cookie, verifier, count */
{
	x_fh(c);
	x_skip(c, 16);
	return x_u32(c);
}

static uint32_t want_readdirplus(struct xcur *c) /* fh, cookie, verifier, dircount, maxcount */
{
	x_fh(c);
	x_skip(c, 20);
	return x_u32(c);
}

static uint32_t want_readlink(struct xcur *c)
{
	(void)c;
	return 4096;
}

/* From the decoded arguments (proto_req_size). */
static uint32_t want_args_read(const void *a)
{
	return ((const READ3args *)a)->count;
}

static uint32_t want_args_readdir(const void *a)
{
	return ((const READDIR3args *)a)->count;
}

static uint32_t want_args_readdirplus(const void *a)
{
	return ((const READDIRPLUS3args *)a)->maxcount;
}

static uint32_t want_args_readlink(const void *a)
{
	(void)a;
	return 4096;
}

/* Room the encoder needs beyond libnfs's 4 KiB minimum buffer. */
static size_t room_read(const void *res)
{
	const READ3res *r = res;

	return r->status == NFS3_OK ? r->READ3res_u.resok.data.data_len : 0;
}

static size_t room_readlink(const void *res)
{
	const READLINK3res *r = res;

	return r->status == NFS3_OK && r->READLINK3res_u.resok.data
	           ? strlen(r->READLINK3res_u.resok.data)
	           : 0;
}

static size_t room_readdir(const void *res)
{
	const READDIR3res *r = res;
	size_t n = 0;

	if (r->status != NFS3_OK)
		return 0;
	for (const entry3 *e = r->READDIR3res_u.resok.reply.entries; e; e = e->nextentry)
		n += 28 + strlen(e->name);
	return n;
}

static size_t room_readdirplus(const void *res)
{
	const READDIRPLUS3res *r = res;
	size_t n = 0;

	if (r->status != NFS3_OK)
		return 0;
	for (const entryplus3 *e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry)
		n += 28 + strlen(e->name) + 100 + 8 + NFS3_FHSIZE;
	return n;
}

static size_t room_dump(const void *res)
{
	size_t n = 0;

	for (const mountbody *m = *(const mountlist *)res; m; m = m->ml_next)
		n += 16 + strlen(m->ml_hostname) + strlen(m->ml_directory);
	return n;
}

static size_t room_export(const void *res)
{
	size_t n = 0;

	for (const exportnode *e = *(const exports *)res; e; e = e->ex_next) {
		n += 16 + strlen(e->ex_dir);
		for (const groupnode *g = e->ex_groups; g; g = g->gr_next)
			n += 12 + strlen(g->gr_name);
	}
	return n;
}

/* --- upstream senders ----------------------------------------------------- */

/* libnfs's rpc_nfs3_*_async take typed arguments; these give them one type
 * (calling them through a cast pointer would be undefined). */
static int send_null(struct rpc_context *rpc, rpc_cb cb, void *args, void *priv)
{
	(void)args;
	return rpc_nfs3_null_async(rpc, cb, priv);
}

#define SENDER(lc)                                                                                 \
	static int send_##lc(struct rpc_context *rpc, rpc_cb cb, void *args, void *priv)           \
	{                                                                                          \
		return rpc_nfs3_##lc##_async(rpc, cb, args, priv);                                 \
	}
SENDER(getattr)
SENDER(setattr)
SENDER(lookup)
SENDER(access)
SENDER(readlink)
SENDER(read)
SENDER(write)
SENDER(create)
SENDER(mkdir)
SENDER(symlink)
SENDER(mknod)
SENDER(remove)
SENDER(rmdir)
SENDER(rename)
SENDER(link)
SENDER(readdir)
SENDER(readdirplus)
SENDER(fsstat)
SENDER(fsinfo)
SENDER(pathconf)
SENDER(commit)
#undef SENDER

/* --- the rows ------------------------------------------------------------- */

/* M: mutates; D: kept by the duplicate-request cache; C: the metadata
 * cache may answer it. WRITE and COMMIT mutate but are idempotent
 * (applying them twice is harmless): no D. */
#define M PROC_MUTATES
#define D PROC_DRC
#define C PROC_CACHED
/* ROW(name, argument walker, argument decoder, result encoder, flags,
 * upstream sender): the columns every row has. The others follow it as
 * designated fields: FH(the handle the call is about), the reply sizes. */
#define ROW(nm, chk, a, r, fl, snd)                                                                \
	.name = nm, .check = chk, .dec = (zdrproc_t)(a), .enc = (zdrproc_t)(r), .flags = fl,       \
	.send = snd
#define FH(type, member) .has_fh = 1, .fh_off = offsetof(type, member)
#define SIZES(want, want_args, room)                                                               \
	.reply_want = want, .reply_want_args = want_args, .reply_room = room

static const struct proc_row nfs3_rows[NFS3_NPROCS] = {
    [NFS3_NULL] = {ROW("NULL", args_void, zdr_void, zdr_void, 0, send_null)},
    [NFS3_GETATTR] = {ROW("GETATTR", args_fh, zdr_GETATTR3args, zdr_GETATTR3res, C, send_getattr),
                      FH(GETATTR3args, object)},
    [NFS3_SETATTR] = {ROW("SETATTR", args_setattr, zdr_SETATTR3args, zdr_SETATTR3res, M | D,
                          send_setattr),
                      FH(SETATTR3args, object)},
    [NFS3_LOOKUP] = {ROW("LOOKUP", args_diropargs, zdr_LOOKUP3args, zdr_LOOKUP3res, C, send_lookup),
                     FH(LOOKUP3args, what.dir)},
    [NFS3_ACCESS] = {ROW("ACCESS", args_access, zdr_ACCESS3args, zdr_ACCESS3res, C, send_access),
                     FH(ACCESS3args, object)},
    [NFS3_READLINK] = {ROW("READLINK", args_fh, zdr_READLINK3args, zdr_READLINK3res, C,
                           send_readlink),
                       FH(READLINK3args, symlink),
                       SIZES(want_readlink, want_args_readlink, room_readlink)},
    [NFS3_READ] = {ROW("READ", args_fh_range, zdr_READ3args, zdr_READ3res, 0, send_read),
                   FH(READ3args, file), SIZES(want_read, want_args_read, room_read)},
    [NFS3_WRITE] = {ROW("WRITE", args_write, zdr_WRITE3args, zdr_WRITE3res, M, send_write),
                    FH(WRITE3args, file)},
    [NFS3_CREATE] = {ROW("CREATE", args_create, zdr_CREATE3args, zdr_CREATE3res, M | D,
                         send_create)},
    [NFS3_MKDIR] = {ROW("MKDIR", args_mkdir, zdr_MKDIR3args, zdr_MKDIR3res, M | D, send_mkdir)},
    [NFS3_SYMLINK] = {ROW("SYMLINK", args_symlink, zdr_SYMLINK3args, zdr_SYMLINK3res, M | D,
                          send_symlink)},
    [NFS3_MKNOD] = {ROW("MKNOD", args_mknod, zdr_MKNOD3args, zdr_MKNOD3res, M | D, send_mknod)},
    [NFS3_REMOVE] = {ROW("REMOVE", args_diropargs, zdr_REMOVE3args, zdr_REMOVE3res, M | D,
                         send_remove)},
    [NFS3_RMDIR] = {ROW("RMDIR", args_diropargs, zdr_RMDIR3args, zdr_RMDIR3res, M | D, send_rmdir)},
    [NFS3_RENAME] = {ROW("RENAME", args_rename, zdr_RENAME3args, zdr_RENAME3res, M | D,
                         send_rename)},
    [NFS3_LINK] = {ROW("LINK", args_link, zdr_LINK3args, zdr_LINK3res, M | D, send_link)},
    [NFS3_READDIR] = {ROW("READDIR", args_readdir, zdr_READDIR3args, zdr_READDIR3res, C,
                          send_readdir),
                      FH(READDIR3args, dir), SIZES(want_readdir, want_args_readdir, room_readdir)},
    [NFS3_READDIRPLUS] = {ROW("READDIRPLUS", args_readdirplus, zdr_READDIRPLUS3args,
                              zdr_READDIRPLUS3res, C, send_readdirplus),
                          FH(READDIRPLUS3args, dir),
                          SIZES(want_readdirplus, want_args_readdirplus, room_readdirplus)},
    [NFS3_FSSTAT] = {ROW("FSSTAT", args_fh, zdr_FSSTAT3args, zdr_FSSTAT3res, C, send_fsstat),
                     FH(FSSTAT3args, fsroot)},
    [NFS3_FSINFO] = {ROW("FSINFO", args_fh, zdr_FSINFO3args, zdr_FSINFO3res, C, send_fsinfo),
                     FH(FSINFO3args, fsroot)},
    [NFS3_PATHCONF] = {ROW("PATHCONF", args_fh, zdr_PATHCONF3args, zdr_PATHCONF3res, C,
                           send_pathconf),
                       FH(PATHCONF3args, object)},
    [NFS3_COMMIT] = {ROW("COMMIT", args_fh_range, zdr_COMMIT3args, zdr_COMMIT3res, M, send_commit),
                     FH(COMMIT3args, file)},
};
_Static_assert(NFS3_COMMIT == NFS3_NPROCS - 1, "NFS3_NPROCS is the number of NFSv3 procedures");

/* MOUNT is answered by the proxy (cachefsd/engine/mount.c): no upstream senders. */
static const struct proc_row mount3_rows[MOUNT3_NPROCS] = {
    [MOUNT3_NULL] = {ROW("MNT_NULL", args_void, zdr_void, zdr_void, 0, NULL)},
    [MOUNT3_MNT] = {ROW("MNT", args_dirpath, zdr_dirpath, zdr_mountres3, 0, NULL)},
    [MOUNT3_DUMP] = {ROW("DUMP", args_void, zdr_void, zdr_mountlist, 0, NULL),
                     SIZES(NULL, NULL, room_dump)},
    [MOUNT3_UMNT] = {ROW("UMNT", args_dirpath, zdr_dirpath, zdr_void, 0, NULL)},
    [MOUNT3_UMNTALL] = {ROW("UMNTALL", args_void, zdr_void, zdr_void, 0, NULL)},
    [MOUNT3_EXPORT] = {ROW("EXPORT", args_void, zdr_void, zdr_exports, 0, NULL),
                       SIZES(NULL, NULL, room_export)},
};
_Static_assert(MOUNT3_EXPORT == MOUNT3_NPROCS - 1,
               "MOUNT3_NPROCS is the number of MOUNT procedures");

/* MOUNT v1 (RFC 1094 appendix A): the procedures of v3 with the same
 * arguments and results, except MNT, whose result is a fixed 32-byte
 * fhandle. showmount asks v1 for EXPORT and DUMP, so v1 is served; its MNT
 * is answered with an error (cachefsd/engine/mount.c says which). */
static const struct proc_row mount1_rows[MOUNT3_NPROCS] = {
    [MOUNT1_NULL] = {ROW("MNT_NULL", args_void, zdr_void, zdr_void, 0, NULL)},
    [MOUNT1_MNT] = {ROW("MNT", args_dirpath, zdr_dirpath, zdr_mountres1, 0, NULL)},
    [MOUNT1_DUMP] = {ROW("DUMP", args_void, zdr_void, zdr_mountlist, 0, NULL),
                     SIZES(NULL, NULL, room_dump)},
    [MOUNT1_UMNT] = {ROW("UMNT", args_dirpath, zdr_dirpath, zdr_void, 0, NULL)},
    [MOUNT1_UMNTALL] = {ROW("UMNTALL", args_void, zdr_void, zdr_void, 0, NULL)},
    [MOUNT1_EXPORT] = {ROW("EXPORT", args_void, zdr_void, zdr_exports, 0, NULL),
                       SIZES(NULL, NULL, room_export)},
};
_Static_assert(MOUNT1_EXPORT == MOUNT3_NPROCS - 1, "MOUNT v1 has the procedures of v3");

/* NSM is answered by the proxy (cachefsd/locks/nsm.c): SM_NOTIFY from
 * rebooted client hosts and from the filer; the procedures a local lockd
 * uses are answered as statd answers a caller that is not local. */
static const struct proc_row nsm1_rows[NSM1_NPROCS] = {
    [NSM1_NULL] = {ROW("SM_NULL", args_void, zdr_void, zdr_void, 0, NULL)},
    [NSM1_STAT] = {ROW("SM_STAT", args_nsm_stat, zdr_NSM1_STATargs, zdr_NSM1_STATres, 0, NULL)},
    [NSM1_MON] = {ROW("SM_MON", args_nsm_mon, zdr_NSM1_MONargs, zdr_NSM1_MONres, 0, NULL)},
    [NSM1_UNMON] = {ROW("SM_UNMON", x_mon_id, zdr_NSM1_UNMONargs, zdr_NSM1_UNMONres, 0, NULL)},
    [NSM1_UNMON_ALL] = {ROW("SM_UNMON_ALL", x_my_id, zdr_NSM1_UNMONALLargs, zdr_NSM1_UNMONALLres,
                            0, NULL)},
    [NSM1_SIMU_CRASH] = {ROW("SM_SIMU_CRASH", args_void, zdr_void, zdr_void, 0, NULL)},
    [NSM1_NOTIFY] = {ROW("SM_NOTIFY", args_nsm_notify, zdr_NSM1_NOTIFYargs, zdr_void, 0, NULL)},
};
_Static_assert(NSM1_NOTIFY == NSM1_NPROCS - 1, "NSM1_NPROCS is the number of NSM procedures");

/* NLM v4: forwarded to the filer's NLM by the locks room
 * (cachefsd/locks/), the argument bytes unchanged: no libnfs senders
 * (libnfs has five of the twenty). The *_MSG and *_RES calls have no
 * reply (void); the _RES ones carry an nlm4_res, which is libnfs's
 * NLM4_LOCKres. Numbers 16 .. 19 are no rows: PROC_UNAVAIL. */
static const struct proc_row nlm4_rows[NLM4_NPROCS] = {
    [NLM4_NULL] = {ROW("NLM_NULL", args_void, zdr_void, zdr_void, 0, NULL)},
    [NLM4_TEST] = {ROW("NLM_TEST", args_nlm_test, zdr_NLM4_TESTargs, zdr_NLM4_TESTres, 0, NULL)},
    [NLM4_LOCK] = {ROW("NLM_LOCK", args_nlm_lock, zdr_NLM4_LOCKargs, zdr_NLM4_LOCKres, 0, NULL)},
    [NLM4_CANCEL] = {ROW("NLM_CANCEL", args_nlm_cancel, zdr_NLM4_CANCargs, zdr_NLM4_CANCres, 0,
                         NULL)},
    [NLM4_UNLOCK] = {ROW("NLM_UNLOCK", args_nlm_unlock, zdr_NLM4_UNLOCKargs, zdr_NLM4_UNLOCKres, 0,
                         NULL)},
    [NLM4_GRANT] = {ROW("NLM_GRANTED", args_nlm_test, zdr_NLM4_GRANTEDargs, zdr_NLM4_GRANTEDres, 0,
                        NULL)},
    [NLM4_TEST_MSG] = {ROW("NLM_TEST_MSG", args_nlm_test, zdr_NLM4_TESTargs, zdr_void, 0, NULL)},
    [NLM4_LOCK_MSG] = {ROW("NLM_LOCK_MSG", args_nlm_lock, zdr_NLM4_LOCKargs, zdr_void, 0, NULL)},
    [NLM4_CANCEL_MSG] = {ROW("NLM_CANCEL_MSG", args_nlm_cancel, zdr_NLM4_CANCargs, zdr_void, 0,
                             NULL)},
    [NLM4_UNLOCK_MSG] = {ROW("NLM_UNLOCK_MSG", args_nlm_unlock, zdr_NLM4_UNLOCKargs, zdr_void, 0,
                             NULL)},
    [NLM4_GRANTED_MSG] = {ROW("NLM_GRANTED_MSG", args_nlm_test, zdr_NLM4_GRANTEDargs, zdr_void, 0,
                              NULL)},
    [NLM4_TEST_RES] = {ROW("NLM_TEST_RES", args_nlm_testres, zdr_NLM4_TESTres, zdr_void, 0, NULL)},
    [NLM4_LOCK_RES] = {ROW("NLM_LOCK_RES", args_nlm_res, zdr_NLM4_LOCKres, zdr_void, 0, NULL)},
    [NLM4_CANCEL_RES] = {ROW("NLM_CANCEL_RES", args_nlm_res, zdr_NLM4_LOCKres, zdr_void, 0, NULL)},
    [NLM4_UNLOCK_RES] = {ROW("NLM_UNLOCK_RES", args_nlm_res, zdr_NLM4_LOCKres, zdr_void, 0, NULL)},
    [NLM4_GRANTED_RES] = {ROW("NLM_GRANTED_RES", args_nlm_res, zdr_NLM4_LOCKres, zdr_void, 0,
                              NULL)},
    [NLM4_SHARE] = {ROW("NLM_SHARE", args_nlm_share, zdr_NLM4_SHAREargs, zdr_NLM4_SHAREres, 0,
                        NULL)},
    [NLM4_UNSHARE] = {ROW("NLM_UNSHARE", args_nlm_share, zdr_NLM4_SHAREargs, zdr_NLM4_SHAREres, 0,
                          NULL)},
    [NLM4_NM_LOCK] = {ROW("NLM_NM_LOCK", args_nlm_lock, zdr_NLM4_LOCKargs, zdr_NLM4_LOCKres, 0,
                          NULL)},
    [NLM4_FREE_ALL] = {ROW("NLM_FREE_ALL", args_nlm_notify, zdr_NLM4_NOTIFYargs, zdr_void, 0,
                           NULL)},
};
_Static_assert(NLM4_FREE_ALL == NLM4_NPROCS - 1, "NLM4_NPROCS is the number of NLM procedures");

#undef ROW
#undef FH
#undef SIZES
#undef C
#undef M
#undef D

/* A MOUNT reply (an export list, a handle) is given 4 KiB whatever it asks.
 * R: registered with a local rpcbind (PROG_REGISTER). */
#define R PROG_REGISTER
static const struct prog_row progs[] = {
    {NFS_PROGRAM, NFS_V3, "nfs", R, nfs3_rows, NFS3_NPROCS, 0},
    {MOUNT_PROGRAM, MOUNT_V3, "mount", R, mount3_rows, MOUNT3_NPROCS, 4096 - 512},
    {MOUNT_PROGRAM, MOUNT_V1, "mount", R, mount1_rows, MOUNT3_NPROCS, 4096 - 512},
    {NSM_PROGRAM, NSM_V1, "status", R | PROG_UDP, nsm1_rows, NSM1_NPROCS, 0},
    /* a TEST reply names the holder: two netobjs of at most 1 KiB */
    {NLM_PROGRAM, NLM_V4, "nlm", R, nlm4_rows, NLM4_NPROCS, 4096 - 512},
};
#undef R

const struct prog_row *proc_progs(size_t *n)
{
	*n = sizeof(progs) / sizeof(progs[0]);
	return progs;
}

const struct prog_row *proc_prog(uint32_t prog, uint32_t vers)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (progs[i].prog == prog && progs[i].vers == vers)
			return &progs[i];
	return NULL;
}

/* The row of prog's highest version, or NULL. */
static const struct prog_row *prog_newest(uint32_t prog)
{
	const struct prog_row *best = NULL;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (progs[i].prog == prog && (best == NULL || progs[i].vers > best->vers))
			best = &progs[i];
	return best;
}

int proc_versions(uint32_t prog, uint32_t *low, uint32_t *high)
{
	int found = 0;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		if (progs[i].prog != prog)
			continue;
		if (!found || progs[i].vers < *low)
			*low = progs[i].vers;
		if (!found || progs[i].vers > *high)
			*high = progs[i].vers;
		found = 1;
	}
	return found ? 0 : -ENOENT;
}

int proc_any_udp(void)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (progs[i].flags & PROG_UDP)
			return 1;
	return 0;
}

int proc_udp(uint32_t prog)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (progs[i].prog == prog && (progs[i].flags & PROG_UDP))
			return 1;
	return 0;
}

const struct proc_row *proc_row(uint32_t prog, uint32_t proc)
{
	const struct prog_row *p = prog_newest(prog);

	/* a gap in the numbers (NLM's 16 .. 19) is a row without a name */
	return p && proc < p->nprocs && p->procs[proc].name ? &p->procs[proc] : NULL;
}

const struct proc_row *proc_row_vers(uint32_t prog, uint32_t vers, uint32_t proc)
{
	const struct prog_row *p = proc_prog(prog, vers);

	/* a gap in the numbers (NLM's 16 .. 19) is a row without a name */
	return p && proc < p->nprocs && p->procs[proc].name ? &p->procs[proc] : NULL;
}
