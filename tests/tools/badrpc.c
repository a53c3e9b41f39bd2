/*
 * badrpc: send hostile / malformed ONC RPC (RFC 5531) input over TCP to an
 * NFSv3 + MOUNTv3 server and check the RPC-level replies.
 *
 * Usage: badrpc HOST PORT [--case NAME]... [--mount-port N] [--timeout S]
 *               [--seed N] [--no-after] [--allow-nonloopback] [--list]
 *
 * Every check opens a fresh TCP connection, sends hand-encoded XDR, reads one
 * reply record (with a poll() timeout on every read) and parses the reply
 * header: xid, REPLY, MSG_ACCEPTED/MSG_DENIED, accept_stat/reject_stat and
 * their mismatch_info / auth_stat fields. After every case a fresh
 * connection's NFS NULL and MOUNT NULL must still succeed.
 *
 * Prints one line per check, then "badrpc: N passed, M failed"; exits 1 if a
 * check failed, 2 on a usage error.
 *
 * Compare mode: badrpc HOST PORT --compare-with NFSPORT[:MNTPORT] --export PATH
 * PORT is a proxy, NFSPORT (and MNTPORT) the server behind it, on the same
 * HOST. Well-formed calls that a server may refuse at the RPC level (a
 * 300-byte LOOKUP name, an unknown union arm, odd handles) go to both, each
 * on a fresh connection, and the replies must agree: reply_stat,
 * accept_stat (or reject_stat and auth_stat) and, for SUCCESS, the
 * nfsstat3. One exception: a call too large for the proxy to forward
 * (libnfs 4.0 encodes calls into 4 KiB) may get the proxy's own
 * NFS3ERR_NAMETOOLONG. The export's root handle comes from MNT on each side
 * and must be the same bytes.
 * --foreign-export PATH: another export of the server, which the proxy does
 * not serve; its root handle (from the server's MNT) is used in a GETATTR
 * sent to both (nfs-ganesha refuses AUTH_SYS on a krb5-only export with
 * MSG_DENIED AUTH_TOOWEAK).
 * The summary line adds "K answered with an RPC-level error by the server".
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
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* --- RPC / NFS constants (RFC 5531, RFC 1813) ---------------------------- */

#define RPC_CALL  0
#define RPC_REPLY 1

#define RPC_MSG_ACCEPTED 0
#define RPC_MSG_DENIED   1

#define RPC_SUCCESS       0
#define RPC_PROG_UNAVAIL  1
#define RPC_PROG_MISMATCH 2
#define RPC_PROC_UNAVAIL  3
#define RPC_GARBAGE_ARGS  4
#define RPC_SYSTEM_ERR    5

#define RPC_RPC_MISMATCH 0
#define RPC_AUTH_ERROR   1

#define AUTHF_NONE 0
#define AUTHF_SYS  1
#define AUTHF_DH   3
#define AUTHF_GSS  6

#define AS_BADCRED 1
#define AS_TOOWEAK 5

#define PROG_NFS   100003u
#define PROG_MOUNT 100005u
#define PROG_BOGUS 100099u

#define NFS3_GETATTR 1
#define NFS3_LOOKUP  3
#define NFS3_ACCESS  4
#define NFS3_WRITE   7
#define NFS3_CREATE  8
#define NFS3_READDIR 16
#define MOUNT3_MNT   1

#define LAST_FRAG 0x80000000u

/* --- globals ------------------------------------------------------------- */

static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static int g_nfs_port;
static int g_mnt_port;
static int g_timeout_ms = 5000;
static uint32_t g_seed = 0x5eed;
static uint32_t g_xid;
static const char *g_case = "";
static int g_pass;
static int g_fail;
static int g_connect_failed; /* a connect() failed since this was last cleared */

/* XDR encoding: xdrbuf.h; deadlines: deadline.h */

static uint32_t rnd(void)
{
	/* xorshift32: deterministic for a given --seed */
	g_seed ^= g_seed << 13;
	g_seed ^= g_seed >> 17;
	g_seed ^= g_seed << 5;
	return g_seed;
}

static uint32_t next_xid(void)
{
	return ++g_xid;
}

/* --- RPC message builders ------------------------------------------------ */

/* call headers: xdrbuf.h; every AUTH_SYS credential is this one */
static const struct authsys g_auth = {0x12345678, "badrpc"};

/* wrap a message as one record (single last fragment) */
static void xb_record(struct xbuf *out, const struct xbuf *msg)
{
	xb_u32(out, LAST_FRAG | (uint32_t)msg->len);
	xb_raw(out, msg->d, msg->len);
}

/* --- sockets with timeouts ----------------------------------------------- */

static int tcp_connect(int port, char *err, size_t errlen)
{
	struct sockaddr_storage sa = g_addr;
	if (sa.ss_family == AF_INET)
		((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)port);
	/* from a reserved port when run as root, as a kernel or libnfs
	 * client (resvport.h) */
	int fd = resv_connect_start((struct sockaddr *)&sa, g_addrlen, 0);
	if (fd < 0) {
		snprintf(err, errlen, "connect to port %d: %s", port, strerror(errno));
		return -1;
	}
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int r = poll(&p, 1, g_timeout_ms);
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (r <= 0) {
		snprintf(err, errlen, "connect to port %d: timeout", port);
		close(fd);
		return -1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	if (soerr) {
		snprintf(err, errlen, "connect to port %d: %s", port, strerror(soerr));
		close(fd);
		return -1;
	}
	return fd;
}

enum io { IO_OK = 0, IO_CLOSED, IO_TIMEOUT, IO_ERROR, IO_TOOBIG };

static enum io send_all(int fd, const void *p, size_t n)
{
	const uint8_t *c = p;
	struct timespec dl;
	deadline_in(&dl, g_timeout_ms);
	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w > 0) {
			c += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return IO_CLOSED;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return IO_ERROR;
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		long left = ms_left(&dl);
		if (left == 0 || poll(&pf, 1, (int)left) == 0)
			return IO_TIMEOUT;
	}
	return IO_OK;
}

static enum io read_full(int fd, void *p, size_t n, const struct timespec *dl)
{
	uint8_t *c = p;
	while (n > 0) {
		ssize_t r = recv(fd, c, n, 0);
		if (r > 0) {
			c += r;
			n -= (size_t)r;
			continue;
		}
		if (r == 0)
			return IO_CLOSED;
		if (errno == EINTR)
			continue;
		if (errno == ECONNRESET || errno == EPIPE)
			return IO_CLOSED;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return IO_ERROR;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		long left = ms_left(dl);
		if (left == 0)
			return IO_TIMEOUT;
		int pr = poll(&pf, 1, (int)left);
		if (pr == 0)
			return IO_TIMEOUT;
		if (pr < 0 && errno != EINTR)
			return IO_ERROR;
	}
	return IO_OK;
}

#define MAX_REPLY (4u * 1024 * 1024)

