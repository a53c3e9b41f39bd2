/* nfsop: one file operation over NFSv3 with libnfs's synchronous API, for
 * tests that change things through the proxy or directly on the server.
 *
 *   nfsop [--uid U --gid G] URL CMD [ARGS]
 *     URL   nfs://HOST/EXPORT?nfsport=N&mountport=M (the export root)
 *     write PATH        stdin becomes the file's content (created/truncated)
 *     overwrite PATH    stdin overwrites the start of PATH, no truncation
 *     append PATH       stdin is appended
 *     cat PATH          the file's bytes to stdout
 *     stat PATH         "size MTIME_S.NS MODE"
 *     ls DIR            the names in DIR, sorted, one per line (no . and ..)
 *     lsl DIR           "name size" per line, sorted
 *     mkdir PATH | rmdir PATH | rm PATH | rename FROM TO | symlink TARGET PATH
 *     chmod OCTAL PATH | chown UID:GID PATH | truncate SIZE PATH
 * Exit 0, or 1 with libnfs's error on stderr.
 *
 * A URL with version=4 (nfs://HOST/PATH?nfsport=N&version=4, PATH in the
 * server's NFSv4 pseudo-filesystem) runs the same commands over NFSv4.0
 * through the daemon's NFSv4.0 module (cachefsd/upstream/nfs4.c, the
 * NFSv3 procedures it builds), for a server that speaks only NFSv4 (the
 * kernel nfsd guest with NFSv3 off). Not libnfs's own NFSv4 client: 4.0's
 * creates files with mode 0, cannot chmod or chown a directory, and
 * fails to encode a 64 KiB WRITE. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

#include "log.h"
#include "loop.h"
#include "nfs4up.h"

static struct nfs_context *nfs;

static int fail(const char *what)
{
	fprintf(stderr, "nfsop: %s: %s\n", what, nfs_get_error(nfs));
	return 1;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int do_write(const char *path, int flags)
{
	struct nfsfh *fh;
	char buf[65536];
	ssize_t n;

	if (nfs_open2(nfs, path, flags, 0644, &fh) != 0)
		return fail(path);
	while ((n = read(0, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			int w = nfs_write(nfs, fh, (uint64_t)(n - off), buf + off);
			if (w <= 0)
				return fail("write");
			off += w;
		}
	}
	if (nfs_fsync(nfs, fh) != 0)
		return fail("fsync");
	nfs_close(nfs, fh);
	return 0;
}

static int do_cat(const char *path)
{
	struct nfsfh *fh;
	char buf[65536];
	int n;

	if (nfs_open(nfs, path, O_RDONLY, &fh) != 0)
		return fail(path);
	while ((n = nfs_read(nfs, fh, sizeof(buf), buf)) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
	if (n < 0)
		return fail("read");
	nfs_close(nfs, fh);
	return 0;
}

static int do_ls(const char *dir, int sizes)
{
	struct nfsdir *d;
	struct nfsdirent *ent;
	char **names = NULL;
	uint64_t *sz = NULL;
	size_t n = 0;

	if (nfs_opendir(nfs, dir, &d) != 0)
		return fail(dir);
	while ((ent = nfs_readdir(nfs, d)) != NULL) {
		if (strcmp(ent->name, ".") == 0 || strcmp(ent->name, "..") == 0)
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		sz = realloc(sz, (n + 1) * sizeof(*sz));
		if (names == NULL || sz == NULL)
			return 1;
		size_t l = strlen(ent->name);
		names[n] = malloc(l + 32);
		if (names[n] == NULL)
			return 1;
		if (sizes)
			snprintf(names[n], l + 32, "%s %llu", ent->name,
				 (unsigned long long)ent->size);
		else
			snprintf(names[n], l + 32, "%s", ent->name);
		n++;
	}
	nfs_closedir(nfs, d);
	if (n > 0) /* an empty listing has no array (qsort's first argument is nonnull) */
		qsort(names, n, sizeof(*names), cmpstr);
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", names[i]);
		free(names[i]);
	}
	free(names);
	free(sz);
	return 0;
}

/* --- NFSv4: the commands over the daemon's NFSv4.0 module ------------------ */

struct v4 {
	struct loop *loop;
	struct n4_client *n4;
	struct cfs_cred cred;
	struct n4_fh root;
};

