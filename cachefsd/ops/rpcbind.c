/* Registration with a local rpcbind (include/rpcbind.h): the program rows
 * with PROG_REGISTER are registered for TCP at the listen port (and for UDP
 * too when the row has PROG_UDP: NSM, which sm-notify reaches by UDP), so
 * that a client's mount.nfs, showmount, rpcinfo, lockd and sm-notify find
 * them through port 111.
 *
 * Each exchange with rpcbind runs on a private libnfs context driven by
 * poll() here, with a deadline of about a second: registration happens
 * once before the daemon serves and unregistration once after it stopped,
 * so blocking for that long at those two moments costs no client anything,
 * and a hung rpcbind cannot hold up a start or a stop for more than that.
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
#define EXCHANGE_MS  1000 /* one connect or call to rpcbind */
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

static void call_result(struct pm_call *c, int status, void *data)
{
	assert(c->magic == CALL_MAGIC);
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

/* Drives rpc until c's callback ran or EXCHANGE_MS passed: 0 when it
 * succeeded, -ETIMEDOUT, or -EIO (c->err says why). */
static int pm_wait(struct rpc_context *rpc, struct pm_call *c)
{
	uint64_t deadline = now_ms() + EXCHANGE_MS;

	while (!c->done) {
		uint64_t now = now_ms();
		struct pollfd p;
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		p.fd = rpc_get_fd(rpc);
		p.events = (short)rpc_which_events(rpc);
		p.revents = 0;
		n = poll(&p, 1, deadline - now > 100 ? 100 : (int)(deadline - now));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (rpc_service(rpc, n > 0 ? p.revents : 0) < 0 && !c->done) {
			snprintf(c->err, sizeof(c->err), "%s", rpc_get_error(rpc));
			return -EIO;
		}
	}
	return c->ok ? 0 : -EIO;
}

static void call_init(struct pm_call *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = CALL_MAGIC;
}

static int port_alive(struct in_addr addr, int port);

/* A context connected to the local rpcbind, or NULL with why in err. */
static struct rpc_context *pm_open(char *err, size_t errlen)
{
	struct rpc_context *rpc = rpc_init_context();
	struct pm_call c;
	int rc;

	if (rpc == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!port_alive((struct in_addr){htonl(INADDR_LOOPBACK)}, RPCBIND_PORT)) {
		/* said plainly: libnfs would report a refusal as "POLLHUP" */
		snprintf(err, errlen, "nothing listens there");
		rpc_destroy_context(rpc);
		return NULL;
	}
	call_init(&c);
	if (rpc_connect_async(rpc, RPCBIND_HOST, RPCBIND_PORT, cb_plain, &c) != 0) {
		snprintf(err, errlen, "%s", rpc_get_error(rpc));
		rpc_destroy_context(rpc);
		return NULL;
	}
	rc = pm_wait(rpc, &c);
	if (rc != 0) {
		snprintf(err, errlen, "%s", rc == -ETIMEDOUT ? "no answer within 1 s" : c.err);
		rpc_destroy_context(rpc);
		return NULL;
	}
	return rpc;
}

/* The TCP port prog/vers is registered at (0: none) and the address the
 * registration names in addr (INADDR_ANY as 127.0.0.1). 0 or -errno. */
static int pm_lookup(struct rpc_context *rpc, uint32_t prog, uint32_t vers, int *port,
                     struct in_addr *addr)
{
	struct pm_call c;
	unsigned a[4], p1, p2;
	int rc;

	call_init(&c);
	c.prog = prog;
	c.vers = vers;
	if (rpc_pmap3_dump_async(rpc, cb_dump, &c) != 0)
		return -EIO;
	rc = pm_wait(rpc, &c);
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
 * IPPROTO_UDP): 0, -EPERM when rpcbind said no, or -errno. */
static int pm_change(struct rpc_context *rpc, int set, uint32_t prog, uint32_t vers, int port,
                     int prot)
{
	struct pm_call c;
	int rc;

	call_init(&c);
	rc = set ? rpc_pmap2_set_async(rpc, (int)prog, (int)vers, prot, port, cb_u32, &c)
	         : rpc_pmap2_unset_async(rpc, (int)prog, (int)vers, prot, port, cb_u32, &c);
	if (rc != 0)
		return -EIO;
	rc = pm_wait(rpc, &c);
	if (rc != 0)
		return rc;
	return c.val ? 0 : -EPERM;
}

/* 1 when something accepts a TCP connection at addr:port within PROBE_MS:
 * a live server. Refused (or nothing answering): 0, the registration is
 * stale. */
static int port_alive(struct in_addr addr, int port)
{
	struct sockaddr_in sin;
	struct pollfd p;
	int fd, alive = 0, soerr = 0;
	socklen_t len = sizeof(soerr);

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
		if (poll(&p, 1, PROBE_MS) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
			alive = 1;
	}
	close(fd);
	return alive;
}

/* Unsets every entry of r that still points at r->port. */
static void unregister_all(struct rpc_context *rpc, struct rpcbind_reg *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct reg_ent *e = &r->ent[i];
		struct in_addr a;
		int port = 0, rc;

		rc = pm_lookup(rpc, e->prog, e->vers, &port, &a);
		if (rc == 0 && port == 0)
			continue; /* removed already (rpcinfo -d) */
		if (rc == 0 && port != r->port) {
			log_info(
			    "rpcbind: %s v%u is registered to port %d now, not ours: left alone",
			    e->name, e->vers, port);
			continue;
		}
		rc = pm_change(rpc, 0, e->prog, e->vers, r->port, IPPROTO_TCP);
		if (rc != 0)
			log_warn("rpcbind: cannot unregister %s v%u (%u) tcp port %d: %s", e->name,
			         e->vers, e->prog, r->port, strerror(-rc));
	}
	r->n = 0;
	control_counters.rpcbind_registered = 0;
}

