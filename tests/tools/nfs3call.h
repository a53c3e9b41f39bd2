/* Synchronous NFSv3 and MOUNTv3 calls over libnfs 4.0's raw async API, for
 * the test clients that wait for every reply (nfs3cmp, nfsmodel).
 *
 * A call is prepared (call_prep), queued by one send_*() helper, which also
 * names the extractor that copies the decoded reply into a struct res (the
 * reply is freed when the callback returns), and waited for (call_wait).
 * What a tool does about a failure (record it, or stop) is its own. */
#ifndef CFS_TEST_NFS3CALL_H
#define CFS_TEST_NFS3CALL_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

/* ---- file handles ---- */

/* libnfs decodes at most NFS3_FHSIZE (= FHSIZE3) bytes of a handle */
struct fh {
	uint32_t len;
	unsigned char data[NFS3_FHSIZE];
};

static inline void fh_set(struct fh *dst, const void *val, uint32_t len)
{
	if (len > NFS3_FHSIZE)
		len = NFS3_FHSIZE;
	dst->len = len;
	memcpy(dst->data, val, len);
}

static inline void fh_arg(nfs_fh3 *dst, const struct fh *fh)
{
	dst->data.data_len = fh->len;
	dst->data.data_val = (char *)fh->data;
}

static inline bool fh_eq(const struct fh *a, const struct fh *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* ---- results ---- */

/* res.stat values below 0 (the others are nfsstat3 / mountstat3) */
#define RES_RPCERR (-1) /* no reply (the tool sets it) */
#define RES_TOOBIG (-2) /* READ: more data than res.dstcap */
#define RES_NOMEM  (-3) /* out of memory copying the reply */

struct dent {
	char name[256];
	uint64_t fileid;
	uint64_t cookie;
	bool has_attr;
	fattr3 attr;
	bool has_fh;
	struct fh fh;
};

/* for qsort() and bsearch(): by name */
static inline int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

/* What the procedures return, copied out of the decoded reply. */
struct res {
	int stat;
	char err[320]; /* set by the tool when stat is RES_RPCERR */
	bool has_fh;
	struct fh fh;
	bool has_attr;
	fattr3 attr;
	uint32_t count;
	bool eof;
	/* READ data goes to dst (capacity dstcap) when the caller set it,
	 * else into a new data buffer; READLINK's target (NUL terminated)
	 * into data */
	unsigned char *dst;
	size_t dstcap;
	unsigned char *data;
	size_t len;
	uint32_t access;
	int committed;
	unsigned char verf[8];
	unsigned char cookieverf[8];
	struct dent *ents;
	size_t nents;
	FSSTAT3resok fsstat;
	FSINFO3resok fsinfo;
	PATHCONF3resok pathconf;
};

/* frees what r holds and zeroes it (dst too) */
static inline void res_free(struct res *r)
{
	free(r->data);
	free(r->ents);
	memset(r, 0, sizeof(*r));
}

/* ---- extractors: copy what is needed out of the decoded reply ---- */

typedef void (*extract_fn)(void *data, struct res *r);

static inline void get_pattr(const post_op_attr *pa, struct res *r)
{
	r->has_attr = pa->attributes_follow != 0;
	if (r->has_attr)
		r->attr = pa->post_op_attr_u.attributes;
}

static inline void get_pfh(const post_op_fh3 *pf, struct res *r)
{
	r->has_fh = pf->handle_follows != 0;
	if (r->has_fh)
		fh_set(&r->fh, pf->post_op_fh3_u.handle.data.data_val,
		       pf->post_op_fh3_u.handle.data.data_len);
}

static inline void x_mnt(void *d, struct res *r)
{
	mountres3 *m = d;

	r->stat = m->fhs_status;
	if (m->fhs_status == MNT3_OK) {
		r->has_fh = true;
		fh_set(&r->fh, m->mountres3_u.mountinfo.fhandle.fhandle3_val,
		       m->mountres3_u.mountinfo.fhandle.fhandle3_len);
	}
}

static inline void x_getattr(void *d, struct res *r)
{
	GETATTR3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK) {
		r->has_attr = true;
		r->attr = x->GETATTR3res_u.resok.obj_attributes;
	}
}

