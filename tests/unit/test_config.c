/* Config parsing: defaults, flags, files, and every error naming file,
 * line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static char tmpfile_path[64];

static const char *write_conf(const char *text)
{
	strcpy(tmpfile_path, "/tmp/cfs-test-conf.XXXXXX");
	int fd = mkstemp(tmpfile_path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return tmpfile_path;
}

static int parse(struct cfs_config *c, char *err, int argc, char **argv)
{
	enum config_action act;

	config_defaults(c);
	return config_parse_args(c, argc, argv, &act, err, 512);
}

static void test_defaults_and_flags(void **state)
{
	struct cfs_config c;
	char err[512] = "";
	char *argv[] = {"cachefsd", "--upstream", "nfs://h/e", "--cache-dir=/tmp/x",
			"--upstream-connections", "8", "--foreground", "--log-level", "debug"};

	(void)state;
	assert_int_equal(parse(&c, err, 9, argv), 0);
	assert_string_equal(c.upstream, "nfs://h/e");
	assert_string_equal(c.cache_dir, "/tmp/x");
	assert_string_equal(c.listen, "0.0.0.0:2049");
	assert_int_equal(c.upstream_connections, 8);
	assert_int_equal(c.foreground, 1);
	assert_int_equal(c.log_level, 3);
	assert_int_equal(c.soft, 0);
	assert_int_equal(c.busy_poll, 200);
	/* the filer's own default: a user on a client host cannot claim a uid */
	assert_int_equal(c.secure_ports, 1);
	assert_int_equal(c.client_idle_timeout, 360);
	assert_int_equal(c.client_memory_max, 256u << 20);
	config_free(&c);
}

static void test_required_keys(void **state)
{
	struct cfs_config c;
	char err[512] = "";
	char *argv[] = {"cachefsd", "--cache-dir", "/tmp/x"};

	(void)state;
	assert_int_not_equal(parse(&c, err, 3, argv), 0);
	assert_non_null(strstr(err, "upstream"));
	config_free(&c);
}

static void test_bad_flag_values(void **state)
{
	struct cfs_config c;
	char err[512];
	char *a1[] = {"cachefsd", "--upstream-connections", "0"};
	char *a2[] = {"cachefsd", "--no-such-flag", "1"};
	char *a3[] = {"cachefsd", "--foreground=perhaps"};
	char *a4[] = {"cachefsd", "--listen"};
	char *a5[] = {"cachefsd", "--allow", "10.0.0.0/33"};

	(void)state;
	assert_int_not_equal(parse(&c, err, 3, a1), 0);
	assert_non_null(strstr(err, "--upstream-connections"));
	assert_non_null(strstr(err, "out of range"));
	config_free(&c);
	assert_int_not_equal(parse(&c, err, 3, a2), 0);
	assert_non_null(strstr(err, "unknown flag '--no-such-flag'"));
	config_free(&c);
	assert_int_not_equal(parse(&c, err, 2, a3), 0);
	assert_non_null(strstr(err, "not a boolean"));
	config_free(&c);
	assert_int_not_equal(parse(&c, err, 2, a4), 0);
	assert_non_null(strstr(err, "needs a value"));
	config_free(&c);
	assert_int_not_equal(parse(&c, err, 3, a5), 0);
	assert_non_null(strstr(err, "10.0.0.0/33"));
	config_free(&c);
}

static void test_file_and_override(void **state)
{
	struct cfs_config c;
	char err[512] = "";
	const char *path = write_conf("# cachefsd\n[cachefsd]\nupstream = nfs://a/b  # trailing\n"
				      "cache_dir=/var/cache/x\n\nupstream_connections = 2\n");
	char *argv[] = {"cachefsd", "--config", (char *)path, "--upstream-connections", "6"};

	(void)state;
	assert_int_equal(parse(&c, err, 5, argv), 0);
	assert_string_equal(c.upstream, "nfs://a/b");
	assert_string_equal(c.cache_dir, "/var/cache/x");
	assert_int_equal(c.upstream_connections, 6); /* flag wins */
	config_free(&c);
	unlink(path);
}

