#!/bin/bash
# 19-nfs4-lease: cachefsd over an NFSv4.0 filer (nfs-ganesha, lease 4 s) while
# the filer freezes past its lease (SIGSTOP for 12 s, then SIGCONT: the
# client ID expired) and while it restarts (stopped, started again on the
# same port: the client ID is stale). Hard-mount semantics: the NFSv3
# clients of cachefsd see delay, not errors.
#  (1) readers of big files through cachefsd across both: every read
#      completes with the right bytes;
#  (2) writers through cachefsd across both (libnfs: UNSTABLE WRITEs and a
#      COMMIT at fsync; nfscall: FILE_SYNC WRITEs): every write completes
#      without an error and the file on the server is exactly what was
#      written (md5);
#  (3) files created through cachefsd right after a restart, in the grace
#      period: each completes once it ends, with the right bytes.
# Nothing is cached (fresh_guard 3600 with files younger than that): every
# READ goes to the filer.
# shellcheck disable=SC2154,SC2034 # H_* variables are set and read by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PROBE=$H_BUILD/tests/nfs4probe
OP=$H_BUILD/tests/nfsop
CALL=$H_BUILD/tests/nfscall
for t in "$PROBE" "$OP" "$CALL"; do [ -x "$t" ] || h_fail "$t is missing (make tools)"; done

LEASE=4
GRACE=6
H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=$LEASE H_GANESHA_GRACE=$GRACE h_start_ganesha up
E=$H_EXPORT_up
P4=$H_PSEUDO4_up
NF=4
for i in $(seq 1 $NF); do h_mkdata "$E/big$i" 8192 "$((i + 40))"; done
printf -v H_URL_v4 '%s' "nfs://127.0.0.1$P4?nfsport=$H_NFSPORT_up"
printf -v H_EXPORT_v4 '%s' "$P4"
h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 3600
P=$H_PORT_px
PX=("$PROBE" --v3 --host 127.0.0.1 --port "$P" --mountport "$P" --path "$P4" --timeout 300)

# a loop of MODE (read | write) through cachefsd until $H_TMP/stop-MODE
# exists: iterations counted in $H_TMP/MODE.n, failures in $H_TMP/MODE.err
worker()
{
	local mode=$1 n=0 i got
	: >"$H_TMP/$mode.err"
	while [ ! -e "$H_TMP/stop-$mode" ]; do
		for i in $(seq 1 $NF); do
			if [ "$mode" = read ]; then
				"${PX[@]}" --out "$H_TMP/r$i" read "big$i" >/dev/null 2>"$H_TMP/r$i.log" ||
					echo "iteration $n: read big$i failed: $(cat "$H_TMP/r$i.log")" >>"$H_TMP/$mode.err"
				got=$(h_md5 "$H_TMP/r$i")
				[ "$got" = "$(h_md5 "$E/big$i")" ] ||
					echo "iteration $n: read big$i: other bytes" >>"$H_TMP/$mode.err"
			else
				# libnfs: WRITEs, then a COMMIT (fsync)
				"$OP" "$H_URL_px" write "w$i" <"$E/big$i" 2>"$H_TMP/w$i.log" ||
					echo "iteration $n: write w$i failed: $(cat "$H_TMP/w$i.log")" >>"$H_TMP/$mode.err"
				cmp -s "$E/w$i" "$E/big$i" ||
					echo "iteration $n: w$i on the server differs from what was written ($(stat -c %s "$E/w$i") bytes)" >>"$H_TMP/$mode.err"
				# one FILE_SYNC WRITE of 64 KiB of zeros at offset 0
				got=$("$CALL" --port "$P" --export "$P4" --timeout 300 --path "w$i" write 65536 2>&1)
				grep -q '^status NFS3_OK' <<<"$got" ||
					echo "iteration $n: FILE_SYNC write w$i: $got" >>"$H_TMP/$mode.err"
				cmp -s -n 65536 "$E/w$i" /dev/zero && cmp -s -i 65536 "$E/w$i" "$E/big$i" ||
					echo "iteration $n: w$i after the FILE_SYNC write is not what was written" >>"$H_TMP/$mode.err"
			fi
		done
		n=$((n + 1))
		echo "$n" >"$H_TMP/$mode.n"
	done
}

iters() { cat "$H_TMP/$1.n" 2>/dev/null || echo 0; }

