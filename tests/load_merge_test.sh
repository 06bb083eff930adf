#!/usr/bin/env bash
# Load from several machines, merged (docs/load.md, "Load from many machines"). Three `headerd load`
# processes, each bound to a loopback address of its own (127.0.0.2, .3 and .4, --bind) and serving
# its /metrics there on one port, load one `headerd serve` in the same window (--run-id,
# --start-at), each writing its JSON report and its raw RTT samples (--rtt-log). Then
# `headerd report --merge` must give:
#   - counts equal to the sums of the three reports, and as many replies as samples;
#   - p50, p90, p99 and p99.9 (totals and per profile) equal to those of the three generators'
#     samples pooled, within the histogram's stated error (the bucket holding the exact value:
#     never below it, at most 1/64 above);
#   - a timeline whose seconds add up to the generators' seconds;
#   - thresholds judged on the merge (exit 0, and 1 for one that fails; without --threshold the
#     generators' own);
# and refuse, with exit 2, a clear error and no file written: a file that is missing, not JSON or
# not a load report, a report without full-resolution histograms, another run id, chain, server or
# protocol, the same report twice, and a generator whose window does not overlap the others'.
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/node_lib.sh"
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1

D=$WORK/d
"$HEADERD" import --datadir "$D" "$ERA1" >/dev/null 2>&1
"$HEADERD" serve --datadir "$D" --listen 127.0.0.1:0 --workers 2 >/dev/null 2>"$WORK/serve.err" &
SERVE_PID=$!
LOAD_PIDS=()
trap 'kill -9 "$SERVE_PID" "${LOAD_PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
wait_nonempty "$D/enode" "$SERVE_PID" 10 serve "$WORK/serve.err"
ENODE=$(cat "$D/enode")
PORT=$(free_port)

# py EXPR: evaluates a Python expression over the reports g[1..3] (the generators'), m (the merge)
# and s[1..3] (each generator's samples: (profile, message, nanoseconds)); fails when falsy.
py() {
    python3 - "$WORK" "$1" <<'PY' || fail "$1"
import json, os, sys
w = sys.argv[1]
load = lambda p: json.load(open(p)) if os.path.exists(p) else None
g = {i: load(f"{w}/g{i}.json") for i in (1, 2, 3)}
m = load(f"{w}/m.json")
s = {i: [(a, b, int(c)) for a, b, c in (l.split() for l in open(f"{w}/g{i}.rtt"))]
     for i in (1, 2, 3) if os.path.exists(f"{w}/g{i}.rtt")}
if not eval(sys.argv[2]):
    sys.exit(1)
PY
}

# The three generators, each on its own address, all starting at one wall-clock second.
START=$(($(date +%s) + 8)) # time to import --chain, also under ASan
for i in 1 2 3; do
    "$HEADERD" load --peer "$ENODE" --bind "127.0.0.$((i + 1))" --metrics "127.0.0.$((i + 1)):$PORT" \
        --clients 4 --duration 3 --profile mix --chain "$ERA1" --run-id merge-test --start-at "$START" \
        --seed "$i" --threshold verified --json "$WORK/g$i.json" --rtt-log "$WORK/g$i.rtt" --verbosity 1 \
        >"$WORK/g$i.out" 2>&1 &
    LOAD_PIDS+=($!)
done
# While they run: each serves its own series on its own address, labelled with the run.
for i in 1 2 3; do
    url=http://127.0.0.$((i + 1)):$PORT/metrics
    poll_until 15 0.2 -- sh -c "curl -sf '$url' | grep -q 'headerd_load_requests_total{.*run=\"merge-test\"'" ||
        fail "generator $i serves no headerd_load_requests_total{run=\"merge-test\"} on $url"
done
echo "ok: three generators serve their series on 127.0.0.2-4:$PORT, each labelled run=\"merge-test\""
for i in 1 2 3; do
    wait "${LOAD_PIDS[$((i - 1))]}" || { cat "$WORK/g$i.out" >&2; fail "generator $i exited $?"; }
