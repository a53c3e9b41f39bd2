#!/bin/bash
# shellcheck disable=SC2154 # H_EXPORT_up, H_PORT_n1 ... are set by harness.sh
# 88-fleet-kernel: the stock Linux kernel NFSv3 client (qemu guest,
# tests/guest/run.sh: hard mount, vers=3, TCP) mounts the export through
# HAProxy in front of three cachefsd nodes (tests/lib/fleet.sh) and reads
# a small tree and a 24 MiB file; once it has read 8 MiB, the node HAProxy
# gave it is killed (SIGKILL) while the guest reads on. The client
# reconnects through the balancer to another node and its retransmitted
# READs are answered there (the handles are the filer's): the read
# completes, every md5 is the host's, no I/O or stale-handle error in the
# guest, and the other node served the rest.
# rsize=65536 keeps the guest's readahead under 1 MiB, so most of the file
# is still to be read when the node dies.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=tests/lib/fleet.sh
. "$(dirname "$0")/../lib/fleet.sh"
h_init
export H_BUILD
ls /boot/vmlinuz-* >/dev/null 2>&1 || h_skip "no /boot/vmlinuz-* (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null || h_fail "qemu-system-x86_64 missing (make deps-test installs qemu-system-x86)"
command -v haproxy >/dev/null || h_skip "no haproxy (make deps-test installs it)"
GUEST=$H_ROOT/tests/guest/run.sh
"$H_ROOT/tests/guest/mkimage.sh" "${GUEST_IMAGES:-$H_BUILD}/guest" || h_fail "building the guest image failed"

h_start_ganesha up
E=$H_EXPORT_up
mkdir -p "$E/tree/d1/sub" "$E/tree/d2"
for i in $(seq 1 12); do echo "file $i" >"$E/tree/d1/f$i"; done
echo "deep" >"$E/tree/d1/sub/deep.txt"
h_mkdata "$E/tree/d2/mid.bin" 300 7
h_mkdata "$E/big.bin" 24576 1
want_big=$(h_md5 "$E/big.bin")
want_tree=$(cd "$E" && find tree -type f | LC_ALL=C sort | while read -r f; do echo "$f $(h_md5 "$f")"; done)

fleet_start_nodes up 3
fleet_start_haproxy 3

cat >"$H_TMP/guest.sh" <<'GEOF'
set -e
step() { echo "STEP: $*"; }
sums() { find tree -type f | LC_ALL=C sort | while read -r f; do echo "$1: $f $(md5sum <"$f" | cut -d' ' -f1)"; done; }
step tree1
sums T1
step big
dd if=big.bin of=/tmp/b bs=64k count=128 2>/dev/null
echo "HALF: 8"
# on, 1 MiB at a time with a pause: the kill lands while this reads
i=128
while [ $i -lt 384 ]; do
	dd if=big.bin bs=64k skip=$i count=16 2>/dev/null >>/tmp/b
	i=$((i + 16))
	sleep 0.1
done
echo "BIGMD5: $(md5sum </tmp/b | cut -d' ' -f1)"
echo "BIGSIZE: $(stat -c %s /tmp/b)"
step tree2
sums T2
# what the kernel said (the console only shows levels below KERN_ERR)
dmesg | grep -Ei 'nfs|rpc|error|stale' | sed 's/^/KMSG: /'
echo ALLDONE
GEOF

gout=$H_TMP/guest-out.log
: >"$gout"
"$GUEST" --port "$FLEET_PORT" --export "$E" --opts rsize=65536 --script "$H_TMP/guest.sh" \
	--timeout 240 --out "$H_TMP/guest-console.log" >"$gout" 2>"$H_TMP/guest-run.err" &
gpid=$!
h_track guest "$gpid"
half() { grep -q '^HALF: ' "$gout" || ! kill -0 "$gpid" 2>/dev/null; }
h_wait_until 200 half
grep -q '^HALF: ' "$gout" || h_fail "the guest never read the first 8 MiB (last step: $(grep '^STEP: ' "$gout" | tail -n 1); $(tail -n 3 "$H_TMP/guest-run.err"))"
serving=$(fleet_serving)
[ -n "$serving" ] && [ "${serving// /}" = "$serving" ] || h_fail "HAProxy shows '$serving' serving the guest (want one node)"
dead=$serving
declare -A b0
for n in n1 n2 n3; do b0[$n]=$(h_stat "$n" bytes_read); done
h_stop_cachefsd "$dead" KILL
grep -q '^BIGMD5: ' "$gout" && h_fail "the guest had read all of big.bin before $dead was killed: not a kill mid-read (host too slow?)"
h_log "the guest, served by $dead (${b0[$dead]} bytes read by clients), had read 8 MiB: SIGKILL"
rc=0
wait "$gpid" || rc=$?
[ "$rc" = 0 ] || h_fail "guest script exited $rc after $dead was killed (last step: $(grep '^STEP: ' "$gout" | tail -n 1))"

val() { sed -n "s/^$1: //p" "$gout" | tail -n 1; }
grep -qx ALLDONE "$gout" || h_fail "guest output incomplete (no ALLDONE)"
[ "$(val BIGMD5)" = "$want_big" ] || h_fail "the guest's md5 of big.bin across the failover $(val BIGMD5) != host $want_big"
[ "$(val BIGSIZE)" = $((24 << 20)) ] || h_fail "the guest read $(val BIGSIZE) bytes of big.bin"
for t in T1 T2; do
	[ "$(sed -n "s/^$t: //p" "$gout")" = "$want_tree" ] || h_fail "the tree's md5s in the guest ($t) differ from the host's"
done
# the script's output and the guest kernel's messages (KMSG: lines)
if grep -Eiq 'error|stale' "$gout"; then h_fail "the guest printed: $(grep -Ei 'error|stale' "$gout" | head -n 3)"; fi
if grep -Eiq 'I/O error|stale|EIO' "$H_TMP/guest-console.log"; then
	h_fail "the guest's kernel logged: $(grep -Ei 'I/O error|stale|EIO' "$H_TMP/guest-console.log" | head -n 3)"
fi
fleet_wait_status "$dead" DOWN 10 || h_fail "HAProxy still shows the killed $dead $(fleet_server_field "$dead" status)"
took="" sum=${b0[$dead]}
for n in n1 n2 n3; do
	[ "$n" = "$dead" ] && continue
	b=$(($(h_stat "$n" bytes_read) - b0[$n]))
	sum=$((sum + b))
	[ "$b" -gt 0 ] && took="$took $n:$b"
done
[ -n "$took" ] || h_fail "no other node served the guest after $dead was killed"
[ "$sum" -ge $((24 << 20)) ] || h_fail "the nodes served $sum bytes in all, less than big.bin alone"
h_log "after the kill, served by:$took; guest kernel: $(grep -c '^KMSG: .*not responding' "$gout") 'not responding', $(grep -c '^KMSG: .*nfs: server .* OK' "$gout") 'OK' line(s)"
h_pass "kernel client (hard, vers=3) through HAProxy: a tree and 24 MiB read across a SIGKILL of its node ($dead) after 8 MiB: md5s correct, no I/O or stale errors, the rest served by$took bytes"
