#!/usr/bin/env bash
# headerd sync on loopback against real mainnet headers 0..8191:
#   1. two peers at once (headerd serve and the ethereumjs test server): byte-exact, verify, both
#      served; --keep 1000 feeds the freezer; --head-number with two honest peers;
#   2. one liar among honest peers (each ethereumjs fault mode, and a headerd serving a forged side
#      chain from block 5000): byte-exact anyway, the liar named, dropped and why;
#   3. only liars: a clear error naming their fates, nothing unverified stored, and an honest sync
#      into the same datadir (with a stored skeleton) completes byte-exact;
#   4. kill -9 at random moments, rerun each time: byte-exact at the end and no header requested
#      again once stored;
#   5. bad arguments, an unreachable peer, a datadir of another network.
source "$(dirname "$0")/lib.sh" "$@"
# ERA1, RLP, HEAD, INTEROP; enode, address, py, hsync, sync, sync_ok, exact, forge_side_chain
source "$(dirname "$0")/sync_lib.sh"

PIDS=()      # every server started; the sync of the kill test is SYNC_PID
SYNC_PID=
# On exit, whatever is still running is stopped for good before the wait.
trap 'kill -9 "${PIDS[@]}" ${SYNC_PID:-} ${KILL_PID:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT

# wait_file FILE WHAT LOG: waits (at most 20 s) until FILE is non-empty.
wait_file() {
    for _ in $(seq 200); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    fail "$2 did not start: $(tail -5 "$3")"
}

# serve NAME DATADIR [ARGS...]: headerd serve in the background; its enode in $WORK/NAME.enode.
serve() {
    local name=$1 d=$2
    shift 2
    rm -f "$d/enode"
    "$HEADERD" serve --datadir "$d" --listen 127.0.0.1:0 "$@" >/dev/null 2>"$WORK/$name.serve.log" &
    PIDS+=($!)
    wait_file "$d/enode" "headerd serve ($name)" "$WORK/$name.serve.log"
    cp "$d/enode" "$WORK/$name.enode"
}

# js NAME [FAULT]: the ethereumjs server (eth/68 and eth/69) in the background, with FAULT if given.
js() {
    local name=$1
    node "$INTEROP/server.js" --port 0 --out "$WORK/$name.enode" --eth 68,69 --idle 300 ${2:+--fault "$2"} \
        >"$WORK/$name.js.log" 2>&1 &
    PIDS+=($!)
}

# nothing_canonical DATADIR WHAT: no canonical head, and nothing to export.
nothing_canonical() {
    local d=$1 what=$2 json
    json=$("$HEADERD" inspect --datadir "$d" --json) || fail "$what: inspect failed"
    [ "$(json_field "$json" head_number)" = null ] || fail "$what: the datadir has a canonical head: $json"
    [ "$(json_field "$json" kv_headers)" = 0 ] && [ "$(json_field "$json" ancient_items)" = 0 ] ||
        fail "$what: the datadir counts canonical headers: $json"
    if "$HEADERD" export --datadir "$d" --from 0 --count 1 --out "$WORK/none.rlp" >/dev/null 2>&1; then
        fail "$what: export of block 0 succeeded from a datadir that should hold no canonical header"
    fi
}

# --- The peers ----------------------------------------------------------------------------------
# The ethereumjs servers load and check the chain for ~2 s each: started first, in parallel.
js js
for fault in extra-header corrupt-header stale-id wrong-code no-reply; do js "$fault" "$fault"; done

H=$WORK/honest
"$HEADERD" import --datadir "$H" "$ERA1" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"
cp -a "$H" "$WORK/slow"  # a datadir is used by one serve at a time
forge_side_chain "$WORK/forged"
# Blocks 0..4999 are the real ones; block 5000 differs in one byte (its extra-data), and so on up.
for d in honest forged; do
    "$HEADERD" export --datadir "$WORK/$d" --from 0 --count 5000 --out "$WORK/$d.0-4999.rlp" >/dev/null 2>&1 &&
        "$HEADERD" export --datadir "$WORK/$d" --from 5000 --count 1 --out "$WORK/$d.5000.rlp" >/dev/null 2>&1 ||
        fail "export of $d"
