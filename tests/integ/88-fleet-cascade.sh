#!/bin/bash
# shellcheck disable=SC2154,SC2034 # H_* are set and read by harness.sh
# 88-fleet-cascade: cascaded tiers, edge -> regional -> filer (nfs-ganesha):
# two edge cachefsd whose upstream is one regional cachefsd, whose upstream
# is the filer (docs/operations.md, "Running a fleet", cascades).
#  1. bytes read through either edge are the filer's (a 3 MiB file, a small
#     tree listed and read);
#  2. the filer sends each byte once per region: the second read of the file
#     through the other edge costs the filer no READ (the regional node's
#     upstream READ count does not move) though that edge had to fetch it;
#  3. a file written through an edge lands on the filer once: its size and
#     md5 are the written ones, and every WRITE the edge sent upstream
#     reached the filer once (the regional node relays each, none twice);
#  4. strict mode through two tiers: a file changed on the filer is seen
#     through both edges at the next read (LOOKUP + READ) after the change,
#     as docs/coherence.md promises for one tier; the same for a file
#     changed through one edge, read through the other.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
OP=$H_BUILD/tests/nfsop
h_start_ganesha up
E=$H_EXPORT_up

mkdir -p "$E/tree/d1" "$E/tree/d2"
for i in 1 2 3 4 5; do echo "leaf $i" >"$E/tree/d1/f$i"; done
h_mkdata "$E/tree/d2/mid.bin" 200 5
h_mkdata "$E/big.bin" 3072 1
h_mkdata "$E/coh.bin" 1024 2
want_big=$(h_md5 "$E/big.bin")
t_data=$EPOCHREALTIME

# --register no: the tiers share this host's rpcbind with the filer; a
# node's clients are given its port (an edge reaches the regional node at
# the URL h_start_cachefsd sets: MOUNT and NFS on its one port)
h_start_cachefsd reg up --register no
H_EXPORT_reg=$E # the regional node serves the filer's export path
h_start_cachefsd e1 reg --register no
h_start_cachefsd e2 reg --register no
# the files must be past the fresh guard for the tiers to keep what they read
h_past_guard "$t_data" up

rd() { # rd NODE REL: md5 of REL read through NODE (LOOKUP walk + READs)
	local p="H_PORT_$1"
	"$NR" --port "${!p}" --export "$E" --path "$2" | md5sum | cut -d' ' -f1
}

# --- 1. bytes through two tiers -------------------------------------------
[ "$(rd e1 big.bin)" = "$want_big" ] || h_fail "big.bin through e1 -> reg -> filer: wrong bytes"
for f in tree/d1/f1 tree/d1/f5 tree/d2/mid.bin; do
	[ "$(rd e2 "$f")" = "$(h_md5 "$E/$f")" ] || h_fail "$f through e2: wrong bytes"
done
got=$("$OP" "$H_URL_e2" ls tree/d1 | tr '\n' ' ')
[ "$got" = "f1 f2 f3 f4 f5 " ] || h_fail "tree/d1 listed through e2: '$got'"
got=$("$OP" "$H_URL_e1" lsl tree/d2)
[ "$got" = "mid.bin 204800" ] || h_fail "tree/d2 listed through e1: '$got'"

# --- 2. the second edge's read costs the filer nothing -------------------
r_reg0=$(h_stat reg upstream_calls_READ)
r_e20=$(h_stat e2 upstream_calls_READ)
[ "$r_reg0" -gt 0 ] || h_fail "the regional node read nothing from the filer ($r_reg0)"
[ "$(rd e2 big.bin)" = "$want_big" ] || h_fail "big.bin through e2: wrong bytes"
r_reg1=$(h_stat reg upstream_calls_READ)
r_e21=$(h_stat e2 upstream_calls_READ)
[ "$r_e21" -gt "$r_e20" ] || h_fail "e2 did not fetch big.bin from the regional node (READs $r_e20 -> $r_e21)"
[ "$r_reg1" = "$r_reg0" ] ||
	h_fail "the second edge's read of big.bin cost the filer $((r_reg1 - r_reg0)) READs (want 0: the regional cache)"
