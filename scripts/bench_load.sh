#!/usr/bin/env bash
# `headerd load` against real servers on loopback, four measurements in one run (figures and how
# to read them: docs/performance.md, "Load generator: headerd vs an ethereumjs server, efficiency,
# scale"):
#   1. comparison: the same `headerd load --profile mix` (verified byte for byte against the bundled
#      epoch, --chain tests/data/mainnet-00000-5ec1ffb8.era1) against A = `headerd serve --workers 1`
#      on that epoch (imported, all but the newest 2,048 headers frozen) and B = the ethereumjs
#      devp2p server of the interop tests (tests/interop/server.js, same headers); headers/s, p99
#      RTT, and the server's CPU per header from /proc/PID/stat (utime + stime, both servers alike;
#      for headerd also the --server-metrics figure, to cross-check);
#   2. the load generator's efficiency: its own CPU per header received (load_process in the JSON)
#      against the server's CPU per header served, against headerd, with --chain (A) and without it
#      (C: every reply's parent links are checked by hashing each header). Steps 1 and 2 run
#      alternately, A B C A B C ..., a fresh server each time, so a drift of this shared machine
#      weighs every configuration alike; medians over the rounds;
#   3. scale: `--profile mix` against a generated chain of HEADERD_LOAD_SCALE_HEADERS headers and
#      one of HEADERD_LOAD_SMALL_HEADERS (`headerd generate`, then `headerd freeze --keep 90000`),
#      the clients claiming that chain's network (`headerd load --synthetic N`), alternately S L S L:
#      the server's CPU per request at both sizes;
#   4. connections: HEADERD_LOAD_CONN_CLIENTS clients of --profile probes, connected over
#      HEADERD_LOAD_CONN_RAMP s (--handshakes HEADERD_LOAD_CONN_HANDSHAKES), then held for
#      HEADERD_LOAD_CONN_HOLD s: errors, and the VmRSS of the server and of the load process
#      (/proc/PID/status, sampled every 0.5 s while the load runs). A busy machine connects them
#      slower than the ramp asks, so the run lasts HEADERD_LOAD_CONN_EXTRA s more and the table
#      gives how long all of them were actually held (from the report's per-second timeline).
#
#   scripts/bench_load.sh              # everything: about 13 min, plus about 7 min once to make the 10M chain
#   HEADERD_LOAD_DURATION=5 HEADERD_LOAD_ROUNDS=1 HEADERD_LOAD_SCALE_HEADERS=200000 \
#       HEADERD_LOAD_CONN_CLIENTS=1000 HEADERD_LOAD_CONN_RAMP=5 HEADERD_LOAD_CONN_HOLD=5 \
#       scripts/bench_load.sh                                               # a quick run
#
# The generated chains are kept for later runs in build-release/bench-load-chain-<headers> (seed 1,
# --keep 90000), their generation and freeze times beside them in bench-load-chain-<headers>.made.
# Each run's JSON report and log go to the results directory (printed first); the tables at the
# end are computed from them. Variables:
#   HEADERD_LOAD_STEPS           steps to run ("1 2 3 4"; steps 1 and 2 share their A runs)
#   HEADERD_LOAD_CLIENTS         clients of steps 1-3 (32)
#   HEADERD_LOAD_DURATION        seconds per run of steps 1-3 (20)
#   HEADERD_LOAD_ROUNDS          rounds of steps 1-2, each A B C (3)
#   HEADERD_LOAD_PROFILE         profile list of steps 1-3 (mix)
#   HEADERD_LOAD_ETH             --eth of steps 1-2 (68: the ethereumjs server's default)
#   HEADERD_LOAD_SERVER_WORKERS  `headerd serve --workers` (1)
#   HEADERD_LOAD_SCALE_HEADERS   the large generated chain (10000000)
#   HEADERD_LOAD_SMALL_HEADERS   the small generated chain (100000)
#   HEADERD_LOAD_SCALE_ROUNDS    rounds of step 3, each S L (2)
#   HEADERD_LOAD_CONN_CLIENTS    clients of step 4 (10000)
#   HEADERD_LOAD_CONN_RAMP       seconds over which they connect (20)
#   HEADERD_LOAD_CONN_HOLD       seconds they are then held (60)
#   HEADERD_LOAD_CONN_HANDSHAKES handshakes in flight at once (64)
#   HEADERD_LOAD_CONN_EXTRA      seconds added to ramp + hold for a slow connect phase (60)
#   HEADERD_LOAD_RESULTS         results directory (build-release/bench-load-<UTC time>)
#   HEADERD_RELEASE_DIR          build directory (build-release)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_RELEASE_DIR:-build-release}
steps=${HEADERD_LOAD_STEPS:-1 2 3 4}
clients=${HEADERD_LOAD_CLIENTS:-32}
duration=${HEADERD_LOAD_DURATION:-20}
rounds=${HEADERD_LOAD_ROUNDS:-3}
profile=${HEADERD_LOAD_PROFILE:-mix}
eth=${HEADERD_LOAD_ETH:-68}
workers=${HEADERD_LOAD_SERVER_WORKERS:-1}
scale_headers=${HEADERD_LOAD_SCALE_HEADERS:-10000000}
small_headers=${HEADERD_LOAD_SMALL_HEADERS:-100000}
scale_rounds=${HEADERD_LOAD_SCALE_ROUNDS:-2}
conn_clients=${HEADERD_LOAD_CONN_CLIENTS:-10000}
conn_ramp=${HEADERD_LOAD_CONN_RAMP:-20}
conn_hold=${HEADERD_LOAD_CONN_HOLD:-60}
conn_handshakes=${HEADERD_LOAD_CONN_HANDSHAKES:-64}
conn_extra=${HEADERD_LOAD_CONN_EXTRA:-60}
results=${HEADERD_LOAD_RESULTS:-$build_dir/bench-load-$(date -u +%Y%m%dT%H%M%SZ)}
era1=tests/data/mainnet-00000-5ec1ffb8.era1
js_server=tests/interop/server.js
keep=2048        # the epoch datadir: blocks [0, 6144) frozen, as in scripts/bench_scaling.sh
scale_keep=90000 # the generated chains

