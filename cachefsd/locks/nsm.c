/* See include/nsm.h. One status monitor per daemon: the state is this
 * file's (nsm_monitor() has no context argument, and there is one cache
 * directory and one upstream per daemon).
 *
 * What it sends, it sends as sm-notify does: a portmapper GETPORT for NSM
 * over UDP to the host's port 111, then SM_NOTIFY(mon_name = the proxy's
 * name, state = the proxy's state) to the port it names, both retried
 * until answered or NSM_NOTIFY_GIVEUP_MS (proto/ucall.c). */
#include "nsm.h"
#include "files.h"
#include "log.h"
#include "loop.h"
#include "proto.h"
#include "ucall.h"
#include "upstream.h"
#include "workers.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nfsc/libnfs-raw-nsm.h>
#include <nfsc/libnfs-raw-portmap.h>

#define NSM_UPSTREAM_ADDRS 8

struct nsm_host {
	char name[NSM_NAME_MAX + 1];
	struct sockaddr_storage addr;
};

/* One host being told: GETPORT, then SM_NOTIFY. */
struct relay {
	char name[NSM_NAME_MAX + 1];
	struct sockaddr_storage addr;
	uint64_t giveup_at;
	const char *why;
};

static struct {
	int started;
	const struct cfs_config *cfg;
	char dir[PATH_MAX];   /* <cache_dir>/nsm */
	char smdir[PATH_MAX]; /* <cache_dir>/nsm/sm */
	uint32_t state;
	char name[NSM_NAME_MAX + 1]; /* ours, in the SM_NOTIFY we send */
	char up_host[256];
	struct sockaddr_storage up_addr[NSM_UPSTREAM_ADDRS];
	int nup;
	struct nsm_host *hosts;
	int nhosts;
	void (*on_reboot)(const char *caller_name, uint32_t state, void *arg);
	void *on_reboot_arg;
	struct ucall_client *uc;
	struct workers *workers; /* NULL: host files are written inline */
} N;

/* --- names and addresses ---------------------------------------------------- */

static int name_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > NSM_NAME_MAX || v[0] == '.')
		return 0;
	return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:") == n;
}

/* IPv4 as AF_INET (an IPv4-mapped IPv6 address too), IPv6 as AF_INET6;
 * the port is zeroed. -EINVAL for other families. */
static int norm_addr(const struct sockaddr *sa, socklen_t len, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *o = (struct sockaddr_in *)out;

		o->sin_family = AF_INET;
		o->sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *i6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&i6->sin6_addr)) {
			struct sockaddr_in *o = (struct sockaddr_in *)out;

			o->sin_family = AF_INET;
			memcpy(&o->sin_addr, &i6->sin6_addr.s6_addr[12], 4);
			return 0;
		}
		struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;
		o->sin6_family = AF_INET6;
		o->sin6_addr = i6->sin6_addr;
		o->sin6_scope_id = i6->sin6_scope_id;
		return 0;
	}
	return -EINVAL;
}

static socklen_t addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void addr_text(const struct sockaddr_storage *a, char *buf, size_t len)
{
	const void *p = a->ss_family == AF_INET6
	                    ? (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr
	                    : (const void *)&((const struct sockaddr_in *)a)->sin_addr;

	if (inet_ntop(a->ss_family, p, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

static int addr_parse(const char *s, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &((struct sockaddr_in *)out)->sin_addr) == 1) {
		out->ss_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &((struct sockaddr_in6 *)out)->sin6_addr) == 1) {
		out->ss_family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

/* --- files ------------------------------------------------------------------ */

/* dir exists as a directory of ours (created 0700 if missing), not a link. */
static int make_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(e));
		return -e;
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not a directory (a symbolic link is refused)", dir);
		return -ENOTDIR;
	}
	return 0;
}

/* Writes text to dir/name through dir/.name.tmp and a rename: a crash
 * leaves the old file or the new one. 0 or -errno. */
