#!/usr/bin/env bash
# `headerd serve --follow` on loopback with the real mainnet epoch: two upstream headerd nodes whose
# chains grow (each restarted on the same port and node key with a longer prefix imported), a
# follower that serves while it tracks them, a single upstream that claims a longer chain (not
# followed), a reorg of the tip (followed, the freezer untouched), a fork below the freezer
# (refused), and an eth/68 upstream (the ethereumjs test server, asked for its head by polling).
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/prom_http.sh"
INTEROP=$(cd "$(dirname "$0")/interop" && pwd)
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1
HASH_4095=0x373df5c980b96580d00715fac46d667b217f00b731f990c636df24a592c75015
HASH_8191=0xa6860fefa339c963e1bb622526cc8dd4344eedd2a9b969e74de5cccc445fbed4

source "$(dirname "$0")/node_lib.sh"

# handshakes NAME -> "W S A": sessions the follower NAME dialled to watch its peers, sessions its
# downloads dialled, and the downloads it ran (heads adopted or refused), from its log.
handshakes() {
    local log=$WORK/$1.log
    echo "$(grep -c 'Following peer ' "$log") $(grep -c 'Connected  *peer=' "$log") $(grep -c 'Adopting head ' "$log")"
}
# no_download_dials NAME: NAME's downloads ran on its watching sessions, with no handshake of their own.
no_download_dials() {
    local w s a
    read -r w s a <<<"$(handshakes "$1")"
    echo "$1: $a downloads, $w watching sessions dialled, $s dialled by the downloads"
    [ "$a" -ge 1 ] || fail "$1 ran no download"
    [ "$s" = 0 ] || fail "$1's downloads dialled $s sessions beside its watching ones: $(grep 'Connected  *peer=' "$WORK/$1.log")"
}

# The epoch, and prefixes of it.
"$HEADERD" import --datadir "$WORK/src" "$ERA1" >/dev/null 2>&1
"$HEADERD" export --datadir "$WORK/src" --from 0 --count 2048 --out "$WORK/q.rlp" >/dev/null 2>&1
"$HEADERD" export --datadir "$WORK/src" --from 0 --count 4096 --out "$WORK/half.rlp" >/dev/null 2>&1
"$HEADERD" export --datadir "$WORK/src" --from 4096 --count 4096 --out "$WORK/rest.rlp" >/dev/null 2>&1
for d in a b; do "$HEADERD" import --datadir "$WORK/$d" "$WORK/half.rlp" >/dev/null 2>&1; done
"$HEADERD" import --datadir "$WORK/f" "$WORK/q.rlp" >/dev/null 2>&1

PA=$(free_port)
PB=$(free_port)
PF=$(free_port)
MF=$(free_port)
serve a "$PA"
serve b "$PB"
EA=$(cat "$WORK/a/enode")
EB=$(cat "$WORK/b/enode")

# A follower needs two peers to follow.
expect_fail "--follow with one peer" "at least two peers" \
    "$HEADERD" serve --datadir "$WORK/f" --listen 127.0.0.1:0 --follow "$EA"
expect_fail "--follow with a bad enode" "--follow enode://nope" \
    "$HEADERD" serve --datadir "$WORK/f" --listen 127.0.0.1:0 --follow "$EA" --follow enode://nope
expect_fail "--follow-interval 0" "--follow-interval must be a positive number" \
    "$HEADERD" serve --datadir "$WORK/f" --listen 127.0.0.1:0 --follow "$EA" --follow "$EB" --follow-interval 0
expect_fail "--reply-delay not a number" "--reply-delay soon" \
    "$HEADERD" serve --datadir "$WORK/f" --listen 127.0.0.1:0 --reply-delay soon

# 1. Both upstreams at 4095: the follower (at 2047) catches up and serves the new headers.
serve f "$PF" --follow "$EA" --follow "$EB" --follow-interval 0.3 --follow-reconnect 0.3 --metrics "127.0.0.1:$MF" \
    --keep 1000
