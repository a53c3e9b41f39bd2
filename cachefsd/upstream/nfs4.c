/* The NFSv4.0 upstream client on the loop. See include/nfs4up.h for the
 * contract and docs/design.md, "NFSv4.0 upstream (first step)", for the
 * COMPOUNDs, the state kept and the mappings; the pure parts (COMPOUNDs,
 * attributes, answers) are in nfs4xdr.c.
 *
 * One libnfs rpc_context driven like upstream.c's connections (watched fd,
 * failures handled at a safe point, never inside the context's own
 * rpc_service()), a state machine for the client ID, and the calls. */
#include "nfs4up.h"
#include "log.h"
#include "rpcclient.h"
#include "upstream.h"

#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* --- the client ------------------------------------------------------------ */

#define N4C_MAGIC      0x4e344331u /* "N4C1" */
#define N4CALL_MAGIC   0x4e34434cu /* "N4CL" */
#define N4SOP_MAGIC    0x4e34534fu /* "N4SO" */
#define BACKOFF_MIN_MS 50
#define DELAY_MIN_MS   100
#define DELAY_MAX_MS   2000
/* libnfs 4.0 encodes a COMPOUND into 4 KiB (rpc_nfs4_compound_async has
 * no size hint): a WRITE with more bytes than this goes over the second
 * connection (cl->big, proto/rpcclient.c), encoded here */
#define BIG_WRITE 2048

/* DOWN -> CONNECTING (TCP) -> SETUP (RENEW probe, or SETCLIENTID and its
 * CONFIRM) -> UP; a failed connection -> DOWN and a retry after back-off;
 * a stale or expired client ID -> SETUP on the same connection. */
enum n4_cstate { N4S_DOWN, N4S_CONNECTING, N4S_SETUP, N4S_UP };

struct n4_call {
	uint32_t magic;
	struct n4_client *cl;
	struct n4_req rq;
	struct n4_compound b; /* built at each send; libnfs encodes it at once */
	struct cfs_cred cred;
	n4_cb cb;
	void *priv;
	int lost;   /* times the connection died under it */
	int delays; /* DELAY/GRACE answers so far */
	/* the writes' open-state phases (docs/design.md): the answer to give
	 * once the open is confirmed and closed, and whether the stateid
	 * fallback was tried */
	struct n4_out *held;
	int opened;         /* an open of ours is held: CLOSE before answering */
	int fallback;       /* the OPEN fallback was tried (once per call) */
	n4_build_fn rbuild; /* n4_compound_call(): builds the COMPOUND itself */
	int reopened;       /* ... and opened again once, its open lost (reopen()) */
	int rd_retry;       /* READDIR(PLUS) re-sent bigger after SERVERFAULT */
	struct loop_timer *delay_timer;
	struct n4_call *next, *prev; /* the waiting or the in-flight list */
};

/* What the client's own COMPOUNDs are for */
enum sop_kind { SOP_PROBE, SOP_SETCLIENTID, SOP_CONFIRM, SOP_RENEW, SOP_ROOT };

struct n4_sop {
	uint32_t magic;
	struct n4_client *cl;
	enum sop_kind kind;
	struct n4_compound b;
};

struct n4_client {
	uint32_t magic;
	struct loop *loop;
	struct n4_config cfg;
	char addr[64];
	int port;
	enum n4_cstate state;
	struct rpc_context *rpc;
	int fd;
	int in_service;
	int fail_pending;
	struct loop_timer *retry_timer, *fail_timer, *tick, *setup_timer;
	uint64_t backoff_ms;
	int ever_up;
	struct cfs_cred cur_cred;
	int cred_set;
	/* the client ID */
	char client_id[NFS4_OPAQUE_LIMIT];
	char verifier[NFS4_VERIFIER_SIZE]; /* this start's */
	clientid4 clientid;
	int have_clientid;
	char confirm[NFS4_VERIFIER_SIZE];
	uint64_t next_renew_ms;
	uint64_t renew_sent_ms; /* 0: no RENEW in flight */
	/* the export's root */
	char pathbuf[1024];
	char *comp[N4_MAXPATH];
	uint32_t ncomp;
	struct n4_fh root;
	fattr3 root_attr;
	int have_root;
	uint64_t maxread;
	/* calls */
	struct n4_call *wait_head, *wait_tail;
	struct n4_call *inflight;
	struct n4_call *delayed; /* waiting out a DELAY on their own timers */
	struct n4_stats st;
	/* where files are (v4.0 OPENs by directory and name): a ring of
	 * N4_NAMES, filled from LOOKUP and CREATE answers and
	 * n4_remember_name() */
	struct n4_name {
		struct n4_fh obj, dir;
		char name[256];
	} * names;
	uint32_t names_next;
	uint64_t owner_seq; /* open-owners made */
	/* the second connection, for COMPOUNDs over libnfs's 4 KiB (WRITEs):
	 * v4.0 state belongs to the client ID, not to a connection */
	struct rpcc *big;
	/* n4_on_reset(): told when a client ID is established again because
	 * the server lost the old one (reset_st: why) */
	n4_reset_fn reset_fn;
	void *reset_arg;
	int reset_st;
	int stopping;
	int fatal; /* start-up failed for good (e.g. the path is not there) */
	char err[256];
	uint32_t jitter;
};

static void conn_connect(struct n4_client *cl);
static void conn_fail(struct n4_client *cl, const char *why);
static void flush_waiting(struct n4_client *cl);
static void setup_begin(struct n4_client *cl, enum sop_kind kind);

