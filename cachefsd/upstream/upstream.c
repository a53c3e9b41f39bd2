/* The upstream pool. See include/upstream.h for the contract.
 *
 * Each connection is a libnfs client context driven by our loop. libnfs 4.0
 * encodes a call when it is queued, so a call's arguments are only read by
 * the send; but a call may be sent again after a reconnect, so callers keep
 * them until the callback.
 *
 * When a context fails, libnfs completes its queued calls with an "RPC
 * ERROR" status (or CANCEL when destroyed); those calls go back to the
 * waiting queue and are sent again once any connection is up. Calls the
 * upstream answered with an RPC-level error are reported to the caller.
 *
 * A connection is up only when the server answered an NFS NULL sent right
 * after the TCP connect (UC_PROBING until then): a balancer or port
 * forwarder in front of a stopped server accepts and closes at once, and
 * counting that connect as "up" reset the back-off and made a reconnect
 * storm (65 connects a second, a lost/regained log pair each). The back-off
 * (BACKOFF_MIN_MS doubling to reconnect_max, minus up to a quarter of
 * jitter so that connections and proxies do not retry in step) is reset
 * only by that answer. An outage starts when the last connection that was
 * up fails and ends at the first answer; it is logged once at each end. */
#include "upstream.h"
#include "fillplan.h"
#include "log.h"
#include "proto.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define UPC_MAGIC  0x55504331u /* "UPC1" */
#define CALL_MAGIC 0x43414c4cu /* "CALL" */

#define BACKOFF_MIN_MS 50
/* Calls in flight per connection: beyond this they wait in our queue, where
 * calls of clients that went away are dropped before costing the upstream
 * anything, and new clients are not stuck behind a deep backlog in libnfs. */
#define INFLIGHT_PER_CONN 64

/* DOWN -> CONNECTING (TCP) -> PROBING (NULL sent) -> UP (answered);
 * any failure -> DOWN and a retry after the back-off. */
enum uc_state { UC_DOWN, UC_CONNECTING, UC_PROBING, UC_UP };

struct up_conn {
	uint32_t magic;
	struct upstream *up;
	int idx;
	enum uc_state state;
	struct rpc_context *rpc;
	int fd; /* registered with the loop, or -1 */
	struct cfs_cred cred;
	int cred_set;
	int inflight;
	int reads; /* READs among them */
	uint64_t backoff_ms; /* the next retry's delay (before jitter) */
	struct loop_timer *retry;
	struct loop_timer *probe_timer; /* the NULL's deadline while PROBING */
	struct loop_timer *fail_timer;  /* uc_failed_timer() pending */
	int destroy_pending;
	int in_service;	  /* inside rpc_service() of this context */
	int flush_failed; /* an eager write failed: uc_fail() at the next safe point */
};

struct up_call {
	uint32_t magic;
	struct upstream *up;
	uint32_t proc;
	void *args;
	struct cfs_cred cred;
	upstream_cb cb;
	upstream_alive_fn alive;
	void *priv;
	struct up_conn *uc; /* while sent */
	uint64_t t_first_ms;
	uint64_t t_sent_us;
	struct up_call *next;		/* waiting queue */
	struct up_call *iprev, *inext; /* in-flight list */
	int abandoned;			/* soft timeout reported; libnfs still owns it */
	int lost; /* times the connection died while it was in flight */
};

struct upstream {
	struct loop *loop;
	const struct cfs_config *cfg;
	struct upstream_info info;
	struct upstream_counters ctr;
	struct up_conn *conns;
	int nconns;
	int next_rr;
	struct up_call *wait_head, *wait_tail;
	struct up_call *inflight; /* sent, not answered */
	struct loop_timer *tick;
	/* the outage: no connection up since outage_start_ms */
	int outage;
	uint64_t outage_start_ms;
	uint64_t outage_attempts; /* connects started since */
	uint32_t jitter_seed;
	int stopping;
};

static void uc_connect(struct up_conn *uc);
static void flush_waiting(struct upstream *up);

/* --- URL ------------------------------------------------------------------ */

static void url_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void url_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int parse_port(const char *s, size_t n, int *out)
{
	int v = 0;

	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*out = v;
	return 0;
}

