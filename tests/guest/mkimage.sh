#!/bin/bash
# tests/guest/mkimage.sh [--server|--plain|--fetch] OUTDIR
#
# Builds the guest image that tests/guest/run.sh boots (design notes at the
# top of run.sh), or with --server the kernel NFS server guest that
# tests/guest/server.sh boots (notes at the top of server.sh):
#   OUTDIR/vmlinux            uncompressed ELF kernel (PVH entry), extracted
#                             from /boot/vmlinuz-<ver>; falls back to a copy
#                             of the bzImage as OUTDIR/bzImage
#   OUTDIR/initramfs.cpio.gz  busybox-static, the NFS client + NIC modules
#                             (decompressed), tests/guest/init as /init
#   OUTDIR/kernel             name of the kernel file to boot (vmlinux|bzImage)
#   OUTDIR/stamp              what it was built from; nothing is rebuilt while
#                             kernel version, kernel file, busybox, this script
#                             and init are unchanged
#
# Kernel: the newest /boot/vmlinuz-* that has its modules under /lib/modules
# (the host's running kernel does not matter); GUEST_KVER=<ver> overrides.
# GUEST_NIC=virtio|e1000 picks the NIC driver (default virtio; run.sh must be
# called with the same value).
#
# --server: the same kernel and busybox, plus the nfsd module and the
# userland of a kernel NFS server: rpc.nfsd, rpc.mountd and exportfs from
# Debian's nfs-kernel-server .deb (downloaded with `apt-get download` into
# OUTDIR/deb once and unpacked there; never installed on the host, where it
# would start services), the host's /usr/sbin/rpcbind, the shared libraries
# `ldd` lists for them and the dynamic loader, /etc/netconfig and
# /etc/services, and tests/guest/init-server as /init. The stamp also names
# the .deb and the host binaries' sizes and times. The .deb is looked for in
# OUTDIR/deb, then build/guest-server/deb of this checkout and
# /var/cache/apt/archives, and downloaded only if none has it (there is no
# network inside tests/lib/isolate.sh: `make test` fetches it first).
# --fetch: only that, the .deb into OUTDIR/deb (needs no kernel).
#
# --plain: the client image plus the userland of a stock NFS client host,
# for plain mounts and locks (run.sh --plain): mount.nfs, showmount,
# rpc.statd and sm-notify from Debian's nfs-common .deb (tests/lib/debs.sh:
# fetched by `make test` into build/debs, unpacked, never installed), the
# host's rpcbind and rpcinfo, their libraries by ldd, /etc/netconfig,
# /etc/services, /etc/protocols (mount.nfs looks up "tcp" by name), the users rpcbind and statd drop to, and /var/lib/nfs/sm,
# sm.bak as statd wants them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
role=client
case ${1:-} in
--server) role=server; shift ;;
--plain) role=plain; shift ;;
--fetch) role=fetch; shift ;;
esac
out=${1:?usage: mkimage.sh [--server|--plain|--fetch] OUTDIR}
nic=${GUEST_NIC:-virtio}
initsrc=$here/init
[ $role = server ] && initsrc=$here/init-server

die() { echo "mkimage: $*" >&2; exit 1; }

# fetch_deb: sets deb to nfs-kernel-server's .deb in $out/deb, copied from a
# cache or downloaded (never installed: its scripts would start services)
fetch_deb()
{
	"$here/../lib/debs.sh" fetch "$out" nfs-kernel-server >&2 &&
		deb=$("$here/../lib/debs.sh" path "$out" nfs-kernel-server) ||
		die "no nfs-kernel-server .deb (no network, e.g. inside isolate.sh? run \`tests/guest/mkimage.sh --fetch $out\` outside first; apt-get update?)"
}
if [ $role = fetch ]; then
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	fetch_deb
	exit 0
fi

pick_kver()
{
	local v best=
	if [ -n "${GUEST_KVER:-}" ]; then
		echo "$GUEST_KVER"
		return
	fi
	# newest first
	for v in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -rV); do
		if [ -f "/lib/modules/$v/modules.dep" ] &&
			modinfo -k "$v" -F filename nfsv3 >/dev/null 2>&1; then
			best=$v
			break
		fi
	done
	[ -n "$best" ] || die "no /boot/vmlinuz-* with NFS modules in /lib/modules (apt-get install linux-image-amd64)"
	echo "$best"
}

kver=$(pick_kver)
kimg=/boot/vmlinuz-$kver
[ -r "$kimg" ] || die "$kimg not readable"
busybox=$(command -v busybox 2>/dev/null || true)
[ -n "$busybox" ] || busybox=/bin/busybox
[ -x "$busybox" ] || die "busybox not found (apt-get install busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is dynamically linked (apt-get install busybox-static)"
fi

case $nic in
virtio) nicmods="virtio_pci virtio_net" ;;
e1000) nicmods="e1000" ;;
*) die "GUEST_NIC must be virtio or e1000" ;;
esac
topmods="$nicmods sunrpc grace lockd nfs_acl nfs nfsv3"