step() { [[ " $steps " == *" $1 "* ]]; }

# bench_build, bench_generate, bench_import, bench_serve
# shellcheck source=scripts/lib/bench_chain.sh
source scripts/lib/bench_chain.sh
bench_build "$build_dir" headerd

have_node=1
if ! command -v node >/dev/null 2>&1 || [ ! -d tests/interop/node_modules/@ethereumjs/devp2p ]; then
    echo "bench_load.sh: node or tests/interop/node_modules missing (scripts/setup.sh installs them): no ethereumjs runs" >&2
    have_node=0
fi
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt $((conn_clients + 600)) ]; then
    echo "bench_load.sh: the hard RLIMIT_NOFILE ($(ulimit -Hn)) is too low for $conn_clients connections" >&2
fi

mkdir -p "$results"
tmp=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

echo "== machine"
echo "cpu:     $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
echo "ulimit:  -n $(ulimit -n), hard $(ulimit -Hn)"
if [ "$have_node" = 1 ]; then echo "node:    $(node --version)"; fi
echo "results: $results"

clk_tck=$(getconf CLK_TCK)
# utime + stime of every thread of PID, in clock ticks (fields 14 and 15 of /proc/PID/stat; the
# name in parentheses is cut off first, it may hold spaces).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
load1() { cut -d' ' -f1 /proc/loadavg; }

# start_headerd DATADIR [serve options]: sets server_pid, enode, metrics_url.
start_headerd() {
    local datadir=$1
    shift
    bench_serve "$tmp/serve.$RANDOM.err" "$datadir" --workers "$workers" "$@"
}