/* read one record (reassembling fragments) into *out (malloc'ed) */
static enum io read_record(int fd, uint8_t **out, size_t *outlen, const struct timespec *dl)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	for (;;) {
		uint8_t m[4];
		enum io e = read_full(fd, m, 4, dl);
		if (e != IO_OK) {
			free(buf);
			return e;
		}
		uint32_t marker = get_u32(m);
		uint32_t flen = marker & ~LAST_FRAG;
		if (len + flen > MAX_REPLY) {
			free(buf);
			return IO_TOOBIG;
		}
		uint8_t *nb = realloc(buf, len + flen + 1);
		if (!nb) {
			free(buf);
			return IO_ERROR;
		}
		buf = nb;
		e = read_full(fd, buf + len, flen, dl);
		if (e != IO_OK) {
			free(buf);
			return e;
		}
		len += flen;
		if (marker & LAST_FRAG)
			break;
	}
	*out = buf;
	*outlen = len;
	return IO_OK;
}

/* --- replies -------------------------------------------------------------- */

enum kind { K_REPLY, K_CLOSED, K_TIMEOUT, K_ERROR, K_BAD };

struct result {
	enum kind kind;
	uint32_t xid;
	uint32_t rstat; /* MSG_ACCEPTED / MSG_DENIED */
	uint32_t stat;  /* accept_stat or reject_stat */
	uint32_t lo, hi;
	uint32_t auth;
	/* MSG_ACCEPTED SUCCESS: the first bytes of the result */
	uint8_t body[128];
	size_t body_len;
	char err[200];
};

static void parse_reply(const uint8_t *p, size_t n, struct result *r)
{
	size_t off = 0;
#define NEED(k)                                                                                    \
	do {                                                                                       \
		if (n - off < (size_t)(k)) {                                                       \
			r->kind = K_BAD;                                                           \
			snprintf(r->err, sizeof(r->err), "short reply (%zu bytes)", n);            \
			return;                                                                    \
		}                                                                                  \
	} while (0)
#define U32() (off += 4, get_u32(p + off - 4))
	r->kind = K_REPLY;
	NEED(12);
	r->xid = U32();
	uint32_t mtype = U32();
	if (mtype != RPC_REPLY) {
		r->kind = K_BAD;
		snprintf(r->err, sizeof(r->err), "msg_type %u, not REPLY", mtype);
		return;
	}
	r->rstat = U32();
	if (r->rstat == RPC_MSG_ACCEPTED) {
		NEED(8);
		(void)U32(); /* verifier flavor */
		uint32_t vlen = U32();
		if (vlen > 400) {
			r->kind = K_BAD;
			snprintf(r->err, sizeof(r->err), "verifier length %u", vlen);
			return;
		}
		NEED((vlen + 3) & ~3u);
		off += (vlen + 3) & ~3u;
		NEED(4);
		r->stat = U32();
		if (r->stat == RPC_PROG_MISMATCH) {
			NEED(8);
			r->lo = U32();
			r->hi = U32();
		} else if (r->stat == RPC_SUCCESS) {
			r->body_len = n - off < sizeof(r->body) ? n - off : sizeof(r->body);
			memcpy(r->body, p + off, r->body_len);
		}
	} else if (r->rstat == RPC_MSG_DENIED) {
		NEED(4);
		r->stat = U32();
		if (r->stat == RPC_RPC_MISMATCH) {
			NEED(8);
			r->lo = U32();
			r->hi = U32();
		} else if (r->stat == RPC_AUTH_ERROR) {
			NEED(4);
			r->auth = U32();
		}
	} else {
		r->kind = K_BAD;
		snprintf(r->err, sizeof(r->err), "reply_stat %u", r->rstat);
	}
#undef U32
#undef NEED
}

static void recv_reply(int fd, struct result *r)
{
	struct timespec dl;
	uint8_t *buf = NULL;
	size_t len = 0;
	memset(r, 0, sizeof(*r));
	deadline_in(&dl, g_timeout_ms);
	switch (read_record(fd, &buf, &len, &dl)) {
	case IO_OK:
		parse_reply(buf, len, r);
		free(buf);
		return;
	case IO_CLOSED:
		r->kind = K_CLOSED;
		return;
	case IO_TIMEOUT:
		r->kind = K_TIMEOUT;
		snprintf(r->err, sizeof(r->err), "no reply within %d ms", g_timeout_ms);
		return;
	case IO_TOOBIG:
		r->kind = K_BAD;
		snprintf(r->err, sizeof(r->err), "reply record larger than %u bytes", MAX_REPLY);
		return;
	case IO_ERROR:
		r->kind = K_ERROR;
		snprintf(r->err, sizeof(r->err), "read: %s", strerror(errno));
		return;
	}
}

/* connect, send raw bytes (record markers included), read one reply */
static void exchange_raw(int port, const void *raw, size_t n, struct result *r)
{
	memset(r, 0, sizeof(*r));
	int fd = tcp_connect(port, r->err, sizeof(r->err));
	if (fd < 0) {
		r->kind = K_ERROR;
		g_connect_failed = 1;
		return;
	}
	enum io e = send_all(fd, raw, n);
	if (e == IO_TIMEOUT || e == IO_ERROR) {
		r->kind = K_ERROR;
		snprintf(r->err, sizeof(r->err), "send: %s",
		         e == IO_TIMEOUT ? "timeout" : strerror(errno));
		close(fd);
		return;
	}
	/* on IO_CLOSED still read: a reply or EOF/RST may be waiting */
	recv_reply(fd, r);
	close(fd);
}

static void exchange(int port, const struct xbuf *msg, struct result *r)
{
	struct xbuf rec = {0};
	xb_record(&rec, msg);
	exchange_raw(port, rec.d, rec.len, r);
	xb_free(&rec);
}

/* --- expectations and reporting ------------------------------------------- */

#define X_SUCCESS       (1u << 0)
#define X_PROG_UNAVAIL  (1u << 1)
#define X_PROG_MISMATCH (1u << 2)
#define X_PROC_UNAVAIL  (1u << 3)
#define X_GARBAGE       (1u << 4)
#define X_CLOSED        (1u << 5)
#define X_RPC_MISMATCH  (1u << 6)
#define X_AUTH_ERROR    (1u << 7)

struct expect {
	unsigned mask;
	uint32_t lo, hi;    /* for X_PROG_MISMATCH / X_RPC_MISMATCH */
	unsigned auth_mask; /* bit n: auth_stat n accepted, for X_AUTH_ERROR */
	int any_xid;        /* the call had no parseable xid */
};

static const char *accept_name(uint32_t s)
{
	static const char *n[] = {"SUCCESS",      "PROG_UNAVAIL", "PROG_MISMATCH",
	                          "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"};
	return s < 6 ? n[s] : NULL;
}

static const char *auth_name(uint32_t s)
{
	static const char *n[] = {"AUTH_OK",          "AUTH_BADCRED",      "AUTH_REJECTEDCRED",
	                          "AUTH_BADVERF",     "AUTH_REJECTEDVERF", "AUTH_TOOWEAK",
	                          "AUTH_INVALIDRESP", "AUTH_FAILED"};
	if (s == 13)
		return "RPCSEC_GSS_CREDPROBLEM";
	if (s == 14)
		return "RPCSEC_GSS_CTXPROBLEM";
	return s < 8 ? n[s] : "auth_stat?";
}

