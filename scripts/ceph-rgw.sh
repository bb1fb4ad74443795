#!/usr/bin/env bash
# A real Ceph RGW on 127.0.0.1 for Sift's tests and benchmarks.
#
#   scripts/ceph-rgw.sh start    build (first time) or reuse the chroot, start the cluster, print the env
#   scripts/ceph-rgw.sh stop     stop the daemons and unmount; the chroot and the data stay for reuse
#   scripts/ceph-rgw.sh status   exit 0 if radosgw is running
#
# radosgw runs on RADOS, as in a real deployment: a one-node Ceph cluster of one monitor and
# one OSD (BlueStore on a sparse file), loopback only, no cephx, no manager. (RGW's
# standalone "dbstore" backend was tried first and is unusable for the benchmark: a ranged GET
# returns the object's first bytes, and reading a multipart object hangs.) Ceph 18.2 (reef)
# comes from a Debian trixie chroot made with debootstrap from the host's configured Debian
# mirror, because the host (bookworm) has Ceph 16 and nothing but package registries is
# reachable.
#
# Layout, outside the repository so that every clone and every later run reuses it:
#   $SIFT_RGW_ROOT/chroot          the trixie chroot (complete only once $READY exists)
#   $SIFT_RGW_ROOT/run             ceph.conf, fsid, mon/ and osd/ (the daemons' stores),
#                                  osd.block (the OSD's disk), logs, pid files, env;
#                                  bind-mounted at /var/lib/sift-rgw inside the chroot
#   $SIFT_RGW_ROOT/build.log       output of the last chroot build
#
# Environment: SIFT_RGW_ROOT (default /var/tmp/sift-rgw), SIFT_RGW_PORT (default 7480),
# SIFT_RGW_MON_PORT (the monitor's, default 3300), SIFT_RGW_ALSO_LISTEN (one more address
# radosgw listens on besides 127.0.0.1, on the same port: a benchmark's client in another
# network namespace reaches it there), SIFT_RGW_OSD_BYTES (the OSD's sparse disk, default 64 GiB), SIFT_RGW_MIRROR (default: the host's Debian mirror), SIFT_RGW_WAIT
# (seconds per daemon, default 60).
#
# `start` prints the env file (SIFT_RGW_ENDPOINT, SIFT_RGW_ACCESS_KEY, SIFT_RGW_SECRET_KEY,
# SIFT_RGW_VERSION) on stdout; progress goes to stderr. When it cannot start, its last line on stderr is
# "ceph-rgw: cannot start: REASON" and it exits 1, so a test runner can report the RGW tests as
# skipped with that reason.
set -Eeuo pipefail

ROOT=${SIFT_RGW_ROOT:-/var/tmp/sift-rgw}
PORT=${SIFT_RGW_PORT:-7480}
MON_PORT=${SIFT_RGW_MON_PORT:-3300}
ALSO_LISTEN=${SIFT_RGW_ALSO_LISTEN:-}
OSD_BYTES=${SIFT_RGW_OSD_BYTES:-68719476736}
WAIT=${SIFT_RGW_WAIT:-60}
SUITE=trixie
CHROOT=$ROOT/chroot
PARTIAL=$ROOT/chroot.partial
RUN=$ROOT/run
INNER=/var/lib/sift-rgw # where $RUN is seen from inside the chroot
READY=.sift-rgw-rados-ready # marker in the chroot, written only after a complete build
PACKAGES="ceph-mon ceph-osd radosgw ceph-common"
USER_ID=sift
NAME=client.rgw.sift

log() { echo "ceph-rgw: $*" >&2; }

# The one line a test runner shows as the reason for skipping. Anything this run started is
# torn down first so that a failed start leaves nothing half-running behind.
die() {
    trap - ERR
    if [[ ${STARTING:-0} == 1 ]]; then
        stop_all >/dev/null 2>&1 || true
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
            { in_chroot "$PARTIAL" apt-get install -y --no-install-recommends $PACKAGES ||
                in_chroot "$PARTIAL" apt-get install -y $PACKAGES; } &&
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

# Is process $1 alive? A daemon that has ended lingers as a zombie until its parent (init,
# once the starting shell is gone) reaps it, and `kill -0` still succeeds on a zombie.
alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $state && $state != Z ]]
}

# The pid of daemon $1 (radosgw, ceph-mon, ceph-osd) if it runs, from its pid file. The
# program is told by its command line: radosgw renames its main thread (comm).
pid_of() {
    local pid program=""
    pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    IFS= read -r -d '' program <"/proc/$pid/cmdline" 2>/dev/null || true
    [[ $program == "$1" ]] && alive "$pid" && echo "$pid"
}

