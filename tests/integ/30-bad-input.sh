#!/bin/bash
# 30-bad-input: hostile and malformed RPC input (build/tests/badrpc) must get
# the right RPC-level replies from cachefsd (PROG_UNAVAIL, PROG_MISMATCH 3..3 for NFS and 1..3 for MOUNT,
# PROC_UNAVAIL, GARBAGE_ARGS, RPC_MISMATCH 2..2, AUTH_ERROR, closed
# connections for oversized records), and afterwards the proxy must still be
# alive and serve a normal client.
#
#   tests/integ/30-bad-input.sh                  against cachefsd (the test)
#   AGAINST=ganesha tests/integ/30-bad-input.sh  against nfs-ganesha directly;
#                                                only reports, never fails
#   BADRPC_ARGS="--case garbage,truncated" ...   extra badrpc arguments
#
# Only loopback addresses are used.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

BADRPC=$H_BUILD/tests/badrpc
AGAINST=${AGAINST:-proxy}
# shellcheck disable=SC2206
EXTRA=(${BADRPC_ARGS:-})

[ -x "$BADRPC" ] || h_fail "$BADRPC is missing (make tools)"
case "$AGAINST" in
proxy) [ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)" ;;
ganesha) ;;
*) h_fail "AGAINST must be proxy or ganesha, not '$AGAINST'" ;;
esac


h_start_ganesha up
echo "marker" >"$H_EXPORT_up/bad-input-marker"

if [ "$AGAINST" = ganesha ]; then
	h_log "badrpc against nfs-ganesha (nfs $H_NFSPORT_up, mount $H_MNTPORT_up), report only"
	"$BADRPC" 127.0.0.1 "$H_NFSPORT_up" --mount-port "$H_MNTPORT_up" "${EXTRA[@]}" |
		tee "$H_TMP/badrpc-ganesha.log"
	rc=${PIPESTATUS[0]}
	alive "$H_PID_up" && state="still alive" || state="DIED"
	h_log "badrpc exit $rc; nfs-ganesha $state"
	h_pass "badrpc ran against nfs-ganesha (exit $rc, ganesha $state; report only)"
	exit 0
fi

h_start_cachefsd px up
"$BADRPC" 127.0.0.1 "$H_PORT_px" "${EXTRA[@]}" | tee "$H_TMP/badrpc.log"
rc=${PIPESTATUS[0]}

alive "$H_PID_px" || h_fail "cachefsd died during badrpc: $(tail -n 5 "$H_LOG_px")"
if grep -q -E 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$H_LOG_px"; then
	h_fail "sanitizer report in cachefsd log: $(grep -m 3 -E 'Sanitizer|runtime error' "$H_LOG_px")"
fi
out=$(timeout 60 nfs-ls "$H_URL_px" 2>&1) || h_fail "nfs-ls through the proxy failed after badrpc: $out"
grep -q 'bad-input-marker' <<<"$out" ||
	h_fail "nfs-ls through the proxy does not list the export after badrpc: $out"
alive "$H_PID_px" || h_fail "cachefsd died after badrpc"

[ "$rc" = 0 ] || h_fail "badrpc reported failures (exit $rc): $(grep '^FAIL' "$H_TMP/badrpc.log" | head -n 20)"
# the connections closed for oversized records are counted
dropped=$(h_stat px rpc_conns_dropped_bad)
[ "$dropped" != MISSING ] && [ "$dropped" -ge 1 ] ||
	h_fail "rpc_conns_dropped_bad is $dropped after oversized records"
h_pass "cachefsd answers hostile RPC input correctly, stays up, and still serves nfs-ls ($dropped connections dropped for bad input)"
