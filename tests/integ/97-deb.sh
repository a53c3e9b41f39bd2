#!/bin/bash
# The Debian package, as an operator meets it: `make deb` builds cachefsd
# and cachefsd-dbgsym, lintian finds no error and no warning (the remaining
# ones are fixed or overridden with a reason in debian/), and the package
# installed with apt into this machine (a private copy of it: see below):
# the cachefsd system user exists, /etc/cachefsd.conf is a conffile that
# --check-config refuses until the upstream is set, and the service is not
# enabled. With the upstream set, the installed daemon started the way its
# unit starts it (systemd is not PID 1 here: setpriv does what User=,
# AmbientCapabilities=, CapabilityBoundingSet= and NoNewPrivileges= do, the
# unit's own ExecStart runs, the CacheDirectory= and RuntimeDirectory= are
# made as systemd makes them) serves a file from the test's ganesha byte for
# byte on a privileged port, as uid/gid cachefsd with CAP_NET_BIND_SERVICE
# as its only capability, and its cache is the cachefsd user's. SIGTERM
# stops it. apt remove keeps the configuration, the cache and the user; apt
# purge removes them and leaves nothing of the package behind.
# Then `make install DESTDIR=... PREFIX=/usr` and `make uninstall` with the
# same leave no file (an edited /etc/cachefsd.conf is kept).
#
# "This machine, privately": the test runs in a mount namespace of its own
# with an overlayfs whose lower layer is / and whose upper layer is a tmpfs;
# apt, dpkg, the maintainer scripts and the daemon run chrooted into it, so
# the package, the user and the cache vanish with the namespace and the real
# root is never written. The fresh tmpfs /run in it has no
# /run/systemd/system, so the maintainer scripts call no systemctl.
#
# The .deb is always the release build of the tree (debian/rules), whatever
# build the runner names: the build under test only serves the make install
# part. It is built into the test's temporary directory (make deb
# DEB_DIR=...), not into build/deb.
if [ "${CFS_DEB_NS:-}" != 1 ]; then
	exec unshare --mount --propagation private env CFS_DEB_NS=1 "$0" "$@"
fi
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
for t in dpkg-buildpackage dh lintian setpriv; do
	command -v $t >/dev/null || h_skip "no $t here (make deps-test installs it)"
done
CFS=$H_BUILD/cachefsd
[ -x "$CFS" ] || h_fail "$CFS not built"

# --- build and lint ----------------------------------------------------------
D=$H_TMP/deb
# a make above this test (make test) must not silence or steer the package
# build's own makes
unset MAKEFLAGS MFLAGS MAKELEVEL
make -C "$H_ROOT" deb DEB_DIR="$D" >"$H_TMP/make-deb.log" 2>&1 ||
	h_fail "make deb failed: $(tail -20 "$H_TMP/make-deb.log")"
deb=$(ls "$D"/cachefsd_*.deb 2>/dev/null)
dbg=$(ls "$D"/cachefsd-dbgsym_*.deb 2>/dev/null)
[ -f "$deb" ] || h_fail "make deb made no cachefsd_*.deb: $(ls "$D")"
[ -f "$dbg" ] || h_fail "make deb made no cachefsd-dbgsym_*.deb: $(ls "$D")"
# the release build with dpkg-buildflags: optimised, fortified, no asserts
grep -q -- '-D_FORTIFY_SOURCE=2 .*-O2 .*-fstack-protector-strong.* -c -o build-release/obj/cachefsd/main.o' \
	"$H_TMP/make-deb.log" || h_fail "the package build did not compile with dpkg-buildflags' flags"
grep -q -- '-Werror ' <(grep -- ' -c -o build-release/' "$H_TMP/make-deb.log") &&
	h_fail "the package build compiles with -Werror"
lint=$(lintian --allow-root "$D"/cachefsd_*.changes 2>&1)
grep -E '^[EW]: ' <<<"$lint" && h_fail "lintian: $(grep -cE '^[EW]: ' <<<"$lint") errors or warnings (above)"
h_log "built $(basename "$deb") and $(basename "$dbg"); lintian clean"