EF=$(cat "$WORK/f/enode")
# A second-level follower: it follows f and b. Its session to f stays up throughout, so it can
# learn f's later heads only from the BlockRangeUpdates f announces.
"$HEADERD" import --datadir "$WORK/g" "$WORK/q.rlp" >/dev/null 2>&1
PG=$(free_port)
MG=$(free_port)
serve g "$PG" --follow "$EF" --follow "$EB" --follow-interval 0.3 --follow-reconnect 0.3 --metrics "127.0.0.1:$MG"
wait_head "$MF" 4095 10 f
[ "$(hash_at "$EF" 4095)" = "$HASH_4095" ] || fail "follower serves the wrong block 4095"
echo "ok: the follower caught up from 2047 to 4095 and serves it"

# 2. One upstream grows (restarted with 4096..8191 imported), the other does not: one peer is no
#    majority of two, so the follower stays at 4095.
stop a
"$HEADERD" import --datadir "$WORK/a" "$WORK/rest.rlp" >/dev/null 2>&1
serve a "$PA"
[ "$(cat "$WORK/a/enode")" = "$EA" ] || fail "upstream a came back with another enode"
sleep 3
[ "$(hash_at "$EA" 8191)" = "$HASH_8191" ] || fail "upstream a does not serve 8191"
[ "$(head_of "$MF")" = 4095 ] || fail "the follower followed a single peer's head (now $(head_of "$MF"))"
echo "ok: a head claimed by one of two followed peers is not followed"

# 3. The other upstream grows too: the follower adopts 8191, feeds its freezer (--keep 1000) and
#    counts the adoption.
stop b
"$HEADERD" import --datadir "$WORK/b" "$WORK/rest.rlp" >/dev/null 2>&1
serve b "$PB"
wait_head "$MF" 8191 10 f
[ "$(hash_at "$EF" 8191)" = "$HASH_8191" ] || fail "follower serves the wrong block 8191"
adopted=$(metric "$MF" headerd_sync_heads_adopted_total)
[ "${adopted%.*}" -ge 2 ] 2>/dev/null || fail "headerd_sync_heads_adopted_total is $adopted, expected >= 2"
echo "ok: both upstreams at 8191: followed (adoptions counted: $adopted)"
# The follower's requests went through its sessions' trackers: the series of job headerd that the
# dashboard's tracker panels draw (docs/operations.md, "The Grafana dashboard").
rtt_count=$(http_body "$MF" /metrics | awk '$1 ~ /^headerd_p2p_request_rtt_seconds_count[{]/ { s += $2 } END { print s + 0 }')
[ "${rtt_count%.*}" -gt 0 ] 2>/dev/null || fail "the follower's headerd_p2p_request_rtt_seconds_count is $rtt_count"
echo "ok: the follower's tracker measured $rtt_count round trips (headerd_p2p_request_rtt_seconds)"

wait_head "$MG" 8191 10 g
sessions=$(grep -c "Following peer .*peer=127.0.0.1:$PF " "$WORK/g.log" || true)
[ "$sessions" = 1 ] || fail "g dialled f $sessions times; it should have learnt f's heads on one session"
echo "ok: a follower of the follower reached 8191 on one session to it: f announced its new range"
stop g
no_download_dials g

# 4. A reorg of the tip: both upstreams now serve a chain that leaves mainnet at block 8100 (restarted
#    on their ports and node keys with the forged chain imported). The follower moves its canonical
#    chain over (92 headers replaced, all above the freezer's head 7191) and serves the new tip.
node "$INTEROP/forge_chain.js" --in "$DATA/mainnet-headers-0-8191.rlp" --out "$WORK/forged.rlp" --fork 8100 \
    >"$WORK/forge.out" || fail "forge_chain.js failed"
FORGED=$(grep -o '0x[0-9a-f]\{64\}' "$WORK/forge.out" | tail -1)
# restart_upstream NAME PORT RLP: NAME serves a fresh import of RLP on PORT with its old node key.
restart_upstream() {
    stop "$1"
    rm -rf "$WORK/$1.next"
    "$HEADERD" import --datadir "$WORK/$1.next" "$3" >/dev/null 2>&1 || fail "import of $3 failed"
    cp "$WORK/$1/nodekey" "$WORK/$1.next/nodekey"
    rm -rf "$WORK/$1"
    mv "$WORK/$1.next" "$WORK/$1"
    serve "$1" "$2"
}
restart_upstream a "$PA" "$WORK/forged.rlp"
restart_upstream b "$PB" "$WORK/forged.rlp"
for _ in $(seq 100); do
    [ "$(hash_at "$EF" 8191)" = "$FORGED" ] && break
    sleep 0.1
