#!/usr/bin/env bash
# History over TCP: `headerd load` against `headerd serve --workers 1` on loopback (figures and how
# to read them: docs/performance.md, "History over TCP"). Four configurations, run alternately
# (H N M S H N M S ...), a fresh server each time, so a drift of this shared machine weighs them
# alike; medians over the rounds:
#   H  headers only (--profile mix, verified against the epoch) from a datadir that also holds its
#      history (mainnet epoch 0 imported with --history, all but the newest 2,048 headers frozen);
#   N  the same load from the same headers without the history: H against N is the header rate with
#      history held;
#   M  --profile history (geth, Nethermind, Besu and reth syncing bodies and receipts) on mainnet
#      epoch 0: its bodies are small (uncles only) and its receipt lists empty;
#   S  --profile history on Sepolia's epoch 21 (a datadir anchored at block 172,032 with
#      --trusted-root): 93 transactions and their receipts, 1,273 uncles.
# Each gives items per second by message (headers, bodies, receipt lists), the p99 RTT, and the
# server's CPU from /proc/PID/stat (utime + stime) per item served.
#
#   scripts/bench_history_load.sh                                   # 3 rounds of 20 s, 32 clients
#   HEADERD_HL_ROUNDS=1 HEADERD_HL_DURATION=5 scripts/bench_history_load.sh      # a quick run
#
# Variables: HEADERD_HL_ROUNDS (3), HEADERD_HL_DURATION (seconds per run, 20), HEADERD_HL_CLIENTS
# (32), HEADERD_HL_CONFIGS ("H N M S"), HEADERD_HL_RESULTS (the results directory; default
# build-release/bench-history-load-<UTC time>: each run's JSON report and logs).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
rounds=${HEADERD_HL_ROUNDS:-3}
duration=${HEADERD_HL_DURATION:-20}
clients=${HEADERD_HL_CLIENTS:-32}
configs=${HEADERD_HL_CONFIGS:-H N M S}
results=${HEADERD_HL_RESULTS:-$build_dir/bench-history-load-$(date -u +%Y%m%dT%H%M%SZ)}
mainnet=tests/data/mainnet-00000-5ec1ffb8.era1
sepolia=tests/data/sepolia-00021-b8814b14.era1
sepolia_root=0xb8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e3
# bench_machine, bench_build, bench_import, bench_serve
# shellcheck source=scripts/lib/bench_chain.sh
source scripts/lib/bench_chain.sh
bench_build "$build_dir" headerd
mkdir -p "$results"
echo "results: $results"
bench_machine

work=$(mktemp -d "${TMPDIR:-/tmp}/headerd-history-load.XXXXXX")
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
echo "== datadirs"
bench_import "$work/with-history" 2048 --history "$mainnet"
bench_import "$work/headers-only" 2048 "$mainnet"
"$headerd" import --datadir "$work/sepolia" --verbosity 1 --network sepolia --trusted-root "$sepolia_root" \
    --history "$sepolia"
# load's reference chain for Sepolia: the same anchored headers, a datadir of their own (serve holds
# the other's lock).
"$headerd" import --datadir "$work/sepolia-reference" --verbosity 1 --network sepolia --trusted-root "$sepolia_root" \
    "$sepolia"

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# run CONFIG ROUND: one server, one load run; appends "CONFIG headers bodies receipts seconds cpu_s
# p99_ms" to $results/runs.txt.
run() {
    local config=$1 round=$2 datadir profile chain before after
    case $config in
        H) datadir=$work/with-history profile=mix chain=$mainnet ;;
        N) datadir=$work/headers-only profile=mix chain=$mainnet ;;
        M) datadir=$work/with-history profile=history chain=$mainnet ;;
        S) datadir=$work/sepolia profile=history chain=$work/sepolia-reference ;;
        *) echo "unknown configuration $config" >&2; exit 2 ;;
    esac
    bench_serve "$results/$config-$round.serve.log" "$datadir" --workers 1 --verbosity 2
    before=$(cpu_ticks "$server_pid")
    "$headerd" load --peer "$enode" --clients "$clients" --duration "$duration" --profile "$profile" \
        --chain "$chain" --json "$results/$config-$round.json" --verbosity 2 \
        >"$results/$config-$round.load.out" 2>"$results/$config-$round.load.log" ||
        { tail -n 20 "$results/$config-$round.load.out" >&2; echo "load of $config failed" >&2; exit 1; }
    after=$(cpu_ticks "$server_pid")
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    python3 - "$results/$config-$round.json" "$config" "$(((after - before)))" "$(getconf CLK_TCK)" \
        >>"$results/runs.txt" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
cpu = int(sys.argv[3]) / int(sys.argv[4])
p99 = t["rtt_ms"]["p99"]
print(sys.argv[2], t["headers"], t.get("bodies", 0), t.get("receipt_lists", 0), r["duration_s"], cpu, p99,
      "verified" if r["verified"] else "NOT-VERIFIED")
EOF
    echo "$config round $round: $(tail -n 1 "$results/runs.txt")"
}

for ((round = 1; round <= rounds; round++)); do
    for config in $configs; do run "$config" "$round"; done
done

echo "== results (medians over $rounds rounds of ${duration} s, $clients clients, serve --workers 1)"
python3 - "$results/runs.txt" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    c, h, b, r, s, cpu, p99, v = line.split()
    runs.setdefault(c, []).append((int(h), int(b), int(r), float(s), float(cpu), float(p99), v))
names = {"H": "headers only, history held", "N": "headers only, no history",
         "M": "history profiles, mainnet epoch 0", "S": "history profiles, Sepolia epoch 21"}
print(f"{'config':38} {'headers/s':>10} {'bodies/s':>10} {'receipts/s':>10} {'p99 ms':>8} {'CPU us/item':>12}  verified")
for c, rs in runs.items():
    med = lambda f: statistics.median(f(x) for x in rs)
    items = lambda x: x[0] + x[1] + x[2]
    print(f"{c} {names.get(c, c):36} {med(lambda x: x[0] / x[3]):10.0f} {med(lambda x: x[1] / x[3]):10.0f} "
          f"{med(lambda x: x[2] / x[3]):10.0f} {med(lambda x: x[5]):8.2f} {med(lambda x: x[4] * 1e6 / items(x)):12.3f}  "
          f"{'all' if all(x[6] == 'verified' for x in rs) else 'NO'}")
EOF
