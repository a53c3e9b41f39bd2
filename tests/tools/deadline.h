/* Deadlines on CLOCK_MONOTONIC for the socket I/O of the raw test clients
 * (badrpc, churn). */
#ifndef CFS_TEST_DEADLINE_H
#define CFS_TEST_DEADLINE_H

#include <time.h>

/* milliseconds until the deadline, 0 when it has passed */
static inline long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms =
	    (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms;
}

/* *d: ms milliseconds from now */
static inline void deadline_in(struct timespec *d, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, d);
	d->tv_sec += ms / 1000;
	d->tv_nsec += (long)(ms % 1000) * 1000000;
	if (d->tv_nsec >= 1000000000) {
		d->tv_sec++;
		d->tv_nsec -= 1000000000;
	}
}

#endif