# wait_more MODE N: until MODE did N more iterations than now (at most 120 s)
wait_more()
{
	local mode=$1 want=$(($(iters "$1") + $2)) end=$((SECONDS + 120))
	while (($(iters "$mode") < want)) && ((SECONDS < end)); do
		[ -s "$H_TMP/$mode.err" ] && h_fail "$mode: $(head -3 "$H_TMP/$mode.err"); cachefsd: $(tail -5 "$H_LOG_px")"
		sleep 0.2
	done
	(($(iters "$mode") >= want)) || h_fail "$mode: no progress ($(iters "$mode") iterations) $(tail -5 "$H_LOG_px")"
}

# events MODE: ganesha frozen past its lease, then restarted, while the
# MODE loop runs; each must be under way when it happens and go on after
events()
{
	local mode=$1 i0 t0 r0
	worker "$mode" &
	local wpid=$!
	h_track "worker-$mode" "$wpid"
	wait_more "$mode" 1
	i0=$(iters "$mode")
	r0=$(h_stat px upstream_resends)
	kill -STOP "$H_PID_up"
	t0=$SECONDS
	sleep 1
	# the loop's calls are out (or waiting) on the frozen filer
	f=$(($(h_stat px upstream_inflight) + $(h_stat px upstream_waiting)))
	((f >= 1)) || h_fail "$mode: no call out while ganesha was frozen"
	sleep $((LEASE * 3 - 1))
	# the loop waited for the frozen filer
	(($(iters "$mode") <= i0 + 1)) || h_fail "$mode: $(($(iters "$mode") - i0)) iterations while ganesha was frozen"
	kill -CONT "$H_PID_up"
	wait_more "$mode" 2
	grep -q "NFS4ERR_EXPIRED\|NFS4ERR_STALE_CLIENTID" "$H_LOG_px" ||
		h_fail "$mode: the client ID did not expire while ganesha was frozen $((SECONDS - t0)) s"
	h_log "$mode: ganesha frozen $((SECONDS - t0)) s (lease $LEASE s): $f calls were out, the loop went on ($(iters "$mode") iterations, $(($(h_stat px upstream_resends) - r0)) calls re-sent)"
	t0=$SECONDS
	h_stop_ganesha up
	sleep 1.5
	# the loop's next call waits for the filer (a stop lets ganesha answer
	# what it had: nothing may need re-sending then; a big WRITE waits on
	# its own connection, in flight)
	w=$(($(h_stat px upstream_inflight) + $(h_stat px upstream_waiting)))
	((w >= 1)) || h_fail "$mode: no call out or waiting while ganesha was down"
	h_restart_ganesha up
	wait_more "$mode" 2
	h_log "$mode: ganesha restarted (down 1.5 s, grace $GRACE s): $w calls waited, the loop went on after $((SECONDS - t0)) s ($(iters "$mode") iterations)"
	touch "$H_TMP/stop-$mode"
	h_wait_pid "$wpid" "the $mode loop" 120
	[ -s "$H_TMP/$mode.err" ] && h_fail "$mode: $(head -5 "$H_TMP/$mode.err")"
	return 0
}

events read
h_log "ok: reads through cachefsd across an expired lease and a restart: $(iters read) rounds of $NF x 8 MiB, every byte right"
c0=$(h_stat px upstream_calls_COMMIT)
events write
(($(h_stat px upstream_calls_COMMIT) > c0)) || h_fail "the writers' fsync sent no COMMIT upstream"
h_log "ok: writes through cachefsd across an expired lease and a restart: $(iters write) rounds, every file on the server as written"

# (3) files created in the grace period after a restart: their OPENs are
# answered NFS4ERR_GRACE until it ends, and waited out (an OPEN sent again
# with the seqid the GRACE answer used up would be a replay, answered
# GRACE for ever)
h_stop_ganesha up
h_restart_ganesha up
t0=$EPOCHREALTIME
for i in 1 2 3; do
	timeout 60 "$OP" "$H_URL_px" write "g$i" <"$E/big$i" ||
		h_fail "a create in the grace period did not complete within 60 s"
	cmp -s "$E/g$i" "$E/big$i" || h_fail "g$i on the server differs from what was written"
done
h_log "ok: 3 files created through cachefsd in the grace period after a restart, $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b - a}') s"
grep -E "client ID|lease|STALE|EXPIRED" "$H_LOG_px" | tail -5 >&2
h_pass "reads and writes through cachefsd over NFSv4.0 outlived a lease expiry and a restart of the filer with the right bytes and no error"
