# shellcheck shell=bash
# Test harness: starts rpcbind (if not running), nfs-ganesha (FSAL VFS) on
# loopback ports in a temp dir, or the Linux kernel NFS server in a qemu
# guest, and cachefsd in front of it. Everything it starts is recorded by
# pid and stopped by h_cleanup, which runs on EXIT (also on failure or
# Ctrl-C).
#
# Usage in a test script:
#   . "$(dirname "$0")/../lib/harness.sh"
#   h_init                      # temp dir in $H_TMP, traps
#   h_start_ganesha up          # export dir $H_EXPORT_up, ports in $H_NFSPORT_up
#   h_start_cachefsd px up      # proxy on $H_PORT_px
#   ...
#   h_pass "what was proven"    # or h_fail "why"
#
# Upstreams. Every upstream NAME has H_KIND_<NAME> (ganesha|knfsd|knfsd4),
# H_EXPORT_<NAME> (the export path clients mount), H_NFSPORT_<NAME>,
# H_MNTPORT_<NAME>, H_PID_<NAME> and H_URL_<NAME>
# (nfs://127.0.0.1<export>?nfsport=N&mountport=M).
#   h_start_ganesha NAME [DIR]  nfs-ganesha on the host; the export is the
#                               host directory DIR
#   h_start_knfsd NAME          the kernel nfsd in a qemu guest
#                               (tests/guest/server.sh); the export is an ext4
#                               /export in the guest, reached through port
#                               forwards; skips if no kernel/qemu here
#   h_start_knfsd NAME 4        the same with NFSv3 off (rpc.nfsd -N 3):
#                               the kind knfsd4, an upstream that speaks
#                               only NFSv4 for the proxy
#   h_start_upstream NAME       the kind $H_UPSTREAM names (default ganesha);
#                               tests/run-all.sh sets it per run for a test
#                               whose header says "# upstreams: ganesha knfsd"
#                               (ganesha4: ganesha whose export cachefsd
#                               reaches over NFSv4.0 only: H_UPVERS_<NAME>=4,
#                               H_URL4_<NAME>; H_URL_<NAME> is its NFSv3
#                               export of the same directory)
# An upstream that speaks only NFSv4 also has H_UPVERS_<NAME>=4 and
# H_URL4_<NAME> (nfs://127.0.0.1<pseudo path>?nfsport=N, what cachefsd
# takes for it); h_start_cachefsd then runs it with --upstream-version 4.
# Test data on any upstream ("on the server": ganesha's export directory on
# the host, knfsd's through a direct NFSv3 client as root, tests/tools/nfsop,
# knfsd4's through nfsop's NFSv4.0 mode (the daemon's NFSv4.0 module);
# REL is relative to the export root, "." is the root):
#   h_up_put NAME REL LOCALFILE        create/truncate REL with the file's bytes
#   h_up_overwrite NAME REL LOCALFILE  write the bytes over the start of REL,
#                                      no truncation (size may stay the same)
#   h_up_mkdata NAME REL SIZE_KIB [SEED]  h_mkdata's bytes into REL
#   h_up_mkdir NAME REL                one level, like mkdir
#   h_up_chmod NAME OCTAL REL
#   h_up_chown NAME UID:GID REL
#   h_up_rm NAME REL                   a file or symlink
#   h_up_rmdir NAME REL                an empty directory
#   h_up_cat NAME REL                  the bytes to stdout
#   h_up_md5 NAME REL                  md5 (hex) of the bytes
#   h_up_stat NAME REL                 "SIZE MTIME_S.NS MODE_OCTAL"
#   h_up_ls NAME REL                   names in REL, sorted, no . and ..
# Each returns non-zero on failure (the caller h_fail's with context).

H_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
H_BUILD=${H_BUILD:-$H_ROOT/build}
H_PIDS=()
H_NAMES=()
H_MOUNTS=()
H_ATEXIT=()
H_FAILED=0

h_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

h_fail()
{
	printf 'FAIL: %s: %s\n' "${H_TEST:-test}" "$*" >&2
	H_FAILED=1
	exit 1
}

h_skip()
{
	printf 'SKIP: %s: %s\n' "${H_TEST:-test}" "$*"
	exit 77
}

h_pass()
{
	printf 'ok: %s\n' "$*"
}

# h_need_bench: what a test running bench/bench.sh needs: the bench tools
# built in H_BUILD (h_fail's: `make tools` builds them) and network
# namespaces (h_skip's)
h_need_bench()
{
	local t
	for t in nfsbench nfs4bench nfsput benchgen benchstat relay relayprobe; do
		[ -x "$H_BUILD/bench/$t" ] || h_fail "$H_BUILD/bench/$t not built (make tools)"
	done
	command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || h_skip "no ip netns here"
}

# h_need_qemu WHAT: a kernel image and qemu for the guest WHAT, or SKIP
h_need_qemu()
{
	ls /boot/vmlinuz-* >/dev/null 2>&1 && command -v qemu-system-x86_64 >/dev/null && return 0
	h_skip "no kernel image or qemu for $1"
}

