#!/bin/bash
# The Prometheus endpoint (metrics_listen), scraped with curl:
#  1. the exposition is valid: a strict parser (tests/tools/promcheck.c; and
#     promtool when it is installed), which itself rejects broken variants;
#     HTTP details: content type, 404, 405, HEAD;
#  2. after reads, writes and lookups, every counter is still there and none
#     went down; requests by procedure and outcome, latency histograms,
#     bytes and cache gauges equal what cachefsctl stats says;
#  3. state gauges follow events: the upstream going away and coming back
#     (upstream_up, reconnects), filling stopped by a full cache filesystem
#     (a read meanwhile counted in fills refused, reason space) and resumed,
#     evictions after a cull;
#  4. a busy metrics port stops the start-up with a message naming the key.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CTLBIN=$H_BUILD/cachefsctl
NR=$H_BUILD/tests/nfsread
NOP=$H_BUILD/tests/nfsop
PC=$H_BUILD/tests/promcheck
for b in "$CTLBIN" "$NR" "$NOP" "$PC"; do [ -x "$b" ] || h_fail "$b not built (make all tools)"; done
command -v curl >/dev/null || h_skip "curl is not installed (make deps-run)"
h_start_ganesha up
E=$H_EXPORT_up
MiB=1048576
h_mkdata "$E/big" 5120 1
for i in $(seq 1 8); do h_mkdata "$E/f$i" 600 $((i + 1)); done

h_mount_tmpfs "$H_TMP/fs" 64m || h_fail "cannot mount a tmpfs"
H_CACHE_px=$H_TMP/fs/cache
MP=$(h_free_port)
h_start_cachefsd px up --metrics-listen "127.0.0.1:$MP" --fresh-guard 0 --readahead 0
P=$H_PORT_px
C=$H_CACHE_px
URL=http://127.0.0.1:$MP/metrics
ctl() { "$CTLBIN" --cache-dir "$C" "$@"; }
rd() { "$NR" --port "$P" --export "$E" --path "$1" | md5sum | cut -d' ' -f1; }
scrape() { curl -sf "$URL" >"$1" || h_fail "scrape of $URL failed"; }
check() {
	"$PC" "$1" >/dev/null || h_fail "invalid exposition in $1"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$1" || h_fail "promtool rejects $1"
	fi
}
val() { "$PC" --value "$1" "$2" || h_fail "no series $1 in $2"; }

# --- 1. valid, and the checker is strict ---
scrape "$H_TMP/m0"
check "$H_TMP/m0"
hdr=$(curl -sfI "$URL") || h_fail "HEAD $URL failed"
grep -qi '^Content-Type: text/plain; version=0.0.4' <<<"$hdr" || h_fail "content type: $hdr"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MP/other")" = 404 ] ||
	h_fail "/other is not 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$URL")" = 405 ] ||
	h_fail "POST is not 405"
broken() { # WHAT SED-EXPRESSION: the checker must refuse the result
	sed "$2" "$H_TMP/m0" >"$H_TMP/broken"
	"$PC" "$H_TMP/broken" >/dev/null 2>&1 && h_fail "promcheck accepted: $1"
}
broken "a missing +Inf bucket" '/duration_seconds_bucket{proc="READ",le="+Inf"}/d'
broken "a duplicate series" '/^cachefsd_cache_bytes /p'
broken "a counter without _total" 's/cachefsd_evictions_total/cachefsd_evictions/g'
broken "a bad value" 's/^cachefsd_cache_objects .*/cachefsd_cache_objects abc/'
broken "a sample without TYPE" '/^# TYPE cachefsd_fill_stopped /d'
broken "a bad label escape" 's/proc="READ"/proc="RE\\AD"/'
broken "decreasing buckets" 's/\(duration_seconds_bucket{proc="NULL",le="+Inf"}\) 0/\1 -1/'
h_log "ok: the exposition passes the strict checker$(command -v promtool >/dev/null && echo " and promtool"), which rejects 7 broken variants"

