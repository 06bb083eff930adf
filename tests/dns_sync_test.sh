#!/usr/bin/env bash
# DNS node lists (EIP-1459) as the only source of peers, end to end on 127.0.0.1: two servers of
# the real mainnet epoch (blocks 0..8191, each with its own node key) and a server of a synthetic
# chain (another genesis: an incompatible eth fork id) run with discovery on, so each writes its
# signed record (DATADIR/enr). tests/dns_tree_tool puts the three records in a tree, dnsmasq serves
# it on 127.0.0.1, and with no bootnode at all:
#   1. headerd discover --discovery.dns finds the three records through DNS ("found_by": "dns"),
#      the mainnet servers compatible, the other chain's not; it ends at --duration although the
#      DNS walk would rest for minutes;
#   2. sync --discover --discovery.dns syncs 0..8191 byte-exact from the two mainnet servers and
#      never dials the incompatible one;
#   3. bad arguments (a URL that is not enrtree://, a server that is not IPv4:port, a server with no
#      tree) are clear errors.
# Every DNS query went to dnsmasq and was for the test tree's names.
# Usage: dns_sync_test.sh HEADERD DNS_TREE_TOOL. Skips (exit 77) without dnsmasq.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$1"
TOOL=$2
[ -x "$TOOL" ] || fail "usage: dns_sync_test.sh HEADERD DNS_TREE_TOOL"
# serve_dir, stop, PIDS and the EXIT trap that stops every server (dnsmasq among them)
source "$(dirname "$0")/node_lib.sh"
# ERA1, HEAD; enode, address, sync_ok, exact
source "$(dirname "$0")/sync_lib.sh"
# start_dnsmasq, dnsmasq_queries_only
source "$(dirname "$0")/dns_lib.sh"

"$HEADERD" import --datadir "$WORK/honest1" "$ERA1" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"
cp -a "$WORK/honest1" "$WORK/honest2" # before its first serve: each makes its own node key
"$HEADERD" generate --datadir "$WORK/other" --count 64 --seed 10 >"$WORK/generate.log" 2>&1 ||
    fail "generate: $(cat "$WORK/generate.log")"

: >"$WORK/records.txt"
for n in honest1 honest2 other; do
    serve_dir "$n" "$WORK/$n" 0 --discovery v4 --verbosity 4
    cp "$WORK/$n/enode" "$WORK/$n.enode"
    [ -s "$WORK/$n/enr" ] || fail "$n wrote no node record"
    head -1 "$WORK/$n/enr" >>"$WORK/records.txt"
done
URL=$("$TOOL" zone-of "$WORK/zone.conf" nodes.dnssync.test "$WORK/records.txt") || fail "dns_tree_tool zone-of"
start_dnsmasq "$TOOL" "$WORK/zone.conf" "$URL"
PIDS[dnsmasq]=$DNSMASQ_PID
DNS=(--discovery.dns "$URL" --discovery.dns-server "$DNS_SERVER")
echo "ok: tree $URL of the three servers' records on $DNS_SERVER"

# --- 1. discover --------------------------------------------------------------------------------
started=$SECONDS
timeout 60 "$HEADERD" discover "${DNS[@]}" --listen 127.0.0.1:0 --duration 3 --network mainnet \
    --json "$WORK/crawl.json" >"$WORK/crawl.out" 2>"$WORK/crawl.log" || fail "discover: $(tail -5 "$WORK/crawl.log")"
took=$((SECONDS - started))
[ "$took" -le 20 ] || fail "discover --duration 3 took $took s: stopping waited for the DNS walk"
cat >"$WORK/crawl.py" <<'PY'
import json, sys
crawl, work, names = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3:]
by_id = {n["enode"].split("@")[0]: n for n in crawl["nodes"]}
for name in names:
    n = by_id.get(open(f"{work}/{name}.enode").read().split("@")[0])
    print(name, "unseen" if n is None else n["found_by"] + " " + (
        "norecord" if n["compatible"] is None else "compatible" if n["compatible"] else "incompatible"))
PY
python3 "$WORK/crawl.py" "$WORK/crawl.json" "$WORK" honest1 honest2 other >"$WORK/crawl.txt"
for expect in "honest1 dns compatible" "honest2 dns compatible" "other dns incompatible"; do
    grep -qx "$expect" "$WORK/crawl.txt" || fail "discover: not '$expect': $(cat "$WORK/crawl.txt")"
done
grep -q "DNS discovery started .*trees=1 server=$DNS_SERVER" "$WORK/crawl.log" ||
    fail "discover did not log the DNS source: $(head -5 "$WORK/crawl.log")"
echo "ok: discover --discovery.dns (${took} s for --duration 3): $(tr '\n' ',' <"$WORK/crawl.txt")"

# --- 2. sync --discover with DNS only -------------------------------------------------------------
sync_ok dns "$WORK/synced" --discover "${DNS[@]}" --head "$HEAD" --max-peers 2 --discover-wait 20 \
    --max-request 256 --verbosity 4
exact "$WORK/synced" "sync --discover --discovery.dns"
L=$WORK/dns.log
grep -q "Discovery done .* compatible=2 using=2" "$L" || fail "sync: $(grep 'Discovery done' "$L")"
py "$WORK/dns.json" 'len(s["peers"]) == 2 and peer("honest1") and peer("honest2")'
! grep -q "Connected .*peer=$(address other) " "$L" || fail "sync dialled the other chain's server"
echo "ok: sync --discover --discovery.dns synced 0..8191 byte-exact from the two mainnet servers; the other chain's never dialled"

# --- 3. bad arguments -----------------------------------------------------------------------------
expect_fail "a URL that is not enrtree://" "--discovery.dns https://example.org" \
    "$HEADERD" discover --discovery.dns https://example.org --duration 1
expect_fail "a server that is not IPv4:port" "--discovery.dns-server 127.0.0.1: expected IPv4-address:port" \
    "$HEADERD" discover --discovery.dns "$URL" --discovery.dns-server 127.0.0.1 --duration 1
expect_fail "a server without a tree" "--discovery.dns-server needs --discovery.dns" \
    "$HEADERD" discover --discovery.dns-server "$DNS_SERVER" --duration 1

queries=$(dnsmasq_queries_only dnssync.test) || exit 1
echo "ok: $queries TXT queries, all for the test tree, all from 127.0.0.1"
echo "dns_sync: all checks passed"
