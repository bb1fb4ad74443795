#!/usr/bin/env bash
# The project's test command (README): every test of the workspace, the real clients (Python,
# Java, JavaScript, Hadoop S3A), the namespace cluster, Trino, SeaweedFS and the Ceph RGW tests.
#
# Tests build dependencies with optimisation (see [profile.dev.package."*"] in Cargo.toml) so
# that the engine's tests over megabytes of CSV stay fast; the first build takes a few minutes.
# Arguments go to the first `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's wall time as it ends (and the last one's on any exit), so that a run near CI's
# time limit shows where the time went.
phase_name="" phase_start=$SECONDS netns_runs=""
phase() {
    [[ -z $phase_name ]] || echo "test.sh: $phase_name took $((SECONDS - phase_start)) s ($SECONDS s so far)"
    phase_name=$1 phase_start=$SECONDS
}
trap 'phase ""; [[ -z $netns_runs ]] || rm -rf "$netns_runs"' EXIT

phase "the workspace's tests (cargo test, first build included)"
cargo test --workspace --locked "$@"

# Real clients (boto3, the AWS CLI, the AWS SDKs for Java v2 and JavaScript v3, Hadoop S3A),
# the Docker files' checks and the peer suites (ceph/s3-tests' and minio/mint's s3select
# tests, fetched by scripts/peer-suites.sh), against the binary the tests above just built;
# the script installs what it needs (venv, Maven and npm packages) outside the clone. `-rs` prints the reason of every SKIPPED test.
phase "the real clients (scripts/py-clients.sh)"
SIFT_BIN="${CARGO_TARGET_DIR:-target}/debug/sift" ./scripts/py-clients.sh -q -rs

# TPC-DS on a Ballista cluster over six network namespaces (a scheduler, two executors, two
# gateways in upstream mode, a store), each with its own tbf-limited link; SKIPPED with the
# reason when namespaces cannot be made (not root). Its single-process rows are kept as the
# reference of the same cluster in front of Ceph RGW (below).
phase "the namespace cluster (scripts/cluster-netns.sh)"
netns_runs=$(mktemp -d)
SIFT_BIN="${CARGO_TARGET_DIR:-target}/debug/sift" SIFT_NETNS_KEEP="$netns_runs" \
    ./scripts/cluster-netns.sh

# The real Trino (368, the newest on Maven Central with S3 Select pushdown) against a Sift
# gateway: the ceph72 queries pushed down, rows equal to Sift's own client's; SKIPPED with the
# reason when scripts/trino.sh cannot install or start it.
phase "Trino (scripts/trino-test.sh)"
SIFT_BIN="${CARGO_TARGET_DIR:-target}/debug/sift" ./scripts/trino-test.sh

# Sift in upstream mode in front of a real SeaweedFS (S3 on 127.0.0.1). scripts/seaweedfs.sh
# builds `weed` from the Go module proxy (once, a few minutes) and starts it; when it cannot,
# the SeaweedFS tests are reported as skipped with its reason, never as passed. A failure is
# kept in seaweedfs_status and fails the run at its end.
phase "SeaweedFS (tests/seaweedfs.rs)"
seaweedfs_status=0
seaweedfs_log=$(mktemp)
if scripts/seaweedfs.sh start >"$seaweedfs_log.env" 2>"$seaweedfs_log"; then
    (
        set -a
        # shellcheck disable=SC1091
        . "${SIFT_SEAWEEDFS_ROOT:-/var/tmp/sift-seaweedfs}/run/env"
        set +a
        cargo test --workspace --locked --test seaweedfs -- --ignored
    ) || seaweedfs_status=$?
    if [[ $seaweedfs_status != 0 ]]; then
        echo "FAILED: the SeaweedFS tests (tests/seaweedfs.rs), exit $seaweedfs_status"
    fi
    scripts/seaweedfs.sh stop >/dev/null 2>&1 || true
    rm -f "$seaweedfs_log" "$seaweedfs_log.env"
