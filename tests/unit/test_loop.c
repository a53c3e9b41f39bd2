/* The event loop's busy-poll: a client that waits for each reply is served
 * by a loop that polls instead of sleeping, and an idle loop still sleeps
 * (an idle daemon burns no CPU). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "loop.h"

#define PINGS 2000

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct echo {
	int served;
};

/* the server side: answer every byte with that byte plus one */
static void on_readable(struct loop *l, int fd, int revents, void *arg)
{
	struct echo *e = arg;
	unsigned char b[64];
	ssize_t n;

	(void)l;
	(void)revents;
	n = read(fd, b, sizeof(b));
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n; i++)
		b[i]++;
	assert_int_equal(write(fd, b, (size_t)n), n);
	e->served += (int)n;
}

struct client {
	int fd;
	int ok;
};

/* a client that waits for each reply before its next call */
static void *client_main(void *arg)
{
	struct client *c = arg;

	c->ok = 0;
	for (int i = 0; i < PINGS; i++) {
		unsigned char b = (unsigned char)i, r;

		if (write(c->fd, &b, 1) != 1 || read(c->fd, &r, 1) != 1 || r != (unsigned char)(b + 1))
			return NULL;
	}
	c->ok = 1;
	return NULL;
}

static void ping_pong(unsigned spin_us)
{
	struct loop *l = loop_new();
	struct echo e = {0};
	struct client c;
	pthread_t t;
	int sv[2];

	assert_non_null(l);
	loop_set_busy_poll(l, spin_us);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(loop_add(l, sv[0], POLLIN, on_readable, &e), 0);
	c.fd = sv[1];
	assert_int_equal(pthread_create(&t, NULL, client_main, &c), 0);
	for (int i = 0; i < 100000 && e.served < PINGS; i++)
		loop_once(l, 100);
	pthread_join(t, NULL);
	assert_int_equal(e.served, PINGS);
	assert_true(c.ok);
	loop_del(l, sv[0]);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* Every call is answered, in order, with busy-poll off, on, and at its
 * largest window. */
static void test_ping_pong(void **state)
{
	(void)state;
	ping_pong(0);
	ping_pong(200);
	ping_pong(100000);
}

static void nothing(struct loop *l, void *arg)
{
	(void)l;
	(*(int *)arg)++;
}

/* An idle loop sleeps: 20 passes of 10 ms with nothing to do cost almost no
 * CPU, even with the largest busy-poll window and right after a burst of
 * work (one pass polls, and never past its timeout). Timers still fire. */
static void test_idle_sleeps(void **state)
{
	struct loop *l = loop_new();
	struct echo e = {0};
	int sv[2], fired = 0;
	unsigned char b = 1;
	double cpu0;

	(void)state;
	assert_non_null(l);
	loop_set_busy_poll(l, 100000); /* 100 ms */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(loop_add(l, sv[0], POLLIN, on_readable, &e), 0);
	/* a burst of work first */
	for (int i = 0; i < 50; i++) {
		assert_int_equal(write(sv[1], &b, 1), 1);
		loop_once(l, 100);
		assert_int_equal(read(sv[1], &b, 1), 1);
	}
	assert_int_equal(e.served, 50);
	assert_non_null(loop_timer_add(l, 150, 0, nothing, &fired));
	cpu0 = cpu_seconds();
	for (int i = 0; i < 20; i++)
		loop_once(l, 10);
	/* one pass spins (never past its 10 ms timeout), the rest sleep;
	 * spinning through all 20 passes would cost about 200 ms */
	assert_true(cpu_seconds() - cpu0 < 0.060);
	assert_int_equal(fired, 1);
	loop_del(l, sv[0]);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_pong),
		cmocka_unit_test(test_idle_sleeps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
