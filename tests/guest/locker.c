/* locker — take and hold a file lock inside the qemu guest, the way an
 * application would, so that lock tests see what the kernel NFS client
 * does with it (NLM through the proxy).
 *
 *   locker fcntl|flock FILE ex|sh [-n] [--start N --len N] [--hold S]
 *          [--wait CTL=WORD] [--until CTL=WORD] [--report PATH]
 *
 * fcntl: a POSIX byte-range lock (F_SETLK with -n, else F_SETLKW) on
 * [start, start+len) (len 0: to the end of the file); flock: flock(2) on the
 * whole file (LOCK_NB with -n), which the Linux NFS client maps to a
 * whole-file NLM lock. --wait: first wait until the file CTL holds WORD
 * (the test's signal; read by opening it each time, so close-to-open
 * revalidation sees a change made on the server). Prints one line
 * "LOCK: granted T" (T: seconds it took) or "LOCK: busy" (-n, held by
 * someone else) or "LOCK: error E"; then holds the lock --hold seconds
 * (default 0) and, with --until, until CTL holds WORD; unlocks and prints
 * "UNLOCK: ok". --report PATH: the same lines are also written to PATH
 * (created), for the host to read on the server. Exit 0 granted, 1 busy,
 * 2 error.
 *
 * Built static (the guest has no libc of its own); no sanitizers. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: locker fcntl|flock FILE ex|sh [-n] [--start N --len N] [--hold S]\n"
	                "              [--wait CTL=WORD] [--until CTL=WORD] [--report PATH]\n");
	return 2;
}

/* 1 when the file ctl holds word (as a line or a word in it). Opened
 * afresh each time: the NFS client revalidates at open. */
static int ctl_says(const char *ctl, const char *word)
{
	char buf[256];
	ssize_t n;
	int fd = open(ctl, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strstr(buf, word) != NULL;
}

/* Waits until spec ("CTL=WORD") holds. */
static void wait_ctl(const char *spec)
{
	char ctl[256];
	const char *eq = strchr(spec, '=');

	if (eq == NULL || (size_t)(eq - spec) >= sizeof(ctl))
		return;
	memcpy(ctl, spec, (size_t)(eq - spec));
	ctl[eq - spec] = 0;
	while (!ctl_says(ctl, eq + 1))
		usleep(200 * 1000);
}

static const char *report_path;

/* Prints a result line, and writes it to --report's file too. */
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fputs(line, stdout);
	fflush(stdout);
	if (report_path) {
		int fd = open(report_path, O_WRONLY | O_CREAT | O_APPEND, 0666);

		if (fd >= 0) {
			ssize_t w = write(fd, line, strlen(line));

			(void)w;
			close(fd); /* close-to-open: the server has it now */
		}
	}
}

int main(int argc, char **argv)
{
	const char *kind, *file, *mode, *wait = NULL, *until = NULL;
	long long start = 0, len = 0;
	double hold = 0, t0;
	int nb = 0, fd, rc, ex;

	if (argc < 4)
		return usage();
	kind = argv[1];
	file = argv[2];
	mode = argv[3];
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0)
			nb = 1;
		else if (strcmp(argv[i], "--start") == 0 && i + 1 < argc)
			start = atoll(argv[++i]);
		else if (strcmp(argv[i], "--len") == 0 && i + 1 < argc)
			len = atoll(argv[++i]);
		else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
			hold = atof(argv[++i]);
		else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc)
			wait = argv[++i];
		else if (strcmp(argv[i], "--until") == 0 && i + 1 < argc)
			until = argv[++i];
		else if (strcmp(argv[i], "--report") == 0 && i + 1 < argc)
			report_path = argv[++i];
		else
			return usage();
	}
	if (strcmp(mode, "ex") != 0 && strcmp(mode, "sh") != 0)
		return usage();
	ex = strcmp(mode, "ex") == 0;
	if (strcmp(kind, "fcntl") != 0 && strcmp(kind, "flock") != 0)
		return usage();
	/* a shared fcntl lock needs the file open for reading, an exclusive
	 * one for writing */
	fd = open(file, O_RDWR | O_CREAT, 0666);
	if (fd < 0) {
		say("LOCK: error open %s\n", strerror(errno));
		return 2;
	}
	if (wait)
		wait_ctl(wait);
	t0 = now_s();
	if (strcmp(kind, "fcntl") == 0) {
		struct flock fl;

		memset(&fl, 0, sizeof(fl));
		fl.l_type = ex ? F_WRLCK : F_RDLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = start;
		fl.l_len = len;
		rc = fcntl(fd, nb ? F_SETLK : F_SETLKW, &fl);
	} else {
		rc = flock(fd, (ex ? LOCK_EX : LOCK_SH) | (nb ? LOCK_NB : 0));
	}
	if (rc != 0) {
		int e = errno;

		if (e == EAGAIN || e == EACCES || e == EWOULDBLOCK) {
			say("LOCK: busy\n");
			return 1;
		}
		say("LOCK: error %s\n", strerror(e));
		return 2;
	}
	say("LOCK: granted %.2f\n", now_s() - t0);
	if (hold > 0)
		usleep((useconds_t)(hold * 1e6));
	if (until)
		wait_ctl(until);
	/* close() drops both kinds of lock; unlocking first says so in NLM */
	if (strcmp(kind, "fcntl") == 0) {
		struct flock fl;

		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_UNLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = start;
		fl.l_len = len;
		rc = fcntl(fd, F_SETLK, &fl);
	} else {
		rc = flock(fd, LOCK_UN);
	}
	say("UNLOCK: %s\n", rc == 0 ? "ok" : strerror(errno));
	close(fd);
	return 0;
}
