#!/usr/bin/env bash
# Runs the Python client tests (tests/clients/: boto3, the AWS CLI v1, the Docker files)
# against a real `sift gateway` process.
#
#   SIFT_BIN=target/release/sift ./scripts/py-clients.sh [pytest args...]
#
# SIFT_BIN (required) is the `sift` binary to start. The clients live in a venv outside the
# clone, ${SIFT_PY_VENV:-/var/tmp/sift-venv}, holding exactly tests/clients/requirements.txt.
# A stamp file in the venv records the hash of that list (and of the Python that made the
# venv), so a later run with the same list skips pip entirely; a changed list rebuilds the
# venv from scratch. Any failure to install is a failure of this script, never a skip.
# PYTHON (default python3) is the interpreter the venv is made from.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
req="$repo/tests/clients/requirements.txt"
venv="${SIFT_PY_VENV:-/var/tmp/sift-venv}"
python="${PYTHON:-python3}"

die() {
    echo "py-clients.sh: $*" >&2
    exit 1
}

[ -n "${SIFT_BIN:-}" ] || die "set SIFT_BIN to the sift binary to test (e.g. SIFT_BIN=target/release/sift)"
case "$SIFT_BIN" in
    */*) bin="$(cd "$(dirname "$SIFT_BIN")" && pwd)/$(basename "$SIFT_BIN")" ;;
    *) bin="$(command -v "$SIFT_BIN" || true)" ;;
esac
[ -n "$bin" ] && [ -f "$bin" ] && [ -x "$bin" ] || die "SIFT_BIN=$SIFT_BIN is not an executable file"
export SIFT_BIN="$bin"

mkdir -p "$(dirname "$venv")"
venv="$(cd "$(dirname "$venv")" && pwd)/$(basename "$venv")"
case "$venv/" in
    "$repo"/*) die "SIFT_PY_VENV=$venv is inside the clone; put it outside (default /var/tmp/sift-venv)" ;;
esac
command -v "$python" >/dev/null || die "no $python to make the venv with (set PYTHON)"

# What the venv must hold: the pinned list and the interpreter it was made from.
want="$( { cat "$req"; "$python" -c 'import sys; print(sys.version, sys.executable)'; } | sha256sum | cut -d' ' -f1)"
stamp="$venv/.sift-requirements.sha256"

# One installer at a time per venv (two test runs started together share it).
exec 9>"$venv.lock"
flock 9

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "py-clients.sh: venv $venv is up to date"
else
    echo "py-clients.sh: creating venv $venv from $req"
    start=$(date +%s)
    rm -f "$stamp"
    "$python" -m venv --clear "$venv" || die "cannot create the venv $venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
        --require-virtualenv -r "$req" || die "pip install -r $req failed"
    "$venv/bin/python" -m pip check || die "the installed packages are inconsistent"
    echo "$want" >"$stamp"
    echo "py-clients.sh: venv ready in $(($(date +%s) - start)) s"
fi
flock -u 9

cd "$repo"
export PATH="$venv/bin:$PATH"
# The tests must see only the credentials and config the fixtures give them.
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
    AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_CA_BUNDLE
# Arguments that name tests (tests/clients/test_boto3.py, ...::test_x) replace the default.
default=(tests/clients)
for arg in "$@"; do
    case "$arg" in tests/* | *.py | *::*) default=() ;; esac
done
# No .pytest_cache or __pycache__ in the clone.
export PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" -m pytest -p no:cacheprovider "${default[@]}" "$@"
