#!/bin/bash
# make install: the daemon, cachefsctl, both man pages, the systemd unit
# (with the installed daemon's path; systemd-analyze verify accepts it when
# available), the sysusers.d file, the example configuration (which
# --check-config accepts once an upstream is set) and the default
# /etc/cachefsd.conf (SYSCONFDIR= here, never this machine's /etc).
# The binaries of the build under test are installed as they are (make -o:
# never rebuilt here).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
root=$H_TMP/prefix
make -s -C "$H_ROOT" -o "$H_BUILD/cachefsd" -o "$H_BUILD/cachefsctl" install \
	BUILD="$H_BUILD" PREFIX="$root" SYSCONFDIR="$root/etc" >"$H_TMP/make.log" 2>&1 ||
	h_fail "make install failed: $(tail -5 "$H_TMP/make.log")"
for f in sbin/cachefsd sbin/cachefsctl share/man/man8/cachefsd.8 share/man/man8/cachefsctl.8 \
	share/man/man5/cachefsd.conf.5 lib/systemd/system/cachefsd.service \
	lib/systemd/system/cachefsd@.service share/doc/cachefsd/cachefsd.conf.example \
	share/doc/cachefsd/operations.md share/doc/cachefsd/coherence.md \
	share/doc/cachefsd/alerts.yml share/doc/cachefsd/dashboard.json \
	lib/sysusers.d/cachefsd.conf etc/cachefsd.conf; do
	[ -f "$root/$f" ] || h_fail "make install did not install $f"
done
[ -x "$root/sbin/cachefsctl" ] && [ -x "$root/sbin/cachefsd" ] || h_fail "binaries not executable"
"$root/sbin/cachefsctl" --help | grep -q "^usage: cachefsctl" || h_fail "installed cachefsctl --help"
unit=$root/lib/systemd/system/cachefsd.service
grep -qx "ExecStart=$root/sbin/cachefsd --foreground --config /etc/cachefsd.conf" \
	"$unit" || h_fail "the unit's ExecStart: $(grep ExecStart= "$unit")"
! grep -q @SBINDIR@ "$unit" || h_fail "@SBINDIR@ left in the unit"
if command -v systemd-analyze >/dev/null; then
	out=$(cd "$(dirname "$unit")" && systemd-analyze verify --man=no ./cachefsd.service 2>&1) ||
		h_fail "systemd-analyze verify: $out"
	[ -z "$out" ] || h_fail "systemd-analyze verify warns: $out"
fi
# the man pages format without warnings
for m in man8/cachefsd.8 man8/cachefsctl.8 man5/cachefsd.conf.5; do
	out=$(groff -man -ww -z "$root/share/man/$m" 2>&1)
	[ -z "$out" ] || h_fail "$m: $out"
done
# the example configuration is valid once the upstream is set
sed -e 's|^cache_dir = .*|cache_dir = '"$H_TMP"'/c|' -e 's|^#upstream = |upstream = |' \
	"$root/share/doc/cachefsd/cachefsd.conf.example" >"$H_TMP/ex.conf"
out=$("$root/sbin/cachefsd" --check-config --config "$H_TMP/ex.conf" 2>&1) ||
	h_fail "the example configuration: $out"
grep -q "^metrics_listen = 127.0.0.1:9469 *# $H_TMP/ex.conf:[0-9]*\$" <<<"$out" ||
	h_fail "the example's metrics_listen: $out"
h_pass "make install: binaries, man pages, systemd unit (verified), example configuration"
