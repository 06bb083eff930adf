#!/usr/bin/env bash
# headerd load against headerd serve on loopback: every profile verified byte for byte against the
# bundled epoch, the JSON report's fields, thresholds that pass and fail, --requests, --metrics,
# SIGINT, bad input; then against the ethereumjs test server in each of its fault modes, where the
# report must say verified false with the precise reason and count the imitated client's verdict.
source "$(dirname "$0")/lib.sh" "$@"
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1
INTEROP=$(cd "$(dirname "$0")/interop" && pwd)

D=$WORK/d
"$HEADERD" import --datadir "$D" "$ERA1" >/dev/null 2>&1
"$HEADERD" freeze --datadir "$D" --keep 1000 >/dev/null 2>&1
"$HEADERD" serve --datadir "$D" --listen 127.0.0.1:0 --workers 2 >/dev/null 2>"$WORK/serve.err" &
SERVE_PID=$!
# On exit, whatever is still running is stopped for good before the wait.
trap 'kill -9 "$SERVE_PID" ${JS_PID:-} ${LOAD_PID:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do
    [ -s "$D/enode" ] && break
    sleep 0.1
done
[ -s "$D/enode" ] || fail "serve did not start: $(cat "$WORK/serve.err")"
ENODE=$(cat "$D/enode")

# py JSON_FILE EXPR: evaluates a Python expression over the report `r`; fails the test when falsy.
py() {
    python3 - "$1" "$2" <<'PY' || fail "$2 (report $1)"
import json, sys
r = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps({k: r.get(k) for k in ("totals", "failures", "verified")}, indent=1)[:3000], file=sys.stderr)
    sys.exit(1)
PY
}

# Every profile, a few seconds each: verified, no error, the client verdicts clean.
for profile in geth-skeleton nethermind besu erigon reth ethereumjs probes legacy edge; do
    out=$WORK/$profile.json
    "$HEADERD" load --peer "$ENODE" --clients 5 --duration 2 --profile "$profile" --chain "$ERA1" --json "$out" \
        --threshold verified --threshold errors==0 --verbosity 1 >"$WORK/load.out" 2>&1 ||
        { cat "$WORK/load.out" >&2; fail "load --profile $profile exited $?"; }
    py "$out" 'r["verified"] is True and r["totals"]["replies"] > 0 and sum(r["totals"]["errors"].values()) == 0'
    py "$out" 'r["totals"]["verdict_drops"] == 0 and r["profiles"][0]["name"] == "'"$profile"'"'
    echo "ok: --profile $profile: $(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["requests"], "requests,", t["headers"], "headers, p99", t["rtt_ms"]["p99"], "ms")' "$out"), verified"
done

# The mix with every report: every documented field is there.
"$HEADERD" load --peer "$ENODE" --clients 24 --duration 3 --chain "$ERA1" --json "$WORK/mix.json" \
    --html "$WORK/mix.html" --threshold verified --threshold 'p99<10s' --verbosity 1 >"$WORK/mix.out" 2>&1 ||
    { cat "$WORK/mix.out" >&2; fail "load --profile mix"; }
py "$WORK/mix.json" 'all(k in r for k in ["schema","version","command","started_at","duration_s","seed","mode","server","reference","clients","totals","profiles","timeline","failures","failures_total","server_metrics","thresholds","interrupted","verified"])'
py "$WORK/mix.json" 'r["schema"] == "headerd-load-report" and r["version"] == 1 and r["mode"]["loop"] == "closed"'
py "$WORK/mix.json" 'all(k in r["totals"] for k in ["requests","replies","headers","bytes","lost","stale","errors","verification_failures","rtt_ms","verdict_drops"])'
py "$WORK/mix.json" 'all(k in r["totals"]["rtt_ms"] for k in ["p50","p90","p99","p999","max","mean"])'
py "$WORK/mix.json" 'len(r["profiles"]) == 9 and all(p["clients"] >= 1 and "histogram" in p and "verdicts" in p for p in r["profiles"])'
py "$WORK/mix.json" 'sum(p["clients"] for p in r["profiles"]) == 24 and r["clients"]["connected_max"] == 24'
py "$WORK/mix.json" 'r["server"]["head"]["number"] == 8191 and r["server"]["eth_version"] >= 68 and len(r["timeline"]) >= 2'
py "$WORK/mix.json" 'all(sum(b["count"] for b in p["histogram"]) == p["replies"] for p in r["profiles"])'
grep -q "<svg" "$WORK/mix.html" || fail "the HTML report has no chart"
grep -q "verified: true" "$WORK/mix.out" || fail "the summary does not say verified: true"
grep -q "^total " "$WORK/mix.out" || fail "the summary table has no total row"
echo "ok: --profile mix, 24 clients: every report field present, verified, HTML written"