static inline void x_setattr(void *d, struct res *r)
{
	SETATTR3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK)
		get_pattr(&x->SETATTR3res_u.resok.obj_wcc.after, r);
}

static inline void x_lookup(void *d, struct res *r)
{
	LOOKUP3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK) {
		r->has_fh = true;
		fh_set(&r->fh, x->LOOKUP3res_u.resok.object.data.data_val,
		       x->LOOKUP3res_u.resok.object.data.data_len);
		get_pattr(&x->LOOKUP3res_u.resok.obj_attributes, r);
	}
}

static inline void x_access(void *d, struct res *r)
{
	ACCESS3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK) {
		r->access = x->ACCESS3res_u.resok.access;
		get_pattr(&x->ACCESS3res_u.resok.obj_attributes, r);
	}
}

static inline void x_readlink(void *d, struct res *r)
{
	READLINK3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK) {
		const char *t = x->READLINK3res_u.resok.data ? x->READLINK3res_u.resok.data : "";

		r->len = strlen(t);
		r->data = calloc(r->len + 1, 1);
		if (r->data == NULL) {
			r->stat = RES_NOMEM;
			return;
		}
		memcpy(r->data, t, r->len);
		get_pattr(&x->READLINK3res_u.resok.symlink_attributes, r);
	}
}

static inline void x_read(void *d, struct res *r)
{
	READ3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK) {
		READ3resok *ok = &x->READ3res_u.resok;

		r->count = ok->count;
		r->eof = ok->eof != 0;
		r->len = ok->data.data_len;
		if (r->dst) {
			if (r->len > r->dstcap) {
				r->stat = RES_TOOBIG;
				return;
			}
			if (r->len)
				memcpy(r->dst, ok->data.data_val, r->len);
		} else {
			r->data = calloc(r->len ? r->len : 1, 1);
			if (r->data == NULL) {
				r->stat = RES_NOMEM;
				return;
			}
			if (r->len)
				memcpy(r->data, ok->data.data_val, r->len);
		}
		get_pattr(&ok->file_attributes, r);
	}
}

static inline void x_write(void *d, struct res *r)
{
	WRITE3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK) {
		r->count = x->WRITE3res_u.resok.count;
		r->committed = x->WRITE3res_u.resok.committed;
		memcpy(r->verf, x->WRITE3res_u.resok.verf, 8);
		get_pattr(&x->WRITE3res_u.resok.file_wcc.after, r);
	}
}

/* CREATE, MKDIR, SYMLINK and MKNOD results share one shape: the new
 * object's handle and attributes (read only when status is NFS3_OK). */
static inline void x_newobj(nfsstat3 st, post_op_fh3 *obj, post_op_attr *attrs, struct res *r)
{
	r->stat = st;
	if (st == NFS3_OK) {
		get_pfh(obj, r);
		get_pattr(attrs, r);
	}
}

#define X_NEWOBJ(name, T)                                                                    \
	static inline void name(void *d, struct res *r)                                     \
	{                                                                                    \
		T *x = d;                                                                    \
		x_newobj(x->status, &x->T##_u.resok.obj, &x->T##_u.resok.obj_attributes, r); \
	}
X_NEWOBJ(x_create, CREATE3res)
X_NEWOBJ(x_mkdir, MKDIR3res)
X_NEWOBJ(x_symlink, SYMLINK3res)
X_NEWOBJ(x_mknod, MKNOD3res)

static inline void x_remove(void *d, struct res *r)
{
	r->stat = ((REMOVE3res *)d)->status;
}

static inline void x_rmdir(void *d, struct res *r)
{
	r->stat = ((RMDIR3res *)d)->status;
}

static inline void x_rename(void *d, struct res *r)
{
	r->stat = ((RENAME3res *)d)->status;
}

static inline void x_link(void *d, struct res *r)
{
	LINK3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK)
		get_pattr(&x->LINK3res_u.resok.file_attributes, r);
}

