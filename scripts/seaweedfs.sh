#!/usr/bin/env bash
# A real SeaweedFS S3 server on 127.0.0.1 for Sift's upstream-mode tests.
#
#   scripts/seaweedfs.sh start    build `weed` (first time) or reuse it, start it, print the env
#   scripts/seaweedfs.sh stop     stop the server; the binary and the data stay for reuse
#   scripts/seaweedfs.sh status   exit 0 if the server is running
#
# One `weed server` process runs a master, a volume server, a filer and the S3 gateway, all on
# 127.0.0.1 with ports of their own. SeaweedFS (Apache-2.0) is built from source fetched
# through the Go module proxy, at one pinned pseudo-version, because nothing but package
# registries is reachable. `go install module/weed@version` refuses this module (its go.mod
# has a replace directive), so the script downloads the module with `go mod download` and
# runs `go build ./weed` inside it, where the replace applies.
#
# Layout, outside the repository so that every clone and every later run reuses it:
#   $SIFT_SEAWEEDFS_ROOT/bin/weed        the binary (complete once it exists: a build goes to
#                                        weed.partial and is renamed when it succeeded)
#   $SIFT_SEAWEEDFS_ROOT/gopath/         GOPATH (the module cache, SeaweedFS's source) and
#   $SIFT_SEAWEEDFS_ROOT/gocache/        Go's build cache, both emptied once weed is built
#   $SIFT_SEAWEEDFS_ROOT/install.log     output of the last build
#   $SIFT_SEAWEEDFS_ROOT/run             data/, s3.json (the S3 identity), weed.out, weed.pid, env
#
# Environment: SIFT_SEAWEEDFS_ROOT (default /var/tmp/sift-seaweedfs), SIFT_SEAWEEDFS_PORT
# (S3, default 8333), SIFT_SEAWEEDFS_MASTER_PORT (9333), SIFT_SEAWEEDFS_VOLUME_PORT (8380),
# SIFT_SEAWEEDFS_FILER_PORT (8888); each service's gRPC port is its HTTP port + 10000.
# SIFT_SEAWEEDFS_WAIT (seconds to come up, default 90).
#
# `start` prints the env file (SIFT_SEAWEEDFS_ENDPOINT, SIFT_SEAWEEDFS_ACCESS_KEY,
# SIFT_SEAWEEDFS_SECRET_KEY, SIFT_SEAWEEDFS_VERSION) on stdout; progress goes to stderr. When it
# cannot start, its last line on stderr is "seaweedfs: cannot start: REASON" and it exits 1, so
# a test runner can report the SeaweedFS tests as skipped with that reason.
set -Eeuo pipefail

MODULE=github.com/seaweedfs/seaweedfs
MODULE_VERSION=v0.0.0-20261109003541-7506e5f91cd6 # the newest the Go module proxy serves
ROOT=${SIFT_SEAWEEDFS_ROOT:-/var/tmp/sift-seaweedfs}
PORT=${SIFT_SEAWEEDFS_PORT:-8333}
MASTER_PORT=${SIFT_SEAWEEDFS_MASTER_PORT:-9333}
VOLUME_PORT=${SIFT_SEAWEEDFS_VOLUME_PORT:-8380}
FILER_PORT=${SIFT_SEAWEEDFS_FILER_PORT:-8888}
WAIT=${SIFT_SEAWEEDFS_WAIT:-90}
BIN=$ROOT/bin/weed
RUN=$ROOT/run
REGION=us-east-1

log() { echo "seaweedfs: $*" >&2; }

# The one line a test runner shows as the reason for skipping. Anything this run started is
# stopped first so that a failed start leaves nothing half-running behind.
die() {
    trap - ERR
    if [[ ${STARTING:-0} == 1 ]]; then
        stop_all >/dev/null 2>&1 || true
    fi
    echo "seaweedfs: cannot start: $*" >&2
    exit 1
}

trap 'die "unexpected failure at ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND"' ERR

# Go's caches live beside the binary, never in the clone or in the user's own GOPATH.
go_env() {
    env GOPATH="$ROOT/gopath" GOCACHE="$ROOT/gocache" GOFLAGS="${GOFLAGS:--buildvcs=false}" "$@"
}