done
cmp -s "$WORK/honest.0-4999.rlp" "$WORK/forged.0-4999.rlp" || fail "the forged chain differs below block 5000"
[ "$(cmp -l "$WORK/honest.5000.rlp" "$WORK/forged.5000.rlp" | wc -l)" = 1 ] ||
    fail "the forged block 5000 does not differ from the real one in exactly one byte"
[ "$(stat -c %s "$WORK/forged.rlp")" = "$(stat -c %s "$RLP")" ] || fail "the forged chain is not the same size"
echo "ok: forged a side chain from block 5000 (one byte of its extra-data; head $FORGED_HEAD) and imported it"

serve honest "$H"
serve forged "$WORK/forged"
serve slow "$WORK/slow" --reply-delay 30
for name in js extra-header corrupt-header stale-id wrong-code no-reply; do
    wait_file "$WORK/$name.enode" "the ethereumjs server ($name)" "$WORK/$name.js.log"
done

# --- 1. Two honest peers at once ----------------------------------------------------------------
sync_ok two "$WORK/two" --peer "$(enode honest)" --peer "$(enode js)" --head "$HEAD" --max-request 128
exact "$WORK/two" "sync from headerd and ethereumjs"
py "$WORK/two.json" 's["fetched"] == 8191 and s["resumed"] is False and len(s["peers"]) == 2'
py "$WORK/two.json" 'all(p["headers"] > 0 and p["requests"] > 1 and not p["dropped"] for p in s["peers"])'
py "$WORK/two.json" 'peer("js")["client"].startswith("headerd-interop-server/ethereumjs")'
py "$WORK/two.json" 'peer("honest")["client"].startswith("headerd")'
echo "ok: an empty datadir synced 0..8191 from headerd ($(py_print "$WORK/two.json" 'peer("honest")["headers"]') headers) and ethereumjs ($(py_print "$WORK/two.json" 'peer("js")["headers"]') headers) at once: export byte-exact, verify passes"

sync_ok keep "$WORK/keep" --peer "$(enode honest)" --peer "$(enode js)" --head "$HEAD" --max-request 128 --keep 1000
exact "$WORK/keep" "sync with --keep 1000"
ancient=$(json_field "$("$HEADERD" inspect --datadir "$WORK/keep" --json)" ancient_items)
[ "$ancient" -gt 0 ] || fail "--keep 1000: no ancient items after the sync"
py "$WORK/keep.json" 's["ancient_items"] == '"$ancient"' and all(p["headers"] > 0 for p in s["peers"])'
echo "ok: --keep 1000 fed the freezer ($ancient ancient items), export still byte-exact, verify passes"

sync_ok again "$WORK/keep" --peer "$(enode honest)" --head "$HEAD"
py "$WORK/again.json" 's["already"] is True and s["fetched"] == 0'
exact "$WORK/keep" "a second sync to the same head"
echo "ok: a second sync to the same head says already synced and fetches nothing"

sync_ok number "$WORK/number" --peer "$(enode honest)" --peer "$(enode js)" --head-number 8191 --max-request 256
exact "$WORK/number" "sync with --head-number 8191"
grep -q "Head agreed by peers .*number=8191 hash=$HEAD peers=2/2" "$WORK/number.log" ||
    fail "--head-number: no agreement logged: $(grep -i head "$WORK/number.log")"
echo "ok: --head-number 8191 with two honest peers agreeing: byte-exact"

