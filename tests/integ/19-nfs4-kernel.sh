#!/bin/bash
# 19-nfs4-kernel: cachefsd in front of the Linux kernel NFS server with
# NFSv3 off (rpc.nfsd -N 3 in the qemu server guest, tests/guest/server.sh
# --nfsvers 4: the upstream kind knfsd4), over its NFSv4.0 backend
# (upstream_version 4), serving NFSv3 clients. The second real NFSv4 server
# after nfs-ganesha (19-nfs4-serve): knfsd's handles, numeric owners
# (AUTH_SYS, nfs4_disable_idmapping), 64-bit READDIR cookies from ext4's
# hash order, its change attribute, and no NFSv3 to fall back to.
#  (a) what an NFSv3 client reads through cachefsd (tests/tools/nfs4probe
#      --v3): GETATTR, LOOKUP, READDIRPLUS in 1 KiB pages, READ, READLINK
#      FSSTAT, PATHCONF agree line by line with the module's direct NFSv4.0 view of the
#      server, and with what the test made there: sizes, modes, owner
#      1234:5678, the 40 names, the bytes (md5); as uid 1000 too (ACCESS,
#      a directory it may search but not list);
#  (b) a second read of the big file is served from the cache (read_hits,
#      no new fill, no upstream READ);
#  (c) writes through cachefsd by libnfs's NFSv3 client (create+write,
#      overwrite, truncate, chmod, mkdir, symlink, rename, rm) land on the
#      server as made;
#  (d) the stock Linux NFSv3 client (the client guest, tests/guest/run.sh)
#      mounts cachefsd (vers=3) and reads the tree and the big file (md5 as
#      the server holds), writes a 1.2 MB file in 3000-byte writes, makes a
#      directory, moves a file, sets an mtime, chowns, links, makes a FIFO,
#      creates with O_EXCL (v4 OPEN EXCLUSIVE4, then the client's SETATTR)
#      and removes a directory: all of it on the server after; its `ls -ln`
#      gives the sizes, modes and owners the server has.
# Test data on the server goes through tests/tools/nfsop's NFSv4.0 mode
# (h_up_*). Measured (2-core host, TCG): 14-23 s on build and build-san
# (server guest boot 5-7 s, the data 1-2 s, the client guest 5-8 s).
# upstreams: knfsd4
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
export H_BUILD # run.sh and mkimage.sh find the guest images by it

PROBE=$H_BUILD/tests/nfs4probe
NFSOP=$H_BUILD/tests/nfsop
for t in "$PROBE" "$NFSOP"; do [ -x "$t" ] || h_fail "$t is missing (make tools)"; done
h_need_qemu "the kernel nfsd and client guests"
t0=$SECONDS
"$H_ROOT/tests/guest/mkimage.sh" "${GUEST_IMAGES:-$H_BUILD}/guest" >/dev/null ||
	h_fail "building the client guest image failed"

H_UPSTREAM=${H_UPSTREAM:-knfsd4} h_start_upstream up
[ "${H_UPVERS_up:-}" = 4 ] || h_skip "upstream kind ${H_UPSTREAM:-}: not an NFSv4-only one"
tboot=$SECONDS

# --- the data, made on the server ------------------------------------------
h_mkdata "$H_TMP/big" 2048 7
printf y >>"$H_TMP/big"
h_mkdata "$H_TMP/small" 5 3
printf 'alpha\n' >"$H_TMP/a.txt"
: >"$H_TMP/empty"
for d in tree tree/d1 tree/d1/sub tree/many; do h_up_mkdir up "$d" || h_fail "mkdir $d on the server"; done
h_up_put up big "$H_TMP/big" && h_up_put up small "$H_TMP/small" &&
	h_up_put up tree/d1/a.txt "$H_TMP/a.txt" && h_up_put up tree/d1/sub/empty "$H_TMP/empty" ||
	h_fail "writing the files on the server"
