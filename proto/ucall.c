/* See include/ucall.h. One socket per address family, opened on first
 * use; calls in flight on one list, scanned by a timer every UCALL_TICK_MS
 * for retransmissions and give-ups (a few dozen hosts are notified at a
 * time: a list is enough). */
#include "ucall.h"
#include "log.h"
#include "loop.h"
#include "proto.h"

#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UCALL_MAGIC         0x55434c4cu /* "UCLL" */
#define UCALL_TICK_MS       100
#define UCALL_RESEND_MIN_MS 1000
#define UCALL_CALL_MAX      8192 /* bytes of an encoded call */

struct ucall {
	struct ucall *next;
	uint32_t xid;
	struct sockaddr_storage to;
	socklen_t tolen;
	uint8_t *msg; /* the encoded call, sent again as it is */
	uint32_t msglen;
	zdrproc_t dec;
	size_t res_size;
	uint64_t resend_at, giveup_at;
	unsigned interval_ms;
	ucall_cb cb;
	void *arg;
};

struct ucall_client {
	uint32_t magic;
	struct loop *loop;
	int fd4, fd6;
	uint32_t next_xid;
	int n;
	struct ucall *calls;
	struct loop_timer *tick;
};

static void call_end(struct ucall *c, int status, void *res)
{
	c->cb(status, res, c->arg);
	free(c->msg);
	free(c);
}

static void unlink_call(struct ucall_client *u, struct ucall *c)
{
	for (struct ucall **p = &u->calls; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			u->n--;
			return;
		}
	}
}

/* A reply: xid, REPLY, then MSG_ACCEPTED (verifier, accept_stat, result)
 * or MSG_DENIED. */
static void on_reply(struct ucall_client *u, const uint8_t *buf, size_t len,
                     const struct sockaddr_storage *from)
{
	uint32_t xid, mtype, stat, flavor, vlen, acc;
	struct ucall *c;
	ZDR z;
	int status = -EPROTO;
	uint64_t res[UCALL_RES_MAX / sizeof(uint64_t)];

	zdrmem_create(&z, (char *)buf, (uint32_t)len, ZDR_DECODE);
	if (!zdr_u_int(&z, &xid) || !zdr_u_int(&z, &mtype) || mtype != 1)
		goto out;
	for (c = u->calls; c; c = c->next)
		if (c->xid == xid && proto_same_host(&c->to, from))
			break;
	if (c == NULL)
		goto out; /* a late answer to a retransmission, or not ours */
	memset(res, 0, sizeof(res));
	if (zdr_u_int(&z, &stat) && stat == 0 /* MSG_ACCEPTED */ && zdr_u_int(&z, &flavor) &&
	    zdr_u_int(&z, &vlen) && vlen <= 400 && zdr_getpos(&z) + ((vlen + 3) & ~3u) <= len) {
		zdr_setpos(&z, zdr_getpos(&z) + ((vlen + 3) & ~3u));
		if (zdr_u_int(&z, &acc) && acc == 0 /* SUCCESS */ && c->dec(&z, res))
			status = 0;
	}
	unlink_call(u, c);
	call_end(c, status, status == 0 ? res : NULL);
out:
	zdr_destroy(&z);
}

static void sock_io(struct loop *l, int fd, int revents, void *arg)
{
	struct ucall_client *u = arg;
	uint8_t buf[UCALL_CALL_MAX];

	(void)l;
	(void)revents;
	assert(u->magic == UCALL_MAGIC);
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		ssize_t n =
		    recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ss, &sl);

		if (n < 0)
			return; /* EAGAIN, or an ICMP error: the call is sent again */
		on_reply(u, buf, (size_t)n, &ss);
	}
}

/* A privileged source port when we may bind one (root), as sm-notify's:
 * a peer that trusts only those still answers; otherwise any port. */