else
    reason=$(grep 'cannot start' "$seaweedfs_log" | tail -1)
    echo "SKIPPED: the SeaweedFS tests (tests/seaweedfs.rs): ${reason:-scripts/seaweedfs.sh failed; see $seaweedfs_log}"
fi

# Sift in front of a real Ceph RGW. scripts/ceph-rgw.sh builds (once, ~1 min) and starts a
# standalone radosgw; when it cannot (not root, no Debian mirror), the RGW tests are reported
# as skipped with its reason, never as passed. `--workspace`, as above: `-p sift` resolves
# features differently and rebuilds much of the dependency graph.
phase "Ceph RGW (tests/rgw.rs)"
rgw_log=$(mktemp)
if scripts/ceph-rgw.sh start >"$rgw_log.env" 2>"$rgw_log"; then
    set -a
    # shellcheck disable=SC1091
    . "${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}/run/env"
    set +a
    status=$seaweedfs_status
    rgw_root=${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}
    segfaults() { grep -c 'Caught signal (Segmentation fault)' "$rgw_root/run/radosgw.log" 2>/dev/null || true; }
    before=$(segfaults)
    rgw_status=0
    cargo test --workspace --locked --test rgw -- --ignored || rgw_status=$?
    # radosgw 18.2.7 itself segfaults, rarely, under a run's concurrent selects (once in
    # some 26,000 requests here; a "notif-worker0" thread jumping to a heap address). That is
    # its defect, not the test's: it is reported with the log's lines, RGW is started again
    # and the tests run once more; a second failure fails.
    if [[ $rgw_status != 0 && $(segfaults) != "$before" ]]; then
        echo "radosgw segfaulted during tests/rgw.rs (its own defect; $rgw_root/run/radosgw.log):"
        grep -A3 'Caught signal (Segmentation fault)' "$rgw_root/run/radosgw.log" | tail -4
        echo "starting RGW again and running tests/rgw.rs once more"
        scripts/ceph-rgw.sh start >"$rgw_log.env" 2>>"$rgw_log" || true
        set -a
        # shellcheck disable=SC1091
        . "$rgw_root/run/env"
        set +a
        rgw_status=0
        cargo test --workspace --locked --test rgw -- --ignored || rgw_status=$?
    fi
    [[ $rgw_status == 0 ]] || status=$rgw_status
    # The namespace cluster again, its two gateways in front of this RGW (scripts/cluster-netns.sh
    # restarts radosgw to listen on the storage network too; port, keys and env stay as they are).
    phase "the namespace cluster in front of Ceph RGW (scripts/cluster-netns.sh)"
    reference=()
    [[ ! -d $netns_runs/local ]] || reference=(SIFT_NETNS_REFERENCE="$netns_runs/local")
    env SIFT_BIN="${CARGO_TARGET_DIR:-target}/debug/sift" SIFT_NETNS_UPSTREAM=rgw "${reference[@]}" \
        ./scripts/cluster-netns.sh || status=$?
    # Last, as it takes RGW down: the defect docs/gateway.md reports, one select that ends
    # radosgw 18.2.7 (scripts/rgw-crash.sh). Another version is only reported.
    phase "Ceph RGW's crash (scripts/rgw-crash.sh)"
    crash=$(scripts/rgw-crash.sh) && crash_rc=0 || crash_rc=$?
    echo "Ceph RGW $SIFT_RGW_VERSION, scripts/rgw-crash.sh: $crash"
    if [[ $SIFT_RGW_VERSION == 18.2.7 && $crash_rc != 1 ]]; then
        echo "FAILED: radosgw 18.2.7 was expected to crash on scripts/rgw-crash.sh's select (exit $crash_rc)"
        status=1
    fi
    scripts/ceph-rgw.sh stop >/dev/null 2>&1 || true
    rm -f "$rgw_log" "$rgw_log.env"
    exit "$status"
else
    reason=$(grep 'cannot start' "$rgw_log" | tail -1)
    echo "SKIPPED: the Ceph RGW tests (tests/rgw.rs): ${reason:-scripts/ceph-rgw.sh failed; see $rgw_log}"
fi
exit "$seaweedfs_status"
