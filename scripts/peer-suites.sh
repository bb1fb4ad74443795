#!/usr/bin/env bash
# Brings a peer test suite, at the commit the project pins, to a cache outside the clone, and
# prints its directory:
#
#   scripts/peer-suites.sh s3-tests|mint
#
# The suites are public Git repositories: ceph/s3-tests (its s3select tests) and minio/mint
# (run/core/s3select). Nothing of them is copied into the clone; tests/clients/
# test_peer_suites.py runs them against a real gateway. A suite is cloned from
# SIFT_S3TESTS_GIT / SIFT_MINT_GIT (a URL or a local repository; default: the project on
# GitHub) into ${SIFT_PEER_SUITES:-/var/tmp/sift-peer-suites}/NAME, checked out at the pinned
# commit, and reused while that commit is the pinned one. When it cannot be had, the script
# says why on stderr and exits 1; the tests then report themselves SKIPPED with that reason.
set -euo pipefail

name="${1:-}"
case "$name" in
    s3-tests)
        source="${SIFT_S3TESTS_GIT:-https://github.com/ceph/s3-tests}"
        commit=8f0ae7b404a3a2fcf7038bf1e6bf29544fe9b6a3
        ;;
    mint)
        source="${SIFT_MINT_GIT:-https://github.com/minio/mint}"
        commit=c3910db67eff57511c106e507a425e59c57090aa
        ;;
    *)
        echo "usage: scripts/peer-suites.sh s3-tests|mint" >&2
        exit 2
        ;;
esac

cache="${SIFT_PEER_SUITES:-/var/tmp/sift-peer-suites}"
dir="$cache/$name"
if [[ "$(cat "$dir/.sift-commit" 2>/dev/null)" == "$commit" ]]; then
    echo "$dir"
    exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
tmp=$(mktemp -d "$cache/.$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! git clone --quiet --no-checkout "$source" "$tmp/repo" 2>"$tmp/err"; then
    echo "cannot fetch $name from $source: $(tail -1 "$tmp/err")" >&2
    exit 1
fi
if ! git -C "$tmp/repo" -c advice.detachedHead=false checkout --quiet "$commit" 2>"$tmp/err"; then
    echo "cannot check out $name at $commit from $source: $(tail -1 "$tmp/err")" >&2
    exit 1
fi
rm -rf "$tmp/repo/.git"
echo "$commit" >"$tmp/repo/.sift-commit"
rm -rf "$dir"
mv "$tmp/repo" "$dir"
echo "$dir"
