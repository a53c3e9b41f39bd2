/* proto/: argument validation and copying, AUTH_SYS parsing, call headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "wire.h"

/* Encodes args with libnfs's own encoder into buf; returns the length. */
static size_t encode(zdrproc_t enc, void *args, char *buf, size_t len)
{
	ZDR z;

	zdrmem_create(&z, buf, (uint32_t)len, ZDR_ENCODE);
	assert_true(enc(&z, args));
	size_t n = zdr_getpos(&z);
	zdr_destroy(&z);
	return n;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A LOOKUP decoded into a request owns copies of the handle and name: the
 * record it came from can be overwritten. */
static void test_lookup_copied(void **state)
{
	char buf[512], fh[20];
	LOOKUP3args a;
	struct cfs_req *req;
	size_t n;

	(void)state;
	memset(fh, 0xab, sizeof(fh));
	memset(&a, 0, sizeof(a));
	a.what.dir.data.data_len = sizeof(fh);
	a.what.dir.data.data_val = fh;
	a.what.name = "hello.txt";
	n = encode((zdrproc_t)zdr_LOOKUP3args, &a, buf, sizeof(buf));
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_LOOKUP, (uint8_t *)buf, n), 0);
	req = proto_req_decode(NFS_PROGRAM, NFS_V3, NFS3_LOOKUP, (uint8_t *)buf, n);
	assert_non_null(req);
	memset(buf, 0, sizeof(buf)); /* the record is gone */
	assert_int_equal(req->args.lookup.what.dir.data.data_len, 20);
	assert_memory_equal(req->args.lookup.what.dir.data.data_val, fh, 20);
	assert_string_equal(req->args.lookup.what.name, "hello.txt");
	proto_req_free(req);
}

/* Names whose length is a multiple of 4 are not NUL-terminated in the
 * record; the decoded copy still must be. */
static void test_name_len_multiple_of_4(void **state)
{
	char buf[512], fh[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	CREATE3args a;
	struct cfs_req *req;
	size_t n;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.where.dir.data.data_len = sizeof(fh);
	a.where.dir.data.data_val = fh;
	a.where.name = "abcd";
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes.mode.set_it = 1;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0640;
	n = encode((zdrproc_t)zdr_CREATE3args, &a, buf, sizeof(buf));
	req = proto_req_decode(NFS_PROGRAM, NFS_V3, NFS3_CREATE, (uint8_t *)buf, n);
	assert_non_null(req);
	memset(buf, 'x', sizeof(buf));
	assert_string_equal(req->args.create.where.name, "abcd");
	assert_int_equal(req->args.create.how.mode, GUARDED);
	assert_int_equal(req->args.create.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode,
			 0640);
	proto_req_free(req);
}

static void test_write_data_copied(void **state)
{
	static char buf[70000], data[65536];
	char fh[32];
	WRITE3args a;
	struct cfs_req *req;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	memset(fh, 3, sizeof(fh));
	memset(&a, 0, sizeof(a));
	a.file.data.data_len = sizeof(fh);
	a.file.data.data_val = fh;
	a.offset = 1ULL << 33;
	a.count = sizeof(data);
	a.stable = FILE_SYNC;
	a.data.data_len = sizeof(data);
	a.data.data_val = data;
	n = encode((zdrproc_t)zdr_WRITE3args, &a, buf, sizeof(buf));
	req = proto_req_decode(NFS_PROGRAM, NFS_V3, NFS3_WRITE, (uint8_t *)buf, n);
	assert_non_null(req);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(req->args.write.offset, 1ULL << 33);
	assert_int_equal(req->args.write.stable, FILE_SYNC);
	assert_int_equal(req->args.write.data.data_len, sizeof(data));
	assert_memory_equal(req->args.write.data.data_val, data, sizeof(data));
	proto_req_free(req);
}

/* Every truncation of valid arguments is refused, never decoded. */
static void test_truncations_refused(void **state)
{
	char buf[512], fh[28];
	RENAME3args a;
	size_t n;

	(void)state;
	memset(fh, 9, sizeof(fh));
	memset(&a, 0, sizeof(a));
	a.from.dir.data.data_len = sizeof(fh);
	a.from.dir.data.data_val = fh;
	a.from.name = "old-name";
	a.to.dir.data.data_len = sizeof(fh);
	a.to.dir.data.data_val = fh;
	a.to.name = "new";
	n = encode((zdrproc_t)zdr_RENAME3args, &a, buf, sizeof(buf));
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_RENAME, (uint8_t *)buf, n), 0);
	for (size_t cut = 0; cut < n; cut++) {
		assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_RENAME, (uint8_t *)buf, cut),
				 -EBADMSG);
		errno = 0;
		assert_null(proto_req_decode(NFS_PROGRAM, NFS_V3, NFS3_RENAME, (uint8_t *)buf, cut));
		assert_int_equal(errno, EBADMSG);
	}
}

