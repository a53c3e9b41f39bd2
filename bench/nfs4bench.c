/* nfs4bench: the bench's direct NFSv4.0 client, next to nfsbench (NFSv3):
 * the reference a v4-upstream profile's cachefsd rows are compared with
 * ("cold overhead against direct NFSv4 access"). It is libnfs 4.0's own
 * NFSv4 client (the high-level API with nfs_set_version(NFS_V4)), not
 * cachefsd's upstream module, so the reference is a client written by
 * others: one TCP connection, the calls a v4 client makes.
 *
 *   nfs4bench cat|tar --port P [--host H] --export PSEUDOPATH --path REL
 *             [--window N] [--rsize N] [--verify FILE] [--timeout S]
 *             [--uid U --gid G]
 *
 * cat  stat REL (the LOOKUPs and GETATTR of the walk), open it (OPEN),
 *      READ it from offset 0 to its size with up to --window READs of
 *      --rsize in flight in offset order (a kernel client's readahead),
 *      close it (CLOSE).
 * tar  open the directory REL and list it (READDIR with the attributes a
 *      v4 client asks for: the v4 READDIRPLUS), then for each entry in the
 *      order the server listed it: a regular file is opened, read to its
 *      size and closed as above, a symlink READLINKed, a directory walked
 *      the same way (depth first, like `tar cf - DIR`).
 *
 * --rsize: at most the server's maxread as libnfs took it at mount, and
 * 1 MiB (default: that maxread). The clock runs from the first call after
 * the mount to the last reply. stdout gets one line, nfsbench's format:
 *   workload=tar seconds=12.345678 bytes=N files=N dirs=N symlinks=N calls=N
 *   reads=N lookups=0 rsize=N
 * where calls counts the client's operations (stat, open, READ, close,
 * opendir, readlink): libnfs does not say how many COMPOUNDs they took.
 * --verify FILE: "size xxh64 relpath" per regular file (benchgen's
 * MANIFEST format, relpath relative to the export), as nfsbench writes it.
 * Exit: 0 ok, 1 an NFS or RPC error, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs4.h> /* NFS_V4 */

#define XXH_INLINE_ALL
#include <xxhash.h>

#define MAX_WINDOW 64

struct bench {
	struct nfs_context *nfs;
	uint32_t rsize;
	int window;
	int timeout_s;
	FILE *verify;
	uint64_t bytes, files, dirs, symlinks, calls, reads;
};

/* one READ in flight */
struct rd {
	struct bench *b;
	int busy;
	int err; /* < 0: -errno */
	uint64_t off;
	uint32_t want, got;
	char *dst; /* where the bytes go when verifying, else NULL */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path, const char *why)
{
	fprintf(stderr, "nfs4bench: %s %s: %s\n", what, path, why);
	exit(1);
}

static void read_cb(int err, struct nfs_context *nfs, void *data, void *priv)
{
	struct rd *r = priv;

	(void)nfs;
	r->busy = 0;
	if (err < 0) {
		r->err = err;
		return;
	}
	r->got = (uint32_t)err;
	if (r->got > r->want)
		r->got = r->want;
	if (r->dst && r->got)
		memcpy(r->dst, data, r->got);
}

/* serves the context until no READ of rs[0..n) is in flight or the
 * deadline passes */
static void wait_reads(struct bench *b, struct rd *rs, int n, int any)
{
	double deadline = now_s() + b->timeout_s;

	for (;;) {
		int busy = 0;
		for (int i = 0; i < n; i++)
			busy += rs[i].busy;
		if (busy == 0 || (any && busy < n))
			return;
		if (now_s() > deadline)
			die("READ", "", "timed out");
		struct pollfd p = {.fd = nfs_get_fd(b->nfs), .events = (short)nfs_which_events(b->nfs)};
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			die("poll", "", strerror(errno));
		if (nfs_service(b->nfs, p.revents) < 0)
			die("READ", "", nfs_get_error(b->nfs));
	}
}

static void issue(struct bench *b, struct nfsfh *fh, struct rd *r, uint64_t off, uint32_t want,
                  char *dst, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->b = b;
	r->busy = 1;
	r->off = off;
	r->want = want;
	r->dst = dst;
	b->calls++;
	b->reads++;
	if (nfs_pread_async(b->nfs, fh, off, want, read_cb, r) != 0)
		die("READ", path, nfs_get_error(b->nfs));
}