for i in $(seq -w 1 40); do
	echo "$i" >"$H_TMP/f"
	h_up_put up "tree/many/entry-with-a-longish-name-$i" "$H_TMP/f" || h_fail "writing many/$i"
done
_h_up up symlink d1/a.txt tree/link -- ln -s d1/a.txt tree/link || h_fail "symlink on the server"
h_up_chown up 1234:5678 small && h_up_chmod up 751 tree/d1 || h_fail "chown/chmod on the server"
h_up_mkdata up tomove 3 9 || h_fail "tomove on the server"
big_md5=$(h_md5 "$H_TMP/big")
[ "$(h_up_md5 up big)" = "$big_md5" ] || h_fail "big on the server is not what was written"
tdata=$SECONDS

# --- cachefsd over NFSv4.0 ---------------------------------------------------
# --fresh-guard 0: the data was written a moment ago and (b) wants it
# cached; --secure-ports false: the client guest comes through slirp
h_start_cachefsd px up --fresh-guard 0 --secure-ports false
P=$H_PORT_px
grep -q 'upstream_version 4' <("$H_BUILD/cachefsctl" --cache-dir "$H_CACHE_px" info) ||
	h_fail "cachefsd does not run upstream_version 4"
PX=("$PROBE" --v3 --host 127.0.0.1 --port "$P" --mountport "$P" --path /export --timeout 60)
V4=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_up" --path /export --timeout 60)

# (a) through cachefsd as the server says directly over NFSv4.0
norm()
{
	grep -v -e '^root ' "$1" |
		sed -E 's/ fh [0-9]+$//; s/ change [0-9]+$//; s/^(ls .* entries [0-9]+) pages [0-9]+$/\1/'
}
CMDS=(getattr . getattr big getattr small getattr tree/d1 getattr tree/d1/sub/empty
	getattr tree/link getattr tree/many/entry-with-a-longish-name-17
	ls . ls tree ls tree/d1 ls tree/many read big read small read tree/d1/a.txt
	read tree/d1/sub/empty readlink tree/link fsstat pathconf)
"${PX[@]}" --maxcount 1024 "${CMDS[@]}" >"$H_TMP/px.out" 2>&1 ||
	h_fail "through cachefsd: $(grep error "$H_TMP/px.out" | head -3) $(tail -3 "$H_LOG_px")"
"${V4[@]}" "${CMDS[@]}" >"$H_TMP/v4.out" 2>&1 ||
	h_fail "direct NFSv4.0: $(grep error "$H_TMP/v4.out" | head -3)"
if ! diff <(norm "$H_TMP/v4.out") <(norm "$H_TMP/px.out") >"$H_TMP/diff"; then
	head -20 "$H_TMP/diff" >&2
	h_fail "cachefsd and the server over NFSv4.0 disagree ($(grep -c '^[<>]' "$H_TMP/diff") lines)"
fi
out=$(norm "$H_TMP/px.out")
grep -q '^ls tree/many entries 40$' <<<"$out" || h_fail "tree/many: not 40 entries: $(grep '^ls tree/many' <<<"$out")"
[ "$(grep -c '^ent entry-with-a-longish-name-[0-4][0-9] type 1 ' <<<"$out")" = 40 ] ||
	h_fail "tree/many: the names listed are not the 40 made"
grep -q "^read big bytes $((2048 * 1024 + 1)) " <<<"$out" || h_fail "big: wrong length"
grep -Eq '^attr small type 1 mode 644 nlink 1 uid 1234 gid 5678 size 5120 ' <<<"$out" ||
	h_fail "small: $(grep '^attr small' <<<"$out")"