/* Each bad file must produce "FILE:LINE: key 'K': ..." */
static void test_file_errors(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{"upstream = nfs://a/b\nbogus_key = 1\n", ":2: key 'bogus_key': unknown key"},
		{"\n\nupstream_connections = lots\n", ":3: key 'upstream_connections': 'lots' is not"},
		{"soft = maybe\n", ":1: key 'soft': 'maybe' is not a boolean"},
		{"log_level = loud\n", ":1: key 'log_level': 'loud' is not one of"},
		{"read_evidence = acl\n",
		 ":1: key 'read_evidence': 'acl' is not one of read|mode|access"},
		{"read_evidence = mod\n", ":1: key 'read_evidence': 'mod' is not one of"},
		{"allow = 10.1.2.3/40\n", ":1: key 'allow':"},
		{"just some words\n", ":1: expected 'key = value'"},
		{"[other]\n", ":1: unknown section [other]"},
		{"cache_dir =\n", ":1: key 'cache_dir': empty value"},
		{"config = /etc/x\n", ":1: key 'config': only valid as a flag"},
		{"chunk_size = 3Q\n", ":1: key 'chunk_size': '3Q' is not a size"},
		{"chunk_size = 2M\n", ":1: key 'chunk_size': 2M is out of range"},
		{"inline_max = -1\n", ":1: key 'inline_max': '-1' is not a size"},
		{"brun = 101\n", ":1: key 'brun': 101 is out of range 0..100"},
		{"upstream_connections = -2\n", ":1: key 'upstream_connections': -2 is out of range"},
		{"io_threads = 4x\n", ":1: key 'io_threads': '4x' is not a whole number"},
		{"busy_poll = 2000000\n", ":1: key 'busy_poll': 2000000 is out of range 0..100000"},
		{"meta_ttl = 99999999999999999999\n", ":1: key 'meta_ttl': '99999999999999999999' is not"},
		{"foreground = 2\n", ":1: key 'foreground': '2' is not a boolean"},
		{"# ok\n = 5\n", ":2: key '': unknown key"},
		{"control_socket =\n", ":1: key 'control_socket': empty value"},
		{"allow = 10.0.0.1, nonsense\n", ":1: key 'allow': 'nonsense' is not an address"},
		{"[cachefsd]\n[cachefsd-extra]\n", ":2: unknown section [cachefsd-extra]"},
		{"chunk_size = 100K\n", ":1: key 'chunk_size': 102400 is not a power of two"},
		{"export_path = relative\n", ":1: key 'export_path': 'relative' must start with /"},
		{"listen = 2049\n", ":1: key 'listen': '2049' is not ADDR:PORT"},
		/* getaddrinfo() takes 99999 and binds another port */
		{"listen = 127.0.0.1:99999\n", ":1: key 'listen': '127.0.0.1:99999' is not ADDR:PORT"},
		{"listen = 127.0.0.1:0\n", ":1: key 'listen': '127.0.0.1:0' is not ADDR:PORT"},
		{"listen = 127.0.0.1:nfs\n", ":1: key 'listen': '127.0.0.1:nfs' is not ADDR:PORT"},
		{"listen = [::1]\n", ":1: key 'listen': '[::1]' is not ADDR:PORT"},
		{"client_memory_max = 1M\n", ":1: key 'client_memory_max': 1M is out of range"},
		{"client_idle_timeout = -1\n", ":1: key 'client_idle_timeout': -1 is out of range"},
		{"upstream = http://h/e\n", ":1: key 'upstream': 'http://h/e' is not an nfs:// URL"},
		{"control_socket = run/ctl\n", ":1: key 'control_socket': 'run/ctl' must be an absolute"},
		{"metrics_listen = 9469\n", ":1: key 'metrics_listen': '9469' is not ADDR:PORT (or off)"},
		{"metrics_listen = 127.0.0.1:http\n", ":1: key 'metrics_listen': '127.0.0.1:http' is not"},
		{"metrics_listen = 127.0.0.1:70000\n", ":1: key 'metrics_listen': '127.0.0.1:70000' is"},
		{"metrics_listen = :9469\n", ":1: key 'metrics_listen': ':9469' is not ADDR:PORT"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfs_config c;
		char err[512] = "", want[600];
		const char *path = write_conf(cases[i].text);

		config_defaults(&c);
		assert_int_not_equal(config_load_file(&c, path, err, sizeof(err)), 0);
		snprintf(want, sizeof(want), "%s%s", path, cases[i].want);
		if (strncmp(err, want, strlen(want)) != 0)
			fail_msg("case %zu: got \"%s\", want prefix \"%s\"", i, err, want);
		config_free(&c);
		unlink(path);
	}
}

