#!/bin/bash
# shellcheck disable=SC2154 # H_EXPORT_up, H_PORT_n1 ... are set by harness.sh
# 88-fleet-balancer: three cachefsd nodes serving one export of one filer
# (nfs-ganesha) behind HAProxy in TCP mode (balance source, consistent
# hashing, an NFSv3 NULL call as the health check: tests/lib/fleet.sh, the
# configuration docs/operations.md "Running a fleet" explains).
#  1. the health check proves a node answers NFS, not only that it accepts
#     connections: a decoy server that accepts and answers HTTP is DOWN,
#     the three nodes UP;
#  2. handles are the filer's, so any node serves any client's handle: the
#     handles of a file and of a directory got through the balancer, and
#     through node 1, work on nodes 2 and 3 directly, nodes that never
#     looked them up (GETATTR, READ: the filer's bytes, LOOKUP below the
#     directory);
#  3. a libnfs client (nfs-cat, autoreconnect on by default) reading a
#     32 MiB file through the balancer while the node serving it is killed
#     (SIGKILL) after 8 MiB: it reconnects through the balancer to another
#     node and reads on there: exit 0, every byte correct; HAProxy marks
#     the dead node DOWN and the other node served the rest.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=tests/lib/fleet.sh
. "$(dirname "$0")/../lib/fleet.sh"
h_init
command -v haproxy >/dev/null || h_skip "no haproxy (make deps-test installs it)"
command -v nfs-cat >/dev/null || h_fail "nfs-cat missing (libnfs-utils, make deps-run)"
NR=$H_BUILD/tests/nfsread
NC=$H_BUILD/tests/nfscall
h_start_ganesha up
E=$H_EXPORT_up
mkdir -p "$E/tree/d1"
for i in 1 2 3; do echo "leaf $i" >"$E/tree/d1/f$i"; done
h_mkdata "$E/small.bin" 300 3
h_mkdata "$E/big.bin" 32768 1
want_small=$(h_md5 "$E/small.bin")
want_big=$(h_md5 "$E/big.bin")

fleet_start_nodes up 3
# the decoy: HAProxy's own stats listener accepts TCP and answers HTTP
FLEET_STATS_PORT=$(h_free_port)
fleet_start_haproxy 3 "server decoy 127.0.0.1:$FLEET_STATS_PORT check"
P=$FLEET_PORT

# --- 1. the NULL call health check --------------------------------------
fleet_wait_status decoy DOWN 10 ||
	h_fail "a server that accepts TCP but does not answer NFS is $(fleet_server_field decoy status), not DOWN"
h_log "health: n1..n3 $(fleet_server_field n1 check_status)/$(fleet_server_field n2 check_status)/$(fleet_server_field n3 check_status), decoy $(fleet_server_field decoy status) ($(fleet_server_field decoy check_status))"

# --- 2. one node's handles on the others --------------------------------
port() { local v="H_PORT_$1"; echo "${!v}"; }
fh_of() { # fh_of PORT REL
	"$NC" --port "$1" --export "$E" --path "$2" fh | sed -n 's/^fh //p' | tail -n 1
}
fh_n1=$(fh_of "$(port n1)" small.bin)
dfh_n1=$(fh_of "$(port n1)" tree/d1)
[ -n "$fh_n1" ] && [ -n "$dfh_n1" ] || h_fail "no handles through the balancer / node 1"
for n in n1 n2 n3; do
	l0=$(h_stat "$n" upstream_calls_LOOKUP)
	out=$("$NC" --port "$(port "$n")" --export "$E" --fh "$fh_n1" getattr) ||
		h_fail "GETATTR of node 1's handle on $n: no answer"
	grep -q '^status NFS3_OK' <<<"$out" || h_fail "GETATTR of node 1's handle on $n: $out"
	grep -q '^size 307200 ' <<<"$out" || h_fail "GETATTR of node 1's handle on $n: wrong size ($out)"
	got=$("$NR" --port "$(port "$n")" --fh "$fh_n1" | md5sum | cut -d' ' -f1)
	[ "$got" = "$want_small" ] || h_fail "READ of node 1's handle on $n: wrong bytes"
	l1=$(h_stat "$n" upstream_calls_LOOKUP)
	# served by the handle alone: no LOOKUP walk to find the file first
	[ "$l1" = "$l0" ] || h_fail "$n looked up $((l1 - l0)) names to serve node 1's handle"
	out=$("$NC" --port "$(port "$n")" --export "$E" --fh "$dfh_n1" lookup f2)
	grep -q '^status NFS3_OK' <<<"$out" || h_fail "LOOKUP below node 1's directory handle on $n: $out"
	fh2=$(sed -n 's/^fh //p' <<<"$out" | tail -n 1)
	[ "$("$NR" --port "$(port "$n")" --fh "$fh2" 2>/dev/null)" = "leaf 2" ] ||
		h_fail "tree/d1/f2 by a handle $n looked up below node 1's: wrong bytes"