static void test_hostile_lengths(void **state)
{
	uint8_t b[64];

	(void)state;
	/* GETATTR: handle length above NFS3_FHSIZE, and with the top bit set */
	memset(b, 0, sizeof(b));
	put32(b, 65);
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_GETATTR, b, sizeof(b)), -EBADMSG);
	put32(b, 0x80000000u);
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_GETATTR, b, sizeof(b)), -EBADMSG);
	/* LOOKUP: good handle, name length 0xFFFFFFFF */
	put32(b, 4);
	put32(b + 8, 0xffffffffu);
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_LOOKUP, b, sizeof(b)), -EBADMSG);
	/* bool that is neither 0 nor 1 in sattr3 */
	memset(b, 0, sizeof(b));
	put32(b, 4);
	put32(b + 8, 7);
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, NFS3_SETATTR, b, sizeof(b)), -EBADMSG);
	/* MNT path longer than MNTPATHLEN */
	put32(b, 1025);
	assert_int_equal(proto_check_args(MOUNT_PROGRAM, MOUNT_V3, MOUNT3_MNT, b, sizeof(b)), -EBADMSG);
	/* unknown procedures */
	assert_int_equal(proto_check_args(NFS_PROGRAM, NFS_V3, 22, b, sizeof(b)), -ENOSYS);
	assert_int_equal(proto_check_args(MOUNT_PROGRAM, MOUNT_V3, 6, b, sizeof(b)), -ENOSYS);
}

static size_t authsys(uint8_t *b, const char *machine, uint32_t uid, uint32_t gid,
		      uint32_t ngids, const uint32_t *gids)
{
	size_t ml = strlen(machine), pos = 0;

	put32(b, 12345);
	put32(b + 4, (uint32_t)ml);
	memset(b + 8, 0, (ml + 3) & ~3u);
	memcpy(b + 8, machine, ml);
	pos = 8 + ((ml + 3) & ~3u);
	put32(b + pos, uid);
	put32(b + pos + 4, gid);
	put32(b + pos + 8, ngids);
	pos += 12;
	for (uint32_t i = 0; i < ngids; i++, pos += 4)
		put32(b + pos, gids[i]);
	return pos;
}

static void test_authsys(void **state)
{
	uint8_t b[512];
	uint32_t gids[17] = {10, 20, 30};
	struct cfs_cred c;
	size_t n;

	(void)state;
	n = authsys(b, "client7", 1000, 100, 3, gids);
	assert_int_equal(proto_parse_authsys(b, (uint32_t)n, &c), 0);
	assert_int_equal(c.flavor, AUTH_UNIX);
	assert_int_equal(c.uid, 1000);
	assert_int_equal(c.gid, 100);
	assert_int_equal(c.ngids, 3);
	assert_int_equal(c.gids[2], 30);
	assert_string_equal(c.machine, "client7");
	/* short body, trailing junk, too many groups, oversized */
	assert_int_equal(proto_parse_authsys(b, (uint32_t)n - 4, &c), -EBADMSG);
	assert_int_equal(proto_parse_authsys(b, (uint32_t)n + 4, &c), -EBADMSG);
	n = authsys(b, "m", 0, 0, 17, gids);
	assert_int_equal(proto_parse_authsys(b, (uint32_t)n, &c), -EBADMSG);
	put32(b + 4, 0xfffffff0u);
	assert_int_equal(proto_parse_authsys(b, 64, &c), -EBADMSG);
	assert_int_equal(proto_parse_authsys(b, 401, &c), -EBADMSG);
}

static void test_cred_equal(void **state)
{
	struct cfs_cred a = {.flavor = AUTH_UNIX, .uid = 1, .gid = 2, .ngids = 2, .gids = {5, 6}};
	struct cfs_cred b = a;

	(void)state;
	strcpy(b.machine, "other-host"); /* the machine name does not matter */
	assert_true(cfs_cred_equal(&a, &b));
	b.gids[1] = 7;
	assert_false(cfs_cred_equal(&a, &b));
	b = a;
	b.uid = 3;
	assert_false(cfs_cred_equal(&a, &b));
}

