#!/bin/bash
# 54-rpcbind-races: an rpcbind that dies, hangs or is gone while cachefsd
# talks to it (cachefsd/ops/rpcbind.c). Its own "host" (own-host.sh) with its
# own rpcbind, as 54-rpcbind. Under the sanitizer build (build-san) a
# libnfs callback that reaches a dead stack frame is an ASan report
# (detect_stack_use_after_return is set below); in the debug build it is
# the CALL_MAGIC assertion.
#  - stops: RACE_STOPS (50) each with rpcbind SIGKILLed at the same moment
#    as the SIGTERM to cachefsd, SIGSTOPped (hung) before it, and gone (not
#    running). Every stop exits 0 with no sanitizer report or assertion,
#    done with rpcbind within the stop bound (rpcbind.c STOP_MS, 1 s, plus
#    slack; timed by the daemon's log, from "shutting down" to its last
#    rpcbind line, so a loaded machine's slow exits do not count); a stop
#    never logs "unregistered" unless rpcbind answered, and with a hung
#    rpcbind the registrations it names as not unregistered are still there
#    once rpcbind resumes. Killed: how many stops lost rpcbind during their
#    exchanges (the race), before or after them, is printed.
#    The stops run RACE_BATCH (10) cachefsd at a time: each registers (the
#    earlier ones' registrations are removed with rpcinfo -d first, so that
#    every instance holds registrations and talks to rpcbind when it stops).
#  - a start with a hung rpcbind: register = auto serves within the start
#    bound (START_MS, 2 s, plus slack, from the control socket's line, the
#    step before registration, to "serving") with one log line saying nothing is
#    registered and which port options clients need; register = yes exits 1
#    with a message naming rpcbind and the fix.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 54-rpcbind-races "namespaces, rpcbind" "$@"
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_stack_use_after_return=1

STOPS=${RACE_STOPS:-50}
CASES=${RACE_CASES:-killed hung gone start} # a subset, to look at one
BATCH=${RACE_BATCH:-10}
# the bounds (rpcbind.c) as the daemon's own log times them, plus slack for
# a loaded machine
STOP_BOUND_MS=1500  # STOP_MS (1 s): from "shutting down" to its rpcbind line
START_BOUND_MS=2500 # START_MS (2 s): from the control socket line (the last
                    # step before registration) to "serving" or the failure
PROGS=("100003 3" "100005 3" "100005 1" "100024 1" "100021 4")
! ss -Hltn 'sport = :111' | grep -q . || h_fail "something listens on port 111 in this namespace already"

