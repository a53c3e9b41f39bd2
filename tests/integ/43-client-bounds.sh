#!/bin/bash
# 43-client-bounds: what hostile clients can make the proxy hold is bounded
# (tests/tools/hostile plays each attack; figures in docs/reliability.md):
#  - idle: a connection that sends nothing is closed after
#    client_idle_timeout; one that keeps calling is not;
#  - memory (client_memory_max 64M here): 300 connections each sending
#    all but one byte of a 1 MiB record, then 8 connections each sending
#    400 READs of 1 MiB and never reading a reply. Before: RSS grew by the
#    full amount (1.1 GiB, 1.6 GiB at the issue's sizes). Now RSS stays
#    within the cap and some slack, a new client is served meanwhile, and
#    the stalled connections are closed (counted);
#  - MNT storm: 2000 pipelined MNTs of a 63-deep path cost at most a few
#    walks of upstream LOOKUPs (126 000 LOOKUPs before), all answered;
#  - repeated warnings: 5000 AUTH_NONE calls the upstream refuses write two
#    lines, the second with the count ("(4999 more in the last 10 s)").
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
HOS=$H_BUILD/tests/hostile
[ -x "$HOS" ] || h_fail "$HOS not built (make tools)"
# ASan keeps freed blocks in a quarantine (256 MiB by default): RSS would
# measure that, not what the proxy holds
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big" 4096 1
mkdir -p "$E/d"
echo hello >"$E/d/f"
deep=$E
for i in $(seq 1 63); do deep=$deep/d$i; done
mkdir -p "$deep"
url() { echo "nfs://127.0.0.1$E/$1?nfsport=$H_PORT_px&mountport=$H_PORT_px"; }
rss() { awk -v k="$2:" '$1==k{print $2}' "/proc/$1/status"; }
# served WHAT: a new client lists d within 5 s; prints the ms
served()
{
	local t0=$(date +%s%N)
	timeout 10 nfs-ls "$(url d)" >"$H_TMP/ls.out" 2>&1 || h_fail "$1: a new client was not served: $(cat "$H_TMP/ls.out")"
	local ms=$((($(date +%s%N) - t0) / 1000000))
	((ms < 5000)) || h_fail "$1: a new client waited $ms ms"
	echo "$ms"
}

# --- idle -------------------------------------------------------------------
h_start_cachefsd px up --client-idle-timeout 2
"$HOS" 127.0.0.1 "$H_PORT_px" ping --hold 5 >"$H_TMP/ping.out" 2>&1 &
ping=$!
out=$("$HOS" 127.0.0.1 "$H_PORT_px" idle 3 --hold 6)
h_wait_pid "$ping" "the pinging client" 20
read -r _ _ _ _ _ closed _ first _ _ <<<"$out"
[ "$closed" = 3 ] || h_fail "idle connections not closed after 2 s: $out"
((first >= 1500 && first <= 4500)) || h_fail "idle connections closed after $first ms (client_idle_timeout 2 s): $out"
read -r _ pings _ answered _ <"$H_TMP/ping.out"
((pings > 0 && answered == pings)) || h_fail "a client calling every 100 ms lost its connection: $(cat "$H_TMP/ping.out")"
[ "$(h_stat px rpc_conns_idle_closed)" -ge 3 ] || h_fail "rpc_conns_idle_closed not counted"
h_log "idle: $out; $(cat "$H_TMP/ping.out")"
h_stop_cachefsd px

