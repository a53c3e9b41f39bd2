/* The small RPC client (include/rpcclient.h): one TCP connection per
 * client, calls queued in order, each a complete record (record mark,
 * call header, credential, arguments) built once when it is made and
 * written again after a reconnect. The portmapper is asked through a
 * second client of the same kind (PMAP v2 GETPORT, RPCC_ONCE).
 *
 * Headers are composed with libnfs's zdr primitives and reply headers
 * walked with proto's bounded cursor (xdrwalk.h): the wire is proto's. */
#include "rpcclient.h"
#include "xdrwalk.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <nfsc/libnfs-raw-portmap.h>

#define RPCC_MAGIC      0x52504343u          /* "RPCC" */
#define RPCC_MAX_REC    (1024 * 1024 + 4096) /* libnfs's limit, both ways */
#define RPCC_BACKOFF_LO 100
#define RPCC_BACKOFF_HI 5000

enum rpcc_state { RC_IDLE, RC_ASKING, RC_CONNECTING, RC_UP };

struct rcall {
	struct rcall *next;
	uint32_t xid;
	unsigned flags;
	int sent;
	uint64_t sent_ms;
	rpcc_cb cb;
	void *priv;
	uint8_t *rec; /* record mark + call */
	uint32_t reclen;
};

struct rpcc {
	uint32_t magic;
	struct loop *loop;
	struct sockaddr_storage addr;
	uint32_t prog, vers, timeout_ms;
	int fixed_port; /* addr's port is given, not asked */
	int had_port;   /* the portmapper named a port once: the program exists */
	uint16_t port;  /* network order; 0: not known */
	int fd;
	enum rpcc_state state;
	struct rcall *head, *tail;
	uint8_t *out; /* bytes to write: records of calls marked sent */
	size_t outlen, outoff, outcap;
	uint8_t *in;
	size_t inlen, incap;
	uint32_t backoff_ms;
	uint64_t connect_ms; /* when the connect began */
	uint32_t next_xid;
	struct rpcc *pmap;        /* the portmapper's client, made when first needed */
	struct loop_timer *kick;  /* one-shot: connect (again) */
	struct loop_timer *watch; /* every second: answers overdue? */
};

static void start(struct rpcc *c);

static uint16_t *port_of(struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? &((struct sockaddr_in6 *)ss)->sin6_port
	                                 : &((struct sockaddr_in *)ss)->sin_port;
}

static socklen_t len_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Ends the calls in list (unlinked already) with status. */
static void fail_list(struct rcall *list, int status)
{
	while (list) {
		struct rcall *n = list->next;

		list->cb(status, NULL, 0, list->priv);
		free(list->rec);
		free(list);
		list = n;
	}
}

/* Unlinks the calls that match (once: the RPCC_ONCE ones; else all). */
static struct rcall *take_calls(struct rpcc *c, int only_once)
{
	struct rcall *out = NULL, **tail = &out, **pp = &c->head;

	c->tail = NULL;
	while (*pp) {
		struct rcall *k = *pp;

		if (!only_once || (k->flags & RPCC_ONCE)) {
			*pp = k->next;
			k->next = NULL;
			*tail = k;
			tail = &k->next;
		} else {
			k->sent = 0;
			c->tail = k;
			pp = &k->next;
		}
	}
	return out;
}

static void kick_fire(struct loop *l, void *arg)
{
	struct rpcc *c = arg;

	(void)l;
	c->kick = NULL;
	start(c);
}

static void schedule(struct rpcc *c, uint32_t delay_ms)
{
	if (c->kick == NULL && c->head)
		c->kick = loop_timer_add(c->loop, delay_ms, 0, kick_fire, c);
}

/* The connection is gone (or never came): hard calls wait for the next,
 * RPCC_ONCE calls end with err. A port that was asked is asked again. */
