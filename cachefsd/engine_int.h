/* Private to the engine (engine.c, mount.c). */
#ifndef CFS_ENGINE_INT_H
#define CFS_ENGINE_INT_H

#include "engine.h"

struct mount_entry {
	char *host;
	char *dir;
	struct mount_entry *next;
};

struct engine {
	struct loop *loop;
	const struct cfs_config *cfg;
	struct upstream *up;
	char *export_path;
	struct mount_entry *mounts;
	struct engine_counters ctr;
};

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

/* Replies to an NFS call with a bare error status. */
void engine_reply_status(struct engine *e, struct cfs_req *req, nfsstat3 status);
/* Finishes req after an upstream failure (status < 0). */
void engine_reply_failure(struct engine *e, struct cfs_req *req, int status);
/* MOUNT program (mount.c). */
void mount_submit(struct engine *e, struct cfs_req *req);
void mount_free_all(struct engine *e);

#endif
