#!/usr/bin/env bash
# Serving throughput with discovery off against discovery on and flooded, on loopback only
# (figures and how to read them: docs/performance.md, "Discovery"). Each run starts a fresh
# `headerd serve --workers 1` on the bundled epoch (tests/data/mainnet-00000-5ec1ffb8.era1 imported,
# all but the newest 2,048 headers frozen, as scripts/bench_load.sh step 1) and measures it with
# `headerd load --profile mix --chain EPOCH` for HEADERD_DISC_DURATION seconds:
#   off:   serve without discovery;
#   on:    serve --discovery v4,v5, no bootnodes, nothing sent to its UDP port (only if asked);
#   closed: serve without discovery while the same flood goes to its (closed) UDP port: what the
#          flooder and the kernel cost, without discovery's share;
#   flood: serve --discovery v4,v5 while bench/disc_flood sends HEADERD_DISC_FLOOD junk datagrams to
#          its UDP port on 127.0.0.1, paced over the load's duration (random bytes; validly signed
#          unsolicited discv4 Ping, Pong, FindNode, Neighbors, ENRRequest; discv5 random packets
#          that each provoke a WHOAREYOU), from 1,000 keys.
# The configurations alternate (off flood off flood ...), so a drift of this shared machine weighs
# both alike; the table gives medians over the rounds, the ratio flood / off of headers/s (the
# goal: at least 0.95), the server's VmRSS (/proc/PID/status) before the load and after the flood,
# and the server's own discovery counters (/metrics) after the flood.
#
#   scripts/bench_discovery.sh                                          # 3 rounds of 20 s: about 3 min
#   HEADERD_DISC_ROUNDS=1 HEADERD_DISC_DURATION=5 scripts/bench_discovery.sh   # a quick run
#
# Variables:
#   HEADERD_DISC_ROUNDS     rounds, each one run per configuration (3)
#   HEADERD_DISC_DURATION   seconds per load run, and over which the flood is paced (20)
#   HEADERD_DISC_FLOOD      datagrams per flood (100000)
#   HEADERD_DISC_CLIENTS    load clients (32)
#   HEADERD_DISC_CONFIGS    configurations per round, in order ("off flood"; "off on closed flood" adds
#                           on and closed)
#   HEADERD_DISC_RESULTS    results directory (build-release/bench-discovery-<UTC time>)
#   HEADERD_DISC_NO_BUILD   1: use the binaries already in the build directory, build nothing
#   HEADERD_RELEASE_DIR     build directory (build-release)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
rounds=${HEADERD_DISC_ROUNDS:-3}
duration=${HEADERD_DISC_DURATION:-20}
flood=${HEADERD_DISC_FLOOD:-100000}
clients=${HEADERD_DISC_CLIENTS:-32}
configs=${HEADERD_DISC_CONFIGS:-off flood}
results=${HEADERD_DISC_RESULTS:-$build_dir/bench-discovery-$(date -u +%Y%m%dT%H%M%SZ)}
era1=tests/data/mainnet-00000-5ec1ffb8.era1
keep=2048

# bench_machine, bench_build, bench_import, bench_serve, rss_kib, load1
# shellcheck source=scripts/lib/bench_chain.sh
source scripts/lib/bench_chain.sh
if [ "${HEADERD_DISC_NO_BUILD:-0}" = 1 ]; then
    headerd=$build_dir/node/headerd
else
    bench_build "$build_dir" headerd disc_flood
fi
flooder=$build_dir/bench/disc_flood
if [ ! -x "$headerd" ] || [ ! -x "$flooder" ]; then
    echo "bench_discovery.sh: $headerd or $flooder missing" >&2
    exit 1
fi

