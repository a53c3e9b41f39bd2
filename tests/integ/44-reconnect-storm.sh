#!/bin/bash
# 44-reconnect-storm: an upstream that accepts TCP connections and closes
# them at once (a port forwarder or balancer in front of a stopped server,
# a server starting up) must not make cachefsd reconnect in a storm.
# cachefsd's upstream is a relay (tests/tools/tcprelay) in front of
# nfs-ganesha; it starts forwarding (cachefsd mounts the export and sends
# FSINFO at start), then
#  (a) hard mount, relay in accept-and-close mode with clients waiting:
#      connection attempts per second stay within what the back-off allows
#      (reconnect_max = CAP s, 4 connections), the calls wait, and the log
#      says "connection lost" once, not once per attempt; cachefsd's
#      upstream_connect_attempts agrees with the connections the relay saw;
#  (b) relay back to forwarding: the waiting clients finish with the right
#      data within about CAP s, and the log says "connection regained after
#      N attempts", N matching the relay's count;
#  (c) soft mount (upstream_timeout 3 s) in accept-and-close mode: a call
#      fails after about 3 s instead of waiting, and once forwarding again
#      the same proxy serves.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)"
RELAY=$H_BUILD/tests/tcprelay
[ -x "$RELAY" ] || h_fail "$RELAY is missing (make tools)"
CAP=2       # reconnect_max of the proxies, seconds
CONNS=4     # upstream_connections
SETTLE=4    # seconds for the back-off to reach the cap (50 ms doubling: 3.15 s)
WINDOW=6    # seconds of accept-and-close in which attempts are counted
CLIENT_MAX=60

h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/data8" 8192 7
want_md5=$(h_md5 "$E/data8")
mkdir -p "$E/dir"
for i in $(seq 1 20); do echo "$i" >"$E/dir/f$i"; done

RPORT=$(h_free_port)
RST=$H_TMP/relay.status
"$RELAY" --listen "$RPORT" --target "127.0.0.1:$H_NFSPORT_up" --status "$RST" \
	>"$H_TMP/relay.log" 2>&1 &
RPID=$!
h_track tcprelay "$RPID"
h_wait_port "$RPORT" 10 || h_fail "tcprelay did not start: $(cat "$H_TMP/relay.log")"

rst() { awk -v k="$1" '$1==k{print $2}' "$RST"; }
# relay MODE: switch the relay (close: its relayed connections are cut too)
relay()
{
	local sw i
	sw=$(rst switches)
	case "$1" in
	close) kill -USR1 "$RPID" ;;
	forward) kill -USR2 "$RPID" ;;
	esac
	for ((i = 0; i < 50; i++)); do
		[ "$(rst mode)" = "$1" ] && [ "$(rst switches)" -gt "$sw" ] && return 0
		sleep 0.1
	done
	h_fail "tcprelay did not switch to $1"
}
# the upstream "relay": the relay's port for NFS, ganesha's own for MOUNT
# (used once at start); read by h_start_cachefsd through ${!v}
# shellcheck disable=SC2034
H_URL_relay="nfs://127.0.0.1$E?nfsport=$RPORT&mountport=$H_MNTPORT_up"
# shellcheck disable=SC2034
H_EXPORT_relay=$E

wait_done() { h_wait_pid "$1" "$2" "$CLIENT_MAX"; }

# --- (a) hard mount: accept-and-close with clients waiting -------------------
h_start_cachefsd px relay --reconnect-max "$CAP" --upstream-connections "$CONNS"
P="nfsport=$H_PORT_px&mountport=$H_PORT_px"
U="nfs://127.0.0.1$E"
nfs-ls "$U/dir?$P" >/dev/null || h_fail "nfs-ls through the relay failed before the outage"
# every connection of the pool comes up (the status file lags up to 100 ms)
for i in $(seq 1 50); do
	[ "$(rst forwarded)" -ge "$CONNS" ] && break
	sleep 0.1
done
[ "$(rst forwarded)" -ge "$CONNS" ] || h_fail "cachefsd does not go through the relay ($(rst forwarded) relayed)"
lost0=$(grep -c 'connection lost' "$H_LOG_px")
reg0=$(grep -c 'connection regained' "$H_LOG_px")
att0=$(h_stat px upstream_connect_attempts)

relay close
acc0=$(rst switch_accepted) # what came after the switch was closed at once
(
	timeout "$CLIENT_MAX" nfs-cat "$U/data8?$P" | md5sum >"$H_TMP/cat.md5"
	echo "${PIPESTATUS[*]}" >"$H_TMP/cat.rc"
) &
cat_pid=$!
(
	timeout "$CLIENT_MAX" nfs-ls "$U/dir?$P" >"$H_TMP/ls.out" 2>&1
	echo $? >"$H_TMP/ls.rc"
) &
ls_pid=$!
sleep "$SETTLE"
accA=$(rst accepted)
sleep "$WINDOW"
accB=$(rst accepted)
waiting=$(h_stat px upstream_waiting)
n_window=$((accB - accA))
# per connection at most one attempt per 3/4 CAP (the jitter takes up to a
# quarter off), plus one already under way when the window opens
bound=$((CONNS * (WINDOW * 4 / (3 * CAP) + 1)))
rate=$(awk -v n="$n_window" -v w="$WINDOW" 'BEGIN{printf "%.1f", n / w}')
h_log "(a) accept-and-close: $((accA - acc0)) connections in the first ${SETTLE}s, $n_window in the next ${WINDOW}s ($rate/s; bound $bound), $waiting calls waiting"
((n_window <= bound)) || h_fail "reconnect storm: $n_window connection attempts in ${WINDOW}s with reconnect_max $CAP and $CONNS connections (at most $bound)"
((n_window >= CONNS)) || h_fail "only $n_window connection attempts in ${WINDOW}s: cachefsd stopped trying"
alive "$cat_pid" || h_fail "nfs-cat finished while the upstream only closed connections: $(cat "$H_TMP/cat.rc")"
alive "$ls_pid" || h_fail "nfs-ls finished while the upstream only closed connections: $(cat "$H_TMP/ls.out")"
((waiting > 0)) || h_fail "no calls waiting during the outage (upstream_waiting $waiting)"
nlost=$(($(grep -c 'connection lost' "$H_LOG_px") - lost0))
nreg=$(($(grep -c 'connection regained' "$H_LOG_px") - reg0))
((nlost == 1)) || h_fail "the log says 'connection lost' $nlost times in one outage, want 1: $(grep 'connection lost' "$H_LOG_px" | tail -n 3)"
((nreg == 0)) || h_fail "the log says 'connection regained' $nreg times while the upstream only closed connections"

