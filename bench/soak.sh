#!/usr/bin/env bash
# Soak: `headerd load --profile mix` with hundreds of clients against `headerd serve --follow` for
# HEADERD_SOAK_SECONDS (default 30 minutes) on loopback, with the chain growing, freezing and the
# scrubber running, and the serving node watched for leaks and drift. Figures of a run:
# docs/testing.md, "Soak".
#
# Setup (mainnet epoch 0, tests/data/mainnet-00000-5ec1ffb8.era1, imported once into a source
# datadir): two upstream `headerd serve` nodes start with a prefix of the epoch and grow in steps
# so that they reach block 8191 at the end: every HEADERD_SOAK_GROW seconds each is stopped, the
# next slice of headers is imported into its datadir, and it is started again on the same port
# with the same node key (as tests/follow_test.sh does). The follower
#   headerd serve --follow UP1 --follow UP2 --keep K --workers 2 --scrub-rate R --cache C --metrics ...
# starts with the same prefix, adopts each new head once both upstreams claim it, freezes all but
# the newest K headers as it grows, and its scrubber rehashes the chain at R headers/s (a pass from
# the head down to the genesis, then --scrub-pause 1 s). The load
#   headerd load --peer FOLLOWER --clients N --profile mix --rate R --chain EPOCH.era1 --metrics ...
# verifies every reply byte for byte against the epoch (the follower's chain is always a prefix of
# it; heads that move during a request are accepted as documented in docs/load.md). The load is an
# open loop at R requests/s in all (default 400, about half of what the server and the load
# generator sharing 2 cores reach closed-loop): a soak looks for drift at a load the node sustains.
# Closed-loop at saturation (HEADERD_SOAK_RATE=0) every RTT is the queue the clients themselves
# keep full, so the tail of the reth profile's 2 s timeout decides how many requests are lost; that
# measures the machine's share, not the server's stability.
#
# Every 10 s the script samples the follower's VmRSS, open fds (/proc/PID/fd) and threads
# (/proc/PID/status), its /metrics (headerd_chain_head_number, headerd_ancient_items,
# headerd_scrub_*) and the load's /metrics (the headerd_load_request_seconds histogram, failures).
# Each sample also runs one spot check of the serving node independent of the load generator: a
# `headerd get` of 192 headers from a random block up to its head, compared byte for byte with the
# epoch.
# At the end it prints a summary and PASS/FAIL on four criteria, and writes one self-contained HTML
# page (inline SVG charts, the load's own HTML report embedded; no network resources):
#   verification  the load's report says verified (no verification failure, lost or stale reply)
#                 and its failure counters are 0;
#   spot_checks   every spot check got all the headers up to the head, byte-exact;
#   rss           after the warm-up, (max - min) / min of the follower's VmRSS <= 10 %. LevelDB's
#                 block cache fills to its capacity (--cache) and then stays there: each freeze
#                 compacts, and the blocks of deleted table files stay cached until newer ones push
#                 them out. A mainnet datadir's hash index fills serve's default 32 MiB within
#                 minutes of serving; this 8192-header chain would take hours, at about 450 KB per
#                 growth step, so the follower runs with --cache 4, which fills during the warm-up.
#                 Its size is sampled (headerd_db_block_cache_bytes) and shown beside the RSS;
#   fds, threads  after the warm-up, no sample above the first post-warm-up sample by more than
#                 HEADERD_SOAK_FD_SLACK fds (default 4: the two followed sessions are redialled
#                 while an upstream restarts) or by any thread;
#   p99           p99 RTT of each window (HEADERD_SOAK_WINDOW s) after the warm-up, computed from
#                 the load's histogram over that window, within a factor 2 of their median, and
#                 the last window's p99 at most 1.5 x the first one (no upward drift).
# The exit code is 0 when every criterion holds, 1 otherwise.
#
#   bench/soak.sh                               # 30 minutes, 300 clients
#   HEADERD_SOAK_SECONDS=120 bench/soak.sh      # a quick run (warm-up and windows scale down)
#   bench/soak.sh --report RESULTS_DIR          # the summary and HTML page again (same HEADERD_SOAK_* values)
#
# Variables:
#   HEADERD_SOAK_SECONDS     load duration (1800)
#   HEADERD_SOAK_CLIENTS     load clients (300)
#   HEADERD_SOAK_GROW        seconds between two growth steps of the upstreams (30)
#   HEADERD_SOAK_START       headers the chain starts with (about 4096; it grows to 8192 in equal
#                            steps, 68 headers per 30 s in 30 minutes: 14 x mainnet's rate)
#   HEADERD_SOAK_KEEP        the follower's --keep (256)
#   HEADERD_SOAK_SCRUB_RATE  the follower's --scrub-rate, headers/s (20000, serve's default)
#   HEADERD_SOAK_CACHE       the follower's --cache, MiB (4; see below)
#   HEADERD_SOAK_RATE        the load's --rate, requests/s in all (400; 0: closed loop)
#   HEADERD_SOAK_WARMUP      seconds excluded from the RSS/fd/thread/p99 criteria (300, or a
#                            quarter of a run shorter than 20 minutes)
#   HEADERD_SOAK_WINDOW      p99 window, seconds (300, or a quarter of a run shorter than 20 min)
#   HEADERD_SOAK_FD_SLACK    fds above the first post-warm-up sample still counted as flat (4)
#   HEADERD_SOAK_RESULTS     results directory (build/soak-<UTC time>)
#   HEADERD                  the binary (build/node/headerd)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
headerd=$(realpath "${HEADERD:-build/node/headerd}")
seconds=${HEADERD_SOAK_SECONDS:-1800}
clients=${HEADERD_SOAK_CLIENTS:-300}
grow=${HEADERD_SOAK_GROW:-30}
start=${HEADERD_SOAK_START:-4096}
keep=${HEADERD_SOAK_KEEP:-256}
scrub_rate=${HEADERD_SOAK_SCRUB_RATE:-20000}
cache=${HEADERD_SOAK_CACHE:-4}
rate=${HEADERD_SOAK_RATE:-400}
if [ "$seconds" -ge 1200 ]; then def=300; else def=$((seconds / 4)); fi
warmup=${HEADERD_SOAK_WARMUP:-$def}
window=${HEADERD_SOAK_WINDOW:-$def}
fd_slack=${HEADERD_SOAK_FD_SLACK:-4}
results=$(realpath -m "${HEADERD_SOAK_RESULTS:-build/soak-$(date -u +%Y%m%dT%H%M%SZ)}")
era1=$repo/tests/data/mainnet-00000-5ec1ffb8.era1
total=8192

