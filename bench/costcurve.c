/* costcurve: what the cache costs as it grows (issue 17, docs/bench.md
 * "Cost curves"). Fills a cache directory's index through the store's own
 * API (include/store.h) with N objects shaped like the daemon's, then
 * measures it. bench/costcurve.sh runs the subcommands per point and adds
 * what only the real daemon and cachefsctl can tell (start-up until the
 * first NULL is answered, verify time, the daemon's RSS).
 *
 *   costcurve fill    --cache-dir D --identity ID --objects N [options]
 *   costcurve measure --cache-dir D --identity ID --objects N [--samples K]
 *   costcurve cull    --cache-dir D --identity ID --count M
 *   costcurve evict   --cache-dir D           (drop the index's pages from the page cache)
 *   costcurve wait-null --port P --since NS [--timeout S]
 *
 * Every subcommand prints "name value" lines (the measures) on stdout.
 *
 * The objects (deterministic from --seed; object i is found again by
 * regenerating its handle, so nothing is kept per object):
 *   handle  28..64 bytes (uniform): a 12-byte prefix shared by all (an
 *           export's fsid part, as filers make them), then a 64-bit
 *           bijective hash of i (unique, in no useful order: objects arrive
 *           in a client's order, not the handles'), then hash bytes
 *   inline  (100 - chunked-pct)%: a small file of 32 .. inline-bytes
 *           bytes (log-uniform), stored with store_inline_put
 *   chunked chunked-pct%: store_obj_reset, a sparse data file (one byte
 *           at its end: the chunks read as zeros, so verify reads holes,
 *           not disk) and 2..4 chunk entries of 64 KiB (chunk_size 64K)
 *           with their real checksums (store_chunk_put)
 *   meta    per object, as a ttl-mode walk leaves them: an attribute
 *           record ('a' fh: stored-at + fattr3 XDR, 92 bytes) and a lookup
 *           record ('l' dirfh name: stored-at, status, the handle), with
 *           store_meta_put
 * A batch is committed every --batch objects (a loop pass's worth). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store.h"

#define CHUNK     (64u << 10)
#define INLINE_MX (64u << 10) /* the daemon's default inline_max */
#define FH_PREFIX 12

struct opts {
	const char *dir, *identity;
	uint64_t objects, count, seed, samples, batch;
	unsigned chunked_pct, inline_bytes;
	int port;
	uint64_t since_ns;
	unsigned timeout_s;
};

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "costcurve: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64's finalizer: a bijection of 64-bit integers */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Object i's handle into fh; its length. */
static uint32_t make_fh(const struct opts *o, uint64_t i, uint8_t *fh)
{
	uint64_t h = mix(i ^ (o->seed << 48)), r = mix(h + 1);
	uint32_t len = 28 + (uint32_t)(r % 37);

	for (int k = 0; k < FH_PREFIX; k++)
		fh[k] = (uint8_t)(0xa0 + k + o->seed);
	memcpy(fh + FH_PREFIX, &h, 8);
	for (uint32_t k = FH_PREFIX + 8; k < len; k++) {
		if ((k - FH_PREFIX) % 8 == 0)
			r = mix(r);
		fh[k] = (uint8_t)(r >> (8 * (k % 8)));
	}
	return len;
}

static int is_chunked(const struct opts *o, uint64_t i)
{
	return mix(i * 3 + 7) % 100 < o->chunked_pct;
}

/* Object i's size: log-uniform 32 .. inline_bytes, or 2..4 chunks (the
 * last one partial) for a chunked one. */
static uint64_t obj_size(const struct opts *o, uint64_t i)
{
	uint64_t r = mix(i * 5 + 11);

	if (is_chunked(o, i))
		return CHUNK + 1 + r % (3ull * CHUNK);
	double u = (double)(r >> 11) / 9007199254740992.0;
	return (uint64_t)(32.0 * pow((double)o->inline_bytes / 32.0, u));
}

static void make_attrs(uint64_t i, uint64_t size, fattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->type = NF3REG;
	a->mode = 0644;
	a->nlink = 1;
	a->uid = 1000;
	a->gid = 1000;
	a->size = size;
	a->used = size;
	a->fsid = 42;
	a->fileid = i + 1000;
	a->mtime.seconds = 1700000000u + (uint32_t)(i % 1000000);
	a->ctime = a->mtime;
	a->atime = a->mtime;
}