/* libnfs 4.0 allocates decoded list entries at 4-byte aligned addresses
 * (zdr_malloc), so entry3/entryplus3 are copied out with memcpy instead of
 * being dereferenced in place (keeps -fsanitize=alignment quiet). */
static inline void x_readdir(void *d, struct res *r)
{
	READDIR3res *x = d;
	size_t n = 0;
	entry3 e;

	r->stat = x->status;
	if (x->status != NFS3_OK)
		return;
	memcpy(r->cookieverf, x->READDIR3res_u.resok.cookieverf, 8);
	r->eof = x->READDIR3res_u.resok.reply.eof != 0;
	for (const void *p = x->READDIR3res_u.resok.reply.entries; p; p = e.nextentry) {
		memcpy(&e, p, sizeof(e));
		n++;
	}
	r->ents = calloc(n ? n : 1, sizeof(*r->ents));
	if (r->ents == NULL) {
		r->stat = RES_NOMEM;
		return;
	}
	for (const void *p = x->READDIR3res_u.resok.reply.entries; p; p = e.nextentry) {
		struct dent *de = &r->ents[r->nents++];

		memcpy(&e, p, sizeof(e));
		snprintf(de->name, sizeof(de->name), "%s", e.name ? e.name : "");
		de->fileid = e.fileid;
		de->cookie = e.cookie;
	}
}

static inline void x_readdirplus(void *d, struct res *r)
{
	READDIRPLUS3res *x = d;
	size_t n = 0;
	entryplus3 e;

	r->stat = x->status;
	if (x->status != NFS3_OK)
		return;
	memcpy(r->cookieverf, x->READDIRPLUS3res_u.resok.cookieverf, 8);
	r->eof = x->READDIRPLUS3res_u.resok.reply.eof != 0;
	for (const void *p = x->READDIRPLUS3res_u.resok.reply.entries; p; p = e.nextentry) {
		memcpy(&e, p, sizeof(e));
		n++;
	}
	r->ents = calloc(n ? n : 1, sizeof(*r->ents));
	if (r->ents == NULL) {
		r->stat = RES_NOMEM;
		return;
	}
	for (const void *p = x->READDIRPLUS3res_u.resok.reply.entries; p; p = e.nextentry) {
		struct dent *de = &r->ents[r->nents++];

		memcpy(&e, p, sizeof(e));
		snprintf(de->name, sizeof(de->name), "%s", e.name ? e.name : "");
		de->fileid = e.fileid;
		de->cookie = e.cookie;
		de->has_attr = e.name_attributes.attributes_follow != 0;
		if (de->has_attr)
			de->attr = e.name_attributes.post_op_attr_u.attributes;
		de->has_fh = e.name_handle.handle_follows != 0;
		if (de->has_fh)
			fh_set(&de->fh, e.name_handle.post_op_fh3_u.handle.data.data_val,
			       e.name_handle.post_op_fh3_u.handle.data.data_len);
	}
}

static inline void x_fsstat(void *d, struct res *r)
{
	FSSTAT3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK)
		r->fsstat = x->FSSTAT3res_u.resok;
}

static inline void x_fsinfo(void *d, struct res *r)
{
	FSINFO3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK)
		r->fsinfo = x->FSINFO3res_u.resok;
}

static inline void x_pathconf(void *d, struct res *r)
{
	PATHCONF3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK)
		r->pathconf = x->PATHCONF3res_u.resok;
}

static inline void x_commit(void *d, struct res *r)
{
	COMMIT3res *x = d;

	r->stat = x->status;
	if (x->status == NFS3_OK)
		memcpy(r->verf, x->COMMIT3res_u.resok.verf, 8);
}

