/* MOUNT v3 (and v1), answered by the proxy.
 *
 * MNT of the export path returns the upstream's root handle (learned at
 * start-up); MNT of a path below it walks there with LOOKUPs upstream as the
 * caller, like a server that lets clients mount a subdirectory of an
 * export. EXPORT lists the one export; DUMP/UMNT/UMNTALL keep the list of
 * who mounted what (informational, as on any server).
 *
 * A walk costs up to MNT_MAX_DEPTH upstream LOOKUPs for one small call, so
 * walks are bounded: at most MNT_WALKS_MAX run at once and one per client
 * connection; other MNTs wait in arrival order, and when a walk ends,
 * every waiting MNT of the same path by the same credential gets its
 * answer (they overlapped it). 2000 pipelined MNTs of one deep path cost
 * one walk. */
#include "engine_int.h"
#include "log.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MNT_MAGIC 0x4d4e5431u /* "MNT1" */
#define MNT_MAX_DEPTH 64
#define MNT_WALKS_MAX 8

struct mnt_walk {
	uint32_t magic;
	struct engine *e;
	struct cfs_req *req;
	char *path;  /* owned copy of the part below the export, '/'-separated */
	char *nextc; /* next component in path */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fh_len;
	LOOKUP3args args; /* kept until the callback (re-send after reconnect) */
	int depth;
	uint64_t t_us; /* when the LOOKUP in flight was issued */
	struct mnt_walk *next; /* on the engine's wait or active list */
};

static void walk_step(struct mnt_walk *w);
static void walk_free(struct mnt_walk *w);

int engine_normalize_path(char *path)
{
	char *r = path, *w = path;

	if (path[0] != '/')
		return -EINVAL;
	while (*r) {
		if (*r == '/') {
			while (r[1] == '/')
				r++;
			if (r[1] == 0 && w != path)
				break; /* trailing slash */
		}
		*w++ = *r++;
	}
	*w = 0;
	if (w == path) {
		path[0] = '/';
		path[1] = 0;
	}
	/* refuse "." and ".." components: a mount must not leave the export */
	for (char *p = path; (p = strchr(p, '/')) != NULL; p++) {
		if ((p[1] == '.' && (p[2] == '/' || p[2] == 0)) ||
		    (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == 0)))
			return -EINVAL;
	}
	return 0;
}

static void reply_mnt(struct engine *e, struct cfs_req *req, mountstat3 st, const uint8_t *fh,
                      uint32_t fh_len)
{
	mountres3 res;
	int flavors[] = {AUTH_UNIX, AUTH_NONE};

	memset(&res, 0, sizeof(res));
	res.fhs_status = st;
	if (st == MNT3_OK) {
		res.mountres3_u.mountinfo.fhandle.fhandle3_len = fh_len;
		res.mountres3_u.mountinfo.fhandle.fhandle3_val = (char *)fh;
		res.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 2;
		res.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
	}
	engine_reply(e, req, &res);
}

static void mounts_add(struct engine *e, const char *host, const char *dir)
{
	struct mount_entry *m;

	for (m = e->mounts; m; m = m->next)
		if (strcmp(m->host, host) == 0 && strcmp(m->dir, dir) == 0)
			return;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return;
	m->host = strdup(host);
	m->dir = strdup(dir);
	if (m->host == NULL || m->dir == NULL) {
		free(m->host);
		free(m->dir);
		free(m);
		return;
	}
	m->next = e->mounts;
	e->mounts = m;
}

/* Removes host's entries for dir (all of host's when dir is NULL). */
static void mounts_remove(struct engine *e, const char *host, const char *dir)
{
	struct mount_entry **pp = &e->mounts;

	while (*pp) {
		struct mount_entry *m = *pp;
		if (strcmp(m->host, host) == 0 && (dir == NULL || strcmp(m->dir, dir) == 0)) {
			*pp = m->next;
			free(m->host);
			free(m->dir);
			free(m);
		} else {
			pp = &m->next;
		}
	}
}

