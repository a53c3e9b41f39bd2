#!/bin/bash
# cachefsd as systemd runs it (cachefsd/units/), without systemd: the test
# machine cannot run it as PID 1, so the daemon is started with the units'
# own ExecStart= line and the environment systemd gives a Type=notify
# service with a watchdog (NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID,
# JOURNAL_STREAM), and tests/tools/sdnotify listens on the notification
# socket as the manager does. What a user of systemctl would see:
#  0. systemd-analyze verify passes both units without a warning; their
#     security exposure stays at most 2.0;
#  1. READY=1 comes from the process started (no fork) only once it serves:
#     a read through it works at once; STATUS= carries the summary and is
#     refreshed (the hit ratio appears after reads); the log lines carry
#     journald priorities;
#  2. WATCHDOG=1 every half of WATCHDOG_USEC; a stalled event loop (the
#     test-stall hook) stops the pings for longer than the timeout, so
#     systemd would restart the service; they resume after;
#  3. the unit's ExecReload: RELOADING=1 (MONOTONIC_USEC=) then READY=1
#     around a good reload and SIGHUP; a bad configuration makes ExecReload
#     exit 1 and the old configuration keeps serving;
#  4. the template unit: a second instance from cachefsd@.service with its
#     own cache, control socket and metrics port runs beside the first, its
#     ExecReload works; its foreground log lines have date, time and
#     priority; a WATCHDOG_PID of another process gets no pings;
#  5. STOPPING=1 on SIGTERM, exit status 0;
#  6. a start-up failure under a path NOTIFY_SOCKET: no READY=1, a STATUS=
#     naming the reason, from the process started, and a non-zero exit.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CFS=$H_BUILD/cachefsd
SDN=$H_BUILD/tests/sdnotify
NR=$H_BUILD/tests/nfsread
for b in "$CFS" "$H_BUILD/cachefsctl" "$SDN" "$NR"; do
	[ -x "$b" ] || h_fail "$b not built (make all tools)"
done
UNITS=$H_ROOT/cachefsd/units
WD_USEC=2000000 # pings every 1 s

# --- 0. the units ---
command -v systemd-analyze >/dev/null ||
	h_fail "systemd-analyze is missing (Debian package systemd)"
mkdir -p "$H_TMP/units" "$H_TMP/man/man8"
for u in cachefsd.service cachefsd@.service; do
	sed "s|@SBINDIR@|$H_BUILD|g" "$UNITS/$u" >"$H_TMP/units/$u"
