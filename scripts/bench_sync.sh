#!/usr/bin/env bash
# `headerd sync` on loopback, two measurements in one run (figures: docs/performance.md, "Sync"):
#   1. sync against import: a generated chain of HEADERD_SYNC_HEADERS headers (`headerd generate`,
#      seed 1) served by two `headerd serve` peers (copies of the datadir), synced into an empty
#      datadir with --head its head hash; and the same headers imported from the chain's .rlp export
#      (`headerd import --synthetic`). Both without freezing (sync --no-freeze; import never
#      freezes), and both with it (sync's default --keep 90000 against import then
#      `headerd freeze --keep 90000`), alternately for HEADERD_SYNC_ROUNDS rounds; medians.
#      Goal: sync <= 2x import.
#   2. peers: the same sync from 1, 2 and 4 peers; then 4 peers of which one is slowed
#      (`serve --reply-delay HEADERD_SYNC_SLOW_MS`) against the 3 fast ones alone: each peer's share
#      of the headers (from --summary) and the total time. Goal: the slow peer's share shrinks and
#      the time stays within 20% of the fast-only run.
#
#   scripts/bench_sync.sh                                    # 1M headers: about 10 min (+ the chain once)
#   HEADERD_SYNC_HEADERS=200000 HEADERD_SYNC_ROUNDS=1 scripts/bench_sync.sh   # a quick run
#
# Variables: HEADERD_SYNC_HEADERS (1000000), HEADERD_SYNC_ROUNDS (3), HEADERD_SYNC_SLOW_MS (50),
# HEADERD_SYNC_STEPS ("1 2"), HEADERD_SYNC_RESULTS (build-release/bench-sync-<UTC time>),
# HEADERD_RELEASE_DIR (build-release). The chain and its peers' copies are kept for later runs in
# build-release/bench-sync-chain-<headers>.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
headers=${HEADERD_SYNC_HEADERS:-1000000}
rounds=${HEADERD_SYNC_ROUNDS:-3}
slow_ms=${HEADERD_SYNC_SLOW_MS:-50}
steps=${HEADERD_SYNC_STEPS:-1 2}
results=${HEADERD_SYNC_RESULTS:-$build_dir/bench-sync-$(date -u +%Y%m%dT%H%M%SZ)}

if [ ! -x "$build_dir/node/headerd" ]; then
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADERD_BUILD_TESTS=OFF >/dev/null
fi
ninja -C "$build_dir" headerd >/dev/null
H=$(cd "$build_dir" && pwd)/node/headerd
mkdir -p "$results"
results=$(cd "$results" && pwd)
echo "results: $results"

chain=$build_dir/bench-sync-chain-$headers
if [ ! -f "$chain/made" ]; then
    rm -rf "$chain"
    mkdir -p "$chain"
    echo "generating $headers headers ..."
    "$H" generate --datadir "$chain/p1" --count "$headers" >/dev/null 2>&1
    "$H" export --datadir "$chain/p1" --from 0 --count "$headers" --out "$chain/chain.rlp" >/dev/null 2>&1
    for p in p2 p3 p4; do cp -a "$chain/p1" "$chain/$p" && rm -f "$chain/$p/nodekey" "$chain/$p/enode"; done
    date -u +%FT%TZ >"$chain/made"
fi
head_hash=$("$H" inspect --datadir "$chain/p1" --json | grep -o '"head_hash":"0x[0-9a-f]*"' | cut -d'"' -f4)
network="--synthetic $headers"

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

# start_peer NAME [DELAY_MS]: serves $chain/NAME on a free loopback port; its enode in $chain/NAME/enode.
start_peer() {
    rm -f "$chain/$1/enode"
    "$H" serve --datadir "$chain/$1" --listen 127.0.0.1:0 --workers 1 --reply-delay "${2:-0}" \
        >"$results/serve-$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do
        [ -s "$chain/$1/enode" ] && return 0
        sleep 0.05
    done
    echo "peer $1 did not start" >&2
    exit 1
}
stop_peers() {
    cleanup
    pids=()
}

# now: seconds since the epoch with nanoseconds.
now() { date +%s.%N; }

