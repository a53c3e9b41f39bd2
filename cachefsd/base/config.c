#include "config.h"
#include "log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

enum cfg_type {
	CFG_STR,
	CFG_INT,
	CFG_SIZE,
	CFG_BOOL,
	CFG_LOGLEVEL,
	CFG_ALLOW,
	CFG_CHOICE, /* one of the '|'-separated words of arg, stored as its index (int) */
	CFG_PERCENT, /* a whole number min..max, "N" or "N%" (cachefilesd writes "brun 10%") */
};

struct cfg_key {
	const char *name;
	enum cfg_type type;
	size_t off;
	const char *def; /* NULL: no default */
	long min, max;
	const char *arg;
	const char *help;
};

#define OFF(f) offsetof(struct cfs_config, f)

static const struct cfg_key keys[] = {
	{"upstream", CFG_STR, OFF(upstream), NULL, 0, 0, "URL",
	 "upstream export, nfs://HOST/EXPORT[?nfsport=N&mountport=M] (required)"},
	{"listen", CFG_STR, OFF(listen), "0.0.0.0:2049", 0, 0, "ADDR:PORT",
	 "address and port: NFSv3 and MOUNT v3 over TCP, NSM over TCP and UDP"},
	{"cache_dir", CFG_STR, OFF(cache_dir), NULL, 0, 0, "DIR",
	 "local cache directory (required; created if missing)"},
	{"foreground", CFG_BOOL, OFF(foreground), "false", 0, 1, "BOOL",
	 "stay in the foreground and log to stderr"},
	{"export_path", CFG_STR, OFF(export_path), NULL, 0, 0, "PATH",
	 "path clients mount (default: the upstream's export path)"},
	{"upstream_version", CFG_CHOICE, OFF(upstream_version), "auto", 0, 0, "auto|3|4",
	 "NFS version spoken to the upstream (the URL is the same): 3 = MOUNT and NFSv3; "
	 "4 = NFSv4.0, the URL's path as the server's pseudo-filesystem path (reads only for "
	 "now: writes answer NFS3ERR_ROFS); auto = 3 when the server's MOUNT and NFSv3 "
	 "answer for the export, else 4"},
	{"upstream_connections", CFG_INT, OFF(upstream_connections), "4", 1, 64, "N",
	 "TCP connections to the upstream server"},
	{"upstream_timeout", CFG_INT, OFF(upstream_timeout), "15", 1, 3600, "SECONDS",
	 "start-up deadline for reaching the upstream; per-call timeout when soft"},
	{"reconnect_max", CFG_INT, OFF(reconnect_max), "5", 1, 300, "SECONDS",
	 "cap of the upstream reconnect back-off (50 ms doubling until the server answers)"},
	{"soft", CFG_BOOL, OFF(soft), "false", 0, 1, "BOOL",
	 "fail calls with NFS3ERR_IO after upstream_timeout instead of waiting (hard)"},
	{"log_level", CFG_LOGLEVEL, OFF(log_level), "info", 0, 3, "LEVEL",
	 "error, warn, info or debug"},
	{"pid_file", CFG_STR, OFF(pid_file), NULL, 0, 0, "FILE", "write the daemon's pid here"},
	{"stats_file", CFG_STR, OFF(stats_file), NULL, 0, 0, "FILE",
	 "where SIGUSR1 writes every counter (default: <cache_dir>/stats)"},
	{"client_max_inflight", CFG_INT, OFF(client_max_inflight), "256", 1, 65536, "N",
	 "calls one client connection may have in flight before it is not read"},
	{"client_idle_timeout", CFG_INT, OFF(client_idle_timeout), "360", 0, 86400 * 7, "SECONDS",
	 "close a client connection that sent nothing for this long and waits for nothing "
	 "(NFS clients reconnect when they need to); 0: never"},
	{"client_memory_max", CFG_SIZE, OFF(client_memory_max), "256M", 16 << 20, 1L << 40, "SIZE",
	 "memory all client connections may hold (records being received, calls in flight, "
	 "replies not yet sent); beyond it no new call is read and stalled connections are "
	 "closed, biggest first"},
	{"allow", CFG_ALLOW, OFF(allow), "127.0.0.0/8, ::1", 0, 0, "CIDR,...",
	 "client networks allowed to connect and mount"},
	{"secure_ports", CFG_BOOL, OFF(secure_ports), "true", 0, 1, "BOOL",
	 "refuse clients whose source port is 1024 or above (MNT: MNT3ERR_ACCES; NFS: "
	 "AUTH_TOOWEAK), as the filer does by default: only root on a client host can use a "
	 "port below 1024, so no other user there can claim a uid; false for clients behind "
	 "NAT or unprivileged user-space clients"},
	{"root_squash", CFG_BOOL, OFF(root_squash), "false", 0, 1, "BOOL",
	 "forward calls of uid 0 as anon_uid/anon_gid"},
	{"anon_uid", CFG_INT, OFF(anon_uid), "65534", 0, 2147483647, "UID",
	 "the identity root is squashed to"},
	{"anon_gid", CFG_INT, OFF(anon_gid), "65534", 0, 2147483647, "GID",
	 "the group root is squashed to"},
	{"chunk_size", CFG_SIZE, OFF(chunk_size), "1M", 64 << 10, 1 << 20, "SIZE",
	 "unit of caching (power of two, 64K..1M); fetched as READs of the upstream's rtmax"},
	{"inline_max", CFG_SIZE, OFF(inline_max), "64K", 0, 1 << 20, "SIZE",
	 "files up to this size are kept inside the index (one lookup per read)"},
	{"cache_size", CFG_SIZE, OFF(cache_size), "0", 0, LONG_MAX, "SIZE",
	 "cap on cached data (e.g. 50G); 0: limited by the thresholds only"},
	{"brun", CFG_PERCENT, OFF(brun), "10", 0, 100, "PERCENT",
	 "culling stops and filling resumes above this % of free blocks"},
	{"bcull", CFG_PERCENT, OFF(bcull), "7", 0, 100, "PERCENT",
	 "culling starts below this % of free blocks"},
	{"bstop", CFG_PERCENT, OFF(bstop), "3", 0, 100, "PERCENT",
	 "filling stops below this % of free blocks (reads pass through)"},
	{"frun", CFG_PERCENT, OFF(frun), "10", 0, 100, "PERCENT", "like brun, for free files (inodes)"},
	{"fcull", CFG_PERCENT, OFF(fcull), "7", 0, 100, "PERCENT", "like bcull, for free files"},
	{"fstop", CFG_PERCENT, OFF(fstop), "3", 0, 100, "PERCENT", "like bstop, for free files"},
	{"readahead", CFG_SIZE, OFF(readahead), "4M", 0, 64 << 20, "SIZE",
	 "prefetch window ahead of a sequential reader; 0: off"},
	{"io_threads", CFG_INT, OFF(io_threads), "4", 1, 64, "N",
	 "threads doing cache-disk reads and writes"},
	{"busy_poll", CFG_INT, OFF(busy_poll), "200", 0, 100000, "MICROSECONDS",
	 "after handling calls, poll this long before sleeping: lower latency for clients "
	 "that wait for each reply, at the cost of CPU while busy; 0: off"},
	{"lookup_prefetch", CFG_BOOL, OFF(lookup_prefetch), "true", 0, 1, "BOOL",
	 "fetch a file of at most inline_max bytes when a client looks it up, so its READ is "
	 "answered from the cache (costs upstream reads of files looked up but never read)"},
	{"memory_cache", CFG_SIZE, OFF(memory_cache), "64M", 0, 1L << 40, "SIZE",
	 "recently verified chunks kept in memory"},
	{"meta_ttl", CFG_INT, OFF(meta_ttl), "0", 0, 86400 * 30, "SECONDS",
	 "0: strict mode (metadata calls go upstream); N: ttl mode, metadata answered from "
	 "the cache while younger than N seconds"},
	{"meta_neg_ttl", CFG_INT, OFF(meta_neg_ttl), "5", 0, 86400, "SECONDS",
	 "ttl mode: how long a NOENT lookup is reused (at most meta_ttl)"},
	{"write_quiesce", CFG_INT, OFF(write_quiesce), "30", 0, 86400, "SECONDS",
	 "a file written through the proxy is not cached until this long after its last write"},
	{"lock_poll", CFG_INT, OFF(lock_poll), "30", 0, 3600, "SECONDS",
	 "a blocking lock the filer answered BLOCKED is asked again this often on the client's "
	 "behalf, for filers that cannot call the proxy back; 0: off"},
	{"fresh_guard", CFG_INT, OFF(fresh_guard), "2", 0, 3600, "SECONDS",
	 "data read less than this long after the tick of the file's ctime ended, by the "
	 "filer's clock as measured, is served but not stored (timestamp granularity); 0: off"},
	{"evidence_ttl", CFG_INT, OFF(evidence_ttl), "60", 1, 86400, "SECONDS",
	 "strict mode: how long what the server answered a credential (READ, ACCESS) lets "
	 "it read cached bytes before the server is asked again (ttl mode: meta_ttl); the "
	 "bound on how late a revoked permission or a removed file is noticed by a client "
	 "that does not revalidate"},
	{"read_evidence", CFG_CHOICE, OFF(read_evidence), "mode", 0, 0, "read|mode|access",
	 "what lets a credential read cached bytes: read = only a READ the server answered "
	 "for it; mode = that, or an ACCESS grant the file's mode, owner and group also allow "
	 "(AUTH_SYS); access = any ACCESS grant (servers whose ACCESS is exact)"},
	{"register", CFG_CHOICE, OFF(rpcbind_register), "auto", 0, 0, "auto|yes|no",
	 "register the programs served (NFS 3, MOUNT 3 and 1; TCP, the listen port) with "
	 "the rpcbind at 127.0.0.1:111, so that clients mount without port= options and "
	 "showmount works: "
	 "auto = when an rpcbind answers, skipping a program another live server has "
	 "registered; yes = refuse to start when that cannot be done; no = never"},
	{"control_socket", CFG_STR, OFF(control_socket), NULL, 0, 0, "PATH",
	 "Unix socket cachefsctl talks to, mode 0600 (default: <cache_dir>/control)"},
	{"metrics_listen", CFG_STR, OFF(metrics_listen), NULL, 0, 0, "ADDR:PORT",
	 "serve Prometheus metrics on http://ADDR:PORT/metrics (e.g. 127.0.0.1:9469; "
	 "default: off)"},
	{"nsm_name", CFG_STR, OFF(nsm_name), NULL, 0, 0, "NAME",
	 "the proxy's name in the SM_NOTIFY it sends its clients' statd: the name they mount "
	 "it by (default: the host name)"},
	{"access_prefetch", CFG_INT, OFF(access_prefetch), "16", 0, 1024, "N",
	 "ttl mode: when a listing (READDIRPLUS) reaches a client, ask the upstream ACCESS "
	 "for its entries that client has no answer of, as that client, in the background: "
	 "at most N such calls in flight, the rest queued (32*N of a listing, 64*N in all); "
	 "0: off"},
	{"strict_access_reuse", CFG_BOOL, OFF(strict_access_reuse), "yes", 0, 1, "BOOL",
	 "strict mode: answer an ACCESS call with the server's earlier ACCESS answer to the "
	 "same credential (at most strict_access_ttl old, kept across restarts) when the server "
	 "answered a GETATTR or LOOKUP of the file within the last second showing its ctime, "
	 "mode, owner and group unchanged since (docs/coherence.md); no: forward every ACCESS"},
	{"strict_access_ttl", CFG_INT, OFF(strict_access_ttl), "600", 1, 86400 * 7, "SECONDS",
	 "strict mode: how old a server's ACCESS answer may be for strict_access_reuse; the "
	 "bound on how late a change the file's attributes do not show (the server's group "
	 "database, its export options) is seen by a client that revalidates"},
	{"strict_lookup_attrs", CFG_INT, OFF(strict_lookup_attrs), "2000", 0, 100000, "MICROSECONDS",
	 "strict mode: a GETATTR that comes on the same client connection at most this long "
	 "after the server answered a LOOKUP of the file, the first since, is answered with "
	 "the attributes that LOOKUP just gave (an open's LOOKUP and GETATTR, back to back; "
	 "docs/coherence.md); 0: forward every GETATTR"},
	{"peers", CFG_STR, OFF(peers), NULL, 0, 0, "HOST:PORT[,HOST:PORT...]",
	 "the fleet's nodes (this one included or not), the same list on every node: a chunk "
	 "missed is asked of the node that owns it (rendezvous hashing of handle and chunk) "
	 "before the filer; unset: no peers"},
	{"peer_self", CFG_STR, OFF(peer_self), NULL, 0, 0, "HOST:PORT",
	 "this node's entry in peers (default: the entry equal to listen)"},
	{"peer_timeout", CFG_INT, OFF(peer_timeout), "500", 10, 60000, "MILLISECONDS",
	 "how long a fill waits for a peer before it goes to the filer (the peer is then left "
	 "out for a back-off, 1 s doubling to 30 s)"},
	{"peer_connections", CFG_INT, OFF(peer_connections), "2", 1, 16, "N",
	 "TCP connections to each peer"},
	{"peer_keep", CFG_BOOL, OFF(peer_keep), "false", 0, 1, "BOOL",
	 "keep a copy of the chunks taken from the peer that owns them (false: serve them and "
	 "keep none, so that each chunk is cached once in the fleet, on its owner)"},
	{"warm_ahead", CFG_INT, OFF(warm_ahead), "1024", 0, 4096, "N",
	 "when a listing (READDIRPLUS) reaches a client, read the cache-disk pages of the "
	 "records (and inline bytes) of its first N regular files on a worker, in the order "
	 "listed, before the client reads them; 0: off"},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))
