/* The names of the NFSv3 status codes (nfsstat3, RFC 1813 section 2.6), for
 * the libnfs test clients (loadgen, nfs3cmp, nfsmodel, nfsread). */
#ifndef CFS_TEST_NFSNAMES_H
#define CFS_TEST_NFSNAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/* "NFS3_OK", "NFS3ERR_NOENT", ... (the same names as libnfs's
 * nfsstat3_to_str()); NULL for a value RFC 1813 does not define. */
static inline const char *nfsstat3_name(int s)
{
#define NFSSTAT3(x)                                                                                \
	{                                                                                          \
		x, #x                                                                              \
	}
	static const struct {
		int code;
		const char *name;
	} names[] = {
	    NFSSTAT3(NFS3_OK),
	    NFSSTAT3(NFS3ERR_PERM),
	    NFSSTAT3(NFS3ERR_NOENT),
	    NFSSTAT3(NFS3ERR_IO),
	    NFSSTAT3(NFS3ERR_NXIO),
	    NFSSTAT3(NFS3ERR_ACCES),
	    NFSSTAT3(NFS3ERR_EXIST),
	    NFSSTAT3(NFS3ERR_XDEV),
	    NFSSTAT3(NFS3ERR_NODEV),
	    NFSSTAT3(NFS3ERR_NOTDIR),
	    NFSSTAT3(NFS3ERR_ISDIR),
	    NFSSTAT3(NFS3ERR_INVAL),
	    NFSSTAT3(NFS3ERR_FBIG),
	    NFSSTAT3(NFS3ERR_NOSPC),
	    NFSSTAT3(NFS3ERR_ROFS),
	    NFSSTAT3(NFS3ERR_MLINK),
	    NFSSTAT3(NFS3ERR_NAMETOOLONG),
	    NFSSTAT3(NFS3ERR_NOTEMPTY),
	    NFSSTAT3(NFS3ERR_DQUOT),
	    NFSSTAT3(NFS3ERR_STALE),
	    NFSSTAT3(NFS3ERR_REMOTE),
	    NFSSTAT3(NFS3ERR_BADHANDLE),
	    NFSSTAT3(NFS3ERR_NOT_SYNC),
	    NFSSTAT3(NFS3ERR_BAD_COOKIE),
	    NFSSTAT3(NFS3ERR_NOTSUPP),
	    NFSSTAT3(NFS3ERR_TOOSMALL),
	    NFSSTAT3(NFS3ERR_SERVERFAULT),
	    NFSSTAT3(NFS3ERR_BADTYPE),
	    NFSSTAT3(NFS3ERR_JUKEBOX),
	};
#undef NFSSTAT3

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == s)
			return names[i].name;
	return NULL;
}

#endif
