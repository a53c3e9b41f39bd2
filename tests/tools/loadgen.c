/*
 * loadgen: many concurrent NFSv3 clients reading whole files and checking
 * every byte. Each client has its own TCP connection (a libnfs raw RPC
 * context); one thread polls them all.
 *
 *   loadgen --port P --export PATH --manifest FILE [--clients N] [--seconds S]
 *           [--seed N] [--host H] [--mount-port P] [--big-ratio F] [--once]
 *           [--reconnect] [--timeout S] [--rsize N] [--max-rate B] [--fh-out FILE]
 *           [--fh-in FILE]
 *   loadgen --make-manifest DIR
 *
 * The manifest has one "relative-path size xxh3-hex" line per file (the
 * path may contain spaces; '#' starts a comment line); --make-manifest DIR
 * walks DIR and prints it, sorted by path.
 *
 * Each client MOUNTs the export once (on --mount-port, default --port: the
 * proxy serves MOUNT on its NFS port), then repeatedly picks a file from its
 * own seeded generator (a big file, >= 1 MiB, with probability --big-ratio
 * [0.25] when there are both kinds), LOOKUPs it component by component from
 * the root, and READs it whole with a READ size drawn among 4 KiB, 64 KiB and
 * 1 MiB and 1..16 READs in flight (at most 2 MiB in flight per client).
 * Replies may come back in any order; the bytes are hashed (XXH3-64) in file
 * order and compared with the manifest, as are the size in the LOOKUP and
 * READ attributes and the eof flag (set exactly when a READ reaches the end
 * of the file). A short READ is continued where it stopped.
 *
 * After --seconds [10] no new file is started; files in progress complete.
 * --once: instead, every manifest file is read exactly once (handed out to
 * the clients in order) and the run ends when all are done.
 * --reconnect: a client whose connection fails reconnects (after 100 ms)
 * instead of stopping; the failure still counts as an RPC error.
 * --rsize N: every READ asks N bytes (at most 1 MiB), as many in flight as fit
 * in 2 MiB (at most 16), instead of the random choice.
 * --max-rate B: each client reads a file at most B bytes/s (READs are
 * issued no faster), so a file takes a known time (the crash test kills the
 * proxy at random points of it).
 * --timeout S [60]: a client waiting longer than S s for a reply counts an
 * RPC error (timeout) and is reset.
 * --fh-out FILE: write "fh-hex path" for every file looked up.
 * --fh-in FILE: take the handles from such a file: no MOUNT and no LOOKUP
 * (only READs), so a proxy whose upstream is down can answer from its cache.
 *
 * Prints one summary line of key=value pairs (files, bytes, MB/s with
 * MB = 10^6, files/s, files_by_rsize = files read with 4K/64K/1M READs, and
 * every error counter). "wrong_files" counts files
 * whose bytes, size or eof disagreed with the manifest, "wrong_bytes" the
 * manifest size of those files.
 * Exit: 0 no error; 3 any wrong byte, size or eof (whatever else happened);
 * 1 NFS errors, RPC errors or timeouts (or, with --once, a file not read);
 * 2 usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <xxhash.h>

#include "nfsnames.h"

#define MAX_CLIENTS  1024
#define MAX_DEPTH    16
#define MAX_INFLIGHT (2u << 20) /* bytes of READ replies in flight per client */
#define BIG_MIN      (1u << 20)
#define FHMAX        64
#define MAX_REPORTS  20

/* ------------------------------------------------------------------ files */

struct file {
	char *path;
	uint64_t size;
	uint64_t hash;
	char **comp; /* path components */
	int ncomp;
	uint8_t fh[FHMAX]; /* --fh-in / --fh-out */
	uint32_t fhlen;
};

static struct file *files;
static size_t nfiles;
static size_t *big_idx, nbig, *small_idx, nsmall;

/* ---------------------------------------------------------------- clients */

enum state {
	S_CONNECT, /* connecting to the mount port or the NFS port */
	S_MNT,     /* MNT in flight */
	S_IDLE,    /* ready to start a file (main loop) */
	S_LOOKUP,  /* LOOKUP of comp[ci] in flight */
	S_READ,    /* READs in flight */
	S_RESET,   /* connection failed: reset from the main loop */
	S_SWITCH,  /* MNT done on a separate mount port: connect to NFS */
	S_BACKOFF, /* waiting to reconnect */
	S_DONE,
};

struct slot {
	uint64_t off;  /* file offset of the slot's range */
	uint32_t want; /* bytes of the range */
	uint32_t got;  /* bytes received, in order within the slot */
	uint32_t fed;  /* bytes of it fed to the hash */
	int complete;
	uint8_t *buf; /* out-of-order bytes, at slot-relative offsets */
	uint32_t cap;
};

