#!/bin/bash
# 48-load: 64 concurrent clients through the proxy (default strict mode).
# build/tests/loadgen opens 64 TCP connections (libnfs raw contexts, one
# poll loop), MOUNTs once per client, then each client repeatedly picks a
# file (seeded; a big one a quarter of the time), LOOKUPs it from the root
# and READs it whole with a READ size of 4 KiB, 64 KiB or 1 MiB and 1..16
# READs in flight, checking size, eof and xxh3 against a manifest made
# from the export. Data: 8 big files (4.5..8 MiB) and 200 small ones
# (0 B..150 KB, the inline_max edges among them) in 10 subdirectories.
# Two timed runs: "cold", starting on an empty cache (LOAD_SECONDS/2; the
# ~60 MB are cached within its first seconds), then "warm"
# (LOAD_SECONDS/2); a run stops starting files after its time and lets
# the files in progress finish. Both must end with zero NFS errors, RPC
# errors, timeouts and wrong bytes, and the cache must have served hits
# and verified no failed checksum.
#
# The proxy runs with --memory-cache 16M, smaller than the data, so warm
# reads of the big files also load chunks from the data files (worker
# threads, checksums) under load, not only from memory.
#
# Memory: cachefsd's peak RSS (VmHWM) must stay below RSS_LIMIT_MIB [256].
# The bound adds up what this load may legitimately hold even with the
# default memory_cache: the chunk memory cache (64 MiB by default, 16 MiB
# here), READ replies for the 64 clients (loadgen never has more than
# 2 MiB of READs in flight per client: 128 MiB), readahead fills in flight
# (at most 32 x 1 MiB) and the process with its LMDB pages (~20 MiB):
# 64 + 128 + 32 + 20 = 244 MiB. Measured peaks are 55..62 MiB; every run
# moves several GB, so a leak of reply or chunk buffers would go far
# past the bound. For a sanitizer build the peak is only reported (ASan's
# shadow memory and quarantine: 600..750 MiB).
# The pass line reports both throughputs (MB = 10^6 bytes) and the peak.
#
#   LOAD_SECONDS [20]  LOAD_SEED [1]  LOAD_CLIENTS [64]  RSS_LIMIT_MIB [256]
#   LOAD_DIRECT=1: first the same load straight against nfs-ganesha
#   (LOAD_SECONDS/2), for the side-by-side figure in docs/bench.md
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

LG=$H_BUILD/tests/loadgen
SECONDS_TOTAL=${LOAD_SECONDS:-20}
SEED=${LOAD_SEED:-1}
CLIENTS=${LOAD_CLIENTS:-64}
RSS_LIMIT_MIB=${RSS_LIMIT_MIB:-256}
[ -x "$LG" ] || h_fail "$LG is missing (make tools)"
[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)"
sanitizer=0
grep -qa __asan_init "$H_BUILD/cachefsd" && sanitizer=1

h_start_ganesha up
E=$H_EXPORT_up
KiB=1024
for i in 1 2 3 4 5 6 7 8; do
	h_mkdata "$E/big$i" $((4096 + i * 512)) $((100 + i)) # 4.5 .. 8 MiB
done
# small files: slices of one random file, sizes spread over 0..150 KB with
# the edges of a page and of inline_max (64 KiB) among them
h_mkdata "$H_TMP/src" 1024 99
for i in $(seq 0 199); do
	case $i in
	0) sz=0 ;;
	1) sz=1 ;;
	2) sz=4095 ;;
	3) sz=4096 ;;
	4) sz=$((64 * KiB - 1)) ;;
	5) sz=$((64 * KiB)) ;;
	6) sz=$((64 * KiB + 1)) ;;
	*) sz=$(((i * 7919) % 150000)) ;;
	esac
	d=$E/small/d$((i % 10))
	mkdir -p "$d"
	dd if="$H_TMP/src" of="$d/f$i" iflag=skip_bytes,count_bytes skip=$((i * 2000)) \
		count=$sz status=none || h_fail "dd"
done
created=$(date +%s.%N)
"$LG" --make-manifest "$E" >"$H_TMP/manifest" || h_fail "loadgen --make-manifest failed"
nf=$(wc -l <"$H_TMP/manifest")
[ "$nf" = 208 ] || h_fail "manifest lists $nf files, not 208"

h_start_cachefsd px up --memory-cache 16M
# data of files changed in the last fresh_guard (2) seconds is served but
# not stored: let the files age first, so the cold run fills the cache
sleep "$(awk -v c="$created" -v n="$(date +%s.%N)" 'BEGIN { d = c + 3.2 - n; print (d > 0 ? d : 0) }')"

