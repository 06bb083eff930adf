#!/usr/bin/env bash
# headerd's discv4 against an independent implementation, @ethereumjs/devp2p 10.0.0's DPT
# (tests/interop/dpt_node.js), each node its own process on 127.0.0.1, in both directions:
#   (a) DPT bootstraps from headerd: headerd serve --discovery v4 with no bootnodes and three DPT
#       nodes bootstrapping from it. Each DPT node must come to know the two others, which it can
#       only have learned from headerd's Neighbors (or from their pings, which they send only to
#       nodes headerd named); headerd's node database, saved on SIGTERM, must hold all three.
#   (b) headerd bootstraps from DPT: DPT node A, then B and C bootstrapping from A, then headerd
#       serve --bootnodes A. headerd must find B and C through A's Neighbors: its node database
#       after SIGTERM lists A, B and C. Then headerd discover --bootnodes A must list A, B and C,
#       each with record=no (the library has no EIP-868: it cannot even decode an ENRRequest and
#       logs "Invalid type: 5"), exit 0, and every DPT node must still be running.
#   (c) a DPT node whose first bond fails: headerd serve and DPT node E1 bootstrapping from it, then
#       E2 and E3, each blocked for 1.5 s at its first datagram (dpt_node.js --stall), so headerd's
#       ping back misses its 500 ms and headerd ignores their FindNode (no endpoint proof, as geth).
#       E2 (the library alone) must still know headerd alone 8 s later; E3 (--rebond 1000: it pings
#       headerd again, as geth's ensureBond does after failed FindNodes) must come to know E1. This
#       is the failure discovery_net's DPT nodes once had on a loaded machine, made on purpose.
# Why: headerd's own tests talk discv4 only to headerd; this proves the wire format, the endpoint
# proof (bond) and Neighbors work with code that shares nothing with it.
#
# Usage: discovery_interop_test.sh HEADERD. Exits 77 when node or tests/interop/node_modules is
# missing. Takes about 25 s.
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/node_lib.sh
source "$(dirname "$0")/node_lib.sh"
# shellcheck source=tests/disc_lib.sh
source "$(dirname "$0")/disc_lib.sh"
need_dpt

"$HEADERD" generate --datadir "$WORK/chain" --count 64 >/dev/null 2>&1 || fail "generate"
# A fresh copy of the chain (no node key, no node database) for each headerd node.
chain_copy() { cp -r "$WORK/chain" "$1"; }

# wait_known NAME FILE SECONDS IDS: FILE (a --peers file or node database) must name every id of IDS
# within SECONDS; prints how long it took.
wait_known() {
    local name=$1 file=$2 secs=$3 want=$4 start=$SECONDS missing
    while :; do
        missing=$(missing_ids "$file" "$want")
        [[ -z $missing ]] && break
        [[ $((SECONDS - start)) -lt $secs ]] || fail "$name does not know $(wc -l <<<"$missing") node(s) after $secs s: $missing; $file: $(cat "$file" 2>/dev/null)"
        sleep 0.5
    done
    echo "ok: $name knows the $(wc -l <<<"$want") nodes after $((SECONDS - start)) s"
}

echo "== (a) three DPT nodes bootstrap from headerd serve"
chain_copy "$WORK/ha"
disc_serve ha "$WORK/ha"
HA=$(head -1 "$WORK/ha/enode")
for n in d1 d2 d3; do dpt "$n" --bootnode "$HA"; done
D_IDS=$(for n in d1 d2 d3; do id_of "$WORK/$n.enode"; done)
for n in d1 d2 d3; do
    wait_known "$n" "$WORK/$n.peers" $((20 * SCALE)) "$(grep -v "$(id_of "$WORK/$n.enode")" <<<"$D_IDS")"
done
stop_within ha $((10 * SCALE))
[[ -s $WORK/ha/nodes ]] || fail "headerd serve saved no node database"
missing=$(missing_ids "$WORK/ha/nodes" "$D_IDS")
[[ -z $missing ]] || fail "headerd's node database lacks DPT node(s) $missing: $(cat "$WORK/ha/nodes")"
echo "ok: headerd's node database holds the 3 DPT nodes ($(grep -c '^node ' "$WORK/ha/nodes") nodes)"
for n in d1 d2 d3; do stop_within "$n" 5; done

