#!/bin/bash
# tests/guest/server.sh — boot the Linux kernel NFS server (knfsd) in a qemu
# guest, in the background, exporting an ext4 disk to the host over NFSv3.
#
# usage: server.sh --dir DIR [--nfsport H1] [--mountport H2] [--host ADDR]
#                  [--disk-size SIZE] [--nfsvers 3|4] [--timeout S]
#   --dir DIR       where the guest's files go (console.log, serial.out,
#                   qemu.log, the ctl.in/ctl.out fifos); made if missing
#   --nfsport H1    host port forwarded to the guest's nfsd (2049); default:
#                   a free one
#   --mountport H2  host port forwarded to the guest's rpc.mountd (20048)
#   --host ADDR     the host address the two forwards listen on (default
#                   127.0.0.1); e.g. the address of a network namespace's
#                   veth when this script runs in that namespace (the
#                   bench: its link shaping then applies to the guest)
#   --disk-size S   size of the export's ext4 disk, as truncate(1) takes it
#                   (default $KNFSD_SIZE or 256M; sparse on the host)
#   --nfsvers V     3 (default): nfsd serves NFSv3 only; 4: NFSv4 only
#                   (rpc.nfsd -N 3; no MOUNT protocol, H2 forwards to
#                   nothing), the export at /export of its pseudo root
#   --timeout S     boot until the export answers from the host (default 120)
# On success qemu keeps running detached from this script (its stdio goes to
# DIR), and stdout has one line per value:
#   PID=<qemu pid> NFSPORT=<H1> MNTPORT=<H2> EXPORT=/export
#   URL=nfs://ADDR/export?nfsport=H1&mountport=H2 (--nfsvers 4:
#       nfs://ADDR/export?nfsport=H1&version=4, libnfs's NFSv4 client)
#   MAXBLOCK=<nfsd max_block_size> BOOT_MS=<qemu start to export answering>
# Stop it by pid: kill PID (qemu exits on SIGTERM; the export disk
# DIR/export.img is made anew at the next start). Exit status: 0 serving; 1 the guest failed
# to boot or serve (qemu stopped, console tail on stderr); 2 usage; 3 it
# cannot run here (no kernel or qemu, image build failed; reason on stderr).
# Environment: KNFSD_MEM guest RAM in MiB (default 1024); KNFSD_MAXBLOCK
# sets nfsd's max_block_size (default: the kernel's choice for the RAM);
# KNFSD_THREADS nfsd threads (8); KNFSD_SIZE export disk size (256M, see
# --disk-size); GUEST_KVM,
# GUEST_NIC, GUEST_KVER, GUEST_APPEND as for run.sh; KNFSD_DIR image dir
# (default ${H_BUILD:-build}/guest-server).
#
# Design notes (the client guest's notes at the top of run.sh apply too)
# - Image: `mkimage.sh --server` puts the nfsd module and its dependencies,
#   rpc.nfsd, rpc.mountd and exportfs from Debian's nfs-kernel-server .deb
#   (only downloaded and unpacked into the image dir, never installed on the
#   host: its package scripts would start services there), the host's
#   rpcbind, their shared libraries, /etc/netconfig, /etc/services, users
#   1000 and 2000, and init-server as /init. Cached with a stamp.
# - Export: an ext4 file system made here with mkfs.ext4 in DIR/export.img
#   (fresh per boot, sparse; qemu virtio-blk, cache=unsafe: nothing has to
#   survive), mounted on /export in the guest and exported
#   rw,insecure,no_root_squash,no_subtree_check,fsid=1 (insecure: qemu's
#   user networking hands the guest connections from unprivileged ports).
#   Not tmpfs: kernel 6.1's nfsd returns misplaced bytes for a READ at an
#   unaligned offset in a hole of a sparse tmpfs file (consecutive hole
#   pages are the same ZERO_PAGE, which its splice actor takes for one
#   page); ext4 holes are ordinary page-cache pages, and ext4 is what
#   servers run. NFSv3 only; mountd on the fixed port 20048,
#   so that both ports can be forwarded with -netdev user,hostfwd=...: the
#   host's libnfs clients and cachefsd --upstream use
#   nfs://127.0.0.1/export?nfsport=H1&mountport=H2 and never ask rpcbind.
# - --nfsvers 4 (the harness's upstream kind knfsd4): `rpc.nfsd -N 3`,
#   NFSv4.0-4.2 and no NFSv3; rpc.mountd runs without the MOUNT protocol
#   (-N 2 -N 3), only for nfsd's export cache upcalls, which v4 needs too;
#   /export is at /export in nfsd's pseudo root (mountd builds it from
#   the exports). nfsd starts a v4 grace period (90 s: no OPEN, no READ or
#   WRITE with the anonymous stateid, no REMOVE or RENAME); init-server
#   ends it at once through /proc/fs/nfsd/v4_end_grace (a fresh disk has
#   nothing to reclaim). Owners go over the wire as numbers (nfsd's
#   nfs4_disable_idmapping default for AUTH_SYS: no idmapd in the image).
#   Ready: nfs-ls with version=4 (libnfs's NFSv4 client) lists the export;
#   booted in 5-8 s as the v3 guest.
# - RAM 1 GiB: nfsd sizes max_block_size (its largest READ/WRITE, rtmax in
#   FSINFO) by RAM, 128 KiB at 1 GiB: smaller than cachefsd's 1 MiB chunk,
#   which is what this server is for (ganesha offers 1 MiB).
# - Clock: the kernel reads the RTC at boot in whole seconds, so the guest
#   would lag the host by up to a second, and cachefsd's fresh_guard
#   compares the server's ctime with its own clock. init-server asks with
#   "GUEST-SERVER-CLOCK?" on ttyS1; this script waits for the next second to
#   begin and sends "CLOCK <that second>" down ttyS2 (a qemu pipe chardev,
#   DIR/ctl.in); the guest sets it at once (skew a few ms, measured by
#   h_start_knfsd).
# - Ready: the guest prints "GUEST-SERVER-READY max_block_size=N" on ttyS1
#   (a file, DIR/serial.out) after rpc.nfsd started; this script then waits
#   until `nfs-ls` of the export works from the host.
# - Measured (2-core Debian 12 host, TCG, kernel 6.1, 1 GiB, virtio):
#   qemu start to the export answering nfs-ls 5.6-8.9 s (19 s with the
#   machine's load at 4.5); max_block_size 131072; clock skew after the
#   sync 10-40 ms (guest behind). Writing 6 MiB with nfsop ~0.5 s. The
#   test runs @knfsd: 20 13-17 s, 63 10-17 s, 70 ~90 s (600 ops per run),
#   71 21-34 s, 72 17-25 s, 74 13-20 s.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# shellcheck source=tests/guest/common.sh
. "$here/common.sh"
usage() { guest_usage; }

