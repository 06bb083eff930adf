#!/usr/bin/env bash
# Bit rot while serving, on the real mainnet epoch (blocks 0..6143 in the freezer, 6144..8191 in
# LevelDB): a byte flipped in a freezer data file and one in a LevelDB table file is never served,
# the scrubber finds each within its documented time (a pass over the chain at --scrub-rate, then
# --scrub-pause), exports it and refuses its range; `serve --follow` fetches a damaged freezer
# header again by itself; `headerd repair` salvages and refetches everything offline, byte-exact.
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/prom_http.sh"
source "$(dirname "$0")/node_lib.sh"
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1
RLP=$DATA/mainnet-headers-0-8191.rlp

# hash_of N -> the true hash of block N (tests/data).
hash_of() { awk -v n="$1" '$1 == n { print $2 }' "$DATA/mainnet-headers-0-8191.hashes.txt"; }
# flip_freezer DATADIR N: flips a byte in the middle of block N's item in the headers data file.
flip_freezer() {
    python3 - "$1/chaindata/ancient/chain" "$2" <<'PY'
import sys
d, n = sys.argv[1], int(sys.argv[2])
idx = open(d + "/headers.cidx", "rb").read()
def entry(i):
    e = idx[6 * i:6 * i + 6]
    return int.from_bytes(e[:2], "big"), int.from_bytes(e[2:], "big")
(f0, begin), (f1, end) = entry(n), entry(n + 1)
assert f0 == f1 == 0, "test chain fits one data file"
with open(d + "/headers.0000.cdat", "r+b") as f:
    f.seek((begin + end) // 2)
    b = f.read(1)
    f.seek((begin + end) // 2)
    f.write(bytes([b[0] ^ 0x20]))
PY
}
# flip_leveldb DATADIR N: flips a byte of block N's state root in the LevelDB table holding it
# (32 random bytes that snappy leaves as they are).
flip_leveldb() {
    python3 - "$1/chaindata" "$2" "$RLP" <<'PY'
import glob, sys
d, n, rlp = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
def item(at):  # (payload start, end) of the RLP item at `at`
    b = rlp[at]
    if b < 0xc0 and b >= 0xb8 or b >= 0xf8:
        k = b - (0xb7 if b < 0xc0 else 0xf7)
        return at + 1 + k, at + 1 + k + int.from_bytes(rlp[at + 1:at + 1 + k], "big")
    return at + 1, at + 1 + (b - (0x80 if b < 0xc0 else 0xc0))
at = 0
for _ in range(n):
    at = item(at)[1]
p = item(at)[0]            # the header's fields: parent hash, uncles hash, coinbase, state root
for _ in range(3):
    p = item(p)[1]
root = rlp[p + 1:p + 33]
for path in glob.glob(d + "/*.ldb"):
    data = open(path, "rb").read()
    at = data.find(root)
    if at >= 0:
        with open(path, "r+b") as f:
            f.seek(at + 5)
            f.write(bytes([data[at + 5] ^ 0x20]))
        sys.exit(0)
sys.exit("state root of block %d not found in any table" % n)
PY
}
# wait_metric PORT NAME VALUE SECONDS WHAT: the metric reaches VALUE within SECONDS.
wait_metric() {
    local i v
    for i in $(seq $(($4 * 10))); do
        v=$(metric "$1" "$2")
        [ "$v" = "$3" ] && return 0
        sleep 0.1
    done
    fail "$5: $2 is '$v', not $3, after $4 s"
}
# served N ENODE -> "empty", or "true"/"FLIPPED" for a header that is/is not block N's.
served() {
    local h
    h=$(hash_at "$2" "$1")
    if [ -z "$h" ]; then echo empty; elif [ "$h" = "$(hash_of "$1")" ]; then echo true; else echo FLIPPED; fi
}

"$HEADERD" import --datadir "$WORK/up1" "$ERA1" >/dev/null 2>&1 || fail "import failed"
cp -r "$WORK/up1" "$WORK/up2"
rm -f "$WORK/up2/nodekey"
cp -r "$WORK/up1" "$WORK/d"
rm -f "$WORK/d/nodekey"
"$HEADERD" freeze --datadir "$WORK/d" --keep 2048 >/dev/null 2>&1 || fail "freeze failed"
cp -r "$WORK/d" "$WORK/e"
rm -f "$WORK/e/nodekey"
P1=$(free_port)
P2=$(free_port)
serve up1 "$P1"
serve up2 "$P2"
UP1=$(cat "$WORK/up1/enode")
UP2=$(cat "$WORK/up2/enode")

# 1. serve --follow repairs a damaged freezer header by itself. The pace: 8192 headers at 100,000
#    a second and a 0.2 s pause, so a flip is found within about 0.3 s; the repair comes right after.
PD=$(free_port)
MD=$(free_port)
serve d "$PD" --follow "$UP1" --follow "$UP2" --keep 2048 --scrub-rate 100000 --scrub-pause 0.2 --metrics "$MD"
D=$(cat "$WORK/d/enode")
wait_metric "$MD" headerd_scrub_damaged_blocks 0 10 "first scrub"
flip_freezer "$WORK/d" 3000
s=$(served 3000 "$D")
[ "$s" != FLIPPED ] || fail "a flipped freezer byte was served"
wait_metric "$MD" headerd_scrub_repaired_total 1 15 "serve --follow repair"
wait_metric "$MD" headerd_scrub_damaged_blocks 0 5 "after the repair"
[ "$(served 3000 "$D")" = true ] || fail "block 3000 not served byte-exact after the repair"
grep -q "Repaired header .*block=3000" "$WORK/d.log" || fail "the repair is not logged"
stop d
"$HEADERD" verify --datadir "$WORK/d" >/dev/null 2>&1 || fail "verify after the online repair"
echo "ok: serve --follow: a flipped freezer byte never served ($s), found and fetched again by itself"

# 2. Without --follow: both stores damaged while serving; found, exported and refused.
PE=$(free_port)
ME=$(free_port)
serve e "$PE" --scrub-rate 100000 --scrub-pause 0.2 --metrics "$ME"
E=$(cat "$WORK/e/enode")
wait_metric "$ME" headerd_scrub_passes_total 1 10 "first pass"
flip_freezer "$WORK/e" 5000
[ "$(served 5000 "$E")" = empty ] || fail "a damaged freezer header was not refused"
wait_metric "$ME" headerd_scrub_damaged_blocks 1 5 "freezer flip"
scrape=$(http_body "$ME" /metrics)
grep -q 'headerd_scrub_damaged_range{first="5000",last="5000"} 1' <<<"$scrape" ||
    fail "the damaged range is not exported: $(grep scrub_damaged <<<"$scrape")"
n=$("$HEADERD" get --peer "$E" --origin 4990 --amount 20 --format json --timeout 5 2>/dev/null | { grep -o '"hash"' || true; } | wc -l)
[ "$n" = 0 ] || fail "a range holding the damaged block got $n headers, not an empty reply"
[ "$(served 4999 "$E")" = true ] || fail "the block below the damage is not served"
flip_leveldb "$WORK/e" 7000
wait_metric "$ME" headerd_scrub_damaged_leveldb_tables 1 5 "LevelDB flip"
[ "$(served 7000 "$E")" = empty ] || fail "a header of the damaged LevelDB table was served"
grep -q "Damaged LevelDB table" "$WORK/e.log" || fail "the damaged table is not logged"
stop e
echo "ok: serve: flips in the freezer and in a LevelDB table never served, found within 5 s, exported"

# 3. headerd repair: bad input first, then the repair, byte-exact.
expect_fail "repair without a peer" "at least one --peer" "$HEADERD" repair --datadir "$WORK/e"
expect_fail "bad scrub rate" "--scrub-rate" "$HEADERD" serve --datadir "$WORK/e" --scrub-rate fast
expect_fail "bad scrub pause" "--scrub-pause -1" "$HEADERD" serve --datadir "$WORK/e" --scrub-pause -1
expect_fail "a cache of 0 MiB" "--cache 0: expected MiB" "$HEADERD" serve --datadir "$WORK/e" --cache 0
expect_fail "a reply cache past 1 TiB" "--reply-cache 2000000: expected MiB per worker" \
    "$HEADERD" serve --datadir "$WORK/e" --reply-cache 2000000
expect_fail "a reply cache that is no number" "--reply-cache lots: expected MiB per worker" \
    "$HEADERD" serve --datadir "$WORK/e" --reply-cache lots
expect_fail "repair with no time to ask" "--request-timeout must be a positive" "$HEADERD" repair --datadir "$WORK/e" \
    --peer "$UP1" --request-timeout 0
"$HEADERD" repair --datadir "$WORK/e" --check-only >"$WORK/check.txt" 2>&1 && fail "--check-only found nothing"
grep -q "^damaged 5000$" "$WORK/check.txt" || fail "--check-only does not list block 5000: $(cat "$WORK/check.txt")"
DEAD="${UP1%@*}@127.0.0.1:$(free_port)"  # a real node id on a port nobody listens on
"$HEADERD" repair --datadir "$WORK/e" --peer "$DEAD" --request-timeout 2 >"$WORK/dead.txt" 2>&1 &&
    fail "repair from an unreachable peer succeeded"
grep -q "still damaged" "$WORK/dead.txt" || fail "unreachable peer: $(tail -3 "$WORK/dead.txt")"
"$HEADERD" repair --datadir "$WORK/e" --peer "$UP1" >"$WORK/repair.txt" 2>&1 ||
    fail "repair failed: $(tail -5 "$WORK/repair.txt")"
grep -q "salvaged" "$WORK/repair.txt" || fail "the LevelDB table was not salvaged"
"$HEADERD" verify --datadir "$WORK/e" >/dev/null 2>&1 || fail "verify after repair"
"$HEADERD" export --datadir "$WORK/e" --from 0 --count 8192 --out "$WORK/e.rlp" >/dev/null 2>&1
cmp -s "$WORK/e.rlp" "$RLP" || fail "the repaired chain is not byte-exact"
"$HEADERD" repair --datadir "$WORK/e" --check-only >/dev/null 2>&1 || fail "damage left after the repair"
echo "ok: headerd repair: $(grep -o 'repaired [0-9]* of [0-9]*' "$WORK/repair.txt") damaged headers, chain byte-exact"