/* The two metadata records of object i, as meta.c keys them. */
static int put_meta(struct store *s, uint64_t i, const uint8_t *fh, uint32_t fhlen)
{
	uint8_t k[2 + STORE_FH_MAX + 32], v[8 + 96];
	uint64_t dir = i / 1000; /* 1000 files a directory */
	size_t kl;
	int rc;

	memset(v, 0, sizeof(v));
	v[0] = (uint8_t)i; /* stored-at: any recent-looking value */
	k[0] = 'a';
	k[1] = (uint8_t)fhlen;
	memcpy(k + 2, fh, fhlen);
	rc = store_meta_put(s, k, 2 + fhlen, v, 8 + 84);
	if (rc)
		return rc;
	k[0] = 'l';
	k[1] = 32;
	memset(k + 2, 0xd0, 32);
	memcpy(k + 2 + 24, &dir, 8);
	kl = 2 + 32 + (size_t)snprintf((char *)k + 34, 30, "f%07" PRIu64, i % 10000000);
	memcpy(v + 12, fh, fhlen);
	v[11] = (uint8_t)fhlen;
	return store_meta_put(s, k, kl, v, 12 + fhlen);
}

static struct store *open_store(const struct opts *o, uint64_t *ms)
{
	struct store_params p;
	struct store *s;
	char err[1024];
	uint64_t t0 = now_ns();

	memset(&p, 0, sizeof(p));
	p.dir = o->dir;
	p.identity = o->identity;
	p.chunk_size = CHUNK;
	p.inline_max = INLINE_MX;
	p.brun = 10;
	p.bcull = 7;
	p.bstop = 3;
	p.frun = 10;
	p.fcull = 7;
	p.fstop = 3;
	p.map_size = 0; /* the daemon's default */
	if (store_open(&p, &s, err, sizeof(err)) != 0)
		die("%s", err);
	if (ms)
		*ms = (now_ns() - t0) / 1000000;
	return s;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Prints name_p50_us and name_p99_us of n latencies in ns (sorted here). */
static void print_pct(const char *name, uint32_t *ns, size_t n)
{
	if (n == 0)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u32);
	printf("%s_p50_us %.2f\n", name, ns[n / 2] / 1000.0);
	printf("%s_p99_us %.2f\n", name, ns[(size_t)((double)n * 0.99)] / 1000.0);
}

static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t kl = strlen(key);

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void print_rss(void)
{
	printf("tool_rss_peak_kib %ld\n", status_kib("VmHWM"));
	printf("tool_rss_anon_kib %ld\n", status_kib("RssAnon"));
}

static void print_index(const struct opts *o)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/index/data.mdb", o->dir);
	if (stat(path, &st) != 0)
		die("cannot stat %s", path);
	printf("index_bytes %lld\n", (long long)st.st_size);
	printf("index_alloc_bytes %lld\n", (long long)st.st_blocks * 512);
	if (o->objects)
		printf("index_bytes_per_object %.1f\n", (double)st.st_size / (double)o->objects);
}

static void stats_line(struct store *s)
{
	struct store_stats st;

	store_get_stats(s, &st);
	printf("objects %" PRIu64 "\n", st.objects);
	printf("chunks %" PRIu64 "\n", st.chunks);
	printf("cached_bytes %" PRIu64 "\n", st.bytes);
	printf("meta_records %" PRIu64 "\n", store_meta_count(s));
}

