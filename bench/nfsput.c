/* nfsput: copies part of a local tree onto an NFSv3 export (libnfs 4.0
 * high-level API, one connection). The bench uses it to write its data set
 * into an upstream it cannot reach as a directory: the kernel nfsd in the
 * qemu guest (bench.sh --upstream knfsd), whose export is an ext4 disk in
 * the guest and whose host has no kernel NFS client.
 *
 *   nfsput URL LOCALDIR NAME...
 *     URL       nfs://HOST/EXPORT?nfsport=N&mountport=M (the export root)
 *     NAME      a file, directory or symlink in LOCALDIR, copied to the same
 *               relative path on the export; directories recursively
 *
 * Regular files are written from offset 0 in 1 MiB pieces (libnfs splits a
 * piece into WRITEs of the server's wtmax, in flight together) and closed,
 * which COMMITs them: when nfsput returns, the bytes are on the server's
 * disk and in its page cache. Directories and files keep their permission
 * bits; symlinks their target; anything else (fifos, devices) is refused.
 * Names are created in readdir order of LOCALDIR, parents before children.
 *
 * At the end it creates, stats and removes ".nfsput-clock" to compare the
 * server's clock with ours (cachefsd's fresh_guard compares a file's ctime
 * with its own clock: the caller waits until the copy is old enough).
 * stdout gets one line:
 *   files=N dirs=N symlinks=N bytes=N seconds=S skew_ms=M
 * (skew = server clock minus ours, ms). Exit: 0 ok, 1 error (libnfs's
 * message on stderr, naming the path), 2 usage. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

#define PIECE (1024 * 1024)

struct put {
	struct nfs_context *nfs;
	char *buf; /* PIECE bytes, owned */
	unsigned long long files, dirs, symlinks, bytes;
};

static int put_fail(struct put *p, const char *what, const char *path)
{
	fprintf(stderr, "nfsput: %s %s: %s\n", what, path, nfs_get_error(p->nfs));
	return -EIO;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* put_file: LOCAL's bytes into the new (or truncated) file REMOTE */
static int put_file(struct put *p, const char *local, const char *remote, mode_t mode)
{
	struct nfsfh *fh = NULL;
	int fd, rc = 0;
	ssize_t n;

	fd = open(local, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "nfsput: open %s: %s\n", local, strerror(errno));
		return -errno;
	}
	if (nfs_open2(p->nfs, remote, O_WRONLY | O_CREAT | O_TRUNC, (int)(mode & 07777), &fh) !=
	    0) {
		rc = put_fail(p, "create", remote);
		goto out;
	}
	while ((n = read(fd, p->buf, PIECE)) > 0) {
		for (ssize_t off = 0; off < n;) {
			int w = nfs_write(p->nfs, fh, (uint64_t)(n - off), p->buf + off);
			if (w <= 0) {
				rc = put_fail(p, "write", remote);
				goto out;
			}
			off += w;
			p->bytes += (unsigned long long)w;
		}
	}
	if (n < 0) {
		rc = -errno;
		fprintf(stderr, "nfsput: read %s: %s\n", local, strerror(errno));
		goto out;
	}
	p->files++;
out:
	/* close COMMITs the unstable WRITEs */
	if (fh != NULL && nfs_close(p->nfs, fh) != 0 && rc == 0)
		rc = put_fail(p, "close", remote);
	close(fd);
	return rc;
}

