/* Listener and client connections.
 *
 * Input: we read the socket ourselves and split it into RPC records (RFC
 * 5531 record marking), reassembling fragments up to CFS_MAX_RECORD bytes;
 * each complete record goes to proto_handle_record(). libnfs 4.0's own
 * server reader is not used: it calls a NULL function for a REPLY-direction
 * message, keeps any number of fragments, checks neither the RPC version
 * nor the credential flavour, and cannot send MSG_DENIED. See design.md.
 *
 * Output: each reply is encoded here with libnfs's result encoders into a
 * buffer of its own (record mark, accepted-reply header, result: the
 * layout libnfs's rpc_send_reply() makes) and queued on the connection;
 * the queue is written with sendmsg(), many replies per call, right after
 * the calls of a wakeup are handled or at POLLOUT. No libnfs context is
 * kept per connection: libnfs 4.0's rpc_service() scans the context's 1024
 * hash buckets of calls awaiting replies on every call, 7 % of the proxy's
 * CPU in a walk answered from the cache (perf), and nothing of a server
 * context but its queue was used.
 *
 * Lifetime: a connection holds one reference for its socket and one per
 * request in flight. Closing it stops watching, closes the socket and frees
 * the unsent replies at once (never while inside a callback of its own); the
 * struct stays until the last request is freed, and replies for a closed
 * connection are dropped.
 *
 * Bounds (docs/design.md, Connection lifetime): connections are kept on a
 * list ordered by when they last sent something; one that sends nothing
 * for client_idle_timeout with nothing in flight is closed. The memory
 * connections hold (buffered input as received, arguments of calls in
 * flight, replies not yet written) is counted against client_memory_max,
 * per connection and per client host (hosts.c): at the cap a host may take
 * more only within its max-min fair share (mem_grant()), taken back from
 * the hosts holding the most by closing their connections with records
 * coming in (mem_reclaim()); a host refused waits, reading only calls with
 * small replies; and once a second the connections that made no progress
 * for CONN_STALL_MS are closed. Out of descriptors (or at
 * the client limit derived from RLIMIT_NOFILE), the connection idle the
 * longest is closed to make room, as knfsd does; when none is, the
 * listener is not watched for 100 ms doubling to 1 s.
 *
 * UDP (for the programs whose row says so, NSM today): a socket bound to
 * the listener's address and port; each datagram is one record, handled by
 * proto_handle_record() through a pseudo-connection of its own (the
 * sender's address, no stream) that lives while its requests do; replies
 * are encoded here and sent to the sender. The allow-list, the call checks
 * and the argument walkers are the TCP ones. */
#include "log.h"
#include "loop.h"
#include "procs.h"
#include "proto.h"
#include "proto_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define CONN_MAGIC	   0x434f4e4eu /* "CONN" */
#define RECORDS_PER_WAKEUP 64	       /* one busy client cannot starve the others */
#define WRITES_PER_WAKEUP  64
#define ACCEPTS_PER_WAKEUP 64
/* Input: a connection's bytes are read into one scratch buffer of the
 * server's (one loop thread) and parsed there; only what is left (a record
 * still coming in, or whole records waiting their turn) moves to a buffer
 * of the connection's own, sized to what it holds. A record coming in gets
 * room for twice what it has received, at least INBUF_MIN, at most up to
 * its end: a connection is charged what it holds, not what its record
 * marker announces. One with more than RX_SCRATCH / 4 of a record reads
 * into its own room. */
#define RX_SCRATCH (64 * 1024)
#define INBUF_MIN  4096
/* Over its share, a host's connection that holds nothing reads at most
 * this much (a call with a small reply fits) */
#define PAUSED_READ 4096
/* Replies queued and not yet written: beyond this the connection is not
 * read (a client that does not read its replies cannot make us buffer
 * without bound: at most this many replies of at most 1 MiB each, plus its
 * requests in flight). */
#define OUTQ_MAX 32
/* Largest record accepted, fragments included: what libnfs accepts, 1 MiB
 * of data plus 4 KiB of headers. */
#define CFS_MAX_RECORD (CFS_MAX_IO + 4096)
/* Over client_memory_max, a connection whose partial record or unsent
 * replies have not moved for this long may be closed (biggest first). */
#define CONN_STALL_MS 5000
/* What one call may bring at most (its largest reply, its record), and
 * what calls in flight and replies of one connection may hold: a client
 * that does not read its replies holds at most this much. */
#define CALL_MAX_HOLD (CFS_MAX_RECORD + REPLY_OVERHEAD + 1024)
#define CONN_HOLD_MAX ((size_t)OUTQ_MAX * CALL_MAX_HOLD)
/* Over the cap, calls whose replies can take more than this wait. */
#define PAUSED_REPLY_MAX (256 * 1024)
/* Back to reading every connection below this share of the cap (%). */
#define MEM_RESUME_PCT 90
/* Descriptors kept for everything but client connections: the upstream
 * pool and its reconnects, the index, data files the workers open, the
 * control socket and metrics listener and their clients. */
#define FD_RESERVE 64
/* An idle connection is closed to make room for a new one only when it
 * has sent nothing for this long (a client between two calls is not idle). */
#define EVICT_IDLE_MS 1000
/* Listener back-off when no descriptor can be had. */
#define ACCEPT_BACKOFF_MIN_MS 100
#define ACCEPT_BACKOFF_MAX_MS 1000
/* What a queued reply holds besides its data: its encode buffer is the
 * result's size hint + REPLY_SLACK (headers, and what the hint leaves out),
 * plus its queue entry. */
#define REPLY_SLACK    4096
#define REPLY_OVERHEAD (REPLY_SLACK + 256)
/* Replies handed to one sendmsg() at most. */
#define WRITE_IOVS 64
/* Datagrams whose calls are still in flight; beyond, a datagram is
 * dropped (its sender retransmits): what UDP callers can make us hold is
 * bounded without a connection to count it against. */
#define UDP_INFLIGHT_MAX 256

/* A reply waiting to be written: its record is buf[0, len), then, for a
 * READ answered from a buffer it borrows (proto_conn_send_borrowed), tail
 * bytes and the XDR padding after them; bytes [off, total) of that record
 * are not written yet. release gives the borrowed tail back, once, when
 * the record leaves the queue (written, or dropped with the connection). */
struct out_rec {
	char *buf;
	uint32_t len, off, total;
	size_t held;
	const uint8_t *tail;
	uint32_t tail_len;
	proto_release_fn release;
	void *rel_a, *rel_b;
};

/* The XDR padding after a borrowed tail. */
static const uint8_t zero_pad[4];

struct proto_conn {
	uint32_t magic;
	int refs;
	int closed;
	int busy; /* inside our own handlers: close later */
	int want_close;
	int fd;
	int inflight;
	struct proto_server *srv;
	/* input: bytes [0, inlen) of inbuf are received and not yet parsed */
	uint8_t *inbuf;
	size_t incap, inlen;
	/* fragments of the record being reassembled */
	uint8_t *frag;
	size_t fraglen;
	struct sockaddr_storage peer;
	char peer_text[INET6_ADDRSTRLEN];
	/* on the server's kick list: complete records wait in inbuf */
	int kicked;
	struct proto_conn *next_kick;
	/* on the server's activity list, least recently heard from first */
	struct proto_conn *act_prev, *act_next;
	uint64_t last_rx_ms;   /* bytes last received (accept time before) */
	uint64_t partial_ms;   /* a partial record since then (0: none) */
	uint64_t out_move_ms;  /* queued replies last moved (one written, or the first queued) */
	/* a UDP datagram's pseudo-connection: on the server's udp list
	 * until freed or until the server shuts down (closed then) */
	int udp;
	struct proto_conn *udp_prev, *udp_next;
	/* memory held, counted in srv->held: buffers, arguments of calls in
	 * flight, and queued replies (a ring, in the order they are written;
	 * the first may be partly written) */
	size_t held_in, held_req, held_out;
	struct out_rec *outq;
	unsigned out_head, out_n, out_cap;
	/* this connection's number, never reused (0: a UDP datagram's) */
	uint64_t serial;
	/* its client host (NULL for a UDP datagram's, or once closed), and
	 * the host's other connections */
	struct proto_host *host;
	struct proto_conn *host_prev, *host_next;
};