echo "== (b) headerd serve bootstraps from DPT node A, which knows B and C"
dpt a
A=$(head -1 "$WORK/a.enode")
dpt b --bootnode "$A"
dpt c --bootnode "$A"
ABC_IDS=$(for n in a b c; do id_of "$WORK/$n.enode"; done)
wait_known a "$WORK/a.peers" $((20 * SCALE)) "$(grep -v "$(id_of "$WORK/a.enode")" <<<"$ABC_IDS")"
chain_copy "$WORK/hb"
disc_serve hb "$WORK/hb" --bootnodes "$A"
HB_ID=$(id_of "$WORK/hb/enode")
# headerd pings each node before asking it, and a DPT node keeps a node that pinged it: once B and
# C hold headerd, it has learned them from A (it had no other source).
wait_known b "$WORK/b.peers" $((20 * SCALE)) "$HB_ID"
wait_known c "$WORK/c.peers" $((20 * SCALE)) "$HB_ID"
stop_within hb $((10 * SCALE))
missing=$(missing_ids "$WORK/hb/nodes" "$ABC_IDS")
[[ -z $missing ]] || fail "headerd's node database lacks $missing: $(cat "$WORK/hb/nodes")"
echo "ok: headerd's node database holds A, B and C ($(grep -c '^node ' "$WORK/hb/nodes") nodes)"

echo "== (b) headerd discover --bootnodes A"
rc=0
# (SIGKILL: a crawler that does not stop at --duration may not stop on SIGTERM either.)
timeout -s KILL $((30 * SCALE)) "$HEADERD" discover --bootnodes "$A" --duration 5 --json "$WORK/discover.json" \
    --synthetic 64 --listen 127.0.0.1:0 >"$WORK/discover.out" 2>"$WORK/discover.log" || rc=$?
[[ $rc -ne 137 ]] || fail "headerd discover --duration 5 still running after $((30 * SCALE)) s: $(tail -3 "$WORK/discover.log")"
[[ $rc -eq 0 ]] || fail "headerd discover exited $rc: $(tail -5 "$WORK/discover.log")"
for n in a b c; do
    line=$(grep -F "$(id_of "$WORK/$n.enode")" "$WORK/discover.out") || fail "discover did not list $n: $(cat "$WORK/discover.out")"
    [[ $line == *" record=no "* && $line == *" compatible=unknown"* ]] || fail "discover's line for $n: $line"
    grep -qF "\"enode\":\"$(head -1 "$WORK/$n.enode")\"" "$WORK/discover.json" || fail "discover.json lacks $n"
done
grep -q '"records":0' "$WORK/discover.json" || fail "discover.json counts records of DPT nodes: $(cat "$WORK/discover.json")"
echo "ok: discover listed A, B and C with record=no ($(wc -l <"$WORK/discover.out") nodes in all)"
for n in a b c; do
    kill -0 "${PIDS[$n]}" 2>/dev/null || fail "DPT node $n died: $(tail -5 "$WORK/$n.log")"
    echo "   DPT $n: $(grep -c 'Invalid type: 5' "$WORK/$n.log" || true) ENRRequest(s) it could not decode, still running"
done
for n in a b c; do stop_within "$n" 5; done

echo "== (c) DPT nodes whose first bond fails, without and with --rebond"
chain_copy "$WORK/hc"
disc_serve hc "$WORK/hc"
HC=$(head -1 "$WORK/hc/enode")
HC_ID=$(id_of "$WORK/hc/enode")
dpt e1 --bootnode "$HC"
E1_ID=$(id_of "$WORK/e1.enode")
# (Their own Pong timeout above the stall, so that they do not ban headerd for its late Pong.)
dpt e2 --bootnode "$HC" --stall 1500 --timeout $((5000 * SCALE))
e2_start=$SECONDS
dpt e3 --bootnode "$HC" --stall 1500 --timeout $((5000 * SCALE)) --rebond 1000
wait_known e3 "$WORK/e3.peers" $((20 * SCALE)) "$E1_ID"
grep -q '\] rebond 1$' "$WORK/e3.log" || fail "e3 knows E1 without having rebonded: its stall did not fail the bond"
while [[ $((SECONDS - e2_start)) -lt 8 ]]; do sleep 0.5; done
kill -0 "${PIDS[e2]}" 2>/dev/null || fail "DPT node e2 died: $(tail -5 "$WORK/e2.log")"
[[ $(grep -c . "$WORK/e2.peers") -eq 1 && -z $(missing_ids "$WORK/e2.peers" "$HC_ID") ]] ||
    fail "e2 (no --rebond) should know headerd alone after its failed bond: $(cat "$WORK/e2.peers")"
echo "ok: after a failed first bond, e2 knows headerd alone $((SECONDS - e2_start)) s on;" \
    "e3 knows E1 after $(grep -c '\] rebond [0-9]*$' "$WORK/e3.log") rebond round(s)"
for n in e1 e2 e3; do stop_within "$n" 5; done
stop_within hc $((10 * SCALE))
echo "PASS"