/* put_tree: LOCAL (any kind nfsput copies) to REMOTE, recursively */
static int put_tree(struct put *p, const char *local, const char *remote)
{
	struct stat st;
	DIR *d = NULL;
	struct dirent *e;
	int rc = 0;

	if (lstat(local, &st) != 0) {
		fprintf(stderr, "nfsput: %s: %s\n", local, strerror(errno));
		return -errno;
	}
	if (S_ISREG(st.st_mode))
		return put_file(p, local, remote, st.st_mode);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(local, target, sizeof(target) - 1);
		if (n < 0) {
			fprintf(stderr, "nfsput: readlink %s: %s\n", local, strerror(errno));
			return -errno;
		}
		target[n] = '\0';
		if (nfs_symlink(p->nfs, target, remote) != 0)
			return put_fail(p, "symlink", remote);
		p->symlinks++;
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "nfsput: %s: not a file, directory or symlink\n", local);
		return -EINVAL;
	}
	if (nfs_mkdir2(p->nfs, remote, (int)(st.st_mode & 07777)) != 0)
		return put_fail(p, "mkdir", remote);
	p->dirs++;
	d = opendir(local);
	if (d == NULL) {
		fprintf(stderr, "nfsput: opendir %s: %s\n", local, strerror(errno));
		return -errno;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		char l[PATH_MAX], r[PATH_MAX];
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(l, sizeof(l), "%s/%s", local, e->d_name) >= sizeof(l) ||
		    (size_t)snprintf(r, sizeof(r), "%s/%s", remote, e->d_name) >= sizeof(r)) {
			fprintf(stderr, "nfsput: %s/%s: path too long\n", local, e->d_name);
			rc = -ENAMETOOLONG;
			break;
		}
		rc = put_tree(p, l, r);
	}
	closedir(d);
	return rc;
}

/* clock_skew_ms: the server's mtime of a file created now, minus the middle
 * of our clock around its creation */
static int clock_skew_ms(struct put *p, long *skew_ms)
{
	const char *probe = "/.nfsput-clock";
	struct nfsfh *fh;
	struct nfs_stat_64 st;
	double t0, t1, m;
	int rc;

	t0 = now_s();
	if (nfs_creat(p->nfs, probe, 0644, &fh) != 0)
		return put_fail(p, "create", probe);
	nfs_close(p->nfs, fh);
	t1 = now_s();
	rc = nfs_stat64(p->nfs, probe, &st);
	if (nfs_unlink(p->nfs, probe) != 0 && rc == 0)
		return put_fail(p, "remove", probe);
	if (rc != 0)
		return put_fail(p, "stat", probe);
	m = (double)st.nfs_mtime + (double)st.nfs_mtime_nsec / 1e9;
	*skew_ms = (long)((m - (t0 + t1) / 2) * 1000);
	return 0;
}

int main(int argc, char **argv)
{
	struct put p = {0};
	struct nfs_url *url = NULL;
	double t0;
	long skew = 0;
	int rc = 1;

	if (argc < 4) {
		fprintf(stderr, "usage: nfsput URL LOCALDIR NAME... (see the source)\n");
		return 2;
	}
	p.buf = malloc(PIECE);
	p.nfs = nfs_init_context();
	if (p.buf == NULL || p.nfs == NULL) {
		fprintf(stderr, "nfsput: out of memory\n");
		goto out;
	}
	url = nfs_parse_url_dir(p.nfs, argv[1]);
	if (url == NULL) {
		put_fail(&p, "url", argv[1]);
		goto out;
	}
	if (nfs_mount(p.nfs, url->server, url->path) != 0) {
		put_fail(&p, "mount", argv[1]);
		goto out;
	}
	t0 = now_s();
	for (int i = 3; i < argc; i++) {
		char l[PATH_MAX], r[PATH_MAX];
		if ((size_t)snprintf(l, sizeof(l), "%s/%s", argv[2], argv[i]) >= sizeof(l) ||
		    (size_t)snprintf(r, sizeof(r), "/%s", argv[i]) >= sizeof(r)) {
			fprintf(stderr, "nfsput: %s: path too long\n", argv[i]);
			goto out;
		}
		if (put_tree(&p, l, r) != 0)
			goto out;
	}
	double secs = now_s() - t0;
	if (clock_skew_ms(&p, &skew) != 0)
		goto out;
	printf("files=%llu dirs=%llu symlinks=%llu bytes=%llu seconds=%.3f skew_ms=%ld\n", p.files,
	       p.dirs, p.symlinks, p.bytes, secs, skew);
	rc = 0;
out:
	if (url != NULL)
		nfs_destroy_url(url);
	if (p.nfs != NULL)
		nfs_destroy_context(p.nfs);
	free(p.buf);
	return rc;
}
