/* Splitting a chunk fill into READs the server accepts (cachefsd/engine/fillplan.c):
 * READ sizes from rtmax, the window, short answers asked again, EOF and
 * files that grow or shrink under the fill, servers that answer nonsense.
 * A simulated server answers the planned READs; every byte of the chunk
 * must come in, none twice past what was asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fillplan.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

struct sim {
	uint32_t server_max; /* most bytes the server returns per READ */
	uint64_t left;       /* file bytes from the chunk's start */
	int reverse;         /* answer the newest READ first */
	uint8_t *got;        /* per chunk byte: times it came in */
	uint32_t reads, max_inflight;
};

/* Answers READs until the plan is done; returns fill_plan_reply()'s first
 * error, or 0. */
static int run(struct fill_plan *p, struct sim *s)
{
	uint32_t slots[FILL_WINDOW];
	struct fill_range rs[FILL_WINDOW];

	for (;;) {
		uint32_t n = 0, slot;
		struct fill_range r;

		while (fill_plan_next(p, &slot, &r)) {
			assert_true(r.len > 0 && r.len <= p->chunk);
			assert_true(r.off + r.len <= p->chunk);
			slots[n] = slot;
			rs[n++] = r;
		}
		if (p->nout > s->max_inflight)
			s->max_inflight = p->nout;
		if (n == 0) {
			assert_int_equal(p->nout, 0);
			return 0;
		}
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = s->reverse ? n - 1 - k : k;
			uint64_t avail = rs[i].off < s->left ? s->left - rs[i].off : 0;
			uint32_t g = rs[i].len < s->server_max ? rs[i].len : s->server_max;
			int rc;

			if (g > avail)
				g = (uint32_t)avail;
			for (uint32_t b = 0; b < g; b++)
				s->got[rs[i].off + b]++;
			s->reads++;
			rc = fill_plan_reply(p, slots[i], g, rs[i].off + g >= s->left);
			if (rc)
				return rc;
			fill_plan_size(p, s->left);
		}
	}
}

static void check_all_in(const struct fill_plan *p, const struct sim *s, uint32_t want_end)
{
	assert_true(fill_plan_done(p));
	assert_int_equal(fill_plan_end(p), want_end);
	for (uint32_t b = 0; b < want_end; b++)
		if (s->got[b] != 1)
			fail_msg("byte %u came in %u times", b, s->got[b]);
	assert_true(fill_plan_covered(p, 0, p->chunk));
}

static struct sim *sim_new(uint32_t chunk, uint32_t server_max, uint64_t left)
{
	struct sim *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->got = calloc(chunk, 1);
	assert_non_null(s->got);
	s->server_max = server_max;
	s->left = left;
	return s;
}

static void sim_free(struct sim *s)
{
	free(s->got);
	free(s);
}

static void test_read_size(void **state)
{
	(void)state;
	assert_int_equal(fill_read_size(64 * KiB, MiB), 64 * KiB);
	assert_int_equal(fill_read_size(128 * KiB, MiB), 128 * KiB);
	assert_int_equal(fill_read_size(0, MiB), MiB);       /* not said */
	assert_int_equal(fill_read_size(4 * MiB, MiB), MiB); /* more than a chunk */
	assert_int_equal(fill_read_size(MiB, MiB), MiB);
	assert_int_equal(fill_read_size(60 * KiB + 100, MiB), 60 * KiB); /* 4 KiB multiple */
	assert_int_equal(fill_read_size(4 * KiB, MiB), 4 * KiB);
	assert_int_equal(fill_read_size(1000, MiB), 1000);
	assert_int_equal(fill_read_size(32 * KiB, 64 * KiB), 32 * KiB);
	assert_int_equal(fill_reads_per_chunk(64 * KiB, MiB), 16);
	assert_int_equal(fill_reads_per_chunk(4 * KiB, MiB), 256);
	assert_int_equal(fill_reads_per_chunk(60 * KiB, MiB), 18);
	assert_int_equal(fill_reads_per_chunk(MiB, MiB), 1);
}

