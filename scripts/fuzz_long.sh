#!/usr/bin/env bash
# Long fuzzing: runs each libFuzzer target for HEADERD_FUZZ_LONG_SECONDS (default 600) one after the
# other (one core, nice'd), each from a fresh copy of its committed seed corpus in fuzz/corpus/<target>/,
# and prints a table per target: executions, coverage (libFuzzer's `cov:`, edges), corpus size at the
# end, and findings (crash/leak/timeout/oom files). The table is also written to
# build-fuzz/long/summary.md, the logs and findings to build-fuzz/long/<target>/.
#
# Usage: scripts/fuzz_long.sh [target...]   (default: every target; names without the _fuzz suffix)
# Set HEADERD_FUZZ_LONG_SKIP_BUILD=1 to reuse the binaries already in build-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HEADERD_FUZZ_LONG_SECONDS:-600}
all=(core rlpx eth reply freezer era1 config http enr dnsdisc v5wire v4wire)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")

if [[ -z ${HEADERD_FUZZ_LONG_SKIP_BUILD:-} ]]; then
    . scripts/ccache.sh
    cmake --preset fuzz "${headerd_launcher[@]}" >/dev/null
    cmake --build build-fuzz --target "${targets[@]/%/_fuzz}"
fi

# The largest input worth trying per target (the era1 seeds are slices of a real archive).
max_len() {
    case $1 in
        core | era1) echo 65536 ;;
        freezer) echo 16384 ;;
        *) echo 4096 ;;
    esac
}

out=build-fuzz/long
mkdir -p "$out"
summary=$out/summary.md
{
    echo "Started $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $seconds s per target: scripts/fuzz_long.sh ${targets[*]}"
    echo
    echo "| target | seconds | executions | exec/s | edges (cov) | features (ft) | corpus (files) | findings |"
    echo "|---|---|---|---|---|---|---|---|"
} >"$summary"
cat "$summary"

for t in "${targets[@]}"; do
    dir=$out/$t
    rm -rf "$dir"
    mkdir -p "$dir/corpus" "$dir/findings"
    cp fuzz/corpus/"$t"/* "$dir/corpus/"
    log=$dir/log.txt
    start=$(date +%s)
    # -fork would use more cores; one process per target keeps the machine usable for others.
    nice -n 10 "./build-fuzz/fuzz/${t}_fuzz" "$dir/corpus" -max_total_time="$seconds" -max_len="$(max_len "$t")" \
        -print_final_stats=1 -artifact_prefix="$dir/findings/" -timeout=25 >"$log" 2>&1 || true
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | grep 'cov:' | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corpus=$(find "$dir/corpus" -type f | wc -l)
    findings=$(find "$dir/findings" -type f | wc -l)
    line="| ${t}_fuzz | $took | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | $corpus | $findings |"
    echo "$line" | tee -a "$summary"
done
echo
echo "Finished $(date -u '+%Y-%m-%d %H:%M UTC'); findings (if any) under $out/<target>/findings/" | tee -a "$summary"