/* ---- one call, and waiting for it ---- */

struct call {
	int done;
	int status;              /* RPC_STATUS_* of the reply; -1 before it */
	char err[320];           /* libnfs's text for RPC_STATUS_ERROR */
	struct res *r;           /* NULL: only the status matters */
	extract_fn x;            /* set by the send_*() helper */
	unsigned long *answered; /* if set: counts the calls answered */
};

/* Before each call; r (the result, or NULL) is left as it is. */
static inline void call_prep(struct call *c, struct res *r)
{
	memset(c, 0, sizeof(*c));
	c->status = -1;
	c->r = r;
}

static inline void call_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;

	(void)rpc;
	c->done = 1;
	c->status = status;
	if (status != RPC_STATUS_SUCCESS) {
		if (status == RPC_STATUS_ERROR && data)
			snprintf(c->err, sizeof(c->err), "%s", (const char *)data);
		return;
	}
	if (c->answered)
		(*c->answered)++;
	if (c->r) {
		c->r->stat = NFS3_OK;
		if (c->x)
			c->x(data, c->r);
	}
}

enum wait_end {
	WAIT_DONE,    /* the callback ran: see c->status */
	WAIT_NOREPLY, /* none within the time */
	WAIT_POLL,    /* poll() failed: errno */
	WAIT_SERVICE, /* rpc_service() failed: rpc_get_error() */
};

static inline long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs rpc's events until the call is done, for at most timeout_ms. */
static inline enum wait_end call_wait(struct rpc_context *rpc, struct call *c, long long timeout_ms)
{
	long long deadline = mono_ms() + timeout_ms;

	while (!c->done) {
		struct pollfd pfd;
		long long left = deadline - mono_ms();
		int n;

		if (left <= 0)
			return WAIT_NOREPLY;
		pfd.fd = rpc_get_fd(rpc);
		pfd.events = (short)rpc_which_events(rpc);
		pfd.revents = 0;
		n = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return WAIT_POLL;
		}
		if (n == 0)
			continue;
		if (rpc_service(rpc, pfd.revents) < 0)
			return WAIT_SERVICE;
	}
	return WAIT_DONE;
}

/* ---- queueing: the procedures' arguments ---- */

static inline void sattr_mode(sattr3 *sa, uint32_t mode)
{
	memset(sa, 0, sizeof(*sa));
	sa->mode.set_it = 1;
	sa->mode.set_mode3_u.mode = mode;
}

/* a connection to host:port */
static inline int send_connect(struct rpc_context *rpc, struct call *c, const char *host, int port)
{
	c->x = NULL;
	return rpc_connect_async(rpc, host, port, call_cb, c);
}

/* a connection to the port the portmapper on host gives for prog/vers */
static inline int send_connect_program(struct rpc_context *rpc, struct call *c, const char *host,
                                       int prog, int vers)
{
	c->x = NULL;
	return rpc_connect_program_async(rpc, host, prog, vers, call_cb, c);
}

static inline int send_mnt(struct rpc_context *rpc, struct call *c, const char *path)
{
	c->x = x_mnt;
	return rpc_mount3_mnt_async(rpc, call_cb, (char *)path, c);
}

static inline int send_umnt(struct rpc_context *rpc, struct call *c, const char *path)
{
	c->x = NULL;
	return rpc_mount3_umnt_async(rpc, call_cb, (char *)path, c);
}

static inline int send_null(struct rpc_context *rpc, struct call *c)
{
	c->x = NULL;
	return rpc_nfs3_null_async(rpc, call_cb, c);
}

static inline int send_getattr(struct rpc_context *rpc, struct call *c, const struct fh *fh)
{
	GETATTR3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.object, fh);
	c->x = x_getattr;
	return rpc_nfs3_getattr_async(rpc, call_cb, &a, c);
}

