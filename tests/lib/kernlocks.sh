# shellcheck shell=bash
# The two kernel-client guests of the 57-kernel-locks tests (NLM through
# cachefsd to a filer over NFSv3: 57-kernel-locks; over NFSv4.0:
# 57-kernel-locks-nfs4). Guest A takes an fcntl and a flock lock and holds
# them until the filer's ctl file says release1, then probes; guest B tries
# both while A holds them, then another range, then blocks on A's range
# until release2. They report through files on the filer (a.state,
# a.flock, a.probe, b.state, b.lock).
#   kl_start_guests EXPORT   both guests (tests/guest/run.sh --plain, tap0
#                            and tap1 of the test's bridge, $LOCKER added)
#                            mounting cachefsd's port $P at EXPORT
#   wait_file FILE TEXT S    until FILE (on the filer) holds TEXT
#   show                     both guests' output, the proxy's log's end
# shellcheck disable=SC2154 # P, LOCKER and the H_* variables are the test's

# kl_guest NAME TAP IP SCRIPT EXPORT
kl_guest()
{
	"$H_ROOT/tests/guest/run.sh" --plain --net "tap:$2" --ip "$3" --add "$LOCKER:bin/locker" \
		--port "$P" --export "$5" --script "$4" --timeout 400 --out "$H_TMP/$1-console.log" \
		>"$H_TMP/$1.out" 2>&1 &
	h_track "guest-$1" $!
	printf -v "GPID_$1" '%s' "$!"
}

kl_start_guests()
{
	cat >"$H_TMP/a.sh" <<'EOF'
locker flock /mnt/lk2 ex --report /mnt/a.flock --until /mnt/ctl=release1 &
locker fcntl /mnt/lk ex --start 0 --len 100 --report /mnt/a.state --until /mnt/ctl=release1
wait
locker fcntl /mnt/lk ex -n --start 0 --len 100 --wait /mnt/ctl=probe --report /mnt/a.probe
exit 0 # the probe's answer (busy) is the host's to judge, from a.probe
EOF
	cat >"$H_TMP/b.sh" <<'EOF'
echo "B1: $(locker fcntl /mnt/lk ex -n --start 0 --len 100 --wait /mnt/a.state=granted)"
echo "B2: $(locker flock /mnt/lk2 ex -n --wait /mnt/a.flock=granted)"
echo "B3: $(locker fcntl /mnt/lk ex -n --start 200 --len 50 | head -n 1)"
echo waiting >/mnt/b.state
locker fcntl /mnt/lk ex --start 0 --len 100 --report /mnt/b.lock --until /mnt/ctl=release2
EOF
	kl_guest a tap0 10.0.2.15 "$H_TMP/a.sh" "$1"
	kl_guest b tap1 10.0.2.16 "$H_TMP/b.sh" "$1"
}

wait_file()
{
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$GPID_a" 2>/dev/null || kill -0 "$GPID_b" 2>/dev/null || break
		sleep 0.2
	done
	grep -q "$2" "$1" 2>/dev/null
}

show() { echo "A: $(cat "$H_TMP/a.out")"; echo "B: $(cat "$H_TMP/b.out")"; tail -n 5 "$H_LOG_px"; }