static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + NSM_NAME_MAX + 8], tmp[PATH_MAX + NSM_NAME_MAX + 16];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = cfs_fopen_nofollow(tmp, "w");
	if (f == NULL)
		return -errno;
	if (fputs(text, f) == EOF || fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* The state file: the next odd number above the one there (none: 1). */
static int raise_state(char *err, size_t errlen)
{
	char path[PATH_MAX + 8], line[64], text[32];
	unsigned long long old = 0;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/state", N.dir);
	f = cfs_fopen_nofollow(path, "r");
	if (f == NULL && errno != ENOENT) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e));
		return -e;
	}
	if (f) {
		char *end;
		int ok = fgets(line, sizeof(line), f) != NULL;

		fclose(f);
		errno = 0;
		if (ok)
			old = strtoull(line, &end, 10);
		if (!ok || errno || end == line || (*end != '\n' && *end != 0) ||
		    old >= UINT32_MAX - 2) {
			snprintf(
			    err, errlen,
			    "%s: not an NSM state number (remove the file to start again from 1)",
			    path);
			return -EINVAL;
		}
	}
	N.state = (uint32_t)old + 1;
	if ((N.state & 1) == 0)
		N.state++;
	snprintf(text, sizeof(text), "%u\n", N.state);
	rc = write_file(N.dir, "state", text);
	if (rc)
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(-rc));
	return rc;
}

static int find_host(const char *name)
{
	for (int i = 0; i < N.nhosts; i++)
		if (strcmp(N.hosts[i].name, name) == 0)
			return i;
	return -1;
}

static void load_hosts(void)
{
	DIR *d = opendir(N.smdir);
	struct dirent *e;

	if (d == NULL) {
		log_warn("NSM: cannot read %s: %s; no client host will be told of this restart",
		         N.smdir, strerror(errno));
		return;
	}
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX + NSM_NAME_MAX + 8], line[INET6_ADDRSTRLEN + 8];
		struct sockaddr_storage a;
		FILE *f;
		int ok;

		if (e->d_name[0] == '.')
			continue; /* ., .., and a write that did not finish */
		snprintf(path, sizeof(path), "%s/%s", N.smdir, e->d_name);
		if (!name_ok(e->d_name)) {
			log_warn("NSM: %s: not a host name; ignored", path);
			continue;
		}
		if (N.nhosts >= NSM_HOSTS_MAX) {
			log_warn("NSM: more than %d hosts in %s; %s and the rest ignored",
			         NSM_HOSTS_MAX, N.smdir, e->d_name);
			break;
		}
		f = cfs_fopen_nofollow(path, "r");
		if (f == NULL) {
			log_warn("NSM: %s: %s; ignored", path, strerror(errno));
			continue;
		}
		ok = fgets(line, sizeof(line), f) != NULL;
		fclose(f);
		if (ok)
			line[strcspn(line, "\n")] = 0;
		if (!ok || addr_parse(line, &a) != 0) {
			log_warn(
			    "NSM: %s: not an address (one line, numeric IPv4 or IPv6); ignored",
			    path);
			continue;
		}
		snprintf(N.hosts[N.nhosts].name, sizeof(N.hosts[0].name), "%s", e->d_name);
		N.hosts[N.nhosts].addr = a;
		N.nhosts++;
	}
	closedir(d);
	proto_counters.nsm_hosts = (uint64_t)N.nhosts;
}

/* A host file written or removed on a disk worker (a write fsyncs: not on
 * the loop). */
struct host_write {
	char dir[PATH_MAX];
	char name[NSM_NAME_MAX + 1];
	char text[INET6_ADDRSTRLEN + 2]; /* "": remove the file */
	int rc;
};

static int host_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + NSM_NAME_MAX + 8];

	if (*text)
		return write_file(dir, name, text);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return unlink(path) != 0 && errno != ENOENT ? -errno : 0;
}

static void host_write_work(void *arg)
{
	struct host_write *w = arg;

	w->rc = host_file(w->dir, w->name, w->text);
}

static void host_write_failed(const char *dir, const char *name, int rc)
{
	static struct log_limit lim;

	log_limited(&lim, CFS_LOG_WARN, "NSM: cannot write or remove %s/%s: %s", dir, name,
	            strerror(-rc));
}

static void host_write_done(void *arg)
{
	struct host_write *w = arg;

	if (w->rc)
		host_write_failed(w->dir, w->name, w->rc);
	free(w);
}

/* Writes the host's file (text "": removes it): on a worker when there are
 * workers (one host's changes in order, keyed by its name), else here. 0,
 * or -errno of an inline change (a worker's failure is logged when it is
 * known: the host is then told of a restart it should not be, or not told
 * of one, which its statd survives). */