/* Registers row p; 0 (registered, or skipped under auto with a log line:
 * *skipped set) or -errno with err. */
static int register_one(struct rpc_context *rpc, const struct cfs_config *cfg,
                        struct rpcbind_reg *r, const struct prog_row *p, int *skipped, char *err,
                        size_t errlen)
{
	int yes = cfg->rpcbind_register == CFS_REGISTER_YES;
	struct in_addr a;
	int port = 0, rc;

	*skipped = 0;
	rc = pm_lookup(rpc, p->prog, p->vers, &port, &a);
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
		if (port != 0 && port_alive(a, port)) {
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
			*skipped = 1;
			return 0;
		}
		if (port != 0) {
			log_info("rpcbind: %s v%u tcp port %d is stale (nothing answers there): "
			         "replaced",
			         p->name, p->vers, port);
			pm_change(rpc, 0, p->prog, p->vers, port,
			          IPPROTO_TCP); /* SET fails if it stayed */
		}
		rc = pm_change(rpc, 1, p->prog, p->vers, r->port, IPPROTO_TCP);
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
		/* v2 UNSET removed a udp one with the tcp one; a udp one left
		 * without a tcp one belongs to no live server of ours */
		if ((p->flags & PROG_UDP) &&
		    pm_change(rpc, 1, p->prog, p->vers, r->port, IPPROTO_UDP) != 0)
			log_warn("rpcbind: %s v%u udp port %d not registered (a udp registration "
			         "of another port is in the way: rpcinfo -p)",
			         p->name, p->vers, r->port);
		else if (p->flags & PROG_UDP)
			log_info("rpcbind: registered %s v%u (program %u) udp port %d", p->name,
			         p->vers, p->prog, r->port);
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
	*skipped = 1;
	return 0;
}

int rpcbind_register(const struct cfs_config *cfg, int port, struct rpcbind_reg **out, char *err,
                     size_t errlen)
{
	struct rpcbind_reg *r = NULL;
	struct rpc_context *rpc = NULL;
	const struct prog_row *rows;
	char why[256];
	size_t n;
	int rc = 0;

	*out = NULL;
	control_counters.rpcbind_registered = 0;
	if (cfg->rpcbind_register == CFS_REGISTER_NO)
		return 0;
	rpc = pm_open(why, sizeof(why));
	if (rpc == NULL) {
		if (cfg->rpcbind_register == CFS_REGISTER_YES) {
			snprintf(
			    err, errlen,
			    "register = yes: no rpcbind at %s:%d (%s): start rpcbind first, or "
			    "set register = auto or no",
			    RPCBIND_HOST, RPCBIND_PORT, why);
			return -ECONNREFUSED;
		}
		log_info("rpcbind: none at %s:%d (%s): nothing registered; clients need "
		         "-o port=%d,mountport=%d,mountproto=tcp",
		         RPCBIND_HOST, RPCBIND_PORT, why, port, port);
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
	for (size_t i = 0; i < n && r->n < REG_MAX; i++) {
		int skipped;

		if (!(rows[i].flags & PROG_REGISTER))
			continue;
		rc = register_one(rpc, cfg, r, &rows[i], &skipped, err, errlen);
		if (rc != 0)
			goto fail;
	}
	rpc_destroy_context(rpc);
	if (r->n == 0) {
		free(r);
		r = NULL;
	}
	*out = r;
	return 0;

fail:
	if (r)
		unregister_all(rpc, r); /* nothing stays registered after a failed start */
	free(r);
	rpc_destroy_context(rpc);
	return rc;
}

void rpcbind_unregister(struct rpcbind_reg *r)
{
	struct rpc_context *rpc;
	char why[256];

	if (r == NULL)
		return;
	rpc = pm_open(why, sizeof(why));
	if (rpc == NULL) {
		log_warn("rpcbind: cannot unregister (%s): its registrations of port %d stay", why,
		         r->port);
	} else {
		size_t n = r->n;

		unregister_all(rpc, r);
		log_info("rpcbind: unregistered (%zu program versions of port %d)", n, r->port);
		rpc_destroy_context(rpc);
	}
	control_counters.rpcbind_registered = 0;
	free(r);
}