/* guard: NULL, or the ctime the object must have */
static inline int send_setattr(struct rpc_context *rpc, struct call *c, const struct fh *fh,
                               const sattr3 *sa, const nfstime3 *guard)
{
	SETATTR3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.object, fh);
	a.new_attributes = *sa;
	if (guard) {
		a.guard.check = 1;
		a.guard.sattrguard3_u.obj_ctime = *guard;
	}
	c->x = x_setattr;
	return rpc_nfs3_setattr_async(rpc, call_cb, &a, c);
}

static inline int send_lookup(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                              const char *name)
{
	LOOKUP3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.what.dir, dir);
	a.what.name = (char *)name;
	c->x = x_lookup;
	return rpc_nfs3_lookup_async(rpc, call_cb, &a, c);
}

static inline int send_access(struct rpc_context *rpc, struct call *c, const struct fh *fh,
                              uint32_t bits)
{
	ACCESS3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.object, fh);
	a.access = bits;
	c->x = x_access;
	return rpc_nfs3_access_async(rpc, call_cb, &a, c);
}

static inline int send_readlink(struct rpc_context *rpc, struct call *c, const struct fh *fh)
{
	READLINK3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.symlink, fh);
	c->x = x_readlink;
	return rpc_nfs3_readlink_async(rpc, call_cb, &a, c);
}

static inline int send_read(struct rpc_context *rpc, struct call *c, const struct fh *fh,
                            uint64_t off, uint32_t count)
{
	READ3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.file, fh);
	a.offset = off;
	a.count = count;
	c->x = x_read;
	return rpc_nfs3_read_async(rpc, call_cb, &a, c);
}

static inline int send_write(struct rpc_context *rpc, struct call *c, const struct fh *fh,
                             uint64_t off, const void *buf, uint32_t len, stable_how how)
{
	WRITE3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.file, fh);
	a.offset = off;
	a.count = len;
	a.stable = how;
	a.data.data_len = len;
	a.data.data_val = (char *)buf;
	c->x = x_write;
	return rpc_nfs3_write_async(rpc, call_cb, &a, c);
}

/* how EXCLUSIVE: verf (8 bytes), else the attributes sa */
static inline int send_create(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                              const char *name, createmode3 how, const sattr3 *sa, const char *verf)
{
	CREATE3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.where.dir, dir);
	a.where.name = (char *)name;
	a.how.mode = how;
	if (how == EXCLUSIVE)
		memcpy(a.how.createhow3_u.verf, verf, 8);
	else
		a.how.createhow3_u.obj_attributes = *sa;
	c->x = x_create;
	return rpc_nfs3_create_async(rpc, call_cb, &a, c);
}

static inline int send_mkdir(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                             const char *name, uint32_t mode)
{
	MKDIR3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.where.dir, dir);
	a.where.name = (char *)name;
	sattr_mode(&a.attributes, mode);
	c->x = x_mkdir;
	return rpc_nfs3_mkdir_async(rpc, call_cb, &a, c);
}

static inline int send_symlink(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                               const char *name, const char *target)
{
	SYMLINK3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.where.dir, dir);
	a.where.name = (char *)name;
	sattr_mode(&a.symlink.symlink_attributes, 0777);
	a.symlink.symlink_data = (char *)target;
	c->x = x_symlink;
	return rpc_nfs3_symlink_async(rpc, call_cb, &a, c);
}

static inline int send_mknod(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                             const char *name, ftype3 type, uint32_t mode, uint32_t major,
                             uint32_t minor)
{
	MKNOD3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.where.dir, dir);
	a.where.name = (char *)name;
	a.what.type = type;
	switch (type) {
	case NF3CHR:
	case NF3BLK:
		sattr_mode(&a.what.mknoddata3_u.chr_device.dev_attributes, mode);
		a.what.mknoddata3_u.chr_device.spec.specdata1 = major;
		a.what.mknoddata3_u.chr_device.spec.specdata2 = minor;
		break;
	case NF3SOCK:
		sattr_mode(&a.what.mknoddata3_u.sock_attributes, mode);
		break;
	case NF3FIFO:
		sattr_mode(&a.what.mknoddata3_u.pipe_attributes, mode);
		break;
	default:
		break;
	}
	c->x = x_mknod;
	return rpc_nfs3_mknod_async(rpc, call_cb, &a, c);
}

