#!/usr/bin/env bash
# headerd against an independent devp2p implementation (@ethereumjs/devp2p 10.0.0), both ways:
#   serve: client.js (ethereumjs) -> headerd serve, on a datadir holding mainnet 0..8191 with
#          0..7191 frozen into ancient/ and 7192..8191 in LevelDB; eth/68, eth/69 and both offered.
#   get:   headerd get -> server.js (ethereumjs), eth/68 and eth/69; every expected header hash
#          must appear, in order, in get's output, and server.js must have seen the exact request.
#   history: history_client.js (ethereumjs) -> headerd serve on a datadir imported with --history:
#          every body and receipt list of blocks 0..8191, eth/68 and eth/69, checked against the
#          header roots by @ethereumjs/block and @ethereumjs/mpt; `import --history` refusals; the
#          same for Sepolia's epoch 21 alone, in a datadir anchored with --trusted-root.
#   rpc:   rpc_client.js (ethers, @ethereumjs/block) -> headerd serve --rpc: every block of Sepolia's
#          epoch 21 with its transactions, raw headers, blocks and receipts, judged by the libraries;
#          a headers-only mainnet datadir (whole empty blocks, 4444 for the others); the errors and
#          limits with small --rpc.* values.
#
# Usage: headerd_interop_test.sh HEADERD [serve|get|history|rpc|all]        (default all)
# Needs node >= 20 and `npm ci` run in tests/interop; exits 77 (CTest SKIP_RETURN_CODE) if not.
set -euo pipefail
HEADERD=${1:?usage: $0 HEADERD [serve|get|history|rpc|all]}
MODE=${2:-all}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$(cd "$HERE/../data" && pwd)
case $MODE in serve | get | history | rpc | all) ;; *) echo "usage: $0 HEADERD [serve|get|history|rpc|all]" >&2; exit 2 ;; esac

if ! command -v node >/dev/null || [[ ! -d $HERE/node_modules/@ethereumjs/devp2p ]]; then
    echo "SKIP: node or $HERE/node_modules missing (run: cd $HERE && npm ci)" >&2
    exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-interop.XXXXXX")
BG_PID=
stop_bg() {
    if [[ -n $BG_PID ]] && kill -0 "$BG_PID" 2>/dev/null; then
        kill "$BG_PID" 2>/dev/null || true
        wait "$BG_PID" 2>/dev/null || true
    fi
    BG_PID=
}
trap 'stop_bg; rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# wait_for_file FILE LOG SECONDS: poll until FILE is non-empty while $BG_PID is alive.
wait_for_file() {
    local file=$1 log=$2 i
    for ((i = 0; i < $3 * 10; i++)); do
        [[ -s $file ]] && return 0
        kill -0 "$BG_PID" 2>/dev/null || { cat "$log" >&2; fail "$(basename "$log" .log) exited before writing $file"; }
        sleep 0.1
    done
    cat "$log" >&2
    fail "$file not written within $3 s"
}

free_port() {
    node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'
}

test_serve() {
    local d=$WORK/datadir port eth
    timeout 300 "$HEADERD" import --datadir "$d" "$DATA/mainnet-00000-5ec1ffb8.era1" >/dev/null
    timeout 300 "$HEADERD" freeze --datadir "$d" --keep 1000 >/dev/null
    port=$(free_port)
    "$HEADERD" serve --datadir "$d" --listen "127.0.0.1:$port" >"$WORK/serve.log" 2>&1 &
    BG_PID=$!
    wait_for_file "$d/enode" "$WORK/serve.log" 20
    echo "headerd serve: $(cat "$d/enode")"
    for eth in 68 69 68,69; do
        echo "== client.js --eth $eth -> headerd serve"
        node "$HERE/client.js" "$(cat "$d/enode")" --eth "$eth" --timeout 60 ||
            { cat "$WORK/serve.log" >&2; fail "client.js --eth $eth against headerd serve"; }
    done
    kill -0 "$BG_PID" 2>/dev/null || fail "headerd serve died during the interop run"
    kill -TERM "$BG_PID"
    local i rc=0
    for ((i = 0; i < 100; i++)); do kill -0 "$BG_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$BG_PID" 2>/dev/null && fail "headerd serve still running 10 s after SIGTERM"
    wait "$BG_PID" || rc=$?
    BG_PID=
    echo "ok: headerd serve survived all interop connections and exited ($rc) on SIGTERM"
}