# Thresholds: one that cannot hold fails the run (exit 1) and is named; bad ones are usage errors.
if "$HEADERD" load --peer "$ENODE" --clients 2 --duration 1 --threshold 'p99<1us' --threshold errors==0 \
    --verbosity 1 >"$WORK/th.out" 2>&1; then fail "an impossible threshold passed"; fi
grep -q "threshold p99<1us *FAILED" "$WORK/th.out" || fail "the failed threshold is not named: $(cat "$WORK/th.out")"
grep -q "threshold errors==0 *ok" "$WORK/th.out" || fail "the passing threshold is not reported ok"
echo "ok: a failing threshold exits 1 and is named; the passing one says ok"
expect_fail "threshold without a unit" "give a unit" "$HEADERD" load --peer "$ENODE" --threshold 'p99<50'
expect_fail "threshold with an unknown metric" "unknown metric 'foo'" "$HEADERD" load --peer "$ENODE" --threshold 'foo<1'
expect_fail "unknown profile" "unknown profile 'bitcoin'" "$HEADERD" load --peer "$ENODE" --profile bitcoin
expect_fail "bad enode" "--peer enode://nope" "$HEADERD" load --peer enode://nope
expect_fail "no peer" "--peer is required" "$HEADERD" load
expect_fail "--eth out of range" "--eth must be one of" "$HEADERD" load --peer "$ENODE" --eth 67
expect_fail "reference datadir held by serve" "in use" "$HEADERD" load --peer "$ENODE" --chain "$D" --duration 1

# --requests stops after exactly that many.
"$HEADERD" load --peer "$ENODE" --clients 4 --requests 50 --profile nethermind --json "$WORK/k.json" --verbosity 1 \
    >/dev/null 2>&1 || fail "load --requests 50"
py "$WORK/k.json" 'r["totals"]["requests"] == 50 and r["verified"]'
echo "ok: --requests 50 sends 50 requests"

# Open loop: a rate the server keeps up with is met; one it cannot reach reports the shortfall, and
# its latency, counted from each request's intended send time, shows the queue (no coordinated
# omission). A sanitizer build (HEADERD_TEST_TIME_SCALE, set by scripts/sanitize.sh) serves several
# times slower, so the rate it must keep up with is divided by that factor.
RATE=$((200 / ${HEADERD_TEST_TIME_SCALE:-1}))
"$HEADERD" load --peer "$ENODE" --clients 4 --duration 3 --rate "$RATE" --profile nethermind --json "$WORK/open.json" \
    --verbosity 1 >/dev/null 2>&1 || fail "load --rate $RATE"
py "$WORK/open.json" "r['mode']['loop'] == 'open' and r['mode']['target_rate'] == $RATE and r['verified']"
py "$WORK/open.json" "abs(r['mode']['achieved_rate'] - $RATE) < 0.15 * $RATE and r['mode']['shortfall'] < 0.15"
"$HEADERD" load --peer "$ENODE" --clients 1 --depth 1 --duration 2 --rate 100000 --profile reth \
    --json "$WORK/short.json" --verbosity 1 >/dev/null 2>&1 || fail "load --rate 100000"
py "$WORK/short.json" 'r["mode"]["shortfall"] > 0.5 and r["totals"]["rtt_ms"]["p99"] > 500'
echo "ok: --rate $RATE is met ($(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["mode"]["achieved_rate"], 1))' "$WORK/open.json")/s); --rate 100000 from one client reports its shortfall and queueing latency"

# An unreachable server: connection failures are counted and retried, never fatal.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DEAD=${ENODE%@*}@127.0.0.1:$PORT
if "$HEADERD" load --peer "$DEAD" --clients 2 --duration 2 --json "$WORK/dead.json" --threshold verified \
    --verbosity 1 >/dev/null 2>&1; then fail "load against nothing passed 'verified'"; fi
