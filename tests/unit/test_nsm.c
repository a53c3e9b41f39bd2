/* cachefsd/locks/nsm.c: the persisted state number (odd while up, raised
 * at every start, a damaged file refused by name), the remembered client
 * hosts (one file each, idempotent, bounded, names that are not file
 * names refused, survive a restart, damaged files ignored), and what an
 * SM_NOTIFY does: a client host's calls the reboot callback and forgets
 * it; the filer's (its host name) keeps the hosts.
 *
 * A start with remembered hosts sends them SM_NOTIFY (UDP to 127.0.0.x):
 * the tests run in a network namespace of their own so that nothing
 * reaches a real rpcbind; without one (not root) those tests are skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "loop.h"
#include "nsm.h"
#include "proto.h"

static int own_netns;

struct fx {
	char dir[64];
	struct cfs_config cfg;
	struct loop *loop;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_nsm.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	config_defaults(&f->cfg);
	assert_int_equal(config_set(&f->cfg, "cache_dir", f->dir, err, sizeof(err)), 0);
	assert_int_equal(
	    config_set(&f->cfg, "upstream", "nfs://127.0.0.1/export", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "nsm_name", "proxy1", err, sizeof(err)), 0);
	f->loop = loop_new();
	assert_non_null(f->loop);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	nsm_stop();
	loop_free(f->loop);
	config_free(&f->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void put(const struct fx *f, const char *rel, const char *text)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/nsm/%s", f->dir, rel);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static int get(const struct fx *f, const char *rel, char *buf, size_t len)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/nsm/%s", f->dir, rel);
	fp = fopen(path, "r");
	if (fp == NULL)
		return -errno;
	buf[0] = 0;
	if (fgets(buf, (int)len, fp) == NULL)
		buf[0] = 0;
	fclose(fp);
	return 0;
}

static int start(struct fx *f, char *err, size_t errlen)
{
	nsm_stop();
	return nsm_start(f->loop, &f->cfg, err, errlen);
}

static struct sockaddr_in v4(const char *a)
{
	struct sockaddr_in in;

	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons(700);
	assert_int_equal(inet_pton(AF_INET, a, &in.sin_addr), 1);
	return in;
}

/* Odd while up, raised at every start (an even number left by someone
 * else is raised to the next odd one); a damaged or linked file is refused
 * with its name, and nothing is overwritten. */
