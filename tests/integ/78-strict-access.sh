#!/bin/bash
# upstreams: ganesha knfsd
# Strict mode without needless ACCESS round trips (strict_access_reuse),
# against ganesha with Attr_Expiration_Time = 0 (the harness's export)
# and the kernel nfsd in the guest (its files made there, h_up_*):
#  1. a file opened twice through the proxy (LOOKUP, GETATTR, ACCESS, READ:
#     nfsbench cat) by uid 2000 sends one ACCESS upstream; the second
#     open's ACCESS is answered with the server's first answer (the GETATTR
#     just answered shows ctime, mode, owner and group unchanged);
#  2. after a chmod made directly on the server's export directory that
#     takes READ from uid 2000, its next open forwards ACCESS again, the
#     answer grants no READ, and its READ gets NFS3ERR_ACCES, never the
#     cached bytes;
#  3. the same after a chown made on the server (uid 2000 no longer owns
#     its 0600 file);
#  4. a GETATTR right after the server's LOOKUP of the file on the same
#     connection (nfscall's walk, then its call) is answered with that
#     LOOKUP's attributes (strict_lookup_attrs), not sent upstream; one
#     sent 4 s after its LOOKUP, with a chmod made on the server in
#     between, goes to the server and shows the new mode;
#  5. with strict_access_reuse = no and strict_lookup_attrs = 0, every
#     ACCESS and every GETATTR goes upstream.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NB=$H_BUILD/bench/nfsbench
NC=$H_BUILD/tests/nfscall
NR=$H_BUILD/tests/nfsread
for t in "$NB" "$NC" "$NR"; do
	[ -x "$t" ] || h_fail "$t not built (make tools)"
done
h_start_upstream up
E=$H_EXPORT_up
{
	h_up_mkdir up d && h_up_chmod up 755 d &&
		h_up_mkdata up d/f 64 7 && h_up_chown up 1000:1000 d/f && h_up_chmod up 644 d/f &&
		h_up_mkdata up d/g 64 8 && h_up_chown up 2000:2000 d/g && h_up_chmod up 600 d/g
} || h_fail "cannot set up the files on the upstream"
want_f=$(h_up_md5 up d/f) || h_fail "md5 of d/f"
want_g=$(h_up_md5 up d/g) || h_fail "md5 of d/g"
sleep 3.2 # past the fresh guard: the first reads are stored

X="--uid 2000 --gid 2000"
# xx PATH: uid 2000 opens and reads PATH as a close-to-open client does
# (LOOKUP, GETATTR, ACCESS, READ): the bytes' xxh64, or "failed"
xx()
{
	# shellcheck disable=SC2086 # $X is two flags
	"$NB" cat --port "$H_PORT_px" --export "$E" --path "$1" $X \
		--verify "$H_TMP/verify" >/dev/null 2>"$H_TMP/nb.err" || {
		echo failed
		return
	}
	awk '{print $2}' "$H_TMP/verify"
}
# access PATH: the bits the proxy answers uid 2000's ACCESS(READ) with
access_bits()
{
	# shellcheck disable=SC2086
	"$NC" --port "$H_PORT_px" --export "$E" $X --path "$1" access | awk '$1=="access"{print $2}'
}
# read PATH by uid 2000 without an ACCESS of its own: md5 or the status
rd()
{
	local out rc
	# shellcheck disable=SC2086
	out=$("$NR" --port "$H_PORT_px" --export "$E" --path "$1" $X --out "$H_TMP/rd.out" 2>/dev/null)
	rc=$?
	case $rc in
	0) md5sum <"$H_TMP/rd.out" | cut -d' ' -f1 ;;
	3) echo "$out" | sed -n 's/^status //p' | tail -1 ;;
	*) echo "error $rc" ;;
	esac
}
up_access() { h_stat px upstream_calls_ACCESS; }
reused() { h_stat px strict_access_reused; }

