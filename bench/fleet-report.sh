#!/bin/bash
# bench/fleet-report.sh RESULTS_DIR [BIN_DIR] — turn a fleet run's
# fleet.csv (bench/fleet.sh) into
#   fleet-summary.csv  mean, SEM, sd, min, max per (setup, pass)
#   report.md          the run's header and the "Fleet (wan)" section: per
#                      setup, filer bytes cold and warm, the seconds of each
#                      pass, the speed against direct
#   fleet-filer.png    filer MB per setup, cold and warm (gnuplot)
#   fleet-seconds.png  seconds per pass per setup, cold and warm
# Can be re-run on an old results directory.
set -eu
dir=$(cd "${1:?usage: fleet-report.sh RESULTS_DIR [BIN_DIR]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin=${2:-$here/../build/bench}
csv=$dir/fleet.csv
[ -f "$csv" ] || { echo "fleet-report: no $csv" >&2; exit 1; }
meta() { sed -n "s/^$1=//p" "$dir/meta.txt" 2>/dev/null | head -n 1; }

sum=$dir/fleet-summary.csv
"$bin/benchstat" --by setup,pass \
	--values seconds,bytes,filer_bytes,filer_rx_bytes,node_fill_bytes,peer_bytes,cache_bytes,peer_timeouts,peer_refused \
	"$csv" >"$sum"

# per setup (in the order run): cold and warm means and SEMs of a value,
# "setup cold_mean cold_sem warm_mean warm_sem" (SEM 0 when n = 1), scaled
columns() # VALUE SCALE
{
	awk -F, -v v="$1" -v sc="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{ s = $col["setup"]; if (!(s in seen)) { seen[s] = 1; order[++n] = s }
		  m[s, $col["pass"]] = $col[v "_mean"] / sc; e[s, $col["pass"]] = ($col[v "_sem"] == "" ? 0 : $col[v "_sem"] / sc) }
		END { for (i = 1; i <= n; i++) { s = order[i]
			printf "%s %.4f %.4f %.4f %.4f\n", s, m[s, "cold"], e[s, "cold"], m[s, "warm"], e[s, "warm"] } }' "$sum"
}

cb=$(meta client_bytes)
# --parallel: the clients at the same time, a pass's seconds its wall time
order="one after the other" secs="the three clients' reads added up"
[ "$(meta parallel)" = 1 ] && order="all at the same time" secs="the pass's wall time (the clients ran at the same time)"
charts=()
if command -v gnuplot >/dev/null; then
	mkdir -p "$dir/raw"
	for what in filer seconds; do
		dat=$dir/raw/chart-fleet-$what.dat
		case $what in
		filer) columns filer_bytes 1000000 >"$dat"
			title="bytes that crossed the filer link per pass (3 clients), mean and SEM, lower is better"
			ylabel="MB" ;;
		seconds) columns seconds 1 >"$dat"
			title="seconds per pass (3 clients, $order), mean and SEM, lower is better"
			ylabel="seconds" ;;
		esac
		[ -s "$dat" ] || continue
		gnuplot <<EOF 2>>"$dir/raw/gnuplot.log" || true
set terminal pngcairo size 900,420 noenhanced font ",10"
set output "$dir/fleet-$what.png"
set title "Fleet over wan ($(meta wan_rate), +$(meta wan_delay_ms) ms each way): $title"
set ylabel "$ylabel"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.6 border -1
set yrange [0:*]
set grid ytics
set key top center
plot "$dat" using 2:3:xtic(1) title "cold (empty caches)" lc rgb "#4477aa", \
     "" using 4:5 title "warm (the same reads again)" lc rgb "#ee7733"
EOF
		[ -f "$dir/fleet-$what.png" ] && charts+=("fleet-$what.png")
	done
fi