void mount_free_all(struct engine *e)
{
	while (e->mnt_wait_head) {
		struct mnt_walk *w = e->mnt_wait_head;
		e->mnt_wait_head = w->next;
		proto_drop(w->req);
		walk_free(w);
	}
	e->mnt_wait_tail = NULL;
	e->ctr.mount_walks_waiting = 0;
	while (e->mounts) {
		struct mount_entry *m = e->mounts;
		e->mounts = m->next;
		free(m->host);
		free(m->dir);
		free(m);
	}
}

static mountstat3 mountstat_of(nfsstat3 st)
{
	switch (st) {
	case NFS3ERR_NOENT:
		return MNT3ERR_NOENT;
	case NFS3ERR_ACCES:
	case NFS3ERR_PERM:
		return MNT3ERR_ACCES;
	case NFS3ERR_NOTDIR:
		return MNT3ERR_NOTDIR;
	case NFS3ERR_NAMETOOLONG:
		return MNT3ERR_NAMETOOLONG;
	case NFS3ERR_INVAL:
		return MNT3ERR_INVAL;
	default:
		return MNT3ERR_IO;
	}
}

static void walk_free(struct mnt_walk *w)
{
	w->magic = 0;
	free(w->path);
	free(w);
}

static void list_remove(struct mnt_walk **head, struct mnt_walk **tail, struct mnt_walk *w)
{
	struct mnt_walk *prev = NULL;

	for (struct mnt_walk *x = *head; x; prev = x, x = x->next) {
		if (x != w)
			continue;
		if (prev)
			prev->next = x->next;
		else
			*head = x->next;
		if (tail && *tail == x)
			*tail = prev;
		x->next = NULL;
		return;
	}
}

static int conn_walking(const struct engine *e, const struct proto_conn *conn)
{
	if (conn == NULL)
		return 0;
	for (const struct mnt_walk *a = e->mnt_active; a; a = a->next)
		if (a->req->conn == conn)
			return 1;
	return 0;
}

/* Starts waiting walks while slots are free: the first in line whose
 * connection has none running. A walk answered without the upstream (ttl
 * mode) ends inside walk_step() and schedules again: that is a flag here,
 * not a recursion. */
static void mnt_schedule(struct engine *e)
{
	if (e->mnt_scheduling) {
		e->mnt_again = 1;
		return;
	}
	e->mnt_scheduling = 1;
	do {
		e->mnt_again = 0;
		while (e->mnt_nactive < MNT_WALKS_MAX && !e->stopping) {
			struct mnt_walk *w = e->mnt_wait_head;

			while (w && conn_walking(e, w->req->conn))
				w = w->next;
			if (w == NULL)
				break;
			list_remove(&e->mnt_wait_head, &e->mnt_wait_tail, w);
			e->ctr.mount_walks_waiting--;
			if (!engine_req_alive(e, w->req)) {
				proto_drop(w->req); /* its client went away */
				walk_free(w);
				continue;
			}
			w->next = e->mnt_active;
			e->mnt_active = w;
			e->mnt_nactive++;
			e->ctr.mount_walks++;
			walk_step(w);
		}
	} while (e->mnt_again);
	e->mnt_scheduling = 0;
}

static void mounted(struct engine *e, struct cfs_req *req, const uint8_t *fh, uint32_t fh_len);

/* w's walk ended with st (MNT3_OK with fh): the answer of w and of every
 * waiting MNT of the same path and credential; -1 drops them all (the
 * upstream is going away). */
static void walk_end(struct mnt_walk *w, int st, const uint8_t *fh, uint32_t fh_len)
{
	struct engine *e = w->e;
	struct mnt_walk *x = e->mnt_wait_head, *next;

	for (; x; x = next) {
		next = x->next;
		if (strcmp(x->req->args.mntpath, w->req->args.mntpath) != 0 ||
		    !cfs_cred_equal(&x->req->cred, &w->req->cred))
			continue;
		list_remove(&e->mnt_wait_head, &e->mnt_wait_tail, x);
		e->ctr.mount_walks_waiting--;
		e->ctr.mount_walks_shared++;
		if (st < 0)
			proto_drop(x->req);
		else if (st == MNT3_OK)
			mounted(e, x->req, fh, fh_len);
		else
			reply_mnt(e, x->req, (mountstat3)st, NULL, 0);
		walk_free(x);
	}
	if (st < 0)
		proto_drop(w->req);
	else if (st == MNT3_OK)
		mounted(e, w->req, fh, fh_len);
	else
		reply_mnt(e, w->req, (mountstat3)st, NULL, 0);
	list_remove(&e->mnt_active, NULL, w);
	e->mnt_nactive--;
	walk_free(w);
	mnt_schedule(e);
}

