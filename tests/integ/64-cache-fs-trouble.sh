#!/bin/bash
# 64-cache-fs-trouble: small, full and read-only cache filesystems (issue 14,
# item 5). Before: an 8 MiB tmpfs logged hundreds of "filling stopped" /
# "filling resumed" lines a second and stored nothing, a 64 KiB one logged
# "commit failed" 12 times a second forever, a read-only one a "cannot
# write" per fill and a "commit failed" every 20 ms, never "filling
# stopped". Now:
#  1. an 8 MiB tmpfs (1 MiB chunks, 10/7/3 %), four readers at once, 64 MiB
#     through it twice: no fill state change at all; what fits (a file of
#     4 MiB read alone) is stored and then served from the cache (all of
#     it within four re-reads); bytes right;
#  2. a 64 KiB tmpfs: refused at start with a message naming the directory,
#     its size, what it needs and the fix, nothing written into it; a 4 MiB
#     one is refused with 1 MiB chunks, naming chunk_size 64K, and works
#     with it;
#  3. a filesystem that becomes read-only under the running daemon and
#     writable again (the cache directory on a tmpfs remounted ro and rw;
#     its index/ on a tmpfs of its own, because LMDB keeps its files open
#     for writing and no filesystem holding them can be remounted ro):
#     fill_stopped 1 with reason read_only (stats, cachefsctl, metrics),
#     the reads of uncached files counted as fills refused (read_only),
#     one log line, cached and uncached reads right, nothing stored; rw:
#     filling resumes (one line), the file is stored and served from the
#     cache;
#  4. the cache filesystem filled to the last block by someone else in ttl
#     mode (metadata answers are written to the index): reason disk_full,
#     commits fail with ENOSPC and back off (a handful in 6 s), bounded
#     lines, listings and reads right; space back: one "filling resumed",
#     stores again;
#  5. ext4 remounted read-only by an error (errors=remount-ro) under the
#     running daemon: EROFS on every write and commit while statvfs still
#     says rw: the same state and reason (fills refused for it on
#     /metrics), one line, commits retried with a
#     backoff (a handful in 6 s, not every 20 ms), reads right; recovery:
#     stop, fsck, mount, start: what was committed is served from the cache
#     and filling works.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
CTLBIN=$H_BUILD/cachefsctl
for b in "$NR" "$CTLBIN"; do [ -x "$b" ] || h_fail "$b not built (make all tools)"; done
h_start_ganesha up
E=$H_EXPORT_up
MiB=1048576
for i in 1 2 3 4 5 6 7 8; do
	h_mkdata "$E/f$i" 4096 "$i"
