/* relayprobe: measure what the relay (or any TCP path) adds.
 *
 *   relayprobe echo --listen ADDR:PORT
 *       echo server (one thread per connection), until killed
 *   relayprobe rtt --connect ADDR:PORT [--count N] [--size S]
 *       N round trips of an S-byte message (default 200 x 200 B, the size
 *       of an NFS metadata call), one at a time; prints
 *       "rtt_us min=.. p50=.. mean=.. p99=.. max=.."
 *   relayprobe bulk --connect ADDR:PORT [--bytes N]
 *       streams N bytes (default 64 MiB) to the echo server while reading
 *       the echo; prints "bulk_mbit=.. seconds=.." (the rate both
 *       directions sustained)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static __thread char buf[1 << 16];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	close(fd);
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int dial(const char *addr)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (parse_addr(addr, &sa) != 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "relayprobe: connect %s: %s\n", addr, strerror(errno));
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int main(int argc, char **argv)
{
	const char *listen_at = NULL, *connect_to = NULL;
	long count = 200, size = 200;
	unsigned long long bytes = 64ULL << 20;

	if (argc < 2)
		goto usage;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--listen") == 0)
			listen_at = argv[i + 1];
		else if (strcmp(argv[i], "--connect") == 0)
			connect_to = argv[i + 1];
		else if (strcmp(argv[i], "--count") == 0)
			count = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--size") == 0)
			size = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--bytes") == 0)
			bytes = strtoull(argv[i + 1], NULL, 0);
		else
			goto usage;
	}
	if (strcmp(argv[1], "echo") == 0 && listen_at) {
		struct sockaddr_in sa;
		int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (parse_addr(listen_at, &sa) != 0 ||
		    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
			fprintf(stderr, "relayprobe: listen %s: %s\n", listen_at, strerror(errno));
			return 1;
		}
		for (;;) {
			int c = accept(fd, NULL, NULL);
			pthread_t t;
			if (c < 0)
				continue;
			setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)c);
			pthread_detach(t);
		}
	}
	if (strcmp(argv[1], "rtt") == 0 && connect_to && count > 0 && size > 0 && size <= 65536) {
		int fd = dial(connect_to);
		char *buf = calloc(1, (size_t)size);
		double *v = calloc((size_t)count, sizeof(double)), sum = 0;
		for (long i = 0; i < count; i++) {
			double t0 = now_s();
			if (write(fd, buf, (size_t)size) != size)
				return 1;
			for (long got = 0; got < size;) {
				ssize_t n = read(fd, buf + got, (size_t)(size - got));
				if (n <= 0)
					return 1;
				got += n;
			}
			v[i] = (now_s() - t0) * 1e6;
			sum += v[i];
		}
		qsort(v, (size_t)count, sizeof(double), cmp_d);
		printf("rtt_us min=%.1f p50=%.1f mean=%.1f p99=%.1f max=%.1f n=%ld\n", v[0],
		       v[count / 2], sum / (double)count, v[(count * 99) / 100], v[count - 1],
		       count);
		return 0;
	}
	if (strcmp(argv[1], "bulk") == 0 && connect_to) {
		int fd = dial(connect_to);
		static char wbuf[1 << 16], rbuf[1 << 16];
		unsigned long long sent = 0, recvd = 0;
		double t0 = now_s();
		while (recvd < bytes) {
			struct pollfd p = {fd, POLLIN | (sent < bytes ? POLLOUT : 0), 0};
			if (poll(&p, 1, 10000) <= 0)
				return 1;
			if ((p.revents & POLLOUT) && sent < bytes) {
				size_t n = bytes - sent < sizeof(wbuf) ? (size_t)(bytes - sent)
				                                       : sizeof(wbuf);
				ssize_t w = send(fd, wbuf, n, MSG_DONTWAIT);
				if (w > 0)
					sent += (unsigned long long)w;
			}
			if (p.revents & POLLIN) {
				ssize_t r = recv(fd, rbuf, sizeof(rbuf), MSG_DONTWAIT);
				if (r == 0)
					return 1;
				if (r > 0)
					recvd += (unsigned long long)r;
			}
		}
		double dt = now_s() - t0;
		printf("bulk_mbit=%.1f seconds=%.3f bytes=%llu\n", (double)bytes * 8 / dt / 1e6, dt,
		       bytes);
		return 0;
	}
usage:
	fprintf(stderr, "usage: relayprobe echo --listen ADDR:PORT\n"
	                "       relayprobe rtt --connect ADDR:PORT [--count N] [--size S]\n"
	                "       relayprobe bulk --connect ADDR:PORT [--bytes N]\n");
	return 2;
}