done
LOAD_PIDS=()
py 'all(g[i]["verified"] and g[i]["run_id"] == "merge-test" and g[i]["totals"]["requests"] > 0 for i in g)'
py 'max(g[i]["window"]["start_unix"] for i in g) - min(g[i]["window"]["start_unix"] for i in g) < 1'
py 'all(len(s[i]) == g[i]["totals"]["replies"] == g[i]["totals"]["rtt_histogram"]["count"] for i in g)'
echo "ok: three generators verified, windows started together: $(python3 -c 'import json,sys; print(", ".join(str(json.load(open(f"{sys.argv[1]}/g{i}.json"))["totals"]["requests"]) for i in (1, 2, 3)))' "$WORK") requests"

# --bind is really used: from an IPv6 address (::1) no connection to the IPv4 server is made.
expect_fail "load --bind to an address of another family" "has no address of the family of --bind ::1" \
    "$HEADERD" load --peer "$ENODE" --bind ::1 --clients 1 --duration 1 --threshold verified

# The merge.
"$HEADERD" report --merge "$WORK/g1.json" "$WORK/g2.json" "$WORK/g3.json" --json "$WORK/m.json" \
    --html "$WORK/m.html" --threshold verified --threshold 'p99<10s' >"$WORK/merge.out" 2>&1 ||
    { cat "$WORK/merge.out" >&2; fail "report --merge exited $?"; }
grep -q "merged 3 reports of run merge-test" "$WORK/merge.out" || fail "merge output: $(cat "$WORK/merge.out")"
for k in requests replies headers bytes lost stale verification_failures; do
    py "m['totals']['$k'] == sum(g[i]['totals']['$k'] for i in g)"
done
py 'm["totals"]["replies"] == sum(len(s[i]) for i in s) == m["totals"]["rtt_histogram"]["count"]'
py 'm["clients"]["requested"] == 12 and m["run_id"] == "merge-test" and m["verified"] is True'
py 'len(m["merge"]["inputs"]) == 3 and m["merge"]["windows"]["synchronised"] is True and not m["merge"]["warnings"]'
py 'sum(p["requests"] for p in m["timeline"]) == sum(p["requests"] for i in g for p in g[i]["timeline"])'
py 'all(sum(p["requests"] for p in m["profiles"] if p["name"] == n) == sum(p["requests"] for i in g for p in g[i]["profiles"] if p["name"] == n) for n in {p["name"] for i in g for p in g[i]["profiles"]})'
py '[t["ok"] for t in m["thresholds"]] == [True, True]'
grep -q 'data-chart="histogram"' "$WORK/m.html" || fail "the merged HTML page has no histogram"

# Merged percentiles against the pooled samples: the exact value's bucket (at most 1/64 above it).
python3 - "$WORK" <<'PY' || fail "merged percentiles differ from the pooled samples' beyond the histogram's error"
import json, math, sys
w = sys.argv[1]
m = json.load(open(f"{w}/m.json"))
samples = [l.split() for i in (1, 2, 3) for l in open(f"{w}/g{i}.rtt")]
def check(name, values, rtt):
    values = sorted(values)
    if not values:  # a profile whose clients got no reply in 3 s (a slow walk): nothing to compare
        return
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)):
        exact = values[max(1, math.ceil(q * len(values))) - 1]
        got = rtt[key] * 1e6
        if not (exact - 1 <= got <= exact * (1 + 1 / 64) + 1):
            sys.exit(f"{name} {key}: merged {got:.0f} ns, pooled samples {exact} ns")
        print(f"  {name} {key}: merged {got / 1e6:.4f} ms, pooled {exact / 1e6:.4f} ms "
              f"({(got - exact) / exact * 100:+.2f} %)")
check("total", [int(x[2]) for x in samples], m["totals"]["rtt_ms"])
for p in m["profiles"]:
    values = [int(x[2]) for x in samples if x[0] == p["name"]]
    if len(values) != p["rtt_histogram"]["count"]:
        sys.exit(f"{p['name']}: {len(values)} samples, the merged histogram counts {p['rtt_histogram']['count']}")
    check(p["name"], values, p["rtt_ms"])
