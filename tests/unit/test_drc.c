/* proto/drc.c: the duplicate-request cache. Replays, in-progress
 * duplicates, expiry by age and by count (finished entries only, oldest
 * first), and entries of calls still running when it is cleared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "../../proto/proto_int.h"

static struct sockaddr_storage peer(uint32_t ip)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(ip);
	return ss;
}

static const uint8_t ARGS[] = "create dir/a";

static enum drc_state begin(const struct sockaddr_storage *p, uint32_t xid, uint64_t now,
			    struct drc_entry **e)
{
	return drc_begin(p, xid, NFS_PROGRAM, NFS3_CREATE, ARGS, sizeof(ARGS), now, e);
}

/* A finished call's retransmission gets the kept reply; one arriving while
 * it runs is busy; a different xid, argument, procedure or client is new. */
static void test_replay_busy_new(void **state)
{
	struct sockaddr_storage a = peer(0x7f000001), b = peer(0x0a000002);
	struct drc_entry *e, *e2;
	uint32_t len;

	(void)state;
	assert_int_equal(begin(&a, 7, 1000, &e), DRC_NEW);
	assert_int_equal(begin(&a, 7, 1001, &e2), DRC_BUSY);
	assert_ptr_equal(e, e2);
	drc_done(e, "reply", 5, 1002);
	assert_int_equal(begin(&a, 7, 1003, &e2), DRC_REPLAY);
	assert_memory_equal(drc_reply(e2, &len), "reply", 5);
	assert_int_equal(len, 5);

	assert_int_equal(begin(&a, 8, 1004, &e2), DRC_NEW); /* new xid */
	drc_abort(e2);
	assert_int_equal(begin(&b, 7, 1004, &e2), DRC_NEW); /* other client */
	drc_abort(e2);
	assert_int_equal(drc_begin(&a, 7, NFS_PROGRAM, NFS3_CREATE, (const uint8_t *)"other", 5,
				   1004, &e2),
			 DRC_NEW); /* same xid, other arguments */
	drc_abort(e2);
	assert_int_equal(drc_begin(&a, 7, NFS_PROGRAM, NFS3_REMOVE, ARGS, sizeof(ARGS), 1004, &e2),
			 DRC_NEW);
	drc_abort(e2);
	/* an aborted call leaves nothing: its retransmission runs again */
	assert_int_equal(begin(&a, 8, 1005, &e2), DRC_NEW);
	drc_abort(e2);
	drc_clear();
}

/* Finished replies are forgotten after DRC_LIFE_MS. */
static void test_expiry_by_age(void **state)
{
	struct sockaddr_storage a = peer(0x7f000001);
	struct drc_entry *e;

	(void)state;
	assert_int_equal(begin(&a, 1, 0, &e), DRC_NEW);
	drc_done(e, "x", 1, 10);
	assert_int_equal(begin(&a, 1, 10 + DRC_LIFE_MS - 1, &e), DRC_REPLAY);
	assert_int_equal(begin(&a, 2, 10 + DRC_LIFE_MS, &e), DRC_NEW); /* expires xid 1 */
	drc_done(e, "y", 1, 10 + DRC_LIFE_MS);
	assert_int_equal(begin(&a, 1, 10 + DRC_LIFE_MS, &e), DRC_NEW);
	drc_abort(e);
	drc_clear();
}

/* Past DRC_MAX the oldest finished replies go first; a call still in
 * progress is never forgotten, however old and however many finish. */
static void test_expiry_by_count(void **state)
{
	struct sockaddr_storage a = peer(0x7f000001);
	struct drc_entry *running, *e;
	const uint32_t extra = 100;

	(void)state;
	assert_int_equal(begin(&a, 999999, 0, &running), DRC_NEW);
	for (uint32_t x = 0; x < DRC_MAX + extra; x++) {
		assert_int_equal(begin(&a, x, 1, &e), DRC_NEW);
		drc_done(e, &x, sizeof(x), 1);
	}
	/* the cap counts the running call too: the oldest finished ones are gone */
	for (uint32_t x = 0; x <= extra; x++) {
		assert_int_equal(begin(&a, x, 1, &e), DRC_NEW);
		drc_abort(e);
	}
	for (uint32_t x = extra + 1; x < DRC_MAX + extra; x++) {
		uint32_t len;
		assert_int_equal(begin(&a, x, 1, &e), DRC_REPLAY);
		assert_memory_equal(drc_reply(e, &len), &x, sizeof(x));
	}
	assert_int_equal(begin(&a, 999999, 2 * DRC_LIFE_MS, &e), DRC_BUSY);
	assert_ptr_equal(e, running);
	drc_done(running, "r", 1, 2 * DRC_LIFE_MS);
	assert_int_equal(begin(&a, 999999, 2 * DRC_LIFE_MS, &e), DRC_REPLAY);
	drc_clear();
}

/* drc_clear (server shutdown) with calls still running: their entries stay
 * valid until the calls finish or are dropped, and are freed then (the
 * ASan run of this test checks for use after free and leaks). */
static void test_clear_with_calls_running(void **state)
{
	struct sockaddr_storage a = peer(0x7f000001);
	struct drc_entry *r1, *r2, *e;

	(void)state;
	assert_int_equal(begin(&a, 1, 0, &r1), DRC_NEW);
	assert_int_equal(begin(&a, 2, 0, &r2), DRC_NEW);
	assert_int_equal(begin(&a, 3, 0, &e), DRC_NEW);
	drc_done(e, "z", 1, 0);
	drc_clear();
	assert_int_equal(begin(&a, 3, 0, &e), DRC_NEW); /* finished ones forgotten */
	drc_abort(e);
	assert_int_equal(begin(&a, 1, 0, &e), DRC_NEW); /* running ones unhashed */
	drc_abort(e);
	drc_done(r1, "late", 4, 1);
	drc_abort(r2);
	assert_int_equal(begin(&a, 1, 1, &e), DRC_NEW); /* the late reply was not kept */
	drc_abort(e);
	drc_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_busy_new),
		cmocka_unit_test(test_expiry_by_age),
		cmocka_unit_test(test_expiry_by_count),
		cmocka_unit_test(test_clear_with_calls_running),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
