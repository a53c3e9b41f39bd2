#!/bin/bash
# Configuration reload (SIGHUP and cachefsctl reload):
#  1. keys that can change live take effect (meta_ttl: strict -> ttl and
#     back, log_level, cache_size, allow) and the log names each change;
#  2. keys that need a restart are named and keep their running value;
#  3. a bad file (unknown key, bad value, broken rule) is refused with its
#     file:line:key message; the daemon goes on with the old configuration;
#     an include file ($CONF.d/*.conf) overrides with a log line naming both
#     places, and a broken one is refused with each of its errors;
#  4. a daemonized cachefsd started with a relative --config reloads it.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CTLBIN=$H_BUILD/cachefsctl
NR=$H_BUILD/tests/nfsread
[ -x "$CTLBIN" ] || h_fail "$CTLBIN not built"
h_start_ganesha up
E=$H_EXPORT_up
for i in 1 2 3 4; do h_mkdata "$E/f$i" 1024 "$i"; done

CONF=$H_TMP/px.conf
conf() { # the file, with extra lines
	{
		echo "# written by 86-reload"
		echo "[cachefsd]"
		echo "fresh_guard = 0"
		echo "readahead = 0"
		printf '%s\n' "$@"
	} >"$CONF"
}
conf "meta_ttl = 0"
h_start_cachefsd px up --config "$CONF"
P=$H_PORT_px
C=$H_CACHE_px
ctl() { "$CTLBIN" --cache-dir "$C" "$@"; }
st() { ctl stats --raw | awk -v k="$1" '$1==k{print $2; f=1} END{if(!f) print "MISSING"}'; }
cfg() { ctl config | awk -v k="$1" '$1==k{print $3}'; }
rd() { "$NR" --port "$P" --export "$E" --path "$1" --timeout 5 | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }
# hup: SIGHUP and wait for the first log line that answers it; since: the
# log lines from the last hup (or mark) on
log_from=0
mark() { log_from=$(wc -l <"$H_LOG_px"); }
since() { tail -n +$((log_from + 1)) "$H_LOG_px"; }
hup() {
	local i
	mark
	kill -HUP "$H_PID_px"
	for i in $(seq 1 50); do
		since | grep -q "configuration reload" && return 0
		sleep 0.1
	done
	h_fail "no log line after SIGHUP"
}
# waits for a line (fixed string) among those since the last hup
wait_since() {
	local i
	for i in $(seq 1 50); do
		since | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	h_fail "no log line '$1' after SIGHUP: $(since)"
}
last_reload() { since | grep "configuration reload" | tail -1; }

# --- 1. live changes ---
[ "$(cfg meta_ttl)" = 0 ] || h_fail "meta_ttl should start at 0"
rd f1 >/dev/null
rd f1 >/dev/null
[ "$(st meta_hits)" = 0 ] || h_fail "strict mode answered metadata from the cache"
conf "meta_ttl = 60" "log_level = debug" "cache_size = 3M"
hup
line=$(last_reload)
grep -q "configuration reloaded from $CONF: .*meta_ttl 0 -> 60" <<<"$line" || h_fail "log: $line"
grep -q "log_level info -> debug" <<<"$line" || h_fail "log: $line"
grep -q "cache_size 0 -> 3145728" <<<"$line" || h_fail "log: $line"
! grep -q "needs a restart" <<<"$line" || h_fail "a live change asked for a restart: $line"
[ "$(cfg meta_ttl)" = 60 ] && [ "$(cfg log_level)" = debug ] || h_fail "config after reload"
# ttl mode is on: the second lookup of a name is answered by the proxy
rd f2 >/dev/null
h0=$(st meta_hits)
[ "$(rd f2)" = "$(want f2)" ] || h_fail "f2 in ttl mode: wrong bytes"
[ "$(st meta_hits)" -gt "$h0" ] || h_fail "meta_ttl 60 did not take effect"
# debug lines now
ctl info >/dev/null
grep -q "debug: control: info" "$H_LOG_px" || h_fail "log_level debug did not take effect"
# cache_size 3M: culling brings 4 x 1 MiB under 90 % of it
for i in 1 2 3 4; do rd "f$i" >/dev/null; done
for i in $(seq 1 50); do
	[ "$(st cache_bytes)" -le $((3 * 1048576 * 9 / 10)) ] && break
	sleep 0.1
