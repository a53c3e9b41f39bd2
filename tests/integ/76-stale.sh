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

# --- 2. STALE about a live handle ---
# A relay in front of nfs-ganesha answers, as unfs3 does, STALE where the
# server says NOTDIR (a LOOKUP below a regular file) or NAMETOOLONG.
RELAY=$H_BUILD/tests/tcprelay
[ -x "$RELAY" ] || h_fail "$RELAY not built (make tools)"
RPORT=$(h_free_port)
"$RELAY" --listen "$RPORT" --target "127.0.0.1:$H_NFSPORT_up" --status "$H_TMP/relay.status" \
	--lookup-stale >"$H_TMP/relay.log" 2>&1 &
h_track tcprelay $!
h_wait_port "$RPORT" 10 || h_fail "tcprelay did not start: $(cat "$H_TMP/relay.log")"
H_URL_unfs="nfs://127.0.0.1$E?nfsport=$RPORT&mountport=$H_MNTPORT_up"
H_EXPORT_unfs=$E
h_start_cachefsd px2 unfs --fresh-guard 0
P2=$H_PORT_px2
kfh=$("$NR" --port "$P2" --export "$E" --path kept --print-fh 2>&1 >/dev/null | awk '$1=="fh"{print $2}')
[ -n "$kfh" ] || h_fail "no handle for kept"
"$NR" --port "$P2" --fh "$kfh" --out /dev/null || h_fail "second read of kept"
[ "$(h_stat px2 cache_bytes)" = $((8192 * 1024)) ] || h_fail "kept is not cached: $(h_stat px2 cache_bytes) bytes"
out=$("$NC" --port "$P2" --export "$E" --fh "$kfh" lookup x)
[ "$out" = "status NFS3ERR_STALE" ] || h_fail "LOOKUP below a file through the relay: $out"
out=$("$NC" --port "$P2" --export "$E" --path . lookup @300)
[ "$out" = "status NFS3ERR_STALE" ] || h_fail "LOOKUP of a 300-byte name through the relay: $out"
for i in $(seq 1 20); do
	[ "$(awk '$1=="rewritten"{print $2}' "$H_TMP/relay.status")" -ge 2 ] && break
	sleep 0.1
done
[ "$(awk '$1=="rewritten"{print $2}' "$H_TMP/relay.status")" -ge 2 ] ||
	h_fail "the relay rewrote no answer to STALE"
for i in $(seq 1 50); do
	[ "$(h_stat px2 stale_checks)" -ge 2 ] && [ "$(h_stat px2 upstream_inflight)" = 0 ] && break
	sleep 0.1
done
[ "$(h_stat px2 stale_checks)" -ge 2 ] || h_fail "no GETATTR asked whether the handles are stale"
[ "$(h_stat px2 stale_purges)" = 0 ] || h_fail "a STALE answer about a live handle purged it"
[ "$(h_stat px2 cache_bytes)" = $((8192 * 1024)) ] || h_fail "kept's cache went: $(h_stat px2 cache_bytes) bytes"
reads=$(h_stat px2 upstream_calls_READ)
got=$("$NR" --port "$P2" --fh "$kfh" | md5sum | cut -d' ' -f1)
[ "$got" = "$(h_md5 "$E/kept")" ] || h_fail "kept read back wrong"
[ "$(h_stat px2 upstream_calls_READ)" = "$reads" ] || h_fail "kept was not served from the cache"
h_log "ok: STALE answers about a live file and directory: confirmed alive, 8 MiB still served from the cache"

h_pass "STALE purges only what the server confirms is stale"
