#!/usr/bin/env bash
# A real Ceph RGW on 127.0.0.1 for Sift's tests and benchmarks.
#
#   scripts/ceph-rgw.sh start    build (first time) or reuse the chroot, start radosgw, print the env
#   scripts/ceph-rgw.sh stop     stop radosgw and unmount; the chroot and the data stay for reuse
#   scripts/ceph-rgw.sh status   exit 0 if radosgw is running
#
# radosgw runs standalone, without a Ceph cluster: its objects, buckets, users and zone config
# live in sqlite files (the "dbstore" backend and config store, Ceph >= 17). It comes from a
# Debian trixie chroot (Ceph 18.2) made with debootstrap from the host's configured Debian
# mirror, because the host (bookworm) has no radosgw with dbstore and nothing but package
# registries is reachable.
#
# Layout, outside the repository so that every clone and every later run reuses it:
#   $SIFT_RGW_ROOT/chroot          the trixie chroot (complete only once .sift-rgw-ready exists)
#   $SIFT_RGW_ROOT/run             ceph.conf, sqlite dbs, radosgw.log, radosgw.pid, env;
#                                  bind-mounted at /var/lib/sift-rgw inside the chroot
#   $SIFT_RGW_ROOT/build.log       output of the last chroot build
#
# Environment: SIFT_RGW_ROOT (default /var/tmp/sift-rgw), SIFT_RGW_PORT (default 7480),
# SIFT_RGW_MIRROR (default: the host's Debian mirror), SIFT_RGW_WAIT (seconds, default 60).
#
# `start` prints the env file (SIFT_RGW_ENDPOINT, SIFT_RGW_ACCESS_KEY, SIFT_RGW_SECRET_KEY) on
# stdout; progress goes to stderr. When it cannot start, its last line on stderr is
# "ceph-rgw: cannot start: REASON" and it exits 1, so a test runner can report the RGW tests as
# skipped with that reason.
set -Eeuo pipefail

ROOT=${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}
PORT=${SIFT_RGW_PORT:-7480}
WAIT=${SIFT_RGW_WAIT:-60}
SUITE=trixie
CHROOT=$ROOT/chroot
PARTIAL=$ROOT/chroot.partial
RUN=$ROOT/run
INNER=/var/lib/sift-rgw # where $RUN is seen from inside the chroot
READY=.sift-rgw-ready   # marker in the chroot, written only after a complete build
USER_ID=sift
NAME=client.rgw.sift

log() { echo "ceph-rgw: $*" >&2; }

# The one line a test runner shows as the reason for skipping. Anything this run started is
# torn down first so that a failed start leaves nothing half-running behind.
die() {
    trap - ERR
    if [[ ${STARTING:-0} == 1 ]]; then
        stop_rgw >/dev/null 2>&1 || true
    fi
    echo "ceph-rgw: cannot start: $*" >&2
    exit 1
}

# A command that fails without an explicit check still ends with the one-line reason (start
# also turns an interrupt into one).
trap 'die "unexpected failure at ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND"' ERR

# Run a command inside the chroot with a clean environment (the host's PATH and language
# settings mean nothing there).
in_chroot() {
    local root=$1
    shift
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive chroot "$root" "$@"
}

# Mount points at or under $1, deepest first (so they can be unmounted in that order).
mounts_under() {
    local dir
    dir=$(realpath -m "$1")
    awk -v d="$dir" '{ p = $5; gsub(/\\040/, " ", p); if (p == d || index(p, d "/") == 1) print p }' \
        /proc/self/mountinfo | sort -r
}

unmount_under() {
    local m
    while read -r m; do
        [[ -n $m ]] || continue
        umount "$m" 2>/dev/null || umount -l "$m"
    done < <(mounts_under "$1")
}

# Remove a directory tree only when nothing is mounted inside it: `rm -rf` through a bind
# mount of /dev or of the run directory would delete the host's files.
remove_tree() {
    unmount_under "$1"
    if [[ -n $(mounts_under "$1") ]]; then
        die "$1 still has mounts inside it; unmount them by hand ($(mounts_under "$1" | tr '\n' ' '))"
    fi
    rm -rf --one-file-system "$1"
}

# The host's Debian mirror: the first URIs/deb entry that is not the security archive.
host_mirror() {
    if [[ -n ${SIFT_RGW_MIRROR:-} ]]; then
        echo "$SIFT_RGW_MIRROR"
        return
    fi
    local uri=""
    if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
        uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
            /etc/apt/sources.list.d/debian.sources)
    fi
    if [[ -z $uri && -r /etc/apt/sources.list ]]; then
        uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { if ($i !~ /security/) { print $i; exit } else break } }' \
            /etc/apt/sources.list)
    fi
    echo "${uri%/}"
}