# get_case ENODE LOG GET-ARGS...: headerd get must succeed, print every expected hash in order,
# and server.js must log exactly this request.
get_case() {
    local enode=$1 log=$2
    shift 2
    local out expected origin amount skip=0 reverse=false n
    out=$(timeout 30 "$HEADERD" get --peer "$enode" --format json "$@") || fail "headerd get $*: exit $?"
    expected=$(node "$HERE/chain.js" expect "$@" --format hashes)
    n=$(printf '%s\n' "$expected" | grep -c . || true)
    # Format-agnostic: the expected hashes must appear as a subsequence of the 0x-hashes printed.
    printf '%s\n' "$out" | grep -oiE '0x[0-9a-f]{64}' | tr 'A-F' 'a-f' >"$WORK/got"
    printf '%s\n' "$expected" | awk '{print $2}' >"$WORK/want"
    awk 'BEGIN { n = 0; i = 0 } NR == FNR { want[n++] = $0; next } i < n && $0 == want[i] { i++ } END { exit (i == n) ? 0 : 1 }' \
        "$WORK/want" "$WORK/got" || { printf '%s\n' "$out" >&2; fail "headerd get $*: expected $n headers in order"; }
    while [[ $# -gt 0 ]]; do
        case $1 in
        --origin) origin=$2; shift 2 ;;
        --amount) amount=$2; shift 2 ;;
        --skip) skip=$2; shift 2 ;;
        --reverse) reverse=true; shift ;;
        *) shift ;;
        esac
    done
    grep -qE "GetBlockHeaders id=[0-9]+ origin=$origin amount=$amount skip=$skip reverse=$reverse -> $n headers" "$log" ||
        { cat "$log" >&2; fail "server.js did not log GetBlockHeaders origin=$origin amount=$amount skip=$skip reverse=$reverse -> $n"; }
    echo "ok: headerd get --origin $origin --amount $amount --skip $skip reverse=$reverse -> $n headers"
}

test_get() {
    local eth enode log head_hash
    head_hash=$(awk '$1 == 8191 {print $2}' "$DATA/mainnet-headers-0-8191.hashes.txt")
    for eth in 68 69; do
        echo "== headerd get -> server.js --eth $eth"
        log=$WORK/server.$eth.log
        node "$HERE/server.js" --port 0 --out "$WORK/enode.$eth" --eth "$eth" --idle 120 >"$log" 2>&1 &
        BG_PID=$!
        wait_for_file "$WORK/enode.$eth" "$log" 20
        enode=$(cat "$WORK/enode.$eth")
        get_case "$enode" "$log" --origin 0 --amount 192
        get_case "$enode" "$log" --origin 8100 --amount 192
        get_case "$enode" "$log" --origin 8191 --amount 10 --reverse
        get_case "$enode" "$log" --origin 100 --amount 5 --skip 7
        get_case "$enode" "$log" --origin "$head_hash" --amount 3 --reverse
        stop_bg
    done

    # A misbehaving server: headerd get's request tracker must refuse the reply before decoding
    # it (or count the request lost), exit 1 and say why on stderr; stdout must stay empty.
    local fault want rc out
    for fault in extra-header stale-id wrong-code no-reply; do
        case $fault in
        extra-header) want="response carries more items than requested" ;;
        stale-id) want="response to an unknown or expired request id" ;;
        wrong-code) want="response code does not match the request" ;;
        no-reply) want="no BlockHeaders reply to request [0-9]+ within 2 s" ;;
        esac
        echo "== headerd get -> server.js --fault $fault"
        log=$WORK/server.$fault.log
        node "$HERE/server.js" --port 0 --out "$WORK/enode.$fault" --eth 69 --idle 60 --fault "$fault" >"$log" 2>&1 &
        BG_PID=$!
        wait_for_file "$WORK/enode.$fault" "$log" 20
        rc=0
        out=$(timeout 30 "$HEADERD" get --peer "$(cat "$WORK/enode.$fault")" --origin 100 --amount 5 --timeout 2 \
            2>"$WORK/get.$fault.err") || rc=$?
        [[ $rc -eq 1 ]] || { cat "$WORK/get.$fault.err" >&2; fail "get against --fault $fault: exit $rc, expected 1"; }
        [[ -z $out ]] || fail "get against --fault $fault printed headers"
        grep -qE "$want" "$WORK/get.$fault.err" ||
            { cat "$WORK/get.$fault.err" >&2; fail "get against --fault $fault: stderr lacks '$want'"; }
        grep -q "FAULT $fault" "$log" || { cat "$log" >&2; fail "server.js did not inject $fault"; }
        echo "ok: headerd get refuses --fault $fault: $want"
        stop_bg
    done
}