int upstream_parse_url(const char *url, struct upstream_url *out, char *err, size_t errlen)
{
	const char *p, *host_end, *path, *query;
	size_t hl, pl;

	memset(out, 0, sizeof(*out));
	if (strncmp(url, "nfs://", 6) != 0) {
		url_err(err, errlen, "'%s' is not an nfs:// URL", url);
		return -EINVAL;
	}
	p = url + 6;
	path = strchr(p, '/');
	if (path == NULL) {
		url_err(err, errlen, "'%s' has no export path (nfs://HOST/EXPORT)", url);
		return -EINVAL;
	}
	query = strchr(path, '?');
	host_end = path;
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(path - p));
		if (rb == NULL) {
			url_err(err, errlen, "'%s': unterminated [address]", url);
			return -EINVAL;
		}
		hl = (size_t)(rb - p - 1);
		if (hl == 0 || hl >= sizeof(out->host))
			goto badhost;
		memcpy(out->host, p + 1, hl);
		host_end = rb + 1;
	} else {
		const char *colon = memchr(p, ':', (size_t)(path - p));
		hl = (size_t)((colon ? colon : path) - p);
		if (hl == 0 || hl >= sizeof(out->host))
			goto badhost;
		memcpy(out->host, p, hl);
		host_end = colon ? colon : path;
	}
	if (*host_end == ':') {
		/* nfs://host:port/ names the NFS port */
		if (parse_port(host_end + 1, (size_t)(path - host_end - 1), &out->nfsport) != 0) {
			url_err(err, errlen, "'%s': bad port", url);
			return -EINVAL;
		}
	}
	pl = query ? (size_t)(query - path) : strlen(path);
	if (pl >= sizeof(out->path)) {
		url_err(err, errlen, "'%s': export path too long", url);
		return -EINVAL;
	}
	memcpy(out->path, path, pl);
	while (pl > 1 && out->path[pl - 1] == '/')
		out->path[--pl] = 0;
	while (query && *query) {
		const char *kv = query + 1, *amp = strchr(kv, '&'), *eq;
		size_t kvl = amp ? (size_t)(amp - kv) : strlen(kv);

		eq = memchr(kv, '=', kvl);
		if (eq == NULL) {
			url_err(err, errlen, "'%s': query item '%.*s' is not key=value", url,
				(int)kvl, kv);
			return -EINVAL;
		}
		size_t kl = (size_t)(eq - kv), vl = kvl - kl - 1;
		int *dst = NULL;
		if (kl == 7 && strncmp(kv, "nfsport", 7) == 0)
			dst = &out->nfsport;
		else if (kl == 9 && strncmp(kv, "mountport", 9) == 0)
			dst = &out->mountport;
		if (dst == NULL) {
			url_err(err, errlen, "'%s': unsupported URL argument '%.*s' (nfsport, mountport)",
				url, (int)kl, kv);
			return -EINVAL;
		}
		if (parse_port(eq + 1, vl, dst) != 0) {
			url_err(err, errlen, "'%s': bad port in '%.*s'", url, (int)kvl, kv);
			return -EINVAL;
		}
		query = amp;
	}
	return 0;
badhost:
	url_err(err, errlen, "'%s': bad host", url);
	return -EINVAL;
}

/* --- connections ---------------------------------------------------------- */

static void uc_fail(struct up_conn *uc, const char *why);
static void uc_watch(struct up_conn *uc);

static void uc_io(struct loop *l, int fd, int revents, void *arg)
{
	struct up_conn *uc = arg;

	(void)l;
	(void)fd;
	assert(uc->magic == UPC_MAGIC);
	if (uc->rpc == NULL)
		return;
	uc->in_service = 1;
	int rc = rpc_service(uc->rpc, revents);
	uc->in_service = 0;
	if (rc < 0 || uc->flush_failed) {
		uc->flush_failed = 0;
		uc_fail(uc, rpc_get_error(uc->rpc));
		return;
	}
	uc_watch(uc);
}

static void uc_failed_timer(struct loop *l, void *arg)
{
	struct up_conn *uc = arg;

	(void)l;
	uc->fail_timer = NULL;
	if (uc->flush_failed && uc->rpc && !uc->in_service) {
		uc->flush_failed = 0;
		uc_fail(uc, rpc_get_error(uc->rpc));
	}
}

/* The context must fail, but we are inside its rpc_service() (or an eager
 * write): uc_fail() runs at the next safe point, the end of uc_io() or a
 * zero-delay timer, whichever comes first. */
static void uc_fail_later(struct up_conn *uc)
{
	uc->flush_failed = 1;
	if (uc->fail_timer == NULL)
		uc->fail_timer = loop_timer_add(uc->up->loop, 0, 0, uc_failed_timer, uc);
}

/* Writes the queued calls now instead of at the next POLLOUT (an epoll_ctl
 * and a wakeup saved per call). Never from inside this context's own
 * rpc_service(); a write failure is handled at the next safe point (libnfs
 * has then already handed the calls back to call_done()). */
static void uc_flush(struct up_conn *uc)
{
	if (uc->in_service || uc->flush_failed || uc->rpc == NULL || uc->state != UC_UP)
		return;
	for (int i = 0; i < 8 && (rpc_which_events(uc->rpc) & POLLOUT); i++) {
		uc->in_service = 1;
		int rc = rpc_service(uc->rpc, POLLOUT);
		uc->in_service = 0;
		if (rc < 0) {
			uc_fail_later(uc);
			return;
		}
	}
}

static void uc_watch(struct up_conn *uc)
{
	int fd = rpc_get_fd(uc->rpc);

	if (uc->fd >= 0 && uc->fd != fd) {
		loop_del(uc->up->loop, uc->fd);
		uc->fd = -1;
	}
	if (fd >= 0 && uc->fd != fd) {
		if (loop_add(uc->up->loop, fd, rpc_which_events(uc->rpc), uc_io, uc) == 0)
			uc->fd = fd;
	}
	if (uc->fd >= 0)
		loop_set(uc->up->loop, uc->fd, rpc_which_events(uc->rpc));
}

static void uc_retry_timer(struct loop *l, void *arg)
{
	struct up_conn *uc = arg;

	(void)l;
	uc->retry = NULL;
	if (!uc->up->stopping)
		uc_connect(uc);
}

/* The last connection that was up is gone: say so once for the outage. */
static void outage_begin(struct upstream *up, const char *why)
{
	if (up->outage)
		return;
	up->outage = 1;
	up->outage_start_ms = loop_now(up->loop);
	up->outage_attempts = 0;
	log_warn("upstream %s: connection lost (%s); calls wait and are re-sent once the "
	         "server answers again (reconnecting with back-off up to %d s)",
	         up->info.url.host, why ? why : "?", up->cfg->reconnect_max);
}

/* The delay before the next attempt of uc: its back-off minus up to a
 * quarter (jitter); the back-off then doubles up to reconnect_max. */
