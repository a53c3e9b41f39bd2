/* nfsread: read a file over NFSv3 by path or by file handle, with a chosen
 * credential and READ size, without any other call. Used by the cache
 * tests: "read by handle" needs no LOOKUP, so with the upstream stopped a
 * read through the proxy can only be answered from the cache.
 *
 *   nfsread --port P [--mountport M] [--host H] (--export PATH --path REL | --fh HEX)
 *           [--offset N] [--length N] [--rsize N] [--uid U --gid G [--gids a,b]]
 *           [--out FILE] [--print-fh] [--print-reads] [--print-sizes] [--timeout S]
 *
 * Writes the bytes to --out (or stdout). --print-fh prints the handle in hex
 * on stderr (as "fh HEX"); --print-reads the READs it took and the largest
 * answer (as "reads N max M": a server's READ limit shows); --print-sizes
 * the file size each READ answer's attributes give (a line "size N" per
 * READ, "size none" without attributes). MOUNT goes to
 * --port too (the proxy serves both), or to --mountport (a server's own
 * mountd). Exit: 0 read to EOF or --length; 3 an NFS error
 * (its nfsstat3 is printed, e.g. "status NFS3ERR_ACCES"); 1 RPC or
 * connection failure; 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "nfsnames.h"

struct waiter {
	int done;
	int status;
	void *data;
	char buf[1 << 20];
	size_t len;
	nfsstat3 nst;
	uint32_t eof;
	int has_size;
	uint64_t size; /* a READ answer's post-op attributes' */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fhlen;
	int mnt;
};

static int timeout_s = 30;

static int wait_for(struct rpc_context *rpc, struct waiter *w)
{
	time_t end = time(NULL) + timeout_s;

	while (!w->done) {
		struct pollfd p = {rpc_get_fd(rpc), (short)rpc_which_events(rpc), 0};
		if (time(NULL) > end) {
			fprintf(stderr, "nfsread: no answer within %d s\n", timeout_s);
			return -1;
		}
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			return -1;
		if (rpc_service(rpc, p.revents) < 0) {
			fprintf(stderr, "nfsread: %s\n", rpc_get_error(rpc));
			return -1;
		}
	}
	if (w->status != RPC_STATUS_SUCCESS) {
		fprintf(stderr, "nfsread: rpc error: %s\n", w->data ? (char *)w->data : "?");
		return -1;
	}
	return 0;
}

/* What every callback does first: the call is done, with this status; false
 * when it failed (data: libnfs's error text, for wait_for()). */
static int answered(struct waiter *w, int status, void *data)
{
	w->status = status;
	w->done = 1;
	if (status != RPC_STATUS_SUCCESS) {
		w->data = data;
		return 0;
	}
	return 1;
}

static void connect_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	(void)rpc;
	answered(priv, status, data);
}

static void mnt_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct waiter *w = priv;
	mountres3 *r = data;

	(void)rpc;
	if (!answered(w, status, data))
		return;
	w->mnt = r->fhs_status;
	if (r->fhs_status == MNT3_OK) {
		w->fhlen = r->mountres3_u.mountinfo.fhandle.fhandle3_len;
		memcpy(w->fh, r->mountres3_u.mountinfo.fhandle.fhandle3_val, w->fhlen);
	}
}

static void lookup_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct waiter *w = priv;
	LOOKUP3res *r = data;

	(void)rpc;
	if (!answered(w, status, data))
		return;
	w->nst = r->status;
	if (r->status == NFS3_OK) {
		w->fhlen = r->LOOKUP3res_u.resok.object.data.data_len;
		memcpy(w->fh, r->LOOKUP3res_u.resok.object.data.data_val, w->fhlen);
	}
}

static void read_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct waiter *w = priv;
	READ3res *r = data;

	(void)rpc;
	if (!answered(w, status, data))
		return;
	w->nst = r->status;
	if (r->status == NFS3_OK) {
		w->len = r->READ3res_u.resok.data.data_len;
		if (w->len > sizeof(w->buf))
			w->len = sizeof(w->buf);
		memcpy(w->buf, r->READ3res_u.resok.data.data_val, w->len);
		w->eof = r->READ3res_u.resok.eof;
		w->has_size = r->READ3res_u.resok.file_attributes.attributes_follow;
		w->size = r->READ3res_u.resok.file_attributes.post_op_attr_u.attributes.size;
	}
}