done
[ "$(st cache_bytes)" -le $((3 * 1048576 * 9 / 10)) ] || h_fail "cache_size 3M: $(st cache_bytes) bytes"
[ "$(st evictions)" -ge 1 ] || h_fail "cache_size 3M evicted nothing"
h_log "ok: meta_ttl, log_level and cache_size changed live"

# back to strict: the metadata cache is dropped (it would not be kept current)
[ "$(st meta_records)" -gt 0 ] || h_fail "ttl mode recorded no metadata"
conf "meta_ttl = 0"
hup
grep -q "meta_ttl 60 -> 0" <<<"$(last_reload)" || h_fail "log: $(last_reload)"
grep -q "strict mode: dropped the metadata cache" "$H_LOG_px" || h_fail "metadata cache not dropped"
[ "$(st meta_records)" = 0 ] || h_fail "strict mode kept $(st meta_records) metadata records"
h0=$(st meta_hits)
rd f2 >/dev/null
[ "$(st meta_hits)" = "$h0" ] || h_fail "strict mode answered a lookup from the cache"
h_log "ok: ttl -> strict drops the metadata cache"

# allow: a new client from a network no longer allowed is refused
conf "meta_ttl = 0" "allow = 10.9.9.0/24"
hup
grep -q "allow 127.0.0.0/8, ::1 -> 10.9.9.0/24" <<<"$(last_reload)" || h_fail "log: $(last_reload)"
"$NR" --port "$P" --export "$E" --path f1 --timeout 3 >/dev/null 2>&1 &&
	h_fail "a client outside the new allow list was served"
conf "meta_ttl = 0"
hup
[ "$(rd f1)" = "$(want f1)" ] || h_fail "allowed again: wrong bytes"
h_log "ok: allow changed live"

# --- 2. keys that need a restart ---
conf "meta_ttl = 0" "upstream_connections = 2" "chunk_size = 256K" "write_quiesce = 5"
hup
line=$(last_reload)
grep -q "write_quiesce 30 -> 5" <<<"$line" || h_fail "log: $line"
grep -q "needs a restart: upstream_connections, chunk_size" <<<"$line" || h_fail "log: $line"
[ "$(cfg upstream_connections)" = 4 ] && [ "$(cfg chunk_size)" = 1048576 ] ||
	h_fail "restart-only keys changed live"
[ "$(cfg write_quiesce)" = 5 ] || h_fail "write_quiesce did not change"
h_log "ok: restart-only keys are named and keep their value"

# --- 3. bad files: refused, the running configuration stays ---
r0=$(st config_reload_failures)
conf "meta_ttl = 0" "write_quiesce = 5" "meta_ttl = 5" "bogus_key = 1"
hup
# both mistakes, a line each: a key set twice in one file, an unknown key
wait_since "configuration reload failed, the running configuration stays: $CONF:8: bogus_key: unknown key"
since | grep -qF "configuration reload failed, the running configuration stays: $CONF:7: meta_ttl: set again (first on line 5)" ||
	h_fail "a key set twice: $(since)"
[ "$(cfg meta_ttl)" = 0 ] || h_fail "a refused file changed meta_ttl"
conf "write_quiesce = soon"
hup
grep -qF "$CONF:5: write_quiesce: 'soon' is not a whole number" <<<"$(last_reload)" ||
	h_fail "bad value: $(last_reload)"
conf "bstop = 9" "bcull = 8"
hup
grep -qF "keys 'bstop' < 'bcull' < 'brun' must hold (9, 8, 10; bstop: $CONF:5; bcull: $CONF:6; brun: default)" <<<"$(last_reload)" ||
	h_fail "broken rule: $(last_reload)"
[ "$(cfg write_quiesce)" = 5 ] && [ "$(cfg bstop)" = 3 ] || h_fail "a refused file changed values"
[ "$(st config_reload_failures)" = $((r0 + 3)) ] || h_fail "config_reload_failures did not count"
kill -0 "$H_PID_px" || h_fail "cachefsd died on a bad reload"
[ "$(rd f3)" = "$(want f3)" ] || h_fail "after bad reloads: wrong bytes"
# cachefsctl reload says the same, and exits 1
out=$(ctl reload 2>&1)
rc=$?
[ $rc = 1 ] && grep -qF "keys 'bstop' < 'bcull' < 'brun' must hold" <<<"$out" ||
	h_fail "cachefsctl reload of a bad file: exit $rc: $out"