static void walk_done(int status, void *res, void *priv)
{
	struct mnt_walk *w = priv;
	LOOKUP3res *r = res;

	assert(w->magic == MNT_MAGIC);
	if (status == 0) {
		/* what the server said is what a LOOKUP by the client would
		 * have learned: attributes, and in ttl mode the name */
		struct engine_call call = {.prog = NFS_PROGRAM,
		                           .proc = NFS3_LOOKUP,
		                           .t_call_us = w->t_us,
		                           .cred = w->req->cred,
		                           .args.lookup = w->args};

		engine_answered(w->e, &call, r);
	}
	if (status != 0) {
		walk_end(w,
		         status == -ECANCELED		? -1
		         : status == UPSTREAM_E_DENIED ? MNT3ERR_ACCES
		                                       : MNT3ERR_IO,
		         NULL, 0);
		return;
	}
	if (r->status != NFS3_OK) {
		walk_end(w, mountstat_of(r->status), NULL, 0);
		return;
	}
	nfs_fh3 *obj = &r->LOOKUP3res_u.resok.object;
	if (obj->data.data_len == 0 || obj->data.data_len > NFS3_FHSIZE) {
		walk_end(w, MNT3ERR_SERVERFAULT, NULL, 0);
		return;
	}
	post_op_attr *a = &r->LOOKUP3res_u.resok.obj_attributes;
	if (a->attributes_follow && a->post_op_attr_u.attributes.type != NF3DIR) {
		/* only directories can be mounted (and walked through) */
		walk_end(w, MNT3ERR_NOTDIR, NULL, 0);
		return;
	}
	memcpy(w->fh, obj->data.data_val, obj->data.data_len);
	w->fh_len = obj->data.data_len;
	walk_step(w);
}

/* The caller may search dir, as the server answered it before. */
static int walk_may_search(struct mnt_walk *w, const nfs_fh3 *dir)
{
	fattr3 attrs;

	if (meta_get_attrs(w->e, dir, &attrs) == 0 &&
	    engine_evidence(w->e, dir, &w->req->cred, ACCESS3_LOOKUP, &attrs) == EV_SERVE)
		return 1;
	w->e->ctr.meta_no_evidence++;
	return 0;
}

/* ttl mode: the next component from the metadata cache, as a LOOKUP would
 * be answered. Returns 1 when it was (w->fh moved on, or w was answered
 * and freed: *done), 0 when the server must be asked. */
static int walk_cached(struct mnt_walk *w, const char *name, int *done)
{
	nfs_fh3 dir = {{w->fh_len, (char *)w->fh}};
	uint8_t child[NFS3_FHSIZE];
	uint32_t len = 0;
	fattr3 attrs;
	int known = meta_child(w->e, &dir, name, child, &len);

	*done = 0;
	if (known == 0 && walk_may_search(w, &dir)) {
		w->e->ctr.meta_hits++;
		*done = 1;
		walk_end(w, MNT3ERR_NOENT, NULL, 0);
		return 1;
	}
	if (known <= 0)
		return 0;
	nfs_fh3 c = {{len, (char *)child}};
	if (meta_get_attrs(w->e, &c, &attrs) != 0)
		return 0; /* the name is known, what it is not: ask */
	if (!walk_may_search(w, &dir))
		return 0;
	w->e->ctr.meta_hits++;
	if (attrs.type != NF3DIR) {
		*done = 1;
		walk_end(w, MNT3ERR_NOTDIR, NULL, 0);
		return 1;
	}
	memcpy(w->fh, child, len);
	w->fh_len = len;
	return 1;
}

