#!/bin/bash
# shellcheck disable=SC2154 # H_* are set by harness.sh
# 51-kernel-cache: the stock Linux kernel NFS client (qemu guest) reads a
# tree through cachefsd twice, each time from a fresh mount (a fresh boot,
# so its page cache is empty). The first pass fills the cache; the second is
# served from it: no new fills, a hit for every READ. Both passes return the
# server's bytes.
set -eo pipefail
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
export H_BUILD
ls /boot/vmlinuz-* >/dev/null 2>&1 || h_skip "no /boot/vmlinuz-* (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null || h_fail "qemu-system-x86_64 missing"
GUEST=$H_ROOT/tests/guest/run.sh
"$H_ROOT/tests/guest/mkimage.sh" "${GUEST_IMAGES:-$H_BUILD}/guest" || h_fail "building the guest image failed"

h_start_ganesha up
ex=$H_EXPORT_up
mkdir -p "$ex/tree/src/a" "$ex/tree/src/b" "$ex/tree/doc"
for i in $(seq 1 40); do
	(set +o pipefail; h_mkdata "$ex/tree/src/a/f$i.c" $((i % 7 + 1)) "$i")
done
for i in $(seq 1 10); do
	echo "doc $i" >"$ex/tree/doc/d$i.txt"
done
(set +o pipefail; h_mkdata "$ex/tree/src/b/blob1" 2048 91)
(set +o pipefail; h_mkdata "$ex/tree/src/b/blob2" 1500 92)
t_made=$EPOCHREALTIME
want=$(cd "$ex" && find tree -type f | sort | xargs cat | md5sum | cut -d' ' -f1)
nfiles=$(cd "$ex" && find tree -type f | wc -l)

# --secure-ports false: the guest reaches the proxy through qemu's user
# networking (slirp), which connects from an unprivileged host port
# whatever port the guest's kernel client used (tests/guest/run.sh),
# so the default would refuse it (53-secure-ports has the default)
h_start_cachefsd px up --secure-ports false
cat >"$H_TMP/guest.sh" <<'EOF'
echo "SUM: $(find tree -type f | sort | xargs cat | md5sum | cut -d' ' -f1)"
echo "TAR: $(tar cf - tree | wc -c)"
echo "DONE"
EOF

pass()
{
	local out=$H_TMP/guest-$1.log rc=0
	"$GUEST" --port "$H_PORT_px" --export "$ex" --script "$H_TMP/guest.sh" --timeout 90 \
		--out "$H_TMP/console-$1.log" >"$out" || rc=$?
	[ $rc = 0 ] || h_fail "guest pass $1 exited $rc"
	grep -qx DONE "$out" || h_fail "guest pass $1: output incomplete"
	[ "$(sed -n 's/^SUM: //p' "$out")" = "$want" ] || h_fail "guest pass $1 read wrong bytes"
}

# the first pass stores what it reads only once the files are past the
# fresh guard (2 s + the 1 s assumed while the filer's clock is not known):
# a guest that boots fast reads some of them sooner (failed once)
h_past_guard "$t_made"
pass 1
fills1=$(h_stat px fills)
hits1=$(h_stat px read_hits)
[ "$fills1" -gt 0 ] || h_fail "the first pass made no fills"

pass 2
fills2=$(h_stat px fills)
hits2=$(h_stat px read_hits)
[ "$fills2" = "$fills1" ] || h_fail "the second pass fetched from the upstream ($fills1 -> $fills2 fills)"
[ $((hits2 - hits1)) -ge "$nfiles" ] ||
	h_fail "the second pass had $((hits2 - hits1)) cache hits for $nfiles files"
h_pass "kernel client, two passes over $nfiles files: pass 1 $fills1 fills; pass 2 no fills, $((hits2 - hits1)) hits"
