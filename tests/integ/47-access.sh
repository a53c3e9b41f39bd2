#!/bin/bash
# Which clients may connect: a client in a network namespace, at an address
# outside the allow list (default: loopback only), is refused at accept (and
# the refusal is logged and counted); with its network in the allow list it
# mounts and reads. Loopback clients are served throughout.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
command -v ip >/dev/null || h_fail "ip (iproute2) missing"
h_start_ganesha up
E=$H_EXPORT_up
echo "hello" >"$E/hello"
h_netns cl
NS=$H_NS_cl
HOST=$H_HOSTADDR_cl
NSADDR=$H_NSADDR_cl

H_PORT_px=$(h_free_port)
P=$H_PORT_px
nsurl="nfs://$HOST$E/hello?nfsport=$P&mountport=$P"
lourl="nfs://127.0.0.1$E/hello?nfsport=$P&mountport=$P"

# default allow: loopback only
h_start_cachefsd px up --listen "0.0.0.0:$P"
if got=$(ip netns exec "$NS" timeout 20 nfs-cat "$nsurl" 2>&1); then
	h_fail "a client at $NSADDR (not allowed) read through the proxy: $got"
fi
[ "$(h_stat px rpc_conns_refused)" -ge 1 ] || h_fail "the refused connection was not counted"
grep -q "client $NSADDR: refused (not in allow)" "$H_LOG_px" || h_fail "the refusal was not logged"
[ "$(nfs-cat "$lourl")" = hello ] || h_fail "a loopback client was not served"
h_stop_cachefsd px
h_log "ok: $NSADDR refused with the default allow list"

# its network allowed
h_start_cachefsd px up --listen "0.0.0.0:$P" --allow "127.0.0.0/8,${NSADDR%.*}.0/24"
got=$(ip netns exec "$NS" timeout 20 nfs-cat "$nsurl" 2>&1) || h_fail "allowed client at $NSADDR: $got"
[ "$got" = hello ] || h_fail "allowed client at $NSADDR read '$got'"
[ "$(nfs-cat "$lourl")" = hello ] || h_fail "a loopback client was not served"
h_stop_cachefsd px
# a single address that is not the client's
h_start_cachefsd px up --listen "0.0.0.0:$P" --allow "127.0.0.1, ${NSADDR%.*}.77"
if ip netns exec "$NS" timeout 20 nfs-cat "$nsurl" >/dev/null 2>&1; then
	h_fail "a client at $NSADDR was served with only ${NSADDR%.*}.77 allowed"
fi
h_pass "allow list: $NSADDR refused by default and when not listed, served when its network is allowed"