_Static_assert(NKEYS <= CFS_CONFIG_KEYS, "raise CFS_CONFIG_KEYS in config.h");

static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *key_text(const struct cfs_config *c, const struct cfg_key *k, char *buf,
			    size_t len);

static const struct cfg_key *find_key(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int parse_bool(const char *v, int *out)
{
	static const char *const t[] = {"1", "true", "yes", "on"};
	static const char *const f[] = {"0", "false", "no", "off"};

	for (int i = 0; i < 4; i++) {
		if (strcasecmp(v, t[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(v, f[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

int config_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v, frac = 0, scale = 1;
	uint64_t mult = 1;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == '.') { /* "1.5T": up to 9 digits of fraction */
		end++;
		if (!isdigit((unsigned char)*end))
			return -EINVAL;
		for (; isdigit((unsigned char)*end); end++) {
			if (scale == 1000000000ULL)
				return -EINVAL;
			frac = frac * 10 + (unsigned long long)(*end - '0');
			scale *= 10;
		}
	}
	while (*end == ' ' || *end == '\t') /* "800 G" */
		end++;
	switch (toupper((unsigned char)*end)) {
	case 0:
	case 'B':
		break;
	case 'K':
		mult = 1ULL << 10;
		break;
	case 'M':
		mult = 1ULL << 20;
		break;
	case 'G':
		mult = 1ULL << 30;
		break;
	case 'T':
		mult = 1ULL << 40;
		break;
	case 'P':
		mult = 1ULL << 50;
		break;
	default:
		return -EINVAL;
	}
	if (*end && toupper((unsigned char)*end) != 'B') {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
	}
	if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end)
		return -EINVAL;
	/* a fraction of a byte is no size: "1.5" alone is refused */
	if (scale > 1 && mult == 1)
		return -EINVAL;
	{
		/* rounded to the nearest byte: 0.1K is 102 */
		unsigned __int128 total = (unsigned __int128)v * mult +
					  ((unsigned __int128)frac * mult + scale / 2) / scale;
		if (total > UINT64_MAX)
			return -EINVAL;
		*out = (uint64_t)total;
	}
	return 0;
}

int config_parse_cidr(const char *s, struct cfs_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	int maxp;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		maxp = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		maxp = 128;
	} else {
		return -EINVAL;
	}
	out->prefix = maxp;
	if (slash) {
		char *end;
		long p;

		if (!isdigit((unsigned char)slash[1]))
			return -EINVAL;
		p = strtol(slash + 1, &end, 10);
		if (*end || p < 0 || p > maxp)
			return -EINVAL;
		out->prefix = (int)p;
	}
	return 0;
}

static int prefix_match(const uint8_t *a, const uint8_t *b, int prefix)
{
	int full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, (size_t)full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

int config_allowed(const struct cfs_config *c, const void *sa_)
{
	const struct sockaddr *sa = sa_;
	uint8_t addr[16];
	int family;

	if (sa->sa_family == AF_INET) {
		family = AF_INET;
		memcpy(addr, &((const struct sockaddr_in *)sa_)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa_)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			family = AF_INET;
			memcpy(addr, &a6->s6_addr[12], 4);
		} else {
			family = AF_INET6;
			memcpy(addr, a6->s6_addr, 16);
		}
	} else {
		return 0;
	}
	for (int i = 0; i < c->nallow; i++) {
		const struct cfs_cidr *r = &c->allow_list[i];
		if (r->family == family && prefix_match(addr, r->addr, r->prefix))
			return 1;
	}
	return 0;
}

static int parse_allow(struct cfs_config *c, const char *v, char *err, size_t errlen)
{
	char *copy = strdup(v), *save = NULL, *tok;
	int n = 0, rc = 0;

	if (copy == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		if (n == CFS_MAX_ALLOW) {
			errf(err, errlen, "more than %d networks", CFS_MAX_ALLOW);
			rc = -EINVAL;
			break;
		}
		if (config_parse_cidr(tok, &c->allow_list[n]) != 0) {
			errf(err, errlen, "'%s' is not an address or ADDR/PREFIX network", tok);
			rc = -EINVAL;
			break;
		}
		n++;
	}
	free(copy);
	if (rc == 0)
		c->nallow = n;
	return rc;
}

/* "HOST:PORT" with a port 1..65535 ([V6ADDR]:PORT too). */
static int addr_port_ok(const char *v)
{
	const char *colon = strrchr(v, ':');
	char *end;
	long port;

	if (colon == NULL || colon == v || colon[1] == 0)
		return 0;
	port = strtol(colon + 1, &end, 10);
	return *end == 0 && port >= 1 && port <= 65535;
}

/* "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (every address) with a port
 * 1..65535 written in digits: getaddrinfo() would take 99999 and bind some
 * other port. */
static int listen_ok(const char *v)
{
	const char *colon;

	if (v[0] == '[') {
		const char *end = strchr(v, ']');
		if (end == NULL || end == v + 1 || end[1] != ':')
			return 0;
		colon = end + 1;
	} else {
		colon = strrchr(v, ':');
		if (colon == NULL)
			return 0;
	}
	if (colon[1] == 0 || strlen(colon + 1) > 5 || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return 0;
	long port = strtol(colon + 1, NULL, 10);
	return port >= 1 && port <= 65535;
}

/* "HOST:PORT[,HOST:PORT...]" (commas, blanks around them allowed). */
static int peers_ok(const char *v)
{
	char *copy = strdup(v), *save = NULL;
	int n = 0, ok = copy != NULL;

	for (char *t = copy ? strtok_r(copy, ", \t", &save) : NULL; t && ok;
	     t = strtok_r(NULL, ", \t", &save)) {
		ok = addr_port_ok(t);
		n++;
	}
	free(copy);
	return ok && n > 0;
}

/* What statd matches against the name a client mounted: a host name or
 * an address. */
static int nsm_name_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > 255)
		return 0;
	return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:") == n;
}

/* Rules on one key's value alone, checked as it is set so that a mistake
 * in a file names its line (rules across keys: config_validate()). */
static int check_value(const char *key, const char *v, uint64_t n, char *err, size_t errlen)
{
	if (strcmp(key, "upstream") == 0 && strncmp(v, "nfs://", 6) != 0)
		errf(err, errlen, "'%s' is not an nfs:// URL", v);
	else if (strcmp(key, "export_path") == 0 && v[0] != '/')
		errf(err, errlen, "'%s' must start with /", v);
	else if (strcmp(key, "listen") == 0 && !listen_ok(v))
		errf(err, errlen, "'%s' is not ADDR:PORT (port 1..65535)", v);
	else if (strcmp(key, "control_socket") == 0 && v[0] != '/')
		errf(err, errlen, "'%s' must be an absolute path", v);
	else if (strcmp(key, "control_socket") == 0 && strlen(v) > 107)
		errf(err, errlen, "'%s' is longer than 107 bytes", v);
	else if (strcmp(key, "peers") == 0 && !peers_ok(v))
		errf(err, errlen, "'%s' is not HOST:PORT[,HOST:PORT...] (port 1..65535)", v);
	else if (strcmp(key, "peer_self") == 0 && !addr_port_ok(v))
		errf(err, errlen, "'%s' is not HOST:PORT (port 1..65535)", v);
	else if (strcmp(key, "metrics_listen") == 0 && strcmp(v, "off") != 0 && !addr_port_ok(v))
		errf(err, errlen, "'%s' is not ADDR:PORT (or off)", v);
	else if (strcmp(key, "nsm_name") == 0 && !nsm_name_ok(v))
		errf(err, errlen, "'%s' is not a host name (1..255 of A-Z a-z 0-9 . - _ :)", v);
	else if (strcmp(key, "chunk_size") == 0 && (n & (n - 1)) != 0)
		errf(err, errlen, "%llu is not a power of two", (unsigned long long)n);
	else
		return 0;
	return -EINVAL;
}

static int set_key(struct cfs_config *c, const struct cfg_key *k, const char *v, char *err,
		   size_t errlen)
{
	void *field = (char *)c + k->off;

	switch (k->type) {
	case CFG_STR: {
		char **s = field;
		if (*v == 0) {
			errf(err, errlen, "empty value");
			return -EINVAL;
		}
		if (check_value(k->name, v, 0, err, errlen) != 0)
			return -EINVAL;
		char *dup = strdup(v);
		if (dup == NULL)
			return -ENOMEM;
		free(*s);
		*s = dup;
		return 0;
	}
	case CFG_INT: {
		char *end;
		long n;
		errno = 0;
		n = strtol(v, &end, 10);
		if (*v == 0 || *end || errno) {
			errf(err, errlen, "'%s' is not a whole number", v);
			return -EINVAL;
		}
		if (n < k->min || n > k->max) {
			errf(err, errlen, "%ld is out of range %ld..%ld", n, k->min, k->max);
			return -EINVAL;
		}
		*(int *)field = (int)n;
		return 0;
	}
	case CFG_PERCENT: {
		char *end;
		long n;
		errno = 0;
		n = strtol(v, &end, 10);
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end == '%')
			end++;
		if (!isdigit((unsigned char)*v) || *end || errno) {
			errf(err, errlen, "'%s' is not a percentage (a whole number, with or without %%)",
			     v);
			return -EINVAL;
		}
		if (n < k->min || n > k->max) {
			errf(err, errlen, "%ld%% is out of range %ld..%ld%%", n, k->min, k->max);
			return -EINVAL;
		}
		*(int *)field = (int)n;
		return 0;
	}
	case CFG_SIZE: {
		uint64_t n;
		if (v[0] && v[strlen(v) - 1] == '%') {
			/* cachefilesd's percentages are of free space: brun..fstop */
			errf(err, errlen,
			     "'%s': a size is bytes (64M, 800G, 1.5T), not a percentage; the "
			     "free-space percentages are brun, bcull and bstop",
			     v);
			return -EINVAL;
		}
		if (config_parse_size(v, &n) != 0) {
			errf(err, errlen, "'%s' is not a size (bytes, or with K, M, G, T: 64K, 1.5T)",
			     v);
			return -EINVAL;
		}
		if (n < (uint64_t)k->min || n > (uint64_t)k->max) {
			errf(err, errlen, "%s is out of range %ld..%ld bytes", v, k->min, k->max);
			return -EINVAL;
		}
		if (check_value(k->name, v, n, err, errlen) != 0)
			return -EINVAL;
		*(uint64_t *)field = n;
		return 0;
	}
	case CFG_BOOL:
		if (parse_bool(v, field) != 0) {
			errf(err, errlen, "'%s' is not a boolean (true/false, yes/no, on/off, 1/0)",
			     v);
			return -EINVAL;
		}
		return 0;
	case CFG_LOGLEVEL: {
		int lv = log_level_parse(v);
		if (lv < 0) {
			errf(err, errlen, "'%s' is not one of error, warn, info, debug", v);
			return -EINVAL;
		}
		*(int *)field = lv;
		return 0;
	}
	case CFG_CHOICE: {
		size_t n = strlen(v);
		int i = 0;
		for (const char *w = k->arg; *w; i++) {
			size_t wl = strcspn(w, "|");
			if (wl == n && strncasecmp(v, w, n) == 0) {
				*(int *)field = i;
				return 0;
			}
			w += wl + (w[wl] == '|');
		}
		errf(err, errlen, "'%s' is not one of %s", v, k->arg);
		return -EINVAL;
	}
	case CFG_ALLOW: {
		int rc = parse_allow(c, v, err, errlen);
		if (rc)
			return rc;
		char *dup = strdup(v);
		if (dup == NULL)
			return -ENOMEM;
		free(*(char **)field);
		*(char **)field = dup;
		return 0;
	}
	}
	return -EINVAL;
}

int config_set(struct cfs_config *c, const char *key, const char *value, char *err, size_t errlen)
{
	const struct cfg_key *k = find_key(key);

	if (k == NULL) {
		errf(err, errlen, "unknown key");
		return -ENOENT;
	}
	return set_key(c, k, value, err, errlen);
}

void config_defaults(struct cfs_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].def)
			set_key(c, &keys[i], keys[i].def, NULL, 0);
}