# --- 2. traffic: monotonic, consistent with cachefsctl stats ---
for i in $(seq 1 8); do rd "f$i" >/dev/null; done
rd big >/dev/null
rd big >/dev/null
for i in $(seq 1 8); do rd "f$i" >/dev/null; done
"$NR" --port "$P" --export "$E" --path no-such-file >/dev/null 2>&1 # LOOKUP NOENT
printf 'written through the proxy\n' | "$NOP" "$H_URL_px" write newfile || h_fail "nfsop write"
scrape "$H_TMP/m1"
ctl stats --raw >"$H_TMP/s1"
check "$H_TMP/m1"
"$PC" --monotonic "$H_TMP/m0" "$H_TMP/m1" >/dev/null || h_fail "a counter went down"
s() { awk -v k="$1" '$1==k{print $2; f=1} END{if(!f) print "MISSING"}' "$H_TMP/s1"; }
eq() { # METRIC-SERIES STATS-NAME
	local m
	m=$(val "$1" "$H_TMP/m1")
	[ "$m" = "$(s "$2")" ] || h_fail "$1 = $m, but stats $2 = $(s "$2")"
}
eq 'cachefsd_nfs_requests_total{proc="READ",outcome="hit"}' read_hits
eq 'cachefsd_nfs_requests_total{proc="READ",outcome="miss"}' read_misses
eq 'cachefsd_nfs_calls_total{proc="READ"}' nfs_calls_READ
eq 'cachefsd_nfs_calls_total{proc="LOOKUP"}' nfs_calls_LOOKUP
eq 'cachefsd_nfs_error_replies_total{proc="LOOKUP"}' nfs_status_errors_LOOKUP
eq 'cachefsd_nfs_requests_total{proc="WRITE",outcome="passthrough"}' nfs_passthrough_WRITE
eq 'cachefsd_upstream_calls_total{proc="WRITE"}' upstream_calls_WRITE
eq 'cachefsd_cache_bytes' cache_bytes
eq 'cachefsd_cache_objects' cache_objects
eq 'cachefsd_cache_chunks' cache_chunks
eq 'cachefsd_fills_total' fills
eq 'cachefsd_fill_bytes_total' fill_bytes
eq 'cachefsd_evictions_total' evictions
eq 'cachefsd_checksum_failures_total' checksum_failures
eq 'cachefsd_fill_stopped' fill_stopped
eq 'cachefsd_upstream_connections_up' upstream_conns_up
eq 'cachefsd_upstream_reconnects_total' upstream_reconnects
eq 'cachefsd_upstream_connect_attempts_total' upstream_connect_attempts
eq 'cachefsd_client_payload_bytes_total{op="read"}' bytes_read
eq 'cachefsd_client_payload_bytes_total{op="write"}' bytes_written
eq 'cachefsd_read_from_cache_bytes_total' bytes_from_cache
eq 'cachefsd_upstream_payload_bytes_total{op="read"}' upstream_read_bytes
eq 'cachefsd_upstream_payload_bytes_total{op="write"}' upstream_write_bytes
eq 'cachefsd_client_bytes_total{direction="received"}' rpc_bytes_in
eq 'cachefsd_writer_files_total' writer_starts
eq 'cachefsd_clients_connected' clients_connected
[ "$(val 'cachefsd_nfs_requests_total{proc="READ",outcome="hit"}' "$H_TMP/m1")" -ge 13 ] ||
	h_fail "too few READ hits"
[ "$(val 'cachefsd_client_payload_bytes_total{op="write"}' "$H_TMP/m1")" = 26 ] ||
	h_fail "WRITE payload bytes"
# every procedure: its replies by outcome add up to its latency histogram's
# count; the histogram's sum is the stats' latency sum
for p in NULL GETATTR LOOKUP ACCESS READ WRITE CREATE READDIRPLUS FSINFO FSSTAT PATHCONF COMMIT; do
	n=0
	for o in hit miss passthrough error; do
		n=$((n + $(val "cachefsd_nfs_requests_total{proc=\"$p\",outcome=\"$o\"}" "$H_TMP/m1")))
	done
	c=$(val "cachefsd_nfs_request_duration_seconds_count{proc=\"$p\"}" "$H_TMP/m1")
	[ "$n" = "$c" ] || h_fail "$p: $n replies by outcome, histogram count $c"
	sum=$(val "cachefsd_nfs_request_duration_seconds_sum{proc=\"$p\"}" "$H_TMP/m1")
	us=$(s "nfs_latency_us_$p")
	awk -v a="$sum" -v b="$us" 'BEGIN{exit !(a * 1e6 > b - 1 && a * 1e6 < b + 1)}' ||
		h_fail "$p: histogram sum $sum s, stats $us us"
done
rtt=$(val 'cachefsd_upstream_rtt_seconds_count{proc="READ"}' "$H_TMP/m1")
[ "$rtt" -ge 1 ] && [ "$rtt" -le "$(s upstream_calls_READ)" ] ||
	h_fail "upstream READ round trips $rtt vs $(s upstream_calls_READ) calls"
h_log "ok: after traffic: valid, monotonic, and equal to cachefsctl stats (26 series, 12 histograms)"

# --- 3. state gauges ---
# the upstream goes away and comes back
h_stop_ganesha up
for i in $(seq 1 100); do
	scrape "$H_TMP/m2"
	[ "$(val cachefsd_upstream_up "$H_TMP/m2")" = 0 ] && break
	sleep 0.1
done
[ "$(val cachefsd_upstream_up "$H_TMP/m2")" = 0 ] || h_fail "upstream_up stayed 1 with the upstream stopped"
h_restart_ganesha up
for i in $(seq 1 150); do
	scrape "$H_TMP/m3"
	[ "$(val cachefsd_upstream_up "$H_TMP/m3")" = 1 ] && break
	sleep 0.1
