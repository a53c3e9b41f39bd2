#!/bin/bash
# shellcheck disable=SC2154 # H_EXPORT_up, H_NFSPORT_up ... are set by harness.sh
# 50-kernel-client: the stock Linux kernel NFSv3 client (in a qemu guest, see
# tests/guest/run.sh) mounts the export through cachefsd and does ordinary
# file work: ls -lR, cat/md5sum of a 4 MiB file, tar, dd write + read back,
# mkdir, mv, ln -s, readlink, chmod, truncate, rm -r. Every effect is then
# checked on the host in ganesha's export dir, and the values the guest
# printed are checked against the host's.
#
# DIRECT=1 mounts ganesha directly (no cachefsd): checks the test itself.
# Default: through cachefsd ($H_BUILD/cachefsd must exist, else FAIL).
# KEEP_GUEST_OUT=FILE copies the guest's output there.
set -eo pipefail # harness.sh is not `set -u` clean

# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
export H_BUILD # run.sh and mkimage.sh put the guest image in $H_BUILD/guest

ls /boot/vmlinuz-* >/dev/null 2>&1 || h_skip "no /boot/vmlinuz-* (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null ||
	h_fail "qemu-system-x86_64 missing (make deps-test installs qemu-system-x86)"

GUEST=$H_ROOT/tests/guest/run.sh
t0=$(date +%s)

# Build (or find cached) the guest image first, so its time is not charged to
# the guest timeout and a build failure is reported as such.
"$H_ROOT/tests/guest/mkimage.sh" "${GUEST_IMAGES:-$H_BUILD}/guest" ||
	h_fail "building the guest image failed"

h_start_ganesha up
if [ "${DIRECT:-0}" = 1 ]; then
	port=$H_NFSPORT_up
	mountport=$H_MNTPORT_up
	via="ganesha directly (DIRECT=1)"
