/* fsxcheck — a seeded, replayable file exerciser in the manner of the
 * classic fsx (written here from its description, not from its code):
 * random operations on one file, every byte read checked against an
 * in-memory model of what the file must hold.
 *
 *   fsxcheck [-S SEED] [-N OPS] [-l FILELEN] [-o OPLEN] [-m 0|1] [-c P]
 *            [-d N] [-k] [-L N] [-v] [-X N] FILE
 *
 *   -S SEED   the PRNG seed (default 1); the same seed and options give the
 *             same operations, on any machine
 *   -N OPS    operations to do (default 3000)
 *   -l LEN    the file's largest size (default 4 MiB)
 *   -o LEN    the largest read, write or truncate step (default 64 KiB)
 *   -m 0|1    mmap reads and writes among the operations (default 1)
 *   -c P      close and reopen the file after an operation with
 *             probability 1/P (default 30; 0: never)
 *   -d N      every N operations: fsync, then drop the page cache
 *             (echo 3 >/proc/sys/vm/drop_caches), so that the next reads
 *             reach the server (default 0: never). The whole machine's
 *             page cache: meant for the guest, not a shared host
 *   -k        drop the page cache at each close and reopen too
 *   -L N      how many of the last operations a mismatch prints (default 64)
 *   -v        print every operation as it is done
 *   -X N      a test of the checks themselves: after operation N, one byte
 *             of the model in the middle of the file is flipped; with N the
 *             last operation, the final read must report BAD DATA (earlier,
 *             a later write or truncate may cover the flip)
 *
 * The file is created or truncated to 0 at start. Operations, chosen with
 * equal weight (MAPREAD and MAPWRITE only with -m 1): READ (pread of a
 * range inside the file), WRITE (pwrite at any offset below LEN: past the
 * end it leaves a hole of zeros), MAPREAD (the same through a shared
 * mapping), MAPWRITE (ftruncate up first when it ends past the end, then
 * memcpy into a shared mapping and msync), TRUNCATE (ftruncate to a size
 * up to OPLEN above or below the current one, or to any size below LEN,
 * so up and down). After each operation, with probability 1/P, CLOSEOPEN.
 * At the end the whole file is read back once more (after a close and
 * reopen, and a drop with -d or -k).
 *
 * Checks: every byte of every READ and MAPREAD against the model; a short
 * read; the size fstat reports at each read and after each reopen; a
 * SIGBUS in a mapping inside the model's size. The bytes a write puts at
 * offset x are a function of the operation's number and x, so a mismatch
 * can say whose bytes came back: an older write's (stale data), zeros (a
 * hole that should have been filled, or a truncate that should not have
 * been seen) or unknown.
 *
 * Output: a first line with the seed and options; on success "fsxcheck: OK
 * ..." with counts; on a mismatch "fsxcheck: FAIL ...", the details, the
 * last -L operations and the command line that replays the run, exit 1.
 * Exit 2: usage; 3: a system call failed (errno named).
 *
 * Built twice: with the other tools (host, sanitizers in build-san) and
 * static as guest-fsxcheck for the qemu guest, which has no libc. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum op_kind { OP_READ, OP_WRITE, OP_MAPREAD, OP_MAPWRITE, OP_TRUNCATE, OP_NKINDS,
	       OP_CLOSEOPEN = OP_NKINDS, OP_DROP, OP_FINAL };

static const char *const op_names[] = {"READ",	   "WRITE",	"MAPREAD", "MAPWRITE",
				       "TRUNCATE", "CLOSEOPEN", "DROP",	   "FINALREAD"};

/* One done operation, for the log printed on a mismatch. */
struct op_rec {
	long n;		 /* operation number, from 1; 0: an unused slot */
	enum op_kind kind;
	uint64_t off;	 /* READ/WRITE/MAP*: the range; TRUNCATE: the new size */
	uint64_t len;
	uint64_t size0;	 /* the model's size before */
	uint64_t size1;	 /* and after */
	int dropped;	 /* CLOSEOPEN: the page cache was dropped */
};