done
# Documentation= names man pages: they must be ours, found
cp "$H_ROOT"/docs/*.8 "$H_TMP/man/man8/"
manopt=()
command -v man >/dev/null || manopt=(--man=no)
out=$(cd "$H_TMP/units" && MANPATH=$H_TMP/man systemd-analyze verify "${manopt[@]}" \
	./cachefsd.service ./cachefsd@.service 2>&1) || h_fail "systemd-analyze verify: $out"
[ -z "$out" ] || h_fail "systemd-analyze verify warns: $out"
for u in cachefsd.service cachefsd@.service; do
	out=$(systemd-analyze security --offline=true "$H_TMP/units/$u" 2>&1 | tail -n 1)
	score=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' <<<"$out")
	[ -n "$score" ] || h_fail "systemd-analyze security $u: $out"
	awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' ||
		h_fail "$u: exposure $score, above 2.0 (docs/operations.md says 1.6)"
	h_log "ok: $u verifies; exposure $score"
done

# unit_cmd UNIT KEY [SED-EXPR...]: the unit's KEY= command line, the daemon
# and cachefsctl from the build, systemd's specifiers as the expressions
# replace them
unit_cmd()
{
	local u=$1 k=$2 line e
	shift 2
	line=$(sed -n "s/^$k=//p" "$H_TMP/units/$u")
	[ -n "$line" ] || h_fail "$u has no $k="
	for e in "$@"; do line=$(sed "$e" <<<"$line"); done
	echo "$line"
}

h_start_ganesha up
E=$H_EXPORT_up
for i in 1 2 3; do h_mkdata "$E/f$i" 512 "$i"; done
md5() { md5sum <"$E/$1" | cut -d' ' -f1; }
# rd PORT FILE: read it through the proxy on PORT; its md5
rd() { "$NR" --port "$1" --export "$E" --path "$2" --timeout 10 | md5sum | cut -d' ' -f1; }

# the manager's socket: an abstract one (NOTIFY_SOCKET=@...), per network
# namespace, so a parallel run cannot see it
N=$H_TMP/notify.out
NS="@cachefsd-07-$$"
"$SDN" listen "$NS" "$N" 2>>"$H_TMP/sdnotify.log" &
h_track sdnotify $!
h_wait_until 10 grep -qs LISTENING "$N" || h_fail "the notify listener did not start"

# the lines of the notifications of PID: "MS KEY=VALUE"
msgs() { awk -v p="$1" '$2 == p { t = $1; sub(/^[^ ]+ [^ ]+ /, ""); print t, $0 }' "$N"; }
count() { msgs "$1" | grep -c " $2\$"; }
# wait_msg PID PATTERN N SECONDS: at least N lines of PID match PATTERN
has_msgs() { [ "$(msgs "$1" | grep -cE -- "$2")" -ge "$3" ]; }
wait_msg() { h_wait_until "$4" has_msgs "$1" "$2" "$3"; }

# --- 1. READY once serving ---
P=$(h_free_port)
CONF=$H_TMP/a.conf
conf_a()
{
	{
		echo "upstream = $H_URL_up"
		echo "listen = 127.0.0.1:$P"
		echo "cache_dir = $H_TMP/a-cache"
		echo "fresh_guard = 0"
		echo "readahead = 0"
		printf '%s\n' "$@"
	} >"$CONF"
}
conf_a
LOG=$H_TMP/a-cachefsd.log
: >"$LOG"
read -ra cmd <<<"$(unit_cmd cachefsd.service ExecStart "s|/etc/cachefsd.conf|$CONF|")"
# WATCHDOG_PID is the main pid, as systemd sets it: the subshell's, which
# exec makes the daemon's
(
	export NOTIFY_SOCKET=$NS WATCHDOG_USEC=$WD_USEC WATCHDOG_PID=$BASHPID
	export JOURNAL_STREAM=$(stat -c '%d:%i' "$LOG") CACHEFSD_TEST_HOOKS=1
	exec "${cmd[@]}"
) >>"$LOG" 2>&1 &
A=$!
h_track cachefsd-a "$A"
h_wait_until 60 eval '[ "$(count "$A" READY=1)" -ge 1 ] || ! alive "$A"'
alive "$A" || h_fail "cachefsd (the unit's ExecStart) exited: $(tail -n 5 "$LOG")"
[ "$(count "$A" READY=1)" = 1 ] || h_fail "no READY=1 from the main pid $A: $(cat "$N")"
# at once: no wait for a port, READY=1 means serving
[ "$(rd "$P" f1)" = "$(md5 f1)" ] || h_fail "READY=1 sent, but a read right after failed"
! grep -v " 0 LISTENING" "$N" | awk -v p="$A" '$2 != p' | grep -q . ||
	h_fail "notifications from another pid than the one started (a fork?): $(cat "$N")"
st=$(msgs "$A" | grep -m1 " STATUS=" | cut -d' ' -f2-)
grep -qE "^STATUS=READ hit ratio - of 0; upstream up, [1-9][0-9]*/[0-9]+ connections; cache .* in [0-9]+ files, disk [0-9]+% free(, filling stopped \([^)]*\))?; [0-9]+ clients$" <<<"$st" ||
	h_fail "first STATUS: $st"
# journald priorities: every line "<N>text", no time of our own
grep -q '^<6>serving ' "$LOG" || h_fail "no '<6>serving' line in the journal stream: $(head -n 3 "$LOG")"
! grep -vqE '^<[0-7]>' "$LOG" || h_fail "a line without its priority: $(grep -vE '^<[0-7]>' "$LOG" | head -n 2)"
h_log "ok: READY=1 from pid $A once serving; $st"