static void conn_fail(struct rpcc *c, int err)
{
	if (c->fd >= 0) {
		loop_del(c->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	c->state = RC_IDLE;
	c->outlen = c->outoff = 0;
	c->inlen = 0;
	if (!c->fixed_port)
		c->port = 0;
	fail_list(take_calls(c, 1), err);
	if (c->backoff_ms < RPCC_BACKOFF_HI)
		c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : RPCC_BACKOFF_LO;
	schedule(c, c->backoff_ms);
}

/* Queues the records of the calls not yet sent; RPCC_NOREPLY calls leave
 * the list for *oneway (they end once written). */
static int fill_out(struct rpcc *c, struct rcall **oneway)
{
	struct rcall **otail = oneway, *prev = NULL;

	for (struct rcall *k = c->head, *next; k; prev = k, k = next) {
		next = k->next;
		if (k->sent)
			continue;
		if (c->outlen + k->reclen > c->outcap) {
			size_t cap = (c->outlen + k->reclen) * 2;
			uint8_t *p = realloc(c->out, cap);

			if (p == NULL)
				return -ENOMEM;
			c->out = p;
			c->outcap = cap;
		}
		memcpy(c->out + c->outlen, k->rec, k->reclen);
		c->outlen += k->reclen;
		k->sent = 1;
		k->sent_ms = loop_now(c->loop);
		if (k->flags & RPCC_NOREPLY) {
			if (prev)
				prev->next = next;
			else
				c->head = next;
			if (c->tail == k)
				c->tail = prev;
			k->next = NULL;
			*otail = k;
			otail = &k->next;
			k = prev; /* prev stays prev */
		}
	}
	return 0;
}

static void want_events(struct rpcc *c)
{
	int ev = POLLIN;

	if (c->state == RC_CONNECTING || c->outoff < c->outlen)
		ev |= POLLOUT;
	loop_set(c->loop, c->fd, ev);
}

static void flush(struct rpcc *c)
{
	struct rcall *oneway = NULL;

	if (fill_out(c, &oneway) != 0) {
		fail_list(oneway, -ENOMEM);
		conn_fail(c, -ENOMEM);
		return;
	}
	/* queued for writing: a one-way call has done what it can (a lost
	 * connection loses it, as a datagram would be) */
	fail_list(oneway, 0);
	while (c->outoff < c->outlen) {
		ssize_t n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			conn_fail(c, -errno);
			return;
		}
		c->outoff += (size_t)n;
	}
	if (c->outoff == c->outlen)
		c->outoff = c->outlen = 0;
	want_events(c);
}

/* One reply record: its call ends with the outcome the header says. */
static int on_reply(struct rpcc *c, const uint8_t *rec, size_t len)
{
	struct xcur x = {rec, len, 0, 0};
	uint32_t xid = x_u32(&x), mtype = x_u32(&x), stat;
	struct rcall **pp = &c->head, *k, *prev = NULL;
	int status;

	if (x.bad || mtype != 1 /* REPLY */)
		return -EPROTO;
	while (*pp && !((*pp)->xid == xid && (*pp)->sent)) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	k = *pp;
	if (k == NULL)
		return 0; /* an answer to a call that already ended */
	stat = x_u32(&x);
	if (stat == 0 /* MSG_ACCEPTED */) {
		x_u32(&x); /* verifier flavour */
		x_opaque(&x, CFS_MAX_AUTH_BYTES);
		status = (int)x_u32(&x); /* accept_stat */
	} else {
		status = -EACCES;
	}
	if (x.bad)
		return -EPROTO;
	*pp = k->next;
	if (c->tail == k)
		c->tail = prev;
	c->backoff_ms = 0;
	k->cb(status, status == 0 ? rec + x.pos : NULL, status == 0 ? (uint32_t)(len - x.pos) : 0,
	      k->priv);
	free(k->rec);
	free(k);
	return 0;
}

static void on_readable(struct rpcc *c)
{
	for (;;) {
		if (c->incap - c->inlen < 65536) {
			size_t cap = c->incap ? c->incap * 2 : 65536;
			uint8_t *p;

			if (cap > RPCC_MAX_REC + 8 + 65536)
				cap = RPCC_MAX_REC + 8 + 65536;
			if (cap <= c->incap) {
				conn_fail(c, -EMSGSIZE);
				return;
			}
			p = realloc(c->in, cap);
			if (p == NULL) {
				conn_fail(c, -ENOMEM);
				return;
			}
			c->in = p;
			c->incap = cap;
		}
		ssize_t n = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
		if (n == 0) {
			conn_fail(c, -ECONNRESET);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			conn_fail(c, -errno);
			return;
		}
		c->inlen += (size_t)n;
		/* whole records: one fragment each (what servers send) */
		size_t off = 0;
		while (c->inlen - off >= 4) {
			const uint8_t *m = c->in + off;
			uint32_t mark = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
			                (uint32_t)m[2] << 8 | m[3];
			uint32_t rl = mark & 0x7fffffffu;

			if (!(mark & 0x80000000u) || rl > RPCC_MAX_REC) {
				conn_fail(c, -EPROTO);
				return;
			}
			if (c->inlen - off - 4 < rl)
				break;
			if (on_reply(c, m + 4, rl) != 0) {
				conn_fail(c, -EPROTO);
				return;
			}
			off += 4 + rl;
			if (c->fd < 0)
				return;
		}
		memmove(c->in, c->in + off, c->inlen - off);
		c->inlen -= off;
	}
}

static void on_io(struct loop *l, int fd, int revents, void *arg)
{
	struct rpcc *c = arg;

	(void)l;
	(void)fd;
	assert(c->magic == RPCC_MAGIC);
	if (c->state == RC_CONNECTING && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			err = errno;
		if (err) {
			conn_fail(c, -err);
			return;
		}
		c->state = RC_UP;
	}
	if (revents & POLLIN) {
		on_readable(c);
		if (c->fd < 0)
			return;
	} else if (revents & (POLLERR | POLLHUP)) {
		conn_fail(c, -ECONNRESET);
		return;
	}
	flush(c);
}

static void do_connect(struct rpcc *c)
{
	struct sockaddr_storage a = c->addr;
	int fd;

	*port_of(&a) = c->port;
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		conn_fail(c, -errno);
		return;
	}
	{
		/* no Nagle: the tail of a call would wait a round trip for
		 * the ACK of the one before */
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (connect(fd, (struct sockaddr *)&a, len_of(&a)) != 0 && errno != EINPROGRESS) {
		int err = errno;

		close(fd);
		conn_fail(c, -err);
		return;
	}
	if (loop_add(c->loop, fd, POLLOUT | POLLIN, on_io, c) != 0) {
		close(fd);
		conn_fail(c, -ENOMEM);
		return;
	}
	c->fd = fd;
	c->state = RC_CONNECTING;
	c->connect_ms = loop_now(c->loop);
}

static void pmap_done(int status, const uint8_t *res, uint32_t len, void *priv)
{
	struct rpcc *c = priv;
	uint32_t port = 0;

	assert(c->magic == RPCC_MAGIC);
	c->state = RC_IDLE;
	if (status == 0) {
		struct xcur x = {res, len, 0, 0};

		port = x_u32(&x);
		if (x.bad || port > 65535)
			status = -EPROTO;
	}
	if (status == 0 && port == 0) {
		if (c->had_port) {
			/* it was registered before: the server is restarting
			 * and has not registered it yet (a filer's NLM comes up
			 * after its portmapper, while its clients already
			 * reclaim): hard calls wait, as for a server away */
			conn_fail(c, -EAGAIN);
			return;
		}
		/* never registered: nothing to wait for */
		fail_list(take_calls(c, 0), -EPROTONOSUPPORT);
		return;
	}
	if (status != 0) {
		conn_fail(c, status < 0 ? status : -EPROTO);
		return;
	}
	c->port = htons((uint16_t)port);
	c->had_port = 1;
	do_connect(c);
}

/* Asks the portmapper for the port of prog/vers over TCP. */
static void ask_port(struct rpcc *c)
{
	pmap2_mapping m = {c->prog, c->vers, IPPROTO_TCP, 0};
	uint8_t args[16];
	ZDR z;

	if (c->pmap == NULL) {
		struct sockaddr_storage a = c->addr;

		*port_of(&a) = htons(PMAP_PORT);
		c->pmap = rpcc_new(c->loop, &a, PMAP_PROGRAM, PMAP_V2, c->timeout_ms);
		if (c->pmap == NULL) {
			conn_fail(c, -ENOMEM);
			return;
		}
	}
	zdrmem_create(&z, (char *)args, sizeof(args), ZDR_ENCODE);
	if (!zdr_pmap2_mapping(&z, &m) || rpcc_call(c->pmap, PMAP2_GETPORT, NULL, args,
	                                            zdr_getpos(&z), RPCC_ONCE, pmap_done, c) != 0) {
		zdr_destroy(&z);
		conn_fail(c, -ENOMEM);
		return;
	}
	zdr_destroy(&z);
	c->state = RC_ASKING;
}

static void start(struct rpcc *c)
{
	if (c->state != RC_IDLE || c->head == NULL)
		return;
	if (c->port == 0)
		ask_port(c);
	else
		do_connect(c);
}

static void watch_fire(struct loop *l, void *arg)
{
	struct rpcc *c = arg;

	/* a sent call unanswered this long: the connection counts as dead */
	for (struct rcall *k = c->head; k; k = k->next) {
		if (k->sent && loop_now(l) - k->sent_ms > c->timeout_ms) {
			conn_fail(c, -ETIMEDOUT);
			return;
		}
	}
	if (c->state == RC_CONNECTING && loop_now(l) - c->connect_ms > c->timeout_ms)
		conn_fail(c, -ETIMEDOUT);
}

struct rpcc *rpcc_new(struct loop *l, const struct sockaddr_storage *addr, uint32_t prog,
                      uint32_t vers, uint32_t timeout_ms)
{
	struct rpcc *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->magic = RPCC_MAGIC;
	c->loop = l;
	c->addr = *addr;
	c->prog = prog;
	c->vers = vers;
	c->timeout_ms = timeout_ms ? timeout_ms : 30000;
	c->port = *port_of(&c->addr);
	c->fixed_port = c->port != 0;
	c->fd = -1;
	if (getrandom(&c->next_xid, sizeof(c->next_xid), GRND_NONBLOCK) != sizeof(c->next_xid))
		c->next_xid = (uint32_t)loop_clock_us();
	c->watch = loop_timer_add(l, 1000, 1000, watch_fire, c);
	if (c->watch == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

void rpcc_free(struct rpcc *c)
{
	if (c == NULL)
		return;
	assert(c->magic == RPCC_MAGIC);
	if (c->fd >= 0) {
		loop_del(c->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (c->kick)
		loop_timer_cancel(c->loop, c->kick);
	loop_timer_cancel(c->loop, c->watch);
	fail_list(take_calls(c, 0), -ECANCELED);
	rpcc_free(c->pmap);
	free(c->out);
	free(c->in);
	c->magic = 0;
	free(c);
}

/* The record of one call: mark, xid, CALL, RPC 2, prog, vers, proc, the
 * credential, a null verifier, the arguments. */
static int build(struct rpcc *c, struct rcall *k, uint32_t proc, const struct cfs_cred *cred,
                 const void *args, uint32_t len)
{
	uint32_t cap = 4 + 40 + 8 + CFS_MAX_AUTH_BYTES + ((len + 3) & ~3u);
	uint32_t zero = 0, one = 1, two = 2, mtype = 0, flavor = 0, mark;
	char *machine = (char *)"";
	ZDR z;
	int ok;

	if (len > RPCC_MAX_REC - 1024)
		return -E2BIG;
	k->rec = malloc(cap);
	if (k->rec == NULL)
		return -ENOMEM;
	zdrmem_create(&z, (char *)k->rec + 4, cap - 4, ZDR_ENCODE);
	ok = zdr_u_int(&z, &k->xid) && zdr_u_int(&z, &mtype) && zdr_u_int(&z, &two) &&
	     zdr_u_int(&z, &c->prog) && zdr_u_int(&z, &c->vers) && zdr_u_int(&z, &proc);
	if (cred && cred->flavor == AUTH_UNIX) {
		uint32_t ngids = cred->ngids > CFS_MAX_GIDS ? CFS_MAX_GIDS : cred->ngids;
		uint32_t mlen = (uint32_t)strlen(cred->machine);
		uint32_t body = 4 + 4 + ((mlen + 3) & ~3u) + 8 + 4 + 4 * ngids;
		uint32_t stamp = 0, uid = cred->uid, gid = cred->gid;

		machine = (char *)cred->machine;
		ok = ok && zdr_u_int(&z, &one) && zdr_u_int(&z, &body) && zdr_u_int(&z, &stamp) &&
		     zdr_string(&z, &machine, CFS_MAX_MACHINE) && zdr_u_int(&z, &uid) &&
		     zdr_u_int(&z, &gid) && zdr_u_int(&z, &ngids);
		for (uint32_t i = 0; ok && i < ngids; i++) {
			uint32_t g = cred->gids[i];

			ok = zdr_u_int(&z, &g);
		}
	} else {
		ok = ok && zdr_u_int(&z, &flavor) && zdr_u_int(&z, &zero);
	}
	ok = ok && zdr_u_int(&z, &zero) && zdr_u_int(&z, &zero); /* AUTH_NONE verifier */
	if (ok && len)
		ok = zdr_opaque(&z, (char *)args, len);
	k->reclen = zdr_getpos(&z) + 4;
	zdr_destroy(&z);
	if (!ok) {
		free(k->rec);
		k->rec = NULL;
		return -E2BIG;
	}
	mark = 0x80000000u | (k->reclen - 4);
	k->rec[0] = (uint8_t)(mark >> 24);
	k->rec[1] = (uint8_t)(mark >> 16);
	k->rec[2] = (uint8_t)(mark >> 8);
	k->rec[3] = (uint8_t)mark;
	return 0;
}

int rpcc_call(struct rpcc *c, uint32_t proc, const struct cfs_cred *cred, const void *args,
              uint32_t len, unsigned flags, rpcc_cb cb, void *priv)
{
	struct rcall *k = calloc(1, sizeof(*k));
	int rc;

	assert(c->magic == RPCC_MAGIC);
	if (k == NULL)
		return -ENOMEM;
	k->xid = c->next_xid++;
	k->flags = flags;
	k->cb = cb;
	k->priv = priv;
	k->sent_ms = loop_now(c->loop); /* while not sent: when it was made */
	rc = build(c, k, proc, cred, args, len);
	if (rc != 0) {
		free(k);
		return rc;
	}
	if (c->tail)
		c->tail->next = k;
	else
		c->head = k;
	c->tail = k;
	if (c->state == RC_UP)
		loop_set(c->loop, c->fd, POLLIN | POLLOUT); /* written when writable */
	else if (c->state == RC_IDLE)
		schedule(c, 0);
	return 0;
}

int rpcc_pending(const struct rpcc *c)
{
	int n = 0;

	for (const struct rcall *k = c->head; k; k = k->next)
		n++;
	return n;
}