static void set_err(struct n4_client *cl, int fatal, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(struct n4_client *cl, int fatal, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	va_end(ap);
	cl->fatal |= fatal;
}

static int is_conn_error(int status, const void *data)
{
	if (status == RPC_STATUS_CANCEL)
		return 1;
	return status == RPC_STATUS_ERROR && data != NULL &&
	       strncmp((const char *)data, "RPC ERROR", 9) == 0;
}

static void conn_io(struct loop *l, int fd, int revents, void *arg);

static void conn_watch(struct n4_client *cl)
{
	int fd = cl->rpc ? rpc_get_fd(cl->rpc) : -1;

	if (cl->fd >= 0 && cl->fd != fd) {
		loop_del(cl->loop, cl->fd);
		cl->fd = -1;
	}
	if (fd >= 0 && cl->fd != fd) {
		if (loop_add(cl->loop, fd, rpc_which_events(cl->rpc), conn_io, cl) == 0)
			cl->fd = fd;
	}
	if (cl->fd >= 0)
		loop_set(cl->loop, cl->fd, rpc_which_events(cl->rpc));
}

static void fail_timer_fn(struct loop *l, void *arg)
{
	struct n4_client *cl = arg;

	(void)l;
	cl->fail_timer = NULL;
	if (cl->fail_pending && !cl->in_service) {
		cl->fail_pending = 0;
		conn_fail(cl, cl->rpc ? rpc_get_error(cl->rpc) : NULL);
	}
}

/* The connection must go, but we are inside its rpc_service(): at the end
 * of conn_io() or a zero-delay timer, whichever comes first. */
static void conn_fail_later(struct n4_client *cl)
{
	cl->fail_pending = 1;
	if (cl->fail_timer == NULL)
		cl->fail_timer = loop_timer_add(cl->loop, 0, 0, fail_timer_fn, cl);
}

static void conn_io(struct loop *l, int fd, int revents, void *arg)
{
	struct n4_client *cl = arg;
	int rc;

	(void)l;
	(void)fd;
	assert(cl->magic == N4C_MAGIC);
	if (cl->rpc == NULL)
		return;
	cl->in_service = 1;
	rc = rpc_service(cl->rpc, revents);
	cl->in_service = 0;
	if (rc < 0 || cl->fail_pending) {
		cl->fail_pending = 0;
		conn_fail(cl, cl->rpc ? rpc_get_error(cl->rpc) : NULL);
		return;
	}
	conn_watch(cl);
}

/* Writes queued COMPOUNDs now rather than at the next POLLOUT; never from
 * inside the context's own rpc_service(). */
static void conn_flush(struct n4_client *cl)
{
	if (cl->in_service || cl->fail_pending || cl->rpc == NULL)
		return;
	for (int i = 0; i < 8 && (rpc_which_events(cl->rpc) & POLLOUT); i++) {
		cl->in_service = 1;
		int rc = rpc_service(cl->rpc, POLLOUT);
		cl->in_service = 0;
		if (rc < 0) {
			conn_fail_later(cl);
			return;
		}
	}
	conn_watch(cl);
}

static void retry_timer_fn(struct loop *l, void *arg)
{
	struct n4_client *cl = arg;

	(void)l;
	cl->retry_timer = NULL;
	if (!cl->stopping)
		conn_connect(cl);
}

static uint64_t next_backoff(struct n4_client *cl)
{
	uint64_t cap =
	    (uint64_t)(cl->cfg.reconnect_max_s > 0 ? cl->cfg.reconnect_max_s : 30) * 1000;
	uint64_t d = cl->backoff_ms > cap ? cap : cl->backoff_ms;

	cl->jitter ^= cl->jitter << 13;
	cl->jitter ^= cl->jitter >> 17;
	cl->jitter ^= cl->jitter << 5;
	d -= cl->jitter % (d / 4 + 1);
	cl->backoff_ms = cl->backoff_ms * 2 > cap ? cap : cl->backoff_ms * 2;
	return d;
}

/* The connection failed: destroy it (calls in flight come back through
 * call_done() with CANCEL and wait; our own COMPOUNDs are dropped) and
 * retry after the back-off. Never inside rpc_service() of the context. */
static void conn_fail(struct n4_client *cl, const char *why)
{
	if (cl->state == N4S_UP)
		log_warn("nfs4 upstream %s: connection lost (%s); calls wait and are re-sent "
		         "once the server answers again",
		         cl->cfg.host, why && *why ? why : "closed by the server");
	else
		log_debug("nfs4 upstream %s: connection failed: %s", cl->cfg.host,
		          why && *why ? why : "?");
	cl->state = N4S_DOWN;
	cl->st.up = 0;
	cl->renew_sent_ms = 0;
	if (cl->setup_timer) {
		loop_timer_cancel(cl->loop, cl->setup_timer);
		cl->setup_timer = NULL;
	}
	if (cl->fd >= 0) {
		loop_del(cl->loop, cl->fd);
		cl->fd = -1;
	}
	if (cl->rpc) {
		struct rpc_context *rpc = cl->rpc;
		cl->rpc = NULL;
		rpc_destroy_context(rpc); /* calls back with CANCEL */
	}
	cl->cred_set = 0;
	cl->fail_pending = 0;
	if (cl->stopping)
		return;
	if (cl->retry_timer == NULL)
		cl->retry_timer = loop_timer_add(cl->loop, next_backoff(cl), 0, retry_timer_fn, cl);
}

static void conn_connected(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct n4_client *cl = priv;

	assert(cl->magic == N4C_MAGIC);
	if (rpc != cl->rpc)
		return;
	if (status != RPC_STATUS_SUCCESS) {
		log_debug("nfs4 upstream %s: connect failed: %s", cl->cfg.host,
		          data ? (const char *)data : "?");
		set_err(cl, 0, "cannot connect to %s port %d: %s", cl->addr, cl->port,
		        data ? (const char *)data : "?");
		conn_fail_later(cl);
		return;
	}
	/* no Nagle: one connection carries every call, so a small COMPOUND
	 * sent while another's is unacknowledged (an ACCESS right after a
	 * read-ahead's READ) would wait a round trip for the ACK (libnfs
	 * leaves the option off; the v3 pool dodges it by picking an idle
	 * connection) */
	{
		int one = 1;
		(void)setsockopt(rpc_get_fd(rpc), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	/* with a client ID from before, a RENEW tells whether the server
	 * still knows it (a restarted server answers STALE_CLIENTID) */
	setup_begin(cl, cl->have_clientid ? SOP_PROBE : SOP_SETCLIENTID);
}

static void conn_connect(struct n4_client *cl)
{
	assert(cl->rpc == NULL);
	cl->st.connects++;
	cl->rpc = rpc_init_context();
	if (cl->rpc == NULL) {
		conn_fail(cl, "out of memory");
		return;
	}
	cl->state = N4S_CONNECTING;
	if (rpc_connect_async(cl->rpc, cl->addr, cl->port, conn_connected, cl) != 0) {
		char why[256];
		snprintf(why, sizeof(why), "%s", rpc_get_error(cl->rpc));
		set_err(cl, 0, "cannot connect to %s port %d: %s", cl->addr, cl->port, why);
		conn_fail(cl, why);
		return;
	}
	conn_watch(cl);
}

static int set_cred(struct n4_client *cl, const struct cfs_cred *cred)
{
	struct AUTH *auth;

	if (cl->cred_set && cfs_cred_equal(&cl->cur_cred, cred))
		return 0;
	if (cred->flavor == AUTH_NONE) {
		auth = libnfs_authnone_create();
	} else {
		uint32_t gids[CFS_MAX_GIDS];
		memcpy(gids, cred->gids, sizeof(gids));
		auth = libnfs_authunix_create(cred->machine[0] ? cred->machine : "cachefsd",
		                              cred->uid, cred->gid, cred->ngids, gids);
	}
	if (auth == NULL)
		return -ENOMEM;
	rpc_set_auth(cl->rpc, auth);
	cl->cur_cred = *cred;
	cl->cred_set = 1;
	return 0;
}

/* The client ID's upkeep is sent as root of this machine: the server ties
 * the client ID to the principal that set it. */
static const struct cfs_cred *state_cred(void)
{
	static const struct cfs_cred root = {.flavor = AUTH_UNIX, .machine = "cachefsd"};

	return &root;
}

/* --- the client's own COMPOUNDs: client ID, lease, root -------------------- */

static void sop_done(struct rpc_context *rpc, int status, void *data, void *priv);

static int sop_send(struct n4_client *cl, enum sop_kind kind)
{
	struct n4_sop *s = calloc(1, sizeof(*s));
	int rc = 0;

	if (s == NULL || cl->rpc == NULL) {
		free(s);
		return -ENOMEM;
	}
	s->magic = N4SOP_MAGIC;
	s->cl = cl;
	s->kind = kind;
	n4_compound_init(&s->b, "cachefsd");
	switch (kind) {
	case SOP_PROBE:
	case SOP_RENEW:
		rc = n4_op_renew(&s->b, cl->clientid);
		break;
	case SOP_SETCLIENTID:
		rc = n4_op_setclientid(&s->b, cl->client_id, cl->verifier);
		break;
	case SOP_CONFIRM:
		rc = n4_op_setclientid_confirm(&s->b, cl->clientid, cl->confirm);
		break;
	case SOP_ROOT:
		rc = n4_op_putrootfh(&s->b);
		for (uint32_t i = 0; i < cl->ncomp && rc == 0; i++)
			rc = n4_op_lookup(&s->b, cl->comp[i], (uint32_t)strlen(cl->comp[i]));
		rc = rc ? rc : n4_op_getfh(&s->b);
		rc = rc ? rc : n4_op_getattr(&s->b, N4_ATTRS_ROOT, 2);
		break;
	}
	if (rc == 0)
		rc = set_cred(cl, state_cred());
	if (rc == 0 && rpc_nfs4_compound_async(cl->rpc, sop_done, &s->b.args, s) != 0)
		rc = -EIO;
	if (rc) {
		free(s);
		return rc;
	}
	cl->st.compounds++;
	conn_flush(cl);
	return 0;
}

static void setup_timer_fn(struct loop *l, void *arg)
{
	struct n4_client *cl = arg;

	(void)l;
	cl->setup_timer = NULL;
	if (cl->state == N4S_SETUP && !cl->stopping)
		setup_begin(cl, SOP_SETCLIENTID);
}

static void setup_begin(struct n4_client *cl, enum sop_kind kind)
{
	cl->state = N4S_SETUP;
	cl->st.up = 0;
	if (sop_send(cl, kind) != 0)
		conn_fail_later(cl);
}

/* The server answered NFS4ERR_DELAY (or so) during set-up: again later. */
static void setup_later(struct n4_client *cl)
{
	if (cl->setup_timer == NULL)
		cl->setup_timer = loop_timer_add(cl->loop, next_backoff(cl), 0, setup_timer_fn, cl);
}

static uint64_t renew_period_ms(const struct n4_client *cl)
{
	uint64_t lease = cl->st.lease_s ? cl->st.lease_s : 90;
	uint64_t p = lease * 1000 / 3;

	return p < 500 ? 500 : p;
}

static void conn_up(struct n4_client *cl)
{
	cl->state = N4S_UP;
	cl->st.up = 1;
	cl->backoff_ms = BACKOFF_MIN_MS;
	cl->next_renew_ms = loop_now(cl->loop) + renew_period_ms(cl);
	if (cl->ever_up == 1) {
		cl->st.reconnects++;
		log_info("nfs4 upstream %s: connection regained, client ID %s", cl->cfg.host,
		         cl->st.setclientids > 1 ? "established again" : "still valid");
	}
	if (!cl->have_root) {
		if (sop_send(cl, SOP_ROOT) != 0)
			conn_fail_later(cl);
		return;
	}
	flush_waiting(cl);
}

static void root_done(struct n4_client *cl, const COMPOUND4res *res)
{
	u_int n = res->resarray.resarray_len;
	const nfs_resop4 *fh, *ga;
	struct n4_attrs a;

	if (res->status != NFS4_OK) {
		u_int i = n ? n - 1 : 0;
		/* which component: op 0 is PUTROOTFH, ops 1..ncomp the LOOKUPs */
		set_err(cl, 1, "the export %s: %s%s%s", cl->cfg.path, nfsstat4_to_str(res->status),
		        i >= 1 && i <= cl->ncomp ? " at " : "",
		        i >= 1 && i <= cl->ncomp ? cl->comp[i - 1] : "");
		return;
	}
	fh = n4_resop(res, cl->ncomp + 1, OP_GETFH);
	ga = n4_resop(res, cl->ncomp + 2, OP_GETATTR);
	if (fh == NULL || ga == NULL ||
	    n4_fattr_decode(&ga->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes,
	                    cl->cfg.idmap_domain, &a) != 0) {
		set_err(cl, 1, "the export %s: the root's answer does not decode", cl->cfg.path);
		return;
	}
	const nfs_fh4 *h = &fh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
	if (h->nfs_fh4_len == 0 || h->nfs_fh4_len > N4_FHSIZE) {
		set_err(cl, 1, "the export %s: bad root handle length %u", cl->cfg.path,
		        h->nfs_fh4_len);
		return;
	}
	if (a.f.type != NF3DIR) {
		set_err(cl, 1, "the export %s is not a directory", cl->cfg.path);
		return;
	}
	cl->root.len = h->nfs_fh4_len;
	memcpy(cl->root.data, h->nfs_fh4_val, h->nfs_fh4_len);
	cl->root_attr = a.f;
	cl->maxread = a.maxread;
	if (n4_has(&a, FATTR4_LEASE_TIME) && a.lease_time > 0)
		cl->st.lease_s = a.lease_time;
	cl->have_root = 1;
	cl->next_renew_ms = loop_now(cl->loop) + renew_period_ms(cl);
	log_info("nfs4 upstream %s:%s: root handle %u bytes, lease %u s (RENEW every %llu ms), "
	         "maxread %llu, client id '%s'",
	         cl->cfg.host, cl->cfg.path, cl->root.len, cl->st.lease_s,
	         (unsigned long long)renew_period_ms(cl), (unsigned long long)cl->maxread,
	         cl->client_id);
	flush_waiting(cl);
}

static void sop_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct n4_sop *s = priv;
	struct n4_client *cl = s->cl;
	const COMPOUND4res *res = data;
	enum sop_kind kind = s->kind;
	int st;

	assert(s->magic == N4SOP_MAGIC);
	s->magic = 0;
	free(s);
	if (rpc != cl->rpc || cl->stopping)
		return; /* the context is being destroyed */
	if (kind == SOP_RENEW || kind == SOP_PROBE)
		cl->renew_sent_ms = 0;
	if (status != RPC_STATUS_SUCCESS) {
		if (!is_conn_error(status, data)) {
			/* an RPC-level answer: e.g. PROG_MISMATCH from a server
			 * without v4 */
			int rc = upstream_rpc_status(data);
			set_err(cl, kind != SOP_RENEW, "the server does not take NFSv4.0: %s (%s)",
			        upstream_strerror(rc), data ? (const char *)data : "?");
			log_warn("nfs4 upstream %s: %s", cl->cfg.host, cl->err);
		}
		conn_fail_later(cl);
		return;
	}
	st = (int)res->status;
	switch (kind) {
	case SOP_PROBE:
	case SOP_RENEW:
		if (st == NFS4_OK || st == NFS4ERR_CB_PATH_DOWN) {
			/* CB_PATH_DOWN: we offer no callback path: the lease is
			 * renewed all the same */
			cl->st.renews++;
			if (kind == SOP_PROBE)
				conn_up(cl);
		} else if (st == NFS4ERR_STALE_CLIENTID || st == NFS4ERR_EXPIRED) {
			cl->st.recoveries++;
			if (cl->reset_st == 0)
				cl->reset_st = st;
			log_warn(
			    "nfs4 upstream %s: the server answered RENEW with %s: establishing "
			    "the client ID again; calls wait meanwhile",
			    cl->cfg.host, nfsstat4_to_str(st));
			setup_begin(cl, SOP_SETCLIENTID);
		} else if (st == NFS4ERR_DELAY || st == NFS4ERR_GRACE || st == NFS4ERR_RESOURCE) {
			if (kind == SOP_PROBE)
				setup_later(cl);
		} else {
			log_warn("nfs4 upstream %s: RENEW: %s", cl->cfg.host, nfsstat4_to_str(st));
			if (kind == SOP_PROBE)
				setup_begin(cl, SOP_SETCLIENTID);
		}
		break;
	case SOP_SETCLIENTID:
		if (st == NFS4_OK) {
			const SETCLIENTID4resok *ok =
			    &res->resarray.resarray_val[0]
			         .nfs_resop4_u.opsetclientid.SETCLIENTID4res_u.resok4;
			cl->clientid = ok->clientid;
			memcpy(cl->confirm, ok->setclientid_confirm, sizeof(cl->confirm));
			setup_begin(cl, SOP_CONFIRM);
		} else if (st == NFS4ERR_CLID_INUSE) {
			set_err(cl, 1,
			        "SETCLIENTID: the client id '%s' is in use by another principal "
			        "(NFS4ERR_CLID_INUSE)",
			        cl->client_id);
			log_err("nfs4 upstream %s: %s", cl->cfg.host, cl->err);
			setup_later(cl);
		} else {
			set_err(cl, 0, "SETCLIENTID: %s", nfsstat4_to_str(st));
			setup_later(cl);
		}
		break;
	case SOP_CONFIRM:
		if (st == NFS4_OK) {
			int reset = cl->reset_st;
			cl->have_clientid = 1;
			cl->st.setclientids++;
			cl->reset_st = 0;
			log_debug("nfs4 upstream %s: client ID %llx confirmed", cl->cfg.host,
			          (unsigned long long)cl->clientid);
			/* before the waiting calls go: reclaims queue behind them,
			 * and the server's grace period holds the others back */
			if (reset && cl->reset_fn && cl->ever_up)
				cl->reset_fn(reset, cl->reset_arg);
			conn_up(cl);
		} else {
			set_err(cl, 0, "SETCLIENTID_CONFIRM: %s", nfsstat4_to_str(st));
			setup_later(cl);
		}
		break;
	case SOP_ROOT:
		root_done(cl, res);
		break;
	}
}

/* Every 100 ms: libnfs's timeouts, RENEW when due, and a RENEW left
 * unanswered for a whole lease ends the connection (a server that stopped
 * answering without closing it). */
static void tick_fn(struct loop *l, void *arg)
{
	struct n4_client *cl = arg;
	uint64_t now = loop_now(l);

	if (cl->rpc && cl->state != N4S_DOWN && !cl->in_service) {
		cl->in_service = 1;
		int rc = rpc_service(cl->rpc, 0);
		cl->in_service = 0;
		if (rc < 0) {
			conn_fail(cl, rpc_get_error(cl->rpc));
			return;
		}
		conn_watch(cl);
	}
	if (cl->state != N4S_UP || !cl->have_clientid)
		return;
	if (cl->renew_sent_ms &&
	    now - cl->renew_sent_ms > (uint64_t)(cl->st.lease_s ? cl->st.lease_s : 90) * 1000) {
		conn_fail(cl, "no answer to RENEW within the lease");
		return;
	}
	if (!cl->renew_sent_ms && now >= cl->next_renew_ms) {
		cl->next_renew_ms = now + renew_period_ms(cl);
		cl->renew_sent_ms = now ? now : 1;
		if (sop_send(cl, SOP_RENEW) != 0)
			cl->renew_sent_ms = 0;
	}
}

/* --- calls ----------------------------------------------------------------- */

static void list_del(struct n4_call **head, struct n4_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else if (*head == c)
		*head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

static void wait_push(struct n4_client *cl, struct n4_call *c, int front)
{
	c->prev = c->next = NULL;
	if (cl->wait_head == NULL) {
		cl->wait_head = cl->wait_tail = c;
	} else if (front) {
		c->next = cl->wait_head;
		cl->wait_head->prev = c;
		cl->wait_head = c;
	} else {
		c->prev = cl->wait_tail;
		cl->wait_tail->next = c;
		cl->wait_tail = c;
	}
	cl->st.waiting++;
}

static struct n4_call *wait_pop(struct n4_client *cl)
{
	struct n4_call *c = cl->wait_head;

	if (c == NULL)
		return NULL;
	cl->wait_head = c->next;
	if (cl->wait_head)
		cl->wait_head->prev = NULL;
	else
		cl->wait_tail = NULL;
	c->next = c->prev = NULL;
	cl->st.waiting--;
	return c;
}

static void call_free(struct n4_call *c)
{
	if (c->delay_timer)
		loop_timer_cancel(c->cl->loop, c->delay_timer);
	if (c->held) {
		n4_out_free(c->held);
		free(c->held);
	}
	n4_req_clear(&c->rq);
	c->magic = 0;
	free(c);
}

static void call_done(struct rpc_context *rpc, int status, void *data, void *priv);
static void big_done(int status, const uint8_t *res, uint32_t len, void *priv);

/* c's COMPOUND over the second connection (opened at the first need): the
 * arguments encoded here with libnfs's XDR, sent by rpcclient (hard: it
 * re-sends after a reconnect), the answer decoded in big_done(). */
static int big_send(struct n4_client *cl, struct n4_call *c)
{
	uint32_t cap = c->rq.datalen + 4096, len;
	char *buf;
	ZDR z;
	int rc;

	if (cl->big == NULL) {
		struct sockaddr_storage ss;
		struct addrinfo hints, *ai = NULL;
		char port[16];
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
		snprintf(port, sizeof(port), "%d", cl->port);
		if (getaddrinfo(cl->addr, port, &hints, &ai) != 0 || ai == NULL)
			return -EHOSTUNREACH;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		cl->big = rpcc_new(cl->loop, &ss, NFS4_PROGRAM, NFS_V4, 60000);
		if (cl->big == NULL)
			return -ENOMEM;
	}
	buf = malloc(cap);
	if (buf == NULL)
		return -ENOMEM;
	zdrmem_create(&z, buf, cap, ZDR_ENCODE);
	if (!zdr_COMPOUND4args(&z, &c->b.args)) {
		zdr_destroy(&z);
		free(buf);
		return -E2BIG;
	}
	len = zdr_getpos(&z);
	zdr_destroy(&z);
	rc = rpcc_call(cl->big, NFSPROC4_COMPOUND, &c->cred, buf, len, 0, big_done, c);
	free(buf);
	return rc;
}

/* Sends c now when the client is up, else it waits. 0, or -errno when it
 * cannot be encoded (the caller completes it). */
static int call_send(struct n4_client *cl, struct n4_call *c)
{
	int rc;

	if (cl->state != N4S_UP || !cl->have_root) {
		wait_push(cl, c, 0);
		return 0;
	}
	c->rq.is_root =
	    c->rq.fh.len == cl->root.len && memcmp(c->rq.fh.data, cl->root.data, cl->root.len) == 0;
	c->rq.clientid = cl->clientid; /* open-owners: this client ID's, now */
	rc = c->rbuild ? c->rbuild(&c->b, cl->clientid, c->priv) : n4_build(&c->b, &c->rq);
	if (rc)
		return rc;
	if (c->rq.phase == N4_PH_MAIN && c->rq.proc == NFS3_WRITE && c->rq.datalen > BIG_WRITE) {
		rc = big_send(cl, c);
		if (rc)
			return rc;
	} else {
		if (set_cred(cl, &c->cred) != 0)
			return -ENOMEM;
		rc = rpc_nfs4_compound_async(cl->rpc, call_done, &c->b.args, c);
		if (rc != 0) {
			log_debug("nfs4 upstream: cannot send: %s", rpc_get_error(cl->rpc));
			return rc == -2 ? -E2BIG : -EINVAL;
		}
	}
	cl->st.compounds++;
	c->prev = NULL;
	c->next = cl->inflight;
	if (cl->inflight)
		cl->inflight->prev = c;
	cl->inflight = c;
	cl->st.inflight++;
	conn_flush(cl);
	return 0;
}

static void send_or_fail(struct n4_client *cl, struct n4_call *c)
{
	int rc = call_send(cl, c);

	if (rc) {
		c->cb(rc, NULL, NULL, c->priv);
		call_free(c);
	}
}

static void flush_waiting(struct n4_client *cl)
{
	int n = cl->st.waiting;

	for (int i = 0; i < n && cl->state == N4S_UP && cl->have_root; i++) {
		struct n4_call *c = wait_pop(cl);
		if (c == NULL)
			break;
		send_or_fail(cl, c);
	}
}

static void delay_timer_fn(struct loop *l, void *arg)
{
	struct n4_call *c = arg;

	(void)l;
	c->delay_timer = NULL;
	list_del(&c->cl->delayed, c);
	c->cl->st.waiting--;
	send_or_fail(c->cl, c);
}

/* The answer asks for a pause (DELAY, GRACE): the call waits on its own
 * timer (counted as waiting), 100 ms doubling to 2 s. */
static void call_delay(struct n4_client *cl, struct n4_call *c)
{
	uint64_t d = (uint64_t)DELAY_MIN_MS << (c->delays < 5 ? c->delays : 5);

	c->delays++;
	cl->st.delays++;
	c->delay_timer =
	    loop_timer_add(cl->loop, d > DELAY_MAX_MS ? DELAY_MAX_MS : d, 0, delay_timer_fn, c);
	if (c->delay_timer == NULL) {
		wait_push(cl, c, 1);
		return;
	}
	c->prev = NULL;
	c->next = cl->delayed;
	if (cl->delayed)
		cl->delayed->prev = c;
	cl->delayed = c;
	cl->st.waiting++;
}

/* --- where files are: the names table --------------------------------------- */

static int fh_eq(const struct n4_fh *a, const struct n4_fh *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

void n4_remember_name(struct n4_client *cl, const struct n4_fh *obj, const struct n4_fh *dir,
                      const char *name)
{
	struct n4_name *n = NULL;

	if (obj->len == 0 || obj->len > N4_FHSIZE || dir->len == 0 || dir->len > N4_FHSIZE ||
	    strlen(name) >= sizeof(n->name) || !strcmp(name, ".") || !strcmp(name, ".."))
		return;
	if (cl->names == NULL && (cl->names = calloc(N4_NAMES, sizeof(*cl->names))) == NULL)
		return; /* only the fallback needs it */
	for (uint32_t i = 0; i < N4_NAMES && n == NULL; i++)
		if (fh_eq(&cl->names[i].obj, obj))
			n = &cl->names[i];
	if (n == NULL)
		n = &cl->names[cl->names_next++ % N4_NAMES];
	n->obj = *obj;
	n->dir = *dir;
	snprintf(n->name, sizeof(n->name), "%s", name);
}

static const struct n4_name *name_of(const struct n4_client *cl, const struct n4_fh *obj)
{
	for (uint32_t i = 0; cl->names && i < N4_NAMES; i++)
		if (fh_eq(&cl->names[i].obj, obj))
			return &cl->names[i];
	return NULL;
}

/* A namespace change the module made: the table follows it. */
static void names_moved(struct n4_client *cl, const struct n4_fh *dir, const char *name,
                        const struct n4_fh *to, const char *to_name)
{
	for (uint32_t i = 0; cl->names && i < N4_NAMES; i++) {
		struct n4_name *n = &cl->names[i];
		if (!fh_eq(&n->dir, dir) || strcmp(n->name, name) != 0)
			continue;
		if (to) {
			n->dir = *to;
			snprintf(n->name, sizeof(n->name), "%s", to_name);
		} else {
			memset(n, 0, sizeof(*n));
		}
	}
}

/* What a successful answer teaches the table. */
static void names_learn(struct n4_client *cl, const struct n4_req *rq, const struct n4_out *o)
{
	switch (rq->proc) {
	case NFS3_LOOKUP:
		if (o->u.lookup.status == NFS3_OK) {
			struct n4_fh fh;
			const nfs_fh3 *h = &o->u.lookup.LOOKUP3res_u.resok.object;
			if (h->data.data_len == 0 || h->data.data_len > N4_FHSIZE)
				return;
			fh.len = h->data.data_len;
			memcpy(fh.data, h->data.data_val, fh.len);
			n4_remember_name(cl, &fh, &rq->fh, rq->name);
		}
		break;
	case NFS3_CREATE:
		if (o->u.create.status == NFS3_OK && o->objfh.len)
			n4_remember_name(cl, &o->objfh, &rq->fh, rq->name);
		break;
	case NFS3_RENAME:
		if (o->u.rename.status == NFS3_OK) {
			names_moved(cl, &rq->fh2, rq->name2, NULL, NULL);
			names_moved(cl, &rq->fh, rq->name, &rq->fh2, rq->name2);
		}
		break;
	case NFS3_REMOVE:
		if (o->u.remove.status == NFS3_OK)
			names_moved(cl, &rq->fh, rq->name, NULL, NULL);
		break;
	default:
		break;
	}
}

/* --- the open-state phases ------------------------------------------------------ */

/* The answer kept in c->held goes to the caller. */
static void answer_held(struct n4_client *cl, struct n4_call *c)
{
	cl->st.replies++;
	cl->st.owner_nobody += c->held->nobody != 0;
	c->cb(0, &c->held->u, &c->held->coh, c->priv);
	call_free(c);
}

/* Sends c's next phase; a call that cannot be sent is answered with what
 * it holds (the file was created, or the write's refusal). */
static void next_phase(struct n4_client *cl, struct n4_call *c, int phase)
{
	c->rq.phase = phase;
	if (call_send(cl, c) != 0)
		answer_held(cl, c);
}

static void phase_failed(struct n4_client *cl, const char *what, int st)
{
	static struct log_limit lim;

	cl->st.close_errors++;
	log_limited(&lim, CFS_LOG_WARN, "nfs4 upstream %s: %s: %s", cl->cfg.host, what,
	            st < 0 ? "an answer that does not decode" : nfsstat4_to_str(st));
}

/* The fallback's open went with the client ID (the server restarted, or
 * the lease expired, between the OPEN and the WRITE or OPEN_CONFIRM that
 * uses its stateid): OPEN again with a new owner, once per call, and send
 * the write with that open's stateid. 1 when under way (send: sent now;
 * else the caller queues it), 0 when not a fallback's or tried already.
 * CREATE's open is not redone: the file was made. */
static int reopen(struct n4_client *cl, struct n4_call *c, int send)
{
	if (c->rq.proc == NFS3_CREATE || !c->fallback || c->reopened || c->held == NULL)
		return 0;
	c->reopened = 1;
	c->opened = 0;
	cl->st.reopens++;
	snprintf(c->rq.owner, sizeof(c->rq.owner), "cachefsd-open-%llu",
	         (unsigned long long)++cl->owner_seq);
	c->rq.seqid = 0;
	c->rq.phase = N4_PH_OPEN;
	if (send)
		next_phase(cl, c, N4_PH_OPEN);
	return 1;
}

static int stateid_lost(int st)
{
	return st == NFS4ERR_STALE_STATEID || st == NFS4ERR_BAD_STATEID || st == NFS4ERR_EXPIRED ||
	       st == NFS4ERR_ADMIN_REVOKED;
}

/* An answer to one of the open-state COMPOUNDs (OPEN, OPEN_CONFIRM, CLOSE). */
static void phase_done(struct n4_client *cl, struct n4_call *c, const COMPOUND4res *res)
{
	stateid4 sid;
	uint32_t rflags = 0;
	struct n4_fh fh;
	int st = n4_open_reply(&c->rq, res, &sid, &rflags, &fh);

	/* every answer to a seqid operation moves the owner's seqid on
	 * (RFC 7530 section 9.1.7), except these that never reached it */
	if (st != NFS4ERR_STALE_CLIENTID && st != NFS4ERR_STALE_STATEID &&
	    st != NFS4ERR_BAD_STATEID && st != NFS4ERR_BAD_SEQID && st != NFS4ERR_BADZDR &&
	    st != NFS4ERR_RESOURCE && st != NFS4ERR_NOFILEHANDLE && st >= 0)
		c->rq.seqid++;
	switch (c->rq.phase) {
	case N4_PH_OPEN:
		if (st != NFS4_OK) {
			/* the name no longer leads to it, or no write access:
			 * the refusal stands */
			answer_held(cl, c);
			return;
		}
		cl->st.opens++;
		c->opened = 1;
		c->rq.ofh = fh;
		c->rq.sid = sid;
		if (!fh_eq(&fh, &c->rq.fh)) {
			/* the name is another file's now: close it, answer
			 * the refusal */
			next_phase(cl, c, N4_PH_CLOSE);
			return;
		}
		if (rflags & OPEN4_RESULT_CONFIRM) {
			cl->st.open_confirms++;
			next_phase(cl, c, N4_PH_CONFIRM);
			return;
		}
		cl->st.open_fallbacks++;
		next_phase(cl, c, N4_PH_MAIN);
		return;
	case N4_PH_CONFIRM:
		if (stateid_lost(st) && reopen(cl, c, 1))
			return;
		if (st != NFS4_OK) {
			/* an unconfirmed open goes with the lease: nothing to
			 * close */
			phase_failed(cl, "OPEN_CONFIRM", st);
			c->opened = 0;
			answer_held(cl, c);
			return;
		}
		c->rq.sid = sid;
		if (c->rq.proc == NFS3_CREATE) {
			next_phase(cl, c, N4_PH_CLOSE);
		} else {
			cl->st.open_fallbacks++;
			next_phase(cl, c, N4_PH_MAIN);
		}
		return;
	default: /* N4_PH_CLOSE */
		if (st != NFS4_OK)
			phase_failed(cl, "CLOSE", st);
		c->opened = 0;
		answer_held(cl, c);
		return;
	}
}

/* The main COMPOUND's answer into c->held (replacing an earlier one). */
static int hold(struct n4_client *cl, struct n4_call *c, const COMPOUND4res *res)
{
	if (c->held == NULL && (c->held = calloc(1, sizeof(*c->held))) == NULL)
		return -ENOMEM;
	n4_out_free(c->held);
	return n4_reply_to_v3(&c->rq, res, cl->cfg.idmap_domain, c->held);
}

static void call_answer(struct n4_client *cl, struct n4_call *c, const COMPOUND4res *res);

/* A seqid operation answered DELAY or GRACE moved its owner's seqid on
 * (RFC 7530 section 9.1.7 excepts neither): sent again with the same seqid
 * it would be a replay, answered from the server's replay cache with the
 * same DELAY or GRACE for ever. An OPEN (CREATE's, or the fallback's) goes
 * again under a new owner (whether the server kept a new owner whose first
 * OPEN failed is its choice); OPEN_CONFIRM and CLOSE with the next seqid. */
static void delay_seqid(struct n4_client *cl, struct n4_call *c)
{
	if (c->rq.phase == N4_PH_OPEN || (c->rq.phase == N4_PH_MAIN && c->rq.proc == NFS3_CREATE)) {
		snprintf(c->rq.owner, sizeof(c->rq.owner), "cachefsd-open-%llu",
		         (unsigned long long)++cl->owner_seq);
		c->rq.seqid = 0;
	} else if (c->rq.phase == N4_PH_CONFIRM || c->rq.phase == N4_PH_CLOSE) {
		c->rq.seqid++;
	}
}

/* An answer from the second connection (big_send()). */
static void big_done(int status, const uint8_t *resb, uint32_t len, void *priv)
{
	struct n4_call *c = priv;
	struct n4_client *cl = c->cl;
	COMPOUND4res res;
	ZDR z;

	assert(c->magic == N4CALL_MAGIC);
	list_del(&cl->inflight, c);
	cl->st.inflight--;
	if (status == -ECANCELED || cl->stopping) {
		c->cb(-ECANCELED, NULL, NULL, c->priv);
		call_free(c);
		return;
	}
	if (status != 0) {
		/* accept_stat > 0 or an auth denial: as upstream.h's codes */
		c->cb(status == -EACCES                                ? UPSTREAM_E_DENIED
		      : status >= PROG_UNAVAIL && status <= SYSTEM_ERR ? -(UPSTREAM_E_BASE + status)
		      : status > 0                                     ? UPSTREAM_E_BADREPLY
		                                                       : status,
		      NULL, NULL, c->priv);
		call_free(c);
		return;
	}
	memset(&res, 0, sizeof(res));
	zdrmem_create(&z, (const caddr_t)resb, len, ZDR_DECODE);
	if (!zdr_COMPOUND4res(&z, &res)) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_WARN, "nfs4 upstream %s: an answer that does not decode",
		            cl->cfg.host);
		zdr_destroy(&z);
		c->cb(-EPROTO, NULL, NULL, c->priv);
		call_free(c);
		return;
	}
	call_answer(cl, c, &res);
	zdr_destroy(&z);
}

static void call_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct n4_call *c = priv;
	struct n4_client *cl = c->cl;
	const COMPOUND4res *res = data;

	(void)rpc;
	assert(c->magic == N4CALL_MAGIC);
	list_del(&cl->inflight, c);
	cl->st.inflight--;
	if (is_conn_error(status, data) && !cl->stopping) {
		if (++c->lost >= UPSTREAM_MAX_LOST) {
			log_warn("nfs4 upstream %s: the connection closed %d times while a call "
			         "was in flight: given up",
			         cl->cfg.host, c->lost);
			c->cb(-ECONNRESET, NULL, NULL, c->priv);
			call_free(c);
			return;
		}
		cl->st.resends++;
		wait_push(cl, c, 1);
		return;
	}
	if (status == RPC_STATUS_CANCEL || cl->stopping) {
		c->cb(-ECANCELED, NULL, NULL, c->priv);
		call_free(c);
		return;
	}
	if (status != RPC_STATUS_SUCCESS) {
		c->cb(status == RPC_STATUS_TIMEOUT ? -ETIMEDOUT : upstream_rpc_status(data), NULL,
		      NULL, c->priv);
		call_free(c);
		return;
	}
	call_answer(cl, c, res);
}

/* A COMPOUND's answer (from either connection): wait, recover, fall back
 * to an OPEN, go on with the open-state phases, or answer. */
static void call_answer(struct n4_client *cl, struct n4_call *c, const COMPOUND4res *res)
{
	struct n4_out out;
	int rc;

	if (res->status == NFS4ERR_SERVERFAULT && c->rq.phase == N4_PH_MAIN && !c->rd_retry &&
	    (c->rq.proc == NFS3_READDIR || c->rq.proc == NFS3_READDIRPLUS) &&
	    c->rq.rdmax < N4_RD_MAX) {
		/* nfs-ganesha fails a READDIR whose listing's end just does
		 * not fit the maxcount ("Encode of EOD failed"): once more
		 * with room to spare, the answer trimmed to the client's
		 * count as always */
		c->rd_retry = 1;
		c->rq.rdmax = n4_readdir_max(c->rq.rdmax, N4_RD_RETRY);
		cl->st.readdir_retries++;
		send_or_fail(cl, c);
		return;
	}
	switch (n4_action_of_req(&c->rq, (int)res->status)) {
	case N4_DELAY:
		delay_seqid(cl, c);
		call_delay(cl, c);
		return;
	case N4_RECOVER: {
		/* an open of ours goes with the client ID: CREATE's file was
		 * made and a CLOSE finds nothing to close (answered as held),
		 * a fallback's write needs a new open (reopen()) */
		int done = c->opened && (c->rq.proc == NFS3_CREATE || c->rq.phase == N4_PH_CLOSE);

		if (c->opened && !done && !reopen(cl, c, 0))
			done = 1; /* reopened once already: the refusal stands */
		if (!done)
			wait_push(cl, c, 1);
		if (cl->state == N4S_UP) {
			cl->st.recoveries++;
			if (cl->reset_st == 0)
				cl->reset_st = (int)res->status;
			log_warn("nfs4 upstream %s: %s: establishing the client ID again",
			         cl->cfg.host, nfsstat4_to_str(res->status));
			setup_begin(cl, SOP_SETCLIENTID);
		}
		if (done) {
			c->opened = 0;
			answer_held(cl, c);
		}
		return;
	}
	case N4_STATEID:
		if (c->rq.proc != NFS3_READ) {
			/* a WRITE or a size-changing SETATTR refused with the
			 * anonymous stateid: OPEN the file by its name, once */
			const struct n4_name *n = name_of(cl, &c->rq.fh);
			/* the fallback's own open stateid refused: its open was
			 * lost (a restart while the write was out) */
			if (c->fallback && c->opened && c->rq.phase == N4_PH_MAIN &&
			    stateid_lost((int)res->status) && reopen(cl, c, 1))
				return;
			if (c->fallback || hold(cl, c, res) != 0)
				break;
			c->fallback = 1;
			if (n == NULL) {
				static struct log_limit lim;
				cl->st.write_refused++;
				log_limited(
				    &lim, CFS_LOG_WARN,
				    "nfs4 upstream %s: a write refused with the anonymous "
				    "stateid (%s) for a file whose name the module does not "
				    "know: no OPEN possible (v4.0 opens by name)",
				    cl->cfg.host, nfsstat4_to_str(res->status));
				answer_held(cl, c);
				return;
			}
			c->rq.odir = n->dir;
			snprintf(c->rq.oname, sizeof(c->rq.oname), "%s", n->name);
			snprintf(c->rq.owner, sizeof(c->rq.owner), "cachefsd-open-%llu",
			         (unsigned long long)++cl->owner_seq);
			c->rq.seqid = 0;
			next_phase(cl, c, N4_PH_OPEN);
			return;
		}
		if (!c->rq.bypass) {
			c->rq.bypass = 1;
			cl->st.bypass_reads++;
			send_or_fail(cl, c);
			return;
		}
		cl->st.anon_refused++;
		{
			static struct log_limit lim;
			log_limited(&lim, CFS_LOG_WARN,
			            "nfs4 upstream %s: READ refused with the anonymous and the "
			            "all-ones stateids (%s): this server needs OPEN, not built yet",
			            cl->cfg.host, nfsstat4_to_str(res->status));
		}
		c->cb(-ENOTSUP, NULL, NULL, c->priv);
		call_free(c);
		return;
	case N4_ANSWER:
		break;
	}
	if (c->rbuild) {
		/* n4_compound_call(): the COMPOUND's answer as it came */
		cl->st.replies++;
		c->cb(0, (void *)(uintptr_t)res, NULL, c->priv);
		call_free(c);
		goto next;
	}
	if (c->rq.phase != N4_PH_MAIN) {
		phase_done(cl, c, res);
		goto next;
	}
	if (c->opened || c->rq.proc == NFS3_CREATE) {
		/* an open of ours is held (the fallback's, or OPEN(CREATE)'s,
		 * whenever the OPEN succeeded, even if an operation after it
		 * failed): the answer waits for OPEN_CONFIRM and CLOSE */
		rc = hold(cl, c, res);
		if (rc == 0 && c->rq.proc == NFS3_CREATE && c->held->opened && !c->opened) {
			names_learn(cl, &c->rq, c->held);
			c->opened = 1;
			c->rq.ofh = c->held->objfh;
			c->rq.sid = c->held->open_sid;
			c->rq.seqid = 1;
			cl->st.opens++;
			if (c->rq.ofh.len == 0) {
				/* no handle to CLOSE by (GETFH failed): the open
				 * goes with the lease */
				phase_failed(cl, "OPEN(CREATE) without GETFH", NFS4ERR_SERVERFAULT);
				answer_held(cl, c);
				goto next;
			}
			if (c->held->open_rflags & OPEN4_RESULT_CONFIRM) {
				cl->st.open_confirms++;
				next_phase(cl, c, N4_PH_CONFIRM);
			} else {
				next_phase(cl, c, N4_PH_CLOSE);
			}
			goto next;
		}
		if (rc == 0 && c->opened) {
			next_phase(cl, c, N4_PH_CLOSE);
			goto next;
		}
		if (rc == 0) {
			answer_held(cl, c);
			goto next;
		}
	} else {
		rc = n4_reply_to_v3(&c->rq, res, cl->cfg.idmap_domain, &out);
		if (rc == 0) {
			if (out.rd_short && cl->st.readdir_scale < N4_RD_SCALE_MAX) {
				cl->st.readdir_scale += 4;
				log_debug("nfs4 upstream %s: a READDIR page short of the "
				          "client's count: maxcount x%u/16 from now on",
				          cl->cfg.host, cl->st.readdir_scale);
			}
			names_learn(cl, &c->rq, &out);
			cl->st.replies++;
			cl->st.owner_nobody += out.nobody != 0;
			c->cb(0, &out.u, &out.coh, c->priv);
			n4_out_free(&out);
			call_free(c);
			goto next;
		}
	}
	{
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_WARN, "nfs4 upstream %s: an answer that does not decode",
		            cl->cfg.host);
		c->cb(-EPROTO, NULL, NULL, c->priv);
		call_free(c);
	}
next:
	if (cl->wait_head && cl->state == N4S_UP && cl->have_root && !cl->stopping)
		flush_waiting(cl);
}