struct client {
	int id;
	struct rpc_context *rpc;
	enum state st;
	unsigned gen; /* bumped whenever outstanding calls must be ignored */
	uint64_t rng;
	uint8_t root[FHMAX];
	uint32_t rootlen;
	uint8_t fh[FHMAX];
	uint32_t fhlen;
	struct file *f;
	int ci;
	uint32_t rsize;
	int depth;
	uint64_t next_off; /* next offset to ask for */
	uint64_t hashed;   /* bytes fed to the hash */
	int head, nslots;  /* ring of slots in offset order */
	struct slot slots[MAX_DEPTH];
	XXH3_state_t *xs;
	int outstanding; /* calls of this generation not yet answered */
	double last_progress;
	double backoff_until;
	double file_t0;            /* when the READs of this file began */
	int on_mount_ctx;          /* connected to a separate mount port */
	struct call *connect_call; /* until connect_cb ran */
};

struct call {
	struct client *c;
	unsigned gen;
	int slot;
	uint64_t off;   /* READ: offset asked */
	uint32_t count; /* READ: count asked */
};

static struct client *clients;
static int nclients = 64;
static const char *host = "127.0.0.1";
static const char *export_path;
static int port, mount_port;
static double big_ratio = 0.25;
static int once, reconnect;
static double timeout_s = 60;
static double max_rate;      /* --max-rate, bytes/s per client */
static uint32_t fixed_rsize; /* --rsize */
static size_t once_next;
static int stopping;

