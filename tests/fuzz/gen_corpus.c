/* Writes the seed corpus for fuzz_rpc: real calls (every NFSv3 procedure,
 * MOUNT and NSM procedure, AUTH_SYS and AUTH_NONE, pipelined, fragmented),
 * encoded with libnfs's own encoders.
 *
 *   gen_corpus DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nsm.h>

#include "nlm.h"

static unsigned char buf[1 << 21];
static size_t len;

static void u32(uint32_t v)
{
	buf[len++] = (unsigned char)(v >> 24);
	buf[len++] = (unsigned char)(v >> 16);
	buf[len++] = (unsigned char)(v >> 8);
	buf[len++] = (unsigned char)v;
}

/* one record: marker, call header with AUTH_SYS (or AUTH_NONE), args */
static void call(uint32_t xid, uint32_t prog, uint32_t proc, zdrproc_t enc, void *args, int sys)
{
	size_t mark = len;
	ZDR z;

	u32(0);
	u32(xid);
	u32(0);
	u32(2);
	u32(prog);
	u32(prog == NSM_PROGRAM ? NSM_V1 : prog == NLM_PROGRAM ? NLM_V4 : 3);
	u32(proc);
	if (sys) {
		u32(1);
		u32(32);
		u32(42);
		u32(6);
		memcpy(buf + len, "client", 6);
		len += 8;
		u32(1000);
		u32(100);
		u32(2);
		u32(100);
		u32(200);
	} else {
		u32(0);
		u32(0);
	}
	u32(0);
	u32(0);
	if (enc) {
		zdrmem_create(&z, (char *)buf + len, (uint32_t)(sizeof(buf) - len), ZDR_ENCODE);
		if (!enc(&z, args)) {
			fprintf(stderr, "encode failed\n");
			exit(1);
		}
		len += zdr_getpos(&z);
		zdr_destroy(&z);
	}
	uint32_t rl = (uint32_t)(len - mark - 4) | 0x80000000u;
	buf[mark] = (unsigned char)(rl >> 24);
	buf[mark + 1] = (unsigned char)(rl >> 16);
	buf[mark + 2] = (unsigned char)(rl >> 8);
	buf[mark + 3] = (unsigned char)rl;
}

static void save(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
	len = 0;
}

