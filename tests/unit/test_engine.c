/* Engine pieces that stand alone: MOUNT path rules, FSINFO clamping, the
 * upstream URL parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "engine.h"
#include "upstream.h"

static void check_norm(const char *in, int rc, const char *out)
{
	char buf[256];

	strcpy(buf, in);
	assert_int_equal(engine_normalize_path(buf), rc);
	if (rc == 0)
		assert_string_equal(buf, out);
}

static void test_normalize(void **state)
{
	(void)state;
	check_norm("/export", 0, "/export");
	check_norm("/export/", 0, "/export");
	check_norm("//export//sub///", 0, "/export/sub");
	check_norm("/", 0, "/");
	check_norm("///", 0, "/");
	check_norm("export", -EINVAL, NULL);
	check_norm("/export/../etc", -EINVAL, NULL);
	check_norm("/export/..", -EINVAL, NULL);
	check_norm("/export/./x", -EINVAL, NULL);
	check_norm("/export/..x/.y", 0, "/export/..x/.y");
}

static void test_fsinfo_clamp(void **state)
{
	FSINFO3resok r;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.rtmax = 4 << 20;
	r.rtpref = 2 << 20;
	r.wtmax = 64 << 10;
	r.wtpref = 128 << 10;
	r.dtpref = 8 << 20;
	r.maxfilesize = 1ULL << 50;
	engine_clamp_fsinfo(&r);
	assert_int_equal(r.rtmax, CFS_MAX_IO);
	assert_int_equal(r.rtpref, CFS_MAX_IO);
	assert_int_equal(r.wtmax, 64 << 10); /* smaller server limits stay */
	assert_int_equal(r.wtpref, 64 << 10);
	assert_int_equal(r.dtpref, CFS_MAX_IO);
	assert_true(r.maxfilesize == 1ULL << 50);

	/* a filer with a 64 KiB READ limit (ONTAP's default): clients are
	 * offered exactly that, never more, whatever rtpref says */
	memset(&r, 0, sizeof(r));
	r.rtmax = 64 << 10;
	r.rtpref = 1 << 20;
	r.wtmax = 64 << 10;
	engine_clamp_fsinfo(&r);
	assert_int_equal(r.rtmax, 64 << 10);
	assert_int_equal(r.rtpref, 64 << 10);
	assert_int_equal(r.wtpref, 64 << 10);
}

static void test_url(void **state)
{
	struct upstream_url u;
	char err[256];

	(void)state;
	assert_int_equal(upstream_parse_url("nfs://127.0.0.1/srv/export?nfsport=2049&mountport=20048",
					    &u, err, sizeof(err)),
			 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_string_equal(u.path, "/srv/export");
	assert_int_equal(u.nfsport, 2049);
	assert_int_equal(u.mountport, 20048);
	assert_int_equal(upstream_parse_url("nfs://filer.example/", &u, err, sizeof(err)), 0);
	assert_string_equal(u.path, "/");
	assert_int_equal(u.nfsport, 0);
	assert_int_equal(upstream_parse_url("nfs://[::1]:2050/a/b/", &u, err, sizeof(err)), 0);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.path, "/a/b");
	assert_int_equal(u.nfsport, 2050);
	assert_int_not_equal(upstream_parse_url("http://x/y", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://hostonly", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://h/e?nfsport=0", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://h/e?nfsport=99999", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://h/e?uid=3", &u, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "unsupported URL argument 'uid'"));
	assert_int_not_equal(upstream_parse_url("nfs:///e", &u, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_fsinfo_clamp),
		cmocka_unit_test(test_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
