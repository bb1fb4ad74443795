#!/usr/bin/env bash
# Trino with its Hive connector's S3 Select pushdown, for Sift's tests and benchmarks.
#
#   scripts/trino.sh start    install (first time) and start a one-node server; print the env
#   scripts/trino.sh stop     stop it; the installation stays for reuse
#   scripts/trino.sh status   exit 0 if it is running
#
# Trino removed S3 Select pushdown (`hive.s3select-pushdown.enabled`) in 427. The Ceph
# benchmark ran 405; Maven Central serves only some releases, so `start` takes the first of
# $SIFT_TRINO_VERSIONS it can download (io.trino:trino-server:V:tar.gz and
# io.trino:trino-cli:V:jar:executable, with `mvn dependency:copy`), remembering for a day a
# version that was not served. One JVM is coordinator and worker; the Hive catalog `hive`
# keeps its metastore in files (emptied at every start: `sift tpcds trino-ddl` recreates the
# tables) and reads S3 path-style from $SIFT_TRINO_S3_ENDPOINT, pushdown on by default
# (the session property hive.s3_select_pushdown_enabled turns it off per query).
#
# Layout, outside the repository so that every clone and every later run reuses it:
#   $SIFT_TRINO_ROOT/dl                   downloads, and `not-served-V` markers
#   $SIFT_TRINO_ROOT/trino-server-V       the unpacked server (complete once .sift-ready exists)
#   $SIFT_TRINO_ROOT/run                  etc/ (config), data/, metastore/, server.log, pid, env
#
# Environment: SIFT_TRINO_S3_ENDPOINT (required, http://HOST:PORT), SIFT_TRINO_S3_ACCESS_KEY
# and SIFT_TRINO_S3_SECRET_KEY, SIFT_TRINO_ROOT (default /var/tmp/sift-trino),
# SIFT_TRINO_PORT (default 18080), SIFT_TRINO_VERSIONS (default "405 368"), SIFT_TRINO_HEAP
# (default 8G: 2 cores and 24 GiB leave room for a gateway and the client), SIFT_TRINO_WAIT
# (seconds to start, default 180), SIFT_TRINO_NETNS (run the server in this network
# namespace, for the link-shaped benchmark), SIFT_TRINO_CATALOGS (more Hive catalogs beside
# `hive`, as space-separated NAME=http://HOST:PORT, each reading S3 from its own endpoint
# with the same keys: one warm server for several stores).
#
# `start` prints the env file (SIFT_TRINO_SERVER, SIFT_TRINO_VERSION, SIFT_TRINO_CLI) on
# stdout; progress goes to stderr. When it cannot start, its last line on stderr is
# "trino: cannot start: REASON" and it exits 1, so a test runner can report its tests as
# skipped with that reason.
set -Eeuo pipefail

ROOT=${SIFT_TRINO_ROOT:-/var/tmp/sift-trino}
PORT=${SIFT_TRINO_PORT:-18080}
VERSIONS=${SIFT_TRINO_VERSIONS:-405 368}
HEAP=${SIFT_TRINO_HEAP:-8G}
WAIT=${SIFT_TRINO_WAIT:-180}
NETNS=${SIFT_TRINO_NETNS:-}
CATALOGS=${SIFT_TRINO_CATALOGS:-}
RUN=$ROOT/run
DL=$ROOT/dl

log() { echo "trino: $*" >&2; }

die() {
    trap - ERR
    if [[ ${STARTING:-0} == 1 ]]; then
        stop_server >/dev/null 2>&1 || true
    fi
    echo "trino: cannot start: $*" >&2
    exit 1
}

trap 'die "unexpected failure at ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND"' ERR

in_netns() {
    if [[ -n $NETNS ]]; then
        ip netns exec "$NETNS" "$@"
    else
        "$@"
    fi
}

running() {
    [[ -f $RUN/pid ]] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null
}

# Downloads and unpacks version $1 unless it is there; fails (quietly) if it is not served.
install_version() {
    local v=$1 server=$ROOT/trino-server-$1
    if [[ -f $server/.sift-ready && -f $DL/trino-cli-$v-executable.jar ]]; then
        return 0
    fi
    if [[ -n $(find "$DL" -maxdepth 1 -name "not-served-$v" -mmin -1440 2>/dev/null) ]]; then
        log "$v: not served (checked within a day)"
        return 1
    fi
    mkdir -p "$DL"
    log "$v: downloading trino-server and trino-cli from Maven Central"
    local artifact
    for artifact in "io.trino:trino-server:$v:tar.gz" "io.trino:trino-cli:$v:jar:executable"; do
        if ! mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$DL" \
            >"$DL/mvn-$v.log" 2>&1; then
            log "$v: $artifact is not served (see $DL/mvn-$v.log)"
            touch "$DL/not-served-$v"
            return 1
        fi
    done
    rm -rf "$server"
    tar xzf "$DL/trino-server-$v.tar.gz" -C "$ROOT"
    [[ -d $server/lib && -d $server/plugin/hive ]] || die "$v: unexpected archive layout"
    touch "$server/.sift-ready"
}