static void describe(const struct result *r, char *b, size_t n)
{
	switch (r->kind) {
	case K_CLOSED:
		snprintf(b, n, "connection closed");
		return;
	case K_TIMEOUT:
		snprintf(b, n, "timeout (%s)", r->err);
		return;
	case K_ERROR:
		snprintf(b, n, "error (%s)", r->err);
		return;
	case K_BAD:
		snprintf(b, n, "malformed reply (%s)", r->err);
		return;
	case K_REPLY:
		break;
	}
	if (r->rstat == RPC_MSG_ACCEPTED) {
		const char *s = accept_name(r->stat);
		if (r->stat == RPC_PROG_MISMATCH)
			snprintf(b, n, "PROG_MISMATCH %u..%u", r->lo, r->hi);
		else if (s)
			snprintf(b, n, "%s", s);
		else
			snprintf(b, n, "MSG_ACCEPTED accept_stat %u", r->stat);
	} else if (r->stat == RPC_RPC_MISMATCH) {
		snprintf(b, n, "MSG_DENIED RPC_MISMATCH %u..%u", r->lo, r->hi);
	} else if (r->stat == RPC_AUTH_ERROR) {
		snprintf(b, n, "MSG_DENIED AUTH_ERROR %s(%u)", auth_name(r->auth), r->auth);
	} else {
		snprintf(b, n, "MSG_DENIED reject_stat %u", r->stat);
	}
}

static void describe_expect(const struct expect *e, char *b, size_t n)
{
	size_t o = 0;
	b[0] = 0;
#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (o < n)                                                                         \
			o += (size_t)snprintf(b + o, n - o, "%s", o ? " or " : "");                \
		if (o < n)                                                                         \
			o += (size_t)snprintf(b + o, n - o, __VA_ARGS__);                          \
	} while (0)
	if (e->mask & X_SUCCESS)
		ADD("SUCCESS");
	if (e->mask & X_PROG_UNAVAIL)
		ADD("PROG_UNAVAIL");
	if (e->mask & X_PROG_MISMATCH)
		ADD("PROG_MISMATCH %u..%u", e->lo, e->hi);
	if (e->mask & X_PROC_UNAVAIL)
		ADD("PROC_UNAVAIL");
	if (e->mask & X_GARBAGE)
		ADD("GARBAGE_ARGS");
	if (e->mask & X_RPC_MISMATCH)
		ADD("MSG_DENIED RPC_MISMATCH %u..%u", e->lo, e->hi);
	if (e->mask & X_AUTH_ERROR) {
		for (uint32_t a = 0; a < 32; a++)
			if (e->auth_mask & (1u << a))
				ADD("MSG_DENIED AUTH_ERROR %s", auth_name(a));
	}
	if (e->mask & X_CLOSED)
		ADD("connection closed");
#undef ADD
}

static void report(int ok, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(int ok, const char *label, const char *fmt, ...)
{
	va_list ap;
	printf("%s %s %s: ", ok ? "ok  " : "FAIL", g_case, label);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (ok)
		g_pass++;
	else
		g_fail++;
}

static int matches(const struct result *r, const struct expect *e)
{
	if (r->kind == K_CLOSED)
		return (e->mask & X_CLOSED) != 0;
	if (r->kind != K_REPLY)
		return 0;
	if (r->rstat == RPC_MSG_ACCEPTED) {
		switch (r->stat) {
		case RPC_SUCCESS:
			return (e->mask & X_SUCCESS) != 0;
		case RPC_PROG_UNAVAIL:
			return (e->mask & X_PROG_UNAVAIL) != 0;
		case RPC_PROG_MISMATCH:
			return (e->mask & X_PROG_MISMATCH) && r->lo == e->lo && r->hi == e->hi;
		case RPC_PROC_UNAVAIL:
			return (e->mask & X_PROC_UNAVAIL) != 0;
		case RPC_GARBAGE_ARGS:
			return (e->mask & X_GARBAGE) != 0;
		default:
			return 0;
		}
	}
	if (r->stat == RPC_RPC_MISMATCH)
		return (e->mask & X_RPC_MISMATCH) && r->lo == e->lo && r->hi == e->hi;
	if (r->stat == RPC_AUTH_ERROR)
		return (e->mask & X_AUTH_ERROR) && r->auth < 32 && (e->auth_mask & (1u << r->auth));
	return 0;
}

/* judge one result and print its line; returns 1 if it passed */
static int check(const char *label, const struct result *r, uint32_t xid, const struct expect *e)
{
	char got[256], want[256];
	describe(r, got, sizeof(got));
	describe_expect(e, want, sizeof(want));
	if (r->kind == K_REPLY && !e->any_xid && r->xid != xid) {
		report(0, label, "expected %s, got %s with xid 0x%08x for call xid 0x%08x", want,
		       got, r->xid, xid);
		return 0;
	}
	if (matches(r, e)) {
		report(1, label, "%s", got);
		return 1;
	}
	report(0, label, "expected %s, got %s", want, got);
	return 0;
}

static int call_check(const char *label, int port, const struct xbuf *msg, uint32_t xid,
                      const struct expect *e)
{
	struct result r;
	exchange(port, msg, &r);
	return check(label, &r, xid, e);
}

#define EXPECT(...) (&(struct expect){__VA_ARGS__})

/* a plain call with no arguments; expect e */
static void simple_call(const char *label, int port, uint32_t prog, uint32_t vers, uint32_t proc,
                        const struct expect *e)
{
	struct xbuf m = {0};
	uint32_t xid = next_xid();
	xb_call(&m, &g_auth, xid, prog, vers, proc);
	call_check(label, port, &m, xid, e);
	xb_free(&m);
}

static void fh32(struct xbuf *b)
{
	uint8_t fh[32];
	for (int i = 0; i < 32; i++)
		fh[i] = (uint8_t)(0xa0 + i);
	xb_opaque(b, fh, sizeof(fh));
}

/* --- cases --------------------------------------------------------------- */

static void case_null(void)
{
	simple_call("nfs NULL auth_sys", g_nfs_port, PROG_NFS, 3, 0, EXPECT(.mask = X_SUCCESS));
	simple_call("mount NULL auth_sys", g_mnt_port, PROG_MOUNT, 3, 0, EXPECT(.mask = X_SUCCESS));
}

static void garbage_one(const char *label, const struct xbuf *m)
{
	call_check(label, g_nfs_port, m, 0, EXPECT(.mask = X_GARBAGE | X_CLOSED, .any_xid = 1));
}

static void case_garbage(void)
{
	static const size_t sizes[] = {3, 12, 64, 300, 4000};
	char label[96];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct xbuf m = {0};
		while (m.len < sizes[i]) {
			uint32_t v = rnd();
			if (m.len == 4)
				v |= 0x100; /* msg_type: never CALL(0) or REPLY(1) */
			size_t k = sizes[i] - m.len < 4 ? sizes[i] - m.len : 4;
			uint8_t be[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
			                 (uint8_t)v};
			xb_raw(&m, be, k);
		}
		snprintf(label, sizeof(label), "%zu random bytes", sizes[i]);
		garbage_one(label, &m);
		xb_free(&m);
	}

	/* an empty record */
	struct xbuf m = {0};
	garbage_one("empty record", &m);

	/* a call header cut after the program number */
	xb_u32(&m, next_xid());
	xb_u32(&m, RPC_CALL);
	xb_u32(&m, 2);
	xb_u32(&m, PROG_NFS);
	garbage_one("call header cut after prog", &m);
	xb_free(&m);

	/* a call header cut inside the credential */
	xb_call_hdr(&m, next_xid(), 2, PROG_NFS, 3, 0);
	xb_u32(&m, AUTHF_SYS);
	xb_u32(&m, 40);
	xb_u32(&m, 0);
	garbage_one("call header cut inside cred", &m);
	xb_free(&m);

	/* a well-formed REPLY message sent to the server */
	xb_u32(&m, next_xid());
	xb_u32(&m, RPC_REPLY);
	xb_u32(&m, RPC_MSG_ACCEPTED);
	xb_auth_none(&m);
	xb_u32(&m, RPC_SUCCESS);
	garbage_one("REPLY sent as a call", &m);
	xb_free(&m);
}

