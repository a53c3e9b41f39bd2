#!/bin/bash
# tests/lib/debs.sh fetch|path|root DIR PKG
#
# Debian packages whose programs the tests run but that must not be
# installed on the host, because their maintainer scripts start services:
# nfs-common (rpc.statd, sm-notify, showmount, mount.nfs) for lock and
# plain-mount tests, nfs-kernel-server for the kernel NFS server guest
# (tests/guest/mkimage.sh). The .deb is downloaded with `apt-get download`
# into DIR/deb (looked for first in DIR/deb, build/debs/deb and
# build/guest-server/deb of this checkout and /var/cache/apt/archives) and
# unpacked once into DIR/root/PKG.
#   fetch DIR PKG   download it if no copy is there (needs network: `make
#                   test` runs it before the suite, since there is none
#                   inside tests/lib/isolate.sh)
#   path DIR PKG    print the .deb in DIR/deb (copied from a cache if one
#                   has it); fails with a message when none was fetched
#   root DIR PKG    print the unpacked tree (unpacking the .deb if needed);
#                   fails with a message when the .deb was never fetched
# The programs run with the host's libraries (same Debian release).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?usage: debs.sh fetch|path|root DIR PKG}
dir=${2:?usage: debs.sh fetch|path|root DIR PKG}
pkg=${3:?usage: debs.sh fetch|path|root DIR PKG}

die() { echo "debs.sh: $*" >&2; exit 1; }

# newest DIR: the newest PKG_*.deb in DIR, or nothing
newest()
{
	[ -d "$1" ] || return 0
	find "$1" -maxdepth 1 -name "${pkg}_*.deb" | sort -V | tail -n 1
}

# have: sets deb to a copy in DIR/deb, from a cache if one has it
have()
{
	local d f
	deb=$(newest "$dir/deb")
	[ -z "$deb" ] || return 0
	for d in "$here/../../build/debs/deb" "$here/../../build/guest-server/deb" \
		/var/cache/apt/archives; do
		f=$(newest "$d")
		[ -n "$f" ] || continue
		mkdir -p "$dir/deb"
		cp "$f" "$dir/deb/"
		deb=$dir/deb/$(basename "$f")
		return 0
	done
	return 1
}

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
case $cmd in
fetch)
	have && exit 0
	mkdir -p "$dir/deb"
	echo "debs.sh: downloading $pkg (not installed) into $dir/deb" >&2
	(cd "$dir/deb" && apt-get -o APT::Sandbox::User=root download "$pkg" >&2) ||
		die "apt-get download $pkg failed (no network, e.g. inside isolate.sh? run \`tests/lib/debs.sh fetch $dir $pkg\` outside first; apt-get update?)"
	have || die "apt-get download left no ${pkg}_*.deb in $dir/deb"
	;;
path)
	have || die "no ${pkg}_*.deb in $dir/deb: run \`tests/lib/debs.sh fetch $dir $pkg\` first (outside isolate.sh; \`make test\` does)"
	echo "$deb"
	;;
root)
	have || die "no ${pkg}_*.deb in $dir/deb: run \`tests/lib/debs.sh fetch $dir $pkg\` first (outside isolate.sh; \`make test\` does)"
	r=$dir/root/$pkg
	# unpacked again when the .deb changes
	if [ ! -f "$r/.from" ] || [ "$(cat "$r/.from")" != "$(basename "$deb")" ]; then
		rm -rf "$r"
		mkdir -p "$r"
		dpkg-deb -x "$deb" "$r"
		basename "$deb" >"$r/.from"
	fi
	echo "$r"
	;;
*) die "unknown command $cmd (fetch, path or root)" ;;
esac