done
[ "$(val cachefsd_upstream_up "$H_TMP/m3")" = 1 ] || h_fail "upstream_up did not come back"
[ "$(val cachefsd_upstream_reconnects_total "$H_TMP/m3")" -gt \
	"$(val cachefsd_upstream_reconnects_total "$H_TMP/m1")" ] || h_fail "no reconnect counted"
[ "$(val cachefsd_upstream_connect_attempts_total "$H_TMP/m3")" -gt \
	"$(val cachefsd_upstream_connect_attempts_total "$H_TMP/m1")" ] || h_fail "no connect attempt counted"
check "$H_TMP/m3"
"$PC" --monotonic "$H_TMP/m1" "$H_TMP/m3" >/dev/null || h_fail "a counter went down (upstream restart)"
h_log "ok: upstream_up 1 -> 0 -> 1, reconnects and connect attempts counted"

# something else fills the cache filesystem below bstop: fill_stopped 1
free=$(df -B1 --output=avail "$H_TMP/fs" | tail -1)
dd if=/dev/zero of="$H_TMP/fs/ballast" bs=1M count=$((free / MiB - 1)) 2>/dev/null
for i in $(seq 1 50); do
	scrape "$H_TMP/m4"
	[ "$(val cachefsd_fill_stopped "$H_TMP/m4")" = 1 ] && break
	sleep 0.1
done
[ "$(val cachefsd_fill_stopped "$H_TMP/m4")" = 1 ] || h_fail "fill_stopped stayed 0 on a full cache fs"
ratio=$(val 'cachefsd_cache_fs_free_ratio{resource="blocks"}' "$H_TMP/m4")
awk -v r="$ratio" 'BEGIN{exit !(r < 0.03)}' || h_fail "free ratio $ratio on a full cache fs"
grep -q "filling stopped" "$H_LOG_px" || h_fail "no log line for fill stopped"
# a read of a file not cached meanwhile: a fill refused, reason space
h_mkdata "$E/g1" 300 77
[ "$(rd g1)" = "$(md5sum <"$E/g1" | cut -d' ' -f1)" ] || h_fail "g1: wrong bytes on a full cache fs"
scrape "$H_TMP/m4b"
[ "$(val 'cachefsd_fills_refused_total{reason="space"}' "$H_TMP/m4b")" -gt \
	"$(val 'cachefsd_fills_refused_total{reason="space"}' "$H_TMP/m4")" ] ||
	h_fail "no fill refused (space) for a read on a full cache fs: $(grep '^cachefsd_fills_refused' "$H_TMP/m4b")"
rm -f "$H_TMP/fs/ballast"
for i in $(seq 1 50); do
	scrape "$H_TMP/m5"
	[ "$(val cachefsd_fill_stopped "$H_TMP/m5")" = 0 ] && break
	sleep 0.1
done
[ "$(val cachefsd_fill_stopped "$H_TMP/m5")" = 0 ] || h_fail "fill_stopped stayed 1 with space back"
h_log "ok: fill_stopped 0 -> 1 -> 0 with the cache filesystem full and freed, a read meanwhile counted as a fill refused (space)"

# a cull: evictions and evicted bytes move, cache bytes drop
ctl cull --to 0 >/dev/null || h_fail "cull failed"
scrape "$H_TMP/m6"
[ "$(val cachefsd_evictions_total "$H_TMP/m6")" -gt "$(val cachefsd_evictions_total "$H_TMP/m5")" ] ||
	h_fail "evictions_total did not move after a cull"
[ "$(val cachefsd_cache_bytes "$H_TMP/m6")" = 0 ] || h_fail "cache_bytes after cull --to 0"
[ "$(val cachefsd_cache_oldest_object_age_seconds "$H_TMP/m6")" = 0 ] || h_fail "oldest age of nothing"
"$PC" --monotonic "$H_TMP/m5" "$H_TMP/m6" >/dev/null || h_fail "a counter went down (cull)"
h_log "ok: a cull moves evictions_total; cache_bytes 0"

# --- 4. a busy metrics port ---
h_stop_cachefsd px
busy=$H_NFSPORT_up
port=$(h_free_port)
out=$(timeout 30 "$H_BUILD/cachefsd" --foreground --upstream "$H_URL_up" --listen "127.0.0.1:$port" \
	--cache-dir "$H_TMP/c2" --metrics-listen "127.0.0.1:$busy" 2>&1) && h_fail "started on a busy metrics port"
grep -q "key 'metrics_listen': cannot listen on 127.0.0.1:$busy: Address already in use" <<<"$out" ||
	h_fail "busy metrics port: $out"
! ss -Hltn "sport = :$port" | grep -q . || h_fail "a failed start left the NFS listener"
[ ! -e "$H_TMP/c2/control" ] || h_fail "a failed start left the control socket"
h_log "ok: a busy metrics port is named and nothing is left listening"

h_pass "metrics: valid exposition, monotonic, consistent with stats, state gauges follow events"
