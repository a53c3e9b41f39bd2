/* proto/procs.c: the procedure table. Every row the wire serves is
 * complete, and the rows say what the switches they replaced said: which
 * calls the duplicate-request cache keeps, which mutate, which the
 * metadata cache may answer, and which handle each call is about. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../proto/proto_int.h"
#include "procs.h"

static int in(uint32_t proc, const uint32_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == proc)
			return 1;
	return 0;
}

static void test_rows_complete(void **state)
{
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		const struct proc_row *r = proc_row(NFS_PROGRAM, p);
		assert_non_null(r);
		assert_non_null(r->name);
		assert_non_null(r->check);
		assert_non_null(r->dec);
		assert_non_null(r->enc);
		assert_non_null(r->send); /* every NFSv3 call can be forwarded */
	}
	for (uint32_t p = 0; p < MOUNT3_NPROCS; p++) {
		const struct proc_row *r = proc_row(MOUNT_PROGRAM, p);
		assert_non_null(r);
		assert_non_null(r->check);
		assert_null(r->send); /* MOUNT is answered by the proxy */
	}
	assert_null(proc_row(NFS_PROGRAM, NFS3_NPROCS));
	assert_null(proc_row(MOUNT_PROGRAM, MOUNT3_NPROCS));
	assert_null(proc_prog(100021)); /* NLM: not served (yet) */
	assert_int_equal(proc_prog(NFS_PROGRAM)->vers, 3);
	assert_int_equal(proc_prog(MOUNT_PROGRAM)->vers, 3);
}

static void test_flags(void **state)
{
	static const uint32_t drc[] = {NFS3_SETATTR, NFS3_CREATE, NFS3_MKDIR,
	                               NFS3_SYMLINK, NFS3_MKNOD,  NFS3_REMOVE,
	                               NFS3_RMDIR,   NFS3_RENAME, NFS3_LINK};
	static const uint32_t cached[] = {NFS3_GETATTR,  NFS3_LOOKUP,  NFS3_ACCESS,
	                                  NFS3_READLINK, NFS3_READDIR, NFS3_READDIRPLUS,
	                                  NFS3_FSSTAT,   NFS3_FSINFO,  NFS3_PATHCONF};
	(void)state;
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		int d = in(p, drc, sizeof(drc) / sizeof(drc[0]));
		assert_int_equal(drc_wanted(NFS_PROGRAM, p), d);
		/* WRITE and COMMIT mutate but are idempotent */
		assert_int_equal(proto_proc_mutates(p), d || p == NFS3_WRITE || p == NFS3_COMMIT);
		assert_int_equal(!!(proc_row(NFS_PROGRAM, p)->flags & PROC_CACHED),
		                 in(p, cached, sizeof(cached) / sizeof(cached[0])));
	}
	for (uint32_t p = 0; p < MOUNT3_NPROCS; p++)
		assert_int_equal(drc_wanted(MOUNT_PROGRAM, p), 0);
	assert_int_equal(drc_wanted(NFS_PROGRAM, NFS3_NPROCS), 0);
	assert_int_equal(proto_proc_mutates(NFS3_NPROCS), 0);
}

static void test_handles(void **state)
{
	union cfs_args a;
	(void)state;
	assert_ptr_equal(proc_fh(proc_row(NFS_PROGRAM, NFS3_LOOKUP), &a), &a.lookup.what.dir);
	assert_ptr_equal(proc_fh(proc_row(NFS_PROGRAM, NFS3_READ), &a), &a.read.file);
	assert_ptr_equal(proc_fh(proc_row(NFS_PROGRAM, NFS3_FSINFO), &a), &a.fsinfo.fsroot);
	/* directory operations: which handle is stale is unknown */
	assert_null(proc_fh(proc_row(NFS_PROGRAM, NFS3_CREATE), &a));
	assert_null(proc_fh(proc_row(NFS_PROGRAM, NFS3_RENAME), &a));
	assert_null(proc_fh(proc_row(NFS_PROGRAM, NFS3_NULL), &a));
	assert_null(proc_fh(proc_row(MOUNT_PROGRAM, MOUNT3_MNT), &a));
	assert_null(proc_fh(NULL, &a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows_complete),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_handles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
