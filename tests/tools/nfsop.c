/* nfsop: one file operation over NFSv3 with libnfs's synchronous API, for
 * tests that change things through the proxy or directly on the server.
 *
 *   nfsop [--uid U --gid G] URL CMD [ARGS]
 *     URL   nfs://HOST/EXPORT?nfsport=N&mountport=M (the export root)
 *     write PATH        stdin becomes the file's content (created/truncated)
 *     overwrite PATH    stdin overwrites the start of PATH, no truncation
 *     append PATH       stdin is appended
 *     cat PATH          the file's bytes to stdout
 *     stat PATH         "size MTIME_S.NS MODE"
 *     ls DIR            the names in DIR, sorted, one per line (no . and ..)
 *     lsl DIR           "name size" per line, sorted
 *     mkdir PATH | rmdir PATH | rm PATH | rename FROM TO | symlink TARGET PATH
 *     chmod OCTAL PATH | chown UID:GID PATH | truncate SIZE PATH
 * Exit 0, or 1 with libnfs's error on stderr. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

static struct nfs_context *nfs;

static int fail(const char *what)
{
	fprintf(stderr, "nfsop: %s: %s\n", what, nfs_get_error(nfs));
	return 1;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int do_write(const char *path, int flags)
{
	struct nfsfh *fh;
	char buf[65536];
	ssize_t n;

	if (nfs_open2(nfs, path, flags, 0644, &fh) != 0)
		return fail(path);
	while ((n = read(0, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			int w = nfs_write(nfs, fh, (uint64_t)(n - off), buf + off);
			if (w <= 0)
				return fail("write");
			off += w;
		}
	}
	if (nfs_fsync(nfs, fh) != 0)
		return fail("fsync");
	nfs_close(nfs, fh);
	return 0;
}

static int do_cat(const char *path)
{
	struct nfsfh *fh;
	char buf[65536];
	int n;

	if (nfs_open(nfs, path, O_RDONLY, &fh) != 0)
		return fail(path);
	while ((n = nfs_read(nfs, fh, sizeof(buf), buf)) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
	if (n < 0)
		return fail("read");
	nfs_close(nfs, fh);
	return 0;
}

static int do_ls(const char *dir, int sizes)
{
	struct nfsdir *d;
	struct nfsdirent *ent;
	char **names = NULL;
	uint64_t *sz = NULL;
	size_t n = 0;

	if (nfs_opendir(nfs, dir, &d) != 0)
		return fail(dir);
	while ((ent = nfs_readdir(nfs, d)) != NULL) {
		if (strcmp(ent->name, ".") == 0 || strcmp(ent->name, "..") == 0)
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		sz = realloc(sz, (n + 1) * sizeof(*sz));
		if (names == NULL || sz == NULL)
			return 1;
		size_t l = strlen(ent->name);
		names[n] = malloc(l + 32);
		if (names[n] == NULL)
			return 1;
		if (sizes)
			snprintf(names[n], l + 32, "%s %llu", ent->name,
				 (unsigned long long)ent->size);
		else
			snprintf(names[n], l + 32, "%s", ent->name);
		n++;
	}
	nfs_closedir(nfs, d);
	if (n > 0) /* an empty listing has no array (qsort's first argument is nonnull) */
		qsort(names, n, sizeof(*names), cmpstr);
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", names[i]);
		free(names[i]);
	}
	free(names);
	free(sz);
	return 0;
}

int main(int argc, char **argv)
{
	struct nfs_url *url;
	int uid = -1, gid = -1, i = 1, rc = 0;

	while (i + 1 < argc && strncmp(argv[i], "--", 2) == 0) {
		if (strcmp(argv[i], "--uid") == 0)
			uid = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--gid") == 0)
			gid = atoi(argv[i + 1]);
		else
			break;
		i += 2;
	}
	if (argc - i < 3) {
		fprintf(stderr, "usage: nfsop [--uid U --gid G] URL CMD ARGS (see the source)\n");
		return 2;
	}
	nfs = nfs_init_context();
	if (nfs == NULL)
		return 1;
	if (uid >= 0)
		nfs_set_uid(nfs, uid);
	if (gid >= 0)
		nfs_set_gid(nfs, gid);
	url = nfs_parse_url_dir(nfs, argv[i]);
	if (url == NULL)
		return fail("url");
	if (nfs_mount(nfs, url->server, url->path) != 0)
		return fail("mount");
	const char *cmd = argv[i + 1], *a1 = argv[i + 2], *a2 = i + 3 < argc ? argv[i + 3] : NULL;
	if (strcmp(cmd, "write") == 0)
		rc = do_write(a1, O_WRONLY | O_CREAT | O_TRUNC);
	else if (strcmp(cmd, "overwrite") == 0)
		rc = do_write(a1, O_WRONLY);
	else if (strcmp(cmd, "append") == 0)
		rc = do_write(a1, O_WRONLY | O_APPEND);
	else if (strcmp(cmd, "cat") == 0)
		rc = do_cat(a1);
	else if (strcmp(cmd, "ls") == 0)
		rc = do_ls(a1, 0);
	else if (strcmp(cmd, "lsl") == 0)
		rc = do_ls(a1, 1);
	else if (strcmp(cmd, "stat") == 0) {
		struct nfs_stat_64 st;
		if (nfs_stat64(nfs, a1, &st) != 0)
			rc = fail(a1);
		else
			printf("%llu %llu.%09llu %llo\n", (unsigned long long)st.nfs_size,
			       (unsigned long long)st.nfs_mtime, (unsigned long long)st.nfs_mtime_nsec,
			       (unsigned long long)(st.nfs_mode & 07777));
	} else if (strcmp(cmd, "mkdir") == 0)
		rc = nfs_mkdir(nfs, a1) ? fail(a1) : 0;
	else if (strcmp(cmd, "rmdir") == 0)
		rc = nfs_rmdir(nfs, a1) ? fail(a1) : 0;
	else if (strcmp(cmd, "rm") == 0)
		rc = nfs_unlink(nfs, a1) ? fail(a1) : 0;
	else if (strcmp(cmd, "rename") == 0 && a2)
		rc = nfs_rename(nfs, a1, a2) ? fail(a1) : 0;
	else if (strcmp(cmd, "symlink") == 0 && a2)
		rc = nfs_symlink(nfs, a1, a2) ? fail(a2) : 0;
	else if (strcmp(cmd, "chmod") == 0 && a2)
		rc = nfs_chmod(nfs, a2, (int)strtol(a1, NULL, 8)) ? fail(a2) : 0;
	else if (strcmp(cmd, "chown") == 0 && a2 && strchr(a1, ':') != NULL)
		rc = nfs_chown(nfs, a2, atoi(a1), atoi(strchr(a1, ':') + 1)) ? fail(a2) : 0;
	else if (strcmp(cmd, "truncate") == 0 && a2)
		rc = nfs_truncate(nfs, a2, strtoull(a1, NULL, 0)) ? fail(a2) : 0;
	else {
		fprintf(stderr, "nfsop: unknown command %s\n", cmd);
		rc = 2;
	}
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	return rc;
}
