#!/usr/bin/env bash
# The Ceph benchmark's setup reproduced side by side: the real Trino (its Hive connector's S3
# Select pushdown) and Sift's own client, in a client network namespace whose only way to the
# storage is one veth pair rate-limited by the kernel (`tc tbf`, both directions), against
#   (a) Ceph RGW's own S3 Select (the benchmark's setup),
#   (b) Sift in upstream mode in front of that RGW (Sift reads RGW over loopback, as a
#       gateway beside a storage node's RGW would),
#   (c) Sift's embedded store,
#   (d) `sift tpcds run` against Sift's store in every mode,
# with Trino without pushdown reading the uncompressed text from RGW as the reference.
#
#   benches/trino-tpcds.sh [--sf SF] [--rate RATE] [--queries LIST] [--out DIR]
#
# Defaults: --sf 1 --rate 1gbit --queries ceph72 --out trino-tpcds-<RATE>. RATE is tc's
# (e.g. 1gbit, 10gbit); `--rate none` leaves the veth unshaped.
#
# The data is TPC-DS as dsdgen writes it, loaded twice into both stores: as text (what the
# benchmark read and Sift's client reads) and gzipped (`--format csv-gzip`; Trino 368, the
# newest release with pushdown that Maven Central serves, pushes down compressed text only:
# docs/trino.md). Every run is one `sift tpcds run` or `sift tpcds trino-run` in one mode,
# so that the CPU seconds of radosgw, of the OSD, of the Sift gateway and of the client can
# be read from /proc around it, and the bytes the client received from the host side of the
# veth. Trino's rows are compared with `sift tpcds run`'s fetch rows by trino-run itself;
# benches/trino-tpcds-table.py checks the rest and prints the table (DIR/table.md).
#
# Trino 368 through RGW's own select (a) runs the queries of $SIFT_BENCH_RGW_SELECT_QUERIES
# only (default 1,2,5,7,8, the first five of ceph72: each is compared with sift fetch's rows,
# so it must be one that run ran): RGW does not decompress, so every query fails there.
#
# Needs root (namespaces, tc, scripts/ceph-rgw.sh), Java 17 and Maven (scripts/trino.sh) and
# a release `sift` (SIFT_BIN, default target/release/sift). The data stays for later runs:
# in RGW's bucket `tpcds` and in Sift's store ${SIFT_BENCH_STORE:-/var/tmp/sift-bench-store}.
# RGW is restarted to listen on the veth's address too.
set -euo pipefail
cd "$(dirname "$0")/.."

sf=1
rate=1gbit
queries=ceph72
out=
while (($#)); do
    case $1 in
    --sf) sf=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--sf SF] [--rate RATE|none] [--queries LIST] [--out DIR]" >&2; exit 2 ;;
    esac
done
out=$(realpath -m "${out:-trino-tpcds-$rate}")
rgw_select_queries=${SIFT_BENCH_RGW_SELECT_QUERIES:-1,2,5,7,8}
sift=$(realpath "${SIFT_BIN:-target/release/sift}")
store=${SIFT_BENCH_STORE:-/var/tmp/sift-bench-store}
[[ -x $sift ]] || { echo "no $sift: cargo build --release --bin sift" >&2; exit 2; }
((EUID == 0)) || { echo "$0 needs root (network namespaces, tc, Ceph RGW)" >&2; exit 2; }
mkdir -p "$out"

ns="sift-bench-client"
host_if=sbc-host       # root namespace side: its tx counter is what the client received
client_if=sbc-client
host_ip=10.78.0.1
client_ip=10.78.0.2
rgw_run=${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}/run
trino_pid=
trino_run=${SIFT_TRINO_ROOT:-/var/tmp/sift-trino}/run

