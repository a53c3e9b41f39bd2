#!/bin/bash
# 19-nfs4-writes: the NFSv4.0 upstream module's writes and namespace
# changes (cachefsd/upstream/nfs4.c, not wired into the daemon yet), run by
# tests/tools/nfs4probe through nfs-ganesha's NFSv4.0-only export, each
# effect checked through the NFSv3-only export of the same directory:
#  (a) WRITE UNSTABLE + COMMIT (one verifier) and FILE_SYNC: the bytes v3
#      reads; the wcc "after" attributes are what v3 GETATTR says;
#  (b) SETATTR: the size down and up; a guard on a stale ctime is refused
#      (NFS3ERR_NOT_SYNC) and changes nothing, on the fresh ctime it works;
#  (c) CREATE through OPEN(CREATE): EXCLUSIVE again with the same verifier
#      succeeds and with another fails (EXIST), GUARDED on an existing name
#      fails (EXIST), UNCHECKED twice succeeds; OPENs confirmed and closed;
#  (d) MKDIR, SYMLINK (v3 READLINK reads the target), MKNOD(fifo);
#      RENAME across directories, LINK (nlink 2 over v3), REMOVE of a
#      directory refused (ISDIR), RMDIR of a file (NOTDIR) and of a full
#      directory (NOTEMPTY), then both done; wcc of the directories;
#  (e) FSSTAT, FSINFO, PATHCONF agree with v3's;
#  (f) ganesha restarted between an UNSTABLE WRITE and its COMMIT: the
#      COMMIT's verifier differs from the WRITE's (the caller must re-send,
#      v3 semantics); re-sent, the verifiers agree and v3 reads the bytes.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PROBE=$H_BUILD/tests/nfs4probe
[ -x "$PROBE" ] || h_fail "$PROBE is missing (make tools)"

H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=10 h_start_ganesha up
started_s=$(date +%s) # ganesha's write verifier is its start time in seconds
E=$H_EXPORT_up
V4=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_up" --path "$H_PSEUDO4_up" --timeout 60)
V3=("$PROBE" --v3 --host 127.0.0.1 --port "$H_NFSPORT_up" --mountport "$H_MNTPORT_up"
	--path "$H_MOUNTPATH_up" --timeout 60)
: >"$E/f"
: >"$E/r"

# the value of a field NAME in a line: "... NAME VALUE ..."
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<<"$1"; }
# the probe's bytes: byte at offset x is (x * 31 + SEED) & 255; checks FILE
# (FROM..TO-1 the pattern, TO..end zeros): prints the bad byte count
check_bytes()
{
	od -An -v -tu1 "$1" | awk -v from="$2" -v to="$3" -v seed="$4" '
		{ for (i = 1; i <= NF; i++) {
			want = (n >= from && n < to) ? (n * 31 + seed) % 256 : 0
			if ($i != want) bad++
			n++ } }
		END { print bad + 0 }'
}
v3attr() { "${V3[@]}" getattr "$1" | sed -E 's/^attr [^ ]+ //'; }

# (a) UNSTABLE + COMMIT, FILE_SYNC
# (WRITEs over 2 KiB go over the module's second connection, smaller ones
# through libnfs: both paths)
out=$("${V4[@]}" write f 0 100000 7 unstable commit f write f 100000 5000 7 file_sync \
	write f 105000 1000 7 unstable commit f stats) ||
	h_fail "writes over v4 failed: $out"