struct proto_server {
	struct loop *loop;
	const struct cfs_config *cfg;
	proto_submit_fn submit;
	void *arg;
	int fd;
	int port;
	int nclients;
	struct proto_conn **byfd;
	int nbyfd;
	struct proto_conn *kick; /* connections to parse before sleeping */
	/* activity list: act_head heard from least recently */
	struct proto_conn *act_head, *act_tail;
	struct loop_timer *tick; /* once a second: idle and memory bounds */
	uint64_t held;		 /* memory held by all connections */
	int mem_paused;		 /* over client_memory_max: no new records */
	uint64_t mem_paused_ms;
	int max_clients; /* from RLIMIT_NOFILE, FD_RESERVE kept */
	/* out of descriptors: the listener is not watched for backoff_ms */
	int fd_episode;
	int retry_after_room; /* the accept being retried follows make_room() */
	unsigned backoff_ms;
	uint64_t episode_start_ms, episode_fails, episode_evicted;
	struct loop_timer *resume;
	int ufd;		      /* UDP socket, or -1 */
	struct proto_conn *udp_conns; /* datagrams with requests in flight */
	int nudp;		      /* their number, at most UDP_INFLIGHT_MAX */
	uint64_t serials;             /* connections accepted so far */
	struct proto_hosts hosts;     /* client hosts with connections */
	unsigned reclaim_pass;
};

/* Where every connection's bytes are read and parsed (see RX_SCRATCH): a
 * connection reading points its inbuf here until inbuf_settle(). */
static uint8_t rx_scratch[RX_SCRATCH];

struct proto_counters proto_counters;

static void conn_update(struct proto_conn *c);

/* May more requests be taken from this client now? */
static int conn_can_take(const struct proto_conn *c)
{
	return c->inflight < c->srv->cfg->client_max_inflight && c->out_n < OUTQ_MAX &&
	       c->held_req + c->held_out + CALL_MAX_HOLD <= CONN_HOLD_MAX;
}

static uint64_t now_ms(const struct proto_server *srv)
{
	return srv->loop ? loop_now(srv->loop) : loop_clock_ms();
}

/* --- memory held by connections ------------------------------------------ */

static void mem_pause(struct proto_server *srv);

/* client_memory_max; 0 (a test's zeroed configuration) is no cap */
static uint64_t mem_cap(const struct proto_server *srv)
{
	return srv->cfg->client_memory_max ? srv->cfg->client_memory_max : UINT64_MAX;
}

static uint64_t mem_resume_level(const struct proto_server *srv)
{
	return mem_cap(srv) / 100 * MEM_RESUME_PCT;
}

static void held_add(struct proto_conn *c, size_t *field, size_t n)
{
	*field += n;
	c->srv->held += n;
	if (c->host) {
		c->host->held += n;
		if (field == &c->held_in)
			c->host->held_in += n;
	}
	proto_counters.client_memory = c->srv->held;
	if (!c->srv->mem_paused && c->srv->held > mem_cap(c->srv))
		mem_pause(c->srv);
}

static void held_sub(struct proto_conn *c, size_t *field, size_t n)
{
	assert(*field >= n && c->srv->held >= n);
	*field -= n;
	c->srv->held -= n;
	if (c->host) {
		assert(c->host->held >= n);
		c->host->held -= n;
		if (field == &c->held_in)
			c->host->held_in -= n;
	}
	proto_counters.client_memory = c->srv->held;
	if (c->srv->mem_paused && c->srv->held <= mem_resume_level(c->srv) && c->srv->loop)
		loop_pending(c->srv->loop); /* kick_hook reads every connection again */
}

static int inbuf_borrowed(const struct proto_conn *c)
{
	return c->inbuf == rx_scratch;
}

/* The input buffers' share: recounted after every change to them (the
 * scratch buffer is nobody's). */
static void held_in_update(struct proto_conn *c)
{
	size_t now = (inbuf_borrowed(c) ? 0 : c->incap) + c->fraglen;

	if (now > c->held_in)
		held_add(c, &c->held_in, now - c->held_in);
	else if (now < c->held_in)
		held_sub(c, &c->held_in, c->held_in - now);
}

static size_t conn_held(const struct proto_conn *c)
{
	return c->held_in + c->held_req + c->held_out;
}

/* Queues a reply record of len bytes in buf (the queue owns it now),
 * counted as held bytes. Returns 0 or -ENOMEM (buf is not taken). */
static int out_push(struct proto_conn *c, const struct out_rec *rec)
{
	if (c->out_n == c->out_cap) {
		unsigned cap = c->out_cap ? c->out_cap * 2 : 16;
		struct out_rec *b = malloc(cap * sizeof(*b));
		if (b == NULL)
			return -ENOMEM;
		for (unsigned i = 0; i < c->out_n; i++)
			b[i] = c->outq[(c->out_head + i) % c->out_cap];
		free(c->outq);
		c->outq = b;
		c->out_cap = cap;
		c->out_head = 0;
	}
	if (c->out_n == 0)
		c->out_move_ms = now_ms(c->srv);
	c->outq[(c->out_head + c->out_n) % c->out_cap] = *rec;
	c->out_n++;
	held_add(c, &c->held_out, rec->held);
	return 0;
}

/* The first queued reply is written (or dropped): it leaves the queue. */
static void out_pop(struct proto_conn *c)
{
	struct out_rec *r = &c->outq[c->out_head];

	held_sub(c, &c->held_out, r->held);
	free(r->buf);
	if (r->release)
		r->release(r->rel_a, r->rel_b);
	c->out_head = (c->out_head + 1) % c->out_cap;
	c->out_n--;
}

/* --- the activity list ------------------------------------------------------ */

static void act_unlink(struct proto_conn *c)
{
	struct proto_server *srv = c->srv;

	if (c->act_prev)
		c->act_prev->act_next = c->act_next;
	else if (srv->act_head == c)
		srv->act_head = c->act_next;
	if (c->act_next)
		c->act_next->act_prev = c->act_prev;
	else if (srv->act_tail == c)
		srv->act_tail = c->act_prev;
	c->act_prev = c->act_next = NULL;
}

/* c was just heard from: to the tail. */
static void act_touch(struct proto_conn *c, uint64_t now)
{
	struct proto_server *srv = c->srv;

	c->last_rx_ms = now;
	if (srv->act_tail == c)
		return;
	act_unlink(c);
	c->act_prev = srv->act_tail;
	if (srv->act_tail)
		srv->act_tail->act_next = c;
	else
		srv->act_head = c;
	srv->act_tail = c;
}

/* Nothing of c is pending on our side: no call in flight, no reply
 * queued. Closing it loses nothing; its client reconnects. */
static int conn_quiet(const struct proto_conn *c)
{
	return !c->busy && c->inflight == 0 && c->out_n == 0;
}

static void conn_free(struct proto_conn *c)
{
	assert(c->magic == CONN_MAGIC && c->refs == 0 && (c->closed || c->udp));
	if (c->udp && !c->closed) { /* still on its server's list */
		c->srv->nudp--;
		if (c->udp_prev)
			c->udp_prev->udp_next = c->udp_next;
		else
			c->srv->udp_conns = c->udp_next;
		if (c->udp_next)
			c->udp_next->udp_prev = c->udp_prev;
	}
	assert(!inbuf_borrowed(c));
	c->magic = 0;
	free(c->inbuf);
	free(c->frag);
	free(c->outq);
	free(c);
}

static void conn_unref(struct proto_conn *c)
{
	if (--c->refs == 0)
		conn_free(c);
}

void proto_conn_hold(struct proto_conn *c, size_t bytes)
{
	assert(c->magic == CONN_MAGIC);
	c->refs++;
	c->inflight++;
	if (!c->closed && !c->udp)
		held_add(c, &c->held_req, bytes);
}

void proto_conn_release(struct proto_conn *c, size_t bytes)
{
	assert(c->magic == CONN_MAGIC);
	c->inflight--;
	if (!c->closed && !c->udp) {
		held_sub(c, &c->held_req, bytes);
		if (!c->busy)
			conn_update(c);
	}
	conn_unref(c);
}

