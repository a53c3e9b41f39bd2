/* nlmlock: a host-side NLM v4 client for the lock tests (a lock owner on
 * a "client host" of its own: caller_name, owner handle, svid).
 *
 *   nlmlock --port P [--host H] --fh HEX --caller NAME --svid N --oh HEX
 *           [--exclusive|--shared] [--offset N] [--len N] [--block]
 *           [--uid U --gid G] [--timeout S] ACTION
 *
 * The handle comes from `nfsread --print-fh` (a LOOKUP through the same
 * export). ACTION:
 *   test    TEST: prints "GRANTED", or "DENIED svid=N exclusive=E offset=O
 *           len=L" naming the holder;
 *   lock    LOCK: prints the filer's status ("GRANTED", "DENIED", ...);
 *           with --block, while the answer is BLOCKED it prints "BLOCKED"
 *           once and asks again every second, as a kernel client polls
 *           (every 30 s), until granted or --timeout; --once: not again;
 *   unlock  UNLOCK; cancel  CANCEL (of a blocking LOCK);
 *   granted GRANTED, as a filer's lockd tells a client host a blocked lock
 *           is now its (a proxy must take it only from the filer);
 *   hold    lock as above, print "GRANTED", hold it until stdin closes or
 *           SIGTERM/SIGINT, then unlock and print "UNLOCKED";
 *   register  (--port 111 --nlm-port N) PMAP SET of NLM v4/TCP at port N
 *           with the portmapper at --host: a proxy's NLM for the test
 *           (--nlm-port 0: UNSET, the registration goes);
 *   probe   bad input: one call with --proc N (default LOCK) and --vers N
 *           (default 4), --garbage (arguments cut short) or --oh-len N (an
 *           owner handle declared N bytes long); prints the RPC answer:
 *           "accepted N" (accept_stat), "mismatch LOW HIGH" or "denied".
 * Exit: 0 GRANTED (probe: any answer); 3 another NLM status; 1 an RPC
 * error (printed as "rpc accepted N") or no answer; 2 usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nlm.h>

static const char *stat_names[] = {
    "GRANTED", "DENIED", "DENIED_NOLOCKS", "BLOCKED", "DENIED_GRACE_PERIOD",
    "DEADLCK", "ROFS",   "STALE_FH",       "FBIG",    "FAILED"};

static struct {
	const char *host;
	int port, timeout;
	uint8_t fh[64], oh[1024];
	uint32_t fhlen, ohlen;
	const char *caller;
	uint32_t svid, uid, gid;
	int exclusive, block;
	uint64_t offset, len;
	int fd;
	uint32_t xid;
	/* probe */
	uint32_t proc, vers;
	int garbage;
	long oh_decl;
	int nlmport;
	int once;
} o = {.host = "127.0.0.1",
       .timeout = 60,
       .caller = "nlmlock",
       .exclusive = 1,
       .vers = 4,
       .proc = 2,
       .oh_decl = -1};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int hex(const char *s, uint8_t *out, uint32_t cap, uint32_t *n)
{
	size_t l = strlen(s);

	if (l % 2 || l / 2 > cap)
		return -1;
	for (size_t i = 0; i < l / 2; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	*n = (uint32_t)(l / 2);
	return 0;
}

static int dial(void)
{
	struct addrinfo hints = {0}, *ai;
	char port[16];
	int fd;

	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", o.port);
	if (getaddrinfo(o.host, port, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* The call header with an AUTH_SYS credential (uid, gid, no groups). */
static int header_prog(ZDR *z, uint32_t prog, uint32_t proc, uint32_t vers)
{
	uint32_t zero = 0, mtype = 0, two = 2, flavor = 1, stamp = 0;
	uint32_t ngids = 0;
	char *machine = (char *)o.caller;
	uint32_t mlen = (uint32_t)strlen(machine);
	uint32_t body = 4 + 4 + ((mlen + 3) & ~3u) + 8 + 4;

	o.xid++;
	return zdr_u_int(z, &o.xid) && zdr_u_int(z, &mtype) && zdr_u_int(z, &two) &&
	       zdr_u_int(z, &prog) && zdr_u_int(z, &vers) && zdr_u_int(z, &proc) &&
	       zdr_u_int(z, &flavor) && zdr_u_int(z, &body) && zdr_u_int(z, &stamp) &&
	       zdr_string(z, &machine, 255) && zdr_u_int(z, &o.uid) && zdr_u_int(z, &o.gid) &&
	       zdr_u_int(z, &ngids) && zdr_u_int(z, &zero) && zdr_u_int(z, &zero);
}

static int header(ZDR *z, uint32_t proc, uint32_t vers)
{
	return header_prog(z, NLM_PROGRAM, proc, vers);
}

/* nlm4_lock, the owner handle as opaque bytes (libnfs's is a string) */
static int lock_body(ZDR *z)
{
	char *caller = (char *)o.caller, *fh = (char *)o.fh, *oh = (char *)o.oh;
	uint32_t fhlen = o.fhlen, ohlen = o.ohlen;

	if (!zdr_string(z, &caller, 1024) || !zdr_bytes(z, &fh, &fhlen, 64))
		return 0;
	if (o.oh_decl >= 0) { /* a declared length the bytes do not back */
		uint32_t d = (uint32_t)o.oh_decl;
		return zdr_u_int(z, &d) && zdr_opaque(z, oh, ohlen);
	}
	return zdr_bytes(z, &oh, &ohlen, 1024) && zdr_u_int(z, &o.svid) &&
	       zdr_uint64_t(z, &o.offset) && zdr_uint64_t(z, &o.len);
}

/* Sends one call; args by proc: TEST, LOCK, CANCEL, UNLOCK, GRANTED. */
static int send_call(uint32_t proc, uint32_t vers)
{
	static uint8_t buf[8192];
	uint32_t cookie = o.xid, t = 1, f = 0, excl = (uint32_t)o.exclusive;
	uint32_t block = (uint32_t)o.block, state = 0;
	char *ck = (char *)&cookie;
	uint32_t cklen = 4;
	ZDR z;
	int ok;

	zdrmem_create(&z, (char *)buf + 4, sizeof(buf) - 4, ZDR_ENCODE);
	ok = header(&z, proc, vers) && zdr_bytes(&z, &ck, &cklen, 1024);
	switch (proc) {
	case 1: /* TEST: cookie, exclusive, lock */
	case 5: /* GRANTED: the same */
		ok = ok && zdr_u_int(&z, &excl) && lock_body(&z);
		break;
	case 3: /* CANCEL: cookie, block, exclusive, lock */
		ok = ok && zdr_u_int(&z, &t) && zdr_u_int(&z, &excl) && lock_body(&z);
		break;
	case 4: /* UNLOCK: cookie, lock */
		ok = ok && lock_body(&z);
		break;
	default: /* LOCK: cookie, block, exclusive, lock, reclaim, state */
		ok = ok && zdr_u_int(&z, &block) && zdr_u_int(&z, &excl) && lock_body(&z) &&
		     zdr_u_int(&z, &f) && zdr_u_int(&z, &state);
		break;
	}
	if (!ok)
		return -1;
	uint32_t n = zdr_getpos(&z);
	if (o.garbage)
		n -= 12; /* the last fields cut off */
	uint32_t mark = htonl(0x80000000u | n);
	memcpy(buf, &mark, 4);
	return write(o.fd, buf, n + 4) == (ssize_t)(n + 4) ? 0 : -1;
}

static int read_full(uint8_t *p, size_t n)
{
	while (n) {
		struct pollfd pfd = {o.fd, POLLIN, 0};
		if (poll(&pfd, 1, o.timeout * 1000) <= 0)
			return -1;
		ssize_t r = read(o.fd, p, n);
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Reads the reply to the last call: 0 with the result body in *res, or
 * 1 with *astat/lo/hi for an RPC error, or -1. */
static int recv_reply(uint8_t *rec, uint32_t cap, uint32_t *off, uint32_t *len, int *astat,
                      uint32_t *lo, uint32_t *hi)
{
	for (;;) {
		uint32_t mark, n;
		ZDR z;
		uint32_t xid, mtype, rstat, vfl, vlen, st;

		if (read_full((uint8_t *)&mark, 4) != 0)
			return -1;
		n = ntohl(mark) & 0x7fffffffu;
		if (n > cap || read_full(rec, n) != 0)
			return -1;
		zdrmem_create(&z, (char *)rec, n, ZDR_DECODE);
		if (!zdr_u_int(&z, &xid) || !zdr_u_int(&z, &mtype) || !zdr_u_int(&z, &rstat))
			return -1;
		if (xid != o.xid)
			continue; /* an answer to an earlier call */
		if (rstat != 0) {
			*astat = -1;
			return 1;
		}
		if (!zdr_u_int(&z, &vfl) || !zdr_u_int(&z, &vlen))
			return -1;
		zdr_setpos(&z, zdr_getpos(&z) + ((vlen + 3) & ~3u));
		if (!zdr_u_int(&z, &st))
			return -1;
		if (st != 0) {
			*astat = (int)st;
			if (st == 2 && !(zdr_u_int(&z, lo) && zdr_u_int(&z, hi)))
				return -1;
			return 1;
		}
		*off = zdr_getpos(&z);
		*len = n - *off;
		return 0;
	}
}

static uint8_t rec[1 << 16];

/* One call and its NLM status (-1: no NLM answer; printed). */
static int call(uint32_t proc)
{
	uint32_t off, len, lo, hi;
	int astat, rc;
	ZDR z;

	if (send_call(proc, 4) != 0) {
		printf("send failed\n");
		return -1;
	}
	rc = recv_reply(rec, sizeof(rec), &off, &len, &astat, &lo, &hi);
	if (rc < 0) {
		printf("no answer\n");
		return -1;
	}
	if (rc == 1) {
		printf("rpc accepted %d\n", astat);
		return -1;
	}
	zdrmem_create(&z, (char *)rec + off, len, ZDR_DECODE);
	if (proc == 1) {
		NLM4_TESTres r;
		memset(&r, 0, sizeof(r));
		if (!zdr_NLM4_TESTres(&z, &r))
			return -1;
		return (int)r.reply.status;
	}
	NLM4_LOCKres r; /* LOCK, CANCEL, UNLOCK, GRANTED: cookie, status */
	memset(&r, 0, sizeof(r));
	if (!zdr_NLM4_LOCKres(&z, &r))
		return -1;
	return (int)r.status;
}

static const char *name(int st)
{
	return st >= 0 && st <= 9 ? stat_names[st] : "?";
}

static int do_test(void)
{
	uint32_t off, len, lo, hi;
	int astat, rc;
	NLM4_TESTres r;
	ZDR z;

	if (send_call(1, 4) != 0)
		return 1;
	rc = recv_reply(rec, sizeof(rec), &off, &len, &astat, &lo, &hi);
	if (rc != 0) {
		printf(rc < 0 ? "no answer\n" : "rpc accepted %d\n", astat);
		return 1;
	}
	memset(&r, 0, sizeof(r));
	zdrmem_create(&z, (char *)rec + off, len, ZDR_DECODE);
	if (!zdr_NLM4_TESTres(&z, &r))
		return 1;
	if (r.reply.status == NLM4_DENIED) {
		nlm4_holder *h = &r.reply.nlm4_testreply_u.lock.holder;
		printf("DENIED svid=%u exclusive=%u offset=%llu len=%llu\n", h->svid, h->exclusive,
		       (unsigned long long)h->l_offset, (unsigned long long)h->l_len);
		return 3;
	}
	printf("%s\n", name((int)r.reply.status));
	return r.reply.status == NLM4_GRANTED ? 0 : 3;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int do_lock(void)
{
	long long end = now_ms() + (long long)o.timeout * 1000;
	int said = 0;

	for (;;) {
		int st = call(2);
		if (st < 0)
			return 1;
		if (st != NLM4_BLOCKED || !o.block) {
			printf("%s\n", name(st));
			fflush(stdout);
			return st == NLM4_GRANTED ? 0 : 3;
		}
		if (!said) {
			printf("BLOCKED\n");
			fflush(stdout);
			said = 1;
		}
		if (o.once)
			return 3; /* the grant is left to the server (or the proxy) */
		if (now_ms() > end || stop) {
			printf("timeout\n");
			return 3;
		}
		sleep(1); /* a kernel client asks again (every 30 s) */
	}
}

static int do_probe(void)
{
	uint32_t off, len, lo = 0, hi = 0;
	int astat = 0, rc;

	if (send_call(o.proc, o.vers) != 0)
		return 1;
	rc = recv_reply(rec, sizeof(rec), &off, &len, &astat, &lo, &hi);
	if (rc < 0) {
		printf("no answer\n");
		return 1;
	}
	if (rc == 0)
		printf("accepted 0\n");
	else if (astat < 0)
		printf("denied\n");
	else if (astat == 2)
		printf("mismatch %u %u\n", lo, hi);
	else
		printf("accepted %d\n", astat);
	return 0;
}

/* PMAP v2 SET of NLM v4 over TCP at port --nlm-port, sent to the
 * portmapper at --host:--port: a proxy's NLM registered for the test. */
static int do_register(uint32_t nlmport)
{
	static uint8_t buf[256];
	uint32_t prog = NLM_PROGRAM, vers = 4, prot = 6, off, len, lo, hi, res;
	int astat;
	ZDR z;

	zdrmem_create(&z, (char *)buf + 4, sizeof(buf) - 4, ZDR_ENCODE);
	if (!header_prog(&z, 100000, nlmport ? 1 /* SET */ : 2 /* UNSET */, 2) || !zdr_u_int(&z, &prog) ||
	    !zdr_u_int(&z, &vers) || !zdr_u_int(&z, &prot) || !zdr_u_int(&z, &nlmport))
		return 1;
	uint32_t n = zdr_getpos(&z), mark = htonl(0x80000000u | n);
	memcpy(buf, &mark, 4);
	if (write(o.fd, buf, n + 4) != (ssize_t)(n + 4) ||
	    recv_reply(rec, sizeof(rec), &off, &len, &astat, &lo, &hi) != 0 || len < 4)
		return 1;
	memcpy(&res, rec + off, 4);
	printf(ntohl(res) ? "registered\n" : "refused\n");
	return ntohl(res) ? 0 : 3;
}

static void usage(void)
{
	fprintf(stderr, "usage: nlmlock --port P [--host H] --fh HEX --caller NAME --svid N "
	                "--oh HEX [--exclusive|--shared] [--offset N] [--len N] [--block]\n"
	                "       [--uid U --gid G] [--timeout S] [--proc N --vers N --garbage "
	                "--oh-len N] test|lock|unlock|cancel|hold|probe|register\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *action = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;

		if (strcmp(a, "--exclusive") == 0) {
			o.exclusive = 1;
			takes = 0;
		} else if (strcmp(a, "--shared") == 0) {
			o.exclusive = 0;
			takes = 0;
		} else if (strcmp(a, "--block") == 0) {
			o.block = 1;
			takes = 0;
		} else if (strcmp(a, "--once") == 0) {
			o.once = 1;
			takes = 0;
		} else if (strcmp(a, "--garbage") == 0) {
			o.garbage = 1;
			takes = 0;
		} else if (a[0] != '-') {
			action = a;
			takes = 0;
		} else if (v == NULL) {
			usage();
		} else if (strcmp(a, "--host") == 0) {
			o.host = v;
		} else if (strcmp(a, "--port") == 0) {
			o.port = atoi(v);
		} else if (strcmp(a, "--fh") == 0) {
			if (hex(v, o.fh, sizeof(o.fh), &o.fhlen) != 0)
				usage();
		} else if (strcmp(a, "--oh") == 0) {
			if (hex(v, o.oh, sizeof(o.oh), &o.ohlen) != 0)
				usage();
		} else if (strcmp(a, "--caller") == 0) {
			o.caller = v;
		} else if (strcmp(a, "--svid") == 0) {
			o.svid = (uint32_t)strtoul(v, NULL, 0);
		} else if (strcmp(a, "--offset") == 0) {
			o.offset = strtoull(v, NULL, 0);
		} else if (strcmp(a, "--len") == 0) {
			o.len = strtoull(v, NULL, 0);
		} else if (strcmp(a, "--uid") == 0) {
			o.uid = (uint32_t)strtoul(v, NULL, 0);
		} else if (strcmp(a, "--gid") == 0) {
			o.gid = (uint32_t)strtoul(v, NULL, 0);
		} else if (strcmp(a, "--timeout") == 0) {
			o.timeout = atoi(v);
		} else if (strcmp(a, "--proc") == 0) {
			o.proc = (uint32_t)strtoul(v, NULL, 0);
		} else if (strcmp(a, "--vers") == 0) {
			o.vers = (uint32_t)strtoul(v, NULL, 0);
		} else if (strcmp(a, "--nlm-port") == 0) {
			o.nlmport = atoi(v);
		} else if (strcmp(a, "--oh-len") == 0) {
			o.oh_decl = strtol(v, NULL, 0);
		} else {
			usage();
		}
		i += takes;
	}
	if (action == NULL || o.port <= 0)
		usage();
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	o.xid = (uint32_t)now_ms() ^ (uint32_t)getpid() << 16;
	o.fd = dial();
	if (o.fd < 0) {
		printf("cannot connect to %s:%d\n", o.host, o.port);
		return 1;
	}
	if (strcmp(action, "probe") == 0)
		return do_probe();
	if (strcmp(action, "register") == 0)
		return do_register((uint32_t)o.nlmport);
	if (strcmp(action, "test") == 0)
		return do_test();
	if (strcmp(action, "lock") == 0)
		return do_lock();
	if (strcmp(action, "unlock") == 0 || strcmp(action, "cancel") == 0 ||
	    strcmp(action, "granted") == 0) {
		int st = call(action[0] == 'u' ? 4 : action[0] == 'c' ? 3 : 5);
		if (st < 0)
			return 1;
		printf("%s\n", name(st));
		return st == NLM4_GRANTED ? 0 : 3;
	}
	if (strcmp(action, "hold") == 0) {
		rc = do_lock();
		if (rc != 0)
			return rc;
		char b[256];
		while (!stop) {
			struct pollfd pfd = {0, POLLIN, 0};
			if (poll(&pfd, 1, 200) > 0 && read(0, b, sizeof(b)) <= 0)
				break;
		}
		int st = call(4);
		printf(st == NLM4_GRANTED ? "UNLOCKED\n" : "unlock: %s\n", name(st));
		return st == NLM4_GRANTED ? 0 : 3;
	}
	usage();
	return 2;
}
