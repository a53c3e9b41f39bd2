/* dataset.c — deterministic data sets for the bench (see dataset.h). */
#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void ds_rng_seed(struct ds_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

uint64_t ds_rng_next(struct ds_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t ds_rng_below(struct ds_rng *r, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n, v;
	do
		v = ds_rng_next(r);
	while (v >= limit);
	return v % n;
}

void ds_rng_fill(struct ds_rng *r, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n >= 8) {
		uint64_t v = ds_rng_next(r);
		for (int i = 0; i < 8; i++)
			p[i] = (uint8_t)(v >> (8 * i));
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = ds_rng_next(r);
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)(v >> (8 * i));
	}
}

uint64_t ds_stream_seed(uint64_t seed, uint64_t id)
{
	uint64_t x = seed ^ (id * 0xd1342543de82ef95ULL);
	splitmix64(&x);
	return splitmix64(&x);
}

/* Size buckets [1 << lo, 1 << hi) with weights in 1/1000 (sum 1000); the
 * result is scaled to the target total afterwards. */
static const struct {
	int lo, hi;
	uint32_t w;
} buckets[] = {
    {0, 9, 100},   /* < 512 B: 10 % */
    {9, 11, 220},  /* 512 B .. 2 KiB */
    {11, 13, 360}, /* 2 .. 8 KiB: the bulk */
    {13, 15, 207}, /* 8 .. 32 KiB */
    {15, 17, 90},  /* 32 .. 128 KiB */
    {17, 19, 20},  /* 128 .. 512 KiB */
    {19, 20, 3},   /* 512 KiB .. 1 MiB: the tail */
};

static uint64_t draw_size(struct ds_rng *r)
{
	uint64_t u = ds_rng_below(r, 1000);
	size_t b = 0;
	while (b + 1 < sizeof(buckets) / sizeof(buckets[0]) && u >= buckets[b].w) {
		u -= buckets[b].w;
		b++;
	}
	/* log-uniform at octave granularity: an octave, then uniform inside */
	int oct = buckets[b].lo + (int)ds_rng_below(r, (uint64_t)(buckets[b].hi - buckets[b].lo));
	uint64_t lo = oct == 0 ? 0 : 1ULL << oct;
	return lo + ds_rng_below(r, (1ULL << (oct + 1)) - lo);
}

static const char *const dir_words[] = {
    "src",     "lib",  "include", "drivers", "net", "fs",     "arch",  "tests", "doc", "tools",
    "scripts", "core", "util",    "kernel",  "mm",  "crypto", "sound", "block", "ipc", "init",
};
static const char *const file_exts[] = {".c",   ".c",  ".c",   ".h",  ".h",    ".S",
                                        ".txt", ".py", ".rst", ".sh", ".json", ""};

