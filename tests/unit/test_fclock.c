/* The filer's clock as the fresh guard measures it (cachefsd/engine/fclock.c):
 * the offset learned in both directions, the timestamp granularity, the
 * conservative default, the episodes a warning is logged for. Times are
 * made up: "mono" is the proxy's monotonic clock in ms, and the proxy's
 * wall clock is mono + WM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../cachefsd/engine/fclock.h"

#define WM    1700000000000LL /* the proxy's wall clock minus mono, ms */
#define GUARD 2000            /* fresh_guard, ms */

/* A filer time (wall ms) as a ctime of a filesystem with whole seconds
 * (coarse) or nanoseconds. */
static nfstime3 ctime_at(int64_t filer_ms, int coarse)
{
	nfstime3 t;

	t.seconds = (uint32_t)(filer_ms / 1000);
	t.nseconds = coarse ? 0 : (uint32_t)(filer_ms % 1000) * 1000000 + 123457;
	return t;
}

/* A change made through the proxy at mono ms `at` (a 2 ms round trip) on a
 * filer whose clock is the proxy's wall clock + skew. */
static int change(struct fclock *k, int64_t at, int64_t skew, int coarse)
{
	nfstime3 c = ctime_at(at + 1 + WM + skew, coarse);

	fclock_seen(k, at + 2, &c); /* its wcc after is observed too */
	return fclock_changed(k, at, at + 2, &c);
}

/* Nothing known: the filer is taken as at most 1 s behind the proxy's
 * wall clock, and a ctime with zero nanoseconds as whole seconds. */
static void test_conservative_default(void **state)
{
	struct fclock k;
	struct fclock_view v;
	int64_t now = 50000;
	nfstime3 young = ctime_at(now + WM - 3500, 1), old = ctime_at(now + WM - 5000, 1);

	(void)state;
	fclock_init(&k);
	fclock_view(&k, now, WM, &v);
	assert_int_equal(v.known, 0);
	assert_int_equal(v.tick_known, 0);
	assert_int_equal(v.tick_ns, 1000000000); /* whole seconds until known */
	assert_int_equal(v.error_ms, -1);
	/* 3.5 s old by the proxy's clock: the old rule (2 s) stored it; now
	 * it needs 2 s + the tick (1 s) + the assumed skew (1 s) */
	assert_int_equal(fclock_judge(&k, now, now, &young, GUARD, WM), FCLOCK_FRESH);
	assert_int_equal(fclock_judge(&k, now, now, &old, GUARD, WM), FCLOCK_ASSUMED);
	assert_int_equal(fclock_tick_ms(&k, &young), 1000);
	assert_int_equal(fclock_episode(&k, now, WM), 0);
}

/* Zero nanoseconds everywhere: whole seconds (two when no odd second is
 * ever seen); nonzero ones: 10^k ns, k their trailing decimal zeros. */
static void test_granularity(void **state)
{
	struct fclock k;
	struct fclock_view v;
	nfstime3 t = {0, 0};

	(void)state;
	fclock_init(&k);
	for (int i = 0; i < FCLOCK_COARSE_MIN; i++) {
		t.seconds = 1000 + (uint32_t)i;
		fclock_seen(&k, 1000 + i, &t);
	}
	fclock_view(&k, 2000, WM, &v);
	assert_int_equal(v.tick_known, 1);
	assert_int_equal(v.tick_ns, 1000000000);
	assert_int_equal(fclock_tick_ms(&k, &t), 1000);

	fclock_init(&k); /* FAT-like: even seconds only */
	for (int i = 0; i < FCLOCK_TWO_S_MIN; i++) {
		t.seconds = 1000 + 2 * (uint32_t)i;
		fclock_seen(&k, 1000 + i, &t);
	}
	fclock_view(&k, 2000, WM, &v);
	assert_int_equal(v.tick_ns, 2000000000);
	assert_int_equal(fclock_tick_ms(&k, &t), 2000);

	fclock_init(&k);
	t.nseconds = 500000000; /* alone, it says at most 100 ms */
	assert_int_equal(fclock_tick_ms(&k, &t), 100);
	t.nseconds = 123000000;
	assert_int_equal(fclock_tick_ms(&k, &t), 1);
	fclock_seen(&k, 1000, &t);
	t.nseconds = 123456789;
	fclock_seen(&k, 1001, &t);
	fclock_view(&k, 2000, WM, &v);
	assert_int_equal(v.tick_known, 1);
	assert_int_equal(v.tick_ns, 1);
	/* a file of that filer whose ns are zero is still taken as coarse */
	t.nseconds = 0;
	assert_int_equal(fclock_tick_ms(&k, &t), 1000);
}

/* The proxy 3 s ahead (the filer behind), on 1-second timestamps: changes
 * through the proxy measure it, a file 2 s old by the filer's clock (5 s by
 * the proxy's) is not stored, one 4 s old is, and the skew is said once. */
