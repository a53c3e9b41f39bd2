/* Registration with a local rpcbind (include/rpcbind.h): the program rows
 * with PROG_REGISTER are registered for TCP at the listen port (and for UDP
 * too when the row has PROG_UDP: NSM, which sm-notify reaches by UDP), so
 * that a client's mount.nfs, showmount, rpcinfo, lockd and sm-notify find
 * them through port 111.
 *
 * The exchanges with rpcbind run on a private libnfs context driven by
 * poll() here (a session, struct pm_session), with one deadline for all of
 * them: START_MS (2 s) for registration, once before the daemon serves, and
 * STOP_MS (1 s) for unregistration, once after it stopped (a failed start
 * adds its own unregistration to the 2 s). Blocking at those two moments
 * costs no client anything, and a hung or dying rpcbind holds up a start
 * or a stop for no longer than that. The first exchange that does not end
 * with an answer ends the session: nothing more is asked of an rpcbind
 * that stopped answering, and no libnfs callback outlives the frame of its
 * call (pm_wait). A stop signalled during registration (SIGINT, SIGTERM:
 * loop_stop_signalled()) ends the registration's session too, at once: what
 * was registered is unregistered (STOP_MS) and the start ends. The stop's
 * own unregistration is not cut short by signals (a second Ctrl-C): it has
 * its 1 s.
 *
 * The protocols: DUMP (rpcbind v3) tells who holds a registration and
 * where (its universal address; GETADDR would answer another version of
 * the program when the one asked is not registered); SET and UNSET go
 * through the portmapper
 * (v2), which every rpcbind serves and which registers netid "tcp" for
 * prot 6. A v2 UNSET removes prog/vers for udp and tcp alike; cachefsd
 * only unsets what it found dead or registered itself; who holds a
 * registration is judged by its tcp one (every program served over UDP is
 * served over TCP too).
 *
 * rpcbind accepts SET and UNSET only from the loopback address (and the
 * registration of a port below 1024 only from a privileged port, which
 * libnfs binds when running as root). */
#include "rpcbind.h"
#include "control.h"
#include "log.h"
#include "loop.h"
#include "procs.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-portmap.h>

#define RPCBIND_HOST "127.0.0.1"
#define RPCBIND_PORT 111
#define START_MS     2000 /* all of registration at start */
#define STOP_MS      1000 /* all of unregistration at exit */
#define PROBE_MS     500  /* connecting to a registered port */
#define REG_MAX      16
#define CALL_MAGIC   0x52504243u /* "RPBC" */

struct reg_ent {
	uint32_t prog, vers;
	const char *name;
};

struct rpcbind_reg {
	int port;
	size_t n;
	struct reg_ent ent[REG_MAX];
};

/* A talk with rpcbind: one libnfs context, one deadline for all of its
 * exchanges. The context is destroyed in one place, pm_close(): at the end,
 * or as soon as an exchange does not end with its callback (no answer by
 * the deadline, the connection lost, a call not queued). Destroying it
 * calls back every call still queued, with CANCEL, and a call lives in the
 * frame of the one that waits for it (pm_wait's caller): so no callback
 * can run once that frame is gone. A closed session stays closed (sticky):
 * every later exchange fails at once with its first error. */
struct pm_session {
	struct rpc_context *rpc; /* NULL once closed */
	uint64_t deadline;       /* CLOCK_MONOTONIC ms */
	int budget_ms;           /* what the deadline allowed, for messages */
	int interruptible;       /* a signalled stop closes it (-EINTR) */
	int rc;                  /* why it closed: -ETIMEDOUT, -ECONNRESET, -EINTR ... */
	char err[200];           /* pm_wait's why fits */
};

