/* The NFSv4.0 upstream's pure parts (cachefsd/upstream/nfs4.c), no server:
 * nfsstat4 -> nfsstat3, owner strings -> ids, fattr4 -> fattr3 (and the
 * settable attributes back), the COMPOUND each v3 call becomes (and that
 * libnfs encodes it), answers turned into v3 results: READDIRPLUS with "."
 * and "..", pages cut to the client's maxcount, failures with their
 * post-op attributes, READ, ACCESS, the change attribute as the token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "nfs4up.h"

/* --- an XDR attribute list, built by hand --------------------------------- */

struct ab {
	char buf[2048];
	size_t n;
	uint32_t mask[3];
	int nwords;
};

static void p32(struct ab *b, uint32_t v)
{
	unsigned char *q = (unsigned char *)b->buf + b->n;
	q[0] = (unsigned char)(v >> 24);
	q[1] = (unsigned char)(v >> 16);
	q[2] = (unsigned char)(v >> 8);
	q[3] = (unsigned char)v;
	b->n += 4;
}

static void p64(struct ab *b, uint64_t v)
{
	p32(b, (uint32_t)(v >> 32));
	p32(b, (uint32_t)v);
}

static void pstr(struct ab *b, const char *s, uint32_t len)
{
	p32(b, len);
	memset(b->buf + b->n, 0, (len + 3) & ~3u);
	memcpy(b->buf + b->n, s, len);
	b->n += (len + 3) & ~3u;
}

static void bit(struct ab *b, int a)
{
	b->mask[a / 32] |= 1u << (a % 32);
	if (a / 32 + 1 > b->nwords)
		b->nwords = a / 32 + 1;
}

static void fattr_of(struct ab *b, fattr4 *f)
{
	f->attrmask.bitmap4_len = (u_int)(b->nwords ? b->nwords : 2);
	f->attrmask.bitmap4_val = b->mask;
	f->attr_vals.attrlist4_len = (u_int)b->n;
	f->attr_vals.attrlist4_val = b->buf;
}

static const char FH_A[] = "handle-of-the-file-a-0123456789abcdef-longer-than-sixty-four-bytes-xyz";

/* The attributes of a file as ganesha sends them for a GETATTR of N4_ATTRS
 * (+ filehandle when fh), in bitmap order. */
static void file_attrs(struct ab *b, uint64_t fileid, uint64_t change, uint64_t size,
                       const char *owner, const char *group, int fh)
{
	memset(b, 0, sizeof(*b));
	bit(b, FATTR4_TYPE);
	p32(b, NF4REG);
	bit(b, FATTR4_CHANGE);
	p64(b, change);
	bit(b, FATTR4_SIZE);
	p64(b, size);
	bit(b, FATTR4_FSID);
	p64(b, 7);
	p64(b, 0);
	if (fh) {
		bit(b, FATTR4_FILEHANDLE);
		pstr(b, FH_A, (uint32_t)strlen(FH_A));
	}
	bit(b, FATTR4_FILEID);
	p64(b, fileid);
	bit(b, FATTR4_MODE);
	p32(b, 0100644); /* type bits in mode4 are not v4's: masked off */
	bit(b, FATTR4_NUMLINKS);
	p32(b, 2);
	bit(b, FATTR4_OWNER);
	pstr(b, owner, (uint32_t)strlen(owner));
	bit(b, FATTR4_OWNER_GROUP);
	pstr(b, group, (uint32_t)strlen(group));
	bit(b, FATTR4_RAWDEV);
	p32(b, 8);
	p32(b, 1);
	bit(b, FATTR4_SPACE_USED);
	p64(b, 4096);
	bit(b, FATTR4_TIME_ACCESS);
	p64(b, 1000);
	p32(b, 1);
	bit(b, FATTR4_TIME_METADATA);
	p64(b, 3000);
	p32(b, 3);
	bit(b, FATTR4_TIME_MODIFY);
	p64(b, 2000);
	p32(b, 2);
}

/* --- status and owners ------------------------------------------------------ */

