#!/usr/bin/env bash
# Entrypoint of the headerd image (deploy/Dockerfile), as /usr/local/bin/headerd-entrypoint.
#
#   headerd-entrypoint [serve] [SERVE OPTION...]
#       On first start (no DATADIR/chaindata yet) imports the bundled mainnet epoch 0 (blocks
#       0..8191), or generates a synthetic chain of N headers when HEADERD_GENERATE=N is set, then
#       execs `headerd serve --datadir DATADIR --listen 0.0.0.0:30303 --metrics 0.0.0.0:6060`
#       plus the given options (e.g. --max-peers 200).
#   headerd-entrypoint client
#       Sends one `headerd get` to the headerd service every HEADERD_CLIENT_INTERVAL seconds, from
#       a random origin, forever (docker-compose.yml's stand-in for `headerd load`).
#   headerd-entrypoint healthcheck
#       Exits 0 when headerd's /healthz answers 200 (the image's HEALTHCHECK).
#   headerd-entrypoint COMMAND [ARG...]
#       Runs `headerd COMMAND ARG...` (get, inspect, verify, ...).
#
# Environment: HEADERD_DATADIR (default /data), HEADERD_LISTEN (0.0.0.0:30303), HEADERD_METRICS
# (0.0.0.0:6060), HEADERD_GENERATE (unset: import the bundled epoch), HEADERD_BUNDLE_DIR
# (/usr/share/headerd), HEADERD_BIN (headerd). For `client`: HEADERD_ENODE_FILE (the serving
# node's DATADIR/enode, mounted read-only; default /headerd/enode), HEADERD_PEER_HOST (headerd),
# HEADERD_CLIENT_AMOUNT (192), HEADERD_CLIENT_MAX_ORIGIN (8000), HEADERD_CLIENT_INTERVAL (1).
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
    local port=${metrics##*:} status
    # HTTP/1.0 over bash's /dev/tcp: the image has no curl.
    status=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" &&
        printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
        timeout 3 head -n 1 <&3) 2>/dev/null) || exit 1
    [[ $status =~ ^HTTP/1\.[01]\ 200 ]]
}

client() {
    local enode_file=${HEADERD_ENODE_FILE:-/headerd/enode} host=${HEADERD_PEER_HOST:-headerd}
    local amount=${HEADERD_CLIENT_AMOUNT:-192} max_origin=${HEADERD_CLIENT_MAX_ORIGIN:-8000}
    local interval=${HEADERD_CLIENT_INTERVAL:-1} enode peer origin i=0
    for v in amount max_origin; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "HEADERD_CLIENT_${v^^} must be a number, got '${!v}'"
    done
    for _ in $(seq 120); do
        [ -s "$enode_file" ] && break
        sleep 1
    done
    enode=$(head -n 1 "$enode_file" 2>/dev/null) || die "no enode in $enode_file after 120 s"
    [[ $enode == enode://*@*:* ]] || die "$enode_file does not hold an enode URL: '$enode'"
    # The server wrote the address it listens on (0.0.0.0); dial it by its service name instead.
    peer="${enode%@*}@$host:${enode##*:}"
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
    healthcheck) healthcheck ;;
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