static struct {
	uint64_t files, files_big, files_small, bytes, reads, lookups, mounts;
	uint64_t nfs_errors, rpc_errors, timeouts, wrong_files, wrong_bytes;
	uint64_t bad_eof, bad_attr, connects;
	uint64_t reads_by_size[3];
} st;
static int reports;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct client *c, const char *fmt, ...)
{
	va_list ap;

	if (++reports > MAX_REPORTS) {
		if (reports == MAX_REPORTS + 1)
			fprintf(stderr, "loadgen: further reports suppressed\n");
		return;
	}
	fprintf(stderr, "loadgen: client %d%s%s: ", c->id, c->f ? " " : "", c->f ? c->f->path : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const char *nfsstat_name(int s)
{
	const char *n = nfsstat3_name(s);

	return n ? n : "NFS3ERR_other";
}

static struct call *new_call(struct client *c, int slot)
{
	struct call *k = calloc(1, sizeof(*k));

	if (k == NULL) {
		perror("calloc");
		exit(2);
	}
	k->c = c;
	k->gen = c->gen;
	k->slot = slot;
	c->outstanding++;
	return k;
}

/* Takes the call back from a callback. Returns its client when the call
 * still matters (same generation), NULL when it is to be ignored. */
static struct client *end_call(struct call *k)
{
	struct client *c = k->c;
	unsigned gen = k->gen;

	if (gen != c->gen)
		return NULL;
	c->outstanding--;
	c->last_progress = now();
	return c;
}

/* An RPC-level failure seen in a callback: the connection is reset from the
 * main loop (a context must not be destroyed from inside its callbacks). */
static void rpc_failed(struct client *c, int status, void *data, const char *what)
{
	if (c->st == S_RESET)
		return;
	st.rpc_errors++;
	report(c, "%s: rpc %s: %s", what,
	       status == RPC_STATUS_CANCEL    ? "cancelled"
	       : status == RPC_STATUS_TIMEOUT ? "timeout"
	                                      : "error",
	       data ? (const char *)data : "?");
	c->gen++;
	c->st = S_RESET;
}

/* A call that could not be queued: taken back, and the client is reset. */
static void queue_failed(struct client *c, struct call *k, const char *what)
{
	c->outstanding--;
	free(k);
	rpc_failed(c, RPC_STATUS_ERROR, (void *)rpc_get_error(c->rpc), what);
}

/* The start of a callback: takes the call back and frees it. Returns its
 * client when the reply is to be handled (the call still matters and got
 * an answer), else NULL (an RPC failure is counted, see rpc_failed()). */
static struct client *cb_client(struct call *k, int status, void *data, const char *what)
{
	struct client *c = end_call(k);

	free(k);
	if (c == NULL)
		return NULL;
	if (status != RPC_STATUS_SUCCESS) {
		rpc_failed(c, status, data, what);
		return NULL;
	}
	return c;
}

/* The current file is given up (error) or finished: back to idle. */
static void file_end(struct client *c)
{
	c->gen++; /* late replies of this file are ignored */
	c->outstanding = 0;
	c->f = NULL;
	c->st = S_IDLE;
}

static void wrong(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wrong(struct client *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	st.wrong_files++;
	st.wrong_bytes += c->f->size;
	report(c, "WRONG: %s", msg);
	file_end(c);
}

static void nfs_error(struct client *c, const char *what, int status)
{
	st.nfs_errors++;
	report(c, "%s: %s (%d)", what, nfsstat_name(status), status);
	file_end(c);
}

/* ------------------------------------------------------------------ reads */

static void issue_reads(struct client *c);
static int queue_read(struct client *c, int i, uint64_t off, uint32_t count);

static void read_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *k = priv;
	int si = k->slot;
	uint64_t off = k->off;
	uint32_t asked = k->count;
	struct client *c = cb_client(k, status, data, "READ");
	READ3res *r = data;

	(void)rpc;
	if (c == NULL)
		return;
	struct slot *s = &c->slots[si];
	if (r->status != NFS3_OK) {
		char what[64];
		snprintf(what, sizeof(what), "READ at %" PRIu64, off);
		nfs_error(c, what, r->status);
		return;
	}
	READ3resok *ok = &r->READ3res_u.resok;
	uint32_t n = ok->data.data_len;
	uint64_t size = c->f->size;
	if (ok->file_attributes.attributes_follow &&
	    ok->file_attributes.post_op_attr_u.attributes.size != size) {
		st.bad_attr++;
		wrong(c, "READ at %" PRIu64 ": attributes say size %" PRIu64 ", manifest %" PRIu64,
		      off, (uint64_t)ok->file_attributes.post_op_attr_u.attributes.size, size);
		return;
	}
	if (n > asked || ok->count != n) {
		wrong(c, "READ at %" PRIu64 " of %u returned %u bytes (count %u)", off, asked, n,
		      ok->count);
		return;
	}
	if (off + n > size) {
		wrong(c, "READ at %" PRIu64 " returned %u bytes past the size %" PRIu64, off, n,
		      size);
		return;
	}
	int want_eof = off + n >= size;
	if (!!ok->eof != want_eof) {
		st.bad_eof++;
		wrong(c, "READ at %" PRIu64 " count %u: %u bytes, eof %d (size %" PRIu64 ")", off,
		      asked, n, ok->eof, size);
		return;
	}
	if (n == 0 && size > 0) {
		wrong(c, "READ at %" PRIu64 ": 0 bytes without eof", off);
		return;
	}
	st.reads++;
	/* in file order with nothing buffered before it: straight to the hash */
	int head = si == c->head;
	if (head && s->fed == s->got) {
		XXH3_64bits_update(c->xs, ok->data.data_val, n);
		s->fed += n;
		c->hashed += n;
	} else if (n) {
		if (s->cap < s->want) {
			free(s->buf);
			s->buf = malloc(s->want);
			if (s->buf == NULL) {
				perror("malloc");
				exit(2);
			}
			s->cap = s->want;
		}
		memcpy(s->buf + s->got, ok->data.data_val, n);
	}
	s->got += n;
	if (s->got < s->want) {
		/* a short READ: ask for the rest of the slot's range */
		queue_read(c, si, s->off + s->got, s->want - s->got);
		return;
	}
	s->complete = 1;
	/* drain the slots that are complete, in order */
	while (c->nslots > 0) {
		struct slot *h = &c->slots[c->head];
		if (h->fed < h->got) {
			XXH3_64bits_update(c->xs, h->buf + h->fed, h->got - h->fed);
			c->hashed += h->got - h->fed;
			h->fed = h->got;
		}
		if (!h->complete)
			break;
		c->head = (c->head + 1) % c->depth;
		c->nslots--;
	}
	if (c->nslots == 0 && c->next_off >= size) {
		uint64_t h = XXH3_64bits_digest(c->xs);
		if (c->hashed != size) {
			wrong(c, "read %" PRIu64 " bytes, manifest size %" PRIu64, c->hashed, size);
			return;
		}
		if (h != c->f->hash) {
			wrong(c,
			      "xxh3 %016" PRIx64 ", manifest %016" PRIx64 " (rsize %u, depth %d)",
			      h, c->f->hash, c->rsize, c->depth);
			return;
		}
		st.files++;
		st.bytes += size;
		if (size >= BIG_MIN)
			st.files_big++;
		else
			st.files_small++;
		file_end(c);
		return;
	}
	issue_reads(c);
}

/* Queues a READ of count bytes at off for slot i; 0 when it could not be
 * sent (the client is reset). */
static int queue_read(struct client *c, int i, uint64_t off, uint32_t count)
{
	READ3args a;
	struct call *k = new_call(c, i);

	memset(&a, 0, sizeof(a));
	a.file.data.data_len = c->fhlen;
	a.file.data.data_val = (char *)c->fh;
	a.offset = off;
	a.count = count;
	k->off = off;
	k->count = count;
	if (rpc_nfs3_read_async(c->rpc, read_cb, &a, k) != 0) {
		queue_failed(c, k, "READ queue");
		return 0;
	}
	return 1;
}

static void issue_reads(struct client *c)
{
	uint64_t size = c->f->size;

	/* a zero-length file still gets one READ (0 bytes, eof) */
	while (c->nslots < c->depth && (c->next_off < size || (size == 0 && c->next_off == 0))) {
		int i = (c->head + c->nslots) % c->depth;
		struct slot *s = &c->slots[i];
		uint64_t left = size - c->next_off;

		/* --max-rate: the main loop comes back for the rest */
		if (max_rate > 0 && c->next_off > 0 &&
		    (double)c->next_off > max_rate * (now() - c->file_t0))
			break;
		s->off = c->next_off;
		s->want = left < c->rsize ? (uint32_t)left : c->rsize;
		s->got = s->fed = 0;
		s->complete = 0;
		if (!queue_read(c, i, s->off, s->want ? s->want : c->rsize))
			return;
		c->nslots++;
		if (size == 0) {
			c->next_off = 1; /* only the one READ */
			break;
		}
		c->next_off += s->want;
	}
}

static void start_reads(struct client *c)
{
	static const uint32_t sizes[3] = {4096, 65536, 1u << 20};
	static const int depths[3][4] = {{1, 4, 8, 16}, {1, 2, 4, 8}, {1, 1, 2, 2}};
	int si = (int)(rnd(&c->rng) % 3);

	c->rsize = sizes[si];
	c->depth = depths[si][rnd(&c->rng) % 4];
	if (fixed_rsize) {
		c->rsize = fixed_rsize;
		c->depth = MAX_DEPTH;
		si = fixed_rsize <= 4096 ? 0 : fixed_rsize <= 65536 ? 1 : 2;
	}
	while ((uint64_t)c->depth * c->rsize > MAX_INFLIGHT)
		c->depth /= 2;
	st.reads_by_size[si]++;
	c->next_off = 0;
	c->hashed = 0;
	c->head = 0;
	c->nslots = 0;
	XXH3_64bits_reset(c->xs);
	c->st = S_READ;
	c->file_t0 = now();
	issue_reads(c);
}

/* ---------------------------------------------------------------- lookups */

static void lookup_next(struct client *c);

static void lookup_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct client *c = cb_client(priv, status, data, "LOOKUP");
	LOOKUP3res *r = data;

	(void)rpc;
	if (c == NULL)
		return;
	st.lookups++;
	if (r->status != NFS3_OK) {
		char what[64];
		snprintf(what, sizeof(what), "LOOKUP %.40s", c->f->comp[c->ci]);
		nfs_error(c, what, r->status);
		return;
	}
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	if (ok->object.data.data_len == 0 || ok->object.data.data_len > FHMAX) {
		wrong(c, "LOOKUP returned a handle of %u bytes", ok->object.data.data_len);
		return;
	}
	c->fhlen = ok->object.data.data_len;
	memcpy(c->fh, ok->object.data.data_val, c->fhlen);
	c->ci++;
	if (c->ci < c->f->ncomp) {
		lookup_next(c);
		return;
	}
	if (ok->obj_attributes.attributes_follow) {
		fattr3 *a = &ok->obj_attributes.post_op_attr_u.attributes;
		if (a->type != NF3REG || a->size != c->f->size) {
			st.bad_attr++;
			wrong(c,
			      "LOOKUP attributes: type %d size %" PRIu64 ", manifest size %" PRIu64,
			      a->type, (uint64_t)a->size, c->f->size);
			return;
		}
	}
	c->f->fhlen = c->fhlen;
	memcpy(c->f->fh, c->fh, c->fhlen);
	start_reads(c);
}

static void lookup_next(struct client *c)
{
	LOOKUP3args a;
	uint8_t dir[FHMAX];

	memcpy(dir, c->fh, c->fhlen);
	memset(&a, 0, sizeof(a));
	a.what.dir.data.data_len = c->fhlen;
	a.what.dir.data.data_val = (char *)dir;
	a.what.name = c->f->comp[c->ci];
	struct call *k = new_call(c, -1);
	if (rpc_nfs3_lookup_async(c->rpc, lookup_cb, &a, k) != 0)
		queue_failed(c, k, "LOOKUP queue");
}

static struct file *pick(struct client *c)
{
	if (once) {
		if (once_next >= nfiles)
			return NULL;
		return &files[once_next++];
	}
	int big;
	if (nbig == 0)
		big = 0;
	else if (nsmall == 0)
		big = 1;
	else
		big = (double)(rnd(&c->rng) >> 11) / 9007199254740992.0 < big_ratio;
	return big ? &files[big_idx[rnd(&c->rng) % nbig]]
	           : &files[small_idx[rnd(&c->rng) % nsmall]];
}

static int use_fh_in;

/* From the main loop: an idle client starts its next file. */
static void start_file(struct client *c)
{
	if (stopping) {
		c->st = S_DONE;
		return;
	}
	struct file *f = pick(c);
	if (f == NULL) {
		c->st = S_DONE;
		return;
	}
	c->f = f;
	if (use_fh_in) {
		c->fhlen = f->fhlen;
		memcpy(c->fh, f->fh, f->fhlen);
		start_reads(c);
		return;
	}
	c->fhlen = c->rootlen;
	memcpy(c->fh, c->root, c->rootlen);
	c->ci = 0;
	c->st = S_LOOKUP;
	lookup_next(c);
}

/* ------------------------------------------------------ connect and mount */

static void mnt_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct client *c = cb_client(priv, status, data, "MNT");
	mountres3 *r = data;

	(void)rpc;
	if (c == NULL)
		return;
	if (r->fhs_status != MNT3_OK) {
		st.nfs_errors++;
		report(c, "MNT %s: mountstat3 %d", export_path, r->fhs_status);
		c->st = S_DONE;
		return;
	}
	st.mounts++;
	fhandle3 *h = &r->mountres3_u.mountinfo.fhandle;
	if (h->fhandle3_len == 0 || h->fhandle3_len > FHMAX) {
		report(c, "MNT returned a handle of %u bytes", h->fhandle3_len);
		st.nfs_errors++;
		c->st = S_DONE;
		return;
	}
	c->rootlen = h->fhandle3_len;
	memcpy(c->root, h->fhandle3_val, c->rootlen);
	c->st = c->on_mount_ctx ? S_SWITCH : S_IDLE;
}