static void case_wrong_prog(void)
{
	simple_call("prog 100099", g_nfs_port, PROG_BOGUS, 3, 0, EXPECT(.mask = X_PROG_UNAVAIL));
}

static void case_wrong_vers(void)
{
	const struct expect *e = EXPECT(.mask = X_PROG_MISMATCH, .lo = 3, .hi = 3);
	simple_call("nfs v2", g_nfs_port, PROG_NFS, 2, 0, e);
	simple_call("nfs v4", g_nfs_port, PROG_NFS, 4, 0, e);
	/* MOUNT v1 is served (showmount asks for it): a mismatch names 1..3 */
	simple_call("mount v1", g_mnt_port, PROG_MOUNT, 1, 0, EXPECT(.mask = X_SUCCESS));
	e = EXPECT(.mask = X_PROG_MISMATCH, .lo = 1, .hi = 3);
	simple_call("mount v2", g_mnt_port, PROG_MOUNT, 2, 0, e);
	simple_call("mount v4", g_mnt_port, PROG_MOUNT, 4, 0, e);

	/* MOUNT v1 MNT is answered, with an error status and no handle: a v1
	 * handle is 32 bytes, the filer's are up to 64 (cachefsd: NOTSUPP) */
	struct xbuf m = {0};
	struct result r;
	uint32_t xid = next_xid();
	xb_call(&m, &g_auth, xid, PROG_MOUNT, 1, MOUNT3_MNT);
	xb_opaque(&m, "/", 1);
	exchange(g_mnt_port, &m, &r);
	xb_free(&m);
	if (check("mount v1 MNT answered", &r, xid, EXPECT(.mask = X_SUCCESS)))
		report(r.body_len == 4 && get_u32(r.body) != 0, "mount v1 MNT refused",
		       "fhstatus %u, %zu bytes", r.body_len >= 4 ? get_u32(r.body) : 0, r.body_len);
}

static void case_bad_proc(void)
{
	const struct expect *e = EXPECT(.mask = X_PROC_UNAVAIL);
	simple_call("nfs proc 22", g_nfs_port, PROG_NFS, 3, 22, e);
	simple_call("nfs proc 1000", g_nfs_port, PROG_NFS, 3, 1000, e);
	simple_call("mount proc 6", g_mnt_port, PROG_MOUNT, 3, 6, e);
}

static void case_truncated(void)
{
	const struct expect *e = EXPECT(.mask = X_GARBAGE);
	struct xbuf m = {0};
	uint32_t xid;

	/* LOOKUP: fh length 32, only 8 bytes of it */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_LOOKUP);
	xb_u32(&m, 32);
	xb_raw(&m, "\1\2\3\4\5\6\7\10", 8);
	call_check("LOOKUP fh len 32, 8 bytes present", g_nfs_port, &m, xid, e);
	xb_free(&m);

	/* LOOKUP: full fh, then a filename length with no bytes */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_LOOKUP);
	fh32(&m);
	xb_u32(&m, 8);
	call_check("LOOKUP name len 8, no bytes", g_nfs_port, &m, xid, e);
	xb_free(&m);

	/* LOOKUP: full fh and nothing else */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_LOOKUP);
	fh32(&m);
	call_check("LOOKUP fh only, no name", g_nfs_port, &m, xid, e);
	xb_free(&m);

	/* GETATTR without arguments */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_GETATTR);
	call_check("GETATTR no args", g_nfs_port, &m, xid, e);
	xb_free(&m);

	/* WRITE: data length 4096, 100 bytes present */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_WRITE);
	fh32(&m);
	xb_u64(&m, 0);
	xb_u32(&m, 4096);
	xb_u32(&m, 2);
	xb_u32(&m, 4096);
	xb_raw(&m, NULL, 100);
	call_check("WRITE data len 4096, 100 bytes present", g_nfs_port, &m, xid, e);
	xb_free(&m);

	/* MNT: dirpath length 10, 4 bytes present */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_MOUNT, 3, MOUNT3_MNT);
	xb_u32(&m, 10);
	xb_raw(&m, "/exp", 4);
	call_check("MNT dirpath len 10, 4 bytes present", g_mnt_port, &m, xid, e);
	xb_free(&m);
}

static void case_hostile_lengths(void)
{
	const struct expect *e = EXPECT(.mask = X_GARBAGE | X_CLOSED);
	static const uint32_t name_lens[] = {0xFFFFFFFFu, 0x80000000u, 0xFFFFFFFCu, 0x7FFFFFFFu};
	struct xbuf m = {0};
	uint32_t xid;
	char label[96];

	for (size_t i = 0; i < sizeof(name_lens) / sizeof(name_lens[0]); i++) {
		xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_LOOKUP);
		fh32(&m);
		xb_u32(&m, name_lens[i]);
		xb_raw(&m, "abcdefgh", 8);
		snprintf(label, sizeof(label), "LOOKUP name len 0x%08X", name_lens[i]);
		call_check(label, g_nfs_port, &m, xid, e);
		xb_free(&m);
	}

	/* fh length 65 (> NFS3_FHSIZE) with all 65 bytes and a name present */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_LOOKUP);
	xb_opaque(&m, NULL, 65);
	xb_opaque(&m, "x", 1);
	call_check("LOOKUP fh len 65", g_nfs_port, &m, xid, e);
	xb_free(&m);

	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_LOOKUP);
	xb_u32(&m, 0xFFFFFFFCu);
	xb_raw(&m, NULL, 16);
	call_check("LOOKUP fh len 0xFFFFFFFC", g_nfs_port, &m, xid, e);
	xb_free(&m);

	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_GETATTR);
	xb_u32(&m, 0x80000000u);
	xb_raw(&m, NULL, 16);
	call_check("GETATTR fh len 0x80000000", g_nfs_port, &m, xid, e);
	xb_free(&m);

	/* WRITE with data length 0xFFFFFFFF */
	xb_call(&m, &g_auth, xid = next_xid(), PROG_NFS, 3, NFS3_WRITE);
	fh32(&m);
	xb_u64(&m, 0);
	xb_u32(&m, 0xFFFFFFFFu);
	xb_u32(&m, 2);
	xb_u32(&m, 0xFFFFFFFFu);
	xb_raw(&m, NULL, 16);
	call_check("WRITE data len 0xFFFFFFFF", g_nfs_port, &m, xid, e);
	xb_free(&m);

	xb_call(&m, &g_auth, xid = next_xid(), PROG_MOUNT, 3, MOUNT3_MNT);
	xb_u32(&m, 0xFFFFFFFFu);
	xb_raw(&m, "/exp", 4);
	call_check("MNT dirpath len 0xFFFFFFFF", g_mnt_port, &m, xid, e);
	xb_free(&m);
}