struct ent4 {
	char *name;
	uint64_t size;
};

/* what one call's answer leaves for its caller */
struct r4 {
	uint32_t proc;
	int done;
	int status; /* the module's: 0 answered, < 0 none */
	int stat;   /* nfsstat3 */
	struct n4_fh fh;
	int has_attr;
	fattr3 attr;
	uint32_t count; /* READ / WRITE */
	int eof;
	FILE *out; /* READ: where the bytes go */
	/* READDIRPLUS */
	uint64_t cookie;
	char verf[NFS3_COOKIEVERFSIZE];
	struct ent4 *e;
	size_t n, got;
};

static void post_attr(struct r4 *r, const post_op_attr *a)
{
	r->has_attr = a->attributes_follow;
	if (a->attributes_follow)
		r->attr = a->post_op_attr_u.attributes;
}

static void v4_take(int status, void *res3, const struct n4_coh *coh, void *priv)
{
	struct r4 *r = priv;

	(void)coh;
	r->done = 1;
	r->status = status;
	if (status != 0)
		return;
	r->stat = *(const int *)res3; /* every *3res begins with its nfsstat3 */
	if (r->stat != NFS3_OK)
		return;
	switch (r->proc) {
	case NFS3_LOOKUP: {
		LOOKUP3resok *ok = &((LOOKUP3res *)res3)->LOOKUP3res_u.resok;
		r->fh.len = ok->object.data.data_len;
		if (r->fh.len > N4_FHSIZE)
			r->fh.len = N4_FHSIZE;
		memcpy(r->fh.data, ok->object.data.data_val, r->fh.len);
		post_attr(r, &ok->obj_attributes);
		break;
	}
	case NFS3_GETATTR:
		r->has_attr = 1;
		r->attr = ((GETATTR3res *)res3)->GETATTR3res_u.resok.obj_attributes;
		break;
	case NFS3_READ: {
		READ3resok *ok = &((READ3res *)res3)->READ3res_u.resok;
		r->count = ok->count;
		r->eof = ok->eof;
		if (fwrite(ok->data.data_val, 1, ok->data.data_len, r->out) != ok->data.data_len)
			r->stat = NFS3ERR_IO;
		break;
	}
	case NFS3_WRITE:
		r->count = ((WRITE3res *)res3)->WRITE3res_u.resok.count;
		break;
	case NFS3_READDIRPLUS: {
		READDIRPLUS3resok *ok = &((READDIRPLUS3res *)res3)->READDIRPLUS3res_u.resok;
		entryplus3 e;
		memcpy(r->verf, ok->cookieverf, sizeof(r->verf));
		r->eof = ok->reply.eof;
		r->got = 0;
		for (const void *p = ok->reply.entries; p; p = e.nextentry) {
			memcpy(&e, p, sizeof(e)); /* libnfs: 4-byte aligned entries */
			r->cookie = e.cookie;
			r->got++;
			if (strcmp(e.name, ".") == 0 || strcmp(e.name, "..") == 0)
				continue;
			struct ent4 *x = realloc(r->e, (r->n + 1) * sizeof(*r->e));
			if (x == NULL)
				abort();
			r->e = x;
			r->e[r->n].name = strdup(e.name);
			r->e[r->n].size = e.name_attributes.attributes_follow
			                      ? e.name_attributes.post_op_attr_u.attributes.size
			                      : 0;
			if (r->e[r->n++].name == NULL)
				abort();
		}
		break;
	}
	default: /* the status is all */
		break;
	}
}

/* One call, waited for: 0 answered NFS3_OK, 1 otherwise (message on stderr). */
static int v4_call(struct v4 *v, uint32_t proc, const void *args, struct r4 *r, const char *what)
{
	int rc;

	r->proc = proc;
	r->done = 0;
	r->status = 0;
	r->stat = 0;
	rc = n4_call(v->n4, proc, args, &v->cred, v4_take, r);
	if (rc) {
		fprintf(stderr, "nfsop: %s: %s\n", what, strerror(-rc));
		return 1;
	}
	/* hard, as the module is: it re-sends across reconnects itself */
	while (!r->done)
		loop_once(v->loop, 1000);
	if (r->status) {
		fprintf(stderr, "nfsop: %s: no answer (%d)\n", what, r->status);
		return 1;
	}
	if (r->stat != NFS3_OK) {
		fprintf(stderr, "nfsop: %s: nfsstat3 %d\n", what, r->stat);
		return 1;
	}
	return 0;
}

