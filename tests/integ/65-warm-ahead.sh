#!/bin/bash
# upstreams: ganesha knfsd
# Cached records read ahead for a listing (warm_ahead): after a restart
# on a warm cache (and the page cache dropped), a tar-like walk (nfsbench
# tar: READDIRPLUS, then LOOKUP, GETATTR, ACCESS and READ of each entry)
#  1. has the records of every listed regular file read ahead by a worker
#     (warm_ahead_objects: one per cached file of the listing), reads every
#     byte as before from the cache (no READ upstream);
#  2. with warm_ahead = 0, reads the same bytes with nothing read ahead.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NB=$H_BUILD/bench/nfsbench
[ -x "$NB" ] || h_fail "$NB not built (make tools)"
h_start_upstream up
E=$H_EXPORT_up
{
	h_up_mkdir up d && h_up_mkdir up d/sub &&
		for i in $(seq 1 20); do h_up_mkdata up d/f$i $((i * 2)) "$i" || exit 1; done &&
		h_up_mkdata up d/big 3000 77 && h_up_mkdata up d/sub/g 10 78
} || h_fail "cannot set up the files on the upstream"
t_made=$EPOCHREALTIME

# walk OUT: the tar walk of d through the proxy, "size xxh64 path" per file
walk()
{
	"$NB" tar --port "$H_PORT_px" --export "$E" --path d --verify "$1" >"$H_TMP/nb.out" 2>"$H_TMP/nb.err" ||
		h_fail "the tar walk failed: $(cat "$H_TMP/nb.err")"
}
h_start_cachefsd px up
h_past_guard "$t_made" up # the first walk stores everything
walk "$H_TMP/first"
[ "$(wc -l <"$H_TMP/first")" = 22 ] || h_fail "the first walk read $(wc -l <"$H_TMP/first") files, not 22"
h_stop_cachefsd px

# --- 1. restarted on the warm cache, page cache dropped ---
sync
echo 3 >/proc/sys/vm/drop_caches
h_start_cachefsd px up
walk "$H_TMP/second"
cmp -s "$H_TMP/first" "$H_TMP/second" || h_fail "the walk after the restart read other bytes: $(diff "$H_TMP/first" "$H_TMP/second" | head -3)"
[ "$(h_stat px upstream_calls_READ)" = 0 ] || h_fail "the walk after the restart sent $(h_stat px upstream_calls_READ) READs upstream"
# d lists f1..f20 and big (21 regular files), d/sub lists g
w=$(h_stat px warm_ahead_objects)
[ "$w" = 22 ] || h_fail "warm_ahead_objects is $w after the walk, not 22 (one per cached file listed)"
h_stop_cachefsd px

# --- 2. switched off ---
sync
echo 3 >/proc/sys/vm/drop_caches
h_start_cachefsd px up --warm-ahead 0
walk "$H_TMP/third"
cmp -s "$H_TMP/first" "$H_TMP/third" || h_fail "the walk with warm_ahead = 0 read other bytes"
[ "$(h_stat px warm_ahead_objects)" = 0 ] || h_fail "with warm_ahead = 0, $(h_stat px warm_ahead_objects) records were read ahead"
h_pass "a walk on a restarted warm cache has every listed file's record read ahead (22 of 22) and reads the same bytes from the cache; warm_ahead = 0 reads nothing ahead"
