#!/bin/bash
# Start-up: bad flags, an unreachable upstream and an unusable cache dir
# each give a clear message naming the problem and a non-zero exit, and
# leave nothing half-started (no listener). --help, --version and
# --check-config work. A daemonized start detaches and serves.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CFS=$H_BUILD/cachefsd
[ -x "$CFS" ] || h_fail "$CFS not built"

# expect_fail WANT_TEXT ARGS...: cachefsd must exit non-zero, print WANT_TEXT,
# and not be listening on the test port afterwards.
port=$(h_free_port)
expect_fail()
{
	local want=$1 out rc
	shift
	out=$(timeout 30 "$CFS" --foreground --listen "127.0.0.1:$port" "$@" 2>&1)
	rc=$?
	[ $rc != 0 ] || h_fail "cachefsd $* exited 0; wanted an error containing '$want'"
	[ $rc != 124 ] || h_fail "cachefsd $* did not exit within 30 s"
	grep -qF -- "$want" <<<"$out" || h_fail "cachefsd $*: wanted '$want' in: $out"
	! ss -Hltn "sport = :$port" | grep -q . || h_fail "cachefsd $* left a listener"
	h_log "ok: $want (exit $rc)"
}

# flags and values
expect_fail "unknown flag '--bogus'" --bogus 1
expect_fail "key 'upstream': required" --cache-dir "$H_TMP/c"
expect_fail "key 'cache_dir': required" --upstream nfs://127.0.0.1/x
expect_fail "flag --upstream-connections: 0 is out of range 1..64" \
	--upstream nfs://127.0.0.1/x --cache-dir "$H_TMP/c" --upstream-connections 0
expect_fail "is not an nfs:// URL" --upstream http://127.0.0.1/x --cache-dir "$H_TMP/c"
# config file errors name the file, line and key
printf 'upstream = nfs://127.0.0.1/x\ncache_dir = %s\nupstream_timeout = soon\n' "$H_TMP/c" \
	>"$H_TMP/bad.conf"
expect_fail "$H_TMP/bad.conf:3: upstream_timeout: 'soon' is not a whole number" \
	--config "$H_TMP/bad.conf"

# every mistake of the file and of its include directory (FILE.d/*.conf) at
# once, a line each; cachefilesd's forms are read as cachefilesd's users
# write them, its commands that mean nothing here are refused by name
mkdir -p "$H_TMP/multi.conf.d"
printf 'upstream nfs://127.0.0.1/x\ndir %s\nbrun = lots\ntag mycache\nbstop 2%%\n' "$H_TMP/c" \
	>"$H_TMP/multi.conf"
printf 'bcull 8%%\nbcull = 9%%\n' >"$H_TMP/multi.conf.d/10-a.conf"
out=$("$CFS" --check-config --config "$H_TMP/multi.conf" 2>&1) && h_fail "errors passed: $out"
[ "$(grep -c '^cachefsd: ' <<<"$out")" = 3 ] || h_fail "not 3 error lines: $out"
for want in "$H_TMP/multi.conf:3: brun: 'lots' is not a percentage (a whole number, with or without %)" \
	"$H_TMP/multi.conf:4: tag: cachefilesd's tag has no cachefsd equivalent" \
	"$H_TMP/multi.conf.d/10-a.conf:2: bcull: set again (first on line 1)"; do
	grep -qF "cachefsd: $want" <<<"$out" || h_fail "no '$want' in: $out"
done
h_log "ok: every error of a file and its include directory, one line each"

# --check-config: the effective configuration and where each value came from
mkdir -p "$H_TMP/good.conf.d"
printf 'upstream "%s"\ndir %s\nbrun 20%%\n' nfs://127.0.0.1/x "$H_TMP/c" >"$H_TMP/good.conf"
printf "brun = '25%%'\n" >"$H_TMP/good.conf.d/50-site.conf"
out=$("$CFS" --check-config --config "$H_TMP/good.conf" --upstream-connections 3) ||
	h_fail "--check-config of good.conf: $out"
for re in "^upstream_connections = 3 *# flag --upstream-connections\$" \
	"^brun = 25 *# $H_TMP/good.conf.d/50-site.conf:1\$" \
	"^# $H_TMP/good.conf.d/50-site.conf:1: brun = 25 overrides $H_TMP/good.conf:3 (was 20)\$" \
	"^cache_dir = $H_TMP/c *# $H_TMP/good.conf:2\$" "^bcull = 7 *# default\$"; do
	grep -q -- "$re" <<<"$out" || h_fail "--check-config: no /$re/ in: $out"