static int is_v3_code(int s)
{
	static const int ok[] = {
	    NFS3_OK,           NFS3ERR_PERM,        NFS3ERR_NOENT,
	    NFS3ERR_IO,        NFS3ERR_NXIO,        NFS3ERR_ACCES,
	    NFS3ERR_EXIST,     NFS3ERR_XDEV,        NFS3ERR_NODEV,
	    NFS3ERR_NOTDIR,    NFS3ERR_ISDIR,       NFS3ERR_INVAL,
	    NFS3ERR_FBIG,      NFS3ERR_NOSPC,       NFS3ERR_ROFS,
	    NFS3ERR_MLINK,     NFS3ERR_NAMETOOLONG, NFS3ERR_NOTEMPTY,
	    NFS3ERR_DQUOT,     NFS3ERR_STALE,       NFS3ERR_REMOTE,
	    NFS3ERR_BADHANDLE, NFS3ERR_NOT_SYNC,    NFS3ERR_BAD_COOKIE,
	    NFS3ERR_NOTSUPP,   NFS3ERR_TOOSMALL,    NFS3ERR_SERVERFAULT,
	    NFS3ERR_BADTYPE,   NFS3ERR_JUKEBOX,
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (ok[i] == s)
			return 1;
	return 0;
}

static void test_stat_map(void **state)
{
	(void)state;
	/* the same condition keeps its code */
	assert_int_equal(n4_stat3(NFS4_OK), NFS3_OK);
	assert_int_equal(n4_stat3(NFS4ERR_NOENT), NFS3ERR_NOENT);
	assert_int_equal(n4_stat3(NFS4ERR_ACCESS), NFS3ERR_ACCES);
	assert_int_equal(n4_stat3(NFS4ERR_STALE), NFS3ERR_STALE);
	assert_int_equal(n4_stat3(NFS4ERR_NOTDIR), NFS3ERR_NOTDIR);
	assert_int_equal(n4_stat3(NFS4ERR_BAD_COOKIE), NFS3ERR_BAD_COOKIE);
	assert_int_equal(n4_stat3(NFS4ERR_TOOSMALL), NFS3ERR_TOOSMALL);
	assert_int_equal(n4_stat3(NFS4ERR_NAMETOOLONG), NFS3ERR_NAMETOOLONG);
	/* the nearest for what v3 lacks */
	assert_int_equal(n4_stat3(NFS4ERR_DELAY), NFS3ERR_JUKEBOX);
	assert_int_equal(n4_stat3(NFS4ERR_GRACE), NFS3ERR_JUKEBOX);
	assert_int_equal(n4_stat3(NFS4ERR_FHEXPIRED), NFS3ERR_STALE);
	assert_int_equal(n4_stat3(NFS4ERR_SYMLINK), NFS3ERR_NOTDIR);
	assert_int_equal(n4_stat3(NFS4ERR_SHARE_DENIED), NFS3ERR_ACCES);
	assert_int_equal(n4_stat3(NFS4ERR_OPENMODE), NFS3ERR_ACCES);
	assert_int_equal(n4_stat3(NFS4ERR_BADNAME), NFS3ERR_INVAL);
	assert_int_equal(n4_stat3(NFS4ERR_NOFILEHANDLE), NFS3ERR_BADHANDLE);
	assert_int_equal(n4_stat3(NFS4ERR_WRONGSEC), NFS3ERR_PERM);
	assert_int_equal(n4_stat3(NFS4ERR_BADZDR), NFS3ERR_SERVERFAULT);
	assert_int_equal(n4_stat3(99999), NFS3ERR_SERVERFAULT);
	assert_int_equal(n4_stat3(-1), NFS3ERR_SERVERFAULT);
	/* every v4.0 code lands on a real v3 code */
	for (int s = 0; s <= NFS4ERR_CB_PATH_DOWN; s++)
		assert_true(is_v3_code(n4_stat3(s)));

	assert_int_equal(n4_action_of(NFS3_GETATTR, NFS4ERR_DELAY), N4_DELAY);
	assert_int_equal(n4_action_of(NFS3_READ, NFS4ERR_GRACE), N4_DELAY);
	assert_int_equal(n4_action_of(NFS3_LOOKUP, NFS4ERR_STALE_CLIENTID), N4_RECOVER);
	assert_int_equal(n4_action_of(NFS3_READ, NFS4ERR_EXPIRED), N4_RECOVER);
	assert_int_equal(n4_action_of(NFS3_READ, NFS4ERR_BAD_STATEID), N4_STATEID);
	assert_int_equal(n4_action_of(NFS3_READ, NFS4ERR_OPENMODE), N4_STATEID);
	assert_int_equal(n4_action_of(NFS3_GETATTR, NFS4ERR_BAD_STATEID), N4_ANSWER);
	assert_int_equal(n4_action_of(NFS3_READ, NFS4ERR_ACCESS), N4_ANSWER);
	assert_int_equal(n4_action_of(NFS3_READ, NFS4_OK), N4_ANSWER);
}

static void test_owner(void **state)
{
	uint32_t id, nobody;
	struct passwd *pw = getpwnam("nobody");

	(void)state;
	nobody = pw ? (uint32_t)pw->pw_uid : 65534;
	assert_int_equal(n4_owner_to_id("1234", 4, 0, "", &id), 0);
	assert_int_equal(id, 1234);
	assert_int_equal(n4_owner_to_id("1234xyz", 4, 0, "", &id), 0); /* not NUL-terminated */
	assert_int_equal(id, 1234);
	assert_int_equal(n4_owner_to_id("4294967295", 10, 1, NULL, &id), 0);
	assert_int_equal(id, 4294967295u);
	/* by name, any domain when none is configured */
	assert_int_equal(n4_owner_to_id("root", 4, 0, "", &id), 1);
	assert_int_equal(id, 0);
	assert_int_equal(n4_owner_to_id("root@localdomain", 16, 0, NULL, &id), 1);
	assert_int_equal(id, 0);
	assert_int_equal(n4_owner_to_id("root@Example.COM", 16, 1, "example.com", &id), 1);
	assert_int_equal(id, 0);
	/* nobody: another domain, unknown names, nonsense */
	id = 7;
	assert_int_equal(n4_owner_to_id("root@other.org", 14, 0, "example.com", &id), -ENOENT);
	assert_int_equal(id, nobody);
	assert_int_equal(n4_owner_to_id("no-such-user-4711@x", 19, 0, "", &id), -ENOENT);
	assert_int_equal(id, nobody);
	assert_int_equal(n4_owner_to_id("", 0, 0, "", &id), -ENOENT);
	assert_int_equal(n4_owner_to_id("@x", 2, 0, "", &id), -ENOENT);
	assert_int_equal(n4_owner_to_id("4294967296", 10, 0, "", &id), -ENOENT);
	assert_int_equal(n4_owner_to_id("ro\0ot", 5, 0, "", &id), -ENOENT);
}

/* The owner-name cache: one NSS lookup per name per TTL, not one per
 * owner in every answer; unknown names for the shorter negative TTL. */
static void test_idmap_cache(void **state)
{
	struct n4_idmap_stats a, b;
	uint32_t id = 7;

	(void)state;
	n4_idmap_test_advance(N4_IDMAP_TTL_S + 1); /* nothing from earlier tests */
	n4_idmap_stats(&a);
	assert_int_equal(n4_owner_to_id("root@example.org", 16, 0, "", &id), 1);
	assert_int_equal(id, 0);
	for (int i = 0; i < 100; i++) {
		id = 7;
		assert_int_equal(n4_owner_to_id("root@example.org", 16, 0, "", &id), 1);
		assert_int_equal(id, 0);
	}
	n4_idmap_stats(&b);
	assert_int_equal(b.lookups - a.lookups, 1);
	assert_int_equal(b.hits - a.hits, 100);
	/* users and groups are apart */
	assert_int_equal(n4_owner_to_id("root", 4, 1, "", &id), 1);
	assert_int_equal(id, 0);
	n4_idmap_stats(&a);
	assert_int_equal(a.lookups - b.lookups, 1);
	/* unknown: nobody, cached for the negative TTL only */
	assert_int_equal(n4_owner_to_id("no-such-user-4711", 17, 0, "", &id), -ENOENT);
	n4_idmap_stats(&a);
	assert_int_equal(n4_owner_to_id("no-such-user-4711", 17, 0, "", &id), -ENOENT);
	assert_int_equal(id, n4_idmap_nobody(0));
	n4_idmap_stats(&b);
	assert_int_equal(b.lookups, a.lookups);
	n4_idmap_test_advance(N4_IDMAP_NEG_TTL_S + 1);
	assert_int_equal(n4_owner_to_id("no-such-user-4711", 17, 0, "", &id), -ENOENT);
	n4_idmap_stats(&a);
	assert_true(a.lookups > b.lookups);
	/* a known name is asked again once its TTL is over */
	assert_int_equal(n4_owner_to_id("root", 4, 0, "", &id), 1);
	n4_idmap_stats(&a);
	n4_idmap_test_advance(N4_IDMAP_TTL_S + 1);
	assert_int_equal(n4_owner_to_id("root", 4, 0, "", &id), 1);
	n4_idmap_stats(&b);
	assert_true(b.lookups > a.lookups);
}

/* --- attributes ---------------------------------------------------------- */

static void test_fattr_decode(void **state)
{
	struct ab b;
	fattr4 f;
	struct n4_attrs a;

	(void)state;
	file_attrs(&b, 42, 99, 5000, "1234", "root@any.where", 1);
	fattr_of(&b, &f);
	assert_int_equal(n4_fattr_decode(&f, "", &a), 0);
	assert_int_equal(a.f.type, NF3REG);
	assert_int_equal(a.f.mode, 0644);
	assert_int_equal(a.f.nlink, 2);
	assert_int_equal(a.f.uid, 1234);
	assert_int_equal(a.f.gid, 0);
	assert_int_equal(a.f.size, 5000);
	assert_int_equal(a.f.used, 4096);
	assert_int_equal(a.f.rdev.specdata1, 8);
	assert_int_equal(a.f.rdev.specdata2, 1);
	assert_int_equal(a.f.fsid, 7);
	assert_int_equal(a.f.fileid, 42);
	assert_int_equal(a.f.atime.seconds, 1000);
	assert_int_equal(a.f.mtime.seconds, 2000);
	assert_int_equal(a.f.mtime.nseconds, 2);
	assert_int_equal(a.f.ctime.seconds, 3000);
	assert_int_equal(a.change, 99);
	assert_true(n4_has(&a, FATTR4_CHANGE));
	assert_false(n4_has(&a, FATTR4_LEASE_TIME));
	assert_int_equal(a.fh_len, strlen(FH_A));
	assert_memory_equal(a.fh, FH_A, a.fh_len);
	assert_int_equal(a.nobody, 0);

	/* the group from another domain: nobody, and said so */
	assert_int_equal(n4_fattr_decode(&f, "example.com", &a), 0);
	assert_int_equal(a.nobody, 1);

	/* short, or bytes left over */
	f.attr_vals.attrlist4_len -= 4;
	assert_int_equal(n4_fattr_decode(&f, "", &a), -EPROTO);
	f.attr_vals.attrlist4_len += 8;
	assert_int_equal(n4_fattr_decode(&f, "", &a), -EPROTO);

	/* an attribute whose size is not known: cannot be skipped */
	memset(&b, 0, sizeof(b));
	bit(&b, FATTR4_FS_LOCATIONS);
	p32(&b, 0);
	fattr_of(&b, &f);
	assert_int_equal(n4_fattr_decode(&f, "", &a), -EPROTO);
	/* a bit past 63 */
	memset(&b, 0, sizeof(b));
	bit(&b, 70);
	fattr_of(&b, &f);
	assert_int_equal(n4_fattr_decode(&f, "", &a), -EPROTO);

	/* attributes not asked for are skipped; a time before 1970 is 0;
	 * without space_used, used is the size; a directory */
	memset(&b, 0, sizeof(b));
	bit(&b, FATTR4_SUPPORTED_ATTRS);
	p32(&b, 2);
	p32(&b, 0xffffffff);
	p32(&b, 0x3);
	bit(&b, FATTR4_TYPE);
	p32(&b, NF4DIR);
	bit(&b, FATTR4_SIZE);
	p64(&b, 4096);
	bit(&b, FATTR4_LEASE_TIME);
	p32(&b, 45);
	bit(&b, FATTR4_ACL);
	p32(&b, 1);
	p32(&b, 0);
	p32(&b, 0);
	p32(&b, 1);
	pstr(&b, "EVERYONE@", 9);
	bit(&b, FATTR4_MAXREAD);
	p64(&b, 1 << 20);
	bit(&b, FATTR4_MIMETYPE);
	pstr(&b, "x/y", 3);
	bit(&b, FATTR4_TIME_MODIFY);
	p64(&b, (uint64_t)-5);
	p32(&b, 0);
	bit(&b, FATTR4_MOUNTED_ON_FILEID);
	p64(&b, 3);
	fattr_of(&b, &f);
	assert_int_equal(n4_fattr_decode(&f, "", &a), 0);
	assert_int_equal(a.f.type, NF3DIR);
	assert_int_equal(a.f.used, 4096);
	assert_int_equal(a.f.nlink, 1);
	assert_int_equal(a.lease_time, 45);
	assert_int_equal(a.maxread, 1 << 20);
	assert_int_equal(a.f.mtime.seconds, 0);
	assert_false(n4_has(&a, FATTR4_CHANGE));
}

static void test_sattr_roundtrip(void **state)
{
	sattr3 s;
	uint32_t mask[2];
	char buf[256];
	size_t len;
	fattr4 f;
	struct n4_attrs a;
	const unsigned char *q = (const unsigned char *)buf;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.mode.set_it = 1;
	s.mode.set_mode3_u.mode = 04751;
	s.uid.set_it = 1;
	s.uid.set_uid3_u.uid = 1234;
	s.gid.set_it = 1;
	s.gid.set_gid3_u.gid = 56;
	s.size.set_it = 1;
	s.size.set_size3_u.size = 1ull << 33;
	assert_int_equal(n4_sattr3_encode(&s, mask, buf, sizeof(buf), &len), 0);
	f.attrmask.bitmap4_len = 2;
	f.attrmask.bitmap4_val = mask;
	f.attr_vals.attrlist4_len = (u_int)len;
	f.attr_vals.attrlist4_val = buf;
	assert_int_equal(n4_fattr_decode(&f, "", &a), 0);
	assert_int_equal(a.f.mode, 04751);
	assert_int_equal(a.f.uid, 1234);
	assert_int_equal(a.f.gid, 56);
	assert_int_equal(a.f.size, 1ull << 33);

	/* times: client time with its value, server time alone */
	memset(&s, 0, sizeof(s));
	s.mtime.set_it = SET_TO_CLIENT_TIME;
	s.mtime.set_mtime_u.mtime.seconds = 7;
	s.mtime.set_mtime_u.mtime.nseconds = 9;
	s.atime.set_it = SET_TO_SERVER_TIME;
	assert_int_equal(n4_sattr3_encode(&s, mask, buf, sizeof(buf), &len), 0);
	assert_int_equal(mask[0], 0);
	assert_int_equal(mask[1], (1u << (FATTR4_TIME_ACCESS_SET - 32)) |
	                              (1u << (FATTR4_TIME_MODIFY_SET - 32)));
	assert_int_equal(len, 4 + 4 + 8 + 4);
	assert_int_equal(q[3], SET_TO_SERVER_TIME4);
	assert_int_equal(q[7], SET_TO_CLIENT_TIME4);
	assert_int_equal(q[15], 7);
	assert_int_equal(q[19], 9);
	/* no room */
	assert_int_equal(n4_sattr3_encode(&s, mask, buf, 8, &len), -ENOSPC);
}

/* --- COMPOUNDs ---------------------------------------------------------------- */

static void ops_are(const struct n4_compound *b, const nfs_opnum4 *want, size_t n)
{
	assert_int_equal(b->args.argarray.argarray_len, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(b->ops[i].argop, want[i]);
	assert_int_equal(b->args.minorversion, 0);
}

/* libnfs encodes it (what rpc_nfs4_compound_async does first) */
static void encodes(struct n4_compound *b)
{
	char buf[8192];
	ZDR z;

	zdrmem_create(&z, buf, sizeof(buf), ZDR_ENCODE);
	assert_true(zdr_COMPOUND4args(&z, &b->args));
	zdr_destroy(&z);
}

static void test_build(void **state)
{
	struct n4_req rq;
	struct n4_compound b;
	char longfh[200], longname[300];
	nfs_fh3 fh = {{(u_int)strlen(FH_A), (char *)FH_A}};

	(void)state;
	{
		LOOKUP3args a = {{fh, (char *)"name"}};
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR, OP_LOOKUP, OP_GETFH,
		                               OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_LOOKUP, &a), 0);
		assert_int_equal(rq.fh.len, strlen(FH_A)); /* over 64 bytes: fine in v4 */
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 5);
		assert_int_equal(b.ops[2].nfs_argop4_u.oplookup.objname.utf8string_len, 4);
		assert_memory_equal(b.ops[0].nfs_argop4_u.opputfh.object.nfs_fh4_val, FH_A,
		                    strlen(FH_A));
		encodes(&b);
		a.what.name = (char *)"..";
		static const nfs_opnum4 wp[] = {OP_PUTFH, OP_GETATTR, OP_LOOKUPP, OP_GETFH,
		                                OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_LOOKUP, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wp, 5);
		a.what.name = (char *)".";
		static const nfs_opnum4 wd[] = {OP_PUTFH, OP_GETATTR, OP_GETFH, OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_LOOKUP, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wd, 4);
		/* the export root's "..": the root, not the pseudo-fs above it */
		a.what.name = (char *)"..";
		assert_int_equal(n4_req_from_v3(&rq, NFS3_LOOKUP, &a), 0);
		rq.is_root = 1;
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wd, 4);
		rq.is_root = 0;
		memset(longname, 'x', 256);
		longname[256] = 0;
		a.what.name = longname;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_LOOKUP, &a), -ENAMETOOLONG);
	}
	{
		READ3args a = {fh, 1 << 20, 65536};
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_READ, OP_GETATTR};
		static const char zero[12],
		    ones[12] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_READ, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 3);
		assert_int_equal(b.ops[1].nfs_argop4_u.opread.offset, 1 << 20);
		assert_int_equal(b.ops[1].nfs_argop4_u.opread.count, 65536);
		assert_int_equal(b.ops[1].nfs_argop4_u.opread.stateid.seqid, 0);
		assert_memory_equal(b.ops[1].nfs_argop4_u.opread.stateid.other, zero, 12);
		encodes(&b);
		rq.bypass = 1;
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_int_equal(b.ops[1].nfs_argop4_u.opread.stateid.seqid, 0xffffffffu);
		assert_memory_equal(b.ops[1].nfs_argop4_u.opread.stateid.other, ones, 12);
	}
	{
		ACCESS3args a = {fh, ACCESS3_READ | ACCESS3_LOOKUP};
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_ACCESS, OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_ACCESS, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 3);
		assert_int_equal(b.ops[1].nfs_argop4_u.opaccess.access,
		                 ACCESS4_READ | ACCESS4_LOOKUP);
	}
	{
		READDIRPLUS3args a;
		static const nfs_opnum4 first[] = {OP_PUTFH,   OP_GETATTR, OP_READDIR,
		                                   OP_LOOKUPP, OP_GETFH,   OP_GETATTR};
		static const nfs_opnum4 next[] = {OP_PUTFH, OP_GETATTR, OP_READDIR};
		static const char zero[8];
		memset(&a, 0, sizeof(a));
		a.dir = fh;
		a.dircount = 1000;
		a.maxcount = 8000;
		memcpy(a.cookieverf, "verifier", 8);
		assert_int_equal(n4_req_from_v3(&rq, NFS3_READDIRPLUS, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, first, 6); /* ".." of a directory: LOOKUPP, its handle */
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.cookie, 0);
		assert_memory_equal(b.ops[2].nfs_argop4_u.opreaddir.cookieverf, zero, 8);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.dircount, 1000);
		/* v4's entries are bigger: more asked, trimmed to 8000 */
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.maxcount, 12000);
		assert_ptr_equal(b.ops[2].nfs_argop4_u.opreaddir.attr_request.bitmap4_val,
		                 N4_ATTRS_DIRENT);
		encodes(&b);
		rq.is_root = 1; /* the root's ".." is itself */
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, next, 3);
		rq.is_root = 0;
		rq.cookie = 2; /* after "..": the v4 listing from its start */
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, next, 3);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.cookie, 0);
		rq.cookie = 12345; /* v4 cookies and the verifier pass through */
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, next, 3);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.cookie, 12345);
		assert_memory_equal(b.ops[2].nfs_argop4_u.opreaddir.cookieverf, "verifier", 8);
	}
	{
		READDIR3args a;
		memset(&a, 0, sizeof(a));
		a.dir = fh;
		a.count = 4096;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_READDIR, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_ptr_equal(b.ops[2].nfs_argop4_u.opreaddir.attr_request.bitmap4_val,
		                 N4_ATTRS_FILEID);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.maxcount, 6144);
		/* the retry after a SERVERFAULT asks more again; never over
		 * what libnfs takes in one reply */
		rq.rdmax = n4_readdir_max(rq.rdmax, N4_RD_RETRY);
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.maxcount, 9216);
		assert_int_equal(n4_readdir_max(4096, 28), 7168); /* a raised scale */
		assert_int_equal(n4_readdir_max(1u << 20, N4_RD_SCALE), N4_RD_MAX);
		assert_int_equal(n4_readdir_max(0xffffffffu, N4_RD_SCALE_MAX), N4_RD_MAX);
		assert_int_equal(n4_readdir_max(0, N4_RD_SCALE), 0);
	}
	/* not a procedure of the module (NULL is the caller's), and handles
	 * v4 does not take */
	{
		GETATTR3args g;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_NULL, &g), -EOPNOTSUPP);
		memset(longfh, 1, sizeof(longfh));
		g.object.data.data_len = 129;
		g.object.data.data_val = longfh;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_GETATTR, &g), -EINVAL);
		g.object.data.data_len = 0;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_GETATTR, &g), -EINVAL);
	}
	/* the client ID's COMPOUNDs encode */
	n4_compound_init(&b, "t");
	assert_int_equal(n4_op_setclientid(&b, "cachefsd/host/filer:2049/x", "12345678"), 0);
	encodes(&b);
	n4_compound_init(&b, "t");
	assert_int_equal(n4_op_setclientid_confirm(&b, 77, "abcdefgh"), 0);
	assert_int_equal(n4_op_renew(&b, 77), 0);
	encodes(&b);
	n4_compound_init(&b, "t");
	for (int i = 0; i < N4_MAXOPS; i++)
		assert_int_equal(n4_op_getfh(&b), 0);
	assert_int_equal(n4_op_getfh(&b), -ENOSPC);
}

