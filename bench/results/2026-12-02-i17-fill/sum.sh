#!/bin/bash
# sum.sh TAG: per-daemon task-clock ms and page faults, and the mean
for f in /tmp/i17-fill/stat/$1.*; do awk '/task-clock/{gsub(",","",$1);t=$1} /page-faults/{gsub(",","",$1);p=$1} END{print t, p}' $f; done | awk -v tag=$1 '{t+=$1;p+=$2;n++; print tag, $1, $2} END{if(n) printf "%s mean task-clock %.1f ms faults %.0f n=%d\n", tag, t/n, p/n, n}'