/* One object; 0 or -errno. */
static int put_object(const struct opts *o, struct store *s, uint64_t i, const uint8_t *zeros,
                      uint64_t zero_csum)
{
	uint8_t fh[STORE_FH_MAX], data[INLINE_MX];
	uint32_t fhlen = make_fh(o, i, fh);
	uint64_t size = obj_size(o, i);
	struct store_obj obj;
	fattr3 a;
	int rc;

	make_attrs(i, size, &a);
	if (!is_chunked(o, i)) {
		for (uint64_t k = 0; k < size; k++)
			data[k] = (uint8_t)(i + k * 7);
		rc = store_inline_put(s, fh, fhlen, &a, NULL, data, (uint32_t)size);
	} else {
		uint8_t z = 0;
		uint32_t n = (uint32_t)((size + CHUNK - 1) / CHUNK);

		rc = store_obj_reset(s, fh, fhlen, &a, NULL, &obj);
		if (rc == 0)
			rc = store_data_write(s, obj.data_id, size - 1, &z, 1, 1);
		for (uint32_t c = 0; rc == 0 && c < n; c++) {
			uint32_t len = c + 1 < n ? CHUNK : (uint32_t)(size - (uint64_t)c * CHUNK);
			uint64_t cs = len == CHUNK ? zero_csum : store_checksum(zeros, len);

			rc = store_chunk_put(s, fh, fhlen, obj.data_id, c, cs, len);
		}
	}
	if (rc == 0)
		rc = put_meta(s, i, fh, fhlen);
	return rc;
}

static int cmd_fill(const struct opts *o)
{
	static uint8_t zeros[CHUNK];
	uint64_t zero_csum = store_checksum(zeros, CHUNK), t0;
	uint64_t tail = o->objects - o->objects / 5; /* latencies: the last fifth */
	uint64_t stride = (o->objects / 5) / 200000 + 1, commits = 0;
	size_t nlat = 0, ncommit = 0;
	uint32_t *lat = malloc(sizeof(uint32_t) * 200001), *clat;
	struct store *s;
	int rc;

	clat = malloc(sizeof(uint32_t) * (o->objects / o->batch + 2));
	if (lat == NULL || clat == NULL)
		die("%s", "out of memory");
	s = open_store(o, NULL);
	t0 = now_ns();
	for (uint64_t i = 0; i < o->objects; i++) {
		int sample = i >= tail && (i - tail) % stride == 0 && nlat < 200001;
		uint64_t a = sample ? now_ns() : 0;

		rc = put_object(o, s, i, zeros, zero_csum);
		if (rc)
			die("store: %s", strerror(-rc));
		if (sample)
			lat[nlat++] = (uint32_t)(now_ns() - a);
		if ((i + 1) % o->batch == 0 || i + 1 == o->objects) {
			uint64_t c = now_ns();

			rc = store_commit(s);
			if (rc)
				die("commit: %s", strerror(-rc));
			if (i >= tail)
				clat[ncommit++] = (uint32_t)(now_ns() - c);
			commits++;
		}
		if ((i + 1) % 1000000 == 0)
			fprintf(stderr, "costcurve: %" PRIu64 " objects, %.0f s\n", i + 1,
			        (double)(now_ns() - t0) / 1e9);
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	printf("fill_seconds %.2f\n", secs);
	printf("fill_objects_per_s %.0f\n", (double)o->objects / secs);
	print_pct("insert", lat, nlat);
	print_pct("commit", clat, ncommit);
	stats_line(s);
	store_close(s);
	print_index(o);
	print_rss();
	free(lat);
	free(clat);
	return 0;
}

/* Drops data.mdb's pages from the page cache (after writing them back):
 * a cold start without disturbing anyone else's cache. */
static int cmd_evict(const struct opts *o)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/index/data.mdb", o->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open %s", path);
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return 0;
}

/* K lookups of random objects, each as a warm read asks the store: the
 * record, then the inline bytes or the first chunk's entry. */
static void lookups(const struct opts *o, struct store *s, const char *name, uint64_t salt)
{
	static uint8_t buf[INLINE_MX];
	uint32_t *lat = malloc(sizeof(uint32_t) * o->samples);
	size_t n = 0;

	if (lat == NULL)
		die("%s", "out of memory");
	for (uint64_t k = 0; k < o->samples; k++) {
		uint64_t i = mix(k + salt) % o->objects, csum;
		uint8_t fh[STORE_FH_MAX];
		uint32_t fhlen = make_fh(o, i, fh), len;
		struct store_obj obj;
		uint64_t a = now_ns();
		int rc;

		if (is_chunked(o, i)) {
			rc = store_obj_get(s, fh, fhlen, &obj);
			if (rc == 0)
				rc = store_chunk_get(s, fh, fhlen, 0, &csum, &len);
		} else {
			rc = store_inline_get(s, fh, fhlen, &obj, buf, sizeof(buf), &len);
		}
		lat[n++] = (uint32_t)(now_ns() - a);
		store_pass_end(s);
		if (rc == -ENOENT)
			continue; /* culled by an earlier run: still a lookup */
		if (rc)
			die("lookup: %s", strerror(-rc));
	}
	print_pct(name, lat, n);
	free(lat);
}