grep -Eq '^attr tree/d1 type 2 mode 751 ' <<<"$out" || h_fail "tree/d1: $(grep '^attr tree/d1 ' <<<"$out")"
grep -qx 'readlink tree/link d1/a.txt' <<<"$out" || h_fail "readlink: $(grep '^readlink' <<<"$out")"
# the export is a 256 MiB ext4 disk: its size and ext4's name limit
tb=$(sed -n 's/^fsstat tbytes \([0-9]*\) .*/\1/p' <<<"$out")
((tb > 200 << 20 && tb <= 256 << 20)) || h_fail "FSSTAT: $(grep '^fsstat' <<<"$out")"
grep -q '^pathconf linkmax [1-9][0-9]* name_max 255 no_trunc 1 ' <<<"$out" || h_fail "PATHCONF: $(grep '^pathconf' <<<"$out")"
# as uid 1000: ACCESS, a read, a directory it may search but not list
UCMDS=(access . access small access tree/d1 access tree/d1/a.txt read small ls tree/d1)
"${PX[@]}" --uid 1000 --gid 1000 "${UCMDS[@]}" >"$H_TMP/pxu.out" 2>&1
"${V4[@]}" --uid 1000 --gid 1000 "${UCMDS[@]}" >"$H_TMP/v4u.out" 2>&1
diff <(norm "$H_TMP/v4u.out") <(norm "$H_TMP/pxu.out") >&2 ||
	h_fail "as uid 1000, cachefsd and the server over NFSv4.0 disagree"
grep -q '^access tree/d1 0x' "$H_TMP/pxu.out" && grep -q '^error ls tree/d1' "$H_TMP/pxu.out" ||
	h_fail "as uid 1000: tree/d1 (751) should be searchable, not listable: $(tr '\n' ' ' <"$H_TMP/pxu.out")"
"${PX[@]}" --out "$H_TMP/big.px" read big >/dev/null || h_fail "read big to a file"
[ "$(h_md5 "$H_TMP/big.px")" = "$big_md5" ] || h_fail "big: other bytes through cachefsd than written"
h_log "ok: $(grep -c . "$H_TMP/px.out") lines through cachefsd agree with the server's NFSv4.0 view"

# (b) the second read comes from the cache
fills0=$(h_stat px fills) hits0=$(h_stat px read_hits) ur0=$(h_stat px upstream_calls_READ)
"${PX[@]}" --out "$H_TMP/big.px2" read big >/dev/null || h_fail "read big again"
[ "$(h_md5 "$H_TMP/big.px2")" = "$big_md5" ] || h_fail "big from the cache: other bytes"
hits=$(($(h_stat px read_hits) - hits0))
((hits >= 1)) || h_fail "the second read of big was not served from the cache (read_hits +$hits)"
[ "$(h_stat px fills)" = "$fills0" ] || h_fail "the second read of big filled again"
[ "$(h_stat px upstream_calls_READ)" = "$ur0" ] || h_fail "the second read of big went upstream"
h_log "ok: second read: $hits READ hits, no upstream READ"

# (c) writes through cachefsd (libnfs's NFSv3 client) land on the server
op() { "$NFSOP" "$H_URL_px" "$@" || h_fail "through cachefsd: nfsop $*"; }
h_mkdata "$H_TMP/new" 300 5
op write new.bin <"$H_TMP/new"
printf 'OVER' >"$H_TMP/over"
op overwrite small <"$H_TMP/over"
op truncate 1000 tomove
op chmod 600 tree/d1/a.txt
op mkdir newdir
op symlink ../big newdir/biglink
op rename tree/d1/sub/empty newdir/moved
op rm tree/many/entry-with-a-longish-name-40
{ cat "$H_TMP/over"; tail -c +5 "$H_TMP/small"; } >"$H_TMP/small.want"
[ "$(h_up_md5 up new.bin)" = "$(h_md5 "$H_TMP/new")" ] || h_fail "new.bin on the server is not what was written"
[ "$(h_up_md5 up small)" = "$(h_md5 "$H_TMP/small.want")" ] || h_fail "the overwrite of small did not land"
[ "$(h_up_stat up tomove | cut -d' ' -f1)" = 1000 ] || h_fail "the truncate did not land: $(h_up_stat up tomove)"
[ "$(h_up_stat up tree/d1/a.txt | cut -d' ' -f3)" = 600 ] || h_fail "the chmod did not land: $(h_up_stat up tree/d1/a.txt)"
[ "$(h_up_ls up newdir | tr '\n' ' ')" = "biglink moved " ] || h_fail "newdir on the server: $(h_up_ls up newdir | tr '\n' ' ')"
[ -z "$(h_up_ls up tree/d1/sub)" ] || h_fail "the rename left tree/d1/sub: $(h_up_ls up tree/d1/sub)"
[ "$(h_up_ls up tree/many | wc -l)" = 39 ] || h_fail "the rm did not land: $(h_up_ls up tree/many | wc -l) entries"
h_log "ok: create+write, overwrite, truncate, chmod, mkdir, symlink, rename, rm through cachefsd landed"

