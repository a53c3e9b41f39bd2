/*
 * rpcraw: one hand-made ONC RPC call (AUTH_NONE) over UDP or TCP, for the
 * NSM tests (tests/integ/56-nsm.sh), and the portmapper registration of NSM
 * that sm-notify looks up.
 *
 *   rpcraw udp|tcp HOST PORT PROG VERS PROC [HEXARGS]
 *       prints "ACCEPT_STAT HEXRESULT" (the result's bytes after the
 *       accepted-reply header), "denied", or "timeout" (no reply in 3 s,
 *       UDP sent 3 times); exits 0 when a reply came
 *   rpcraw pmapset PORT | pmapunset PORT
 *       PMAP SET / UNSET of NSM (100024 v1 UDP) at PORT with the rpcbind on
 *       127.0.0.1, from a reserved port (rpcbind wants one for SET):
 *       prints "ACCEPT_STAT RESULT" (RESULT 1: done)
 *
 * Run as root, the source port is a reserved one (resvport.h) unless
 * CFS_TOOL_PORT=high.
 */
#include "resvport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int usage(void)
{
	fprintf(stderr, "usage: rpcraw udp|tcp HOST PORT PROG VERS PROC [HEXARGS]\n"
	                "       rpcraw pmapset|pmapunset PORT\n");
	return 2;
}

/* Reads exactly n bytes, or fails after 3 s. */
static int read_full(int fd, uint8_t *p, size_t n)
{
	while (n) {
		struct pollfd pfd = {fd, POLLIN, 0};
		ssize_t r;

		if (poll(&pfd, 1, 3000) <= 0)
			return -1;
		r = read(fd, p, n);
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* One call; the reply into rep (*replen). 0, or -1 (no reply). */
static int call(int tcp, const char *host, int port, const uint8_t *msg, size_t len, uint8_t *rep,
                size_t cap, size_t *replen)
{
	struct sockaddr_in to;
	int fd = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);

	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	to.sin_port = htons((uint16_t)port);
	if (fd < 0 || inet_pton(AF_INET, host, &to.sin_addr) != 1 || resv_bind(fd, AF_INET) != 0)
		return -1;
	if (tcp) {
		uint8_t mark[4];
		uint32_t n;

		put32(mark, 0x80000000u | (uint32_t)len);
		if (connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0 ||
		    write(fd, mark, 4) != 4 || write(fd, msg, len) != (ssize_t)len ||
		    read_full(fd, mark, 4) != 0 || (n = get32(mark) & 0x7fffffffu) > cap ||
		    read_full(fd, rep, n) != 0) {
			close(fd);
			return -1;
		}
		*replen = n;
		close(fd);
		return 0;
	}
	for (int i = 0; i < 3; i++) {
		struct pollfd pfd = {fd, POLLIN, 0};
		ssize_t r;

		if (sendto(fd, msg, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			break;
		while (poll(&pfd, 1, 1000) > 0) {
			r = recv(fd, rep, cap, 0);
			if (r >= 8 && get32(rep) == get32(msg)) {
				*replen = (size_t)r;
				close(fd);
				return 0;
			}
		}
	}
	close(fd);
	return -1;
}

int main(int argc, char **argv)
{
	static uint8_t msg[65536], rep[65536];
	const char *host, *hex = NULL;
	int tcp, port;
	uint32_t prog, vers, proc;
	size_t len = 40, rl = 0, off;

	if (argc >= 3 && (strcmp(argv[1], "pmapset") == 0 || strcmp(argv[1], "pmapunset") == 0)) {
		host = "127.0.0.1";
		tcp = 0;
		port = 111;
		prog = 100000;
		vers = 2;
		proc = strcmp(argv[1], "pmapset") == 0 ? 1 : 2;
		put32(msg + 40, 100024);
		put32(msg + 44, 1);
		put32(msg + 48, 17); /* UDP */
		put32(msg + 52, (uint32_t)atoi(argv[2]));
		len += 16;
	} else if (argc >= 7 && (strcmp(argv[1], "udp") == 0 || strcmp(argv[1], "tcp") == 0)) {
		tcp = strcmp(argv[1], "tcp") == 0;
		host = argv[2];
		port = atoi(argv[3]);
		prog = (uint32_t)strtoul(argv[4], NULL, 0);
		vers = (uint32_t)strtoul(argv[5], NULL, 0);
		proc = (uint32_t)strtoul(argv[6], NULL, 0);
		hex = argc > 7 ? argv[7] : "";
		if (strlen(hex) % 2 || strlen(hex) / 2 > sizeof(msg) - 40)
			return usage();
		for (size_t i = 0; hex[2 * i]; i++) {
			unsigned b;

			if (sscanf(hex + 2 * i, "%2x", &b) != 1)
				return usage();
			msg[len++] = (uint8_t)b;
		}
	} else {
		return usage();
	}
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	put32(msg, (uint32_t)rand()); /* xid */
	put32(msg + 4, 0);            /* CALL */
	put32(msg + 8, 2);
	put32(msg + 12, prog);
	put32(msg + 16, vers);
	put32(msg + 20, proc); /* AUTH_NONE credential and verifier: 16 zero bytes */
	memset(msg + 24, 0, 16);
	if (call(tcp, host, port, msg, len, rep, sizeof(rep), &rl) != 0) {
		printf("timeout\n");
		return 1;
	}
	if (rl < 12 || get32(rep + 4) != 1) {
		printf("not-a-reply\n");
		return 1;
	}
	if (get32(rep + 8) != 0) {
		printf("denied\n");
		return 0;
	}
	if (rl < 20 || (off = 20 + ((get32(rep + 16) + 3) & ~3u)) + 4 > rl) {
		printf("short\n");
		return 1;
	}
	printf("%u ", get32(rep + off));
	for (size_t i = off + 4; i < rl; i++)
		printf("%02x", rep[i]);
	printf("\n");
	return 0;
}
