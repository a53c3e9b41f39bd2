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
		static const nfs_opnum4 first[] = {OP_PUTFH, OP_GETATTR, OP_READDIR, OP_LOOKUPP,
		                                   OP_GETATTR};
		static const nfs_opnum4 next[] = {OP_PUTFH, OP_GETATTR, OP_READDIR};
		static const char zero[8];
		memset(&a, 0, sizeof(a));
		a.dir = fh;
		a.dircount = 1000;
		a.maxcount = 8000;
		memcpy(a.cookieverf, "verifier", 8);
		assert_int_equal(n4_req_from_v3(&rq, NFS3_READDIRPLUS, &a), 0);
		assert_int_equal(n4_build(&b, &rq), 0);
		ops_are(&b, first, 5); /* ".." of a directory: LOOKUPP */
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.cookie, 0);
		assert_memory_equal(b.ops[2].nfs_argop4_u.opreaddir.cookieverf, zero, 8);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.dircount, 1000);
		assert_int_equal(b.ops[2].nfs_argop4_u.opreaddir.maxcount, 8000);
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
	}
	/* not built yet, and handles v4 does not take */
	{
		WRITE3args w;
		GETATTR3args g;
		memset(&w, 0, sizeof(w));
		w.file = fh;
		assert_int_equal(n4_req_from_v3(&rq, NFS3_WRITE, &w), -EOPNOTSUPP);
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
	nfs_resop4 r[8];
	COMPOUND4res res;
	struct ab attrs[8];
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
	memset(&f.attrs[6], 0, sizeof(f.attrs[6]));
	bit(&f.attrs[6], FATTR4_FILEID);
	p64(&f.attrs[6], 499);
	fattr_of(&f.attrs[6], &fake_op(&f, OP_GETATTR, NFS4_OK)
	                           ->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes);

	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_int_equal(out.u.readdirplus.status, NFS3_OK);
	READDIRPLUS3resok *ok = &out.u.readdirplus.READDIRPLUS3res_u.resok;
	assert_true(ok->reply.eof);
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
	           (4 + 8 + 4 + 4 + 8 + 4 + 4) + (4 + 8 + 4 + 8 + 8 + 4 + 84 + 4 + 4 + 72);
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	ok = &out.u.readdirplus.READDIRPLUS3res_u.resok;
	assert_false(ok->reply.eof);
	assert_string_equal(ok->reply.entries->nextentry->nextentry->name, "alpha");
	assert_null(ok->reply.entries->nextentry->nextentry->nextentry);
	n4_out_free(&out);
	rq.count--;
	assert_int_equal(n4_reply_to_v3(&rq, &f.res, "", &out), 0);
	assert_null(out.u.readdirplus.READDIRPLUS3res_u.resok.reply.entries->nextentry->nextentry);
	n4_out_free(&out);

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stat_map),     cmocka_unit_test(test_owner),
	    cmocka_unit_test(test_fattr_decode), cmocka_unit_test(test_sattr_roundtrip),
	    cmocka_unit_test(test_build),        cmocka_unit_test(test_reply_readdirplus),
	    cmocka_unit_test(test_reply_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