if [ "${1:-}" = --report ]; then
    # Only the summary and the HTML page again, from a results directory of an earlier run.
    results=$(realpath "${2:?usage: bench/soak.sh [--report RESULTS_DIR]}")
else
    # The shell tests' helpers: WORK (removed at exit), fail, free_port, serve NAME PORT (PIDS[NAME],
    # every process in PIDS is killed at exit), stop NAME, http_body.
    source tests/lib.sh "$headerd"
    source tests/prom_http.sh
    source tests/node_lib.sh
    # A private copy of the binary: the upstreams are restarted often, and a build that relinks the
    # shared binary meanwhile must not make a restart fail.
    cp "$headerd" "$WORK/headerd"
    headerd=$WORK/headerd
    HEADERD=$headerd

    # The last step lands one interval before the end, so that the full chain is served a while.
    steps=$((seconds / grow - 1))
    [ "$steps" -ge 1 ] || fail "HEADERD_SOAK_SECONDS ($seconds) is shorter than HEADERD_SOAK_GROW ($grow)"
    step=$(((total - start) / steps))
    [ "$step" -ge 1 ] || fail "too many growth steps ($steps) for $((total - start)) headers"
    start=$((total - steps * step))
    mkdir -p "$results/samples"

    {
        echo "date:      $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo "machine:   $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "commit:    $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
        echo "chain:     mainnet epoch 0, starts at $start headers, +$step every $grow s ($steps steps) to $total"
        echo "follower:  --keep $keep --workers 2 --scrub-rate $scrub_rate --cache $cache; load: --profile mix --clients $clients --rate $rate, $seconds s"
        echo "criteria:  warm-up $warmup s, p99 window $window s, fd slack $fd_slack"
        echo "results:   $results"
    } | tee "$results/setup.txt"

    # The epoch, the starting prefix of the upstreams and of the follower.
    "$headerd" import --datadir "$WORK/src" "$era1" >/dev/null 2>&1 || fail "import of $era1 failed"
    "$headerd" export --datadir "$WORK/src" --from 0 --count "$start" --out "$WORK/start.rlp" >/dev/null 2>&1
    for d in a b f; do "$headerd" import --datadir "$WORK/$d" "$WORK/start.rlp" >/dev/null 2>&1; done
    # The epoch as one RLP-hex header per line (line N+1: block N), the form `headerd get` prints.
    "$headerd" export --datadir "$WORK/src" --from 0 --count "$total" --out "$WORK/all.rlp" >/dev/null 2>&1
    python3 - "$WORK/all.rlp" "$WORK/ref.hex" <<'PY'