/* --- answers ----------------------------------------------------------------- */

struct fake {
	nfs_resop4 r[12];
	COMPOUND4res res;
	struct ab attrs[12];
	entry4 e[8];
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->res.resarray.resarray_val = f->r;
}

static nfs_resop4 *fake_op(struct fake *f, nfs_opnum4 op, int status)
{
	nfs_resop4 *r = &f->r[f->res.resarray.resarray_len++];

	r->resop = op;
	r->nfs_resop4_u.opillegal.status = (nfsstat4)status;
	f->res.status = (nfsstat4)status;
	return r;
}

static void fake_getattr(struct fake *f, int slot, uint64_t fileid, uint64_t change, uint64_t size)
{
	nfs_resop4 *r = fake_op(f, OP_GETATTR, NFS4_OK);

	file_attrs(&f->attrs[slot], fileid, change, size, "0", "0", 0);
	fattr_of(&f->attrs[slot], &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes);
}

static void test_reply_readdirplus(void **state)
{
	struct fake f;
	struct n4_req rq;
	struct n4_out out;
	nfs_resop4 *rd;
	static const char *names[] = {"alpha", "beta", "gamma"};
	entryplus3 *e;
	nfs_fh4 *pfh;

	(void)state;
	fake_init(&f);
	memset(&rq, 0, sizeof(rq));
	rq.proc = NFS3_READDIRPLUS;
	rq.fh.len = 10;
	memcpy(rq.fh.data, "dirhandle!", 10);
	rq.count = 65536;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 500, 4711, 4096);
	rd = fake_op(&f, OP_READDIR, NFS4_OK);
	memcpy(rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.cookieverf, "VERIFIER", 8);
	for (int i = 0; i < 3; i++) {
		f.e[i].cookie = 100 + (uint64_t)i;
		f.e[i].name.utf8string_val = (char *)names[i];
		f.e[i].name.utf8string_len = (u_int)strlen(names[i]);
		file_attrs(&f.attrs[2 + i], 600 + (uint64_t)i, 9, 10, "0", "0", 1);
		fattr_of(&f.attrs[2 + i], &f.e[i].attrs);
		f.e[i].nextentry = i < 2 ? &f.e[i + 1] : NULL;
	}
	rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.entries = &f.e[0];
	rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.eof = 1;
	fake_op(&f, OP_LOOKUPP, NFS4_OK);
	pfh = &fake_op(&f, OP_GETFH, NFS4_OK)->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
	pfh->nfs_fh4_len = 12;
	pfh->nfs_fh4_val = (char *)"parenthandle";
	fake_getattr(&f, 6, 499, 1, 4096);

	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.readdirplus.status, NFS3_OK);
	READDIRPLUS3resok *ok = &out.u.readdirplus.READDIRPLUS3res_u.resok;
	assert_true(ok->reply.eof);
	assert_false(out.rd_short); /* the end: nothing more to ask */
	assert_memory_equal(ok->cookieverf, "VERIFIER", 8);
	assert_true(ok->dir_attributes.attributes_follow);
	assert_true(out.coh.has_dir_change);
	assert_int_equal(out.coh.dir_change, 4711);
	e = ok->reply.entries;
	assert_string_equal(e->name, ".");
	assert_int_equal(e->cookie, 1);
	assert_int_equal(e->fileid, 500);
	assert_true(e->name_attributes.attributes_follow);
	assert_int_equal(e->name_handle.post_op_fh3_u.handle.data.data_len, 10);
	e = e->nextentry;
	assert_string_equal(e->name, "..");
	assert_int_equal(e->cookie, 2);
	assert_int_equal(e->fileid, 499); /* the parent's, from LOOKUPP + GETATTR */
	assert_true(e->name_attributes.attributes_follow); /* as v3 servers give them */
	assert_int_equal(e->name_attributes.post_op_attr_u.attributes.fileid, 499);
	assert_true(e->name_handle.handle_follows);
	assert_memory_equal(e->name_handle.post_op_fh3_u.handle.data.data_val, "parenthandle", 12);
	e = e->nextentry;
	for (int i = 0; i < 3; i++, e = e->nextentry) {
		assert_non_null(e);
		assert_string_equal(e->name, names[i]);
		assert_int_equal(e->cookie, 100 + i);
		assert_int_equal(e->fileid, 600 + i);
		assert_true(e->name_attributes.attributes_follow);
		assert_int_equal(e->name_attributes.post_op_attr_u.attributes.size, 10);
		assert_true(e->name_handle.handle_follows);
		assert_int_equal(e->name_handle.post_op_fh3_u.handle.data.data_len, strlen(FH_A));
	}
	assert_null(e);
	n4_out_free(&out);

	/* resumed after ".": ".." and the rest */
	rq.cookie = 1;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_string_equal(out.u.readdirplus.READDIRPLUS3res_u.resok.reply.entries->name, "..");
	n4_out_free(&out);

	/* a maxcount that takes ".", ".." and one entry: the page ends early
	 * and says so (no eof) */
	rq.cookie = 0;
	/* v3's bytes: status, dir attributes, verifier, list end, eof; per
	 * entry: follows, fileid, name, cookie, attributes, handle */
	rq.count = 4 + 4 + 84 + 8 + 4 + 4 + (4 + 8 + 4 + 4 + 8 + 4 + 84 + 4 + 4 + 12) +
	           (4 + 8 + 4 + 4 + 8 + 4 + 84 + 4 + 4 + 12) +
	           (4 + 8 + 4 + 8 + 8 + 4 + 84 + 4 + 4 + 72);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	ok = &out.u.readdirplus.READDIRPLUS3res_u.resok;
	assert_false(ok->reply.eof);
	assert_false(out.rd_short); /* trimmed: the filer gave enough */
	assert_string_equal(ok->reply.entries->nextentry->nextentry->name, "alpha");
	assert_null(ok->reply.entries->nextentry->nextentry->nextentry);
	n4_out_free(&out);
	rq.count--;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_null(out.u.readdirplus.READDIRPLUS3res_u.resok.reply.entries->nextentry->nextentry);
	n4_out_free(&out);

	/* the filer's page ends (no eof) with the client's count far from
	 * full: the maxcount asked was short */
	rq.count = 65536;
	rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.eof = 0;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_false(out.u.readdirplus.READDIRPLUS3res_u.resok.reply.eof);
	assert_true(out.rd_short);
	n4_out_free(&out);
	rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.eof = 1;

	/* not even one entry fits */
	rq.count = 100;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.readdirplus.status, NFS3ERR_TOOSMALL);
	n4_out_free(&out);

	/* an entry whose attributes the server could not get (rdattr_error) */
	rq.count = 65536;
	memset(&f.attrs[3], 0, sizeof(f.attrs[3]));
	bit(&f.attrs[3], FATTR4_RDATTR_ERROR);
	p32(&f.attrs[3], NFS4ERR_ACCESS);
	fattr_of(&f.attrs[3], &f.e[1].attrs);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	e = out.u.readdirplus.READDIRPLUS3res_u.resok.reply.entries->nextentry->nextentry
	        ->nextentry;
	assert_string_equal(e->name, "beta");
	assert_false(e->name_attributes.attributes_follow);
	assert_false(e->name_handle.handle_follows);
	n4_out_free(&out);

	/* the same answer as plain READDIR */
	rq.proc = NFS3_READDIR;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	entry3 *p = out.u.readdir.READDIR3res_u.resok.reply.entries;
	assert_string_equal(p->name, ".");
	assert_string_equal(p->nextentry->nextentry->name, "alpha");
	n4_out_free(&out);

	/* READDIR refused: the status and the directory's attributes */
	f.res.resarray.resarray_len = 2;
	fake_op(&f, OP_READDIR, NFS4ERR_ACCESS);
	rq.proc = NFS3_READDIRPLUS;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.readdirplus.status, NFS3ERR_ACCES);
	assert_true(out.u.readdirplus.READDIRPLUS3res_u.resfail.dir_attributes.attributes_follow);
	n4_out_free(&out);

	/* an entry named with a NUL: not decodable */
	f.res.resarray.resarray_len = 2;
	rd = fake_op(&f, OP_READDIR, NFS4_OK);
	f.e[0].name.utf8string_val = (char *)"a\0b";
	f.e[0].name.utf8string_len = 3;
	f.e[0].nextentry = NULL;
	rd->nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply.entries = &f.e[0];
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), -EPROTO);
}