/* A directory given as the file is refused by name (fopen() opens it and
 * reading it fails at once: it read as an empty file). */
static void test_config_dir(void **state)
{
	struct cfs_config c;
	char err[512] = "", dir[] = "/tmp/cfs-test-confdir.XXXXXX", want[600];

	(void)state;
	assert_non_null(mkdtemp(dir));
	config_defaults(&c);
	assert_int_equal(config_load_file(&c, dir, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: is a directory, not a configuration file", dir);
	assert_string_equal(err, want);
	config_free(&c);
	rmdir(dir);
}

/* Good listen values: an address, every address, IPv6. */
static void test_listen_ok(void **state)
{
	static const char *const ok[] = {"127.0.0.1:2049", ":2049", "[::1]:2049", "0.0.0.0:65535",
					 "host.example:1"};
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct cfs_config c;
		char err[256] = "";

		config_defaults(&c);
		if (config_set(&c, "listen", ok[i], err, sizeof(err)) != 0)
			fail_msg("listen %s refused: %s", ok[i], err);
		config_free(&c);
	}
}

/* A line longer than the reader's buffer is an error, not two lines. */
static void test_long_line(void **state)
{
	struct cfs_config c;
	char err[512] = "", want[600];
	char *text = malloc(6000);
	const char *path;

	(void)state;
	strcpy(text, "export_path = /");
	memset(text + 15, 'a', 5000);
	strcpy(text + 5015, "\n");
	path = write_conf(text);
	config_defaults(&c);
	assert_int_not_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s:1: line longer than", path);
	assert_non_null(strstr(err, want));
	config_free(&c);
	unlink(path);
	free(text);
}

/* Rules across keys and on the whole configuration (config_validate);
 * they name the keys, not a line. */
static void test_validate_errors(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{"bstop = 8\n", "keys 'bstop' < 'bcull' < 'brun' must hold (8, 7, 10)"},
		{"fcull = 12\n", "keys 'fstop' < 'fcull' < 'frun' must hold (3, 12, 10)"},
		{"chunk_size = 64K\ninline_max = 128K\n", "key 'inline_max': must not exceed"},
		{"", "key 'cache_dir': required"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfs_config c;
		char err[512] = "", text[512];
		const char *path;

		snprintf(text, sizeof(text), "upstream = nfs://h/e\n%s%s",
			 cases[i].text[0] ? "cache_dir = /tmp/x\n" : "", cases[i].text);
		path = write_conf(text);
		char *argv[] = {"cachefsd", "--config", (char *)path};
		if (parse(&c, err, 3, argv) == 0)
			fail_msg("case %zu: accepted", i);
		if (strstr(err, cases[i].want) == NULL)
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, cases[i].want);
		config_free(&c);
		unlink(path);
	}
	/* and good values of the new keys pass */
	{
		struct cfs_config c;
		char err[512] = "";
		char *argv[] = {"cachefsd",	    "--upstream",	 "nfs://h/e",	   "--cache-dir",
				"/tmp/x",	    "--metrics-listen", "[::1]:9469",	   "--control-socket",
				"/run/cfs.sock"};
		assert_int_equal(parse(&c, err, 9, argv), 0);
		assert_string_equal(c.metrics_listen, "[::1]:9469");
		assert_string_equal(c.control_socket, "/run/cfs.sock");
		config_free(&c);
		char *off[] = {"cachefsd", "--upstream", "nfs://h/e", "--cache-dir", "/tmp/x",
			       "--metrics-listen", "off"};
		assert_int_equal(parse(&c, err, 7, off), 0);
		config_free(&c);
	}
}