# the summary follows the counters: f1 read again is a hit (once its fill
# has landed)
SOCK=$H_TMP/a-cache/control
hit() {
	[ "$(rd "$P" f1)" = "$(md5 f1)" ] || h_fail "f1 read again"
	[ "$("$H_BUILD/cachefsctl" --socket "$SOCK" stats --raw | awk '$1 == "read_hits" { print $2 }')" -gt 0 ]
}
h_wait_until 10 hit || h_fail "no READ hit on f1"
wait_msg "$A" "STATUS=READ hit ratio ([1-9]|0\.[1-9])[0-9.]*% of [0-9]+;" 1 20 ||
	h_fail "no STATUS= with the hit ratio within 20 s: $(msgs "$A" | grep STATUS= | tail -n 2)"
h_log "ok: $(msgs "$A" | grep STATUS= | tail -n 1 | cut -d" " -f2-)"

# --- 2. the watchdog ---
# gaps MS0: the gaps between WATCHDOG=1 pings received after MS0, in ms
gaps() { msgs "$A" | awk -v t0="$1" '$2 == "WATCHDOG=1" && $1 >= t0 { if (n++) print $1 - last; last = $1 }'; }
wait_msg "$A" "WATCHDOG=1" 5 30 || h_fail "fewer than 5 WATCHDOG=1 in 30 s: $(count "$A" WATCHDOG=1)"
g=$(gaps 0 | sort -n | tr '\n' ' ')
# half of WATCHDOG_USEC (1 s): never as late as the timeout, nor a flood
awk -v g="$g" 'BEGIN { n = split(g, a, " "); for (i = 1; i <= n; i++) if (a[i] < 700 || a[i] >= 2000) exit 1 }' ||
	h_fail "WATCHDOG=1 gaps (ms) not about 1000 (WATCHDOG_USEC 2 s): $g"
h_log "ok: WATCHDOG=1 every ~1 s: gaps $g ms"
before=$(count "$A" WATCHDOG=1)
"$SDN" ctl "$SOCK" test-stall 5000 >/dev/null || h_fail "test-stall refused (CACHEFSD_TEST_HOOKS=1)"
# the pings resumed: two more, then the longest gap is the stall's
wait_msg "$A" "WATCHDOG=1" $((before + 2)) 20 || h_fail "no WATCHDOG=1 after the stall"
max=$(gaps 0 | sort -n | tail -n 1)
[ "$max" -ge 4500 ] ||
	h_fail "the loop stalled 5 s but the pings went on (longest gap $max ms): not from the loop"
[ "$max" -gt $((WD_USEC / 1000)) ] || h_fail "the gap $max ms would not trip the watchdog"
grep -q "test hook: the event loop stalls" "$LOG" || h_fail "the stall is not in the log"
h_log "ok: a 5 s stall of the loop: no ping for $max ms (WATCHDOG_USEC 2 s: systemd restarts it)"

# --- 3. reload through the unit's ExecReload ---
read -ra reload <<<"$(unit_cmd cachefsd.service ExecReload "s|/etc/cachefsd.conf|$CONF|")"
conf_a "log_level = debug"
r0=$(count "$A" RELOADING=1)
out=$("${reload[@]}" 2>&1) || h_fail "ExecReload of a good configuration failed: $out"
grep -q "log_level info -> debug" <<<"$out" || h_fail "ExecReload printed: $out"
wait_msg "$A" "READY=1" 2 10 || h_fail "no READY=1 after the reload"
# RELOADING=1 with MONOTONIC_USEC= in one message, then READY=1
seq=$(msgs "$A" | awk '$2 ~ /^(RELOADING|READY|MONOTONIC_USEC)=/ { print $2 }' | sed 's/=[0-9]*$//' | tr '\n' ' ')
[ "$seq" = "READY RELOADING MONOTONIC_USEC READY " ] || h_fail "around a reload: $seq"
msgs "$A" | grep -A1 " RELOADING=1" | grep -qE " MONOTONIC_USEC=[0-9]{4,}$" || h_fail "MONOTONIC_USEC"
kill -HUP "$A"
wait_msg "$A" "READY=1" 3 10 || h_fail "no READY=1 after SIGHUP"
[ "$(count "$A" RELOADING=1)" = $((r0 + 2)) ] || h_fail "SIGHUP sent no RELOADING=1"
h_log "ok: RELOADING=1, READY=1 around ExecReload and SIGHUP"