PY
echo "ok: merged: $(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["requests"], "requests =", "the sum; p50", t["rtt_ms"]["p50"], "ms, p99", t["rtt_ms"]["p99"], "ms = the pooled samples within 1/64")' "$WORK/m.json")"

# Thresholds on the merge: one that fails exits 1; without --threshold, the generators' own.
rc=0
"$HEADERD" report --merge "$WORK/g1.json" "$WORK/g2.json" "$WORK/g3.json" --threshold 'p99<1us' \
    >"$WORK/merge.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "threshold p99<1us *FAILED" "$WORK/merge.out" ||
    fail "a failing threshold on the merge: exit $rc: $(cat "$WORK/merge.out")"
"$HEADERD" report --merge "$WORK/g1.json" "$WORK/g2.json" "$WORK/g3.json" >"$WORK/merge.out" 2>&1 ||
    fail "merge with the generators' thresholds: $(cat "$WORK/merge.out")"
grep -q "threshold verified *ok" "$WORK/merge.out" || fail "the generators' thresholds: $(cat "$WORK/merge.out")"
echo "ok: thresholds judged on the merge (p99<1us fails with exit 1; the generators' 'verified' by default)"

# Refused: exit 2, the reason, and no merged file.
# edit NAME EXPR: g1.json with a Python statement applied to `r`, written as NAME.
edit() {
    python3 - "$WORK/g1.json" "$WORK/$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(r, open(sys.argv[2], "w"))
PY
}
refused() {
    local what=$1 part=$2 out rc=0
    shift 2
    rm -f "$WORK/m2.json"
    out=$("$HEADERD" report --merge "$@" --json "$WORK/m2.json" 2>&1) || rc=$?
    [ "$rc" = 2 ] || fail "$what: exit $rc, not 2: $out"
    printf '%s' "$out" | grep -qF -- "$part" || fail "$what: the error does not say '$part': $out"
    [ ! -e "$WORK/m2.json" ] || fail "$what: a merged report was written"
    echo "ok: refused $what: $(printf '%s' "$out" | grep -F -- "$part" | head -1 | sed 's/.*report --merge: //')"
}
G2=$WORK/g2.json
echo 'not json' >"$WORK/bad.json"
echo '{"schema": "k6-summary"}' >"$WORK/other.json"
edit old.json 'for p in r["profiles"]: del p["rtt_histogram"]'
edit run.json 'r["run_id"] = "another-run"'
edit chain.json 'r["server"]["genesis"] = "0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9"'
edit server.json 'r["server"]["enode"] = r["server"]["enode"].replace("@", "0@", 1)'
edit protocol.json 'r["protocol"]["eth"] = 70'
refused "a missing file" "cannot read the report" "$WORK/none.json" "$G2"
refused "a file that is not JSON" "not a JSON document" "$WORK/bad.json" "$G2"
refused "a file that is not a load report" "other.json:" "$WORK/other.json" "$G2"
refused "a report without full-resolution histograms" "has no full-resolution histograms" "$WORK/old.json" "$G2"
refused "another run id" "different run ids (another-run and merge-test)" "$WORK/run.json" "$G2"
refused "another chain" "different chains" "$WORK/chain.json" "$G2"
refused "another server" "different servers" "$WORK/server.json" "$G2"
refused "another protocol (load --eth 70)" "different protocols (eth/70 and each profile's versions)" "$WORK/protocol.json" "$G2"
refused "the same report twice" "the same generator's report" "$G2" "$G2"
refused "no file" "name the JSON reports to merge"
# A generator of the same run id whose window began after the others' ended.
"$HEADERD" load --peer "$ENODE" --clients 2 --duration 1 --profile mix --run-id merge-test \
    --json "$WORK/late.json" --verbosity 1 >"$WORK/late.out" 2>&1 || { cat "$WORK/late.out" >&2; fail "late load"; }
refused "windows that do not overlap" "their windows do not overlap" "$WORK/g1.json" "$WORK/late.json"
