#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test. Exits non-zero on any failure.
#
#   scripts/test.sh          everything, as CI runs it (.ci/run): the clang-format check, the normal
#                            build and its CTest suite (unit, integration, interop, metrics, benchmark
#                            smoke runs), the ThreadSanitizer build and the shared-state tests, the
#                            whole suite under ASan + UBSan, and a short fuzzing run of every target
#   scripts/test.sh --quick  the normal build and its whole CTest suite only: the edit loop
#
# Every build goes through ccache (scripts/ccache.sh), so a clone on a machine that built headerd
# before compiles little. HEADERD_SKIP_SANITIZE=1 leaves out both sanitizer steps, HEADERD_SKIP_ASAN=1
# the ASan one; HEADERD_FUZZ_SECONDS (default 30) is each fuzz target's time. The time of each step
# is printed at the end (docs/testing.md, "Time of the test command").
set -euo pipefail
cd "$(dirname "$0")/.."

quick=
case ${1:-} in
    "") ;;
    --quick) quick=1 ;;
    -h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "test: unknown option '$1' (--quick or nothing)" >&2; exit 2 ;;
esac

timings=()
step() {
    local name=$1 start=$SECONDS
    shift
    echo "== test.sh: $name" >&2
    "$@"
    timings+=("$(printf '%-44s %4d s' "$name" $((SECONDS - start)))")
}
report() {
    local status=$?
    if [ ${#timings[@]} -gt 0 ]; then
        echo "== test.sh: time of each step$([ $status -ne 0 ] && echo ' (stopped by a failure)')" >&2
        printf '    %s\n' "${timings[@]}" >&2
        printf '    %-44s %4d s\n' total "$SECONDS" >&2
    fi
    if [ -n "$ccache_before" ]; then
        ccache_counts | {
            read -r hits misses
            read -r hits0 misses0 <<<"$ccache_before"
            echo "    ccache: $((hits - hits0)) hits, $((misses - misses0)) misses" >&2
        }
    fi
}
# Hits (direct or preprocessed) and misses in ccache's statistics, which count every run.
ccache_counts() {
    ccache --print-stats 2>/dev/null | awk -F'\t' '
        $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
        $1 == "cache_miss" { misses += $2 }
        END { print hits + 0, misses + 0 }'
}
ccache_before=
trap report EXIT

asan=1
if [ "${HEADERD_SKIP_SANITIZE:-0}" = 1 ] || [ "${HEADERD_SKIP_ASAN:-0}" = 1 ]; then
    asan=
fi

step setup ./scripts/setup.sh
. scripts/ccache.sh
if [ ${#headerd_launcher[@]} -gt 0 ]; then
    ccache_before=$(ccache_counts)
fi
# A developer's ./build keeps one object per file, for small incremental rebuilds and so that a file
# missing an include fails to compile; CI (CI=true) starts from a clean clone, where unity batches
# save most of the compile time that ccache has not saved already.
if [ "${CI:-}" = true ]; then
    step "normal build (unity)" ./scripts/build.sh -DHEADERD_UNITY=ON -DHEADERD_BUILD_TESTS=ON -DHEADERD_BUILD_BENCHMARKS=ON
else
    # ON: a ./build that scripts/run.sh configured first has neither; and one object per file
    # again where run.sh's first build used unity batches.
    step "normal build" ./scripts/build.sh -DHEADERD_BUILD_TESTS=ON -DHEADERD_BUILD_BENCHMARKS=ON -DHEADERD_UNITY=OFF
fi
if [ -z "$quick" ]; then
    step "clang-format check" ./scripts/check_format.sh
fi
# The interop tests' independent peer (@ethereumjs/devp2p), pinned by the committed lockfile.
step "npm ci (tests/interop)" bash -c 'cd tests/interop && npm ci --no-audit --no-fund --loglevel=error'

# The normal suite. In the full run, the tests labelled "asan-same" are left to the ASan step below:
# they run there unchanged (no count lowered, no time scaled) on an instrumented binary, which proves
# all the normal build would and checks every memory access besides (docs/testing.md, "Time of the test
# command"). --quick, or a run without the ASan step, runs them here.
normal=(ctest --test-dir "${HEADERD_BUILD_DIR:-build}" --output-on-failure --parallel "$(nproc)" --timeout 900)
if [ -z "$quick" ] && [ -n "$asan" ]; then
    normal+=(-LE asan-same)
fi
step "normal CTest" "${normal[@]}"
if [ -n "$quick" ]; then
    exit 0
fi

# The shared-state tests under ThreadSanitizer, in ./build-tsan (docs/testing.md).
if [ "${HEADERD_SKIP_SANITIZE:-0}" != 1 ]; then
    step "TSan build and tests" ./scripts/sanitize.sh thread
fi
# The whole CTest suite under AddressSanitizer + UBSan, in ./build-asan (docs/testing.md).
if [ -n "$asan" ]; then
    step "ASan build and tests" ./scripts/sanitize.sh address
fi
HEADERD_FUZZ_SECONDS=${HEADERD_FUZZ_SECONDS:-30} step "fuzz build and run" ./scripts/fuzz.sh
