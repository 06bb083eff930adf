#!/usr/bin/env bash
# headerd load against headerd serve on loopback: every profile verified byte for byte against the
# bundled epoch, the JSON report's fields, thresholds that pass and fail, --requests, --metrics,
# --server-metrics (exact counts from the server's /metrics; bad URLs, a closed port, a 404, a body
# that is not Prometheus text, another exporter, a server gone by the end of the run), --eth,
# --ramp with --handshakes, --synthetic against a generated chain (and another seed's), SIGINT, bad
# input; then against the ethereumjs test server in each of its fault modes, where the report must
# say verified false with the precise reason and count the imitated client's verdict.
source "$(dirname "$0")/lib.sh" "$@"
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1
INTEROP=$(cd "$(dirname "$0")/interop" && pwd)

D=$WORK/d
# With its history: the node serves the epoch's bodies and receipt lists too (the history profiles).
"$HEADERD" import --datadir "$D" --history "$ERA1" >/dev/null 2>&1
"$HEADERD" freeze --datadir "$D" --keep 1000 >/dev/null 2>&1
"$HEADERD" serve --datadir "$D" --listen 127.0.0.1:0 --workers 2 --metrics 127.0.0.1:0 >/dev/null \
    2>"$WORK/serve.err" &
SERVE_PID=$!
# On exit, whatever is still running is stopped for good before the wait.
trap 'kill -9 "$SERVE_PID" ${JS_PID:-} ${LOAD_PID:-} ${STUB_PID:-} ${SYN_PID:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
wait_nonempty "$D/enode" "$SERVE_PID" 10 serve "$WORK/serve.err"
ENODE=$(cat "$D/enode")
METRICS_URL=$(grep -o 'url=http://[0-9.:]*/metrics' "$WORK/serve.err" | head -1)
METRICS_URL=${METRICS_URL#url=}
[ -n "$METRICS_URL" ] || fail "serve did not say where its metrics are: $(cat "$WORK/serve.err")"

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

# expect_exit CODE "what" "expected message part" cmd...: the command must exit with CODE (2: a usage
# error, 1: a run that could not start) and print the part.
expect_exit() {
    local code=$1 what=$2 part=$3 out rc=0
    shift 3
    out=$("$@" 2>&1) || rc=$?
    [ "$rc" = "$code" ] || fail "$what: exit $rc, not $code: $out"
    printf '%s' "$out" | grep -qF -- "$part" || fail "$what: error does not mention '$part': $out"
    echo "ok: $what -> exit $rc, $(printf '%s' "$out" | grep -F -- "$part" | head -1)"
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

# The history profiles (geth, Nethermind, Besu and reth syncing bodies and receipts): every body and
# receipt list checked against the reference chain's headers, none failed, both counted.
"$HEADERD" load --peer "$ENODE" --clients 4 --duration 3 --profile history --chain "$ERA1" --json "$WORK/history.json" \
    --threshold verified --threshold errors==0 --threshold 'bodies>0' --threshold 'receipt_lists>0' --verbosity 1 \
    >"$WORK/history.out" 2>&1 || { cat "$WORK/history.out" >&2; fail "load --profile history exited $?"; }
py "$WORK/history.json" 'r["verified"] is True and r["totals"]["verification_failures"] == 0 and not r["failures"]'
py "$WORK/history.json" 'sorted(p["name"] for p in r["profiles"]) == ["besu-history", "geth-history", "nethermind-history", "reth-history"]'
py "$WORK/history.json" 'r["totals"]["bodies"] > 0 and r["totals"]["receipt_lists"] > 0 and r["totals"]["verdict_drops"] == 0'
py "$WORK/history.json" 'all(r["totals"]["messages"][m]["verification_failures"] == 0 and r["totals"]["messages"][m]["replies"] > 0 for m in ("headers", "bodies", "receipts"))'
echo "ok: --profile history: $(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["bodies"], "bodies and", t["receipt_lists"], "receipt lists,", t["requests"], "requests")' "$WORK/history.json"), verified"

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
expect_exit 2 "--eth 73" "--eth must be one of 68, 69, 70, 71, 72" "$HEADERD" load --peer "$ENODE" --eth 73
expect_exit 2 "--eth garbage" "--eth must be one of" "$HEADERD" load --peer "$ENODE" --eth seventy
expect_exit 2 "--ramp negative" "--ramp -1: expected seconds (a number >= 0)" "$HEADERD" load --peer "$ENODE" --ramp -1
expect_exit 2 "--ramp garbage" "--ramp soon: expected seconds" "$HEADERD" load --peer "$ENODE" --ramp soon
expect_exit 2 "--handshakes 0" "--handshakes must be a positive number" "$HEADERD" load --peer "$ENODE" --handshakes 0
expect_exit 2 "--handshakes garbage" "--handshakes must be a positive number" \
    "$HEADERD" load --peer "$ENODE" --handshakes many
expect_fail "reference datadir held by serve" "in use" "$HEADERD" load --peer "$ENODE" --chain "$D" --duration 1

# --requests stops after exactly that many.
"$HEADERD" load --peer "$ENODE" --clients 4 --requests 50 --profile nethermind --json "$WORK/k.json" --verbosity 1 \
    >/dev/null 2>&1 || fail "load --requests 50"
py "$WORK/k.json" 'r["totals"]["requests"] == 50 and r["verified"]'
echo "ok: --requests 50 sends 50 requests"

# --server-metrics: the server's /metrics before and after the run count exactly what the clients
# sent and received (nothing else talks to this server now), and its serve times are there.
"$HEADERD" load --peer "$ENODE" --clients 4 --requests 60 --profile nethermind,besu --server-metrics "$METRICS_URL" \
    --json "$WORK/sm.json" --threshold verified --verbosity 1 >"$WORK/sm.out" 2>&1 ||
    { cat "$WORK/sm.out" >&2; fail "load --server-metrics"; }
py "$WORK/sm.json" 'r["server_metrics"]["url"] == "'"$METRICS_URL"'" and r["totals"]["requests"] == 60'
py "$WORK/sm.json" 'r["server_metrics"]["requests_served"] == r["totals"]["requests"] and r["server_metrics"]["headers_served"] == r["totals"]["headers"]'
py "$WORK/sm.json" '0 < r["server_metrics"]["serve_seconds"]["p50"] <= r["server_metrics"]["serve_seconds"]["p99"] < 30 and r["server_metrics"]["cpu_seconds"] >= 0'
grep -q "^server: [0-9.]* us CPU per header, [0-9.]* us per request; serve time p50 [0-9.]* ms, p99 [0-9.]* ms" \
    "$WORK/sm.out" || fail "no server line in the summary: $(cat "$WORK/sm.out")"
echo "ok: --server-metrics: $(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["server_metrics"]; print(int(m["requests_served"]), "requests and", int(m["headers_served"]), "headers served, as the clients counted")' "$WORK/sm.json")"

# Bad URLs are usage errors; a server that cannot be read before the run stops it from starting.
expect_exit 2 "--server-metrics with another scheme" "only http:// URLs are supported" \
    "$HEADERD" load --peer "$ENODE" --server-metrics "https://127.0.0.1:6060/metrics"
expect_exit 2 "--server-metrics without a host" "http://: no host" "$HEADERD" load --peer "$ENODE" --server-metrics "http://"
expect_exit 2 "--server-metrics with port 99999" "bad port '99999' (1..65535)" \
    "$HEADERD" load --peer "$ENODE" --server-metrics "http://127.0.0.1:99999/metrics"
CLOSED=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_exit 1 "--server-metrics on a closed port" "http://127.0.0.1:$CLOSED/metrics: Connection refused" \
    "$HEADERD" load --peer "$ENODE" --server-metrics "http://127.0.0.1:$CLOSED/metrics" --json "$WORK/none.json"
[ ! -e "$WORK/none.json" ] || fail "a run that did not start wrote a report"
expect_exit 1 "--server-metrics on a path the server does not have" "${METRICS_URL%/metrics}/nope: HTTP 404" \
    "$HEADERD" load --peer "$ENODE" --server-metrics "${METRICS_URL%/metrics}/nope"

# stub MODE: an HTTP server on 127.0.0.1 answering every GET with one canned body: `html` a web page,
# `foreign` another exporter's metrics, `once` a headerd-like body for one request, after which it
# exits (a server gone by the end of the run). Sets STUB_PID and STUB_URL.
stub() {
    rm -f "$WORK/stub.port"
    python3 - "$1" "$WORK/stub.port" <<'PY' &
import http.server, os, sys
mode, port_file = sys.argv[1], sys.argv[2]
body = {
    "html": "<!DOCTYPE html>\n<html><body>Grafana</body></html>\n",
    "foreign": "# TYPE node_load1 gauge\nnode_load1 0.25\n",
    "once": 'process_cpu_seconds_total 1.5\nheaderd_headers_served_total{store="leveldb"} 10\n',
}[mode].encode()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
if mode == "once":
    server.handle_request()
else:
    server.serve_forever()
PY
    STUB_PID=$!
    wait_nonempty "$WORK/stub.port" "$STUB_PID" 5 "the HTTP stub" /dev/null
    STUB_URL="http://127.0.0.1:$(cat "$WORK/stub.port")/metrics"
}
stub_stop() {
    kill "$STUB_PID" 2>/dev/null || true
    wait "$STUB_PID" 2>/dev/null || true
    STUB_PID=
}
stub html
expect_exit 1 "--server-metrics on a web page" "$STUB_URL: metrics line 1: bad sample" \
    "$HEADERD" load --peer "$ENODE" --server-metrics "$STUB_URL"
stub_stop
# Another exporter: a warning, the run goes on, the server's figures are null.
stub foreign
"$HEADERD" load --peer "$ENODE" --clients 2 --requests 10 --profile nethermind --server-metrics "$STUB_URL" \
    --json "$WORK/foreign.json" --threshold verified --verbosity 2 >"$WORK/foreign.out" 2>&1 ||
    { cat "$WORK/foreign.out" >&2; fail "load --server-metrics against another exporter"; }
stub_stop
grep -q "WARN.*--server-metrics $STUB_URL: none of process_cpu_seconds_total" "$WORK/foreign.out" ||
    fail "no warning about the missing series: $(cat "$WORK/foreign.out")"
py "$WORK/foreign.json" 'all(r["server_metrics"][k] is None for k in ["cpu_seconds","headers_served","requests_served","cpu_us_per_header"]) and r["verified"]'
echo "ok: --server-metrics on another exporter: a warning, its figures null, the run verified"
# The server is gone when the run ends: a warning; the report, table and thresholds stand.
stub once
"$HEADERD" load --peer "$ENODE" --clients 2 --requests 10 --profile nethermind --server-metrics "$STUB_URL" \
    --json "$WORK/gone.json" --threshold verified --verbosity 2 >"$WORK/gone.out" 2>&1 ||
    { cat "$WORK/gone.out" >&2; fail "load whose --server-metrics went away"; }
wait "$STUB_PID" 2>/dev/null || true
STUB_PID=
grep -q "WARN.*--server-metrics: $STUB_URL: Connection refused; the report has no server figures" "$WORK/gone.out" ||
    fail "no warning about the failed scrape: $(cat "$WORK/gone.out")"
grep -q "threshold verified *ok" "$WORK/gone.out" || fail "the thresholds were not reported"
py "$WORK/gone.json" 'r["server_metrics"] is None and r["verified"] and r["totals"]["requests"] == 10'
echo "ok: --server-metrics gone by the end: a warning, the report written (server_metrics null), verified"

# --eth V: only eth/V is offered, and headerd negotiates it.
for v in 68 70; do
    "$HEADERD" load --peer "$ENODE" --clients 3 --duration 1 --eth "$v" --chain "$ERA1" --json "$WORK/eth.json" \
        --threshold verified --verbosity 1 >"$WORK/eth.out" 2>&1 || { cat "$WORK/eth.out" >&2; fail "load --eth $v"; }
    py "$WORK/eth.json" 'r["server"]["eth_version"] == '"$v"' and r["totals"]["replies"] > 0'
    echo "ok: --eth $v negotiated, verified"
done

# --ramp with --handshakes 1: the clients connect one at a time over half a second, all of them.
"$HEADERD" load --peer "$ENODE" --clients 4 --duration 1.5 --ramp 0.5 --handshakes 1 --profile nethermind \
    --json "$WORK/ramp.json" --threshold verified --verbosity 1 >"$WORK/ramp.out" 2>&1 ||
    { cat "$WORK/ramp.out" >&2; fail "load --ramp 0.5 --handshakes 1"; }
py "$WORK/ramp.json" 'r["clients"]["connected_max"] == 4 and r["clients"]["connect_attempts"] == 4 and r["clients"]["connect_failures"] == 0'
echo "ok: --ramp 0.5 --handshakes 1: 4 clients connected, 4 attempts, verified"

# --synthetic N:SEED against a node serving `headerd generate --count N --seed SEED`: verified; another
# seed's clients are refused by the server, and the run says so.
S=$WORK/syn
"$HEADERD" generate --datadir "$S" --count 3000 --seed 7 >/dev/null 2>&1 || fail "generate"
"$HEADERD" serve --datadir "$S" --listen 127.0.0.1:0 --workers 1 >/dev/null 2>"$WORK/syn.err" &
SYN_PID=$!
wait_nonempty "$S/enode" "$SYN_PID" 10 "serve of the synthetic chain" "$WORK/syn.err"
"$HEADERD" load --peer "$(cat "$S/enode")" --clients 9 --duration 1.5 --synthetic 3000:7 --json "$WORK/syn.json" \
    --threshold verified --threshold errors==0 --verbosity 1 >"$WORK/syn.out" 2>&1 ||
    { cat "$WORK/syn.out" >&2; fail "load --synthetic 3000:7"; }
py "$WORK/syn.json" 'r["server"]["head"]["number"] == 2999 and r["server"]["network_id"] != 1'
py "$WORK/syn.json" 'all(p["replies"] > 0 for p in r["profiles"]) and r["verified"]'
echo "ok: --synthetic 3000:7: every profile verified against the generated chain"
if "$HEADERD" load --peer "$(cat "$S/enode")" --clients 2 --duration 1 --synthetic 3000:8 --json "$WORK/syn8.json" \
    --threshold verified --verbosity 2 >"$WORK/syn8.out" 2>&1; then
    fail "load --synthetic 3000:8 against seed 7's chain passed"
fi
grep -q "WARN.*could not connect: Status: genesis mismatch" "$WORK/syn8.out" || fail "no warning: $(cat "$WORK/syn8.out")"
grep -q "^verified: false (0 failures; first: no reply was received, [0-9]* of [0-9]* connections failed: Status: genesis mismatch: remote 0x" \
    "$WORK/syn8.out" || fail "the verdict does not say why: $(cat "$WORK/syn8.out")"
py "$WORK/syn8.json" 'list(r["clients"]["connect_errors"].values())[0] == r["clients"]["connect_failures"] > 0 and not r["verified"]'
echo "ok: --synthetic 3000:8 against seed 7's chain: $(grep -o 'connections failed: Status: genesis mismatch' "$WORK/syn8.out")"
kill "$SYN_PID"
wait "$SYN_PID" 2>/dev/null || true
SYN_PID=
expect_exit 2 "--synthetic 0" "--synthetic 0: expected N or N:SEED" "$HEADERD" load --peer "$ENODE" --synthetic 0
expect_exit 2 "--synthetic garbage" "--synthetic lots: expected N or N:SEED" "$HEADERD" load --peer "$ENODE" --synthetic lots
expect_exit 2 "--synthetic with a bad seed" "--synthetic 3000:x: expected N or N:SEED" \
    "$HEADERD" load --peer "$ENODE" --synthetic 3000:x
expect_exit 2 "--synthetic with --chain" "--synthetic and --chain both name the network" \
    "$HEADERD" load --peer "$ENODE" --synthetic 3000 --chain "$ERA1"

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
    wait_nonempty "$WORK/js.enode" "$JS_PID" 10 "the ethereumjs server" "$WORK/js.log"
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

# A lying history server: server.js serves the epoch's headers right, but each body it sends has a
# transaction that its header's transactions root does not cover. The run must fail, its report
# naming the check and a block the server lied about.
rm -f "$WORK/js.enode"
node "$INTEROP/server.js" --port 0 --out "$WORK/js.enode" --eth 68,69 --idle 30 --era1 "$ERA1" --fault altered-tx \
    >"$WORK/js.log" 2>&1 &
JS_PID=$!
wait_nonempty "$WORK/js.enode" "$JS_PID" 20 "the ethereumjs server" "$WORK/js.log"
if "$HEADERD" load --peer "$(cat "$WORK/js.enode")" --clients 1 --duration 3 --profile geth-history --chain "$ERA1" \
    --json "$WORK/lie.json" --threshold verified --verbosity 1 >"$WORK/lie.out" 2>&1; then
    fail "the lying history server: load passed"
fi
kill "$JS_PID" 2>/dev/null || true
wait "$JS_PID" 2>/dev/null || true
JS_PID=
# The blocks whose bodies the server altered: the first of each reply it logged with FAULT altered-tx.
LIED=$(sed -n 's/.*GetBlockBodies .* items \[\([0-9]*\)\.\.[0-9]*\] FAULT altered-tx$/\1/p' "$WORK/js.log" | tr '\n' ' ')
[ -n "$LIED" ] || fail "server.js altered no body: $(tail -5 "$WORK/js.log")"
py "$WORK/lie.json" 'r["verified"] is False and r["totals"]["messages"]["bodies"]["verification_failures"] > 0'
py "$WORK/lie.json" 'any(f["request"]["message"] == "GetBlockBodies" and "body 0 (block %d): transactions do not match the header\x27s transactions root" % int(b) in f["reason"] for f in r["failures"] for b in "'"$LIED"'".split())'
py "$WORK/lie.json" 'any("drop: invalid body" in k for p in r["profiles"] for k in p["verdicts"]["reasons"])'
grep -q "^verified: false" "$WORK/lie.out" || fail "the summary does not say verified: false: $(cat "$WORK/lie.out")"
echo "ok: a lying history server (--fault altered-tx): load exits 1, $(python3 -c 'import json,sys; f=[f for f in json.load(open(sys.argv[1]))["failures"] if f["request"]["message"] == "GetBlockBodies"][0]; print(f["reason"])' "$WORK/lie.json")"