void config_free(struct cfs_config *c)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].type == CFG_STR || keys[i].type == CFG_ALLOW) {
			char **s = (char **)((char *)c + keys[i].off);
			free(*s);
			*s = NULL;
		}
	}
	for (size_t i = 0; i < NKEYS; i++) {
		free(c->origin[i]);
		c->origin[i] = NULL;
	}
	free(c->config_file);
	free(c->include_dir);
	free(c->files_read);
	free(c->notes);
	c->config_file = c->include_dir = c->files_read = c->notes = NULL;
}

/* --- the file loader -------------------------------------------------- */

/* cachefilesd.conf(5)'s commands: the one that means the same here is read
 * as its cachefsd key; the others are refused with what to do instead, so
 * that a file written for cachefilesd is never half understood. */
static const struct {
	const char *name, *to, *why;
} cachefilesd_keys[] = {
	{"dir", "cache_dir", NULL},
	{"tag", NULL, "it names a kernel FS-Cache cache, and cachefsd has none: remove the line"},
	{"secctx", NULL,
	 "it is the cachefiles kernel module's security context; cachefsd's files take the "
	 "label of cache_dir: remove the line"},
	{"culltable", NULL,
	 "cachefsd culls least recently used files from its index, with no table to size: "
	 "remove the line"},
	{"nocull", NULL,
	 "cachefsd culls whenever free space is below bcull/fcull; to bound the cache below "
	 "its filesystem's size, set cache_size"},
	{"resume_thresholds", NULL, "cachefsd resumes filling at brun/frun: remove the line"},
	{"debug", NULL, "it is a kernel module trace mask; cachefsd's own detail is log_level = debug"},
};

