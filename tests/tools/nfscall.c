/* nfscall: one NFSv3 call, made exactly as asked, and what came back: for
 * tests that need a call no file API makes (a LOOKUP below a regular file,
 * a 300-byte name, a GETATTR of a handle kept after its file went).
 *
 *   nfscall --port P [--mountport M] [--host H] --export PATH [--uid U --gid G]
 *           [--timeout S] [--pause MS] (--fh HEX | --path REL) CALL [NAME]
 *     --path REL  the object the call is about: REL below the export,
 *                 walked with LOOKUPs first ("" or "." is the export root)
 *     --pause MS  wait that long between the walk and the call (on the
 *                 same connection)
 *     --fh HEX    ... or that handle (from --print-fh of nfsread or here)
 *     CALL        getattr | lookup NAME | access | fh (print the handle) |
 *                 write N (one FILE_SYNC WRITE of N zero bytes at offset 0,
 *                 whatever the server's wtmax; prints "count C") |
 *                 setsize N (SETATTR of the size) | readdir | readdirplus
 *                 (the first page; prints "entries N", . and .. included) |
 *                 mkdir NAME | remove NAME | fsinfo (prints "rtmax N wtmax N") |
 *                 fsstat | pathconf (prints "name_max N")
 *     --dircount N, --maxcount N  the counts of readdirplus [8192, 65536]
 *                 (--maxcount is readdir's count [8192])
 *     NAME        a name, or @N for a name of N 'x' bytes
 * Prints one line: "status NFS3_OK", "status NFS3ERR_STALE", ... for an NFS
 * answer (with "fh HEX" lines for lookup/mkdir/fh, "nlink N" and
 * "size N mode OCTAL" for getattr), or "rpc-error TEXT" when the call got an RPC-level error
 * (libnfs's text). Exit: 0 an NFS answer (any status), 4 an RPC-level
 * error, 1 no answer or a set-up failure, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs3call.h"
#include "nfsnames.h"

static int timeout_ms = 30000;

static void usage(void)
{
	fprintf(stderr, "usage: nfscall --port P [--mountport M] [--host H] --export PATH "
	                "[--uid U --gid G] [--timeout S] [--pause MS] [--dircount N] [--maxcount N] "
	                "(--fh HEX | --path REL) "
	                "getattr|lookup NAME|access|fh|"
	                "write N|setsize N|readdir|readdirplus|mkdir NAME|remove NAME|fsinfo|"
	                "fsstat|pathconf\n");
	exit(2);
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int parse_fh(const char *hex, struct fh *fh)
{
	size_t n = strlen(hex);

	if (n == 0 || n % 2 || n / 2 > NFS3_FHSIZE)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		fh->data[i] = (unsigned char)(hi << 4 | lo);
	}
	fh->len = (uint32_t)(n / 2);
	return 0;
}

static void print_fh(const char *what, const struct fh *fh)
{
	printf("%s ", what);
	for (uint32_t i = 0; i < fh->len; i++)
		printf("%02x", fh->data[i]);
	printf("\n");
}

/* Waits for c; 0 answered (c->status tells how), -1 no answer. */
static int wait_call(struct rpc_context *rpc, struct call *c, const char *what)
{
	enum wait_end w = call_wait(rpc, c, timeout_ms);

	if (w != WAIT_DONE) {
		fprintf(stderr, "nfscall: %s: %s\n", what,
			w == WAIT_NOREPLY ? "no answer" : rpc_get_error(rpc));
		return -1;
	}
	return 0;
}