static uint64_t uc_next_delay(struct up_conn *uc)
{
	struct upstream *up = uc->up;
	uint64_t cap = (uint64_t)up->cfg->reconnect_max * 1000, d = uc->backoff_ms;

	if (d > cap)
		d = cap;
	/* xorshift32: cheap, and good enough to spread retries apart */
	up->jitter_seed ^= up->jitter_seed << 13;
	up->jitter_seed ^= up->jitter_seed >> 17;
	up->jitter_seed ^= up->jitter_seed << 5;
	d -= up->jitter_seed % (d / 4 + 1);
	uc->backoff_ms = uc->backoff_ms * 2 > cap ? cap : uc->backoff_ms * 2;
	return d;
}

/* The context failed: stop watching it, destroy it (its calls come back
 * through call_done with CANCEL and wait), and retry with back-off. Never
 * called from inside rpc_service of this context. */
static void uc_fail(struct up_conn *uc, const char *why)
{
	struct upstream *up = uc->up;

	if (uc->state == UC_UP)
		up->ctr.conns_up--;
	uc->state = UC_DOWN;
	if (up->ctr.conns_up == 0)
		outage_begin(up, why ? why : "closed by the server");
	log_debug("upstream connection %d lost: %s", uc->idx, why ? why : "?");
	if (uc->probe_timer) {
		loop_timer_cancel(up->loop, uc->probe_timer);
		uc->probe_timer = NULL;
	}
	if (uc->fd >= 0) {
		loop_del(up->loop, uc->fd);
		uc->fd = -1;
	}
	if (uc->rpc) {
		struct rpc_context *rpc = uc->rpc;
		uc->rpc = NULL;
		rpc_destroy_context(rpc);
	}
	uc->cred_set = 0;
	uc->flush_failed = 0;
	if (up->stopping)
		return;
	if (uc->retry == NULL)
		uc->retry = loop_timer_add(up->loop, uc_next_delay(uc), 0, uc_retry_timer, uc);
	/* calls that came back from this connection go to the others */
	if (up->ctr.conns_up > 0)
		flush_waiting(up);
}

/* The server answered on uc: it is up. The first answer after an outage
 * ends it, and the connections still waiting out their back-off try again
 * at once: the server is back. */
static void uc_up(struct up_conn *uc)
{
	struct upstream *up = uc->up;

	if (uc->probe_timer) {
		loop_timer_cancel(up->loop, uc->probe_timer);
		uc->probe_timer = NULL;
	}
	uc->state = UC_UP;
	uc->backoff_ms = BACKOFF_MIN_MS;
	up->ctr.conns_up++;
	if (up->outage) {
		uint64_t ms = loop_now(up->loop) - up->outage_start_ms;

		log_info("upstream %s: connection regained after %llu attempts in %.1f s",
		         up->info.url.host, (unsigned long long)up->outage_attempts,
		         (double)ms / 1000.0);
		up->outage = 0;
		up->ctr.reconnects++;
		for (int i = 0; i < up->nconns; i++) {
			struct up_conn *o = &up->conns[i];
			if (o->state == UC_DOWN && o->retry) {
				loop_timer_cancel(up->loop, o->retry);
				o->retry = loop_timer_add(up->loop, 0, 0, uc_retry_timer, o);
			}
		}
	}
	flush_waiting(up);
}

/* The answer to the NULL sent after connecting. Any reply of the server,
 * even an RPC-level error, proves it is serving; a failure of the
 * connection (or its destruction: CANCEL) does not. */
static void probe_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct up_conn *uc = priv;

	assert(uc->magic == UPC_MAGIC);
	if (rpc != uc->rpc || uc->state != UC_PROBING)
		return; /* the context is being destroyed */
	if (status == RPC_STATUS_SUCCESS ||
	    (status == RPC_STATUS_ERROR && upstream_is_rpc_error(upstream_rpc_status(data)))) {
		uc_up(uc);
		return;
	}
	log_debug("upstream connection %d: no answer to NULL: %s", uc->idx,
	          data ? (const char *)data : "?");
	uc->state = UC_DOWN;
	uc_fail_later(uc);
}

/* A server that accepts the connection and never answers: try again. */
static void probe_timeout(struct loop *l, void *arg)
{
	struct up_conn *uc = arg;

	(void)l;
	uc->probe_timer = NULL;
	if (uc->state == UC_PROBING && !uc->in_service)
		uc_fail(uc, "no answer to NULL");
}

static void uc_connected(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct up_conn *uc = priv;
	struct upstream *up = uc->up;

	assert(uc->magic == UPC_MAGIC);
	if (status != RPC_STATUS_SUCCESS) {
		log_debug("upstream connection %d: connect failed: %s", uc->idx,
			  data ? (const char *)data : "?");
		/* rpc_service() returns -1 next; uc_io calls uc_fail() */
		uc->state = UC_DOWN;
		return;
	}
	/* connected: up once the server answers a NULL */
	uc->state = UC_PROBING;
	if (rpc_nfs3_null_async(rpc, probe_done, uc) != 0) {
		uc->state = UC_DOWN;
		uc_fail_later(uc);
		return;
	}
	uc->probe_timer = loop_timer_add(up->loop, (uint64_t)up->cfg->upstream_timeout * 1000, 0,
	                                 probe_timeout, uc);
}

static void uc_connect(struct up_conn *uc)
{
	struct upstream *up = uc->up;

	assert(uc->rpc == NULL);
	up->ctr.connect_attempts++;
	if (up->outage)
		up->outage_attempts++;
	uc->rpc = rpc_init_context();
	if (uc->rpc == NULL) {
		uc_fail(uc, "out of memory");
		return;
	}
	uc->state = UC_CONNECTING;
	if (rpc_connect_async(uc->rpc, up->info.addr, up->info.url.nfsport, uc_connected, uc) !=
	    0) {
		char why[256];
		snprintf(why, sizeof(why), "%s", rpc_get_error(uc->rpc));
		uc->state = UC_DOWN;
		uc_fail(uc, why);
		return;
	}
	uc_watch(uc);
}