/* One exchange in flight; filled by its callback. */
struct pm_call {
	uint32_t magic;
	int done;
	int ok;              /* RPC_STATUS_SUCCESS */
	uint32_t val;        /* SET/UNSET: the boolean answer */
	uint32_t prog, vers; /* DUMP: the registration looked for ... */
	char addr[80];       /* ... and its universal address, "" when none */
	char err[160];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int remaining_ms(const struct pm_session *s)
{
	uint64_t now = now_ms();

	return now >= s->deadline ? 0 : (int)(s->deadline - now);
}

/* The session is to end now: a stop was signalled during registration. */
static int pm_stopped(const struct pm_session *s)
{
	return s->interruptible && loop_stop_signalled();
}

static void call_result(struct pm_call *c, int status, void *data)
{
	assert(c->magic == CALL_MAGIC);
	assert(!c->done);
	c->done = 1;
	c->ok = status == RPC_STATUS_SUCCESS;
	if (status == RPC_STATUS_ERROR && data)
		snprintf(c->err, sizeof(c->err), "%s", (const char *)data);
	else if (!c->ok)
		snprintf(c->err, sizeof(c->err), "cancelled");
}

static void cb_plain(struct rpc_context *rpc, int status, void *data, void *priv)
{
	(void)rpc;
	call_result(priv, status, data);
}

static void cb_u32(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct pm_call *c = priv;

	(void)rpc;
	call_result(c, status, data);
	if (c->ok && data)
		c->val = *(uint32_t *)data;
}

static void cb_dump(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct pm_call *c = priv;

	(void)rpc;
	call_result(c, status, data);
	if (!c->ok || data == NULL)
		return;
	for (const pmap3_mapping_list *l = ((pmap3_dump_result *)data)->list; l; l = l->next)
		if (l->map.prog == c->prog && l->map.vers == c->vers && l->map.netid &&
		    strcmp(l->map.netid, "tcp") == 0 && l->map.addr)
			snprintf(c->addr, sizeof(c->addr), "%s", l->map.addr);
}

/* The one place a session's context is destroyed; calls back what is still
 * queued (CANCEL) while its pm_call lives. rc and why: the first reason
 * kept. */
static void pm_close(struct pm_session *s, int rc, const char *why)
{
	struct rpc_context *rpc = s->rpc;

	if (rc != 0 && s->rc == 0) {
		s->rc = rc;
		snprintf(s->err, sizeof(s->err), "%s", why);
	}
	if (rpc == NULL)
		return;
	s->rpc = NULL; /* first: a callback run below sees the session closed */
	rpc_destroy_context(rpc);
}

/* Drives the session until c's callback ran or the session's deadline
 * passed: 0 when c succeeded; -EIO when rpcbind answered with an error
 * (c->err says which; the session stays open); or the session's error
 * when it had to close it (no answer in time, the connection lost: s->err
 * says why). Either way c is done with when this returns: answered, or
 * cancelled with the context. */
static int pm_wait(struct pm_session *s, struct pm_call *c)
{
	char why[200];
	int rc = 0;

	while (!c->done) {
		int left = remaining_ms(s);
		struct pollfd p;
		int n;

		if (pm_stopped(s)) {
			snprintf(why, sizeof(why), "a stop was asked for (signal)");
			rc = -EINTR;
			break;
		}
		if (left == 0) {
			snprintf(why, sizeof(why), "no answer within %g s", s->budget_ms / 1000.0);
			rc = -ETIMEDOUT;
			break;
		}
		p.fd = rpc_get_fd(s->rpc);
		p.events = (short)rpc_which_events(s->rpc);
		p.revents = 0;
		n = poll(&p, 1, left > 100 ? 100 : left);
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			snprintf(why, sizeof(why), "poll: %s", strerror(errno));
			break;
		}
		if (rpc_service(s->rpc, n > 0 ? p.revents : 0) < 0) {
			/* the connection is gone: whatever else is queued
			 * would never be answered */
			rc = -ECONNRESET;
			snprintf(why, sizeof(why), "%s", rpc_get_error(s->rpc));
			break;
		}
	}
	if (rc != 0)
		pm_close(s, rc, why);
	assert(c->done || s->rpc == NULL);
	if (c->done && c->ok)
		return 0;
	if (s->rpc == NULL)
		return s->rc;
	return -EIO;
}