# start_js: the ethereumjs server on the bundled epoch; sets server_pid, enode (no metrics).
start_js() {
    local out=$tmp/js.enode
    rm -f "$out"
    node "$js_server" --port 0 --out "$out" --max-peers 100 --idle 120 >"$tmp/js.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 300); do
        [ -s "$out" ] && break
        sleep 0.1
    done
    [ -s "$out" ] || { cat "$tmp/js.log" >&2; echo "bench_load.sh: the ethereumjs server did not start" >&2; exit 1; }
    enode=$(cat "$out")
    metrics_url=
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# run_load NAME [load options]: one `headerd load` against the running server ($enode, and its
# /metrics when $metrics_url is set); its JSON and log go to the results directory, and one line
# to runs.tsv: name, server CPU seconds (/proc), server VmRSS before and at most, load VmRSS at
# most (KiB), the 1-minute load average at the start.
run_load() {
    local name=$1 t0 t1 rss0 srss lrss r la load_pid rc=0
    shift
    local args=(load --peer "$enode" --json "$results/$name.json" --verbosity 2 "$@")
    if [ -n "$metrics_url" ]; then args+=(--server-metrics "$metrics_url"); fi
    la=$(load1)
    rss0=$(rss_kib "$server_pid")
    srss=$rss0
    lrss=0
    t0=$(cpu_ticks "$server_pid")
    "$headerd" "${args[@]}" >"$results/$name.log" 2>&1 &
    load_pid=$!
    while kill -0 "$load_pid" 2>/dev/null; do
        r=$(rss_kib "$load_pid")
        if [ "${r:-0}" -gt "$lrss" ]; then lrss=$r; fi
        r=$(rss_kib "$server_pid")
        if [ "${r:-0}" -gt "$srss" ]; then srss=$r; fi
        sleep 0.5
    done
    wait "$load_pid" || rc=$?
    t1=$(cpu_ticks "$server_pid")
    if [ "$rc" != 0 ]; then echo "   (headerd load exited $rc; $results/$name.log)"; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(awk -v d=$((t1 - t0)) -v t="$clk_tck" 'BEGIN { printf "%.3f", d / t }')" \
        "$rss0" "$srss" "$lrss" "$la" >>"$results/runs.tsv"
    echo "   headerd ${args[*]}" | sed "s|$results/|RESULTS/|; s|$enode|ENODE|; s|${metrics_url:-@@}|METRICS_URL|"
    tail -n 2 "$results/$name.log" | sed 's/^/   /'
}

: >"$results/runs.tsv"

# ---- steps 1 and 2 -------------------------------------------------------------------------------
if step 1 || step 2; then
    epoch=$tmp/epoch0
    echo
    echo "== datadir: $era1 imported, blocks [0, $((8192 - keep))) frozen"
    bench_import "$epoch" "$keep" "$era1"
    configs=()
    if step 1; then
        configs+=(A)
        if [ "$have_node" = 1 ]; then configs+=(B); fi
    fi
    if step 2; then
        if ! step 1; then configs+=(A); fi
        configs+=(C)
    fi
    common=(--clients "$clients" --duration "$duration" --profile "$profile" --eth "$eth")
    echo
    echo "== 1-2. --profile $profile, $clients clients, $duration s, --eth $eth; ${configs[*]} alternately, $rounds rounds"
    echo "   A: headerd serve --workers $workers, load --chain $era1"
    echo "   B: node $js_server --port 0 --out FILE --max-peers 100 --idle 120, load --chain $era1"
    echo "   C: headerd serve --workers $workers, load without --chain"
    for ((r = 1; r <= rounds; r++)); do
        for c in "${configs[@]}"; do
            echo "-- round $r, $c (load $(load1))"
            case $c in
                A) start_headerd "$epoch"; run_load "A$r" "${common[@]}" --chain "$era1" ;;
                B) start_js; run_load "B$r" "${common[@]}" --chain "$era1" ;;
                C) start_headerd "$epoch"; run_load "C$r" "${common[@]}" ;;
            esac
            stop_server
        done
    done
fi

# ---- step 3 ----------------------------------------------------------------------------------------
scale_ok=0
if step 3; then
    echo
    echo "== 3. scale: generated chains of $small_headers and $scale_headers headers (seed 1, --keep $scale_keep)"
    for n in "$small_headers" "$scale_headers"; do
        chain=$build_dir/bench-load-chain-$n
        bench_generate "$chain" "$n" "$scale_keep" "$chain.made"
        echo "$n headers: $(cat "$chain.made")"
        "$headerd" inspect --datadir "$chain" --json | tee "$results/inspect-$n.json"
        echo "du: $(du -sb "$chain" | cut -f1) bytes"
    done
    # The clients must claim the generated network; `headerd load` takes mainnet's (or --chain's).
    if "$headerd" load --help | grep -q -- '--synthetic'; then
        scale_ok=1
        for ((r = 1; r <= scale_rounds; r++)); do
            for n in "$small_headers" "$scale_headers"; do
                echo "-- round $r, $n headers (load $(load1))"
                start_headerd "$build_dir/bench-load-chain-$n"
                run_load "S$n-$r" --clients "$clients" --duration "$duration" --profile "$profile" --synthetic "$n"
                stop_server
            done
        done
    else
        echo "BLOCKED: this headerd load has no way to claim a generated chain's network (no --synthetic);" \
            "its clients send mainnet's Status and the server disconnects them (network id mismatch)"
    fi
fi

