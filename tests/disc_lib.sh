# shellcheck shell=bash
# Helpers of the discovery tests (discovery_interop, discovery_net, discovery_safety): headerd serve
# nodes with discv4 and @ethereumjs/devp2p DPT nodes (tests/interop/dpt_node.js), all on 127.0.0.1.
# Source it after lib.sh and node_lib.sh (it uses HEADERD, WORK, fail, PIDS and stop's EXIT trap).

INTEROP=$(cd "$(dirname "${BASH_SOURCE[0]}")/interop" && pwd)
# (ports.sh's free_port VAR replaces node_lib.sh's free_port, which these tests do not use.)
# shellcheck source=scripts/lib/ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/ports.sh"
# HEADERD_TEST_TIME_SCALE (scripts/sanitize.sh) widens every deadline.
SCALE=${HEADERD_TEST_TIME_SCALE:-1}

# need_dpt: exits 77 (CTest SKIP_RETURN_CODE) when node or tests/interop/node_modules is missing.
need_dpt() {
    if ! command -v node >/dev/null || [[ ! -d $INTEROP/node_modules/@ethereumjs/devp2p ]]; then
        echo "SKIP: node or $INTEROP/node_modules missing (run: cd tests/interop && npm ci)" >&2
        exit 77
    fi
}

# wait_file FILE NAME SECONDS: waits until FILE is non-empty while the process PIDS[NAME] runs.
wait_file() { wait_nonempty "$1" "${PIDS[$2]}" "$3" "$2" "$WORK/$2.log"; }

# dpt NAME [ARGS...]: starts a DPT node (dpt_node.js) on a free UDP port of 127.0.0.1 with the
# arguments given (e.g. --bootnode ENODE, --key HEX), its enode URL in $WORK/NAME.enode, its table
# in $WORK/NAME.peers (rewritten every 500 ms) and its log in $WORK/NAME.log; waits for the enode
# (NO_WAIT=1: returns at once, for wait_started).
dpt() {
    local name=$1
    shift
    rm -f "$WORK/$name.enode"
    node "$INTEROP/dpt_node.js" --port 0 --out "$WORK/$name.enode" --peers "$WORK/$name.peers" \
        --duration $((300 * SCALE)) "$@" >"$WORK/$name.log" 2>&1 &
    # shellcheck disable=SC2004 # PIDS is associative (declared in node_lib.sh)
    PIDS[$name]=$!
    [[ -n ${NO_WAIT:-} ]] || wait_file "$WORK/$name.enode" "$name" $((10 * SCALE))
}

# disc_port VAR: a port free for TCP and for UDP, picked below the kernel's ephemeral range
# (scripts/lib/ports.sh). serve binds UDP to the number of its TCP port; with --listen :0 the kernel
# picks that number among the ephemeral ports, where the DPT nodes' and crawlers' UDP sockets
# are, so now and then it would be taken (estimated: 30 UDP sockets among some 28,000 ephemeral
# ports and 20 picks, about 2% of 30-node runs; not seen in the runs made).
disc_port() {
    local dp_port dp_hex
    for _ in $(seq 50); do
        free_port dp_port || return 1
        printf -v dp_hex '%04X' "$dp_port"
        if ! awk 'NR > 1 { split($2, a, ":"); print a[2] }' /proc/net/udp /proc/net/udp6 2>/dev/null | grep -qx "$dp_hex"; then
            printf -v "$1" '%s' "$dp_port"
            return 0
        fi
    done
    fail "no port free for both TCP and UDP"
}

# disc_serve NAME DATADIR [ARGS...]: headerd serve --discovery v4 (DISC_MODE: another mode) on
# 127.0.0.1 (a port free for TCP and UDP, the same for both); the log is $WORK/NAME.log. Waits for
# DATADIR/enode (NO_WAIT=1: returns at once).
disc_serve() {
    local name=$1 d=$2 port
    shift 2
    disc_port port
    rm -f "$d/enode"
    "$HEADERD" serve --datadir "$d" --listen "127.0.0.1:$port" --workers 1 --discovery "${DISC_MODE:-v4}" "$@" >"$WORK/$name.log" 2>&1 &
    # shellcheck disable=SC2004
    PIDS[$name]=$!
    [[ -n ${NO_WAIT:-} ]] || wait_file "$d/enode" "$name" $((10 * SCALE))
}

# wait_started NAME...: waits for the enode file of each node started with NO_WAIT=1 (hNAME and
# other headerd nodes: $WORK/NAME/enode; DPT nodes: $WORK/NAME.enode).
wait_started() {
    local n
    for n in "$@"; do
        if [[ -d $WORK/$n ]]; then wait_file "$WORK/$n/enode" "$n" $((10 * SCALE)); else wait_file "$WORK/$n.enode" "$n" $((10 * SCALE)); fi
    done
}

# stop_within NAME SECONDS: SIGTERM, then the process must be gone within SECONDS (a headerd serve
# saves its node database on the way out); SIGKILL and fail otherwise.
pid_gone() { ! kill -0 "$1" 2>/dev/null; }
stop_within() {
    local name=$1 pid=${PIDS[$1]} rc=0
    kill -TERM "$pid" 2>/dev/null || true
    if ! poll_until "$2" 0.1 -- pid_gone "$pid"; then
        kill -9 "$pid" 2>/dev/null || true
        fail "$name still running $2 s after SIGTERM: $(tail -5 "$WORK/$name.log")"
    fi
    wait "$pid" 2>/dev/null || rc=$?
    unset "PIDS[$name]"
    [[ $rc -eq 0 ]] || fail "$name exited $rc after SIGTERM: $(tail -5 "$WORK/$name.log")"
}

# ids FILE...: the public keys (128 hex, sorted) of every enode URL and enr: record in the files.
ids() { node "$INTEROP/disc_util.js" ids "$@"; }
# id_of FILE: the one public key in FILE (an enode file).
id_of() { ids "$1" | head -1; }

# missing_ids KNOWN_FILE WANTED_IDS: the ids of WANTED_IDS (one per line) that KNOWN_FILE does not name.
missing_ids() {
    if [[ -s $1 ]]; then comm -13 <(ids "$1") <(sort <<<"$2"); else sort <<<"$2"; fi
}

# stop_all_within SECONDS NAME...: stop_within for several processes at once (SIGTERM to all first;
# stop_within then signals each again, which a headerd winding down must take calmly).
stop_all_within() {
    local secs=$1 n
    shift
    for n in "$@"; do kill -TERM "${PIDS[$n]}" 2>/dev/null || true; done
    for n in "$@"; do stop_within "$n" "$secs"; done
}