import sys
d, i = open(sys.argv[1], "rb").read(), 0
with open(sys.argv[2], "w") as out:
    while i < len(d):
        b = d[i]
        h, n = (1 + b - 0xf7, int.from_bytes(d[i + 1:i + b - 0xf6], "big")) if b >= 0xf8 else (1, b - 0xc0)
        out.write("0x" + d[i:i + h + n].hex() + "\n")
        i += h + n
PY

    PA=$(free_port)
    PB=$(free_port)
    PF=$(free_port)
    MF=$(free_port)
    ML=$(free_port)
    # Upstreams: no scrubber (the follower's is the one under test; this leaves it the CPU).
    serve a "$PA" --scrub-rate 0
    serve b "$PB" --scrub-rate 0
    EA=$(cat "$WORK/a/enode")
    EB=$(cat "$WORK/b/enode")
    follower_args=(--follow "$EA" --follow "$EB" --follow-interval 1 --follow-reconnect 1 --keep "$keep" --workers 2
        --scrub-rate "$scrub_rate" --cache "$cache" --metrics "127.0.0.1:$MF" --max-peers $((clients + 100)) --inbound-exempt loopback)
    serve f "$PF" "${follower_args[@]}"
    EF=$(cat "$WORK/f/enode")
    fpid=${PIDS[f]}
    echo "follower:  headerd serve --datadir F --listen 127.0.0.1:PORT ${follower_args[*]}" |
        sed "s|$EA|UP1|; s|$EB|UP2|" | tee -a "$results/setup.txt"

    load_args=(load --peer "$EF" --clients "$clients" --duration "$seconds" --profile mix --ramp 10 --chain "$era1"
        --metrics "127.0.0.1:$ML" --server-metrics "http://127.0.0.1:$MF/metrics" --threshold verified
        --json "$results/load.json" --html "$results/load.html" --verbosity 2)
    [ "$rate" = 0 ] || load_args+=(--rate "$rate")
    echo "load:      headerd ${load_args[*]}" | sed "s|$EF|FOLLOWER|; s|$results/|RESULTS/|g; s|$repo/||" |
        tee -a "$results/setup.txt"
    "$headerd" "${load_args[@]}" >"$results/load.log" 2>&1 &
    PIDS[load]=$!
    lpid=${PIDS[load]}

    # grow_upstream NAME PORT FROM COUNT: NAME restarted on PORT (same datadir, so same node key) with
    # headers FROM..FROM+COUNT-1 of the epoch imported.
    grow_upstream() {
        stop "$1"
        "$headerd" import --datadir "$WORK/$1" "$WORK/slice.rlp" >/dev/null 2>&1 || fail "import into $1 failed"
        serve "$1" "$2" --scrub-rate 0
    }

    # spot_check T: besides the load's own checks, one `headerd get` of 192 headers from a random block
    # up to the follower's head, compared byte for byte with the epoch; one line to spot.tsv.
    printf 't\torigin\thead\tgot\tok\n' >"$results/spot.tsv"
    spot_check() {
        local head origin got ok=1 want
        # (a /metrics read that fails or times out on a busy machine skips this check, not the run)
        head=$(http_body "$MF" /metrics | awk '$1 == "headerd_chain_head_number" { printf "%d", $2 }') || head=
        [ -n "$head" ] || return 0
        origin=$(((RANDOM * 32768 + RANDOM) % (head + 1)))
        "$headerd" get --peer "$EF" --origin "$origin" --amount 192 --timeout 20 >"$WORK/spot.out" 2>/dev/null || ok=0
        got=$(wc -l <"$WORK/spot.out") || got=0
        want=$((head - origin + 1 < 192 ? head - origin + 1 : 192))
        if [ "$got" -lt "$want" ] ||
            ! cmp -s "$WORK/spot.out" <(sed -n "$((origin + 1)),$((origin + got))p" "$WORK/ref.hex"); then ok=0; fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$origin" "$head" "$got" "$ok" >>"$results/spot.tsv"
    }

    # sample T: one line of /proc figures to samples.tsv and both /metrics pages to samples/.
    printf 't\trss_kib\tfds\tthreads\tload1\n' >"$results/samples.tsv"
    printf 't\tstatus\tutc\n' >"$results/follower-exits.tsv"
    sample() {
        local t=$1 rss fds threads
        rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$fpid/status" 2>/dev/null || echo 0)
        threads=$(awk '/^Threads:/ { print $2 }' "/proc/$fpid/status" 2>/dev/null || echo 0)
        fds=$(find "/proc/$fpid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) || true
        printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$rss" "$fds" "$threads" "$(cut -d' ' -f1 /proc/loadavg)" >>"$results/samples.tsv"
        http_body "$MF" /metrics >"$results/samples/$t.f.prom" 2>/dev/null || true
        http_body "$ML" /metrics >"$results/samples/$t.l.prom" 2>/dev/null || true
    }

    t0=$(date +%s)
    grown=0
    sample 0
    # Bounded: one tick per 10 s for the run and up to 2 minutes for the load's end.
    for ((tick = 1; tick <= seconds / 10 + 12; tick++)); do
        # Sleep to the tick's time since t0, so that growth steps do not shift the samples.
        now=$(date +%s)
        if [ $((t0 + tick * 10)) -gt "$now" ]; then sleep $((t0 + tick * 10 - now)); fi
        kill -0 "$lpid" 2>/dev/null || break
        # A follower that died (a crash is a failed soak) is recorded with its exit status and the
        # end of its log, and started again on its datadir and port, so that the run goes on.
        if ! kill -0 "$fpid" 2>/dev/null; then
            frc=0
            wait "$fpid" 2>/dev/null || frc=$?
            unset "PIDS[f]"
            printf '%s\t%s\t%s\n' "$(($(date +%s) - t0))" "$frc" "$(date -u +%H:%M:%S)" >>"$results/follower-exits.tsv"
            tail -n 40 "$WORK/f.log" >"$results/follower-exit-$(($(date +%s) - t0)).log"
            echo "$(date -u +%H:%M:%S) the follower exited with status $frc; started again" >&2
            serve f "$PF" "${follower_args[@]}"
            fpid=${PIDS[f]}
        fi
        t=$((tick * 10))
        [ "$t" -le "$seconds" ] || continue
        sample "$t"
        spot_check "$t"
        if [ $((t / grow)) -gt "$grown" ] && [ "$grown" -lt "$steps" ]; then
            grown=$((grown + 1))
            from=$((start + (grown - 1) * step))
            "$headerd" export --datadir "$WORK/src" --from "$from" --count "$step" --out "$WORK/slice.rlp" >/dev/null 2>&1
            grow_upstream a "$PA"
            grow_upstream b "$PB"
            echo "$(date -u +%H:%M:%S) t=${t}s upstreams at $((from + step - 1)); follower rss $(tail -n1 "$results/samples.tsv" | cut -f2) KiB"
        fi
    done
    load_rc=0
    if kill -0 "$lpid" 2>/dev/null; then
        echo "soak.sh: the load still runs 2 minutes after its duration; stopping it" >&2
        kill "$lpid" 2>/dev/null || true
    fi
    wait "$lpid" || load_rc=$?
    echo "$load_rc" >"$results/load.rc"
    unset "PIDS[load]"
    echo "load exited $load_rc; $(tail -n 3 "$results/load.log" | tr '\n' ' ')"
    stop f
    cp "$WORK/f.log" "$results/follower.log"
    "$headerd" inspect --datadir "$WORK/f" --json >"$results/follower-inspect-end.json" 2>/dev/null || true
    stop a
    stop b
fi

python3 - "$results" "$warmup" "$window" "$fd_slack" "$seconds" "$(cat "$results/load.rc")" "$repo" "$cache" <<'PY'
import html, json, math, os, re, statistics, sys

results, warmup, window, fd_slack, seconds, load_rc = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), \
    int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
