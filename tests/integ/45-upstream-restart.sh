#!/bin/bash
# upstreams: ganesha ganesha4
# 45-upstream-restart: hard-mount behaviour. When nfs-ganesha goes away for
# 2 s and comes back, clients of the proxy see a delay, never an error:
#  (a) nfs-cat of a 48 MiB file across the restart returns the right md5;
#  (b) nfs-ls -R of a 2000-file tree across the restart lists every file;
#  (c) a brand-new client that mounts while ganesha is down waits, and
#      succeeds once ganesha is back.
# The clients are slowed down (a perl reader drains their stdout at a fixed
# rate through a 4 KiB pipe) so that each transfer is still in progress when
# ganesha stops and when it restarts; the test checks that, and that the
# proxy logged "connection lost" and "connection regained" each time.
# libnfs's synchronous API (nfs-cat, nfs-ls) has no RPC timeout by default
# (libnfs 4.0: rpc->timeout = -1), so the clients wait as long as the proxy
# does; every client runs under timeout(1) so none outlives a failed test.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)"
command -v perl >/dev/null || h_skip "needs perl (the slow reader)"
OUTAGE=2       # seconds ganesha stays down
CLIENT_MAX=90  # seconds any client may take


# slow RATE: copy stdin to stdout at RATE bytes/s, through a 4 KiB pipe
# buffer, so that the writer upstream of it cannot run far ahead
slow()
{
	perl -e 'fcntl(STDIN, 1031, 4096); # F_SETPIPE_SZ; best effort
		my ($rate, $buf) = (shift);
		while ((my $n = sysread(STDIN, $buf, 65536)) > 0) {
			for (my $o = 0; $o < $n;) {
				my $w = syswrite(STDOUT, $buf, $n - $o, $o);
				die "slow: $!\n" unless defined $w;
				$o += $w;
			}
			select(undef, undef, undef, $n / $rate);
		}' "$1"
}

# wait_done PID WHAT: wait (at most CLIENT_MAX s) for a background client
wait_done() { h_wait_pid "$1" "$2" "$CLIENT_MAX"; }

nlost() { grep -c 'connection lost' "$H_LOG_px"; }
nregained() { grep -c 'connection regained' "$H_LOG_px"; }

# outage PID WHAT: stop ganesha while client PID is busy, keep it down for
# OUTAGE s, restart it; the client must be running throughout
outage()
{
	local pid=$1 what=$2 lost0 reg0
	lost0=$(nlost)
	reg0=$(nregained)
	alive "$pid" || h_fail "$what finished before ganesha was stopped (too fast to test)"
	h_stop_ganesha up
	alive "$pid" || h_fail "$what finished while ganesha was stopping: the restart was not mid-transfer"
	sleep "$OUTAGE"
	alive "$pid" || h_fail "$what finished while ganesha was down (it should wait): $(cat "$H_TMP/$what.rc" 2>/dev/null)"
	(($(nlost) > lost0)) || h_fail "$what: cachefsd did not log 'connection lost' while ganesha was down"
	h_restart_ganesha up
	alive "$pid" || h_fail "$what finished before ganesha was back"
	wait_done "$pid" "$what"
	(($(nregained) > reg0)) || h_fail "$what: cachefsd did not log 'connection regained'"
}

h_start_upstream up
E=$H_EXPORT_up
h_mkdata "$E/big48" 49152 5
want_md5=$(h_md5 "$E/big48")
for d in $(seq -w 1 40); do
	mkdir -p "$E/tree/dir-$d"
	for f in $(seq -w 1 50); do
		echo "$d $f" >"$E/tree/dir-$d/small-file-number-$f.txt"
	done
done
h_start_cachefsd px up
P="nfsport=$H_PORT_px&mountport=$H_PORT_px"
U="nfs://127.0.0.1$E"