done
h_log "ok: --check-config names where each value came from"

# a port out of range (getaddrinfo would bind another one) and a directory
# given as the config file are refused by name, --check-config too
expect_fail "flag --listen: '127.0.0.1:99999' is not ADDR:PORT" \
	--upstream nfs://127.0.0.1/x --cache-dir "$H_TMP/c" --listen 127.0.0.1:99999
expect_fail "$H_TMP: is a directory, not a configuration file" --config "$H_TMP"
for bad in "--listen 127.0.0.1:99999" "--config $H_TMP"; do
	# shellcheck disable=SC2086 # two words
	if out=$("$CFS" --check-config --upstream nfs://127.0.0.1/x --cache-dir "$H_TMP/c" $bad 2>&1); then
		h_fail "--check-config $bad passed: $out"
	fi
	! grep -q "configuration OK" <<<"$out" || h_fail "--check-config $bad: $out"
done

# an upstream nobody listens on: named, quick, non-zero
dead=$(h_free_port)
expect_fail "nfs://127.0.0.1/nowhere?nfsport=$dead&mountport=$dead" \
	--upstream "nfs://127.0.0.1/nowhere?nfsport=$dead&mountport=$dead" \
	--cache-dir "$H_TMP/c" --upstream-timeout 3
expect_fail "cannot connect" \
	--upstream "nfs://127.0.0.1/nowhere?nfsport=$dead&mountport=$dead" \
	--cache-dir "$H_TMP/c" --upstream-timeout 3
expect_fail "cannot resolve upstream host 'no-such-host.invalid'" \
	--upstream "nfs://no-such-host.invalid/x" --cache-dir "$H_TMP/c"

h_start_ganesha up
# an export the server does not have: the MOUNT refusal is reported
expect_fail "refused by the server" \
	--upstream "nfs://127.0.0.1/not/exported?nfsport=$H_NFSPORT_up&mountport=$H_MNTPORT_up" \
	--cache-dir "$H_TMP/c"

# unusable cache dirs
touch "$H_TMP/a-file"
expect_fail "cache_dir $H_TMP/a-file: not a directory" --upstream "$H_URL_up" \
	--cache-dir "$H_TMP/a-file"
expect_fail "cache_dir $H_TMP/a-file/sub: cannot create" --upstream "$H_URL_up" \
	--cache-dir "$H_TMP/a-file/sub"
mkdir -p "$H_TMP/ro"
mount -t tmpfs -o size=1m,ro tmpfs "$H_TMP/ro" 2>/dev/null && {
	expect_fail "cache_dir $H_TMP/ro: not writable" --upstream "$H_URL_up" \
		--cache-dir "$H_TMP/ro"
	umount "$H_TMP/ro"
}
# the listen port is taken
busy=$H_NFSPORT_up
out=$(timeout 30 "$CFS" --foreground --listen "127.0.0.1:$busy" --upstream "$H_URL_up" \
	--cache-dir "$H_TMP/c" 2>&1) && h_fail "cachefsd started on a busy port"
grep -q "cannot listen on 127.0.0.1:$busy" <<<"$out" || h_fail "busy port: $out"

# informational commands
"$CFS" --help | grep -q -- "--cache-dir DIR" || h_fail "--help lacks --cache-dir"
"$CFS" --version | grep -q "^cachefsd " || h_fail "--version"
out=$("$CFS" --check-config --upstream "$H_URL_up" --cache-dir "$H_TMP/c" \
	--upstream-connections 3) || h_fail "--check-config failed: $out"
grep -q "upstream_connections = 3" <<<"$out" || h_fail "--check-config output: $out"

# daemonized: the command returns once serving, the pid file names it
port2=$(h_free_port)
"$CFS" --upstream "$H_URL_up" --listen "127.0.0.1:$port2" --cache-dir "$H_TMP/c" \
	--pid-file "$H_TMP/cfs.pid" || h_fail "daemonized start failed"
pid=$(cat "$H_TMP/cfs.pid")
h_track cachefsd-daemon "$pid"
h_wait_port "$port2" 10 || h_fail "daemonized cachefsd is not listening"
nfs-ls "nfs://127.0.0.1$H_EXPORT_up?nfsport=$port2&mountport=$port2" >/dev/null ||
	h_fail "daemonized cachefsd does not serve"
h_stop_pid "$pid" 10
[ ! -e "$H_TMP/cfs.pid" ] || h_fail "pid file left behind after SIGTERM"

h_pass "start-up errors are named and leave nothing running (a port out of range, a directory as --config); --help/--version/--check-config; daemon mode"