# (d) the kernel NFSv3 client in front
cat >"$H_TMP/guest.sh" <<'EOF'
set -e
echo "STEP: ls"
ls -lnR tree
echo "LSDONE"
ls -ln big small
echo "BIGMD5: $(md5sum <big | cut -d' ' -f1)"
echo "TREEMD5: $(find tree -type f | sort | xargs cat | md5sum | cut -d' ' -f1)"
echo "STEP: write"
dd if=/dev/urandom of=/tmp/w.bin bs=4096 count=300 2>/dev/null
echo "WSRC: $(md5sum </tmp/w.bin | cut -d' ' -f1)"
dd if=/tmp/w.bin of=written.bin bs=3000 2>/dev/null
mkdir -p kdir/sub
mv tomove kdir/sub/moved
touch -d '2020-09-13 12:26:40' kdir/sub/moved
chown 1000:2000 written.bin
ln written.bin kdir/hard
mkfifo kdir/fifo
(set -C; echo excl >kdir/excl)
rmdir tree/d1/sub
sync
echo 3 >/proc/sys/vm/drop_caches
echo "WBACK: $(md5sum <written.bin | cut -d' ' -f1)"
ls -ln written.bin kdir/sub kdir/excl
echo "ALLDONE"
EOF
# the tree's files in find order, sorted, catenated: as the guest does
tree_md5=$({
		h_up_cat up tree/d1/a.txt
		for n in $(h_up_ls up tree/many); do h_up_cat up "tree/many/$n"; done
	} | md5sum | cut -d' ' -f1)
gout=$H_TMP/guest-out.log
tg=$SECONDS
rc=0
"$H_ROOT/tests/guest/run.sh" --port "$P" --mountport "$P" --export /export \
	--script "$H_TMP/guest.sh" --timeout 150 --out "$H_TMP/guest-console.log" >"$gout" || rc=$?
