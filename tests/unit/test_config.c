/* Config parsing: defaults, flags, files, and every error naming file,
 * line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
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
		{"allow = 10.1.2.3/40\n", ":1: key 'allow':"},
		{"just some words\n", ":1: expected 'key = value'"},
		{"[other]\n", ":1: unknown section [other]"},
		{"cache_dir =\n", ":1: key 'cache_dir': empty value"},
		{"config = /etc/x\n", ":1: key 'config': only valid as a flag"},
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