/* READs fh from 0 to size, up to b->window in flight in offset order;
 * a short READ is continued where it ended */
static uint64_t read_file(struct bench *b, struct nfsfh *fh, uint64_t size, char *buf,
                          const char *path)
{
	static struct rd rs[MAX_WINDOW];
	uint64_t next = 0, done = 0;
	int head = 0, n = 0;

	while (done < size) {
		while (n < b->window && next < size) {
			uint64_t left = size - next;
			uint32_t want = left < b->rsize ? (uint32_t)left : b->rsize;
			issue(b, fh, &rs[(head + n) % b->window], next, want, buf ? buf + next : NULL,
			      path);
			next += want;
			n++;
		}
		struct rd *r = &rs[head];
		wait_reads(b, r, 1, 0);
		if (r->err < 0)
			die("READ", path, strerror(-r->err));
		if (r->got == 0)
			die("READ", path, "end of file before the size stat gave");
		done += r->got;
		if (r->got < r->want) {
			/* continue the short one in its own slot, in order */
			issue(b, fh, r, r->off + r->got, r->want - r->got,
			      buf ? buf + r->off + r->got : NULL, path);
			continue;
		}
		head = (head + 1) % b->window;
		n--;
	}
	return done;
}

static void read_regular(struct bench *b, const char *abs, const char *rel, uint64_t size)
{
	struct nfsfh *fh = NULL;
	char *buf = NULL;
	int rc;

	b->calls++;
	rc = nfs_open(b->nfs, abs, O_RDONLY, &fh);
	if (rc != 0)
		die("OPEN", abs, nfs_get_error(b->nfs));
	if (b->verify && size) {
		buf = malloc(size);
		if (!buf)
			die("READ", abs, "out of memory");
	}
	uint64_t got = size ? read_file(b, fh, size, buf, abs) : 0;
	b->calls++;
	if (nfs_close(b->nfs, fh) != 0)
		die("CLOSE", abs, nfs_get_error(b->nfs));
	b->bytes += got;
	b->files++;
	if (b->verify) {
		fprintf(b->verify, "%" PRIu64 " %016llx %s\n", size,
		        (unsigned long long)XXH64(buf ? buf : "", got, 0), rel);
		free(buf);
	}
}

/* the entries of one directory, copied out (the walk opens files while
 * going through them) */
struct dent {
	char *name;
	uint32_t type;
	uint64_t size;
};

static void walk(struct bench *b, const char *abs, const char *rel)
{
	struct nfsdir *d = NULL;
	struct nfsdirent *e;
	struct dent *v = NULL;
	size_t n = 0, cap = 0;

	b->calls++;
	if (nfs_opendir(b->nfs, abs, &d) != 0)
		die("READDIR", abs, nfs_get_error(b->nfs));
	b->dirs++;
	while ((e = nfs_readdir(b->nfs, d)) != NULL) {
		if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				die("READDIR", abs, "out of memory");
		}
		v[n].name = strdup(e->name);
		v[n].type = e->mode & S_IFMT;
		v[n].size = e->size;
		if (!v[n].name)
			die("READDIR", abs, "out of memory");
		n++;
	}
	nfs_closedir(b->nfs, d);
	for (size_t i = 0; i < n; i++) {
		char ca[4096], cr[4096];
		snprintf(ca, sizeof(ca), "%s/%s", abs, v[i].name);
		snprintf(cr, sizeof(cr), "%s/%s", rel, v[i].name);
		if (v[i].type == S_IFREG) {
			read_regular(b, ca, cr, v[i].size);
		} else if (v[i].type == S_IFLNK) {
			char target[4096];
			b->calls++;
			if (nfs_readlink(b->nfs, ca, target, sizeof(target)) != 0)
				die("READLINK", ca, nfs_get_error(b->nfs));
			b->symlinks++;
		} else if (v[i].type == S_IFDIR) {
			walk(b, ca, cr);
		}
		free(v[i].name);
	}
	free(v);
}

