/* The request: one per client call. It carries the xid, procedure,
 * credential and a private copy of the arguments from proto through the
 * engine to the upstream and back. Created by proto when a call is decoded;
 * freed in exactly one place, proto_req_free(), reached through
 * proto_reply*() or proto_drop(). */
#ifndef CFS_REQ_H
#define CFS_REQ_H

#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nsm.h>

#include "nlm.h"

#define CFS_MAX_GIDS	   16
#define CFS_MAX_MACHINE	   255
#define CFS_MAX_AUTH_BYTES 400
#define CFS_MAX_NAME	   4096
#define CFS_MAX_PATH	   4096
/* libnfs 4.0 caps records at 1 MiB + 4 KiB both ways (NFS_MAX_XFER_SIZE):
 * the largest READ/WRITE payload the proxy can carry. */
#define CFS_MAX_IO (1024 * 1024)

#define CFS_REQ_MAGIC 0x52455131u /* "REQ1" */

/* The caller's identity, forwarded upstream on every call it causes. */
struct cfs_cred {
	uint32_t flavor; /* AUTH_NONE (0) or AUTH_UNIX (1) */
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t gids[CFS_MAX_GIDS];
	char machine[CFS_MAX_MACHINE + 1];
};

/* Decoded call arguments: libnfs's own structs, whose pointers (handles,
 * names, WRITE data) point into memory the request owns. */
union cfs_args {
	GETATTR3args getattr;
	SETATTR3args setattr;
	LOOKUP3args lookup;
	ACCESS3args access;
	READLINK3args readlink;
	READ3args read;
	WRITE3args write;
	CREATE3args create;
	MKDIR3args mkdir;
	SYMLINK3args symlink;
	MKNOD3args mknod;
	REMOVE3args remove;
	RMDIR3args rmdir;
	RENAME3args rename;
	LINK3args link;
	READDIR3args readdir;
	READDIRPLUS3args readdirplus;
	FSSTAT3args fsstat;
	FSINFO3args fsinfo;
	PATHCONF3args pathconf;
	COMMIT3args commit;
	dirpath mntpath; /* MOUNT MNT and UMNT */
	/* NSM (cachefsd/locks/nsm.c) */
	NSM1_STATargs nsm_stat;
	NSM1_MONargs nsm_mon;
	NSM1_UNMONargs nsm_unmon;
	NSM1_UNMONALLargs nsm_unmonall;
	NSM1_NOTIFYargs nsm_notify;
	/* NLM v4 (include/nlm.h): the _MSG calls share their call's shape,
	 * the _RES calls are an nlm4_res (libnfs's NLM4_LOCKres) */
	NLM4_TESTargs nlm_test; /* TEST, TEST_MSG */
	NLM4_LOCKargs nlm_lock; /* LOCK, LOCK_MSG, NM_LOCK */
	NLM4_CANCargs nlm_cancel;
	NLM4_UNLOCKargs nlm_unlock;
	NLM4_GRANTEDargs nlm_granted;
	NLM4_TESTres nlm_testres;
	NLM4_LOCKres nlm_res;
	NLM4_SHAREargs nlm_share;
	NLM4_NOTIFYargs nlm_notify;
};

struct proto_conn;

struct cfs_req {
	uint32_t magic;
	uint32_t xid;
	uint32_t prog; /* NFS_PROGRAM, MOUNT_PROGRAM or NLM_PROGRAM */
	uint32_t vers;
	uint32_t proc;
	struct cfs_cred cred;
	union cfs_args args;
	struct proto_conn *conn; /* counted reference; the connection may close */
	uint64_t t_start_us;	 /* when the call was decoded */
	void *engine;		 /* engine-owned state, released before the reply */
	struct cfs_req *next;	 /* for whoever queues the request */
	/* private to proto: the argument bytes and the decoder's allocations */
	char *argbuf;
	uint32_t arglen;
	ZDR zdr;
	struct drc_entry *drc; /* the duplicate-request cache entry, if any */
	size_t held;	       /* bytes counted against the connection at submit: the
				* engine may lower a count afterwards (a READ cut to
				* the upstream's rtmax), the same bytes are released */
};

/* Equal credentials (flavor, uid, gid, groups; not the machine name). */
int cfs_cred_equal(const struct cfs_cred *a, const struct cfs_cred *b);

#endif