# h_bench_logs_clean TMPDIR: the cachefsd logs of bench runs kept under
# TMPDIR (BENCH_KEEP=1, TMPDIR=TMPDIR) have no sanitizer report; h_fail's
# with the report otherwise (h_cleanup only sees the test's own daemons)
h_bench_logs_clean()
{
	local f
	for f in "$1"/cachefsd-bench.*/*-cachefsd.log; do
		[ -f "$f" ] || continue
		if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$f"; then
			grep -A30 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$f" | head -60 >&2
			h_fail "sanitizer report in the bench's $(basename "$f")"
		fi
	done
}

h_init()
{
	H_TEST=${H_TEST:-$(basename "$0" .sh)}
	[ "$(id -u)" = 0 ] || h_skip "needs root (nfs-ganesha and rpcbind)"
	H_TMP=$(mktemp -d "/tmp/cachefsd-${H_TEST}.XXXXXX")
	trap h_cleanup EXIT
	trap 'exit 130' INT TERM
}

# h_track NAME PID: remember a process we started so cleanup stops it.
h_track()
{
	H_NAMES+=("$1")
	H_PIDS+=("$2")
}

# h_stop_pid PID [TIMEOUT_S]: TERM, wait, KILL. Only pids we started.
h_stop_pid()
{
	local pid=$1 t=${2:-10} i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	# every 0.02 s for the first second (most stop within it), then 0.1 s
	for ((i = 0; i < t * 10 + 40; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		if ((i < 50)); then sleep 0.02; else sleep 0.1; fi
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

h_cleanup()
{
	local rc=$? i
	trap - EXIT
	for ((i = ${#H_PIDS[@]} - 1; i >= 0; i--)); do
		[ -n "${H_PIDS[i]}" ] || continue
		# a filer host's unshare ignores TERM: its host is killed
		case ${H_NAMES[i]} in filer-*) _h_host_kill "${H_PIDS[i]}" ;; esac
		h_stop_pid "${H_PIDS[i]}" 10
	done
	for ((i = ${#H_ATEXIT[@]} - 1; i >= 0; i--)); do
		eval "${H_ATEXIT[i]}" >/dev/null 2>&1
	done
	for m in "${H_MOUNTS[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	# a sanitizer build reports at exit: any report fails the test
	for f in "$H_TMP"/*-cachefsd.log; do
		[ -f "$f" ] || continue
		if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$f"; then
			echo "FAIL: ${H_TEST:-test}: sanitizer report in $f:" >&2
			grep -A40 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$f" | head -80 >&2
			[ "$rc" = 0 ] || [ "$rc" = 77 ] && rc=1
		fi
	done
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -n "${H_TMP:-}" ]; then
		for f in "$H_TMP"/*.log; do
			[ -f "$f" ] || continue
			echo "---- tail of $f ----" >&2
			case "$f" in
			*ganesha.log) grep -v ' :EVENT :' "$f" | tail -n 8 >&2 ;;
			*) tail -n 30 "$f" >&2 ;;
			esac
		done
	fi
	if [ -n "${H_TMP:-}" ] && [ -z "${H_KEEP:-}" ]; then
		rm -rf "$H_TMP"
	fi
	exit "$rc"
}

# h_free_port: print a TCP port nothing listens on (loopback). Ports handed
# out in this run are remembered in a file (callers use $(...), a subshell).
h_free_port()
{
	local p used=${H_TMP:-/tmp}/.ports
	# below the ephemeral range (32768 up): a client that connects in a
	# loop while the daemon starts (costcurve wait-null) can otherwise
	# be given the port itself as its source and connect to itself, and
	# the daemon's bind then fails with "Address already in use"
	for ((;;)); do
		p=$((20000 + RANDOM % 12000))
		# any state (TIME_WAIT too) can keep a port from being bound
		if ! ss -Htan "sport = :$p" | grep -q . && ! grep -qx "$p" "$used" 2>/dev/null; then
			echo "$p" >>"$used"
			echo "$p"
			return
		fi
	done
}

# h_wait_port PORT [TIMEOUT_S]: wait until something listens on 127.0.0.1:PORT.
h_wait_port()
{
	local port=$1 t=${2:-20} i
	for ((i = 0; i < t * 10; i++)); do
		if ss -Hltn "sport = :$port" | grep -q .; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

h_start_rpcbind()
{
	# one listening in this network namespace (not pgrep: that sees the
	# rpcbinds of other namespaces, e.g. tests run in isolate.sh meanwhile)
	if ss -Hltn 'sport = :111' | grep -q .; then
		return 0
	fi
	mkdir -p /run/rpcbind
	rpcbind -f -w >"$H_TMP/rpcbind.log" 2>&1 &
	h_track rpcbind $!
	h_wait_port 111 10 || h_fail "rpcbind did not start"
}

# h_rpcbind_fresh: a new rpcbind in this namespace, started empty (-w would
# restore the registrations the last one saved); its pid in H_RPCBIND. For
# tests that kill and restart it (h_start_rpcbind keeps one running).
H_RPCBIND=
h_rpcbind_fresh()
{
	rm -f /run/rpcbind/*.xdr
	mkdir -p /run/rpcbind
	rpcbind -f -w >>"$H_TMP/rpcbind.log" 2>&1 &
	H_RPCBIND=$!
	h_track rpcbind "$H_RPCBIND"
	h_wait_port 111 10 || h_fail "rpcbind did not start"
}
# h_rpcbind_kill: SIGKILL H_RPCBIND (and SIGCONT: a stopped one dies only
# then), reaped
h_rpcbind_kill()
{
	[ -n "$H_RPCBIND" ] || return 0
	kill -KILL "$H_RPCBIND" 2>/dev/null
	kill -CONT "$H_RPCBIND" 2>/dev/null
	wait "$H_RPCBIND" 2>/dev/null
	H_RPCBIND=
}
# h_rpcbind_unset "PROG VERS"...: those registrations removed (a test's
# leftovers, or a killed daemon's)
h_rpcbind_unset()
{
	local pv p v
	for pv in "$@"; do
		read -r p v <<<"$pv"
		rpcinfo -d "$p" "$v" 2>/dev/null
	done
	return 0
}

# h_ganesha_export DIR NAME [PROTOCOLS [EXPORT_ID [PSEUDO]]]: nfs-ganesha's
# EXPORT block for DIR (pseudo path PSEUDO, default /NAME), RW, no root
# squash, NFSv3 and v4 (PROTOCOLS, default "3, 4") over TCP, AUTH_SYS, and
# H_GANESHA_EXPORT_OPTS inside it when set
h_ganesha_export()
{
	cat <<EOF
EXPORT {
	Export_Id = ${4:-1};
	Path = $1;
	Pseudo = ${5:-/$2};
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = ${3:-3, 4};
	Transports = TCP;
	SecType = sys;
	# host-side changes to the export dir are seen at once, as on a
	# kernel server (the external-writer tests make them)
	Attr_Expiration_Time = 0;
	FSAL { Name = VFS; }
	${H_GANESHA_EXPORT_OPTS:-}
}
EOF
}

# h_start_ganesha NAME [EXPORT_DIR]
# Sets H_EXPORT_<NAME> (the export's real path, what NFSv3 clients mount),
# H_NFSPORT_<NAME>, H_MNTPORT_<NAME>, H_PID_<NAME>, H_URL_<NAME>.
# H_GANESHA_EXPORT_OPTS, when set, is added inside the EXPORT block, e.g.
#   H_GANESHA_EXPORT_OPTS='MaxRead = 65536; PrefRead = 65536;' h_start_ganesha up
# (a filer with a 64 KiB READ limit, like NetApp ONTAP's default).
# H_GANESHA_V4SPLIT=1: the directory is exported twice, NFSv3 only at
# pseudo path /NAME (what MOUNT takes then: Mount_Path_Pseudo; H_URL_<NAME>
# and H_MOUNTPATH_<NAME> name it) and NFSv4.0 only (Minor_Versions = 0) at
# /NAME4 (H_PSEUDO4_<NAME>), with a lease of H_GANESHA_LEASE seconds
# [60] and the v4 recovery records under $H_TMP; no grace period, or
# H_GANESHA_GRACE seconds of it. Unset, nothing changes.
# H_GANESHA_V3PSEUDO=PATH (with the split): the NFSv3 export's pseudo path
# instead of /NAME (ganesha4 gives the directory's own path: MOUNT then
# takes what it takes of a plain ganesha upstream).
h_start_ganesha()
{
	local name=$1 dir=${2:-$H_TMP/$1-export}
	local nfsport mntport nlmport rqport conf core_extra="" v4opts="Graceless = true;" exports
	local mpath=$dir
	h_start_rpcbind
	mkdir -p "$dir"
	nfsport=$(h_free_port)
	mntport=$(h_free_port)
	nlmport=$(h_free_port)
	rqport=$(h_free_port)
	conf=$H_TMP/$name-ganesha.conf
	exports=$(h_ganesha_export "$dir" "$name")
	if [ "${H_GANESHA_V4SPLIT:-}" = 1 ]; then
		mkdir -p "$H_TMP/$name-recov"
		core_extra="Mount_Path_Pseudo = true;"
		v4opts="Graceless = true; Minor_Versions = 0; Lease_Lifetime = ${H_GANESHA_LEASE:-60}; RecoveryRoot = $H_TMP/$name-recov;"
		# H_GANESHA_GRACE=S: a grace period of S seconds after each start
		# (reclaims of the state from before a restart)
		[ -z "${H_GANESHA_GRACE:-}" ] ||
			v4opts="${v4opts/Graceless = true;/Graceless = false; Grace_Period = $H_GANESHA_GRACE;}"
		mpath=${H_GANESHA_V3PSEUDO:-/$name}
		exports="$(h_ganesha_export "$dir" "$name" 3 1 "$mpath")
$(h_ganesha_export "$dir" "$name" 4 2 "/${name}4")"
		printf -v "H_PSEUDO4_$name" '%s' "/${name}4"
	fi
	cat >"$conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $nfsport;
	MNT_Port = $mntport;
	NLM_Port = $nlmport;
	Rquota_Port = $rqport;
	Bind_addr = 127.0.0.1;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Protocols = 3, 4;
	$core_extra
}
NFSV4 { $v4opts }
$exports
EOF
	ganesha.nfsd -F -f "$conf" -L "$H_TMP/$name-ganesha.log" -p "$H_TMP/$name-ganesha.pid" \
		>>"$H_TMP/$name-ganesha.log" 2>&1 &
	local pid=$!
	h_track "ganesha-$name" "$pid"
	h_wait_port "$nfsport" 30 || h_fail "nfs-ganesha $name did not start"
	h_wait_port "$mntport" 10 || h_fail "nfs-ganesha $name mountd did not start"
	printf -v "H_KIND_$name" '%s' ganesha
	printf -v "H_EXPORT_$name" '%s' "$dir"
	printf -v "H_NFSPORT_$name" '%s' "$nfsport"
	printf -v "H_MNTPORT_$name" '%s' "$mntport"
	printf -v "H_PID_$name" '%s' "$pid"
	printf -v "H_CONF_$name" '%s' "$conf"
	printf -v "H_MOUNTPATH_$name" '%s' "$mpath"
	printf -v "H_URL_$name" '%s' "nfs://127.0.0.1$mpath?nfsport=$nfsport&mountport=$mntport"
	# ganesha accepts connections a moment before the export is usable
	local i
	for ((i = 0; i < 200; i++)); do
		nfs-ls "nfs://127.0.0.1$mpath?nfsport=$nfsport&mountport=$mntport" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	h_fail "nfs-ganesha $name does not serve $dir"
}

# h_stop_ganesha NAME: stop that instance (by pid), keep its export dir.
h_stop_ganesha()
{
	local name=$1 pidvar="H_PID_$1"
	h_stop_pid "${!pidvar}" 15
}

# h_restart_ganesha NAME: start the same config again on the same ports.
h_restart_ganesha()
{
	local name=$1 v
	v="H_CONF_$name"; local conf=${!v}
	v="H_NFSPORT_$name"; local nfsport=${!v}
	ganesha.nfsd -F -f "$conf" -L "$H_TMP/$name-ganesha.log" -p "$H_TMP/$name-ganesha.pid" \
		>>"$H_TMP/$name-ganesha.log" 2>&1 &
	local pid=$!
	h_track "ganesha-$name" "$pid"
	printf -v "H_PID_$name" '%s' "$pid"
	h_wait_port "$nfsport" 30 || h_fail "nfs-ganesha $name did not restart"
}

# h_start_knfsd NAME [4]: the Linux kernel NFS server (nfsd) in a qemu guest,
# booted in the background by tests/guest/server.sh on two free host ports
# (its design notes say how). Sets the upstream variables (see the top),
# H_KIND_<NAME>=knfsd, H_MAXBLOCK_<NAME> (nfsd's max_block_size: its rtmax
# and wtmax) and H_SKEW_<NAME> (guest clock minus host clock, ms, measured
# with a file's mtime). Skips if the guest cannot run here. With 4: nfsd
# serves NFSv4 only (server.sh --nfsvers 4), H_KIND_<NAME>=knfsd4,
# H_UPVERS_<NAME>=4, H_URL4_<NAME> (its /export in nfsd's pseudo root),
# and H_URL_<NAME> is that URL with version=4 (tests/tools/nfsop's v4 mode).
h_start_knfsd()
{
	local name=$1 vers=${2:-3} dir=$H_TMP/$1-knfsd nfsport mntport out rc v
	nfsport=$(h_free_port)
	mntport=$(h_free_port)
	out=$(H_BUILD=$H_BUILD "$H_ROOT/tests/guest/server.sh" --dir "$dir" --nfsvers "$vers" \
		--nfsport "$nfsport" --mountport "$mntport" 2>>"$H_TMP/$name-knfsd.log")
	rc=$?
	# the guest's console goes into the logs shown when a test fails
	ln -sf "$dir/console.log" "$H_TMP/$name-knfsd-console.log"
	case $rc in
	0) ;;
	3) h_skip "kernel NFS server guest: $(tail -n 1 "$H_TMP/$name-knfsd.log")" ;;
	*) h_fail "the kernel NFS server guest did not boot (server.sh exit $rc): $(tail -n 3 "$H_TMP/$name-knfsd.log")" ;;
	esac
	local pid url maxblock boot
	pid=$(sed -n 's/^PID=//p' <<<"$out")
	url=$(sed -n 's/^URL=//p' <<<"$out")
	maxblock=$(sed -n 's/^MAXBLOCK=//p' <<<"$out")
	boot=$(sed -n 's/^BOOT_MS=//p' <<<"$out")
	[ -n "$pid" ] && [ -n "$url" ] || h_fail "server.sh printed no PID/URL: $out"
	h_track "knfsd-$name" "$pid"
	printf -v "H_KIND_$name" '%s' knfsd
	if [ "$vers" = 4 ]; then
		printf -v "H_KIND_$name" '%s' knfsd4
		printf -v "H_UPVERS_$name" '%s' 4
		printf -v "H_URL4_$name" '%s' "nfs://127.0.0.1/export?nfsport=$nfsport"
	fi
	printf -v "H_EXPORT_$name" '%s' /export
	printf -v "H_NFSPORT_$name" '%s' "$nfsport"
	printf -v "H_MNTPORT_$name" '%s' "$mntport"
	printf -v "H_PID_$name" '%s' "$pid"
	printf -v "H_URL_$name" '%s' "$url"
	printf -v "H_MAXBLOCK_$name" '%s' "$maxblock"
	# the guest's clock against ours: fresh_guard compares the server's
	# ctime with cachefsd's clock
	local t0 t1 st m skew
	t0=$EPOCHREALTIME
	"$H_BUILD/tests/nfsop" "$url" write .clock-probe </dev/null ||
		h_fail "knfsd $name: cannot create a file on the export"
	t1=$EPOCHREALTIME
	st=$("$H_BUILD/tests/nfsop" "$url" stat .clock-probe) || h_fail "knfsd $name: stat"
	"$H_BUILD/tests/nfsop" "$url" rm .clock-probe || h_fail "knfsd $name: rm"
	m=$(awk '{print $2}' <<<"$st")
	skew=$(awk -v m="$m" -v a="$t0" -v b="$t1" 'BEGIN{printf "%d", (m - (a + b) / 2) * 1000}')
	printf -v "H_SKEW_$name" '%s' "$skew"
	v=${skew#-}
	[ "$v" -le 1000 ] || h_fail "knfsd $name: guest clock is ${skew} ms off the host's"
	h_log "knfsd $name (NFSv$vers): booted in ${boot} ms, max_block_size $maxblock, clock skew ${skew} ms, $url"
}

# h_stop_knfsd NAME: stop the guest (qemu, by pid). Its export is gone.
h_stop_knfsd()
{
	local pidvar="H_PID_$1"
	h_stop_pid "${!pidvar}" 15
}

# h_start_upstream NAME: the upstream kind $H_UPSTREAM names (ganesha, the
# default, knfsd, knfsd4 or ganesha4)
# knfsd4: the kernel nfsd guest with NFSv3 off (h_start_knfsd NAME 4).
# cascade: ganesha behind a regional cachefsd NAMEreg; the test's proxies
# are edges in front of that node (h_start_cachefsd takes H_URL_<NAME>).
# ganesha4: nfs-ganesha whose export the proxy reaches over NFSv4.0 only:
# the directory exported NFSv3-only (at its own path, as plain ganesha's:
# H_URL_<NAME>, the direct-to-filer side of comparisons) and NFSv4.0-only
# at /NAME4 (H_GANESHA_V4SPLIT); H_KIND_<NAME>=ganesha (the test data
# helpers work on the directory), H_UPVERS_<NAME>=4 and H_URL4_<NAME>, which
# h_start_cachefsd gives cachefsd.
h_start_upstream()
{
	case ${H_UPSTREAM:-ganesha} in
	ganesha) h_start_ganesha "$1" ;;
	knfsd) h_start_knfsd "$1" ;;
	ganesha4)
		H_GANESHA_V4SPLIT=1 H_GANESHA_V3PSEUDO=$H_TMP/$1-export h_start_ganesha "$1"
		local p4="H_PSEUDO4_$1" port="H_NFSPORT_$1"
		printf -v "H_UPVERS_$1" '%s' 4
		printf -v "H_URL4_$1" '%s' "nfs://127.0.0.1${!p4}?nfsport=${!port}"
		;;
	knfsd4) h_start_knfsd "$1" 4 ;;
	cascade)
		# ganesha behind a regional cachefsd (NAMEreg): the proxies a
		# test starts in front of NAME are edges of a two-tier cascade
		# (issue 20); H_URL_<NAME> becomes the regional node's, while
		# the test data helpers and direct clients (H_NFSPORT_<NAME>,
		# H_MNTPORT_<NAME>) still reach the filer itself
		h_start_ganesha "$1"
		h_start_cachefsd "${1}reg" "$1" --register no
		local reg="H_URL_${1}reg"
		printf -v "H_URL_$1" '%s' "${!reg}"
		;;
	*) h_fail "H_UPSTREAM=$H_UPSTREAM: not ganesha, knfsd, knfsd4, ganesha4 or cascade" ;;
	esac
}

# _h_up NAME NFSOP-ARGS... -- HOST-CMD...: one h_up_* primitive. knfsd and
# knfsd4: run tests/tools/nfsop NFSOP-ARGS against the upstream's URL (as
# root; knfsd4's has version=4);
# ganesha: runs HOST-CMD in its export directory (REL paths are relative
# to it). stdin and stdout are the caller's in both cases.
_h_up()
{
	local k="H_KIND_$1" e="H_EXPORT_$1" u="H_URL_$1" op=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		op+=("$1")
		shift
	done
	shift
	case ${!k:-} in
	ganesha) (cd "${!e}" && "$@") ;;
	knfsd | knfsd4) "$H_BUILD/tests/nfsop" "${!u}" "${op[@]}" ;;
	*) echo "h_up: not a started upstream" >&2; return 1 ;;
	esac
}

h_up_put() { _h_up "$1" write "$2" -- dd of="$2" status=none <"$3"; }
h_up_overwrite() { _h_up "$1" overwrite "$2" -- dd of="$2" conv=notrunc status=none <"$3"; }
h_up_mkdir() { _h_up "$1" mkdir "$2" -- mkdir -- "$2"; }
h_up_chmod() { _h_up "$1" chmod "$2" "$3" -- chmod "$2" -- "$3"; }
h_up_chown() { _h_up "$1" chown "$2" "$3" -- chown -h "$2" -- "$3"; }
h_up_rm() { _h_up "$1" rm "$2" -- rm -- "$2"; }
h_up_rmdir() { _h_up "$1" rmdir "$2" -- rmdir -- "$2"; }
h_up_cat() { _h_up "$1" cat "$2" -- cat -- "$2"; }
h_up_stat() { _h_up "$1" stat "$2" -- stat -c '%s %.9Y %a' -- "$2"; }
# nfsop ls sorts with strcmp, the C locale's order
h_up_ls() { _h_up "$1" ls "$2" -- find "$2" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort; }

h_up_md5()
{
	local out
	out=$(set -o pipefail; h_up_cat "$1" "$2" | md5sum) || return 1
	echo "${out%% *}"
}

h_up_mkdata()
{
	local tmp rc
	tmp=$(mktemp "$H_TMP/.upmk.XXXXXX")
	h_mkdata "$tmp" "$3" "${4:-1}" && h_up_put "$1" "$2" "$tmp"
	rc=$?
	rm -f "$tmp"
	return $rc
}

# h_start_cachefsd NAME UPSTREAM_NAME [extra cachefsd flags...]
# Sets H_PORT_<NAME>, H_PID_<NAME>, H_CACHE_<NAME>, H_URL_<NAME> (URL of the
# upstream's export through the proxy), H_LOG_<NAME>. H_CACHEFSD_ARGS (words)
# are added to every cachefsd's flags, before the test's own (to try a test
# with other settings, e.g. H_CACHEFSD_ARGS="--chunk-size 128K").
# An upstream with H_UPVERS_<UPSTREAM_NAME>=4 is reached over NFSv4.0 at
# H_URL4_<UPSTREAM_NAME>; clients mount the proxy at H_EXPORT_<UPSTREAM_NAME>
# all the same (--export-path), as they mount the filer over v3.
h_start_cachefsd()
{
	local name=$1 up=$2
	shift 2
	local v port cache log
	v="H_URL_$up"; local upurl=${!v}
	v="H_EXPORT_$up"; local export=${!v}
	local upargs=(--upstream "$upurl")
	v="H_UPVERS_$up"
	if [ "${!v:-}" = 4 ]; then
		v="H_URL4_$up"
		upargs=(--upstream-version 4 --upstream "${!v}" --export-path "$export")
	fi
	v="H_PORT_$name"; port=${!v}
	[ -n "$port" ] || port=$(h_free_port)
	v="H_CACHE_$name"; cache=${!v}
	[ -n "$cache" ] || cache=$H_TMP/$name-cache
	log=$H_TMP/$name-cachefsd.log
	local from=1
	[ -f "$log" ] && from=$(($(stat -c %s "$log") + 1))
	# shellcheck disable=SC2086 # H_CACHEFSD_ARGS is a list of words
	"$H_BUILD/cachefsd" --foreground "${upargs[@]}" --listen "127.0.0.1:$port" \
		--cache-dir "$cache" --stats-file "$H_TMP/$name.stats" ${H_CACHEFSD_ARGS:-} "$@" >>"$log" 2>&1 &
	local pid=$!
	h_track "cachefsd-$name" "$pid"
	printf -v "H_PORT_$name" '%s' "$port"
	printf -v "H_PID_$name" '%s' "$pid"
	printf -v "H_CACHE_$name" '%s' "$cache"
	printf -v "H_LOG_$name" '%s' "$log"
	printf -v "H_URL_$name" '%s' "nfs://127.0.0.1$export?nfsport=$port&mountport=$port"
	local i ready=1
	# started means serving: the "serving" line comes once the listeners
	# are up and the rpcbind registrations are done (where the daemon says
	# READY=1 to systemd); a log level above info has no such line, then
	# listening is all there is to wait for
	[[ " ${H_CACHEFSD_ARGS:-} $* " =~ \ --log-level[\ =](warn|err) ]] && ready=0
	# every 0.02 s for the first second (it listens within a few tens of
	# ms, and some tests start it a hundred times), then every 0.1 s: 20 s
	for ((i = 0; i < 240; i++)); do
		kill -0 "$pid" 2>/dev/null || h_fail "cachefsd $name exited: $(tail -n 5 "$log")"
		if ss -Hltn "sport = :$port" | grep -q .; then
			((ready == 0)) && return 0
			tail -c +"$from" "$log" | grep -q " info: serving " && return 0
		fi
		if ((i < 50)); then sleep 0.02; else sleep 0.1; fi
	done
	h_fail "cachefsd $name did not start serving: $(tail -n 5 "$log")"
}

# h_stop_cachefsd NAME [SIGNAL]
h_stop_cachefsd()
{
	local pidvar="H_PID_$1" sig=${2:-TERM}
	local pid=${!pidvar}
	if [ "$sig" = TERM ]; then
		h_stop_pid "$pid" 10
	else
		kill "-$sig" "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
}

# h_md5 FILE: md5 of a local file
h_md5() { md5sum <"$1" | cut -d' ' -f1; }

# h_mkdata FILE SIZE_KIB [SEED]: deterministic incompressible data
h_mkdata()
{
	local seed=${3:-1}
	(
		set +o pipefail # openssl dies of SIGPIPE when head has enough
		openssl enc -aes-128-ctr -nosalt -pass "pass:$seed" </dev/zero 2>/dev/null |
			head -c $(($2 * 1024)) >"$1"
	)
}

# h_stats NAME: every counter of cachefsd NAME as "name value" lines, fresh
# (SIGUSR1 makes it write <cache_dir>/stats).
h_stats()
{
	local pidv="H_PID_$1" f old new i
	f=$H_TMP/$1.stats
	old=$(awk '$1=="seq"{print $2}' "$f" 2>/dev/null)
	kill -USR1 "${!pidv}" || h_fail "cachefsd $1 is not running"
	for ((i = 0; i < 100; i++)); do
		new=$(awk '$1=="seq"{print $2}' "$f" 2>/dev/null)
		[ -n "$new" ] && [ "$new" != "$old" ] && break
		sleep 0.05
	done
	[ -n "$new" ] && [ "$new" != "$old" ] || h_fail "cachefsd $1 wrote no stats"
	cat "$f"
}

# h_stat NAME KEY: one counter
h_stat()
{
	h_stats "$1" | awk -v k="$2" '$1==k{print $2; found=1} END{if(!found) print "MISSING"}'
}

# h_mount_tmpfs DIR SIZE: a small filesystem, unmounted at cleanup.
h_mount_tmpfs()
{
	mkdir -p "$1"
	mount -t tmpfs -o "size=$2" tmpfs "$1" || return 1
	H_MOUNTS+=("$1")
}

# h_mount_coarse_ext4 DIR: a 64 MiB ext4 with 128-byte inodes (whole-second
# timestamps: a same-second rewrite keeps mtime and ctime) on a loop
# device at DIR, unmounted and detached at cleanup; skips where ext4, mkfs
# or a loop device is missing.
h_mount_coarse_ext4()
{
	local img=$H_TMP/coarse.img dev
	[ -e /sys/fs/ext4 ] || h_skip "no ext4 in this kernel"
	command -v mkfs.ext4 >/dev/null || h_skip "mkfs.ext4 is not installed (e2fsprogs)"
	truncate -s 64M "$img"
	mkfs.ext4 -q -F -I 128 "$img" >/dev/null 2>&1 || h_fail "mkfs.ext4 -I 128"
	dev=$(losetup -f --show "$img") || h_skip "no loop device (losetup -f)"
	h_atexit "losetup -d $dev"
	mkdir -p "$1"
	mount "$dev" "$1" || h_fail "cannot mount $dev"
	h_atexit "umount $1"
}

# alive PID: running and not a zombie (a crashed child of this shell stays a
# zombie until waited for, and kill -0 succeeds on zombies)
alive()
{
	local st
	kill -0 "$1" 2>/dev/null || return 1
	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case "$st" in Z*) return 1 ;; esac
	return 0
}

# h_wait_pid PID WHAT SECONDS: wait (at most SECONDS) for a background
# process of this shell to end; fails naming WHAT if it is still running
h_wait_pid()
{
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		alive "$1" || {
			wait "$1" 2>/dev/null
			return 0
		}
		sleep 0.1
	done
	h_fail "$2 still running after $3 s"
}

# _h_us SECONDS: SECONDS (like 3 or 0.25, or an $EPOCHREALTIME, whose
# point is the locale's) in microseconds
_h_us()
{
	local s=${1%%[.,]*} f=0
	[ "$s" != "$1" ] && f=${1#*[.,]}
	f=${f}000000
	echo $((10#${s:-0} * 1000000 + 10#${f:0:6}))
}

# h_wait_until SECONDS CMD...: run CMD every 0.05 s until it succeeds (0),
# or until SECONDS have passed (1; CMD has been tried once more at the
# deadline). Instead of a fixed sleep: waits only as long as the condition
# takes, and the deadline can be generous.
h_wait_until()
{
	local end
	end=$(($(_h_us "$EPOCHREALTIME") + $(_h_us "$1")))
	shift
	for ((;;)); do
		"$@" && return 0
		[ "$(_h_us "$EPOCHREALTIME")" -lt "$end" ] || break
		sleep 0.05
	done
	"$@"
}

# h_sleep_until T0 SECONDS: sleep until SECONDS after T0 (an
# $EPOCHREALTIME taken at the event), at once if that has passed. For waits
# that are the point (a file must age past fresh_guard, write_quiesce must
# pass): as long as needed from the event, not from after the checks that
# followed it.
h_sleep_until()
{
	local left
	left=$(($(_h_us "$1") + $(_h_us "$2") - $(_h_us "$EPOCHREALTIME")))
	[ "$left" -le 0 ] || sleep "$((left / 1000000)).$(printf %06d $((left % 1000000)))"
}

# h_past_guard T0 [UPSTREAM]: sleep until data written on the upstream
# before T0 (an $EPOCHREALTIME taken after the writes) is past cachefsd's
# default fresh guard while it does not know the filer's clock yet (2 s +
# the 1 s it then assumes, + 0.2 s), plus the upstream's lead when its clock
# runs ahead of ours (H_SKEW_<UPSTREAM>, a knfsd guest's): its first reads
# then store the data. Start cachefsd before it: the start overlaps the wait.
h_past_guard()
{
	local v="H_SKEW_${2:-}" ms=3200
	[ -n "${2:-}" ] && [ "${!v:-0}" -gt 0 ] && ms=$((ms + ${!v}))
	h_sleep_until "$1" "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
}

# h_atexit CMD: run CMD (eval) at cleanup, after our processes are stopped.
h_atexit()
{
	H_ATEXIT+=("$1")
}

# h_netns NAME: a network namespace joined to the host by a veth pair.
# Sets H_NS_<NAME> (the namespace), H_NSADDR_<NAME> (its address) and
# H_HOSTADDR_<NAME> (the host's address on the pair, what it connects to).
h_netns()
{
	local name=$1 ns="cfs$$$1" net a=
	net=$((RANDOM % 200 + 20))
	ip netns add "$ns" || h_fail "ip netns add $ns"
	h_atexit "ip netns del $ns"
	ip link add "h$$$name" type veth peer name "n$$$name" || h_fail "ip link add veth"
	h_atexit "ip link del h$$$name"
	ip link set "n$$$name" netns "$ns" || h_fail "veth into $ns"
	ip addr add "10.199.$net.1/24" dev "h$$$name"
	ip link set "h$$$name" up
	ip netns exec "$ns" ip addr add "10.199.$net.2/24" dev "n$$$name"
	ip netns exec "$ns" ip link set "n$$$name" up
	ip netns exec "$ns" ip link set lo up
	printf -v "H_NS_$name" '%s' "$ns"
	printf -v "H_NSADDR_$name" '%s' "10.199.$net.2"
	printf -v "H_HOSTADDR_$name" '%s' "10.199.$net.1"
	: "$a" # a veth pair is up at once
}

# h_start_filer_host NAME [CLIENT_NAME...]
# A filer with locks on a host of its own: nfs-ganesha with Enable_NLM in
# the network namespace NAME (h_netns NAME), with its own /run, rpcbind and
# nfs-common's rpc.statd (started after rpcbind, as ganesha needs), so that
# nothing reaches its NLM but what a proxy on this host forwards (a client
# on this host would find the filer's NLM through a shared rpcbind and
# bypass the proxy). NSM_Use_Caller_Name = true: the clients behind one
# proxy share its address, and the filer must tell them apart by name (a
# FREE_ALL for one host would otherwise release them all); its statd then
# resolves the CLIENT_NAMEs, which map to this host's side of the veth
# (where the proxy is). Grace period H_FILER_GRACE seconds (default 0:
# graceless). Sets H_NS_/H_NSADDR_/H_HOSTADDR_NAME (h_netns), H_EXPORT_NAME
# (a directory of this host), H_URL_NAME, H_FILERPID_NAME.
# h_filer_host_stop NAME ends the host as a crash does (everything in its
# pid namespace is killed) and returns once none of it is left: no filer
# process that could still answer a call, nothing listening at its address;
# h_filer_host_start NAME [notify] starts it again on the same export and
# statd directory (a reboot); with notify, sm-notify tells the hosts its
# statd monitored before ganesha starts, as at a boot (ganesha's start
# unmonitors them all).
h_start_filer_host()
{
	local name=$1 nc
	shift
	nc=$("$H_ROOT/tests/lib/debs.sh" root "$H_ROOT/build/debs" nfs-common 2>/dev/null) ||
		h_fail "nfs-common is not fetched (make test does it: tests/lib/debs.sh fetch build/debs nfs-common)"
	[ -x "$nc/sbin/rpc.statd" ] || h_fail "$nc/sbin/rpc.statd is missing"
	H_NFSCOMMON=$nc
	h_netns "$name"
	local addr=H_NSADDR_$name host=H_HOSTADDR_$name
	local d=$H_TMP/$name-filer grace=${H_FILER_GRACE:-0} nfsv4
	mkdir -p "$d/export" "$d/statd/sm" "$d/statd/sm.bak" "$d/recov"
	printf '127.0.0.1 localhost\n%s %s\n' "${!addr}" "$name" >"$d/hosts"
	[ $# = 0 ] || printf '%s %s\n' "${!host}" "$*" >>"$d/hosts"
	if [ "$grace" = 0 ]; then
		nfsv4="Graceless = true;"
	else
		nfsv4="Grace_Period = $grace; Lease_Lifetime = $grace;"
	fi
	cat >"$d/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = 2049;
	MNT_Port = 20048;
	NLM_Port = 32803;
	Enable_NLM = true;
	NSM_Use_Caller_Name = true;
	Enable_RQUOTA = false;
	Protocols = 3, 4;
}
NFSV4 { $nfsv4 RecoveryRoot = "$d/recov"; }
NFS_KRB5 { Active_krb5 = false; }
$(h_ganesha_export "$d/export" "$name")
EOF
	# pid 1 of the filer's pid namespace is this shell: when it ends, so
	# does everything started in there
	cat >"$d/host.sh" <<EOF
mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind || exit 1
mount --bind "$d/hosts" /etc/hosts || exit 1
rpcbind -f -w >>"$d/rpcbind.log" 2>&1 &
for i in \$(seq 50); do ss -Hltn 'sport = :111' | grep -q . && break; sleep 0.1; done
[ "\${1:-}" != notify ] || "$nc/sbin/sm-notify" -d -f -P "$d/statd" >>"$d/sm-notify.log" 2>&1
"$nc/sbin/rpc.statd" --no-notify -F -P "$d/statd" >>"$d/statd.log" 2>&1 &
for i in \$(seq 100); do rpcinfo -p 127.0.0.1 2>/dev/null | grep -q '^ *100024 ' && break; sleep 0.05; done
ganesha.nfsd -F -f "$d/ganesha.conf" -L "$d/ganesha.log" -p "$d/ganesha.pid" >>"$d/ganesha.log" 2>&1 &
wait
EOF
	printf -v "H_EXPORT_$name" '%s' "$d/export"
	printf -v "H_URL_$name" '%s' "nfs://${!addr}$d/export?nfsport=2049&mountport=20048"
	h_filer_host_start "$name"
}

h_filer_host_start()
{
	local name=$1 ns=H_NS_$1 url=H_URL_$1 d=$H_TMP/$1-filer i
	ip netns exec "${!ns}" unshare --mount --pid --fork --kill-child --mount-proc \
		bash "$d/host.sh" "${2:-}" >>"$d/host.log" 2>&1 &
	printf -v "H_FILERPID_$name" '%s' "$!"
	h_track "filer-$name" "$!"
	# a generous deadline: rpcbind, statd and ganesha start one after
	# another, slowly on a loaded machine
	i=$((SECONDS + 120))
	while [ "$SECONDS" -lt "$i" ]; do
		nfs-ls "${!url}" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	h_fail "the filer $name does not serve: $(tail -n 5 "$d/ganesha.log")"
}

# _h_host_kill PID: the host run by unshare PID (a child of this shell,
# started with --pid --fork --kill-child) ends as a crashed one does. unshare
# ignores TERM while it waits for its child, the host's init (pid 1 of its
# pid namespace): that init is killed. The kernel kills every other process
# in the namespace with it and lets the init be reaped only once they have
# all exited (their sockets closed), and unshare ends when it has reaped
# it. (Killing unshare instead, whose child then gets SIGKILL as it dies,
# returned while the host's processes were still running: a ganesha could
# still answer a call on a connection that was open.) 0 once unshare has
# ended, 1 if that takes more than 60 s.
_h_host_kill()
{
	local init end=$((SECONDS + 60))
	[ "$(ps -o comm= -p "$1" 2>/dev/null)" = unshare ] || return 0
	init=$(pgrep -P "$1")
	[ -z "$init" ] || kill -KILL "$init" 2>/dev/null
	while [ "$SECONDS" -lt "$end" ]; do
		alive "$1" || {
			wait "$1" 2>/dev/null
			return 0
		}
		sleep 0.1
	done
	return 1
}

h_filer_host_stop()
{
	local name=$1 pv=H_FILERPID_$1 ns=H_NS_$1 left
	_h_host_kill "${!pv}" || h_fail "the filer host $name did not end within 60 s"
	left=$(ip netns exec "${!ns}" ss -Hltn)
	[ -z "$left" ] || h_fail "the filer host $name is down but something listens at its address: $left"
}