# ---- step 4 ----------------------------------------------------------------------------------------
if step 4; then
    if [ -z "${epoch:-}" ]; then
        epoch=$tmp/epoch0
        bench_import "$epoch" "$keep" "$era1"
    fi
    echo
    echo "== 4. $conn_clients clients, --profile probes, ramp $conn_ramp s, held $conn_hold s, --handshakes $conn_handshakes (load $(load1))"
    start_headerd "$epoch" --max-peers $((conn_clients + 100))
    echo "   headerd serve --datadir EPOCH --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --workers $workers --max-peers $((conn_clients + 100))"
    run_load conn --clients "$conn_clients" --duration $((conn_ramp + conn_hold + conn_extra)) --ramp "$conn_ramp" \
        --handshakes "$conn_handshakes" --profile probes --chain "$era1"
    stop_server
fi

# ---- tables ----------------------------------------------------------------------------------------
echo
echo "== results (medians over rounds; server CPU from /proc/PID/stat unless marked metrics)"
python3 - "$results" "$small_headers" "$scale_headers" "$scale_ok" "$conn_hold" "$conn_ramp" <<'PY'
import json, os, statistics, sys

results, small, large, scale_ok, hold = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", float(sys.argv[5])
ramp = sys.argv[6]
runs = {}
for line in open(os.path.join(results, "runs.tsv")):
    name, cpu, rss0, srss, lrss, la = line.rstrip("\n").split("\t")
    r = json.load(open(os.path.join(results, name + ".json")))
    t = r["totals"]
    sm = r.get("server_metrics") or {}
    lp = r.get("load_process") or {}
    cpu = float(cpu)
    runs[name] = {
        "hps": t["headers"] / r["duration_s"],
        "rps": t["replies"] / r["duration_s"],
        "p50": t["rtt_ms"]["p50"], "p99": t["rtt_ms"]["p99"],
        "srv_us_h": cpu * 1e6 / t["headers"] if t["headers"] else float("nan"),
        "srv_us_r": cpu * 1e6 / t["replies"] if t["replies"] else float("nan"),
        "met_us_h": sm.get("cpu_us_per_header"), "met_us_r": sm.get("cpu_us_per_request"),
        "load_us_h": lp.get("cpu_us_per_header"),
        "cpu": cpu, "headers": t["headers"], "replies": t["replies"],
        "bph": t["bytes"] / t["headers"] if t["headers"] else float("nan"),
        "errors": sum(t["errors"].values()), "failures": r["failures_total"], "verified": r["verified"],
        "connected": r["clients"]["connected_max"], "connect_failures": r["clients"]["connect_failures"],
        "rss0": int(rss0), "srss": int(srss), "lrss": int(lrss), "la": la,
    }

def med(names, key):
    v = [runs[n][key] for n in names if runs[n][key] is not None]
    return statistics.median(v) if v else float("nan")

def fmt(x, spec):
    return "-" if x is None or x != x else format(x, spec)

cols = "%-10s %10s %9s %9s %11s %11s %10s %8s %7s %9s %8s %5s"
print(cols % ("run", "headers/s", "p50 ms", "p99 ms", "srv us/h", "metrics", "load us/h", "load/srv",
              "errors", "connected", "verified", "load"))
for name in runs:
    if name[0] not in "ABC":
        continue
    x = runs[name]
    print(cols % (name, fmt(x["hps"], ",.0f"), fmt(x["p50"], ".1f"), fmt(x["p99"], ".1f"), fmt(x["srv_us_h"], ".3f"),
                  fmt(x["met_us_h"], ".3f"), fmt(x["load_us_h"], ".3f"),
                  fmt(x["load_us_h"] / x["srv_us_h"] if x["load_us_h"] else None, ".2f"),
                  x["errors"], x["connected"], x["verified"], x["la"]))
groups = {c: [n for n in runs if n[0] == c] for c in "ABC"}
if groups["A"]:
    print()
    print("%-32s %10s %9s %11s %11s %10s %8s" % ("median", "headers/s", "p99 ms", "srv us/h", "metrics us/h", "load us/h", "load/srv"))
    label = {"A": "A headerd serve, --chain", "B": "B ethereumjs server, --chain", "C": "C headerd serve, no --chain"}
    for c in "ABC":
        g = groups[c]
        if not g:
            continue
        rs = [runs[n]["load_us_h"] / runs[n]["srv_us_h"] for n in g if runs[n]["load_us_h"]]
        ratio = statistics.median(rs) if rs else None
        print("%-32s %10s %9s %11s %11s %10s %8s" % (label[c], fmt(med(g, "hps"), ",.0f"), fmt(med(g, "p99"), ".1f"),
              fmt(med(g, "srv_us_h"), ".3f"), fmt(med(g, "met_us_h"), ".3f"), fmt(med(g, "load_us_h"), ".3f"),
              fmt(ratio, ".2f")))
    if groups["B"]:
        a, b = groups["A"], groups["B"]
        print("B / A server CPU per header: %.1fx (goal >= 20x); headers/s A / B: %.1fx; p99 B / A: %.1fx"
              % (med(b, "srv_us_h") / med(a, "srv_us_h"), med(a, "hps") / med(b, "hps"), med(b, "p99") / med(a, "p99")))
        print("B connected at most %s of the clients (median), connect errors %s (median)"
              % (med(b, "connected"), med(b, "connect_failures")))
