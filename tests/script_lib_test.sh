#!/usr/bin/env bash
# The sourced shell helpers of scripts/lib/: poll_until (scripts/lib/wait.sh: the wait loop of
# scripts/monitor.sh and tests/compose_test.sh) with its three outcomes, free_port
# (scripts/lib/ports.sh, their port picker), and the chain set-up of
# scripts/bench_load.sh and scripts/bench_p2p.sh (scripts/lib/bench_chain.sh) with the real binary
# on the bundled epoch and generated chains: made once, made again when asked, nothing else in the
# directory touched, serve on loopback, and clear failures.
source "$(dirname "$0")/lib.sh" "$@"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/bench_chain.sh
source "$ROOT/scripts/lib/bench_chain.sh"
# http_body
source "$(dirname "$0")/prom_http.sh"
headerd=$HEADERD
server_pid=
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null; rm -rf "$WORK"' EXIT

elapsed_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# --- poll_until ----------------------------------------------------------------------------------

tries=0
third() {
    tries=$((tries + 1))
    [ "$tries" -ge 3 ]
}
third_never() {
    tries=$((tries + 1))
    return 1
}
rc=0
poll_until 10 0.05 -- third || rc=$?
[ "$rc" = 0 ] && [ "$tries" = 3 ] || fail "poll_until: rc $rc after $tries tries, expected 0 after 3"
echo "ok: poll_until returns 0 once the condition holds (3rd try; it ran in this shell)"

# (SECONDS counts whole seconds: a wait of 2 s ends 1 to 2 s after it began, plus a try.)
t0=$(date +%s%N)
rc=0
tries=0
poll_until 2 0.1 -- third_never || rc=$?
ms=$(elapsed_ms "$t0")
[ "$rc" = 1 ] && [ "$POLL_REASON" = "not ready within 2 s" ] || fail "poll_until timeout: rc $rc, '$POLL_REASON'"
[ "$ms" -ge 1000 ] && [ "$ms" -lt 6000 ] && [ "$tries" -ge 3 ] || fail "poll_until 2 s took $ms ms, $tries tries"
echo "ok: poll_until returns 1 when the time is up ($ms ms and $tries tries for 2 s): $POLL_REASON"

sleep 0.3 &
pid=$!
t0=$(date +%s%N)
rc=0
poll_until 30 0.05 pid_alive "$pid" -- false || rc=$?
ms=$(elapsed_ms "$t0")
[ "$rc" = 2 ] && [ "$ms" -lt 10000 ] || fail "poll_until with a guard whose process ended: rc $rc after $ms ms"
echo "ok: poll_until returns 2 as soon as the guard fails (the process ended; $ms ms of 30 s)"

stopped() {
    echo "container x is exited"
    return 1
}
rc=0
poll_until 30 0.05 stopped -- false || rc=$?
[ "$rc" = 2 ] && [ "$POLL_REASON" = "container x is exited" ] || fail "guard reason: rc $rc, '$POLL_REASON'"
rc=0
poll_until 30 0.05 stopped -- true || rc=$?
[ "$rc" = 0 ] || fail "a guard ran before the first try: rc $rc"
echo "ok: the guard's output is POLL_REASON; the guard runs only after a failed try"

printf '%s\n' -x >"$WORK/dash"
rc=0
poll_until 1 0.1 -- grep -q -- -x "$WORK/dash" || rc=$?
[ "$rc" = 0 ] || fail "a condition holding -- failed: rc $rc"
expect_fail "poll_until without --" "poll_until: no -- before the condition" poll_until 1 0.1 true
echo "ok: the first -- ends the guard; without one poll_until refuses (rc 3)"

# --- free_port (scripts/lib/ports.sh) -------------------------------------------------------------

# shellcheck source=scripts/lib/ports.sh
source "$ROOT/scripts/lib/ports.sh"
read -r low _ </proc/sys/net/ipv4/ip_local_port_range
[ "$low" -gt 20000 ] || low=32768
# 40 ports picked in a row are distinct, in range, and none is listened on now.
listened=$(awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6)
ports=()
for _ in $(seq 40); do
    free_port p || fail "free_port failed"
    [ "$p" -ge 20000 ] && [ "$p" -lt "$low" ] || fail "free_port gave $p, outside 20000..$((low - 1))"
    ! grep -qx "$(printf '%04X' "$p")" <<<"$listened" || fail "free_port gave $p, which is listened on"
    ports+=("$p")
done
[ "$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)" = 40 ] || fail "free_port gave a port twice: ${ports[*]}"
echo "ok: free_port gave 40 distinct ports in 20000..$((low - 1)), none listened on"

# --- bench_chain.sh ------------------------------------------------------------------------------

# inspect_field DATADIR NAME -> a field of inspect --json.
inspect_field() { json_field "$("$HEADERD" inspect --datadir "$1" --json)" "$2"; }
# chain_id DATADIR -> the head hash, the frozen count and the sha256 of every header's RLP (the same
# for two datadirs holding the same chain, unlike chain_digest, which covers the datadir's path).
chain_id() {
    local head
    head=$(inspect_field "$1" head_number)
    "$HEADERD" export --datadir "$1" --from 0 --count $((head + 1)) --out "$WORK/id.rlp" >/dev/null 2>&1
    echo "$(inspect_field "$1" head_hash) $(inspect_field "$1" ancient_items) $(sha256sum <"$WORK/id.rlp")"
}