tg=$((SECONDS - tg))
[ "$rc" = 0 ] || h_fail "the client guest exited $rc (last step: $(grep '^STEP: ' "$gout" | tail -n 1)): $(tail -n 5 "$gout")"
val() { sed -n "s/^$1: //p" "$gout" | tail -n 1; }
grep -qx ALLDONE "$gout" || h_fail "the client guest's output is incomplete"
[ "$(val BIGMD5)" = "$big_md5" ] || h_fail "the kernel client read big as $(val BIGMD5), the server holds $big_md5"
[ "$(val TREEMD5)" = "$tree_md5" ] || h_fail "the kernel client read tree/'s files as $(val TREEMD5), the server's are $tree_md5"
lsout=$(sed -n '/^STEP: ls$/,/^LSDONE$/p' "$gout")
[ "$(grep -c ' entry-with-a-longish-name-' <<<"$lsout")" = 39 ] || h_fail "ls -lnR in the guest: not 39 entries in tree/many"
# ls -ln agrees with the server: mode, owner, size
lsline() { awk -v n="$1" '$NF == n && $1 !~ /^l/ {print $1, $3, $4, $5; exit}' "$gout"; }
st=$(h_up_stat up big)
[ "$(lsline big)" = "-rw-r--r-- 0 0 ${st%% *}" ] || h_fail "guest ls -ln big: '$(lsline big)', the server: $st"
[ "$(lsline small)" = "-rw-r--r-- 1234 5678 5120" ] || h_fail "guest ls -ln small: '$(lsline small)'"
[ "$(lsline a.txt)" = "-rw------- 0 0 6" ] || h_fail "guest ls -ln tree/d1/a.txt: '$(lsline a.txt)'"
grep -Eq '^drwxr-x--x .* d1$' <<<"$lsout" || h_fail "guest ls -lnR: tree/d1 is not drwxr-x--x"
wsrc=$(val WSRC)
[ -n "$wsrc" ] && [ "$(val WBACK)" = "$wsrc" ] || h_fail "written.bin read back in the guest: $(val WBACK), written $wsrc"
[ "$(h_up_md5 up written.bin)" = "$wsrc" ] || h_fail "written.bin on the server is not what the kernel client wrote"
[ "$(h_up_stat up written.bin | cut -d' ' -f1)" = 1228800 ] || h_fail "written.bin on the server: $(h_up_stat up written.bin)"
[ "$(h_up_stat up kdir/sub/moved | cut -d' ' -f1)" = 1000 ] || h_fail "kdir/sub/moved on the server: $(h_up_stat up kdir/sub/moved)"
h_up_ls up . | grep -qx tomove && h_fail "tomove is still on the server after mv"
[ "$(h_up_stat up kdir/sub/moved | cut -d' ' -f2)" = 1600000000.000000000 ] ||
	h_fail "touch -d: the server has mtime $(h_up_stat up kdir/sub/moved | cut -d' ' -f2), not 1600000000"
[ "$(h_up_ls up kdir | tr '\n' ' ')" = "excl fifo hard sub " ] || h_fail "kdir on the server: $(h_up_ls up kdir | tr '\n' ' ')"
[ "$(h_up_md5 up kdir/hard)" = "$wsrc" ] || h_fail "kdir/hard on the server is not written.bin's bytes"
[ "$(h_up_cat up kdir/excl)" = excl ] || h_fail "kdir/excl on the server: $(h_up_cat up kdir/excl)"
# the O_EXCL create's verifier does not stay in its times, its mode is set
read -r esize emtime emode <<<"$(h_up_stat up kdir/excl)"
[ "$emode" = 644 ] && [ "${emtime%.*}" -ge $((${EPOCHREALTIME%.*} - 300)) ] ||
	h_fail "kdir/excl (O_EXCL) on the server: size $esize mtime $emtime mode $emode"
h_up_ls up tree/d1 | grep -qx sub && h_fail "tree/d1/sub is still on the server after rmdir"
out=$("${V4[@]}" getattr written.bin getattr kdir/fifo) || h_fail "getattr on the server: $out"
grep -q '^attr written.bin type 1 mode 644 nlink 2 uid 1000 gid 2000 size 1228800 ' <<<"$out" ||
	h_fail "written.bin on the server after chown and ln: $(grep written <<<"$out")"
grep -q '^attr kdir/fifo type 7 ' <<<"$out" || h_fail "kdir/fifo on the server: $(grep fifo <<<"$out")"
h_log "ok: the kernel client read the tree and big (md5 as the server's), wrote written.bin, mkdir, mv, touch -d, chown, ln, mkfifo, O_EXCL, rmdir: all on the server; ls -ln agrees"

h_log "times: server boot $((tboot - t0)) s, data $((tdata - tboot)) s, client guest ${tg} s, whole test $((SECONDS - t0)) s"
h_pass "cachefsd over the kernel nfsd with NFSv3 off (upstream_version 4): attributes, listings, bytes as the server's; second read from the cache; writes land; the kernel NFSv3 client reads, writes and lists through it"
