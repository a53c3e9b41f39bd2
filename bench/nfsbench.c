/* nfsbench: the bench's NFSv3 client (libnfs 4.0 raw API), one TCP
 * connection, one sequential reader like `cat` or `tar`.
 *
 *   nfsbench cat|tar --port P [--host H] [--mountport M] --export PATH
 *            --path REL [--window N] [--rsize N] [--dirsize N]
 *            [--verify FILE] [--timeout S]
 *
 * cat  LOOKUP each component of REL, then GETATTR + ACCESS(READ) of the file
 *      (what open() costs a close-to-open kernel client), then READ it from
 *      offset 0 to its size.
 * tar  the same walk for the directory REL, then depth-first like
 *      `tar cf - DIR`: READDIRPLUS the whole directory (every page), then for
 *      each entry in the order the server listed it: LOOKUP, GETATTR,
 *      ACCESS (READ, plus LOOKUP for a directory), then READ a regular file
 *      to its size, READLINK a symlink, recurse into a directory.
 *
 * Every call waits for its reply before the next is sent, except READs of
 * one file: up to --window (default 4) READs of --rsize (default 1 MiB, the
 * largest libnfs carries) are in flight at once, in offset order, which is
 * what a kernel client's readahead does for a sequential reader. --window 1
 * gives a strictly synchronous client. A file of size 0 gets no READ (the
 * kernel knows the size from GETATTR). Short READs are continued.
 * --rsize fsinfo: what the server offers, as a kernel client takes it at
 * mount: FSINFO's rtpref, at most its rtmax and 1 MiB (asked after MNT,
 * not timed).
 * ping --count N (default 10000) NFS NULL calls, each waiting for its
 *      reply: this client's per-call floor against that server (no MOUNT).
 *
 * The clock runs from the first LOOKUP to the last reply; connecting and
 * MNT are not timed (they are the mount). stdout gets one line:
 *   workload=tar seconds=12.345678 bytes=N files=N dirs=N symlinks=N calls=N
 *   reads=N lookups=N rsize=N
 * --verify FILE writes "size xxh64 relpath" per regular file (the format of
 * benchgen's MANIFEST, relpath relative to the export), which costs buffering
 * each file in memory: not for timed runs.
 * Exit: 0 ok, 1 RPC or NFS error, 2 usage. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define MAX_WINDOW 64

struct fh {
	uint32_t len;
	char data[NFS3_FHSIZE];
};

/* one outstanding call */
struct call {
	int done;
	int status;   /* RPC_STATUS_* */
	nfsstat3 nst; /* NFS status when status is SUCCESS */
	int mnt;      /* MOUNT status */
	struct fh fh; /* LOOKUP / MNT result */
	fattr3 attr;  /* GETATTR / LOOKUP object attributes */
	int have_attr;
	uint32_t rtmax, rtpref; /* FSINFO */
	/* READ */
	uint64_t off;
	uint32_t want;
	uint32_t got;
	int eof;
	char *dst; /* where READ data goes when verifying */
	char errbuf[256];
};

struct bench {
	struct rpc_context *rpc;
	int window;
	uint32_t rsize, dirsize;
	int timeout_s;
	FILE *verify;
	uint64_t bytes, files, dirs, symlinks, calls, reads, lookups;
	char path[4096];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "nfsbench: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n");
	exit(1);
}

/* Run the loop until every call in calls[0..n) is done. */
static void wait_calls(struct bench *b, struct rpc_context *rpc, struct call **calls, int n)
{
	double end = now_s() + b->timeout_s;

	for (;;) {
		int pending = 0;
		for (int i = 0; i < n; i++)
			pending += !calls[i]->done;
		if (!pending)
			break;
		struct pollfd p = {rpc_get_fd(rpc), (short)rpc_which_events(rpc), 0};
		if (now_s() > end)
			die("no reply within the timeout (%s%s)", "", "");
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			die("poll: %s%s", strerror(errno), "");
		if (rpc_service(rpc, p.revents) < 0)
			die("%s%s", rpc_get_error(rpc), "");
	}
	for (int i = 0; i < n; i++)
		if (calls[i]->status != RPC_STATUS_SUCCESS)
			die("rpc error: %s%s", calls[i]->errbuf, "");
}

