#!/usr/bin/env bash
# The discv5 flood beside a load run (docs/discovery.md, "Flood limits"): `headerd serve --discovery
# v4,v5 --discovery.ratelimit 0` on the bundled epoch (tests/data, all but the newest 1,000 headers
# frozen) serves `headerd load --profile mix` (16 clients, verified byte for byte against the epoch)
# while `disc_flood --v5-only` sends 100,000 discv5 random packets to its UDP port, each from a fresh
# random source node id, from 64 source ports of 127.0.0.1, paced over 10 s (10,000 a second). The
# rate limit is off (0) so that every packet the server reads is answered with a WHOAREYOU and
# leaves a challenge: the codec's own cap is then what bounds them, the case the limits are not
# there to hide. Checks:
#   (a) headerd_discovery_challenges, sampled every 0.1 s through the flood, never exceeds the codec's
#       cap (v5::kDefaultChallengeCapacity, read from disc/v5wire.hpp), and more WHOAREYOUs went out
#       than the cap holds (the flood reached the codec); after the flood, once the challenges have
#       timed out (1 s), one more packet leaves exactly one challenge (the expired ones are dropped);
#   (b) the server's peak RSS (VmHWM) stays within RSS_GROWTH_BOUND_KIB of its RSS with the load's
#       clients connected, before the flood (the bound's reasoning is at its definition; not checked
#       in a sanitizer build, whose shadow memory and quarantine dominate RSS);
#   (c) a fresh RLPx connection, `headerd get` of 16 headers (process start, TCP connect, RLPx and
#       devp2p handshakes, Status, one request), made one after another throughout the flood (at
#       least 5), each completes within ACCEPT_BOUND_MS (1 s, times HEADERD_TEST_TIME_SCALE) with
#       the 16 headers; the same made idle and under the load alone are reported beside them;
#   (d) the load run (stopped by SIGINT after the flood) is verified, with no error and no client's
#       verdict to drop the server.
# Serving throughput under the flood against none is a benchmark's question, not a test's
# (scripts/bench_discovery.sh, configurations off, v5flood and v5unlimited; docs/performance.md).
#
# Usage: discv5_flood_test.sh HEADERD DISC_FLOOD. Loopback only; about 20 s.
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh" "$1"
FLOOD=${2:?usage: $0 HEADERD DISC_FLOOD}
# shellcheck source=tests/prom_http.sh
source "$(dirname "$0")/prom_http.sh"
# shellcheck source=tests/node_lib.sh
source "$(dirname "$0")/node_lib.sh"
# shellcheck source=tests/disc_lib.sh
source "$(dirname "$0")/disc_lib.sh"
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1

CLIENTS=16
DATAGRAMS=100000
FLOOD_SECONDS=10
SOCKETS=64
# The codec's cap on pending challenges, as disc/v5wire.hpp states it (serve uses the default).
CAP=$(sed -n 's/^inline constexpr size_t kDefaultChallengeCapacity = \([0-9]*\);.*/\1/p' \
    "$(dirname "$0")/../disc/v5wire.hpp")
[[ $CAP =~ ^[0-9]+$ ]] || fail "no kDefaultChallengeCapacity in disc/v5wire.hpp"
# A fresh connection's bound: `headerd get` took 40-80 ms idle and 115-230 ms under the load with
# or without the flood in the runs of 2026-12-04 (2 cores); 1 s leaves room for a busy CI machine.
ACCEPT_BOUND_MS=$((1000 * SCALE))
# The flood's share: at most CAP challenges, each a list node and a map node holding the peer (id and
# address), the WHOAREYOU (nonce, id nonce, its 63 bytes of challenge data on the heap) and an empty
# record slot, well under 1 KiB each: 4 MiB at most (100,000 challenges made against an idle
# server, no load, raised its RSS by 2.7 MiB). Nothing else grows with the flood: no session is made,
# the rate limiter is off, and the table takes no node from a packet it cannot decrypt. The rest is
# the load's own growth over the run (its 16 sessions' buffers and the store's caches: about 5 MiB
# from idle in the same runs) and the allocator's slack, so 16 MiB over the RSS with the load
# connected.
RSS_GROWTH_BOUND_KIB=$((16 * 1024))

D=$WORK/d
"$HEADERD" import --datadir "$D" "$ERA1" >/dev/null 2>&1 || fail "import"
"$HEADERD" freeze --datadir "$D" --keep 1000 >/dev/null 2>&1 || fail "freeze"

