/* The fleet's owner choice (cachefsd/upstream/peers.c): rendezvous hashing
 * of (handle, chunk index) over the live nodes. Stable (every node, every
 * order of the list, decides alike), balanced within a tolerance over many
 * keys, and a node leaving moves only its own keys (spread over the
 * others); the peer mark on a credential. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "peers.h"

#define NODES 3
#define KEYS  30000 /* handles x chunks */

static const char *const names[NODES] = {"127.0.0.1:20491", "127.0.0.1:20492", "127.0.0.1:20493"};

/* a handle as a filer makes them: 32 bytes, most of them shared */
static void key_of(uint32_t k, uint8_t fh[32], uint64_t *idx)
{
	memset(fh, 0x5a, 32);
	fh[8] = 1;
	memcpy(fh + 24, &k, sizeof(k));
	*idx = k % 17; /* a few chunks per handle */
	fh[28] = (uint8_t)(k / 17);
}

static int owner(const uint64_t *ids, const int *live, uint32_t k)
{
	uint8_t fh[32];
	uint64_t idx;

	key_of(k, fh, &idx);
	return peers_rendezvous(ids, live, NODES, fh, sizeof(fh), idx);
}

static void ids_of(uint64_t ids[NODES])
{
	for (int i = 0; i < NODES; i++)
		ids[i] = peers_node_id(names[i]);
}

static void test_stable(void **state)
{
	uint64_t ids[NODES], rev[NODES];
	int live[NODES] = {1, 1, 1};

	(void)state;
	ids_of(ids);
	for (int i = 0; i < NODES; i++)
		rev[i] = ids[NODES - 1 - i];
	for (uint32_t k = 0; k < 2000; k++) {
		int a = owner(ids, live, k), b = owner(ids, live, k), c = owner(rev, live, k);

		assert_true(a >= 0 && a < NODES);
		assert_int_equal(a, b);
		/* the list in another order: the same node by name */
		assert_int_equal(a, NODES - 1 - c);
	}
}

static void test_balanced(void **state)
{
	uint64_t ids[NODES];
	int live[NODES] = {1, 1, 1};
	uint32_t count[NODES] = {0};

	(void)state;
	ids_of(ids);
	for (uint32_t k = 0; k < KEYS; k++)
		count[owner(ids, live, k)]++;
	for (int i = 0; i < NODES; i++) {
		/* a third each, within 5 % of it (binomial sd: 0.8 %) */
		assert_true(count[i] > KEYS / NODES * 95 / 100);
		assert_true(count[i] < KEYS / NODES * 105 / 100);
	}
}

static void test_leave(void **state)
{
	uint64_t ids[NODES];
	int all[NODES] = {1, 1, 1}, two[NODES] = {1, 0, 1}, none[NODES] = {0, 0, 0};
	uint32_t moved_to[NODES] = {0}, gone = 0;

	(void)state;
	ids_of(ids);
	for (uint32_t k = 0; k < KEYS; k++) {
		int before = owner(ids, all, k), after = owner(ids, two, k);

		assert_int_not_equal(after, 1);
		if (before != 1) {
			assert_int_equal(before, after); /* only the dead node's keys move */
		} else {
			gone++;
			moved_to[after]++;
		}
		assert_int_equal(owner(ids, none, k), -1);
	}
	/* its keys spread over the others, half each within 10 % */
	assert_true(moved_to[0] > gone / 2 * 90 / 100 && moved_to[2] > gone / 2 * 90 / 100);
	/* back: every key to its first owner again */
	for (uint32_t k = 0; k < 2000; k++)
		assert_int_equal(owner(ids, all, k), owner(ids, all, k));
}

static void test_mark(void **state)
{
	struct cfs_cred c = {.flavor = AUTH_UNIX, .uid = 1000, .gid = 1000};

	(void)state;
	snprintf(c.machine, sizeof(c.machine), "client7");
	assert_false(peers_cred_from_peer(&c));
	peers_mark_cred(&c, 0);
	assert_true(peers_cred_from_peer(&c));
	assert_false(peers_cred_is_probe(&c));
	assert_string_equal(c.machine, PEERS_MARK "client7");
	/* a probe is from a peer too (never chained), and answered from the
	 * cache only; an owner's probe for a peer's READ carries both marks */
	peers_mark_cred(&c, 1);
	assert_true(peers_cred_from_peer(&c));
	assert_true(peers_cred_is_probe(&c));
	assert_string_equal(c.machine, PEERS_PROBE_MARK PEERS_MARK "client7");
	c.flavor = AUTH_NONE;
	assert_false(peers_cred_from_peer(&c)); /* only AUTH_SYS carries the mark */
	/* a machine name at its longest stays a valid one, marked */
	c.flavor = AUTH_UNIX;
	memset(c.machine, 'm', CFS_MAX_MACHINE);
	c.machine[CFS_MAX_MACHINE] = 0;
	peers_mark_cred(&c, 0);
	assert_true(peers_cred_from_peer(&c));
	assert_int_equal(strlen(c.machine), CFS_MAX_MACHINE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stable),
	    cmocka_unit_test(test_balanced),
	    cmocka_unit_test(test_leave),
	    cmocka_unit_test(test_mark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
