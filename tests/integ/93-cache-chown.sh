#!/bin/bash
# Moving a cache made by root to an unprivileged service user (issue 37):
# the store refuses a cache that is not its user's own (93-cache-dir), so
# `cachefsctl chown USER --cache-dir DIR` gives it away (store_chown.c).
# The user is nobody (65534), the daemon run as it with setpriv:
#  1. cachefsd as root caches a 4 MiB file and stops;
#  2. cachefsd as nobody on that cache exits 1, its message naming the fix:
#     `cachefsctl chown nobody --cache-dir DIR`, nothing listening;
#  3. that command gives the cache to nobody: every entry of the cache is
#     nobody's (none left alone), exit 0;
#  4. cachefsd as nobody (its /proc status says uid 65534) starts on it and
#     serves the file from the cache: the right bytes, read_hits > 0 and no
#     upstream READ bytes in `cachefsctl stats --json`;
#  5. `cachefsctl chown` while that daemon runs is refused (exit 1, "in use")
#     and changes nothing.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CFS=$H_BUILD/cachefsd
CTL=$H_BUILD/cachefsctl
command -v setpriv >/dev/null || h_skip "no setpriv (util-linux)"
getent passwd nobody >/dev/null || h_skip "no user nobody"
NOBODY=$(id -u nobody)
NOGROUP=$(id -g nobody)
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/file" 4096 7
want=$(h_md5 "$E/file")
# nobody reaches the cache dir through H_TMP (mktemp's 0700)
chmod 0711 "$H_TMP"
C=$H_TMP/cache
FLAGS=(--fresh-guard 0 --readahead 0 --register no)
url() { echo "nfs://127.0.0.1$E/file?nfsport=$1&mountport=$1"; }
json() { "$CTL" --cache-dir "$C" stats --json | jq -r ".$1"; }

# --- 1. a cache made by root ---
# shellcheck disable=SC2034 # h_start_cachefsd reads it by name
H_CACHE_root=$C
h_start_cachefsd root up "${FLAGS[@]}"
got=$(nfs-cat "$(url "$H_PORT_root")" | md5sum | cut -d' ' -f1)
[ "$got" = "$want" ] || h_fail "read through the root daemon: md5 $got, not $want"
h_wait_until 10 test "$(json cache_bytes)" -ge $((4096 * 1024)) ||
	h_fail "the root daemon did not cache the file: cache_bytes $(json cache_bytes)"
h_stop_cachefsd root
[ "$(stat -c %u "$C")" = 0 ] || h_fail "the cache is not root's to begin with"

# --- 2. as nobody: refused, the fix named ---
port=$(h_free_port)
out=$(timeout 60 setpriv --reuid nobody --regid "$NOGROUP" --clear-groups \
	"$CFS" --foreground --listen "127.0.0.1:$port" --upstream "$H_URL_up" \
	--cache-dir "$C" "${FLAGS[@]}" 2>&1)
rc=$?
[ "$rc" = 1 ] || h_fail "cachefsd as nobody on root's cache: exit $rc, not 1: $out"
fix="cachefsctl chown nobody --cache-dir $C"
grep -qF -- "$fix" <<<"$out" || h_fail "the refusal does not name '$fix': $out"
! ss -Hltn "sport = :$port" | grep -q . || h_fail "a listener was left"
h_pass "as nobody on root's cache: exit 1, the fix named: $(grep -o 'To move.*' <<<"$out")"

# --- 3. the migration ---
# the message's own words, cachefsctl found on PATH as an installed one is
# shellcheck disable=SC2086 # the command's words
out=$(PATH=$H_BUILD:$PATH $fix 2>&1) || h_fail "$fix failed: $out"
h_log "$out"
left=$(find "$C" ! -uid "$NOBODY" -printf '%p ')
[ -z "$left" ] || h_fail "not nobody's after $fix: $left"
n=$(find "$C" | wc -l)
h_pass "$fix: all $n entries of the cache are nobody's: $out"

# --- 4. nobody's daemon serves the cached file from the cache ---
log=$H_TMP/nobody-cachefsd.log
port=$(h_free_port)
setpriv --reuid nobody --regid "$NOGROUP" --clear-groups \
	"$CFS" --foreground --listen "127.0.0.1:$port" --upstream "$H_URL_up" \
	--cache-dir "$C" "${FLAGS[@]}" >"$log" 2>&1 &
pid=$!
h_track cachefsd-nobody "$pid"
h_wait_until 20 grep -q "info: serving " "$log" || h_fail "cachefsd as nobody did not serve: $(tail -n 5 "$log")"
uid=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
[ "$uid" = "$NOBODY $NOBODY $NOBODY $NOBODY" ] || h_fail "the daemon's uids are $uid, not $NOBODY"
got=$(nfs-cat "$(url "$port")" | md5sum | cut -d' ' -f1)
[ "$got" = "$want" ] || h_fail "read through nobody's daemon: md5 $got, not $want"
hits=$(json read_hits)
up=$(json upstream_read_bytes)
{ [ "$hits" -gt 0 ] && [ "$up" = 0 ]; } ||
	h_fail "nobody's daemon did not serve from the migrated cache: read_hits $hits, upstream_read_bytes $up"
! grep -q "refused\|planted\|not used" "$log" || h_fail "the daemon refused something: $(grep "refused\|planted\|not used" "$log")"
h_pass "cachefsd as uid $NOBODY serves the migrated cache: right bytes, $hits READ hits, 0 bytes read upstream"

# --- 5. not while a daemon uses it ---
rc=0
out=$("$CTL" chown root --cache-dir "$C" 2>&1) || rc=$?
{ [ "$rc" = 1 ] && grep -q "in use by a running cachefsd" <<<"$out"; } ||
	h_fail "chown of a cache in use: exit $rc: $out"
[ "$(stat -c %u "$C")" = "$NOBODY" ] || h_fail "chown of a cache in use changed its owner"
h_pass "cachefsctl chown of a cache in use: exit 1, nothing changed: $out"