py "$WORK/dead.json" 'r["clients"]["connect_failures"] >= 2 and r["totals"]["errors"]["connect"] >= 2 and not r["verified"]'
echo "ok: an unreachable server: connect failures counted, retried, verified false"

# --metrics during a run, and SIGINT ends the run with a report.
MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$HEADERD" load --peer "$ENODE" --clients 4 --duration 0 --metrics "127.0.0.1:$MPORT" --json "$WORK/int.json" \
    --verbosity 1 >/dev/null 2>&1 &
LOAD_PID=$!
metrics=""
for _ in $(seq 50); do
    sleep 0.2
    metrics=$(curl -fsS "http://127.0.0.1:$MPORT/metrics" 2>/dev/null || true)
    # Here-strings, not pipes: grep -q stops reading early, and a writer into a closed pipe fails
    # the pipeline under pipefail.
    grep -q 'headerd_load_request_seconds_count{profile="[a-z-]*"} [1-9]' <<<"$metrics" &&
        grep -q '^headerd_load_clients_connected 4' <<<"$metrics" && break
done
grep -q 'headerd_load_request_seconds_bucket{le="[0-9.e+-]*",profile="' <<<"$metrics" ||
    grep -q 'headerd_load_request_seconds_bucket{profile="' <<<"$metrics" || fail "no RTT histogram on /metrics"
grep -q '^headerd_load_clients_connected 4' <<<"$metrics" || fail "clients_connected is not 4"
kill -INT "$LOAD_PID"
wait "$LOAD_PID" || fail "load exited $? after SIGINT"
LOAD_PID=
py "$WORK/int.json" 'r["interrupted"] is True and r["verified"] is True'
echo "ok: --metrics serves the client RTT histogram; SIGINT ends the run with a verified report"

# A lying server: the ethereumjs test server's fault modes. Each makes verified false with the
# precise reason, and the imitated client (Besu: reverse by number, 5 pipelined) counts it.
if ! command -v node >/dev/null || [ ! -d "$INTEROP/node_modules/@ethereumjs/devp2p" ]; then
    [ "${CI:-}" = true ] && fail "node or tests/interop/node_modules missing (scripts/setup.sh installs them)"
    echo "SKIP: the lying-server part needs node and tests/interop/node_modules"
    exit 0
fi
lying() {  # FAULT PROFILE EXPECTED_REASON_PART EXPECTED_VERDICT_PART
    local fault=$1 profile=$2 reason=$3 verdict=$4
    rm -f "$WORK/js.enode"
    node "$INTEROP/server.js" --port 0 --out "$WORK/js.enode" --eth 68,69 --idle 30 --fault "$fault" \
        >"$WORK/js.log" 2>&1 &
    JS_PID=$!
    for _ in $(seq 100); do
        [ -s "$WORK/js.enode" ] && break
        sleep 0.1
    done
    [ -s "$WORK/js.enode" ] || fail "the ethereumjs server did not start: $(cat "$WORK/js.log")"
    if "$HEADERD" load --peer "$(cat "$WORK/js.enode")" --clients 1 --duration 3 --timeout 1 --profile "$profile" \
        --chain "$ERA1" --json "$WORK/lie.json" --threshold verified --verbosity 1 >"$WORK/lie.out" 2>&1; then
        fail "--fault $fault: load passed 'verified'"
    fi
    kill "$JS_PID" 2>/dev/null || true
    wait "$JS_PID" 2>/dev/null || true
    JS_PID=
    py "$WORK/lie.json" 'r["verified"] is False and any("'"$reason"'" in f["reason"] for f in r["failures"])'
    py "$WORK/lie.json" 'any("'"$verdict"'" in k for p in r["profiles"] for k in p["verdicts"]["reasons"])'
    echo "ok: --fault $fault: verified false, '$reason', verdict '$verdict'"
}
lying extra-header besu "items" "useless reply"
lying corrupt-header besu "differs from the reference chain" "useless reply"
lying stale-id besu "header 0 is block" "useless reply"  # id + 1 is another pending request's: a wrong id
lying stale-id geth-skeleton "not pending" "drop: timeout"  # one in flight: id + 1 is no request's
lying no-reply besu "no reply" "timeout"
lying wrong-code nethermind "BlockBodies" "breach of protocol"
lying corrupt-header geth-skeleton "differs from the reference chain" "drop: invalid reply"
