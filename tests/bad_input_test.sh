#!/usr/bin/env bash
# Bad input never crashes or half-writes: every case gives one clear error naming the file,
# offset or block, and leaves the datadir as it was.
source "$(dirname "$0")/lib.sh" "$@"

ERA=$DATA/mainnet-00000-5ec1ffb8.era1
size=$(stat -c %s "$ERA")

# flip FILE OFFSET OUT: copy FILE to OUT with the byte at OFFSET inverted.
flip() {
    cp "$1" "$3"
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 0xff)))" | dd of="$3" bs=1 seek="$2" conv=notrunc status=none
}

# 1. A flipped byte inside block 0's compressed header (record at offset 8, snappy frame after
#    its 8-byte record header): refused, and a fresh datadir is left without a database.
flip "$ERA" 40 "$WORK/flipped.era1"
expect_fail "flipped header byte" "flipped.era1" "$HEADERD" import --datadir "$WORK/fresh" "$WORK/flipped.era1"
[ ! -e "$WORK/fresh/chaindata" ] || fail "a failed import into a fresh datadir left chaindata/ behind"

# 2. Wrong accumulator: the 32-byte root sits just before the block index record
#    (8-byte header + start + 8192 offsets + count = 65560 bytes at the end).
flip "$ERA" $((size - 65560 - 32 + 5)) "$WORK/badacc.era1"
expect_fail "wrong accumulator" "accumulator" "$HEADERD" import --datadir "$WORK/fresh" "$WORK/badacc.era1"

# 3. The same bad files against a datadir that holds a chain: nothing changes on disk.
D=$WORK/d
"$HEADERD" import --datadir "$D" "$DATA/mainnet-headers-0-8191.rlp" >/dev/null 2>&1
"$HEADERD" freeze --datadir "$D" --keep 100 >/dev/null 2>&1
before=$(chain_digest "$D")
expect_fail "flipped header byte, existing datadir" "flipped.era1" "$HEADERD" import --datadir "$D" "$WORK/flipped.era1"
expect_fail "wrong accumulator, existing datadir" "accumulator" "$HEADERD" import --datadir "$D" "$WORK/badacc.era1"

# 4. Truncated archive and truncated .rlp.
head -c $((size / 2)) "$ERA" >"$WORK/short.era1"
expect_fail "truncated era1" "short.era1" "$HEADERD" import --datadir "$D" "$WORK/short.era1"
head -c 100000 "$DATA/mainnet-headers-0-8191.rlp" >"$WORK/short.rlp"
expect_fail "truncated rlp (fresh)" "offset" "$HEADERD" import --datadir "$WORK/fresh2" "$WORK/short.rlp"

# 5. A foreign file.
cp "$DATA/mainnet-headers-0-8191.hashes.txt" "$WORK/foreign.rlp"
expect_fail "foreign file" "foreign.rlp: offset 0" "$HEADERD" import --datadir "$D" "$WORK/foreign.rlp"
expect_fail "missing file" "nonexistent.era1" "$HEADERD" import --datadir "$D" "$WORK/nonexistent.era1"

# 6. Headers that do not link: the hive chain starts at block 1 (no genesis), and conflicts with
#    the stored mainnet block 1.
expect_fail "hive chain into an empty datadir" "must start at the genesis" \
    "$HEADERD" import --datadir "$WORK/fresh3" "$DATA/hive-testchain-blocks-1-600.rlp"
expect_fail "hive chain onto mainnet" "block 1" "$HEADERD" import --datadir "$D" "$DATA/hive-testchain-blocks-1-600.rlp"
# Sepolia's epoch 21 on its own network: it starts at block 172032, far from the genesis, so an
# empty datadir takes it only with its accumulator root named (a wrong one is refused; an .rlp
# file has no root to name); on a mainnet datadir it is the wrong network.
expect_fail "sepolia epoch 21 into an empty datadir" "does not start at the genesis; to start the datadir here" \
    "$HEADERD" import --datadir "$WORK/fresh4" --network sepolia "$DATA/sepolia-00021-b8814b14.era1"
