/* dirchurn: changes a directory's names the way a busy filer's users do,
 * straight on the server's disk: creates, renames and removes files whose
 * names start with PREFIX, and touches nothing else in the directory.
 *
 *   dirchurn DIR [--prefix P] [--seconds S] [--rate N] [--seed S] [--keep N]
 *     --prefix P   the names it makes, P000000 ... [c]
 *     --seconds S  how long [10]
 *     --rate N     changes per second, about [500]
 *     --seed S     the random choice of creates, renames and removes [1]
 *     --keep N     about how many of its names exist at a time [1000]
 * Prints "changes N creates C renames R removes D" at the end. Exit: 0, 1
 * when a change failed, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t rnd(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t)((*s * 2685821657736338717ull) >> 32);
}

static void usage(void)
{
	fprintf(stderr, "usage: dirchurn DIR [--prefix P] [--seconds S] [--rate N] [--seed S] "
	                "[--keep N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir, *prefix = "c";
	double seconds = 10;
	long rate = 500, keep = 1000;
	uint64_t seed = 1;
	unsigned long next = 0, creates = 0, renames = 0, removes = 0;

	if (argc < 2 || argv[1][0] == '-')
		usage();
	dir = argv[1];
	for (int i = 2; i < argc; i += 2) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--prefix") == 0)
			prefix = argv[i + 1];
		else if (strcmp(argv[i], "--seconds") == 0)
			seconds = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--rate") == 0)
			rate = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--seed") == 0)
			seed = strtoull(argv[i + 1], NULL, 0) * 2 + 1;
		else if (strcmp(argv[i], "--keep") == 0)
			keep = atol(argv[i + 1]);
		else
			usage();
	}
	if (rate <= 0 || keep <= 0 || chdir(dir) != 0) {
		if (rate > 0 && keep > 0)
			perror(dir);
		usage();
	}
	/* the names of ours that exist, by number */
	unsigned long *live = calloc((size_t)keep * 2 + 1, sizeof(*live));
	size_t nlive = 0;
	if (live == NULL)
		return 1;
	double start = now_s(), end = start + seconds;
	unsigned long done = 0;
	char a[256], b[256];

	while (now_s() < end) {
		/* paced: about rate changes per second */
		double due = start + (double)done / (double)rate;
		double wait = due - now_s();
		if (wait > 0)
			usleep((useconds_t)(wait * 1e6));
		uint32_t pick = rnd(&seed) % 3;
		if (nlive == 0 || (pick == 0 && nlive < (size_t)keep * 2)) {
			snprintf(a, sizeof(a), "%s%06lu", prefix, next);
			int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0) {
				perror(a);
				return 1;
			}
			close(fd);
			live[nlive++] = next++;
			creates++;
		} else {
			size_t k = rnd(&seed) % nlive;
			snprintf(a, sizeof(a), "%s%06lu", prefix, live[k]);
			if (pick == 1 || nlive < (size_t)keep / 2) {
				snprintf(b, sizeof(b), "%s%06lu", prefix, next);
				if (rename(a, b) != 0) {
					perror(a);
					return 1;
				}
				live[k] = next++;
				renames++;
			} else {
				if (unlink(a) != 0) {
					perror(a);
					return 1;
				}
				live[k] = live[--nlive];
				removes++;
			}
		}
		done++;
	}
	printf("changes %lu creates %lu renames %lu removes %lu\n", done, creates, renames, removes);
	free(live);
	return 0;
}
