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
# the ASan one; HEADERD_FUZZ_SECONDS (default 30) is each fuzz target's time. The full run builds the
# TSan, ASan and fuzz trees in the background, at the CPU's idle priority, while the tests before
# them run (HEADERD_BACKGROUND_BUILDS=0: each build in its own step instead). The time of each step
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
    stop_background
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
# The background builds (below) end with the script, whatever ends it.
bg_pid=
stop_background() {
    if [ -n "$bg_pid" ] && kill -0 "$bg_pid" 2>/dev/null; then
        kill -TERM -- "-$bg_pid" 2>/dev/null || true
        wait "$bg_pid" 2>/dev/null || true
    fi
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
# missing an include fails to compile, with full debug information; CI (CI=true) starts from a clean
# clone, where unity batches and line tables alone (-g1) save most of the compile time that ccache
# has not saved already.
if [ "${CI:-}" = true ]; then
    step "normal build (unity)" ./scripts/build.sh -DHEADERD_UNITY=ON -DHEADERD_DEBUG_INFO=lines -DHEADERD_BUILD_TESTS=ON \
        -DHEADERD_BUILD_BENCHMARKS=ON
else
    # ON: a ./build that scripts/run.sh configured first has neither; and one object per file
    # again where run.sh's first build used unity batches.
    step "normal build" ./scripts/build.sh -DHEADERD_BUILD_TESTS=ON -DHEADERD_BUILD_BENCHMARKS=ON -DHEADERD_UNITY=OFF \
        -DHEADERD_DEBUG_INFO=full
fi
if [ -z "$quick" ]; then
    step "clang-format check" ./scripts/check_format.sh
fi
# The TSan, ASan and fuzz trees build one after another in the background while the steps below
# run, in the scheduling class SCHED_IDLE (chrt --idle; nice 19 where that is refused): a compile
# gets a core only while no test process wants it, and a test that wakes takes its core back at once,
# so the tests run as fast and keep their deadlines as if alone. The normal suite leaves much of
# both cores idle (tests waiting on timers, peers and sockets), which is where these builds go. Each
# sanitizer and fuzz step below waits for its tree, then runs its script as before (configure and
# build are then no-ops). Logs: BUILD/background/NAME.log (docs/testing.md, "Time of the test command").
bg_dir=${HEADERD_BUILD_DIR:-build}/background bg_names=()
if [ -z "$quick" ] && [ "${HEADERD_BACKGROUND_BUILDS:-1}" != 0 ]; then
    [ "${HEADERD_SKIP_SANITIZE:-0}" = 1 ] || bg_names+=(tsan)
    [ -z "$asan" ] || bg_names+=(asan)
    bg_names+=(fuzz)
fi
# background_chain DIR IDLE NAME...: builds each tree at the priority IDLE (a command prefix), writing
# DIR/NAME.log and then DIR/NAME.rc ("exit-code start end", in seconds of this run); stops at a failure.
background_chain() {
    local dir=$1 b start rc
    read -r -a idle <<<"$2"
    shift 2
    for b in "$@"; do
        start=$SECONDS rc=0
        case $b in
            tsan) "${idle[@]}" ./scripts/sanitize.sh thread --build-only >"$dir/$b.log" 2>&1 || rc=$? ;;
            asan) "${idle[@]}" ./scripts/sanitize.sh address --build-only >"$dir/$b.log" 2>&1 || rc=$? ;;
            fuzz) "${idle[@]}" ./scripts/fuzz.sh --build-only >"$dir/$b.log" 2>&1 || rc=$? ;;
        esac
        echo "$rc $start $SECONDS" >"$dir/$b.rc"
        [ "$rc" -eq 0 ] || return "$rc"
    done
}
# wait_background NAME: waits for NAME's tree, adds its build to the step times, fails with its log's
# end if it failed. Without background builds it returns at once (the step builds its own tree).
wait_background() {
    local b=$1 waited=$SECONDS rc start end
    [ -n "$bg_pid" ] || return 0
    while [ ! -f "$bg_dir/$b.rc" ]; do
        if ! kill -0 "$bg_pid" 2>/dev/null && [ ! -f "$bg_dir/$b.rc" ]; then
            echo "test.sh: the background builds stopped before $b (see $bg_dir/)" >&2
            return 1
        fi
        sleep 1
    done
    read -r rc start end <"$bg_dir/$b.rc"
    waited=$((SECONDS - waited))
    timings+=("$(printf '%-44s %4d s' "$b build (background, ${start}-${end} s)" $((end - start)))")
    echo "== test.sh: $b build: $((end - start)) s in the background (from ${start} s), waited $waited s for it" >&2
    if [ "$rc" -ne 0 ]; then
        tail -n 40 "$bg_dir/$b.log" >&2
        echo "test.sh: the $b build failed (exit $rc), whole log: $bg_dir/$b.log" >&2
        return "$rc"
    fi
}
if [ ${#bg_names[@]} -gt 0 ]; then
    idle="chrt --idle 0"
    chrt --idle 0 true 2>/dev/null || idle="nice -n 19"
    rm -rf "$bg_dir"
    mkdir -p "$bg_dir"
    echo "== test.sh: building ${bg_names[*]} in the background ($idle), logs in $bg_dir/" >&2
    # A process group of its own (set -m), so that stop_background ends every compile with it, but
    # the script's session: Linux's autogroup scheduling shares the CPU between sessions first, so
    # a chain in a session of its own (setsid) would take half the CPU from the tests whatever its
    # class (measured: the normal CTest took 812 s that way on a clean clone).
    set -m
    background_chain "$bg_dir" "$idle" "${bg_names[@]}" &
    bg_pid=$!
    set +m
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
    wait_background tsan
    step "TSan tests$([ -n "$bg_pid" ] || echo ' (and build)')" ./scripts/sanitize.sh thread
fi
# The whole CTest suite under AddressSanitizer + UBSan, in ./build-asan (docs/testing.md).
if [ -n "$asan" ]; then
    wait_background asan
    step "ASan tests$([ -n "$bg_pid" ] || echo ' (and build)')" ./scripts/sanitize.sh address
fi
wait_background fuzz
HEADERD_FUZZ_SECONDS=${HEADERD_FUZZ_SECONDS:-30} step "fuzz run$([ -n "$bg_pid" ] || echo ' (and build)')" ./scripts/fuzz.sh