void proto_conn_submit(struct proto_conn *c, struct cfs_req *req)
{
	req->conn = c;
	req->held = proto_req_size(req);
	proto_conn_hold(c, req->held);
	c->srv->submit(req, c->srv->arg);
}

/* c joins the connections of its host (NULL: out of memory). */
static int conn_host_link(struct proto_conn *c)
{
	struct proto_host *h = proto_host_get(&c->srv->hosts, &c->peer);

	if (h == NULL)
		return -ENOMEM;
	c->host = h;
	c->host_prev = NULL;
	c->host_next = h->conns;
	if (h->conns)
		h->conns->host_prev = c;
	h->conns = c;
	return 0;
}

/* c leaves its host (which goes with its last connection); what c held
 * was given back before. */
static void conn_host_unlink(struct proto_conn *c)
{
	struct proto_host *h = c->host;

	if (h == NULL)
		return;
	if (c->host_prev)
		c->host_prev->host_next = c->host_next;
	else
		h->conns = c->host_next;
	if (c->host_next)
		c->host_next->host_prev = c->host_prev;
	c->host = NULL;
	c->host_prev = c->host_next = NULL;
	proto_host_put(&c->srv->hosts, h);
}

static void conn_close(struct proto_conn *c, const char *why)
{
	struct proto_server *srv = c->srv;

	if (c->closed)
		return;
	if (c->busy) {
		c->want_close = 1;
		return;
	}
	log_debug("client %s: closing connection (%s)", c->peer_text, why);
	c->closed = 1;
	loop_del(srv->loop, c->fd);
	if (c->fd < srv->nbyfd && srv->byfd[c->fd] == c)
		srv->byfd[c->fd] = NULL;
	close(c->fd);
	act_unlink(c);
	/* what it held is given back now; its requests in flight end later */
	while (c->out_n)
		out_pop(c);
	held_sub(c, &c->held_in, c->held_in);
	held_sub(c, &c->held_req, c->held_req);
	conn_host_unlink(c);
	srv->nclients--;
	proto_counters.conns_open--;
	conn_unref(c);
}

/* 1 when inbuf holds a whole fragment: parsing can go on without the
 * socket becoming readable again. */
static int has_complete(const struct proto_conn *c)
{
	if (c->inlen < 4)
		return 0;
	uint32_t len = ((uint32_t)c->inbuf[0] << 24 | (uint32_t)c->inbuf[1] << 16 |
			(uint32_t)c->inbuf[2] << 8 | c->inbuf[3]) &
		       0x7fffffffu;
	return c->inlen - 4 >= len;
}

static void conn_update(struct proto_conn *c)
{
	int ev = 0;

	if (c->closed)
		return;
	if (c->host && c->host->paused) {
		/* its host was refused memory: read into the room the buffer
		 * has (already held), or a small piece when it holds nothing;
		 * parse_input() admits what fits; records left whole wait for
		 * a retry (conn_tick()) or mem_resume() */
		if (conn_can_take(c) && (c->incap == 0 || c->inlen < c->incap))
			ev |= POLLIN;
	} else if (conn_can_take(c)) {
		ev |= POLLIN;
		if (has_complete(c) && !c->kicked) {
			/* records left by a capped wakeup: parse them before
			 * sleeping, the socket may stay quiet */
			c->kicked = 1;
			c->refs++;
			c->next_kick = c->srv->kick;
			c->srv->kick = c;
			loop_pending(c->srv->loop);
		}
	}
	if (c->out_n > 0)
		ev |= POLLOUT;
	loop_set(c->srv->loop, c->fd, ev);
}

static void conn_io(struct loop *l, int fd, int revents, void *arg);

/* Below the resume level again: every connection is read again (records
 * left buffered are parsed through the kick list). */
static void mem_resume(struct proto_server *srv)
{
	static struct log_limit lim;
	uint64_t now = now_ms(srv);

	srv->mem_paused = 0;
	proto_counters.client_memory_paused = 0;
	for (struct proto_host *h = srv->hosts.list; h; h = h->next)
		h->paused = 0;
	log_limited(&lim, CFS_LOG_INFO,
		    "clients hold %llu MiB again, below client_memory_max: reading every client "
		    "after %.1f s",
		    (unsigned long long)(srv->held >> 20), (double)(now - srv->mem_paused_ms) / 1000);
	for (struct proto_conn *c = srv->act_head; c; c = c->act_next)
		if (!c->busy)
			conn_update(c);
}

static void kick_hook(struct loop *l, void *arg)
{
	struct proto_server *srv = arg;
	struct proto_conn *list;

	if (srv->mem_paused && srv->held <= mem_resume_level(srv))
		mem_resume(srv);
	list = srv->kick;
	srv->kick = NULL;
	while (list) {
		struct proto_conn *c = list;
		list = c->next_kick;
		c->kicked = 0;
		if (!c->closed)
			conn_io(l, c->fd, POLLIN, c);
		conn_unref(c);
	}
}

/* Appends a fragment to the record being reassembled. */
static int frag_add(struct proto_conn *c, const uint8_t *p, size_t n)
{
	uint8_t *f;

	if (c->fraglen + n > CFS_MAX_RECORD)
		return -EMSGSIZE;
	f = realloc(c->frag, c->fraglen + n ? c->fraglen + n : 1);
	if (f == NULL)
		return -ENOMEM;
	memcpy(f + c->fraglen, p, n);
	c->frag = f;
	c->fraglen += n;
	held_in_update(c);
	return 0;
}

/* Over the memory cap, which whole record may still be parsed: a large
 * one (parsing gives its buffer back), or a call whose reply is small
 * enough to fit the overdraft (an eighth of the cap): interactive calls
 * are answered while the big holders wait or are closed. */
static int paused_admits(const struct proto_conn *c, const uint8_t *rec, size_t len, int last)
{
	const struct proto_server *srv = c->srv;
	size_t est;

	if (!last || c->fraglen)
		return 0; /* fragments would grow a second buffer */
	if (len > INBUF_MIN / 2)
		return 1;
	est = proto_reply_estimate(rec, len) + REPLY_OVERHEAD;
	return est <= PAUSED_REPLY_MAX && srv->held + est <= mem_cap(srv) + mem_cap(srv) / 8;
}

static void close_for_share(struct proto_conn *c, const struct proto_host *for_host);

/* h was let past the cap by its fair share: memory comes back from the
 * hosts holding more than h will, the biggest first. They stop being read
 * (paused), and their connections with a record coming in are closed,
 * oldest connection first (the client sends the call again on a new
 * one), until the total fits, the host is down to h's level, or it has
 * none left; what they have in flight or queued ends by itself. */
static void mem_reclaim(struct proto_server *srv, struct proto_host *h, uint64_t need)
{
	uint64_t level = h->held + need;
	unsigned pass = ++srv->reclaim_pass;
	struct proto_host *big;

	mem_pause(srv); /* at the cap: the hosts paused here are read again
			 * once a second, or all at mem_resume() */
	while (srv->held + need > mem_cap(srv) &&
	       (big = proto_host_biggest(&srv->hosts, level, pass)) != NULL) {
		struct proto_conn *c, *next;
		int n = 0, gone = 0;

		big->paused = 1;
		/* the list is newest first: its tail is the oldest */
		for (c = big->conns; c && c->host_next; c = c->host_next)
			;
		for (; c && srv->held + need > mem_cap(srv) && big->held > level; c = next) {
			next = c->host_prev;
			if (c->busy || c->partial_ms == 0 || c->held_in == 0)
				continue;
			gone = big->nconns == 1; /* the host goes with its last */
			close_for_share(c, h);
			n++;
			if (gone)
				break;
		}
		if (!gone && (n == 0 || big->held <= level))
			big->reclaim_pass = pass;
	}
}

/* May c take n bytes more (what a call brings, or room for a record
 * coming in)? Under the cap, yes; at it, as far as its host's fair share
 * goes (memory is taken back from the hosts above it); else its host
 * waits: its connections read only into the room they hold. */