# --- 2. One liar among honest peers ---------------------------------------------------------------
# liar NAME FATE_PART ARGS...: sync from the honest headerd and the liar NAME; byte-exact, and the
# liar, which got work, named, dropped and why.
liar() {
    local name=$1 fate=$2
    shift 2
    sync_ok "lie-$name" "$WORK/lie-$name" --peer "$(enode honest)" --peer "$(enode "$name")" --head "$HEAD" "$@"
    exact "$WORK/lie-$name" "sync with the liar $name"
    py "$WORK/lie-$name.json" 'peer("'"$name"'")["dropped"] is True and peer("'"$name"'")["requests"] >= 1'
    py "$WORK/lie-$name.json" 're.search(r"""'"$fate"'""", peer("'"$name"'")["fate"])'
    py "$WORK/lie-$name.json" 'peer("honest")["dropped"] is False and peer("honest")["fate"] == "served until the end"'
    grep -q "Dropping peer .*peer=$(address "$name")\|Peer session ended .*peer=$(address "$name")" \
        "$WORK/lie-$name.log" || fail "$name: the log does not name the dropped liar $(address "$name")"
    echo "ok: liar $name ($(address "$name")), $(py_print "$WORK/lie-$name.json" 'peer("'"$name"'")["requests"]') requests -> $(py_print "$WORK/lie-$name.json" 'peer("'"$name"'")["fate"][:160]'); byte-exact anyway"
}
liar extra-header "^dropped: .*response carries more items than requested" --max-request 128
# One byte of the lowest header changed: its hash is not its successor's parent hash (or, in a
# reply of one header, not the hash the verified chain above expects).
liar corrupt-header "^dropped: .*(is not the parent hash|but the verified chain above says)" --max-request 128
# The reply to request id goes to id + 1: another pending request's (the wrong blocks), or no
# request's (dropped, or ignored as stale: then the request times out).
liar stale-id "^dropped: .*(of the reply is block \d+, expected block|not pending|timed out)" --max-request 128 \
    --request-timeout 1
liar wrong-code "^dropped: BlockBodies .*response code does not match the request" --max-request 128
liar no-reply "^dropped: 3 requests in a row timed out" --max-request 128 --request-timeout 1
# The liar listed first is asked for the head first: the corrupt head header is refused, the
# honest peer's taken.
sync_ok lie-first "$WORK/lie-first" --peer "$(enode corrupt-header)" --peer "$(enode honest)" --head "$HEAD"
exact "$WORK/lie-first" "sync with the liar corrupt-header listed first"
py "$WORK/lie-first.json" 'peer("corrupt-header")["dropped"] and "dropped: answered the request for head '"$HEAD"' with another header" == peer("corrupt-header")["fate"]'
echo "ok: liar corrupt-header listed first: its head header refused, the honest one's used; byte-exact"
# The forged headerd: several requests in flight and small ones, so it is asked for blocks above
# 5000 where its chain differs; each such reply must be refused when it meets the verified chain.
liar forged "^dropped: block \d+ has hash 0x[0-9a-f]{64}, but the verified chain above says 0x" \
    --max-request 64 --max-peers-in-flight 4 --verbosity 4
py "$WORK/lie-forged.json" 'peer("forged")["headers"] > 0'
asked=$(grep "Requesting headers .*peer=$(address forged) " "$WORK/lie-forged.log" | grep -o "origin=[0-9]*" |
    cut -d= -f2 | sort -n | tail -1)
[ "${asked:-0}" -ge 5000 ] || fail "the forged headerd was not asked for blocks of its side chain (highest: ${asked:-none})"
echo "ok: the forged headerd was asked for blocks up to $asked, where its chain is not the verified one"

# --- 3. Only liars ------------------------------------------------------------------------------------
# only NAME DATADIR FATE_PART PEERS...: the sync fails naming each peer's address and fate.
only() {
    local name=$1 d=$2 fate=$3
    shift 3
    local args=() p
    for p in "$@"; do args+=(--peer "$(enode "$p")"); done
    sync "only-$name" "$d" "${args[@]}" --head "$HEAD" --max-request 64 --request-timeout 2
    [ "$RC" != 0 ] || fail "only $name: the sync succeeded: $(tail -5 "$WORK/only-$name.log")"
    grep -q "ERROR.*$fate" "$WORK/only-$name.log" ||
        fail "only $name: the error does not say '$fate': $(tail -5 "$WORK/only-$name.log")"
    for p in "$@"; do
        grep -q "ERROR.*$(address "$p") (" "$WORK/only-$name.log" ||
            fail "only $name: the error does not name $p ($(address "$p")) and its fate: $(grep ERROR "$WORK/only-$name.log")"
    done
    py "$WORK/only-$name.json" 's["ok"] is False and "'"$fate"'" in s["error"]'
    echo "ok: only liars ($*) -> exit $RC: $(grep -o 'ERROR.*' "$WORK/only-$name.log" | head -1 | cut -c1-300)"
}
only forged "$WORK/only-forged" "no peer gave the header of head $HEAD" forged
py "$WORK/only-forged.json" 'peer("forged")["empty"] >= 1 and peer("forged")["headers"] == 0'
nothing_canonical "$WORK/only-forged" "after the forged headerd alone"
only corrupt "$WORK/only-corrupt" "no peer gave the header of head $HEAD" corrupt-header
py "$WORK/only-corrupt.json" 'peer("corrupt-header")["dropped"] is True and "with another header" in peer("corrupt-header")["fate"]'
nothing_canonical "$WORK/only-corrupt" "after the corrupt-header server alone"
echo "ok: after a sync from only liars the datadirs hold no canonical header"