int n4_call(struct n4_client *cl, uint32_t proc, const void *args3, const struct cfs_cred *cred,
            n4_cb cb, void *priv)
{
	struct n4_call *c;
	int rc;

	if (cl->stopping)
		return -ECANCELED;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	rc = n4_req_from_v3(&c->rq, proc, args3);
	if (rc) {
		free(c);
		return rc;
	}
	c->magic = N4CALL_MAGIC;
	c->cl = cl;
	c->cred = *cred;
	c->cb = cb;
	c->priv = priv;
	if (proc == NFS3_CREATE) {
		/* one open-owner per OPEN(CREATE) (docs/design.md): seqid 0,
		 * then OPEN_CONFIRM and CLOSE; the same owner on a re-send, so
		 * that the server's replay cache answers a duplicate */
		snprintf(c->rq.owner, sizeof(c->rq.owner), "cachefsd-open-%llu",
		         (unsigned long long)++cl->owner_seq);
		c->rq.seqid = 0;
	}
	if (proc == NFS3_READDIR || proc == NFS3_READDIRPLUS)
		c->rq.rdmax = n4_readdir_max(c->rq.count, cl->st.readdir_scale);
	cl->st.calls++;
	if (cl->wait_head || cl->state != N4S_UP || !cl->have_root) {
		wait_push(cl, c, 0); /* no overtaking */
		return 0;
	}
	rc = call_send(cl, c);
	if (rc) {
		call_free(c);
		return rc;
	}
	return 0;
}

