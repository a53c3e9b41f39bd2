#!/bin/bash
# shellcheck disable=SC2154 # H_EXPORT_up, H_PORT_px ... are set by harness.sh
# 52-plain-mount: a stock client host mounts the proxy like any NFS server.
# The kernel client in the qemu guest (tests/guest/run.sh --plain: the guest
# runs rpcbind and rpc.statd, and nfs-common's mount.nfs mounts with
# `-o vers=3` and nothing else) mounts 10.0.2.2:EXPORT; cachefsd, registered
# with the rpcbind of this test's own "host" (tests/lib/isolate.sh), is found
# through port 111 (slirp's 10.0.2.2 is this namespace's 127.0.0.1). The
# guest reads a file and prints its md5 (checked against the host's), and its
# `showmount -e 10.0.2.2` and `rpcinfo -p 10.0.2.2` must list the export and
# NFS 3 / MOUNT 1 and 3 on tcp at cachefsd's port. No port reaches the guest
# but through rpcbind: the filer's own registrations are removed first.
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 52-plain-mount "namespaces, rpcbind" "$@"
set -eo pipefail # harness.sh is not `set -u` clean
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
export H_BUILD

ls /boot/vmlinuz-* >/dev/null 2>&1 || h_skip "no /boot/vmlinuz-* (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null ||
	h_fail "qemu-system-x86_64 missing (make deps-test installs qemu-system-x86)"
[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd not built (make)"
# the plain image (nfs-common's programs inside): built first, so that its
# time is not charged to the guest and a failure is reported as such
"$H_ROOT/tests/guest/mkimage.sh" --plain "${GUEST_IMAGES:-$H_BUILD}/guest-plain" ||
	h_fail "building the plain guest image failed (nfs-common fetched? tests/lib/debs.sh fetch build/debs nfs-common)"
! ss -Hltn 'sport = :111' | grep -q . || h_fail "something listens on port 111 in this namespace already"

h_start_ganesha up # starts this namespace's rpcbind (tracked, stopped at exit)
for pv in "100003 3" "100003 4" "100005 1" "100005 3"; do
	read -r p v <<<"$pv"
	rpcinfo -d "$p" "$v" 2>/dev/null || true
done
ex=$H_EXPORT_up
(set +o pipefail; h_mkdata "$ex/data.bin" 512 5)
want=$(h_md5 "$ex/data.bin")
# --secure-ports false: slirp connects from an unprivileged host port.
# Listening on every address, as the shipped config does: the registration
# is of the wildcard address, and rpcbind answers a GETADDR (showmount) with
# the address of one of this host's interfaces (here isolate.sh's veth,
# 10.254.0.1), where the guest then connects through slirp
H_PORT_px=$(h_free_port)
h_start_cachefsd px up --secure-ports false --register yes --listen "0.0.0.0:$H_PORT_px" \
	--allow "127.0.0.0/8,10.254.0.0/24"
for ((i = 0; i < 100; i++)); do
	grep -q "info: serving " "$H_LOG_px" && break
	sleep 0.1
done
grep -q "rpcbind: registered mount v3" "$H_LOG_px" || h_fail "cachefsd did not register: $(tail -n 5 "$H_LOG_px")"

cat >"$H_TMP/guest.sh" <<'EOF'
echo "MD5: $(md5sum /mnt/data.bin | cut -d' ' -f1)"
echo "OPTS: $(grep ' /mnt ' /proc/mounts)"
showmount -e 10.0.2.2 | sed 's/^/SHOWMOUNT: /'
rpcinfo -p 10.0.2.2 | sed 's/^/RPCINFO: /'
EOF
out=$("$H_ROOT/tests/guest/run.sh" --plain --export "$ex" --script "$H_TMP/guest.sh" \
	--timeout 240 --out "$H_TMP/guest-console.log") ||
	h_fail "the plain mount failed in the guest (exit $?): $(tail -n 20 "$H_TMP/guest-console.log")"
printf '%s\n' "$out" >"$H_TMP/guest.out"
got=$(sed -n 's/^MD5: //p' "$H_TMP/guest.out")
[ "$got" = "$want" ] || h_fail "the guest read data.bin with md5 '$got', not $want"
h_pass "mount -t nfs -o vers=3 10.0.2.2:$ex (nothing else): the guest read 512 KiB, md5 matches"
grep -q "^OPTS: 10.0.2.2:$ex /mnt nfs .*port=$H_PORT_px" "$H_TMP/guest.out" ||
	h_fail "the mount did not use cachefsd's port $H_PORT_px: $(grep '^OPTS' "$H_TMP/guest.out")"
grep -q "^SHOWMOUNT: $ex " "$H_TMP/guest.out" ||
	h_fail "showmount -e in the guest does not list $ex: $(grep '^SHOWMOUNT' "$H_TMP/guest.out")"
h_pass "showmount -e 10.0.2.2 from the guest lists $ex"
for pv in "100003 3" "100005 3" "100005 1"; do
	read -r p v <<<"$pv"
	awk -v p="$p" -v v="$v" -v port="$H_PORT_px" \
		'$1=="RPCINFO:" && $2==p && $3==v && $4=="tcp" && $5==port {f=1} END {exit !f}' \
		"$H_TMP/guest.out" || h_fail "rpcinfo -p from the guest does not list $pv tcp at $H_PORT_px: $(grep '^RPCINFO' "$H_TMP/guest.out")"
done
h_pass "rpcinfo -p 10.0.2.2 from the guest lists nfs 3, mount 1 and 3 at cachefsd's port"
reads=$(h_stat px rpc_calls)
[ "$reads" -gt 0 ] || h_fail "no calls reached cachefsd"