static void connect_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *k = priv;

	if (k->c->connect_call == k)
		k->c->connect_call = NULL;
	struct client *c = cb_client(k, status, data, "connect");

	(void)rpc;
	if (c == NULL)
		return;
	st.connects++;
	if (use_fh_in || (c->rootlen && !c->on_mount_ctx)) {
		c->st = S_IDLE; /* a reconnect keeps the root handle */
		return;
	}
	c->st = S_MNT;
	k = new_call(c, -1);
	if (rpc_mount3_mnt_async(c->rpc, mnt_cb, (char *)export_path, k) != 0)
		queue_failed(c, k, "MNT queue");
}

/* Destroys the client's context. libnfs completes what is queued with
 * CANCEL: those callbacks see a stale generation. A context whose socket
 * failed keeps it as "old_fd", which rpc_destroy_context() may not close. */
static void drop_context(struct client *c)
{
	if (c->rpc == NULL)
		return;
	c->gen++;
	int fd = rpc_get_fd(c->rpc);
	rpc_destroy_context(c->rpc);
	c->rpc = NULL;
	free(c->connect_call); /* libnfs may drop a pending connect silently */
	c->connect_call = NULL;
	if (fd > 2 && fcntl(fd, F_GETFD) != -1)
		close(fd);
	c->outstanding = 0;
}

