#!/bin/bash
# cachefsctl behaves like its neighbours (getopt_long conventions):
#  1. --version; help, help COMMAND, COMMAND --help and -h for every command
#     the tool lists (a new command without help fails here), each named in
#     cachefsctl(8);
#  2. usage errors exit 2 naming the option or command; no daemon exits 3;
#  3. --socket=PATH, --socket PATH, --cache-dir=DIR, --config=FILE;
#  4. --json of every command that prints data, parsed by jq, with the values
#     a user checks (hits grow with a warm read, a failing invalidate says
#     why, verify names a corrupted chunk);
#  5. top: --once --json over an interval with a known read in it shows the
#     calls, the bytes and the hit ratio of that read; plain top -n 2 on a
#     pipe prints two blocks with their headings and no screen clearing;
#  6. failing commands exit 1.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CTLBIN=$H_BUILD/cachefsctl
NR=$H_BUILD/tests/nfsread
MAN=$H_ROOT/docs/cachefsctl.8
for b in "$CTLBIN" "$NR"; do [ -x "$b" ] || h_fail "$b not built (make all tools)"; done
command -v jq >/dev/null || h_skip "jq is not installed (make deps-run)"
MiB=1048576

# --- 1. version and help, without a daemon ---
v=$("$CTLBIN" --version) || h_fail "--version exited $?"
[[ $v =~ ^cachefsctl\ [0-9]+\.[0-9]+\.[0-9]+ ]] || h_fail "--version printed '$v'"
[ "$("$CTLBIN" -V)" = "$v" ] || h_fail "-V differs from --version"
VERSION=${v#cachefsctl }
"$CTLBIN" --help | grep -q "^usage: cachefsctl" || h_fail "--help has no usage line"
"$CTLBIN" help >"$H_TMP/help" || h_fail "help exited $?"
cmp -s "$H_TMP/help" <("$CTLBIN" --help) || h_fail "help and --help differ"
sed 's/\\-/-/g' "$MAN" >"$H_TMP/man" # roff's \- is a plain '-'
cmds=$(awk '/^commands:/{f=1; next} f && /^$/{exit} f{print $1}' "$H_TMP/help")
n=$(wc -w <<<"$cmds")
[ "$n" -ge 11 ] || h_fail "help lists $n commands: $cmds"
for c in stats info config invalidate cull verify reload top check-index warm help; do
	grep -qx "$c" <<<"$cmds" || h_fail "help does not list $c"
done
for c in $cmds; do
	out=$("$CTLBIN" help "$c") || h_fail "help $c exited $?"
	head -1 <<<"$out" | grep -q "^usage: cachefsctl .*$c" || h_fail "help $c: $(head -1 <<<"$out")"
	grep -q "^exit status: 0" <<<"$out" || h_fail "help $c does not give the exit status"
	for h in --help -h; do
		o2=$("$CTLBIN" "$c" $h) || h_fail "$c $h exited $?"
		[ "$o2" = "$out" ] || h_fail "$c $h differs from help $c"
	done
	# the man page describes it
	grep -qE "^\.(B|BR|BI|TP).*(^|[ \"])$c( |$)|^\.B $c" "$H_TMP/man" || h_fail "cachefsctl(8) lacks $c"
done
h_log "ok: --version ($VERSION), help and --help/-h of $n commands"

# --- 2. usage errors and no daemon ---
err() { # expected-exit what-stderr-says command...
	local want=$1 says=$2 out rc
	shift 2
	out=$("$CTLBIN" "$@" 2>&1)
	rc=$?
	[ $rc = "$want" ] || h_fail "cachefsctl $*: exit $rc, not $want: $out"
	grep -qF -- "$says" <<<"$out" || h_fail "cachefsctl $*: no '$says' in: $out"
	[ "$want" != 2 ] || grep -qF "try 'cachefsctl" <<<"$out" || h_fail "cachefsctl $*: no hint: $out"
}
err 2 "unknown command 'frobnicate'" frobnicate
err 2 "unknown option '--frob'" --frob stats
err 2 "unknown option '-x'" -x stats
err 2 "option '--socket' needs a value" --socket
err 2 "unknown command 'nosuch'" help nosuch
err 2 "stats: unknown option '--frob'" --socket=/x stats --frob
err 2 "stats: option '--json' takes no value" --socket=/x stats --json=yes
err 2 "top: option '--delay' needs a value" --socket=/x top --delay
err 2 "top: --delay: 'soon'" --socket=/x top --delay=soon
err 2 "cull: unexpected argument 'now'" --socket=/x cull now
err 2 "give PATH..., --fh HEX or --all" --socket=/x invalidate
err 2 "unknown option '--frob'" --socket=/x warm --frob x
err 3 "cachefsd is not running (no socket at $H_TMP/none)" --socket="$H_TMP/none" stats
err 3 "cachefsd is not running" --cache-dir "$H_TMP/nowhere" info --json
err 3 "cachefsd is not running" --socket "$H_TMP/none" top --once
h_log "ok: usage errors exit 2 naming what was wrong; no daemon exits 3"

# --- the daemon ---
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big" 6144 1 # 6 MiB: 6 chunks
h_mkdata "$E/other" 2048 2
h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
P=$H_PORT_px
C=$H_CACHE_px
S=$C/control
ctl() { "$CTLBIN" --socket="$S" "$@"; }
js() { ctl "$@" --json | tee "$H_TMP/last.json" | jq -e . >/dev/null || h_fail "$* --json: $(cat "$H_TMP/last.json")"; }
jv() { jq -r "$1" "$H_TMP/last.json"; }
rd() { "$NR" --port "$P" --export "$E" --path "$1" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }

# --- 3. the ways to name the daemon ---
printf 'upstream = %s\ncache_dir = %s\n' "$H_URL_up" "$C" >"$H_TMP/px.conf"
for how in "--socket=$S" "--socket $S" "-s $S" "--cache-dir=$C" "--cache-dir $C" \
	"--config=$H_TMP/px.conf" "--config $H_TMP/px.conf"; do
	# shellcheck disable=SC2086 # two words where it has a space
	pid=$("$CTLBIN" $how info --json | jq -r .pid) || h_fail "$how info --json failed"
	[ "$pid" = "$H_PID_px" ] || h_fail "$how: info says pid $pid, not $H_PID_px"
done
h_log "ok: --socket=PATH, --socket PATH, -s, --cache-dir, --config name the daemon"

# --- 4. --json ---
js info
[ "$(jv .port)" = "$P" ] && [ "$(jv '.port | type')" = number ] || h_fail "info: port $(jv .port)"
[ "$(jv .export)" = "$E" ] || h_fail "info: export $(jv .export)"
[ "$(jv .version)" = "$VERSION" ] || h_fail "info: version $(jv .version), the tool's $VERSION"
[ "$(jv .cache_dir)" = "$C" ] || h_fail "info: cache_dir $(jv .cache_dir)"
js config
[ "$(jv .cache_dir)" = "$C" ] && [ "$(jv .upstream)" = "$H_URL_up" ] ||
	h_fail "config --json: cache_dir $(jv .cache_dir), upstream $(jv .upstream)"
[ "$(jv .readahead)" = 0 ] || h_fail "config --json: readahead $(jv .readahead)"
unset_key=$(ctl config | awk '$1=="#" && /is not set/{print $2; exit}')
[ -z "$unset_key" ] || [ "$(jv ".\"$unset_key\"")" = null ] || h_fail "config: $unset_key not null"
# stats: a cold read misses, a warm one hits
js stats
h0=$(jv .read_hits) m0=$(jv .read_misses)
[ "$(rd big)" = "$(want big)" ] || h_fail "cold read of big: wrong bytes"
js stats
[ "$(jv .read_misses)" -ge $((m0 + 6)) ] || h_fail "a cold read: read_misses $m0 -> $(jv .read_misses)"
[ "$(jv .cache_bytes)" = $((6 * MiB)) ] || h_fail "cache_bytes $(jv .cache_bytes)"
h1=$(jv .read_hits)
rd big >/dev/null
js stats
[ "$(jv .read_hits)" -ge $((h1 + 6)) ] || h_fail "a warm read: read_hits $h1 -> $(jv .read_hits)"
[ "$(jv .fill_stopped_reason)" = none ] || h_fail "stats: fill_stopped_reason $(jv .fill_stopped_reason)"
# invalidate: one that works, one that fails (exit 1, the reason)
js invalidate big
[ "$(jv '.results[0].ok')" = true ] && [ "$(jv '.results[0].target')" = big ] ||
	h_fail "invalidate big --json: $(cat "$H_TMP/last.json")"
[[ $(jv '.results[0].handle') =~ ^[0-9a-f]+$ ]] || h_fail "invalidate: no handle: $(cat "$H_TMP/last.json")"
ctl invalidate --json no-dir/x >"$H_TMP/last.json" 2>"$H_TMP/err"
rc=$?
[ $rc = 1 ] || h_fail "invalidate --json no-dir/x: exit $rc"
[ "$(jv '.results[0].ok')" = false ] && jv '.results[0].error' | grep -q "LOOKUP of 'no-dir' failed" ||
	h_fail "invalidate no-dir/x --json: $(cat "$H_TMP/last.json")"
# warm: reads it again (a miss after invalidate) and says what it did
js warm --quiet big
[ "$(jv .state)" = done ] && [ "$(jv .files_done)" = 1 ] && [ "$(jv .bytes_done)" = $((6 * MiB)) ] ||
	h_fail "warm --json: $(cat "$H_TMP/last.json")"
js warm --status
[ "$(jv .state)" = done ] && [ "$(jv .running)" = false ] || h_fail "warm --status --json: $(cat "$H_TMP/last.json")"
# verify: clean, then a flipped byte in a chunk of big
js verify
[ "$(jv .bad)" = 0 ] && [ "$(jv .chunks)" = 6 ] && [ "$(jv '.entries | length')" = 0 ] ||
	h_fail "verify --json (clean): $(cat "$H_TMP/last.json")"
fbig=$(find "$C/data" -type f -size +1M | head -1)
[ -f "$fbig" ] || h_fail "no data file for big"
off=$((MiB + 4097))
b=$(od -An -tu1 -j $off -N1 "$fbig" | tr -d ' ')
printf "\\$(printf %03o $(((b + 1) % 256)))" | dd of="$fbig" bs=1 seek=$off conv=notrunc 2>/dev/null
ctl verify --json >"$H_TMP/last.json"
rc=$?
[ $rc = 1 ] || h_fail "verify --json of a corrupted chunk: exit $rc"
[ "$(jv .bad)" = 1 ] && [ "$(jv '.entries[0].kind')" = chunk ] && [ "$(jv '.entries[0].index')" = 1 ] &&
	[ "$(jv '.entries[0].reason')" = "checksum mismatch" ] && [ "$(jv '.entries[0].dropped')" = false ] ||
	h_fail "verify --json: $(cat "$H_TMP/last.json")"
ctl verify --drop-bad --json >"$H_TMP/last.json"
[ "$(jv '.entries[0].dropped')" = true ] && [ "$(jv .dropped)" = 1 ] || h_fail "verify --drop-bad --json: $(cat "$H_TMP/last.json")"
# cull: to 0, and a target the daemon refuses (exit 1)
rd other >/dev/null
js cull --to=0
[ "$(jv .cached_bytes)" = 0 ] && [ "$(jv .evicted_objects)" -ge 1 ] && [ "$(jv .target_bytes)" = 0 ] ||
	h_fail "cull --to=0 --json: $(cat "$H_TMP/last.json")"
err 1 "not a percentage" --socket "$S" cull --to 101
# reload of a daemon without a configuration file
out=$(ctl reload --json 2>&1)
rc=$?
if [ $rc = 0 ]; then
	jq -e '.ok == true and (.changes | type) == "array"' <<<"$out" >/dev/null || h_fail "reload --json: $out"
else
	[ $rc = 1 ] || h_fail "reload --json: exit $rc: $out"
fi
h_log "ok: --json of info, config, stats, invalidate, warm, verify, cull, reload"

# --- 5. top ---
rd big >/dev/null # cached again (verify dropped a chunk, cull the rest)
rd big >/dev/null
ctl top --once --delay 2 --json >"$H_TMP/top.json" &
tpid=$!
sleep 0.5
rd big >/dev/null # 6 MiB, all hits
wait $tpid || h_fail "top --once --json exited $?"
[ "$(wc -l <"$H_TMP/top.json")" = 1 ] || h_fail "top --once --json printed $(wc -l <"$H_TMP/top.json") lines"
cp "$H_TMP/top.json" "$H_TMP/last.json"
jq -e . "$H_TMP/last.json" >/dev/null || h_fail "top --json is not JSON: $(cat "$H_TMP/top.json")"
jq -e '.interval_seconds >= 1.9 and .interval_seconds < 4' "$H_TMP/last.json" >/dev/null ||
	h_fail "top: interval $(jv .interval_seconds)"
jq -e '.calls_per_second > 0 and ([.procedures[] | select(.name == "READ" and .calls >= 6)] | length) == 1' \
	"$H_TMP/last.json" >/dev/null || h_fail "top: no READ calls: $(cat "$H_TMP/top.json")"
jq -e ".bytes_to_clients >= $((6 * MiB)) and .bytes_from_cache >= $((6 * MiB)) and .read_hits >= 6" \
	"$H_TMP/last.json" >/dev/null || h_fail "top: bytes of the read: $(cat "$H_TMP/top.json")"
jq -e '.hit_ratio == 1 and .bytes_from_upstream == 0 and .cache_bytes_per_second > 1000000' \
	"$H_TMP/last.json" >/dev/null || h_fail "top: a warm read is not all hits: $(cat "$H_TMP/top.json")"
jq -e '.clients_connected | type == "number"' "$H_TMP/last.json" >/dev/null || h_fail "top: no clients_connected"
# a cold read during the interval: bytes from the upstream and a round trip
ctl invalidate --all >/dev/null
ctl top -n 1 -d 1.5 --json >"$H_TMP/last.json" &
tpid=$!
sleep 0.3
rd big >/dev/null
wait $tpid || h_fail "top -n 1 --json exited $?"
jq -e ".bytes_from_upstream >= $((6 * MiB)) and .upstream_rtt_ms > 0 and .read_misses >= 6 and .hit_ratio < 0.5" \
	"$H_TMP/last.json" >/dev/null || h_fail "top: a cold read: $(cat "$H_TMP/last.json")"
# plain, on a pipe: two blocks, headings, no escape sequences
ctl top -n 2 -d 0.5 >"$H_TMP/top.txt" || h_fail "top -n 2 exited $?"
[ "$(grep -c '^procedure .*calls/s' "$H_TMP/top.txt")" = 2 ] || h_fail "top -n 2: $(cat "$H_TMP/top.txt")"
for hd in "^cachefsd $VERSION (pid $H_PID_px)" "^calls .*/s" "^READ .*hit ratio" "^MiB/s .*from cache" \
	"^clients .*connected" "^cache "; do
	grep -q "$hd" "$H_TMP/top.txt" || h_fail "top: no '$hd' in: $(cat "$H_TMP/top.txt")"
done
! grep -q $'\033' "$H_TMP/top.txt" || h_fail "top on a pipe clears the screen"
# on a terminal (script(1) gives it one) it redraws the screen
if command -v script >/dev/null; then
	script -qec "$CTLBIN --socket=$S top -n 1 -d 0.3" /dev/null >"$H_TMP/top.tty" </dev/null ||
		h_fail "top on a terminal exited $?"
	grep -q $'\033\[H\033\[2J' "$H_TMP/top.tty" && grep -q "hit ratio" "$H_TMP/top.tty" ||
		h_fail "top on a terminal does not redraw: $(cat -v "$H_TMP/top.tty")"
fi
h_log "ok: top --once --json matches the read during its interval; top -n 2 prints blocks"

# --- check-index, and the daemon gone ---
h_stop_cachefsd px
js check-index "$C/index"
[ "$(jv .intact)" = true ] || h_fail "check-index --json: $(cat "$H_TMP/last.json")"
err 3 "cachefsd is not running (no socket at $S)" --socket "$S" stats --json
err 3 "cachefsd is not running" --socket "$S" top
for c in stats info config "invalidate x" cull verify reload top; do
	# shellcheck disable=SC2086 # the command and its argument
	out=$("$CTLBIN" --socket "$S" $c --json 2>/dev/null)
	[ -z "$out" ] || h_fail "$c --json printed '$out' with no daemon (the error is on stderr)"
done
h_log "ok: check-index --json; a stopped daemon exits 3"

h_pass "cachefsctl: --version, help of every command, usage errors (2), --socket=, --json of every data command, top, exit codes"