# serve_history_node DATADIR LOG RANGE: starts `headerd serve` on DATADIR in the background
# (BG_PID), logging to LOG, and checks it says it serves and announces history RANGE (FIRST..LAST).
serve_history_node() {
    local d=$1 log=$2 range=$3
    "$HEADERD" serve --datadir "$d" --listen "127.0.0.1:0" >"$log" 2>&1 &
    BG_PID=$!
    wait_for_file "$d/enode" "$log" 20
    grep -q "Serving history.*range=$range announced=$range" "$log" ||
        { cat "$log" >&2; fail "serve did not say it serves history $range"; }
}

test_history() {
    local d=$WORK/history-datadir eth out rc
    # Refusals first: nothing may be left behind by them.
    rc=0
    out=$("$HEADERD" import --datadir "$d" --history "$DATA/mainnet-headers-0-8191.rlp" 2>&1) || rc=$?
    [[ $rc -ne 0 && $out == *"is not an .era1 file"* ]] || { echo "$out" >&2; fail "import --history of an .rlp file: exit $rc"; }
    [[ ! -e $d/history ]] || fail "a refused import --history left $d/history behind"
    timeout 300 "$HEADERD" import --datadir "$d" --history "$DATA/mainnet-00000-5ec1ffb8.era1" >"$WORK/import.log" 2>&1 ||
        { cat "$WORK/import.log" >&2; fail "import --history"; }
    grep -q 'Imported history.*epoch=0 blocks=8192' "$WORK/import.log" || { cat "$WORK/import.log" >&2; fail "no history summary"; }
    [[ -f $d/history/mainnet-00000-5ec1ffb8.era1 ]] || fail "the epoch is not in $d/history under its name"
    timeout 300 "$HEADERD" freeze --datadir "$d" --keep 1000 >/dev/null
    serve_history_node "$d" "$WORK/serve-history.log" 0..8191
    for eth in 68 69; do
        echo "== history_client.js --eth $eth -> headerd serve (history)"
        node "$HERE/history_client.js" "$(cat "$d/enode")" --eth "$eth" --timeout 120 ||
            { cat "$WORK/serve-history.log" >&2; fail "history_client.js --eth $eth"; }
    done
    stop_bg
    test_history_later_epoch
}