static void call_init(struct pm_call *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = CALL_MAGIC;
}

/* After an rpc_*_async() that returned non-zero (libnfs calls nothing
 * back then): the context is not to be trusted further. */
static int pm_not_queued(struct pm_session *s)
{
	char why[200];

	snprintf(why, sizeof(why), "%s", rpc_get_error(s->rpc));
	pm_close(s, -EIO, why);
	return s->rc;
}

static int port_alive(struct in_addr addr, int port, int timeout_ms, int interruptible);

/* Opens s, connected to the local rpcbind, with budget_ms for everything
 * done in it (interruptible: a signalled stop closes it): 0, or -errno
 * with why in s->err (s closed). */
static int pm_open(struct pm_session *s, int budget_ms, int interruptible)
{
	struct in_addr lo = {htonl(INADDR_LOOPBACK)};
	struct pm_call c;
	int rc;

	memset(s, 0, sizeof(*s));
	s->budget_ms = budget_ms;
	s->deadline = now_ms() + (uint64_t)budget_ms;
	s->interruptible = interruptible;
	rc = port_alive(lo, RPCBIND_PORT, remaining_ms(s), interruptible);
	if (pm_stopped(s)) {
		pm_close(s, -EINTR, "a stop was asked for (signal)");
		return s->rc;
	}
	if (rc != 1) {
		/* said plainly: libnfs would report a refusal as "POLLHUP" */
		pm_close(s, rc == 0 ? -ECONNREFUSED : -ETIMEDOUT,
		         rc == 0 ? "nothing listens there" : "it does not accept a connection");
		return s->rc;
	}
	s->rpc = rpc_init_context();
	if (s->rpc == NULL) {
		pm_close(s, -ENOMEM, "out of memory");
		return s->rc;
	}
	call_init(&c);
	if (rpc_connect_async(s->rpc, RPCBIND_HOST, RPCBIND_PORT, cb_plain, &c) != 0)
		return pm_not_queued(s);
	rc = pm_wait(s, &c);
	if (rc == -EIO) /* the connect callback's error */
		pm_close(s, rc, c.err);
	return rc;
}

/* The TCP port prog/vers is registered at (0: none) and the address the
 * registration names in addr (INADDR_ANY as 127.0.0.1). 0 or -errno (as
 * pm_wait()). */
static int pm_lookup(struct pm_session *s, uint32_t prog, uint32_t vers, int *port,
                     struct in_addr *addr)
{
	struct pm_call c;
	unsigned a[4], p1, p2;
	int rc;

	if (s->rpc == NULL)
		return s->rc;
	call_init(&c);
	c.prog = prog;
	c.vers = vers;
	if (rpc_pmap3_dump_async(s->rpc, cb_dump, &c) != 0)
		return pm_not_queued(s);
	rc = pm_wait(s, &c);
	if (rc != 0)
		return rc;
	*port = 0;
	addr->s_addr = htonl(INADDR_LOOPBACK);
	if (sscanf(c.addr, "%u.%u.%u.%u.%u.%u", &a[0], &a[1], &a[2], &a[3], &p1, &p2) != 6 ||
	    p1 > 255 || p2 > 255)
		return 0; /* "" when none; an IPv6 address cannot be a tcp one */
	*port = (int)(p1 * 256 + p2);
	if (a[0] | a[1] | a[2] | a[3])
		addr->s_addr = htonl((uint32_t)a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3]);
	return 0;
}

/* SET (set != 0) or UNSET through the portmapper for prot (IPPROTO_TCP or
 * IPPROTO_UDP): 0, -EPERM when rpcbind said no, or -errno (as pm_wait()). */