/* A COMPOUND of the caller's (nfs4lock.c's lock state): built at each send
 * with the client ID of the moment, waiting, re-sent, delayed and
 * recovered as n4_call()'s; its answer handed over as it came. */
int n4_compound_call(struct n4_client *cl, n4_build_fn build, const struct cfs_cred *cred, n4_cb cb,
                     void *priv)
{
	struct n4_call *c;
	int rc;

	if (cl->stopping)
		return -ECANCELED;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->magic = N4CALL_MAGIC;
	c->cl = cl;
	c->cred = *cred;
	c->cb = cb;
	c->priv = priv;
	c->rbuild = build;
	c->rq.proc = NFS3_NULL; /* no v3 meaning: answered as it came */
	cl->st.calls++;
	if (cl->wait_head || cl->state != N4S_UP || !cl->have_root) {
		wait_push(cl, c, 0);
		return 0;
	}
	rc = call_send(cl, c);
	if (rc) {
		call_free(c);
		return rc;
	}
	return 0;
}

void n4_on_reset(struct n4_client *cl, n4_reset_fn fn, void *arg)
{
	cl->reset_fn = fn;
	cl->reset_arg = arg;
}

clientid4 n4_clientid(const struct n4_client *cl)
{
	return cl->clientid;
}

int n4_name_of(const struct n4_client *cl, const struct n4_fh *obj, struct n4_fh *dir, char *name,
               size_t cap)
{
	const struct n4_name *n = name_of(cl, obj);

	if (n == NULL || strlen(n->name) >= cap)
		return -ENOENT;
	*dir = n->dir;
	memcpy(name, n->name, strlen(n->name) + 1);
	return 0;
}