repo = sys.argv[7]
cache_mb = int(sys.argv[8])

def local(text):
    """The page names no path of this machine: the checkout and the results directory are cut."""
    return text.replace(results + "/", "RESULTS/").replace(results, "RESULTS").replace(repo + "/", "")

def prom(path):
    """name{labels} -> value, for every sample line."""
    out = {}
    try:
        for line in open(path):
            if line.startswith("#") or not line.strip():
                continue
            k, _, v = line.rstrip("\n").rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    except OSError:
        pass
    return out

def total(m, name):
    return sum(v for k, v in m.items() if k == name or k.startswith(name + "{"))

def buckets(m):
    """le -> cumulative count of headerd_load_request_seconds, summed over profiles."""
    b = {}
    for k, v in m.items():
        if k.startswith("headerd_load_request_seconds_bucket{"):
            le = re.search(r'[{,]le="([^"]+)"', k).group(1)
            le = math.inf if le == "+Inf" else float(le)
            b[le] = b.get(le, 0) + v
    return b

def quantile(b0, b1, q):
    """q-quantile (seconds) of the observations between two cumulative bucket snapshots, linear in the bucket."""
    les = sorted(b1)
    d = [b1[le] - b0.get(le, 0) for le in les]
    n = d[-1] if d else 0
    if n <= 0:
        return None
    rank, prev_le, prev_c = q * n, 0.0, 0.0
    for le, c in zip(les, d):
        if c >= rank:
            if le == math.inf:
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 1)
        prev_le, prev_c = le, c
    return les[-2] if len(les) > 1 else None