/* --- calls ---------------------------------------------------------------- */

/* libnfs 4.0's texts for the replies rpc_process_reply() (lib/pdu.c) does
 * not accept; it keeps nothing else of them. */
static const struct {
	const char *text;
	int status;
} rpc_texts[] = {
    {"Server responded: Program not available", UPSTREAM_E_PROG_UNAVAIL},
    {"Server responded: Program version mismatch", UPSTREAM_E_PROG_MISMATCH},
    {"Server responded: Procedure not available", UPSTREAM_E_PROC_UNAVAIL},
    {"Server responded: Garbage arguments", UPSTREAM_E_GARBAGE_ARGS},
    {"Server responded: System Error", UPSTREAM_E_SYSTEM_ERR},
    {"RPC Packet not accepted by the server", UPSTREAM_E_DENIED},
    {"Message rejected by server", UPSTREAM_E_BADREPLY},
    {"Unknown rpc response from server", UPSTREAM_E_BADREPLY},
};

int upstream_rpc_status(const char *libnfs_msg)
{
	if (libnfs_msg == NULL)
		return -EPROTO;
	for (size_t i = 0; i < sizeof(rpc_texts) / sizeof(rpc_texts[0]); i++)
		if (strcmp(libnfs_msg, rpc_texts[i].text) == 0)
			return rpc_texts[i].status;
	return -EPROTO;
}

const char *upstream_strerror(int status)
{
	switch (status) {
	case UPSTREAM_E_PROG_UNAVAIL:
		return "the server answered PROG_UNAVAIL";
	case UPSTREAM_E_PROG_MISMATCH:
		return "the server answered PROG_MISMATCH";
	case UPSTREAM_E_PROC_UNAVAIL:
		return "the server answered PROC_UNAVAIL";
	case UPSTREAM_E_GARBAGE_ARGS:
		return "the server answered GARBAGE_ARGS";
	case UPSTREAM_E_SYSTEM_ERR:
		return "the server answered SYSTEM_ERR";
	case UPSTREAM_E_DENIED:
		return "the server answered MSG_DENIED";
	case UPSTREAM_E_BADREPLY:
		return "the server's reply could not be decoded";
	default:
		return strerror(-status);
	}
}

static void call_done(struct rpc_context *rpc, int status, void *data, void *priv);

static int is_conn_error(int status, const void *data)
{
	if (status == RPC_STATUS_CANCEL)
		return 1;
	return status == RPC_STATUS_ERROR && data != NULL &&
	       strncmp((const char *)data, "RPC ERROR", 9) == 0;
}

static int set_cred(struct up_conn *uc, const struct cfs_cred *cred)
{
	struct AUTH *auth;

	/* the machine name too: a peer's marks are in it (PEERS_MARK, a
	 * probe's PEERS_PROBE_MARK), and cfs_cred_equal() leaves it out */
	if (uc->cred_set && cfs_cred_equal(&uc->cred, cred) &&
	    strcmp(uc->cred.machine, cred->machine) == 0)
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
	rpc_set_auth(uc->rpc, auth); /* destroys the previous AUTH */
	uc->cred = *cred;
	uc->cred_set = 1;
	return 0;
}

/* libnfs's answer, as rpc_nfs3_*_async gives it (0, -1, or -2: cannot
 * encode), -1 for a procedure without a sender; call_send() turns it
 * into -errno. */
static int send_proc(struct rpc_context *rpc, uint32_t proc, void *a, void *priv)
{
	const struct proc_row *r = proc_row(NFS_PROGRAM, proc);

	if (r == NULL || r->send == NULL)
		return -1;
	return r->send(rpc, call_done, a, priv);
}

/* Connection load for choosing: a READ in flight (up to 1 MiB to carry
 * back) weighs more than any number of small calls. */
static int load_of(const struct up_conn *uc)
{
	return uc->inflight + 64 * uc->reads;
}

static struct up_conn *pick_conn(struct upstream *up, const struct cfs_cred *cred, uint32_t proc)
{
	struct up_conn *best = NULL;

	if (up->ctr.inflight >= INFLIGHT_PER_CONN * up->ctr.conns_up)
		return NULL;
	/* Prefer an idle-enough connection that already carries this
	 * credential (no AUTH swap), else the least loaded one. A metadata
	 * call does not queue behind a READ when another connection has none
	 * (seen over the wan relay: a GETATTR sent while a lookup prefetch's
	 * READ was in flight on the same connection often took two round
	 * trips). */
	for (int i = 0; i < up->nconns; i++) {
		struct up_conn *uc = &up->conns[(up->next_rr + i) % up->nconns];
		if (uc->state != UC_UP)
			continue;
		if (best == NULL || load_of(uc) < load_of(best))
			best = uc;
	}
	if (best == NULL)
		return NULL;
	for (int i = 0; i < up->nconns && proc != NFS3_READ; i++) {
		struct up_conn *uc = &up->conns[i];
		if (uc->state == UC_UP && uc->cred_set && cfs_cred_equal(&uc->cred, cred) &&
		    load_of(uc) <= load_of(best) + 8)
			return uc;
	}
	up->next_rr = (up->next_rr + 1) % up->nconns;
	return best;
}

static void wait_push(struct upstream *up, struct up_call *c, int front)
{
	c->next = NULL;
	if (up->wait_head == NULL) {
		up->wait_head = up->wait_tail = c;
	} else if (front) {
		c->next = up->wait_head;
		up->wait_head = c;
	} else {
		up->wait_tail->next = c;
		up->wait_tail = c;
	}
	up->ctr.waiting++;
}

static struct up_call *wait_pop(struct upstream *up)
{
	struct up_call *c = up->wait_head;