# --- 1. two opens, one ACCESS upstream ---
# (the first open comes first: a READ before any ACCESS may make the proxy
# ask ACCESS itself, and the open would reuse that answer). The LOOKUP's
# attributes answer a GETATTR that follows within strict_lookup_attrs: 2 ms
# by default, what a client's open takes; a test client on a loaded machine
# under ASan can be preempted for longer between the two (failed once), so
# 100 ms (its maximum) here: part 4 still checks a GETATTR 4 s later goes to the server
h_start_cachefsd px up --strict-lookup-attrs 100000
a0=$(up_access)
x1=$(xx d/f)
[ "$x1" != failed ] || h_fail "first open of d/f failed: $(cat "$H_TMP/nb.err")"
[ "$(up_access)" = $((a0 + 1)) ] || h_fail "the first open sent $(($(up_access) - a0)) ACCESS upstream, not 1"
x2=$(xx d/f)
[ "$x2" = "$x1" ] || h_fail "the second open read other bytes ($x2, not $x1)"
[ "$(up_access)" = $((a0 + 1)) ] || h_fail "the second open sent ACCESS upstream again"
[ "$(reused)" = 1 ] || h_fail "strict_access_reused is $(reused), not 1"
[ "$(h_stat px read_hits)" -gt 0 ] || h_fail "the reads were not served from the cache"
[ "$(rd d/f)" = "$want_f" ] || h_fail "uid 2000 cannot read the 0644 file through the proxy"
[ "$(access_bits d/f)" = 0x1 ] || h_fail "the reused ACCESS answer is not READ"
[ "$(reused)" = 2 ] || h_fail "an ACCESS after a LOOKUP was not answered from the server's answer"

# --- 2. chmod on the server: READ taken from uid 2000 ---
h_up_chmod up 640 d/f || h_fail "chmod on the server"
a1=$(up_access)
r1=$(reused)
bits=$(access_bits d/f)
[ "$(up_access)" = $((a1 + 1)) ] || h_fail "after a chmod on the server, ACCESS was not asked of the server"
[ "$(reused)" = "$r1" ] || h_fail "after a chmod on the server, the old ACCESS answer was reused"
[ "$bits" = 0x0 ] || h_fail "after chmod 640 the ACCESS answer to uid 2000 is $bits, not 0x0"
[ "$(xx d/f)" = failed ] || h_fail "after chmod 640 uid 2000 opened and read the file"
[ "$(rd d/f)" = NFS3ERR_ACCES ] || h_fail "after chmod 640 uid 2000's READ got $(rd d/f), not NFS3ERR_ACCES"

# --- 3. chown on the server: uid 2000 no longer owns its 0600 file ---
xg=$(xx d/g)
[ "$xg" != failed ] || h_fail "uid 2000 cannot open its own 0600 file"
[ "$(rd d/g)" = "$want_g" ] || h_fail "uid 2000 cannot read its own 0600 file"
r2=$(reused)
[ "$(xx d/g)" = "$xg" ] || h_fail "the second open of d/g"
[ "$(reused)" = $((r2 + 1)) ] || h_fail "the second open of d/g asked ACCESS upstream"
h_up_chown up 1000:1000 d/g || h_fail "chown on the server"
a2=$(up_access)
bits=$(access_bits d/g)
[ "$(up_access)" = $((a2 + 1)) ] || h_fail "after a chown on the server, ACCESS was not asked of the server"
[ "$(reused)" = $((r2 + 1)) ] || h_fail "after a chown on the server, the old ACCESS answer was reused"
[ "$bits" = 0x0 ] || h_fail "after the chown the ACCESS answer to uid 2000 is $bits, not 0x0"
[ "$(xx d/g)" = failed ] || h_fail "after the chown uid 2000 opened and read the file"
[ "$(rd d/g)" = NFS3ERR_ACCES ] || h_fail "after the chown uid 2000's READ got $(rd d/g), not NFS3ERR_ACCES"