w1=$(grep '^write f .* count 100000 ' <<<"$out") || h_fail "the UNSTABLE WRITE: $out"
c1=$(grep '^commit f ' <<<"$out")
[ "$(field "$w1" verf)" = "$(field "$c1" verf)" ] || h_fail "WRITE and COMMIT verifiers differ with no restart: $out"
[ "$(field "$w1" committed)" = 0 ] || h_fail "ganesha's UNSTABLE write came back committed $(field "$w1" committed)"
grep -q '^write f nfsstat3 0 count 5000 committed 2 ' <<<"$out" || h_fail "FILE_SYNC: not committed 2: $out"
grep -q '^write f nfsstat3 0 count 1000 ' <<<"$out" || h_fail "the small WRITE: $out"
after=$(grep '^wcc f ' <<<"$out" | tail -1 | sed -E 's/^wcc f before [0-9-]+ after //')
grep -q '^wcc f before 100000 after ' <<<"$out" || h_fail "the FILE_SYNC write's pre-op size is not 100000: $out"
[ "$after" = "$(v3attr f)" ] || h_fail "WRITE's wcc after ($after) is not v3's GETATTR ($(v3attr f))"
"${V3[@]}" --out "$H_TMP/f.v3" read f >/dev/null || h_fail "v3 read f"
[ "$(stat -c %s "$H_TMP/f.v3")" = 106000 ] || h_fail "v3 reads $(stat -c %s "$H_TMP/f.v3") bytes, not 106000"
bad=$(check_bytes "$H_TMP/f.v3" 0 106000 7)
[ "$bad" = 0 ] || h_fail "$bad bytes written over v4 read otherwise over v3"
h_log "ok: WRITE unstable + COMMIT (verifier $(field "$c1" verf)) and FILE_SYNC, 2 KiB and under and over: 106000 bytes as v3 reads them, wcc = v3 GETATTR"

# (b) SETATTR
out=$("${V4[@]}" truncate f 50000 getattr f truncate f 200000 chmod f 600 stale getattr f \
	chmod f 604 fresh) || h_fail "SETATTRs over v4 failed: $out"
grep -q '^setattr f nfsstat3 0$' <<<"$out" || h_fail "truncate: $out"
grep -q '^attr f .* size 50000 ' <<<"$out" || h_fail "truncated to 50000 over v4: not so: $out"
grep -q '^wcc f before 50000 after .* size 200000 ' <<<"$out" || h_fail "truncate up: wcc: $out"
grep -q '^setattr f nfsstat3 10002$' <<<"$out" || h_fail "a stale guard was not refused with NFS3ERR_NOT_SYNC: $out"
grep -q "^attr f type 1 mode 644 " <<<"$out" || h_fail "the refused SETATTR changed the mode: $out"
(($(grep -c '^setattr f nfsstat3 0$' <<<"$out") == 3)) || h_fail "the fresh guard was refused: $out"
a3=$(v3attr f)
grep -q '^type 1 mode 604 .* size 200000 ' <<<"$a3" || h_fail "v3 sees $a3, not mode 604 size 200000"
"${V3[@]}" --out "$H_TMP/f.v3" read f >/dev/null || h_fail "v3 read f"
bad=$(check_bytes "$H_TMP/f.v3" 0 50000 7)
{ [ "$bad" = 0 ] && [ "$(stat -c %s "$H_TMP/f.v3")" = 200000 ]; } ||
	h_fail "after truncating down and up: $bad bad bytes, $(stat -c %s "$H_TMP/f.v3") bytes"
h_log "ok: SETATTR size down and up (zeros after 50000), guard refused on a stale ctime, applied on the fresh one"

# (c) CREATE
out=$("${V4[@]}" create ex exclusive VERFAAAA create ex exclusive VERFAAAA \
	create ex exclusive VERFBBBB create g guarded create g guarded \
	create u unchecked create u unchecked stats) || h_fail "creates over v4 failed: $out"