expect_fail "sepolia epoch 21 with a wrong trusted root" "is not the trusted root" \
    "$HEADERD" import --datadir "$WORK/fresh4" --network sepolia \
    --trusted-root 0xb8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e4 "$DATA/sepolia-00021-b8814b14.era1"
expect_fail "a trusted root for an .rlp file" ".era1 files only" \
    "$HEADERD" import --datadir "$WORK/fresh3" \
    --trusted-root 0xb8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e3 "$DATA/hive-testchain-blocks-1-600.rlp"
expect_fail "a trusted root that is not a hash" "is not a 32-byte hex hash" \
    "$HEADERD" import --datadir "$WORK/fresh4" --network sepolia --trusted-root 0xb8814b14 "$DATA/sepolia-00021-b8814b14.era1"
[[ ! -e $WORK/fresh4/chaindata && ! -e $WORK/fresh3/chaindata ]] || { echo "FAIL: a refused import left a database" >&2; exit 1; }
expect_fail "sepolia onto mainnet" "holds network mainnet" \
    "$HEADERD" import --datadir "$D" --network sepolia "$DATA/sepolia-00021-b8814b14.era1"
expect_fail "unknown network" "unknown network (mainnet, sepolia" \
    "$HEADERD" import --datadir "$WORK/fresh5" --network holesky "$DATA/sepolia-00021-b8814b14.era1"

[ "$(chain_digest "$D")" = "$before" ] || fail "a refused import changed the datadir"
echo "ok: datadir unchanged after every refused import"
"$HEADERD" verify --datadir "$D" >/dev/null 2>&1 || fail "verify after refused imports"

# 7. verify finds damage: a flipped byte in the freezer's hash table, then in a frozen header.
cp -a "$D" "$WORK/damaged"
flip "$D/chaindata/ancient/chain/hashes.0000.rdat" $((32 * 5000 + 7)) "$WORK/damaged/chaindata/ancient/chain/hashes.0000.rdat"
expect_fail "verify with a damaged hash table" "verify: block 5000 (ancient): canonical hash entry" \
    "$HEADERD" verify --datadir "$WORK/damaged"
cp "$D/chaindata/ancient/chain/hashes.0000.rdat" "$WORK/damaged/chaindata/ancient/chain/hashes.0000.rdat"
flip "$D/chaindata/ancient/chain/headers.0000.cdat" 300000 "$WORK/damaged/chaindata/ancient/chain/headers.0000.cdat"
expect_fail "verify with a damaged frozen header" "verify: block" "$HEADERD" verify --datadir "$WORK/damaged"

# 7b. A flipped byte in LevelDB's write-ahead log. A fresh import of the epoch is still entirely in
#     the log (one record per 10,000-header batch, below the 32 MB memtable). LevelDB's default
#     recovery would drop the damaged record and delete the log, silently losing all 8192 headers;
#     every command must instead refuse to open it, name the corruption, and leave the log as it was.
L=$WORK/leveldb-damaged
"$HEADERD" import --datadir "$L" "$ERA" >/dev/null 2>&1
log_file=$(find "$L/chaindata" -maxdepth 1 -name '*.log' -size +1M | head -1)
[ -n "$log_file" ] || fail "expected the import in a LevelDB log file larger than 1 MB"
flip "$log_file" 2000000 "$WORK/flipped.log"
cp "$WORK/flipped.log" "$log_file"
log_sum=$(sha256sum <"$log_file")
expect_fail "verify with a damaged LevelDB log" "Corruption" "$HEADERD" verify --datadir "$L"
expect_fail "serve with a damaged LevelDB log" "Corruption" "$HEADERD" serve --datadir "$L" --listen 127.0.0.1:0
expect_fail "inspect with a damaged LevelDB log" "$L/chaindata" "$HEADERD" inspect --datadir "$L"
[ -f "$log_file" ] && [ "$(sha256sum <"$log_file")" = "$log_sum" ] ||
    fail "opening a damaged LevelDB changed or removed its log"