static void connect_client(struct client *c, int to_mount)
{
	c->rpc = rpc_init_context();
	if (c->rpc == NULL) {
		fprintf(stderr, "loadgen: rpc_init_context failed\n");
		exit(2);
	}
	rpc_set_auth(c->rpc, libnfs_authunix_create("loadgen", 0, 0, 0, NULL));
	c->on_mount_ctx = to_mount;
	c->st = S_CONNECT;
	c->last_progress = now();
	struct call *k = new_call(c, -1);
	c->connect_call = k;
	if (rpc_connect_async(c->rpc, host, to_mount ? mount_port : port, connect_cb, k) != 0) {
		c->connect_call = NULL;
		queue_failed(c, k, "connect");
	}
}

static void reset_client(struct client *c)
{
	drop_context(c);
	c->f = NULL;
	if (reconnect && !stopping) {
		c->st = S_BACKOFF;
		c->backoff_until = now() + 0.1;
	} else {
		c->st = S_DONE;
	}
}

static void first_connect(struct client *c)
{
	int sep = !use_fh_in && mount_port != port;

	connect_client(c, sep && c->rootlen == 0);
}

/* ---------------------------------------------------------------- manifest */

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL) {
		perror("strdup");
		exit(2);
	}
	return d;
}

static void add_file(const char *path, uint64_t size, uint64_t hash)
{
	static size_t cap;

	if (nfiles == cap) {
		cap = cap ? cap * 2 : 256;
		files = realloc(files, cap * sizeof(*files));
		if (files == NULL) {
			perror("realloc");
			exit(2);
		}
	}
	struct file *f = &files[nfiles++];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	f->size = size;
	f->hash = hash;
	char *copy = xstrdup(path), *save = NULL;
	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		f->comp = realloc(f->comp, (size_t)(f->ncomp + 1) * sizeof(char *));
		if (f->comp == NULL) {
			perror("realloc");
			exit(2);
		}
		f->comp[f->ncomp++] = xstrdup(t);
	}
	free(copy);
}