dir='' nfsport='' mntport='' timeout=120 host=127.0.0.1 disk_size=${KNFSD_SIZE:-256M} nfsvers=3
while [ $# -gt 0 ]; do
	case $1 in
	--dir) dir=${2:?}; shift 2 ;;
	--nfsport) nfsport=${2:?}; shift 2 ;;
	--mountport) mntport=${2:?}; shift 2 ;;
	--host) host=${2:?}; shift 2 ;;
	--disk-size) disk_size=${2:?}; shift 2 ;;
	--nfsvers) nfsvers=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	-h | --help) usage ;;
	*) echo "server.sh: unknown argument $1" >&2; usage ;;
	esac
done
[ -n "$dir" ] || usage
case $nfsport$mntport$timeout in *[!0-9]*) echo "server.sh: ports and timeout are numbers" >&2; exit 2 ;; esac
[[ $host =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "server.sh: --host takes an IPv4 address" >&2; exit 2; }
case $nfsvers in 3 | 4) ;; *) echo "server.sh: --nfsvers takes 3 or 4" >&2; exit 2 ;; esac
[[ $disk_size =~ ^[0-9]+[KMG]?$ ]] || { echo "server.sh: --disk-size takes e.g. 256M or 2G" >&2; exit 2; }

cannot() { echo "server.sh: $*" >&2; exit 3; }
ls /boot/vmlinuz-* >/dev/null 2>&1 || cannot "no /boot/vmlinuz-* (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null || cannot "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
command -v nfs-ls >/dev/null || cannot "nfs-ls missing (apt-get install libnfs-utils)"
PATH=$PATH:/sbin:/usr/sbin
command -v mkfs.ext4 >/dev/null || cannot "mkfs.ext4 missing (apt-get install e2fsprogs)"

build=${H_BUILD:-$root/build}
imgdir=${KNFSD_DIR:-${GUEST_IMAGES:-$build}/guest-server}
"$here/mkimage.sh" --server "$imgdir" || cannot "building the server image failed"
kfile=$imgdir/$(cat "$imgdir/kernel")

