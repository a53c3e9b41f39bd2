#!/bin/bash
# tests/guest/run.sh — run a shell script inside a qemu guest that has the
# stock Linux kernel NFS client mounted on an NFSv3 server on the host.
#
# usage: run.sh --port P [--mountport M] --export PATH --script FILE
#               [--timeout SECONDS] [--out LOG] [--opts MOUNT_OPTS]
#               [--env NAME=VALUE]...
#        run.sh --plain --export PATH --script FILE [...]
#   --plain         a stock client host: the guest runs rpcbind and
#                   `rpc.statd --no-notify -F`, and mounts with nfs-common's
#                   mount.nfs, `-o vers=3` and nothing else (plus --opts):
#                   ports come from the rpcbind on the host's port 111, so
#                   the server must be registered there (cachefsd's
#                   register); locks work. Image: mkimage.sh --plain into
#                   ${H_BUILD:-build}/guest-plain (GUEST_DIR overrides)
#   --port P        NFS port on the host's loopback (cachefsd: its one port)
#   --mountport M   MOUNT protocol port (default P; plain ganesha: its MNT_Port)
#   --export PATH   what the guest mounts: 10.0.2.2:PATH on /mnt
#   --script FILE   run in the guest by /bin/sh (busybox ash), cwd /mnt,
#                   env MNT=/mnt plus the --env values
#   --timeout S     whole-run limit, boot to poweroff (default 120)
#   --out LOG       keep the guest console (kernel + init messages) in LOG
#   --opts O        extra NFS mount options appended (e.g. actimeo=0,rsize=65536)
#   --net user|tap:IF   the guest's network (default user: slirp, see below).
#                   tap:IF: the tap device IF, which the caller made in its
#                   network namespace (guest_bridge in common.sh), with
#                   10.0.2.2/24 on the host side: the guest is a real host
#                   there, which servers can call back (NLM GRANTED, NSM
#                   SM_NOTIFY), and its kernel client connects from the
#                   privileged ports it chose (no NAT)
#   --ip A          the guest's address (default 10.0.2.15; several guests
#                   on one bridge need one each)
#   --add SRC:DEST  copy the file SRC into the guest as /guest/DEST (e.g.
#                   build/tests/guest-locker:bin/locker; /guest/bin is on
#                   the script's PATH)
# stdout: exactly what the script printed (stdout and stderr), then a last line
# "GUEST-EXIT: N". Exit status: the script's N; 120-122 the guest init failed
# before the script (no script / network / NFS mount, see tests/guest/init);
# 124 timeout; 125 the guest stopped without reporting, or reported but did
# not power off within GUEST_POWEROFF_GRACE (30) s after; 2 usage.
# Environment: GUEST_KVM=1 use KVM instead of TCG; GUEST_NIC=virtio|e1000;
# GUEST_MEM (MiB, default 512); GUEST_DIR image dir (default
# ${H_BUILD:-build}/guest); GUEST_KVER kernel version (see mkimage.sh);
# GUEST_APPEND extra kernel command line (e.g. "loglevel=7" to debug a boot).
#
# Design notes
# (The kernel NFS *server* guest, a second upstream for the tests, is
# tests/guest/server.sh; its notes are at its top.)
# - The host has no kernel NFS client, so a qemu guest runs Debian's stock
#   kernel (/boot/vmlinuz-*, modules from /lib/modules) with busybox-static as
#   userland. mkimage.sh builds it once into build/guest and rebuilds only when
#   the kernel, busybox, mkimage.sh or init change (stamp file).
# - Acceleration: TCG (pure emulation) by default. /dev/kvm on the dev/CI
#   machines is a nested PVM that crashes the stock kernel; GUEST_KVM=1 opts in.
# - Kernel: mkimage.sh extracts the uncompressed ELF vmlinux from the bzImage
#   (like the kernel's scripts/extract-vmlinux: find the xz/zstd/gzip magic,
#   decompress) and qemu boots it through its PVH entry note (CONFIG_PVH=y),
#   skipping the bzImage's self-decompression, which costs ~3 s under TCG.
#   Falls back to the bzImage if extraction fails (GUEST_BZIMAGE=1 forces it).
# - The script gets in as a second, per-run cpio archive (/guest/script,
#   /guest/env) concatenated after the cached initramfs.cpio.gz; the kernel
#   unpacks concatenated archives in order (zero-padded to a 4-byte boundary
#   after the gzip member, or the kernel rejects the second one). Nothing of
#   the cached image is touched per run, so parallel runs are safe.
# - Mount parameters go on the kernel command line (cfs.export= cfs.port=
#   cfs.mountport= cfs.opts=), which /init parses. busybox mount has no NFS
#   support of its own, so it hands the kernel the text options, with
#   addr=/mountaddr= given explicitly (there is no mount.nfs): no rpcbind is
#   asked, cachefsd only needs its one port. --plain is the other way, a
#   stock client host: the image (mkimage.sh --plain) adds nfs-common's
#   mount.nfs, showmount, rpc.statd, sm-notify and the host's rpcbind and
#   rpcinfo; init starts rpcbind and `rpc.statd --no-notify -F` and runs
#   `mount.nfs ADDR:PATH /mnt -o vers=3` (what `mount -t nfs` runs), which
#   asks the host's rpcbind (slirp's 10.0.2.2:111) for the ports. mount.nfs
#   needs /etc/protocols ("tcp" by name) and the kernel's lockd registers
#   through /var/run/rpcbind.sock: without those the mount fails with
#   "Protocol not supported". A blocking lock waits ~30 s (the kernel polls:
#   nothing can call back into the slirp guest).
# - Two serial ports: ttyS0 is the console (kernel at loglevel=3 + /init's
#   progress) -> --out LOG; ttyS1 (raw mode) carries only the script's output
#   and the final "GUEST-EXIT: N" line -> file, streamed live to our stdout.
#   /init opens ttyS1 per command; the last close of a tty drains it, so no
#   output is lost at `poweroff -f`. -no-reboot makes a guest panic end qemu.
# - Network: qemu user networking (slirp) by default; the guest is
#   10.0.2.15/24 and 10.0.2.2 reaches the host's 127.0.0.1. No other network
#   target. Nothing can connect into a slirp guest, so servers cannot call
#   it back (a blocked NLM lock is then found by the client's 30 s poll).
#   --net tap:IF puts it on a tap device of a bridge the test made in its
#   own network namespace (guest_bridge): the same addresses, but a real
#   host that the proxy can call back and that connects from its own ports.
# - Writing guest scripts: busybox ash + applets, running as root (ganesha
#   exports No_Root_Squash). Print results as "KEY: value" lines and parse
#   them on the host. To read back from the server rather than the page
#   cache: sync; echo 3 >/proc/sys/vm/drop_caches. Keep data to a few MiB
#   (~15-20 MB/s under TCG).
# - Measured (2-core Debian 12 host, TCG, kernel 6.1, "pc" machine, 512 MiB):
#   qemu start to poweroff with a trivial script (mount + md5sum of 4 MiB)
#   4.7-6.2 s with the extracted vmlinux, 9.0-11.7 s booting the bzImage;
#   e1000 instead of virtio-net costs ~1 s more. md5sum of a 4 MiB file over
#   NFS takes ~0.2 s in the guest. tests/integ/50-kernel-client.sh: guest
#   6-10 s, whole test 7-11 s. First image build ~2 s, then cached.
#   Tried without gain: mitigations=off, tsc=reliable, fewer 8250 ports.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# shellcheck source=tests/guest/common.sh
. "$here/common.sh"
usage() { guest_usage; }