static struct file *find_file(const char *path)
{
	for (size_t i = 0; i < nfiles; i++)
		if (strcmp(files[i].path, path) == 0)
			return &files[i];
	return NULL;
}

static void load_manifest(const char *name)
{
	FILE *fp = fopen(name, "r");
	char line[8192];
	int lineno = 0;

	if (fp == NULL) {
		perror(name);
		exit(2);
	}
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		size_t n = strlen(line);
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (n == 0 || line[0] == '#')
			continue;
		/* the last two fields are size and hash; the path may hold spaces */
		char *h = strrchr(line, ' ');
		if (h == NULL)
			goto bad;
		*h++ = 0;
		char *s = strrchr(line, ' ');
		if (s == NULL)
			goto bad;
		*s++ = 0;
		char *e1, *e2;
		errno = 0;
		uint64_t size = strtoull(s, &e1, 10);
		uint64_t hash = strtoull(h, &e2, 16);
		if (errno || *e1 || *e2 || !*s || !*h || !line[0] || line[0] == '/')
			goto bad;
		add_file(line, size, hash);
		continue;
	bad:
		fprintf(stderr, "loadgen: %s:%d: expected \"relative-path size xxh3-hex\"\n", name,
		        lineno);
		exit(2);
	}
	fclose(fp);
	if (nfiles == 0) {
		fprintf(stderr, "loadgen: %s lists no file\n", name);
		exit(2);
	}
	big_idx = calloc(nfiles, sizeof(size_t));
	small_idx = calloc(nfiles, sizeof(size_t));
	for (size_t i = 0; i < nfiles; i++) {
		if (files[i].size >= BIG_MIN)
			big_idx[nbig++] = i;
		else
			small_idx[nsmall++] = i;
	}
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static void load_handles(const char *name)
{
	FILE *fp = fopen(name, "r");
	char line[8192];

	if (fp == NULL) {
		perror(name);
		exit(2);
	}
	while (fgets(line, sizeof(line), fp)) {
		size_t n = strlen(line);
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		char *sp = strchr(line, ' ');
		if (sp == NULL)
			continue;
		*sp = 0;
		struct file *f = find_file(sp + 1);
		size_t hl = strlen(line);
		if (f == NULL || hl % 2 || hl == 0 || hl / 2 > FHMAX)
			continue;
		for (size_t i = 0; i < hl / 2; i++) {
			int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				fprintf(stderr, "loadgen: %s: bad handle for %s\n", name, sp + 1);
				exit(2);
			}
			f->fh[i] = (uint8_t)(hi << 4 | lo);
		}
		f->fhlen = (uint32_t)(hl / 2);
	}
	fclose(fp);
	for (size_t i = 0; i < nfiles; i++) {
		if (files[i].fhlen == 0) {
			fprintf(stderr, "loadgen: %s has no handle for %s\n", name, files[i].path);
			exit(2);
		}
	}
}

static void write_handles(const char *name)
{
	FILE *fp = fopen(name, "w");

	if (fp == NULL) {
		perror(name);
		exit(2);
	}
	for (size_t i = 0; i < nfiles; i++) {
		if (files[i].fhlen == 0)
			continue;
		for (uint32_t j = 0; j < files[i].fhlen; j++)
			fprintf(fp, "%02x", files[i].fh[j]);
		fprintf(fp, " %s\n", files[i].path);
	}
	if (fclose(fp) != 0) {
		perror(name);
		exit(2);
	}
}

/* --make-manifest DIR */
static const char *mk_root;
static size_t mk_rootlen;
static char **mk_lines;
static size_t mk_n, mk_cap;
static int mk_err;

