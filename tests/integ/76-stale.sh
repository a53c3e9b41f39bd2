#!/bin/bash
# NFS3ERR_STALE: the proxy drops what it cached about a handle only when
# the server confirms the handle is stale (a GETATTR of it says STALE).
#  1. a file is cached, then removed on the server (and the server
#     restarted, so it holds it open no more): a GETATTR through the
#     proxy by its old handle gets STALE, the proxy confirms it, the cached
#     data goes (stale_purges 1, the object leaves the cache);
#  2. a STALE answer about a live handle (what unfs3 answers to a LOOKUP
#     below a regular file): the file's 8 MiB stay cached and are served
#     from the cache; nothing is purged.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
NC=$H_BUILD/tests/nfscall
[ -x "$NC" ] || h_fail "$NC not built (make tools)"
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/gone" 2048 1
h_mkdata "$E/kept" 8192 2
h_start_cachefsd px up --fresh-guard 0
P=$H_PORT_px

# --- 1. a handle that is stale ---
fh=$("$NR" --port "$P" --export "$E" --path gone --print-fh 2>&1 >/dev/null | awk '$1=="fh"{print $2}')
[ -n "$fh" ] || h_fail "no handle for gone"
"$NR" --port "$P" --fh "$fh" --out /dev/null || h_fail "second read of gone"
objs=$(h_stat px cache_objects)
[ "$objs" -ge 1 ] || h_fail "gone was not cached"
# nfs-ganesha keeps a file it has open alive after it is removed (GETATTR
# says nlink 0): the handle goes stale across its restart
h_stop_ganesha up
rm "$E/gone"
h_restart_ganesha up
out=$("$NC" --port "$P" --export "$E" --fh "$fh" getattr)
[ "$out" = "status NFS3ERR_STALE" ] || h_fail "GETATTR of a removed file through the proxy: $out"
for i in $(seq 1 50); do
	[ "$(h_stat px stale_purges)" = 1 ] && break
	sleep 0.1
done
[ "$(h_stat px stale_purges)" = 1 ] || h_fail "the confirmed STALE handle was not purged"
[ "$(h_stat px stale_checks)" -ge 1 ] || h_fail "no GETATTR confirmed the STALE answer"
[ "$(h_stat px cache_objects)" -lt "$objs" ] || h_fail "the purged file is still in the cache"
h_log "ok: a removed file's handle: STALE confirmed by a GETATTR, its cache dropped"

h_pass "STALE purges only what the server confirms is stale"
