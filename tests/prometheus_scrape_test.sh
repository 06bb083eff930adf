#!/usr/bin/env bash
# headerd's metrics end to end, as an operator sees them: scripts/monitor.sh starts `headerd serve
# --metrics` and a real Prometheus (Debian's package) with the shipped deploy/prometheus.yml, while
# `headerd get` sends N GetBlockHeaders requests of K headers over ~12 s (so that Prometheus scrapes
# during the requests). Checks:
#   /metrics: Content-Type, promtool's lint, the metric families docs/operations.md lists (all
#             but process_virtual_memory_bytes and process_max_fds) with their types, exact counts
#             after the requests (ingress GetBlockHeaders = egress BlockHeaders = serve-time
#             observations = N, headers served = N*K split exactly by store, one Hello and one
#             Status per connection, no handshake error, peers back to 0), chain gauges, process
#             metrics and build info;
#   Prometheus: up{job="headerd"} == 1, scrapes during the requests, the serve-time histogram's
#             count and increase, histogram_quantile over its buckets, and every PromQL expression
#             of the Grafana dashboard and of docs/operations.md accepted by /api/v1/query; with
#             the load generator scraped as well (monitor.sh --load), its client RTT per profile
#             and a job="headerd_load" series in every expression of the dashboard's tracker panels;
#   monitor.sh: its command mode, a clear error without prometheus, and no process left behind.
# Fails (does not skip) when prometheus or promtool is missing: scripts/setup.sh installs them.
source "$(dirname "$0")/lib.sh" "$@"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MONITOR=$ROOT/scripts/monitor.sh
DASHBOARD=$ROOT/deploy/grafana/dashboards/headerd.json
N=12  # requests
K=192 # headers per request

command -v prometheus >/dev/null ||
    fail "prometheus not found on PATH: install Debian's prometheus package (scripts/setup.sh does)"
command -v promtool >/dev/null ||
    fail "promtool not found on PATH: it comes with Debian's prometheus package (scripts/setup.sh installs it)"