static void fh3(nfs_fh3 *dst, const struct n4_fh *fh)
{
	dst->data.data_len = fh->len;
	dst->data.data_val = (char *)fh->data;
}

/* PATH (relative to the export, "." its root) looked up component by
 * component; its handle in fh */
static int v4_walk(struct v4 *v, const char *path, struct n4_fh *fh)
{
	char buf[1024], *save = NULL;
	struct r4 r;

	memset(&r, 0, sizeof(r));
	*fh = v->root;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		LOOKUP3args a;
		if (strcmp(p, ".") == 0)
			continue;
		memset(&a, 0, sizeof(a));
		fh3(&a.what.dir, fh);
		a.what.name = p;
		if (v4_call(v, NFS3_LOOKUP, &a, &r, path))
			return 1;
		*fh = r.fh;
	}
	return 0;
}

/* PATH's directory (looked up) and last name */
static int v4_parent(struct v4 *v, const char *path, struct n4_fh *dir, char name[256])
{
	char d[1024];
	const char *sl = strrchr(path, '/');

	snprintf(name, 256, "%s", sl ? sl + 1 : path);
	snprintf(d, sizeof(d), "%.*s", sl ? (int)(sl - path) : 1, sl ? path : ".");
	return v4_walk(v, d, dir);
}

static int v4_getattr(struct v4 *v, const struct n4_fh *fh, struct r4 *r, const char *what)
{
	GETATTR3args a;

	memset(&a, 0, sizeof(a));
	fh3(&a.object, fh);
	return v4_call(v, NFS3_GETATTR, &a, r, what);
}

static int v4_setattr(struct v4 *v, const char *path, const sattr3 *sa)
{
	SETATTR3args a;
	struct n4_fh fh;
	struct r4 r;

	memset(&r, 0, sizeof(r));
	if (v4_walk(v, path, &fh))
		return 1;
	memset(&a, 0, sizeof(a));
	fh3(&a.object, &fh);
	a.new_attributes = *sa;
	return v4_call(v, NFS3_SETATTR, &a, &r, path);
}

/* stdin at offset 0 (write: the file created or truncated; overwrite), or
 * at its end (append), FILE_SYNC */
static int v4_write(struct v4 *v, const char *path, int how)
{
	static char buf[65536];
	struct n4_fh fh;
	struct r4 r;
	uint64_t off = 0;
	ssize_t n;

	memset(&r, 0, sizeof(r));
	if (how == 0) {
		CREATE3args c;
		char name[256];
		memset(&c, 0, sizeof(c));
		if (v4_parent(v, path, &fh, name))
			return 1;
		fh3(&c.where.dir, &fh);
		c.where.name = name;
		c.how.mode = UNCHECKED;
		c.how.createhow3_u.obj_attributes.mode.set_it = 1;
		c.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
		c.how.createhow3_u.obj_attributes.size.set_it = 1; /* truncates */
		if (v4_call(v, NFS3_CREATE, &c, &r, path))
			return 1;
	}
	if (v4_walk(v, path, &fh))
		return 1;
	if (how == 2) {
		if (v4_getattr(v, &fh, &r, path))
			return 1;
		off = r.attr.size;
	}
	while ((n = read(0, buf, sizeof(buf))) > 0) {
		for (ssize_t done = 0; done < n;) {
			WRITE3args w;
			memset(&w, 0, sizeof(w));
			fh3(&w.file, &fh);
			w.offset = off;
			w.count = (count3)(n - done);
			w.stable = FILE_SYNC;
			w.data.data_len = (u_int)(n - done);
			w.data.data_val = buf + done;
			if (v4_call(v, NFS3_WRITE, &w, &r, "write"))
				return 1;
			if (r.count == 0) {
				fprintf(stderr, "nfsop: write: 0 bytes written\n");
				return 1;
			}
			done += r.count;
			off += r.count;
		}
	}
	return n < 0;
}

