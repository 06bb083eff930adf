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
#       syncing clients against the headerd service until stopped (docker-compose.yml's client).
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
# HEADERD_LOAD_PROFILE (mix), HEADERD_LOAD_METRICS (0.0.0.0:6061).
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

load() {
    local clients=${HEADERD_LOAD_CLIENTS:-16} duration=${HEADERD_LOAD_DURATION:-0}
    local profile=${HEADERD_LOAD_PROFILE:-mix} load_metrics=${HEADERD_LOAD_METRICS:-0.0.0.0:6061} peer
    for v in clients duration; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "HEADERD_LOAD_${v^^} must be a number, got '${!v}'"
    done
    peer=$(peer_enode)
    log "load: $clients clients, profile $profile, metrics on $load_metrics, against $peer"
    exec "$headerd" load --peer "$peer" --clients "$clients" --duration "$duration" \
        --profile "$profile" --metrics "$load_metrics" "$@"
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