# --- (b) forwarding again: the waiting calls complete -------------------------
att1=$(h_stat px upstream_connect_attempts)
relay forward
accC=$(rst switch_accepted) # closed at once: the attempts of the outage
t_fwd=$SECONDS
wait_done "$cat_pid" nfs-cat
wait_done "$ls_pid" nfs-ls
t_back=$((SECONDS - t_fwd))
[ "$(cat "$H_TMP/cat.rc")" = "0 0" ] || h_fail "nfs-cat across the outage failed (exit statuses $(cat "$H_TMP/cat.rc"))"
got=$(cut -d' ' -f1 "$H_TMP/cat.md5")
[ "$got" = "$want_md5" ] || h_fail "nfs-cat across the outage: md5 $got, want $want_md5"
[ "$(cat "$H_TMP/ls.rc")" = 0 ] || h_fail "nfs-ls across the outage failed: $(cat "$H_TMP/ls.out")"
[ "$(grep -c ' f[0-9]*$' "$H_TMP/ls.out")" = 20 ] || h_fail "nfs-ls across the outage does not list the 20 files: $(cat "$H_TMP/ls.out")"
((t_back <= CAP + 3)) || h_fail "the waiting calls took ${t_back}s after the upstream was back (reconnect_max $CAP)"
line=$(grep 'connection regained' "$H_LOG_px" | tail -n 1)
[ -n "$line" ] || h_fail "no 'connection regained' in the log"
n_log=$(sed -n 's/.*connection regained after \([0-9]*\) attempts in .*/\1/p' <<<"$line")
[ -n "$n_log" ] || h_fail "the regain line does not count the attempts: $line"
# the relay accepted every attempt: those it closed, and the one that got
# through (the connections that came with it, once the outage was over, are
# not in the log's count)
n_relay=$((accC - acc0 + 1))
((n_log >= n_relay - CONNS && n_log <= n_relay + CONNS)) ||
	h_fail "the log counts $n_log attempts, the relay saw $n_relay"
att2=$(h_stat px upstream_connect_attempts)
n_ctr=$((att1 - att0))
((n_ctr >= accC - acc0 - CONNS && n_ctr <= accC - acc0)) ||
	h_fail "upstream_connect_attempts grew by $n_ctr during the outage, the relay accepted $((accC - acc0))"
h_log "(b) forwarding again: nfs-cat md5 ok and nfs-ls lists 20 files ${t_back}s later; log: '${line#*: }'; upstream_connect_attempts +$n_ctr (now $att2), relay $((accC - acc0)) during the outage"
h_stop_cachefsd px

# --- (c) soft mount: a call fails after upstream_timeout ----------------------
h_start_cachefsd ps relay --reconnect-max "$CAP" --upstream-connections "$CONNS" \
	--soft --upstream-timeout 3
Q="nfsport=$H_PORT_ps&mountport=$H_PORT_ps"
nfs-ls "$U/dir?$Q" >/dev/null || h_fail "soft proxy: nfs-ls failed before the outage"
relay close
t0=$SECONDS
timeout "$CLIENT_MAX" nfs-cat "$U/dir/f3?$Q" >"$H_TMP/soft.out" 2>&1
rc=$?
dt=$((SECONDS - t0))
((rc != 0 && rc != 124)) || h_fail "soft mode: nfs-cat with the upstream closing connections exited $rc after ${dt}s: $(cat "$H_TMP/soft.out")"
((dt >= 2 && dt <= 8)) || h_fail "soft mode: the call failed after ${dt}s, want about 3 (upstream_timeout)"
relay forward
for ((i = 0; i < (CAP + 3) * 10; i++)); do
	[ "$(h_stat ps upstream_conns_up)" -gt 0 ] && break
	sleep 0.1
done
got=$(timeout 20 nfs-cat "$U/dir/f3?$Q") || h_fail "soft mode: nfs-cat failed after the upstream was back"
[ "$got" = 3 ] || h_fail "soft mode: f3 reads '$got'"
h_log "(c) soft: a call failed after ${dt}s (upstream_timeout 3), and succeeded once forwarding again"

alive "$RPID" || h_fail "tcprelay died"
h_pass "accept-and-close upstream: $n_window connects in ${WINDOW}s ($rate/s, bound $bound with reconnect_max ${CAP}s x $CONNS connections), one 'connection lost', calls waited and completed ${t_back}s after the server was back ('${line#*: }'); soft mode failed a call after ${dt}s"
