#!/usr/bin/env bash
# Serving history (bodies and receipt lists from era1 files), measured two ways (figures and how to
# read them: docs/performance.md, "History"):
#   1. in process: build-release/bench/history_benchmark, request frame -> reply frame for geth's
#      request sizes (128 bodies, 256 receipt lists) on mainnet's epoch 0 and Sepolia's epoch 21,
#      against the floor of the same replies (the records decompressed + snappy + AES-CTR + MAC),
#      and era1 files against freezer tables as the store (same run);
#   2. scale: build-release/bench/era_store_scale with HEADERD_HISTORY_FILES (1900) era1 files
#      generated from Sepolia's epoch 21 in a temporary directory (7 GB for 1,900; removed at the
#      end): memory, open descriptors, mappings and read times, with the store's 64 open files
#      and with every file kept open.
#
#   scripts/bench_history.sh                              # both
#   HEADERD_HISTORY_FILES=0 scripts/bench_history.sh      # step 1 only
#
# Arguments go to history_benchmark (default: 3 repetitions, medians shown). HEADERD_HISTORY_DIR
# names where step 2 generates its files (default: a new directory under TMPDIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
files=${HEADERD_HISTORY_FILES:-1900}
# bench_build
# shellcheck source=scripts/lib/bench_chain.sh
source scripts/lib/bench_chain.sh
bench_build "$build_dir" history_benchmark era_store_scale

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
echo "== 1. in process: $build_dir/bench/history_benchmark ${args[*]}"
"$build_dir/bench/history_benchmark" "${args[@]}"

[ "$files" -gt 0 ] || exit 0
dir=${HEADERD_HISTORY_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/headerd-history-scale.XXXXXX")}
trap 'rm -rf "$dir"' EXIT
for open in 64 $((files + 100)); do
    echo "== 2. scale: $files era1 files, at most $open open"
    "$build_dir/bench/era_store_scale" tests/data/sepolia-00021-b8814b14.era1 "$dir" "$files" "$open"
done