# free_port: a TCP port nothing here listens on or uses
free_port()
{
	local p
	for ((;;)); do
		p=$((20000 + RANDOM % 12000)) # below the ephemeral range (harness.sh h_free_port)
		ss -Htan "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}
[ -n "$nfsport" ] || nfsport=$(free_port)
[ -n "$mntport" ] || { mntport=$(free_port); [ "$mntport" != "$nfsport" ] || mntport=$(free_port); }

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
rm -f "$dir/ctl.in" "$dir/ctl.out" "$dir/export.img"
mkfifo "$dir/ctl.in" "$dir/ctl.out"
# the inode tables and journal written now (quick on the host), so that the
# guest has no lazy initialisation to do under emulation
truncate -s "$disk_size" "$dir/export.img"
mkfs.ext4 -q -F -L export -E lazy_itable_init=0,lazy_journal_init=0 "$dir/export.img" ||
	cannot "mkfs.ext4 $dir/export.img failed"
: >"$dir/console.log"
: >"$dir/serial.out"

guest_qemu_opts || exit 2
# no_timer_check: under TCG on a loaded host the kernel's IO-APIC timer
# check can time out and panic the boot ("IO-APIC + timer doesn't work!",
# about 1 boot in 60); the emulated timer works, the check is what fails
cmdline="console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdinit=/init"
cmdline+=" cfs.threads=${KNFSD_THREADS:-8}"
[ -z "${KNFSD_MAXBLOCK:-}" ] || cmdline+=" cfs.maxblock=$KNFSD_MAXBLOCK"
[ "$nfsvers" = 3 ] || cmdline+=" cfs.nfsvers=$nfsvers"
cmdline+=" ${GUEST_APPEND:-}"

start=$(date +%s%N)
qemu-system-x86_64 "${guest_accel[@]}" -M pc -smp 1 -m "${KNFSD_MEM:-1024}" \
	-nodefaults -no-user-config -display none -monitor none -no-reboot \
	-kernel "$kfile" -initrd "$imgdir/initramfs.cpio.gz" -append "$cmdline" \
	-serial "file:$dir/console.log" -serial "file:$dir/serial.out" \
	-chardev "pipe,id=ctl,path=$dir/ctl" -serial chardev:ctl \
	-drive "file=$dir/export.img,format=raw,if=none,id=d0,cache=unsafe" \
	-device virtio-blk-pci,drive=d0 \
	-netdev "user,id=n0,hostfwd=tcp:$host:$nfsport-:2049,hostfwd=tcp:$host:$mntport-:20048" \
	-device "$guest_nicdev,netdev=n0" \
	</dev/null >"$dir/qemu.log" 2>&1 &
qpid=$!
echo "$qpid" >"$dir/qemu.pid"

fail()
{
	echo "server.sh: $* ($((($(date +%s%N) - start) / 1000000)) ms after start); console tail:" >&2
	tail -n 30 "$dir/console.log" >&2
	[ -s "$dir/qemu.log" ] && sed 's/^/qemu: /' "$dir/qemu.log" >&2
	guest_stop_qemu "$qpid"
	exit 1
}
deadline=$((start / 1000000 + timeout * 1000))
# wait_for PATTERN: until the guest printed a line matching it on ttyS1
wait_for()
{
	while ! grep -q "$1" "$dir/serial.out"; do
		grep -q '^GUEST-SERVER-FAILED' "$dir/serial.out" &&
			fail "the guest failed: $(grep '^GUEST-SERVER-FAILED' "$dir/serial.out")"
		kill -0 "$qpid" 2>/dev/null || fail "qemu exited"
		[ "$(($(date +%s%N) / 1000000))" -lt "$deadline" ] || fail "timeout after ${timeout}s waiting for $1"
		sleep 0.05
	done
}

wait_for '^GUEST-SERVER-CLOCK?'
# send the second that has just begun (qemu holds ctl.in open read-write,
# so this open does not block)
exec 8>"$dir/ctl.in"
now=$EPOCHREALTIME
us=$((1000000 - 10#${now#*.}))
sleep "$((us / 1000000)).$(printf '%06d' $((us % 1000000)))"
printf 'CLOCK %s\n' "${EPOCHREALTIME%.*}" >&8
exec 8>&-

wait_for '^GUEST-SERVER-READY'
maxblock=$(sed -n 's/^GUEST-SERVER-READY max_block_size=\([0-9]*\).*/\1/p' "$dir/serial.out" | tail -n 1)
url="nfs://$host/export?nfsport=$nfsport&mountport=$mntport"
[ "$nfsvers" = 3 ] || url="nfs://$host/export?nfsport=$nfsport&version=4"
until nfs-ls "$url" >/dev/null 2>&1; do
	kill -0 "$qpid" 2>/dev/null || fail "qemu exited"
	[ "$(($(date +%s%N) / 1000000))" -lt "$deadline" ] || fail "timeout after ${timeout}s: nfs-ls $url fails"
	sleep 0.1
done
boot_ms=$((($(date +%s%N) - start) / 1000000))
printf 'PID=%s\nNFSPORT=%s\nMNTPORT=%s\nEXPORT=/export\nURL=%s\nMAXBLOCK=%s\nBOOT_MS=%s\n' \
	"$qpid" "$nfsport" "$mntport" "$url" "$maxblock" "$boot_ms"