static int cmd_measure(const struct opts *o)
{
	static uint8_t zeros[CHUNK];
	uint64_t zero_csum = store_checksum(zeros, CHUNK), ms, t0;
	uint32_t *lat = malloc(sizeof(uint32_t) * o->samples);
	struct store *s;
	size_t n = 0;
	int rc;

	if (lat == NULL)
		die("%s", "out of memory");
	/* cold: nothing of the index in the page cache, as after a reboot */
	cmd_evict(o);
	s = open_store(o, &ms);
	printf("open_cold_ms %" PRIu64 "\n", ms);
	cmd_evict(o); /* what the open's check read */
	lookups(o, s, "lookup_cold", 1);
	store_close(s);
	/* what the daemon's read-ahead job does at start, timed to its end */
	cmd_evict(o);
	t0 = now_ns();
	{
		int stop = 0;
		char dir[4096];

		snprintf(dir, sizeof(dir), "%s", o->dir);
		printf("prefetch_bytes %" PRIu64 "\n",
		       store_index_prefetch(dir, UINT64_MAX, &stop));
	}
	printf("prefetch_ask_ms %" PRIu64 "\n", (now_ns() - t0) / 1000000);
	s = open_store(o, &ms);
	printf("open_warm_ms %" PRIu64 "\n", ms);
	lookups(o, s, "lookup_warm", 2);
	/* inserts of new objects into an index of N, each as the engine's fill
	 * does it, a commit every batch */
	for (uint64_t k = 0; k < o->samples; k++) {
		uint64_t a = now_ns();

		rc = put_object(o, s, o->objects + 1000000000ull + k, zeros, zero_csum);
		if (rc)
			die("insert: %s", strerror(-rc));
		lat[n++] = (uint32_t)(now_ns() - a);
		if ((k + 1) % o->batch == 0 && (rc = store_commit(s)) != 0)
			die("commit: %s", strerror(-rc));
	}
	store_commit(s);
	print_pct("insert_more", lat, n);
	stats_line(s);
	store_close(s);
	print_rss();
	free(lat);
	return 0;
}

/* Evicts count objects through the daemon's cull path (store_cull_to, a
 * step of 256 and a commit per step, as cachefsctl cull does per pass). */
