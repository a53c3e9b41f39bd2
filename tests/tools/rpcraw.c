/*
 * rpcraw: one hand-made ONC RPC call (AUTH_NONE) over UDP or TCP, for the
 * NSM tests (tests/integ/56-nsm.sh).
 *
 *   rpcraw udp|tcp HOST PORT PROG VERS PROC [HEXARGS]
 *       prints "ACCEPT_STAT HEXRESULT" (the result's bytes after the
 *       accepted-reply header), "denied", or "timeout" (no reply in 3 s,
 *       UDP sent 3 times); exits 0 when a reply came
 *
 * Run as root, the source port is a reserved one (resvport.h) unless
 * CFS_TOOL_PORT=high.
 */
#include "resvport.h"
#include "xdrbuf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: rpcraw udp|tcp HOST PORT PROG VERS PROC [HEXARGS]\n");
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
		struct xbuf mark = {0};
		uint8_t rm[4];
		uint32_t n;
		int ok;

		xb_u32(&mark, 0x80000000u | (uint32_t)len);
		ok = connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0 &&
		     write(fd, mark.d, 4) == 4 && write(fd, msg, len) == (ssize_t)len &&
		     read_full(fd, rm, 4) == 0 && (n = get_u32(rm) & 0x7fffffffu) <= cap &&
		     read_full(fd, rep, n) == 0;
		xb_free(&mark);
		if (!ok) {
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
			if (r >= 8 && get_u32(rep) == get_u32(msg)) {
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
	static uint8_t rep[65536];
	struct xbuf args = {0}, msg = {0};
	const char *host;
	int tcp, port;
	uint32_t prog, vers, proc;
	size_t rl = 0, off;

	if (argc >= 7 && (strcmp(argv[1], "udp") == 0 || strcmp(argv[1], "tcp") == 0)) {
		const char *hex = argc > 7 ? argv[7] : "";

		tcp = strcmp(argv[1], "tcp") == 0;
		host = argv[2];
		port = atoi(argv[3]);
		prog = (uint32_t)strtoul(argv[4], NULL, 0);
		vers = (uint32_t)strtoul(argv[5], NULL, 0);
		proc = (uint32_t)strtoul(argv[6], NULL, 0);
		if (strlen(hex) % 2 || strlen(hex) / 2 > 65000)
			return usage();
		for (size_t i = 0; hex[2 * i]; i++) {
			unsigned b;
			uint8_t c;

			if (sscanf(hex + 2 * i, "%2x", &b) != 1)
				return usage();
			c = (uint8_t)b;
			xb_raw(&args, &c, 1);
		}
	} else {
		return usage();
	}
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	xb_call_hdr(&msg, (uint32_t)rand(), 2, prog, vers, proc);
	xb_auth_none(&msg); /* credential */
	xb_auth_none(&msg); /* verifier */
	xb_raw(&msg, args.d, args.len);
	if (call(tcp, host, port, msg.d, msg.len, rep, sizeof(rep), &rl) != 0) {
		printf("timeout\n");
		return 1;
	}
	if (rl < 12 || get_u32(rep + 4) != 1) {
		printf("not-a-reply\n");
		return 1;
	}
	if (get_u32(rep + 8) != 0) {
		printf("denied\n");
		return 0;
	}
	if (rl < 20 || (off = 20 + ((get_u32(rep + 16) + 3) & ~3u)) + 4 > rl) {
		printf("short\n");
		return 1;
	}
	printf("%u ", get_u32(rep + off));
	for (size_t i = off + 4; i < rl; i++)
		printf("%02x", rep[i]);
	printf("\n");
	xb_free(&args);
	xb_free(&msg);
	return 0;
}