	if (c) {
		up->wait_head = c->next;
		if (up->wait_head == NULL)
			up->wait_tail = NULL;
		up->ctr.waiting--;
		c->next = NULL;
	}
	return c;
}

/* Sends c on some connection. Returns 0 (sent or waiting) or -errno when
 * the call cannot be encoded: -E2BIG when it does not fit libnfs 4.0's
 * encode buffer (4 KiB; a call with names or a path of a few KiB). */
static int call_send(struct upstream *up, struct up_call *c)
{
	int rc;

	struct up_conn *uc = pick_conn(up, &c->cred, c->proc);

	if (uc == NULL) {
		wait_push(up, c, 0);
		return 0;
	}
	if (set_cred(uc, &c->cred) != 0)
		return -ENOMEM;
	rc = send_proc(uc->rpc, c->proc, c->args, c);
	if (rc != 0) {
		/* libnfs's rpc_nfs3_*_async: -2 is "failed to encode" */
		log_debug("upstream: cannot send %s: %s", proto_proc_name(NFS_PROGRAM, c->proc),
		          rpc_get_error(uc->rpc));
		return rc == -2 ? -E2BIG : -EINVAL;
	}
	c->uc = uc;
	up->ctr.inflight++;
	c->t_sent_us = loop_clock_us();
	c->iprev = NULL;
	c->inext = up->inflight;
	if (up->inflight)
		up->inflight->iprev = c;
	up->inflight = c;
	uc->inflight++;
	uc->reads += c->proc == NFS3_READ;
	up->ctr.calls++;
	if (c->proc < NFS3_NPROCS)
		up->ctr.calls_by_proc[c->proc]++;
	if (c->proc == NFS3_WRITE)
		up->ctr.write_bytes += ((const WRITE3args *)c->args)->data.data_len;
	uc_flush(uc);
	uc_watch(uc);
	return 0;
}

static void call_free(struct up_call *c)
{
	c->magic = 0;
	free(c);
}

static void call_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct up_call *c = priv;
	struct upstream *up = c->up;
	struct up_conn *uc = c->uc;
	int rc;

	(void)rpc;
	assert(c->magic == CALL_MAGIC);
	c->uc = NULL;
	if (uc) {
		uc->inflight--;
		uc->reads -= c->proc == NFS3_READ;
	}
	up->ctr.inflight--;
	if (c->iprev)
		c->iprev->inext = c->inext;
	else if (up->inflight == c)
		up->inflight = c->inext;
	if (c->inext)
		c->inext->iprev = c->iprev;
	c->iprev = c->inext = NULL;
	if (c->abandoned) {
		/* soft mode already failed it; its arguments may be gone */
		call_free(c);
		return;
	}
	if (is_conn_error(status, data) && !up->stopping) {
		/* the connection went away under the call: wait and re-send */
		if (uc && uc->state == UC_UP) {
			uc->state = UC_DOWN;
			up->ctr.conns_up--;
		}
		if (++c->lost >= UPSTREAM_MAX_LOST) {
			up->ctr.dropped_calls++;
			static struct log_limit lim;
			log_limited(&lim, CFS_LOG_WARN,
			            "upstream %s: the connection closed %d times while procedure %u "
			            "was in flight: given up (the server will not take it)",
			            up->info.url.host, c->lost, c->proc);
			c->cb(-ECONNRESET, NULL, c->priv);
			call_free(c);
			return;
		}
		up->ctr.resends++;
		wait_push(up, c, 1);
		return;
	}
	switch (status) {
	case RPC_STATUS_SUCCESS: {
		uint64_t rtt = loop_clock_us() - c->t_sent_us;

		up->ctr.replies++;
		up->ctr.rtt_us_sum += rtt;
		if (c->proc < NFS3_NPROCS) {
			up->ctr.rtt_hist[c->proc][cfs_lat_bucket(rtt)]++;
			up->ctr.rtt_us_by_proc[c->proc] += rtt;
		}
		if (c->proc == NFS3_READ && data && ((const READ3res *)data)->status == NFS3_OK)
			up->ctr.read_bytes += ((const READ3res *)data)->READ3res_u.resok.count;
		rc = 0;
		break;
	}
	case RPC_STATUS_TIMEOUT:
		up->ctr.timeouts++;
		rc = -ETIMEDOUT;
		break;
	case RPC_STATUS_CANCEL:
		rc = -ECANCELED;
		break;
	default:
		/* an RPC-level answer (or an unexpected failure): not retried,
		 * handed on as it came */
		up->ctr.rpc_errors++;
		rc = upstream_rpc_status(data);
		{
			/* clients choose what the server refuses (AUTH_NONE, a
			 * flavour it does not take): one line per window */
			static struct log_limit lim;
			log_limited(&lim, CFS_LOG_WARN, "upstream: %s failed: %s (%s)",
			            proto_proc_name(NFS_PROGRAM, c->proc), upstream_strerror(rc),
			            data ? (const char *)data : "?");
		}
		break;
	}
	c->cb(rc, rc == 0 ? data : NULL, c->priv);
	call_free(c);
	/* a slot is free */
	if (up->wait_head && !up->stopping)
		flush_waiting(up);
}

static void flush_waiting(struct upstream *up)
{
	int n = up->ctr.waiting;

	/* each waiting call is tried once per flush; if no connection is up
	 * it is pushed back to the tail */
	for (int i = 0; i < n; i++) {
		struct up_call *c = wait_pop(up);
		if (c == NULL)
			break;
		if (c->alive && !c->alive(c->priv)) {
			up->ctr.cancelled++;
			c->cb(-ECANCELED, NULL, c->priv);
			call_free(c);
			continue;
		}
		if (pick_conn(up, &c->cred, c->proc) == NULL) {
			/* no slot: keep the order */
			c->next = up->wait_head;
			up->wait_head = c;
			if (up->wait_tail == NULL)
				up->wait_tail = c;
			up->ctr.waiting++;
			break;
		}
		int rc = call_send(up, c);
		if (rc != 0) {
			c->cb(rc, NULL, c->priv);
			call_free(c);
		}
	}
}

