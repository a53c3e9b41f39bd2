#!/bin/bash
# 19-nfs4-longfh: NFSv4 file handles longer than NFSv3's 64 bytes, from a
# real server, served to NFSv3 clients through cachefsd (upstream_version
# 4) as 64-byte mapped handles (the index's handle map, store_fh_*;
# docs/design.md, "Handles longer than 64 bytes").
# The filer: one nfs-ganesha, a VFS export (fsid_type uuid: 31-byte handles)
# at /t0 and FSAL PROXY_V4 exports stacked on it, /tK proxying to the same
# ganesha's /t(K-1); each tier wraps the handle below in 7 bytes of its own,
# so /t6's handles are 73 bytes. The tiers are added by SIGHUP reloads: a
# PROXY_V4 export needs its server answering when it is set up.
#  (a) a libnfs client lists and reads files under /t6 through cachefsd:
#      the names and bytes are the filer's; every handle it gets is 64
#      bytes with the map's magic; upstream_mapped_handles, fhmap_records
#      count them;
#  (b) after culling (cachefsctl cull --to 0: every object evicted) the
#      handles taken in (a) still read the right bytes, from the filer;
#  (c) after cachefsd restarts on the same cache (SIGTERM), and after a
#      kill -9 right after a new file's LOOKUP, the handles taken before
#      read the right bytes once everything cached was dropped (invalidate
#      --all): each mapping came back from the index;
#  (d) a mapped handle the index does not know gets NFS3ERR_STALE
#      (upstream_stale_mapped), caught before the filer;
#  (f) NLM locks through cachefsd on a file with a mapped handle are
#      granted and conflict as locks do (held at the filer as NFSv4 locks,
#      the filer's own handle); an unknown mapped handle is STALE_FH;
#  (e) a second cachefsd in front of /t0 (31-byte handles) passes them
#      unchanged: its handles are the filer's bytes, its map stays empty.
# shellcheck disable=SC2154,SC2034 # H_* variables are set and read by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PROBE=$H_BUILD/tests/nfs4probe
NLMLOCK=$H_BUILD/tests/nlmlock
CALL=$H_BUILD/tests/nfscall
NR=$H_BUILD/tests/nfsread
CTLBIN=$H_BUILD/cachefsctl
for t in "$PROBE" "$CALL" "$NR" "$CTLBIN"; do [ -x "$t" ] || h_fail "$t is missing (make tools)"; done
command -v nfs-ls >/dev/null || h_skip "nfs-ls is not installed (libnfs-utils)"
[ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalproxy_v4.so ] ||
	ls /usr/lib/*/ganesha/libfsalproxy_v4.so >/dev/null 2>&1 ||
	h_skip "nfs-ganesha's FSAL PROXY_V4 is not installed (nfs-ganesha-proxy-v4)"

TIERS=6
E=$H_TMP/up-export
mkdir -p "$E/sub" "$E/many"
h_mkdata "$E/sub/small" 5 3
h_mkdata "$E/sub/big" 3072 7
printf hello >"$E/sub/hello"
for i in $(seq -w 1 40); do echo "$i" >"$E/many/entry-$i"; done

# --- the filer ---------------------------------------------------------------
h_start_rpcbind
NP=$(h_free_port)
MNP=$(h_free_port)
CONF=$H_TMP/up-ganesha.conf
export_block()
{ # ID PSEUDO PATH FSAL
	cat <<EOF
EXPORT {
	Export_Id = $1; Path = $3; Pseudo = $2;
	Access_Type = RW; Squash = No_Root_Squash; Protocols = 4; Transports = TCP;
	SecType = sys; Attr_Expiration_Time = 0;
	FSAL { $4 }
}
EOF
}
cat >"$CONF" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $NP; MNT_Port = $MNP; NLM_Port = $(h_free_port); Rquota_Port = $(h_free_port);
	Bind_addr = 127.0.0.1; Enable_NLM = false; Enable_RQUOTA = false; Protocols = 4;
}
NFSV4 { Graceless = true; RecoveryRoot = $H_TMP/up-recov; }
$(export_block 1 /t0 "$E" "Name = VFS; fsid_type = uuid;")
EOF
mkdir -p "$H_TMP/up-recov"
ganesha.nfsd -F -f "$CONF" -L "$H_TMP/up-ganesha.log" -p "$H_TMP/up-ganesha.pid" \
	>>"$H_TMP/up-ganesha.log" 2>&1 &
GPID=$!
h_track ganesha-up "$GPID"
h_wait_port "$NP" 30 || h_fail "nfs-ganesha did not start: $(tail -3 "$H_TMP/up-ganesha.log")"
probe() { "$PROBE" --host 127.0.0.1 --port "$NP" --timeout 30 "$@"; }
# "fh REL HEX" -> HEX
fh_of() { probe --path "$1" fh "$2" | awk -v r="$2" '$1=="fh" && $2==r {print $3}'; }
has_fh() { fh_of "$1" "$2" | grep -q .; }
h_wait_until 30 has_fh /t0 . || h_fail "nfs-ganesha does not serve /t0"
for ((k = 1; k <= TIERS; k++)); do
	export_block $((k + 1)) "/t$k" "/t$((k - 1))" \
		"Name = PROXY_V4; Srv_Addr = 127.0.0.1; NFS_Port = $NP;" >>"$CONF"
	kill -HUP "$GPID"
	h_wait_until 30 has_fh "/t$k" sub/hello ||
		h_fail "PROXY_V4 tier /t$k does not serve: $(tail -3 "$H_TMP/up-ganesha.log")"
done
TOP=/t$TIERS
lens=""
for ((k = 0; k <= TIERS; k++)); do
	lens+=" /t$k:$(($(fh_of "/t$k" sub/hello | tr -d '\n' | wc -c) / 2))"
done
h_log "the filer's handle lengths (bytes):$lens"
up_root=$(fh_of "$TOP" .)
up_hello=$(fh_of "$TOP" sub/hello)
((${#up_root} / 2 > 64 && ${#up_hello} / 2 > 64)) ||
	h_fail "the filer's handles under $TOP are not over 64 bytes:$lens"

# --- (a) cachefsd over v4 in front of /t6 ------------------------------------
printf -v H_URL_v4 '%s' "nfs://127.0.0.1$TOP?nfsport=$NP"
printf -v H_EXPORT_v4 '%s' "$TOP"
h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 0 --readahead 0
P=$H_PORT_px
ctl() { "$CTLBIN" --cache-dir "$H_CACHE_px" "$@"; }
MAGIC=cf5d63666800
# client handle of REL through cachefsd
cfh() { "$CALL" --port "$P" --export "$TOP" --path "$1" fh | awk '$1=="fh"{print $2}'; }
# bytes of a handle through cachefsd, md5
rd_fh() { "$NR" --port "$P" --fh "$1" | md5sum | cut -d' ' -f1; }
want() { h_md5 "$E/$1"; }

names=$(nfs-ls "nfs://127.0.0.1$TOP/many?nfsport=$P&mountport=$P" 2>&1 | awk '{print $NF}' |
	grep '^entry-' | sort | tr '\n' ' ')
[ "$names" = "$(cd "$E/many" && printf '%s\n' entry-* | sort | tr '\n' ' ')" ] ||
	h_fail "nfs-ls many/ through cachefsd: $names"
# READDIRPLUS (nfs-ls) mapped every entry's handle: the root, many/ and 40
((r = $(h_stat px fhmap_records), r >= 42)) || h_fail "fhmap_records $r after listing 40 entries"
declare -A FH # "." is MOUNT's root handle
for f in . sub sub/small sub/big sub/hello many/entry-07; do
	h=$(cfh "$f")
	[ ${#h} = 128 ] && [ "${h:0:12}" = "$MAGIC" ] ||
		h_fail "$f: the client handle through cachefsd is not a 64-byte mapped handle: '$h'"
	FH[$f]=$h
done
for f in sub/small sub/big sub/hello many/entry-07; do
	[ "$(rd_fh "${FH[$f]}")" = "$(want "$f")" ] || h_fail "$f by its mapped handle: other bytes"
done
# READDIRPLUS's handles are the mapped ones LOOKUP gives
out=$("$CALL" --port "$P" --export "$TOP" --path many readdirplus) || h_fail "READDIRPLUS: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "READDIRPLUS of many/: $out"
# MKDIR's answer carries the new directory's handle, mapped as LOOKUP maps it
out=$("$CALL" --port "$P" --export "$TOP" --path sub mkdir newdir) || h_fail "MKDIR: $out"
grep -q '^status NFS3_OK' <<<"$out" && [ -d "$E/sub/newdir" ] || h_fail "MKDIR through cachefsd: $out"
mk=$(awk '$1=="fh"{print $2}' <<<"$out")
[ "${mk:0:12}" = "$MAGIC" ] && [ "$mk" = "$(cfh sub/newdir)" ] ||
	h_fail "MKDIR's handle '$mk' is not the mapped handle LOOKUP gives '$(cfh sub/newdir)'"
mapped=$(h_stat px upstream_mapped_handles)
records=$(h_stat px fhmap_records)
((mapped >= 6 && records >= 6)) ||
	h_fail "upstream_mapped_handles $mapped, fhmap_records $records after handing out 6 handles"
h_log "ok: (a) listed and read through cachefsd; handles are 64-byte mapped ones ($records mappings)"

# --- (b) culling leaves the mappings ----------------------------------------
out=$(ctl cull --to 0 --json) || h_fail "cachefsctl cull: $out"
ev=$(jq -r '.evicted_objects' <<<"$out" 2>/dev/null || echo 0)
((ev >= 3)) || h_fail "cull --to 0 evicted $ev objects: $out"
[ "$(h_stat px fhmap_records)" = "$records" ] || h_fail "culling changed fhmap_records"
ur0=$(h_stat px upstream_calls_READ)
for f in sub/small sub/big sub/hello; do
	[ "$(rd_fh "${FH[$f]}")" = "$(want "$f")" ] || h_fail "$f after culling: other bytes"
done
(($(h_stat px upstream_calls_READ) > ur0)) || h_fail "reads after culling did not go to the filer"
h_log "ok: (b) $ev objects culled; the saved handles read the filer's bytes"

# --- (c) restart, crash --------------------------------------------------------
h_stop_cachefsd px
h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 0 --readahead 0
ctl invalidate --all >/dev/null || h_fail "cachefsctl invalidate --all"
ur0=$(h_stat px upstream_calls_READ)
for f in sub/small sub/big sub/hello many/entry-07; do
	[ "$(rd_fh "${FH[$f]}")" = "$(want "$f")" ] || h_fail "$f after a restart: other bytes"
done
(($(h_stat px upstream_calls_READ) > ur0)) || h_fail "reads after the restart did not go to the filer"
out=$("$CALL" --port "$P" --export "$TOP" --fh "${FH[sub]}" getattr) || h_fail "GETATTR of sub/ after the restart: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "GETATTR of sub/ by its saved handle after the restart: $out"
[ "$(cfh sub/hello)" = "${FH[sub/hello]}" ] || h_fail "sub/hello's handle changed across the restart"
# a new file's mapping, then kill -9 at once: committed before the reply
printf fresh >"$E/sub/fresh"
nh=$(cfh sub/fresh)
h_stop_cachefsd px KILL
[ "${nh:0:12}" = "$MAGIC" ] || h_fail "sub/fresh: not a mapped handle: '$nh'"
h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 0 --readahead 0
[ "$(rd_fh "$nh")" = "$(want sub/fresh)" ] || h_fail "sub/fresh by its handle after kill -9: other bytes"
h_log "ok: (c) saved handles work after a restart and after kill -9"

# --- (d) an unknown mapped handle --------------------------------------------
s0=$(h_stat px upstream_stale_mapped)
bad=${FH[sub/hello]:0:120}00000000
out=$("$CALL" --port "$P" --export "$TOP" --fh "$bad" getattr) || h_fail "GETATTR of an unknown mapped handle: $out"
grep -q '^status NFS3ERR_STALE' <<<"$out" || h_fail "an unknown mapped handle: $out"
out=$("$NR" --port "$P" --fh "$bad" 2>&1 >/dev/null)
grep -q NFS3ERR_STALE <<<"$out" || h_fail "READ of an unknown mapped handle: $out"
(($(h_stat px upstream_stale_mapped) >= s0 + 2)) ||
	h_fail "upstream_stale_mapped did not count the unknown handles"
h_log "ok: (d) an unknown mapped handle is NFS3ERR_STALE"

# --- (f) NLM locks on a file with a mapped handle ------------------------------
# the locks room holds them at the filer as NFSv4 locks: the mapped handle
# is turned back into the filer's (origin_fh_upstream), never sent as it is
lfh=$(cfh sub/hello)
LA=(--port "$P" --fh "$lfh" --caller client-a --svid 101 --oh 61616161 --uid 0 --gid 0)
LB=(--port "$P" --fh "$lfh" --caller client-b --svid 202 --oh 62626262 --uid 0 --gid 0)
got=$("$NLMLOCK" "${LA[@]}" --exclusive --offset 0 --len 100 lock) || h_fail "A's lock: $got"
[ "$got" = GRANTED ] || h_fail "A's lock of sub/hello (a mapped handle) answered '$got': $(tail -3 "$H_LOG_px")"
got=$("$NLMLOCK" "${LB[@]}" --exclusive --offset 50 --len 10 lock)
[ "$got" = DENIED ] || h_fail "B locked a range A holds: '$got'"
got=$("$NLMLOCK" "${LB[@]}" --shared --offset 50 --len 10 test)
[ "$got" = "DENIED svid=101 exclusive=1 offset=0 len=100" ] || h_fail "B's TEST did not name A's lock: '$got'"
got=$("$NLMLOCK" "${LA[@]}" --offset 0 --len 100 unlock)
[ "$got" = GRANTED ] || h_fail "A's unlock: '$got'"
got=$("$NLMLOCK" "${LB[@]}" --exclusive --offset 50 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "B's lock after A's unlock: '$got'"
got=$("$NLMLOCK" "${LB[@]}" --offset 50 --len 10 unlock)
[ "$got" = GRANTED ] || h_fail "B's unlock: '$got'"
got=$("$NLMLOCK" "${LA[@]}" --fh "$bad" --exclusive --offset 0 --len 1 lock)
[ "$got" = STALE_FH ] || [ "$got" = NLM4_STALE_FH ] || h_fail "a lock on an unknown mapped handle answered '$got'"
h_log "ok: (f) NLM locks on a mapped handle: granted, conflicts denied, released"

# --- (e) handles of at most 64 bytes pass unchanged ---------------------------
printf -v H_URL_v40 '%s' "nfs://127.0.0.1/t0?nfsport=$NP"
printf -v H_EXPORT_v40 '%s' /t0
h_start_cachefsd py v40 --upstream-version 4 --fresh-guard 0
for f in . sub/hello many/entry-07; do
	via=$("$CALL" --port "$H_PORT_py" --export /t0 --path "$f" fh | awk '$1=="fh"{print $2}')
	direct=$(fh_of /t0 "$f")
	[ -n "$via" ] && [ "$via" = "$direct" ] ||
		h_fail "/t0 $f: cachefsd gives '$via', the filer '$direct'"
done
[ "$(h_stat py fhmap_records)" = 0 ] || h_fail "handles of 31 bytes were mapped"
[ "$("$NR" --port "$H_PORT_py" --export /t0 --path sub/big | md5sum | cut -d' ' -f1)" = "$(want sub/big)" ] ||
	h_fail "sub/big through cachefsd over /t0: other bytes"
h_log "ok: (e) /t0's $(($(fh_of /t0 sub/hello | wc -c) / 2))-byte handles pass unchanged"

h_pass "the filer's handles (bytes:$lens): $TOP's served as 64-byte mapped handles ($(h_stat px fhmap_records) mappings), kept across culling, a restart and kill -9; unknown ones STALE; /t0's unchanged"
