/*
 * tcprelay: a TCP port forwarder that can play a stopped server behind a
 * balancer. It listens on 127.0.0.1:PORT and, in "forward" mode, relays each
 * connection to TARGET_HOST:TARGET_PORT; in "close" mode it accepts each
 * connection and closes it at once, as a port forwarder or load balancer
 * in front of a stopped server does (or a server that is starting up).
 *
 * Usage: tcprelay --listen PORT --target HOST:PORT --status FILE
 *                 [--mode forward|close] [--allow-nonloopback] [--lookup-stale]
 *
 * --lookup-stale: the relayed stream is read as ONC RPC records; a reply
 * to an NFSv3 LOOKUP that the target refused with NFS3ERR_NOTDIR or
 * NFS3ERR_NAMETOOLONG reaches the client as NFS3ERR_STALE (the failure
 * body of the three is the same), which is what unfs3 answers to a LOOKUP
 * below a regular file or of an over-long name: a server saying STALE
 * about a handle that is not stale.
 *
 * Runtime switch: SIGUSR1 -> close mode (relayed connections are cut too,
 * as when the server behind the balancer dies), SIGUSR2 -> forward mode.
 * After start-up and after every switch, and at most every 100 ms while
 * connections arrive, the status file is rewritten (atomically, by rename)
 * with "key value" lines:
 *   mode forward|close
 *   switches N      mode changes so far (a test waits for it to grow)
 *   switch_accepted N  connections accepted before the last switch (what
 *                   came after it was handled in the new mode)
 *   accepted N      connections accepted, in either mode
 *   closed N        connections closed at once (close mode)
 *   forwarded N     connections relayed to the target
 *   open N          relayed connections open now
 *   target_failed N relayed connections whose target connect failed
 * SIGTERM/SIGINT end it (exit 0). Exits 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 256
#define BUFSZ     (256 * 1024)

/* Where a direction's RPC record scan stands (--lookup-stale): bytes of
 * the buffer before pos are scanned; a record header not yet whole starts
 * at rec and is held back (not sent) until it is, so it can be rewritten. */
struct scan {
	size_t pos, rec;
	int in_hdr;	  /* at rec: a marker (and header) to read */
	int cont;	  /* that marker starts a continuation fragment */
	uint64_t skip;	  /* body bytes of the current fragment beyond pos */
};

#define NXIDS 1024

/* One relayed connection: client <-> target, a buffer each way. */
struct pair {
	int cfd, tfd;
	int connecting; /* target connect in progress */
	char *c2t, *t2c;
	size_t c2t_len, t2c_len;
	int c_eof, t_eof; /* that side sent FIN */
	struct scan sc2t, st2c;
	uint32_t lookups[NXIDS]; /* xids of LOOKUP calls seen, a ring */
	unsigned nlookups;
};

static volatile sig_atomic_t want_mode = -1; /* 0 forward, 1 close */
static volatile sig_atomic_t stop;
static struct pair pairs[MAX_PAIRS];
static int npairs;
static int mode_close;
static unsigned long long n_accepted, n_closed, n_forwarded, n_target_failed, n_switches,
    n_switch_accepted;
static const char *status_path;
static struct sockaddr_in target;
static int lookup_stale;
static unsigned long long n_rewritten;

static void on_usr1(int s)
{
	(void)s;
	want_mode = 1;
}

static void on_usr2(int s)
{
	(void)s;
	want_mode = 0;
}

static void on_term(int s)
{
	(void)s;
	stop = 1;
}

static void write_status(void)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", status_path);
	f = fopen(tmp, "w");
	if (f == NULL) {
		perror(tmp);
		return;
	}
	fprintf(f,
	        "mode %s\nswitches %llu\nswitch_accepted %llu\naccepted %llu\nclosed %llu\n"
	        "forwarded %llu\nopen %d\ntarget_failed %llu\nrewritten %llu\n",
	        mode_close ? "close" : "forward", n_switches, n_switch_accepted, n_accepted,
	        n_closed, n_forwarded, npairs, n_target_failed, n_rewritten);
	if (fclose(f) != 0 || rename(tmp, status_path) != 0)
		perror(status_path);
}

