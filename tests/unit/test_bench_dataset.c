/* The bench's data-set generator (bench/dataset.c): the same seed gives the
 * same bytes and the same tree, another seed does not, and the tree has the
 * shape the bench promises (counts, total, cap, skewed sizes, parents
 * before children). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dataset.h"

static void test_rng_same_seed_same_stream(void **state)
{
	struct ds_rng a, b, c;

	(void)state;
	ds_rng_seed(&a, 42);
	ds_rng_seed(&b, 42);
	ds_rng_seed(&c, 43);
	int differ = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = ds_rng_next(&a);
		assert_true(x == ds_rng_next(&b));
		differ |= x != ds_rng_next(&c);
	}
	assert_true(differ);
}

static void test_rng_golden(void **state)
{
	/* Pinned output: if this changes, data sets generated before are not
	 * the same any more: bump DS_VERSION (the data-set cache key). */
	struct ds_rng r;

	(void)state;
	assert_int_equal(DS_VERSION, 1);
	ds_rng_seed(&r, 1);
	assert_true(ds_rng_next(&r) == 0xb3f2af6d0fc710c5ULL);
	assert_true(ds_stream_xxh(1000000, ds_stream_seed(1, 0)) == 0x00436c51663b8b7aULL);
}

static void test_rng_below_in_range(void **state)
{
	struct ds_rng r;
	int seen[7] = {0};

	(void)state;
	ds_rng_seed(&r, 7);
	for (int i = 0; i < 7000; i++) {
		uint64_t v = ds_rng_below(&r, 7);
		assert_true(v < 7);
		seen[v]++;
	}
	for (int i = 0; i < 7; i++)
		assert_true(seen[i] > 700 && seen[i] < 1300);
}

static void test_fill_does_not_depend_on_block_size(void **state)
{
	/* whole words per block: 16 bytes at once == 8 + 8 */
	struct ds_rng a, b;
	uint8_t x[16], y[16];

	(void)state;
	ds_rng_seed(&a, 5);
	ds_rng_seed(&b, 5);
	ds_rng_fill(&a, x, 16);
	ds_rng_fill(&b, y, 8);
	ds_rng_fill(&b, y + 8, 8);
	assert_memory_equal(x, y, 16);
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

static void test_same_seed_same_bytes(void **state)
{
	char dir[] = "/tmp/test_bench_dataset.XXXXXX", p1[64], p2[64], p3[64];
	uint64_t h1, h2, h3;
	size_t n1, n2, n3;
	const uint64_t size = 3 * 1048576 + 12345; /* several blocks and a ragged end */

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p1, sizeof(p1), "%s/a", dir);
	snprintf(p2, sizeof(p2), "%s/b", dir);
	snprintf(p3, sizeof(p3), "%s/c", dir);
	assert_int_equal(ds_write_file(p1, size, ds_stream_seed(9, 0), &h1), 0);
	assert_int_equal(ds_write_file(p2, size, ds_stream_seed(9, 0), &h2), 0);
	assert_int_equal(ds_write_file(p3, size, ds_stream_seed(10, 0), &h3), 0);
	uint8_t *a = slurp(p1, &n1), *b = slurp(p2, &n2), *c = slurp(p3, &n3);
	assert_int_equal(n1, size);
	assert_int_equal(n2, size);
	assert_memory_equal(a, b, size);
	assert_true(memcmp(a, c, size) != 0);
	assert_true(h1 == h2);
	assert_true(h1 != h3);
	/* the manifest hash of a file equals the hash of the stream */
	assert_true(h1 == ds_stream_xxh(size, ds_stream_seed(9, 0)));
	/* incompressible enough: every byte value shows up, none dominates */
	size_t count[256] = {0};
	for (size_t i = 0; i < size; i++)
		count[a[i]]++;
	for (int v = 0; v < 256; v++)
		assert_true(count[v] > size / 256 / 2 && count[v] < size / 256 * 2);
	free(a);
	free(b);
	free(c);
	unlink(p1);
	unlink(p2);
	unlink(p3);
	rmdir(dir);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void test_tree_plan(void **state)
{
	const struct ds_tree_spec spec = {
	    .files = 20000, .dirs = 350, .bytes = 340000000, .max_file = 1 << 20};
	struct ds_entry *e1, *e2, *e3;
	size_t n1, n2, n3;

	(void)state;
	assert_int_equal(ds_tree_plan(&spec, 1, &e1, &n1), 0);
	assert_int_equal(ds_tree_plan(&spec, 1, &e2, &n2), 0);
	assert_int_equal(ds_tree_plan(&spec, 2, &e3, &n3), 0);
	assert_int_equal(n1, 20350);
	assert_int_equal(n2, n1);
	assert_memory_equal(e1, e2, n1 * sizeof(*e1)); /* same seed -> same tree */
	int differ = 0;
	for (size_t i = 0; i < n1; i++)
		differ |= e1[i].size != e3[i].size || strcmp(e1[i].path, e3[i].path) != 0;
	assert_true(differ);

	uint64_t total = 0, *sizes = malloc(spec.files * sizeof(*sizes));
	size_t nf = 0;
	assert_non_null(sizes);
	for (size_t i = 0; i < n1; i++) {
		if (i < spec.dirs) {
			assert_true(e1[i].is_dir);
			continue;
		}
		assert_false(e1[i].is_dir);
		assert_true(e1[i].size <= spec.max_file);
		total += e1[i].size;
		sizes[nf++] = e1[i].size;
		/* the file's directory comes before it in the plan */
		char parent[128];
		snprintf(parent, sizeof(parent), "%s", e1[i].path);
		char *slash = strrchr(parent, '/');
		if (slash) {
			*slash = 0;
			int found = 0;
			for (size_t d = 0; d < spec.dirs && !found; d++)
				found = strcmp(e1[d].path, parent) == 0;
			assert_true(found);
		}
	}
	assert_int_equal(nf, spec.files);
	/* total within 1 % of the target */
	assert_true(total > spec.bytes / 100 * 99 && total < spec.bytes / 100 * 101);
	/* skewed: most files a few KiB, a long tail */
	qsort(sizes, nf, sizeof(*sizes), cmp_u64);
	assert_true(sizes[nf / 2] >= 1024 && sizes[nf / 2] <= 8192);
	assert_true(sizes[nf * 99 / 100] >= 100000);
	assert_true(sizes[nf - 1] >= 500000);
	free(sizes);
	free(e1);
	free(e2);
	free(e3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rng_same_seed_same_stream),
	    cmocka_unit_test(test_rng_golden),
	    cmocka_unit_test(test_rng_below_in_range),
	    cmocka_unit_test(test_fill_does_not_depend_on_block_size),
	    cmocka_unit_test(test_same_seed_same_bytes),
	    cmocka_unit_test(test_tree_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
