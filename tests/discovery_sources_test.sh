#!/usr/bin/env bash
# The sources of peers besides discv4, end to end on 127.0.0.1, each used alone: DNS node lists
# (EIP-1459) and discv5. The network: two servers of the real mainnet epoch (blocks 0..8191, each
# with its own node key), a server of a synthetic chain (another genesis: an incompatible eth fork
# id), and a bootnode of a third chain; all run discv5 only (`--discovery v5`: their discv4 has no
# bootnodes, so nothing is found over discv4), the servers with the bootnode's record as their
# bootnode. Each writes its signed record (DATADIR/enr).
# DNS: tests/dns_tree_tool puts the three servers' records in a tree, dnsmasq serves it on 127.0.0.1,
# and with no bootnode at all:
#   1. headerd discover --discovery.dns finds the three records ("found_by": "dns"), the mainnet
#      servers compatible, the other chain's not; it ends at --duration although the DNS walk
#      would rest for minutes;
#   2. sync --discover --discovery.dns syncs 0..8191 byte-exact from the two mainnet servers and
#      never dials the incompatible one;
#   3. bad arguments (a URL that is not enrtree://, a server that is not IPv4:port, a server with no
#      tree) are clear errors; every DNS query went to dnsmasq and was for the test tree's names.
# discv5: with the bootnode's enr: record as the only bootnode,
#   4. headerd discover finds the three servers through discv5 ("found_by": "discv5") and judges
#      them as above;
#   5. sync --discover syncs 0..8191 byte-exact from the two mainnet servers found over discv5;
#   6. serve --follow-discovered 2 with a third mainnet server up: a followed server that stops is
#      replaced by the spare after three failed dials.
# Usage: discovery_sources_test.sh HEADERD DNS_TREE_TOOL. Skips (exit 77) without dnsmasq.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$1"
TOOL=$2
[ -x "$TOOL" ] || fail "usage: discovery_sources_test.sh HEADERD DNS_TREE_TOOL"
# http_body (the follower's /metrics)
source "$(dirname "$0")/prom_http.sh"
# serve_dir, stop, PIDS and the EXIT trap that stops every server (dnsmasq among them)
source "$(dirname "$0")/node_lib.sh"
# ERA1, HEAD; enode, address, sync_ok, exact
source "$(dirname "$0")/sync_lib.sh"
# start_dnsmasq, dnsmasq_queries_only
source "$(dirname "$0")/dns_lib.sh"
# poll_until, pid_alive
source "$(dirname "$0")/../scripts/lib/wait.sh"

"$HEADERD" import --datadir "$WORK/honest1" "$ERA1" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"
# Copies before the first serve: each makes its own node key.
for n in honest2 honest3 follower; do cp -a "$WORK/honest1" "$WORK/$n"; done
for n in other:10 boot:9; do
    "$HEADERD" generate --datadir "$WORK/${n%:*}" --count 64 --seed "${n#*:}" >"$WORK/generate.log" 2>&1 ||
        fail "generate: $(cat "$WORK/generate.log")"
done

serve_dir boot "$WORK/boot" 0 --discovery v5
BOOT_ENR=$(head -1 "$WORK/boot/enr")
: >"$WORK/records.txt"
for n in honest1 honest2 other; do
    serve_dir "$n" "$WORK/$n" 0 --discovery v5 --bootnodes "$BOOT_ENR" --verbosity 4
    cp "$WORK/$n/enode" "$WORK/$n.enode"
    [ -s "$WORK/$n/enr" ] || fail "$n wrote no node record"
    head -1 "$WORK/$n/enr" >>"$WORK/records.txt"
done
URL=$("$TOOL" zone-of "$WORK/zone.conf" nodes.sources.test "$WORK/records.txt") || fail "dns_tree_tool zone-of"
start_dnsmasq "$TOOL" "$WORK/zone.conf" "$URL"
PIDS[dnsmasq]=$DNSMASQ_PID
DNS=(--discovery.dns "$URL" --discovery.dns-server "$DNS_SERVER")
echo "ok: tree $URL of the three servers' records on $DNS_SERVER"

cat >"$WORK/crawl.py" <<'PY'
import json, sys
crawl, work, names = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3:]
by_id = {n["enode"].split("@")[0]: n for n in crawl["nodes"]}
for name in names:
    n = by_id.get(open(f"{work}/{name}.enode").read().split("@")[0])
    print(name, "unseen" if n is None else n["found_by"] + " " + (
        "norecord" if n["compatible"] is None else "compatible" if n["compatible"] else "incompatible"))
PY
# crawl NAME SOURCE ARGS...: headerd discover ARGS (--duration 3) must find the three servers through
# SOURCE, the two mainnet ones compatible, and end within 20 s.
crawl() {
    local name=$1 source=$2 started took expect
    shift 2
    started=$SECONDS
    timeout 60 "$HEADERD" discover "$@" --listen 127.0.0.1:0 --duration 3 --network mainnet \
        --json "$WORK/$name.json" >"$WORK/$name.out" 2>"$WORK/$name.log" || fail "discover: $(tail -5 "$WORK/$name.log")"
    took=$((SECONDS - started))
    [ "$took" -le 20 ] || fail "discover --duration 3 took $took s: stopping waited for a source"
    python3 "$WORK/crawl.py" "$WORK/$name.json" "$WORK" honest1 honest2 other >"$WORK/$name.txt"
    for expect in "honest1 $source compatible" "honest2 $source compatible" "other $source incompatible"; do
        grep -qx "$expect" "$WORK/$name.txt" || fail "discover: not '$expect': $(cat "$WORK/$name.txt")"
    done
    echo "ok: discover through $source (${took} s for --duration 3): $(tr '\n' ',' <"$WORK/$name.txt")"
}

