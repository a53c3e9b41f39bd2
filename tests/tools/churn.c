/*
 * churn: clients that vanish with calls in flight. Each cycle connects to an
 * NFSv3 + MOUNTv3 server (one TCP port), MOUNTs the export, writes M
 * pipelined NFS calls in one go and closes the socket at once without
 * reading a reply: a plain close on even cycles, an RST (SO_LINGER {1,0})
 * on odd ones. Afterwards a fresh connection must get NFS NULL and
 * GETATTR(root) answered (SUCCESS, NFS3_OK).
 *
 * Usage: churn HOST PORT EXPORT_PATH [--cycles N] [--calls M] [--seed S]
 *              [--file NAME] [--plain] [--timeout S]
 *
 *   --cycles N    connections to open and drop [100]
 *   --calls M     calls written per connection: GETATTR, READDIRPLUS (dircount
 *                 8192, maxcount 65536), ACCESS of the root and, with --file,
 *                 READ of 1 MiB at offset 0 of NAME (looked up once) [64]
 *   --seed S      seeds the mix of calls [1]
 *   --file NAME   a file in the export root to READ
 *   --plain       cycles only connect and close (no MOUNT, no calls)
 *   --hold S      a slow client: send the calls (as far as the proxy takes
 *                 them), then keep the connection open S seconds without
 *                 reading a single reply, then drop it
 *   --timeout S   limit on every connect, send and read [5]
 *
 * Every call is AUTH_SYS uid 0 gid 0. Prints one summary line; exits 0 on
 * success, 1 when a MOUNT or the final check failed, 2 on a usage error.
 */
#include "deadline.h"
#include "resvport.h"
#include "xdrbuf.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LAST_FRAG  0x80000000u
#define PROG_NFS   100003u
#define PROG_MOUNT 100005u

#define NFS3_NULL        0
#define NFS3_GETATTR     1
#define NFS3_LOOKUP      3
#define NFS3_ACCESS      4
#define NFS3_READ        6
#define NFS3_READDIRPLUS 17
#define MOUNT3_MNT       1

#define FHMAX     64
#define MAX_REPLY (2u * 1024 * 1024)
#define READ_SIZE (1024u * 1024)

static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static int g_timeout_ms = 5000;
static uint32_t g_seed = 1;
static uint32_t g_xid;
static char g_err[256];

struct fh {
	uint8_t d[FHMAX];
	uint32_t len;
};

/* XDR encoding: xdrbuf.h; deadlines: deadline.h */

/* every call is AUTH_SYS uid 0 / gid 0 */
static const struct authsys g_auth = {0x43484e31u, "churn"};

/* Appends one record (a single last fragment) holding a call header with
 * g_auth's credential and an AUTH_NONE verifier. Returns the marker's
 * offset for xb_record_end(). */
static size_t call_begin(struct xbuf *b, uint32_t xid, uint32_t prog, uint32_t proc)
{
	size_t mark = b->len;

	xb_u32(b, 0); /* record marker, filled in by xb_record_end() */
	xb_call(b, &g_auth, xid, prog, 3, proc);
	return mark;
}

/* --- sockets with timeouts ------------------------------------------------- */

