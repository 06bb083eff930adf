# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables it sets are for the script that sources it
# The chain set-up of the loopback benchmarks (scripts/bench_load.sh, scripts/bench_p2p.sh,
# scripts/bench_discovery.sh): the machine lines of a report, the release build, generated and
# imported datadirs, and `headerd serve` on loopback. Source it from
# the checkout's root; it defines functions only. bench_build sets `headerd`, which the others run.

# poll_until, pid_alive
# shellcheck source=scripts/lib/wait.sh
source "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

# bench_machine: the "== machine" lines every benchmark report starts with (cpu, date, load
# average, commit); the script prints its own lines after them.
bench_machine() {
    echo "== machine"
    echo "cpu:     $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores"
    echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
    echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
}
# rss_kib PID: its VmRSS in KiB (0 when it is gone); load1: the 1-minute load average.
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
load1() { cut -d' ' -f1 /proc/loadavg; }

# bench_build BUILD_DIR TARGET...: configures BUILD_DIR as a Release build with warnings as errors
# and builds TARGET... (at a lower priority, through ccache as the test command's builds: another
# checkout's release build then costs only what differs); sets headerd to its binary.
bench_build() {
    local dir=$1
    shift
    # shellcheck source=scripts/ccache.sh
    source scripts/ccache.sh
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADERD_WERROR=ON "${headerd_launcher[@]}" >/dev/null
    nice cmake --build "$dir" --parallel "$(nproc)" --target "$@"
    headerd=$dir/node/headerd
}

# bench_generate DATADIR HEADERS KEEP [MADE]: DATADIR holds the chain of `headerd generate --count
# HEADERS` (seed 1: the one bench/bench_chain.hpp makes, so the benchmarks take it as theirs) with
# all but the newest KEEP headers frozen. It is made only when DATADIR has no LevelDB yet
# (chaindata/CURRENT) or, with MADE, when the file MADE is missing; what a datadir holds
# (chaindata/, nodekey, enode) is removed first. MADE then gets one line: the seconds generate and
# freeze took, the date and the 1-minute load average after. Fails when generate or freeze does.
bench_generate() {
    local dir=$1 headers=$2 keep=$3 made=${4:-} t0 t1 t2
    if [ -f "$dir/chaindata/CURRENT" ] && { [ -z "$made" ] || [ -f "$made" ]; }; then
        return 0
    fi
    rm -rf "$dir/chaindata" "$dir/nodekey" "$dir/enode"
    [ -z "$made" ] || rm -f "$made"
    echo "generating $headers headers into $dir (keep $keep in LevelDB; load $(cut -d' ' -f1 /proc/loadavg))"
    t0=$(date +%s.%N)
    "$headerd" generate --datadir "$dir" --count "$headers" --verbosity 1 || return
    t1=$(date +%s.%N)
    "$headerd" freeze --datadir "$dir" --keep "$keep" --verbosity 1 || return
    t2=$(date +%s.%N)
    if [ -n "$made" ]; then
        awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$(date -u '+%Y-%m-%d %H:%M UTC')" \
            -v l="$(cut -d' ' -f1 /proc/loadavg)" \
            'BEGIN { printf "generate_s %.1f freeze_s %.1f made %s load_after %s\n", b - a, c - b, d, l }' >"$made"
    fi
}

# bench_import DATADIR KEEP FILE...: imports FILE... (era1 archives or .rlp files) into DATADIR and
# freezes all but the newest KEEP headers; fails when either does.
bench_import() {
    local dir=$1 keep=$2
    shift 2
    "$headerd" import --datadir "$dir" --verbosity 1 "$@" || return
    "$headerd" freeze --datadir "$dir" --verbosity 1 --keep "$keep" || return
}

# bench_serve LOG DATADIR [SERVE OPTION...]: `headerd serve` of DATADIR in the background, devp2p and
# /metrics on free ports of 127.0.0.1, its stderr in LOG. Waits up to 30 s for its enode file and
# its "Metrics enabled" line; sets server_pid, enode and metrics_url. Exits the script with the log
# when serve does not come up.
bench_serve() {
    local log=$1 datadir=$2
    shift 2
    rm -f "$datadir/enode"
    "$headerd" serve --datadir "$datadir" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 "$@" >/dev/null 2>"$log" &
    server_pid=$!
    poll_until 30 0.1 pid_alive "$server_pid" -- bench_serving "$datadir" "$log" || true
    [ -s "$datadir/enode" ] || {
        cat "$log" >&2
        echo "$(basename "$0"): headerd serve did not start" >&2
        exit 1
    }
    enode=$(cat "$datadir/enode")
    metrics_url=$(sed -n 's/.*Metrics enabled.*url=\(http[^ ]*\).*/\1/p' "$log" | head -n1)
}
bench_serving() { [ -s "$1/enode" ] && grep -q 'Metrics enabled' "$2"; }