static void test_filer_behind(void **state)
{
	struct fclock k;
	struct fclock_view v;
	int64_t now = 100000, skew = -3000;

	(void)state;
	fclock_init(&k);
	/* changes at different fractions of a second narrow it down */
	for (int i = 0; i < 8; i++)
		assert_int_equal(change(&k, now + i * 1137, skew, 1), 0);
	now += 8 * 1137;
	fclock_view(&k, now, WM, &v);
	assert_int_equal(v.known, 2);
	assert_true(v.lo_ms <= skew && skew <= v.hi_ms);
	assert_true(v.offset_ms > skew - 300 && v.offset_ms < skew + 300);
	assert_true(v.error_ms >= 0 && v.error_ms < 300);
	assert_int_equal(fclock_episode(&k, now, WM), 1);
	assert_int_equal(fclock_episode(&k, now, WM), 0); /* once per episode */

	/* 2 s old by the filer's clock, 5 s by the proxy's */
	nfstime3 young = ctime_at(now + WM + skew - 2000, 1);
	nfstime3 old = ctime_at(now + WM + skew - 4100, 1);
	assert_int_equal(fclock_judge(&k, now, now, &young, GUARD, WM), FCLOCK_FRESH);
	assert_int_equal(fclock_judge(&k, now, now, &old, GUARD, WM), FCLOCK_SOUND);
	/* what counts is when the fill's READs were sent */
	assert_int_equal(fclock_judge(&k, now, now - 2500, &old, GUARD, WM), FCLOCK_FRESH);
	/* what the assumption let in (at most 1 s behind) is safe while the
	 * filer is at most that + fresh_guard behind: 3 s is, with 2 s; with
	 * a 1 s guard it is known wrong */
	assert_false(fclock_assumption_broken(&k, now, GUARD, WM));
	assert_true(fclock_assumption_broken(&k, now, 1000, WM));

	/* the clocks agree again (NTP set the proxy right): over */
	for (int i = 0; i < 8; i++)
		change(&k, now + i * 1137, 0, 1);
	now += 8 * 1137;
	assert_int_equal(k.steps, 1); /* the first of those contradicted the bounds */
	assert_int_equal(fclock_episode(&k, now, WM), -1);
	fclock_view(&k, now, WM, &v);
	assert_true(v.lo_ms <= 0 && 0 <= v.hi_ms);
}

/* One hour: the same, and nothing is stored on the proxy's clock alone. */
static void test_filer_an_hour_behind(void **state)
{
	struct fclock k;
	struct fclock_view v;
	int64_t now = 100000, skew = -3600000;
	nfstime3 c;

	(void)state;
	fclock_init(&k);
	change(&k, now, skew, 0);
	fclock_view(&k, now + 10, WM, &v);
	assert_true(v.hi_ms < -3599000 && v.lo_ms > -3601000);
	assert_int_equal(fclock_episode(&k, now + 10, WM), 1);
	c = ctime_at(now + WM + skew - 1000, 0); /* 59 min old by the proxy's clock */
	assert_int_equal(fclock_judge(&k, now + 10, now + 10, &c, GUARD, WM), FCLOCK_FRESH);
	c = ctime_at(now + WM + skew - 2100, 0);
	assert_int_equal(fclock_judge(&k, now + 10, now + 10, &c, GUARD, WM), FCLOCK_SOUND);
}

/* The filer ahead: the times it reports show it (a lower bound), without
 * any change through the proxy; a file is judged by the filer's clock. */
static void test_filer_ahead(void **state)
{
	struct fclock k;
	struct fclock_view v;
	int64_t now = 100000, skew = 5000;
	nfstime3 c = ctime_at(now + WM + skew - 1, 0), f;

	(void)state;
	fclock_init(&k);
	fclock_seen(&k, now, &c); /* a file just changed on the filer */
	fclock_view(&k, now, WM, &v);
	assert_int_equal(v.known, 1);
	assert_true(v.lo_ms > 4900 && v.lo_ms <= skew);
	assert_int_equal(fclock_episode(&k, now, WM), 1);
	assert_int_equal(fclock_episode(&k, now, WM), 0);
	/* 4 s old by the proxy's clock, 1 s by the filer's: not stored */
	f = ctime_at(now + WM + skew - 1000, 0);
	assert_int_equal(fclock_judge(&k, now, now, &f, GUARD, WM), FCLOCK_FRESH);
	f = ctime_at(now + WM + skew - 2200, 0);
	assert_int_equal(fclock_judge(&k, now, now, &f, GUARD, WM), FCLOCK_SOUND);
	/* reported times bound the clock for a minute only */
	fclock_view(&k, now + FCLOCK_WINDOW_MS + 1, WM, &v);
	assert_int_equal(v.known, 0);
}

/* Reported times never make a file look older than changes allow: a ctime
 * from another clock (an hour ahead) is held to the changes' upper bound. */
static void test_reported_held_by_changes(void **state)
{
	struct fclock k;
	int64_t now = 100000;
	nfstime3 future = ctime_at(now + WM + 3600000, 0), young = ctime_at(now + WM - 1500, 0);

	(void)state;
	fclock_init(&k);
	change(&k, now, 0, 0);
	fclock_seen(&k, now + 5, &future);
	assert_int_equal(fclock_judge(&k, now + 5, now + 5, &young, GUARD, WM), FCLOCK_FRESH);
}

/* A change that contradicts the bounds (the filer's clock stepped back 10 s)
 * starts them over, and reported times from before are forgotten. */
static void test_step(void **state)
{
	struct fclock k;
	struct fclock_view v;
	int64_t now = 100000;

	(void)state;
	fclock_init(&k);
	change(&k, now, 0, 0);
	assert_int_equal(change(&k, now + 100, -10000, 0), 1);
	assert_int_equal(k.steps, 1);
	fclock_view(&k, now + 110, WM, &v);
	assert_true(v.hi_ms < -9900 && v.lo_ms > -10100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conservative_default),
	    cmocka_unit_test(test_granularity),
	    cmocka_unit_test(test_filer_behind),
	    cmocka_unit_test(test_filer_an_hour_behind),
	    cmocka_unit_test(test_filer_ahead),
	    cmocka_unit_test(test_reported_held_by_changes),
	    cmocka_unit_test(test_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