DISC_MODE=v4,v5 disc_serve serve "$D" --metrics 127.0.0.1:0 --discovery.ratelimit 0
SERVE_PID=${PIDS[serve]}
ENODE=$(cat "$D/enode")
PORT=${ENODE##*:}
PORT=${PORT%%\?*}
KEY=${ENODE#enode://}
KEY=${KEY%%@*}
metrics_logged() { grep -q 'Metrics enabled' "$WORK/serve.log"; }
poll_until $((10 * SCALE)) 0.1 pid_alive "$SERVE_PID" -- metrics_logged || fail "serve logged no metrics address: $(tail -5 "$WORK/serve.log")"
MPORT=$(sed -n 's/.*Metrics enabled.*url=http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$WORK/serve.log" | head -1)
[[ -n $MPORT ]] || fail "no metrics port in the serve log"

# sample NAME{LABELS}...: the values of these samples in one read of /metrics, as integers, space
# separated (0 for one that is absent).
sample() {
    local body
    body=$(http_body "$MPORT" /metrics) || return 1
    awk -v names="$*" 'BEGIN { n = split(names, want, " ") }
        { v[$1] = $2 }
        END { for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), v[want[i]] + 0; print "" }' <<<"$body"
}
CHALLENGES='headerd_discovery_challenges{protocol="discv5"}'
WHOAREYOU_OUT='headerd_discovery_packets_total{protocol="discv5",direction="out",type="whoareyou"}'
PEERS='headerd_p2p_peers{direction="inbound"}'
status_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$SERVE_PID/status"; }

# get_ms: one fresh connection (headerd get --origin 8000 --amount 16); prints its wall time in ms.
# Fails when it fails or does not bring the 16 headers.
GETS=0
get_ms() {
    local t0 ms lines
    GETS=$((GETS + 1))
    t0=$(date +%s%N)
    "$HEADERD" get --peer "$ENODE" --origin 8000 --amount 16 --timeout $((5 * SCALE)) --verbosity 1 \
        >"$WORK/get.out" 2>"$WORK/get.err" || fail "headerd get (connection $GETS): $(tail -3 "$WORK/get.err")"
    ms=$((($(date +%s%N) - t0) / 1000000))
    lines=$(wc -l <"$WORK/get.out")
    [[ $lines -eq 16 ]] || fail "headerd get (connection $GETS) brought $lines headers, not 16"
    echo "$ms"
}

idle=()
for _ in 1 2 3; do idle+=("$(get_ms)"); done
echo "ok: fresh connections, idle: ${idle[*]} ms"

# ---- the load, until the flood is over ------------------------------------------------------------
"$HEADERD" load --peer "$ENODE" --clients "$CLIENTS" --duration 0 --profile mix --chain "$ERA1" --workers 1 \
    --json "$WORK/load.json" --threshold verified --threshold errors==0 --verbosity 1 >"$WORK/load.log" 2>&1 &
PIDS[load]=$!
connected() { [[ $(sample "$PEERS") -ge $CLIENTS ]]; }
poll_until $((15 * SCALE)) 0.1 pid_alive "${PIDS[load]}" -- connected ||
    fail "the load's $CLIENTS clients did not all connect: $(sample "$PEERS") peers; $(tail -5 "$WORK/load.log")"
sleep 1 # past every client's first requests
loaded=()
for _ in 1 2 3; do loaded+=("$(get_ms)"); done
RSS_BEFORE=$(status_kib VmRSS)
echo "ok: $CLIENTS load clients connected; fresh connections under the load: ${loaded[*]} ms; serve RSS $RSS_BEFORE KiB"

# ---- the flood -----------------------------------------------------------------------------------
"$FLOOD" --port "$PORT" --server-key "$KEY" --count "$DATAGRAMS" --seconds "$FLOOD_SECONDS" --v5-only \
    --sockets "$SOCKETS" >"$WORK/flood.out" 2>&1 &
PIDS[flood]=$!
# The sampler: the challenge count and RSS every 0.1 s from now until the flood's last packet is read.
(while :; do
    echo "$(sample "$CHALLENGES" || echo -1) $(status_kib VmRSS)"
    sleep 0.1
done) >"$WORK/samples" 2>/dev/null &
PIDS[sampler]=$!
ready() { grep -q '^ready:' "$WORK/flood.out"; }
poll_until $((30 * SCALE)) 0.1 pid_alive "${PIDS[flood]}" -- ready || fail "disc_flood did not get ready: $(cat "$WORK/flood.out")"
flooded=()
while pid_alive "${PIDS[flood]}"; do
    flooded+=("$(get_ms)")
    sleep 0.5
done
wait "${PIDS[flood]}" || fail "disc_flood exited $?: $(cat "$WORK/flood.out")"
unset "PIDS[flood]"
grep -q "^sent $DATAGRAMS datagrams .* (0 send errors)" "$WORK/flood.out" || fail "the flood: $(cat "$WORK/flood.out")"
# The server reads what is left in its socket's buffer: until the WHOAREYOU count stands still.
last=-1
settled() {
    local now
    now=$(sample "$WHOAREYOU_OUT")
    [[ $now -eq $last ]] && return 0
    last=$now
    return 1
}
poll_until $((10 * SCALE)) 0.5 -- settled || fail "the server still answers the flood $((10 * SCALE)) s after its end"
kill "${PIDS[sampler]}" 2>/dev/null || true
wait "${PIDS[sampler]}" 2>/dev/null || true
unset "PIDS[sampler]"
read -r CHALLENGES_END ANSWERED < <(sample "$CHALLENGES" "$WHOAREYOU_OUT")
echo "ok: $(sed -n 's/: random .*//p' "$WORK/flood.out"); $ANSWERED answered with a WHOAREYOU"

# (c) fresh connections during the flood.
[[ ${#flooded[@]} -ge 5 ]] || fail "only ${#flooded[@]} fresh connections during the ${FLOOD_SECONDS} s flood (at least 5)"
for ms in "${idle[@]}" "${loaded[@]}" "${flooded[@]}"; do
    [[ $ms -le $ACCEPT_BOUND_MS ]] || fail "a fresh connection took $ms ms (bound $ACCEPT_BOUND_MS ms): idle ${idle[*]}, under the load ${loaded[*]}, flooded ${flooded[*]}"
done
echo "ok: ${#flooded[@]} fresh connections during the flood, each within $ACCEPT_BOUND_MS ms: ${flooded[*]} ms"

# (a) the challenges.
[[ -s $WORK/samples ]] || fail "no samples of the challenge count"
! grep -q '^-1 ' "$WORK/samples" || fail "/metrics did not answer $(grep -c '^-1 ' "$WORK/samples") of the samples"
read -r SAMPLES PEAK AT_CAP < <(awk -v cap="$CAP" '{ n++; if ($1 > p) p = $1; if ($1 == cap) c++ } END { print n, p + 0, c + 0 }' "$WORK/samples")
PEAK=$((PEAK > CHALLENGES_END ? PEAK : CHALLENGES_END))
[[ $PEAK -le $CAP ]] || fail "$PEAK challenges pending, over the codec's cap of $CAP"
[[ $ANSWERED -gt $CAP ]] || fail "only $ANSWERED WHOAREYOUs for $DATAGRAMS packets: the flood did not reach the codec"
echo "ok: challenges at most $PEAK in $SAMPLES samples (cap $CAP; $AT_CAP samples at the cap), $ANSWERED made"
# Past the handshake timeout (1 s) they have all expired; one more packet drops them and adds its own.
sleep 1.2
"$FLOOD" --port "$PORT" --server-key "$KEY" --count 1 --seconds 0 --v5-only >"$WORK/probe.out" 2>&1 ||
    fail "disc_flood --count 1: $(cat "$WORK/probe.out")"
answered() { read -r after_challenges after_answered < <(sample "$CHALLENGES" "$WHOAREYOU_OUT") && [[ $after_answered -gt $ANSWERED ]]; }
poll_until $((5 * SCALE)) 0.1 -- answered || fail "the packet after the flood got no WHOAREYOU"
[[ $after_challenges -eq 1 ]] || fail "$after_challenges challenges pending after one packet, 1.2 s after the flood (expected 1)"
echo "ok: 1.2 s after the flood one more packet leaves 1 challenge pending (the flood's expired)"

# (d) the load's verdict.
kill -INT "${PIDS[load]}"
rc=0
wait "${PIDS[load]}" || rc=$?
unset "PIDS[load]"
[[ $rc -eq 0 ]] || { cat "$WORK/load.log" >&2; fail "the load run failed its thresholds (exit $rc)"; }
python3 - "$WORK/load.json" <<'PY' || fail "the load report"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
errors = sum(t["errors"].values())
print(f"ok: load: {t['requests']} requests, {t['headers']} headers ({t['headers'] / r['duration_s']:.0f}/s) in "
      f"{r['duration_s']:.1f} s, verified {r['verified']}, errors {errors}, lost {t['lost']}, verdicts: drops "
      f"{t['verdict_drops']}, penalties {t['verdict_penalties']}, p99 {t['rtt_ms']['p99']} ms")
sys.exit(0 if r["verified"] is True and errors == 0 and t["verdict_drops"] == 0 and t["replies"] > 0
         and r["interrupted"] else 1)
PY

# (b) memory.
RSS_PEAK=$(status_kib VmHWM)
RSS_MAX_SAMPLED=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$WORK/samples")
if grep -qaE '__(asan|tsan|msan)_init' "$HEADERD"; then
    echo "note: $HEADERD is built with a sanitizer; the RSS bound is not checked (RSS $RSS_BEFORE KiB with the load, peak $RSS_PEAK KiB)"
else
    [[ $((RSS_PEAK - RSS_BEFORE)) -le $RSS_GROWTH_BOUND_KIB ]] ||
        fail "serve RSS peaked at $RSS_PEAK KiB, $((RSS_PEAK - RSS_BEFORE)) KiB over $RSS_BEFORE with the load (bound $RSS_GROWTH_BOUND_KIB)"
    echo "ok: serve RSS $RSS_BEFORE KiB with the load, at most $RSS_MAX_SAMPLED KiB sampled during the flood, peak (VmHWM) $RSS_PEAK KiB: +$((RSS_PEAK - RSS_BEFORE)) KiB (bound +$RSS_GROWTH_BOUND_KIB)"
fi

stop_within serve $((10 * SCALE))
echo "PASS"
