/* Registration with a local rpcbind (cachefsd/ops/rpcbind.c): what makes a
 * plain `mount -t nfs -o vers=3 proxy:/EXPORT /mnt`, `showmount -e proxy`
 * and `rpcinfo -p proxy` work. Every program row with PROG_REGISTER
 * (include/procs.h) is registered for TCP at the listen port with the
 * rpcbind at 127.0.0.1:111, as the config key `register` says
 * (docs/operations.md, "Plain mounts").
 *
 * Both calls block, for at most 2 s (register; 3 s when a failed start
 * unregisters what it registered) and 1 s (unregister) in all, however
 * rpcbind behaves: they run once at start, before the daemon serves, and
 * once at exit, after it stopped; never while the event loop serves. */
#ifndef CFS_RPCBIND_H
#define CFS_RPCBIND_H

#include <stddef.h>

#include "config.h"

struct rpcbind_reg;

/* Registers the rows for TCP port `port`. A registration of another port
 * where nothing accepts a connection (a server that died, our own earlier
 * run) is replaced; one where a server answers is left alone: with
 * register = yes that fails the start, with auto the program is skipped
 * with a log line. No rpcbind, or one that stops answering within the
 * bound: auto logs one line and goes on (keeping what was registered
 * before), yes fails.
 * A stop signalled meanwhile (loop_stop_signalled()) ends it at once:
 * -EINTR, what it registered unregistered.
 * Returns 0 with *out (NULL when nothing was registered), or -errno with a
 * message in err naming the program, version, port and the fix; nothing
 * stays registered then. Sets control_counters.rpcbind_registered. */
int rpcbind_register(const struct cfs_config *cfg, int port, struct rpcbind_reg **out, char *err,
                     size_t errlen);
/* Unregisters exactly what rpcbind_register() registered and still points
 * at our port (a registration another server made since is left alone),
 * and frees r. Logs "unregistered" only for what rpcbind confirmed, and
 * names what it could not remove. NULL is a no-op. */
void rpcbind_unregister(struct rpcbind_reg *r);

#endif