int main(int argc, char **argv)
{
	char fhb[32], name[] = "file.txt", data[300];
	nfs_fh3 fh = {{sizeof(fhb), fhb}};
	char *path = "/export/sub";

	if (argc != 2)
		return 2;
	memset(fhb, 0x5a, sizeof(fhb));
	memset(data, 'd', sizeof(data));
	{
		GETATTR3args a = {fh};
		call(1, NFS_PROGRAM, NFS3_GETATTR, (zdrproc_t)zdr_GETATTR3args, &a, 1);
		save(argv[1], "getattr");
	}
	{
		LOOKUP3args a = {{fh, name}};
		call(2, NFS_PROGRAM, NFS3_LOOKUP, (zdrproc_t)zdr_LOOKUP3args, &a, 1);
		save(argv[1], "lookup");
	}
	{
		READ3args a = {fh, 4096, 65536};
		call(3, NFS_PROGRAM, NFS3_READ, (zdrproc_t)zdr_READ3args, &a, 1);
		save(argv[1], "read");
	}
	{
		WRITE3args a;
		memset(&a, 0, sizeof(a));
		a.file = fh;
		a.count = sizeof(data);
		a.stable = UNSTABLE;
		a.data.data_len = sizeof(data);
		a.data.data_val = data;
		call(4, NFS_PROGRAM, NFS3_WRITE, (zdrproc_t)zdr_WRITE3args, &a, 1);
		save(argv[1], "write");
	}
	{
		CREATE3args a;
		memset(&a, 0, sizeof(a));
		a.where.dir = fh;
		a.where.name = name;
		a.how.mode = GUARDED;
		a.how.createhow3_u.obj_attributes.mode.set_it = 1;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
		a.how.createhow3_u.obj_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
		call(5, NFS_PROGRAM, NFS3_CREATE, (zdrproc_t)zdr_CREATE3args, &a, 1);
		call(5, NFS_PROGRAM, NFS3_CREATE, (zdrproc_t)zdr_CREATE3args, &a, 1); /* again */
		save(argv[1], "create-twice");
	}
	{
		RENAME3args a = {{fh, name}, {fh, "other"}};
		call(6, NFS_PROGRAM, NFS3_RENAME, (zdrproc_t)zdr_RENAME3args, &a, 0);
		save(argv[1], "rename-authnone");
	}
	{
		READDIRPLUS3args a;
		memset(&a, 0, sizeof(a));
		a.dir = fh;
		a.dircount = 8192;
		a.maxcount = 65536;
		call(7, NFS_PROGRAM, NFS3_READDIRPLUS, (zdrproc_t)zdr_READDIRPLUS3args, &a, 1);
		save(argv[1], "readdirplus");
	}
	{
		SETATTR3args a;
		memset(&a, 0, sizeof(a));
		a.object = fh;
		a.new_attributes.size.set_it = 1;
		a.new_attributes.size.set_size3_u.size = 12345;
		a.guard.check = 1;
		call(8, NFS_PROGRAM, NFS3_SETATTR, (zdrproc_t)zdr_SETATTR3args, &a, 1);
		save(argv[1], "setattr");
	}
	{
		SYMLINK3args a;
		memset(&a, 0, sizeof(a));
		a.where.dir = fh;
		a.where.name = "link";
		a.symlink.symlink_data = "../target";
		call(9, NFS_PROGRAM, NFS3_SYMLINK, (zdrproc_t)zdr_SYMLINK3args, &a, 1);
		save(argv[1], "symlink");
	}
	{
		MKNOD3args a;
		memset(&a, 0, sizeof(a));
		a.where.dir = fh;
		a.where.name = "dev";
		a.what.type = NF3CHR;
		call(10, NFS_PROGRAM, NFS3_MKNOD, (zdrproc_t)zdr_MKNOD3args, &a, 1);
		save(argv[1], "mknod");
	}
	{
		/* MOUNT: MNT, EXPORT, DUMP, UMNT, NULL pipelined */
		call(11, MOUNT_PROGRAM, MOUNT3_MNT, (zdrproc_t)zdr_dirpath, &path, 1);
		call(12, MOUNT_PROGRAM, MOUNT3_EXPORT, NULL, NULL, 1);
		call(13, MOUNT_PROGRAM, MOUNT3_DUMP, NULL, NULL, 0);
		call(14, MOUNT_PROGRAM, MOUNT3_UMNT, (zdrproc_t)zdr_dirpath, &path, 1);
		call(15, NFS_PROGRAM, NFS3_NULL, NULL, NULL, 0);
		save(argv[1], "mount-pipelined");
	}
	{
		/* NSM: every procedure, pipelined; SM_NOTIFY alone (what sm-notify
		 * sends, over UDP in life) */
		NSM1_STATargs st = {"client1"};
		NSM1_MONargs mon;
		NSM1_UNMONargs un;
		NSM1_UNMONALLargs ua;
		NSM1_NOTIFYargs no = {"client1", 3};
		memset(&mon, 0, sizeof(mon));
		mon.mon_id.mon_name = "filer";
		mon.mon_id.my_id.my_name = "client1";
		mon.mon_id.my_id.my_prog = 100021;
		mon.mon_id.my_id.my_vers = 4;
		mon.mon_id.my_id.my_proc = 16;
		un.mon_id = mon.mon_id;
		ua.my_id = mon.mon_id.my_id;
		call(17, NSM_PROGRAM, NSM1_NULL, NULL, NULL, 0);
		call(18, NSM_PROGRAM, NSM1_STAT, (zdrproc_t)zdr_NSM1_STATargs, &st, 1);
		call(19, NSM_PROGRAM, NSM1_MON, (zdrproc_t)zdr_NSM1_MONargs, &mon, 1);
		call(20, NSM_PROGRAM, NSM1_UNMON, (zdrproc_t)zdr_NSM1_UNMONargs, &un, 1);
		call(21, NSM_PROGRAM, NSM1_UNMON_ALL, (zdrproc_t)zdr_NSM1_UNMONALLargs, &ua, 0);
		call(22, NSM_PROGRAM, NSM1_SIMU_CRASH, NULL, NULL, 0);
		call(24, NSM_PROGRAM, NSM1_NOTIFY, (zdrproc_t)zdr_NSM1_NOTIFYargs, &no, 0);
		save(argv[1], "nsm-pipelined");
		call(25, NSM_PROGRAM, NSM1_NOTIFY, (zdrproc_t)zdr_NSM1_NOTIFYargs, &no, 1);
		save(argv[1], "nsm-notify");
	}
	{
		/* NLM v4: the lock calls of two owners, SHARE, FREE_ALL and a
		 * filer's GRANTED, pipelined */
		NLM4_LOCKargs l;
		NLM4_TESTargs t;
		NLM4_UNLOCKargs u;
		NLM4_CANCargs c;
		NLM4_GRANTEDargs g;
		NLM4_SHAREargs sh;
		NLM4_NOTIFYargs n = {"client", 3};
		nlm4_lock lk;

		memset(&lk, 0, sizeof(lk));
		lk.caller_name = "client";
		lk.fh.data.data_len = fh.data.data_len;
		lk.fh.data.data_val = fh.data.data_val;
		lk.oh = "owner-1";
		lk.svid = 42;
		lk.l_len = 100;
		memset(&l, 0, sizeof(l));
		l.cookie.data.data_len = 4;
		l.cookie.data.data_val = "ck01";
		l.block = 1;
		l.exclusive = 1;
		l.lock = lk;
		call(17, NLM_PROGRAM, NLM4_LOCK, (zdrproc_t)zdr_NLM4_LOCKargs, &l, 1);
		memset(&t, 0, sizeof(t));
		t.cookie = l.cookie;
		t.lock = lk;
		t.lock.svid = 43;
		call(18, NLM_PROGRAM, NLM4_TEST, (zdrproc_t)zdr_NLM4_TESTargs, &t, 1);
		memset(&c, 0, sizeof(c));
		c.cookie = l.cookie;
		c.block = 1;
		c.lock = lk;
		call(19, NLM_PROGRAM, NLM4_CANCEL, (zdrproc_t)zdr_NLM4_CANCargs, &c, 1);
		memset(&u, 0, sizeof(u));
		u.cookie = l.cookie;
		u.lock = lk;
		call(20, NLM_PROGRAM, NLM4_UNLOCK, (zdrproc_t)zdr_NLM4_UNLOCKargs, &u, 1);
		memset(&g, 0, sizeof(g));
		g.cookie = l.cookie;
		g.lock = lk;
		call(21, NLM_PROGRAM, NLM4_GRANTED_MSG, (zdrproc_t)zdr_NLM4_GRANTEDargs, &g, 0);
		memset(&sh, 0, sizeof(sh));
		sh.cookie = l.cookie;
		sh.share.caller_name = "client";
		sh.share.fh = lk.fh;
		sh.share.oh = "owner-1";
		sh.share.mode = 1;
		sh.share.access = 3;
		call(22, NLM_PROGRAM, NLM4_SHARE, (zdrproc_t)zdr_NLM4_SHAREargs, &sh, 1);
		call(23, NLM_PROGRAM, NLM4_FREE_ALL, (zdrproc_t)zdr_NLM4_NOTIFYargs, &n, 1);
		call(24, NLM_PROGRAM, NLM4_NULL, NULL, NULL, 0);
		save(argv[1], "nlm-pipelined");
	}
	{
		/* a NULL call split into fragments */
		size_t start;
		call(16, NFS_PROGRAM, NFS3_NULL, NULL, NULL, 1);
		start = len;
		(void)start;
		unsigned char rec[256];
		size_t rl = len - 4;
		memcpy(rec, buf + 4, rl);
		len = 0;
		u32(10);
		memcpy(buf + len, rec, 10);
		len += 10;
		u32(0x80000000u | (uint32_t)(rl - 10));
		memcpy(buf + len, rec + 10, rl - 10);
		len += rl - 10;
		save(argv[1], "fragments");
	}
	return 0;
}
