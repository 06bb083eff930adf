#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in ./build-fuzz and runs each for
# HEADERD_FUZZ_SECONDS (default 30; 13 targets, one per core at a time, so about 3.5 minutes on 2 cores) from a copy of its committed seed
# corpus, fuzz/corpus/<target>/ (real bytes from tests/data; the copy in build-fuzz/corpus/ grows,
# the committed one is never modified). Any crash fails the script; its input is left in
# build-fuzz/corpus/<target>-findings/. The long run per target is scripts/fuzz_long.sh.
# `scripts/fuzz.sh --build-only` configures and builds the targets and runs nothing (scripts/test.sh
# builds them in the background while tests run, docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=
case ${1:-} in
    "") ;;
    --build-only) build_only=1 ;;
    *) echo "usage: $0 [--build-only]" >&2; exit 2 ;;
esac
seconds=${HEADERD_FUZZ_SECONDS:-30}
targets=(core rlpx eth reply freezer era1 config http rpc enr dnsdisc v5wire v4wire)
. scripts/ccache.sh
cmake --preset fuzz "${headerd_launcher[@]}" >/dev/null
cmake --build build-fuzz --target "${targets[@]/%/_fuzz}" --parallel "$(nproc)"
if [ -n "$build_only" ]; then
    exit 0
fi

# The largest input worth trying per target (the era1 seeds are whole small archives).
max_len() {
    case $1 in
        core | era1) echo 65536 ;;
        freezer) echo 16384 ;;
        *) echo 4096 ;;
    esac
}

# One target per core at a time: each libFuzzer process is single-threaded, so on 2 cores the 12 runs
# take 6 x HEADERD_FUZZ_SECONDS instead of 12 x, and each target still gets its full time.
fuzz_one() {
    local t=$1 corpus=build-fuzz/corpus/$1 findings=build-fuzz/corpus/$1-findings
    rm -rf "$findings"
    mkdir -p "$corpus" "$findings"
    cp fuzz/corpus/"$t"/* "$corpus/"
    if ! "./build-fuzz/fuzz/${t}_fuzz" "$corpus" -max_total_time="$seconds" -max_len="$(max_len "$t")" \
        -print_final_stats=1 -artifact_prefix="$findings/" -timeout=25 >"build-fuzz/corpus/$t.log" 2>&1; then
        echo FAILED >"build-fuzz/corpus/$t.status"
    else
        echo ok >"build-fuzz/corpus/$t.status"
    fi
}
jobs=${HEADERD_FUZZ_JOBS:-$(nproc)}
echo "== ${#targets[@]} targets, $seconds s each, $jobs at a time"
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    rm -f "build-fuzz/corpus/$t.status"
    fuzz_one "$t" &
done
wait

status=0
for t in "${targets[@]}"; do
    echo "== ${t}_fuzz ($seconds s)"
    if [ "$(cat "build-fuzz/corpus/$t.status" 2>/dev/null)" != ok ]; then
        echo "${t}_fuzz FAILED: see build-fuzz/corpus/$t.log and build-fuzz/corpus/$t-findings/"
        grep -E "^(==[0-9]+==|SUMMARY|[a-z0-9]+_fuzz:)" "build-fuzz/corpus/$t.log" | head -5 || true
        status=1
    fi
    grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units)" "build-fuzz/corpus/$t.log" | tail -2 || true
done
exit "$status"