static void case_bad_auth(void)
{
	struct xbuf m = {0};
	uint32_t xid;
	const struct expect *weak =
	    EXPECT(.mask = X_AUTH_ERROR, .auth_mask = (1u << AS_TOOWEAK) | (1u << AS_BADCRED));
	const struct expect *bad =
	    EXPECT(.mask = X_AUTH_ERROR | X_GARBAGE | X_CLOSED, .auth_mask = 1u << AS_BADCRED);

	/* RPCSEC_GSS data cred: gss_ver 1, RPCSEC_GSS_DATA, seq 1, rpc_gss_svc_none,
	 * a context handle the server never issued */
	xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, NFS3_GETATTR);
	xb_u32(&m, AUTHF_GSS);
	xb_u32(&m, 24);
	xb_u32(&m, 1);
	xb_u32(&m, 0);
	xb_u32(&m, 1);
	xb_u32(&m, 1);
	xb_opaque(&m, "ctx1", 4);
	xb_auth_none(&m);
	fh32(&m);
	call_check("GETATTR cred RPCSEC_GSS(6)", g_nfs_port, &m, xid, weak);
	xb_free(&m);

	/* AUTH_DH cred: ADN_FULLNAME, a netname, an encrypted key blob */
	xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, NFS3_GETATTR);
	xb_u32(&m, AUTHF_DH);
	xb_u32(&m, 36);
	xb_u32(&m, 0);
	xb_opaque(&m, "unix.0@test", 11);
	xb_raw(&m, "\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff\x00", 16);
	xb_u32(&m, AUTHF_DH);
	xb_opaque(&m, NULL, 12);
	fh32(&m);
	call_check("GETATTR cred AUTH_DH(3)", g_nfs_port, &m, xid, weak);
	xb_free(&m);

	/* AUTH_SYS cred body length 0xFFFFFFF0 */
	xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, 0);
	xb_u32(&m, AUTHF_SYS);
	xb_u32(&m, 0xFFFFFFF0u);
	xb_authsys_body(&m, &g_auth, 1);
	xb_auth_none(&m);
	call_check("NULL auth_sys body len 0xFFFFFFF0", g_nfs_port, &m, xid, bad);
	xb_free(&m);

	/* AUTH_SYS body whose machinename length runs past the body */
	xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, NFS3_GETATTR);
	xb_u32(&m, AUTHF_SYS);
	xb_u32(&m, 20);
	xb_u32(&m, 1);
	xb_u32(&m, 200); /* machinename length */
	xb_raw(&m, "abcdefghijkl", 12);
	xb_auth_none(&m);
	fh32(&m);
	call_check("GETATTR auth_sys machinename len > body", g_nfs_port, &m, xid, bad);
	xb_free(&m);

	/* AUTH_SYS with 17 gids (max 16) */
	{
		struct xbuf body = {0};
		xb_authsys_body(&body, &g_auth, 17);
		xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, NFS3_GETATTR);
		xb_u32(&m, AUTHF_SYS);
		xb_opaque(&m, body.d, (uint32_t)body.len);
		xb_auth_none(&m);
		fh32(&m);
		call_check("GETATTR auth_sys 17 gids", g_nfs_port, &m, xid, bad);
		xb_free(&m);
		xb_free(&body);
	}

	/* AUTH_SYS with a gid count far past the body */
	xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, NFS3_GETATTR);
	xb_u32(&m, AUTHF_SYS);
	xb_u32(&m, 28);
	xb_u32(&m, 1);
	xb_opaque(&m, "host", 4);
	xb_u32(&m, 0);
	xb_u32(&m, 0);
	xb_u32(&m, 0x40000000u);
	xb_auth_none(&m);
	fh32(&m);
	call_check("GETATTR auth_sys gid count 0x40000000", g_nfs_port, &m, xid, bad);
	xb_free(&m);

	/* AUTH_NONE NULL calls are fine */
	xb_call_hdr(&m, xid = next_xid(), 2, PROG_NFS, 3, 0);
	xb_auth_none(&m);
	xb_auth_none(&m);
	call_check("nfs NULL auth_none", g_nfs_port, &m, xid, EXPECT(.mask = X_SUCCESS));
	xb_free(&m);

	xb_call_hdr(&m, xid = next_xid(), 2, PROG_MOUNT, 3, 0);
	xb_auth_none(&m);
	xb_auth_none(&m);
	call_check("mount NULL auth_none", g_mnt_port, &m, xid, EXPECT(.mask = X_SUCCESS));
	xb_free(&m);
}

static void case_rpc_version(void)
{
	struct xbuf m = {0};
	uint32_t xid;
	static const uint32_t vers[] = {3, 1, 0xFFFFFFFFu};
	char label[256];
	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		xb_call_hdr(&m, xid = next_xid(), vers[i], PROG_NFS, 3, 0);
		xb_cred_sys(&m, &g_auth);
		xb_auth_none(&m);
		snprintf(label, sizeof(label), "nfs NULL rpcvers %u", vers[i]);
		call_check(label, g_nfs_port, &m, xid,
		           EXPECT(.mask = X_RPC_MISMATCH, .lo = 2, .hi = 2));
		xb_free(&m);
	}
}