static int pm_change(struct pm_session *s, int set, uint32_t prog, uint32_t vers, int port,
                     int prot)
{
	struct pm_call c;
	int rc;

	if (s->rpc == NULL)
		return s->rc;
	call_init(&c);
	rc = set ? rpc_pmap2_set_async(s->rpc, (int)prog, (int)vers, prot, port, cb_u32, &c)
	         : rpc_pmap2_unset_async(s->rpc, (int)prog, (int)vers, prot, port, cb_u32, &c);
	if (rc != 0)
		return pm_not_queued(s);
	rc = pm_wait(s, &c);
	if (rc != 0)
		return rc;
	return c.val ? 0 : -EPERM;
}

/* 1 when something accepts a TCP connection at addr:port within
 * timeout_ms (at most PROBE_MS): a live server. Refused: 0; nothing
 * answering in time: -1 (for a registration both mean stale). A signal
 * does not cut the wait short (a second Ctrl-C during the stop's
 * unregistration would make a live rpcbind look gone) unless interruptible
 * and a stop was signalled: -1 then. */
static int port_alive(struct in_addr addr, int port, int timeout_ms, int interruptible)
{
	struct sockaddr_in sin;
	struct pollfd p;
	int fd, alive = 0, soerr = 0, n;
	socklen_t len = sizeof(soerr);
	uint64_t deadline = now_ms() + (uint64_t)(timeout_ms < PROBE_MS ? timeout_ms : PROBE_MS);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1; /* cannot tell: do not take it over */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr = addr;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0) {
		alive = 1;
	} else if (errno == EINPROGRESS) {
		p.fd = fd;
		p.events = POLLOUT;
		do {
			uint64_t now = now_ms();

			n = poll(&p, 1, now >= deadline ? 0 : (int)(deadline - now));
		} while (n < 0 && errno == EINTR && !(interruptible && loop_stop_signalled()));
		if (n < 0 && errno == EINTR)
			alive = -1;
		else if (n == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
		         soerr == 0)
			alive = 1;
		else if (n == 0)
			alive = -1;
	}
	close(fd);
	return alive;
}

/* Unsets every entry of r that still points at r->port, in a session of
 * its own (STOP_MS in all), and says in the log what rpcbind confirmed:
 * "unregistered" only for what it answered an UNSET for. r->n is 0 after. */
static void unregister_all(struct rpcbind_reg *r)
{
	struct pm_session s;
	size_t removed = 0, left = 0;
	char names[256] = "", why[256] = "";

	if (r->n == 0)
		return;
	pm_open(&s, STOP_MS, 0);
	for (size_t i = 0; i < r->n; i++) {
		struct reg_ent *e = &r->ent[i];
		struct in_addr a;
		int port = 0, rc;

		rc = pm_lookup(&s, e->prog, e->vers, &port, &a);
		if (rc == 0 && port == 0)
			continue; /* removed already (rpcinfo -d) */
		if (rc == 0 && port != r->port) {
			log_info(
			    "rpcbind: %s v%u is registered to port %d now, not ours: left alone",
			    e->name, e->vers, port);
			continue;
		}
		if (rc == 0)
			rc = pm_change(&s, 0, e->prog, e->vers, r->port, IPPROTO_TCP);
		if (rc == 0) {
			removed++;
			continue;
		}
		left++;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s v%u",
		         names[0] ? ", " : "", e->name, e->vers);
		if (s.rpc != NULL && why[0] == 0) /* rpcbind answered, and said no */
			snprintf(why, sizeof(why), "%s",
			         rc == -EPERM ? "rpcbind refused" : "rpcbind answered an error");
	}
	if (s.rpc == NULL && left > 0) /* rpcbind gone, hung or dying */
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s", why[0] ? "; " : "",
		         s.err);
	pm_close(&s, 0, "");
	if (removed > 0)
		log_info("rpcbind: unregistered %zu program version%s of port %d", removed,
		         removed == 1 ? "" : "s", r->port);
	if (left > 0)
		log_warn("rpcbind: not unregistered (%s): %s of port %d (a later start replaces "
		         "them; until then rpcbind may send clients to a closed port)",
		         why, names, r->port);
	r->n = 0;
	control_counters.rpcbind_registered = left;
}