rows = []
for line in list(open(os.path.join(results, "samples.tsv")))[1:]:
    t, rss, fds, thr, la = line.split("\t")
    t = int(t)
    f = prom(os.path.join(results, "samples", "%d.f.prom" % t))
    l = prom(os.path.join(results, "samples", "%d.l.prom" % t))
    rows.append({"t": t, "rss": int(rss), "fds": int(fds), "threads": int(thr), "load1": float(la), "f": f, "l": l,
                 "b": buckets(l)})
rows = [r for r in rows if r["rss"] > 0]
for a, b in zip(rows, rows[1:]):
    p = quantile(a["b"], b["b"], 0.99)
    b["p99"] = p * 1000 if p is not None else None
rows[0]["p99"] = None

rep = json.load(open(os.path.join(results, "load.json")))
tot = rep["totals"]
post = [r for r in rows if r["t"] >= warmup]
res = {}
lines = []
def say(s=""):
    lines.append(s)
    print(s)

# verification
fail_counters = {k: total(rows[-1]["l"], "headerd_load_" + k + "_total") for k in ("verification_failures", "lost", "stale")}
ok_ver = bool(rep.get("verified")) and rep.get("failures_total", 0) == 0 and all(v == 0 for v in fail_counters.values())
res["verification"] = ok_ver
say("requests %d, replies %d, headers %d (%.0f headers/s, %.0f replies/s), p50 %.2f ms, p99 %.2f ms, max %.1f ms over the run"
    % (tot["requests"], tot["replies"], tot["headers"], tot["headers"] / rep["duration_s"], tot["replies"] / rep["duration_s"],
       tot["rtt_ms"]["p50"], tot["rtt_ms"]["p99"], tot["rtt_ms"]["max"]))