static void fail_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_err, sizeof(g_err), fmt, ap);
	va_end(ap);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, const struct timespec *dl)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		long left = ms_left(dl);
		if (left == 0)
			return 0;
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static int tcp_connect(void)
{
	struct timespec dl;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	int fd;

	/* Thousands of closed connections leave this side's ports in
	 * TIME_WAIT; with SO_REUSEADDR here they do not stop a later server
	 * from binding one of those ports (Linux lets a SO_REUSEADDR bind pass
	 * a TIME_WAIT socket only if that socket had SO_REUSEADDR too). Run
	 * as root, the port is a reserved one, as a kernel or libnfs client's
	 * (resvport.h). */
	deadline_in(&dl, g_timeout_ms);
	fd = resv_connect_start((struct sockaddr *)&g_addr, g_addrlen, 1);
	if (fd < 0) {
		fail_msg("connect: %s", strerror(errno));
		return -1;
	}
	if (wait_fd(fd, POLLOUT, &dl) <= 0) {
		fail_msg("connect: timeout after %d ms", g_timeout_ms);
		close(fd);
		return -1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	if (soerr) {
		fail_msg("connect: %s", strerror(soerr));
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	struct timespec dl;

	deadline_in(&dl, g_timeout_ms);
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(fd, POLLOUT, &dl) <= 0) {
				fail_msg("send: timeout after %d ms (%zu bytes unsent)",
				         g_timeout_ms, n);
				return -1;
			}
		} else {
			fail_msg("send: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int read_full(int fd, uint8_t *p, size_t n, const struct timespec *dl)
{
	while (n > 0) {
		ssize_t r = recv(fd, p, n, 0);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		} else if (r == 0) {
			fail_msg("read: connection closed by the server");
			return -1;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_fd(fd, POLLIN, dl) <= 0) {
				fail_msg("read: no reply within %d ms", g_timeout_ms);
				return -1;
			}
		} else {
			fail_msg("read: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Reads one record (fragments joined) into buf; returns its length or -1. */
static long read_record(int fd, uint8_t *buf)
{
	struct timespec dl;
	size_t len = 0;
	uint8_t m[4];

	deadline_in(&dl, g_timeout_ms);
	for (;;) {
		if (read_full(fd, m, 4, &dl) != 0)
			return -1;
		uint32_t flen = get_u32(m) & ~LAST_FRAG;
		if (len + flen > MAX_REPLY) {
			fail_msg("reply record larger than %u bytes", MAX_REPLY);
			return -1;
		}
		if (read_full(fd, buf + len, flen, &dl) != 0)
			return -1;
		len += flen;
		if (get_u32(m) & LAST_FRAG)
			return (long)len;
	}
}

/* --- replies ---------------------------------------------------------------- */

struct rd {
	const uint8_t *p;
	size_t n, off;
	int bad;
};

static uint32_t rd_u32(struct rd *r)
{
	if (r->n - r->off < 4) {
		r->bad = 1;
		r->off = r->n;
		return 0;
	}
	r->off += 4;
	return get_u32(r->p + r->off - 4);
}

/* a variable-length opaque of at most max bytes into out */
static void rd_opaque(struct rd *r, uint8_t *out, uint32_t *len, uint32_t max)
{
	uint32_t n = rd_u32(r);
	uint32_t padded = (n + 3) & ~3u;

	if (r->bad || n > max || r->n - r->off < padded) {
		r->bad = 1;
		return;
	}
	memcpy(out, r->p + r->off, n);
	*len = n;
	r->off += padded;
}

static uint8_t g_rbuf[MAX_REPLY];

/* Sends one call (rec holds the record) and reads its reply: an accepted,
 * SUCCESS reply with this xid. On success r reads the procedure's result. */
static int rpc(int fd, const struct xbuf *rec, uint32_t xid, const char *what, struct rd *r)
{
	long n;

	if (send_all(fd, rec->d, rec->len) != 0 || (n = read_record(fd, g_rbuf)) < 0) {
		char e[sizeof(g_err)];
		memcpy(e, g_err, sizeof(e));
		fail_msg("%s: %s", what, e);
		return -1;
	}
	*r = (struct rd){.p = g_rbuf, .n = (size_t)n};
	uint32_t rxid = rd_u32(r), mtype = rd_u32(r), rstat = rd_u32(r);
	if (r->bad || rxid != xid || mtype != 1) {
		fail_msg("%s: not a reply to xid 0x%08x (xid 0x%08x, msg_type %u, %ld bytes)", what,
		         xid, rxid, mtype, n);
		return -1;
	}
	if (rstat != 0) {
		uint32_t st = rd_u32(r);
		fail_msg("%s: MSG_DENIED reject_stat %u", what, st);
		return -1;
	}
	(void)rd_u32(r); /* verifier */
	uint32_t vlen = rd_u32(r);
	if (vlen > 400 || r->n - r->off < ((vlen + 3) & ~3u)) {
		fail_msg("%s: bad verifier length %u", what, vlen);
		return -1;
	}
	r->off += (vlen + 3) & ~3u;
	uint32_t astat = rd_u32(r);
	if (r->bad || astat != 0) {
		fail_msg("%s: accept_stat %u, not SUCCESS", what, astat);
		return -1;
	}
	return 0;
}

static int do_mount(int fd, const char *path, struct fh *root)
{
	struct xbuf b = {0};
	struct rd r;
	uint32_t xid = ++g_xid;
	size_t m = call_begin(&b, xid, PROG_MOUNT, MOUNT3_MNT);
	int rc = -1;

	xb_opaque(&b, path, (uint32_t)strlen(path));
	xb_record_end(&b, m);
	if (rpc(fd, &b, xid, "MOUNT MNT", &r) == 0) {
		uint32_t st = rd_u32(&r);
		root->len = 0;
		if (st == 0)
			rd_opaque(&r, root->d, &root->len, FHMAX);
		if (st != 0)
			fail_msg("MOUNT MNT %s: mountstat3 %u", path, st);
		else if (r.bad || root->len == 0)
			fail_msg("MOUNT MNT %s: bad mountres3 (file handle)", path);
		else
			rc = 0;
	}
	free(b.d);
	return rc;
}

/* NFS call with one file handle argument; returns nfsstat3 or -1 */
static int do_fh_call(int fd, uint32_t proc, const char *what, const struct fh *fh,
                      const char *name, struct fh *out)
{
	struct xbuf b = {0};
	struct rd r;
	uint32_t xid = ++g_xid;
	size_t m = call_begin(&b, xid, PROG_NFS, proc);
	int rc = -1;

	if (fh)
		xb_opaque(&b, fh->d, fh->len);
	if (name)
		xb_opaque(&b, name, (uint32_t)strlen(name));
	xb_record_end(&b, m);
	if (rpc(fd, &b, xid, what, &r) == 0) {
		rc = 0;
		if (proc != NFS3_NULL) {
			rc = (int)rd_u32(&r);
			if (rc == 0 && out)
				rd_opaque(&r, out->d, &out->len, FHMAX);
			if (r.bad) {
				fail_msg("%s: short or bad result", what);
				rc = -1;
			} else if (rc != 0) {
				fail_msg("%s: nfsstat3 %d", what, rc);
			}
		}
	}
	free(b.d);
	return rc;
}

/* --- the churn --------------------------------------------------------------- */

static uint32_t rnd(void)
{
	g_seed ^= g_seed << 13;
	g_seed ^= g_seed >> 17;
	g_seed ^= g_seed << 5;
	return g_seed;
}

/* Appends M calls on root (and file, if any) to b. */
static void build_calls(struct xbuf *b, int calls, const struct fh *root, const struct fh *file,
                        uint64_t *nread)
{
	for (int i = 0; i < calls; i++) {
		uint32_t kind = rnd() % (file ? 4 : 3);
		uint32_t proc = kind == 0   ? NFS3_GETATTR
		                : kind == 1 ? NFS3_READDIRPLUS
		                : kind == 2 ? NFS3_ACCESS
		                            : NFS3_READ;
		size_t m = call_begin(b, ++g_xid, PROG_NFS, proc);
		xb_opaque(b, proc == NFS3_READ ? file->d : root->d,
		          proc == NFS3_READ ? file->len : root->len);
		switch (proc) {
		case NFS3_READDIRPLUS:
			xb_u64(b, 0);       /* cookie */
			xb_raw(b, NULL, 8); /* cookieverf */
			xb_u32(b, 8192);    /* dircount */
			xb_u32(b, 65536);   /* maxcount */
			break;
		case NFS3_ACCESS:
			xb_u32(b, 0x3f);
			break;
		case NFS3_READ:
			xb_u64(b, 0);
			xb_u32(b, READ_SIZE);
			(*nread)++;
			break;
		}
		xb_record_end(b, m);
	}
}

/* Drops the connection: FIN on plain close, RST with SO_LINGER {1,0}. */
static void drop(int fd, int rst)
{
	if (rst) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: churn HOST PORT EXPORT_PATH [--cycles N] [--calls M] [--seed S]\n"
	           "             [--file NAME] [--plain] [--hold S] [--timeout S]\n");
}

static long num_arg(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long n = v ? strtol(v, &end, 0) : 0;

	if (!v || !*v || *end || n < lo || n > hi) {
		fprintf(stderr, "churn: %s needs a number in %ld..%ld\n", opt, lo, hi);
		exit(2);
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *pos[3] = {0}, *file_name = NULL;
	long cycles = 100, calls = 64, npos = 0, hold = 0;
	int plain = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--cycles")) {
			cycles = num_arg(a, v, 1, 10000000), i++;
		} else if (!strcmp(a, "--calls")) {
			calls = num_arg(a, v, 0, 100000), i++;
		} else if (!strcmp(a, "--seed")) {
			g_seed = (uint32_t)num_arg(a, v, 0, 0xffffffffL), i++;
		} else if (!strcmp(a, "--timeout")) {
			g_timeout_ms = (int)num_arg(a, v, 1, 600) * 1000, i++;
		} else if (!strcmp(a, "--file") && v) {
			file_name = v, i++;
		} else if (!strcmp(a, "--plain")) {
			plain = 1;
		} else if (!strcmp(a, "--hold")) {
			hold = num_arg(a, v, 1, 3600), i++;
		} else if (a[0] == '-' || npos == 3) {
			usage(stderr);
			return 2;
		} else {
			pos[npos++] = a;
		}
	}
	if (npos != 3) {
		usage(stderr);
		return 2;
	}
	long port = num_arg("PORT", pos[1], 1, 65535);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int gai = getaddrinfo(pos[0], NULL, &hints, &ai);
	if (gai != 0 || !ai) {
		fprintf(stderr, "churn: %s: %s\n", pos[0], gai_strerror(gai));
		return 2;
	}
	memcpy(&g_addr, ai->ai_addr, ai->ai_addrlen);
	g_addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	if (g_addr.ss_family == AF_INET)
		((struct sockaddr_in *)&g_addr)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&g_addr)->sin6_port = htons((uint16_t)port);
	if (g_seed == 0)
		g_seed = 1;
	g_xid = g_seed * 2654435761u;
	signal(SIGPIPE, SIG_IGN);

	/* the root handle, and the file's handle once per run */
	struct fh root = {0}, file = {0}, fh;
	int fd = tcp_connect();
	if (fd < 0 || do_mount(fd, pos[2], &root) != 0 ||
	    (file_name && do_fh_call(fd, NFS3_LOOKUP, "LOOKUP", &root, file_name, &file) != 0)) {
		printf("churn: FAIL setup: %s\n", g_err);
		return 1;
	}
	close(fd);

	double t0 = now_s();
	long done = 0, rsts = 0, failures = 0, consecutive = 0;
	uint64_t sent = 0, nread = 0;
	struct xbuf b = {0};
	for (long c = 0; c < cycles && consecutive < 20; c++) {
		int rst = c & 1;
		b.len = 0;
		fd = tcp_connect();
		if (fd >= 0 && !plain) {
			if (do_mount(fd, pos[2], &fh) != 0) {
				drop(fd, rst);
				fd = -1;
			} else if (fh.len != root.len || memcmp(fh.d, root.d, fh.len) != 0) {
				fail_msg("MOUNT MNT returned a different root handle");
				drop(fd, rst);
				fd = -1;
			}
		}
		if (fd >= 0 && !plain && calls > 0) {
			build_calls(&b, (int)calls, &root, file_name ? &file : NULL, &nread);
			if (hold) {
				/* the proxy stops reading a client that does not
				 * read its replies: a timeout here is expected */
				send_all(fd, b.d, b.len);
				sent += (uint64_t)calls;
				sleep((unsigned)hold);
			} else if (send_all(fd, b.d, b.len) != 0) {
				drop(fd, rst);
				fd = -1;
			} else {
				sent += (uint64_t)calls;
			}
		}
		if (fd < 0) {
			if (failures++ < 10)
				printf("churn: cycle %ld: %s\n", c, g_err);
			consecutive++;
			continue;
		}
		consecutive = 0;
		drop(fd, rst);
		done++;
		rsts += rst;
	}
	free(b.d);
	double dt = now_s() - t0;

	/* the server must still answer a new client */
	int ok = 0;
	double t1 = now_s();
	fd = tcp_connect();
	if (fd >= 0 && do_fh_call(fd, NFS3_NULL, "NFS NULL", NULL, NULL, NULL) == 0 &&
	    do_fh_call(fd, NFS3_GETATTR, "GETATTR(root)", &root, NULL, NULL) == 0)
		ok = 1;
	if (fd >= 0)
		close(fd);
	printf("churn: %ld/%ld cycles done (%ld closed with RST), %s, %llu calls sent "
	       "(%llu READ of %u KiB) in %.2f s, %ld failed cycles; after: %s%s (%.2f s)\n",
	       done, cycles, rsts, plain ? "connect/close only" : "MOUNT each",
	       (unsigned long long)sent, (unsigned long long)nread, READ_SIZE / 1024, dt, failures,
	       ok ? "NULL SUCCESS, GETATTR NFS3_OK" : "FAIL: ", ok ? "" : g_err, now_s() - t1);
	return ok && failures == 0 ? 0 : 1;
}
