#!/usr/bin/env bash
# Multi-thread scaling and the crypto floor, on real mainnet headers (figures and how to read them:
# docs/performance.md, "Scaling and the crypto floor"):
#   1. imports the bundled epoch 0 (blocks 0..8191, tests/data/mainnet-00000-5ec1ffb8.era1) into a
#      temporary datadir, checks it exports byte for byte as tests/data/mainnet-headers-0-8191.rlp,
#      and freezes all but the newest HEADERD_SCALING_KEEP (default 2048) headers, so that both
#      placements (freezer and LevelDB) hold full 192-header ranges;
#   2. in process, in one run of build-release/bench/serve_benchmark on that datadir:
#      (a) scaling: serve/<placement> with 1 and 2 threads sharing the ChainDb and HeaderServer, each
#          thread with its own RLPx codec pair and reply buffers: requests per wall-clock second, the
#          ratio 2 threads / 1 thread, allocations per request;
#      (b) the crypto floor: serve CPU time per request (1 thread) / reply_crypto CPU time per request
#          (snappy compression + AES-256-CTR + keccak MAC of the same kind of reply).
#
#   scripts/bench_scaling.sh                                  # 5 interleaved repetitions, medians
#   scripts/bench_scaling.sh --benchmark_min_time=0.05        # a quick run (arguments go to serve_benchmark)
#
# HEADERD_BENCH_THREADS (default 2) is the largest thread count; HEADERD_RELEASE_DIR (default
# build-release) the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
keep=${HEADERD_SCALING_KEEP:-2048}
export HEADERD_BENCH_THREADS=${HEADERD_BENCH_THREADS:-2}
era1=tests/data/mainnet-00000-5ec1ffb8.era1
headers_rlp=tests/data/mainnet-headers-0-8191.rlp

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADERD_WERROR=ON >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)" --target headerd serve_benchmark
headerd=$build_dir/node/headerd
serve_benchmark=$build_dir/bench/serve_benchmark

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
datadir=$tmp/epoch0

echo "== machine"
echo "cpu:    $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores"
echo "date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"

echo
echo "== 1. datadir: $era1, blocks [0, 8192 - $keep) frozen"
"$headerd" import --datadir "$datadir" --verbosity 1 "$era1"
"$headerd" export --datadir "$datadir" --verbosity 1 --from 0 --count 8192 --out "$tmp/export.rlp"
cmp "$tmp/export.rlp" "$headers_rlp"
echo "export of blocks 0..8191 is byte-identical to $headers_rlp"
"$headerd" freeze --datadir "$datadir" --verbosity 1 --keep "$keep"
"$headerd" inspect --datadir "$datadir" | grep -E '^(head|ancient headers|LevelDB headers) '

echo
echo "== 2. in process: serve_benchmark, 1..$HEADERD_BENCH_THREADS threads, and the crypto baselines (load $(cut -d' ' -f1 /proc/loadavg))"
if [ $# -eq 0 ]; then
    # Repetitions in random order across benchmarks, so that a neighbour's load on this shared
    # machine weighs on serve and on its baselines alike.
    set -- --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
        --benchmark_display_aggregates_only=true
fi
echo "command: HEADERD_BENCH_DATADIR=DATADIR HEADERD_BENCH_THREADS=$HEADERD_BENCH_THREADS $serve_benchmark $*"
HEADERD_BENCH_DATADIR=$datadir "$serve_benchmark" "$@"

# ---- 3. loopback: `headerd serve --workers 1|2` (not implemented yet) ----------------------------
# Place for the loopback rows: the same datadir ($datadir, still present here; the trap removes it
# on exit) served by `headerd serve --workers 1` and `--workers 2`, with the client load, requests/s,
# server CPU per request and the crypto floor over TCP.

echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