static void bind_reserved(int s, int family)
{
	struct sockaddr_storage ss;

	for (int port = 1023; port >= 600; port--) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = (sa_family_t)family;
		if (family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
		else
			((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
		if (bind(s, (struct sockaddr *)&ss,
		         family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                            : sizeof(struct sockaddr_in)) == 0)
			return;
		if (errno != EADDRINUSE)
			return; /* EACCES: not root; the kernel picks a port at sendto */
	}
}

static int sock_of(struct ucall_client *u, int family)
{
	int *fd = family == AF_INET6 ? &u->fd6 : &u->fd4;

	if (*fd < 0) {
		int s = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (s < 0)
			return -errno;
		bind_reserved(s, family);
		if (loop_add(u->loop, s, POLLIN, sock_io, u) != 0) {
			close(s);
			return -ENOMEM;
		}
		*fd = s;
	}
	return *fd;
}

static void transmit(struct ucall_client *u, struct ucall *c)
{
	int fd = sock_of(u, c->to.ss_family);

	if (fd < 0 || sendto(fd, c->msg, c->msglen, 0, (struct sockaddr *)&c->to, c->tolen) < 0)
		log_debug("RPC over UDP: cannot send a call: %s", strerror(fd < 0 ? -fd : errno));
}

static void tick(struct loop *l, void *arg)
{
	struct ucall_client *u = arg;
	uint64_t now = loop_clock_ms();
	struct ucall *c = u->calls, *next;

	(void)l;
	for (; c; c = next) {
		next = c->next;
		if (now >= c->giveup_at) {
			unlink_call(u, c);
			call_end(c, -ETIMEDOUT, NULL);
		} else if (now >= c->resend_at) {
			transmit(u, c);
			c->interval_ms *= 2;
			if (c->interval_ms > UCALL_RESEND_MAX_MS)
				c->interval_ms = UCALL_RESEND_MAX_MS;
			c->resend_at = now + c->interval_ms;
		}
	}
}

int ucall_client_new(struct loop *l, struct ucall_client **out)
{
	struct ucall_client *u = calloc(1, sizeof(*u));
	struct timespec ts;

	if (u == NULL)
		return -ENOMEM;
	u->magic = UCALL_MAGIC;
	u->loop = l;
	u->fd4 = u->fd6 = -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* xids differ from a previous run's, whose replies may still come */
	u->next_xid = (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)ts.tv_nsec ^ (uint32_t)getpid();
	u->tick = loop_timer_add(l, UCALL_TICK_MS, UCALL_TICK_MS, tick, u);
	if (u->tick == NULL) {
		free(u);
		return -ENOMEM;
	}
	*out = u;
	return 0;
}

void ucall_client_free(struct ucall_client *u)
{
	if (u == NULL)
		return;
	assert(u->magic == UCALL_MAGIC);
	while (u->calls) {
		struct ucall *c = u->calls;

		unlink_call(u, c);
		call_end(c, -ECANCELED, NULL);
	}
	loop_timer_cancel(u->loop, u->tick);
	for (int i = 0; i < 2; i++) {
		int fd = i ? u->fd6 : u->fd4;

		if (fd >= 0) {
			loop_del(u->loop, fd);
			close(fd);
		}
	}
	u->magic = 0;
	free(u);
}

int ucall_call(struct ucall_client *u, const struct sockaddr *to, socklen_t tolen, uint32_t prog,
               uint32_t vers, uint32_t proc, zdrproc_t enc, void *args, zdrproc_t dec,
               size_t res_size, uint64_t giveup_ms, ucall_cb cb, void *arg)
{
	/* xid, CALL, RPC version 2, prog, vers, proc, AUTH_NONE credential
	 * and verifier */
	uint32_t head[10] = {0, 0, 2, prog, vers, proc, 0, 0, 0, 0};
	struct ucall *c;
	ZDR z;
	int ok = 1;

	assert(u->magic == UCALL_MAGIC);
	if (res_size > UCALL_RES_MAX || tolen > sizeof(c->to) ||
	    (to->sa_family != AF_INET && to->sa_family != AF_INET6))
		return -EINVAL;
	if (u->n >= UCALL_MAX)
		return -EAGAIN;
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->msg = malloc(UCALL_CALL_MAX)) == NULL) {
		free(c);
		return -ENOMEM;
	}
	c->xid = head[0] = u->next_xid++;
	zdrmem_create(&z, (char *)c->msg, UCALL_CALL_MAX, ZDR_ENCODE);
	for (int i = 0; i < 10 && ok; i++)
		ok = zdr_u_int(&z, &head[i]);
	ok = ok && enc(&z, args);
	c->msglen = zdr_getpos(&z);
	zdr_destroy(&z);
	if (!ok) {
		free(c->msg);
		free(c);
		return -EINVAL;
	}
	memcpy(&c->to, to, tolen);
	c->tolen = tolen;
	c->dec = dec;
	c->res_size = res_size;
	c->cb = cb;
	c->arg = arg;
	c->interval_ms = UCALL_RESEND_MIN_MS;
	c->resend_at = loop_clock_ms() + c->interval_ms;
	c->giveup_at = loop_clock_ms() + giveup_ms;
	c->next = u->calls;
	u->calls = c;
	u->n++;
	transmit(u, c);
	return 0;
}