# --- memory -----------------------------------------------------------------
h_start_cachefsd px up --client-memory-max 64M
nfs-cat "$(url big)" >/dev/null || h_fail "warming big"
r0=$(rss "$H_PID_px" VmRSS)
# bound: what it held before, the cap and its overdraft (72 MiB), and
# 100 MiB of slack (heap kept by malloc, the 64 MiB memory chunk cache)
bound=$((r0 + 72 * 1024 + 100 * 1024))
"$HOS" 127.0.0.1 "$H_PORT_px" partial 300 --high-port --hold 12 >"$H_TMP/partial.out" 2>&1 &
hp=$!
sleep 4
during=$(rss "$H_PID_px" VmRSS)
ms1=$(served "300 partial records") || exit 1
h_wait_pid "$hp" "the partial-record flood" 30
alive "$H_PID_px" || h_fail "cachefsd died"
((during <= bound)) || h_fail "RSS $during KiB with 300 partial 1 MiB records (bound $bound KiB)"
[ "$(h_stat px rpc_conns_memory_closed)" -ge 1 ] || h_fail "no stalled partial record was closed: $(cat "$H_TMP/partial.out")"
h_log "partial: RSS $r0 -> $during KiB, new client in $ms1 ms; $(cat "$H_TMP/partial.out")"

"$HOS" 127.0.0.1 "$H_PORT_px" reads 8 --calls 400 --export "$E" --file big --hold 12 >"$H_TMP/reads.out" 2>&1 &
hp=$!
sleep 4
during2=$(rss "$H_PID_px" VmRSS)
ms2=$(served "READs never read") || exit 1
h_wait_pid "$hp" "the READ flood" 30
alive "$H_PID_px" || h_fail "cachefsd died"
((during2 <= bound)) || h_fail "RSS $during2 KiB with 8 x 400 1 MiB READs never read (bound $bound KiB)"
hwm=$(rss "$H_PID_px" VmHWM)
((hwm <= bound + 32 * 1024)) || h_fail "peak RSS $hwm KiB (bound $((bound + 32 * 1024)) KiB)"
[ "$(h_stat px client_memory_pauses)" -ge 1 ] || h_fail "client_memory_pauses not counted"
grep -q 'at client_memory_max' "$H_LOG_px" || h_fail "the memory limit was not logged"
h_log "reads: RSS $during2 KiB (peak $hwm), new client in $ms2 ms; $(cat "$H_TMP/reads.out")"
h_stop_cachefsd px

# --- MNT storm and a repeated warning -----------------------------------------
h_start_cachefsd px up
u0=$(h_stat px upstream_calls_LOOKUP)
out=$("$HOS" 127.0.0.1 "$H_PORT_px" mnt 2000 --path "$deep" --timeout 60)
lookups=$(($(h_stat px upstream_calls_LOOKUP) - u0))
[[ $out == *"replies 2000 "*"st_0 2000"* ]] || h_fail "2000 MNTs of the deep path: $out"
((lookups <= 64 * 20)) || h_fail "2000 MNTs of a 63-deep path cost $lookups upstream LOOKUPs"
h_log "MNT storm: $out; $lookups upstream LOOKUPs"
l0=$(wc -l <"$H_LOG_px")
out=$("$HOS" 127.0.0.1 "$H_PORT_px" authnone 5000 --export "$E" --timeout 30)
[[ $out == *"replies 5000 "*"denied 5000"* ]] || h_fail "5000 AUTH_NONE calls: $out"
sleep 11.5 # the rate limit's window, and its summary
new=$(sed -n "$((l0 + 1)),\$p" "$H_LOG_px")
n=$(grep -c 'GETATTR failed' <<<"$new")
((n >= 1 && n <= 3)) || h_fail "$n warning lines for 5000 refused calls: $(head -n 5 <<<"$new")"
grep -q 'GETATTR failed.*(4999 more in the last 10 s)' <<<"$new" ||
	h_fail "no summary line with the count: $new"
[ "$(h_stat px log_lines_suppressed)" -ge 4999 ] || h_fail "log_lines_suppressed not counted"
h_pass "idle closed after ${first} ms; RSS within $((bound / 1024)) MiB (partial $((during / 1024)), reads $((during2 / 1024)), peak $((hwm / 1024)) MiB), new clients in $ms1/$ms2 ms; 2000 MNTs: $lookups LOOKUPs; 5000 refused calls: $n log lines"
