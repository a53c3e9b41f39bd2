/* The store's unit-test fixture (test_store, test_fhmap): the parameters of
 * a small cache and the removal of a scratch tree. */
#ifndef CFS_TEST_STORE_FX_H
#define CFS_TEST_STORE_FX_H

#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

#endif