h_log "the first edge's reads cost the filer $r_reg0 READs; big.bin (3 MiB) through the second: 0 (e2 asked the regional node $((r_e21 - r_e20)) READs)"

# --- 3. a write through an edge lands once on the filer -------------------
h_mkdata "$H_TMP/w.bin" 2500 9
want_w=$(h_md5 "$H_TMP/w.bin")
w_e10=$(h_stat e1 upstream_calls_WRITE)
w_reg0=$(h_stat reg upstream_calls_WRITE)
"$OP" "$H_URL_e1" write w.bin <"$H_TMP/w.bin" || h_fail "write of w.bin through e1 failed"
[ "$(stat -c %s "$E/w.bin")" = 2560000 ] || h_fail "w.bin on the filer is $(stat -c %s "$E/w.bin") bytes, not 2560000"
[ "$(h_md5 "$E/w.bin")" = "$want_w" ] || h_fail "w.bin on the filer: wrong bytes"
w_e1=$(($(h_stat e1 upstream_calls_WRITE) - w_e10))
w_reg=$(($(h_stat reg upstream_calls_WRITE) - w_reg0))
[ "$w_e1" -gt 0 ] || h_fail "e1 sent no WRITE upstream"
[ "$w_reg" = "$w_e1" ] ||
	h_fail "e1 sent $w_e1 WRITEs to the regional node, which sent $w_reg to the filer (want each once)"
[ "$(rd e2 w.bin)" = "$want_w" ] || h_fail "w.bin read back through e2: wrong bytes"

# --- 4. changes seen through both tiers at the next read -----------------
want_c=$(h_md5 "$E/coh.bin")
[ "$(rd e1 coh.bin)" = "$want_c" ] || h_fail "coh.bin through e1: wrong bytes"
[ "$(rd e2 coh.bin)" = "$want_c" ] || h_fail "coh.bin through e2: wrong bytes"
for round in 1 2 3; do
	# the same size, new bytes: only mtime/ctime tell
	h_mkdata "$H_TMP/c.bin" 1024 $((20 + round))
	h_up_overwrite up coh.bin "$H_TMP/c.bin" || h_fail "cannot change coh.bin on the filer"
	want_c=$(h_md5 "$H_TMP/c.bin")
	[ "$(rd e1 coh.bin)" = "$want_c" ] || h_fail "round $round: coh.bin changed on the filer, e1 served old bytes"
	[ "$(rd e2 coh.bin)" = "$want_c" ] || h_fail "round $round: coh.bin changed on the filer, e2 served old bytes"
	# and a change through e1, seen through e2 (its regional copy is stale)
	h_mkdata "$H_TMP/c.bin" 1024 $((40 + round))
	"$OP" "$H_URL_e1" overwrite coh.bin <"$H_TMP/c.bin" || h_fail "overwrite through e1 failed"
	want_c=$(h_md5 "$H_TMP/c.bin")
	[ "$(h_md5 "$E/coh.bin")" = "$want_c" ] || h_fail "round $round: the write through e1 did not land on the filer"
	[ "$(rd e2 coh.bin)" = "$want_c" ] || h_fail "round $round: coh.bin written through e1, e2 served old bytes"
	[ "$(rd e1 coh.bin)" = "$want_c" ] || h_fail "round $round: coh.bin written through e1, e1 served old bytes"
done

h_pass "edge -> regional -> filer: bytes correct through two tiers, the second edge's 3 MiB read cost the filer 0 READs (the first edge's reads $r_reg0), a 2.5 MB write landed once (each of $w_e1 WRITEs relayed once), changes on the filer and through one edge seen at the next read through both edges"