static void mounted(struct engine *e, struct cfs_req *req, const uint8_t *fh, uint32_t fh_len)
{
	mounts_add(e, proto_req_peer(req), req->args.mntpath);
	log_debug("client %s mounted %s", proto_req_peer(req), req->args.mntpath);
	reply_mnt(e, req, MNT3_OK, fh, fh_len);
}

static void walk_step(struct mnt_walk *w)
{
	char *name, *slash;
	int rc;

next:
	name = w->nextc;
	if (name == NULL || *name == 0) {
		walk_end(w, MNT3_OK, w->fh, w->fh_len);
		return;
	}
	if (++w->depth > MNT_MAX_DEPTH) {
		walk_end(w, MNT3ERR_NAMETOOLONG, NULL, 0);
		return;
	}
	slash = strchr(name, '/');
	if (slash) {
		*slash = 0;
		w->nextc = slash + 1;
	} else {
		w->nextc = NULL;
	}
	if (meta_enabled(w->e)) {
		int done;

		if (walk_cached(w, name, &done)) {
			if (done)
				return;
			goto next;
		}
		w->e->ctr.meta_misses++;
	}
	memset(&w->args, 0, sizeof(w->args));
	w->args.what.dir.data.data_len = w->fh_len;
	w->args.what.dir.data.data_val = (char *)w->fh;
	w->args.what.name = name;
	w->t_us = loop_clock_us();
	rc = engine_up_call(w->e, NFS3_LOOKUP, &w->args, &w->req->cred, walk_done, w);
	if (rc != 0)
		walk_end(w, MNT3ERR_SERVERFAULT, NULL, 0);
}

static void do_mnt(struct engine *e, struct cfs_req *req)
{
	const struct upstream_info *ui = engine_up_info(e);
	char *path = req->args.mntpath;
	size_t el = strlen(e->export_path);
	const struct sockaddr_storage *peer = proto_req_peer_addr(req);

	if (peer && !config_allowed(e->cfg, peer)) {
		static struct log_limit lim;

		e->ctr.mounts_refused++;
		log_limited(&lim, CFS_LOG_WARN, "client %s: MNT %s refused (not in allow)",
		            proto_req_peer(req), path);
		reply_mnt(e, req, MNT3ERR_ACCES, NULL, 0);
		return;
	}
	if (engine_normalize_path(path) != 0) {
		e->ctr.mounts_refused++;
		reply_mnt(e, req, MNT3ERR_INVAL, NULL, 0);
		return;
	}
	if (strcmp(path, e->export_path) == 0) {
		mounted(e, req, ui->root_fh, ui->root_fh_len);
		return;
	}
	const char *below = NULL;
	if (strcmp(e->export_path, "/") == 0)
		below = path + 1;
	else if (strncmp(path, e->export_path, el) == 0 && path[el] == '/')
		below = path + el + 1;
	if (below == NULL) {
		static struct log_limit lim;

		e->ctr.mounts_refused++;
		log_limited(&lim, CFS_LOG_INFO, "client %s: MNT %s: not exported (export is %s)",
		            proto_req_peer(req), path, e->export_path);
		reply_mnt(e, req, MNT3ERR_NOENT, NULL, 0);
		return;
	}
	struct mnt_walk *w = calloc(1, sizeof(*w));
	if (w == NULL || (w->path = strdup(below)) == NULL) {
		free(w);
		reply_mnt(e, req, MNT3ERR_SERVERFAULT, NULL, 0);
		return;
	}
	w->magic = MNT_MAGIC;
	w->e = e;
	w->req = req;
	w->nextc = w->path;
	memcpy(w->fh, ui->root_fh, ui->root_fh_len);
	w->fh_len = ui->root_fh_len;
	/* in line behind the walks already waiting */
	if (e->mnt_wait_tail)
		e->mnt_wait_tail->next = w;
	else
		e->mnt_wait_head = w;
	e->mnt_wait_tail = w;
	e->ctr.mount_walks_waiting++;
	mnt_schedule(e);
}