static int mem_grant(struct proto_conn *c, uint64_t n)
{
	struct proto_server *srv = c->srv;

	if (!srv->mem_paused && srv->held + n <= mem_cap(srv))
		return 1;
	if (c->host && proto_host_fair(&srv->hosts, c->host, n, mem_cap(srv))) {
		if (srv->held + n > mem_cap(srv))
			mem_reclaim(srv, c->host, n);
		return 1;
	}
	mem_pause(srv);
	if (c->host)
		c->host->paused = 1;
	return 0;
}

/* Whether the record may be parsed now: what it brings (its reply, its
 * arguments) is granted (mem_grant()), or else paused_admits(). */
static int mem_admits(struct proto_conn *c, const uint8_t *rec, size_t len, int last)
{
	if (mem_grant(c, proto_reply_estimate(rec, len) + REPLY_OVERHEAD + len))
		return 1;
	return paused_admits(c, rec, len, last);
}

/* The buffer what is left of c's input needs: nothing for nothing; the
 * bytes themselves when whole records wait (nothing more is read before
 * they are parsed); for a record coming in, twice what has come or what
 * has come and waits in the socket, whichever is more (a fast sender's
 * record gets its buffer in one step), at least INBUF_MIN, at most up to
 * the end of its fragment. */
static size_t inbuf_want(const struct proto_conn *c)
{
	size_t end, want;
	int avail = 0;

	if (c->inlen == 0)
		return 0;
	if (c->inlen < 4)
		return INBUF_MIN;
	if (has_complete(c))
		return c->inlen;
	end = 4 + (((size_t)c->inbuf[0] << 24 | (size_t)c->inbuf[1] << 16 |
	            (size_t)c->inbuf[2] << 8 | c->inbuf[3]) &
	           0x7fffffffu);
	want = 2 * c->inlen > INBUF_MIN ? 2 * c->inlen : INBUF_MIN;
	if (want < end && ioctl(c->fd, FIONREAD, &avail) == 0 && avail > 0 &&
	    c->inlen + (size_t)avail > want)
		want = c->inlen + (size_t)avail;
	return want < end ? want : end;
}

/* Before a read: a connection holding little (its bytes, if any, move
 * there) reads into the scratch buffer, one with much of a record into its
 * own room. A connection of a paused host that holds bytes only fills the
 * room it has; one that holds none reads PAUSED_READ at most. */
static void inbuf_borrow(struct proto_conn *c)
{
	int paused = c->host && c->host->paused;

	if (inbuf_borrowed(c) || c->inlen > RX_SCRATCH / 4 || (paused && c->inlen > 0))
		return;
	if (c->inlen)
		memcpy(rx_scratch, c->inbuf, c->inlen);
	free(c->inbuf);
	c->inbuf = rx_scratch;
	c->incap = paused ? PAUSED_READ : RX_SCRATCH;
	held_in_update(c);
}

/* After parsing (rc: its result; nonzero, the connection closes and its
 * input is dropped): what is left, inbuf[0, inlen), goes to a buffer of
 * c's own of inbuf_want() bytes, as far as mem_grant() allows growing it
 * beyond what it holds; nothing for nothing. The scratch buffer is free
 * again. Returns 0 or -ENOMEM. */
static int inbuf_settle(struct proto_conn *c, int rc)
{
	size_t have = inbuf_borrowed(c) ? 0 : c->incap, want, keep;
	uint8_t *b;

	if (rc != 0)
		c->inlen = 0;
	want = inbuf_want(c);
	keep = have > c->inlen ? have : c->inlen; /* what it holds anyway */
	if (want > keep && !mem_grant(c, want - keep))
		want = keep;
	if (want == 0) {
		if (!inbuf_borrowed(c))
			free(c->inbuf);
		c->inbuf = NULL;
		c->incap = 0;
	} else if (inbuf_borrowed(c)) {
		b = malloc(want);
		if (b == NULL) {
			c->inbuf = NULL;
			c->incap = c->inlen = 0;
			held_in_update(c);
			return -ENOMEM;
		}
		memcpy(b, rx_scratch, c->inlen);
		c->inbuf = b;
		c->incap = want;
	} else if (want > c->incap || want < c->incap / 2) {
		/* grows for a record coming in, shrinks after one */
		b = realloc(c->inbuf, want);
		if (b == NULL)
			return want > c->incap ? -ENOMEM : 0;
		c->inbuf = b;
		c->incap = want;
	}
	held_in_update(c);
	return 0;
}

/* Parses complete records out of inbuf. Returns 0, or a negative errno
 * to close (-EMSGSIZE: a record over CFS_MAX_RECORD; -ENOMEM; or
 * proto_handle_record()'s). */
static int parse_input(struct proto_conn *c, int *records)
{
	size_t off = 0;
	int rc = 0;

	while (c->inlen - off >= 4 && !c->want_close) {
		const uint8_t *m = c->inbuf + off;
		uint32_t marker = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
				  (uint32_t)m[2] << 8 | m[3];
		size_t len = marker & 0x7fffffffu;
		int last = (marker & 0x80000000u) != 0;

		if (len + c->fraglen > CFS_MAX_RECORD) {
			static struct log_limit lim;
			log_limited(&lim, CFS_LOG_WARN, "client %s: record of %zu bytes exceeds %d; closing",
				    c->peer_text, len + c->fraglen, CFS_MAX_RECORD);
			proto_counters.conns_dropped_bad++;
			rc = -EMSGSIZE;
			break;
		}
		if (c->inlen - off - 4 < len)
			break; /* incomplete: inbuf_settle() makes room */
		if (*records >= RECORDS_PER_WAKEUP || !conn_can_take(c))
			break; /* come back on the next wakeup */
		if (!mem_admits(c, m + 4, len, last))
			break; /* waits for mem_resume() */
		off += 4 + len;
		proto_counters.bytes_in += 4 + len;
		if (!last || c->fraglen) {
			if (frag_add(c, m + 4, len) != 0) {
				rc = -1;
				break;
			}
			if (!last)
				continue;
			rc = proto_handle_record(c, c->frag, c->fraglen);
			free(c->frag);
			c->frag = NULL;
			c->fraglen = 0;
			held_in_update(c);
		} else {
			rc = proto_handle_record(c, m + 4, len);
		}
		(*records)++;
		if (rc != 0)
			break;
	}
	if (off) {
		memmove(c->inbuf, c->inbuf + off, c->inlen - off);
		c->inlen -= off;
	}
	if (inbuf_settle(c, rc) != 0 && rc == 0)
		rc = -ENOMEM;
	/* since when a record has been coming in (records waiting whole
	 * are ours to parse, not the client's to finish) */
	if ((c->inlen > 0 && !has_complete(c)) || c->fraglen > 0) {
		if (c->partial_ms == 0)
			c->partial_ms = now_ms(c->srv);
	} else {
		c->partial_ms = 0;
	}
	return rc;
}

/* Reads what the socket has (bounded) and handles complete records.
 * Returns 0, or a negative errno to close (-ECONNRESET: the peer closed
 * or hung up; recv()'s error; parse_input()'s). */
static int conn_read(struct proto_conn *c, int hup)
{
	int records = 0, rc = 0;

	for (int round = 0; round < 16; round++) {
		ssize_t n;
		size_t space;

		inbuf_borrow(c);
		space = c->incap - c->inlen;
		if (space == 0) {
			/* a full buffer of unparsed, capped records, or all the
			 * room a paused host's record has; a peer that hung up
			 * would be reported again at once (level triggered):
			 * nothing more can come, and nothing can be written to it */
			rc = hup ? -ECONNRESET : 0;
			break;
		}
		n = recv(c->fd, c->inbuf + c->inlen, space, MSG_DONTWAIT);
		if (n == 0) {
			rc = -ECONNRESET; /* peer closed */
			break;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				rc = -errno;
			break;
		}
		act_touch(c, now_ms(c->srv));
		c->inlen += (size_t)n;
		rc = parse_input(c, &records); /* settles the buffer */
		if (rc != 0)
			return rc;
		if (records >= RECORDS_PER_WAKEUP || !conn_can_take(c))
			break;
		if ((size_t)n < space)
			break; /* drained: epoll says when more arrives */
	}
	/* a borrowed scratch buffer read nothing: its bytes go back */
	if (inbuf_settle(c, rc) != 0 && rc == 0)
		rc = -ENOMEM;
	return rc;
}