static void wait1(struct bench *b, struct call *c)
{
	wait_calls(b, b->rpc, &c, 1);
}

static int rpc_failed(struct call *c, int status, void *data)
{
	c->status = status;
	c->done = 1;
	if (status == RPC_STATUS_SUCCESS)
		return 0;
	snprintf(c->errbuf, sizeof(c->errbuf), "%s",
	         status == RPC_STATUS_ERROR && data ? (const char *)data : "cancel/timeout");
	return 1;
}

static void generic_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	(void)rpc;
	rpc_failed(priv, status, data);
}

static void mnt_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	mountres3 *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->mnt = r->fhs_status;
	if (r->fhs_status == MNT3_OK) {
		c->fh.len = r->mountres3_u.mountinfo.fhandle.fhandle3_len;
		memcpy(c->fh.data, r->mountres3_u.mountinfo.fhandle.fhandle3_val, c->fh.len);
	}
}

static void lookup_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	LOOKUP3res *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->nst = r->status;
	if (r->status != NFS3_OK)
		return;
	c->fh.len = r->LOOKUP3res_u.resok.object.data.data_len;
	memcpy(c->fh.data, r->LOOKUP3res_u.resok.object.data.data_val, c->fh.len);
	c->have_attr = r->LOOKUP3res_u.resok.obj_attributes.attributes_follow;
	if (c->have_attr)
		c->attr = r->LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes;
}

static void getattr_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	GETATTR3res *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->nst = r->status;
	if (r->status == NFS3_OK) {
		c->attr = r->GETATTR3res_u.resok.obj_attributes;
		c->have_attr = 1;
	}
}

static void fsinfo_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	FSINFO3res *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->nst = r->status;
	if (r->status == NFS3_OK) {
		c->rtmax = r->FSINFO3res_u.resok.rtmax;
		c->rtpref = r->FSINFO3res_u.resok.rtpref;
	}
}

static void access_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	ACCESS3res *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->nst = r->status;
}

static void readlink_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	READLINK3res *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->nst = r->status;
}

static void read_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;
	READ3res *r = data;

	(void)rpc;
	if (rpc_failed(c, status, data))
		return;
	c->nst = r->status;
	if (r->status != NFS3_OK)
		return;
	c->got = r->READ3res_u.resok.data.data_len;
	if (c->got > c->want)
		c->got = c->want; /* a server must not send more; do not overrun */
	c->eof = r->READ3res_u.resok.eof;
	if (c->dst && c->got)
		memcpy(c->dst, r->READ3res_u.resok.data.data_val, c->got);
}

static const char *nfsstat_name(nfsstat3 s)
{
	static char buf[32];
	switch (s) {
	case NFS3ERR_NOENT:
		return "NFS3ERR_NOENT";
	case NFS3ERR_ACCES:
		return "NFS3ERR_ACCES";
	case NFS3ERR_IO:
		return "NFS3ERR_IO";
	case NFS3ERR_STALE:
		return "NFS3ERR_STALE";
	case NFS3ERR_NOTDIR:
		return "NFS3ERR_NOTDIR";
	default:
		snprintf(buf, sizeof(buf), "nfsstat3 %d", (int)s);
		return buf;
	}
}

static void check_nfs(struct bench *b, struct call *c, const char *what)
{
	if (c->nst != NFS3_OK) {
		fprintf(stderr, "nfsbench: %s %s: %s\n", what, b->path[0] ? b->path : "/",
		        nfsstat_name(c->nst));
		exit(1);
	}
}

static void set_fh(nfs_fh3 *dst, struct fh *src)
{
	dst->data.data_len = src->len;
	dst->data.data_val = src->data;
}

static void do_lookup(struct bench *b, struct fh *dir, const char *name, struct call *c)
{
	LOOKUP3args a;

	memset(&a, 0, sizeof(a));
	memset(c, 0, sizeof(*c));
	set_fh(&a.what.dir, dir);
	a.what.name = (char *)name;
	if (rpc_nfs3_lookup_async(b->rpc, lookup_cb, &a, c) != 0)
		die("LOOKUP: %s%s", rpc_get_error(b->rpc), "");
	b->calls++;
	b->lookups++;
	wait1(b, c);
	if (c->nst != NFS3_OK) {
		fprintf(stderr, "nfsbench: LOOKUP %s: %s\n", name, nfsstat_name(c->nst));
		exit(1);
	}
}