mkdir -p "$out"
out=$(cd "$out" && pwd)

# --- server userland: where each program comes from -------------------------
srvbins=()
deb=
if [ $role = server ]; then
	# the export is an ext4 disk (virtio-blk); crc32c for its checksums
	topmods="$nicmods virtio_blk crc32c_generic ext4 sunrpc grace lockd nfs_acl nfsd"
	fetch_deb
	debx=$out/deb/x-$(basename "$deb" .deb)
	if [ ! -x "$debx/usr/sbin/rpc.nfsd" ]; then
		rm -rf "$debx"
		dpkg-deb -x "$deb" "$debx" || die "dpkg-deb -x $deb failed"
	fi
	rpcbind=$(command -v rpcbind 2>/dev/null || echo /usr/sbin/rpcbind)
	[ -x "$rpcbind" ] || die "rpcbind not found (apt-get install rpcbind)"
	srvbins=("$debx/usr/sbin/rpc.nfsd" "$debx/usr/sbin/rpc.mountd"
		"$debx/usr/sbin/exportfs" "$rpcbind")
	for f in "${srvbins[@]}" /etc/netconfig /etc/services; do
		[ -r "$f" ] || die "$f missing"
	done
fi
if [ $role = plain ]; then
	nc=$("$here/../lib/debs.sh" root "$here/../../build/debs" nfs-common) ||
		die "nfs-common's .deb is not fetched (tests/lib/debs.sh fetch build/debs nfs-common; make test does)"
	rpcbind=$(command -v rpcbind 2>/dev/null || echo /usr/sbin/rpcbind)
	rpcinfo=$(command -v rpcinfo 2>/dev/null || echo /usr/sbin/rpcinfo)
	srvbins=("$nc/sbin/mount.nfs" "$nc/sbin/showmount" "$nc/sbin/rpc.statd"
		"$nc/sbin/sm-notify" "$rpcbind" "$rpcinfo")
	for f in "${srvbins[@]}" /etc/netconfig /etc/services /etc/protocols; do
		[ -r "$f" ] || die "$f missing (apt-get install rpcbind netbase)"
	done
fi

stamp="role=$role kver=$kver nic=$nic bzimage=${GUEST_BZIMAGE:-0}
kernel=$(stat -c '%s %Y' "$kimg")
busybox=$(stat -c '%s %Y' "$busybox")
mkimage=$(md5sum <"$0" | cut -d' ' -f1)
init=$(md5sum <"$initsrc" | cut -d' ' -f1)"
if [ $role = server ]; then
	stamp+="
deb=$(basename "$deb")
rpcbind=$(stat -c '%s %Y' "$rpcbind")"
fi
if [ $role = plain ]; then
	for f in "${srvbins[@]}"; do
		stamp+="
$(basename "$f")=$(stat -c '%s %Y' "$f")"
	done
fi

# One builder at a time; others wait and then find the stamp up to date.
exec 9>"$out/.lock"
flock 9

if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] &&
	[ -f "$out/initramfs.cpio.gz" ] && [ -f "$out/kernel" ] &&
	[ -f "$out/$(cat "$out/kernel")" ]; then
	exit 0
fi

echo "mkimage: building guest image for kernel $kver in $out" >&2
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- kernel: extract the uncompressed vmlinux (like scripts/extract-vmlinux)
# qemu boots an ELF vmlinux directly through its PVH entry note (Debian sets
# CONFIG_PVH=y), which skips the bzImage decompressor: ~3 s under TCG.
try_extract()
{
	# $1 grep -P magic, $2 decompress command
	local off
	for off in $(LC_ALL=C grep -obUaP "$1" "$kimg" 2>/dev/null | cut -d: -f1); do
		tail -c +$((off + 1)) "$kimg" | $2 >"$work/vmlinux" 2>/dev/null || true
		if [ "$(head -c 4 "$work/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] && has_pvh; then
			return 0
		fi
	done
	rm -f "$work/vmlinux"
	return 1
}
# PVH entry = ELF note type 18 (XEN_ELFNOTE_PHYS32_ENTRY)
has_pvh()
{
	if command -v readelf >/dev/null 2>&1; then
		LC_ALL=C readelf -n "$work/vmlinux" 2>/dev/null | grep 'note type: (0x00000012)' >/dev/null
	else
		grep -q '^CONFIG_PVH=y' "/boot/config-$kver" 2>/dev/null
	fi
}
kfile=
if [ "${GUEST_BZIMAGE:-0}" = 0 ]; then
	if try_extract '\xfd7zXZ\x00' 'xz -dc --single-stream' ||
		try_extract '\x28\xb5\x2f\xfd' 'zstd -dc' ||
		try_extract '\x1f\x8b\x08' 'gzip -dc' ||
		try_extract '\x02\x21\x4c\x18' 'lz4 -dc'; then
		kfile=vmlinux
	fi
fi
if [ -z "$kfile" ]; then
	# no decompressor / no PVH note: boot the bzImage as is (slower)
	echo "mkimage: could not extract a PVH vmlinux, using the bzImage" >&2
	cp "$kimg" "$work/bzImage"
	kfile=bzImage