int ds_tree_plan(const struct ds_tree_spec *spec, uint64_t seed, struct ds_entry **out, size_t *n)
{
	struct ds_rng r;
	uint32_t ndirs = spec->dirs ? spec->dirs : 1;
	size_t total = (size_t)ndirs + spec->files;
	struct ds_entry *e = calloc(total, sizeof(*e));
	uint8_t *depth = calloc(ndirs, 1);

	if (!e || !depth) {
		free(e);
		free(depth);
		return -ENOMEM;
	}
	ds_rng_seed(&r, seed ^ 0x7472656570616e31ULL); /* "treepan1" */

	/* directories: 0 is the top (""); each other picks a parent among the
	 * earlier ones, re-drawn while that parent is 6 deep already */
	e[0].is_dir = 1;
	for (uint32_t i = 1; i < ndirs; i++) {
		uint32_t p;
		int tries = 0;
		do
			p = (uint32_t)ds_rng_below(&r, i);
		while (depth[p] >= 6 && ++tries < 64);
		if (depth[p] >= 6)
			p = 0;
		depth[i] = (uint8_t)(depth[p] + 1);
		const char *w =
		    dir_words[ds_rng_below(&r, sizeof(dir_words) / sizeof(dir_words[0]))];
		char name[256];
		int len = snprintf(name, sizeof(name), "%s%s%s%u", e[p].path,
		                   e[p].path[0] ? "/" : "", w, i);
		if (len > 0 && len < 100) {
			memcpy(e[i].path, name, (size_t)len + 1);
		} else {
			/* too deep for the name buffer: hang it under the top */
			depth[i] = 1;
			snprintf(e[i].path, sizeof(e[i].path), "%s%u", w, i);
		}
		e[i].is_dir = 1;
	}

	/* files: directory rank skewed towards a few (rank = ndirs * u^2, so
	 * the largest directory holds ~1/sqrt(ndirs) of the files), ranks
	 * mapped to directories by a seeded shuffle; sizes from the buckets */
	uint32_t *perm = malloc(ndirs * sizeof(*perm));
	if (!perm) {
		free(e);
		free(depth);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ndirs; i++)
		perm[i] = i;
	for (uint32_t i = ndirs - 1; i > 0; i--) {
		uint32_t j = (uint32_t)ds_rng_below(&r, i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	uint64_t sum = 0;
	for (uint32_t f = 0; f < spec->files; f++) {
		struct ds_entry *x = &e[ndirs + f];
		uint64_t u = ds_rng_below(&r, 1ULL << 20);
		uint64_t rank = (u * u >> 20) * ndirs >> 20;
		uint32_t d = perm[rank < ndirs ? rank : ndirs - 1];
		const char *ext =
		    file_exts[ds_rng_below(&r, sizeof(file_exts) / sizeof(file_exts[0]))];
		char name[256];
		/* directory paths are kept under 100 bytes, so this fits */
		snprintf(name, sizeof(name), "%s%sf%05u%s", e[d].path, e[d].path[0] ? "/" : "", f,
		         ext);
		size_t len = strlen(name);
		if (len >= sizeof(x->path))
			len = sizeof(x->path) - 1;
		memcpy(x->path, name, len); /* calloc'ed: the rest stays 0 */
		x->size = draw_size(&r);
		if (x->size > spec->max_file)
			x->size = spec->max_file;
		x->seed = ds_stream_seed(seed, 1000 + f);
		sum += x->size;
	}
	/* scale to the target total; a few passes because of the cap */
	for (int pass = 0; pass < 4 && sum && spec->bytes; pass++) {
		uint64_t capped = 0, free_sum = 0;
		for (uint32_t f = 0; f < spec->files; f++) {
			uint64_t s = e[ndirs + f].size;
			if (s >= spec->max_file)
				capped += s;
			else
				free_sum += s;
		}
		if (!free_sum || spec->bytes <= capped)
			break;
		uint64_t want = spec->bytes - capped;
		sum = 0;
		for (uint32_t f = 0; f < spec->files; f++) {
			uint64_t *s = &e[ndirs + f].size;
			if (*s < spec->max_file) {
				/* s * want / free_sum without overflow: s < 2^40, want < 2^44 */
				unsigned __int128 v = (unsigned __int128)*s * want / free_sum;
				*s = v > spec->max_file ? spec->max_file : (uint64_t)v;
			}
			sum += *s;
		}
	}
	free(perm);
	free(depth);
	*out = e;
	*n = total;
	return 0;
}

int ds_write_file(const char *path, uint64_t size, uint64_t seed, uint64_t *xxh)
{
	static uint8_t buf[1 << 20];
	struct ds_rng r;
	XXH64_state_t *st = XXH64_createState();
	int fd, rc = 0;

	if (!st)
		return -ENOMEM;
	XXH64_reset(st, 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		XXH64_freeState(st);
		return -errno;
	}
	ds_rng_seed(&r, seed);
	while (size) {
		size_t n = size < sizeof(buf) ? (size_t)size : sizeof(buf);
		/* whole words per block so a file's stream does not depend on
		 * the block size: blocks are multiples of 8 except the last */
		ds_rng_fill(&r, buf, n);
		XXH64_update(st, buf, n);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, n - off);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				rc = -errno;
				goto out;
			}
			off += (size_t)w;
		}
		size -= n;
	}
	if (xxh)
		*xxh = XXH64_digest(st);
out:
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	XXH64_freeState(st);
	return rc;
}

uint64_t ds_stream_xxh(uint64_t size, uint64_t seed)
{
	static uint8_t buf[1 << 20];
	struct ds_rng r;
	XXH64_state_t *st = XXH64_createState();
	uint64_t h;

	if (!st)
		abort();
	XXH64_reset(st, 0);
	ds_rng_seed(&r, seed);
	while (size) {
		size_t n = size < sizeof(buf) ? (size_t)size : sizeof(buf);
		ds_rng_fill(&r, buf, n);
		XXH64_update(st, buf, n);
		size -= n;
	}
	h = XXH64_digest(st);
	XXH64_freeState(st);
	return h;
}
