/* The lock state's pure part (cachefsd/upstream/nfs4lock.c): the byte
 * ranges an NLM owner holds at an NFSv4.0 filer, kept to know when it holds
 * nothing more (then RELEASE_LOCKOWNER and CLOSE): NLM's (offset, len)
 * turned into [s, e), locks merged, unlocks cutting and splitting them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "nfs4up.h"

static void range_of_nlm(void **state)
{
	uint64_t s, e;

	(void)state;
	n4_range_of(10, 5, &s, &e);
	assert_true(s == 10 && e == 15);
	n4_range_of(10, 0, &s, &e); /* len 0: to the end */
	assert_true(s == 10 && e == UINT64_MAX);
	n4_range_of(UINT64_MAX - 3, 10, &s, &e); /* past 2^64: to the end */
	assert_true(s == UINT64_MAX - 3 && e == UINT64_MAX);
}

/* "s-e s-e ..." */
static const char *show(const struct n4_ranges *rs)
{
	static char buf[512];
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < rs->n; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%llu-%llu", i ? " " : "",
		                      (unsigned long long)rs->r[i].s,
		                      rs->r[i].e == UINT64_MAX ? 0ull
		                                               : (unsigned long long)rs->r[i].e);
	return buf;
}

static void ranges_merge_and_split(void **state)
{
	struct n4_ranges rs;

	(void)state;
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(n4_ranges_add(&rs, 10, 20), 0);
	assert_int_equal(n4_ranges_add(&rs, 30, 40), 0);
	assert_int_equal(n4_ranges_add(&rs, 0, 5), 0);
	assert_string_equal(show(&rs), "0-5 10-20 30-40");
	assert_int_equal(n4_ranges_add(&rs, 20, 30), 0); /* touching both: one */
	assert_string_equal(show(&rs), "0-5 10-40");
	assert_int_equal(n4_ranges_add(&rs, 3, 12), 0);
	assert_string_equal(show(&rs), "0-40");
	/* an unlock in the middle splits, at an edge cuts */
	assert_int_equal(n4_ranges_sub(&rs, 15, 25), 0);
	assert_string_equal(show(&rs), "0-15 25-40");
	assert_int_equal(n4_ranges_sub(&rs, 0, 5), 0);
	assert_string_equal(show(&rs), "5-15 25-40");
	assert_int_equal(n4_ranges_sub(&rs, 10, 30), 0);
	assert_string_equal(show(&rs), "5-10 30-40");
	/* an unlock of what is not held changes nothing */
	assert_int_equal(n4_ranges_sub(&rs, 100, 200), 0);
	assert_string_equal(show(&rs), "5-10 30-40");
	/* to the end of the file, then an unlock of everything: nothing held */
	assert_int_equal(n4_ranges_add(&rs, 50, UINT64_MAX), 0);
	assert_string_equal(show(&rs), "5-10 30-40 50-0");
	assert_int_equal(n4_ranges_sub(&rs, 60, UINT64_MAX), 0);
	assert_string_equal(show(&rs), "5-10 30-40 50-60");
	assert_int_equal(n4_ranges_sub(&rs, 0, UINT64_MAX), 0);
	assert_int_equal(rs.n, 0);
	/* many disjoint ranges (the array grows) */
	for (uint64_t i = 0; i < 100; i++)
		assert_int_equal(n4_ranges_add(&rs, i * 10, i * 10 + 5), 0);
	assert_int_equal(rs.n, 100);
	assert_int_equal(n4_ranges_add(&rs, 0, 1000), 0);
	assert_string_equal(show(&rs), "0-1000");
	n4_ranges_clear(&rs);
	assert_int_equal(rs.n, 0);
	assert_null(rs.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(range_of_nlm),
	    cmocka_unit_test(ranges_merge_and_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