/* One load (a main file and its include directory): the errors so far. */
struct load {
	struct cfs_config *c;
	char *err;
	size_t errlen;
	int nerr, nlost; /* errors, and those err had no room for */
	int rc;		 /* the first error's code */
};

/* Appends to a string owned by the config ("sep" between items). */
static int str_append(char **s, const char *sep, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int str_append(char **s, const char *sep, const char *fmt, ...)
{
	size_t used = *s ? strlen(*s) : 0, sl = *s ? strlen(sep) : 0;
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	p = realloc(*s, used + sl + (size_t)n + 1);
	if (p == NULL)
		return -ENOMEM;
	if (used)
		memcpy(p + used, sep, sl);
	va_start(ap, fmt);
	vsnprintf(p + used + sl, (size_t)n + 1, fmt, ap);
	va_end(ap);
	*s = p;
	return 0;
}

/* One error line: "FILE:LINE: KEY: why", "FILE:LINE: why" or "FILE: why". */
static void load_error(struct load *ld, const char *path, int line, const char *key,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void load_error(struct load *ld, const char *path, int line, const char *key,
		       const char *fmt, ...)
{
	char why[1024], where[64] = "";
	va_list ap;
	size_t used;
	int n;

	ld->nerr++;
	if (ld->rc == 0)
		ld->rc = -EINVAL;
	if (ld->err == NULL || ld->errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (line)
		snprintf(where, sizeof(where), ":%d", line);
	used = strlen(ld->err);
	/* room is kept for the "(N more errors)" line */
	n = snprintf(ld->err + used, ld->errlen - used, "%s%s%s: %.64s%s%s", used ? "\n" : "", path,
		     where, key ? key : "", key ? ": " : "", why);
	if (n < 0 || used + (size_t)n + 40 >= ld->errlen) {
		ld->err[used] = 0;
		ld->nlost++;
	}
}

/* Edit distance of two short words, for "did you mean". */
static int word_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

static const char *nearest_key(const char *name)
{
	const char *best = NULL;
	int bd = 3;

	for (size_t i = 0; i < NKEYS; i++) {
		int d = word_distance(name, keys[i].name);
		if (d < bd) {
			bd = d;
			best = keys[i].name;
		}
	}
	return best;
}

/* The value after the key: a quoted one is taken as it is between its
 * quotes ('...' or "...", no escapes); an unquoted one ends at a # or ;
 * after white space. Sets *val in s; returns NULL or what is wrong. */
static const char *line_value(char *s, char **val, int *quoted)
{
	*quoted = 0;
	if (*s == '"' || *s == '\'') {
		char *close = strchr(s + 1, *s), *after;

		if (close == NULL)
			return *s == '"' ? "no closing \" quote" : "no closing ' quote";
		*close = 0;
		after = trim(close + 1);
		if (*after && *after != '#' && *after != ';')
			return "text after the closing quote";
		*val = s + 1;
		*quoted = 1;
		return NULL;
	}
	if (*s == '#' || *s == ';') /* a value that is only a comment is no value */
		*s = 0;
	for (char *h = s; *h; h++) {
		if ((*h == '#' || *h == ';') && h > s && isspace((unsigned char)h[-1])) {
			*h = 0;
			break;
		}
	}
	*val = trim(s);
	return NULL;
}

/* Sets key k from a file line (or a flag: line 0, where = the flag), and
 * records where the value came from. A value an earlier file set is
 * overridden with a note naming both places. */
static int load_set(struct load *ld, const struct cfg_key *k, const char *v, const char *path,
		    int line, const char *name)
{
	struct cfs_config *c = ld->c;
	size_t ki = (size_t)(k - keys);
	char why[512], ob[64], nb[64], old[256], *where;
	const char *ov;
	int rc;

	ov = key_text(c, k, ob, sizeof(ob));
	snprintf(old, sizeof(old), "%s", ov ? ov : "(unset)");
	rc = set_key(c, k, v, why, sizeof(why));
	if (rc) {
		load_error(ld, path, line, name, "%s", why);
		return rc;
	}
	if (line)
		rc = asprintf(&where, "%s:%d", path, line);
	else
		rc = asprintf(&where, "flag %s", path);
	if (rc < 0) {
		load_error(ld, path, line, name, "out of memory");
		return -ENOMEM;
	}
	if (line && c->origin[ki]) {
		const char *nv = key_text(c, k, nb, sizeof(nb));
		if (str_append(&c->notes, "\n", "%s: %s = %.200s overrides %s (was %.200s)", where, k->name,
			       nv ? nv : "(unset)", c->origin[ki], old) != 0) {
			load_error(ld, path, line, name, "out of memory");
			free(where);
			return -ENOMEM;
		}
	}
	free(c->origin[ki]);
	c->origin[ki] = where;
	return 0;
}

/* One line of a file. seen[] holds the line each key was set on in this
 * file (a second setting is an error: which one was meant?). */
static void load_line(struct load *ld, const char *path, int lineno, char *line, int *seen,
		      int *include_line, int is_main)
{
	static const char keychars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "0123456789_-";
	char *p = trim(line), *rest, *val, name[64];
	const struct cfg_key *k;
	const char *why;
	size_t kl;
	int has_eq = 0, quoted;

	if (*p == 0 || *p == '#' || *p == ';')
		return;
	if (*p == '[') {
		if (strcmp(p, "[cachefsd]") != 0)
			load_error(ld, path, lineno, NULL, "unknown section %.80s (only [cachefsd])", p);
		return;
	}
	kl = strspn(p, keychars);
	rest = p + kl;
	if (kl == 0 || kl >= sizeof(name) ||
	    (*rest && *rest != '=' && !isspace((unsigned char)*rest))) {
		load_error(ld, path, lineno, NULL, "expected 'key = value' or 'key value', got '%.80s'",
			   p);
		return;
	}
	for (size_t i = 0; i < kl; i++) /* cache-dir, as the flag is spelt */
		name[i] = p[i] == '-' ? '_' : p[i];
	name[kl] = 0;
	while (isspace((unsigned char)*rest))
		rest++;
	if (*rest == '=') {
		has_eq = 1;
		rest++;
		while (isspace((unsigned char)*rest))
			rest++;
	}
	why = line_value(rest, &val, &quoted);
	if (why) {
		load_error(ld, path, lineno, name, "%s", why);
		return;
	}
	if (strcmp(name, "config") == 0) {
		load_error(ld, path, lineno, name, "only valid as a flag (--config FILE)");
		return;
	}
	if (strcmp(name, "include_dir") == 0) {
		if (!is_main)
			load_error(ld, path, lineno, name,
				   "only valid in the main configuration file");
		else if (*include_line)
			load_error(ld, path, lineno, name, "set again (first on line %d)",
				   *include_line);
		else if (*val == 0)
			load_error(ld, path, lineno, name, "empty value");
		else if ((ld->c->include_dir = strdup(val)) == NULL)
			load_error(ld, path, lineno, name, "out of memory");
		else
			*include_line = lineno;
		return;
	}
	k = find_key(name);
	for (size_t i = 0; k == NULL && i < sizeof(cachefilesd_keys) / sizeof(cachefilesd_keys[0]);
	     i++) {
		if (strcmp(name, cachefilesd_keys[i].name) != 0)
			continue;
		if (cachefilesd_keys[i].to == NULL) {
			load_error(ld, path, lineno, name, "cachefilesd's %s has no cachefsd equivalent: %s",
				   name, cachefilesd_keys[i].why);
			return;
		}
		k = find_key(cachefilesd_keys[i].to);
	}
	if (k == NULL) {
		const char *near = nearest_key(name);
		load_error(ld, path, lineno, name, "unknown key%s%s%s", near ? " (did you mean " : "",
			   near ? near : "", near ? "?)" : "");
		return;
	}
	if (seen[k - keys]) {
		load_error(ld, path, lineno, name, "set again (first on line %d)", seen[k - keys]);
		return;
	}
	seen[k - keys] = lineno;
	if (!has_eq && !quoted && *val == 0) { /* a bare word: "foreground" */
		if (k->type != CFG_BOOL) {
			load_error(ld, path, lineno, name, "needs a value (%s)", k->arg);
			return;
		}
		val = "true";
	}
	load_set(ld, k, val, path, lineno, name);
}

/* Reads one file. Returns -1 when it could not be opened (nothing read). */
static int load_one(struct load *ld, const char *path, int is_main, int *include_line)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	int lineno = 0, seen[NKEYS];
	struct stat st;

	memset(seen, 0, sizeof(seen));
	if (f == NULL) {
		int e = errno;
		if (ld->rc == 0)
			ld->rc = -e;
		load_error(ld, path, 0, NULL, "cannot open: %s", strerror(e));
		return -1;
	}
	/* fopen() opens a directory, and reading it fails at once: it would
	 * pass as an empty file */
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		if (ld->rc == 0)
			ld->rc = -EISDIR;
		load_error(ld, path, 0, NULL, "is a directory, not a configuration file");
		fclose(f);
		return -1;
	}
	if (str_append(&ld->c->files_read, ", ", "%s", path) != 0)
		load_error(ld, path, 0, NULL, "out of memory");
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			load_error(ld, path, lineno, NULL, "line longer than %zu bytes",
				   sizeof(line) - 2);
			/* the rest of it is not another line */
			while (fgets(line, sizeof(line), f) && strchr(line, '\n') == NULL)
				;
			continue;
		}
		load_line(ld, path, lineno, line, seen, include_line, is_main);
	}
	if (ferror(f)) {
		int e = errno ? errno : EIO;
		load_error(ld, path, 0, NULL, "cannot read: %s", strerror(e));
	}
	fclose(f);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.conf files of the include directory, in name order (C locale:
 * 10-a.conf before 9-b.conf, as ls sorts them under LC_ALL=C). Hidden
 * files and other names (*.conf~, *.conf.dpkg-old) are not read. */