fi

# --- initramfs -----------------------------------------------------------
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,mnt,tmp,guest,lib/modules,etc}
cp "$busybox" "$root/bin/busybox"
for a in $("$busybox" --list); do
	[ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
done
ln -s bin "$root/sbin"
mkdir -p "$root/usr"
ln -s ../bin "$root/usr/bin"
ln -s ../bin "$root/usr/sbin"
install -m 0755 "$initsrc" "$root/init"
echo 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
if [ $role != client ]; then
	for f in "${srvbins[@]}"; do
		install -m 0755 "$f" "$root/bin/$(basename "$f")"
	done
	# every library the programs need, at the path ldd resolved it to,
	# and the dynamic loader their PT_INTERP names
	for lib in $(ldd "${srvbins[@]}" 2>/dev/null |
		sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' | sort -u); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	[ -e "$root/lib64/ld-linux-x86-64.so.2" ] || die "no dynamic loader found by ldd"
	cp /etc/netconfig /etc/services "$root/etc/"
	# mount.nfs looks its transports up by name (getprotobyname)
	[ $role = server ] || cp /etc/protocols "$root/etc/"
	# rpcbind drops to _rpc; the tests use uids 1000 and 2000
	cat >"$root/etc/passwd" <<'PW'
root:x:0:0:root:/:/bin/sh
_rpc:x:100:65534::/run/rpcbind:/bin/false
statd:x:101:65534::/var/lib/nfs:/bin/false
user1000:x:1000:1000::/:/bin/false
user2000:x:2000:2000::/:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PW
	cat >"$root/etc/group" <<'GR'
root:x:0:
user1000:x:1000:
user2000:x:2000:
nogroup:x:65534:
GR
	echo 'passwd: files
group: files
hosts: files' >"$root/etc/nsswitch.conf"
	echo '127.0.0.1 localhost' >"$root/etc/hosts"
	mkdir -p "$root/var/lib/nfs/sm" "$root/var/lib/nfs/sm.bak" "$root/run"
	# (statd runs as the owner of sm/: root here, the archive is 0:0)
	# mount.nfs records the mount in /etc/mtab
	ln -s /proc/mounts "$root/etc/mtab"
	# the kernel registers lockd through /var/run/rpcbind.sock (rpcbind
	# makes /run/rpcbind.sock); without it, it falls back to TCP from an
	# unprivileged port, which rpcbind refuses, and the mount fails with
	# "Protocol not supported"
	ln -s ../run "$root/var/run"
fi
if [ $role = server ]; then
	echo 'knfsd-guest' >"$root/etc/hostname"
	mkdir -p "$root/export"
	: >"$root/var/lib/nfs/etab"
	: >"$root/var/lib/nfs/rmtab"
fi

# Modules in dependency order (depth first over `modinfo -F depends`),
# decompressed because busybox insmod may not handle .ko.xz/.ko.zst.
declare -A seen=()
order=()
addmod()
{
	local m=$1 d deps
	m=${m//-/_}
	[ -n "${seen[$m]:-}" ] && return 0
	seen[$m]=1
	local f
	f=$(modinfo -k "$kver" -F filename "$m" 2>/dev/null) || f=
	case $f in
	'(builtin)') return 0 ;;
	'')
		# built into the kernel?
		grep -q "/${m//_/[-_]}\.ko" "/lib/modules/$kver/modules.builtin" 2>/dev/null && return 0
		die "module $m not found for kernel $kver"
		;;
	esac
	deps=$(modinfo -k "$kver" -F depends "$m" | head -n 1)
	for d in ${deps//,/ }; do
		addmod "$d"
	done
	order+=("$m")
}
for m in $topmods; do
	addmod "$m"
done
: >"$root/lib/modules/load-order"
for m in "${order[@]}"; do
	f=$(modinfo -k "$kver" -F filename "$m")
	case $f in
	*.ko) cp "$f" "$root/lib/modules/$m.ko" ;;
	*.ko.xz) xz -dc "$f" >"$root/lib/modules/$m.ko" ;;
	*.ko.zst) zstd -qdc "$f" >"$root/lib/modules/$m.ko" ;;
	*.ko.gz) gzip -dc "$f" >"$root/lib/modules/$m.ko" ;;
	*) die "unknown module file $f" ;;
	esac
	echo "$m" >>"$root/lib/modules/load-order"
done

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
	gzip -6n >"$work/initramfs.cpio.gz"

# --- install atomically ---------------------------------------------------
rm -f "$out/vmlinux" "$out/bzImage"
mv "$work/$kfile" "$out/$kfile"
mv "$work/initramfs.cpio.gz" "$out/initramfs.cpio.gz"
echo "$kfile" >"$out/kernel"
printf '%s\n' "$stamp" >"$out/stamp"
echo "mkimage: done ($role): $out/$kfile, $out/initramfs.cpio.gz ($(du -k "$out/initramfs.cpio.gz" | cut -f1) KiB), modules: ${order[*]}" >&2
