/* libFuzzer target: a damaged cache index. Once, a real cache directory is
 * made with the store itself (inline objects of many sizes, some on LMDB
 * overflow pages; chunked objects with their data files; metadata
 * records; drops and evictions over several commits, so that there are
 * free pages and a free list). Each input is a list of damage operations
 * applied to a copy of its index file; then the store does what the daemon
 * does at start and after: store_open (the pread check, LMDB's open, the
 * recovery), the totals and LRU head, a walk over every object (record,
 * inline bytes, chunks and their data files), a verify pass, metadata
 * lookups and a sweep, the handle map (every mapped handle decodes to its
 * own upstream handle or is stale, never another's; encoding again gives
 * the same handle), a cull, new entries and a commit, the background
 * thread's orphan scan; then close and open once more. A crash, a
 * sanitizer report, a leak or a store_open that fails is a finding: any
 * damage must end in a working store.
 *
 * An input is a sequence of operations, each 8 bytes [kind, a, b (u16 le),
 * c (u32 le)], a write followed by its bytes:
 *   kind % 5 == 0  write (a % 64) + 1 bytes of the input at c % size
 *              1  truncate to c % (size + 1), or (b & 1) to size * c / 2^32
 *              2  write u16 b at page (c % pages), header byte (a % 24) * 2
 *              3  zero (b % 8192) + 1 bytes at c % size
 *              4  2 KiB of pseudo-random bytes (seed a) into page c % pages
 *                 from byte b % 4096 (the "junk in page 2")
 *
 *   make fuzz-index              build and run (FUZZ_SECONDS, default 3600)
 *   build-fuzz/fuzz_index FILE   replay one input (regression) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "../../cachefsd/store/store_int.h"

#define NOBJ  240
#define PSIZE 4096

static char root[4096], dir[4200];
static struct store_params params;
static uint8_t *pristine; /* the template's index file */
static size_t pristine_len;
static uint8_t *work; /* the damaged copy */
static size_t work_len;

struct dfile {
	char rel[64];
	uint8_t *bytes;
	size_t len;
};
static struct dfile files[NOBJ];
static int nfiles;
static char identity[256];
static size_t identity_len;

/* long upstream handles mapped in the template, and their mapped handles */
#define NMAP  60
#define UPLEN 100
static const char map_key[] = "fuzz-root-handle";
static uint8_t map_fh[NMAP][STORE_FH_MAPPED_LEN];

static void map_up(uint8_t *up, int i)
{
	for (int j = 0; j < UPLEN; j++)
		up[j] = (uint8_t)(i * 31 + j * 5 + 1);
	up[0] = (uint8_t)i;
}

static void die(const char *what)
{
	fprintf(stderr, "fuzz_index: %s: %s\n", what, strerror(errno));
	abort();
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	rm_tree(root);
}

static fattr3 attrs(uint64_t size, uint32_t t)
{
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = NF3REG;
	a.mode = 0644;
	a.nlink = 1;
	a.size = size;
	a.mtime.seconds = t;
	a.ctime.seconds = t + 1;
	return a;
}

static uint8_t pattern(uint32_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static uint8_t expect[70000]; /* pattern(0), pattern(1), ... */

static void slurp(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
		die(path);
	*len = (size_t)st.st_size;
	*out = malloc(*len ? *len : 1);
	if (*out == NULL || read(fd, *out, *len) != (ssize_t)*len)
		die(path);
	close(fd);
}

static void spit(const char *path, const void *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, b, len) != (ssize_t)len || close(fd) != 0)
		die(path);
}

