/* relay: a TCP relay that adds a fixed one-way delay to each direction and
 * can cap each direction's bandwidth. The bench uses it for the wan profile,
 * because this kernel has no netem.
 *
 *   relay [--delay-ms D] [--rate R] [--queue BYTES] --map LADDR:LPORT=TADDR:TPORT ...
 *
 * --delay-ms D  one-way delay added in each direction (milliseconds, may be
 *               fractional): bytes read from one side at time t are written
 *               to the other side at t + D (round trip + 2 D)
 * --rate R      cap each direction at R bits/s (suffix k, m, g: 10^3..10^9;
 *               0 = no cap): a serialisation delay of len * 8 / R per chunk,
 *               queued behind the previous chunk, like a link of that rate
 * --queue B     bytes a direction may hold before the relay stops reading
 *               its source (TCP backpressure) [16 MiB]
 * --map         listen on LADDR:LPORT and relay each accepted connection to
 *               a new connection to TADDR:TPORT (repeatable)
 *
 * Design: one thread, ppoll() with a nanosecond timeout (timer slack set to
 * 1 ns) on the earliest release time. Data is read in chunks (16 KiB when
 * rate-capped, so the pacing is smooth; 256 KiB otherwise), stamped with its
 * release time, and written in order. TCP_NODELAY on every socket so the
 * relay adds no Nagle delay. Half-closes are passed on after the data before
 * them. The relay ends TCP on both sides, so the far side's TCP window and
 * congestion control see only the relay's delay on the application level:
 * every request/reply round trip costs + 2 D, which is what NFS feels.
 * Prints "relay: ready" on stdout when every listener is up.
 * Stops on SIGTERM/SIGINT. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MAPS  16
#define MAX_CONNS 256

struct chunk {
	struct chunk *next;
	uint64_t release_ns;
	size_t len, off;
	char data[];
};

struct dir {
	int from, to; /* fds */
	struct chunk *head, *tail;
	size_t queued;
	uint64_t tx_end_ns; /* when the (virtual) link is free again */
	int eof;            /* source closed: shut down `to` once drained */
	int shut;
};

struct conn {
	int used;
	int a, b;        /* client side, target side */
	struct dir d[2]; /* a->b, b->a */
};

struct map {
	int lfd;
	struct sockaddr_in target;
};

static uint64_t delay_ns;
static uint64_t rate_bps;
static size_t queue_max = 16u << 20;
static struct map maps[MAX_MAPS];
static int nmaps;
static struct conn conns[MAX_CONNS];
static volatile sig_atomic_t stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void close_conn(struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct chunk *k = c->d[i].head;
		while (k) {
			struct chunk *n = k->next;
			free(k);
			k = n;
		}
	}
	close(c->a);
	close(c->b);
	memset(c, 0, sizeof(*c));
}

static void accept_one(struct map *m)
{
	int a = accept(m->lfd, NULL, NULL);
	if (a < 0)
		return;
	int b = socket(AF_INET, SOCK_STREAM, 0);
	if (b < 0 || connect(b, (struct sockaddr *)&m->target, sizeof(m->target)) != 0) {
		perror("relay: connect to target");
		close(a);
		if (b >= 0)
			close(b);
		return;
	}
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i].used)
			continue;
		struct conn *c = &conns[i];
		memset(c, 0, sizeof(*c));
		c->used = 1;
		c->a = a;
		c->b = b;
		c->d[0].from = a;
		c->d[0].to = b;
		c->d[1].from = b;
		c->d[1].to = a;
		nodelay(a);
		nodelay(b);
		return;
	}
	fprintf(stderr, "relay: too many connections\n");
	close(a);
	close(b);
}

/* Read what is there (up to the queue limit), stamp it. Returns -1 on error. */
static int pump_in(struct dir *d)
{
	size_t csz = rate_bps ? 16384 : 262144;

	while (!d->eof && d->queued < queue_max) {
		struct chunk *k = malloc(sizeof(*k) + csz);
		if (!k)
			return -1;
		ssize_t n = read(d->from, k->data, csz);
		if (n <= 0) {
			free(k);
			if (n == 0) {
				d->eof = 1;
				return 0;
			}
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -1;
		}
		uint64_t t = now_ns();
		if (rate_bps) {
			uint64_t start = d->tx_end_ns > t ? d->tx_end_ns : t;
			d->tx_end_ns = start + (uint64_t)n * 8ULL * 1000000000ULL / rate_bps;
			t = d->tx_end_ns;
		}
		k->release_ns = t + delay_ns;
		k->len = (size_t)n;
		k->off = 0;
		k->next = NULL;
		if (d->tail)
			d->tail->next = k;
		else
			d->head = k;
		d->tail = k;
		d->queued += (size_t)n;
		if ((size_t)n < csz)
			return 0;
	}
	return 0;
}