st=$(grep '^create ' <<<"$out" | awk '{print $2 ":" $4}' | tr '\n' ' ')
[ "$st" = "ex:0 ex:0 ex:17 g:0 g:17 u:0 u:0 " ] || h_fail "create statuses: $st (want ex:0 ex:0 ex:17 g:0 g:17 u:0 u:0): $out"
grep -q '^create ex nfsstat3 0 fh 0$' <<<"$out" && h_fail "a create without a handle: $out"
grep -q '^attr g type 1 mode 640 ' <<<"$out" || h_fail "GUARDED create: not mode 640: $out"
st=$(grep '^stats' <<<"$out")
opens=$(field "$st" opens)
((opens >= 4)) || h_fail "$opens OPENs for 4 successful creates: $st"
[ "$(field "$st" closeerr)" = 0 ] || h_fail "an OPEN_CONFIRM or CLOSE failed: $st"
for n in ex g u; do v3attr "$n" | grep -q '^type 1 ' || h_fail "$n is not a file over v3"; done
after=$(grep '^wcc \. ' <<<"$out" | tail -1 | sed -E 's/^wcc \. before [0-9-]+ after //')
[ "$after" = "$(v3attr .)" ] || h_fail "CREATE's directory wcc after ($after) is not v3's GETATTR ($(v3attr .))"
h_log "ok: CREATE exclusive (retry with the same verifier ok, another EXIST), guarded (EXIST), unchecked; $(field "$st" opens) opens, $(field "$st" confirms) confirmed, all closed"

# (d) the namespace
out=$("${V4[@]}" mkdir d1 mkdir d2 symlink d1/sl target-text mkfifo d1/ff \
	rename u d2/umoved link g d1/glink remove d1 rmdir g rmdir d2) ||
	h_fail "namespace changes over v4 failed: $out"
st=$(grep -E '^(mkdir|symlink|mkfifo|rename|link|remove|rmdir) ' <<<"$out" | awk '{print $1 ":" $4}' | tr '\n' ' ')
[ "$st" = "mkdir:0 mkdir:0 symlink:0 mkfifo:0 rename:0 link:0 remove:21 rmdir:20 rmdir:66 " ] ||
	h_fail "statuses: $st: $out"
"${V3[@]}" readlink d1/sl | grep -q '^readlink d1/sl target-text$' || h_fail "v3 READLINK of the v4 symlink"
v3attr d1/ff | grep -q '^type 7 mode 600 ' || h_fail "d1/ff over v3: $(v3attr d1/ff)"
v3attr d1 | grep -q '^type 2 mode 750 ' || h_fail "d1 over v3: $(v3attr d1)"
v3attr d2/umoved | grep -q '^type 1 ' || h_fail "the renamed file is not in d2 over v3"
"${V3[@]}" getattr u >/dev/null 2>&1 && h_fail "u is still there after the rename"
v3attr g | grep -q ' nlink 2 ' || h_fail "g after LINK: $(v3attr g)"
v3attr d1/glink | grep -q ' nlink 2 ' || h_fail "d1/glink: $(v3attr d1/glink)"
# the wcc of the rename: "." then d2, each what v3 says now? (later
# changes to "." and d2 came after: compare the last wcc of each)
for d in d1 d2; do
	after=$(grep "^wcc $d " <<<"$out" | tail -1 | sed -E "s/^wcc $d before [0-9-]+ after //")
	[ "$after" = "$(v3attr "$d")" ] || h_fail "$d: the last wcc after ($after) is not v3's GETATTR ($(v3attr "$d"))"
done
out=$("${V4[@]}" remove d1/glink remove d2/umoved rmdir d2 remove d1/sl remove d1/ff rmdir d1) ||
	h_fail "removes over v4 failed: $out"
st=$(grep -E '^(remove|rmdir) ' <<<"$out" | awk '{print $4}' | tr -d '\n')
[ "$st" = 000000 ] || h_fail "removes: $out"
for n in d1 d2; do "${V3[@]}" getattr "$n" >/dev/null 2>&1 && h_fail "$n still there over v3"; done
v3attr g | grep -q ' nlink 1 ' || h_fail "g after removing its link: $(v3attr g)"
after=$(grep '^wcc \. ' <<<"$out" | tail -1 | sed -E 's/^wcc \. before [0-9-]+ after //')
[ "$after" = "$(v3attr .)" ] || h_fail "RMDIR's wcc after ($after) is not v3's GETATTR ($(v3attr .))"
h_log "ok: MKDIR, SYMLINK, MKNOD(fifo), RENAME across directories, LINK, REMOVE/RMDIR with v3's type checks; wcc after = v3 GETATTR"