/* MOUNT v1's MNT answers a fixed 32-byte fhandle (RFC 1094), and the handles
 * cachefsd hands out are the filer's own, up to 64 bytes, unchanged (no
 * translation table: docs/design.md): a v1 handle cannot carry them, and a
 * v1 handle is for NFSv2, which the proxy does not serve. So MNT v1 is
 * refused with MNT1ERR_NOTSUPP ("operation not supported", the status the
 * request really meets); a client that maps only the classic errno
 * statuses shows it as EACCES. The other v1 procedures are v3's and are
 * served (showmount asks v1 for EXPORT and DUMP). */
static void do_mnt1(struct engine *e, struct cfs_req *req)
{
	mountres1 res;

	memset(&res, 0, sizeof(res));
	res.fhs_status = MNT1ERR_NOTSUPP;
	e->ctr.mounts_refused++;
	engine_reply(e, req, &res);
}

static void do_export(struct engine *e, struct cfs_req *req)
{
	exportnode node;
	exports list = &node;
	groupnode groups[CFS_MAX_ALLOW];
	char names[CFS_MAX_ALLOW][64];
	int n = 0;

	memset(&node, 0, sizeof(node));
	node.ex_dir = e->export_path;
	/* the allow list, as servers list an export's client groups */
	char *copy = strdup(e->cfg->allow ? e->cfg->allow : "");
	char *save = NULL;
	for (char *t = copy ? strtok_r(copy, ", \t", &save) : NULL; t && n < CFS_MAX_ALLOW;
	     t = strtok_r(NULL, ", \t", &save)) {
		snprintf(names[n], sizeof(names[n]), "%s", t);
		groups[n].gr_name = names[n];
		groups[n].gr_next = NULL;
		if (n > 0)
			groups[n - 1].gr_next = &groups[n];
		n++;
	}
	free(copy);
	node.ex_groups = n ? &groups[0] : NULL;
	engine_reply(e, req, &list);
}

static void do_dump(struct engine *e, struct cfs_req *req)
{
	size_t n = 0, i = 0;
	mountlist list = NULL;
	mountbody *bodies;

	for (struct mount_entry *m = e->mounts; m; m = m->next)
		n++;
	bodies = calloc(n ? n : 1, sizeof(*bodies));
	if (bodies == NULL) {
		proto_reply_accept_error(req, SYSTEM_ERR);
		return;
	}
	for (struct mount_entry *m = e->mounts; m; m = m->next, i++) {
		bodies[i].ml_hostname = m->host;
		bodies[i].ml_directory = m->dir;
		bodies[i].ml_next = i + 1 < n ? &bodies[i + 1] : NULL;
	}
	if (n)
		list = &bodies[0];
	engine_reply(e, req, &list);
	free(bodies);
}

static void do_null(struct engine *e, struct cfs_req *req)
{
	engine_reply(e, req, NULL);
}

static void do_umnt(struct engine *e, struct cfs_req *req)
{
	if (engine_normalize_path(req->args.mntpath) == 0)
		mounts_remove(e, proto_req_peer(req), req->args.mntpath);
	engine_reply(e, req, NULL);
}

static void do_umntall(struct engine *e, struct cfs_req *req)
{
	mounts_remove(e, proto_req_peer(req), NULL);
	engine_reply(e, req, NULL);
}

/* The MOUNT program's procedures by number (RFC 1813 appendix I); the
 * wire's rows (proto/procs.c) say how their calls and replies look. */
static void (*const mount_procs[MOUNT3_NPROCS])(struct engine *e, struct cfs_req *req) = {
    [MOUNT3_NULL] = do_null, [MOUNT3_MNT] = do_mnt,         [MOUNT3_DUMP] = do_dump,
    [MOUNT3_UMNT] = do_umnt, [MOUNT3_UMNTALL] = do_umntall, [MOUNT3_EXPORT] = do_export,
};

void mount_submit(struct engine *e, struct cfs_req *req)
{
	if (req->proc >= MOUNT3_NPROCS || mount_procs[req->proc] == NULL) {
		proto_reply_accept_error(req, PROC_UNAVAIL);
		return;
	}
	e->ctr.mount_calls[req->proc]++;
	if (req->vers == MOUNT_V1 && req->proc == MOUNT1_MNT)
		do_mnt1(e, req);
	else
		mount_procs[req->proc](e, req);
}
