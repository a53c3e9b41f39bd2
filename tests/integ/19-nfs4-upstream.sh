#!/bin/bash
# 19-nfs4-upstream: the NFSv4.0 upstream module (cachefsd/upstream/nfs4.c,
# not wired into the daemon yet), run by tests/tools/nfs4probe against
# nfs-ganesha exporting one directory twice: NFSv4.0 only (Protocols = 4,
# Minor_Versions = 0) and NFSv3 only. What the module sees over v4 is what
# plain NFSv3 sees of the same directory:
#  (a) the v4 export takes no MOUNT, the v3 one is not in the pseudo-fs;
#  (b) attributes (type, mode, nlink, uid, gid, size, used, fileid, mtime,
#      ctime) of files, a symlink, a fifo and directories, READLINK, ACCESS
#      as root and as uid 1000, a 700-entry
#      listing read in 4 KiB pages (names and per-entry attributes, "." and
#      ".."), and the bytes of files of 0 and 1 bytes, 5 KiB and 3 MiB + 1 byte;
#      every v4 answer carries the change attribute;
#  (c) owners: numeric where ganesha sends numbers, user@domain mapped by
#      name, and nobody when the domain does not match --domain;
#  (d) the client ID stays valid across more than 2 leases (RENEWs);
#  (e) ganesha restarted under a run of calls: the calls wait, the client
#      ID is established again, every call succeeds, the next ones too.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PROBE=$H_BUILD/tests/nfs4probe
[ -x "$PROBE" ] || h_fail "$PROBE is missing (make tools)"
LEASE=4

H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=$LEASE h_start_ganesha up
E=$H_EXPORT_up
V4=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_up" --path "$H_PSEUDO4_up" --timeout 60)
V3=("$PROBE" --v3 --host 127.0.0.1 --port "$H_NFSPORT_up" --mountport "$H_MNTPORT_up"
	--path "$H_MOUNTPATH_up" --timeout 60)

# the data, made on the server's disk
: >"$E/empty"
printf x >"$E/one"
h_mkdata "$E/small" 5
h_mkdata "$E/big" 3072 7
printf y >>"$E/big"
ln -s small "$E/link"
mkfifo "$E/fifo"
mkdir -p "$E/many" "$E/deep/er/est"
for i in $(seq -w 1 700); do echo "$i" >"$E/many/entry-with-a-longish-name-$i"; done
chmod 0751 "$E/deep"
chmod 4755 "$E/one"
chown 1234:5678 "$E/small"       # no such user: ganesha sends numbers
chown daemon:daemon "$E/big"     # in /etc/passwd: ganesha sends daemon@domain
touch -d '2001-02-03 04:05:06.789' "$E/empty"
DAEMON_UID=$(id -u daemon) DAEMON_GID=$(getent group daemon | cut -d: -f3)
NOBODY_UID=$(id -u nobody)

# (a) v4 only on one export, v3 only on the other
"${V3[@]}" --path "$H_PSEUDO4_up" root >/dev/null 2>&1 &&
	h_fail "the NFSv4-only export took a MOUNT (NFSv3 is not off there)"
"${V4[@]}" --path "$H_MOUNTPATH_up" --timeout 5 root >/dev/null 2>&1 &&
	h_fail "the NFSv3-only export is in the NFSv4 pseudo-filesystem"
h_log "ok: $H_PSEUDO4_up serves NFSv4.0 only, $H_MOUNTPATH_up NFSv3 only"

# (b) the same view through both
CMDS=(root getattr . getattr empty getattr one getattr small getattr big getattr link
	getattr fifo getattr deep getattr deep/er/est getattr many/entry-with-a-longish-name-123
	ls . ls many ls deep/er read empty read one read small read big readlink link
	access . access small access one access deep access fifo)
"${V4[@]}" --maxcount 4096 "${CMDS[@]}" stats >"$H_TMP/v4.out" 2>"$H_TMP/v4.err" ||
	h_fail "the v4 probe failed: $(grep error "$H_TMP/v4.out" | head -3) $(head -3 "$H_TMP/v4.err")"
