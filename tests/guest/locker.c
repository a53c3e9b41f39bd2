/* locker — take and hold a file lock inside the qemu guest, the way an
 * application would, so that lock tests see what the kernel NFS client
 * does with it (NLM through the proxy).
 *
 *   locker fcntl|flock FILE ex|sh [-n] [--start N --len N] [--hold S]
 *          [--wait-for PATH] [--then-touch PATH]
 *
 * fcntl: a POSIX byte-range lock (F_SETLK with -n, else F_SETLKW) on
 * [start, start+len) (len 0: to the end of the file); flock: flock(2) on the
 * whole file (LOCK_NB with -n), which the Linux NFS client maps to a
 * whole-file NLM lock. --wait-for: first wait until PATH exists (another
 * guest's signal, over NFS). Prints one line "LOCK: granted T" (T: seconds it
 * took) or "LOCK: busy" (-n, held by someone else) or "LOCK: error E"; then
 * holds the lock --hold seconds (default 0), touches --then-touch PATH while
 * still holding it, unlocks and prints "UNLOCK: ok". Exit 0 granted, 1 busy,
 * 2 error.
 *
 * Built static (the guest has no libc of its own); no sanitizers. */
#include <errno.h>
#include <fcntl.h>
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
	                "              [--wait-for PATH] [--then-touch PATH]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *kind, *file, *mode, *wait_for = NULL, *then_touch = NULL;
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
		else if (strcmp(argv[i], "--wait-for") == 0 && i + 1 < argc)
			wait_for = argv[++i];
		else if (strcmp(argv[i], "--then-touch") == 0 && i + 1 < argc)
			then_touch = argv[++i];
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
		printf("LOCK: error open %s\n", strerror(errno));
		return 2;
	}
	while (wait_for && access(wait_for, F_OK) != 0)
		usleep(200 * 1000);
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
			printf("LOCK: busy\n");
			return 1;
		}
		printf("LOCK: error %s\n", strerror(e));
		return 2;
	}
	printf("LOCK: granted %.2f\n", now_s() - t0);
	fflush(stdout);
	if (hold > 0)
		usleep((useconds_t)(hold * 1e6));
	if (then_touch) {
		int t = open(then_touch, O_WRONLY | O_CREAT, 0666);

		if (t >= 0)
			close(t);
	}
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
	printf("UNLOCK: %s\n", rc == 0 ? "ok" : strerror(errno));
	close(fd);
	return 0;
}