static int cmd_cull(const struct opts *o)
{
	struct store *s = open_store(o, NULL);
	struct store_stats before, after;
	uint64_t t0, done = 0;

	store_get_stats(s, &before);
	t0 = now_ns();
	while (done < o->count) {
		uint64_t step = o->count - done < 256 ? o->count - done : 256;
		int n = store_cull_to(s, 0, (int)step);

		if (n < 0)
			die("cull: %s", strerror(-n));
		if (n == 0)
			break;
		done += (uint64_t)n;
		if (store_commit(s) != 0)
			die("%s", "cull: commit failed");
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	store_get_stats(s, &after);
	printf("culled %" PRIu64 "\n", done);
	printf("cull_seconds %.3f\n", secs);
	printf("cull_objects_per_s %.0f\n", secs > 0 ? (double)done / secs : 0.0);
	printf("objects_before %" PRIu64 "\n", before.objects);
	printf("objects_after %" PRIu64 "\n", after.objects);
	t0 = now_ns();
	store_close(s); /* waits for the data files' unlinks */
	printf("cull_close_seconds %.3f\n", (double)(now_ns() - t0) / 1e9);
	return 0;
}

/* Connects to 127.0.0.1:port until it accepts, sends an NFSv3 NULL call
 * and waits for its reply: the milliseconds since `since` (wall clock,
 * ns: the caller's `date +%s%N` just before it started the daemon). */
static int cmd_wait_null(const struct opts *o)
{
	static const uint32_t call[] = {0x80000028u, 0x17171717u, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
	uint64_t deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	uint8_t reply[64];

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	while (now_ns() < deadline) {
		uint32_t b[11];
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ssize_t got = 0, n;

		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			close(fd);
			usleep(1000);
			continue;
		}
		for (int k = 0; k < 11; k++)
			b[k] = htonl(call[k]);
		if (write(fd, b, sizeof(b)) == (ssize_t)sizeof(b))
			while (got < 28 &&
			       (n = read(fd, reply + got, sizeof(reply) - (size_t)got)) > 0)
				got += n;
		close(fd);
		/* record mark, xid, REPLY (1), MSG_ACCEPTED (0), verifier, SUCCESS (0) */
		if (got >= 28 && memcmp(reply + 4, &b[1], 4) == 0 && reply[11] == 1 &&
		    reply[27] == 0) {
			printf("first_null_ms %.1f\n", (double)(wall_ns() - o->since_ns) / 1e6);
			return 0;
		}
		usleep(1000);
	}
	fprintf(stderr, "costcurve: no NULL answered on port %d within %u s\n", o->port,
	        o->timeout_s);
	return 1;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: costcurve fill|measure|cull|evict|wait-null [options]\n"
	        "  --cache-dir DIR --identity nfs://HOST/EXPORT   the cache (fill, measure, cull)\n"
	        "  --objects N            objects in the index (fill, measure)\n"
	        "  --chunked-pct P        chunked objects, percent (fill; default 5)\n"
	        "  --inline-bytes B       largest inline file (fill; default 1024)\n"
	        "  --batch B              objects per commit (default 1000)\n"
	        "  --samples K            lookups and inserts timed (measure; default 20000)\n"
	        "  --count M              objects to cull (cull)\n"
	        "  --seed S               (default 1)\n"
	        "  --port P --since NS [--timeout S]   wait-null\n");
	exit(2);
}

static uint64_t num(const char *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || end == v)
		die("not a number: %s", v);
	return x;
}

int main(int argc, char **argv)
{
	struct opts o = {.seed = 1,
	                 .samples = 20000,
	                 .batch = 1000,
	                 .chunked_pct = 5,
	                 .inline_bytes = 1024,
	                 .timeout_s = 60};
	const char *cmd;

	if (argc < 2)
		usage();
	cmd = argv[1];
	for (int i = 2; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(a, "--cache-dir") == 0)
			o.dir = v;
		else if (strcmp(a, "--identity") == 0)
			o.identity = v;
		else if (strcmp(a, "--objects") == 0)
			o.objects = num(v);
		else if (strcmp(a, "--count") == 0)
			o.count = num(v);
		else if (strcmp(a, "--chunked-pct") == 0)
			o.chunked_pct = (unsigned)num(v);
		else if (strcmp(a, "--inline-bytes") == 0)
			o.inline_bytes = (unsigned)num(v);
		else if (strcmp(a, "--batch") == 0)
			o.batch = num(v);
		else if (strcmp(a, "--samples") == 0)
			o.samples = num(v);
		else if (strcmp(a, "--seed") == 0)
			o.seed = num(v);
		else if (strcmp(a, "--port") == 0)
			o.port = (int)num(v);
		else if (strcmp(a, "--since") == 0)
			o.since_ns = num(v);
		else if (strcmp(a, "--timeout") == 0)
			o.timeout_s = (unsigned)num(v);
		else
			usage();
	}
	if (o.chunked_pct > 100 || o.inline_bytes < 32 || o.inline_bytes > INLINE_MX ||
	    o.batch == 0)
		usage();
	log_init(0, CFS_LOG_WARN);
	if (strcmp(cmd, "wait-null") == 0)
		return o.port ? cmd_wait_null(&o) : (usage(), 2);
	if (o.dir == NULL)
		usage();
	if (strcmp(cmd, "evict") == 0)
		return cmd_evict(&o);
	if (o.identity == NULL)
		usage();
	if (strcmp(cmd, "fill") == 0 && o.objects)
		return cmd_fill(&o);
	if (strcmp(cmd, "measure") == 0 && o.objects && o.samples)
		return cmd_measure(&o);
	if (strcmp(cmd, "cull") == 0 && o.count)
		return cmd_cull(&o);
	usage();
	return 2;
}
