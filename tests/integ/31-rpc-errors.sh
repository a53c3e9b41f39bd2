#!/bin/bash
# upstreams: ganesha knfsd
# 31-rpc-errors: RPC-level errors from the upstream reach the client as they
# came. badrpc's compare mode (tests/tools/badrpc.c) sends a few hand-made,
# well-formed calls that a server may refuse at the RPC level (LOOKUP names
# of 255 to 4096 bytes, a CREATE with an unknown createmode3, a SETATTR with
# an unknown time_how, a READDIR from a cookie never handed out) both
# straight to the server and through cachefsd; every pair of replies must
# agree (reply_stat, accept_stat or auth_stat, and the nfsstat3 of a
# SUCCESS). What the server refuses at the RPC level and cachefsd forwarded
# counts in upstream_rpc_errors (never more than the server refused), and
# cachefsd keeps serving.
# The kernel nfsd answers a LOOKUP of a 300-byte name GARBAGE_ARGS (its
# decoder stops at NFS3_MAXNAMLEN, 255): on that upstream the test also
# checks that this answer was forwarded and handed on (upstream_rpc_errors
# grew), not made by the proxy. nfs-ganesha 4.3 answers such names at the
# NFS level (NAMETOOLONG) and decodes everything the proxy forwards; it is
# given a second, krb5-only export, and a GETATTR of that export's root
# handle (from ganesha's own MNT), which ganesha refuses with MSG_DENIED
# AUTH_TOOWEAK, must come back through the proxy the same way.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

BADRPC=$H_BUILD/tests/badrpc
[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)"
[ -x "$BADRPC" ] || h_fail "$BADRPC is missing (make tools)"
KIND=${H_UPSTREAM:-ganesha}
FOREIGN=()
case $KIND in
ganesha)
	h_start_ganesha up
	mkdir -p "$H_TMP/krb5-export"
	cat >>"$H_CONF_up" <<EOF
EXPORT {
	Export_Id = 2;
	Path = $H_TMP/krb5-export;
	Pseudo = /krb5;
	Access_Type = RW;
	Protocols = 3;
	Transports = TCP;
	SecType = krb5;
	FSAL { Name = VFS; }
}
EOF
	h_stop_ganesha up
	h_restart_ganesha up
	for ((i = 0; i < 100; i++)); do
		nfs-ls "$H_URL_up" >/dev/null 2>&1 && break
		sleep 0.2
	done
	FOREIGN=(--foreign-export "$H_TMP/krb5-export")
	;;
knfsd)
	type h_start_knfsd >/dev/null 2>&1 ||
		h_skip "the kernel nfsd upstream (h_start_knfsd in tests/lib/harness.sh) is not in this tree yet"
	h_start_knfsd up
	;;
*) h_fail "H_UPSTREAM=$KIND: not ganesha or knfsd" ;;
esac
h_start_cachefsd px up

e0=$(h_stat px upstream_rpc_errors)
"$BADRPC" 127.0.0.1 "$H_PORT_px" --compare-with "$H_NFSPORT_up:$H_MNTPORT_up" \
	--export "$H_EXPORT_up" "${FOREIGN[@]}" >"$H_TMP/cmp.log" 2>&1
rc=$?
cat "$H_TMP/cmp.log" >&2
((rc == 0)) || h_fail "the proxy's RPC-level replies differ from $KIND's: $(grep '^FAIL' "$H_TMP/cmp.log" | head -n 3)"
summary=$(tail -n 1 "$H_TMP/cmp.log")
k=$(sed -n 's/.*; \([0-9]*\) answered with an RPC-level error by the server$/\1/p' <<<"$summary")
[ -n "$k" ] || h_fail "badrpc printed no summary: $summary"
e1=$(h_stat px upstream_rpc_errors)
d=$((e1 - e0))
((d <= k)) || h_fail "upstream_rpc_errors grew by $d, but the server refused only $k of the calls"
lookup300=$(grep 'LOOKUP of a 300-byte name' "$H_TMP/cmp.log")
if [ "$KIND" = knfsd ]; then
	grep -q 'server: GARBAGE_ARGS; proxy: GARBAGE_ARGS' <<<"$lookup300" ||
		h_fail "knfsd: a 300-byte LOOKUP name: $lookup300 (want GARBAGE_ARGS from both)"
	((d >= 1)) || h_fail "knfsd: GARBAGE_ARGS was not forwarded (upstream_rpc_errors +$d): the proxy answered it itself"
else
	grep -q 'krb5-export: server: MSG_DENIED AUTH_ERROR AUTH_TOOWEAK(5); proxy: MSG_DENIED AUTH_ERROR AUTH_TOOWEAK(5)' "$H_TMP/cmp.log" ||
		h_fail "ganesha: a GETATTR on the krb5-only export: $(grep krb5-export "$H_TMP/cmp.log")"
	((d >= 1)) || h_fail "ganesha: MSG_DENIED was not forwarded (upstream_rpc_errors +$d)"
fi
alive "$H_PID_px" || h_fail "cachefsd died: $(tail -n 5 "$H_LOG_px")"
out=$(timeout 30 nfs-ls "$H_URL_px" 2>&1) || h_fail "nfs-ls through the proxy failed afterwards: $out"
h_pass "$KIND: ${summary#badrpc: }, the proxy answered each the same; $d forwarded and counted in upstream_rpc_errors; 300-byte LOOKUP: ${lookup300#*: }"