int upstream_call(struct upstream *up, uint32_t proc, void *args, const struct cfs_cred *cred,
		  upstream_cb cb, void *priv)
{
	return upstream_call_for(up, proc, args, cred, cb, NULL, priv);
}

int upstream_call_for(struct upstream *up, uint32_t proc, void *args,
		      const struct cfs_cred *cred, upstream_cb cb, upstream_alive_fn alive,
		      void *priv)
{
	struct up_call *c;
	int rc;

	if (up->stopping)
		return -ECANCELED;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->magic = CALL_MAGIC;
	c->up = up;
	c->proc = proc;
	c->args = args;
	c->cred = *cred;
	c->cb = cb;
	c->alive = alive;
	c->priv = priv;
	c->t_first_ms = loop_now(up->loop);
	if (up->wait_head) {
		/* others wait already: no overtaking */
		wait_push(up, c, 0);
		return 0;
	}
	rc = call_send(up, c);
	if (rc) {
		call_free(c);
		return rc;
	}
	return 0;
}

/* Every 100 ms: libnfs wants rpc_service() for its timeouts; soft mode
 * fails calls that waited too long for a connection. */
static void tick(struct loop *l, void *arg)
{
	struct upstream *up = arg;

	for (int i = 0; i < up->nconns; i++) {
		struct up_conn *uc = &up->conns[i];
		if (uc->rpc && uc->state != UC_DOWN && !uc->in_service) {
			uc->in_service = 1;
			int rc = rpc_service(uc->rpc, 0);
			uc->in_service = 0;
			if (rc < 0)
				uc_fail(uc, rpc_get_error(uc->rpc));
			else
				uc_watch(uc);
		}
	}
	if (up->cfg->soft) {
		uint64_t limit = (uint64_t)up->cfg->upstream_timeout * 1000;
		int n = up->ctr.waiting;

		for (struct up_call *c = up->inflight; c; c = c->inext) {
			if (!c->abandoned && loop_now(l) - c->t_first_ms >= limit) {
				c->abandoned = 1;
				up->ctr.timeouts++;
				c->cb(-ETIMEDOUT, NULL, c->priv);
			}
		}
		for (int i = 0; i < n; i++) {
			struct up_call *c = wait_pop(up);
			if (loop_now(l) - c->t_first_ms >= limit) {
				up->ctr.timeouts++;
				c->cb(-ETIMEDOUT, NULL, c->priv);
				call_free(c);
			} else {
				wait_push(up, c, 0);
			}
		}
	}
}

/* --- start-up: portmapper, MOUNT, connections, FSINFO --------------------- */

struct boot {
	struct upstream *up;
	struct rpc_context *rpc; /* portmapper or mount context */
	int fd;
	int done;
	int failed;
	char err[512];
	int step;
	uint32_t fsinfo_args_len;
	FSINFO3args fsinfo_args;
};

static void boot_fail(struct boot *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void boot_fail(struct boot *b, const char *fmt, ...)
{
	va_list ap;

	if (b->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	b->failed = 1;
}

static void boot_io(struct loop *l, int fd, int revents, void *arg)
{
	struct boot *b = arg;

	(void)l;
	(void)fd;
	if (b->rpc && rpc_service(b->rpc, revents) < 0)
		boot_fail(b, "%s", rpc_get_error(b->rpc));
}

static void boot_watch(struct boot *b)
{
	int fd = b->rpc ? rpc_get_fd(b->rpc) : -1;

	if (b->fd >= 0 && b->fd != fd) {
		loop_del(b->up->loop, b->fd);
		b->fd = -1;
	}
	if (fd >= 0 && b->fd != fd && loop_add(b->up->loop, fd, 0, boot_io, b) == 0)
		b->fd = fd;
	if (b->fd >= 0)
		loop_set(b->up->loop, b->fd, rpc_which_events(b->rpc));
}

static void boot_close(struct boot *b)
{
	if (b->fd >= 0)
		loop_del(b->up->loop, b->fd);
	b->fd = -1;
	if (b->rpc)
		rpc_destroy_context(b->rpc);
	b->rpc = NULL;
}

static void pmap_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct boot *b = priv;
	int *port = b->step == 0 ? &b->up->info.url.nfsport : &b->up->info.url.mountport;

	(void)rpc;
	if (status != RPC_STATUS_SUCCESS) {
		boot_fail(b, "portmapper on %s: %s", b->up->info.addr,
			  data ? (char *)data : "no answer");
		return;
	}
	*port = (int)*(uint32_t *)data;
	if (*port == 0) {
		boot_fail(b, "portmapper on %s: %s v3 over TCP is not registered", b->up->info.addr,
			  b->step == 0 ? "NFS" : "MOUNT");
		return;
	}
	b->done = 1;
}

static void connected_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct boot *b = priv;

	(void)rpc;
	if (status != RPC_STATUS_SUCCESS)
		boot_fail(b, "cannot connect: %s", data ? (char *)data : "?");
	else
		b->done = 1;
}

