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
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static char tmpfile_path[200];

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

/* Each bad file must produce "FILE:LINE: KEY: ..." */
static void test_file_errors(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{"upstream = nfs://a/b\nbogus_key = 1\n", ":2: bogus_key: unknown key"},
		{"\n\nupstream_connections = lots\n", ":3: upstream_connections: 'lots' is not"},
		{"soft = maybe\n", ":1: soft: 'maybe' is not a boolean"},
		{"log_level = loud\n", ":1: log_level: 'loud' is not one of"},
		{"read_evidence = acl\n",
		 ":1: read_evidence: 'acl' is not one of read|mode|access"},
		{"read_evidence = mod\n", ":1: read_evidence: 'mod' is not one of"},
		{"allow = 10.1.2.3/40\n", ":1: allow:"},
		{"just some words\n", ":1: just: unknown key"},
		{"!bang = 1\n", ":1: expected 'key = value' or 'key value', got '!bang = 1'"},
		{"brun: 10\n", ":1: expected 'key = value' or 'key value', got 'brun: 10'"},
		{"[other]\n", ":1: unknown section [other]"},
		{"cache_dir =\n", ":1: cache_dir: empty value"},
		{"config = /etc/x\n", ":1: config: only valid as a flag"},
		{"include_dir =\n", ":1: include_dir: empty value"},
		{"chunk_size = 3Q\n", ":1: chunk_size: '3Q' is not a size"},
		{"chunk_size = 2M\n", ":1: chunk_size: 2M is out of range"},
		{"inline_max = -1\n", ":1: inline_max: '-1' is not a size"},
		{"brun = 101\n", ":1: brun: 101% is out of range 0..100%"},
		{"brun 10 percent\n", ":1: brun: '10 percent' is not a percentage"},
		{"bcull = %7\n", ":1: bcull: '%7' is not a percentage"},
		{"bstop = -1%\n", ":1: bstop: '-1%' is not a percentage"},
		{"cache_size = 10%\n", ":1: cache_size: '10%': a size is bytes (64M, 800G, 1.5T), not a "
					 "percentage; the free-space percentages are brun, bcull and bstop"},
		{"cache_size = 1.5\n", ":1: cache_size: '1.5' is not a size"},
		{"upstream = \"nfs://a/b\n", ":1: upstream: no closing \" quote"},
		{"upstream = 'nfs://a/b\" x\n", ":1: upstream: no closing ' quote"},
		{"upstream = \"nfs://a/b\" x\n", ":1: upstream: text after the closing quote"},
		{"cache_dir = \"\"\n", ":1: cache_dir: empty value"},
		{"cache_dir\n", ":1: cache_dir: needs a value (DIR)"},
		{"cache_sise = /x\n", ":1: cache_sise: unknown key (did you mean cache_size?)"},
		/* cachefilesd's commands that mean nothing here: refused, with what to do */
		{"tag mycache\n", ":1: tag: cachefilesd's tag has no cachefsd equivalent: it names"},
		{"secctx system_u:system_r:cachefiles_kernel_t:s0\n",
		 ":1: secctx: cachefilesd's secctx has no cachefsd equivalent"},
		{"culltable 14\n", ":1: culltable: cachefilesd's culltable has no cachefsd equivalent"},
		{"nocull\n", ":1: nocull: cachefilesd's nocull has no cachefsd equivalent: cachefsd "
			     "culls whenever free space is below bcull/fcull; to bound the cache"},
		{"resume_thresholds 5 5\n", ":1: resume_thresholds: cachefilesd's resume_thresholds"},
		{"debug 7\n", ":1: debug: cachefilesd's debug has no cachefsd equivalent: it is a "
			      "kernel module trace mask; cachefsd's own detail is log_level = debug"},
		/* the same key twice in one file: which was meant? */
		{"brun 10%\nbrun = 12\n", ":2: brun: set again (first on line 1)"},
		{"dir /var/cache/a\ncache_dir = /var/cache/b\n", ":2: cache_dir: set again (first on line 1)"},
		{"upstream_connections = -2\n", ":1: upstream_connections: -2 is out of range"},
		{"io_threads = 4x\n", ":1: io_threads: '4x' is not a whole number"},
		{"busy_poll = 2000000\n", ":1: busy_poll: 2000000 is out of range 0..100000"},
		{"meta_ttl = 99999999999999999999\n", ":1: meta_ttl: '99999999999999999999' is not"},
		{"foreground = 2\n", ":1: foreground: '2' is not a boolean"},
		{"# ok\n = 5\n", ":2: expected 'key = value' or 'key value', got '= 5'"},
		{"control_socket =\n", ":1: control_socket: empty value"},
		{"allow = 10.0.0.1, nonsense\n", ":1: allow: 'nonsense' is not an address"},
		{"[cachefsd]\n[cachefsd-extra]\n", ":2: unknown section [cachefsd-extra]"},
		{"chunk_size = 100K\n", ":1: chunk_size: 102400 is not a power of two"},
		{"export_path = relative\n", ":1: export_path: 'relative' must start with /"},
		{"listen = 2049\n", ":1: listen: '2049' is not ADDR:PORT"},
		/* getaddrinfo() takes 99999 and binds another port */
		{"listen = 127.0.0.1:99999\n", ":1: listen: '127.0.0.1:99999' is not ADDR:PORT"},
		{"listen = 127.0.0.1:0\n", ":1: listen: '127.0.0.1:0' is not ADDR:PORT"},
		{"listen = 127.0.0.1:nfs\n", ":1: listen: '127.0.0.1:nfs' is not ADDR:PORT"},
		{"listen = [::1]\n", ":1: listen: '[::1]' is not ADDR:PORT"},
		{"client_memory_max = 1M\n", ":1: client_memory_max: 1M is out of range"},
		{"client_idle_timeout = -1\n", ":1: client_idle_timeout: -1 is out of range"},
		{"upstream = http://h/e\n", ":1: upstream: 'http://h/e' is not an nfs:// URL"},
		{"control_socket = run/ctl\n", ":1: control_socket: 'run/ctl' must be an absolute"},
		{"metrics_listen = 9469\n", ":1: metrics_listen: '9469' is not ADDR:PORT (or off)"},
		{"metrics_listen = 127.0.0.1:http\n", ":1: metrics_listen: '127.0.0.1:http' is not"},
		{"metrics_listen = 127.0.0.1:70000\n", ":1: metrics_listen: '127.0.0.1:70000' is"},
		{"metrics_listen = :9469\n", ":1: metrics_listen: ':9469' is not ADDR:PORT"},
		{"peers = 10.0.0.1:2049,10.0.0.2\n",
		 ":1: peers: '10.0.0.1:2049,10.0.0.2' is not HOST:PORT[,HOST:PORT...]"},
		{"peers = ,\n", ":1: peers: ',' is not HOST:PORT[,HOST:PORT...]"},
		{"peer_self = node1\n", ":1: peer_self: 'node1' is not HOST:PORT"},
		{"peer_timeout = 5\n", ":1: peer_timeout: 5 is out of range 10..60000"},
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
		/* the values, and where each came from (line 3: after upstream, cache_dir) */
		{"bstop = 8\n", "keys 'bstop' < 'bcull' < 'brun' must hold (8, 7, 10; bstop: "},
		{"bstop = 8\n", ":3; bcull: default; brun: default)"},
		{"fcull = 12\n", "keys 'fstop' < 'fcull' < 'frun' must hold (3, 12, 10; fstop: default; "
				  "fcull: "},
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
	snprintf(want, sizeof(want), "%s:3: meta_ttl: 'soon' is not a whole number", path);
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

/* --- forms cachefilesd users write, quotes, units, the include directory --- */

static char conf_dir[64];

/* A fresh directory holding main.conf, and main.conf.d/ when dropins. */
static const char *conf_tree(const char *main_text)
{
	char path[160];
	FILE *f;

	strcpy(conf_dir, "/tmp/cfs-test-tree.XXXXXX");
	assert_non_null(mkdtemp(conf_dir));
	snprintf(path, sizeof(path), "%s/main.conf", conf_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(main_text, f);
	fclose(f);
	snprintf(tmpfile_path, sizeof(tmpfile_path), "%s", path);
	return tmpfile_path;
}

static void conf_dropin(const char *name, const char *text)
{
	char path[200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/main.conf.d", conf_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/main.conf.d/%s", conf_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void conf_tree_rm(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", conf_dir);
	assert_int_equal(system(cmd), 0);
}

/* A cachefilesd.conf's lines, written as its users write them, mean what
 * they say: "brun 10%" with or without '=', quotes, sizes with units, the
 * dir command as cache_dir, a bare boolean. */
static void test_cachefilesd_forms(void **state)
{
	struct cfs_config c;
	char err[512] = "";
	const char *path = write_conf("# as in cachefilesd.conf\n"
				      "dir /var/cache/fscache\n"
				      "brun 20%\n"
				      "bcull = 15 %\n"
				      "bstop=5%\n"
				      "frun 30\n"
				      "fcull\t25%\n"
				      "fstop = 20%   # files\n"
				      "upstream \"nfs://filer/srv/data\"\n"
				      "pid_file = '/run/a #1.pid'  ; the # inside quotes stays\n"
				      "cache_size 1.5T\n"
				      "memory_cache = \"64M\"\n"
				      "readahead = 800 K\n"
				      "client_memory_max 1GiB\n"
				      "cache-dir-is-not = 1\n");
	const char *good;

	(void)state;
	config_defaults(&c);
	/* the last line is a mistake, reported with its own name */
	assert_int_not_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	assert_non_null(strstr(err, ":15: cache_dir_is_not: unknown key"));
	assert_null(strchr(err, '\n')); /* the only error */
	config_free(&c);
	unlink(path);
	good = write_conf("dir /var/cache/fscache\nbrun 20%\nbcull = 15 %\nbstop=5%\nfrun 30\n"
			  "fcull\t25%\nfstop = 20%   # files\nupstream \"nfs://filer/srv/data\"\n"
			  "pid_file = '/run/a #1.pid'  ; the # inside quotes stays\n"
			  "cache_size 1.5T\nmemory_cache = \"64M\"\nreadahead = 800 K\n"
			  "client_memory_max 1GiB\nforeground\nsoft \"yes\"\n");
	config_defaults(&c);
	if (config_load_file(&c, good, err, sizeof(err)) != 0)
		fail_msg("refused: %s", err);
	assert_string_equal(c.cache_dir, "/var/cache/fscache");
	assert_int_equal(c.brun, 20);
	assert_int_equal(c.bcull, 15);
	assert_int_equal(c.bstop, 5);
	assert_int_equal(c.frun, 30);
	assert_int_equal(c.fcull, 25);
	assert_int_equal(c.fstop, 20);
	assert_string_equal(c.upstream, "nfs://filer/srv/data");
	assert_string_equal(c.pid_file, "/run/a #1.pid");
	assert_int_equal(c.cache_size, 3ULL << 39);
	assert_int_equal(c.memory_cache, 64ULL << 20);
	assert_int_equal(c.readahead, 800ULL << 10);
	assert_int_equal(c.client_memory_max, 1ULL << 30);
	assert_int_equal(c.foreground, 1);
	assert_int_equal(c.soft, 1);
	assert_int_equal(config_validate(&c, err, sizeof(err)), 0);
	config_free(&c);
	unlink(good);
}

static void test_size_units(void **state)
{
	static const struct {
		const char *text;
		uint64_t want;
	} ok[] = {
		{"800G", 800ULL << 30},	     {"800 GiB", 800ULL << 30}, {"800gb", 800ULL << 30},
		{"1.5T", 3ULL << 39},	     {"0.5K", 512},		{"0.1K", 102},
		{"64MB", 64ULL << 20},	     {"4096B", 4096},		{"2P", 2ULL << 50},
		{"16383P", 16383ULL << 50}, {"1.25M", 1310720},
	};
	static const char *const bad[] = {"1.5", "1.", ".5K", "16384P", "1.5X", "1 .5K",
					  "10%", "1.0000000001G", "K", "5 K B x"};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (config_parse_size(ok[i].text, &v) != 0)
			fail_msg("%s refused", ok[i].text);
		if (v != ok[i].want)
			fail_msg("%s: %llu, want %llu", ok[i].text, (unsigned long long)v,
				 (unsigned long long)ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (config_parse_size(bad[i], &v) == 0)
			fail_msg("%s taken as %llu", bad[i], (unsigned long long)v);
}

/* FILE.d/NAME.conf after FILE, in name order (C locale: "10-" before "9-");
 * a later file overrides with a note naming both places; other names are
 * not read. */
static void test_include_dir(void **state)
{
	struct cfs_config c;
	char err[1024] = "", want[1400];
	const char *path = conf_tree("upstream = nfs://h/e\ncache_dir = /tmp/x\nbrun 12%\n"
				     "meta_ttl = 5\n");
	enum config_action act;

	(void)state;
	conf_dropin("9-late.conf", "brun = 30\n");
	conf_dropin("10-early.conf", "# first\nbrun 20%\nmeta_ttl 60\n");
	conf_dropin("20-mid.conf", "\n\nbrun 25%\n");
	conf_dropin(".hidden.conf", "brun = 99\n");
	conf_dropin("old.conf~", "brun = 98\n");
	conf_dropin("old.conf.dpkg-old", "brun = 97\n");
	conf_dropin("README", "not a configuration\n");
	config_defaults(&c);
	char *argv[] = {"cachefsd", "--config", (char *)path, "--meta-ttl", "7"};
	if (config_parse_args(&c, 5, argv, &act, err, sizeof(err)) != 0)
		fail_msg("refused: %s", err);
	assert_int_equal(c.brun, 30); /* 9-late.conf is the last by name */
	assert_int_equal(c.meta_ttl, 7); /* flags still win */
	snprintf(want, sizeof(want), "%s, %s/main.conf.d/10-early.conf, %s/main.conf.d/20-mid.conf, "
				     "%s/main.conf.d/9-late.conf", path, conf_dir, conf_dir, conf_dir);
	assert_string_equal(c.files_read, want);
	snprintf(want, sizeof(want),
		 "%s/main.conf.d/10-early.conf:2: brun = 20 overrides %s:3 (was 12)\n"
		 "%s/main.conf.d/10-early.conf:3: meta_ttl = 60 overrides %s:4 (was 5)\n"
		 "%s/main.conf.d/20-mid.conf:3: brun = 25 overrides %s/main.conf.d/10-early.conf:2 "
		 "(was 20)\n"
		 "%s/main.conf.d/9-late.conf:1: brun = 30 overrides %s/main.conf.d/20-mid.conf:3 "
		 "(was 25)",
		 conf_dir, path, conf_dir, path, conf_dir, conf_dir, conf_dir, conf_dir);
	assert_string_equal(c.notes, want);
	{
		char buf[8192];
		FILE *f = fmemopen(buf, sizeof(buf), "w");
		config_print_sources(&c, f);
		fclose(f);
		snprintf(want, sizeof(want), "\nbrun = 30%*s# %s/main.conf.d/9-late.conf:1\n",
			 40 - 9, "", conf_dir);
		if (strstr(buf, want) == NULL)
			fail_msg("no \"%s\" in:\n%s", want, buf);
		assert_non_null(strstr(buf, "\nmeta_ttl = 7                            # flag --meta-ttl\n"));
		assert_non_null(strstr(buf, "\nbcull = 7                               # default\n"));
		snprintf(want, sizeof(want), "\ncache_dir = /tmp/x%*s# %s:2\n", 40 - 18, "", path);
		assert_non_null(strstr(buf, want));
	}
	config_free(&c);
	conf_tree_rm();

	/* include_dir names another directory, relative to the main file's */
	path = conf_tree("include_dir = main.conf.d\nupstream = nfs://h/e\n");
	conf_dropin("a.conf", "cache_dir = /tmp/y\n");
	config_defaults(&c);
	assert_int_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	assert_string_equal(c.cache_dir, "/tmp/y");
	config_free(&c);
	conf_tree_rm();
	/* none: not read */
	path = conf_tree("include_dir = none\n");
	conf_dropin("a.conf", "cache_dir = /tmp/y\n");
	config_defaults(&c);
	assert_int_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	assert_null(c.cache_dir);
	config_free(&c);
	conf_tree_rm();
	/* a named directory must exist; the default need not */
	path = conf_tree("\ninclude_dir = /nonexistent/cachefsd.d\n");
	config_defaults(&c);
	assert_int_not_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	snprintf(want, sizeof(want),
		 "%s:2: include_dir: cannot read the include directory /nonexistent/cachefsd.d: "
		 "No such file or directory", path);
	assert_string_equal(err, want);
	config_free(&c);
	conf_tree_rm();
	/* only the main file says where the includes are */
	path = conf_tree("upstream = nfs://h/e\n");
	conf_dropin("a.conf", "include_dir = /etc\n");
	config_defaults(&c);
	assert_int_not_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	snprintf(want, sizeof(want),
		 "%s/main.conf.d/a.conf:1: include_dir: only valid in the main configuration file",
		 conf_dir);
	assert_string_equal(err, want);
	config_free(&c);
	conf_tree_rm();
}

/* Every error of every file at once, one line each, in file order; a
 * duplicate key within one file is one of them; the same key in two files
 * is not. */
static void test_every_error(void **state)
{
	struct cfs_config c;
	char err[2048] = "", want[2048];
	const char *path = conf_tree("upstream = nfs://h/e\n"
				     "brun = lots\n"	     /* 2 */
				     "cache_dir = /tmp/x\n"
				     "nocull\n"		     /* 4 */
				     "meta_ttl = 5\n"
				     "meta_ttl = 6\n"	     /* 6 */
				     "frobnicate = 1\n");    /* 7 */
	int lines = 1;

	(void)state;
	conf_dropin("50-site.conf", "meta_ttl = 9\nchunk_size = 100K\n"); /* 2 */
	config_defaults(&c);
	assert_int_equal(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
	for (const char *p = err; *p; p++)
		lines += *p == '\n';
	if (lines != 5)
		fail_msg("%d lines, want 5:\n%s", lines, err);
	snprintf(want, sizeof(want),
		 "%s:2: brun: 'lots' is not a percentage (a whole number, with or without %%)\n"
		 "%s:4: nocull: cachefilesd's nocull has no cachefsd equivalent: cachefsd culls "
		 "whenever free space is below bcull/fcull; to bound the cache below its "
		 "filesystem's size, set cache_size\n"
		 "%s:6: meta_ttl: set again (first on line 5)\n"
		 "%s:7: frobnicate: unknown key\n"
		 "%s/main.conf.d/50-site.conf:2: chunk_size: 102400 is not a power of two",
		 path, path, path, path, conf_dir);
	assert_string_equal(err, want);
	config_free(&c);
	conf_tree_rm();

	/* more errors than err holds: the ones that fit, then a count */
	{
		char text[4096] = "", small[300];
		for (int i = 0; i < 40; i++)
			strcat(text, "brun = many\n");
		path = write_conf(text);
		config_defaults(&c);
		assert_int_not_equal(config_load_file(&c, path, small, sizeof(small)), 0);
		assert_non_null(strstr(small, ":1: brun: 'many' is not a percentage"));
		assert_non_null(strstr(small, ":2: brun: set again (first on line 1)\n"));
		assert_non_null(strstr(small, " more errors)"));
		assert_true(strlen(small) < sizeof(small));
		config_free(&c);
		unlink(path);
	}
}

/* --check-config's output reads back as a file giving the same values. */
static void test_print_reads_back(void **state)
{
	struct cfs_config c, back;
	char err[1024] = "", *buf = NULL, b1[8192], b2[8192];
	size_t len = 0;
	const char *path = write_conf("upstream = nfs://h/e\ncache_dir = \"/tmp/a #b\"\n"
				      "pid_file = ' lead'\nallow = 10.0.0.0/8, ::1\nbrun 20%\n");
	FILE *f;

	(void)state;
	config_defaults(&c);
	assert_int_equal(config_load_file(&c, path, err, sizeof(err)), 0);
	f = open_memstream(&buf, &len);
	config_print_sources(&c, f);
	fclose(f);
	assert_non_null(strstr(buf, "\ncache_dir = \"/tmp/a #b\" "));
	assert_non_null(strstr(buf, "\npid_file = \" lead\" "));
	unlink(path);
	path = write_conf(buf);
	config_defaults(&back);
	if (config_load_file(&back, path, err, sizeof(err)) != 0)
		fail_msg("the printed configuration does not read back: %s\n%s", err, buf);
	f = fmemopen(b1, sizeof(b1), "w");
	config_print(&c, f);
	fclose(f);
	f = fmemopen(b2, sizeof(b2), "w");
	config_print(&back, f);
	fclose(f);
	assert_string_equal(b1, b2);
	free(buf);
	config_free(&c);
	config_free(&back);
	unlink(path);
}

/* SIGHUP with a broken include file: every error of it reported, what runs
 * is not touched; a good reload then takes the values and their places. */
static void test_reload_broken_include(void **state)
{
	struct cfs_config cur, next;
	char err[2048] = "", want[1024], changed[1024], restart[512];
	const char *path = conf_tree("upstream = nfs://h/e\ncache_dir = /tmp/x\nmeta_ttl = 10\n");
	char *argv[] = {"cachefsd", "--config", (char *)path};

	(void)state;
	conf_dropin("50-site.conf", "brun 20%\n");
	assert_int_equal(parse(&cur, err, 3, argv), 0);
	assert_int_equal(cur.brun, 20);
	conf_dropin("50-site.conf", "brun 30%\nmeta_ttl = soon\nbrun 31%\n");
	assert_int_not_equal(parse(&next, err, 3, argv), 0);
	snprintf(want, sizeof(want),
		 "%s/main.conf.d/50-site.conf:2: meta_ttl: 'soon' is not a whole number\n"
		 "%s/main.conf.d/50-site.conf:3: brun: set again (first on line 1)",
		 conf_dir, conf_dir);
	assert_string_equal(err, want);
	config_free(&next);
	assert_int_equal(cur.brun, 20);
	assert_int_equal(cur.meta_ttl, 10);
	/* fixed: applied, with where it now comes from */
	conf_dropin("50-site.conf", "brun 30%\nmeta_ttl = 11\n");
	assert_int_equal(parse(&next, err, 3, argv), 0);
	assert_int_equal(config_apply_live(&cur, &next, changed, sizeof(changed), restart,
					   sizeof(restart)), 2);
	assert_string_equal(changed, "brun 20 -> 30, meta_ttl 10 -> 11");
	snprintf(want, sizeof(want), "%s/main.conf.d/50-site.conf:2", conf_dir);
	{
		char buf[8192];
		FILE *f = fmemopen(buf, sizeof(buf), "w");
		config_print_sources(&cur, f);
		fclose(f);
		assert_non_null(strstr(buf, want));
	}
	config_free(&next);
	config_free(&cur);
	conf_tree_rm();
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
		cmocka_unit_test(test_cachefilesd_forms),  cmocka_unit_test(test_size_units),
		cmocka_unit_test(test_include_dir),	   cmocka_unit_test(test_every_error),
		cmocka_unit_test(test_print_reads_back),   cmocka_unit_test(test_reload_broken_include),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
