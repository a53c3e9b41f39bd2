/* The NFSv3 result of any procedure, as libnfs's XDR decodes and encodes
 * it: what the engine answers, and what an origin backend answers in
 * NFSv3 semantics (include/origin.h) whatever it speaks to the filer. */
#ifndef CFS_NFS3RES_H
#define CFS_NFS3RES_H

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/* Every NFSv3 result starts with its nfsstat3; the failure arms are all
 * post_op_attr / wcc_data, which encode as "no attributes" when zeroed. */
union nfs3_res {
	nfsstat3 status;
	GETATTR3res getattr;
	SETATTR3res setattr;
	LOOKUP3res lookup;
	ACCESS3res access;
	READLINK3res readlink;
	READ3res read;
	WRITE3res write;
	CREATE3res create;
	MKDIR3res mkdir;
	SYMLINK3res symlink;
	MKNOD3res mknod;
	REMOVE3res remove;
	RMDIR3res rmdir;
	RENAME3res rename;
	LINK3res link;
	READDIR3res readdir;
	READDIRPLUS3res readdirplus;
	FSSTAT3res fsstat;
	FSINFO3res fsinfo;
	PATHCONF3res pathconf;
	COMMIT3res commit;
};

#endif
