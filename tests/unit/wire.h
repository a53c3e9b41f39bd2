/* For unit tests of replies as a client sees them: one NFSv3 GETATTR call
 * goes in through a proto connection (proto_test_exchange), the submit
 * function answers it, and the reply record's words come back. */
#ifndef CFS_TEST_WIRE_H
#define CFS_TEST_WIRE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "config.h"
#include "loop.h"
#include "proto.h"

#define WIRE_XID 0x1234u

static inline uint32_t wire_word(const uint8_t *p, size_t i)
{
	p += 4 * i;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Sends the call, lets submit answer it; w gets the reply's words after
 * the record mark (xid first). Returns their number. */
static inline size_t wire_getattr_reply(proto_submit_fn submit, uint32_t *w, size_t max)
{
	static const uint8_t call[] = {
	    0x80, 0, 0,    48,               /* record mark: last fragment, 48 bytes */
	    0,    0, 0x12, 0x34,             /* xid */
	    0,    0, 0,    0,                /* CALL */
	    0,    0, 0,    2,                /* RPC version 2 */
	    0,    1, 0x86, 0xa3,             /* NFS */
	    0,    0, 0,    3,                /* version 3 */
	    0,    0, 0,    1,                /* GETATTR */
	    0,    0, 0,    0,    0, 0, 0, 0, /* AUTH_NONE credential */
	    0,    0, 0,    0,    0, 0, 0, 0, /* AUTH_NONE verifier */
	    0,    0, 0,    4,    1, 2, 3, 4, /* a 4-byte handle */
	};
	struct cfs_config cfg;
	struct loop *l = loop_new();
	uint8_t out[256];
	size_t n = 0;

	assert_non_null(l);
	config_defaults(&cfg);
	assert_int_equal(
	    proto_test_exchange(l, &cfg, submit, NULL, call, sizeof(call), out, sizeof(out), &n),
	    0);
	config_free(&cfg);
	loop_free(l);
	assert_true(n >= 12 && n % 4 == 0);
	/* one record, exactly as long as its mark says */
	assert_int_equal(wire_word(out, 0), 0x80000000u | (uint32_t)(n - 4));
	assert_true(n / 4 - 1 <= max);
	for (size_t i = 1; i < n / 4; i++)
		w[i - 1] = wire_word(out, i);
	assert_int_equal(w[0], WIRE_XID);
	assert_int_equal(w[1], 1); /* REPLY */
	return n / 4 - 1;
}

#endif