static void mnt_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct boot *b = priv;
	mountres3 *res = data;
	struct upstream_info *info = &b->up->info;

	(void)rpc;
	if (status != RPC_STATUS_SUCCESS) {
		boot_fail(b, "MOUNT %s: %s", info->url.path, data ? (char *)data : "?");
		return;
	}
	if (res->fhs_status != MNT3_OK) {
		boot_fail(b, "MOUNT %s refused by the server: mountstat3 %d", info->url.path,
			  res->fhs_status);
		return;
	}
	fhandle3 *fh = &res->mountres3_u.mountinfo.fhandle;
	if (fh->fhandle3_len == 0 || fh->fhandle3_len > NFS3_FHSIZE) {
		boot_fail(b, "MOUNT %s: bad root handle length %u", info->url.path,
			  fh->fhandle3_len);
		return;
	}
	memcpy(info->root_fh, fh->fhandle3_val, fh->fhandle3_len);
	info->root_fh_len = fh->fhandle3_len;
	b->done = 1;
}

static void fsinfo_cb(int status, void *res, void *priv)
{
	struct boot *b = priv;
	FSINFO3res *r = res;

	if (status != 0) {
		boot_fail(b, "FSINFO of the export root: %s", strerror(-status));
		return;
	}
	if (r->status != NFS3_OK) {
		boot_fail(b, "FSINFO of the export root: nfsstat3 %d", r->status);
		return;
	}
	b->up->info.fsinfo = r->FSINFO3res_u.resok;
	b->done = 1;
}

/* Runs the loop until the step finishes, fails, the deadline passes or a
 * stop is signalled (SIGINT during a start against a hung filer: the start
 * ends now, not after upstream_timeout). 0, or -1 when the step failed (b
 * says why; upstream_start() returns -EHOSTUNREACH with that message, or
 * -EINTR when stopped). boot_connect() answers the same. */
static int boot_wait(struct boot *b, uint64_t deadline)
{
	while (!b->done && !b->failed) {
		uint64_t now = loop_clock_ms();
		if (loop_stop_signalled()) {
			boot_fail(b, "not mounted: a stop was asked for (signal)");
			break;
		}
		if (now >= deadline) {
			boot_fail(b, "no answer within %d s", b->up->cfg->upstream_timeout);
			break;
		}
		if (b->rpc)
			boot_watch(b);
		loop_once(b->up->loop, (int)(deadline - now > 100 ? 100 : deadline - now));
	}
	return b->failed ? -1 : 0;
}

static int boot_connect(struct boot *b, int port, uint64_t deadline)
{
	b->rpc = rpc_init_context();
	b->fd = -1;
	b->done = 0;
	if (b->rpc == NULL) {
		boot_fail(b, "out of memory");
		return -1;
	}
	if (rpc_connect_async(b->rpc, b->up->info.addr, port, connected_cb, b) != 0) {
		boot_fail(b, "cannot connect to %s port %d: %s", b->up->info.addr, port,
			  rpc_get_error(b->rpc));
		return -1;
	}
	return boot_wait(b, deadline);
}

static int resolve(const char *host, char *addr, size_t len, char *err, size_t errlen)
{
	struct addrinfo hints, *ai;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve upstream host '%s': %s", host,
			 gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	rc = getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, (socklen_t)len, NULL, 0,
			 NI_NUMERICHOST);
	freeaddrinfo(ai);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve upstream host '%s'", host);
		return -EHOSTUNREACH;
	}
	return 0;
}

/* The pool's connections, connecting from now on (each with its back-off). */
static int pool_open(struct upstream *up, int nconns)
{
	up->nconns = nconns;
	up->conns = calloc((size_t)up->nconns, sizeof(*up->conns));
	if (up->conns == NULL)
		return -ENOMEM;
	up->ctr.conns_total = up->nconns;
	up->jitter_seed = (uint32_t)(loop_clock_us() ^ (uint64_t)getpid()) | 1;
	for (int i = 0; i < up->nconns; i++) {
		struct up_conn *uc = &up->conns[i];
		uc->magic = UPC_MAGIC;
		uc->up = up;
		uc->idx = i;
		uc->fd = -1;
		uc->backoff_ms = BACKOFF_MIN_MS;
		uc_connect(uc);
	}
	up->tick = loop_timer_add(up->loop, 100, 100, tick, up);
	return 0;
}

int upstream_open(struct loop *l, const struct cfs_config *cfg, const char *host, int nfsport,
                  int nconns, struct upstream **out, char *err, size_t errlen)
{
	struct upstream *up = calloc(1, sizeof(*up));
	int rc;

	if (up == NULL)
		return -ENOMEM;
	up->loop = l;
	up->cfg = cfg;
	up->info.version = 3;
	snprintf(up->info.url.host, sizeof(up->info.url.host), "%s", host);
	snprintf(up->info.url.path, sizeof(up->info.url.path), "/");
	up->info.url.nfsport = nfsport;
	up->info.url.mountport = nfsport;
	rc = resolve(host, up->info.addr, sizeof(up->info.addr), err, errlen);
	if (rc == 0)
		rc = pool_open(up, nconns);
	if (rc) {
		free(up->conns);
		free(up);
		return rc;
	}
	*out = up;
	return 0;
}