/* SIGHUP: live keys are applied, the others are named as needing a
 * restart, unchanged keys are not mentioned. */
static void test_apply_live(void **state)
{
	struct cfs_config cur, next;
	char err[512] = "", changed[1024], restart[512];
	char *a1[] = {"cachefsd", "--upstream", "nfs://h/e", "--cache-dir", "/tmp/x",
		      "--stats-file", "/tmp/s"};
	char *a2[] = {"cachefsd",	    "--upstream",      "nfs://h/e",   "--cache-dir",
		      "/tmp/x",		    "--meta-ttl",      "30",	      "--log-level",
		      "debug",		    "--allow",	       "10.0.0.0/8",  "--cache-size",
		      "2G",		    "--bcull",	       "8",	      "--listen",
		      "0.0.0.0:3049",	    "--upstream-connections", "8", "--metrics-listen",
		      "127.0.0.1:9469"};
	struct sockaddr_in in4;
	int n;

	(void)state;
	assert_int_equal(parse(&cur, err, 7, a1), 0);
	assert_int_equal(parse(&next, err, 21, a2), 0);
	n = config_apply_live(&cur, &next, changed, sizeof(changed), restart, sizeof(restart));
	assert_int_equal(n, 6);
	assert_int_equal(cur.meta_ttl, 30);
	assert_int_equal(cur.log_level, 3);
	assert_int_equal(cur.cache_size, 2ULL << 30);
	assert_int_equal(cur.bcull, 8);
	assert_null(cur.stats_file); /* back to its default */
	memset(&in4, 0, sizeof(in4));
	in4.sin_family = AF_INET;
	inet_pton(AF_INET, "10.1.2.3", &in4.sin_addr);
	assert_true(config_allowed(&cur, &in4));
	assert_non_null(strstr(changed, "meta_ttl 0 -> 30"));
	assert_non_null(strstr(changed, "log_level info -> debug"));
	assert_non_null(strstr(changed, "cache_size 0 -> 2147483648"));
	assert_non_null(strstr(changed, "stats_file /tmp/s -> (unset)"));
	assert_null(strstr(changed, "listen"));
	/* not applied, named */
	assert_string_equal(cur.listen, "0.0.0.0:2049");
	assert_int_equal(cur.upstream_connections, 4);
	assert_null(cur.metrics_listen);
	assert_string_equal(restart, "listen, upstream_connections, metrics_listen");
	/* nothing changed: nothing said */
	n = config_apply_live(&cur, &cur, changed, sizeof(changed), restart, sizeof(restart));
	assert_int_equal(n, 0);
	assert_string_equal(changed, "");
	assert_string_equal(restart, "");
	assert_true(config_key_live("fresh_guard"));
	assert_true(config_key_live("busy_poll"));
	/* read at every reconnect attempt */
	assert_true(config_key_live("reconnect_max"));
	assert_false(config_key_live("chunk_size"));
	config_free(&cur);
	config_free(&next);
}

/* A reload reads into a fresh configuration: a bad file is an error naming
 * file, line and key, and what runs is not touched. */
static void test_reload_bad_file(void **state)
{
	struct cfs_config cur, next;
	char err[512] = "", want[600];
	const char *path = write_conf("upstream = nfs://h/e\ncache_dir = /tmp/x\nmeta_ttl = 10\n");
	char *argv[] = {"cachefsd", "--config", (char *)path};
	FILE *f;

	(void)state;
	assert_int_equal(parse(&cur, err, 3, argv), 0);
	assert_int_equal(cur.meta_ttl, 10);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("upstream = nfs://h/e\ncache_dir = /tmp/x\nmeta_ttl = soon\n", f);
	fclose(f);
	assert_int_not_equal(parse(&next, err, 3, argv), 0);
	snprintf(want, sizeof(want), "%s:3: key 'meta_ttl': 'soon' is not a whole number", path);
	assert_string_equal(err, want);
	config_free(&next);
	assert_int_equal(cur.meta_ttl, 10);
	config_free(&cur);
	unlink(path);
}

