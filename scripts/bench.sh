#!/usr/bin/env bash
# Builds the benchmarks (Release, warnings as errors) in ./build-release and runs them on the full
# benchmark chain, then counts the freezer's read syscalls per 192-header range with strace as an
# independent check of the benchmark's own counter. Figures and how to read them: docs/performance.md.
#
#   scripts/bench.sh                      # 1,000,000 headers (generated once into build-release/)
#   HEADERD_BENCH_HEADERS=20000 scripts/bench.sh --benchmark_min_time=0.05
#
# Arguments go to chain_db_benchmark (default: 5 repetitions, medians shown). The chain is cached in
# HEADERD_BENCH_DIR (default build-release/bench-chain-<headers>); the first run generates it
# (a few minutes for 1,000,000 headers, about 1.5 GB of disk).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
export HEADERD_BENCH_HEADERS=${HEADERD_BENCH_HEADERS:-1000000}

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADERD_WERROR=ON >/dev/null
targets=(chain_db_benchmark)
if [ -f bench/synthetic_benchmark.cpp ]; then
    targets+=(synthetic_benchmark)
fi
cmake --build "$build_dir" --parallel "$(nproc)" --target "${targets[@]}"

echo "== machine"
echo "cpu:    $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores"
echo "date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"

if [ -x "$build_dir/bench/synthetic_benchmark" ]; then
    echo
    echo "== synthetic_benchmark (header generation, one thread)"
    "$build_dir/bench/synthetic_benchmark" --benchmark_repetitions=3 --benchmark_display_aggregates_only=true
fi

echo
echo "== chain_db_benchmark ($HEADERD_BENCH_HEADERS headers)"
if [ $# -eq 0 ]; then
    set -- --benchmark_repetitions=5 --benchmark_display_aggregates_only=true
fi
"$build_dir/bench/chain_db_benchmark" "$@"

# strace: the same ancient-range benchmark at two fixed iteration counts. Everything else the
# process does (open, the warm-up pass over the chain, the warm-up of the benchmark's buffer) is the
# same in both runs, so the difference in pread64/read calls divided by the difference in
# iterations is the syscalls per 192-header range. -f follows LevelDB's background thread too.
if command -v strace >/dev/null 2>&1; then
    echo
    echo "== strace: read syscalls per 192-header ancient range"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    low=1000
    high=3000
    for n in $low $high; do
        HEADERD_BENCH_ITERATIONS=$n strace -f -c -e trace=pread64,read -o "$tmp/strace.$n" \
            "$build_dir/bench/chain_db_benchmark" --benchmark_filter='^header_range/ancient(/|$)' >/dev/null 2>&1
    done
    calls() { awk -v s="$2" '$NF == s { print $4; found = 1 } END { if (!found) print 0 }' "$tmp/strace.$1"; }
    for syscall in pread64 read; do
        a=$(calls $low $syscall)
        b=$(calls $high $syscall)
        echo "$syscall: $a calls at $low iterations, $b at $high: $(awk -v a="$a" -v b="$b" -v n=$((high - low)) \
            'BEGIN { printf "%.3f", (b - a) / n }') per range"
    done
    echo "command: HEADERD_BENCH_ITERATIONS=N strace -f -c -e trace=pread64,read" \
        "$build_dir/bench/chain_db_benchmark --benchmark_filter='^header_range/ancient(/|\$)' (N = $low, $high)"
else
    echo "strace not installed: skipped the syscall cross-check" >&2
fi
