#!/bin/bash
# Space management:
#  1. cache_size smaller than the data set: the cap is respected and the
#     least recently used files are the ones evicted;
#  2. a small cache filesystem (tmpfs) and no cap: culling keeps free space
#     above bcull, reads stay correct;
#  3. something else fills that filesystem below bstop: filling stops (log
#     line, fill_stopped 1), reads pass through correctly; space returns:
#     filling resumes at brun.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
h_start_ganesha up
E=$H_EXPORT_up
MiB=1048576
for i in 1 2 3 4 5 6 7 8; do
	h_mkdata "$E/f$i" 4096 "$i"
done
rd() { "$NR" --port "$H_PORT_px" --export "$E" --path "$1" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }
# wait until cachefsd NAME reports cache_bytes <= LIMIT (culling runs each second)
wait_bytes()
{
	local i b
	for ((i = 0; i < 50; i++)); do
		b=$(h_stat "$1" cache_bytes)
		[ "$b" -le "$2" ] && return 0
		sleep 0.2
	done
	h_fail "cache_bytes stayed at $b, above $2"
}

# --- 1. cache_size cap, LRU order ---
h_start_cachefsd px up --cache-size 12M --readahead 0 --fresh-guard 0
for i in 1 2 3 4 5 6 7 8; do
	[ "$(rd "f$i")" = "$(want "f$i")" ] || h_fail "f$i: wrong bytes"
	sleep 0.3
done
wait_bytes px $((12 * MiB))
ev=$(h_stat px evictions)
[ "$ev" -ge 5 ] || h_fail "32 MiB through a 12 MiB cache evicted only $ev objects"
# the most recently read file is still cached, the first one is not
f0=$(h_stat px fills)
[ "$(rd f8)" = "$(want f8)" ] || h_fail "f8: wrong bytes"
[ "$(h_stat px fills)" = "$f0" ] || h_fail "f8 (most recently used) was evicted"
[ "$(rd f1)" = "$(want f1)" ] || h_fail "f1: wrong bytes"
[ "$(h_stat px fills)" -gt "$f0" ] || h_fail "f1 (least recently used) was still cached"
h_stop_cachefsd px
h_log "ok: cap respected ($ev evictions), LRU order"

# --- 2. a small cache filesystem, thresholds only ---
h_mount_tmpfs "$H_TMP/smallfs" 24m || h_fail "cannot mount a tmpfs"
H_CACHE_py=$H_TMP/smallfs/cache
h_start_cachefsd py up --readahead 0 --brun 30 --bcull 20 --bstop 5 --fresh-guard 0
for round in 1 2; do
	for i in 1 2 3 4 5 6 7 8; do
		got=$("$NR" --port "$H_PORT_py" --export "$E" --path "f$i" | md5sum | cut -d' ' -f1)
		[ "$got" = "$(want "f$i")" ] || h_fail "small fs, f$i round $round: wrong bytes"
		sleep 0.2
	done
done
sleep 1.5
free=$(df --output=avail -B1 "$H_TMP/smallfs" | tail -1)
size=$(df --output=size -B1 "$H_TMP/smallfs" | tail -1)
pct=$((free * 100 / size))
ev=$(h_stat py evictions)
[ "$ev" -gt 0 ] || h_fail "64 MiB through a 24 MiB filesystem evicted nothing"
[ "$pct" -ge 15 ] || h_fail "culling left only $pct% free (bcull 20%)"

# --- 3. bstop reached by someone else's file; then space returns ---
h_stop_cachefsd py
rm -rf "$H_CACHE_py"
avail=$(df --output=avail -B1 "$H_TMP/smallfs" | tail -1)
head -c $((avail - size / 50)) /dev/zero >"$H_TMP/smallfs/hog" 2>/dev/null # leave 2%
h_start_cachefsd py up --readahead 0 --brun 30 --bcull 20 --bstop 5 --fresh-guard 0
sleep 0.5
[ "$(h_stat py fill_stopped)" = 1 ] || h_fail "below bstop, fill_stopped is not 1"
grep -q "filling stopped" "$H_LOG_py" || h_fail "no log line says filling stopped"
f0=$(h_stat py fills)
s0=$(h_stat py stores)
h_mkdata "$E/new1" 2048 11
got=$("$NR" --port "$H_PORT_py" --export "$E" --path new1 | md5sum | cut -d' ' -f1)
[ "$got" = "$(want new1)" ] || h_fail "pass-through read while filling is stopped: wrong bytes"
[ "$(h_stat py stores)" = "$s0" ] || h_fail "data was stored while filling was stopped"
rm -f "$H_TMP/smallfs/hog"
sleep 1.5
[ "$(h_stat py fill_stopped)" = 0 ] || h_fail "filling did not resume after space returned"
grep -q "filling resumed" "$H_LOG_py" || h_fail "no log line says filling resumed"
got=$("$NR" --port "$H_PORT_py" --export "$E" --path new1 | md5sum | cut -d' ' -f1)
[ "$got" = "$(want new1)" ] || h_fail "read after filling resumed: wrong bytes"
[ "$(h_stat py stores)" -gt "$s0" ] || h_fail "nothing was stored after filling resumed"
h_stop_cachefsd py
h_pass "cache_size cap with LRU eviction; small filesystem kept at $pct% free ($ev evictions); bstop stops fills, brun resumes them"