# Sepolia's epoch 21 alone (blocks 172032..180223, real transactions and receipts): a datadir that
# starts there, anchored on the epoch's accumulator root, serves it as any history node does.
test_history_later_epoch() {
    local d=$WORK/sepolia-datadir eth out rc era=$DATA/sepolia-00021-b8814b14.era1
    # geth names the file after this root's first 4 bytes.
    local root=0xb8814b146889489efd392d80c7ca4e418d39302e25323a55882ca8cc0ef013e3
    rc=0
    out=$("$HEADERD" import --datadir "$d" --network sepolia --history "$era" 2>&1) || rc=$?
    [[ $rc -ne 0 && $out == *"block 172032: the database is empty and this epoch does not start at the genesis"* ]] ||
        { echo "$out" >&2; fail "an untrusted later epoch into an empty datadir: exit $rc"; }
    [[ ! -e $d/chaindata && -z $(ls -A "$d/history" 2>/dev/null) ]] || fail "a refused import left data in $d"
    timeout 300 "$HEADERD" import --datadir "$d" --network sepolia --trusted-root "$root" --history "$era" \
        >"$WORK/import-sepolia.log" 2>&1 || { cat "$WORK/import-sepolia.log" >&2; fail "import --trusted-root"; }
    grep -q 'Imported history.*epoch=21 blocks=8192 transactions=93 receipts=93' "$WORK/import-sepolia.log" ||
        { cat "$WORK/import-sepolia.log" >&2; fail "no Sepolia history summary"; }
    "$HEADERD" inspect --datadir "$d" | grep -q '^first block *172032 ' || fail "inspect does not show the first block"
    serve_history_node "$d" "$WORK/serve-sepolia.log" 172032..180223
    for eth in 68 69; do
        echo "== history_client.js --eth $eth --network sepolia -> headerd serve (epoch 21 only)"
        node "$HERE/history_client.js" "$(cat "$d/enode")" --eth "$eth" --network sepolia --era1 "$era" --timeout 120 ||
            { cat "$WORK/serve-sepolia.log" >&2; fail "history_client.js --eth $eth --network sepolia"; }
    done
    # headerd get --bodies/--receipts: the headers, then their bodies or receipt lists, each checked
    # against its header. Blocks 174010..174018 hold two transactions (174010, 174018).
    local enode lines
    enode=$(cat "$d/enode")
    out=$("$HEADERD" get --peer "$enode" --network sepolia --origin 174010 --amount 9 --bodies --format json 2>&1) ||
        { echo "$out" >&2; fail "get --bodies"; }
    lines=$(grep -c '"verified":true' <<<"$out")
    [[ $lines -eq 9 && $(grep -c '"transactions":1' <<<"$out") -eq 2 ]] || { echo "$out" >&2; fail "get --bodies: 9 bodies, 2 with a transaction"; }
    out=$("$HEADERD" get --peer "$enode" --network sepolia --origin 174010 --amount 9 --receipts --format json 2>&1) ||
        { echo "$out" >&2; fail "get --receipts"; }
    [[ $(grep -c '"receipts":1,"verified":true' <<<"$out") -eq 2 ]] || { echo "$out" >&2; fail "get --receipts: 2 receipts"; }
    # Past the head: the bodies held, a warning, and a failing exit.
    rc=0
    out=$("$HEADERD" get --peer "$enode" --network sepolia --origin 180222 --amount 2 --skip 0 --bodies 2>&1) || rc=$?
    [[ $rc -eq 0 && $(grep -c '^0x' <<<"$out") -eq 2 ]] || { echo "$out" >&2; fail "get --bodies at the head"; }
    rc=0
    out=$("$HEADERD" get --peer "$enode" --origin 174010 --amount 1 --bodies 2>&1) || rc=$?
    [[ $rc -ne 0 && $out == *"network id mismatch"* ]] || { echo "$out" >&2; fail "get without --network sepolia: exit $rc"; }
    echo "ok: headerd get --bodies/--receipts on Sepolia's epoch 21"
    stop_bg
}

[[ $MODE == get || $MODE == history ]] || test_serve
[[ $MODE == serve || $MODE == history ]] || test_get
[[ $MODE == serve || $MODE == get ]] || test_history
echo "headerd interop ($MODE): all passed"