"${V3[@]}" --maxcount 4096 "${CMDS[@]}" >"$H_TMP/v3.out" 2>"$H_TMP/v3.err" ||
	h_fail "the v3 probe failed: $(grep error "$H_TMP/v3.out" | head -3) $(head -3 "$H_TMP/v3.err")"
# the handles differ (v4's and v3's are not the same bytes), and the pages
# (a v4 entry takes more of a READDIR's maxcount): the rest must not
norm()
{
	grep -v -e '^root ' -e '^stats ' "$1" |
		sed -E 's/ change [0-9]+$//; s/ fh [0-9]+$//; s/^(ls .* entries [0-9]+) pages [0-9]+$/\1/'
}
if ! diff <(norm "$H_TMP/v3.out") <(norm "$H_TMP/v4.out") >"$H_TMP/diff"; then
	head -20 "$H_TMP/diff" >&2
	h_fail "NFSv4 (module) and NFSv3 (direct) disagree ($(grep -c '^[<>]' "$H_TMP/diff") lines)"
fi
grep -q '^ls many entries 700 pages [0-9]*$' "$H_TMP/v4.out" || h_fail "many/: not 700 entries over v4"
pages=$(awk '$1 == "ls" && $2 == "many" {print $6}' "$H_TMP/v4.out")
((pages >= 10)) || h_fail "many/ was listed in $pages pages: the cookies were not exercised"
(($(grep -c '^dots$' "$H_TMP/v4.out") == 3)) || h_fail "'.' and '..' missing from a v4 listing"
n_attr=$(grep -c '^attr ' "$H_TMP/v4.out")
(($(grep -c '^attr .* change [0-9]*$' "$H_TMP/v4.out") == n_attr)) ||
	h_fail "a v4 GETATTR without the change attribute"
grep '^ent ' "$H_TMP/v4.out" | grep -q ' fh 0$' && h_fail "a v4 listing entry without its handle"
grep -q "^read big bytes $((3072 * 1024 + 1)) " "$H_TMP/v4.out" || h_fail "big: wrong length over v4"
"${V4[@]}" --out "$H_TMP/big.v4" read big >/dev/null || h_fail "read big to a file"
[ "$(h_md5 "$H_TMP/big.v4")" = "$(h_md5 "$E/big")" ] || h_fail "big: other bytes over v4 than on disk"
grep -q "^attr empty .* mtime $(date -d '2001-02-03 04:05:06' +%s).789000000 " "$H_TMP/v4.out" ||
	h_fail "empty: mtime not 2001-02-03 04:05:06.789 over v4: $(grep '^attr empty' "$H_TMP/v4.out")"
grep -q '^readlink link small$' "$H_TMP/v4.out" || h_fail "READLINK over v4: $(grep readlink "$H_TMP/v4.out")"
grep -q '^access small 0x0d$' "$H_TMP/v4.out" || h_fail "ACCESS as root over v4 (read, modify, extend): $(grep 'access small' "$H_TMP/v4.out")"
# ACCESS and READ as a user who owns nothing here: what ganesha grants
# over v3 it grants over v4
UCMDS=(access . access small access one access deep access deep/er read small getattr deep/er/est)
"${V4[@]}" --uid 1000 --gid 1000 "${UCMDS[@]}" >"$H_TMP/v4u.out" 2>&1
"${V3[@]}" --uid 1000 --gid 1000 "${UCMDS[@]}" >"$H_TMP/v3u.out" 2>&1
diff <(norm "$H_TMP/v3u.out") <(norm "$H_TMP/v4u.out") >&2 || h_fail "as uid 1000, NFSv4 (module) and NFSv3 disagree"
grep -q '^access small 0x01$' "$H_TMP/v4u.out" || h_fail "uid 1000 on small (0644, 1234): not read only: $(cat "$H_TMP/v4u.out")"
h_log "ok: $(grep -c . "$H_TMP/v4.out") lines agree (and $(grep -c . "$H_TMP/v4u.out") as uid 1000); $(grep '^root' "$H_TMP/v4.out")"

