#!/usr/bin/env bash
# Entrypoint of the headerd image (deploy/Dockerfile), as /usr/local/bin/headerd-entrypoint.
#
#   headerd-entrypoint [serve] [SERVE OPTION...]
#       On first start (no DATADIR/chaindata yet) imports the bundled mainnet epoch 0 (blocks
#       0..8191), or generates a synthetic chain of N headers when HEADERD_GENERATE=N is set, then
#       execs `headerd serve --datadir DATADIR --listen 0.0.0.0:30303 --metrics 0.0.0.0:6060`
#       plus the given options (e.g. --max-peers 200).
#   headerd-entrypoint load [LOAD OPTION...]
#       Waits for the serving node's enode file, then execs `headerd load --peer ENODE --clients
#       16 --duration 0 --profile mix --metrics 0.0.0.0:6061` plus the given options: synthetic
#       syncing clients against the headerd service until stopped (docker-compose.yml's load).
#       With HEADERD_LOAD_RUN_ID it adds --run-id. A finite run (HEADERD_LOAD_DURATION > 0) adds
#       --json REPORTS/load-HOSTNAME.json and, unless HEADERD_LOAD_START_DELAY is 0, a start time
#       shared by every replica through the file REPORTS/start-at (see shared_start below):
#       --start-at T, so that `docker compose up --scale load=N` measures one window.
#   headerd-entrypoint merge [REPORT OPTION...]
#       Execs `headerd report --merge REPORTS/load-*.json --json REPORTS/merged.json --html
#       REPORTS/merged.html` plus a --threshold for each word of HEADERD_REPORT_THRESHOLDS and the
#       given options: the one report of the load replicas' finite run (docker-compose.yml's merge).
#   headerd-entrypoint client
#       Sends one `headerd get` to the serving node every HEADERD_CLIENT_INTERVAL seconds, from a
#       random origin, forever: the older, lighter stand-in for `load` (no metrics endpoint).
#   headerd-entrypoint healthcheck [PORT [PATH]]
#       Exits 0 when http://127.0.0.1:PORT/PATH answers 200 (the image's HEALTHCHECK; default: the
#       port of HEADERD_METRICS and /healthz; docker-compose.yml checks the load generator with
#       `healthcheck 6061 /metrics`).
#   headerd-entrypoint COMMAND [ARG...]
#       Runs `headerd COMMAND ARG...` (get, inspect, verify, ...).
#
# Environment: HEADERD_DATADIR (default /data), HEADERD_LISTEN (0.0.0.0:30303), HEADERD_METRICS
# (0.0.0.0:6060), HEADERD_GENERATE (unset: import the bundled epoch), HEADERD_BUNDLE_DIR
# (/usr/share/headerd), HEADERD_BIN (headerd).
# For `load` and `client`: HEADERD_ENODE_FILE (the serving node's DATADIR/enode, mounted
# read-only; default /headerd/enode), HEADERD_PEER_HOST (headerd; replaces the address in the
# enode file, which is the one the server listens on, 0.0.0.0), HEADERD_ENODE_WAIT (seconds to wait
# for the enode file, 120).
# For `load`: HEADERD_LOAD_CLIENTS (16), HEADERD_LOAD_DURATION (0: until stopped),
# HEADERD_LOAD_PROFILE (mix), HEADERD_LOAD_METRICS (0.0.0.0:6061), HEADERD_LOAD_RUN_ID (unset: no
# --run-id), HEADERD_LOAD_START_DELAY (seconds from the first replica's start to the shared start;
# 10 for a finite run, 0 otherwise; 0: no shared start), HEADERD_LOAD_SEED (--seed; unset: the
# CRC of the host name, so that replicas, each a container with a host name of its own, send
# requests of their own rather than the same).
# For `load` and `merge`: HEADERD_LOAD_REPORTS (/reports: the directory of the reports and of the
# start-at file, a volume shared by the replicas and the merge).
# For `merge`: HEADERD_REPORT_THRESHOLDS (unset; e.g. "verified errors==0 p99<50ms").
# For `client`: HEADERD_CLIENT_AMOUNT (192), HEADERD_CLIENT_MAX_ORIGIN (8000),
# HEADERD_CLIENT_INTERVAL (1).
set -euo pipefail

datadir=${HEADERD_DATADIR:-/data}
listen=${HEADERD_LISTEN:-0.0.0.0:30303}
metrics=${HEADERD_METRICS:-0.0.0.0:6060}
bundle=${HEADERD_BUNDLE_DIR:-/usr/share/headerd}
headerd=${HEADERD_BIN:-headerd}