# (e) FSSTAT, FSINFO, PATHCONF
o4=$("${V4[@]}" fsstat fsinfo pathconf) || h_fail "v4: $o4"
o3=$("${V3[@]}" fsstat fsinfo pathconf) || h_fail "v3: $o3"
for k in tbytes tfiles; do
	[ "$(field "$(grep ^fsstat <<<"$o4")" $k)" = "$(field "$(grep ^fsstat <<<"$o3")" $k)" ] ||
		h_fail "fsstat $k: v4 $o4 / v3 $o3"
done
a4=$(field "$(grep ^fsstat <<<"$o4")" abytes)
((a4 > 0)) || h_fail "fsstat over v4: no available bytes: $o4"
for k in rtmax wtmax maxfilesize properties; do
	[ "$(field "$(grep ^fsinfo <<<"$o4")" $k)" = "$(field "$(grep ^fsinfo <<<"$o3")" $k)" ] ||
		h_fail "fsinfo $k: v4 '$(grep ^fsinfo <<<"$o4")' v3 '$(grep ^fsinfo <<<"$o3")'"
done
[ "$(grep ^pathconf <<<"$o4")" = "$(grep ^pathconf <<<"$o3")" ] ||
	h_fail "pathconf: v4 '$(grep ^pathconf <<<"$o4")' v3 '$(grep ^pathconf <<<"$o3")'"
h_log "ok: $(grep ^fsinfo <<<"$o4"); $(grep ^pathconf <<<"$o4")"

# (f) ganesha restarts between an UNSTABLE WRITE and its COMMIT
"${V4[@]}" write r 0 65536 3 unstable waitfile "$H_TMP/restarted" commit r \
	write r 0 65536 3 unstable commit r stats >"$H_TMP/restart.out" 2>&1 &
probe=$!
h_wait_until 30 grep -q '^write r ' "$H_TMP/restart.out" || h_fail "the probe did not write: $(cat "$H_TMP/restart.out")"
h_stop_ganesha up
# a restart within the second it first started in would keep ganesha's
# verifier (its boot time in seconds): the server's property, not ours
past() { (($(date +%s) > $1)); }
h_wait_until 5 past "$started_s" || h_fail "the clock stands still"
h_restart_ganesha up
touch "$H_TMP/restarted"
h_wait_pid "$probe" "the probe" 90
wait "$probe" || h_fail "the probe failed across the restart: $(cat "$H_TMP/restart.out")"
out=$(cat "$H_TMP/restart.out")
mapfile -t v < <(grep -E '^(write|commit) r ' <<<"$out" | awk '{for (i = 1; i < NF; i++) if ($i == "verf") print $(i + 1)}')
((${#v[@]} == 4)) || h_fail "not 2 writes and 2 commits: $out"
[ "${v[0]}" != "${v[1]}" ] || h_fail "the COMMIT after the restart kept the WRITE's verifier ${v[0]}: $out"
[ "${v[2]}" = "${v[3]}" ] || h_fail "re-sent, WRITE and COMMIT verifiers still differ: $out"
[ "${v[1]}" = "${v[2]}" ] || h_fail "the restarted server changed its verifier twice: $out"
"${V3[@]}" --out "$H_TMP/r.v3" read r >/dev/null || h_fail "v3 read r"
bad=$(check_bytes "$H_TMP/r.v3" 0 65536 3)
{ [ "$bad" = 0 ] && [ "$(stat -c %s "$H_TMP/r.v3")" = 65536 ]; } || h_fail "r after the re-sent write: $bad bad bytes"
h_log "ok: restart between WRITE and COMMIT: verifier ${v[0]} -> ${v[1]}; re-sent and committed; $(grep ^stats <<<"$out" | grep -o 'recoveries [0-9]*')"

h_pass "NFSv4.0 upstream module: WRITE/COMMIT with verifiers, SETATTR with guards, CREATE modes, MKDIR/SYMLINK/MKNOD, RENAME/LINK/REMOVE/RMDIR with wcc, FSSTAT/FSINFO/PATHCONF, as NFSv3 sees them"
