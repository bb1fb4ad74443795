#!/usr/bin/env bash
# Checks Sift's TPC-DS query results against DuckDB (see README.md next to this script).
#
# Usage, from the repository root:
#   cargo run --release -- tpcds gen --sf 1 --out /var/tmp/tpcds-sf1
#   cargo run --release -- tpcds run ... --out RUN        # writes RUN/rows/<mode>/qN.txt
#   tpcds/duckdb/check.sh --data /var/tmp/tpcds-sf1 --rows RUN/rows/fetch [--queries 1,2,5-9|all] [--report OUT.md]
#   tpcds/duckdb/check.sh --plan-only                     # only EXPLAIN every query in DuckDB
#
# All arguments go to check.py (`check.sh --help` lists them). The first run creates a Python
# venv with DuckDB at $SIFT_DUCKDB_VENV (default /var/tmp/sift-duckdb-venv).
set -euo pipefail

DUCKDB_VERSION=2.0.1  # the version the query fixes in check.py were tested with
venv=${SIFT_DUCKDB_VENV:-/var/tmp/sift-duckdb-venv}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ ! -x $venv/bin/python ]]; then
    echo "creating venv $venv" >&2
    python3 -m venv "$venv"
fi
if [[ $("$venv/bin/python" -c 'import duckdb; print(duckdb.__version__)' 2>/dev/null || true) != "$DUCKDB_VERSION" ]]; then
    echo "installing duckdb==$DUCKDB_VERSION into $venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "duckdb==$DUCKDB_VERSION"
fi
exec "$venv/bin/python" "$here/check.py" "$@"