static int v4_cat(struct v4 *v, const char *path)
{
	struct n4_fh fh;
	struct r4 r;
	uint64_t off = 0;

	memset(&r, 0, sizeof(r));
	r.out = stdout;
	if (v4_walk(v, path, &fh))
		return 1;
	do {
		READ3args a;
		memset(&a, 0, sizeof(a));
		fh3(&a.file, &fh);
		a.offset = off;
		a.count = 65536;
		if (v4_call(v, NFS3_READ, &a, &r, "read"))
			return 1;
		off += r.count;
	} while (!r.eof && r.count > 0);
	return 0;
}

static int cmpent(const void *a, const void *b)
{
	return strcmp(((const struct ent4 *)a)->name, ((const struct ent4 *)b)->name);
}

static int v4_ls(struct v4 *v, const char *path, int sizes)
{
	struct n4_fh fh;
	struct r4 r;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	if (v4_walk(v, path, &fh))
		return 1;
	do {
		READDIRPLUS3args a;
		memset(&a, 0, sizeof(a));
		fh3(&a.dir, &fh);
		a.cookie = r.cookie;
		memcpy(a.cookieverf, r.verf, sizeof(a.cookieverf));
		a.dircount = 8192;
		a.maxcount = 32768;
		if (v4_call(v, NFS3_READDIRPLUS, &a, &r, path)) {
			rc = 1;
			break;
		}
		if (r.got == 0 && !r.eof) {
			fprintf(stderr, "nfsop: %s: an empty page before the end\n", path);
			rc = 1;
			break;
		}
	} while (!r.eof);
	if (rc == 0 && r.n > 0)
		qsort(r.e, r.n, sizeof(*r.e), cmpent);
	for (size_t i = 0; i < r.n; i++) {
		if (rc == 0 && sizes)
			printf("%s %" PRIu64 "\n", r.e[i].name, r.e[i].size);
		else if (rc == 0)
			printf("%s\n", r.e[i].name);
		free(r.e[i].name);
	}
	free(r.e);
	return rc;
}

/* mkdir, rmdir, rm, rename, symlink */
static int v4_ns(struct v4 *v, const char *cmd, const char *a1, const char *a2)
{
	struct n4_fh dir, dir2;
	char name[256], name2[256];
	struct r4 r;

	memset(&r, 0, sizeof(r));
	if (strcmp(cmd, "symlink") == 0) {
		SYMLINK3args s;
		memset(&s, 0, sizeof(s));
		if (v4_parent(v, a2, &dir, name))
			return 1;
		fh3(&s.where.dir, &dir);
		s.where.name = name;
		s.symlink.symlink_data = (char *)a1;
		return v4_call(v, NFS3_SYMLINK, &s, &r, a2);
	}
	if (v4_parent(v, a1, &dir, name))
		return 1;
	if (strcmp(cmd, "mkdir") == 0) {
		MKDIR3args m;
		memset(&m, 0, sizeof(m));
		fh3(&m.where.dir, &dir);
		m.where.name = name;
		m.attributes.mode.set_it = 1;
		m.attributes.mode.set_mode3_u.mode = 0755;
		return v4_call(v, NFS3_MKDIR, &m, &r, a1);
	}
	if (strcmp(cmd, "rename") == 0) {
		RENAME3args n;
		if (v4_parent(v, a2, &dir2, name2))
			return 1;
		memset(&n, 0, sizeof(n));
		fh3(&n.from.dir, &dir);
		n.from.name = name;
		fh3(&n.to.dir, &dir2);
		n.to.name = name2;
		return v4_call(v, NFS3_RENAME, &n, &r, a1);
	}
	REMOVE3args d; /* RMDIR3args is the same diropargs3 */
	memset(&d, 0, sizeof(d));
	fh3(&d.object.dir, &dir);
	d.object.name = name;
	return v4_call(v, strcmp(cmd, "rmdir") == 0 ? NFS3_RMDIR : NFS3_REMOVE, &d, &r, a1);
}