static void test_reply_calls(void **state)
{
	struct fake f;
	struct n4_req rq;
	struct n4_out out;
	nfs_resop4 *r;

	(void)state;
	memset(&rq, 0, sizeof(rq));
	rq.fh.len = 4;

	/* LOOKUP of a name that is not there: NOENT with the directory's
	 * attributes and change */
	fake_init(&f);
	rq.proc = NFS3_LOOKUP;
	strcpy(rq.name, "nothere");
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 5, 77, 4096);
	fake_op(&f, OP_LOOKUP, NFS4ERR_NOENT);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.lookup.status, NFS3ERR_NOENT);
	assert_true(out.u.lookup.LOOKUP3res_u.resfail.dir_attributes.attributes_follow);
	assert_int_equal(out.coh.dir_change, 77);
	assert_false(out.coh.has_change);

	/* found: the handle (v4's, any length), both attributes */
	fake_init(&f);
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 5, 77, 4096);
	fake_op(&f, OP_LOOKUP, NFS4_OK);
	r = fake_op(&f, OP_GETFH, NFS4_OK);
	r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len = (u_int)strlen(FH_A);
	r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_val = (char *)FH_A;
	fake_getattr(&f, 1, 6, 88, 123);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.lookup.status, NFS3_OK);
	assert_int_equal(out.u.lookup.LOOKUP3res_u.resok.object.data.data_len, strlen(FH_A));
	assert_int_equal(
	    out.u.lookup.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.fileid, 6);
	assert_true(out.coh.has_change);
	assert_int_equal(out.coh.change, 88);
	assert_int_equal(out.coh.size, 123);
	/* GETFH missing from a successful answer: not decodable */
	f.res.resarray.resarray_len = 3;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), -EPROTO);

	/* READ: the bytes in place, eof, the attributes after it */
	fake_init(&f);
	rq.proc = NFS3_READ;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	r = fake_op(&f, OP_READ, NFS4_OK);
	r->nfs_resop4_u.opread.READ4res_u.resok4.eof = 1;
	r->nfs_resop4_u.opread.READ4res_u.resok4.data.data_len = 5;
	r->nfs_resop4_u.opread.READ4res_u.resok4.data.data_val = (char *)"bytes";
	fake_getattr(&f, 0, 9, 1001, 5);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.read.status, NFS3_OK);
	assert_int_equal(out.u.read.READ3res_u.resok.count, 5);
	assert_true(out.u.read.READ3res_u.resok.eof);
	assert_memory_equal(out.u.read.READ3res_u.resok.data.data_val, "bytes", 5);
	assert_int_equal(out.coh.change, 1001);
	/* the READ stands when only the GETATTR after it failed */
	f.res.resarray.resarray_len = 2;
	fake_op(&f, OP_GETATTR, NFS4ERR_DELAY);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.read.status, NFS3_OK);
	assert_false(out.u.read.READ3res_u.resok.file_attributes.attributes_follow);

	/* ACCESS: what was granted of what was asked */
	fake_init(&f);
	rq.proc = NFS3_ACCESS;
	rq.access = ACCESS3_READ | ACCESS3_MODIFY;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	r = fake_op(&f, OP_ACCESS, NFS4_OK);
	r->nfs_resop4_u.opaccess.ACCESS4res_u.resok4.supported = 0x3f;
	r->nfs_resop4_u.opaccess.ACCESS4res_u.resok4.access = ACCESS4_READ | ACCESS4_LOOKUP;
	fake_getattr(&f, 0, 9, 1, 5);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.access.ACCESS3res_u.resok.access, ACCESS3_READ);

	/* GETATTR of a stale handle */
	fake_init(&f);
	rq.proc = NFS3_GETATTR;
	fake_op(&f, OP_PUTFH, NFS4ERR_STALE);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.getattr.status, NFS3ERR_STALE);

	/* READLINK: the target NUL-terminated */
	fake_init(&f);
	rq.proc = NFS3_READLINK;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	r = fake_op(&f, OP_READLINK, NFS4_OK);
	r->nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link.utf8string_val = (char *)"targetXX";
	r->nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link.utf8string_len = 6;
	fake_getattr(&f, 0, 9, 1, 6);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_string_equal(out.u.readlink.READLINK3res_u.resok.data, "target");
	n4_out_free(&out);
}