int upstream_start(struct loop *l, const struct cfs_config *cfg, struct upstream **out,
		   char *err, size_t errlen)
{
	struct upstream *up;
	struct boot b;
	uint64_t deadline = loop_clock_ms() + (uint64_t)cfg->upstream_timeout * 1000;
	int rc;

	up = calloc(1, sizeof(*up));
	if (up == NULL)
		return -ENOMEM;
	up->loop = l;
	up->cfg = cfg;
	up->info.version = 3;
	rc = upstream_parse_url(cfg->upstream, &up->info.url, err, errlen);
	if (rc)
		goto fail;
	rc = resolve(up->info.url.host, up->info.addr, sizeof(up->info.addr), err, errlen);
	if (rc)
		goto fail;

	memset(&b, 0, sizeof(b));
	b.up = up;
	b.fd = -1;
	/* ports from the portmapper when the URL has none */
	for (b.step = 0; b.step < 2; b.step++) {
		int port = b.step == 0 ? up->info.url.nfsport : up->info.url.mountport;
		if (port)
			continue;
		if (boot_connect(&b, 111, deadline) != 0)
			goto boot_failed;
		b.done = 0;
		if (rpc_pmap2_getport_async(b.rpc, b.step == 0 ? NFS_PROGRAM : MOUNT_PROGRAM, 3,
					    IPPROTO_TCP, pmap_cb, &b) != 0) {
			boot_fail(&b, "portmapper: %s", rpc_get_error(b.rpc));
			goto boot_failed;
		}
		if (boot_wait(&b, deadline) != 0)
			goto boot_failed;
		boot_close(&b);
	}

	/* MOUNT the export once for its root handle */
	if (boot_connect(&b, up->info.url.mountport, deadline) != 0)
		goto boot_failed;
	b.done = 0;
	if (rpc_mount3_mnt_async(b.rpc, mnt_cb, up->info.url.path, &b) != 0) {
		boot_fail(&b, "MOUNT: %s", rpc_get_error(b.rpc));
		goto boot_failed;
	}
	if (boot_wait(&b, deadline) != 0)
		goto boot_failed;
	boot_close(&b);

	/* the pool */
	rc = pool_open(up, cfg->upstream_connections);
	if (rc)
		goto fail;

	/* FSINFO of the root, as root: what the proxy advertises is derived
	 * from it */
	{
		struct cfs_cred root = {.flavor = AUTH_UNIX};
		strcpy(root.machine, "cachefsd");
		b.done = 0;
		b.fsinfo_args.fsroot.data.data_len = up->info.root_fh_len;
		b.fsinfo_args.fsroot.data.data_val = (char *)up->info.root_fh;
		if (upstream_call(up, NFS3_FSINFO, &b.fsinfo_args, &root, fsinfo_cb, &b) != 0) {
			boot_fail(&b, "cannot send FSINFO");
			goto boot_failed_pool; /* the pool's connections are under way */
		}
		if (boot_wait(&b, deadline) != 0)
			goto boot_failed_pool;
	}
	{
		/* what fills will ask (read.c uses the same rule) */
		uint32_t cs = (uint32_t)cfg->chunk_size;
		uint32_t piece = fill_read_size(up->info.fsinfo.rtmax, cs);

		log_info("upstream %s:%s mounted (nfs port %d, mount port %d, %d connections, "
		         "rtmax %u, rtpref %u, wtmax %u); fills: %u READ%s of %u KiB per %u KiB "
		         "chunk",
		         up->info.url.host, up->info.url.path, up->info.url.nfsport,
		         up->info.url.mountport, up->nconns, up->info.fsinfo.rtmax,
		         up->info.fsinfo.rtpref, up->info.fsinfo.wtmax,
		         fill_reads_per_chunk(piece, cs),
		         fill_reads_per_chunk(piece, cs) == 1 ? "" : "s", piece / 1024, cs / 1024);
	}
	*out = up;
	return 0;

boot_failed_pool:
	snprintf(err, errlen, "upstream %s: %s", cfg->upstream, b.err);
	upstream_stop(up);
	return loop_stop_signalled() ? -EINTR : -EHOSTUNREACH;
boot_failed:
	snprintf(err, errlen, "upstream %s: %s", cfg->upstream, b.err);
	boot_close(&b);
	rc = loop_stop_signalled() ? -EINTR : -EHOSTUNREACH;
fail:
	free(up->conns);
	free(up);
	return rc;
}

void upstream_stop(struct upstream *up)
{
	struct up_call *c;

	if (up == NULL)
		return;
	up->stopping = 1;
	if (up->tick)
		loop_timer_cancel(up->loop, up->tick);
	for (int i = 0; i < up->nconns; i++) {
		struct up_conn *uc = &up->conns[i];
		struct loop_timer **timers[] = {&uc->retry, &uc->probe_timer, &uc->fail_timer};
		for (size_t t = 0; t < sizeof(timers) / sizeof(timers[0]); t++) {
			if (*timers[t])
				loop_timer_cancel(up->loop, *timers[t]);
			*timers[t] = NULL;
		}
		if (uc->fd >= 0)
			loop_del(up->loop, uc->fd);
		uc->fd = -1;
		if (uc->rpc) {
			struct rpc_context *rpc = uc->rpc;
			uc->rpc = NULL;
			rpc_destroy_context(rpc); /* calls back with CANCEL */
		}
	}
	while ((c = wait_pop(up)) != NULL) {
		c->cb(-ECANCELED, NULL, c->priv);
		call_free(c);
	}
	free(up->conns);
	free(up);
}

const struct upstream_info *upstream_info(const struct upstream *up)
{
	return &up->info;
}

int upstream_max_inflight(const struct upstream *up)
{
	return INFLIGHT_PER_CONN * up->nconns;
}

const struct cfs_counter_desc upstream_counter_descs[] = {
#define UPSTREAM_COUNTER(field, sec, type, metric, label, help)                                    \
	{"upstream_" #field,                                                                       \
	 offsetof(struct upstream_counters, field),                                                \
	 UPSTREAM_SEC_##sec,                                                                       \
	 CFS_CTR_##type,                                                                           \
	 metric,                                                                                   \
	 label,                                                                                    \
	 help},
#include "upstream_counters.def"
#undef UPSTREAM_COUNTER
};
const size_t upstream_counter_ndescs =
    sizeof(upstream_counter_descs) / sizeof(upstream_counter_descs[0]);

const struct upstream_counters *upstream_counters(const struct upstream *up)
{
	return &up->ctr;
}