static int mk_visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		mk_err = 1;
		return 0;
	}
	static uint8_t buf[1 << 20];
	XXH3_state_t *xs = XXH3_createState();
	uint64_t size = 0;
	ssize_t n;
	XXH3_64bits_reset(xs);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		XXH3_64bits_update(xs, buf, (size_t)n);
		size += (uint64_t)n;
	}
	if (n < 0) {
		perror(path);
		mk_err = 1;
	}
	close(fd);
	const char *rel = path + mk_rootlen;
	while (*rel == '/')
		rel++;
	char *line;
	if (asprintf(&line, "%s %" PRIu64 " %016" PRIx64, rel, size, XXH3_64bits_digest(xs)) < 0) {
		perror("asprintf");
		exit(2);
	}
	XXH3_freeState(xs);
	if (mk_n == mk_cap) {
		mk_cap = mk_cap ? mk_cap * 2 : 256;
		mk_lines = realloc(mk_lines, mk_cap * sizeof(char *));
		if (mk_lines == NULL) {
			perror("realloc");
			exit(2);
		}
	}
	mk_lines[mk_n++] = line;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int make_manifest(const char *dir)
{
	mk_root = dir;
	mk_rootlen = strlen(dir);
	if (nftw(dir, mk_visit, 32, FTW_PHYS) != 0) {
		perror(dir);
		return 2;
	}
	qsort(mk_lines, mk_n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < mk_n; i++) {
		printf("%s\n", mk_lines[i]);
		free(mk_lines[i]);
	}
	free(mk_lines);
	return mk_err ? 2 : 0;
}