static void do_getattr(struct bench *b, struct fh *fh, struct call *c)
{
	GETATTR3args a;

	memset(&a, 0, sizeof(a));
	memset(c, 0, sizeof(*c));
	set_fh(&a.object, fh);
	if (rpc_nfs3_getattr_async(b->rpc, getattr_cb, &a, c) != 0)
		die("GETATTR: %s%s", rpc_get_error(b->rpc), "");
	b->calls++;
	wait1(b, c);
	check_nfs(b, c, "GETATTR");
}

static void do_access(struct bench *b, struct fh *fh, uint32_t bits)
{
	ACCESS3args a;
	struct call c;

	memset(&a, 0, sizeof(a));
	memset(&c, 0, sizeof(c));
	set_fh(&a.object, fh);
	a.access = bits;
	if (rpc_nfs3_access_async(b->rpc, access_cb, &a, &c) != 0)
		die("ACCESS: %s%s", rpc_get_error(b->rpc), "");
	b->calls++;
	wait1(b, &c);
	check_nfs(b, &c, "ACCESS");
}

static void do_readlink(struct bench *b, struct fh *fh)
{
	READLINK3args a;
	struct call c;

	memset(&a, 0, sizeof(a));
	memset(&c, 0, sizeof(c));
	set_fh(&a.symlink, fh);
	if (rpc_nfs3_readlink_async(b->rpc, readlink_cb, &a, &c) != 0)
		die("READLINK: %s%s", rpc_get_error(b->rpc), "");
	b->calls++;
	wait1(b, &c);
	check_nfs(b, &c, "READLINK");
}

static void issue_read(struct bench *b, struct fh *fh, struct call *c, uint64_t off, uint32_t want,
                       char *dst)
{
	READ3args a;

	memset(&a, 0, sizeof(a));
	memset(c, 0, sizeof(*c));
	set_fh(&a.file, fh);
	a.offset = off;
	a.count = want;
	c->off = off;
	c->want = want;
	c->dst = dst;
	if (rpc_nfs3_read_async(b->rpc, read_cb, &a, c) != 0)
		die("READ: %s%s", rpc_get_error(b->rpc), "");
	b->calls++;
	b->reads++;
}

/* READ [0, size) with up to b->window calls in flight, oldest first. A short
 * reply (not at EOF) is continued where it stopped. Returns bytes read. */
static uint64_t read_file(struct bench *b, struct fh *fh, uint64_t size, char *buf)
{
	struct call ring[MAX_WINDOW];
	int head = 0, count = 0;
	uint64_t next = 0, total = 0;

	while (next < size || count > 0) {
		while (count < b->window && next < size) {
			uint64_t left = size - next;
			uint32_t want = left < b->rsize ? (uint32_t)left : b->rsize;
			struct call *c = &ring[(head + count) % MAX_WINDOW];
			issue_read(b, fh, c, next, want, buf ? buf + next : NULL);
			next += want;
			count++;
		}
		struct call *c = &ring[head];
		wait1(b, c);
		if (c->nst != NFS3_OK) {
			fprintf(stderr, "nfsbench: READ %s at %" PRIu64 ": %s\n", b->path, c->off,
			        nfsstat_name(c->nst));
			exit(1);
		}
		total += c->got;
		uint64_t off = c->off, want = c->want, got = c->got;
		int eof = c->eof;
		head = (head + 1) % MAX_WINDOW;
		count--;
		if (got < want) {
			if (eof || got == 0) {
				/* the file shrank under us: stop, drain what is in flight */
				size = off + got;
				next = size;
				continue;
			}
			/* continue the short read synchronously before moving on */
			struct call *r = &ring[(head + count) % MAX_WINDOW];
			uint64_t roff = off + got;
			while (roff < off + want) {
				issue_read(b, fh, r, roff, (uint32_t)(off + want - roff),
				           buf ? buf + roff : NULL);
				wait1(b, r);
				if (r->nst != NFS3_OK || r->got == 0)
					die("short READ of %s could not be continued%s", b->path,
					    "");
				total += r->got;
				roff += r->got;
			}
		}
	}
	return total;
}