/* rtmax 64 KiB, a 1 MiB chunk in a big file: 16 READs at once. */
static void test_full_chunk(void **state)
{
	struct fill_plan p;
	struct sim *s = sim_new(MiB, 64 * KiB, 24ull * MiB);

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 24ull * MiB);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, MiB);
	assert_int_equal(s->reads, 16);
	assert_int_equal(s->max_inflight, 16);
	assert_int_equal(p.short_reads, 0);
	sim_free(s);
}

/* 4 KiB READs: 256 of them, never more than the window in flight. */
static void test_window(void **state)
{
	struct fill_plan p;
	struct sim *s = sim_new(MiB, 4 * KiB, 24ull * MiB);

	(void)state;
	s->reverse = 1;
	fill_plan_init(&p, MiB, 4 * KiB, FILL_WINDOW, 24ull * MiB);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, MiB);
	assert_int_equal(s->reads, 256);
	assert_int_equal(s->max_inflight, FILL_WINDOW);
	sim_free(s);
}

/* The last chunk of a file: READs only up to its end. */
static void test_last_chunk(void **state)
{
	struct fill_plan p;
	struct sim *s = sim_new(MiB, 64 * KiB, 300000);

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 300000);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, 300000);
	assert_int_equal(s->reads, 5); /* 4 x 64 KiB + 37856 */
	sim_free(s);
}

/* A server that returns 16 KiB whatever it said in FSINFO: the rest of
 * each short answer is asked again, the plan learns the real size. */
static void test_short_answers(void **state)
{
	struct fill_plan p;
	struct sim *s = sim_new(MiB, 16 * KiB, 5ull * MiB);

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 5ull * MiB);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, MiB);
	assert_int_equal(p.piece, 16 * KiB);
	assert_true(p.short_reads >= 16);
	assert_int_equal(s->reads, 64); /* 1 MiB / 16 KiB: nothing asked twice */
	sim_free(s);

	/* one READ of the whole chunk answered with 64 KiB: the other 15
	 * are asked together, not one after the other */
	s = sim_new(MiB, 64 * KiB, 5ull * MiB);
	fill_plan_init(&p, MiB, MiB, FILL_WINDOW, 5ull * MiB);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, MiB);
	assert_int_equal(s->reads, 16);
	assert_int_equal(s->max_inflight, 15);
	sim_free(s);

	/* odd short sizes, answered newest first */
	s = sim_new(MiB, 20000, 3ull * MiB);
	s->reverse = 1;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 3ull * MiB);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, MiB);
	assert_int_equal(p.piece, 16 * KiB); /* 20000 rounded down to 4 KiB */
	sim_free(s);
}

/* The file shrank since its size was known: EOF ends the chunk early. */
static void test_eof_early(void **state)
{
	struct fill_plan p;
	struct sim *s = sim_new(MiB, 64 * KiB, 100 * KiB);

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 5ull * MiB);
	/* answered without attributes: only EOF says where the file ends */
	uint32_t slot[FILL_WINDOW], n = 0;
	struct fill_range r[FILL_WINDOW];
	while (fill_plan_next(&p, &slot[n], &r[n]))
		n++;
	assert_int_equal(n, 16);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t g = r[i].off >= 100 * KiB             ? 0
		             : r[i].off + r[i].len > 100 * KiB ? 100 * KiB - r[i].off
		                                               : r[i].len;
		assert_int_equal(fill_plan_reply(&p, slot[i], g, r[i].off + g >= 100 * KiB), 0);
	}
	assert_true(fill_plan_done(&p));
	assert_int_equal(fill_plan_end(&p), 100 * KiB);
	assert_true(fill_plan_covered(&p, 0, MiB));
	sim_free(s);
}

