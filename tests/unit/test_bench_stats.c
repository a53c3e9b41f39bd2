/* The bench's statistics (bench/stats.c): mean and SEM against values
 * computed by hand, the n = 1 and n = 0 edges, precision with a large
 * offset, and the ratio's propagated error. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stats.h"

#define CLOSE(a, b) assert_true(fabs((a) - (b)) < 1e-9 * (1 + fabs(b)))

static void test_textbook_sample(void **state)
{
	/* sum 40, mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32;
	 * s = sqrt(32/7) = 2.1380899..., SEM = s/sqrt(8) = 0.7559289... */
	const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
	struct bstat s;

	(void)state;
	assert_int_equal(bstat_compute(x, 8, &s), 0);
	assert_int_equal(s.n, 8);
	CLOSE(s.mean, 5.0);
	CLOSE(s.sd, 2.1380899352993950);
	CLOSE(s.sem, 0.7559289460184544);
	CLOSE(s.min, 2.0);
	CLOSE(s.max, 9.0);
	assert_int_equal(s.spread, 1);
}

static void test_three_runs(void **state)
{
	/* 1.2 s, 1.5 s, 1.8 s: mean 1.5, s = 0.3, SEM = 0.3/sqrt(3) = 0.17320508 */
	const double x[] = {1.2, 1.5, 1.8};
	struct bstat s;

	(void)state;
	assert_int_equal(bstat_compute(x, 3, &s), 0);
	CLOSE(s.mean, 1.5);
	CLOSE(s.sd, 0.3);
	CLOSE(s.sem, 0.17320508075688773);
}

static void test_one_run_has_no_spread(void **state)
{
	const double x[] = {3.25};
	struct bstat s;

	(void)state;
	assert_int_equal(bstat_compute(x, 1, &s), 0);
	CLOSE(s.mean, 3.25);
	CLOSE(s.sem, 0.0);
	assert_int_equal(s.spread, 0);
}

static void test_no_runs(void **state)
{
	struct bstat s;

	(void)state;
	assert_int_equal(bstat_compute(NULL, 0, &s), -1);
	assert_int_equal(s.n, 0);
}

static void test_large_offset_keeps_precision(void **state)
{
	/* byte counters around 1e12: a one-pass sum of squares would lose
	 * the spread; s must still be exactly 1 */
	const double x[] = {1e12 + 1, 1e12 + 2, 1e12 + 3};
	struct bstat s;

	(void)state;
	assert_int_equal(bstat_compute(x, 3, &s), 0);
	CLOSE(s.mean, 1e12 + 2);
	assert_true(fabs(s.sd - 1.0) < 1e-6);
}

static void test_ratio(void **state)
{
	/* a = 10 ± 1, b = 20 ± 2: r = 0.5, se = 0.5 * sqrt(0.1^2 + 0.1^2) */
	struct bstat a = {.n = 5, .mean = 10, .sem = 1}, b = {.n = 5, .mean = 20, .sem = 2};
	struct bstat z = {.n = 5, .mean = 0, .sem = 0};
	double r, se;

	(void)state;
	assert_int_equal(bstat_ratio(&a, &b, &r, &se), 0);
	CLOSE(r, 0.5);
	CLOSE(se, 0.5 * sqrt(0.02));
	assert_int_equal(bstat_ratio(&a, &z, &r, &se), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_textbook_sample),
	    cmocka_unit_test(test_three_runs),
	    cmocka_unit_test(test_one_run_has_no_spread),
	    cmocka_unit_test(test_no_runs),
	    cmocka_unit_test(test_large_offset_keeps_precision),
	    cmocka_unit_test(test_ratio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