# Download the pinned module and build `weed` from it, once.
install_weed() {
    [[ -x $BIN ]] && return 0
    command -v go >/dev/null || die "go is not installed (SeaweedFS is built from source; it needs Go 1.26.6 or newer)"
    mkdir -p "$ROOT/bin" "$ROOT/gopath" "$ROOT/gocache"
    local t0=$SECONDS dir
    : >"$ROOT/install.log"
    log "first run: building SeaweedFS $MODULE_VERSION from the Go module proxy ($(go_env go env GOPROXY)) into $BIN (several minutes on 2 cores; log in $ROOT/install.log)"
    if ! dir=$(go_env go mod download -json "$MODULE@$MODULE_VERSION" 2>>"$ROOT/install.log" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p') || [[ -z $dir || ! -d $dir ]]; then
        tail -n 3 "$ROOT/install.log" >&2
        die "cannot download $MODULE@$MODULE_VERSION through the Go module proxy (see $ROOT/install.log)"
    fi
    log "module in $dir after $((SECONDS - t0)) s; building ./weed"
    if ! (cd "$dir" && go_env go build -o "$BIN.partial" ./weed) >>"$ROOT/install.log" 2>&1; then
        tail -n 5 "$ROOT/install.log" >&2
        rm -f "$BIN.partial"
        die "go build of $MODULE/weed@$MODULE_VERSION failed (see $ROOT/install.log)"
    fi
    mv "$BIN.partial" "$BIN"
    echo "$((SECONDS - t0))" >"$ROOT/install-seconds"
    # The binary is all a later start needs: drop the ~4 GB of module and build caches.
    go_env go clean -cache -modcache >>"$ROOT/install.log" 2>&1 || true
    log "built in $((SECONDS - t0)) s: $("$BIN" version 2>/dev/null | head -n 1)"
}

# "4.53" from `weed version` ("version 30GB 4.53  linux amd64").
weed_version() {
    "$BIN" version 2>/dev/null | awk '/^version/ { print $3; exit }'
}

# Is process $1 alive? A server that has ended lingers as a zombie until init reaps it.
alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $state && $state != Z ]]
}