/* send a record marker and a few bytes; the server must close the connection */
static void huge_one(const char *label, uint32_t marker)
{
	struct xbuf raw = {0};
	struct result r;
	xb_u32(&raw, marker);
	xb_call(&raw, &g_auth, next_xid(), PROG_NFS, 3, 0);
	memset(&r, 0, sizeof(r));
	int fd = tcp_connect(g_nfs_port, r.err, sizeof(r.err));
	if (fd < 0) {
		report(0, label, "expected connection closed, got error (%s)", r.err);
		xb_free(&raw);
		return;
	}
	enum io e = send_all(fd, raw.d, raw.len);
	xb_free(&raw);
	if (e == IO_ERROR || e == IO_TIMEOUT) {
		report(0, label, "expected connection closed, got send %s",
		       e == IO_TIMEOUT ? "timeout" : strerror(errno));
		close(fd);
		return;
	}
	/* anything the server sends before closing is discarded */
	struct timespec dl;
	uint8_t sink[4096];
	size_t extra = 0;
	deadline_in(&dl, g_timeout_ms);
	for (;;) {
		ssize_t n = recv(fd, sink, sizeof(sink), 0);
		if (n > 0) {
			extra += (size_t)n;
			continue;
		}
		if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
			if (extra)
				report(1, label, "connection closed (after %zu bytes of output)",
				       extra);
			else
				report(1, label, "connection closed");
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			report(0, label, "expected connection closed, got read error %s",
			       strerror(errno));
			break;
		}
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		long left = ms_left(&dl);
		if (left == 0 || poll(&pf, 1, (int)left) == 0) {
			report(0, label,
			       "expected connection closed, got connection still open after %d ms",
			       g_timeout_ms);
			break;
		}
	}
	close(fd);
}

static void case_huge_record(void)
{
	huge_one("last fragment of 100 MiB", LAST_FRAG | (100u * 1024 * 1024));
	huge_one("fragment marker 0x7FFFFFFF", 0x7FFFFFFFu);
	huge_one("last fragment of 0x7FFFFFFF", 0xFFFFFFFFu);
}

/* a NULL call split at c1 < c2 < c3 into 3 non-last fragments + 1 last */
static void fragments_one(const char *label, size_t c1, size_t c2, size_t c3, int separate_writes)
{
	struct xbuf m = {0}, raw = {0};
	uint32_t xid = next_xid();
	xb_call(&m, &g_auth, xid, PROG_NFS, 3, 0);
	size_t cut[5] = {0, c1, c2, c3, m.len};
	for (int i = 0; i < 4; i++) {
		uint32_t flen = (uint32_t)(cut[i + 1] - cut[i]);
		xb_u32(&raw, (i == 3 ? LAST_FRAG : 0) | flen);
		xb_raw(&raw, m.d + cut[i], flen);
	}
	struct result r;
	memset(&r, 0, sizeof(r));
	if (!separate_writes) {
		exchange_raw(g_nfs_port, raw.d, raw.len, &r);
	} else {
		int fd = tcp_connect(g_nfs_port, r.err, sizeof(r.err));
		if (fd < 0) {
			r.kind = K_ERROR;
		} else {
			/* one write per fragment, marker and body apart */
			size_t off = 0;
			for (int i = 0; i < 4; i++) {
				size_t flen = cut[i + 1] - cut[i];
				struct timespec ts = {0, 30 * 1000 * 1000};
				if (send_all(fd, raw.d + off, 4) != IO_OK)
					break; /* recv_reply tells what happened */
				nanosleep(&ts, NULL);
				if (send_all(fd, raw.d + off + 4, flen) != IO_OK)
					break;
				nanosleep(&ts, NULL);
				off += 4 + flen;
			}
			recv_reply(fd, &r);
			close(fd);
		}
	}
	check(label, &r, xid, EXPECT(.mask = X_SUCCESS));
	xb_free(&m);
	xb_free(&raw);
}

static void case_fragments(void)
{
	/* the call is 72 bytes: 24 header, 40 AUTH_SYS cred, 8 verifier */
	fragments_one("NULL in 3+1 fragments at 24/48/64, one write", 24, 48, 64, 0);
	fragments_one("NULL in 3+1 fragments at 5/23/41, one write", 5, 23, 41, 0);
	fragments_one("NULL in 3+1 fragments at 5/23/41, separate writes", 5, 23, 41, 1);
}

#define NPIPE 50

static void case_pipelined(void)
{
	struct xbuf raw = {0};
	uint32_t base = g_xid + 1;
	for (int i = 0; i < NPIPE; i++) {
		struct xbuf m = {0};
		xb_call(&m, &g_auth, next_xid(), PROG_NFS, 3, 0);
		xb_record(&raw, &m);
		xb_free(&m);
	}
	const char *label = "50 NULL calls in one send";
	char err[200];
	int fd = tcp_connect(g_nfs_port, err, sizeof(err));
	if (fd < 0) {
		report(0, label, "error (%s)", err);
		xb_free(&raw);
		return;
	}
	enum io e = send_all(fd, raw.d, raw.len);
	xb_free(&raw);
	if (e != IO_OK) {
		report(0, label, "send failed (%d)", (int)e);
		close(fd);
		return;
	}
	int seen[NPIPE] = {0};
	int got = 0, bad = 0;
	char why[256] = "";
	while (got < NPIPE) {
		struct result r;
		recv_reply(fd, &r);
		if (r.kind != K_REPLY) {
			describe(&r, why, sizeof(why));
			break;
		}
		got++;
		uint32_t i = r.xid - base;
		if (i >= NPIPE) {
			bad++;
			snprintf(why, sizeof(why), "unknown xid 0x%08x", r.xid);
		} else if (seen[i]++) {
			bad++;
			snprintf(why, sizeof(why), "xid 0x%08x answered twice", r.xid);
		} else if (r.rstat != RPC_MSG_ACCEPTED || r.stat != RPC_SUCCESS) {
			bad++;
			describe(&r, why, sizeof(why));
		}
	}
	close(fd);
	if (got == NPIPE && bad == 0)
		report(1, label, "%d SUCCESS replies, each xid once", NPIPE);
	else
		report(0, label,
		       "expected %d SUCCESS replies each xid once, got %d replies, %d bad (%s)",
		       NPIPE, got, bad, why);
}

/* the server is alive and serves normal clients; returns 0 if it no longer
 * accepts connections (running more cases would be pointless) */
static int after_check(const char *name)
{
	const char *saved = g_case;
	char label[80];
	g_case = "after";
	g_connect_failed = 0;
	snprintf(label, sizeof(label), "%s: nfs NULL", name);
	simple_call(label, g_nfs_port, PROG_NFS, 3, 0, EXPECT(.mask = X_SUCCESS));
	snprintf(label, sizeof(label), "%s: mount NULL", name);
	simple_call(label, g_mnt_port, PROG_MOUNT, 3, 0, EXPECT(.mask = X_SUCCESS));
	g_case = saved;
	return !g_connect_failed;
}

/* --- compare mode: the server's reply against the proxy's ----------------- */

static int g_cmp_nfs_port, g_cmp_mnt_port;
static const char *g_export, *g_foreign;
static uint8_t g_root[64];
static uint32_t g_root_len;
static const uint8_t *g_fh = g_root; /* the handle the calls are about */
static const uint32_t *g_fh_len = &g_root_len;
static int g_server_rpc_errors;
/* the call is beyond what the proxy can forward: its own NAMETOOLONG is
 * right too */
static int g_proxy_limit;

/* MNT of g_export on port: the root handle into fh; returns its length, 0
 * on failure (reported) */