# bad: a value the file's reader refuses (cachefsctl finds the socket
# through this file), and a rule only the daemon checks
for bad in "upstream_timeout = soon|$CONF:7: upstream_timeout:" \
	"bstop = 50|keys 'bstop' < 'bcull' < 'brun' must hold"; do
	conf_a "log_level = info" "${bad%%|*}"
	out=$("${reload[@]}" 2>&1)
	rc=$?
	[ $rc = 1 ] || h_fail "ExecReload of a bad configuration (${bad%%|*}): exit $rc: $out"
	grep -qF "${bad#*|}" <<<"$out" || h_fail "the refusal does not say '${bad#*|}': $out"
	[ "$(rd "$P" f2)" = "$(md5 f2)" ] || h_fail "no longer serves after a refused reload"
	lvl=$("$H_BUILD/cachefsctl" --socket "$SOCK" config | awk '$1 == "log_level" { print $3 }')
	[ "$lvl" = debug ] || h_fail "the running configuration changed (log_level $lvl)"
	h_log "ok: '${bad%%|*}': ExecReload exit 1 ($(head -n 1 <<<"$out")), old configuration serves"
done
# the first was refused by cachefsctl reading the file, the second by the
# daemon, which ends that reload with READY=1 too: it serves on
wait_msg "$A" "READY=1" 4 10 || h_fail "no READY=1 after the reload the daemon refused"
[ "$(count "$A" RELOADING=1)" = 3 ] || h_fail "RELOADING=1 $(count "$A" RELOADING=1) times, not 3"
conf_a "log_level = debug"

# --- 4. an instance of the template beside it ---
PB=$(h_free_port)
MB=$(h_free_port)
mkdir -p "$H_TMP/etc/cachefsd"
{
	echo "upstream = $H_URL_up"
	echo "listen = 127.0.0.1:$PB"
	echo "metrics_listen = 127.0.0.1:$MB"
	echo "cache_dir = /nonexistent/overridden-by-the-unit"
} >"$H_TMP/etc/cachefsd/b.conf"
# systemd's specifiers: %i the instance, %C /var/cache, %t /run
spec=("s|/etc/cachefsd/|$H_TMP/etc/cachefsd/|g" "s|%i|b|g" "s|%C|$H_TMP/var-cache|g" "s|%t|$H_TMP/run|g")
mkdir -p "$H_TMP/var-cache/cachefsd/b" "$H_TMP/run/cachefsd/b" # CacheDirectory=, RuntimeDirectory=
read -ra cmd <<<"$(unit_cmd cachefsd@.service ExecStart "${spec[@]}")"
LOGB=$H_TMP/b-cachefsd.log
# WATCHDOG_PID of another process (inherited): not for this one
NOTIFY_SOCKET=$NS WATCHDOG_USEC=$WD_USEC WATCHDOG_PID=1 "${cmd[@]}" >>"$LOGB" 2>&1 &
B=$!
h_track cachefsd-b "$B"
h_wait_until 60 eval '[ "$(count "$B" READY=1)" -ge 1 ] || ! alive "$B"'
alive "$B" || h_fail "instance b exited: $(tail -n 5 "$LOGB")"
[ "$(rd "$PB" f3)" = "$(md5 f3)" ] || h_fail "instance b does not serve"
[ "$(rd "$P" f3)" = "$(md5 f3)" ] || h_fail "instance a stopped serving beside b"
[ -S "$H_TMP/run/cachefsd/b/control" ] || h_fail "instance b: no control socket in its RuntimeDirectory"
[ -f "$H_TMP/var-cache/cachefsd/b/index/data.mdb" ] || [ -n "$(ls -A "$H_TMP/var-cache/cachefsd/b")" ] ||
	h_fail "instance b: nothing in its CacheDirectory"