/* The template: a cache as a daemon leaves it. */
static void make_template(void)
{
	static uint8_t data[30000], chunk[3000];
	char err[512], fh[32], key[32], path[4400];
	struct store *s;
	struct store_obj o;
	uint64_t freed;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern((uint32_t)i);
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = pattern((uint32_t)i);
	if (store_open(&params, &s, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_index: store_open: %s\n", err);
		abort();
	}
	for (int i = 0; i < NOBJ; i++) {
		uint32_t len = (uint32_t)((i * 2654435761u) % (i % 5 ? 2500 : sizeof(data)));
		fattr3 a = attrs(len, (uint32_t)i + 1);

		snprintf(fh, sizeof(fh), "fh-%04d", i);
		if (i % 4 == 0) {
			a.size = 2 * (64 << 10);
			if (store_obj_reset(s, fh, (uint32_t)strlen(fh), &a, NULL, &o) != 0)
				abort();
			for (uint32_t k = 0; k < 2; k++)
				if (store_data_write(s, o.data_id, (uint64_t)k << 16, chunk,
				                     sizeof(chunk), k == 0) != 0 ||
				    store_chunk_put(s, fh, (uint32_t)strlen(fh), o.data_id, k,
				                    store_checksum(chunk, sizeof(chunk)),
				                    sizeof(chunk)) != 0)
					abort();
		} else if (store_inline_put(s, fh, (uint32_t)strlen(fh), &a, NULL, data, len) != 0) {
			abort();
		}
		snprintf(key, sizeof(key), "m-%04d", i);
		if (store_meta_put(s, key, strlen(key), data, (size_t)(i * 13 % 600)) != 0)
			abort();
		if (i % 50 == 0 && store_commit(s) != 0)
			abort();
	}
	if (store_fh_set_key(s, map_key, sizeof(map_key)) != 0)
		abort();
	for (int i = 0; i < NMAP; i++) {
		uint8_t up[UPLEN];
		uint32_t fhlen;

		map_up(up, i);
		if (store_fh_encode(s, up, UPLEN, map_fh[i], &fhlen) != 1)
			abort();
	}
	store_commit(s);
	for (int i = 1; i < NOBJ; i += 6) {
		snprintf(fh, sizeof(fh), "fh-%04d", i);
		store_obj_drop(s, fh, (uint32_t)strlen(fh), i % 12 == 1);
		snprintf(key, sizeof(key), "m-%04d", i);
		store_meta_del(s, key, strlen(key));
	}
	store_commit(s);
	for (int i = 0; i < 20; i++)
		store_evict_oldest(s, &freed);
	store_commit(s);
	/* the data files of the chunked objects still indexed */
	for (int i = 0; i < NOBJ; i += 4) {
		char rel[64];

		snprintf(fh, sizeof(fh), "fh-%04d", i);
		if (store_obj_get(s, fh, (uint32_t)strlen(fh), &o) != 0 || o.data_id == 0)
			continue;
		store_data_path(rel, sizeof(rel), o.data_id);
		snprintf(files[nfiles].rel, sizeof(files[nfiles].rel), "%s", rel);
		nfiles++;
	}
	store_test_wait_idle(s, 10000);
	store_close(s);

	snprintf(path, sizeof(path), "%s/index/data.mdb", dir);
	slurp(path, &pristine, &pristine_len);
	work = malloc(pristine_len);
	if (work == NULL)
		die("malloc");
	snprintf(path, sizeof(path), "%s/CACHE", dir);
	{
		uint8_t *b;
		slurp(path, &b, &identity_len);
		if (identity_len >= sizeof(identity))
			abort();
		memcpy(identity, b, identity_len);
		free(b);
	}
	for (int i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].rel);
		slurp(path, &files[i].bytes, &files[i].len);
	}
}