/* The unwritten pieces of r (head, borrowed tail, padding) as up to 3
 * iovecs at iov; their bytes are added to *want. */
static unsigned rec_iovs(const struct out_rec *r, struct iovec *iov, size_t *want)
{
	const void *seg[3] = {r->buf, r->tail, zero_pad};
	uint32_t segl[3] = {r->len, r->tail_len, r->total - r->len - r->tail_len};
	uint32_t at = 0;
	unsigned n = 0;

	for (int s = 0; s < 3; at += segl[s], s++) {
		if (segl[s] == 0 || r->off >= at + segl[s])
			continue; /* nothing there, or written */
		uint32_t skip = r->off > at ? r->off - at : 0;
		iov[n].iov_base = (char *)seg[s] + skip;
		iov[n].iov_len = segl[s] - skip;
		*want += iov[n].iov_len;
		n++;
	}
	return n;
}

/* Writes queued replies now, as far as the socket takes them: a reply
 * normally goes out in the pass that made it, without waiting for the
 * next POLLOUT (which would cost an epoll_ctl and a wakeup per reply).
 * Returns 0, or -EIO when writing failed (close the connection). */
/* Writes queued replies until the queue is empty, the socket is full
 * (POLLOUT then) or WRITES_PER_WAKEUP sendmsg() calls were made. 0, or
 * -EIO when the socket failed. */
static int conn_flush(struct proto_conn *c)
{
	for (int i = 0; i < WRITES_PER_WAKEUP && c->out_n > 0; i++) {
		struct iovec iov[WRITE_IOVS];
		struct msghdr mh;
		size_t want = 0;
		unsigned n = 0;
		ssize_t w;

		for (unsigned k = 0; n + 3 <= WRITE_IOVS && k < c->out_n; k++)
			n += rec_iovs(&c->outq[(c->out_head + k) % c->out_cap], iov + n, &want);
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = n;
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -EIO;
		c->out_move_ms = now_ms(c->srv);
		for (size_t left = (size_t)w; left > 0;) {
			struct out_rec *r = &c->outq[c->out_head];
			size_t part = r->total - r->off;

			if (left < part) {
				r->off += (uint32_t)left;
				break;
			}
			left -= part;
			out_pop(c);
		}
		if ((size_t)w < want)
			break; /* the socket is full: wait for POLLOUT */
	}
	return 0;
}

static void conn_io(struct loop *l, int fd, int revents, void *arg)
{
	struct proto_conn *c = arg;
	const char *why = NULL;

	(void)l;
	(void)fd;
	assert(c->magic == CONN_MAGIC);
	c->refs++; /* hold c across callbacks that may release requests */
	c->busy = 1;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		/* parse what an earlier, capped wakeup left, then read more */
		int records = 0;
		if (parse_input(c, &records) != 0 ||
		    conn_read(c, (revents & (POLLHUP | POLLERR)) != 0) != 0)
			why = "closed or bad record";
	}
	/* what the calls just read produced, and what POLLOUT allows */
	if (why == NULL && !c->want_close && conn_flush(c) != 0)
		why = "write failed";
	c->busy = 0;
	if (why || c->want_close)
		conn_close(c, why ? why : "reply encoding failed");
	else
		conn_update(c);
	conn_unref(c);
}

static socklen_t peer_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Encodes a reply record: a record mark (last fragment), then "xid,
 * REPLY, MSG_ACCEPTED, null verifier, SUCCESS" and the result, as libnfs's
 * rpc_send_reply() lays it out, so that the error encoders of rpc.c, which
 * step back over that accepted-reply header, work on it. 0 with the
 * malloc()ed record in *out (*len bytes, *cap allocated), -ENOMEM, or
 * -EIO when the result does not encode in hint + REPLY_SLACK bytes. */
static int encode_reply(uint32_t xid, void *res, zdrproc_t enc, int hint, char **out, uint32_t *len,
                        size_t *cap)
{
	uint32_t head[7] = {0, xid, 1 /* REPLY */, MSG_ACCEPTED, AUTH_NONE, 0, SUCCESS};
	uint32_t mark;
	int ok = 1;
	ZDR z;

	*cap = (size_t)(hint > 0 ? hint : 0) + REPLY_SLACK;
	*out = malloc(*cap);
	if (*out == NULL)
		return -ENOMEM;
	zdrmem_create(&z, *out, (uint32_t)*cap, ZDR_ENCODE);
	for (int i = 0; i < 7 && ok; i++)
		ok = zdr_u_int(&z, &head[i]);
	ok = ok && enc(&z, res);
	*len = zdr_getpos(&z);
	zdr_destroy(&z);
	if (!ok || *len < 4 + 12) { /* mark, xid, REPLY, reply_stat at least */
		free(*out);
		*out = NULL;
		return -EIO;
	}
	mark = htonl(0x80000000u | (*len - 4));
	memcpy(*out, &mark, 4);
	return 0;
}

/* A reply datagram: the record without its mark. */
static int udp_send(struct proto_conn *c, uint32_t xid, void *res, zdrproc_t enc, int hint)
{
	char *buf;
	uint32_t len;
	size_t cap;
	int rc = encode_reply(xid, res, enc, hint, &buf, &len, &cap);

	if (rc == -ENOMEM)
		return 0; /* the client retransmits */
	if (rc || len - 4 > 65507) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_ERR, "client %s: cannot encode a UDP reply", c->peer_text);
		free(buf);
		return -EIO;
	}
	if (sendto(c->srv->ufd, buf + 4, len - 4, 0, (const struct sockaddr *)&c->peer,
	           peer_len(&c->peer)) < 0) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_WARN, "client %s: UDP reply: %s", c->peer_text,
		            strerror(errno));
	} else {
		proto_counters.replies++;
		proto_counters.bytes_out += len - 4;
	}
	free(buf);
	return 0;
}

/* Queues the encoded record buf[0, len) (cap allocated) with the borrowed
 * tail in *t (none: t->tail NULL) and writes what the socket takes now.
 * Takes buf; t's release is called when the record leaves the queue, or
 * here when it cannot be queued. */
static int conn_queue(struct proto_conn *c, char *buf, uint32_t len, size_t cap, struct out_rec *t,
                      uint64_t bytes)
{
	t->buf = buf;
	t->len = len;
	t->off = 0;
	t->total = len + t->tail_len + ((4 - t->tail_len % 4) % 4);
	t->held = cap + t->tail_len + (REPLY_OVERHEAD - REPLY_SLACK);
	if (t->tail) {
		uint32_t mark = htonl(0x80000000u | (t->total - 4));
		memcpy(buf, &mark, 4);
	}
	if (out_push(c, t) != 0) {
		/* its memory would go uncounted: the client reconnects */
		free(buf);
		if (t->release)
			t->release(t->rel_a, t->rel_b);
		conn_close(c, "out of memory");
		return -ENOMEM;
	}
	proto_counters.replies++;
	proto_counters.bytes_out += bytes;
	if (!c->busy) {
		if (conn_flush(c) != 0) {
			conn_close(c, "write failed");
			return -EIO;
		}
		conn_update(c);
	}
	return 0;
}

int proto_conn_send(struct proto_conn *c, uint32_t xid, void *res, zdrproc_t enc, int hint)
{
	struct out_rec t = {0};
	char *buf;
	uint32_t len;
	size_t cap;
	int rc;

	assert(c->magic == CONN_MAGIC);
	if (c->closed)
		return 0;
	if (c->udp)
		return udp_send(c, xid, res, enc, hint);
	rc = encode_reply(xid, res, enc, hint, &buf, &len, &cap);
	if (rc == -EIO) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_ERR, "client %s: cannot encode reply", c->peer_text);
		conn_close(c, "reply encoding failed");
		return -EIO;
	}
	if (rc) {
		conn_close(c, "out of memory");
		return -ENOMEM;
	}
	return conn_queue(c, buf, len, cap, &t, (uint64_t)hint);
}