say("verification: verified=%s, failures %d, errors %s, counters %s, connected at most %s of %s, load exit %d"
    % (rep.get("verified"), rep.get("failures_total", 0), json.dumps(tot.get("errors", {})), json.dumps(fail_counters),
       rep["clients"]["connected_max"], rep["clients"]["requested"], load_rc))

if not ok_ver:
    say("  verification failures by profile: " + ", ".join("%s %d" % (p["name"], p["verification_failures"])
                                                        for p in rep["profiles"] if p["verification_failures"]))
    kinds = {}
    for x in rep.get("failures", []):
        k = x["profile"] + ": " + re.sub(r"0x[0-9a-f]+|\d+", "N", x["reason"])
        kinds[k] = kinds.get(k, 0) + 1
    say("  the first %d failures (the report keeps those) by kind:" % len(rep.get("failures", [])))
    for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        say("    %4d  %s" % (n, k))
    for x in rep.get("failures", [])[:3]:
        say("    e.g. client %d (%s), %s: %s" % (x["client"], x["profile"], x["request"]["text"], x["reason"]))

spots = [l.rstrip("\n").split("\t") for l in list(open(os.path.join(results, "spot.tsv")))[1:]]
bad_spots = [x for x in spots if x[4] != "1"]
say("spot checks (headerd get, 192 headers from a random block, byte for byte against the epoch): %d, %d wrong%s"
    % (len(spots), len(bad_spots), "".join(" [t=%s origin %s head %s got %s]" % tuple(x[:4]) for x in bad_spots[:5])))
res["spot_checks"] = bool(spots) and not bad_spots

exits = [l.rstrip("\n").split("\t") for l in list(open(os.path.join(results, "follower-exits.tsv")))[1:]]
res["follower_alive"] = not exits
say("follower exits during the run: %d%s" % (len(exits), "".join(
    " [t=%s s, %s UTC, status %s%s]" % (x[0], x[2], x[1], " = signal %d" % (int(x[1]) - 128) if int(x[1]) > 128 else "")
    for x in exits)))

# rss
rss = [r["rss"] for r in post]
spread = (max(rss) - min(rss)) / min(rss) * 100 if rss else float("nan")
res["rss"] = bool(rss) and spread <= 10
say("follower VmRSS after the %.0f s warm-up: min %d KiB, max %d KiB, spread %.1f %% (first %d, last %d; whole run max %d)"
    % (warmup, min(rss), max(rss), spread, rss[0], rss[-1], max(r["rss"] for r in rows)))

# fds, threads
fds, thr = [r["fds"] for r in post], [r["threads"] for r in post]
res["fds"] = max(fds) - fds[0] <= fd_slack
res["threads"] = max(thr) <= thr[0]
say("fds: first %d, at the warm-up %d, last %d, min %d, max %d after it; threads: first %d, at the warm-up %d, last %d, max %d after it"
    % (rows[0]["fds"], fds[0], fds[-1], min(fds), max(fds), rows[0]["threads"], thr[0], thr[-1], max(thr)))

# p99 per window, from the samples taken while the load's /metrics answered (not after it exited)
lrows = [r for r in rows if r["b"]]
wins = []
w0 = 0.0
while w0 < seconds - 1e-9:
    w1 = min(w0 + window, seconds)
    a = min((r for r in lrows if r["t"] >= w0), key=lambda r: r["t"], default=None)
    b = max((r for r in lrows if r["t"] <= w1), key=lambda r: r["t"], default=None)
    if a and b and b["t"] > a["t"]:
        p = quantile(a["b"], b["b"], 0.99)
        p50 = quantile(a["b"], b["b"], 0.50)
        n = total(b["l"], "headerd_load_request_seconds_count") - total(a["l"], "headerd_load_request_seconds_count")
        wins.append({"from": a["t"], "to": b["t"], "p99": p * 1000 if p is not None else None,
                     "p50": p50 * 1000 if p50 is not None else None, "n": n,
                     "load1": statistics.mean(r["load1"] for r in lrows if a["t"] <= r["t"] <= b["t"])})
    w0 = w1