static uint32_t mnt_root(const char *side, int port, const char *path, uint8_t fh[64])
{
	struct xbuf m = {0};
	struct result r;
	char label[1200], got[256];
	uint32_t xid = next_xid(), len = 0;

	xb_call(&m, &g_auth, xid, PROG_MOUNT, 3, MOUNT3_MNT);
	xb_opaque(&m, path, (uint32_t)strlen(path));
	exchange(port, &m, &r);
	xb_free(&m);
	snprintf(label, sizeof(label), "MNT %s on the %s", path, side);
	describe(&r, got, sizeof(got));
	if (r.kind != K_REPLY || r.rstat != RPC_MSG_ACCEPTED || r.stat != RPC_SUCCESS ||
	    r.body_len < 8 || get_u32(r.body) != 0) {
		report(0, label, "%s, mountstat3 %u", got, r.body_len >= 4 ? get_u32(r.body) : 0);
		return 0;
	}
	len = get_u32(r.body + 4);
	if (len == 0 || len > 64 || r.body_len < 8 + len) {
		report(0, label, "handle length %u", len);
		return 0;
	}
	memcpy(fh, r.body + 8, len);
	return len;
}

static void describe_full(const struct result *r, uint32_t proc, char *b, size_t n)
{
	describe(r, b, n);
	if (r->kind == K_REPLY && r->rstat == RPC_MSG_ACCEPTED && r->stat == RPC_SUCCESS &&
	    proc != 0 && r->body_len >= 4) {
		size_t l = strlen(b);
		snprintf(b + l, n - l, " nfsstat3 %u", get_u32(r->body));
	}
}

static int same_answer(const struct result *a, const struct result *b, uint32_t proc)
{
	if (a->kind != K_REPLY || b->kind != K_REPLY)
		return a->kind == b->kind && a->kind == K_CLOSED;
	if (a->rstat != b->rstat || a->stat != b->stat)
		return 0;
	if (a->rstat == RPC_MSG_DENIED)
		return a->stat != RPC_AUTH_ERROR || a->auth == b->auth;
	if (a->stat == RPC_SUCCESS && proc != 0)
		return a->body_len >= 4 && b->body_len >= 4 && get_u32(a->body) == get_u32(b->body);
	return 1;
}

/* sends the call made by build (the arguments after the header) to the
 * server and to the proxy; their answers must agree */
static void compare(const char *label, uint32_t proc, void (*build)(struct xbuf *, const void *),
                    const void *arg)
{
	struct result rs, rp;
	char gs[256], gp[256];
	uint32_t xs = next_xid(), xp = next_xid();
	struct xbuf ms = {0}, mp = {0};

	xb_call(&ms, &g_auth, xs, PROG_NFS, 3, proc);
	build(&ms, arg);
	xb_call(&mp, &g_auth, xp, PROG_NFS, 3, proc);
	build(&mp, arg);
	exchange(g_cmp_nfs_port, &ms, &rs);
	exchange(g_nfs_port, &mp, &rp);
	xb_free(&ms);
	xb_free(&mp);
	describe_full(&rs, proc, gs, sizeof(gs));
	describe_full(&rp, proc, gp, sizeof(gp));
	if (rs.kind == K_REPLY && rs.rstat == RPC_MSG_ACCEPTED && rs.stat != RPC_SUCCESS)
		g_server_rpc_errors++;
	if (rs.kind == K_REPLY && rs.rstat == RPC_MSG_DENIED)
		g_server_rpc_errors++;
	if ((rs.kind == K_REPLY && rs.xid != xs) || (rp.kind == K_REPLY && rp.xid != xp))
		report(0, label, "xid mismatch (server 0x%08x for 0x%08x, proxy 0x%08x for 0x%08x)",
		       rs.xid, xs, rp.xid, xp);
	else if (!same_answer(&rs, &rp, proc) && g_proxy_limit && rp.kind == K_REPLY &&
	         rp.rstat == RPC_MSG_ACCEPTED && rp.stat == RPC_SUCCESS && rp.body_len >= 4 &&
	         get_u32(rp.body) == 63 /* NFS3ERR_NAMETOOLONG */)
		report(1, label, "server: %s; proxy: %s (the proxy's own limit)", gs, gp);
	else
		report(same_answer(&rs, &rp, proc), label, "server: %s; proxy: %s", gs, gp);
}

static void a_root(struct xbuf *b, const void *arg)
{
	(void)arg;
	xb_opaque(b, g_fh, *g_fh_len);
}

/* LOOKUP in the root of a name of *(size_t *)arg bytes */
static void a_lookup(struct xbuf *b, const void *arg)
{
	size_t n = *(const size_t *)arg;
	char *name = malloc(n);

	if (!name)
		exit(2);
	memset(name, 'n', n);
	a_root(b, NULL);
	xb_opaque(b, name, (uint32_t)n);
	free(name);
}

static void a_access(struct xbuf *b, const void *arg)
{
	(void)arg;
	a_root(b, NULL);
	xb_u32(b, 0x3f);
}

/* CREATE of a name in the root with a createmode3 no server knows */
static void a_create_badmode(struct xbuf *b, const void *arg)
{
	(void)arg;
	a_root(b, NULL);
	xb_opaque(b, "badrpc-create", 13);
	xb_u32(b, 7); /* createmode3: UNCHECKED 0, GUARDED 1, EXCLUSIVE 2 */
	for (int i = 0; i < 6; i++)
		xb_u32(b, 0); /* a sattr3 that sets nothing, if it were read */
}

/* READDIR of the root from a cookie the server never handed out */
static void a_readdir_badcookie(struct xbuf *b, const void *arg)
{
	(void)arg;
	a_root(b, NULL);
	xb_u64(b, 0x7fffffff12345678ull);
	xb_raw(b, "\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a", 8);
	xb_u32(b, 4096);
}

static void a_fh_len(struct xbuf *b, const void *arg)
{
	uint32_t n = *(const uint32_t *)arg;
	uint8_t fh[64];

	for (uint32_t i = 0; i < n && i < 64; i++)
		fh[i] = (uint8_t)(0x5a ^ i);
	xb_opaque(b, fh, n);
}