static void load_include_dir(struct load *ld, const char *main_path, int include_line)
{
	struct cfs_config *c = ld->c;
	char *dir = NULL, **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (c->include_dir && strcmp(c->include_dir, "none") == 0)
		return;
	if (c->include_dir == NULL) {
		if (asprintf(&dir, "%s.d", main_path) < 0)
			dir = NULL;
	} else if (c->include_dir[0] == '/') {
		dir = strdup(c->include_dir);
	} else { /* relative to the main file's directory */
		const char *slash = strrchr(main_path, '/');
		if (asprintf(&dir, "%.*s%s", slash ? (int)(slash - main_path + 1) : 0, main_path,
			     c->include_dir) < 0)
			dir = NULL;
	}
	if (dir == NULL) {
		load_error(ld, main_path, include_line, NULL, "out of memory");
		return;
	}
	d = opendir(dir);
	if (d == NULL) {
		/* the default directory need not exist; a named one must */
		if (errno != ENOENT || c->include_dir)
			load_error(ld, main_path, include_line, "include_dir",
				   "cannot read the include directory %s: %s", dir, strerror(errno));
		free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		if (n == cap) {
			char **more = realloc(names, (cap ? cap * 2 : 16) * sizeof(*names));
			if (more == NULL)
				break;
			names = more;
			cap = cap ? cap * 2 : 16;
		}
		if ((names[n] = strdup(de->d_name)) == NULL)
			break;
		n++;
	}
	if (de != NULL)
		load_error(ld, dir, 0, NULL, "out of memory");
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		char *path;
		struct stat st;

		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			load_error(ld, dir, 0, NULL, "out of memory");
		} else {
			if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
				load_error(ld, path, 0, NULL, "not a regular file");
			else
				load_one(ld, path, 0, NULL);
			free(path);
		}
		free(names[i]);
	}
	free(names);
	free(dir);
}