static int host_write(const char *name, const char *text)
{
	struct host_write *w;
	uint64_t key = 1469598103934665603ull; /* FNV-1a of the name, never 0 */
	int rc;

	if (N.workers == NULL) {
		rc = host_file(N.smdir, name, text);
		if (rc)
			host_write_failed(N.smdir, name, rc);
		return rc;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	snprintf(w->dir, sizeof(w->dir), "%s", N.smdir);
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->text, sizeof(w->text), "%s", text);
	for (const char *c = name; *c; c++)
		key = (key ^ (uint8_t)*c) * 1099511628211ull;
	rc = workers_submit_keyed(N.workers, key | 1, host_write_work, host_write_done, w);
	if (rc)
		free(w);
	return rc;
}

void nsm_use_workers(struct workers *w)
{
	N.workers = w;
}

static void forget_host(const char *name)
{
	int i = find_host(name);

	if (i < 0)
		return;
	(void)host_write(N.hosts[i].name, "");
	N.hosts[i] = N.hosts[N.nhosts - 1];
	N.nhosts--;
	proto_counters.nsm_hosts = (uint64_t)N.nhosts;
}

/* --- telling client hosts --------------------------------------------------- */

static void relay_end(struct relay *r, int status, const char *what)
{
	char a[INET6_ADDRSTRLEN];

	addr_text(&r->addr, a, sizeof(a));
	if (status == 0) {
		proto_counters.nsm_relayed++;
		log_info("NSM: told client host %s (%s) to reclaim its locks (%s)", r->name, a,
		         r->why);
	} else if (status != -ECANCELED) {
		proto_counters.nsm_relay_failures++;
		log_warn("NSM: cannot tell client host %s (%s) to reclaim its locks (%s): %s: %s",
		         r->name, a, r->why, what, strerror(-status));
	}
	free(r);
}

static uint64_t remaining(const struct relay *r)
{
	uint64_t now = loop_clock_ms();

	return r->giveup_at > now ? r->giveup_at - now : 1;
}

static void notify_done(int status, void *res, void *arg)
{
	(void)res;
	relay_end(arg, status, "SM_NOTIFY");
}

static void getport_done(int status, void *res, void *arg)
{
	struct relay *r = arg;
	NSM1_NOTIFYargs na;
	struct sockaddr_storage to = r->addr;
	uint32_t port = status == 0 ? *(uint32_t *)res : 0;
	int rc;

	if (status != 0) {
		relay_end(r, status, "portmapper GETPORT");
		return;
	}
	if (port == 0 || port > 65535) {
		relay_end(r, -EPROTONOSUPPORT, "no statd registered with its portmapper");
		return;
	}
	if (to.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&to)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)&to)->sin_port = htons((uint16_t)port);
	na.mon_name = N.name;
	na.state = (int)N.state;
	rc = ucall_call(N.uc, (struct sockaddr *)&to, addr_len(&to), NSM_PROGRAM, NSM_V1,
	                NSM1_NOTIFY, (zdrproc_t)zdr_NSM1_NOTIFYargs, &na, (zdrproc_t)zdr_void, 0,
	                remaining(r), notify_done, r);
	if (rc)
		relay_end(r, rc, "SM_NOTIFY");
}

static void tell_host(const struct nsm_host *h, const char *why)
{
	struct relay *r = calloc(1, sizeof(*r));
	pmap2_mapping m = {NSM_PROGRAM, NSM_V1, IPPROTO_UDP, 0};
	struct sockaddr_storage to;
	int rc;

	if (r == NULL) {
		proto_counters.nsm_relay_failures++;
		log_warn("NSM: cannot tell client host %s: out of memory", h->name);
		return;
	}
	snprintf(r->name, sizeof(r->name), "%s", h->name);
	r->addr = h->addr;
	r->why = why;
	r->giveup_at = loop_clock_ms() + NSM_NOTIFY_GIVEUP_MS;
	to = h->addr;
	if (to.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&to)->sin6_port = htons(PMAP_PORT);
	else
		((struct sockaddr_in *)&to)->sin_port = htons(PMAP_PORT);
	rc = ucall_call(N.uc, (struct sockaddr *)&to, addr_len(&to), PMAP_PROGRAM, PMAP_V2,
	                PMAP2_GETPORT, (zdrproc_t)zdr_pmap2_mapping, &m, (zdrproc_t)zdr_u_int,
	                sizeof(uint32_t), NSM_NOTIFY_GIVEUP_MS, getport_done, r);
	if (rc)
		relay_end(r, rc, "portmapper GETPORT");
}

static void tell_all(const char *why)
{
	for (int i = 0; i < N.nhosts; i++)
		tell_host(&N.hosts[i], why);
}

/* --- the program ------------------------------------------------------------ */

