#!/bin/bash
# 08-stop-races: a stop (SIGINT, as Ctrl-C sends) at any moment is clean
# (docs/reliability.md "Stopping"): RUNS (50) stops, each a cachefsd that
# registered with the test's own rpcbind (own-host.sh: a namespace and /run
# of its own, as 54-rpcbind-races), whose rpcbind is then made to go away
# and which gets SIGINT 0..100 ms after that (each run of a batch its own
# delay). Five batches of BATCH (10) daemons; what goes away:
#   kill    rpcbind SIGKILLed
#   term    rpcbind SIGTERMed (it exits)
#   int     rpcbind SIGINTed, at the same moment as the first daemon's
#           SIGINT (Ctrl-C in `make run` reaches rpcbind too)
#   slow    rpcbind SIGKILLed, with a libnfs client reading a big file
#           through each daemon, the filer slowed (bench/relay at 8 Mbit/s
#           per connection): READs in flight upstream at the SIGINT
#   hung    rpcbind SIGSTOPped (it hangs), the filer (nfs-ganesha)
#           SIGSTOPped too, with the same reads in flight
# Each run: exit status 0 (docs/cachefsd.8 EXIT STATUS), gone within
# STOP_BOUND_MS (5 s) of its SIGINT (rpcbind.c's own bound for the stop's
# talk is 1 s), "shutting down" logged, no assertion and no sanitizer report
# in its log (under build-san a libnfs callback reaching a dead stack frame
# is an ASan report: detect_stack_use_after_return below). Printed: the
# longest stop, how many stops had READs in flight upstream.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 08-stop-races "namespaces, rpcbind" "$@"
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_stack_use_after_return=1

RUNS=${STOP_RUNS:-60}
BATCH=${STOP_BATCH:-10}
# shellcheck disable=SC2206 # a list of words
MODES=(${STOP_MODES:-kill term int slow hung start})
STOP_BOUND_MS=5000
RELAY=$H_BUILD/bench/relay
CTL=$H_BUILD/cachefsctl
[ -x "$RELAY" ] || h_fail "$RELAY not built (make tools)"
command -v nfs-cat >/dev/null || h_fail "no nfs-cat (libnfs-utils)"
! ss -Hltn 'sport = :111' | grep -q . || h_fail "something listens on port 111 in this namespace already"
PROGS=("100003 3" "100005 3" "100005 1" "100024 1" "100021 4")

