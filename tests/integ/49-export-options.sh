#!/bin/bash
# The proxy's own export options:
#  secure_ports (on by default): clients whose source port is 1024 or above
#    are refused (MNT: MNT3ERR_ACCES, NFS calls: AUTH_TOOWEAK); root clients
#    (libnfs binds a privileged port for them) are served; with
#    --secure-ports false an unprivileged client is served too (53-secure-ports
#    has the refusals in detail);
#  root_squash: uid 0 is forwarded as anon_uid/anon_gid, so root cannot read
#    a root-owned 0600 file through the proxy, but can read a 0644 one.
# AUTH_NONE and AUTH_SYS only: tests/integ/30-bad-input.sh.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_start_ganesha up
E=$H_EXPORT_up
echo "public" >"$E/public"
chmod 644 "$E/public"
echo "root only" >"$E/private"
chmod 600 "$E/private"
url() { echo "nfs://127.0.0.1$E/$1?nfsport=$H_PORT_px&mountport=$H_PORT_px"; }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

h_start_cachefsd px up --secure-ports false
[ "$(nobody nfs-cat "$(url public)")" = public ] || h_fail "an unprivileged client was refused with secure_ports false"
[ "$(nfs-cat "$(url private)")" = "root only" ] || h_fail "root could not read its 0600 file without root_squash"
h_stop_cachefsd px

# secure_ports is on by default
h_start_cachefsd px up
[ "$(nfs-cat "$(url public)")" = public ] || h_fail "secure_ports: a client from a privileged port was refused"
if nobody nfs-cat "$(url public)" >/dev/null 2>&1; then
	h_fail "secure_ports: a client from an unprivileged port was served"
fi
[ "$(h_stat px rpc_mounts_insecure)" -ge 1 ] || h_fail "secure_ports: the refused MNT was not counted"
h_stop_cachefsd px
h_log "ok: secure_ports"

h_start_cachefsd px up --root-squash
[ "$(nfs-cat "$(url public)")" = public ] || h_fail "root_squash: root could not read a 0644 file"
if out=$(nfs-cat "$(url private)" 2>&1); then
	h_fail "root_squash: root read a root-owned 0600 file through the proxy: $out"
fi
h_pass "secure_ports refuses unprivileged source ports; root_squash turns root into nobody"