# --- this machine, privately ---------------------------------------------
ov=$H_TMP/ov
mkdir -p "$ov"
mount -t tmpfs -o size=1g,mode=0755 tmpfs "$ov" || h_fail "tmpfs for the overlay"
# before $H_TMP is removed: detach the whole tree (lazily, even when busy)
h_atexit "umount -R -l '$ov'"
mkdir "$ov/up" "$ov/work" "$ov/root"
R=$ov/root
mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/up,workdir=$ov/work" "$R" ||
	h_skip "overlayfs with / as its lower layer does not mount here"
mount -t proc proc "$R/proc" || h_fail "proc in the chroot"
mount -t tmpfs -o mode=0755 tmpfs "$R/run" || h_fail "tmpfs /run in the chroot"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp" || h_fail "tmpfs /tmp in the chroot"
# a /dev of its own (the real one is never bound in: nothing here can
# write or remove a device of the host)
mount -t tmpfs -o mode=0755 tmpfs "$R/dev" || h_fail "tmpfs /dev in the chroot"
for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9; do
	IFS=: read -r name maj min <<<"$n"
	mknod -m 0666 "$R/dev/$name" c "$maj" "$min"
done
ln -s /proc/self/fd "$R/dev/fd"
# apt logs the maintainer scripts' output through a pseudo-terminal
mkdir "$R/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$R/dev/pts" || h_fail "devpts in the chroot"
ln -s pts/ptmx "$R/dev/ptmx"
in_root() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }
! in_root getent passwd cachefsd >/dev/null || h_skip "this machine already has a cachefsd user"
! in_root dpkg-query -W cachefsd >/dev/null 2>&1 || h_skip "cachefsd is installed on this machine"
cp "$deb" "$R/tmp/"

# --- apt install -------------------------------------------------------------
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	"/tmp/$(basename "$deb")" >"$H_TMP/apt-install.log" 2>&1 ||
	h_fail "apt-get install: $(tail -15 "$H_TMP/apt-install.log")"
in_root dpkg-query -L cachefsd >"$H_TMP/files" || h_fail "dpkg -L cachefsd"
# the guides, rules and dashboard uncompressed: the manual pages name them
for f in /usr/sbin/cachefsd /usr/sbin/cachefsctl /usr/share/man/man8/cachefsd.8.gz \
	/usr/share/man/man8/cachefsctl.8.gz /usr/share/man/man5/cachefsd.conf.5.gz \
	/lib/systemd/system/cachefsd.service /lib/systemd/system/cachefsd@.service \
	/usr/share/doc/cachefsd/operations.md /usr/share/doc/cachefsd/coherence.md \
	/usr/share/doc/cachefsd/alerts.yml /usr/share/doc/cachefsd/dashboard.json \
	/usr/lib/sysusers.d/cachefsd.conf /etc/cachefsd.conf /usr/share/doc/cachefsd/copyright; do
	grep -qx "$f" "$H_TMP/files" || h_fail "the package lacks $f"
	[ -e "$R$f" ] || h_fail "$f not installed"
done
# hardening=+all: a PIE, bound now, fortified
b=$R/usr/sbin/cachefsd
readelf -h "$b" | grep -q 'DYN (Position-Independent' || h_fail "the packaged daemon is not a PIE"
readelf -d "$b" | grep -q 'BIND_NOW' || h_fail "the packaged daemon is not linked with -z now"
readelf --dyn-syms -W "$b" | grep -q '__[a-z]*_chk@' || h_fail "the packaged daemon is not fortified"
for u in "$R"/lib/systemd/system/cachefsd*.service; do
	! grep -q @SBINDIR@ "$u" || h_fail "@SBINDIR@ left in $(basename "$u")"