static int from_upstream(const char *mon_name, const struct sockaddr_storage *peer)
{
	if (mon_name && N.up_host[0] && strcasecmp(mon_name, N.up_host) == 0)
		return 1;
	for (int i = 0; peer && i < N.nup; i++)
		if (proto_same_host(&N.up_addr[i], peer))
			return 1;
	return 0;
}

static void on_notify(struct cfs_req *req)
{
	const NSM1_NOTIFYargs *a = &req->args.nsm_notify;
	const struct sockaddr_storage *p = proto_req_peer_addr(req);
	struct sockaddr_storage peer;
	char name[NSM_MAXSTRLEN + 1];
	uint32_t state = (uint32_t)a->state;
	int have_peer = p && norm_addr((const struct sockaddr *)p, sizeof(*p), &peer) == 0;

	int privileged =
	    p && ntohs(p->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)p)->sin6_port
	                                        : ((const struct sockaddr_in *)p)->sin_port) < 1024;
	char from[INET6_ADDRSTRLEN];

	/* the reply first: the name is copied, the request is gone after it */
	snprintf(name, sizeof(name), "%s", a->mon_name ? a->mon_name : "");
	proto_reply(req, NULL);
	if (!N.started)
		return;
	snprintf(from, sizeof(from), "%s", "local");
	if (have_peer)
		addr_text(&peer, from, sizeof(from));
	if (p && !privileged) {
		/* statd and sm-notify send from a privileged port: from any
		 * other, any user on an allowed host could make us release
		 * another host's locks */
		static struct log_limit lim;
		proto_counters.nsm_notify_refused++;
		log_limited(&lim, CFS_LOG_WARN,
		            "NSM: SM_NOTIFY for %s from %s: not from a privileged port; ignored",
		            name, from);
		return;
	}
	if (from_upstream(name, have_peer ? &peer : NULL)) {
		proto_counters.nsm_notify_filer++;
		log_info(
		    "NSM: the filer %s restarted (SM_NOTIFY for %s from %s, state %u): telling "
		    "%d client host(s) to reclaim their locks",
		    N.up_host, name, from, state, N.nhosts);
		tell_all("the filer restarted");
		return;
	}
	proto_counters.nsm_notify_clients++;
	if (N.on_reboot) {
		log_info(
		    "NSM: client host %s (%s) restarted (state %u): releasing its locks upstream",
		    name, from, state);
		N.on_reboot(name, state, N.on_reboot_arg);
	} else {
		log_info("NSM: client host %s (%s) restarted (state %u): nothing registered to "
		         "release its locks",
		         name, from, state);
	}
	forget_host(name); /* remembered again when it locks */
}

void nsm_take(struct cfs_req *req, void *arg)
{
	(void)arg;
	nsm_submit(req);
}

void nsm_submit(struct cfs_req *req)
{
	switch (req->proc) {
	case NSM1_NOTIFY:
		on_notify(req);
		return;
	case NSM1_STAT: {
		/* the monitoring procedures are a local lockd's: a statd
		 * refuses them from another host (it would monitor hosts on
		 * that caller's behalf); the reply still gives our state */
		NSM1_STATres r = {NSM_STAT_FAIL, (int)N.state};
		proto_reply(req, &r);
		return;
	}
	case NSM1_MON: {
		NSM1_MONres r = {NSM_STAT_FAIL, (int)N.state};
		proto_reply(req, &r);
		return;
	}
	case NSM1_UNMON: {
		NSM1_UNMONres r = {(int)N.state};
		proto_reply(req, &r);
		return;
	}
	case NSM1_UNMON_ALL: {
		NSM1_UNMONALLres r = {(int)N.state};
		proto_reply(req, &r);
		return;
	}
	default: /* NULL; SIMU_CRASH, which a remote caller may not make */
		proto_reply(req, NULL);
		return;
	}
}

/* --- the interface ---------------------------------------------------------- */