# --- 1. discover --------------------------------------------------------------------------------
crawl crawl_dns dns "${DNS[@]}"
grep -q "DNS discovery started .*trees=1 server=$DNS_SERVER" "$WORK/crawl_dns.log" ||
    fail "discover did not log the DNS source: $(head -5 "$WORK/crawl_dns.log")"

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

queries=$(dnsmasq_queries_only sources.test) || exit 1
echo "ok: $queries TXT queries, all for the test tree, all from 127.0.0.1"

# --- 4. discover through discv5 -------------------------------------------------------------------
crawl crawl_v5 discv5 --bootnodes "$BOOT_ENR"
grep -q "Discovery started .*protocol=discv5 .*bootnodes=1" "$WORK/crawl_v5.log" ||
    fail "discover did not start discv5: $(grep 'Discovery started' "$WORK/crawl_v5.log")"

# --- 5. sync --discover through discv5 -------------------------------------------------------------
sync_ok v5 "$WORK/synced_v5" --discover --bootnodes "$BOOT_ENR" --head "$HEAD" --max-peers 2 --discover-wait 20 \
    --max-request 256 --verbosity 4
exact "$WORK/synced_v5" "sync --discover through discv5"
grep -q "Discovery done .* compatible=2 using=2" "$WORK/v5.log" || fail "sync: $(grep 'Discovery done' "$WORK/v5.log")"
py "$WORK/v5.json" 'len(s["peers"]) == 2 and peer("honest1") and peer("honest2")'
! grep -q "Connected .*peer=$(address other) " "$WORK/v5.log" || fail "sync dialled the other chain's server"
echo "ok: sync --discover --bootnodes enr:BOOT synced 0..8191 byte-exact from the two mainnet servers found over discv5"
# --- 6. serve --follow-discovered replaces a followed peer that is gone -----------------------------
# A third mainnet server joins: the follower (the epoch already in its datadir) follows two of the
# three, keeps the third as a spare, and when one of its two stops for good, dials it three times
# (0.2, 0.4 s apart...) and then follows the spare instead.
serve_dir honest3 "$WORK/honest3" 0 --discovery v5 --bootnodes "$BOOT_ENR"
cp "$WORK/honest3/enode" "$WORK/honest3.enode"
FRESH_LOG=1 serve_dir follower "$WORK/follower" 0 --discovery v5 --bootnodes "$BOOT_ENR" --follow-discovered 2 \
    --follow-reconnect 0.2 --follow-interval 1 --metrics 127.0.0.1:0
# poll SECONDS WHAT PATTERN: PATTERN appears in the follower's log within SECONDS (while it runs).
poll() {
    poll_until "$1" 0.1 pid_alive "${PIDS[follower]}" -- grep -q "$3" "$WORK/follower.log" ||
        fail "follower: no '$2' within $1 s ($POLL_REASON): $(tail -5 "$WORK/follower.log")"
}
poll 40 "spare" "Spare discovered peers .*count=[1-9]"
followed=()
for n in honest1 honest2 honest3; do
    grep -q "Following discovered peer .*enode=$(enode "$n")" "$WORK/follower.log" && followed+=("$n")
done
[ ${#followed[@]} -eq 2 ] || fail "the follower follows ${#followed[@]} of the three servers: $(grep 'Following discovered' "$WORK/follower.log")"
for n in honest1 honest2 honest3; do [[ " ${followed[*]} " == *" $n "* ]] || spare=$n; done
gone=${followed[0]}
poll 20 "a session with $gone" "Following peer .*peer=$(address "$gone") "
stop "$gone"
poll 30 "the replacement" "Replacing followed peer .*peer=$(address "$gone") failures=3 new=$(address "$spare")"
poll 20 "a session with the spare $spare" "Following peer .*peer=$(address "$spare") "
MF=$(sed -n 's|.*Metrics enabled .*url=http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$WORK/follower.log" | head -1)
dials=$(http_body "$MF" /metrics | grep '^headerd_follow_dials_total' | sed 's/.*outcome="\([a-z]*\)"} /\1=/' | tr '\n' ' ')
[[ " $dials" == *" replaced=1 "* && " $dials" =~ \ failed=([0-9]+) && ${BASH_REMATCH[1]} -ge 3 && \
    " $dials" =~ \ connected=([0-9]+) && ${BASH_REMATCH[1]} -ge 3 ]] ||
    fail "headerd_follow_dials_total: $dials (expected replaced=1, failed >= 3, connected >= 3)"
# The search found the three mainnet servers compatible and the other two chains' nodes incompatible.
found=$(http_body "$MF" /metrics | grep '^headerd_discovery_found_nodes' | sed 's/.*compatibility="\([a-z]*\)"} /\1=/' | tr '\n' ' ')
[[ " $found" == *" compatible=3 "* && " $found" == *" incompatible=2 "* ]] ||
    fail "headerd_discovery_found_nodes: $found (expected compatible=3, incompatible=2)"
echo "ok: serve --follow-discovered 2 followed ${followed[*]}; $gone stopped, and after 3 failed dials the spare $spare is followed; dials: $dials; found: $found"
stop follower
echo "discovery_sources: all checks passed"
