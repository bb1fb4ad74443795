#!/usr/bin/env bash
# The real Trino against a Sift gateway (part of scripts/test.sh): TPC-DS SF 0.01 loaded twice
# into the gateway's embedded store, as dsdgen text (for Sift's own client) and gzipped (Trino
# up to 426 pushes S3 Select down only on compressed text); the `ceph72` queries through
# Trino with S3 Select pushdown on must give the rows `sift tpcds run` gives in fetch mode,
# and the gateway must have answered Trino's SelectObjectContent requests (a pushdown that
# fell back to GET fails `trino-run`). SKIPPED with the reason when scripts/trino.sh cannot
# install or start Trino.
#
# Environment: SIFT_BIN (default target/debug/sift), SIFT_TRINO_TEST_QUERIES (default
# ceph72), SIFT_TRINO_TEST_PORT (the gateway's, default 19480).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SIFT_BIN:-target/debug/sift}
QUERIES=${SIFT_TRINO_TEST_QUERIES:-ceph72}
PORT=${SIFT_TRINO_TEST_PORT:-19480}
ENDPOINT=http://127.0.0.1:$PORT
work=$(mktemp -d)
gateway_pid=""

cleanup() {
    scripts/trino.sh stop >/dev/null 2>&1 || true
    [[ -n $gateway_pid ]] && kill "$gateway_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "trino-test: failed at line $LINENO: $BASH_COMMAND" >&2; tail -n 5 "$work"/*.log >&2' ERR

export AWS_ACCESS_KEY_ID=sift-trino AWS_SECRET_ACCESS_KEY=sift-trino-secret
SIFT_ACCESS_KEY=$AWS_ACCESS_KEY_ID SIFT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
    "$BIN" gateway --listen "127.0.0.1:$PORT" --data-dir "$work/store" >"$work/gateway.log" 2>&1 &
gateway_pid=$!
for _ in $(seq 1 50); do
    curl -sf "$ENDPOINT/metrics" >/dev/null && break
    sleep 0.2
done

if ! SIFT_TRINO_S3_ENDPOINT=$ENDPOINT SIFT_TRINO_S3_ACCESS_KEY=$AWS_ACCESS_KEY_ID \
    SIFT_TRINO_S3_SECRET_KEY=$AWS_SECRET_ACCESS_KEY scripts/trino.sh start \
    >"$work/trino.env" 2>"$work/trino.log"; then
    reason=$(grep 'cannot start' "$work/trino.log" | tail -1)
    echo "SKIPPED: Trino against Sift (scripts/trino-test.sh): ${reason:-scripts/trino.sh failed}"
    exit 0
fi
set -a
# shellcheck disable=SC1091
. "$work/trino.env"
set +a

echo "trino-test: Trino $SIFT_TRINO_VERSION; loading TPC-DS SF 0.01 as text and gzipped text"
for format in csv csv-gzip; do
    "$BIN" tpcds load --sf 0.01 --format "$format" --prefix "tpcds-$format" \
        --endpoint "$ENDPOINT" --bucket tpcds >"$work/load-$format.log" 2>&1
done
"$BIN" tpcds run --sf 0.01 --mode fetch --queries "$QUERIES" --prefix tpcds-csv \
    --endpoint "$ENDPOINT" --bucket tpcds --out "$work/sift" >"$work/sift.log" 2>&1
"$BIN" tpcds trino-ddl --sf 0.01 --bucket tpcds --prefix tpcds-csv-gzip >"$work/ddl.sql"
java -jar "$SIFT_TRINO_CLI" --server "$SIFT_TRINO_SERVER" --file "$work/ddl.sql" \
    >"$work/ddl.log" 2>&1
status=0
"$BIN" tpcds trino-run --server "$SIFT_TRINO_SERVER" --sf 0.01 --prefix tpcds-csv-gzip \
    --mode pushdown --queries "$QUERIES" --endpoint "$ENDPOINT" --compare-with "$work/sift" \
    --out "$work/trino" 2>"$work/trino-run.log" || status=$?
if ((status != 0)); then
    tail -20 "$work/trino-run.log"
    echo "FAILED: Trino against Sift (scripts/trino-test.sh), exit $status"
    exit "$status"
fi
echo "trino-test: passed"