int nsm_monitor(const char *caller_name, const struct sockaddr *peer, socklen_t len)
{
	struct sockaddr_storage a;
	char text[INET6_ADDRSTRLEN + 2];
	int i, rc;

	if (!N.started)
		return -ENODEV;
	if (caller_name == NULL || !name_ok(caller_name) || norm_addr(peer, len, &a) != 0)
		return -EINVAL;
	i = find_host(caller_name);
	if (i >= 0 && proto_same_host(&N.hosts[i].addr, &a))
		return 0;
	if (i < 0 && N.nhosts >= NSM_HOSTS_MAX) {
		static struct log_limit lim;
		log_limited(
		    &lim, CFS_LOG_WARN,
		    "NSM: %d client hosts remembered already; %s will not be told of restarts",
		    NSM_HOSTS_MAX, caller_name);
		return -ENOSPC;
	}
	addr_text(&a, text, sizeof(text));
	strcat(text, "\n");
	rc = host_write(caller_name, text);
	if (rc)
		return rc;
	if (i < 0) {
		i = N.nhosts++;
		snprintf(N.hosts[i].name, sizeof(N.hosts[i].name), "%s", caller_name);
		proto_counters.nsm_hosts = (uint64_t)N.nhosts;
	}
	N.hosts[i].addr = a;
	return 0;
}

void nsm_on_reboot(void (*fn)(const char *caller_name, uint32_t state, void *arg), void *arg)
{
	N.on_reboot = fn;
	N.on_reboot_arg = arg;
}

uint32_t nsm_state(void)
{
	return N.state;
}

int nsm_host_count(void)
{
	return N.nhosts;
}

int nsm_host_known(const char *name)
{
	return find_host(name) >= 0;
}

static void resolve_upstream(const struct cfs_config *cfg)
{
	struct upstream_url u;
	struct addrinfo hints, *ai = NULL;
	char err[256];

	if (cfg->upstream == NULL || upstream_parse_url(cfg->upstream, &u, err, sizeof(err)) != 0)
		return;
	snprintf(N.up_host, sizeof(N.up_host), "%s", u.host);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_DGRAM;
	if (getaddrinfo(u.host, NULL, &hints, &ai) != 0) {
		log_warn(
		    "NSM: cannot resolve the filer %s: its SM_NOTIFY is recognised by name only",
		    u.host);
		return;
	}
	for (struct addrinfo *p = ai; p && N.nup < NSM_UPSTREAM_ADDRS; p = p->ai_next)
		if (norm_addr(p->ai_addr, p->ai_addrlen, &N.up_addr[N.nup]) == 0)
			N.nup++;
	freeaddrinfo(ai);
}

int nsm_start(struct loop *l, const struct cfs_config *cfg, char *err, size_t errlen)
{
	int rc;

	void (*fn)(const char *, uint32_t, void *) = N.on_reboot;
	void *fn_arg = N.on_reboot_arg;
	struct workers *w = N.workers;

	if (N.started)
		return -EALREADY;
	memset(&N, 0, sizeof(N));
	N.on_reboot = fn; /* the lock room may have registered first */
	N.on_reboot_arg = fn_arg;
	N.workers = w;
	N.cfg = cfg;
	if (snprintf(N.dir, sizeof(N.dir), "%s/nsm", cfg->cache_dir) >= (int)sizeof(N.dir) ||
	    snprintf(N.smdir, sizeof(N.smdir), "%s/sm", N.dir) >= (int)sizeof(N.smdir)) {
		snprintf(err, errlen, "cache_dir %s: too long", cfg->cache_dir);
		return -ENAMETOOLONG;
	}
	rc = make_dir(N.dir, err, errlen);
	if (rc == 0)
		rc = make_dir(N.smdir, err, errlen);
	if (rc == 0)
		rc = raise_state(err, errlen);
	if (rc)
		return rc;
	if (cfg->nsm_name)
		snprintf(N.name, sizeof(N.name), "%s", cfg->nsm_name);
	else if (gethostname(N.name, sizeof(N.name)) != 0 || N.name[0] == 0)
		snprintf(N.name, sizeof(N.name), "localhost");
	N.hosts = calloc(NSM_HOSTS_MAX, sizeof(*N.hosts));
	if (N.hosts == NULL || ucall_client_new(l, &N.uc) != 0) {
		free(N.hosts);
		snprintf(err, errlen, "NSM: out of memory");
		return -ENOMEM;
	}
	resolve_upstream(cfg);
	load_hosts();
	N.started = 1;
	log_info("NSM: state %u, name %s, %d client host(s) remembered in %s", N.state, N.name,
	         N.nhosts, N.smdir);
	tell_all("cachefsd restarted");
	return 0;
}

void nsm_stop(void)
{
	if (!N.started)
		return;
	ucall_client_free(N.uc); /* the relays in flight end, ECANCELED */
	free(N.hosts);
	N.hosts = NULL;
	N.nhosts = 0;
	N.started = 0;
	proto_counters.nsm_hosts = 0;
}