# A stored skeleton (an honest sync interrupted by SIGINT), then only liars, then an honest sync.
S=$WORK/skeleton
"$HEADERD" sync --datadir "$S" --peer "$(enode slow)" --head "$HEAD" --max-request 64 --max-peers-in-flight 1 \
    --verbosity 4 --summary "$WORK/int.json" >"$WORK/int.log" 2>&1 &
SYNC_PID=$!
for _ in $(seq 100); do
    grep -qs "Requesting headers" "$WORK/int.log" && break
    sleep 0.05
done
sleep 1
kill -INT "$SYNC_PID" 2>/dev/null || true
for _ in $(seq 300); do
    kill -0 "$SYNC_PID" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$SYNC_PID" 2>/dev/null && fail "SIGINT: the sync did not end within 30 s: $(tail -5 "$WORK/int.log")"
RC=0
wait "$SYNC_PID" || RC=$?
SYNC_PID=
[ "$RC" != 0 ] || fail "the interrupted sync exited 0: $(tail -5 "$WORK/int.log")"
grep -q "interrupted; the headers verified so far are stored (down to block [0-9]*)" "$WORK/int.log" ||
    fail "SIGINT: no 'interrupted ... stored' error: $(tail -5 "$WORK/int.log")"
stored=$(grep -o "stored (down to block [0-9]*)" "$WORK/int.log" | grep -o "[0-9]*")
[ "$stored" -gt 0 ] && [ "$stored" -lt 8191 ] || fail "SIGINT: stored down to $stored"
echo "ok: SIGINT interrupted a sync with blocks $stored..8191 stored in the skeleton"
# Its summary measured the peer's delay: every reply came at least 30 ms after its request.
py "$WORK/int.json" 's["peers"][0]["requests"] > 1 and 30 <= s["peers"][0]["rtt_p50_ms"] <= s["peers"][0]["rtt_p99_ms"] < 1000'
echo "ok: the summary's RTT of a peer that waits 30 ms: p50 $(py_print "$WORK/int.json" 's["peers"][0]["rtt_p50_ms"]') ms"
nothing_canonical "$S" "an interrupted sync"
only mixed "$S" "no peer gave the header of head $HEAD" forged corrupt-header extra-header no-reply
nothing_canonical "$S" "only liars after an interrupted sync"
sync_ok resumed "$S" --peer "$(enode honest)" --head "$HEAD" --verbosity 4
exact "$S" "an honest sync after the liars"
py "$WORK/resumed.json" 's["resumed"] is True and s["resumed_tail"] == '"$stored"' and s["fetched"] == '"$stored"
py "$WORK/resumed.json" 's["highest_requested"] == '"$((stored - 1))"
echo "ok: an honest sync into that datadir resumed from block $stored, fetched only 0..$((stored - 1)), byte-exact"

