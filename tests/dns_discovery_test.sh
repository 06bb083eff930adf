#!/usr/bin/env bash
# DNS node lists (EIP-1459) over real DNS: tests/dns_tree_tool makes two signed trees (30 records
# linking a tree of 25, all loopback addresses), dnsmasq serves them as TXT records on 127.0.0.1 at
# a free port, and the tool reads them back through disc/'s resolver (libresolv, asked for that
# one server only) and client. Checks: the whole download finds every record of both trees and
# follows the link; the random iterator (DnsClient::next) finds every record too, over both trees;
# a URL with another key is refused for its signature, and a domain the server does not have
# fails naming it. dnsmasq has no upstream server (--no-resolv, --no-hosts) and listens on
# 127.0.0.1 only, so no query leaves the machine.
# Skips (exit 77) when dnsmasq is not installed (tests/dns_lib.sh).
# Usage: dns_discovery_test.sh DNS_TREE_TOOL
source "$(dirname "$0")/lib.sh" "$@"
# DNSMASQ, start_dnsmasq, stop_dnsmasq, dnsmasq_queries_only
source "$(dirname "$0")/dns_lib.sh"
TOOL=$HEADERD
trap 'stop_dnsmasq; rm -rf "$WORK"' EXIT

URL=$("$TOOL" zone "$WORK/zone.conf" "$WORK/expected.txt") || fail "dns_tree_tool zone failed"
echo "tree $URL: $(grep -c . "$WORK/expected.txt") records, $(grep -c . "$WORK/zone.conf") TXT records"
start_dnsmasq "$TOOL" "$WORK/zone.conf" "$URL"
SERVER=$DNS_SERVER
echo "dnsmasq $("$DNSMASQ" --version | head -1 | cut -d' ' -f1-3) on $SERVER"

# --- the whole download, following the link -----------------------------------------------------
grep -q '^tree nodes.dnsdisc.test seq 3 enrs 30 links 1$' "$WORK/sync.txt" ||
    fail "sync: no full first tree: $(grep '^tree' "$WORK/sync.txt")"
grep -q '^tree linked.dnsdisc.test seq 1 enrs 25 links 0$' "$WORK/sync.txt" ||
    fail "sync: the link was not followed: $(grep '^tree' "$WORK/sync.txt")"
grep '^enr:' "$WORK/sync.txt" | sort >"$WORK/synced.txt"
cmp -s "$WORK/synced.txt" "$WORK/expected.txt" ||
    fail "sync: the records differ from the trees': $(diff "$WORK/expected.txt" "$WORK/synced.txt" | head -5)"
echo "ok: sync found all $(grep -c . "$WORK/synced.txt") records of both trees"

# Entries above 255 characters (the full branches) came as several character-strings (dnsmasq
# splits them) and were joined again: the download above needed them.
awk -F'"' 'length($2) > 255 { found = 1 } END { exit !found }' "$WORK/zone.conf" ||
    fail "no TXT record above 255 characters: the split is not exercised"

# --- the random iterator ------------------------------------------------------------------------
CALLS=$((3 * $(grep -c . "$WORK/expected.txt")))
"$TOOL" iterate "$SERVER" "$URL" "$CALLS" 7 >"$WORK/iterated.txt" 2>"$WORK/iterate.err" ||
    fail "iterate: $(cat "$WORK/iterate.err")"
grep -qx 'trees 2' "$WORK/iterate.err" || fail "iterate: the linked tree was not added: $(cat "$WORK/iterate.err")"
cmp -s "$WORK/iterated.txt" "$WORK/expected.txt" ||
    fail "iterate: $CALLS calls did not find every record: $(diff "$WORK/expected.txt" "$WORK/iterated.txt" | head -5)"
echo "ok: $CALLS calls of next() found all $(grep -c . "$WORK/iterated.txt") records"

# --- refusals -----------------------------------------------------------------------------------
# The first tree's domain with the linked tree's key: the root does not verify.
OTHER=$(grep -o 'enrtree://[A-Z2-7]*@linked.dnsdisc.test' "$WORK/zone.conf" | head -1 | sed 's|@linked|@nodes|')
[ -n "$OTHER" ] || fail "no link URL in the zone"
expect_fail "a root signed by another key" "nodes.dnsdisc.test: root signature invalid" \
    "$TOOL" sync "$SERVER" "$OTHER"
expect_fail "a domain the server lacks" "absent.dnsdisc.test:" \
    "$TOOL" sync "$SERVER" "${URL%@*}@absent.dnsdisc.test"

# Every query dnsmasq saw was for the trees' names (nothing else was asked).
queries=$(dnsmasq_queries_only dnsdisc.test) || exit 1
echo "ok: $queries TXT queries, all for the test trees, all from 127.0.0.1"
echo "dns_discovery: all checks passed"