/* The cache directory as the template left it, with the damaged index. */
static void restore(void)
{
	char path[4400];

	rm_tree(dir);
	if (mkdir(dir, 0700) != 0)
		die(dir);
	snprintf(path, sizeof(path), "%s/CACHE", dir);
	spit(path, identity, identity_len);
	snprintf(path, sizeof(path), "%s/index", dir);
	if (mkdir(path, 0700) != 0)
		die(path);
	snprintf(path, sizeof(path), "%s/index/data.mdb", dir);
	spit(path, work, work_len);
	for (int i = 0; i < nfiles; i++) {
		char d[4400];

		snprintf(path, sizeof(path), "%s/%s", dir, files[i].rel);
		snprintf(d, sizeof(d), "%s", path);
		for (char *p = d + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
			*p = '\0';
			mkdir(d, 0700);
			*p = '/';
		}
		spit(path, files[i].bytes, files[i].len);
	}
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void damage(const uint8_t *in, size_t n)
{
	memcpy(work, pristine, pristine_len);
	work_len = pristine_len;
	while (n >= 8 && work_len > 0) {
		uint8_t kind = in[0] % 5, a = in[1];
		uint16_t b = le16(in + 2);
		uint32_t c = le32(in + 4);
		size_t pages = work_len / PSIZE ? work_len / PSIZE : 1;

		in += 8;
		n -= 8;
		if (kind == 0) {
			size_t off = c % work_len, len = (size_t)(a % 64) + 1;

			if (len > n)
				len = n;
			if (len > work_len - off)
				len = work_len - off;
			memcpy(work + off, in, len);
			in += len;
			n -= len;
		} else if (kind == 1) {
			work_len =
			    b & 1 ? (size_t)((uint64_t)work_len * c >> 32) : c % (work_len + 1);
		} else if (kind == 2) {
			size_t off = (c % pages) * PSIZE + (size_t)(a % 24) * 2;

			if (off + 2 <= work_len) {
				work[off] = (uint8_t)b;
				work[off + 1] = (uint8_t)(b >> 8);
			}
		} else if (kind == 3) {
			size_t off = c % work_len, len = (size_t)(b % 8192) + 1;

			if (len > work_len - off)
				len = work_len - off;
			memset(work + off, 0, len);
		} else {
			size_t off = (c % pages) * PSIZE + b % PSIZE;
			uint32_t x = a * 2654435761u + 1;

			for (size_t i = 0; i < 2048 && off + i < work_len; i++) {
				x = x * 1103515245u + 12345u;
				work[off + i] = (uint8_t)(x >> 16);
			}
		}
	}
}

static int never(const void *val, size_t vlen, void *arg)
{
	(void)arg;
	return vlen > 0 && ((const uint8_t *)val)[0] == 0xff;
}

/* What the daemon does with a store after it opened. */
static void use(struct store *s)
{
	static uint8_t buf[70000];
	struct store_stats st;
	struct store_walk w;
	struct store_vitem it;
	struct store_obj o;
	uint8_t fh[STORE_FH_MAX];
	uint32_t fhlen = 0, len;
	const void *v;
	size_t vlen;
	char key[32];
	fattr3 a = attrs(5, 99);
	int rc, steps = 0;

	store_get_stats(s, &st);
	while (store_next_object(s, fh, &fhlen) == 0 && steps++ < 4 * NOBJ) {
		if (store_obj_get(s, fh, fhlen, &o) != 0)
			continue;
		if (o.flags & STORE_OBJ_INLINE) {
			if (store_inline_get(s, fh, fhlen, &o, buf, sizeof(buf), &len) == 0 &&
			    (len > sizeof(expect) || memcmp(buf, expect, len) != 0))
				abort(); /* wrong bytes served */
			continue;
		}
		for (uint32_t k = 0; k < 3; k++) {
			uint64_t csum;

			if (store_chunk_get(s, fh, fhlen, k, &csum, &len) != 0 || len > sizeof(buf))
				continue;
			if (o.chunk_size > (1u << 20) ||
			    store_data_read(s, o.data_id, (uint64_t)k * o.chunk_size, buf, len) !=
			        0)
				continue;
			if (store_checksum(buf, len) != csum)
				store_chunk_drop(s, fh, fhlen, k);
		}
		store_touch(s, fh, fhlen);
	}
	memset(&w, 0, sizeof(w));
	for (int i = 0; i < 8 * NOBJ; i++) {
		rc = store_verify_next(s, &w, &it);
		if (rc == -EAGAIN)
			continue;
		if (rc)
			break;
		if (it.kind == STORE_V_CHUNK && store_verify_chunk(s, &it) == 0)
			continue;
		if ((it.kind != STORE_V_INLINE || !it.ok) && store_verify_current(s, &it))
			store_verify_drop(s, &it);
	}
	for (int i = 0; i < NOBJ; i += 3) {
		snprintf(key, sizeof(key), "m-%04d", i);
		store_meta_get(s, key, strlen(key), &v, &vlen);
	}
	store_meta_sweep(s, 100, never, NULL);
	store_fh_set_key(s, map_key, sizeof(map_key));
	for (int i = 0; i < NMAP; i++) {
		uint8_t up[UPLEN], got[STORE_FH_UP_MAX], again[STORE_FH_MAX];
		uint32_t gotlen, againlen;

		map_up(up, i);
		int known = store_fh_decode(s, map_fh[i], STORE_FH_MAPPED_LEN, got, &gotlen);

		if (known == 0 && (gotlen != UPLEN || memcmp(got, up, UPLEN) != 0))
			abort(); /* another file's handle */
		if (known != 0 && known != -ESTALE && known != -EIO)
			abort();
		/* known: the same handle again; a damaged record keeps its
		 * slot, so the handle may come back with another salt, but
		 * never in another handle's slot */
		rc = store_fh_encode(s, up, UPLEN, again, &againlen);
		if (rc >= 0 && known == 0 && memcmp(again, map_fh[i], STORE_FH_MAPPED_LEN) != 0)
			abort();
		if (rc >= 0 && store_fh_decode(s, again, againlen, got, &gotlen) == 0 &&
		    (gotlen != UPLEN || memcmp(got, up, UPLEN) != 0))
			abort();
	}
	store_commit(s);
	store_cull_to(s, st.bytes / 2, 30);
	{
		uint8_t p[5];
		for (uint32_t i = 0; i < sizeof(p); i++)
			p[i] = pattern(i);
		store_inline_put(s, "new", 3, &a, NULL, p, sizeof(p));
	}
	store_meta_put(s, "m-new", 5, "x", 1);
	store_touch_flush(s, 1000, 1);
	store_commit(s);
	store_test_wait_idle(s, 20000);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR")                ? getenv("TMPDIR")
	                  : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
	                                                  : "/tmp";

	(void)argc;
	(void)argv;
	log_set_level(-1); /* the recoveries' lines would be most of the time */
	snprintf(root, sizeof(root), "%s/cfs-fuzz-index.XXXXXX", tmp);
	if (mkdtemp(root) == NULL)
		die("mkdtemp");
	atexit(cleanup);
	snprintf(dir, sizeof(dir), "%s/cache", root);
	params.dir = dir;
	params.identity = "nfs://fuzz/export";
	params.chunk_size = 64 << 10;
	params.inline_max = 64 << 10;
	params.brun = 10;
	params.bcull = 7;
	params.bstop = 3;
	params.frun = 10;
	params.fcull = 7;
	params.fstop = 3;
	params.map_size = 64 << 20;
	for (uint32_t i = 0; i < sizeof(expect); i++)
		expect[i] = pattern(i);
	make_template();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct store *s;

	damage(data, size);
	restore();
	for (int round = 0; round < 2; round++) {
		if (store_open(&params, &s, err, sizeof(err)) != 0) {
			fprintf(stderr, "fuzz_index: store_open failed after damage: %s\n", err);
			abort();
		}
		use(s);
		store_close(s);
	}
	return 0;
}