/* An NFS-level result line (and 0), or the RPC-level error line (and 4). */
static int report(const struct call *c, const struct res *r)
{
	if (c->status != RPC_STATUS_SUCCESS) {
		printf("rpc-error %s\n", c->err[0] ? c->err : "?");
		return 4;
	}
	const char *n = nfsstat3_name(r->stat);
	if (n)
		printf("status %s\n", n);
	else
		printf("status %d\n", r->stat);
	return 0;
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *export = NULL, *path = NULL, *fhhex = NULL;
	int port = 0, mountport = 0, uid = -1, gid = -1, pause_ms = 0;
	long dircount = -1, maxcount = -1;
	struct rpc_context *rpc;
	struct call c;
	struct res r;
	struct fh obj;
	int i, rc;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--port") == 0)
			port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--mountport") == 0)
			mountport = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--host") == 0)
			host = argv[i + 1];
		else if (strcmp(argv[i], "--export") == 0)
			export = argv[i + 1];
		else if (strcmp(argv[i], "--path") == 0)
			path = argv[i + 1];
		else if (strcmp(argv[i], "--fh") == 0)
			fhhex = argv[i + 1];
		else if (strcmp(argv[i], "--uid") == 0)
			uid = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--gid") == 0)
			gid = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--timeout") == 0)
			timeout_ms = atoi(argv[i + 1]) * 1000;
		else if (strcmp(argv[i], "--pause") == 0)
			pause_ms = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--dircount") == 0)
			dircount = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--maxcount") == 0)
			maxcount = atol(argv[i + 1]);
		else
			usage();
	}
	if (i >= argc || port <= 0 || export == NULL || (path == NULL) == (fhhex == NULL))
		usage();
	const char *callname = argv[i];
	const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
	if (mountport <= 0)
		mountport = port;

	/* the export's root handle, from MOUNT, then the object */
	if (mount_root("nfscall", host, mountport, export, timeout_ms, &obj) != 0)
		return 1;
	rpc = connect_nfs("nfscall", host, port, uid, gid, timeout_ms);
	if (rpc == NULL)
		return 1;
	if (fhhex) {
		if (parse_fh(fhhex, &obj) != 0) {
			fprintf(stderr, "nfscall: bad --fh\n");
			return 2;
		}
	} else if (walk_path("nfscall", rpc, &obj, path, timeout_ms) != 0) {
		return 1;
	}
	if (pause_ms > 0)
		usleep((useconds_t)pause_ms * 1000);

	memset(&r, 0, sizeof(r));
	call_prep(&c, &r);
	if (strcmp(callname, "fh") == 0) {
		print_fh("fh", &obj);
		/* destroyed here too: LeakSanitizer's exit would lose stdout */
		rpc_destroy_context(rpc);
		return 0;
	} else if (strcmp(callname, "getattr") == 0) {
		rc = send_getattr(rpc, &c, &obj);
	} else if (strcmp(callname, "write") == 0 && arg) {
		long n = atol(arg);
		static unsigned char zeros[1 << 20];
		if (n <= 0 || n > (long)sizeof(zeros))
			usage();
		rc = send_write(rpc, &c, &obj, 0, zeros, (uint32_t)n, FILE_SYNC);
	} else if (strcmp(callname, "setsize") == 0 && arg) {
		sattr3 sa;
		memset(&sa, 0, sizeof(sa));
		sa.size.set_it = 1;
		sa.size.set_size3_u.size = strtoull(arg, NULL, 0);
		rc = send_setattr(rpc, &c, &obj, &sa, NULL);
	} else if (strcmp(callname, "readdir") == 0) {
		static const unsigned char verf[8];
		rc = send_readdir(rpc, &c, &obj, 0, verf, maxcount >= 0 ? (uint32_t)maxcount : 8192);
	} else if (strcmp(callname, "readdirplus") == 0) {
		static const unsigned char verf[8];
		rc = send_readdirplus(rpc, &c, &obj, 0, verf, dircount >= 0 ? (uint32_t)dircount : 8192,
		                      maxcount >= 0 ? (uint32_t)maxcount : 65536);
	} else if (strcmp(callname, "mkdir") == 0 && arg) {
		rc = send_mkdir(rpc, &c, &obj, arg, 0755);
	} else if (strcmp(callname, "remove") == 0 && arg) {
		rc = send_remove(rpc, &c, &obj, arg);
	} else if (strcmp(callname, "fsinfo") == 0) {
		rc = send_fsinfo(rpc, &c, &obj);
	} else if (strcmp(callname, "fsstat") == 0) {
		rc = send_fsstat(rpc, &c, &obj);
	} else if (strcmp(callname, "pathconf") == 0) {
		rc = send_pathconf(rpc, &c, &obj);
	} else if (strcmp(callname, "access") == 0) {
		rc = send_access(rpc, &c, &obj, ACCESS3_READ);
	} else if (strcmp(callname, "lookup") == 0 && arg) {
		char name[4097];
		if (arg[0] == '@') {
			int n = atoi(arg + 1);
			if (n <= 0 || n >= (int)sizeof(name))
				usage();
			memset(name, 'x', (size_t)n);
			name[n] = 0;
		} else {
			snprintf(name, sizeof(name), "%s", arg);
		}
		rc = send_lookup(rpc, &c, &obj, name);
	} else {
		usage();
	}
	if (rc != 0 || wait_call(rpc, &c, callname) != 0)
		return 1;
	rc = report(&c, &r);
	if (rc == 0 && r.stat == NFS3_OK &&
	    (strcmp(callname, "lookup") == 0 || strcmp(callname, "mkdir") == 0) && r.has_fh)
		print_fh("fh", &r.fh);
	if (rc == 0 && r.stat == NFS3_OK && strcmp(callname, "getattr") == 0 && r.has_attr) {
		printf("nlink %u\n", r.attr.nlink);
		printf("size %llu mode %o\n", (unsigned long long)r.attr.size, r.attr.mode & 07777);
	}
	if (rc == 0 && r.stat == NFS3_OK && strncmp(callname, "readdir", 7) == 0)
		printf("entries %zu\n", r.nents);
	if (rc == 0 && r.stat == NFS3_OK && strcmp(callname, "write") == 0)
		printf("count %u\n", r.count);
	if (rc == 0 && r.stat == NFS3_OK && strcmp(callname, "access") == 0)
		printf("access 0x%x\n", r.access);
	if (rc == 0 && r.stat == NFS3_OK && strcmp(callname, "fsinfo") == 0)
		printf("rtmax %u wtmax %u\n", r.fsinfo.rtmax, r.fsinfo.wtmax);
	if (rc == 0 && r.stat == NFS3_OK && strcmp(callname, "pathconf") == 0)
		printf("name_max %u\n", r.pathconf.name_max);
	res_free(&r);
	rpc_destroy_context(rpc);
	return rc;
}