static void usage(void)
{
	fprintf(stderr, "usage: nfs4bench cat|tar --port P [--host H] --export PSEUDOPATH --path REL\n"
	                "                 [--window N] [--rsize N] [--verify FILE] [--timeout S]\n"
	                "                 [--uid U --gid G]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *export = NULL, *path = NULL, *verify = NULL;
	int port = 0, tar;
	int uid = 0, gid = 0;
	static struct bench b;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "cat") == 0)
		tar = 0;
	else if (strcmp(argv[1], "tar") == 0)
		tar = 1;
	else
		usage();
	b.window = 4;
	b.timeout_s = 120;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--port") == 0)
			port = atoi(v);
		else if (strcmp(a, "--host") == 0)
			host = v;
		else if (strcmp(a, "--export") == 0)
			export = v;
		else if (strcmp(a, "--path") == 0)
			path = v;
		else if (strcmp(a, "--window") == 0)
			b.window = atoi(v);
		else if (strcmp(a, "--rsize") == 0)
			b.rsize = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--verify") == 0)
			verify = v;
		else if (strcmp(a, "--timeout") == 0)
			b.timeout_s = atoi(v);
		else if (strcmp(a, "--uid") == 0)
			uid = atoi(v);
		else if (strcmp(a, "--gid") == 0)
			gid = atoi(v);
		else if (strcmp(a, "--mountport") == 0)
			; /* nfsbench's flag; NFSv4 has no MOUNT */
		else
			usage();
	}
	if (port <= 0 || !export || export[0] != '/' || !path || b.window < 1 ||
	    b.window > MAX_WINDOW || (b.rsize && (b.rsize < 4096 || b.rsize > (1 << 20))) ||
	    b.timeout_s < 1)
		usage();
	if (verify) {
		b.verify = fopen(verify, "w");
		if (!b.verify)
			die("open", verify, strerror(errno));
	}

	/* the mount (not timed) */
	b.nfs = nfs_init_context();
	if (!b.nfs)
		die("init", "", "no libnfs context");
	if (nfs_set_version(b.nfs, NFS_V4) != 0)
		die("version", "4", nfs_get_error(b.nfs));
	nfs_set_uid(b.nfs, uid);
	nfs_set_gid(b.nfs, gid);
	nfs_set_dircache(b.nfs, 0);
	nfs_set_timeout(b.nfs, b.timeout_s * 1000);
	char url[1024];
	snprintf(url, sizeof(url), "nfs://%s%s?version=4&nfsport=%d", host, export, port);
	struct nfs_url *u = nfs_parse_url_dir(b.nfs, url);
	if (!u)
		die("URL", url, nfs_get_error(b.nfs));
	if (nfs_mount(b.nfs, u->server, u->path) != 0)
		die("mount", url, nfs_get_error(b.nfs));
	nfs_destroy_url(u);
	uint64_t maxread = nfs_get_readmax(b.nfs);
	if (maxread == 0 || maxread > (1 << 20))
		maxread = 1 << 20;
	if (b.rsize == 0 || b.rsize > maxread)
		b.rsize = (uint32_t)maxread;

	char abs[4096], rel[4096];
	snprintf(abs, sizeof(abs), "/%s", path);
	snprintf(rel, sizeof(rel), "%s", path);
	while (rel[0] && rel[strlen(rel) - 1] == '/')
		rel[strlen(rel) - 1] = 0;
	while (abs[1] && abs[strlen(abs) - 1] == '/')
		abs[strlen(abs) - 1] = 0;

	double t0 = now_s();
	struct nfs_stat_64 st;
	b.calls++;
	if (nfs_stat64(b.nfs, abs, &st) != 0)
		die("GETATTR", abs, nfs_get_error(b.nfs));
	if (tar) {
		if ((st.nfs_mode & S_IFMT) != S_IFDIR)
			die("tar", abs, "not a directory");
		walk(&b, abs, rel);
	} else {
		if ((st.nfs_mode & S_IFMT) != S_IFREG)
			die("cat", abs, "not a regular file");
		read_regular(&b, abs, rel, st.nfs_size);
	}
	double dt = now_s() - t0;

	printf("workload=%s seconds=%.6f bytes=%" PRIu64 " files=%" PRIu64 " dirs=%" PRIu64
	       " symlinks=%" PRIu64 " calls=%" PRIu64 " reads=%" PRIu64 " lookups=0 rsize=%" PRIu32
	       "\n",
	       tar ? "tar" : "cat", dt, b.bytes, b.files, b.dirs, b.symlinks, b.calls, b.reads,
	       b.rsize);
	if (b.verify && fclose(b.verify) != 0)
		die("write", verify, "failed");
	nfs_umount(b.nfs);
	nfs_destroy_context(b.nfs);
	return 0;
}
