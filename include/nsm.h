/* NSM, the network status monitor (program 100024 v1, RFC 1813's
 * appendix), as a lock-forwarding proxy needs it (cachefsd/locks/nsm.c):
 *
 *   - the client hosts that hold locks through the proxy are remembered in
 *     the cache directory, one small file per host, as statd's sm/
 *     directory does (format below), so that a restart can tell them;
 *   - a client host's SM_NOTIFY (it rebooted) makes the lock room release
 *     its locks upstream (nsm_on_reboot()), and the host is forgotten;
 *   - the filer's SM_NOTIFY (it rebooted, its locks are gone) is relayed to
 *     every remembered client host, with the proxy's name and state, so
 *     that they reclaim their locks through the proxy in the filer's grace
 *     period; cachefsd's own start does the same (like sm-notify at boot).
 *
 * Files, under <cache_dir>/nsm/ (mode 0700, symbolic links refused):
 *   state        the proxy's NSM state number, decimal text and a newline:
 *                odd while up, raised at every start (as statd's)
 *   sm/NAME      one remembered client host: NAME is its caller_name, the
 *                content its address as numeric text and a newline
 *                ("10.1.2.3\n", "fd00::5\n"); names are 1..255 bytes of
 *                A-Z a-z 0-9 . - _ : not starting with '.'. An operator may
 *                add or remove such files while cachefsd is stopped.
 *
 * Everything runs on the event loop thread. */
#ifndef CFS_NSM_H
#define CFS_NSM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "req.h"

struct loop;

#define NSM_HOSTS_MAX 1024 /* client hosts remembered; more are refused */
#define NSM_NAME_MAX  255  /* bytes of a remembered host's name */
/* A relayed SM_NOTIFY is retried (1 s, 2 s, 4 s ... at most 16 s apart)
 * for this long, as sm-notify does by default, then given up. */
#define NSM_NOTIFY_GIVEUP_MS (15 * 60 * 1000)

/* Opens <cfg->cache_dir>/nsm/, raises the state number, loads the
 * remembered hosts, and sends every one an SM_NOTIFY (cachefsd
 * restarted). The upstream's host (from cfg->upstream) is resolved now to
 * recognise its SM_NOTIFY later. 0, or -errno with a message in err that
 * names the file. cfg must outlive nsm_stop(). */
int nsm_start(struct loop *l, const struct cfs_config *cfg, char *err, size_t errlen);
/* Abandons the notifications in flight and forgets the hosts in memory
 * (their files stay). */
void nsm_stop(void);

/* Remembers that the client host caller_name at peer holds a lock through
 * the proxy (the lock room calls it when a lock is granted). Idempotent; a
 * changed address is written again. 0, or -EINVAL (a name that cannot be
 * a file name, see above; an address that is not IPv4/IPv6), -ENOSPC
 * (NSM_HOSTS_MAX hosts already), -ENODEV (not started), or the file's
 * -errno when it is written inline (the host is then not remembered; on
 * the workers a failure is logged when it is known). */
int nsm_monitor(const char *caller_name, const struct sockaddr *peer, socklen_t len);

/* The disk workers the host files are written on (they are fsynced, and
 * the event loop never waits on the disk); NULL, the default: written
 * inline. Kept across nsm_stop()/nsm_start(); w must outlive their use. */
struct workers;
void nsm_use_workers(struct workers *w);

/* The function the lock room gives to release a rebooted client host's
 * locks upstream (NLM FREE_ALL for caller_name); called when that host's
 * SM_NOTIFY arrives, with its name (valid during the call) and new state.
 * One function: a second call replaces the first; fn NULL removes it (the
 * notifications are then only logged and counted). */
void nsm_on_reboot(void (*fn)(const char *caller_name, uint32_t state, void *arg), void *arg);

/* Takes a decoded NSM call and replies to it at once; nsm_take is the
 * same as a proto_submit_fn (engine_set_room(); arg unused). */
void nsm_submit(struct cfs_req *req);
void nsm_take(struct cfs_req *req, void *arg);

/* The state number in use (0 before nsm_start()); the hosts remembered. */
uint32_t nsm_state(void);
int nsm_host_count(void);
/* 1 when name (NUL-terminated) is remembered. */
int nsm_host_known(const char *name);

#endif