say("RTT per %.0f s window (from the load's histogram; buckets of the histogram make these approximate):" % window)
for w in wins:
    say("  %5d-%5d s: p50 %7.2f ms, p99 %7.2f ms, %8d replies, load average %.2f"
        % (w["from"], w["to"], w["p50"] or float("nan"), w["p99"] or float("nan"), w["n"], w["load1"]))
pw = [w["p99"] for w in wins if w["from"] >= warmup and w["p99"] is not None]
if pw:
    med = statistics.median(pw)
    res["p99"] = all(med / 2 <= p <= med * 2 for p in pw) and pw[-1] <= 1.5 * pw[0]
    say("p99 after the warm-up: median %.2f ms, min %.2f, max %.2f, last / first %.2f" % (med, min(pw), max(pw), pw[-1] / pw[0]))
else:
    res["p99"] = False
    say("p99: no window after the warm-up")

# chain, freezer, scrubber
f0, f1 = rows[0]["f"], rows[-1]["f"]
g = lambda m, k: m.get(k, float("nan"))
say("head %d -> %d, frozen items %d -> %d, follower adoptions %d; scrubber: %d passes, %d headers checked, %d damaged, %d repaired"
    % (g(f0, "headerd_chain_head_number"), g(f1, "headerd_chain_head_number"), g(f0, "headerd_ancient_items"),
       g(f1, "headerd_ancient_items"), total(f1, "headerd_sync_heads_adopted_total"),
       g(f1, "headerd_scrub_passes_total") - g(f0, "headerd_scrub_passes_total"),
       g(f1, "headerd_scrub_checked_total") - g(f0, "headerd_scrub_checked_total"),
       g(f1, "headerd_scrub_damaged_blocks"), g(f1, "headerd_scrub_repaired_total")))
say("LevelDB block cache (--cache %d MiB) at the warm-up %.1f MiB, at the end %.1f MiB; memtable at the end %.1f MiB"
    % (cache_mb, g(post[0]["f"], "headerd_db_block_cache_bytes") / 2**20, g(f1, "headerd_db_block_cache_bytes") / 2**20,
       g(f1, "headerd_db_memtable_bytes") / 2**20))
say("machine load average (1 min) during the run: min %.2f, mean %.2f, max %.2f"
    % (min(r["load1"] for r in rows), statistics.mean(r["load1"] for r in rows), max(r["load1"] for r in rows)))
for k in res:
    say("%-13s %s" % (k, "PASS" if res[k] else "FAIL"))
passed = all(res.values())
say("soak: %s" % ("PASS" if passed else "FAIL"))

# ---- HTML ----
def chart(title, unit, pts, color="#2b6cb0", vlines=()):
    pts = [(x, y) for x, y in pts if y is not None]
    W, H, L, R, T, B = 720, 180, 60, 10, 20, 28
    if not pts:
        return "<p>%s: no data</p>" % html.escape(title)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = 0, max(seconds, max(xs))
    y0, y1 = 0, max(ys) * 1.1 or 1
    X = lambda x: L + (x - x0) / (x1 - x0 or 1) * (W - L - R)
    Y = lambda y: H - B - (y - y0) / (y1 - y0) * (H - T - B)
    path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", X(x), Y(y)) for i, (x, y) in enumerate(pts))
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">' % (W, H, html.escape(title))]
    s.append('<text x="%d" y="14" font-size="13" font-weight="bold">%s</text>' % (L, html.escape(title)))
    for i in range(5):
        v = y0 + (y1 - y0) * i / 4
        s.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, Y(v), Y(v)))
        s.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%s</text>' % (L - 4, Y(v) + 3, ("%.4g" % v) + unit))
    for i in range(7):
        v = x0 + (x1 - x0) * i / 6
        s.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%d s</text>' % (X(v), H - 10, v))
    for v in vlines:
        s.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#c53030" stroke-dasharray="4 3"/>' % (X(v), X(v), T, H - B))
    s.append('<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>' % (path, color))
    s.append("</svg>")
    return "".join(s)

