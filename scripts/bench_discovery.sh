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
#          that each provoke a WHOAREYOU), from 1,000 keys;
#   v5flood: as flood, but every datagram a discv5 random packet addressed to the server's node id,
#          each from a fresh random source node id, from 64 source ports (disc_flood --v5-only
#          --sockets 64): each one within the rate limit gets a WHOAREYOU and leaves a challenge;
#   v5unlimited: v5flood against serve --discovery.ratelimit 0: every packet read is answered and
#          leaves a challenge, up to the codec's cap (4,096), the worst case for the server;
#   v5closed: as closed, with v5flood's flood: its baseline (the flooder's and the kernel's share).
# The configurations alternate (off flood off flood ...), so a drift of this shared machine weighs
# both alike; the table gives medians over the rounds, the ratio flood / off of headers/s (the
# goal: at least 0.95), the server's VmRSS (/proc/PID/status) before the load and after the flood
# and its peak (VmHWM), the highest discv5 challenge count sampled from /metrics every 0.2 s during
# the run, the wall time of fresh connections made during the load (HEADERD_DISC_GETS runs of
# `headerd get --amount 16`, spread over the run: process start, TCP connect, RLPx and devp2p
# handshakes, Status and one request; the request's own round trip as get measured it beside it),
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
#                           on and closed; "off v5closed v5flood v5unlimited" floods with discv5
#                           packets only)
#   HEADERD_DISC_GETS       fresh connections (headerd get) per run, spread over the load (5)
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
gets=${HEADERD_DISC_GETS:-5}
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
sampler_pid=
getter_pid=
cleanup() {
    if [ -n "$flood_pid" ]; then kill "$flood_pid" 2>/dev/null || true; fi
    if [ -n "$sampler_pid" ]; then kill "$sampler_pid" 2>/dev/null || true; fi
    if [ -n "$getter_pid" ]; then kill "$getter_pid" 2>/dev/null || true; fi
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
echo "   v5flood: as on, and $flooder --port PORT --server-key KEY --count $flood --seconds $duration --v5-only --sockets 64"
echo "   v5unlimited: as v5flood, with serve --discovery.ratelimit 0"
echo "   v5closed: as off (the UDP port is closed), and v5flood's flood"
echo "   every run: $gets x headerd get --peer ENODE --origin 8000 --amount 16 during the load (fresh connections)"

# sample_run PID URL: every 0.2 s, the discv5 challenge count (/metrics; -1 without discovery) and the
# VmRSS of PID, one line each.
sample_run() {
    local c
    while kill -0 "$1" 2>/dev/null; do
        c=-1
        if [ -n "$2" ]; then
            c=$(curl -s --max-time 2 "$2" | awk '$1 == "headerd_discovery_challenges{protocol=\"discv5\"}" { print $2 }')
        fi
        echo "${c:--1} $(rss_kib "$1")"
        sleep 0.2
    done
}
# fresh_connections N SECONDS: N runs of headerd get, the first after 2 s, then every (SECONDS - 4) / N
# seconds; each line: its wall time in ms, then the round trip get reported (ms), or "failed".
fresh_connections() {
    local i t0 ms rtt gap
    gap=$(awk -v d="$2" -v n="$1" 'BEGIN { g = (d - 4) / n; print (g > 0.2 ? g : 0.2) }')
    sleep 2
    for ((i = 1; i <= $1; i++)); do
        t0=$(date +%s%N)
        if "$headerd" get --peer "$enode" --origin 8000 --amount 16 --timeout 10 >/dev/null 2>"$tmp/get.err"; then
            ms=$((($(date +%s%N) - t0) / 1000000))
            rtt=$(sed -n 's/.*rtt=\([0-9.]*\)ms.*/\1/p' "$tmp/get.err" | head -n1)
            echo "$ms ${rtt:-?}"
        else
            echo "failed"
        fi
        sleep "$gap"
    done
}
for ((r = 1; r <= rounds; r++)); do
    for c in $configs; do
        name=$c$r
        echo "-- round $r, $c (load $(load1))"
        case $c in
            off | closed | v5closed) bench_serve "$tmp/serve.$name.err" "$epoch" --workers 1 ;;
            on | flood | v5flood) bench_serve "$tmp/serve.$name.err" "$epoch" --workers 1 --discovery v4,v5 ;;
            v5unlimited)
                bench_serve "$tmp/serve.$name.err" "$epoch" --workers 1 --discovery v4,v5 --discovery.ratelimit 0
                ;;
            *) echo "bench_discovery.sh: unknown configuration $c" >&2; exit 2 ;;
        esac
        la=$(load1)
        sleep 1
        rss0=$(rss_kib "$server_pid")
        port=${enode##*:}
        port=${port%%\?*}
        key=${enode#enode://}
        key=${key%%@*}
        flood_args=()
        case $c in
            flood | closed) flood_args=(--count "$flood" --seconds "$duration") ;;
            v5closed | v5flood | v5unlimited)
                flood_args=(--count "$flood" --seconds "$duration" --v5-only --sockets 64)
                ;;
        esac
        sample_url=
        case $c in off | closed | v5closed) ;; *) sample_url=$metrics_url ;; esac
        sample_run "$server_pid" "$sample_url" >"$results/$name.samples" &
        sampler_pid=$!
        if [ ${#flood_args[@]} -gt 0 ]; then
            # Created here: the poll below must not look for it before the flooder's shell has.
            : >"$results/$name.flood"
            "$flooder" --port "$port" --server-key "$key" "${flood_args[@]}" >"$results/$name.flood" 2>&1 &
            flood_pid=$!
            # The flood's packets are signed before the first is sent: the load starts after that.
            poll_until 120 0.2 pid_alive "$flood_pid" -- grep -q '^ready:' "$results/$name.flood" || {
                cat "$results/$name.flood" >&2
                echo "bench_discovery.sh: disc_flood did not get ready" >&2
                exit 1
            }
        fi
        rc=0
        fresh_connections "$gets" "$duration" >"$results/$name.accept" &
        getter_pid=$!
        "$headerd" load --peer "$enode" --json "$results/$name.json" --verbosity 2 --clients "$clients" \
            --duration "$duration" --profile mix --chain "$era1" >"$results/$name.log" 2>&1 || rc=$?
        wait "$getter_pid" || true
        getter_pid=
        if [ -n "$flood_pid" ]; then
            wait "$flood_pid" || echo "   (disc_flood exited $?)"
            flood_pid=
            sed 's/^/   /' "$results/$name.flood"
        fi
        sleep 1
        rss1=$(rss_kib "$server_pid")
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$server_pid/status" 2>/dev/null || echo 0)
        kill "$sampler_pid" 2>/dev/null || true
        wait "$sampler_pid" 2>/dev/null || true
        sampler_pid=
        if [ "$c" != off ] && [ -n "$metrics_url" ]; then
            curl -s "$metrics_url" | grep '^headerd_discovery_' >"$results/$name.metrics" || true
        fi
        if [ "$rc" != 0 ]; then echo "   (headerd load exited $rc; $results/$name.log)"; fi
        tail -n 1 "$results/$name.log" | sed 's/^/   /'
        echo "   fresh connections (wall ms, get's rtt ms): $(tr '\n' ';' <"$results/$name.accept")"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$c" "$rss0" "$rss1" "$la" "$hwm" >>"$results/runs.tsv"
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
configs = ("off", "on", "closed", "flood", "v5closed", "v5flood", "v5unlimited")
runs = []
for line in open(os.path.join(results, "runs.tsv")):
    name, c, rss0, rss1, la, hwm = line.rstrip("\n").split("\t")
    r = json.load(open(os.path.join(results, name + ".json")))
    t = r["totals"]
    # Fresh connections: "wall_ms rtt_ms" per line, or "failed".
    accept = [a.split() for a in open(os.path.join(results, name + ".accept")) if a.strip()]
    walls = [float(a[0]) for a in accept if a[0] != "failed"]
    # The highest challenge count sampled (-1: no discovery, nothing sampled).
    peak = max([int(float(s.split()[0])) for s in open(os.path.join(results, name + ".samples")) if s.strip()],
               default=-1)
    runs.append({"name": name, "c": c, "hps": t["headers"] / r["duration_s"], "p99": t["rtt_ms"]["p99"],
                 "errors": sum(t["errors"].values()), "verified": r["verified"], "rss0": int(rss0),
                 "rss1": int(rss1), "hwm": int(hwm), "la": la, "walls": walls,
                 "failed": sum(1 for a in accept if a[0] == "failed"), "peak": peak,
                 "acc_med": statistics.median(walls) if walls else float("nan"),
                 "acc_max": max(walls) if walls else float("nan")})
print("%-13s %11s %8s %7s %9s %11s %11s %11s %10s %15s %6s" % (
    "run", "headers/s", "p99 ms", "errors", "verified", "VmRSS0 KiB", "VmRSS1 KiB", "VmHWM KiB", "chal. peak",
    "conn. ms med/max", "load"))
for x in runs:
    print("%-13s %11.0f %8.1f %7d %9s %11d %11d %11d %10s %15s %6s" % (
        x["name"], x["hps"], x["p99"], x["errors"], x["verified"], x["rss0"], x["rss1"], x["hwm"],
        "-" if x["peak"] < 0 else x["peak"], "%.0f/%.0f%s" % (x["acc_med"], x["acc_max"],
                                                            " (%d failed)" % x["failed"] if x["failed"] else ""),
        x["la"]))
for x in runs:
    print("fresh connections %-13s wall ms: %s" % (x["name"], " ".join("%.0f" % w for w in x["walls"])))
med = {}
for c in configs:
    g = [x for x in runs if x["c"] == c]
    if g:
        med[c] = {k: statistics.median(x[k] for x in g) for k in ("hps", "p99", "rss0", "rss1", "hwm")}
        walls = [w for x in g for w in x["walls"]]
        print("median %-11s headers/s %.0f, p99 %.1f ms, VmRSS %.0f KiB before, %.0f KiB after (%+.0f KiB), "
              "VmHWM %.0f KiB; challenges at most %s; fresh connections: median %.0f ms, max %.0f ms (%d)"
              % (c, med[c]["hps"], med[c]["p99"], med[c]["rss0"], med[c]["rss1"], med[c]["rss1"] - med[c]["rss0"],
                 med[c]["hwm"], max(x["peak"] for x in g) if max(x["peak"] for x in g) >= 0 else "-",
                 statistics.median(walls) if walls else float("nan"), max(walls) if walls else float("nan"),
                 len(walls)))
for c in configs[1:]:
    if c in med and "off" in med:
        pairs = [b["hps"] / a["hps"] for a in runs if a["c"] == "off" for b in runs
                 if b["c"] == c and b["name"][len(c):] == a["name"][3:]]
        print("headers/s %s / off: %.3f (medians), rounds: %s (goal >= 0.95)"
              % (c, med[c]["hps"] / med["off"]["hps"], " ".join("%.3f" % p for p in pairs)))
PY
for f in "$results"/flood*.metrics "$results"/v5flood*.metrics "$results"/v5unlimited*.metrics; do
    [ -f "$f" ] || continue
    echo
    echo "== $(basename "$f"): the server's discovery counters after the flood (non-zero)"
    grep -v ' 0$' "$f" | grep -E '_total|_nodes |_challenges' | sed 's/^/   /' || true
done
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