# Whether the process spawn() started for daemon $1 is still alive. Not pid_of: right
# after spawn() the pid is still on its way through `setsid env chroot` to the daemon's own
# exec, so its command line does not name the daemon yet. Taking that for an exit made a
# start fail now and then, and the clean-up then unmounted the run directory under the
# daemons still starting ("unable to open config file").
spawned_alive() {
    local pid
    pid=$(cat "$RUN/$1.pid" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] && alive "$pid"
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

# The cluster's id, made once: the monitor's and the OSD's stores are bound to it.
cluster_fsid() {
    [[ -s $RUN/fsid ]] || cat /proc/sys/kernel/random/uuid >"$RUN/fsid"
    cat "$RUN/fsid"
}

write_conf() {
    cat >"$RUN/ceph.conf" <<EOC
# Written by scripts/ceph-rgw.sh on every start; edits are lost.
[global]
    fsid = $(cluster_fsid)
    mon_host = v2:127.0.0.1:$MON_PORT
    public_addr = 127.0.0.1
    cluster_addr = 127.0.0.1
    run_dir = $INNER
    log_file = $INNER/\$name.log
    admin_socket = $INNER/\$name.asok
    log_to_stderr = false
    err_to_stderr = true
    # One machine, loopback only: no cephx. radosgw asks for a secure mon connection by
    # default, which needs cephx; crc is what auth "none" can give.
    auth_cluster_required = none
    auth_service_required = none
    auth_client_required = none
    ms_mon_client_mode = crc
    # One OSD holds one copy of everything. No manager runs, so no PG autoscaler: pools get
    # a fixed 8 PGs (with autoscaling on, a new pool would start at 1 PG and its default
    # pgp_num of 8 would be refused).
    osd_pool_default_size = 1
    osd_pool_default_min_size = 1
    osd_pool_default_pg_num = 8
    osd_pool_default_pgp_num = 8
    osd_pool_default_pg_autoscale_mode = off
    osd_crush_chooseleaf_type = 0
    mon_allow_pool_size_one = true
    mon_warn_on_pool_no_redundancy = false
    mon_max_pg_per_osd = 1000
    # The host's disk is shared with everything else: warn late, stop only when it is full.
    mon_data_avail_warn = 5
    mon_data_avail_crit = 1
[mon]
    mon_data = $INNER/mon
[osd]
    osd_data = $INNER/osd
    # BlueStore on a sparse file: disk is used as objects are written.
    osd_objectstore = bluestore
    bluestore_block_path = $INNER/osd.block
    bluestore_block_create = true
    bluestore_block_size = $OSD_BYTES
    osd_memory_target = 2147483648
[$NAME]
    log_file = $INNER/radosgw.log
    admin_socket = $INNER/radosgw.asok
    # tcp_nodelay: without it a small request waits ~45 ms on loopback (Nagle + delayed ACK)
    rgw_frontends = beast endpoint=127.0.0.1:$PORT${ALSO_LISTEN:+ endpoint=$ALSO_LISTEN:$PORT} tcp_nodelay=1
EOC
}

# A Ceph command inside the chroot against this cluster, bounded in time (a client waits
# for a monitor forever by default).
ceph_cmd() {
    timeout 60 env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        chroot "$CHROOT" "$@" -c "$INNER/ceph.conf" </dev/null 9>&-
}

# Start daemon $1 (foreground flags after it) in its own session, so that it outlives the
# shell or test runner that started it, and without the lock (9>&-), or the next stop would
# wait for it forever.
spawn() {
    local name=$1
    shift
    setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        chroot "$CHROOT" "$name" -f -c "$INNER/ceph.conf" "$@" \
        </dev/null >"$RUN/$name.out" 2>&1 9>&- &
    echo $! >"$RUN/$name.pid"
}

# Wait until `$2...` succeeds, while daemon $1 stays alive, for at most $WAIT seconds.
wait_for() {
    local name=$1 deadline=$((SECONDS + WAIT))
    shift
    until "$@" >/dev/null 2>&1; do
        if ! spawned_alive "$name" || ((SECONDS >= deadline)); then
            log "$name output and log tail:"
            tail -n 20 "$RUN/$name.out" >&2 2>/dev/null || true
            if ((SECONDS >= deadline)); then
                die "$name did not come up within ${WAIT}s (log in $RUN)"
            fi
            die "$name exited during startup (log in $RUN)"
        fi
        sleep 0.5
    done
}

osd_up() {
    ceph_cmd ceph osd dump | grep -q '^osd\.0 up'
}

# The monitor: its store is made once (monmaptool, ceph-mon --mkfs), then reused.
start_mon() {
    if [[ ! -f $RUN/mon/.sift-made ]]; then
        rm -rf "$RUN/mon"
        mkdir -p "$RUN/mon"
        ceph_cmd monmaptool --create --fsid "$(cluster_fsid)" \
            --addv a "[v2:127.0.0.1:$MON_PORT]" "$INNER/monmap" >/dev/null ||
            die "monmaptool failed"
        ceph_cmd ceph-mon --mkfs -i a --monmap "$INNER/monmap" >>"$RUN/mkfs.log" 2>&1 ||
            die "ceph-mon --mkfs failed (see $RUN/mkfs.log)"
        touch "$RUN/mon/.sift-made"
    fi
    spawn ceph-mon -i a
    wait_for ceph-mon ceph_cmd ceph mon stat
}

# The one OSD: registered with the monitor and formatted once, then reused.
start_osd() {
    if [[ ! -f $RUN/osd/.sift-made ]]; then
        local uuid
        rm -rf "$RUN/osd" "$RUN/osd.block"
        mkdir -p "$RUN/osd"
        uuid=$(cat /proc/sys/kernel/random/uuid)
        ceph_cmd ceph osd new "$uuid" 0 >>"$RUN/mkfs.log" 2>&1 || die "ceph osd new failed"
        ceph_cmd ceph-osd -i 0 --mkfs --osd-uuid "$uuid" >>"$RUN/mkfs.log" 2>&1 ||
            die "ceph-osd --mkfs failed (see $RUN/mkfs.log)"
        touch "$RUN/osd/.sift-made"
    fi
    spawn ceph-osd -i 0
    wait_for ceph-osd osd_up
}

# The user the tests sign as: created once, its keys read back from RGW every time.
ensure_user() {
    local info
    if ! info=$(ceph_cmd radosgw-admin user info --uid "$USER_ID" 2>/dev/null); then
        info=$(ceph_cmd radosgw-admin user create --uid "$USER_ID" --display-name "Sift tests" \
            2>>"$RUN/admin.log") || die "radosgw-admin user create failed (see $RUN/admin.log)"
    fi
    ACCESS_KEY=$(sed -n 's/.*"access_key": "\([^"]*\)".*/\1/p' <<<"$info" | head -n 1)
    SECRET_KEY=$(sed -n 's/.*"secret_key": "\([^"]*\)".*/\1/p' <<<"$info" | head -n 1)
    [[ -n $ACCESS_KEY && -n $SECRET_KEY ]] || die "user $USER_ID has no S3 keys (radosgw-admin user info --uid $USER_ID)"
}

write_env() {
    cat >"$RUN/env.tmp" <<EOC
SIFT_RGW_ENDPOINT=http://127.0.0.1:$PORT
SIFT_RGW_ACCESS_KEY=$ACCESS_KEY
SIFT_RGW_SECRET_KEY=$SECRET_KEY
SIFT_RGW_VERSION=$(head -n 1 "$CHROOT/$READY" | awk '{print $3}')
EOC
    mv "$RUN/env.tmp" "$RUN/env"
}

start_rgw() {
    [[ $(id -u) == 0 ]] || die "must run as root (debootstrap, chroot and mount need it)"
    trap 'die "interrupted"' INT TERM
    mkdir -p "$ROOT" "$RUN"
    exec 9>"$ROOT/lock"
    flock -w 3600 9 || die "another ceph-rgw.sh holds $ROOT/lock"

    if pid_of radosgw >/dev/null; then
        local old
        old=$(running_port)
        if [[ -n $old && $old != "$PORT" ]]; then
            die "radosgw of $ROOT already runs on port $old, not $PORT (run '$0 stop' first)"
        fi
        if answers; then
            log "already running (pid $(pid_of radosgw)); env in $RUN/env"
            cat "$RUN/env"
            return 0
        fi
    fi
    # Leftovers of a cluster that died or of a machine that was reset: clear them.
    stop_all >/dev/null 2>&1 || true
    if answers; then
        die "port $PORT on 127.0.0.1 is already in use by another process (set SIFT_RGW_PORT)"
    fi

    build_chroot
    STARTING=1
    mount_chroot
    write_conf
    start_mon
    start_osd
    # radosgw creates its pools on first start; the user needs them.
    spawn radosgw -n "$NAME"
    wait_for radosgw answers
    ensure_user
    STARTING=0
    write_env
    log "radosgw $(head -n 1 "$CHROOT/$READY" | awk '{print $3}') on RADOS (1 mon, 1 OSD) running (pid $(cat "$RUN/radosgw.pid")) on 127.0.0.1:$PORT; env in $RUN/env"
    cat "$RUN/env"
}

# End daemon $1 if it runs: SIGTERM, then SIGKILL after 10 s.
stop_daemon() {
    local pid
    pid=$(pid_of "$1") || return 0
    kill "$pid"
    for _ in $(seq 50); do
        alive "$pid" || break
        sleep 0.2
    done
    if alive "$pid"; then
        kill -9 "$pid"
        log "$1 (pid $pid) ignored SIGTERM for 10 s; killed it"
    fi
    log "stopped $1 (pid $pid)"
}

stop_all() {
    stop_daemon radosgw
    stop_daemon ceph-osd
    stop_daemon ceph-mon
    rm -f "$RUN"/*.pid "$RUN/env" "$RUN"/*.asok
    if [[ -d $CHROOT ]]; then
        unmount_under "$CHROOT"
    fi
}

status_rgw() {
    local pid
    if pid=$(pid_of radosgw); then
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
    stop_all
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