setup = local(open(os.path.join(results, "setup.txt")).read())
wl = [warmup]
charts = [
    chart("follower VmRSS (MiB)", "", [(r["t"], r["rss"] / 1024) for r in rows], vlines=wl),
    chart("follower open fds", "", [(r["t"], r["fds"]) for r in rows], vlines=wl),
    chart("follower threads", "", [(r["t"], r["threads"]) for r in rows], vlines=wl),
    chart("p99 RTT per 10 s (ms)", "", [(r["t"], r.get("p99")) for r in rows], color="#c05621", vlines=wl),
    chart("follower head (block number)", "", [(r["t"], r["f"].get("headerd_chain_head_number")) for r in rows], color="#2f855a"),
    chart("LevelDB block cache (MiB)", "", [(r["t"], r["f"].get("headerd_db_block_cache_bytes", 0) / 2**20) for r in rows], vlines=wl),
    chart("frozen items (headerd_ancient_items)", "", [(r["t"], r["f"].get("headerd_ancient_items")) for r in rows], color="#2f855a"),
    chart("scrubber passes (headerd_scrub_passes_total)", "", [(r["t"], r["f"].get("headerd_scrub_passes_total")) for r in rows], color="#6b46c1"),
    chart("machine load average, 1 min (shared machine)", "", [(r["t"], r["load1"]) for r in rows], color="#718096"),
]
wrows = "".join("<tr><td>%d-%d s</td><td>%.2f</td><td>%.2f</td><td>%d</td><td>%.2f</td></tr>"
                % (w["from"], w["to"], w["p50"] or float("nan"), w["p99"] or float("nan"), w["n"], w["load1"]) for w in wins)
verdicts = "".join('<tr><td>%s</td><td class="%s">%s</td></tr>' % (k, "ok" if v else "bad", "PASS" if v else "FAIL")
                   for k, v in res.items())
load_html = local(open(os.path.join(results, "load.html")).read())
# The load's own page in an iframe; a large one goes in gzip-compressed (base64) and is unpacked by
# the browser (DecompressionStream), so that the page stays small. Nothing is fetched.
if len(load_html) <= 100000:
    embed = '<iframe title="headerd load report" srcdoc="%s"></iframe>' % html.escape(load_html, quote=True)
else:
    import base64, gzip
    packed = base64.b64encode(gzip.compress(load_html.encode(), 9)).decode()
    embed = ('<iframe id="load" title="headerd load report"></iframe>'
             '<noscript>The load report is embedded compressed; it needs JavaScript to unpack.</noscript>'
             '<script id="load-gz" type="application/octet-stream">%s</script><script>'
             '(async () => { const b = Uint8Array.from(atob(document.getElementById("load-gz").textContent), c => c.charCodeAt(0));'
             ' const t = await new Response(new Blob([b]).stream().pipeThrough(new DecompressionStream("gzip"))).text();'
             ' document.getElementById("load").srcdoc = t; })();</script>' % packed)
page = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>headerd soak: %s</title>
<style>body{font-family:sans-serif;max-width:960px;margin:1em auto;padding:0 1em}pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}.ok{color:#2f855a;font-weight:bold}
.bad{color:#c53030;font-weight:bold}iframe{width:100%%;height:2400px;border:1px solid #ccc}</style></head><body>
<h1>headerd soak: <span class="%s">%s</span></h1>
<h2>Setup</h2><pre>%s</pre>
<h2>Verdicts</h2><table>%s</table>
<h2>Summary</h2><pre>%s</pre>
<h2>RTT per window</h2><table><tr><th>window</th><th>p50 ms</th><th>p99 ms</th><th>replies</th><th>load avg</th></tr>%s</table>
<h2>Over time</h2><p>Samples every 10 s; the dashed line ends the warm-up.</p>%s
<h2>The load's report</h2>%s
</body></html>
""" % ("PASS" if passed else "FAIL", "ok" if passed else "bad", "PASS" if passed else "FAIL", html.escape(setup),
       verdicts, html.escape(local("\n".join(lines))), wrows, "\n".join("<div>%s</div>" % c for c in charts),
       embed)
open(os.path.join(results, "soak.html"), "w").write(page)
print("report: %s (%d bytes)" % (os.path.join(results, "soak.html"), len(page.encode())))
sys.exit(0 if passed else 1)
PY