static void test_missing_file(void **state)
{
	struct cfs_config c;
	char err[512] = "";

	(void)state;
	config_defaults(&c);
	assert_int_not_equal(config_load_file(&c, "/nonexistent/cachefsd.conf", err, sizeof(err)),
			     0);
	assert_non_null(strstr(err, "/nonexistent/cachefsd.conf: cannot open"));
	config_free(&c);
}

static void test_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(config_parse_size("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(config_parse_size("1MiB", &v), 0);
	assert_int_equal(v, 1 << 20);
	assert_int_equal(config_parse_size("3g", &v), 0);
	assert_int_equal(v, 3ULL << 30);
	assert_int_equal(config_parse_size("12", &v), 0);
	assert_int_equal(v, 12);
	assert_int_not_equal(config_parse_size("12Q", &v), 0);
	assert_int_not_equal(config_parse_size("-1", &v), 0);
	assert_int_not_equal(config_parse_size("", &v), 0);
}

/* read_evidence: one of three words, kept as its enum, printed back */
static void test_choice(void **state)
{
	struct cfs_config c;
	char err[512], buf[4096];
	FILE *f;

	(void)state;
	config_defaults(&c);
	assert_int_equal(c.read_evidence, CFS_EVIDENCE_MODE);
	assert_int_equal(config_set(&c, "read_evidence", "read", err, sizeof(err)), 0);
	assert_int_equal(c.read_evidence, CFS_EVIDENCE_READ);
	assert_int_equal(config_set(&c, "read_evidence", "ACCESS", err, sizeof(err)), 0);
	assert_int_equal(c.read_evidence, CFS_EVIDENCE_ACCESS);
	assert_int_not_equal(config_set(&c, "read_evidence", "", err, sizeof(err)), 0);
	assert_int_not_equal(config_set(&c, "read_evidence", "access|mode", err, sizeof(err)), 0);
	assert_int_equal(c.read_evidence, CFS_EVIDENCE_ACCESS);
	f = fmemopen(buf, sizeof(buf), "w");
	config_print(&c, f);
	fclose(f);
	assert_non_null(strstr(buf, "\nread_evidence = access\n"));
	assert_true(config_key_live("read_evidence"));
	config_free(&c);
}

static void test_allow(void **state)
{
	struct cfs_config c;
	char err[512];
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;

	(void)state;
	config_defaults(&c);
	memset(&in4, 0, sizeof(in4));
	in4.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &in4.sin_addr);
	assert_true(config_allowed(&c, &in4));
	inet_pton(AF_INET, "10.9.0.2", &in4.sin_addr);
	assert_false(config_allowed(&c, &in4)); /* default is loopback only */
	assert_int_equal(config_set(&c, "allow", "10.9.0.0/16, 192.168.1.7", err, sizeof(err)), 0);
	assert_true(config_allowed(&c, &in4));
	inet_pton(AF_INET, "10.10.0.2", &in4.sin_addr);
	assert_false(config_allowed(&c, &in4));
	inet_pton(AF_INET, "192.168.1.7", &in4.sin_addr);
	assert_true(config_allowed(&c, &in4));
	/* v4-mapped v6 addresses match v4 entries */
	memset(&in6, 0, sizeof(in6));
	in6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:10.9.3.4", &in6.sin6_addr);
	assert_true(config_allowed(&c, &in6));
	inet_pton(AF_INET6, "::1", &in6.sin6_addr);
	assert_false(config_allowed(&c, &in6));
	config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_flags), cmocka_unit_test(test_required_keys),
		cmocka_unit_test(test_bad_flag_values),	   cmocka_unit_test(test_file_and_override),
		cmocka_unit_test(test_file_errors),	   cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_sizes),		   cmocka_unit_test(test_allow),
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_long_line), cmocka_unit_test(test_config_dir), cmocka_unit_test(test_listen_ok),	   cmocka_unit_test(test_validate_errors),
		cmocka_unit_test(test_apply_live),	   cmocka_unit_test(test_reload_bad_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