static void read_regular(struct bench *b, struct fh *fh, uint64_t size)
{
	char *buf = NULL;

	if (b->verify && size) {
		buf = malloc(size);
		if (!buf)
			die("out of memory for %s%s", b->path, "");
	}
	uint64_t got = size ? read_file(b, fh, size, buf) : 0;
	if (got != size) {
		fprintf(stderr, "nfsbench: %s: read %" PRIu64 " bytes, GETATTR said %" PRIu64 "\n",
		        b->path, got, size);
		exit(1);
	}
	b->bytes += got;
	b->files++;
	if (b->verify) {
		fprintf(b->verify, "%" PRIu64 " %016llx %s\n", size,
		        (unsigned long long)XXH64(buf ? buf : "", got, 0), b->path);
		free(buf);
	}
}

/* one directory entry, copied out of the READDIRPLUS reply */
struct dent {
	char *name;
};

struct dirlist {
	struct dent *v;
	size_t n, cap;
	int done;
	int status;
	nfsstat3 nst;
	int eof;
	cookie3 last;
	cookieverf3 verf;
	char errbuf[256];
};

static void readdirplus_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct dirlist *d = priv;
	READDIRPLUS3res *r = data;

	(void)rpc;
	d->status = status;
	d->done = 1;
	if (status != RPC_STATUS_SUCCESS) {
		snprintf(d->errbuf, sizeof(d->errbuf), "%s",
		         status == RPC_STATUS_ERROR && data ? (const char *)data : "cancel");
		return;
	}
	d->nst = r->status;
	if (r->status != NFS3_OK)
		return;
	memcpy(d->verf, r->READDIRPLUS3res_u.resok.cookieverf, sizeof(cookieverf3));
	d->eof = r->READDIRPLUS3res_u.resok.reply.eof;
	for (entryplus3 *e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		d->last = e->cookie;
		if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
			continue;
		if (d->n == d->cap) {
			d->cap = d->cap ? d->cap * 2 : 64;
			d->v = realloc(d->v, d->cap * sizeof(*d->v));
			if (!d->v)
				abort();
		}
		d->v[d->n++].name = strdup(e->name);
	}
}

static void list_dir(struct bench *b, struct fh *dir, struct dirlist *d)
{
	memset(d, 0, sizeof(*d));
	do {
		READDIRPLUS3args a;
		memset(&a, 0, sizeof(a));
		set_fh(&a.dir, dir);
		a.cookie = d->last;
		memcpy(a.cookieverf, d->verf, sizeof(cookieverf3));
		a.dircount = b->dirsize;
		a.maxcount = b->dirsize;
		d->done = 0;
		if (rpc_nfs3_readdirplus_async(b->rpc, readdirplus_cb, &a, d) != 0)
			die("READDIRPLUS: %s%s", rpc_get_error(b->rpc), "");
		b->calls++;
		double end = now_s() + b->timeout_s;
		while (!d->done) {
			struct pollfd p = {rpc_get_fd(b->rpc), (short)rpc_which_events(b->rpc), 0};
			if (now_s() > end)
				die("READDIRPLUS %s: no reply%s", b->path, "");
			if (poll(&p, 1, 100) < 0 && errno != EINTR)
				die("poll: %s%s", strerror(errno), "");
			if (rpc_service(b->rpc, p.revents) < 0)
				die("%s%s", rpc_get_error(b->rpc), "");
		}
		if (d->status != RPC_STATUS_SUCCESS)
			die("READDIRPLUS: rpc error %s%s", d->errbuf, "");
		if (d->nst != NFS3_OK) {
			fprintf(stderr, "nfsbench: READDIRPLUS %s: %s\n", b->path,
			        nfsstat_name(d->nst));
			exit(1);
		}
	} while (!d->eof);
}