static struct {
	/* options */
	uint64_t seed;
	long nops;
	uint64_t maxlen;
	uint64_t maxop;
	int mmap_on;
	long closeopen;
	long drop_every;
	int drop_at_reopen;
	long nlog;
	int verbose;
	long flip_at;
	const char *path;
	int argc;
	char **argv;

	/* state */
	uint64_t rng;
	int fd;
	unsigned char *model;  /* maxlen bytes; beyond size: zeros */
	uint64_t size;	       /* the model's file size */
	unsigned char *buf;    /* maxop bytes */
	long pagesize;
	struct op_rec *log;    /* ring of nlog records */
	long nrec;	       /* records ever logged */
	long cur;	       /* the current operation's number */
	long drops;	       /* page cache drops done */
	struct op_rec doing;   /* the operation under way, for a failure's log */
	long counts[OP_FINAL + 1];
	int drop_warned;
} g;

/* splitmix64: small, and the same on every machine for a seed */
static uint64_t rnd(void)
{
	uint64_t z = (g.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, n) for n > 0 */
static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* The byte operation n writes at offset x: a hash of (n, x / 4), so that
 * the bytes of two operations, or of one at two offsets (misplaced data),
 * differ over any run of a few bytes, and who_wrote() can tell them apart. */
static unsigned char pat(long n, uint64_t x)
{
	uint32_t h = (uint32_t)n * 0x9e3779b1u ^ (uint32_t)(x >> 2) * 0x85ebca77u;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return (unsigned char)(h >> (8 * (x & 3)));
}

static void log_op(enum op_kind kind, uint64_t off, uint64_t len, uint64_t size0, int dropped)
{
	struct op_rec *r = &g.log[g.nrec++ % g.nlog];

	r->n = g.cur;
	r->kind = kind;
	r->off = off;
	r->len = len;
	r->size0 = size0;
	r->size1 = g.size;
	r->dropped = dropped;
	g.counts[kind]++;
	if (g.verbose) {
		printf("#%06ld %s 0x%" PRIx64 " 0x%" PRIx64 " size 0x%" PRIx64 "\n", g.cur,
		       op_names[kind], off, len, g.size);
		fflush(stdout);
	}
}

static void print_op(const struct op_rec *r)
{
	printf("  #%06ld %-9s ", r->n, op_names[r->kind]);
	switch (r->kind) {
	case OP_READ:
	case OP_MAPREAD:
	case OP_WRITE:
	case OP_MAPWRITE:
	case OP_FINAL:
		printf("0x%" PRIx64 " thru 0x%" PRIx64 " (0x%" PRIx64 " bytes)", r->off,
		       r->off + r->len - 1, r->len);
		if ((r->kind == OP_WRITE || r->kind == OP_MAPWRITE) && r->off > r->size0)
			printf(" HOLE");
		else if ((r->kind == OP_WRITE || r->kind == OP_MAPWRITE) && r->size1 > r->size0)
			printf(" EXTEND");
		break;
	case OP_TRUNCATE:
		printf("%s from 0x%" PRIx64 " to 0x%" PRIx64,
		       r->off < r->size0 ? "DOWN" : r->off > r->size0 ? "UP" : "SAME", r->size0,
		       r->off);
		break;
	case OP_CLOSEOPEN:
		printf("%s", r->dropped ? "(page cache dropped)" : "");
		break;
	case OP_DROP:
		printf("fsync, page cache dropped");
		break;
	default:
		break;
	}
	printf("  [size 0x%" PRIx64 "]\n", r->size1);
}

static void print_replay(void)
{
	int i;

	printf("replay:");
	for (i = 0; i < g.argc; i++)
		printf(" %s", g.argv[i]);
	printf("   (same seed and options: the same operations)\n");
}

static void print_log(void)
{
	long first = g.nrec > g.nlog ? g.nrec - g.nlog : 0, i;

	printf("the last %ld operations, then the failing one:\n", g.nrec - first);
	for (i = first; i < g.nrec; i++)
		print_op(&g.log[i % g.nlog]);
	if (g.doing.n == g.cur) {
		g.doing.size1 = g.size;
		printf("->");
		print_op(&g.doing);
	}
}

/* what the next log_op will say, printed by a failure before it */
static void doing(enum op_kind kind, uint64_t off, uint64_t len)
{
	g.doing.n = g.cur;
	g.doing.kind = kind;
	g.doing.off = off;
	g.doing.len = len;
	g.doing.size0 = g.size;
	g.doing.dropped = 0;
}

/* Whose bytes are these? Looks for a logged write whose pattern matches
 * got[0..k) at file offset x (k up to 16). */
static void who_wrote(uint64_t x, const unsigned char *got, uint64_t avail)
{
	uint64_t k = avail < 16 ? avail : 16, i;
	long first = g.nrec > g.nlog ? g.nrec - g.nlog : 0, j;
	int zeros = 1;

	for (i = 0; i < k; i++)
		zeros &= got[i] == 0;
	if (zeros) {
		printf("the bad bytes are zeros: a hole or truncated range where the model "
		       "has data\n");
		return;
	}
	for (j = g.nrec - 1; j >= first; j--) {
		const struct op_rec *r = &g.log[j % g.nlog];

		if (r->kind != OP_WRITE && r->kind != OP_MAPWRITE)
			continue;
		if (x < r->off || x + k > r->off + r->len)
			continue;
		for (i = 0; i < k && got[i] == pat(r->n, x + i); i++)
			;
		if (i == k) {
			printf("the bad bytes are those op #%06ld (%s) wrote there: stale data\n",
			       r->n, op_names[r->kind]);
			return;
		}
	}
	printf("the bad bytes are not those of any logged write (-L more?)\n");
}

static void fail_head(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("fsxcheck: FAIL seed %" PRIu64 " at op #%06ld: ", g.seed, g.cur);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void fail_tail(void)
{
	print_log();
	print_replay();
	fflush(stdout);
	exit(1);
}

static void die_errno(const char *what)
{
	int e = errno;

	fflush(stdout);
	printf("fsxcheck: ERROR seed %" PRIu64 " at op #%06ld: %s: %s\n", g.seed, g.cur, what,
	       strerror(e));
	print_log();
	print_replay();
	fflush(stdout);
	exit(3);
}

/* got[0..len) read at off: every byte against the model */
static void check_bytes(const char *how, uint64_t off, uint64_t len, const unsigned char *got)
{
	uint64_t i, bad = 0, first = 0, j;

	if (memcmp(got, g.model + off, len) == 0)
		return;
	for (i = 0; i < len; i++) {
		if (got[i] != g.model[off + i]) {
			if (bad == 0)
				first = i;
			bad++;
		}
	}
	if (bad == 0)
		return;
	fail_head("%s BAD DATA: 0x%" PRIx64 " of 0x%" PRIx64 " bytes differ, first at 0x%" PRIx64,
		  how, bad, len, off + first);
	printf("offset      good  bad\n");
	for (j = first; j < len && j < first + 16; j++)
		printf("0x%08" PRIx64 "  0x%02x  0x%02x%s\n", off + j, g.model[off + j], got[j],
		       got[j] != g.model[off + j] ? "  <" : "");
	who_wrote(off + first, got + first, len - first);
	fail_tail();
}

static void check_size(const char *when)
{
	struct stat st;

	if (fstat(g.fd, &st) < 0)
		die_errno("fstat");
	if ((uint64_t)st.st_size != g.size) {
		fail_head("SIZE error %s: expected 0x%" PRIx64 ", fstat 0x%" PRIx64, when, g.size,
			  (uint64_t)st.st_size);
		fail_tail();
	}
}

static void open_file(int flags)
{
	g.fd = open(g.path, O_RDWR | flags, 0644);
	if (g.fd < 0)
		die_errno("open");
}

/* fsync (with an open file), then the page cache of the whole machine
 * dropped: the next reads of this file go to the server. Without the right
 * to (not root, not Linux), once a warning and on. 1: dropped. */
static int drop_caches(void)
{
	int fd;

	if (g.fd >= 0 && fsync(g.fd) < 0)
		die_errno("fsync");
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3\n", 2) != 2) {
		if (!g.drop_warned)
			printf("fsxcheck: warning: cannot drop the page cache: %s\n",
			       strerror(errno));
		g.drop_warned = 1;
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	g.drops++;
	return 1;
}

static void model_resize(uint64_t size)
{
	if (size < g.size)
		memset(g.model + size, 0, g.size - size);
	g.size = size;
}

static void do_read(uint64_t off, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t n = pread(g.fd, g.buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die_errno("pread");
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	if (done < len) {
		fail_head("SHORT READ at 0x%" PRIx64 ": 0x%" PRIx64 " of 0x%" PRIx64
			  " bytes (the model's size 0x%" PRIx64 ")",
			  off, done, len, g.size);
		fail_tail();
	}
	check_bytes("READ", off, len, g.buf);
	check_size("after a read");
}

static sigjmp_buf bus_jmp;
static volatile sig_atomic_t in_map;

static void on_sigbus(int sig)
{
	(void)sig;
	if (in_map)
		siglongjmp(bus_jmp, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

/* maps [off, off+len) of the file (a page-aligned window around it) */
static unsigned char *map_range(uint64_t off, uint64_t len, int prot, unsigned char **base,
				size_t *maplen)
{
	uint64_t pg = off - off % (uint64_t)g.pagesize;
	void *p;

	*maplen = (size_t)(off + len - pg);
	p = mmap(NULL, *maplen, prot, MAP_SHARED, g.fd, (off_t)pg);
	if (p == MAP_FAILED)
		die_errno("mmap");
	*base = p;
	return (unsigned char *)p + (off - pg);
}

static void do_mapread(uint64_t off, uint64_t len)
{
	unsigned char *base, *p;
	size_t maplen;

	p = map_range(off, len, PROT_READ, &base, &maplen);
	if (sigsetjmp(bus_jmp, 1)) {
		in_map = 0;
		fail_head("SIGBUS in MAPREAD of 0x%" PRIx64 " thru 0x%" PRIx64
			  ", inside the model's size 0x%" PRIx64,
			  off, off + len - 1, g.size);
		fail_tail();
	}
	in_map = 1;
	memcpy(g.buf, p, len);
	in_map = 0;
	if (munmap(base, maplen) < 0)
		die_errno("munmap");
	check_bytes("MAPREAD", off, len, g.buf);
	check_size("after a mapped read");
}

/* pat() for a range, one hash per 4 bytes (the guest runs under TCG) */
static void fill_pattern(uint64_t off, uint64_t len)
{
	uint64_t i = 0, x;
	uint32_t h = 0;

	for (; i < len && (off + i) % 4; i++)
		g.buf[i] = pat(g.cur, off + i);
	for (; i + 4 <= len; i += 4) {
		x = off + i;
		h = (uint32_t)g.cur * 0x9e3779b1u ^ (uint32_t)(x >> 2) * 0x85ebca77u;
		h ^= h >> 15;
		h *= 0x2c1b3c6du;
		h ^= h >> 12;
		g.buf[i] = (unsigned char)h;
		g.buf[i + 1] = (unsigned char)(h >> 8);
		g.buf[i + 2] = (unsigned char)(h >> 16);
		g.buf[i + 3] = (unsigned char)(h >> 24);
	}
	for (; i < len; i++)
		g.buf[i] = pat(g.cur, off + i);
}

static void do_write(uint64_t off, uint64_t len)
{
	uint64_t done = 0;

	fill_pattern(off, len);
	while (done < len) {
		ssize_t n = pwrite(g.fd, g.buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die_errno("pwrite");
		}
		done += (uint64_t)n;
	}
	memcpy(g.model + off, g.buf, len);
	if (off + len > g.size)
		g.size = off + len;
}

static void do_mapwrite(uint64_t off, uint64_t len)
{
	unsigned char *base, *p;
	size_t maplen;

	if (off + len > g.size) {
		if (ftruncate(g.fd, (off_t)(off + len)) < 0)
			die_errno("ftruncate (to extend for a mapped write)");
		model_resize(off + len);
	}
	fill_pattern(off, len);
	p = map_range(off, len, PROT_READ | PROT_WRITE, &base, &maplen);
	if (sigsetjmp(bus_jmp, 1)) {
		in_map = 0;
		fail_head("SIGBUS in MAPWRITE of 0x%" PRIx64 " thru 0x%" PRIx64
			  ", inside the model's size 0x%" PRIx64,
			  off, off + len - 1, g.size);
		fail_tail();
	}
	in_map = 1;
	memcpy(p, g.buf, len);
	in_map = 0;
	if (msync(base, maplen, MS_SYNC) < 0)
		die_errno("msync");
	if (munmap(base, maplen) < 0)
		die_errno("munmap");
	memcpy(g.model + off, g.buf, len);
}

static void do_truncate(uint64_t size)
{
	if (ftruncate(g.fd, (off_t)size) < 0)
		die_errno("ftruncate");
	model_resize(size);
}

static void closeopen(void)
{
	uint64_t size0 = g.size;
	int dropped = 0;

	if (close(g.fd) < 0)
		die_errno("close");
	doing(OP_CLOSEOPEN, 0, 0);
	g.fd = -1; /* the close wrote back what was dirty */
	if (g.drop_at_reopen)
		dropped = drop_caches();
	open_file(0);
	log_op(OP_CLOSEOPEN, 0, 0, size0, dropped);
	check_size("after a close and reopen");
}

/* a range [off, off+len) of length 1..maxop inside [0, limit) */
static void pick_range(uint64_t limit, uint64_t *off, uint64_t *len)
{
	*off = rnd_below(limit);
	*len = 1 + rnd_below(g.maxop);
	if (*off + *len > limit)
		*len = limit - *off;
}

static void one_op(void)
{
	uint64_t size0 = g.size, off = 0, len = 0;
	enum op_kind k;

	k = (enum op_kind)rnd_below(OP_NKINDS);
	if (!g.mmap_on && (k == OP_MAPREAD || k == OP_MAPWRITE))
		k = k == OP_MAPREAD ? OP_READ : OP_WRITE;
	if ((k == OP_READ || k == OP_MAPREAD) && g.size == 0)
		k = OP_WRITE; /* nothing to read yet */
	switch (k) {
	case OP_READ:
	case OP_MAPREAD:
		pick_range(g.size, &off, &len);
		break;
	case OP_WRITE:
	case OP_MAPWRITE:
		pick_range(g.maxlen, &off, &len);
		break;
	case OP_TRUNCATE:
		/* half a step of up to maxop around the size, half anywhere */
		if (rnd() & 1) {
			off = rnd_below(g.maxop + 1);
			off = (rnd() & 1) ? g.size + off : (off > g.size ? 0 : g.size - off);
			if (off > g.maxlen)
				off = g.maxlen;
		} else {
			off = rnd_below(g.maxlen + 1);
		}
		break;
	default:
		break;
	}
	doing(k, off, len);
	switch (k) {
	case OP_READ: do_read(off, len); break;
	case OP_MAPREAD: do_mapread(off, len); break;
	case OP_WRITE: do_write(off, len); break;
	case OP_MAPWRITE: do_mapwrite(off, len); break;
	case OP_TRUNCATE: do_truncate(off); break;
	default: break;
	}
	log_op(k, off, len, size0, 0);
}

static void final_check(void)
{
	uint64_t off;

	g.cur++;
	closeopen();
	if (g.drop_every > 0 && !g.drop_at_reopen)
		drop_caches();
	for (off = 0; off < g.size; off += g.maxop) {
		uint64_t len = g.size - off < g.maxop ? g.size - off : g.maxop;

		g.cur++;
		doing(OP_FINAL, off, len);
		do_read(off, len);
		log_op(OP_FINAL, off, len, g.size, 0);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: fsxcheck [-S SEED] [-N OPS] [-l FILELEN] [-o OPLEN] [-m 0|1]\n"
			"                [-c P] [-d N] [-k] [-L N] [-v] [-X N] FILE\n");
	return 2;
}

/* a number with an optional k/m suffix (KiB, MiB) */
static int num_arg(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'k' || *end == 'K')
		n *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		n *= 1024 * 1024, end++;
	if (*end)
		return -1;
	*v = n;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t v = 0;
	int c;
	struct sigaction sa;

	g.seed = 1;
	g.nops = 3000;
	g.maxlen = 4 << 20;
	g.maxop = 64 << 10;
	g.mmap_on = 1;
	g.closeopen = 30;
	g.nlog = 64;
	g.fd = -1;
	g.argc = argc;
	g.argv = argv;
	while ((c = getopt(argc, argv, "S:N:l:o:m:c:d:kL:vX:")) != -1) {
		if (c != 'k' && c != 'v' && num_arg(optarg, &v) < 0)
			return usage();
		switch (c) {
		case 'S': g.seed = v; break;
		case 'N': g.nops = (long)v; break;
		case 'l': g.maxlen = v; break;
		case 'o': g.maxop = v; break;
		case 'm': g.mmap_on = v != 0; break;
		case 'c': g.closeopen = (long)v; break;
		case 'd': g.drop_every = (long)v; break;
		case 'k': g.drop_at_reopen = 1; break;
		case 'L': g.nlog = (long)v; break;
		case 'v': g.verbose = 1; break;
		case 'X': g.flip_at = (long)v; break;
		default: return usage();
		}
	}
	if (optind != argc - 1 || g.maxlen == 0 || g.maxop == 0 || g.nlog < 1 ||
	    g.maxlen > (uint64_t)1 << 32)
		return usage();
	g.path = argv[optind];
	g.rng = g.seed;
	g.pagesize = sysconf(_SC_PAGESIZE);
	g.model = calloc(1, g.maxlen);
	g.buf = malloc(g.maxop);
	g.log = calloc((size_t)g.nlog, sizeof(*g.log));
	if (!g.model || !g.buf || !g.log) {
		fprintf(stderr, "fsxcheck: out of memory\n");
		return 3;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	printf("fsxcheck: seed %" PRIu64 ", %ld ops, file up to 0x%" PRIx64 ", ops up to 0x%" PRIx64
	       ", mmap %s, close/open 1/%ld (0: never), drop every %ld (0: never)%s: %s\n",
	       g.seed, g.nops, g.maxlen, g.maxop, g.mmap_on ? "on" : "off", g.closeopen,
	       g.drop_every, g.drop_at_reopen ? " and at reopen" : "", g.path);
	open_file(O_CREAT | O_TRUNC);
	for (g.cur = 1; g.cur <= g.nops; g.cur++) {
		one_op();
		if (g.cur == g.flip_at && g.size > 0)
			g.model[g.size / 2] ^= 0x5a;
		if (g.closeopen > 0 && rnd_below((uint64_t)g.closeopen) == 0)
			closeopen();
		if (g.drop_every > 0 && g.cur % g.drop_every == 0) {
			uint64_t s = g.size;
			int d;

			doing(OP_DROP, 0, 0);
			d = drop_caches();
			log_op(OP_DROP, 0, 0, s, d);
		}
	}
	g.cur = g.nops;
	final_check();
	if (close(g.fd) < 0)
		die_errno("close");
	printf("fsxcheck: OK seed %" PRIu64 ": %ld ops: %ld reads, %ld writes, %ld mapreads, "
	       "%ld mapwrites, %ld truncates, %ld close/opens, %ld drops, final size 0x%" PRIx64
	       "\n",
	       g.seed, g.nops, g.counts[OP_READ], g.counts[OP_WRITE], g.counts[OP_MAPREAD],
	       g.counts[OP_MAPWRITE], g.counts[OP_TRUNCATE], g.counts[OP_CLOSEOPEN],
	       g.counts[OP_DROP], g.size);
	return 0;
}