mkdir -p "$results"
tmp=$(mktemp -d)
server_pid=
flood_pid=
cleanup() {
    if [ -n "$flood_pid" ]; then kill "$flood_pid" 2>/dev/null || true; fi
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

bench_machine
echo "results: $results"


epoch=$tmp/epoch0
echo
echo "== datadir: $era1 imported, blocks [0, $((8192 - keep))) frozen"
bench_import "$epoch" "$keep" "$era1"

: >"$results/runs.tsv"
echo
echo "== load --profile mix --clients $clients --duration $duration --chain $era1; $configs alternately, $rounds rounds"
echo "   off:   headerd serve --datadir EPOCH --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --workers 1"
echo "   on:    the same with --discovery v4,v5 (UDP on the TCP port, 127.0.0.1)"
echo "   flood: as on, and $flooder --port PORT --server-key KEY --count $flood --seconds $duration"
echo "   closed: as off (no discovery: the UDP port is closed), and the same flood"
for ((r = 1; r <= rounds; r++)); do
    for c in $configs; do
        name=$c$r
        echo "-- round $r, $c (load $(load1))"
        case $c in
            off | closed) bench_serve "$tmp/serve.$name.err" "$epoch" --workers 1 ;;
            on | flood) bench_serve "$tmp/serve.$name.err" "$epoch" --workers 1 --discovery v4,v5 ;;
            *) echo "bench_discovery.sh: unknown configuration $c" >&2; exit 2 ;;
        esac
        la=$(load1)
        sleep 1
        rss0=$(rss_kib "$server_pid")
        port=${enode##*:}
        port=${port%%\?*}
        key=${enode#enode://}
        key=${key%%@*}
        if [ "$c" = flood ] || [ "$c" = closed ]; then
            # Created here: the poll below must not look for it before the flooder's shell has.
            : >"$results/$name.flood"
            "$flooder" --port "$port" --server-key "$key" --count "$flood" --seconds "$duration" \
                >"$results/$name.flood" 2>&1 &
            flood_pid=$!
            # The flood's packets are signed before the first is sent: the load starts after that.
            poll_until 120 0.2 pid_alive "$flood_pid" -- grep -q '^ready:' "$results/$name.flood" || {
                cat "$results/$name.flood" >&2
                echo "bench_discovery.sh: disc_flood did not get ready" >&2
                exit 1
            }
        fi
        rc=0
        "$headerd" load --peer "$enode" --json "$results/$name.json" --verbosity 2 --clients "$clients" \
            --duration "$duration" --profile mix --chain "$era1" >"$results/$name.log" 2>&1 || rc=$?
        if [ -n "$flood_pid" ]; then
            wait "$flood_pid" || echo "   (disc_flood exited $?)"
            flood_pid=
            sed 's/^/   /' "$results/$name.flood"
        fi
        sleep 1
        rss1=$(rss_kib "$server_pid")
        if [ "$c" != off ] && [ -n "$metrics_url" ]; then
            curl -s "$metrics_url" | grep '^headerd_discovery_' >"$results/$name.metrics" || true
        fi
        if [ "$rc" != 0 ]; then echo "   (headerd load exited $rc; $results/$name.log)"; fi
        tail -n 1 "$results/$name.log" | sed 's/^/   /'
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$c" "$rss0" "$rss1" "$la" >>"$results/runs.tsv"
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=
    done
done

echo
echo "== results (medians over rounds)"
python3 - "$results" <<'PY'
import json, os, statistics, sys

results = sys.argv[1]
runs = []
for line in open(os.path.join(results, "runs.tsv")):
    name, c, rss0, rss1, la = line.rstrip("\n").split("\t")
    r = json.load(open(os.path.join(results, name + ".json")))
    t = r["totals"]
    runs.append({"name": name, "c": c, "hps": t["headers"] / r["duration_s"], "p99": t["rtt_ms"]["p99"],
                 "errors": sum(t["errors"].values()), "verified": r["verified"], "rss0": int(rss0),
                 "rss1": int(rss1), "la": la})
print("%-9s %11s %8s %7s %9s %12s %12s %6s" % ("run", "headers/s", "p99 ms", "errors", "verified", "VmRSS0 KiB",
                                                "VmRSS1 KiB", "load"))
for x in runs:
    print("%-9s %11.0f %8.1f %7d %9s %12d %12d %6s" % (x["name"], x["hps"], x["p99"], x["errors"], x["verified"],
                                                        x["rss0"], x["rss1"], x["la"]))
med = {}
for c in ("off", "on", "closed", "flood"):
    g = [x for x in runs if x["c"] == c]
    if g:
        med[c] = {k: statistics.median(x[k] for x in g) for k in ("hps", "p99", "rss0", "rss1")}
        print("median %-6s headers/s %.0f, p99 %.1f ms, VmRSS %.0f KiB before, %.0f KiB after (%+.0f KiB)"
              % (c, med[c]["hps"], med[c]["p99"], med[c]["rss0"], med[c]["rss1"], med[c]["rss1"] - med[c]["rss0"]))
for c in ("on", "closed", "flood"):
    if c in med and "off" in med:
        pairs = [b["hps"] / a["hps"] for a in runs if a["c"] == "off" for b in runs
                 if b["c"] == c and b["name"][len(c):] == a["name"][3:]]
        print("headers/s %s / off: %.3f (medians), rounds: %s (goal >= 0.95)"
              % (c, med[c]["hps"] / med["off"]["hps"], " ".join("%.3f" % p for p in pairs)))
PY
for f in "$results"/flood*.metrics; do
    [ -f "$f" ] || continue
    echo
    echo "== $(basename "$f"): the server's discovery counters after the flood (non-zero)"
    grep -v ' 0$' "$f" | grep -E '_total|_nodes ' | sed 's/^/   /' || true
done
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