conf "meta_ttl = 0" "write_quiesce = 7"
out=$(ctl reload) || h_fail "cachefsctl reload failed: $out"
[ "$out" = "write_quiesce 5 -> 7" ] || h_fail "cachefsctl reload said: $out"
h_log "ok: bad files refused with file:line:key, the daemon goes on unchanged"

# --- 3b. the include directory: $CONF.d/*.conf after $CONF ---
mkdir "$CONF.d"
printf 'write_quiesce = 12\nbcull = "8%%"\n' >"$CONF.d/50-site.conf"
hup
line=$(last_reload)
grep -q "bcull 7 -> 8" <<<"$line" && grep -q "write_quiesce 7 -> 12" <<<"$line" ||
	h_fail "include file: $line"
since | grep -qF "configuration: $CONF.d/50-site.conf:1: write_quiesce = 12 overrides $CONF:6 (was 7)" ||
	h_fail "no log line naming both places: $(since)"
[ "$(cfg write_quiesce)" = 12 ] && [ "$(cfg bcull)" = 8 ] || h_fail "include file not applied"
# a broken include file: every error reported, the old configuration serves
r0=$(st config_reload_failures)
printf 'write_quiesce = 20\nbrun = lots\nbcull 9%%\nbcull 9%%\ntag mycache\n' \
	>"$CONF.d/60-broken.conf"
hup
B=$CONF.d/60-broken.conf
wait_since "$B:5: tag: cachefilesd's tag has no cachefsd equivalent"
for want in "$B:2: brun: 'lots' is not a percentage" "$B:4: bcull: set again (first on line 3)"; do
	since | grep -qF "configuration reload failed, the running configuration stays: $want" ||
		h_fail "no '$want' in: $(since)"
done
[ "$(since | grep -c "configuration reload failed")" = 3 ] || h_fail "not 3 error lines: $(since)"
[ "$(cfg write_quiesce)" = 12 ] && [ "$(cfg bcull)" = 8 ] && [ "$(cfg brun)" = 10 ] ||
	h_fail "a broken include file changed the configuration"
[ "$(st config_reload_failures)" = $((r0 + 1)) ] || h_fail "config_reload_failures did not count"
[ "$(rd f4)" = "$(want f4)" ] || h_fail "after a broken include file: wrong bytes"
out=$(ctl reload 2>&1)
rc=$?
[ $rc = 1 ] && grep -qF "$B:2: brun: 'lots' is not a percentage" <<<"$out" &&
	grep -qF "; $B:4: bcull: set again" <<<"$out" && grep -qF "; $B:5: tag:" <<<"$out" ||
	h_fail "cachefsctl reload of a broken include file: exit $rc: $out"
rm "$CONF.d/60-broken.conf"
out=$(ctl reload) || h_fail "cachefsctl reload after the fix: $out"
[ "$out" = "nothing changed" ] || h_fail "cachefsctl reload after the fix said: $out"
rm -r "$CONF.d"
h_log "ok: include directory read after the file, overrides logged; a broken include file refused with every error, the old configuration serves"

# --- 4. a daemonized start with a relative --config ---
h_stop_cachefsd px
dport=$(h_free_port)
printf 'upstream = %s\ncache_dir = %s\nlisten = 127.0.0.1:%s\npid_file = %s\nmeta_ttl = 0\n' \
	"$H_URL_up" "$H_TMP/dcache" "$dport" "$H_TMP/d.pid" >"$H_TMP/rel.conf"
(cd "$H_TMP" && "$H_BUILD/cachefsd" --config rel.conf) || h_fail "daemonized start failed"
dpid=$(cat "$H_TMP/d.pid")
h_track cachefsd-daemon "$dpid"
sed -i 's/^meta_ttl = 0/meta_ttl = 7/' "$H_TMP/rel.conf"
out=$("$CTLBIN" --cache-dir "$H_TMP/dcache" reload) || h_fail "reload of the daemon: $out"
[ "$out" = "meta_ttl 0 -> 7" ] || h_fail "the daemon (in /) reloaded: $out"
h_stop_pid "$dpid"
h_log "ok: a daemon started with a relative --config reloads it from /"

h_pass "reload: live keys applied, restart keys named, bad files refused (file:line:key, every error), include directory, old config kept"
