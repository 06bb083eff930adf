#!/usr/bin/env bash
# headerd's discv5.1 service against an independent implementation, @chainsafe/discv5
# (tests/interop/discv5_node.mjs), on 127.0.0.1 only:
#   - a ChainSafe node (A) pings headerd: A starts the handshake, headerd answers PONG;
#   - A's FINDNODE at distance 0 gets headerd's record, at 256 only records at distance 256, at
#     A's own distance from headerd a list with A (headerd put it in its table at the handshake);
#   - A's TALKREQ gets an empty TALKRESP;
#   - headerd's lookups (refresh every 2 s) learn a second ChainSafe node (B), known only to A,
#     from A's NODES and contact it: headerd starts that handshake.
#
# Usage: discv5_interop_test.sh HEADERD
# Needs node >= 20 and `npm ci` run in tests/interop; exits 77 (CTest SKIP_RETURN_CODE) if not.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INTEROP=$HERE/interop
if ! command -v node >/dev/null || [[ ! -d $INTEROP/node_modules/@chainsafe/discv5 ]]; then
    echo "SKIP: node or $INTEROP/node_modules missing (run: cd $INTEROP && npm ci)" >&2
    exit 77
fi
# shellcheck source=tests/lib.sh
source "$HERE/lib.sh" "${1:?usage: $0 HEADERD}"
# shellcheck source=tests/node_lib.sh
source "$HERE/node_lib.sh"

"$HEADERD" generate --datadir "$WORK/h" --count 64 >/dev/null
serve_dir h "$WORK/h" 0 --discovery v4,v5 --discovery.refresh 2
enr=$(cat "$WORK/h/enr")
[[ $enr == enr:* ]] || fail "no node record in $WORK/h/enr"
grep -q "protocol=discv5" "$WORK/h.log" || fail "discv5 did not start: $(tail -5 "$WORK/h.log")"

# UDP ports (free_port checks TCP), distinct from each other and from headerd's.
udp_port() { python3 -c 'import socket; s = socket.socket(type=socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port_a=$(udp_port)
port_b=$(udp_port)
while [[ $port_b == "$port_a" ]]; do port_b=$(udp_port); done
if ! timeout 60 node "$INTEROP/discv5_node.mjs" "$enr" "$port_a" "$port_b" 30 >"$WORK/events.jsonl" 2>"$WORK/node.err"; then
    cat "$WORK/events.jsonl" "$WORK/node.err" >&2
    tail -20 "$WORK/h.log" >&2
    fail "discv5_node.mjs failed"
fi
cat "$WORK/events.jsonl"

python3 - "$WORK/events.jsonl" "$enr" "$port_a" <<'EOF' || fail "ChainSafe's view of headerd is not what it should be"
import json, sys
events = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    events.setdefault(e["event"], e)
headerd = events["started"]["headerd"]
pong = events["pong"]
assert pong["ip"] == "127.0.0.1" and pong["port"] == int(sys.argv[3]), pong
f0 = events["findnode0"]
assert f0["ids"] == [headerd], f0
assert f0["records"] == [sys.argv[2]], f0
f256 = events["findnode256"]
assert all(d == 256 for d in f256["distances"]), f256
own = events["findnode_own"]
assert events["started"]["a_id"] in own["ids"], own
assert events["talkresp"]["payload"] == "", events["talkresp"]
assert events["b_contacted_by_headerd"]["ok"], events
assert events["done"]["ok"], events
EOF
stop h
echo "ok: headerd answered ChainSafe's PING, FINDNODE (0, 256, A's distance) and TALKREQ, and found B through a lookup"
