/* The store's unit-test fixture (test_store, test_fhmap): the parameters of
 * a small cache and the removal of a scratch tree. */
#ifndef CFS_TEST_STORE_FX_H
#define CFS_TEST_STORE_FX_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/* A small cache in dir for identity: 64 KiB chunks and inline values,
 * thresholds 10/7/3 % for blocks and files, a 256 MiB map. */
static inline void store_fx_params(struct store_params *p, const char *dir, const char *identity)
{
	memset(p, 0, sizeof(*p));
	p->dir = dir;
	p->identity = identity;
	p->chunk_size = 64 << 10;
	p->inline_max = 64 << 10;
	p->brun = 10;
	p->bcull = 7;
	p->bstop = 3;
	p->frun = 10;
	p->fcull = 7;
	p->fstop = 3;
	p->map_size = 256 << 20;
}

static inline int store_fx_rm_one(const char *path, const struct stat *st, int flag,
                                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The scratch tree root and everything in it, removed. */
static inline void store_fx_rm(const char *root)
{
	nftw(root, store_fx_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The log (stderr) between cap_begin() and cap_end() goes to buf, through a
 * file in the scratch tree root (cmocka's assert_true: include cmocka.h
 * first). */
struct cap {
	int saved, fd;
	char *buf;
	size_t len;
};

static inline void cap_begin(struct cap *k, const char *root, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/stderr", root);
	fflush(stderr);
	k->saved = dup(2);
	k->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(k->fd >= 0);
	unlink(path);
	dup2(k->fd, 2);
	k->buf = buf;
	k->len = len;
}

/* stderr back; the captured text, NUL-terminated, in buf (returned) */
static inline const char *cap_end(struct cap *k)
{
	ssize_t n;

	fflush(stderr);
	dup2(k->saved, 2);
	close(k->saved);
	n = pread(k->fd, k->buf, k->len - 1, 0);
	k->buf[n > 0 ? n : 0] = '\0';
	close(k->fd);
	return k->buf;
}

#endif