# --- 4. a GETATTR right after the server's LOOKUP takes its attributes ---
up_getattr() { h_stat px upstream_calls_GETATTR; }
from_lookup() { h_stat px strict_lookup_attrs; }
mode_of() { awk '$1=="size"{print $4}' "$1"; }
g0=$(up_getattr)
l0=$(from_lookup)
"$NC" --port "$H_PORT_px" --export "$E" --path d/f getattr >"$H_TMP/ga1.out" 2>&1 ||
	h_fail "GETATTR of d/f through the proxy: $(cat "$H_TMP/ga1.out")"
[ "$(mode_of "$H_TMP/ga1.out")" = 640 ] || h_fail "the GETATTR right after a LOOKUP shows mode $(mode_of "$H_TMP/ga1.out"), not the server's 640"
[ "$(up_getattr)" = "$g0" ] || h_fail "the GETATTR right after the server's LOOKUP went upstream"
[ "$(from_lookup)" = $((l0 + 1)) ] || h_fail "strict_lookup_attrs went from $l0 to $(from_lookup), not by 1"
# LOOKUP, a chmod on the server, GETATTR 4 s after the LOOKUP
t0=$(date +%s%N)
"$NC" --port "$H_PORT_px" --export "$E" --pause 4000 --path d/f getattr >"$H_TMP/ga2.out" 2>&1 &
gp=$!
sleep 0.5
h_up_chmod up 604 d/f || h_fail "chmod 604 on the server"
t1=$(date +%s%N)
wait "$gp" || h_fail "the paused GETATTR of d/f failed: $(cat "$H_TMP/ga2.out")"
[ $(((t1 - t0) / 1000000)) -lt 3500 ] || h_fail "the chmod on the server took $(((t1 - t0) / 1000000)) ms, too close to the 4 s pause to order it before the GETATTR"
[ "$(mode_of "$H_TMP/ga2.out")" = 604 ] || h_fail "a chmod on the server between a LOOKUP and a GETATTR 4 s later was not seen: mode $(mode_of "$H_TMP/ga2.out")"
[ "$(up_getattr)" = $((g0 + 1)) ] || h_fail "the GETATTR 4 s after its LOOKUP was not asked of the server"
[ "$(from_lookup)" = $((l0 + 1)) ] || h_fail "the GETATTR 4 s after its LOOKUP was answered from it"
h_stop_cachefsd px

# --- 5. the switches off: every ACCESS and GETATTR forwarded ---
h_up_chmod up 644 d/f || h_fail "chmod back on the server"
sleep 3.2 # the ctime is new: past the fresh guard again
h_start_cachefsd px up --strict-access-reuse no --strict-lookup-attrs 0
a3=$(up_access)
g3=$(up_getattr)
for i in 1 2 3; do
	[ "$(xx d/f)" != failed ] || h_fail "open $i of d/f with the switches off"
done
[ "$(up_access)" = $((a3 + 3)) ] || h_fail "with strict_access_reuse = no, $(($(up_access) - a3)) of 3 ACCESS calls went upstream"
[ "$(reused)" = 0 ] || h_fail "with strict_access_reuse = no an ACCESS was reused"
[ "$(up_getattr)" = $((g3 + 3)) ] || h_fail "with strict_lookup_attrs = 0, $(($(up_getattr) - g3)) of 3 GETATTR calls went upstream"
[ "$(from_lookup)" = 0 ] || h_fail "with strict_lookup_attrs = 0 a GETATTR was answered from a LOOKUP"
h_pass "strict mode: a second open costs no ACCESS upstream; a chmod or chown on the server is seen at the next open (ACCESS asked again, READ refused); a GETATTR right after the server's LOOKUP takes its attributes, one 4 s later asks the server and sees its chmod; switches off: every ACCESS and GETATTR forwarded"