gateways=()
cleanup() {
    scripts/trino.sh stop >/dev/null 2>&1 || true
    for pid in "${gateways[@]}"; do kill "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

# --- the link -------------------------------------------------------------------------------
ip netns del "$ns" 2>/dev/null || true
ip link del "$host_if" 2>/dev/null || true
ip netns add "$ns"
ip link add "$host_if" type veth peer name "$client_if"
ip link set "$client_if" netns "$ns"
ip addr add "$host_ip/24" dev "$host_if"
ip link set "$host_if" up
ip -n "$ns" addr add "$client_ip/24" dev "$client_if"
ip -n "$ns" link set "$client_if" up
ip -n "$ns" link set lo up
if [[ $rate != none ]]; then
    tc qdisc add dev "$host_if" root tbf rate "$rate" burst 256kb latency 50ms
    tc -n "$ns" qdisc add dev "$client_if" root tbf rate "$rate" burst 256kb latency 50ms
fi

# --- the stores -----------------------------------------------------------------------------
scripts/ceph-rgw.sh stop >/dev/null 2>&1 || true
SIFT_RGW_ALSO_LISTEN=$host_ip scripts/ceph-rgw.sh start >/dev/null
set -a
# shellcheck disable=SC1091
. "$rgw_run/env"
set +a
access=$SIFT_RGW_ACCESS_KEY
secret=$SIFT_RGW_SECRET_KEY
rgw_url=http://$host_ip:${SIFT_RGW_ENDPOINT##*:}

# A Sift gateway on the veth's address; sets $gateway_pid and $gateway_url.
start_gateway() {
    local log=$out/gateway-$1.log
    shift
    "$sift" gateway --listen "$host_ip:0" --access-key "$access" --secret-key "$secret" "$@" \
        >"$log" 2>&1 &
    gateway_pid=$!
    gateways+=("$gateway_pid")
    gateway_url=
    for _ in $(seq 100); do
        gateway_url=$(grep -o "http://$host_ip:[0-9]*" "$log" | head -n 1) && break
        sleep 0.1
    done
    [[ -n $gateway_url ]] || { echo "the gateway did not start (see $log)" >&2; exit 1; }
}
start_gateway upstream --upstream "$SIFT_RGW_ENDPOINT" \
    --upstream-access-key "$access" --upstream-secret-key "$secret"
upstream_pid=$gateway_pid upstream_url=$gateway_url
start_gateway embedded --data-dir "$store"
embedded_pid=$gateway_pid embedded_url=$gateway_url

# Loaded from the root namespace: the load does not cross the shaped link.
for url in "$SIFT_RGW_ENDPOINT" "$embedded_url"; do
    for data in csv:tpcds csv-gzip:tpcds-gz; do
        "$sift" tpcds load --sf "$sf" --format "${data%:*}" --prefix "${data#*:}" \
            --endpoint "$url" --bucket tpcds --access-key "$access" --secret-key "$secret" \
            --region us-east-1 >&2
    done
done

# --- accounting -----------------------------------------------------------------------------
# CPU seconds (user + system) a process has used so far; 0 if there is none.
cpu() {
    local pid=$1
    [[ -n $pid && -r /proc/$pid/stat ]] || { echo 0; return; }
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' \
        "/proc/$pid/stat"
}

# The CPU counters of radosgw, the OSD, the Sift gateway $1 and the client process $2, and
# the bytes sent to the client namespace, space-separated.
reading() {
    echo "$(cpu "$(cat "$rgw_run/radosgw.pid")") $(cpu "$(cat "$rgw_run/ceph-osd.pid")")" \
        "$(cpu "$1") $(cpu "$2") $(cat "/sys/class/net/$host_if/statistics/tx_bytes")" \
        "$(date +%s.%N)"
}

# record NAME MODE BEFORE AFTER [CLIENT_CPU]: a line of DIR/runs.tsv from two readings.
record() {
    local name=$1 mode=$2 client=${5:-}
    read -r r0 o0 s0 c0 b0 t0 <<<"$3"
    read -r r1 o1 s1 c1 b1 t1 <<<"$4"
    awk -v n="$name" -v m="$mode" -v r="$r0 $r1" -v o="$o0 $o1" -v s="$s0 $s1" \
        -v c="$c0 $c1" -v b="$b0 $b1" -v t="$t0 $t1" -v cc="$client" '
        function d(x,  p) { split(x, p, " "); return p[2] - p[1] }
        BEGIN { printf "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.1f\n", n, m, d(r), d(o), d(s),
                       cc != "" ? cc : d(c), d(b), d(t) }' >>"$out/runs.tsv"
}

printf 'run\tmode\tradosgw_cpu_s\tosd_cpu_s\tsift_cpu_s\tclient_cpu_s\tlink_bytes\twall_s\n' \
    >"$out/runs.tsv"

# --- (d) Sift's own client against Sift's store; its fetch rows are every run's reference ---
for mode in fetch pushdown dynamic; do
    echo "$(date -u +%T) sift $mode" >&2
    before=$(reading "$embedded_pid" "")
    /usr/bin/time -f '%U %S' -o "$out/sift-$mode.time" \
        ip netns exec "$ns" "$sift" tpcds run --sf "$sf" --mode "$mode" --queries "$queries" \
        --prefix tpcds --endpoint "$embedded_url" --bucket tpcds --access-key "$access" \
        --secret-key "$secret" --region us-east-1 --out "$out/sift-$mode" \
        >"$out/sift-$mode.log" 2>&1 || { echo "sift $mode failed (see $out/sift-$mode.log)" >&2; exit 1; }
    after=$(reading "$embedded_pid" "")
    record sift "$mode" "$before" "$after" "$(awk '{ print $1 + $2 }' "$out/sift-$mode.time")"
done

# --- (a), (b), (c): one Trino server, a Hive catalog per store -----------------------------
# One JVM for every run, warmed up first: a fresh Trino spends its first dozen queries
# compiling (at SF 1 on two cores, the first eight ceph72 queries took twice as long cold as
# warm), which would otherwise favour whichever run comes later.
scripts/trino.sh stop >/dev/null 2>&1 || true
SIFT_TRINO_NETNS=$ns SIFT_TRINO_S3_ENDPOINT=$embedded_url SIFT_TRINO_S3_ACCESS_KEY=$access \
    SIFT_TRINO_S3_SECRET_KEY=$secret SIFT_TRINO_CATALOGS="rgw=$rgw_url upstream=$upstream_url" \
    scripts/trino.sh start >"$out/trino.env"
set -a
# shellcheck disable=SC1091
. "$out/trino.env"
set +a
trino_pid=$(cat "$trino_run/pid")
for catalog in hive rgw upstream; do
    for prefix in tpcds tpcds-gz; do
        "$sift" tpcds trino-ddl --sf "$sf" --bucket tpcds --prefix "$prefix" --catalog "$catalog"
    done
done >"$out/ddl.sql"
ip netns exec "$ns" java -jar "$SIFT_TRINO_CLI" --server "$SIFT_TRINO_SERVER" \
    --file "$out/ddl.sql" >"$out/ddl.log" 2>&1

# trino NAME CATALOG GATEWAY_URL|- GATEWAY_PID|- PREFIX MODE [QUERIES]: one trino-run (prefix
# tpcds: text, tpcds-gz: gzip; QUERIES defaults to --queries), with the Sift gateway's
# /metrics read around it when there is one. Its rows are compared with sift-fetch's by
# trino-run, which exits 1 when they differ: recorded, and the table lists them (RGW's own
# select over gzip is expected to).
trino() {
    local name=$1 catalog=$2 gateway_url=$3 gateway_pid=$4 prefix=$5 mode=$6
    local these=${7:-$queries} endpoint=()
    [[ $gateway_url == - ]] || endpoint=(--endpoint "$gateway_url")
    echo "$(date -u +%T) $name $mode" >&2
    before=$(reading "${gateway_pid#-}" "$trino_pid")
    ip netns exec "$ns" "$sift" tpcds trino-run --server "$SIFT_TRINO_SERVER" --sf "$sf" \
        --catalog "$catalog" --prefix "$prefix" --mode "$mode" --queries "$these" \
        "${endpoint[@]}" --interface "$client_if" --link "${rate} tbf" \
        --compare-with "$out/sift-fetch" --out "$out/$name-$mode" >"$out/$name-$mode.log" 2>&1 ||
        echo "$name $mode: exit $? (see $out/$name-$mode.log)" >&2
    after=$(reading "${gateway_pid#-}" "$trino_pid")
    [[ $name == warmup ]] || record "$name" "$mode" "$before" "$after"
}
trino warmup hive "$embedded_url" "$embedded_pid" tpcds-gz fetch
trino trino-rgw-text rgw - - tpcds fetch
trino trino-rgw-gzip rgw - - tpcds-gz fetch
# RGW's own select over gzipped text fails every query (RGW reads the compressed bytes as
# CSV; Trino gives up after ~33 s of retries), so it runs on a few queries only.
trino trino-rgw-gzip rgw - - tpcds-gz pushdown "$rgw_select_queries"
trino trino-sift-upstream-gzip upstream "$upstream_url" "$upstream_pid" tpcds-gz pushdown
trino trino-sift-store-gzip hive "$embedded_url" "$embedded_pid" tpcds-gz fetch
trino trino-sift-store-gzip hive "$embedded_url" "$embedded_pid" tpcds-gz pushdown

{
    echo "SF $sf, $queries, link: $rate tbf (veth, both directions), $(date -u +%F), $(nproc) cores," \
        "sift at $(git rev-parse --short HEAD), $SIFT_TRINO_VERSION, Ceph RGW $SIFT_RGW_VERSION"
    echo
    python3 benches/trino-tpcds-table.py "$out"
} | tee "$out/table.md"
