/* The version cachefsd and cachefsctl report (cachefsd --version, the
 * control socket's info, cachefsctl --version). A build may give its own
 * with -DCACHEFSD_VERSION='"..."'. */
#ifndef CFS_VERSION_H
#define CFS_VERSION_H

#ifndef CACHEFSD_VERSION
#define CACHEFSD_VERSION "0.1.0"
#endif

#endif
