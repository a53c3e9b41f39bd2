#!/bin/bash
# 43-client-hosts: one client host's slow connections cannot starve another
# host's reads (issue 35). 2000 connections from 127.0.0.2 each announce a
# 1 MiB record and trickle 1 KiB a second of it (tests/tools/hostile
# trickle), with client_memory_max 16M; meanwhile a normal client on
# 127.0.0.1 reads a 1 MiB file in one READ. Before: every connection was
# charged a 64 KiB input buffer (more once its record's 1 MiB buffer was
# allocated) while holding a few KiB, the cap was reached by the trickler
# alone (with 482 connections open) and paused every client: the read got
# no answer within 180 s (the issue: 11.7 s with 3 500 connections at the
# default 256M, 26.7 s with 1 000 at 16M). Now a connection is
# charged what it holds, and at the cap the host holding the most stops
# being read and has its partial records closed while the other host is
# served: the read completes within 2 s, and the bytes are right. And
# the cap is reached only once (nearly) all 2000 are open: each is charged
# about what it has sent.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
HOS=$H_BUILD/tests/hostile
RD=$H_BUILD/tests/nfsread
{ [ -x "$HOS" ] && [ -x "$RD" ]; } || h_fail "hostile or nfsread not built (make tools)"
N=2000
# descriptors for N connections on each side, and the proxy's own
ulimit -n $((N + 1024)) 2>/dev/null || h_skip "cannot raise RLIMIT_NOFILE to $((N + 1024))"
# 127.0.0.2 must be a loopback address of this host (it is on Linux: 127/8)
python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
	h_skip "cannot bind 127.0.0.2"
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big" 1024 3
h_start_cachefsd px up --client-memory-max 16M
read1()
{
	local t0
	t0=$(date +%s%N)
	timeout 60 "$RD" --port "$H_PORT_px" --export "$E" --path big --rsize 1048576 \
		--out "$H_TMP/read.out" 2>"$H_TMP/read.err" || h_fail "$1: the read failed: $(cat "$H_TMP/read.err")"
	cmp -s "$H_TMP/read.out" "$E/big" || h_fail "$1: wrong bytes"
	echo $((($(date +%s%N) - t0) / 1000000))
}
ms0=$(read1 "before") || exit 1 # the file cached, the proxy warm
# the trickler: unprivileged ports (2000 reserved ones do not exist); its
# connections never finish a call, so secure_ports does not matter
"$HOS" 127.0.0.1 "$H_PORT_px" trickle $N --from 127.0.0.2 --high-port --rate 1024 --hold 60 \
	--timeout 5 >"$H_TMP/trickle.out" 2>&1 &
tr=$!
# wait until the trickler holds the cap (or reasonably close: its bytes
# are charged as they arrive)
for ((i = 0; i < 300; i++)); do
	[ "$(h_stat px client_memory_paused)" = 1 ] && break
	alive "$tr" || h_fail "the trickler ended early: $(cat "$H_TMP/trickle.out")"
	sleep 0.1
done
[ "$(h_stat px client_memory_paused)" = 1 ] ||
	h_fail "2000 trickling connections did not reach client_memory_max 16M in 30 s ($(h_stat px client_memory_bytes) bytes held)"
held=$(h_stat px client_memory_bytes)
conns=$(h_stat px clients_connected)
# charged what they hold: a connection that sent a few KiB is charged a
# few KiB, so the cap takes (nearly) all of them (before: 482, each charged
# 64 KiB from its accept and 1 MiB once its record began)
((conns >= N / 2)) ||
	h_fail "client_memory_max 16M reached with only $conns connections open: each is charged more than it holds"
worst=0
for k in 1 2 3; do
	ms=$(read1 "read $k from 127.0.0.1 during the trickle") || exit 1
	((ms > worst)) && worst=$ms
	h_log "read $k: $ms ms ($conns connections, $((held >> 20)) MiB held when paused)"
done
((worst < 2000)) || h_fail "a 1 MiB read from 127.0.0.1 took $worst ms while 127.0.0.2 trickled on $conns connections"
share=$(h_stat px rpc_conns_share_closed)
after=$(h_stat px client_memory_bytes)
h_log "after the reads: $((after >> 20)) MiB held, $share trickling connections closed for their host's share"
kill "$tr" 2>/dev/null
h_wait_pid "$tr" "the trickler" 10
alive "$H_PID_px" || h_fail "cachefsd died"
h_log "trickler: $(cat "$H_TMP/trickle.out")"
h_pass "1 MiB reads from another host in at most $worst ms (${ms0} ms before) with $conns trickling connections holding $((held >> 20)) MiB at client_memory_max 16M"