/* Size not known: one READ first, then the rest once the size is known. */
static void test_unknown_size(void **state)
{
	struct fill_plan p;
	uint32_t slot;
	struct fill_range r;
	struct sim *s = sim_new(MiB, 64 * KiB, 2ull * MiB + 5);

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, FILL_SIZE_UNKNOWN);
	assert_int_equal(fill_plan_next(&p, &slot, &r), 1);
	assert_int_equal(r.off, 0);
	assert_int_equal(fill_plan_next(&p, &slot, &r), 0); /* nothing more yet */
	fill_plan_cancel(&p, slot);
	sim_free(s);

	s = sim_new(MiB, 64 * KiB, 2ull * MiB + 5);
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, FILL_SIZE_UNKNOWN);
	assert_int_equal(run(&p, s), 0); /* run() tells the size after each answer */
	check_all_in(&p, s, MiB);
	assert_int_equal(s->reads, 16);
	sim_free(s);

	/* a small file: the first READ is the only one */
	s = sim_new(MiB, 64 * KiB, 1000);
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, FILL_SIZE_UNKNOWN);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, 1000);
	assert_int_equal(s->reads, 1);
	sim_free(s);

	/* a known size of 0 is asked once too: the server has the last word */
	s = sim_new(MiB, 64 * KiB, 0);
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 0);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, 0);
	assert_int_equal(s->reads, 1);
	sim_free(s);
}

/* The file grew since its size was known: the plan follows the answers. */
static void test_growth(void **state)
{
	struct fill_plan p;
	struct sim *s = sim_new(MiB, 64 * KiB, 3ull * MiB);

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 512 * KiB);
	assert_int_equal(run(&p, s), 0);
	check_all_in(&p, s, MiB);
	assert_int_equal(s->reads, 16);
	sim_free(s);
}

/* While a fill runs: a client's range is there once every READ under it
 * has come in. */
static void test_covered(void **state)
{
	struct fill_plan p;
	uint32_t slot[FILL_WINDOW], n = 0;
	struct fill_range r[FILL_WINDOW];

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 5ull * MiB);
	while (fill_plan_next(&p, &slot[n], &r[n]))
		n++;
	assert_int_equal(n, 16);
	assert_false(fill_plan_covered(&p, 0, 64 * KiB));
	assert_int_equal(fill_plan_reply(&p, slot[1], 64 * KiB, 0), 0);
	assert_true(fill_plan_covered(&p, 64 * KiB, 128 * KiB));
	assert_true(fill_plan_covered(&p, 70000, 80000));
	assert_false(fill_plan_covered(&p, 64 * KiB - 1, 128 * KiB));
	assert_false(fill_plan_covered(&p, 64 * KiB, 128 * KiB + 1));
	/* a short answer leaves its rest out */
	assert_int_equal(fill_plan_reply(&p, slot[0], 32 * KiB, 0), 0);
	assert_true(fill_plan_covered(&p, 0, 32 * KiB));
	assert_false(fill_plan_covered(&p, 0, 32 * KiB + 1));
	assert_false(fill_plan_done(&p));
	for (uint32_t i = 2; i < n; i++)
		fill_plan_cancel(&p, slot[i]);
}

/* Answers that cannot be used give the fill up instead of looping. */
static void test_bad_answers(void **state)
{
	struct fill_plan p;
	uint32_t slot;
	struct fill_range r;
	struct sim *s;

	(void)state;
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 5ull * MiB);
	assert_int_equal(fill_plan_next(&p, &slot, &r), 1);
	assert_int_equal(fill_plan_reply(&p, slot, 64 * KiB + 1, 0), -EPROTO); /* more than asked */
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 5ull * MiB);
	assert_int_equal(fill_plan_next(&p, &slot, &r), 1);
	assert_int_equal(fill_plan_reply(&p, slot, 0, 0), -EPROTO); /* nothing, not at EOF */
	assert_int_equal(fill_plan_reply(&p, slot, 0, 0), -EINVAL); /* not out */

	/* a server that dribbles 100 bytes per READ */
	s = sim_new(MiB, 100, 5ull * MiB);
	fill_plan_init(&p, MiB, 64 * KiB, FILL_WINDOW, 5ull * MiB);
	assert_int_equal(run(&p, s), -EPROTO);
	assert_true(s->reads <= p.max_reads + FILL_WINDOW);
	sim_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_size),     cmocka_unit_test(test_full_chunk),
	    cmocka_unit_test(test_window),        cmocka_unit_test(test_last_chunk),
	    cmocka_unit_test(test_short_answers), cmocka_unit_test(test_eof_early),
	    cmocka_unit_test(test_unknown_size),  cmocka_unit_test(test_growth),
	    cmocka_unit_test(test_covered),       cmocka_unit_test(test_bad_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