# (a) a 48 MiB read across the restart, at ~12 MB/s (about 4 s)
t0=$SECONDS
(
	timeout "$CLIENT_MAX" nfs-cat "$U/big48?$P" | slow 12000000 | md5sum >"$H_TMP/cat.md5"
	echo "${PIPESTATUS[*]}" >"$H_TMP/cat.rc"
) &
cat_pid=$!
sleep 0.3
outage "$cat_pid" cat
[ "$(cat "$H_TMP/cat.rc")" = "0 0 0" ] ||
	h_fail "nfs-cat across the restart failed (exit statuses nfs-cat/slow/md5sum: $(cat "$H_TMP/cat.rc"))"
got=$(cut -d' ' -f1 "$H_TMP/cat.md5")
[ "$got" = "$want_md5" ] || h_fail "nfs-cat across the restart: md5 $got, want $want_md5"
ta=$((SECONDS - t0))
h_log "(a) nfs-cat of 48 MiB across a ${OUTAGE}s outage: md5 ok (${ta}s)"

# (b) nfs-ls -R of 2000 files across the restart, output at ~25 kB/s (~6 s)
t0=$SECONDS
(
	timeout "$CLIENT_MAX" nfs-ls -R "$U/tree?$P" | slow 25000 >"$H_TMP/ls.out"
	echo "${PIPESTATUS[*]}" >"$H_TMP/ls.rc"
) &
ls_pid=$!
sleep 0.5
outage "$ls_pid" ls
[ "$(cat "$H_TMP/ls.rc")" = "0 0" ] ||
	h_fail "nfs-ls -R across the restart failed (exit statuses nfs-ls/slow: $(cat "$H_TMP/ls.rc")): $(tail -n 3 "$H_TMP/ls.out")"
got=$(awk '/^-/ {print $NF}' "$H_TMP/ls.out" | sort)
want=$(cd "$E/tree" && find . -type f -printf '%P\n' | sort)
[ "$(wc -l <<<"$want")" = 2000 ] || h_fail "test tree has $(wc -l <<<"$want") files, not 2000"
[ "$got" = "$want" ] || h_fail "nfs-ls -R across the restart listed $(wc -l <<<"$got") files, want 2000: $(diff <(echo "$want") <(echo "$got") | head -n 5)"
tb=$((SECONDS - t0))
h_log "(b) nfs-ls -R across a ${OUTAGE}s outage: all 2000 files listed (${tb}s)"

# (c) a new client mounts while ganesha is down: it waits, then succeeds
t0=$SECONDS
lost0=$(nlost)
reg0=$(nregained)
h_stop_ganesha up
(
	timeout "$CLIENT_MAX" nfs-ls "$U?$P" >"$H_TMP/new.out" 2>&1
	echo $? >"$H_TMP/new.rc"
) &
new_pid=$!
sleep "$OUTAGE"
alive "$new_pid" || h_fail "a new client's nfs-ls finished while ganesha was down (exit $(cat "$H_TMP/new.rc")): $(cat "$H_TMP/new.out")"
h_restart_ganesha up
wait_done "$new_pid" "new client's nfs-ls"
[ "$(cat "$H_TMP/new.rc")" = 0 ] ||
	h_fail "a new client's nfs-ls during the outage failed (exit $(cat "$H_TMP/new.rc")): $(cat "$H_TMP/new.out")"
if ! grep -q ' big48$' "$H_TMP/new.out" || ! grep -q ' tree$' "$H_TMP/new.out"; then
	h_fail "a new client's nfs-ls does not list the export: $(cat "$H_TMP/new.out")"
fi
(($(nlost) > lost0 && $(nregained) > reg0)) ||
	h_fail "(c): cachefsd did not log 'connection lost' and 'connection regained'"
tc=$((SECONDS - t0))
h_log "(c) new client's mount during the outage waited and succeeded (${tc}s)"

alive "$H_PID_px" || h_fail "cachefsd died: $(tail -n 5 "$H_LOG_px")"
h_pass "3 upstream restarts (${OUTAGE}s down each): 48 MiB nfs-cat md5 ok (${ta}s), nfs-ls -R lists all 2000 files (${tb}s), a mount during the outage waits and succeeds (${tc}s); cachefsd logged $(nlost) losses, $(nregained) regains"