port='' mountport='' export='' script='' timeout=120 log='' opts='' plain=''
net=user gip=10.0.2.15
envs=() adds=()
while [ $# -gt 0 ]; do
	case $1 in
	--plain) plain=1; shift ;;
	--port) port=${2:?}; shift 2 ;;
	--mountport) mountport=${2:?}; shift 2 ;;
	--export) export=${2:?}; shift 2 ;;
	--script) script=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--out) log=${2:?}; shift 2 ;;
	--opts) opts=${2:?}; shift 2 ;;
	--env) envs+=("${2:?}"); shift 2 ;;
	--net) net=${2:?}; shift 2 ;;
	--ip) gip=${2:?}; shift 2 ;;
	--add) adds+=("${2:?}"); shift 2 ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
done
[ -n "$plain" ] && [ -z "$port" ] && port=2049 # unused: rpcbind says
[ -n "$port" ] && [ -n "$export" ] && [ -n "$script" ] || usage
[ -n "$mountport" ] || mountport=$port
[ -r "$script" ] || { echo "run.sh: cannot read $script" >&2; exit 2; }
case $port$mountport$timeout in *[!0-9]*) echo "run.sh: ports and timeout are numbers" >&2; exit 2 ;; esac
case $export$opts in *[[:space:]]*) echo "run.sh: export path and options must not contain whitespace" >&2; exit 2 ;; esac
case $net in
user) netdev=user,id=n0 ;;
tap:?*)
	[ -e "/sys/class/net/${net#tap:}" ] || { echo "run.sh: no network device ${net#tap:} here (make it first: guest_bridge)" >&2; exit 2; }
	netdev=tap,id=n0,ifname=${net#tap:},script=no,downscript=no ;;
*) echo "run.sh: --net user or tap:IFNAME" >&2; exit 2 ;;
esac
case $gip in *[!0-9.]* | '') echo "run.sh: --ip takes an IPv4 address" >&2; exit 2 ;; esac