int config_load_file(struct cfs_config *c, const char *path, char *err, size_t errlen)
{
	struct load ld = {.c = c, .err = err, .errlen = errlen};
	int include_line = 0;

	if (err && errlen)
		err[0] = 0;
	free(c->include_dir);
	c->include_dir = NULL;
	if (load_one(&ld, path, 1, &include_line) == 0)
		load_include_dir(&ld, path, include_line);
	if (ld.nlost && err)
		snprintf(err + strlen(err), errlen - strlen(err), "\n(%d more errors)", ld.nlost);
	return ld.nerr ? ld.rc : 0;
}

/* "--key-name" -> "key_name" in buf; 0 if it looks like a flag, else -1
 * (a yes/no answer: the caller says what is wrong). */
static int flag_to_key(const char *arg, char *buf, size_t len, const char **inline_val)
{
	size_t i;

	if (strncmp(arg, "--", 2) != 0 || arg[2] == 0)
		return -1;
	arg += 2;
	*inline_val = NULL;
	for (i = 0; arg[i] && arg[i] != '=' && i + 1 < len; i++)
		buf[i] = arg[i] == '-' ? '_' : arg[i];
	buf[i] = 0;
	if (arg[i] == '=')
		*inline_val = arg + i + 1;
	return 0;
}

