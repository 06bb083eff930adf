#!/usr/bin/env bash
# Serving headers over devp2p, measured four ways (figures and how to read them: docs/performance.md,
# "Serving over devp2p" and "Workers, memory and handshake storms"):
#   1. in process: build-release/bench/serve_benchmark, request frame -> reply frame for 192 headers,
#      against the unavoidable snappy + AES-CTR + MAC cost of the same replies (same run);
#   2. loopback: build-release/bench/loopback_bench against a real `headerd serve`, once with
#      --workers 1 and once with --workers 2, alternating (1 2 2 1 ... for HEADERD_P2P_ROUNDS
#      rounds each): headers/s, latency, server CPU per header, and the 2-worker/1-worker ratio of
#      the medians; then the server's syscalls per request (strace, two request counts, difference);
#   3. memory: 1,000 and 10,000 idle peers (RLPx + Hello + Status), then each served one 192-header
#      reply, on a small generated chain (build-release/bench-p2p-small, 20,000 headers), whose
#      server starts with a small heap;
#   4. a handshake storm: one peer requesting continuously while 10,000 new peers connect at once.
#
#   scripts/bench_p2p.sh                   # on the 1,000,000-header benchmark chain (build-release/)
#   HEADERD_BENCH_HEADERS=200000 scripts/bench_p2p.sh                          # a smaller chain
#   HEADERD_BENCH_HEADERS=20000 HEADERD_P2P_DURATION=1 HEADERD_P2P_ROUNDS=1 HEADERD_P2P_IDLE_PEERS=1000 \
#       HEADERD_P2P_STORM_PEERS=1000 HEADERD_P2P_STORM_HANDSHAKES=1000 HEADERD_P2P_SERVE_BENCHMARK=0 \
#       scripts/bench_p2p.sh                                                       # a quick run
#
# Arguments go to serve_benchmark (default: 3 repetitions, medians shown). The chain is the one
# scripts/bench.sh uses (HEADERD_BENCH_DIR, default build-release/bench-chain-<headers>: seed 1,
# blocks older than the newest min(90,000, headers/4) frozen); this script generates it with
# `headerd generate` and `headerd freeze` when it is missing. Variables:
#   HEADERD_P2P_SERVE_BENCHMARK  1 (default) runs step 1; 0 skips it (and does not build serve_benchmark)
#   HEADERD_P2P_DURATION         seconds counted per throughput row (5)
#   HEADERD_P2P_ROWS             throughput rows (1x8,4x8,16x8)
#   HEADERD_P2P_WORKERS          worker counts compared in step 2 ("1 2")
#   HEADERD_P2P_ROUNDS           servers started per worker count in step 2 (4)
#   HEADERD_P2P_STRACE           1 (default) counts syscalls per request; 0 skips it
#   HEADERD_P2P_IDLE_PEERS       idle peer counts of step 3 ("1000 10000"; empty: skip step 3)
#   HEADERD_P2P_STORM_PEERS      peers of the storm (10000); 0 skips step 4
#   HEADERD_P2P_STORM_HANDSHAKES connecting at once, one storm per value ("<peers> 1000": all of them,
#                                then 1,000 connectors taking the next peer as soon as theirs is done)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
export HEADERD_BENCH_HEADERS=${HEADERD_BENCH_HEADERS:-1000000}
chain=${HEADERD_BENCH_DIR:-$build_dir/bench-chain-$HEADERD_BENCH_HEADERS}
keep=${HEADERD_BENCH_KEEP:-$((HEADERD_BENCH_HEADERS / 4 < 90000 ? HEADERD_BENCH_HEADERS / 4 : 90000))}
serve_benchmark=${HEADERD_P2P_SERVE_BENCHMARK:-1}
duration=${HEADERD_P2P_DURATION:-5}
rows=${HEADERD_P2P_ROWS:-1x8,4x8,16x8}
worker_counts=${HEADERD_P2P_WORKERS:-1 2}
rounds=${HEADERD_P2P_ROUNDS:-4}
use_strace=${HEADERD_P2P_STRACE:-1}
idle_peers=${HEADERD_P2P_IDLE_PEERS-1000 10000}  # set and empty: no idle step
storm_peers=${HEADERD_P2P_STORM_PEERS:-10000}
storm_handshakes=${HEADERD_P2P_STORM_HANDSHAKES:-$storm_peers 1000}
small=$build_dir/bench-p2p-small

targets=(headerd loopback_bench)
if [ "$serve_benchmark" = 1 ]; then
    targets+=(serve_benchmark)
fi
# bench_build, bench_generate
# shellcheck source=scripts/lib/bench_chain.sh
source scripts/lib/bench_chain.sh
bench_build "$build_dir" "${targets[@]}"
loopback=$build_dir/bench/loopback_bench

# Both sides need a descriptor per peer: loopback_bench raises its own limit and serve raises its
# own from --max-peers, each up to the hard limit, which 10,000 peers need to be above 10,600.
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 10700 ]; then
    echo "bench_p2p.sh: the hard RLIMIT_NOFILE ($(ulimit -Hn)) is too low for 10,000 peers" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== machine"
echo "cpu:    $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores"
echo "date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
echo "ulimit: -n $(ulimit -n), hard $(ulimit -Hn)"

# The benchmark chain, as bench/bench_chain.hpp makes it (the benchmarks accept this one as theirs),
# and the small chain of step 3.
bench_generate "$chain" "$HEADERD_BENCH_HEADERS" "$keep"
bench_generate "$small" 20000 5000

