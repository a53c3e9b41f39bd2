#!/bin/bash
# upstreams: ganesha knfsd
# Users who try what the server would refuse them, through the proxy:
#  1. ttl mode, a 0700 directory of uid 1000 that uid 1000 has listed and
#     looked into through the proxy (all of it cached): uid 1001 gets the
#     server's NFS3ERR_ACCES for READDIR, READDIRPLUS and LOOKUP in it, and
#     cannot read the 0644 file inside by path — exactly as directly; uid
#     1000 is still answered from the cache;
#  2. both modes: uid 1001's WRITE and truncating SETATTR of uid 1000's
#     cached 0644 file are refused by the server, and the file stays cached
#     (no writer state, nothing dropped: the next read is a hit);
#  3. strict mode, evidence_ttl 2: a client that keeps a handle and never
#     revalidates gets, evidence_ttl later at most, what the server answers:
#     after a chmod 0600 NFS3ERR_ACCES, after a truncate the short file,
#     after the file is removed the server's answer to a READ of it.
# Every expected answer is the server's own, asked directly right after.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
NC=$H_BUILD/tests/nfscall
[ -x "$NC" ] || h_fail "$NC not built (make tools)"
h_start_upstream up
E=$H_EXPORT_up
{
	h_up_mkdir up d && h_up_chown up 1000:1000 d && h_up_chmod up 700 d &&
		h_up_mkdata up d/f.txt 8 1 && h_up_chown up 1000:1000 d/f.txt &&
		h_up_chmod up 644 d/f.txt &&
		h_up_mkdata up shared 2048 2 && h_up_chown up 1000:1000 shared &&
		h_up_chmod up 644 shared &&
		h_up_mkdata up held 3072 3 && h_up_chown up 1000:1000 held &&
		h_up_chmod up 644 held
} || h_fail "cannot set up the files on the upstream"
t_made=$EPOCHREALTIME

A="--uid 1000 --gid 1000"
B="--uid 1001 --gid 1001"
DIRECT="--port $H_NFSPORT_up --mountport $H_MNTPORT_up --export $E"
# call PORT-ARGS CRED ARGS...: nfscall's first line (the status)
call() { "$NC" "$@" 2>&1 | head -n 1; }
# rdfh PORT FH CRED...: md5 of a read by handle, or its status
rdfh()
{
	local port=$1 fh=$2 out rc
	shift 2
	out=$("$NR" --port "$port" --fh "$fh" --out "$H_TMP/rd.out" "$@" 2>&1)
	rc=$?
	case $rc in
	0) md5sum <"$H_TMP/rd.out" | cut -d' ' -f1 ;;
	3) sed -n 's/^status //p' <<<"$out" | tail -n 1 ;;
	*) echo "error $rc" ;;
	esac
}

# --- 1. ttl mode: names and listings of a directory B may not enter ---
h_start_cachefsd px up --meta-ttl 60
h_past_guard "$t_made" up
PX="--port $H_PORT_px --export $E"
for c in readdir readdirplus; do
	got=$(call $PX $A --path d $c)
	[ "$got" = "status NFS3_OK" ] || h_fail "A's $c of its own directory: $got"
done
[ "$(call $PX $A --path d lookup f.txt)" = "status NFS3_OK" ] || h_fail "A's LOOKUP in d"
"$NR" --port "$H_PORT_px" --export "$E" --path d/f.txt $A --out /dev/null || h_fail "A's read of d/f.txt"
# the same again: from the cache now
u0=$(h_stat px upstream_calls)
for c in readdir readdirplus; do
	[ "$(call $PX $A --path d $c)" = "status NFS3_OK" ] || h_fail "A's second $c"
done
[ "$(call $PX $A --path d lookup f.txt)" = "status NFS3_OK" ] || h_fail "A's second LOOKUP"
[ "$(h_stat px upstream_calls)" = "$u0" ] || h_fail "A was not answered from the cache"
dfh=$("$NC" $PX $A --path d fh | awk '$1=="fh"{print $2}')
for c in readdir readdirplus "lookup f.txt" "lookup nosuch"; do
	# shellcheck disable=SC2086 # $c is a call and its argument
	want=$(call $DIRECT $B --fh "$dfh" $c)
	# shellcheck disable=SC2086
	got=$(call $PX $B --fh "$dfh" $c)
	[ "$want" = "status NFS3ERR_ACCES" ] || h_fail "the server itself answers B's $c: $want"
	[ "$got" = "$want" ] || h_fail "ttl: B's $c in A's 0700 directory through the proxy: $got (the server: $want)"
