#!/bin/bash
# Retransmitted non-idempotent calls (the same xid again, on a new
# connection as after a reconnect) are answered from the duplicate-request
# cache instead of being applied twice: CREATE GUARDED, RENAME, REMOVE,
# MKDIR, RMDIR. A call with a new xid is applied. A retransmission arriving
# while the call is in progress gets no second answer. The same tool against
# nfs-ganesha directly (whose duplicate cache does not span connections)
# shows the calls applied twice: the test can tell.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
DT=$H_BUILD/tests/drctest
h_start_ganesha up
h_start_cachefsd px up
"$DT" --port "$H_PORT_px" --export "$H_EXPORT_up" || h_fail "retransmissions through the proxy"
[ "$(h_stat px drc_replays)" -ge 5 ] || h_fail "no replays counted"
[ "$(h_stat px drc_busy)" -ge 1 ] || h_fail "the in-progress duplicate was not counted"
out=$("$DT" --port "$H_NFSPORT_up" --mountport "$H_MNTPORT_up" --export "$H_EXPORT_up" 2>&1) &&
	h_fail "drctest passed against ganesha directly: it cannot detect double application"
grep -q "FAIL REMOVE c retransmitted" <<<"$out" || h_fail "against ganesha: unexpected output: $out"
h_pass "retransmissions answered from the duplicate-request cache (ganesha alone applies them twice)"
