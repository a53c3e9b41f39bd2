/* MOUNT v3, answered by the proxy.
 *
 * MNT of the export path returns the upstream's root handle (learned at
 * start-up); MNT of a path below it walks there with LOOKUPs upstream as the
 * caller, like a server that lets clients mount a subdirectory of an
 * export. EXPORT lists the one export; DUMP/UMNT/UMNTALL keep the list of
 * who mounted what (informational, as on any server). */
#include "engine_int.h"
#include "log.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MNT_MAGIC 0x4d4e5431u /* "MNT1" */
#define MNT_MAX_DEPTH 64

struct mnt_walk {
	uint32_t magic;
	struct engine *e;
	struct cfs_req *req;
	char *path;  /* owned copy of the part below the export, '/'-separated */
	char *next;  /* next component in path */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fh_len;
	LOOKUP3args args; /* kept until the callback (re-send after reconnect) */
	int depth;
	uint64_t t_us; /* when the LOOKUP in flight was issued */
};

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

static void reply_mnt(struct cfs_req *req, mountstat3 st, const uint8_t *fh, uint32_t fh_len)
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
	proto_reply(req, &res);
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

static void walk_step(struct mnt_walk *w);

static void walk_done(int status, void *res, void *priv)
{
	struct mnt_walk *w = priv;
	LOOKUP3res *r = res;

	assert(w->magic == MNT_MAGIC);
	if (status == 0) {
		/* what the server said is what a LOOKUP by the client would
		 * have learned: attributes, and in ttl mode the name */
		struct cfs_req fake;

		memset(&fake, 0, sizeof(fake));
		fake.prog = NFS_PROGRAM;
		fake.proc = NFS3_LOOKUP;
		fake.cred = w->req->cred;
		fake.args.lookup = w->args;
		fake.t_start_us = w->t_us;
		engine_observe_result(w->e, &fake, r);
	}
	if (status != 0) {
		if (status == -ECANCELED)
			proto_drop(w->req);
		else
			reply_mnt(w->req, status == UPSTREAM_E_DENIED ? MNT3ERR_ACCES : MNT3ERR_IO,
			          NULL, 0);
		walk_free(w);
		return;
	}
	if (r->status != NFS3_OK) {
		reply_mnt(w->req, mountstat_of(r->status), NULL, 0);
		walk_free(w);
		return;
	}
	nfs_fh3 *obj = &r->LOOKUP3res_u.resok.object;
	if (obj->data.data_len == 0 || obj->data.data_len > NFS3_FHSIZE) {
		reply_mnt(w->req, MNT3ERR_SERVERFAULT, NULL, 0);
		walk_free(w);
		return;
	}
	post_op_attr *a = &r->LOOKUP3res_u.resok.obj_attributes;
	if (a->attributes_follow && a->post_op_attr_u.attributes.type != NF3DIR) {
		/* only directories can be mounted (and walked through) */
		reply_mnt(w->req, MNT3ERR_NOTDIR, NULL, 0);
		walk_free(w);
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
		reply_mnt(w->req, MNT3ERR_NOENT, NULL, 0);
		*done = 1;
		walk_free(w);
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
		reply_mnt(w->req, MNT3ERR_NOTDIR, NULL, 0);
		*done = 1;
		walk_free(w);
		return 1;
	}
	memcpy(w->fh, child, len);
	w->fh_len = len;
	return 1;
}

static void walk_step(struct mnt_walk *w)
{
	char *name, *slash;
	int rc;

next:
	name = w->next;
	if (name == NULL || *name == 0) {
		mounts_add(w->e, proto_req_peer(w->req), w->req->args.mntpath);
		log_debug("client %s mounted %s", proto_req_peer(w->req), w->req->args.mntpath);
		reply_mnt(w->req, MNT3_OK, w->fh, w->fh_len);
		walk_free(w);
		return;
	}
	if (++w->depth > MNT_MAX_DEPTH) {
		reply_mnt(w->req, MNT3ERR_NAMETOOLONG, NULL, 0);
		walk_free(w);
		return;
	}
	slash = strchr(name, '/');
	if (slash) {
		*slash = 0;
		w->next = slash + 1;
	} else {
		w->next = NULL;
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
	rc = upstream_call(w->e->up, NFS3_LOOKUP, &w->args, &w->req->cred, walk_done, w);
	if (rc != 0) {
		reply_mnt(w->req, MNT3ERR_SERVERFAULT, NULL, 0);
		walk_free(w);
	}
}

static void do_mnt(struct engine *e, struct cfs_req *req)
{
	const struct upstream_info *ui = upstream_info(e->up);
	char *path = req->args.mntpath;
	size_t el = strlen(e->export_path);
	const struct sockaddr_storage *peer = proto_req_peer_addr(req);

	if (peer && !config_allowed(e->cfg, peer)) {
		e->ctr.mounts_refused++;
		log_warn("client %s: MNT %s refused (not in allow)", proto_req_peer(req), path);
		reply_mnt(req, MNT3ERR_ACCES, NULL, 0);
		return;
	}
	if (engine_normalize_path(path) != 0) {
		e->ctr.mounts_refused++;
		reply_mnt(req, MNT3ERR_INVAL, NULL, 0);
		return;
	}
	if (strcmp(path, e->export_path) == 0) {
		mounts_add(e, proto_req_peer(req), path);
		log_debug("client %s mounted %s", proto_req_peer(req), path);
		reply_mnt(req, MNT3_OK, ui->root_fh, ui->root_fh_len);
		return;
	}
	const char *below = NULL;
	if (strcmp(e->export_path, "/") == 0)
		below = path + 1;
	else if (strncmp(path, e->export_path, el) == 0 && path[el] == '/')
		below = path + el + 1;
	if (below == NULL) {
		e->ctr.mounts_refused++;
		log_info("client %s: MNT %s: not exported (export is %s)", proto_req_peer(req),
			 path, e->export_path);
		reply_mnt(req, MNT3ERR_NOENT, NULL, 0);
		return;
	}
	struct mnt_walk *w = calloc(1, sizeof(*w));
	if (w == NULL || (w->path = strdup(below)) == NULL) {
		free(w);
		reply_mnt(req, MNT3ERR_SERVERFAULT, NULL, 0);
		return;
	}
	w->magic = MNT_MAGIC;
	w->e = e;
	w->req = req;
	w->next = w->path;
	memcpy(w->fh, ui->root_fh, ui->root_fh_len);
	w->fh_len = ui->root_fh_len;
	walk_step(w);
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
	proto_reply(req, &list);
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
	proto_reply(req, &list);
	free(bodies);
}

void mount_submit(struct engine *e, struct cfs_req *req)
{
	if (req->proc < 6)
		e->ctr.mount_calls[req->proc]++;
	switch (req->proc) {
	case MOUNT3_NULL:
		proto_reply(req, NULL);
		return;
	case MOUNT3_MNT:
		do_mnt(e, req);
		return;
	case MOUNT3_DUMP:
		do_dump(e, req);
		return;
	case MOUNT3_UMNT:
		if (engine_normalize_path(req->args.mntpath) == 0)
			mounts_remove(e, proto_req_peer(req), req->args.mntpath);
		proto_reply(req, NULL);
		return;
	case MOUNT3_UMNTALL:
		mounts_remove(e, proto_req_peer(req), NULL);
		proto_reply(req, NULL);
		return;
	case MOUNT3_EXPORT:
		do_export(e, req);
		return;
	default:
		proto_reply_accept_error(req, PROC_UNAVAIL);
		return;
	}
}