/* --- the writes ---------------------------------------------------------------- */

static void test_build_writes(void **state)
{
	struct n4_req rq;
	struct n4_compound b;
	nfs_fh3 fh = {{(u_int)strlen(FH_A), (char *)FH_A}};
	nfs_fh3 fh2 = {{4, (char *)"dir2"}};
	static const char zero[12];

	(void)state;
	{
		char data[100];
		WRITE3args a;
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR, OP_WRITE, OP_GETATTR};
		memset(data, 'd', sizeof(data));
		memset(&a, 0, sizeof(a));
		a.file = fh;
		a.offset = 4096;
		a.count = 100;
		a.stable = FILE_SYNC;
		a.data.data_len = 100;
		a.data.data_val = data;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_WRITE, &a), 0);
		data[0] = 'x'; /* copied: the caller's buffer may go */
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 4);
		/* wcc: the small attribute set before, v3's whole after */
		assert_ptr_equal(b.ops[1].nfs_argop4_u.opgetattr.attr_request.bitmap4_val,
		                 N4_ATTRS_WCC);
		assert_ptr_equal(b.ops[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_val, N4_ATTRS);
		assert_int_equal(b.ops[2].nfs_argop4_u.opwrite.offset, 4096);
		assert_int_equal(b.ops[2].nfs_argop4_u.opwrite.stable, FILE_SYNC4);
		assert_int_equal(b.ops[2].nfs_argop4_u.opwrite.data.data_len, 100);
		assert_int_equal(b.ops[2].nfs_argop4_u.opwrite.data.data_val[0], 'd');
		/* the anonymous stateid first */
		assert_int_equal(b.ops[2].nfs_argop4_u.opwrite.stateid.seqid, 0);
		assert_memory_equal(b.ops[2].nfs_argop4_u.opwrite.stateid.other, zero, 12);
		encodes(&b);
		/* an open's stateid once the client has one */
		rq.sid.seqid = 2;
		memcpy(rq.sid.other, "open-stateid", 12);
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_int_equal(b.ops[2].nfs_argop4_u.opwrite.stateid.seqid, 2);
		assert_memory_equal(b.ops[2].nfs_argop4_u.opwrite.stateid.other, "open-stateid", 12);
		/* the fallback's phases */
		rq.phase = N4_PH_OPEN;
		rq.odir.len = 4;
		memcpy(rq.odir.data, "dir1", 4);
		strcpy(rq.oname, "file");
		strcpy(rq.owner, "cachefsd-open-7");
		rq.clientid = 0x1234;
		static const nfs_opnum4 wo[] = {OP_PUTFH, OP_OPEN, OP_GETFH};
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wo, 3);
		assert_memory_equal(b.ops[0].nfs_argop4_u.opputfh.object.nfs_fh4_val, "dir1", 4);
		const OPEN4args *o = &b.ops[1].nfs_argop4_u.opopen;
		assert_int_equal(o->seqid, 0);
		assert_int_equal(o->share_access, OPEN4_SHARE_ACCESS_WRITE);
		assert_int_equal(o->share_deny, OPEN4_SHARE_DENY_NONE);
		assert_int_equal(o->owner.clientid, 0x1234);
		assert_int_equal(o->owner.owner.owner_len, strlen("cachefsd-open-7"));
		assert_int_equal(o->openhow.opentype, OPEN4_NOCREATE);
		assert_int_equal(o->claim.claim, CLAIM_NULL);
		assert_memory_equal(o->claim.open_claim4_u.file.utf8string_val, "file", 4);
		encodes(&b);
		rq.phase = N4_PH_CONFIRM;
		rq.seqid = 1;
		rq.ofh.len = 4;
		memcpy(rq.ofh.data, "file", 4);
		static const nfs_opnum4 wc[] = {OP_PUTFH, OP_OPEN_CONFIRM};
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wc, 2);
		assert_int_equal(b.ops[1].nfs_argop4_u.opopen_confirm.seqid, 1);
		assert_memory_equal(b.ops[1].nfs_argop4_u.opopen_confirm.open_stateid.other,
		                    "open-stateid", 12);
		rq.phase = N4_PH_CLOSE;
		rq.seqid = 2;
		static const nfs_opnum4 wx[] = {OP_PUTFH, OP_CLOSE};
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wx, 2);
		assert_int_equal(b.ops[1].nfs_argop4_u.opclose.seqid, 2);
		encodes(&b);
		n4_req_clear(&rq);
		assert_null(rq.data);
	}
	{
		COMMIT3args a = {fh, 10, 20};
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR, OP_COMMIT, OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_COMMIT, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 4);
		assert_int_equal(b.ops[2].nfs_argop4_u.opcommit.offset, 10);
		assert_int_equal(b.ops[2].nfs_argop4_u.opcommit.count, 20);
	}
	{
		SETATTR3args a;
		static const nfs_opnum4 wg[] = {OP_PUTFH, OP_GETATTR, OP_VERIFY, OP_SETATTR,
		                                OP_GETATTR};
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR, OP_SETATTR, OP_GETATTR};
		static const unsigned char t[12] = {0, 0, 0, 0, 0, 0, 0x0b, 0xb8, 0, 0, 0, 3};
		memset(&a, 0, sizeof(a));
		a.object = fh;
		a.new_attributes.mode.set_it = 1;
		a.new_attributes.mode.set_mode3_u.mode = 0600;
		a.guard.check = 1;
		a.guard.sattrguard3_u.obj_ctime.seconds = 3000;
		a.guard.sattrguard3_u.obj_ctime.nseconds = 3;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_SETATTR, &a), 0);
		assert_false(rq.has_size);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wg, 5);
		/* the guard: VERIFY time_metadata = the caller's ctime */
		const fattr4 *v = &b.ops[2].nfs_argop4_u.opverify.obj_attributes;
		assert_int_equal(v->attrmask.bitmap4_val[0], 0);
		assert_int_equal(v->attrmask.bitmap4_val[1], 1u << (FATTR4_TIME_METADATA - 32));
		assert_int_equal(v->attr_vals.attrlist4_len, 12);
		assert_memory_equal(v->attr_vals.attrlist4_val, t, 12);
		const fattr4 *sa = &b.ops[3].nfs_argop4_u.opsetattr.obj_attributes;
		assert_int_equal(sa->attrmask.bitmap4_val[1], 1u << (FATTR4_MODE - 32));
		assert_int_equal(sa->attr_vals.attrlist4_len, 4);
		assert_memory_equal(b.ops[3].nfs_argop4_u.opsetattr.stateid.other, zero, 12);
		encodes(&b);
		a.guard.check = 0;
		a.new_attributes.size.set_it = 1;
		a.new_attributes.size.set_size3_u.size = 5;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_SETATTR, &a), 0);
		assert_true(rq.has_size);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 4);
	}
	{
		CREATE3args a;
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR, OP_OPEN,   OP_GETFH,
		                               OP_GETATTR, OP_PUTFH, OP_GETATTR};
		memset(&a, 0, sizeof(a));
		a.where.dir = fh;
		a.where.name = (char *)"new";
		a.how.mode = EXCLUSIVE;
		memcpy(a.how.createhow3_u.verf, "VERIFIER", 8);
		assert_int_equal(n4_req_from_v3(&rq, NFS3_CREATE, &a), 0);
		strcpy(rq.owner, "o");
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 7);
		const OPEN4args *o = &b.ops[2].nfs_argop4_u.opopen;
		assert_int_equal(o->openhow.opentype, OPEN4_CREATE);
		assert_int_equal(o->openhow.openflag4_u.how.mode, EXCLUSIVE4);
		assert_memory_equal(o->openhow.openflag4_u.how.createhow4_u.createverf, "VERIFIER",
		                    8);
		assert_memory_equal(o->claim.open_claim4_u.file.utf8string_val, "new", 3);
		encodes(&b);
		a.how.mode = GUARDED;
		a.how.createhow3_u.obj_attributes.mode.set_it = 1;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0640;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_CREATE, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		o = &b.ops[2].nfs_argop4_u.opopen;
		assert_int_equal(o->openhow.openflag4_u.how.mode, GUARDED4);
		assert_int_equal(
		    o->openhow.openflag4_u.how.createhow4_u.createattrs.attrmask.bitmap4_val[1],
		    1u << (FATTR4_MODE - 32));
		a.how.mode = UNCHECKED;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_CREATE, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_int_equal(b.ops[2].nfs_argop4_u.opopen.openhow.openflag4_u.how.mode,
		                 UNCHECKED4);
		encodes(&b);
	}
	{
		MKNOD3args a;
		SYMLINK3args l;
		MKDIR3args m;
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR, OP_CREATE,  OP_GETFH,
		                               OP_GETATTR, OP_PUTFH, OP_GETATTR};
		memset(&a, 0, sizeof(a));
		a.where.dir = fh;
		a.where.name = (char *)"dev";
		a.what.type = NF3CHR;
		a.what.mknoddata3_u.chr_device.spec.specdata1 = 1;
		a.what.mknoddata3_u.chr_device.spec.specdata2 = 3;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_MKNOD, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, w, 7);
		const CREATE4args *c = &b.ops[2].nfs_argop4_u.opcreate;
		assert_int_equal(c->objtype.type, NF4CHR);
		assert_int_equal(c->objtype.createtype4_u.devdata.specdata1, 1);
		assert_int_equal(c->objtype.createtype4_u.devdata.specdata2, 3);
		encodes(&b);
		a.what.type = NF3FIFO;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_MKNOD, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_int_equal(b.ops[2].nfs_argop4_u.opcreate.objtype.type, NF4FIFO);
		a.what.type = NF3REG; /* not MKNOD's: v3's BADTYPE is the caller's */
		assert_int_equal(n4_req_from_v3(&rq, NFS3_MKNOD, &a), -EINVAL);
		memset(&l, 0, sizeof(l));
		l.where.dir = fh;
		l.where.name = (char *)"sl";
		l.symlink.symlink_data = (char *)"../target";
		assert_int_equal(n4_req_from_v3(&rq, NFS3_SYMLINK, &l), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		c = &b.ops[2].nfs_argop4_u.opcreate;
		assert_int_equal(c->objtype.type, NF4LNK);
		assert_int_equal(c->objtype.createtype4_u.linkdata.utf8string_len, 9);
		assert_memory_equal(c->objtype.createtype4_u.linkdata.utf8string_val, "../target",
		                    9);
		encodes(&b);
		n4_req_clear(&rq);
		memset(&m, 0, sizeof(m));
		m.where.dir = fh;
		m.where.name = (char *)"d";
		assert_int_equal(n4_req_from_v3(&rq, NFS3_MKDIR, &m), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		assert_int_equal(b.ops[2].nfs_argop4_u.opcreate.objtype.type, NF4DIR);
	}
	{
		REMOVE3args a = {{fh, (char *)"victim"}};
		static const nfs_opnum4 wr[] = {OP_PUTFH, OP_GETATTR, OP_LOOKUP, OP_NVERIFY,
		                                OP_PUTFH, OP_REMOVE,  OP_GETATTR};
		static const nfs_opnum4 wd[] = {OP_PUTFH, OP_GETATTR, OP_LOOKUP, OP_VERIFY,
		                                OP_PUTFH, OP_REMOVE,  OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_REMOVE, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wr, 7);
		/* type = NF4DIR must not hold for REMOVE */
		const fattr4 *v = &b.ops[3].nfs_argop4_u.opnverify.obj_attributes;
		assert_int_equal(v->attrmask.bitmap4_val[0], 1u << FATTR4_TYPE);
		assert_int_equal(v->attr_vals.attrlist4_len, 4);
		assert_int_equal((unsigned char)v->attr_vals.attrlist4_val[3], NF4DIR);
		assert_memory_equal(b.ops[5].nfs_argop4_u.opremove.target.utf8string_val, "victim",
		                    6);
		encodes(&b);
		assert_int_equal(n4_req_from_v3(&rq, NFS3_RMDIR, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wd, 7);
	}
	{
		RENAME3args a = {{fh, (char *)"from"}, {fh2, (char *)"to"}};
		LINK3args l = {fh, {fh2, (char *)"ln"}};
		static const nfs_opnum4 wr[] = {OP_PUTFH,   OP_GETATTR, OP_SAVEFH,
		                                OP_PUTFH,   OP_GETATTR, OP_RENAME,
		                                OP_GETATTR, OP_RESTOREFH, OP_GETATTR};
		static const nfs_opnum4 wl[] = {OP_PUTFH, OP_SAVEFH,  OP_PUTFH,     OP_GETATTR,
		                                OP_LINK,  OP_GETATTR, OP_RESTOREFH, OP_GETATTR};
		assert_int_equal(n4_req_from_v3(&rq, NFS3_RENAME, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wr, 9);
		/* saved: the source directory; current: the target's */
		assert_memory_equal(b.ops[0].nfs_argop4_u.opputfh.object.nfs_fh4_val, FH_A, 4);
		assert_memory_equal(b.ops[3].nfs_argop4_u.opputfh.object.nfs_fh4_val, "dir2", 4);
		assert_memory_equal(b.ops[5].nfs_argop4_u.oprename.oldname.utf8string_val, "from",
		                    4);
		assert_memory_equal(b.ops[5].nfs_argop4_u.oprename.newname.utf8string_val, "to", 2);
		encodes(&b);
		assert_int_equal(n4_req_from_v3(&rq, NFS3_LINK, &l), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, wl, 8);
		assert_memory_equal(b.ops[2].nfs_argop4_u.opputfh.object.nfs_fh4_val, "dir2", 4);
		assert_memory_equal(b.ops[4].nfs_argop4_u.oplink.newname.utf8string_val, "ln", 2);
		encodes(&b);
	}
	{
		FSINFO3args a = {fh};
		static const nfs_opnum4 w[] = {OP_PUTFH, OP_GETATTR};
		for (uint32_t p = NFS3_FSSTAT; p <= NFS3_PATHCONF; p++) {
			assert_int_equal(n4_req_from_v3(&rq, p, &a), 0);
			assert_int_equal(n4_build(&b, &rq), 0);
			ops_are(&b, w, 2);
			assert_ptr_equal(b.ops[1].nfs_argop4_u.opgetattr.attr_request.bitmap4_val,
			                 N4_ATTRS_FS);
		}
	}
}

/* the stateid decision: which refusals send a write through an OPEN */
static void test_stateid_decision(void **state)
{
	struct n4_req rq;

	(void)state;
	memset(&rq, 0, sizeof(rq));
	rq.proc = NFS3_WRITE;
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_BAD_STATEID), N4_STATEID);
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_OPENMODE), N4_STATEID);
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_STALE_STATEID), N4_STATEID);
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_ACCESS), N4_ANSWER);
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_DELAY), N4_DELAY);
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_STALE_CLIENTID), N4_RECOVER);
	rq.proc = NFS3_SETATTR; /* the stateid matters for the size only */
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_BAD_STATEID), N4_ANSWER);
	rq.has_size = 1;
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_OPENMODE), N4_STATEID);
	/* never from the open-state phases themselves */
	rq.phase = N4_PH_CLOSE;
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_BAD_STATEID), N4_ANSWER);
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_GRACE), N4_DELAY);
	rq.proc = NFS3_COMMIT;
	rq.phase = N4_PH_MAIN;
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_BAD_STATEID), N4_ANSWER);
	rq.proc = NFS3_READ; /* READ keeps its all-ones retry */
	assert_int_equal(n4_action_of_req(&rq, NFS4ERR_BAD_STATEID), N4_STATEID);
}

