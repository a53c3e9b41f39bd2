#!/bin/bash
# The alerting metrics, the rules file and the dashboard (issue 38):
#  1. docs/alerts.yml passes `promtool check rules`; every alert it has is
#     named in docs/operations.md and the other way round, and each runbook
#     is a section heading of docs/operations.md;
#  2. a live scrape passes `promtool check metrics` (and the strict
#     checker); the process_* set is there and true (open fds against
#     /proc/PID/fd, the limit, memory, start time against the daemon's);
#     the same figures in `cachefsctl stats --json`;
#  3. docs/dashboard.json parses, has a Prometheus data source variable,
#     its queries pass promtool's PromQL parser, and every metric they
#     name is on the live scrape;
#  4. a full index (the test hook CFS_TEST_MAP_SIZE: a 1 MiB LMDB map, 40
#     small files of 40 KiB): cachefsd_index_full 1, its events counted,
#     fills refused with reason index_full, cachefsd_index_bytes at most
#     cachefsd_index_map_bytes (1 MiB); bytes right;
#  5. an index damaged under the running daemon (its tree pages zeroed):
#     cachefsd_index_broken 1, the fill-stopped reason index_damaged and
#     fills refused for it (a read of an uncached file); bytes right, the
#     daemon alive.
#  6. the rules, fed those scrapes (promtool test rules), fire on the
#     states they show and not on the healthy one.
# A read-only cache disk and a full one are 64-cache-fs-trouble's and
# 85-metrics' states: they check fills refused (read_only, space) there.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
PC=$H_BUILD/tests/promcheck
CTLBIN=$H_BUILD/cachefsctl
for b in "$NR" "$PC" "$CTLBIN"; do [ -x "$b" ] || h_fail "$b not built (make all tools)"; done
for c in curl jq promtool; do
	command -v $c >/dev/null || h_skip "$c is not installed (make deps-test)"
done
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ALERTS=$SRC/docs/alerts.yml
DASH=$SRC/docs/dashboard.json
OPS=$SRC/docs/operations.md

# --- 1. the rules file, and the manual that explains it ---
promtool check rules "$ALERTS" >"$H_TMP/rules.out" 2>&1 || h_fail "promtool: $(cat "$H_TMP/rules.out")"
mapfile -t alerts < <(sed -n 's/^ *- alert: *\([A-Za-z]*\).*/\1/p' "$ALERTS")
[ "${#alerts[@]}" -ge 12 ] || h_fail "only ${#alerts[@]} alerts in $ALERTS"
for a in "${alerts[@]}"; do
	grep -q "\b$a\b" "$OPS" || h_fail "alert $a is not in docs/operations.md"
done
for a in $(grep -o '\bCachefsd[A-Z][A-Za-z]*' "$OPS" | sort -u); do
	printf '%s\n' "${alerts[@]}" | grep -qx "$a" || h_fail "docs/operations.md names $a, docs/alerts.yml has no such alert"
