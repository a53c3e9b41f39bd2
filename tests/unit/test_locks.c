/* cachefsd/locks/locks.c: the blocked-lock table, the only lock state the
 * proxy keeps. An entry is one owner's wait for one range of one file:
 * owners (caller_name, owner handle, svid) and ranges never merge, the
 * same LOCK asked again refreshes its entry instead of adding one, CANCEL
 * drops exactly its entry, idle entries expire, and the table is bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "locks.h"

static const uint8_t fh1[8] = "file-one", fh2[8] = "file-two";

static struct blk_key key(const uint8_t *fh, const char *caller, const char *oh, uint32_t svid,
                          uint64_t off)
{
	struct blk_key k = {fh, 8, caller, oh, svid, off, 10, 1};
	return k;
}

static void test_owners_apart(void **state)
{
	struct locks *lk = locks_table_new();
	struct blk_key a = key(fh1, "host-a", "oh-1", 1, 0);
	struct blk_key b = key(fh1, "host-b", "oh-1", 1, 0);  /* another host */
	struct blk_key c = key(fh1, "host-a", "oh-2", 1, 0);  /* another owner */
	struct blk_key d = key(fh1, "host-a", "oh-1", 2, 0);  /* another process */
	struct blk_key e = key(fh1, "host-a", "oh-1", 1, 50); /* another range */
	struct blk_key f = key(fh2, "host-a", "oh-1", 1, 0);  /* another file */
	(void)state;
	assert_non_null(lk);
	assert_int_equal(locks_table_add(lk, &a, 1000), 0);
	assert_true(locks_table_has(lk, &a));
	assert_false(locks_table_has(lk, &b));
	assert_false(locks_table_has(lk, &c));
	assert_false(locks_table_has(lk, &d));
	assert_false(locks_table_has(lk, &e));
	assert_false(locks_table_has(lk, &f));
	/* asked again (a client re-sends a blocked LOCK): one entry */
	assert_int_equal(locks_table_add(lk, &a, 2000), 0);
	assert_int_equal(locks_blocked_count(lk), 1);
	assert_int_equal(locks_table_add(lk, &b, 2000), 0);
	assert_int_equal(locks_blocked_count(lk), 2);
	/* CANCEL drops its own entry only */
	assert_int_equal(locks_table_drop(lk, &c), 0);
	assert_int_equal(locks_table_drop(lk, &a), 1);
	assert_false(locks_table_has(lk, &a));
	assert_true(locks_table_has(lk, &b));
	locks_free(lk);
}

static void test_expiry_and_bound(void **state)
{
	struct locks *lk = locks_table_new();
	struct blk_key a = key(fh1, "host-a", "oh", 1, 0), b = key(fh1, "host-b", "oh", 1, 0);
	char name[32];
	(void)state;
	locks_table_add(lk, &a, 0);
	locks_table_add(lk, &b, 0);
	/* a is asked again, b is not: b expires BLK_IDLE_MS after its last */
	locks_table_add(lk, &a, BLK_IDLE_MS);
	assert_int_equal(locks_table_expire(lk, BLK_IDLE_MS), 0);
	assert_int_equal(locks_table_expire(lk, BLK_IDLE_MS + 1), 1);
	assert_false(locks_table_has(lk, &b));
	assert_true(locks_table_has(lk, &a));
	assert_int_equal(locks_table_expire(lk, 2 * BLK_IDLE_MS + 1), 1);
	assert_int_equal(locks_blocked_count(lk), 0);
	/* at most BLK_MAX: the oldest goes */
	for (int i = 0; i < BLK_MAX + 10; i++) {
		snprintf(name, sizeof(name), "host-%d", i);
		struct blk_key k = key(fh1, name, "oh", 1, 0);
		assert_int_equal(locks_table_add(lk, &k, (uint64_t)i), 0);
	}
	assert_int_equal(locks_blocked_count(lk), BLK_MAX);
	struct blk_key first = key(fh1, "host-0", "oh", 1, 0);
	struct blk_key last = key(fh1, name, "oh", 1, 0);
	assert_false(locks_table_has(lk, &first));
	assert_true(locks_table_has(lk, &last));
	locks_free(lk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_owners_apart),
	    cmocka_unit_test(test_expiry_and_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
