/* The source port of the raw test clients (badrpc, churn, hostile): run as
 * root, they bind a reserved port (512..1023) before connecting, as libnfs
 * 4.0's rpc_connect does and as the kernel NFS client does (its `resvport`
 * default), so a server or proxy that refuses unprivileged ports (knfsd's
 * `secure`, cachefsd's secure_ports) sees them as it would see a real
 * client on a client host. CFS_TOOL_PORT=high in the environment (or
 * resv_force_high()) keeps the kernel's ephemeral port: the unprivileged
 * client of the tests that check such refusals. */
#ifndef CFS_TEST_RESVPORT_H
#define CFS_TEST_RESVPORT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int resv_high = -1; /* -1: not decided yet */
/* The address to connect from (resv_source()); family 0: the kernel's
 * choice. */
static struct sockaddr_storage resv_src;

/* Connect from addr (an IPv4 or IPv6 literal, port 0): a second client
 * host on loopback is 127.0.0.2. 0, or -1 when addr is not one. */
static inline int resv_source(const char *addr)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&resv_src;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&resv_src;

	memset(&resv_src, 0, sizeof(resv_src));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		return 0;
	}
	return -1;
}

static inline void resv_force_high(void)
{
	resv_high = 1;
}

static inline int resv_wanted(void)
{
	if (resv_high < 0) {
		const char *e = getenv("CFS_TOOL_PORT");
		resv_high = geteuid() != 0 || (e && strcmp(e, "high") == 0);
	}
	return !resv_high;
}

/* Binds fd to a free port in 512..1023 when resv_wanted(), starting after
 * the last one used (ports in TIME_WAIT towards the same server make a
 * later connect fail: resv_retryable() says when to try the next one).
 * Returns 0 (bound, or nothing wanted), -1 when no reserved port was free
 * (errno set). */
static inline int resv_bind(int fd, int family)
{
	static int next;
	struct sockaddr_storage ss;
	int err = EADDRINUSE;

	if (!resv_wanted()) {
		if (resv_src.ss_family != family)
			return 0;
		return bind(fd, (struct sockaddr *)&resv_src,
		            family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                               : sizeof(struct sockaddr_in));
	}
	if (next == 0)
		next = 512 + (int)(time(NULL) % 512);
	for (int i = 0; i < 512; i++) {
		int port = next;

		next = next == 1023 ? 512 : next + 1;
		memset(&ss, 0, sizeof(ss));
		if (resv_src.ss_family == family)
			ss = resv_src;
		if (family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)port);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)port);
		}
		if (bind(fd, (struct sockaddr *)&ss,
		         family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                            : sizeof(struct sockaddr_in)) == 0)
			return 0;
		err = errno;
		if (err == EACCES)
			break;
	}
	errno = err;
	return -1;
}

/* A connect() on a reserved port that failed this way may work from
 * another one: the port's last connection to that server is in TIME_WAIT. */
static inline int resv_retryable(int err)
{
	return resv_wanted() && (err == EADDRNOTAVAIL || err == EADDRINUSE);
}

/* A non-blocking TCP socket (TCP_NODELAY, SO_REUSEADDR when reuse) with
 * its connect() started towards sa: from a reserved port when
 * resv_wanted(), trying further ports while the connect fails at once for
 * a port in TIME_WAIT. Returns the fd (connecting: wait for POLLOUT and
 * check SO_ERROR) or -1 with errno. */
static inline int resv_connect_start(const struct sockaddr *sa, socklen_t salen, int reuse)
{
	for (int attempt = 0; attempt < 64; attempt++) {
		int one = 1, err;
		int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0)
			return -1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (reuse)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (resv_bind(fd, sa->sa_family) != 0) {
			err = errno;
			close(fd);
			errno = err;
			return -1;
		}
		if (connect(fd, sa, salen) == 0 || errno == EINPROGRESS)
			return fd;
		err = errno;
		close(fd);
		errno = err;
		if (!resv_retryable(err))
			return -1;
	}
	errno = EADDRNOTAVAIL;
	return -1;
}

#endif