done
# the anchors of the headings, as GitHub makes them
sed -n 's/^#\{2,4\} //p' "$OPS" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 -]//g; s/ /-/g' >"$H_TMP/anchors"
n=0
while read -r rb; do
	n=$((n + 1))
	[[ $rb == docs/operations.md#* ]] || h_fail "runbook $rb is not a section of docs/operations.md"
	grep -qx "${rb#*#}" "$H_TMP/anchors" || h_fail "runbook $rb: no such heading in docs/operations.md"
done < <(sed -n 's/^ *runbook: *//p' "$ALERTS")
[ "$n" = "${#alerts[@]}" ] || h_fail "$n runbooks for ${#alerts[@]} alerts"
[ "$(grep -c '^ *severity: ' "$ALERTS")" = "${#alerts[@]}" ] || h_fail "an alert without severity"
h_log "ok: $ALERTS: ${#alerts[@]} alerts pass promtool, each with its runbook heading and in the manual"

# --- the daemon with a 1 MiB index map ---
h_start_ganesha up
E=$H_EXPORT_up
for i in $(seq 1 40); do h_mkdata "$E/s$i" 40 "$i"; done
h_mkdata "$E/big" 2048 99
MP=$(h_free_port)
CFS_TEST_MAP_SIZE=1048576 h_start_cachefsd fx up --metrics-listen "127.0.0.1:$MP" \
	--fresh-guard 0 --readahead 0 --memory-cache 0
URL=http://127.0.0.1:$MP/metrics
scrape() { curl -sf "$1" >"$2" || h_fail "scrape of $1 failed"; }
val() { "$PC" --value "$1" "$2" || h_fail "no series $1 in $2"; }
check() {
	"$PC" "$1" >/dev/null || h_fail "invalid exposition in $1"
	promtool check metrics <"$1" >"$H_TMP/pt.out" 2>&1 || h_fail "promtool check metrics: $(cat "$H_TMP/pt.out")"
}
rd() { "$NR" --port "$1" --export "$E" --path "$2" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }

# --- 2. process_*, on /metrics and in stats --json ---
scrape "$URL" "$H_TMP/m0"
check "$H_TMP/m0"
fds=$(val process_open_fds "$H_TMP/m0")
real=$(find "/proc/$H_PID_fx/fd" -mindepth 1 | wc -l)
[ "$fds" -gt 5 ] && [ $((fds - real)) -le 2 ] && [ $((real - fds)) -le 2 ] ||
	h_fail "process_open_fds $fds, /proc/$H_PID_fx/fd has $real"
lim=$(awk '/^Max open files/{print $4}' "/proc/$H_PID_fx/limits")
[ "$(val process_max_fds "$H_TMP/m0")" = "$lim" ] || h_fail "process_max_fds $(val process_max_fds "$H_TMP/m0"), limit $lim"
rss=$(val process_resident_memory_bytes "$H_TMP/m0")
kib=$(awk '/^VmRSS/{print $2}' "/proc/$H_PID_fx/status")
[ "$rss" -gt $((kib * 1024 / 2)) ] && [ "$rss" -lt $((kib * 1024 * 2)) ] ||
	h_fail "process_resident_memory_bytes $rss, VmRSS $kib KiB"
[ "$(val process_virtual_memory_bytes "$H_TMP/m0")" -ge "$rss" ] || h_fail "virtual below resident"
st=$(val process_start_time_seconds "$H_TMP/m0")
dst=$(val cachefsd_start_time_seconds "$H_TMP/m0")
awk -v a="$st" -v b="$dst" 'BEGIN{exit !(a > b - 3 && a <= b + 1)}' ||
	h_fail "process_start_time_seconds $st, cachefsd_start_time_seconds $dst"
awk -v c="$(val process_cpu_seconds_total "$H_TMP/m0")" 'BEGIN{exit !(c > 0 && c < 60)}' ||
	h_fail "process_cpu_seconds_total $(val process_cpu_seconds_total "$H_TMP/m0")"
"$CTLBIN" --cache-dir "$H_CACHE_fx" stats --json >"$H_TMP/s0.json" || h_fail "cachefsctl stats --json"
jq -e --argjson lim "$lim" '(.process_open_fds > 5) and (.process_max_fds == $lim) and
	(.process_resident_memory_bytes > 0) and (.process_cpu_us > 0) and
	(.process_start_time_ms / 1000 | floor) >= 0 and (.index_map_bytes == 1048576) and
	(.fills_refused == 0) and (.index_full == 0)' "$H_TMP/s0.json" >/dev/null ||
	h_fail "stats --json: $(jq -c '{process_open_fds, process_max_fds, process_cpu_us, index_map_bytes, fills_refused, index_full}' "$H_TMP/s0.json")"
h_log "ok: promtool check metrics passes; process_* true ($fds fds of $lim, $((rss / 1048576)) MiB resident), also in stats --json"

# --- 3. the dashboard ---
jq -e '.schemaVersion >= 36 and ([.templating.list[] | select(.type == "datasource" and .query == "prometheus")] | length == 1)' \
	"$DASH" >/dev/null || h_fail "$DASH: not a dashboard with a Prometheus data source variable"
jq -r '.. | objects | .expr? // empty' "$DASH" | grep -oE '\b(cachefsd|process)_[a-zA-Z0-9_]+' | sort -u >"$H_TMP/dash.names"
[ "$(wc -l <"$H_TMP/dash.names")" -ge 20 ] || h_fail "the dashboard names only $(wc -l <"$H_TMP/dash.names") metrics"
sed -n 's/^\([a-zA-Z_:][a-zA-Z0-9_:]*\)[{ ].*/\1/p' "$H_TMP/m0" | sort -u >"$H_TMP/scrape.names"
while read -r name; do
	grep -qx "$name" "$H_TMP/scrape.names" || h_fail "the dashboard's $name is not on /metrics"
done <"$H_TMP/dash.names"
# its queries are PromQL (promtool parses them as recording rules, with
# Grafana's variables given values)
{
	echo 'groups: [{name: dashboard, rules: ['
	jq -r '.. | objects | .expr? // empty | gsub("\\$__rate_interval"; "5m") | gsub("\\$instance"; ".*") | @json' "$DASH" |
		awk '{printf "{record: \"dashboard:q%d\", expr: %s},\n", NR, $0}'
	echo ']}]'
} >"$H_TMP/dash-rules.yml"
promtool check rules "$H_TMP/dash-rules.yml" >"$H_TMP/dr.out" 2>&1 || h_fail "a dashboard query: $(cat "$H_TMP/dr.out")"
h_log "ok: the dashboard parses; its queries are PromQL and its $(wc -l <"$H_TMP/dash.names") metric names are all on /metrics"

# --- 4. the index full ---
for i in $(seq 1 40); do
	[ "$(rd "$H_PORT_fx" "s$i")" = "$(want "s$i")" ] || h_fail "s$i: wrong bytes through a full index"
done
scrape "$URL" "$H_TMP/m1"
check "$H_TMP/m1"
[ "$(val cachefsd_index_full "$H_TMP/m1")" = 1 ] || h_fail "cachefsd_index_full 0 after 40 x 40 KiB in a 1 MiB map"
[ "$(val cachefsd_index_full_events_total "$H_TMP/m1")" -ge 1 ] || h_fail "no index full event counted"
refused=$(val 'cachefsd_fills_refused_total{reason="index_full"}' "$H_TMP/m1")
[ "$refused" -ge 1 ] || h_fail "no fill refused for index_full"
[ "$(val cachefsd_index_map_bytes "$H_TMP/m1")" = 1048576 ] || h_fail "index_map_bytes $(val cachefsd_index_map_bytes "$H_TMP/m1")"
ib=$(val cachefsd_index_bytes "$H_TMP/m1")
[ "$ib" -gt 524288 ] && [ "$ib" -le 1048576 ] || h_fail "index_bytes $ib with a full 1 MiB map"
grep -q "cache index is full" "$H_LOG_fx" || h_fail "no log line says the index is full"
[ "$(h_stat fx fills_refused_index_full)" -ge "$refused" ] || h_fail "stats fills_refused_index_full"
"$PC" --monotonic "$H_TMP/m0" "$H_TMP/m1" >/dev/null || h_fail "a counter went down"
h_stop_cachefsd fx
h_log "ok: index full: cachefsd_index_full 1, $refused fills refused (index_full), index $ib of 1048576 bytes; bytes right"

# --- 5. the index damaged under the running daemon ---
MP2=$(h_free_port)
h_start_cachefsd dx up --metrics-listen "127.0.0.1:$MP2" --fresh-guard 0 --readahead 0 --memory-cache 0
URL2=http://127.0.0.1:$MP2/metrics
for i in 1 2 3; do rd "$H_PORT_dx" "s$i" >/dev/null; done
h_wait_until 5 bash -c "[ \"\$('$CTLBIN' --cache-dir '$H_CACHE_dx' stats --raw | awk '\$1==\"cache_objects\"{print \$2}')\" -ge 3 ]" ||
	h_fail "3 files not cached"
# every page but the two meta pages: zero flags, which LMDB reports as
# MDB_CORRUPTED at the first page it reads
MDB=$H_CACHE_dx/index/data.mdb
pages=$(($(stat -c %s "$MDB") / 4096))
dd if=/dev/zero of="$MDB" bs=4096 seek=2 count=$((pages - 2)) conv=notrunc status=none
[ "$(rd "$H_PORT_dx" big)" = "$(want big)" ] || h_fail "big: wrong bytes with a damaged index"
[ "$(rd "$H_PORT_dx" s1)" = "$(want s1)" ] || h_fail "s1: wrong bytes with a damaged index"
[ "$(rd "$H_PORT_dx" s9)" = "$(want s9)" ] || h_fail "s9: wrong bytes with a damaged index"
alive "$H_PID_dx" || h_fail "cachefsd died of a damaged index: $(tail -n 5 "$H_LOG_dx")"
scrape "$URL2" "$H_TMP/m2"
check "$H_TMP/m2"
[ "$(val cachefsd_index_broken "$H_TMP/m2")" = 1 ] || h_fail "cachefsd_index_broken 0 with the index zeroed: $(grep -m3 "cache index" "$H_LOG_dx")"
[ "$(val 'cachefsd_fill_stopped_reason{reason="index_damaged"}' "$H_TMP/m2")" = 1 ] || h_fail "fill stopped reason not index_damaged"
dmg=$(val 'cachefsd_fills_refused_total{reason="index_damaged"}' "$H_TMP/m2")
[ "$dmg" -ge 1 ] || h_fail "no fill refused for index_damaged"
grep -q "caching disabled" "$H_LOG_dx" || h_fail "no log line says caching is disabled"
h_stop_cachefsd dx
h_log "ok: index damaged while running: index_broken 1, reason index_damaged, $dmg fills refused; bytes right"

# --- 6. the rules fire on what the daemon showed ---
# promtool test rules: each scrape above held for 40 minutes as the series
# of one instance (fills refused growing by one a minute where they are
# not 0), the rules without their annotations (promtool compares those
# word for word)
awk '/^ *annotations:/{skip=1; next} skip && /^ *$/{skip=0} !skip' "$ALERTS" >"$H_TMP/rules.yml"
series() { # SCRAPE: input_series, every sample of it
	awk '/^#/ {next} {
		v = $NF; s = substr($0, 1, length($0) - length(v) - 1)
		if (index(s, "{")) sub(/}$/, ",instance=\"px\",job=\"cachefsd\"}", s)
		else s = s "{instance=\"px\",job=\"cachefsd\"}"
		step = (s ~ /^cachefsd_fills_refused_total/ && v + 0 > 0) ? "+1" : "+0"
		printf "      - series: '\''%s'\''\n        values: '\''%s%sx40'\''\n", s, v, step
	}' "$1"
}
# test SCRAPE ALERT [LABELS]: ALERT fires at 35 m with LABELS (and the
# instance's), or with no LABELS argument does not fire
test_case() {
	printf '  - interval: 1m\n    input_series:\n'
	series "$1"
	printf '    alert_rule_test:\n      - eval_time: 35m\n        alertname: %s\n' "$2"
	if [ $# -ge 3 ]; then
		printf '        exp_alerts:\n          - exp_labels: {instance: px, %s}\n' "$3"
	else
		printf '        exp_alerts: []\n'
	fi
}
{
	printf 'rule_files: [%s]\nevaluation_interval: 1m\ntests:\n' "$H_TMP/rules.yml"
	test_case "$H_TMP/m0" CachefsdIndexFull
	test_case "$H_TMP/m0" CachefsdFdsNearLimit
	test_case "$H_TMP/m0" CachefsdFillsRefused
	test_case "$H_TMP/m0" CachefsdCacheDiskTrouble
	test_case "$H_TMP/m0" CachefsdUpstreamDown
	test_case "$H_TMP/m1" CachefsdIndexFull "job: cachefsd, severity: warning"
	test_case "$H_TMP/m2" CachefsdCacheDiskTrouble "job: cachefsd, reason: index_damaged, severity: warning"
	test_case "$H_TMP/m2" CachefsdFillsRefused "reason: index_damaged, severity: warning"
	test_case "$H_TMP/m2" CachefsdFillStopped "job: cachefsd, severity: warning"
	# descriptors near the limit: the live scrape's, with open fds at 90 %
	sed "s/^process_open_fds .*/process_open_fds $((lim * 9 / 10))/" "$H_TMP/m0" >"$H_TMP/m0fds"
	test_case "$H_TMP/m0fds" CachefsdFdsNearLimit "job: cachefsd, severity: warning"
} >"$H_TMP/rules-test.yml"
promtool test rules "$H_TMP/rules-test.yml" >"$H_TMP/rt.out" 2>&1 || h_fail "promtool test rules: $(head -c 3000 "$H_TMP/rt.out")"
h_log "ok: promtool test rules on the scrapes: index full, disk trouble, fills refused, fill stopped and fds near the limit fire on their states, none on the healthy scrape"

h_pass "metrics and alerts: rules and dashboard checked against a live scrape; index full and damaged seen on /metrics"