# --- 4. kill -9 at random moments ----------------------------------------------------------------
# One peer that waits 30 ms before each reply, 64 headers a request, one at a time: a whole run
# takes ~4 s. Each run is killed after 0.05..0.45 s (HEADERD_TEST_TIME_SCALE times as wide in a
# sanitizer build), then run again, until at least KILLS kills hit a live sync (and at least 5 hit
# it while requesting headers); then a last run finishes. A kill that came before the run was
# fetching moves the window's start to that moment: a loaded machine starts its runs later.
# HEADERD_SYNC_KILLS=100 tests/sync_test.sh build/node/headerd kills it 100 times (8 headers a
# request then, so that the sync lasts long enough).
KILLS=${HEADERD_SYNC_KILLS:-10}
seed_random HEADERD_SYNC_SEED
KILL_REQUEST=64
[ "$KILLS" -le 10 ] || KILL_REQUEST=8
K=$WORK/kill
KILL_ARGS=(--peer "$(enode slow)" --head "$HEAD" --max-request "$KILL_REQUEST" --max-peers-in-flight 1 --verbosity 4)
runs=0
kills=0
fetching=0
kill_from=50
kill_span=$((400 * ${HEADERD_TEST_TIME_SCALE:-1}))
while { [ "$kills" -lt "$KILLS" ] || [ "$fetching" -lt 5 ]; } && [ "$runs" -lt $((KILLS * 4)) ]; do
    runs=$((runs + 1))
    random_kill "$kill_from" $((kill_from + kill_span)) "$WORK/kill.$runs.log" \
        "$HEADERD" sync --datadir "$K" "${KILL_ARGS[@]}"  # (tests/lib.sh)
    RC=$KILL_RC
    case $RC in
        137)  # killed while it ran (an exited process is a zombie until waited for: its exit code counts)
            kills=$((kills + 1))
            if grep -q "Requesting headers" "$WORK/kill.$runs.log"; then
                fetching=$((fetching + 1))
            else
                kill_from=$KILL_MS
            fi
            ;;
        0) fail "kill test: run $runs finished before $KILLS kills ($kills so far): the runs are too fast" ;;
        *) fail "kill test: run $runs exited $RC: $(tail -5 "$WORK/kill.$runs.log")" ;;
    esac
done
[ "$kills" -ge "$KILLS" ] && [ "$fetching" -ge 5 ] ||
    fail "kill test: $kills of $runs runs killed while running, $fetching while fetching (the last window $kill_from..$((kill_from + kill_span)) ms)"
runs=$((runs + 1))
sync_ok "kill.$runs" "$K" "${KILL_ARGS[@]}"
exact "$K" "the sync killed $kills times"
# Every run after one that requested headers resumes the stored skeleton (once it has found the
# head) and asks only for blocks below what it says is stored at its start; what is stored only
# grows downwards.
requested=0
last=8191
for r in $(seq "$runs"); do
    log=$WORK/kill.$r.log
    ! grep -q "Replacing the stored skeleton" "$log" || fail "kill test: run $r replaced the skeleton"
    if grep -q "Resuming .*stored_down_to=" "$log"; then
        low=$(grep -o "Resuming .*stored_down_to=[0-9]*" "$log" | grep -o "[0-9]*$")
        grep -q "Resuming .*head=8191 " "$log" || fail "kill test: run $r resumed another head: $(grep Resuming "$log")"
        [ "$low" -le "$last" ] || fail "kill test: run $r says stored down to $low, after $last"
        last=$low
        for origin in $(grep "Requesting headers" "$log" | grep -o "origin=[0-9]*" | cut -d= -f2); do
            [ "$origin" -lt "$low" ] ||
                fail "kill test: run $r requested origin $origin again, stored down to $low: $(grep Requesting "$log" | head -3)"
        done
    elif [ "$requested" = 1 ] && grep -q "Sync target\|Requesting headers" "$log" && ! grep -q "Already synced" "$log"; then
        # (A run killed before it found the head logs neither; one killed after linking leaves
        # the head synced.)
        fail "kill test: run $r did not resume the skeleton of earlier runs: $(head -5 "$log")"
    fi
    grep -q "Requesting headers" "$log" && requested=1
done
[ "$requested" = 1 ] || fail "kill test: no run requested headers"
# (A run killed after linking leaves nothing to resume: the last one then finds the head synced.)
py "$WORK/kill.$runs.json" 's["already"] or (s["resumed"] and s["resumed_tail"] == '"$last"' and s["fetched"] == '"$last"')'
echo "ok: kill -9 $kills times at random moments ($fetching while fetching; $runs runs): byte-exact at the end, verify passes, no header requested again once stored (the last run resumed at $last and fetched $last)"