static int v4_cmd(struct v4 *v, const char *cmd, const char *a1, const char *a2)
{
	sattr3 sa;

	memset(&sa, 0, sizeof(sa));
	if (strcmp(cmd, "write") == 0)
		return v4_write(v, a1, 0);
	if (strcmp(cmd, "overwrite") == 0)
		return v4_write(v, a1, 1);
	if (strcmp(cmd, "append") == 0)
		return v4_write(v, a1, 2);
	if (strcmp(cmd, "cat") == 0)
		return v4_cat(v, a1);
	if (strcmp(cmd, "ls") == 0 || strcmp(cmd, "lsl") == 0)
		return v4_ls(v, a1, cmd[2] == 'l');
	if (strcmp(cmd, "stat") == 0) {
		struct n4_fh fh;
		struct r4 r;
		memset(&r, 0, sizeof(r));
		if (v4_walk(v, a1, &fh) || v4_getattr(v, &fh, &r, a1))
			return 1;
		printf("%" PRIu64 " %u.%09u %o\n", r.attr.size, r.attr.mtime.seconds,
		       r.attr.mtime.nseconds, r.attr.mode & 07777);
		return 0;
	}
	if (strcmp(cmd, "mkdir") == 0 || strcmp(cmd, "rmdir") == 0 || strcmp(cmd, "rm") == 0)
		return v4_ns(v, cmd, a1, NULL);
	if (a2 && (strcmp(cmd, "rename") == 0 || strcmp(cmd, "symlink") == 0))
		return v4_ns(v, cmd, a1, a2);
	if (a2 && strcmp(cmd, "chmod") == 0) {
		sa.mode.set_it = 1;
		sa.mode.set_mode3_u.mode = (uint32_t)strtoul(a1, NULL, 8);
		return v4_setattr(v, a2, &sa);
	}
	if (a2 && strcmp(cmd, "chown") == 0 && strchr(a1, ':') != NULL) {
		sa.uid.set_it = sa.gid.set_it = 1;
		sa.uid.set_uid3_u.uid = (uint32_t)strtoul(a1, NULL, 10);
		sa.gid.set_gid3_u.gid = (uint32_t)strtoul(strchr(a1, ':') + 1, NULL, 10);
		return v4_setattr(v, a2, &sa);
	}
	if (a2 && strcmp(cmd, "truncate") == 0) {
		sa.size.set_it = 1;
		sa.size.set_size3_u.size = strtoull(a1, NULL, 0);
		return v4_setattr(v, a2, &sa);
	}
	fprintf(stderr, "nfsop: unknown command %s\n", cmd);
	return 2;
}

/* nfs://HOST[:PORT]/PATH?nfsport=N&version=4 */
static int v4_main(const char *url, int uid, int gid, const char *cmd, const char *a1,
                   const char *a2)
{
	struct n4_config cfg;
	struct v4 v;
	char err[1024], u[2048], *q, *sl, *colon;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	memset(&v, 0, sizeof(v));
	snprintf(u, sizeof(u), "%s", strncmp(url, "nfs://", 6) == 0 ? url + 6 : url);
	q = strchr(u, '?');
	if (q) {
		*q++ = 0;
		for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv;
		     kv = strtok_r(NULL, "&", &save))
			if (strncmp(kv, "nfsport=", 8) == 0)
				cfg.port = atoi(kv + 8);
	}
	sl = strchr(u, '/');
	snprintf(cfg.path, sizeof(cfg.path), "%.1023s", sl ? sl : "/");
	if (sl)
		*sl = 0;
	colon = strchr(u, ':');
	if (colon) {
		*colon = 0;
		if (cfg.port == 0)
			cfg.port = atoi(colon + 1);
	}
	snprintf(cfg.host, sizeof(cfg.host), "%.255s", u);
	cfg.timeout_s = 60;
	cfg.reconnect_max_s = 2;
	v.cred.flavor = AUTH_UNIX;
	v.cred.uid = uid >= 0 ? (uint32_t)uid : 0;
	v.cred.gid = gid >= 0 ? (uint32_t)gid : 0;
	snprintf(v.cred.machine, sizeof(v.cred.machine), "nfsop");
	log_init(0, getenv("NFSOP_DEBUG") ? CFS_LOG_DEBUG : CFS_LOG_WARN);
	v.loop = loop_new();
	if (v.loop == NULL || n4_start(v.loop, &cfg, &v.n4, err, sizeof(err)) != 0) {
		fprintf(stderr, "nfsop: %s\n", v.loop ? err : "no memory");
		loop_free(v.loop);
		return 1;
	}
	v.root = *n4_root_fh(v.n4);
	rc = v4_cmd(&v, cmd, a1, a2);
	n4_stop(v.n4);
	loop_free(v.loop);
	return rc;
}

