#!/bin/bash
# upstreams: ganesha knfsd
# 53-secure-ports: secure_ports is on by default, as the filer's own
# privileged-port check (knfsd's `secure`, ganesha's PrivilegedPort). Only
# root on a client host can use a source port below 1024, so a process of
# any other user there cannot claim another uid with AUTH_SYS. The case of
# issue 14: a root-only (0600) file, a process that is not root claiming
# uid 0 from an unprivileged port (tests/tools/hostile uid0, run as nobody):
#  - the filer itself, with its check on, refuses it (knfsd exported
#    `secure`; ganesha with PrivilegedPort = true);
#  - the proxy refuses it by default: MNT3ERR_ACCES for the MNT, and
#    AUTH_ERROR AUTH_TOOWEAK for NFS calls made with a handle learnt
#    elsewhere (handles are not secrets) - uid 0 from an unprivileged port
#    as root gets the same;
#  - the same process through a proxy with --secure-ports false reads the
#    file: the proxy forwards from its own privileged port, which is why
#    the default is on;
#  - root from a reserved port is served, directly and through the proxy.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
HOS=$H_BUILD/tests/hostile
NFSCALL=$H_BUILD/tests/nfscall
[ -x "$HOS" ] && [ -x "$NFSCALL" ] || h_fail "tests/tools not built (make tools)"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
KIND=${H_UPSTREAM:-ganesha}
case $KIND in
ganesha) H_GANESHA_EXPORT_OPTS='PrivilegedPort = true;' h_start_ganesha up ;;
knfsd) GUEST_APPEND="cfs.exportopts=rw,secure,no_root_squash,no_subtree_check,fsid=1" \
	h_start_knfsd up ;;
*) h_fail "H_UPSTREAM=$KIND: not ganesha or knfsd" ;;
esac
X=$H_EXPORT_up
printf 'root only\n' >"$H_TMP/private"
h_up_put up private "$H_TMP/private" || h_fail "cannot create the file on the server"
h_up_chown up 0:0 private && h_up_chmod up 600 private || h_fail "chmod on the server"

h_start_cachefsd px up
# the root handle, learnt by root from a reserved port (as any client can)
rootfh=$("$NFSCALL" --port "$H_PORT_px" --export "$X" --path . fh | sed -n 's/^fh //p')
[ -n "$rootfh" ] || h_fail "no root handle through the proxy"

# direct: the filer's own check
direct=$(nobody "$HOS" 127.0.0.1 "$H_NFSPORT_up" uid0 --file private --fh "$rootfh")
h_log "direct, nobody claiming uid 0 from an unprivileged port: $direct"
# ganesha: AUTH_TOOWEAK; knfsd: NFS3ERR_PERM ("request from insecure port")
case $direct in *"lookup 0"* | *"read 0"*) h_fail "$KIND answered a LOOKUP from an unprivileged port: $direct" ;; esac
# (the MNT: knfsd's mountd refuses it, ganesha's allows it and checks the
# NFS calls; only the MNT is looked at: the LOOKUP would go to the MOUNT port)
mntdirect=$(nobody "$HOS" 127.0.0.1 "$H_MNTPORT_up" uid0 --export "$X" --file private)
mntdirect=${mntdirect%% lookup*}
h_log "direct MNT from an unprivileged port: $mntdirect"
root_direct=$("$HOS" 127.0.0.1 "$H_NFSPORT_up" uid0 --file private --fh "$rootfh")
[[ $root_direct == *"read 0 bytes 10"* ]] || h_fail "root from a reserved port, directly: $root_direct"

# through the proxy, default: refused as the filer refuses it
out=$(nobody "$HOS" 127.0.0.1 "$H_PORT_px" uid0 --export "$X" --file private)
[ "$out" = "mnt 13" ] || h_fail "proxy, nobody's MNT from an unprivileged port: $out (want MNT3ERR_ACCES, 13)"
out=$(nobody "$HOS" 127.0.0.1 "$H_PORT_px" uid0 --file private --fh "$rootfh")
[[ $out == *"lookup denied AUTH_TOOWEAK"* ]] ||
	h_fail "proxy, nobody's LOOKUP as uid 0 from an unprivileged port: $out (want AUTH_TOOWEAK)"
out=$("$HOS" 127.0.0.1 "$H_PORT_px" uid0 --file private --fh "$rootfh" --high-port)
[[ $out == *"lookup denied AUTH_TOOWEAK"* ]] ||
	h_fail "proxy, root from an unprivileged port: $out (want AUTH_TOOWEAK)"
out=$("$HOS" 127.0.0.1 "$H_PORT_px" uid0 --export "$X" --file private --high-port)
[ "$out" = "mnt 13" ] || h_fail "proxy, root's MNT from an unprivileged port: $out"
# a libnfs tool run as nobody (libnfs falls back to an unprivileged port)
if got=$(nobody nfs-cat "nfs://127.0.0.1$X/private?nfsport=$H_PORT_px&mountport=$H_PORT_px&uid=0&gid=0" 2>&1); then
	h_fail "proxy: nfs-cat as nobody claiming uid 0 read the file: $got"
fi
# root from a reserved port is served
out=$("$HOS" 127.0.0.1 "$H_PORT_px" uid0 --export "$X" --file private)
[[ $out == "mnt 0 lookup 0 read 0 bytes 10" ]] || h_fail "proxy, root from a reserved port: $out"
[ "$(h_stat px rpc_mounts_insecure)" -ge 2 ] || h_fail "refused MNTs not counted (rpc_mounts_insecure)"
[ "$(h_stat px rpc_auth_errors)" -ge 2 ] || h_fail "refused calls not counted (rpc_auth_errors)"
h_stop_cachefsd px

# --secure-ports false: the proxy launders the port (what the default prevents)
h_start_cachefsd px up --secure-ports false
laundered=$(nobody "$HOS" 127.0.0.1 "$H_PORT_px" uid0 --export "$X" --file private)
[[ $laundered == *"read 0 bytes 10"* ]] ||
	h_fail "--secure-ports false: expected the laundered read to work (the case of the issue): $laundered"
h_pass "$KIND: nobody claiming uid 0 from an unprivileged port: filer '$direct' ($mntdirect), proxy refuses (MNT3ERR_ACCES, AUTH_TOOWEAK) by default; with --secure-ports false it read the 0600 file ($laundered)"
