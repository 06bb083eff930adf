#!/usr/bin/env bash
# Endpoint prediction end to end (docs/discovery.md, "Our own address"): a headerd node listening on
# 0.0.0.0 with discovery and no --nat has no address to put in its record, and geth would neither
# add nor dial it. It must say so at start (a warning naming --nat extip), write an enode URL that
# can be dialled (not 0.0.0.0), and, once three peers on 127.0.0.1 (--discovery.predict 3; geth
# and the default: 10) have said where they see it, publish a record with `ip` and a higher seq
# within 15 s of the last peer's start, its enode file naming that address.
#
# Usage: discovery_predict_test.sh HEADERD. Loopback only; about 3 s.
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/node_lib.sh
source "$(dirname "$0")/node_lib.sh"
# shellcheck source=tests/disc_lib.sh
source "$(dirname "$0")/disc_lib.sh"

"$HEADERD" generate --datadir "$WORK/chain" --count 64 >/dev/null 2>&1 || fail "generate"
for n in p0 p1 p2 p3; do cp -r "$WORK/chain" "$WORK/$n"; done

# record_ip ENR_TEXT -> the record's seq and its ip entry ("-" without one): RLP read by hand, so
# that nothing of headerd's own decoder judges it.
record_ip() {
    python3 - "$1" <<'PY'
import base64, sys
text = sys.argv[1].removeprefix("enr:")
raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
def item(b, i):
    p = b[i]
    if p < 0x80: return b[i:i + 1], i + 1
    if p < 0xb8: return b[i + 1:i + 1 + p - 0x80], i + 1 + p - 0x80
    if p < 0xc0:
        n = p - 0xb7; l = int.from_bytes(b[i + 1:i + 1 + n], "big"); return b[i + 1 + n:i + 1 + n + l], i + 1 + n + l
    if p < 0xf8: return ("list", b[i + 1:i + 1 + p - 0xc0]), i + 1 + p - 0xc0
    n = p - 0xf7; l = int.from_bytes(b[i + 1:i + 1 + n], "big"); return ("list", b[i + 1 + n:i + 1 + n + l]), i + 1 + n + l
(_, body), _ = item(raw, 0)
fields, i = [], 0
while i < len(body):
    v, i = item(body, i); fields.append(v)
seq = int.from_bytes(fields[1], "big")
pairs = dict((bytes(fields[k]), fields[k + 1]) for k in range(2, len(fields) - 1, 2))
ip = pairs.get(b"ip")
print(seq, ".".join(str(x) for x in ip) if ip else "-")
PY
}

disc_port P0
"$HEADERD" serve --datadir "$WORK/p0" --listen "0.0.0.0:$P0" --workers 1 --discovery v4 --discovery.predict 3 \
    --verbosity 4 >"$WORK/p0.log" 2>&1 &
PIDS[p0]=$!
wait_file "$WORK/p0/enode" p0 $((10 * SCALE))
grep -q "Node record has no IP address.*--nat extip" "$WORK/p0.log" || fail "no warning about the record without an address"
BOOT=$(cat "$WORK/p0/enode")
[[ $BOOT == *"@127.0.0.1:$P0" ]] || fail "enode URL of a node on 0.0.0.0 is not dialable: $BOOT"
read -r SEQ0 IP0 < <(record_ip "$(cat "$WORK/p0/enr")")
[[ $IP0 == - ]] || fail "the first record already has ip $IP0"
echo "ok: listening on 0.0.0.0: warned, enode $BOOT, record seq $SEQ0 without ip"

for n in p1 p2 p3; do disc_serve "$n" "$WORK/$n" --bootnodes "$BOOT"; done
started=$SECONDS
predicted() { grep -q "Predicted our address.*ip=127.0.0.1 udp=$P0" "$WORK/p0.log"; }
poll_until $((15 * SCALE)) 0.1 -- predicted || fail "no prediction 15 s after three peers: $(grep -i "record\|predict" "$WORK/p0.log" | tail -5)"
read -r SEQ1 IP1 < <(record_ip "$(cat "$WORK/p0/enr")")
[[ $IP1 == 127.0.0.1 && $SEQ1 -gt $SEQ0 ]] || fail "DATADIR/enr after the prediction: seq $SEQ1 ip $IP1 (was seq $SEQ0)"
grep -q "@127.0.0.1:$P0" "$WORK/p0/enode" || fail "enode file after the prediction: $(cat "$WORK/p0/enode")"
echo "ok: record re-signed with ip $IP1 and seq $SEQ1 > $SEQ0 $((SECONDS - started)) s after the peers started"
for n in p1 p2 p3 p0; do stop_within "$n" $((10 * SCALE)); done
echo "PASS"