static void test_state_number(void **state)
{
	struct fx *f = *state;
	char err[512], buf[64];

	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_state(), 1);
	assert_int_equal(get(f, "state", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1\n");
	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_state(), 3);
	nsm_stop();
	put(f, "state", "10\n");
	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_state(), 11);
	nsm_stop();
	put(f, "state", "eleven\n");
	assert_int_equal(start(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/nsm/state"));
	assert_non_null(strstr(err, "not an NSM state number"));
	assert_int_equal(get(f, "state", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "eleven\n"); /* left for the operator to look at */
	{
		char path[256], target[256];

		snprintf(path, sizeof(path), "%s/nsm/state", f->dir);
		snprintf(target, sizeof(target), "%s/elsewhere", f->dir);
		unlink(path);
		put(f, "../elsewhere", "1\n");
		assert_int_equal(symlink(target, path), 0);
		assert_int_not_equal(start(f, err, sizeof(err)), 0);
		assert_non_null(strstr(err, "/nsm/state"));
		assert_int_equal(get(f, "../elsewhere", buf, sizeof(buf)), 0);
		assert_string_equal(buf, "1\n");
	}
}

/* A granted lock's host is remembered once, in its own file, rewritten
 * when its address changes; names that are not file names are refused. */
static void test_monitor(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = v4("10.1.2.3"), b = v4("10.1.2.4");
	struct sockaddr_in6 m;
	char err[512], buf[64];

	assert_int_equal(nsm_monitor("h1", (struct sockaddr *)&a, sizeof(a)), -ENODEV);
	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_monitor("h1", (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(nsm_monitor("h1", (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(nsm_host_count(), 1);
	assert_int_equal(get(f, "sm/h1", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "10.1.2.3\n");
	assert_int_equal(nsm_monitor("h1", (struct sockaddr *)&b, sizeof(b)), 0);
	assert_int_equal(nsm_host_count(), 1);
	assert_int_equal(get(f, "sm/h1", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "10.1.2.4\n");
	/* an IPv4-mapped address (a listener on [::]) is kept as IPv4 */
	memset(&m, 0, sizeof(m));
	m.sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, "::ffff:10.9.9.9", &m.sin6_addr), 1);
	assert_int_equal(nsm_monitor("h2.example.com", (struct sockaddr *)&m, sizeof(m)), 0);
	assert_int_equal(get(f, "sm/h2.example.com", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "10.9.9.9\n");
	static const char *bad[] = {"", ".", "..", "../x", "a/b", ".hidden", "sp ace", "new\nline"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(nsm_monitor(bad[i], (struct sockaddr *)&a, sizeof(a)), -EINVAL);
	char longname[NSM_NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(nsm_monitor(longname, (struct sockaddr *)&a, sizeof(a)), -EINVAL);
	assert_int_equal(nsm_host_count(), 2);
	assert_int_equal(proto_counters.nsm_hosts, 2);
}

/* The hosts survive a restart; files that are not a host are ignored (and
 * left alone), a link is not followed. */
static void test_hosts_persist(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = v4("127.0.0.1");
	char err[512], buf[64], path[256];

	if (!own_netns)
		skip();
	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_monitor("h1", (struct sockaddr *)&a, sizeof(a)), 0);
	put(f, "sm/garbage", "not an address\n");
	put(f, "sm/bad name", "127.0.0.2\n");
	put(f, "sm/.h3.tmp", "127.0.0.3\n");
	put(f, "sm/v6", "::1\n");
	snprintf(path, sizeof(path), "%s/nsm/sm/linked", f->dir);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_host_count(), 2);
	assert_true(nsm_host_known("h1"));
	assert_true(nsm_host_known("v6"));
	assert_false(nsm_host_known("garbage"));
	assert_false(nsm_host_known("linked"));
	assert_int_equal(get(f, "sm/garbage", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "not an address\n");
}

/* At most NSM_HOSTS_MAX hosts; the one past it is refused and not written. */
static void test_bound(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = v4("10.0.0.1");
	char err[512], name[32], buf[64];

	assert_int_equal(start(f, err, sizeof(err)), 0);
	for (int i = 0; i < NSM_HOSTS_MAX; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		assert_int_equal(nsm_monitor(name, (struct sockaddr *)&a, sizeof(a)), 0);
	}
	assert_int_equal(nsm_monitor("one-more", (struct sockaddr *)&a, sizeof(a)), -ENOSPC);
	assert_int_equal(get(f, "sm/one-more", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(nsm_monitor("h7", (struct sockaddr *)&a, sizeof(a)), 0); /* known */
}

/* An SM_NOTIFY decoded as the wire decodes it (no connection: the reply
 * is dropped). */
static void notify(const char *name, uint32_t st)
{
	uint8_t buf[300];
	size_t n = strlen(name), len = 0;
	struct cfs_req *req;

	buf[len++] = 0, buf[len++] = 0, buf[len++] = 0, buf[len++] = (uint8_t)n;
	memcpy(buf + len, name, n);
	len += n;
	while (len % 4)
		buf[len++] = 0;
	buf[len++] = (uint8_t)(st >> 24), buf[len++] = (uint8_t)(st >> 16);
	buf[len++] = (uint8_t)(st >> 8), buf[len++] = (uint8_t)st;
	req = proto_req_decode(NSM_PROGRAM, NSM_V1, NSM1_NOTIFY, buf, len);
	assert_non_null(req);
	nsm_submit(req);
}

static char rebooted[64];
static uint32_t rebooted_state;
static int reboots;

static void on_reboot(const char *name, uint32_t st, void *arg)
{
	assert_ptr_equal(arg, &reboots);
	snprintf(rebooted, sizeof(rebooted), "%s", name);
	rebooted_state = st;
	reboots++;
}

/* A client host's SM_NOTIFY calls the lock room's callback and forgets
 * the host; without a callback it is still counted and forgotten. The
 * filer's (the upstream's host name) calls nothing and keeps the hosts. */
static void test_notify(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = v4("10.1.2.3");
	char err[512], buf[64];
	uint64_t clients = proto_counters.nsm_notify_clients,
	         filer = proto_counters.nsm_notify_filer;

	nsm_on_reboot(on_reboot, &reboots); /* before the start: kept */
	assert_int_equal(start(f, err, sizeof(err)), 0);
	assert_int_equal(nsm_monitor("h1", (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(nsm_monitor("h2", (struct sockaddr *)&a, sizeof(a)), 0);
	notify("h1", 7);
	assert_int_equal(reboots, 1);
	assert_string_equal(rebooted, "h1");
	assert_int_equal(rebooted_state, 7);
	assert_false(nsm_host_known("h1"));
	assert_int_equal(get(f, "sm/h1", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(proto_counters.nsm_notify_clients, clients + 1);
	/* the filer's: no host is released or forgotten (h2 is told, hence
	 * only in a namespace of our own) */
	if (own_netns) {
		notify("127.0.0.1", 9);
		assert_int_equal(reboots, 1);
		assert_true(nsm_host_known("h2"));
		assert_int_equal(proto_counters.nsm_notify_filer, filer + 1);
	}
	nsm_on_reboot(NULL, NULL);
	notify("h2", 3);
	assert_int_equal(reboots, 1);
	assert_false(nsm_host_known("h2"));
	assert_int_equal(proto_counters.nsm_notify_clients, clients + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_state_number, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_monitor, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hosts_persist, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_notify, setup, teardown),
	};

	own_netns = unshare(CLONE_NEWNET) == 0;
	if (!own_netns)
		printf(
		    "SKIP: test_hosts_persist and the filer's SM_NOTIFY need a network namespace "
		    "of their own (root)\n");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
