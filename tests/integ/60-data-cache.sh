#!/bin/bash
# upstreams: ganesha ganesha4
# The data cache, against a real nfs-ganesha upstream:
#  1. a multi-MiB file read through the proxy is read again with the
#     upstream stopped: identical bytes, so they came from the cache;
#  2. after a cachefsd restart the cache is still warm (no fills);
#  3. a byte flipped inside a cached data file: the read is still correct,
#     the checksum-failure counter rises; the same for a deleted data file;
#  4. reading only the middle of a file caches only those chunks;
#  5. small files (<= inline_max) make no data files;
#  6. EOF and odd sizes: empty file, sizes around the chunk size, sparse file;
#  7. kill -9 in the middle of filling: after restart every read is correct.
#  8. kill -9 300 ms after a small file was cached: it is still cached.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
[ -x "$NR" ] || h_fail "$NR not built (make tools)"
h_start_upstream up
E=$H_EXPORT_up
MiB=1048576
h_mkdata "$E/big" 12288 1 # 12 MiB
mkdir -p "$E/small"
for i in $(seq 1 120); do
	head -c $((i * 500)) "$E/big" >"$E/small/s$i" # 500 B .. 60 KB
done
: >"$E/empty"
for s in $((MiB - 1)) $MiB $((MiB + 1)) $((3 * MiB + 4321)); do
	head -c $s "$E/big" >"$E/odd-$s"
done
truncate -s $((5 * MiB)) "$E/sparse"
printf 'tail' | dd of="$E/sparse" bs=1 seek=$((4 * MiB + 100)) conv=notrunc 2>/dev/null
h_mkdata "$E/middle" 8192 2 # 8 MiB

# --fresh-guard 0: the files were created a moment ago, and data of files
# changed in the last 2 s is not stored (the guard is tested in 71-writers)
h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
P=$H_PORT_px

# read FILE through the proxy by path (MNT + LOOKUP + READs); md5 to stdout
rd() { "$NR" --port "$P" --export "$E" --path "$1" "${@:2}" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }

# --- 1. warm read with the upstream stopped ---
got=$("$NR" --port "$P" --export "$E" --path big --print-fh 2>"$H_TMP/fh" | md5sum | cut -d' ' -f1)
[ "$got" = "$(want big)" ] || h_fail "cold read of big: md5 differs"
fh=$(awk '$1=="fh"{print $2}' "$H_TMP/fh")
fills1=$(h_stat px fills)
[ "$fills1" -ge 12 ] || h_fail "cold read of 12 MiB made only $fills1 fills"
h_stop_ganesha up
got=$("$NR" --port "$P" --fh "$fh" --timeout 20 | md5sum | cut -d' ' -f1)
[ "$got" = "$(want big)" ] || h_fail "read with the upstream stopped: md5 differs"
[ "$(h_stat px fills)" = "$fills1" ] || h_fail "a read with the upstream stopped made fills"
h_log "ok: 12 MiB served from the cache with the upstream stopped"
h_restart_ganesha up

# --- 2. restart: still warm ---
h_stop_cachefsd px
h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
[ "$(rd big)" = "$(want big)" ] || h_fail "read after restart: md5 differs"
[ "$(h_stat px fills)" = 0 ] || h_fail "read after a restart fetched from the upstream"
[ "$(h_stat px read_hits)" -ge 12 ] || h_fail "read after a restart: too few hits"
# those bytes went to the socket from the chunks' own buffers (lent, not
# copied into the replies; --memory-cache 0 drops each chunk while its
# reply may still be queued): the md5 above is of them
[ "$(h_stat px reads_lent)" -ge 12 ] || h_fail "read after a restart: replies not sent from the chunks"
h_log "ok: warm after a restart"

# --- 3. a flipped byte in a cached data file ---
mapfile -t files < <(find "$H_CACHE_px/data" -type f -size +100k)
[ "${#files[@]}" -ge 1 ] || h_fail "no data file in $H_CACHE_px/data"
f=${files[0]}
b=$(od -An -tu1 -j 4097 -N1 "$f" | tr -d ' ')
printf "\\$(printf %03o $(((b + 1) % 256)))" | dd of="$f" bs=1 seek=4097 conv=notrunc 2>/dev/null
before=$(h_stat px checksum_failures)
for name in big; do
	[ "$(rd "$name")" = "$(want "$name")" ] || h_fail "read after corruption: wrong bytes served"
done
after=$(h_stat px checksum_failures)
[ "$after" -gt "$before" ] || h_fail "a flipped byte in $f was not detected ($before -> $after)"
[ "$(rd big)" = "$(want big)" ] || h_fail "second read after corruption: md5 differs"
h_log "ok: corrupted chunk detected ($before -> $after) and refetched"
# a data file deleted behind the daemon's back
mapfile -t files < <(find "$H_CACHE_px/data" -type f -size +100k)
rm -f "${files[@]}"
before=$after
[ "$(rd big)" = "$(want big)" ] || h_fail "read after the data file was deleted: md5 differs"
after=$(h_stat px checksum_failures)
[ "$after" -gt "$before" ] || h_fail "a deleted data file was not noticed"
[ "$(rd big)" = "$(want big)" ] || h_fail "second read after the deletion: md5 differs"
h_log "ok: deleted data file noticed and refetched"

