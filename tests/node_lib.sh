# shellcheck shell=bash
# Helpers of the shell tests that run `headerd serve` nodes on loopback. Source it after lib.sh
# (it uses HEADERD, WORK and fail) and prom_http.sh (metric, head_of and wait_head use http_body).
# It sets an EXIT trap that stops the nodes; a test that needs more at exit sets its own after
# sourcing it.

declare -A PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve_dir NAME DATADIR PORT [ARGS...]: serves DATADIR on 127.0.0.1:PORT (0: a free port, see
# DATADIR/enode) until stop NAME, its output appended to $WORK/NAME.log (FRESH_LOG=1: the log
# starts empty, for a test that greps what this run logged).
serve_dir() {
    local name=$1 d=$2 port=$3
    shift 3
    rm -f "$d/enode"
    [ "${FRESH_LOG:-0}" = 0 ] || : >"$WORK/$name.log"
    "$HEADERD" serve --datadir "$d" --listen "127.0.0.1:$port" --workers 1 "$@" >>"$WORK/$name.log" 2>&1 &
    PIDS[$name]=$!
    wait_nonempty "$d/enode" "${PIDS[$name]}" 10 "serve $name" "$WORK/$name.log"
}
# serve NAME PORT [ARGS...]: serves $WORK/NAME on 127.0.0.1:PORT until stop NAME.
serve() {
    local name=$1 port=$2
    shift 2
    serve_dir "$name" "$WORK/$name" "$port" "$@"
}
stop() {
    kill "${PIDS[$1]}" 2>/dev/null || true
    wait "${PIDS[$1]}" 2>/dev/null || true
    unset "PIDS[$1]"
}

# metric PORT NAME -> the value of an unlabelled sample.
metric() { http_body "$1" /metrics | awk -v n="$2" '$1 == n { print $2 }'; }
# hash_at ENODE N -> the hash of the header the node serves for block N (empty if it has none).
hash_at() {
    "$HEADERD" get --peer "$1" --origin "$2" --amount 1 --format json --timeout 5 2>/dev/null |
        grep -o '"hash":"0x[0-9a-f]*"' | cut -d'"' -f4
}
# head_of PORT -> the follower's head number, from its metrics.
head_of() { metric "$1" headerd_chain_head_number | cut -d. -f1 | sed 's/e+0*/e/' | python3 -c 'import sys; print(int(float(sys.stdin.read() or -1)))'; }
# wait_head PORT N SECONDS NAME: the follower NAME's head reaches N within SECONDS.
wait_head() {
    for _ in $(seq $(($3 * 10))); do
        [ "$(head_of "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    fail "follower head is $(head_of "$1"), not $2, after $3 s; log: $(tail -5 "$WORK/$4.log")"
}