MON_PID=
HEADERD_PID=
PROMETHEUS_PID=
cleanup() {
    # monitor.sh stops its children on SIGTERM; SIGKILL anything still there after 20 s.
    if [ -n "$MON_PID" ] && kill -0 "$MON_PID" 2>/dev/null; then
        kill -TERM "$MON_PID" 2>/dev/null || true
        for _ in $(seq 200); do
            kill -0 "$MON_PID" 2>/dev/null || break
            sleep 0.1
        done
    fi
    for p in $MON_PID $HEADERD_PID $PROMETHEUS_PID; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- helpers -----------------------------------------------------------------------------------

# http, http_body, urlencode, values
source "$(dirname "$0")/prom_http.sh"
# promql EXPR -> Prometheus's JSON answer of an instant query (fails unless HTTP 200).
promql() { http_body "$PROMETHEUS_PORT" "/api/v1/query?query=$(urlencode "$1")"; }
# num_cmp A OP B: numeric comparison with awk (values may be floats or NaN).
num_cmp() { awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
    r = (op == "==") ? a == b : (op == ">=") ? a >= b : (op == ">") ? a > b : (op == "<") ? a < b : 0
    exit !r }'; }

# metric_sum TEXT NAME [k="v"...] -> sum of NAME's samples whose labels include every k="v"
# (0 when there is none).
metric_sum() {
    local text=$1 name=$2
    shift 2
    awk -v name="$name" -v want="$*" '
        BEGIN { n = split(want, pairs, " ") }
        /^#/ || NF < 2 { next }
        {
            series = $1; labels = ""
            b = index(series, "{")
            if (b > 0) { labels = "," substr(series, b + 1, length(series) - b - 1) ","; series = substr(series, 1, b - 1) }
            if (series != name) next
            for (i = 1; i <= n; i++) if (index(labels, "," pairs[i] ",") == 0) next
            sum += $2
        }
        END { printf "%.17g\n", sum + 0 }' <<<"$text"
}
# metric_count TEXT NAME -> how many samples NAME has (label children).
metric_count() { grep -c "^$2[{ ]" <<<"$1" || true; }

# --- the stack ---------------------------------------------------------------------------------

D=$WORK/d
"$HEADERD" import --datadir "$D" "$DATA/mainnet-00000-5ec1ffb8.era1" >/dev/null 2>&1 || fail "import failed"
"$HEADERD" freeze --datadir "$D" --keep 1000 >/dev/null 2>&1 || fail "freeze failed"
ANCIENT=$(json_field "$("$HEADERD" inspect --datadir "$D" --json)" ancient_items)
[[ $ANCIENT =~ ^[0-9]+$ ]] && [ "$ANCIENT" -gt 0 ] && [ "$ANCIENT" -lt 8000 ] ||
    fail "inspect --json gave ancient_items '$ANCIENT'; expected some headers in each store"

expect_fail "monitor.sh without prometheus" "not found" \
    "$MONITOR" --headerd "$HEADERD" --datadir "$D" --prometheus "$WORK/no-prometheus"

"$MONITOR" --headerd "$HEADERD" --datadir "$D" --listen 127.0.0.1:0 --metrics-port 0 --prometheus-port 0 \
    --workdir "$WORK/mon" --state-file "$WORK/state" --timeout 60 >"$WORK/monitor.out" 2>"$WORK/monitor.err" &
MON_PID=$!
for _ in $(seq 900); do
    [ -s "$WORK/state" ] && break
    kill -0 "$MON_PID" 2>/dev/null || { cat "$WORK/monitor.err" >&2; fail "monitor.sh exited before the stack was up"; }
    sleep 0.1
done
[ -s "$WORK/state" ] || { cat "$WORK/monitor.err" >&2; fail "monitor.sh did not bring the stack up within 90 s"; }
# shellcheck disable=SC1091
source "$WORK/state"
for v in HEADERD_ENODE HEADERD_METRICS_PORT HEADERD_PID PROMETHEUS_PORT PROMETHEUS_PID; do
    [ -n "${!v:-}" ] || fail "monitor.sh state file lacks $v"
done
echo "ok: monitor.sh: headerd metrics on :$HEADERD_METRICS_PORT, prometheus on :$PROMETHEUS_PORT"

# --- /metrics before the requests --------------------------------------------------------------

reply=$(http "$HEADERD_METRICS_PORT" /metrics) || fail "GET /metrics failed"
head_part=${reply%%$'\r\n\r\n'*}
[[ ${head_part%%$'\n'*} =~ ^HTTP/1\.[01]\ 200 ]] || fail "GET /metrics: ${head_part%%$'\n'*}"
grep -qi '^content-type: text/plain; version=0.0.4' <<<"$head_part" ||
    fail "/metrics Content-Type is not the Prometheus text format 0.0.4: $(grep -i '^content-type' <<<"$head_part")"
http_body "$HEADERD_METRICS_PORT" /healthz >/dev/null || fail "/healthz does not answer 200"
[[ $(http "$HEADERD_METRICS_PORT" /nowhere) =~ ^HTTP/1\.[01]\ 404 ]] || fail "an unknown path does not answer 404"
before=$(http_body "$HEADERD_METRICS_PORT" /metrics)

# --- N requests of K headers over ~12 s ---------------------------------------------------------

# Origins in the freezer only, in LevelDB only, and across the boundary; all K headers exist. Two
# come again (0 and 1000), on the worker of their first request when serve runs one or two workers
# (connections go round robin): served from the reply cache, counted all the same.
origins=(0 1000 7100 7500 8000 "$((ANCIENT - 100))" 3000 "$((ANCIENT - 1))" 0 7900 "$ANCIENT" 1000)
[ ${#origins[@]} = "$N" ] || fail "test bug: ${#origins[@]} origins for N=$N"
expect_ancient=0
t_start=$(date +%s)
for o in "${origins[@]}"; do
    "$HEADERD" get --peer "$HEADERD_ENODE" --origin "$o" --amount "$K" >"$WORK/get.out" 2>"$WORK/get.err" ||
        { cat "$WORK/get.err" >&2; fail "get --origin $o failed"; }
    [ "$(wc -l <"$WORK/get.out")" = "$K" ] || fail "get --origin $o returned $(wc -l <"$WORK/get.out") headers, not $K"
    a=$((ANCIENT - o))
    [ "$a" -gt 0 ] || a=0
    [ "$a" -lt "$K" ] || a=$K
    expect_ancient=$((expect_ancient + a))
    sleep 1
done
t_end=$(date +%s)
echo "ok: $N requests of $K headers in $((t_end - t_start)) s"

# --- /metrics after: exact counts --------------------------------------------------------------

# Sessions end right after each get; wait (bounded) until headerd has counted the last one out.
for _ in $(seq 100); do
    after=$(http_body "$HEADERD_METRICS_PORT" /metrics) || fail "GET /metrics failed"
    num_cmp "$(metric_sum "$after" headerd_p2p_peers)" == 0 && break
    sleep 0.1
done
num_cmp "$(metric_sum "$after" headerd_p2p_peers)" == 0 || fail "headerd_p2p_peers is not back to 0 after the gets"

# delta NAME [k="v"...] -> after - before.
delta() { awk -v a="$(metric_sum "$after" "$@")" -v b="$(metric_sum "$before" "$@")" 'BEGIN { printf "%.17g\n", a - b }'; }
expect_delta() {
    local want=$1 got
    shift
    got=$(delta "$@")
    num_cmp "$got" == "$want" || fail "$* grew by $got, expected $want"
}
expect_delta "$N" headerd_p2p_ingress_messages_total 'proto="eth"' 'code="0x03"'
expect_delta "$N" headerd_p2p_egress_messages_total 'proto="eth"' 'code="0x04"'
expect_delta "$N" headerd_p2p_serve_seconds_count 'proto="eth"' 'code="0x03"'
expect_delta "$N" headerd_p2p_serve_seconds_bucket 'proto="eth"' 'code="0x03"' 'le="+Inf"'
expect_delta "$N" headerd_p2p_ingress_messages_total 'proto="p2p"' 'code="0x00"' # Hello
expect_delta "$N" headerd_p2p_egress_messages_total 'proto="p2p"' 'code="0x00"'
expect_delta "$N" headerd_p2p_ingress_messages_total 'proto="eth"' 'code="0x00"' # Status
expect_delta "$N" headerd_p2p_egress_messages_total 'proto="eth"' 'code="0x00"'
expect_delta "$((N * K))" headerd_headers_served_total
expect_delta "$expect_ancient" headerd_headers_served_total 'store="ancient"'
expect_delta "$((N * K - expect_ancient))" headerd_headers_served_total 'store="leveldb"'
expect_delta "$N" headerd_header_requests_total 'kind="contiguous"'
expect_delta "$N" headerd_reply_cache_requests_total
expect_delta 0 headerd_p2p_handshake_errors_total
num_cmp "$(delta headerd_p2p_serve_seconds_sum 'proto="eth"' 'code="0x03"')" '>' 0 || fail "serve time sum did not grow"
num_cmp "$(delta headerd_p2p_ingress_bytes_total 'proto="eth"' 'code="0x03"')" '>' 0 || fail "ingress bytes of 0x03 did not grow"
num_cmp "$(delta headerd_p2p_egress_bytes_total 'proto="eth"' 'code="0x04"')" '>' "$((N * K * 100))" ||
    fail "egress bytes of 0x04 grew by only $(delta headerd_p2p_egress_bytes_total 'proto="eth"' 'code="0x04"') for $((N * K)) headers"
for v in 68 69; do
    [ "$(grep -c "^headerd_p2p_ingress_messages_total{.*version=\"$v\"" <<<"$after")" -gt 0 ] ||
        fail "no ingress message series for eth/$v"
done
echo "ok: /metrics after $N gets of $K: 0x03 in = 0x04 out = serve count = $N, headers served $((N * K))" \
    "($expect_ancient ancient), $N Hello and Status each way, no handshake error, peers 0"

num_cmp "$(metric_sum "$after" headerd_chain_head_number)" == 8191 || fail "headerd_chain_head_number is not 8191"
num_cmp "$(metric_sum "$after" headerd_ancient_items)" == "$ANCIENT" || fail "headerd_ancient_items is not $ANCIENT"
build_info=$(grep '^headerd_build_info{' <<<"$after" || true)
[[ $build_info =~ version=\"[^\"]+\" && $build_info =~ commit=\" && $build_info =~ \ 1$ ]] ||
    fail "headerd_build_info{version,commit} 1 missing: '$build_info'"
num_cmp "$(metric_sum "$after" process_cpu_seconds_total)" '>' 0 || fail "process_cpu_seconds_total is 0"
num_cmp "$(metric_sum "$after" process_resident_memory_bytes)" '>' 1000000 || fail "process_resident_memory_bytes too small"
num_cmp "$(metric_sum "$after" process_open_fds)" '>' 3 || fail "process_open_fds too small"
start_s=$(metric_sum "$after" process_start_time_seconds)
num_cmp "$start_s" '>' "$((t_start - 600))" && num_cmp "$start_s" '<' "$t_start" ||
    fail "process_start_time_seconds $start_s is not the start of headerd (now $(date +%s))"
cache=$(metric_sum "$after" headerd_db_block_cache_bytes)
num_cmp "$cache" '>' 0 && num_cmp "$cache" '<' $((40 << 20)) || fail "headerd_db_block_cache_bytes is $cache after serving"
echo "ok: chain gauges (head 8191, ancient $ANCIENT), LevelDB's block cache ($cache bytes), build info and process metrics"

# The metric families listed in docs/operations.md ("3. Metrics"), with their types: all of them but
# process_virtual_memory_bytes and process_max_fds.
while read -r name type; do
    grep -qx "# TYPE $name $type" <<<"$after" ||
        fail "/metrics lacks '# TYPE $name $type' (found: $(grep "^# TYPE $name " <<<"$after" || echo none))"
done <<'EOF'
headerd_p2p_peers gauge
headerd_p2p_handshake_errors_total counter
headerd_p2p_ingress_bytes_total counter
headerd_p2p_egress_bytes_total counter
headerd_p2p_ingress_messages_total counter
headerd_p2p_egress_messages_total counter
headerd_p2p_serve_seconds histogram
headerd_p2p_tracked_requests gauge
headerd_p2p_request_rtt_seconds histogram
headerd_p2p_requests_lost_total counter
headerd_p2p_responses_stale_total counter
headerd_p2p_tracker_rejected_total counter
headerd_headers_served_total counter
headerd_header_requests_total counter
headerd_db_read_seconds histogram
headerd_reply_cache_requests_total counter
headerd_reply_cache_evictions_total counter
headerd_reply_cache_bytes gauge
headerd_reply_cache_entries gauge
headerd_history_items_served_total counter
headerd_history_bytes_served_total counter
headerd_chain_head_number gauge
headerd_ancient_items gauge
headerd_db_block_cache_bytes gauge
headerd_db_memtable_bytes gauge
headerd_p2p_inbound_rejected_total counter
headerd_scrub_checked_total counter
headerd_scrub_passes_total counter
headerd_scrub_repaired_total counter
headerd_scrub_position gauge
headerd_scrub_last_pass_seconds gauge
headerd_scrub_damaged_blocks gauge
headerd_scrub_damaged_leveldb_tables gauge
process_cpu_seconds_total counter
process_resident_memory_bytes gauge
process_open_fds gauge
process_start_time_seconds gauge
headerd_build_info gauge
EOF
echo "ok: the metric families of docs/operations.md are exposed with their types"

printf '%s\n' "$after" >"$WORK/metrics.txt"
promtool check metrics <"$WORK/metrics.txt" >"$WORK/promtool.out" 2>&1 ||
    { cat "$WORK/promtool.out" >&2; fail "promtool check metrics rejects /metrics"; }
echo "ok: promtool check metrics accepts /metrics ($(grep -vc '^#' "$WORK/metrics.txt") samples)"

# --- Prometheus ---------------------------------------------------------------------------------

up=$(promql 'up{job="headerd"}') || fail "query up failed"
[ "$(values "$up")" = 1 ] || fail "up{job=\"headerd\"} is not 1: $up"

# Wait (bounded) for a scrape after the last request.
count_q='sum(headerd_p2p_serve_seconds_count{job="headerd",proto="eth",code="0x03"})'
for _ in $(seq 60); do
    got=$(values "$(promql "$count_q")")
    [ -n "$got" ] && num_cmp "$got" '>=' "$N" && break
    sleep 0.5
done
[ -n "$got" ] && num_cmp "$got" == "$N" || fail "$count_q is '$got' in Prometheus, expected $N"

scrapes=$(values "$(promql "count_over_time(up{job=\"headerd\"}[$((t_end - t_start))s] @ $t_end)")")
[ -n "$scrapes" ] && num_cmp "$scrapes" '>=' 2 || fail "Prometheus scraped headerd $scrapes times during the requests"

inc=$(values "$(promql 'sum by (code) (increase(headerd_p2p_serve_seconds_count{job="headerd",proto="eth"}[5m]))')")
[ -n "$inc" ] || fail "increase of the serve-time count is empty"
inc03=$(values "$(promql 'sum(increase(headerd_p2p_serve_seconds_count{job="headerd",proto="eth",code="0x03"}[5m]))')")
[ -n "$inc03" ] && num_cmp "$inc03" '>=' "$N" || fail "increase of the 0x03 serve-time count is '$inc03' < $N"

quantile=$(promql 'histogram_quantile(0.99, sum by (le, code) (rate(headerd_p2p_serve_seconds_bucket{job="headerd",proto="eth"}[1m])))') ||
    fail "histogram_quantile query failed"
q03=$(grep -o '{"metric":{"code":"0x03"},"value":\[[^]]*\]' <<<"$quantile" | sed 's/.*,"\([^"]*\)"\]$/\1/')
[ -n "$q03" ] || fail "histogram_quantile over headerd_p2p_serve_seconds_bucket has no code=\"0x03\" series: $quantile"
num_cmp "$q03" '>' 0 && num_cmp "$q03" '<' 30 || fail "p99 serve time of 0x03 is '$q03'"
echo "ok: prometheus: up 1, $scrapes scrapes during the requests, serve count $N, increase $inc03, p99 serve time ${q03} s"

# Every expression of the Grafana dashboard, with Grafana's variables substituted.
exprs=$(grep -o '"expr": *"\([^"\\]\|\\.\)*"' "$DASHBOARD" | sed 's/^"expr": *"//; s/"$//; s/\\"/"/g; s/\\\\/\\/g')
n_exprs=$(grep -c '"expr":' "$DASHBOARD")
[ "$n_exprs" -ge 10 ] && [ "$(wc -l <<<"$exprs")" = "$n_exprs" ] || fail "could not read the $n_exprs dashboard expressions"
while IFS= read -r e; do
    q=${e//\$__rate_interval/1m}
    q=${q//\$__interval/5s}
    q=${q//\$__range/5m}
    q=${q//\$\{instance\}/.*}
    q=${q//\$instance/.*}
    [[ $q != *'$'* ]] || fail "dashboard expression has a variable the test does not know: $e"
    answer=$(promql "$q") || fail "Prometheus refused dashboard expression (HTTP error): $q"
    grep -q '"status":"success"' <<<"$answer" || fail "dashboard expression failed: $q -> $answer"
    # Panels whose metrics exist from the start must show data (request RTT, the tracker and
    # "> 0" filters may be empty until a load generator runs; the discovery row's series exist only
    # with --discovery, and the follower's dials only with --follow, which this serve does not run).
    if [[ $q != *request_rtt* && $q != *tracked_requests* && $q != *'> 0'* && $q != *headerd_discovery_* &&
        $q != *headerd_follow_* ]]; then
        grep -q '"result":\[{' <<<"$answer" || fail "dashboard expression returns no series: $q"
    fi
done <<<"$exprs"
echo "ok: prometheus accepts all $n_exprs expressions of the Grafana dashboard"

# The PromQL examples of docs/operations.md (one expression per line in ```promql blocks).
n_doc=0
while IFS= read -r q; do
    [ -n "$q" ] || continue
    answer=$(promql "$q") || fail "Prometheus refused the docs/operations.md example (HTTP error): $q"
    grep -q '"status":"success"' <<<"$answer" || fail "docs/operations.md example failed: $q -> $answer"
    n_doc=$((n_doc + 1))
done < <(awk '/^```promql$/ { on = 1; next } /^```/ { on = 0 } on' "$ROOT/docs/operations.md")
[ "$n_doc" -ge 5 ] || fail "found only $n_doc PromQL examples in docs/operations.md"
echo "ok: prometheus accepts all $n_doc PromQL examples of docs/operations.md"

# --- teardown: nothing left behind ---------------------------------------------------------------

kill -TERM "$MON_PID"
for _ in $(seq 200); do
    kill -0 "$MON_PID" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$MON_PID" 2>/dev/null && fail "monitor.sh still running 20 s after SIGTERM"
rc=0
wait "$MON_PID" || rc=$?
MON_PID=
[ "$rc" = 143 ] || fail "monitor.sh exited with $rc after SIGTERM, expected 143"
for p in "$HEADERD_PID" "$PROMETHEUS_PID"; do
    kill -0 "$p" 2>/dev/null && fail "process $p outlived monitor.sh"
done
[ ! -e "$WORK/state" ] || fail "monitor.sh left its state file behind"
echo "ok: SIGTERM stops monitor.sh, headerd and prometheus; state file removed"

# The command mode: the stack is up while the command runs, then torn down; its status is kept.
rc=0
"$MONITOR" --headerd "$HEADERD" --datadir "$D" --listen 127.0.0.1:0 --metrics-port 0 --prometheus-port 0 \
    --timeout 60 -- bash -c '
        [ -n "$HEADERD_ENODE" ] && [ -n "$PROMETHEUS_URL" ] || exit 9
        echo "$HEADERD_PID $PROMETHEUS_PID" >"$1"
        kill -0 $HEADERD_PID && kill -0 $PROMETHEUS_PID || exit 8
        exit 7' _ "$WORK/pids" >/dev/null 2>"$WORK/monitor2.err" || rc=$?
[ "$rc" = 7 ] || { cat "$WORK/monitor2.err" >&2; fail "monitor.sh -- CMD exited with $rc, expected the command's 7"; }
read -r HEADERD_PID PROMETHEUS_PID <"$WORK/pids"
for p in $HEADERD_PID $PROMETHEUS_PID; do
    kill -0 "$p" 2>/dev/null && fail "process $p outlived monitor.sh -- CMD"
done
echo "ok: monitor.sh -- CMD runs the command with the stack up, keeps its exit status, stops both"

# The load generator scraped too (monitor.sh --load, as compose's load service): Prometheus has
# up{job="headerd_load"} == 1 and the client-side RTT quantiles per profile through
# histogram_quantile over headerd load's buckets; and every expression of the dashboard's tracker
# panels (request RTT, in flight, lost and stale, rejections) has a series of job headerd_load
# (RTT quantiles with a number), beside those of job headerd.
rc=0
"$MONITOR" --headerd "$HEADERD" --datadir "$D" --listen 127.0.0.1:0 --metrics-port 0 --prometheus-port 0 \
    --load --load-clients 8 --load-metrics-port 0 --timeout 60 -- python3 -c '
import json, os, sys, time, urllib.parse, urllib.request
url = os.environ["PROMETHEUS_URL"]
def query(q):
    with urllib.request.urlopen(url + "/api/v1/query?query=" + urllib.parse.quote(q), timeout=10) as r:
        return json.load(r)["data"]["result"]
def number(r):
    return r["value"][1] not in ("NaN", "+Inf", "-Inf")
q = "histogram_quantile(0.99, sum by (le, profile) (rate(headerd_load_request_seconds_bucket[1m])))"
tracker_metrics = ("headerd_p2p_request_rtt_seconds", "headerd_p2p_tracked_requests", "headerd_p2p_requests_lost_total",
                   "headerd_p2p_responses_stale_total", "headerd_p2p_tracker_rejected_total")
panels = json.load(open(sys.argv[1]))["panels"]
tracker = [t["expr"].replace("$__rate_interval", "1m").replace("${instance}", ".*").replace("$instance", ".*")
           for p in panels for t in p.get("targets", []) if any(m in t["expr"] for m in tracker_metrics)]
if len(tracker) < 6:
    print("only %d tracker expressions in the dashboard" % len(tracker), file=sys.stderr)
    sys.exit(6)
for _ in range(90):
    up = query("up{job=\"headerd_load\"}")
    got = [r for r in query(q) if number(r)]
    missing = [e for e in tracker if not any(r["metric"].get("job") == "headerd_load" and number(r) for r in query(e))]
    if up and up[0]["value"][1] == "1" and len(got) >= 3 and not missing:
        print(" ".join("%s=%.1fms" % (r["metric"]["profile"], float(r["value"][1]) * 1000) for r in got),
              "; all %d tracker panel expressions have job headerd_load series" % len(tracker))
        sys.exit(0)
    time.sleep(1)
print("no client RTT quantiles or tracker panel series of the load generator in Prometheus: up=%s quantiles=%s "
      "tracker expressions without job headerd_load: %s" % (up, got, missing), file=sys.stderr)
sys.exit(5)' "$DASHBOARD" >"$WORK/load-quantiles.out" 2>"$WORK/monitor3.err" || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/monitor3.err" >&2; fail "monitor.sh --load: the load generator's RTT or the dashboard's tracker series of it did not reach Prometheus ($rc)"; }
echo "ok: Prometheus scrapes headerd load: client p99 per profile through histogram_quantile: $(cat "$WORK/load-quantiles.out")"
echo PASS