# (c) owners
grep -q "^attr small .* uid 1234 gid 5678 " "$H_TMP/v4.out" || h_fail "small: not 1234:5678 over v4"
grep -q "^attr big .* uid $DAEMON_UID gid $DAEMON_GID " "$H_TMP/v4.out" ||
	h_fail "big: daemon:daemon not mapped by name over v4"
out=$("${V4[@]}" --domain no-such.example getattr big getattr small stats) ||
	h_fail "the probe with another domain failed: $out"
grep -q "^attr big .* uid $NOBODY_UID " <<<"$out" ||
	h_fail "daemon@<ganesha's domain> with --domain no-such.example is not nobody: $out"
grep -q "^attr small .* uid 1234 gid 5678 " <<<"$out" || h_fail "numeric owners changed with the domain"
grep -q '^stats .* nobody [1-9]' <<<"$out" || h_fail "the nobody fallback was not counted"
h_log "ok: numeric owners, user@domain by name, nobody for another domain"

# (d) the lease: RENEWs keep the one client ID through 2.5 leases
out=$("${V4[@]}" watch $((LEASE * 5 / 2)) stats) || h_fail "calls failed across the lease: $out"
st=$(grep '^stats' <<<"$out")
renews=$(awk '{for (i = 2; i < NF; i += 2) if ($i == "renews") print $(i + 1)}' <<<"$st")
((renews >= 4)) || h_fail "$renews RENEWs in $((LEASE * 5 / 2)) s with a $LEASE s lease: $st"
grep -q ' setclientids 1 recoveries 0 ' <<<"$st" || h_fail "the client ID did not stay: $st"
grep -q " lease $LEASE$" <<<"$st" || h_fail "the lease_time is not ganesha's $LEASE s: $st"
h_log "ok: lease $LEASE s, $renews RENEWs, one client ID: $st"

# (e) ganesha restarts under a run of calls
"${V4[@]}" watch 20 getattr big read small stats >"$H_TMP/restart.out" 2>&1 &
probe=$!
h_wait_until 30 grep -q '^watch started' "$H_TMP/restart.out" || h_fail "the probe did not start"
sleep 1 # a few calls before the stop
alive "$probe" || h_fail "the probe ended before the restart: $(cat "$H_TMP/restart.out")"
h_stop_ganesha up
sleep 2 # the outage
alive "$probe" || h_fail "the probe ended while ganesha was down: $(cat "$H_TMP/restart.out")"
h_restart_ganesha up
alive "$probe" || h_fail "the probe ended before ganesha was back: $(cat "$H_TMP/restart.out")"
h_wait_pid "$probe" "the probe" 90
wait "$probe"
rc=$?
out=$(cat "$H_TMP/restart.out")
[ "$rc" = 0 ] || h_fail "calls failed across the restart (exit $rc): $out"
grep -q '^watch calls [0-9]* failed 0 ' <<<"$out" || h_fail "a call failed: $out"
longest=$(awk '$1 == "watch" && $2 == "calls" {print $7}' <<<"$out")
((longest >= 1500)) || h_fail "no call waited through the outage (longest ${longest} ms): $out"
grep -q "^read small bytes 5120 " <<<"$out" || h_fail "no READ after the restart: $out"
st=$(grep '^stats' <<<"$out")
recov=$(awk '{for (i = 2; i < NF; i += 2) if ($i == "recoveries") print $(i + 1)}' <<<"$st")
scid=$(awk '{for (i = 2; i < NF; i += 2) if ($i == "setclientids") print $(i + 1)}' <<<"$st")
((recov >= 1 && scid >= 2)) || h_fail "the client ID was not established again: $st"
grep -q ' reconnects [1-9]' <<<"$st" || h_fail "no reconnect counted: $st"
h_log "ok: restart: calls waited up to $longest ms, then all succeeded; $st"

h_pass "NFSv4.0 upstream module: same names, attributes and bytes as NFSv3; owners mapped; RENEW keeps the client ID; a ganesha restart is recovered"