# field KEY: a value of the last summary line
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$LINE"; }

# run LABEL SECONDS: one loadgen run; its summary line in $LINE
run()
{
	local label=$1 secs=$2 rc
	LINE=$("$LG" --port "$H_PORT_px" --export "$E" --manifest "$H_TMP/manifest" \
		--clients "$CLIENTS" --seconds "$secs" --seed "$SEED" 2>"$H_TMP/loadgen-$label.err")
	rc=$?
	h_log "$label: $LINE"
	alive "$H_PID_px" || h_fail "cachefsd died during the $label run: $(tail -n 5 "$H_LOG_px")"
	[ $rc = 0 ] || h_fail "$label run: loadgen exit $rc: $LINE $(head -n 20 "$H_TMP/loadgen-$label.err")"
	local k
	for k in nfs_errors rpc_errors timeouts wrong_files wrong_bytes bad_eof bad_attr; do
		[ "$(field $k)" = 0 ] || h_fail "$label run: $k=$(field $k)"
	done
	[ "$(field files)" -gt 0 ] || h_fail "$label run: no file read"
}

half=$((SECONDS_TOTAL / 2))
direct=""
if [ "${LOAD_DIRECT:-0}" = 1 ]; then
	LINE=$("$LG" --port "$H_NFSPORT_up" --mount-port "$H_MNTPORT_up" --export "$E" \
		--manifest "$H_TMP/manifest" --clients "$CLIENTS" --seconds "$half" --seed "$SEED" \
		2>"$H_TMP/loadgen-direct.err") || h_fail "direct run: $LINE $(head -n 20 "$H_TMP/loadgen-direct.err")"
	h_log "direct: $LINE"
	direct="direct $(field MBps) MB/s $(field files_per_s) files/s, "
fi
run cold "$half"
cold_mbps=$(field MBps) cold_fps=$(field files_per_s) cold_files=$(field files)
run warm "$((SECONDS_TOTAL - half))"
warm_mbps=$(field MBps) warm_fps=$(field files_per_s) warm_files=$(field files)
warm_bytes=$(field bytes)

hits=$(h_stat px read_hits)
cf=$(h_stat px checksum_failures)
disk=$(h_stat px chunk_disk_reads)
[ "$cf" = 0 ] || h_fail "$cf checksum failures under load"
[ "$hits" -gt 0 ] || h_fail "no read was a cache hit"
[ "$disk" -gt 0 ] || h_fail "no chunk was loaded from the data files (memory cache too big?)"
upbytes=$(h_stat px upstream_read_bytes)
# warm: the whole data set is cached after the cold run, so the upstream
# must have sent far less than the clients read
[ "$upbytes" -lt "$warm_bytes" ] || h_fail "upstream sent $upbytes bytes, clients read $warm_bytes warm"

hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$H_PID_px/status")
[ -n "$hwm" ] || h_fail "no VmHWM for cachefsd"
hwm_mib=$(((hwm + 1023) / 1024))
if ((sanitizer)); then
	verdict="not checked: sanitizer build"
else
	((hwm_mib < RSS_LIMIT_MIB)) || h_fail "cachefsd peak RSS $hwm_mib MiB >= $RSS_LIMIT_MIB MiB"
	verdict="< $RSS_LIMIT_MIB MiB"
fi
h_stop_cachefsd px

# under cache pressure (a cap far below the data set, constant eviction and
# refill): chunks culled while a worker reads them are misses, not checksum
# failures, and the cap holds between cull steps
H_CACHE_px=$H_TMP/px-cache-small
h_start_cachefsd px up --cache-size 20M --memory-cache 8M --fresh-guard 0
run pressure 8
cf=$(h_stat px checksum_failures)
[ "$cf" = 0 ] || h_fail "under cache pressure: $cf checksum failures"
[ "$(h_stat px evictions)" -gt 0 ] || h_fail "under cache pressure: nothing was evicted"
cb=$(h_stat px cache_bytes)
[ "$cb" -le $((24 * 1048576)) ] || h_fail "under cache pressure: $cb bytes cached, cap 20 MiB"
h_stop_cachefsd px
h_pass "$CLIENTS clients, seed $SEED, 0 errors, 0 wrong bytes: ${direct}cold ${half}s $cold_files files" \
	"$cold_mbps MB/s $cold_fps files/s, warm $warm_files files $warm_mbps MB/s $warm_fps files/s," \
	"$hits hits, $disk chunk disk reads, 0 checksum failures; cachefsd peak RSS $hwm_mib MiB ($verdict)"