static void test_call_header(void **state)
{
	uint8_t r[128];
	struct proto_call_hdr h;

	(void)state;
	memset(r, 0, sizeof(r));
	put32(r, 0x1234);	  /* xid */
	put32(r + 4, 0);	  /* CALL */
	put32(r + 8, 2);	  /* rpcvers */
	put32(r + 12, 100003);	  /* prog */
	put32(r + 16, 3);	  /* vers */
	put32(r + 20, 1);	  /* GETATTR */
	put32(r + 24, AUTH_NONE); /* cred */
	put32(r + 28, 0);
	put32(r + 32, AUTH_NONE); /* verf */
	put32(r + 36, 0);
	assert_int_equal(proto_parse_call(r, 40, &h), 0);
	assert_int_equal(h.xid, 0x1234);
	assert_int_equal(h.prog, 100003);
	assert_int_equal(h.proc, 1);
	assert_int_equal(h.args_off, 40);
	/* truncated inside the verifier: still has an xid to answer */
	assert_int_equal(proto_parse_call(r, 36, &h), -EBADMSG);
	assert_true(h.have_xid);
	/* not even an xid and a direction */
	assert_int_equal(proto_parse_call(r, 6, &h), -EBADMSG);
	assert_false(h.have_xid);
	/* a REPLY where a CALL belongs */
	put32(r + 4, 1);
	assert_int_equal(proto_parse_call(r, 40, &h), -EBADMSG);
	assert_int_equal(h.mtype, 1);
	put32(r + 4, 0);
	/* credential longer than RFC 5531 allows */
	put32(r + 28, 401);
	assert_int_equal(proto_parse_call(r, 128, &h), -EBADMSG);
	assert_true(h.bad_cred);
}

static void test_proc_names(void **state)
{
	(void)state;
	assert_string_equal(proto_proc_name(NFS_PROGRAM, NFS3_READDIRPLUS), "READDIRPLUS");
	assert_string_equal(proto_proc_name(NFS_PROGRAM, NFS3_COMMIT), "COMMIT");
	assert_string_equal(proto_proc_name(MOUNT_PROGRAM, MOUNT3_EXPORT), "EXPORT");
	assert_string_equal(proto_proc_name(NFS_PROGRAM, 99), "?");
}

static void mismatch_2_4(struct cfs_req *req, void *arg)
{
	(void)arg;
	proto_reply_prog_mismatch(req, 2, 4);
}

static void mismatch_default(struct cfs_req *req, void *arg)
{
	(void)arg;
	proto_reply_accept_error(req, PROG_MISMATCH);
}

static void too_weak(struct cfs_req *req, void *arg)
{
	(void)arg;
	proto_reply_auth_error(req, AUTH_TOOWEAK);
}

/* Error replies as a client reads them: PROG_MISMATCH carries the range
 * it was given, or the versions the table has for the program (NFS:
 * 3..3), never 0..0; AUTH_ERROR its
 * auth_stat. Nothing follows (no result body). */
static void test_error_replies(void **state)
{
	uint32_t w[16];

	(void)state;
	assert_int_equal(wire_getattr_reply(mismatch_2_4, w, 16), 8);
	assert_int_equal(w[2], MSG_ACCEPTED);
	assert_int_equal(w[3], AUTH_NONE);
	assert_int_equal(w[4], 0);
	assert_int_equal(w[5], PROG_MISMATCH);
	assert_int_equal(w[6], 2);
	assert_int_equal(w[7], 4);
	assert_int_equal(wire_getattr_reply(mismatch_default, w, 16), 8);
	assert_int_equal(w[5], PROG_MISMATCH);
	assert_int_equal(w[6], 3); /* NFS: version 3 only */
	assert_int_equal(w[7], 3);
	assert_int_equal(wire_getattr_reply(too_weak, w, 16), 5);
	assert_int_equal(w[2], MSG_DENIED);
	assert_int_equal(w[3], AUTH_ERROR);
	assert_int_equal(w[4], AUTH_TOOWEAK);
}

static int submitted;

static void count_and_drop(struct cfs_req *req, void *arg)
{
	(void)arg;
	submitted++;
	proto_drop(req);
}

/* A record that is not a CALL ends the connection (proto_handle_record's
 * error): a call behind it on the same connection is never handled, and
 * nothing is sent back; without it, the call is handled. */