int proto_conn_send_borrowed(struct proto_conn *c, uint32_t xid, void *res, zdrproc_t enc,
                             const uint8_t *tail, uint32_t tail_len, proto_release_fn release,
                             void *a, void *b)
{
	struct out_rec t = {.tail = tail, .tail_len = tail_len, .release = release, .rel_a = a,
	                    .rel_b = b};
	char *buf;
	uint32_t len, zero = 0;
	size_t cap;
	int rc;

	assert(c->magic == CONN_MAGIC && !c->udp);
	if (c->closed) {
		release(a, b);
		return 0;
	}
	rc = encode_reply(xid, res, enc, 0, &buf, &len, &cap);
	/* the encoding ends in the tail's length, encoded as 0: say tail_len */
	if (rc == 0 && (len < 4 + 28 || memcmp(buf + len - 4, &zero, 4) != 0)) {
		free(buf);
		rc = -EIO;
	}
	if (rc) {
		static struct log_limit lim;
		release(a, b);
		log_limited(&lim, CFS_LOG_ERR, "client %s: cannot encode reply", c->peer_text);
		conn_close(c, rc == -EIO ? "reply encoding failed" : "out of memory");
		return rc;
	}
	zero = htonl(tail_len);
	memcpy(buf + len - 4, &zero, 4);
	return conn_queue(c, buf, len, cap, &t, (uint64_t)tail_len + 512);
}

int proto_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->ss_family == AF_INET6 &&
	       memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
	              &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

const struct sockaddr_storage *proto_conn_peer(const struct proto_conn *c)
{
	return &c->peer;
}

int proto_conn_privileged(const struct proto_conn *c)
{
	in_port_t port = c->peer.ss_family == AF_INET6
				 ? ((const struct sockaddr_in6 *)&c->peer)->sin6_port
				 : ((const struct sockaddr_in *)&c->peer)->sin_port;

	return ntohs(port) < 1024;
}

int proto_conn_udp(const struct proto_conn *c)
{
	return c->udp;
}

const struct cfs_config *c_cfg(const struct proto_conn *c)
{
	return c->srv->cfg;
}

int proto_req_alive(const struct cfs_req *req)
{
	return req->conn && !req->conn->closed;
}

const char *proto_req_peer(const struct cfs_req *req)
{
	return req->conn ? req->conn->peer_text : "local";
}

const struct sockaddr_storage *proto_req_peer_addr(const struct cfs_req *req)
{
	return req->conn ? &req->conn->peer : NULL;
}

uint64_t proto_req_conn_serial(const struct cfs_req *req)
{
	return req->conn ? req->conn->serial : 0;
}

static int byfd_put(struct proto_server *srv, int fd, struct proto_conn *c)
{
	if (fd >= srv->nbyfd) {
		int n = srv->nbyfd ? srv->nbyfd : 64;
		while (n <= fd)
			n *= 2;
		struct proto_conn **b = realloc(srv->byfd, (size_t)n * sizeof(*b));
		if (b == NULL)
			return -ENOMEM;
		memset(b + srv->nbyfd, 0, (size_t)(n - srv->nbyfd) * sizeof(*b));
		srv->byfd = b;
		srv->nbyfd = n;
	}
	srv->byfd[fd] = c;
	return 0;
}

static void peer_to_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (getnameinfo((const struct sockaddr *)ss, sizeof(*ss), buf, (socklen_t)len, NULL, 0,
			NI_NUMERICHOST) != 0)
		snprintf(buf, len, "?");
	if (strncmp(buf, "::ffff:", 7) == 0)
		memmove(buf, buf + 7, strlen(buf + 7) + 1);
}

static void accept_one(struct proto_server *srv, int fd, struct sockaddr_storage *ss)
{
	struct proto_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (c == NULL) {
		close(fd);
		return;
	}
	c->magic = CONN_MAGIC;
	c->refs = 1;
	c->serial = ++srv->serials;
	c->fd = fd;
	c->srv = srv;
	c->peer = *ss;
	peer_to_text(ss, c->peer_text, sizeof(c->peer_text));
	if (!config_allowed(srv->cfg, ss)) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_WARN, "client %s: refused (not in allow)", c->peer_text);
		proto_counters.conns_refused++;
		close(fd);
		free(c);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* no input buffer until a record is left over (inbuf_settle()) */
	if (conn_host_link(c) != 0 || byfd_put(srv, fd, c) != 0 ||
	    loop_add(srv->loop, fd, POLLIN, conn_io, c) != 0) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_ERR, "client %s: cannot set up the connection",
			    c->peer_text);
		close(fd);
		if (fd < srv->nbyfd && srv->byfd[fd] == c)
			srv->byfd[fd] = NULL;
		conn_host_unlink(c);
		free(c);
		return;
	}
	srv->nclients++;
	proto_counters.conns_accepted++;
	proto_counters.conns_open++;
	act_touch(c, now_ms(srv));
	log_debug("client %s: connected", c->peer_text);
}

/* --- out of descriptors ------------------------------------------------------ */

/* Closes the connection heard from least recently if it is quiet and has
 * sent nothing for EVICT_IDLE_MS (knfsd drops its oldest connection when
 * it has too many). Returns 1 when one was closed. */
static int make_room(struct proto_server *srv, uint64_t now)
{
	int scanned = 0;

	for (struct proto_conn *c = srv->act_head; c && scanned < 64;
	     c = c->act_next, scanned++) {
		if (now - c->last_rx_ms < EVICT_IDLE_MS)
			return 0; /* the rest were heard from even more recently */
		if (conn_quiet(c)) {
			proto_counters.conns_evicted++;
			srv->episode_evicted++;
			conn_close(c, "idle, closed to make room for a new client");
			return 1;
		}
	}
	return 0;
}

static void listen_resume(struct loop *l, void *arg)
{
	struct proto_server *srv = arg;

	srv->resume = NULL;
	loop_set(l, srv->fd, POLLIN);
}

/* One line when an episode begins, one when it ends (with what it cost):
 * a descriptor shortage lasting minutes is two lines, not millions. */
static void episode_begin(struct proto_server *srv, const char *why, uint64_t now)
{
	static struct log_limit lim;

	if (srv->fd_episode)
		return;
	srv->fd_episode = 1;
	srv->episode_start_ms = now;
	srv->episode_fails = srv->episode_evicted = 0;
	srv->backoff_ms = 0;
	proto_counters.accept_fd_episodes++;
	log_limited(&lim, CFS_LOG_WARN,
		    "accept: %s (%d clients connected): closing idle clients to make room, "
		    "else not accepting for %d ms to %d ms at a time",
		    why, srv->nclients, ACCEPT_BACKOFF_MIN_MS, ACCEPT_BACKOFF_MAX_MS);
}

static void episode_end(struct proto_server *srv, uint64_t now)
{
	static struct log_limit lim;

	if (!srv->fd_episode)
		return;
	srv->fd_episode = 0;
	log_limited(&lim, CFS_LOG_INFO,
		    "accept: descriptors for new clients again after %.1f s: %llu accepts "
		    "waited, %llu idle clients closed to make room",
		    (double)(now - srv->episode_start_ms) / 1000,
		    (unsigned long long)srv->episode_fails, (unsigned long long)srv->episode_evicted);
}

/* No descriptor and nothing to close: stop watching the listener (new
 * clients wait in its backlog) for a back-off that doubles up to 1 s. */
static void listen_pause(struct proto_server *srv)
{
	if (srv->resume)
		return;
	srv->backoff_ms = srv->backoff_ms ? srv->backoff_ms * 2 : ACCEPT_BACKOFF_MIN_MS;
	if (srv->backoff_ms > ACCEPT_BACKOFF_MAX_MS)
		srv->backoff_ms = ACCEPT_BACKOFF_MAX_MS;
	proto_counters.accept_pauses++;
	srv->resume = loop_timer_add(srv->loop, srv->backoff_ms, 0, listen_resume, srv);
	if (srv->resume)
		loop_set(srv->loop, srv->fd, 0);
}