static int run_compare(void)
{
	static const size_t names[] = {255, 256, 300, 1024, 3000, 4000, 4096};
	uint8_t pfh[64];
	uint32_t plen;
	char label[256];

	g_case = "compare";
	g_root_len = mnt_root("server", g_cmp_mnt_port, g_export, g_root);
	plen = mnt_root("proxy", g_mnt_port, g_export, pfh);
	if (g_root_len == 0 || plen == 0)
		return 1;
	report(plen == g_root_len && memcmp(pfh, g_root, plen) == 0, "root handle",
	       "%u bytes from the server, %u from the proxy", g_root_len, plen);
	compare("ACCESS of the root", NFS3_ACCESS, a_access, NULL);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(label, sizeof(label), "LOOKUP of a %zu-byte name", names[i]);
		/* a call over 4 KiB does not fit libnfs 4.0's encode buffer:
		 * the proxy answers NAMETOOLONG itself */
		g_proxy_limit = names[i] > 3500;
		compare(label, NFS3_LOOKUP, a_lookup, &names[i]);
		g_proxy_limit = 0;
	}
	compare("CREATE with createmode 7", NFS3_CREATE, a_create_badmode, NULL);
	compare("READDIR from an unknown cookie", NFS3_READDIR, a_readdir_badcookie, NULL);
	{
		static const uint32_t fl[] = {0, 8, 64};
		for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
			snprintf(label, sizeof(label), "GETATTR of a %u-byte handle", fl[i]);
			compare(label, NFS3_GETATTR, a_fh_len, &fl[i]);
		}
	}
	if (g_foreign) {
		/* an export of the same server the proxy does not serve, whose
		 * handle a client got elsewhere: the proxy forwards handles
		 * unchanged, the server decides */
		static uint8_t ffh[64];
		static uint32_t flen;
		flen = mnt_root("server", g_cmp_mnt_port, g_foreign, ffh);
		if (flen == 0)
			return 1;
		g_fh = ffh;
		g_fh_len = &flen;
		snprintf(label, sizeof(label), "GETATTR of the root of %s", g_foreign);
		compare(label, NFS3_GETATTR, a_root, NULL);
		g_fh = g_root;
		g_fh_len = &g_root_len;
	}
	printf("badrpc: %d passed, %d failed; %d answered with an RPC-level error by the server\n",
	       g_pass, g_fail, g_server_rpc_errors);
	return g_fail ? 1 : 0;
}

/* --- main ---------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
    {"null", case_null},
    {"garbage", case_garbage},
    {"wrong-prog", case_wrong_prog},
    {"wrong-vers", case_wrong_vers},
    {"bad-proc", case_bad_proc},
    {"truncated", case_truncated},
    {"hostile-lengths", case_hostile_lengths},
    {"bad-auth", case_bad_auth},
    {"rpc-version", case_rpc_version},
    {"huge-record", case_huge_record},
    {"fragments", case_fragments},
    {"pipelined", case_pipelined},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: badrpc HOST PORT [--case NAME]... [--mount-port N] [--timeout S]\n"
	           "              [--seed N] [--no-after] [--allow-nonloopback] [--list]\n"
	           "       badrpc HOST PORT --compare-with NFSPORT[:MNTPORT] --export PATH\n"
	           "              [--foreign-export PATH] [--mount-port N] [--timeout S]\n"
	           "              [--allow-nonloopback]\n"
	           "cases:");
	for (size_t i = 0; i < NCASES; i++)
		fprintf(f, " %s", cases[i].name);
	fprintf(f, " (all by default; --case may repeat or take a comma list)\n");
}

static int parse_port(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || v <= 0 || v > 65535)
		return -1;
	return (int)v;
}

static int is_loopback(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		return (a >> 24) == 127;
	}
	if (sa->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *host = NULL, *port = NULL;
	int selected[NCASES] = {0}, any_selected = 0, after = 1, allow_remote = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--list")) {
			for (size_t c = 0; c < NCASES; c++)
				printf("%s\n", cases[c].name);
			return 0;
		} else if (!strcmp(a, "--case") && v) {
			char *dup = strdup(v), *save = NULL;
			for (char *t = strtok_r(dup, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				size_t c;
				for (c = 0; c < NCASES; c++)
					if (!strcmp(t, cases[c].name))
						break;
				if (c == NCASES) {
					fprintf(stderr, "badrpc: unknown case '%s'\n", t);
					usage(stderr);
					return 2;
				}
				selected[c] = any_selected = 1;
			}
			free(dup);
			i++;
		} else if (!strcmp(a, "--mount-port") && v) {
			if ((g_mnt_port = parse_port(v)) < 0) {
				fprintf(stderr, "badrpc: bad --mount-port '%s'\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--timeout") && v) {
			double s = atof(v);
			if (s <= 0 || s > 600) {
				fprintf(stderr, "badrpc: bad --timeout '%s'\n", v);
				return 2;
			}
			g_timeout_ms = (int)(s * 1000);
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			g_seed = (uint32_t)strtoul(v, NULL, 0);
			if (g_seed == 0)
				g_seed = 1;
			i++;
		} else if (!strcmp(a, "--compare-with") && v) {
			char *colon = strchr(v, ':');
			if (colon)
				*colon = 0;
			g_cmp_nfs_port = parse_port(v);
			g_cmp_mnt_port = colon ? parse_port(colon + 1) : g_cmp_nfs_port;
			if (g_cmp_nfs_port < 0 || g_cmp_mnt_port < 0) {
				fprintf(stderr, "badrpc: bad --compare-with\n");
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--export") && v) {
			g_export = v;
			i++;
		} else if (!strcmp(a, "--foreign-export") && v) {
			g_foreign = v;
			i++;
		} else if (!strcmp(a, "--no-after")) {
			after = 0;
		} else if (!strcmp(a, "--allow-nonloopback")) {
			allow_remote = 1;
		} else if (a[0] == '-' && a[1] != 0) {
			fprintf(stderr, "badrpc: bad option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (!host) {
			host = a;
		} else if (!port) {
			port = a;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!host || !port || (g_nfs_port = parse_port(port)) < 0) {
		usage(stderr);
		return 2;
	}
	if (!g_mnt_port)
		g_mnt_port = g_nfs_port;

	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int gai = getaddrinfo(host, NULL, &hints, &ai);
	if (gai != 0 || !ai) {
		fprintf(stderr, "badrpc: %s: %s\n", host, gai_strerror(gai));
		return 2;
	}
	memcpy(&g_addr, ai->ai_addr, ai->ai_addrlen);
	g_addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	if (!allow_remote && !is_loopback(&g_addr)) {
		fprintf(stderr,
		        "badrpc: %s is not a loopback address (use --allow-nonloopback "
		        "for a test host of your own)\n",
		        host);
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);
	g_xid = (g_seed * 2654435761u) & 0x7fff0000u;
	printf("badrpc: %s nfs port %d, mount port %d, timeout %d ms, seed 0x%x\n", host,
	       g_nfs_port, g_mnt_port, g_timeout_ms, g_seed);

	char err[200];
	int fd = tcp_connect(g_nfs_port, err, sizeof(err));
	if (fd < 0) {
		printf("FAIL server unreachable: %s\n", err);
		printf("badrpc: %d passed, %d failed\n", 0, 1);
		return 1;
	}
	close(fd);
	if (g_cmp_nfs_port) {
		if (!g_export) {
			fprintf(stderr, "badrpc: --compare-with needs --export\n");
			return 2;
		}
		return run_compare();
	}

	for (size_t c = 0; c < NCASES; c++) {
		if (any_selected && !selected[c])
			continue;
		g_case = cases[c].name;
		cases[c].fn();
		if (after && !after_check(cases[c].name)) {
			size_t left = 0;
			for (size_t k = c + 1; k < NCASES; k++)
				left += !any_selected || selected[k];
			if (left) {
				printf("FAIL server stopped accepting connections after case %s; "
				       "%zu remaining case(s) not run\n",
				       cases[c].name, left);
				g_fail++;
			}
			break;
		}
	}
	printf("badrpc: %d passed, %d failed\n", g_pass, g_fail);
	return g_fail ? 1 : 0;
}