static inline int send_remove(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                              const char *name)
{
	REMOVE3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.object.dir, dir);
	a.object.name = (char *)name;
	c->x = x_remove;
	return rpc_nfs3_remove_async(rpc, call_cb, &a, c);
}

static inline int send_rmdir(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                             const char *name)
{
	RMDIR3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.object.dir, dir);
	a.object.name = (char *)name;
	c->x = x_rmdir;
	return rpc_nfs3_rmdir_async(rpc, call_cb, &a, c);
}

static inline int send_rename(struct rpc_context *rpc, struct call *c, const struct fh *fdir,
                              const char *fname, const struct fh *tdir, const char *tname)
{
	RENAME3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.from.dir, fdir);
	a.from.name = (char *)fname;
	fh_arg(&a.to.dir, tdir);
	a.to.name = (char *)tname;
	c->x = x_rename;
	return rpc_nfs3_rename_async(rpc, call_cb, &a, c);
}

static inline int send_link(struct rpc_context *rpc, struct call *c, const struct fh *file,
                            const struct fh *dir, const char *name)
{
	LINK3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.file, file);
	fh_arg(&a.link.dir, dir);
	a.link.name = (char *)name;
	c->x = x_link;
	return rpc_nfs3_link_async(rpc, call_cb, &a, c);
}

static inline int send_readdir(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                               uint64_t cookie, const unsigned char *verf, uint32_t count)
{
	READDIR3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.dir, dir);
	a.cookie = cookie;
	memcpy(a.cookieverf, verf, 8);
	a.count = count;
	c->x = x_readdir;
	return rpc_nfs3_readdir_async(rpc, call_cb, &a, c);
}

static inline int send_readdirplus(struct rpc_context *rpc, struct call *c, const struct fh *dir,
                                   uint64_t cookie, const unsigned char *verf, uint32_t dircount,
                                   uint32_t maxcount)
{
	READDIRPLUS3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.dir, dir);
	a.cookie = cookie;
	memcpy(a.cookieverf, verf, 8);
	a.dircount = dircount;
	a.maxcount = maxcount;
	c->x = x_readdirplus;
	return rpc_nfs3_readdirplus_async(rpc, call_cb, &a, c);
}

static inline int send_fsstat(struct rpc_context *rpc, struct call *c, const struct fh *fh)
{
	FSSTAT3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.fsroot, fh);
	c->x = x_fsstat;
	return rpc_nfs3_fsstat_async(rpc, call_cb, &a, c);
}

static inline int send_fsinfo(struct rpc_context *rpc, struct call *c, const struct fh *fh)
{
	FSINFO3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.fsroot, fh);
	c->x = x_fsinfo;
	return rpc_nfs3_fsinfo_async(rpc, call_cb, &a, c);
}

static inline int send_pathconf(struct rpc_context *rpc, struct call *c, const struct fh *fh)
{
	PATHCONF3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.object, fh);
	c->x = x_pathconf;
	return rpc_nfs3_pathconf_async(rpc, call_cb, &a, c);
}

static inline int send_commit(struct rpc_context *rpc, struct call *c, const struct fh *fh,
                              uint64_t off, uint32_t count)
{
	COMMIT3args a;

	memset(&a, 0, sizeof(a));
	fh_arg(&a.file, fh);
	a.offset = off;
	a.count = count;
	c->x = x_commit;
	return rpc_nfs3_commit_async(rpc, call_cb, &a, c);
}

/* ---- a tool's first steps: the export's root, a connection, a path ---- */

