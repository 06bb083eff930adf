#!/usr/bin/env bash
# Builds headerd with a sanitizer and runs tests through CTest. Exits non-zero on any failed test and
# on any sanitizer report, then prints the wall time.
#
#   scripts/sanitize.sh            # ThreadSanitizer, in ./build-tsan (CMake preset "tsan")
#   scripts/sanitize.sh address    # AddressSanitizer + UBSan, in ./build-asan (CMake preset "asan")
#   scripts/sanitize.sh KIND --build-only   # configure and build, run nothing (scripts/test.sh builds
#                                           # the sanitizer trees in the background, docs/testing.md)
#
# thread: only the test binaries of the code worker threads share are built: ancient/, db/, p2p/
# (rlpx, wire, eth, tracker and the server), load/ and the in-process server suite
# tests/p2p_bad_input_test (plus HEADERD_SANITIZE_EXTRA_TESTS, space-separated target names), and
# exactly their tests run; a failed test runs once more (timing assertions at TSan's speed).
# address: everything is built (every test binary and the headerd binary the shell, interop and
# metrics tests run) and the whole CTest suite runs once, no retries, but for the tests labelled
# "uninstrumented" (no headerd code in them); benchmarks are off.
# HEADERD_SANITIZE_JOBS (default 2) sets the compile jobs and CTest parallelism. Reports go to
# BUILD_DIR/sanitizer-logs/ (also those of headerd processes the shell tests start) and fail the
# run; TSan suppressions, each with its reason, are in scripts/tsan.supp. docs/testing.md has more.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0

kind=${1:-thread}
case $kind in
thread) preset=tsan build_dir=build-tsan ;;
address) preset=asan build_dir=build-asan ;;
*)
    echo "usage: $0 [thread|address] [--build-only]" >&2
    exit 2
    ;;
esac
build_only=
case ${2:-} in
"") ;;
--build-only) build_only=1 ;;
*)
    echo "usage: $0 [thread|address] [--build-only]" >&2
    exit 2
    ;;
esac
jobs=${HEADERD_SANITIZE_JOBS:-2}

# CMakePresets.json: RelWithDebInfo, HEADERD_SANITIZE=$kind, tests on, benchmarks and fuzzing off.
. scripts/ccache.sh
cmake --preset "$preset" "${headerd_launcher[@]}" >/dev/null

logs=$build_dir/sanitizer-logs
if [ "$kind" = thread ]; then
    targets=(ancient_test db_test rlpx_test eth_test tracker_test p2p_test p2p_bad_input_test)
    # The build's targets, listed once: `ninja -t targets | grep -q` in a pipeline under pipefail
    # fails whenever grep exits before ninja has written everything (SIGPIPE), which left a test
    # binary out of the step now and then without a word.
    all_targets=$(ninja -C "$build_dir" -t targets all)
    # p2p/wire is a newer library; older trees do not have its test binary.
    if grep -q '^wire_test:' <<<"$all_targets"; then
        targets+=(wire_test)
    fi
    # load/: the load generator's runner drives clients on several workers (its stats shards, atomics
    # and metrics), in process against a real server.
    if grep -q '^load_test:' <<<"$all_targets"; then
        targets+=(load_test)
    fi
    # sync/: the scrubber's thread beside readers and a writer that grows and freezes the chain
    # (ScrubberConcurrency), and the Fetcher.
    if grep -q '^sync_test:' <<<"$all_targets"; then
        targets+=(sync_test)
    fi
    # More test binaries by name (for example p2p_session_test, left out by default because some of its
    # assertions on timing do not hold at TSan's speed; docs/testing.md).
    read -r -a extra <<<"${HEADERD_SANITIZE_EXTRA_TESTS:-}"
    targets+=("${extra[@]}")
    cmake --build "$build_dir" --parallel "$jobs" --target "${targets[@]}"
else
    build_start=$SECONDS
    cmake --build "$build_dir" --parallel "$jobs"
    build_seconds=$((SECONDS - build_start))
fi
if [ -n "$build_only" ]; then
    echo "sanitize ($kind): built in $((SECONDS / 60))m$((SECONDS % 60))s (--build-only: no tests run)"
    exit 0
fi

rm -rf "$logs"
mkdir -p "$logs"
case $kind in
thread)
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp log_path=$PWD/$logs/tsan"
    # Tests that demand a rate or a deadline of headerd scale it by this factor (load/runner_test.cpp's
    # run, in which every client must have connected): a TSan build runs several times slower.
    export HEADERD_TEST_TIME_SCALE=${HEADERD_TEST_TIME_SCALE:-3}
    ;;
address)
    # A report ends the process with a failure exit code and is written to a file: a shell test that
    # expects headerd to fail would not notice the exit code, so the files decide (below).
    export ASAN_OPTIONS="halt_on_error=1 detect_stack_use_after_return=1 detect_leaks=1 strict_string_checks=1 check_initialization_order=1 log_path=$PWD/$logs/asan"
    export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 log_path=$PWD/$logs/ubsan"
    # Tests that demand a rate or a deadline of headerd scale it by this factor: an ASan build runs
    # 2-3 times slower (tests/load_test.sh's open-loop rate).
    export HEADERD_TEST_TIME_SCALE=${HEADERD_TEST_TIME_SCALE:-3}
    # The kill loops run their full counts in the normal build; under ASan (several times slower)
    # a few kills of each command still check every code path for memory errors.
    export HEADERD_SYNC_KILLS=${HEADERD_SYNC_KILLS:-3} HEADERD_CRASH_KILLS=${HEADERD_CRASH_KILLS:-8}
    ;;
