#!/usr/bin/env bash
# The benchmark's storage side measured against Sift in one run: the same TPC-DS client, the
# same data, the same queries, with scans pushed down
#   (a) to Ceph RGW's own S3 Select (what the Ceph/IBM benchmark measured),
#   (b) to Sift in upstream mode in front of that RGW (the select runs in Sift, which reads
#       the object from RGW with a GET),
#   (c) to Sift's embedded store,
# each in pushdown and dynamic mode, against fetch from RGW as the reference.
#
#   benches/rgw-tpcds.sh [--sf SF] [--link none|RATE] [--queries LIST] [--out DIR]
#
# Defaults: --sf 1 --link none --queries ceph72 --out rgw-tpcds-<link>. RATE is the client's
# emulated link (e.g. 1Gbit: `sift tpcds run --link-bandwidth`), paced between the client and
# whichever store it talks to; Sift in front of RGW reads from it over loopback, as a gateway
# beside the RGW of a storage node would.
#
# Needs root (scripts/ceph-rgw.sh starts the RGW) and a release `sift` (SIFT_BIN, default
# target/release/sift). The data stays for later runs: in RGW's bucket `tpcds`, and in Sift's
# store ${SIFT_BENCH_STORE:-/var/tmp/sift-bench-store}. Each (store, mode) is its own
# `sift tpcds run`, so that the CPU seconds of radosgw, of the OSD and of the Sift gateway can
# be read from /proc around it; benches/rgw-tpcds-table.py then checks every run's rows
# against fetch from RGW and prints the table (DIR/table.md).
set -euo pipefail
cd "$(dirname "$0")/.."

sf=1
link=none
queries=ceph72
out=
while (($#)); do
    case $1 in
    --sf) sf=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--sf SF] [--link none|RATE] [--queries LIST] [--out DIR]" >&2; exit 2 ;;
    esac
done
out=${out:-rgw-tpcds-$link}
sift=${SIFT_BIN:-target/release/sift}
store=${SIFT_BENCH_STORE:-/var/tmp/sift-bench-store}
[[ -x $sift ]] || { echo "no $sift: cargo build --release --bin sift" >&2; exit 2; }
mkdir -p "$out"
link_args=()
[[ $link == none ]] || link_args=(--link-bandwidth "$link")

scripts/ceph-rgw.sh start >/dev/null
set -a
# shellcheck disable=SC1091
. "${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}/run/env"
set +a
rgw_run=${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}/run
access=bench-access
secret=bench-secret-key

gateways=()
cleanup() { for pid in "${gateways[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# A Sift gateway on a free port; sets $gateway_pid and $gateway_url.
start_gateway() {
    local log=$out/gateway-$1.log
    shift
    "$sift" gateway --listen 127.0.0.1:0 --access-key "$access" --secret-key "$secret" "$@" \
        >"$log" 2>&1 &
    gateway_pid=$!
    gateways+=("$gateway_pid")
    for _ in $(seq 100); do
        gateway_url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -n 1) && break
        sleep 0.1
    done
    [[ -n $gateway_url ]] || { echo "the gateway did not start (see $log)" >&2; exit 1; }
}

# CPU seconds (user + system) a process has used so far; 0 if there is none.
cpu() {
    local pid=$1
    [[ -n $pid && -r /proc/$pid/stat ]] || { echo 0; return; }
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' \
        "/proc/$pid/stat"
}

# run NAME URL ACCESS SECRET MODE SIFT_PID: one `sift tpcds run`, with the CPU each store
# process spent during it appended to DIR/cpu.tsv.
run() {
    local name=$1 url=$2 key=$3 sec=$4 mode=$5 sift_pid=$6
    local rgw_pid osd_pid
    rgw_pid=$(cat "$rgw_run/radosgw.pid")
    osd_pid=$(cat "$rgw_run/ceph-osd.pid")
    local r0 o0 s0 r1 o1 s1 t0 t1
    r0=$(cpu "$rgw_pid") o0=$(cpu "$osd_pid") s0=$(cpu "$sift_pid") t0=$(date +%s.%N)
    echo "$(date -u +%T) $name $mode" >&2
    "$sift" tpcds run --sf "$sf" --mode "$mode" --queries "$queries" "${link_args[@]}" \
        --endpoint "$url" --bucket tpcds --access-key "$key" --secret-key "$sec" \
        --region us-east-1 --out "$out/$name-$mode" >"$out/$name-$mode.log" 2>&1 ||
        { echo "$name $mode failed (see $out/$name-$mode.log)" >&2; exit 1; }
    r1=$(cpu "$rgw_pid") o1=$(cpu "$osd_pid") s1=$(cpu "$sift_pid") t1=$(date +%s.%N)
    awk -v n="$name" -v m="$mode" -v r="$r1 - $r0" -v o="$o1 - $o0" -v s="$s1 - $s0" \
        -v t="$t1 - $t0" 'function d(x,  p) { split(x, p, " - "); return p[1] - p[2] }
        BEGIN { printf "%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f\n", n, m, d(r), d(o), d(s), d(t) }' \
        >>"$out/cpu.tsv"
}

rgw_args=(--endpoint "$SIFT_RGW_ENDPOINT" --bucket tpcds --access-key "$SIFT_RGW_ACCESS_KEY"
    --secret-key "$SIFT_RGW_SECRET_KEY" --region us-east-1)
"$sift" tpcds load --sf "$sf" "${rgw_args[@]}" >&2

start_gateway upstream --upstream "$SIFT_RGW_ENDPOINT" \
    --upstream-access-key "$SIFT_RGW_ACCESS_KEY" --upstream-secret-key "$SIFT_RGW_SECRET_KEY"
upstream_pid=$gateway_pid upstream_url=$gateway_url
start_gateway embedded --data-dir "$store"
embedded_pid=$gateway_pid embedded_url=$gateway_url
"$sift" tpcds load --sf "$sf" --endpoint "$embedded_url" --bucket tpcds --access-key "$access" \
    --secret-key "$secret" --region us-east-1 >&2

printf 'store\tmode\tradosgw_cpu_s\tosd_cpu_s\tsift_cpu_s\twall_s\n' >"$out/cpu.tsv"
for mode in fetch pushdown dynamic; do
    run rgw "$SIFT_RGW_ENDPOINT" "$SIFT_RGW_ACCESS_KEY" "$SIFT_RGW_SECRET_KEY" "$mode" ""
done
for mode in pushdown dynamic; do
    run sift-upstream "$upstream_url" "$access" "$secret" "$mode" "$upstream_pid"
done
for mode in pushdown dynamic; do
    run sift-embedded "$embedded_url" "$access" "$secret" "$mode" "$embedded_pid"
done

{
    echo "SF $sf, ${queries}, link: $link, $(date -u +%F), $(nproc) cores, sift at $(git rev-parse --short HEAD), Ceph RGW $SIFT_RGW_VERSION"
    echo
    python3 benches/rgw-tpcds-table.py "$out"
} | tee "$out/table.md"