done
# and through the balancer, whichever node it picks: the same handle
fh_bal=$(fh_of "$P" small.bin)
[ "$fh_bal" = "$fh_n1" ] || h_fail "the balancer's node and node 1 hand out different handles for small.bin"

# --- 3. a libnfs client through the balancer, its node killed -----------
mkfifo "$H_TMP/cat.fifo"
nfs-cat "nfs://127.0.0.1$E/big.bin?nfsport=$P&mountport=$P" >"$H_TMP/cat.fifo" 2>"$H_TMP/cat.err" &
catpid=$!
exec 3<"$H_TMP/cat.fifo"
# the first 8 MiB; nfs-cat then blocks on the full pipe, its READs stop
dd bs=1M count=8 iflag=fullblock status=none <&3 >"$H_TMP/cat.out" || h_fail "nfs-cat through the balancer gave no 8 MiB: $(cat "$H_TMP/cat.err")"
serving=""
for ((i = 0; i < 50; i++)); do
	serving=$(fleet_serving)
	[ -n "$serving" ] && break
	sleep 0.1
done
[ -n "$serving" ] && [ "${serving// /}" = "$serving" ] || h_fail "HAProxy shows '$serving' serving nfs-cat (want one node)"
dead=$serving
declare -A b0
for n in n1 n2 n3; do b0[$n]=$(h_stat "$n" bytes_read); done
[ "${b0[$dead]}" -ge $((8 << 20)) ] || h_fail "$dead served nfs-cat's first 8 MiB but counts ${b0[$dead]} bytes read"
h_log "nfs-cat is served by $dead (${b0[$dead]} bytes read by clients): SIGKILL"
h_stop_cachefsd "$dead" KILL
cat <&3 >>"$H_TMP/cat.out"
exec 3<&-
rc=0
wait "$catpid" || rc=$?
[ "$rc" = 0 ] || h_fail "nfs-cat exited $rc after $dead was killed: $(tail -n 3 "$H_TMP/cat.err")"
[ "$(stat -c %s "$H_TMP/cat.out")" = $((32 << 20)) ] || h_fail "nfs-cat gave $(stat -c %s "$H_TMP/cat.out") bytes, not 32 MiB"
[ "$(h_md5 "$H_TMP/cat.out")" = "$want_big" ] || h_fail "nfs-cat across the failover: wrong bytes"
fleet_wait_status "$dead" DOWN 10 || h_fail "HAProxy still shows the killed $dead $(fleet_server_field "$dead" status)"
# the rest came from the other nodes: what the dead one served before
# the kill and what the others served since make the whole file at least
took="" sum=${b0[$dead]}
for n in n1 n2 n3; do
	[ "$n" = "$dead" ] && continue
	b=$(($(h_stat "$n" bytes_read) - b0[$n]))
	sum=$((sum + b))
	[ "$b" -gt 0 ] && took="$took $n:$b"
done
[ -n "$took" ] || h_fail "no other node served bytes after $dead was killed"
[ "$sum" -ge $((32 << 20)) ] || h_fail "the nodes served $sum bytes in all, less than the 32 MiB nfs-cat got"
h_log "after the kill, served by:$took"

h_pass "3 nodes behind HAProxy: the NULL-call check passes nodes and fails a TCP-only decoy; handles from one node (file and directory) work on the two others (GETATTR, READ, LOOKUP); nfs-cat read 32 MiB through the balancer across a SIGKILL of its node ($dead) after 8 MiB: all bytes correct, the rest served by$took bytes"