build=${H_BUILD:-$root/build}
# GUEST_IMAGES: one folder of images shared by every build (make test)
images=${GUEST_IMAGES:-$build}
if [ -n "$plain" ]; then
	imgdir=${GUEST_DIR:-$images/guest-plain}
	"$here/mkimage.sh" --plain "$imgdir"
else
	imgdir=${GUEST_DIR:-$images/guest}
	"$here/mkimage.sh" "$imgdir"
fi
kfile=$imgdir/$(cat "$imgdir/kernel")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/guest-run.XXXXXX")
qpid=
tpid=
# shellcheck disable=SC2317 # invoked by trap
cleanup()
{
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		guest_stop_qemu "$qpid"
	fi
	if [ -n "$tpid" ]; then
		kill "$tpid" 2>/dev/null || true
		wait "$tpid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- per-run cpio with the script and its environment ---------------------
mkdir -p "$tmp/extra/guest"
cp "$script" "$tmp/extra/guest/script"
: >"$tmp/extra/guest/env"
for kv in "${envs[@]+"${envs[@]}"}"; do
	name=${kv%%=*}
	val=${kv#*=}
	case $name in '' | [0-9]* | *[!A-Za-z0-9_]*) echo "run.sh: bad --env $kv" >&2; exit 2 ;; esac
	# single-quote for ash: ' -> '\''
	printf "export %s='%s'\n" "$name" "${val//\'/\'\\\'\'}" >>"$tmp/extra/guest/env"
done
for a in "${adds[@]+"${adds[@]}"}"; do
	src=${a%%:*} dest=${a#*:}
	case $dest in '' | /* | *..* | "$a") echo "run.sh: --add SRC:DEST, DEST relative under /guest" >&2; exit 2 ;; esac
	[ -r "$src" ] || { echo "run.sh: cannot read $src" >&2; exit 2; }
	mkdir -p "$(dirname "$tmp/extra/guest/$dest")"
	cp "$src" "$tmp/extra/guest/$dest"
done
(cd "$tmp/extra" && find guest | cpio --quiet -o -H newc -R 0:0) >"$tmp/extra.cpio"
# The kernel looks for a following cpio ("070701") only at a 4-byte aligned
# offset after a compressed archive (and skips zero bytes): pad with zeros.
base=$(stat -c %s "$imgdir/initramfs.cpio.gz")
{
	cat "$imgdir/initramfs.cpio.gz"
	head -c $(((4 - base % 4) % 4 + 4)) /dev/zero
	cat "$tmp/extra.cpio"
} >"$tmp/initrd"

# --- boot ------------------------------------------------------------------
guest_qemu_opts || exit 2
# no_timer_check: under TCG on a loaded host the kernel's IO-APIC timer
# check can time out and panic the boot ("IO-APIC + timer doesn't work!",
# about 1 boot in 60); the emulated timer works, the check is what fails
cmdline="console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdinit=/init"
cmdline+=" cfs.export=$export cfs.port=$port cfs.mountport=$mountport cfs.ip=$gip"
[ -z "$opts" ] || cmdline+=" cfs.opts=$opts"
[ -z "$plain" ] || cmdline+=" cfs.plain=1"
cmdline+=" ${GUEST_APPEND:-}"

console=${log:-$tmp/console.log}
: >"$console"
: >"$tmp/out"
start=$(date +%s%N)
qemu-system-x86_64 "${guest_accel[@]}" -M pc -smp 1 -m "${GUEST_MEM:-512}" \
	-nodefaults -no-user-config -display none -monitor none -no-reboot \
	-kernel "$kfile" -initrd "$tmp/initrd" -append "$cmdline" \
	-serial "file:$console" -serial "file:$tmp/out" \
	-netdev "$netdev" -device "$guest_nicdev,netdev=n0,mac=$(guest_mac "$gip")" \
	</dev/null >>"$console" 2>&1 &
qpid=$!
tail -s 0.1 -n +1 -f --pid="$qpid" "$tmp/out" &
tpid=$!

# Stop qemu at the deadline, or when the guest has reported but not powered
# off within $grace seconds (unmount hanging?).
timed_out='' hung=''
grace=${GUEST_POWEROFF_GRACE:-30}
deadline=$((start / 1000000 + timeout * 1000))
while kill -0 "$qpid" 2>/dev/null; do
	now=$(($(date +%s%N) / 1000000))
	if [ -z "$hung" ] && grep -q '^GUEST-EXIT: ' "$tmp/out"; then
		[ "$deadline" -le $((now + grace * 1000)) ] || deadline=$((now + grace * 1000))
		hung=0
	fi
	if [ "$now" -ge "$deadline" ]; then
		if [ "$hung" = 0 ]; then
			hung=1
			echo "run.sh: guest reported but did not power off (unmount hung?), killing qemu (pid $qpid)" >&2
		else
			timed_out=1
			echo "run.sh: timeout after ${timeout}s, killing qemu (pid $qpid)" >&2
		fi
		kill -TERM "$qpid" 2>/dev/null || true
		sleep 1
		kill -KILL "$qpid" 2>/dev/null || true
		break
	fi
	sleep 0.1
done
qrc=0
wait "$qpid" 2>/dev/null || qrc=$?
qpid=
wait "$tpid" 2>/dev/null || true
tpid=
elapsed=$((($(date +%s%N) - start) / 1000000))

rc=$(sed -n 's/^GUEST-EXIT: \([0-9][0-9]*\)$/\1/p' "$tmp/out" | tail -n 1)
if [ -z "$rc" ]; then
	if [ -n "$timed_out" ]; then rc=124; else rc=125; fi
	echo "run.sh: guest did not report an exit status (qemu status $qrc, ${elapsed} ms); console tail:" >&2
	tail -n 40 "$console" >&2
elif [ "$hung" = 1 ]; then
	echo "run.sh: guest script exited $rc, then the guest hung before poweroff; console tail:" >&2
	tail -n 40 "$console" >&2
	rc=125
elif [ "$rc" != 0 ]; then
	echo "run.sh: guest script exited $rc (${elapsed} ms); console tail:" >&2
	tail -n 20 "$console" >&2
else
	echo "run.sh: guest script passed (${elapsed} ms boot to poweroff)" >&2
fi
exit "$rc"