if [ "$serve_benchmark" = 1 ]; then
    echo
    echo "== 1. serve_benchmark: one 192-header request, frame in -> frame out, in process ($HEADERD_BENCH_HEADERS headers)"
    if [ $# -eq 0 ]; then
        set -- --benchmark_repetitions=3 --benchmark_display_aggregates_only=true
    fi
    "$build_dir/bench/serve_benchmark" "$@"
fi

# Step 2: ABBA order over the worker counts (1 2, 2 1, 1 2, ...), a fresh server each time, so a
# drift of this shared machine weighs every count alike.
echo
echo "== 2. loopback throughput: $chain, rows $rows, $duration s counted per row, workers $worker_counts," \
    "$rounds rounds each"
order=()
for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then
        for w in $worker_counts; do order+=("$w"); done
    else
        for w in $(echo "$worker_counts" | tr ' ' '\n' | tac); do order+=("$w"); done
    fi
done
round=0
for w in "${order[@]}"; do
    round=$((round + 1))
    echo "-- round $round: --workers $w (load $(cut -d' ' -f1 /proc/loadavg))"
    "$loopback" --headerd "$headerd" --datadir "$chain" --workers "$w" \
        throughput --rows "$rows" --duration "$duration" --warmup 1 | tee "$tmp/throughput.$round"
done
echo "command: $loopback --headerd $headerd --datadir $chain --workers W throughput --rows $rows" \
    "--duration $duration --warmup 1"
echo
echo "-- medians over the rounds, and the ratio to the first worker count"
# Row lines: workers conns inflight requests headers/s p50 p99 server% us/h usr/sys us/req client% min/max load
cat "$tmp"/throughput.* | awk '
    $1 ~ /^[0-9]+$/ && NF == 14 {
        key = $1 " " $2 "x" $3; n[key]++; hs[key, n[key]] = $5; uh[key, n[key]] = $9; sp[key, n[key]] = $8
        if (!(($2 "x" $3) in rowseen)) { rowseen[$2 "x" $3] = 1; rows[++nrows] = $2 "x" $3 }
        if (!($1 in wseen)) { wseen[$1] = 1; ws[++nws] = $1 }
    }
    function median(arr, key, count,    i, j, t, v) {
        for (i = 1; i <= count; i++) v[i] = arr[key, i]
        for (i = 1; i <= count; i++) for (j = i + 1; j <= count; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return count % 2 ? v[(count + 1) / 2] : (v[count / 2] + v[count / 2 + 1]) / 2
    }
    END {
        printf "%-7s %-8s %7s %12s %9s %12s %14s %14s\n", "row", "workers", "rounds", "headers/s", "server %", "server us/h", "us/h vs first", "h/s vs first"
        for (r = 1; r <= nrows; r++) {
            for (i = 1; i <= nws; i++) {
                key = ws[i] " " rows[r]
                if (!(key in n)) continue
                h = median(hs, key, n[key]); u = median(uh, key, n[key]); s = median(sp, key, n[key])
                if (i == 1) { h0 = h; u0 = u }
                printf "%-7s %-8s %7d %12.0f %9.1f %12.3f %14.3f %14.3f\n", rows[r], ws[i], n[key], h, s, u, u / u0, h / h0
            }
        }
    }'

# Server syscalls per request: the same run at two request counts under strace -f -c; startup,
# handshake and shutdown are identical in both, so the difference divided by the extra requests is
# the cost of one request (1 connection, 8 in flight, one worker).
if [ "$use_strace" = 1 ] && command -v strace >/dev/null 2>&1; then
    echo
    echo "== 2b. server syscalls per request (strace -f -c, 1 connection, 8 in flight, --workers 1)"
    low=300
    high=900
    for n in $low $high; do
        "$loopback" --headerd "$headerd" --datadir "$chain" --workers 1 --wrap "strace -f -c -o $tmp/strace.$n" \
            requests --requests $n --rows 1x8 >/dev/null
    done
    awk -v n=$((high - low)) -v low="$tmp/strace.$low" '
        $4 ~ /^[0-9]+$/ && $NF != "total" { if (FILENAME == low) a[$NF] = $4; else b[$NF] = $4; seen[$NF] = 1 }
        END {
            for (s in seen) { d = (b[s] - a[s]) / n; total += d; if (d >= 0.005 || d <= -0.005) printf "%-16s %8.2f\n", s, d }
            printf "%-16s %8.2f\n", "(all)", total
        }' "$tmp/strace.$low" "$tmp/strace.$high" | sort -k2 -rn
    echo "command: $loopback --headerd $headerd --datadir $chain --workers 1 --wrap \"strace -f -c -o FILE\"" \
        "requests --requests N --rows 1x8 (N = $low, $high)"
elif [ "$use_strace" = 1 ]; then
    echo "strace not installed: skipped the syscall count" >&2
fi

for peers in $idle_peers; do
    echo
    echo "== 3. $peers idle peers: server memory ($small, 20,000 headers; load $(cut -d' ' -f1 /proc/loadavg))"
    "$loopback" --headerd "$headerd" --datadir "$small" idle --peers "$peers"
    echo "command: $loopback --headerd $headerd --datadir $small idle --peers $peers"
done

if [ "$storm_peers" -gt 0 ]; then
    for k in $storm_handshakes; do
        echo
        echo "== 4. handshake storm: $storm_peers peers, $k at once ($chain; load $(cut -d' ' -f1 /proc/loadavg))"
        "$loopback" --headerd "$headerd" --datadir "$chain" storm --peers "$storm_peers" --handshakes "$k"
        echo "command: $loopback --headerd $headerd --datadir $chain storm --peers $storm_peers --handshakes $k"
    done
fi