ms() { echo $(($(date +%s%N) / 1000000)); }
# at FILE PATTERN [after]: the time of day in ms of the first line matching
# PATTERN in a cachefsd log (its lines start YYYY-MM-DD HH:MM:SS.mmm); with "last",
# of the last one
at()
{
	local t
	if [ "${3:-}" = last ]; then
		t=$(grep -- "$2" "$1" | tail -n 1 | cut -d' ' -f2)
	else
		t=$(grep -m1 -- "$2" "$1" | cut -d' ' -f2)
	fi
	[[ $t =~ ^([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})$ ]] || return 1
	echo $(((10#${BASH_REMATCH[1]} * 3600 + 10#${BASH_REMATCH[2]} * 60 + 10#${BASH_REMATCH[3]}) * 1000 + 10#${BASH_REMATCH[4]}))
}
# span FILE FROM TO: ms between the first FROM line and the last TO line
span()
{
	local a b
	a=$(at "$1" "$2") && b=$(at "$1" "$3" last) || return 1
	[ "$b" -ge "$a" ] || b=$((b + 86400000)) # past midnight
	echo $((b - a))
}
port() { rpcinfo -p 127.0.0.1 | awk -v p="$1" -v v="$2" '$1==p && $2==v && $3=="tcp" {print $4}'; }
# wait_line NAME PATTERN SECONDS: the line appears in cachefsd NAME's log
wait_line()
{
	local log=$H_TMP/$1-cachefsd.log i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -q -- "$2" "$log" && return 0
		alive "$(pid_of "$1")" || break
		sleep 0.05
	done
	h_fail "cachefsd $1: no '$2' in its log: $(tail -n 5 "$log")"
}
pid_of() { local v="H_PID_$1"; echo "${!v}"; }
# clean NAME WHAT: no sanitizer report, no assertion in the log
clean()
{
	local log=$H_TMP/$1-cachefsd.log
	if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|Assertion .* failed" "$log"; then
		grep -B2 -A30 -E "ERROR: (Address|Leak)Sanitizer|runtime error:|Assertion .* failed" "$log" | head -50 >&2
		h_fail "$2: cachefsd $1 crashed (above)"
	fi
}

h_rpcbind_fresh
h_start_ganesha up
# the filer's registrations go, so that each cachefsd registers all of its own
h_rpcbind_unset "${PROGS[@]}"
[ -z "$(port 100005 3)" ] || h_fail "cannot remove ganesha's registrations"

# batch N: N cachefsd that each registered (the previous one's registrations
# removed first); c$((N-1)) holds the registrations at the end
batch()
{
	local i name
	for ((i = 0; i < $1; i++)); do
		name=c$i
		: >"$H_TMP/$name-cachefsd.log" # a log per stop
		h_rpcbind_unset "${PROGS[@]}"
		h_start_cachefsd "$name" up --register auto
		wait_line "$name" "info: serving " 20
		grep -q "rpcbind: registered nfs v3" "$H_TMP/$name-cachefsd.log" ||
			h_fail "cachefsd $name did not register: $(grep rpcbind: "$H_TMP/$name-cachefsd.log")"
	done
}
# stopped N WHAT: each of the N exits 0, logs no crash, and is done with
# rpcbind within the bound; maxdt: the longest it took
stopped()
{
	local n=$1 what=$2 i j name pid rc log d
	for ((i = 0; i < n; i++)); do
		name=c$i
		pid=$(pid_of "$name")
		for ((j = 0; j < 400; j++)); do
			alive "$pid" || break
			sleep 0.05
		done
		! alive "$pid" || h_fail "$what: cachefsd $name still runs 20 s after SIGTERM"
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		clean "$name" "$what"
		[ "$rc" = 0 ] || h_fail "$what: cachefsd $name exited $rc: $(tail -n 3 "$H_TMP/$name-cachefsd.log")"
		log=$H_TMP/$name-cachefsd.log
		grep -q "shutting down" "$log" || h_fail "$what: cachefsd $name did not log its stop"
		# its last word on rpcbind: unregistered, not unregistered, or
		# (when each registration had been taken over) a lookup's
		if d=$(span "$log" "shutting down" "rpcbind: .*unregistered\|left alone"); then
			[ "$d" -le "$STOP_BOUND_MS" ] ||
				h_fail "$what: cachefsd $name took $d ms over rpcbind at its stop (bound $STOP_BOUND_MS ms): $(grep -A3 'shutting down' "$log")"
			[ "$d" -le "$maxdt" ] || maxdt=$d
		fi
	done
}
signal_all() # SIG N
{
	local i
	for ((i = 0; i < $2; i++)); do
		kill "-$1" "$(pid_of "c$i")"
	done
}

case_killed()
{
	local before=0 during=0 answered=0 log
	maxdt=0
	for ((done_ = 0; done_ < STOPS; done_ += BATCH)); do
		n=$((STOPS - done_ < BATCH ? STOPS - done_ : BATCH))
		[ -n "$H_RPCBIND" ] || h_rpcbind_fresh
		batch "$n"
		signal_all TERM "$n"
		kill -KILL "$H_RPCBIND"
		stopped "$n" "rpcbind killed at the stop"
		h_rpcbind_kill
		# how each stop ended: rpcbind answered everything, was gone
		# before the connect, or died during the exchanges
		for ((i = 0; i < n; i++)); do
			log=$H_TMP/c$i-cachefsd.log
			if grep -q "not unregistered (nothing listens there)" "$log"; then
				before=$((before + 1))
			elif grep -q "not unregistered" "$log"; then
				during=$((during + 1))
			else
				answered=$((answered + 1))
			fi
		done
	done
	h_pass "$STOPS stops with rpcbind SIGKILLed at the same moment: each exited 0, no crash, done with rpcbind within $maxdt ms; rpcbind died during the exchanges in $during, before them in $before, after them in $answered"
}

case_hung()
{
	maxdt=0
	for ((done_ = 0; done_ < STOPS; done_ += BATCH)); do
		n=$((STOPS - done_ < BATCH ? STOPS - done_ : BATCH))
		[ -n "$H_RPCBIND" ] || h_rpcbind_fresh
		batch "$n"
		kill -STOP "$H_RPCBIND"
		signal_all TERM "$n"
		stopped "$n" "rpcbind hung at the stop"
		kill -CONT "$H_RPCBIND"
		last=c$((n - 1))
		for ((i = 0; i < n; i++)); do
			! grep -q "rpcbind: unregistered" "$H_TMP/c$i-cachefsd.log" ||
				h_fail "rpcbind hung: cachefsd c$i says it unregistered: $(grep rpcbind: "$H_TMP/c$i-cachefsd.log")"
		done
		grep -q "rpcbind: .*not unregistered" "$H_TMP/$last-cachefsd.log" ||
			h_fail "rpcbind hung: cachefsd $last does not say its registrations stay: $(grep rpcbind: "$H_TMP/$last-cachefsd.log")"
		[ "$(port 100003 3)" = "$(eval echo "\$H_PORT_$last")" ] ||
			h_fail "rpcbind hung: $last's NFS v3 registration is not there after all: $(rpcinfo -p 127.0.0.1)"
	done
	h_pass "$STOPS stops with rpcbind hung: each exited 0, done with rpcbind within $maxdt ms, none claimed to unregister, the registrations said to stay are there"
}

case_gone()
{
	maxdt=0
	for ((done_ = 0; done_ < STOPS; done_ += BATCH)); do
		n=$((STOPS - done_ < BATCH ? STOPS - done_ : BATCH))
		[ -n "$H_RPCBIND" ] || h_rpcbind_fresh
		batch "$n"
		h_rpcbind_kill
		signal_all TERM "$n"
		stopped "$n" "rpcbind gone at the stop"
		for ((i = 0; i < n; i++)); do
			! grep -q "rpcbind: unregistered" "$H_TMP/c$i-cachefsd.log" ||
				h_fail "rpcbind gone: cachefsd c$i says it unregistered"
		done
	done
	h_pass "$STOPS stops with rpcbind gone: each exited 0, done with rpcbind within $maxdt ms, none claimed to unregister"
}

case_start()
{
	[ -n "$H_RPCBIND" ] || h_rpcbind_fresh
	kill -STOP "$H_RPCBIND"
	: >"$H_TMP/hung-cachefsd.log"
	h_start_cachefsd hung up --register auto
	wait_line hung "info: serving " 20
	clean hung "a start with rpcbind hung"
	dt=$(span "$H_TMP/hung-cachefsd.log" "info: control socket" "info: serving ") ||
		h_fail "no control socket or serving line: $(cat "$H_TMP/hung-cachefsd.log")"
	[ "$dt" -le "$START_BOUND_MS" ] || h_fail "register = auto with rpcbind hung served $dt ms after its control socket (bound $START_BOUND_MS ms)"
	n=$(grep -c "rpcbind: " "$H_TMP/hung-cachefsd.log")
	line=$(grep "rpcbind: " "$H_TMP/hung-cachefsd.log")
	[ "$n" = 1 ] || h_fail "register = auto with rpcbind hung: $n rpcbind lines, not one: $line"
	printf '%s\n' "$line" | grep -q "nothing registered; clients need -o port=$H_PORT_hung,mountport=$H_PORT_hung" ||
		h_fail "register = auto with rpcbind hung: the line does not say clients need port options: $line"
	printf 'through the proxy\n' >"$H_EXPORT_up/hello"
	got=$(nfs-cat "nfs://127.0.0.1$H_EXPORT_up/hello?nfsport=$H_PORT_hung&mountport=$H_PORT_hung") ||
		h_fail "register = auto with rpcbind hung does not serve"
	[ "$got" = "through the proxy" ] || h_fail "read '$got' through the proxy"
	h_pass "register = auto with rpcbind hung: serves $dt ms after its last step before registration, one line: ${line#*rpcbind: }"
	h_stop_cachefsd hung
	clean hung "a stop after a start with rpcbind hung"

	rc=0
	timeout 60 "$H_BUILD/cachefsd" --foreground --upstream "$H_URL_up" --listen "127.0.0.1:$(h_free_port)" \
		--cache-dir "$H_TMP/yes-cache" --register yes >"$H_TMP/yes-cachefsd.log" 2>&1 || rc=$?
	# the failure line has no time: the exit's, with the teardown's slack
	printf '%s cachefsd exited\n' "$(date '+%F %H:%M:%S.%3N')" >>"$H_TMP/yes-cachefsd.log"
	clean yes "register = yes with rpcbind hung"
	[ "$rc" = 1 ] || h_fail "register = yes with rpcbind hung: exit status $rc, not 1: $(tail -n 3 "$H_TMP/yes-cachefsd.log")"
	dt=$(span "$H_TMP/yes-cachefsd.log" "info: control socket" " cachefsd exited") ||
		h_fail "register = yes with rpcbind hung: no control socket line: $(cat "$H_TMP/yes-cachefsd.log")"
	[ "$dt" -le $((START_BOUND_MS + 1000)) ] || h_fail "register = yes with rpcbind hung: exited $dt ms after its control socket (bound $((START_BOUND_MS + 1000)) ms)"
	msg=$(grep -o "register = yes: .*" "$H_TMP/yes-cachefsd.log" | head -n 1)
	printf '%s\n' "$msg" | grep -q "rpcbind at 127.0.0.1:111 .*set register = auto or no" ||
		h_fail "register = yes with rpcbind hung: no clear message: $(tail -n 3 "$H_TMP/yes-cachefsd.log")"
	h_pass "register = yes with rpcbind hung: exit status 1, $dt ms after its last step before registration (exit included): $msg"
	h_rpcbind_kill
}

for c in $CASES; do
	t0_case=$(ms)
	"case_$c"
	h_log "$c: $((($(ms) - t0_case) / 1000)) s"
done