static void walk(struct bench *b, struct fh *dir)
{
	struct dirlist d;
	size_t plen = strlen(b->path);

	b->dirs++;
	list_dir(b, dir, &d);
	for (size_t i = 0; i < d.n; i++) {
		struct call c;
		struct fh fh;
		snprintf(b->path + plen, sizeof(b->path) - plen, "%s%s", plen ? "/" : "",
		         d.v[i].name);
		do_lookup(b, dir, d.v[i].name, &c);
		fh = c.fh;
		do_getattr(b, &fh, &c);
		switch (c.attr.type) {
		case NF3REG:
			do_access(b, &fh, ACCESS3_READ);
			read_regular(b, &fh, c.attr.size);
			break;
		case NF3DIR:
			do_access(b, &fh, ACCESS3_READ | ACCESS3_LOOKUP);
			walk(b, &fh);
			break;
		case NF3LNK:
			do_readlink(b, &fh);
			b->symlinks++;
			break;
		default:
			break;
		}
		b->path[plen] = 0;
		free(d.v[i].name);
	}
	free(d.v);
}

static void connect_ctx(struct bench *b, struct rpc_context *rpc, const char *host, int port)
{
	struct call c;

	memset(&c, 0, sizeof(c));
	if (rpc_connect_async(rpc, host, port, generic_cb, &c) != 0)
		die("connect %s: %s", host, rpc_get_error(rpc));
	wait_calls(b, rpc, (struct call *[]){&c}, 1);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: nfsbench cat|tar --port P [--host H] [--mountport M] --export PATH\n"
	        "                --path REL [--window N] [--rsize N|fsinfo] [--dirsize N]\n"
	        "                [--verify FILE] [--timeout S] [--uid U --gid G]\n"
	        "       nfsbench ping --port P [--host H] [--count N]\n");
	exit(2);
}

/* ping: NFS NULL calls one at a time, each waiting for its reply: the
 * per-call floor of this client against that server (no file system work,
 * only the round trip and both ends' RPC handling). */