# Is a mirror reachable? Checked up front so that an offline machine gets a clear reason
# rather than a debootstrap log.
mirror_reachable() {
    local url="$1/dists/$SUITE/Release"
    if command -v curl >/dev/null; then
        curl -fsS --max-time 30 -o /dev/null "$url" 2>/dev/null
    elif command -v wget >/dev/null; then
        wget -q -T 30 -O /dev/null "$url"
    else
        return 0 # nothing to check with; debootstrap will tell
    fi
}

ensure_debootstrap() {
    command -v debootstrap >/dev/null && return 0
    log "installing debootstrap on the host"
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap; } \
        >>"$ROOT/build.log" 2>&1; then
        die "debootstrap is not installed and 'apt-get install debootstrap' failed (see $ROOT/build.log)"
    fi
}

# Build the trixie chroot with radosgw into chroot.partial and rename it to chroot only when
# it is complete, so an interrupted build is simply started again.
build_chroot() {
    if [[ -f $CHROOT/$READY ]]; then
        return 0
    fi
    [[ -e $CHROOT ]] && { log "removing incomplete $CHROOT"; remove_tree "$CHROOT"; }
    [[ -e $PARTIAL ]] && { log "removing a half-finished build in $PARTIAL"; remove_tree "$PARTIAL"; }

    local mirror t0=$SECONDS
    mirror=$(host_mirror)
    [[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list (set SIFT_RGW_MIRROR)"
    mirror_reachable "$mirror" || die "Debian mirror $mirror is unreachable (no $SUITE Release file)"
    ensure_debootstrap

    # bookworm's debootstrap knows trixie; an older one can still build it with the sid script
    local script=()
    if [[ ! -e /usr/share/debootstrap/scripts/$SUITE && -e /usr/share/debootstrap/scripts/sid ]]; then
        script=(/usr/share/debootstrap/scripts/sid)
    fi

    log "first run: building a Debian $SUITE chroot with radosgw in $CHROOT from $mirror (about a minute on a fast mirror; log in $ROOT/build.log)"
    : >"$ROOT/build.log"
    if ! debootstrap --variant=minbase "$SUITE" "$PARTIAL" "$mirror" "${script[@]}" \
        >>"$ROOT/build.log" 2>&1; then
        tail -n 5 "$ROOT/build.log" >&2
        unmount_under "$PARTIAL"
        die "debootstrap of Debian $SUITE from $mirror failed (see $ROOT/build.log)"
    fi
    log "debootstrap done after $((SECONDS - t0)) s; installing radosgw"

    # Package scripts must not try to start daemons in the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$PARTIAL/usr/sbin/policy-rc.d"
    chmod 755 "$PARTIAL/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$PARTIAL/etc/resolv.conf" 2>/dev/null || true
    mount -t proc proc "$PARTIAL/proc"
    mount --bind /dev "$PARTIAL/dev"
    # apt wants a pty for its log; without one it prints an (harmless) error.
    if mountpoint -q /dev/pts; then
        mount --bind /dev/pts "$PARTIAL/dev/pts"
    fi
    local ok=0
    {
        in_chroot "$PARTIAL" apt-get update &&
            { in_chroot "$PARTIAL" apt-get install -y --no-install-recommends radosgw ||
                in_chroot "$PARTIAL" apt-get install -y radosgw; } &&
            in_chroot "$PARTIAL" apt-get clean
    } >>"$ROOT/build.log" 2>&1 && ok=1
    unmount_under "$PARTIAL"
    if [[ $ok != 1 ]]; then
        tail -n 5 "$ROOT/build.log" >&2
        die "installing radosgw in the $SUITE chroot failed (see $ROOT/build.log)"
    fi
    [[ -x $PARTIAL/usr/bin/radosgw ]] || die "radosgw is missing from the chroot after installing it"

    local took=$((SECONDS - t0))
    in_chroot "$PARTIAL" radosgw --version >"$PARTIAL/$READY" 2>&1 || true
    echo "built $(date -u +%FT%TZ) in ${took}s from $mirror" >>"$PARTIAL/$READY"
    mv "$PARTIAL" "$CHROOT"
    echo "$took" >"$ROOT/build-seconds"
    log "chroot built in ${took} s ($(head -n 1 "$CHROOT/$READY"))"
}

# The port the running radosgw listens on, from its env file.
running_port() {
    sed -n 's/^SIFT_RGW_ENDPOINT=http:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$RUN/env" 2>/dev/null
}

# Is process $1 alive? A radosgw that has ended lingers as a zombie until its parent (init,
# once the starting shell is gone) reaps it, and `kill -0` still succeeds on a zombie.
alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $state && $state != Z ]]
}