else
	[ -f "$H_BUILD/cachefsd" ] && [ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd not built (run make; DIRECT=1 tests without the proxy)"
	# --secure-ports false: the guest reaches the proxy through qemu's user
	# networking (slirp), which connects from an unprivileged host port
	# whatever port the guest's kernel client used (tests/guest/run.sh),
	# so the default would refuse it (53-secure-ports has the default)
	h_start_cachefsd px up --secure-ports false
	port=$H_PORT_px
	mountport=$H_PORT_px
	via="cachefsd"
fi
ex=$H_EXPORT_up

# --- data on the upstream ------------------------------------------------
mkdir -p "$ex/tree/d1/sub" "$ex/tree/d2" "$ex/tree/many" "$ex/rmtree/x/y"
echo "alpha" >"$ex/tree/d1/a.txt"
echo "bravo bravo" >"$ex/tree/d1/sub/b.txt"
printf 'no newline' >"$ex/tree/d2/c.txt"
: >"$ex/tree/d2/empty"
for i in $(seq 1 40); do
	echo "file $i" >"$ex/tree/many/f$i"
done
(set +o pipefail; h_mkdata "$ex/tree/d2/mid.bin" 300 7)
(set +o pipefail; h_mkdata "$ex/big.bin" 4096 1)
[ "$(stat -c %s "$ex/big.bin")" = 4194304 ] || h_fail "could not create big.bin"
for i in 1 2 3; do echo "gone $i" >"$ex/rmtree/x/y/g$i"; done
echo "gone" >"$ex/rmtree/top"
echo "move me" >"$ex/tomove.txt"
echo "mode me" >"$ex/modef"
chmod 0640 "$ex/modef"
(set +o pipefail; h_mkdata "$ex/trunc.bin" 100 3)
big_md5=$(h_md5 "$ex/big.bin")
trunc_md5=$(head -c 12345 "$ex/trunc.bin" | md5sum | cut -d' ' -f1)
move_md5=$(h_md5 "$ex/tomove.txt")

# tar of tree/ must hold at least one 512-byte header per entry plus every
# file's data rounded up to 512, plus the 1024-byte end marker; a tar may pad
# to a 10240-byte record (and use extra headers for long names: slack).
tar_min=1024
while read -r type size; do
	tar_min=$((tar_min + 512))
	[ "$type" = f ] && tar_min=$((tar_min + (size + 511) / 512 * 512))
done < <(cd "$ex" && find tree -printf '%y %s\n')
tar_max=$((tar_min + 10240 + 8192))
ntree=$(cd "$ex" && find tree | wc -l)

# --- the guest's work ----------------------------------------------------
cat >"$H_TMP/guest.sh" <<'EOF'
set -e
step() { echo "STEP: $*"; }

step ls
ls -lR .
echo "LSDONE"

step big
echo "BIGMD5: $(cat big.bin | md5sum | cut -d' ' -f1)"
echo "BIGSIZE: $(stat -c %s big.bin)"

step tar
echo "TARBYTES: $(tar cf - tree | wc -c)"
echo "TARLIST: $(tar cf - tree | tar tf - | wc -l)"

step write
dd if=/dev/urandom of=/tmp/w.bin bs=4096 count=300 2>/dev/null
echo "WSRC: $(md5sum </tmp/w.bin | cut -d' ' -f1)"
dd if=/tmp/w.bin of=written.bin bs=3000 2>/dev/null   # unaligned writes
sync
echo 3 >/proc/sys/vm/drop_caches                      # read back from server
echo "WBACK: $(md5sum <written.bin | cut -d' ' -f1)"
echo "WSIZE: $(stat -c %s written.bin)"

step mkdir
mkdir newdir
mkdir -p newdir/deep/er

step mv
mv tomove.txt newdir/moved.txt

step symlink
ln -s ../tree/d1/a.txt newdir/link
echo "READLINK: $(readlink newdir/link)"
echo "VIALINK: $(cat newdir/link)"

step chmod
chmod 751 modef
chmod 700 newdir/deep
echo "MODE: $(stat -c %a modef)"

step truncate
truncate -s 12345 trunc.bin
truncate -s 100000 grown.bin
echo "TSIZE: $(stat -c %s trunc.bin)"

step rm
rm -r rmtree
[ ! -e rmtree ] && echo "RMGONE: yes"

step done
ls -la
echo "ALLDONE"
EOF

gout=$H_TMP/guest-out.log
rc=0
t1=$(date +%s)
"$GUEST" --port "$port" --mountport "$mountport" --export "$ex" \
	--script "$H_TMP/guest.sh" --timeout 90 --out "$H_TMP/guest-console.log" \
	>"$gout" || rc=$?
t2=$(date +%s)
[ -z "${KEEP_GUEST_OUT:-}" ] || cp "$gout" "$KEEP_GUEST_OUT"
[ "$rc" = 0 ] || h_fail "guest script via $via exited $rc (last step: $(grep '^STEP: ' "$gout" | tail -n 1))"

val() { sed -n "s/^$1: //p" "$gout" | tail -n 1; }

# --- what the guest saw ---------------------------------------------------
grep -qx ALLDONE "$gout" || h_fail "guest output incomplete (no ALLDONE)"
[ "$(val BIGMD5)" = "$big_md5" ] || h_fail "guest md5 of big.bin $(val BIGMD5) != host $big_md5"
[ "$(val BIGSIZE)" = 4194304 ] || h_fail "guest size of big.bin $(val BIGSIZE)"
lsout=$(sed -n '/^STEP: ls$/,/^LSDONE$/p' "$gout")
for n in big.bin tomove.txt modef trunc.bin rmtree a.txt b.txt c.txt empty mid.bin f1 f40 g3; do
	grep -q " $n\$" <<<"$lsout" || h_fail "ls -lR in the guest does not list $n"
done
grep -Eq ' 4194304 .* big\.bin$' <<<"$lsout" || h_fail "ls -lR shows a wrong size for big.bin"
grep -Eq '^-rw-r----- .* modef$' <<<"$lsout" || h_fail "ls -lR shows wrong mode for modef"
tb=$(val TARBYTES)
[ -n "$tb" ] && [ "$tb" -ge "$tar_min" ] && [ "$tb" -le "$tar_max" ] ||
	h_fail "tar of tree/ in the guest: $tb bytes, expected $tar_min..$tar_max"
[ "$(val TARLIST)" = "$ntree" ] || h_fail "tar of tree/ lists $(val TARLIST) entries, host has $ntree"
wsrc=$(val WSRC)
[ -n "$wsrc" ] && [ "$(val WBACK)" = "$wsrc" ] ||
	h_fail "written.bin read back in the guest: md5 $(val WBACK) != written $wsrc"
[ "$(val WSIZE)" = 1228800 ] || h_fail "guest size of written.bin $(val WSIZE) != 1228800"
[ "$(val READLINK)" = "../tree/d1/a.txt" ] || h_fail "guest readlink: '$(val READLINK)'"
[ "$(val VIALINK)" = "alpha" ] || h_fail "reading through the symlink: '$(val VIALINK)'"
[ "$(val MODE)" = 751 ] || h_fail "guest stat mode of modef: $(val MODE)"
[ "$(val TSIZE)" = 12345 ] || h_fail "guest size of trunc.bin: $(val TSIZE)"
[ "$(val RMGONE)" = yes ] || h_fail "guest still sees rmtree"

# --- what reached the upstream (ganesha's export dir on the host) -------
f=$ex/written.bin
[ -f "$f" ] || h_fail "written.bin missing upstream"
[ "$(stat -c %s "$f")" = 1228800 ] || h_fail "written.bin upstream is $(stat -c %s "$f") bytes, not 1228800"
[ "$(h_md5 "$f")" = "$wsrc" ] || h_fail "written.bin upstream md5 $(h_md5 "$f") != guest's $wsrc"
[ -d "$ex/newdir" ] || h_fail "newdir missing upstream"
[ -d "$ex/newdir/deep/er" ] || h_fail "newdir/deep/er missing upstream"
[ ! -e "$ex/tomove.txt" ] || h_fail "tomove.txt still exists upstream after mv"
[ -f "$ex/newdir/moved.txt" ] || h_fail "newdir/moved.txt missing upstream after mv"
[ "$(h_md5 "$ex/newdir/moved.txt")" = "$move_md5" ] || h_fail "moved file content changed"
[ -L "$ex/newdir/link" ] || h_fail "newdir/link upstream is not a symlink"
[ "$(readlink "$ex/newdir/link")" = "../tree/d1/a.txt" ] ||
	h_fail "symlink target upstream: '$(readlink "$ex/newdir/link")'"
[ "$(stat -c %a "$ex/modef")" = 751 ] || h_fail "modef mode upstream $(stat -c %a "$ex/modef"), want 751"
[ "$(stat -c %a "$ex/newdir/deep")" = 700 ] ||
	h_fail "newdir/deep mode upstream $(stat -c %a "$ex/newdir/deep"), want 700"
[ "$(stat -c %s "$ex/trunc.bin")" = 12345 ] || h_fail "trunc.bin upstream is $(stat -c %s "$ex/trunc.bin") bytes, want 12345"
[ "$(h_md5 "$ex/trunc.bin")" = "$trunc_md5" ] || h_fail "trunc.bin upstream: content is not the first 12345 bytes"
[ "$(stat -c %s "$ex/grown.bin")" = 100000 ] || h_fail "grown.bin upstream is not 100000 bytes"
[ "$(tr -d '\0' <"$ex/grown.bin" | wc -c)" = 0 ] || h_fail "grown.bin upstream is not all zeros"
[ ! -e "$ex/rmtree" ] || h_fail "rmtree still exists upstream after rm -r"
[ "$(h_md5 "$ex/big.bin")" = "$big_md5" ] || h_fail "big.bin changed upstream"
[ "$(cat "$ex/tree/d1/a.txt")" = alpha ] || h_fail "tree/d1/a.txt changed upstream"

h_log "guest run $((t2 - t1)) s, whole test $(($(date +%s) - t0)) s"
h_pass "kernel NFSv3 client via $via: ls -lR, 4 MiB read (md5), tar, write+read back, mkdir, mv, symlink, chmod, truncate, rm -r all correct upstream"