# --- 4. partial file: only the chunks read are cached ---
c0=$(h_stat px cache_chunks)
got=$("$NR" --port "$P" --export "$E" --path middle --offset $((3 * MiB + 5000)) \
	--length 300000 | md5sum | cut -d' ' -f1)
w=$(tail -c +$((3 * MiB + 5001)) "$E/middle" | head -c 300000 | md5sum | cut -d' ' -f1)
[ "$got" = "$w" ] || h_fail "partial read: wrong bytes"
c1=$(h_stat px cache_chunks)
[ $((c1 - c0)) = 1 ] || h_fail "reading 300 KB in the middle cached $((c1 - c0)) chunks, not 1"
# and the rest of the file is not cached: reading chunk 0 needs a fill
f0=$(h_stat px fills)
"$NR" --port "$P" --export "$E" --path middle --length 1000 >/dev/null
[ "$(h_stat px fills)" = $((f0 + 1)) ] || h_fail "chunk 0 of middle was cached without being read"
h_log "ok: a partial read caches only its chunk"

# --- 5. small files live in the index ---
nd0=$(find "$H_CACHE_px/data" -type f | wc -l)
o0=$(h_stat px cache_objects)
lp0=$(h_stat px lookup_prefetches)
ur0=$(h_stat px upstream_calls_READ)
h0=$(h_stat px read_hits)
for i in $(seq 1 120); do
	[ "$(rd "small/s$i")" = "$(want "small/s$i")" ] || h_fail "small/s$i: wrong bytes"
done
# lookup_prefetch: each file was fetched when it was looked up, once, and
# its first READ shared those bytes instead of asking the upstream again
lp=$(($(h_stat px lookup_prefetches) - lp0))
[ "$lp" = 120 ] || h_fail "120 small files looked up made $lp prefetches"
ur=$(($(h_stat px upstream_calls_READ) - ur0))
[ "$ur" = 120 ] || h_fail "120 small files cost $ur upstream READs"
# (how many first READs find the prefetch complete rather than in flight is
# timing: under ASan on a loaded machine 30 of 120; either way no READ of
# its own went upstream, as counted above)
hits=$(($(h_stat px read_hits) - h0))
nd1=$(find "$H_CACHE_px/data" -type f | wc -l)
[ "$nd1" = "$nd0" ] || h_fail "small files created $((nd1 - nd0)) data files"
o1=$(h_stat px cache_objects)
[ $((o1 - o0)) = 120 ] || h_fail "120 small files made $((o1 - o0)) cache objects"
h0=$(h_stat px read_hits)
for i in $(seq 1 120); do
	[ "$(rd "small/s$i")" = "$(want "small/s$i")" ] || h_fail "small/s$i (warm): wrong bytes"
done
[ "$(h_stat px read_hits)" -ge $((h0 + 120)) ] || h_fail "warm small files were not hits"
h_log "ok: 120 small files inline, no data files, warm reads are hits; prefetched at lookup ($hits of 120 first reads were hits)"

# --- 6. EOF handling exactly like the server ---
for f in empty sparse $(cd "$E" && echo odd-*); do
	for rs in 1048576 131072 4096; do
		[ "$(rd "$f" --rsize $rs)" = "$(want "$f")" ] || h_fail "$f rsize $rs (cold/warm): md5"
	done
done
# reads past the end return no data
out=$("$NR" --port "$P" --export "$E" --path "odd-$((MiB + 1))" --offset $((2 * MiB)) | wc -c)
[ "$out" = 0 ] || h_fail "a read past EOF returned $out bytes"
h_log "ok: empty, sparse and odd-sized files"

# --- 7. kill -9 while filling, then every read is correct ---
h_mkdata "$E/crash" 65536 5 # 64 MiB
for round in 1 2 3; do
	"$NR" --port "$P" --export "$E" --path crash --rsize 1048576 >/dev/null 2>&1 &
	rpid=$!
	sleep 0.$((RANDOM % 5 + 2))
	h_stop_cachefsd px KILL
	wait $rpid 2>/dev/null
	h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
	[ "$(rd crash)" = "$(want crash)" ] || h_fail "after kill -9 (round $round): wrong bytes"
	cf=$(h_stat px checksum_failures)
	[ "$cf" = 0 ] || h_fail "after kill -9 (round $round): $cf chunks failed verification"
done
h_log "ok: kill -9 during fills leaves usable entries or none"

# --- 8. an idle proxy commits what it cached: kill -9 soon after keeps it ---
head -c 5000 "$E/big" >"$E/late"
[ "$(rd late)" = "$(want late)" ] || h_fail "late: wrong bytes"
sleep 0.3 # index changes wait up to 20 ms for their batch's commit
h_stop_cachefsd px KILL
h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
[ "$(rd late)" = "$(want late)" ] || h_fail "late after kill -9: wrong bytes"
[ "$(h_stat px upstream_calls_READ)" = 0 ] && [ "$(h_stat px read_hits)" = 1 ] ||
	h_fail "a file cached 0.3 s before kill -9 was lost: $(h_stats px | grep -E '^(read_hits|upstream_calls_READ) ' | tr '\n' ' ')"
h_log "ok: cached entries are committed by an idle proxy (kill -9 300 ms later keeps them)"

h_pass "data cache: upstream-stopped read, warm restart, checksum refetch, partial, inline, EOF, kill -9"