static void pair_close(int i)
{
	struct pair *p = &pairs[i];

	close(p->cfd);
	if (p->tfd >= 0)
		close(p->tfd);
	free(p->c2t);
	free(p->t2c);
	pairs[i] = pairs[--npairs];
}

static void accept_one(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int one = 1;

	if (fd < 0)
		return;
	n_accepted++;
	if (mode_close || npairs == MAX_PAIRS) {
		/* a balancer whose backend is gone: the handshake completed,
		 * then the connection is closed */
		close(fd);
		n_closed++;
		return;
	}
	struct pair *p = &pairs[npairs];
	memset(p, 0, sizeof(*p));
	p->sc2t.in_hdr = p->st2c.in_hdr = 1;
	p->cfd = fd;
	p->c2t = malloc(BUFSZ);
	p->t2c = malloc(BUFSZ);
	p->tfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->c2t == NULL || p->t2c == NULL || p->tfd < 0) {
		perror("tcprelay: pair");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(p->tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	npairs++;
	n_forwarded++;
	if (connect(p->tfd, (struct sockaddr *)&target, sizeof(target)) != 0) {
		if (errno != EINPROGRESS) {
			n_target_failed++;
			pair_close(npairs - 1);
			return;
		}
		p->connecting = 1;
	}
}

/* Moves bytes from fd into buf; returns -1 when the pair must close. */
static int fill(int fd, char *buf, size_t *len, int *eof)
{
	while (*len < BUFSZ && !*eof) {
		ssize_t n = read(fd, buf + *len, BUFSZ - *len);
		if (n > 0) {
			*len += (size_t)n;
		} else if (n == 0) {
			*eof = 1;
		} else if (errno == EAGAIN || errno == EINTR) {
			return 0;
		} else {
			return -1;
		}
	}
	return 0;
}

static uint32_t get32(const char *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return ntohl(v);
}

/* One record header at h (n bytes there): how many bytes it needs to be
 * whole (> n: wait for more), after looking at it when it is. */
static size_t header(struct pair *p, int to_target, char *h, size_t n)
{
	if (to_target) {
		/* call: xid, CALL, rpcvers, prog, vers, proc */
		if (n < 24)
			return 24;
		if (get32(h + 4) == 0 && get32(h + 12) == 100003 && get32(h + 16) == 3 &&
		    get32(h + 20) == 3)
			p->lookups[p->nlookups++ % NXIDS] = get32(h);
		return 24;
	}
	/* reply: xid, REPLY, MSG_ACCEPTED, verifier, accept_stat, nfsstat3 */
	if (n < 20)
		return 20;
	if (get32(h + 4) != 1 || get32(h + 8) != 0)
		return 20;
	uint32_t vl = get32(h + 16);
	if (vl > 400)
		return 20;
	size_t at = 20 + ((vl + 3) & ~3u);
	if (n < at + 8)
		return at + 8;
	uint32_t st = get32(h + at + 4);
	if (get32(h + at) != 0 || (st != 20 && st != 63))
		return at + 8;
	for (unsigned k = 0; k < NXIDS && k < p->nlookups; k++) {
		if (p->lookups[k] == get32(h)) {
			uint32_t stale = htonl(70);
			memcpy(h + at + 4, &stale, 4);
			n_rewritten++;
			break;
		}
	}
	return at + 8;
}

/* Scans the bytes fill() added to buf (len now) for record headers. */
static void scan(struct pair *p, int to_target, char *buf, size_t len)
{
	struct scan *s = to_target ? &p->sc2t : &p->st2c;

	while (s->pos < len) {
		if (!s->in_hdr) {
			uint64_t k = len - s->pos < s->skip ? len - s->pos : s->skip;
			s->pos += (size_t)k;
			s->skip -= k;
			if (s->skip == 0) {
				s->in_hdr = 1;
				s->rec = s->pos;
			}
			continue;
		}
		size_t have = len - s->rec;
		if (have < 4)
			break;
		uint32_t mark = get32(buf + s->rec);
		uint64_t flen = mark & 0x7fffffffu;
		if (!s->cont) {
			size_t need = header(p, to_target, buf + s->rec + 4,
			                     have - 4 < flen ? have - 4 : (size_t)flen);
			if (need <= flen && have - 4 < need)
				break; /* not whole yet: hold it back */
		}
		s->cont = !(mark & 0x80000000u);
		s->in_hdr = 0;
		s->pos = s->rec + 4;
		s->skip = flen;
		if (s->skip == 0) {
			s->in_hdr = 1;
			s->rec = s->pos;
		}
	}
	if (!s->in_hdr)
		s->rec = s->pos;
}

/* Sends what may go of buf: all of it, or (--lookup-stale) up to a record
 * header still being read. */
static int drain(int fd, char *buf, size_t *len, struct scan *s)
{
	size_t hold = lookup_stale && s->in_hdr ? *len - s->rec : 0;

	while (*len > hold) {
		ssize_t n = send(fd, buf, *len - hold, MSG_NOSIGNAL);
		if (n > 0) {
			memmove(buf, buf + n, *len - (size_t)n);
			*len -= (size_t)n;
			if (lookup_stale) {
				s->pos -= (size_t)n;
				s->rec -= (size_t)n;
			}
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			return 0;
		} else {
			return -1;
		}
	}
	return 0;
}

/* One pass over pair i after poll; returns 1 when it was closed. */
static int pair_io(int i, short crev, short trev)
{
	struct pair *p = &pairs[i];

	if (p->connecting) {
		int err = 0;
		socklen_t sl = sizeof(err);
		if (!(trev & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		getsockopt(p->tfd, SOL_SOCKET, SO_ERROR, &err, &sl);
		if (err != 0) {
			n_target_failed++;
			pair_close(i);
			return 1;
		}
		p->connecting = 0;
	}
	if ((crev & (POLLIN | POLLHUP | POLLERR)) && fill(p->cfd, p->c2t, &p->c2t_len, &p->c_eof))
		goto dead;
	if ((trev & (POLLIN | POLLHUP | POLLERR)) && fill(p->tfd, p->t2c, &p->t2c_len, &p->t_eof))
		goto dead;
	if (lookup_stale) {
		scan(p, 1, p->c2t, p->c2t_len);
		scan(p, 0, p->t2c, p->t2c_len);
	}
	if (drain(p->tfd, p->c2t, &p->c2t_len, &p->sc2t) ||
	    drain(p->cfd, p->t2c, &p->t2c_len, &p->st2c))
		goto dead;
	/* either side gone and nothing left to pass on: cut both (an RPC
	 * connection has no use for a half-closed stream) */
	if ((p->c_eof && p->c2t_len == 0) || (p->t_eof && p->t2c_len == 0))
		goto dead;
	return 0;
dead:
	pair_close(i);
	return 1;
}

static int parse_port(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && *end == 0 && v > 0 && v <= 65535) ? (int)v : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcprelay --listen PORT --target HOST:PORT --status FILE "
	                "[--mode forward|close] [--allow-nonloopback] [--lookup-stale]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int lport = -1, allow_remote = 0, lfd, one = 1;
	const char *tspec = NULL;
	struct sockaddr_in la;
	struct timespec last_status = {0, 0};
	int dirty = 1, urgent = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--listen") && i + 1 < argc)
			lport = parse_port(argv[++i]);
		else if (!strcmp(a, "--target") && i + 1 < argc)
			tspec = argv[++i];
		else if (!strcmp(a, "--status") && i + 1 < argc)
			status_path = argv[++i];
		else if (!strcmp(a, "--mode") && i + 1 < argc) {
			const char *m = argv[++i];
			if (!strcmp(m, "close"))
				mode_close = 1;
			else if (strcmp(m, "forward") != 0)
				usage();
		} else if (!strcmp(a, "--allow-nonloopback"))
			allow_remote = 1;
		else if (!strcmp(a, "--lookup-stale"))
			lookup_stale = 1;
		else
			usage();
	}
	if (lport < 0 || tspec == NULL || status_path == NULL)
		usage();
	{
		char host[64];
		const char *colon = strrchr(tspec, ':');
		int tport = colon ? parse_port(colon + 1) : -1;
		size_t hl = colon ? (size_t)(colon - tspec) : 0;
		if (tport < 0 || hl == 0 || hl >= sizeof(host))
			usage();
		memcpy(host, tspec, hl);
		host[hl] = 0;
		memset(&target, 0, sizeof(target));
		target.sin_family = AF_INET;
		target.sin_port = htons((uint16_t)tport);
		if (inet_pton(AF_INET, host, &target.sin_addr) != 1) {
			fprintf(stderr, "tcprelay: target '%s' is not a numeric IPv4 address\n",
			        host);
			return 2;
		}
		if (!allow_remote && (ntohl(target.sin_addr.s_addr) >> 24) != 127) {
			fprintf(stderr,
			        "tcprelay: target %s is not loopback "
			        "(--allow-nonloopback)\n",
			        host);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sigaction(SIGUSR1, &sa, NULL);
		sa.sa_handler = on_usr2;
		sigaction(SIGUSR2, &sa, NULL);
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&la, 0, sizeof(la));
	la.sin_family = AF_INET;
	la.sin_port = htons((uint16_t)lport);
	la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&la, sizeof(la)) != 0 || listen(lfd, 128) != 0) {
		fprintf(stderr, "tcprelay: listen on 127.0.0.1:%d: %s\n", lport, strerror(errno));
		return 1;
	}
	while (!stop) {
		struct pollfd pf[1 + 2 * MAX_PAIRS];
		struct timespec now;
		int n = 0;

		if (want_mode >= 0) {
			int m = want_mode;
			want_mode = -1;
			if (m != mode_close) {
				mode_close = m;
				n_switches++;
				n_switch_accepted = n_accepted;
			}
			if (mode_close)
				while (npairs > 0)
					pair_close(npairs - 1);
			dirty = urgent = 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (urgent || (dirty && (now.tv_sec - last_status.tv_sec) * 1000 +
		                                (now.tv_nsec - last_status.tv_nsec) / 1000000 >=
		                            100)) {
			write_status();
			last_status = now;
			dirty = urgent = 0;
		}
		pf[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < npairs; i++) {
			struct pair *p = &pairs[i];
			short ce = 0, te = 0;
			if (p->connecting) {
				te = POLLOUT;
			} else {
				if (p->c2t_len < BUFSZ && !p->c_eof)
					ce |= POLLIN;
				if (p->t2c_len < BUFSZ && !p->t_eof)
					te |= POLLIN;
				if (p->c2t_len)
					te |= POLLOUT;
				if (p->t2c_len)
					ce |= POLLOUT;
			}
			pf[n++] = (struct pollfd){.fd = p->cfd, .events = ce};
			pf[n++] = (struct pollfd){.fd = p->tfd, .events = te};
		}
		if (poll(pf, (nfds_t)n, 100) < 0) {
			if (errno == EINTR)
				continue;
			perror("poll");
			return 1;
		}
		/* pairs first, from the end (pair_close moves the last one into
		 * the freed slot; the poll results of later slots are done) */
		unsigned long long rewritten = n_rewritten;
		for (int i = npairs - 1; i >= 0; i--) {
			if (pair_io(i, pf[1 + 2 * i].revents, pf[2 + 2 * i].revents))
				dirty = 1;
		}
		if (n_rewritten != rewritten)
			dirty = 1;
		if (pf[0].revents & POLLIN) {
			for (int k = 0; k < 64; k++) {
				unsigned long long before = n_accepted;
				accept_one(lfd);
				if (n_accepted == before)
					break;
			}
			dirty = 1;
		}
	}
	while (npairs > 0)
		pair_close(npairs - 1);
	write_status();
	return 0;
}