{
	echo "# cachefsd bench: fleet profile — $(meta date)"
	echo
	echo "Command: \`$(meta command)\`"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| cachefsd | $(meta cachefsd) (git $(meta git)), $(meta mode) mode, every node \`--register no\`$( [ -n "$(meta cachefsd_args)" ] && echo ", \`$(meta cachefsd_args)\`") |"
	echo "| machine | $(meta host), $(meta cpus) CPUs, $(meta mem) |"
	echo "| filer | nfs-ganesha $(meta ganesha), FSAL VFS, in its own network namespace behind a veth shaped to $(meta wan_rate) (tbf) and bench/relay's $(meta wan_delay_ms) ms each way; the data set in its page cache |"
	echo "| data set | $(meta scale) scale, seed $(meta seed): $(cat "$dir/dataset.txt" 2>/dev/null) |"
	echo "| workload | $(meta clients) clients, $order; each reads $(meta client_workload | sed 's/cat /cat:/g; s/tar /tar:/g') ($(awk -v b="$cb" 'BEGIN{printf "%.1f", b/1e6}') MB) with bench/nfsbench (libnfs, READ window $(meta window) × 1 MiB); client k through node k (1-node: all through the one node) |"
	echo "| method | per round every setup in turn: its nodes started with empty caches, the cold pass, the warm pass (the same reads again), the nodes stopped; n = $(meta n) rounds; round 1 checked every byte (size and xxh64) |"
	echo "| load average | start $(meta load_at_start), end $(meta load_at_end) |"
	echo
	echo "## Fleet (wan)"
	echo
	echo "Filer MB: the bytes that crossed the filer link during the pass (both directions, the veth's counters: data, RPC headers, metadata calls), and that as a multiple of one client's data ($(awk -v b="$cb" 'BEGIN{printf "%.1f", b/1e6}') MB; direct moves about 3×, one per client). Seconds: $secs. × direct: direct's mean seconds for the same pass / this setup's (> 1: faster). From peers: what the client-facing nodes took from each other in the cold pass (3-peers). Mean ± SEM over n rounds:"
	echo
	echo "| setup | filer MB cold | × data | filer MB warm | cold s | warm s | cold × direct | warm × direct | from peers MB (cold) | peer timeouts (cold) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F, -v cb="$cb" '
	function fmt(m, s, n, f) {
		if (m == "") return "n/a"
		if (n < 2) return sprintf(f " (n=1)", m)
		return sprintf(f " ± " f, m, s)
	}
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	{ s = $col["setup"]; p = $col["pass"]; if (!(s in seen)) { seen[s] = 1; order[++n] = s }
	  N[s, p] = $col["n"]
	  FM[s, p] = $col["filer_bytes_mean"] / 1e6; FE[s, p] = $col["filer_bytes_sem"] / 1e6
	  SM[s, p] = $col["seconds_mean"]; SS[s, p] = $col["seconds_sem"]
	  PB[s, p] = $col["peer_bytes_mean"] / 1e6; PT[s, p] = $col["peer_timeouts_mean"] }
	END {
		for (i = 1; i <= n; i++) {
			s = order[i]
			xc = ((("direct" SUBSEP "cold") in SM) && SM[s, "cold"] > 0) ? sprintf("%.2f×", SM["direct", "cold"] / SM[s, "cold"]) : "n/a"
			xw = ((("direct" SUBSEP "warm") in SM) && SM[s, "warm"] > 0) ? sprintf("%.2f×", SM["direct", "warm"] / SM[s, "warm"]) : "n/a"
			printf "| %s | %s | %.2f× | %s | %s | %s | %s | %s | %s | %s |\n", s,
				fmt(FM[s, "cold"], FE[s, "cold"], N[s, "cold"], "%.1f"), FM[s, "cold"] * 1e6 / cb,
				fmt(FM[s, "warm"], FE[s, "warm"], N[s, "warm"], "%.2f"),
				fmt(SM[s, "cold"], SS[s, "cold"], N[s, "cold"], "%.2f"),
				fmt(SM[s, "warm"], SS[s, "warm"], N[s, "warm"], "%.2f"),
				xc, xw, (s == "3-peers" ? sprintf("%.1f", PB[s, "cold"]) : "–"),
				(s == "3-peers" ? sprintf("%.1f", PT[s, "cold"]) : "–")
		}
	}' "$sum"
	echo
	for c in "${charts[@]}"; do
		echo "![${c%.png}]($c)"
		echo
	done
	echo "Per client and file: fleet-clients.csv (seconds, bytes and filer-link bytes of every read); per pass: fleet.csv (also the nodes' fill, peer and cache bytes, peer timeouts); the nodes' logs: the run's temp dir with --keep."
} >"$dir/report.md"
