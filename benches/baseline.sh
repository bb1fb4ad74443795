#!/usr/bin/env bash
# Usage: benches/baseline.sh FILE
#
# Reference throughput for this machine, measured in the same run as the engine figures so
# those can be reported as a ratio to it: `wc -l` is about the cheapest full pass over the
# bytes (a newline scan), so it bounds what a CSV engine reading the same page-cached file
# can hope for. The file is read once to warm the page cache, then `wc -l` is timed three
# times and the best run kept. Output is key=value lines; GB means 10^9 bytes.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1" ]; then
    echo "usage: $0 FILE" >&2
    exit 2
fi
file=$1
bytes=$(stat -c %s "$file")

cat "$file" >/dev/null # warm the page cache

best_ns=
lines=
for _ in 1 2 3; do
    start=$(date +%s%N)
    lines=$(LC_ALL=C wc -l <"$file")
    end=$(date +%s%N)
    ns=$((end - start))
    if [ -z "$best_ns" ] || [ "$ns" -lt "$best_ns" ]; then
        best_ns=$ns
    fi
done

echo "file=$file"
echo "bytes=$bytes"
echo "lines=$lines"
echo "wc_l_secs=$(awk -v ns="$best_ns" 'BEGIN { printf "%.4f", ns / 1e9 }')"
echo "wc_l_gbps=$(awk -v b="$bytes" -v ns="$best_ns" 'BEGIN { printf "%.3f", b / ns }')"