done
want() { md5sum <"$E/$1" | cut -d' ' -f1; }
# rd NAME FILE: the file's md5 read through cachefsd NAME
rd()
{
	local p="H_PORT_$1"
	"$NR" --port "${!p}" --export "$E" --path "$2" | md5sum | cut -d' ' -f1
}
check() { [ "$(rd "$1" "$2")" = "$(want "$2")" ] || h_fail "$1: $2: wrong bytes ($3)"; }
lines() { grep -c -- "$2" "$1"; } # PATTERN in LOG: how many lines
# the lines of before, one per failed write or commit
OLDERR="cannot write to the cache\|cache index: commit failed"
# wait_stat NAME KEY VALUE SECONDS
wait_stat()
{
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		[ "$(h_stat "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	h_fail "$1: $2 is $(h_stat "$1" "$2"), not $3, after $4 s"
}

# --- 1. an 8 MiB cache filesystem ----------------------------------------
h_mount_tmpfs "$H_TMP/fs8" 8m || h_fail "cannot mount a tmpfs"
H_CACHE_a=$H_TMP/fs8/cache
h_start_cachefsd a up --fresh-guard 0
for round in 1 2; do
	pids=()
	for i in 1 2 3 4 5 6 7 8; do
		check a "f$i" "8 MiB fs, round $round" &
		pids+=($!)
		# four at a time
		if [ $((i % 4)) = 0 ]; then
			for p in "${pids[@]}"; do wait "$p" || h_fail "a reader failed"; done
			pids=()
		fi
	done
done
# A file read alone fits (others are culled for it): then served from the
# cache. Its readahead reserves 4 of the 8 MiB within a pass or two, before
# the culling it asks for has freed anything (evicted files are unlinked
# after their commit): a chunk refused then (served, not stored) is stored
# by a later read. So: all of it from the cache within four re-reads, and
# never less than the re-read before (nothing of it culled again).
check a f1 "8 MiB fs, alone"
sleep 1.5
seq_got=""
prev=0
for r in 1 2 3 4; do
	c0=$(h_stat a bytes_from_cache)
	check a f1 "8 MiB fs, re-read $r"
	c1=$(h_stat a bytes_from_cache)
	kib=$(((c1 - c0) / 1024))
	seq_got+="${seq_got:+, }$kib"
	[ "$kib" -ge "$prev" ] || h_fail "8 MiB fs: re-reads of a file of 4096 KiB took $seq_got KiB from the cache"
	prev=$kib
	[ "$kib" = 4096 ] && break
	sleep 0.5
done
[ "$prev" = 4096 ] || h_fail "8 MiB fs: re-reads of a file of 4096 KiB took $seq_got KiB from the cache"
[ "$(h_stat a fill_stopped)" = 0 ] || h_fail "8 MiB fs: filling stopped ($(h_stat a fill_stopped_reason))"
n=$(lines "$H_LOG_a" "filling")
[ "$n" = 0 ] || h_fail "8 MiB fs: $n filling stopped/resumed lines: $(grep filling "$H_LOG_a" | head -5)"
[ "$(lines "$H_LOG_a" "$OLDERR")" = 0 ] || h_fail "8 MiB fs: write errors logged"
[ "$(h_stat a cache_write_failures)" = 0 ] || h_fail "8 MiB fs: $(h_stat a cache_write_failures) data writes failed"
cached=$(h_stat a cache_bytes)
[ "$cached" -ge $((4 * MiB)) ] || h_fail "8 MiB fs: only $cached bytes cached"
stops=$(h_stat a space_stop_bytes)
runb=$(h_stat a space_run_bytes)
[ "$stops" -ge 251000 ] && [ "$runb" -ge $((stops + 2 * MiB)) ] ||
	h_fail "8 MiB fs: levels stop $stops run $runb"
h_stop_cachefsd a
h_log "ok: 8 MiB fs: 128 MiB read by four readers, 0 fill state lines, $((cached / 1024)) KiB cached, a file read alone then $seq_got KiB from the cache"

# --- 2. too small: refused at start --------------------------------------
h_mount_tmpfs "$H_TMP/fs64k" 64k || h_fail "cannot mount a tmpfs"
port=$(h_free_port)
out=$(timeout 30 "$H_BUILD/cachefsd" --foreground --upstream "$H_URL_up" --listen "127.0.0.1:$port" \
	--cache-dir "$H_TMP/fs64k/cache" --stats-file "$H_TMP/b.stats" 2>&1) &&
	h_fail "cachefsd started on a 64 KiB cache filesystem"
msg="cache_dir $H_TMP/fs64k/cache: its filesystem holds 64 KiB, too small for chunk_size 1.0 MiB with brun/bcull/bstop 10/7/3 %: it needs at least 4.1 MiB"
grep -qF "$msg" <<<"$out" || h_fail "64 KiB fs: message: $out"
grep -qF "give the cache a larger filesystem" <<<"$out" || h_fail "64 KiB fs: no fix named: $out"
! grep -q "chunk_size 64K" <<<"$out" || h_fail "64 KiB fs: a smaller chunk would not fit either: $out"
left=$(find "$H_TMP/fs64k/cache" -mindepth 1 2>/dev/null | grep -v '/\.probe\.' | head -3)
[ -z "$left" ] || h_fail "64 KiB fs: a refused start left $left"
! ss -Hltn "sport = :$port" | grep -q . || h_fail "64 KiB fs: a refused start left a listener"
h_mount_tmpfs "$H_TMP/fs4m" 4m || h_fail "cannot mount a tmpfs"
out=$(timeout 30 "$H_BUILD/cachefsd" --foreground --upstream "$H_URL_up" --listen "127.0.0.1:$port" \
	--cache-dir "$H_TMP/fs4m/cache" --stats-file "$H_TMP/b.stats" 2>&1) &&
	h_fail "cachefsd started on a 4 MiB cache filesystem with 1 MiB chunks"
grep -qF "or a smaller chunk_size (64K needs 264 KiB)" <<<"$out" || h_fail "4 MiB fs: $out"
H_CACHE_b=$H_TMP/fs4m/cache
h_start_cachefsd b up --fresh-guard 0 --chunk-size 64K --readahead 0
h_mkdata "$E/small" 1024 9
check b small "4 MiB fs, 64K chunks"
sleep 0.5
c0=$(h_stat b bytes_from_cache)
check b small "4 MiB fs, 64K chunks, again"
[ $(($(h_stat b bytes_from_cache) - c0)) = $MiB ] || h_fail "4 MiB fs, 64K chunks: a 1 MiB file not served from the cache"
[ "$(lines "$H_LOG_b" "filling")" = 0 ] || h_fail "4 MiB fs, 64K chunks: $(grep filling "$H_LOG_b" | head -3)"
h_stop_cachefsd b
h_log "ok: 64 KiB fs refused (named, sizes, the fix); 4 MiB fs refused with 1M chunks, runs with 64K"

# --- 3. read-only and back, under the running daemon ---------------------
A=$H_TMP/fsro
h_mount_tmpfs "$A" 64m || h_fail "cannot mount a tmpfs"
H_CACHE_c=$A/cache
h_start_cachefsd c up --fresh-guard 0 --memory-cache 0
check c f1 "before"
h_stop_cachefsd c
cp -a "$A/cache/index" "$H_TMP/index.copy"
mount -t tmpfs -o size=32m tmpfs "$A/cache/index" || h_fail "cannot mount the index tmpfs"
h_atexit "umount $A/cache/index"
cp -a "$H_TMP/index.copy/." "$A/cache/index/"
h_start_cachefsd c up --fresh-guard 0 --memory-cache 0
C=$H_CACHE_c
f0=$(h_stat c fills)
check c f1 "cached, rw"
[ "$(h_stat c fills)" = "$f0" ] || h_fail "f1 was not served from the cache after the restart"
ro=0
for i in $(seq 1 50); do
	mount -o remount,ro "$A" 2>/dev/null && ro=1 && break
	sleep 0.1 # a data file open for writing
done
[ $ro = 1 ] || h_fail "cannot remount $A read-only"
wait_stat c fill_stopped 1 3
[ "$(h_stat c fill_stopped_reason)" = read_only ] || h_fail "reason $(h_stat c fill_stopped_reason), not read_only"
"$CTLBIN" --cache-dir "$C" stats | grep -q "filling STOPPED (read_only; reads pass through)" ||
	h_fail "cachefsctl stats: $("$CTLBIN" --cache-dir "$C" stats | grep -i filling)"
"$CTLBIN" --cache-dir "$C" stats --json | jq -e '.fill_stopped_reason == "read_only"' >/dev/null ||
	h_fail "cachefsctl stats --json: no reason"
s0=$(h_stat c stores)
o0=$(h_stat c cache_objects)
check c f1 "cached, read-only"
check c f2 "not cached, read-only"
check c f3 "not cached, read-only"
check c f2 "not cached, read-only, again"
sleep 1.5
[ "$(h_stat c stores)" = "$s0" ] || h_fail "stored while the filesystem was read-only"
[ "$(h_stat c cache_objects)" = "$o0" ] || h_fail "objects grew while the filesystem was read-only"
[ "$(h_stat c fills_refused_read_only)" -ge 2 ] ||
	h_fail "read-only: $(h_stat c fills_refused_read_only) fills refused (read_only) for two uncached files"
[ "$(h_stat c fill_stopped)" = 1 ] || h_fail "fill_stopped went back to 0 on a read-only filesystem"
[ "$(lines "$H_LOG_c" "filling stopped: the cache filesystem is mounted read-only")" = 1 ] ||
	h_fail "read-only: $(grep filling "$H_LOG_c")"
[ "$(lines "$H_LOG_c" "filling")" = 1 ] || h_fail "read-only: $(grep filling "$H_LOG_c")"
[ "$(lines "$H_LOG_c" "$OLDERR")" = 0 ] || h_fail "read-only: $(grep "$OLDERR" "$H_LOG_c" | head -3)"
mount -o remount,rw "$A" || h_fail "cannot remount $A read-write"
wait_stat c fill_stopped 0 3
[ "$(h_stat c fill_stopped_reason)" = none ] || h_fail "reason $(h_stat c fill_stopped_reason) after rw"
[ "$(lines "$H_LOG_c" "filling resumed")" = 1 ] || h_fail "rw: $(grep filling "$H_LOG_c")"
check c f2 "after rw"
[ "$(h_stat c stores)" -gt "$s0" ] || h_fail "nothing stored after the filesystem was writable again"
sleep 0.5
f0=$(h_stat c fills)
check c f2 "after rw, cached"
[ "$(h_stat c fills)" = "$f0" ] || h_fail "f2 was not served from the cache after rw"
[ "$(lines "$H_LOG_c" "filling")" = 2 ] || h_fail "rw: $(grep filling "$H_LOG_c")"
h_stop_cachefsd c
h_log "ok: read-only and back: fill_stopped 1 (read_only) in stats, cachefsctl and json, 1 line, reads right, nothing stored; rw: resumed, stored, from the cache"

# --- 4. full to the last block, ttl mode: commits back off ----------------
# Nothing cached to cull: the index itself cannot grow (metadata answers
# of a directory of 3000 files are written to it).
mkdir "$E/many"
for i in $(seq 1 3000); do : >"$E/many/n$i"; done
F=$H_TMP/fsfull
h_mount_tmpfs "$F" 16m || h_fail "cannot mount a tmpfs"
H_CACHE_e=$F/cache
h_start_cachefsd e up --fresh-guard 0 --meta-ttl 60 --memory-cache 0 --readahead 0
ls_e() { nfs-ls "nfs://127.0.0.1$E/many?nfsport=$H_PORT_e&mountport=$H_PORT_e" | wc -l; }
dd if=/dev/zero of="$F/ballast" bs=64k 2>/dev/null # to ENOSPC
wait_stat e fill_stopped 1 3
t0=$(date +%s%N)
for r in 1 2 3 4 5 6; do
	[ "$(ls_e)" = 3000 ] || h_fail "full fs: listing $r: $(ls_e) names, not 3000"
	check e f1 "full fs, round $r"
	sleep 1
done
ms=$((($(date +%s%N) - t0) / 1000000))
cf=$(h_stat e cache_commit_failures)
reason=$(h_stat e fill_stopped_reason)
n=$(lines "$H_LOG_e" "filling")
[ "$cf" -ge 1 ] && [ "$cf" -le 10 ] || h_fail "full fs: $cf commits failed in $ms ms (backoff)"
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || h_fail "full fs: $n filling lines: $(grep filling "$H_LOG_e")"
[ "$(lines "$H_LOG_e" "$OLDERR")" = 0 ] ||
	h_fail "full fs: $(grep "$OLDERR" "$H_LOG_e" | head -3)"
rm -f "$F/ballast"
wait_stat e fill_stopped 0 15
[ "$(lines "$H_LOG_e" "filling resumed")" = 1 ] || h_fail "full fs: $(grep filling "$H_LOG_e")"
[ "$(ls_e)" = 3000 ] || h_fail "full fs, space back: listing"
check e f1 "full fs, space back"
check e f1 "full fs, space back, again"
[ "$(h_stat e stores)" -gt 0 ] || h_fail "full fs: nothing stored with the space back"
[ "$(h_stat e checksum_failures)" = 0 ] || h_fail "full fs: checksum failures"
h_stop_cachefsd e
h_log "ok: full fs in ttl mode: $reason, $cf commits failed in $ms ms, $n filling lines, listings and reads right, resumed"

# --- 5. ext4 remounted read-only by an error -----------------------------
# Last: it needs ext4, e2fsprogs and a loop device, and skips without them.
[ -e /sys/fs/ext4 ] || h_skip "no ext4 in this kernel"
command -v mkfs.ext4 >/dev/null || h_skip "mkfs.ext4 is not installed (e2fsprogs)"
IMG=$H_TMP/ext4.img
truncate -s 64M "$IMG"
mkfs.ext4 -q -F "$IMG" || h_fail "mkfs.ext4"
DEV=$(losetup -f --show "$IMG") || h_skip "no loop device (losetup -f)"
h_atexit "losetup -d $DEV"
M=$H_TMP/ext4
mkdir -p "$M"
mount -o errors=remount-ro "$DEV" "$M" || h_fail "cannot mount $DEV"
h_atexit "umount $M"
H_CACHE_d=$M/cache
MP=$(h_free_port)
h_start_cachefsd d up --fresh-guard 0 --memory-cache 0 --metrics-listen "127.0.0.1:$MP"
check d f1 "ext4"
sleep 0.3
sync -f "$M" # the error below loses what is not on the disk
[ "$(h_stat d cache_bytes)" = $((4 * MiB)) ] || h_fail "ext4: f1 not cached ($(h_stat d cache_bytes))"
echo 1 >"/sys/fs/ext4/$(basename "$DEV")/trigger_fs_error" || h_skip "no trigger_fs_error for $DEV"
# every write and commit now gets EROFS, statvfs still says rw
t0=$(date +%s%N)
check d f2 "ext4 read-only"
check d f1 "ext4 read-only, cached"
check d f3 "ext4 read-only"
wait_stat d fill_stopped 1 3
[ "$(h_stat d fill_stopped_reason)" = read_only ] || h_fail "ext4: reason $(h_stat d fill_stopped_reason)"
metrics=$(curl -sf "http://127.0.0.1:$MP/metrics") || h_fail "ext4: no metrics"
grep -q '^cachefsd_fill_stopped_reason{reason="read_only"} 1$' <<<"$metrics" ||
	h_fail "ext4: metrics: $(grep fill_stopped <<<"$metrics")"
refused=$(sed -n 's/^cachefsd_fills_refused_total{reason="read_only"} //p' <<<"$metrics")
[ "${refused:-0}" -ge 1 ] || h_fail "ext4: metrics: $(grep fills_refused <<<"$metrics")"
for i in 4 5 6; do check d "f$i" "ext4 read-only, idle pass"; done
sleep 5 # idle: commits retried at most every few seconds
ms=$((($(date +%s%N) - t0) / 1000000))
cf=$(h_stat d cache_commit_failures)
wf=$(h_stat d cache_write_failures)
[ "$cf" -ge 1 ] && [ "$cf" -le 8 ] || h_fail "ext4: $cf commits failed in $ms ms (backoff)"
[ "$(lines "$H_LOG_d" "filling stopped: the cache filesystem is read-only (Read-only file system")" = 1 ] ||
	h_fail "ext4: $(grep filling "$H_LOG_d")"
[ "$(lines "$H_LOG_d" "filling")" = 1 ] || h_fail "ext4: $(grep filling "$H_LOG_d")"
[ "$(lines "$H_LOG_d" "$OLDERR")" = 0 ] ||
	h_fail "ext4: $(grep "$OLDERR" "$H_LOG_d" | head -3)"
h_log "ok: ext4 read-only by an error: read_only, 1 line, $cf commits and $wf writes failed in $ms ms, reads right"
h_stop_cachefsd d
umount "$M" || h_fail "cannot unmount the ext4 image"
e2fsck -fy "$DEV" >/dev/null 2>&1
[ $? -le 1 ] || h_fail "e2fsck could not repair the image"
mount -o errors=remount-ro "$DEV" "$M" || h_fail "cannot mount $DEV again"
h_start_cachefsd d up --fresh-guard 0 --memory-cache 0
f0=$(h_stat d fills)
check d f1 "ext4 after repair"
[ "$(h_stat d fills)" = "$f0" ] || h_fail "ext4: f1, committed before the error, not served from the cache"
[ "$(h_stat d checksum_failures)" = 0 ] || h_fail "ext4: checksum failures after repair"
check d f2 "ext4 after repair"
[ "$(h_stat d fill_stopped)" = 0 ] && [ "$(h_stat d stores)" -gt 0 ] || h_fail "ext4: not filling after repair"
h_stop_cachefsd d
h_log "ok: ext4 repaired: what was committed is served from the cache, filling works"

h_pass "small (8 MiB: no flapping, stores; 64 KiB: refused), read-only (tmpfs ro/rw, ext4 error) and full cache filesystems: one line per change, commits back off, reads right"