/* Registers row p; 0 (registered, or skipped under auto with a log line)
 * or -errno with err. When the session closes (rpcbind stopped answering)
 * it returns at once, with nothing logged: the caller says it once. */
static int register_one(struct pm_session *s, const struct cfs_config *cfg, struct rpcbind_reg *r,
                        const struct prog_row *p, char *err, size_t errlen)
{
	int yes = cfg->rpcbind_register == CFS_REGISTER_YES;
	struct in_addr a;
	int port = 0, rc;

	rc = pm_lookup(s, p->prog, p->vers, &port, &a);
	if (s->rpc == NULL)
		return rc;
	if (rc != 0) {
		snprintf(err, errlen, "rpcbind: cannot look up %s v%u (%u): %s", p->name, p->vers,
		         p->prog, strerror(-rc));
		goto failed;
	}
	if (port == r->port) {
		/* ours already: an earlier run on this port that did not
		 * unregister (killed, or crashed) */
		log_info("rpcbind: %s v%u tcp port %d was registered already (an earlier run)",
		         p->name, p->vers, port);
	} else {
		if (port != 0 && port_alive(a, port, remaining_ms(s), s->interruptible) == 1) {
			if (yes) {
				snprintf(
				    err, errlen,
				    "rpcbind: %s v%u (program %u) is registered to port %d, where "
				    "another server answers: stop that server, or set register = "
				    "auto (skip it) or no",
				    p->name, p->vers, p->prog, port);
				return -EADDRINUSE;
			}
			log_warn("rpcbind: %s v%u (program %u) is registered to port %d, where "
			         "another server answers: not registered (register = auto); "
			         "clients need port=/mountport=%d",
			         p->name, p->vers, p->prog, port, r->port);
			return 0;
		}
		if (port != 0) {
			/* SET fails if it stayed */
			pm_change(s, 0, p->prog, p->vers, port, IPPROTO_TCP);
			if (s->rpc == NULL)
				return s->rc;
			log_info("rpcbind: %s v%u tcp port %d is stale (nothing answers there): "
			         "replaced",
			         p->name, p->vers, port);
		}
		rc = pm_change(s, 1, p->prog, p->vers, r->port, IPPROTO_TCP);
		if (s->rpc == NULL)
			return rc;
		if (rc != 0) {
			snprintf(err, errlen,
			         "rpcbind: cannot register %s v%u (%u) tcp port %d: %s", p->name,
			         p->vers, p->prog, r->port,
			         rc == -EPERM ? "rpcbind refused it (a port below 1024 while not "
			                        "root, or the old registration could not be "
			                        "removed)"
			                      : strerror(-rc));
			goto failed;
		}
		log_info("rpcbind: registered %s v%u (program %u) tcp port %d", p->name, p->vers,
		         p->prog, r->port);
		r->ent[r->n++] = (struct reg_ent){p->prog, p->vers, p->name};
		control_counters.rpcbind_registered = r->n;
		/* v2 UNSET removed a udp one with the tcp one; a udp one left
		 * without a tcp one belongs to no live server of ours */
		if (p->flags & PROG_UDP) {
			rc = pm_change(s, 1, p->prog, p->vers, r->port, IPPROTO_UDP);
			if (s->rpc == NULL)
				return rc;
			if (rc != 0)
				log_warn("rpcbind: %s v%u udp port %d not registered (a udp "
				         "registration of another port is in the way: rpcinfo -p)",
				         p->name, p->vers, r->port);
			else
				log_info("rpcbind: registered %s v%u (program %u) udp port %d",
				         p->name, p->vers, p->prog, r->port);
		}
		return 0;
	}
	r->ent[r->n++] = (struct reg_ent){p->prog, p->vers, p->name};
	control_counters.rpcbind_registered = r->n;
	return 0;

failed:
	if (yes)
		return rc;
	/* auto: registration is a convenience, serving is not */
	log_warn("%s: not registered (register = auto); clients need port=/mountport=%d", err,
	         r->port);
	err[0] = 0;
	return 0;
}