/* Adds one line to err ("\n" between lines). */
static void erradd(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void erradd(char *err, size_t errlen, const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	used = strnlen(err, errlen - 1);
	if (used && used + 1 < errlen)
		err[used++] = '\n';
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
}

/* Where key name's value came from, for a rule across keys: the files
 * may be several. */
static const char *origin_of(const struct cfs_config *c, const char *name)
{
	const struct cfg_key *k = find_key(name);

	return k && c->origin[k - keys] ? c->origin[k - keys] : "default";
}

int config_validate(const struct cfs_config *c, char *err, size_t errlen)
{
	int bad = 0;

	if (err && errlen)
		err[0] = 0;
	if (c->upstream == NULL && ++bad)
		erradd(err, errlen, "key 'upstream': required (--upstream nfs://HOST/EXPORT)");
	if (c->cache_dir == NULL && ++bad)
		erradd(err, errlen, "key 'cache_dir': required (--cache-dir DIR)");
	if (c->inline_max > c->chunk_size && ++bad)
		erradd(err, errlen,
		       "key 'inline_max': must not exceed chunk_size (inline_max: %s; chunk_size: %s)",
		       origin_of(c, "inline_max"), origin_of(c, "chunk_size"));
	if (!(c->bstop < c->bcull && c->bcull < c->brun) && ++bad)
		erradd(err, errlen,
		       "keys 'bstop' < 'bcull' < 'brun' must hold (%d, %d, %d; bstop: %s; "
		       "bcull: %s; brun: %s)",
		       c->bstop, c->bcull, c->brun, origin_of(c, "bstop"), origin_of(c, "bcull"),
		       origin_of(c, "brun"));
	if (!(c->fstop < c->fcull && c->fcull < c->frun) && ++bad)
		erradd(err, errlen,
		       "keys 'fstop' < 'fcull' < 'frun' must hold (%d, %d, %d; fstop: %s; "
		       "fcull: %s; frun: %s)",
		       c->fstop, c->fcull, c->frun, origin_of(c, "fstop"), origin_of(c, "fcull"),
		       origin_of(c, "frun"));
	return bad ? -EINVAL : 0;
}

int config_parse_args(struct cfs_config *c, int argc, char **argv, enum config_action *action,
		      char *err, size_t errlen)
{
	char key[128], why[512];
	const char *val;
	int rc;

	*action = CONFIG_RUN;
	/* pass 1: --config, --help, --version */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			*action = CONFIG_HELP;
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			*action = CONFIG_VERSION;
			return 0;
		}
		if (strncmp(argv[i], "--config", 8) == 0 &&
		    (argv[i][8] == 0 || argv[i][8] == '=')) {
			const char *path = argv[i][8] == '=' ? argv[i] + 9 : argv[i + 1];
			if (path == NULL || *path == 0) {
				errf(err, errlen, "flag --config: needs a FILE");
				return -EINVAL;
			}
			free(c->config_file);
			c->config_file = strdup(path);
			if (argv[i][8] == 0)
				i++;
		}
	}
	if (c->config_file) {
		rc = config_load_file(c, c->config_file, err, errlen);
		if (rc)
			return -EINVAL;
	}
	/* pass 2: every other flag overrides the file */
	for (int i = 1; i < argc; i++) {
		const struct cfg_key *k;
		const char *flag = argv[i];

		if (flag_to_key(argv[i], key, sizeof(key), &val) != 0) {
			errf(err, errlen, "unexpected argument '%s' (flags look like --key VALUE)",
			     argv[i]);
			return -EINVAL;
		}
		if (strcmp(key, "config") == 0) {
			if (val == NULL)
				i++;
			continue;
		}
		if (strcmp(key, "check_config") == 0) {
			*action = CONFIG_CHECK;
			continue;
		}
		k = find_key(key);
		if (k == NULL) {
			errf(err, errlen, "unknown flag '%s' (see --help)", argv[i]);
			return -EINVAL;
		}
		if (val == NULL) {
			if (k->type == CFG_BOOL &&
			    (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0 ||
			     parse_bool(argv[i + 1], &(int){0}) != 0)) {
				val = "true";
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				errf(err, errlen, "flag %s: needs a value (%s)", flag, k->arg);
				return -EINVAL;
			}
		}
		if (set_key(c, k, val, why, sizeof(why)) != 0) {
			errf(err, errlen, "flag %.*s: %s", (int)strcspn(flag, "="), flag, why);
			return -EINVAL;
		}
		free(c->origin[k - keys]);
		if (asprintf(&c->origin[k - keys], "flag %.*s", (int)strcspn(flag, "="), flag) < 0) {
			c->origin[k - keys] = NULL;
			errf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return config_validate(c, err, errlen);
}

void config_usage(FILE *out)
{
	fprintf(out, "usage: cachefsd --upstream nfs://HOST/EXPORT --cache-dir DIR "
		     "[--listen ADDR:PORT] [--foreground] [--config FILE] [options]\n\n"
		     "Every option is also a config-file key (key_name = value, or key_name value); "
		     "flags override the files.\n\n");
	fprintf(out, "  %-34s %s\n", "--config FILE",
		"read options from FILE, then FILE.d/*.conf in name order");
	fprintf(out, "  %-34s %s\n", "--check-config",
		"check the configuration, print it with where each value came from, and exit");
	for (size_t i = 0; i < NKEYS; i++) {
		char flag[96], name[64];
		size_t j;

		for (j = 0; keys[i].name[j] && j + 1 < sizeof(name); j++)
			name[j] = keys[i].name[j] == '_' ? '-' : keys[i].name[j];
		name[j] = 0;
		snprintf(flag, sizeof(flag), "--%s %s", name, keys[i].arg);
		fprintf(out, "  %-34s %s", flag, keys[i].help);
		if (keys[i].def)
			fprintf(out, " [%s]", keys[i].def);
		fputc('\n', out);
	}
	fprintf(out, "  %-34s %s\n", "--help", "this text");
	fprintf(out, "  %-34s %s\n", "--version", "print the version");
}

/* The value of key k as config-file text; NULL for an unset string. */
static const char *key_text(const struct cfs_config *c, const struct cfg_key *k, char *buf,
			    size_t len)
{
	const void *field = (const char *)c + k->off;

	switch (k->type) {
	case CFG_STR:
	case CFG_ALLOW:
		return *(char *const *)field;
	case CFG_INT:
	case CFG_PERCENT:
		snprintf(buf, len, "%d", *(const int *)field);
		return buf;
	case CFG_SIZE:
		snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)field);
		return buf;
	case CFG_BOOL:
		return *(const int *)field ? "true" : "false";
	case CFG_LOGLEVEL:
		return log_level_name(*(const int *)field);
	case CFG_CHOICE: {
		const char *w = k->arg;
		for (int i = *(const int *)field; i > 0 && *w; i--)
			w += strcspn(w, "|") + (w[strcspn(w, "|")] == '|');
		snprintf(buf, len, "%.*s", (int)strcspn(w, "|"), w);
		return buf;
	}
	}
	return NULL;
}

