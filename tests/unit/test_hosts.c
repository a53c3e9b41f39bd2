/* proto/hosts.c: client hosts and their fair share of client_memory_max.
 * One host per address (ports and IPv4-mapped IPv6 do not make another),
 * freed with its last connection; the max-min share rule of issue 35 (a
 * host holding little is let in at the cap while the one holding the most
 * is not); which host gives memory back first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "../../proto/proto_int.h"

#define MiB (1024 * 1024ull)

static struct sockaddr_storage v4(const char *ip, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &in->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *ip, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	in->sin6_family = AF_INET6;
	in->sin6_port = htons((uint16_t)port);
	inet_pton(AF_INET6, ip, &in->sin6_addr);
	return ss;
}

/* Connections from one address are one host, whatever their ports and
 * whether the address came IPv4-mapped; the host goes with its last. */
static void test_one_host_per_address(void **state)
{
	struct proto_hosts t = {0};
	struct sockaddr_storage a1 = v4("127.0.0.2", 700), a2 = v4("127.0.0.2", 40000),
	                        a3 = v6("::ffff:127.0.0.2", 41000), b = v4("127.0.0.1", 700),
	                        c = v6("::1", 700);
	struct proto_host *h1, *h2, *h3, *hb, *hc;

	(void)state;
	h1 = proto_host_get(&t, &a1);
	h2 = proto_host_get(&t, &a2);
	h3 = proto_host_get(&t, &a3);
	hb = proto_host_get(&t, &b);
	hc = proto_host_get(&t, &c);
	assert_non_null(h1);
	assert_ptr_equal(h1, h2);
	assert_ptr_equal(h1, h3);
	assert_ptr_not_equal(h1, hb);
	assert_ptr_not_equal(hb, hc);
	assert_int_equal(h1->nconns, 3);
	assert_int_equal(t.n, 3);
	proto_host_put(&t, h1);
	proto_host_put(&t, h2);
	assert_int_equal(t.n, 3);
	assert_int_equal(h3->nconns, 1);
	proto_host_put(&t, h3);
	assert_int_equal(t.n, 2);
	/* a new connection from it makes a new host, holding nothing */
	h1 = proto_host_get(&t, &a1);
	assert_int_equal(h1->held, 0);
	assert_int_equal(t.n, 3);
	proto_host_put(&t, h1);
	proto_host_put(&t, hb);
	proto_host_put(&t, hc);
	assert_int_equal(t.n, 0);
	assert_null(t.list);
}

/* The case: one host holds the whole 16 MiB cap in trickling
 * connections; another host's 1 MiB READ is within its share, the
 * trickler's next record is not. Alone, a host may use the whole cap. */
static void test_share_two_hosts(void **state)
{
	struct proto_hosts t = {0};
	struct sockaddr_storage a = v4("127.0.0.2", 1000), b = v4("127.0.0.1", 1000);
	struct proto_host *ha = proto_host_get(&t, &a), *hb;

	(void)state;
	ha->held = 15 * MiB;
	assert_true(proto_host_fair(&t, ha, 1 * MiB, 16 * MiB));  /* alone: the whole cap */
	assert_false(proto_host_fair(&t, ha, 2 * MiB, 16 * MiB)); /* not beyond it */
	hb = proto_host_get(&t, &b);
	ha->held = 17 * MiB;
	assert_true(proto_host_fair(&t, hb, 1 * MiB + 8192, 16 * MiB));
	assert_false(proto_host_fair(&t, ha, 4096, 16 * MiB));
	/* up to half each while both want more */
	hb->held = 7 * MiB;
	assert_true(proto_host_fair(&t, hb, 1 * MiB, 16 * MiB));
	assert_false(proto_host_fair(&t, hb, 1 * MiB + 1, 16 * MiB));
	/* the trickler, cut down to 6, may take what is free: up to 9 */
	ha->held = 6 * MiB;
	assert_true(proto_host_fair(&t, ha, 3 * MiB, 16 * MiB));
	assert_false(proto_host_fair(&t, ha, 3 * MiB + 1, 16 * MiB));
	ha->held = hb->held = 0;
	proto_host_put(&t, ha);
	proto_host_put(&t, hb);
}

/* Three hosts: what the small ones hold is theirs, the rest is shared
 * evenly by those that want more (water level). */
static void test_share_levels(void **state)
{
	struct proto_hosts t = {0};
	struct sockaddr_storage a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1), c = v4("10.0.0.3", 1);
	struct proto_host *ha = proto_host_get(&t, &a), *hb = proto_host_get(&t, &b),
	                  *hc = proto_host_get(&t, &c);

	(void)state;
	ha->held = 10 * MiB;
	hb->held = 2 * MiB;
	/* c: 2 (b) + 7 + 7 = 16 */
	assert_true(proto_host_fair(&t, hc, 7 * MiB, 16 * MiB));
	assert_false(proto_host_fair(&t, hc, 7 * MiB + 1, 16 * MiB));
	/* a is above that level already: no more for it */
	hc->held = 4 * MiB;
	assert_false(proto_host_fair(&t, ha, 1, 16 * MiB));
	/* b may come up to c's 4 MiB and beyond, to (16 - 4) / 2 */
	assert_true(proto_host_fair(&t, hb, 4 * MiB, 16 * MiB));
	assert_false(proto_host_fair(&t, hb, 4 * MiB + 1, 16 * MiB));
	/* a need larger than the cap is nobody's share */
	ha->held = hb->held = hc->held = 0;
	assert_false(proto_host_fair(&t, hc, 17 * MiB, 16 * MiB));
	proto_host_put(&t, ha);
	proto_host_put(&t, hb);
	proto_host_put(&t, hc);
}

/* Memory is taken back from the host holding the most first, among those
 * above the level and with records coming in; a pass skips the hosts it
 * found nothing to close on. */
static void test_biggest(void **state)
{
	struct proto_hosts t = {0};
	struct sockaddr_storage a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1), c = v4("10.0.0.3", 1);
	struct proto_host *ha = proto_host_get(&t, &a), *hb = proto_host_get(&t, &b),
	                  *hc = proto_host_get(&t, &c);

	(void)state;
	ha->held = 9 * MiB; /* all of it replies and calls in flight */
	hb->held = 6 * MiB;
	hb->held_in = 5 * MiB;
	hc->held = 7 * MiB;
	hc->held_in = 1 * MiB;
	assert_ptr_equal(proto_host_biggest(&t, 1 * MiB, 1), hc);
	hc->reclaim_pass = 1;
	assert_ptr_equal(proto_host_biggest(&t, 1 * MiB, 1), hb);
	assert_ptr_equal(proto_host_biggest(&t, 1 * MiB, 2), hc); /* a new pass */
	assert_null(proto_host_biggest(&t, 7 * MiB, 2));          /* none above 7 MiB gives back */
	ha->held = hb->held = hc->held = hb->held_in = hc->held_in = 0;
	proto_host_put(&t, ha);
	proto_host_put(&t, hb);
	proto_host_put(&t, hc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_host_per_address),
	    cmocka_unit_test(test_share_two_hosts),
	    cmocka_unit_test(test_share_levels),
	    cmocka_unit_test(test_biggest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