write_config() {
    local v=$1
    rm -rf "${RUN:?}/etc" "${RUN:?}/metastore"
    mkdir -p "$RUN/etc/catalog" "$RUN/data" "$RUN/metastore"
    # 368 and older split a query's memory into user and total; 369 dropped the second.
    local total=""
    if ((v <= 368)); then
        total="query.max-total-memory-per-node=5GB"
    fi
    cat >"$RUN/etc/config.properties" <<EOF
coordinator=true
node-scheduler.include-coordinator=true
http-server.http.port=$PORT
discovery.uri=http://127.0.0.1:$PORT
query.max-memory=5GB
query.max-memory-per-node=5GB
$total
node.environment=sift
node.id=sift-trino
EOF
    local catalog name endpoint
    for catalog in "hive=$SIFT_TRINO_S3_ENDPOINT" $CATALOGS; do
        name=${catalog%%=*} endpoint=${catalog#*=}
        [[ $name =~ ^[a-z][a-z0-9_]*$ && $endpoint == http*://* ]] ||
            die "SIFT_TRINO_CATALOGS: '$catalog' is not NAME=http://HOST:PORT"
        mkdir -p "$RUN/metastore/$name"
        cat >"$RUN/etc/catalog/$name.properties" <<EOF
connector.name=hive
hive.metastore=file
hive.metastore.catalog.dir=file://$RUN/metastore/$name
hive.metastore.user=sift
hive.security=allow-all
hive.s3.endpoint=$endpoint
hive.s3.path-style-access=true
hive.s3.ssl.enabled=false
hive.s3.aws-access-key=${SIFT_TRINO_S3_ACCESS_KEY:-}
hive.s3.aws-secret-key=${SIFT_TRINO_S3_SECRET_KEY:-}
hive.s3select-pushdown.enabled=true
EOF
    done
    echo "io.trino=WARN" >"$RUN/etc/log.properties"
}

stop_server() {
    if running; then
        local pid
        pid=$(cat "$RUN/pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 60); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$RUN/pid"
}

start() {
    [[ -n ${SIFT_TRINO_S3_ENDPOINT:-} ]] || die "SIFT_TRINO_S3_ENDPOINT is not set"
    command -v java >/dev/null || die "no java on PATH"
    command -v mvn >/dev/null || die "no mvn on PATH (needed to download Trino)"
    stop_server
    local v="" candidate tried=()
    for candidate in $VERSIONS; do
        if install_version "$candidate"; then
            v=$candidate
            break
        fi
        tried+=("$candidate")
    done
    [[ -n $v ]] || die "none of Trino ${VERSIONS// /, } could be downloaded"
    ((${#tried[@]} == 0)) || log "using $v (not served: ${tried[*]})"
    STARTING=1
    write_config "$v"
    local server=$ROOT/trino-server-$v
    log "starting Trino $v on port $PORT (heap $HEAP) reading S3 from $SIFT_TRINO_S3_ENDPOINT"
    # Another server on the port would answer the readiness check below for this one.
    if in_netns curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
        die "port $PORT is taken by another process (set SIFT_TRINO_PORT)"
    fi
    (
        cd "$RUN"
        # exec: the pid recorded is the JVM's, so that `stop` stops the server itself.
        local java=(java -server "-Xmx$HEAP" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError
            -Djdk.attach.allowAttachSelf=true -Dconfig=etc/config.properties
            -Dlog.levels-file=etc/log.properties -Dplugin.dir="$server/plugin"
            -cp "$server/lib/*" io.trino.server.TrinoServer)
        if [[ -n $NETNS ]]; then
            exec ip netns exec "$NETNS" "${java[@]}" >"$RUN/server.log" 2>&1
        else
            exec "${java[@]}" >"$RUN/server.log" 2>&1
        fi
    ) &
    echo $! >"$RUN/pid"
    local deadline=$((SECONDS + WAIT))
    until in_netns curl -sf "http://127.0.0.1:$PORT/v1/info" 2>/dev/null | grep -q '"starting":false'; do
        running || die "the server exited: $(grep -a -m1 -E 'ERROR|Exception' "$RUN/server.log" || tail -1 "$RUN/server.log")"
        ((SECONDS < deadline)) || die "not up within ${WAIT}s (see $RUN/server.log)"
        sleep 1
    done
    running || die "the server exited after starting (see $RUN/server.log)"
    STARTING=0
    cat >"$RUN/env" <<EOF
SIFT_TRINO_SERVER=http://127.0.0.1:$PORT
SIFT_TRINO_VERSION=$v
SIFT_TRINO_CLI=$DL/trino-cli-$v-executable.jar
EOF
    log "Trino $v is up"
    cat "$RUN/env"
}

case ${1:-} in
start) start ;;
stop) stop_server ;;
status) if running; then exit 0; else exit 1; fi ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
