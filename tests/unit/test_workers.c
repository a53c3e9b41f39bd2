/* The disk worker pool: every job's done function runs once on the loop
 * thread; jobs of one key (the writes to one cached file) never run at the
 * same time and run in the order they were queued, while other keys and
 * unkeyed jobs (reads) run beside them. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "loop.h"
#include "workers.h"

#define KEYS 3
#define PER_KEY 12
#define UNKEYED 12
#define JOBS (KEYS * PER_KEY + UNKEYED)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int running_of[KEYS + 1]; /* [0]: unkeyed */
static int max_of[KEYS + 1];
static int running_all, max_all;
static int next_seq[KEYS + 1];
static int out_of_order;
static int mixed; /* an unkeyed job started while keyed ones ran */
static int done_count;

struct tjob {
	int key; /* 0: unkeyed */
	int seq; /* order queued within its key */
	int ran;
};

static void nap_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void work(void *arg)
{
	struct tjob *t = arg;

	pthread_mutex_lock(&mu);
	if (t->key && t->seq != next_seq[t->key])
		out_of_order++;
	next_seq[t->key]++;
	if (t->key == 0 && running_all > running_of[0])
		mixed++;
	running_of[t->key]++;
	if (running_of[t->key] > max_of[t->key])
		max_of[t->key] = running_of[t->key];
	if (++running_all > max_all)
		max_all = running_all;
	pthread_mutex_unlock(&mu);

	nap_ms(3); /* a disk write */

	pthread_mutex_lock(&mu);
	running_of[t->key]--;
	running_all--;
	pthread_mutex_unlock(&mu);
	t->ran++;
}

static void done(void *arg)
{
	struct tjob *t = arg;

	assert_int_equal(t->ran, 1); /* after its work, exactly once */
	done_count++;
}

static void test_keys_serialize(void **state)
{
	struct loop *l = loop_new();
	struct workers *w = NULL;
	static struct tjob jobs[JOBS];
	int n = 0;

	(void)state;
	assert_non_null(l);
	assert_int_equal(workers_start(l, 4, &w), 0);
	/* interleaved: key 1, key 2, key 3, unkeyed, key 1, ... */
	for (int i = 0; i < PER_KEY; i++) {
		for (int k = 1; k <= KEYS; k++) {
			jobs[n] = (struct tjob){.key = k, .seq = i};
			assert_int_equal(workers_submit_keyed(w, (uint64_t)k * 0x100000001ull, work, done,
							      &jobs[n]),
					 0);
			n++;
		}
		jobs[n] = (struct tjob){.key = 0, .seq = i};
		assert_int_equal(workers_submit(w, work, done, &jobs[n]), 0);
		n++;
	}
	assert_int_equal(n, JOBS);
	for (int spins = 0; done_count < JOBS && spins < 2000; spins++)
		loop_once(l, 10);
	assert_int_equal(done_count, JOBS);
	assert_int_equal(workers_pending(w), 0);
	for (int k = 1; k <= KEYS; k++) {
		assert_int_equal(max_of[k], 1); /* one writer per file */
		assert_int_equal(next_seq[k], PER_KEY);
	}
	assert_int_equal(out_of_order, 0);
	/* the pool still runs different keys and reads side by side */
	assert_true(max_all >= 3);
	assert_true(mixed > 0);
	workers_stop(w);
	loop_free(l);
}

/* stopping with keyed jobs still queued behind a running one runs them all */
static void test_stop_drains_keyed(void **state)
{
	struct loop *l = loop_new();
	struct workers *w = NULL;
	static struct tjob jobs[8];

	(void)state;
	memset(running_of, 0, sizeof(running_of));
	memset(next_seq, 0, sizeof(next_seq));
	done_count = 0;
	assert_int_equal(workers_start(l, 2, &w), 0);
	for (int i = 0; i < 8; i++) {
		jobs[i] = (struct tjob){.key = 1, .seq = i};
		assert_int_equal(workers_submit_keyed(w, 7, work, done, &jobs[i]), 0);
	}
	workers_stop(w); /* joins: every queued job ran, done functions too */
	assert_int_equal(done_count, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(jobs[i].ran, 1);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_serialize),
		cmocka_unit_test(test_stop_drains_keyed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