done
out=$("$NR" --port "$H_PORT_px" --export "$E" --path d/f.txt $B --out "$H_TMP/rd.out" 2>&1)
[ $? = 3 ] && grep -q "status NFS3ERR_ACCES" <<<"$out" ||
	h_fail "ttl: B read d/f.txt through the proxy by path: $out"
[ "$(h_stat px meta_no_evidence)" -ge 4 ] || h_fail "no answer was withheld for lack of evidence"
u1=$(h_stat px upstream_calls)
[ "$(call $PX $A --path d lookup f.txt)" = "status NFS3_OK" ] || h_fail "A after B"
[ "$(h_stat px upstream_calls)" = "$u1" ] || h_fail "A lost its own cached answers after B's refusals"
h_log "ok: ttl: B gets the server's ACCES for READDIR, READDIRPLUS, LOOKUP in A's 0700 dir; A still from the cache"
h_stop_cachefsd px

# --- 2. refused changes change nothing in the cache (both modes) ---
for mode in strict ttl; do
	args=()
	[ $mode = ttl ] && args=(--meta-ttl 60)
	H_CACHE_px=$H_TMP/px-$mode
	h_start_cachefsd px up "${args[@]}"
	PX="--port $H_PORT_px --export $E"
	sfh=$("$NC" $PX $A --path shared fh | awk '$1=="fh"{print $2}')
	want=$(h_up_md5 up shared)
	[ "$(rdfh "$H_PORT_px" "$sfh" $A)" = "$want" ] || h_fail "$mode: A's read of shared"
	[ "$(rdfh "$H_PORT_px" "$sfh" $B)" = "$want" ] || h_fail "$mode: B's read of shared"
	w0=$(h_stat px writer_starts)
	d0=$(h_stat px data_drops)
	for c in "write 4096" "setsize 0"; do
		# shellcheck disable=SC2086
		got=$(call $PX $B --fh "$sfh" $c)
		[ "$got" = "status NFS3ERR_ACCES" ] || h_fail "$mode: B's $c of A's 0644 file: $got"
	done
	[ "$(h_up_md5 up shared)" = "$want" ] || h_fail "$mode: the refused changes changed the file"
	[ "$(h_stat px writer_starts)" = "$w0" ] || h_fail "$mode: a refused change started the writer state"
	[ "$(h_stat px data_drops)" = "$d0" ] || h_fail "$mode: a refused change dropped the cached data"
	r0=$(h_stat px upstream_calls_READ)
	[ "$(rdfh "$H_PORT_px" "$sfh" $A)" = "$want" ] || h_fail "$mode: A's read after B's attempts"
	[ "$(h_stat px upstream_calls_READ)" = "$r0" ] || h_fail "$mode: shared is no longer served from the cache"
	h_stop_cachefsd px
done
h_log "ok: B's refused WRITE and SETATTR leave A's file cached (strict, ttl)"

# --- 3. strict mode: a handle holder that never revalidates ---
H_CACHE_px=$H_TMP/px-held
h_start_cachefsd px up --evidence-ttl 2
hfh=$("$NC" --port "$H_PORT_px" --export "$E" $A --path held fh | awk '$1=="fh"{print $2}')
[ "$(rdfh "$H_PORT_px" "$hfh" $B)" = "$(h_up_md5 up held)" ] || h_fail "B's first read of held"
[ "$(rdfh "$H_PORT_px" "$hfh" $B)" = "$(h_up_md5 up held)" ] || h_fail "B's second read of held"
[ "$(h_stat px read_hits)" -gt 0 ] || h_fail "held was not served from the cache"
# after_change WHAT: B by handle through the proxy, evidence_ttl later,
# gets what the server gives B directly
after_change()
{
	sleep 2.5
	local got want
	got=$(rdfh "$H_PORT_px" "$hfh" $B)
	want=$(rdfh "$H_NFSPORT_up" "$hfh" $B)
	[ "$got" = "$want" ] || h_fail "strict, a handle held after $1: the proxy gave B '$got', the server '$want'"
	h_log "after $1: B gets '$want', as from the server"
}
h_up_chmod up 600 held || h_fail "chmod"
after_change "chmod 600"
[ "$(rdfh "$H_PORT_px" "$hfh" $B)" = NFS3ERR_ACCES ] || h_fail "B still reads held after chmod 600"
h_up_chmod up 644 held || h_fail "chmod back"
after_change "chmod 644"
: >"$H_TMP/empty"
h_up_put up held "$H_TMP/empty" || h_fail "truncate held"
after_change "a truncate to 0"
h_up_rm up held || h_fail "rm held"
after_change "its removal"
h_pass "hostile users: per-credential ttl answers, refused changes keep the cache, a held handle sees the server's answer within evidence_ttl"