log() { echo "entrypoint: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}

healthcheck() {
    local port=${1:-${metrics##*:}} path=${2:-/healthz} status
    [[ $port =~ ^[0-9]+$ && $path == /* ]] || die "usage: healthcheck [PORT [PATH]]"
    # HTTP/1.0 over bash's /dev/tcp: the image has no curl.
    status=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" &&
        printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&3 &&
        timeout 3 head -n 1 <&3) 2>/dev/null) || exit 1
    [[ $status =~ ^HTTP/1\.[01]\ 200 ]]
}

# peer_enode: the serving node's enode URL from HEADERD_ENODE_FILE (waiting for the file), with its
# host replaced by HEADERD_PEER_HOST.
peer_enode() {
    local enode_file=${HEADERD_ENODE_FILE:-/headerd/enode} host=${HEADERD_PEER_HOST:-headerd}
    local wait_s=${HEADERD_ENODE_WAIT:-120} enode
    [[ $wait_s =~ ^[0-9]+$ ]] || die "HEADERD_ENODE_WAIT must be a number of seconds, got '$wait_s'"
    for _ in $(seq "$wait_s"); do
        [ -s "$enode_file" ] && break
        sleep 1
    done
    enode=$(head -n 1 "$enode_file" 2>/dev/null) || die "no enode in $enode_file after $wait_s s"
    [[ $enode == enode://*@*:* ]] || die "$enode_file does not hold an enode URL: '$enode'"
    # The server wrote the address it listens on (0.0.0.0); dial it by its service name instead.
    printf '%s\n' "${enode%@*}@$host:${enode##*:}"
}

# shared_start DIR DELAY FINITE: prints the Unix second at which this replica's measured window
# begins, the same second for every replica that a `docker compose up --scale load=N` starts.
# Under an exclusive lock of DIR/.start.lock (flock; the kernel releases it when its holder dies,
# so a killed replica cannot leave it held), the replica reads DIR/start-at. A time still ahead was
# written by a replica of the same start: it is joined. Anything else (no file, or the time of an
# earlier run, now past) makes this replica the first: it writes now + DELAY, through a temporary
# file renamed over DIR/start-at so that no reader sees half a number, and, when FINITE is 1, moves
# the earlier run's reports (load-*.json, merged.*) into DIR/previous/, so that a merge takes this
# run's reports alone. A replica that starts after the shared second has passed (a restart) begins
# a window of its own; the merge of such reports says that their windows differ.
shared_start() {
    local dir=$1 delay=$2 finite=$3 file=$1/start-at now t earlier=()
    exec 9>>"$dir/.start.lock" || die "cannot open $dir/.start.lock: is $dir writable?"
    flock -w 60 9 || die "$dir/.start.lock: still locked after 60 s"
    now=$(date +%s)
    t=$(head -n 1 "$file" 2>/dev/null || true)
    if [[ $t =~ ^[0-9]+$ ]] && [ "$t" -gt "$now" ]; then
        log "load: joining the shared start $(date -u -d "@$t" +%FT%TZ) of $file, $((t - now)) s from now"
    else
        t=$((now + delay))
        if [ "$finite" = 1 ]; then
            mapfile -t earlier < <(cd "$dir" && compgen -G 'load-*.json'; compgen -G 'merged.*')
            if [ ${#earlier[@]} -gt 0 ]; then
                if ! { rm -rf "$dir/previous" && mkdir "$dir/previous" &&
                    (cd "$dir" && mv -f -- "${earlier[@]}" previous/); }; then
                    die "cannot move the earlier run's reports into $dir/previous"
                fi
                log "load: moved the earlier run's ${earlier[*]} to $dir/previous/"
            fi
        fi
        { printf '%s\n' "$t" >"$file.$$" && mv -f "$file.$$" "$file"; } || die "cannot write $file"
        log "load: first replica: shared start $(date -u -d "@$t" +%FT%TZ) ($delay s from now) written to $file"
    fi
    exec 9>&-
    printf '%s\n' "$t"
}

load() {
    local clients=${HEADERD_LOAD_CLIENTS:-16} duration=${HEADERD_LOAD_DURATION:-0}
    local profile=${HEADERD_LOAD_PROFILE:-mix} load_metrics=${HEADERD_LOAD_METRICS:-0.0.0.0:6061}
    local run_id=${HEADERD_LOAD_RUN_ID:-} reports=${HEADERD_LOAD_REPORTS:-/reports}
    local delay=${HEADERD_LOAD_START_DELAY:-} seed=${HEADERD_LOAD_SEED:-} finite=0 peer start extra=() what
    [ -n "$seed" ] || seed=$(printf '%s' "$HOSTNAME" | cksum | cut -d ' ' -f 1)
    for v in clients duration seed; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "HEADERD_LOAD_${v^^} must be a number, got '${!v}'"
    done
    [ "$duration" -eq 0 ] || finite=1
    # A finite run starts together by default; an endless one (the default service) at once.
    [ -n "$delay" ] || delay=$((finite ? 10 : 0))
    [[ $delay =~ ^[0-9]+$ ]] || die "HEADERD_LOAD_START_DELAY must be a number of seconds, got '$delay'"
    peer=$(peer_enode)
    what="$clients clients, profile $profile, seed $seed, $([ "$finite" = 1 ] && echo "$duration s" || echo 'until stopped')"
    [ -z "$run_id" ] || { extra+=(--run-id "$run_id"); what+=", run $run_id"; }
    if [ "$finite" = 1 ] || [ "$delay" -gt 0 ]; then
        mkdir -p "$reports" || die "cannot make the reports directory $reports"
    fi
    if [ "$finite" = 1 ]; then
        extra+=(--json "$reports/load-$HOSTNAME.json")
        what+=", report $reports/load-$HOSTNAME.json"
    fi
    if [ "$delay" -gt 0 ]; then
        start=$(shared_start "$reports" "$delay" "$finite") || exit 1
        extra+=(--start-at "$start")
        what+=", start at $start"
    fi
    log "load: $what; metrics on $load_metrics, against $peer"
    exec "$headerd" load --peer "$peer" --clients "$clients" --duration "$duration" \
        --profile "$profile" --metrics "$load_metrics" --seed "$seed" "${extra[@]}" "$@"
}

# merge: one report of the finite run's replica reports (docker-compose.yml's merge service).
merge() {
    local dir=${HEADERD_LOAD_REPORTS:-/reports} reports=() thresholds=() args=() t
    mapfile -t reports < <(compgen -G "$dir/load-*.json" | sort)
    [ ${#reports[@]} -gt 0 ] ||
        die "no load reports in $dir (load-*.json): the load service writes them in a finite run (HEADERD_LOAD_DURATION > 0)"
    read -r -a thresholds <<<"${HEADERD_REPORT_THRESHOLDS:-}"
    for t in "${thresholds[@]}"; do args+=(--threshold "$t"); done
    log "merge: ${#reports[@]} reports (${reports[*]##*/}) into $dir/merged.json and $dir/merged.html"
    exec "$headerd" report --merge "${reports[@]}" --json "$dir/merged.json" --html "$dir/merged.html" \
        "${args[@]}" "$@"
}

client() {
    local amount=${HEADERD_CLIENT_AMOUNT:-192} max_origin=${HEADERD_CLIENT_MAX_ORIGIN:-8000}
    local interval=${HEADERD_CLIENT_INTERVAL:-1} peer origin i=0
    for v in amount max_origin; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "HEADERD_CLIENT_${v^^} must be a number, got '${!v}'"
    done
    peer=$(peer_enode)
    log "sending GetBlockHeaders (amount $amount) to $peer every $interval s"
    trap 'exit 0' INT TERM
    while :; do
        i=$((i + 1))
        origin=$(((RANDOM * 32768 + RANDOM) % (max_origin + 1)))
        if ! "$headerd" get --peer "$peer" --origin "$origin" --amount "$amount" >/dev/null; then
            log "request $i (origin $origin) failed"
        fi
        sleep "$interval" &
        wait $! || true
    done
}

case ${1:-serve} in
    healthcheck) shift; healthcheck "$@" ;;
    load) shift; load "$@" ;;
    merge) shift; merge "$@" ;;
    client) client ;;
    serve | -*)
        [ "${1:-}" != serve ] || shift
        mkdir -p "$datadir"
        if [ ! -e "$datadir/chaindata" ]; then
            if [ -n "${HEADERD_GENERATE:-}" ]; then
                [[ $HEADERD_GENERATE =~ ^[1-9][0-9]*$ ]] ||
                    die "HEADERD_GENERATE must be a header count, got '$HEADERD_GENERATE'"
                log "first start: generating a synthetic chain of $HEADERD_GENERATE headers in $datadir"
                "$headerd" generate --datadir "$datadir" --count "$HEADERD_GENERATE"
            else
                era1=$(compgen -G "$bundle/*.era1" | head -n 1) || true
                [ -n "$era1" ] || die "no .era1 archive in $bundle"
                log "first start: importing $(basename "$era1") into $datadir"
                "$headerd" import --datadir "$datadir" "$era1"
            fi
        fi
        exec "$headerd" serve --datadir "$datadir" --listen "$listen" --metrics "$metrics" "$@"
        ;;
    *) exec "$headerd" "$@" ;;
esac
