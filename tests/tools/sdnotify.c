/* sdnotify: the service manager's side of the notification protocol, for
 * tests/integ/07-systemd-notify.sh (systemd itself cannot run as PID 1 in
 * the test machine), and a one-request control-socket client for requests
 * cachefsctl does not know (test-stall).
 *
 *   sdnotify listen SOCKET OUT
 *       Binds a datagram socket at SOCKET (a path, or @NAME: the abstract
 *       namespace, as $NOTIFY_SOCKET may name either) and appends each
 *       message to OUT, one line per "KEY=VALUE" field:
 *           MONOTONIC_MS PID KEY=VALUE
 *       PID is the sender's, from the kernel (SCM_CREDENTIALS), as systemd
 *       checks it against the main pid (NotifyAccess=main). Runs until
 *       killed.
 *   sdnotify ctl SOCKET REQUEST...
 *       Sends the words as one request line on the control socket SOCKET
 *       and prints the response; exit 0 on ".ok", 1 on ".error" (printed
 *       on stderr) or no answer within 60 s.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"

static int usage(void)
{
	fprintf(stderr, "usage: sdnotify listen SOCKET OUT | sdnotify ctl SOCKET REQUEST...\n");
	return 2;
}

static socklen_t make_addr(struct sockaddr_un *sa, const char *path)
{
	size_t n = strlen(path);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (n == 0 || n >= sizeof(sa->sun_path)) {
		fprintf(stderr, "sdnotify: bad socket name '%s'\n", path);
		exit(2);
	}
	memcpy(sa->sun_path, path, n);
	if (path[0] == '@') {
		sa->sun_path[0] = 0;
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	}
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

static int do_listen(const char *path, const char *out)
{
	struct sockaddr_un sa;
	socklen_t len = make_addr(&sa, path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;
	FILE *f;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
		perror("sdnotify: socket");
		return 1;
	}
	if (path[0] == '/')
		unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, len) != 0) {
		fprintf(stderr, "sdnotify: bind %s: %s\n", path, strerror(errno));
		return 1;
	}
	f = fopen(out, "a");
	if (f == NULL) {
		fprintf(stderr, "sdnotify: %s: %s\n", out, strerror(errno));
		return 1;
	}
	/* the caller waits for this line before starting the daemon */
	fprintf(f, "0 0 LISTENING=1\n");
	fflush(f);
	for (;;) {
		char buf[4097];
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(struct ucred))];
		} ctl;
		struct iovec iov = {buf, sizeof(buf) - 1};
		struct msghdr mh = {0};
		struct timespec ts;
		struct ucred cred = {0};
		ssize_t n;

		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		n = recvmsg(fd, &mh, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("sdnotify: recvmsg");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
				memcpy(&cred, CMSG_DATA(c), sizeof(cred));
		buf[n] = 0;
		for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save))
			fprintf(f, "%lld %d %s\n",
			        (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, (int)cred.pid, l);
		fflush(f);
	}
}

static int do_ctl(const char *path, int argc, char **argv)
{
	struct sockaddr_un sa;
	socklen_t len = make_addr(&sa, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char req[4096] = "", resp[65536];
	size_t got = 0;
	struct timespec dl;

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) != 0) {
		fprintf(stderr, "sdnotify: connect %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (int i = 0; i < argc; i++) {
		strncat(req, argv[i], sizeof(req) - strlen(req) - 2);
		strncat(req, i + 1 < argc ? " " : "\n", sizeof(req) - strlen(req) - 1);
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		perror("sdnotify: write");
		return 1;
	}
	deadline_in(&dl, 60000);
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		char *last;
		ssize_t n;

		if (poll(&p, 1, (int)ms_left(&dl)) <= 0) {
			fprintf(stderr, "sdnotify: no answer within 60 s\n");
			return 1;
		}
		n = read(fd, resp + got, sizeof(resp) - 1 - got);
		if (n <= 0) {
			fprintf(stderr, "sdnotify: connection closed before the answer ended\n");
			return 1;
		}
		got += (size_t)n;
		resp[got] = 0;
		if (got < 2 || resp[got - 1] != '\n')
			continue;
		resp[got - 1] = 0;
		last = strrchr(resp, '\n');
		last = last ? last + 1 : resp;
		if (strcmp(last, ".ok") == 0) {
			*last = 0;
			fputs(resp, stdout);
			return 0;
		}
		if (strncmp(last, ".error", 6) == 0) {
			fprintf(stderr, "%s\n", last);
			return 1;
		}
		resp[got - 1] = '\n';
	}
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 4 && strcmp(argv[1], "listen") == 0)
		return do_listen(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "ctl") == 0)
		return do_ctl(argv[2], argc - 3, argv + 3);
	return usage();
}
