#!/bin/bash
# 42-fd-exhaustion: out of file descriptors the loop does not spin. 400 idle
# connections against a 300-descriptor limit (tests/tools/hostile idle):
#  1. the limit lowered under the running daemon (prlimit): accept() fails
#     with EMFILE. Before: 1.9 s of CPU in 3 s and 1.6 million "accept: Too
#     many open files" lines, a new client waited for the flood to leave.
#     Now: the daemon's CPU over those 3 s stays small, the log has a line
#     when the shortage begins and one when it ends, a client connected
#     before the flood keeps being answered, and a new client is served
#     (the connection idle longest is closed to make room, as knfsd does);
#  2. started under the limit: at most RLIMIT_NOFILE - 64 clients are
#     accepted (the rest of the descriptors stay for the upstream and the
#     cache; the log says so), and a new client is served the same way.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
HOS=$H_BUILD/tests/hostile
[ -x "$HOS" ] || h_fail "$HOS not built (make tools)"
h_start_ganesha up
E=$H_EXPORT_up
mkdir -p "$E/d"
echo hello >"$E/d/f"
url() { echo "nfs://127.0.0.1$E/d?nfsport=$H_PORT_px&mountport=$H_PORT_px"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# 1. EMFILE
h_start_cachefsd px up
"$HOS" 127.0.0.1 "$H_PORT_px" ping --hold 8 >"$H_TMP/ping.out" 2>&1 &
ping=$!
sleep 0.5
prlimit --pid "$H_PID_px" --nofile=300:300 || h_fail "prlimit"
c0=$(cpu_ticks "$H_PID_px")
l0=$(wc -l <"$H_LOG_px")
# ephemeral ports: 400 connections, reserved ones are few
"$HOS" 127.0.0.1 "$H_PORT_px" idle 400 --high-port --hold 6 --timeout 3 >"$H_TMP/flood.out" 2>&1 &
flood=$!
sleep 3
c1=$(cpu_ticks "$H_PID_px")
t0=$(date +%s%N)
timeout 10 nfs-ls "$(url)" >"$H_TMP/ls.out" 2>&1 || h_fail "a new client was not served while out of descriptors: $(cat "$H_TMP/ls.out")"
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q '^-.* f$' "$H_TMP/ls.out" || h_fail "nfs-ls output: $(cat "$H_TMP/ls.out")"
h_wait_pid "$flood" "the flood" 20
h_wait_pid "$ping" "the pinging client" 20
alive "$H_PID_px" || h_fail "cachefsd died"
cpu_ms=$(((c1 - c0) * 1000 / hz))
((cpu_ms <= 500)) || h_fail "cachefsd used $cpu_ms ms of CPU in the 3 s out of descriptors (the loop spins?)"
lines=$(sed -n "$((l0 + 1)),\$p" "$H_LOG_px" | grep -c 'accept')
((lines >= 1 && lines <= 6)) || h_fail "$lines accept lines in the log (want the episode's begin and end): $(sed -n "$((l0 + 1)),\$p" "$H_LOG_px" | grep accept | head -5)"
grep -q 'accept: Too many open files' "$H_LOG_px" || h_fail "the shortage was not logged"
read -r _ pings _ answered _ maxms <"$H_TMP/ping.out"
((pings > 0 && answered == pings)) || h_fail "the client connected before the flood: $(cat "$H_TMP/ping.out")"
((maxms < 2000)) || h_fail "the client connected before the flood waited $maxms ms for a NULL"
[ "$(h_stat px rpc_accept_fd_episodes)" -ge 1 ] || h_fail "rpc_accept_fd_episodes not counted"
[ "$(h_stat px rpc_conns_evicted)" -ge 1 ] || h_fail "no idle connection was closed to make room"
h_log "EMFILE: CPU $cpu_ms ms in 3 s, $lines accept lines, new client in $ms ms, $(cat "$H_TMP/ping.out"); flood: $(cat "$H_TMP/flood.out")"
h_stop_cachefsd px

# 2. started under the limit: the client limit, below the descriptor limit
hard=$(ulimit -Hn)
ulimit -Sn 300
h_start_cachefsd px up
ulimit -Sn "$hard"
grep -q 'clients: at most 236 connections' "$H_LOG_px" || h_fail "the client limit is not logged: $(grep 'clients:' "$H_LOG_px")"
"$HOS" 127.0.0.1 "$H_PORT_px" idle 400 --high-port --hold 5 --timeout 3 >"$H_TMP/flood2.out" 2>&1 &
flood=$!
sleep 2.5
n=$(h_stat px clients_connected)
((n <= 236)) || h_fail "$n clients accepted over the limit of 236"
timeout 10 nfs-ls "$(url)" >"$H_TMP/ls2.out" 2>&1 || h_fail "a new client at the client limit: $(cat "$H_TMP/ls2.out")"
h_wait_pid "$flood" "the flood" 20
grep -q 'accept: client limit reached' "$H_LOG_px" || h_fail "the client limit episode was not logged"
alive "$H_PID_px" || h_fail "cachefsd died"
h_pass "out of descriptors: CPU $cpu_ms ms over 3 s, $lines log lines, a new client served in $ms ms, the client already connected answered ($answered/$pings, worst $maxms ms); at most 236 clients under a limit of 300 ($n seen)"
