#!/usr/bin/env bash
# Server CPU per header, headerd against the ethereumjs server, on several workloads: step 1 of
# scripts/bench_load.sh once per row (A = headerd serve, N = A with --reply-cache 0, B = the
# ethereumjs server, alternately A N B A N B ..., a fresh server each run), then one table of the
# medians, each row's B / A with the spread of its rounds, N / A (the reply cache's effect), the
# hit rate and the share of headerd's CPU spent in the kernel (docs/performance.md, "Load
# generator", section 6).
#
#   scripts/bench_load_table.sh        # 3 workloads x 32 and 256 clients x with and without --chain
#
# Variables (the rest, e.g. HEADERD_LOAD_ROUNDS and HEADERD_LOAD_ETH, pass through to bench_load.sh):
#   HEADERD_TABLE_WORKLOADS   ";"-separated --profile values
#                             ("mix;nethermind,besu,erigon,reth,ethereumjs;geth-skeleton")
#   HEADERD_TABLE_CLIENTS     client counts ("32 256")
#   HEADERD_TABLE_CHAIN       "1 0": with --chain (every reply verified) and without
#   HEADERD_LOAD_DURATION     seconds per run (15)
#   HEADERD_TABLE_RESULTS     directory of the rows' results (build-release/bench-load-table-<UTC time>)
set -euo pipefail
cd "$(dirname "$0")/.."
workloads=${HEADERD_TABLE_WORKLOADS:-mix;nethermind,besu,erigon,reth,ethereumjs;geth-skeleton}
client_counts=${HEADERD_TABLE_CLIENTS:-32 256}
chain_modes=${HEADERD_TABLE_CHAIN:-1 0}
out=${HEADERD_TABLE_RESULTS:-${HEADERD_RELEASE_DIR:-build-release}/bench-load-table-$(date -u +%Y%m%dT%H%M%SZ)}
export HEADERD_LOAD_DURATION=${HEADERD_LOAD_DURATION:-15}
export HEADERD_LOAD_STEPS=1
mkdir -p "$out"
echo "results: $out"

IFS=';' read -r -a profiles <<<"$workloads"
row=0
rows=()
for profile in "${profiles[@]}"; do
    for clients in $client_counts; do
        for chain in $chain_modes; do
            row=$((row + 1))
            dir=$out/row$row
            rows+=("$dir")
            printf '%s\t%s\t%s\n' "$profile" "$clients" "$chain" >"$out/row$row.what"
            echo
            echo "==== row $row: --profile $profile, $clients clients, $([ "$chain" = 1 ] && echo "--chain" || echo "no --chain") ($(date -u +%H:%M:%S))"
            HEADERD_LOAD_PROFILE=$profile HEADERD_LOAD_CLIENTS=$clients HEADERD_LOAD_CHAIN=$chain \
                HEADERD_LOAD_RESULTS=$dir scripts/bench_load.sh 2>&1 | tee "$out/row$row.log" | grep -E '^(-- round|   [0-9]|B / A|server CPU per header without)' || true
        done
    done
done

echo
echo "== server CPU per header (us, medians of the rounds; /proc/PID/stat utime + stime)"
python3 - "$out" "${rows[@]}" <<'PY'
import json, os, sys

out, dirs = sys.argv[1], sys.argv[2:]
cols = "%-44s %4s %5s %9s %9s %9s %7s %-11s %7s %7s %6s %5s %9s %9s"
print(cols % ("profile", "cl.", "chain", "A us/h", "N us/h", "B us/h", "B/A", "B/A rounds", "B/N", "N/A", "hits",
              "A sys", "A hdr/s", "B hdr/s"))
for d in dirs:
    profile, clients, chain = open(d + ".what").read().split("\t")
    path = os.path.join(d, "summary.json")
    if not os.path.exists(path):
        print(cols % (profile, clients, chain.strip(), "-", "-", "-", "-", "no summary", "-", "-", "-", "-", "-", "-"))
        continue
    s = json.load(open(path))
    a, n, b = s.get("A", {}), s.get("N", {}), s.get("B", {})
    def g(x, k, spec):
        v = x.get(k)
        return "-" if v is None or v != v else format(v, spec)
    br = s.get("B/A rounds") or []
    print(cols % (profile, clients, "yes" if chain.strip() == "1" else "no", g(a, "srv_us_h", ".3f"),
                  g(n, "srv_us_h", ".3f"), g(b, "srv_us_h", ".2f"),
                  "%.1fx" % (b["srv_us_h"] / a["srv_us_h"]) if a and b else "-",
                  "%.1f-%.1f" % (min(br), max(br)) if br else "-",
                  "%.1fx" % (b["srv_us_h"] / n["srv_us_h"]) if n and b else "-",
                  "%.2fx" % (n["srv_us_h"] / a["srv_us_h"]) if a and n else "-", g(a, "hit", ".2f"), g(a, "sys", ".2f"),
                  g(a, "hps", ",.0f"), g(b, "hps", ",.0f")))
    unverified = [c for c in "ANB" if c in s and not s[c].get("verified") and chain.strip() == "1"]
    if unverified:
        print("   NOT VERIFIED: %s" % " ".join(unverified))
PY
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