int rpcbind_register(const struct cfs_config *cfg, int port, struct rpcbind_reg **out, char *err,
                     size_t errlen)
{
	int yes = cfg->rpcbind_register == CFS_REGISTER_YES;
	struct rpcbind_reg *r = NULL;
	struct pm_session s;
	const struct prog_row *rows;
	size_t n;
	int rc = 0;

	*out = NULL;
	control_counters.rpcbind_registered = 0;
	if (cfg->rpcbind_register == CFS_REGISTER_NO)
		return 0;
	rc = pm_open(&s, START_MS, 1);
	if (rc == -EINTR) {
		snprintf(err, errlen, "rpcbind: nothing registered: %s", s.err);
		return rc;
	}
	if (rc != 0) {
		if (yes) {
			snprintf(
			    err, errlen,
			    "register = yes: no rpcbind at %s:%d (%s): start rpcbind first, or "
			    "set register = auto or no",
			    RPCBIND_HOST, RPCBIND_PORT, s.err);
			return rc;
		}
		log_info("rpcbind: none at %s:%d (%s): nothing registered; clients need "
		         "-o port=%d,mountport=%d,mountproto=tcp",
		         RPCBIND_HOST, RPCBIND_PORT, s.err, port, port);
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	r->port = port;
	rows = proc_progs(&n);
	for (size_t i = 0; i < n && r->n < REG_MAX && s.rpc != NULL; i++) {
		if (!(rows[i].flags & PROG_REGISTER))
			continue;
		rc = register_one(&s, cfg, r, &rows[i], err, errlen);
		if (rc != 0 && s.rpc != NULL)
			goto fail; /* yes, and a program could not be registered */
	}
	if (s.rpc == NULL && s.rc == -EINTR) {
		snprintf(err, errlen, "rpcbind: registration not finished: %s", s.err);
		rc = s.rc;
		goto fail;
	}
	if (s.rpc == NULL) {
		/* rpcbind stopped answering (or never did, past the connect:
		 * a hung one accepts connections in the kernel) */
		if (yes) {
			snprintf(err, errlen,
			         "register = yes: the rpcbind at %s:%d does not answer (%s): "
			         "restart rpcbind, or set register = auto or no",
			         RPCBIND_HOST, RPCBIND_PORT, s.err);
			rc = s.rc;
			goto fail;
		}
		if (r->n == 0)
			log_warn("rpcbind: the one at %s:%d does not answer (%s): nothing "
			         "registered; clients need -o port=%d,mountport=%d,mountproto=tcp",
			         RPCBIND_HOST, RPCBIND_PORT, s.err, port, port);
		else
			log_warn("rpcbind: the one at %s:%d stopped answering (%s): %zu program "
			         "versions registered, the others not; clients need -o "
			         "port=%d,mountport=%d,mountproto=tcp",
			         RPCBIND_HOST, RPCBIND_PORT, s.err, r->n, port, port);
	}
	pm_close(&s, 0, "");
	if (r->n == 0) {
		free(r);
		r = NULL;
	}
	*out = r;
	return 0;

fail:
	pm_close(&s, 0, "");
	if (r)
		unregister_all(r); /* nothing stays registered after a failed start */
	free(r);
	control_counters.rpcbind_registered = 0;
	return rc;
}

void rpcbind_unregister(struct rpcbind_reg *r)
{
	if (r == NULL)
		return;
	unregister_all(r);
	free(r);
}