int main(int argc, char **argv)
{
	struct nfs_url *url;
	int uid = -1, gid = -1, i = 1, rc = 0;

	while (i + 1 < argc && strncmp(argv[i], "--", 2) == 0) {
		if (strcmp(argv[i], "--uid") == 0)
			uid = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--gid") == 0)
			gid = atoi(argv[i + 1]);
		else
			break;
		i += 2;
	}
	if (argc - i < 3) {
		fprintf(stderr, "usage: nfsop [--uid U --gid G] URL CMD ARGS (see the source)\n");
		return 2;
	}
	if (strstr(argv[i], "version=4") != NULL)
		return v4_main(argv[i], uid, gid, argv[i + 1], argv[i + 2],
		               i + 3 < argc ? argv[i + 3] : NULL);
	nfs = nfs_init_context();
	if (nfs == NULL)
		return 1;
	if (uid >= 0)
		nfs_set_uid(nfs, uid);
	if (gid >= 0)
		nfs_set_gid(nfs, gid);
	url = nfs_parse_url_dir(nfs, argv[i]);
	if (url == NULL)
		return fail("url");
	if (nfs_mount(nfs, url->server, url->path) != 0)
		return fail("mount");
	const char *cmd = argv[i + 1], *a1 = argv[i + 2], *a2 = i + 3 < argc ? argv[i + 3] : NULL;
	if (strcmp(cmd, "write") == 0)
		rc = do_write(a1, O_WRONLY | O_CREAT | O_TRUNC);
	else if (strcmp(cmd, "overwrite") == 0)
		rc = do_write(a1, O_WRONLY);
	else if (strcmp(cmd, "append") == 0)
		rc = do_write(a1, O_WRONLY | O_APPEND);
	else if (strcmp(cmd, "cat") == 0)
		rc = do_cat(a1);
	else if (strcmp(cmd, "ls") == 0)
		rc = do_ls(a1, 0);
	else if (strcmp(cmd, "lsl") == 0)
		rc = do_ls(a1, 1);
	else if (strcmp(cmd, "stat") == 0) {
		struct nfs_stat_64 st;
		if (nfs_stat64(nfs, a1, &st) != 0)
			rc = fail(a1);
		else
			printf("%llu %llu.%09llu %llo\n", (unsigned long long)st.nfs_size,
			       (unsigned long long)st.nfs_mtime, (unsigned long long)st.nfs_mtime_nsec,
			       (unsigned long long)(st.nfs_mode & 07777));
	} else if (strcmp(cmd, "mkdir") == 0)
		rc = nfs_mkdir(nfs, a1) ? fail(a1) : 0;
	else if (strcmp(cmd, "rmdir") == 0)
		rc = nfs_rmdir(nfs, a1) ? fail(a1) : 0;
	else if (strcmp(cmd, "rm") == 0)
		rc = nfs_unlink(nfs, a1) ? fail(a1) : 0;
	else if (strcmp(cmd, "rename") == 0 && a2)
		rc = nfs_rename(nfs, a1, a2) ? fail(a1) : 0;
	else if (strcmp(cmd, "symlink") == 0 && a2)
		rc = nfs_symlink(nfs, a1, a2) ? fail(a2) : 0;
	else if (strcmp(cmd, "chmod") == 0 && a2)
		rc = nfs_chmod(nfs, a2, (int)strtol(a1, NULL, 8)) ? fail(a2) : 0;
	else if (strcmp(cmd, "chown") == 0 && a2 && strchr(a1, ':') != NULL)
		rc = nfs_chown(nfs, a2, atoi(a1), atoi(strchr(a1, ':') + 1)) ? fail(a2) : 0;
	else if (strcmp(cmd, "truncate") == 0 && a2)
		rc = nfs_truncate(nfs, a2, strtoull(a1, NULL, 0)) ? fail(a2) : 0;
	else {
		fprintf(stderr, "nfsop: unknown command %s\n", cmd);
		rc = 2;
	}
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	return rc;
}