static int max_clients_of_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > INT_MAX)
		return INT_MAX;
	if (rl.rlim_cur > 2 * FD_RESERVE)
		return (int)rl.rlim_cur - FD_RESERVE;
	return (int)rl.rlim_cur / 2;
}

static void listen_io(struct loop *l, int lfd, int revents, void *arg)
{
	struct proto_server *srv = arg;
	uint64_t now = loop_now(l);

	(void)revents;
	for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd;

		int room_made = 0;

		if (srv->nclients >= srv->max_clients) {
			/* keep FD_RESERVE descriptors for the upstream and the
			 * cache: a client waits rather than the daemon failing */
			episode_begin(srv, "client limit reached (RLIMIT_NOFILE)", now);
			if (!make_room(srv, now)) {
				srv->episode_fails++;
				proto_counters.accept_fd_waits++;
				listen_pause(srv);
				return;
			}
			room_made = 1;
		}
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = errno;

			if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
				episode_begin(srv, strerror(err), now);
				srv->episode_fails++;
				proto_counters.accept_fd_waits++;
				if (make_room(srv, now)) {
					/* the retry takes the descriptor just freed */
					srv->retry_after_room = 1;
					continue;
				}
				listen_pause(srv);
				return;
			}
			if (err == ECONNABORTED || err == EINTR)
				continue;
			if (err == EAGAIN) {
				episode_end(srv, now); /* nobody waits for a descriptor */
			} else {
				static struct log_limit lim;
				log_limited(&lim, CFS_LOG_WARN, "accept: %s", strerror(err));
			}
			return;
		}
		/* a client got a descriptor without one being freed for it:
		 * the shortage is over */
		if (!room_made && !srv->retry_after_room)
			episode_end(srv, now);
		srv->retry_after_room = 0;
		accept_one(srv, fd, &ss);
	}
}

/* --- once a second: idle connections, memory ---------------------------------- */

static void mem_pause(struct proto_server *srv)
{
	static struct log_limit lim;

	if (srv->mem_paused)
		return;
	srv->mem_paused = 1;
	srv->mem_paused_ms = now_ms(srv);
	proto_counters.client_memory_pauses++;
	proto_counters.client_memory_paused = 1;
	log_limited(&lim, CFS_LOG_WARN,
		    "clients hold %llu MiB, at client_memory_max (%llu MiB): hosts over their "
		    "share get only calls with small replies read until clients hold %d%% of it; "
		    "connections whose records or replies do not move for %d s are closed",
		    (unsigned long long)(srv->held >> 20), (unsigned long long)(mem_cap(srv) >> 20),
		    MEM_RESUME_PCT, CONN_STALL_MS / 1000);
}

/* c's host holds more than the host h that needs memory at the cap: c,
 * with a record coming in, is closed (mem_reclaim()). */
static void close_for_share(struct proto_conn *c, const struct proto_host *h)
{
	static struct log_limit lim;

	proto_counters.conns_share_closed++;
	log_limited(&lim, CFS_LOG_WARN,
		    "client %s: closed: its host holds %llu MiB, more than its share of "
		    "client_memory_max (%d hosts, this one with %d connections), while a host "
		    "holding %llu KiB needs memory",
		    c->peer_text, (unsigned long long)(c->host->held >> 20), c->srv->hosts.n,
		    c->host->nconns, (unsigned long long)(h->held >> 10));
	conn_close(c, "over its host's share of client_memory_max");
}

/* A record c stopped sending (nothing came for CONN_STALL_MS and nothing
 * waits unread in its socket: the pause is not what holds it up), or one
 * it trickles for ages. */
static int partial_stalled(const struct proto_conn *c, uint64_t now)
{
	int avail = 0;

	if (c->busy || c->partial_ms == 0)
		return 0;
	if (now - c->partial_ms >= 6 * CONN_STALL_MS)
		return 1;
	return now - c->last_rx_ms >= CONN_STALL_MS && ioctl(c->fd, FIONREAD, &avail) == 0 &&
	       avail == 0;
}

/* Replies c does not read. */
static int replies_stalled(const struct proto_conn *c, uint64_t now)
{
	return !c->busy && c->out_n > 0 && now - c->out_move_ms >= CONN_STALL_MS;
}

static void close_for_memory(struct proto_conn *c, const char *what)
{
	static struct log_limit lim;

	proto_counters.conns_memory_closed++;
	log_limited(&lim, CFS_LOG_WARN,
		    "client %s: closed: holds %zu KiB (%s for %d s) while clients are over "
		    "client_memory_max",
		    c->peer_text, conn_held(c) >> 10, what, CONN_STALL_MS / 1000);
	conn_close(c, "over client_memory_max");
}

/* Over the cap: every connection with a stalled partial record is closed
 * (nothing a working client does looks like that), then the biggest of
 * those that do not read their replies until the rest fit under the
 * resume level. What is in flight ends by itself. */
static void close_stalled(struct proto_server *srv, uint64_t now)
{
	struct proto_conn *c = srv->act_head, *next;

	for (; c; c = next) {
		next = c->act_next;
		if (partial_stalled(c, now))
			close_for_memory(c, "a record that did not move");
	}
	for (int n = 0; n < 4096 && srv->held > mem_resume_level(srv); n++) {
		struct proto_conn *worst = NULL;

		for (c = srv->act_head; c; c = c->act_next)
			if (replies_stalled(c, now) && (worst == NULL || conn_held(c) > conn_held(worst)))
				worst = c;
		if (worst == NULL)
			return;
		close_for_memory(worst, "replies it did not read");
	}
}

static void conn_tick(struct loop *l, void *arg)
{
	struct proto_server *srv = arg;
	uint64_t now = loop_now(l);
	uint64_t idle = (uint64_t)srv->cfg->client_idle_timeout * 1000;

	if (idle) {
		struct proto_conn *c = srv->act_head, *next;

		for (; c && now - c->last_rx_ms >= idle; c = next) {
			next = c->act_next;
			if (!conn_quiet(c))
				continue; /* waits for its calls; not idle */
			proto_counters.conns_idle_closed++;
			conn_close(c, "idle");
		}
	}
	if (srv->mem_paused)
		close_stalled(srv, now);
	/* hosts refused memory try again (each is refused again while it is
	 * over its share) */
	for (struct proto_host *h = srv->hosts.list; h; h = h->next) {
		if (!h->paused)
			continue;
		h->paused = 0;
		for (struct proto_conn *c = h->conns; c; c = c->host_next)
			if (!c->busy)
				conn_update(c);
	}
}

/* --- UDP ------------------------------------------------------------------- */

static void udp_datagram(struct proto_server *srv, const uint8_t *buf, size_t len,
                         const struct sockaddr_storage *ss)
{
	struct proto_conn *c;

	if (srv->nudp >= UDP_INFLIGHT_MAX) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_WARN,
		            "UDP: %d calls in flight already; a datagram dropped (its sender retransmits)",
		            srv->nudp);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return; /* the sender retransmits */
	c->magic = CONN_MAGIC;
	c->refs = 1;
	c->udp = 1;
	c->fd = -1;
	c->srv = srv;
	c->peer = *ss;
	peer_to_text(ss, c->peer_text, sizeof(c->peer_text));
	if (!config_allowed(srv->cfg, ss)) {
		static struct log_limit lim;
		log_limited(&lim, CFS_LOG_WARN, "client %s: UDP datagram refused (not in allow)",
		            c->peer_text);
		proto_counters.conns_refused++;
		free(c);
		return;
	}
	c->udp_next = srv->udp_conns;
	if (c->udp_next)
		c->udp_next->udp_prev = c;
	srv->udp_conns = c;
	srv->nudp++;
	proto_counters.bytes_in += len;
	/* not a call, or too short to answer: nothing to send back */
	(void)proto_handle_record(c, buf, len);
	conn_unref(c); /* its requests in flight hold it */
}

static void udp_io(struct loop *l, int fd, int revents, void *arg)
{
	struct proto_server *srv = arg;
	static uint8_t buf[65536]; /* one loop thread; the record is copied by decode */

	(void)l;
	(void)revents;
	for (int i = 0; i < RECORDS_PER_WAKEUP; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ss, &sl);

		if (n < 0)
			return; /* EAGAIN, or an ICMP error of an earlier reply */
		udp_datagram(srv, buf, (size_t)n, &ss);
	}
}