echo "ok: the damaged LevelDB log is left as it was"

# 8. A datadir of another network.
S=$WORK/synthetic
"$HEADERD" generate --datadir "$S" --count 500 >/dev/null 2>&1
expect_fail "mainnet import into a synthetic datadir" "holds network synthetic" \
    "$HEADERD" import --datadir "$S" "$ERA"

expect_fail "generate into a datadir that holds a chain" "already holds a chain" \
    "$HEADERD" generate --datadir "$S" --count 10

# 9. Missing datadir, bad ranges, bad arguments.
expect_fail "inspect of a missing datadir" "$WORK/nowhere" "$HEADERD" inspect --datadir "$WORK/nowhere"
expect_fail "export past the head" "head is block 8191" \
    "$HEADERD" export --datadir "$D" --from 8000 --count 500 --out "$WORK/x.rlp"
[ ! -e "$WORK/x.rlp" ] || fail "a failed export left a file"
expect_fail "unknown option" "unknown option --bogus" "$HEADERD" inspect --datadir "$D" --bogus
expect_fail "bad number" "--count" "$HEADERD" generate --datadir "$WORK/g" --count 12x
expect_fail "unknown command" "unknown command" "$HEADERD" frobnicate
# serve --rpc and load's run options: refused before anything starts.
expect_fail "an RPC address that is none" "--rpc" "$HEADERD" serve --datadir "$D" --rpc 127.0.0.1:http
expect_fail "an RPC batch limit of 0" "--rpc.batch-limit 0: expected a positive number" \
    "$HEADERD" serve --datadir "$D" --rpc 0 --rpc.batch-limit 0
expect_fail "an RPC body limit that is no number" "--rpc.body-limit 5MB: expected a positive number" \
    "$HEADERD" serve --datadir "$D" --rpc 0 --rpc.body-limit 5MB
# The generator point G: a valid public key; nothing is dialled, the options are refused first.
PEER=enode://79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8@127.0.0.1:9
expect_fail "a run id with a space" "--run-id a b: expected 1 to 64 letters" "$HEADERD" load --peer "$PEER" --run-id "a b"
expect_fail "a start in the past" "--start-at 2020-01-01T00:00:00Z: that was" \
    "$HEADERD" load --peer "$PEER" --start-at 2020-01-01T00:00:00Z
expect_fail "a start that is no time" "--start-at soon: expected a UTC time" "$HEADERD" load --peer "$PEER" --start-at soon
expect_fail "a start more than a day away" "more than a day from now" "$HEADERD" load --peer "$PEER" --start-at +90000
expect_fail "a --bind that is no address" "--bind eth0: not an IP address" "$HEADERD" load --peer "$PEER" --bind eth0
# report: its two modes' arguments (a merge's files themselves are load_merge's).
expect_fail "report without --html" "give --json FILE and --html FILE" "$HEADERD" report --json x.json
expect_fail "files to merge without --merge" "need --merge" "$HEADERD" report a.json b.json
expect_fail "a merge threshold that is none" "unknown metric 'p98'" "$HEADERD" report --merge a.json --threshold 'p98<1ms'

# 10. A read-only datadir (not meaningful as root, who may write anyway).
if [ "$(id -u)" -ne 0 ]; then
    chmod -R a-w "$D"
    expect_fail "freeze on a read-only datadir" "$D" "$HEADERD" freeze --datadir "$D" --keep 10
    chmod -R u+w "$D"
fi

for c in generate import export inspect verify freeze; do
    "$HEADERD" "$c" --help | grep -q "Usage: headerd $c" || fail "$c --help"
done
echo PASS