/* Write every chunk whose time has come. Returns -1 on error. */
static int pump_out(struct dir *d, uint64_t now)
{
	while (d->head && d->head->release_ns <= now) {
		struct chunk *k = d->head;
		ssize_t n = write(d->to, k->data + k->off, k->len - k->off);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -1;
		}
		k->off += (size_t)n;
		d->queued -= (size_t)n;
		if (k->off < k->len)
			return 0;
		d->head = k->next;
		if (!d->head)
			d->tail = NULL;
		free(k);
	}
	if (d->eof && !d->head && !d->shut) {
		shutdown(d->to, SHUT_WR);
		d->shut = 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: relay [--delay-ms D] [--rate R] [--queue BYTES] "
	                "--map LADDR:LPORT=TADDR:TPORT ...\n");
	exit(2);
}

static uint64_t parse_rate(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1e3;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1e6;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1e9;
		end++;
		break;
	default:
		break;
	}
	if (strncmp(end, "bit", 3) == 0)
		end += 3;
	if (*end || v < 0)
		usage();
	return (uint64_t)v;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		i++;
		if (strcmp(a, "--delay-ms") == 0)
			delay_ns = (uint64_t)(strtod(v, NULL) * 1e6);
		else if (strcmp(a, "--rate") == 0)
			rate_bps = parse_rate(v);
		else if (strcmp(a, "--queue") == 0)
			queue_max = (size_t)strtoull(v, NULL, 0);
		else if (strcmp(a, "--map") == 0) {
			char l[128];
			const char *eq = strchr(v, '=');
			struct sockaddr_in la;
			if (nmaps == MAX_MAPS || !eq || (size_t)(eq - v) >= sizeof(l))
				usage();
			memcpy(l, v, (size_t)(eq - v));
			l[eq - v] = 0;
			if (parse_addr(l, &la) != 0 || parse_addr(eq + 1, &maps[nmaps].target) != 0)
				usage();
			int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&la, sizeof(la)) != 0 ||
			    listen(fd, 64) != 0) {
				fprintf(stderr, "relay: listen %s: %s\n", l, strerror(errno));
				return 1;
			}
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
			maps[nmaps++].lfd = fd;
		} else
			usage();
	}
	if (nmaps == 0 || queue_max < 65536)
		usage();
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("relay: ready\n");
	fflush(stdout);

	struct pollfd pfd[MAX_MAPS + 2 * MAX_CONNS];
	struct dir *who[MAX_MAPS + 2 * MAX_CONNS][2];
	while (!stop) {
		int n = 0;
		uint64_t now = now_ns(), next = UINT64_MAX;
		for (int i = 0; i < nmaps; i++) {
			pfd[n].fd = maps[i].lfd;
			pfd[n].events = POLLIN;
			n++;
		}
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			if (!c->used)
				continue;
			/* per socket: readable when its outgoing direction has
			 * room, writable when its incoming direction has due data */
			for (int s = 0; s < 2; s++) {
				struct dir *out = &c->d[s], *in = &c->d[1 - s];
				pfd[n].fd = s == 0 ? c->a : c->b;
				pfd[n].events = 0;
				if (!out->eof && out->queued < queue_max)
					pfd[n].events |= POLLIN;
				if (in->head) {
					if (in->head->release_ns <= now)
						pfd[n].events |= POLLOUT;
					else if (in->head->release_ns < next)
						next = in->head->release_ns;
				}
				who[n][0] = out;
				who[n][1] = in;
				n++;
			}
		}
		struct timespec ts, *tp = NULL;
		if (next != UINT64_MAX) {
			uint64_t w = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(w / 1000000000ULL);
			ts.tv_nsec = (long)(w % 1000000000ULL);
			tp = &ts;
		}
		if (ppoll(pfd, (nfds_t)n, tp, NULL) < 0) {
			if (errno == EINTR)
				continue;
			perror("relay: ppoll");
			return 1;
		}
		for (int i = 0; i < nmaps; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(&maps[i]);
		now = now_ns();
		for (int i = nmaps; i < n; i++) {
			struct dir *out = who[i][0], *in = who[i][1];
			int bad = 0;
			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
				bad |= pump_in(out) < 0;
			bad |= pump_out(in, now) < 0;
			if (bad) {
				for (int k = 0; k < MAX_CONNS; k++)
					if (conns[k].used &&
					    (&conns[k].d[0] == out || &conns[k].d[1] == out))
						close_conn(&conns[k]);
				/* the pollfd array refers to closed fds now: rebuild */
				break;
			}
		}
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			if (c->used && c->d[0].shut && c->d[1].shut)
				close_conn(c);
		}
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].used)
			close_conn(&conns[i]);
	return 0;
}