done
[ "$(hash_at "$EF" 8191)" = "$FORGED" ] || fail "the follower did not follow the reorg: $(tail -5 "$WORK/f.log")"
grep -q "replaced=92" "$WORK/f.log" || fail "the reorg did not replace 92 headers: $(grep 'Followed head' "$WORK/f.log")"
echo "ok: a reorg of the tip at block 8100 is followed (92 canonical headers replaced)"

# 5. A fork below the freezer's head (block 7000 < 7192): refused, and the follower keeps serving.
node "$INTEROP/forge_chain.js" --in "$DATA/mainnet-headers-0-8191.rlp" --out "$WORK/deep.rlp" --fork 7000 \
    >"$WORK/forge-deep.out" || fail "forge_chain.js failed"
restart_upstream a "$PA" "$WORK/deep.rlp"
restart_upstream b "$PB" "$WORK/deep.rlp"
for _ in $(seq 100); do
    grep -q "never rewrites the freezer" "$WORK/f.log" && break
    sleep 0.1
done
grep -q "never rewrites the freezer" "$WORK/f.log" || fail "a fork below the freezer was not refused: $(tail -5 "$WORK/f.log")"
[ "$(hash_at "$EF" 8191)" = "$FORGED" ] || fail "the follower stopped serving its chain after the refused fork"
echo "ok: a fork below the freezer's head is refused and the follower keeps serving its chain"

stop f
"$HEADERD" export --datadir "$WORK/f" --from 0 --count 8192 --out "$WORK/f.rlp" >/dev/null 2>&1
cmp -s "$WORK/f.rlp" "$WORK/forged.rlp" || fail "the follower's chain differs from the chain it followed"
"$HEADERD" verify --datadir "$WORK/f" >/dev/null 2>&1 || fail "verify of the follower's datadir failed"
ancient=$(json_field "$("$HEADERD" inspect --datadir "$WORK/f" --json)" ancient_items)
[ "$ancient" = 7192 ] || fail "the follower's freezer holds $ancient headers, expected 7192"
echo "ok: the follower's datadir is the chain it followed byte for byte (mainnet to 8099, then the fork), verify passes, freezer at 7192"
no_download_dials f
echo "ok: the follower's downloads (adoptions, the reorg, the refused fork) used its watching sessions"
restart_upstream a "$PA" "$DATA/mainnet-headers-0-8191.rlp"

# 6. An eth/68 upstream (the ethereumjs test server, which has no BlockRangeUpdate) beside an eth/69+
#    headerd: its head is learned by polling, and the two agree on 8191.
"$HEADERD" import --datadir "$WORK/e" "$WORK/half.rlp" >/dev/null 2>&1
node "$INTEROP/server.js" --port 0 --out "$WORK/js.enode" --eth 68 --idle 60 >"$WORK/js.log" 2>&1 &
PIDS[js]=$!
wait_nonempty "$WORK/js.enode" "${PIDS[js]}" 10 "the ethereumjs server" "$WORK/js.log"
PG=$(free_port)
MG=$(free_port)
serve e "$PG" --follow "$EA" --follow "$(cat "$WORK/js.enode")" --follow-interval 0.3 --follow-reconnect 0.3 \
    --metrics "127.0.0.1:$MG"
wait_head "$MG" 8191 15 e
[ "$(hash_at "$(cat "$WORK/e/enode")" 8191)" = "$HASH_8191" ] || fail "follower e serves the wrong block 8191"
grep -q 'eth=68' "$WORK/e.log" || fail "follower e did not talk eth/68 to the ethereumjs server"
echo "ok: an eth/68 upstream's head is learned by polling and followed"
stop e
no_download_dials e