# --- 5. Bad arguments ---------------------------------------------------------------------------
B=$WORK/bad
E=$(enode honest)
expect_fail "no --head" "give the trusted head" hsync --datadir "$B" --peer "$E"
expect_fail "--head and --head-number" "give the trusted head" \
    hsync --datadir "$B" --peer "$E" --head "$HEAD" --head-number 8191
expect_fail "--head not a hash" "--head 0x1234: not a 0x-prefixed 32-byte hash" \
    hsync --datadir "$B" --peer "$E" --head 0x1234
expect_fail "--head without 0x" "not a 0x-prefixed 32-byte hash" \
    hsync --datadir "$B" --peer "$E" --head "${HEAD#0x}"
expect_fail "--head-number with one peer" "needs at least two peers" \
    hsync --datadir "$B" --peer "$E" --head-number 8191
expect_fail "no --peer" "--peer" hsync --datadir "$B" --head "$HEAD"
expect_fail "bad enode" "--peer enode://nope" hsync --datadir "$B" --peer enode://nope --head "$HEAD"
expect_fail "--max-request 0" "--max-request must be 1..1024" \
    hsync --datadir "$B" --peer "$E" --head "$HEAD" --max-request 0
expect_fail "--max-peers-in-flight 0" "--max-peers-in-flight must be 1..64" \
    hsync --datadir "$B" --peer "$E" --head "$HEAD" --max-peers-in-flight 0
expect_fail "--request-timeout 0" "--request-timeout must be a positive number of seconds" \
    hsync --datadir "$B" --peer "$E" --head "$HEAD" --request-timeout 0
expect_fail "--metrics not an address" "--metrics" hsync --datadir "$B" --peer "$E" --head "$HEAD" --metrics nowhere:x
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DEAD=${E%@*}@127.0.0.1:$PORT
expect_fail "an unreachable peer" "no peer could be reached: 127.0.0.1:$PORT (unreachable" \
    hsync --datadir "$B" --peer "$DEAD" --head "$HEAD" --handshake-timeout 2
expect_fail "an unknown head" "no peer gave the header of head 0x$(printf '11%.0s' $(seq 32))" \
    hsync --datadir "$B" --peer "$E" --head "0x$(printf '11%.0s' $(seq 32))"
expect_fail "two peers disagreeing on --head-number" "no majority of at least two peers agrees on block 8191" \
    hsync --datadir "$B" --peer "$E" --peer "$(enode forged)" --head-number 8191
nothing_canonical "$B" "after the failed syncs"
"$HEADERD" generate --datadir "$WORK/synthetic" --count 100 >"$WORK/generate.log" 2>&1 ||
    fail "generate: $(cat "$WORK/generate.log")"
SYN=$(json_field "$("$HEADERD" inspect --datadir "$WORK/synthetic" --json)" network)
[ -n "$SYN" ] && [ "$SYN" != mainnet ] || fail "generate made a datadir of network '$SYN'"
expect_fail "a datadir of another network" "holds network $SYN (id" \
    hsync --datadir "$WORK/synthetic" --network mainnet --peer "$E" --head "$HEAD"
expect_fail "a datadir of another network, both named" "not mainnet (id 1," \
    hsync --datadir "$WORK/synthetic" --network mainnet --peer "$E" --head "$HEAD"
# Without --network the datadir's own network is used: mainnet peers refuse its Status.
expect_fail "a datadir of another network, no --network" "network id mismatch: remote 1, local" \
    hsync --datadir "$WORK/synthetic" --peer "$E" --head "$HEAD"
[ "$(json_field "$("$HEADERD" inspect --datadir "$WORK/synthetic" --json)" head_number)" = 99 ] ||
    fail "the refused sync changed the synthetic datadir"
echo "ok: the datadir of another network is refused and left as it was"

echo "ok: every sync check passed in ${SECONDS} s"
