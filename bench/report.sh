#!/bin/bash
# bench/report.sh RESULTS_DIR [BIN_DIR] — turn a bench run's raw.csv into
#   summary.csv   mean, SEM, sd, min, max per (profile, client, workload, row)
#   report.md     tables in the seed's shape (rows = scenarios, columns =
#                 workloads, mean ± SEM), details, one verdict line per
#                 workload and profile, the issues' acceptance figures
#   *.png         bar charts (gnuplot), one per profile and workload
#   compare.csv   (a run of two builds, bench.sh --build-b: raw.csv has a
#                 build column) per cachefsd cell A's and B's mean and SEM,
#                 B/A and whether B - A is beyond the combined SEM; the
#                 report then has a "Two builds side by side" section, A's
#                 rows keep their names and B's carry " [LABEL_B]"
# Can be re-run on an old results directory.
set -eu
dir=$(cd "${1:?usage: report.sh RESULTS_DIR [BIN_DIR]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin=${2:-$here/../build/bench}
csv=$dir/raw.csv
[ -f "$csv" ] || { echo "report: no $csv" >&2; exit 1; }

meta() { sed -n "s/^$1=//p" "$dir/meta.txt" 2>/dev/null | head -n 1; }

# two builds (--build-b): raw.csv ends in a build column (A's or B's label,
# empty for direct, peer, disk); summary.csv groups by it too
ab=0 by=profile,client,workload,row la='' lb=''
if head -n 1 "$csv" | grep -q ',build$'; then
	ab=1 by=$by,build
	la=$(meta label_a) lb=$(meta label_b)
	la=${la:-A} lb=${lb:-B}
fi

"$bin/benchstat" --by "$by" \
	--values seconds,bytes,link_bytes,proxy_cpu_s,proxy_rss_kib,hit_ratio,upstream_calls,fills,calls \
	"$csv" >"$dir/summary.csv"

# --- charts --------------------------------------------------------------------
mkdir -p "$dir/raw"
charts=()
# two builds: twice the cachefsd bars, and room for the last rotated label
gp_size=900,420 gp_more=''
[ $ab = 1 ] && gp_size=1300,460 gp_more='set rmargin 14'
if command -v gnuplot >/dev/null; then
	while IFS=, read -r profile client workload; do
		dat=$dir/raw/chart-$client-$profile-$workload.dat
		# (B's rows, "row [LABEL_B]", quoted: gnuplot splits at blanks)
		awk -F, -v p="$profile" -v c="$client" -v w="$workload" -v la="$la" '
			NR==1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
			$col["profile"]==p && $col["client"]==c && $col["workload"]==w {
				r = $col["row"]
				if (("build" in col) && $col["build"] != "" && $col["build"] != la)
					r = "\"" r " [" $col["build"] "]\""
				print r, $col["seconds_mean"], $col["seconds_sem"] }' \
			"$dir/summary.csv" >"$dat"
		[ -s "$dat" ] || continue
		png=$client-$profile-$workload.png
		gnuplot <<EOF 2>>"$dir/raw/gnuplot.log" || true
set terminal pngcairo size $gp_size noenhanced font ",10"
$gp_more
set output "$dir/$png"
set title "$workload over $profile ($client client): mean and SEM of n runs, lower is better"
set ylabel "seconds"
set style fill solid 0.6 border -1
set boxwidth 0.6
set offsets 0.7, 0.7, 0, 0
set yrange [0:*]
set grid ytics
set xtics rotate by -25
unset key
plot "$dat" using 0:2:3:xtic(1) with boxerrorbars lc rgb "#4477aa", \
     "" using 0:(\$2):(sprintf("%.3g", \$2)) with labels offset 0,1 notitle
EOF
		[ -f "$dir/$png" ] && charts+=("$png")
	done < <(awk -F, 'NR>1 {k=$1","$2","$3; if (!(k in s)) { s[k]=1; print k } }' "$dir/summary.csv")
fi

# --- report.md --------------------------------------------------------------------
{
	echo "# cachefsd bench — $(meta date)"
	echo
	echo "Command: \`$(meta command)\`"
	echo
	echo "| | |"
	echo "|---|---|"
	if [ $ab = 1 ]; then
		echo "| cachefsd | two builds: A = **$la**: $(meta cachefsd) (git $(meta git_a), $(meta build_a)); B = **$lb**: $(meta cachefsd_b) (git $(meta git_b), $(meta build_b)); bench tools from A's build; bench scripts at git $(meta git) |"
	else
		echo "| cachefsd | $(meta cachefsd) (git $(meta git)) |"
	fi
	echo "| machine | $(meta host), $(meta cpus) CPUs, $(meta mem) |"
	rt=$(meta upstream_rtmax)
	if [ "$(meta upstream)" = knfsd ]; then
		rt=$(meta knfsd_maxblock)
		echo "| upstream | the Linux kernel nfsd (kernel $(meta knfsd_kernel)) in a qemu TCG guest (1 vCPU, 1 GiB RAM; tests/guest/server.sh), export = ext4 on a virtio disk ($(meta knfsd_disk)), in its own network namespace; rtmax = max_block_size = $rt; data set written into it with bench/nfsput ($(meta knfsd_put)) |"
	elif [ -n "$rt" ] && [ "$rt" != default ]; then
		echo "| upstream | nfs-ganesha $(meta ganesha), FSAL VFS, in its own network namespace; MaxRead = PrefRead = $rt (--upstream-rtmax) |"
	else
		echo "| upstream | nfs-ganesha $(meta ganesha), FSAL VFS, in its own network namespace |"
	fi
	echo "| data set | $(meta scale) scale, seed $(meta seed): $(cat "$dir/dataset.txt" 2>/dev/null); tar over wan walks $(meta tar_over_wan) |"
	echo "| method | libnfs client (bench/nfsbench), READ window $(meta window) × $( [ -n "$rt" ] && [ "$rt" != default ] && echo "the rsize each server's FSINFO offers (direct $((rt / 1024)) KiB, through cachefsd a chunk)" || echo "1 MiB"); up to $(meta warmup) warm-up round(s)$( [ "$(meta budget)" != 0 ] && echo " (fewer once a quarter of the budget is spent)"), then up to n = $(meta n) measured rounds$( [ "$(meta budget)" != 0 ] && echo " or until $(meta budget) s per profile and workload are spent (at least 3)"); every round runs each scenario once, interleaved$( [ $ab = 1 ] && echo "; every cachefsd row runs with A's daemon and with B's (each its own cache): per mode A's cold, warm-disk, warm-page, then B's, B's first in even rounds") |"
	echo "| links | lan $(meta lan_rate) (tbf), wan $(meta wan_rate) (tbf) + $(meta wan_delay_ms) ms each way (bench/relay) |"
	echo "| load average | start $(meta load_at_start), end $(meta load_at_end) |"
	echo "| ttl mode available | $(meta ttl_available | sed 's/1/yes/; s/0/no (this cachefsd rejects --meta-ttl)/')$( [ $ab = 1 ] && echo " ($la); $(meta ttl_available_b | sed 's/1/yes/; s/0/no (this cachefsd rejects --meta-ttl)/') ($lb)") |"
	echo
} >"$dir/report.md"

# --- two builds side by side (--build-b) -------------------------------------------
# Per cachefsd cell (profile, client, workload, row): A's and B's seconds,
# mean ± SEM, B/A of the means, and B - A against the combined SEM
# sqrt(SEM_A^2 + SEM_B^2): beyond it one way or the other is flagged (and
# noted when beyond twice it). compare.csv holds the same figures.
if [ $ab = 1 ]; then
	awk -F, -v la="$la" -v lb="$lb" -v ccsv="$dir/compare.csv" '
function fmt(m, s, n) {
	if (n == "" || n == 0) return "n/a"
	if (n < 2) return sprintf("%.3f (n=1)", m)
	return sprintf("%.3f ± %.3f (n=%d)", m, s, n)
}
function pair(a, b, f) { return (a == "" ? "–" : sprintf(f, a)) " / " (b == "" ? "–" : sprintf(f, b)) }
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$col["build"] != "" {
	p = $col["profile"]; c = $col["client"]; w = $col["workload"]; r = $col["row"]
	x = ($col["build"] == la ? "a" : ($col["build"] == lb ? "b" : ""))
	if (x == "") next
	k = p SUBSEP c SUBSEP w SUBSEP r
	if (!(k in seen)) { seen[k] = 1; K[++nk] = k }
	if (!((p SUBSEP c) in seenp)) { seenp[p SUBSEP c] = 1; PC[++npc] = p SUBSEP c }
	M[k, x] = $col["seconds_mean"]; S[k, x] = $col["seconds_sem"]; N[k, x] = $col["n"]
	CPU[k, x] = $col["proxy_cpu_s_mean"]; RSS[k, x] = ($col["proxy_rss_kib_max"] == "" ? "" : $col["proxy_rss_kib_max"] / 1024)
}
END {
	print "## Two builds side by side"
	print ""
	print "A = **" la "**, B = **" lb "** (builds in the table above): every cachefsd row ran with both daemons in every round, interleaved. Seconds per run, mean ± SEM; B/A of the means (> 1: B takes longer); B − A against the combined SEM √(SEM_A² + SEM_B²). A cell beyond one combined SEM is flagged; for two builds that do not differ, about a third of the cells land beyond one SEM by chance and one in twenty beyond two, so read a flag as \"look again\", and the ones beyond 2 SEM first. The proxy CPU seconds per run and the peak RSS are for reading alongside."
	print ""
	print "profile,client,workload,row,n_a,seconds_mean_a,seconds_sem_a,n_b,seconds_mean_b,seconds_sem_b,ratio_b_a,diff_b_a,sem_combined,result" >ccsv
	nb = na = nw = nn = 0
	for (i = 1; i <= npc; i++) {
		split(PC[i], pc, SUBSEP)
		print "### " pc[1] (pc[2] == "libnfs" ? "" : " (" pc[2] " client)")
		print ""
		print "| workload | scenario | A: " la " | B: " lb " | B/A | B − A (combined SEM) | result | proxy CPU s A / B | peak RSS MiB A / B |"
		print "|---|---|---:|---:|---:|---:|---|---:|---:|"
		for (j = 1; j <= nk; j++) {
			k = K[j]
			split(k, f, SUBSEP)
			if (f[1] SUBSEP f[2] != PC[i]) continue
			ha = ((k, "a") in M); hb = ((k, "b") in M)
			ma = M[k, "a"]; mb = M[k, "b"]; sa = S[k, "a"]; sb = S[k, "b"]
			ratio = diff = comb = ""; res = "n/a"; rc = "na"
			if (ha && hb) {
				if (ma > 0) ratio = mb / ma
				diff = mb - ma
				if (N[k, "a"] >= 2 && N[k, "b"] >= 2) {
					comb = sqrt(sa * sa + sb * sb)
					if (diff > comb) { res = "**B slower beyond SEM**"; rc = "b_slower"; nb++ }
					else if (-diff > comb) { res = "**A slower beyond SEM**"; rc = "a_slower"; na++ }
					else { res = "within SEM"; rc = "within"; nw++ }
					if (rc != "within" && (diff > 2 * comb || -diff > 2 * comb)) res = res " (beyond 2 SEM)"
				} else { res = "n < 2: no SEM"; rc = "no_sem"; nn++ }
			}
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[3], f[4],
				(ha ? fmt(ma, sa, N[k, "a"]) : "n/a"), (hb ? fmt(mb, sb, N[k, "b"]) : "n/a"),
				(ratio == "" ? "n/a" : sprintf("%.3f", ratio)),
				(diff == "" ? "n/a" : sprintf("%+.3f", diff) (comb == "" ? "" : sprintf(" (%.3f)", comb))),
				res, pair(CPU[k, "a"], CPU[k, "b"], "%.2f"), pair(RSS[k, "a"], RSS[k, "b"], "%.0f")
			printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", f[1], f[2], f[3], f[4],
				N[k, "a"], ma, sa, N[k, "b"], mb, sb,
				(ratio == "" ? "" : sprintf("%.6g", ratio)), (diff == "" ? "" : sprintf("%.6g", diff)),
				(comb == "" ? "" : sprintf("%.6g", comb)), rc >ccsv
		}
		print ""
	}
	printf "%d cells: %d B slower beyond SEM, %d A slower beyond SEM, %d within SEM%s.\n", nb + na + nw + nn, nb, na, nw,
		(nn ? sprintf(", %d with n < 2", nn) : "")
	print ""
}' "$dir/summary.csv" >>"$dir/report.md"
fi

# local disk read throughput (MB/s) measured at the start of the run
disk_mbs=$(sed -n 's/^disk_read_bigfile=\([0-9]*\) bytes.* copied, \([0-9.]*\) s.*/\1 \2/p' "$dir/machine.txt" 2>/dev/null |
	awk '$2 > 0 {printf "%.0f", $1 / $2 / 1e6}')
awk -F, -v charts="${charts[*]:-}" -v disk_mbs="${disk_mbs:-0}" -v upstream="$(meta upstream)" -v la="$la" -v lb="$lb" \
	-v floorf="$dir/floor.txt" '
function fmt(m, s, n) {
	if (n == "" || n == 0) return "n/a"
	if (n < 2) return sprintf("%.3f (n=1)", m)
	return sprintf("%.3f ± %.3f", m, s)
}
function key(p, w, r) { return p SUBSEP w SUBSEP r }
function has(p, w, r) { return (key(p, w, r) in M) }
function ratio(p, w, a, b) { return M[key(p, w, b)] / M[key(p, w, a)] } # speed of a vs b: time_b / time_a
function times(r) {
	if (r >= 1) return sprintf("%.2f× faster than", r)
	return sprintf("%.2f× slower than", 1 / r)
}
function pct(x) { return sprintf("%+.0f %%", x * 100) }
function wlabel(w) {
	if (w == "cat-big") return "one big file (cat bigfile)"
	if (w == "cat-bigger") return "one bigger file (cat biggerfile)"
	if (w == "tar") return "many small files (tar)"
	return w
}
function plabel(p) {
	if (p == "loopback") return "over loopback"
	if (p == "lan") return "over lan"
	if (p == "wan") return "over wan"
	return "over " p
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
	p = $col["profile"]; c = $col["client"]; w = $col["workload"]; r = $col["row"]
	if (c != "libnfs") p = p " (" c " client)"
	# two builds: the A rows keep their names (the verdicts and acceptance
	# figures read them), the B rows are "row [LABEL_B]"
	if (("build" in col) && $col["build"] != "" && $col["build"] != la) r = r " [" $col["build"] "]"
	k = key(p, w, r)
	M[k] = $col["seconds_mean"]; S[k] = $col["seconds_sem"]; N[k] = $col["n"]
	B[k] = $col["bytes_mean"]; L[k] = $col["link_bytes_mean"]
	CPU[k] = $col["proxy_cpu_s_mean"]; RSS[k] = $col["proxy_rss_kib_max"]
	HR[k] = $col["hit_ratio_mean"]; UC[k] = $col["upstream_calls_mean"]; CALLS[k] = $col["calls_mean"]
	if (!(p in seenp)) { seenp[p] = 1; P[++np] = p }
	if (!((p SUBSEP w) in seenw)) { seenw[p SUBSEP w] = 1; W[p, ++nw[p]] = w }
	if (!(r in seenr)) { seenr[r] = 1; R[++nr] = r }
}
END {
	for (i = 1; i <= np; i++) {
		p = P[i]
		p2 = p; c2 = "libnfs"
		if (index(p, " (") > 0) { p2 = substr(p, 1, index(p, " (") - 1); c2 = substr(p, index(p, " (") + 2); sub(/ client\)$/, "", c2) }
		print "## " p
		print ""
		print "Seconds per run, mean ± SEM (n per cell in the details below); lower is better."
		print ""
		line = "| scenario |"; sep = "|---|"
		for (j = 1; j <= nw[p]; j++) { line = line " " W[p, j] " |"; sep = sep "---:|" }
		print line; print sep
		for (x = 1; x <= nr; x++) {
			r = R[x]; line = "| " r " |"; any = 0
			for (j = 1; j <= nw[p]; j++) {
				w = W[p, j]
				if (has(p, w, r)) { line = line " " fmt(M[key(p, w, r)], S[key(p, w, r)], N[key(p, w, r)]) " |"; any = 1 }
				else line = line " n/a |"
			}
			if (any) print line
		}
		print ""
		print "Details: n measured runs; speed = direct time / this time; MB/s of file data; MB that crossed the upstream link; the proxy process'"'"'s CPU seconds and peak RSS per run; cachefsd'"'"'s READ hit ratio and upstream calls per run."
		print ""
		print "| workload | scenario | n | speed vs direct | MB/s | link MB | proxy CPU s | proxy peak RSS MiB | hit ratio | upstream calls | client calls |"
		print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for (j = 1; j <= nw[p]; j++) {
			w = W[p, j]
			for (x = 1; x <= nr; x++) {
				r = R[x]; k = key(p, w, r)
				if (!(k in M)) continue
				sp = has(p, w, "direct") && M[k] > 0 ? sprintf("%.2f×", M[key(p, w, "direct")] / M[k]) : "n/a"
				printf "| %s | %s | %d | %s | %.0f | %.1f | %s | %s | %s | %s | %.0f |\n", w, r, N[k], sp,
					(M[k] > 0 ? B[k] / M[k] / 1e6 : 0), L[k] / 1e6,
					(CPU[k] == "" ? "–" : sprintf("%.2f", CPU[k])),
					(RSS[k] == "" ? "–" : sprintf("%.0f", RSS[k] / 1024)),
					(HR[k] == "" ? "–" : sprintf("%.3f", HR[k])),
					(UC[k] == "" ? "–" : sprintf("%.0f", UC[k])), CALLS[k]
			}
		}
		print ""
		n = split(charts, ch, " ")
		for (j = 1; j <= n; j++) if (index(ch[j], "libnfs-" p "-") == 1 || index(ch[j], c2 "-" p2 "-") == 1) print "![" ch[j] "](" ch[j] ")"
		print ""
	}
	print "## Verdicts"
	print ""
	print "warm = cache filled, page caches dropped and cachefsd restarted (warm-disk); cold = empty cache, page caches dropped; speeds are direct time / cachefsd time measured in the same run." (la == "" ? "" : " Two builds: these verdicts and the acceptance figures are A'"'"'s (" la ").")
	print ""
	for (i = 1; i <= np; i++) {
		p = P[i]
		for (j = 1; j <= nw[p]; j++) {
			w = W[p, j]
			if (!has(p, w, "direct")) continue
			mode = has(p, w, "ttl-warm-disk") ? "ttl" : (has(p, w, "strict-warm-disk") ? "strict" : "")
			v = wlabel(w) " " plabel(p) ": "
			if (mode == "" && has(p, w, "proxied")) {
				rw = ratio(p, w, "proxied", "direct")
				v = v "the proxied mount is " times(rw) " direct (client caches dropped, proxy cache as it was)"
				print "* " v " → " (rw >= 1.10 ? "caching helps here" : (rw >= 0.95 ? "no measurable gain" : "the proxied mount is slower here")) "."
				continue
			}
			if (mode == "") { print "* " v "no cachefsd warm runs."; continue }
			rw = ratio(p, w, mode "-warm-disk", "direct")
			v = v "cachefsd " mode " warm is " times(rw) " direct"
			if (mode == "ttl" && has(p, w, "strict-warm-disk"))
				v = v " (strict warm: " sprintf("%.2f×", ratio(p, w, "strict-warm-disk", "direct")) ")"
			if (has(p, w, mode "-warm-page"))
				v = v ", " sprintf("%.2f×", ratio(p, w, mode "-warm-page", "direct")) " with hot page caches"
			cold = ""
			if (has(p, w, mode "-cold")) {
				cc = M[key(p, w, mode "-cold")] / M[key(p, w, "direct")] - 1
				cold = cc
				v = v "; cold costs " pct(cc)
			}
			if (has(p, w, "ganesha-proxy"))
				v = v "; Ganesha proxy: " sprintf("%.2f×", ratio(p, w, "ganesha-proxy", "direct"))
			if (rw >= 1.10 && (cold == "" || cold <= 0.10)) act = "caching helps here"
			else if (rw >= 1.10) act = "caching helps once warm; first reads cost more"
			else if (rw >= 0.95) act = "no measurable gain"
			else act = "cachefsd is slower here"
			print "* " v " → " act "."
		}
	}
	print ""
	# the NFSv4 upstream (--upstream-version 4 or 3,4): cachefsd over v4
	# against direct NFSv4 access (direct-v4: the libnfs NFSv4 client) and,
	# where the run has them, the same mode over v3 and the Ganesha peer
	# (itself an NFSv4 client of the filer)
	v4 = 0
	for (x = 1; x <= nr; x++) if (R[x] ~ /^v4-/) v4 = 1
	if (v4) {
		print "## NFSv4 upstream"
		print ""
		print "cachefsd with `--upstream-version 4` (its clients on NFSv3), same export, link and data set as the other rows, same rounds. Speeds are direct-v4 time / this time (direct-v4: the libnfs NFSv4.0 client reading the filer directly); cold overhead is cold time / direct-v4 time − 1."
		print ""
		print "| profile | workload | mode | direct-v4 vs direct (v3) | v4 cold overhead | v4 warm-disk | v4 warm-page | v3 warm-disk (vs direct v3) | Ganesha proxy (vs direct-v4) |"
		print "|---|---|---|---:|---:|---:|---:|---:|---:|"
		for (i = 1; i <= np; i++) {
			p = P[i]
			for (j = 1; j <= nw[p]; j++) {
				w = W[p, j]
				if (!has(p, w, "direct-v4")) continue
				for (x = 1; x <= 2; x++) {
					md = (x == 1 ? "strict" : "ttl")
					if (!has(p, w, "v4-" md "-cold") && !has(p, w, "v4-" md "-warm-disk")) continue
					printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p, w, md,
						(has(p, w, "direct") ? sprintf("%.2f×", ratio(p, w, "direct-v4", "direct")) : "n/a"),
						(has(p, w, "v4-" md "-cold") ? pct(M[key(p, w, "v4-" md "-cold")] / M[key(p, w, "direct-v4")] - 1) : "n/a"),
						(has(p, w, "v4-" md "-warm-disk") ? sprintf("%.2f×", ratio(p, w, "v4-" md "-warm-disk", "direct-v4")) : "n/a"),
						(has(p, w, "v4-" md "-warm-page") ? sprintf("%.2f×", ratio(p, w, "v4-" md "-warm-page", "direct-v4")) : "n/a"),
						(has(p, w, md "-warm-disk") && has(p, w, "direct") ? sprintf("%.2f×", ratio(p, w, md "-warm-disk", "direct")) : "n/a"),
						(has(p, w, "ganesha-proxy") ? sprintf("%.2f×", ratio(p, w, "ganesha-proxy", "direct-v4")) : "n/a")
				}
			}
		}
		print ""
		print "| criterion (issue 19) | measured | holds |"
		print "|---|---|---|"
		for (i = 1; i <= np; i++) {
			p = P[i]
			if (p == "loopback") continue
			for (j = 1; j <= nw[p]; j++) {
				w = W[p, j]
				if (!has(p, w, "direct-v4")) continue
				for (x = 1; x <= 2; x++) {
					md = (x == 1 ? "strict" : "ttl")
					if (!has(p, w, "v4-" md "-cold")) continue
					cc = M[key(p, w, "v4-" md "-cold")] / M[key(p, w, "direct-v4")] - 1
					printf "| I19: v4 cold overhead ≤ 10 %% against direct NFSv4 (%s, %s, %s) | %s | %s |\n", w, p, md, pct(cc), (cc <= 0.10 ? "yes" : "**no**")
				}
			}
		}
		print ""
	}
	if (upstream == "knfsd") {
		# the guest sets the absolute speed (TCG): the ratios are the result
		print "## Ratios (kernel nfsd guest)"
		print ""
		print "direct time / this time, means of the same run (> 1× = faster than direct), ± from the two SEMs; the guest limits absolute speed, so these are the figures to read."
		print ""
		line = "| scenario |"; sep = "|---|"
		for (i = 1; i <= np; i++)
			for (j = 1; j <= nw[P[i]]; j++) { line = line " " W[P[i], j] " " P[i] " |"; sep = sep "---:|" }
		print line; print sep
		for (x = 1; x <= nr; x++) {
			r = R[x]
			if (r == "direct") continue
			line = "| " r " |"
			for (i = 1; i <= np; i++)
				for (j = 1; j <= nw[P[i]]; j++) {
					p = P[i]; w = W[p, j]; kd = key(p, w, "direct"); k = key(p, w, r)
					if (!(k in M) || !(kd in M) || M[k] <= 0 || M[kd] <= 0) { line = line " n/a |"; continue }
					f = M[kd] / M[k]
					e = f * sqrt((S[kd] / M[kd]) ^ 2 + (S[k] / M[k]) ^ 2)
					line = line " " sprintf("%.2f× ± %.2f", f, e) " |"
				}
			print line
		}
		print ""
		print "The acceptance figures of issues 3 and 4 are defined against the nfs-ganesha setup (loopback NFS at GB/s, the local disk): not computed for this upstream."
		print ""
		exit
	}
	print "## Acceptance figures (issues 3, 4 and 17)"
	print ""
	print "| criterion | measured | holds |"
	print "|---|---|---|"
	# issue 3: warm big-file read >= 80 % of min(local disk, loopback)
	for (j = 1; j <= nw["loopback"]; j++) {
		w = W["loopback", j]
		if (w !~ /^cat/) continue
		for (x = 1; x <= 2; x++) {
			r = (x == 1 ? "strict-warm-disk" : "strict-warm-page")
			if (!has("loopback", w, r) || !has("loopback", w, "direct")) continue
			lo = B[key("loopback", w, "direct")] / M[key("loopback", w, "direct")] / 1e6
			# the local disk: side by side (the local-disk row, every
			# round) when the run has it, else the start-of-run figure
			dk = disk_mbs; dsrc = "at the start of the run"
			if (has("loopback", w, "local-disk")) {
				dk = B[key("loopback", w, "local-disk")] / M[key("loopback", w, "local-disk")] / 1e6
				dsrc = "same rounds"
			}
			ref = (dk > 0 && dk < lo) ? dk : lo
			got = B[key("loopback", w, r)] / M[key("loopback", w, r)] / 1e6
			f = got / ref
			printf "| I3: warm big-file read (%s, %s) ≥ 80 %% of min(local disk %s MB/s (%s), direct loopback NFS %.0f MB/s) | %.0f MB/s = %.0f %% | %s |\n",
				w, r, (dk > 0 ? sprintf("%.0f", dk) : "?"), dsrc, lo, got, f * 100, (f >= 0.8 ? "yes" : "**no**")
		}
	}
	for (i = 1; i <= np; i++) {
		p = P[i]
		if (has(p, "tar", "strict-warm-disk") && has(p, "tar", "direct")) {
			f = ratio(p, "tar", "strict-warm-disk", "direct")
			printf "| I3: warm many-small-files tar faster than direct (%s, strict) | %.2f× | %s |\n", p, f, (f > 1 ? "yes" : "**no**")
			printf "| I4: strict never slower than direct (tar, %s, warm-disk) | %.2f× | %s |\n", p, f, (f >= 1 ? "yes" : "**no**")
		}
		for (j = 1; j <= nw[p]; j++) {
			w = W[p, j]
			for (x = 1; x <= 2; x++) {
				md = (x == 1 ? "strict" : "ttl")
				if (!has(p, w, md "-cold") || !has(p, w, "direct")) continue
				cc = M[key(p, w, md "-cold")] / M[key(p, w, "direct")] - 1
				printf "| I3: cold overhead ≤ 10 %% (%s, %s, %s) | %s | %s |\n", w, p, md, pct(cc), (cc <= 0.10 ? "yes" : "**no**")
			}
		}
	}
	if (has("lan", "tar", "ttl-warm-disk") && has("lan", "tar", "direct")) {
		f = ratio("lan", "tar", "ttl-warm-disk", "direct")
		printf "| I4: ttl warm tar ≥ 3× faster than direct on the 1 Gbit/s link | %.2f× | %s |\n", f, (f >= 3 ? "yes" : "**no**")
	} else if (has("lan", "tar", "direct"))
		print "| I4: ttl warm tar ≥ 3× faster than direct on the 1 Gbit/s link | ttl mode not available in this build | n/a |"
	# issue 17: a ttl warm walk answered from the page cache costs per
	# client call at most 1.15× what a NULL call to the same daemon costs
	# (floor.txt, measured in this run): the rest is our own work per call.
	# floor.txt: "PROFILE: direct X us, cachefsd MODE X us, cachefsd MODE [LB] X us"
	while ((getline fl < floorf) > 0) {
		fp = substr(fl, 1, index(fl, ":") - 1)
		nf = split(substr(fl, index(fl, ":") + 2), fs, ", ")
		for (q = 1; q <= nf; q++) {
			if (fs[q] !~ /^cachefsd /) continue
			t = substr(fs[q], 10); sub(/ us$/, "", t)
			us = t; sub(/.* /, "", us); sub(/ [^ ]*$/, "", t)
			FLOOR[fp, t] = us
		}
	}
	close(floorf)
	for (i = 1; i <= np; i++) {
		p = P[i]
		if (index(p, " (") > 0) continue # only the libnfs client: floor.txt is its
		for (x = 1; x <= 2; x++) {
			r = "ttl-warm-page"; t = "ttl"
			if (x == 2) { if (lb == "") continue; r = r " [" lb "]"; t = t " [" lb "]" }
			k = key(p, "tar", r)
			if (!(k in M) || CALLS[k] <= 0 || !((p, t) in FLOOR) || FLOOR[p, t] <= 0) continue
			us = M[k] / CALLS[k] * 1e6
			f = us / FLOOR[p, t]
			printf "| I17: ttl warm walk per call ≤ 1.15× cachefsd'"'"'s NULL floor (tar, %s, %s) | %.1f µs/call (%.3f s / %.0f calls) vs floor %.1f µs = %.2f× | %s |\n",
				p, r, us, M[k], CALLS[k], FLOOR[p, t], f, (f <= 1.15 ? "yes" : "**no**")
		}
	}
	print ""
}' "$dir/summary.csv" >>"$dir/report.md"

{
	if [ -s "$dir/machine.txt" ]; then
		echo "## Machine reference"
		echo
		sed 's/^/    /' "$dir/machine.txt"
		echo
	fi
	if [ -s "$dir/floor.txt" ]; then
		echo "## Per-call floor (NFS NULL, one call at a time, µs per call)"
		echo
		echo "The bench client's round trip with no file system work, to the upstream"
		echo "over each profile's link and to cachefsd (which answers NULL itself)."
		echo "A warm ttl walk cannot beat direct by much more than direct's time per"
		echo "call over cachefsd's floor."
		echo
		sed 's/^/    /' "$dir/floor.txt"
		echo
	fi
	if [ -s "$dir/relay.txt" ]; then
		echo "## Relay accuracy (wan profile, measured in this run)"
		echo
		sed 's/^/    /' "$dir/relay.txt"
		echo
	fi
	if [ -s "$dir/guest.md" ]; then
		cat "$dir/guest.md"
		echo
	fi
	echo "Raw runs: raw.csv; statistics: summary.csv (benchstat)."
} >>"$dir/report.md"
