#!/usr/bin/env bash
# The project's test command (README): every test of the workspace, then the client tests.
#
# Tests build dependencies with optimisation (see [profile.dev.package."*"] in Cargo.toml) so
# that the engine's tests over megabytes of CSV stay fast; the first build takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"

# Real Python clients (boto3, the AWS CLI) and the Docker files' checks, against the binary
# the tests above just built; the script installs what it needs into a venv outside the clone.
SIFT_BIN="${CARGO_TARGET_DIR:-target}/debug/sift" ./scripts/py-clients.sh -q