pid_of_rgw() {
    local pid
    pid=$(cat "$RUN/radosgw.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == radosgw ]] &&
        alive "$pid" && echo "$pid"
}

# Does something answer HTTP on the port? Plain bash, so the host needs no curl for it.
answers() {
    # shellcheck disable=SC2016 # $1 and $line belong to the inner bash
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
        IFS= read -r line <&3 && [[ $line == HTTP/* ]]' answers "$PORT" 2>/dev/null
}

mount_chroot() {
    mkdir -p "$CHROOT$INNER"
    mountpoint -q "$CHROOT/proc" || mount -t proc proc "$CHROOT/proc"
    mountpoint -q "$CHROOT/dev" || mount --bind /dev "$CHROOT/dev"
    mountpoint -q "$CHROOT$INNER" || mount --bind "$RUN" "$CHROOT$INNER"
}

write_conf() {
    mkdir -p "$RUN/dbstore"
    # [client] applies to radosgw and radosgw-admin alike, so both see the same sqlite files.
    cat >"$RUN/ceph.conf" <<EOF
# Written by scripts/ceph-rgw.sh on every start; edits are lost.
[global]
    run_dir = $INNER
    log_to_stderr = false
    err_to_stderr = true
[client]
    rgw_backend_store = dbstore
    rgw_config_store = dbstore
    dbstore_db_dir = $INNER/dbstore
    dbstore_config_uri = file://$INNER/dbstore/config.db
    log_file = $INNER/\$name.log
[$NAME]
    log_file = $INNER/radosgw.log
    admin_socket = $INNER/radosgw.asok
    # tcp_nodelay: without it a small request waits ~45 ms on loopback (Nagle + delayed ACK)
    rgw_frontends = beast endpoint=127.0.0.1:$PORT tcp_nodelay=1
EOF
}

# True once radosgw-admin has said all it will: a complete JSON document on stdout, or a
# message of its own (not a timestamped log line) on stderr.
admin_said_all() {
    [[ $(tail -c 3 "$1" | tr -d '[:space:]') == [\]\}] ]] || grep -qv '^[0-9]\{4\}-' "$2"
}

# radosgw-admin on dbstore (Ceph 18.2) often hangs for ~14 minutes at exit while the store has
# no buckets: its GC thread misses the stop signal when told to stop before it first ran, then
# sleeps gc_interval*10 ms (DB::GC::entry in dbstore.cc). By then the command has done its work
# and printed its result, so once it has, give it a moment to exit and then end it. Its stdout
# is printed; it succeeds if it exited 0, or if it had to be ended after printing a result.
admin() {
    local out=$RUN/admin.out err=$RUN/admin.err pid rc=0 i
    : >"$out"
    : >"$err"
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        chroot "$CHROOT" radosgw-admin --no-mon-config -c "$INNER/ceph.conf" "$@" \
        </dev/null >"$out" 2>"$err" 9>&- &
    pid=$!
    for ((i = 0; i < 300; i++)); do # 30 s at most
        kill -0 "$pid" 2>/dev/null || break
        if admin_said_all "$out" "$err"; then
            for _ in 1 2 3 4 5; do # a normal exit takes milliseconds
                sleep 0.1
                kill -0 "$pid" 2>/dev/null || break
            done
            kill "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" || rc=$?
    cat "$err" >>"$RUN/admin.log"
    cat "$out"
    if ((rc == 128 + 15 || rc == 128 + 9)); then # ended by us
        [[ $(tail -c 3 "$out" | tr -d '[:space:]') == [\]\}] ]]
    else
        return "$rc"
    fi
}

admin_error() {
    local msg
    msg=$(grep -v '^[0-9]\{4\}-' "$RUN/admin.err" | tail -n 1)
    echo "${msg:-no answer within 30 s} (log: $RUN/admin.log)"
}

# The user the tests sign as: created once, its keys read back from RGW every time.
ensure_user() {
    local info
    if info=$(admin user info --uid "$USER_ID"); then
        :
    elif grep -q 'could not fetch user info' "$RUN/admin.err"; then
        info=$(admin user create --uid "$USER_ID" --display-name "Sift tests") ||
            die "radosgw-admin user create failed: $(admin_error)"
    else
        die "radosgw-admin user info failed: $(admin_error)"
    fi
    ACCESS_KEY=$(sed -n 's/.*"access_key": "\([^"]*\)".*/\1/p' <<<"$info" | head -n 1)
    SECRET_KEY=$(sed -n 's/.*"secret_key": "\([^"]*\)".*/\1/p' <<<"$info" | head -n 1)
    [[ -n $ACCESS_KEY && -n $SECRET_KEY ]] || die "user $USER_ID has no S3 keys (radosgw-admin user info --uid $USER_ID)"
}

write_env() {
    cat >"$RUN/env.tmp" <<EOF
SIFT_RGW_ENDPOINT=http://127.0.0.1:$PORT
SIFT_RGW_ACCESS_KEY=$ACCESS_KEY
SIFT_RGW_SECRET_KEY=$SECRET_KEY
EOF
    mv "$RUN/env.tmp" "$RUN/env"
}

start_rgw() {
    [[ $(id -u) == 0 ]] || die "must run as root (debootstrap, chroot and mount need it)"
    trap 'die "interrupted"' INT TERM
    mkdir -p "$ROOT" "$RUN"
    exec 9>"$ROOT/lock"
    flock -w 3600 9 || die "another ceph-rgw.sh holds $ROOT/lock"

    if pid_of_rgw >/dev/null; then
        local old
        old=$(running_port)
        if [[ -n $old && $old != "$PORT" ]]; then
            die "radosgw of $ROOT already runs on port $old, not $PORT (run '$0 stop' first)"
        fi
        if answers; then
            log "already running (pid $(pid_of_rgw)); env in $RUN/env"
            cat "$RUN/env"
            return 0
        fi
    fi
    # Leftovers of a radosgw that died or of a machine that was reset: clear them.
    stop_rgw >/dev/null 2>&1 || true
    if answers; then
        die "port $PORT on 127.0.0.1 is already in use by another process (set SIFT_RGW_PORT)"
    fi

    build_chroot
    STARTING=1
    mount_chroot
    write_conf
    ensure_user

    : >"$RUN/radosgw.log"
    # setsid: radosgw must outlive the shell (or test runner) that started it; 9>&-: it must
    # not inherit the lock, or the next stop would wait for it forever.
    setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        chroot "$CHROOT" radosgw -f --no-mon-config -c "$INNER/ceph.conf" -n "$NAME" \
        </dev/null >"$RUN/radosgw.out" 2>&1 9>&- &
    echo $! >"$RUN/radosgw.pid"

    local deadline=$((SECONDS + WAIT))
    until answers; do
        if ! alive "$(cat "$RUN/radosgw.pid")" || ((SECONDS >= deadline)); then
            log "radosgw log tail:"
            tail -n 20 "$RUN/radosgw.out" "$RUN/radosgw.log" >&2 2>/dev/null || true
            if ((SECONDS >= deadline)); then
                die "radosgw did not answer on 127.0.0.1:$PORT within ${WAIT}s (log: $RUN/radosgw.log)"
            fi
            die "radosgw exited during startup (log: $RUN/radosgw.log)"
        fi
        sleep 0.5
    done
    STARTING=0
    write_env
    log "radosgw $(head -n 1 "$CHROOT/$READY" | awk '{print $3}') running (pid $(cat "$RUN/radosgw.pid")) on 127.0.0.1:$PORT; env in $RUN/env"
    cat "$RUN/env"
}

stop_rgw() {
    local pid
    if pid=$(pid_of_rgw); then
        kill "$pid"
        for _ in $(seq 50); do
            alive "$pid" || break
            sleep 0.2
        done
        if alive "$pid"; then
            kill -9 "$pid"
            log "radosgw (pid $pid) ignored SIGTERM for 10 s; killed it"
        fi
        log "stopped radosgw (pid $pid)"
    fi
    rm -f "$RUN/radosgw.pid" "$RUN/env" "$RUN/radosgw.asok"
    if [[ -d $CHROOT ]]; then
        unmount_under "$CHROOT"
    fi
}

status_rgw() {
    local pid
    if pid=$(pid_of_rgw); then
        echo "running (pid $pid) on 127.0.0.1:$(running_port); env in $RUN/env"
        return 0
    fi
    echo "not running"
    return 1
}

case "${1:-}" in
start) start_rgw ;;
stop)
    trap - ERR
    [[ $(id -u) == 0 ]] || { echo "ceph-rgw: stop must run as root" >&2; exit 1; }
    mkdir -p "$ROOT"
    exec 9>"$ROOT/lock"
    flock -w 600 9
    stop_rgw
    ;;
status)
    trap - ERR
    status_rgw
    ;;
*)
    trap - ERR
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