/* a GETATTR answer with the file system attributes of N4_ATTRS_FS */
static void fake_fsattrs(struct fake *f, int slot)
{
	nfs_resop4 *r = fake_op(f, OP_GETATTR, NFS4_OK);
	struct ab *b = &f->attrs[slot];

	memset(b, 0, sizeof(*b));
	bit(b, FATTR4_TYPE);
	p32(b, NF4DIR);
	bit(b, FATTR4_CHANGE);
	p64(b, 42);
	bit(b, FATTR4_SIZE);
	p64(b, 4096);
	bit(b, FATTR4_LINK_SUPPORT);
	p32(b, 1);
	bit(b, FATTR4_SYMLINK_SUPPORT);
	p32(b, 1);
	bit(b, FATTR4_CANSETTIME);
	p32(b, 1);
	bit(b, FATTR4_CASE_INSENSITIVE);
	p32(b, 0);
	bit(b, FATTR4_CASE_PRESERVING);
	p32(b, 1);
	bit(b, FATTR4_CHOWN_RESTRICTED);
	p32(b, 1);
	bit(b, FATTR4_FILES_AVAIL);
	p64(b, 100);
	bit(b, FATTR4_FILES_FREE);
	p64(b, 200);
	bit(b, FATTR4_FILES_TOTAL);
	p64(b, 300);
	bit(b, FATTR4_HOMOGENEOUS);
	p32(b, 1);
	bit(b, FATTR4_MAXFILESIZE);
	p64(b, 1ull << 40);
	bit(b, FATTR4_MAXLINK);
	p32(b, 32000);
	bit(b, FATTR4_MAXNAME);
	p32(b, 255);
	bit(b, FATTR4_MAXREAD);
	p64(b, 1 << 20);
	bit(b, FATTR4_MAXWRITE);
	p64(b, 1ull << 33); /* over 32 bits: clamped */
	bit(b, FATTR4_NO_TRUNC);
	p32(b, 1);
	bit(b, FATTR4_SPACE_AVAIL);
	p64(b, 1000);
	bit(b, FATTR4_SPACE_FREE);
	p64(b, 2000);
	bit(b, FATTR4_SPACE_TOTAL);
	p64(b, 3000);
	bit(b, FATTR4_TIME_DELTA);
	p64(b, 0);
	p32(b, 1000);
	fattr_of(b, &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes);
}