void config_print(const struct cfs_config *c, FILE *out)
{
	char buf[64];

	for (size_t i = 0; i < NKEYS; i++) {
		const char *v = key_text(c, &keys[i], buf, sizeof(buf));

		if (v)
			fprintf(out, "%s = %s\n", keys[i].name, v);
		else
			fprintf(out, "# %s is not set\n", keys[i].name);
	}
}

/* v as the file syntax reads it back: quoted when it has white space at
 * an end, a comment character after white space, or a leading quote. */
static void print_value(FILE *out, const char *v, int *width)
{
	int need = *v == 0 || isspace((unsigned char)v[0]) || v[0] == '"' || v[0] == '\'' ||
		   isspace((unsigned char)v[strlen(v) - 1]) || v[0] == '#' || v[0] == ';';

	for (const char *h = v; *h && !need; h++)
		need = (*h == '#' || *h == ';') && h > v && isspace((unsigned char)h[-1]);
	if (!need) {
		*width += fprintf(out, "%s", v);
		return;
	}
	*width += fprintf(out, strchr(v, '"') ? "'%s'" : "\"%s\"", v);
}

void config_print_sources(const struct cfs_config *c, FILE *out)
{
	const char *n = c->notes;

	fprintf(out, "# files read: %s\n", c->files_read ? c->files_read : "none");
	while (n && *n) { /* overrides, as logged at start */
		size_t len = strcspn(n, "\n");
		fprintf(out, "# %.*s\n", (int)len, n);
		n += len + (n[len] == '\n');
	}
	for (size_t i = 0; i < NKEYS; i++) {
		char buf[64];
		const char *v = key_text(c, &keys[i], buf, sizeof(buf));
		int width = 0;

		if (v == NULL) {
			fprintf(out, "# %s is not set\n", keys[i].name);
			continue;
		}
		width = fprintf(out, "%s = ", keys[i].name);
		print_value(out, v, &width);
		fprintf(out, "%*s# %s\n", width < 39 ? 40 - width : 1, "",
			c->origin[i] ? c->origin[i] : "default");
	}
}

/* --- reload (SIGHUP) ------------------------------------------------------ */

/* Keys read afresh wherever they are used (or pushed to their user by
 * engine_reconfigure()): these may change while running. Everything else
 * is fixed when the daemon starts: sockets, the cache layout, threads,
 * memory tables. */
static const char *const live_keys[] = {
	"log_level",	"allow",     "client_max_inflight", "stats_file",   "cache_size",
	"brun",		"bcull",     "bstop",		    "frun",	    "fcull",
	"fstop",	"readahead", "meta_ttl",	    "meta_neg_ttl", "write_quiesce",
	"fresh_guard",	"soft",	     "upstream_timeout",    "secure_ports", "root_squash",
	"anon_uid",	"anon_gid",  "busy_poll", "lookup_prefetch", "read_evidence",
	"reconnect_max", "evidence_ttl", "client_idle_timeout", "client_memory_max",
	"lock_poll", "access_prefetch", "strict_access_reuse", "strict_access_ttl",
	"strict_lookup_attrs", "warm_ahead",
};

int config_key_live(const char *key)
{
	for (size_t i = 0; i < sizeof(live_keys) / sizeof(live_keys[0]); i++)
		if (strcmp(live_keys[i], key) == 0)
			return 1;
	return 0;
}

static void append(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *dst, size_t len, const char *fmt, ...)
{
	size_t used = strlen(dst);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(dst + used, len - used, fmt, ap);
	va_end(ap);
}

static void copy_origin(struct cfs_config *cur, const struct cfs_config *next, size_t i)
{
	char *o = next->origin[i] ? strdup(next->origin[i]) : NULL;

	if (next->origin[i] && o == NULL)
		return; /* out of memory: the old place stays */
	free(cur->origin[i]);
	cur->origin[i] = o;
}

int config_apply_live(struct cfs_config *cur, const struct cfs_config *next, char *changed,
		      size_t clen, char *restart, size_t rlen)
{
	int n = 0;

	changed[0] = 0;
	restart[0] = 0;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct cfg_key *k = &keys[i];
		char ob[64], nb[64], old[256];
		const char *ov = key_text(cur, k, ob, sizeof(ob));
		const char *nv = key_text(next, k, nb, sizeof(nb));

		if ((ov == NULL && nv == NULL) || (ov && nv && strcmp(ov, nv) == 0)) {
			copy_origin(cur, next, i); /* the same value may have moved */
			continue;
		}
		if (!config_key_live(k->name)) {
			append(restart, rlen, "%s%s", restart[0] ? ", " : "", k->name);
			continue;
		}
		snprintf(old, sizeof(old), "%s", ov ? ov : "(unset)");
		if (nv == NULL) { /* an optional string went back to its default */
			char **s = (char **)((char *)cur + k->off);
			free(*s);
			*s = NULL;
		} else if (set_key(cur, k, nv, NULL, 0) != 0) {
			continue; /* cannot happen: next was parsed from the same text */
		}
		append(changed, clen, "%s%s %s -> %s", changed[0] ? ", " : "", k->name, old,
		       nv ? nv : "(unset)");
		copy_origin(cur, next, i);
		n++;
	}
	/* what was read: the files of this reload */
	free(cur->files_read);
	cur->files_read = next->files_read ? strdup(next->files_read) : NULL;
	free(cur->notes);
	cur->notes = next->notes ? strdup(next->notes) : NULL;
	return n;
}
