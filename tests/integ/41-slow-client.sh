#!/bin/bash
# A slow client that sends a thousand 1 MiB READs and never reads a reply:
# the proxy stops reading it once its unsent replies pile up (backpressure),
# so memory stays bounded (without it: a gigabyte of replies), and other
# clients are served as usual meanwhile.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CH=$H_BUILD/tests/churn
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big" 4096 1
mkdir -p "$E/dir"
for i in $(seq 1 50); do echo "$i" >"$E/dir/f$i"; done
h_start_cachefsd px up
rss() { awk -v k="$2:" '$1==k{print $2}' "/proc/$1/status"; }

# 4000 calls, a quarter of them 1 MiB READs, then 10 s without reading
"$CH" 127.0.0.1 "$H_PORT_px" "$E" --cycles 1 --calls 4000 --file big --hold 10 \
	--timeout 3 >"$H_TMP/slow.out" 2>&1 &
slow=$!
sleep 3
# others are served meanwhile
t0=$(date +%s%N)
got=$(nfs-cat "nfs://127.0.0.1$E/big?nfsport=$H_PORT_px&mountport=$H_PORT_px" | md5sum | cut -d' ' -f1)
[ "$got" = "$(h_md5 "$E/big")" ] || h_fail "another client's read during the slow client: wrong bytes"
[ "$(nfs-ls "nfs://127.0.0.1$E/dir?nfsport=$H_PORT_px&mountport=$H_PORT_px" | wc -l)" = 50 ] ||
	h_fail "another client's listing during the slow client"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] || h_fail "another client waited $ms ms behind the slow client"
during=$(rss "$H_PID_px" VmRSS)
wait $slow
alive "$H_PID_px" || h_fail "the proxy died"
hwm=$(rss "$H_PID_px" VmHWM)
[ "$hwm" -lt 262144 ] || h_fail "peak RSS $hwm KiB with a client not reading its replies (bound 256 MiB)"
got=$(nfs-cat "nfs://127.0.0.1$E/big?nfsport=$H_PORT_px&mountport=$H_PORT_px" | md5sum | cut -d' ' -f1)
[ "$got" = "$(h_md5 "$E/big")" ] || h_fail "read after the slow client: wrong bytes"
h_pass "slow client: proxy RSS $during KiB during, peak $hwm KiB; another client served in $ms ms"