static void test_not_a_call_closes(void **state)
{
	uint8_t in[2 * 52], out[256];
	struct cfs_config cfg;
	struct loop *l = loop_new();
	size_t n = 0;

	(void)state;
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 2; i++) {
		uint8_t *r = in + 52 * i;
		put32(r, 0x80000000u | 48);
		put32(r + 4, 0x1234 + (uint32_t)i); /* xid */
		put32(r + 8, 0);                    /* CALL */
		put32(r + 12, 2);
		put32(r + 16, 100003);
		put32(r + 20, 3);
		put32(r + 24, 1); /* GETATTR, AUTH_NONE credential and verifier */
		put32(r + 44, 4); /* a 4-byte handle */
	}
	assert_non_null(l);
	config_defaults(&cfg);
	submitted = 0;
	assert_int_equal(proto_test_exchange(l, &cfg, count_and_drop, NULL, in, sizeof(in), out,
	                                     sizeof(out), &n),
	                 0);
	assert_int_equal(submitted, 2);
	put32(in + 8, 1); /* the first record is a REPLY */
	submitted = 0;
	assert_int_equal(proto_test_exchange(l, &cfg, count_and_drop, NULL, in, sizeof(in), out,
	                                     sizeof(out), &n),
	                 0);
	assert_int_equal(submitted, 0);
	assert_int_equal(n, 0);
	config_free(&cfg);
	loop_free(l);
}

/* Over UDP (one datagram, one call, the reply to its sender): NSM is
 * served, NFS is not there (PROG_UNAVAIL), bad NSM arguments get
 * GARBAGE_ARGS and an unknown NSM procedure PROC_UNAVAIL, as over TCP; a
 * datagram that is not a call gets nothing. */
static uint32_t udp_accept_stat(struct loop *l, const struct cfs_config *cfg, uint32_t prog,
                                uint32_t vers, uint32_t proc, const uint8_t *args, size_t alen,
                                uint32_t mtype, size_t *outlen)
{
	uint8_t in[256], out[256];

	memset(in, 0, sizeof(in));
	put32(in, 0x4242);
	put32(in + 4, mtype);
	put32(in + 8, 2);
	put32(in + 12, prog);
	put32(in + 16, vers);
	put32(in + 20, proc); /* AUTH_NONE credential and verifier: zeros */
	if (alen)
		memcpy(in + 40, args, alen);
	assert_int_equal(proto_test_datagram(l, cfg, count_and_drop, NULL, in, 40 + alen, out,
	                                     sizeof(out), outlen),
	                 0);
	if (*outlen < 24)
		return 0xffffffffu;
	assert_int_equal(get32(out), 0x4242); /* the xid, no record mark */
	assert_int_equal(get32(out + 4), 1);  /* REPLY */
	return get32(out + 20);
}

static void test_udp(void **state)
{
	static const uint8_t notify[] = {0, 0, 0, 2, 'h', '1', 0, 0, 0, 0, 0, 3};
	static const uint8_t too_long[] = {0, 0, 0x10, 0x01}; /* a 4097-byte mon_name */
	struct cfs_config cfg;
	struct loop *l = loop_new();
	size_t n;

	(void)state;
	config_defaults(&cfg);
	submitted = 0;
	assert_int_equal(udp_accept_stat(l, &cfg, 100024, 1, 6, notify, sizeof(notify), 0, &n),
	                 0xffffffffu); /* taken: dropped by the stand-in, no reply */
	assert_int_equal(submitted, 1);
	assert_int_equal(udp_accept_stat(l, &cfg, 100003, 3, 0, NULL, 0, 0, &n), PROG_UNAVAIL);
	assert_int_equal(udp_accept_stat(l, &cfg, 100005, 3, 0, NULL, 0, 0, &n), PROG_UNAVAIL);
	assert_int_equal(udp_accept_stat(l, &cfg, 100024, 1, 1, too_long, sizeof(too_long), 0, &n),
	                 GARBAGE_ARGS);
	assert_int_equal(udp_accept_stat(l, &cfg, 100024, 1, 7, NULL, 0, 0, &n), PROC_UNAVAIL);
	assert_int_equal(udp_accept_stat(l, &cfg, 100024, 2, 0, NULL, 0, 0, &n), PROG_MISMATCH);
	assert_int_equal(udp_accept_stat(l, &cfg, 100024, 1, 0, NULL, 0, 1, &n), 0xffffffffu);
	assert_int_equal(n, 0); /* not a call: nothing sent */
	assert_int_equal(submitted, 1);
	config_free(&cfg);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_udp),
	    cmocka_unit_test(test_lookup_copied),     cmocka_unit_test(test_name_len_multiple_of_4),
	    cmocka_unit_test(test_write_data_copied), cmocka_unit_test(test_truncations_refused),
	    cmocka_unit_test(test_hostile_lengths),   cmocka_unit_test(test_authsys),
	    cmocka_unit_test(test_cred_equal),        cmocka_unit_test(test_call_header),
	    cmocka_unit_test(test_proc_names),        cmocka_unit_test(test_error_replies),
	    cmocka_unit_test(test_not_a_call_closes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