static void test_reply_writes(void **state)
{
	struct fake f;
	struct n4_req rq;
	struct n4_out out;
	nfs_resop4 *r;
	stateid4 sid;
	uint32_t rflags;
	struct n4_fh fh;

	(void)state;
	memset(&rq, 0, sizeof(rq));
	rq.fh.len = 4;

	/* WRITE: count, committed and verifier passed through; wcc from the
	 * GETATTRs around it; the token from the one after */
	fake_init(&f);
	rq.proc = NFS3_WRITE;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 9, 100, 10);
	r = fake_op(&f, OP_WRITE, NFS4_OK);
	r->nfs_resop4_u.opwrite.WRITE4res_u.resok4.count = 5;
	r->nfs_resop4_u.opwrite.WRITE4res_u.resok4.committed = UNSTABLE4;
	memcpy(r->nfs_resop4_u.opwrite.WRITE4res_u.resok4.writeverf, "WVERF123", 8);
	fake_getattr(&f, 1, 9, 101, 15);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.write.status, NFS3_OK);
	assert_int_equal(out.u.write.WRITE3res_u.resok.count, 5);
	assert_int_equal(out.u.write.WRITE3res_u.resok.committed, UNSTABLE);
	assert_memory_equal(out.u.write.WRITE3res_u.resok.verf, "WVERF123", 8);
	const wcc_data *w = &out.u.write.WRITE3res_u.resok.file_wcc;
	assert_true(w->before.attributes_follow);
	assert_int_equal(w->before.pre_op_attr_u.attributes.size, 10);
	assert_int_equal(w->before.pre_op_attr_u.attributes.mtime.seconds, 2000);
	assert_int_equal(w->before.pre_op_attr_u.attributes.ctime.seconds, 3000);
	assert_true(w->after.attributes_follow);
	assert_int_equal(w->after.post_op_attr_u.attributes.size, 15);
	assert_int_equal(out.coh.change, 101);
	assert_int_equal(out.coh.size, 15);
	/* the WRITE stands when the GETATTR after it failed */
	f.res.resarray.resarray_len = 3;
	fake_op(&f, OP_GETATTR, NFS4ERR_DELAY);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.write.status, NFS3_OK);
	assert_false(out.u.write.WRITE3res_u.resok.file_wcc.after.attributes_follow);
	/* refused: the status mapped, the attributes before kept */
	f.res.resarray.resarray_len = 2;
	fake_op(&f, OP_WRITE, NFS4ERR_BAD_STATEID);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.write.status, NFS3ERR_ACCES);
	assert_true(out.u.write.WRITE3res_u.resfail.file_wcc.before.attributes_follow);

	/* COMMIT: the verifier */
	fake_init(&f);
	rq.proc = NFS3_COMMIT;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 9, 100, 10);
	r = fake_op(&f, OP_COMMIT, NFS4_OK);
	memcpy(r->nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf, "CVERF456", 8);
	fake_getattr(&f, 1, 9, 100, 10);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.commit.status, NFS3_OK);
	assert_memory_equal(out.u.commit.COMMIT3res_u.resok.verf, "CVERF456", 8);

	/* SETATTR whose guard's VERIFY failed: NOT_SYNC, not SERVERFAULT */
	fake_init(&f);
	rq.proc = NFS3_SETATTR;
	rq.guard = 1;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 9, 100, 10);
	fake_op(&f, OP_VERIFY, NFS4ERR_NOT_SAME);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.setattr.status, NFS3ERR_NOT_SYNC);
	assert_true(out.u.setattr.SETATTR3res_u.resfail.obj_wcc.before.attributes_follow);
	/* passed */
	f.r[2].nfs_resop4_u.opverify.status = NFS4_OK;
	fake_op(&f, OP_SETATTR, NFS4_OK);
	fake_getattr(&f, 1, 9, 102, 10);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.setattr.status, NFS3_OK);
	assert_int_equal(out.coh.change, 102);
	rq.guard = 0;

	/* CREATE through OPEN: the open to confirm and close, the handle
	 * copied (the answer outlives the COMPOUND's), wcc before only when
	 * change_info's "before" is the change the GETATTR saw */
	fake_init(&f);
	rq.proc = NFS3_CREATE;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 5, 77, 4096);
	r = fake_op(&f, OP_OPEN, NFS4_OK);
	r->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid.seqid = 1;
	memcpy(r->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid.other, "the-stateid!", 12);
	r->nfs_resop4_u.opopen.OPEN4res_u.resok4.rflags = OPEN4_RESULT_CONFIRM;
	r->nfs_resop4_u.opopen.OPEN4res_u.resok4.cinfo.before = 77;
	r->nfs_resop4_u.opopen.OPEN4res_u.resok4.cinfo.after = 78;
	r = fake_op(&f, OP_GETFH, NFS4_OK);
	r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len = (u_int)strlen(FH_A);
	r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_val = (char *)FH_A;
	fake_getattr(&f, 1, 6, 1, 0);
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 2, 5, 78, 4096);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.create.status, NFS3_OK);
	assert_true(out.opened);
	assert_int_equal(out.open_rflags, OPEN4_RESULT_CONFIRM);
	assert_memory_equal(out.open_sid.other, "the-stateid!", 12);
	const CREATE3resok *cr = &out.u.create.CREATE3res_u.resok;
	assert_true(cr->obj.handle_follows);
	assert_ptr_equal(cr->obj.post_op_fh3_u.handle.data.data_val, (char *)out.objfh.data);
	assert_memory_equal(out.objfh.data, FH_A, strlen(FH_A));
	assert_int_equal(cr->obj_attributes.post_op_attr_u.attributes.fileid, 6);
	assert_true(cr->dir_wcc.before.attributes_follow);
	assert_int_equal(cr->dir_wcc.before.pre_op_attr_u.attributes.size, 4096);
	assert_true(cr->dir_wcc.after.attributes_follow);
	assert_int_equal(out.coh.dir_change, 78);
	/* the directory changed between the GETATTR and the OPEN: no pre-op
	 * attributes rather than wrong ones */
	f.r[2].nfs_resop4_u.opopen.OPEN4res_u.resok4.cinfo.before = 76;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_false(out.u.create.CREATE3res_u.resok.dir_wcc.before.attributes_follow);
	assert_true(out.u.create.CREATE3res_u.resok.dir_wcc.after.attributes_follow);
	/* GUARDED on a name that is there */
	f.res.resarray.resarray_len = 2;
	fake_op(&f, OP_OPEN, NFS4ERR_EXIST);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.create.status, NFS3ERR_EXIST);
	assert_false(out.opened);
	assert_true(out.u.create.CREATE3res_u.resfail.dir_wcc.before.attributes_follow);

	/* REMOVE of a directory: NVERIFY(type = dir) failed with SAME */
	fake_init(&f);
	rq.proc = NFS3_REMOVE;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 5, 77, 4096);
	fake_op(&f, OP_LOOKUP, NFS4_OK);
	fake_op(&f, OP_NVERIFY, NFS4ERR_SAME);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.remove.status, NFS3ERR_ISDIR);
	/* RMDIR of a file: VERIFY failed with NOT_SAME */
	rq.proc = NFS3_RMDIR;
	f.r[3].resop = OP_VERIFY;
	f.r[3].nfs_resop4_u.opverify.status = NFS4ERR_NOT_SAME;
	f.res.status = NFS4ERR_NOT_SAME;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.rmdir.status, NFS3ERR_NOTDIR);
	/* done: wcc from change_info and the GETATTRs */
	f.r[3].nfs_resop4_u.opverify.status = NFS4_OK;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	r = fake_op(&f, OP_REMOVE, NFS4_OK);
	r->nfs_resop4_u.opremove.REMOVE4res_u.resok4.cinfo.before = 77;
	r->nfs_resop4_u.opremove.REMOVE4res_u.resok4.cinfo.after = 79;
	fake_getattr(&f, 1, 5, 79, 4096);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.rmdir.status, NFS3_OK);
	assert_true(out.u.rmdir.RMDIR3res_u.resok.dir_wcc.before.attributes_follow);
	assert_true(out.u.rmdir.RMDIR3res_u.resok.dir_wcc.after.attributes_follow);
	assert_int_equal(out.coh.dir_change, 79);

	/* RENAME: both directories' wcc */
	fake_init(&f);
	rq.proc = NFS3_RENAME;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 5, 10, 100);
	fake_op(&f, OP_SAVEFH, NFS4_OK);
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 1, 6, 20, 200);
	r = fake_op(&f, OP_RENAME, NFS4_OK);
	r->nfs_resop4_u.oprename.RENAME4res_u.resok4.source_cinfo.before = 10;
	r->nfs_resop4_u.oprename.RENAME4res_u.resok4.target_cinfo.before = 19; /* raced */
	fake_getattr(&f, 2, 6, 21, 300);
	fake_op(&f, OP_RESTOREFH, NFS4_OK);
	fake_getattr(&f, 3, 5, 11, 50);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	const RENAME3resok *rn = &out.u.rename.RENAME3res_u.resok;
	assert_int_equal(out.u.rename.status, NFS3_OK);
	assert_true(rn->fromdir_wcc.before.attributes_follow);
	assert_int_equal(rn->fromdir_wcc.before.pre_op_attr_u.attributes.size, 100);
	assert_int_equal(rn->fromdir_wcc.after.post_op_attr_u.attributes.size, 50);
	assert_false(rn->todir_wcc.before.attributes_follow);
	assert_int_equal(rn->todir_wcc.after.post_op_attr_u.attributes.size, 300);

	/* LINK: the file's attributes after, the directory's wcc */
	fake_init(&f);
	rq.proc = NFS3_LINK;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_op(&f, OP_SAVEFH, NFS4_OK);
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_getattr(&f, 0, 5, 10, 100);
	r = fake_op(&f, OP_LINK, NFS4_OK);
	r->nfs_resop4_u.oplink.LINK4res_u.resok4.cinfo.before = 10;
	fake_getattr(&f, 1, 5, 11, 120);
	fake_op(&f, OP_RESTOREFH, NFS4_OK);
	fake_getattr(&f, 2, 8, 3, 7);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.link.status, NFS3_OK);
	assert_int_equal(out.u.link.LINK3res_u.resok.file_attributes.post_op_attr_u.attributes.fileid, 8);
	assert_true(out.u.link.LINK3res_u.resok.linkdir_wcc.before.attributes_follow);
	assert_int_equal(out.coh.change, 3);
	assert_int_equal(out.coh.dir_change, 11);

	/* FSSTAT, FSINFO, PATHCONF from the file system attributes */
	fake_init(&f);
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_fsattrs(&f, 0);
	rq.proc = NFS3_FSSTAT;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	const FSSTAT3resok *fs = &out.u.fsstat.FSSTAT3res_u.resok;
	assert_int_equal(fs->tbytes, 3000);
	assert_int_equal(fs->fbytes, 2000);
	assert_int_equal(fs->abytes, 1000);
	assert_int_equal(fs->tfiles, 300);
	assert_int_equal(fs->ffiles, 200);
	assert_int_equal(fs->afiles, 100);
	assert_true(fs->obj_attributes.attributes_follow);
	rq.proc = NFS3_FSINFO;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	const FSINFO3resok *fi = &out.u.fsinfo.FSINFO3res_u.resok;
	assert_int_equal(fi->rtmax, 1 << 20);
	assert_int_equal(fi->wtmax, UINT32_MAX);
	assert_int_equal(fi->maxfilesize, 1ull << 40);
	assert_int_equal(fi->time_delta.nseconds, 1000);
	assert_int_equal(fi->properties,
	                 FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME);
	rq.proc = NFS3_PATHCONF;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	const PATHCONF3resok *pc = &out.u.pathconf.PATHCONF3res_u.resok;
	assert_int_equal(pc->linkmax, 32000);
	assert_int_equal(pc->name_max, 255);
	assert_true(pc->no_trunc);
	assert_true(pc->chown_restricted);
	assert_false(pc->case_insensitive);
	assert_true(pc->case_preserving);

	/* the open-state phases' answers */
	fake_init(&f);
	rq.phase = N4_PH_OPEN;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	r = fake_op(&f, OP_OPEN, NFS4_OK);
	memcpy(r->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid.other, "open-stateid", 12);
	r->nfs_resop4_u.opopen.OPEN4res_u.resok4.rflags = OPEN4_RESULT_CONFIRM;
	r = fake_op(&f, OP_GETFH, NFS4_OK);
	r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len = 3;
	r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_val = (char *)"abc";
	assert_int_equal(n4_open_reply(&rq, &f.res, &sid, &rflags, &fh), NFS4_OK);
	assert_memory_equal(sid.other, "open-stateid", 12);
	assert_int_equal(rflags, OPEN4_RESULT_CONFIRM);
	assert_int_equal(fh.len, 3);
	f.res.resarray.resarray_len = 2; /* GETFH missing */
	assert_int_equal(n4_open_reply(&rq, &f.res, &sid, &rflags, &fh), -EPROTO);
	fake_init(&f);
	rq.phase = N4_PH_CONFIRM;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	r = fake_op(&f, OP_OPEN_CONFIRM, NFS4_OK);
	r->nfs_resop4_u.opopen_confirm.OPEN_CONFIRM4res_u.resok4.open_stateid.seqid = 2;
	assert_int_equal(n4_open_reply(&rq, &f.res, &sid, &rflags, &fh), NFS4_OK);
	assert_int_equal(sid.seqid, 2);
	fake_init(&f);
	rq.phase = N4_PH_CLOSE;
	fake_op(&f, OP_PUTFH, NFS4_OK);
	fake_op(&f, OP_CLOSE, NFS4ERR_BAD_SEQID);
	assert_int_equal(n4_open_reply(&rq, &f.res, &sid, &rflags, &fh), NFS4ERR_BAD_SEQID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stat_map),     cmocka_unit_test(test_owner), cmocka_unit_test(test_idmap_cache),
	    cmocka_unit_test(test_fattr_decode), cmocka_unit_test(test_sattr_roundtrip),
	    cmocka_unit_test(test_build),        cmocka_unit_test(test_reply_readdirplus),
	    cmocka_unit_test(test_reply_calls),  cmocka_unit_test(test_build_writes),
	    cmocka_unit_test(test_stateid_decision), cmocka_unit_test(test_reply_writes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