esac

status=0
if [ "$kind" = thread ]; then
    # The tests of exactly these binaries, by CTest number: their names and labels say nothing of the
    # binary (gtest_discover_tests names them after the test suites, and the bad-input suite shares the
    # "integration" label with script tests that need the headerd binary, which is not built here).
    ctest --test-dir "$build_dir" -N -V >"$logs/ctest-list.txt"
    numbers=()
    for t in "${targets[@]}"; do
        mapfile -t found < <(awk -v bin="/$t" '$2 == "Test" && $3 == "command:" && substr($4, length($4) - length(bin) + 1) == bin {
            sub(":", "", $1); print $1 }' "$logs/ctest-list.txt")
        if [ ${#found[@]} -eq 0 ]; then
            echo "sanitize: $t has no tests registered in $build_dir" >&2
            exit 1
        fi
        echo "sanitize: $t: ${#found[@]} tests"
        numbers+=("${found[@]}")
    done

    # A failed test runs once more: some p2p tests assert on timings (a loopback round trip under 2 s,
    # a reply before the server's idle ping) that a TSan build on a loaded machine can miss, and the
    # normal build checks those. A sanitizer report still fails the run below, retried or not.
    ctest --test-dir "$build_dir" --output-on-failure --no-tests=error --parallel "$jobs" --timeout 600 \
        --repeat until-pass:2 -I "0,0,0,$(IFS=,; echo "${numbers[*]}")" | tee "$logs/ctest.txt" || status=1
    # (CTest prints a failed attempt that will be retried without the "N/M" progress prefix.)
    mapfile -t retried < <(grep -E '^ *([0-9]+/[0-9]+ )?Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Timeout|Exception)' \
        "$logs/ctest.txt" | sed -E 's/^ *([0-9]+\/[0-9]+ )?Test +#[0-9]+: ([^ ]+).*/\2/' | sort -u)
    if [ ${#retried[@]} -gt 0 ]; then
        echo "sanitize: failed at least once (output above):"
        printf '    %s\n' "${retried[@]}"
    fi
else
    # The whole suite, once. The interop tests need tests/interop/node_modules (scripts/test.sh runs
    # npm ci first); without them CTest counts them as skipped.
    if [ ! -d tests/interop/node_modules ]; then
        echo "sanitize: tests/interop/node_modules is missing, the interop tests will be skipped" \
            "(run: cd tests/interop && npm ci)" >&2
    fi
    # HEADERD_ASAN_EXCLUDE: a CTest regex of tests to leave out (ctest -E); empty by default, every
    # test runs. The five left out after the first whole run are fixed (docs/testing.md, "Sanitizer
    # build").
    exclude=${HEADERD_ASAN_EXCLUDE-}
    test_start=$SECONDS
    # Tests labelled "uninstrumented" run no headerd code (tests/CMakeLists.txt): the normal suite has them.
    ctest --test-dir "$build_dir" --output-on-failure --no-tests=error --parallel "$jobs" --timeout 900 \
        -LE uninstrumented ${exclude:+-E "$exclude"} | tee "$logs/ctest.txt" || status=1
    test_seconds=$((SECONDS - test_start))
fi

reports=$(find "$logs" -type f -name '[at]san.*' -o -type f -name 'ubsan.*')
# A file holding nothing but LeakSanitizer's "Unable to get registers from thread N." is no report:
# LSan failed, rarely, to read an exiting thread's registers (its ptrace call; LLVM demoted the
# message to verbose-only in llvm-project#116555), and a leak found anyway would follow as a report.
# It is listed, not failed on.
lsan_notes=
for f in $reports; do
    if ! grep -qvE '^==[0-9]+==Unable to get registers from thread [0-9]+\.$' "$f"; then
        lsan_notes+="$f "
        echo "== note: $f holds only LeakSanitizer's \"$(head -n 1 "$f" | sed 's/^==[0-9]*==//')\" (not a report)"
    fi
done
for f in $lsan_notes; do reports=$(grep -vxF "$f" <<<"$reports" || true); done
if [ -n "$reports" ]; then
    status=1
    for f in $reports; do
        echo "== sanitizer report $f"
        cat "$f"
    done
fi

tests=$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' "$logs/ctest.txt")
times=
if [ "$kind" = address ]; then
    times=" (build ${build_seconds}s, tests ${test_seconds}s)"
fi
echo "sanitize ($kind): $tests tests, $(echo "$reports" | grep -c . || true) sanitizer reports," \
    "$([ $status -eq 0 ] && echo clean || echo FAILED), wall time $((SECONDS / 60))m$((SECONDS % 60))s$times"
exit $status
