/* dataset.h — the bench's deterministic data sets.
 *
 * Everything is a function of (seed, spec): the same seed and spec give the
 * same names, sizes and bytes on any run, so a data set is generated once
 * into build/bench-data/<key>/ and reused. Integer arithmetic only (no libm),
 * so the plan does not depend on the C library's rounding.
 *
 * Bump DS_VERSION whenever the output for a given (seed, spec) changes: it
 * is part of the cache key, so stale data sets are never reused. */
#ifndef CACHEFSD_BENCH_DATASET_H
#define CACHEFSD_BENCH_DATASET_H

#include <stddef.h>
#include <stdint.h>

#define DS_VERSION 1

/* xoshiro256** seeded through splitmix64: fast, good enough, and fixed. */
struct ds_rng {
	uint64_t s[4];
};

void ds_rng_seed(struct ds_rng *r, uint64_t seed);
uint64_t ds_rng_next(struct ds_rng *r);
/* uniform in [0, n), n > 0 (rejection sampling, no modulo bias) */
uint64_t ds_rng_below(struct ds_rng *r, uint64_t n);
/* n bytes of the stream into buf (little-endian words; a partial last word
 * uses its low bytes) */
void ds_rng_fill(struct ds_rng *r, void *buf, size_t n);

/* Seed of one file's content: mixes the data-set seed and a stream id
 * (a file's index in the plan, or a fixed id for the big files). */
uint64_t ds_stream_seed(uint64_t seed, uint64_t id);

/* The many-small-files tree. */
struct ds_tree_spec {
	uint32_t files;    /* regular files */
	uint32_t dirs;     /* directories, the top one included */
	uint64_t bytes;    /* target total size of the files */
	uint64_t max_file; /* cap on one file's size */
};

struct ds_entry {
	char path[128]; /* relative to the tree's top, no leading '/' ("" = top) */
	uint64_t size;  /* 0 for directories */
	uint64_t seed;  /* content stream seed (files) */
	int is_dir;
};

/* Plan the tree: directories first (parents before children), then files.
 * Size distribution: octave buckets with fixed weights (most files 512 B ..
 * 8 KiB, a tail up to max_file), log-uniform inside a bucket, then scaled so
 * the total is within a fraction of a percent of spec->bytes. Directory
 * shape: up to 7 levels, parents picked at random among shallower
 * directories; files are spread over directories with a skew (a few large
 * directories, many small ones). *out is malloc'ed (free() it); returns 0 or
 * a negative errno. */
int ds_tree_plan(const struct ds_tree_spec *spec, uint64_t seed, struct ds_entry **out, size_t *n);

/* Write size bytes of stream `seed` to path (created 0644, truncated).
 * If xxh is not NULL, *xxh gets the XXH64 (seed 0) of what was written.
 * Returns 0 or a negative errno. */
int ds_write_file(const char *path, uint64_t size, uint64_t seed, uint64_t *xxh);

/* XXH64 (seed 0) of size bytes of stream `seed`, without writing them. */
uint64_t ds_stream_xxh(uint64_t size, uint64_t seed);

#endif
