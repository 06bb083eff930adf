#!/usr/bin/env bash
# Proves the harness without headerd: server.js (ethereumjs) serves, client.js (ethereumjs)
# checks it, for each eth version combination the harness speaks; then a deliberately broken
# server.js must make client.js fail, so the checks are known to bite.
#
#   cd tests/interop && npm ci && ./self_test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-interop.XXXXXX")
SERVER_PID=
stop_server() {
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=
}
trap 'stop_server; rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# 77 = CTest SKIP_RETURN_CODE: a checkout without `npm ci` skips rather than fails.
if [[ ! -d node_modules/@ethereumjs/devp2p ]]; then
    echo "SKIP: node_modules missing, run 'npm ci' in $(pwd) first" >&2
    exit 77
fi

# start_server NAME ARGS...: runs server.js on a free port, waits (bounded) for its enode file
# and sets ENODE. The log goes to $WORK/NAME.log.
start_server() {
    local name=$1
    shift
    local enode_file=$WORK/$name.enode log=$WORK/$name.log i
    node server.js --port 0 --out "$enode_file" --idle 60 "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    for ((i = 0; i < 100; i++)); do # up to 10 s
        [[ -s $enode_file ]] && break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$log" >&2; fail "server.js $* exited early"; }
        sleep 0.1
    done
    [[ -s $enode_file ]] || { cat "$log" >&2; fail "server.js $* wrote no enode within 10 s"; }
    ENODE=$(cat "$enode_file")
}

# pass SERVER_ETH CLIENT_ETH: every check must pass.
pass() {
    local name=pass.${1/,/-}.${2/,/-} rc=0
    echo "== server eth/$1, client offers eth/$2"
    start_server "$name" --eth "$1"
    node client.js "$ENODE" --eth "$2" --timeout 60 || rc=$?
    stop_server
    if [[ $rc -ne 0 ]]; then
        echo "--- server.js log" >&2
        cat "$WORK/$name.log" >&2
        fail "client.js exited $rc (server eth/$1, client eth/$2)"
    fi
}

# must_fail FAULT EXPECTED_LINE: client.js must exit 1 and print EXPECTED_LINE (a grep -E regex).
must_fail() {
    local name=fault.$1 rc=0 out
    echo "== server.js --fault $1: client.js must fail"
    start_server "$name" --fault "$1"
    out=$(node client.js "$ENODE" --timeout 60) || rc=$?
    stop_server
    [[ $rc -eq 1 ]] || { printf '%s\n' "$out" >&2; fail "client.js exited $rc against --fault $1, expected 1"; }
    printf '%s\n' "$out" | grep -Eq "$2" || { printf '%s\n' "$out" >&2; fail "no line matching '$2' for --fault $1"; }
    echo "ok: --fault $1 detected: $(printf '%s\n' "$out" | grep -E "$2" | head -1)"
}

pass 68 68       # pure library on both sides
pass 69 69       # the harness's eth/69 extension on both sides
pass 68,69 68,69 # both offered: eth/69 must be negotiated
pass 68,69 68    # a 68-only client against a 68+69 server

must_fail extra-header '^FAIL: GetBlockHeaders number 0 amount 192 -> 0\.\.191: 193 headers for amount 192'
must_fail corrupt-header '^FAIL: GetBlockHeaders number 8191 amount 1 -> head: header #0: expected block 8191'
echo "self_test: all passed"