curl -sf "http://127.0.0.1:$MB/metrics" | grep -q '^cachefsd_' || h_fail "instance b: no metrics on $MB"
read -ra reload <<<"$(unit_cmd cachefsd@.service ExecReload "${spec[@]}")"
out=$("${reload[@]}" 2>&1) || h_fail "instance b: ExecReload: $out"
wait_msg "$B" "READY=1" 2 10 || h_fail "instance b: no READY=1 after its reload"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} cachefsd info: serving ' "$LOGB" ||
	h_fail "foreground log lines lack date, time, priority: $(head -n 2 "$LOGB")"
sleep 1.5 # a ping, if it were sent, would have come (every 1 s)
[ "$(count "$B" WATCHDOG=1)" = 0 ] || h_fail "instance b pinged although WATCHDOG_PID named another process"
h_log "ok: instance b from the template: own cache, control socket, metrics port; reload; no pings for another WATCHDOG_PID"

# --- 5. STOPPING=1 and exit 0 ---
for p in "$B" "$A"; do
	kill -TERM "$p"
	h_wait_until 30 eval '! alive "$p"' || h_fail "pid $p did not stop within 30 s"
	wait "$p"
	rc=$?
	[ $rc = 0 ] || h_fail "pid $p exited $rc after SIGTERM"
	[ "$(count "$p" STOPPING=1)" = 1 ] || h_fail "no STOPPING=1 from $p: $(msgs "$p" | tail -n 3)"
done
last=$(msgs "$A" | awk '$2 == "STOPPING=1" { t = $1 } $2 == "WATCHDOG=1" { w = $1 } END { print (w > t) }')
[ "$last" = 0 ] || h_fail "WATCHDOG=1 after STOPPING=1"
h_log "ok: STOPPING=1 on SIGTERM, exit 0"

# --- 6. a start-up that fails, under a path socket ---
N2=$H_TMP/notify2.out
"$SDN" listen "$H_TMP/notify.sock" "$N2" 2>>"$H_TMP/sdnotify.log" &
h_track sdnotify2 $!
h_wait_until 10 grep -qs LISTENING "$N2" || h_fail "the second listener did not start"
dead=$(h_free_port)
# no --foreground: NOTIFY_SOCKET alone keeps it from forking
NOTIFY_SOCKET=$H_TMP/notify.sock "$CFS" --listen "127.0.0.1:$(h_free_port)" \
	--upstream "nfs://127.0.0.1/x?nfsport=$dead&mountport=$dead" --upstream-timeout 2 \
	--cache-dir "$H_TMP/c-cache" >>"$H_TMP/c-cachefsd.log" 2>&1 &
C=$!
h_wait_until 30 eval '! alive "$C"' || h_fail "a failing start did not end within 30 s"
wait "$C"
rc=$?
[ $rc != 0 ] || h_fail "a failing start exited 0"
h_wait_until 5 grep -q "STATUS=start-up failed: .*$dead" "$N2" ||
	h_fail "no STATUS= naming the failure: $(cat "$N2")"
awk -v p="$C" '$3 ~ /^STATUS=/ && $2 != p { exit 1 }' "$N2" || h_fail "STATUS= from another pid than $C (forked?)"
! grep -q "READY=1" "$N2" || h_fail "READY=1 from a daemon that failed to start"
h_log "ok: failed start: exit $rc, $(grep -m1 -o 'STATUS=.*' "$N2")"

h_pass "units verify (exposure $score); READY=1 once serving, STATUS= summary, WATCHDOG=1 at half WATCHDOG_USEC stopped by a stalled loop, RELOADING/READY around reloads, a bad one exits 1 and the old configuration serves, a template instance beside, STOPPING=1 and exit 0, a failed start's STATUS="