done
# shellcheck disable=SC2016 # dpkg-query's ${Conffiles}
in_root dpkg-query -W -f='${Conffiles}\n' cachefsd | grep -q '^ /etc/cachefsd.conf ' ||
	h_fail "/etc/cachefsd.conf is not a conffile"
pw=$(in_root getent passwd cachefsd) || h_fail "no cachefsd user after install"
IFS=: read -r _ _ uid gid _ _ shell <<<"$pw"
[ "$uid" -lt 1000 ] && [ "$uid" -gt 0 ] || h_fail "cachefsd is not a system user: $pw"
[ "$(in_root getent group cachefsd | cut -d: -f3)" = "$gid" ] || h_fail "no cachefsd group of gid $gid"
case $shell in */nologin | */false) ;; *) h_fail "cachefsd can log in: $pw" ;; esac
h_log "installed: user $pw"
# installed disabled, and the default configuration refuses to start until
# the operator sets the upstream
ls "$R"/etc/systemd/system/*.wants/cachefsd* >/dev/null 2>&1 && h_fail "the service was enabled at install"
out=$(in_root /usr/sbin/cachefsd --check-config --config /etc/cachefsd.conf 2>&1) &&
	h_fail "the default configuration passed --check-config without an upstream: $out"
grep -q "key 'upstream': required" <<<"$out" || h_fail "the default configuration: $out"

# --- configure and start it as the unit would --------------------------------
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big.bin" 3000 7
echo "small file" >"$E/small.txt"
# a privileged port nothing listens on: only CAP_NET_BIND_SERVICE can bind it
for ((port = 700; port < 1024; port++)); do
	ss -Htan "sport = :$port" | grep -q . || break
done
mport=$(h_free_port)
# what the operator edits: the upstream, here also the port, the metrics
# port and no rpcbind registration (the test's ganesha has it)
sed -i -e "s|^#upstream = .*|upstream = ${H_URL_up//&/\\&}|" -e "s|^listen = .*|listen = 127.0.0.1:$port|" \
	-e "s|^metrics_listen = .*|metrics_listen = 127.0.0.1:$mport|" -e "s|^register = .*|register = no|" \
	"$R/etc/cachefsd.conf"
out=$(in_root /usr/sbin/cachefsd --check-config --config /etc/cachefsd.conf 2>&1) ||
	h_fail "the edited configuration: $out"

unit=$R/lib/systemd/system/cachefsd.service
# unitval KEY [DEFAULT]: the last KEY= of the installed unit
unitval() { awk -F= -v k="$1" '$1==k{v=substr($0,length(k)+2)} END{print v}' "$unit" | grep . || echo "${2:-}"; }
[ "$(unitval User)" = cachefsd ] || h_fail "the unit does not run as cachefsd: User=$(unitval User)"
[ "$(unitval AmbientCapabilities)" = CAP_NET_BIND_SERVICE ] || h_fail "the unit's AmbientCapabilities=$(unitval AmbientCapabilities)"
cmode=$(unitval CacheDirectoryMode 0755)
rmode=$(unitval RuntimeDirectoryMode 0755)
[ "$(unitval CacheDirectory)" = cachefsd ] || h_fail "the unit's CacheDirectory= is not cachefsd"
install -d -o "$uid" -g "$gid" -m "$cmode" "$R/var/cache/cachefsd"
install -d -o "$uid" -g "$gid" -m "$rmode" "$R/run/cachefsd"
exec_start=$(unitval ExecStart)
exec_start=${exec_start#[-@+!:]}
[ -n "$exec_start" ] || h_fail "the unit has no ExecStart="
h_log "ExecStart: $exec_start"
# shellcheck disable=SC2086 # the unit's command line, split into words as systemd does
in_root setpriv --reuid=cachefsd --regid=cachefsd --init-groups \
	--inh-caps=-all,+net_bind_service --ambient-caps=-all,+net_bind_service \
	--bounding-set=-all,+net_bind_service --no-new-privs -- \
	$exec_start >>"$H_TMP/deb-cachefsd.log" 2>&1 &
starter=$!
h_track cachefsd-deb "$starter"
# Type=forking: the starter exits once the daemon serves; Type=notify or
# simple: the starter is the daemon. Either way the daemon is whoever
# listens on the port.
listener() { ss -Hltnp "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
listening() { [ -n "$(listener)" ]; }
h_wait_until 30 listening ||
	h_fail "the installed daemon does not listen on 127.0.0.1:$port: $(tail -5 "$H_TMP/deb-cachefsd.log")"
pid=$(listener)
[ "$pid" = "$starter" ] || h_track cachefsd-deb-daemon "$pid"
[ "$(readlink "/proc/$pid/exe")" = "$R/usr/sbin/cachefsd" ] ||
	[ "$(readlink "/proc/$pid/root")" = "$R" ] || h_fail "pid $pid on port $port is not the installed daemon"

# --- it serves, as whom, with what ---------------------------------------------
P="nfsport=$port&mountport=$port"
for f in big.bin small.txt big.bin; do
	a=$(nfs-cat "nfs://127.0.0.1$E/$f?$P" | md5sum)
	b=$(md5sum <"$E/$f")
	[ "$a" = "$b" ] || h_fail "nfs-cat $f through the installed daemon: md5 $a, the server's $b"
done
st=/proc/$pid/status
grep -qP "^Uid:\t$uid\t$uid\t$uid\t$uid$" "$st" || h_fail "the daemon's $(grep ^Uid: "$st"), cachefsd is $uid"
grep -qP "^Gid:\t$gid\t$gid\t$gid\t$gid$" "$st" || h_fail "the daemon's $(grep ^Gid: "$st"), cachefsd is $gid"
for c in CapEff CapPrm CapAmb CapBnd; do
	# bit 10: CAP_NET_BIND_SERVICE, and nothing else
	grep -qP "^$c:\t0000000000000400$" "$st" || h_fail "the daemon's $(grep "^$c:" "$st"), want only cap_net_bind_service (400)"
done
grep -qP '^NoNewPrivs:\t1$' "$st" || h_fail "the daemon can gain privileges: $(grep NoNewPrivs "$st")"
[ -n "$(in_root find /var/cache/cachefsd -mindepth 1 -print -quit)" ] || h_fail "the cache directory is empty"
other=$(in_root find /var/cache/cachefsd ! -user cachefsd)
[ -z "$other" ] || h_fail "cache files not the cachefsd user's: $other"
h_log "served as uid $uid gid $gid, capabilities $(grep ^CapEff: "$st" | cut -f2) on port $port"

# --- stop: SIGTERM --------------------------------------------------------
gone() { ! kill -0 "$pid" 2>/dev/null || [ "$(ps -o stat= -p "$pid")" = Z ]; }
kill -TERM "$pid"
h_wait_until 60 gone ||
	h_fail "the daemon still runs 60 s after SIGTERM"
if [ "$pid" = "$starter" ]; then
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || h_fail "the daemon exited $rc on SIGTERM: $(tail -5 "$H_TMP/deb-cachefsd.log")"
fi
not_listening() { ! listening; }
h_wait_until 5 not_listening || h_fail "port $port still listened on after the stop"

# --- apt remove: the configuration, the cache and the user stay ----------------
in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q cachefsd >"$H_TMP/apt-remove.log" 2>&1 ||
	h_fail "apt-get remove: $(tail -15 "$H_TMP/apt-remove.log")"
[ ! -e "$R/usr/sbin/cachefsd" ] || h_fail "apt remove left /usr/sbin/cachefsd"
grep -qxF "upstream = $H_URL_up" "$R/etc/cachefsd.conf" || h_fail "apt remove did not keep the edited /etc/cachefsd.conf"
[ -n "$(in_root find /var/cache/cachefsd -mindepth 1 -print -quit)" ] || h_fail "apt remove emptied the cache"
in_root getent passwd cachefsd >/dev/null || h_fail "apt remove removed the user"

# --- apt purge: nothing of it is left -------------------------------------
in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q cachefsd >"$H_TMP/apt-purge.log" 2>&1 ||
	h_fail "apt-get purge: $(tail -15 "$H_TMP/apt-purge.log")"
left=()
while read -r f; do
	# directories the package shares with others (/usr/sbin, /etc; /lib,
	# a link to usr/lib on a merged-/usr system) stay
	[ -d "$R$f" ] && continue
	[ -e "$R$f" ] || [ -L "$R$f" ] && left+=("$f")
done <"$H_TMP/files"
[ ${#left[@]} = 0 ] || h_fail "apt purge left the package's files: ${left[*]}"
for f in /etc/cachefsd.conf /var/cache/cachefsd /run/cachefsd/cachefsd.pid; do
	[ ! -e "$R$f" ] || h_fail "apt purge left $f"
done
for db in passwd group shadow gshadow; do
	! grep -q '^cachefsd:' "$R/etc/$db" || h_fail "apt purge left cachefsd in /etc/$db"
done
# shellcheck disable=SC2016 # dpkg-query's ${Status}, not the shell's
status=$(in_root dpkg-query -W -f='${Status}' cachefsd 2>/dev/null)
case $status in '' | *not-installed) ;; *) h_fail "dpkg still knows cachefsd: $status" ;; esac
# every path the upper layer (what changed on "this machine") still has with
# cachefsd in its name: none (dpkg's and apt's logs mention it inside)
stray=$(cd "$ov/up" && find . -name '*cachefsd*' | grep -v '^\./run/')
[ -z "$stray" ] || h_fail "after the purge, still on the machine: $stray"
h_log "apt remove kept config, cache and user; apt purge removed them and $(wc -l <"$H_TMP/files") paths"

# --- make install / make uninstall with DESTDIR and PREFIX --------------------
dest=$H_TMP/dest
mk()
{
	make -s -C "$H_ROOT" -o "$CFS" -o "$H_BUILD/cachefsctl" BUILD="$H_BUILD" \
		DESTDIR="$dest" PREFIX=/usr "$@" >>"$H_TMP/make-install.log" 2>&1 ||
		h_fail "make $*: $(tail -5 "$H_TMP/make-install.log")"
}
mk install
for f in usr/sbin/cachefsd usr/sbin/cachefsctl usr/share/man/man8/cachefsd.8 \
	usr/share/man/man8/cachefsctl.8 usr/lib/systemd/system/cachefsd.service \
	usr/lib/sysusers.d/cachefsd.conf etc/cachefsd.conf usr/share/doc/cachefsd/operations.md; do
	[ -f "$dest/$f" ] || h_fail "make install DESTDIR= PREFIX=/usr did not install $f"
done
grep -q '^ExecStart=/usr/sbin/cachefsd ' "$dest/usr/lib/systemd/system/cachefsd.service" ||
	h_fail "the installed unit's ExecStart: $(grep ExecStart= "$dest/usr/lib/systemd/system/cachefsd.service")"
# an edited configuration survives an install and an uninstall
echo "# edited" >>"$dest/etc/cachefsd.conf"
mk install
grep -q '^# edited' "$dest/etc/cachefsd.conf" || h_fail "make install overwrote an edited /etc/cachefsd.conf"
mk uninstall
grep -q '^# edited' "$dest/etc/cachefsd.conf" || h_fail "make uninstall removed an edited /etc/cachefsd.conf"
rm "$dest/etc/cachefsd.conf"
# an unedited one goes
mk install
mk uninstall
files_left=$(find "$dest" ! -type d)
[ -z "$files_left" ] || h_fail "make uninstall left: $files_left"

h_pass "make deb (lintian clean), installed: user cachefsd, conffile, disabled unit; served $port as uid $uid with cap_net_bind_service only; remove kept and purge removed config, cache, user; make install/uninstall DESTDIR PREFIX"