static int ping(struct bench *b, const char *host, int port, int count)
{
	struct call c;
	double t0, dt;

	b->rpc = rpc_init_context();
	rpc_set_auth(b->rpc, libnfs_authunix_create("nfsbench", 0, 0, 0, NULL));
	connect_ctx(b, b->rpc, host, port);
	t0 = now_s();
	for (int i = 0; i < count; i++) {
		memset(&c, 0, sizeof(c));
		if (rpc_nfs3_null_async(b->rpc, generic_cb, &c) != 0)
			die("NULL: %s%s", rpc_get_error(b->rpc), "");
		wait1(b, &c);
	}
	dt = now_s() - t0;
	printf("workload=ping seconds=%.6f calls=%d us_per_call=%.1f\n", dt, count,
	       dt * 1e6 / count);
	rpc_destroy_context(b->rpc);
	return 0;
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *export = NULL, *path = NULL, *verify = NULL;
	int port = 0, mountport = 0, tar, count = 10000, rsize_fsinfo = 0;
	uint32_t uid = 0, gid = 0;
	static struct bench b;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "cat") == 0)
		tar = 0;
	else if (strcmp(argv[1], "tar") == 0)
		tar = 1;
	else if (strcmp(argv[1], "ping") == 0)
		tar = -1;
	else
		usage();
	b.window = 4;
	b.rsize = 1 << 20;
	b.dirsize = 65536;
	b.timeout_s = 120;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--port") == 0)
			port = atoi(v);
		else if (strcmp(a, "--mountport") == 0)
			mountport = atoi(v);
		else if (strcmp(a, "--host") == 0)
			host = v;
		else if (strcmp(a, "--export") == 0)
			export = v;
		else if (strcmp(a, "--path") == 0)
			path = v;
		else if (strcmp(a, "--window") == 0)
			b.window = atoi(v);
		else if (strcmp(a, "--rsize") == 0 && strcmp(v, "fsinfo") == 0)
			rsize_fsinfo = 1;
		else if (strcmp(a, "--rsize") == 0)
			b.rsize = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--dirsize") == 0)
			b.dirsize = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--verify") == 0)
			verify = v;
		else if (strcmp(a, "--timeout") == 0)
			b.timeout_s = atoi(v);
		else if (strcmp(a, "--uid") == 0)
			uid = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--gid") == 0)
			gid = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--count") == 0)
			count = atoi(v);
		else
			usage();
	}
	if (tar < 0) {
		if (port <= 0 || count < 1)
			usage();
		return ping(&b, host, port, count);
	}
	if (port <= 0 || !export || !path || b.window < 1 || b.window > MAX_WINDOW ||
	    b.rsize < 4096 || b.rsize > (1 << 20) || b.dirsize < 1024 || b.timeout_s < 1)
		usage();
	if (mountport <= 0)
		mountport = port;
	if (verify) {
		b.verify = fopen(verify, "w");
		if (!b.verify)
			die("%s: %s", verify, strerror(errno));
	}

	/* MOUNT (not timed: it is the mount) */
	struct rpc_context *mrpc = rpc_init_context();
	struct call c;
	rpc_set_auth(mrpc, libnfs_authunix_create("nfsbench", uid, gid, 0, NULL));
	connect_ctx(&b, mrpc, host, mountport);
	memset(&c, 0, sizeof(c));
	if (rpc_mount3_mnt_async(mrpc, mnt_cb, (char *)export, &c) != 0)
		die("MNT: %s%s", rpc_get_error(mrpc), "");
	wait_calls(&b, mrpc, (struct call *[]){&c}, 1);
	if (c.mnt != MNT3_OK) {
		fprintf(stderr, "nfsbench: MNT %s: mountstat3 %d\n", export, c.mnt);
		return 1;
	}
	struct fh root = c.fh;
	if (mountport == port) {
		b.rpc = mrpc;
	} else {
		rpc_destroy_context(mrpc);
		b.rpc = rpc_init_context();
		rpc_set_auth(b.rpc, libnfs_authunix_create("nfsbench", uid, gid, 0, NULL));
		connect_ctx(&b, b.rpc, host, port);
	}

	if (rsize_fsinfo) {
		FSINFO3args fa;

		memset(&c, 0, sizeof(c));
		set_fh(&fa.fsroot, &root);
		if (rpc_nfs3_fsinfo_async(b.rpc, fsinfo_cb, &fa, &c) != 0)
			die("FSINFO: %s%s", rpc_get_error(b.rpc), "");
		wait_calls(&b, b.rpc, (struct call *[]){&c}, 1);
		check_nfs(&b, &c, "FSINFO");
		b.rsize = c.rtpref ? c.rtpref : c.rtmax;
		if (c.rtmax && b.rsize > c.rtmax)
			b.rsize = c.rtmax;
		if (b.rsize == 0 || b.rsize > (1 << 20))
			b.rsize = 1 << 20;
		b.rsize &= ~4095u;
		if (b.rsize < 4096)
			b.rsize = 4096;
	}

	double t0 = now_s();
	struct fh fh = root;
	char *copy = strdup(path), *save = NULL;
	for (char *name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		do_lookup(&b, &fh, name, &c);
		fh = c.fh;
	}
	/* paths in the verify output are relative to the export */
	snprintf(b.path, sizeof(b.path), "%s", path);
	while (b.path[0] && b.path[strlen(b.path) - 1] == '/')
		b.path[strlen(b.path) - 1] = 0;
	free(copy);
	do_getattr(&b, &fh, &c);
	if (tar) {
		if (c.attr.type != NF3DIR)
			die("%s is not a directory%s", path, "");
		do_access(&b, &fh, ACCESS3_READ | ACCESS3_LOOKUP);
		walk(&b, &fh);
	} else {
		if (c.attr.type != NF3REG)
			die("%s is not a regular file%s", path, "");
		do_access(&b, &fh, ACCESS3_READ);
		read_regular(&b, &fh, c.attr.size);
	}
	double dt = now_s() - t0;

	printf("workload=%s seconds=%.6f bytes=%" PRIu64 " files=%" PRIu64 " dirs=%" PRIu64
	       " symlinks=%" PRIu64 " calls=%" PRIu64 " reads=%" PRIu64 " lookups=%" PRIu64
	       " rsize=%" PRIu32 "\n",
	       tar ? "tar" : "cat", dt, b.bytes, b.files, b.dirs, b.symlinks, b.calls, b.reads,
	       b.lookups, b.rsize);
	if (b.verify && fclose(b.verify) != 0)
		die("%s: write failed%s", verify, "");
	rpc_destroy_context(b.rpc);
	return 0;
}
