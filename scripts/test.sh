#!/usr/bin/env bash
# The project's test command (README): every test of the workspace.
#
# Tests build dependencies with optimisation (see [profile.dev.package."*"] in Cargo.toml) so
# that the engine's tests over megabytes of CSV stay fast; the first build takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