ms() { local t=${EPOCHREALTIME/./}; echo $((10#$t / 1000)); }


# spawn_daemon NAME UPSTREAM_URL: a cachefsd in the foreground whose exit
# status and time (ms) a wrapper writes to NAME.exit; its pid in PID[NAME]
declare -A PID
spawn_daemon()
{
	local name=$1 url=$2 port log=$H_TMP/$1-cachefsd.log i
	port=$(h_free_port)
	: >"$log"
	rm -f "$H_TMP/$name.exit" "$H_TMP/$name.pid"
	(
		"$H_BUILD/cachefsd" --foreground --upstream "$url" --listen "127.0.0.1:$port" \
			--cache-dir "$H_TMP/$name-cache" --register auto >>"$log" 2>&1 &
		echo $! >"$H_TMP/$name.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc $(ms)" >"$H_TMP/$name.exit"
	) &
	for ((i = 0; i < 100; i++)); do
		[ -s "$H_TMP/$name.pid" ] && break
		sleep 0.01
	done
	PID[$name]=$(cat "$H_TMP/$name.pid") || h_fail "cachefsd $name did not start"
	h_track "cachefsd-$name" "${PID[$name]}"
	printf -v "H_PORT_$name" '%s' "$port"
}
# start_daemon NAME UPSTREAM_URL: spawned, serving and registered
start_daemon()
{
	local name=$1 log=$H_TMP/$1-cachefsd.log i
	spawn_daemon "$@"
	for ((i = 0; i < 1000; i++)); do
		grep -q "info: serving " "$log" && break
		[ ! -e "$H_TMP/$name.exit" ] || h_fail "cachefsd $name exited at its start: $(tail -n 5 "$log")"
		sleep 0.02
	done
	grep -q "info: serving " "$log" || h_fail "cachefsd $name did not serve within 20 s: $(tail -n 5 "$log")"
	grep -q "rpcbind: registered nfs v3" "$log" ||
		h_fail "cachefsd $name did not register: $(grep rpcbind: "$log")"
}

# in_flight NAME: the daemon has READs under way upstream: it has read
# from the filer and has calls without a reply
in_flight()
{
	"$CTL" --cache-dir "$H_TMP/$1-cache" stats --json 2>/dev/null |
		jq -e '.upstream_read_bytes > 0 and .upstream_calls > .upstream_replies' >/dev/null
}

h_rpcbind_fresh
h_start_ganesha up
E=$H_EXPORT_up
URL=$H_URL_up
h_mkdata "$E/big" $((64 * 1024)) 8 # 64 MiB: at 1 MB/s a read outlasts the batch
RP=$(h_free_port)
RM=$(h_free_port)
"$RELAY" --rate 8m --map "127.0.0.1:$RP=127.0.0.1:$H_NFSPORT_up" \
	--map "127.0.0.1:$RM=127.0.0.1:$H_MNTPORT_up" >"$H_TMP/relay.log" 2>&1 &
h_track relay $!
h_wait_port "$RP" 10 || h_fail "relay did not start: $(cat "$H_TMP/relay.log")"
SLOW_URL="nfs://127.0.0.1$E?nfsport=$RP&mountport=$RM"

# stopped NAME WHAT LINE: cachefsd NAME, sent SIGINT at tint[NAME], exited
# 0 within the bound with LINE in its log and no crash; maxdt: the longest
stopped()
{
	local name=$1 what=$2 log=$H_TMP/$1-cachefsd.log j rc tend dt
	for ((j = 0; j < 500; j++)); do
		[ ! -s "$H_TMP/$name.exit" ] || break
		sleep 0.02
	done
	[ -s "$H_TMP/$name.exit" ] || h_fail "$what: cachefsd $name still runs 10 s after SIGINT: $(tail -n 5 "$log")"
	read -r rc tend <"$H_TMP/$name.exit"
	if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|Assertion .* failed" "$log"; then
		grep -B2 -A30 -E "ERROR: (Address|Leak)Sanitizer|runtime error:|Assertion .* failed" "$log" | head -50 >&2
		h_fail "$what: cachefsd $name crashed at its stop (above)"
	fi
	[ "$rc" = 0 ] || h_fail "$what: cachefsd $name exited $rc: $(tail -n 5 "$log")"
	grep -q -- "$3" "$log" || h_fail "$what: cachefsd $name did not log '$3': $(tail -n 5 "$log")"
	dt=$((tend - tint[$name]))
	[ "$dt" -le "$STOP_BOUND_MS" ] ||
		h_fail "$what: cachefsd $name took $dt ms to stop (bound $STOP_BOUND_MS ms): $(grep -A5 "$3" "$log")"
	[ "$dt" -le "$maxdt" ] || maxdt=$dt
}

# case_start B N: N stops during start-up, SIGINT 0..100 ms into a wait
# that would otherwise last: run i even, the filer hung (nfs-ganesha
# SIGSTOPped; upstream_timeout is 15 s) from its MOUNT's connection on;
# odd, rpcbind hung (registration's bound is 2 s) from the control socket's
# line on (the last step before registration; a SIGINT that a loaded
# machine delivers after those 2 s is a stop while serving, and fails the
# test only when it happens to half of them)
case_start()
{
	local b=$1 n=$2 i name pid d j late=0
	for ((i = 0; i < n; i++)); do
		name=b${b}r$i
		d=$((i * 100 / (n > 1 ? n - 1 : 1)))
		[ -n "$H_RPCBIND" ] || h_rpcbind_fresh
		h_rpcbind_unset "${PROGS[@]}"
		if ((i % 2 == 0)); then
			kill -STOP "$H_PID_up"
			spawn_daemon "$name" "$URL"
			pid=${PID[$name]}
			# its MOUNT connected (the kernel accepts for a stopped ganesha)
			for ((j = 0; j < 500; j++)); do
				ss -Htnp "dport = :$H_MNTPORT_up" | grep -q "pid=$pid," && break
				[ ! -e "$H_TMP/$name.exit" ] || break
				sleep 0.02
			done
		else
			kill -STOP "$H_RPCBIND"
			spawn_daemon "$name" "$URL"
			for ((j = 0; j < 500; j++)); do
				grep -q "info: control socket" "$H_TMP/$name-cachefsd.log" && break
				[ ! -e "$H_TMP/$name.exit" ] || break
				sleep 0.02
			done
		fi
		sleep "$(printf '0.%03d' "$d")"
		tint[$name]=$(ms)
		kill -INT "${PID[$name]}"
		if ((i % 2 == 0)); then
			stopped "$name" "start, filer hung" "stopped during start-up: upstream"
			kill -CONT "$H_PID_up"
		elif grep -q "info: serving " "$H_TMP/$name-cachefsd.log"; then
			# a machine so loaded that the SIGINT came after the
			# registration's 2 s: a stop while serving
			late=$((late + 1))
			stopped "$name" "start, rpcbind hung (late)" "shutting down"
			h_rpcbind_kill
		else
			stopped "$name" "start, rpcbind hung" "stopped during start-up: rpcbind"
			h_rpcbind_kill
		fi
	done
	[ "$late" -lt $((n / 2)) ] ||
		h_fail "start: every SIGINT meant for a registration with a hung rpcbind came after it (a loaded machine?)"
}

declare -A tint
maxdt=0
inflight=0
runs=0
for ((b = 0; runs < RUNS; b++)); do
	mode=${MODES[b % ${#MODES[@]}]}
	n=$((RUNS - runs < BATCH ? RUNS - runs : BATCH))
	if [ "$mode" = start ]; then
		case_start "$b" "$n"
		h_log "$mode: $n stops, longest so far $maxdt ms"
		runs=$((runs + n))
		continue
	fi
	[ -n "$H_RPCBIND" ] || h_rpcbind_fresh
	url=$URL
	case $mode in slow | hung) url=$SLOW_URL ;; esac
	names=()
	for ((i = 0; i < n; i++)); do
		names+=("b${b}r$i")
		h_rpcbind_unset "${PROGS[@]}" # each one registers, and talks to rpcbind at its stop
		start_daemon "b${b}r$i" "$url"
	done
	readers=()
	if [ "$mode" = slow ] || [ "$mode" = hung ]; then
		for name in "${names[@]}"; do
			p=H_PORT_$name
			nfs-cat "nfs://127.0.0.1$E/big?nfsport=${!p}&mountport=${!p}" >/dev/null 2>&1 &
			readers+=($!)
			h_track nfs-cat $!
		done
		# READs under way upstream in each
		for name in "${names[@]}"; do
			h_wait_until 20 in_flight "$name" ||
				h_fail "$mode: cachefsd $name has no READ in flight upstream: $("$CTL" --cache-dir "$H_TMP/$name-cache" stats 2>&1 | grep -i upstream)"
		done
		[ "$mode" != hung ] || kill -STOP "$H_PID_up"
	fi
	case $mode in
	kill | slow) kill -KILL "$H_RPCBIND" ;;
	term) kill -TERM "$H_RPCBIND" ;;
	hung) kill -STOP "$H_RPCBIND" ;;
	int) ;; # below, with the first SIGINT
	esac
	t0=$(ms)
	for ((i = 0; i < n; i++)); do
		# run i's delay: spread over 0..100 ms, shifted per batch
		d=$(((i * 100 / (n > 1 ? n - 1 : 1) + b * 7) % 101))
		now=$(ms)
		((t0 + d <= now)) || sleep "$(printf '0.%03d' $((t0 + d - now)))"
		[ "$mode" != int ] || [ "$i" != 0 ] || kill -INT "$H_RPCBIND"
		tint[${names[i]}]=$(ms)
		kill -INT "${PID[${names[i]}]}"
	done
	for name in "${names[@]}"; do
		stopped "$name" "$mode" "shutting down"
	done
	if [ "$mode" = slow ] || [ "$mode" = hung ]; then
		inflight=$((inflight + n))
		[ "$mode" != hung ] || kill -CONT "$H_PID_up"
		for r in "${readers[@]}"; do
			kill -KILL "$r" 2>/dev/null
			wait "$r" 2>/dev/null
		done
	fi
	h_rpcbind_kill
	h_log "$mode: $n stops, longest so far $maxdt ms"
	runs=$((runs + n))
done
h_pass "$RUNS stops by SIGINT 0..100 ms after rpcbind went away or during start-up (${MODES[*]}): each exited 0 within $maxdt ms (bound $STOP_BOUND_MS ms), no assertion, no sanitizer report; $inflight of them with READs in flight upstream"