scale = {n: [k for k in runs if k.startswith("S%s-" % n)] for n in (small, large)}
if scale_ok and scale[small] and scale[large]:
    print()
    print("%-12s %10s %10s %9s %11s %11s %11s %9s %8s" % ("headers", "headers/s", "requests/s", "p99 ms", "srv us/req",
                                                          "metrics", "srv us/h", "bytes/h", "errors"))
    for n in (small, large):
        g = scale[n]
        print("%-12s %10s %10s %9s %11s %11s %11s %9s %8s" % (n, fmt(med(g, "hps"), ",.0f"), fmt(med(g, "rps"), ",.0f"),
              fmt(med(g, "p99"), ".1f"), fmt(med(g, "srv_us_r"), ".1f"), fmt(med(g, "met_us_r"), ".1f"),
              fmt(med(g, "srv_us_h"), ".3f"), fmt(med(g, "bph"), ".1f"), sum(runs[k]["errors"] for k in g)))
        for k in g:
            x = runs[k]
            print("   %-12s srv us/req %.1f (metrics %s), us/h %.3f, %d replies, verified %s, load %s"
                  % (k, x["srv_us_r"], fmt(x["met_us_r"], ".1f"), x["srv_us_h"], x["replies"], x["verified"], x["la"]))
    print("server CPU per request, %s / %s headers: %.3f (goal: within 20%%); per header: %.3f; header bytes: %.3f"
          % (large, small, med(scale[large], "srv_us_r") / med(scale[small], "srv_us_r"),
             med(scale[large], "srv_us_h") / med(scale[small], "srv_us_h"),
             med(scale[large], "bph") / med(scale[small], "bph")))
if "conn" in runs:
    x = runs["conn"]
    r = json.load(open(os.path.join(results, "conn.json")))
    print()
    print("connections: %d requested, %d connected at most, %d connect attempts, %d connect failures"
          % (r["clients"]["requested"], x["connected"], r["clients"]["connect_attempts"], x["connect_failures"]))
    print("   errors %d %s, failures %d, verified %s; %d requests, %d replies, p50 %.2f / p99 %.2f ms"
          % (x["errors"], r["totals"]["errors"], x["failures"], x["verified"], r["totals"]["requests"], x["replies"],
             x["p50"], x["p99"]))
    print("   server VmRSS %d KiB before, %d KiB at most (%.1f KiB per client); load VmRSS %d KiB at most (%.1f KiB per client)"
          % (x["rss0"], x["srss"], (x["srss"] - x["rss0"]) / max(1, x["connected"]), x["lrss"],
             x["lrss"] / max(1, x["connected"])))
    tl = r["timeline"]
    full = next((e["t"] for e in tl if e["clients"] >= r["clients"]["requested"]), None)
    if full is None:
        print("   NOT all clients were connected at once (at most %d)" % x["connected"])
    else:
        held = r["duration_s"] - full
        print("   all %d connected after %.0f s (--ramp asked %s), then held %.0f s%s"
              % (r["clients"]["requested"], full, ramp, held,
                 "" if held >= hold else " (SHORT of the %.0f s asked: raise HEADERD_LOAD_CONN_EXTRA)" % hold))
        during = [e for e in tl if e["t"] > full]
        if during:
            print("   while all were held: %.0f requests/s, per-second p50 %.1f-%.1f ms, p99 %.1f-%.1f ms"
                  % (sum(e["requests"] for e in during) / len(during), min(e["p50_ms"] or 0 for e in during),
                     max(e["p50_ms"] or 0 for e in during), min(e["p99_ms"] or 0 for e in during),
                     max(e["p99_ms"] or 0 for e in during)))
    print("   server CPU %.2f s (%.1f us per reply, metrics %s us); load CPU %s s"
          % (x["cpu"], x["srv_us_r"], fmt(x["met_us_r"], ".1f"), fmt((r.get("load_process") or {}).get("cpu_seconds"), ".2f")))
PY
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