/* The UDP socket on the listener's address and port. 0 or -errno. */
static int udp_open(struct proto_server *srv, const struct addrinfo *ai, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int fd;

	memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)srv->port);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)srv->port);
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, ai->ai_addrlen) != 0) {
		int rc = -errno;

		snprintf(err, errlen, "cannot listen on UDP %s (port %d): %s", srv->cfg->listen,
		         srv->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	srv->ufd = fd;
	return 0;
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT" */
static int parse_listen(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *colon;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (end == NULL || end[1] != ':')
			return -EINVAL;
		if ((size_t)(end - s - 1) >= hl)
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || (size_t)(colon - s) >= hl)
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = 0;
	}
	if (strlen(colon + 1) == 0 || strlen(colon + 1) >= pl)
		return -EINVAL;
	strcpy(port, colon + 1);
	return 0;
}

int proto_listen(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit, void *arg,
		 struct proto_server **out, char *err, size_t errlen)
{
	char host[256], port[32];
	struct addrinfo hints, *ai = NULL;
	struct proto_server *srv;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1, rc;

	if (parse_listen(cfg->listen, host, sizeof(host), port, sizeof(port)) != 0) {
		snprintf(err, errlen, "key 'listen': '%s' is not ADDR:PORT", cfg->listen);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "key 'listen': cannot use '%s': %s", cfg->listen,
			 gai_strerror(rc));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 256) != 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", cfg->listen, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return rc;
	}
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		close(fd);
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	srv->ufd = -1;
	srv->loop = l;
	srv->cfg = cfg;
	srv->submit = submit;
	srv->arg = arg;
	srv->fd = fd;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	srv->max_clients = max_clients_of_limit();
	rc = proc_any_udp() ? udp_open(srv, ai, err, errlen) : 0;
	freeaddrinfo(ai);
	if (rc) {
		close(fd);
		free(srv);
		return rc;
	}
	rc = loop_add(l, fd, POLLIN, listen_io, srv);
	if (rc == 0 && srv->ufd >= 0)
		rc = loop_add(l, srv->ufd, POLLIN, udp_io, srv);
	if (rc == 0)
		rc = loop_before_sleep(l, kick_hook, srv);
	if (rc == 0 && (srv->tick = loop_timer_add(l, 1000, 1000, conn_tick, srv)) == NULL)
		rc = -ENOMEM;
	if (rc) {
		snprintf(err, errlen, "cannot watch the listener: %s", strerror(-rc));
		loop_del(l, fd);
		if (srv->ufd >= 0) {
			loop_del(l, srv->ufd);
			close(srv->ufd);
		}
		loop_before_sleep_del(l, kick_hook, srv);
		close(fd);
		free(srv);
		return rc;
	}
	if (srv->max_clients < INT_MAX)
		log_info("clients: at most %d connections (RLIMIT_NOFILE less %d descriptors kept "
			 "for the upstream and the cache)",
			 srv->max_clients, FD_RESERVE);
	*out = srv;
	return 0;
}

int proto_port(const struct proto_server *srv)
{
	return srv->port;
}

int proto_client_count(const struct proto_server *srv)
{
	return srv->nclients;
}

void proto_shutdown(struct proto_server *srv)
{
	if (srv == NULL)
		return;
	loop_del(srv->loop, srv->fd);
	loop_before_sleep_del(srv->loop, kick_hook, srv);
	loop_timer_cancel(srv->loop, srv->tick);
	loop_timer_cancel(srv->loop, srv->resume);
	close(srv->fd);
	if (srv->ufd >= 0) {
		loop_del(srv->loop, srv->ufd);
		close(srv->ufd);
	}
	/* datagrams still in flight: their replies are dropped */
	for (struct proto_conn *c = srv->udp_conns; c; c = c->udp_next)
		c->closed = 1;
	for (int fd = 0; fd < srv->nbyfd; fd++)
		if (srv->byfd[fd])
			conn_close(srv->byfd[fd], "shutdown");
	while (srv->kick) {
		struct proto_conn *c = srv->kick;
		srv->kick = c->next_kick;
		c->kicked = 0;
		conn_unref(c);
	}
	drc_clear();
	free(srv->byfd);
	free(srv);
}

/* --- the fuzz and test entry point ------------------------------------------ */

/* A server for one test exchange, on the caller's stack: no listener. */
static void test_server(struct proto_server *srv, struct loop *l, const struct cfs_config *cfg,
                        proto_submit_fn submit, void *arg)
{
	memset(srv, 0, sizeof(*srv));
	srv->loop = l;
	srv->cfg = cfg;
	srv->submit = submit;
	srv->arg = arg;
	srv->fd = -1;
	srv->ufd = -1;
	srv->max_clients = INT_MAX;
}

int proto_test_feed(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
		    void *arg, const uint8_t *data, size_t len)
{
	return proto_test_exchange(l, cfg, submit, arg, data, len, NULL, 0, NULL);
}

int proto_test_exchange(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
                        void *arg, const uint8_t *data, size_t len, uint8_t *out, size_t outcap,
                        size_t *outlen)
{
	struct proto_server srv;
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct proto_conn *c;
	char junk[65536];
	size_t off = 0;
	int sp[2], shut = 0;

	if (outlen)
		*outlen = 0;
	test_server(&srv, l, cfg, submit, arg);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) != 0)
		return -errno;
	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	accept_one(&srv, sp[0], &ss);
	for (int round = 0; round < 100000; round++) {
		int progress = 0;
		ssize_t n;

		if (off < len) {
			n = write(sp[1], data + off, len - off);
			if (n > 0) {
				off += (size_t)n;
				progress = 1;
			}
		}
		if (off == len && !shut) {
			shutdown(sp[1], SHUT_WR);
			shut = 1;
		}
		c = sp[0] < srv.nbyfd ? srv.byfd[sp[0]] : NULL;
		if (c == NULL)
			break; /* closed */
		conn_io(l, sp[0], POLLIN | POLLOUT, c);
		kick_hook(l, &srv);
		while ((n = read(sp[1], junk, sizeof(junk))) > 0) {
			size_t room = outlen && *outlen < outcap ? outcap - *outlen : 0;
			if (room) {
				memcpy(out + *outlen, junk, (size_t)n < room ? (size_t)n : room);
				*outlen += (size_t)n < room ? (size_t)n : room;
			}
			progress = 1;
		}
		if (!progress && shut)
			break;
	}
	c = sp[0] < srv.nbyfd ? srv.byfd[sp[0]] : NULL;
	if (c)
		conn_close(c, "input done");
	close(sp[1]);
	free(srv.byfd);
	return 0;
}

int proto_test_datagram(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
                        void *arg, const uint8_t *data, size_t len, uint8_t *out, size_t outcap,
                        size_t *outlen)
{
	struct proto_server srv;
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	socklen_t sl = sizeof(*in);
	int peer = -1, rc = 0;
	ssize_t n;

	if (outlen)
		*outlen = 0;
	test_server(&srv, l, cfg, submit, arg);
	/* the server's socket and the sender's, on loopback */
	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.ufd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	peer = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv.ufd < 0 || peer < 0 || bind(peer, (struct sockaddr *)&ss, sl) != 0 ||
	    getsockname(peer, (struct sockaddr *)&ss, &sl) != 0) {
		rc = -errno;
		goto out;
	}
	udp_datagram(&srv, data, len, &ss);
	/* loopback delivers at sendto: the reply, if any, is there now */
	n = recv(peer, out ? out : (uint8_t *)&ss, out ? outcap : sizeof(ss), MSG_DONTWAIT);
	if (n > 0 && outlen && out)
		*outlen = (size_t)n;
	/* calls still in flight: their replies are dropped */
	for (struct proto_conn *c = srv.udp_conns; c; c = c->udp_next)
		c->closed = 1;
out:
	if (srv.ufd >= 0)
		close(srv.ufd);
	if (peer >= 0)
		close(peer);
	return rc;
}