/* -------------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: loadgen --port P --export PATH --manifest FILE [--clients N] [--seconds S]\n"
	    "               [--seed N] [--host H] [--mount-port P] [--big-ratio F] [--once]\n"
	    "               [--reconnect] [--timeout S] [--rsize N] [--max-rate B]\n"
	    "               [--fh-out FILE]\n"
	    "               [--fh-in FILE]\n"
	    "       loadgen --make-manifest DIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *manifest = NULL, *fh_out = NULL, *fh_in = NULL;
	double seconds = 10;
	uint64_t seed = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--once") == 0) {
			once = 1;
			continue;
		}
		if (strcmp(a, "--reconnect") == 0) {
			reconnect = 1;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--make-manifest") == 0)
			return make_manifest(v);
		else if (strcmp(a, "--port") == 0)
			port = atoi(v);
		else if (strcmp(a, "--mount-port") == 0)
			mount_port = atoi(v);
		else if (strcmp(a, "--host") == 0)
			host = v;
		else if (strcmp(a, "--export") == 0)
			export_path = v;
		else if (strcmp(a, "--manifest") == 0)
			manifest = v;
		else if (strcmp(a, "--clients") == 0)
			nclients = atoi(v);
		else if (strcmp(a, "--seconds") == 0)
			seconds = atof(v);
		else if (strcmp(a, "--seed") == 0)
			seed = strtoull(v, NULL, 0);
		else if (strcmp(a, "--big-ratio") == 0)
			big_ratio = atof(v);
		else if (strcmp(a, "--max-rate") == 0)
			max_rate = atof(v);
		else if (strcmp(a, "--rsize") == 0)
			fixed_rsize = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--timeout") == 0)
			timeout_s = atof(v);
		else if (strcmp(a, "--fh-out") == 0)
			fh_out = v;
		else if (strcmp(a, "--fh-in") == 0)
			fh_in = v;
		else
			usage();
	}
	if (port <= 0 || manifest == NULL || (export_path == NULL && fh_in == NULL) ||
	    nclients < 1 || nclients > MAX_CLIENTS || seconds < 0 || timeout_s <= 0 ||
	    big_ratio < 0 || big_ratio > 1 || fixed_rsize > (1u << 20))
		usage();
	if (mount_port <= 0)
		mount_port = port;
	load_manifest(manifest);
	if (fh_in) {
		load_handles(fh_in);
		use_fh_in = 1;
	}

	clients = calloc((size_t)nclients, sizeof(*clients));
	struct pollfd *pfd = calloc((size_t)nclients, sizeof(*pfd));
	int *pfd_client = calloc((size_t)nclients, sizeof(int));
	if (clients == NULL || pfd == NULL || pfd_client == NULL) {
		perror("calloc");
		return 2;
	}
	double t0 = now(), deadline = t0 + seconds;
	for (int i = 0; i < nclients; i++) {
		struct client *c = &clients[i];
		c->id = i;
		c->rng = seed * 0x100000001b3ULL + (uint64_t)i * 0x9e3779b97f4a7c15ULL;
		rnd(&c->rng);
		c->xs = XXH3_createState();
		if (c->xs == NULL) {
			perror("XXH3_createState");
			return 2;
		}
		first_connect(c);
	}

	for (;;) {
		double t = now();
		if (!once && !stopping && t >= deadline)
			stopping = 1;
		int active = 0, n = 0;
		for (int i = 0; i < nclients; i++) {
			struct client *c = &clients[i];
			if (c->st == S_RESET)
				reset_client(c);
			if (c->st == S_SWITCH) {
				drop_context(c);
				connect_client(c, 0);
			}
			if (c->st == S_BACKOFF && t >= c->backoff_until)
				first_connect(c);
			if (c->st == S_IDLE)
				start_file(c);
			else if (c->st == S_READ && max_rate > 0)
				issue_reads(c); /* paced READs now due */
			if (c->st == S_RESET)
				reset_client(c); /* start_file failed to queue */
			if (c->st == S_DONE) {
				drop_context(c);
				continue;
			}
			active++;
			if (c->st == S_BACKOFF || c->rpc == NULL)
				continue;
			if (c->outstanding > 0 && t - c->last_progress > timeout_s) {
				st.timeouts++;
				report(c, "no reply for %.0f s (%s)", timeout_s,
				       c->st == S_READ     ? "READ"
				       : c->st == S_LOOKUP ? "LOOKUP"
				       : c->st == S_MNT    ? "MNT"
				                           : "connect");
				c->gen++;
				c->st = S_RESET;
				continue;
			}
			pfd[n].fd = rpc_get_fd(c->rpc);
			pfd[n].events = (short)rpc_which_events(c->rpc);
			pfd[n].revents = 0;
			pfd_client[n] = i;
			n++;
		}
		if (active == 0)
			break;
		if (poll(pfd, (nfds_t)n, max_rate > 0 ? 2 : 100) < 0 && errno != EINTR) {
			perror("poll");
			return 2;
		}
		for (int j = 0; j < n; j++) {
			struct client *c = &clients[pfd_client[j]];
			if (c->rpc == NULL || c->st == S_RESET)
				continue;
			if (rpc_service(c->rpc, pfd[j].revents) < 0 && c->st != S_RESET) {
				st.rpc_errors++;
				report(c, "connection: %s", rpc_get_error(c->rpc));
				c->gen++;
				c->st = S_RESET;
			}
		}
	}
	double el = now() - t0;
	if (el <= 0)
		el = 1e-9;

	if (fh_out)
		write_handles(fh_out);
	uint64_t bad = st.nfs_errors + st.rpc_errors + st.timeouts;
	uint64_t wrongs = st.wrong_files + st.bad_eof + st.bad_attr;
	if (once && st.files < nfiles)
		bad++; /* every file must have been read and found right */
	printf("loadgen: clients=%d seconds=%.2f files=%" PRIu64 " big=%" PRIu64 " small=%" PRIu64
	       " bytes=%" PRIu64 " MBps=%.1f files_per_s=%.1f reads=%" PRIu64 " lookups=%" PRIu64
	       " mounts=%" PRIu64 " connects=%" PRIu64 " files_by_rsize=%" PRIu64 "/%" PRIu64
	       "/%" PRIu64 " nfs_errors=%" PRIu64 " rpc_errors=%" PRIu64 " timeouts=%" PRIu64
	       " wrong_files=%" PRIu64 " wrong_bytes=%" PRIu64 " bad_eof=%" PRIu64
	       " bad_attr=%" PRIu64 "%s\n",
	       nclients, el, st.files, st.files_big, st.files_small, st.bytes,
	       (double)st.bytes / 1e6 / el, (double)st.files / el, st.reads, st.lookups, st.mounts,
	       st.connects, st.reads_by_size[0], st.reads_by_size[1], st.reads_by_size[2],
	       st.nfs_errors, st.rpc_errors, st.timeouts, st.wrong_files, st.wrong_bytes,
	       st.bad_eof, st.bad_attr, once && st.files < nfiles ? " INCOMPLETE" : "");
	for (int i = 0; i < nclients; i++) {
		drop_context(&clients[i]);
		for (int j = 0; j < MAX_DEPTH; j++)
			free(clients[i].slots[j].buf);
		XXH3_freeState(clients[i].xs);
	}
	free(clients);
	free(pfd);
	free(pfd_client);
	for (size_t i = 0; i < nfiles; i++) {
		for (int j = 0; j < files[i].ncomp; j++)
			free(files[i].comp[j]);
		free(files[i].comp);
		free(files[i].path);
	}
	free(files);
	free(big_idx);
	free(small_idx);
	if (wrongs)
		return 3;
	return bad ? 1 : 0;
}