static const char *nfsstat_name(int s)
{
	const char *n = nfsstat3_name(s);

	return n ? n : "NFS3ERR_other";
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static struct rpc_context *rpc;

/* Every exit frees the context, so an ASan build's leak check passes and
 * the exit code (3: an NFS error status) is what the tests see. */
static void destroy_rpc(void)
{
	if (rpc)
		rpc_destroy_context(rpc);
	rpc = NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: nfsread --port P [--mountport M] [--host H]\n"
	                "               (--export PATH --path REL | --fh HEX)\n"
	                "               [--offset N] [--length N] [--rsize N] [--uid U --gid G]\n"
	                "               [--gids a,b,..] [--out FILE] [--print-fh] [--print-reads]\n"
	                "               [--print-sizes] [--timeout S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *export = NULL, *path = NULL, *fhhex = NULL, *out = NULL;
	int port = 0, mountport = 0, print_fh = 0, print_reads = 0, print_sizes = 0, ofd = 1;
	uint32_t nreads = 0, maxgot = 0;
	unsigned long long offset = 0, length = ~0ULL;
	uint32_t rsize = 1 << 20, uid = 0, gid = 0, gids[16], ngids = 0;
	static struct waiter w;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--print-reads") == 0) {
			print_reads = 1;
			continue;
		}
		if (strcmp(a, "--print-sizes") == 0) {
			print_sizes = 1;
			continue;
		}
		if (strcmp(a, "--print-fh") == 0) {
			print_fh = 1;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--port") == 0)
			port = atoi(v);
		else if (strcmp(a, "--mountport") == 0)
			mountport = atoi(v);
		else if (strcmp(a, "--host") == 0)
			host = v;
		else if (strcmp(a, "--export") == 0)
			export = v;
		else if (strcmp(a, "--path") == 0)
			path = v;
		else if (strcmp(a, "--fh") == 0)
			fhhex = v;
		else if (strcmp(a, "--offset") == 0)
			offset = strtoull(v, NULL, 0);
		else if (strcmp(a, "--length") == 0)
			length = strtoull(v, NULL, 0);
		else if (strcmp(a, "--rsize") == 0)
			rsize = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--uid") == 0)
			uid = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--gid") == 0)
			gid = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--gids") == 0) {
			char *copy = strdup(v), *save = NULL;
			for (char *t = strtok_r(copy, ",", &save); t && ngids < 16;
			     t = strtok_r(NULL, ",", &save))
				gids[ngids++] = (uint32_t)strtoul(t, NULL, 0);
			free(copy);
		} else if (strcmp(a, "--out") == 0)
			out = v;
		else if (strcmp(a, "--timeout") == 0)
			timeout_s = atoi(v);
		else
			usage();
	}
	if (port <= 0 || (!fhhex && !(export && path)) || rsize == 0 || rsize > (1 << 20))
		usage();

	rpc = rpc_init_context();
	atexit(destroy_rpc);
	rpc_set_auth(rpc, libnfs_authunix_create("nfsread", uid, gid, ngids, gids));
	memset(&w, 0, sizeof(w));
	if (rpc_connect_async(rpc, host, port, connect_cb, &w) != 0 || wait_for(rpc, &w) != 0)
		return 1;

	if (fhhex) {
		size_t n = strlen(fhhex);
		if (n % 2 || n / 2 > NFS3_FHSIZE || n == 0)
			usage();
		for (size_t i = 0; i < n / 2; i++) {
			int hi = hexval(fhhex[2 * i]), lo = hexval(fhhex[2 * i + 1]);
			if (hi < 0 || lo < 0)
				usage();
			w.fh[i] = (uint8_t)(hi << 4 | lo);
		}
		w.fhlen = (uint32_t)(n / 2);
	} else {
		/* MOUNT on the same port (the proxy serves both) or on its own
		 * connection to --mountport, then LOOKUPs */
		struct rpc_context *mrpc = rpc;
		if (mountport > 0) {
			mrpc = rpc_init_context();
			if (mrpc == NULL)
				return 1;
			rpc_set_auth(mrpc,
			             libnfs_authunix_create("nfsread", uid, gid, ngids, gids));
			w.done = 0;
			if (rpc_connect_async(mrpc, host, mountport, connect_cb, &w) != 0 ||
			    wait_for(mrpc, &w) != 0)
				return 1;
		}
		w.done = 0;
		int mrc = rpc_mount3_mnt_async(mrpc, mnt_cb, (char *)export, &w) != 0 ||
		          wait_for(mrpc, &w) != 0;
		if (mrpc != rpc)
			rpc_destroy_context(mrpc);
		if (mrc)
			return 1;
		if (w.mnt != MNT3_OK) {
			fprintf(stderr, "nfsread: MNT %s: mountstat3 %d\n", export, w.mnt);
			return 3;
		}
		char copy[4096], *save = NULL;
		snprintf(copy, sizeof(copy), "%s", path);
		for (char *name = strtok_r(copy, "/", &save); name;
		     name = strtok_r(NULL, "/", &save)) {
			LOOKUP3args la;
			uint8_t dir[NFS3_FHSIZE];
			memcpy(dir, w.fh, w.fhlen);
			memset(&la, 0, sizeof(la));
			la.what.dir.data.data_len = w.fhlen;
			la.what.dir.data.data_val = (char *)dir;
			la.what.name = name;
			w.done = 0;
			if (rpc_nfs3_lookup_async(rpc, lookup_cb, &la, &w) != 0 ||
			    wait_for(rpc, &w) != 0)
				return 1;
			if (w.nst != NFS3_OK) {
				fprintf(stderr, "nfsread: LOOKUP %s: status %s\n", name,
				        nfsstat_name(w.nst));
				printf("status %s\n", nfsstat_name(w.nst));
				return 3;
			}
		}
	}
	if (print_fh) {
		fprintf(stderr, "fh ");
		for (uint32_t i = 0; i < w.fhlen; i++)
			fprintf(stderr, "%02x", w.fh[i]);
		fprintf(stderr, "\n");
	}
	if (out) {
		ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (ofd < 0) {
			perror(out);
			return 1;
		}
	}
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fhlen = w.fhlen;
	memcpy(fh, w.fh, fhlen);
	while (length > 0) {
		READ3args ra;
		uint32_t want = length < rsize ? (uint32_t)length : rsize;
		memset(&ra, 0, sizeof(ra));
		ra.file.data.data_len = fhlen;
		ra.file.data.data_val = (char *)fh;
		ra.offset = offset;
		ra.count = want;
		w.done = 0;
		if (rpc_nfs3_read_async(rpc, read_cb, &ra, &w) != 0 || wait_for(rpc, &w) != 0)
			return 1;
		if (w.nst != NFS3_OK) {
			fprintf(stderr, "nfsread: READ at %llu: status %s\n", offset,
			        nfsstat_name(w.nst));
			fprintf(ofd == 1 ? stderr : stdout, "status %s\n", nfsstat_name(w.nst));
			return 3;
		}
		if (w.len && write(ofd, w.buf, w.len) != (ssize_t)w.len) {
			perror("write");
			return 1;
		}
		nreads++;
		if (print_sizes && w.has_size)
			fprintf(stderr, "size %llu\n", (unsigned long long)w.size);
		else if (print_sizes)
			fprintf(stderr, "size none\n");
		if (w.len > maxgot)
			maxgot = w.len;
		offset += w.len;
		length -= w.len < length ? w.len : length;
		if (w.eof || w.len == 0)
			break;
	}
	if (print_reads)
		fprintf(stderr, "reads %u max %u\n", nreads, maxgot);
	if (ofd != 1)
		close(ofd);
	return 0;
}
