#!/bin/bash
# upstreams: ganesha knfsd
# ttl mode: what a listing (READDIRPLUS) told is what later calls are
# answered with. After a directory is listed, LOOKUPs and GETATTRs of its
# entries send no LOOKUP or GETATTR upstream and give the server's
# attributes; their ACCESS answers were fetched ahead, per credential (root
# is answered from its own prefetched answer, another uid never is); and a
# change through the proxy (SETATTR, WRITE, RENAME, REMOVE) shows in the
# next LOOKUP or GETATTR.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
OP=$H_BUILD/tests/nfsop
h_start_upstream up
E=$H_EXPORT_up
N=12
h_up_mkdir up ls || h_fail "mkdir ls on the upstream"
for i in $(seq 1 $N); do h_up_mkdata up "ls/f$i" "$i" "$i" || h_fail "ls/f$i on the upstream"; done
h_up_chmod up 600 ls/f1 || h_fail "chmod ls/f1" # root may read it, uid 4242 may not
# what the server says of a file: "size N mode OCTAL", as nfscall's getattr
up_attrs() { h_up_stat up "$1" | awk '{print "size " $1 " mode " $3}'; }
h_start_cachefsd px up --meta-ttl 60
P=$H_PORT_px
nc() { "$H_BUILD/tests/nfscall" --port "$P" --export "$E" "$@"; }
up() { awk -v k="upstream_calls_$1" '$1==k{print $2}' <<<"$2"; }

dirfh=$(nc --path ls fh | sed -n 's/^fh //p')
[ -n "$dirfh" ] || h_fail "no handle for ls"
out=$(nc --fh "$dirfh" readdirplus)
grep -qx "entries $((N + 2))" <<<"$out" || h_fail "the listing: $out"
# the ACCESS answers fetched ahead for root (the lister) come back
for i in $(seq 1 100); do
	[ "$(h_stat px access_prefetches)" -ge $N ] && break
	sleep 0.1
done
[ "$(h_stat px access_prefetches)" -ge $N ] ||
	h_fail "ACCESS of the listed files was not fetched ahead ($(h_stat px access_prefetches))"
sleep 1 # their answers are in

s0=$(h_stats px)
declare -A fh
for i in $(seq 1 $N); do
	out=$(nc --fh "$dirfh" lookup "f$i")
	grep -qx "status NFS3_OK" <<<"$out" || h_fail "LOOKUP f$i: $out"
	fh[$i]=$(sed -n 's/^fh //p' <<<"$out")
	out=$(nc --fh "${fh[$i]}" getattr)
	want=$(up_attrs "ls/f$i")
	grep -qx "$want" <<<"$out" || h_fail "GETATTR f$i: '$(grep size <<<"$out")', the server has '$want'"
	out=$(nc --fh "${fh[$i]}" access)
	grep -qx "access 0x1" <<<"$out" || h_fail "ACCESS (READ) of f$i for root: $out"
done
s1=$(h_stats px)
for p in LOOKUP GETATTR ACCESS; do
	d=$(($(up $p "$s1") - $(up $p "$s0")))
	[ "$d" = 0 ] || h_fail "$N LOOKUPs, GETATTRs and ACCESSes of listed files sent $d $p upstream"
done
h_log "ok: the listed files' LOOKUP, GETATTR and ACCESS answered locally, with the server's attributes"

# another credential is never answered from root's prefetched answer
out=$(nc --uid 4242 --gid 4242 --fh "${fh[1]}" access)
grep -qx "access 0x0" <<<"$out" || h_fail "ACCESS (READ) of f1 (0600 root) for uid 4242: $out"
s2=$(h_stats px)
[ $(($(up ACCESS "$s2") - $(up ACCESS "$s1"))) -ge 1 ] ||
	h_fail "uid 4242's ACCESS was answered without asking the server"
h_log "ok: uid 4242's ACCESS went to the server, which refused it"

# changes through the proxy show in the next LOOKUP / GETATTR
U=$H_URL_px
"$OP" "$U" chmod 640 ls/f2 || h_fail "chmod through the proxy"
grep -qx "$(up_attrs ls/f2)" <<<"$(nc --fh "${fh[2]}" getattr)" ||
	h_fail "GETATTR after a SETATTR through the proxy: $(nc --fh "${fh[2]}" getattr)"
printf 'abc' | "$OP" "$U" append ls/f3 || h_fail "append through the proxy"
[ "$(up_attrs ls/f3 | cut -d' ' -f2)" = 3075 ] || h_fail "the append did not reach the server: $(up_attrs ls/f3)"
grep -qx "$(up_attrs ls/f3)" <<<"$(nc --fh "${fh[3]}" getattr)" ||
	h_fail "GETATTR after a WRITE through the proxy: $(nc --fh "${fh[3]}" getattr)"
"$OP" "$U" rename ls/f4 ls/g4 || h_fail "rename through the proxy"
grep -qx "status NFS3ERR_NOENT" <<<"$(nc --fh "$dirfh" lookup f4)" ||
	h_fail "LOOKUP of a name renamed through the proxy: $(nc --fh "$dirfh" lookup f4)"
grep -qx "fh ${fh[4]}" <<<"$(nc --fh "$dirfh" lookup g4)" ||
	h_fail "LOOKUP of the new name after a rename: $(nc --fh "$dirfh" lookup g4)"
"$OP" "$U" rm ls/f5 || h_fail "remove through the proxy"
grep -qx "status NFS3ERR_NOENT" <<<"$(nc --fh "$dirfh" lookup f5)" ||
	h_fail "LOOKUP of a name removed through the proxy: $(nc --fh "$dirfh" lookup f5)"
h_stop_cachefsd px
h_pass "ttl mode: a listing's entries answer LOOKUP, GETATTR and ACCESS (per credential) locally; SETATTR, WRITE, RENAME and REMOVE through the proxy show at once"