/* --- start, stop ----------------------------------------------------------- */

static int resolve(const char *host, char *addr, size_t len)
{
	struct addrinfo hints, *ai;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (rc != 0)
		return -EHOSTUNREACH;
	rc =
	    getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	return rc ? -EHOSTUNREACH : 0;
}

int n4_start(struct loop *l, const struct n4_config *cfg, struct n4_client **out, char *err,
             size_t errlen)
{
	struct n4_client *cl;
	uint64_t deadline;
	struct timespec ts;
	char host[128] = "";
	uint64_t v;
	int rc;

	cl = calloc(1, sizeof(*cl));
	if (cl == NULL)
		return -ENOMEM;
	cl->magic = N4C_MAGIC;
	cl->st.readdir_scale = N4_RD_SCALE;
	cl->loop = l;
	cl->cfg = *cfg;
	cl->fd = -1;
	cl->port = cfg->port ? cfg->port : 2049;
	cl->backoff_ms = BACKOFF_MIN_MS;
	deadline = loop_clock_ms() + (uint64_t)(cfg->timeout_s > 0 ? cfg->timeout_s : 30) * 1000;
	rc = resolve(cfg->host, cl->addr, sizeof(cl->addr));
	if (rc) {
		snprintf(err, errlen, "cannot resolve upstream host '%s'", cfg->host);
		free(cl);
		return rc;
	}
	/* the export's path, split into components for LOOKUPs */
	snprintf(cl->pathbuf, sizeof(cl->pathbuf), "%s", cfg->path);
	for (char *save = NULL, *p = strtok_r(cl->pathbuf, "/", &save); p;
	     p = strtok_r(NULL, "/", &save)) {
		if (cl->ncomp >= N4_MAXPATH) {
			snprintf(err, errlen, "the export path %s has over %d components",
			         cfg->path, N4_MAXPATH);
			free(cl);
			return -EINVAL;
		}
		cl->comp[cl->ncomp++] = p;
	}
	/* the client ID: a stable id string, a verifier new at every start
	 * (the server then drops what an earlier incarnation held) */
	if (cfg->client_id[0]) {
		snprintf(cl->client_id, sizeof(cl->client_id), "%s", cfg->client_id);
	} else {
		gethostname(host, sizeof(host) - 1);
		snprintf(cl->client_id, sizeof(cl->client_id), "cachefsd/%.64s/%.128s:%d%.760s",
		         host, cfg->host, cl->port, cfg->path);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	v = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	v ^= (uint64_t)getpid() << 40;
	memcpy(cl->verifier, &v, sizeof(cl->verifier));
	cl->jitter = (uint32_t)(v ^ (v >> 32)) | 1;

	cl->tick = loop_timer_add(l, 100, 100, tick_fn, cl);
	conn_connect(cl);
	while (!cl->have_root && !cl->fatal) {
		uint64_t now = loop_clock_ms();
		if (loop_stop_signalled()) {
			snprintf(err, errlen, "nfs4 upstream %s:%s: a stop was asked for (signal)",
			         cfg->host, cfg->path);
			n4_stop(cl);
			return -EINTR;
		}
		if (now >= deadline) {
			snprintf(err, errlen, "nfs4 upstream %s:%s: not ready within %d s%s%s",
			         cfg->host, cfg->path, cfg->timeout_s > 0 ? cfg->timeout_s : 30,
			         cl->err[0] ? ": " : "", cl->err);
			n4_stop(cl);
			return -EHOSTUNREACH;
		}
		loop_once(l, (int)(deadline - now > 100 ? 100 : deadline - now));
	}
	if (cl->fatal) {
		snprintf(err, errlen, "nfs4 upstream %s:%s: %s", cfg->host, cfg->path, cl->err);
		n4_stop(cl);
		return -ENOENT;
	}
	cl->ever_up = 1;
	*out = cl;
	return 0;
}

void n4_stop(struct n4_client *cl)
{
	struct n4_call *c;

	if (cl == NULL)
		return;
	cl->stopping = 1;
	if (cl->tick)
		loop_timer_cancel(cl->loop, cl->tick);
	if (cl->retry_timer)
		loop_timer_cancel(cl->loop, cl->retry_timer);
	if (cl->fail_timer)
		loop_timer_cancel(cl->loop, cl->fail_timer);
	if (cl->setup_timer)
		loop_timer_cancel(cl->loop, cl->setup_timer);
	cl->tick = cl->retry_timer = cl->fail_timer = cl->setup_timer = NULL;
	if (cl->fd >= 0)
		loop_del(cl->loop, cl->fd);
	cl->fd = -1;
	if (cl->rpc) {
		struct rpc_context *rpc = cl->rpc;
		cl->rpc = NULL;
		rpc_destroy_context(rpc); /* calls in flight: -ECANCELED */
	}
	while ((c = wait_pop(cl)) != NULL) {
		c->cb(-ECANCELED, NULL, NULL, c->priv);
		call_free(c);
	}
	while ((c = cl->delayed) != NULL) {
		list_del(&cl->delayed, c);
		c->cb(-ECANCELED, NULL, NULL, c->priv);
		call_free(c);
	}
	if (cl->big) {
		struct rpcc *big = cl->big;
		cl->big = NULL;
		rpcc_free(big); /* its calls: -ECANCELED */
	}
	free(cl->names);
	cl->magic = 0;
	free(cl);
}

const struct n4_fh *n4_root_fh(const struct n4_client *cl)
{
	return &cl->root;
}

const fattr3 *n4_root_attr(const struct n4_client *cl)
{
	return &cl->root_attr;
}

uint64_t n4_maxread(const struct n4_client *cl)
{
	return cl->maxread;
}

const struct n4_stats *n4_stats(const struct n4_client *cl)
{
	return &cl->st;
}

const char *n4_client_id(const struct n4_client *cl)
{
	return cl->client_id;
}