# run_sync LABEL PEER...: syncs into a fresh datadir (with $sync_freeze); prints the seconds it took.
sync_freeze=--no-freeze
run_sync() {
    local label=$1
    shift
    local args=()
    for p in "$@"; do args+=(--peer "$(cat "$chain/$p/enode")"); done
    rm -rf "$results/dst"
    local t0 t1
    t0=$(now)
    "$H" sync --datadir "$results/dst" $network --head "$head_hash" $sync_freeze "${args[@]}" \
        --summary "$results/$label.json" >"$results/$label.log" 2>&1
    t1=$(now)
    rm -rf "$results/dst"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}

# run_import [freeze]: imports the chain's .rlp into a fresh datadir (then freezes it, with an
# argument); prints the seconds it took.
run_import() {
    rm -rf "$results/imp"
    local t0 t1
    t0=$(now)
    "$H" import --datadir "$results/imp" $network "$chain/chain.rlp" >"$results/import.log" 2>&1
    if [ -n "${1:-}" ]; then "$H" freeze --datadir "$results/imp" --keep 90000 >>"$results/import.log" 2>&1; fi
    t1=$(now)
    rm -rf "$results/imp"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

if [[ " $steps " == *" 1 "* ]]; then
    start_peer p1
    start_peer p2
    for f in import sync import-freeze sync-freeze; do : >"$results/$f.times"; done
    for r in $(seq "$rounds"); do
        sync_freeze=--no-freeze
        run_import >>"$results/import.times"
        run_sync "sync2-r$r" p1 p2 >>"$results/sync.times"
        sync_freeze="--keep 90000"
        run_import freeze >>"$results/import-freeze.times"
        run_sync "sync2-freeze-r$r" p1 p2 >>"$results/sync-freeze.times"
        echo "round $r: import $(tail -1 "$results/import.times") s, sync $(tail -1 "$results/sync.times") s," \
            "import+freeze $(tail -1 "$results/import-freeze.times") s, sync+freeze $(tail -1 "$results/sync-freeze.times") s"
    done
    sync_freeze=--no-freeze
    stop_peers
    echo
    echo "| headers | freezing | import (median s) | sync from 2 peers (median s) | sync / import |"
    echo "|---|---|---|---|---|"
    for f in "" -freeze; do
        imp=$(median <"$results/import$f.times")
        syn=$(median <"$results/sync$f.times")
        label=none
        [ -z "$f" ] || label="keep 90000"
        printf '| %s | %s | %.2f | %.2f | %.2f |\n' "$headers" "$label" "$imp" "$syn" \
            "$(awk -v a="$syn" -v b="$imp" 'BEGIN { print a / b }')"
    done
fi

# share LABEL: each peer's headers and share of the total, from the summary.
share() {
    python3 - "$results/$1.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
total = sum(p["headers"] for p in s["peers"]) or 1
print(" ".join(f'{p["address"]}:{p["headers"]}({100.0 * p["headers"] / total:.1f}%)' for p in s["peers"]))
PY
}

if [[ " $steps " == *" 2 "* ]]; then
    start_peer p1
    start_peer p2
    start_peer p3
    start_peer p4 "$slow_ms"
    slow_port=$(sed 's/.*://' "$chain/p4/enode")
    echo
    echo "| peers | seconds | headers per peer (share) |"
    echo "|---|---|---|"
    t=$(run_sync peers1 p1)
    echo "| 1 | $t | $(share peers1) |"
    t=$(run_sync peers2 p1 p2)
    echo "| 2 | $t | $(share peers2) |"
    t=$(run_sync peers3 p1 p2 p3)
    echo "| 3 fast | $t | $(share peers3) |"
    t3=$t
    t=$(run_sync peers4slow p1 p2 p3 p4)
    echo "| 3 fast + 1 slowed by $slow_ms ms (port $slow_port) | $t | $(share peers4slow) |"
    printf 'slowed / fast-only time: %.3f\n' "$(awk -v a="$t" -v b="$t3" 'BEGIN { print a / b }')"
    stop_peers
    # 4 fast peers: the slowed one restarted without its delay.
    start_peer p1
    start_peer p2
    start_peer p3
    start_peer p4
    t=$(run_sync peers4 p1 p2 p3 p4)
    echo "| 4 | $t | $(share peers4) |"
    stop_peers
fi
echo "machine: $(nproc) cores, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)"