/* Sends with send (its result) and waits for c; 0 when answered with
 * RPC success, else -1 after a line on stderr: "TOOL: WHAT: why". */
static inline int call_done(const char *tool, struct rpc_context *rpc, struct call *c, int sent,
                            const char *what, long long timeout_ms)
{
	enum wait_end w = sent == 0 ? call_wait(rpc, c, timeout_ms) : WAIT_SERVICE;

	if (w == WAIT_DONE && c->status == RPC_STATUS_SUCCESS)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", tool, what,
	        w == WAIT_NOREPLY ? "no answer"
	        : w == WAIT_DONE && c->err[0] ? c->err
	                                      : rpc_get_error(rpc));
	return -1;
}

/* The root handle of export from the MOUNT service at host:mountport, on
 * a connection of its own: 0, or -1 after a line on stderr. */
static inline int mount_root(const char *tool, const char *host, int mountport, const char *export,
                             long long timeout_ms, struct fh *root)
{
	struct rpc_context *rpc = rpc_init_context();
	struct call c;
	struct res r;
	int rc = -1;

	if (rpc == NULL)
		return -1;
	memset(&r, 0, sizeof(r));
	call_prep(&c, NULL);
	if (call_done(tool, rpc, &c, send_connect(rpc, &c, host, mountport), "connect",
	              timeout_ms) != 0)
		goto out;
	call_prep(&c, &r);
	if (call_done(tool, rpc, &c, send_mnt(rpc, &c, export), "MNT", timeout_ms) != 0)
		goto out;
	if (r.stat != 0 || !r.has_fh) {
		fprintf(stderr, "%s: MNT %s failed (status %d)\n", tool, export, r.stat);
		goto out;
	}
	*root = r.fh;
	rc = 0;
out:
	rpc_destroy_context(rpc);
	return rc;
}

/* A connection to host:port whose calls carry AUTH_SYS uid/gid when
 * uid >= 0 (gid < 0: the uid); NULL after a line on stderr. */
static inline struct rpc_context *connect_nfs(const char *tool, const char *host, int port, int uid,
                                              int gid, long long timeout_ms)
{
	struct rpc_context *rpc = rpc_init_context();
	struct call c;

	if (rpc == NULL)
		return NULL;
	if (uid >= 0)
		rpc_set_auth(rpc, libnfs_authunix_create(tool, (uint32_t)uid,
		                                         (uint32_t)(gid >= 0 ? gid : uid), 0, NULL));
	call_prep(&c, NULL);
	if (call_done(tool, rpc, &c, send_connect(rpc, &c, host, port), "connect", timeout_ms) != 0) {
		rpc_destroy_context(rpc);
		return NULL;
	}
	return rpc;
}

/* Walks path ('/'-separated, "." and empty parts skipped) from *fh with
 * LOOKUP: 0 with *fh the object, or -1 after a line on stderr. */
static inline int walk_path(const char *tool, struct rpc_context *rpc, struct fh *fh,
                            const char *path, long long timeout_ms)
{
	char *copy = strdup(path), *save = NULL;
	int rc = copy ? 0 : -1;

	for (char *t = copy ? strtok_r(copy, "/", &save) : NULL; t; t = strtok_r(NULL, "/", &save)) {
		struct call c;
		struct res r;

		if (strcmp(t, ".") == 0)
			continue;
		memset(&r, 0, sizeof(r));
		call_prep(&c, &r);
		if (call_done(tool, rpc, &c, send_lookup(rpc, &c, fh, t), "LOOKUP", timeout_ms) != 0) {
			rc = -1;
			break;
		}
		if (r.stat != NFS3_OK || !r.has_fh) {
			fprintf(stderr, "%s: cannot walk to %s (at %s: status %d)\n", tool, path, t,
			        r.stat);
			rc = -1;
			break;
		}
		*fh = r.fh;
	}
	free(copy);
	return rc;
}

#endif