# The pid of the running weed, from its pid file, if that process is still our binary.
weed_pid() {
    local pid exe
    pid=$(cat "$RUN/weed.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    [[ $exe == "$(realpath -m "$BIN")" ]] && echo "$pid"
}

# Does something answer HTTP on port $1? Plain bash, so the host needs no curl for it.
answers() {
    # shellcheck disable=SC2016 # $1 and $line belong to the inner bash
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
        IFS= read -r line <&3 && [[ $line == HTTP/* ]]' answers "$1" 2>/dev/null
}

# Is anything listening on port $1?
listening() {
    # shellcheck disable=SC2016 # $1 belongs to the inner bash
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' listening "$1" 2>/dev/null
}

# A signed S3 request with curl's SigV4 (7.88 needs the payload hash header).
s3_call() {
    local method=$1 path=$2
    shift 2
    curl -fs --max-time 10 -o /dev/null -X "$method" \
        --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@" "http://127.0.0.1:$PORT$path"
}

# Ready means writable: a bucket made, an object written to a volume and both removed
# again. S3 answers before the volume server has joined the master, and a write then fails
# with "no free volumes".
s3_ready() {
    answers "$PORT" || return 1
    command -v curl >/dev/null || return 0 # nothing to sign with; the tests will tell
    local bucket=sift-probe-$$-$RANDOM ok=0
    s3_call PUT "/$bucket" || return 1
    s3_call PUT "/$bucket/probe" --data-binary probe && s3_call DELETE "/$bucket/probe" && ok=1
    s3_call DELETE "/$bucket" || true
    [[ $ok == 1 ]]
}

# The S3 identity the tests sign as: keys generated once and kept with the data.
ensure_identity() {
    if [[ ! -s $RUN/keys ]]; then
        printf 'sift%s %s\n' "$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
            "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$RUN/keys"
    fi
    read -r ACCESS_KEY SECRET_KEY <"$RUN/keys"
    cat >"$RUN/s3.json" <<EOC
{
  "identities": [
    {
      "name": "sift",
      "credentials": [{ "accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY" }],
      "actions": ["Admin", "Read", "List", "Tagging", "Write"]
    }
  ]
}
EOC
}

write_env() {
    cat >"$RUN/env.tmp" <<EOC
SIFT_SEAWEEDFS_ENDPOINT=http://127.0.0.1:$PORT
SIFT_SEAWEEDFS_ACCESS_KEY=$ACCESS_KEY
SIFT_SEAWEEDFS_SECRET_KEY=$SECRET_KEY
SIFT_SEAWEEDFS_VERSION=$(weed_version)
EOC
    mv "$RUN/env.tmp" "$RUN/env"
}

running_port() {
    sed -n 's/^SIFT_SEAWEEDFS_ENDPOINT=http:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$RUN/env" 2>/dev/null
}

# master + volume + filer + S3 in one process, in its own session (so it outlives the shell
# that started it) and without the lock (9>&-), or the next stop would wait for it forever.
spawn_weed() {
    mkdir -p "$RUN/data"
    # Each bucket is a collection, and the master grows 7 volumes for a new one by default:
    # one at a time, so that the volume slots last for many buckets (as `weed mini` does).
    # The working directory is $RUN, so no master.toml or filer.toml of the caller's applies.
    # A master that resumes its raft state waits an election timeout (10 s by default) before
    # it leads, alone as it is; the volume server cannot join until then.
    (cd "$RUN" && exec setsid env WEED_MASTER_VOLUME_GROWTH_COPY_1=1 "$BIN" server \
        -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$RUN/data" \
        -master.port="$MASTER_PORT" -master.port.grpc=$((MASTER_PORT + 10000)) \
        -master.volumeSizeLimitMB=1024 -master.telemetry=false -master.electionTimeout=2s \
        -volume.port="$VOLUME_PORT" -volume.port.grpc=$((VOLUME_PORT + 10000)) -volume.max=64 \
        -volume.preStopSeconds=0 \
        -filer -filer.port="$FILER_PORT" -filer.port.grpc=$((FILER_PORT + 10000)) \
        -filer.localSocket="$RUN/filer.sock" \
        -s3 -s3.port="$PORT" -s3.port.grpc=$((PORT + 10000)) -s3.config="$RUN/s3.json" \
        -s3.localSocket="$RUN/s3.sock" -s3.port.iceberg=0 -s3.port.lance=0 \
        -s3.allowDeleteBucketNotEmpty=false -s3.autoCreateBucket=false \
        </dev/null >"$RUN/weed.out" 2>&1 9>&-) &
    echo $! >"$RUN/weed.pid"
}

wait_ready() {
    local deadline=$((SECONDS + WAIT))
    until s3_ready; do
        if ! alive "$(cat "$RUN/weed.pid")" || ((SECONDS >= deadline)); then
            log "weed output tail:"
            tail -n 15 "$RUN/weed.out" >&2 2>/dev/null || true
            if ((SECONDS >= deadline)); then
                die "SeaweedFS's S3 did not accept a write within ${WAIT}s (log in $RUN/weed.out)"
            fi
            die "weed server exited during startup (log in $RUN/weed.out)"
        fi
        sleep 0.5
    done
}

start_weed() {
    trap 'die "interrupted"' INT TERM
    mkdir -p "$ROOT" "$RUN"
    exec 9>"$ROOT/lock"
    flock -w 3600 9 || die "another seaweedfs.sh holds $ROOT/lock"

    if weed_pid >/dev/null; then
        local old
        old=$(running_port)
        if [[ -n $old && $old != "$PORT" ]]; then
            die "SeaweedFS of $ROOT already runs with S3 on port $old, not $PORT (run '$0 stop' first)"
        fi
        if answers "$PORT"; then
            log "already running (pid $(weed_pid)); env in $RUN/env"
            cat "$RUN/env"
            return 0
        fi
    fi
    stop_all >/dev/null 2>&1 || true
    local p
    for p in "$PORT" "$MASTER_PORT" "$VOLUME_PORT" "$FILER_PORT" $((PORT + 10000)) \
        $((MASTER_PORT + 10000)) $((VOLUME_PORT + 10000)) $((FILER_PORT + 10000)); do
        if listening "$p"; then
            die "port $p on 127.0.0.1 is already in use by another process (see the SIFT_SEAWEEDFS_*_PORT variables)"
        fi
    done

    install_weed
    ensure_identity
    STARTING=1
    local t0=$SECONDS
    spawn_weed
    wait_ready
    STARTING=0
    write_env
    log "SeaweedFS $(weed_version) ($MODULE@$MODULE_VERSION) running (pid $(cat "$RUN/weed.pid")), S3 on 127.0.0.1:$PORT, up in $((SECONDS - t0)) s; env in $RUN/env"
    cat "$RUN/env"
}

stop_all() {
    local pid
    if pid=$(weed_pid); then
        kill "$pid"
        # A clean stop takes a while: the filer tries to flush its metadata log for up to
        # 15 s once the volume server has gone.
        for _ in $(seq 300); do
            alive "$pid" || break
            sleep 0.2
        done
        if alive "$pid"; then
            kill -9 "$pid"
            log "weed (pid $pid) was still stopping 60 s after SIGTERM; killed it"
        fi
        log "stopped weed (pid $pid)"
    fi
    rm -f "$RUN/weed.pid" "$RUN/env" "$RUN/filer.sock" "$RUN/s3.sock"
}

status_weed() {
    local pid
    if pid=$(weed_pid); then
        echo "running (pid $pid) with S3 on 127.0.0.1:$(running_port); env in $RUN/env"
        return 0
    fi
    echo "not running"
    return 1
}

case "${1:-}" in
start) start_weed ;;
stop)
    trap - ERR
    mkdir -p "$ROOT"
    exec 9>"$ROOT/lock"
    flock -w 600 9
    stop_all
    ;;
status)
    trap - ERR
    status_weed
    ;;
*)
    trap - ERR
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