G=$WORK/gen
out=$(bench_generate "$G" 3000 1000)
[[ $out == "generating 3000 headers into $G (keep 1000 in LevelDB; load "* ]] || fail "bench_generate said: $out"
[ "$(inspect_field "$G" head_number)" = 2999 ] && [ "$(inspect_field "$G" ancient_items)" = 2000 ] ||
    fail "bench_generate made head $(inspect_field "$G" head_number), ancient $(inspect_field "$G" ancient_items)"
digest=$(chain_id "$G")
before=$(stat -c %i "$G/chaindata/CURRENT")
out=$(bench_generate "$G" 3000 1000)
[ -z "$out" ] && [ "$(stat -c %i "$G/chaindata/CURRENT")" = "$before" ] || fail "bench_generate made an existing chain again: $out"
# The same chain as the benchmarks' seed-1 chain, whatever made it.
"$HEADERD" generate --datadir "$WORK/direct" --count 3000 >/dev/null 2>&1
"$HEADERD" freeze --datadir "$WORK/direct" --keep 1000 >/dev/null 2>&1
[ "$(chain_id "$WORK/direct")" = "$digest" ] || fail "bench_generate's chain differs from generate + freeze"
echo "ok: bench_generate makes blocks 0..2999 (2000 frozen) once, equal to generate + freeze; the second call keeps it"

M=$WORK/made
mkdir -p "$M"
echo keep >"$M/notes.txt"
bench_generate "$M" 3000 1000 "$M.made" >/dev/null
grep -Eq '^generate_s [0-9.]+ freeze_s [0-9.]+ made [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{5} UTC load_after [0-9.]+$' "$M.made" ||
    fail "MADE holds '$(cat "$M.made")'"
rm "$M.made"
out=$(bench_generate "$M" 3000 1000 "$M.made")
[[ $out == generating* ]] && [ -s "$M.made" ] || fail "without MADE the chain was not made again: $out"
[ "$(cat "$M/notes.txt")" = keep ] && [ "$(chain_id "$M")" = "$digest" ] || fail "making it again lost notes.txt or the chain"
echo "ok: with MADE: its line written ($(cat "$M.made")); made again when MADE is missing; another file in the directory kept"

rc=0
out=$(bench_generate "$WORK/bad" x 1000 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q -- "--count" <<<"$out" || fail "bench_generate --count x: rc $rc: $out"
echo "ok: a failing generate fails bench_generate with headerd's error: $(head -1 <<<"$out")"

E=$WORK/epoch
bench_import "$E" 1000 "$DATA/mainnet-00000-5ec1ffb8.era1"
[ "$(inspect_field "$E" head_number)" = 8191 ] && [ "$(inspect_field "$E" ancient_items)" = 7192 ] ||
    fail "bench_import made head $(inspect_field "$E" head_number), ancient $(inspect_field "$E" ancient_items)"
echo "ok: bench_import: the epoch imported, blocks 0..7191 frozen"
rc=0
out=$(bench_import "$WORK/bad-import" 1000 "$WORK/missing.era1" 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -qF "$WORK/missing.era1" <<<"$out" || fail "bench_import of a missing file: rc $rc: $out"
echo "ok: a failing import fails bench_import with headerd's error: $(grep -F missing.era1 <<<"$out" | head -1)"

bench_serve "$WORK/serve.log" "$E" --workers 1
[[ $enode == enode://*@127.0.0.1:* ]] && [ "$enode" = "$(cat "$E/enode")" ] || fail "bench_serve: enode '$enode'"
[[ $metrics_url =~ ^http://127\.0\.0\.1:([0-9]+)/metrics$ ]] || fail "bench_serve: metrics_url '$metrics_url'"
health=$(http_body "${BASH_REMATCH[1]}" /healthz) || fail "no /healthz at $metrics_url"
got=$("$HEADERD" get --peer "$enode" --origin 8000 --amount 192 --timeout 10 2>/dev/null | wc -l)
[ "$got" = 192 ] || fail "get from bench_serve's node returned $got headers"
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=
echo "ok: bench_serve: enode and $metrics_url ($health); 192 headers served"

t0=$(date +%s%N)
rc=0
out=$(bench_serve "$WORK/serve-bad.log" "$WORK/nowhere" 2>&1) || rc=$?
ms=$(elapsed_ms "$t0")
[ "$rc" = 1 ] && grep -qF "headerd serve did not start" <<<"$out" && grep -qF "$WORK/nowhere" <<<"$out" ||
    fail "bench_serve of a missing datadir: rc $rc: $out"
[ "$ms" -lt 20000 ] || fail "bench_serve waited $ms ms for a serve that had exited"
[ ! -e "$WORK/nowhere" ] || fail "bench_serve made the missing datadir"
echo "ok: bench_serve of a missing datadir exits 1 after $ms ms with serve's error: $(grep -F "$WORK/nowhere" <<<"$out" | head -1)"
echo PASS
